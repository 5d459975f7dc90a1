//! The command line: every subcommand and option of `eddy`, and nothing else.
//!
//! The tree is `eddy <command> [<subcommand>] [options]`. Each command's
//! options are a plain struct that the command's module receives; parsing
//! never reaches into a subsystem. Later commands (`start`, `admin`, …) are
//! new variants of [`Command`].

mod cluster;

use std::path::PathBuf;

#[cfg(feature = "bench")]
use clap::ValueEnum;
use clap::{Args, Parser, Subcommand};
#[cfg(feature = "bench")]
use eddy_wire::Quorum;

pub use cluster::{ClusterAction, ClusterView};

/// Eddy: a Riak-compatible distributed key-value database.
#[derive(Debug, Parser)]
#[command(name = "eddy", version, arg_required_else_help = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a node in the foreground until SIGTERM or SIGINT.
    Start(ConfigArgs),
    /// Stop the node that holds this configuration's data directory.
    Stop(ConfigArgs),
    /// Check that the node answers (prints "pong").
    Ping(ConfigArgs),
    /// Inspect the configuration.
    Config(ConfigCommand),
    /// Administer a running node.
    Admin(AdminArgs),
    #[cfg(feature = "bench")]
    /// Measure Eddy's components on this machine.
    Bench(BenchArgs),
    /// Run local nodes dev1..devN as one cluster, as Riak's devrel does.
    DevCluster(crate::devcluster::DevClusterArgs),
}

/// Where the configuration comes from: a file (default `./eddy.toml` if it
/// exists) and `EDDY_*` environment variables.
#[derive(Clone, Debug, Args)]
pub struct ConfigArgs {
    /// Configuration file (TOML or riak.conf lines, riak.conf setting
    /// names; relative paths in it are read from its directory); given
    /// before or after a subcommand (`eddy admin cluster plan --config F`).
    #[arg(long, short = 'c', global = true)]
    pub config: Option<PathBuf>,
}

/// `eddy config …`
#[derive(Debug, Args)]
#[command(arg_required_else_help = true)]
pub struct ConfigCommand {
    #[command(subcommand)]
    pub action: ConfigAction,
}

/// What `eddy config` does.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print every setting's effective value and where it came from.
    Show(ConfigArgs),
}

/// `eddy admin …`
#[derive(Debug, Args)]
#[command(arg_required_else_help = true)]
pub struct AdminArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(subcommand)]
    pub action: AdminAction,
}

/// What `eddy admin` does.
#[derive(Debug, Subcommand)]
pub enum AdminAction {
    /// Print the node's statistics (`/stats`).
    Status,
    /// Manage bucket types.
    #[command(name = "bucket-type", subcommand)]
    BucketType(BucketTypeAction),
    /// Repair a partition marked damaged (or all of them) from its replicas.
    Repair {
        /// A partition number, or `all`.
        #[arg(default_value = "all")]
        partition: String,
        /// Wait until the repair finished.
        #[arg(long)]
        wait: bool,
    },
    /// Drop a bucket: its keys, index entries and siblings go in one step,
    /// on every member (design note 018).
    #[command(name = "drop-bucket")]
    DropBucket {
        /// The bucket's name.
        bucket: String,
        /// Its bucket type.
        #[arg(long = "type", default_value = "default")]
        bucket_type: String,
    },
    /// Stage, plan and commit cluster membership changes.
    #[command(subcommand)]
    Cluster(ClusterAction),
    /// The cluster's views and settings.
    #[command(flatten)]
    View(ClusterView),
}

/// `eddy admin bucket-type …`, as `riak-admin bucket-type`.
#[derive(Debug, Subcommand)]
pub enum BucketTypeAction {
    /// List bucket types and whether each is active.
    List,
    /// Show a bucket type's status and properties.
    Status { name: String },
    /// Create a bucket type; JSON like '{"props":{"n_val":3}}'.
    Create { name: String, props: Option<String> },
    /// Activate a created bucket type.
    Activate { name: String },
    /// Change a bucket type's properties; JSON like '{"props":{"n_val":3}}'.
    Update { name: String, props: String },
}

#[cfg(feature = "bench")]
/// `eddy bench …`
#[derive(Debug, Args)]
#[command(arg_required_else_help = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub target: BenchTarget,
}

#[cfg(feature = "bench")]
/// What `eddy bench` measures.
#[derive(Debug, Subcommand)]
pub enum BenchTarget {
    /// Drive one storage backend directly (no network, no vnode).
    Storage(StorageArgs),
    /// Load a running node over Riak's Protocol Buffers API.
    Pb(PbArgs),
    /// Run a workload file (basho_bench style) against PB or HTTP
    /// endpoints of Eddy or any Riak-compatible server; writes CSV, a
    /// summary and charts to a results directory (docs/bench.md).
    Run(RunArgs),
    /// Draw the results of several `eddy bench run`s side by side.
    Compare(CompareArgs),
}

