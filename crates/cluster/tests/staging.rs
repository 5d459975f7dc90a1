//! The staging rules: every refusal `riak admin cluster` gives, with its
//! message, and what `clear` drops.

mod common;

use common::{Op, Sim, member, name, settled_cluster};
use eddy_cluster::{ClaimParams, CommitError, MemberStatus, StageError, TransferError};

fn params() -> ClaimParams {
    ClaimParams::default()
}

#[test]
fn a_node_cannot_join_itself() {
    let sim = Sim::new(1, 8);
    let err = sim.states[0].check_join(&name(0), &name(0)).unwrap_err();
    assert_eq!(err, StageError::JoinSelf(name(0)));
    assert!(err.to_string().contains("cannot join itself"));
}

#[test]
fn a_member_of_a_cluster_cannot_join_another() {
    let sim = settled_cluster(3, 2, 16);
    let err = sim.states[1].check_join(&name(1), &name(2)).unwrap_err();
    assert_eq!(err, StageError::AlreadyInCluster(name(1)));
}

#[test]
fn a_member_cannot_join_again() {
    let mut sim = settled_cluster(2, 2, 16);
    let err = sim.states[0]
        .join(&name(0), &name(1), member(1))
        .unwrap_err();
    assert_eq!(err, StageError::AlreadyMember(name(1)));
    assert_eq!(
        err.to_string(),
        format!("Failed: {} is already a member of the cluster", name(1))
    );
}

#[test]
fn a_joining_node_is_listed_as_a_join_and_adopts_the_cluster() {
    let mut sim = settled_cluster(3, 2, 16);
    sim.apply(&Op::Join { joiner: 2, via: 1 }).unwrap();
    let joined = &sim.states[2];
    assert_eq!(joined.members()[&name(2)].status, MemberStatus::Joining);
    assert_eq!(joined.ring_state(), sim.states[0].ring_state());
    let staged = sim.states[0].staged();
    assert_eq!(staged.len(), 1);
    assert_eq!((staged[0].action(), staged[0].node()), ("join", &name(2)));
}

#[test]
fn unknown_nodes_are_refused() {
    let mut sim = settled_cluster(3, 2, 16);
    let (me, stranger) = (name(0), name(2));
    let s = &mut sim.states[0];
    assert_eq!(
        s.leave(&me, &stranger),
        Err(StageError::NotMember(stranger.clone()))
    );
    assert_eq!(
        s.force_remove(&me, &stranger),
        Err(StageError::NotMember(stranger.clone()))
    );
    assert_eq!(
        s.replace(&me, &stranger, &name(1)),
        Err(StageError::NotMember(stranger.clone()))
    );
    assert_eq!(
        s.force_replace(&me, &stranger, &name(1)),
        Err(StageError::NotMember(stranger.clone()))
    );
    let up = |_: &eddy_cluster::NodeName| false;
    assert_eq!(
        s.mark_down(&me, &stranger, up),
        Err(StageError::NotMember(stranger.clone()))
    );
    let msg = s.leave(&me, &stranger).unwrap_err().to_string();
    assert_eq!(
        msg,
        format!("Failed: {stranger} is not a member of the cluster")
    );
}

#[test]
fn the_last_member_cannot_leave_or_be_removed() {
    let mut sim = Sim::new(1, 8);
    let me = name(0);
    assert_eq!(
        sim.states[0].leave(&me, &me),
        Err(StageError::OnlyMember(me.clone()))
    );

    let mut sim = settled_cluster(2, 2, 16);
    let (a, b) = (name(0), name(1));
    sim.states[0].leave(&a, &a).unwrap();
    let err = sim.states[0].force_remove(&a, &b).unwrap_err();
    assert_eq!(err, StageError::OnlyMember(b.clone()));
    assert_eq!(err.to_string(), format!("Failed: {b} is the only member"));
}

#[test]
fn a_second_change_for_one_node_is_refused() {
    let mut sim = settled_cluster(3, 3, 16);
    let (me, b) = (name(0), name(1));
    sim.states[0].leave(&me, &b).unwrap();
    let s = &mut sim.states[0];
    assert_eq!(s.leave(&me, &b), Err(StageError::AlreadyStaged(b.clone())));
    assert_eq!(
        s.force_remove(&me, &b),
        Err(StageError::AlreadyStaged(b.clone()))
    );
}

