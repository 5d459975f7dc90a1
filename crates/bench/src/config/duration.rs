//! Durations as a config or the command line writes them: a number and a
//! unit, `500ms`, `3s`, `1.5m`, `2h` (a bare number is seconds).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration written with a unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Span(pub Duration);

/// Why a duration did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {0:?}: expected a number and a unit (ms, s, m, h), like \"60s\"")]
pub struct SpanError(pub String);

impl Span {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Span, SpanError> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let scale = match unit.trim() {
            "ms" => 0.001,
            "" | "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(SpanError(text.to_string())),
        };
        let n: f64 = number.parse().map_err(|_| SpanError(text.to_string()))?;
        Duration::try_from_secs_f64(n * scale)
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
        ] {
            assert_eq!(Span::parse(text).unwrap().0.as_millis(), ms, "{text}");
        }
        for bad in ["", "s", "3 days", "-1s", "1e3s", "x"] {
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
