//! The JavaScript sandbox: a bounded pool of threads, each owning one
//! QuickJS runtime with Riak's built-ins loaded ([`builtins.js`]), that
//! runs map and reduce calls sent to it in batches.
//!
//! Invariants:
//! - JavaScript runs only on the pool's own threads: never on the async
//!   runtime's threads, and never while a key lock is held (callers hand
//!   over plain JSON text).
//! - Every call has a time limit (the smaller of the pool's per-call limit
//!   and the job's deadline), enforced by QuickJS's interrupt handler, and
//!   every runtime a memory limit. A call that hits either fails with a
//!   message saying which; its runtime is then rebuilt, so nothing a job
//!   left behind reaches the next one.
//! - The sandbox has no I/O: a bare ECMAScript context, no modules.
//! - A batch's answer is one list of outputs per call, or the first
//!   failure with the index of the call that failed.
//!
//! [`builtins.js`]: ./builtins.js

mod worker;

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

pub use worker::BUILTINS;

/// The pool's bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsLimits {
    /// Threads, each with one runtime.
    pub threads: usize,
    /// Heap limit of each runtime.
    pub memory_bytes: usize,
    /// The longest one call may run.
    pub call_timeout: Duration,
    /// Batches waiting for a thread; a submit past this blocks.
    pub queue: usize,
}

impl Default for JsLimits {
    fn default() -> Self {
        JsLimits {
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            memory_bytes: 64 << 20,
            call_timeout: Duration::from_secs(5),
            queue: 64,
        }
    }
}

/// One call of a JavaScript function, its arguments as JSON text.
#[derive(Clone, Debug)]
pub enum JsCall {
    /// `f(value, keyData, arg)`.
    Map { value: String, keydata: String },
    /// `f(values, arg)`.
    Reduce { values: String },
}

/// Calls of one function with one `arg`.
#[derive(Clone, Debug)]
pub struct JsBatch {
    /// An expression whose value is the function: source text such as
    /// `function (v) { ... }`, or a name such as `Riak.mapValuesJson`.
    pub function: String,
    pub arg: String,
    pub calls: Vec<JsCall>,
    pub deadline: Instant,
}

/// Why a batch failed: the call's index and what went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsFailure {
    pub call: usize,
    pub message: String,
}

type Reply = Result<Vec<Vec<Value>>, JsFailure>;

struct Task {
    batch: JsBatch,
    reply: SyncSender<Reply>,
}

/// The pool. Cloning shares it; its threads end when the last clone goes.
#[derive(Clone, Debug)]
pub struct JsPool {
    tx: SyncSender<Task>,
    limits: JsLimits,
}

impl JsPool {
    /// Starts `limits.threads` threads (at least one).
    pub fn start(limits: JsLimits) -> std::io::Result<JsPool> {
        let (tx, rx) = sync_channel::<Task>(limits.queue.max(1));
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..limits.threads.max(1) {
            let rx = Arc::clone(&rx);
            std::thread::Builder::new()
                .name(format!("eddy-js-{i}"))
                .spawn(move || serve(rx, limits))?;
        }
        Ok(JsPool { tx, limits })
    }

    pub fn limits(&self) -> JsLimits {
        self.limits
    }

    /// Runs a batch on a pool thread and waits for its answer (blocking:
    /// call from a blocking thread).
    pub fn run(&self, batch: JsBatch) -> Reply {
        let (reply, answer) = sync_channel(1);
        let lost = || JsFailure {
            call: 0,
            message: "the JavaScript pool has stopped".into(),
        };
        self.tx.send(Task { batch, reply }).map_err(|_| lost())?;
        answer.recv().map_err(|_| lost())?
    }
}

fn serve(rx: Arc<Mutex<Receiver<Task>>>, limits: JsLimits) {
    let mut worker = None;
    loop {
        let task = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(task) = task else { return };
        let w = match worker.take() {
            Some(w) => Ok(w),
            None => worker::Worker::new(limits),
        };
        let reply = match w {
            Ok(mut w) => {
                let (reply, healthy) = w.run(&task.batch);
                if healthy {
                    worker = Some(w);
                }
                reply
            }
            Err(message) => Err(JsFailure { call: 0, message }),
        };
        let _ = task.reply.send(reply);
    }
}

#[cfg(test)]
mod tests;
