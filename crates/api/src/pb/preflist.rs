//! `RpbGetBucketKeyPreflistReq` (33) → `RpbGetBucketKeyPreflistResp` (34):
//! the n_val partitions holding a key, each with its owner. On one node all
//! are primaries owned by this node.

use eddy_wire::codes;
use eddy_wire::proto::{
    RpbBucketKeyPreflistItem, RpbGetBucketKeyPreflistReq, RpbGetBucketKeyPreflistResp,
};
use prost::Message;

use super::error::PbError;
use super::request::{bucket_ref, key};
use super::server::{Outbox, Session};

pub(crate) fn handle(session: &Session, out: &mut Outbox, body: &[u8]) -> Result<(), PbError> {
    let req = RpbGetBucketKeyPreflistReq::decode(body)?;
    let bucket = bucket_ref(req.r#type, req.bucket)?;
    let key = key(req.key)?;
    let preflist = session
        .node
        .preflist(&bucket, &key)?
        .into_iter()
        .map(|(partition, owner)| RpbBucketKeyPreflistItem {
            partition: i64::from(partition.0),
            node: owner.0.into_bytes(),
            primary: true,
        })
        .collect();
    let resp = RpbGetBucketKeyPreflistResp { preflist };
    out.push(codes::GET_BUCKET_KEY_PREFLIST_RESP, &resp);
    Ok(())
}
