//! Each function against the cases of Riak's own unit tests (written in
//! Eddy's JSON), and Riak's law for reduces: reducing in one call, in two
//! with the first's output fed back, or one input at a time and then the
//! outputs together gives the same entries (commutative, associative,
//! idempotent), and the proplist form with a batch size reads alike.

use serde_json::{Value, json};

use super::item::binary;
use super::*;
use crate::term_order::compare;

fn sorted(mut v: Vec<Value>) -> Vec<Value> {
    v.sort_by(compare);
    v
}

/// Riak's `commassidem_check`: the first call's output, in its order.
fn check(f: IndexFn, arg: Value, inputs: [&Value; 4]) -> Vec<Value> {
    let r = Reducer::new(f, &arg).unwrap_or_else(|e| panic!("{arg}: {e}"));
    let run = |v: Vec<Value>| r.reduce(v).unwrap();
    let [a, b, c, d] = inputs.map(Value::clone);
    let once = run(vec![a.clone(), b.clone(), c.clone(), d.clone()]);
    let mut twice = run(vec![c.clone(), b.clone()]);
    twice.extend([a.clone(), d.clone()]);
    let twice = run(twice);
    let singly: Vec<Value> = [a.clone(), b.clone(), c.clone(), d.clone()]
        .into_iter()
        .flat_map(|x| run(vec![x]))
        .collect();
    let singly = run(singly);
    assert_eq!(
        sorted(once.clone()),
        sorted(twice),
        "{}: re-reduced",
        f.name()
    );
    assert_eq!(
        sorted(once.clone()),
        sorted(singly),
        "{}: one by one",
        f.name()
    );
    let batched = match arg {
        Value::Object(mut named) => {
            named.insert("reduce_phase_batch_size".into(), json!(50));
            Value::Object(named)
        }
        tuple => json!({"args": tuple, "reduce_phase_batch_size": 50}),
    };
    let r4 = Reducer::new(f, &batched).unwrap();
    assert_eq!(r4.batch, Some(50));
    assert_eq!(
        r4.reduce(vec![a, b, c, d]).unwrap(),
        once,
        "{}: proplist",
        f.name()
    );
    once
}

fn e(bucket: &str, key: &str, attrs: Value) -> Value {
    json!([bucket, key, attrs])
}

fn bytes(parts: &[&[u8]]) -> Value {
    binary(&parts.concat())
}

#[test]
fn names_resolve() {
    assert_eq!(IndexFn::named("reduce_index_max"), Some(IndexFn::Max));
    assert_eq!(IndexFn::named("reduce_index_byrange"), None);
    for (f, name, _) in TABLE {
        assert_eq!(IndexFn::named(name), Some(*f));
        assert_eq!(f.name(), *name);
    }
}

#[test]
fn identity_passes_names_and_entries() {
    let a = e("B1", "K1", json!({"term": "KD1"}));
    let b = e("B2", "K2", json!({"term": "KD2"}));
    let c = e("B3", "K3", json!({"term": "KD3", "extract": 4}));
    let d = json!(["B4", "K4", null]);
    let plain = json!(["B5", "K5"]);
    let r0 = check(IndexFn::Identity, Value::Null, [&a, &b, &c, &d]);
    assert_eq!(
        sorted(r0),
        vec![a.clone(), b.clone(), c.clone(), json!(["B4", "K4"])]
    );
    let r1 = check(IndexFn::Identity, json!("none"), [&a, &b, &c, &plain]);
    assert_eq!(
        sorted(r1),
        vec![a.clone(), b.clone(), c.clone(), plain.clone()]
    );
    let r2 = check(IndexFn::Identity, json!("extract"), [&a, &b, &c, &d]);
    assert_eq!(r2, vec![c]);
    let dropped = Reducer::new(IndexFn::Identity, &Value::Null).unwrap();
    assert!(
        dropped
            .reduce(vec![json!(7), json!({"not_found": {}})])
            .unwrap()
            .is_empty()
    );
}

