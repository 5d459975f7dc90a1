//! Runs the built `eddy` binary's storage benchmark end to end.
#![cfg(feature = "bench")]

use std::process::Command;

fn eddy(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_eddy"))
        .args(args)
        .output()
        .expect("the eddy binary runs")
}

fn positive(v: &serde_json::Value, field: &str) -> f64 {
    let x = v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} missing in {v}"));
    assert!(x > 0.0, "{field} = {x} in {v}");
    x
}

#[test]
fn memory_put_prints_one_json_object_with_positive_figures() {
    let out = eddy(&[
        "bench",
        "storage",
        "--backend",
        "memory",
        "--ops",
        "1000",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.trim().lines().count(), 1, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for field in ["ops_per_s", "mb_per_s", "p50_us", "p99_us"] {
        positive(&v, field);
    }
    assert_eq!(v["ops"], 1000);
    assert_eq!(v["backend"], "memory");
}

#[test]
fn memory_get_mixed_and_index_scan_run() {
    for workload in ["get", "mixed", "index-scan"] {
        let out = eddy(&[
            "bench",
            "storage",
            "--workload",
            workload,
            "--keys",
            "500",
            "--ops",
            "1000",
            "--threads",
            "2",
            "--key-order",
            "random",
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{workload}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        positive(&v, "ops_per_s");
        positive(&v, "p99_us");
    }
}

#[test]
fn merge_on_memory_is_a_clear_error() {
    let out = eddy(&["bench", "storage", "--workload", "merge", "--keys", "10"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no merge"), "{err}");
}

#[test]
fn index_scan_on_bitcask_and_lsm_is_a_clear_error() {
    for backend in ["bitcask", "lsm"] {
        let out = eddy(&[
            "bench",
            "storage",
            "--backend",
            backend,
            "--workload",
            "index-scan",
            "--keys",
            "10",
        ]);
        assert!(!out.status.success(), "{backend}");
        let err = String::from_utf8_lossy(&out.stderr);
        let expected = format!("index-scan does not apply to the {backend} backend");
        assert!(
            err.contains(&expected) && err.contains("keeps no index entries"),
            "{err}"
        );
    }
}

#[test]
fn no_arguments_prints_help() {
    let out = eddy(&[]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("Usage"), "{text}");
    assert!(text.contains("bench"), "{text}");
}

#[test]
fn disk_engines_run_every_workload() {
    let common = [
        "--keys",
        "300",
        "--ops",
        "600",
        "--value-size",
        "2000",
        "--threads",
        "2",
        "--max-file-size-bytes",
        "100000",
        "--json",
    ];
    for backend in ["bitcask", "lsm"] {
        for workload in ["put", "get", "mixed", "merge", "open"] {
            let mut args = vec![
                "bench",
                "storage",
                "--backend",
                backend,
                "--workload",
                workload,
            ];
            args.extend(common);
            let out = eddy(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{backend} {workload}: {err}");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            positive(&v, "ops_per_s");
        }
    }
}

#[test]
fn bitcask_merge_and_open_report_their_own_figures() {
    let run = |workload: &str| {
        let out = eddy(&[
            "bench",
            "storage",
            "--backend",
            "bitcask",
            "--workload",
            workload,
            "--keys",
            "400",
            "--ops",
            "400",
            "--value-size",
            "1000",
            "--max-file-size-bytes",
            "50000",
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let merge = run("merge");
    for field in [
        "merge_s",
        "merge_input_mb",
        "merge_mb_per_s",
        "p99_us_before_merge",
    ] {
        positive(&merge["extra"], field);
    }
    let open = run("open");
    for field in [
        "open_ms",
        "open_without_hints_ms",
        "hint_files",
        "keydir_bytes_per_key",
    ] {
        positive(&open["extra"], field);
    }
}
