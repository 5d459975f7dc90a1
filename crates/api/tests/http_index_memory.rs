//! A bitcask term index at its memory bound, seen over HTTP: a put that
//! would grow it answers 507 naming the index memory limit and stores
//! nothing; deletes and unindexed puts still pass, and make room again;
//! `/stats` sums the indexes' figures over the node's partitions.

mod http_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use eddy_api::http::HttpConfig;
use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_kv::repair::Partition;
use eddy_model::BucketRef;
use eddy_storage::Backend;
use http_support::{Server, node_config, start_on};
use serde_json::Value;

/// Each partition's bound: room for a handful of one-term keys.
const MAX: u64 = 4096;

async fn start(dir: &std::path::Path) -> Server {
    let dir = dir.to_path_buf();
    start_on(node_config(), HttpConfig::default(), move |p| {
        let config = BitcaskConfig {
            merge_check_interval_ms: 0,
            index_memory_max_bytes: Some(MAX),
            ..BitcaskConfig::default()
        };
        let b = Bitcask::open(&dir.join(p.0.to_string()), config).unwrap();
        Arc::new(b) as Arc<dyn Backend>
    })
    .await
}

async fn put_indexed(s: &Server, key: &str) -> reqwest::Response {
    s.client
        .put(s.url(&format!("/buckets/b/keys/{key}")))
        .header("content-type", "text/plain")
        .header("x-riak-index-affiliate_bin", format!("affiliate-{key}"))
        .body("coupon")
        .send()
        .await
        .unwrap()
}

async fn stats(s: &Server) -> Value {
    serde_json::from_str(&s.get("/stats").await.text().await.unwrap()).unwrap()
}

fn partition_of(s: &Server, key: &str) -> Partition {
    let b = BucketRef::default_type(b"b".to_vec());
    s.node.preflist(&b, key.as_bytes()).unwrap()[0].0
}

#[tokio::test]
async fn a_put_past_the_index_bound_answers_507_and_deletes_make_room() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path()).await;
    // One replica per key, so a refusal is the put's whole answer.
    let props = s
        .client
        .put(s.url("/buckets/b/props"))
        .header("content-type", "application/json")
        .body(r#"{"props":{"n_val":1,"w":1,"dw":1}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(props.status(), 204);

    let mut stored: BTreeMap<Partition, Vec<String>> = BTreeMap::new();
    let mut refused = None;
    for i in 0..1000 {
        let key = format!("coupon-{i:07}");
        let r = put_indexed(&s, &key).await;
        match r.status().as_u16() {
            204 => stored.entry(partition_of(&s, &key)).or_default().push(key),
            507 => {
                refused = Some((key, r.text().await.unwrap()));
                break;
            }
            other => panic!("{key}: {other} {}", r.text().await.unwrap()),
        }
    }
    let (key, body) = refused.expect("a partition reaches its bound");
    assert!(
        body.starts_with("index memory limit reached: the term index would hold ")
            && body.contains(&format!("over its limit of {MAX}")),
        "{body}"
    );
    assert_eq!(s.get(&format!("/buckets/b/keys/{key}")).await.status(), 404);
    let q = format!("/buckets/b/index/affiliate_bin/affiliate-{key}");
    let hits: Value = serde_json::from_str(&s.get(&q).await.text().await.unwrap()).unwrap();
    assert_eq!(hits["keys"], serde_json::json!([]));

    let st = stats(&s).await;
    let indexed: usize = stored.values().map(Vec::len).sum();
    assert_eq!(st["bitcask_index_entries"], indexed);
    assert_eq!(st["bitcask_index_memory_max"], 8 * MAX);
    assert_eq!(st["bitcask_index_writes_refused_total"], 1);
    assert_eq!(st["bitcask_index_partitions_over_limit"], 0);
    let bytes = st["bitcask_index_memory_bytes"].as_u64().unwrap();
    assert!(bytes > 0 && bytes <= 8 * MAX, "{st}");

    // An unindexed put passes; deleting a key of the same partition makes
    // room for the refused one.
    assert_eq!(
        s.put(&format!("/buckets/b/keys/{key}-plain"), "v")
            .await
            .status(),
        204
    );
    let victim = stored[&partition_of(&s, &key)][0].clone();
    let r = s.delete(&format!("/buckets/b/keys/{victim}")).await;
    assert_eq!(r.status(), 204);
    assert_eq!(put_indexed(&s, &key).await.status(), 204);
    let hits: Value = serde_json::from_str(&s.get(&q).await.text().await.unwrap()).unwrap();
    assert_eq!(hits["keys"], serde_json::json!([key]));
}
