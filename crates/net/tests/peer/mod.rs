//! Hand-made peers for the TCP tests: raw bytes a real node never sends,
//! and a peer that completes the handshake and then never reads.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use eddy_net::frame::{self, FrameKind};
use eddy_net::handshake::{Hello, PROTOCOL_VERSIONS, Welcome};
use eddy_net::{Lane, NodeName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn hello(to: &NodeName) -> Vec<u8> {
    Hello {
        versions: PROTOCOL_VERSIONS,
        lane: Lane::Control,
        cluster: "default".into(),
        from: NodeName("raw@127.0.0.1".into()),
        to: to.clone(),
    }
    .encode()
}

fn after_hello(to: &NodeName, frame: &[u8]) -> Vec<u8> {
    let mut out = hello(to);
    out.extend_from_slice(frame);
    out
}

/// Inputs that must make the listener close the connection, each with
/// whether the sender then half-closes its side.
pub fn bad_inputs(to: &NodeName) -> Vec<(Vec<u8>, bool)> {
    let mut huge = BytesMut::new();
    frame::encode_header(FrameKind::Request, 1, u32::MAX as usize, &mut huge);
    let mut unknown_kind = BytesMut::new();
    frame::encode_header(FrameKind::Request, 1, 0, &mut unknown_kind);
    unknown_kind[4] = 9;
    let mut reply = BytesMut::new();
    frame::encode_header(FrameKind::Reply, 1, 0, &mut reply);
    let mut truncated = BytesMut::new();
    frame::encode_header(FrameKind::Request, 1, 100, &mut truncated);
    truncated.put_slice(b"only part of the body");
    let mut bad_lane = hello(to);
    bad_lane[12] = 7;
    let mut long_name = hello(to)[..13].to_vec();
    long_name.put_u16(u16::MAX);
    vec![
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), false),
        (bad_lane, false),
        (long_name, false),
        (after_hello(to, &huge), false),
        (after_hello(to, &unknown_kind), false),
        (after_hello(to, &reply), false),
        (after_hello(to, &truncated), true),
        (hello(to)[..20].to_vec(), true),
    ]
}

/// Sends `input` and says whether the peer then closes the connection.
pub async fn is_closed_after(addr: SocketAddr, input: &[u8], half_close: bool) -> bool {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(input).await.unwrap();
    if half_close {
        stream.shutdown().await.unwrap();
    }
    let mut sink = vec![0; 4096];
    let drained = async {
        loop {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), drained)
        .await
        .is_ok()
}

/// Frames a listener must never send a dialer, each with whether the
/// listener then half-closes: each must end the dialer's connection.
pub fn bad_answers() -> Vec<(Vec<u8>, bool)> {
    let mut huge = BytesMut::new();
    frame::encode_header(FrameKind::Reply, 1, u32::MAX as usize, &mut huge);
    let mut unknown_kind = BytesMut::new();
    frame::encode_header(FrameKind::Reply, 1, 0, &mut unknown_kind);
    unknown_kind[4] = 0;
    let mut request = BytesMut::new();
    frame::encode_header(FrameKind::Request, 1, 0, &mut request);
    let mut truncated = BytesMut::new();
    frame::encode_header(FrameKind::Reply, 1, 10, &mut truncated);
    truncated.put_slice(b"part");
    vec![
        (huge.to_vec(), false),
        (unknown_kind.to_vec(), false),
        (request.to_vec(), false),
        (truncated.to_vec(), true),
    ]
}

/// A peer that accepts every handshake, writes `answer` (half-closing
/// after it if asked), and then never reads.
pub struct Silent {
    pub name: NodeName,
    pub addr: SocketAddr,
}

impl Silent {
    pub async fn start() -> Silent {
        Silent::answering(Vec::new(), false).await
    }

    pub async fn answering(answer: Vec<u8>, half_close: bool) -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut stream, _)) = listener.accept().await {
                if Hello::read(&mut stream).await.is_ok() {
                    let welcome = Welcome::Accepted { version: 1 }.encode();
                    if stream.write_all(&welcome).await.is_ok()
                        && stream.write_all(&answer).await.is_ok()
                    {
                        if half_close {
                            let _ = stream.shutdown().await;
                        }
                        held.push(stream);
                    }
                }
            }
        });
        Silent {
            name: NodeName("silent@127.0.0.1".into()),
            addr,
        }
    }
}
