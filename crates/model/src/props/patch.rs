//! [`PropsPatch`]: a change to a bucket's or a bucket type's props, typed.
//!
//! A patch holds one `Option` per property [`BucketProps`] interprets
//! (`None`: not set), the bucket's `generation` (set only by dropping it),
//! and `extra`, the properties Eddy keeps uninterpreted. It is parsed once
//! at the edge ([`PropsPatch::from_json`] for HTTP, eddy-api's
//! `patch_from_pb` for PB), applied by [`BucketProps::patched`], and
//! folded into the stored patch by [`PropsPatch::merge`].
//!
//! Invariants:
//! - The serde form is the one the cluster's registers hold (and
//!   `meta/buckets.json` held): a JSON object in Riak's names holding only
//!   the keys set, in sorted order, `extra` among them, the same text an
//!   untyped patch was written as (pinned by `tests/fixtures/buckets_v1.json`),
//!   except that a quorum written as a numeric string (`"2"`) is written
//!   back as a number.
//! - `extra` never holds the name of a typed property. It may hold a
//!   computed key ([`COMPUTED`]) read from a stored patch (such patches
//!   once kept what a client sent, `name` and `active` included), and
//!   `generation` when its stored value is not a count; neither is applied.
//! - A property whose value does not parse is refused, naming the property;
//!   [`PropsPatch::from_json`] names every one.

use std::collections::BTreeMap;

use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{BucketProps, COMPUTED, GENERATION, ModFun, PropsError, SyncOnWrite, Ttl};
use crate::quorum::Quorum;

