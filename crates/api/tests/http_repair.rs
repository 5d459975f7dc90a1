//! `/admin/repair` (what `eddy admin repair` calls) and the recovery and
//! repair entries of `/stats`: a marked partition's stray copy is not
//! read, repair removes it, clears the mark and counts its work.

mod http_support;

use eddy_kv::repair::Partition;
use eddy_model::BucketRef;
use eddy_object::{Actor, Content, RiakObject, VersionVector, codec, merge};
use eddy_storage::WriteOptions;
use http_support::start;
use serde_json::Value;

async fn json(r: reqwest::Response) -> Value {
    serde_json::from_str(&r.text().await.unwrap()).unwrap()
}

/// Stores `value` under `key` in partition `p`'s backend only, as a
/// damaged copy that lost the key's delete would hold it.
fn stray_copy(s: &http_support::Server, p: Partition, key: &[u8], value: &[u8]) {
    let mut obj = RiakObject::default();
    merge::update(
        &mut obj,
        &VersionVector::new(),
        Actor(7),
        Content::new(value.to_vec()),
    );
    let bucket = BucketRef::default_type(b"b".to_vec()).storage_bucket();
    let bytes = codec::encode(&obj);
    s.node
        .partition_backend(p)
        .expect("a local partition")
        .put(&bucket, key, &bytes, &[], WriteOptions::NO_SYNC)
        .unwrap();
}

#[tokio::test]
async fn repair_over_http_removes_what_no_healthy_replica_holds() {
    let s = start().await;
    let (p, _) = s
        .node
        .preflist(&BucketRef::default_type(b"b".to_vec()), b"gone")
        .unwrap()[1];
    s.node.mark_damaged(p, None).unwrap();
    stray_copy(&s, p, b"gone", b"deleted long ago");
    assert_eq!(s.put("/buckets/b/keys/kept", "v").await.status(), 204);

    let status = json(s.get("/admin/repair").await).await;
    assert_eq!(status["damaged"], serde_json::json!([p.0]));
    let stats = json(s.get("/stats").await).await;
    assert_eq!(stats["repair_pending_partitions"], 1);
    assert_eq!(stats["recovery_damaged_partitions"], 0);

    // The marked partition's copy would bring the key back: not read.
    assert_eq!(s.get("/buckets/b/keys/gone").await.status(), 404);
    assert_eq!(s.get("/buckets/b/keys/kept").await.status(), 200);

    let post = |q: &str| s.client.post(s.url(&format!("/admin/repair{q}"))).send();
    assert_eq!(post("?partition=x").await.unwrap().status(), 400);
    assert_eq!(post("?partition=4096").await.unwrap().status(), 404);
    let r = post("?partition=all&wait=true").await.unwrap();
    assert_eq!(r.status(), 200);
    let done = json(r).await;
    assert_eq!(done["partitions"], serde_json::json!([p.0]));
    assert_eq!(done["removed"], 1);

    let bucket = BucketRef::default_type(b"b".to_vec()).storage_bucket();
    let copy = s
        .node
        .partition_backend(p)
        .expect("a local partition")
        .get(&bucket, b"gone")
        .unwrap();
    assert_eq!(copy, None, "the stray copy is removed");
    assert_eq!(s.get("/buckets/b/keys/gone").await.status(), 404);
    assert_eq!(s.get("/buckets/b/keys/kept").await.status(), 200);
    let stats = json(s.get("/stats").await).await;
    assert_eq!(stats["repair_pending_partitions"], 0);
    assert_eq!(stats["repairs_completed_total"], 1);
    assert_eq!(stats["repairs_running"], 0);
    assert_eq!(stats["repair_keys_removed_total"], 1);

    // Nothing marked: a repair without wait starts nothing.
    let r = post("").await.unwrap();
    assert_eq!(r.status(), 202);
    assert_eq!(json(r).await["started"], serde_json::json!([]));
    let r = s
        .client
        .delete(s.url("/admin/repair"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
}
