//! Parsing and validation of workload files, and the shipped workloads.

use super::*;

const MINIMAL: &str = r#"
    duration = "3s"
    [driver]
    protocol = "pb"
    endpoints = ["127.0.0.1:8087"]
    bucket = "b"
    [operations]
    get = 1
    [keys]
    generator = "uniform_int"
    max = 100
    [values]
    generator = "fixed_bin"
    size = 10
"#;

fn error_of(text: &str) -> String {
    parse_valid(text)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// MINIMAL with `from` replaced by `to`.
fn edited(from: &str, to: &str) -> String {
    assert!(MINIMAL.contains(from), "{from}");
    MINIMAL.replacen(from, to, 1)
}

#[test]
fn minimal_config_has_defaults() {
    let c = parse_valid(MINIMAL).unwrap();
    assert_eq!(c.mode, Mode::Max);
    assert_eq!(c.concurrent, 8);
    assert_eq!(c.report_interval.0, std::time::Duration::from_secs(1));
    assert_eq!(c.request_timeout.0, std::time::Duration::from_secs(5));
    assert_eq!(c.baseline.0, std::time::Duration::from_secs(5));
    assert_eq!(c.keys.format, KeyFormat::Decimal);
    assert!(!c.request.returnbody);
}

#[test]
fn key_formats_parse() {
    for (name, format) in [
        ("decimal", KeyFormat::Decimal),
        ("plain", KeyFormat::Plain),
        ("binary", KeyFormat::Binary),
    ] {
        let text = edited("max = 100", &format!("max = 100\nformat = \"{name}\""));
        assert_eq!(parse_valid(&text).unwrap().keys.format, format);
    }
    assert!(error_of(&edited("max = 100", "max = 100\nformat = \"hex\"")).contains("hex"));
}

#[test]
fn not_found_is_a_success_unless_told() {
    assert_eq!(
        parse_valid(MINIMAL).unwrap().request.not_found,
        NotFound::Success
    );
    let text = format!("{MINIMAL}\n[request]\nnot_found = \"error\"\n");
    assert_eq!(
        parse_valid(&text).unwrap().request.not_found,
        NotFound::Error
    );
    let text = format!("{MINIMAL}\n[request]\nnot_found = \"maybe\"\n");
    assert!(error_of(&text).contains("maybe"));
}

#[test]
fn unknown_keys_are_named() {
    let e = error_of(&format!("colour = 1\n{MINIMAL}"));
    assert!(e.contains("colour"), "{e}");
    let e = error_of(&edited("max = 100", "max = 100\nmaximum = 3"));
    assert!(e.contains("maximum"), "{e}");
    let e = error_of(&edited("bucket = \"b\"", "bucket = \"b\"\nbuckets = 2"));
    assert!(e.contains("buckets"), "{e}");
}

#[test]
fn bad_values_are_named() {
    for (from, to, named) in [
        (
            "generator = \"uniform_int\"",
            "generator = \"zipf\"",
            "zipf",
        ),
        ("protocol = \"pb\"", "protocol = \"grpc\"", "grpc"),
        (
            "duration = \"3s\"",
            "duration = \"3 fortnights\"",
            "3 fortnights",
        ),
        ("max = 100", "max = 0", "keys.max"),
        ("max = 100", "order = \"key_order\"\nmax = 5", "keys.order"),
        ("get = 1", "scan = 1", "operations.scan"),
        ("get = 1", "get = 0", "operations"),
        ("get = 1", "index_query = 1", "`index`"),
        ("size = 10", "size = 0", "values.size"),
        (
            "\"fixed_bin\"",
            "\"semi_compressible\"",
            "values.compression_ratio",
        ),
        (
            "\"fixed_bin\"",
            "\"random_bin\"\nsize_min = 20\nsize_max = 10",
            "values.size_min",
        ),
        (
            "[\"127.0.0.1:8087\"]",
            "[\"localhost\"]",
            "driver.endpoints",
        ),
        ("[\"127.0.0.1:8087\"]", "[]", "driver.endpoints"),
        (
            "duration = \"3s\"",
            "duration = \"3s\"\nmode = \"rate\"",
            "`rate`",
        ),
        (
            "duration = \"3s\"",
            "duration = \"3s\"\nconcurrent = 0",
            "concurrent",
        ),
        (
            "duration = \"3s\"",
            "duration = \"3s\"\n[request]\nw = \"most\"",
            "most",
        ),
    ] {
        let e = error_of(&edited(from, to));
        assert!(e.contains(named), "{to}: expected {named:?} in {e:?}");
    }
}

#[test]
fn multi_key_operations_need_their_batch_size() {
    let e = error_of(&edited("get = 1", "multi_get = 1"));
    assert!(e.contains("[multi_get] section"), "{e}");
    let e = error_of(&edited("get = 1", "multi_put = 1"));
    assert!(e.contains("[multi_put] section"), "{e}");
    let native = edited("get = 1", "multi_get = 1\n[multi_get]\nkeys = 10");
    let c = parse_valid(&native).unwrap();
    assert_eq!(c.multi_get.unwrap().via, crate::config::MultiGetVia::Native);
    let e = error_of(&edited(
        "get = 1",
        "multi_get = 1\n[multi_get]\nkeys = 1001",
    ));
    assert!(
        e.contains("multi_get.keys") && e.contains("1 to 1000"),
        "{e}"
    );
    let mapreduce = edited(
        "get = 1",
        "multi_get = 1\n[multi_get]\nkeys = 5000\nvia = \"mapreduce\"",
    );
    assert!(
        parse_valid(&mapreduce).is_ok(),
        "Riak's way takes more keys"
    );
    let e = error_of(&edited("get = 1", "multi_put = 1\n[multi_put]\nkeys = 0"));
    assert!(e.contains("multi_put.keys"), "{e}");
    let ok = edited("get = 1", "multi_put = 2\n[multi_put]\nkeys = 100");
    assert!(parse_valid(&ok).is_ok());
}

#[test]
fn rate_mode_and_quorums_parse() {
    let text = edited(
        "duration = \"3s\"",
        "duration = \"3s\"\nmode = \"rate\"\nrate = 50\n[request]\nw = \"one\"\ndw = 0\nreturnbody = true",
    );
    let c = parse_valid(&text).unwrap();
    assert_eq!((c.mode, c.rate), (Mode::Rate, Some(50.0)));
    assert_eq!(c.request.w, Some(Quorum::One));
    assert_eq!(c.request.dw, Some(Quorum::Count(0)));
    assert!(c.request.returnbody);
}

#[test]
fn overrides_replace_duration_and_endpoints() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.toml");
    std::fs::write(&path, MINIMAL).unwrap();
    let o = Overrides {
        duration: Some(Span::parse("1500ms").unwrap()),
        endpoints: vec!["10.0.0.1:1".into()],
        baseline: Some(Span::parse("0s").unwrap()),
    };
    let (c, text) = load(&path, &o).unwrap();
    assert_eq!(c.duration.0.as_millis(), 1500);
    assert!(c.baseline.0.is_zero());
    assert_eq!(c.driver.endpoints, ["10.0.0.1:1"]);
    assert_eq!(text, MINIMAL);
    let e = load(&dir.path().join("none.toml"), &o).unwrap_err();
    assert!(e.to_string().contains("none.toml"), "{e}");
}

