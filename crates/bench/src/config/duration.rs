//! Durations as a workload file or the command line writes them, in the
//! grammar the node's settings share (`eddy_units`, design note 022):
//! `500ms`, `3s`, `1.5m`, `2h`, `1d` (a bare number is seconds).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration written with a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span(pub Duration);

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {0:?}: expected a number and a unit (ms, s, m, h, d), like \"60s\"")]
pub struct SpanError(pub String);

impl Span {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Span, SpanError> {
        eddy_units::parse_duration(text)
            .map(Span)
            .map_err(|_| SpanError(text.to_string()))
    }

    /// Seconds, fractional.
    pub fn secs(self) -> f64 {
        self.0.as_secs_f64()
    }
}

impl std::str::FromStr for Span {
    type Err = SpanError;

    fn from_str(s: &str) -> Result<Span, SpanError> {
        Span::parse(s)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if !ms.is_multiple_of(1000) || ms == 0 {
            write!(f, "{ms}ms")
        } else {
            write!(f, "{}s", ms / 1000)
        }
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Span, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => Duration::try_from_secs_f64(n)
                .map(Span)
                .map_err(|_| serde::de::Error::custom(SpanError(n.to_string()))),
            Raw::Text(t) => Span::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse() {
        for (text, ms) in [
            ("500ms", 500),
            ("3s", 3000),
            ("3", 3000),
            ("1.5m", 90_000),
            ("2h", 7_200_000),
            (" 10 s", 10_000),
            ("1d", 86_400_000),
            ("3 days", 259_200_000),
        ] {
            assert_eq!(Span::parse(text).unwrap().0.as_millis(), ms, "{text}");
        }
        for bad in ["", "s", "3 fortnights", "-1s", "1e3s", "x"] {
            assert!(Span::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn display_round_trips() {
        for text in ["500ms", "3s", "90s"] {
            let span = Span::parse(text).unwrap();
            assert_eq!(Span::parse(&span.to_string()).unwrap(), span);
        }
        assert_eq!(Span::parse("1500ms").unwrap().to_string(), "1500ms");
    }
}
