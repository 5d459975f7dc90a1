//! [`PropsPatch`]'s laws: the stored JSON form round-trips both ways, the
//! edge parse names every bad property, merging is applying in turn.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::patch::TYPED;
use super::{BucketProps, COMPUTED, ModFun, PropsPatch, SyncOnWrite};
use crate::quorum::Quorum;

fn object(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// The JSON a patch is written as, through the writer (not `to_value`).
fn written(patch: &PropsPatch) -> Value {
    serde_json::from_str(&serde_json::to_string(patch).unwrap()).unwrap()
}

#[test]
fn a_patch_stored_before_typing_reads_back_unchanged() {
    let stored = json!({
        "n_val": 2, "allow_mult": true, "r": "quorum", "w": "all", "pr": 0,
        "dw": 1, "rw": "default", "pw": "one", "node_confirms": "one",
        "backend": null, "datatype": "set", "hll_precision": null,
        "precommit": [{"mod": "m", "fun": "f"}, {"name": "js"}],
        "chash_keyfun": {"mod": "riak_core_util", "fun": "chash_std_keyfun"},
        "sync_on_write": "all", "generation": 3, "search_index": "idx",
        "repl": "realtime", "my_prop": [1, {"a": null}, 1.5, -3],
        "name": "b", "active": true, "has_precommit": false
    });
    let patch: PropsPatch = serde_json::from_value(stored.clone()).unwrap();
    assert_eq!(patch.generation, Some(3));
    assert_eq!(patch.w, Some(Quorum::All));
    assert_eq!(patch.backend, Some(None), "null is kept, not unset");
    assert_eq!(
        patch.extra["name"],
        json!("b"),
        "computed keys stay as stored"
    );
    assert_eq!(serde_json::to_value(&patch).unwrap(), stored);
    assert_eq!(written(&patch), stored);
}

#[test]
fn a_generation_that_is_not_a_count_stays_as_stored_and_is_not_applied() {
    let stored = json!({"generation": "junk", "n_val": 2});
    let patch: PropsPatch = serde_json::from_value(stored.clone()).unwrap();
    assert_eq!(patch.generation, None);
    assert_eq!(written(&patch), stored);
    let props = BucketProps::default().patched(&patch).unwrap();
    assert_eq!((props.generation, props.n_val), (0, 2));
    assert!(!props.extra.contains_key("generation"));
}

#[test]
fn a_stored_patch_whose_typed_property_does_not_parse_is_refused() {
    let e = serde_json::from_value::<PropsPatch>(json!({"n_val": "x"})).unwrap_err();
    assert!(e.to_string().contains("n_val"), "{e}");
    assert!(serde_json::from_value::<PropsPatch>(json!([1])).is_err());
}

#[test]
fn the_edge_drops_computed_keys() {
    let mut sent = object(json!({"n_val": 2, "my_prop": 1}));
    for key in COMPUTED {
        sent.insert((*key).to_string(), json!(7));
    }
    let patch = PropsPatch::from_json(&sent).unwrap();
    assert_eq!(patch.generation, None, "a client cannot set the generation");
    assert_eq!(written(&patch), json!({"n_val": 2, "my_prop": 1}));
}

#[test]
fn the_edge_names_every_property_that_does_not_parse() {
    let sent = object(json!({
        "n_val": "three", "r": "most", "allow_mult": 1, "w": 2,
        "sync_on_write": "ALL", "chash_keyfun": "f", "x": "kept"
    }));
    let err = PropsPatch::from_json(&sent).unwrap_err();
    let named: Vec<&str> = err.0.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        named,
        ["allow_mult", "chash_keyfun", "n_val", "r", "sync_on_write"]
    );
    let reason = |field: &str| &err.0.iter().find(|(f, _)| f == field).unwrap().1;
    assert_eq!(
        reason("n_val"),
        "invalid type: string \"three\", expected u32"
    );
    assert_eq!(reason("r"), "invalid quorum value \"most\"");
    assert!(reason("sync_on_write").contains("all, one or backend"));
    let message = err.to_string();
    assert!(message.starts_with("invalid bucket properties: allow_mult: "));
}

