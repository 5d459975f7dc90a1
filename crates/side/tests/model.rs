//! The side store against a model: random histories of key states set
//! (twice over, as replay does), buckets dropped, the sweep's durable mark
//! raised, the keyspace compacted (dropping what the mark covers) and the
//! store reopened on one keyspace, every region read back after each step
//! and compared with what the model says it must hold.

use std::collections::BTreeMap;

use eddy_side::env::SideConfig;
use eddy_side::{KeyRecord, KeyState, SideEnv, SideStore, SweepFrom, Term};
use eddy_storage::FoldControl;
use proptest::prelude::*;

const BUCKETS: [&[u8]; 2] = [b"b\x00", b"c"];
const FIELDS: [&[u8]; 2] = [b"f_bin", b"g_int"];

#[derive(Clone, Debug)]
enum Step {
    Set(Write),
    /// A checkpoint after the sweep processed every expiry up to this.
    Swept(u64),
    /// A compaction of the whole keyspace.
    Compact,
    Drop(usize),
    Reopen,
}

#[derive(Clone, Debug)]
struct Write {
    bucket: usize,
    key: u8,
    terms: Vec<Term>,
    expiry: u64,
}

/// The model: what each (bucket, key) holds.
type Model = BTreeMap<(usize, u8), KeyRecord>;

fn write() -> impl Strategy<Value = Write> {
    let term = (
        0..2usize,
        prop_oneof![
            Just(b"".to_vec()),
            Just(b"t\x00".to_vec()),
            Just(b"u".to_vec())
        ],
    )
        .prop_map(|(f, t)| (FIELDS[f].to_vec(), t));
    let terms = proptest::collection::btree_set(term, 0..3).prop_map(|s| s.into_iter().collect());
    let expiry = prop_oneof![2 => Just(0u64), 1 => 1u64..20];
    (0..2usize, 0u8..6, terms, expiry).prop_map(|(bucket, key, terms, expiry)| Write {
        bucket,
        key,
        terms,
        expiry,
    })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => write().prop_map(Step::Set),
        1 => (0u64..25).prop_map(Step::Swept),
        1 => Just(Step::Compact),
        1 => (0..2usize).prop_map(Step::Drop),
        1 => Just(Step::Reopen),
    ]
}

fn set(store: &SideStore, w: &Write) -> bool {
    let key = [b'k', w.key];
    let state = KeyState {
        bucket: BUCKETS[w.bucket],
        key: &key,
        terms: &w.terms,
        expiry: w.expiry,
    };
    store.set(&state).unwrap()
}

fn index_entries(
    store: &SideStore,
    (bucket, field): (&[u8], &[u8]),
    after: Option<(&[u8], &[u8])>,
    now: u64,
    max: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    store
        .index_range(
            (bucket, field),
            (b"", b"\xff\xff"),
            after,
            now,
            &mut |t, k| {
                out.push((t.to_vec(), k.to_vec()));
                if out.len() == max {
                    FoldControl::Stop
                } else {
                    FoldControl::Continue
                }
            },
        )
        .unwrap();
    out
}

/// Pages of `page` entries, each read from the last one's continuation.
fn joined_pages(
    store: &SideStore,
    at: (&[u8], &[u8]),
    now: u64,
    page: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut joined: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    loop {
        let after = joined.last().cloned();
        let after = after.as_ref().map(|(t, k)| (&t[..], &k[..]));
        let next = index_entries(store, at, after, now, page);
        let done = next.len() < page;
        joined.extend(next);
        if done {
            return joined;
        }
    }
}

