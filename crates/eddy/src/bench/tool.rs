//! `eddy bench run` and `eddy bench compare`: options in, the
//! `eddy-bench` crate does the work, text out.

use eddy_bench::config::Overrides;
use eddy_bench::{Output, RunOptions, compare as compare_runs, run as run_workload};

use crate::cli::{CompareArgs, RunArgs};

/// Runs a workload file; returns the summary and where the results are.
pub fn run(args: &RunArgs) -> Result<String, String> {
    let options = RunOptions {
        out: args.out.clone().map_or(Output::Timestamped, Output::Dir),
        overrides: Overrides {
            duration: args.duration,
            endpoints: args.endpoints.clone(),
            baseline: args.baseline,
        },
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        ..RunOptions::default()
    };
    let outcome = run_workload(&args.config, &options).map_err(|e| e.to_string())?;
    let dir = outcome.dir.unwrap_or_default();
    Ok(format!(
        "{}\nresults: {}",
        outcome.summary.to_text(),
        dir.display()
    ))
}

/// Compares result directories; returns the tables and where the charts are.
pub fn compare(args: &CompareArgs) -> Result<String, String> {
    let outcome = compare_runs(&args.dirs, args.out.as_deref()).map_err(|e| e.to_string())?;
    Ok(format!("{}charts: {}", outcome.text, outcome.dir.display()))
}
