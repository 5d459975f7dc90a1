//! The conformance suite: targeted cases, then random operation sequences
//! (with reopens and clock moves) checked step by step against [`Model`].
//!
//! A backend whose capabilities say it keeps no index entries
//! (`indexes: false`) must refuse a write that gives it index specs with
//! [`StorageError::NoIndexes`], writing nothing, and answer every index
//! scan with nothing; the other cases give it writes without specs.

use std::path::Path;
use std::sync::Arc;

use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

use super::model::Model;
use super::ops::{self, BUCKETS, KEYS, Op};
use super::{BackendFactory, OpenOptions};
use crate::{
    Backend, BatchOp, FoldControl, FoldOptions, IndexQuery, IndexSpec, ManualClock, StorageError,
    WriteBatch, WriteOptions,
};

/// `(bucket, key)` or `(term, key)` pairs, as a fold or scan yields them.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;
/// `(bucket, key, value)` triples, as an object fold yields them.
pub type Triples = Vec<(Vec<u8>, Vec<u8>, Vec<u8>)>;

/// Where the manual clock starts (a plausible present).
pub const START_SECS: u64 = 1_700_000_000;

/// Runs the whole suite against `factory`; panics on the first failure.
///
/// `EDDY_CONFORMANCE_CASES` sets how many random sequences to run per expiry
/// setting (default 64).
pub fn run_conformance(factory: &dyn BackendFactory) {
    basic_roundtrip(factory);
    rejects_oversized_input(factory);
    closed_instance_refuses(factory);
    instance_ttl_expires(factory);
    index_follows_object(factory);
    index_specs_refused_without_indexes(factory);
    drop_bucket_survives_reopen(factory);
    destroy_removes_data(factory);
    many_keys_and_large_values(factory);
    let cases = std::env::var("EDDY_CONFORMANCE_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    model_check(factory, 0, cases);
    model_check(factory, 25, cases / 2 + 1);
}

/// A backend under test with its directory, clock and model.
struct Harness<'a> {
    factory: &'a dyn BackendFactory,
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    opts: OpenOptions,
    backend: Option<Box<dyn Backend>>,
    model: Model,
}

impl<'a> Harness<'a> {
    fn new(factory: &'a dyn BackendFactory, expiry_secs: u64) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = ManualClock::new(START_SECS);
        let opts = OpenOptions {
            clock: clock.clone(),
            expiry_secs,
        };
        let backend = Some(factory.open(&data_dir(dir.path()), &opts));
        Harness {
            factory,
            _dir: dir,
            clock,
            opts,
            backend,
            model: Model::new(expiry_secs),
        }
    }

    fn backend(&self) -> &dyn Backend {
        self.backend.as_deref().expect("backend is open")
    }

    fn now(&self) -> u64 {
        use crate::Clock;
        self.clock.now_secs()
    }

    /// Whether the backend keeps index entries.
    fn indexes(&self) -> bool {
        self.backend().capabilities().indexes
    }

    fn reopen(&mut self) {
        let backend = self.backend.take().expect("backend is open");
        let persistent = backend.capabilities().persistent;
        backend.close().expect("close");
        drop(backend);
        self.backend = Some(self.factory.open(&data_dir(self._dir.path()), &self.opts));
        if !persistent {
            self.model.clear();
        }
    }

    fn write(&mut self, ops: Vec<BatchOp>, sync: bool) -> Result<(), TestCaseError> {
        let now = self.now();
        let indexes = self.indexes();
        let ops: Vec<BatchOp> = ops
            .into_iter()
            .map(|op| absolute_expiry(op, now))
            .map(|op| if indexes { op } else { without_specs(op) })
            .collect();
        let opts = WriteOptions { sync };
        let batch = WriteBatch { ops: ops.clone() };
        self.backend()
            .write(batch, opts)
            .map_err(|e| TestCaseError::fail(format!("write failed: {e}")))?;
        ops.iter().for_each(|op| self.model.apply(op, now));
        Ok(())
    }

