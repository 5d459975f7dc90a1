//! A partition across real network identities: three `eddy` processes,
//! each in its own Linux network namespace with its own addresses
//! (`support::netns`), joined into one cluster. Node 3 is cut off the
//! cluster network while clients go on reaching every node on the client
//! network, so both sides take writes:
//! - both sides with w = quorum: the majority (nodes 1 and 2) on their
//!   primaries and fallbacks, the minority (node 3) on its own primaries
//!   and on fallback vnodes it starts for the others' partitions (Riak's
//!   sloppy quorum: a node already in the preflist may stand in);
//! - keys both sides write (siblings once healed), keys only one side
//!   writes; each side writes with the context its last acknowledged write
//!   returned, so a side's own writes supersede each other.
//!
//! Then the cut is healed; once every node sees every member up and
//! `eddy admin transfers` shows nothing waiting on any node (hinted
//! handoffs included), every key is read with r = all on every node until
//! a whole pass makes no read repair (every replica of every key is the
//! same). The history checker (`eddy-checker`) then checks every node's
//! read of every key: no acknowledged write lost, every write no later
//! write superseded among the siblings. A key none of whose writes failed
//! must hold exactly the last value each side wrote: two siblings for a
//! key both sides wrote, one for the others.
//!
//! Why a second network rather than a firewall rule: unplugging the cluster
//! port drops node-to-node frames silently (no reset, as in a real
//! partition) without any rule to clean up, and the client network is not
//! touched.
//!
//! Needs root and iproute2: without them it prints why and passes, unless
//! `EDDY_REQUIRE_NETNS` is set (CI sets it).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use eddy_checker::{Acked, History};
use eddy_client::pb::PbClient;
use eddy_object::{VersionVector, context};
use eddy_wire::proto::{RpbContent, RpbGetReq, RpbPutReq};
use eddy_wire::{Quorum, WireQuorum};
use support::TestNode;
use support::netns::Net;

const NODES: usize = 3;
/// The node cut off (1-based, as the hosts are).
const ISOLATED: usize = 3;
const KEYS_PER_GROUP: usize = 4;
const ROUNDS: usize = 5;
const BUCKET: &[u8] = b"netns";
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const DEADLINE: Duration = Duration::from_secs(30);

/// The clients of one side of the partition.
struct Side {
    name: &'static str,
    /// Indexes into the nodes of the ones this side's clients reach.
    coordinators: Vec<usize>,
    w: Quorum,
    keys: Vec<String>,
    /// Where this side's attempt ids start.
    first_step: usize,
}

/// One write as a client saw it.
struct Attempt {
    key: String,
    side: &'static str,
    context: Option<VersionVector>,
    acked: Option<Acked>,
}

/// A key's state as an r = all read returns it.
#[derive(Debug, PartialEq)]
struct Read {
    vv: VersionVector,
    /// The values of the siblings that are not tombstones, sorted.
    live: Vec<Vec<u8>>,
}

fn keys(group: &str) -> Vec<String> {
    (0..KEYS_PER_GROUP)
        .map(|k| format!("{group}-{k}"))
        .collect()
}

fn all_keys() -> Vec<String> {
    ["both", "majority", "minority"]
        .iter()
        .flat_map(|g| keys(g))
        .collect()
}

/// Three nodes in their namespaces, joined to node 1 and settled.
fn cluster(net: &Net) -> Vec<TestNode> {
    let extra = [
        ("EDDY_BUCKETS_DEFAULT_ALLOW_MULT", "on"),
        ("EDDY_STORAGE_BACKEND", "memory"),
    ];
    let nodes: Vec<TestNode> = (1..=NODES)
        .map(|i| TestNode::start_dev_on(i, &net.host(i), &extra))
        .collect();
    for n in &nodes[1..] {
        let address = nodes[0].cluster_address();
        let join = n.admin(&["cluster", "join", &nodes[0].name(), "--address", &address]);
        assert!(join.ok, "{join:#?}");
    }
    let commit = nodes[0].admin(&["cluster", "commit"]);
    assert!(commit.ok, "{commit:#?}");
    nodes[0].admin_until(&["member-status"], DEADLINE, |r| {
        let valid = r.stdout.lines().filter(|l| l.starts_with("valid"));
        let settled = valid.filter(|l| l.contains("--") && !l.contains(" 0.0%"));
        r.ok && settled.count() == NODES
    });
    wait_no_transfers(&nodes);
    nodes
}

