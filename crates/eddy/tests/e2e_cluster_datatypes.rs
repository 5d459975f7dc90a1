//! Data types on three real nodes (separate processes, n_val 3): client
//! threads, one per node, increment one hot counter and add unique members
//! to one set over HTTP while dev3 is killed with SIGKILL and restarted.
//! Once the ring has settled, every node reads the same counter and set,
//! the counter counts every acknowledged increment exactly once (its value
//! lies between the acknowledged increments and those plus the failed
//! ones, which may or may not have been applied), and the set holds every
//! acknowledged member and nothing that was never added. The set starts
//! with enough members to be stored in segments, so its adds reach the
//! other replicas as deltas, concurrent ones from three coordinators
//! (replicas behind them caught up with the whole set).

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::TestNode;
use support::cluster::{dev_names, form, settle};

const SETTLE: Duration = Duration::from_secs(90);
const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];
const COUNTER: &str = "/types/counters/buckets/b/datatypes/hot";
const SET: &str = "/types/sets/buckets/b/datatypes/members";
/// Members the set starts with: enough to be stored in segments (note 020
/// §6, `SEGMENTED_MIN`).
const PRELOAD: usize = 2_100;

/// What one client thread saw.
#[derive(Default)]
struct Seen {
    acked_increments: u64,
    failed_increments: u64,
    acked_members: BTreeSet<String>,
    attempted_members: BTreeSet<String>,
}

fn create_types(node: &TestNode, nodes: &[TestNode]) {
    for (name, datatype) in [("counters", "counter"), ("sets", "set")] {
        let body = format!(r#"{{"props":{{"datatype":"{datatype}"}}}}"#);
        let path = format!("/admin/bucket-types/{name}");
        let created = node.http("POST", &path, &JSON, body.as_bytes());
        assert!(created.status < 300, "{created:?}");
        let activated = node.http("POST", &format!("{path}/activate"), &[], b"");
        assert!(activated.status < 300, "{activated:?}");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    for n in nodes {
        while n.http("GET", COUNTER, &[], b"").status != 404
            || n.http("GET", SET, &[], b"").status != 404
        {
            assert!(Instant::now() < deadline, "types not active everywhere");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Increments and adds against `port` until `stop`; `id` names the
/// thread's members.
fn client(id: usize, port: u16, stop: &AtomicBool) -> Seen {
    let mut seen = Seen::default();
    let mut step = 0;
    while !stop.load(Ordering::Relaxed) {
        step += 1;
        let inc = support::http(port, "POST", COUNTER, &JSON, br#"{"increment":1}"#);
        match inc {
            Ok(r) if r.status == 204 => seen.acked_increments += 1,
            _ => seen.failed_increments += 1,
        }
        let member = format!("t{id}-{step}");
        seen.attempted_members.insert(member.clone());
        let body = format!(r#"{{"add":"{member}"}}"#);
        match support::http(port, "POST", SET, &JSON, body.as_bytes()) {
            Ok(r) if r.status == 204 => {
                seen.acked_members.insert(member);
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    seen
}

fn read(node: &TestNode, path: &str) -> Value {
    let r = node.http("GET", &format!("{path}?r=all"), &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
    serde_json::from_slice::<Value>(&r.body).unwrap()["value"].clone()
}

#[test]
fn counters_and_sets_keep_every_acknowledged_update_through_a_kill() {
    let mut nodes = form(3, SETTLE);
    create_types(&nodes[0], &nodes);
    let preloaded: BTreeSet<String> = (0..PRELOAD).map(|i| format!("p{i}")).collect();
    let all: Vec<&String> = preloaded.iter().collect();
    let body = serde_json::json!({ "add_all": all }).to_string();
    let added = nodes[0].http("POST", SET, &JSON, body.as_bytes());
    assert_eq!(added.status, 204, "{added:?}");
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(id, n)| {
            let (port, stop) = (n.http_port, stop.clone());
            std::thread::spawn(move || client(id, port, &stop))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    nodes[2].kill9();
    std::thread::sleep(Duration::from_secs(3));
    nodes[2].restart();
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    let seen: Vec<Seen> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    settle(&nodes, &dev_names(1..=3), SETTLE);

    let acked: u64 = seen.iter().map(|s| s.acked_increments).sum();
    let failed: u64 = seen.iter().map(|s| s.failed_increments).sum();
    assert!(
        acked > 50,
        "too little load to mean anything: {acked} increments"
    );
    let counters: Vec<Value> = nodes.iter().map(|n| read(n, COUNTER)).collect();
    assert!(counters.windows(2).all(|w| w[0] == w[1]), "{counters:?}");
    let value = counters[0].as_u64().unwrap();
    println!("increments: {acked} acknowledged, {failed} failed; the counter reads {value}");
    assert!(
        (acked..=acked + failed).contains(&value),
        "{value} is not {acked} acknowledged increments plus some of {failed} failed ones"
    );

    let sets: Vec<Value> = nodes.iter().map(|n| read(n, SET)).collect();
    assert!(sets.windows(2).all(|w| w[0] == w[1]), "the nodes disagree");
    let members: BTreeSet<String> = sets[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect();
    let acked: BTreeSet<&String> = (seen.iter().flat_map(|s| &s.acked_members))
        .chain(&preloaded)
        .collect();
    let attempted: BTreeSet<&String> = (seen.iter().flat_map(|s| &s.attempted_members))
        .chain(&preloaded)
        .collect();
    for m in &acked {
        assert!(members.contains(*m), "acknowledged member {m} is missing");
    }
    for m in &members {
        assert!(attempted.contains(m), "{m} was never added");
    }
    println!(
        "set: {} acknowledged adds, {} attempted, {} members",
        acked.len(),
        attempted.len(),
        members.len()
    );
    let stat = |n: &TestNode, name: &str| {
        let r = n.http("GET", "/stats", &[], b"");
        serde_json::from_slice::<Value>(&r.body).unwrap()[name]
            .as_u64()
            .unwrap_or(0)
    };
    let deltas: u64 = nodes.iter().map(|n| stat(n, "datatype_deltas_total")).sum();
    let behind: u64 = nodes
        .iter()
        .map(|n| stat(n, "datatype_deltas_behind_total"))
        .sum();
    println!("set deltas: {deltas} sent, {behind} behind");
    assert!(deltas > 0, "the set's adds went out as deltas");
}
