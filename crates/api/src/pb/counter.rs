//! Riak 1.4's counters: `RpbCounterUpdateReq` (50) → `RpbCounterUpdateResp`
//! (51) and `RpbCounterGetReq` (52) → `RpbCounterGetResp` (53), in buckets
//! of the `default` type (`riak_kv_pb_counter`).
//!
//! They take the node's data type path with a counter operation, so a
//! legacy counter and a `DtUpdateReq` on a `default` bucket are one value.
//! Invariants: the bucket must have `allow_mult` (the node refuses
//! otherwise, with Riak's text); a missing counter answers a response
//! without `value`; `value` comes back from an update only with
//! `returnvalue`.

use eddy_dt::Op;
use eddy_kv::coordinator::datatype::{DtFetchRequest, DtUpdateRequest};
use eddy_model::{GetOptions, PutOptions};
use eddy_wire::codes;
use eddy_wire::proto::{
    RpbCounterGetReq, RpbCounterGetResp, RpbCounterUpdateReq, RpbCounterUpdateResp,
};
use prost::Message;

use super::error::PbError;
use super::request::{bucket_ref, key, quorum};
use super::server::{Outbox, Session};

pub(crate) async fn update(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = RpbCounterUpdateReq::decode(body)?;
    let request = DtUpdateRequest {
        bucket: bucket_ref(None, req.bucket)?,
        key: Some(key(req.key)?),
        op: Op::Counter(req.amount),
        context: None,
        options: PutOptions {
            w: quorum(req.w),
            dw: quorum(req.dw),
            pw: quorum(req.pw),
            return_body: req.returnvalue.unwrap_or(false),
            ..PutOptions::default()
        },
    };
    let updated = session.node.dt_update(request).await?;
    let resp = RpbCounterUpdateResp {
        value: updated.body.and_then(|b| b.counter()),
    };
    out.push(codes::COUNTER_UPDATE_RESP, &resp);
    Ok(())
}

pub(crate) async fn get(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = RpbCounterGetReq::decode(body)?;
    let request = DtFetchRequest {
        bucket: bucket_ref(None, req.bucket)?,
        key: key(req.key)?,
        options: GetOptions {
            r: quorum(req.r),
            pr: quorum(req.pr),
            basic_quorum: req.basic_quorum,
            notfound_ok: req.notfound_ok,
            ..GetOptions::default()
        },
    };
    let fetched = session.node.dt_fetch(request).await?;
    let resp = RpbCounterGetResp {
        value: fetched.body.and_then(|b| b.counter()),
    };
    out.push(codes::COUNTER_GET_RESP, &resp);
    Ok(())
}
