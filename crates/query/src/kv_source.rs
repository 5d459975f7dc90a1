//! A job's [`Source`] over a kv [`Node`]: bucket inputs are a key
//! listing, index inputs a 2i query (with terms when asked), key-filter inputs a filtered listing
//! evaluated at the vnodes; map phase 0 over a bucket, key filter or
//! index input runs at the vnodes ([`Node::map_coverage_blocking`],
//! [`Node::map_index_coverage_blocking`]); objects are read by the node's get
//! coordinator with the job's `r` (one replica by default, as Riak),
//! [`FETCHES_IN_FLIGHT`] at a time.
//!
//! The listing and index calls block; `fetch` drives the async gets on
//! the node's runtime from the caller's blocking thread.

use std::sync::Arc;
use std::time::Instant;

use eddy_kv::Node;
use eddy_model::Quorum;
use eddy_model::index::IndexRequest;
use eddy_model::keyfilter::KeyFilter;
use eddy_model::{BucketRef, GetOptions, GetRequest, GetResponse, KvError};
use eddy_object::RiakObject;
use serde_json::Value;
use tokio::runtime::Handle;
use tokio::task::JoinSet;

use crate::error::MapRedError;
use crate::exec::{INPUT_KEYS_MAX, IndexEntry, Source, VnodeInputs};
use crate::job::{BKey, IndexInput};

/// Gets running at once for one job.
pub const FETCHES_IN_FLIGHT: usize = 64;

pub struct KvSource {
    pub node: Arc<Node>,
    pub runtime: Handle,
}

impl Source for KvSource {
    fn keys(&self, bucket: &BucketRef) -> Result<Vec<Vec<u8>>, MapRedError> {
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        std::thread::scope(|s| {
            let lister = s.spawn(|| self.node.list_keys_blocking(bucket, &tx).map(|_| drop(tx)));
            let mut keys = Vec::new();
            while let Some(chunk) = rx.blocking_recv() {
                keys.extend(chunk);
                if keys.len() > INPUT_KEYS_MAX {
                    break;
                }
            }
            drop(rx);
            match lister.join() {
                Ok(Ok(())) => Ok(keys),
                Ok(Err(e)) => Err(e.into()),
                Err(_) => Err(MapRedError::bad("listing the bucket's keys failed")),
            }
        })
    }

    fn filtered_keys(
        &self,
        bucket: &BucketRef,
        filter: &Value,
        deadline: Instant,
    ) -> Result<Vec<Vec<u8>>, MapRedError> {
        let filter = KeyFilter::parse(filter).map_err(KvError::from)?;
        let timeout = deadline.saturating_duration_since(Instant::now());
        Ok(self
            .node
            .list_keys_filtered_blocking(bucket, &filter, timeout)?)
    }

    fn index_entries(&self, input: &IndexInput) -> Result<Vec<IndexEntry>, MapRedError> {
        let page = self
            .node
            .index_query_blocking(&input.bucket, &index_request(input))?;
        Ok(page.results)
    }

    fn map_at_vnodes(
        &self,
        inputs: VnodeInputs<'_>,
        phase: &[u8],
        deadline: Instant,
    ) -> Result<Vec<Value>, MapRedError> {
        let timeout = deadline.saturating_duration_since(Instant::now());
        let lists = match inputs {
            VnodeInputs::Bucket { bucket, filter } => {
                let filter = match filter {
                    Some(f) => Some(KeyFilter::parse(f).map_err(KvError::from)?),
                    None => None,
                };
                self.node
                    .map_coverage_blocking(bucket, filter.as_ref(), phase, timeout)
            }
            VnodeInputs::Index(input) => {
                let req = index_request(input);
                self.node
                    .map_index_coverage_blocking(&input.bucket, &req, phase, timeout)
            }
        }
        .map_err(map_failure)?;
        let mut out = Vec::new();
        for list in lists {
            let values: Vec<Value> = serde_json::from_slice(&list)
                .map_err(|e| MapRedError::phase(0, "map", e.to_string(), Value::Null))?;
            out.extend(values);
        }
        Ok(out)
    }

    fn fetch(
        &self,
        inputs: &[BKey],
        r: u32,
        deadline: Instant,
    ) -> Result<Vec<Option<RiakObject>>, MapRedError> {
        let timeout_ms = deadline
            .saturating_duration_since(Instant::now())
            .as_millis() as u64;
        let options = GetOptions {
            r: Some(Quorum::Count(r)),
            timeout_ms: Some(timeout_ms.max(1)),
            ..GetOptions::default()
        };
        self.runtime
            .block_on(fetch_all(&self.node, inputs, options))
    }
}

/// The job's error for a failed map at the vnodes: a runner's failure
/// (a `BadQuery` here, an `other` error's text from another node) as phase
/// 0's; the kv layer's own failures (timeout, too few vnodes) as they are.
fn map_failure(e: KvError) -> MapRedError {
    match e {
        KvError::BadQuery(text) => crate::vnode_map::failure(&text),
        KvError::Storage(s) => {
            let text = s.to_string();
            let prefix = format!("{} engine error: ", eddy_model::error::OTHER_ENGINE);
            match text.strip_prefix(&prefix) {
                Some(sent) => crate::vnode_map::failure(sent),
                None => KvError::Storage(s).into(),
            }
        }
        e => e.into(),
    }
}

async fn fetch_all(
    node: &Arc<Node>,
    inputs: &[BKey],
    options: GetOptions,
) -> Result<Vec<Option<RiakObject>>, MapRedError> {
    let mut out: Vec<Option<RiakObject>> = vec![None; inputs.len()];
    let mut running = JoinSet::new();
    let mut next = 0;
    loop {
        while running.len() < FETCHES_IN_FLIGHT && next < inputs.len() {
            let req = GetRequest {
                bucket: inputs[next].bucket.clone(),
                key: inputs[next].key.clone(),
                options: options.clone(),
            };
            let node = Arc::clone(node);
            let i = next;
            running.spawn(async move { (i, node.get(req).await) });
            next += 1;
        }
        let Some(done) = running.join_next().await else {
            return Ok(out);
        };
        let (i, got) = done.map_err(|_| MapRedError::bad("a read failed"))?;
        out[i] = match got {
            Ok(GetResponse::Found(obj)) => Some(obj),
            Ok(GetResponse::NotFound { .. }) => None,
            Err(e) => return Err(e.into()),
        };
    }
}

/// The 2i query of an index input, every entry in one page. With
/// `return_terms`, an equality query asks as the range of its one term
/// (2i answers terms only for ranges; every entry's term is the queried
/// one either way).
fn index_request(input: &IndexInput) -> IndexRequest {
    let end = match (&input.end, input.return_terms) {
        (None, true) => Some(input.start.clone()),
        (end, _) => end.clone(),
    };
    IndexRequest {
        field: input.field.clone(),
        start: input.start.clone(),
        end,
        return_terms: input.return_terms,
        max_results: None,
        continuation: None,
        term_regex: input.term_regex.clone(),
        timeout: None,
    }
}
