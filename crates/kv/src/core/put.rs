//! When a put has enough replies, and what it answers.
//!
//! Besides Riak's w, dw and pw, a put may need `node_confirms`: that many
//! distinct physical nodes among the vnodes that applied it (Riak's
//! `{node_confirms_val_unsatisfied, Needed, Got}` when it cannot be met).
//! Fallbacks on one node, or every vnode of a one-node cluster, count once.

use eddy_model::error::PutFailure;

/// Which physical node a reply came from: any number the coordinator gives
/// each node of the preflist (its place in the member list, say); only
/// equality matters.
pub type NodeIndex = u32;

/// What one vnode said about a put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutReply {
    /// Applied on `node`; `durable` when synced to stable storage before
    /// replying.
    Ok {
        node: NodeIndex,
        primary: bool,
        durable: bool,
    },
    /// The vnode could not apply it.
    Failed { primary: bool },
}

/// The state of one coordinated put.
#[derive(Clone, Debug)]
pub struct PutCore {
    n: u32,
    w: u32,
    dw: u32,
    pw: u32,
    node_confirms: u32,
    ok: u32,
    durable: u32,
    primary_ok: u32,
    /// The distinct nodes among the replies that applied the write.
    nodes: Vec<NodeIndex>,
    replies: u32,
}

impl PutCore {
    /// A put to `n` vnodes needing `w`, `dw` and `pw` replies (already
    /// checked against n_val). `w` is raised to at least `dw`, as in Riak.
    pub fn new(n: u32, w: u32, dw: u32, pw: u32) -> Self {
        PutCore {
            n,
            w: w.max(dw),
            dw,
            pw,
            node_confirms: 0,
            ok: 0,
            durable: 0,
            primary_ok: 0,
            nodes: Vec::new(),
            replies: 0,
        }
    }

    /// Also needs `node_confirms` distinct nodes among the replies that
    /// applied the write (already checked against n_val; 0: none).
    pub fn with_node_confirms(mut self, node_confirms: u32) -> Self {
        self.node_confirms = node_confirms;
        self
    }

    /// Records one vnode's reply.
    pub fn add_result(&mut self, reply: PutReply) {
        self.replies += 1;
        if let PutReply::Ok {
            node,
            primary,
            durable,
        } = reply
        {
            self.ok += 1;
            self.durable += u32::from(durable);
            self.primary_ok += u32::from(primary);
            if !self.nodes.contains(&node) {
                self.nodes.push(node);
            }
        }
    }

    fn confirmed_nodes(&self) -> u32 {
        self.nodes.len() as u32
    }

    /// Each quorum with what it needs and what it has, in the order a
    /// failure is reported.
    fn quorums(&self) -> [PutFailure; 4] {
        [
            PutFailure::W {
                needed: self.w,
                got: self.ok,
            },
            PutFailure::Dw {
                needed: self.dw,
                got: self.durable,
            },
            PutFailure::Pw {
                needed: self.pw,
                got: self.primary_ok,
            },
            PutFailure::NodeConfirms {
                needed: self.node_confirms,
                got: self.confirmed_nodes(),
            },
        ]
    }

    fn met(&self) -> bool {
        self.quorums().iter().all(|q| {
            let (needed, got) = counts(q);
            got >= needed
        })
    }

    /// The first quorum that can no longer be met, if any: each reply still
    /// to come adds at most one to each count (one new node at most).
    fn unreachable(&self) -> Option<PutFailure> {
        let left = self.n - self.replies.min(self.n);
        self.quorums().into_iter().find(|q| {
            let (needed, got) = counts(q);
            got + left < needed
        })
    }

    /// True once the answer is known.
    pub fn enough(&self) -> bool {
        self.met() || self.unreachable().is_some()
    }

    /// The answer so far: `Ok` when every quorum is met, else the first
    /// unmet one (also what a timeout reports).
    pub fn response(&self) -> Result<(), PutFailure> {
        if self.met() {
            return Ok(());
        }
        let unmet = || {
            self.quorums().into_iter().find(|q| {
                let (needed, got) = counts(q);
                got < needed
            })
        };
        Err(self.unreachable().or_else(unmet).unwrap_or(PutFailure::W {
            needed: self.w,
            got: self.ok,
        }))
    }
}

