//! The PB listener: admission of each connection accepted by
//! `eddy_net::accept`'s loop, one task per connection, and dispatch of each
//! frame to its operation.
//!
//! Invariants: a connection's failure (bad frame, slow peer, error) ends
//! only that connection, and a panic in a handler ends only its request
//! (answered with an error); the accept loop never waits on a client; at
//! most `connections_max` connections are served: when full, the longest
//! idle one is closed for a newcomer, and a newcomer finding all busy is
//! told so and closed; a connection waits at most `read_timeout` for its
//! next request to start and `request_timeout` for a started frame to
//! arrive whole; on shutdown the listener stops accepting, idle
//! connections close, and requests in flight finish.

use eddy_wire::proto::RpbErrorResp;
use eddy_wire::{Frame, FrameError, codes, frame};
use std::sync::Arc;
use std::time::Duration;

use eddy_kv::Node;
use eddy_net::accept::{Stop, accept_loop};
use eddy_query::Jobs;
use eddy_query::js::JsLimits;
use prost::Message;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

use super::error::PbError;
use super::read::ReadError;
use super::{
    bucket_props, bucket_type, client_id, counter, datatype, delete, get, index, list_buckets,
    list_keys, mapred, multi, ping, preflist, put, server_info,
};
use crate::figures::{ApiFigures, Side};
use crate::net::{ConnectionTable, RequestBudget, Slot, catch_panic};

/// Settings of the PB listener.
#[derive(Clone, Debug)]
pub struct PbConfig {
    /// Largest frame accepted (code byte and message). Riak clients send
    /// whole objects in one frame, so this bounds the object size over PB.
    pub frame_bytes_max: usize,
    /// Connections served at once; when full, the longest idle one is
    /// closed for a newcomer, and a newcomer finding all busy is refused.
    pub connections_max: usize,
    /// The idle timeout: how long a connection may wait for its next
    /// request to start before it is closed; `None` waits forever.
    pub read_timeout: Option<Duration>,
    /// How long a started frame may take to arrive whole (one deadline per
    /// frame, so a client trickling bytes is cut off); `None` waits forever.
    pub request_timeout: Option<Duration>,
    /// The connection table to use (so `/stats` can see it); `None` builds
    /// one of `connections_max` places.
    pub table: Option<Arc<ConnectionTable>>,
    /// The node-wide budget of request bytes being received; `None`
    /// bounds each frame only by `frame_bytes_max`.
    pub budget: Option<Arc<RequestBudget>>,
    /// The node's MapReduce (its JavaScript pool and limits), shared with
    /// the HTTP front end and the node's vnodes.
    pub jobs: Arc<Jobs>,
}

