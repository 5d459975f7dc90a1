//! The one grammar of durations and byte sizes: the node's settings
//! (`eddy.toml`, riak.conf lines, `EDDY_*`) and the bench tool's workload
//! files and flags are all written in it (design note 022).
//!
//! - A **duration** is humantime's grammar (`250ms`, `3s`, `1.5m`, `2h`,
//!   `1d`, `1h 30m`, `3 days`), or a bare number (`3`, `0.5`), which is
//!   seconds.
//! - A **size** is a number with an optional unit: `512`, `64KB`, `1.5GiB`.
//!   `KB`, `MB`, `GB`, `TB` and `PB` are powers of 1024, as in riak.conf
//!   (cuttlefish), and so are `KiB` … `PiB`; `B` or no unit is bytes.
//!
//! - A **quorum** (`r`, `w`, `dw`, `pr`, `pw`, `rw`) is `one`, `quorum`,
//!   `all`, `default` or a count ([`quorum`]).
//!
//! This crate depends on no other Eddy crate, so the server, its PB wire
//! format and the bench tool (which never depends on server crates) can
//! share it.

pub mod quorum;

pub use quorum::{Quorum, QuorumError};

use std::time::Duration;

/// A duration or size that did not parse; the text says how to write one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnitError {
    /// Not a duration.
    #[error("{0:?} is not a duration like 250ms, 3s, 1.5m, 2h or 1d (a bare number is seconds)")]
    Duration(String),
    /// Not a size.
    #[error("{0:?} is not a size like 512, 64KB, 10MB or 2GB (KB, MB, GB, TB: powers of 1024)")]
    Size(String),
    /// A size beyond 2⁶⁴ - 2 bytes.
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// Parses a duration (see the crate docs).
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    let bad = || UnitError::Duration(text.to_string());
    if is_number(t) {
        let secs: f64 = t.parse().map_err(|_| bad())?;
        return Duration::try_from_secs_f64(secs).map_err(|_| bad());
    }
    humantime::parse_duration(t).map_err(|_| bad())
}

/// Parses a byte size (see the crate docs).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let bad = || UnitError::Size(text.to_string());
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if !is_number(number) {
        return Err(bad());
    }
    let binary = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => "B",
        "k" | "kb" | "ki" | "kib" => "KiB",
        "m" | "mb" | "mi" | "mib" => "MiB",
        "g" | "gb" | "gi" | "gib" => "GiB",
        "t" | "tb" | "ti" | "tib" => "TiB",
        "p" | "pb" | "pi" | "pib" => "PiB",
        _ => return Err(bad()),
    };
    let size: bytesize::ByteSize = format!("{number} {binary}").parse().map_err(|_| bad())?;
    // bytesize saturates: u64::MAX stands for anything from there on.
    match size.as_u64() {
        u64::MAX => Err(UnitError::TooLarge(text.to_string())),
        n => Ok(n),
    }
}

/// Whether `t` is a plain non-negative decimal: digits with at most one
/// point (no sign, exponent, `inf` or `NaN`).
fn is_number(t: &str) -> bool {
    t.bytes().any(|b| b.is_ascii_digit())
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && t.bytes().filter(|b| *b == b'.').count() <= 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> u128 {
        parse_duration(text).unwrap().as_millis()
    }

    #[test]
    fn durations_of_the_settings_and_the_bench_both_parse() {
        // What the settings accepted before this grammar.
        for (text, want) in [
            ("250ms", 250),
            ("3s", 3_000),
            ("3", 3_000),
            ("5m", 300_000),
            ("1h", 3_600_000),
            ("1d", 86_400_000),
            ("3 s", 3_000),
        ] {
            assert_eq!(ms(text), want, "{text}");
        }
        // What the bench accepted before it.
        for (text, want) in [("1.5m", 90_000), ("0.5", 500), (" 10 s", 10_000)] {
            assert_eq!(ms(text), want, "{text}");
        }
        // And what humantime adds.
        assert_eq!(ms("1h 30m"), 5_400_000);
        assert_eq!(ms("3 days"), 3 * 86_400_000);
        assert_eq!(ms("0s"), 0);
    }

    #[test]
    fn bad_durations_say_how_to_write_one() {
        for bad in [
            "",
            "s",
            "-1s",
            "1e3s",
            "1e3",
            "x",
            "3 fortnights",
            "1..5s",
            "inf",
        ] {
            let err = parse_duration(bad).unwrap_err().to_string();
            assert!(err.contains("like 250ms"), "{bad}: {err}");
        }
    }

    #[test]
    fn sizes_are_powers_of_1024_as_in_riak_conf() {
        for (text, want) in [
            ("512", 512),
            ("512B", 512),
            ("64KB", 64 << 10),
            ("64kb", 64 << 10),
            ("64KiB", 64 << 10),
            ("10MB", 10 << 20),
            ("2GB", 2 << 30),
            ("1TB", 1 << 40),
            ("1.5GB", 3 << 29),
            (" 16 MB ", 16 << 20),
        ] {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn bad_sizes_are_refused() {
        for bad in ["", "MB", "2XB", "-1KB", "1e3", "1..2MB"] {
            assert_eq!(parse_size(bad), Err(UnitError::Size(bad.into())), "{bad}");
        }
        assert!(matches!(
            parse_size("99999999999PB"),
            Err(UnitError::TooLarge(_))
        ));
    }
}
