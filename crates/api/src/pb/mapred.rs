//! `RpbMapRedReq` (23) → `RpbMapRedResp` (24): a MapReduce job as JSON
//! (`content_type` `application/json`; Riak's Erlang term format is not
//! served). Each kept phase's output comes in responses of at most
//! [`RESULTS_PER_RESPONSE`] values, each a JSON list with its phase
//! number, then one response with `done`. A failed job is one
//! `RpbErrorResp` with Riak's JSON report of the failure.

use eddy_query::MapRedError;
use eddy_wire::codes;
use eddy_wire::proto::{RpbMapRedReq, RpbMapRedResp};
use prost::Message;
use serde_json::Value;

use super::error::PbError;
use super::server::{Outbox, Session};

/// Values per streamed response.
pub const RESULTS_PER_RESPONSE: usize = 1000;
const JSON: &[u8] = b"application/json";

pub(crate) async fn handle(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = RpbMapRedReq::decode(body)?;
    if req.content_type != JSON {
        let shown = String::from_utf8_lossy(&req.content_type);
        return Err(PbError::MapRed(format!(
            "Unsupported content type {shown:?}: jobs are application/json"
        )));
    }
    let output = session
        .jobs
        .clone()
        .run(session.node.clone(), req.request)
        .await
        .map_err(|e| PbError::MapRed(error_text(&e)))?;
    for (phase, values) in output.phases {
        for chunk in values.chunks(RESULTS_PER_RESPONSE) {
            let resp = RpbMapRedResp {
                phase: Some(phase as u32),
                response: Some(Value::Array(chunk.to_vec()).to_string().into_bytes()),
                done: None,
            };
            out.push(codes::MAP_RED_RESP, &resp);
            out.flush().await?;
        }
    }
    let done = RpbMapRedResp {
        done: Some(true),
        ..RpbMapRedResp::default()
    };
    out.push(codes::MAP_RED_RESP, &done);
    Ok(())
}

/// The text a client gets for a failed job.
pub fn error_text(e: &MapRedError) -> String {
    match e {
        MapRedError::Kv(kv) => super::error::kv_text(kv),
        MapRedError::Timeout => "{\"error\":\"timeout\"}".into(),
        other => other.to_string(),
    }
}