impl Default for PbConfig {
    fn default() -> Self {
        PbConfig {
            frame_bytes_max: 64 * 1024 * 1024,
            connections_max: 4096,
            read_timeout: Some(Duration::from_secs(600)),
            request_timeout: Some(Duration::from_secs(60)),
            table: None,
            budget: None,
            jobs: Jobs::new(Some(JsLimits::default())),
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
    let table =
        (config.table.clone()).unwrap_or_else(|| ConnectionTable::new(config.connections_max));
    let config = Arc::new(config);
    let figures = Arc::new(PbFigures::register(&node));
    let serve = |stream, _, stop| {
        let conn = Connection::new(node.clone(), config.clone(), figures.clone(), stop);
        admit(stream, conn, table.clone())
    };
    accept_loop(listener, "pb", shutdown, serve).await;
    Ok(())
}

/// Serves a connection if the table admits it, otherwise refuses it.
async fn admit(stream: TcpStream, conn: Connection, table: Arc<ConnectionTable>) {
    match table.admit() {
        Some(slot) => conn.run(stream, slot).await,
        None => refuse(stream, table.limit()).await,
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
    frame::encode_frame(codes::ERROR_RESP, &resp, out);
}

/// What one connection's requests share.
pub(crate) struct Session {
    pub node: Arc<Node>,
    /// The node's MapReduce.
    pub jobs: Arc<Jobs>,
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
        frame::encode_frame(code, message, &mut self.buf);
    }

    /// Queues a bare acknowledgement.
    pub fn push_empty(&mut self, code: u8) {
        frame::encode_empty(code, &mut self.buf);
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

/// The PB listener's figures: requests by message (`op` is the request
/// message's name, `unknown` for a code no request has), errors by side.
struct PbFigures {
    api: ApiFigures,
    /// Each code's index among the registered names.
    op_of_code: Box<[u8; 256]>,
}

impl PbFigures {
    fn register(node: &Node) -> PbFigures {
        let requests = codes::ALL
            .iter()
            .filter(|(code, name)| name.ends_with("Req") || *code == codes::START_TLS);
        let mut ops: Vec<&'static str> = requests.clone().map(|(_, name)| *name).collect();
        ops.push("unknown");
        let unknown = u8::try_from(ops.len() - 1).unwrap_or(u8::MAX);
        let mut op_of_code = Box::new([unknown; 256]);
        for (i, (code, _)) in requests.enumerate() {
            op_of_code[usize::from(*code)] = u8::try_from(i).unwrap_or(unknown);
        }
        let api = ApiFigures::register(node.metrics_registry(), "pb", &ops);
        PbFigures { api, op_of_code }
    }

    fn request(&self, code: u8) {
        self.api
            .request(usize::from(self.op_of_code[usize::from(code)]));
    }
}

struct Connection {
    node: Arc<Node>,
    config: Arc<PbConfig>,
    figures: Arc<PbFigures>,
    stop: Stop,
}

impl Connection {
    fn new(node: Arc<Node>, config: Arc<PbConfig>, figures: Arc<PbFigures>, stop: Stop) -> Self {
        Connection {
            node,
            config,
            figures,
            stop,
        }
    }

    async fn run(mut self, stream: TcpStream, slot: Slot) {
        let (read, write) = stream.into_split();
        let mut reader = BufReader::new(read);
        let mut out = Outbox {
            writer: write,
            buf: Vec::new(),
        };
        let mut session = Session {
            node: self.node.clone(),
            jobs: self.config.jobs.clone(),
            client_id: vec![0; 4],
        };
        while let Some(frame) = self.next_frame(&mut reader, &slot).await {
            let result = match frame {
                Ok(frame) => {
                    self.figures.request(frame.code);
                    serve_frame(&mut session, &mut out, frame).await
                }
                Err(e) => Err(PbError::Frame(e)),
            };
            if let Err(e) = &result
                && !matches!(e, PbError::Io(_))
            {
                let side = if e.is_internal() {
                    Side::Server
                } else {
                    Side::Client
                };
                self.figures.api.error(side);
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
        slot: &Slot,
    ) -> Option<Result<Frame, ReadError>> {
        if *self.stop.borrow() {
            return None;
        }
        slot.idle();
        // Biased: a request already buffered is taken without registering
        // a waiter on the stop and eviction signals.
        let started = tokio::select! {
            biased;
            r = request_started(reader, self.config.read_timeout) => r,
            _ = self.stop.changed() => return None,
            _ = slot.evicted() => {
                tracing::debug!("pb connection evicted for a newer one");
                return None;
            }
        };
        slot.busy();
        if let Err(e) = started {
            tracing::debug!("pb connection closed: {e}");
            return None;
        }
        let result = self.read_started_frame(reader).await;
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

impl Connection {
    /// Reads the frame whose first byte has arrived, within the request
    /// timeout (one deadline for the whole frame).
    async fn read_started_frame(
        &mut self,
        reader: &mut BufReader<OwnedReadHalf>,
    ) -> Result<Frame, ReadError> {
        let max = self.config.frame_bytes_max;
        let budget = self.config.budget.clone();
        let read = async {
            let len = frame::read_length(reader, max, None).await?;
            let _reserved = match &budget {
                Some(b) => Some(b.reserve(len).await?),
                None => None,
            };
            Ok(frame::read_body(reader, len, None).await?)
        };
        let Some(limit) = self.config.request_timeout else {
            return tokio::select! {
                biased;
                r = read => r,
                _ = self.stop.changed() => Err(FrameError::Closed.into()),
            };
        };
        // Biased: a frame that is already whole is read without arming the
        // timer or waiting on the stop signal.
        tokio::select! {
            biased;
            r = tokio::time::timeout(limit, read) => {
                r.unwrap_or(Err(ReadError::RequestTimeout(limit.as_millis())))
            }
            _ = self.stop.changed() => Err(FrameError::Closed.into()),
        }
    }
}

/// Waits, up to the idle timeout, for the first byte of the next request
/// (without consuming it). Fails when the peer closed or stayed silent.
async fn request_started(
    reader: &mut BufReader<OwnedReadHalf>,
    idle: Option<Duration>,
) -> Result<(), FrameError> {
    let wait = async {
        match reader.fill_buf().await {
            Ok([]) => Err(FrameError::Closed),
            Ok(_) => Ok(()),
            Err(e) => Err(FrameError::Io(e)),
        }
    };
    match idle {
        Some(t) => tokio::time::timeout(t, wait)
            .await
            .unwrap_or(Err(FrameError::Timeout)),
        None => wait.await,
    }
}

/// Runs one frame's operation under the panic net: a panicking handler's
/// half-built answer is dropped and the client gets an error instead.
/// An internal failure is logged once, here, naming the request's message
/// and, for a get, put or delete, its object.
async fn serve_frame(session: &mut Session, out: &mut Outbox, frame: Frame) -> Result<(), PbError> {
    let code = frame.code;
    let handled = {
        let fut = std::pin::pin!(dispatch(session, out, &frame));
        catch_panic(fut).await
    };
    let result = handled.unwrap_or_else(|panic| {
        tracing::error!("pb request (code {code}) panicked: {panic}");
        out.buf.clear();
        Err(PbError::Panicked)
    });
    if let Err(e) = &result
        && e.is_internal()
        && !matches!(e, PbError::Panicked)
    {
        let message = codes::name(code).unwrap_or("unknown");
        let object = object_named(code, &frame.body).unwrap_or_default();
        tracing::warn!(message, object, cause = %e, "pb request failed");
    }
    result
}

/// `type/bucket/key` of the object a get, put or delete request names
/// (`None` for other requests, and bodies that do not decode).
fn object_named(code: u8, body: &[u8]) -> Option<String> {
    use eddy_wire::proto::{RpbDelReq, RpbGetReq, RpbPutReq};
    let (bucket_type, bucket, key) = match code {
        codes::GET_REQ => RpbGetReq::decode(body).map(|r| (r.r#type, r.bucket, r.key)),
        codes::PUT_REQ => {
            RpbPutReq::decode(body).map(|r| (r.r#type, r.bucket, r.key.unwrap_or_default()))
        }
        codes::DEL_REQ => RpbDelReq::decode(body).map(|r| (r.r#type, r.bucket, r.key)),
        _ => return None,
    }
    .ok()?;
    let bucket_type = bucket_type.map_or_else(
        || eddy_model::types::DEFAULT_TYPE.to_string(),
        |t| String::from_utf8_lossy(&t).into_owned(),
    );
    let bucket = eddy_model::BucketRef {
        bucket_type,
        bucket,
    };
    Some(bucket.object_name(&key))
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
async fn dispatch(session: &mut Session, out: &mut Outbox, frame: &Frame) -> Result<(), PbError> {
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
        codes::INDEX_REQ => index::handle(session, out, body).await,
        codes::MAP_RED_REQ => mapred::handle(session, out, body).await,
        codes::GET_BUCKET_REQ => bucket_props::get(session, out, body),
        codes::SET_BUCKET_REQ => bucket_props::set(session, out, body).await,
        codes::RESET_BUCKET_REQ => bucket_props::reset(session, out, body).await,
        codes::GET_BUCKET_TYPE_REQ => bucket_type::get(session, out, body),
        codes::SET_BUCKET_TYPE_REQ => bucket_type::set(session, out, body).await,
        codes::GET_BUCKET_KEY_PREFLIST_REQ => preflist::handle(session, out, body),
        codes::DT_FETCH_REQ => datatype::fetch(session, out, body).await,
        codes::DT_UPDATE_REQ => datatype::update(session, out, body).await,
        codes::COUNTER_UPDATE_REQ => counter::update(session, out, body).await,
        codes::COUNTER_GET_REQ => counter::get(session, out, body).await,
        codes::MULTI_GET_REQ => multi::get(session, out, body).await,
        codes::MULTI_PUT_REQ => multi::put(session, out, body).await,
        codes::MULTI_DEL_REQ => multi::delete(session, out, body).await,
        codes::START_TLS => Err(PbError::StartTls),
        codes::AUTH_REQ => Err(PbError::Auth),
        #[cfg(feature = "test-hooks")]
        codes::TEST_PANIC_REQ => panic!("test hook: a handler panicked"),
        other => Err(PbError::UnknownCode(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_wire::proto::RpbGetReq;

    #[test]
    fn a_failed_get_names_its_object() {
        let req = RpbGetReq {
            bucket: b"b".to_vec(),
            key: b"k".to_vec(),
            r#type: Some(b"maps".to_vec()),
            ..RpbGetReq::default()
        };
        let body = req.encode_to_vec();
        assert_eq!(
            object_named(codes::GET_REQ, &body).as_deref(),
            Some("maps/b/k")
        );
        assert_eq!(object_named(codes::PING_REQ, &[]), None);
    }
}
