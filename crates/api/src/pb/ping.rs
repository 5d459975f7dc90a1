//! `RpbPingReq` (1) → `RpbPingResp` (2): both bodiless.

use eddy_wire::codes;

use super::error::PbError;
use super::server::Outbox;

pub(crate) fn handle(out: &mut Outbox) -> Result<(), PbError> {
    out.push_empty(codes::PING_RESP);
    Ok(())
}
