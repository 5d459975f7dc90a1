//! Quorum values (`r`, `pr`, `w`, `dw`, `pw`, `rw`, and the bucket
//! properties of those names) as Riak's users write them: `one`,
//! `quorum`, `all`, `default`, or a count of replicas. The server's request
//! model resolves them against a bucket's `n_val`; the PB wire's `uint32`
//! form is eddy-wire's (`WireQuorum`); clients, the bench tool's workloads
//! and Riak's HTTP API all spell them as here.
//!
//! Invariants: [`Quorum::parse`] inverts `Display` for every value; serde
//! writes a count as a number and a word as a string, and reads either;
//! [`Quorum::resolve`] never answers `default`'s meaning from `default`
//! itself (a bucket's own `default` is a majority).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A quorum as a client or bucket states it.
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

/// Why a quorum value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuorumError {
    /// Not `one`, `quorum`, `all`, `default` or a non-negative integer.
    #[error("invalid quorum value {0:?}")]
    Unparsable(String),
    /// More replicas than the bucket's n_val.
    #[error("{name} value {value} exceeds n_val {n_val}")]
    ExceedsNVal {
        name: &'static str,
        value: u32,
        n_val: u32,
    },
}

impl Quorum {
    /// Parses a client's word: `one`, `quorum`, `all`, `default` or a count.
    pub fn parse(text: &str) -> Result<Quorum, QuorumError> {
        match text {
            "one" => Ok(Quorum::One),
            "quorum" => Ok(Quorum::Quorum),
            "all" => Ok(Quorum::All),
            "default" => Ok(Quorum::Default),
            n => n
                .parse::<u32>()
                .map(Quorum::Count)
                .map_err(|_| QuorumError::Unparsable(text.to_string())),
        }
    }

    /// The number of replicas this means for `n_val`, resolving `default`
    /// through `bucket` (the bucket's own setting, never `default` itself).
    pub fn resolve(self, bucket: Quorum, n_val: u32) -> u32 {
        match self {
            Quorum::One => 1,
            Quorum::Quorum => n_val / 2 + 1,
            Quorum::All => n_val,
            Quorum::Count(n) => n,
            Quorum::Default => match bucket {
                Quorum::Default => n_val / 2 + 1,
                b => b.resolve(Quorum::Quorum, n_val),
            },
        }
    }

    /// Resolves and checks against `n_val`, naming the parameter in errors.
    pub fn resolve_checked(
        self,
        name: &'static str,
        bucket: Quorum,
        n_val: u32,
    ) -> Result<u32, QuorumError> {
        let value = self.resolve(bucket, n_val);
        if value > n_val {
            return Err(QuorumError::ExceedsNVal { name, value, n_val });
        }
        Ok(value)
    }
}

impl std::str::FromStr for Quorum {
    type Err = QuorumError;

    fn from_str(text: &str) -> Result<Quorum, QuorumError> {
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
    fn resolves_like_riak() {
        assert_eq!(Quorum::Quorum.resolve(Quorum::Quorum, 3), 2);
        assert_eq!(Quorum::Quorum.resolve(Quorum::Quorum, 5), 3);
        assert_eq!(Quorum::All.resolve(Quorum::Quorum, 3), 3);
        assert_eq!(Quorum::Default.resolve(Quorum::One, 3), 1);
        assert_eq!(Quorum::Default.resolve(Quorum::Default, 3), 2);
        assert_eq!(Quorum::Default.resolve(Quorum::Count(0), 3), 0);
        assert_eq!(
            Quorum::Count(4).resolve_checked("w", Quorum::Quorum, 3),
            Err(QuorumError::ExceedsNVal {
                name: "w",
                value: 4,
                n_val: 3
            })
        );
        assert_eq!(Quorum::All.resolve_checked("w", Quorum::Quorum, 3), Ok(3));
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
        for bad in ["most", "-1", "", "two"] {
            assert_eq!(
                bad.parse::<Quorum>(),
                Err(QuorumError::Unparsable(bad.to_string()))
            );
        }
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
