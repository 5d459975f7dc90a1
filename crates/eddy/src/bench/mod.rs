//! `eddy bench`: measurements of Eddy's parts on this machine.
//!
//! `eddy bench storage` drives one storage backend directly; `eddy bench pb`
//! loads a running node over the network ([`pb`], a preset of the
//! `eddy-bench` runner: flags in, its report out); `eddy bench run` and
//! `eddy bench compare` hand over to the `eddy-bench` crate ([`tool`]).
//! This module owns the storage run as a whole: checking options, the data
//! directory's life, opening the engine, choosing the workload and printing
//! its report. Its phases run on the one load generator with its storage
//! driver (design note 023): workloads ([`workload`], [`merge`], [`open`])
//! say which phases, engines ([`backends`]) how to open each, and
//! [`report`] what is printed.

pub mod backends;
pub mod error;
pub mod merge;
pub mod open;
pub mod pb;
pub mod report;
pub mod tool;
pub mod workload;

use std::path::{Path, PathBuf};

use backends::{Engine, EngineOptions, open_backend};
use error::BenchError;
use report::{Report, value_name};
use workload::Ctx;

use crate::cli::{StorageArgs, Workload};

/// File size the merge workload rolls over at unless told otherwise, so that
/// the data spans several files to merge.
const MERGE_FILE_SIZE_BYTES: u64 = 64 << 20;

/// Runs `eddy bench storage` and returns what to print.
pub fn run_storage(args: &StorageArgs) -> Result<String, BenchError> {
    check(args)?;
    let dir = DataDir::new(args.dir.as_deref())?;
    let opts = engine_options(args);
    let report = match args.workload {
        Workload::Open => open::run(args, dir.path(), &opts)?,
        _ => {
            let engine = open_backend(args.backend, dir.path(), &opts)?;
            let report = run_on(args, &engine);
            engine.backend.close()?;
            report?
        }
    };
    dir.remove()?;
    Ok(match args.json {
        true => report.to_json(),
        false => report.to_table(),
    })
}

fn check(args: &StorageArgs) -> Result<(), BenchError> {
    if args.keys == 0 {
        return Err(BenchError::InvalidOption("--keys must be at least 1"));
    }
    if args.threads == 0 {
        return Err(BenchError::InvalidOption("--threads must be at least 1"));
    }
    if args.ops == 0 {
        return Err(BenchError::InvalidOption("--ops must be at least 1"));
    }
    if args.keys < args.threads as u64 {
        // Each thread walks a slice of the keys of its own.
        return Err(BenchError::InvalidOption(
            "--keys must be at least --threads",
        ));
    }
    if !(0.0..=1.0).contains(&args.compressibility) {
        return Err(BenchError::InvalidOption(
            "--compressibility must be in 0..=1",
        ));
    }
    Ok(())
}

fn engine_options(args: &StorageArgs) -> EngineOptions {
    let merge_default = (args.workload == Workload::Merge).then_some(MERGE_FILE_SIZE_BYTES);
    EngineOptions {
        compression: args.compression,
        max_file_size_bytes: args.max_file_size_bytes.or(merge_default),
    }
}

fn run_on(args: &StorageArgs, engine: &Engine) -> Result<Report, BenchError> {
    let ctx = Ctx {
        args,
        backend: &engine.backend,
    };
    match args.workload {
        Workload::Put => workload::put(&ctx),
        Workload::Get => workload::get(&ctx),
        Workload::Mixed => workload::mixed(&ctx),
        Workload::IndexScan => workload::index_scan(&ctx),
        Workload::Merge => match &engine.merger {
            Some(merger) => merge::run(&ctx, merger.as_ref()),
            None => Err(BenchError::Unsupported {
                workload: value_name(args.workload),
                backend: value_name(args.backend),
                why: "the engine has no merge",
            }),
        },
        Workload::Open => unreachable!("open reopens the engine itself"),
    }
}

/// Where the engine keeps its files for this run.
enum DataDir {
    /// A fresh temporary directory, removed at the end.
    Temp(tempfile::TempDir),
    /// A directory the user named, kept.
    Given(PathBuf),
}

impl DataDir {
    fn new(given: Option<&Path>) -> Result<Self, BenchError> {
        let Some(path) = given else {
            let temp = tempfile::Builder::new().prefix("eddy-bench-").tempdir();
            let dir_err = |source| BenchError::Dir {
                path: std::env::temp_dir(),
                source,
            };
            return temp.map(DataDir::Temp).map_err(dir_err);
        };
        let dir_err = |source| BenchError::Dir {
            path: path.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(path).map_err(dir_err)?;
        if std::fs::read_dir(path).map_err(dir_err)?.next().is_some() {
            return Err(BenchError::DirNotEmpty(path.to_path_buf()));
        }
        Ok(DataDir::Given(path.to_path_buf()))
    }

    fn path(&self) -> &Path {
        match self {
            DataDir::Temp(t) => t.path(),
            DataDir::Given(p) => p,
        }
    }

    fn remove(self) -> Result<(), BenchError> {
        let DataDir::Temp(temp) = self else {
            return Ok(());
        };
        let path = temp.path().to_path_buf();
        temp.close()
            .map_err(|source| BenchError::Dir { path, source })
    }
}
