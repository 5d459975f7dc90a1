//! Last-writer-wins registers for bucket types and bucket props: the one
//! store of bucket metadata (design note 026). The cluster's state holds
//! them (every member's writes, merged by gossip and saved in
//! `cluster.json`); the node's [`BucketRegistry`](crate::types::
//! BucketRegistry) serves what they hold.
//!
//! Any node may write an entry; the entry with the higher [`Stamp`] wins
//! every merge. A stamp is a hybrid time: wall-clock milliseconds, a
//! counter that orders writes within one millisecond (and keeps a node's
//! stamps rising when its clock is behind the newest stamp it has seen),
//! and the writing node, so two nodes never produce the same stamp.
//! Stamps are ordered by their [`StampKey`] (time, counter and a fixed
//! 64-bit hash of the writer's name), then by the name: a put carries the
//! keys of its bucket props' stamps (design note 010 §2), and a replica
//! orders them as the registers do.
//!
//! Invariants: merging registers is commutative, associative and
//! idempotent (equal stamps with different contents, which a correct
//! writer never makes, are ordered by content so merges still agree); a
//! reset is a tombstone entry, not a removal, so it wins over older writes.
//! A register's JSON is what it was when its content was untyped JSON
//! (objects with sorted keys), so `cluster.json` files and the states
//! gossip carries read the same in every version.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use eddy_ring::NodeName;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::MetadataChange;
use crate::props::PropsPatch;
use crate::types::TypeEntry;

/// The bucket metadata registers: a type's entry by type name, a bucket's
/// props patch by type and bucket name (in hex).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketMetadata {
    pub bucket_types: Registers<TypeEntry>,
    pub bucket_props: BTreeMap<String, Registers<PropsPatch>>,
}

impl BucketMetadata {
    /// A stamp for a write by `node` at `now_ms`, newer than every stamp
    /// these registers hold.
    pub fn next_stamp(&self, node: &NodeName, now_ms: u64) -> Stamp {
        let newest = newest_stamp(std::iter::once(&self.bucket_types))
            .into_iter()
            .chain(newest_stamp(self.bucket_props.values()))
            .max();
        Stamp::after(newest, now_ms, node)
    }

    /// Writes a type's entry. Returns whether the registers changed (an
    /// older stamp than the entry's changes nothing).
    pub fn set_bucket_type(&mut self, name: &str, entry: TypeEntry, stamp: Stamp) -> bool {
        let entry = Register {
            props: entry,
            deleted: false,
            stamp,
        };
        put_register(&mut self.bucket_types, name, entry)
    }

    /// Writes a bucket's own props, or with `None` resets them (a
    /// tombstone entry). Returns whether the registers changed.
    pub fn set_bucket_props(
        &mut self,
        bucket_type: &str,
        bucket: &str,
        patch: Option<PropsPatch>,
        stamp: Stamp,
    ) -> bool {
        let deleted = patch.is_none();
        let entry = Register {
            props: patch.unwrap_or_default(),
            deleted,
            stamp,
        };
        let map = self.bucket_props.entry(bucket_type.to_owned()).or_default();
        put_register(map, bucket, entry)
    }

    /// Writes a local change with `stamp`. Returns whether the registers
    /// changed.
    pub fn write(&mut self, change: MetadataChange, stamp: Stamp) -> bool {
        match change {
            MetadataChange::Type { name, entry } => self.set_bucket_type(&name, entry, stamp),
            MetadataChange::Bucket {
                bucket_type,
                bucket,
                patch,
            } => self.set_bucket_props(&bucket_type, &bucket, patch, stamp),
        }
    }

    /// Merges `other` into `self`. Returns whether `self` changed.
    pub fn merge(&mut self, other: &BucketMetadata) -> bool {
        let mut changed = merge_registers(&mut self.bucket_types, &other.bucket_types);
        for (bucket_type, props) in &other.bucket_props {
            let ours = self.bucket_props.entry(bucket_type.clone()).or_default();
            changed |= merge_registers(ours, props);
        }
        changed
    }
}

/// When and by whom a register was written: ordered by [`StampKey`], then
/// node.
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

/// A stamp as a put carries it and a node's registry orders entries by:
/// time, counter, then the writer's key (FNV-1a of its name). Two stamps
/// with equal keys are the same stamp but for a 2^-64 chance.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct StampKey {
    pub time_ms: u64,
    pub counter: u32,
    pub writer: u64,
}

