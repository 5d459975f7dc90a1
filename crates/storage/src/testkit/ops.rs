//! Random operation sequences for the conformance suite.
//!
//! Buckets, keys, fields and terms come from small pools with awkward bytes
//! (empty, NUL, 0xFF, prefixes of each other) so that collisions, ordering
//! and escaping bugs show up quickly.

use proptest::prelude::*;

use crate::{BatchOp, FoldOptions, IndexQuery, IndexSpec};

pub const BUCKETS: &[&[u8]] = &[b"a", b"a\x00", b"a\x00b", b"ab", b"b", b"\xff"];
pub const KEYS: &[&[u8]] = &[
    b"",
    b"\x00",
    b"\x00\x01",
    b"k",
    b"k\x00",
    b"k1",
    b"k2",
    b"\xff",
];
pub const FIELDS: &[&[u8]] = &[b"f_bin", b"f_bin\x00", b"g_int"];
pub const TERMS: &[&[u8]] = &[b"", b"\x00", b"1", b"10", b"2", b"2\x00", b"\xff"];

/// One step of a conformance run.
#[derive(Clone, Debug)]
pub enum Op {
    Write(Vec<BatchOp>, bool),
    Get(usize, usize),
    FoldKeys(FoldOptions),
    FoldObjects(FoldOptions),
    Index(IndexQuery, Option<usize>),
    DropBucket(usize),
    IsEmpty,
    Sync,
    Reopen,
    Advance(u64),
}

fn pick(pool: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
    (0..pool.len()).prop_map(move |i| pool[i].to_vec())
}

fn spec() -> impl Strategy<Value = IndexSpec> {
    (any::<bool>(), pick(FIELDS), pick(TERMS)).prop_map(|(add, field, term)| match add {
        true => IndexSpec::Add { field, term },
        false => IndexSpec::Remove { field, term },
    })
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..64),
        1 => (0usize..20_000, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
    ]
}

fn batch_op() -> impl Strategy<Value = BatchOp> {
    let put = (
        pick(BUCKETS),
        pick(KEYS),
        value(),
        proptest::collection::vec(spec(), 0..4),
        proptest::option::weighted(0.2, 1u64..40),
    )
        .prop_map(|(bucket, key, value, indexes, ttl)| BatchOp::Put {
            bucket,
            key,
            value,
            indexes,
            // Relative here; the runner turns it into a Unix time.
            expires_at_secs: ttl,
        });
    let delete =
        (pick(BUCKETS), pick(KEYS)).prop_map(|(bucket, key)| BatchOp::Delete { bucket, key });
    prop_oneof![4 => put, 1 => delete]
}

fn fold_options() -> impl Strategy<Value = FoldOptions> {
    let ranged = (pick(BUCKETS), pick(KEYS), pick(KEYS)).prop_map(|(b, s, e)| FoldOptions {
        bucket: Some(b),
        key_start: Some(s),
        key_end: Some(e),
    });
    prop_oneof![
        Just(FoldOptions::all()),
        pick(BUCKETS).prop_map(|b| FoldOptions::bucket(&b)),
        ranged,
    ]
}

fn index_query() -> impl Strategy<Value = (IndexQuery, Option<usize>)> {
    let after = proptest::option::of((pick(TERMS), pick(KEYS)));
    (
        pick(BUCKETS),
        pick(FIELDS),
        pick(TERMS),
        pick(TERMS),
        after,
        proptest::option::of(1usize..4),
    )
        .prop_map(|(bucket, field, start, end, start_after, limit)| {
            let query = IndexQuery {
                bucket,
                field,
                start,
                end,
                start_after,
            };
            (query, limit)
        })
}

/// A strategy for one step.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (proptest::collection::vec(batch_op(), 1..4), any::<bool>())
            .prop_map(|(ops, sync)| Op::Write(ops, sync)),
        5 => (0..BUCKETS.len(), 0..KEYS.len()).prop_map(|(b, k)| Op::Get(b, k)),
        2 => fold_options().prop_map(Op::FoldKeys),
        2 => fold_options().prop_map(Op::FoldObjects),
        4 => index_query().prop_map(|(q, l)| Op::Index(q, l)),
        1 => (0..BUCKETS.len()).prop_map(Op::DropBucket),
        1 => Just(Op::IsEmpty),
        1 => Just(Op::Sync),
        1 => Just(Op::Reopen),
        1 => (1u64..30).prop_map(Op::Advance),
    ]
}
