//! The ring as data: constructors, accessors and transfers against a model
//! (a plain list of (owner, next) pairs), and its serialised form.

use eddy_ring::{NodeName, Partition, Ring, RingError};
use proptest::prelude::*;

fn node(i: usize) -> NodeName {
    NodeName(format!("dev{i}@127.0.0.1"))
}

#[test]
fn rejects_bad_sizes() {
    for size in [0, 7, 12, 2048] {
        assert_eq!(Ring::single(size, node(1)), Err(RingError::BadSize(size)));
    }
    assert_eq!(
        Ring::from_owners(vec![node(1); 24]),
        Err(RingError::BadSize(24))
    );
}

#[test]
fn transfers_need_a_pending_next_owner() {
    let ring = Ring::single(8, node(1)).unwrap();
    assert_eq!(
        ring.with_transfer_done(Partition(3)),
        Err(RingError::NoPendingTransfer(Partition(3)))
    );
    assert_eq!(
        ring.with_transfer_done(Partition(8)),
        Err(RingError::NoSuchPartition(Partition(8), 8))
    );
    assert_eq!(
        ring.with_target(&[node(2)]),
        Err(RingError::WrongLength {
            expected: 8,
            got: 1
        })
    );
}

#[test]
fn deserialising_checks_the_invariants() {
    let ok = r#"{"owners":["a","a","a","a","b","b","b","b"],"next":[null,null,null,null,null,null,null,"a"]}"#;
    let ring: Ring = serde_json::from_str(ok).unwrap();
    assert_eq!(ring.next_owner(Partition(7)), Some(&NodeName("a".into())));
    let bad_size = r#"{"owners":["a","a","a"],"next":[null,null,null]}"#;
    assert!(serde_json::from_str::<Ring>(bad_size).is_err());
    let short_next = r#"{"owners":["a","a","a","a","b","b","b","b"],"next":[null]}"#;
    assert!(serde_json::from_str::<Ring>(short_next).is_err());
    let to_self = r#"{"owners":["a","a","a","a","b","b","b","b"],"next":["a",null,null,null,null,null,null,null]}"#;
    assert!(serde_json::from_str::<Ring>(to_self).is_err());
}

/// A ring of 2^exp partitions with owners and targets drawn from `nodes`.
fn owners_and_target() -> impl Strategy<Value = (Vec<NodeName>, Vec<NodeName>)> {
    (3u32..8, 1usize..6).prop_flat_map(|(exp, nodes)| {
        let list = prop::collection::vec((0..nodes).prop_map(node), 1 << exp);
        (list.clone(), list)
    })
}

proptest! {
    #[test]
    fn accessors_match_the_model((owners, target) in owners_and_target()) {
        let ring = Ring::from_owners(owners.clone()).unwrap().with_target(&target).unwrap();
        let model: Vec<(NodeName, Option<NodeName>)> = owners
            .iter()
            .zip(&target)
            .map(|(o, t)| (o.clone(), (o != t).then(|| t.clone())))
            .collect();
        prop_assert_eq!(ring.size() as usize, model.len());
        for (i, (owner, next)) in model.iter().enumerate() {
            let p = Partition(i as u32);
            prop_assert_eq!(ring.owner(p), owner);
            prop_assert_eq!(ring.next_owner(p), next.as_ref());
            prop_assert_eq!(ring.future_owner(p), &target[i]);
        }
        let pending: Vec<_> = ring.pending().map(|t| (t.partition.0 as usize, t.from, t.to)).collect();
        let expected: Vec<_> = model
            .iter()
            .enumerate()
            .filter_map(|(i, (o, n))| Some((i, o.clone(), n.clone()?)))
            .collect();
        prop_assert_eq!(&pending, &expected);
        prop_assert_eq!(ring.is_settled(), expected.is_empty());
        let mut members: Vec<&NodeName> = owners.iter().collect();
        members.sort();
        members.dedup();
        prop_assert_eq!(ring.members(), members.clone());
        for m in members {
            let mine: Vec<Partition> = (0..owners.len())
                .filter(|&i| &owners[i] == m)
                .map(|i| Partition(i as u32))
                .collect();
            prop_assert_eq!(ring.owned_by(m), mine);
        }
        let future = ring.future();
        prop_assert_eq!(future.owners(), &target[..]);
    }

    #[test]
    fn finishing_every_transfer_reaches_the_target(
        (owners, target) in owners_and_target(),
        order_seed in any::<u64>(),
    ) {
        let mut ring = Ring::from_owners(owners).unwrap().with_target(&target).unwrap();
        let mut pending: Vec<Partition> = ring.pending().map(|t| t.partition).collect();
        // Finish them in a scrambled order: each is independent.
        let len = pending.len().max(1);
        pending.rotate_left(order_seed as usize % len);
        for p in pending {
            let before = ring.clone();
            ring = ring.with_transfer_done(p).unwrap();
            prop_assert_eq!(ring.owner(p), before.next_owner(p).unwrap());
            prop_assert_eq!(ring.next_owner(p), None);
            prop_assert_eq!(ring.pending().count() + 1, before.pending().count());
        }
        prop_assert!(ring.is_settled());
        prop_assert_eq!(ring.owners(), &target[..]);
    }

    #[test]
    fn serde_round_trips((owners, target) in owners_and_target()) {
        let ring = Ring::from_owners(owners).unwrap().with_target(&target).unwrap();
        let json = serde_json::to_string(&ring).unwrap();
        let back: Ring = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, ring);
    }

    #[test]
    fn preflists_have_distinct_partitions(hash: u64, n_val in 1u32..10, exp in 3u32..11) {
        let ring = Ring::single(1 << exp, node(1)).unwrap();
        let pl = ring.preflist(hash, n_val);
        prop_assert_eq!(pl.len() as u32, n_val.min(ring.size()));
        let mut parts: Vec<_> = pl.iter().map(|(p, _)| *p).collect();
        prop_assert_eq!(parts[0], ring.partition_of(hash));
        parts.sort();
        parts.dedup();
        prop_assert_eq!(parts.len() as u32, n_val.min(ring.size()));
    }

    #[test]
    fn partitions_split_the_hash_space_evenly(hash: u64) {
        let ring = Ring::single(64, node(1)).unwrap();
        let p = ring.partition_of(hash).0 as u64;
        let width = 1u64 << 58;
        prop_assert!(hash >= p * width && (p == 63 || hash < (p + 1) * width));
    }
}
