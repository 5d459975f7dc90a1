//! Spacing: how far apart a node's partitions are, and the best spacing a
//! balanced ring can have.
//!
//! A ring is `w`-spaced when every `w` consecutive partitions (cyclically)
//! have `w` distinct owners; then every preflist of `n_val ≤ w` lands on
//! `n_val` distinct nodes. Equivalently, any two partitions of one node are
//! at least `w` apart around the ring. Riak asks for `target_n_val` (4).
//!
//! A balanced ring of `size = q·m + r` partitions over `m` members (`r`
//! members own `q + 1`, the rest `q`) can be at most [`spacing`]-spaced:
//! a member owning `q + 1` partitions has `q + 1` gaps summing to `size`, so
//! its smallest gap is at most `size / (q + 1)`, which is below `m` when
//! `r > 0`; and no ring is more than `m`-spaced. The layout of
//! [`super::layout`] reaches that bound.

use std::collections::HashMap;
use std::hash::Hash;

/// The spacing claim guarantees for `members` members on a ring of `size`
/// partitions asked for `target_n_val`: `min(target_n_val, members, size)`
/// when `members` divides `size`, else `min(target_n_val, size / (q + 1))`
/// with `q = size / members`. This is the most any balanced ring allows.
pub fn spacing(size: u32, members: u32, target_n_val: u32) -> u32 {
    if members == 0 || size == 0 {
        return 0;
    }
    let (q, r) = (size / members, size % members);
    let best = if r == 0 {
        members.min(size)
    } else {
        size / (q + 1)
    };
    best.min(target_n_val)
}

/// For each partition, how far ahead (cyclically, 1..=len) the next
/// partition with the same owner is; `len` when the owner has only one.
pub fn next_same_distance<T: Eq + Hash>(owners: &[T]) -> Vec<usize> {
    let len = owners.len();
    let mut dist = vec![len; len];
    let mut last_seen: HashMap<&T, usize> = HashMap::new();
    // Two passes so that the last occurrences see the first ones again.
    for i in (0..2 * len).rev() {
        let owner = &owners[i % len];
        if let Some(&later) = last_seen.get(owner) {
            let d = later - i;
            if i < len && d <= len {
                dist[i] = d;
            }
        }
        last_seen.insert(owner, i);
    }
    dist
}

/// How many of the `len` windows of `w` consecutive partitions (cyclically)
/// have an owner more than once.
pub fn windows_with_repeat<T: Eq + Hash>(owners: &[T], w: usize) -> usize {
    let len = owners.len();
    if len == 0 || w < 2 {
        return 0;
    }
    let dist = next_same_distance(owners);
    // Window s is bad when some i in it has its next same owner inside it:
    // i + dist[i] <= s + w - 1, i.e. s >= i + dist[i] + 1 - w. For each s,
    // take the least `i + dist[i]` over the window's first w - 1 positions.
    (0..len)
        .filter(|&s| (s..s + w - 1).any(|i| i + dist[i % len] < s + w))
        .count()
}

/// Whether every window of `w` consecutive partitions has `w` distinct
/// owners.
pub fn is_spaced<T: Eq + Hash>(owners: &[T], w: usize) -> bool {
    windows_with_repeat(owners, w) == 0
}