#[test]
fn extractinteger_reads_big_endian_bytes() {
    let t1 = bytes(&[&[0], &1u32.to_be_bytes(), &[0]]);
    let t2 = bytes(&[&[0], &2u32.to_be_bytes()]);
    let t3 = bytes(&[&[0], &3u32.to_be_bytes(), &[0, 0]]);
    let a = e("B1", "K1", json!({"term": t1}));
    let b = e("B2", "K2", json!({"term": t2, "extract": 26}));
    let c = e("B3", "K3", json!({"extract": 99, "term": t3}));
    let d = json!(["B4", "K4", null]);
    let short = e("B5", "K5", json!({"term": "ab"}));
    let all = check(
        IndexFn::ExtractInteger,
        json!(["term", "extint", "all", 1, 32]),
        [&a, &b, &c, &d],
    );
    assert_eq!(
        sorted(all),
        vec![
            e("B1", "K1", json!({"extint": 1, "term": t1})),
            e("B2", "K2", json!({"extint": 2, "extract": 26, "term": t2})),
            e("B3", "K3", json!({"extint": 3, "extract": 99, "term": t3})),
        ]
    );
    let named = json!({"input": "term", "output": "extint", "keep": "this", "pre_bytes": 1, "int_size": 32});
    let this = check(IndexFn::ExtractInteger, named, [&a, &b, &c, &short]);
    assert_eq!(
        sorted(this),
        vec![
            e("B1", "K1", json!({"extint": 1})),
            e("B2", "K2", json!({"extint": 2})),
            e("B3", "K3", json!({"extint": 3})),
        ]
    );
    let wide = Reducer::new(IndexFn::ExtractInteger, &json!(["t", "n", "this", 0, 64])).unwrap();
    let max = e("b", "k", json!({"t": binary(&[0xff; 8])}));
    assert_eq!(
        wide.reduce(vec![max]).unwrap(),
        vec![e("b", "k", json!({"n": u64::MAX}))]
    );
}

#[test]
fn extractbinary_slices_bytes() {
    let a = e("B1", "K1", json!({"term": "\u{0}Bin1\u{0}"}));
    let b = e("B2", "K2", json!({"term": "\u{0}Bin2", "extract": 26}));
    let c = e(
        "B3",
        "K3",
        json!({"extract": 99, "term": "\u{0}Bin3\u{0}\u{0}"}),
    );
    let d = e("B4", "K4", json!({"term": "\u{0}BigBin4"}));
    let this = check(
        IndexFn::ExtractBinary,
        json!(["term", "extbin", "this", 1, 4]),
        [&a, &b, &c, &d],
    );
    let want: Vec<Value> = ["Bin1", "Bin2", "Bin3", "BigB"]
        .iter()
        .zip(1..)
        .map(|(s, i)| e(&format!("B{i}"), &format!("K{i}"), json!({"extbin": s})))
        .collect();
    assert_eq!(sorted(this), want);
    let rest = check(
        IndexFn::ExtractBinary,
        json!(["term", "extbin", "all", 1, "all"]),
        [&a, &b, &c, &d],
    );
    assert_eq!(
        sorted(rest)[3],
        e(
            "B4",
            "K4",
            json!({"extbin": "BigBin4", "term": "\u{0}BigBin4"})
        )
    );
    let cut = Reducer::new(IndexFn::ExtractBinary, &json!(["t", "o", "this", 0, 1])).unwrap();
    let got = cut.reduce(vec![e("b", "k", json!({"t": "é"}))]).unwrap();
    assert_eq!(got, vec![e("b", "k", json!({"o": {"base64": "ww=="}}))]);
}

