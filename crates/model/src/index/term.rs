//! Index fields and terms: how a client names them, how an object keeps
//! them, and how a backend stores them.
//!
//! A field is `*_bin` (binary terms) or `*_int` (integer terms), its name
//! lowercased as Riak normalises it; `$bucket` and `$key` are query-only
//! pseudo-fields. An object keeps `_int` terms as canonical decimal text
//! (what a GET returns); a backend stores them as [`int_bytes`]: eight
//! bytes whose byte order is numeric order, so range scans and their
//! sort order are right for negative numbers and for 9 < 10.
//!
//! Invariant: for every `i64` pair `a < b`, `int_bytes(a) < int_bytes(b)`
//! bytewise, and [`display_term`] inverts [`storage_term`].

/// What kind of terms a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    Bin,
    Int,
}

/// Why an index entry was refused, worded as Riak words it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TermError {
    #[error("Unknown field type for field: '{0}'.")]
    UnknownField(String),
    #[error("Could not parse field '{field}', value '{term}'.")]
    Unparsable { field: String, term: String },
}

/// The kind of a stored field name (already lowercased), if it has one.
pub fn kind_of(field: &[u8]) -> Option<FieldKind> {
    if field.ends_with(b"_bin") {
        Some(FieldKind::Bin)
    } else if field.ends_with(b"_int") {
        Some(FieldKind::Int)
    } else {
        None
    }
}

/// A client's index entry as an object keeps it: the field lowercased,
/// an `_int` term as canonical decimal (`" 042"` → `"42"`).
pub fn canonical_entry(field: &[u8], term: &[u8]) -> Result<(Vec<u8>, Vec<u8>), TermError> {
    let field = field.to_ascii_lowercase();
    match kind_of(&field) {
        Some(FieldKind::Bin) => Ok((field, term.to_vec())),
        Some(FieldKind::Int) => {
            let n = parse_int(&field, term)?;
            Ok((field, n.to_string().into_bytes()))
        }
        None => Err(TermError::UnknownField(lossy(&field))),
    }
}

/// An `_int` term as a client sends it (decimal, surrounding spaces
/// allowed), as a number.
pub fn parse_int(field: &[u8], term: &[u8]) -> Result<i64, TermError> {
    std::str::from_utf8(term)
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok())
        .ok_or_else(|| TermError::Unparsable {
            field: lossy(field),
            term: lossy(term),
        })
}

/// Eight bytes ordered as the numbers are: big-endian with the sign bit
/// flipped.
pub fn int_bytes(n: i64) -> [u8; 8] {
    ((n as u64) ^ (1 << 63)).to_be_bytes()
}

/// The number [`int_bytes`] encoded, if `b` is eight bytes.
pub fn int_from_bytes(b: &[u8]) -> Option<i64> {
    let raw: [u8; 8] = b.try_into().ok()?;
    Some((u64::from_be_bytes(raw) ^ (1 << 63)) as i64)
}

/// The term a backend stores for an object's `(field, term)`: `_int`
/// terms as [`int_bytes`], others as they are. A term an object holds
/// is canonical; one that does not parse (written before terms were
/// checked) is stored as it is.
pub fn storage_term(field: &[u8], term: &[u8]) -> Vec<u8> {
    match kind_of(field) {
        Some(FieldKind::Int) => match parse_int(field, term) {
            Ok(n) => int_bytes(n).to_vec(),
            Err(_) => term.to_vec(),
        },
        _ => term.to_vec(),
    }
}

/// A stored term as a client reads it: `_int` terms back as decimal.
pub fn display_term(field: &[u8], stored: &[u8]) -> Vec<u8> {
    match (kind_of(field), int_from_bytes(stored)) {
        (Some(FieldKind::Int), Some(n)) => n.to_string().into_bytes(),
        _ => stored.to_vec(),
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn int_bytes_order_is_numeric_order(a in any::<i64>(), b in any::<i64>()) {
            prop_assert_eq!(a.cmp(&b), int_bytes(a).cmp(&int_bytes(b)));
            prop_assert_eq!(int_from_bytes(&int_bytes(a)), Some(a));
        }

        #[test]
        fn display_inverts_storage(n in any::<i64>(), bin in prop::collection::vec(any::<u8>(), 0..12)) {
            let text = n.to_string().into_bytes();
            prop_assert_eq!(display_term(b"n_int", &storage_term(b"n_int", &text)), text);
            prop_assert_eq!(display_term(b"f_bin", &storage_term(b"f_bin", &bin)), bin);
        }
    }

    #[test]
    fn entries_are_canonical_or_refused_as_riak_words_it() {
        assert_eq!(
            canonical_entry(b"Age_INT", b" 042").unwrap(),
            (b"age_int".to_vec(), b"42".to_vec())
        );
        assert_eq!(
            canonical_entry(b"f_bin", b" x ").unwrap(),
            (b"f_bin".to_vec(), b" x ".to_vec())
        );
        let e = canonical_entry(b"n_int", b"4.5").unwrap_err();
        assert_eq!(e.to_string(), "Could not parse field 'n_int', value '4.5'.");
        let e = canonical_entry(b"color", b"red").unwrap_err();
        assert_eq!(e.to_string(), "Unknown field type for field: 'color'.");
        // 2^63 does not fit: refused, not wrapped.
        assert!(canonical_entry(b"n_int", b"9223372036854775808").is_err());
    }

    #[test]
    fn nine_sorts_before_ten() {
        assert!(storage_term(b"n_int", b"9") < storage_term(b"n_int", b"10"));
        assert!(storage_term(b"n_int", b"-10") < storage_term(b"n_int", b"-9"));
    }
}