    fn step(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let now = self.now();
        match op {
            Op::Write(ops, sync) => self.write(ops.clone(), *sync)?,
            Op::Get(b, k) => {
                let got = self.backend().get(BUCKETS[*b], KEYS[*k]).map_err(fail)?;
                let want = self.model.get(BUCKETS[*b], KEYS[*k], now);
                check_eq(got, want, "get")?;
            }
            Op::FoldKeys(opts) => {
                let got = fold_keys(self.backend(), opts).map_err(fail)?;
                let want = self
                    .model
                    .fold(opts, now)
                    .into_iter()
                    .map(|(b, k, _)| (b, k));
                self.check_fold(got, want.collect(), "fold_keys")?;
            }
            Op::FoldObjects(opts) => {
                let got = fold_objects(self.backend(), opts).map_err(fail)?;
                self.check_fold(got, self.model.fold(opts, now), "fold_objects")?;
            }
            Op::Index(query, limit) => {
                let got = index_range(self.backend(), query, *limit).map_err(fail)?;
                let mut want = self.model.index_range(query, now);
                want.truncate(limit.unwrap_or(usize::MAX));
                check_eq(got, want, "index_range")?;
            }
            Op::DropBucket(b) => {
                self.backend().drop_bucket(BUCKETS[*b]).map_err(fail)?;
                self.model.drop_bucket(BUCKETS[*b]);
            }
            Op::IsEmpty => {
                let got = self.backend().is_empty().map_err(fail)?;
                check_eq(got, self.model.is_empty(now), "is_empty")?;
            }
            Op::Sync => self.backend().sync().map_err(fail)?,
            Op::Reopen => self.reopen(),
            Op::Advance(secs) => self.clock.advance(*secs),
        }
        Ok(())
    }

    /// Ordered backends must match the model's order; others its set.
    fn check_fold<T: Ord + std::fmt::Debug>(
        &self,
        mut got: Vec<T>,
        want: Vec<T>,
        what: &str,
    ) -> Result<(), TestCaseError> {
        if !self.backend().capabilities().ordered {
            got.sort();
        }
        check_eq(got, want, what)
    }
}

fn data_dir(root: &Path) -> std::path::PathBuf {
    root.join("partition")
}

fn fail(e: StorageError) -> TestCaseError {
    TestCaseError::fail(format!("backend error: {e}"))
}

fn check_eq<T: PartialEq + std::fmt::Debug>(
    got: T,
    want: T,
    what: &str,
) -> Result<(), TestCaseError> {
    if got != want {
        return Err(TestCaseError::fail(format!(
            "{what}: backend returned {got:?}, model expects {want:?}"
        )));
    }
    Ok(())
}

/// Turns the generator's relative TTL into a Unix time.
fn absolute_expiry(op: BatchOp, now_secs: u64) -> BatchOp {
    match op {
        BatchOp::Put {
            bucket,
            key,
            value,
            indexes,
            expires_at_secs,
        } => BatchOp::Put {
            bucket,
            key,
            value,
            indexes,
            expires_at_secs: expires_at_secs.map(|ttl| now_secs + ttl),
        },
        delete => delete,
    }
}

/// The op without index specs, for a backend that keeps no index entries.
fn without_specs(op: BatchOp) -> BatchOp {
    match op {
        BatchOp::Put {
            bucket,
            key,
            value,
            expires_at_secs,
            ..
        } => BatchOp::Put {
            bucket,
            key,
            value,
            indexes: Vec::new(),
            expires_at_secs,
        },
        delete => delete,
    }
}

/// The specs a case gives a backend: `specs`, or none when it keeps no
/// index entries.
fn specs_for(b: &dyn Backend, specs: Vec<IndexSpec>) -> Vec<IndexSpec> {
    match b.capabilities().indexes {
        true => specs,
        false => Vec::new(),
    }
}

/// All `(bucket, key)`s a fold yields, in the order yielded.
pub fn fold_keys(b: &dyn Backend, opts: &FoldOptions) -> Result<Pairs, StorageError> {
    let mut out = Vec::new();
    b.fold_keys(opts, &mut |bucket, key| {
        out.push((bucket.to_vec(), key.to_vec()));
        FoldControl::Continue
    })?;
    Ok(out)
}

/// All objects a fold yields, in the order yielded.
pub fn fold_objects(b: &dyn Backend, opts: &FoldOptions) -> Result<Triples, StorageError> {
    let mut out = Vec::new();
    b.fold_objects(opts, &mut |bucket, key, value| {
        out.push((bucket.to_vec(), key.to_vec(), value.to_vec()));
        FoldControl::Continue
    })?;
    Ok(out)
}

/// Up to `limit` index entries, stopping the scan early when reached.
pub fn index_range(
    b: &dyn Backend,
    query: &IndexQuery,
    limit: Option<usize>,
) -> Result<Pairs, StorageError> {
    let limit = limit.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    if limit == 0 {
        return Ok(out);
    }
    b.index_range(query, &mut |term, key| {
        out.push((term.to_vec(), key.to_vec()));
        match out.len() >= limit {
            true => FoldControl::Stop,
            false => FoldControl::Continue,
        }
    })?;
    Ok(out)
}