/// What a quorum needs and what it has.
fn counts(q: &PutFailure) -> (u32, u32) {
    match *q {
        PutFailure::W { needed, got }
        | PutFailure::Dw { needed, got }
        | PutFailure::Pw { needed, got }
        | PutFailure::NodeConfirms { needed, got } => (needed, got),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OK: PutReply = PutReply::Ok {
        node: 0,
        primary: true,
        durable: true,
    };
    const NOT_DURABLE: PutReply = PutReply::Ok {
        node: 0,
        primary: true,
        durable: false,
    };
    const FAIL: PutReply = PutReply::Failed { primary: true };

    fn ok_on(node: NodeIndex) -> PutReply {
        PutReply::Ok {
            node,
            primary: true,
            durable: true,
        }
    }

    #[test]
    fn quorum_of_three() {
        let mut c = PutCore::new(3, 2, 2, 0);
        c.add_result(OK);
        assert!(!c.enough());
        c.add_result(OK);
        assert!(c.enough());
        assert_eq!(c.response(), Ok(()));
    }

    #[test]
    fn fails_as_soon_as_unreachable() {
        let mut c = PutCore::new(3, 2, 0, 0);
        c.add_result(FAIL);
        assert!(!c.enough());
        c.add_result(FAIL);
        assert!(c.enough());
        assert_eq!(c.response(), Err(PutFailure::W { needed: 2, got: 0 }));
    }

    #[test]
    fn dw_needs_durable_replies() {
        let mut c = PutCore::new(3, 1, 3, 0);
        c.add_result(OK);
        c.add_result(NOT_DURABLE);
        assert!(c.enough());
        assert_eq!(c.response(), Err(PutFailure::Dw { needed: 3, got: 1 }));
    }

    #[test]
    fn pw_counts_primaries_only() {
        let mut c = PutCore::new(3, 1, 0, 2);
        let fallback = PutReply::Ok {
            node: 1,
            primary: false,
            durable: false,
        };
        c.add_result(fallback);
        c.add_result(fallback);
        assert!(c.enough());
        assert_eq!(c.response(), Err(PutFailure::Pw { needed: 2, got: 0 }));
    }

    /// Riak's benchmark driver sets node_confirms = 2: one node holding
    /// every replica can never satisfy it.
    #[test]
    fn node_confirms_on_one_node_fails_once_every_replica_answered() {
        let mut c = PutCore::new(3, 2, 0, 0).with_node_confirms(2);
        c.add_result(ok_on(0));
        c.add_result(ok_on(0));
        assert!(!c.enough(), "the third replica might be on another node");
        c.add_result(ok_on(0));
        assert!(c.enough());
        let failure = PutFailure::NodeConfirms { needed: 2, got: 1 };
        assert_eq!(c.response(), Err(failure));
    }

    #[test]
    fn node_confirms_waits_for_a_second_node() {
        let mut c = PutCore::new(3, 1, 0, 0).with_node_confirms(2);
        c.add_result(ok_on(4));
        assert!(!c.enough(), "w = 1 is met, node_confirms is not");
        c.add_result(FAIL);
        assert!(!c.enough());
        c.add_result(ok_on(9));
        assert!(c.enough());
        assert_eq!(c.response(), Ok(()));
    }

    fn reply() -> impl Strategy<Value = PutReply> {
        prop_oneof![
            (0u32..3, any::<bool>(), any::<bool>()).prop_map(|(node, primary, durable)| {
                PutReply::Ok {
                    node,
                    primary,
                    durable,
                }
            }),
            any::<bool>().prop_map(|primary| PutReply::Failed { primary }),
        ]
    }

    proptest! {
        /// Once enough, more replies never change whether the put
        /// succeeds; after all n replies the core is always enough;
        /// success means every quorum is met by the replies counted, and a
        /// node_confirms failure reports the distinct nodes that applied
        /// the write.
        #[test]
        fn answer_is_stable_and_sound(w in 0u32..4, dw in 0u32..4, pw in 0u32..4, nc in 0u32..4,
                                      replies in proptest::collection::vec(reply(), 3)) {
            let mut c = PutCore::new(3, w, dw, pw).with_node_confirms(nc);
            let mut first = None;
            for r in &replies {
                c.add_result(*r);
                if c.enough() && first.is_none() {
                    first = Some(c.response());
                }
            }
            prop_assert!(c.enough());
            let first = first.unwrap();
            prop_assert_eq!(first.is_ok(), c.response().is_ok());
            let applied = || replies.iter().filter_map(|r| match r {
                PutReply::Ok { node, primary, durable } => Some((*node, *primary, *durable)),
                PutReply::Failed { .. } => None,
            });
            let ok = applied().count() as u32;
            let durable = applied().filter(|r| r.2).count() as u32;
            let prim = applied().filter(|r| r.1).count() as u32;
            let nodes = applied().map(|r| r.0).collect::<std::collections::BTreeSet<_>>().len() as u32;
            let possible = ok >= w.max(dw) && durable >= dw && prim >= pw && nodes >= nc;
            prop_assert_eq!(c.response().is_ok(), possible);
            if let Err(PutFailure::NodeConfirms { needed, got }) = c.response() {
                prop_assert_eq!((needed, got), (nc, nodes));
            }
        }
    }
}
