//! Where a reader of a vnode's change sequence resumes (design note 027,
//! "The change sequence"). A sequence number means something only in the
//! incarnation that handed it out: a reader names the incarnation with
//! it, and one of another incarnation (the partition was dropped and
//! taken again, or handed to this node) starts from the beginning.
//!
//! Invariant: a number is never handed out twice by an incarnation, crash
//! or not (the sequence's reservation, [`crate::sequence`]), so a reader
//! of this incarnation resumes exactly after what it read.

/// How far a reader read: the last sequence it saw of an incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub incarnation: u64,
    pub seq: u64,
}

/// Where the reader goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// With the changes after this sequence.
    After(u64),
    /// From the start: the position names another incarnation, whose
    /// sequence means nothing here.
    Reset,
}

/// Where a reader at `pos` resumes in incarnation `incarnation`.
pub fn resume(pos: Position, incarnation: u64) -> Resume {
    match pos.incarnation == incarnation {
        true => Resume::After(pos.seq),
        false => Resume::Reset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_of_this_incarnation_goes_on_and_of_another_starts_over() {
        let pos = Position {
            incarnation: 7,
            seq: 50,
        };
        assert_eq!(resume(pos, 7), Resume::After(50));
        assert_eq!(resume(pos, 8), Resume::Reset);
    }
}
