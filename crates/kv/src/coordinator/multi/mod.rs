//! Multi-key requests (design note 016): each key is coordinated as its
//! single-key operation ([`Node::get`], [`Node::put`], [`Node::delete`])
//! would coordinate it, with the same preflist, quorum core, read repair
//! and errors, but the vnode requests of many keys for one node travel
//! together: one batched message per node instead of one per key.
//!
//! A request's keys run in **waves** (in request order): a wave takes as
//! many keys as need at most `multi.concurrency` batched messages to each
//! node ([`plan::Admission`]), each batch at most
//! [`MultiLimits::batch_items_max`] items and about
//! [`MultiLimits::batch_bytes_max`] bytes. A wave sends its batches, does
//! its local vnodes' work on the caller's thread (reads, and the writes of
//! puts coordinated here), feeds every reply to its key's quorum core
//! (`get`, `put`), and ends when every key of it has its answer; the next
//! wave starts then. Gets go out in batches whole; a put's coordinating
//! vnode gets its key's write alone (as for a single put, it is usually a
//! local one), and the object it stores goes to the other replicas in
//! batches. A multi-delete reads the keys without a context in get waves,
//! then writes the tombstones in put waves.
//!
//! [`MultiLimits::batch_items_max`]: eddy_model::limits::MultiLimits::batch_items_max
//! [`MultiLimits::batch_bytes_max`]: eddy_model::limits::MultiLimits::batch_bytes_max
//!
//! Invariants: the answer has exactly one result per item, at the item's
//! position; what does not depend on the key (the item count, the bucket,
//! the quorum values against n_val) is checked once and fails the request
//! before any key runs; the found objects of one answer total at most
//! `multi.answer_bytes_max` bytes (a result that would pass it sheds its
//! object, and keys of a get not yet started are not run); one deadline
//! bounds the whole request.
//!
//! Figures: each key that runs is counted in the node's gets or puts and
//! its time (from the start of its request's run to its answer) recorded
//! as a single key's FSM time ([`Recorded`]; all of a request's at once, when
//! its run ends: [`Figures`]); the keys a request names
//! are counted apart too.

mod get;
mod plan;
mod put;

use std::sync::Arc;

use eddy_object::RiakObject;
use tokio::time::Instant;

use super::{content_bytes, quorum};
use crate::coordinator::delete::DeleteOutcome;
use crate::metrics::NodeMetrics;
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::limits::MultiLimits;
use eddy_model::props::BucketProps;
use eddy_model::request::{
    BucketRef, DeleteOptions, GetOptions, GetResponse, MultiDeleteRequest, MultiGetRequest,
    MultiPutRequest, PutOptions, PutResponse,
};
use get::GetJob;
use plan::BatchCaps;
use put::PutJob;

/// One result per item of a multi-key request, in request order.
pub type KeyResults<T> = Vec<Result<T, KvError>>;

impl Node {
    /// Reads every key of `req` as [`Node::get`] would.
    pub async fn multi_get(
        self: &Arc<Self>,
        req: MultiGetRequest,
    ) -> Result<KeyResults<GetResponse>, KvError> {
        let props = self.multi_props(&req.bucket, req.keys.len())?;
        let o = &req.options;
        quorum("r", o.r, props.r, props.n_val)?;
        quorum("pr", o.pr, props.pr, props.n_val)?;
        self.metrics.multi_gets.increment();
        self.metrics.multi_get_keys.add(req.keys.len() as u64);
        let mut run = self.multi_run(req.options.timeout_ms, req.keys.len());
        let jobs = req
            .keys
            .into_iter()
            .enumerate()
            .map(|(index, key)| GetJob { index, key })
            .collect();
        self.run_gets(&req.bucket, &props, &req.options, jobs, &mut run)
            .await?;
        Ok(run.results())
    }

    /// Writes every object of `req` as [`Node::put`] would.
    pub async fn multi_put(
        self: &Arc<Self>,
        req: MultiPutRequest,
    ) -> Result<KeyResults<PutResponse>, KvError> {
        let props = self.multi_props(&req.bucket, req.objects.len())?;
        let o = &req.options;
        for (name, value, bucket_value) in [("w", o.w, props.w), ("dw", o.dw, props.dw)] {
            quorum(name, value, bucket_value, props.n_val)?;
        }
        quorum("pw", o.pw, props.pw, props.n_val)?;
        self.metrics.multi_puts.increment();
        self.metrics.multi_put_keys.add(req.objects.len() as u64);
        let mut run = self.multi_run(req.options.timeout_ms, req.objects.len());
        let jobs = req
            .objects
            .into_iter()
            .enumerate()
            .map(|(index, o)| PutJob {
                index,
                key: o.key,
                context: o.context,
                content: o.content,
            })
            .collect();
        self.run_puts(&req.bucket, &req.options, jobs, &mut run)
            .await?;
        Ok(run.results())
    }

