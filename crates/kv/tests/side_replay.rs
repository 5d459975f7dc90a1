//! The side store agrees with the objects after any crash (design note
//! 027), on bitcask and lsm: random histories of puts with index entries,
//! deletes, reaps and a dropped bucket, then
//! - every cut of the commit log (a crash after each record) replayed
//!   into fresh backends and side stores;
//! - the whole log replayed into backends that kept every write and side
//!   stores that kept none (a crash between a backend's write and its side
//!   store's, or a lost side journal buffer);
//!
//! each leaving every vnode's side store holding exactly the index entries
//! of the objects its backend holds, and its change sequence (small
//! segments, compacted as the history goes) a change of each of them, at
//! its latest; and a reader of the changes that read
//! halfway through misses none of the rest across a crash and a restart.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_ring::{Partition, Ring};
use eddy_side::SideEnv;
use eddy_storage::{Backend, FoldControl, FoldOptions, IndexQuery};
use eddy_vnode::commitlog::{LogOptions, SyncPolicy};
use eddy_vnode::entries::terms_of;
use eddy_vnode::segments::indexed_object;
use rand::{Rng, SeedableRng};

mod log_cuts;
use log_cuts::cuts;

mod dirs;
use dirs::copy_dir;

const RING: u32 = 8;
const FIELDS: [&str; 2] = ["v_bin", "w_int"];
const KEYS: usize = 6;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Bitcask,
    Lsm,
}

/// A data directory: backends of `kind` and the side database.
struct Disk {
    kind: Kind,
    dir: PathBuf,
    side: SideEnv,
    lsm: Option<eddy_lsm::LsmEnv>,
    /// Whether a vnode's open records a change of each object its change
    /// sequence lacks (as a node's open does: `side_build`).
    seed: bool,
}

impl Disk {
    fn open(kind: Kind, dir: &Path) -> Disk {
        // Change logs of small segments, which the histories compact.
        let config = eddy_side::env::SideConfig {
            change_segment_bytes: 300,
            ..Default::default()
        };
        let side = SideEnv::open(&dir.join("side"), config).unwrap();
        let lsm = match kind {
            Kind::Lsm => {
                Some(eddy_lsm::LsmEnv::open(&dir.join("lsm"), &Default::default()).unwrap())
            }
            Kind::Bitcask => None,
        };
        Disk {
            kind,
            dir: dir.to_path_buf(),
            side,
            lsm,
            seed: false,
        }
    }

    fn parts(&self, p: Partition) -> VnodeParts {
        let backend: Arc<dyn Backend> = match (self.kind, &self.lsm) {
            (Kind::Lsm, Some(env)) => Arc::new(env.open_partition(&format!("p{}", p.0)).unwrap()),
            _ => {
                let dir = self.dir.join(format!("bitcask{}", p.0));
                Arc::new(Bitcask::open(&dir, BitcaskConfig::default()).unwrap())
            }
        };
        let side = Arc::new(self.side.open_vnode(u64::from(p.0), 1).unwrap());
        side.mark_built().unwrap();
        if self.seed {
            let stores = eddy_vnode::entries::Stores::new(backend.clone(), Some(side.clone()));
            eddy_vnode::side_build::build_if_needed(&stores, p, &|_| 0).unwrap();
        }
        VnodeParts {
            backend,
            side: Some(side),
            actor: Actor(100 + u64::from(p.0)),
            incarnation: 1,
        }
    }
}

fn start(disk: &Disk, log_dir: &Path) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: RING,
        commit_log_dir: Some(log_dir.to_path_buf()),
        commit_log: LogOptions {
            sync: SyncPolicy::Interval,
            ..LogOptions::default()
        },
        delete_mode: DeleteMode::Immediate,
        ..NodeConfig::default()
    };
    let ring = Ring::single(RING, config.node_name.clone()).unwrap();
    let partitions: Vec<Partition> = ring.partitions().collect();
    Node::start_with(config, registry, ring, &partitions, |p| disk.parts(p)).unwrap()
}

fn bucket(b: usize) -> BucketRef {
    BucketRef::default_type(format!("b{b}"))
}

