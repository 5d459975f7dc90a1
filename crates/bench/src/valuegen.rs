//! Value generators: the bytes each put stores.
//!
//! A [`ValueGen`] is built once per run from a seed and shared read-only.
//! Binary values are slices of a pool made at start, so a put costs one
//! copy ([`ValueGen::generate`]) or none ([`ValueGen::value`]), not a
//! random-number call per byte.
//!
//! - `fixed_bin`: `size` random (incompressible) bytes.
//! - `random_bin`: random bytes, length uniform in `size_min..=size_max`.
//! - `semi_compressible`: like `random_bin`, but the pool is built from
//!   1 KiB chunks, each some random bytes followed by a run of one byte,
//!   sized so lz4 shrinks values by `compression_ratio` (original size over
//!   compressed size; a test checks it with lz4_flex).
//! - `json`: a JSON object of exactly `size` bytes (when the fields fit):
//!   the key, each `int_fields` entry uniform in `0..bound`, and a `pad`
//!   string filling the rest.
//!
//! Invariant: lengths stay within the configured bounds.

use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};

use crate::config::{ValueGenerator, ValuesConfig};

/// Bytes of one semi-compressible chunk.
const CHUNK_BYTES: usize = 1024;
/// lz4's cost of one chunk's run: its sequence token, lengths and offset.
const CHUNK_OVERHEAD_BYTES: f64 = 8.0;
/// Smallest pool, so that values of one size still differ.
const POOL_BYTES_MIN: usize = 1 << 20;

/// The values of a run.
#[derive(Debug)]
pub struct ValueGen {
    generator: ValueGenerator,
    size_min: usize,
    size_max: usize,
    int_fields: Vec<(String, u64)>,
    pool: Vec<u8>,
}

impl ValueGen {
    /// The generator `config` describes (already validated).
    pub fn new(config: &ValuesConfig, seed: u64) -> ValueGen {
        let size_min = config.size_min.or(config.size).unwrap_or(1);
        let size_max = config.size_max.or(config.size).unwrap_or(size_min);
        let pool_len = POOL_BYTES_MIN
            .max(2 * size_max)
            .next_multiple_of(CHUNK_BYTES);
        let mut rng = SmallRng::seed_from_u64(seed);
        let pool = match config.generator {
            ValueGenerator::SemiCompressible => {
                semi_compressible_pool(&mut rng, pool_len, config.compression_ratio.unwrap_or(2.0))
            }
            _ => random_pool(&mut rng, pool_len),
        };
        ValueGen {
            generator: config.generator,
            size_min,
            size_max,
            int_fields: config
                .int_fields
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
            pool,
        }
    }

    /// The mean length of a value (lengths are uniform between the bounds).
    pub fn mean_size(&self) -> usize {
        (self.size_min + self.size_max) / 2
    }