#[test]
fn a_leaving_node_cannot_leave_again() {
    let mut sim = settled_cluster(3, 3, 16);
    sim.apply(&Op::Leave { by: 0, node: 1 }).unwrap();
    sim.sync();
    sim.apply(&Op::Commit { by: 0 }).unwrap();
    let (me, b) = (name(0), name(1));
    assert_eq!(sim.states[0].members()[&b].status, MemberStatus::Leaving);
    let err = sim.states[0].leave(&me, &b).unwrap_err();
    assert_eq!(err, StageError::AlreadyLeaving(b.clone()));
    assert!(
        err.to_string()
            .contains("already in the process of leaving")
    );
}

#[test]
fn a_joining_node_cannot_leave_and_a_down_node_cannot_hand_off() {
    let mut sim = settled_cluster(4, 3, 16);
    sim.apply(&Op::Join { joiner: 3, via: 0 }).unwrap();
    let me = name(0);
    let s = &mut sim.states[0];
    assert_eq!(
        s.leave(&me, &name(3)),
        Err(StageError::StillJoining(name(3)))
    );
    assert_eq!(
        s.replace(&me, &name(3), &name(1)),
        Err(StageError::StillJoining(name(3)))
    );
    let up = |n: &eddy_cluster::NodeName| *n != name(2);
    assert_eq!(s.mark_down(&me, &name(2), up), Ok(true));
    assert_eq!(s.leave(&me, &name(2)), Err(StageError::IsDown(name(2))));
    assert_eq!(
        s.replace(&me, &name(2), &name(3)),
        Err(StageError::IsDown(name(2)))
    );
    s.force_replace(&me, &name(2), &name(3)).unwrap();
}

#[test]
fn the_claimant_cannot_force_itself_out() {
    let mut sim = settled_cluster(3, 3, 16);
    let me = name(0);
    let s = &mut sim.states[0];
    assert_eq!(
        s.force_remove(&me, &me),
        Err(StageError::IsClaimant(me.clone()))
    );
    assert!(
        s.force_remove(&me, &me)
            .unwrap_err()
            .to_string()
            .contains("is the claimant")
    );
}

#[test]
fn a_replacement_must_be_a_fresh_joining_node_used_once() {
    let mut sim = settled_cluster(5, 3, 16);
    sim.apply(&Op::Join { joiner: 3, via: 0 }).unwrap();
    let me = name(0);
    let s = &mut sim.states[0];
    // A valid member, and a stranger, are not candidates.
    assert_eq!(
        s.replace(&me, &name(1), &name(2)),
        Err(StageError::InvalidReplacement(name(2)))
    );
    assert_eq!(
        s.replace(&me, &name(1), &name(4)),
        Err(StageError::InvalidReplacement(name(4)))
    );
    let msg = s.replace(&me, &name(1), &name(2)).unwrap_err().to_string();
    assert!(msg.contains("only newly joining nodes can be used for replacement"));
    s.replace(&me, &name(1), &name(3)).unwrap();
    assert_eq!(
        s.force_replace(&me, &name(2), &name(3)),
        Err(StageError::AlreadyReplacement(name(3)))
    );
    // The replacement has a change of its own now: it cannot be removed.
    assert_eq!(
        s.force_remove(&me, &name(3)),
        Err(StageError::AlreadyStaged(name(3)))
    );
}

#[test]
fn only_an_unreachable_node_is_marked_down() {
    let mut sim = settled_cluster(3, 3, 16);
    let me = name(0);
    let all_up = |_: &eddy_cluster::NodeName| true;
    assert_eq!(
        sim.states[0].mark_down(&me, &name(1), all_up),
        Err(StageError::IsUp(name(1)))
    );
}

#[test]
fn only_the_claimant_stages_and_commits() {
    let mut sim = settled_cluster(3, 3, 16);
    let (b, c) = (name(1), name(2));
    let not_claimant = StageError::NotClaimant {
        me: b.clone(),
        claimant: name(0),
    };
    let s = &mut sim.states[1];
    assert_eq!(s.leave(&b, &c), Err(not_claimant.clone()));
    assert_eq!(s.join(&b, &name(2), member(2)), Err(not_claimant.clone()));
    assert_eq!(s.clear(&b), Err(not_claimant.clone()));
    assert_eq!(s.apply_transfers(&b), Err(not_claimant));
    let err = s.commit(&b, &params(), |_| Some(0)).unwrap_err();
    assert!(matches!(err, CommitError::NotClaimant { .. }));
}

