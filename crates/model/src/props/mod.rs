//! Bucket properties: Riak's names, defaults and validation.
//!
//! [`BucketProps`] are a bucket's effective props; their serde form is
//! Riak's JSON shape (the HTTP API's `{"props": ...}`). A change arrives as
//! a typed [`PropsPatch`] ([`patch`]: parsed once at the edge, stored in
//! the same JSON shape), applied over the current props and validated
//! whole, so a bad patch changes nothing.
//!
//! Every property means what Riak says it means, or a change to it is
//! refused ([`unsupported`]: commit hooks, `linkfun`, `chash_keyfun`,
//! `consistent` and the vclock pruning properties accept only Riak's
//! defaults). What the write path must do for the others:
//! - `node_confirms` (a count or a quorum word, like `w`; default 0): a put
//!   succeeds only once that many **distinct physical nodes** applied it
//!   ([`BucketProps::node_confirms`], counted by
//!   eddy-kv's `PutCore`); otherwise it fails with Riak's
//!   `{node_confirms_val_unsatisfied, Needed, Got}`. A value above n_val is
//!   refused at the request, as `w` is.
//! - `sync_on_write` ([`SyncOnWrite`]; default `backend`): `all` — every
//!   replica's vnode syncs the write to stable storage (fdatasync of the
//!   commit log, whatever its strategy) before it replies, whatever the
//!   client's `dw`; `one` — the coordinating vnode does and the other
//!   replicas follow the request's `dw`; `backend` — every vnode follows the
//!   request's `dw` and the log's strategy. The put coordinator asks
//!   [`SyncOnWrite::syncs`] per replica and sends the answer as the put's
//!   eddy-vnode's `SyncLevel`.
//! - `write_once` (bucket types only, fixed at creation, not with a
//!   `datatype` or `consistent`): vnodes write a put without reading the
//!   stored object first (unless the new version has index entries, whose
//!   removal needs the old ones) and keep one version per key: versions
//!   that meet resolve to the sibling whose content hashes highest, the
//!   same on every vnode and read (Riak's repeatable "random write wins"),
//!   never kept as siblings, whatever `allow_mult` and `last_write_wins`
//!   say (eddy-vnode's `once`).
//! - `ttl` (Eddy's own, [`ttl`]): each write stamps its object with an
//!   expiry, its newest sibling's last-modified time plus the ttl; the
//!   vnode gives it to the backend and the side store, which hide the
//!   object and its index entries from then on, and the node's expiry
//!   sweep deletes it (eddy-kv's `expiry`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use eddy_dt::{HLL_PRECISION_DEFAULT, HLL_PRECISION_MAX, HLL_PRECISION_MIN};

use crate::quorum::{Quorum, QuorumError};

pub mod patch;
#[cfg(test)]
mod patch_tests;
mod sync_on_write;
pub mod ttl;
pub mod unsupported;

pub use patch::PropsPatch;
pub use sync_on_write::SyncOnWrite;
pub use ttl::Ttl;

/// A module/function pair, as Riak names hook and key functions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModFun {
    #[serde(rename = "mod")]
    pub module: String,
    #[serde(rename = "fun")]
    pub function: String,
}

impl ModFun {
    fn new(module: &str, function: &str) -> Self {
        ModFun {
            module: module.into(),
            function: function.into(),
        }
    }
}

/// Data types a bucket type can hold (`datatype`).
pub const DATATYPES: &[&str] = &["counter", "set", "map", "hll", "gset"];

/// Keys Riak reports but that are not settable; ignored in patches.
const COMPUTED: &[&str] = &[
    "name",
    "active",
    "claimant",
    "has_precommit",
    "has_postcommit",
    GENERATION,
];

/// The prop that counts a bucket's drops (design note 018): its objects
/// live under this generation's storage name. Set only by dropping the
/// bucket; a client's patch naming it is ignored, as Riak ignores `name`.
pub const GENERATION: &str = "generation";

