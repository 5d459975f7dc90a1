//! An async client of Riak's Protocol Buffers API, on tokio.
//!
//! One [`PbClient`] is one TCP connection carrying one request at a time, as
//! Riak clients do: a request frame out, its answer frame back. Framing,
//! codes and messages are those the server uses ([`eddy_wire`]), so the two
//! cannot drift apart.
//!
//! Eddy's own multi-key requests (codes 160–165) are sent as Riak's are.
//!
//! Streamed answers (MapReduce, streamed 2i) are read up to the frame that
//! says `done`, at most [`STREAM_FRAMES_MAX`] frames.
//!
//! Every exchange (write and read together) is bounded by the client's
//! timeout. Invariant: after an error that leaves the stream in an unknown
//! state (timeout, I/O error, EOF, an unexpected frame) the client refuses
//! further requests with [`PbClientError::Unusable`]; only a server's
//! `RpbErrorResp` leaves the connection usable, as it does for Riak.

use std::time::Duration;

use eddy_wire::codes;
use eddy_wire::frame::{self, Frame, FrameError};
use eddy_wire::proto::eddy::{
    EddyMultiDelReq, EddyMultiDelResp, EddyMultiGetReq, EddyMultiGetResp, EddyMultiPutReq,
    EddyMultiPutResp,
};
use eddy_wire::proto::{
    DtFetchReq, DtFetchResp, DtUpdateReq, DtUpdateResp, RpbDelReq, RpbErrorResp, RpbGetReq,
    RpbGetResp, RpbGetServerInfoResp, RpbIndexReq, RpbIndexResp, RpbMapRedReq, RpbMapRedResp,
    RpbPutReq, RpbPutResp, RpbSetBucketReq,
};
use prost::Message;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Most frames one streamed answer (MapReduce, streamed 2i) may have before
/// the client gives up on it: a limit, so a server that never says `done`
/// cannot keep a request going (the timeout bounds its time too).
pub const STREAM_FRAMES_MAX: usize = 1 << 20;

/// Largest answer accepted: above the server's 64 MiB frame limit, so any
/// answer a server may legally send fits.
pub const RESPONSE_BYTES_MAX: usize = 128 << 20;

/// Why a PB request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PbClientError {
    /// The TCP connection could not be opened.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// Connecting or the exchange took longer than the client's timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The server closed the connection before answering.
    #[error("server closed the connection")]
    Closed,
    /// The server closed the connection in the middle of an answer.
    #[error("server closed the connection inside a frame")]
    Truncated,
    /// The server answered with `RpbErrorResp`; the connection stays usable.
    #[error("server error: {message}")]
    Server { message: String, code: u32 },
    /// The server answered with a message code the request does not expect.
    #[error("expected message code {expected}, got {got}")]
    UnexpectedCode { expected: u8, got: u8 },
    /// The answer's frame is empty or larger than [`RESPONSE_BYTES_MAX`].
    #[error("bad frame from server: {0}")]
    BadFrame(FrameError),
    /// A streamed answer went on past [`STREAM_FRAMES_MAX`] frames.
    #[error("streamed answer longer than {0} frames")]
    TooManyFrames(usize),
    /// The answer's message does not decode.
    #[error("undecodable answer: {0}")]
    Decode(#[from] prost::DecodeError),
    /// The socket failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// An earlier error left the connection in an unknown state; reconnect.
    #[error("connection unusable after an earlier error")]
    Unusable,
}

impl PbClientError {
    /// A short stable name for counting errors by kind.
    pub fn kind(&self) -> &'static str {
        match self {
            PbClientError::Connect { .. } => "connect",
            PbClientError::Timeout(_) => "timeout",
            PbClientError::Closed => "closed",
            PbClientError::Truncated => "truncated",
            PbClientError::Server { .. } => "server",
            PbClientError::UnexpectedCode { .. } => "unexpected_code",
            PbClientError::BadFrame(_) => "bad_frame",
            PbClientError::TooManyFrames(_) => "too_many_frames",
            PbClientError::Decode(_) => "decode",
            PbClientError::Io(_) => "io",
            PbClientError::Unusable => "unusable",
        }
    }

    /// Whether the connection must be dropped and opened again.
    pub fn needs_reconnect(&self) -> bool {
        !matches!(self, PbClientError::Server { .. })
    }
}