#[test]
fn an_empty_plan_cannot_be_committed() {
    let mut sim = settled_cluster(3, 3, 16);
    let me = name(0);
    let epoch = sim.states[0].epoch();
    assert_eq!(sim.states[0].plan(&params()), Err(CommitError::EmptyPlan));
    let err = sim.states[0]
        .commit(&me, &params(), |_| Some(epoch))
        .unwrap_err();
    assert_eq!(err, CommitError::EmptyPlan);
    assert_eq!(
        err.to_string(),
        "Failed: there are no staged changes to commit"
    );
}

#[test]
fn a_commit_waits_for_every_member_not_down_to_hold_the_epoch() {
    let mut sim = settled_cluster(3, 3, 16);
    sim.apply(&Op::Leave { by: 0, node: 2 }).unwrap();
    let me = name(0);
    let epoch = sim.states[0].epoch();
    // Node 1 has not seen the staged leave; node 2 is unreachable.
    let behind = |n: &eddy_cluster::NodeName| match n {
        n if *n == name(1) => Some(epoch - 1),
        n if *n == name(2) => None,
        _ => Some(epoch),
    };
    let err = sim.states[0].commit(&me, &params(), behind).unwrap_err();
    assert_eq!(
        err,
        CommitError::RingNotReady {
            waiting: vec![name(1), name(2)]
        }
    );
    assert!(err.to_string().contains("the ring is not ready"));
    // Once node 2 is marked down, only node 1 is waited for.
    sim.states[0]
        .mark_down(&me, &name(2), |n| *n != name(2))
        .unwrap();
    let epoch = sim.states[0].epoch();
    let err = sim.states[0]
        .commit(&me, &params(), |n| (*n == me).then_some(epoch))
        .unwrap_err();
    assert_eq!(
        err,
        CommitError::RingNotReady {
            waiting: vec![name(1)]
        }
    );
}

#[test]
fn clear_drops_staged_changes_and_joining_members() {
    let mut sim = settled_cluster(4, 3, 16);
    sim.apply(&Op::Join { joiner: 3, via: 0 }).unwrap();
    sim.apply(&Op::Leave { by: 0, node: 1 }).unwrap();
    let me = name(0);
    let before = sim.states[0].members().len();
    assert!(sim.states[0].clear(&me).unwrap());
    let s = &sim.states[0];
    assert!(s.staged().is_empty());
    assert_eq!(s.members().len(), before - 1);
    assert!(!s.members().contains_key(&name(3)));
    assert_eq!(sim.states[0].clear(&me), Ok(false));
}

#[test]
fn only_pending_transfers_can_be_reported() {
    let mut sim = settled_cluster(2, 2, 16);
    let p = eddy_cluster::Partition(0);
    let err = sim.states[0]
        .transfer_complete(p, &name(0), &name(1))
        .unwrap_err();
    assert!(matches!(err, TransferError::NotPending { .. }));
}

/// A force-remove staged by one claimant that names the node which takes
/// over as claimant later is refused at plan and commit: committed, the
/// new claimant would drop itself from the ring it then gossips alone.
#[test]
fn a_claimant_cannot_commit_its_own_force_remove_staged_by_another() {
    let mut sim = settled_cluster(3, 3, 16);
    sim.apply(&Op::ForceRemove { by: 0, node: 1 }).unwrap();
    sim.sync();
    sim.apply(&Op::Crash { node: 0 }).unwrap();
    sim.take_over(1);
    assert_eq!(sim.states[1].ring_state().claimant, name(1));
    let refused = CommitError::ForcesOutClaimant(name(1));
    assert_eq!(sim.states[1].plan(&params()), Err(refused.clone()));
    assert_eq!(sim.apply(&Op::Commit { by: 1 }), Err(refused.to_string()));
    assert!(refused.to_string().contains("clear the staged changes"));
    sim.states[1].clear(&name(1)).unwrap();
    assert_eq!(sim.states[1].plan(&params()), Err(CommitError::EmptyPlan));
}