#[test]
fn nulls_parse_only_where_the_property_may_be_unset() {
    let patch = PropsPatch::from_json(&object(json!({
        "backend": null, "datatype": null, "hll_precision": null, "x": null
    })))
    .unwrap();
    assert_eq!(
        (patch.backend, patch.datatype, patch.hll_precision),
        (Some(None), Some(None), Some(None))
    );
    assert_eq!(patch.extra["x"], Value::Null);
    for field in ["n_val", "allow_mult", "r", "precommit", "consistent"] {
        let err = PropsPatch::from_json(&object(json!({ field: null }))).unwrap_err();
        assert_eq!(err.0[0].0, field);
    }
}

#[test]
fn merging_is_applying_in_turn() {
    let mut stored = PropsPatch::from_json(&object(json!({
        "n_val": 2, "backend": "a", "x": 1, "y": 1
    })))
    .unwrap();
    stored.generation = Some(4);
    let change = PropsPatch::from_json(&object(json!({
        "n_val": 3, "backend": null, "y": 2, "r": "one"
    })))
    .unwrap();
    stored.merge(&change);
    let expected = json!({
        "n_val": 3, "backend": null, "x": 1, "y": 2, "r": "one", "generation": 4
    });
    assert_eq!(written(&stored), expected);
}

#[test]
fn a_count_replaces_a_junk_generation_and_the_reverse() {
    let mut junk: PropsPatch = serde_json::from_value(json!({"generation": "j"})).unwrap();
    let count = PropsPatch {
        generation: Some(2),
        ..PropsPatch::new()
    };
    let mut merged = junk.clone();
    merged.merge(&count);
    assert_eq!(written(&merged), json!({"generation": 2}));
    let mut over = count.clone();
    over.merge(&junk);
    assert_eq!(written(&over), json!({"generation": "j"}));
    junk.merge(&PropsPatch::new());
    assert_eq!(written(&junk), json!({"generation": "j"}));
}

#[test]
fn sets_names_exactly_the_typed_properties_set() {
    let patch = PropsPatch::from_json(&object(json!({"pr": 1, "x": 1}))).unwrap();
    assert!(patch.sets("pr"));
    assert!(!patch.sets("x") && !patch.sets("r") && !patch.sets("generation"));
    let defaults = BucketProps::default().to_json();
    for name in TYPED {
        let all = PropsPatch::from_json(&defaults).unwrap();
        let known = defaults.contains_key(*name);
        assert_eq!(all.sets(name), known, "{name}");
    }
}

// Strategies: the JSON of a stored patch, key by key.

fn quorum_json() -> BoxedStrategy<Value> {
    prop_oneof![
        prop::sample::select(vec!["one", "quorum", "all", "default"]).prop_map(Value::from),
        any::<u32>().prop_map(Value::from),
    ]
    .boxed()
}

fn text() -> BoxedStrategy<String> {
    "[a-z_]{0,6}".boxed()
}

fn modfun_json() -> BoxedStrategy<Value> {
    (text(), text())
        .prop_map(|(m, f)| json!({"mod": m, "fun": f}))
        .boxed()
}

fn leaf_json() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::from),
        Just(json!([1, {"a": null}])),
    ]
    .boxed()
}

fn nullable(s: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![Just(Value::Null), s].boxed()
}

