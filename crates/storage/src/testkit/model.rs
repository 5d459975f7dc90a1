//! The reference model: what a backend must answer, as plain `BTreeMap`s.

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::{effective_expiry, is_expired};
use crate::memory::apply_specs;
use crate::{BatchOp, FoldOptions, IndexQuery};

type Terms = BTreeSet<(Vec<u8>, Vec<u8>)>;

#[derive(Clone, Debug)]
struct ModelObject {
    value: Vec<u8>,
    expires_at_secs: Option<u64>,
    terms: Terms,
}

/// The expected contents of one backend instance.
#[derive(Clone, Debug, Default)]
pub struct Model {
    objects: BTreeMap<(Vec<u8>, Vec<u8>), ModelObject>,
    /// Instance-wide time to live (0 = none).
    pub expiry_secs: u64,
}

impl Model {
    /// An empty model with the given instance-wide expiry.
    pub fn new(expiry_secs: u64) -> Self {
        Model {
            objects: BTreeMap::new(),
            expiry_secs,
        }
    }

    /// Applies one write at time `now_secs`.
    pub fn apply(&mut self, op: &BatchOp, now_secs: u64) {
        match op.clone() {
            BatchOp::Delete { bucket, key } => {
                self.objects.remove(&(bucket, key));
            }
            BatchOp::Put {
                bucket,
                key,
                value,
                indexes,
                expires_at_secs,
            } => {
                let bkey = (bucket, key);
                let mut terms = match self.live(&bkey, now_secs) {
                    Some(old) => old.terms.clone(),
                    None => Terms::new(),
                };
                apply_specs(&mut terms, indexes);
                let expires_at_secs = effective_expiry(now_secs, expires_at_secs, self.expiry_secs);
                let obj = ModelObject {
                    value,
                    expires_at_secs,
                    terms,
                };
                self.objects.insert(bkey, obj);
            }
        }
    }

    fn live(&self, bkey: &(Vec<u8>, Vec<u8>), now_secs: u64) -> Option<&ModelObject> {
        self.objects
            .get(bkey)
            .filter(|o| !is_expired(o.expires_at_secs, now_secs))
    }

    /// The live value of `(bucket, key)`.
    pub fn get(&self, bucket: &[u8], key: &[u8], now_secs: u64) -> Option<Vec<u8>> {
        let bkey = (bucket.to_vec(), key.to_vec());
        self.live(&bkey, now_secs).map(|o| o.value.clone())
    }

    /// Live objects selected by `opts`, in `(bucket, key)` order.
    pub fn fold(&self, opts: &FoldOptions, now_secs: u64) -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
        self.objects
            .iter()
            .filter(|((b, k), o)| opts.admits(b, k) && !is_expired(o.expires_at_secs, now_secs))
            .map(|((b, k), o)| (b.clone(), k.clone(), o.value.clone()))
            .collect()
    }

    /// Index entries `query` selects, in `(term, key)` order.
    pub fn index_range(&self, query: &IndexQuery, now_secs: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut hits: Vec<(Vec<u8>, Vec<u8>)> = self
            .objects
            .iter()
            .filter(|((b, _), o)| *b == query.bucket && !is_expired(o.expires_at_secs, now_secs))
            .flat_map(|((_, k), o)| {
                o.terms
                    .iter()
                    .filter(|(f, t)| *f == query.field && query.admits(t, k))
                    .map(move |(_, t)| (t.clone(), k.clone()))
            })
            .collect();
        hits.sort();
        hits
    }

    /// Removes every object of `bucket`.
    pub fn drop_bucket(&mut self, bucket: &[u8]) {
        self.objects.retain(|(b, _), _| b != bucket);
    }

    /// Forgets everything (a non-persistent backend reopened).
    pub fn clear(&mut self) {
        self.objects.clear();
    }

    /// True when no live object remains.
    pub fn is_empty(&self, now_secs: u64) -> bool {
        self.objects
            .values()
            .all(|o| is_expired(o.expires_at_secs, now_secs))
    }
}
