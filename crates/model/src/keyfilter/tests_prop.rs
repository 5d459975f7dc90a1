//! Property tests: filters against small independent models (tokenize,
//! string_to_int and between/eq; starts_with/ends_with; Levenshtein; the
//! int/float order), and the laws of the logical steps over random
//! filters, failures included: `not(not f)` is `f`, `and` is `&&`, `or`
//! is `||` when its first list does not fail, De Morgan holds.

use std::borrow::Cow;
use std::cmp::Ordering;

use proptest::prelude::*;
use serde_json::{Value as Json, json};

use super::KeyFilter;
use super::eval::{Value, compare, within_distance};

fn parse(json: &Json) -> KeyFilter {
    KeyFilter::parse(json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

/// Match, no match, or `None`: a transform failed.
fn outcome(json: &Json, key: &[u8]) -> Option<bool> {
    parse(json).pipeline.run(Value::key(key))
}

/// Riak's tokens: split on the separator, empty tokens dropped.
fn model_tokens(key: &str, sep: char) -> Vec<&str> {
    key.split(sep).filter(|t| !t.is_empty()).collect()
}

/// Erlang's `list_to_integer/1`, within 64 bits: a sign, then digits.
fn model_int(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..)?),
        Some(b'+') => (false, text.get(1..)?),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut n: i128 = 0;
    for c in digits.bytes() {
        n = n * 10 + i128::from(c - b'0');
        if n > i128::from(u64::MAX) {
            return None;
        }
    }
    i64::try_from(if negative { -n } else { n }).ok()
}

/// The Levenshtein distance, the whole table.
fn model_distance(a: &[u8], b: &[u8]) -> usize {
    let mut table = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in table.iter_mut().enumerate() {
        row[0] = i;
    }
    table[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            table[i][j] = (table[i - 1][j] + 1)
                .min(table[i][j - 1] + 1)
                .min(table[i - 1][j - 1] + cost);
        }
    }
    table[a.len()][b.len()]
}

fn separator() -> impl Strategy<Value = char> {
    prop_oneof![Just('-'), Just('/')]
}

/// Keys made of numbers, signs, letters and separators.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-/a0-9+]{0,12}",
        prop::collection::vec(
            ("(\\+|-)?[0-9]{1,2}|[0-9]{19,20}|[a-c]{1,2}", "[-/]{1,2}"),
            0..5
        )
        .prop_map(|parts| parts.into_iter().map(|(t, s)| t + &s).collect()),
    ]
}

/// Small filters over keys like "ab-12", nested by not/and/or.
fn filter() -> impl Strategy<Value = Json> {
    let short = || "[a-c1-3]{0,2}";
    let atom = prop_oneof![
        (-5..50i64).prop_map(|n| json!([["string_to_int"], ["less_than", n]])),
        (1..3u64).prop_map(|i| json!([["tokenize", "-", i]])),
        (1..3u64, short()).prop_map(|(i, s)| json!([["tokenize", "-", i], ["eq", s]])),
        short().prop_map(|s| json!([["starts_with", s]])),
        Just(json!([["matches", "^[ab]"]])),
        Just(json!([["to_upper"], ["ends_with", "A"]])),
        (short(), 0..3u64).prop_map(|(s, d)| json!([["similar_to", s, d]])),
        Just(json!([])),
    ];
    atom.prop_recursive(3, 24, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|f| json!([["not", f]])),
            (inner.clone(), inner.clone()).prop_map(|(f, g)| json!([["and", f, g]])),
            (inner.clone(), inner).prop_map(|(f, g)| json!([["or", f, g]])),
        ]
    })
}

fn logic_key() -> impl Strategy<Value = String> {
    "[-abcA0-9]{0,8}"
}

fn term() -> impl Strategy<Value = Value<'static>> {
    prop_oneof![
        any::<i64>().prop_map(Value::Int),
        (-1e20..1e20f64).prop_map(Value::Float),
        any::<i64>().prop_map(|i| Value::Float(i as f64)),
        "[a-c]{0,3}".prop_map(|s| Value::Bytes(Cow::Owned(s.into_bytes()))),
    ]
}

