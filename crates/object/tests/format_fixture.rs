//! Pins object format v1: a checked-in encoding must decode to the object
//! below and re-encode byte for byte. Regenerate (only for a deliberate new
//! version) with `EDDY_WRITE_FIXTURES=1 cargo test -p eddy-object`.

use eddy_object::{Actor, Content, Dot, Link, Metadata, RiakObject, Sibling, VersionVector, codec};

fn fixture_object() -> RiakObject {
    let live = Content {
        value: b"{\"coupon\":\"SAVE10\"}".to_vec(),
        meta: Metadata {
            content_type: Some(b"application/json".to_vec()),
            charset: Some(b"utf-8".to_vec()),
            content_encoding: None,
            vtag: b"4Tc3EBqEfuR6Ffc9pRyNFd".to_vec(),
            last_modified_us: 1_700_000_000_123_456,
            user_meta: vec![(b"x-riak-meta-owner".to_vec(), b"alice".to_vec())],
            links: vec![Link {
                bucket: b"affiliates".to_vec(),
                key: b"a1".to_vec(),
                tag: b"issued_by".to_vec(),
            }],
            indexes: vec![
                (b"affiliate_bin".to_vec(), b"a1".to_vec()),
                (b"redeemed_int".to_vec(), 42u64.to_be_bytes().to_vec()),
            ],
            deleted: false,
        },
    };
    RiakObject {
        vv: VersionVector::from_entries([(Actor(0xA1), 3), (Actor(0xB2), 300)]),
        siblings: vec![
            Sibling {
                dot: Dot {
                    actor: Actor(0xA1),
                    counter: 3,
                },
                content: live,
            },
            Sibling {
                dot: Dot {
                    actor: Actor(0xB2),
                    counter: 300,
                },
                content: Content::tombstone(1_700_000_001_000_000),
            },
        ],
    }
}

#[test]
fn object_format_v1_is_pinned() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/object-v1.bin");
    let obj = fixture_object();
    if std::env::var_os("EDDY_WRITE_FIXTURES").is_some() {
        std::fs::write(path, codec::encode(&obj)).unwrap();
    }
    let bytes = std::fs::read(path).expect("fixture present");
    assert_eq!(codec::decode(&bytes).expect("fixture decodes"), obj);
    assert_eq!(
        codec::encode(&obj),
        bytes,
        "encoding changed: bump VERSION instead"
    );
}
