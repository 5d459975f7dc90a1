//! `eddy bench pb`: a closed-loop load over Riak's Protocol Buffers API,
//! for Eddy or any Riak-compatible node, as a preset of the workload
//! runner (design note 013).
//!
//! This module owns the flags' meaning only: they become an
//! [`eddy_bench::preset::PbPreset`], whose config the runner checks and
//! runs ([`eddy_bench::run_config`]) like a workload file, on
//! `--threads` runtime threads, probing nothing and writing no results
//! directory. The runner pings the node first (a node that does not
//! answer fails the run), preloads the keys of `get` and `mixed` unless
//! `--skip-preload`, measures the loopback echo unless `--baseline 0`,
//! then lets every connection issue requests back to back for
//! `--duration` seconds. Its outcome becomes one JSON line or a table
//! ([`report`]). Every request waits at most `--timeout-ms`, so the run
//! ends within a few timeouts of its deadline.

pub mod report;

use std::time::Duration;

use eddy_bench::config::Span;
use eddy_bench::preset::{self, PbPreset, PbWorkload as Workload};
use eddy_bench::{BenchError, Output, RunOptions, run_config};

use crate::cli::{PbArgs, PbWorkload};
use report::PbReport;

/// Runs `eddy bench pb` and returns what to print.
pub fn run(args: &PbArgs) -> Result<String, BenchError> {
    let config = preset::pb_checked(&preset_of(args)?)?;
    let threads = threads_of(args)?;
    let options = RunOptions {
        out: Output::None,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        threads: Some(threads),
        skip_probe: true,
        ..RunOptions::default()
    };
    let outcome = run_config(&config, "eddy bench pb", &options)?;
    let report = PbReport::new(args, threads, &outcome);
    Ok(match args.json {
        true => report.to_json(),
        false => report.to_table(),
    })
}

/// The flags as the preset takes them.
fn preset_of(args: &PbArgs) -> Result<PbPreset, BenchError> {
    Ok(PbPreset {
        addr: args.addr.clone(),
        connections: args.connections,
        duration: seconds("--duration", args.duration)?,
        value_size: args.value_size,
        keys: args.keys,
        workload: match args.workload {
            PbWorkload::Get => Workload::Get,
            PbWorkload::Put => Workload::Put,
            PbWorkload::Mixed => Workload::Mixed,
        },
        read_percent: args.read_percent,
        skip_preload: args.skip_preload,
        bucket: args.bucket.clone(),
        bucket_type: args.bucket_type.clone(),
        w: args.w,
        dw: args.dw,
        r: args.r,
        request_timeout: Span(Duration::from_millis(args.timeout_ms)),
        baseline: seconds("--baseline", args.baseline)?,
        seed: args.seed,
    })
}

/// The runtime's threads: `--threads`, or one per core.
fn threads_of(args: &PbArgs) -> Result<usize, BenchError> {
    match args.threads {
        Some(0) => Err(BenchError::Setting {
            setting: "--threads".into(),
            problem: "must be at least 1".into(),
        }),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)),
    }
}

/// `secs` seconds, for `flag`: zero or more (the config's checks refuse
/// a zero where one makes no sense).
fn seconds(flag: &str, secs: f64) -> Result<Span, BenchError> {
    Duration::try_from_secs_f64(secs)
        .map(Span)
        .map_err(|_| BenchError::Setting {
            setting: flag.to_string(),
            problem: format!("{secs} is not a number of seconds"),
        })
}

/// `eddy bench pb`'s options as the command line `extra` gives them (tests).
#[cfg(test)]
pub(crate) fn test_args(extra: &[&str]) -> PbArgs {
    use clap::Parser;
    let argv = ["eddy", "bench", "pb"].iter().chain(extra);
    let cli = crate::cli::Cli::parse_from(argv);
    let crate::cli::Command::Bench(b) = cli.command else {
        panic!("not a bench command");
    };
    let crate::cli::BenchTarget::Pb(a) = b.target else {
        panic!("not a pb bench command");
    };
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_bench::ops::OpKind;
    use eddy_wire::Quorum;

    fn config(extra: &[&str]) -> eddy_bench::config::BenchConfig {
        preset::pb_checked(&preset_of(&test_args(extra)).unwrap()).unwrap()
    }

    #[test]
    fn flags_build_the_preset() {
        let c = config(&[
            "--workload=mixed",
            "--read-percent=70",
            "--addr=10.0.0.1:8087",
            "--connections=3",
            "--duration=2.5",
            "--timeout-ms=250",
            "--baseline=0",
            "--w=2",
            "--dw=all",
            "--r=one",
            "--keys=9",
            "--value-size=10",
        ]);
        assert_eq!(c.weighted_ops(), [(OpKind::Get, 70), (OpKind::Put, 30)]);
        assert_eq!(c.driver.endpoints, ["10.0.0.1:8087"]);
        assert_eq!(c.concurrent, 3);
        assert_eq!(c.duration.0, Duration::from_millis(2500));
        assert_eq!(c.request_timeout.0, Duration::from_millis(250));
        assert!(c.baseline.0.is_zero());
        assert_eq!(
            (c.request.w, c.request.dw, c.request.r),
            (Some(Quorum::Count(2)), Some(Quorum::All), Some(Quorum::One))
        );
        assert_eq!((c.keys.max, c.values.size), (Some(9), Some(10)));
        assert_eq!(c.preload.map(|p| p.keys), Some(9));
    }

    #[test]
    fn the_workload_flag_picks_the_operations() {
        let ops = |w: &str| config(&["--workload", w]).weighted_ops();
        assert_eq!(ops("get"), [(OpKind::Get, 100)]);
        assert_eq!(ops("put"), [(OpKind::Put, 100)]);
        assert_eq!(ops("mixed"), [(OpKind::Get, 50), (OpKind::Put, 50)]);
        assert!(config(&["--workload=put"]).preload.is_none());
        assert!(config(&["--skip-preload"]).preload.is_none());
    }

    #[test]
    fn bad_flags_are_named() {
        for (flag, value) in [
            ("--duration", "-1"),
            ("--duration", "0"),
            ("--baseline", "NaN"),
            ("--keys", "0"),
            ("--connections", "0"),
            ("--timeout-ms", "0"),
        ] {
            let args = test_args(&[&format!("{flag}={value}")]);
            let e = preset_of(&args)
                .and_then(|p| preset::pb_checked(&p))
                .unwrap_err()
                .to_string();
            assert!(e.contains(flag), "{flag}={value}: {e}");
        }
        let e = threads_of(&test_args(&["--threads=0"])).unwrap_err();
        assert!(e.to_string().contains("--threads"), "{e}");
        assert_eq!(threads_of(&test_args(&["--threads=3"])).unwrap(), 3);
    }
}
