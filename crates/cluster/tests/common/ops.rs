//! The operations of a simulated run: what each node does to its own
//! state, as the real driver would, and the strategy that draws them.

use eddy_cluster::{ClusterState, NodeName};
use proptest::prelude::*;
use serde_json::json;

use super::{Sim, member, name};

/// One step of a simulated run.
#[derive(Clone, Debug)]
pub enum Op {
    /// Node `joiner` asks to join through node `via`.
    Join {
        joiner: usize,
        via: usize,
    },
    Leave {
        by: usize,
        node: usize,
    },
    ForceRemove {
        by: usize,
        node: usize,
    },
    Replace {
        by: usize,
        node: usize,
        with: usize,
    },
    ForceReplace {
        by: usize,
        node: usize,
        with: usize,
    },
    Clear {
        by: usize,
    },
    Commit {
        by: usize,
    },
    /// The `k`-th pending transfer (over every up sender, each as its own
    /// state sees it) is reported done by its sender.
    Complete {
        k: usize,
    },
    Apply {
        by: usize,
    },
    TakeOver {
        by: usize,
    },
    MarkDown {
        by: usize,
        node: usize,
    },
    /// Node `by` writes a bucket's props (`n_val` = `value`).
    SetProps {
        by: usize,
        bucket: u8,
        value: u8,
    },
    ResetProps {
        by: usize,
        bucket: u8,
    },
    SetType {
        by: usize,
        value: u8,
    },
    /// `to` merges `from`'s state.
    Gossip {
        from: usize,
        to: usize,
    },
    /// Node `node` is seen down (or up again) by everyone.
    Crash {
        node: usize,
    },
    Recover {
        node: usize,
    },
    Tick,
    /// Every up node gossips with every up member until nothing changes.
    Sync,
    /// Node `node` saves its state (as to `meta/cluster.json`).
    Save {
        node: usize,
    },
    /// Node `node` restarts from its last saved state, losing what came
    /// after (a claimant that acted before saving: two versions of one
    /// epoch by one claimant).
    Restart {
        node: usize,
    },
}

pub fn op(nodes: usize) -> impl Strategy<Value = Op> {
    let n = 0..nodes;
    prop_oneof![
        1 => (n.clone(), n.clone()).prop_map(|(joiner, via)| Op::Join { joiner, via }),
        1 => (n.clone(), n.clone()).prop_map(|(by, node)| Op::Leave { by, node }),
        1 => (n.clone(), n.clone()).prop_map(|(by, node)| Op::ForceRemove { by, node }),
        1 => (n.clone(), n.clone(), n.clone()).prop_map(|(by, node, with)| Op::Replace { by, node, with }),
        1 => (n.clone(), n.clone(), n.clone())
            .prop_map(|(by, node, with)| Op::ForceReplace { by, node, with }),
        1 => n.clone().prop_map(|by| Op::Clear { by }),
        3 => n.clone().prop_map(|by| Op::Commit { by }),
        6 => (0..64usize).prop_map(|k| Op::Complete { k }),
        3 => n.clone().prop_map(|by| Op::Apply { by }),
        1 => n.clone().prop_map(|by| Op::TakeOver { by }),
        1 => (n.clone(), n.clone()).prop_map(|(by, node)| Op::MarkDown { by, node }),
        1 => (n.clone(), 0..3u8, 1..6u8).prop_map(|(by, bucket, value)| Op::SetProps { by, bucket, value }),
        1 => (n.clone(), 0..3u8).prop_map(|(by, bucket)| Op::ResetProps { by, bucket }),
        1 => (n.clone(), 1..6u8).prop_map(|(by, value)| Op::SetType { by, value }),
        8 => (n.clone(), n.clone()).prop_map(|(from, to)| Op::Gossip { from, to }),
        1 => n.clone().prop_map(|node| Op::Crash { node }),
        2 => n.clone().prop_map(|node| Op::Recover { node }),
        1 => Just(Op::Tick),
        3 => Just(Op::Sync),
        2 => n.clone().prop_map(|node| Op::Save { node }),
        1 => n.clone().prop_map(|node| Op::Restart { node }),
    ]
}

