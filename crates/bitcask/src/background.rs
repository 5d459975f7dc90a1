//! Background threads: syncing files closed by rollover and writing their
//! hints, interval sync, and the merge check.
//!
//! Each thread holds the instance's [`Inner`] and stops when
//! [`crate::engine::Stop`] is requested (the hint thread when its job
//! channel closes). None of them holds a lock while it sleeps.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::thread::JoinHandle;

use eddy_storage::StorageError;

use crate::config::SyncStrategy;
use crate::engine::Inner;
use crate::hint::HintWriter;
use crate::scan::{ScanEvent, scan};

/// Starts the threads the config asks for.
pub fn start(inner: &Arc<Inner>) -> std::io::Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::new();
    let (tx, rx) = channel();
    *inner.hint_jobs.lock() = Some(tx);
    let i = inner.clone();
    threads.push(spawn("bitcask-hint", move || hint_loop(&i, rx))?);
    if let SyncStrategy::Interval { ms } = inner.config.sync {
        let i = inner.clone();
        threads.push(spawn("bitcask-sync", move || sync_loop(&i, ms))?);
    }
    if inner.config.merge_check_interval_ms > 0 {
        let i = inner.clone();
        threads.push(spawn("bitcask-merge", move || merge_loop(&i))?);
    }
    Ok(threads)
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name.into()).spawn(f)
}

fn hint_loop(inner: &Inner, jobs: Receiver<u32>) {
    for id in jobs {
        // A failed sync poisons the instance; durable writers see it.
        let _ = inner.sync_closed_in_background();
        // Hints are an optimisation: on failure open scans the data file.
        let _ = write_hint(inner, id);
    }
}

fn sync_loop(inner: &Inner, ms: u64) {
    while !inner.stop.wait_ms(ms) {
        // A failure poisons the instance; writers see it.
        let _ = inner.sync_all();
    }
}

fn merge_loop(inner: &Inner) {
    while !inner.stop.wait_ms(inner.config.merge_check_interval_ms) {
        let now = inner.now();
        if inner.config.merge_window.admits(now) && crate::merge::wanted(inner) {
            let _ = crate::merge::merge(inner, false);
        }
    }
}

/// Writes the hint file of closed data file `id` by scanning it. The data
/// file is synced first, so a hint never describes bytes a power loss
/// could still take away.
pub fn write_hint(inner: &Inner, id: u32) -> Result<(), StorageError> {
    // Serialised with merges, which delete files.
    let _no_merge = inner.merge_lock.lock();
    let Some(file) = inner.state.read().files.get(&id).map(|f| f.file.clone()) else {
        return Ok(());
    };
    let io = |e| StorageError::io(&file.path, e);
    let len = file.file().metadata().map_err(io)?.len();
    let mut hint = HintWriter::create(&inner.dir, id)?;
    scan(file.file(), &file.path, len, |ev| match ev {
        ScanEvent::Record {
            offset,
            raw,
            record,
        } => hint.add(offset as u32, raw.len() as u32, &record),
        _ => Ok(()),
    })?;
    inner.sync_data_file(&file)?;
    hint.finish(len)
}
