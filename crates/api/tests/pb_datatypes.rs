//! Data types and Riak 1.4's counters over PB, end to end on one node:
//! counters, sets, HLLs and grow-only sets fetched and updated, legacy
//! counters, contexts, server keys, and every refusal answered with an
//! `RpbErrorResp` on a connection that stays usable. (Maps wait for the
//! map type; their codec has unit tests in `src/pb/dt_codec.rs`.)

mod pb_support;

use eddy_wire::codes;
use eddy_wire::proto::{
    self, CounterOp, DtFetchReq, DtFetchResp, DtOp, DtUpdateReq, DtUpdateResp, RpbCounterGetReq,
    RpbCounterGetResp, RpbCounterUpdateReq, RpbCounterUpdateResp,
};
use pb_support::{Client, Server, start};

fn datatype_type(server: &Server, name: &str, datatype: &str) {
    let registry = server.node.registry();
    let props = eddy_model::props::PropsPatch {
        datatype: Some(Some(datatype.into())),
        ..Default::default()
    };
    registry.create_type(name, &props).expect("create type");
    registry.activate_type(name).expect("activate type");
}

async fn setup() -> Server {
    let server = start().await;
    for (name, dt) in [
        ("counters", "counter"),
        ("sets", "set"),
        ("hlls", "hll"),
        ("gsets", "gset"),
    ] {
        datatype_type(&server, name, dt);
    }
    pb_support::typed(&server, "plain");
    server
}

fn fetch_req(bucket_type: &str, key: &str) -> DtFetchReq {
    DtFetchReq {
        bucket: b"b".to_vec(),
        key: key.as_bytes().to_vec(),
        r#type: bucket_type.as_bytes().to_vec(),
        ..DtFetchReq::default()
    }
}

fn update_req(bucket_type: &str, key: Option<&str>, op: DtOp) -> DtUpdateReq {
    DtUpdateReq {
        bucket: b"b".to_vec(),
        key: key.map(|k| k.as_bytes().to_vec()),
        r#type: bucket_type.as_bytes().to_vec(),
        op,
        ..DtUpdateReq::default()
    }
}

fn counter(n: Option<i64>) -> DtOp {
    DtOp {
        counter_op: Some(CounterOp { increment: n }),
        ..DtOp::default()
    }
}

fn set_op(adds: &[&str], removes: &[&str]) -> DtOp {
    let bytes = |v: &[&str]| v.iter().map(|s| s.as_bytes().to_vec()).collect();
    DtOp {
        set_op: Some(proto::SetOp {
            adds: bytes(adds),
            removes: bytes(removes),
        }),
        ..DtOp::default()
    }
}

async fn fetch(c: &mut Client, req: &DtFetchReq) -> Result<DtFetchResp, String> {
    c.call(codes::DT_FETCH_REQ, req, codes::DT_FETCH_RESP).await
}

async fn update(c: &mut Client, req: &DtUpdateReq) -> Result<DtUpdateResp, String> {
    c.call(codes::DT_UPDATE_REQ, req, codes::DT_UPDATE_RESP)
        .await
}

