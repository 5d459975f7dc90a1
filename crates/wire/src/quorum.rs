//! Quorum values as the PB API carries them.
//!
//! Riak's PB messages carry every quorum (`r`, `pr`, `w`, `dw`, `pw`, `rw`,
//! and the same bucket properties) in a `uint32`: a count of replicas, or
//! one of four special values just below `u32::MAX` for the symbolic
//! quorums. The quorum itself, and the words clients spell it with, are
//! eddy-units' [`Quorum`]; this module is only its `uint32` form
//! ([`WireQuorum`]).
//!
//! Invariant: [`WireQuorum::from_wire`] inverts [`WireQuorum::to_wire`] for
//! every value but a count equal to a special value (which means that
//! symbolic quorum on the wire, as it does to Riak).

pub use eddy_units::quorum::{Quorum, QuorumError};

/// The wire value of `one`.
pub const ONE: u32 = u32::MAX - 1;
/// The wire value of `quorum` (a majority of n_val).
pub const QUORUM: u32 = u32::MAX - 2;
/// The wire value of `all`.
pub const ALL: u32 = u32::MAX - 3;
/// The wire value of `default` (the bucket's own setting).
pub const DEFAULT: u32 = u32::MAX - 4;

/// A quorum's `uint32` form in PB messages.
pub trait WireQuorum: Sized {
    /// The quorum a PB `uint32` field carries.
    fn from_wire(value: u32) -> Self;
    /// The `uint32` a PB field carries for this quorum.
    fn to_wire(self) -> u32;
}

impl WireQuorum for Quorum {
    fn from_wire(value: u32) -> Quorum {
        match value {
            ONE => Quorum::One,
            QUORUM => Quorum::Quorum,
            ALL => Quorum::All,
            DEFAULT => Quorum::Default,
            n => Quorum::Count(n),
        }
    }

    fn to_wire(self) -> u32 {
        match self {
            Quorum::One => ONE,
            Quorum::Quorum => QUORUM,
            Quorum::All => ALL,
            Quorum::Default => DEFAULT,
            Quorum::Count(n) => n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_values_are_riaks() {
        assert_eq!(Quorum::One.to_wire(), 4_294_967_294);
        assert_eq!(Quorum::Quorum.to_wire(), 4_294_967_293);
        assert_eq!(Quorum::All.to_wire(), 4_294_967_292);
        assert_eq!(Quorum::Default.to_wire(), 4_294_967_291);
        assert_eq!(Quorum::Count(3).to_wire(), 3);
        for q in [
            Quorum::One,
            Quorum::Quorum,
            Quorum::All,
            Quorum::Default,
            Quorum::Count(0),
            Quorum::Count(2),
        ] {
            assert_eq!(Quorum::from_wire(q.to_wire()), q);
        }
        assert_eq!(Quorum::from_wire(ALL), Quorum::All);
    }
}
