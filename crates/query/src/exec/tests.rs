//! The executor against an in-memory source: Riak's documented answers
//! for built-ins, JavaScript, links, re-reduce and bad input.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use eddy_model::keyfilter::KeyFilter;
use eddy_vnode::mapphase::{MapInput, MapRunner};

use eddy_object::{Actor, Content, Dot, Link, RiakObject, Sibling, VersionVector};
use serde_json::json;

use super::*;
use crate::job::parse_job;
use crate::js::JsLimits;

#[derive(Default)]
struct Memory {
    objects: BTreeMap<(String, Vec<u8>, Vec<u8>), RiakObject>,
    /// Runs map phases "at the vnodes" (started on first use).
    runner: std::sync::OnceLock<crate::vnode_map::Runner>,
    /// How many times a map ran at the vnodes, and objects were fetched.
    at_vnodes: AtomicUsize,
    fetches: AtomicUsize,
    /// Vnode map outputs longer than this many bytes fail as too large.
    vnode_output_max: Option<usize>,
    /// `(term, key)` entries of every index but `$key`.
    index: Vec<(&'static str, &'static str)>,
}

impl Memory {
    fn put(&mut self, bucket: &str, key: &str, value: &str) {
        self.put_with(bucket, key, Content::new(value));
    }

    fn put_with(&mut self, bucket: &str, key: &str, content: Content) {
        let obj = RiakObject {
            vv: VersionVector::new(),
            siblings: vec![Sibling {
                dot: Dot {
                    actor: Actor(1),
                    counter: 1,
                },
                content,
            }],
        };
        self.objects
            .insert(("default".into(), bucket.into(), key.into()), obj);
    }
}

impl Memory {
    /// The live objects of `bucket` whose keys `filter` passes.
    fn live_objects(&self, bucket: &BucketRef, filter: Option<&Value>) -> Vec<MapInput> {
        let filter = filter.map(|f| KeyFilter::parse(f).unwrap());
        self.objects
            .iter()
            .filter(|((t, b, k), o)| {
                *t == bucket.bucket_type
                    && *b == bucket.bucket
                    && !o.is_deleted()
                    && filter.as_ref().is_none_or(|f| f.matches(k))
            })
            .map(|((_, _, k), o)| MapInput {
                bucket: bucket.clone(),
                key: k.clone(),
                object: o.clone(),
            })
            .collect()
    }

    /// The live objects of an index input's entries, one per entry.
    fn indexed_objects(&self, input: &IndexInput) -> Result<Vec<MapInput>, MapRedError> {
        let b = &input.bucket;
        Ok(self
            .index_entries(input)?
            .into_iter()
            .filter_map(|(_, key)| {
                let k = (b.bucket_type.clone(), b.bucket.clone(), key.clone());
                let object = self.objects.get(&k).filter(|o| !o.is_deleted())?;
                Some(MapInput {
                    bucket: b.clone(),
                    key,
                    object: object.clone(),
                })
            })
            .collect())
    }
}

impl Source for Memory {
    fn keys(&self, bucket: &BucketRef) -> Result<Vec<Vec<u8>>, MapRedError> {
        Ok(self
            .objects
            .keys()
            .filter(|(t, b, _)| *t == bucket.bucket_type && *b == bucket.bucket)
            .map(|(_, _, k)| k.clone())
            .collect())
    }

    fn filtered_keys(
        &self,
        bucket: &BucketRef,
        filter: &Value,
        _deadline: Instant,
    ) -> Result<Vec<Vec<u8>>, MapRedError> {
        // The test filter: [["starts_with", P]].
        let prefix = filter[0][1].as_str().unwrap().as_bytes().to_vec();
        Ok(self
            .keys(bucket)?
            .into_iter()
            .filter(|k| k.starts_with(&prefix))
            .collect())
    }

    /// `$key`: the query's start names one key; other fields: the
    /// entries of `index` from start to end.
    fn index_entries(&self, input: &IndexInput) -> Result<Vec<IndexEntry>, MapRedError> {
        if input.field == b"$key" {
            return Ok(vec![(Vec::new(), input.start.clone())]);
        }
        let end = input.end.as_ref().unwrap_or(&input.start);
        let mut entries: Vec<_> = self
            .index
            .iter()
            .filter(|(t, _)| {
                t.as_bytes() >= input.start.as_slice() && t.as_bytes() <= end.as_slice()
            })
            .map(|(t, k)| {
                let term = if input.return_terms {
                    t.as_bytes().to_vec()
                } else {
                    Vec::new()
                };
                (term, k.as_bytes().to_vec())
            })
            .collect();
        entries.sort();
        Ok(entries)
    }

