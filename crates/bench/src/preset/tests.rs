//! `eddy bench pb`'s preset: flags to config, and the config is one a
//! file could hold.

use std::time::Duration;

use super::*;
use crate::baseline::Trip;
use crate::ops::OpKind;
use crate::workload::Plan;

fn preset(workload: PbWorkload) -> PbPreset {
    PbPreset {
        addr: "127.0.0.1:8087".into(),
        connections: 4,
        duration: Span(Duration::from_secs(20)),
        value_size: 1000,
        keys: 500,
        workload,
        read_percent: 80,
        skip_preload: false,
        bucket: "eddy-bench".into(),
        bucket_type: None,
        w: None,
        dw: None,
        r: None,
        request_timeout: Span(Duration::from_millis(5000)),
        baseline: Span(Duration::from_secs(5)),
        seed: 42,
    }
}

fn weights(c: &BenchConfig) -> Vec<(OpKind, u32)> {
    c.weighted_ops()
}

#[test]
fn each_workload_weights_gets_and_puts() {
    let get = pb(&preset(PbWorkload::Get));
    assert_eq!(weights(&get), [(OpKind::Get, 100)]);
    let put = pb(&preset(PbWorkload::Put));
    assert_eq!(weights(&put), [(OpKind::Put, 100)]);
    let mixed = pb(&preset(PbWorkload::Mixed));
    assert_eq!(weights(&mixed), [(OpKind::Get, 80), (OpKind::Put, 20)]);
    for (percent, expected) in [
        (0, vec![(OpKind::Put, 100)]),
        (100, vec![(OpKind::Get, 100)]),
    ] {
        let p = PbPreset {
            read_percent: percent,
            ..preset(PbWorkload::Mixed)
        };
        assert_eq!(weights(&pb(&p)), expected, "read_percent {percent}");
    }
    // read_percent only matters for mixed.
    let p = PbPreset {
        read_percent: 0,
        ..preset(PbWorkload::Get)
    };
    assert_eq!(weights(&pb(&p)), [(OpKind::Get, 100)]);
}

#[test]
fn get_and_mixed_preload_every_key_unless_skipped() {
    for (workload, preloads) in [
        (PbWorkload::Get, true),
        (PbWorkload::Put, false),
        (PbWorkload::Mixed, true),
    ] {
        let c = pb(&preset(workload));
        assert_eq!(
            c.preload.map(|p| p.keys),
            preloads.then_some(500),
            "{workload:?}"
        );
        let skipped = PbPreset {
            skip_preload: true,
            ..preset(workload)
        };
        assert!(pb(&skipped).preload.is_none(), "{workload:?} skipped");
    }
}

#[test]
fn flags_reach_their_settings() {
    let p = PbPreset {
        addr: "10.0.0.2:8087".into(),
        bucket: "b".into(),
        bucket_type: Some("t".into()),
        w: Some(Quorum::Count(2)),
        dw: Some(Quorum::All),
        r: Some(Quorum::One),
        seed: 7,
        ..preset(PbWorkload::Mixed)
    };
    let c = pb(&p);
    assert_eq!(c.driver.protocol, Protocol::Pb);
    assert_eq!(c.driver.endpoints, ["10.0.0.2:8087"]);
    assert_eq!(
        (c.driver.bucket.as_str(), c.driver.bucket_type.as_deref()),
        ("b", Some("t"))
    );
    assert_eq!(
        (c.request.w, c.request.dw, c.request.r),
        (Some(Quorum::Count(2)), Some(Quorum::All), Some(Quorum::One))
    );
    assert_eq!((c.request.pr, c.request.pw), (None, None));
    assert!(!c.request.returnbody);
    assert_eq!(c.request.not_found, NotFound::Error);
    assert_eq!((c.concurrent, c.seed, c.mode), (4, 7, Mode::Max));
    assert_eq!(c.keys.generator, KeyGenerator::UniformInt);
    assert_eq!((c.keys.max, c.keys.format), (Some(500), KeyFormat::Plain));
    assert!(c.keys.prefix.is_empty());
    assert_eq!(c.values.generator, ValueGenerator::FixedBin);
    assert_eq!(c.values.size, Some(1000));
}

#[test]
fn timeouts_come_from_the_flags_and_the_run_never_gives_up_early() {
    let c = pb(&preset(PbWorkload::Put));
    assert_eq!(c.duration.0, Duration::from_secs(20));
    assert_eq!(c.give_up_after, c.duration);
    assert_eq!(c.request_timeout.0, Duration::from_secs(5));
    assert_eq!(c.baseline.0, Duration::from_secs(5));
}

#[test]
fn every_preset_config_is_a_valid_file() {
    for workload in [PbWorkload::Get, PbWorkload::Put, PbWorkload::Mixed] {
        for skip_preload in [false, true] {
            let p = PbPreset {
                skip_preload,
                w: Some(Quorum::Quorum),
                bucket_type: Some("t".into()),
                ..preset(workload)
            };
            let config = pb_checked(&p).unwrap();
            let text = toml::to_string(&config).unwrap();
            let read = crate::config::parse_valid(&text)
                .unwrap_or_else(|e| panic!("{workload:?}: {e}\n{text}"));
            assert_eq!(read.weighted_ops(), config.weighted_ops());
            assert_eq!(read.keys.format, KeyFormat::Plain);
            assert_eq!(read.request.not_found, NotFound::Error);
            assert_eq!(read.preload.map(|p| p.keys), config.preload.map(|p| p.keys));
        }
    }
}

/// An edit of a preset.
type Edit = fn(&mut PbPreset);

#[test]
fn a_refused_setting_is_named_by_its_flag() {
    let cases: [(Edit, &str); 5] = [
        (|p| p.keys = 0, "--keys"),
        (|p| p.connections = 0, "--connections"),
        (|p| p.duration = Span(Duration::ZERO), "--duration"),
        (|p| p.addr = "nowhere".into(), "--addr"),
        (|p| p.value_size = 0, "--value-size"),
    ];
    for (edit, flag) in cases {
        let mut p = preset(PbWorkload::Get);
        edit(&mut p);
        let e = pb_checked(&p).unwrap_err().to_string();
        assert!(e.starts_with(&format!("setting `{flag}`")), "{e}");
    }
}

#[test]
fn the_echo_runs_the_mix_of_the_load() {
    let (get, put) = (Trip::read(1000), Trip::write(1000));
    for (workload, expected) in [
        (PbWorkload::Get, vec![(vec![get], 100)]),
        (PbWorkload::Put, vec![(vec![put], 100)]),
        (PbWorkload::Mixed, vec![(vec![get], 80), (vec![put], 20)]),
    ] {
        let plan = Plan::new(&pb(&preset(workload)));
        assert_eq!(plan.echo_mix(), expected, "{workload:?}");
    }
}