#[test]
fn every_shipped_workload_loads() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                text.starts_with("# Seed 00"),
                "{}: header names its seed",
                path.display()
            );
            load(&path, &Overrides::default())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            count += 1;
        }
    }
    assert!(count >= 16, "only {count} workloads in bench/");
}

#[test]
fn the_baseline_can_be_set_or_skipped() {
    let skip = edited("duration = \"3s\"", "duration = \"3s\"\nbaseline = \"0s\"");
    assert!(parse_valid(&skip).unwrap().baseline.0.is_zero());
    let short = edited(
        "duration = \"3s\"",
        "duration = \"3s\"\nbaseline = \"500ms\"",
    );
    assert_eq!(parse_valid(&short).unwrap().baseline.0.as_millis(), 500);
}

/// MINIMAL with json values (affiliate_id, redeemed_count), puts and 2i
/// queries, and `index` as its `[index]` section.
fn with_index(index: &str) -> String {
    let text = edited(
        "generator = \"fixed_bin\"\n    size = 10",
        "generator = \"json\"\n    size = 200\n    [values.int_fields]\n    affiliate_id = 1000\n    redeemed_count = 100",
    );
    let text = text.replace("get = 1", "put = 1\nindex_query = 1");
    format!("{text}\n[index]\n{index}\n")
}

#[test]
fn one_index_field_still_loads_as_before() {
    let c = parse_valid(&with_index("field = \"redeemed_count_int\"\nterms = 100")).unwrap();
    let i = c.index.unwrap();
    assert_eq!(i.field.as_deref(), Some("redeemed_count_int"));
    assert_eq!((i.terms, i.entries.len()), (Some(100), 0));
    for (index, named) in [
        ("terms = 100", "index.field"),
        ("field = \"redeemed_count_int\"", "index.terms"),
        ("field = \"redeemed_count_int\"\nterms = 0", "index.terms"),
        ("field = \"redeemed_count\"\nterms = 5", "index.field"),
        (
            "field = \"x_int\"\nterms = 5\nrange_width = 0",
            "index.range_width",
        ),
    ] {
        let e = error_of(&with_index(index));
        assert!(e.contains(named), "{index}: expected {named:?} in {e:?}");
    }
}

