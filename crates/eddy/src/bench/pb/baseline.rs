//! The loopback baseline of a PB run: `eddy_bench`'s echo
//! ([`eddy_bench::baseline`]) with this run's connections, seed and
//! operation mix, so a node's figures can be read as a share of what the
//! machine allowed at that moment.

use std::io;

use eddy_bench::baseline::{self as echo, EchoPlan, Trip};

pub use eddy_bench::baseline::Baseline;

use crate::cli::{PbArgs, PbWorkload};

/// Runs the loopback echo for `secs` seconds with `args`' connections and
/// workload shape; the echo server gets a runtime of `threads` threads.
pub async fn measure(args: &PbArgs, threads: usize, secs: f64) -> io::Result<Baseline> {
    echo::measure(&EchoPlan {
        connections: args.connections,
        server_threads: threads,
        secs,
        seed: args.seed,
        mix: mix(args),
    })
    .await
}

/// The workload's operations as round trips, weighted as the workers
/// choose them.
fn mix(args: &PbArgs) -> Vec<(Vec<Trip>, u32)> {
    let (get, put) = (Trip::read(args.value_size), Trip::write(args.value_size));
    let reads = u32::from(args.read_percent.min(100));
    let weighted = match args.workload {
        PbWorkload::Get => vec![(get, 1)],
        PbWorkload::Put => vec![(put, 1)],
        PbWorkload::Mixed => vec![(get, reads), (put, 100 - reads)],
    };
    weighted
        .into_iter()
        .filter(|(_, w)| *w > 0)
        .map(|(t, w)| (vec![t], w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> PbArgs {
        let mut all = vec!["--connections", "4"];
        all.extend_from_slice(extra);
        crate::bench::pb::test_args(&all)
    }

    #[test]
    fn the_mix_follows_the_workload() {
        let v = 1000;
        assert_eq!(
            mix(&args(&["--workload", "get", "--value-size", "1000"])),
            vec![(vec![Trip::read(v)], 1)]
        );
        assert_eq!(
            mix(&args(&["--workload", "put", "--value-size", "1000"])),
            vec![(vec![Trip::write(v)], 1)]
        );
        let mixed = args(&[
            "--workload",
            "mixed",
            "--read-percent",
            "80",
            "--value-size",
            "1000",
        ]);
        assert_eq!(
            mix(&mixed),
            vec![(vec![Trip::read(v)], 80), (vec![Trip::write(v)], 20)]
        );
        let all_reads = args(&[
            "--workload",
            "mixed",
            "--read-percent",
            "100",
            "--value-size",
            "1000",
        ]);
        assert_eq!(mix(&all_reads), vec![(vec![Trip::read(v)], 100)]);
    }

    /// The echo runs for each workload of `eddy bench pb`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn echo_runs_each_workload() {
        for workload in ["put", "get", "mixed"] {
            let b = measure(&args(&["--workload", workload]), 1, 0.2)
                .await
                .unwrap();
            assert!(b.ops > 0, "{workload}: no round trips");
        }
    }
}
