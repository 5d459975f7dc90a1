//! The operations a workload mixes, and the weighted choice among them.
//!
//! Invariant: [`OpChooser::choose`] returns each operation with probability
//! weight / total weight, and only operations with a weight above zero.

use rand::Rng;

/// One kind of request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    /// Fetch one key.
    Get,
    /// Store one key without a causal context (blind write).
    Put,
    /// Fetch a key, then store it with the context the fetch returned.
    Update,
    /// Delete one key.
    Delete,
    /// A secondary-index query (exact or range).
    IndexQuery,
    /// Fetch several keys in one request.
    MultiGet,
    /// Store several keys in one request (Eddy's multi-put).
    MultiPut,
    /// A MapReduce job.
    Mapreduce,
    /// Increment a counter (a data type update of the run's bucket, whose
    /// type must have `datatype = counter`) by one.
    CounterIncr,
    /// Add one random member to a set (a data type update; the type must
    /// have `datatype = set`).
    SetAdd,
}

impl OpKind {
    /// Every operation, in report order.
    pub const ALL: [OpKind; 10] = [
        OpKind::Get,
        OpKind::Put,
        OpKind::Update,
        OpKind::Delete,
        OpKind::IndexQuery,
        OpKind::MultiGet,
        OpKind::MultiPut,
        OpKind::Mapreduce,
        OpKind::CounterIncr,
        OpKind::SetAdd,
    ];

    /// The name used in configs, file names and reports.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Get => "get",
            OpKind::Put => "put",
            OpKind::Update => "update",
            OpKind::Delete => "delete",
            OpKind::IndexQuery => "index_query",
            OpKind::MultiGet => "multi_get",
            OpKind::MultiPut => "multi_put",
            OpKind::Mapreduce => "mapreduce",
            OpKind::CounterIncr => "counter_incr",
            OpKind::SetAdd => "set_add",
        }
    }

    /// The operation called `name`.
    pub fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Whether the operation writes a fresh value (and so draws one).
    pub fn writes(self) -> bool {
        matches!(self, OpKind::Put | OpKind::Update | OpKind::MultiPut)
    }

    /// Whether the operation draws keys from the key space (2i queries
    /// and MapReduce jobs do not).
    pub fn draws_keys(self) -> bool {
        !matches!(self, OpKind::IndexQuery | OpKind::Mapreduce)
    }
}

/// A weighted choice among operations.
#[derive(Clone, Debug)]
pub struct OpChooser {
    /// `(op, cumulative weight)`, ascending.
    cumulative: Vec<(OpKind, u64)>,
}

impl OpChooser {
    /// From `(op, weight)` pairs; zero weights are dropped. At least one
    /// weight must be above zero.
    pub fn new(weights: &[(OpKind, u32)]) -> OpChooser {
        let mut total = 0u64;
        let cumulative: Vec<_> = weights
            .iter()
            .filter(|(_, w)| *w > 0)
            .map(|&(op, w)| {
                total += u64::from(w);
                (op, total)
            })
            .collect();
        assert!(!cumulative.is_empty(), "no operation has a weight");
        OpChooser { cumulative }
    }

    /// One operation, drawn by weight.
    pub fn choose(&self, rng: &mut impl Rng) -> OpKind {
        // A run of one operation (every storage phase) draws nothing.
        if let [(only, _)] = self.cumulative[..] {
            return only;
        }
        let total = self.cumulative.last().map_or(1, |c| c.1);
        let x = rng.random_range(0..total);
        let at = self.cumulative.partition_point(|&(_, c)| c <= x);
        self.cumulative[at].0
    }

    /// The operations that can be drawn.
    pub fn ops(&self) -> impl Iterator<Item = OpKind> + '_ {
        self.cumulative.iter().map(|c| c.0)
    }

    /// The operations that can be drawn, with their weights.
    pub fn weights(&self) -> impl Iterator<Item = (OpKind, u32)> + '_ {
        let below = std::iter::once(0).chain(self.cumulative.iter().map(|c| c.1));
        self.cumulative
            .iter()
            .zip(below)
            .map(|(&(op, upto), from)| (op, (upto - from) as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    #[test]
    fn names_round_trip() {
        for op in OpKind::ALL {
            assert_eq!(OpKind::from_name(op.name()), Some(op));
        }
        assert_eq!(OpKind::from_name("scan"), None);
    }

    #[test]
    fn choices_follow_weights() {
        let chooser = OpChooser::new(&[(OpKind::Get, 3), (OpKind::Delete, 0), (OpKind::Put, 1)]);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts = [0u32; 2];
        for _ in 0..40_000 {
            match chooser.choose(&mut rng) {
                OpKind::Get => counts[0] += 1,
                OpKind::Put => counts[1] += 1,
                other => panic!("{other:?} has weight 0"),
            }
        }
        let share = f64::from(counts[0]) / 40_000.0;
        assert!((0.73..0.77).contains(&share), "get share {share}");
        assert_eq!(
            chooser.ops().collect::<Vec<_>>(),
            [OpKind::Get, OpKind::Put]
        );
        assert_eq!(
            chooser.weights().collect::<Vec<_>>(),
            [(OpKind::Get, 3), (OpKind::Put, 1)]
        );
    }
}
