//! The PB listener: the accept loop, one task per connection, and dispatch
//! of each frame to its operation.
//!
//! Invariants: a connection's failure (bad frame, slow peer, panic-free
//! error) ends only that connection; the accept loop never waits on a
//! client; at most `connections_max` connections are served, and one over
//! the limit is told so and closed; on shutdown the listener stops
//! accepting, idle connections close, and requests in flight finish.

use std::sync::Arc;
use std::time::Duration;

use eddy_kv::Node;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::codec::{self, FrameError};
use super::codes;
use super::error::PbError;
use super::proto::RpbErrorResp;
use super::{
    bucket_props, bucket_type, client_id, delete, get, list_buckets, list_keys, ping, preflist,
    put, server_info,
};

/// Settings of the PB listener.
#[derive(Clone, Debug)]
pub struct PbConfig {
    /// Largest frame accepted (code byte and message). Riak clients send
    /// whole objects in one frame, so this bounds the object size over PB.
    pub frame_bytes_max: usize,
    /// Connections served at once; more are refused with an error.
    pub connections_max: usize,
    /// How long a connection may stay silent (between or inside frames)
    /// before it is closed; `None` waits forever, as Riak does.
    pub read_timeout: Option<Duration>,
}

impl Default for PbConfig {
    fn default() -> Self {
        PbConfig {
            frame_bytes_max: 64 * 1024 * 1024,
            connections_max: 4096,
            read_timeout: None,
        }
    }
}

/// Serves Riak's PB API on `listener` until `shutdown` completes, then
/// waits for the connections to finish their requests in flight.
pub async fn serve(
    listener: TcpListener,
    node: Arc<Node>,
    config: PbConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let permits = Arc::new(Semaphore::new(config.connections_max));
    let config = Arc::new(config);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let conn = Connection::new(node.clone(), config.clone(), stop_rx.clone());
                    connections.spawn(admit(stream, conn, permits.clone()));
                }
                Err(e) => accept_failed(e).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    let _ = stop_tx.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// Accepting fails when the process is out of file descriptors and the
/// like; back off instead of spinning, and keep serving.
async fn accept_failed(e: std::io::Error) {
    tracing::warn!("pb accept failed: {e}");
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Serves a connection if a permit is free, otherwise refuses it.
async fn admit(stream: TcpStream, conn: Connection, permits: Arc<Semaphore>) {
    let _ = stream.set_nodelay(true);
    match permits.try_acquire_owned() {
        Ok(_permit) => conn.run(stream).await,
        Err(_) => refuse(stream, conn.config.connections_max).await,
    }
}

async fn refuse(mut stream: TcpStream, limit: usize) {
    let mut out = Vec::new();
    error_frame(&PbError::ConnectionLimit(limit), &mut out);
    let _ = stream.write_all(&out).await;
    let _ = stream.shutdown().await;
}

fn error_frame(e: &PbError, out: &mut Vec<u8>) {
    let resp = RpbErrorResp {
        errmsg: e.text().into_bytes(),
        errcode: 0,
    };
    codec::encode_frame(codes::ERROR_RESP, &resp, out);
}

/// What one connection's requests share.
pub(crate) struct Session {
    pub node: Arc<Node>,
    /// The client id set by `RpbSetClientIdReq` (Riak echoes it back).
    pub client_id: Vec<u8>,
}

/// The answers of a connection: frames are queued and written with one
/// write on flush.
pub(crate) struct Outbox {
    writer: OwnedWriteHalf,
    buf: Vec<u8>,
}

impl Outbox {
    /// Queues `message` under `code`.
    pub fn push(&mut self, code: u8, message: &impl Message) {
        codec::encode_frame(code, message, &mut self.buf);
    }

    /// Queues a bare acknowledgement.
    pub fn push_empty(&mut self, code: u8) {
        codec::encode_empty(code, &mut self.buf);
    }

    /// Queues an error answer.
    pub fn push_error(&mut self, e: &PbError) {
        error_frame(e, &mut self.buf);
    }

    /// Writes everything queued to the socket.
    pub async fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let written = self.writer.write_all(&self.buf).await;
        self.buf.clear();
        written
    }
}

