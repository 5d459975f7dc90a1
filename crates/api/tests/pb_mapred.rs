//! PB MapReduce (RpbMapRedReq 23 → RpbMapRedResp 24): results streamed
//! per kept phase and ended with `done`; malformed and failing jobs get
//! one RpbErrorResp and the connection stays usable.

mod pb_support;

use eddy_wire::codes;
use eddy_wire::proto::*;
use pb_support::*;
use serde_json::{Value, json};

fn job(j: Value) -> RpbMapRedReq {
    RpbMapRedReq {
        request: j.to_string().into_bytes(),
        content_type: b"application/json".to_vec(),
    }
}

/// Every `(phase, value)` until `done`, or the error's text.
async fn run(c: &mut Client, req: &RpbMapRedReq) -> Result<Vec<(u32, Value)>, String> {
    c.send(codes::MAP_RED_REQ, req).await;
    let mut out = Vec::new();
    loop {
        let resp: RpbMapRedResp = expect(c.recv().await, codes::MAP_RED_RESP)?;
        if let Some(r) = &resp.response {
            let values: Vec<Value> = serde_json::from_slice(r).unwrap();
            out.extend(values.into_iter().map(|v| (resp.phase.unwrap(), v)));
        }
        if resp.done == Some(true) {
            return Ok(out);
        }
    }
}

async fn loaded() -> (Server, Client) {
    let server = start().await;
    let mut c = Client::connect(&server).await;
    for i in 0..1500 {
        c.put(&put_req(None, "n", &format!("k{i}"), &i.to_string()))
            .await
            .unwrap();
    }
    (server, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phases_stream_their_results_then_done() {
    let (_s, mut c) = loaded().await;
    let j = job(json!({"inputs": "n", "query": [
        {"map": {"language": "javascript", "name": "Riak.mapValuesJson", "keep": true}},
        {"reduce": {"language": "erlang", "module": "riak_kv_mapreduce", "function": "reduce_sum", "keep": true}}]}));
    let got = run(&mut c, &j).await.unwrap();
    let mapped: Vec<_> = got.iter().filter(|(p, _)| *p == 0).collect();
    assert_eq!(mapped.len(), 1500);
    let sum: i64 = (0..1500).sum();
    assert_eq!(got.last().unwrap(), &(1, json!(sum)));
    assert!(c.ping().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_jobs_get_one_error_and_the_connection_stays_open() {
    let (_s, mut c) = loaded().await;
    let cases: Vec<(RpbMapRedReq, &str)> = vec![
        (
            RpbMapRedReq {
                request: b"{".to_vec(),
                content_type: b"application/json".to_vec(),
            },
            "Invalid job JSON",
        ),
        (
            RpbMapRedReq {
                request: b"{}".to_vec(),
                content_type: b"application/x-erlang-binary".to_vec(),
            },
            "Unsupported content type",
        ),
        (
            job(
                json!({"inputs": "n", "query": [{"map": {"language": "erlang", "module": "riak_kv_mapreduce", "function": "nope"}}]}),
            ),
            "undef",
        ),
        (
            job(
                json!({"inputs": "n", "query": [{"map": {"language": "erlang", "source": "fun(O,_,_) -> [O] end."}}]}),
            ),
            "worker_startup_failed",
        ),
        (
            job(
                json!({"inputs": [["n", "k1"]], "query": [{"map": {"language": "javascript", "source": "function (v) { throw new Error('no'); }"}}]}),
            ),
            "\"phase\":0",
        ),
        (
            job(
                json!({"inputs": [["n", "k1"]], "query": [{"map": {"language": "javascript", "source": "function ("}}]}),
            ),
            "compiling",
        ),
        (
            job(
                json!({"inputs": [["n", "k1"]], "query": [{"reduce": {"language": "javascript", "source": "function () { while (true) {} }"}}]}),
            ),
            "time limit",
        ),
        (
            job(json!({"inputs": {"bucket": "n", "index": "x_foo", "key": "1"}})),
            "Unknown field type",
        ),
    ];
    for (req, want) in cases {
        let err = run(&mut c, &req).await.unwrap_err();
        assert!(err.contains(want), "{want}: {err}");
        assert!(c.ping().await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_timeout_says_timeout() {
    let (_s, mut c) = loaded().await;
    let j = job(json!({"inputs": "n", "timeout": 50, "query": [
        {"map": {"language": "javascript", "source": "function (v) { var t = Date.now(); while (Date.now() - t < 20) {} return [1]; }"}}]}));
    let err = run(&mut c, &j).await.unwrap_err();
    assert!(err.contains("timeout"), "{err}");
    assert!(c.ping().await);
}
