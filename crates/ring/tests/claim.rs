//! Claim's guarantees, property-tested for 1–64 nodes on rings of 64–1024
//! partitions (docs/design/011-claim.md states them).

use std::collections::{BTreeSet, HashSet};

use eddy_ring::claim::{is_spaced, spacing, windows_with_repeat};
use eddy_ring::{ClaimError, ClaimMethod, ClaimParams, ClaimPlan, NodeName, Ring, claim, replace};
use proptest::prelude::*;

const T: u32 = 4;
const SIZES: [u32; 5] = [64, 128, 256, 512, 1024];

fn node(i: usize) -> NodeName {
    NodeName(format!("dev{i}@10.0.0.{}", i % 7))
}

fn nodes(ids: &[usize]) -> Vec<NodeName> {
    ids.iter().map(|&i| node(i)).collect()
}

/// A ring claim made for `members`, starting from a single node.
fn made_ring(size: u32, members: &[NodeName]) -> Ring {
    let start = Ring::single(size, members[0].clone()).unwrap();
    let plan = claim(&start, members, &ClaimParams::default()).unwrap();
    Ring::from_owners(plan.owners).unwrap()
}

fn moved(ring: &Ring, plan: &ClaimPlan) -> usize {
    ring.owners()
        .iter()
        .zip(&plan.owners)
        .filter(|(a, b)| a != b)
        .count()
}

/// Balance, spacing and the fewest repeats where the spacing is short.
fn check_plan(size: u32, members: &[NodeName], plan: &ClaimPlan) -> Result<(), TestCaseError> {
    let m = members.len() as u32;
    let (q, r) = (size / m, size % m);
    prop_assert_eq!(plan.owners.len(), size as usize);
    let wanted: HashSet<&NodeName> = members.iter().collect();
    prop_assert!(
        plan.owners.iter().all(|o| wanted.contains(o)),
        "a non-member owns a partition"
    );
    for member in members {
        let owned = plan.owners.iter().filter(|o| *o == member).count() as u32;
        prop_assert!(owned == q || owned == q + 1, "{} owns {}", member, owned);
    }
    let w = spacing(size, m, T);
    prop_assert_eq!(plan.spacing, w);
    prop_assert!(is_spaced(&plan.owners, w as usize));
    if w < T.min(m) {
        // Only three nodes fall short on these sizes: two runs of three.
        prop_assert_eq!(m, 3);
        prop_assert_eq!(
            windows_with_repeat(&plan.owners, m as usize),
            (r * (m - r)) as usize
        );
    }
    Ok(())
}

/// Distinct node ids for a membership of 1..=64 out of a pool of 96.
fn membership(max: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::btree_set(0usize..96, 1..=max).prop_map(|s| s.into_iter().collect())
}

