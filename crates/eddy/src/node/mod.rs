//! `eddy start`: the composition root. Locks the data directory, takes its
//! clean-shutdown marker, opens the bucket registry and every partition's
//! backend with its actor ([`actors`]), starts the vnodes and the HTTP and
//! PB listeners, and on SIGTERM or SIGINT, or once the membership service
//! finds the node removed from its cluster, shuts down in order: listeners,
//! then vnodes (which finish queued work, sync and close their backends),
//! then, only if all of that closed cleanly, the clean-shutdown marker,
//! then the data-directory lock. A start that fails after opening its
//! partitions but before serving closes them the same way and puts the
//! marker it took back ([`close_unserved`]). Each phase of the start is
//! logged with its time.

pub mod actors;
pub mod cluster;
pub mod datadir;
pub mod handoff;
pub mod metadata;
pub mod migrate;
pub mod storage;
pub mod vnodes;

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use eddy_model::types::BucketRegistry;
use std::collections::BTreeMap;

use eddy_kv::{Node, NodeConfig, VnodeParts};
use eddy_ring::Ring;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::Settings;
use crate::config::settings::{HttpSettings, PartitionRepair, PbSettings, StorageBackend};
use actors::{Actors, LastRun};
use datadir::DataDir;
use storage::Storage;

/// Why the node could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    #[error(transparent)]
    DataDir(#[from] datadir::DataDirError),
    #[error("bucket metadata: {0}")]
    Registry(#[from] eddy_model::types::RegistryError),
    #[error(transparent)]
    Migrate(#[from] migrate::MigrateError),
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
    #[error(transparent)]
    Cluster(#[from] cluster::ClusterError),
}

/// Runs a node in the foreground until SIGTERM or SIGINT, or until it is
/// removed from its cluster.
pub fn start(settings: &Settings) -> Result<(), StartError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("eddy-worker")
        .build()
        .map_err(StartError::Runtime)?;
    runtime.block_on(run(settings))
}

async fn run(settings: &Settings) -> Result<(), StartError> {
    let started = Instant::now();
    let mut signals = StopSignals::install();
    let root = settings.node.platform_data_dir.clone();
    let datadir = DataDir::lock(&root)?;
    tracing::info!(data = %root.display(), "starting: data directory locked");
    let mut registry = BucketRegistry::new(settings.bucket_defaults.clone());
    if settings.storage.backend == StorageBackend::Multi {
        let names = storage::MULTI_BACKENDS
            .iter()
            .map(|s| s.to_string())
            .collect();
        registry = registry.with_backend_names(names);
    }
    let mut state = cluster::load_state(settings, &root)?;
    let state_path = cluster::state_path(&root);
    migrate::migrate(&root, &mut state, &state_path, &settings.node.nodename)?;
    registry.apply_registers(state.metadata())?;
    let links = cluster::Links::bind(settings, &state)?;
    let watch = eddy_remote::handoff::Watch::new();
    let jobs = eddy_query::Jobs::new(settings.javascript);
    let (node, storage) = open_node(
        settings,
        &datadir,
        Arc::new(registry),
        state.ring().clone(),
        &watch,
        jobs.clone(),
        &links,
    )?;
    let damaged = node.damaged_partitions();
    if settings.node.partition_repair == PartitionRepair::Auto && !damaged.is_empty() {
        node.spawn_repair(damaged);
    }
    let listeners = settings.listeners;
    let bound = bind(
        "listener.http.internal",
        listeners.http,
        settings.http.backlog,
    )
    .and_then(|http| {
        let pb = bind(
            "listener.protobuf.internal",
            listeners.protobuf,
            settings.protobuf.backlog,
        )?;
        Ok((http, pb))
    });
    let (http, pb) = match bound {
        Ok(listeners) => listeners,
        Err(e) => return Err(close_unserved(&node, &datadir, &root, e).await),
    };
    let partitions = cluster::Partitions { storage, watch };
    let cluster = match cluster::start(settings, &root, &node, state, partitions, links).await {
        Ok(cluster) => cluster,
        Err(e) => return Err(close_unserved(&node, &datadir, &root, e.into()).await),
    };
    let budget = eddy_api::net::RequestBudget::new(
        settings.request_budget.bytes_max,
        settings.request_budget.wait,
    );
    let mut pb_config = pb_config(&settings.protobuf);
    pb_config.budget = Some(budget.clone());
    pb_config.jobs = jobs.clone();
    let mut http_config = http_config(&settings.http, settings.storage.backend);
    http_config.jobs = jobs;
    http_config.pb_table = pb_config.table.clone();
    http_config.budget = Some(budget);
    http_config.membership = Some(cluster.membership.clone());
    http_config.handoffs = Some(cluster.handoffs.clone());
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
    let (http_addr, pb_addr) = (listeners.http, listeners.protobuf);
    let elapsed_ms = started.elapsed().as_millis();
    tracing::info!(nodename = %settings.node.nodename, %http_addr, %pb_addr, elapsed_ms, "eddy started");
    // Not println!: it panics when stdout cannot be written (a full disk).
    let _ = writeln!(
        std::io::stdout(),
        "eddy {} started: http {http_addr}, pb {pb_addr}, data {}",
        env!("CARGO_PKG_VERSION"),
        root.display()
    );
    tokio::select! {
        () = signals.recv() => {}
        () = cluster.removed() => {}
    }
    tracing::info!("shutting down");
    let _ = stop_tx.send(true);
    for server in servers {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), server).await;
    }
    cluster.shutdown();
    let stopping = node.clone();
    let closed = tokio::task::spawn_blocking(move || stopping.shutdown()).await;
    if closed.is_ok() && closed_cleanly(&root) {
        if let Err(e) = datadir.mark_clean() {
            tracing::error!("{e}; the next start will renew every partition's actor");
        }
    } else {
        tracing::warn!("shutdown was not clean; the next start will renew every partition's actor");
    }
    drop(datadir);
    let _ = writeln!(std::io::stdout(), "eddy stopped");
    Ok(())
}