    /// Deletes every key of `req` as [`Node::delete`] would: the keys
    /// without a context are read first (as a multi-get with the delete's
    /// `r` and `pr`), then every key found or given a context gets its
    /// tombstone (as a multi-put with its `w`, `dw` and `pw`).
    pub async fn multi_delete(
        self: &Arc<Self>,
        req: MultiDeleteRequest,
    ) -> Result<KeyResults<DeleteOutcome>, KvError> {
        let props = self.multi_props(&req.bucket, req.keys.len())?;
        let o = &req.options;
        check_delete_quorums(o, &props)?;
        self.metrics.multi_deletes.increment();
        self.metrics.multi_delete_keys.add(req.keys.len() as u64);
        self.metrics.deletes.add(req.keys.len() as u64);
        let mut run = self.multi_run(o.timeout_ms, req.keys.len());
        let contexts = self.delete_contexts(&req, &props, &mut run).await?;
        let mut writes = self.multi_run(o.timeout_ms, req.keys.len());
        writes.deadline = run.deadline;
        writes.budget.max = usize::MAX;
        let mut jobs = Vec::new();
        let mut outcomes: Vec<Option<Result<DeleteOutcome, KvError>>> = Vec::new();
        for (index, (item, context)) in req.keys.iter().zip(contexts).enumerate() {
            match context {
                Ok(Some(vv)) => {
                    jobs.push(PutJob {
                        index,
                        key: item.key.clone(),
                        context: Some(vv),
                        content: eddy_object::Content::tombstone(0),
                    });
                    outcomes.push(None);
                }
                Ok(None) => outcomes.push(Some(Ok(DeleteOutcome::NotFound))),
                Err(e) => outcomes.push(Some(Err(e))),
            }
        }
        let options = PutOptions {
            w: o.w.or(o.rw),
            dw: o.dw,
            pw: o.pw,
            return_body: true,
            timeout_ms: o.timeout_ms,
            ..PutOptions::default()
        };
        self.run_puts(&req.bucket, &options, jobs, &mut writes)
            .await?;
        let written = writes.results();
        Ok(outcomes
            .into_iter()
            .zip(written)
            .zip(&req.keys)
            .map(|((outcome, put), item)| match outcome {
                Some(outcome) => outcome,
                None => {
                    let stored = put?.object;
                    if let Some(tombstone) = stored.filter(|o| o.is_deleted()) {
                        self.reap_later(&req.bucket, &item.key, tombstone)?;
                    }
                    Ok(DeleteOutcome::Deleted)
                }
            })
            .collect())
    }

    /// The context each key of a multi-delete is deleted with: its own,
    /// or the one a read finds (`None`: nothing live to delete).
    async fn delete_contexts(
        self: &Arc<Self>,
        req: &MultiDeleteRequest,
        props: &BucketProps,
        run: &mut Run<GetResponse>,
    ) -> Result<Vec<Result<Option<eddy_object::VersionVector>, KvError>>, KvError> {
        let o = &req.options;
        let options = GetOptions {
            r: o.r.or(o.rw),
            pr: o.pr,
            timeout_ms: o.timeout_ms,
            ..GetOptions::default()
        };
        run.budget.max = usize::MAX;
        let jobs = req
            .keys
            .iter()
            .enumerate()
            .filter(|(_, item)| item.context.is_none())
            .map(|(index, item)| GetJob {
                index,
                key: item.key.clone(),
            })
            .collect();
        self.run_gets(&req.bucket, props, &options, jobs, run)
            .await?;
        let read = std::mem::take(&mut run.results);
        Ok(req
            .keys
            .iter()
            .zip(read)
            .map(|(item, got)| match (&item.context, got) {
                (Some(vv), _) => Ok(Some(vv.clone())),
                (None, Some(Ok(GetResponse::Found(obj)))) => Ok(Some(obj.vv)),
                (None, Some(Ok(GetResponse::NotFound { .. }))) => Ok(None),
                (None, Some(Err(e))) => Err(e),
                (None, None) => Err(KvError::Timeout),
            })
            .collect())
    }

