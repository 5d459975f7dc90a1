//! The registry: every figure of a node by name and labels, registered
//! once and rendered on demand.

use std::collections::BTreeMap;

use parking_lot::Mutex;

use crate::counter::Counter;
use crate::gauge::Gauge;
use crate::histogram::{Histogram, Unit};

/// A figure's Prometheus type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A figure computed when it is read (a gauge such as open connections,
/// or a total another part of the node keeps), rendered beside the
/// registered ones.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub help: &'static str,
    pub kind: Kind,
    pub value: f64,
}

/// Label names and values of one series, in registration order.
pub(crate) type Labels = Vec<(&'static str, String)>;

pub(crate) enum Handle {
    Counter(Counter),
    Gauge(Gauge),
    Histogram(Histogram),
}

/// The series of one name.
pub(crate) struct Family {
    pub(crate) help: &'static str,
    pub(crate) kind: Kind,
    pub(crate) series: Vec<(Labels, Handle)>,
}

/// A node's figures.
#[derive(Default)]
pub struct Registry {
    pub(crate) families: Mutex<BTreeMap<&'static str, Family>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.families.lock().keys().copied().collect();
        f.debug_struct("Registry").field("names", &names).finish()
    }
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    /// The counter `name` (no labels), registered now or before.
    pub fn counter(&self, name: &'static str, help: &'static str) -> Counter {
        self.counter_with(name, help, &[])
    }

    /// The counter `name` with `labels`, registered now or before.
    pub fn counter_with(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
    ) -> Counter {
        let made = self.register(name, help, Kind::Counter, labels, || {
            Handle::Counter(Counter::new())
        });
        match made {
            Handle::Counter(c) => c,
            Handle::Gauge(_) | Handle::Histogram(_) => unreachable!("register checks the kind"),
        }
    }

    /// The gauge `name` (no labels), registered now or before.
    pub fn gauge(&self, name: &'static str, help: &'static str) -> Gauge {
        self.gauge_with(name, help, &[])
    }

    /// The gauge `name` with `labels`, registered now or before.
    pub fn gauge_with(
        &self,
        name: &'static str,
        help: &'static str,
        labels: &[(&'static str, &str)],
    ) -> Gauge {
        let made = self.register(name, help, Kind::Gauge, labels, || {
            Handle::Gauge(Gauge::new())
        });
        match made {
            Handle::Gauge(g) => g,
            Handle::Counter(_) | Handle::Histogram(_) => {
                unreachable!("register checks the kind")
            }
        }
    }

    /// The histogram `name` (no labels) with buckets `bounds` (in
    /// `unit`), registered now or before.
    pub fn histogram(
        &self,
        name: &'static str,
        help: &'static str,
        unit: Unit,
        bounds: &'static [u64],
    ) -> Histogram {
        self.histogram_with(name, help, unit, bounds, &[])
    }

    /// The histogram `name` with `labels` and buckets `bounds` (in
    /// `unit`), registered now or before.
    pub fn histogram_with(
        &self,
        name: &'static str,
        help: &'static str,
        unit: Unit,
        bounds: &'static [u64],
        labels: &[(&'static str, &str)],
    ) -> Histogram {
        let made = self.register(name, help, Kind::Histogram, labels, || {
            Handle::Histogram(Histogram::new(unit, bounds))
        });
        match made {
            Handle::Histogram(h) => h,
            Handle::Counter(_) | Handle::Gauge(_) => unreachable!("register checks the kind"),
        }
    }

    /// The handle of `name` with `labels`, made by `make` if it is new.
    fn register(
        &self,
        name: &'static str,
        help: &'static str,
        kind: Kind,
        labels: &[(&'static str, &str)],
        make: impl FnOnce() -> Handle,
    ) -> Handle {
        assert!(name.starts_with("eddy_"), "{name}: figures are eddy_ names");
        let labels: Labels = labels.iter().map(|(k, v)| (*k, v.to_string())).collect();
        let mut families = self.families.lock();
        let family = families.entry(name).or_insert_with(|| Family {
            help,
            kind,
            series: Vec::new(),
        });
        assert_eq!(family.kind, kind, "{name} is registered as another kind");
        if let Some((_, handle)) = family.series.iter().find(|(l, _)| *l == labels) {
            return handle.clone();
        }
        let handle = make();
        family.series.push((labels, handle.clone()));
        handle
    }

    /// Every figure in Prometheus' text format (version 0.0.4), with
    /// `extra` rendered beside the registered ones, ordered by name.
    pub fn render(&self, extra: &[Sample]) -> String {
        crate::text::render(&self.families.lock(), extra)
    }
}

impl Clone for Handle {
    fn clone(&self) -> Self {
        match self {
            Handle::Counter(c) => Handle::Counter(c.clone()),
            Handle::Gauge(g) => Handle::Gauge(g.clone()),
            Handle::Histogram(h) => Handle::Histogram(h.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registering_again_returns_the_first_handle() {
        let r = Registry::new();
        let a = r.counter_with("eddy_requests_total", "Requests.", &[("api", "pb")]);
        let b = r.counter_with("eddy_requests_total", "Requests.", &[("api", "pb")]);
        let other = r.counter_with("eddy_requests_total", "Requests.", &[("api", "http")]);
        a.increment();
        b.add(2);
        assert_eq!((a.get(), other.get()), (3, 0));
    }

    #[test]
    fn two_registries_keep_apart_figures() {
        let (one, two) = (Registry::new(), Registry::new());
        one.counter("eddy_node_gets_total", "Gets.").increment();
        assert_eq!(two.counter("eddy_node_gets_total", "Gets.").get(), 0);
    }

    #[test]
    #[should_panic(expected = "another kind")]
    fn a_name_keeps_its_kind() {
        let r = Registry::new();
        r.counter("eddy_x", "X.");
        r.histogram("eddy_x", "X.", Unit::Count, &[1]);
    }
}
