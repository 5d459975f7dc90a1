//! Where a reader of a vnode's change sequence resumes (design note 027,
//! "Sequence epochs"). Every open of a side store starts an epoch and
//! records the first sequence it hands out; a power loss may have lost the
//! store's unsynced tail, so replay may hand out again numbers a reader
//! already saw. A reader's position names its incarnation and epoch, and
//! one of an older epoch resumes no later than the start of any epoch
//! after it.
//!
//! Invariant (property-tested): the resumed point is at most the reader's
//! own sequence and before the first sequence of every later epoch, so no
//! change handed out after the reader's epoch ended is skipped.

/// How far a reader read: the last sequence it saw of an incarnation's
/// epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub incarnation: u64,
    pub epoch: u32,
    pub seq: u64,
}

/// Where the reader goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// With the changes after this sequence.
    After(u64),
    /// From the start: the position names another incarnation (or an
    /// epoch the store never had), whose sequence means nothing here.
    Reset,
}

/// Where a reader at `pos` resumes in incarnation `incarnation`, whose
/// epochs are `epochs` ((epoch, first sequence), oldest first).
pub fn resume(pos: Position, incarnation: u64, epochs: &[(u32, u64)]) -> Resume {
    let known = epochs.iter().any(|(e, _)| *e == pos.epoch);
    if pos.incarnation != incarnation || !known {
        return Resume::Reset;
    }
    let after = epochs
        .iter()
        .filter(|(e, _)| *e > pos.epoch)
        .map(|(_, first)| first.saturating_sub(1))
        .fold(pos.seq, u64::min);
    Resume::After(after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(epoch: u32, seq: u64) -> Position {
        Position {
            incarnation: 7,
            epoch,
            seq,
        }
    }

    #[test]
    fn a_reader_of_the_current_epoch_goes_on_where_it_was() {
        assert_eq!(resume(at(2, 50), 7, &[(1, 1), (2, 40)]), Resume::After(50));
    }

    #[test]
    fn a_reader_past_a_lost_tail_goes_back_to_where_the_next_epoch_began() {
        // Epoch 1 handed out up to 100; a power loss kept 1..=80; epoch 2
        // began at 81 and handed 81.. out again.
        assert_eq!(resume(at(1, 100), 7, &[(1, 1), (2, 81)]), Resume::After(80));
        assert_eq!(resume(at(1, 60), 7, &[(1, 1), (2, 81)]), Resume::After(60));
    }

    #[test]
    fn another_incarnation_or_an_unknown_epoch_starts_over() {
        let other = Position {
            incarnation: 6,
            ..at(1, 10)
        };
        assert_eq!(resume(other, 7, &[(1, 1)]), Resume::Reset);
        assert_eq!(resume(at(3, 10), 7, &[(1, 1), (2, 5)]), Resume::Reset);
    }

    proptest! {
        #[test]
        fn no_change_after_the_readers_epoch_is_skipped(
            firsts in proptest::collection::vec(1u64..1000, 1..6),
            epoch_index in any::<prop::sample::Index>(),
            seq in 0u64..1000,
        ) {
            let epochs: Vec<(u32, u64)> = firsts.iter().enumerate().map(|(i, f)| (i as u32 + 1, *f)).collect();
            let (epoch, _) = epochs[epoch_index.index(epochs.len())];
            let Resume::After(after) = resume(at(epoch, seq), 7, &epochs) else {
                return Err(TestCaseError::fail("a known epoch resumes"));
            };
            prop_assert!(after <= seq);
            for (e, first) in &epochs {
                if *e > epoch {
                    prop_assert!(after < *first);
                }
            }
        }
    }
}