    /// Queues the reaping of a multi-delete's tombstone, as
    /// [`Node::delete`] does.
    fn reap_later(
        self: &Arc<Self>,
        bucket: &BucketRef,
        key: &[u8],
        tombstone: RiakObject,
    ) -> Result<(), KvError> {
        let props = self.props(bucket)?;
        let preflist = self.preflist_entries(Node::key_hash(bucket, key), props.n_val);
        let key = super::storage_key(bucket, &props, key);
        self.schedule_reap(key, tombstone.vv, preflist);
        Ok(())
    }

    /// The bucket's props, after the checks every multi request shares:
    /// the item count and the bucket.
    fn multi_props(&self, bucket: &BucketRef, items: usize) -> Result<Arc<BucketProps>, KvError> {
        let max = self.config.multi.keys_max;
        if items > max {
            return Err(KvError::TooMany {
                what: "keys",
                count: items,
                max,
            });
        }
        self.props(bucket)
    }

    fn multi_run<R>(&self, timeout_ms: Option<u64>, items: usize) -> Run<R> {
        let limits = self.config.multi;
        Run {
            deadline: self.deadline(timeout_ms),
            started: std::time::Instant::now(),
            metrics: self.metrics.clone(),
            figures: Figures::default(),
            limits,
            budget: Budget {
                used: 0,
                max: limits.answer_bytes_max,
                spent: false,
            },
            results: std::iter::repeat_with(|| None).take(items).collect(),
        }
    }
}

/// A delete's quorums, each checked against n_val as its read and its
/// write will check them.
fn check_delete_quorums(o: &DeleteOptions, props: &BucketProps) -> Result<(), KvError> {
    let n = props.n_val;
    quorum("r", o.r.or(o.rw), props.r, n)?;
    quorum("pr", o.pr, props.pr, n)?;
    quorum("w", o.w.or(o.rw), props.w, n)?;
    quorum("dw", o.dw, props.dw, n)?;
    quorum("pw", o.pw, props.pw, n)?;
    Ok(())
}

/// One multi-key request's run: its deadline, limits, answer budget and
/// the results so far, by item.
struct Run<R> {
    deadline: Instant,
    /// When the run began: each key's FSM time is counted from here.
    started: std::time::Instant,
    metrics: Arc<NodeMetrics>,
    /// The keys' figures, recorded together when the run ends.
    figures: Figures,
    limits: MultiLimits,
    budget: Budget,
    results: Vec<Option<Result<R, KvError>>>,
}

impl<R> Drop for Run<R> {
    fn drop(&mut self) {
        self.figures.record(&self.metrics);
    }
}

/// The figures of the keys a run answered so far, recorded in the node's
/// histograms at once when the run ends: one reading of the clock and
/// one lock of each histogram a request rather than three a key.
#[derive(Default)]
struct Figures {
    get_time: Vec<u64>,
    get_siblings: Vec<u64>,
    get_objsize: Vec<u64>,
    put_time: Vec<u64>,
}

impl Figures {
    fn record(&self, m: &NodeMetrics) {
        let now = std::time::Instant::now();
        m.get_fsm_time.record_many_at(&self.get_time, now);
        m.get_fsm_siblings.record_many_at(&self.get_siblings, now);
        m.get_fsm_objsize.record_many_at(&self.get_objsize, now);
        m.put_fsm_time.record_many_at(&self.put_time, now);
    }
}

/// Microseconds since `start`.
fn micros_since(start: std::time::Instant) -> u64 {
    eddy_metrics::micros_between(start, std::time::Instant::now())
}

impl<R: Weighed + Recorded> Run<R> {
    /// Places the result of item `i`, whose key ran, its object counted
    /// against the budget.
    fn answer(&mut self, i: usize, result: Result<R, KvError>) {
        R::note(&mut self.figures, self.started, &result);
        let admitted = self.budget.admit(result);
        self.store(i, admitted);
    }

    /// Places the result of item `i`, whose key ran, as it is.
    fn place(&mut self, i: usize, result: Result<R, KvError>) {
        R::note(&mut self.figures, self.started, &result);
        self.store(i, result);
    }

    /// Places the result of item `i`, whose key never ran (shed or out of
    /// time before its wave): not counted.
    fn skip(&mut self, i: usize, result: Result<R, KvError>) {
        self.store(i, result);
    }

    fn store(&mut self, i: usize, result: Result<R, KvError>) {
        if let Some(slot) = self.results.get_mut(i) {
            *slot = Some(result);
        }
    }

