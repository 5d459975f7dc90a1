//! Pins the wire format to checked-in fixtures: every message code with its
//! message's name (`fixtures/codes.txt`), and every message field and enum
//! value with its number, label and type as the build compiled `proto/`
//! (`fixtures/fields.txt`).
//!
//! A failure here means a change would alter what goes over the wire. A
//! released code or field number must never change; a new message or field
//! is added to the fixture by hand, in the same commit that adds it.

use eddy_wire::codes;

/// The build's listing of `proto/` (see `build.rs`).
const FIELDS: &str = include_str!(concat!(env!("OUT_DIR"), "/fields.txt"));

#[test]
fn message_codes_are_pinned() {
    let listed: String = codes::ALL
        .iter()
        .map(|(code, name)| format!("{code} {name}\n"))
        .collect();
    assert_eq!(listed, include_str!("fixtures/codes.txt"));
}

#[test]
fn field_numbers_are_pinned() {
    let fixture = include_str!("fixtures/fields.txt");
    for (built, pinned) in FIELDS.lines().zip(fixture.lines()) {
        assert_eq!(built, pinned);
    }
    assert_eq!(FIELDS.lines().count(), fixture.lines().count());
}
