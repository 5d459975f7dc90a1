//! Messages from the transport: replies to this node's requests go to
//! their waiting coordinators; requests for this node's vnodes are
//! decoded here, on the transport's thread, and run by the executor.

use std::sync::Arc;

use bytes::Bytes;
use eddy_net::{Incoming, NodeName};
use eddy_ring::Partition;

use super::batch::Collector;
use super::executor::Job;
use super::{NetRemote, Work, wire};
use eddy_kv::router::unanswerable;
use eddy_model::error::KvError;
use eddy_vnode::msg::{VnodeId, VnodeReply, VnodeRequest};
use eddy_vnode::reply::ReplyTo;

impl NetRemote {
    /// Handles one message from the transport: a reply to one of this
    /// node's requests, or a request for one of its vnodes. Never blocks.
    pub fn handle(self: &Arc<Self>, incoming: Incoming) {
        // Vnode messages are one-way; a call is not ours to answer (its
        // caller sees `NoReply` when the responder drops).
        match wire::decode(&incoming.body) {
            Ok(wire::Message::Reply(env)) => self.on_reply(&incoming.from, env),
            Ok(wire::Message::Request(env)) => self.on_request(incoming.from, env),
            Ok(wire::Message::Batch(env)) => self.on_batch(incoming.from, env),
            Ok(wire::Message::BatchReply(env)) => self.on_batch_reply(&incoming.from, env),
            Err(e) => self.on_undecodable(incoming.from, &incoming.body, &e),
        }
    }

    fn on_reply(&self, from: &NodeName, env: wire::ReplyEnvelope) {
        match self.pending.route(env.request_id, from, &env.reply) {
            Some(reply) => reply.send(env.partition, env.reply, Default::default()),
            None => tracing::debug!(%from, id = env.request_id, "reply to no waiting request"),
        }
    }

    fn on_request(self: &Arc<Self>, from: NodeName, env: wire::RequestEnvelope) {
        let reply = match env.request_id {
            0 => ReplyTo::Nobody,
            request_id => ReplyTo::Remote {
                node: from,
                request_id,
                route: self.clone(),
            },
        };
        let to = VnodeId {
            partition: env.partition,
            node: self.transport.local().clone(),
        };
        let Some(serving) = self.serving.get() else {
            return self.refuse(env.partition, &env.request, &reply, "not serving yet");
        };
        let work = Box::new(Work {
            job: Job::One {
                to,
                req: env.request,
                reply,
            },
            inbound: serving.inbound.clone(),
        });
        if let Err(work) = serving.executor.try_execute(work) {
            self.refuse_work(work.job, "overloaded");
        }
    }

    /// Hands a batch to the executor as one piece of work: its items run
    /// one after another, their replies gathered into batch replies.
    fn on_batch(self: &Arc<Self>, from: NodeName, env: wire::BatchEnvelope) {
        let replies = match env.request_id {
            0 => vec![ReplyTo::Nobody; env.items.len()],
            id => Collector::reply_tos(self, from, id, env.items.len()),
        };
        let job = Job::Batch {
            node: self.transport.local().clone(),
            items: env.items.into_iter().zip(replies).collect(),
        };
        let Some(serving) = self.serving.get() else {
            return self.refuse_work(job, "not serving yet");
        };
        let work = Box::new(Work {
            job,
            inbound: serving.inbound.clone(),
        });
        if let Err(work) = serving.executor.try_execute(work) {
            self.refuse_work(work.job, "overloaded");
        }
    }

    /// Hands each item's reply of a batch reply to its waiting
    /// coordinator; a refusal fails every item still waiting.
    fn on_batch_reply(&self, from: &NodeName, env: wire::BatchReplyEnvelope) {
        let replies = match env.answer {
            wire::BatchAnswer::Replies(replies) => replies,
            wire::BatchAnswer::Refused(e) => {
                if let Some(entry) = self.pending.remove_from(env.request_id, from) {
                    entry.fail(e);
                }
                return;
            }
        };
        let slots = self
            .pending
            .route_batch(env.request_id, from, replies.iter().map(|r| r.index));
        for (reply, slot) in replies.into_iter().zip(slots) {
            match slot {
                Some(slot) => slot
                    .reply
                    .send(reply.partition, reply.reply, Default::default()),
                None => {
                    tracing::debug!(%from, id = env.request_id, "reply to no waiting batch item")
                }
            }
        }
    }

    /// Answers work this node will not run.
    fn refuse_work(&self, job: Job, why: &str) {
        match job {
            Job::One { to, req, reply } => self.refuse(to.partition, &req, &reply, why),
            Job::Batch { items, .. } => {
                for (item, reply) in items {
                    self.refuse(item.partition, &item.request, &reply, why);
                }
            }
        }
    }

    /// Answers a request this node will not run.
    fn refuse(&self, partition: Partition, req: &VnodeRequest, reply: &ReplyTo, why: &str) {
        let e = KvError::Unreachable(format!("{} ({why})", self.transport.local()));
        unanswerable(partition, req, reply, e);
    }

    /// Logs a bad message and answers it if it is a request whose head
    /// names what it expects.
    fn on_undecodable(self: &Arc<Self>, from: NodeName, body: &Bytes, e: &wire::WireError) {
        tracing::warn!(%from, "undecodable vnode message: {e}");
        let Some(head) = wire::request_head(body).filter(|h| h.request_id != 0) else {
            return;
        };
        let err = KvError::Storage(eddy_storage::StorageError::Engine {
            engine: wire::OTHER_ENGINE,
            source: format!("undecodable request: {e}").into(),
        });
        if head.op.is_some_and(wire::is_batch_op) {
            let _entered = self.enter_runtime();
            if let Ok(body) = wire::encode_batch_refusal(head.request_id, &err) {
                let _ = self.try_send_reply(&from, body);
            }
            return;
        }
        let answer = match head.op {
            Some(op) if wire::is_put_op(op) => VnodeReply::Put(Err(err)),
            Some(op) if wire::is_get_op(op) => VnodeReply::Get(Err(err)),
            Some(op) if wire::is_fold_op(op) => VnodeReply::Fold(Err(err)),
            _ => return,
        };
        self.send_reply(&from, head.request_id, head.partition, &answer);
    }
}