#[tokio::test]
async fn counters_count_and_answer_with_return_body() {
    let server = setup().await;
    let mut c = Client::connect(&server).await;
    let missing = fetch(&mut c, &fetch_req("counters", "k")).await.unwrap();
    assert_eq!(
        (missing.r#type, missing.value, missing.context),
        (1, None, None)
    );
    let resp = update(&mut c, &update_req("counters", Some("k"), counter(Some(5))))
        .await
        .unwrap();
    assert_eq!(resp, DtUpdateResp::default());
    let mut req = update_req("counters", Some("k"), counter(None));
    req.return_body = Some(true);
    let resp = update(&mut c, &req).await.unwrap();
    assert_eq!(
        (resp.counter_value, resp.key, resp.context),
        (Some(6), None, None)
    );
    let got = fetch(&mut c, &fetch_req("counters", "k")).await.unwrap();
    assert_eq!(got.value.unwrap().counter_value, Some(6));
    assert_eq!(got.context, None);
}

#[tokio::test]
async fn sets_add_remove_with_context_and_make_keys() {
    let server = setup().await;
    let mut c = Client::connect(&server).await;
    let made = update(&mut c, &update_req("sets", None, set_op(&["a", "b"], &[])))
        .await
        .unwrap();
    let key = String::from_utf8(made.key.expect("a server key")).unwrap();
    let got = fetch(&mut c, &fetch_req("sets", &key)).await.unwrap();
    assert_eq!(got.r#type, 2);
    assert_eq!(got.value.unwrap().set_value, [b"a".to_vec(), b"b".to_vec()]);
    let context = got.context.expect("a set has a context");
    let mut req = update_req("sets", Some(&key), set_op(&["c"], &["a"]));
    req.context = Some(context.clone());
    req.return_body = Some(true);
    let resp = update(&mut c, &req).await.unwrap();
    assert_eq!(resp.set_value, [b"b".to_vec(), b"c".to_vec()]);
    assert!(resp.context.is_some());
    req.include_context = Some(false);
    assert_eq!(update(&mut c, &req).await.unwrap().context, None);
    let mut no_ctx = fetch_req("sets", &key);
    no_ctx.include_context = Some(false);
    assert_eq!(fetch(&mut c, &no_ctx).await.unwrap().context, None);

    // Without a context, removing an absent member is a precondition error.
    let err = update(
        &mut c,
        &update_req("sets", Some(&key), set_op(&[], &["zz"])),
    )
    .await
    .unwrap_err();
    assert!(err.contains("not_present"), "{err}");
    // A context from another key, or garbage, is refused.
    let mut other = update_req("sets", Some("other"), set_op(&[], &["a"]));
    other.context = Some(context);
    let err = update(&mut c, &other).await.unwrap_err();
    assert!(err.contains("another key"), "{err}");
    other.context = Some(b"garbage".to_vec());
    let err = update(&mut c, &other).await.unwrap_err();
    assert!(err.starts_with("invalid context"), "{err}");
    assert!(c.ping().await);
}

#[tokio::test]
async fn hlls_and_gsets_take_adds() {
    let server = setup().await;
    let mut c = Client::connect(&server).await;
    let adds: Vec<Vec<u8>> = ["a", "b", "c", "d", "e", "a"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let mut req = update_req(
        "hlls",
        Some("h"),
        DtOp {
            hll_op: Some(proto::HllOp { adds: adds.clone() }),
            ..DtOp::default()
        },
    );
    req.return_body = Some(true);
    assert_eq!(update(&mut c, &req).await.unwrap().hll_value, Some(5));
    let got = fetch(&mut c, &fetch_req("hlls", "h")).await.unwrap();
    assert_eq!((got.r#type, got.value.unwrap().hll_value), (4, Some(5)));
    let mut req = update_req(
        "gsets",
        Some("g"),
        DtOp {
            gset_op: Some(proto::GSetOp { adds }),
            ..DtOp::default()
        },
    );
    req.return_body = Some(true);
    assert_eq!(update(&mut c, &req).await.unwrap().gset_value.len(), 5);
    let got = fetch(&mut c, &fetch_req("gsets", "g")).await.unwrap();
    assert_eq!(got.r#type, 5);
}

#[tokio::test]
async fn legacy_counters_need_allow_mult_and_share_the_default_path() {
    let server = setup().await;
    let mut c = Client::connect(&server).await;
    let up = |amount, returnvalue| RpbCounterUpdateReq {
        bucket: b"legacy".to_vec(),
        key: b"k".to_vec(),
        amount,
        returnvalue,
        ..RpbCounterUpdateReq::default()
    };
    let get = RpbCounterGetReq {
        bucket: b"legacy".to_vec(),
        key: b"k".to_vec(),
        ..RpbCounterGetReq::default()
    };
    let err = c
        .call::<RpbCounterUpdateResp>(
            codes::COUNTER_UPDATE_REQ,
            &up(1, None),
            codes::COUNTER_UPDATE_RESP,
        )
        .await
        .unwrap_err();
    assert_eq!(err, "Counters require bucket property 'allow_mult=true'");
    let set = proto::RpbSetBucketReq {
        bucket: b"legacy".to_vec(),
        props: proto::RpbBucketProps {
            allow_mult: Some(true),
            ..proto::RpbBucketProps::default()
        },
        ..proto::RpbSetBucketReq::default()
    };
    c.send(codes::SET_BUCKET_REQ, &set).await;
    assert!(matches!(c.recv().await, Some((codes::SET_BUCKET_RESP, _))));
    let got: RpbCounterGetResp = c
        .call(codes::COUNTER_GET_REQ, &get, codes::COUNTER_GET_RESP)
        .await
        .unwrap();
    assert_eq!(got.value, None);
    let resp: RpbCounterUpdateResp = c
        .call(
            codes::COUNTER_UPDATE_REQ,
            &up(10, None),
            codes::COUNTER_UPDATE_RESP,
        )
        .await
        .unwrap();
    assert_eq!(resp.value, None);
    let resp: RpbCounterUpdateResp = c
        .call(
            codes::COUNTER_UPDATE_REQ,
            &up(-3, Some(true)),
            codes::COUNTER_UPDATE_RESP,
        )
        .await
        .unwrap();
    assert_eq!(resp.value, Some(7));
    // The same value through the data type messages on the default type.
    let mut req = fetch_req("default", "k");
    req.bucket = b"legacy".to_vec();
    let got = fetch(&mut c, &req).await.unwrap();
    assert_eq!(got.value.unwrap().counter_value, Some(7));
    let mut req = update_req("default", Some("k"), set_op(&["a"], &[]));
    req.bucket = b"legacy".to_vec();
    let err = update(&mut c, &req).await.unwrap_err();
    assert_eq!(err, "non-counter operation on default bucket");
}

#[tokio::test]
async fn bad_requests_get_clear_errors() {
    let server = setup().await;
    let mut c = Client::connect(&server).await;
    let err = update(&mut c, &update_req("sets", Some("k"), DtOp::default()))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        "DtOp must carry exactly one operation; it carries none"
    );
    let err = update(&mut c, &update_req("sets", Some("k"), counter(Some(1))))
        .await
        .unwrap_err();
    assert_eq!(err, "Operation type is `counter` but bucket type is `set`.");
    let err = fetch(&mut c, &fetch_req("nope", "k")).await.unwrap_err();
    assert_eq!(err, "Error no bucket type `<<\"nope\">>`");
    let err = fetch(&mut c, &fetch_req("plain", "k")).await.unwrap_err();
    assert_eq!(err, "`undefined` is not a supported type");
    let err = update(&mut c, &update_req("plain", Some("k"), counter(None)))
        .await
        .unwrap_err();
    assert_eq!(err, "Bucket datatype `undefined` is not a supported type");
    update(
        &mut c,
        &update_req("counters", Some("big"), counter(Some(i64::MAX))),
    )
    .await
    .unwrap();
    let err = update(
        &mut c,
        &update_req("counters", Some("big"), counter(Some(1))),
    )
    .await
    .unwrap_err();
    assert!(err.starts_with("counter overflow"), "{err}");
    let err = update(&mut c, &update_req("counters", Some(""), counter(None)))
        .await
        .unwrap_err();
    assert_eq!(err, "Key cannot be zero-length");
    c.send_raw(codes::DT_UPDATE_REQ, b"\xff\xff").await;
    let err = pb_support::expect::<DtUpdateResp>(c.recv().await, codes::DT_UPDATE_RESP);
    assert!(err.unwrap_err().starts_with("Message decoding error"));
    assert!(c.ping().await);
}