impl From<FrameError> for PbClientError {
    fn from(e: FrameError) -> Self {
        match e {
            FrameError::Closed => PbClientError::Closed,
            FrameError::Truncated => PbClientError::Truncated,
            FrameError::Io(io) => PbClientError::Io(io),
            other => PbClientError::BadFrame(other),
        }
    }
}

/// One PB connection.
pub struct PbClient {
    stream: BufReader<TcpStream>,
    out: Vec<u8>,
    timeout: Duration,
    usable: bool,
}

impl PbClient {
    /// Connects to `addr`; connecting and every later request each wait at
    /// most `timeout`.
    pub async fn connect(addr: &str, timeout: Duration) -> Result<Self, PbClientError> {
        let connect_err = |source| PbClientError::Connect {
            addr: addr.to_string(),
            source,
        };
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| PbClientError::Timeout(timeout))?
            .map_err(connect_err)?;
        stream.set_nodelay(true).map_err(connect_err)?;
        Ok(PbClient {
            stream: BufReader::new(stream),
            out: Vec::new(),
            timeout,
            usable: true,
        })
    }

    /// `RpbPingReq` → `RpbPingResp`.
    pub async fn ping(&mut self) -> Result<(), PbClientError> {
        self.out.clear();
        frame::encode_empty(codes::PING_REQ, &mut self.out);
        self.exchange(codes::PING_RESP).await.map(drop)
    }

    /// `RpbGetReq` → `RpbGetResp` (no content and no vclock: not found).
    pub async fn get(&mut self, req: &RpbGetReq) -> Result<RpbGetResp, PbClientError> {
        self.call(codes::GET_REQ, req, codes::GET_RESP).await
    }

    /// `RpbPutReq` → `RpbPutResp`.
    pub async fn put(&mut self, req: &RpbPutReq) -> Result<RpbPutResp, PbClientError> {
        self.call(codes::PUT_REQ, req, codes::PUT_RESP).await
    }

    /// `RpbDelReq` → the bare `RpbDelResp`.
    pub async fn delete(&mut self, req: &RpbDelReq) -> Result<(), PbClientError> {
        self.out.clear();
        frame::encode_frame(codes::DEL_REQ, req, &mut self.out);
        self.exchange(codes::DEL_RESP).await.map(drop)
    }

    /// Eddy's `EddyMultiGetReq` → `EddyMultiGetResp`: one result per key,
    /// in request order (design note 016; [`crate::multi::KeyResult`]
    /// reads them).
    pub async fn multi_get(
        &mut self,
        req: &EddyMultiGetReq,
    ) -> Result<EddyMultiGetResp, PbClientError> {
        self.call(codes::MULTI_GET_REQ, req, codes::MULTI_GET_RESP)
            .await
    }

    /// Eddy's `EddyMultiPutReq` → `EddyMultiPutResp`.
    pub async fn multi_put(
        &mut self,
        req: &EddyMultiPutReq,
    ) -> Result<EddyMultiPutResp, PbClientError> {
        self.call(codes::MULTI_PUT_REQ, req, codes::MULTI_PUT_RESP)
            .await
    }

    /// Eddy's `EddyMultiDelReq` → `EddyMultiDelResp`.
    pub async fn multi_delete(
        &mut self,
        req: &EddyMultiDelReq,
    ) -> Result<EddyMultiDelResp, PbClientError> {
        self.call(codes::MULTI_DEL_REQ, req, codes::MULTI_DEL_RESP)
            .await
    }

    /// `DtUpdateReq` → `DtUpdateResp` (a data type operation).
    pub async fn dt_update(&mut self, req: &DtUpdateReq) -> Result<DtUpdateResp, PbClientError> {
        self.call(codes::DT_UPDATE_REQ, req, codes::DT_UPDATE_RESP)
            .await
    }

    /// `DtFetchReq` → `DtFetchResp` (a data type value; no `value`: not found).
    pub async fn dt_fetch(&mut self, req: &DtFetchReq) -> Result<DtFetchResp, PbClientError> {
        self.call(codes::DT_FETCH_REQ, req, codes::DT_FETCH_RESP)
            .await
    }

    /// `RpbGetServerInfoReq` → `RpbGetServerInfoResp` (node name, version).
    pub async fn server_info(&mut self) -> Result<RpbGetServerInfoResp, PbClientError> {
        self.out.clear();
        frame::encode_empty(codes::GET_SERVER_INFO_REQ, &mut self.out);
        let body = self.exchange(codes::GET_SERVER_INFO_RESP).await?;
        self.decode(&body)
    }

    /// `RpbSetBucketReq` → the bare `RpbSetBucketResp`.
    pub async fn set_bucket(&mut self, req: &RpbSetBucketReq) -> Result<(), PbClientError> {
        self.out.clear();
        frame::encode_frame(codes::SET_BUCKET_REQ, req, &mut self.out);
        self.exchange(codes::SET_BUCKET_RESP).await.map(drop)
    }

    /// `RpbIndexReq` → every `RpbIndexResp` of the answer: one, or with
    /// `stream` set, frames up to the one with `done`.
    pub async fn index(&mut self, req: &RpbIndexReq) -> Result<Vec<RpbIndexResp>, PbClientError> {
        self.out.clear();
        frame::encode_frame(codes::INDEX_REQ, req, &mut self.out);
        let streamed = req.stream == Some(true);
        self.exchange_stream(codes::INDEX_RESP, |r: &RpbIndexResp| {
            !streamed || r.done == Some(true)
        })
        .await
    }

    /// `RpbMapRedReq` → every `RpbMapRedResp` up to the one with `done`.
    pub async fn mapred(
        &mut self,
        req: &RpbMapRedReq,
    ) -> Result<Vec<RpbMapRedResp>, PbClientError> {
        self.out.clear();
        frame::encode_frame(codes::MAP_RED_REQ, req, &mut self.out);
        self.exchange_stream(codes::MAP_RED_RESP, |r: &RpbMapRedResp| {
            r.done == Some(true)
        })
        .await
    }

    fn decode<Resp: Message + Default>(&mut self, body: &[u8]) -> Result<Resp, PbClientError> {
        Resp::decode(body).map_err(|e| {
            self.usable = false;
            PbClientError::Decode(e)
        })
    }

    /// Sends the frame in `self.out` and reads answers with the `expected`
    /// code until `last` says one ends the answer, all within one timeout.
    async fn exchange_stream<Resp: Message + Default>(
        &mut self,
        expected: u8,
        last: impl Fn(&Resp) -> bool,
    ) -> Result<Vec<Resp>, PbClientError> {
        if !self.usable {
            return Err(PbClientError::Unusable);
        }
        let timeout = self.timeout;
        let answer = tokio::time::timeout(timeout, self.stream_round_trip(expected, last)).await;
        let result = answer.unwrap_or(Err(PbClientError::Timeout(timeout)));
        if result.as_ref().is_err_and(PbClientError::needs_reconnect) {
            self.usable = false;
        }
        result
    }

    async fn stream_round_trip<Resp: Message + Default>(
        &mut self,
        expected: u8,
        last: impl Fn(&Resp) -> bool,
    ) -> Result<Vec<Resp>, PbClientError> {
        self.stream.get_mut().write_all(&self.out).await?;
        let mut answers = Vec::new();
        while answers.len() < STREAM_FRAMES_MAX {
            let frame = frame::read_frame(&mut self.stream, RESPONSE_BYTES_MAX, None).await?;
            let resp = Resp::decode(check_code(frame, expected)?.as_slice())?;
            let done = last(&resp);
            answers.push(resp);
            if done {
                return Ok(answers);
            }
        }
        Err(PbClientError::TooManyFrames(STREAM_FRAMES_MAX))
    }

    async fn call<Resp: Message + Default>(
        &mut self,
        code: u8,
        req: &impl Message,
        expected: u8,
    ) -> Result<Resp, PbClientError> {
        self.out.clear();
        frame::encode_frame(code, req, &mut self.out);
        let body = self.exchange(expected).await?;
        self.decode(&body)
    }

    /// Sends the frame in `self.out` and reads the answer's body.
    async fn exchange(&mut self, expected: u8) -> Result<Vec<u8>, PbClientError> {
        if !self.usable {
            return Err(PbClientError::Unusable);
        }
        let answer = match tokio::time::timeout(self.timeout, self.round_trip()).await {
            Ok(answer) => answer,
            Err(_) => Err(PbClientError::Timeout(self.timeout)),
        };
        let result = answer.and_then(|frame| check_code(frame, expected));
        if result.as_ref().is_err_and(PbClientError::needs_reconnect) {
            self.usable = false;
        }
        result
    }

    async fn round_trip(&mut self) -> Result<Frame, PbClientError> {
        self.stream.get_mut().write_all(&self.out).await?;
        Ok(frame::read_frame(&mut self.stream, RESPONSE_BYTES_MAX, None).await?)
    }
}

