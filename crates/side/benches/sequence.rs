//! A vnode's change sequence at the seed's scale (design note 027, "The
//! change sequence"): records `CHANGES` changes (default 3,000,000) of
//! `KEYS` keys (default 1,000,000: a vnode's share of 10,000,000 coupons
//! on a 3-node cluster is about 480,000), reads them all from the start
//! ("changes since 0": each key once), reads the last 10,000, and
//! compacts the log (segments of 32 MiB); against the baseline of reading
//! the log's files through a buffer, measured in the same run. Prints one
//! line per figure. Run: `cargo bench -p eddy-side --bench sequence`
//! (`CHANGES=… KEYS=…` to scale it).

use std::io::Read;
use std::time::Instant;

use eddy_side::sequence::Sequence;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:"));
    let kib = line
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok());
    kib.unwrap_or(0) / 1024
}

/// Reads every file in `dir` through a 64 KiB buffer; returns the bytes.
fn read_files(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    let mut buf = vec![0u8; 64 << 10];
    for entry in std::fs::read_dir(dir).unwrap() {
        let mut f = std::fs::File::open(entry.unwrap().path()).unwrap();
        loop {
            let n = f.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    total
}

fn main() {
    let changes = env_or("CHANGES", 3_000_000);
    let keys = env_or("KEYS", 1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let seq = Sequence::open_with(dir.path(), 32 << 20).unwrap();
    let bucket = b"\x00\x07default\x00coupons";
    let started = Instant::now();
    for i in 0..changes {
        let key = format!("coupon-{:07}", (i * 7919) % keys);
        seq.record(i % 10 == 0, bucket, key.as_bytes()).unwrap();
    }
    seq.sync().unwrap();
    let record_s = started.elapsed().as_secs_f64();
    println!(
        "record: {changes} changes of {keys} keys in {record_s:.2} s, {:.3} µs a change",
        record_s * 1e6 / changes as f64
    );

    let started = Instant::now();
    let bytes = read_files(dir.path());
    let raw_s = started.elapsed().as_secs_f64();
    let raw_rate = changes as f64 / raw_s;
    println!(
        "baseline: the log's {} MiB read through a buffer in {raw_s:.2} s",
        bytes >> 20
    );

    let rss_before = rss_mib();
    let started = Instant::now();
    let mut handed = 0u64;
    seq.changes_since(None, u64::MAX, &mut |_| {
        handed += 1;
        true
    })
    .unwrap();
    let all_s = started.elapsed().as_secs_f64();
    println!(
        "changes since 0: {handed} keys from {changes} changes in {all_s:.2} s ({:.0} changes/s, {:.2} of the baseline's rate); RSS {} -> {} MiB",
        changes as f64 / all_s,
        changes as f64 / all_s / raw_rate,
        rss_before,
        rss_mib()
    );

    let last = seq.last();
    let started = Instant::now();
    let mut tail = 0u64;
    seq.changes_since(Some(last - 10_000), u64::MAX, &mut |_| {
        tail += 1;
        true
    })
    .unwrap();
    println!(
        "changes since the last 10,000: {tail} keys in {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );

    let started = Instant::now();
    let compacted = seq.compact(2).unwrap();
    let compact_s = started.elapsed().as_secs_f64();
    let after = read_files(dir.path());
    println!(
        "compaction: {compacted:?} (kept, dropped) in {compact_s:.2} s; log {} -> {} MiB",
        bytes >> 20,
        after >> 20
    );
}
