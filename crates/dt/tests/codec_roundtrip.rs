//! The stored bodies of every state, property-tested: a state built by
//! random operations decodes back equal to itself; no input (random
//! bytes, a valid body cut short or with one byte changed) makes a decoder
//! panic; a cut-short body is refused; whatever a decoder accepts encodes
//! and decodes back to the same state.

use std::fmt::Debug;

use eddy_dt::codec::{Reader, Writer};
use eddy_dt::{Actor, DecodeError, GSet, Hll, Orswot, PnCounter};
use proptest::prelude::*;

/// A state with a stored body.
trait Body: Sized + Clone + PartialEq + Debug {
    fn write(&self, w: &mut Writer);
    fn read(r: &mut Reader) -> Result<Self, DecodeError>;
}

macro_rules! body {
    ($($t:ty),*) => {$(
        impl Body for $t {
            fn write(&self, w: &mut Writer) {
                self.encode(w)
            }
            fn read(r: &mut Reader) -> Result<Self, DecodeError> {
                <$t>::decode(r)
            }
        }
    )*};
}
body!(PnCounter, GSet, Orswot, Hll);

fn encode<T: Body>(state: &T) -> Vec<u8> {
    let mut w = Writer::new();
    state.write(&mut w);
    w.buf
}

fn decode<T: Body>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut r = Reader::new(bytes);
    let state = T::read(&mut r)?;
    r.finish()?;
    Ok(state)
}

/// Decodes `bytes` (must not panic); what decodes must round-trip.
fn decode_any<T: Body>(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(state) = decode::<T>(bytes) {
        prop_assert_eq!(decode::<T>(&encode(&state)), Ok(state));
    }
    Ok(())
}

/// The state round-trips; every cut of its body is refused; a changed
/// byte never panics.
fn check<T: Body>(state: &T, flip_at: usize, flip: u8) -> Result<(), TestCaseError> {
    let bytes = encode(state);
    prop_assert_eq!(&decode::<T>(&bytes), &Ok(state.clone()));
    for end in 0..bytes.len() {
        prop_assert!(decode::<T>(&bytes[..end]).is_err(), "cut at {}", end);
    }
    let mut changed = bytes.clone();
    let i = flip_at % changed.len();
    changed[i] ^= flip;
    decode_any::<T>(&changed)
}

fn counter() -> impl Strategy<Value = PnCounter> {
    prop::collection::vec((0..5u64, any::<i64>()), 0..20).prop_map(|ops| {
        let mut c = PnCounter::new();
        for (actor, delta) in ops {
            // Refused overflows change nothing.
            let _ = c.increment(Actor(actor * 0x0101_0101_0101), delta);
        }
        c
    })
}

fn gset() -> impl Strategy<Value = GSet> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..20).prop_map(|ms| {
        let mut s = GSet::new();
        ms.iter().for_each(|m| s.add(m));
        s
    })
}

#[derive(Clone, Debug)]
enum SetOp {
    Add(usize, u8),
    /// Removes with the context replica `from` read (stale ones defer).
    Remove {
        at: usize,
        from: usize,
        members: Vec<u8>,
    },
    Merge(usize, usize),
}

/// Replica 0's set after random adds, removes and merges of 3 replicas.
fn orswot() -> impl Strategy<Value = Orswot> {
    let op = prop_oneof![
        3 => (0..3usize, 0..8u8).prop_map(|(i, m)| SetOp::Add(i, m)),
        2 => (0..3usize, 0..3usize, prop::collection::vec(0..8u8, 0..3))
            .prop_map(|(at, from, members)| SetOp::Remove { at, from, members }),
        2 => (0..3usize, 0..3usize).prop_map(|(i, j)| SetOp::Merge(i, j)),
    ];
    prop::collection::vec(op, 0..40).prop_map(|ops| {
        let mut sets = vec![Orswot::new(); 3];
        for op in ops {
            match op {
                SetOp::Add(i, m) => sets[i].add(Actor(i as u64 * 1000 + 7), &[m]),
                SetOp::Remove { at, from, members } => {
                    let context = sets[from].clock().clone();
                    let members: Vec<&[u8]> = members.iter().map(std::slice::from_ref).collect();
                    sets[at].remove_all(&members, Some(&context)).unwrap();
                }
                SetOp::Merge(i, j) => {
                    let other = sets[j].clone();
                    sets[i].merge(&other);
                }
            }
        }
        sets.swap_remove(0)
    })
}