    /// Whether the deadline passed.
    fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// How batches may grow.
    fn caps(&self) -> BatchCaps {
        BatchCaps {
            items_max: self
                .limits
                .batch_items_max
                .clamp(1, eddy_model::limits::BATCH_ITEMS_MAX),
            bytes_max: self.limits.batch_bytes_max,
        }
    }

    /// Every item's result (an item never answered timed out).
    fn results(mut self) -> KeyResults<R> {
        std::mem::take(&mut self.results)
            .into_iter()
            .map(|r| r.unwrap_or(Err(KvError::Timeout)))
            .collect()
    }
}

/// The object bytes one answer may still take.
struct Budget {
    used: usize,
    max: usize,
    /// A result was shed: gets not yet started are not run.
    spent: bool,
}

impl Budget {
    /// Counts a result's object against the budget, or sheds it if it
    /// does not fit.
    fn admit<R: Weighed>(&mut self, result: Result<R, KvError>) -> Result<R, KvError> {
        let result = result?;
        let bytes = result.bytes();
        if self.used.saturating_add(bytes) <= self.max {
            self.used += bytes;
            return Ok(result);
        }
        self.spent = true;
        result.shed(self.max)
    }
}

/// A per-key answer as the answer budget sees it.
trait Weighed: Sized {
    /// The object bytes the answer holds.
    fn bytes(&self) -> usize;
    /// What the answer becomes when its object does not fit.
    fn shed(self, max: usize) -> Result<Self, KvError>;
}

impl Weighed for GetResponse {
    fn bytes(&self) -> usize {
        match self {
            GetResponse::Found(obj) => object_bytes(obj),
            GetResponse::NotFound { .. } => 0,
        }
    }

    fn shed(self, max: usize) -> Result<Self, KvError> {
        Err(KvError::AnswerTooLarge { max })
    }
}

impl Weighed for PutResponse {
    fn bytes(&self) -> usize {
        self.object.as_ref().map_or(0, object_bytes)
    }

    fn shed(self, _max: usize) -> Result<Self, KvError> {
        Ok(PutResponse {
            object: None,
            ..self
        })
    }
}

/// A per-key answer as the node's figures record it: as the single-key
/// operation's FSM time (and, for a get, the object's siblings and size).
trait Recorded: Sized {
    fn note(f: &mut Figures, started: std::time::Instant, result: &Result<Self, KvError>);
}

impl Recorded for GetResponse {
    fn note(f: &mut Figures, started: std::time::Instant, result: &Result<Self, KvError>) {
        f.get_time.push(micros_since(started));
        if let Ok(GetResponse::Found(obj)) = result {
            f.get_siblings.push(obj.siblings.len() as u64);
            f.get_objsize.push(crate::metrics::value_bytes(obj));
        }
    }
}

impl Recorded for PutResponse {
    fn note(f: &mut Figures, started: std::time::Instant, _: &Result<Self, KvError>) {
        f.put_time.push(micros_since(started));
    }
}

/// The bytes of every sibling of `obj`, as the object size limit counts
/// them.
fn object_bytes(obj: &RiakObject) -> usize {
    obj.contents().map(content_bytes).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_admits_what_fits_and_sheds_the_rest() {
        let mut budget = Budget {
            used: 0,
            max: 10,
            spent: false,
        };
        let object = |n: usize| {
            let mut obj = RiakObject::default();
            obj.siblings.push(eddy_object::Sibling {
                dot: eddy_object::Dot {
                    actor: eddy_object::Actor(1),
                    counter: 1,
                },
                content: eddy_object::Content::new(vec![0; n]),
            });
            obj
        };
        let found = |n: usize| Ok(GetResponse::Found(object(n)));
        assert!(budget.admit(found(6)).is_ok());
        assert!(matches!(
            budget.admit(found(6)),
            Err(KvError::AnswerTooLarge { max: 10 })
        ));
        assert!(budget.spent);
        assert!(budget.admit(found(4)).is_ok(), "what still fits is kept");
        let put = PutResponse {
            key: b"k".to_vec(),
            object: Some(object(1)),
        };
        let shed = budget.admit(Ok(put)).unwrap();
        assert_eq!(
            shed.object, None,
            "a write keeps its result, not its object"
        );
        assert!(matches!(
            budget.admit::<GetResponse>(Err(KvError::Timeout)),
            Err(KvError::Timeout)
        ));
    }
}
