//! Damage to data and hint files: truncation at random offsets and flipped
//! bytes. Open must succeed, lose at most the records in the damaged file,
//! report what it found, and never return a corrupt value.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use eddy_bitcask::scan::{ScanEvent, scan};
use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{Backend, FoldControl, FoldOptions, StorageError, WriteOptions};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn value_of(key: &[u8]) -> Vec<u8> {
    let mut v = key.repeat(30);
    v.extend_from_slice(b"/end");
    v
}

fn config(compression: bool) -> BitcaskConfig {
    BitcaskConfig {
        max_file_size_bytes: 4096,
        merge_check_interval_ms: 0,
        compression,
        ..BitcaskConfig::default()
    }
}

/// Writes keys (some deleted, some rewritten), closes, and returns the
/// expected live keys.
fn populate(dir: &Path, rng: &mut Rng) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let b = Bitcask::open(dir, config(rng.below(2) == 0)).unwrap();
    let mut live = BTreeMap::new();
    for i in 0..120u32 {
        let key = format!("key-{i:04}").into_bytes();
        b.put(b"b", &key, &value_of(&key), &[], WriteOptions::NO_SYNC)
            .unwrap();
        live.insert(key, ());
    }
    for _ in 0..40 {
        let key = format!("key-{:04}", rng.below(120)).into_bytes();
        if rng.below(3) == 0 {
            b.delete(b"b", &key, WriteOptions::NO_SYNC).unwrap();
            live.remove(&key);
        } else {
            b.put(b"b", &key, &value_of(&key), &[], WriteOptions::NO_SYNC)
                .unwrap();
            live.insert(key, ());
        }
    }
    if rng.below(2) == 0 {
        b.merge(true).unwrap();
    }
    b.close().unwrap();
    live.into_keys()
        .map(|k| (k.clone(), value_of(&k)))
        .collect()
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Keys with any record (value or tombstone) in data file `path`.
fn keys_in(path: &Path) -> BTreeSet<Vec<u8>> {
    let file = File::open(path).unwrap();
    let len = file.metadata().unwrap().len();
    let mut keys = BTreeSet::new();
    scan(&file, path, len, |ev| {
        if let ScanEvent::Record { record, .. } = ev {
            keys.insert(record.key.to_vec());
        }
        Ok(())
    })
    .unwrap();
    keys
}

/// Truncates or flips bytes of `path`; returns a description.
fn damage(path: &Path, rng: &mut Rng) -> String {
    let len = std::fs::metadata(path).unwrap().len();
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    if rng.below(2) == 0 {
        let at = rng.below(len);
        f.set_len(at).unwrap();
        return format!("truncated {} at {at} of {len}", path.display());
    }
    let mut flips = Vec::new();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(len);
        let mut byte = [0u8];
        f.read_exact_at(&mut byte, at).unwrap();
        byte[0] ^= 1 << rng.below(8);
        f.write_all_at(&byte, at).unwrap();
        flips.push(at);
    }
    format!("flipped {} at {flips:?} of {len}", path.display())
}

fn check_iteration(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let dir = tempfile::tempdir().unwrap();
    let live = populate(dir.path(), &mut rng);
    let drop_hints = rng.below(3) == 0;
    if drop_hints {
        files(dir.path(), ".hint")
            .into_iter()
            .for_each(|h| std::fs::remove_file(h).unwrap());
    }
    let mut candidates = files(dir.path(), ".data");
    candidates.extend(files(dir.path(), ".hint"));
    let victim = candidates[rng.below(candidates.len() as u64) as usize].clone();
    let is_hint = victim.to_string_lossy().ends_with(".hint");
    let exposed = if is_hint {
        BTreeSet::new()
    } else {
        keys_in(&victim)
    };
    let what = damage(&victim, &mut rng);

    let b = Bitcask::open(dir.path(), config(false))
        .unwrap_or_else(|e| panic!("seed {seed}: open failed after {what}: {e}"));
    let report = b.open_report().clone();
    if is_hint {
        assert!(
            !report.rejected_hints.is_empty(),
            "seed {seed}: {what}: {report:?}"
        );
    }
    if drop_hints && what.starts_with("flipped") {
        assert!(!report.is_clean(), "seed {seed}: {what} not reported");
    }
    for i in 0..120u32 {
        let key = format!("key-{i:04}").into_bytes();
        let got = b.get(b"b", &key);
        let want = live.get(&key).cloned();
        if !exposed.contains(&key) {
            let got = got.unwrap_or_else(|e| panic!("seed {seed}: {what}: {e}"));
            assert_eq!(got, want, "seed {seed}: {what}: undamaged key {i} changed");
            continue;
        }
        match got {
            Ok(None) | Err(StorageError::Corrupt { .. }) => {}
            Ok(Some(v)) => assert_eq!(v, value_of(&key), "seed {seed}: {what}: bad value"),
            Err(e) => panic!("seed {seed}: {what}: unexpected error {e}"),
        }
    }
    b.fold_objects(&FoldOptions::all(), &mut |_, k, v| {
        assert_eq!(
            v,
            value_of(k),
            "seed {seed}: {what}: fold returned a bad value"
        );
        FoldControl::Continue
    })
    .unwrap();
}

#[test]
fn damaged_files_lose_only_damaged_records() {
    let iterations = std::env::var("EDDY_CORRUPTION_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60u64);
    for seed in 1..=iterations {
        check_iteration(seed);
    }
}
