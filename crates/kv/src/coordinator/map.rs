//! A map phase run at the vnodes (design note 017): a coverage plan, each
//! planned vnode folding the live objects of its ranges of the bucket
//! (those a key filter matches, if any), or the objects of a 2i query's
//! entries in its ranges, through its node's map runner
//! ([`eddy_vnode::map_fold`]); the outputs collected.
//!
//! Every key range is answered by one vnode of the plan, so each live key
//! (or each entry) is mapped once. Runs on a blocking thread.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::index::IndexRequest;
use eddy_model::keyfilter::KeyFilter;
use eddy_model::request::BucketRef;
use eddy_vnode::mapphase::MAP_PHASE_BYTES_MAX;
use eddy_vnode::msg::{FoldKind, IndexMapFold, MapFold};

impl Node {
    /// Runs `phase` (JSON text for the nodes' map runners) over the live
    /// objects of `bucket` that `filter` (if any) matches, each once, at
    /// the vnodes holding them; each element of the answer is the JSON
    /// text of a list of outputs. Fails with `Timeout` after `timeout`,
    /// `InsufficientVnodes` when a key range has no vnode up, `BadQuery`
    /// when a vnode's runner failed (or its node has none). Blocking: run
    /// it on a blocking thread.
    pub fn map_coverage_blocking(
        &self,
        bucket: &BucketRef,
        filter: Option<&KeyFilter>,
        phase: &[u8],
        timeout: Duration,
    ) -> Result<Vec<Vec<u8>>, KvError> {
        check_phase(phase)?;
        let props = self.props(bucket)?;
        let deadline = Instant::now() + timeout;
        let kind = FoldKind::Map(MapFold {
            bucket: bucket.storage_bucket_at(props.generation),
            filter: filter.map(|f| Arc::new(f.clone())),
            phase: Bytes::copy_from_slice(phase),
        });
        self.coverage_collect(props.n_val, kind, deadline)
    }

    /// Runs `phase` over the live objects the 2i query `req` names (its
    /// terms, pages and timeout aside), one input per matching entry, at
    /// the vnodes holding them; answers as [`Node::map_coverage_blocking`].
    /// Blocking.
    pub fn map_index_coverage_blocking(
        &self,
        bucket: &BucketRef,
        req: &IndexRequest,
        phase: &[u8],
        timeout: Duration,
    ) -> Result<Vec<Vec<u8>>, KvError> {
        check_phase(phase)?;
        let props = self.props(bucket)?;
        let deadline = Instant::now() + timeout;
        let unpaged = IndexRequest {
            return_terms: false,
            max_results: None,
            continuation: None,
            timeout: None,
            ..req.clone()
        };
        let scan = unpaged.prepare(bucket, props.generation)?.scan;
        let kind = FoldKind::IndexMap(IndexMapFold {
            scan,
            phase: Bytes::copy_from_slice(phase),
        });
        self.coverage_collect(props.n_val, kind, deadline)
    }
}

fn check_phase(phase: &[u8]) -> Result<(), KvError> {
    match phase.len() <= MAP_PHASE_BYTES_MAX {
        true => Ok(()),
        false => Err(KvError::TooLarge {
            what: "map phase",
            size: phase.len(),
            max: MAP_PHASE_BYTES_MAX,
        }),
    }
}
