//! The types settings are read as: each parses its own grammar from the
//! setting's text and says, when it cannot, what would fit. Durations and
//! sizes use the grammar the bench tool shares ([`eddy_units`], design
//! note 022). A type that holds a rule beyond its grammar (a ring size that
//! is a power of two, an hour of the day, a node name with a host) checks
//! it here, so a schema that deserializes holds only usable values.

use std::net::SocketAddr;
use std::time::Duration;

use eddy_kv::DeleteMode;
use eddy_model::Quorum;
use eddy_ring::NodeName;
use serde::{Deserialize, Deserializer};

use super::schema::Kind;

/// A type a setting can have, and how `eddy config show`'s tests and docs
/// describe it.
pub trait SettingValue {
    /// The setting's kind of value.
    const KIND: Kind;
}

impl SettingValue for String {
    const KIND: Kind = Kind::Text;
}

impl SettingValue for u64 {
    const KIND: Kind = Kind::Int;
}

impl SettingValue for u32 {
    const KIND: Kind = Kind::Int;
}

impl SettingValue for bool {
    const KIND: Kind = Kind::Flag;
}

/// Words an optional setting takes for "none".
const OFF: &[&str] = &["off"];

impl SettingValue for Option<Size> {
    const KIND: Kind = Kind::BytesOr(OFF);
}

impl SettingValue for Option<Dur> {
    const KIND: Kind = Kind::DurationOr(OFF);
}

/// Parses `on`/`off`/`true`/`false`.
pub fn flag(text: &str) -> Result<bool, String> {
    match text.trim() {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("{text:?} is not on or off")),
    }
}

/// Deserializes a setting's text with `parse`, whose error becomes the
/// setting's.
fn from_text<'de, D, T>(d: D, parse: impl FnOnce(&str) -> Result<T, String>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let text = String::deserialize(d)?;
    parse(&text).map_err(serde::de::Error::custom)
}

/// Declares a setting's type that is read from text by a parse function.
macro_rules! text_value {
    ($(#[$meta:meta])* $name:ident($inner:ty), $kind:expr, $parse:expr) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name(pub $inner);

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                from_text(d, $parse).map($name)
            }
        }

        impl SettingValue for $name {
            const KIND: Kind = $kind;
        }
    };
}

text_value!(
    /// A byte size: `512`, `64KB`, `10MB`, `2GB` (powers of 1024).
    Size(u64),
    Kind::Bytes,
    |t| eddy_units::parse_size(t).map_err(|e| e.to_string())
);

text_value!(
    /// A duration: `250ms`, `3s`, `1.5m`, `1h`, `1d`.
    Dur(Duration),
    Kind::Duration,
    |t| eddy_units::parse_duration(t).map_err(|e| e.to_string())
);

text_value!(
    /// `host:port`.
    Addr(SocketAddr),
    Kind::Addr,
    |t| t
        .trim()
        .parse()
        .map_err(|_| format!("{t:?} is not an address like 127.0.0.1:8098"))
);

text_value!(
    /// A quorum: `one`, `quorum`, `all`, `default` or a count.
    QuorumValue(Quorum),
    Kind::Quorum,
    |t| Quorum::parse(t.trim()).map_err(|e| e.to_string())
);

text_value!(
    /// Partitions in the ring: a power of two from 8 to 1024.
    RingSize(u32),
    Kind::Int,
    |t| match t.trim().parse::<u32>() {
        Ok(n) if n.is_power_of_two() && (8..=1024).contains(&n) => Ok(n),
        _ => Err(format!(
            "{t:?}: must be a power of two between 8 and 1024"
        )),
    }
);

text_value!(
    /// Replicas of each object: at least 1.
    NVal(u32),
    Kind::Int,
    |t| match t.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{t:?}: must be at least 1")),
    }
);

text_value!(
    /// An hour of the day, 0 to 23.
    Hour(u8),
    Kind::Int,
    |t| match t.trim().parse::<u8>() {
        Ok(n) if n <= 23 => Ok(n),
        _ => Err(format!("{t:?}: must be an hour from 0 to 23")),
    }
);

