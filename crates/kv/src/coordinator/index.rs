//! 2i queries (Riak's index FSM): a coverage plan, each planned vnode's
//! scan ([`eddy_vnode::index_fold`]) pulled in chunks and merged in
//! (term, key) order ([`super::index_merge`]), and the page cut at
//! `max_results` with its continuation.
//!
//! Every key range is answered by one vnode of the plan, so no entry comes
//! twice. Runs on a blocking thread.

use std::time::Duration;

use tokio::time::Instant;

use super::coverage::{Ask, Coverage};
use super::index_merge::{Entry, PageMerge};
use crate::metrics::QueryMetrics;
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::index::query::{IndexScan, PreparedQuery, ScanField, UNPAGED_RESULTS_MAX};
use eddy_model::index::{IndexPage, IndexRequest};
use eddy_model::request::BucketRef;
use eddy_vnode::msg::FoldKind;

/// How long a query may take when it names no timeout.
pub const INDEX_TIMEOUT_DEFAULT: Duration = Duration::from_secs(60);
/// The limit a timeout of zero (Riak's "infinity") stands for.
const INDEX_TIMEOUT_NONE: Duration = Duration::from_secs(24 * 3600);

/// Entries merged per step of a streamed query: what a stream holds in
/// memory at once, whatever its length.
pub const STREAM_STEP: usize = 10_000;

impl Node {
    /// Answers a 2i query on `bucket` as one page, counted in the node's
    /// figures whoever asks. Without `max_results` the answer may hold at
    /// most [`UNPAGED_RESULTS_MAX`] entries. Blocking: run it on a
    /// blocking thread.
    pub fn index_query_blocking(
        &self,
        bucket: &BucketRef,
        req: &IndexRequest,
    ) -> Result<IndexPage, KvError> {
        self.track_query(|| self.index_query(bucket, req))
    }

    /// Answers a 2i query on `bucket` as a stream (Riak's `stream=true`):
    /// the answer comes to `emit` in pages of at most [`STREAM_STEP`]
    /// entries as they are merged, until `max_results` entries (the last
    /// page then carries the continuation) or, without it, every entry:
    /// no limit, memory bounded by a step. Stops early when `emit` returns
    /// false. Each step is a coverage query of its own, from after the
    /// last entry sent. Blocking: run it on a blocking thread.
    pub fn index_stream_blocking(
        &self,
        bucket: &BucketRef,
        req: &IndexRequest,
        emit: impl FnMut(IndexPage) -> bool,
    ) -> Result<(), KvError> {
        self.index_stream_in_steps(bucket, req, STREAM_STEP, emit)
    }

    /// [`Node::index_stream_blocking`] in steps of `step` entries (tests
    /// stream small answers in several steps).
    #[doc(hidden)]
    pub fn index_stream_in_steps(
        &self,
        bucket: &BucketRef,
        req: &IndexRequest,
        step: usize,
        emit: impl FnMut(IndexPage) -> bool,
    ) -> Result<(), KvError> {
        self.track_query(|| self.index_stream(bucket, req, step.max(1), emit))
    }

    fn track_query<T>(&self, run: impl FnOnce() -> Result<T, KvError>) -> Result<T, KvError> {
        let q = &self.metrics.queries;
        let (count, running, errors) = (
            &q.index_queries,
            Some(&q.index_queries_running),
            &q.index_query_errors,
        );
        QueryMetrics::track(count, running, errors, run)
    }

    fn index_query(&self, bucket: &BucketRef, req: &IndexRequest) -> Result<IndexPage, KvError> {
        let (query, n_val, deadline) = self.prepare_index_query(bucket, req)?;
        let max = query
            .scan
            .max
            .map_or(UNPAGED_RESULTS_MAX + 1, |m| m as usize);
        let page = self.merged(n_val, &query.scan, max, deadline)?;
        if query.scan.max.is_none() && page.len() > UNPAGED_RESULTS_MAX {
            return Err(KvError::BadQuery(format!(
                "the query matches more than {UNPAGED_RESULTS_MAX} entries: \
                 ask for pages with max_results, or stream the answer"
            )));
        }
        Ok(query.page(stored_entries(&query.scan, &page)))
    }

