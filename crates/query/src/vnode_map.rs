//! The map runner a node's vnodes call (design note 017): map phase 0 of
//! a job over a bucket or key filter runs at the vnodes holding the data,
//! and each vnode hands its live objects here in batches.
//!
//! The phase arrives as the JSON text the executor wrote
//! (`{"phase": {"map": spec}, "timeout_ms": N}`, the function resolved)
//! and is read with the job's own phase parser; it runs as the executor
//! runs map phases (Erlang built-ins natively, JavaScript on the pool).
//! A failure travels back as text, Riak's phase report or `timeout`,
//! which [`failure`] turns into the error the job reports.

use eddy_vnode::mapphase::{MapInput, MapRunner};
use serde_json::Value;

use crate::error::MapRedError;
use crate::exec::Executor;
use crate::job::BKey;

/// Runs map phases for a node's vnodes with an executor's JavaScript pool.
#[derive(Debug)]
pub struct Runner {
    executor: Executor,
}

impl Runner {
    pub fn new(executor: Executor) -> Runner {
        Runner { executor }
    }
}

impl MapRunner for Runner {
    fn run(&self, phase: &[u8], inputs: Vec<MapInput>) -> Result<Vec<u8>, String> {
        let phase: Value =
            serde_json::from_slice(phase).map_err(|e| format!("the map phase is not JSON: {e}"))?;
        let (keys, objects): (Vec<BKey>, Vec<_>) = inputs
            .into_iter()
            .map(|i| {
                let key = BKey {
                    bucket: i.bucket,
                    key: i.key,
                    keydata: Value::Null,
                };
                (key, Some(i.object))
            })
            .unzip();
        let out = self
            .executor
            .map_at_vnode(&phase, &keys, &objects)
            .map_err(|e| e.to_string())?;
        serde_json::to_vec(&out).map_err(|e| e.to_string())
    }
}

/// The job's error for a runner's failure text: Riak's phase report as
/// phase 0's failure, `timeout` as the job's timeout, anything else as
/// phase 0's failure with that text.
pub fn failure(text: &str) -> MapRedError {
    if text == "timeout" {
        return MapRedError::Timeout;
    }
    let report: Option<Value> = serde_json::from_str(text).ok();
    let Some(report) = report.filter(|r| r.get("phase").is_some() && r.get("error").is_some())
    else {
        return MapRedError::phase(0, "map", text, Value::Null);
    };
    let kind = match report["type"].as_str() {
        Some("erlang") => "erlang",
        Some("javascript") => "javascript",
        _ => "map",
    };
    let input = report["input"]
        .as_str()
        .and_then(|i| serde_json::from_str(i).ok())
        .unwrap_or(Value::Null);
    let message = report["error"].as_str().unwrap_or(text).to_owned();
    MapRedError::phase(0, kind, message, input)
}