fn model_check(factory: &dyn BackendFactory, expiry_secs: u64, cases: u32) {
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let strategy = proptest::collection::vec(ops::op(), 1..80);
    let result = runner.run(&strategy, |steps| {
        let mut h = Harness::new(factory, expiry_secs);
        for (i, step) in steps.iter().enumerate() {
            h.step(step)
                .map_err(|e| TestCaseError::fail(format!("step {i} ({step:?}): {e}")))?;
        }
        Ok(())
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(why, steps)) => {
            panic!(
                "conformance (expiry_secs={expiry_secs}) failed: {why}\nminimal steps: {steps:#?}"
            )
        }
        Err(e) => panic!("conformance (expiry_secs={expiry_secs}) aborted: {e}"),
    }
}

fn basic_roundtrip(factory: &dyn BackendFactory) {
    let mut h = Harness::new(factory, 0);
    let b = h.backend();
    assert_eq!(b.get(b"b", b"k").unwrap(), None);
    assert!(b.is_empty().unwrap());
    b.put(b"b", b"k", b"v1", &[], WriteOptions::SYNC).unwrap();
    b.put(b"b", b"k", b"v2", &[], WriteOptions::NO_SYNC)
        .unwrap();
    assert_eq!(b.get(b"b", b"k").unwrap().as_deref(), Some(&b"v2"[..]));
    assert_eq!(b.get(b"other", b"k").unwrap(), None);
    assert!(!b.is_empty().unwrap());
    b.delete(b"b", b"k", WriteOptions::SYNC).unwrap();
    b.delete(b"b", b"missing", WriteOptions::SYNC).unwrap();
    assert_eq!(b.get(b"b", b"k").unwrap(), None);
    b.put(b"b", b"k2", b"v", &[], WriteOptions::SYNC).unwrap();
    h.reopen();
    let want = if h.backend().capabilities().persistent {
        Some(b"v".to_vec())
    } else {
        None
    };
    assert_eq!(h.backend().get(b"b", b"k2").unwrap(), want);
    assert_eq!(
        h.backend().get(b"b", b"k").unwrap(),
        None,
        "deleted key came back"
    );
}

fn rejects_oversized_input(factory: &dyn BackendFactory) {
    let h = Harness::new(factory, 0);
    let b = h.backend();
    let long = vec![b'x'; crate::limits::KEY_BYTES_MAX + 1];
    let err = b
        .put(b"b", &long, b"v", &[], WriteOptions::SYNC)
        .unwrap_err();
    assert!(
        matches!(err, StorageError::TooLarge { what: "key", .. }),
        "{err}"
    );
    let err = b
        .put(&long, b"k", b"v", &[], WriteOptions::SYNC)
        .unwrap_err();
    assert!(
        matches!(err, StorageError::TooLarge { what: "bucket", .. }),
        "{err}"
    );
    // The largest key, bucket, field and term all at once are accepted.
    let max = |n| vec![0u8; n];
    let (mb, mk) = (
        max(crate::limits::BUCKET_BYTES_MAX),
        max(crate::limits::KEY_BYTES_MAX),
    );
    let spec = IndexSpec::add(
        &max(crate::limits::INDEX_FIELD_BYTES_MAX),
        &max(crate::limits::INDEX_TERM_BYTES_MAX),
    );
    let specs = specs_for(b, vec![spec]);
    b.put(&mb, &mk, b"v", &specs, WriteOptions::SYNC).unwrap();
    assert_eq!(b.get(&mb, &mk).unwrap().as_deref(), Some(&b"v"[..]));
    b.delete(&mb, &mk, WriteOptions::SYNC).unwrap();
    let spec = IndexSpec::add(b"f_bin", &long);
    let err = b
        .put(b"b", b"k", b"v", &[spec], WriteOptions::SYNC)
        .unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::TooLarge {
                what: "index term",
                ..
            }
        ),
        "{err}"
    );
    // A batch with one bad op writes nothing.
    let mut batch = WriteBatch::default();
    batch
        .put(b"b", b"ok", b"v", vec![], None)
        .put(b"b", &long, b"v", vec![], None);
    assert!(b.write(batch, WriteOptions::SYNC).is_err());
    assert_eq!(b.get(b"b", b"ok").unwrap(), None, "half-applied batch");
    assert!(b.is_empty().unwrap());
}

