//! The `eddy` binary: parses the command line and hands each command to the
//! module that owns it: [`node`] (start), [`admin`] (ping, stop, admin),
//! [`config`] (config show), `bench` (only with the `bench` feature, which
//! links the load generator) and [`devcluster`] (dev-cluster).

mod admin;
#[cfg(feature = "bench")]
mod bench;
mod cli;
mod config;
mod devcluster;
mod logging;
mod node;

use std::process::ExitCode;

use clap::Parser;

#[cfg(feature = "bench")]
use cli::BenchTarget;
use cli::{Cli, Command, ConfigAction, ConfigArgs};
use config::Config;

/// mimalloc instead of glibc's malloc: the request path allocates per
/// request, and glibc's free lists cost a fifth of a node's CPU under load
/// (design note 005).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome: Result<String, String> = match &cli.command {
        Command::Start(args) => load(args).and_then(|c| {
            logging::init(&c.settings().log)?;
            node::start(c.settings())
                .map(|()| String::new())
                .map_err(|e| e.to_string())
        }),
        Command::Stop(args) => {
            load(args).and_then(|c| admin::stop(c.settings()).map_err(|e| e.to_string()))
        }
        Command::Ping(args) => {
            load(args).and_then(|c| admin::ping(c.settings()).map_err(|e| e.to_string()))
        }
        Command::Config(cmd) => match &cmd.action {
            ConfigAction::Show(args) => load(args).map(|c| c.show()),
        },
        Command::Admin(a) => load(&a.config)
            .and_then(|c| admin::admin(c.settings(), &a.action).map_err(|e| e.to_string())),
        #[cfg(feature = "bench")]
        Command::Bench(bench) => match &bench.target {
            BenchTarget::Storage(args) => bench::run_storage(args).map_err(|e| e.to_string()),
            BenchTarget::Pb(args) => bench::pb::run(args).map_err(|e| e.to_string()),
            BenchTarget::Run(args) => bench::tool::run(args),
            BenchTarget::Compare(args) => bench::tool::compare(args),
        },
        Command::DevCluster(args) => devcluster::run(args).map_err(|e| e.to_string()),
    };
    match outcome {
        Ok(output) => write_output(&output),
        Err(err) => {
            eprintln!("eddy: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The effective configuration: `--config` (or `./eddy.toml`) and `EDDY_*`.
fn load(args: &ConfigArgs) -> Result<Config, String> {
    Config::load(args.config.as_deref(), std::env::vars()).map_err(|e| e.to_string())
}

/// Writes a command's output to stdout, ending it with a newline. A reader
/// that stopped reading (`eddy admin status | head`) is not an error: the
/// command did its work, so it exits successfully without the rest.
fn write_output(output: &str) -> ExitCode {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let newline = !output.is_empty() && !output.ends_with('\n');
    let written = stdout
        .write_all(output.as_bytes())
        .and_then(|()| match newline {
            true => stdout.write_all(b"\n"),
            false => Ok(()),
        })
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eddy: writing the output: {e}");
            ExitCode::FAILURE
        }
    }
}
