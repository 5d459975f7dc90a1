//! Eddy's multi-key requests over PB (design note 016):
//! `EddyMultiGetReq` (160) → `EddyMultiGetResp` (161),
//! `EddyMultiPutReq` (162) → `EddyMultiPutResp` (163),
//! `EddyMultiDelReq` (164) → `EddyMultiDelResp` (165).
//!
//! Options and items translate as the single operations' do (`get`, `put`,
//! `delete`). An item that does not translate (a bad vclock, a bad index
//! entry) gets its own `ERROR` result and never reaches the node; a key
//! the node refuses (empty, too long) likewise, from the node. What
//! concerns the whole request — a message that does not decode, a bad
//! bucket or type, more items than allowed, quorums the bucket refuses —
//! is answered with `RpbErrorResp`, in the single operations' words.

use eddy_kv::DeleteOutcome;
use eddy_model::{
    DeleteOptions, GetOptions, GetResponse, MultiDeleteKey, MultiDeleteRequest, MultiGetRequest,
    MultiPutObject, MultiPutRequest, PutOptions, PutResponse,
};
use eddy_object::context as causal;
use eddy_wire::codes;
use eddy_wire::proto::RpbContent;
use eddy_wire::proto::eddy::{
    EddyDelKey, EddyKeyResult, EddyMultiDelReq, EddyMultiDelResp, EddyMultiGetReq,
    EddyMultiGetResp, EddyMultiPutReq, EddyMultiPutResp, EddyPutObject, eddy_key_result::Status,
};
use prost::Message;

use super::content::{from_pb, object_to_pb};
use super::error::PbError;
use super::request::{bucket_ref, context, quorum, timeout_ms};
use super::server::{Outbox, Session};
use crate::items;

/// `EddyMultiGetReq` → `EddyMultiGetResp`.
pub(crate) async fn get(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = EddyMultiGetReq::decode(body)?;
    let head = req.head.unwrap_or(false);
    let deleted_vclock = req.deletedvclock.unwrap_or(false);
    let options = GetOptions {
        r: quorum(req.r),
        pr: quorum(req.pr),
        basic_quorum: req.basic_quorum,
        notfound_ok: req.notfound_ok,
        deleted_vclock,
        timeout_ms: timeout_ms(req.timeout),
    };
    let request = MultiGetRequest {
        bucket: bucket_ref(req.r#type, req.bucket)?,
        keys: req.keys.clone(),
        options,
    };
    let got = session.node.multi_get(request).await?;
    let results = req.keys.into_iter().zip(got).map(|(key, got)| match got {
        Ok(GetResponse::Found(obj)) => found(key, object_to_pb(&obj, head), &obj.vv),
        Ok(GetResponse::NotFound { tombstone_context }) => EddyKeyResult {
            vclock: tombstone_context
                .filter(|_| deleted_vclock)
                .map(|vv| causal::to_bytes(&vv)),
            ..result(key, Status::NotFound)
        },
        Err(e) => failed(key, &PbError::from(e)),
    });
    let resp = EddyMultiGetResp {
        results: results.collect(),
    };
    out.push(codes::MULTI_GET_RESP, &resp);
    Ok(())
}

/// `EddyMultiPutReq` → `EddyMultiPutResp`.
pub(crate) async fn put(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = EddyMultiPutReq::decode(body)?;
    let options = PutOptions {
        w: quorum(req.w),
        dw: quorum(req.dw),
        pw: quorum(req.pw),
        return_body: req.return_body.unwrap_or(false),
        if_none_match: req.if_none_match.unwrap_or(false),
        timeout_ms: timeout_ms(req.timeout),
        ..PutOptions::default()
    };
    let bucket = bucket_ref(req.r#type, req.bucket)?;
    let keys: Vec<Vec<u8>> = req.objects.iter().map(|o| o.key.clone()).collect();
    let (objects, failed_items) = items::split(req.objects.into_iter().map(put_object));
    let request = MultiPutRequest {
        bucket,
        objects,
        options,
    };
    let ran = session.node.multi_put(request).await?;
    let results = keys
        .into_iter()
        .zip(failed_items.join(ran, PbError::from))
        .map(|(key, written)| match written {
            Ok(PutResponse {
                object: Some(obj), ..
            }) => found(key, object_to_pb(&obj, false), &obj.vv),
            Ok(PutResponse { object: None, .. }) => result(key, Status::Ok),
            Err(e) => failed(key, &e),
        });
    let resp = EddyMultiPutResp {
        results: results.collect(),
    };
    out.push(codes::MULTI_PUT_RESP, &resp);
    Ok(())
}

fn put_object(o: EddyPutObject) -> Result<MultiPutObject, PbError> {
    Ok(MultiPutObject {
        key: o.key,
        context: context(o.vclock)?,
        content: from_pb(o.content)?,
    })
}

/// `EddyMultiDelReq` → `EddyMultiDelResp`.
pub(crate) async fn delete(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = EddyMultiDelReq::decode(body)?;
    let options = DeleteOptions {
        rw: quorum(req.rw),
        r: quorum(req.r),
        w: quorum(req.w),
        pr: quorum(req.pr),
        pw: quorum(req.pw),
        dw: quorum(req.dw),
        timeout_ms: timeout_ms(req.timeout),
    };
    let bucket = bucket_ref(req.r#type, req.bucket)?;
    let names: Vec<Vec<u8>> = req.keys.iter().map(|k| k.key.clone()).collect();
    let (keys, failed_items) = items::split(req.keys.into_iter().map(delete_key));
    let request = MultiDeleteRequest {
        bucket,
        keys,
        options,
    };
    let ran = session.node.multi_delete(request).await?;
    let results = names
        .into_iter()
        .zip(failed_items.join(ran, PbError::from))
        .map(|(key, deleted)| match deleted {
            Ok(DeleteOutcome::Deleted) => result(key, Status::Ok),
            Ok(DeleteOutcome::NotFound) => result(key, Status::NotFound),
            Err(e) => failed(key, &e),
        });
    let resp = EddyMultiDelResp {
        results: results.collect(),
    };
    out.push(codes::MULTI_DEL_RESP, &resp);
    Ok(())
}

fn delete_key(k: EddyDelKey) -> Result<MultiDeleteKey, PbError> {
    Ok(MultiDeleteKey {
        key: k.key,
        context: context(k.vclock)?,
    })
}

fn result(key: Vec<u8>, status: Status) -> EddyKeyResult {
    EddyKeyResult {
        key,
        status: status as i32,
        ..EddyKeyResult::default()
    }
}

fn found(key: Vec<u8>, content: Vec<RpbContent>, vv: &eddy_object::VersionVector) -> EddyKeyResult {
    EddyKeyResult {
        content,
        vclock: Some(causal::to_bytes(vv)),
        ..result(key, Status::Ok)
    }
}

fn failed(key: Vec<u8>, e: &PbError) -> EddyKeyResult {
    EddyKeyResult {
        errmsg: Some(e.text().into_bytes()),
        ..result(key, Status::Error)
    }
}
