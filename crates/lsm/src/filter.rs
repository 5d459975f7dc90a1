//! The TTL compaction filter: drops expired objects of partition keyspaces.
//!
//! Every value in a partition keyspace starts with the expiry header of
//! [`crate::record`]. An expired entry becomes a tombstone (`Verdict::Remove`), never
//! vanishes outright, so an older version below it cannot resurface.
//! Reads check expiry themselves; the filter only reclaims space, and keeping
//! an entry is always safe. Hence two economies:
//!
//! - while no write in the environment has ever carried an expiry
//!   (`ttl_in_use` is false) the filter keeps everything without reading;
//! - a value stored in a blob file is read (to see its header) only when
//!   compacting into the last level, so TTL does not undo the write savings
//!   of key-value separation.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use eddy_storage::Clock;
use eddy_storage::clock::is_expired;
use fjall::compaction::filter::{
    CompactionFilter, CompactionFilterResult, Context, Factory, ItemAccessor, Verdict,
};

use crate::record::split_expiry;

/// What every filter of one environment shares.
#[derive(Debug)]
pub struct TtlState {
    pub clock: Arc<dyn Clock>,
    /// Set once any write carries an expiry (persisted as a marker).
    pub ttl_in_use: AtomicBool,
}

impl TtlState {
    pub fn in_use(&self) -> bool {
        self.ttl_in_use.load(Ordering::Acquire)
    }
}

/// Makes one [`TtlFilter`] per compaction. fjall asks factories to be
/// unwind-safe; ours only reads an atomic flag and the clock, which a panic
/// elsewhere cannot leave half-updated.
pub struct TtlFilterFactory(pub AssertUnwindSafe<Arc<TtlState>>);

impl Factory for TtlFilterFactory {
    fn name(&self) -> &str {
        "eddy-ttl"
    }

    fn make_filter(&self, ctx: &Context) -> Box<dyn CompactionFilter> {
        Box::new(TtlFilter {
            active: self.0.in_use(),
            now_secs: self.0.clock.now_secs(),
            read_blobs: ctx.is_last_level,
        })
    }
}

struct TtlFilter {
    active: bool,
    now_secs: u64,
    read_blobs: bool,
}

impl CompactionFilter for TtlFilter {
    fn filter_item(&mut self, item: ItemAccessor<'_>, _ctx: &Context) -> CompactionFilterResult {
        if !self.active || (item.is_indirection() && !self.read_blobs) {
            return Ok(Verdict::Keep);
        }
        let value = item.value()?;
        // An undecodable value is kept: reads report it; the filter must not
        // destroy evidence.
        Ok(match split_expiry(&value) {
            Ok((expiry, _)) if is_expired(expiry, self.now_secs) => Verdict::Remove,
            _ => Verdict::Keep,
        })
    }
}