fn closed_instance_refuses(factory: &dyn BackendFactory) {
    let h = Harness::new(factory, 0);
    let b = h.backend();
    b.put(b"b", b"k", b"v", &[], WriteOptions::SYNC).unwrap();
    b.close().unwrap();
    assert!(matches!(b.get(b"b", b"k"), Err(StorageError::Closed)));
    let put = b.put(b"b", b"k", b"v", &[], WriteOptions::SYNC);
    assert!(matches!(put, Err(StorageError::Closed)));
}

fn instance_ttl_expires(factory: &dyn BackendFactory) {
    let h = Harness::new(factory, 10);
    let b = h.backend();
    if !b.capabilities().ttl {
        return;
    }
    let specs = specs_for(b, vec![IndexSpec::add(b"f_bin", b"t")]);
    b.put(b"b", b"k", b"v", &specs, WriteOptions::SYNC).unwrap();
    let mut batch = WriteBatch::default();
    batch.put(b"b", b"short", b"v", vec![], Some(START_SECS + 3));
    batch.put(b"b", b"long", b"v", vec![], Some(START_SECS + 100));
    b.write(batch, WriteOptions::SYNC).unwrap();
    h.clock.advance(3);
    assert_eq!(b.get(b"b", b"short").unwrap(), None, "per-object expiry");
    assert!(b.get(b"b", b"k").unwrap().is_some());
    h.clock.advance(7);
    assert_eq!(b.get(b"b", b"k").unwrap(), None, "instance expiry");
    assert_eq!(
        b.get(b"b", b"long").unwrap(),
        None,
        "instance expiry caps object expiry"
    );
    let q = IndexQuery::eq(b"b", b"f_bin", b"t");
    assert!(
        index_range(b, &q, None).unwrap().is_empty(),
        "expired index entry"
    );
    assert!(fold_keys(b, &FoldOptions::all()).unwrap().is_empty());
    assert!(b.is_empty().unwrap());
    // A new put of an expired key starts with no index entries.
    b.put(b"b", b"k", b"v", &[], WriteOptions::SYNC).unwrap();
    assert!(
        index_range(b, &q, None).unwrap().is_empty(),
        "expired terms revived"
    );
}

fn index_follows_object(factory: &dyn BackendFactory) {
    let mut h = Harness::new(factory, 0);
    if !h.indexes() {
        return;
    }
    let b = h.backend();
    let add = |t: &[u8]| IndexSpec::add(b"age_int", t);
    b.put(
        b"p",
        b"alice",
        b"1",
        &[add(b"30"), add(b"31")],
        WriteOptions::SYNC,
    )
    .unwrap();
    b.put(b"p", b"bob", b"2", &[add(b"25")], WriteOptions::SYNC)
        .unwrap();
    // Remove applies before add, so remove+add of one term keeps it.
    let specs = [
        IndexSpec::remove(b"age_int", b"30"),
        IndexSpec::remove(b"age_int", b"25"),
        add(b"25"),
    ];
    b.put(b"p", b"bob", b"3", &specs, WriteOptions::SYNC)
        .unwrap();
    let all = IndexQuery::range(b"p", b"age_int", b"", b"\xff");
    let want = vec![
        (b"25".to_vec(), b"bob".to_vec()),
        (b"30".to_vec(), b"alice".to_vec()),
        (b"31".to_vec(), b"alice".to_vec()),
    ];
    assert_eq!(index_range(b, &all, None).unwrap(), want);
    let mut page = all.clone();
    page.start_after = Some((b"25".to_vec(), b"bob".to_vec()));
    assert_eq!(index_range(b, &page, Some(1)).unwrap(), want[1..2].to_vec());
    b.delete(b"p", b"alice", WriteOptions::SYNC).unwrap();
    assert_eq!(index_range(b, &all, None).unwrap(), want[..1].to_vec());
    h.reopen();
    if h.backend().capabilities().persistent {
        assert_eq!(
            index_range(h.backend(), &all, None).unwrap(),
            want[..1].to_vec()
        );
    }
}

