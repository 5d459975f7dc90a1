//! `eddy start`: the composition root. Locks the data directory, opens the
//! bucket registry and every partition's backend, starts the vnodes and the
//! HTTP and PB listeners, and on SIGTERM or SIGINT shuts down in order:
//! listeners, then vnodes (which finish queued work, sync and close their
//! backends), then the data-directory lock.

pub mod datadir;
pub mod storage;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use eddy_kv::commitlog::SyncStrategy;
use eddy_kv::props::BucketProps;
use eddy_kv::types::BucketRegistry;
use eddy_kv::{DeleteMode, Node, NodeConfig, Quorum};
use eddy_ring::{NodeName, Partition};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::Config;
use datadir::DataDir;
use storage::Storage;

/// Why the node could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    #[error(transparent)]
    DataDir(#[from] datadir::DataDirError),
    #[error("bucket metadata: {0}")]
    Registry(#[from] eddy_kv::types::RegistryError),
    #[error("storage: {0}")]
    Storage(#[from] eddy_storage::StorageError),
    #[error("node: {0}")]
    Node(#[from] eddy_kv::StartError),
    /// A listener's address could not be bound.
    #[error("cannot listen on {addr} ({setting}): {source}")]
    Bind {
        setting: &'static str,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("runtime: {0}")]
    Runtime(std::io::Error),
}

/// Runs a node in the foreground until SIGTERM or SIGINT.
pub fn start(config: &Config) -> Result<(), StartError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("eddy-worker")
        .build()
        .map_err(StartError::Runtime)?;
    runtime.block_on(run(config))
}

async fn run(config: &Config) -> Result<(), StartError> {
    let root = PathBuf::from(config.text("platform_data_dir"));
    let datadir = DataDir::lock(&root)?;
    let mut registry = BucketRegistry::open(
        &root.join("meta").join("buckets.json"),
        default_props(config),
    )?;
    if config.text("storage_backend") == "multi" {
        let names = storage::MULTI_BACKENDS
            .iter()
            .map(|s| s.to_string())
            .collect();
        registry = registry.with_backend_names(names);
    }
    let node = open_node(config, &datadir, Arc::new(registry))?;
    let damaged = node.damaged_partitions();
    if config.text("partition_repair") == "auto" && !damaged.is_empty() {
        node.spawn_repair(damaged);
    }
    let http_addr = addr(config, "listener.http.internal");
    let pb_addr = addr(config, "listener.protobuf.internal");
    let http = bind(
        "listener.http.internal",
        http_addr,
        backlog(config, "http.backlog"),
    )?;
    let pb = bind(
        "listener.protobuf.internal",
        pb_addr,
        backlog(config, "protobuf.backlog"),
    )?;
    let budget = eddy_api::net::RequestBudget::new(
        config.bytes("request_budget.maximum") as usize,
        std::time::Duration::from_millis(config.duration_ms("request_budget.wait").unwrap_or(0)),
    );
    let mut pb_config = pb_config(config);
    pb_config.budget = Some(budget.clone());
    let mut http_config = http_config(config);
    http_config.pb_table = pb_config.table.clone();
    http_config.budget = Some(budget);
    let (stop_tx, stop_rx) = watch::channel(false);
    let servers = [
        tokio::spawn(eddy_api::http::serve(
            http,
            node.clone(),
            http_config,
            stopped(stop_rx.clone()),
        )),
        tokio::spawn(eddy_api::pb::serve(
            pb,
            node.clone(),
            pb_config,
            stopped(stop_rx),
        )),
    ];
    tracing::info!(nodename = config.text("nodename"), %http_addr, %pb_addr, "eddy started");
    // Not println!: it panics when stdout cannot be written (a full disk).
    let _ = writeln!(
        std::io::stdout(),
        "eddy {} started: http {http_addr}, pb {pb_addr}, data {}",
        env!("CARGO_PKG_VERSION"),
        root.display()
    );
    wait_for_signal().await;
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    for server in servers {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), server).await;
    }
    let stopping = node.clone();
    let _ = tokio::task::spawn_blocking(move || stopping.shutdown()).await;
    drop(datadir);
    let _ = writeln!(std::io::stdout(), "eddy stopped");
    Ok(())
}

fn open_node(
    config: &Config,
    datadir: &DataDir,
    registry: Arc<BucketRegistry>,
) -> Result<Arc<Node>, StartError> {
    let storage = Storage::new(config, datadir.root(), registry.clone())?;
    let mut opened = Vec::new();
    for p in 0..config.int("ring_size") as u32 {
        let p = Partition(p);
        let backend = storage.open(p)?;
        let dir = storage.partition_dir(p);
        let marker = eddy_kv::repair::marker::path(&storage.partitions_dir(), p);
        let actor =
            match eddy_kv::repair::marker::newly_damaged(Some(&marker), &backend.recovery_report())
            {
                true => datadir.renew_actor(&dir, p)?,
                false => datadir.actor(&dir, p)?,
            };
        opened.push((backend, actor));
    }
    Ok(Node::start(
        node_config(config, datadir.root()),
        registry,
        |p| opened[p.0 as usize].clone(),
    )?)
}

fn bind(setting: &'static str, addr: SocketAddr, backlog: u32) -> Result<TcpListener, StartError> {
    eddy_api::net::listen(addr, backlog).map_err(|source| StartError::Bind {
        setting,
        addr,
        source,
    })
}

/// Resolves when the stop flag is raised.
async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}