    fn index_stream(
        &self,
        bucket: &BucketRef,
        req: &IndexRequest,
        step_size: usize,
        mut emit: impl FnMut(IndexPage) -> bool,
    ) -> Result<(), KvError> {
        let (mut step, n_val, deadline) = self.prepare_index_query(bucket, req)?;
        let mut left = step.scan.max.map(|m| m as usize);
        loop {
            let size = left.map_or(step_size, |l| l.min(step_size));
            step.scan.max = Some(size as u32);
            let merged = self.merged(n_val, &step.scan, size, deadline)?;
            let entries = stored_entries(&step.scan, &merged);
            let after = entries.last().cloned();
            let got = entries.len();
            let mut page = step.page(entries);
            left = left.map(|l| l - got);
            let more = got == size && left != Some(0);
            if more {
                // Only the page that ends at `max_results` is the client's.
                page.continuation = None;
            }
            let sent = !page.results.is_empty() || page.continuation.is_some();
            if (sent && !emit(page)) || !more {
                return Ok(());
            }
            step.scan.after = after;
        }
    }

    /// The query ready to run, its bucket's `n_val`, and its deadline.
    fn prepare_index_query(
        &self,
        bucket: &BucketRef,
        req: &IndexRequest,
    ) -> Result<(PreparedQuery, u32, Instant), KvError> {
        let props = self.props(bucket)?;
        let query = req.prepare(bucket, props.generation)?;
        let timeout = match query.timeout {
            None => INDEX_TIMEOUT_DEFAULT,
            Some(t) if t.is_zero() => INDEX_TIMEOUT_NONE,
            Some(t) => t,
        };
        Ok((query, props.n_val, Instant::now() + timeout))
    }

    /// The `max` smallest entries of `scan` over a coverage plan for
    /// `n_val` (a fresh one if a planned vnode moved). Blocking.
    fn merged(
        &self,
        n_val: u32,
        scan: &IndexScan,
        max: usize,
        deadline: Instant,
    ) -> Result<Vec<Entry>, KvError> {
        self.with_coverage(n_val, deadline, |coverage| {
            self.merge_page(coverage, scan, max, deadline)
        })
    }

    /// The `max` smallest entries of `scan` over `coverage`'s vnodes,
    /// pulled in chunks ([`PageMerge`]). Blocking.
    fn merge_page(
        &self,
        coverage: &Coverage,
        scan: &IndexScan,
        max: usize,
        deadline: Instant,
    ) -> Result<Vec<Entry>, KvError> {
        // `$bucket` and `$key` scans sort the bucket's keys at each ask:
        // they are asked once, for the whole page.
        let whole = !matches!(scan.field, ScanField::Term(_));
        let mut merge = PageMerge::new(max, &coverage.shares(), whole);
        loop {
            merge.advance();
            let wants = merge.wants();
            if wants.is_empty() {
                return Ok(merge.finish());
            }
            let asks = wants.iter().map(|w| Ask {
                vnode: coverage.vnodes()[w.source].clone(),
                kind: FoldKind::Index(IndexScan {
                    after: match (&w.after, whole) {
                        (None, _) => scan.after.clone(),
                        (Some((_, k)), true) => Some((k.clone(), k.clone())),
                        (Some(after), false) => Some(after.clone()),
                    },
                    max: Some(u32::try_from(w.count).unwrap_or(u32::MAX)),
                    ..scan.clone()
                }),
            });
            let answers = self.coverage_round(coverage, asks.collect(), deadline)?;
            for (want, items) in wants.into_iter().zip(answers) {
                let entries = items
                    .into_iter()
                    .map(|item| {
                        Entry::new(item).ok_or_else(|| {
                            KvError::BadQuery("a vnode sent a malformed entry".into())
                        })
                    })
                    .collect::<Result<Vec<_>, KvError>>()?;
                merge.take(want.source, entries, want.count);
            }
        }
    }
}

/// The merged entries as stored `(term, key)` pairs: a `$bucket` or `$key`
/// entry's term is empty, and the key is its term (and its
/// continuation's).
fn stored_entries(scan: &IndexScan, merged: &[Entry]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let keys_are_terms = !matches!(scan.field, ScanField::Term(_));
    merged
        .iter()
        .map(|e| match e.parts() {
            (_, k) if keys_are_terms => (k.to_vec(), k.to_vec()),
            (t, k) => (t.to_vec(), k.to_vec()),
        })
        .collect()
}
