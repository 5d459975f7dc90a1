//! Bucket properties: `RpbGetBucketReq` (19) → `RpbGetBucketResp` (20),
//! `RpbSetBucketReq` (21) → `RpbSetBucketResp` (22, bodiless),
//! `RpbResetBucketReq` (29) → `RpbResetBucketResp` (30, bodiless).
//!
//! Changes are validated whole by the registry (a bad value changes
//! nothing) and written to the metadata file on a blocking thread; each
//! answers once its push to the cluster is done (the members it did not
//! reach, which PB cannot name, are in the node's log).

use eddy_wire::codes;
use eddy_wire::proto::{RpbGetBucketReq, RpbGetBucketResp, RpbResetBucketReq, RpbSetBucketReq};
use std::sync::Arc;

use eddy_kv::Node;
use eddy_model::KvError;
use eddy_model::metadata::ChangeId;
use eddy_model::types::RegistryError;
use prost::Message;

use super::error::PbError;
use super::props::{patch_from_pb, to_pb};
use super::request::bucket_ref;
use super::server::{Outbox, Session};

/// Code 19: the bucket's effective props.
pub(crate) fn get(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = RpbGetBucketReq::decode(body)?;
    let b = bucket_ref(req.r#type, req.bucket)?;
    let props = session.node.bucket_props(&b).map_err(props_error)?;
    let resp = RpbGetBucketResp {
        props: to_pb(&props),
    };
    out.push(codes::GET_BUCKET_RESP, &resp);
    Ok(())
}

/// Code 21: sets the props the request carries.
pub(crate) async fn set(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = RpbSetBucketReq::decode(body)?;
    let b = bucket_ref(req.r#type, req.bucket)?;
    let patch = patch_from_pb(&req.props)?;
    let node = session.node.clone();
    let id = match tokio::task::spawn_blocking(move || node.set_bucket_props(&b, &patch)).await {
        Ok(result) => result.map_err(props_error)?,
        Err(_) => return Err(PbError::WorkerFailed),
    };
    session.node.metadata_pushes().shared(id).await;
    out.push_empty(codes::SET_BUCKET_RESP);
    Ok(())
}

/// Code 29: back to the bucket type's props.
pub(crate) async fn reset(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = RpbResetBucketReq::decode(body)?;
    let b = bucket_ref(req.r#type, req.bucket)?;
    let node = session.node.clone();
    let id = match tokio::task::spawn_blocking(move || node.reset_bucket_props(&b)).await {
        Ok(result) => result.map_err(props_error)?,
        Err(_) => return Err(PbError::WorkerFailed),
    };
    session.node.metadata_pushes().shared(id).await;
    out.push_empty(codes::RESET_BUCKET_RESP);
    Ok(())
}

/// A props request's error: the registry's in the bucket requests' words.
fn props_error(e: KvError) -> PbError {
    match e {
        KvError::Registry(r) => PbError::Bucket(r),
        other => other.into(),
    }
}

/// Runs a registry change on a blocking thread (it is saved before it
/// returns), then waits for its push to the cluster.
pub(crate) async fn blocking(
    node: &Arc<Node>,
    change: impl FnOnce(&Node) -> Result<ChangeId, RegistryError> + Send + 'static,
) -> Result<(), PbError> {
    let id = match crate::metadata::on_blocking_thread(node, change).await {
        Ok(result) => result.map_err(PbError::Bucket)?,
        Err(_) => return Err(PbError::WorkerFailed),
    };
    node.metadata_pushes().shared(id).await;
    Ok(())
}
