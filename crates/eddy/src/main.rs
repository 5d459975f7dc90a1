//! The `eddy` binary: parses the command line and hands each command to the
//! module that owns it.

mod bench;
mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::{BenchTarget, Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Command::Bench(bench) => match &bench.target {
            BenchTarget::Storage(args) => bench::run_storage(args),
        },
    };
    match outcome {
        Ok(output) => {
            print!("{output}");
            if !output.ends_with('\n') {
                println!();
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("eddy: {err}");
            ExitCode::FAILURE
        }
    }
}
