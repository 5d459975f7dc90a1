//! The term index's figures (entries, estimated bytes) and its memory
//! bound: figures follow every change and survive a reopen; a write that
//! would grow the index past the bound is refused whole, while deletes and
//! shrinking puts pass; open and replay never refuse.

use std::path::Path;

use eddy_bitcask::index::memory;
use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{
    Backend, FoldControl, IndexQuery, IndexSpec, StorageError, WriteBatch, WriteOptions,
};

fn open(dir: &Path, max: Option<u64>) -> Bitcask {
    let config = BitcaskConfig {
        max_file_size_bytes: 8192,
        merge_check_interval_ms: 0,
        index_memory_max_bytes: max,
        ..BitcaskConfig::default()
    };
    Bitcask::open(dir, config).expect("open")
}

/// `(index_entries, index_memory_bytes)` as `status()` reports them.
fn figures(b: &Bitcask) -> (usize, u64) {
    let extra = b.status().unwrap().extra;
    let get = |name: &str| {
        let (_, v) = extra.iter().find(|(n, _)| n == name).expect(name);
        v.parse::<u64>().expect(name)
    };
    let from_status = (get("index_entries") as usize, get("index_memory_bytes"));
    assert_eq!(from_status, b.index_memory());
    from_status
}

fn extra(b: &Bitcask, name: &str) -> String {
    let extra = b.status().unwrap().extra;
    extra.into_iter().find(|(n, _)| n == name).expect(name).1
}

fn add(field: &str, term: &str) -> IndexSpec {
    IndexSpec::add(field.as_bytes(), term.as_bytes())
}

/// The estimate of one key in bucket `b` with `terms` (field `f_bin`).
fn cost(key: &str, terms: &[&str]) -> u64 {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = terms
        .iter()
        .map(|t| (b"f_bin".to_vec(), t.as_bytes().to_vec()))
        .collect();
    memory::key_bytes(b"b", key.as_bytes(), &pairs)
}

fn keys_with(b: &Bitcask, term: &str) -> Vec<String> {
    let q = IndexQuery::eq(b"b", b"f_bin", term.as_bytes());
    let mut keys = Vec::new();
    b.index_range(&q, &mut |_, k| {
        keys.push(String::from_utf8(k.to_vec()).unwrap());
        FoldControl::Continue
    })
    .unwrap();
    keys
}

#[test]
fn figures_follow_puts_deletes_drops_and_survive_reopen_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), None);
    assert_eq!(figures(&b), (0, 0));
    let nosync = WriteOptions::NO_SYNC;
    b.put(b"b", b"k1", b"v", &[add("f_bin", "x")], nosync)
        .unwrap();
    assert_eq!(figures(&b), (1, cost("k1", &["x"])));
    let more = [add("f_bin", "y"), add("f_bin", "zz")];
    b.put(b"b", b"k1", b"v", &more, nosync).unwrap();
    let k1 = cost("k1", &["x", "y", "zz"]);
    assert_eq!(figures(&b), (3, k1));
    b.put(b"b", b"k2", b"v", &[add("f_bin", "x")], nosync)
        .unwrap();
    let k2 = cost("k2", &["x"]);
    assert_eq!(figures(&b), (4, k1 + k2));
    b.put(b"b", b"k3", b"v", &[], nosync).unwrap();
    assert_eq!(
        figures(&b),
        (4, k1 + k2),
        "a key without terms costs nothing"
    );
    let fewer = [IndexSpec::remove(b"f_bin", b"zz")];
    b.put(b"b", b"k1", b"v", &fewer, nosync).unwrap();
    let k1 = cost("k1", &["x", "y"]);
    assert_eq!(figures(&b), (3, k1 + k2));
    b.delete(b"b", b"k2", nosync).unwrap();
    assert_eq!(figures(&b), (2, k1));
    b.put(b"c", b"k9", b"v", &[add("f_bin", "x")], nosync)
        .unwrap();
    let c = figures(&b).1 - k1;
    b.put(b"b", b"k4", b"v", &[add("f_bin", "w")], nosync)
        .unwrap();
    b.drop_bucket(b"b").unwrap();
    assert_eq!(figures(&b), (1, c));
    b.put(b"b", b"k5", b"v", &more, nosync).unwrap();
    let before = figures(&b);
    assert_eq!(before, (3, c + cost("k5", &["y", "zz"])));
    b.close().unwrap();
    drop(b);

    let b = open(dir.path(), None);
    assert_eq!(figures(&b), before, "rebuilt from records and hints");
    b.merge(true).unwrap();
    b.close().unwrap();
    drop(b);
    for hint in std::fs::read_dir(dir.path()).unwrap() {
        let path = hint.unwrap().path();
        if path.to_string_lossy().ends_with(".hint") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let b = open(dir.path(), None);
    assert_eq!(figures(&b), before, "rebuilt by scanning merged files");
    assert_eq!(extra(&b, "index_memory_max"), "off");
}