/// Declares [`PropsPatch`] with one `Option` per typed property, and the
/// code that must name every one of them (parse, merge, apply), so a new
/// property is added in one place.
macro_rules! props_patch {
    ($($(#[doc = $doc:literal])* $field:ident: $ty:ty,)*) => {
        /// A change to props: each property set, in Riak's names.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct PropsPatch {
            $(
                $(#[doc = $doc])*
                pub $field: Option<$ty>,
            )*
            /// How many times the bucket was dropped (design note 018); set
            /// only by a drop, never by a client, and not applied by
            /// [`BucketProps::patched`].
            pub generation: Option<u64>,
            /// Properties Eddy keeps without interpreting them.
            pub extra: BTreeMap<String, Value>,
        }

        impl Serialize for PropsPatch {
            /// The keys set, in sorted order (as the untyped JSON object
            /// was written: register tie-breaks and state digests hash
            /// this text).
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map: BTreeMap<&str, Value> = BTreeMap::new();
                $(
                    if let Some(value) = &self.$field {
                        let value = serde_json::to_value(value).map_err(S::Error::custom)?;
                        map.insert(stringify!($field), value);
                    }
                )*
                for (name, value) in &self.extra {
                    map.insert(name, value.clone());
                }
                if let Some(generation) = self.generation {
                    map.insert(GENERATION, generation.into());
                }
                map.serialize(s)
            }
        }

        /// The names of the typed properties of a patch.
        pub const TYPED: &[&str] = &[$(stringify!($field)),*];

        impl PropsPatch {
            /// Sets typed property `name` from `value`; `Ok(false)` if
            /// `name` is not one.
            fn set_typed(&mut self, name: &str, value: &Value) -> Result<bool, serde_json::Error> {
                match name {
                    $(stringify!($field) => self.$field = Some(<$ty>::deserialize(value)?),)*
                    _ => return Ok(false),
                }
                Ok(true)
            }

            /// True if typed property `name` is set.
            pub fn sets(&self, name: &str) -> bool {
                match name {
                    $(stringify!($field) => self.$field.is_some(),)*
                    _ => false,
                }
            }

            /// Sets each typed property `other` sets to its value there.
            fn merge_typed(&mut self, other: &PropsPatch) {
                $(
                    if other.$field.is_some() {
                        self.$field.clone_from(&other.$field);
                    }
                )*
            }

            /// Writes each typed property set here into `props`.
            fn apply_typed(&self, props: &mut BucketProps) {
                $(
                    if let Some(value) = &self.$field {
                        props.$field.clone_from(value);
                    }
                )*
            }
        }
    };
}

props_patch! {
    n_val: u32,
    allow_mult: bool,
    last_write_wins: bool,
    precommit: Vec<Value>,
    postcommit: Vec<Value>,
    chash_keyfun: ModFun,
    linkfun: ModFun,
    old_vclock: u32,
    young_vclock: u32,
    big_vclock: u32,
    small_vclock: u32,
    pr: Quorum,
    r: Quorum,
    w: Quorum,
    pw: Quorum,
    dw: Quorum,
    rw: Quorum,
    basic_quorum: bool,
    notfound_ok: bool,
    dvv_enabled: bool,
    write_once: bool,
    node_confirms: Quorum,
    sync_on_write: SyncOnWrite,
    /// `Some(None)`: `null`, the property unset over the type's value.
    backend: Option<String>,
    /// `Some(None)`: `null`, no data type.
    datatype: Option<String>,
    /// `Some(None)`: `null`; an `hll` type then gets the default precision.
    hll_precision: Option<u32>,
    consistent: bool,
    /// `Some(None)`: `null`, no ttl.
    ttl: Option<Ttl>,
}

impl PropsPatch {
    /// An empty patch (changes nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// A client's patch from Riak's JSON props: the computed keys Riak
    /// reports (`name`, `active`, `claimant`, `has_precommit`,
    /// `has_postcommit`, `generation`) are dropped; a property that does
    /// not parse is refused, each one named with serde's reason.
    pub fn from_json(json: &Map<String, Value>) -> Result<PropsPatch, PropsError> {
        let set = json.iter().filter(|(k, _)| !COMPUTED.contains(&k.as_str()));
        parse(set)
    }

    /// A stored patch: what [`PropsPatch::from_json`] reads, plus the
    /// generation, and the computed keys kept in `extra` as stored.
    fn from_stored(json: &Map<String, Value>) -> Result<PropsPatch, PropsError> {
        let mut patch = parse(json.iter().filter(|(k, _)| *k != GENERATION))?;
        if let Some(generation) = json.get(GENERATION) {
            match generation.as_u64() {
                Some(n) => patch.generation = Some(n),
                None => {
                    patch.extra.insert(GENERATION.into(), generation.clone());
                }
            }
        }
        Ok(patch)
    }

    /// Folds `other` into this patch, as if both were applied in turn:
    /// each property `other` sets wins, `extra` is merged key by key.
    pub fn merge(&mut self, other: &PropsPatch) {
        self.merge_typed(other);
        if other.generation.is_some() {
            self.generation = other.generation;
            self.extra.remove(GENERATION);
        }
        for (name, value) in &other.extra {
            if name == GENERATION {
                self.generation = None;
            }
            self.extra.insert(name.clone(), value.clone());
        }
    }

    /// This patch in its stored form (see the module's invariants). It
    /// cannot fail to serialise: every key is a string.
    pub fn to_json(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// Writes every property set here into `props`, except the generation
    /// and any computed key a stored patch kept.
    pub(super) fn apply_to(&self, props: &mut BucketProps) {
        self.apply_typed(props);
        let kept = self
            .extra
            .iter()
            .filter(|(k, _)| !COMPUTED.contains(&k.as_str()));
        for (name, value) in kept {
            props.extra.insert(name.clone(), value.clone());
        }
    }
}

/// Parses `entries` (no generation among them) into a patch, naming each
/// typed property that does not parse.
fn parse<'a>(
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
) -> Result<PropsPatch, PropsError> {
    let mut patch = PropsPatch::default();
    let mut refused = Vec::new();
    for (name, value) in entries {
        match patch.set_typed(name, value) {
            Ok(true) => {}
            Ok(false) => {
                patch.extra.insert(name.clone(), value.clone());
            }
            Err(e) => refused.push((name.clone(), e.to_string())),
        }
    }
    match refused.is_empty() {
        true => Ok(patch),
        false => Err(PropsError(refused)),
    }
}

/// Reads the stored form (see the module's invariants).
impl<'de> Deserialize<'de> for PropsPatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PropsPatch, D::Error> {
        let json = Map::<String, Value>::deserialize(d)?;
        PropsPatch::from_stored(&json).map_err(serde::de::Error::custom)
    }
}
