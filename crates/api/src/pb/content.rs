//! `RpbContent` ↔ [`Content`]: a value with its metadata.
//!
//! Incoming `vtag` and `last_mod` are ignored: the node stamps every write.
//! Index fields must end in `_bin` or `_int`, and `_int` terms must be
//! integers (stored in canonical form), as Riak checks them.
//! Outgoing `last_mod` is whole seconds and `last_mod_usecs` the remaining
//! microseconds, as Riak sends them.

use eddy_model::index::term::canonical_entry;
use eddy_object::{Content, Link, Metadata, RiakObject};
use eddy_wire::proto::{RpbContent, RpbLink, RpbPair};

use super::error::PbError;

const MICROS_PER_SECOND: u64 = 1_000_000;

/// The content a put carries.
pub fn from_pb(c: RpbContent) -> Result<Content, PbError> {
    let indexes = c
        .indexes
        .into_iter()
        .map(|p| index_entry(pair(p)))
        .collect::<Result<_, _>>()?;
    let meta = Metadata {
        content_type: c.content_type,
        charset: c.charset,
        content_encoding: c.content_encoding,
        user_meta: c.usermeta.into_iter().map(pair).collect(),
        links: c.links.into_iter().map(link).collect(),
        indexes,
        deleted: c.deleted.unwrap_or(false),
        ..Metadata::default()
    };
    Ok(Content {
        value: c.value,
        meta,
    })
}

/// Checks an index entry: the field lowercased, `_int` terms canonical.
fn index_entry((field, term): (Vec<u8>, Vec<u8>)) -> Result<(Vec<u8>, Vec<u8>), PbError> {
    Ok(canonical_entry(&field, &term)?)
}

fn pair(p: RpbPair) -> (Vec<u8>, Vec<u8>) {
    (p.key, p.value.unwrap_or_default())
}

fn link(l: RpbLink) -> Link {
    Link {
        bucket: l.bucket.unwrap_or_default(),
        key: l.key.unwrap_or_default(),
        tag: l.tag.unwrap_or_default(),
    }
}

/// One sibling as sent; `head` leaves the value out.
pub fn to_pb(c: &Content, head: bool) -> RpbContent {
    let m = &c.meta;
    let us = m.last_modified_us;
    RpbContent {
        value: if head { Vec::new() } else { c.value.clone() },
        content_type: m.content_type.clone(),
        charset: m.charset.clone(),
        content_encoding: m.content_encoding.clone(),
        vtag: (!m.vtag.is_empty()).then(|| m.vtag.clone()),
        links: m.links.iter().map(link_to_pb).collect(),
        last_mod: (us > 0).then_some((us / MICROS_PER_SECOND) as u32),
        last_mod_usecs: (us > 0).then_some((us % MICROS_PER_SECOND) as u32),
        usermeta: m.user_meta.iter().map(pair_to_pb).collect(),
        indexes: m.indexes.iter().map(pair_to_pb).collect(),
        deleted: m.deleted.then_some(true),
    }
}

fn pair_to_pb((key, value): &(Vec<u8>, Vec<u8>)) -> RpbPair {
    RpbPair {
        key: key.clone(),
        value: Some(value.clone()),
    }
}

fn link_to_pb(l: &Link) -> RpbLink {
    RpbLink {
        bucket: Some(l.bucket.clone()),
        key: Some(l.key.clone()),
        tag: Some(l.tag.clone()),
    }
}

/// An object's siblings as sent: tombstone siblings are hidden unless every
/// sibling is one.
pub fn object_to_pb(obj: &RiakObject, head: bool) -> Vec<RpbContent> {
    let live: Vec<RpbContent> = obj
        .contents()
        .filter(|c| !c.meta.deleted)
        .map(|c| to_pb(c, head))
        .collect();
    match live.is_empty() {
        true => obj.contents().map(|c| to_pb(c, head)).collect(),
        false => live,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_roundtrips() {
        let pb = RpbContent {
            value: b"v".to_vec(),
            content_type: Some(b"text/plain".to_vec()),
            charset: Some(b"utf-8".to_vec()),
            content_encoding: Some(b"gzip".to_vec()),
            links: vec![RpbLink {
                bucket: Some(b"b".to_vec()),
                key: Some(b"k".to_vec()),
                tag: Some(b"t".to_vec()),
            }],
            usermeta: vec![RpbPair {
                key: b"m".to_vec(),
                value: Some(b"1".to_vec()),
            }],
            indexes: vec![RpbPair {
                key: b"i_bin".to_vec(),
                value: Some(b"x".to_vec()),
            }],
            ..RpbContent::default()
        };
        let mut c = from_pb(pb.clone()).unwrap();
        c.meta.last_modified_us = 3_000_004;
        let back = to_pb(&c, false);
        assert_eq!((back.last_mod, back.last_mod_usecs), (Some(3), Some(4)));
        assert_eq!(
            RpbContent {
                last_mod: None,
                last_mod_usecs: None,
                ..back
            },
            pb
        );
        assert!(to_pb(&c, true).value.is_empty());
    }

    #[test]
    fn index_entries_are_checked() {
        let with = |field: &str, term: &str| RpbContent {
            indexes: vec![RpbPair {
                key: field.as_bytes().to_vec(),
                value: Some(term.as_bytes().to_vec()),
            }],
            ..RpbContent::default()
        };
        let ok = from_pb(with("n_int", " 042")).unwrap();
        assert_eq!(ok.meta.indexes, vec![(b"n_int".to_vec(), b"42".to_vec())]);
        let e = from_pb(with("n_int", "x")).unwrap_err();
        assert_eq!(e.text(), "Could not parse field 'n_int', value 'x'.");
        let e = from_pb(with("n", "1")).unwrap_err();
        assert_eq!(e.text(), "Unknown field type for field: 'n'.");
    }
}
