//! Table tests: every transform and predicate, Riak's documented
//! examples (the key filters reference and the invoices of "Using Key
//! Filters"), and every way a filter is refused.

use serde_json::json;

use super::{
    DEPTH_MAX, JSON_BYTES_MAX, KeyFilter, KeyFilterError, REGEX_BYTES_MAX, SET_MEMBERS_MAX,
    SIMILAR_TO_BYTES_MAX, STEPS_MAX,
};

fn filter(json: serde_json::Value) -> KeyFilter {
    match KeyFilter::parse(&json) {
        Ok(f) => f,
        Err(e) => panic!("{json} was refused: {e}"),
    }
}

/// The keys of `keys` that `json` matches.
fn kept<'k>(json: serde_json::Value, keys: &[&'k str]) -> Vec<&'k str> {
    let f = filter(json);
    keys.iter()
        .copied()
        .filter(|k| f.matches(k.as_bytes()))
        .collect()
}

fn refused(json: serde_json::Value) -> KeyFilterError {
    match KeyFilter::parse(&json) {
        Ok(f) => panic!("{json} was accepted as {f:?}"),
        Err(e) => e,
    }
}

const INVOICES: [&str; 5] = [
    "basho-20101215",
    "google-20110103",
    "yahoo-20090613",
    "Acme_Solutions-20100603",
    "basho-20100603",
];

#[test]
fn the_invoice_examples_of_using_key_filters() {
    let by_customer = json!([["tokenize", "-", 1], ["eq", "basho"]]);
    assert_eq!(
        kept(by_customer, &INVOICES),
        ["basho-20101215", "basho-20100603"]
    );
    let by_dates = json!([["tokenize", "-", 2], ["between", "20100101", "20101231"]]);
    assert_eq!(
        kept(by_dates, &INVOICES),
        [
            "basho-20101215",
            "Acme_Solutions-20100603",
            "basho-20100603"
        ]
    );
    let by_word = json!([["tokenize", "-", 1], ["to_lower"], ["matches", "solutions"]]);
    assert_eq!(kept(by_word, &INVOICES), ["Acme_Solutions-20100603"]);
    let on_june_3 = json!([["ends_with", "0603"]]);
    assert_eq!(
        kept(on_june_3, &INVOICES),
        ["Acme_Solutions-20100603", "basho-20100603"]
    );
}

#[test]
fn the_logical_examples_of_the_reference() {
    let and = json!([["and", [["ends_with", "0603"]], [["starts_with", "basho"]]]]);
    assert_eq!(kept(and, &INVOICES), ["basho-20100603"]);
    let or = json!([["or", [["eq", "google"]], [["less_than", "g"]]]]);
    assert_eq!(
        kept(or, &["google", "apple", "zebra", "Google"]),
        ["google", "apple", "Google"]
    );
    let not = json!([["not", [["matches", "solution"]]]]);
    assert_eq!(kept(not, &["solutions", "problems"]), ["problems"]);
}

#[test]
fn the_predicate_examples_of_the_reference() {
    let ints = ["5", "10", "15", "20", "50", "51", "2000", "-2", "-3", "x"];
    let int = |p: serde_json::Value| json!([["string_to_int"], p]);
    assert_eq!(
        kept(int(json!(["greater_than", 50])), &ints),
        ["51", "2000"]
    );
    assert_eq!(
        kept(int(json!(["less_than", 10])), &ints),
        ["5", "-2", "-3"]
    );
    assert_eq!(kept(int(json!(["greater_than_eq", 2000])), &ints), ["2000"]);
    assert_eq!(kept(int(json!(["less_than_eq", -2])), &ints), ["-2", "-3"]);
    assert_eq!(kept(int(json!(["between", 10, 20, false])), &ints), ["15"]);
    assert_eq!(
        kept(int(json!(["between", 10, 20])), &ints),
        ["10", "15", "20"]
    );
    assert_eq!(
        kept(int(json!(["between", 10, 20, true])), &ints),
        ["10", "15", "20"]
    );
    assert_eq!(kept(json!([["neq", "foo"]]), &["foo", "bar"]), ["bar"]);
    assert_eq!(
        kept(json!([["eq", "basho"]]), &["basho", "bash"]),
        ["basho"]
    );
    let set = json!([["set_member", "basho", "google", "yahoo"]]);
    assert_eq!(
        kept(set, &["basho", "riak", "yahoo", "googl"]),
        ["basho", "yahoo"]
    );
    let similar = json!([["similar_to", "newyork", 3]]);
    assert_eq!(
        kept(similar, &["newyork", "newark", "york", "boston", "NewYork"]),
        ["newyork", "newark", "york", "NewYork"]
    );
    let starts = json!([["starts_with", "closed"]]);
    assert_eq!(kept(starts, &["closed-1", "open-1", "close"]), ["closed-1"]);
}

