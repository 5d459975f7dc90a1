//! The side store against a model: random histories of changes, replay
//! reconciliations and reopens on one keyspace, every region read back
//! after each step and compared with what the model says it must hold.

use std::collections::BTreeMap;

use eddy_side::env::SideConfig;
use eddy_side::{Change, ChangeEntry, SideEnv, SideStore, Term};
use eddy_storage::FoldControl;
use proptest::prelude::*;

const BUCKET: &[u8] = b"b\x00";
const FIELDS: [&[u8]; 2] = [b"f_bin", b"g_int"];

#[derive(Clone, Debug)]
enum Step {
    Apply(Write),
    Reconcile(Write),
    Reopen,
}

#[derive(Clone, Debug)]
struct Write {
    key: u8,
    version: u8,
    deleted: bool,
    terms: Vec<Term>,
    expiry: u64,
}

#[derive(Clone, Debug, PartialEq)]
struct Held {
    seq: u64,
    version: Vec<u8>,
    deleted: bool,
    terms: Vec<Term>,
    expiry: u64,
}

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
    (
        0u8..6,
        any::<u8>(),
        prop::bool::weighted(0.2),
        terms,
        expiry,
    )
        .prop_map(|(key, version, deleted, terms, expiry)| Write {
            key,
            version,
            deleted,
            terms,
            expiry,
        })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => write().prop_map(Step::Apply),
        2 => write().prop_map(Step::Reconcile),
        1 => Just(Step::Reopen),
    ]
}

