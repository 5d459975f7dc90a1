//! Migration of the bucket registry's own file (`meta/buckets.json`,
//! written by builds before design note 026) into the cluster's registers,
//! once, at start, before the registry is served.
//!
//! Each entry of the file the registers do not hold is written to them:
//! with the time and counter of the stamp the file kept for it (the
//! cluster's stamp, whose writer the file did not keep: this node is
//! named instead), or, for an entry the cluster never stamped, with time
//! 0, older than any stamp the cluster makes. An entry the registers hold
//! stays as they hold it: the registers were the cluster's version, and
//! the file had nothing newer that was shared. The state is saved, then
//! the file renamed `buckets.json.migrated` and never read again.
//!
//! Invariant: a crash before the rename leaves the file, and the
//! migration runs again at the next start, writing nothing twice (every
//! entry is then held).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use eddy_cluster::{ClusterState, Stamp};
use eddy_model::metadata::register::BucketMetadata;
use eddy_model::props::PropsPatch;
use eddy_model::types::TypeEntry;
use eddy_ring::NodeName;
use serde::Deserialize;

/// What the registry's file held.
#[derive(Deserialize)]
struct Legacy {
    types: BTreeMap<String, TypeEntry>,
    buckets: Vec<LegacyBucket>,
    #[serde(default)]
    stamps: LegacyStamps,
}

#[derive(Deserialize)]
struct LegacyBucket {
    bucket_type: String,
    /// Hex.
    bucket: String,
    patch: PropsPatch,
}

#[derive(Default, Deserialize)]
struct LegacyStamps {
    types: BTreeMap<String, LegacyStamp>,
    buckets: BTreeMap<String, BTreeMap<String, LegacyStamp>>,
}

#[derive(Clone, Copy, Deserialize)]
struct LegacyStamp {
    time_ms: u64,
    counter: u32,
}

/// Why the file could not be migrated.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("bucket metadata at {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("bucket metadata at {path} is corrupt: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error("saving the migrated bucket metadata: {0}")]
    Save(String),
}

/// The registry's file in data directory `root`.
pub fn legacy_path(root: &Path) -> PathBuf {
    root.join("meta").join("buckets.json")
}

