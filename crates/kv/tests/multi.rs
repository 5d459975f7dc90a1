//! Multi-key requests on one node over memory backends (design note 016):
//! one result per item in request order, each key as its single-key
//! operation would answer, request-wide checks before any key runs, the
//! answer budget and the request's one deadline.

use std::sync::Arc;

use eddy_kv::*;
use eddy_model::limits::MultiLimits;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use serde_json::json;

fn node_with(config: NodeConfig) -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let patch = eddy_model::props::PropsPatch::from_json(json!({}).as_object().unwrap()).unwrap();
    registry.create_type("maps", &patch).unwrap();
    registry.activate_type("maps").unwrap();
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        (backend, Actor(1000 + u64::from(p.0)))
    })
    .unwrap()
}

fn node() -> Arc<Node> {
    node_with(NodeConfig {
        ring_size: 8,
        object_size_max_bytes: 100,
        ..NodeConfig::default()
    })
}

fn plain() -> BucketRef {
    BucketRef::default_type(b"b".to_vec())
}

fn object(key: &str, value: &[u8]) -> MultiPutObject {
    MultiPutObject {
        key: key.as_bytes().to_vec(),
        context: None,
        content: Content::new(value.to_vec()),
    }
}

fn multi_put(bucket: BucketRef, objects: Vec<MultiPutObject>) -> MultiPutRequest {
    MultiPutRequest {
        bucket,
        objects,
        options: PutOptions::default(),
    }
}

fn multi_get(bucket: BucketRef, keys: &[&str]) -> MultiGetRequest {
    MultiGetRequest {
        bucket,
        keys: keys.iter().map(|k| k.as_bytes().to_vec()).collect(),
        options: GetOptions::default(),
    }
}

fn values(result: &Result<GetResponse, KvError>) -> Vec<Vec<u8>> {
    match result {
        Ok(GetResponse::Found(o)) => o.contents().map(|c| c.value.clone()).collect(),
        _ => vec![],
    }
}

#[tokio::test]
async fn results_come_in_request_order_with_per_key_errors() {
    let node = node();
    let objects = vec![
        object("a", b"1"),
        object("", b"empty key"),
        object("b", b"2"),
        object("big", &[7; 101]),
        object("c", b"3"),
    ];
    let written = node.multi_put(multi_put(plain(), objects)).await.unwrap();
    assert!(written[0].is_ok() && written[2].is_ok() && written[4].is_ok());
    assert!(matches!(written[1], Err(KvError::Empty("key"))));
    assert!(matches!(
        written[3],
        Err(KvError::TooLarge { what: "object", .. })
    ));
    assert_eq!(written[0].as_ref().unwrap().key, b"a");
    let long = "k".repeat(eddy_storage::limits::KEY_BYTES_MAX + 1);
    let keys = ["c", "missing", "a", &long, "big", "b"];
    let got = node.multi_get(multi_get(plain(), &keys)).await.unwrap();
    assert_eq!(got.len(), 6);
    assert_eq!(values(&got[0]), vec![b"3".to_vec()]);
    assert!(matches!(got[1], Ok(GetResponse::NotFound { .. })));
    assert_eq!(values(&got[2]), vec![b"1".to_vec()]);
    assert!(matches!(got[3], Err(KvError::TooLarge { what: "key", .. })));
    assert!(matches!(got[4], Ok(GetResponse::NotFound { .. })));
    assert_eq!(values(&got[5]), vec![b"2".to_vec()]);
}

#[tokio::test]
async fn contexts_siblings_and_conditions_work_per_key() {
    let node = node();
    let typed = BucketRef::typed("maps", b"b".to_vec());
    for value in [b"one", b"two"] {
        let objects = vec![object("s", value), object("t", value)];
        node.multi_put(multi_put(typed.clone(), objects))
            .await
            .unwrap();
    }
    let got = node.multi_get(multi_get(typed.clone(), &["s", "t"]));
    let got = got.await.unwrap();
    let mut siblings = values(&got[0]);
    siblings.sort();
    assert_eq!(siblings, vec![b"one".to_vec(), b"two".to_vec()]);
    let Ok(GetResponse::Found(s)) = &got[0] else {
        panic!("{:?}", got[0])
    };
    // A write with the context it read resolves `s`; `t` stays siblings.
    let resolve = MultiPutObject {
        context: Some(s.vv.clone()),
        ..object("s", b"merged")
    };
    let mut req = multi_put(typed.clone(), vec![resolve, object("t", b"three")]);
    req.options.return_body = true;
    let written = node.multi_put(req).await.unwrap();
    let stored = written[0].as_ref().unwrap().object.as_ref().unwrap();
    assert_eq!(
        stored.siblings.len(),
        1,
        "return_body gives the stored object"
    );
    assert_eq!(
        written[1]
            .as_ref()
            .unwrap()
            .object
            .as_ref()
            .unwrap()
            .siblings
            .len(),
        3
    );
    // if_none_match fails the key that exists, not the new one.
    let mut create = multi_put(typed, vec![object("s", b"x"), object("new", b"y")]);
    create.options.if_none_match = true;
    let created = node.multi_put(create).await.unwrap();
    assert!(matches!(created[0], Err(KvError::MatchFound)));
    assert!(created[1].is_ok());
}

