//! The read path: point gets and folds over objects, straight off fjall
//! iterators (each a consistent snapshot).
//!
//! Expiry is checked from each object's own header. While no write in the
//! environment has carried an expiry, key folds do not even read values
//! (no blob reads).

use std::ops::Bound;

use eddy_storage::clock::is_expired;
use eddy_storage::{FoldControl, FoldOptions, KeyVisitor, ObjectVisitor, StorageError};
use fjall::{UserKey, UserValue};

use crate::backend::Partition;
use crate::error::{corrupt, engine};
use crate::keys::{self, object_key, split_escaped};
use crate::record::split_expiry;
use crate::write::unstorable;
use eddy_storage::tuple::is_empty_range;

type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

impl Partition {
    fn now_secs(&self) -> u64 {
        self.env.config.clock.now_secs()
    }

    /// The live value of `(bucket, key)`.
    pub fn get(&self, bucket: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        if unstorable(bucket, key) {
            return Ok(None);
        }
        let Some(stored) = self.objects.get(object_key(bucket, key)).map_err(engine)? else {
            return Ok(None);
        };
        let (expiry, value) = self.split_object(&stored)?;
        Ok((!is_expired(expiry, self.now_secs())).then(|| value.to_vec()))
    }

    fn split_object<'v>(&self, stored: &'v [u8]) -> Result<(Option<u64>, &'v [u8]), StorageError> {
        split_expiry(stored).map_err(|reason| corrupt(self.objects.path(), reason))
    }

    fn split_bucket<'k>(&self, encoded: &'k [u8]) -> Result<(Vec<u8>, &'k [u8]), StorageError> {
        split_escaped(encoded)
            .map(|(bucket, key)| (bucket.into_owned(), key))
            .ok_or_else(|| corrupt(self.objects.path(), "undecodable object key"))
    }

    fn object_iter(&self, opts: &FoldOptions) -> Option<fjall::Iter> {
        let range = keys::object_range(
            opts.bucket.as_deref(),
            opts.key_start.as_deref(),
            opts.key_end.as_deref(),
        );
        (!is_empty_range(&range)).then(|| self.objects.range(range))
    }

    /// Calls `f` for every live object selected by `opts`, in key order.
    pub fn fold_objects(
        &self,
        opts: &FoldOptions,
        f: &mut ObjectVisitor<'_>,
    ) -> Result<(), StorageError> {
        let Some(iter) = self.object_iter(opts) else {
            return Ok(());
        };
        let now_secs = self.now_secs();
        for guard in iter {
            let (encoded, stored) = guard.into_inner().map_err(engine)?;
            let (expiry, value) = self.split_object(&stored)?;
            if is_expired(expiry, now_secs) {
                continue;
            }
            let (bucket, key) = self.split_bucket(&encoded)?;
            if f(&bucket, key, value) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }

    /// Calls `f` for every live key selected by `opts`, in key order.
    pub fn fold_keys(
        &self,
        opts: &FoldOptions,
        f: &mut KeyVisitor<'_>,
    ) -> Result<(), StorageError> {
        let Some(iter) = self.object_iter(opts) else {
            return Ok(());
        };
        let check_expiry = self.env.ttl.in_use();
        let now_secs = self.now_secs();
        for guard in iter {
            let encoded = match check_expiry {
                true => match self.live_key(guard.into_inner().map_err(engine)?, now_secs)? {
                    Some(encoded) => encoded,
                    None => continue,
                },
                false => guard.key().map_err(engine)?,
            };
            let (bucket, key) = self.split_bucket(&encoded)?;
            if f(&bucket, key) == FoldControl::Stop {
                break;
            }
        }
        Ok(())
    }

    fn live_key(
        &self,
        (encoded, stored): (UserKey, UserValue),
        now_secs: u64,
    ) -> Result<Option<UserKey>, StorageError> {
        let (expiry, _) = self.split_object(&stored)?;
        Ok((!is_expired(expiry, now_secs)).then_some(encoded))
    }

    /// True when no live object is stored.
    pub fn is_empty(&self) -> Result<bool, StorageError> {
        let mut empty = true;
        self.fold_keys(&FoldOptions::all(), &mut |_, _| {
            empty = false;
            FoldControl::Stop
        })?;
        Ok(empty)
    }

    /// Encoded object keys in `range`, `limit` at most, starting strictly
    /// after `after` when given (drop-bucket's chunks).
    pub fn object_keys_in(
        &self,
        range: &Range,
        after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<UserKey>, StorageError> {
        let lower = match after {
            Some(a) => Bound::Excluded(a.to_vec()),
            None => range.0.clone(),
        };
        let range = (lower, range.1.clone());
        if is_empty_range(&range) {
            return Ok(Vec::new());
        }
        self.objects
            .range(range)
            .take(limit)
            .map(|guard| guard.key().map_err(engine))
            .collect()
    }
}