/// The effective properties of a bucket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BucketProps {
    pub n_val: u32,
    pub allow_mult: bool,
    pub last_write_wins: bool,
    pub precommit: Vec<Value>,
    pub postcommit: Vec<Value>,
    pub chash_keyfun: ModFun,
    pub linkfun: ModFun,
    pub old_vclock: u32,
    pub young_vclock: u32,
    pub big_vclock: u32,
    pub small_vclock: u32,
    pub pr: Quorum,
    pub r: Quorum,
    pub w: Quorum,
    pub pw: Quorum,
    pub dw: Quorum,
    pub rw: Quorum,
    pub basic_quorum: bool,
    pub notfound_ok: bool,
    pub dvv_enabled: bool,
    pub write_once: bool,
    /// Distinct physical nodes a put must reach (resolved like `w`).
    #[serde(default = "no_node_confirms")]
    pub node_confirms: Quorum,
    /// Which replicas sync a put before replying.
    #[serde(default)]
    pub sync_on_write: SyncOnWrite,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datatype: Option<String>,
    /// An `hll` type's HyperLogLog precision: 4–16, written as
    /// [`HLL_PRECISION_DEFAULT`] when such a type is made without one;
    /// it may be lowered later, never raised (Riak's rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hll_precision: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub consistent: bool,
    /// How long an object lives after its last write (`ttl`, Eddy's own:
    /// [`ttl`]); none when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Ttl>,
    /// How many times the bucket was dropped: its objects are stored
    /// under this generation's storage name (design note 018).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub generation: u64,
    /// Properties Eddy does not interpret, kept so clients read back what
    /// they set.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Default for BucketProps {
    /// Riak's defaults for the `default` bucket type.
    fn default() -> Self {
        BucketProps {
            n_val: 3,
            allow_mult: false,
            last_write_wins: false,
            precommit: Vec::new(),
            postcommit: Vec::new(),
            chash_keyfun: ModFun::new("riak_core_util", "chash_std_keyfun"),
            linkfun: ModFun::new("riak_kv_wm_link_walker", "mapreduce_linkfun"),
            old_vclock: 86_400,
            young_vclock: 20,
            big_vclock: 50,
            small_vclock: 50,
            pr: Quorum::Count(0),
            r: Quorum::Quorum,
            w: Quorum::Quorum,
            pw: Quorum::Count(0),
            dw: Quorum::Quorum,
            rw: Quorum::Quorum,
            basic_quorum: false,
            notfound_ok: true,
            dvv_enabled: false,
            write_once: false,
            node_confirms: no_node_confirms(),
            sync_on_write: SyncOnWrite::Backend,
            backend: None,
            datatype: None,
            hll_precision: None,
            consistent: false,
            ttl: None,
            generation: 0,
            extra: BTreeMap::new(),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Riak's refusal of an `hll_precision` out of range or raised.
fn hll_precision_error(p: u32) -> PropsError {
    PropsError::one(
        "hll_precision",
        format!(
            "{p} not supported for Hyperloglog precision property for bucket type. Precision must be an integer between 4 and 16, inclusive (3 < p < 17) and precision can be reduced but never increased after initial setting"
        ),
    )
}

fn no_node_confirms() -> Quorum {
    Quorum::Count(0)
}

/// Why props were refused: each offending field with a reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid bucket properties: {}", .0.iter().map(|(f, r)| format!("{f}: {r}")).collect::<Vec<_>>().join("; "))]
pub struct PropsError(pub Vec<(String, String)>);

impl PropsError {
    pub fn one(field: &str, reason: impl Into<String>) -> Self {
        PropsError(vec![(field.to_string(), reason.into())])
    }
}

impl BucketProps {
    /// The defaults of a newly created, non-default bucket type: the default
    /// type's props with siblings and dotted version vectors on.
    pub fn typed_defaults(base: &BucketProps) -> BucketProps {
        BucketProps {
            allow_mult: true,
            dvv_enabled: true,
            ..base.clone()
        }
    }

    /// These props as a JSON object.
    pub fn to_json(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// Applies `patch` over these props and validates the result: an
    /// `hll` type without a precision gets [`HLL_PRECISION_DEFAULT`], and
    /// a precision may be lowered, never raised. The patch's generation is
    /// not applied (the registry sets it).
    pub fn patched(&self, patch: &PropsPatch) -> Result<BucketProps, PropsError> {
        let mut props = self.clone();
        patch.apply_to(&mut props);
        if props.datatype.as_deref() == Some("hll") && props.hll_precision.is_none() {
            props.hll_precision = Some(u32::from(HLL_PRECISION_DEFAULT));
        }
        props.validate()?;
        if let (Some(old), Some(new)) = (self.hll_precision, props.hll_precision)
            && new > old
        {
            return Err(hll_precision_error(new));
        }
        Ok(props)
    }

    /// The number of distinct physical nodes a put must reach: the
    /// request's value, else the bucket's, resolved against n_val like `w`
    /// (0: no requirement).
    pub fn node_confirms(&self, requested: Option<Quorum>) -> Result<u32, QuorumError> {
        requested.unwrap_or(Quorum::Default).resolve_checked(
            "node_confirms",
            self.node_confirms,
            self.n_val,
        )
    }

    /// Checks the rules serde cannot express.
    pub fn validate(&self) -> Result<(), PropsError> {
        if self.n_val == 0 {
            return Err(PropsError::one("n_val", "must be a positive integer"));
        }
        if let Some(dt) = &self.datatype {
            if !DATATYPES.contains(&dt.as_str()) {
                return Err(PropsError::one(
                    "datatype",
                    format!("unknown data type {dt:?}"),
                ));
            }
            if !self.allow_mult {
                return Err(PropsError::one("allow_mult", "must be true for data types"));
            }
            if self.write_once {
                let reason = "cannot be combined with a datatype";
                return Err(PropsError::one("write_once", reason));
            }
            if self.last_write_wins {
                let reason = "cannot be combined with a datatype: data types merge every replica's updates, last-write-wins would drop them";
                return Err(PropsError::one("last_write_wins", reason));
            }
            if self.ttl.is_some_and(|t| t.secs() != 0) {
                let reason = "cannot be combined with a datatype: a big data type value is stored in segments the expiry sweep does not follow";
                return Err(PropsError::one("ttl", reason));
            }
        }
        if let Some(p) = self.hll_precision
            && !(u32::from(HLL_PRECISION_MIN)..=u32::from(HLL_PRECISION_MAX)).contains(&p)
        {
            return Err(hll_precision_error(p));
        }
        Ok(())
    }

    /// Fails if `patch` changes a property fixed at type creation
    /// (`datatype`, `consistent`, `write_once`); setting one to its
    /// current value is no change.
    pub fn check_immutable(&self, patch: &PropsPatch) -> Result<(), PropsError> {
        let changed = [
            (
                "datatype",
                patch.datatype.as_ref().is_some_and(|d| *d != self.datatype),
            ),
            (
                "consistent",
                patch.consistent.is_some_and(|c| c != self.consistent),
            ),
            (
                "write_once",
                patch.write_once.is_some_and(|w| w != self.write_once),
            ),
        ];
        match changed.into_iter().find(|(_, changed)| *changed) {
            Some((field, _)) => Err(PropsError::one(field, "cannot be modified")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_ttl_is_refused_with_a_datatype() {
        let props = BucketProps {
            datatype: Some("set".into()),
            allow_mult: true,
            ttl: Ttl::from_secs(60),
            ..BucketProps::default()
        };
        let err = props.validate().unwrap_err();
        assert_eq!(err.0[0].0, "ttl");
        let none = BucketProps {
            ttl: Ttl::from_secs(0),
            ..props
        };
        assert!(none.validate().is_ok());
    }

    fn patch(v: Value) -> PropsPatch {
        PropsPatch::from_json(v.as_object().unwrap()).unwrap()
    }

    #[test]
    fn hll_types_get_a_precision_that_can_be_lowered_not_raised() {
        let typed = BucketProps::typed_defaults(&BucketProps::default());
        let hll = typed.patched(&patch(json!({"datatype": "hll"}))).unwrap();
        assert_eq!(hll.hll_precision, Some(14));
        assert_eq!(hll.to_json()["hll_precision"], json!(14));
        assert!(hll.patched(&patch(json!({"hll_precision": 14}))).is_ok());
        let lower = hll.patched(&patch(json!({"hll_precision": 12}))).unwrap();
        let err = lower
            .patched(&patch(json!({"hll_precision": 13})))
            .unwrap_err();
        assert!(err.to_string().contains("never increased"), "{err}");
        for bad in [3, 17, 0] {
            let err = typed
                .patched(&patch(json!({"datatype": "hll", "hll_precision": bad})))
                .unwrap_err();
            assert!(err.to_string().contains("between 4 and 16"), "{err}");
        }
    }

    #[test]
    fn a_datatype_cannot_be_last_write_wins() {
        let typed = BucketProps::typed_defaults(&BucketProps::default());
        let err = typed
            .patched(&patch(json!({"datatype": "set", "last_write_wins": true})))
            .unwrap_err();
        assert_eq!(err.0[0].0, "last_write_wins");
    }

    #[test]
    fn defaults_serialise_in_riak_shape() {
        let json = BucketProps::default().to_json();
        assert_eq!(json["n_val"], json!(3));
        assert_eq!(json["r"], json!("quorum"));
        assert_eq!(json["pr"], json!(0));
        assert_eq!(
            json["chash_keyfun"],
            json!({"mod": "riak_core_util", "fun": "chash_std_keyfun"})
        );
        assert!(!json.contains_key("datatype"));
    }

    #[test]
    fn patches_apply_whole_or_not_at_all() {
        let base = BucketProps::default();
        let p = base
            .patched(&patch(json!({"n_val": 5, "allow_mult": true, "name": "x"})))
            .unwrap();
        assert_eq!((p.n_val, p.allow_mult), (5, true));
        let unparsed = |v: Value| PropsPatch::from_json(v.as_object().unwrap()).unwrap_err();
        assert_eq!(unparsed(json!({"n_val": "three"})).0[0].0, "n_val");
        assert_eq!(unparsed(json!({"r": "most"})).0[0].0, "r");
        assert!(base.patched(&patch(json!({"n_val": 0}))).is_err());
        assert!(
            base.patched(&patch(json!({"datatype": "set"}))).is_err(),
            "needs allow_mult"
        );
        let custom = base.patched(&patch(json!({"my_prop": [1, 2]}))).unwrap();
        assert_eq!(custom.to_json()["my_prop"], json!([1, 2]));
    }

    #[test]
    fn immutable_props_cannot_change() {
        let typed = BucketProps::typed_defaults(&BucketProps::default());
        let set = typed.patched(&patch(json!({"datatype": "set"}))).unwrap();
        assert!(
            set.check_immutable(&patch(json!({"datatype": "map"})))
                .is_err()
        );
        assert!(
            set.check_immutable(&patch(json!({"datatype": "set", "n_val": 2})))
                .is_ok()
        );
        assert!(
            typed
                .check_immutable(&patch(json!({"write_once": true})))
                .is_err()
        );
        assert!(
            typed
                .check_immutable(&patch(json!({"consistent": false})))
                .is_ok()
        );
    }
}
