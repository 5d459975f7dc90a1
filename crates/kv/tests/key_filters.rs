//! Filtered key listing on one node, checked against the test's own
//! filtering of the full key list: Riak's documented examples and a range
//! of other filters, tombstones (kept forever) and expired objects never
//! listed, another bucket's keys never listed, bad filters refused as bad
//! queries, and the timeout.

use std::sync::Arc;
use std::time::Duration;

use eddy_kv::*;
use eddy_model::keyfilter::KeyFilter;
use eddy_model::*;
use eddy_storage::ManualClock;
use serde_json::json;

mod expiring_support;

use expiring_support::{delete, invoices, node, put};

const TIMEOUT: Duration = Duration::from_secs(30);

/// Every live key of the bucket, through plain list keys.
async fn all_keys(node: &Arc<Node>) -> Vec<Vec<u8>> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let n = node.clone();
    let fold = tokio::task::spawn_blocking(move || n.list_keys_blocking(&invoices(), &tx));
    let mut keys = Vec::new();
    while let Some(chunk) = rx.recv().await {
        keys.extend(chunk);
    }
    fold.await.unwrap().unwrap();
    keys.sort();
    keys
}

async fn filtered(
    node: &Arc<Node>,
    filter: &KeyFilter,
    timeout: Duration,
) -> Result<Vec<Vec<u8>>, KvError> {
    let (n, f) = (node.clone(), filter.clone());
    tokio::task::spawn_blocking(move || n.list_keys_filtered_blocking(&invoices(), &f, timeout))
        .await
        .unwrap()
}

/// A small deterministic generator (the seed reproduces a run).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// Invoice keys (`customer-YYYYMMDD`) and a few others; a fifth of them
/// deleted. Returns the node and the deleted keys.
async fn loaded(seed: u64) -> (Arc<Node>, Vec<String>) {
    let node = node(ManualClock::new(1_000), 0);
    let customers = ["basho", "google", "yahoo", "Acme_Solutions", "riak%20kv"];
    let mut rng = Lcg(seed);
    let mut keys: Vec<String> = (0..200)
        .map(|_| {
            let customer = customers[rng.next(5) as usize];
            let date = 2009_0000 + rng.next(3) * 1_0000 + (1 + rng.next(12)) * 100;
            format!("{customer}-{}", date + 1 + rng.next(28))
        })
        .collect();
    keys.extend(["17", "-3", "x/42", "basho-20100603"].map(String::from));
    for key in &keys {
        put(&node, invoices(), key).await;
    }
    // Another bucket's keys are not this one's.
    put(&node, BucketRef::default_type("other"), "basho-elsewhere").await;
    let mut deleted = Vec::new();
    for key in keys.iter().filter(|_| rng.next(5) == 0) {
        delete(&node, key).await;
        deleted.push(key.clone());
    }
    (node, deleted)
}

fn filters() -> Vec<serde_json::Value> {
    vec![
        // Riak's "Using Key Filters" examples.
        json!([["tokenize", "-", 1], ["eq", "basho"]]),
        json!([["tokenize", "-", 2], ["between", "20100101", "20101231"]]),
        json!([["tokenize", "-", 1], ["to_lower"], ["matches", "solutions"]]),
        json!([["ends_with", "0603"]]),
        // And more of what filters do.
        json!([
            ["tokenize", "-", 2],
            ["string_to_int"],
            ["greater_than_eq", 20100000]
        ]),
        json!([[
            "or",
            [["starts_with", "g"]],
            [["string_to_int"], ["less_than", 0]]
        ]]),
        json!([[
            "not",
            [["tokenize", "-", 1], ["set_member", "basho", "yahoo"]]
        ]]),
        json!([["urldecode"], ["matches", " "]]),
        json!([["similar_to", "basho-20100101", 3]]),
        json!([["string_to_int"]]),
        json!([]),
        json!([["eq", "nothing"]]),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_listings_match_filtering_the_full_listing() {
    for seed in 1..=3u64 {
        let (node, deleted) = loaded(seed).await;
        let all = all_keys(&node).await;
        assert!(all.len() > 100, "{} keys", all.len());
        for json in filters() {
            let filter = KeyFilter::parse(&json).unwrap();
            let want: Vec<Vec<u8>> = all.iter().filter(|k| filter.matches(k)).cloned().collect();
            let got = filtered(&node, &filter, TIMEOUT).await.unwrap();
            assert_eq!(got, want, "seed {seed}, filter {json}");
            for key in &deleted {
                assert!(!got.contains(&key.as_bytes().to_vec()), "{key} was deleted");
            }
            assert!(!got.contains(&b"basho-elsewhere".to_vec()));
        }
        // The examples find what they describe.
        let basho = KeyFilter::parse(&filters()[0]).unwrap();
        let got = filtered(&node, &basho, TIMEOUT).await.unwrap();
        assert!(!got.is_empty() && got.iter().all(|k| k.starts_with(b"basho-")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tombstones_are_never_listed_and_a_key_written_again_is() {
    let node = node(ManualClock::new(1_000), 0);
    for key in ["basho-1", "basho-2", "basho-3"] {
        put(&node, invoices(), key).await;
    }
    delete(&node, "basho-2").await;
    let f = KeyFilter::parse(&json!([["starts_with", "basho-"]])).unwrap();
    let got = filtered(&node, &f, TIMEOUT).await.unwrap();
    assert_eq!(got, [b"basho-1".to_vec(), b"basho-3".to_vec()]);
    put(&node, invoices(), "basho-2").await;
    assert_eq!(filtered(&node, &f, TIMEOUT).await.unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_objects_are_never_listed() {
    let clock = ManualClock::new(1_000);
    let node = node(clock.clone(), 60);
    for i in 0..5 {
        put(&node, invoices(), &format!("a-{i}")).await;
    }
    clock.advance(61);
    put(&node, invoices(), "a-5").await;
    let f = KeyFilter::parse(&json!([["tokenize", "-", 1], ["eq", "a"]])).unwrap();
    assert_eq!(
        filtered(&node, &f, TIMEOUT).await.unwrap(),
        [b"a-5".to_vec()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_filters_are_bad_queries_and_time_runs_out() {
    let node = node(ManualClock::new(1_000), 0);
    put(&node, invoices(), "basho-1").await;
    for (json, words) in [
        (
            json!([["tokenise", "-", 1]]),
            "unknown key filter \"tokenise\"",
        ),
        (json!([["tokenize", "-", 0]]), "\"tokenize\": argument 2"),
        (
            json!([["matches", "("]]),
            "\"matches\": invalid regular expression",
        ),
    ] {
        let err = KvError::from(KeyFilter::parse(&json).unwrap_err());
        assert!(
            matches!(&err, KvError::BadQuery(m) if m.contains(words)),
            "{json}: {err:?}"
        );
    }
    let f = KeyFilter::parse(&json!([])).unwrap();
    let err = filtered(&node, &f, Duration::ZERO).await.unwrap_err();
    assert!(matches!(err, KvError::Timeout), "{err:?}");
}
