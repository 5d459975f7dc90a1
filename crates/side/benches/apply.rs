//! What one change costs the side store (design note 027, "Writes"): the
//! terms of a key with two changed, over keys the store already holds, and
//! a key without terms set to none (a read that finds no record); against the floor of one blind fjall insert of a
//! key record into the same kind of keyspace, and of a batch of 1,000
//! such inserts (what a change would cost if changes were written in
//! batches off the request path); and the floor of the design note 027
//! chose after measuring these: a change appended to an append-only log
//! (a framed entry with its CRC copied into a buffer under a lock, the
//! buffer written out with one `write` per 64 KiB). Run:
//! `cargo bench -p eddy-side --bench apply`.

use divan::Bencher;
use eddy_side::env::SideConfig;
use eddy_side::{KeyState, SideEnv, Term};
use std::io::Write;

use fjall::{Database, Keyspace, KeyspaceCreateOptions};
use parking_lot::Mutex;

const KEYS: u64 = 100_000;

fn main() {
    divan::main();
}

fn key(i: u64) -> [u8; 8] {
    (i % KEYS).to_be_bytes()
}

fn terms(i: u64) -> Vec<Term> {
    vec![
        (
            b"affiliate_bin".to_vec(),
            format!("a{}", i % 1000).into_bytes(),
        ),
        (b"redeemed_int".to_vec(), (i % 100).to_be_bytes().to_vec()),
    ]
}

fn changes(bencher: Bencher, indexed: bool) {
    let dir = tempfile::tempdir().unwrap();
    let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
    let store = env.open_vnode(0, 1).unwrap();
    let write = |i: u64| {
        let (k, t) = (key(i), if indexed { terms(i) } else { vec![] });
        let state = KeyState {
            bucket: b"coupons",
            key: &k,
            terms: &t,
            expiry: 0,
        };
        store.set(&state).unwrap()
    };
    (0..KEYS).for_each(|i| {
        write(i);
    });
    let mut i = KEYS;
    bencher.bench_local(|| {
        i += 7;
        write(i)
    });
}

#[divan::bench(sample_count = 1000)]
fn set_without_terms(bencher: Bencher) {
    changes(bencher, false);
}

#[divan::bench(sample_count = 1000)]
fn set_two_terms(bencher: Bencher) {
    changes(bencher, true);
}

/// A bare fjall keyspace holding `KEYS` record-sized values, as the side
/// store's would.
fn floor() -> (tempfile::TempDir, Database, Keyspace) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::builder(dir.path())
        .manual_journal_persist(true)
        .open()
        .unwrap();
    let ks = db
        .keyspace("floor", KeyspaceCreateOptions::default)
        .unwrap();
    (0..KEYS).for_each(|i| ks.insert(key(i), [0u8; 21]).unwrap());
    (dir, db, ks)
}

/// The floor: one insert of a record-sized value, no read, no batch.
#[divan::bench(sample_count = 1000)]
fn fjall_insert(bencher: Bencher) {
    let (_dir, _db, ks) = floor();
    let value = [0u8; 21];
    let mut i = KEYS;
    bencher.bench_local(|| {
        i += 7;
        ks.insert(key(i), value).unwrap()
    });
}

/// The floor of batched writes: 1,000 blind inserts in one batch.
#[divan::bench(sample_count = 30)]
fn fjall_batch_of_1000(bencher: Bencher) {
    let (_dir, db, ks) = floor();
    let value = [0u8; 21];
    let mut i = KEYS;
    bencher.bench_local(|| {
        let mut batch = db.batch();
        for _ in 0..1000 {
            i += 7;
            batch.insert(&ks, key(i), value);
        }
        batch.commit().unwrap()
    });
}

/// The change-log floor: one framed change entry (length, CRC-32,
/// sequence, the change) appended to a buffered file under a lock.
#[divan::bench(sample_count = 1000)]
fn change_log_append(bencher: Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::File::create(dir.path().join("changes.log")).unwrap();
    let log = Mutex::new((std::io::BufWriter::with_capacity(64 << 10, file), 0u64));
    let mut i = 0u64;
    bencher.bench_local(|| {
        i += 7;
        // flags · bucket · key · version, as a change entry would be.
        let mut payload = vec![0u8];
        payload.extend_from_slice(b"coupons\x00\x00");
        payload.extend_from_slice(&key(i));
        payload.extend_from_slice(&[7u8; 24]);
        let mut log = log.lock();
        log.1 += 1;
        let seq = log.1;
        let mut frame = Vec::with_capacity(payload.len() + 16);
        frame.extend_from_slice(&(payload.len() as u32 + 8).to_be_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&seq.to_be_bytes());
        crc.update(&payload);
        frame.extend_from_slice(&crc.finalize().to_be_bytes());
        frame.extend_from_slice(&seq.to_be_bytes());
        frame.extend_from_slice(&payload);
        log.0.write_all(&frame).unwrap();
        seq
    });
}