#[test]
fn string_to_int_takes_erlang_integers_only() {
    let f = |n: i64| json!([["string_to_int"], ["eq", n]]);
    assert_eq!(
        kept(f(42), &["42", "042", "+42", "42 ", "4.2e1"]),
        ["42", "042", "+42"]
    );
    assert_eq!(kept(f(-7), &["-7", "-07", "- 7"]), ["-7", "-07"]);
    let any_int = json!([["string_to_int"]]);
    assert_eq!(
        kept(
            any_int,
            &[
                "",
                "-",
                "abc",
                "9223372036854775807",
                "9223372036854775808",
                "1_0"
            ]
        ),
        ["9223372036854775807"]
    );
}

#[test]
fn int_to_string_writes_decimal_and_takes_integers_only() {
    let f = json!([["string_to_int"], ["int_to_string"], ["eq", "7"]]);
    assert_eq!(kept(f, &["007", "+7", "7", "7.0"]), ["007", "+7", "7"]);
    assert_eq!(kept(json!([["int_to_string"]]), &["7"]), Vec::<&str>::new());
}

#[test]
fn string_to_float_takes_erlang_floats_only() {
    let any = json!([["string_to_float"]]);
    let keys = [
        "1.5", "-2.0E-1", "+3.25e2", "1", ".5", "1.", "1e5", "1.0e", "1.0e999", "nan", "inf",
        "1.5x",
    ];
    assert_eq!(kept(any, &keys), ["1.5", "-2.0E-1", "+3.25e2"]);
    let f = json!([["string_to_float"], ["eq", 325]]);
    assert_eq!(
        kept(f, &["+3.25e2", "325.0", "325.5"]),
        ["+3.25e2", "325.0"]
    );
}

#[test]
fn float_to_string_writes_as_erlang_does() {
    let f = |text: &str| json!([["string_to_float"], ["float_to_string"], ["eq", text]]);
    assert_eq!(kept(f("1.50000000000000000000e+00"), &["1.5"]), ["1.5"]);
    assert_eq!(
        kept(f("-1.56250000000000000000e-02"), &["-0.015625"]),
        ["-0.015625"]
    );
    // The exact decimal digits of the nearest double, as printf's %.20e.
    assert_eq!(kept(f("1.00000000000000005551e-01"), &["0.1"]), ["0.1"]);
    assert_eq!(
        kept(f("1.23000000000000000000e+12"), &["123.0e10"]),
        ["123.0e10"]
    );
    assert_eq!(
        kept(f("1.00000000000000000000e+22"), &["1.0e22"]),
        ["1.0e22"]
    );
    let on_int = json!([["string_to_int"], ["float_to_string"]]);
    assert_eq!(kept(on_int, &["1"]), Vec::<&str>::new());
}

#[test]
fn case_changes_ascii_letters_only() {
    let upper = json!([["to_upper"], ["eq", "BASHO-1É"]]);
    assert_eq!(kept(upper, &["Basho-1É", "basho-1é"]), ["Basho-1É"]);
    let lower = json!([["to_lower"], ["eq", "basho"]]);
    assert_eq!(
        kept(lower, &["BaShO", "BASHO ", "basho"]),
        ["BaShO", "basho"]
    );
    let on_int = json!([["string_to_int"], ["to_upper"]]);
    assert_eq!(kept(on_int, &["1"]), Vec::<&str>::new());
}

