//! Eddy's multi-key PB requests (codes 160–165, design note 016) over TCP
//! against an in-process node: results in request order, per-key errors
//! beside successes, typed buckets and siblings, and what fails the whole
//! request (undecodable messages, bad buckets, too many keys, quorums,
//! frames over the limit).

mod pb_support;

use eddy_api::pb::PbConfig;
use eddy_wire::codes;
use eddy_wire::proto::eddy::{
    EddyDelKey, EddyKeyResult, EddyMultiDelReq, EddyMultiDelResp, EddyMultiGetReq,
    EddyMultiGetResp, EddyMultiPutReq, EddyMultiPutResp, EddyPutObject, eddy_key_result::Status,
};
use eddy_wire::proto::{RpbContent, RpbPair};
use pb_support::{Client, Server, start, start_with, typed};

fn content(value: &[u8]) -> RpbContent {
    RpbContent {
        value: value.to_vec(),
        content_type: Some(b"text/plain".to_vec()),
        ..Default::default()
    }
}

fn object(key: &[u8], value: &[u8]) -> EddyPutObject {
    EddyPutObject {
        key: key.to_vec(),
        vclock: None,
        content: content(value),
    }
}

fn put_req(bucket_type: Option<&str>, objects: Vec<EddyPutObject>) -> EddyMultiPutReq {
    EddyMultiPutReq {
        bucket: b"b".to_vec(),
        r#type: bucket_type.map(|t| t.as_bytes().to_vec()),
        objects,
        ..Default::default()
    }
}

fn get_req(bucket_type: Option<&str>, keys: &[&[u8]]) -> EddyMultiGetReq {
    EddyMultiGetReq {
        bucket: b"b".to_vec(),
        r#type: bucket_type.map(|t| t.as_bytes().to_vec()),
        keys: keys.iter().map(|k| k.to_vec()).collect(),
        ..Default::default()
    }
}

async fn multi_put(c: &mut Client, req: &EddyMultiPutReq) -> Result<Vec<EddyKeyResult>, String> {
    let resp: EddyMultiPutResp = c
        .call(codes::MULTI_PUT_REQ, req, codes::MULTI_PUT_RESP)
        .await?;
    Ok(resp.results)
}

async fn multi_get(c: &mut Client, req: &EddyMultiGetReq) -> Result<Vec<EddyKeyResult>, String> {
    let resp: EddyMultiGetResp = c
        .call(codes::MULTI_GET_REQ, req, codes::MULTI_GET_RESP)
        .await?;
    Ok(resp.results)
}

async fn multi_del(c: &mut Client, req: &EddyMultiDelReq) -> Result<Vec<EddyKeyResult>, String> {
    let resp: EddyMultiDelResp = c
        .call(codes::MULTI_DEL_REQ, req, codes::MULTI_DEL_RESP)
        .await?;
    Ok(resp.results)
}

fn status(r: &EddyKeyResult) -> Status {
    Status::try_from(r.status).expect("a known status")
}

fn values(r: &EddyKeyResult) -> Vec<Vec<u8>> {
    let mut v: Vec<_> = r.content.iter().map(|c| c.value.clone()).collect();
    v.sort();
    v
}

fn errmsg(r: &EddyKeyResult) -> String {
    String::from_utf8_lossy(r.errmsg.as_deref().unwrap_or_default()).into_owned()
}

async fn connect(server: &Server) -> Client {
    Client::connect(server).await
}

#[tokio::test]
async fn puts_gets_and_deletes_answer_per_key_in_request_order() {
    let server = start().await;
    let mut c = connect(&server).await;
    let mut bad_index = object(b"idx", b"v");
    bad_index.content.indexes = vec![RpbPair {
        key: b"n_int".to_vec(),
        value: Some(b"ten".to_vec()),
    }];
    let mut bad_vclock = object(b"vc", b"v");
    bad_vclock.vclock = Some(b"not a context".to_vec());
    let objects = vec![
        object(b"a", b"1"),
        bad_index,
        object(b"", b"empty key"),
        bad_vclock,
        object(&[0xff, 0], &[0, 1, 2]),
    ];
    let written = multi_put(&mut c, &put_req(None, objects)).await.unwrap();
    let keys: Vec<&[u8]> = written.iter().map(|r| r.key.as_slice()).collect();
    assert_eq!(keys, [&b"a"[..], b"idx", b"", b"vc", &[0xff, 0]]);
    let statuses: Vec<Status> = written.iter().map(status).collect();
    use Status::{Error, NotFound, Ok};
    assert_eq!(statuses, [Ok, Error, Error, Error, Ok]);
    assert_eq!(
        errmsg(&written[1]),
        "Could not parse field 'n_int', value 'ten'."
    );
    assert_eq!(errmsg(&written[2]), "Key cannot be zero-length");
    assert!(
        errmsg(&written[3]).starts_with("Invalid vclock"),
        "{:?}",
        written[3]
    );
    assert!(written[0].content.is_empty(), "no body without return_body");

    let req = get_req(None, &[&[0xff, 0], b"missing", b"a", b"idx"]);
    let got = multi_get(&mut c, &req).await.unwrap();
    assert_eq!(
        got.iter().map(status).collect::<Vec<_>>(),
        [Ok, NotFound, Ok, NotFound]
    );
    assert_eq!(values(&got[0]), vec![vec![0, 1, 2]]);
    assert_eq!(values(&got[2]), vec![b"1".to_vec()]);
    assert!(got[0].vclock.is_some() && got[1].vclock.is_none());

    let dels = EddyMultiDelReq {
        bucket: b"b".to_vec(),
        keys: vec![
            EddyDelKey {
                key: b"a".to_vec(),
                vclock: got[2].vclock.clone(),
            },
            EddyDelKey {
                key: b"missing".to_vec(),
                vclock: None,
            },
            EddyDelKey {
                key: vec![0xff, 0],
                vclock: Some(b"junk".to_vec()),
            },
        ],
        ..Default::default()
    };
    let deleted = multi_del(&mut c, &dels).await.unwrap();
    assert_eq!(
        deleted.iter().map(status).collect::<Vec<_>>(),
        [Ok, NotFound, Error]
    );
    let mut req = get_req(None, &[b"a"]);
    req.deletedvclock = Some(true);
    let got = multi_get(&mut c, &req).await.unwrap();
    assert_eq!(status(&got[0]), NotFound);
    assert!(got[0].vclock.is_some(), "the tombstone's context");
    assert!(c.ping().await, "the connection stays usable");
}

