//! 2i queries (Riak's index FSM): a coverage plan, each planned vnode's
//! scan ([`eddy_vnode::index_fold`]), the entries merged in (term, key)
//! order, and the page cut at `max_results` with its continuation.
//!
//! Every key range is answered by one vnode of the plan, so no entry comes
//! twice. Runs on a blocking thread.

use std::time::Duration;

use tokio::time::Instant;

use crate::metrics::QueryMetrics;
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::index::query::{ScanField, UNPAGED_RESULTS_MAX};
use eddy_model::index::{IndexPage, IndexRequest};
use eddy_model::request::BucketRef;
use eddy_vnode::index_fold::split_entry;
use eddy_vnode::msg::FoldKind;

/// How long a query may take when it names no timeout.
pub const INDEX_TIMEOUT_DEFAULT: Duration = Duration::from_secs(60);
/// The limit a timeout of zero (Riak's "infinity") stands for.
const INDEX_TIMEOUT_NONE: Duration = Duration::from_secs(24 * 3600);

impl Node {
    /// Answers a 2i query on `bucket`, counted in the node's figures
    /// whoever asks. Blocking: run it on a blocking thread.
    pub fn index_query_blocking(
        &self,
        bucket: &BucketRef,
        req: &IndexRequest,
    ) -> Result<IndexPage, KvError> {
        let q = &self.metrics.queries;
        let (count, running, errors) = (
            &q.index_queries,
            Some(&q.index_queries_running),
            &q.index_query_errors,
        );
        QueryMetrics::track(count, running, errors, || self.index_query(bucket, req))
    }

    fn index_query(&self, bucket: &BucketRef, req: &IndexRequest) -> Result<IndexPage, KvError> {
        let props = self.props(bucket)?;
        let n_val = props.n_val;
        let query = req.prepare(bucket, props.generation)?;
        let timeout = match query.timeout {
            None => INDEX_TIMEOUT_DEFAULT,
            Some(t) if t.is_zero() => INDEX_TIMEOUT_NONE,
            Some(t) => t,
        };
        let deadline = Instant::now() + timeout;
        let kind = FoldKind::Index(query.scan.clone());
        let items = self.coverage_collect(n_val, kind, deadline)?;
        let keys_are_terms = !matches!(query.scan.field, ScanField::Term(_));
        // Borrowed from the vnodes' items: only the page's entries are
        // copied (each vnode sent up to a page; most are not kept).
        let mut entries = items
            .iter()
            .map(|item| {
                let (term, key) = split_entry(item)
                    .ok_or_else(|| KvError::BadQuery("a vnode sent a malformed entry".into()))?;
                Ok(match keys_are_terms {
                    true => (key, key),
                    false => (term, key),
                })
            })
            .collect::<Result<Vec<_>, KvError>>()?;
        if query.scan.max.is_none() && entries.len() > UNPAGED_RESULTS_MAX {
            return Err(KvError::BadQuery(format!(
                "the query matches more than {UNPAGED_RESULTS_MAX} entries: \
                 ask for pages with max_results"
            )));
        }
        // The page's entries, smallest first: the rest need not be sorted.
        if let Some(max) = query.scan.max.map(|m| m as usize)
            && entries.len() > max
            && max > 0
        {
            entries.select_nth_unstable(max - 1);
            entries.truncate(max);
        }
        entries.sort_unstable();
        let owned = entries
            .into_iter()
            .map(|(t, k)| (t.to_vec(), k.to_vec()))
            .collect();
        Ok(query.page(owned))
    }
}