#[cfg(feature = "bench")]
/// Options of `eddy bench run`.
#[derive(Clone, Debug, Args)]
pub struct RunArgs {
    /// The workload (TOML; see docs/bench.md and bench/*.toml).
    pub config: PathBuf,
    /// Results directory; default: bench-results/<UTC timestamp>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override the workload's duration (e.g. 3s, 500ms, 2m).
    #[arg(long)]
    pub duration: Option<eddy_bench::config::Span>,
    /// Override the workload's endpoints (host:port; repeat for several).
    #[arg(long = "endpoint")]
    pub endpoints: Vec<String>,
    /// Override the length of the loopback echo run before the load
    /// (the workload's `baseline`, default 5s; `0s` skips it).
    #[arg(long)]
    pub baseline: Option<eddy_bench::config::Span>,
}

#[cfg(feature = "bench")]
/// Options of `eddy bench compare`.
#[derive(Clone, Debug, Args)]
pub struct CompareArgs {
    /// Results directories of `eddy bench run` (two or more).
    #[arg(required = true, num_args = 2..)]
    pub dirs: Vec<PathBuf>,
    /// Where the comparison charts go; default: bench-results/compare-<UTC timestamp>.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[cfg(feature = "bench")]
/// Options of `eddy bench storage`.
#[derive(Clone, Debug, Args)]
pub struct StorageArgs {
    /// Storage engine to measure.
    #[arg(long, value_enum, default_value_t = BackendKind::Memory)]
    pub backend: BackendKind,
    /// What to measure (see each value's help).
    #[arg(long, value_enum, default_value_t = Workload::Put)]
    pub workload: Workload,
    /// Data directory; must be empty or absent, and is kept. Default: a fresh
    /// temporary directory, removed afterwards.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Bytes per value.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Size of the key space (keys are 8-byte big-endian integers).
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// Operations in the measured phase, shared among the threads.
    #[arg(long, default_value_t = 100_000)]
    pub ops: u64,
    /// Client threads issuing operations (readers, for `merge`).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Order in which keys are written and read.
    #[arg(long, value_enum, default_value_t = KeyOrder::Sequential)]
    pub key_order: KeyOrder,
    /// Durability asked of each put.
    #[arg(long, value_enum, default_value_t = SyncMode::None)]
    pub sync: SyncMode,
    /// Percentage of gets in the `mixed` workload (the rest are puts).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub read_percent: u8,
    /// Fraction of each value that lz4 can squeeze out (0.0 = incompressible).
    #[arg(long, default_value_t = 0.5)]
    pub compressibility: f64,
    /// Compress values with lz4 (bitcask, lsm).
    #[arg(long)]
    pub compression: bool,
    /// Roll data files over at this size (bitcask); default: the engine's own,
    /// or 64 MiB for `merge` so that there are files to merge.
    #[arg(long)]
    pub max_file_size_bytes: Option<u64>,
    /// Seed of the key and value generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[cfg(feature = "bench")]
/// A storage engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// Ordered in-memory maps (crates/storage).
    Memory,
    /// Append-only files with an in-memory keydir (crates/bitcask).
    Bitcask,
    /// Ordered LSM tree on fjall (crates/lsm).
    Lsm,
}

#[cfg(feature = "bench")]
/// A storage benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// Time `--ops` puts into an empty store (the load phase).
    Put,
    /// Load `--keys` keys untimed, then time `--ops` gets of loaded keys.
    Get,
    /// Load `--keys` keys, then time `--ops` gets and puts (`--read-percent`).
    Mixed,
    /// Load `--keys` keys with one index term each, then time full index
    /// range scans (at least one, `--ops / --keys` in all); only on memory,
    /// the one engine that keeps index entries itself.
    IndexScan,
    /// Load `--keys` keys, overwrite each once (50 % dead), then time a forced
    /// merge while `--threads` readers keep reading.
    Merge,
    /// Load `--keys` keys, close, and time reopening with and without hint files.
    Open,
}

#[cfg(feature = "bench")]
/// Order of keys within a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KeyOrder {
    /// Ascending key numbers (appends in key order).
    Sequential,
    /// Writes visit keys in a pseudo-random permutation; reads pick keys
    /// uniformly at random.
    Random,
}

#[cfg(feature = "bench")]
/// Durability of each put.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SyncMode {
    /// No put waits for the disk (the engine syncs on its own schedule).
    None,
    /// Every put waits until it is durable; concurrent puts share fsyncs.
    Always,
}

