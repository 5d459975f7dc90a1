//! The basic workloads: put, get, mixed and index-scan, and the load phase
//! they share.
//!
//! All data goes to one bucket. A load phase writes every key of the key
//! space once, without waiting for the disk, and then syncs, so that a read
//! phase after it finds every key (in the page cache, for disk engines).

use eddy_storage::{Backend, FoldControl, IndexQuery, IndexSpec, WriteOptions};

use super::error::BenchError;
use super::keys::{ReadKeys, SplitMix64, WriteKeys, key_bytes, mix64};
use super::report::{PhaseResult, Report};
use super::runner::{Limit, run_phase};
use super::values::ValuePool;
use crate::cli::{StorageArgs, SyncMode};

/// The bucket every workload writes.
pub const BUCKET: &[u8] = b"bench";
/// The index field of the index-scan workload.
pub const INDEX_FIELD: &[u8] = b"bench_bin";

/// What every workload gets to work with.
pub struct Ctx<'a> {
    pub args: &'a StorageArgs,
    pub backend: &'a dyn Backend,
    pub pool: &'a ValuePool,
}

/// The index term of key number `n`: a scramble of it, so index order is
/// not key order.
pub fn index_term(n: u64) -> [u8; 8] {
    mix64(n).to_be_bytes()
}

fn write_options(sync: SyncMode) -> WriteOptions {
    WriteOptions {
        sync: sync == SyncMode::Always,
        ..WriteOptions::default()
    }
}

/// Times `ops` puts in the run's key order, with one index term per key when
/// `indexed`.
pub fn write_phase(
    ctx: &Ctx<'_>,
    ops: u64,
    sync: SyncMode,
    indexed: bool,
) -> Result<PhaseResult, BenchError> {
    let keys = WriteKeys::new(ctx.args.key_order, ctx.args.keys, ctx.args.seed);
    let opts = write_options(sync);
    run_phase(ctx.args.threads, Limit::Ops(ops), |_| {
        let keys = &keys;
        move |i| {
            let n = keys.key_for_op(i);
            let specs = match indexed {
                true => vec![IndexSpec::add(INDEX_FIELD, &index_term(n))],
                false => Vec::new(),
            };
            let value = ctx.pool.value(i);
            ctx.backend
                .put(BUCKET, &key_bytes(n), value, &specs, opts)?;
            Ok(value.len() as u64)
        }
    })
}

/// Writes every key once (no sync per put), then syncs.
pub fn load(ctx: &Ctx<'_>, indexed: bool) -> Result<PhaseResult, BenchError> {
    let phase = write_phase(ctx, ctx.args.keys, SyncMode::None, indexed)?;
    ctx.backend.sync()?;
    Ok(phase)
}

/// Reads key `n`, which must hold a value of the pool's size.
fn read_one(ctx: &Ctx<'_>, n: u64) -> Result<u64, BenchError> {
    let value = ctx.backend.get(BUCKET, &key_bytes(n))?;
    let value = value.ok_or(BenchError::WrongRead {
        key: n,
        why: "not found",
    })?;
    if value.len() != ctx.pool.value_size() {
        return Err(BenchError::WrongRead {
            key: n,
            why: "wrong value size",
        });
    }
    Ok(value.len() as u64)
}

/// Gets of loaded keys in the run's key order until `limit`.
pub fn read_phase(ctx: &Ctx<'_>, limit: Limit<'_>) -> Result<PhaseResult, BenchError> {
    let args = ctx.args;
    run_phase(args.threads, limit, |t| {
        let mut keys = ReadKeys::new(args.key_order, args.keys, args.seed, t);
        move |_| read_one(ctx, keys.next_key())
    })
}

fn with_load(report: Report, load: &PhaseResult) -> Report {
    let secs = load.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    report.with("load_ops_per_s", load.ops as f64 / secs)
}

/// Adds what the engine says about itself: keys, files, and the memory its
/// key index takes per key where it reports that (bitcask's `keydir_bytes`).
pub fn with_status(report: Report, backend: &dyn Backend) -> Result<Report, BenchError> {
    let status = backend.status()?;
    let keys = status.keys.max(1) as f64;
    let report = report
        .with("status_keys", status.keys as f64)
        .with("status_files", status.files as f64);
    let keydir = status.extra.iter().find(|(name, _)| name == "keydir_bytes");
    Ok(match keydir.and_then(|(_, v)| v.parse::<f64>().ok()) {
        Some(bytes) => report.with("keydir_bytes_per_key", bytes / keys),
        None => report,
    })
}

/// `put`: puts into an empty store.
pub fn put(ctx: &Ctx<'_>) -> Result<Report, BenchError> {
    let phase = write_phase(ctx, ctx.args.ops, ctx.args.sync, false)?;
    Ok(Report::new(ctx.args, &phase))
}

/// `get`: load, then gets.
pub fn get(ctx: &Ctx<'_>) -> Result<Report, BenchError> {
    let load = load(ctx, false)?;
    let phase = read_phase(ctx, Limit::Ops(ctx.args.ops))?;
    with_status(with_load(Report::new(ctx.args, &phase), &load), ctx.backend)
}

/// `mixed`: load, then gets and puts of uniformly chosen keys.
pub fn mixed(ctx: &Ctx<'_>) -> Result<Report, BenchError> {
    let load = load(ctx, false)?;
    let args = ctx.args;
    let opts = write_options(args.sync);
    let phase = run_phase(args.threads, Limit::Ops(args.ops), |t| {
        let mut keys = ReadKeys::new(args.key_order, args.keys, args.seed, t);
        let mut dice = SplitMix64::new(mix64(args.seed.wrapping_add(t as u64 + 1)));
        move |i| {
            let n = keys.next_key();
            if dice.below(100) < u64::from(args.read_percent) {
                return read_one(ctx, n);
            }
            let value = ctx.pool.value(i);
            ctx.backend.put(BUCKET, &key_bytes(n), value, &[], opts)?;
            Ok(value.len() as u64)
        }
    })?;
    Ok(with_load(Report::new(args, &phase), &load))
}

/// Scans the whole index once, checking it holds one entry per key; returns
/// the bytes of terms and keys seen.
fn scan_index(ctx: &Ctx<'_>) -> Result<u64, BenchError> {
    let query = IndexQuery::range(BUCKET, INDEX_FIELD, &[], &[0xff; 9]);
    let (mut entries, mut bytes) = (0u64, 0u64);
    ctx.backend.index_range(&query, &mut |term, key| {
        entries += 1;
        bytes += (term.len() + key.len()) as u64;
        FoldControl::Continue
    })?;
    if entries != ctx.args.keys {
        return Err(BenchError::IndexCount {
            expected: ctx.args.keys,
            seen: entries,
        });
    }
    Ok(bytes)
}

/// `index-scan`: load with one term per key, then full range scans. The
/// headline ops are index entries; latencies are of whole scans.
pub fn index_scan(ctx: &Ctx<'_>) -> Result<Report, BenchError> {
    let load = load(ctx, true)?;
    let scans = (ctx.args.ops / ctx.args.keys).max(1);
    let mut phase = run_phase(ctx.args.threads, Limit::Ops(scans), |_| |_| scan_index(ctx))?;
    phase.ops *= ctx.args.keys;
    let report = Report::new(ctx.args, &phase).with("scans", scans as f64);
    Ok(with_load(report, &load))
}
