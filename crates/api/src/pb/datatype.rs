//! `DtFetchReq` (80) → `DtFetchResp` (81) and `DtUpdateReq` (82) →
//! `DtUpdateResp` (83): Riak's data types over PB (`riak_kv_pb_crdt`).
//!
//! A request on a bucket of the `default` type is a Riak 1.4 counter
//! request: the node takes it on the same path and refuses any other
//! operation there. A fetch that finds nothing answers only `type`; one
//! that finds a value answers `type`, `value` and, unless
//! `include_context=false`, the context (sets and maps only). An update
//! answers the key only when the node made it, and the value (plus its
//! context) only with `return_body`.
//!
//! Invariants: every malformed operation is refused with a message before
//! the node sees it ([`super::dt_codec`]); bucket refusals use Riak's
//! texts (note 019 §1).

use eddy_kv::coordinator::datatype::{DtBody, DtFetchRequest, DtUpdateRequest};
use eddy_model::KvError;
use eddy_model::error::DatatypeBucketError;
use eddy_model::types::RegistryError;
use eddy_model::{GetOptions, PutOptions};
use eddy_wire::codes;
use eddy_wire::proto::{DtFetchReq, DtFetchResp, DtUpdateReq, DtUpdateResp};
use prost::Message;

use super::dt_codec::{datatype_to_pb, op_from_pb, value_into_update, value_to_pb};
use super::error::PbError;
use super::request::{bucket_ref, key, quorum, timeout_ms};
use super::server::{Outbox, Session};

pub(crate) async fn fetch(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = DtFetchReq::decode(body)?;
    let include_context = req.include_context();
    let request = DtFetchRequest {
        bucket: bucket_ref(Some(req.r#type), req.bucket)?,
        key: key(req.key)?,
        options: GetOptions {
            r: quorum(req.r),
            pr: quorum(req.pr),
            basic_quorum: req.basic_quorum,
            notfound_ok: req.notfound_ok,
            deleted_vclock: false,
            timeout_ms: timeout_ms(req.timeout),
        },
    };
    let fetched = session
        .node
        .dt_fetch(request)
        .await
        .map_err(|e| refusal(e, true))?;
    let mut resp = DtFetchResp {
        r#type: datatype_to_pb(fetched.datatype),
        ..DtFetchResp::default()
    };
    if let Some(DtBody { state, context }) = fetched.body {
        resp.value = Some(value_to_pb(state.value()));
        resp.context = (include_context && !context.is_empty()).then_some(context);
    }
    out.push(codes::DT_FETCH_RESP, &resp);
    Ok(())
}

pub(crate) async fn update(
    session: &Session,
    out: &mut Outbox,
    body: &[u8],
) -> Result<(), PbError> {
    let req = DtUpdateReq::decode(body)?;
    let include_context = req.include_context();
    let request = DtUpdateRequest {
        bucket: bucket_ref(Some(req.r#type), req.bucket)?,
        key: req.key.map(key).transpose()?,
        op: op_from_pb(req.op).map_err(|e| PbError::Datatype(e.0))?,
        context: req.context,
        options: PutOptions {
            w: quorum(req.w),
            dw: quorum(req.dw),
            pw: quorum(req.pw),
            return_body: req.return_body.unwrap_or(false),
            timeout_ms: timeout_ms(req.timeout),
            ..PutOptions::default()
        },
    };
    let updated = session
        .node
        .dt_update(request)
        .await
        .map_err(|e| refusal(e, false))?;
    let mut resp = DtUpdateResp {
        key: updated.generated.then_some(updated.key),
        ..DtUpdateResp::default()
    };
    if let Some(DtBody { state, context }) = updated.body {
        value_into_update(state.value(), &mut resp);
        resp.context = (include_context && !context.is_empty()).then_some(context);
    }
    out.push(codes::DT_UPDATE_RESP, &resp);
    Ok(())
}

/// Riak's texts for the refusals `riak_kv_pb_crdt` words itself; every
/// other failure keeps its KV text.
fn refusal(e: KvError, fetch: bool) -> PbError {
    let text = match &e {
        KvError::Registry(RegistryError::NoSuchType(t) | RegistryError::NotActive(t)) => {
            format!("Error no bucket type `<<\"{t}\">>`")
        }
        KvError::DatatypeBucket(DatatypeBucketError::NoDatatype(name)) => match fetch {
            true => format!("`{name}` is not a supported type"),
            false => format!("Bucket datatype `{name}` is not a supported type"),
        },
        _ => return e.into(),
    };
    PbError::Datatype(text)
}
