//! The floor under `eddy bench storage --backend lsm`: the same 100-byte
//! random-key load and random gets straight on one fjall keyspace, with the
//! settings the bench's `LsmConfig` (compression off) gives the objects
//! keyspace and no eddy
//! code in between (no key encoding, expiry header, locks or terms record).
//!
//! `cargo run --release -p eddy-lsm --example raw_fjall -- DIR [KEYS] [GETS] [VALUE_BYTES] [buffered] [flushed] [sequential]`
//!
//! `buffered` sets fjall's `manual_journal_persist`: commits stay in the
//! journal's userspace buffer instead of one `write` syscall each;
//! `flushed` flushes the memtable before the gets, so they read tables only;
//! `sequential` writes keys in ascending order instead of a permutation.
//! `MEMTABLE_MIB` (default 64) sets the memtable size, `SEPARATION_BYTES`
//! (default 4096, or `none`) the key-value separation threshold.

use std::time::Instant;

use fjall::config::CompressionPolicy;
use fjall::{CompressionType, Database, KeyspaceCreateOptions, KvSeparationOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = args
        .get(1)
        .ok_or("usage: raw_fjall DIR [KEYS] [GETS] [VALUE_BYTES] [buffered]")?;
    let keys: u64 = args.get(2).map_or(Ok(1_000_000), |s| s.parse())?;
    let gets: u64 = args.get(3).map_or(Ok(2_000_000), |s| s.parse())?;
    let value_bytes: usize = args.get(4).map_or(Ok(100), |s| s.parse())?;
    let buffered = args.iter().any(|s| s == "buffered");
    let flushed = args.iter().any(|s| s == "flushed");
    let sequential = args.iter().any(|s| s == "sequential");
    let separation_bytes: Option<u32> = match std::env::var("SEPARATION_BYTES") {
        Ok(s) if s == "none" => None,
        Ok(s) => Some(s.parse()?),
        Err(_) => Some(4096),
    };
    let memtable_mib: u64 = std::env::var("MEMTABLE_MIB").map_or(Ok(64), |s| s.parse())?;

    let db = Database::builder(dir)
        .cache_size(256 * 1024 * 1024)
        .manual_journal_persist(buffered)
        .journal_compression(CompressionType::None)
        .open()?;
    let objects = db.keyspace("objects", || {
        KeyspaceCreateOptions::default()
            .max_memtable_size(memtable_mib << 20)
            .data_block_compression_policy(CompressionPolicy::all(CompressionType::None))
            .with_kv_separation(separation_bytes.map(|threshold| {
                KvSeparationOptions::default()
                    .separation_threshold(threshold)
                    .compression(CompressionType::None)
            }))
    })?;
    let value = vec![7u8; value_bytes + 1];

    let start = Instant::now();
    for i in 0..keys {
        let n = if sequential { i } else { permute(i, keys) };
        objects.insert(key(n), &value)?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "put: {:.0}/s, {:.0} MB/s",
        keys as f64 / elapsed,
        (keys as f64 * value_bytes as f64) / elapsed / 1e6
    );
    db.persist(fjall::PersistMode::SyncData)?;
    if flushed {
        objects.rotate_memtable_and_wait()?;
    }

    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let start = Instant::now();
    let mut found = 0u64;
    for _ in 0..gets {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        found += u64::from(objects.get(key(rng % keys))?.is_some());
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!("get: {:.0}/s ({found} found)", gets as f64 / elapsed);
    Ok(())
}

/// The object key the eddy bench writes: bucket `bench` escaped, then the
/// 8-byte big-endian key number.
fn key(n: u64) -> [u8; 15] {
    let mut out = [0u8; 15];
    out[..5].copy_from_slice(b"bench");
    out[7..].copy_from_slice(&n.to_be_bytes());
    out
}

/// Visits every key once in a scrambled order (a multiplier coprime with
/// the key count).
fn permute(i: u64, keys: u64) -> u64 {
    let mut multiplier = 0x5851_F42D_4C95_7F2Du64 % keys.max(1);
    while gcd(multiplier, keys) != 1 {
        multiplier += 1;
    }
    ((u128::from(i) * u128::from(multiplier)) % u128::from(keys)) as u64
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}
