//! `.../buckets/B/keys/K/preflist` (`riak_kv_wm_preflist`): the key's
//! preference list as `{"preflist":[{"partition":P,"node":N,"primary":true},…]}`,
//! the n_val partitions holding it, in preference order. On one node all
//! are primaries owned by this node.

use axum::response::Response;
use serde_json::{Value, json};

use super::error::ApiError;
use super::keys::json_response;
use super::routes::Target;
use super::server::App;

/// Answers GET and HEAD of a key's preflist.
pub fn get(app: &App, t: &Target, key: &[u8]) -> Result<Response, ApiError> {
    let list = app.node.preflist(&t.bucket, key)?;
    let items: Vec<Value> = list
        .into_iter()
        .map(|(partition, owner)| {
            json!({ "partition": partition.0, "node": owner.0, "primary": true })
        })
        .collect();
    Ok(json_response(
        json!({ "preflist": items }).to_string().into(),
    ))
}
