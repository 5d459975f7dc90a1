//! The CRDT laws for the HyperLogLog, property-tested over states built by
//! random adds at random precisions: merge is commutative, associative and
//! idempotent (as states, across precisions too); an add then a merge is a
//! merge then an add; replicas converge whatever the order of delivery; a
//! merge of two precisions is the merge of both reduced to the smaller;
//! reducing is adding at the smaller precision; at a fixed precision the
//! estimate never goes down.

use eddy_dt::{HLL_PRECISION_MAX, HLL_PRECISION_MIN, Hll};
use proptest::prelude::*;

fn hll(precision: u8, elements: &[u16]) -> Hll {
    let mut h = Hll::new(precision).unwrap();
    elements.iter().for_each(|e| h.add(&e.to_be_bytes()));
    h
}

fn merged(a: &Hll, b: &Hll) -> Hll {
    let mut out = a.clone();
    out.merge(b);
    out
}

fn reduced(h: &Hll, precision: u8) -> Hll {
    let mut out = h.clone();
    out.reduce(precision);
    out
}

/// A precision, mostly small so that registers fill up.
fn precision() -> impl Strategy<Value = u8> {
    prop_oneof![4 => HLL_PRECISION_MIN..=8u8, 1 => 9..=HLL_PRECISION_MAX]
}

/// A state: a precision and the elements added to it.
fn state() -> impl Strategy<Value = (u8, Vec<u16>)> {
    (precision(), prop::collection::vec(0..2000u16, 0..300))
}

proptest! {
    #[test]
    fn merge_is_commutative_associative_and_idempotent(
        a in state(), b in state(), c in state()
    ) {
        let (a, b, c) = (hll(a.0, &a.1), hll(b.0, &b.1), hll(c.0, &c.1));
        prop_assert_eq!(merged(&a, &b), merged(&b, &a));
        prop_assert_eq!(merged(&merged(&a, &b), &c), merged(&a, &merged(&b, &c)));
        prop_assert_eq!(merged(&a, &a), a.clone());
    }

    #[test]
    fn an_add_reads_the_same_before_or_after_a_merge(
        a in state(), b in state(), element in any::<u16>()
    ) {
        let (a, b) = (hll(a.0, &a.1), hll(b.0, &b.1));
        let mut first = a.clone();
        first.add(&element.to_be_bytes());
        first.merge(&b);
        let mut after = merged(&a, &b);
        after.add(&element.to_be_bytes());
        prop_assert_eq!(first, after);
    }

    #[test]
    fn replicas_converge_whatever_the_order_of_delivery(
        states in prop::collection::vec(state(), 3)
    ) {
        let s: Vec<Hll> = states.iter().map(|(p, e)| hll(*p, e)).collect();
        let finals: Vec<Hll> = [[0, 1, 2], [2, 1, 0], [1, 2, 0]]
            .iter()
            .map(|order| {
                let mut out = s[order[0]].clone();
                order[1..].iter().for_each(|&i| out.merge(&s[i]));
                out
            })
            .collect();
        prop_assert_eq!(&finals[0], &finals[1]);
        prop_assert_eq!(&finals[0], &finals[2]);
    }

    #[test]
    fn a_merge_of_two_precisions_is_a_merge_after_reducing_both(
        a in state(), b in state()
    ) {
        let (a, b) = (hll(a.0, &a.1), hll(b.0, &b.1));
        let p = a.precision().min(b.precision());
        let both = merged(&reduced(&a, p), &reduced(&b, p));
        prop_assert_eq!(merged(&a, &b), both);
    }

    #[test]
    fn reducing_is_adding_at_the_smaller_precision(
        (p, elements) in state(), lower in precision()
    ) {
        let lower = lower.min(p);
        prop_assert_eq!(reduced(&hll(p, &elements), lower), hll(lower, &elements));
    }

    #[test]
    fn the_estimate_never_goes_down_at_a_fixed_precision(
        p in HLL_PRECISION_MIN..=8u8,
        steps in prop::collection::vec(
            (any::<bool>(), prop::collection::vec(any::<u16>(), 1..40)),
            1..40,
        ),
    ) {
        let mut h = Hll::new(p).unwrap();
        let mut last = h.estimate();
        for (merge, elements) in &steps {
            match merge {
                true => h.merge(&hll(p, elements)),
                false => elements.iter().for_each(|e| h.add(&e.to_be_bytes())),
            }
            let now = h.estimate();
            prop_assert!(now >= last, "{} after {}", now, last);
            last = now;
        }
    }
}
