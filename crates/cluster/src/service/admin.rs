//! The admin operations an operator runs on any node (Riak's `riak admin
//! cluster …`, `member-status`, `ring-status`, `ringready`, `transfers`,
//! `transfer-limit`, `down`), and the transfer completion the handoff
//! manager reports.
//!
//! Staging, `plan`, `commit` and `down` go to the claimant (see `exec`);
//! the asking node merges the state the claimant answers with, so what it
//! shows next includes the change. The views answer from this node's
//! state and failure detector.

use std::net::SocketAddr;

use eddy_ring::{NodeName, Partition, Transfer};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::Membership;
use super::error::MembershipError;
use super::exec::route_admin;
use super::gossip::absorb;
use super::metadata::PushReport;
use super::wire::{AdminDone, AdminRequest, Message, Reply};
use crate::plan::Plan;
use crate::views::{MemberStatusRow, NodeTransfers, RingStatus};

impl Membership {
    /// `cluster join`: this node joins the cluster `target` belongs to.
    /// `address` is where `target`'s cluster listener accepts connections
    /// (node names carry no port). The claimant admits this node as a
    /// joining member; this node then adopts the cluster's state. The next
    /// `plan`/`commit` gives it partitions.
    pub async fn join(&self, target: NodeName, address: SocketAddr) -> Result<(), MembershipError> {
        let inner = &self.inner;
        let state = inner.current();
        state.check_join(&inner.me, &target)?;
        let member = state.members().get(&inner.me).cloned().ok_or_else(|| {
            MembershipError::Stage(crate::StageError::NotMember(inner.me.clone()))
        })?;
        inner.transport.set_peer_address(target.clone(), address);
        let request = AdminRequest::Join {
            node: inner.me.clone(),
            member,
        };
        let msg = Message::Admin { hops: 0, request };
        let deadline = Instant::now() + inner.config.admin_timeout;
        let done = match inner.ask(&target, &msg, deadline).await? {
            Reply::Admin(done) => done.map_err(super::error::ErrorWire::into_error)?,
            _ => {
                return Err(MembershipError::BadReply {
                    node: target,
                    reason: "not an admin reply".into(),
                });
            }
        };
        let me = inner.me.clone();
        inner.update(|s| Ok(s.adopt(&me, &done.after)?)).await?;
        tracing::info!(node = %me, %target, "joined the cluster (staged)");
        Ok(())
    }

    /// `cluster leave [node]`: stages the leave of `node`, or of this node.
    pub async fn leave(&self, node: Option<NodeName>) -> Result<(), MembershipError> {
        let node = node.unwrap_or_else(|| self.inner.me.clone());
        self.admin(AdminRequest::Leave { node }).await.map(drop)
    }

    /// `cluster force-remove node`: stages its removal without handoff.
    pub async fn force_remove(&self, node: NodeName) -> Result<(), MembershipError> {
        self.admin(AdminRequest::ForceRemove { node })
            .await
            .map(drop)
    }

    /// `cluster replace old new`: stages `new` taking `old`'s partitions
    /// by handoff.
    pub async fn replace(&self, old: NodeName, new: NodeName) -> Result<(), MembershipError> {
        let request = AdminRequest::Replace {
            node: old,
            with: new,
        };
        self.admin(request).await.map(drop)
    }

    /// `cluster force-replace old new`: stages `new` taking `old`'s
    /// partitions at once, without handoff.
    pub async fn force_replace(&self, old: NodeName, new: NodeName) -> Result<(), MembershipError> {
        let request = AdminRequest::ForceReplace {
            node: old,
            with: new,
        };
        self.admin(request).await.map(drop)
    }

    /// `cluster clear`: drops the staged changes and the joining members.
    pub async fn clear(&self) -> Result<(), MembershipError> {
        self.admin(AdminRequest::Clear).await.map(drop)
    }

    /// `cluster plan`: what committing the claimant's staged changes
    /// would do.
    pub async fn plan(&self) -> Result<Plan, MembershipError> {
        let done = self.admin(AdminRequest::Plan).await?;
        Ok(done.after.plan(&self.inner.config.claim)?)
    }

    /// `cluster commit`: the claimant commits its staged changes, once
    /// every member not marked down has its state (ring-ready). Returns
    /// the plan carried out.
    pub async fn commit(&self) -> Result<Plan, MembershipError> {
        let done = self.admin(AdminRequest::Commit).await?;
        Ok(done.before.plan(&self.inner.config.claim)?)
    }

