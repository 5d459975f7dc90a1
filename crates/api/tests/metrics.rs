//! `GET /metrics` and `/stats` from the node's one set of figures: gets
//! over PB and over HTTP are both counted and timed by the node (issue 27,
//! item 5's check), per API too, two nodes in one process keep apart
//! figures, and the vnodes' merges and data type updates appear under
//! Riak's names.

mod http_support;

use eddy_api::pb::PbConfig;
use eddy_wire::{codes, proto};
use http_support::Server;
use prost::Message;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves PB on `server`'s node; a connection to it.
async fn pb_connection(server: &Server) -> TcpStream {
    pb_connection_with(server, PbConfig::default()).await
}

/// Serves PB on `server`'s node with `config`; a connection to it.
async fn pb_connection_with(server: &Server, config: PbConfig) -> TcpStream {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let pending = std::future::pending::<()>();
    let node = server.node.clone();
    tokio::spawn(eddy_api::pb::serve(listener, node, config, pending));
    TcpStream::connect(addr).await.unwrap()
}

/// Sends one PB request and returns the answer's code.
async fn pb_call(stream: &mut TcpStream, code: u8, msg: &impl Message) -> u8 {
    let body = msg.encode_to_vec();
    let mut frame = ((body.len() + 1) as u32).to_be_bytes().to_vec();
    frame.push(code);
    frame.extend_from_slice(&body);
    stream.write_all(&frame).await.unwrap();
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await.unwrap();
    let mut answer = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut answer).await.unwrap();
    answer[0]
}

async fn metrics(server: &Server) -> String {
    let r = server.get("/metrics").await;
    assert_eq!(r.status(), 200);
    let media = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(media.starts_with("text/plain; version=0.0.4"), "{media}");
    r.text().await.unwrap()
}

async fn stats(server: &Server) -> Value {
    let text = server.get("/stats").await.text().await.unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The value of the series `series` (name and labels, as rendered).
fn value(text: &str, series: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.strip_prefix(series).is_some_and(|v| v.starts_with(' ')))
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"));
    line[series.len()..].trim().parse().unwrap()
}

