//! `RpbGetReq` (9) → `RpbGetResp` (10).
//!
//! Not found is an empty response, with the tombstone's vclock only when
//! the client asked for `deletedvclock`. `if_modified` with the object's
//! current vclock answers `unchanged` and no content; `head` sends the
//! metadata without values.

use eddy_model::{GetOptions, GetRequest, GetResponse};
use eddy_object::context;
use eddy_wire::codes;
use eddy_wire::proto::{RpbGetReq, RpbGetResp};
use prost::Message;

use super::content::object_to_pb;
use super::error::PbError;
use super::request::{bucket_ref, key, quorum, timeout_ms};
use super::server::{Outbox, Session};

pub(crate) async fn handle(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = RpbGetReq::decode(body)?;
    let head = req.head.unwrap_or(false);
    let deleted_vclock = req.deletedvclock.unwrap_or(false);
    let if_modified = req.if_modified.clone();
    let request = to_request(req)?;
    let resp = match session.node.get(request).await? {
        GetResponse::Found(obj) => {
            let vclock = context::to_bytes(&obj.vv);
            match if_modified.as_deref() == Some(vclock.as_slice()) {
                true => unchanged(),
                false => RpbGetResp {
                    content: object_to_pb(&obj, head),
                    vclock: Some(vclock),
                    unchanged: None,
                },
            }
        }
        GetResponse::NotFound { tombstone_context } => RpbGetResp {
            vclock: tombstone_context
                .filter(|_| deleted_vclock)
                .map(|vv| context::to_bytes(&vv)),
            ..RpbGetResp::default()
        },
    };
    out.push(codes::GET_RESP, &resp);
    Ok(())
}

fn unchanged() -> RpbGetResp {
    RpbGetResp {
        unchanged: Some(true),
        ..RpbGetResp::default()
    }
}

fn to_request(req: RpbGetReq) -> Result<GetRequest, PbError> {
    let options = GetOptions {
        r: quorum(req.r),
        pr: quorum(req.pr),
        basic_quorum: req.basic_quorum,
        notfound_ok: req.notfound_ok,
        deleted_vclock: req.deletedvclock.unwrap_or(false),
        timeout_ms: timeout_ms(req.timeout),
    };
    Ok(GetRequest {
        bucket: bucket_ref(req.r#type, req.bucket)?,
        key: key(req.key)?,
        options,
    })
}
