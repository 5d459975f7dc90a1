//! The CRDT laws for every type, property-tested over random histories of
//! three replicas (each its own actor) that add, remove (with the context
//! they read, or a stale one from another replica) and merge in random
//! orders: merge is commutative, associative and idempotent; an operation
//! applied then merged reads as merged then applied; replicas converge
//! whatever the order of delivery; a remove with a current context never
//! comes back from a state it had seen.

use eddy_dt::{Actor, GSet, Orswot, PnCounter, VersionVector};
use proptest::prelude::*;

const REPLICAS: usize = 3;

#[derive(Clone, Debug)]
enum SetOp {
    Add(usize, u8),
    /// A remove with the context the replica reads.
    Remove(usize, u8),
    /// A remove at one replica with the context another one read.
    RemoveStale {
        at: usize,
        from: usize,
        member: u8,
    },
    Merge(usize, usize),
}

fn set_op() -> impl Strategy<Value = SetOp> {
    let r = 0..REPLICAS;
    prop_oneof![
        3 => (r.clone(), 0..6u8).prop_map(|(i, m)| SetOp::Add(i, m)),
        2 => (r.clone(), 0..6u8).prop_map(|(i, m)| SetOp::Remove(i, m)),
        1 => (r.clone(), r.clone(), 0..6u8)
            .prop_map(|(at, from, member)| SetOp::RemoveStale { at, from, member }),
        2 => (r.clone(), r).prop_map(|(i, j)| SetOp::Merge(i, j)),
    ]
}

fn actor(i: usize) -> Actor {
    Actor(i as u64 + 1)
}

/// The replicas' sets after `ops`.
fn run_sets(ops: &[SetOp]) -> Vec<Orswot> {
    let mut sets = vec![Orswot::new(); REPLICAS];
    for op in ops {
        match *op {
            SetOp::Add(i, m) => sets[i].add(actor(i), &[m]),
            SetOp::Remove(i, m) => {
                let context = sets[i].clock().clone();
                sets[i].remove(&[m], Some(&context)).unwrap();
            }
            SetOp::RemoveStale { at, from, member } => {
                let context = sets[from].clock().clone();
                sets[at].remove(&[member], Some(&context)).unwrap();
            }
            SetOp::Merge(i, j) => {
                let other = sets[j].clone();
                sets[i].merge(&other);
            }
        }
    }
    sets
}

fn merged(a: &Orswot, b: &Orswot) -> Orswot {
    let mut out = a.clone();
    out.merge(b);
    out
}

fn members(s: &Orswot) -> Vec<Vec<u8>> {
    s.value().map(<[u8]>::to_vec).collect()
}

proptest! {
    #[test]
    fn set_merge_is_commutative_associative_and_idempotent(
        ops in prop::collection::vec(set_op(), 0..60)
    ) {
        let s = run_sets(&ops);
        prop_assert_eq!(merged(&s[0], &s[1]), merged(&s[1], &s[0]));
        prop_assert_eq!(
            merged(&merged(&s[0], &s[1]), &s[2]),
            merged(&s[0], &merged(&s[1], &s[2]))
        );
        prop_assert_eq!(merged(&s[0], &s[0]), s[0].clone());
    }

    #[test]
    fn set_operations_read_the_same_applied_before_or_after_a_merge(
        ops in prop::collection::vec(set_op(), 0..60),
        member in 0..6u8,
        remove in any::<bool>(),
    ) {
        let s = run_sets(&ops);
        let apply = |set: &mut Orswot| match remove {
            false => set.add(actor(0), &[member]),
            true => {
                let context = s[0].clock().clone();
                set.remove(&[member], Some(&context)).unwrap();
            }
        };
        let mut first = s[0].clone();
        apply(&mut first);
        first.merge(&s[1]);
        let mut after = merged(&s[0], &s[1]);
        apply(&mut after);
        prop_assert_eq!(members(&first), members(&after));
    }

    #[test]
    fn set_replicas_converge_whatever_the_order_of_delivery(
        ops in prop::collection::vec(set_op(), 0..60)
    ) {
        let s = run_sets(&ops);
        let orders = [[0, 1, 2], [2, 1, 0], [1, 2, 0]];
        let finals: Vec<Orswot> = orders
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
    fn a_remove_with_a_current_context_never_comes_back_from_what_it_saw(
        ops in prop::collection::vec(set_op(), 0..60),
        member in 0..6u8,
    ) {
        // Replica 0's states along the way: each is one it had seen.
        let mut seen = Vec::new();
        for end in 0..=ops.len() {
            seen.push(run_sets(&ops[..end])[0].clone());
        }
        let mut set = seen.last().unwrap().clone();
        let context = set.clock().clone();
        set.remove(&[member], Some(&context)).unwrap();
        for old in &seen {
            set.merge(old);
            prop_assert!(!set.contains(&[member]));
        }
    }

    #[test]
    fn counter_laws_hold_and_every_increment_counts_once(
        ops in prop::collection::vec((0..REPLICAS, -1000i64..1000, 0..REPLICAS), 0..60)
    ) {
        let mut counters = vec![PnCounter::new(); REPLICAS];
        let mut total = 0i64;
        for &(i, delta, j) in &ops {
            counters[i].increment(actor(i), delta).unwrap();
            total += delta;
            let other = counters[j].clone();
            counters[i].merge(&other);
        }
        let merge = |a: &PnCounter, b: &PnCounter| {
            let mut out = a.clone();
            out.merge(b);
            out
        };
        let c = &counters;
        prop_assert_eq!(merge(&c[0], &c[1]), merge(&c[1], &c[0]));
        prop_assert_eq!(merge(&merge(&c[0], &c[1]), &c[2]), merge(&c[0], &merge(&c[1], &c[2])));
        prop_assert_eq!(merge(&c[0], &c[0]), c[0].clone());
        let all = merge(&merge(&c[0], &c[1]), &c[2]);
        prop_assert_eq!(all.value(), total);
    }

    #[test]
    fn gset_laws_hold(
        a in prop::collection::vec(0..20u8, 0..10),
        b in prop::collection::vec(0..20u8, 0..10),
    ) {
        let set = |xs: &[u8]| {
            let mut s = GSet::new();
            xs.iter().for_each(|x| s.add(&[*x]));
            s
        };
        let (sa, sb) = (set(&a), set(&b));
        let mut ab = sa.clone();
        ab.merge(&sb);
        let mut ba = sb.clone();
        ba.merge(&sa);
        prop_assert_eq!(&ab, &ba);
        let mut again = ab.clone();
        again.merge(&ab);
        prop_assert_eq!(&again, &ab);
        let union: std::collections::BTreeSet<u8> = a.iter().chain(&b).copied().collect();
        prop_assert_eq!(ab.len(), union.len());
    }
}

#[test]
fn a_context_is_the_clock_a_client_read() {
    let mut s = Orswot::new();
    s.add(Actor(9), b"m");
    assert_eq!(s.clock(), &VersionVector::from_entries([(Actor(9), 1)]));
}
