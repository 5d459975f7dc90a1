//! Client ids (codes 3–6). With vnode-based version vectors the id has no
//! effect on causality; Riak keeps it per connection and echoes it back,
//! and so does Eddy.

use eddy_wire::codes;
use eddy_wire::proto::{RpbGetClientIdResp, RpbSetClientIdReq};
use prost::Message;

use super::error::PbError;
use super::server::{Outbox, Session};

/// `RpbGetClientIdReq` (3, bodiless) → `RpbGetClientIdResp` (4).
pub(crate) fn get(session: &Session, out: &mut Outbox) -> Result<(), PbError> {
    let resp = RpbGetClientIdResp {
        client_id: session.client_id.clone(),
    };
    out.push(codes::GET_CLIENT_ID_RESP, &resp);
    Ok(())
}

/// `RpbSetClientIdReq` (5) → `RpbSetClientIdResp` (6, bodiless).
pub(crate) fn set(session: &mut Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = RpbSetClientIdReq::decode(body)?;
    session.client_id = req.client_id;
    out.push_empty(codes::SET_CLIENT_ID_RESP);
    Ok(())
}