#[test]
fn extractregex_names_its_groups() {
    let re = "[0-9]+\\|(?<surname>[^|]*)\\|(?<preferred>[^|]*)$";
    let a = e("B1", "K1", json!({"term": "19421209|Bremner|Billy"}));
    let b = e(
        "B2",
        "K2",
        json!({"extract": 26, "term": "19311227|Charles|John"}),
    );
    let c = e(
        "B3",
        "K3",
        json!({"extract": 99, "term": "19431029|Hunter"}),
    );
    let d = json!(["B4", "K4", null]);
    let arg = json!(["term", ["surname", "preferred"], "this", re]);
    let got = check(IndexFn::ExtractRegex, arg, [&a, &b, &c, &d]);
    assert_eq!(
        sorted(got),
        vec![
            e(
                "B1",
                "K1",
                json!({"surname": "Bremner", "preferred": "Billy"})
            ),
            e(
                "B2",
                "K2",
                json!({"surname": "Charles", "preferred": "John"})
            ),
        ]
    );
    let err = Reducer::new(
        IndexFn::ExtractRegex,
        &json!(["term", ["nope"], "this", re]),
    )
    .unwrap_err();
    assert!(
        err.contains("reduce_index_extractregex: bad arg \"regex\": has no group named \"nope\""),
        "{err}"
    );
}

#[test]
fn applyrange_keeps_values_in_bounds() {
    let [a, b, c, d] =
        [1, 2, 3, 4].map(|i| e(&format!("B{i}"), &format!("K{i}"), json!({"extint": i})));
    let odd = json!([["E5"]]);
    let undefined = json!(["F6", "F7", null]);
    let r0 = check(
        IndexFn::ApplyRange,
        json!(["extint", "all", 2, 3]),
        [&a, &b, &c, &d],
    );
    assert_eq!(sorted(r0), vec![b.clone(), c.clone()]);
    check(
        IndexFn::ApplyRange,
        json!(["extint", "this", 2, 3]),
        [&a, &b, &c, &odd],
    );
    check(
        IndexFn::ApplyRange,
        json!(["extint", "all", 2, 3]),
        [&a, &b, &c, &undefined],
    );
    let terms = Reducer::new(IndexFn::ApplyRange, &json!(["t", "all", "b", "c"])).unwrap();
    let inputs: Vec<Value> = ["a", "b", "bz", "c", "ca"]
        .iter()
        .map(|t| e("b", t, json!({"t": t})))
        .collect();
    let kept: Vec<Value> = terms
        .reduce(inputs)
        .unwrap()
        .iter()
        .map(|v| v[1].clone())
        .collect();
    assert_eq!(kept, vec![json!("b"), json!("bz"), json!("c")]);
}

#[test]
fn applyregex_keeps_matches() {
    let [a, b, c, d] =
        [("1", "v99a"), ("2", "v99b"), ("3", "v98a"), ("4", "v99d")].map(|(i, t)| {
            e(
                &format!("B{i}"),
                &format!("K{i}"),
                json!({"term": t, "n": 1}),
            )
        });
    let got = check(
        IndexFn::ApplyRegex,
        json!(["term", "this", ".*99.*"]),
        [&a, &b, &c, &d],
    );
    let only_term = |v: &Value| {
        e(
            v[0].as_str().unwrap(),
            v[1].as_str().unwrap(),
            json!({"term": v[2]["term"]}),
        )
    };
    assert_eq!(
        sorted(got),
        vec![only_term(&a), only_term(&b), only_term(&d)]
    );
    let ints = Reducer::new(IndexFn::ApplyRegex, &json!(["n", "all", "1"])).unwrap();
    assert!(
        ints.reduce(vec![a]).unwrap().is_empty(),
        "an integer never matches"
    );
}

#[test]
fn applymask_keeps_values_with_every_bit() {
    let a = e("B1", "K1", json!({"int": 1, "term": "v8"}));
    let b = e("B2", "K2", json!({"int": 9, "term": "v7"}));
    let c = e("B3", "K3", json!({"int": 2, "term": "v7"}));
    let d = e("B4", "K4", json!({"term": 9}));
    let got = check(
        IndexFn::ApplyMask,
        json!(["int", "this", 1]),
        [&a, &b, &c, &d],
    );
    assert_eq!(
        sorted(got),
        vec![
            e("B1", "K1", json!({"int": 1})),
            e("B2", "K2", json!({"int": 9}))
        ]
    );
}

