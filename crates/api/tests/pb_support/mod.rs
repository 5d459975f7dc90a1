//! Shared by the PB tests: a node over memory backends served on an
//! ephemeral port, and a minimal PB client (Riak's framing + the generated
//! messages).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use eddy_api::pb::{PbConfig, serve};
use eddy_kv::{Node, NodeConfig};
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_object::Actor;
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_wire::{codes, proto};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A served node; dropping it stops the listener.
pub struct Server {
    pub addr: SocketAddr,
    pub node: Arc<Node>,
    _stop: oneshot::Sender<()>,
}

pub fn node() -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: 8,
        map_runner: Some(eddy_query::Jobs::new(Some(
            eddy_query::js::JsLimits::default(),
        ))),
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        (backend, Actor(1000 + u64::from(p.0)))
    })
    .expect("node starts")
}

pub async fn start() -> Server {
    start_with(PbConfig::default()).await
}

pub async fn start_with(config: PbConfig) -> Server {
    let node = node();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = oneshot::channel::<()>();
    let shutdown = async move {
        let _ = rx.await;
    };
    tokio::spawn(serve(listener, node.clone(), config, shutdown));
    Server {
        addr,
        node,
        _stop: tx,
    }
}

/// Creates and activates a bucket type with default typed props.
pub fn typed(server: &Server, name: &str) {
    let registry = server.node.registry();
    registry
        .create_type(name, &eddy_model::props::PropsPatch::new())
        .expect("create type");
    registry.activate_type(name).expect("activate type");
}

/// One PB connection.
pub struct Client {
    pub stream: TcpStream,
}

/// An answer: the code and the encoded message.
pub type Frame = (u8, Vec<u8>);

impl Client {
    pub async fn connect(server: &Server) -> Client {
        let stream = TcpStream::connect(server.addr).await.expect("connect");
        Client { stream }
    }

    pub async fn send(&mut self, code: u8, msg: &impl Message) {
        let mut body = Vec::new();
        msg.encode(&mut body).expect("encode");
        self.send_raw(code, &body).await;
    }

    pub async fn send_raw(&mut self, code: u8, body: &[u8]) {
        let mut frame = ((body.len() + 1) as u32).to_be_bytes().to_vec();
        frame.push(code);
        frame.extend_from_slice(body);
        self.stream.write_all(&frame).await.expect("write");
    }

    /// The next frame, or `None` if the server closed the connection.
    pub async fn recv(&mut self) -> Option<Frame> {
        let read = async {
            let mut header = [0u8; 4];
            self.stream.read_exact(&mut header).await.ok()?;
            let len = u32::from_be_bytes(header) as usize;
            let mut body = vec![0u8; len];
            self.stream.read_exact(&mut body).await.ok()?;
            let code = body.remove(0);
            Some((code, body))
        };
        tokio::time::timeout(Duration::from_secs(20), read)
            .await
            .expect("server answered in time")
    }

    /// Sends a request and decodes the answer, or returns the error text.
    pub async fn call<T: Message + Default>(
        &mut self,
        code: u8,
        req: &impl Message,
        resp_code: u8,
    ) -> Result<T, String> {
        self.send(code, req).await;
        expect::<T>(self.recv().await, resp_code)
    }

    /// A bodiless request.
    pub async fn call_empty<T: Message + Default>(
        &mut self,
        code: u8,
        resp_code: u8,
    ) -> Result<T, String> {
        self.send_raw(code, &[]).await;
        expect::<T>(self.recv().await, resp_code)
    }

    pub async fn ping(&mut self) -> bool {
        self.send_raw(codes::PING_REQ, &[]).await;
        matches!(self.recv().await, Some((codes::PING_RESP, body)) if body.is_empty())
    }

    pub async fn put(&mut self, req: &proto::RpbPutReq) -> Result<proto::RpbPutResp, String> {
        self.call(codes::PUT_REQ, req, codes::PUT_RESP).await
    }

    pub async fn get(&mut self, req: &proto::RpbGetReq) -> Result<proto::RpbGetResp, String> {
        self.call(codes::GET_REQ, req, codes::GET_RESP).await
    }
}

/// Decodes `frame` as `T` under `resp_code`, or returns an error's text.
pub fn expect<T: Message + Default>(frame: Option<Frame>, resp_code: u8) -> Result<T, String> {
    match frame {
        Some((code, body)) if code == resp_code => Ok(T::decode(body.as_slice()).expect("decode")),
        Some((codes::ERROR_RESP, body)) => {
            let e = proto::RpbErrorResp::decode(body.as_slice()).expect("error decodes");
            assert_eq!(e.errcode, 0, "Riak's errcode");
            Err(String::from_utf8_lossy(&e.errmsg).into_owned())
        }
        other => panic!("unexpected answer {other:?}"),
    }
}

pub fn get_req(bucket_type: Option<&str>, bucket: &str, key: &str) -> proto::RpbGetReq {
    proto::RpbGetReq {
        bucket: bucket.as_bytes().to_vec(),
        key: key.as_bytes().to_vec(),
        r#type: bucket_type.map(|t| t.as_bytes().to_vec()),
        ..Default::default()
    }
}

pub fn put_req(
    bucket_type: Option<&str>,
    bucket: &str,
    key: &str,
    value: &str,
) -> proto::RpbPutReq {
    proto::RpbPutReq {
        bucket: bucket.as_bytes().to_vec(),
        key: Some(key.as_bytes().to_vec()),
        r#type: bucket_type.map(|t| t.as_bytes().to_vec()),
        content: proto::RpbContent {
            value: value.as_bytes().to_vec(),
            content_type: Some(b"text/plain".to_vec()),
            ..Default::default()
        },
        ..Default::default()
    }
}

pub fn values(resp: &proto::RpbGetResp) -> Vec<Vec<u8>> {
    let mut v: Vec<_> = resp.content.iter().map(|c| c.value.clone()).collect();
    v.sort();
    v
}