    /// The content type values are stored with, unless the config says.
    pub fn content_type(&self) -> &'static str {
        match self.generator {
            ValueGenerator::Json => "application/json",
            _ => "application/octet-stream",
        }
    }

    /// Position of `name` among the JSON integer fields.
    pub fn int_field(&self, name: &str) -> Option<usize> {
        self.int_fields.iter().position(|(n, _)| n == name)
    }

    /// The bound of the JSON integer field at `position` (its values are
    /// uniform in `0..bound`); 1 past the last field.
    pub fn int_bound(&self, position: usize) -> u64 {
        self.int_fields.get(position).map_or(1, |(_, b)| *b)
    }

    /// Writes one value for `key` into `out` (cleared first); for `json`,
    /// `ints` receives each integer field's value in [`Self::int_field`]
    /// order.
    pub fn generate(&self, rng: &mut impl Rng, key: &[u8], out: &mut Vec<u8>, ints: &mut Vec<u64>) {
        if let Some(slice) = self.draw(rng, key, out, ints) {
            out.clear();
            out.extend_from_slice(&self.pool[slice]);
        }
    }

    /// The value [`Self::generate`] would write, without copying it: a
    /// slice of the pool for the binary generators, or the JSON document
    /// written into `out`.
    pub fn value<'a>(
        &'a self,
        rng: &mut impl Rng,
        key: &[u8],
        out: &'a mut Vec<u8>,
        ints: &mut Vec<u64>,
    ) -> &'a [u8] {
        match self.draw(rng, key, out, ints) {
            Some(slice) => &self.pool[slice],
            None => out,
        }
    }

    /// Draws one value: the pool range of a binary value, or `None` once a
    /// JSON document is written into `out`.
    fn draw(
        &self,
        rng: &mut impl Rng,
        key: &[u8],
        out: &mut Vec<u8>,
        ints: &mut Vec<u64>,
    ) -> Option<std::ops::Range<usize>> {
        ints.clear();
        let len = rng.random_range(self.size_min..=self.size_max);
        let at = match self.generator {
            ValueGenerator::Json => {
                out.clear();
                self.json(rng, key, len, out, ints);
                return None;
            }
            ValueGenerator::SemiCompressible => {
                let chunks = (self.pool.len() - len) / CHUNK_BYTES;
                rng.random_range(0..=chunks) * CHUNK_BYTES
            }
            _ => rng.random_range(0..=self.pool.len() - len),
        };
        Some(at..at + len)
    }

    fn json(
        &self,
        rng: &mut impl Rng,
        key: &[u8],
        len: usize,
        out: &mut Vec<u8>,
        ints: &mut Vec<u64>,
    ) {
        let mut doc = serde_json::Map::new();
        doc.insert("key".into(), String::from_utf8_lossy(key).into());
        for (name, bound) in &self.int_fields {
            let v = rng.random_range(0..*bound);
            ints.push(v);
            doc.insert(name.clone(), v.into());
        }
        doc.insert("pad".into(), String::new().into());
        let bare = serde_json::to_vec(&doc).expect("a map of strings and numbers");
        let pad_len = len.saturating_sub(bare.len());
        let at = rng.random_range(0..=self.pool.len() - pad_len);
        let pad: String = self.pool[at..at + pad_len]
            .iter()
            .map(|b| char::from(b'a' + b % 26))
            .collect();
        doc.insert("pad".into(), pad.into());
        serde_json::to_writer(&mut *out, &doc).expect("writing to a Vec");
    }
}

fn random_pool(rng: &mut SmallRng, len: usize) -> Vec<u8> {
    let mut pool = vec![0u8; len];
    rng.fill_bytes(&mut pool);
    pool
}

/// Random bytes per chunk so that lz4 output is `1 / ratio` of the input.
pub fn random_bytes_per_chunk(ratio: f64) -> usize {
    let target = CHUNK_BYTES as f64 / ratio - CHUNK_OVERHEAD_BYTES;
    (target.round() as usize).clamp(1, CHUNK_BYTES)
}