#[test]
fn tokenize_splits_on_any_separator_byte_and_drops_empty_tokens() {
    let nth = |sep: &str, i: u64, want: &str| json!([["tokenize", sep, i], ["eq", want]]);
    assert_eq!(
        kept(nth("/", 4, "d"), &["a/b/c/d/e", "a/b/c"]),
        ["a/b/c/d/e"]
    );
    assert_eq!(
        kept(nth("-", 2, "b"), &["a--b", "-a-b-", "a-c"]),
        ["a--b", "-a-b-"]
    );
    assert_eq!(
        kept(nth("-_", 3, "c"), &["a_b-c", "a-b-c", "a_b_d"]),
        ["a_b-c", "a-b-c"]
    );
    assert_eq!(kept(nth("", 1, "a-b"), &["a-b"]), ["a-b"]);
    let past_the_end = json!([["tokenize", "-", 3]]);
    assert_eq!(
        kept(past_the_end, &["a-b", "a-b-c", "--a--b--", ""]),
        ["a-b-c"]
    );
    let on_int = json!([["string_to_int"], ["tokenize", "-", 1]]);
    assert_eq!(kept(on_int, &["1"]), Vec::<&str>::new());
}

#[test]
fn urldecode_decodes_percents_and_pluses() {
    let f = |want: &str| json!([["urldecode"], ["eq", want]]);
    assert_eq!(
        kept(f("a b"), &["a%20b", "a+b", "a b", "a%2Bb"]),
        ["a%20b", "a+b", "a b"]
    );
    assert_eq!(kept(f("AB"), &["%41%42", "%41%4"]), ["%41%42"]);
    assert_eq!(kept(f("%zz%4"), &["%zz%4"]), ["%zz%4"]);
    let f = filter(json!([["urldecode"], ["eq", "é"]]));
    assert!(f.matches(b"%C3%a9"));
    assert!(!f.matches(b"%C3"));
}

#[test]
fn kinds_compare_in_erlang_term_order() {
    // Any number sorts before any string.
    let int_below_string = json!([["string_to_int"], ["less_than", "0"]]);
    assert_eq!(
        kept(int_below_string, &["-5", "999999", "x"]),
        ["-5", "999999"]
    );
    assert_eq!(
        kept(json!([["greater_than", 5]]), &["abc", ""]),
        ["abc", ""]
    );
    assert_eq!(kept(json!([["eq", 5]]), &["5"]), Vec::<&str>::new());
    // Integers and floats compare by value.
    let int = |p: serde_json::Value| json!([["string_to_int"], p]);
    assert_eq!(kept(int(json!(["eq", 1.0])), &["1", "2"]), ["1"]);
    assert_eq!(kept(int(json!(["less_than", 1.5])), &["1", "2"]), ["1"]);
    assert_eq!(
        kept(int(json!(["between", -0.5, 0.5])), &["-1", "0", "1"]),
        ["0"]
    );
    assert_eq!(
        kept(int(json!(["set_member", 2.0, "3", 4])), &["2", "3", "4"]),
        ["2", "4"]
    );
    // Exactly, where an i64 does not fit an f64: 2^63 - 1 < 2^63.
    let max = i64::MAX.to_string();
    let huge = int(json!(["less_than", 9_223_372_036_854_775_808.0_f64]));
    assert_eq!(kept(huge, &[max.as_str()]), [max.as_str()]);
    let just_below = int(json!(["greater_than", 9_007_199_254_740_992.0_f64]));
    assert_eq!(
        kept(just_below, &["9007199254740993", "9007199254740992"]),
        ["9007199254740993"]
    );
    // Strings compare byte by byte.
    assert_eq!(
        kept(json!([["less_than", "b"]]), &["a", "B", "b", "ba"]),
        ["a", "B"]
    );
}

#[test]
fn string_predicates_on_numbers_are_false() {
    for p in [
        json!(["matches", "1"]),
        json!(["starts_with", "1"]),
        json!(["ends_with", "1"]),
        json!(["similar_to", "1", 5]),
    ] {
        let f = json!([["string_to_int"], p.clone()]);
        assert_eq!(kept(f, &["1"]), Vec::<&str>::new(), "{p}");
    }
}

#[test]
fn matches_runs_on_bytes_as_erlang_re_does_on_binaries() {
    let f = filter(json!([["matches", "^a.b$"]]));
    assert!(f.matches(b"a\xffb"));
    assert!(!f.matches("aéb".as_bytes()), "é is two bytes");
    assert!(filter(json!([["matches", "^aéb$"]])).matches("aéb".as_bytes()));
    assert!(filter(json!([["matches", "(?u)^a.b$"]])).matches("aéb".as_bytes()));
    assert!(!filter(json!([["matches", "^\\w$"]])).matches("é".as_bytes()));
}