#[tokio::test]
async fn gets_over_pb_and_http_are_both_counted_and_timed() {
    let server = http_support::start().await;
    assert_eq!(server.put("/buckets/b/keys/k", "value").await.status(), 204);
    let mut pb = pb_connection(&server).await;
    let get = proto::RpbGetReq {
        bucket: b"b".to_vec(),
        key: b"k".to_vec(),
        ..Default::default()
    };
    for _ in 0..100 {
        assert_eq!(
            pb_call(&mut pb, codes::GET_REQ, &get).await,
            codes::GET_RESP
        );
        assert_eq!(server.get("/buckets/b/keys/k").await.status(), 200);
    }
    let text = metrics(&server).await;
    assert!(
        text.contains("# TYPE eddy_node_gets_total counter\n"),
        "{text}"
    );
    assert!(
        text.contains("# HELP eddy_node_get_fsm_time_seconds "),
        "{text}"
    );
    assert_eq!(value(&text, "eddy_node_gets_total"), 200.0);
    assert_eq!(value(&text, "eddy_node_puts_total"), 1.0);
    assert_eq!(value(&text, "eddy_node_get_fsm_time_seconds_count"), 200.0);
    let all = "eddy_node_get_fsm_time_seconds_bucket{le=\"+Inf\"}";
    assert_eq!(value(&text, all), 200.0);
    let pb_gets = "eddy_api_requests_total{api=\"pb\",op=\"RpbGetReq\"}";
    assert_eq!(value(&text, pb_gets), 100.0);
    let http_gets = "eddy_api_requests_total{api=\"http\",op=\"get\"}";
    assert_eq!(value(&text, http_gets), 100.0);
    assert_eq!(value(&text, "eddy_http_connections"), 1.0);

    let stats = stats(&server).await;
    assert_eq!(stats["node_gets"], 200, "the last minute");
    assert_eq!(stats["node_gets_total"], 200);
    assert_eq!(stats["node_get_fsm_objsize_mean"], 5);
    assert_eq!(stats["node_get_fsm_siblings_100"], 1);
    let slowest = stats["node_get_fsm_time_100"].as_u64().unwrap();
    assert!(slowest >= stats["node_get_fsm_time_median"].as_u64().unwrap());
    assert!(slowest > 0, "{stats}");
    assert!(stats["node_put_fsm_time_100"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn failed_requests_are_counted_by_side() {
    let server = http_support::start().await;
    let r = server.get("/buckets/b/keys/k?r=7").await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        server.get("/no/such/resource/here/at/all").await.status(),
        404
    );
    let text = metrics(&server).await;
    let client = "eddy_api_errors_total{api=\"http\",side=\"client\"}";
    assert_eq!(value(&text, client), 2.0);
    let server_side = "eddy_api_errors_total{api=\"http\",side=\"server\"}";
    assert_eq!(value(&text, server_side), 0.0);
    assert_eq!(
        value(&text, "eddy_api_requests_total{api=\"http\",op=\"other\"}"),
        1.0
    );
}

#[tokio::test]
async fn two_nodes_in_one_process_keep_apart_figures() {
    let (one, two) = (http_support::start().await, http_support::start().await);
    for _ in 0..3 {
        assert_eq!(one.get("/buckets/b/keys/k").await.status(), 404);
    }
    assert_eq!(value(&metrics(&one).await, "eddy_node_gets_total"), 3.0);
    assert_eq!(value(&metrics(&two).await, "eddy_node_gets_total"), 0.0);
    let stats = stats(&two).await;
    assert_eq!(stats["node_gets_total"], 0);
}

async fn post_json(server: &Server, path: &str, body: serde_json::Value) -> u16 {
    let r = server
        .client
        .post(server.url(path))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    r.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_and_jobs_are_counted_under_riak_names() {
    let server = http_support::start().await;
    for k in ["a", "b", "c"] {
        let r = server
            .client
            .put(server.url(&format!("/buckets/n/keys/{k}")))
            .header("content-type", "application/json")
            .header("x-riak-index-group_bin", "g")
            .body("1")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
    }
    assert_eq!(
        server.get("/buckets/n/index/group_bin/g").await.status(),
        200
    );
    assert_eq!(server.get("/buckets/n/keys?keys=true").await.status(), 200);
    assert_eq!(server.get("/buckets?buckets=true").await.status(), 200);
    let map = serde_json::json!({"map": {"language": "erlang", "module": "riak_kv_mapreduce", "function": "map_object_value"}});
    let filtered = serde_json::json!({"inputs": {"bucket": "n", "key_filters": [["eq", "a"]]}, "query": [map]});
    assert_eq!(post_json(&server, "/mapred", filtered).await, 200);
    let failing = serde_json::json!({"inputs": [["n", "a"]], "query": [{"map": {"language": "javascript", "source": "function (v) { return v.nope.deeper; }"}}]});
    assert_eq!(post_json(&server, "/mapred", failing).await, 500);

    let text = metrics(&server).await;
    assert_eq!(value(&text, "eddy_index_queries_total"), 1.0);
    assert_eq!(value(&text, "eddy_index_queries_running"), 0.0);
    assert!(value(&text, "eddy_vnode_index_reads_total") > 0.0);
    assert_eq!(value(&text, "eddy_list_keys_total"), 1.0);
    assert_eq!(value(&text, "eddy_list_buckets_total"), 1.0);
    let jobs = |inputs: &str| {
        value(
            &text,
            &format!("eddy_mapred_jobs_total{{inputs=\"{inputs}\"}}"),
        )
    };
    assert_eq!(
        (jobs("key_filter"), jobs("keys"), jobs("bucket")),
        (1.0, 1.0, 0.0)
    );
    assert_eq!(value(&text, "eddy_mapred_job_errors_total"), 1.0);
    assert_eq!(value(&text, "eddy_mapred_jobs_running"), 0.0);
    assert_eq!(
        value(&text, "eddy_mapred_phase_time_seconds_count"),
        1.0,
        "the failed phase is not timed"
    );

    let stats = stats(&server).await;
    assert_eq!(stats["index_fsm_create"], 1);
    assert_eq!(stats["index_fsm_active"], 0);
    assert!(stats["vnode_index_reads"].as_u64().unwrap() > 0);
    assert_eq!(stats["vnode_index_reads"], stats["vnode_index_reads_total"]);
    assert_eq!(
        (&stats["list_fsm_create"], &stats["list_fsm_create_total"]),
        (&1.into(), &1.into())
    );
    assert_eq!(stats["list_fsm_active"], 0);
    assert_eq!(
        (
            &stats["pipeline_create_one"],
            &stats["pipeline_create_count"]
        ),
        (&2.into(), &2.into())
    );
    assert_eq!(stats["pipeline_active"], 0);
}

#[tokio::test]
async fn stats_has_riaks_data_type_handoff_and_pb_names() {
    let server = http_support::start().await;
    let stats = stats(&server).await;
    for t in ["counter", "set", "map"] {
        for name in [format!("node_gets_{t}"), format!("node_puts_{t}_total")] {
            assert_eq!(stats[name.as_str()], 0, "{name}");
        }
        for prefix in [
            "node_get_fsm_{}_time",
            "node_get_fsm_{}_siblings",
            "node_get_fsm_{}_objsize",
            "node_put_fsm_{}_time",
        ] {
            let name = format!("{}_95", prefix.replace("{}", t));
            assert_eq!(stats[name.as_str()], 0, "{name}");
        }
        for name in [
            format!("object_{t}_merge"),
            format!("object_{t}_merge_total"),
            format!("object_{t}_merge_time_median"),
            format!("vnode_{t}_update"),
            format!("vnode_{t}_update_total"),
            format!("vnode_{t}_update_time_100"),
        ] {
            assert_eq!(stats[name.as_str()], 0, "{name}");
        }
    }
    for name in [
        "object_merge",
        "object_merge_total",
        "object_merge_time_mean",
    ] {
        assert_eq!(stats[name], 0, "{name}");
    }
    assert_eq!(stats["rejected_handoffs"], 0, "no handoff manager: zeros");
    for kind in ["ownership", "hinted"] {
        for what in [
            "objects_sent",
            "bytes_sent",
            "inbound_active_transfers",
            "outbound_active_transfers",
        ] {
            let name = format!("{kind}_handoff_{what}");
            assert_eq!(stats[name.as_str()], 0, "{name}");
        }
    }
    assert_eq!(stats["pbc_active"], 0);
    let text = metrics(&server).await;
    assert!(text.contains("# TYPE eddy_datatype_gets_total counter\n"));
    assert!(text.contains("# TYPE eddy_vnode_object_merges_total counter\n"));
    assert!(text.contains("# TYPE eddy_vnode_datatype_update_time_seconds histogram\n"));
    // This node has no commit log and no handoff manager: those parts
    // register their figures when they are built.
    assert!(!text.contains("eddy_commitlog_"), "{text}");
    assert!(!text.contains("eddy_handoff_"), "{text}");
}

#[tokio::test]
async fn pb_connections_are_riaks_pbc_figures() {
    let table = eddy_api::net::ConnectionTable::new(16);
    let http = eddy_api::http::HttpConfig {
        pb_table: Some(table.clone()),
        ..Default::default()
    };
    let server = http_support::start_with(http_support::node_config(), http).await;
    let config = PbConfig {
        table: Some(table),
        ..PbConfig::default()
    };
    let mut pb = pb_connection_with(&server, config).await;
    let get = proto::RpbGetReq {
        bucket: b"b".to_vec(),
        key: b"k".to_vec(),
        ..Default::default()
    };
    assert_eq!(
        pb_call(&mut pb, codes::GET_REQ, &get).await,
        codes::GET_RESP
    );
    let stats = stats(&server).await;
    assert_eq!(stats["pbc_active"], 1);
    assert_eq!(stats["pbc_connects_total"], 1);
    assert_eq!(stats["pbc_connects"], 1, "within the last minute");
}

/// Creates and activates the bucket type `name` of `datatype`.
fn datatype_bucket_type(server: &Server, name: &str, datatype: &str) {
    let props = eddy_model::props::PropsPatch {
        datatype: Some(Some(datatype.into())),
        ..Default::default()
    };
    let registry = server.node.registry();
    registry.create_type(name, &props).unwrap();
    registry.activate_type(name).unwrap();
}

/// One operation on a value of `datatype`.
fn datatype_op(datatype: &str) -> eddy_dt::Op {
    use eddy_dt::{Field, FieldOp, MapOp, MapUpdate, Op, SetOp};
    match datatype {
        "counter" => Op::Counter(1),
        "set" => Op::Set(SetOp {
            adds: vec![b"a".to_vec()],
            removes: vec![],
        }),
        _ => Op::Map(MapOp {
            removes: vec![],
            updates: vec![MapUpdate {
                field: Field::new("c", FieldOp::Counter(1).kind()),
                op: FieldOp::Counter(1),
            }],
        }),
    }
}

#[tokio::test]
async fn vnode_merges_and_updates_are_counted_under_riaks_names() {
    use eddy_kv::coordinator::datatype::DtUpdateRequest;
    let server = http_support::start().await;
    let n_val = u64::from(eddy_model::props::BucketProps::default().n_val);
    for t in ["counter", "set", "map"] {
        let bucket_type = format!("dt_{t}");
        datatype_bucket_type(&server, &bucket_type, t);
        // The first update finds no copy at the replicas; the second is
        // merged by each replica but the coordinating vnode, all local
        // here and written before the answer.
        for _ in 0..2 {
            let req = DtUpdateRequest {
                bucket: eddy_model::BucketRef::typed(&bucket_type, b"b".to_vec()),
                key: Some(b"k".to_vec()),
                op: datatype_op(t),
                context: None,
                options: Default::default(),
            };
            server.node.dt_update(req).await.unwrap();
        }
    }
    let stats = stats(&server).await;
    for t in ["counter", "set", "map"] {
        let updates = format!("vnode_{t}_update_total");
        assert_eq!(stats[updates.as_str()], 2, "{updates}");
        let merges = format!("object_{t}_merge_total");
        assert_eq!(stats[merges.as_str()], n_val - 1, "{merges}");
    }
    assert_eq!(stats["object_merge_total"], 3 * (n_val - 1));
    let text = metrics(&server).await;
    let updates = r#"eddy_vnode_datatype_updates_total{datatype="set"}"#;
    assert_eq!(value(&text, updates), 2.0);
    let merge_times = r#"eddy_vnode_datatype_merge_time_seconds_count{datatype="map"}"#;
    assert_eq!(value(&text, merge_times), (n_val - 1) as f64);
    let object_merges = value(&text, "eddy_vnode_object_merges_total");
    assert_eq!(object_merges, (3 * (n_val - 1)) as f64);
}