/// A backend without index entries refuses specs whole (a batch with one
/// indexed put writes nothing), takes the same writes without them, and
/// its scans answer nothing, also after a reopen.
fn index_specs_refused_without_indexes(factory: &dyn BackendFactory) {
    let mut h = Harness::new(factory, 0);
    if h.indexes() {
        return;
    }
    let b = h.backend();
    let spec = IndexSpec::add(b"age_int", b"30");
    let err = b
        .put(
            b"p",
            b"alice",
            b"1",
            std::slice::from_ref(&spec),
            WriteOptions::SYNC,
        )
        .unwrap_err();
    assert!(matches!(err, StorageError::NoIndexes { .. }), "{err}");
    let mut batch = WriteBatch::default();
    batch
        .put(b"p", b"bob", b"2", vec![], None)
        .put(b"p", b"carol", b"3", vec![spec], None);
    let err = b.write(batch, WriteOptions::SYNC).unwrap_err();
    assert!(matches!(err, StorageError::NoIndexes { .. }), "{err}");
    assert!(b.is_empty().unwrap(), "a refused write stored something");
    b.put(b"p", b"alice", b"1", &[], WriteOptions::SYNC)
        .unwrap();
    let all = IndexQuery::range(b"p", b"age_int", b"", b"\xff");
    assert!(index_range(b, &all, None).unwrap().is_empty());
    h.reopen();
    let b = h.backend();
    assert!(index_range(b, &all, None).unwrap().is_empty());
    if b.capabilities().persistent {
        assert_eq!(b.get(b"p", b"alice").unwrap().as_deref(), Some(&b"1"[..]));
    }
}

fn drop_bucket_survives_reopen(factory: &dyn BackendFactory) {
    let mut h = Harness::new(factory, 0);
    for i in 0..200u32 {
        let spec = specs_for(
            h.backend(),
            vec![IndexSpec::add(b"n_int", &i.to_be_bytes())],
        );
        for bucket in [&b"gone"[..], b"kept"] {
            h.backend()
                .put(bucket, &i.to_be_bytes(), b"v", &spec, WriteOptions::NO_SYNC)
                .unwrap();
        }
    }
    h.backend().drop_bucket(b"gone").unwrap();
    for round in 0..2 {
        let b = h.backend();
        let persistent = b.capabilities().persistent;
        let kept = if round == 0 || persistent { 200 } else { 0 };
        assert!(
            fold_keys(b, &FoldOptions::bucket(b"gone"))
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            fold_keys(b, &FoldOptions::bucket(b"kept")).unwrap().len(),
            kept
        );
        let q = IndexQuery::range(b"gone", b"n_int", b"", b"\xff\xff\xff\xff");
        assert!(
            index_range(b, &q, None).unwrap().is_empty(),
            "dropped index entries"
        );
        assert_eq!(b.get(b"gone", &7u32.to_be_bytes()).unwrap(), None);
        h.reopen();
    }
    // The bucket is usable again after the drop.
    let b = h.backend();
    b.put(b"gone", b"new", b"v", &[], WriteOptions::SYNC)
        .unwrap();
    assert_eq!(
        fold_keys(b, &FoldOptions::bucket(b"gone")).unwrap().len(),
        1
    );
}

fn destroy_removes_data(factory: &dyn BackendFactory) {
    let mut h = Harness::new(factory, 0);
    h.backend()
        .put(b"b", b"k", b"v", &[], WriteOptions::SYNC)
        .unwrap();
    let backend = h.backend.take().unwrap();
    backend.destroy().unwrap();
    let fresh = factory.open(&data_dir(h._dir.path()), &h.opts);
    assert!(
        fresh.is_empty().unwrap(),
        "destroyed partition still has data"
    );
    assert_eq!(fresh.get(b"b", b"k").unwrap(), None);
    fresh.close().unwrap();
}

fn many_keys_and_large_values(factory: &dyn BackendFactory) {
    let mut h = Harness::new(factory, 0);
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    h.backend()
        .put(b"big", b"k", &big, &[], WriteOptions::SYNC)
        .unwrap();
    for i in 0..5_000u32 {
        let key = format!("key-{i:05}");
        let value = format!("value-{i}-{}", "x".repeat((i % 300) as usize));
        h.backend()
            .put(
                b"many",
                key.as_bytes(),
                value.as_bytes(),
                &[],
                WriteOptions::NO_SYNC,
            )
            .unwrap();
    }
    h.reopen();
    let b = h.backend();
    if !b.capabilities().persistent {
        return;
    }
    assert_eq!(b.get(b"big", b"k").unwrap().as_deref(), Some(&big[..]));
    let keys = fold_keys(b, &FoldOptions::bucket(b"many")).unwrap();
    assert_eq!(keys.len(), 5_000);
    for i in (0..5_000u32).step_by(97) {
        let value = format!("value-{i}-{}", "x".repeat((i % 300) as usize));
        let got = b.get(b"many", format!("key-{i:05}").as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(value.as_bytes()));
    }
}