fn any_size() -> impl Strategy<Value = u32> {
    prop::sample::select(SIZES.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_change_of_members_is_balanced_and_spaced(
        size in any_size(),
        before in membership(64),
        after in membership(64),
    ) {
        let ring = made_ring(size, &nodes(&before));
        let members = nodes(&after);
        let plan = claim(&ring, &members, &ClaimParams::default()).unwrap();
        check_plan(size, &members, &plan)?;
    }

    #[test]
    fn arbitrary_rings_are_repaired(
        exp in 6u32..=10,
        owners_seed in prop::collection::vec(0usize..12, 1024),
        after in membership(40),
    ) {
        let size = 1u32 << exp;
        let owners = owners_seed[..size as usize].iter().map(|&i| node(i)).collect();
        let ring = Ring::from_owners(owners).unwrap();
        let members = nodes(&after);
        let plan = claim(&ring, &members, &ClaimParams::default()).unwrap();
        check_plan(size, &members, &plan)?;
    }

    #[test]
    fn the_same_members_in_any_order_give_the_same_owners(
        size in any_size(),
        before in membership(40),
        after in membership(40),
        rotate in 0usize..40,
    ) {
        let ring = made_ring(size, &nodes(&before));
        let mut members = nodes(&after);
        let plan = claim(&ring, &members, &ClaimParams::default()).unwrap();
        members.reverse();
        let len = members.len();
        members.rotate_left(rotate % len);
        prop_assert_eq!(claim(&ring, &members, &ClaimParams::default()).unwrap(), plan);
    }

    #[test]
    fn a_claimed_ring_stays_put(size in any_size(), members in membership(64)) {
        let members = nodes(&members);
        let ring = made_ring(size, &members);
        let plan = claim(&ring, &members, &ClaimParams::default()).unwrap();
        prop_assert_eq!(moved(&ring, &plan), 0);
    }

    #[test]
    fn joining_one_node_moves_only_its_share(
        size in any_size(),
        m in (T as usize)..64,
    ) {
        let ids: Vec<usize> = (0..=m).collect();
        let ring = made_ring(size, &nodes(&ids[..m]));
        let plan = claim(&ring, &nodes(&ids), &ClaimParams::default()).unwrap();
        check_plan(size, &nodes(&ids), &plan)?;
        prop_assert_eq!(plan.method, ClaimMethod::Steal);
        // The newcomer gets floor(size / (m + 1)), the least balance allows,
        // and nothing else moves.
        prop_assert_eq!(moved(&ring, &plan), size as usize / (m + 1));
        prop_assert!(plan.owners.iter().zip(ring.owners()).all(|(new, old)| new == old || new == &node(m)));
    }

    #[test]
    fn leaving_moves_the_leavers_partitions_and_few_more(
        size in any_size(),
        m in (2 * T as usize)..=64,
        leaver in 0usize..64,
    ) {
        let ids: Vec<usize> = (0..m).collect();
        let ring = made_ring(size, &nodes(&ids));
        let leaver = leaver % m;
        let rest: Vec<usize> = ids.iter().copied().filter(|&i| i != leaver).collect();
        let plan = claim(&ring, &nodes(&rest), &ClaimParams::default()).unwrap();
        check_plan(size, &nodes(&rest), &plan)?;
        prop_assert_eq!(plan.method, ClaimMethod::Steal);
        let own = ring.owned_by(&node(leaver)).len();
        // Each of the leaver's partitions moves, and at most one more for
        // each where no member with room owns nothing within target_n_val.
        prop_assert!(moved(&ring, &plan) <= 2 * own, "moved {} for {} owned", moved(&ring, &plan), own);
    }

    #[test]
    fn replacing_hands_over_exactly_the_old_nodes_partitions(
        size in any_size(),
        members in membership(64),
        pick in 0usize..64,
    ) {
        let members = nodes(&members);
        let ring = made_ring(size, &members);
        let old = &members[pick % members.len()];
        let new = node(500);
        let owners = replace(&ring, old, &new).unwrap();
        for (before, after) in ring.owners().iter().zip(&owners) {
            prop_assert_eq!(after, if before == old { &new } else { before });
        }
        prop_assert_eq!(replace(&ring, &new, &node(501)), Err(ClaimError::NotAnOwner(new.clone())));
        let other = &members[(pick + 1) % members.len()];
        if other != old {
            prop_assert_eq!(replace(&ring, old, other), Err(ClaimError::AlreadyAnOwner(other.clone())));
        }
    }
}

#[test]
fn small_clusters_fall_back_to_a_fresh_layout_that_is_balanced_and_spaced() {
    // Three nodes always get the layout (the spacing is short of
    // target_n_val); leaving a round-robin ring of 6 or 7 cannot be done by
    // stealing (every released partition has all other nodes within 3).
    let mut relayouts = 0;
    for size in SIZES {
        for m in 1..=7usize {
            for (before, after) in [(m + 1, m), (m, m + 1)] {
                let ids: Vec<usize> = (0..before.max(after)).collect();
                let ring = made_ring(size, &nodes(&ids[..before]));
                let members = nodes(&ids[..after]);
                let plan = claim(&ring, &members, &ClaimParams::default()).unwrap();
                relayouts += usize::from(plan.method == ClaimMethod::Relayout);
                check_plan(size, &members, &plan).unwrap();
            }
        }
    }
    assert!(relayouts >= SIZES.len() * 4, "only {relayouts} relayouts");
}

#[test]
fn claim_plans_from_the_ring_pending_transfers_leave() {
    let members = nodes(&[1, 2, 3, 4, 5]);
    let ring = made_ring(64, &members);
    let joined = nodes(&[1, 2, 3, 4, 5, 6]);
    let plan = claim(&ring, &joined, &ClaimParams::default()).unwrap();
    let pending = ring.with_target(&plan.owners).unwrap();
    assert!(!pending.is_settled());
    // Planning again before handoff finished changes nothing.
    assert_eq!(
        claim(&pending, &joined, &ClaimParams::default()).unwrap(),
        plan
    );
}

#[test]
fn bad_member_lists_are_refused() {
    let ring = made_ring(64, &nodes(&[1, 2]));
    let params = ClaimParams::default();
    assert_eq!(claim(&ring, &[], &params), Err(ClaimError::NoMembers));
    assert_eq!(
        claim(&ring, &nodes(&[1, 2, 1]), &params),
        Err(ClaimError::DuplicateMember(node(1)))
    );
    let zero = ClaimParams { target_n_val: 0 };
    assert_eq!(
        claim(&ring, &nodes(&[1]), &zero),
        Err(ClaimError::ZeroTargetN)
    );
}

#[test]
fn every_preflist_up_to_target_n_val_lands_on_distinct_nodes() {
    let members = nodes(&(0..7).collect::<Vec<_>>());
    let ring = made_ring(256, &members);
    for p in 0..256u64 {
        let hash = p << 56;
        for n_val in 1..=T {
            let pl = ring.preflist(hash, n_val);
            let distinct: BTreeSet<_> = pl.iter().map(|(_, node)| *node).collect();
            assert_eq!(distinct.len(), n_val as usize);
        }
    }
}
