//! Order-preserving encoding of tuples of byte strings into one byte
//! string, for ordered stores (the lsm backend's keys, note 003; the side
//! store's, note 027).
//!
//! A component that is followed by another is *escaped*: every `0x00` byte
//! becomes `0x00 0xFF`, and the component ends with the terminator
//! `0x00 0x00`. The last component of a tuple is appended raw.
//!
//! Invariant: for tuples of the same shape, byte order of the encodings
//! equals lexicographic tuple order, and an escaped component is
//! prefix-free. Why: the terminator `00 00` sorts below any escaped `00 FF`
//! and below every non-zero byte, so a component that is a proper prefix of
//! another encodes lower, exactly like the raw bytes; and since escaped
//! components are prefix-free, comparison never runs across a component
//! boundary. The stores' own proptests check the order of their layouts.

use std::borrow::Cow;
use std::ops::Bound;

const ESCAPE: u8 = 0xFF;
/// What ends an escaped component.
pub const TERMINATOR: [u8; 2] = [0x00, 0x00];

/// Appends `part` escaped and terminated.
pub fn push_escaped(out: &mut Vec<u8>, part: &[u8]) {
    for &byte in part {
        out.push(byte);
        if byte == 0 {
            out.push(ESCAPE);
        }
    }
    out.extend_from_slice(&TERMINATOR);
}

/// The exclusive upper bound of every key that starts with `prefix`, where
/// `prefix` ends in a terminator: the terminator's last byte raised to 1.
/// Nothing that extends `prefix` reaches it, and nothing that sorts after
/// every such key is below it (an escaped byte after `00` is `FF`).
pub fn terminated_upper(prefix: &[u8]) -> Vec<u8> {
    let mut out = prefix.to_vec();
    if let Some(last) = out.last_mut() {
        *last = 1;
    }
    out
}

/// Splits the first escaped component off `encoded`: the unescaped component
/// and the rest. `None` when no terminator is found or an escape is invalid.
pub fn split_escaped(encoded: &[u8]) -> Option<(Cow<'_, [u8]>, &[u8])> {
    let first_zero = encoded.iter().position(|&b| b == 0)?;
    if encoded.get(first_zero + 1) == Some(&0) {
        let (part, rest) = encoded.split_at(first_zero);
        return Some((Cow::Borrowed(part), &rest[2..]));
    }
    split_escaped_slow(encoded)
}

fn split_escaped_slow(encoded: &[u8]) -> Option<(Cow<'_, [u8]>, &[u8])> {
    let mut part = Vec::with_capacity(encoded.len());
    let mut i = 0;
    while i < encoded.len() {
        let byte = encoded[i];
        if byte != 0 {
            part.push(byte);
            i += 1;
            continue;
        }
        match encoded.get(i + 1)? {
            0 => return Some((Cow::Owned(part), &encoded[i + 2..])),
            &ESCAPE => part.push(0),
            _ => return None,
        }
        i += 2;
    }
    None
}

/// A range of encoded keys.
pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// The keys `prefix esc(term) key` with `start <= term <= end`, strictly
/// after the (term, key) `after` when given, where `prefix` ends in a
/// terminator (the side store's 2i entries).
pub fn term_range(
    prefix: &[u8],
    (start, end): (&[u8], &[u8]),
    after: Option<(&[u8], &[u8])>,
) -> KeyRange {
    let with_term = |term: &[u8], key: &[u8]| {
        let mut out = prefix.to_vec();
        push_escaped(&mut out, term);
        out.extend_from_slice(key);
        out
    };
    let from = with_term(start, b"");
    let lower = match after.map(|(t, k)| with_term(t, k)) {
        Some(a) if a >= from => Bound::Excluded(a),
        _ => Bound::Included(from),
    };
    (
        lower,
        Bound::Excluded(terminated_upper(&with_term(end, b""))),
    )
}

/// True when no key can lie in `range` (fjall wants `lower <= upper`).
pub fn is_empty_range((lower, upper): &KeyRange) -> bool {
    use Bound::{Excluded, Included};
    match (lower, upper) {
        (Included(a), Included(b)) => a > b,
        (Included(a) | Excluded(a), Included(b) | Excluded(b)) => a >= b,
        _ => false,
    }
}

/// Components for property tests of tuple layouts: a small alphabet, so
/// that zeros, escapes and shared prefixes are common.
#[cfg(any(test, feature = "testkit"))]
pub fn arbitrary_part() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    proptest::collection::vec(
        prop_oneof![Just(0u8), Just(1), Just(0xFF), any::<u8>()],
        0..6,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use super::arbitrary_part as bytes;

    proptest! {
        #[test]
        fn escaped_parts_round_trip(part in bytes(), rest in bytes()) {
            let mut encoded = Vec::new();
            push_escaped(&mut encoded, &part);
            encoded.extend_from_slice(&rest);
            let (decoded, tail) = split_escaped(&encoded).unwrap();
            prop_assert_eq!(decoded.as_ref(), part.as_slice());
            prop_assert_eq!(tail, rest.as_slice());
        }
    }

    #[test]
    fn bad_escapes_are_rejected() {
        assert!(split_escaped(b"ab").is_none());
        assert!(split_escaped(b"a\x00\x07b\x00\x00").is_none());
        assert!(split_escaped(b"a\x00").is_none());
    }
}