/// Closes a node whose start failed after it opened its partitions but
/// before it served: it acknowledged nothing, so once the log and every
/// backend close cleanly, the data directory is as clean as the last run
/// left it (replayed and synced, at that), and the clean-shutdown marker
/// this start took is put back. Without that, a start refused for an
/// address in use would make the next one renew every actor as after a
/// crash. Returns `error`, the start's.
async fn close_unserved(
    node: &Arc<Node>,
    datadir: &DataDir,
    root: &Path,
    error: StartError,
) -> StartError {
    let closing = node.clone();
    let closed = tokio::task::spawn_blocking(move || closing.shutdown()).await;
    if closed.is_ok()
        && closed_cleanly(root)
        && let Err(e) = datadir.mark_clean()
    {
        tracing::error!("{e}; the next start will renew every partition's actor");
    }
    error
}

fn open_node(
    settings: &Settings,
    datadir: &DataDir,
    registry: Arc<BucketRegistry>,
    ring: Ring,
    watch: &Arc<eddy_remote::handoff::Watch>,
    jobs: Arc<eddy_query::Jobs>,
    links: &cluster::Links,
) -> Result<(Arc<Node>, Arc<Storage>), StartError> {
    let storage = Arc::new(Storage::new(
        &settings.storage,
        datadir.root(),
        registry.clone(),
    )?);
    eddy_storage::destroy::remove_leftovers(&storage.partitions_dir())?;
    let last_run = LastRun::detect(datadir, &storage.partitions_dir())?;
    let mut actors = Actors::new(datadir, last_run, settings.storage.backend);
    let partitions = vnodes::hosted(&ring, &settings.node.nodename, &storage);
    let opening = Instant::now();
    tracing::info!(partitions = partitions.len(), "opening partitions");
    let mut opened = BTreeMap::new();
    for p in &partitions {
        let backend = storage.open(*p)?;
        let marker = eddy_vnode::marker::path(&storage.partitions_dir(), *p);
        let lost = eddy_vnode::marker::newly_damaged(Some(&marker), &backend.recovery_report());
        let actor = actors.actor(&storage.partition_dir(*p), *p, lost)?;
        let incarnation = vnodes::incarnation(&storage, *p);
        let side = storage.open_side(*p, incarnation, &backend)?;
        let backend = watch.wrap(*p, backend);
        opened.insert(
            *p,
            VnodeParts {
                backend,
                side,
                actor,
                incarnation,
            },
        );
    }
    actors.finish();
    let live: Vec<_> = opened.iter().map(|(p, v)| (*p, v.incarnation)).collect();
    storage.keep_sides(&live)?;
    let elapsed_ms = opening.elapsed().as_millis();
    tracing::info!(
        partitions = partitions.len(),
        elapsed_ms,
        "partitions opened"
    );
    let replaying = Instant::now();
    let config = NodeConfig {
        map_runner: Some(jobs),
        ..node_config(settings, datadir.root())
    };
    let factory = Arc::new(vnodes::Factory {
        storage: storage.clone(),
    });
    let links = links.for_node(watch.wrap_factory(factory));
    let node = Node::start_linked(config, links, registry, ring, &partitions, |p| {
        opened
            .remove(&p)
            .expect("each hosted partition opened once")
    })?;
    let elapsed_ms = replaying.elapsed().as_millis();
    tracing::info!(
        vnodes = partitions.len(),
        elapsed_ms,
        "commit log replayed and vnodes started"
    );
    vnodes::destroy_dropped(&node, &storage)?;
    Ok((node, storage))
}

