//! Coverage plans: every key range answered for exactly once by an up vnode
//! that holds it, with the fewest vnodes (checked by brute force on small
//! rings), and an error naming exactly the ranges no up node holds.

use std::collections::HashSet;

use eddy_ring::{
    ClaimParams, CoverageError, CoveragePlan, NodeName, Partition, Ring, claim, coverage_plan,
};
use proptest::prelude::*;

fn node(i: usize) -> NodeName {
    NodeName(format!("dev{i}@127.0.0.1"))
}

fn claimed(size: u32, m: usize) -> Ring {
    let members: Vec<NodeName> = (0..m).map(node).collect();
    let single = Ring::single(size, node(0)).unwrap();
    Ring::from_owners(
        claim(&single, &members, &ClaimParams::default())
            .unwrap()
            .owners,
    )
    .unwrap()
}

/// A ring of `size`: claimed for up to 9 members, or arbitrary owners.
fn ring_of(size: u32) -> impl Strategy<Value = Ring> {
    (
        1usize..10,
        any::<bool>(),
        prop::collection::vec(0usize..10, size as usize),
    )
        .prop_map(move |(m, arbitrary, draws)| {
            if arbitrary {
                Ring::from_owners(draws.iter().map(|d| node(d % m)).collect()).unwrap()
            } else {
                claimed(size, m)
            }
        })
}

fn up_set(mask: u16) -> HashSet<NodeName> {
    (0..10).filter(|i| mask & (1 << i) != 0).map(node).collect()
}

/// The ranges vnode `p` holds: `p - n + 1 ..= p`.
fn held(size: u32, n: u32, p: u32) -> Vec<u32> {
    (0..n.min(size)).map(|k| (p + size - k) % size).collect()
}

/// The ranges no up vnode holds, the slow way.
fn uncoverable(ring: &Ring, n: u32, up: &HashSet<NodeName>) -> Vec<Partition> {
    let size = ring.size();
    (0..size)
        .filter(|&r| {
            !ring
                .partitions()
                .any(|p| up.contains(ring.owner(p)) && held(size, n, p.0).contains(&r))
        })
        .map(Partition)
        .collect()
}

/// Every range answered for exactly once by an up vnode that holds it.
fn check_exact_cover(
    ring: &Ring,
    n: u32,
    up: &HashSet<NodeName>,
    plan: &CoveragePlan,
) -> Result<(), TestCaseError> {
    let size = ring.size();
    let mut answered = vec![0u32; size as usize];
    for v in &plan.vnodes {
        prop_assert_eq!(&v.node, ring.owner(v.partition));
        prop_assert!(up.contains(&v.node));
        let holds = held(size, n, v.partition.0);
        let ranges: Vec<u32> = match &v.filter {
            None => holds.clone(),
            Some(filter) => filter.iter().map(|p| p.0).collect(),
        };
        if let Some(filter) = &v.filter {
            prop_assert!(!filter.is_empty() && filter.len() < holds.len());
        }
        for r in ranges {
            prop_assert!(
                holds.contains(&r),
                "vnode {} does not hold range {}",
                v.partition,
                r
            );
            answered[r as usize] += 1;
        }
    }
    prop_assert!(answered.iter().all(|&k| k == 1), "answered {:?}", answered);
    Ok(())
}

/// The fewest up vnodes covering every range, by trying every subset.
fn fewest_vnodes(ring: &Ring, n: u32, up: &HashSet<NodeName>) -> usize {
    let size = ring.size();
    let avail: Vec<u32> = ring
        .partitions()
        .filter(|p| up.contains(ring.owner(*p)))
        .map(|p| p.0)
        .collect();
    let masks: Vec<u32> = avail
        .iter()
        .map(|&p| held(size, n, p).iter().fold(0u32, |m, r| m | (1 << r)))
        .collect();
    let full = if size == 32 {
        u32::MAX
    } else {
        (1u32 << size) - 1
    };
    (0u32..1 << avail.len())
        .filter(|set| {
            (0..avail.len())
                .filter(|i| set & (1 << i) != 0)
                .fold(0, |m, i| m | masks[i])
                == full
        })
        .map(|set| set.count_ones() as usize)
        .min()
        .unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn covers_every_range_exactly_once_or_names_the_gaps(
        ring in prop::sample::select(vec![8u32, 16, 64, 256]).prop_flat_map(ring_of),
        n_val in 1u32..=5,
        up_mask: u16,
        offset: u32,
    ) {
        let up = up_set(up_mask);
        match coverage_plan(&ring, n_val, |n| up.contains(n), offset) {
            Ok(plan) => {
                prop_assert!(uncoverable(&ring, n_val, &up).is_empty());
                check_exact_cover(&ring, n_val, &up, &plan)?;
            }
            Err(CoverageError::Uncoverable { ranges }) => {
                prop_assert!(!ranges.is_empty());
                prop_assert_eq!(ranges, uncoverable(&ring, n_val, &up));
            }
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
    }

    #[test]
    fn uses_the_fewest_vnodes(
        ring in prop::sample::select(vec![8u32, 16]).prop_flat_map(ring_of),
        n_val in 1u32..=5,
        up_mask: u16,
        offset: u32,
    ) {
        let up = up_set(up_mask);
        if let Ok(plan) = coverage_plan(&ring, n_val, |n| up.contains(n), offset) {
            prop_assert_eq!(plan.vnodes.len(), fewest_vnodes(&ring, n_val, &up));
        }
    }
}

#[test]
fn with_every_node_up_offsets_spread_the_work() {
    let ring = claimed(64, 5);
    for n_val in [1u32, 2, 4] {
        let plans: Vec<CoveragePlan> = (0..n_val)
            .map(|offset| coverage_plan(&ring, n_val, |_| true, offset).unwrap())
            .collect();
        let mut used = HashSet::new();
        for plan in &plans {
            assert_eq!(plan.vnodes.len(), 64usize.div_ceil(n_val as usize));
            for v in &plan.vnodes {
                // n_val divides 64: no vnode serves two offsets.
                assert!(
                    used.insert(v.partition),
                    "n_val {n_val}: {} twice",
                    v.partition
                );
            }
        }
    }
}

#[test]
fn n_val_zero_is_refused() {
    let ring = claimed(8, 2);
    assert_eq!(
        coverage_plan(&ring, 0, |_| true, 0),
        Err(CoverageError::ZeroNVal)
    );
}
