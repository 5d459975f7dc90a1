//! Dropping a bucket in the registry (design note 018): the bucket's
//! `generation` prop goes up by one, in its own shared entry, so every
//! node stores and reads the bucket under a new storage name from then on
//! and the objects of the earlier generations are gone at once, whatever
//! still holds them. Removing those objects from the backends is the
//! node's business: the registry tells a hook of each bucket whose
//! generation rose, whoever raised it (a drop here, the cluster's
//! metadata, a put that carried the entry).
//!
//! Invariant: a bucket's generation is kept by every later change to its
//! entry made here (a props set or reset), so only a concurrent change
//! made elsewhere before the drop reached it can lower it.

use std::sync::Arc;

use super::{ChangeId, bucket_patch};
use crate::request::BucketRef;
use crate::types::{BucketRegistry, RegistryError, Stored, bucket_change, bucket_patch_of};

/// Told of a bucket whose generation rose, with the new generation.
pub type GenerationHook = Arc<dyn Fn(&BucketRef, u64) + Send + Sync>;

impl BucketRegistry {
    /// Drops bucket `bucket` of `bucket_type`: raises its generation by
    /// one and writes the change. Returns the new generation and the
    /// change's id.
    pub fn drop_bucket(
        &self,
        bucket_type: &str,
        bucket: &[u8],
    ) -> Result<(u64, ChangeId), RegistryError> {
        let mut generation = 0;
        let id = self.local_change(|stored| {
            // The type must exist and be active, as for any bucket request.
            generation = self.resolve(stored, bucket_type, bucket)?.generation + 1;
            let mut patch = bucket_patch_of(stored, bucket_type, bucket);
            patch.generation = Some(generation);
            Ok(bucket_change(bucket_type, bucket, Some(patch)))
        })?;
        Ok((generation, id))
    }

    /// Sets the hook told of every bucket whose generation rose (once).
    pub fn on_generation(&self, hook: GenerationHook) {
        let _ = self.on_generation.set(hook);
    }

    /// The buckets that were ever dropped, with their generation.
    pub fn dropped_buckets(&self) -> Vec<(BucketRef, u64)> {
        let stored = self.stored.read();
        stored
            .buckets
            .iter()
            .filter_map(|b| {
                let generation = b.patch.generation.unwrap_or(0);
                let name = from_hex(&b.bucket)?;
                (generation > 0).then(|| (BucketRef::typed(&b.bucket_type, name), generation))
            })
            .collect()
    }

    /// Tells the hook of each bucket in `raised`.
    pub(crate) fn tell_raised(&self, raised: Vec<(BucketRef, u64)>) {
        let Some(hook) = self.on_generation.get() else {
            return;
        };
        for (bucket, generation) in raised {
            hook(&bucket, generation);
        }
    }
}

/// The buckets whose generation is higher in `next` than in `before`.
pub(crate) fn raised_generations(before: &Stored, next: &Stored) -> Vec<(BucketRef, u64)> {
    let of = |stored: &Stored, t: &str, hex: &str| {
        bucket_patch(stored, t, hex)
            .and_then(|p| p.generation)
            .unwrap_or(0)
    };
    next.buckets
        .iter()
        .filter_map(|b| {
            let generation = b.patch.generation.unwrap_or(0);
            if generation <= of(before, &b.bucket_type, &b.bucket) {
                return None;
            }
            let name = from_hex(&b.bucket)?;
            Some((BucketRef::typed(&b.bucket_type, name), generation))
        })
        .collect()
}

fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::props::{BucketProps, PropsPatch};
    use crate::types::to_hex;
    use serde_json::json;

    fn patch(v: serde_json::Value) -> PropsPatch {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_drop_raises_the_generation_and_props_survive() {
        let r = BucketRegistry::new(BucketProps::default());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        r.on_generation(Arc::new(move |b, g| s.lock().unwrap().push((b.clone(), g))));
        r.set_bucket_props("default", b"b", &patch(json!({"n_val": 2})))
            .unwrap();
        assert_eq!(r.bucket_props("default", b"b").unwrap().generation, 0);
        assert_eq!(r.drop_bucket("default", b"b").unwrap().0, 1);
        assert_eq!(r.drop_bucket("default", b"b").unwrap().0, 2);
        let props = r.bucket_props("default", b"b").unwrap();
        assert_eq!((props.generation, props.n_val), (2, 2));
        assert_eq!(props.to_json()["generation"], json!(2));
        let b = BucketRef::default_type(b"b".to_vec());
        assert_eq!(*seen.lock().unwrap(), vec![(b.clone(), 1), (b.clone(), 2)]);
        assert_eq!(r.dropped_buckets(), vec![(b, 2)]);
        // Another bucket is untouched.
        assert_eq!(r.bucket_props("default", b"c").unwrap().generation, 0);
    }

    #[test]
    fn clients_cannot_set_the_generation_and_a_reset_keeps_it() {
        let r = BucketRegistry::new(BucketProps::default());
        r.drop_bucket("default", b"b").unwrap();
        r.set_bucket_props(
            "default",
            b"b",
            &patch(json!({"generation": 0, "n_val": 1})),
        )
        .unwrap();
        let set = r.bucket_props("default", b"b").unwrap();
        assert_eq!((set.generation, set.n_val), (1, 1));
        r.set_bucket_props("default", b"never", &patch(json!({"generation": 7})))
            .unwrap();
        assert_eq!(r.bucket_props("default", b"never").unwrap().generation, 0);
        r.reset_bucket_props("default", b"b").unwrap();
        let props = r.bucket_props("default", b"b").unwrap();
        assert_eq!((props.generation, props.n_val), (1, 3));
    }

    #[test]
    fn unknown_types_cannot_be_dropped() {
        let r = BucketRegistry::new(BucketProps::default());
        assert!(matches!(
            r.drop_bucket("nope", b"b"),
            Err(RegistryError::NoSuchType(_))
        ));
    }

    #[test]
    fn hex_names_round_trip() {
        assert_eq!(from_hex(&to_hex(&[0, 255, 16])), Some(vec![0, 255, 16]));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }
}
