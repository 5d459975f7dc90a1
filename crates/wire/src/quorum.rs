//! Quorum values as the PB API carries them, and as clients spell them.
//!
//! Riak's PB messages carry every quorum (`r`, `pr`, `w`, `dw`, `pw`, `rw`,
//! and the same bucket properties) in a `uint32`: a count of replicas, or
//! one of four special values just below `u32::MAX` for the symbolic
//! quorums. Clients spell them `one`, `quorum`, `all`, `default` or a
//! count, in command lines, workload files and Riak's HTTP API.
//!
//! Invariants: [`Quorum::from_wire`] inverts [`Quorum::to_wire`] for every
//! value but a count equal to a special value (which means that symbolic
//! quorum on the wire, as it does to Riak); [`Quorum::parse`] inverts
//! `Display` for every value.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The wire value of `one`.
pub const ONE: u32 = u32::MAX - 1;
/// The wire value of `quorum` (a majority of n_val).
pub const QUORUM: u32 = u32::MAX - 2;
/// The wire value of `all`.
pub const ALL: u32 = u32::MAX - 3;
/// The wire value of `default` (the bucket's own setting).
pub const DEFAULT: u32 = u32::MAX - 4;

/// A quorum as a client states it in a request or bucket property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Quorum {
    /// One replica.
    One,
    /// A majority of n_val.
    Quorum,
    /// Every replica (n_val).
    All,
    /// The bucket's own setting.
    Default,
    /// Exactly this many replicas.
    Count(u32),
}

/// A quorum word that is none of `one`, `quorum`, `all`, `default` or a
/// non-negative integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quorum value {0:?}")]
pub struct ParseQuorumError(pub String);

impl Quorum {
    /// The quorum a PB `uint32` field carries.
    pub fn from_wire(value: u32) -> Quorum {
        match value {
            ONE => Quorum::One,
            QUORUM => Quorum::Quorum,
            ALL => Quorum::All,
            DEFAULT => Quorum::Default,
            n => Quorum::Count(n),
        }
    }

    /// The `uint32` a PB field carries for this quorum.
    pub fn to_wire(self) -> u32 {
        match self {
            Quorum::One => ONE,
            Quorum::Quorum => QUORUM,
            Quorum::All => ALL,
            Quorum::Default => DEFAULT,
            Quorum::Count(n) => n,
        }
    }

    /// Parses a client's word: `one`, `quorum`, `all`, `default` or a count.
    pub fn parse(text: &str) -> Result<Quorum, ParseQuorumError> {
        match text {
            "one" => Ok(Quorum::One),
            "quorum" => Ok(Quorum::Quorum),
            "all" => Ok(Quorum::All),
            "default" => Ok(Quorum::Default),
            n => n
                .parse::<u32>()
                .map(Quorum::Count)
                .map_err(|_| ParseQuorumError(text.to_string())),
        }
    }
}

impl std::str::FromStr for Quorum {
    type Err = ParseQuorumError;

    fn from_str(text: &str) -> Result<Quorum, ParseQuorumError> {
        Quorum::parse(text)
    }
}

impl fmt::Display for Quorum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Quorum::One => f.write_str("one"),
            Quorum::Quorum => f.write_str("quorum"),
            Quorum::All => f.write_str("all"),
            Quorum::Default => f.write_str("default"),
            Quorum::Count(n) => write!(f, "{n}"),
        }
    }
}

/// A count as a number, a symbolic quorum as its word (as Riak's HTTP API
/// writes bucket properties).
impl Serialize for Quorum {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Quorum::Count(n) => s.serialize_u32(*n),
            word => s.serialize_str(&word.to_string()),
        }
    }
}

/// A number, or a word [`Quorum::parse`] takes.
impl<'de> Deserialize<'de> for Quorum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Quorum, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u32),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Ok(Quorum::Count(n)),
            Raw::Text(t) => Quorum::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_KINDS: [Quorum; 6] = [
        Quorum::One,
        Quorum::Quorum,
        Quorum::All,
        Quorum::Default,
        Quorum::Count(0),
        Quorum::Count(2),
    ];

    #[test]
    fn wire_values_are_riaks() {
        assert_eq!(Quorum::One.to_wire(), 4_294_967_294);
        assert_eq!(Quorum::Quorum.to_wire(), 4_294_967_293);
        assert_eq!(Quorum::All.to_wire(), 4_294_967_292);
        assert_eq!(Quorum::Default.to_wire(), 4_294_967_291);
        assert_eq!(Quorum::Count(3).to_wire(), 3);
        for q in ALL_KINDS {
            assert_eq!(Quorum::from_wire(q.to_wire()), q);
        }
        assert_eq!(Quorum::from_wire(ALL), Quorum::All);
    }

    #[test]
    fn words_parse_and_print() {
        for (text, q) in [
            ("one", Quorum::One),
            ("quorum", Quorum::Quorum),
            ("all", Quorum::All),
            ("default", Quorum::Default),
            ("2", Quorum::Count(2)),
        ] {
            assert_eq!(text.parse::<Quorum>(), Ok(q));
            assert_eq!(q.to_string(), text);
        }
        for q in ALL_KINDS {
            assert_eq!(Quorum::parse(&q.to_string()), Ok(q));
        }
        assert!("most".parse::<Quorum>().is_err());
        assert!("-1".parse::<Quorum>().is_err());
        assert!("".parse::<Quorum>().is_err());
    }

    #[test]
    fn serde_takes_words_and_numbers() {
        let q: Quorum = serde_json::from_str("\"all\"").unwrap();
        assert_eq!(q, Quorum::All);
        let q: Quorum = serde_json::from_str("3").unwrap();
        assert_eq!(q, Quorum::Count(3));
        assert!(serde_json::from_str::<Quorum>("\"most\"").is_err());
        assert_eq!(serde_json::to_string(&Quorum::Count(2)).unwrap(), "2");
        assert_eq!(serde_json::to_string(&Quorum::One).unwrap(), "\"one\"");
    }
}
