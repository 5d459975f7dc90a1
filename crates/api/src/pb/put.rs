//! `RpbPutReq` (11) → `RpbPutResp` (12).
//!
//! A request without a key gets a server-generated one, returned in
//! `key`. The stored object (all siblings) and its vclock come back only
//! with `return_body` or `return_head` (values left out). Conditional puts
//! (`if_none_match`, `if_not_modified`) are checked atomically by the
//! coordinating vnode; their failures read `match_found`, `modified`, or
//! `notfound` when `if_not_modified` found nothing, as in Riak.

use eddy_wire::codes;
use eddy_wire::proto::{RpbPutReq, RpbPutResp};
use std::sync::Arc;

use eddy_kv::Node;
use eddy_model::{BucketRef, GetOptions, GetRequest, GetResponse, KvError, PutOptions, PutRequest};
use eddy_object::context;
use prost::Message;

use super::content::{from_pb, object_to_pb};
use super::error::PbError;
use super::request::{bucket_ref, context, key, quorum, timeout_ms};
use super::server::{Outbox, Session};

pub(crate) async fn handle(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = RpbPutReq::decode(body)?;
    let generated = req.key.is_none();
    let head = req.return_head.unwrap_or(false);
    let request = to_request(req)?;
    let target = (request.bucket.clone(), request.key.clone());
    let resp = match session.node.put(request).await {
        Ok(resp) => resp,
        Err(KvError::Modified) => return Err(modified(&session.node, target).await),
        Err(e) => return Err(e.into()),
    };
    let object = resp.object.as_ref();
    let reply = RpbPutResp {
        content: object.map(|o| object_to_pb(o, head)).unwrap_or_default(),
        vclock: object.map(|o| context::to_bytes(&o.vv)),
        key: generated.then_some(resp.key),
    };
    out.push(codes::PUT_RESP, &reply);
    Ok(())
}

fn to_request(req: RpbPutReq) -> Result<PutRequest, PbError> {
    let options = PutOptions {
        w: quorum(req.w),
        dw: quorum(req.dw),
        pw: quorum(req.pw),
        return_body: req.return_body.unwrap_or(false),
        return_head: req.return_head.unwrap_or(false),
        if_none_match: req.if_none_match.unwrap_or(false),
        if_not_modified: req.if_not_modified.unwrap_or(false),
        timeout_ms: timeout_ms(req.timeout),
    };
    Ok(PutRequest {
        bucket: bucket_ref(req.r#type, req.bucket)?,
        key: req.key.map(key).transpose()?,
        context: context(req.vclock)?,
        content: from_pb(req.content)?,
        options,
    })
}

/// Riak answers `notfound` rather than `modified` when `if_not_modified`
/// found no object; look once more to tell the two apart.
async fn modified(node: &Arc<Node>, (bucket, key): (BucketRef, Option<Vec<u8>>)) -> PbError {
    let Some(key) = key else {
        return KvError::Modified.into();
    };
    let get = GetRequest {
        bucket,
        key,
        options: GetOptions::default(),
    };
    match node.get(get).await {
        Ok(GetResponse::NotFound { .. }) => PbError::NotFound,
        _ => KvError::Modified.into(),
    }
}