    /// `down node` (Riak's `riak admin down`): the claimant marks an
    /// unreachable member down, so commits stop waiting for it.
    pub async fn down(&self, node: NodeName) -> Result<(), MembershipError> {
        self.admin(AdminRequest::Down { node }).await.map(drop)
    }

    /// `member-status`, from this node's state.
    pub fn member_status(&self) -> Vec<MemberStatusRow> {
        self.inner.current().member_status()
    }

    /// `ring-status`, from this node's state and failure detector.
    pub fn ring_status(&self) -> RingStatus {
        let inner = &self.inner;
        let state = inner.current();
        let my_epoch = state.epoch();
        let peer_epoch = |n: &NodeName| {
            if *n == inner.me {
                Some(my_epoch)
            } else {
                inner.detector.lock().epoch(n)
            }
        };
        state.ring_status(|n| inner.is_up(n), peer_epoch)
    }

    /// `ringready`: asks every member for its epoch now; `Err` lists the
    /// members unreachable or not at this node's epoch.
    pub async fn ringready(&self) -> Result<(), Vec<NodeName>> {
        let inner = &self.inner;
        let state = inner.current();
        let deadline = Instant::now() + inner.config.push_timeout;
        let mut pings = JoinSet::new();
        for node in state.members().keys().filter(|n| **n != inner.me).cloned() {
            let inner = inner.clone();
            let epoch = state.epoch();
            pings.spawn(async move {
                let reply = inner.call(&node, &Message::Ping { epoch }, deadline).await;
                (node, reply)
            });
        }
        let mut epochs = std::collections::BTreeMap::from([(inner.me.clone(), state.epoch())]);
        while let Some(done) = pings.join_next().await {
            if let Ok((node, Ok(Reply::Ack { epoch }))) = done {
                epochs.insert(node, epoch);
            }
        }
        state.ring_ready(|n| epochs.get(n).copied())
    }

    /// `transfers`: the ownership handoffs pending, per sender.
    pub fn transfers(&self) -> Vec<NodeTransfers> {
        self.inner.current().transfers()
    }

    /// `transfers` with `hinted` (the hinted handoffs this node has to
    /// send) added to its line.
    pub fn transfers_with(&self, hinted: Vec<Transfer>) -> Vec<NodeTransfers> {
        self.inner.current().transfers_with(hinted)
    }

    /// `transfer-limit [node] limit`: sets the transfer limit of `node`,
    /// or of every member. Kept in each node's memory, as Riak keeps it.
    pub async fn transfer_limit(
        &self,
        node: Option<NodeName>,
        limit: u32,
    ) -> Result<PushReport, MembershipError> {
        let inner = &self.inner;
        let state = inner.current();
        let targets: Vec<NodeName> = match node {
            Some(n) if state.members().contains_key(&n) => vec![n],
            Some(n) => return Err(crate::StageError::NotMember(n).into()),
            None => state.members().keys().cloned().collect(),
        };
        let deadline = Instant::now() + inner.config.push_timeout;
        let mut report = PushReport::default();
        for node in targets {
            let msg = Message::TransferLimit { limit };
            match inner.call(&node, &msg, deadline).await {
                Ok(Reply::Ack { .. }) => report.acked.push(node),
                _ => report.missing.push(node),
            }
        }
        Ok(report)
    }

    /// The handoff manager's report that the receiver of `partition`'s
    /// transfer from `from` to `to` made the data durable: recorded here,
    /// sent to the claimant, and reported again while the ring lists it.
    pub async fn transfer_complete(
        &self,
        partition: Partition,
        from: NodeName,
        to: NodeName,
    ) -> Result<(), MembershipError> {
        let inner = &self.inner;
        inner
            .update(|s| Ok(s.transfer_complete(partition, &from, &to)?))
            .await?;
        inner.finished.lock().insert((partition, from, to));
        let state = inner.current();
        let is_up = |n: &NodeName| inner.is_up(n);
        if let Some(claimant) = state.claimant(is_up).filter(|c| **c != inner.me) {
            inner
                .tell(claimant, &Message::State(Box::new((*state).clone())))
                .await;
        } else {
            inner.duties_soon.notify_one();
        }
        Ok(())
    }

    /// Sends `request` to the claimant and merges the state it answers
    /// with.
    async fn admin(&self, request: AdminRequest) -> Result<AdminDone, MembershipError> {
        let done = route_admin(&self.inner, 0, request).await?;
        let claimant = done.after.ring_state().claimant.clone();
        if claimant != self.inner.me {
            absorb(&self.inner, &claimant, &done.after).await?;
        }
        Ok(done)
    }
}