    /// As a node's vnodes run it: the live objects of the bucket that the
    /// filter passes, or of the index input's entries, through the
    /// vnodes' runner, in batches of two (so the outputs of several calls
    /// are joined).
    fn map_at_vnodes(
        &self,
        inputs: VnodeInputs<'_>,
        phase: &[u8],
        _deadline: Instant,
    ) -> Result<Vec<Value>, MapRedError> {
        self.at_vnodes.fetch_add(1, Ordering::Relaxed);
        let runner = self
            .runner
            .get_or_init(|| crate::vnode_map::Runner::new(executor()));
        let inputs = match inputs {
            VnodeInputs::Bucket { bucket, filter } => self.live_objects(bucket, filter),
            VnodeInputs::Index(input) => self.indexed_objects(input)?,
        };
        let mut out = Vec::new();
        for batch in inputs.chunks(2) {
            let list = runner
                .run(phase, batch.to_vec())
                .map_err(|e| crate::vnode_map::failure(&e))?;
            if let Some(max) = self.vnode_output_max.filter(|m| list.len() > *m) {
                let size = list.len();
                return Err(eddy_model::KvError::TooLarge {
                    what: "map output",
                    size,
                    max,
                }
                .into());
            }
            out.extend(serde_json::from_slice::<Vec<Value>>(&list).unwrap());
        }
        Ok(out)
    }

    fn fetch(
        &self,
        inputs: &[BKey],
        _r: u32,
        _deadline: Instant,
    ) -> Result<Vec<Option<RiakObject>>, MapRedError> {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        Ok(inputs
            .iter()
            .map(|b| {
                let k = (
                    b.bucket.bucket_type.clone(),
                    b.bucket.bucket.clone(),
                    b.key.clone(),
                );
                self.objects.get(&k).cloned()
            })
            .collect())
    }
}

fn executor() -> Executor {
    let limits = JsLimits {
        threads: 2,
        memory_bytes: 16 << 20,
        call_timeout: Duration::from_millis(500),
        queue: 8,
    };
    Executor::new(Some(JsPool::start(limits).unwrap()))
}

fn phase_time() -> Histogram {
    Histogram::new(
        eddy_metrics::Unit::Microseconds,
        eddy_metrics::TIME_US_BOUNDS,
    )
}

fn run(mem: &Memory, job: Value) -> Result<Vec<(usize, Vec<Value>)>, MapRedError> {
    let job = parse_job(job.to_string().as_bytes())?;
    executor().run(&job, mem, &phase_time()).map(|o| o.phases)
}

fn last(mem: &Memory, job: Value) -> Vec<Value> {
    run(mem, job).unwrap().pop().unwrap().1
}

fn numbers() -> Memory {
    let mut m = Memory::default();
    m.put("b", "foo", "2");
    m.put("b", "bar", "3");
    m.put("b", "baz", "4");
    m
}

fn erl(kind: &str, function: &str) -> Value {
    json!({kind: {"language": "erlang", "module": "riak_kv_mapreduce", "function": function}})
}

#[test]
fn erlang_map_then_set_union() {
    let mut m = numbers();
    m.put("b", "bar", "2");
    let job = json!({"inputs": [["b", "foo"], ["b", "bar"], ["b", "baz"]],
        "query": [erl("map", "map_object_value"), erl("reduce", "reduce_set_union")]});
    assert_eq!(last(&m, job), vec![json!("2"), json!("4")]);
}

#[test]
fn each_phase_that_ends_is_timed() {
    let m = numbers();
    let job = json!({"inputs": [["b", "foo"], ["b", "bar"]],
        "query": [erl("map", "map_object_value"), erl("reduce", "reduce_set_union")]});
    let job = parse_job(job.to_string().as_bytes()).unwrap();
    let times = phase_time();
    executor().run(&job, &m, &times).unwrap();
    assert_eq!(times.count(), 2);
    let failing = json!({"inputs": [["b", "foo"]], "query": [
        erl("map", "map_object_value"),
        {"reduce": {"language": "javascript", "source": "function (v) { throw 'no'; }"}}]});
    let failing = parse_job(failing.to_string().as_bytes()).unwrap();
    assert!(executor().run(&failing, &m, &times).is_err());
    assert_eq!(times.count(), 3, "the failed phase is not timed");
}

