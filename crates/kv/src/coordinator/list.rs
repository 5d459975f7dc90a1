//! Listing keys and buckets. In a cluster: a coverage fold
//! ([`super::coverage`]). On a node that is its ring's only member, every
//! partition is local and folded here on the caller's (blocking) thread:
//! each key is taken from its first partition only (its first unmarked one
//! while partitions are marked damaged, design note 009), so it is listed
//! once. Tombstones are not listed.

use std::collections::BTreeSet;

use eddy_storage::{FoldControl, FoldOptions};
use tokio::sync::mpsc::Sender;

use crate::metrics::QueryMetrics;
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::request::BucketRef;
use eddy_vnode::msg::FoldKind;

/// Keys sent to the listener at a time.
pub const KEY_CHUNK_LEN: usize = 1000;

impl Node {
    /// Streams the live keys of `bucket` to `out` in chunks, counted in
    /// the node's figures whoever asks. Blocking: run it on a blocking
    /// thread. Stops early if `out` is closed.
    pub fn list_keys_blocking(
        &self,
        bucket: &BucketRef,
        out: &Sender<Vec<Vec<u8>>>,
    ) -> Result<(), KvError> {
        let q = &self.metrics.queries;
        let (count, running, errors) = (
            &q.list_keys,
            Some(&q.list_keys_running),
            &q.list_keys_errors,
        );
        QueryMetrics::track(count, running, errors, || self.list_keys(bucket, out))
    }

    fn list_keys(&self, bucket: &BucketRef, out: &Sender<Vec<Vec<u8>>>) -> Result<(), KvError> {
        let props = self.props(bucket)?;
        let (n_val, storage_bucket) = (props.n_val, bucket.storage_bucket_at(props.generation));
        if !self.alone() {
            let kind = FoldKind::Keys {
                bucket: storage_bucket,
            };
            return self.coverage_fold(n_val, kind, |keys| out.blocking_send(keys).is_ok());
        }
        let around_damage = !self.damaged_partitions().is_empty();
        let opts = FoldOptions::bucket(&storage_bucket);
        let mut chunk = Vec::new();
        let mut closed = false;
        let ring = self.ring();
        for handle in self.local_vnodes() {
            let mut visit = |_: &[u8], key: &[u8], value: &[u8]| {
                let hash = Node::key_hash(bucket, key);
                let lister = match around_damage {
                    false => ring.partition_of(hash),
                    true => self.first_unmarked(&ring, hash, n_val),
                };
                let live = eddy_vnode::segments::is_live_record(value);
                if lister == handle.partition && live {
                    chunk.push(key.to_vec());
                }
                if chunk.len() >= KEY_CHUNK_LEN {
                    closed = out.blocking_send(std::mem::take(&mut chunk)).is_err();
                }
                match closed {
                    true => FoldControl::Stop,
                    false => FoldControl::Continue,
                }
            };
            handle.backend().fold_objects(&opts, &mut visit)?;
            if closed {
                return Ok(());
            }
        }
        if !chunk.is_empty() {
            let _ = out.blocking_send(chunk);
        }
        Ok(())
    }

    /// True when this node is its ring's only member.
    fn alone(&self) -> bool {
        let ring = self.ring_now();
        ring.members() == [&self.config.node_name]
    }

    /// The replica a key is listed from while partitions are marked
    /// damaged: the first unmarked one of its preflist, so that a key a
    /// damaged primary lost is still listed and one only a damaged replica
    /// holds is not (design note 009); the primary if all are marked.
    fn first_unmarked(
        &self,
        ring: &eddy_ring::Ring,
        hash: u64,
        n_val: u32,
    ) -> eddy_ring::Partition {
        let preflist = ring.preflist(hash, n_val);
        preflist
            .iter()
            .map(|(p, _)| *p)
            .find(|p| !self.is_marked(*p))
            .unwrap_or_else(|| ring.partition_of(hash))
    }

    /// The buckets of `bucket_type` holding at least one key, counted in
    /// the node's figures. Blocking.
    pub fn list_buckets_blocking(&self, bucket_type: &str) -> Result<Vec<Vec<u8>>, KvError> {
        let q = &self.metrics.queries;
        let (count, errors) = (&q.list_buckets, &q.list_buckets_errors);
        QueryMetrics::track(count, None, errors, || self.list_buckets(bucket_type))
    }

    fn list_buckets(&self, bucket_type: &str) -> Result<Vec<Vec<u8>>, KvError> {
        let props = self.registry.bucket_props(bucket_type, b"-")?;
        let mut buckets = BTreeSet::new();
        if !self.alone() {
            let kind = FoldKind::Buckets {
                bucket_type: bucket_type.to_string(),
            };
            self.coverage_fold(props.n_val, kind, |names| {
                buckets.extend(names);
                true
            })?;
            return Ok(buckets.into_iter().collect());
        }
        for handle in self.local_vnodes() {
            handle
                .backend()
                .fold_keys(&FoldOptions::all(), &mut |storage_bucket, _| {
                    if let Some(b) = BucketRef::from_storage_bucket(storage_bucket)
                        && b.bucket_type == bucket_type
                    {
                        buckets.insert(b.bucket);
                    }
                    FoldControl::Continue
                })?;
        }
        Ok(buckets.into_iter().collect())
    }
}
