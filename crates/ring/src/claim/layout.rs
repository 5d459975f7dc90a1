//! The full layout: a balanced ring with the best spacing, built from
//! nothing, and placed over the current ring so that as many partitions as
//! it allows keep their owner. Claim falls back to it when stealing cannot
//! keep the spacing (Riak's `claim_rebalance_n`).
//!
//! With `size = q·m + r`, members `0..r` are *heavy* (they own `q + 1`
//! partitions) and `r..m` are *light* (`q`). The ring is `q + 1` segments,
//! each the heavy members in order followed by a run of light members taken
//! in turn from an endless cycle `r, r+1, …, m-1, r, …`. The runs share the
//! `q·(m - r)` light partitions as evenly as possible, so each run is
//! `floor` or `ceil` of `q·(m - r) / (q + 1)` long, which is below `m - r`.
//!
//! Why that is as spaced as a balanced ring can be (see `spacing`):
//! - a heavy member's gaps are `r + run`, at least `r + floor(q(m-r)/(q+1))`
//!   `= floor(size / (q + 1))`;
//! - a run is shorter than the light cycle, so two turns of one light member
//!   are a full cycle of light members apart with a heavy block between:
//!   a gap of at least `(m - r) + r = m`.
//!
//! When `m` divides `size` this is plain round robin, `m`-spaced.

/// The layout of `members` members over `size` partitions, as member indices.
pub fn layout(size: u32, members: u32) -> Vec<usize> {
    let (size, m) = (size as usize, members as usize);
    let (q, r) = (size / m, size % m);
    if r == 0 {
        return (0..size).map(|i| i % m).collect();
    }
    let light = m - r;
    let segments = q + 1;
    let light_total = q * light;
    let mut owners = Vec::with_capacity(size);
    let mut next_light = 0;
    for j in 0..segments {
        owners.extend(0..r);
        // Bresenham: run j is the share of the light total between the
        // j-th and (j+1)-th multiple of light_total / segments.
        let run = (j + 1) * light_total / segments - j * light_total / segments;
        for _ in 0..run {
            owners.push(r + next_light);
            next_light = (next_light + 1) % light;
        }
    }
    owners
}

/// Places `layout` over the current owners (`None` where the owner is not a
/// member): tries rotations of the layout and, for each, maps layout slots to
/// members so that the most partitions keep their owner. Returns the owner
/// of each partition. Deterministic: ties go to the smallest rotation, slot
/// and member.
pub fn place(layout: &[usize], current: &[Option<usize>], members: usize) -> Vec<usize> {
    let size = layout.len();
    let rotations = size.min(2 * members.max(1));
    let mut best: Option<(usize, Vec<usize>, usize)> = None;
    for rotation in 0..rotations {
        let (kept, labels) = best_labels(layout, current, members, rotation);
        if best.as_ref().is_none_or(|(k, _, _)| kept > *k) {
            best = Some((kept, labels, rotation));
        }
    }
    let (_, labels, rotation) = best.unwrap_or_default();
    (0..size)
        .map(|i| labels[layout[(i + size - rotation) % size]])
        .collect()
}

/// For the layout shifted by `rotation` (partition `i` gets slot
/// `layout[i - rotation]`), a slot-to-member map keeping many owners
/// (greedy on the largest overlaps) and how many partitions it keeps.
fn best_labels(
    layout: &[usize],
    current: &[Option<usize>],
    members: usize,
    rotation: usize,
) -> (usize, Vec<usize>) {
    let size = layout.len();
    let mut overlap = vec![0usize; members * members];
    for (i, owner) in current.iter().enumerate() {
        if let Some(member) = owner {
            let slot = layout[(i + size - rotation) % size];
            overlap[slot * members + member] += 1;
        }
    }
    let mut pairs: Vec<(usize, usize)> = (0..members * members)
        .filter(|&k| overlap[k] > 0)
        .map(|k| (k / members, k % members))
        .collect();
    pairs.sort_by_key(|&(slot, member)| {
        (
            std::cmp::Reverse(overlap[slot * members + member]),
            slot,
            member,
        )
    });
    let mut label: Vec<Option<usize>> = vec![None; members];
    let mut taken = vec![false; members];
    let mut kept = 0;
    for (slot, member) in pairs {
        if label[slot].is_none() && !taken[member] {
            label[slot] = Some(member);
            taken[member] = true;
            kept += overlap[slot * members + member];
        }
    }
    let mut free = (0..members).filter(|&x| !taken[x]);
    let labels = label
        .into_iter()
        .map(|l| l.or_else(|| free.next()).unwrap_or(0))
        .collect();
    (kept, labels)
}
