//! Drivers: one connection to one server, speaking PB or HTTP, or a
//! handle on a storage engine in this process.
//!
//! [`Conn`] offers the operations a workload needs in protocol-neutral
//! terms; [`pb`] and [`http`] translate them into Riak's wire requests,
//! [`storage`] into calls of the engine's `Backend` contract.
//! Every call is bounded by the run's request timeout, and every failure
//! comes back as a [`Failure`] that says whether the connection must be
//! replaced. Nothing here retries: the worker decides.

mod failure;
pub mod http;
pub mod pb;
pub mod storage;

use std::sync::Arc;
use std::time::Duration;

use eddy_client::multi::{KeyResult, KeyStatus};
pub use failure::Failure;

use crate::config::{BucketProps, Protocol, RequestOptions};

/// The bucket a run works on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `None`: the `default` type.
    pub bucket_type: Option<String>,
    pub bucket: String,
}

impl Target {
    /// The type's name, `default` when none was given.
    pub fn type_name(&self) -> &str {
        self.bucket_type.as_deref().unwrap_or("default")
    }
}

/// What every connection of a run shares.
#[derive(Clone, Debug)]
pub struct DriverOptions {
    pub protocol: Protocol,
    pub target: Target,
    pub request: RequestOptions,
    pub content_type: String,
    pub timeout: Duration,
    /// The engine of a storage run ([`Protocol::Storage`]).
    pub storage: Option<storage::StorageEngine>,
}

/// What a get found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fetched {
    pub found: bool,
    /// The causal context to write back with (`X-Riak-Vclock`, `vclock`).
    pub vclock: Option<Vec<u8>>,
}

/// One secondary-index entry of a put.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry<'a> {
    pub field: &'a str,
    pub term: String,
}

/// A secondary-index query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexLookup {
    Eq(String),
    Range(String, String),
}

/// A value to store.
#[derive(Clone, Copy, Debug)]
pub struct PutBody<'a> {
    pub value: &'a [u8],
    /// Its index entries (none without `[index]`).
    pub index: &'a [IndexEntry<'a>],
    pub vclock: Option<&'a [u8]>,
}

/// A data type update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DtChange {
    /// Add this to a counter.
    Increment(i64),
    /// Add this member to a set.
    Add(Vec<u8>),
}

/// One object of a multi-put.
#[derive(Clone, Debug)]
pub struct MultiObject<'a> {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub index: Vec<IndexEntry<'a>>,
}

/// Reads a multi-key answer of `expected` results: the number of keys
/// not found, or the first key's error as the failure `key_error` (a
/// request counts as failed when any of its keys did).
fn tally(results: impl Iterator<Item = KeyResult>, expected: usize) -> Result<usize, Failure> {
    let mut count = 0;
    let mut missing = 0;
    for r in results {
        count += 1;
        match r.status {
            KeyStatus::Ok => {}
            KeyStatus::NotFound => missing += 1,
            KeyStatus::Error => {
                let message = r.error.unwrap_or_default();
                return Err(Failure::server("key_error", &message));
            }
        }
    }
    match count == expected {
        true => Ok(missing),
        false => Err(Failure::new("protocol", false)),
    }
}

/// One open connection.
///
/// The PB and HTTP requests' futures are boxed: they are large (a reqwest
/// request's state is kilobytes), and every request of every driver would
/// otherwise build and move a future that size, a cost the storage driver's
/// sub-microsecond requests would show. A network request pays one
/// allocation instead.
pub enum Conn {
    Pb(pb::PbConn),
    Http(http::HttpConn),
    Storage(storage::StorageConn),
}

impl Conn {
    /// Opens a connection to `endpoint`.
    pub async fn connect(options: &Arc<DriverOptions>, endpoint: &str) -> Result<Conn, Failure> {
        match options.protocol {
            Protocol::Pb => pb::PbConn::connect(options.clone(), endpoint)
                .await
                .map(Conn::Pb),
            Protocol::Http => http::HttpConn::connect(options.clone(), endpoint).map(Conn::Http),
            Protocol::Storage => storage::StorageConn::connect(options).map(Conn::Storage),
        }
    }

    /// Fetches `key`.
    pub async fn get(&mut self, key: &[u8]) -> Result<Fetched, Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.get(key)).await,
            Conn::Http(c) => Box::pin(c.get(key)).await,
            Conn::Storage(c) => c.get(key).await,
        }
    }

    /// Stores `body` under `key`.
    pub async fn put(&mut self, key: &[u8], body: PutBody<'_>) -> Result<(), Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.put(key, body)).await,
            Conn::Http(c) => Box::pin(c.put(key, body)).await,
            Conn::Storage(c) => c.put(key, body).await,
        }
    }

    /// Deletes `key` (a missing key is not a failure).
    pub async fn delete(&mut self, key: &[u8]) -> Result<(), Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.delete(key)).await,
            Conn::Http(c) => Box::pin(c.delete(key)).await,
            Conn::Storage(c) => c.delete(key).await,
        }
    }

    /// Runs an index query on `field`; returns the number of keys.
    pub async fn index_query(&mut self, field: &str, q: &IndexLookup) -> Result<usize, Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.index_query(field, q)).await,
            Conn::Http(c) => Box::pin(c.index_query(field, q)).await,
            Conn::Storage(c) => c.index_query(field, q).await,
        }
    }

    /// Fetches `keys` with one of Eddy's multi-get requests; returns how
    /// many were not found.
    pub async fn multi_get(&mut self, keys: &[Vec<u8>]) -> Result<usize, Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.multi_get(keys)).await,
            Conn::Http(c) => Box::pin(c.multi_get(keys)).await,
            Conn::Storage(_) => Err(storage::unsupported("multi_get")),
        }
    }

    /// Stores `objects` with one of Eddy's multi-put requests.
    pub async fn multi_put(&mut self, objects: &[MultiObject<'_>]) -> Result<(), Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.multi_put(objects)).await,
            Conn::Http(c) => Box::pin(c.multi_put(objects)).await,
            Conn::Storage(_) => Err(storage::unsupported("multi_put")),
        }
    }

    /// Applies a data type update to `key` (without `return_body`).
    pub async fn dt_update(&mut self, key: &[u8], change: &DtChange) -> Result<(), Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.dt_update(key, change)).await,
            Conn::Http(c) => Box::pin(c.dt_update(key, change)).await,
            Conn::Storage(_) => Err(storage::unsupported("a data type update")),
        }
    }

    /// Runs a MapReduce job given as JSON.
    pub async fn mapreduce(&mut self, job: &str) -> Result<(), Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.mapreduce(job)).await,
            Conn::Http(c) => Box::pin(c.mapreduce(job)).await,
            Conn::Storage(_) => Err(storage::unsupported("mapreduce")),
        }
    }

    /// Sets the run's bucket's properties.
    pub async fn set_bucket_props(&mut self, props: &BucketProps) -> Result<(), Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.set_bucket_props(props)).await,
            Conn::Http(c) => Box::pin(c.set_bucket_props(props)).await,
            Conn::Storage(_) => Err(storage::unsupported("bucket_props")),
        }
    }

    /// Checks that the server answers; returns what it says it is.
    pub async fn ping(&mut self) -> Result<String, Failure> {
        match self {
            Conn::Pb(c) => Box::pin(c.server_info()).await,
            Conn::Http(c) => Box::pin(c.server_info()).await,
            Conn::Storage(c) => Ok(c.server_info()),
        }
    }
}