fn semi_compressible_pool(rng: &mut SmallRng, len: usize, ratio: f64) -> Vec<u8> {
    let random = random_bytes_per_chunk(ratio);
    let mut pool = vec![0u8; len];
    for chunk in pool.chunks_mut(CHUNK_BYTES) {
        let random = random.min(chunk.len());
        rng.fill_bytes(&mut chunk[..random]);
        let filler = rng.random::<u8>();
        chunk.iter_mut().skip(random).for_each(|b| *b = filler);
    }
    pool
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config(generator: ValueGenerator, min: usize, max: usize) -> ValuesConfig {
        ValuesConfig {
            generator,
            size: None,
            size_min: Some(min),
            size_max: Some(max),
            compression_ratio: None,
            int_fields: BTreeMap::new(),
        }
    }

    #[test]
    fn a_borrowed_value_is_the_one_generate_writes() {
        for generator in [
            ValueGenerator::FixedBin,
            ValueGenerator::RandomBin,
            ValueGenerator::SemiCompressible,
            ValueGenerator::Json,
        ] {
            let g = ValueGen::new(&config(generator, 100, 300), 7);
            let (mut a, mut b) = (SmallRng::seed_from_u64(3), SmallRng::seed_from_u64(3));
            let (mut out, mut scratch, mut ints) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..50 {
                let key = format!("k{i}");
                g.generate(&mut a, key.as_bytes(), &mut out, &mut ints);
                let value = g.value(&mut b, key.as_bytes(), &mut scratch, &mut ints);
                assert_eq!(value, &out[..], "{generator:?} value {i}");
            }
        }
    }

    fn values(g: &ValueGen, n: usize) -> Vec<Vec<u8>> {
        let mut rng = SmallRng::seed_from_u64(9);
        (0..n)
            .map(|i| {
                let mut out = Vec::new();
                g.generate(
                    &mut rng,
                    format!("k{i}").as_bytes(),
                    &mut out,
                    &mut Vec::new(),
                );
                out
            })
            .collect()
    }

    fn lz4_ratio(values: &[Vec<u8>]) -> f64 {
        let raw: usize = values.iter().map(Vec::len).sum();
        let packed: usize = values.iter().map(|v| lz4_flex::compress(v).len()).sum();
        raw as f64 / packed as f64
    }

    #[test]
    fn sizes_stay_in_bounds() {
        let g = ValueGen::new(&config(ValueGenerator::RandomBin, 10, 300), 1);
        let vs = values(&g, 2000);
        assert!(vs.iter().all(|v| (10..=300).contains(&v.len())));
        assert!(vs.iter().any(|v| v.len() < 50) && vs.iter().any(|v| v.len() > 250));
        let mut fixed = config(ValueGenerator::FixedBin, 0, 0);
        (fixed.size, fixed.size_min, fixed.size_max) = (Some(8000), None, None);
        let g = ValueGen::new(&fixed, 1);
        assert!(values(&g, 100).iter().all(|v| v.len() == 8000));
    }

    #[test]
    fn random_values_do_not_compress_and_differ() {
        let g = ValueGen::new(&config(ValueGenerator::FixedBin, 4096, 4096), 2);
        let vs = values(&g, 50);
        assert!(lz4_ratio(&vs) < 1.01, "{}", lz4_ratio(&vs));
        let distinct: std::collections::HashSet<_> = vs.iter().collect();
        assert!(distinct.len() > 45);
    }

    #[test]
    fn semi_compressible_hits_its_ratio() {
        for ratio in [1.5, 2.0, 4.0, 10.0] {
            for (min, max) in [(8000, 8000), (4000, 4000), (2000, 6000)] {
                let mut c = config(ValueGenerator::SemiCompressible, min, max);
                c.compression_ratio = Some(ratio);
                let g = ValueGen::new(&c, 3);
                let got = lz4_ratio(&values(&g, 200));
                let err = (got - ratio).abs() / ratio;
                assert!(
                    err < 0.15,
                    "target {ratio}, lz4 gives {got:.2} for {min}..={max}"
                );
            }
        }
    }

    #[test]
    fn json_documents_parse_and_have_their_size() {
        let mut c = config(ValueGenerator::Json, 0, 0);
        (c.size, c.size_min, c.size_max) = (Some(512), None, None);
        c.int_fields = [
            ("affiliate_id".to_string(), 1000),
            ("redeemed_count".to_string(), 100),
        ]
        .into();
        let g = ValueGen::new(&c, 4);
        assert_eq!(g.int_field("redeemed_count"), Some(1));
        let mut rng = SmallRng::seed_from_u64(5);
        let (mut out, mut ints) = (Vec::new(), Vec::new());
        for i in 0..500 {
            g.generate(
                &mut rng,
                format!("coupon-{i}").as_bytes(),
                &mut out,
                &mut ints,
            );
            assert_eq!(out.len(), 512);
            let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(doc["key"], format!("coupon-{i}"));
            assert_eq!(doc["affiliate_id"], ints[0]);
            assert_eq!(doc["redeemed_count"], ints[1]);
            assert!(ints[0] < 1000 && ints[1] < 100);
        }
    }
}