/// Waits until `eddy admin transfers` shows nothing waiting on any node.
fn wait_no_transfers(nodes: &[TestNode]) {
    for n in nodes {
        n.admin_until(&["transfers"], DEADLINE, |r| {
            r.ok && r.stdout.contains("No transfers active")
        });
    }
}

/// Whether `node` sees `other` up (`/admin/cluster/status`).
fn sees_up(node: &TestNode, other: &TestNode) -> bool {
    let resp = node.http("GET", "/admin/cluster/status", &[], b"");
    let status: serde_json::Value = serde_json::from_slice(&resp.body).unwrap();
    let members = status["members"].as_array().cloned().unwrap_or_default();
    members
        .iter()
        .any(|m| m["node"] == other.name().as_str() && m["up"] == true)
}

/// Polls until every node sees every other one up (`up`) or the isolated
/// node and the others see each other down (`!up`).
fn wait_liveness(nodes: &[TestNode], up: bool) {
    let end = Instant::now() + DEADLINE;
    let isolated = &nodes[ISOLATED - 1];
    loop {
        let pairs = nodes.iter().filter(|n| n.name() != isolated.name());
        let mut seen = pairs.map(|n| (sees_up(n, isolated), sees_up(isolated, n)));
        if seen.all(|(a, b)| a == up && b == up) {
            return;
        }
        assert!(Instant::now() < end, "liveness never became up = {up}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

async fn client(node: &TestNode) -> Option<PbClient> {
    PbClient::connect(&node.pb_address(), REQUEST_TIMEOUT)
        .await
        .ok()
}

/// A put with return_body; the object's version once acknowledged.
async fn put(
    node: &TestNode,
    key: &str,
    value: &str,
    context: Option<&VersionVector>,
    w: Quorum,
) -> Option<VersionVector> {
    let req = RpbPutReq {
        bucket: BUCKET.to_vec(),
        key: Some(key.as_bytes().to_vec()),
        vclock: context.map(context::to_bytes),
        content: RpbContent {
            value: value.as_bytes().to_vec(),
            content_type: Some(b"text/plain".to_vec()),
            ..Default::default()
        },
        w: Some(w.to_wire()),
        dw: Some(w.to_wire()),
        return_body: Some(true),
        timeout: Some(REQUEST_TIMEOUT.as_millis() as u32),
        ..Default::default()
    };
    let resp = client(node).await?.put(&req).await.ok()?;
    context::from_bytes(resp.vclock.as_deref()?).ok()
}

/// A read with r = all.
async fn read_all(node: &TestNode, key: &str) -> Read {
    let req = RpbGetReq {
        bucket: BUCKET.to_vec(),
        key: key.as_bytes().to_vec(),
        r: Some(Quorum::All.to_wire()),
        timeout: Some(REQUEST_TIMEOUT.as_millis() as u32),
        ..Default::default()
    };
    let mut c = client(node).await.expect("connect for a read");
    let resp = c.get(&req).await.unwrap_or_else(|e| panic!("{key}: {e}"));
    let vv = resp.vclock.as_deref().map(context::from_bytes);
    let mut live: Vec<Vec<u8>> = resp
        .content
        .into_iter()
        .filter(|c| c.deleted != Some(true))
        .map(|c| c.value)
        .collect();
    live.sort();
    Read {
        vv: vv.transpose().expect("a context").unwrap_or_default(),
        live,
    }
}

/// Writes every key once through node 1 with w = all, before the cut.
async fn write_initial(nodes: &[TestNode]) -> (Vec<Attempt>, BTreeMap<String, VersionVector>) {
    let mut attempts = Vec::new();
    let mut contexts = BTreeMap::new();
    for (step, key) in all_keys().into_iter().enumerate() {
        let value = format!("{key}@start");
        let vv = put(&nodes[0], &key, &value, None, Quorum::All).await;
        let vv = vv.unwrap_or_else(|| panic!("{key}: a w = all write before the cut failed"));
        contexts.insert(key.clone(), vv.clone());
        let acked = Acked {
            step,
            value: Some(value.into_bytes()),
            vv,
            context: VersionVector::default(),
        };
        attempts.push(Attempt {
            key,
            side: "start",
            context: None,
            acked: Some(acked),
        });
    }
    (attempts, contexts)
}

/// One side's clients: rounds over its keys, each write with the context
/// of the side's last acknowledged write of the key.
async fn write_side(
    nodes: &[TestNode],
    side: &Side,
    mut contexts: BTreeMap<String, VersionVector>,
) -> Vec<Attempt> {
    let mut attempts = Vec::new();
    for round in 0..ROUNDS {
        for (k, key) in side.keys.iter().enumerate() {
            let at = &nodes[side.coordinators[(round + k) % side.coordinators.len()]];
            let step = side.first_step + attempts.len();
            let value = format!("{key}@{}{round}", side.name);
            let context = contexts.get(key).cloned();
            let vv = put(at, key, &value, context.as_ref(), side.w).await;
            let acked = vv.map(|vv| {
                contexts.insert(key.clone(), vv.clone());
                Acked {
                    step,
                    value: Some(value.into_bytes()),
                    vv,
                    context: context.clone().unwrap_or_default(),
                }
            });
            attempts.push(Attempt {
                key: key.clone(),
                side: side.name,
                context,
                acked,
            });
        }
    }
    attempts
}

/// The two sides of the cut, writing at once.
async fn write_both_sides(
    nodes: &[TestNode],
    contexts: &BTreeMap<String, VersionVector>,
) -> Vec<Attempt> {
    let with = |extra: &str| [keys("both"), keys(extra)].concat();
    let majority = Side {
        name: "majority",
        coordinators: (0..NODES).filter(|&i| i != ISOLATED - 1).collect(),
        w: Quorum::Quorum,
        keys: with("majority"),
        first_step: 10_000,
    };
    let minority = Side {
        name: "minority",
        coordinators: vec![ISOLATED - 1],
        w: Quorum::Quorum,
        keys: with("minority"),
        first_step: 20_000,
    };
    let (mut a, b) = tokio::join!(
        write_side(nodes, &majority, contexts.clone()),
        write_side(nodes, &minority, contexts.clone()),
    );
    a.extend(b);
    a
}

/// The sum of every node's `read_repairs_total`.
fn read_repairs(nodes: &[TestNode]) -> u64 {
    nodes
        .iter()
        .map(|n| {
            let stats: serde_json::Value =
                serde_json::from_slice(&n.http("GET", "/stats", &[], b"").body).unwrap();
            stats["read_repairs_total"]
                .as_u64()
                .expect("read_repairs_total")
        })
        .sum()
}

/// Reads every key with r = all on every node until a whole pass makes no
/// read repair: every replica of every key holds the same object.
async fn read_repair_until_converged(nodes: &[TestNode]) -> u64 {
    let end = Instant::now() + DEADLINE;
    let start = read_repairs(nodes);
    loop {
        let before = read_repairs(nodes);
        for node in nodes {
            for key in all_keys() {
                read_all(node, &key).await;
            }
        }
        // Repairs are sent after the answer: let the last ones be counted.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let after = read_repairs(nodes);
        if after == before {
            return after - start;
        }
        assert!(Instant::now() < end, "read repair did not converge");
    }
}

/// For each key none of whose writes failed: the last value each side
/// acknowledged (the later sides' writes superseded the initial one).
fn expected_values(attempts: &[Attempt]) -> BTreeMap<String, BTreeSet<Vec<u8>>> {
    let failed: BTreeSet<&str> = attempts
        .iter()
        .filter(|a| a.acked.is_none())
        .map(|a| a.key.as_str())
        .collect();
    let mut last: BTreeMap<(&str, &str), Vec<u8>> = BTreeMap::new();
    for a in attempts.iter().filter(|a| !failed.contains(a.key.as_str())) {
        let value = a.acked.as_ref().and_then(|acked| acked.value.clone());
        last.insert((a.key.as_str(), a.side), value.expect("a put"));
    }
    let mut expected: BTreeMap<String, BTreeSet<Vec<u8>>> = BTreeMap::new();
    let written_during_cut: BTreeSet<&str> = last
        .keys()
        .filter(|(_, side)| *side != "start")
        .map(|(key, _)| *key)
        .collect();
    for ((key, side), value) in last {
        if side == "start" && written_during_cut.contains(key) {
            continue;
        }
        expected.entry(key.to_string()).or_default().insert(value);
    }
    expected
}

fn skip_or_fail(why: &str) {
    assert!(
        std::env::var_os("EDDY_REQUIRE_NETNS").is_none(),
        "network namespaces are required (EDDY_REQUIRE_NETNS) but cannot be made: {why}"
    );
    eprintln!("skipping: cannot make network namespaces ({why}); needs root and iproute2");
}

#[test]
fn writes_on_both_sides_of_a_partition_survive_the_heal_on_every_node() {
    let net = match Net::create(NODES) {
        Ok(net) => net,
        Err(why) => return skip_or_fail(&why),
    };
    let nodes = cluster(&net);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let (mut attempts, contexts) = rt.block_on(write_initial(&nodes));
    net.isolate(ISOLATED);
    wait_liveness(&nodes, false);
    attempts.extend(rt.block_on(write_both_sides(&nodes, &contexts)));
    let acked_minority = attempts
        .iter()
        .filter(|a| a.side == "minority" && a.acked.is_some())
        .count();
    assert!(acked_minority > 0, "the cut-off node acknowledged no write");

    net.heal(ISOLATED);
    wait_liveness(&nodes, true);
    wait_no_transfers(&nodes);
    // Hinted handoff may already have brought every replica together;
    // read repair mends whatever it left.
    let repairs = rt.block_on(read_repair_until_converged(&nodes));
    println!("read repairs after the heal: {repairs}");

    let mut history = History::default();
    for a in &attempts {
        history.attempt(&a.key, a.context.as_ref(), a.acked.clone());
    }
    let expected = expected_values(&attempts);
    for key in all_keys() {
        let reads: Vec<Read> = nodes
            .iter()
            .map(|n| rt.block_on(read_all(n, &key)))
            .collect();
        for read in &reads {
            let live: Vec<&[u8]> = read.live.iter().map(Vec::as_slice).collect();
            history.check_read(&key, &read.vv, &live);
            assert_eq!(read, &reads[0], "{key}: nodes disagree");
        }
        if let Some(values) = expected.get(&key) {
            let got: BTreeSet<Vec<u8>> = reads[0].live.iter().cloned().collect();
            assert_eq!(&got, values, "{key}: siblings");
        }
    }
    assert!(
        expected.keys().any(|k| k.starts_with("both")),
        "every key both sides wrote had a failed write"
    );
    let acked = attempts.iter().filter(|a| a.acked.is_some()).count();
    eprintln!(
        "{acked} of {} writes acknowledged; {repairs} read repairs; {} of {} keys checked for exact siblings",
        attempts.len(),
        expected.len(),
        all_keys().len()
    );
}
