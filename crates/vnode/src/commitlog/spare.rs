//! Segment creation that may fail for a while: out of descriptors or disk
//! space, the log cannot create its next segment. That poisons nothing (no
//! record was touched): the syncer retries with backoff, and writes are
//! refused only once the current segment runs low without a spare, before
//! any backend is touched, so no write is half-applied. This module owns
//! that refusal, its counters and the fault injection that tests it.
//!
//! Invariant: `State::spare_failed` is set only while `State::next` is
//! empty, and `Shared::refusing` is set while it is (so that
//! [`super::CommitLog::check`] takes the slow path).

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use eddy_storage::{Resource, StorageError};
use parking_lot::Mutex;

use super::{Shared, State, segment, writer};
use eddy_model::error::KvError;

/// The first pause before the syncer retries a failed creation.
pub(super) const RETRY_FIRST: Duration = Duration::from_millis(50);
/// The longest pause between retries.
pub(super) const RETRY_MAX: Duration = Duration::from_secs(1);

/// Writes refused because a resource ran out, by resource.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    pub disk: u64,
    pub descriptors: u64,
    pub memory: u64,
    /// Refused because creation failed for another reason.
    pub other: u64,
}

/// The counters and the fault injection.
#[derive(Default)]
pub(super) struct Spare {
    inject: Mutex<Option<i32>>,
    disk: AtomicU64,
    descriptors: AtomicU64,
    memory: AtomicU64,
    other: AtomicU64,
}

impl Spare {
    pub fn inject(&self, errno: Option<i32>) {
        *self.inject.lock() = errno;
    }

    fn injected(&self) -> Option<io::Error> {
        self.inject.lock().map(io::Error::from_raw_os_error)
    }

    /// Counts one refused write.
    pub fn count(&self, e: &KvError) {
        let counter = match e {
            KvError::Storage(StorageError::Exhausted { resource, .. }) => match resource {
                Resource::Disk => &self.disk,
                Resource::Descriptors => &self.descriptors,
                Resource::Memory => &self.memory,
            },
            _ => &self.other,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn refusals(&self) -> Refusals {
        Refusals {
            disk: self.disk.load(Ordering::Relaxed),
            descriptors: self.descriptors.load(Ordering::Relaxed),
            memory: self.memory.load(Ordering::Relaxed),
            other: self.other.load(Ordering::Relaxed),
        }
    }
}

/// Why a segment could not be created.
#[derive(Clone, Debug)]
pub(super) struct CreateFailure {
    path: PathBuf,
    seq: u64,
    kind: io::ErrorKind,
    os: Option<i32>,
    message: String,
}

impl CreateFailure {
    pub fn new(path: PathBuf, seq: u64, e: &io::Error) -> CreateFailure {
        CreateFailure {
            path,
            seq,
            kind: e.kind(),
            os: e.raw_os_error(),
            message: e.to_string(),
        }
    }

    /// The error a refused write gets: [`StorageError::Exhausted`] naming
    /// the resource, or the I/O error.
    pub fn error(&self) -> KvError {
        let source = match self.os {
            Some(errno) => io::Error::from_raw_os_error(errno),
            None => io::Error::new(self.kind, self.message.clone()),
        };
        let e = match Resource::of(&source) {
            Some(resource) => StorageError::Exhausted {
                resource,
                detail: format!(
                    "the commit log cannot create segment {}: {source}",
                    self.seq
                ),
            },
            None => StorageError::io(&self.path, source),
        };
        KvError::Storage(e)
    }
}

impl Shared {
    /// Creates segment `seq` (or fails as injected).
    pub(super) fn create_segment(&self, seq: u64, capacity: usize) -> io::Result<writer::Segment> {
        if let Some(e) = self.spare.injected() {
            return Err(e);
        }
        writer::Segment::create(&self.dir, seq, capacity, self.opts.mapped())
    }

    /// Remembers that creating segment `seq` failed with `e`.
    pub(super) fn create_failed(&self, st: &mut State, seq: u64, e: &io::Error) -> CreateFailure {
        let failure = CreateFailure::new(segment::path(&self.dir, seq), seq, e);
        if st.spare_failed.is_none() {
            tracing::warn!("commit log cannot create segment {seq}, retrying: {e}");
        }
        st.spare_failed = Some(failure.clone());
        self.refusing.store(true, Ordering::Release);
        self.work.notify_one();
        failure
    }

    /// Takes `segment` as the spare, if it still comes after the current
    /// one, and ends any refusal for want of one; else gives it back.
    pub(super) fn install_spare(
        &self,
        st: &mut State,
        segment: writer::Segment,
    ) -> Option<writer::Segment> {
        if st.next.is_some() || segment.seq <= st.current.seq {
            return Some(segment);
        }
        st.next = Some(segment);
        if st.spare_failed.take().is_some() {
            tracing::info!("commit log created its next segment; writes resume");
            if st.failed.is_none() && !st.stopping {
                self.refusing.store(false, Ordering::Release);
            }
        }
        None
    }

    /// Why a write is refused now, if it is (counted when exhausted).
    pub(super) fn refusal(&self, st: &State) -> Option<KvError> {
        if let Some(e) = &st.failed {
            return Some(super::poisoned(e));
        }
        if st.stopping {
            return Some(KvError::ShuttingDown);
        }
        let e = self.exhausted(st)?;
        self.spare.count(&e);
        Some(e)
    }

    /// The refusal for want of a spare segment: none could be created and
    /// the current one has less than half a segment's room left.
    pub(super) fn exhausted(&self, st: &State) -> Option<KvError> {
        let failure = st.spare_failed.as_ref()?;
        let low = (st.current.room() as u64) < self.opts.segment_bytes / 2;
        (st.next.is_none() && low).then(|| failure.error())
    }
}
