//! Parsing setting values: sizes, durations, flags, addresses, quorums.

use std::net::SocketAddr;

use super::schema::Kind;

/// Parses a byte size: digits with an optional `KB`, `MB`, `GB` or `TB`
/// suffix (powers of 1024).
pub fn bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 512KB or 2GB"))?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "KB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => {
            return Err(format!(
                "{text:?} has an unknown size unit (use KB, MB, GB or TB)"
            ));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Parses a duration into milliseconds: digits with `ms`, `s`, `m`, `h` or
/// `d` (a bare number is seconds).
pub fn duration_ms(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 3s or 1h"))?;
    let mult: u64 = match unit.trim() {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "{text:?} has an unknown time unit (use ms, s, m, h or d)"
            ));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{text:?} is too long"))
}

/// Parses `on`/`off`/`true`/`false`.
pub fn flag(text: &str) -> Result<bool, String> {
    match text.trim() {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("{text:?} is not on or off")),
    }
}

/// Checks `text` against `kind`, returning a reason when it does not fit.
pub fn check(kind: Kind, text: &str) -> Result<(), String> {
    match kind {
        Kind::Text => Ok(()),
        Kind::Int => text
            .trim()
            .parse::<u64>()
            .map(drop)
            .map_err(|_| format!("{text:?} is not a whole number")),
        Kind::Bytes => bytes(text).map(drop),
        Kind::Duration => duration_ms(text).map(drop),
        Kind::Flag => flag(text).map(drop),
        Kind::Addr => text
            .trim()
            .parse::<SocketAddr>()
            .map(drop)
            .map_err(|_| format!("{text:?} is not an address like 127.0.0.1:8098")),
        Kind::Choice(words) => match words.contains(&text.trim()) {
            true => Ok(()),
            false => Err(format!("{text:?} is not one of {}", words.join(", "))),
        },
        Kind::Quorum => eddy_model::Quorum::parse(text.trim())
            .map(drop)
            .map_err(|e| e.to_string()),
        Kind::DurationOr(words) if words.contains(&text.trim()) => Ok(()),
        Kind::DurationOr(_) => duration_ms(text).map(drop),
        Kind::BytesOr(words) if words.contains(&text.trim()) => Ok(()),
        Kind::BytesOr(_) => bytes(text).map(drop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_durations_flags() {
        assert_eq!(bytes("512"), Ok(512));
        assert_eq!(bytes("10MB"), Ok(10 << 20));
        assert_eq!(bytes("2GB"), Ok(2 << 30));
        assert!(bytes("2XB").is_err());
        assert!(bytes("MB").is_err());
        assert_eq!(duration_ms("3s"), Ok(3000));
        assert_eq!(duration_ms("250ms"), Ok(250));
        assert_eq!(duration_ms("1d"), Ok(86_400_000));
        assert!(duration_ms("3 weeks").is_err());
        assert_eq!(flag("on"), Ok(true));
        assert!(flag("yes").is_err());
        assert!(check(Kind::Addr, "127.0.0.1:8098").is_ok());
        assert!(check(Kind::Addr, "localhost").is_err());
        assert!(check(Kind::Quorum, "quorum").is_ok());
        assert!(check(Kind::Quorum, "most").is_err());
        assert!(check(Kind::DurationOr(&["keep"]), "keep").is_ok());
    }
}