#[test]
fn a_put_past_the_bound_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let max = cost("k1", &["a", "b"]) + cost("k2", &["a"]);
    let b = open(dir.path(), Some(max));
    assert_eq!(extra(&b, "index_memory_max"), max.to_string());
    let nosync = WriteOptions::NO_SYNC;
    let two = [add("f_bin", "a"), add("f_bin", "b")];
    b.put(b"b", b"k1", b"one", &two, nosync).unwrap();
    b.put(b"b", b"k2", b"two", &[add("f_bin", "a")], nosync)
        .unwrap();
    assert_eq!(figures(&b).1, max, "exactly at the bound is allowed");

    // Growing k2, or indexing a new key, is refused before it is written.
    let before = figures(&b);
    let err = b
        .put(b"b", b"k2", b"new", &[add("f_bin", "c")], nosync)
        .unwrap_err();
    assert!(
        matches!(err, StorageError::IndexFull { bytes, max: m } if bytes > m && m == max),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("index memory limit"), "{text}");
    let err = b.put(b"b", b"k3", b"v", &[add("f_bin", "a")], nosync);
    assert!(
        matches!(err, Err(StorageError::IndexFull { .. })),
        "{err:?}"
    );
    assert_eq!(b.get(b"b", b"k2").unwrap(), Some(b"two".to_vec()));
    assert_eq!(b.get(b"b", b"k3").unwrap(), None);
    assert_eq!(keys_with(&b, "c"), Vec::<String>::new());
    assert_eq!(keys_with(&b, "a"), ["k1", "k2"]);
    assert_eq!(figures(&b), before);
    assert_eq!(extra(&b, "index_writes_refused"), "2");

    // A batch is refused whole when one of its ops does not fit.
    let mut batch = WriteBatch::default();
    batch.put(
        b"b",
        b"k1",
        b"smaller",
        vec![IndexSpec::remove(b"f_bin", b"b")],
        None,
    );
    batch.put(
        b"b",
        b"k4",
        b"v",
        vec![add("f_bin", "a"), add("f_bin", "d")],
        None,
    );
    let err = b.write(batch, nosync);
    assert!(
        matches!(err, Err(StorageError::IndexFull { .. })),
        "{err:?}"
    );
    assert_eq!(b.get(b"b", b"k1").unwrap(), Some(b"one".to_vec()));
    assert_eq!(figures(&b), before);

    // Writes that add no index bytes pass: unindexed keys, same terms.
    b.put(b"b", b"plain", b"v", &[], nosync).unwrap();
    b.put(b"b", b"k2", b"same terms", &[], nosync).unwrap();
    assert_eq!(figures(&b), before);
    // A shrinking put and a delete pass, and make room again.
    let shrink = [IndexSpec::remove(b"f_bin", b"b")];
    b.put(b"b", b"k1", b"fewer", &shrink, nosync).unwrap();
    assert_eq!(keys_with(&b, "b"), Vec::<String>::new());
    b.delete(b"b", b"k2", nosync).unwrap();
    assert_eq!(figures(&b), (1, cost("k1", &["a"])));
    b.put(b"b", b"k2", b"new", &[add("f_bin", "c")], nosync)
        .unwrap();
    assert_eq!(keys_with(&b, "c"), ["k2"]);
}

#[test]
fn open_and_replay_load_past_the_bound_and_only_growth_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), None);
    let terms = [add("f_bin", "a"), add("f_bin", "b")];
    for k in ["k1", "k2", "k3"] {
        b.put(b"b", k.as_bytes(), b"v", &terms, WriteOptions::NO_SYNC)
            .unwrap();
    }
    let before = figures(&b);
    b.close().unwrap();
    drop(b);

    // Reopened with a bound below what it holds: everything loads.
    let max = cost("k1", &["a", "b"]);
    let b = open(dir.path(), Some(max));
    assert_eq!(figures(&b), before);
    assert_eq!(keys_with(&b, "a"), ["k1", "k2", "k3"]);
    let err = b.put(
        b"b",
        b"k4",
        b"v",
        &[add("f_bin", "a")],
        WriteOptions::NO_SYNC,
    );
    assert!(
        matches!(err, Err(StorageError::IndexFull { .. })),
        "{err:?}"
    );
    // A replayed write is taken even so.
    b.put(
        b"b",
        b"k4",
        b"v",
        &[add("f_bin", "a")],
        WriteOptions::REPLAY,
    )
    .unwrap();
    assert_eq!(keys_with(&b, "a"), ["k1", "k2", "k3", "k4"]);
    let mut batch = WriteBatch::default();
    batch.put(b"b", b"k5", b"v", vec![add("f_bin", "a")], None);
    batch.put(b"b", b"k6", b"v", vec![add("f_bin", "a")], None);
    b.write(batch, WriteOptions::REPLAY).unwrap();
    // Over the bound, shrinking still passes.
    b.delete(b"b", b"k1", WriteOptions::NO_SYNC).unwrap();
    let fewer = [IndexSpec::remove(b"f_bin", b"b")];
    b.put(b"b", b"k2", b"v", &fewer, WriteOptions::NO_SYNC)
        .unwrap();
    assert_eq!(keys_with(&b, "b"), ["k3"]);
}