fn scores() -> [Value; 5] {
    [
        e("B1", "K1", json!({"int": 5})),
        e("B2", "K2", json!({"int": 7, "term": "v7"})),
        e("B3", "K3", json!({"int": 8})),
        e("B4", "K4", json!({"term": 9})),
        e("B3", "K5", json!({"int": 8})),
    ]
}

#[test]
fn max_keeps_the_highest_highest_first() {
    let [a, b, c, d, _] = scores();
    assert_eq!(
        check(IndexFn::Max, json!(["int", 1]), [&a, &b, &c, &d]),
        vec![c.clone()]
    );
    assert_eq!(
        check(IndexFn::Max, json!(["int", 2]), [&a, &b, &c, &d]),
        vec![c.clone(), b.clone()]
    );
    let by_key = check(IndexFn::Max, json!(["key", 2]), [&a, &b, &c, &d]);
    assert_eq!(by_key, vec![d, c], "\"key\" sorts by key");
}

#[test]
fn min_keeps_the_lowest_ties_to_the_lower_key() {
    let [a, b, c, d, e5] = scores();
    assert_eq!(
        check(IndexFn::Min, json!(["int", 1]), [&a, &b, &c, &d]),
        vec![a.clone()]
    );
    assert_eq!(
        check(IndexFn::Min, json!(["int", 2]), [&a, &b, &c, &d]),
        vec![a.clone(), b.clone()]
    );
    let want = vec![a.clone(), b.clone(), c.clone()];
    assert_eq!(
        check(
            IndexFn::Min,
            json!({"attribute": "int", "count": 3}),
            [&a, &b, &c, &e5]
        ),
        want
    );
    assert_eq!(
        check(IndexFn::Min, json!(["int", 3]), [&a, &b, &e5, &c]),
        want
    );
}

#[test]
fn sort_by_key_or_by_attribute() {
    let a = e("B1", "K1", json!({"int": 1, "term": "v8"}));
    let b = e("B1", "K2", json!({"int": 9, "term": "v7"}));
    let c = e("B1", "K3", json!({"int": 2, "term": "v7"}));
    let d = e("B1", "K4", json!({"int": 0, "term": "v9"}));
    let all = || [a.clone(), b.clone(), c.clone(), d.clone()];
    assert_eq!(
        check(IndexFn::Sort, json!("key"), [&a, &b, &c, &d]),
        all().to_vec()
    );
    let by_term = vec![b.clone(), c.clone(), a.clone(), d.clone()];
    assert_eq!(
        check(IndexFn::Sort, json!("term"), [&a, &b, &c, &d]),
        by_term
    );
    assert_eq!(
        check(IndexFn::Sort, json!(["term"]), [&a, &c, &b, &d]),
        by_term
    );
    assert_eq!(
        check(IndexFn::Sort, json!("int"), [&a, &b, &c, &d]),
        vec![d, a, c, b]
    );
}

#[test]
fn union_collects_distinct_values_of_a_kind() {
    let [a, b, c, d, _] = scores();
    let b5 = e("B2", "K2", json!({"int": 5, "term": "v7"}));
    assert_eq!(
        check(IndexFn::Union, json!(["int", "integer"]), [&a, &b5, &c, &d]),
        vec![json!(5), json!(8)]
    );
    assert_eq!(
        check(IndexFn::Union, json!(["term", "binary"]), [&a, &b, &c, &d]),
        vec![json!("v7")]
    );
    let r = Reducer::new(IndexFn::Union, &json!(["int", "integer"])).unwrap();
    let err = r.reduce(vec![json!(["b", "k"])]).unwrap_err();
    assert_eq!(err, "reduce_index_union: unhandled entry [\"b\",\"k\"]");
}