#[tokio::test]
async fn deletes_report_what_they_found() {
    let node = node();
    let objects = vec![object("a", b"1"), object("b", b"2")];
    node.multi_put(multi_put(plain(), objects)).await.unwrap();
    let got = node.multi_get(multi_get(plain(), &["b"])).await.unwrap();
    let Ok(GetResponse::Found(b)) = &got[0] else {
        panic!()
    };
    let key = |k: &str, context| MultiDeleteKey {
        key: k.as_bytes().to_vec(),
        context,
    };
    let req = MultiDeleteRequest {
        bucket: plain(),
        keys: vec![
            key("a", None),
            key("nothing", None),
            key("b", Some(b.vv.clone())),
        ],
        options: DeleteOptions::default(),
    };
    let deleted = node.multi_delete(req).await.unwrap();
    assert!(matches!(deleted[0], Ok(DeleteOutcome::Deleted)));
    assert!(matches!(deleted[1], Ok(DeleteOutcome::NotFound)));
    assert!(matches!(deleted[2], Ok(DeleteOutcome::Deleted)));
    let got = node
        .multi_get(multi_get(plain(), &["a", "b"]))
        .await
        .unwrap();
    for result in got {
        let Ok(GetResponse::NotFound { tombstone_context }) = result else {
            panic!("{result:?}")
        };
        assert!(tombstone_context.is_some(), "the tombstone's context");
    }
}

#[tokio::test]
async fn what_concerns_the_whole_request_fails_it_before_any_key_runs() {
    let node = node_with(NodeConfig {
        ring_size: 8,
        multi: MultiLimits {
            keys_max: 3,
            ..MultiLimits::default()
        },
        ..NodeConfig::default()
    });
    let four = ["a", "b", "c", "d"];
    let e = node.multi_get(multi_get(plain(), &four)).await.unwrap_err();
    assert!(
        matches!(
            e,
            KvError::TooMany {
                what: "keys",
                count: 4,
                max: 3
            }
        ),
        "{e}"
    );
    let objects = four.iter().map(|k| object(k, b"v")).collect();
    let e = node
        .multi_put(multi_put(plain(), objects))
        .await
        .unwrap_err();
    assert!(matches!(e, KvError::TooMany { .. }), "{e}");
    let none = node.multi_get(multi_get(plain(), &["a"])).await.unwrap();
    assert!(
        matches!(none[0], Ok(GetResponse::NotFound { .. })),
        "nothing was written"
    );
    let unknown = BucketRef::typed("nope", b"b".to_vec());
    let e = node
        .multi_get(multi_get(unknown, &["a"]))
        .await
        .unwrap_err();
    assert!(matches!(e, KvError::Registry(_)), "{e}");
    let e = node
        .multi_get(multi_get(BucketRef::default_type(Vec::new()), &["a"]))
        .await
        .unwrap_err();
    assert!(matches!(e, KvError::Empty("bucket")), "{e}");
    let mut r4 = multi_get(plain(), &["a"]);
    r4.options.r = Some(Quorum::Count(4));
    let e = node.multi_get(r4).await.unwrap_err();
    assert!(matches!(e, KvError::Quorum(_)), "{e}");
    let mut w4 = multi_put(plain(), vec![object("a", b"v")]);
    w4.options.pw = Some(Quorum::Count(4));
    assert!(matches!(node.multi_put(w4).await, Err(KvError::Quorum(_))));
    let none = node.multi_get(multi_get(plain(), &["a"])).await.unwrap();
    assert!(matches!(none[0], Ok(GetResponse::NotFound { .. })));
    let empty = node.multi_get(multi_get(plain(), &[])).await.unwrap();
    assert!(empty.is_empty());
}

