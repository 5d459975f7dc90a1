//! `/`, `/ping`, `/stats`, and bad input of every kind: each gets a clear
//! 4xx/5xx and the node keeps serving.

mod http_support;

use eddy_api::http::HttpConfig;
use eddy_kv::NodeConfig;
use http_support::{header, node_config, start, start_with};
use serde_json::Value;

#[tokio::test]
async fn root_lists_riak_resources_in_html_and_json() {
    let s = start().await;
    let r = s.get("/").await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type").unwrap(), "text/html");
    assert!(
        header(&r, "link")
            .unwrap()
            .contains("</ping>; rel=\"riak_kv_wm_ping\"")
    );
    let html = r.text().await.unwrap();
    assert!(
        html.contains("<a href=\"/buckets\">riak_kv_wm_buckets</a>"),
        "{html}"
    );
    let r = s
        .client
        .get(s.url("/"))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(header(&r, "content-type").unwrap(), "application/json");
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    for name in [
        "riak_kv_wm_buckets",
        "riak_kv_wm_keylist",
        "riak_kv_wm_object",
        "riak_kv_wm_props",
        "riak_kv_wm_bucket_type",
        "riak_kv_wm_preflist",
        "riak_kv_wm_index",
    ] {
        assert!(v.get(name).is_some(), "{name} in {v}");
    }
    assert_eq!(v["riak_kv_wm_ping"], "/ping");
    assert_eq!(v["riak_kv_wm_stats"], "/stats");
}

/// GETs a preflist resource; returns its list.
async fn preflist(s: &http_support::Server, path: &str) -> Vec<Value> {
    let r = s.get(path).await;
    assert_eq!(r.status(), 200, "{path}");
    assert_eq!(header(&r, "content-type").unwrap(), "application/json");
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    v["preflist"].as_array().unwrap().clone()
}

/// `riak_kv_wm_preflist`: the n_val partitions of a key, as the PB
/// preflist request gives them, in both URL styles that have it.
#[tokio::test]
async fn preflist_names_n_primary_partitions() {
    let s = start().await;
    let list = preflist(&s, "/buckets/b/keys/k/preflist").await;
    assert_eq!(list.len(), 3);
    let mut partitions: Vec<u64> = list
        .iter()
        .map(|i| i["partition"].as_u64().unwrap())
        .collect();
    for item in &list {
        assert_eq!(item["node"], "eddy@127.0.0.1");
        assert_eq!(item["primary"], true);
    }
    assert_eq!(
        preflist(&s, "/types/default/buckets/b/keys/k/preflist").await,
        list
    );
    partitions.sort();
    partitions.dedup();
    assert_eq!(partitions.len(), 3, "distinct partitions");
    assert!(partitions.iter().all(|p| *p < 8));

    s.client
        .put(s.url("/buckets/one/props"))
        .header("content-type", "application/json")
        .body(r#"{"props":{"n_val":1}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(preflist(&s, "/buckets/one/keys/k/preflist").await.len(), 1);
    let r = s.get("/types/nope/buckets/b/keys/k/preflist").await;
    assert_eq!(r.status(), 404);
    let r = s.get("/buckets/b/keys//preflist").await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("key must not be empty"));
    let r = s
        .client
        .post(s.url("/buckets/b/keys/k/preflist"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    s.assert_serving().await;
}

#[tokio::test]
async fn ping_and_stats() {
    let s = start().await;
    s.assert_serving().await;
    s.put("/buckets/b/keys/k", "v").await;
    s.get("/buckets/b/keys/k").await;
    s.get("/buckets/b/keys/k").await;
    let r = s.get("/stats").await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type").unwrap(), "application/json");
    let v: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    let version = v["riak_kv_version"].as_str().unwrap();
    let parts: Vec<&str> = version.split('.').collect();
    assert_eq!(parts.len(), 3, "{version}");
    assert!(parts.iter().all(|p| p.parse::<u32>().is_ok()), "{version}");
    assert_eq!(version, eddy_api::version::RIAK_COMPAT_VERSION);
    assert_eq!(v["eddy_version"], eddy_api::version::EDDY_VERSION);
    assert_eq!(v["nodename"], "eddy@127.0.0.1");
    assert_eq!(v["ring_members"], serde_json::json!(["eddy@127.0.0.1"]));
    assert_eq!(v["connected_nodes"], serde_json::json!([]));
    assert_eq!(v["ring_num_partitions"], 8);
    assert_eq!(v["ring_creation_size"], 8);
    assert_eq!(v["storage_backend"], "memory");
    assert_eq!(v["node_gets_total"], 2);
    assert_eq!(v["node_puts_total"], 1);
    assert_eq!(v["node_gets"], 2);
    assert_eq!(v["node_puts"], 1);
    assert_eq!(v["vnode_gets_total"], 6, "n_val 3");
    // A get may reach the third replica before the put's write to it (the
    // put answered at w = 2); read repair then writes it too.
    let repairs = v["read_repairs_total"].as_u64().unwrap();
    assert_eq!(v["vnode_puts_total"].as_u64(), Some(3 + repairs));
    for stat in ["mean", "median", "95", "99", "100"] {
        let t = &v[format!("node_get_fsm_time_{stat}")];
        assert!(
            t.as_u64().is_some_and(|us| us > 0),
            "node_get_fsm_time_{stat}: {t}"
        );
        assert!(v[format!("node_put_fsm_time_{stat}")].is_u64());
    }
    assert_eq!(v["node_get_fsm_siblings_100"], 1);
    assert_eq!(v["node_get_fsm_objsize_100"], 1);
    assert!(v["sys_logical_processors"].as_u64().is_some_and(|n| n >= 1));
}

#[tokio::test]
async fn bad_quorums_and_n_val_violations_are_400() {
    let s = start().await;
    let r = s.put("/buckets/b/keys/k?w=most", "v").await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.text().await.unwrap(),
        "w query parameter must be an integer or one of the following words: 'one', 'quorum' or 'all'\n"
    );
    let r = s.put("/buckets/b/keys/k?w=4", "v").await;
    assert_eq!(r.status(), 400);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("values invalid for bucket n value of 3")
    );
    assert_eq!(s.put("/buckets/b/keys/k?dw=all", "v").await.status(), 204);
    assert_eq!(s.get("/buckets/b/keys/k?r=5").await.status(), 400);
    assert_eq!(s.get("/buckets/b/keys/k?pr=-1").await.status(), 400);
    assert_eq!(
        s.get("/buckets/b/keys/k?notfound_ok=maybe").await.status(),
        400
    );
    assert_eq!(s.get("/buckets/b/keys/k?timeout=soon").await.status(), 400);
    assert_eq!(s.delete("/buckets/b/keys/k?rw=9").await.status(), 400);
    s.assert_serving().await;
}