#[test]
fn countby_counts_each_value() {
    let a = e("B1", "K1", json!({"int": 5, "term": "v8"}));
    let b = e("B2", "K2", json!({"int": 5, "term": "v7"}));
    let c = e("B3", "K3", json!({"int": 8, "term": "v7"}));
    let d = e("B4", "K4", json!({"term": 9}));
    let by_int = check(
        IndexFn::CountBy,
        json!(["int", "integer"]),
        [&a, &b, &c, &d],
    );
    assert_eq!(by_int, vec![json!([5, 2]), json!([8, 1])]);
    let by_term = check(
        IndexFn::CountBy,
        json!(["term", "binary"]),
        [&a, &b, &c, &d],
    );
    assert_eq!(by_term, vec![json!(["v7", 2]), json!(["v8", 1])]);
    let r = Reducer::new(IndexFn::CountBy, &json!(["term", "binary"])).unwrap();
    assert!(
        r.reduce(vec![json!(3)])
            .unwrap_err()
            .contains("unhandled entry 3")
    );
}

#[test]
fn extractmask_masks_integers() {
    let a = e("B1", "K1", json!({"int": 1, "term": "v8"}));
    let b = e("B2", "K2", json!({"int": 9, "term": "v7"}));
    let c = e("B3", "K3", json!({"int": 2, "term": "v7"}));
    let d = e("B4", "K4", json!({"term": 9}));
    let got = check(
        IndexFn::ExtractMask,
        json!(["int", "mask", "this", 3]),
        [&a, &b, &c, &d],
    );
    let want = [("1", 1), ("2", 1), ("3", 2)]
        .map(|(i, m)| e(&format!("B{i}"), &format!("K{i}"), json!({"mask": m})));
    assert_eq!(sorted(got), want.to_vec());
}

#[test]
fn extracthamming_counts_differing_bits() {
    let cmp = binary(&[0xaa, 0x0f]);
    let a = e("B1", "K1", json!({"sim": 0xaa0f}));
    let b = e("B2", "K2", json!({"sim": 0x550f}));
    let c = e("B3", "K3", json!({"sim": binary(&[0xab, 0x0f])}));
    let d = e("B4", "K4", json!({"sim": binary(&[0xab])}));
    let got = check(
        IndexFn::ExtractHamming,
        json!(["sim", "hamming", "this", cmp]),
        [&a, &b, &c, &d],
    );
    let want = [("1", 0), ("2", 8), ("3", 1)]
        .map(|(i, h)| e(&format!("B{i}"), &format!("K{i}"), json!({"hamming": h})));
    assert_eq!(sorted(got), want.to_vec());
    let negative = Reducer::new(
        IndexFn::ExtractHamming,
        &json!(["sim", "h", "this", binary(&[0; 16])]),
    )
    .unwrap();
    let got = negative
        .reduce(vec![e("b", "k", json!({"sim": -1}))])
        .unwrap();
    assert_eq!(
        got,
        vec![e("b", "k", json!({"h": 128}))],
        "sign-extended to the comparator's width"
    );
}

#[test]
fn extractencoded_decodes_base64() {
    let a = e("B1", "K1", json!({"enc": "aGVsbG8="}));
    let b = e("B2", "K2", json!({"enc": "AP8H"}));
    let c = e("B3", "K3", json!({"enc": "not base64!"}));
    let d = e("B4", "K4", json!({"enc": 5}));
    let got = check(
        IndexFn::ExtractEncoded,
        json!(["enc", "dec", "this"]),
        [&a, &b, &c, &d],
    );
    assert_eq!(
        sorted(got.clone()),
        vec![
            e("B1", "K1", json!({"dec": "hello"})),
            e("B2", "K2", json!({"dec": {"base64": "AP8H"}}))
        ]
    );
    let then = Reducer::new(IndexFn::ExtractInteger, &json!(["dec", "n", "this", 1, 8])).unwrap();
    let n = then.reduce(got).unwrap();
    assert!(n.contains(&e("B2", "K2", json!({"n": 255}))), "{n:?}");
}

