//! A data directory written before the side store (design note 027) holds
//! a `<partition>.aux` keyspace per partition with its terms records and
//! index entries. Opening the environment deletes those keyspaces, keeps
//! every object readable, and does it again after an open a crash cut
//! short (each keyspace's deletion is atomic).
//!
//! The fixture is the lsm directory of an Eddy node written by b4809a1
//! (`crates/eddy/tests/fixtures/datadir-b4809a1-backends.sh`), the one
//! `e2e_upgrade` starts a node on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use eddy_lsm::{LsmConfig, LsmEnv};
use eddy_storage::{Backend, FoldControl, FoldOptions};
use fjall::{Database, KeyspaceCreateOptions};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../eddy/tests/fixtures/datadir-b4809a1-lsm.tar.gz"
);

/// Unpacks the fixture's lsm directory under `root`; returns its path.
fn unpack(root: &Path) -> PathBuf {
    let out = Command::new("tar")
        .args(["xzf", FIXTURE, "-C"])
        .arg(root)
        .arg("./lsm")
        .output()
        .expect("run tar");
    assert!(
        out.status.success(),
        "tar: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    root.join("lsm")
}

/// The keyspace names of the fjall database in `dir` and their entry
/// counts, read with fjall alone.
fn raw_keyspaces(dir: &Path) -> BTreeMap<String, usize> {
    let db = Database::builder(dir).open().expect("open fjall database");
    let mut out = BTreeMap::new();
    for name in db.list_keyspace_names() {
        let name = name.to_string();
        let keyspace = db
            .keyspace(&name, KeyspaceCreateOptions::default)
            .expect("open keyspace");
        out.insert(name, keyspace.iter().count());
    }
    out
}

/// Every partition's object count, read through the backend.
fn objects_per_partition(env: &LsmEnv, names: &[String]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for name in names {
        let partition = env.open_partition(name).expect("open partition");
        let mut count = 0;
        partition
            .fold_keys(&FoldOptions::all(), &mut |_, _| {
                count += 1;
                FoldControl::Continue
            })
            .expect("fold keys");
        out.insert(name.clone(), count);
    }
    out
}

#[test]
fn opening_a_directory_from_b4809a1_deletes_its_index_keyspaces_and_keeps_its_objects() {
    let root = tempfile::tempdir().unwrap();
    let dir = unpack(root.path());
    let before = raw_keyspaces(&dir);
    let aux: Vec<&String> = before.keys().filter(|n| n.ends_with(".aux")).collect();
    let aux_entries: usize = aux.iter().map(|n| before[*n]).sum();
    assert!(aux.len() > 1, "the fixture has aux keyspaces: {before:?}");
    assert!(aux_entries > 0, "the fixture has index entries: {before:?}");
    let partitions: Vec<String> = before
        .keys()
        .filter_map(|n| n.strip_suffix(".obj"))
        .map(str::to_string)
        .collect();
    let stored: BTreeMap<String, usize> = partitions
        .iter()
        .map(|p| (p.clone(), before[&format!("{p}.obj")]))
        .collect();
    assert!(stored.values().sum::<usize>() > 0, "{before:?}");

    // As if an earlier open had deleted one aux keyspace and then crashed.
    {
        let db = Database::builder(&dir).open().unwrap();
        let first = db.keyspace(aux[0], KeyspaceCreateOptions::default).unwrap();
        db.delete_keyspace(first).unwrap();
    }

    let config = LsmConfig::default();
    {
        let env = LsmEnv::open(&dir, &config).unwrap();
        assert_eq!(objects_per_partition(&env, &partitions), stored);
    }
    let after = raw_keyspaces(&dir);
    let expected: BTreeMap<String, usize> = before
        .iter()
        .filter(|(name, _)| !name.ends_with(".aux"))
        .map(|(name, count)| (name.clone(), *count))
        .collect();
    assert_eq!(after, expected, "only the aux keyspaces went");

    // A second open finds nothing to delete and the same objects.
    let env = LsmEnv::open(&dir, &config).unwrap();
    assert_eq!(objects_per_partition(&env, &partitions), stored);
}