#[tokio::test]
async fn bad_object_input_is_refused_clearly() {
    let s = start().await;
    let put = |path: &str| {
        s.client
            .put(s.url(path))
            .header("content-type", "text/plain")
    };
    let r = put("/buckets/b/keys/i")
        .header("x-riak-index-age_int", "forty")
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.text().await.unwrap(),
        "Could not parse field 'age_int', value 'forty'.\n"
    );
    let r = put("/buckets/b/keys/i")
        .header("x-riak-index-age", "1")
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = put("/buckets/b/keys/i")
        .header("link", "<http://elsewhere>; riaktag=\"x\"")
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().starts_with("Invalid Link header"));
    let r = s
        .client
        .put(s.url("/buckets/b/keys/i"))
        .body("v")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.text().await.unwrap(),
        "Missing Content-Type request header"
    );
    let r = s.put("/buckets/b/keys/", "v").await;
    assert_eq!(r.status(), 400, "empty key");
    assert_eq!(r.text().await.unwrap(), "key must not be empty\n");
    assert_eq!(
        s.put("/buckets//keys/k", "v").await.status(),
        400,
        "empty bucket"
    );
    let r = s.get("/types/%FF/buckets/b/keys/k").await;
    assert_eq!(r.status(), 400, "type names must be UTF-8");
    let r = s.get("/types/nope/buckets/b/keys/k").await;
    assert_eq!(r.status(), 404);
    assert_eq!(r.text().await.unwrap(), "Unknown bucket type: nope");
    assert_eq!(
        s.put("/types/inactive/buckets/b/keys/k", "v")
            .await
            .status(),
        404
    );
    assert_eq!(s.get("/no/such/resource").await.status(), 404);
    let r = s
        .client
        .patch(s.url("/buckets/b/keys/k"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(s.get("/buckets/b/keys/k?x=%FF").await.status(), 400);
    s.assert_serving().await;
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let node = NodeConfig {
        object_size_max_bytes: 100_000,
        ..node_config()
    };
    let http = HttpConfig {
        body_bytes_max: 1_000_000,
        ..HttpConfig::default()
    };
    let s = start_with(node, http).await;
    let r = s.put("/buckets/b/keys/big", &"x".repeat(2_000_000)).await;
    assert_eq!(r.status(), 413, "over the HTTP body limit");
    let r = s.put("/buckets/b/keys/big", &"x".repeat(200_000)).await;
    assert_eq!(r.status(), 413, "over the object size limit");
    assert!(r.text().await.unwrap().contains("object too large"));
    assert_eq!(s.get("/buckets/b/keys/big").await.status(), 404);
    let r = s.put("/buckets/b/keys/ok", &"x".repeat(50_000)).await;
    assert_eq!(r.status(), 204);
    s.assert_serving().await;
}

#[tokio::test]
async fn unreachable_vnodes_are_503_and_http_keeps_serving() {
    let s = start().await;
    s.put("/buckets/b/keys/k", "v").await;
    s.node.shutdown();
    let r = s.get("/buckets/b/keys/k").await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.text().await.unwrap(), "R-value unsatisfied: 0/2\n");
    let r = s.put("/buckets/b/keys/k", "v").await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.text().await.unwrap(), "node is shutting down\n");
    s.assert_serving().await;
}