fn addr(config: &Config, name: &str) -> SocketAddr {
    // Validated when the configuration was loaded.
    config.text(name).trim().parse().expect("validated address")
}

fn quorum(config: &Config, name: &str) -> Quorum {
    Quorum::parse(config.text(name).trim()).unwrap_or(Quorum::Quorum)
}

fn default_props(c: &Config) -> BucketProps {
    BucketProps {
        n_val: c.int("buckets.default.n_val") as u32,
        r: quorum(c, "buckets.default.r"),
        w: quorum(c, "buckets.default.w"),
        dw: quorum(c, "buckets.default.dw"),
        rw: quorum(c, "buckets.default.rw"),
        pr: quorum(c, "buckets.default.pr"),
        pw: quorum(c, "buckets.default.pw"),
        notfound_ok: c.flag("buckets.default.notfound_ok"),
        basic_quorum: c.flag("buckets.default.basic_quorum"),
        allow_mult: c.flag("buckets.default.allow_mult"),
        last_write_wins: c.flag("buckets.default.last_write_wins"),
        ..BucketProps::default()
    }
}

fn node_config(c: &Config, root: &std::path::Path) -> NodeConfig {
    let delete_mode = match c.text("delete_mode") {
        "keep" => DeleteMode::Keep,
        "immediate" => DeleteMode::Immediate,
        _ => DeleteMode::DelayMs(c.duration_ms("delete_mode").unwrap_or(3000)),
    };
    NodeConfig {
        node_name: NodeName(c.text("nodename").to_string()),
        ring_size: c.int("ring_size") as u32,
        delete_mode,
        siblings_warn: c.int("object.siblings.warning_threshold") as usize,
        siblings_max: c.int("object.siblings.maximum") as usize,
        object_size_warn_bytes: c.bytes("object.size.warning_threshold") as usize,
        object_size_max_bytes: c.bytes("object.size.maximum") as usize,
        meta_limits: meta_limits(c),
        commit_log_dir: Some(root.join("commit_log")),
        partitions_dir: Some(root.join("partitions")),
        commit_log: eddy_kv::commitlog::LogOptions {
            // Below 1 MiB a segment would roll (and checkpoint) every few writes.
            segment_bytes: c.bytes("commit_log.segment_size").max(1 << 20),
            sync: match c.text("commit_log.sync.strategy") {
                "none" => SyncStrategy::None,
                "o_sync" => SyncStrategy::OSync,
                _ => SyncStrategy::Interval,
            },
            sync_interval: Duration::from_millis(
                c.duration_ms("commit_log.sync.interval")
                    .unwrap_or(1000)
                    .max(1),
            ),
            ..Default::default()
        },
        ..NodeConfig::default()
    }
}

fn meta_limits(c: &Config) -> eddy_kv::limits::MetaLimits {
    let limit = |kind: &str| eddy_kv::limits::Limit {
        entries: c.int(&format!("object.{kind}.entries.maximum")) as usize,
        bytes: c.bytes(&format!("object.{kind}.size.maximum")) as usize,
    };
    eddy_kv::limits::MetaLimits {
        usermeta: limit("usermeta"),
        links: limit("links"),
        index: limit("index"),
    }
}

fn http_config(c: &Config) -> eddy_api::http::HttpConfig {
    let connections_max = c.int("http.connections_maximum").max(1) as usize;
    eddy_api::http::HttpConfig {
        body_bytes_max: c.bytes("http.body_size_maximum") as usize,
        connections_max,
        request_timeout: timeout(c, "http.request_timeout"),
        table: Some(eddy_api::net::ConnectionTable::new(connections_max)),
        ..Default::default()
    }
}

fn pb_config(c: &Config) -> eddy_api::pb::PbConfig {
    let connections_max = c.int("protobuf.connections_maximum").max(1) as usize;
    eddy_api::pb::PbConfig {
        frame_bytes_max: c.bytes("protobuf.frame_size_maximum") as usize,
        connections_max,
        read_timeout: timeout(c, "protobuf.idle_timeout"),
        request_timeout: timeout(c, "protobuf.request_timeout"),
        table: Some(eddy_api::net::ConnectionTable::new(connections_max)),
        budget: None,
    }
}

/// A timeout setting; `off` waits forever.
fn timeout(c: &Config, name: &str) -> Option<std::time::Duration> {
    c.duration_ms(name).map(std::time::Duration::from_millis)
}

fn backlog(c: &Config, name: &str) -> u32 {
    c.int(name).clamp(1, u64::from(u32::MAX)) as u32
}
