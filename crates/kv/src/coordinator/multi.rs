//! Multi-key requests (design note 016): each key is coordinated as its
//! single-key operation ([`Node::get`], [`Node::put`], [`Node::delete`]),
//! as a task of its own, at most `multi.concurrency` at once, started in
//! request order.
//!
//! Invariants: the answer has exactly one result per item, at the item's
//! position; what does not depend on the key (the item count, the bucket,
//! the quorum values against n_val) is checked once and fails the request
//! before any key runs; the found objects of one answer total at most
//! `multi.answer_bytes_max` bytes (a result that would pass it sheds its
//! object); one deadline bounds the whole request, each key getting what
//! is left of it when it starts.

use std::future::Future;
use std::sync::Arc;

use eddy_object::RiakObject;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{content_bytes, quorum};
use crate::coordinator::delete::DeleteOutcome;
use crate::error::KvError;
use crate::node::Node;
use crate::props::BucketProps;
use crate::request::{
    BucketRef, DeleteOptions, DeleteRequest, GetOptions, GetRequest, GetResponse, MultiDeleteKey,
    MultiDeleteRequest, MultiGetRequest, MultiPutObject, MultiPutRequest, PutOptions, PutRequest,
    PutResponse,
};

/// One result per item of a multi-key request, in request order.
pub type KeyResults<T> = Vec<Result<T, KvError>>;

impl Node {
    /// Reads every key of `req` as [`Node::get`] would, several at once.
    pub async fn multi_get(
        self: &Arc<Self>,
        req: MultiGetRequest,
    ) -> Result<KeyResults<GetResponse>, KvError> {
        let props = self.multi_props(&req.bucket, req.keys.len())?;
        let o = &req.options;
        quorum("r", o.r, props.r, props.n_val)?;
        quorum("pr", o.pr, props.pr, props.n_val)?;
        let MultiGetRequest {
            bucket,
            keys,
            options,
        } = req;
        let runner = self.runner(options.timeout_ms);
        runner
            .run(keys, move |node, key, timeout_ms| {
                let options = GetOptions {
                    timeout_ms: Some(timeout_ms),
                    ..options.clone()
                };
                let get = GetRequest {
                    bucket: bucket.clone(),
                    key,
                    options,
                };
                async move { node.get(get).await }
            })
            .await
    }

    /// Writes every object of `req` as [`Node::put`] would, several at once.
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
        let MultiPutRequest {
            bucket,
            objects,
            options,
        } = req;
        let runner = self.runner(options.timeout_ms);
        runner
            .run(objects, move |node, object: MultiPutObject, timeout_ms| {
                let put = PutRequest {
                    bucket: bucket.clone(),
                    key: Some(object.key),
                    context: object.context,
                    content: object.content,
                    options: PutOptions {
                        timeout_ms: Some(timeout_ms),
                        ..options.clone()
                    },
                };
                async move { node.put(put).await }
            })
            .await
    }

    /// Deletes every key of `req` as [`Node::delete`] would, several at
    /// once.
    pub async fn multi_delete(
        self: &Arc<Self>,
        req: MultiDeleteRequest,
    ) -> Result<KeyResults<DeleteOutcome>, KvError> {
        let props = self.multi_props(&req.bucket, req.keys.len())?;
        check_delete_quorums(&req.options, &props)?;
        let MultiDeleteRequest {
            bucket,
            keys,
            options,
        } = req;
        let runner = self.runner(options.timeout_ms);
        runner
            .run(keys, move |node, item: MultiDeleteKey, timeout_ms| {
                let delete = DeleteRequest {
                    bucket: bucket.clone(),
                    key: item.key,
                    context: item.context,
                    options: DeleteOptions {
                        timeout_ms: Some(timeout_ms),
                        ..options.clone()
                    },
                };
                async move { node.delete(delete).await }
            })
            .await
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

    fn runner(self: &Arc<Self>, timeout_ms: Option<u64>) -> Runner<'_> {
        Runner {
            node: self,
            deadline: self.deadline(timeout_ms),
            concurrency: self.config.multi.concurrency.max(1),
            budget: Budget {
                used: 0,
                max: self.config.multi.answer_bytes_max,
                spent: false,
            },
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

/// Runs one request's keys.
struct Runner<'a> {
    node: &'a Arc<Node>,
    deadline: Instant,
    concurrency: usize,
    budget: Budget,
}

impl Runner<'_> {
    /// Runs `op` on every item, at most `concurrency` at once, and answers
    /// with each item's result at its position. `op` gets the node, the
    /// item and the milliseconds left until the request's deadline.
    async fn run<I, R, F, Fut>(mut self, items: Vec<I>, op: F) -> Result<KeyResults<R>, KvError>
    where
        R: Weighed + Send + 'static,
        F: Fn(Arc<Node>, I, u64) -> Fut,
        Fut: Future<Output = Result<R, KvError>> + Send + 'static,
    {
        let mut results: Vec<Option<Result<R, KvError>>> =
            std::iter::repeat_with(|| None).take(items.len()).collect();
        let mut waiting = items.into_iter().enumerate();
        let mut tasks = JoinSet::new();
        loop {
            while tasks.len() < self.concurrency && (R::RUNS_PAST_BUDGET || !self.budget.spent) {
                let Some((i, item)) = waiting.next() else {
                    break;
                };
                match self.left_ms() {
                    Some(ms) => {
                        let fut = op(self.node.clone(), item, ms);
                        tasks.spawn(async move { (i, fut.await) });
                    }
                    None => place(&mut results, i, Err(KvError::Timeout)),
                }
            }
            let Some(joined) = tasks.join_next().await else {
                break;
            };
            match joined {
                Ok((i, result)) => {
                    let admitted = self.budget.admit(result);
                    place(&mut results, i, admitted);
                }
                // A key's panic is the request's, as a single operation's
                // is: the API's panic net answers it.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => return Err(KvError::ShuttingDown),
            }
        }
        let max = self.budget.max;
        for (i, _) in waiting {
            place(&mut results, i, Err(KvError::AnswerTooLarge { max }));
        }
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or(Err(KvError::Timeout)))
            .collect())
    }

    /// Milliseconds until the deadline (at least 1), `None` once it passed.
    fn left_ms(&self) -> Option<u64> {
        let left = self.deadline.checked_duration_since(Instant::now())?;
        match left.is_zero() {
            true => None,
            false => Some((left.as_millis() as u64).max(1)),
        }
    }
}

fn place<R>(results: &mut [Option<Result<R, KvError>>], i: usize, result: Result<R, KvError>) {
    if let Some(slot) = results.get_mut(i) {
        *slot = Some(result);
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
    /// Whether keys not yet started still run once the budget is spent:
    /// writes do (their answers shed only the object they return).
    const RUNS_PAST_BUDGET: bool;
    /// The object bytes the answer holds.
    fn bytes(&self) -> usize;
    /// What the answer becomes when its object does not fit.
    fn shed(self, max: usize) -> Result<Self, KvError>;
}

impl Weighed for GetResponse {
    const RUNS_PAST_BUDGET: bool = false;

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
    const RUNS_PAST_BUDGET: bool = true;

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

impl Weighed for DeleteOutcome {
    const RUNS_PAST_BUDGET: bool = true;

    fn bytes(&self) -> usize {
        0
    }

    fn shed(self, _max: usize) -> Result<Self, KvError> {
        Ok(self)
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
