//! The incremental claim (after Riak's `claim_v2`): partitions move only
//! where membership, balance or spacing need it.
//!
//! 1. Partitions of nodes that are no longer members, and partitions that
//!    break the spacing (a node owning two within `w`), are released.
//! 2. Each released partition goes to a member short of its target that
//!    owns nothing within `w` of it; where there is none, along the shortest
//!    chain: a full member takes it and passes one of its own partitions on
//!    to another, and so on until a member short of its target takes one.
//!    Which members get the `q + 1` share of balance is not fixed: a member
//!    at `q` may take the share of one that has not reached `q + 1` yet.
//! 3. Members still short walk the ring and take, from the first eligible
//!    position on, partitions of members above their target (or still
//!    released ones); each walk start is tried until one fills the member.
//! 4. Members still short take partitions above their owner's target along
//!    chains as in step 2.
//!
//! The result is returned only if every partition has an owner, every
//! member holds its target and the ring is `w`-spaced; otherwise `None`,
//! and claim lays the ring out afresh.

use super::spacing::is_spaced;

/// One move of a chain: `member` takes `partition`, freed by the link at
/// `parent` (or a source when `None`); `forced` is the partition it must then
/// pass on, when it owns one within `w` of the one it takes.
#[derive(Clone, Copy)]
struct Link {
    partition: usize,
    member: usize,
    forced: Option<usize>,
    parent: Option<usize>,
}

/// Claim's working state: owners by member index, `None` while released.
#[derive(Clone)]
struct State {
    owner: Vec<Option<usize>>,
    count: Vec<u32>,
    target: Vec<u32>,
    w: usize,
}

/// Steals towards `targets` (one per member, summing to the ring size) from
/// `current` (`None` where the owner is not a member), keeping the ring
/// `w`-spaced. `None` when that cannot be done this way.
pub fn steal(current: &[Option<usize>], targets: &[u32], w: usize) -> Option<Vec<usize>> {
    let mut count = vec![0u32; targets.len()];
    for member in current.iter().flatten() {
        count[*member] += 1;
    }
    let mut state = State {
        owner: current.to_vec(),
        count,
        target: targets.to_vec(),
        w,
    };
    state.release_crowded();
    state.match_released();
    state.pull_all();
    state.deliver_rest();
    state.finish()
}

impl State {
    fn size(&self) -> usize {
        self.owner.len()
    }

    /// Whether member `x` owns a partition other than `p` within `w - 1`
    /// positions of `p`, on either side.
    fn near(&self, p: usize, x: usize) -> bool {
        let size = self.size();
        (1..self.w.min(size)).any(|d| {
            self.owner[(p + d) % size] == Some(x) || self.owner[(p + size - d) % size] == Some(x)
        })
    }

    fn deficit(&self, x: usize) -> u32 {
        self.target[x].saturating_sub(self.count[x])
    }

    /// Whether `x` may take one more partition: it is short of its target,
    /// or it holds a target of `q` while a member with a target of `q + 1`
    /// holds no more than `q` (then the larger target moves to `x`, which
    /// balance does not mind).
    fn make_room(&mut self, x: usize) -> bool {
        if self.deficit(x) > 0 {
            return true;
        }
        let low = self.target.iter().copied().min().unwrap_or(0);
        if self.target[x] != low {
            return false;
        }
        let spare = (0..self.target.len()).find(|&y| self.target[y] > low && self.count[y] <= low);
        if let Some(y) = spare {
            self.target[y] -= 1;
            self.target[x] += 1;
        }
        spare.is_some()
    }

    fn excess(&self, x: usize) -> u32 {
        self.count[x].saturating_sub(self.target[x])
    }

    fn release(&mut self, p: usize) {
        if let Some(x) = self.owner[p].take() {
            self.count[x] -= 1;
        }
    }

    fn assign(&mut self, p: usize, x: usize) {
        self.release(p);
        self.owner[p] = Some(x);
        self.count[x] += 1;
    }

    /// Step 1 for the spacing: scanning in ring order, a partition whose
    /// owner still holds another one within `w` of it is released.
    fn release_crowded(&mut self) {
        for p in 0..self.size() {
            if let Some(x) = self.owner[p]
                && self.near(p, x)
            {
                self.release(p);
            }
        }
    }

    /// Step 2: every released partition, along the shortest chain of moves,
    /// to a member short of its target.
    fn match_released(&mut self) {
        for p in 0..self.size() {
            if self.owner[p].is_none() {
                self.deliver(&[p]);
            }
        }
    }

