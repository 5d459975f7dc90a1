//! `RpbGetServerInfoReq` (7, bodiless) → `RpbGetServerInfoResp` (8): the
//! node name and the Riak version Eddy is compatible with, which clients
//! use to decide which features to use.

use eddy_wire::codes;
use eddy_wire::proto::RpbGetServerInfoResp;

use super::error::PbError;
use super::server::{Outbox, Session};
use crate::version::RIAK_COMPAT_VERSION;

pub(crate) fn handle(session: &Session, out: &mut Outbox) -> Result<(), PbError> {
    let resp = RpbGetServerInfoResp {
        node: Some(session.node.config().node_name.0.clone().into_bytes()),
        server_version: Some(RIAK_COMPAT_VERSION.as_bytes().to_vec()),
    };
    out.push(codes::GET_SERVER_INFO_RESP, &resp);
    Ok(())
}
