//! The storage driver: a "connection" that is a storage engine in this
//! process, called through the [`Backend`] contract (`eddy bench
//! storage`, design note 023). The caller opens the engine and hands it to
//! the run ([`crate::RunOptions::storage`]); workers then measure the
//! engine alone, with the runner's keys, values, workers and collector.
//!
//! Mapping: the run's bucket is the storage bucket; a get reads, a put
//! writes the value with its index entries (as adds; nothing is removed),
//! an update reads then writes, a delete deletes; `index_query` scans the
//! queried field (`eq` or an inclusive range) and counts the entries. A
//! put syncs (`WriteOptions::sync`) when the request asks `dw` other than
//! 0: Riak's durable write is what the engine's sync means. No other
//! operation has an engine request; validation refuses them up front.
//!
//! Scheduling: an engine call blocks the worker's thread for its length
//! (microseconds; a synced put, an fsync shared with the other writers).
//! The run has as many runtime threads as workers, and every call first
//! spends one unit of tokio's cooperative budget, so a worker yields to
//! the runtime every so many calls and the collector's timers still run.

use std::fmt;
use std::sync::Arc;

use eddy_storage::{Backend, FoldControl, IndexQuery, IndexSpec, StorageError, WriteOptions};
use eddy_wire::Quorum;

use super::{DriverOptions, Failure, Fetched, IndexLookup, PutBody};

/// An opened engine, shared by the workers of a run.
#[derive(Clone)]
pub struct StorageEngine(pub Arc<dyn Backend>);

impl fmt::Debug for StorageEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StorageEngine({})", self.0.name())
    }
}

/// One worker's handle on the engine.
pub struct StorageConn {
    engine: Arc<dyn Backend>,
    bucket: Vec<u8>,
    write: WriteOptions,
}

impl StorageConn {
    /// A handle on the engine `options` carry.
    pub fn connect(options: &DriverOptions) -> Result<StorageConn, Failure> {
        let Some(engine) = &options.storage else {
            return Err(Failure::server(
                "protocol",
                "the storage driver needs an engine handed to the run",
            ));
        };
        let sync = !matches!(options.request.dw, None | Some(Quorum::Count(0)));
        Ok(StorageConn {
            engine: engine.0.clone(),
            bucket: options.target.bucket.as_bytes().to_vec(),
            write: WriteOptions { sync },
        })
    }

    /// Reads `key`.
    pub async fn get(&mut self, key: &[u8]) -> Result<Fetched, Failure> {
        tokio::task::consume_budget().await;
        let value = self.engine.get(&self.bucket, key).map_err(failure)?;
        Ok(Fetched {
            found: value.is_some(),
            vclock: None,
        })
    }

    /// Writes `body` under `key`, with its index entries added.
    pub async fn put(&mut self, key: &[u8], body: PutBody<'_>) -> Result<(), Failure> {
        tokio::task::consume_budget().await;
        let specs: Vec<IndexSpec> = body
            .index
            .iter()
            .map(|e| IndexSpec::add(e.field.as_bytes(), e.term.as_bytes()))
            .collect();
        self.engine
            .put(&self.bucket, key, body.value, &specs, self.write)
            .map_err(failure)
    }

    /// Deletes `key`.
    pub async fn delete(&mut self, key: &[u8]) -> Result<(), Failure> {
        tokio::task::consume_budget().await;
        self.engine
            .delete(&self.bucket, key, self.write)
            .map_err(failure)
    }

    /// Scans `field` for `q`; returns the entries seen.
    pub async fn index_query(&mut self, field: &str, q: &IndexLookup) -> Result<usize, Failure> {
        tokio::task::consume_budget().await;
        let (b, f) = (&self.bucket[..], field.as_bytes());
        let query = match q {
            IndexLookup::Eq(term) => IndexQuery::eq(b, f, term.as_bytes()),
            IndexLookup::Range(lo, hi) => IndexQuery::range(b, f, lo.as_bytes(), hi.as_bytes()),
        };
        let mut entries = 0;
        self.engine
            .index_range(&query, &mut |_, _| {
                entries += 1;
                FoldControl::Continue
            })
            .map_err(failure)?;
        Ok(entries)
    }

    /// What the engine is.
    pub fn server_info(&self) -> String {
        format!("storage engine {}", self.engine.name())
    }
}

/// An operation the engine has no request for (validation refuses them
/// before a run).
pub fn unsupported(op: &str) -> Failure {
    Failure::server("unsupported", &format!("{op} is not a storage request"))
}

fn failure(e: StorageError) -> Failure {
    Failure::server("storage", &e.to_string())
}
