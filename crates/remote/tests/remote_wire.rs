//! The vnode message format (docs/formats/vnode-messages.md): fixture
//! bytes written from the format page decode to known values and
//! re-encode byte for byte; any message (batches and batch replies too)
//! round-trips; every truncation and any garbage is an error, never a
//! panic; objects' bytes are slices of the received frame.

use bytes::Bytes;
use std::sync::Arc;

use eddy_model::KvError;
use eddy_model::error::Signal;
use eddy_model::keyfilter::KeyFilter;
use eddy_model::metadata::entries::{PropsEntries, StampedEntry};
use eddy_model::metadata::register::StampKey;
use eddy_object::{Actor, Content, DecodeError, Link, Metadata, VersionVector};
use eddy_remote::wire::{
    self, BatchAnswer, BatchEnvelope, BatchReply, Message, OTHER_ENGINE, RequestEnvelope,
    STORAGE_ENGINE, WireError,
};
use eddy_ring::Partition;
use eddy_storage::{Resource, StorageError};
use eddy_vnode::msg::{
    BatchItem, Conditions, Coordinate, DtDelta, DtUpdate, FoldChunk, FoldKind, FoldRequest,
    IndexMapFold, MapFold, PutAck, PutKind, PutRequest, StorageKey, SyncLevel, VnodeReply,
    VnodeRequest, WritePolicy,
};
use proptest::prelude::*;