#[test]
fn similar_to_counts_byte_edits() {
    let f = |d: u64| filter(json!([["similar_to", "kitten", d]]));
    assert!(f(3).matches(b"sitting"));
    assert!(!f(2).matches(b"sitting"));
    assert!(f(0).matches(b"kitten"));
    assert!(!f(0).matches(b"kittens"));
    assert!(f(6).matches(b""));
    assert!(f(u64::MAX).matches(&[0xff; 300]));
}

#[test]
fn a_list_without_a_predicate_matches_when_its_transforms_apply() {
    assert_eq!(kept(json!([]), &["a", ""]), ["a", ""]);
    assert_eq!(kept(json!([["string_to_int"]]), &["1", "a"]), ["1"]);
    let nested = json!([["and", [], [["starts_with", "a"]]]]);
    assert_eq!(kept(nested, &["ab", "b"]), ["ab"]);
}

#[test]
fn a_failed_transform_drops_the_key_even_under_not() {
    let not_int = json!([["not", [["string_to_int"], ["eq", 5]]]]);
    assert_eq!(kept(not_int, &["5", "6", "abc"]), ["6"]);
    let never = json!([["not", [["string_to_int"]]]]);
    assert_eq!(kept(never, &["5", "abc"]), Vec::<&str>::new());
}

#[test]
fn and_and_or_stop_at_the_first_list_that_decides() {
    let or = json!([[
        "or",
        [["eq", "special"]],
        [["string_to_int"], ["less_than", 100]]
    ]]);
    assert_eq!(
        kept(or, &["special", "other", "50", "500"]),
        ["special", "50"]
    );
    let and = json!([["and", [["starts_with", "n"]], [["string_to_int"]]]]);
    assert_eq!(kept(and, &["n1", "1", "x"]), Vec::<&str>::new());
    let three = json!([[
        "and",
        [["starts_with", "a"]],
        [["ends_with", "z"]],
        [["matches", "m"]]
    ]]);
    assert_eq!(kept(three, &["amz", "az", "mz", "amy"]), ["amz"]);
    let or3 = json!([["or", [["eq", "a"]], [["eq", "b"]], [["eq", "c"]]]]);
    assert_eq!(kept(or3, &["a", "b", "c", "d"]), ["a", "b", "c"]);
}

#[test]
fn logical_steps_see_the_value_the_transforms_before_them_made() {
    let f = json!([
        ["tokenize", "-", 2],
        ["string_to_int"],
        ["and", [["greater_than", 5]], [["not", [["eq", 7]]]]]
    ]);
    assert_eq!(
        kept(f, &["a-6", "a-7", "a-8", "a-5", "a-x", "a"]),
        ["a-6", "a-8"]
    );
    let f = json!([[
        "and",
        [["tokenize", "-", 1], ["eq", "a"]],
        [["tokenize", "-", 2], ["string_to_int"], ["greater_than", 5]]
    ]]);
    assert_eq!(kept(f, &["a-6", "b-6", "a-5"]), ["a-6"]);
}