#[test]
fn extracthash_hashes_keys_or_binaries() {
    let a = e("B1", "K1", json!({"int": 1, "term": "v8"}));
    let b = e("B1", "K2", json!({"int": 9, "term": "v7"}));
    let c = e("B1", "K3", json!({"int": 2, "term": "v7"}));
    let d = e("B1", "K4", json!({"term": 9}));
    let union = Reducer::new(IndexFn::Union, &json!(["hash", "integer"])).unwrap();
    let of = |keys: &[&str], f: fn(&[u8]) -> u32| {
        let mut h: Vec<u32> = keys.iter().map(|k| f(k.as_bytes())).collect();
        h.sort();
        h.dedup();
        h.into_iter().map(Value::from).collect::<Vec<_>>()
    };
    let keys = check(
        IndexFn::ExtractHash,
        json!(["key", "hash", "this", "fnva"]),
        [&a, &b, &c, &d],
    );
    assert_eq!(
        union.reduce(keys).unwrap(),
        of(&["K1", "K2", "K3", "K4"], hash::fnv1a32)
    );
    let terms = check(
        IndexFn::ExtractHash,
        json!(["term", "hash", "this", "md5"]),
        [&a, &b, &c, &d],
    );
    assert_eq!(
        union.reduce(terms).unwrap(),
        of(&["v7", "v8"], hash::md5_32)
    );
}

#[test]
fn extractbuckets_sorts_values_into_ranges() {
    let a = e("B1", "K1", json!({"int": 1, "term": "v8"}));
    let b = e("B1", "K2", json!({"int": 9, "term": "v7"}));
    let c = e("B1", "K3", json!({"int": 2, "term": "v7"}));
    let d = e("B1", "K4", json!({"int": 5, "term": "v7"}));
    let e5 = e("B1", "K5", json!({"int": 5, "term": "v6"}));
    let versions = json!([
        "term",
        "version",
        "this",
        [["v7", "fix"], ["v6", "pre_fix"]],
        "post_fix"
    ]);
    let v = |k: &str, s: &str| e("B1", k, json!({"version": s}));
    let got = check(IndexFn::ExtractBuckets, versions.clone(), [&a, &b, &c, &d]);
    assert_eq!(
        sorted(got),
        vec![
            v("K1", "post_fix"),
            v("K2", "fix"),
            v("K3", "fix"),
            v("K4", "fix")
        ]
    );
    let got = check(IndexFn::ExtractBuckets, versions, [&a, &b, &c, &e5]);
    assert_eq!(sorted(got)[3], v("K5", "pre_fix"));
    let sizes = json!(["int", "size", "all", [[3, "small"], [5, "meh"]], "big"]);
    let got = check(IndexFn::ExtractBuckets, sizes, [&a, &b, &c, &d]);
    let sized: Vec<Value> = sorted(got).iter().map(|x| x[2]["size"].clone()).collect();
    assert_eq!(
        sized,
        ["small", "big", "small", "meh"].map(Value::from).to_vec()
    );
}

#[test]
fn extractcoalesce_joins_attributes() {
    let a = e(
        "B1",
        "K1",
        json!({"size": "small", "int": 1, "version": "v8"}),
    );
    let b = e(
        "B1",
        "K2",
        json!({"size": "big", "int": 1, "version": "v7"}),
    );
    let c = e("B1", "K5", json!({"int": 1, "version": "v7"}));
    let d = e("B1", "K6", json!({"size": "meh", "int": 1}));
    let joined = |arg: Value| -> Vec<Value> {
        sorted(check(IndexFn::ExtractCoalesce, arg, [&a, &b, &c, &d]))
            .iter()
            .map(|x| x[2]["vsize"].clone())
            .collect()
    };
    let want = ["v8|small", "v7|big", "v7|", "|meh"]
        .map(Value::from)
        .to_vec();
    assert_eq!(
        joined(json!([["version", "size"], "vsize", "this", "|"])),
        want
    );
    let want = ["v8small", "v7big", "v7", "meh"].map(Value::from).to_vec();
    assert_eq!(
        joined(json!([["version", "size"], "vsize", "this", ""])),
        want
    );
    let lists = joined(json!([["version", "size"], "vsize", "this", null]));
    assert_eq!(lists[2], json!(["v7", null]));
}