/// The body of `frame` if it has the `expected` code; the server's error if
/// it is an `RpbErrorResp`.
fn check_code(frame: Frame, expected: u8) -> Result<Vec<u8>, PbClientError> {
    if frame.code == expected {
        return Ok(frame.body);
    }
    if frame.code != codes::ERROR_RESP {
        return Err(PbClientError::UnexpectedCode {
            expected,
            got: frame.code,
        });
    }
    let resp = RpbErrorResp::decode(frame.body.as_slice())?;
    Err(PbClientError::Server {
        message: String::from_utf8_lossy(&resp.errmsg).into_owned(),
        code: resp.errcode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    /// A one-connection server that answers every request with `answer`
    /// (the raw bytes), or never answers when `answer` is `None`.
    async fn fake_server(answer: Option<Vec<u8>>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Some(a) = &answer {
                    s.write_all(a).await.unwrap();
                }
            }
        });
        addr
    }

    fn frame(code: u8, message: &impl Message) -> Vec<u8> {
        let mut out = Vec::new();
        frame::encode_frame(code, message, &mut out);
        out
    }

    fn get_req() -> RpbGetReq {
        RpbGetReq {
            bucket: b"b".to_vec(),
            key: b"k".to_vec(),
            ..Default::default()
        }
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn answers_decode() {
        let resp = RpbGetResp {
            vclock: Some(b"vc".to_vec()),
            ..Default::default()
        };
        let addr = fake_server(Some(frame(codes::GET_RESP, &resp))).await;
        let mut c = PbClient::connect(&addr, SECOND).await.unwrap();
        assert_eq!(c.get(&get_req()).await.unwrap(), resp);
        assert_eq!(c.get(&get_req()).await.unwrap(), resp);
    }

    #[tokio::test]
    async fn error_resp_is_a_server_error_and_keeps_the_connection() {
        let err = RpbErrorResp {
            errmsg: b"n_val violation".to_vec(),
            errcode: 0,
        };
        let addr = fake_server(Some(frame(codes::ERROR_RESP, &err))).await;
        let mut c = PbClient::connect(&addr, SECOND).await.unwrap();
        for _ in 0..2 {
            let e = c.get(&get_req()).await.unwrap_err();
            assert!(
                matches!(&e, PbClientError::Server { message, .. } if message == "n_val violation")
            );
            assert!(!e.needs_reconnect());
        }
    }

    #[tokio::test]
    async fn silence_is_a_timeout_and_poisons_the_connection() {
        let addr = fake_server(None).await;
        let mut c = PbClient::connect(&addr, Duration::from_millis(50))
            .await
            .unwrap();
        let e = c.ping().await.unwrap_err();
        assert_eq!(e.kind(), "timeout");
        assert!(matches!(c.ping().await, Err(PbClientError::Unusable)));
    }

    #[tokio::test]
    async fn eof_is_closed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 16];
            let _ = s.read(&mut buf).await;
        });
        let mut c = PbClient::connect(&addr, SECOND).await.unwrap();
        assert!(matches!(c.ping().await, Err(PbClientError::Closed)));
    }

    #[tokio::test]
    async fn wrong_code_is_refused() {
        let mut pong = Vec::new();
        frame::encode_empty(codes::PING_RESP, &mut pong);
        let addr = fake_server(Some(pong)).await;
        let mut c = PbClient::connect(&addr, SECOND).await.unwrap();
        let e = c.get(&get_req()).await.unwrap_err();
        assert!(matches!(
            e,
            PbClientError::UnexpectedCode {
                expected: codes::GET_RESP,
                got: codes::PING_RESP
            }
        ));
    }

    #[tokio::test]
    async fn mapred_reads_frames_up_to_done() {
        let phase = |done| RpbMapRedResp {
            phase: Some(0),
            response: Some(b"[1]".to_vec()),
            done,
        };
        let mut answer = frame(codes::MAP_RED_RESP, &phase(None));
        answer.extend(frame(codes::MAP_RED_RESP, &phase(Some(true))));
        let addr = fake_server(Some(answer)).await;
        let mut c = PbClient::connect(&addr, SECOND).await.unwrap();
        let req = RpbMapRedReq {
            request: b"{}".to_vec(),
            content_type: b"application/json".to_vec(),
        };
        let got = c.mapred(&req).await.unwrap();
        assert_eq!(got, vec![phase(None), phase(Some(true))]);
    }

    #[tokio::test]
    async fn unstreamed_index_query_is_one_frame() {
        let resp = RpbIndexResp {
            keys: vec![b"k1".to_vec(), b"k2".to_vec()],
            ..Default::default()
        };
        let addr = fake_server(Some(frame(codes::INDEX_RESP, &resp))).await;
        let mut c = PbClient::connect(&addr, SECOND).await.unwrap();
        let req = RpbIndexReq {
            bucket: b"b".to_vec(),
            index: b"f_int".to_vec(),
            key: Some(b"1".to_vec()),
            ..Default::default()
        };
        assert_eq!(c.index(&req).await.unwrap(), vec![resp.clone()]);
        assert_eq!(c.index(&req).await.unwrap(), vec![resp]);
    }

    #[tokio::test]
    async fn multi_get_answers_decode_in_order() {
        use eddy_wire::proto::eddy::{EddyKeyResult, eddy_key_result::Status};
        let result = |key: &[u8], status: Status| EddyKeyResult {
            key: key.to_vec(),
            status: status as i32,
            ..Default::default()
        };
        let resp = EddyMultiGetResp {
            results: vec![result(b"a", Status::Ok), result(b"b", Status::NotFound)],
        };
        let addr = fake_server(Some(frame(codes::MULTI_GET_RESP, &resp))).await;
        let mut c = PbClient::connect(&addr, SECOND).await.unwrap();
        let req = EddyMultiGetReq {
            bucket: b"b".to_vec(),
            keys: vec![b"a".to_vec(), b"b".to_vec()],
            ..Default::default()
        };
        let got = c.multi_get(&req).await.unwrap();
        let statuses: Vec<_> = got
            .results
            .into_iter()
            .map(|r| crate::multi::KeyResult::from_pb(r).status)
            .collect();
        use crate::multi::KeyStatus;
        assert_eq!(statuses, [KeyStatus::Ok, KeyStatus::NotFound]);
    }

    #[tokio::test]
    async fn unknown_code_refusal_keeps_the_connection() {
        let err = RpbErrorResp {
            errmsg: b"Unknown message code: 25".to_vec(),
            errcode: 0,
        };
        let addr = fake_server(Some(frame(codes::ERROR_RESP, &err))).await;
        let mut c = PbClient::connect(&addr, SECOND).await.unwrap();
        let e = c.index(&RpbIndexReq::default()).await.unwrap_err();
        assert!(e.to_string().contains("Unknown message code: 25"), "{e}");
        assert!(!e.needs_reconnect());
    }

    #[tokio::test]
    async fn refused_connection_names_the_address() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let e = PbClient::connect(&addr, SECOND).await.err().unwrap();
        assert_eq!(e.kind(), "connect");
        assert!(e.to_string().contains(&addr), "{e}");
    }
}
