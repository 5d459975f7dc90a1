//! A put whose coordinating vnode replicated a set or map operation's delta
//! instead of the whole object (design note 020 §6): a replica that does
//! not hold the version the operation was applied to answers
//! [`Signal::Behind`] and is sent the whole object, read once from the
//! coordinating vnode. When: the put's run decides
//! ([`PutAction::CatchUp`](crate::core::put_run::PutAction::CatchUp): at
//! once if the other replies ended without an answer, its answer then
//! counted); otherwise in the background once the put has its answer, as
//! read repair is. This module keeps whom and does the sends.
//!
//! Invariant: a replica's `Behind` is never counted as a result; its
//! answer to the whole object is, when the put waited for it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::time::{Instant, timeout_at};

use super::put::{PutFsm, Written};
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::error::Signal;
use eddy_vnode::msg::{PutKind, StorageKey, VnodeId, VnodeReply, VnodeRequest};
use eddy_vnode::reply::{LocalHint, Reply, ReplyTo};

/// The replicas that answered `Behind`, and those sent the whole object.
#[derive(Default)]
pub(super) struct Behind {
    /// The whole object, once read.
    pub(super) whole: Option<Bytes>,
    /// Replicas (preflist indexes) that answered `Behind` and were not
    /// yet sent the whole object.
    waiting: Vec<usize>,
    /// Where the answers to whole objects sent arrive; present once one
    /// was sent.
    resent: Option<(UnboundedSender<Reply>, UnboundedReceiver<Reply>)>,
    /// Answers still to come on `resent`.
    pending: usize,
    /// The first replies' channel closed (every replica answered it).
    first_done: bool,
}

impl Behind {
    /// The next reply: from the first sends, or from a whole object sent
    /// to a replica that was behind; `None` once neither can come.
    pub(super) async fn next(&mut self, first: &mut UnboundedReceiver<Reply>) -> Option<Reply> {
        loop {
            let resent = self.resent.as_mut().filter(|_| self.pending > 0);
            match (self.first_done, resent) {
                (true, None) => return None,
                (false, None) => match first.recv().await {
                    Some(reply) => return Some(reply),
                    None => self.first_done = true,
                },
                (done, Some((_, rx))) => {
                    tokio::select! {
                        r = first.recv(), if !done => match r {
                            Some(reply) => return Some(reply),
                            None => self.first_done = true,
                        },
                        r = rx.recv() => {
                            self.pending -= 1;
                            return r;
                        }
                    }
                }
            }
        }
    }
}

impl PutFsm<'_> {
    /// Passes `reply` on to be counted, unless it is a replica's `Behind`:
    /// that replica waits for the whole object ([`PutFsm::send_whole`]
    /// when the run says so, else [`PutFsm::catch_up_later`]).
    pub(super) fn catch_up(&self, reply: Reply, behind: &mut Behind) -> Option<Reply> {
        if !matches!(
            reply.reply,
            VnodeReply::Put(Err(KvError::Signal(Signal::Behind)))
        ) {
            return Some(reply);
        }
        self.node().metrics.datatype_deltas_behind.increment();
        let at = self
            .preflist
            .iter()
            .position(|e| e.id.partition == reply.partition);
        behind.waiting.extend(at);
        None
    }

    /// Sends the whole object to the replicas waiting for it, whose
    /// answers the put then counts.
    pub(super) async fn send_whole(
        &self,
        written: &Written,
        behind: &mut Behind,
    ) -> Result<(), KvError> {
        let whole = match &behind.whole {
            Some(whole) => whole.clone(),
            None => {
                let whole = self.fetch_whole(written).await?;
                behind.whole = Some(whole.clone());
                whole
            }
        };
        let (tx, _) = behind.resent.get_or_insert_with(unbounded_channel);
        for i in std::mem::take(&mut behind.waiting) {
            let req = self.request(
                PutKind::Replicate {
                    encoded: whole.clone(),
                },
                i,
            );
            let to = &self.preflist[i].id;
            self.node()
                .deliver(to, req, ReplyTo::Local(tx.clone()), LocalHint::default());
            behind.pending += 1;
        }
        Ok(())
    }

    /// Sends the whole object to the replicas still waiting for it once
    /// the put has its answer, in the background (as read repair does):
    /// the client does not wait for them.
    pub(super) fn catch_up_later(&self, written: &Written, behind: Behind) {
        let Some((_, from)) = &written.delta else {
            return;
        };
        if behind.waiting.is_empty() {
            return;
        }
        let sends: Vec<_> = behind
            .waiting
            .iter()
            .map(|&i| {
                let req = self.request(
                    PutKind::Replicate {
                        encoded: Bytes::new(),
                    },
                    i,
                );
                (self.preflist[i].id.clone(), req)
            })
            .collect();
        let (node, from, key) = (self.node().clone(), from.clone(), self.key().clone());
        let deadline = Instant::now() + CATCH_UP_TIMEOUT;
        let known = behind.whole;
        tokio::spawn(async move {
            let whole = match known {
                Some(whole) => whole,
                None => match fetch_whole(&node, &from, key, deadline).await {
                    Ok(whole) => whole,
                    Err(e) => return tracing::debug!("catching a replica up: {e}"),
                },
            };
            for (to, mut req) in sends {
                if let VnodeRequest::Put(put) = &mut req {
                    put.kind = PutKind::Replicate {
                        encoded: whole.clone(),
                    };
                }
                node.deliver(&to, req, ReplyTo::Nobody, LocalHint::default());
            }
        });
    }

    /// The whole object the vnode that coordinated `written` holds.
    pub(super) async fn fetch_whole(&self, written: &Written) -> Result<Bytes, KvError> {
        match &written.delta {
            Some((_, from)) => {
                fetch_whole(self.node(), from, self.key().clone(), self.deadline()).await
            }
            None => Ok(written.encoded.clone()),
        }
    }
}

/// How long a background catch-up may take to read the whole object.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads `key`'s whole object from the vnode `from`.
async fn fetch_whole(
    node: &Arc<Node>,
    from: &VnodeId,
    key: StorageKey,
    deadline: Instant,
) -> Result<Bytes, KvError> {
    let (tx, mut rx) = unbounded_channel::<Reply>();
    let req = VnodeRequest::Get { key };
    node.deliver(from, req, ReplyTo::Local(tx), LocalHint::default());
    match timeout_at(deadline, rx.recv()).await {
        Ok(Some(Reply {
            reply: VnodeReply::Get(got),
            ..
        })) => got?.ok_or_else(|| KvError::Unreachable("the coordinated object is gone".into())),
        Ok(_) => Err(KvError::Unreachable(
            "no answer for the coordinated object".into(),
        )),
        Err(_) => Err(KvError::Timeout),
    }
}