/// Runs `f` with the change `w` makes, as version `version`.
fn with_change<T>(w: &Write, version: &[u8], f: impl FnOnce(&Change<'_>) -> T) -> T {
    let key = [b'k', w.key];
    f(&Change {
        bucket: BUCKET,
        key: &key,
        version,
        deleted: w.deleted,
        terms: &w.terms,
        expiry: w.expiry,
    })
}

fn apply(store: &SideStore, w: &Write, version: &[u8]) -> u64 {
    with_change(w, version, |c| store.apply(c)).unwrap()
}

/// What the model says a write leaves.
fn held(w: &Write, seq: u64) -> Held {
    Held {
        seq,
        version: vec![w.version],
        deleted: w.deleted,
        terms: if w.deleted { vec![] } else { w.terms.clone() },
        expiry: if w.deleted { 0 } else { w.expiry },
    }
}

fn all_changes(store: &SideStore) -> Vec<ChangeEntry> {
    let mut out = Vec::new();
    store
        .changes_since(0, &mut |e| {
            out.push(e);
            FoldControl::Continue
        })
        .unwrap();
    out
}

fn index_entries(
    store: &SideStore,
    field: &[u8],
    after: Option<(&[u8], &[u8])>,
    now: u64,
    max: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    store
        .index_range(
            (BUCKET, field),
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

fn check(store: &SideStore, model: &BTreeMap<u8, Held>, now: u64) -> Result<(), TestCaseError> {
    // The change sequence: each key once, at its latest change, in order.
    let changes = all_changes(store);
    let mut expected: Vec<(u64, u8)> = model.iter().map(|(k, h)| (h.seq, *k)).collect();
    expected.sort_unstable();
    let got: Vec<(u64, u8)> = changes.iter().map(|e| (e.seq, e.key[1])).collect();
    prop_assert_eq!(&got, &expected);
    for e in &changes {
        let h = &model[&e.key[1]];
        prop_assert_eq!((&e.version, e.deleted), (&h.version, h.deleted));
    }
    // Index entries: the live, unexpired keys' terms, in (term, key) order,
    // and pages of every size join to the whole.
    let live = |h: &Held| !h.deleted && (h.expiry == 0 || h.expiry > now);
    for field in FIELDS {
        let mut want: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .filter(|(_, h)| live(h))
            .flat_map(|(k, h)| {
                h.terms
                    .iter()
                    .filter(|(f, _)| f == field)
                    .map(move |(_, t)| (t.clone(), vec![b'k', *k]))
            })
            .collect();
        want.sort();
        prop_assert_eq!(&index_entries(store, field, None, now, usize::MAX), &want);
        for page in 1..=3 {
            let mut joined = Vec::new();
            loop {
                let after = joined
                    .last()
                    .map(|(t, k): &(Vec<u8>, Vec<u8>)| (t.clone(), k.clone()));
                let next = index_entries(
                    store,
                    field,
                    after.as_ref().map(|(t, k)| (&t[..], &k[..])),
                    now,
                    page,
                );
                let done = next.len() < page;
                joined.extend(next);
                if done {
                    break;
                }
            }
            prop_assert_eq!(&joined, &want);
        }
    }
    // Keys in order, and the expiry order.
    let mut keys = Vec::new();
    store
        .keys(BUCKET, (None, None), None, now, &mut |k| {
            keys.push(k[1]);
            FoldControl::Continue
        })
        .unwrap();
    let want: Vec<u8> = model
        .iter()
        .filter(|(_, h)| live(h))
        .map(|(k, _)| *k)
        .collect();
    prop_assert_eq!(keys, want);
    let mut gone = Vec::new();
    store
        .expired(now, &mut |at, b, k| {
            assert_eq!(b, BUCKET);
            gone.push((at, k[1]));
            FoldControl::Continue
        })
        .unwrap();
    let mut want: Vec<(u64, u8)> = model
        .iter()
        .filter(|(_, h)| h.expiry != 0 && h.expiry <= now)
        .map(|(k, h)| (h.expiry, *k))
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
        let mut model: BTreeMap<u8, Held> = BTreeMap::new();
        let mut last = 0u64;
        let mut epochs = 1;
        for s in steps {
            match s {
                Step::Apply(w) => {
                    let seq = apply(&store, &w, &[w.version]);
                    prop_assert!(seq > last);
                    last = seq;
                    model.insert(w.key, held(&w, seq));
                }
                Step::Reconcile(w) => {
                    let same = model.get(&w.key).is_some_and(|h| {
                        let mut h2 = held(&w, h.seq);
                        h2.seq = h.seq;
                        h2 == *h
                    });
                    let got = with_change(&w, &[w.version], |c| store.reconcile(c)).unwrap();
                    if same {
                        prop_assert_eq!(got, None);
                    } else {
                        let seq = got.expect("a change the store lacks is recorded");
                        prop_assert!(seq > last);
                        last = seq;
                        model.insert(w.key, held(&w, seq));
                    }
                }
                Step::Reopen => {
                    drop(store);
                    store = env.open_vnode(3, 1).unwrap();
                    epochs += 1;
                    prop_assert_eq!(store.epoch(), epochs);
                    prop_assert_eq!(store.epochs().last().copied(), Some((epochs, last + 1)));
                }
            }
            prop_assert_eq!(store.last_seq(), last);
            check(&store, &model, now)?;
        }
    }
}

#[test]
fn incarnations_are_apart_and_a_destroyed_one_comes_back_empty() {
    let dir = tempfile::tempdir().unwrap();
    let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
    let one = env.open_vnode(3, 1).unwrap();
    let two = env.open_vnode(3, 2).unwrap();
    let w = Write {
        key: 1,
        version: 1,
        deleted: false,
        terms: vec![(b"f_bin".to_vec(), b"t".to_vec())],
        expiry: 0,
    };
    assert_eq!(apply(&one, &w, b"v"), 1);
    assert!(all_changes(&two).is_empty());
    env.destroy_vnode(one).unwrap();
    assert!(!env.has_vnode(3, 1));
    let again = env.open_vnode(3, 1).unwrap();
    assert!(all_changes(&again).is_empty());
    assert_eq!(again.epochs(), &[(1, 1)]);
}

#[test]
fn changes_and_sequences_survive_a_reopen_of_the_database() {
    let dir = tempfile::tempdir().unwrap();
    {
        let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
        let store = env.open_vnode(9, 4).unwrap();
        for key in 0..3 {
            let w = Write {
                key,
                version: key,
                deleted: false,
                terms: vec![],
                expiry: 0,
            };
            apply(&store, &w, &[key]);
        }
        env.persist().unwrap();
    }
    let env = SideEnv::open(dir.path(), SideConfig::default()).unwrap();
    let store = env.open_vnode(9, 4).unwrap();
    assert_eq!(
        all_changes(&store)
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(store.epochs(), &[(1, 1), (2, 4)]);
    let w = Write {
        key: 0,
        version: 9,
        deleted: true,
        terms: vec![],
        expiry: 0,
    };
    assert_eq!(apply(&store, &w, b"x"), 4);
}