/// Whether the node's shutdown closed the commit log and every backend
/// without error: `Node::shutdown` deletes the log's segments only then,
/// so a log directory left without segments is the proof.
fn closed_cleanly(root: &Path) -> bool {
    eddy_vnode::commitlog::segment::list(&root.join("commit_log")).is_ok_and(|s| s.is_empty())
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

/// SIGTERM and SIGINT, taken over when the start begins: one that comes
/// before the node serves is kept and stops it once it does, instead of
/// killing the process with the default action while a client may
/// already have been answered.
struct StopSignals {
    term: Option<tokio::signal::unix::Signal>,
    int: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    fn install() -> StopSignals {
        use tokio::signal::unix::{SignalKind, signal};
        let taken = |kind: SignalKind| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!("cannot handle signal {kind:?}: {e}");
                None
            }
        };
        StopSignals {
            term: taken(SignalKind::terminate()),
            int: taken(SignalKind::interrupt()),
        }
    }

    /// Resolves at the first SIGTERM or SIGINT (never, if neither could
    /// be handled).
    async fn recv(&mut self) {
        async fn one(signal: Option<&mut tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = one(self.term.as_mut()) => {},
            () = one(self.int.as_mut()) => {},
        }
    }
}

fn node_config(s: &Settings, root: &Path) -> NodeConfig {
    NodeConfig {
        node_name: s.node.nodename.clone(),
        ring_size: s.node.ring_size,
        delete_mode: s.node.delete_mode,
        siblings_warn: s.objects.siblings_warn,
        siblings_max: s.objects.siblings_max,
        object_size_warn_bytes: s.objects.size_warn_bytes,
        object_size_max_bytes: s.objects.size_max_bytes,
        meta_limits: s.objects.meta,
        multi: s.multi,
        datatype_cache_bytes: s.datatype_cache_bytes,
        commit_log_dir: Some(root.join("commit_log")),
        partitions_dir: Some(root.join("partitions")),
        commit_log: s.commit_log.clone(),
        ..NodeConfig::default()
    }
}

fn http_config(s: &HttpSettings, backend: StorageBackend) -> eddy_api::http::HttpConfig {
    eddy_api::http::HttpConfig {
        body_bytes_max: s.body_bytes_max,
        storage_backend: backend.name().to_string(),
        connections_max: s.connections_max,
        request_timeout: s.request_timeout,
        table: Some(eddy_api::net::ConnectionTable::new(s.connections_max)),
        ..Default::default()
    }
}

fn pb_config(s: &PbSettings) -> eddy_api::pb::PbConfig {
    eddy_api::pb::PbConfig {
        frame_bytes_max: s.frame_bytes_max,
        connections_max: s.connections_max,
        read_timeout: s.idle_timeout,
        request_timeout: s.request_timeout,
        table: Some(eddy_api::net::ConnectionTable::new(s.connections_max)),
        ..Default::default()
    }
}
