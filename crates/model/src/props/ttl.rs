//! `ttl` (Eddy's own): how long an object of the bucket lives after its
//! last write, on every backend (design note 027, "Per-bucket TTL").
//!
//! Written as whole seconds (`86400`) or a duration (`"30d"`, `"12h"`,
//! `"90s"`: eddy-units' grammar); read back as seconds. `0` or `null`: no
//! ttl. A change applies to the writes made after it: each write stamps its
//! object with the expiry its bucket's ttl gives then.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest ttl: 100 years, so an expiry never overflows.
pub const TTL_SECS_MAX: u64 = 100 * 365 * 86_400;

/// A bucket's ttl in seconds (0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ttl(u64);

impl Ttl {
    /// The ttl of `secs` seconds, if within [`TTL_SECS_MAX`].
    pub fn from_secs(secs: u64) -> Option<Ttl> {
        (secs <= TTL_SECS_MAX).then_some(Ttl(secs))
    }

    /// Seconds an object lives after its last write (0: forever).
    pub fn secs(self) -> u64 {
        self.0
    }
}

/// When an object last written at `last_write_us` (microseconds since the
/// Unix epoch) expires under a ttl of `ttl_secs`, in whole seconds; 0
/// without a ttl.
pub fn expiry_secs(last_write_us: u64, ttl_secs: u64) -> u64 {
    match ttl_secs {
        0 => 0,
        ttl => (last_write_us / 1_000_000).saturating_add(ttl).max(1),
    }
}

impl fmt::Display for Ttl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Serialize for Ttl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Ttl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ttl, D::Error> {
        let bad = |why: String| serde::de::Error::custom(why);
        let secs = match serde_json::Value::deserialize(d)? {
            serde_json::Value::Number(n) => n
                .as_u64()
                .ok_or_else(|| bad(format!("ttl must be whole seconds or a duration, not {n}")))?,
            serde_json::Value::String(text) => {
                let d = eddy_units::parse_duration(&text).map_err(|e| bad(e.to_string()))?;
                if d.subsec_nanos() != 0 {
                    return Err(bad(format!("ttl {text:?} is not whole seconds")));
                }
                d.as_secs()
            }
            other => {
                return Err(bad(format!(
                    "ttl must be whole seconds or a duration, not {other}"
                )));
            }
        };
        Ttl::from_secs(secs).ok_or_else(|| {
            bad(format!(
                "ttl {secs} is beyond {TTL_SECS_MAX} seconds (100 years)"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<Ttl, String> {
        serde_json::from_value(v).map_err(|e| e.to_string())
    }

    #[test]
    fn seconds_and_durations_parse_to_seconds() {
        assert_eq!(parse(json!(90)).unwrap().secs(), 90);
        assert_eq!(parse(json!("30d")).unwrap().secs(), 30 * 86_400);
        assert_eq!(parse(json!("1h 30m")).unwrap().secs(), 5_400);
        assert_eq!(parse(json!("45")).unwrap().secs(), 45);
        assert_eq!(parse(json!(0)).unwrap().secs(), 0);
        assert_eq!(
            serde_json::to_value(parse(json!("2m")).unwrap()).unwrap(),
            json!(120)
        );
    }

    #[test]
    fn bad_ttls_are_refused_with_the_reason() {
        assert!(parse(json!(-1)).unwrap_err().contains("whole seconds"));
        assert!(parse(json!(1.5)).unwrap_err().contains("whole seconds"));
        assert!(
            parse(json!("1.5s"))
                .unwrap_err()
                .contains("not whole seconds")
        );
        assert!(parse(json!("soon")).unwrap_err().contains("not a duration"));
        assert!(parse(json!(true)).unwrap_err().contains("whole seconds"));
        assert!(
            parse(json!(TTL_SECS_MAX + 1))
                .unwrap_err()
                .contains("100 years")
        );
    }

    #[test]
    fn an_object_expires_ttl_after_its_last_write() {
        let ttl = Ttl::from_secs(60).unwrap();
        assert_eq!(expiry_secs(1_000_000_500_000, ttl.secs()), 1_000_060);
        assert_eq!(expiry_secs(1_000_000_500_000, Ttl::default().secs()), 0);
    }
}