#[tokio::test]
async fn typed_buckets_return_siblings_and_resolve_with_contexts() {
    let server = start().await;
    typed(&server, "maps");
    let mut c = connect(&server).await;
    for value in [&b"one"[..], b"two"] {
        let req = put_req(Some("maps"), vec![object(b"k", value)]);
        multi_put(&mut c, &req).await.unwrap();
    }
    let mut req = get_req(Some("maps"), &[b"k"]);
    req.head = Some(true);
    let got = multi_get(&mut c, &req).await.unwrap();
    assert_eq!(got[0].content.len(), 2);
    assert!(
        got[0].content.iter().all(|s| s.value.is_empty()),
        "head: no values"
    );
    let mut resolve = object(b"k", b"merged");
    resolve.vclock = got[0].vclock.clone();
    let mut req = put_req(Some("maps"), vec![resolve, object(b"new", b"n")]);
    req.return_body = Some(true);
    let written = multi_put(&mut c, &req).await.unwrap();
    assert_eq!(values(&written[0]), vec![b"merged".to_vec()]);
    assert!(written[0].vclock.is_some());
    assert_eq!(values(&written[1]), vec![b"n".to_vec()]);
    let mut create = put_req(Some("maps"), vec![object(b"k", b"x"), object(b"z", b"y")]);
    create.if_none_match = Some(true);
    let created = multi_put(&mut c, &create).await.unwrap();
    assert_eq!(status(&created[0]), Status::Error);
    assert_eq!(errmsg(&created[0]), "match_found");
    assert_eq!(status(&created[1]), Status::Ok);
}

#[tokio::test]
async fn what_concerns_the_whole_request_is_an_error_response() {
    let server = start().await;
    let mut c = connect(&server).await;
    let too_many: Vec<Vec<u8>> = (0..1001).map(|k| format!("k{k}").into_bytes()).collect();
    let req = EddyMultiGetReq {
        bucket: b"b".to_vec(),
        keys: too_many,
        ..Default::default()
    };
    let e = multi_get(&mut c, &req).await.unwrap_err();
    assert_eq!(e, "too many keys: 1001 exceeds the limit of 1000");
    let e = multi_get(&mut c, &get_req(Some("nope"), &[b"a"]))
        .await
        .unwrap_err();
    assert_eq!(e, "no_type");
    let mut empty_bucket = get_req(None, &[b"a"]);
    empty_bucket.bucket.clear();
    let e = multi_get(&mut c, &empty_bucket).await.unwrap_err();
    assert_eq!(e, "Bucket cannot be zero-length");
    let mut w4 = put_req(None, vec![object(b"a", b"v")]);
    w4.w = Some(4);
    let e = multi_put(&mut c, &w4).await.unwrap_err();
    assert_eq!(e, "{n_val_violation,3}");
    let none = multi_get(&mut c, &get_req(None, &[b"a"])).await.unwrap();
    assert_eq!(status(&none[0]), Status::NotFound, "nothing was written");
    for code in [
        codes::MULTI_GET_REQ,
        codes::MULTI_PUT_REQ,
        codes::MULTI_DEL_REQ,
    ] {
        c.send_raw(code, &[0x0a, 0x05, b'b']).await;
        let e = pb_support::expect::<EddyMultiGetResp>(c.recv().await, code + 1).unwrap_err();
        assert!(e.starts_with("Message decoding error"), "{code}: {e}");
    }
    let empty = multi_get(&mut c, &get_req(None, &[])).await.unwrap();
    assert!(empty.is_empty());
    assert!(c.ping().await);
}

#[tokio::test]
async fn a_frame_over_the_limit_is_refused_and_closes_the_connection() {
    let config = PbConfig {
        frame_bytes_max: 64 * 1024,
        ..PbConfig::default()
    };
    let server = start_with(config).await;
    let mut c = connect(&server).await;
    let objects = (0..100)
        .map(|k| object(format!("k{k}").as_bytes(), &[7; 1024]))
        .collect();
    c.send(codes::MULTI_PUT_REQ, &put_req(None, objects)).await;
    let e = pb_support::expect::<EddyMultiPutResp>(c.recv().await, codes::MULTI_PUT_RESP);
    assert!(e.unwrap_err().contains("Invalid message packet"));
    assert!(c.recv().await.is_none(), "then the connection closes");
    let mut fresh = connect(&server).await;
    let objects = (0..10)
        .map(|k| object(format!("k{k}").as_bytes(), &[7; 1024]))
        .collect();
    let written = multi_put(&mut fresh, &put_req(None, objects))
        .await
        .unwrap();
    assert!(written.iter().all(|r| status(r) == Status::Ok));
}