struct Connection {
    node: Arc<Node>,
    config: Arc<PbConfig>,
    stop: watch::Receiver<bool>,
}

impl Connection {
    fn new(node: Arc<Node>, config: Arc<PbConfig>, stop: watch::Receiver<bool>) -> Self {
        Connection { node, config, stop }
    }

    async fn run(mut self, stream: TcpStream) {
        let (read, write) = stream.into_split();
        let mut reader = BufReader::new(read);
        let mut out = Outbox {
            writer: write,
            buf: Vec::new(),
        };
        let mut session = Session {
            node: self.node.clone(),
            client_id: vec![0; 4],
        };
        while let Some(frame) = self.next_frame(&mut reader).await {
            let result = match frame {
                Ok(frame) => dispatch(&mut session, &mut out, frame).await,
                Err(e) => Err(PbError::Frame(e)),
            };
            if let Err(e) = &result
                && !matches!(e, PbError::Io(_))
            {
                out.push_error(e);
            }
            let flushed = out.flush().await;
            if flushed.is_err() {
                break;
            }
            if result.as_ref().is_err_and(PbError::closes_connection) {
                let _ = out.writer.shutdown().await;
                linger(&mut reader).await;
                return;
            }
        }
        let _ = out.writer.shutdown().await;
    }

    /// The next frame, `None` when the connection should close quietly
    /// (peer gone, timed out, shutting down).
    async fn next_frame(
        &mut self,
        reader: &mut BufReader<OwnedReadHalf>,
    ) -> Option<Result<codec::Frame, FrameError>> {
        if *self.stop.borrow() {
            return None;
        }
        let max = self.config.frame_bytes_max;
        let read = codec::read_frame(reader, max, self.config.read_timeout);
        let result = tokio::select! {
            r = read => r,
            _ = self.stop.changed() => return None,
        };
        match result {
            Ok(frame) => Some(Ok(frame)),
            Err(e) if e.is_protocol_error() => Some(Err(e)),
            Err(e) => {
                tracing::debug!("pb connection closed: {e}");
                None
            }
        }
    }
}

/// After refusing a frame, reads (and drops) what the peer still sends for
/// a moment before closing: closing a socket with unread input resets the
/// connection, which can destroy the error answer before the peer reads it.
async fn linger(reader: &mut BufReader<OwnedReadHalf>) {
    let mut scratch = vec![0u8; 64 * 1024];
    let mut left = LINGER_BYTES_MAX;
    let drain = async {
        while left > 0 {
            match reader.read(&mut scratch).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// How long, and how many bytes, a refused connection is drained.
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES_MAX: usize = 4 * 1024 * 1024;

/// Runs the operation a frame's code names.
async fn dispatch(
    session: &mut Session,
    out: &mut Outbox,
    frame: codec::Frame,
) -> Result<(), PbError> {
    let body = frame.body.as_slice();
    match frame.code {
        codes::PING_REQ => ping::handle(out),
        codes::GET_CLIENT_ID_REQ => client_id::get(session, out),
        codes::SET_CLIENT_ID_REQ => client_id::set(session, out, body),
        codes::GET_SERVER_INFO_REQ => server_info::handle(session, out),
        codes::GET_REQ => get::handle(session, out, body).await,
        codes::PUT_REQ => put::handle(session, out, body).await,
        codes::DEL_REQ => delete::handle(session, out, body).await,
        codes::LIST_BUCKETS_REQ => list_buckets::handle(session, out, body).await,
        codes::LIST_KEYS_REQ => list_keys::handle(session, out, body).await,
        codes::GET_BUCKET_REQ => bucket_props::get(session, out, body),
        codes::SET_BUCKET_REQ => bucket_props::set(session, out, body).await,
        codes::RESET_BUCKET_REQ => bucket_props::reset(session, out, body).await,
        codes::GET_BUCKET_TYPE_REQ => bucket_type::get(session, out, body),
        codes::SET_BUCKET_TYPE_REQ => bucket_type::set(session, out, body).await,
        codes::GET_BUCKET_KEY_PREFLIST_REQ => preflist::handle(session, out, body),
        codes::START_TLS => Err(PbError::StartTls),
        codes::AUTH_REQ => Err(PbError::Auth),
        other => Err(PbError::UnknownCode(other)),
    }
}