fn check(store: &SideStore, model: &Model, now: u64) -> Result<(), TestCaseError> {
    // Key records: exactly the keys with terms or an expiry.
    for (b, bucket) in BUCKETS.iter().enumerate() {
        for k in 0u8..6 {
            let got = store.key_record(bucket, &[b'k', k]).unwrap();
            prop_assert_eq!(got.as_ref(), model.get(&(b, k)));
        }
    }
    // Index entries: the unexpired keys' terms, in (term, key) order, and
    // pages of every size join to the whole.
    let live = |r: &KeyRecord| r.expiry == 0 || r.expiry > now;
    for (b, bucket) in BUCKETS.iter().enumerate() {
        for field in FIELDS {
            let mut want: Vec<(Vec<u8>, Vec<u8>)> = model
                .iter()
                .filter(|((mb, _), r)| *mb == b && live(r))
                .flat_map(|((_, k), r)| {
                    r.terms
                        .iter()
                        .filter(|(f, _)| f == field)
                        .map(move |(_, t)| (t.clone(), vec![b'k', *k]))
                })
                .collect();
            want.sort();
            let at = (*bucket, field);
            prop_assert_eq!(&index_entries(store, at, None, now, usize::MAX), &want);
            for page in 1..=3 {
                prop_assert_eq!(&joined_pages(store, at, now, page), &want);
            }
        }
    }
    // The expiry order.
    let mut gone = Vec::new();
    store
        .expired(SweepFrom::Secs(0), now, &mut |at, b, k| {
            let bucket = BUCKETS.iter().position(|x| *x == b).unwrap();
            gone.push((at, bucket, k[1]));
            FoldControl::Continue
        })
        .unwrap();
    let mut want: Vec<(u64, usize, u8)> = model
        .iter()
        .filter(|(_, r)| r.expiry != 0 && r.expiry <= now)
        .map(|((b, k), r)| (r.expiry, *b, *k))
        .collect();
    want.sort_unstable();
    prop_assert_eq!(gone, want);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn the_side_store_holds_what_the_model_does(steps in proptest::collection::vec(step(), 1..40), now in 0u64..25) {
        let dir = tempfile::tempdir().unwrap();
        let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
        let mut store = env.open_vnode(3, 1).unwrap();
        let mut model = Model::new();
        let mut durable = 0;
        for s in steps {
            match s {
                Step::Set(w) => {
                    let new = KeyRecord { expiry: w.expiry, terms: w.terms.clone() };
                    let old = model.get(&(w.bucket, w.key)).cloned().unwrap_or_default();
                    prop_assert_eq!(set(&store, &w), old != new);
                    // Setting it again, as replay after a crash does, writes nothing.
                    prop_assert!(!set(&store, &w));
                    match new.is_empty() {
                        true => model.remove(&(w.bucket, w.key)),
                        false => model.insert((w.bucket, w.key), new),
                    };
                }
                Step::Swept(upto) => {
                    store.swept().note_swept();
                    store.write_swept(upto).unwrap();
                    store.swept_durable(upto);
                    durable = durable.max(upto);
                    prop_assert_eq!(store.swept().durable(), durable);
                }
                Step::Compact => {
                    store.compact().unwrap();
                    model.retain(|_, r| r.expiry == 0 || r.expiry > durable);
                }
                Step::Drop(b) => {
                    let held = model.keys().filter(|(mb, _)| *mb == b).count() as u64;
                    prop_assert_eq!(store.drop_bucket(BUCKETS[b]).unwrap(), held);
                    model.retain(|(mb, _), _| *mb != b);
                }
                Step::Reopen => {
                    drop(store);
                    store = env.open_vnode(3, 1).unwrap();
                    prop_assert_eq!(store.swept().durable(), durable);
                }
            }
            check(&store, &model, now)?;
        }
    }
}

fn one_term(key: u8) -> Write {
    Write {
        bucket: 0,
        key,
        terms: vec![(b"f_bin".to_vec(), b"t".to_vec())],
        expiry: 0,
    }
}

fn all_entries(store: &SideStore) -> Vec<(Vec<u8>, Vec<u8>)> {
    index_entries(store, (BUCKETS[0], b"f_bin"), None, 0, usize::MAX)
}