#[test]
fn several_index_entries_parse_and_name_the_queried_one() {
    let text = with_index(
        r#"field = "affiliate_bin"
        [[index.entries]]
        field = "redeemed_count_int"
        from = "redeemed_count"
        [[index.entries]]
        field = "affiliate_bin"
        from = "affiliate_id"
        prefix = "affiliate-"
        "#,
    );
    let i = parse_valid(&text).unwrap().index.unwrap();
    assert_eq!(i.entries.len(), 2);
    assert_eq!(i.entries[1].prefix, "affiliate-");
    // The shipped coupon load uses this form.
    let round_trip = toml::to_string(&parse_valid(&text).unwrap()).unwrap();
    assert!(parse_valid(&round_trip).is_ok(), "{round_trip}");
}

#[test]
fn bad_index_entries_are_named() {
    let entry = |body: &str| with_index(&format!("[[index.entries]]\n{body}"));
    for (text, named, says) in [
        (
            entry("field = \"a_int\"\nfrom = \"redeemed_count\"\nterms = 3"),
            "index.entries[0]",
            "exactly one of",
        ),
        (
            entry("field = \"a_int\""),
            "index.entries[0]",
            "exactly one of",
        ),
        (
            entry("field = \"a_int\"\nfrom = \"redeemed\""),
            "index.entries[0].from",
            "affiliate_id, redeemed_count",
        ),
        (
            entry("field = \"a_int\"\nterms = 0"),
            "index.entries[0].terms",
            "at least 1",
        ),
        (
            entry("field = \"a\"\nterms = 3"),
            "index.entries[0].field",
            "_int or _bin",
        ),
        (
            entry("field = \"a_int\"\nterms = 3\nprefix = \"x-\""),
            "index.entries[0].prefix",
            "only for _bin",
        ),
        (
            entry("field = \"a_bin\"\nterms = 3\nprefix = \"x, y\""),
            "index.entries[0].prefix",
            "commas",
        ),
        (
            entry("field = \"a_int\"\nterms = 3\n[[index.entries]]\nfield = \"a_int\"\nterms = 4"),
            "index.entries[1].field",
            "already an entry",
        ),
        (
            entry("field = \"a_int\"\nterms = 3\nshape = 1"),
            "shape",
            "unknown field",
        ),
        (
            with_index("terms = 3\n[[index.entries]]\nfield = \"a_int\"\nterms = 3"),
            "index.terms",
            "each entry its own",
        ),
        (
            with_index("field = \"b_int\"\n[[index.entries]]\nfield = \"a_int\"\nterms = 3"),
            "index.field",
            "entries: a_int",
        ),
        (
            with_index(
                "query = \"range\"\n[[index.entries]]\nfield = \"a_bin\"\nfrom = \"affiliate_id\"",
            ),
            "index.query",
            "compare text",
        ),
    ] {
        let e = error_of(&text);
        assert!(
            e.contains(named) && e.contains(says),
            "expected {named:?} and {says:?} in {e:?}"
        );
    }
    // A range over padded random _bin terms, or an _int entry, is fine.
    let padded = with_index("query = \"range\"\n[[index.entries]]\nfield = \"a_bin\"\nterms = 9");
    assert!(parse_valid(&padded).is_ok());
    // `from` needs json values with that field.
    let binary = edited(
        "get = 1",
        "put = 1\n[index]\n[[index.entries]]\nfield = \"a_int\"\nfrom = \"n\"",
    );
    assert!(
        error_of(&binary).contains("no values.int_fields"),
        "{}",
        error_of(&binary)
    );
}

#[test]
fn once_walks_ordered_keys_with_an_operation_that_draws_them() {
    let once = |generator: &str, ops: &str| {
        MINIMAL
            .replace("\"uniform_int\"", generator)
            .replace("max = 100", "max = 100\nonce = true")
            .replace("get = 1", ops)
    };
    let c = parse_valid(&once("\"partitioned_sequential_int\"", "put = 1")).unwrap();
    assert!(c.keys.once);
    assert!(!parse_valid(MINIMAL).unwrap().keys.once, "off by default");
    assert!(parse_valid(&once("\"sequential_int\"", "get = 1\nmapreduce = 1")).is_ok());
    let e = error_of(&once("\"uniform_int\"", "put = 1"));
    assert!(
        e.contains("keys.once") && e.contains("sequential_int"),
        "{e}"
    );
    let e = error_of(&once("\"sequential_int\"", "mapreduce = 1"));
    assert!(
        e.contains("keys.once") && e.contains("never use the keys up"),
        "{e}"
    );
}