impl Ord for Stamp {
    fn cmp(&self, other: &Stamp) -> Ordering {
        self.key()
            .cmp(&other.key())
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

    /// This stamp's key.
    pub fn key(&self) -> StampKey {
        StampKey {
            time_ms: self.time_ms,
            counter: self.counter,
            writer: self.writer_key(),
        }
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

/// One entry: its content (a type's [`TypeEntry`](crate::types::TypeEntry),
/// a bucket's [`PropsPatch`](crate::props::PropsPatch)), whether it was
/// reset, and the stamp of the write.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de> + Default"))]
pub struct Register<T> {
    /// The content; a reset's is the default (written `null` by versions
    /// whose content was untyped JSON).
    #[serde(deserialize_with = "null_as_default")]
    pub props: T,
    /// A reset (Riak's `reset_bucket`): the entry is a tombstone.
    pub deleted: bool,
    /// When and by whom it was written.
    pub stamp: Stamp,
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

impl<T: Serialize + Default + PartialEq> Serialize for Register<T> {
    /// A reset's content is written `null`, as it always was.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Register", 3)?;
        match self.is_bare_reset() {
            true => st.serialize_field("props", &())?,
            false => st.serialize_field("props", &self.props)?,
        }
        st.serialize_field("deleted", &self.deleted)?;
        st.serialize_field("stamp", &self.stamp)?;
        st.end()
    }
}

impl<T: Serialize + Default + PartialEq> Register<T> {
    /// A reset with no content (written `null`).
    fn is_bare_reset(&self) -> bool {
        self.deleted && self.props == T::default()
    }

    /// Whether `self` wins over `other`: the higher stamp, and for equal
    /// stamps the greater content, so every node picks the same entry.
    pub fn wins_over(&self, other: &Register<T>) -> bool {
        match self.stamp.cmp(&other.stamp) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => self.content_key() > other.content_key(),
        }
    }

    /// A total order on contents for the tie-break: the JSON text, whose
    /// objects have sorted keys, so it is the same on every node.
    fn content_key(&self) -> (bool, String) {
        let text = match self.is_bare_reset() {
            true => "null".to_string(),
            false => serde_json::to_string(&self.props).unwrap_or_default(),
        };
        (self.deleted, text)
    }
}

/// Named registers, merged entry by entry.
pub type Registers<T> = BTreeMap<String, Register<T>>;

/// Writes `entry` under `name` unless the entry already there wins over it.
/// Returns whether the map changed.
pub fn put_register<T: Serialize + Default + PartialEq>(
    map: &mut Registers<T>,
    name: &str,
    entry: Register<T>,
) -> bool {
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
pub fn merge_registers<T: Serialize + Default + PartialEq + Clone>(
    map: &mut Registers<T>,
    other: &Registers<T>,
) -> bool {
    let mut changed = false;
    for (name, entry) in other {
        changed |= put_register(map, name, entry.clone());
    }
    changed
}

/// The newest stamp among `maps`.
pub fn newest_stamp<'a, T: 'a>(
    maps: impl IntoIterator<Item = &'a Registers<T>>,
) -> Option<&'a Stamp> {
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

    fn reg(
        time_ms: u64,
        counter: u32,
        n: &str,
        v: serde_json::Value,
    ) -> Register<serde_json::Value> {
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
            let mut map = Registers::<serde_json::Value>::new();
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

    #[test]
    fn typed_registers_write_the_json_untyped_ones_did() {
        let stamp = Stamp {
            time_ms: 1,
            counter: 0,
            node: node("a@h"),
        };
        let mut m = BucketMetadata::default();
        let patch: PropsPatch =
            serde_json::from_value(json!({"n_val": 2, "allow_mult": true})).expect("a patch");
        let entry = TypeEntry {
            patch: patch.clone(),
            status: crate::types::TypeStatus::Active,
        };
        m.set_bucket_type("t", entry, stamp.clone());
        m.set_bucket_props("t", "62", Some(patch), stamp.clone());
        m.set_bucket_props("t", "63", None, stamp);
        let text = serde_json::to_string(&m).unwrap();
        let stamp_json = r#""stamp":{"time_ms":1,"counter":0,"node":"a@h"}"#;
        let expected = format!(
            r#"{{"bucket_types":{{"t":{{"props":{{"patch":{{"allow_mult":true,"n_val":2}},"status":"active"}},"deleted":false,{stamp_json}}}}},"bucket_props":{{"t":{{"62":{{"props":{{"allow_mult":true,"n_val":2}},"deleted":false,{stamp_json}}},"63":{{"props":null,"deleted":true,{stamp_json}}}}}}}}}"#
        );
        assert_eq!(text, expected);
        let back: BucketMetadata = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }
}
