//! Bucket props requests as the node serves them: every one checks its
//! bucket name the way gets and puts do (non-empty, within the storage
//! limit) before the registry sees it, and a change is bounded.
//!
//! Invariant: a props change that reaches the registry names a valid
//! bucket, keeps `n_val` within 1..=ring size, carries at most
//! [`UNKNOWN_PROPS_MAX`] props the node does not know, and is at most
//! [`PROPS_BYTES_MAX`] of JSON, so the metadata file stays small.

use std::sync::Arc;

use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::metadata::ChangeId;
use eddy_model::props::{BucketProps, PropsError, PropsPatch};
use eddy_model::request::BucketRef;
use eddy_model::types::RegistryError;

/// Most props one change may carry that Eddy does not know (stored as given,
/// as Riak does).
pub const UNKNOWN_PROPS_MAX: usize = 64;
/// Largest props change, as JSON.
pub const PROPS_BYTES_MAX: usize = 64 * 1024;

impl Node {
    /// The bucket's effective props (its type's, patched by its own).
    pub fn bucket_props(&self, bucket: &BucketRef) -> Result<Arc<BucketProps>, KvError> {
        self.props(bucket)
    }

    /// Sets some of a bucket's props; a refused change changes nothing.
    /// Returns the change's id, to wait for its push
    /// ([`crate::metadata_push::MetadataPushes::shared`]).
    pub fn set_bucket_props(
        &self,
        bucket: &BucketRef,
        patch: &PropsPatch,
    ) -> Result<ChangeId, KvError> {
        self.props(bucket)?;
        self.check_patch(patch).map_err(RegistryError::Props)?;
        let id = self
            .registry
            .set_bucket_props(&bucket.bucket_type, &bucket.bucket, patch)?;
        Ok(id)
    }

    /// Returns a bucket to its type's props; returns the change's id.
    pub fn reset_bucket_props(&self, bucket: &BucketRef) -> Result<ChangeId, KvError> {
        self.props(bucket)?;
        let id = self
            .registry
            .reset_bucket_props(&bucket.bucket_type, &bucket.bucket)?;
        Ok(id)
    }

    /// Bounds a props change (for buckets and bucket types alike).
    pub fn check_patch(&self, patch: &PropsPatch) -> Result<(), PropsError> {
        let size = serde_json::to_vec(patch).map_or(usize::MAX, |v| v.len());
        if size > PROPS_BYTES_MAX {
            return Err(PropsError::one(
                "props",
                format!("{size} bytes of props exceed the limit of {PROPS_BYTES_MAX}"),
            ));
        }
        let unknown = patch.extra.len();
        if unknown > UNKNOWN_PROPS_MAX {
            return Err(PropsError::one(
                "props",
                format!("{unknown} unknown props exceed the limit of {UNKNOWN_PROPS_MAX}"),
            ));
        }
        let ring = self.config.ring_size;
        match patch.n_val {
            Some(n) if n > ring => Err(PropsError::one(
                "n_val",
                format!("must be at most the ring size, {ring}"),
            )),
            _ => Ok(()),
        }
    }
}
