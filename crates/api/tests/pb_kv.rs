//! PB object operations against an in-process node: ping, server info,
//! client ids, get/put/delete with metadata, siblings, conditional puts,
//! quorum errors, listing keys and buckets.

mod pb_support;

use eddy_api::version::RIAK_COMPAT_VERSION;
use eddy_wire::proto::*;
use eddy_wire::{codes, quorum};
use pb_support::*;

#[tokio::test]
async fn ping_server_info_and_client_id() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    assert!(c.ping().await);
    let info: RpbGetServerInfoResp = c
        .call_empty(codes::GET_SERVER_INFO_REQ, codes::GET_SERVER_INFO_RESP)
        .await
        .unwrap();
    assert_eq!(
        info.server_version.as_deref(),
        Some(RIAK_COMPAT_VERSION.as_bytes())
    );
    assert_eq!(info.node.as_deref(), Some(&b"eddy@127.0.0.1"[..]));
    let set = RpbSetClientIdReq {
        client_id: b"abcd".to_vec(),
    };
    c.send(codes::SET_CLIENT_ID_REQ, &set).await;
    assert_eq!(c.recv().await, Some((codes::SET_CLIENT_ID_RESP, vec![])));
    let id: RpbGetClientIdResp = c
        .call_empty(codes::GET_CLIENT_ID_REQ, codes::GET_CLIENT_ID_RESP)
        .await
        .unwrap();
    assert_eq!(id.client_id, b"abcd");
}

fn full_content() -> RpbContent {
    let pair = |k: &str, v: &str| RpbPair {
        key: k.as_bytes().to_vec(),
        value: Some(v.as_bytes().to_vec()),
    };
    RpbContent {
        value: b"{\"a\":1}".to_vec(),
        content_type: Some(b"application/json".to_vec()),
        charset: Some(b"utf-8".to_vec()),
        content_encoding: Some(b"identity".to_vec()),
        links: vec![RpbLink {
            bucket: Some(b"other".to_vec()),
            key: Some(b"k2".to_vec()),
            tag: Some(b"friend".to_vec()),
        }],
        usermeta: vec![pair("colour", "blue"), pair("size", "9")],
        indexes: vec![pair("age_int", "42"), pair("name_bin", "ann")],
        ..RpbContent::default()
    }
}

#[tokio::test]
async fn put_get_roundtrip_keeps_all_metadata() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    let mut put = put_req(None, "b", "k", "");
    put.content = full_content();
    put.return_body = Some(true);
    let resp = c.put(&put).await.unwrap();
    assert_eq!(resp.key, None, "key only when generated");
    assert_eq!(resp.content.len(), 1);
    let got = c.get(&get_req(None, "b", "k")).await.unwrap();
    assert_eq!(got.vclock, resp.vclock);
    let content = &got.content[0];
    let sent = full_content();
    assert_eq!(content.value, sent.value);
    assert_eq!(content.content_type, sent.content_type);
    assert_eq!(content.charset, sent.charset);
    assert_eq!(content.content_encoding, sent.content_encoding);
    assert_eq!(content.links, sent.links);
    assert_eq!(content.usermeta, sent.usermeta);
    assert_eq!(content.indexes, sent.indexes);
    assert!(content.vtag.as_ref().is_some_and(|v| !v.is_empty()));
    assert!(content.last_mod.is_some_and(|s| s > 1_600_000_000));
    assert!(content.last_mod_usecs.is_some_and(|us| us < 1_000_000));

    // head: metadata without the value; if_modified with the current
    // vclock: unchanged.
    let mut head = get_req(None, "b", "k");
    head.head = Some(true);
    let h = c.get(&head).await.unwrap();
    assert!(h.content[0].value.is_empty());
    assert_eq!(h.content[0].usermeta, sent.usermeta);
    let mut cond = get_req(None, "b", "k");
    cond.if_modified = got.vclock.clone();
    let u = c.get(&cond).await.unwrap();
    assert_eq!(u.unchanged, Some(true));
    assert!(u.content.is_empty());
}