#[test]
fn a_filter_keeps_its_json_and_reads_back_from_it() {
    let json = json!([["tokenize", "-", 1], ["eq", "basho"]]);
    let f = filter(json.clone());
    assert_eq!(f.json(), r#"[["tokenize","-",1],["eq","basho"]]"#);
    let again = KeyFilter::from_json_text(f.json()).unwrap();
    assert_eq!(again, f);
    let spaced = KeyFilter::from_json_text(r#"[ ["eq", "a"] ]"#).unwrap();
    assert_eq!(spaced.json(), r#"[ ["eq", "a"] ]"#);
    assert!(spaced.matches(b"a"));
}

// Every way a filter is refused, each naming what is wrong.

fn says(e: &KeyFilterError, words: &str) {
    assert!(e.to_string().contains(words), "{e:?} / {e} lacks {words:?}");
}

#[test]
fn a_filter_must_be_a_list_of_lists_named_by_a_known_filter() {
    says(&refused(json!({"eq": "a"})), "must be a list of filters");
    says(&refused(json!("eq")), "must be a list of filters");
    says(
        &refused(json!(["eq", "a"])),
        "must be a list starting with its name",
    );
    says(
        &refused(json!([[]])),
        "must be a list starting with its name",
    );
    says(
        &refused(json!([[1, 2]])),
        "must be a list starting with its name",
    );
    says(&refused(json!([["nope"]])), "unknown key filter \"nope\"");
    says(&refused(json!([["EQ", "a"]])), "unknown key filter \"EQ\"");
    says(
        &refused(json!([["and", "x", [["eq", "a"]]]])),
        "must be a list of filters, got \"x\"",
    );
    let e = KeyFilter::from_json_text("[[\"eq\"").unwrap_err();
    assert!(matches!(e, KeyFilterError::NotJson(_)), "{e:?}");
}

#[test]
fn wrong_arities_are_refused_naming_the_filter() {
    let cases = [
        (
            json!([["to_upper", 1]]),
            "\"to_upper\" takes no arguments, got 1",
        ),
        (
            json!([["string_to_int", "x"]]),
            "\"string_to_int\" takes no arguments",
        ),
        (json!([["tokenize", "-"]]), "\"tokenize\" takes 2 arguments"),
        (
            json!([["between", 1]]),
            "\"between\" takes 2 or 3 arguments",
        ),
        (
            json!([["between", 1, 2, true, 4]]),
            "\"between\" takes 2 or 3 arguments",
        ),
        (json!([["eq"]]), "\"eq\" takes 1 argument, got 0"),
        (
            json!([["less_than", 1, 2]]),
            "\"less_than\" takes 1 argument, got 2",
        ),
        (json!([["matches"]]), "\"matches\" takes 1 argument"),
        (
            json!([["similar_to", "a"]]),
            "\"similar_to\" takes 2 arguments",
        ),
        (json!([["starts_with"]]), "\"starts_with\" takes 1 argument"),
        (
            json!([["and", [["eq", "a"]]]]),
            "\"and\" takes 2 or more filter lists, got 1",
        ),
        (
            json!([["or"]]),
            "\"or\" takes 2 or more filter lists, got 0",
        ),
        (json!([["not"]]), "\"not\" takes 1 filter list, got 0"),
        (
            json!([["not", [], []]]),
            "\"not\" takes 1 filter list, got 2",
        ),
    ];
    for (json, words) in cases {
        let e = refused(json);
        assert!(matches!(e, KeyFilterError::Arity { .. }), "{e:?}");
        says(&e, words);
    }
}

#[test]
fn wrong_argument_types_are_refused_naming_the_filter_and_position() {
    let cases = [
        (
            json!([["tokenize", 1, 1]]),
            "\"tokenize\": argument 1 must be a string, got 1",
        ),
        (
            json!([["tokenize", "-", 0]]),
            "\"tokenize\": argument 2 must be a positive integer",
        ),
        (
            json!([["tokenize", "-", -1]]),
            "argument 2 must be a positive integer, got -1",
        ),
        (
            json!([["tokenize", "-", 1.5]]),
            "argument 2 must be a positive integer, got 1.5",
        ),
        (
            json!([["eq", null]]),
            "\"eq\": argument 1 must be a string or a number",
        ),
        (
            json!([["neq", [1]]]),
            "\"neq\": argument 1 must be a string or a number",
        ),
        (
            json!([["greater_than", true]]),
            "\"greater_than\": argument 1",
        ),
        (
            json!([["eq", u64::MAX]]),
            "integers within 64 bits), got 18446744073709551615",
        ),
        (
            json!([["between", 1, {}]]),
            "\"between\": argument 2 must be a string or a number",
        ),
        (
            json!([["between", 1, 2, "yes"]]),
            "\"between\": argument 3 must be true or false",
        ),
        (
            json!([["matches", 5]]),
            "\"matches\": argument 1 must be a string",
        ),
        (
            json!([["set_member", "a", null]]),
            "\"set_member\": argument 2 must be",
        ),
        (
            json!([["similar_to", 1, 1]]),
            "\"similar_to\": argument 1 must be a string",
        ),
        (
            json!([["similar_to", "a", -1]]),
            "argument 2 must be a non-negative integer",
        ),
        (
            json!([["starts_with", 1]]),
            "\"starts_with\": argument 1 must be a string",
        ),
        (
            json!([["ends_with", ["a"]]]),
            "\"ends_with\": argument 1 must be a string",
        ),
    ];
    for (json, words) in cases {
        let e = refused(json);
        assert!(matches!(e, KeyFilterError::Argument { .. }), "{e:?}");
        says(&e, words);
    }
}

#[test]
fn a_bad_regex_is_refused_with_its_reason() {
    let e = refused(json!([["matches", "(unclosed"]]));
    assert!(matches!(e, KeyFilterError::Regex { .. }), "{e:?}");
    says(&e, "\"matches\": invalid regular expression \"(unclosed\"");
    // Within the length limit but too large once compiled.
    let e = refused(json!([["matches", "(?:a{1000}){1000}"]]));
    assert!(matches!(e, KeyFilterError::Regex { .. }), "{e:?}");
}

#[test]
fn a_predicate_must_end_its_list() {
    let e = refused(json!([["eq", "a"], ["to_upper"]]));
    assert_eq!(e, KeyFilterError::PredicateNotLast("eq"));
    says(&e, "\"eq\" is a predicate and must be the last step");
    let nested = refused(json!([["not", [["starts_with", "a"], ["ends_with", "b"]]]]));
    assert_eq!(nested, KeyFilterError::PredicateNotLast("starts_with"));
    let logical = refused(json!([["not", [["eq", "a"]]], ["eq", "b"]]));
    assert_eq!(logical, KeyFilterError::PredicateNotLast("not"));
}

/// `depth` lists nested by `not`, the innermost `[["eq", "a"]]`.
fn nested(depth: usize) -> serde_json::Value {
    let mut f = json!([["eq", "a"]]);
    for _ in 1..depth {
        f = json!([["not", f]]);
    }
    f
}

fn limit_of(e: &KeyFilterError) -> (&'static str, usize, usize) {
    match e {
        KeyFilterError::Limit { what, size, max } => (what, *size, *max),
        other => panic!("not a limit: {other:?}"),
    }
}

#[test]
fn every_limit_is_enforced_at_its_edge() {
    // Steps, nested steps and the logical steps counted.
    let steps = |n: usize| serde_json::Value::Array(vec![json!(["to_upper"]); n]);
    filter(steps(STEPS_MAX));
    let e = refused(steps(STEPS_MAX + 1));
    assert_eq!(limit_of(&e), ("key filter steps", STEPS_MAX + 1, STEPS_MAX));
    filter(json!([["not", steps(STEPS_MAX - 1)]]));
    let e = refused(json!([["not", steps(STEPS_MAX)]]));
    assert_eq!(limit_of(&e), ("key filter steps", STEPS_MAX + 1, STEPS_MAX));
    // Nesting.
    filter(nested(DEPTH_MAX));
    let e = refused(nested(DEPTH_MAX + 1));
    assert_eq!(
        limit_of(&e),
        ("key filter nesting depth", DEPTH_MAX + 1, DEPTH_MAX)
    );
    // A regex's length.
    filter(json!([["matches", "a".repeat(REGEX_BYTES_MAX)]]));
    let e = refused(json!([["matches", "a".repeat(REGEX_BYTES_MAX + 1)]]));
    let (what, size, max) = limit_of(&e);
    assert!(what.contains("\"matches\""), "{what}");
    assert_eq!((size, max), (REGEX_BYTES_MAX + 1, REGEX_BYTES_MAX));
    // set_member's members.
    let set = |n: usize| {
        let mut step = vec![json!("set_member")];
        step.extend((0..n).map(|i| json!(i)));
        json!([step])
    };
    filter(set(SET_MEMBERS_MAX));
    let e = refused(set(SET_MEMBERS_MAX + 1));
    assert_eq!(
        limit_of(&e),
        (
            "key filter \"set_member\" members",
            SET_MEMBERS_MAX + 1,
            SET_MEMBERS_MAX
        )
    );
    // similar_to's string.
    filter(json!([["similar_to", "a".repeat(SIMILAR_TO_BYTES_MAX), 1]]));
    let e = refused(json!([[
        "similar_to",
        "a".repeat(SIMILAR_TO_BYTES_MAX + 1),
        1
    ]]));
    assert_eq!(limit_of(&e).1, SIMILAR_TO_BYTES_MAX + 1);
    // The whole filter's JSON.
    let pad = |n: usize| json!([["eq", "a".repeat(n)]]);
    let fixed = pad(0).to_string().len();
    filter(pad(JSON_BYTES_MAX - fixed));
    let e = refused(pad(JSON_BYTES_MAX - fixed + 1));
    assert_eq!(
        limit_of(&e),
        ("key filter JSON bytes", JSON_BYTES_MAX + 1, JSON_BYTES_MAX)
    );
    let long_text = format!("{}{}", pad(0), " ".repeat(JSON_BYTES_MAX + 1 - fixed));
    let e = KeyFilter::from_json_text(&long_text).unwrap_err();
    assert_eq!(limit_of(&e).1, JSON_BYTES_MAX + 1);
}
