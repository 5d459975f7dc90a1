//! The commands that talk to a running node: `eddy ping`, `eddy stop` and
//! `eddy admin …`. Output follows `riak` and `riak-admin` where Riak has
//! the command. Each returns the text to print, or an error to report
//! (exit status 1). The cluster commands are in [`cluster`].

mod cluster;
mod render;
mod views;

use std::time::{Duration, Instant};

use eddy_client::http::{self, HttpResponse};
use serde_json::Value;

use crate::cli::{AdminAction, BucketTypeAction};
use crate::config::Settings;
use crate::node::datadir;

/// A failed command, with the message to show.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CommandError(pub String);

fn fail<T>(message: impl Into<String>) -> Result<T, CommandError> {
    Err(CommandError(message.into()))
}

/// A request to the node's HTTP listener.
fn call(
    settings: &Settings,
    method: &str,
    path: &str,
    body: &str,
) -> Result<HttpResponse, CommandError> {
    let addr = settings.listeners.http.to_string();
    let headers = [("Content-Type", "application/json")];
    http::request(&addr, method, path, &headers, body.as_bytes()).map_err(|e| {
        CommandError(format!(
            "Node {} is not responding at {addr}: {e}",
            settings.node.nodename
        ))
    })
}

/// `eddy ping`: "pong" when the node answers; otherwise Riak's message
/// with the address tried, so a wrong `--config` shows at once.
pub fn ping(settings: &Settings) -> Result<String, CommandError> {
    match call(settings, "GET", "/ping", "") {
        Ok(r) if r.status == 200 => Ok("pong".into()),
        _ => fail(format!(
            "Node {} not responding to pings at {} (listener.http.internal; \
             the settings come from --config FILE, ./eddy.toml and EDDY_*).",
            settings.node.nodename, settings.listeners.http
        )),
    }
}

