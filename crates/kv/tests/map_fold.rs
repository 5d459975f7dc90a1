//! Map phases at the vnodes on one node (design note 017), with a test
//! runner that answers each object's key: every live key is mapped
//! exactly once, deleted and expired ones never, another bucket's never;
//! a key filter narrows the objects; a runner's failure, a node without a
//! runner and an exhausted timeout are errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use eddy_kv::*;
use eddy_model::keyfilter::KeyFilter;
use eddy_model::*;
use eddy_storage::ManualClock;
use eddy_vnode::mapphase::{MAP_BATCH, MapInput, MapRunner};
use serde_json::json;

mod expiring_support;

use expiring_support::{delete, invoices, node, node_with, put};

const TIMEOUT: Duration = Duration::from_secs(30);

/// Answers `[key]` for each object, or fails when the phase says `fail`;
/// counts its calls and checks it is never given a tombstone.
#[derive(Debug, Default)]
struct Keys {
    calls: AtomicUsize,
}

impl MapRunner for Keys {
    fn run(&self, phase: &[u8], inputs: Vec<MapInput>) -> Result<Vec<u8>, String> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        assert!(inputs.len() <= MAP_BATCH);
        assert!(inputs.iter().all(|i| !i.object.is_deleted()));
        if phase == b"fail" {
            return Err("the phase failed".into());
        }
        let keys: Vec<String> = inputs
            .iter()
            .map(|i| String::from_utf8(i.key.clone()).unwrap())
            .collect();
        Ok(serde_json::to_vec(&keys).unwrap())
    }
}

/// The keys the runner answered, sorted (duplicates kept).
async fn mapped(
    node: &Arc<Node>,
    filter: Option<serde_json::Value>,
    phase: &'static [u8],
    timeout: Duration,
) -> Result<Vec<String>, KvError> {
    let n = node.clone();
    let lists = tokio::task::spawn_blocking(move || {
        let filter = filter.map(|f| KeyFilter::parse(&f).unwrap());
        n.map_coverage_blocking(&invoices(), filter.as_ref(), phase, timeout)
    })
    .await
    .unwrap()?;
    let mut keys: Vec<String> = lists
        .iter()
        .flat_map(|l| serde_json::from_slice::<Vec<String>>(l).unwrap())
        .collect();
    keys.sort();
    Ok(keys)
}

fn names(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("k{i:04}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_live_key_is_mapped_once_and_deleted_ones_never() {
    let runner = Arc::new(Keys::default());
    let node = node_with(ManualClock::new(1_000), 0, Some(runner.clone()));
    let all = names(0..1200);
    for k in &all {
        put(&node, invoices(), k).await;
    }
    put(&node, BucketRef::default_type("other"), "elsewhere").await;
    for k in all.iter().step_by(5) {
        delete(&node, k).await;
    }
    let live: Vec<String> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 5 != 0)
        .map(|(_, k)| k.clone())
        .collect();
    assert_eq!(mapped(&node, None, b"keys", TIMEOUT).await.unwrap(), live);
    // Batches of at most MAP_BATCH (the runner checks), so several calls.
    assert!(runner.calls.load(Ordering::Relaxed) >= live.len().div_ceil(MAP_BATCH));
    let filter = json!([["ends_with", "7"]]);
    let want: Vec<String> = live.iter().filter(|k| k.ends_with('7')).cloned().collect();
    let got = mapped(&node, Some(filter), b"keys", TIMEOUT).await.unwrap();
    assert_eq!(got, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_objects_are_never_mapped() {
    let clock = ManualClock::new(1_000);
    let node = node_with(clock.clone(), 60, Some(Arc::new(Keys::default())));
    put(&node, invoices(), "old").await;
    clock.advance(61);
    put(&node, invoices(), "new").await;
    assert_eq!(
        mapped(&node, None, b"keys", TIMEOUT).await.unwrap(),
        vec!["new"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_no_runner_and_the_timeout_are_errors() {
    let without = node(ManualClock::new(1_000), 0);
    put(&without, invoices(), "a").await;
    let err = mapped(&without, None, b"keys", TIMEOUT).await.unwrap_err();
    assert!(err.to_string().contains("no map phase runner"), "{err}");
    let node = node_with(ManualClock::new(1_000), 0, Some(Arc::new(Keys::default())));
    put(&node, invoices(), "a").await;
    let err = mapped(&node, None, b"fail", TIMEOUT).await.unwrap_err();
    assert!(
        matches!(&err, KvError::BadQuery(m) if m == "the phase failed"),
        "{err}"
    );
    let err = mapped(&node, None, b"keys", Duration::ZERO)
        .await
        .unwrap_err();
    assert!(matches!(err, KvError::Timeout), "{err}");
    // An empty bucket maps nothing.
    let n = node.clone();
    let empty = tokio::task::spawn_blocking(move || {
        n.map_coverage_blocking(&BucketRef::default_type("none"), None, b"keys", TIMEOUT)
    })
    .await
    .unwrap()
    .unwrap();
    assert!(empty.is_empty());
}

/// Writes `{}` under `key` in `invoices` with the index entry
/// `tag_bin: tag`.
async fn put_tagged(node: &Arc<Node>, key: &str, tag: &str) {
    let mut content = eddy_object::Content::new(b"{}".to_vec());
    content.meta.indexes = vec![(b"tag_bin".to_vec(), tag.as_bytes().to_vec())];
    let req = PutRequest {
        bucket: invoices(),
        key: Some(key.as_bytes().to_vec()),
        context: None,
        content,
        options: PutOptions::default(),
    };
    node.put(req).await.unwrap();
}

/// The keys the runner answered for the objects of the 2i range query
/// `tag_bin` `start`..`end`, sorted.
async fn index_mapped(node: &Arc<Node>, start: &str, end: &str) -> Vec<String> {
    let req = eddy_model::index::IndexRequest {
        field: b"tag_bin".to_vec(),
        start: start.as_bytes().to_vec(),
        end: Some(end.as_bytes().to_vec()),
        ..Default::default()
    };
    let n = node.clone();
    let lists = tokio::task::spawn_blocking(move || {
        n.map_index_coverage_blocking(&invoices(), &req, b"keys", TIMEOUT)
    })
    .await
    .unwrap()
    .unwrap();
    let mut keys: Vec<String> = lists
        .iter()
        .flat_map(|l| serde_json::from_slice::<Vec<String>>(l).unwrap())
        .collect();
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_input_maps_each_live_entrys_object_once() {
    let clock = ManualClock::new(1_000);
    let node = node_with(clock.clone(), 60, Some(Arc::new(Keys::default())));
    let all = names(0..900);
    for (i, k) in all.iter().enumerate() {
        put_tagged(&node, k, &format!("t{}", i % 3)).await;
    }
    for k in all.iter().step_by(5) {
        delete(&node, k).await;
    }
    let live = |tags: &[usize]| -> Vec<String> {
        let mut keys: Vec<String> = (0..all.len())
            .filter(|i| i % 5 != 0 && tags.contains(&(i % 3)))
            .map(|i| all[i].clone())
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(index_mapped(&node, "t1", "t1").await, live(&[1]));
    assert_eq!(index_mapped(&node, "t0", "t1").await, live(&[0, 1]));
    clock.advance(61);
    put_tagged(&node, "fresh", "t1").await;
    assert_eq!(
        index_mapped(&node, "t0", "t2").await,
        vec!["fresh"],
        "expired objects are not mapped"
    );
}
