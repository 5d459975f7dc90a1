//! Rough figures for the design note: put and get rates (100-byte values,
//! random keys, one thread, sync none), keydir bytes per key, and open time
//! for N keys with and without hint files. The bench tool owns the official
//! numbers; this is a quick local check.
//!
//! `cargo run --release -p eddy-bitcask --example measure -- [keys] [dir]`

use std::path::PathBuf;
use std::time::Instant;

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{Backend, WriteOptions};

fn key(i: u64) -> [u8; 16] {
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 29;
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&x.to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn config() -> BitcaskConfig {
    BitcaskConfig {
        max_file_size_bytes: 64 << 20,
        merge_check_interval_ms: 0,
        ..BitcaskConfig::default()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = args
        .get(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("eddy-bitcask-measure"));
    let _ = std::fs::remove_dir_all(&dir);
    let value = [0x5au8; 100];
    let b = Bitcask::open(&dir, config()).unwrap();
    let t = Instant::now();
    for i in 0..n {
        b.put(b"bucket", &key(i), &value, &[], WriteOptions::NO_SYNC)
            .unwrap();
    }
    let put_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for i in 0..n {
        let k = key(i.wrapping_mul(7919) % n);
        assert!(b.get(b"bucket", &k).unwrap().is_some());
    }
    let get_s = t.elapsed().as_secs_f64();
    let per_key = b.keydir_memory_bytes() as f64 / n as f64;
    println!("puts/s {:.0}", n as f64 / put_s);
    println!("gets/s {:.0}", n as f64 / get_s);
    println!("keydir bytes/key {per_key:.1} (key bytes 6+16)");
    b.close().unwrap();
    drop(b);

    let t = Instant::now();
    let b = Bitcask::open(&dir, config()).unwrap();
    let with_hints = t.elapsed().as_secs_f64();
    let report = b.open_report().clone();
    b.close().unwrap();
    drop(b);
    println!(
        "open with hints: {with_hints:.3} s ({} files, {} hints)",
        report.data_files, report.hints_used
    );
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".hint") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let t = Instant::now();
    let b = Bitcask::open(&dir, config()).unwrap();
    let without = t.elapsed().as_secs_f64();
    println!(
        "open without hints: {without:.3} s ({} records)",
        b.open_report().records
    );
    drop(b);
    let _ = std::fs::remove_dir_all(&dir);
}
