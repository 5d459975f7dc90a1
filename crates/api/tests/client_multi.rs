//! `eddy_client`'s multi-key requests against a node in this process, over
//! both protocols: the client's bodies are what the server takes, and its
//! reading of both answers agrees.

mod http_support;
mod pb_support;

use std::time::Duration;

use eddy_client::multi::{self, KeyResult, KeyStatus, MultiOp, PutItem};
use eddy_client::pb::PbClient;
use eddy_wire::proto::RpbContent;
use eddy_wire::proto::eddy::{
    EddyDelKey, EddyMultiDelReq, EddyMultiGetReq, EddyMultiPutReq, EddyPutObject,
};

fn statuses(results: &[KeyResult]) -> Vec<KeyStatus> {
    results.iter().map(|r| r.status).collect()
}

#[tokio::test]
async fn the_pb_client_writes_reads_and_deletes() {
    let server = pb_support::start().await;
    let addr = server.addr.to_string();
    let mut c = PbClient::connect(&addr, Duration::from_secs(5))
        .await
        .unwrap();
    let object = |key: &[u8], value: &[u8]| EddyPutObject {
        key: key.to_vec(),
        vclock: None,
        content: RpbContent {
            value: value.to_vec(),
            content_type: Some(b"text/plain".to_vec()),
            ..Default::default()
        },
    };
    let put = EddyMultiPutReq {
        bucket: b"b".to_vec(),
        objects: vec![object(b"a", b"1"), object(b"", b"x"), object(b"c", b"3")],
        return_body: Some(true),
        ..Default::default()
    };
    let written = c.multi_put(&put).await.unwrap().results;
    let written: Vec<KeyResult> = written.into_iter().map(KeyResult::from_pb).collect();
    use KeyStatus::{Error, NotFound, Ok};
    assert_eq!(statuses(&written), [Ok, Error, Ok]);
    assert_eq!(written[2].siblings[0].value, b"3");
    let get = EddyMultiGetReq {
        bucket: b"b".to_vec(),
        keys: vec![b"c".to_vec(), b"b".to_vec(), b"a".to_vec()],
        ..Default::default()
    };
    let got = c.multi_get(&get).await.unwrap().results;
    let got: Vec<KeyResult> = got.into_iter().map(KeyResult::from_pb).collect();
    assert_eq!(statuses(&got), [Ok, NotFound, Ok]);
    assert_eq!(
        got[2].siblings[0].content_type.as_deref(),
        Some("text/plain")
    );
    let del = EddyMultiDelReq {
        bucket: b"b".to_vec(),
        keys: vec![EddyDelKey {
            key: b"a".to_vec(),
            vclock: got[2].vclock.clone(),
        }],
        ..Default::default()
    };
    let deleted = c.multi_delete(&del).await.unwrap().results;
    assert_eq!(KeyResult::from_pb(deleted[0].clone()).status, Ok);
}

#[tokio::test]
async fn the_http_client_writes_reads_and_deletes() {
    let server = http_support::start().await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let blocking = move |op, query: &'static str, body: String| {
        let addr = addr.clone();
        tokio::task::spawn_blocking(move || {
            multi::http_request(&addr, Some("maps"), b"b", op, query, &body)
        })
    };
    let items = [
        PutItem {
            key: &[0xff, 1],
            value: &[0xfe],
            content_type: "application/octet-stream",
            vclock: None,
            indexes: &[("n_int", "5")],
        },
        PutItem {
            key: b"t",
            value: b"text",
            content_type: "text/plain",
            vclock: None,
            indexes: &[],
        },
    ];
    let body = multi::put_body(&items);
    let written = blocking(MultiOp::Put, "returnbody=true", body)
        .await
        .unwrap();
    let written = written.unwrap();
    assert_eq!(statuses(&written), [KeyStatus::Ok, KeyStatus::Ok]);
    assert_eq!(written[0].key, [0xff, 1]);
    let body = multi::get_body(&[&[0xff, 1], b"none", b"t"]);
    let got = blocking(MultiOp::Get, "", body).await.unwrap().unwrap();
    use KeyStatus::{NotFound, Ok};
    assert_eq!(statuses(&got), [Ok, NotFound, Ok]);
    assert_eq!(got[0].siblings[0].value, [0xfe]);
    assert_eq!(got[2].siblings[0].value, b"text");
    // A context read over HTTP is bytes, as PB carries it.
    let vclock = got[0].vclock.clone().unwrap();
    let body = multi::delete_body(&[(&[0xff, 1], Some(&vclock)), (b"none", None)]);
    let deleted = blocking(MultiOp::Delete, "", body).await.unwrap().unwrap();
    assert_eq!(statuses(&deleted), [Ok, NotFound]);
    let refused = blocking(MultiOp::Get, "r=most", "{}".into()).await.unwrap();
    assert!(
        matches!(refused, Err(multi::MultiError::Refused { status: 400, .. })),
        "{refused:?}"
    );
}
