//! 2i queries on one node against a model: equality and range queries on
//! `_bin` and `_int` fields (numeric order, negatives), `$key` and
//! `$bucket`, return_terms, term_regex, pages joined by continuations,
//! deleted keys never returned, and bad queries refused with Riak's words.
//! The model test runs twice: over memory backends (a volatile bucket's
//! entries live in the backend) and over bitcask with side stores (a
//! persistent bucket's live in the vnode's side store, design note 027).

use std::sync::Arc;

use eddy_kv::*;
use eddy_model::index::{IndexPage, IndexRequest};
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};

fn node() -> Arc<Node> {
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: 16,
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        (backend, Actor(7000 + u64::from(p.0)))
    })
    .unwrap()
}

/// Where a test node keeps its data: in memory, or in bitcask with a side
/// store per vnode under a directory the test holds.
enum Stores {
    Memory,
    Side(tempfile::TempDir),
}

fn node_on(stores: &Stores) -> Arc<Node> {
    let Stores::Side(dir) = stores else {
        return node();
    };
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let config = NodeConfig {
        ring_size: 16,
        ..NodeConfig::default()
    };
    let env = eddy_side::SideEnv::open(&dir.path().join("side"), Default::default()).unwrap();
    let ring = eddy_ring::Ring::single(16, config.node_name.clone()).unwrap();
    let partitions: Vec<_> = ring.partitions().collect();
    Node::start_with(config, registry, ring, &partitions, |p| {
        let path = dir.path().join(format!("bitcask{}", p.0));
        let bitcask = eddy_bitcask::Bitcask::open(&path, Default::default()).unwrap();
        let side = env.open_vnode(u64::from(p.0), 1).unwrap();
        side.mark_built().unwrap();
        VnodeParts {
            backend: Arc::new(bitcask),
            side: Some(Arc::new(side)),
            actor: Actor(7000 + u64::from(p.0)),
            incarnation: 1,
        }
    })
    .unwrap()
}

fn bucket() -> BucketRef {
    BucketRef::default_type("coupons")
}

/// One stored object's index entries.
#[derive(Clone)]
struct Doc {
    key: String,
    affiliate: String,
    count: i64,
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

async fn store(node: &Arc<Node>, d: &Doc) {
    let mut content = Content::new(b"{}".to_vec());
    content.meta.indexes = vec![
        (b"affiliate_bin".to_vec(), d.affiliate.clone().into_bytes()),
        (b"count_int".to_vec(), d.count.to_string().into_bytes()),
    ];
    let req = PutRequest {
        bucket: bucket(),
        key: Some(d.key.clone().into_bytes()),
        context: None,
        content,
        options: PutOptions::default(),
    };
    node.put(req).await.unwrap();
}

async fn query(node: &Arc<Node>, req: IndexRequest) -> Result<IndexPage, KvError> {
    let node = node.clone();
    tokio::task::spawn_blocking(move || node.index_query_blocking(&bucket(), &req))
        .await
        .unwrap()
}

/// Every page of `req`, joined through continuations.
async fn all_pages(node: &Arc<Node>, mut req: IndexRequest) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    loop {
        let page = query(node, req.clone()).await.unwrap();
        if let Some(max) = req.max_results {
            assert!(page.results.len() <= max as usize);
        }
        out.extend(page.results);
        match page.continuation {
            Some(c) => req.continuation = Some(c),
            None => return out,
        }
    }
}

/// `req` streamed in steps of `step`, checked against its one-page
/// answer: the same entries in order, and its continuation on the last
/// page only.
async fn stream_matches_the_page(node: &Arc<Node>, req: IndexRequest, step: usize) {
    let page = query(node, req.clone()).await.unwrap();
    let node = node.clone();
    let (got, continuation) = tokio::task::spawn_blocking(move || {
        let (mut got, mut continuation) = (Vec::new(), None);
        node.index_stream_in_steps(&bucket(), &req, step, |page| {
            assert!(continuation.is_none(), "only the last page continues");
            assert!(!page.results.is_empty() || page.continuation.is_some());
            assert!(page.results.len() <= step);
            got.extend(page.results);
            continuation = page.continuation;
            true
        })
        .unwrap();
        (got, continuation)
    })
    .await
    .unwrap();
    assert_eq!(got, page.results, "steps of {step}");
    assert_eq!(continuation, page.continuation, "steps of {step}");
}

fn range(field: &str, lo: &str, hi: &str) -> IndexRequest {
    IndexRequest {
        field: field.as_bytes().to_vec(),
        start: lo.as_bytes().to_vec(),
        end: Some(hi.as_bytes().to_vec()),
        ..IndexRequest::default()
    }
}

fn eq(field: &str, term: &str) -> IndexRequest {
    IndexRequest {
        field: field.as_bytes().to_vec(),
        start: term.as_bytes().to_vec(),
        ..IndexRequest::default()
    }
}

