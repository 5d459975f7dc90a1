//! Annotated preflists (primaries and fallbacks) against a model and their
//! laws, on rings made by claim and on arbitrary rings.

use std::collections::HashSet;

use eddy_ring::{Annotation, ClaimParams, NodeName, Partition, Ring, claim};
use proptest::prelude::*;

fn node(i: usize) -> NodeName {
    NodeName(format!("dev{i}@127.0.0.1"))
}

/// A ring of 64 partitions: claimed for `m` members, or (when `arbitrary`)
/// with owners drawn at random from them.
fn ring_strategy() -> impl Strategy<Value = Ring> {
    (
        1usize..10,
        any::<bool>(),
        prop::collection::vec(0usize..10, 64),
    )
        .prop_map(|(m, arbitrary, draws)| {
            let members: Vec<NodeName> = (0..m).map(node).collect();
            if arbitrary {
                Ring::from_owners(draws.iter().map(|d| node(d % m)).collect()).unwrap()
            } else {
                let single = Ring::single(64, node(0)).unwrap();
                let plan = claim(&single, &members, &ClaimParams::default()).unwrap();
                Ring::from_owners(plan.owners).unwrap()
            }
        })
}

type Entry = (Partition, NodeName, Option<NodeName>);

/// The rule written out plainly: up primaries, then for each down primary
/// the owner of the next partition along the ring after the preflist whose
/// owner is up (skipping only down nodes, as Riak's `get_apl_ann` does).
fn model(ring: &Ring, hash: u64, n_val: u32, up: &HashSet<NodeName>) -> Vec<Entry> {
    let size = ring.size();
    let first = ring.partition_of(hash).0;
    let n = n_val.min(size);
    let primaries: Vec<Partition> = (0..n).map(|i| Partition((first + i) % size)).collect();
    let mut out: Vec<Entry> = primaries
        .iter()
        .filter(|p| up.contains(ring.owner(**p)))
        .map(|p| (*p, ring.owner(*p).clone(), None))
        .collect();
    let mut cursor = n;
    for p in primaries.iter().filter(|p| !up.contains(ring.owner(**p))) {
        while cursor < size {
            let candidate = ring.owner(Partition((first + cursor) % size)).clone();
            cursor += 1;
            if up.contains(&candidate) {
                out.push((*p, candidate, Some(ring.owner(*p).clone())));
                break;
            }
        }
    }
    out
}