text_value!(
    /// When tombstones are reaped: `keep`, `immediate` or a delay.
    DeleteModeValue(DeleteMode),
    Kind::DurationOr(&["keep", "immediate"]),
    |t| match t.trim() {
        "keep" => Ok(DeleteMode::Keep),
        "immediate" => Ok(DeleteMode::Immediate),
        _ => eddy_units::parse_duration(t)
            .map(|d| DeleteMode::DelayMs(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)))
            .map_err(|_| format!("{t:?} is not keep, immediate or a duration like 3s")),
    }
);

/// This node's name, `name@host`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeNameValue(pub NodeName);

impl<'de> Deserialize<'de> for NodeNameValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_text(d, |t| match t.contains('@') {
            true => Ok(NodeNameValue(NodeName(t.to_string()))),
            false => Err(format!("{t:?} must look like name@host")),
        })
    }
}

impl SettingValue for NodeNameValue {
    const KIND: Kind = Kind::Text;
}

/// Declares a setting whose value is one of a few words: an enum that
/// deserializes from its words and refuses any other, naming them all.
macro_rules! choice {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[doc = $doc:literal])* $variant:ident = $word:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
        pub enum $name {
            $( $(#[doc = $doc])* #[serde(rename = $word)] $variant, )+
        }

        impl $name {
            /// Every word the setting takes.
            pub const WORDS: &[&str] = &[$($word),+];

            /// The word that names this value.
            #[allow(dead_code, reason = "not every choice is printed by name")]
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )+
                }
            }
        }

        impl $crate::config::values::SettingValue for $name {
            const KIND: $crate::config::schema::Kind =
                $crate::config::schema::Kind::Choice(Self::WORDS);
        }
    };
}
pub(crate) use choice;

#[cfg(test)]
mod tests {
    use super::super::de::Text;
    use super::*;

    fn read<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, String> {
        T::deserialize(Text(text)).map_err(|e| e.to_string())
    }

    #[test]
    fn values_parse_from_their_text() {
        assert_eq!(read::<Size>("10MB"), Ok(Size(10 << 20)));
        assert_eq!(read::<Dur>("1.5m"), Ok(Dur(Duration::from_secs(90))));
        assert_eq!(read::<Option<Size>>("off"), Ok(None));
        assert_eq!(
            read::<Option<Dur>>("2s"),
            Ok(Some(Dur(Duration::from_secs(2))))
        );
        assert_eq!(read::<bool>("on"), Ok(true));
        assert_eq!(read::<u64>(" 12 "), Ok(12));
        assert_eq!(read::<RingSize>("128"), Ok(RingSize(128)));
        assert_eq!(
            read::<DeleteModeValue>("keep"),
            Ok(DeleteModeValue(DeleteMode::Keep))
        );
        assert_eq!(
            read::<QuorumValue>("quorum"),
            Ok(QuorumValue(Quorum::Quorum))
        );
    }

    #[test]
    fn refusals_say_what_would_fit() {
        let refused = |r: Result<(), String>, words: &[&str]| {
            let err = r.unwrap_err();
            assert!(words.iter().all(|w| err.contains(w)), "{err}");
        };
        refused(read::<Size>("2XB").map(drop), &["is not a size like"]);
        refused(read::<bool>("yes").map(drop), &["not on or off"]);
        refused(read::<u64>("-1").map(drop), &["not a whole number"]);
        refused(read::<Addr>("localhost").map(drop), &["not an address"]);
        refused(read::<QuorumValue>("most").map(drop), &["most"]);
        refused(read::<RingSize>("63").map(drop), &["power of two"]);
        refused(read::<Hour>("24").map(drop), &["hour from 0 to 23"]);
        refused(read::<NVal>("0").map(drop), &["at least 1"]);
        refused(read::<NodeNameValue>("eddy").map(drop), &["name@host"]);
        refused(
            read::<DeleteModeValue>("later").map(drop),
            &["keep, immediate or a duration"],
        );
    }

    choice! {
        /// A test choice.
        pub enum Colour {
            Red = "red",
            DarkBlue = "dark_blue",
        }
    }

    #[test]
    fn a_choice_takes_its_words_and_names_them_all_when_refusing() {
        assert_eq!(read::<Colour>("dark_blue"), Ok(Colour::DarkBlue));
        assert_eq!(Colour::Red.name(), "red");
        assert_eq!(Colour::WORDS, ["red", "dark_blue"]);
        let err = read::<Colour>("green").unwrap_err();
        assert_eq!(err, "\"green\" is not one of red, dark_blue");
    }
}