#[test]
fn incarnations_are_apart_and_a_destroyed_one_comes_back_empty() {
    let dir = tempfile::tempdir().unwrap();
    let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
    let one = env.open_vnode(3, 1).unwrap();
    let two = env.open_vnode(3, 2).unwrap();
    one.mark_built().unwrap();
    assert!(set(&one, &one_term(1)));
    assert!(all_entries(&two).is_empty());
    assert!(!two.is_built().unwrap());
    env.destroy_partition(3).unwrap();
    assert!(!env.has_vnode(3, 1));
    let again = env.open_vnode(3, 1).unwrap();
    assert!(all_entries(&again).is_empty());
    assert!(!again.is_built().unwrap());
}

#[test]
fn a_partition_is_destroyed_whole_and_orphans_go() {
    let dir = tempfile::tempdir().unwrap();
    let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
    for (p, i) in [(3, 1), (3, 2), (4, 1), (5, 7)] {
        set(&env.open_vnode(p, i).unwrap(), &one_term(1));
    }
    let changes = |name: &str| dir.path().join("changes").join(name).exists();
    assert!(
        changes("3.1") && changes("3.2"),
        "each vnode keeps a change log"
    );
    env.destroy_partition(3).unwrap();
    assert!(!env.has_vnode(3, 1) && !env.has_vnode(3, 2));
    assert!(!changes("3.1") && !changes("3.2"));
    assert!(env.has_vnode(4, 1));
    let gone = env.keep_only(&[(4, 1)]).unwrap();
    assert_eq!(gone, ["side.5.7", "changes/5.7"]);
    assert!(env.has_vnode(4, 1) && !env.has_vnode(5, 7));
    assert!(changes("4.1") && !changes("5.7"));
}

#[test]
fn entries_survive_a_reopen_of_the_database() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
        let store = env.open_vnode(9, 4).unwrap();
        for key in 0..3 {
            set(&store, &one_term(key));
        }
        store.mark_built().unwrap();
        env.persist().unwrap();
    }
    let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
    let store = env.open_vnode(9, 4).unwrap();
    assert!(store.is_built().unwrap());
    let keys: Vec<Vec<u8>> = all_entries(&store).into_iter().map(|(_, k)| k).collect();
    assert_eq!(keys, [b"k\x00", b"k\x01", b"k\x02"]);
}

#[test]
fn a_reopened_database_compacts_away_what_its_swept_mark_covers() {
    let dir = tempfile::tempdir().unwrap();
    let expiring = |key, expiry| Write {
        expiry,
        ..one_term(key)
    };
    {
        let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
        let store = env.open_vnode(9, 4).unwrap();
        set(&store, &expiring(0, 10));
        set(&store, &expiring(1, 20));
        set(&store, &one_term(2));
        store.swept().note_swept();
        store.write_swept(10).unwrap();
        env.persist().unwrap();
    }
    let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
    let store = env.open_vnode(9, 4).unwrap();
    assert_eq!(store.swept().durable(), 10, "the mark is kept");
    store.write_swept(30).unwrap();
    env.persist().unwrap();
    drop(store);
    let store = env.open_vnode(9, 4).unwrap();
    assert_eq!(
        store.swept().durable(),
        10,
        "nothing swept since: not written"
    );
    let keys = |store: &SideStore| -> Vec<Vec<u8>> {
        all_entries(store).into_iter().map(|(_, k)| k).collect()
    };
    assert_eq!(keys(&store), [b"k\x00", b"k\x01", b"k\x02"]);
    store.compact().unwrap();
    assert_eq!(keys(&store), [b"k\x01", b"k\x02"]);
    assert_eq!(store.key_record(BUCKETS[0], b"k\x00").unwrap(), None);
    let mut order = Vec::new();
    (store.expired(SweepFrom::Secs(0), 100, &mut |at, _, k| {
        order.push((at, k.to_vec()));
        FoldControl::Continue
    }))
    .unwrap();
    assert_eq!(order, [(20, b"k\x01".to_vec())]);
}
