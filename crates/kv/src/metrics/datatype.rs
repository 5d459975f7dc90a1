//! Data type fetches and updates, per type (Riak's `node_gets_set`,
//! `node_get_fsm_set_time_*`, `node_puts_map`, …): counted and timed by
//! the data type coordinators (`Node::dt_fetch`, `Node::dt_update`), in
//! one labelled series per type. A fetch is a get and an update a put, so
//! each is counted in the node's gets or puts too.

use std::time::Instant;

use eddy_dt::DataType;
use eddy_metrics::{Counter, Histogram, Registry, TIME_US_BOUNDS, Unit};
use eddy_model::request::GetResponse;

use super::{OBJSIZE_BOUNDS, SIBLINGS_BOUNDS, record_get_in};

/// One data type's figures.
#[derive(Debug)]
pub struct TypeMetrics {
    /// Fetches coordinated, and their time, siblings and object sizes.
    pub gets: Counter,
    pub get_fsm_time: Histogram,
    pub get_fsm_siblings: Histogram,
    pub get_fsm_objsize: Histogram,
    /// Updates coordinated, and their time.
    pub puts: Counter,
    pub put_fsm_time: Histogram,
}

/// Every data type's figures, in [`DataType::ALL`]'s order.
#[derive(Debug)]
pub struct DatatypeMetrics([TypeMetrics; DataType::ALL.len()]);

impl DatatypeMetrics {
    /// Registers one labelled series per data type in `r`.
    pub fn register(r: &Registry) -> DatatypeMetrics {
        DatatypeMetrics(DataType::ALL.map(|t| TypeMetrics::register(r, t.name())))
    }

    /// The figures of `datatype`.
    pub fn of(&self, datatype: DataType) -> &TypeMetrics {
        let at = DataType::ALL.iter().position(|t| *t == datatype);
        // ALL holds every type: the position is always found.
        &self.0[at.unwrap_or_default()]
    }

    /// Records a fetch of `datatype` that began at `start`.
    pub(crate) fn record_get<E>(
        &self,
        datatype: DataType,
        start: Instant,
        result: &Result<GetResponse, E>,
    ) {
        let m = self.of(datatype);
        m.gets.increment();
        let histograms = [&m.get_fsm_time, &m.get_fsm_siblings, &m.get_fsm_objsize];
        record_get_in(histograms, start, result);
    }

    /// Records an update of `datatype` that began at `start`.
    pub(crate) fn record_put(&self, datatype: DataType, start: Instant) {
        let m = self.of(datatype);
        m.puts.increment();
        m.put_fsm_time.record_since(start);
    }
}

impl TypeMetrics {
    #[rustfmt::skip]
    fn register(r: &Registry, datatype: &str) -> TypeMetrics {
        let label = [("datatype", datatype)];
        let counter = |name, help| r.counter_with(name, help, &label);
        let histogram = |name, help, unit, bounds| r.histogram_with(name, help, unit, bounds, &label);
        TypeMetrics {
            gets: counter("eddy_datatype_gets_total", "Data type fetches this node coordinated, by type."),
            get_fsm_time: histogram("eddy_datatype_get_fsm_time_seconds", "Time of the data type fetches this node coordinated, by type.", Unit::Microseconds, TIME_US_BOUNDS),
            get_fsm_siblings: histogram("eddy_datatype_get_fsm_siblings", "Siblings in the data type objects fetches found, by type.", Unit::Count, SIBLINGS_BOUNDS),
            get_fsm_objsize: histogram("eddy_datatype_get_fsm_objsize_bytes", "Bytes of the data type objects fetches found, by type.", Unit::Bytes, OBJSIZE_BOUNDS),
            puts: counter("eddy_datatype_puts_total", "Data type updates this node coordinated, by type."),
            put_fsm_time: histogram("eddy_datatype_put_fsm_time_seconds", "Time of the data type updates this node coordinated, by type.", Unit::Microseconds, TIME_US_BOUNDS),
        }
    }
}
