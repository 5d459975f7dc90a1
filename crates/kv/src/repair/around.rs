//! Reading around damaged replicas (pure).
//!
//! A replica whose partition is marked damaged may have lost a tombstone
//! or a newer value, so what it holds can be a deleted key or an older
//! value. While at least one healthy replica answered, a damaged replica's
//! object is used only if it adds nothing new (the healthy replicas'
//! merge already descends from it); otherwise its reply counts as failed.
//! A damaged replica's not-found adds nothing and is kept. When every
//! replica is damaged there is nothing better to read: the replies are
//! used as they are.

use eddy_object::{RiakObject, merge};

/// One replica's reply to a read, and whether its partition is marked.
pub struct ReplicaRead<R> {
    pub reply: R,
    pub marked: bool,
}

/// What a damaged replica's reply becomes.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Used as it is.
    Keep,
    /// Counted as a failed reply: it might bring back lost history.
    Distrust,
}

/// Decides, for each reply (`found(reply)` gives its object, if any),
/// whether it is used; healthy replies are always kept.
pub fn verdicts<R>(
    reads: &[ReplicaRead<R>],
    found: impl Fn(&R) -> Option<&RiakObject>,
) -> Vec<Verdict> {
    // Nothing marked (the usual case) or nothing healthy: nothing to judge.
    let marked = reads.iter().filter(|r| r.marked).count();
    if marked == 0 || marked == reads.len() {
        return reads.iter().map(|_| Verdict::Keep).collect();
    }
    let healthy = reads
        .iter()
        .filter(|r| !r.marked)
        .filter_map(|r| found(&r.reply))
        .fold(None::<RiakObject>, |acc, o| match acc {
            Some(m) => Some(merge::merge(&m, o)),
            None => Some(o.clone()),
        });
    reads
        .iter()
        .map(|r| match (r.marked, found(&r.reply)) {
            (false, _) | (true, None) => Verdict::Keep,
            (true, Some(o)) => match &healthy {
                Some(h) if merge::descends(h, o) => Verdict::Keep,
                _ => Verdict::Distrust,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_object::{Actor, Content};

    fn written(actor: u64, values: &[&str]) -> RiakObject {
        let mut o = RiakObject::default();
        for v in values {
            let ctx = o.vv.clone();
            merge::update(
                &mut o,
                &ctx,
                Actor(actor),
                Content::new(v.as_bytes().to_vec()),
            );
        }
        o
    }

    fn read(obj: Option<RiakObject>, marked: bool) -> ReplicaRead<Option<RiakObject>> {
        ReplicaRead { reply: obj, marked }
    }

    fn judge(reads: &[ReplicaRead<Option<RiakObject>>]) -> Vec<Verdict> {
        verdicts(reads, |r| r.as_ref())
    }

    #[test]
    fn a_damaged_older_value_is_kept_when_healthy_replicas_descend_from_it() {
        let old = written(1, &["a"]);
        let new = written(1, &["a", "b"]);
        let v = judge(&[read(Some(new.clone()), false), read(Some(old), true)]);
        assert_eq!(v, vec![Verdict::Keep, Verdict::Keep]);
    }

    #[test]
    fn a_damaged_value_the_healthy_replicas_do_not_have_is_distrusted() {
        // The healthy replicas reaped the key; the damaged one lost its
        // tombstone and shows the value from before the delete.
        let v = judge(&[
            read(None, false),
            read(None, false),
            read(Some(written(1, &["a"])), true),
        ]);
        assert_eq!(v, vec![Verdict::Keep, Verdict::Keep, Verdict::Distrust]);
        // A concurrent (unseen) value is distrusted as well.
        let v = judge(&[
            read(Some(written(1, &["a"])), false),
            read(Some(written(2, &["x"])), true),
        ]);
        assert_eq!(v[1], Verdict::Distrust);
    }

    #[test]
    fn with_every_replica_damaged_every_reply_is_used() {
        let v = judge(&[read(Some(written(1, &["a"])), true), read(None, true)]);
        assert_eq!(v, vec![Verdict::Keep, Verdict::Keep]);
    }
}