    /// Moves partitions along the shortest chain that ends at a member short
    /// of its target: some member `z1` takes a partition of `sources` (each
    /// released or held by a member above its target); if `z1` is full it
    /// passes one of its own partitions to `z2`, and so on. A member that
    /// owns exactly one partition within `w` of the one it takes must pass
    /// that one on. So every member in the chain ends owning nothing within
    /// `w` of what it took, and the spacing holds. Returns whether a chain
    /// was found.
    fn deliver(&mut self, sources: &[usize]) -> bool {
        let members = self.target.len();
        let mut by_need: Vec<usize> = (0..members).collect();
        by_need.sort_by_key(|&x| (std::cmp::Reverse(self.deficit(x)), x));
        // Whether a member already has a link, free or forced.
        let mut seen = vec![[false; 2]; members];
        let mut links: Vec<Link> = Vec::new();
        for &p in sources {
            self.push_takers(p, None, &by_need, &mut seen, &mut links);
        }
        let mut head = 0;
        while head < links.len() {
            let Link { member, forced, .. } = links[head];
            if forced.is_none() && self.make_room(member) {
                self.apply_chain(&links, head);
                return true;
            }
            let passed: Vec<usize> = match forced {
                Some(q) => vec![q],
                None => (0..self.size())
                    .filter(|&q| self.owner[q] == Some(member))
                    .collect(),
            };
            for q in passed {
                self.push_takers(q, Some(head), &by_need, &mut seen, &mut links);
            }
            head += 1;
        }
        false
    }

    /// Links for every member that may take `p`: one owning nothing within
    /// `w` of it, or exactly one partition (which it must then pass on).
    fn push_takers(
        &self,
        p: usize,
        parent: Option<usize>,
        by_need: &[usize],
        seen: &mut [[bool; 2]],
        links: &mut Vec<Link>,
    ) {
        for &member in by_need {
            if self.owner[p] == Some(member) || on_chain(links, parent, member) {
                continue;
            }
            let mut crowding = self.crowding(p, member);
            let forced = crowding.next();
            let kind = usize::from(forced.is_some());
            if crowding.next().is_none() && !seen[member][kind] {
                seen[member][kind] = true;
                links.push(Link {
                    partition: p,
                    member,
                    forced,
                    parent,
                });
            }
        }
    }

    /// The partitions other than `p` that `x` owns within `w - 1` of `p`.
    fn crowding(&self, p: usize, x: usize) -> impl Iterator<Item = usize> + '_ {
        let size = self.size();
        (1..self.w.min(size))
            .flat_map(move |d| [(p + d) % size, (p + size - d) % size])
            .filter(move |&q| q != p && self.owner[q] == Some(x))
    }

    fn apply_chain(&mut self, links: &[Link], last: usize) {
        let mut at = Some(last);
        while let Some(i) = at {
            let link = links[i];
            self.assign(link.partition, link.member);
            at = link.parent;
        }
    }

    /// Step 4: members still short take partitions along chains from every
    /// partition that is released or above its owner's target.
    fn deliver_rest(&mut self) {
        while (0..self.target.len()).any(|x| self.deficit(x) > 0) {
            let sources: Vec<usize> = (0..self.size())
                .filter(|&p| self.owner[p].is_none_or(|d| self.excess(d) > 0))
                .collect();
            if sources.is_empty() || !self.deliver(&sources) {
                return;
            }
        }
    }

    /// Step 3: each member still short walks the ring and takes what it may.
    fn pull_all(&mut self) {
        let mut short: Vec<usize> = (0..self.target.len())
            .filter(|&x| self.deficit(x) > 0)
            .collect();
        short.sort_by_key(|&x| (std::cmp::Reverse(self.deficit(x)), x));
        for x in short {
            self.pull(x);
        }
    }

    /// Tries each start of the walk for `x` and keeps the first that fills
    /// it, else the one that took the most.
    fn pull(&mut self, x: usize) {
        let mut best: Option<State> = None;
        for start in 0..self.size() {
            let mut trial = self.clone();
            trial.walk(x, start);
            if trial.deficit(x) == 0 {
                *self = trial;
                return;
            }
            if best
                .as_ref()
                .is_none_or(|b| trial.deficit(x) < b.deficit(x))
            {
                best = Some(trial);
            }
        }
        if let Some(best) = best {
            *self = best;
        }
    }

    fn walk(&mut self, x: usize, start: usize) {
        let size = self.size();
        for i in 0..size {
            if self.deficit(x) == 0 {
                return;
            }
            let p = (start + i) % size;
            let takeable = match self.owner[p] {
                None => true,
                Some(d) => d != x && self.excess(d) > 0,
            };
            if takeable && !self.near(p, x) {
                self.assign(p, x);
            }
        }
    }

    fn finish(self) -> Option<Vec<usize>> {
        let full = self.count == self.target;
        let owners: Option<Vec<usize>> = self.owner.into_iter().collect();
        owners.filter(|o| full && is_spaced(o, self.w))
    }
}

/// Whether `member` already takes a partition on the chain ending at `at`.
fn on_chain(links: &[Link], mut at: Option<usize>, member: usize) -> bool {
    while let Some(i) = at {
        if links[i].member == member {
            return true;
        }
        at = links[i].parent;
    }
    false
}
