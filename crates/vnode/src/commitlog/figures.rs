//! The commit log's figures (design note 025): appends, fdatasyncs (each
//! one group-commit round, answering every waiter it covers) and their
//! time, segments filled and checkpointed, and what replay at start
//! applied. Registered in the node's registry by the node, which hands
//! them to [`super::CommitLog::open`]; counted under locks the log
//! already holds, or by its own threads.

use eddy_metrics::{Counter, Histogram, Registry, TIME_US_BOUNDS, Unit};

/// The handles a commit log counts into.
#[derive(Clone, Debug)]
pub struct LogFigures {
    /// Entries appended (records, drop and synced marks), and their bytes.
    pub appends: Counter,
    pub appended_bytes: Counter,
    /// fdatasyncs of the log, and the time of each, µs.
    pub syncs: Counter,
    pub sync_time: Histogram,
    /// Segments filled (closed for the next), and checkpoints (every
    /// backend synced, then the filled segments retired).
    pub segments_filled: Counter,
    pub checkpoints: Counter,
    /// At start: segments replayed, records applied, records skipped
    /// (dropped or covered by a synced mark).
    pub replayed_segments: Counter,
    pub replayed_records: Counter,
    pub replay_skipped_records: Counter,
}

impl LogFigures {
    /// Registers the commit log's figures in `r`.
    #[rustfmt::skip]
    pub fn register(r: &Registry) -> LogFigures {
        LogFigures {
            appends: r.counter("eddy_commitlog_appends_total", "Entries appended to the commit log."),
            appended_bytes: r.counter("eddy_commitlog_appended_bytes_total", "Bytes appended to the commit log."),
            syncs: r.counter("eddy_commitlog_syncs_total", "fdatasyncs of the commit log (group-commit rounds)."),
            sync_time: r.histogram("eddy_commitlog_sync_time_seconds", "Time of each fdatasync of the commit log.", Unit::Microseconds, TIME_US_BOUNDS),
            segments_filled: r.counter("eddy_commitlog_segments_filled_total", "Commit log segments filled."),
            checkpoints: r.counter("eddy_commitlog_checkpoints_total", "Commit log checkpoints (every backend synced, filled segments retired)."),
            replayed_segments: r.counter("eddy_commitlog_replayed_segments_total", "Commit log segments replayed at start."),
            replayed_records: r.counter("eddy_commitlog_replayed_records_total", "Commit log records applied by replay at start."),
            replay_skipped_records: r.counter("eddy_commitlog_replay_skipped_records_total", "Commit log records replay skipped (dropped, or synced before)."),
        }
    }

    /// Figures registered nowhere (a log whose figures nobody reads).
    pub fn unregistered() -> LogFigures {
        LogFigures::register(&Registry::new())
    }

    /// Counts what a replay at start did.
    pub fn replayed(&self, recovered: &super::Recovered) {
        self.replayed_segments.add(recovered.segments.len() as u64);
        self.replayed_records.add(recovered.records);
        self.replay_skipped_records.add(recovered.skipped);
    }
}