proptest! {
    #[test]
    fn tokenize_string_to_int_between_agree_with_the_model(
        key in key(),
        sep in separator(),
        index in 1..4u64,
        low in -60..60i64,
        high in -60..60i64,
        inclusive in any::<bool>(),
    ) {
        let f = parse(&json!([
            ["tokenize", sep.to_string(), index],
            ["string_to_int"],
            ["between", low, high, inclusive],
        ]));
        let token = model_tokens(&key, sep).get(index as usize - 1).copied();
        let want = token.and_then(model_int).is_some_and(|n| match inclusive {
            true => low <= n && n <= high,
            false => low < n && n < high,
        });
        prop_assert_eq!(f.matches(key.as_bytes()), want);
    }

    #[test]
    fn tokenize_string_to_int_eq_agree_with_the_model(
        key in key(),
        sep in separator(),
        index in 1..4u64,
        n in -20..20i64,
    ) {
        let f = parse(&json!([["tokenize", sep.to_string(), index], ["string_to_int"], ["eq", n]]));
        let token = model_tokens(&key, sep).get(index as usize - 1).copied();
        prop_assert_eq!(f.matches(key.as_bytes()), token.and_then(model_int) == Some(n));
    }

    #[test]
    fn starts_with_and_ends_with_agree_with_the_model(key in "[ab]{0,6}", affix in "[ab]{0,3}") {
        let (k, a) = (key.as_bytes(), affix.as_bytes());
        let starts = k.len() >= a.len() && k.get(..a.len()) == Some(a);
        let ends = k.len() >= a.len() && k.get(k.len() - a.len()..) == Some(a);
        prop_assert_eq!(parse(&json!([["starts_with", affix]])).matches(k), starts);
        prop_assert_eq!(parse(&json!([["ends_with", affix]])).matches(k), ends);
    }

    #[test]
    fn similar_to_agrees_with_the_whole_levenshtein_table(
        a in prop::collection::vec(0..3u8, 0..9),
        b in prop::collection::vec(0..3u8, 0..9),
        max in 0..10u64,
    ) {
        prop_assert_eq!(within_distance(&a, &b, max), model_distance(&a, &b) as u64 <= max);
    }

    #[test]
    fn integers_and_floats_compare_by_value(i in -(1i64 << 53)..(1i64 << 53), f in -1e17..1e17f64) {
        let want = (i as f64).partial_cmp(&f).unwrap();
        prop_assert_eq!(compare(&Value::Int(i), &Value::Float(f)), want);
    }

    #[test]
    fn the_order_is_antisymmetric_and_numbers_come_first(a in term(), b in term()) {
        prop_assert_eq!(compare(&a, &b), compare(&b, &a).reverse());
        let is_number = |v: &Value<'_>| !matches!(v, Value::Bytes(_));
        if is_number(&a) && !is_number(&b) {
            prop_assert_eq!(compare(&a, &b), Ordering::Less);
        }
    }

    #[test]
    fn not_not_is_the_filter_itself(f in filter(), key in logic_key()) {
        let k = key.as_bytes();
        prop_assert_eq!(outcome(&json!([["not", [["not", f.clone()]]]]), k), outcome(&f, k));
    }

    #[test]
    fn not_negates_a_filter_whose_transforms_apply(f in filter(), key in logic_key()) {
        let k = key.as_bytes();
        if let Some(m) = outcome(&f, k) {
            prop_assert_eq!(parse(&json!([["not", f]])).matches(k), !m);
        }
    }

    #[test]
    fn and_is_both_and_or_is_either(f in filter(), g in filter(), key in logic_key()) {
        let k = key.as_bytes();
        let and = json!([["and", f.clone(), g.clone()]]);
        let or = json!([["or", f.clone(), g.clone()]]);
        let (mf, mg) = (parse(&f).matches(k), parse(&g).matches(k));
        prop_assert_eq!(parse(&and).matches(k), mf && mg);
        // Left to right, stopping at the first list that decides.
        let want_or = match outcome(&f, k) {
            Some(false) => outcome(&g, k),
            decided => decided,
        };
        prop_assert_eq!(outcome(&or, k), want_or);
        if outcome(&f, k).is_some() {
            prop_assert_eq!(parse(&or).matches(k), mf || mg);
        }
        let want_and = match outcome(&f, k) {
            Some(true) => outcome(&g, k),
            decided => decided,
        };
        prop_assert_eq!(outcome(&and, k), want_and);
    }

    #[test]
    fn de_morgan_holds(f in filter(), g in filter(), key in logic_key()) {
        let k = key.as_bytes();
        let not_and = json!([["not", [["and", f.clone(), g.clone()]]]]);
        let or_nots = json!([["or", [["not", f.clone()]], [["not", g.clone()]]]]);
        prop_assert_eq!(outcome(&not_and, k), outcome(&or_nots, k));
        let not_or = json!([["not", [["or", f.clone(), g.clone()]]]]);
        let and_nots = json!([["and", [["not", f]], [["not", g]]]]);
        prop_assert_eq!(outcome(&not_or, k), outcome(&and_nots, k));
    }

    #[test]
    fn a_filter_read_back_from_its_json_is_the_same_filter(f in filter(), key in logic_key()) {
        let parsed = parse(&f);
        let again = KeyFilter::from_json_text(parsed.json()).unwrap();
        prop_assert_eq!(&again, &parsed);
        prop_assert_eq!(again.matches(key.as_bytes()), parsed.matches(key.as_bytes()));
    }
}