#[tokio::test]
async fn a_full_answer_sheds_objects_and_stops_reading() {
    // One key at a time, so which keys fit is known: 10-byte values in a
    // 25-byte budget.
    let node = node_with(NodeConfig {
        ring_size: 8,
        multi: MultiLimits {
            concurrency: 1,
            answer_bytes_max: 25,
            ..MultiLimits::default()
        },
        ..NodeConfig::default()
    });
    let keys = ["a", "b", "gone", "c", "d"];
    let objects = keys.iter().map(|k| object(k, &[1; 10])).collect();
    let mut put = multi_put(plain(), objects);
    put.options.return_body = true;
    let written = node.multi_put(put).await.unwrap();
    let bodies: Vec<bool> = written
        .iter()
        .map(|r| r.as_ref().unwrap().object.is_some())
        .collect();
    assert_eq!(
        bodies,
        [true, true, false, false, false],
        "writes all happen"
    );
    let req = MultiDeleteRequest {
        bucket: plain(),
        keys: vec![MultiDeleteKey {
            key: b"gone".to_vec(),
            context: None,
        }],
        options: DeleteOptions::default(),
    };
    node.multi_delete(req).await.unwrap();
    let got = node.multi_get(multi_get(plain(), &keys)).await.unwrap();
    assert_eq!(values(&got[0]), vec![vec![1; 10]]);
    assert_eq!(values(&got[1]), vec![vec![1; 10]]);
    assert!(
        matches!(got[2], Ok(GetResponse::NotFound { .. })),
        "costs nothing"
    );
    assert!(matches!(got[3], Err(KvError::AnswerTooLarge { max: 25 })));
    assert!(matches!(got[4], Err(KvError::AnswerTooLarge { max: 25 })));
}

#[tokio::test]
async fn a_spent_deadline_times_out_every_key_not_started() {
    let node = node();
    let mut req = multi_get(plain(), &["a", "b", "c"]);
    req.options.timeout_ms = Some(0);
    let got = node.multi_get(req).await.unwrap();
    assert!(got.iter().all(|r| matches!(r, Err(KvError::Timeout))));
}

#[tokio::test]
async fn many_keys_run_concurrently_and_keep_their_places() {
    let node = node();
    let keys: Vec<String> = (0..1000).map(|k| format!("key{k}")).collect();
    let objects = keys.iter().map(|k| object(k, k.as_bytes())).collect();
    let written = node.multi_put(multi_put(plain(), objects)).await.unwrap();
    assert!(written.iter().all(Result::is_ok));
    let names: Vec<&str> = keys.iter().map(String::as_str).collect();
    let got = node.multi_get(multi_get(plain(), &names)).await.unwrap();
    for (key, result) in keys.iter().zip(&got) {
        assert_eq!(values(result), vec![key.as_bytes().to_vec()]);
    }
}

#[tokio::test]
async fn counters_count_requests_and_keys_and_one_node_sends_no_batch() {
    let node = node();
    let objects = vec![object("a", b"1"), object("b", b"2"), object("", b"x")];
    node.multi_put(multi_put(plain(), objects)).await.unwrap();
    node.multi_get(multi_get(plain(), &["a", "b", "c", "d"]))
        .await
        .unwrap();
    let req = MultiDeleteRequest {
        bucket: plain(),
        keys: vec![MultiDeleteKey {
            key: b"a".to_vec(),
            context: None,
        }],
        options: DeleteOptions::default(),
    };
    node.multi_delete(req).await.unwrap();
    let c = &node.metrics;
    let read = |a: &eddy_metrics::Counter| a.get();
    assert_eq!(
        (
            read(&c.multi_puts),
            read(&c.multi_gets),
            read(&c.multi_deletes)
        ),
        (1, 1, 1)
    );
    assert_eq!(
        (
            read(&c.multi_put_keys),
            read(&c.multi_get_keys),
            read(&c.multi_delete_keys)
        ),
        (3, 4, 1)
    );
    // Each key counts as its single operation: the delete's read and
    // tombstone too.
    assert_eq!(read(&c.puts), 3 + 1);
    assert_eq!(read(&c.gets), 4 + 1);
    assert_eq!(read(&c.deletes), 1);
    assert_eq!(read(&c.vnode_batches), 0, "every vnode is local");
    // Each key that ran has its single operation's FSM time; the key
    // refused for its name too. Two of the gets found an object.
    assert_eq!(c.put_fsm_time.count(), 3 + 1);
    assert_eq!(c.get_fsm_time.count(), 4 + 1);
    assert_eq!(c.get_fsm_siblings.count(), 2 + 1);
    assert_eq!(c.get_fsm_objsize.count(), 2 + 1);
}

#[tokio::test]
async fn a_key_counted_has_its_fsm_time_once_even_when_shed() {
    let node = node_with(NodeConfig {
        ring_size: 8,
        multi: MultiLimits {
            answer_bytes_max: 1,
            concurrency: 1,
            batch_items_max: 1,
            ..MultiLimits::default()
        },
        ..NodeConfig::default()
    });
    let objects = (0..40)
        .map(|i| object(&format!("k{i}"), b"value"))
        .collect();
    node.multi_put(multi_put(plain(), objects)).await.unwrap();
    let keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let got = node.multi_get(multi_get(plain(), &keys)).await.unwrap();
    assert!(got.iter().all(Result::is_err), "no object fits the answer");
    let c = &node.metrics;
    assert_eq!(c.get_fsm_time.count(), c.gets.get());
    assert_eq!(c.put_fsm_time.count(), c.puts.get());
}
