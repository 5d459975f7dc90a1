//! A histogram over roughly the last minute: six ten-second slots, each
//! an HDR histogram, reset when its slot comes round again. `/stats`
//! reads Riak's one-minute percentiles from it.

use hdrhistogram::Histogram as Hdr;
use parking_lot::Mutex;

const SLOTS: u64 = 6;
const SLOT_SECS: u64 = 10;

/// Values recorded in the last minute, by ten-second slot.
pub(crate) struct Windowed {
    /// Each slot's epoch (`now_secs / SLOT_SECS`; `u64::MAX`: never used)
    /// and its values.
    slots: Mutex<Vec<(u64, Hdr<u64>)>>,
}

impl Windowed {
    pub(crate) fn new() -> Self {
        let slots = (0..SLOTS).map(|_| (u64::MAX, new_hdr())).collect();
        Windowed {
            slots: Mutex::new(slots),
        }
    }

    /// Records `values` at `now_secs` (seconds since the histogram began).
    pub(crate) fn record_many(&self, now_secs: u64, values: &[u64]) {
        let epoch = now_secs / SLOT_SECS;
        let mut slots = self.slots.lock();
        let Some(slot) = slots.get_mut((epoch % SLOTS) as usize) else {
            return;
        };
        if slot.0 != epoch {
            slot.1.reset();
            slot.0 = epoch;
        }
        for value in values {
            slot.1.saturating_record(*value);
        }
    }

    /// Every value of the slots still within the minute before `now_secs`.
    pub(crate) fn snapshot(&self, now_secs: u64) -> Hdr<u64> {
        let epoch = now_secs / SLOT_SECS;
        let mut out = new_hdr();
        for (e, h) in self.slots.lock().iter() {
            if *e != u64::MAX && *e + SLOTS > epoch {
                let _ = out.add(h);
            }
        }
        out
    }
}

fn new_hdr() -> Hdr<u64> {
    Hdr::new(3).unwrap_or_else(|_| unreachable!("3 significant figures is valid"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_leaves_the_window_a_minute_later() {
        let w = Windowed::new();
        w.record_many(5, &[100]);
        w.record_many(65, &[7]);
        assert_eq!(w.snapshot(59).len(), 1);
        let later = w.snapshot(65);
        assert_eq!((later.len(), later.max()), (1, 7));
        assert!(w.snapshot(200).is_empty());
    }
}
