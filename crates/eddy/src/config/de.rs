//! A serde deserializer over the settings' effective texts, so that the
//! schema ([`super::schema::Schema`]) is a plain `#[derive(Deserialize)]`
//! struct whose field names are the riak.conf names.
//!
//! Every value is text (from a default, a file or an `EDDY_*` variable):
//! [`Text`] reads it as the field's type asks — a whole number, `on`/`off`,
//! an enum's word, `off` for an absent option — and the wrapper types of
//! [`super::values`] parse their own grammar from the string. An error
//! carries the name of the setting whose value failed, added by the map
//! access that walks the settings.

use std::fmt;

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

/// A value that did not fit its setting.
#[derive(Debug)]
pub struct DeError {
    /// The setting, once known.
    pub setting: Option<String>,
    /// Why, in words that say what would fit.
    pub reason: String,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.setting {
            Some(name) => write!(f, "setting {name}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            setting: None,
            reason: msg.to_string(),
        }
    }

    /// A word that is none of an enum's, said as cuttlefish says it: the
    /// word and every allowed one.
    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Self::custom(format_args!(
            "{variant:?} is not one of {}",
            expected.join(", ")
        ))
    }

    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> Self {
        Self::custom(format_args!("unknown setting {field:?}"))
    }
}

/// The settings as a map of name to text, in the schema's order.
pub struct Settings<'a> {
    entries: std::vec::IntoIter<(&'static str, &'a str)>,
    current: Option<(&'static str, &'a str)>,
}

impl<'a> Settings<'a> {
    /// A deserializer over `entries`: `(setting name, text)`.
    pub fn new(entries: Vec<(&'static str, &'a str)>) -> Self {
        Settings {
            entries: entries.into_iter(),
            current: None,
        }
    }
}

impl<'de> de::Deserializer<'de> for Settings<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_map(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> MapAccess<'de> for Settings<'_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((name, text)) = self.entries.next() else {
            return Ok(None);
        };
        self.current = Some((name, text));
        let key: StrDeserializer<'_, DeError> = name.into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let (name, text) = self
            .current
            .take()
            .ok_or_else(|| de::Error::custom("a value asked for before its name"))?;
        seed.deserialize(Text(text)).map_err(|mut e| {
            e.setting.get_or_insert_with(|| name.to_string());
            e
        })
    }
}

/// One setting's text, read as the type asks.
pub struct Text<'a>(pub &'a str);

impl<'de> de::Deserializer<'de> for Text<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_str(self.0)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_bool(super::values::flag(self.0).map_err(de::Error::custom)?)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_u64(whole_number(self.0)?)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let n = whole_number(self.0)?;
        let n = u32::try_from(n)
            .map_err(|_| de::Error::custom(format_args!("{n} is more than {}", u32::MAX)))?;
        visitor.visit_u32(n)
    }

    /// `off` is none; anything else is the value.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0.trim() {
            "off" => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let word: StrDeserializer<'_, DeError> = self.0.trim().into_deserializer();
        visitor.visit_enum(word)
    }

    forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

fn whole_number(text: &str) -> Result<u64, DeError> {
    text.trim()
        .parse()
        .map_err(|_| de::Error::custom(format_args!("{text:?} is not a whole number")))
}
