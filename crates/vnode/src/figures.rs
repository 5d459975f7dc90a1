//! The vnodes' figures (design note 025): Riak's `object_merge`,
//! `object_{counter,set,map}_merge` and `vnode_{counter,set,map}_update`,
//! counted and timed where a vnode does the work. The node registers one
//! [`VnodeFigures`] in its registry and hands it to every vnode it builds,
//! as it hands them its data type state cache.
//!
//! What is counted:
//! - an object merge: a put whose incoming object a vnode merges with the
//!   copy it holds (a replica's put, a read repair, a handed-off object, a
//!   write-once put over a stored version), and a set or map operation's
//!   delta a replica joins into the value it holds; a put onto a key the
//!   vnode holds nothing for merges nothing and is not counted;
//! - a data type merge: an object merge whose object holds a data type's
//!   value (the delta's type for a delta), under that type, besides the
//!   object merge;
//! - a data type update: an operation the coordinating vnode applied to
//!   the value it holds, by the bucket's data type (an operation refused
//!   is not counted).
//!
//! Invariants: every series is registered when the node is built (one per
//! data type, indexed by [`DataType::ALL`]'s order); the clock is read only
//! for work that will be recorded, once per piece of work.

use std::time::Instant;

use eddy_dt::DataType;
use eddy_metrics::{Counter, Histogram, Registry, TIME_US_BOUNDS, Unit, micros_between};

/// The handles every vnode of a node counts into.
#[derive(Debug)]
pub struct VnodeFigures {
    /// Object merges, and the time of each merge, µs.
    pub object_merges: Counter,
    pub object_merge_time: Histogram,
    /// By data type, in [`DataType::ALL`]'s order.
    types: [TypeFigures; DataType::ALL.len()],
}

/// One data type's figures at the vnodes.
#[derive(Debug)]
pub struct TypeFigures {
    /// Merges of objects holding a value of the type, and their time, µs.
    pub merges: Counter,
    pub merge_time: Histogram,
    /// Operations on the type applied by a coordinating vnode, and the
    /// time of each (the stored value read and the operation applied), µs.
    pub updates: Counter,
    pub update_time: Histogram,
}

impl VnodeFigures {
    /// Registers the vnodes' figures in `r`.
    #[rustfmt::skip]
    pub fn register(r: &Registry) -> VnodeFigures {
        VnodeFigures {
            object_merges: r.counter("eddy_vnode_object_merges_total", "Objects vnodes merged into the copies they hold (replica puts, read repairs, handoff, set and map deltas)."),
            object_merge_time: r.histogram("eddy_vnode_object_merge_time_seconds", "Time of each object merge at a vnode.", Unit::Microseconds, TIME_US_BOUNDS),
            types: DataType::ALL.map(|t| TypeFigures::register(r, t.name())),
        }
    }

    /// Figures registered nowhere (vnodes whose figures nobody reads).
    pub fn unregistered() -> VnodeFigures {
        VnodeFigures::register(&Registry::new())
    }

    /// The figures of `datatype`.
    pub fn of(&self, datatype: DataType) -> &TypeFigures {
        let at = DataType::ALL.iter().position(|t| *t == datatype);
        // ALL holds every type: the position is always found.
        &self.types[at.unwrap_or_default()]
    }

    /// Records an object merge that began at `start`, and, for an object
    /// holding a value of `datatype`, a merge of that type.
    pub(crate) fn merged(&self, datatype: Option<DataType>, start: Instant) {
        let now = Instant::now();
        let us = micros_between(start, now);
        self.object_merges.increment();
        self.object_merge_time.record_at(us, now);
        if let Some(t) = datatype {
            let f = self.of(t);
            f.merges.increment();
            f.merge_time.record_at(us, now);
        }
    }

    /// Records an operation on `datatype` applied at a coordinating vnode,
    /// begun at `start`.
    pub(crate) fn updated(&self, datatype: DataType, start: Instant) {
        let f = self.of(datatype);
        f.updates.increment();
        f.update_time.record_since(start);
    }
}

impl TypeFigures {
    #[rustfmt::skip]
    fn register(r: &Registry, datatype: &str) -> TypeFigures {
        let label = [("datatype", datatype)];
        let counter = |name, help| r.counter_with(name, help, &label);
        let time = |name, help| r.histogram_with(name, help, Unit::Microseconds, TIME_US_BOUNDS, &label);
        TypeFigures {
            merges: counter("eddy_vnode_datatype_merges_total", "Data type objects vnodes merged into the copies they hold, by type."),
            merge_time: time("eddy_vnode_datatype_merge_time_seconds", "Time of each data type object merge at a vnode, by type."),
            updates: counter("eddy_vnode_datatype_updates_total", "Data type operations coordinating vnodes applied, by type."),
            update_time: time("eddy_vnode_datatype_update_time_seconds", "Time of each data type operation a coordinating vnode applied, by type."),
        }
    }
}