/// A strategy for the value of each stored key.
fn value_of(name: &str) -> BoxedStrategy<Value> {
    let hooks = prop::collection::vec(
        prop_oneof![modfun_json(), text().prop_map(|n| json!({ "name": n }))],
        0..3,
    );
    match name {
        "n_val" | "old_vclock" | "young_vclock" | "big_vclock" | "small_vclock" => {
            any::<u32>().prop_map(Value::from).boxed()
        }
        "pr" | "r" | "w" | "pw" | "dw" | "rw" | "node_confirms" => quorum_json(),
        "precommit" | "postcommit" => hooks.prop_map(Value::from).boxed(),
        "chash_keyfun" | "linkfun" => modfun_json(),
        "sync_on_write" => prop::sample::select(vec!["all", "one", "backend"])
            .prop_map(Value::from)
            .boxed(),
        "backend" | "datatype" => nullable(text().prop_map(Value::from).boxed()),
        "hll_precision" => nullable(any::<u32>().prop_map(Value::from).boxed()),
        "ttl" => nullable((0..=super::ttl::TTL_SECS_MAX).prop_map(Value::from).boxed()),
        "generation" => prop_oneof![any::<u64>().prop_map(Value::from), leaf_json()].boxed(),
        n if TYPED.contains(&n) => any::<bool>().prop_map(Value::from).boxed(),
        _ => leaf_json(),
    }
}

/// A stored patch's JSON: any subset of the typed keys, the generation,
/// computed keys and properties Eddy does not know.
fn stored_json() -> impl Strategy<Value = Map<String, Value>> {
    let unknown = ["x", "repl", "search_index", "name", "active", "claimant"];
    let names = TYPED.iter().copied().chain(["generation"]).chain(unknown);
    let entries: Vec<_> = names
        .map(|n| prop::option::of(value_of(n).prop_map(move |v| (n.to_string(), v))))
        .collect();
    entries.prop_map(|e| e.into_iter().flatten().collect())
}

proptest! {
    #[test]
    fn stored_json_reads_back_to_the_same_json(json in stored_json()) {
        let patch: PropsPatch = serde_json::from_value(Value::Object(json.clone())).unwrap();
        prop_assert_eq!(written(&patch), Value::Object(json.clone()));
        prop_assert_eq!(serde_json::to_value(&patch).unwrap(), Value::Object(json));
    }

    #[test]
    fn patches_read_back_to_the_same_patch(json in stored_json()) {
        let patch: PropsPatch = serde_json::from_value(Value::Object(json)).unwrap();
        let back: PropsPatch = serde_json::from_value(written(&patch)).unwrap();
        prop_assert_eq!(back, patch);
    }

    #[test]
    fn the_edge_reads_what_is_stored_less_the_computed_keys(json in stored_json()) {
        let edge = PropsPatch::from_json(&json).unwrap();
        let mut stored: PropsPatch = serde_json::from_value(Value::Object(json)).unwrap();
        stored.generation = None;
        stored.extra.retain(|k, _| !COMPUTED.contains(&k.as_str()));
        prop_assert_eq!(edge, stored);
    }

    #[test]
    fn merged_patches_apply_as_both_in_turn(a in stored_json(), b in stored_json()) {
        let base = BucketProps::default();
        let (a, b) = (PropsPatch::from_json(&a).unwrap(), PropsPatch::from_json(&b).unwrap());
        let mut merged = a.clone();
        merged.merge(&b);
        let in_turn = |props: &BucketProps| {
            let mut p = props.clone();
            a.apply_to(&mut p);
            b.apply_to(&mut p);
            p
        };
        let mut once = base.clone();
        merged.apply_to(&mut once);
        prop_assert_eq!(once, in_turn(&base));
    }
}

#[test]
fn typed_values_are_the_props_own() {
    let patch = PropsPatch::from_json(&object(json!({
        "linkfun": {"mod": "m", "fun": "f"}, "sync_on_write": "one", "node_confirms": 2
    })))
    .unwrap();
    let linkfun = ModFun {
        module: "m".into(),
        function: "f".into(),
    };
    assert_eq!(patch.linkfun, Some(linkfun));
    assert_eq!(patch.sync_on_write, Some(SyncOnWrite::One));
    assert_eq!(patch.node_confirms, Some(Quorum::Count(2)));
}
