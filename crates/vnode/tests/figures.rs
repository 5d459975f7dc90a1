//! The vnodes' figures (design note 025) counted where a vnode does the
//! work: an operation on a data type its coordinating vnode applies, and
//! an incoming object it merges with the copy it holds, per type; an
//! object written where the vnode holds nothing merges nothing.

use std::sync::Arc;

use bytes::Bytes;
use eddy_dt::{DataType, Field, FieldOp, MapOp, MapUpdate, Op, SetOp};
use eddy_metrics::Registry;
use eddy_object::{Actor, Content, VersionVector};
use eddy_ring::Partition;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use eddy_vnode::figures::VnodeFigures;
use eddy_vnode::msg::{
    Coordinate, DtUpdate, PutKind, PutRequest, StorageKey, SyncLevel, VnodeReply, VnodeRequest,
    WritePolicy,
};
use eddy_vnode::reply::{LocalHint, ReplyTo};
use eddy_vnode::{Vnode, VnodeHandle};

const POLICY: WritePolicy = WritePolicy {
    allow_mult: true,
    last_write_wins: false,
    max_siblings: 100,
    write_once: false,
    ttl_secs: 0,
};

/// A vnode over a memory backend counting into `figures`.
fn vnode(figures: &Arc<VnodeFigures>) -> VnodeHandle {
    Vnode::with_incarnation(
        Partition(0),
        eddy_vnode::commitlog::FIRST_INCARNATION,
        Actor(7),
        eddy_vnode::entries::Stores::new(
            Arc::new(MemoryBackend::new(MemoryConfig::default())),
            None,
        ),
        None,
        Arc::default(),
        figures.clone(),
    )
}

fn key(name: &str) -> StorageKey {
    StorageKey {
        bucket: b"b".to_vec(),
        key: name.as_bytes().to_vec(),
    }
}

/// Puts `kind` at `key` on `vnode`; the object the vnode coordinated, if
/// it coordinated one.
fn put(vnode: &Vnode, key: &StorageKey, kind: PutKind) -> Option<Bytes> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let req = PutRequest {
        key: key.clone(),
        kind,
        policy: POLICY,
        sync: SyncLevel::Written,
        props: None,
    };
    vnode.send(
        VnodeRequest::Put(req),
        ReplyTo::Local(tx),
        LocalHint::default(),
    );
    let mut coordinated = None;
    while let Ok(reply) = rx.try_recv() {
        match reply.reply {
            VnodeReply::Coordinated { encoded, .. } => coordinated = Some(encoded),
            VnodeReply::Put(result) => assert!(result.is_ok(), "{result:?}"),
            other => panic!("unexpected reply {other:?}"),
        }
    }
    coordinated
}

/// A client's write, as the coordinating vnode takes it.
fn coordinate(update: Option<DtUpdate>) -> PutKind {
    let mut content = Content::new(b"v".to_vec());
    content.meta.last_modified_us = 1;
    PutKind::Coordinate(Box::new(Coordinate {
        context: VersionVector::new(),
        content,
        conditions: Default::default(),
        update: update.map(Box::new),
    }))
}

/// One operation on a value of `datatype`.
fn update(datatype: DataType) -> DtUpdate {
    let op = match datatype {
        DataType::Counter => Op::Counter(1),
        DataType::Set => Op::Set(SetOp {
            adds: vec![b"a".to_vec()],
            removes: vec![],
        }),
        DataType::Map => Op::Map(MapOp {
            removes: vec![],
            updates: vec![MapUpdate {
                field: Field::new("c", FieldOp::Counter(1).kind()),
                op: FieldOp::Counter(1),
            }],
        }),
        other => panic!("no operation written for {other}"),
    };
    DtUpdate {
        op,
        datatype,
        hll_precision: 14,
        context: None,
    }
}

/// (count, time histogram's count) of each figure of `datatype`:
/// merges, then updates.
fn counts(figures: &VnodeFigures, datatype: DataType) -> [(u64, u64); 2] {
    let f = figures.of(datatype);
    [
        (f.merges.get(), f.merge_time.count()),
        (f.updates.get(), f.update_time.count()),
    ]
}

#[test]
fn a_merge_and_an_update_of_each_type_are_counted_once_under_that_type() {
    let figures = Arc::new(VnodeFigures::register(&Registry::new()));
    let vnode = vnode(&figures);
    let types = [DataType::Counter, DataType::Set, DataType::Map];
    for t in types {
        let k = key(t.name());
        let encoded = put(&vnode, &k, coordinate(Some(update(t)))).unwrap();
        assert_eq!(counts(&figures, t), [(0, 0), (1, 1)], "{t}: the update");
        // The coordinated object sent back, as a replica is sent it: the
        // vnode holds a copy, so it merges the two.
        put(&vnode, &k, PutKind::Replicate { encoded });
        assert_eq!(counts(&figures, t), [(1, 1), (1, 1)], "{t}: the merge");
    }
    let merges = (
        figures.object_merges.get(),
        figures.object_merge_time.count(),
    );
    assert_eq!(merges, (3, 3), "each data type merge is an object merge");
    for t in [DataType::Hll, DataType::GSet] {
        assert_eq!(counts(&figures, t), [(0, 0), (0, 0)], "{t}");
    }
}

#[test]
fn a_plain_object_merge_is_counted_under_no_type_and_a_first_copy_not_at_all() {
    let figures = Arc::new(VnodeFigures::register(&Registry::new()));
    let (coordinator, replica) = (vnode(&figures), vnode(&figures));
    let k = key("plain");
    let encoded = put(&coordinator, &k, coordinate(None)).unwrap();
    put(
        &replica,
        &k,
        PutKind::Replicate {
            encoded: encoded.clone(),
        },
    );
    assert_eq!(figures.object_merges.get(), 0, "nothing held: no merge");
    put(&replica, &k, PutKind::Replicate { encoded });
    let merges = (
        figures.object_merges.get(),
        figures.object_merge_time.count(),
    );
    assert_eq!(merges, (1, 1));
    for t in DataType::ALL {
        assert_eq!(counts(&figures, t), [(0, 0), (0, 0)], "{t}");
    }
}

#[test]
fn figures_registered_in_a_registry_are_rendered_under_eddy_names() {
    let registry = Registry::new();
    let figures = Arc::new(VnodeFigures::register(&registry));
    let vnode = vnode(&figures);
    put(
        &vnode,
        &key("c"),
        coordinate(Some(update(DataType::Counter))),
    );
    let text = registry.render(&[]);
    for line in [
        "eddy_vnode_object_merges_total 0\n",
        "eddy_vnode_datatype_updates_total{datatype=\"counter\"} 1\n",
        "eddy_vnode_datatype_updates_total{datatype=\"set\"} 0\n",
        "eddy_vnode_datatype_merges_total{datatype=\"map\"} 0\n",
        "eddy_vnode_datatype_update_time_seconds_count{datatype=\"counter\"} 1\n",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
}