#[tokio::test]
async fn generated_keys_are_returned() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    let mut put = put_req(None, "b", "", "v");
    put.key = None;
    let resp = c.put(&put).await.unwrap();
    let key = resp.key.expect("generated key");
    assert!(resp.content.is_empty() && resp.vclock.is_none());
    let key = String::from_utf8(key).unwrap();
    let got = c.get(&get_req(None, "b", &key)).await.unwrap();
    assert_eq!(values(&got), vec![b"v".to_vec()]);
}

#[tokio::test]
async fn siblings_on_a_typed_bucket_resolve_with_the_vclock() {
    let server = start().await;
    typed(&server, "sibs");
    let mut c = Client::connect(&server).await;
    c.put(&put_req(Some("sibs"), "b", "k", "one"))
        .await
        .unwrap();
    c.put(&put_req(Some("sibs"), "b", "k", "two"))
        .await
        .unwrap();
    let got = c.get(&get_req(Some("sibs"), "b", "k")).await.unwrap();
    assert_eq!(values(&got), vec![b"one".to_vec(), b"two".to_vec()]);
    let mut resolve = put_req(Some("sibs"), "b", "k", "merged");
    resolve.vclock = got.vclock.clone();
    resolve.return_body = Some(true);
    let resp = c.put(&resolve).await.unwrap();
    assert_eq!(resp.content.len(), 1);
    let got = c.get(&get_req(Some("sibs"), "b", "k")).await.unwrap();
    assert_eq!(values(&got), vec![b"merged".to_vec()]);
    // The same blind write on the default type keeps one value.
    c.put(&put_req(None, "b", "k", "one")).await.unwrap();
    c.put(&put_req(None, "b", "k", "two")).await.unwrap();
    assert_eq!(
        c.get(&get_req(None, "b", "k")).await.unwrap().content.len(),
        1
    );
}

#[tokio::test]
async fn conditional_puts_fail_with_riaks_texts() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    let mut first = put_req(None, "b", "k", "v1");
    first.if_none_match = Some(true);
    first.return_body = Some(true);
    let stored = c.put(&first).await.unwrap();
    assert_eq!(c.put(&first).await.unwrap_err(), "match_found");

    let mut stale = put_req(None, "b", "k", "v2");
    stale.if_not_modified = Some(true);
    stale.vclock = stored.vclock.clone();
    c.put(&stale).await.unwrap();
    assert_eq!(c.put(&stale).await.unwrap_err(), "modified");

    let mut missing = put_req(None, "b", "nothing", "v");
    missing.if_not_modified = Some(true);
    missing.vclock = stored.vclock.clone();
    assert_eq!(c.put(&missing).await.unwrap_err(), "notfound");
    assert!(c.ping().await, "errors keep the connection");
}

#[tokio::test]
async fn delete_then_get_is_not_found() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    c.put(&put_req(None, "b", "k", "v")).await.unwrap();
    let del = RpbDelReq {
        bucket: b"b".to_vec(),
        key: b"k".to_vec(),
        ..RpbDelReq::default()
    };
    c.send(codes::DEL_REQ, &del).await;
    assert_eq!(c.recv().await, Some((codes::DEL_RESP, vec![])));
    let got = c.get(&get_req(None, "b", "k")).await.unwrap();
    assert_eq!(got, RpbGetResp::default(), "not found is an empty answer");
    let mut with_tombstone = get_req(None, "b", "k");
    with_tombstone.deletedvclock = Some(true);
    let got = c.get(&with_tombstone).await.unwrap();
    assert!(got.content.is_empty());
    assert!(got.vclock.is_some(), "the tombstone's vclock");
    // Deleting what is not there succeeds, as in Riak.
    c.send(codes::DEL_REQ, &del).await;
    assert_eq!(c.recv().await, Some((codes::DEL_RESP, vec![])));
}

