//! The stored bodies of fixed small states, pinned byte for byte by the
//! files in `tests/fixtures/` (docs/formats/datatypes.md walks through
//! them). A change of encoding, or of the HLL hash, fails here; with
//! `EDDY_WRITE_FIXTURES=1` the test rewrites the files instead, for a
//! deliberate new format version.

use std::path::PathBuf;

use eddy_dt::codec::{Reader, Writer};
use eddy_dt::{Actor, DecodeError, GSet, Hll, Orswot, PnCounter};

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

fn check<T: PartialEq + std::fmt::Debug>(
    name: &str,
    state: &T,
    encode: impl Fn(&T, &mut Writer),
    decode: impl Fn(&mut Reader) -> Result<T, DecodeError>,
) {
    let mut w = Writer::new();
    encode(state, &mut w);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    if std::env::var_os("EDDY_WRITE_FIXTURES").is_some_and(|v| v == "1") {
        std::fs::write(&path, &w.buf).unwrap();
    }
    let pinned = std::fs::read(&path).unwrap();
    assert_eq!(w.buf, pinned, "{name}: the encoding changed");
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
