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
        ("duration = \"3s\"", "duration = \"3 days\"", "3 days"),
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
