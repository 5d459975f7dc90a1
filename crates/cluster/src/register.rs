//! Last-writer-wins registers for bucket types and bucket props.
//!
//! Any node may write an entry; the entry with the higher [`Stamp`] wins
//! every merge. A stamp is a hybrid time: wall-clock milliseconds, a
//! counter that orders writes within one millisecond (and keeps a node's
//! stamps rising when its clock is behind the newest stamp it has seen),
//! and the writing node, so two nodes never produce the same stamp.
//! Stamps of one time and counter are ordered by [`Stamp::writer_key`],
//! a fixed 64-bit hash of the writer's name, then by the name: the kv
//! layer, which compares stamps as three numbers (a put carries the
//! stamps of its bucket props), orders them as the cluster does.
//!
//! Invariants: merging registers is commutative, associative and
//! idempotent (equal stamps with different contents, which a correct
//! writer never makes, are ordered by content so merges still agree); a
//! reset is a tombstone entry, not a removal, so it wins over older writes.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use eddy_ring::NodeName;
use serde::{Deserialize, Serialize};

/// When and by whom a register was written: ordered by time, then
/// counter, then the writer's key, then node.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stamp {
    /// Wall-clock time of the write, in milliseconds since the Unix epoch
    /// (or the newest time seen, when the writer's clock is behind).
    pub time_ms: u64,
    /// Orders writes within one `time_ms`.
    pub counter: u32,
    /// The node that wrote.
    pub node: NodeName,
}

impl Ord for Stamp {
    fn cmp(&self, other: &Stamp) -> Ordering {
        (self.time_ms, self.counter, self.writer_key())
            .cmp(&(other.time_ms, other.counter, other.writer_key()))
            .then_with(|| self.node.cmp(&other.node))
    }
}

impl PartialOrd for Stamp {
    fn partial_cmp(&self, other: &Stamp) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Stamp {
    /// The writer's key: FNV-1a (64 bits) of its node name, the same on
    /// every node and in every version.
    pub fn writer_key(&self) -> u64 {
        const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        self.node
            .0
            .bytes()
            .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
    }

    /// The smallest stamp greater than `newest` and not earlier than
    /// `now_ms`, for a write by `node` (a hybrid logical clock's tick).
    pub fn after(newest: Option<&Stamp>, now_ms: u64, node: &NodeName) -> Stamp {
        let (time_ms, counter) = match newest {
            Some(s) if s.time_ms >= now_ms => (s.time_ms, s.counter.saturating_add(1)),
            _ => (now_ms, 0),
        };
        Stamp {
            time_ms,
            counter,
            node: node.clone(),
        }
    }
}

/// One entry: the props as JSON (their meaning belongs to the kv layer),
/// whether they were reset, and the stamp of the write.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Register {
    /// The props (for a bucket type, whatever the kv layer stores: its
    /// status and props).
    pub props: serde_json::Value,
    /// A reset (Riak's `reset_bucket`): the entry is a tombstone.
    pub deleted: bool,
    /// When and by whom it was written.
    pub stamp: Stamp,
}

impl Register {
    /// Whether `self` wins over `other`: the higher stamp, and for equal
    /// stamps the greater content, so every node picks the same entry.
    pub fn wins_over(&self, other: &Register) -> bool {
        match self.stamp.cmp(&other.stamp) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => self.content_key() > other.content_key(),
        }
    }

    /// A total order on contents for the tie-break. serde_json's maps are
    /// sorted, so the text is the same on every node.
    fn content_key(&self) -> (bool, String) {
        (self.deleted, self.props.to_string())
    }
}

/// Named registers, merged entry by entry.
pub type Registers = BTreeMap<String, Register>;

/// Writes `entry` under `name` unless the entry already there wins over it.
/// Returns whether the map changed.
pub fn put_register(map: &mut Registers, name: &str, entry: Register) -> bool {
    match map.get(name) {
        Some(old) if !entry.wins_over(old) => false,
        _ => {
            map.insert(name.to_owned(), entry);
            true
        }
    }
}

/// Merges `other` into `map`, entry by entry. Returns whether `map`
/// changed.
pub fn merge_registers(map: &mut Registers, other: &Registers) -> bool {
    let mut changed = false;
    for (name, entry) in other {
        changed |= put_register(map, name, entry.clone());
    }
    changed
}

/// The newest stamp among `maps`.
pub(crate) fn newest_stamp<'a>(maps: impl IntoIterator<Item = &'a Registers>) -> Option<&'a Stamp> {
    maps.into_iter()
        .flat_map(|m| m.values().map(|r| &r.stamp))
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(n: &str) -> NodeName {
        NodeName(n.to_owned())
    }

    fn reg(time_ms: u64, counter: u32, n: &str, v: serde_json::Value) -> Register {
        Register {
            props: v,
            deleted: false,
            stamp: Stamp {
                time_ms,
                counter,
                node: node(n),
            },
        }
    }

    #[test]
    fn stamp_after_is_greater_than_newest_and_not_before_now() {
        let a = node("a@h");
        let s1 = Stamp::after(None, 100, &a);
        assert_eq!((s1.time_ms, s1.counter), (100, 0));
        let s2 = Stamp::after(Some(&s1), 90, &a);
        assert!(s2 > s1);
        assert_eq!((s2.time_ms, s2.counter), (100, 1));
        let s3 = Stamp::after(Some(&s2), 200, &a);
        assert_eq!((s3.time_ms, s3.counter), (200, 0));
    }

    #[test]
    fn higher_stamp_wins_either_way() {
        let old = reg(1, 0, "a", json!({"n_val": 3}));
        let new = reg(2, 0, "a", json!({"n_val": 5}));
        for order in [[&old, &new], [&new, &old]] {
            let mut map = Registers::new();
            for r in order {
                put_register(&mut map, "b", r.clone());
            }
            assert_eq!(map["b"], new);
        }
    }

    #[test]
    fn stamps_of_one_time_are_ordered_by_writer_key_then_name() {
        let a = Stamp {
            time_ms: 7,
            counter: 1,
            node: node("a@h"),
        };
        let b = Stamp {
            node: node("b@h"),
            ..a.clone()
        };
        // FNV-1a of the empty name is its offset basis; "a" is the known
        // 0xaf63dc4c8601ec8c.
        assert_eq!(
            Stamp {
                node: node(""),
                ..a.clone()
            }
            .writer_key(),
            0xcbf2_9ce4_8422_2325
        );
        assert_eq!(
            Stamp {
                node: node("a"),
                ..a.clone()
            }
            .writer_key(),
            0xaf63_dc4c_8601_ec8c
        );
        let by_key = a.writer_key().cmp(&b.writer_key());
        assert_ne!(by_key, Ordering::Equal);
        assert_eq!(a.cmp(&b), by_key);
        assert_eq!(b.cmp(&a), by_key.reverse());
        let later = Stamp {
            counter: 2,
            ..a.clone()
        };
        assert!(later > a && later > b);
    }

    #[test]
    fn equal_stamps_pick_the_same_entry_in_any_order() {
        let x = reg(5, 0, "a", json!({"n_val": 3}));
        let y = reg(5, 0, "a", json!({"n_val": 4}));
        assert!(y.wins_over(&x));
        assert!(!x.wins_over(&y));
        assert!(!x.wins_over(&x));
    }
}
