//! Filtered key listing (the keys a MapReduce job over a bucket with key
//! filters starts from): a coverage plan, each planned vnode running the
//! filter on the keys of its ranges as it folds them
//! ([`eddy_vnode::fold`]), the keys merged.
//!
//! Every key range is answered by one vnode of the plan, so no key comes
//! twice; the keys are still sorted and deduplicated, so the answer does
//! not depend on which replicas answered. Runs on a blocking thread.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::keyfilter::KeyFilter;
use eddy_model::request::BucketRef;
use eddy_vnode::msg::FoldKind;

/// Most keys a filtered listing answers with; a filter matching more is
/// refused (the listing is held in memory).
pub const FILTERED_KEYS_MAX: usize = 1_000_000;

impl Node {
    /// The live keys of `bucket` that `filter` matches, sorted, each once;
    /// tombstones and expired objects are never listed. Fails with
    /// `Timeout` after `timeout`, `InsufficientVnodes` when a key range
    /// has no vnode up, `BadQuery` above [`FILTERED_KEYS_MAX`] keys.
    /// Blocking: run it on a blocking thread.
    pub fn list_keys_filtered_blocking(
        &self,
        bucket: &BucketRef,
        filter: &KeyFilter,
        timeout: Duration,
    ) -> Result<Vec<Vec<u8>>, KvError> {
        let props = self.props(bucket)?;
        let deadline = Instant::now() + timeout;
        let kind = FoldKind::FilteredKeys {
            bucket: bucket.storage_bucket_at(props.generation),
            filter: Arc::new(filter.clone()),
        };
        let mut keys = self.coverage_collect(props.n_val, kind, deadline)?;
        keys.sort_unstable();
        keys.dedup();
        if keys.len() > FILTERED_KEYS_MAX {
            return Err(KvError::BadQuery(format!(
                "the key filter matches more than {FILTERED_KEYS_MAX} keys"
            )));
        }
        Ok(keys)
    }
}
