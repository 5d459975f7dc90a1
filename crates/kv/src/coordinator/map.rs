//! A map phase run at the vnodes (design note 017): a coverage plan, each
//! planned vnode folding the live objects of its ranges of the bucket
//! (those a key filter matches, if any) through its node's map runner
//! ([`crate::vnode::map_fold`]); the outputs collected.
//!
//! Every key range is answered by one vnode of the plan, so each live key
//! is mapped once. Runs on a blocking thread.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::error::KvError;
use crate::keyfilter::KeyFilter;
use crate::mapphase::MAP_PHASE_BYTES_MAX;
use crate::node::Node;
use crate::request::BucketRef;
use crate::vnode::msg::{FoldKind, MapFold};

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
        if phase.len() > MAP_PHASE_BYTES_MAX {
            return Err(KvError::TooLarge {
                what: "map phase",
                size: phase.len(),
                max: MAP_PHASE_BYTES_MAX,
            });
        }
        let props = self.props(bucket)?;
        let deadline = Instant::now() + timeout;
        let kind = FoldKind::Map(MapFold {
            bucket: bucket.storage_bucket_at(props.generation),
            filter: filter.map(|f| Arc::new(f.clone())),
            phase: Bytes::copy_from_slice(phase),
        });
        self.coverage_collect(props.n_val, kind, deadline)
    }
}
