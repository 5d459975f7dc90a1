//! What the term index costs in memory for N indexed keys shaped like the
//! coupons of issue 13: keys `coupon-0000123`, one `_int` field over 100
//! terms (`redeemed_count_int`) and one `_bin` field over 1,000 terms
//! (`affiliate_bin`: `affiliate-123`), in the default bucket type's
//! `coupons` bucket as kv stores it, written in key order. Prints the
//! process's resident memory before and after building the index (from
//! /proc/self/statm) beside the index's own estimate (`index::memory`).
//! Runs under mimalloc, the node's allocator. Not timed.
//!
//! `cargo run --release -p eddy-bitcask --example index_memory -- [keys]`

use eddy_bitcask::format::TermSet;
use eddy_bitcask::index::TermIndex;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Resident bytes of this process.
#[allow(unsafe_code, reason = "reads the page size")]
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

/// An `_int` term as backends store it: the i64 big-endian, sign flipped.
fn int_term(n: i64) -> Vec<u8> {
    ((n as u64) ^ (1 << 63)).to_be_bytes().to_vec()
}

/// Coupon `i`'s two terms, spread by a multiplicative hash.
fn terms(i: u64) -> TermSet {
    let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7;
    let redeemed = (x % 100) as i64;
    let affiliate = (x >> 8) % 1000;
    TermSet::from([
        (b"redeemed_count_int".to_vec(), int_term(redeemed)),
        (
            b"affiliate_bin".to_vec(),
            format!("affiliate-{affiliate}").into_bytes(),
        ),
    ])
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    // The storage bucket of type "default", bucket "coupons".
    let mut bucket = vec![0, 7];
    bucket.extend_from_slice(b"defaultcoupons");
    let before = rss_bytes();
    let mut index = TermIndex::default();
    for i in 0..n {
        let key = format!("coupon-{i:07}");
        index.set(&bucket, key.as_bytes(), terms(i));
    }
    let after = rss_bytes();
    let measured = after.saturating_sub(before);
    let estimate = index.memory_bytes();
    let per_key = |bytes: u64| bytes as f64 / n.max(1) as f64;
    println!("keys                 {n}");
    println!("index entries        {}", index.len());
    println!("RSS before           {before}");
    println!("RSS after            {after}");
    println!(
        "measured (RSS delta) {measured} bytes, {:.0} a key",
        per_key(measured)
    );
    println!(
        "estimate             {estimate} bytes, {:.0} a key ({:+.1}% of measured)",
        per_key(estimate),
        (estimate as f64 / measured.max(1) as f64 - 1.0) * 100.0
    );
}
