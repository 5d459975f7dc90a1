//! What can go wrong with a MapReduce job, and how each failure reads.
//!
//! A malformed job is a [`MapRedError::BadJob`] (HTTP 400, `RpbErrorResp`);
//! a failure while a phase runs names the phase, the input it was given
//! and what the function said, in the JSON shape Riak reports
//! (`{"phase":N,"error":...,"input":...,"type":...,"stack":...}`).

use eddy_model::KvError;
use serde_json::{Value, json};

#[derive(Debug, thiserror::Error)]
pub enum MapRedError {
    /// The job itself is malformed: its JSON, inputs or phases.
    #[error("{0}")]
    BadJob(String),
    /// A phase failed on one of its inputs.
    #[error("{}", phase_json(*phase, kind, message, input))]
    Phase {
        phase: usize,
        kind: &'static str,
        message: String,
        input: Value,
    },
    /// The job ran past its timeout.
    #[error("timeout")]
    Timeout,
    /// The job's worker ended without an answer (it panicked): the
    /// server's fault, not the job's.
    #[error("the job's worker failed: {0}")]
    Worker(String),
    /// Reading inputs or objects failed in the kv layer.
    #[error(transparent)]
    Kv(#[from] KvError),
}

impl MapRedError {
    pub(crate) fn bad(msg: impl Into<String>) -> Self {
        MapRedError::BadJob(msg.into())
    }

    pub(crate) fn phase(
        phase: usize,
        kind: &'static str,
        message: impl Into<String>,
        input: Value,
    ) -> Self {
        MapRedError::Phase {
            phase,
            kind,
            message: message.into(),
            input,
        }
    }
}

/// Riak's report of a failed phase, as JSON text.
fn phase_json(phase: usize, kind: &str, message: &str, input: &Value) -> String {
    json!({
        "phase": phase,
        "error": message,
        "input": input.to_string(),
        "type": kind,
        "stack": Value::Null,
    })
    .to_string()
}