#[test]
fn javascript_named_and_source_over_a_bucket() {
    let m = numbers();
    let job = json!({"inputs": "b", "query": [
        {"map": {"language": "javascript", "name": "Riak.mapValuesJson"}},
        {"reduce": {"language": "javascript", "name": "Riak.reduceSum"}}]});
    assert_eq!(last(&m, job), vec![json!(9)]);
    let job = json!({"inputs": "b", "query": [
        {"map": {"language": "javascript", "source": "function (v) { return [1]; }"}},
        {"reduce": {"language": "javascript", "name": "Riak.reduceSum"}}]});
    assert_eq!(last(&m, job), vec![json!(3)]);
}

#[test]
fn keydata_and_arg_reach_the_function() {
    let m = numbers();
    let inputs: Vec<Value> = [5, 10, 15, -15, -5]
        .iter()
        .map(|n| json!(["b", "foo", n]))
        .collect();
    let job = json!({"inputs": inputs, "query": [
        {"map": {"language": "javascript", "source": "function (v, kd) { return [kd]; }"}},
        {"reduce": {"language": "javascript", "name": "Riak.reduceSum"}}]});
    assert_eq!(last(&m, job), vec![json!(10)]);
}

#[test]
fn missing_objects_are_not_found_markers_that_filters_drop() {
    let m = numbers();
    let job = json!({"inputs": [["b", "foo"], ["b", "nope"]], "query": [
        {"map": {"language": "javascript", "name": "Riak.mapValuesJson"}},
        {"reduce": {"language": "javascript", "name": "Riak.filterNotFound"}}]});
    assert_eq!(last(&m, job), vec![json!(2)]);
    let job = json!({"inputs": [["b", "nope", "kd"]], "query": [
        {"map": {"language": "javascript", "name": "Riak.mapValues", "keep": true}}]});
    let got = last(&m, job);
    assert_eq!(got[0]["not_found"]["key"], json!("nope"));
    assert_eq!(got[0]["not_found"]["keydata"], json!("kd"));
}

#[test]
fn kept_phases_answer_in_order_and_phaseless_jobs_list_inputs() {
    let m = numbers();
    let job = json!({"inputs": [["b", "foo"]], "query": [
        {"map": {"language": "javascript", "name": "Riak.mapValuesJson", "keep": true}},
        {"reduce": {"language": "javascript", "name": "Riak.reduceSum", "keep": true}}]});
    assert_eq!(
        run(&m, job).unwrap(),
        vec![(0, vec![json!(2)]), (1, vec![json!(2)])]
    );
    let got = run(&m, json!({"inputs": "b", "query": []})).unwrap();
    assert_eq!(
        got,
        vec![(
            0,
            vec![
                json!(["b", "bar"]),
                json!(["b", "baz"]),
                json!(["b", "foo"])
            ]
        )]
    );
}

#[test]
fn a_reduce_over_nothing_still_answers() {
    let m = Memory::default();
    let job = json!({"inputs": "empty", "query": [
        {"map": {"language": "javascript", "name": "Riak.mapValuesJson"}},
        {"reduce": {"language": "javascript", "name": "Riak.reduceSum"}}]});
    assert_eq!(last(&m, job), vec![json!(0)]);
}

#[test]
fn reduces_re_reduce_over_large_inputs() {
    let mut m = Memory::default();
    let n = REDUCE_BATCH * 2 + 7;
    for i in 0..n {
        m.put("big", &format!("k{i}"), "1");
    }
    let job = json!({"inputs": "big", "query": [
        {"map": {"language": "javascript", "name": "Riak.mapValuesJson"}},
        {"reduce": {"language": "javascript", "name": "Riak.reduceSum", "keep": true}},
        {"reduce": {"language": "erlang", "module": "riak_kv_mapreduce",
            "function": "reduce_count_inputs", "keep": true}}]});
    let got = run(&m, job).unwrap();
    assert_eq!(got[0].1, vec![json!(n)]);
    // One earlier output (an integer) counts as itself.
    assert_eq!(got[1].1, vec![json!(n)]);
}

