//! When a get has enough replies, and what it answers.
//!
//! Riak's rules: a found object counts towards r; a not-found counts
//! towards r only with `notfound_ok`; `pr` counts primaries that answered
//! ok. With `basic_quorum` the get gives up as not found once a majority of
//! the n vnodes failed or said not found. The answer merges every object
//! received; a merged tombstone reads as not found (but keeps its context).

use eddy_object::{RiakObject, merge};

/// What one vnode said about a get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetReply {
    Found { primary: bool, object: RiakObject },
    NotFound { primary: bool },
    Failed { primary: bool },
}

/// The answer of a get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetOutcome {
    /// A live object (possibly with siblings, some of them tombstones).
    Found(RiakObject),
    /// Nothing, or only a tombstone (returned for its causal context).
    NotFound(Option<RiakObject>),
    /// Fewer than `r` vnodes answered ok.
    RUnsatisfied { needed: u32, got: u32 },
    /// Fewer than `pr` primaries answered ok.
    PrUnsatisfied { needed: u32, got: u32 },
}

/// The state of one coordinated get.
#[derive(Clone, Debug)]
pub struct GetCore {
    n: u32,
    r: u32,
    pr: u32,
    notfound_ok: bool,
    basic_quorum: bool,
    ok: u32,
    primary_ok: u32,
    notfound: u32,
    failed: u32,
    merged: Option<RiakObject>,
    answered: u32,
}

impl GetCore {
    /// A get from `n` vnodes needing `r` and `pr` (checked against n_val).
    pub fn new(n: u32, r: u32, pr: u32, notfound_ok: bool, basic_quorum: bool) -> Self {
        GetCore {
            n,
            r,
            pr,
            notfound_ok,
            basic_quorum,
            ok: 0,
            primary_ok: 0,
            notfound: 0,
            failed: 0,
            merged: None,
            answered: 0,
        }
    }

    /// Records one vnode's reply.
    pub fn add_result(&mut self, reply: GetReply) {
        self.answered += 1;
        match reply {
            GetReply::Found { primary, object } => {
                self.count_ok(primary);
                self.merged = Some(match self.merged.take() {
                    // Replicas usually agree: no merge, no allocation.
                    Some(m) if m == object => m,
                    Some(m) => merge::merge(&m, &object),
                    None => object,
                });
            }
            GetReply::NotFound { primary } => {
                self.notfound += 1;
                if self.notfound_ok {
                    self.count_ok(primary);
                }
            }
            GetReply::Failed { .. } => self.failed += 1,
        }
    }

    fn count_ok(&mut self, primary: bool) {
        self.ok += 1;
        self.primary_ok += u32::from(primary);
    }

    fn answered(&self) -> u32 {
        self.answered
    }

    fn met(&self) -> bool {
        self.ok >= self.r && self.primary_ok >= self.pr
    }

    fn hopeless(&self) -> bool {
        let left = self.n.saturating_sub(self.answered());
        let r_lost = self.ok + left < self.r;
        let pr_lost = self.primary_ok + left < self.pr;
        let misses = self.failed + if self.notfound_ok { 0 } else { self.notfound };
        let basic = self.basic_quorum && misses > self.n / 2;
        r_lost || pr_lost || basic
    }

    /// True once the answer is known.
    pub fn enough(&self) -> bool {
        self.met() || self.hopeless() || self.answered() >= self.n
    }

    /// True once every vnode has answered (read repair may start).
    pub fn all_replied(&self) -> bool {
        self.answered() >= self.n
    }

    /// The answer so far (also what a timeout reports). When the quorum is
    /// not met, Riak's order applies: an unmet `pr` first, then not found
    /// (nothing but not-founds, or at least `r` of them), then `r`.
    pub fn response(&self) -> GetOutcome {
        if self.met() {
            return self.found_or_tombstone();
        }
        if self.pr > 0 && self.primary_ok < self.pr {
            return GetOutcome::PrUnsatisfied {
                needed: self.pr,
                got: self.primary_ok,
            };
        }
        let only_notfound = self.notfound > 0 && self.failed == 0;
        if self.merged.is_none() && (only_notfound || self.notfound >= self.r) {
            return GetOutcome::NotFound(None);
        }
        GetOutcome::RUnsatisfied {
            needed: self.r,
            got: self.ok,
        }
    }