/// A random history: puts with 0–3 index entries, deletes (reaped at
/// once), and one bucket dropped halfway.
async fn history(node: &Arc<Node>, seed: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for step in 0..40 {
        if step == 20 {
            node.drop_bucket_blocking(&bucket(1)).unwrap();
        }
        if step % 10 == 9 {
            for p in 0..RING {
                let vnode = node.vnode(Partition(p)).unwrap();
                vnode.compact_changes(1).unwrap();
            }
        }
        let (b, key) = (rng.random_range(0..2), rng.random_range(0..KEYS));
        let key = format!("k{key}").into_bytes();
        if rng.random_bool(0.2) {
            let req = DeleteRequest {
                bucket: bucket(b),
                key,
                context: None,
                options: DeleteOptions::default(),
            };
            node.delete(req).await.unwrap();
            continue;
        }
        let mut content = Content::new(format!("v{step}").into_bytes());
        for _ in 0..rng.random_range(0..4) {
            let field = FIELDS[rng.random_range(0..2)];
            let term = match field {
                "v_bin" => ["a", "b\u{0}", "c"][rng.random_range(0..3)].to_string(),
                _ => rng.random_range(-2..3).to_string(),
            };
            content.meta.indexes.push((field.into(), term.into_bytes()));
        }
        let req = PutRequest {
            bucket: bucket(b),
            key: Some(key),
            context: None,
            content,
            options: PutOptions::default(),
        };
        node.put(req).await.unwrap();
    }
}

/// Every vnode's side store holds exactly the index entries of the
/// objects its backend holds: (partition, bucket, field, term, key).
fn check_agrees(node: &Arc<Node>, what: &str) -> usize {
    type Entry = (u32, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);
    let mut want: BTreeSet<Entry> = BTreeSet::new();
    let mut got: BTreeSet<Entry> = BTreeSet::new();
    for p in 0..RING {
        let vnode = node.vnode(Partition(p)).unwrap();
        let stores = vnode.stores();
        stores
            .backend
            .fold_objects(&FoldOptions::all(), &mut |b, k, v| {
                if let Some(object) = indexed_object(b, v).unwrap() {
                    for (f, t) in terms_of(&object) {
                        want.insert((p, b.to_vec(), f, t, k.to_vec()));
                    }
                }
                FoldControl::Continue
            })
            .unwrap();
        // Both buckets under their first names, and whatever names the
        // backend holds objects under (the dropped bucket's next one).
        let mut names: BTreeSet<Vec<u8>> = (0..2).map(|b| bucket(b).storage_bucket()).collect();
        names.extend(want.iter().filter(|e| e.0 == p).map(|e| e.1.clone()));
        for storage in names {
            for f in FIELDS {
                let query = IndexQuery::range(&storage, f.as_bytes(), b"", &[0xff; 9]);
                stores
                    .index_range(&query, &mut |t, k| {
                        let e = (p, storage.clone(), f.into(), t.to_vec(), k.to_vec());
                        got.insert(e);
                        FoldControl::Continue
                    })
                    .unwrap();
            }
        }
    }
    assert_eq!(
        got, want,
        "{what}: the side stores and the objects disagree"
    );
    want.len()
}

/// What a reader of a vnode's changes knows of its keys: each key's
/// latest change (deleted or not), and the buckets dropped since.
#[derive(Clone, Debug, Default)]
struct Reader {
    keys: std::collections::BTreeMap<(Vec<u8>, Vec<u8>), bool>,
    dropped: BTreeSet<Vec<u8>>,
    at: Option<u64>,
}

impl Reader {
    /// Reads `p`'s changes after where it was; checks that they come in
    /// order, each key once.
    fn catch_up(&mut self, node: &Arc<Node>, p: u32) {
        let vnode = node.vnode(Partition(p)).unwrap();
        let mut seen = BTreeSet::new();
        let mut last = self.at;
        let covered = vnode
            .changes_since(self.at, u64::MAX, &mut |c| {
                assert!(last < Some(c.seq), "changes out of order");
                last = Some(c.seq);
                let named = (c.bucket.clone(), c.key.clone());
                assert!(seen.insert(named.clone()), "a key twice: {c:?}");
                match c.is_bucket_drop() {
                    true => drop(self.dropped.insert(c.bucket.clone())),
                    false => drop(self.keys.insert(named, c.deleted)),
                }
                true
            })
            .unwrap()
            .expect("a vnode with a side store keeps a change sequence");
        self.at = covered.upto;
    }
}