impl Sim {
    /// Applies `op`; a refused operation is an `Err` with its message.
    pub fn apply(&mut self, op: &Op) -> Result<(), String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        match *op {
            Op::Join { joiner, via } => self.join(joiner, via),
            Op::Leave { by, node } => {
                self.staged(by, |s, me| s.leave(me, &name(node)).map_err(|e| err(&e)))
            }
            Op::ForceRemove { by, node } => self.staged(by, |s, me| {
                s.force_remove(me, &name(node)).map_err(|e| err(&e))
            }),
            Op::Replace { by, node, with } => self.staged(by, |s, me| {
                s.replace(me, &name(node), &name(with)).map_err(|e| err(&e))
            }),
            Op::ForceReplace { by, node, with } => self.staged(by, |s, me| {
                s.force_replace(me, &name(node), &name(with))
                    .map_err(|e| err(&e))
            }),
            Op::Clear { by } => self.staged(by, |s, me| s.clear(me).map(drop).map_err(|e| err(&e))),
            Op::Commit { by } => self.commit(by),
            Op::Complete { k } => self.complete(k),
            Op::Apply { by } => self.alive(by, |s, me, _| {
                s.apply_transfers(me).map(drop).map_err(|e| err(&e))
            }),
            Op::TakeOver { by } => self.alive(by, |s, me, up| {
                s.take_over(me, up);
                Ok(())
            }),
            Op::MarkDown { by, node } => self.alive(by, |s, me, up| {
                s.mark_down(me, &name(node), up)
                    .map(drop)
                    .map_err(|e| err(&e))
            }),
            Op::SetProps { by, bucket, value } => self.write(by, |s, stamp| {
                s.metadata_mut().set_bucket_props(
                    "default",
                    &format!("b{bucket}"),
                    Some(super::patch(json!({"n_val": value}))),
                    stamp,
                );
            }),
            Op::ResetProps { by, bucket } => self.write(by, |s, stamp| {
                let b = format!("b{bucket}");
                s.metadata_mut()
                    .set_bucket_props("default", &b, None, stamp);
            }),
            Op::SetType { by, value } => self.write(by, |s, stamp| {
                let entry = super::active_type(json!({"n_val": value}));
                s.metadata_mut().set_bucket_type("maps", entry, stamp);
            }),
            Op::Gossip { from, to } => self.gossip(from, to),
            Op::Crash { node } => {
                self.up[node] = false;
                Ok(())
            }
            Op::Recover { node } => {
                self.up[node] = true;
                Ok(())
            }
            Op::Tick => {
                self.now_ms += 7;
                Ok(())
            }
            Op::Sync => {
                self.sync();
                Ok(())
            }
            Op::Save { node } => {
                self.saved[node] = self.states[node].clone();
                Ok(())
            }
            Op::Restart { node } => {
                self.states[node] = self.saved[node].clone();
                Ok(())
            }
        }
    }

    /// Runs `f` on node `by`'s state if `by` is up.
    fn alive(
        &mut self,
        by: usize,
        f: impl FnOnce(&mut ClusterState, &NodeName, &dyn Fn(&NodeName) -> bool) -> Result<(), String>,
    ) -> Result<(), String> {
        if !self.up[by] {
            return Err("down".into());
        }
        let up = self.up.clone();
        let is_up = move |n: &NodeName| (0..up.len()).any(|i| name(i) == *n && up[i]);
        f(&mut self.states[by], &name(by), &is_up)
    }

    /// Runs a staging operation on the claimant as node `by` sees it.
    fn staged(
        &mut self,
        by: usize,
        f: impl FnOnce(&mut ClusterState, &NodeName) -> Result<(), String>,
    ) -> Result<(), String> {
        let c = self.claimant_of(by)?;
        self.take_over(c);
        f(&mut self.states[c], &name(c))
    }

    fn join(&mut self, joiner: usize, via: usize) -> Result<(), String> {
        self.states[joiner]
            .check_join(&name(joiner), &name(via))
            .map_err(|e| e.to_string())?;
        if !self.up[joiner] {
            return Err("down".into());
        }
        let c = self.claimant_of(via)?;
        self.states[c]
            .join(&name(c), &name(joiner), member(joiner))
            .map_err(|e| e.to_string())?;
        self.gossip(c, joiner)
    }

    fn commit(&mut self, by: usize) -> Result<(), String> {
        let c = self.claimant_of(by)?;
        self.take_over(c);
        let params = self.params;
        let epochs: Vec<Option<u64>> = (0..self.up.len())
            .map(|i| self.up[i].then(|| self.states[i].epoch()))
            .collect();
        let peer_epoch = |n: &NodeName| {
            let i = (0..epochs.len()).find(|i| name(*i) == *n)?;
            if i == c {
                Some(self.states[c].epoch())
            } else {
                epochs[i]
            }
        };
        let mut state = self.states[c].clone();
        state
            .commit(&name(c), &params, peer_epoch)
            .map_err(|e| e.to_string())?;
        self.states[c] = state;
        Ok(())
    }

    fn complete(&mut self, k: usize) -> Result<(), String> {
        let mut all = Vec::new();
        for i in (0..self.up.len()).filter(|&i| self.up[i]) {
            let waiting = self.states[i].transfers_waiting();
            all.extend(
                waiting
                    .into_iter()
                    .filter(|t| t.from == name(i))
                    .map(|t| (i, t)),
            );
        }
        let (i, t) = all
            .get(k % all.len().max(1))
            .ok_or("nothing to hand off")?
            .clone();
        self.states[i]
            .transfer_complete(t.partition, &t.from, &t.to)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn write(
        &mut self,
        by: usize,
        f: impl FnOnce(&mut ClusterState, eddy_cluster::Stamp),
    ) -> Result<(), String> {
        if !self.up[by] {
            return Err("down".into());
        }
        let stamp = self.states[by]
            .metadata()
            .next_stamp(&name(by), self.now_ms);
        f(&mut self.states[by], stamp);
        Ok(())
    }
}