#[cfg(feature = "bench")]
/// Options of `eddy bench pb`.
#[derive(Clone, Debug, Args)]
pub struct PbArgs {
    /// The node's PB listener.
    #[arg(long, default_value = "127.0.0.1:8087")]
    pub addr: String,
    /// Connections, each issuing requests back to back (a closed loop).
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// Seconds of measured load.
    #[arg(long, default_value_t = 20.0)]
    pub duration: f64,
    /// Bytes per value.
    #[arg(long, default_value_t = 1024)]
    pub value_size: usize,
    /// Size of the key space (keys are decimal numbers, chosen uniformly).
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// What to measure; `get` and `mixed` first load every key, untimed.
    #[arg(long, value_enum, default_value_t = PbWorkload::Get)]
    pub workload: PbWorkload,
    /// Percentage of gets in the `mixed` workload (the rest are puts).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub read_percent: u8,
    /// Skip the preload of `get` and `mixed`: an earlier run with the same
    /// bucket, `--keys` and `--value-size` loaded them.
    #[arg(long)]
    pub skip_preload: bool,
    /// Bucket the keys live in.
    #[arg(long, default_value = "eddy-bench")]
    pub bucket: String,
    /// Bucket type; default: the `default` type.
    #[arg(long)]
    pub bucket_type: Option<String>,
    /// Write quorum of puts (one, quorum, all, default or a count); default:
    /// the bucket's.
    #[arg(long)]
    pub w: Option<Quorum>,
    /// Durable-write quorum of puts (`0`: no vnode waits for the disk).
    #[arg(long)]
    pub dw: Option<Quorum>,
    /// Read quorum of gets.
    #[arg(long)]
    pub r: Option<Quorum>,
    /// Milliseconds one request (or connect) may take before it counts as a
    /// timeout and its connection is replaced.
    #[arg(long, default_value_t = 5000)]
    pub timeout_ms: u64,
    /// Threads of the generator's runtime; default: one per core.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Seconds of the loopback baseline run first: the same connections
    /// and request shapes against an echo server in this process, so the
    /// node's figures can be read as a share of what the machine allows
    /// at the moment (`0`: skip it).
    #[arg(long, default_value_t = 5.0)]
    pub baseline: f64,
    /// Seed of the key choices.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[cfg(feature = "bench")]
/// A PB benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PbWorkload {
    /// Load every key untimed, then time gets of random keys.
    Get,
    /// Time puts of random keys (no vclock: blind overwrites).
    Put,
    /// Load every key, then time gets and puts (`--read-percent`).
    Mixed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "bench")]
    fn storage(args: &[&str]) -> Result<StorageArgs, clap::Error> {
        let argv = ["eddy", "bench", "storage"].iter().chain(args);
        let cli = Cli::try_parse_from(argv)?;
        let Command::Bench(BenchArgs {
            target: BenchTarget::Storage(s),
        }) = cli.command
        else {
            panic!("not a storage bench command");
        };
        Ok(s)
    }

    #[cfg(feature = "bench")]
    #[test]
    fn defaults_are_a_small_memory_put_run() {
        let s = storage(&[]).unwrap();
        assert_eq!(s.backend, BackendKind::Memory);
        assert_eq!(s.workload, Workload::Put);
        assert_eq!(s.key_order, KeyOrder::Sequential);
        assert_eq!(s.sync, SyncMode::None);
        assert_eq!(
            (s.value_size, s.keys, s.ops, s.threads),
            (100, 100_000, 100_000, 1)
        );
        assert!(!s.json && !s.compression && s.dir.is_none());
    }

    #[cfg(feature = "bench")]
    #[test]
    fn every_option_parses() {
        let s = storage(&[
            "--workload=index-scan",
            "--dir=/tmp/x",
            "--value-size=8192",
            "--keys=7",
            "--ops=9",
            "--threads=64",
            "--key-order=random",
            "--sync=always",
            "--read-percent=90",
            "--compressibility=0",
            "--compression",
            "--max-file-size-bytes=1000",
            "--seed=3",
            "--json",
        ])
        .unwrap();
        assert_eq!(s.workload, Workload::IndexScan);
        assert_eq!(s.dir.as_deref(), Some(std::path::Path::new("/tmp/x")));
        assert_eq!((s.value_size, s.keys, s.ops, s.threads), (8192, 7, 9, 64));
        assert_eq!(s.key_order, KeyOrder::Random);
        assert_eq!(s.sync, SyncMode::Always);
        assert_eq!(s.read_percent, 90);
        assert_eq!(s.max_file_size_bytes, Some(1000));
        assert!(s.json && s.compression);
    }

    #[cfg(feature = "bench")]
    #[test]
    fn bad_values_are_rejected() {
        assert!(storage(&["--backend=oracle"]).is_err());
        assert_eq!(
            storage(&["--backend=lsm"]).unwrap().backend,
            BackendKind::Lsm
        );
        assert_eq!(
            storage(&["--backend=bitcask"]).unwrap().backend,
            BackendKind::Bitcask
        );
        assert!(storage(&["--read-percent=101"]).is_err());
        assert!(storage(&["--sync=sometimes"]).is_err());
    }

    #[cfg(feature = "bench")]
    fn pb(args: &[&str]) -> Result<PbArgs, clap::Error> {
        let argv = ["eddy", "bench", "pb"].iter().chain(args);
        let cli = Cli::try_parse_from(argv)?;
        let Command::Bench(BenchArgs {
            target: BenchTarget::Pb(p),
        }) = cli.command
        else {
            panic!("not a pb bench command");
        };
        Ok(p)
    }

    #[cfg(feature = "bench")]
    #[test]
    fn pb_defaults_are_the_issue_3_run() {
        let p = pb(&[]).unwrap();
        assert_eq!(p.addr, "127.0.0.1:8087");
        assert_eq!((p.connections, p.value_size, p.keys), (32, 1024, 100_000));
        assert_eq!(p.duration, 20.0);
        assert_eq!(p.workload, PbWorkload::Get);
        assert_eq!((p.w, p.dw, p.r), (None, None, None));
        assert!(!p.json && p.bucket_type.is_none());
    }

    #[cfg(feature = "bench")]
    #[test]
    fn pb_options_parse() {
        let p = pb(&[
            "--workload=mixed",
            "--read-percent=80",
            "--w=quorum",
            "--dw=0",
            "--r=all",
            "--bucket=b",
            "--bucket-type=t",
            "--duration=1",
            "--json",
        ])
        .unwrap();
        assert_eq!(p.workload, PbWorkload::Mixed);
        assert_eq!(p.read_percent, 80);
        assert_eq!(p.w, Some(Quorum::Quorum));
        assert_eq!(p.dw, Some(Quorum::Count(0)));
        assert_eq!(p.r, Some(Quorum::All));
        assert_eq!(
            (p.bucket.as_str(), p.bucket_type.as_deref()),
            ("b", Some("t"))
        );
        assert!(pb(&["--w=most"]).is_err());
        assert!(pb(&["--workload=scan"]).is_err());
    }

    #[test]
    fn node_and_admin_commands_parse() {
        let cli = Cli::try_parse_from(["eddy", "start", "--config", "x.toml"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Start(ConfigArgs { config: Some(_) })
        ));
        let cli =
            Cli::try_parse_from(["eddy", "admin", "bucket-type", "create", "t", "{}"]).unwrap();
        let Command::Admin(AdminArgs { action, .. }) = cli.command else {
            panic!()
        };
        assert!(matches!(
            action,
            AdminAction::BucketType(BucketTypeAction::Create { .. })
        ));
        assert!(Cli::try_parse_from(["eddy", "admin", "bucket-type", "update", "t"]).is_err());
        assert!(Cli::try_parse_from(["eddy", "config", "show"]).is_ok());
        let cli = Cli::try_parse_from(["eddy", "admin", "repair", "5", "--wait"]).unwrap();
        let Command::Admin(AdminArgs { action, .. }) = cli.command else {
            panic!()
        };
        assert!(
            matches!(action, AdminAction::Repair { partition, wait: true } if partition == "5")
        );
    }

    #[cfg(feature = "bench")]
    #[test]
    fn bench_run_and_compare_parse() {
        let cli = Cli::try_parse_from([
            "eddy",
            "bench",
            "run",
            "w.toml",
            "--out",
            "o",
            "--duration",
            "3s",
            "--endpoint",
            "a:1",
            "--endpoint",
            "b:2",
        ])
        .unwrap();
        let Command::Bench(BenchArgs {
            target: BenchTarget::Run(r),
        }) = cli.command
        else {
            panic!("not bench run");
        };
        assert_eq!(r.config, std::path::Path::new("w.toml"));
        assert_eq!(r.duration.unwrap().0, std::time::Duration::from_secs(3));
        assert_eq!(r.endpoints, ["a:1", "b:2"]);
        assert!(
            Cli::try_parse_from(["eddy", "bench", "run", "w.toml", "--duration", "soon"]).is_err()
        );
        let cli = Cli::try_parse_from(["eddy", "bench", "compare", "a", "b", "c"]).unwrap();
        let Command::Bench(BenchArgs {
            target: BenchTarget::Compare(c),
        }) = cli.command
        else {
            panic!("not bench compare");
        };
        assert_eq!(c.dirs.len(), 3);
        assert!(Cli::try_parse_from(["eddy", "bench", "compare", "a"]).is_err());
    }

    #[test]
    fn no_arguments_asks_for_help() {
        let err = Cli::try_parse_from(["eddy"]).unwrap_err();
        assert_eq!(
            err.kind(),
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
    }
}