fn hll() -> impl Strategy<Value = Hll> {
    let one = (4..=16u8, prop::collection::vec(any::<u32>(), 0..400));
    prop::collection::vec(one, 1..3).prop_map(|parts| {
        let mut out: Option<Hll> = None;
        for (p, elements) in parts {
            let mut h = Hll::new(p).unwrap();
            elements.iter().for_each(|e| h.add(&e.to_le_bytes()));
            match &mut out {
                Some(o) => o.merge(&h),
                None => out = Some(h),
            }
        }
        out.expect("at least one part")
    })
}

proptest! {
    #[test]
    fn counters_round_trip(c in counter(), at in any::<usize>(), flip in 1..=255u8) {
        check(&c, at, flip)?;
    }

    #[test]
    fn gsets_round_trip(s in gset(), at in any::<usize>(), flip in 1..=255u8) {
        check(&s, at, flip)?;
    }

    #[test]
    fn sets_round_trip(s in orswot(), at in any::<usize>(), flip in 1..=255u8) {
        check(&s, at, flip)?;
    }

    #[test]
    fn hlls_round_trip(h in hll(), at in any::<usize>(), flip in 1..=255u8) {
        let bytes = encode(&h);
        prop_assert_eq!(decode::<Hll>(&bytes), Ok(h.clone()));
        // Cutting every prefix of a dense 64 KiB body is slow; a few do.
        for end in [0, 1, 2, bytes.len() / 2, bytes.len() - 1] {
            prop_assert!(decode::<Hll>(&bytes[..end]).is_err(), "cut at {}", end);
        }
        let mut changed = bytes.clone();
        changed[at % bytes.len()] ^= flip;
        decode_any::<Hll>(&changed)?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        decode_any::<PnCounter>(&bytes)?;
        decode_any::<GSet>(&bytes)?;
        decode_any::<Orswot>(&bytes)?;
        decode_any::<Hll>(&bytes)?;
    }
}

#[test]
fn sets_with_deferred_removes_round_trip() {
    let mut seen = Orswot::new();
    seen.add(Actor(3), b"z");
    let mut s = Orswot::new();
    s.add(Actor(1), b"a");
    s.remove(b"z", Some(seen.clock())).unwrap();
    assert_eq!(s.deferred_len(), 1);
    assert_eq!(decode::<Orswot>(&encode(&s)), Ok(s));
}

#[test]
fn bodies_breaking_an_invariant_are_refused() {
    let refused = |bytes: &[u8]| decode::<Orswot>(bytes).unwrap_err();
    // One actor; clock {a: 1}; member "m" with dot (a, 2) beyond the clock.
    let mut beyond = vec![1, 0, 0, 0, 0, 0, 0, 0, 9, 1, 0, 1, 1, 1, b'm', 1, 0, 2, 0];
    assert_eq!(refused(&beyond).0, "dot not covered by the set's clock");
    beyond[17] = 1;
    assert!(decode::<Orswot>(&beyond).is_ok());
    // The member without dots.
    assert_eq!(
        refused(&[1, 0, 0, 0, 0, 0, 0, 0, 9, 1, 0, 1, 1, 1, b'm', 0, 0]).0,
        "set member without dots"
    );
    assert!(decode::<GSet>(&[2, 1, b'b', 1, b'a']).is_err(), "unsorted");
    assert!(decode::<GSet>(&[2, 1, b'a', 1, b'a']).is_err(), "repeated");
    assert!(decode::<Hll>(&[3, 1, 0]).is_err(), "precision 3");
    assert!(decode::<Hll>(&[17, 1, 0]).is_err(), "precision 17");
    assert!(
        decode::<Hll>(&[4, 1, 1, 16, 1]).is_err(),
        "index 16 at p = 4"
    );
    assert!(
        decode::<Hll>(&[4, 1, 1, 15, 62]).is_err(),
        "rank 62 at p = 4"
    );
    assert!(decode::<Hll>(&[4, 1, 1, 15, 61]).is_ok());
    assert!(
        decode::<Hll>(&[4, 1, 2, 3, 1, 0, 1]).is_err(),
        "repeated index"
    );
    assert!(decode::<Hll>(&[4, 1, 1, 3, 0]).is_err(), "sparse zero");
    assert!(decode::<Hll>(&[4, 2]).is_err(), "unknown form");
}