/// A reader of every vnode's changes, read from the start, knows what
/// each backend holds: each object's key with its latest change deleted
/// exactly when the object is a tombstone, and of every other key it knows
/// that it is deleted or in a dropped bucket.
fn check_changes(node: &Arc<Node>, readers: &mut [Reader], what: &str) {
    for p in 0..RING {
        let reader = &mut readers[p as usize];
        reader.catch_up(node, p);
        let mut held = std::collections::BTreeMap::new();
        let vnode = node.vnode(Partition(p)).unwrap();
        vnode
            .backend()
            .fold_objects(&FoldOptions::all(), &mut |b, k, v| {
                if let Some(object) = indexed_object(b, v).unwrap() {
                    held.insert((b.to_vec(), k.to_vec()), object.is_deleted());
                }
                FoldControl::Continue
            })
            .unwrap();
        for (named, deleted) in &held {
            let known = reader.keys.get(named);
            assert_eq!(known, Some(deleted), "{what}: partition {p}, {named:?}");
        }
        for (named, deleted) in &reader.keys {
            let gone = *deleted || reader.dropped.contains(&named.0);
            assert!(
                held.contains_key(named) || gone,
                "{what}: partition {p}: a live change of {named:?}, not held"
            );
        }
    }
}

fn readers() -> Vec<Reader> {
    vec![Reader::default(); RING as usize]
}

async fn every_cut_agrees(kind: Kind, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let disk = Disk::open(kind, &dir.path().join("data"));
    let node = start(&disk, &log);
    history(&node, seed).await;
    let total = check_agrees(&node, "before the crash");
    assert!(total > 0, "the history left index entries");
    check_changes(&node, &mut readers(), "before the crash");
    let copy = dir.path().join("log-copy");
    copy_dir(&log, &copy);
    node.shutdown();
    let all = cuts(&copy, &dir.path().join("cuts"));
    assert!(all.len() > 40, "{} records", all.len());
    // Every fourth cut, and the last (each start opens 8 backends).
    for (n, cut) in all.iter().enumerate() {
        if n % 4 != 0 && n + 1 != all.len() {
            continue;
        }
        let fresh = Disk::open(kind, &dir.path().join(format!("fresh{n}")));
        let node = start(&fresh, cut);
        let what = format!("{kind:?} seed {seed}, after record {n}");
        check_agrees(&node, &what);
        check_changes(&node, &mut readers(), &what);
        node.shutdown();
    }
}

async fn a_side_store_behind_catches_up(kind: Kind, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let data = dir.path().join("data");
    let disk = Disk::open(kind, &data);
    let node = start(&disk, &log);
    history(&node, seed).await;
    // A crash that kept every backend write and no side store write: the
    // objects and the log as they are, the side database gone.
    for p in 0..RING {
        node.vnode(Partition(p)).unwrap().backend().sync().unwrap();
    }
    let copy = dir.path().join("copy");
    copy_dir(&data, &copy);
    copy_dir(&log, &copy.join("log"));
    node.shutdown();
    drop(disk);
    std::fs::remove_dir_all(copy.join("side")).unwrap();
    let disk = Disk::open(kind, &copy);
    let node = start(&disk, &copy.join("log"));
    let total = check_agrees(&node, &format!("{kind:?} seed {seed}, side store lost"));
    assert!(total > 0);
    node.shutdown();
}

/// A reader that read every vnode's changes halfway through a history
/// misses none of the rest after a crash that lost the change logs'
/// unflushed tails (the data directory copied as the running node left
/// it) and a restart that replays the commit log; nor after a clean
/// restart.
async fn a_reader_misses_nothing_across_restarts(kind: Kind, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let disk = Disk::open(kind, &data);
    let node = start(&disk, &data.join("log"));
    history(&node, seed).await;
    let mut readers = readers();
    check_changes(&node, &mut readers, "halfway");
    history(&node, seed + 100).await;
    for p in 0..RING {
        node.vnode(Partition(p)).unwrap().backend().sync().unwrap();
    }
    let copy = dir.path().join("copy");
    copy_dir(&data, &copy);
    node.shutdown();
    drop(disk);
    let disk = Disk::open(kind, &copy);
    let node = start(&disk, &copy.join("log"));
    let what = format!("{kind:?} seed {seed}, after a crash");
    check_changes(&node, &mut readers, &what);
    history(&node, seed + 200).await;
    node.shutdown();
    drop(node);
    drop(disk);
    let disk = Disk::open(kind, &copy);
    let node = start(&disk, &copy.join("log"));
    let what = format!("{kind:?} seed {seed}, after a clean restart");
    check_changes(&node, &mut readers, &what);
    node.shutdown();
}

