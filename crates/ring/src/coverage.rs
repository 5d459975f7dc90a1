//! Coverage plans (Riak's `riak_core_coverage_plan`): a set of vnodes that
//! together hold every key exactly once, for listing keys and buckets, 2i
//! and MapReduce.
//!
//! A key in partition range `R` is stored by the vnodes of its preflist,
//! `R, R+1, …, R+n-1`; so vnode `P` holds the ranges `P-n+1, …, P`. A plan
//! picks vnodes whose owners are up and gives each the ranges it answers
//! for; a vnode that holds ranges another chosen vnode answers for gets a
//! filter listing its own.
//!
//! Invariants: every range is answered for by exactly one chosen vnode,
//! which holds it and whose owner is up; the plan has the fewest vnodes any
//! plan over the up owners can have; the same ring, n_val, up set and
//! `offset` give the same plan; different offsets start from different
//! ranges, spreading load over replicas.

use crate::{NodeName, Partition, Ring};

/// One vnode of a coverage plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoverageVnode {
    /// The vnode's partition.
    pub partition: Partition,
    /// Its owner, which runs it.
    pub node: NodeName,
    /// `None` when it answers for every range it holds; otherwise the ranges
    /// (partitions of the key space) it must answer for, in ring order.
    pub filter: Option<Vec<Partition>>,
}

/// Vnodes that together cover every key once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoveragePlan {
    /// The vnodes, in the order the plan walked the ring.
    pub vnodes: Vec<CoverageVnode>,
}

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CoverageError {
    /// `n_val` must be at least 1.
    #[error("n_val must be at least 1")]
    ZeroNVal,
    /// No up node holds these key ranges.
    #[error(
        "insufficient vnodes available: no up node holds the key ranges of partitions {ranges:?}"
    )]
    Uncoverable {
        /// The ranges, by partition, in ring order.
        ranges: Vec<Partition>,
    },
}

/// A plan covering every key of `ring` stored with `n_val` replicas, using
/// only vnodes whose owner `is_up`; `offset` chooses where it starts.
pub fn coverage_plan(
    ring: &Ring,
    n_val: u32,
    is_up: impl Fn(&NodeName) -> bool,
    offset: u32,
) -> Result<CoveragePlan, CoverageError> {
    if n_val == 0 {
        return Err(CoverageError::ZeroNVal);
    }
    let size = ring.size() as usize;
    let n = (n_val as usize).min(size);
    let available: Vec<bool> = ring.partitions().map(|p| is_up(ring.owner(p))).collect();
    let holds = |r: usize| (r..r + n).any(|p| available[p % size]);
    let uncoverable: Vec<Partition> = (0..size)
        .filter(|&r| !holds(r))
        .map(|r| Partition(r as u32))
        .collect();
    if !uncoverable.is_empty() {
        return Err(CoverageError::Uncoverable {
            ranges: uncoverable,
        });
    }
    let cover = Cover { available, n };
    // Positions are unwrapped (taken modulo the size only to look up), one
    // turn ahead so that `first - n + 1` never goes below zero.
    let start = size + offset as usize % size;
    let best = (0..n)
        .rev()
        .map(|k| start + k)
        .filter(|&first| cover.available[first % size])
        .map(|first| cover.from(first))
        .min_by_key(|plan| (plan.len(), most_on_one_node(ring, plan)))
        .unwrap_or_default();
    let vnodes = best
        .into_iter()
        .map(|(p, ranges)| cover.vnode(ring, p, ranges))
        .collect();
    Ok(CoveragePlan { vnodes })
}

/// A vnode (unwrapped position) and the ranges it answers for, as an
/// unwrapped half-open interval.
type Pick = (usize, (usize, usize));

struct Cover {
    available: Vec<bool>,
    n: usize,
}

impl Cover {
    fn size(&self) -> usize {
        self.available.len()
    }

    /// The fewest vnodes covering every range given that vnode `first`
    /// answers for all it holds: then, walking on, each step takes the up
    /// vnode that holds the first uncovered range and reaches furthest.
    fn from(&self, first: usize) -> Vec<Pick> {
        let end = first + 1 - self.n + self.size();
        let mut picks = vec![(first, (first + 1 - self.n, first + 1))];
        let mut next = first + 1;
        while next < end {
            let reach = (next..next + self.n)
                .rev()
                .find(|&p| self.available[p % self.size()])
                .unwrap_or(next);
            picks.push((reach, (next, (reach + 1).min(end))));
            next = reach + 1;
        }
        picks
    }

    fn vnode(&self, ring: &Ring, p: usize, (from, to): (usize, usize)) -> CoverageVnode {
        let size = self.size();
        let partition = Partition((p % size) as u32);
        let filter = (to - from < self.n)
            .then(|| (from..to).map(|r| Partition((r % size) as u32)).collect());
        CoverageVnode {
            partition,
            node: ring.owner(partition).clone(),
            filter,
        }
    }
}

/// The most vnodes the plan puts on one node (fewer spreads the work).
fn most_on_one_node(ring: &Ring, plan: &[Pick]) -> usize {
    let mut nodes: Vec<&NodeName> = plan
        .iter()
        .map(|(p, _)| ring.owner(Partition((p % ring.size() as usize) as u32)))
        .collect();
    nodes.sort();
    let mut most = 0;
    for run in nodes.chunk_by(|a, b| a == b) {
        most = most.max(run.len());
    }
    most
}