#[test]
fn collateresults_sorts_and_counts_facets() {
    let a = e(
        "B1",
        "K1",
        json!({"size": "small", "int": 1, "version": "v8"}),
    );
    let b = e(
        "B1",
        "K2",
        json!({"size": "big", "int": 4, "version": "v7"}),
    );
    let c = e(
        "B1",
        "K3",
        json!({"size": "small", "int": 3, "version": "v7"}),
    );
    let d = e(
        "B1",
        "K4",
        json!({"size": "meh", "int": 2, "version": "v7"}),
    );
    let facets = json!([["v7", 3], ["v8", 1]]);
    let r = |k: &str, i: i64, v: &str| e("B1", k, json!({"int": i, "version": v}));
    let lowest = check(
        IndexFn::CollateResults,
        json!(["int", "version", "this", "min", 3]),
        [&a, &b, &c, &d],
    );
    let want = json!({"results": [r("K1", 1, "v8"), r("K4", 2, "v7"), r("K3", 3, "v7")], "facet_count": facets});
    assert_eq!(lowest, vec![want]);
    let highest = check(
        IndexFn::CollateResults,
        json!(["int", "version", "all", "max", 3]),
        [&a, &b, &c, &d],
    );
    assert_eq!(highest[0]["results"], json!([b, c, d]));
    assert_eq!(highest[0]["facet_count"], facets);
    let none = Reducer::new(
        IndexFn::CollateResults,
        &json!(["int", "version", "all", "max", 3]),
    )
    .unwrap();
    assert_eq!(
        none.reduce(vec![]).unwrap(),
        vec![json!({"results": [], "facet_count": []})]
    );
}

#[test]
fn bad_args_name_the_function_and_the_parameter() {
    let cases = [
        (
            IndexFn::Max,
            json!(["int", 0]),
            "reduce_index_max: bad arg \"count\"",
        ),
        (
            IndexFn::Sort,
            json!(5),
            "reduce_index_sort: bad arg \"attribute\"",
        ),
        (
            IndexFn::Union,
            json!(["int", "float"]),
            "\"binary\" or \"integer\"",
        ),
        (
            IndexFn::ExtractInteger,
            json!(["t", "o", "all", 0, 12]),
            "whole bytes",
        ),
        (
            IndexFn::ExtractInteger,
            json!(["t", "o", "some", 0, 8]),
            "bad arg \"keep\"",
        ),
        (
            IndexFn::ExtractBinary,
            json!(["t", "o", "all", 0, 0]),
            "bad arg \"bin_size\"",
        ),
        (
            IndexFn::ExtractHash,
            json!(["t", "o", "all", "sha"]),
            "\"fnva\" or \"md5\"",
        ),
        (
            IndexFn::ExtractHamming,
            json!(["t", "o", "all", ""]),
            "bad arg \"comparator\"",
        ),
        (
            IndexFn::ExtractBuckets,
            json!(["t", "o", "all", [1], "x"]),
            "bad arg \"buckets\"",
        ),
        (
            IndexFn::ExtractCoalesce,
            json!([[], "o", "all", "|"]),
            "bad arg \"inputs\"",
        ),
        (
            IndexFn::ApplyRegex,
            json!(["t", "all", "("]),
            "reduce_index_applyregex: bad arg \"regex\"",
        ),
        (
            IndexFn::ApplyMask,
            json!(["t", "all", "1"]),
            "bad arg \"mask\"",
        ),
        (
            IndexFn::ApplyRange,
            json!(["t", "all", 1]),
            "arg must be a list of 4 (input, keep, low, high)",
        ),
        (
            IndexFn::CollateResults,
            json!(["s", "f", "all", "mid", 1]),
            "\"max\" or \"min\"",
        ),
        (
            IndexFn::Min,
            Value::Null,
            "reduce_index_min: arg must be a list of 2",
        ),
    ];
    for (f, arg, want) in cases {
        let err = Reducer::new(f, &arg).unwrap_err();
        assert!(err.contains(want), "{} {arg}: {err}", f.name());
    }
}