fn annotated(ring: &Ring, hash: u64, n_val: u32, up: &HashSet<NodeName>) -> Vec<Entry> {
    ring.preflist_ann(hash, n_val, |n| up.contains(n))
        .into_iter()
        .map(|(p, node, ann)| {
            let for_owner = match ann {
                Annotation::Primary => None,
                Annotation::Fallback { for_owner } => Some(for_owner.clone()),
            };
            (p, node.clone(), for_owner)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn matches_the_model(ring in ring_strategy(), hash: u64, n_val in 1u32..6, up_mask: u16) {
        let up: HashSet<NodeName> = (0..10).filter(|i| up_mask & (1 << i) != 0).map(node).collect();
        prop_assert_eq!(annotated(&ring, hash, n_val, &up), model(&ring, hash, n_val, &up));
    }

    #[test]
    fn laws(ring in ring_strategy(), hash: u64, n_val in 1u32..6, up_mask: u16) {
        let up: HashSet<NodeName> = (0..10).filter(|i| up_mask & (1 << i) != 0).map(node).collect();
        let got = annotated(&ring, hash, n_val, &up);
        let primaries = ring.preflist(hash, n_val);
        // Up primaries first, in ring order, then fallbacks only.
        let up_primaries: Vec<Entry> = primaries
            .iter()
            .filter(|(_, n)| up.contains(*n))
            .map(|(p, n)| (*p, (*n).clone(), None))
            .collect();
        prop_assert_eq!(&got[..up_primaries.len()], &up_primaries[..]);
        let down: Vec<(Partition, &NodeName)> =
            primaries.iter().copied().filter(|(_, n)| !up.contains(*n)).collect();
        let fallbacks = &got[up_primaries.len()..];
        prop_assert!(fallbacks.len() <= down.len());
        for ((p, node, for_owner), (down_p, down_owner)) in fallbacks.iter().zip(&down) {
            // Each stands in, in order, for a down primary, on an up node.
            prop_assert_eq!(p, down_p);
            prop_assert_eq!(for_owner.as_ref(), Some(*down_owner));
            prop_assert!(up.contains(node));
        }
        // One entry per partition, and a fallback is never its partition's
        // owner: a node is never named twice for one partition.
        let partitions: HashSet<Partition> = got.iter().map(|(p, _, _)| *p).collect();
        prop_assert_eq!(partitions.len(), got.len());
        for (p, node, for_owner) in &got {
            if for_owner.is_some() {
                prop_assert_ne!(ring.owner(*p), node);
            }
        }
        // Fewer than n entries only when the partitions after the preflist
        // have no more up owners than there were fallbacks.
        if got.len() < primaries.len() {
            let size = ring.size();
            let first = ring.partition_of(hash).0;
            let up_after = (primaries.len() as u32..size)
                .filter(|i| up.contains(ring.owner(Partition((first + i) % size))))
                .count();
            prop_assert_eq!(up_after, fallbacks.len());
        }
        // With every node up it is the primary preflist.
        let everyone: HashSet<NodeName> = ring.members().into_iter().cloned().collect();
        let all_up = annotated(&ring, hash, n_val, &everyone);
        let expected: Vec<Entry> = primaries.iter().map(|(p, n)| (*p, (*n).clone(), None)).collect();
        prop_assert_eq!(all_up, expected);
    }

    #[test]
    fn distinct_nodes_with_one_node_down(hash: u64, n_val in 1u32..4, m in 4usize..10, down in 0usize..10) {
        // A claimed ring of m > n_val nodes is spaced by target_n_val (4):
        // the partition after a preflist of up to three has an owner that is
        // in it, so one node down still gives n_val distinct nodes.
        let members: Vec<NodeName> = (0..m).map(node).collect();
        let single = Ring::single(64, node(0)).unwrap();
        let ring = Ring::from_owners(claim(&single, &members, &ClaimParams::default()).unwrap().owners).unwrap();
        let up: HashSet<NodeName> = (0..m).filter(|i| *i != down).map(node).collect();
        let got = annotated(&ring, hash, n_val, &up);
        let nodes: HashSet<&NodeName> = got.iter().map(|(_, n, _)| n).collect();
        prop_assert_eq!(nodes.len(), got.len());
        prop_assert_eq!(got.len(), n_val as usize);
    }

    #[test]
    fn n_entries_while_any_node_is_up(hash: u64, n_val in 1u32..5, m in 1usize..10, down_mask: u16) {
        // Riak's sloppy quorum: however many nodes are down, a claimed
        // ring with one up node still gives n_val places to write.
        let members: Vec<NodeName> = (0..m).map(node).collect();
        let single = Ring::single(64, node(0)).unwrap();
        let ring = Ring::from_owners(claim(&single, &members, &ClaimParams::default()).unwrap().owners).unwrap();
        let up: HashSet<NodeName> = (0..m).filter(|i| down_mask & (1 << i) == 0).map(node).collect();
        let got = annotated(&ring, hash, n_val, &up);
        let expected = if up.is_empty() { 0 } else { n_val as usize };
        prop_assert_eq!(got.len(), expected);
    }
}

#[test]
fn two_of_three_nodes_up_still_give_three_vnodes() {
    let members: Vec<NodeName> = (0..3).map(node).collect();
    let single = Ring::single(64, node(0)).unwrap();
    let plan = claim(&single, &members, &ClaimParams::default()).unwrap();
    let ring = Ring::from_owners(plan.owners).unwrap();
    let up: HashSet<NodeName> = [node(0), node(1)].into_iter().collect();
    let hash = (0..u64::MAX)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .find(|h| ring.preflist(*h, 3).iter().any(|(_, n)| **n == node(2)))
        .unwrap();
    let got = annotated(&ring, hash, 3, &up);
    assert_eq!(got.len(), 3, "{got:?}");
    let (p, fallback, for_owner) = got.last().unwrap();
    assert_eq!(for_owner.as_ref(), Some(&node(2)));
    assert_eq!(ring.owner(*p), &node(2));
    assert!(
        got[..2].iter().any(|(_, n, _)| n == fallback),
        "the fallback is one of the two up primaries' nodes"
    );
}