/// A handoff receiver numbers the objects it merges in its own sequence:
/// after every vnode's objects are handed to another node's vnodes (and
/// handed again, as after a crash of the receiver before its sync), the
/// receiver's changes name each of them once, at its latest.
async fn a_receiver_records_what_it_merges(kind: Kind, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let sender_disk = Disk::open(kind, &dir.path().join("sender"));
    let sender = start(&sender_disk, &dir.path().join("sender-log"));
    history(&sender, seed).await;
    let receiver_disk = Disk::open(kind, &dir.path().join("receiver"));
    let receiver = start(&receiver_disk, &dir.path().join("receiver-log"));
    let policy = eddy_vnode::msg::WritePolicy {
        allow_mult: true,
        last_write_wins: false,
        max_siblings: 100,
        write_once: false,
        ttl_secs: 0,
    };
    let mut handed = 0;
    for round in 0..2 {
        for p in 0..RING {
            let from = sender.vnode(Partition(p)).unwrap();
            let to = receiver.vnode(Partition(p)).unwrap();
            let mut objects = Vec::new();
            from.backend()
                .fold_objects(&FoldOptions::all(), &mut |b, k, v| {
                    if indexed_object(b, v).unwrap().is_some() {
                        objects.push((b.to_vec(), k.to_vec(), v.to_vec()));
                    }
                    FoldControl::Continue
                })
                .unwrap();
            for (bucket, key, value) in objects {
                let key = eddy_vnode::msg::StorageKey { bucket, key };
                to.merge_handed(&key, value.into(), policy).unwrap();
                handed += usize::from(round == 0);
            }
            to.sync_handed().unwrap();
        }
        let what = format!("{kind:?} seed {seed}, a receiver, round {round}");
        check_changes(&receiver, &mut readers(), &what);
    }
    assert!(handed > 0);
    sender.shutdown();
    receiver.shutdown();
}

/// A data directory written before the change sequence (here: one whose
/// change logs and commit log are gone) gets a change of each object it
/// holds at its next open.
async fn an_old_data_directory_is_seeded(kind: Kind, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let disk = Disk::open(kind, &data);
    let node = start(&disk, &dir.path().join("log"));
    history(&node, seed).await;
    node.shutdown();
    drop(node);
    drop(disk);
    std::fs::remove_dir_all(data.join("side").join("changes")).unwrap();
    std::fs::remove_dir_all(dir.path().join("log")).unwrap();
    let mut disk = Disk::open(kind, &data);
    disk.seed = true;
    let node = start(&disk, &dir.path().join("log-after"));
    let what = format!("{kind:?} seed {seed}, seeded at open");
    check_changes(&node, &mut readers(), &what);
    node.shutdown();
}

/// A clean shutdown deletes the commit log, so it must leave the side
/// stores and the change logs durable: a process that ends right after it,
/// dropping nothing (its data directory copied as it was), opens to every
/// change.
async fn a_clean_shutdown_leaves_every_change(kind: Kind, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let disk = Disk::open(kind, &data);
    let node = start(&disk, &data.join("log"));
    history(&node, seed).await;
    node.shutdown();
    let copy = dir.path().join("copy");
    copy_dir(&data, &copy);
    // The process ends here: nothing is dropped, no buffer written out.
    std::mem::forget(node);
    std::mem::forget(disk);
    let disk = Disk::open(kind, &copy);
    let node = start(&disk, &copy.join("log"));
    let what = format!("{kind:?} seed {seed}, after a clean shutdown");
    check_agrees(&node, &what);
    check_changes(&node, &mut readers(), &what);
    node.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_shutdown_leaves_the_side_stores_and_changes_durable() {
    for (kind, seed) in [(Kind::Bitcask, 12), (Kind::Lsm, 13)] {
        a_clean_shutdown_leaves_every_change(kind, seed).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_data_directory_gets_a_change_of_each_object() {
    for (kind, seed) in [(Kind::Bitcask, 10), (Kind::Lsm, 11)] {
        an_old_data_directory_is_seeded(kind, seed).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_receiver_numbers_what_it_merges() {
    for (kind, seed) in [(Kind::Bitcask, 8), (Kind::Lsm, 9)] {
        a_receiver_records_what_it_merges(kind, seed).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_of_the_changes_misses_nothing_across_restarts() {
    for (kind, seed) in [(Kind::Bitcask, 5), (Kind::Lsm, 6)] {
        a_reader_misses_nothing_across_restarts(kind, seed).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cut_of_the_log_leaves_the_side_store_agreeing_on_bitcask() {
    every_cut_agrees(Kind::Bitcask, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cut_of_the_log_leaves_the_side_store_agreeing_on_lsm() {
    every_cut_agrees(Kind::Lsm, 7).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_store_that_lost_its_writes_catches_up_at_replay() {
    for (kind, seed) in [(Kind::Bitcask, 3), (Kind::Lsm, 4)] {
        a_side_store_behind_catches_up(kind, seed).await;
    }
}
