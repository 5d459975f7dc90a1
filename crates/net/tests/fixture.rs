//! The wire format of version 1, pinned by checked-in bytes
//! (tests/fixtures/transport-v1, written from docs/formats/transport.md by
//! an encoder independent of this crate): each file decodes to the values
//! below and re-encodes to the same bytes.

use bytes::{Bytes, BytesMut};
use eddy_net::frame::{self, ErrorCode, Frame, FrameKind};
use eddy_net::handshake::{Hello, Versions, Welcome};
use eddy_net::{Lane, NodeName};

fn fixture(file: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/transport-v1/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(path).unwrap()
}

fn expected_frames() -> Vec<Frame> {
    let frame = |kind, request_id, body: Bytes| Frame {
        kind,
        request_id,
        body,
    };
    vec![
        frame(FrameKind::Request, 1, Bytes::from_static(b"get bucket/key")),
        frame(FrameKind::Reply, 1, (0..=255u8).collect::<Vec<_>>().into()),
        frame(FrameKind::OneWay, 0, Bytes::new()),
        frame(
            FrameKind::Error,
            2,
            frame::error_body(
                ErrorCode::NoReply,
                "the handler dropped the request without answering",
            ),
        ),
        frame(
            FrameKind::Error,
            3,
            frame::error_body(ErrorCode::Overloaded, "overloaded"),
        ),
    ]
}

#[test]
fn frames_decode_to_the_pinned_values() {
    let frames = frame::decode_all(&fixture("frames.bin"), 1 << 20).unwrap();
    assert_eq!(frames, expected_frames());
    let (code, reason) = frame::parse_error_body(&frames[3].body);
    assert_eq!(
        (code, reason.as_str()),
        (
            ErrorCode::NoReply,
            "the handler dropped the request without answering"
        )
    );
}

#[test]
fn frames_encode_to_the_pinned_bytes() {
    let mut out = BytesMut::new();
    for f in expected_frames() {
        frame::encode(&f, &mut out);
    }
    assert_eq!(&out[..], &fixture("frames.bin")[..]);
}

#[test]
fn handshake_messages_round_trip_through_the_pinned_bytes() {
    let hello = Hello {
        versions: Versions { min: 1, max: 1 },
        lane: Lane::Bulk,
        cluster: "default".into(),
        from: NodeName("dev1@127.0.0.1".into()),
        to: NodeName("dev2@127.0.0.1".into()),
    };
    assert_eq!(Hello::decode(&fixture("hello.bin")).unwrap(), hello);
    assert_eq!(hello.encode(), fixture("hello.bin"));
    let refused = Welcome::Refused {
        reason: "cluster name \"other\" differs from this node's \"default\"".into(),
    };
    for (file, welcome) in [
        ("welcome-accepted.bin", Welcome::Accepted { version: 1 }),
        ("welcome-refused.bin", refused),
    ] {
        assert_eq!(Welcome::decode(&fixture(file)).unwrap(), welcome);
        assert_eq!(welcome.encode(), fixture(file));
    }
}
