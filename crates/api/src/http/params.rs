//! Query parameters: decoding the query string and turning Riak's
//! parameters (`r`, `pr`, `w`, `dw`, `pw`, `rw`, `basic_quorum`,
//! `notfound_ok`, `returnbody`, `timeout`, `vtag`, `deletedvclock`) into the
//! request model's options, with Riak's messages for bad values.

use eddy_model::{DeleteOptions, GetOptions, PutOptions, Quorum};

use super::error::ApiError;

/// A decoded query string; the first occurrence of a name wins, as in
/// webmachine.
#[derive(Clone, Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Decodes `a=b&c=d` (form encoding: `+` is a space).
    pub fn parse(raw: Option<&str>) -> Result<Query, ApiError> {
        let mut pairs = Vec::new();
        for part in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            pairs.push((form_decode(name)?, form_decode(value)?));
        }
        Ok(Query { pairs })
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// True when `name` is `true` (Riak's test for `returnbody`).
    pub fn is_true(&self, name: &str) -> bool {
        self.get(name) == Some("true")
    }

    /// A quorum parameter: `one`, `quorum`, `all`, `default` or a number.
    pub fn quorum(&self, name: &str) -> Result<Option<Quorum>, ApiError> {
        let Some(text) = self.get(name) else {
            return Ok(None);
        };
        Quorum::parse(text).map(Some).map_err(|_| {
            ApiError::bad_request(format!(
                "{name} query parameter must be an integer or one of the following words: \
                 'one', 'quorum' or 'all'\n"
            ))
        })
    }

    /// A boolean parameter (`true`, `false`, or `default` for the bucket's).
    pub fn boolean(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.get(name).map(str::to_ascii_lowercase).as_deref() {
            None | Some("default") => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(_) => Err(ApiError::bad_request(format!(
                "{name} query parameter must be true or false\n"
            ))),
        }
    }

    /// The `timeout` parameter in milliseconds.
    pub fn timeout_ms(&self) -> Result<Option<u64>, ApiError> {
        let Some(text) = self.get("timeout") else {
            return Ok(None);
        };
        text.parse::<u64>()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("Bad timeout value {text:?}\n")))
    }

    /// Read options from `r`, `pr`, `basic_quorum`, `notfound_ok`,
    /// `timeout`; tombstone contexts are returned unless
    /// `deletedvclock=false`.
    pub fn get_options(&self) -> Result<GetOptions, ApiError> {
        Ok(GetOptions {
            r: self.quorum("r")?,
            pr: self.quorum("pr")?,
            basic_quorum: self.boolean("basic_quorum")?,
            notfound_ok: self.boolean("notfound_ok")?,
            deleted_vclock: self.boolean("deletedvclock")?.unwrap_or(true),
            timeout_ms: self.timeout_ms()?,
        })
    }

    /// Write options from `w`, `dw`, `pw`, `returnbody`, `timeout`.
    pub fn put_options(&self) -> Result<PutOptions, ApiError> {
        Ok(PutOptions {
            w: self.quorum("w")?,
            dw: self.quorum("dw")?,
            pw: self.quorum("pw")?,
            return_body: self.is_true("returnbody"),
            timeout_ms: self.timeout_ms()?,
            ..PutOptions::default()
        })
    }

    /// Delete options from `rw`, `r`, `w`, `pr`, `pw`, `dw`, `timeout`.
    pub fn delete_options(&self) -> Result<DeleteOptions, ApiError> {
        Ok(DeleteOptions {
            rw: self.quorum("rw")?,
            r: self.quorum("r")?,
            w: self.quorum("w")?,
            pr: self.quorum("pr")?,
            pw: self.quorum("pw")?,
            dw: self.quorum("dw")?,
            timeout_ms: self.timeout_ms()?,
        })
    }

    /// Checks every quorum, boolean and timeout parameter present, so a bad
    /// one is refused even where the operation would not use it.
    pub fn validate_all(&self) -> Result<(), ApiError> {
        for name in ["r", "pr", "w", "dw", "pw", "rw"] {
            self.quorum(name)?;
        }
        for name in ["basic_quorum", "notfound_ok", "deletedvclock"] {
            self.boolean(name)?;
        }
        self.timeout_ms()?;
        Ok(())
    }
}

/// Decodes one form-encoded component to text.
fn form_decode(raw: &str) -> Result<String, ApiError> {
    let bytes = unquote_plus(raw);
    String::from_utf8(bytes).map_err(|_| ApiError::bad_request("query string is not valid UTF-8\n"))
}

/// Decodes `+` to a space and `%XX` escapes, as Riak's URL decoding
/// (`mochiweb_util:unquote`) does for paths and queries alike.
pub fn unquote_plus(raw: &str) -> Vec<u8> {
    let spaced = raw.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_riak_parameters() {
        let q = Query::parse(Some(
            "r=2&pr=one&returnbody=true&timeout=50&vtag=a%2Bb+c&r=3",
        ))
        .unwrap();
        let g = q.get_options().unwrap();
        assert_eq!(g.r, Some(Quorum::Count(2)));
        assert_eq!(g.pr, Some(Quorum::One));
        assert_eq!(g.timeout_ms, Some(50));
        assert!(g.deleted_vclock);
        assert!(q.put_options().unwrap().return_body);
        assert_eq!(q.get("vtag"), Some("a+b c"));
        let bad = Query::parse(Some("w=most"))
            .unwrap()
            .put_options()
            .unwrap_err();
        assert!(
            bad.message
                .starts_with("w query parameter must be an integer")
        );
        let bad = Query::parse(Some("notfound_ok=yes")).unwrap();
        assert!(bad.get_options().is_err());
        assert!(
            Query::parse(Some("timeout=soon"))
                .unwrap()
                .timeout_ms()
                .is_err()
        );
        assert!(Query::parse(Some("x=%FF")).is_err());
    }
}
