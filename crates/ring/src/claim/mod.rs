//! Claim: which member owns which partition once the membership changes.
//!
//! Given the ring (with its pending transfers: claim plans from the ring
//! they leave, Riak's future ring) and the wanted members, [`claim`] returns
//! the owner of every partition such that:
//! - **balance**: every member owns `floor(size/m)` or `ceil(size/m)`
//!   partitions, and a node that is not a member owns none;
//! - **spacing**: every run of `w` consecutive partitions has `w` distinct
//!   owners, with `w = spacing(size, m, target_n_val)`, which is
//!   `min(target_n_val, m)` whenever that is possible at all (see
//!   [`spacing`](spacing::spacing) and docs/design/011-claim.md);
//! - **little movement**: members keep their partitions where balance and
//!   spacing allow ([`ClaimMethod::Steal`]); only when stealing cannot keep
//!   the spacing is the ring laid out afresh ([`ClaimMethod::Relayout`]),
//!   still keeping as many owners as that layout allows.
//!
//! [`replace`] hands one node's partitions, exactly, to another.
//! `Ring::with_target` turns the result into pending transfers.
//!
//! Deterministic: the members are taken in name order, so the same ring and
//! the same set of members give the same owners on every node.

mod layout;
mod spacing;
mod steal;

pub use layout::layout;
pub use spacing::{is_spaced, next_same_distance, spacing, windows_with_repeat};

use crate::{NodeName, Ring};

/// Riak's default `target_n_val`.
pub const TARGET_N_VAL_DEFAULT: u32 = 4;

/// What claim aims for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimParams {
    /// The run length within which partitions must have distinct owners
    /// (Riak's `target_n_val`): preflists of up to this many replicas land
    /// on distinct nodes.
    pub target_n_val: u32,
}

impl Default for ClaimParams {
    fn default() -> ClaimParams {
        ClaimParams {
            target_n_val: TARGET_N_VAL_DEFAULT,
        }
    }
}

/// How the owners were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimMethod {
    /// Partitions moved only where membership, balance or spacing needed.
    Steal,
    /// The ring was laid out afresh (stealing could not keep the spacing).
    Relayout,
}

/// Claim's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimPlan {
    /// The owner of every partition, in partition order.
    pub owners: Vec<NodeName>,
    /// How they were found.
    pub method: ClaimMethod,
    /// The spacing they have: every run of this many partitions has
    /// distinct owners.
    pub spacing: u32,
}

/// Why claim refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClaimError {
    /// A ring needs at least one member.
    #[error("a ring needs at least one member")]
    NoMembers,
    /// The same node was named twice.
    #[error("{0} is named twice in the member list")]
    DuplicateMember(NodeName),
    /// `target_n_val` must be at least 1.
    #[error("target_n_val must be at least 1")]
    ZeroTargetN,
    /// The node to be replaced owns no partition.
    #[error("{0} owns no partition to hand over")]
    NotAnOwner(NodeName),
    /// The replacement already owns partitions.
    #[error("{0} already owns partitions and cannot replace another node")]
    AlreadyAnOwner(NodeName),
}

/// The owners `ring` should move to so that exactly `members` own it.
pub fn claim(
    ring: &Ring,
    members: &[NodeName],
    params: &ClaimParams,
) -> Result<ClaimPlan, ClaimError> {
    let members = sorted_members(members)?;
    if params.target_n_val == 0 {
        return Err(ClaimError::ZeroTargetN);
    }
    let future = ring.future();
    let current: Vec<Option<usize>> = future
        .owners()
        .iter()
        .map(|owner| members.binary_search(owner).ok())
        .collect();
    let (size, m) = (ring.size(), members.len() as u32);
    let w = spacing(size, m, params.target_n_val);
    let stolen = if w == params.target_n_val.min(m) {
        steal::steal(&current, &targets(&current, m as usize), w as usize)
    } else {
        // The best spacing is short of target_n_val: only the layout is
        // known to keep the runs that repeat an owner as few as possible.
        None
    };
    let (owners, method) = match stolen {
        Some(owners) => (owners, ClaimMethod::Steal),
        None => {
            let fresh = layout(size, m);
            let owners = layout::place(&fresh, &current, m as usize);
            (owners, ClaimMethod::Relayout)
        }
    };
    Ok(ClaimPlan {
        owners: owners.into_iter().map(|i| members[i].clone()).collect(),
        method,
        spacing: w,
    })
}

/// The owners `ring` should move to so that `new` owns exactly the
/// partitions `old` owns (after pending transfers), and nothing else moves.
pub fn replace(ring: &Ring, old: &NodeName, new: &NodeName) -> Result<Vec<NodeName>, ClaimError> {
    let future = ring.future();
    if future.owners().contains(new) || ring.owners().contains(new) {
        return Err(ClaimError::AlreadyAnOwner(new.clone()));
    }
    if !future.owners().contains(old) {
        return Err(ClaimError::NotAnOwner(old.clone()));
    }
    let swap = |owner: &NodeName| if owner == old { new } else { owner }.clone();
    Ok(future.owners().iter().map(swap).collect())
}

/// The members in name order; refuses an empty list and duplicates.
fn sorted_members(members: &[NodeName]) -> Result<Vec<NodeName>, ClaimError> {
    let mut sorted = members.to_vec();
    sorted.sort();
    if let Some(pair) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(ClaimError::DuplicateMember(pair[0].clone()));
    }
    if sorted.is_empty() {
        return Err(ClaimError::NoMembers);
    }
    Ok(sorted)
}

/// Each member's target count: `size = q·m + r`, the `r` members that own
/// the most now (ties to the first by name) get `q + 1`, the rest `q`, so
/// that as few partitions as balance allows must move.
fn targets(current: &[Option<usize>], m: usize) -> Vec<u32> {
    let size = current.len();
    let (q, r) = ((size / m) as u32, size % m);
    let mut count = vec![0usize; m];
    for member in current.iter().flatten() {
        count[*member] += 1;
    }
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by_key(|&x| (std::cmp::Reverse(count[x]), x));
    let mut targets = vec![q; m];
    for &x in order.iter().take(r) {
        targets[x] += 1;
    }
    targets
}
