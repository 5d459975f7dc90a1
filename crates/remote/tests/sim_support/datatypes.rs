//! Data type requests on the simulated cluster: the bucket types that hold
//! counters, sets and maps, the client's update and fetch at one node, and
//! the merge of every vnode's state of a key.

use eddy_dt::{DataType, Op, State, Value};
use eddy_kv::coordinator::datatype::{DtFetchRequest, DtUpdateRequest};
use eddy_model::*;
use eddy_vnode::datatype::state_of;

use super::{SimCluster, TIMEOUT_MS};

/// The data type bucket types every simulated cluster has: name, datatype.
pub const DT_TYPES: [(&str, &str); 3] = [("counters", "counter"), ("sets", "set"), ("maps", "map")];

/// The one bucket of data type bucket type `bucket_type`.
pub fn dt_bucket(bucket_type: &str) -> BucketRef {
    BucketRef::typed(bucket_type, b"b".to_vec())
}

/// How a client's update ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The node was unreachable: nothing was sent, nothing applied.
    Unreachable,
    /// Acknowledged (w = quorum).
    Acked,
    /// Failed: it may or may not have been applied.
    Failed(String),
}

/// A fetched value and its opaque context.
pub type Fetched = Option<(Value, Vec<u8>)>;

impl SimCluster {
    /// Applies `op` to `key` of `bucket_type` at node `at` with w = quorum.
    pub async fn dt_update(
        &self,
        at: usize,
        bucket_type: &str,
        key: &str,
        op: Op,
        context: Option<Vec<u8>>,
    ) -> Sent {
        let Some(node) = self.reachable(at) else {
            return Sent::Unreachable;
        };
        let req = DtUpdateRequest {
            bucket: dt_bucket(bucket_type),
            key: Some(key.as_bytes().to_vec()),
            op,
            context,
            options: PutOptions {
                timeout_ms: Some(TIMEOUT_MS),
                ..PutOptions::default()
            },
        };
        match node.dt_update(req).await {
            Ok(_) => Sent::Acked,
            Err(e) => Sent::Failed(e.to_string()),
        }
    }

    /// Fetches `key` of `bucket_type` at node `at` with `options` (r =
    /// quorum by default): `Err` if the node is unreachable or the read
    /// failed.
    pub async fn dt_fetch(
        &self,
        at: usize,
        bucket_type: &str,
        key: &str,
        options: GetOptions,
    ) -> Result<Fetched, String> {
        let node = self.reachable(at).ok_or("node down")?;
        let req = DtFetchRequest {
            bucket: dt_bucket(bucket_type),
            key: key.as_bytes().to_vec(),
            options: GetOptions {
                timeout_ms: Some(TIMEOUT_MS),
                ..options
            },
        };
        let resp = node.dt_fetch(req).await.map_err(|e| e.to_string())?;
        Ok(resp.body.map(|b| (b.state.value(), b.context)))
    }

    /// The merge, by the type, of the states of every copy of `key` of
    /// `bucket_type` on every vnode (primary or fallback) of every running
    /// process; `None` if no copy holds a state.
    pub fn merged_state(&self, bucket_type: &str, key: &str, datatype: DataType) -> Option<State> {
        let mut merged: Option<State> = None;
        for copy in self.copies(&dt_bucket(bucket_type), key) {
            let Some(state) = state_of(&copy, datatype).unwrap() else {
                continue;
            };
            match &mut merged {
                None => merged = Some(state),
                Some(m) => m.merge(&state).unwrap(),
            }
        }
        merged
    }
}
