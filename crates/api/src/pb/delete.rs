//! `RpbDelReq` (13) → `RpbDelResp` (14, bodiless). Deleting a key that is
//! not there succeeds, as in Riak.

use eddy_model::{DeleteOptions, DeleteRequest};
use eddy_wire::codes;
use eddy_wire::proto::RpbDelReq;
use prost::Message;

use super::error::PbError;
use super::request::{bucket_ref, context, key, quorum, timeout_ms};
use super::server::{Outbox, Session};

pub(crate) async fn handle(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = RpbDelReq::decode(body)?;
    session.node.delete(to_request(req)?).await?;
    out.push_empty(codes::DEL_RESP);
    Ok(())
}

fn to_request(req: RpbDelReq) -> Result<DeleteRequest, PbError> {
    let options = DeleteOptions {
        rw: quorum(req.rw),
        r: quorum(req.r),
        w: quorum(req.w),
        pr: quorum(req.pr),
        pw: quorum(req.pw),
        dw: quorum(req.dw),
        timeout_ms: timeout_ms(req.timeout),
    };
    Ok(DeleteRequest {
        bucket: bucket_ref(req.r#type, req.bucket)?,
        key: key(req.key)?,
        context: context(req.vclock)?,
        options,
    })
}
