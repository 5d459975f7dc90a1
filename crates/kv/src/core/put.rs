//! When a put has enough replies, and what it answers.

/// What one vnode said about a put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutReply {
    /// Applied; `durable` when synced to stable storage before replying.
    Ok { primary: bool, durable: bool },
    /// The vnode could not apply it.
    Failed { primary: bool },
}

/// Why a put did not reach its quorums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutFailure {
    /// Fewer than `w` vnodes applied the write.
    W { needed: u32, got: u32 },
    /// Fewer than `dw` vnodes made it durable.
    Dw { needed: u32, got: u32 },
    /// Fewer than `pw` primaries applied it.
    Pw { needed: u32, got: u32 },
}

/// The state of one coordinated put.
#[derive(Clone, Debug)]
pub struct PutCore {
    n: u32,
    w: u32,
    dw: u32,
    pw: u32,
    ok: u32,
    durable: u32,
    primary_ok: u32,
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
            ok: 0,
            durable: 0,
            primary_ok: 0,
            replies: 0,
        }
    }

    /// Records one vnode's reply.
    pub fn add_result(&mut self, reply: PutReply) {
        self.replies += 1;
        if let PutReply::Ok { primary, durable } = reply {
            self.ok += 1;
            self.durable += u32::from(durable);
            self.primary_ok += u32::from(primary);
        }
    }

    fn met(&self) -> bool {
        self.ok >= self.w && self.durable >= self.dw && self.primary_ok >= self.pw
    }

    /// The first quorum that can no longer be met, if any.
    fn unreachable(&self) -> Option<PutFailure> {
        let left = self.n - self.replies.min(self.n);
        if self.ok + left < self.w {
            return Some(PutFailure::W {
                needed: self.w,
                got: self.ok,
            });
        }
        if self.durable + left < self.dw {
            return Some(PutFailure::Dw {
                needed: self.dw,
                got: self.durable,
            });
        }
        if self.primary_ok + left < self.pw {
            return Some(PutFailure::Pw {
                needed: self.pw,
                got: self.primary_ok,
            });
        }
        None
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
        Err(self.unreachable().unwrap_or(if self.ok < self.w {
            PutFailure::W {
                needed: self.w,
                got: self.ok,
            }
        } else if self.durable < self.dw {
            PutFailure::Dw {
                needed: self.dw,
                got: self.durable,
            }
        } else {
            PutFailure::Pw {
                needed: self.pw,
                got: self.primary_ok,
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OK: PutReply = PutReply::Ok {
        primary: true,
        durable: true,
    };
    const NOT_DURABLE: PutReply = PutReply::Ok {
        primary: true,
        durable: false,
    };
    const FAIL: PutReply = PutReply::Failed { primary: true };

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
        c.add_result(PutReply::Ok {
            primary: false,
            durable: false,
        });
        c.add_result(PutReply::Ok {
            primary: false,
            durable: false,
        });
        assert!(c.enough());
        assert_eq!(c.response(), Err(PutFailure::Pw { needed: 2, got: 0 }));
    }

    fn reply() -> impl Strategy<Value = PutReply> {
        prop_oneof![
            (any::<bool>(), any::<bool>())
                .prop_map(|(primary, durable)| PutReply::Ok { primary, durable }),
            any::<bool>().prop_map(|primary| PutReply::Failed { primary }),
        ]
    }

    proptest! {
        /// Once enough, more replies never change the answer; after all n
        /// replies the core is always enough; success means every quorum
        /// is met by the replies counted.
        #[test]
        fn answer_is_stable_and_sound(w in 0u32..4, dw in 0u32..4, pw in 0u32..4,
                                      replies in proptest::collection::vec(reply(), 3)) {
            let mut c = PutCore::new(3, w, dw, pw);
            let mut first = None;
            for r in &replies {
                c.add_result(*r);
                if c.enough() && first.is_none() {
                    first = Some(c.response());
                }
            }
            prop_assert!(c.enough());
            let first = first.unwrap();
            if first.is_ok() {
                prop_assert_eq!(c.response(), Ok(()));
            }
            let ok = replies.iter().filter(|r| matches!(r, PutReply::Ok { .. })).count() as u32;
            let durable = replies.iter().filter(|r| matches!(r, PutReply::Ok { durable: true, .. })).count() as u32;
            let prim = replies.iter().filter(|r| matches!(r, PutReply::Ok { primary: true, .. })).count() as u32;
            let possible = ok >= w.max(dw) && durable >= dw && prim >= pw;
            prop_assert_eq!(c.response().is_ok(), possible);
        }
    }
}
