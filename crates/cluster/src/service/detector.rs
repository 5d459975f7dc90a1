//! The failure detector's table: which members are up, as plain data over
//! instants the caller passes in (so paused or simulated time drives it).
//!
//! A member is up from the moment it becomes known (a grace period: a node
//! that just learned of a member has not had the chance to hear from it)
//! and after every sign of life: an ack to a probe, direct or indirect, or
//! a probe from it. It is down when its connection was refused or lost
//! ([`Detector::failed`]: a killed process, at once) or when nothing was
//! heard from it for `down_after` ([`Detector::tick`]: a partition, a hung
//! process).
//!
//! Invariants: this node is always up to itself; a node that is not a
//! member is never up; an epoch is reported only for a member that is up.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use eddy_ring::NodeName;
use tokio::time::Instant;

/// What the detector knows of one member.
#[derive(Clone, Debug)]
struct Health {
    up: bool,
    last_heard: Instant,
    epoch: Option<u64>,
}

/// Up or down for every member but this node.
#[derive(Debug)]
pub(crate) struct Detector {
    me: NodeName,
    down_after: Duration,
    peers: BTreeMap<NodeName, Health>,
}

impl Detector {
    pub(crate) fn new(me: NodeName, down_after: Duration) -> Detector {
        Detector {
            me,
            down_after,
            peers: BTreeMap::new(),
        }
    }

    /// Tracks exactly `members` (but this node): new ones start up, with
    /// `now` as the last time heard; others are forgotten.
    pub(crate) fn set_members<'a>(
        &mut self,
        members: impl IntoIterator<Item = &'a NodeName>,
        now: Instant,
    ) {
        let wanted: BTreeSet<&NodeName> = members.into_iter().filter(|n| **n != self.me).collect();
        self.peers.retain(|n, _| wanted.contains(n));
        for n in wanted {
            self.peers.entry(n.clone()).or_insert(Health {
                up: true,
                last_heard: now,
                epoch: None,
            });
        }
    }

    /// A sign of life from `node` at `now`, holding `epoch`. Returns
    /// whether it came up by it.
    pub(crate) fn heard(&mut self, node: &NodeName, epoch: u64, now: Instant) -> bool {
        let Some(h) = self.peers.get_mut(node) else {
            return false;
        };
        let came_up = !h.up;
        h.up = true;
        h.last_heard = h.last_heard.max(now);
        h.epoch = Some(epoch);
        came_up
    }

    /// `node`'s connection was refused or lost. Returns whether it went
    /// down by it.
    pub(crate) fn failed(&mut self, node: &NodeName) -> bool {
        match self.peers.get_mut(node) {
            Some(h) if h.up => {
                h.up = false;
                true
            }
            _ => false,
        }
    }

    /// Marks down every member not heard from for `down_after` before
    /// `now`. Returns those that went down.
    pub(crate) fn tick(&mut self, now: Instant) -> Vec<NodeName> {
        let mut down = Vec::new();
        for (n, h) in &mut self.peers {
            if h.up && now.saturating_duration_since(h.last_heard) >= self.down_after {
                h.up = false;
                down.push(n.clone());
            }
        }
        down
    }

    pub(crate) fn is_up(&self, node: &NodeName) -> bool {
        *node == self.me || self.peers.get(node).is_some_and(|h| h.up)
    }

    /// The epoch `node` last reported, while it is up.
    pub(crate) fn epoch(&self, node: &NodeName) -> Option<u64> {
        self.peers.get(node).filter(|h| h.up).and_then(|h| h.epoch)
    }

    /// The members that are up, this node included.
    pub(crate) fn up_set(&self) -> BTreeSet<NodeName> {
        let peers = self.peers.iter().filter(|(_, h)| h.up).map(|(n, _)| n);
        peers.chain([&self.me]).cloned().collect()
    }

    /// The members tracked, this node excluded.
    pub(crate) fn peers(&self) -> Vec<NodeName> {
        self.peers.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Event {
        Advance(u64),
        Heard(usize, u64),
        Failed(usize),
        Tick,
        Members(Vec<bool>),
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            (1u64..800).prop_map(Event::Advance),
            (0usize..4, 0u64..9).prop_map(|(i, e)| Event::Heard(i, e)),
            (0usize..4).prop_map(Event::Failed),
            Just(Event::Tick),
            proptest::collection::vec(any::<bool>(), 4).prop_map(Event::Members),
        ]
    }

    fn name(i: usize) -> NodeName {
        NodeName(format!("n{i}@h"))
    }

    /// The model: per node, whether a member, the time of the last sign of
    /// life, a failure since then, the last tick's verdict.
    #[derive(Clone, Default)]
    struct Model {
        member: bool,
        up: bool,
        heard_ms: u64,
        epoch: Option<u64>,
    }

    proptest! {
        #[test]
        fn agrees_with_a_model(events in proptest::collection::vec(event(), 1..80)) {
            const DOWN_AFTER_MS: u64 = 1000;
            let start = Instant::now();
            let mut d = Detector::new(name(0), Duration::from_millis(DOWN_AFTER_MS));
            let mut model = vec![Model::default(); 4];
            let mut now_ms = 0;
            for e in events {
                let now = start + Duration::from_millis(now_ms);
                match e {
                    Event::Advance(ms) => now_ms += ms,
                    Event::Heard(i, epoch) => {
                        d.heard(&name(i), epoch, now);
                        let m = &mut model[i];
                        if m.member && i != 0 {
                            *m = Model { member: true, up: true, heard_ms: now_ms, epoch: Some(epoch) };
                        }
                    }
                    Event::Failed(i) => {
                        d.failed(&name(i));
                        model[i].up = false;
                    }
                    Event::Tick => {
                        d.tick(now);
                        for m in &mut model {
                            if now_ms - m.heard_ms >= DOWN_AFTER_MS {
                                m.up = false;
                            }
                        }
                    }
                    Event::Members(set) => {
                        let names: Vec<NodeName> =
                            (0..4).filter(|i| set[*i]).map(name).collect();
                        d.set_members(&names, now);
                        for (i, m) in model.iter_mut().enumerate() {
                            if !set[i] || i == 0 {
                                *m = Model::default();
                            } else if !m.member {
                                *m = Model { member: true, up: true, heard_ms: now_ms, epoch: None };
                            }
                        }
                    }
                }
                for (i, m) in model.iter().enumerate().skip(1) {
                    prop_assert_eq!(d.is_up(&name(i)), m.member && m.up);
                    let epoch = if m.member && m.up { m.epoch } else { None };
                    prop_assert_eq!(d.epoch(&name(i)), epoch);
                }
                prop_assert!(d.is_up(&name(0)));
            }
        }
    }
}