/// `eddy stop`: SIGTERM to the node holding the data directory, then wait
/// (up to a minute) for it to release the directory's lock.
#[allow(unsafe_code, reason = "signals the node's process")]
pub fn stop(settings: &Settings) -> Result<String, CommandError> {
    let root = &settings.node.platform_data_dir;
    let Some(pid) = datadir::running_pid(root) else {
        let mut message = format!(
            "Node is not running! (no pid file in {}; platform_data_dir comes from \
             --config FILE, ./eddy.toml and EDDY_*)",
            root.display()
        );
        if ping(settings).is_ok() {
            message.push_str(&format!(
                "; a node answers at {}: give the --config it was started with",
                settings.listeners.http
            ));
        }
        return fail(message);
    };
    // SAFETY: kill(2) with a pid read from our own pid file.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return fail(format!("Node is not running! (pid {pid} is gone)"));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while datadir::is_locked(root) {
        if Instant::now() > deadline {
            return fail(format!("node (pid {pid}) did not stop within 60 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok("ok".into())
}

/// `eddy admin …`
pub fn admin(settings: &Settings, action: &AdminAction) -> Result<String, CommandError> {
    match action {
        AdminAction::Status => status(settings),
        AdminAction::BucketType(action) => bucket_type(settings, action),
        AdminAction::Repair { partition, wait } => repair(settings, partition, *wait),
        AdminAction::DropBucket {
            bucket,
            bucket_type,
        } => drop_bucket(settings, bucket_type, bucket),
        AdminAction::Cluster(action) => cluster::cluster(settings, action),
        AdminAction::View(view) => cluster::view(settings, view),
    }
}

/// `eddy admin status`: every stat as `name : value`, like riak-admin.
fn status(settings: &Settings) -> Result<String, CommandError> {
    let stats = json(call(settings, "GET", "/stats", "")?)?;
    let Value::Object(map) = stats else {
        return fail("the node's /stats is not a JSON object");
    };
    let mut lines: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k} : {}", plain(v)))
        .collect();
    lines.sort();
    Ok(lines.join("\n"))
}

fn bucket_type(settings: &Settings, action: &BucketTypeAction) -> Result<String, CommandError> {
    let path = |name: &str| format!("/admin/bucket-types/{}", encode(name));
    match action {
        BucketTypeAction::List => {
            let listed = json(expect(
                call(settings, "GET", "/admin/bucket-types", "")?,
                200,
            )?)?;
            let types = listed["types"].as_array().cloned().unwrap_or_default();
            let lines: Vec<String> = types
                .iter()
                .map(|t| match t["status"].as_str() {
                    Some("active") => format!("{} (active)", plain(&t["name"])),
                    _ => format!("{} (not active)", plain(&t["name"])),
                })
                .collect();
            Ok(lines.join("\n"))
        }
        BucketTypeAction::Status { name } => {
            let r = call(settings, "GET", &path(name), "")?;
            if r.status == 404 {
                return fail(format!("{name} is not an existing bucket type"));
            }
            let t = json(expect(r, 200)?)?;
            let head = match t["status"].as_str() {
                Some("active") => format!("{name} is active"),
                _ => format!("{name} has been created and may be activated"),
            };
            let mut props: Vec<String> = t["props"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}: {}", plain(v)))
                        .collect()
                })
                .unwrap_or_default();
            props.sort();
            Ok(format!("{head}\n\n{}", props.join("\n")))
        }
        BucketTypeAction::Create { name, props } => {
            let body = props.as_deref().unwrap_or(r#"{"props":{}}"#);
            let r = expect_shared(call(settings, "POST", &path(name), body)?, 201)
                .map_err(|e| CommandError(format!("Error creating bucket type {name}:\n{e}")))?;
            Ok(format!("{name} created{r}"))
        }
        BucketTypeAction::Activate { name } => {
            let r = call(settings, "POST", &format!("{}/activate", path(name)), "")?;
            if r.status == 404 {
                return fail(format!("{name} has not been created"));
            }
            let r = expect_shared(r, 204)?;
            Ok(format!("{name} has been activated{r}"))
        }
        BucketTypeAction::Update { name, props } => {
            let r = expect_shared(call(settings, "PUT", &path(name), props)?, 204)
                .map_err(|e| CommandError(format!("Error updating bucket type {name}:\n{e}")))?;
            Ok(format!("{name} updated{r}"))
        }
    }
}

/// `eddy admin repair [P|all] [--wait]`: starts repairing the marked
/// partition (or every marked one); with `--wait`, polls until none of
/// them is marked or being repaired any more.
fn repair(settings: &Settings, partition: &str, wait: bool) -> Result<String, CommandError> {
    let path = format!("/admin/repair?partition={}", encode(partition));
    let failed_before = repair_status(settings)?["failed_total"].as_u64();
    let started = json(expect(call(settings, "POST", &path, "")?, 202)?)?;
    let ids: Vec<u64> = started["started"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    if ids.is_empty() {
        return Ok("no partition needs repair".into());
    }
    let list = ids
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if !wait {
        return Ok(format!("repair started: partitions {list}"));
    }
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let s = repair_status(settings)?;
        let damaged: Vec<u64> = s["damaged"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        if !ids.iter().any(|p| damaged.contains(p)) {
            return Ok(format!("repaired: partitions {list}"));
        }
        if s["failed_total"].as_u64() > failed_before {
            return fail(format!(
                "repair of partitions {list} failed; see the node's log"
            ));
        }
    }
}

/// `eddy admin drop-bucket B [--type T]`.
fn drop_bucket(
    settings: &Settings,
    bucket_type: &str,
    bucket: &str,
) -> Result<String, CommandError> {
    let path = format!(
        "/admin/types/{}/buckets/{}",
        encode(bucket_type),
        encode(bucket)
    );
    let dropped = json(expect(call(settings, "DELETE", &path, "")?, 200)?)?;
    Ok(format!(
        "dropped bucket {bucket} of type {bucket_type} (generation {})",
        dropped["generation"]
    ))
}

fn repair_status(settings: &Settings) -> Result<Value, CommandError> {
    json(expect(call(settings, "GET", "/admin/repair", "")?, 200)?)
}

/// The response if it has `status`, else its message as the error.
fn expect(r: HttpResponse, status: u16) -> Result<HttpResponse, CommandError> {
    if r.status == status {
        return Ok(r);
    }
    fail(r.text().trim().to_string())
}

/// A bucket type change's answer: nothing to add if it has `status`
/// (every member has the change), a line naming the members that do
/// not if it is 202, else its message as the error.
fn expect_shared(r: HttpResponse, status: u16) -> Result<String, CommandError> {
    if r.status != 202 {
        return expect(r, status).map(|_| String::new());
    }
    let answer = json(r)?;
    if let Some(error) = answer["error"].as_str() {
        return Ok(format!(
            " on this node only; it could not be shared: {error}"
        ));
    }
    let missing: Vec<String> = answer["missing"]
        .as_array()
        .map(|names| names.iter().map(plain).collect())
        .unwrap_or_default();
    Ok(format!(
        "; not yet on {} (gossip brings it to them)",
        missing.join(", ")
    ))
}

fn json(r: HttpResponse) -> Result<Value, CommandError> {
    serde_json::from_slice(&r.body)
        .map_err(|e| CommandError(format!("bad JSON from the node: {e}")))
}

/// A JSON value as riak-admin would print it (strings without quotes).
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Percent-encodes a path segment.
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> HttpResponse {
        HttpResponse {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_bucket_type_change_names_the_members_without_it() {
        assert_eq!(expect_shared(answer(204, ""), 204).unwrap(), "");
        let partial = answer(202, r#"{"missing":["dev2@127.0.0.1","dev3@127.0.0.1"]}"#);
        assert_eq!(
            expect_shared(partial, 204).unwrap(),
            "; not yet on dev2@127.0.0.1, dev3@127.0.0.1 (gossip brings it to them)"
        );
        let unshared = answer(202, r#"{"missing":[],"error":"disk full"}"#);
        let said = expect_shared(unshared, 201).unwrap();
        assert!(said.contains("could not be shared: disk full"), "{said}");
        assert!(expect_shared(answer(400, "bad props"), 204).is_err());
    }
}
