//! Coordinators: the async drivers of the pure quorum cores. Each sends a
//! request to the vnodes of a preflist, feeds their replies to its core
//! until the core has an answer or the deadline passes, and answers.

pub mod coverage;
pub mod datatype;
pub mod delete;
pub mod drop;
pub mod get;
pub mod index;
mod index_merge;
pub mod key_filter;
pub mod list;
pub mod map;
pub mod multi;
pub mod preflist;
pub mod put;
mod put_delta;
pub mod reap;

pub use preflist::{PreflistEntry, RingView};

use std::sync::Arc;
use std::time::Duration;

use eddy_object::Content;
use tokio::time::Instant;

use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::metadata::entries::PropsEntries;
use eddy_model::props::BucketProps;
use eddy_model::quorum::Quorum;
use eddy_model::request::BucketRef;
use eddy_vnode::msg::StorageKey;

impl Node {
    pub(crate) fn deadline(&self, timeout_ms: Option<u64>) -> Instant {
        let ms = timeout_ms.unwrap_or(self.config.default_timeout_ms);
        Instant::now() + Duration::from_millis(ms)
    }

    pub(crate) fn props(&self, bucket: &BucketRef) -> Result<Arc<BucketProps>, KvError> {
        self.check_bucket(bucket)?;
        Ok(self
            .registry
            .bucket_props_shared(&bucket.bucket_type, &bucket.bucket)?)
    }

    /// A bucket's props with the stamped entries they were resolved from.
    pub(crate) fn props_entries(
        &self,
        bucket: &BucketRef,
    ) -> Result<(Arc<BucketProps>, Arc<PropsEntries>), KvError> {
        self.check_bucket(bucket)?;
        Ok(self
            .registry
            .bucket_props_entries(&bucket.bucket_type, &bucket.bucket)?)
    }

    fn check_bucket(&self, bucket: &BucketRef) -> Result<(), KvError> {
        if bucket.bucket.is_empty() {
            return Err(KvError::Empty("bucket"));
        }
        // Room for a generation: a dropped bucket's name grows by one.
        let size = bucket.storage_bucket().len() + eddy_model::request::GENERATION_BYTES;
        let max = eddy_storage::limits::BUCKET_BYTES_MAX;
        if size > max {
            return Err(KvError::TooLarge {
                what: "bucket",
                size,
                max,
            });
        }
        Ok(())
    }

    pub(crate) fn check_key(&self, key: &[u8]) -> Result<(), KvError> {
        if key.is_empty() {
            return Err(KvError::Empty("key"));
        }
        let max = self.config.key_bytes_max;
        if key.len() > max {
            return Err(KvError::TooLarge {
                what: "key",
                size: key.len(),
                max,
            });
        }
        Ok(())
    }

    /// Checks a client's content for `key` in `bucket` against the
    /// limits, and warns of an object over the size warning threshold.
    pub(crate) fn check_content(
        &self,
        bucket: &BucketRef,
        key: &[u8],
        content: &Content,
    ) -> Result<(), KvError> {
        self.config.meta_limits.check(&content.meta)?;
        let size = content_bytes(content);
        let max = self.config.object_size_max_bytes;
        if size > max {
            return Err(KvError::TooLarge {
                what: "object",
                size,
                max,
            });
        }
        if size > self.config.object_size_warn_bytes {
            let object = bucket.object_name(key);
            tracing::warn!(%object, size, "large object written");
        }
        Ok(())
    }
}

/// The bytes of a content that count against the object size limit: its
/// value, usermeta and index entries.
pub(crate) fn content_bytes(content: &Content) -> usize {
    let meta = &content.meta;
    let usermeta: usize = meta.user_meta.iter().map(|(k, v)| k.len() + v.len()).sum();
    let indexes: usize = meta.indexes.iter().map(|(f, t)| f.len() + t.len()).sum();
    content.value.len() + usermeta + indexes
}

/// Resolves a request's quorum (or the bucket's) and checks it against n_val.
pub(crate) fn quorum(
    name: &'static str,
    requested: Option<Quorum>,
    bucket: Quorum,
    n_val: u32,
) -> Result<u32, KvError> {
    Ok(requested
        .unwrap_or(Quorum::Default)
        .resolve_checked(name, bucket, n_val)?)
}

/// The storage key of `key` in `bucket` as its props name it: under the
/// bucket's current generation (design note 018).
pub(crate) fn storage_key(bucket: &BucketRef, props: &BucketProps, key: &[u8]) -> StorageKey {
    StorageKey {
        bucket: bucket.storage_bucket_at(props.generation),
        key: key.to_vec(),
    }
}
