//! Side store format v1, pinned: a fixed history's keyspace, entry by
//! entry (`fixtures/side_v1.txt`: key and value in hex, in key order), and
//! that keyspace, written raw, read back by this build. Regenerate only
//! for a new format (`EDDY_WRITE_FIXTURES=1`), keeping v1's file.

use eddy_side::env::SideConfig;
use eddy_side::{KeyRecord, KeyState, SideEnv, SideStore, SweepFrom, Term};
use eddy_storage::FoldControl;
use fjall::{Database, KeyspaceCreateOptions};

mod hex;
use hex::{hex, unhex};

const FIXTURE: &str = "tests/fixtures/side_v1.txt";

/// Key, terms, expiry.
type Write = (&'static [u8], Vec<Term>, u64);

fn history(store: &SideStore) {
    let int8 = [0x80, 0, 0, 0, 0, 0, 0, 8];
    let writes: [Write; 5] = [
        (
            b"k1",
            vec![
                (b"f_bin".to_vec(), b"a".to_vec()),
                (b"g_int".to_vec(), int8.to_vec()),
            ],
            0,
        ),
        (b"k2", vec![(b"f_bin".to_vec(), b"b\x00".to_vec())], 100),
        (b"k1", vec![(b"f_bin".to_vec(), b"c".to_vec())], 0),
        (b"k3", vec![(b"f_bin".to_vec(), b"d".to_vec())], 0),
        (b"k3", vec![], 0),
    ];
    for (key, terms, expiry) in &writes {
        let state = KeyState {
            bucket: b"type\x00b",
            key,
            terms,
            expiry: *expiry,
        };
        store.set(&state).unwrap();
    }
    store.mark_built().unwrap();
}

#[test]
fn format_v1_is_written_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
    history(&env.open_vnode(1, 1).unwrap());
    env.persist().unwrap();
    drop(env);
    let db = Database::builder(dir.path()).open().unwrap();
    let ks = db
        .keyspace("side.1.1", KeyspaceCreateOptions::default)
        .unwrap();
    let dump: String = ks
        .iter()
        .map(|g| {
            let (k, v) = g.into_inner().unwrap();
            format!("{} {}\n", hex(&k), hex(&v))
        })
        .collect();
    if std::env::var_os("EDDY_WRITE_FIXTURES").is_some() {
        std::fs::write(FIXTURE, &dump).unwrap();
    }
    assert_eq!(dump, std::fs::read_to_string(FIXTURE).unwrap());
}

#[test]
fn a_v1_keyspace_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::builder(dir.path()).open().unwrap();
        let ks = db
            .keyspace("side.1.1", KeyspaceCreateOptions::default)
            .unwrap();
        for line in std::fs::read_to_string(FIXTURE).unwrap().lines() {
            let (k, v) = line.split_once(' ').unwrap();
            ks.insert(unhex(k), unhex(v)).unwrap();
        }
        db.persist(fjall::PersistMode::SyncAll).unwrap();
    }
    let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
    let store = env.open_vnode(1, 1).unwrap();
    assert!(store.is_built().unwrap());
    assert_eq!(store.key_record(b"type\x00b", b"k3").unwrap(), None);
    let k2 = KeyRecord {
        expiry: 100,
        terms: vec![(b"f_bin".to_vec(), b"b\x00".to_vec())],
    };
    assert_eq!(store.key_record(b"type\x00b", b"k2").unwrap(), Some(k2));
    let mut entries = Vec::new();
    store
        .index_range(
            (b"type\x00b", b"f_bin"),
            (b"", b"z"),
            None,
            50,
            &mut |t, k| {
                entries.push((t.to_vec(), k.to_vec()));
                FoldControl::Continue
            },
        )
        .unwrap();
    assert_eq!(
        entries,
        [
            (b"b\x00".to_vec(), b"k2".to_vec()),
            (b"c".to_vec(), b"k1".to_vec())
        ]
    );
    let mut gone = Vec::new();
    store
        .expired(SweepFrom::Secs(0), 100, &mut |at, _, k| {
            gone.push((at, k.to_vec()));
            FoldControl::Continue
        })
        .unwrap();
    assert_eq!(gone, [(100, b"k2".to_vec())]);
}