#[tokio::test]
async fn bad_requests_get_riaks_errors() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    let mut put = put_req(None, "b", "k", "v");
    put.w = Some(4);
    assert_eq!(c.put(&put).await.unwrap_err(), "{n_val_violation,3}");
    let mut get = get_req(None, "b", "k");
    get.r = Some(5);
    assert_eq!(c.get(&get).await.unwrap_err(), "{n_val_violation,3}");
    get.r = Some(quorum::ALL);
    get.pr = Some(quorum::ONE);
    assert_eq!(c.get(&get).await.unwrap(), RpbGetResp::default());
    let mut put = put_req(None, "b", "k", "v");
    put.w = Some(quorum::ALL);
    put.dw = Some(quorum::QUORUM);
    put.pw = Some(quorum::DEFAULT);
    c.put(&put).await.unwrap();
    assert_eq!(
        c.get(&get_req(None, "", "k")).await.unwrap_err(),
        "Bucket cannot be zero-length"
    );
    assert_eq!(
        c.get(&get_req(None, "b", "")).await.unwrap_err(),
        "Key cannot be zero-length"
    );
    assert_eq!(
        c.get(&get_req(Some("nope"), "b", "k")).await.unwrap_err(),
        "no_type"
    );
    let mut bad_index = put_req(None, "b", "k", "v");
    bad_index.content.indexes = vec![RpbPair {
        key: b"age_int".to_vec(),
        value: Some(b"old".to_vec()),
    }];
    assert_eq!(
        c.put(&bad_index).await.unwrap_err(),
        "Could not parse field 'age_int', value 'old'."
    );
    let mut bad_vclock = put_req(None, "b", "k", "v");
    bad_vclock.vclock = Some(b"not a vclock".to_vec());
    assert!(c.put(&bad_vclock).await.unwrap_err().contains("vclock"));
    assert!(c.ping().await);
}

#[tokio::test]
async fn list_keys_streams_chunks_then_done() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    let count = 2500; // more than one chunk of 1000
    for i in 0..count {
        c.put(&put_req(None, "listed", &format!("k{i}"), "v"))
            .await
            .unwrap();
    }
    c.put(&put_req(None, "other", "x", "v")).await.unwrap();
    let req = RpbListKeysReq {
        bucket: b"listed".to_vec(),
        ..RpbListKeysReq::default()
    };
    c.send(codes::LIST_KEYS_REQ, &req).await;
    let mut keys = Vec::new();
    let mut chunks = 0;
    loop {
        let resp: RpbListKeysResp = expect(c.recv().await, codes::LIST_KEYS_RESP).unwrap();
        keys.extend(resp.keys);
        if resp.done == Some(true) {
            break;
        }
        chunks += 1;
    }
    assert!(chunks >= 2, "streamed in several chunks, got {chunks}");
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), count);

    let unknown = RpbListKeysReq {
        bucket: b"b".to_vec(),
        r#type: Some(b"nope".to_vec()),
        ..RpbListKeysReq::default()
    };
    c.send(codes::LIST_KEYS_REQ, &unknown).await;
    let err = expect::<RpbListKeysResp>(c.recv().await, codes::LIST_KEYS_RESP).unwrap_err();
    assert_eq!(err, "no_type");
    assert!(c.ping().await);
}

#[tokio::test]
async fn list_buckets_plain_and_streamed() {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    for b in ["b1", "b2", "b3"] {
        c.put(&put_req(None, b, "k", "v")).await.unwrap();
    }
    let plain: RpbListBucketsResp = c
        .call(
            codes::LIST_BUCKETS_REQ,
            &RpbListBucketsReq::default(),
            codes::LIST_BUCKETS_RESP,
        )
        .await
        .unwrap();
    assert_eq!(
        plain.buckets,
        vec![b"b1".to_vec(), b"b2".to_vec(), b"b3".to_vec()]
    );
    let req = RpbListBucketsReq {
        stream: Some(true),
        ..RpbListBucketsReq::default()
    };
    c.send(codes::LIST_BUCKETS_REQ, &req).await;
    let mut buckets = Vec::new();
    loop {
        let resp: RpbListBucketsResp = expect(c.recv().await, codes::LIST_BUCKETS_RESP).unwrap();
        buckets.extend(resp.buckets);
        if resp.done == Some(true) {
            break;
        }
    }
    assert_eq!(buckets, plain.buckets);
}