#[test]
fn link_phases_follow_matching_links() {
    let mut m = numbers();
    let mut c = Content::new("x");
    for (k, tag) in [("foo1", ""), ("foo2", "tag"), ("foo3", "other")] {
        c.meta.links.push(Link {
            bucket: b"b".to_vec(),
            key: k.as_bytes().to_vec(),
            tag: tag.as_bytes().to_vec(),
        });
    }
    m.put_with("b", "src", c);
    let all = last(
        &m,
        json!({"inputs": [["b", "src"]], "query": [{"link": {"bucket": "b"}}]}),
    );
    assert_eq!(all.len(), 3);
    let tagged = last(
        &m,
        json!({"inputs": [["b", "src"]], "query": [{"link": {"bucket": "_", "tag": "tag"}}]}),
    );
    assert_eq!(tagged, vec![json!(["b", "foo2", "tag"])]);
}

#[test]
fn key_filter_and_index_inputs_come_from_the_source() {
    let m = numbers();
    let job = json!({"inputs": {"bucket": "b", "key_filters": [["starts_with", "ba"]]},
        "query": [{"map": {"language": "javascript", "source": "function (v) { return [v.key]; }"}}]});
    let mut got = last(&m, job);
    got.sort_by(crate::term_order::compare);
    assert_eq!(got, vec![json!("bar"), json!("baz")]);
    let job = json!({"inputs": {"bucket": "b", "index": "$key", "key": "foo"},
        "query": [erl("map", "map_object_value")]});
    assert_eq!(last(&m, job), vec![json!("2")]);
}

fn index_fn(function: &str, arg: Value) -> Value {
    json!({"reduce": {"language": "erlang", "module": "riak_kv_mapreduce",
        "function": function, "arg": arg}})
}

#[test]
fn index_terms_feed_the_index_reduces() {
    let mut m = numbers();
    m.index = vec![
        ("1982|SMITH", "p1"),
        ("1975|JONES", "p2"),
        ("1990|SMITH", "p3"),
    ];
    let input = json!({"bucket": "b", "index": "person_bin", "start": "0", "end": "9",
        "return_terms": true});
    let bare = last(&m, json!({"inputs": input, "query": []}));
    assert_eq!(bare[0], json!(["b", "p2", {"term": "1975|JONES"}]));
    let extract = index_fn(
        "reduce_index_extractregex",
        json!([
            "term",
            ["year", "name"],
            "this",
            "^(?<year>[0-9]+)\\|(?<name>.*)$"
        ]),
    );
    let count = index_fn(
        "reduce_index_countby",
        json!({"args": ["name", "binary"], "reduce_phase_batch_size": 1}),
    );
    let job = json!({"inputs": input, "query": [extract, count]});
    assert_eq!(
        last(&m, job),
        vec![json!(["JONES", 1]), json!(["SMITH", 2])]
    );
    let oldest = index_fn("reduce_index_min", json!({"attribute": "year", "count": 1}));
    let job = json!({"inputs": input, "query": [extract, oldest]});
    let want = json!(["b", "p2", {"year": "1975", "name": "JONES"}]);
    assert_eq!(last(&m, job), vec![want]);
    let plain = json!({"bucket": "b", "index": "person_bin", "start": "0", "end": "9"});
    let job = json!({"inputs": plain, "query": [extract]});
    assert_eq!(
        last(&m, job),
        Vec::<Value>::new(),
        "no terms, nothing to extract"
    );
}

#[test]
fn returned_terms_are_integers_binaries_or_keys() {
    assert_eq!(term_json(Some(FieldKind::Int), b"-42", b"k"), json!(-42));
    assert_eq!(term_json(Some(FieldKind::Bin), b"42", b"k"), json!("42"));
    assert_eq!(
        term_json(Some(FieldKind::Bin), &[0xff], b"k"),
        json!({"base64": "/w=="})
    );
    assert_eq!(term_json(None, b"", b"k"), json!("k"));
}