fn keys(results: &[(Vec<u8>, Vec<u8>)]) -> Vec<String> {
    results
        .iter()
        .map(|(_, k)| String::from_utf8(k.clone()).unwrap())
        .collect()
}

async fn loaded(stores: &Stores, seed: u64, n: usize) -> (Arc<Node>, Vec<Doc>) {
    let node = node_on(stores);
    let mut rng = Lcg(seed);
    let mut docs = Vec::new();
    for i in 0..n {
        let d = Doc {
            key: format!("c{:03}", rng.next(1000) * 1000 + i as u64),
            affiliate: format!("a{}", rng.next(7)),
            count: rng.next(40) as i64 - 15,
        };
        store(&node, &d).await;
        docs.push(d);
    }
    // Some deleted: their entries and keys must not come back.
    let mut live = Vec::new();
    for d in docs {
        if rng.next(5) == 0 {
            let req = DeleteRequest {
                bucket: bucket(),
                key: d.key.clone().into_bytes(),
                context: None,
                options: DeleteOptions::default(),
            };
            node.delete(req).await.unwrap();
        } else {
            live.push(d);
        }
    }
    (node, live)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_match_the_model_page_by_page() {
    queries_match_the_model(|| Stores::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_from_side_stores_match_the_model_page_by_page() {
    queries_match_the_model(|| Stores::Side(tempfile::tempdir().unwrap())).await;
}

async fn queries_match_the_model(stores: impl Fn() -> Stores) {
    for seed in 1..=4u64 {
        let stores = stores();
        let (node, docs) = loaded(&stores, seed, 150).await;
        let mut rng = Lcg(seed * 31);
        for _ in 0..12 {
            let lo = rng.next(40) as i64 - 20;
            let hi = lo + rng.next(20) as i64;
            let mut want: Vec<(i64, String)> = docs
                .iter()
                .filter(|d| d.count >= lo && d.count <= hi)
                .map(|d| (d.count, d.key.clone()))
                .collect();
            want.sort();
            let mut req = range("count_int", &lo.to_string(), &hi.to_string());
            req.return_terms = true;
            // The unpaged answer, then pages of a random size joined.
            for max in [None, Some(1 + rng.next(9) as u32)] {
                req.max_results = max;
                let got = all_pages(&node, req.clone()).await;
                let got: Vec<(i64, String)> = got
                    .iter()
                    .map(|(t, k)| {
                        let t = std::str::from_utf8(t).unwrap().parse().unwrap();
                        (t, String::from_utf8(k.clone()).unwrap())
                    })
                    .collect();
                assert_eq!(got, want, "seed {seed}, {lo}..={hi}, pages of {max:?}");
                let step = 1 + rng.next(12) as usize;
                stream_matches_the_page(&node, req.clone(), step).await;
            }
        }
        for a in 0..7 {
            let affiliate = format!("a{a}");
            let mut want: Vec<String> = docs
                .iter()
                .filter(|d| d.affiliate == affiliate)
                .map(|d| d.key.clone())
                .collect();
            want.sort();
            let page = query(&node, eq("affiliate_bin", &affiliate)).await.unwrap();
            assert_eq!(keys(&page.results), want, "seed {seed}, {affiliate}");
            assert!(page.continuation.is_none());
        }
        let mut all: Vec<String> = docs.iter().map(|d| d.key.clone()).collect();
        all.sort();
        let mut req = eq("$bucket", "_");
        req.max_results = Some(7);
        assert_eq!(
            keys(&all_pages(&node, req.clone()).await),
            all,
            "seed {seed}"
        );
        stream_matches_the_page(&node, req.clone(), 3).await;
        req.max_results = None;
        stream_matches_the_page(&node, req, 4).await;
        let (lo, hi) = ("c200000", "c600000");
        let want: Vec<String> = all
            .iter()
            .filter(|k| k.as_str() >= lo && k.as_str() <= hi)
            .cloned()
            .collect();
        let mut req = range("$key", lo, hi);
        req.max_results = Some(5);
        assert_eq!(
            keys(&all_pages(&node, req.clone()).await),
            want,
            "seed {seed}"
        );
        req.max_results = Some(40);
        stream_matches_the_page(&node, req, 6).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn int_terms_sort_numerically_and_terms_come_back_only_for_ranges() {
    let node = node();
    for (k, n) in [("k9", 9), ("k10", 10), ("km", -3), ("k100", 100)] {
        let d = Doc {
            key: k.into(),
            affiliate: "x".into(),
            count: n,
        };
        store(&node, &d).await;
    }
    let mut req = range("count_int", "-5", "99");
    req.return_terms = true;
    let page = query(&node, req.clone()).await.unwrap();
    let terms: Vec<&[u8]> = page.results.iter().map(|(t, _)| t.as_slice()).collect();
    assert_eq!(terms, [&b"-3"[..], b"9", b"10"]);
    assert!(page.return_terms);
    // An equality query never returns terms (Riak's rule).
    let mut e = eq("count_int", "10");
    e.return_terms = true;
    let page = query(&node, e).await.unwrap();
    assert!(!page.return_terms);
    assert_eq!(keys(&page.results), ["k10"]);
    // Field names are case-insensitive, as Riak lowercases them.
    let page = query(&node, eq("COUNT_INT", " 9")).await.unwrap();
    assert_eq!(keys(&page.results), ["k9"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn term_regex_filters_bin_terms_and_keys() {
    let (node, docs) = loaded(&Stores::Memory, 9, 60).await;
    let mut req = range("affiliate_bin", "a0", "a9");
    req.term_regex = Some("^a[12]$".into());
    let got = query(&node, req).await.unwrap();
    let mut want: Vec<String> = docs
        .iter()
        .filter(|d| d.affiliate == "a1" || d.affiliate == "a2")
        .map(|d| d.key.clone())
        .collect();
    want.sort();
    let mut got = keys(&got.results);
    got.sort();
    assert_eq!(got, want);
    let mut req = range("$key", "c", "d");
    req.term_regex = Some("7$".into());
    let got = query(&node, req).await.unwrap();
    assert!(keys(&got.results).iter().all(|k| k.ends_with('7')));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_are_refused_with_a_clear_error() {
    let (node, _) = loaded(&Stores::Memory, 3, 20).await;
    let refused = |r: Result<IndexPage, KvError>| match r {
        Err(KvError::BadQuery(m)) => m,
        other => panic!("expected a bad query, got {other:?}"),
    };
    let m = refused(query(&node, eq("color", "red")).await);
    assert_eq!(m, "Unknown field type for field: 'color'.");
    let m = refused(query(&node, eq("count_int", "ten")).await);
    assert_eq!(m, "Could not parse field 'count_int', value 'ten'.");
    let mut re = range("count_int", "1", "2");
    re.term_regex = Some("1".into());
    let m = refused(query(&node, re).await);
    assert_eq!(m, "Can not use term regular expression in integer query");
    let mut re = range("affiliate_bin", "a", "b");
    re.term_regex = Some("(unclosed".into());
    assert!(refused(query(&node, re).await).starts_with("Invalid term regular expression"));
    let mut zero = eq("affiliate_bin", "a1");
    zero.max_results = Some(0);
    refused(query(&node, zero).await);
    // A continuation from another query, and one that is not ours at all.
    let mut first = range("affiliate_bin", "a0", "a9");
    first.max_results = Some(2);
    let c = query(&node, first).await.unwrap().continuation.unwrap();
    let mut other = range("affiliate_bin", "a0", "a5");
    other.continuation = Some(c);
    let m = refused(query(&node, other).await);
    assert_eq!(m, "the continuation belongs to another query");
    let mut junk = range("affiliate_bin", "a0", "a9");
    junk.continuation = Some(b"g2gCbQAAAAdyaXBqYWtl".to_vec());
    assert!(refused(query(&node, junk).await).starts_with("Invalid continuation"));
    let long = "x".repeat(20_000);
    let m = refused(query(&node, range("affiliate_bin", "a", &long)).await);
    assert_eq!(m, "range end of 20000 bytes exceeds the limit of 16384");
    // An unknown bucket type is the registry's error, not a query's.
    let node2 = node.clone();
    let typed = BucketRef::typed("nope", b"b".to_vec());
    let r = tokio::task::spawn_blocking(move || {
        node2.index_query_blocking(&typed, &eq("affiliate_bin", "a1"))
    })
    .await
    .unwrap();
    assert!(matches!(r, Err(KvError::Registry(_))), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_and_listings_are_counted_in_the_node_figures() {
    let (node, docs) = loaded(&Stores::Memory, 5, 30).await;
    let q = &node.metrics.queries;
    query(&node, eq("affiliate_bin", "a1")).await.unwrap();
    query(&node, eq("color", "red")).await.unwrap_err();
    assert_eq!((q.index_queries.get(), q.index_query_errors.get()), (2, 1));
    assert_eq!(q.index_queries_running.get(), 0);
    // One coverage plan folded: each of its vnodes read its index once
    // (the refused query planned nothing).
    let ring_size = 16;
    let plan = q.vnode_index_reads.get();
    assert!(plan > 0 && plan <= ring_size, "{plan}");

    let lister = node.clone();
    let listed = tokio::task::spawn_blocking(move || {
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        lister.list_keys_blocking(&bucket(), &tx).unwrap();
        drop(tx);
        let mut keys = 0;
        while let Ok(chunk) = rx.try_recv() {
            keys += chunk.len();
        }
        let buckets = lister.list_buckets_blocking("default").unwrap();
        let unknown = lister.list_buckets_blocking("no-such-type");
        (keys, buckets.len(), unknown.is_err())
    })
    .await
    .unwrap();
    assert_eq!(listed, (docs.len(), 1, true));
    assert_eq!((q.list_keys.get(), q.list_keys_errors.get()), (1, 0));
    assert_eq!(q.list_keys_running.get(), 0);
    assert_eq!((q.list_buckets.get(), q.list_buckets_errors.get()), (2, 1));
}
