//! The stored bodies of fixed small states, and the records of a small
//! segmented set and the wire form of a set delta, pinned byte for byte by
//! the files in `tests/fixtures/` (docs/formats/datatypes.md walks through
//! them). A change of encoding, or of the HLL hash, fails here; with
//! `EDDY_WRITE_FIXTURES=1` the test rewrites the files instead, for a
//! deliberate new format version.

use std::path::PathBuf;

use eddy_dt::codec::{Reader, Writer};
use eddy_dt::{Actor, DecodeError, GSet, Hll, Orswot, OrswotDelta, PnCounter, SetRoot};

fn counter() -> PnCounter {
    let mut c = PnCounter::new();
    c.increment(Actor(1), 5).unwrap();
    c.increment(Actor(2), -3).unwrap();
    c.increment(Actor(1), -1).unwrap();
    c
}

/// Members a (actor 1) and c (actor 2, after b was removed), and a
/// deferred remove of z from a context that saw actor 3's first add.
fn set() -> Orswot {
    let mut s = Orswot::new();
    s.add(Actor(1), b"a");
    s.add(Actor(2), b"b");
    s.remove(b"b", Some(&s.clock().clone())).unwrap();
    s.add(Actor(2), b"c");
    let mut other = Orswot::new();
    other.add(Actor(3), b"z");
    s.remove(b"z", Some(other.clock())).unwrap();
    s
}

fn gset() -> GSet {
    let mut s = GSet::new();
    for m in ["banana", "apple", "cherry"] {
        s.add(m.as_bytes());
    }
    s
}

/// Precision 4 with three elements: the sparse form.
fn hll_sparse() -> Hll {
    let mut h = Hll::new(4).unwrap();
    for e in ["x", "y", "z"] {
        h.add(e.as_bytes());
    }
    h
}

/// Precision 4 with forty elements: the dense form.
fn hll_dense() -> Hll {
    let mut h = Hll::new(4).unwrap();
    (0..40u8).for_each(|e| h.add(&[e]));
    h
}

/// The bytes pinned in `tests/fixtures/name`, after checking that `bytes`
/// are them (or writing them, with `EDDY_WRITE_FIXTURES=1`).
fn pinned(name: &str, bytes: &[u8]) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    if std::env::var_os("EDDY_WRITE_FIXTURES").is_some_and(|v| v == "1") {
        std::fs::write(&path, bytes).unwrap();
    }
    let pinned = std::fs::read(&path).unwrap();
    assert_eq!(bytes, pinned, "{name}: the encoding changed");
    pinned
}

fn check<T: PartialEq + std::fmt::Debug>(
    name: &str,
    state: &T,
    encode: impl Fn(&T, &mut Writer),
    decode: impl Fn(&mut Reader) -> Result<T, DecodeError>,
) {
    let mut w = Writer::new();
    encode(state, &mut w);
    let pinned = pinned(name, &w.buf);
    let mut r = Reader::new(&pinned);
    assert_eq!(&decode(&mut r).unwrap(), state, "{name}");
    r.finish().unwrap();
}

#[test]
fn counter_v1() {
    check(
        "counter-v1.bin",
        &counter(),
        PnCounter::encode,
        PnCounter::decode,
    );
}

#[test]
fn set_v1() {
    let s = set();
    assert_eq!(s.deferred_len(), 1);
    check("set-v1.bin", &s, Orswot::encode, Orswot::decode);
}

#[test]
fn gset_v1() {
    check("gset-v1.bin", &gset(), GSet::encode, GSet::decode);
}

#[test]
fn hll_v1() {
    check("hll-v1.bin", &hll_sparse(), Hll::encode, Hll::decode);
    check("hll-dense-v1.bin", &hll_dense(), Hll::encode, Hll::decode);
}

/// The set of `set-v1.bin` with d added by actor 1, split two members a
/// segment from id 7: segments [a, c] (id 7) and [d] (id 8).
#[test]
fn set_root_and_segment_v1() {
    let mut s = set();
    s.add(Actor(1), b"d");
    let (root, segments) = s.clone().into_segments_of(7, 2);
    assert_eq!(
        segments.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [7, 8]
    );
    let root_bytes = pinned("set-root-v1.bin", &root.encode());
    let segment = pinned("set-segment-v1.bin", &segments[0].1);
    assert_eq!(SetRoot::decode(&root_bytes).unwrap(), root);
    let first = root.decode_segment(0, &segment).unwrap();
    let second = root.decode_segment(1, &segments[1].1).unwrap();
    assert_eq!(root.assemble(vec![first, second]).unwrap(), s);
}

/// Actor 2 adds a (which actor 1 had added) and removes c with a context
/// that saw actor 3's first add, which this set has not: a drops a's old
/// dot, c's dot is dropped and its remove deferred.
#[test]
fn set_delta_v1() {
    let mut s = set();
    let mut context = s.clock().clone();
    context.raise(Actor(3), 1);
    let delta = s
        .apply_op(Actor(2), &[b"a"], &[b"c"], Some(&context))
        .unwrap();
    assert!(!delta.drops.is_empty() && !delta.deferred.is_empty());
    let bytes = pinned("set-delta-v1.bin", &delta.encode());
    assert_eq!(OrswotDelta::decode(&bytes).unwrap(), delta);
}