/// Moves `root`'s `meta/buckets.json`, if any, into `state`'s registers,
/// saves `state` to `state_path`, and renames the file. Returns whether
/// there was a file.
pub fn migrate(
    root: &Path,
    state: &mut ClusterState,
    state_path: &Path,
    me: &NodeName,
) -> Result<bool, MigrateError> {
    let path = legacy_path(root);
    let io = |source| MigrateError::Io {
        path: path.clone(),
        source,
    };
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io(e)),
    };
    let legacy: Legacy = serde_json::from_slice(&bytes).map_err(|e| MigrateError::Corrupt {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let written = write_missing(state.metadata_mut(), legacy, me);
    state
        .save(state_path)
        .map_err(|e| MigrateError::Save(e.to_string()))?;
    std::fs::rename(&path, path.with_extension("json.migrated")).map_err(io)?;
    tracing::info!(entries = written, from = %path.display(), "bucket metadata migrated into the cluster state");
    Ok(true)
}

/// Writes each entry of `legacy` that `registers` lack; returns how many.
fn write_missing(registers: &mut BucketMetadata, legacy: Legacy, me: &NodeName) -> usize {
    let stamp = |s: Option<&LegacyStamp>| Stamp {
        time_ms: s.map_or(0, |s| s.time_ms),
        counter: s.map_or(0, |s| s.counter),
        node: me.clone(),
    };
    let mut written = 0;
    for (name, entry) in legacy.types {
        if !registers.bucket_types.contains_key(&name) {
            let s = stamp(legacy.stamps.types.get(&name));
            written += usize::from(registers.set_bucket_type(&name, entry, s));
        }
    }
    for b in legacy.buckets {
        let held = registers
            .bucket_props
            .get(&b.bucket_type)
            .is_some_and(|m| m.contains_key(&b.bucket));
        if !held {
            let s = legacy.stamps.buckets.get(&b.bucket_type);
            let s = stamp(s.and_then(|m| m.get(&b.bucket)));
            let set = registers.set_bucket_props(&b.bucket_type, &b.bucket, Some(b.patch), s);
            written += usize::from(set);
        }
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(me: &NodeName) -> ClusterState {
        ClusterState::new("c", me.clone(), 1, "127.0.0.1:8099", 8).unwrap()
    }

    #[test]
    fn entries_the_registers_lack_are_written_and_the_file_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let me = NodeName("n1@h".into());
        let file = json!({
            "types": {
                "maps": {"status": "active", "patch": {"datatype": "map"}},
                "held": {"status": "created", "patch": {}}
            },
            "buckets": [
                {"bucket_type": "default", "bucket": "62", "patch": {"n_val": 2}},
                {"bucket_type": "maps", "bucket": "63", "patch": {"generation": 3}}
            ],
            "stamps": {"types": {"maps": {"time_ms": 70, "counter": 2, "writer": 9}},
                       "buckets": {}}
        });
        std::fs::create_dir_all(dir.path().join("meta")).unwrap();
        std::fs::write(legacy_path(dir.path()), file.to_string()).unwrap();
        let mut s = state(&me);
        let held = TypeEntry::default();
        let newer = Stamp {
            time_ms: 5,
            counter: 0,
            node: NodeName("n2@h".into()),
        };
        s.metadata_mut()
            .set_bucket_type("held", held.clone(), newer);
        let path = dir.path().join("meta/cluster.json");
        assert!(migrate(dir.path(), &mut s, &path, &me).unwrap());

        let saved = ClusterState::load(&path).unwrap().unwrap();
        let m = saved.metadata();
        let maps = &m.bucket_types["maps"];
        assert_eq!((maps.stamp.time_ms, maps.stamp.counter), (70, 2));
        assert_eq!(maps.props.status, eddy_model::types::TypeStatus::Active);
        assert_eq!(
            m.bucket_types["held"].props, held,
            "the registers' version stays"
        );
        let b = &m.bucket_props["default"]["62"];
        assert_eq!((b.stamp.time_ms, b.deleted), (0, false));
        assert_eq!(serde_json::to_value(&b.props).unwrap(), json!({"n_val": 2}));
        let c = &m.bucket_props["maps"]["63"];
        assert_eq!(
            serde_json::to_value(&c.props).unwrap(),
            json!({"generation": 3})
        );
        assert!(!legacy_path(dir.path()).exists());
        assert!(dir.path().join("meta/buckets.json.migrated").exists());
        // Nothing left to migrate at the next start.
        assert!(!migrate(dir.path(), &mut s, &path, &me).unwrap());
    }

    #[test]
    fn a_corrupt_file_is_a_clear_error_and_stays() {
        let dir = tempfile::tempdir().unwrap();
        let me = NodeName("n1@h".into());
        std::fs::create_dir_all(dir.path().join("meta")).unwrap();
        std::fs::write(legacy_path(dir.path()), b"{not json").unwrap();
        let path = dir.path().join("meta/cluster.json");
        let err = migrate(dir.path(), &mut state(&me), &path, &me).unwrap_err();
        assert!(matches!(err, MigrateError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("buckets.json"), "{err}");
        assert!(legacy_path(dir.path()).exists());
    }

    /// A registry file written before patches were typed (eddy-model's
    /// fixture: computed keys, nulls, quorum words, unknown properties,
    /// drops, a reset), and the props that code resolved from it.
    fn model_fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../model/tests/fixtures")
            .join(name)
    }

    fn read_json(path: &Path) -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn a_migrated_file_resolves_the_props_it_resolved_before_and_keeps_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let me = NodeName("n1@h".into());
        std::fs::create_dir_all(dir.path().join("meta")).unwrap();
        std::fs::copy(model_fixture("buckets_v1.json"), legacy_path(dir.path())).unwrap();
        let mut s = state(&me);
        let path = dir.path().join("meta/cluster.json");
        migrate(dir.path(), &mut s, &path, &me).unwrap();

        let registry = eddy_model::types::BucketRegistry::new(Default::default());
        registry.apply_registers(s.metadata()).unwrap();
        let mut resolved = serde_json::Map::new();
        for t in registry.list_types() {
            let props = serde_json::Value::Object(t.props.to_json());
            resolved.insert(format!("type {}", t.name), props);
        }
        let buckets: [(&str, &[u8]); 6] = [
            ("default", b"b"),
            ("default", b"dropped"),
            ("default", b"reset"),
            ("sets", &[0xff, 0]),
            ("w1c", b"k"),
            ("sets", b"other"),
        ];
        for (t, b) in buckets {
            let props = registry.bucket_props(t, b).unwrap();
            let name = format!("bucket {t}/{}", String::from_utf8_lossy(b));
            resolved.insert(name, serde_json::Value::Object(props.to_json()));
        }
        let before = read_json(&model_fixture("buckets_v1_props.json"));
        assert_eq!(serde_json::Value::Object(resolved), before);

        // Each patch is saved in the cluster state as the file had it.
        let file = read_json(&model_fixture("buckets_v1.json"));
        let saved = read_json(&path);
        for (name, t) in file["types"].as_object().unwrap() {
            let register = &saved["state"]["bucket_types"][name]["props"];
            assert_eq!(register["patch"].to_string(), t["patch"].to_string());
        }
        for b in file["buckets"].as_array().unwrap() {
            let (t, hex) = (
                b["bucket_type"].as_str().unwrap(),
                b["bucket"].as_str().unwrap(),
            );
            let register = &saved["state"]["bucket_props"][t][hex]["props"];
            assert_eq!(register.to_string(), b["patch"].to_string(), "{t}/{hex}");
        }
    }
}