fn fixture(name: &str) -> Bytes {
    let path = format!(
        "{}/tests/fixtures/vnode-messages-v1/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(path).unwrap().into()
}

fn vv(entries: &[(u64, u64)]) -> VersionVector {
    VersionVector::from_entries(entries.iter().map(|&(a, c)| (Actor(a), c)))
}

fn key(k: &str) -> StorageKey {
    StorageKey {
        bucket: b"users".to_vec(),
        key: k.as_bytes().to_vec(),
    }
}

/// The object every stored-object fixture carries, as the object codec
/// encodes it.
fn stored() -> Bytes {
    let content = Content {
        value: b"hi".to_vec(),
        meta: Metadata {
            last_modified_us: 5,
            ..Metadata::default()
        },
    };
    let obj = eddy_object::RiakObject {
        vv: vv(&[(11, 3)]),
        siblings: vec![eddy_object::Sibling {
            dot: eddy_object::Dot {
                actor: Actor(11),
                counter: 3,
            },
            content,
        }],
    };
    eddy_object::codec::encode(&obj).into()
}

fn pinned_requests() -> Vec<(&'static str, RequestEnvelope)> {
    let content = Content {
        value: b"hello".to_vec(),
        meta: Metadata {
            content_type: Some(b"text/plain".to_vec()),
            vtag: b"v1".to_vec(),
            last_modified_us: 1_700_000_000_000_000,
            user_meta: vec![(b"m".to_vec(), b"1".to_vec())],
            indexes: vec![(b"age_int".to_vec(), b"42".to_vec())],
            ..Metadata::default()
        },
    };
    let coordinate = VnodeRequest::Put(PutRequest {
        key: key("alice"),
        kind: PutKind::Coordinate(Box::new(Coordinate {
            context: vv(&[(11, 2)]),
            content,
            conditions: Conditions {
                if_none_match: false,
                if_not_modified: Some(vv(&[(11, 2)])),
            },
            update: None,
        })),
        policy: WritePolicy {
            allow_mult: true,
            last_write_wins: false,
            max_siblings: 100,
            write_once: false,
            ttl_secs: 0,
        },
        sync: SyncLevel::Durable,
        props: None,
    });
    let replicate = VnodeRequest::Put(PutRequest {
        key: key("alice"),
        kind: PutKind::Replicate { encoded: stored() },
        policy: WritePolicy {
            allow_mult: false,
            last_write_wins: true,
            max_siblings: 100,
            write_once: false,
            ttl_secs: 0,
        },
        sync: SyncLevel::Written,
        props: None,
    });
    let with_props = |request: &VnodeRequest, props: PropsEntries| match request {
        VnodeRequest::Put(put) => VnodeRequest::Put(PutRequest {
            props: Some(Arc::new(props)),
            ..put.clone()
        }),
        other => other.clone(),
    };
    let coordinate_props = with_props(&coordinate, both_entries());
    let replicate_props = with_props(&replicate, reset_entry());
    let env = |request_id, p, request| RequestEnvelope {
        request_id,
        partition: Partition(p),
        request,
    };
    vec![
        ("coordinate.bin", env(7, 3, coordinate)),
        ("replicate.bin", env(8, 4, replicate)),
        ("coordinate-props.bin", env(12, 3, coordinate_props)),
        ("replicate-props.bin", env(13, 4, replicate_props)),
        ("get.bin", env(9, 5, VnodeRequest::Get { key: key("bob") })),
        (
            "reap.bin",
            env(
                0,
                6,
                VnodeRequest::Reap {
                    key: key("carol"),
                    tombstone: vv(&[(11, 4), (12, 1)]),
                },
            ),
        ),
        (
            "fold-filtered-keys.bin",
            env(14, 8, VnodeRequest::Fold(filtered_fold())),
        ),
        (
            "fold-map.bin",
            env(15, 8, VnodeRequest::Fold(map_fold(true))),
        ),
        (
            "fold-map-unfiltered.bin",
            env(16, 3, VnodeRequest::Fold(map_fold(false))),
        ),
        (
            "fold-index-map.bin",
            env(18, 8, VnodeRequest::Fold(index_map_fold())),
        ),
        ("coordinate-dt.bin", env(19, 3, dt_coordinate())),
    ]
}

/// A coordinated data type update: a set add and remove with a context.
fn dt_coordinate() -> VnodeRequest {
    let content = Content {
        value: Vec::new(),
        meta: Metadata {
            vtag: b"v2".to_vec(),
            last_modified_us: 1_700_000_000_000_001,
            ..Metadata::default()
        },
    };
    VnodeRequest::Put(PutRequest {
        key: StorageKey {
            bucket: b"sets".to_vec(),
            key: b"s1".to_vec(),
        },
        kind: PutKind::Coordinate(Box::new(Coordinate {
            context: VersionVector::new(),
            content,
            conditions: Conditions::default(),
            update: Some(Box::new(DtUpdate {
                op: eddy_dt::Op::Set(eddy_dt::SetOp {
                    adds: vec![b"x".to_vec()],
                    removes: vec![b"y".to_vec()],
                }),
                datatype: eddy_dt::DataType::Set,
                hll_precision: 14,
                context: Some(vv(&[(11, 2)])),
            })),
        })),
        policy: WritePolicy {
            allow_mult: true,
            last_write_wins: false,
            max_siblings: 100,
            write_once: false,
            ttl_secs: 0,
        },
        sync: SyncLevel::Durable,
        props: None,
    })
}

fn stamp(time_ms: u64, counter: u32, writer: u64) -> StampKey {
    StampKey {
        time_ms,
        counter,
        writer,
    }
}

fn entry(stamp: StampKey, json: &str) -> StampedEntry {
    StampedEntry {
        stamp,
        json: Bytes::copy_from_slice(json.as_bytes()),
    }
}

/// The entries coordinate-props.bin carries: a type's and a bucket's.
fn both_entries() -> PropsEntries {
    PropsEntries {
        bucket_type: Some(entry(
            stamp(1_700_000_000_000, 2, 0x0102_0304_0506_0708),
            r#"{"patch":{"n_val":2},"status":"active"}"#,
        )),
        bucket: Some(entry(
            stamp(1_700_000_000_500, 0, 9),
            r#"{"allow_mult":false}"#,
        )),
    }
}

/// The entries replicate-props.bin carries: a bucket's reset only.
fn reset_entry() -> PropsEntries {
    PropsEntries {
        bucket_type: None,
        bucket: Some(entry(stamp(1_700_000_000_900, 1, 9), "null")),
    }
}

fn engine(engine: &'static str, text: &str) -> KvError {
    KvError::Storage(StorageError::Engine {
        engine,
        source: text.into(),
    })
}

/// The errors of reply-put-error-NN.bin, by kind NN.
fn pinned_errors() -> Vec<KvError> {
    vec![
        engine(
            OTHER_ENGINE,
            "too many usermeta: 2000 exceeds the limit of 1000",
        ),
        KvError::Storage(StorageError::Exhausted {
            resource: Resource::Disk,
            detail: "disk full".into(),
        }),
        KvError::MatchFound,
        KvError::Modified,
        KvError::TooManySiblings {
            count: 101,
            max: 100,
        },
        KvError::Damaged(5),
        KvError::ShuttingDown,
        KvError::SyncFailed("fdatasync: EIO".into()),
        KvError::Corrupt(DecodeError::UnknownVersion(9)),
        engine(STORAGE_ENGINE, "I/O error on /data/p/1.data: EIO"),
        KvError::Storage(StorageError::Poisoned("fsync failed".into())),
        KvError::Unreachable("dev2@127.0.0.1 (overloaded)".into()),
        KvError::Timeout,
        KvError::TooLarge {
            what: "value",
            size: 300,
            max: 200,
        },
        KvError::Signal(Signal::NotHosted(7)),
        KvError::VnodeStart("open partitions/7: EMFILE".into()),
        KvError::Storage(StorageError::Closed),
        KvError::Signal(Signal::PropsNewer(Box::new(PropsEntries {
            bucket_type: Some(entry(
                stamp(1_700_000_001_000, 0, 7),
                r#"{"patch":{"write_once":true},"status":"active"}"#,
            )),
            bucket: None,
        }))),
    ]
}

fn pinned_replies() -> Vec<(String, u64, u32, VnodeReply)> {
    let mut out = vec![
        (
            "reply-coordinated.bin".to_string(),
            7,
            3,
            VnodeReply::Coordinated {
                encoded: stored(),
                siblings: 1,
                delta: None,
            },
        ),
        (
            "reply-put-ok.bin".into(),
            7,
            3,
            VnodeReply::Put(Ok(PutAck { durable: true })),
        ),
        (
            "reply-get-found.bin".into(),
            9,
            5,
            VnodeReply::Get(Ok(Some(stored()))),
        ),
        (
            "reply-get-not-found.bin".into(),
            10,
            5,
            VnodeReply::Get(Ok(None)),
        ),
        (
            "reply-get-error.bin".into(),
            11,
            5,
            VnodeReply::Get(Err(KvError::Damaged(5))),
        ),
    ];
    for (kind, e) in pinned_errors().into_iter().enumerate() {
        let name = format!("reply-put-error-{kind:02}.bin");
        out.push((name, 100 + kind as u64, 4, VnodeReply::Put(Err(e))));
    }
    out
}

/// The pinned filtered key listing: keys of "users" whose first
/// `-`-separated token is "basho", for partitions 3 and 9 of 64.
fn filtered_fold() -> FoldRequest {
    let json = r#"[["tokenize","-",1],["eq","basho"]]"#;
    FoldRequest {
        kind: FoldKind::FilteredKeys {
            bucket: b"users".to_vec(),
            filter: Arc::new(KeyFilter::from_json_text(json).unwrap()),
        },
        ring_size: 64,
        ranges: Some(vec![Partition(3), Partition(9)]),
    }
}

/// The pinned map folds: a map phase's JSON text over "users" (whose
/// first `-`-separated token is "basho", if `filtered`), for partitions
/// 3 and 9 of 64, or for every key.
fn map_fold(filtered: bool) -> FoldRequest {
    let json = r#"[["tokenize","-",1],["eq","basho"]]"#;
    let phase = r#"{"phase":{"map":{"language":"javascript","source":"Riak.mapValuesJson","arg":null}},"timeout_ms":60000}"#;
    FoldRequest {
        kind: FoldKind::Map(MapFold {
            bucket: b"users".to_vec(),
            filter: filtered.then(|| Arc::new(KeyFilter::from_json_text(json).unwrap())),
            phase: phase.as_bytes().to_vec().into(),
        }),
        ring_size: 64,
        ranges: filtered.then(|| vec![Partition(3), Partition(9)]),
    }
}

/// The pinned index map fold: the map phase of fold-map.bin over the
/// objects of `tag_bin` entries from "a" to "m" whose terms match `^b`,
/// for partitions 3 and 9 of 64.
fn index_map_fold() -> FoldRequest {
    use eddy_model::index::{IndexScan, ScanField};
    let FoldKind::Map(map) = map_fold(false).kind else {
        unreachable!()
    };
    FoldRequest {
        kind: FoldKind::IndexMap(IndexMapFold {
            scan: IndexScan {
                bucket: b"users".to_vec(),
                field: ScanField::Term(b"tag_bin".to_vec()),
                start: b"a".to_vec(),
                end: b"m".to_vec(),
                after: None,
                regex: Some("^b".into()),
                max: None,
            },
            phase: map.phase,
        }),
        ring_size: 64,
        ranges: Some(vec![Partition(3), Partition(9)]),
    }
}

/// The batch batch.bin carries: a get, a replicated put with props and
/// one without.
fn pinned_batch() -> BatchEnvelope {
    let replicate = |k: &str, allow_mult, sync, props: Option<PropsEntries>| {
        VnodeRequest::Put(PutRequest {
            key: key(k),
            kind: PutKind::Replicate { encoded: stored() },
            policy: WritePolicy {
                allow_mult,
                last_write_wins: !allow_mult,
                max_siblings: 100,
                write_once: false,
                ttl_secs: 0,
            },
            sync,
            props: props.map(Arc::new),
        })
    };
    let item = |p, request| BatchItem {
        partition: Partition(p),
        request,
    };
    BatchEnvelope {
        request_id: 17,
        items: vec![
            item(5, VnodeRequest::Get { key: key("bob") }),
            item(
                4,
                replicate("alice", false, SyncLevel::Durable, Some(reset_entry())),
            ),
            item(6, replicate("carol", true, SyncLevel::Written, None)),
        ],
    }
}

/// The replies reply-batch.bin carries, to items 0 to 4.
fn pinned_batch_replies() -> Vec<BatchReply> {
    let r = |index, p, reply| BatchReply {
        index,
        partition: Partition(p),
        reply,
    };
    vec![
        r(0, 5, VnodeReply::Get(Ok(Some(stored())))),
        r(2, 6, VnodeReply::Put(Ok(PutAck { durable: true }))),
        r(
            1,
            4,
            VnodeReply::Put(Err(KvError::SyncFailed("fdatasync: EIO".into()))),
        ),
        r(3, 5, VnodeReply::Get(Ok(None))),
        r(4, 7, VnodeReply::Get(Err(KvError::Damaged(7)))),
    ]
}

#[test]
fn pinned_batches_decode_to_their_values_and_encode_to_their_bytes() {
    let bytes = fixture("batch.bin");
    let batch = pinned_batch();
    match wire::decode(&bytes) {
        Ok(Message::Batch(got)) => assert_eq!(got, batch),
        other => panic!("batch.bin: {other:?}"),
    }
    assert_eq!(wire::encode_batch(17, &batch.items).unwrap(), bytes);
    let head = wire::request_head(&bytes).unwrap();
    assert!(head.op.is_some_and(wire::is_batch_op));

    let bytes = fixture("reply-batch.bin");
    let replies = pinned_batch_replies();
    let Ok(Message::BatchReply(got)) = wire::decode(&bytes) else {
        panic!("reply-batch.bin does not decode to a batch reply");
    };
    assert_eq!(got.request_id, 17);
    let BatchAnswer::Replies(got) = got.answer else {
        panic!("{:?}", got.answer);
    };
    assert_eq!(format!("{got:?}"), format!("{replies:?}"));
    assert_eq!(wire::encode_batch_replies(17, &got).unwrap(), bytes);
    assert_eq!(wire::encode_batch_replies(17, &replies).unwrap(), bytes);

    let bytes = fixture("reply-batch-refused.bin");
    let refusal = KvError::Unreachable("dev2@127.0.0.1 (overloaded)".into());
    let Ok(Message::BatchReply(got)) = wire::decode(&bytes) else {
        panic!("reply-batch-refused.bin does not decode to a batch reply");
    };
    assert_eq!(got.request_id, 18);
    assert_eq!(
        format!("{:?}", got.answer),
        format!("{:?}", BatchAnswer::Refused(refusal))
    );
    let refusal = KvError::Unreachable("dev2@127.0.0.1 (overloaded)".into());
    assert_eq!(wire::encode_batch_refusal(18, &refusal).unwrap(), bytes);
}

#[test]
fn a_batch_carries_gets_and_replicated_puts_only_and_a_bounded_count() {
    // Encoding refuses a coordinated put, a fold or a reap.
    let coordinate = fixture("coordinate.bin");
    let Ok(Message::Request(env)) = wire::decode(&coordinate) else {
        panic!()
    };
    let item = BatchItem {
        partition: Partition(1),
        request: env.request,
    };
    let err = wire::encode_batch(1, &[item]).unwrap_err();
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // Decoding too: a batch whose one item is coordinate.bin's request.
    let mut bytes = fixture("batch.bin")[..15].to_vec();
    bytes.extend_from_slice(&[8, 0, 0, 0, 1, 0, 0, 0, 1]);
    bytes.extend_from_slice(&coordinate[15..]);
    let err = wire::decode(&bytes.into()).unwrap_err();
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // A batch reply answering with a coordinated object.
    let coordinated = fixture("reply-coordinated.bin");
    let mut bytes = fixture("reply-batch.bin")[..15].to_vec();
    bytes.extend_from_slice(&[9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3]);
    bytes.extend_from_slice(&coordinated[15..]);
    let err = wire::decode(&bytes.into()).unwrap_err();
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    let reply = BatchReply {
        index: 0,
        partition: Partition(3),
        reply: VnodeReply::Fold(Ok(FoldChunk {
            seq: 0,
            last: true,
            items: vec![],
        })),
    };
    let err = wire::encode_batch_replies(1, &[reply]).unwrap_err();
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // A batch names no vnode in its header.
    let mut bytes = fixture("batch.bin").to_vec();
    bytes[14] = 1;
    let err = wire::decode(&bytes.into()).unwrap_err();
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
    // More items than the limit: refused from the count, both ways.
    let mut bytes = fixture("batch.bin").to_vec();
    let count = (wire::BATCH_ITEMS_MAX as u32 + 1).to_be_bytes();
    bytes[16..20].copy_from_slice(&count);
    let err = wire::decode(&bytes.into()).unwrap_err();
    assert!(
        matches!(err, WireError::TooLong { what: "batch", .. }),
        "{err:?}"
    );
    let get = BatchItem {
        partition: Partition(0),
        request: VnodeRequest::Get { key: key("k") },
    };
    let many = vec![get; wire::BATCH_ITEMS_MAX + 1];
    let err = wire::encode_batch(1, &many).unwrap_err();
    assert!(
        matches!(err, WireError::TooLong { what: "batch", .. }),
        "{err:?}"
    );
    // A count above the items present is a truncation.
    let mut bytes = fixture("batch.bin").to_vec();
    bytes[16..20].copy_from_slice(&4u32.to_be_bytes());
    let err = wire::decode(&bytes.into()).unwrap_err();
    assert_eq!(err, WireError::Truncated);
    // Replies name a request.
    assert_eq!(
        wire::encode_batch_replies(0, &[]).unwrap_err(),
        WireError::ZeroReplyId
    );
}

#[test]
fn a_map_phase_longer_than_its_limit_is_refused() {
    let mut req = map_fold(false);
    let FoldKind::Map(m) = &mut req.kind else {
        unreachable!()
    };
    m.phase = vec![b' '; eddy_vnode::mapphase::MAP_PHASE_BYTES_MAX + 1].into();
    let err = wire::encode_request(1, Partition(0), &VnodeRequest::Fold(req)).unwrap_err();
    assert!(
        matches!(
            err,
            WireError::TooLong {
                what: "map phase",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_key_filter_is_parsed_again_by_the_receiver() {
    let bytes = fixture("fold-filtered-keys.bin");
    let Ok(Message::Request(env)) = wire::decode(&bytes) else {
        panic!("the fixture does not decode");
    };
    let VnodeRequest::Fold(FoldRequest {
        kind: FoldKind::FilteredKeys { filter, .. },
        ..
    }) = env.request
    else {
        panic!("not a filtered fold: {:?}", env.request);
    };
    assert!(filter.matches(b"basho-20101215"));
    assert!(!filter.matches(b"google-20110103"));
    // The same length of JSON naming no filter: refused with the reason.
    let text = br#"[["tokenize","-",1],["eq","basho"]]"#;
    let at = bytes.windows(text.len()).position(|w| w == text).unwrap();
    let mut unknown = bytes.to_vec();
    unknown[at + 3..at + 11].copy_from_slice(b"tokenise");
    let err = wire::decode(&unknown.into()).unwrap_err();
    assert!(
        matches!(&err, WireError::BadKeyFilter(m) if m.contains("unknown key filter \"tokenise\"")),
        "{err:?}"
    );
    let mut not_json = bytes.to_vec();
    not_json[at] = b'{';
    let err = wire::decode(&not_json.into()).unwrap_err();
    assert!(matches!(err, WireError::BadKeyFilter(_)), "{err:?}");
    // The head still names a fold, so the sender is answered.
    let mut head = bytes.to_vec();
    head[at] = b'{';
    let head = wire::request_head(&head.into()).unwrap();
    assert!(head.op.is_some_and(wire::is_fold_op));
}

#[test]
fn pinned_requests_decode_to_their_values_and_encode_to_their_bytes() {
    for (name, env) in pinned_requests() {
        let bytes = fixture(name);
        match wire::decode(&bytes) {
            Ok(Message::Request(got)) => assert_eq!(got, env, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        let encoded = wire::encode_request(env.request_id, env.partition, &env.request).unwrap();
        assert_eq!(encoded, bytes, "{name}");
    }
}

#[test]
fn pinned_replies_decode_to_their_values_and_encode_to_their_bytes() {
    for (name, id, p, reply) in pinned_replies() {
        let bytes = fixture(&name);
        match wire::decode(&bytes) {
            Ok(Message::Reply(got)) => {
                assert_eq!(
                    (got.request_id, got.partition),
                    (id, Partition(p)),
                    "{name}"
                );
                assert_eq!(format!("{:?}", got.reply), format!("{reply:?}"), "{name}");
                let again = wire::encode_reply(id, Partition(p), &got.reply).unwrap();
                assert_eq!(again, bytes, "{name}: decoded re-encodes");
            }
            other => panic!("{name}: {other:?}"),
        }
        let encoded = wire::encode_reply(id, Partition(p), &reply).unwrap();
        assert_eq!(encoded, bytes, "{name}");
    }
}

/// reply-put-error-18.bin: error kind 18, `index_full`, which nodes whose
/// bitcask bounded its in-memory index sent; retired, it still decodes,
/// into a storage error with its figures, which encodes as kind 9.
#[test]
fn the_retired_index_full_kind_decodes_into_a_storage_error() {
    let bytes = fixture("reply-put-error-18.bin");
    let Ok(Message::Reply(got)) = wire::decode(&bytes) else {
        panic!("reply-put-error-18.bin does not decode");
    };
    let want = engine(
        STORAGE_ENGINE,
        "index memory limit reached: the term index would hold 16777500 bytes, over its \
         limit of 16777216",
    );
    let VnodeReply::Put(Err(e)) = &got.reply else {
        panic!("{:?}", got.reply);
    };
    assert_eq!(format!("{e:?}"), format!("{want:?}"));
    let again = wire::encode_reply(got.request_id, got.partition, &got.reply).unwrap();
    let storage = wire::encode_reply(got.request_id, got.partition, &VnodeReply::Put(Err(want)));
    assert_eq!(again, storage.unwrap());
    assert_ne!(again, bytes);
}

#[test]
fn errors_a_vnode_never_sends_travel_as_text_and_storage_errors_keep_their_kind() {
    let cases = [
        (
            KvError::Storage(StorageError::Io {
                path: "/d/1.data".into(),
                source: std::io::Error::other("EIO"),
            }),
            engine(STORAGE_ENGINE, "I/O error on /d/1.data: EIO"),
        ),
        (
            KvError::Empty("key"),
            engine(OTHER_ENGINE, "key must not be empty"),
        ),
        (
            KvError::Storage(StorageError::TooLarge {
                what: "key",
                size: 9,
                max: 8,
            }),
            KvError::TooLarge {
                what: "key",
                size: 9,
                max: 8,
            },
        ),
        (
            KvError::TooLarge {
                what: "encoded lsm key",
                size: 9,
                max: 8,
            },
            engine(
                OTHER_ENGINE,
                "encoded lsm key of 9 bytes exceeds the limit of 8",
            ),
        ),
    ];
    for (sent, expected) in cases {
        let reply = VnodeReply::Put(Err(sent));
        let bytes = wire::encode_reply(1, Partition(0), &reply).unwrap();
        let Ok(Message::Reply(got)) = wire::decode(&bytes) else {
            panic!("{reply:?} does not decode");
        };
        let expected = VnodeReply::Put(Err(expected));
        assert_eq!(format!("{:?}", got.reply), format!("{expected:?}"));
    }
}

#[test]
fn long_error_texts_are_cut_at_a_character_boundary() {
    let text = "é".repeat(3000);
    let reply = VnodeReply::Get(Err(KvError::SyncFailed(text)));
    let bytes = wire::encode_reply(1, Partition(0), &reply).unwrap();
    let Ok(Message::Reply(got)) = wire::decode(&bytes) else {
        panic!("does not decode")
    };
    match got.reply {
        VnodeReply::Get(Err(KvError::SyncFailed(m))) => {
            assert_eq!(m, "é".repeat(wire::TEXT_BYTES_MAX / 2));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn fields_over_their_limits_are_refused_both_ways() {
    let long_key = StorageKey {
        bucket: b"b".to_vec(),
        key: vec![b'k'; eddy_storage::limits::KEY_BYTES_MAX + 1],
    };
    let err = wire::encode_request(1, Partition(0), &VnodeRequest::Get { key: long_key });
    assert!(
        matches!(err, Err(WireError::TooLong { what: "key", .. })),
        "{err:?}"
    );
    // A get whose bucket claims 65,535 bytes, and a replicate whose blob
    // claims 4 GiB: refused from the length, before any allocation.
    let mut get = fixture("get.bin").to_vec();
    get[16..18].copy_from_slice(&u16::MAX.to_be_bytes());
    let err = wire::decode(&get.into()).unwrap_err();
    assert!(
        matches!(err, WireError::TooLong { what: "bucket", .. }),
        "{err:?}"
    );
    let mut replicate = fixture("replicate.bin").to_vec();
    let at = replicate.len() - stored().len() - 4;
    replicate[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    let err = wire::decode(&replicate.into()).unwrap_err();
    assert!(matches!(err, WireError::TooLong { .. }), "{err:?}");
}

#[test]
fn foreign_and_unknown_headers_are_refused() {
    let get = fixture("get.bin").to_vec();
    let with = |i: usize, v: u8| {
        let mut b = get.clone();
        b[i] = v;
        wire::decode(&b.into()).unwrap_err()
    };
    assert_eq!(with(0, b'G'), WireError::NotVnodeMessage(b'G'));
    assert_eq!(with(1, 2), WireError::UnknownVersion(2));
    assert!(matches!(
        with(2, 9),
        WireError::BadByte { what: "kind", .. }
    ));
    assert!(matches!(
        with(15, 99),
        WireError::BadByte { what: "op", .. }
    ));
    let mut zero = fixture("reply-put-ok.bin").to_vec();
    zero[3..11].copy_from_slice(&[0; 8]);
    assert_eq!(
        wire::decode(&zero.into()).unwrap_err(),
        WireError::ZeroReplyId
    );
    let mut trailing = get.clone();
    trailing.push(0);
    assert_eq!(
        wire::decode(&trailing.into()).unwrap_err(),
        WireError::Trailing(1)
    );
}

#[test]
fn a_client_write_must_be_one_sibling_at_dot_zero() {
    let two = eddy_object::RiakObject {
        vv: VersionVector::new(),
        siblings: vec![],
    };
    let mut bytes = fixture("coordinate.bin").to_vec();
    // Swap the write blob for an object without siblings.
    let write_at = 15 + 1 + 2 + 5 + 2 + 5 + 9 + 1;
    let old_len = u32::from_be_bytes(bytes[write_at..write_at + 4].try_into().unwrap()) as usize;
    let new = eddy_object::codec::encode(&two);
    let mut out = bytes[..write_at].to_vec();
    out.extend_from_slice(&(new.len() as u32).to_be_bytes());
    out.extend_from_slice(&new);
    out.extend_from_slice(&bytes[write_at + 4 + old_len..]);
    bytes = out;
    let err = wire::decode(&bytes.into()).unwrap_err();
    assert!(matches!(err, WireError::Malformed(_)), "{err:?}");
}

#[test]
fn the_head_of_an_undecodable_request_says_what_it_expects() {
    let mut get = fixture("get.bin").to_vec();
    get.truncate(get.len() - 2);
    let bytes: Bytes = get.into();
    assert!(wire::decode(&bytes).is_err());
    let head = wire::request_head(&bytes).unwrap();
    assert_eq!((head.request_id, head.partition), (9, Partition(5)));
    assert!(wire::is_get_op(head.op.unwrap()));
    assert!(wire::request_head(&fixture("reply-put-ok.bin")).is_none());
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn version_vector() -> impl Strategy<Value = VersionVector> {
    proptest::collection::vec((any::<u64>(), 1..u64::MAX), 0..4)
        .prop_map(|e| VersionVector::from_entries(e.into_iter().map(|(a, c)| (Actor(a), c))))
}

fn content() -> impl Strategy<Value = Content> {
    let pairs = || proptest::collection::vec((bytes(6), bytes(6)), 0..3);
    let links = proptest::collection::vec((bytes(6), bytes(6), bytes(6)), 0..2);
    (
        bytes(32),
        proptest::option::of(bytes(8)),
        bytes(8),
        any::<u64>(),
        pairs(),
        links,
        pairs(),
        any::<bool>(),
    )
        .prop_map(
            |(value, ct, vtag, lm, user_meta, links, indexes, deleted)| Content {
                value,
                meta: Metadata {
                    content_type: ct,
                    vtag,
                    last_modified_us: lm,
                    user_meta,
                    links: links
                        .into_iter()
                        .map(|(bucket, key, tag)| Link { bucket, key, tag })
                        .collect(),
                    indexes,
                    deleted,
                    ..Metadata::default()
                },
            },
        )
}

fn storage_key() -> impl Strategy<Value = StorageKey> {
    (bytes(16), bytes(16)).prop_map(|(bucket, key)| StorageKey { bucket, key })
}

fn put_kind() -> impl Strategy<Value = PutKind> {
    let coordinate = (
        version_vector(),
        content(),
        any::<bool>(),
        proptest::option::of(version_vector()),
    )
        .prop_map(|(context, content, if_none_match, if_not_modified)| {
            PutKind::Coordinate(Box::new(Coordinate {
                context,
                content,
                conditions: Conditions {
                    if_none_match,
                    if_not_modified,
                },
                update: None,
            }))
        });
    let replicate = bytes(64).prop_map(|b| PutKind::Replicate { encoded: b.into() });
    let delta = dt_delta().prop_map(|d| PutKind::DtDelta(Box::new(d)));
    // Boxed: the strategies nested in `message` otherwise outgrow a test
    // thread's stack in debug builds.
    prop_oneof![coordinate.boxed(), replicate.boxed(), delta.boxed()]
}

fn dt_delta() -> impl Strategy<Value = DtDelta> {
    (
        prop::collection::vec((1..u64::MAX, 1..u64::MAX), 0..4),
        bytes(64),
        bytes(64),
    )
        .prop_map(|(vv, object, delta)| DtDelta {
            before: VersionVector::from_entries(vv.into_iter().map(|(a, c)| (Actor(a), c))),
            object: object.into(),
            delta: delta.into(),
        })
}

fn stamped_entry() -> impl Strategy<Value = StampedEntry> {
    (any::<u64>(), any::<u32>(), any::<u64>(), bytes(32)).prop_map(|(t, c, w, j)| StampedEntry {
        stamp: stamp(t, c, w),
        json: j.into(),
    })
}

fn props_entries() -> impl Strategy<Value = PropsEntries> {
    (
        proptest::option::of(stamped_entry()),
        proptest::option::of(stamped_entry()),
    )
        .prop_map(|(bucket_type, bucket)| PropsEntries {
            bucket_type,
            bucket,
        })
}

fn sync_level() -> impl Strategy<Value = SyncLevel> {
    prop_oneof![
        Just(SyncLevel::Written),
        Just(SyncLevel::Durable),
        Just(SyncLevel::Disk),
    ]
}

fn request() -> impl Strategy<Value = VnodeRequest> {
    let ttl = prop_oneof![Just(0u64), any::<u64>()];
    let policy = (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<u32>(),
        ttl,
    )
        .prop_map(|(m, l, o, s, ttl_secs)| WritePolicy {
            allow_mult: m,
            last_write_wins: l,
            max_siblings: s as usize,
            write_once: o,
            ttl_secs,
        });
    let put = (
        storage_key(),
        put_kind(),
        policy,
        sync_level(),
        proptest::option::of(props_entries()),
    )
        .prop_map(|(key, kind, policy, sync, props)| {
            VnodeRequest::Put(PutRequest {
                key,
                kind,
                policy,
                sync,
                props: props.map(Arc::new),
            })
        });
    let get = storage_key().prop_map(|key| VnodeRequest::Get { key });
    let reap = (storage_key(), version_vector())
        .prop_map(|(key, tombstone)| VnodeRequest::Reap { key, tombstone });
    let fold_kind = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..32).prop_map(|bucket| FoldKind::Keys { bucket }),
        "[a-z]{0,12}".prop_map(|bucket_type| FoldKind::Buckets { bucket_type }),
        index_scan().prop_map(FoldKind::Index),
        (prop::collection::vec(any::<u8>(), 0..32), key_filter())
            .prop_map(|(bucket, filter)| FoldKind::FilteredKeys { bucket, filter }),
        (
            prop::collection::vec(any::<u8>(), 0..32),
            proptest::option::of(key_filter()),
            prop::collection::vec(any::<u8>(), 0..256),
        )
            .prop_map(|(bucket, filter, phase)| FoldKind::Map(MapFold {
                bucket,
                filter,
                phase: phase.into(),
            })),
        (index_scan(), prop::collection::vec(any::<u8>(), 0..256)).prop_map(|(scan, phase)| {
            FoldKind::IndexMap(IndexMapFold {
                scan,
                phase: phase.into(),
            })
        }),
    ];
    let ranges = proptest::option::of(prop::collection::vec(
        (0..1024u32).prop_map(eddy_ring::Partition),
        0..16,
    ));
    let fold = (fold_kind, any::<u32>(), ranges).prop_map(|(kind, ring_size, ranges)| {
        VnodeRequest::Fold(FoldRequest {
            kind,
            ring_size,
            ranges,
        })
    });
    prop_oneof![put, get, reap, fold]
}

/// An error of wire kind `kind`, its fields drawn from the rest.
fn error_of(kind: u8, text: String, a: u32, b: u32, byte: u8) -> KvError {
    let (a_us, b_us) = (a as usize, b as usize);
    let resources = [Resource::Descriptors, Resource::Disk, Resource::Memory];
    let decode_errors = [
        DecodeError::BadMagic,
        DecodeError::UnknownVersion(byte),
        DecodeError::Truncated,
        DecodeError::BadVarint,
        DecodeError::BadFlag,
        DecodeError::Trailing,
    ];
    match kind {
        0 => engine(OTHER_ENGINE, &text),
        1 => KvError::Storage(StorageError::Exhausted {
            resource: resources[usize::from(byte) % 3],
            detail: text,
        }),
        2 => KvError::MatchFound,
        3 => KvError::Modified,
        4 => KvError::TooManySiblings {
            count: a_us,
            max: b_us,
        },
        5 => KvError::Damaged(a),
        6 => KvError::ShuttingDown,
        7 => KvError::SyncFailed(text),
        8 => KvError::Corrupt(decode_errors[a_us % 6].clone()),
        9 => engine(STORAGE_ENGINE, &text),
        10 => KvError::Storage(StorageError::Poisoned(text)),
        11 => KvError::Unreachable(text),
        12 => KvError::Timeout,
        13 => KvError::Signal(Signal::Behind),
        14 => KvError::Signal(Signal::NotHosted(a)),
        15 => KvError::VnodeStart(text),
        17 => KvError::Signal(Signal::PropsNewer(Box::new(PropsEntries {
            bucket_type: None,
            bucket: Some(entry(stamp(u64::from(a), b, 1), &text)),
        }))),
        _ => KvError::TooLarge {
            what: ["key", "value", "object"][usize::from(byte) % 3],
            size: a_us,
            max: b_us,
        },
    }
}

fn error() -> impl Strategy<Value = KvError> {
    (
        prop_oneof![0..14u8, Just(14u8), Just(15u8), Just(16u8), Just(17u8)],
        "[ -~]{0,40}",
        any::<u32>(),
        any::<u32>(),
        any::<u8>(),
    )
        .prop_map(|(kind, text, a, b, byte)| error_of(kind, text, a, b, byte))
}

fn reply() -> impl Strategy<Value = VnodeReply> {
    prop_oneof![
        (bytes(64), any::<u32>()).prop_map(|(b, s)| VnodeReply::Coordinated {
            encoded: b.into(),
            siblings: s as usize,
            delta: None,
        }),
        (dt_delta(), any::<u32>()).prop_map(|(d, s)| VnodeReply::Coordinated {
            encoded: Bytes::new(),
            siblings: s as usize,
            delta: Some(Box::new(d)),
        }),
        any::<bool>().prop_map(|durable| VnodeReply::Put(Ok(PutAck { durable }))),
        error().prop_map(|e| VnodeReply::Put(Err(e))),
        proptest::option::of(bytes(64)).prop_map(|b| VnodeReply::Get(Ok(b.map(Bytes::from)))),
        error().prop_map(|e| VnodeReply::Get(Err(e))),
        (
            any::<u32>(),
            any::<bool>(),
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..16), 0..8)
        )
            .prop_map(|(seq, last, items)| VnodeReply::Fold(Ok(FoldChunk {
                seq,
                last,
                items
            }))),
        error().prop_map(|e| VnodeReply::Fold(Err(e))),
    ]
}

/// A batch item: a get or a replicated put.
fn batch_item() -> impl Strategy<Value = BatchItem> {
    (any::<u32>(), request())
        .prop_filter("a batch carries gets and replicated puts", |(_, r)| {
            BatchItem::allowed(r)
        })
        .prop_map(|(p, request)| BatchItem {
            partition: Partition(p),
            request,
        })
}

/// A batch item's reply: a get's or a put's.
fn batch_reply() -> impl Strategy<Value = BatchReply> {
    (any::<u32>(), any::<u32>(), reply())
        .prop_filter("a put's or a get's reply", |(_, _, r)| {
            wire::reply_allowed(r)
        })
        .prop_map(|(index, p, reply)| BatchReply {
            index,
            partition: Partition(p),
            reply,
        })
}

/// Every message kind, encoded.
fn message() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        (any::<u64>(), prop::collection::vec(batch_item(), 0..6))
            .prop_map(|(id, items)| wire::encode_batch(id, &items).unwrap()),
        (1..u64::MAX, prop::collection::vec(batch_reply(), 0..6))
            .prop_map(|(id, replies)| wire::encode_batch_replies(id, &replies).unwrap()),
        (1..u64::MAX, error()).prop_map(|(id, e)| wire::encode_batch_refusal(id, &e).unwrap()),
        (any::<u64>(), any::<u32>(), request()).prop_map(|(id, p, r)| wire::encode_request(
            id,
            Partition(p),
            &r
        )
        .unwrap()),
        (1..u64::MAX, any::<u32>(), reply()).prop_map(|(id, p, r)| wire::encode_reply(
            id,
            Partition(p),
            &r
        )
        .unwrap()),
    ]
}

/// The object bytes a decoded message carries.
fn blobs(m: &Message) -> Vec<Bytes> {
    match m {
        Message::Request(env) => match &env.request {
            VnodeRequest::Put(PutRequest {
                kind: PutKind::Replicate { encoded },
                ..
            }) => vec![encoded.clone()],
            _ => vec![],
        },
        Message::Reply(env) => match &env.reply {
            VnodeReply::Coordinated { encoded, .. } | VnodeReply::Get(Ok(Some(encoded))) => {
                vec![encoded.clone()]
            }
            _ => vec![],
        },
        Message::Batch(env) => env
            .items
            .iter()
            .filter_map(|item| match &item.request {
                VnodeRequest::Put(PutRequest {
                    kind: PutKind::Replicate { encoded },
                    ..
                }) => Some(encoded.clone()),
                _ => None,
            })
            .collect(),
        Message::BatchReply(env) => match &env.answer {
            wire::BatchAnswer::Replies(replies) => replies
                .iter()
                .filter_map(|r| match &r.reply {
                    VnodeReply::Get(Ok(Some(encoded))) => Some(encoded.clone()),
                    _ => None,
                })
                .collect(),
            wire::BatchAnswer::Refused(_) => vec![],
        },
    }
}

proptest! {
    #[test]
    fn requests_round_trip(id in any::<u64>(), p in any::<u32>(), req in request()) {
        let bytes = wire::encode_request(id, Partition(p), &req).unwrap();
        match wire::decode(&bytes) {
            Ok(Message::Request(env)) => {
                prop_assert_eq!(env, RequestEnvelope { request_id: id, partition: Partition(p), request: req });
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn replies_round_trip(id in 1..u64::MAX, p in any::<u32>(), reply in reply()) {
        let bytes = wire::encode_reply(id, Partition(p), &reply).unwrap();
        match wire::decode(&bytes) {
            Ok(Message::Reply(env)) => {
                prop_assert_eq!((env.request_id, env.partition), (id, Partition(p)));
                prop_assert_eq!(format!("{:?}", env.reply), format!("{reply:?}"));
                prop_assert_eq!(wire::encode_reply(id, Partition(p), &env.reply).unwrap(), bytes);
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn batches_round_trip(id in any::<u64>(), items in prop::collection::vec(batch_item(), 0..6)) {
        let bytes = wire::encode_batch(id, &items).unwrap();
        match wire::decode(&bytes) {
            Ok(Message::Batch(env)) => {
                prop_assert_eq!(env, BatchEnvelope { request_id: id, items });
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn batch_replies_round_trip(id in 1..u64::MAX, replies in prop::collection::vec(batch_reply(), 0..6)) {
        let bytes = wire::encode_batch_replies(id, &replies).unwrap();
        match wire::decode(&bytes) {
            Ok(Message::BatchReply(env)) => {
                prop_assert_eq!(env.request_id, id);
                let BatchAnswer::Replies(got) = env.answer else {
                    return Err(TestCaseError::fail("not replies"));
                };
                prop_assert_eq!(format!("{got:?}"), format!("{replies:?}"));
                prop_assert_eq!(wire::encode_batch_replies(id, &got).unwrap(), bytes);
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn objects_are_slices_of_the_frame(bytes in message()) {
        let decoded = wire::decode(&bytes).unwrap();
        let frame = bytes.as_ptr_range();
        for blob in blobs(&decoded) {
            let inside = blob.is_empty()
                || (frame.contains(&blob.as_ptr()) && blob.as_ptr_range().end <= frame.end);
            prop_assert!(inside, "an object's bytes were copied out of the frame");
        }
    }

    #[test]
    fn every_truncation_is_an_error(bytes in message()) {
        for cut in 0..bytes.len() {
            prop_assert!(wire::decode(&bytes.slice(..cut)).is_err(), "a prefix of {} bytes decoded", cut);
        }
    }

    #[test]
    fn damaged_messages_are_errors_or_messages_never_panics(
        bytes in message(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1..=255u8), 1..4),
    ) {
        let mut damaged = bytes.to_vec();
        for (at, x) in flips {
            let i = at.index(damaged.len());
            damaged[i] ^= x;
        }
        let _ = wire::decode(&damaged.into());
    }

    #[test]
    fn garbage_never_panics(body in bytes(256), kind in 1..=2u8) {
        let _ = wire::decode(&body.clone().into());
        let mut framed = vec![b'K', 1, kind];
        framed.extend_from_slice(&body);
        let _ = wire::decode(&framed.clone().into());
        let _ = wire::request_head(&framed.into());
    }
}

/// Key filters as a client might send them: one or two steps, maybe
/// nested, spaced or not (the text travels as given).
fn key_filter() -> impl Strategy<Value = Arc<KeyFilter>> {
    let step = prop_oneof![
        "[a-z]{0,6}".prop_map(|s| format!(r#"["starts_with","{s}"]"#)),
        (1..9u32).prop_map(|i| format!(r#"["tokenize","-",{i}],["string_to_int"]"#)),
        (-9..9i32, -9..9i32).prop_map(|(a, b)| format!(r#"["between",{a},{b},false]"#)),
        "[a-z.*]{0,6}".prop_map(|s| format!(r#"["not",[["matches","{s}"]]]"#)),
        Just(r#"["and",[["eq","é"]],[["set_member",1,2.5,"x"]]]"#.to_string()),
    ];
    (prop::collection::vec(step, 0..3), " ?")
        .prop_map(|(steps, space)| format!("[{space}{}]", steps.join(",")))
        .prop_filter_map("a predicate before the end", |json| {
            KeyFilter::from_json_text(&json).ok().map(Arc::new)
        })
}

fn index_scan() -> impl Strategy<Value = eddy_model::index::IndexScan> {
    use eddy_model::index::{IndexScan, ScanField};
    let bytes = || prop::collection::vec(any::<u8>(), 0..16);
    let field = prop_oneof![
        Just(ScanField::Bucket),
        Just(ScanField::Key),
        "[a-z]{1,8}_(bin|int)".prop_map(|f| ScanField::Term(f.into_bytes())),
    ];
    (
        (bytes(), field, bytes(), bytes()),
        proptest::option::of((bytes(), bytes())),
        proptest::option::of("[a-z^$.*]{0,12}"),
        proptest::option::of(any::<u32>()),
    )
        .prop_map(
            |((bucket, field, start, end), after, regex, max)| IndexScan {
                bucket,
                field,
                start,
                end,
                after,
                regex,
                max,
            },
        )
}
