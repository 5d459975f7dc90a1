use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

fn pool() -> JsPool {
    JsPool::start(JsLimits {
        threads: 1,
        memory_bytes: 16 << 20,
        call_timeout: Duration::from_millis(300),
        queue: 4,
    })
    .unwrap()
}

fn batch(function: &str, arg: Value, calls: Vec<JsCall>) -> JsBatch {
    JsBatch {
        function: function.into(),
        arg: arg.to_string(),
        calls,
        deadline: Instant::now() + Duration::from_secs(30),
    }
}

fn object(data: &str) -> JsCall {
    let v = json!({"bucket": "b", "key": "k", "values": [{"metadata": {}, "data": data}]});
    JsCall::Map {
        value: v.to_string(),
        keydata: "null".into(),
    }
}

fn reduce(values: Value) -> JsCall {
    JsCall::Reduce {
        values: values.to_string(),
    }
}

#[test]
fn map_and_reduce_built_ins_answer_as_riaks() {
    let p = pool();
    let out = p
        .run(batch(
            "Riak.mapValuesJson",
            Value::Null,
            vec![object("[1,2]"), object("3")],
        ))
        .unwrap();
    assert_eq!(out, vec![vec![json!([1, 2])], vec![json!(3)]]);
    let out = p
        .run(batch("Riak.mapValues", Value::Null, vec![object("x")]))
        .unwrap();
    assert_eq!(out, vec![vec![json!("x")]]);
    let nf = json!({"not_found": {"bucket": "b", "key": "k"}});
    let cases = [
        (
            "Riak.reduceSum",
            json!(null),
            json!([1, 2, nf.clone()]),
            json!([3]),
        ),
        ("Riak.reduceMin", json!(null), json!([3, 1, 2]), json!([1])),
        ("Riak.reduceMax", json!(null), json!([3, 1, 2]), json!([3])),
        (
            "Riak.reduceNumericSort",
            json!(null),
            json!([10, 9, 1]),
            json!([1, 9, 10]),
        ),
        (
            "Riak.reduceSort",
            json!(null),
            json!(["b", "a"]),
            json!(["a", "b"]),
        ),
        (
            "Riak.reduceSort",
            json!("function(a,b){return a > b ? -1 : 1;}"),
            json!(["a", "b"]),
            json!(["b", "a"]),
        ),
        ("Riak.reduceLimit", json!(1), json!([1, 2]), json!([1])),
        (
            "Riak.reduceSlice",
            json!([1, 2]),
            json!([1, 2, 3]),
            json!([2]),
        ),
        (
            "Riak.filterNotFound",
            json!(null),
            json!([1, nf]),
            json!([1]),
        ),
    ];
    for (f, arg, input, want) in cases {
        let out = p.run(batch(f, arg, vec![reduce(input)])).unwrap();
        assert_eq!(Value::Array(out[0].clone()), want, "{f}");
    }
    let by = p
        .run(batch(
            "Riak.mapByFields",
            json!({"a": 1}),
            vec![object(r#"{"a":1}"#), object(r#"{"a":2}"#)],
        ))
        .unwrap();
    assert_eq!(by, vec![vec![json!({"a": 1})], vec![]]);
}

#[test]
fn user_source_gets_value_keydata_and_arg() {
    let p = pool();
    let f = "function (v, kd, arg) { return [v.key, kd, arg]; }";
    let call = JsCall::Map {
        value: json!({"key": "k1"}).to_string(),
        keydata: "5".into(),
    };
    let out = p.run(batch(f, json!("a"), vec![call])).unwrap();
    assert_eq!(out, vec![vec![json!("k1"), json!(5), json!("a")]]);
}

#[test]
fn a_call_that_never_ends_is_stopped_and_the_pool_goes_on() {
    let p = pool();
    let err = p
        .run(batch(
            "function () { while (true) {} }",
            Value::Null,
            vec![reduce(json!([]))],
        ))
        .unwrap_err();
    assert!(err.message.contains("time limit"), "{}", err.message);
    let out = p
        .run(batch(
            "Riak.reduceSum",
            Value::Null,
            vec![reduce(json!([2]))],
        ))
        .unwrap();
    assert_eq!(out, vec![vec![json!(2)]]);
}

#[test]
fn the_jobs_deadline_stops_a_call_sooner() {
    let p = pool();
    let mut b = batch(
        "function () { while (true) {} }",
        Value::Null,
        vec![reduce(json!([]))],
    );
    b.deadline = Instant::now() + Duration::from_millis(50);
    let err = p.run(b).unwrap_err();
    assert!(err.message.contains("deadline"), "{}", err.message);
}

#[test]
fn a_call_that_allocates_without_bound_runs_out_of_memory() {
    let p = pool();
    let f = "function () { var a = []; while (true) { a.push(new Array(1000).fill(1)); } }";
    let err = p
        .run(batch(f, Value::Null, vec![reduce(json!([]))]))
        .unwrap_err();
    assert!(err.message.contains("out of memory"), "{}", err.message);
    let out = p
        .run(batch(
            "Riak.reduceMax",
            Value::Null,
            vec![reduce(json!([1, 4]))],
        ))
        .unwrap();
    assert_eq!(out, vec![vec![json!(4)]]);
}

#[test]
fn bad_functions_get_clear_errors() {
    let p = pool();
    let cases = [
        ("function (", "compiling"),
        ("42", "not a function"),
        ("Riak.noSuchThing", "not a function"),
        ("function () { return 1; }", "must return a list"),
        ("function () { throw new Error('boom'); }", "boom"),
        ("function () { throw 'plain'; }", "plain"),
        ("function () { return undefinedName; }", "undefinedName"),
    ];
    for (f, want) in cases {
        let err = p
            .run(batch(f, Value::Null, vec![reduce(json!([]))]))
            .unwrap_err();
        assert!(err.message.contains(want), "{f}: {}", err.message);
    }
}

#[test]
fn the_failing_calls_index_is_reported() {
    let p = pool();
    let f = "function (vs) { if (vs[0] === 2) throw new Error('two'); return vs; }";
    let calls = vec![reduce(json!([1])), reduce(json!([2]))];
    let err = p.run(batch(f, Value::Null, calls)).unwrap_err();
    assert_eq!(err.call, 1);
}

#[test]
fn the_sandbox_has_no_io() {
    let p = pool();
    let f = "function () { return [typeof require, typeof std, typeof os, typeof fetch]; }";
    let out = p
        .run(batch(f, Value::Null, vec![reduce(json!([]))]))
        .unwrap();
    assert_eq!(out, vec![vec![json!("undefined"); 4]]);
}