#[test]
fn a_bad_index_arg_fails_its_phase_before_anything_runs() {
    let m = numbers();
    let job = json!({"inputs": [["b", "foo"]], "query": [
        erl("map", "map_object_value"),
        index_fn("reduce_index_max", json!(["int", "many"]))]});
    let err = run(&m, job).unwrap_err();
    let MapRedError::Phase {
        phase,
        message,
        input,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*phase, 1);
    assert!(
        message.starts_with("reduce_index_max: bad arg \"count\""),
        "{message}"
    );
    assert_eq!(*input, json!(["int", "many"]));
    assert_eq!(m.fetches.load(Ordering::Relaxed), 0);
    let job =
        json!({"inputs": [["b", "foo"]], "query": [erl("reduce", "reduce_index_applybloom")]});
    assert!(run(&m, job).unwrap_err().to_string().contains("undef"));
}

#[test]
fn failures_name_the_phase_and_input() {
    let m = numbers();
    let job = json!({"inputs": [["b", "foo"]], "query": [
        {"map": {"language": "javascript", "name": "Riak.mapValuesJson"}},
        {"map": {"language": "javascript", "source": "function (v) { throw new Error('bad'); }"}}]});
    let err = run(&m, job).unwrap_err();
    let MapRedError::Phase {
        phase,
        message,
        input,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*phase, 1);
    assert!(message.contains("input must be"), "{message}");
    assert_eq!(*input, json!(2));
    let job = json!({"inputs": [["b", "foo"]], "query": [
        {"map": {"language": "javascript", "source": "function (v) { throw new Error('bad'); }"}}]});
    let err = run(&m, job).unwrap_err();
    assert!(
        err.to_string().contains("\"phase\":0") && err.to_string().contains("bad"),
        "{err}"
    );
    let err = run(
        &m,
        json!({"inputs": "b", "query": [erl("map", "map_nothing")]}),
    )
    .unwrap_err();
    assert!(
        matches!(err, MapRedError::BadJob(ref t) if t.contains("undef")),
        "{err}"
    );
}

#[test]
fn a_job_past_its_timeout_stops() {
    let m = numbers();
    let job = json!({"inputs": [["b", "foo"]], "timeout": 100, "query": [
        {"map": {"language": "javascript", "source": "function (v) { var t = Date.now(); while (Date.now() - t < 400) {} return [1]; }"}}]});
    let err = run(&m, job).unwrap_err();
    assert!(matches!(err, MapRedError::Timeout), "{err}");
}

