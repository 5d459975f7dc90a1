//! Bucket types: `RpbGetBucketTypeReq` (31) → `RpbGetBucketResp` (20) and
//! `RpbSetBucketTypeReq` (32) → `RpbSetBucketResp` (22, bodiless). Types are
//! created and activated by the admin CLI, as in Riak; over PB their props
//! can be read and changed (immutable props excepted).

use eddy_wire::codes;
use eddy_wire::proto::{RpbGetBucketResp, RpbGetBucketTypeReq, RpbSetBucketTypeReq};
use prost::Message;

use super::bucket_props::blocking;
use super::error::PbError;
use super::props::{patch_from_pb, to_pb};
use super::request::type_name;
use super::server::{Outbox, Session};

/// Code 31: the type's props, whether or not it is active.
pub(crate) fn get(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = RpbGetBucketTypeReq::decode(body)?;
    let name = type_name(Some(req.r#type))?;
    let info = session
        .node
        .registry()
        .type_info(&name)
        .map_err(PbError::Bucket)?;
    let resp = RpbGetBucketResp {
        props: to_pb(&info.props),
    };
    out.push(codes::GET_BUCKET_RESP, &resp);
    Ok(())
}

/// Code 32: changes the type's props.
pub(crate) async fn set(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = RpbSetBucketTypeReq::decode(body)?;
    let name = type_name(Some(req.r#type))?;
    let patch = patch_from_pb(&req.props)?;
    blocking(&session.node, move |node| {
        node.check_patch(&patch)
            .map_err(eddy_model::types::RegistryError::Props)?;
        node.registry().update_type(&name, &patch)
    })
    .await?;
    out.push_empty(codes::SET_BUCKET_RESP);
    Ok(())
}