    fn found_or_tombstone(&self) -> GetOutcome {
        match &self.merged {
            Some(obj) if !obj.is_deleted() => GetOutcome::Found(obj.clone()),
            other => GetOutcome::NotFound(other.clone()),
        }
    }

    /// The merge of every object received so far.
    pub fn merged(&self) -> Option<&RiakObject> {
        self.merged.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_object::{Actor, Content, VersionVector};

    fn obj(v: u8) -> RiakObject {
        let mut o = RiakObject::default();
        merge::update(
            &mut o,
            &VersionVector::new(),
            Actor(u64::from(v)),
            Content::new(vec![v]),
        );
        o
    }

    fn found(v: u8) -> GetReply {
        GetReply::Found {
            primary: true,
            object: obj(v),
        }
    }

    const NF: GetReply = GetReply::NotFound { primary: true };
    const FAIL: GetReply = GetReply::Failed { primary: true };

    #[test]
    fn quorum_read_merges_siblings() {
        let mut c = GetCore::new(3, 2, 0, true, false);
        c.add_result(found(1));
        assert!(!c.enough());
        c.add_result(found(2));
        assert!(c.enough());
        let GetOutcome::Found(o) = c.response() else {
            panic!()
        };
        assert_eq!(o.siblings.len(), 2);
    }

    #[test]
    fn notfound_ok_counts_notfound() {
        let mut c = GetCore::new(3, 2, 0, true, false);
        c.add_result(NF);
        c.add_result(NF);
        assert!(c.enough());
        assert_eq!(c.response(), GetOutcome::NotFound(None));
    }

    #[test]
    fn notfound_not_ok_waits_for_a_value() {
        let mut c = GetCore::new(3, 2, 0, false, false);
        c.add_result(NF);
        c.add_result(found(1));
        assert!(!c.enough());
        c.add_result(found(1));
        assert!(matches!(c.response(), GetOutcome::Found(_)));
    }

    #[test]
    fn basic_quorum_gives_up_early() {
        let mut c = GetCore::new(3, 2, 0, false, true);
        c.add_result(NF);
        assert!(!c.enough());
        c.add_result(NF);
        assert!(c.enough());
        assert_eq!(c.response(), GetOutcome::NotFound(None));
    }

    #[test]
    fn failures_give_r_unsatisfied() {
        let mut c = GetCore::new(3, 2, 0, true, false);
        c.add_result(FAIL);
        c.add_result(FAIL);
        assert!(c.enough());
        assert_eq!(c.response(), GetOutcome::RUnsatisfied { needed: 2, got: 0 });
    }

    #[test]
    fn pr_needs_primaries() {
        let mut c = GetCore::new(3, 1, 2, true, false);
        c.add_result(GetReply::Found {
            primary: false,
            object: obj(1),
        });
        c.add_result(GetReply::Found {
            primary: false,
            object: obj(1),
        });
        c.add_result(GetReply::Found {
            primary: false,
            object: obj(1),
        });
        assert!(c.enough());
        assert_eq!(
            c.response(),
            GetOutcome::PrUnsatisfied { needed: 2, got: 0 }
        );
    }

    #[test]
    fn tombstone_reads_as_not_found_with_context() {
        let mut t = RiakObject::default();
        merge::update(
            &mut t,
            &VersionVector::new(),
            Actor(1),
            Content::tombstone(5),
        );
        let mut c = GetCore::new(3, 1, 0, true, false);
        c.add_result(GetReply::Found {
            primary: true,
            object: t.clone(),
        });
        assert_eq!(c.response(), GetOutcome::NotFound(Some(t)));
    }
}