#[test]
fn javascript_can_be_disabled() {
    let m = numbers();
    let job = parse_job(br#"{"inputs":"b","query":[{"map":{"name":"Riak.mapValues"}}]}"#).unwrap();
    let err = Executor::new(None)
        .run(&job, &m, &phase_time())
        .unwrap_err();
    assert!(err.to_string().contains("disabled"));
}

#[test]
fn stored_functions_are_read_from_their_object() {
    let mut m = numbers();
    m.put("fns", "one", "function (v) { return [v.key]; }");
    let job = json!({"inputs": [["b", "foo"]], "query": [
        {"map": {"language": "javascript", "bucket": "fns", "key": "one"}}]});
    assert_eq!(last(&m, job), vec![json!("foo")]);
    let job = json!({"inputs": [["b", "foo"]], "query": [
        {"map": {"language": "javascript", "bucket": "fns", "key": "none"}}]});
    assert!(
        run(&m, job)
            .unwrap_err()
            .to_string()
            .contains("no stored function")
    );
}

#[test]
fn map_phase_zero_over_a_bucket_or_key_filter_runs_at_the_vnodes() {
    let m = numbers();
    let job = json!({"inputs": "b", "query": [erl("map", "map_object_value"),
        erl("reduce", "reduce_sort")]});
    assert_eq!(last(&m, job), vec![json!("2"), json!("3"), json!("4")]);
    let job = json!({"inputs": {"bucket": "b", "key_filters": [["ends_with", "r"]]},
        "query": [{"map": {"language": "javascript", "name": "Riak.mapValuesJson", "keep": true}}]});
    assert_eq!(run(&m, job).unwrap(), vec![(0, vec![json!(3)])]);
    assert_eq!(m.at_vnodes.load(Ordering::Relaxed), 2);
    assert_eq!(m.fetches.load(Ordering::Relaxed), 0);
}

#[test]
fn map_phase_zero_over_an_index_input_without_terms_runs_at_the_vnodes() {
    let mut m = numbers();
    m.index = vec![("x1", "foo"), ("x2", "bar"), ("x2", "foo"), ("y", "baz")];
    let input = json!({"bucket": "b", "index": "f_bin", "start": "x", "end": "x9"});
    let query = json!([erl("map", "map_object_value"), erl("reduce", "reduce_sort")]);
    let at_vnodes = last(&m, json!({"inputs": input, "query": query}));
    assert_eq!(m.at_vnodes.load(Ordering::Relaxed), 1);
    assert_eq!(m.fetches.load(Ordering::Relaxed), 0);
    // One input per entry: foo matches twice, as the query lists it.
    assert_eq!(at_vnodes, vec![json!("2"), json!("2"), json!("3")]);
    let coordinated = last(&m, json!({"inputs": input, "r": 2, "query": query}));
    assert_eq!(
        at_vnodes, coordinated,
        "the coordinated path answers the same"
    );
    // Inputs with terms carry keydata, which a vnode's map does not give.
    let with_terms = json!({"bucket": "b", "index": "f_bin", "start": "x", "end": "x9",
        "return_terms": true});
    let job = json!({"inputs": with_terms, "query": query});
    assert_eq!(last(&m, job), coordinated);
    assert_eq!(m.at_vnodes.load(Ordering::Relaxed), 1);
}

#[test]
fn stored_functions_run_at_the_vnodes_as_their_source() {
    let mut m = numbers();
    m.put(
        "fns",
        "one",
        "function (v, kd, arg) { return [v.key + arg]; }",
    );
    let job = json!({"inputs": "b", "query": [
        {"map": {"language": "javascript", "bucket": "fns", "key": "one", "arg": "!"}},
        erl("reduce", "reduce_sort")]});
    assert_eq!(
        last(&m, job),
        vec![json!("bar!"), json!("baz!"), json!("foo!")]
    );
    assert_eq!(m.at_vnodes.load(Ordering::Relaxed), 1);
}

#[test]
fn a_quorum_read_or_other_inputs_keep_the_coordinated_path() {
    let m = numbers();
    let job = json!({"inputs": "b", "r": 2, "query": [erl("map", "map_object_value")]});
    assert_eq!(last(&m, job).len(), 3);
    let job = json!({"inputs": [["b", "foo"]], "query": [erl("map", "map_object_value")]});
    assert_eq!(last(&m, job), vec![json!("2")]);
    let job = json!({"inputs": "b", "query": [{"link": {}}]});
    assert!(last(&m, job).is_empty());
    assert_eq!(m.at_vnodes.load(Ordering::Relaxed), 0);
}

#[test]
fn failures_at_the_vnodes_name_phase_zero() {
    let m = numbers();
    let job = json!({"inputs": "b", "query": [
        {"map": {"language": "javascript", "source": "function (v) { throw new Error('bad'); }"}}]});
    let err = run(&m, job).unwrap_err();
    let MapRedError::Phase {
        phase,
        message,
        kind,
        input,
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((*phase, *kind), (0, "javascript"));
    assert!(message.contains("bad"), "{message}");
    assert!(input.is_array(), "{input}");
    let job = json!({"inputs": "b", "query": [erl("map", "map_object_value_list")]});
    let err = run(&m, job).unwrap_err();
    assert!(
        matches!(
            &err,
            MapRedError::Phase {
                phase: 0,
                kind: "erlang",
                ..
            }
        ),
        "{err}"
    );
    let job = json!({"inputs": "b", "timeout": 100, "query": [
        {"map": {"language": "javascript", "source": "function (v) { var t = Date.now(); while (Date.now() - t < 400) {} return [1]; }"}}]});
    let err = run(&m, job).unwrap_err();
    assert!(matches!(err, MapRedError::Timeout), "{err}");
}

#[test]
fn outputs_too_large_for_the_wire_fall_back_to_reading_the_objects() {
    let mut m = numbers();
    m.vnode_output_max = Some(4);
    let job = json!({"inputs": "b", "query": [
        {"map": {"language": "javascript", "name": "Riak.mapValuesJson"}},
        {"reduce": {"language": "javascript", "name": "Riak.reduceSum"}}]});
    assert_eq!(last(&m, job), vec![json!(9)]);
    assert_eq!(m.at_vnodes.load(Ordering::Relaxed), 1);
    assert!(m.fetches.load(Ordering::Relaxed) > 0);
}
