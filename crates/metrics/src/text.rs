//! Prometheus' text exposition format, version 0.0.4: per name a `# HELP`
//! and a `# TYPE` line, then its series; histograms as cumulative
//! `_bucket{le="…"}` lines ending with `+Inf`, then `_sum` and `_count`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::histogram::Histogram;
use crate::registry::{Family, Handle, Labels, Sample};

/// The families and `extra` samples, ordered by name.
pub(crate) fn render(families: &BTreeMap<&'static str, Family>, extra: &[Sample]) -> String {
    let mut out = String::new();
    let mut extra: Vec<&Sample> = extra.iter().collect();
    extra.sort_by(|a, b| a.name.cmp(&b.name));
    let mut extra = extra.into_iter().peekable();
    for (name, family) in families {
        while let Some(s) = extra.next_if(|s| s.name.as_str() < *name) {
            sample(&mut out, s);
        }
        header(&mut out, name, family.help, family.kind.word());
        for (labels, handle) in &family.series {
            match handle {
                Handle::Counter(c) => line(&mut out, name, "", labels, None, c.get() as f64),
                Handle::Gauge(g) => line(&mut out, name, "", labels, None, g.get() as f64),
                Handle::Histogram(h) => histogram(&mut out, name, labels, h),
            }
        }
    }
    for s in extra {
        sample(&mut out, s);
    }
    out
}

fn sample(out: &mut String, s: &Sample) {
    header(out, &s.name, s.help, s.kind.word());
    line(out, &s.name, "", &Vec::new(), None, s.value);
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let help = help.replace('\\', "\\\\").replace('\n', "\\n");
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn histogram(out: &mut String, name: &str, labels: &Labels, h: &Histogram) {
    let h = h.inner();
    let scale = h.unit.scale();
    let mut cumulative = 0;
    for (i, bucket) in h.buckets.iter().enumerate() {
        cumulative += bucket.load(Ordering::Relaxed);
        let le = match h.bounds.get(i) {
            Some(bound) => number(*bound as f64 * scale),
            None => "+Inf".to_string(),
        };
        line(out, name, "_bucket", labels, Some(&le), cumulative as f64);
    }
    let sum = h.sum.load(Ordering::Relaxed) as f64 * scale;
    line(out, name, "_sum", labels, None, sum);
    let count = h.count.load(Ordering::Relaxed) as f64;
    line(out, name, "_count", labels, None, count);
}

/// One series line: `name{labels,le="…"} value`.
fn line(out: &mut String, name: &str, suffix: &str, labels: &Labels, le: Option<&str>, v: f64) {
    out.push_str(name);
    out.push_str(suffix);
    let pairs = labels.iter().map(|(k, v)| (*k, v.as_str()));
    let pairs: Vec<(&str, &str)> = pairs.chain(le.map(|le| ("le", le))).collect();
    if !pairs.is_empty() {
        out.push('{');
        for (i, (k, v)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"{}\"", escape_label(v));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", number(v));
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A value as Prometheus reads it: integers without a fraction.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use crate::{Kind, Registry, Sample, Unit};

    #[test]
    fn the_text_format_is_prometheus_0_0_4() {
        let r = Registry::new();
        let gets = r.counter("eddy_node_gets_total", "Gets coordinated.");
        gets.add(3);
        let pb = r.counter_with("eddy_api_requests_total", "Requests.", &[("api", "p\"b")]);
        pb.increment();
        let t = r.histogram(
            "eddy_node_get_fsm_time_seconds",
            "Get time.",
            Unit::Microseconds,
            &[1_000, 500_000],
        );
        t.record(800);
        t.record(2_000_000);
        let running = r.gauge("eddy_index_queries_running", "Queries running.");
        let _one = running.track();
        let set = r.histogram_with(
            "eddy_datatype_puts_seconds",
            "Update time.",
            Unit::Microseconds,
            &[1_000],
            &[("datatype", "set")],
        );
        set.record(1_500);
        let extra = [Sample {
            name: "eddy_http_connections".into(),
            help: "Open HTTP connections.",
            kind: Kind::Gauge,
            value: 2.0,
        }];
        let text = r.render(&extra);
        let expected = "\
# HELP eddy_api_requests_total Requests.
# TYPE eddy_api_requests_total counter
eddy_api_requests_total{api=\"p\\\"b\"} 1
# HELP eddy_datatype_puts_seconds Update time.
# TYPE eddy_datatype_puts_seconds histogram
eddy_datatype_puts_seconds_bucket{datatype=\"set\",le=\"0.001\"} 0
eddy_datatype_puts_seconds_bucket{datatype=\"set\",le=\"+Inf\"} 1
eddy_datatype_puts_seconds_sum{datatype=\"set\"} 0.0015
eddy_datatype_puts_seconds_count{datatype=\"set\"} 1
# HELP eddy_http_connections Open HTTP connections.
# TYPE eddy_http_connections gauge
eddy_http_connections 2
# HELP eddy_index_queries_running Queries running.
# TYPE eddy_index_queries_running gauge
eddy_index_queries_running 1
# HELP eddy_node_get_fsm_time_seconds Get time.
# TYPE eddy_node_get_fsm_time_seconds histogram
eddy_node_get_fsm_time_seconds_bucket{le=\"0.001\"} 1
eddy_node_get_fsm_time_seconds_bucket{le=\"0.5\"} 1
eddy_node_get_fsm_time_seconds_bucket{le=\"+Inf\"} 2
eddy_node_get_fsm_time_seconds_sum 2.0008
eddy_node_get_fsm_time_seconds_count 2
# HELP eddy_node_gets_total Gets coordinated.
# TYPE eddy_node_gets_total counter
eddy_node_gets_total 3
";
        assert_eq!(text, expected);
    }
}
