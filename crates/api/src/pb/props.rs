//! `RpbBucketProps` ↔ bucket properties: one function each way.
//!
//! Incoming props become a [`PropsPatch`] holding only the fields the
//! client set ([`to_patch`]); the registry validates it whole. Outgoing
//! props are the effective [`BucketProps`] ([`to_pb`]): typed fields
//! directly, and the properties Eddy keeps without interpreting
//! (`search_index`, `repl`, …) from its `extra`, so they round-trip.
//! Quorum fields use Riak's special `uint32` values.

use eddy_model::Quorum;
use eddy_model::props::{BucketProps, ModFun, PropsError, PropsPatch};
use eddy_model::types::RegistryError;
use eddy_wire::proto::rpb_bucket_props::{RpbReplMode, SyncOnWrite};
use eddy_wire::proto::{RpbBucketProps, RpbCommitHook, RpbModFun};
use serde_json::{Map, Value, json};

use super::error::PbError;
use super::request::{quorum, quorum_value};

const BOOLS: &[&str] = &[
    "allow_mult",
    "last_write_wins",
    "basic_quorum",
    "notfound_ok",
    "search",
    "consistent",
    "write_once",
    "aae_tree_exclude",
];
const COUNTS: &[&str] = &[
    "n_val",
    "old_vclock",
    "young_vclock",
    "big_vclock",
    "small_vclock",
    "hll_precision",
    "node_confirms",
];
const QUORUMS: &[&str] = &["pr", "r", "w", "pw", "dw", "rw"];
const TEXTS: &[&str] = &["backend", "search_index", "datatype"];

/// The fields a client set, as a patch.
pub fn to_patch(p: RpbBucketProps) -> Result<PropsPatch, PbError> {
    let mut m = Map::new();
    for (name, value) in bools(&p) {
        insert(&mut m, name, value.map(Value::from));
    }
    for (name, value) in counts(&p) {
        insert(&mut m, name, value.map(Value::from));
    }
    for (name, value) in quorums(&p) {
        insert(&mut m, name, quorum(value).map(quorum_json));
    }
    for (name, value) in texts(&p) {
        insert(&mut m, name, value.map(|v| utf8(name, v)).transpose()?);
    }
    hooks(&mut m, "precommit", p.precommit, p.has_precommit)?;
    hooks(&mut m, "postcommit", p.postcommit, p.has_postcommit)?;
    insert(
        &mut m,
        "chash_keyfun",
        modfun("chash_keyfun", p.chash_keyfun)?,
    );
    insert(&mut m, "linkfun", modfun("linkfun", p.linkfun)?);
    insert(&mut m, "repl", p.repl.map(repl_json).transpose()?);
    insert(
        &mut m,
        "sync_on_write",
        p.sync_on_write.map(sync_json).transpose()?,
    );
    Ok(m)
}

/// Effective props as `RpbBucketProps`: each property Eddy interprets
/// from its typed field, the ones it keeps uninterpreted (`search`,
/// `search_index`, `repl`, `aae_tree_exclude`) from `extra`.
pub fn to_pb(props: &BucketProps) -> RpbBucketProps {
    let extra_flag = |name: &str| props.extra.get(name).and_then(Value::as_bool);
    let q = |q: Quorum| Some(quorum_value(q));
    RpbBucketProps {
        n_val: Some(props.n_val),
        allow_mult: Some(props.allow_mult),
        last_write_wins: Some(props.last_write_wins),
        // Riak flags hook lists whenever the property exists, even empty.
        has_precommit: Some(true),
        has_postcommit: Some(true),
        precommit: hooks_from_json(&props.precommit),
        postcommit: hooks_from_json(&props.postcommit),
        chash_keyfun: Some(modfun_to_pb(&props.chash_keyfun)),
        linkfun: Some(modfun_to_pb(&props.linkfun)),
        old_vclock: Some(props.old_vclock),
        young_vclock: Some(props.young_vclock),
        big_vclock: Some(props.big_vclock),
        small_vclock: Some(props.small_vclock),
        pr: q(props.pr),
        r: q(props.r),
        w: q(props.w),
        pw: q(props.pw),
        dw: q(props.dw),
        rw: q(props.rw),
        basic_quorum: Some(props.basic_quorum),
        notfound_ok: Some(props.notfound_ok),
        backend: props.backend.as_deref().map(bytes),
        search: extra_flag("search"),
        repl: props
            .extra
            .get("repl")
            .and_then(repl_from_json)
            .map(i32::from),
        search_index: props
            .extra
            .get("search_index")
            .and_then(Value::as_str)
            .map(bytes),
        datatype: props.datatype.as_deref().map(bytes),
        consistent: props.consistent.then_some(true),
        write_once: Some(props.write_once),
        hll_precision: props.hll_precision,
        node_confirms: match props.node_confirms {
            Quorum::Count(n) => Some(n),
            _ => None,
        },
        sync_on_write: Some(sync_to_pb(props.sync_on_write)),
        aae_tree_exclude: extra_flag("aae_tree_exclude"),
    }
}

fn bools(p: &RpbBucketProps) -> [(&'static str, Option<bool>); 8] {
    let values = [
        p.allow_mult,
        p.last_write_wins,
        p.basic_quorum,
        p.notfound_ok,
        p.search,
        p.consistent,
        p.write_once,
        p.aae_tree_exclude,
    ];
    std::array::from_fn(|i| (BOOLS[i], values[i]))
}

fn counts(p: &RpbBucketProps) -> [(&'static str, Option<u32>); 7] {
    let values = [
        p.n_val,
        p.old_vclock,
        p.young_vclock,
        p.big_vclock,
        p.small_vclock,
        p.hll_precision,
        p.node_confirms,
    ];
    std::array::from_fn(|i| (COUNTS[i], values[i]))
}

fn quorums(p: &RpbBucketProps) -> [(&'static str, Option<u32>); 6] {
    let values = [p.pr, p.r, p.w, p.pw, p.dw, p.rw];
    std::array::from_fn(|i| (QUORUMS[i], values[i]))
}

fn texts(p: &RpbBucketProps) -> [(&'static str, Option<Vec<u8>>); 3] {
    let values = [
        p.backend.clone(),
        p.search_index.clone(),
        p.datatype.clone(),
    ];
    let mut values = values.into_iter();
    std::array::from_fn(|i| (TEXTS[i], values.next().flatten()))
}

fn insert(m: &mut Map<String, Value>, name: &str, value: Option<Value>) {
    if let Some(v) = value {
        m.insert(name.to_string(), v);
    }
}

fn quorum_json(q: Quorum) -> Value {
    match q {
        Quorum::Count(n) => Value::from(n),
        word => Value::from(word.to_string()),
    }
}

fn bad(field: &str, reason: &str) -> PbError {
    let e = PropsError(vec![(field.to_string(), reason.to_string())]);
    PbError::Bucket(RegistryError::Props(e))
}

fn utf8(field: &str, v: Vec<u8>) -> Result<Value, PbError> {
    String::from_utf8(v)
        .map(Value::from)
        .map_err(|_| bad(field, "not valid UTF-8"))
}

fn bytes(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Hooks are set when given, or cleared when `has_*` is true with none.
/// Hooks naming neither a module/function nor a name are dropped, as Riak
/// drops them.
fn hooks(
    m: &mut Map<String, Value>,
    field: &str,
    hooks: Vec<RpbCommitHook>,
    has: Option<bool>,
) -> Result<(), PbError> {
    if hooks.is_empty() && has != Some(true) {
        return Ok(());
    }
    let list = hooks
        .into_iter()
        .filter(|h| h.modfun.is_some() || h.name.is_some())
        .map(|h| hook_json(field, h))
        .collect::<Result<Vec<_>, _>>()?;
    m.insert(field.to_string(), Value::Array(list));
    Ok(())
}

fn hook_json(field: &str, h: RpbCommitHook) -> Result<Value, PbError> {
    match (h.modfun, h.name) {
        (None, Some(name)) => Ok(json!({ "name": utf8(field, name)? })),
        (mf, _) => modfun(field, mf).map(|v| v.unwrap_or(Value::Null)),
    }
}

fn modfun(field: &str, mf: Option<RpbModFun>) -> Result<Option<Value>, PbError> {
    let Some(mf) = mf else { return Ok(None) };
    let module = utf8(field, mf.module)?;
    let function = utf8(field, mf.function)?;
    Ok(Some(json!({ "mod": module, "fun": function })))
}

fn modfun_to_pb(mf: &ModFun) -> RpbModFun {
    RpbModFun {
        module: bytes(&mf.module),
        function: bytes(&mf.function),
    }
}

fn modfun_from_json(v: &Value) -> Option<RpbModFun> {
    Some(RpbModFun {
        module: bytes(v.get("mod")?.as_str()?),
        function: bytes(v.get("fun")?.as_str()?),
    })
}

/// Hooks as Riak's JSON names them (`{"mod","fun"}` or `{"name"}`).
fn hooks_from_json(list: &[Value]) -> Vec<RpbCommitHook> {
    list.iter()
        .map(|h| RpbCommitHook {
            modfun: modfun_from_json(h),
            name: h.get("name").and_then(Value::as_str).map(bytes),
        })
        .collect()
}

fn repl_json(mode: i32) -> Result<Value, PbError> {
    match RpbReplMode::try_from(mode) {
        Ok(RpbReplMode::False) => Ok(Value::Bool(false)),
        Ok(RpbReplMode::True) => Ok(Value::Bool(true)),
        Ok(RpbReplMode::Realtime) => Ok(Value::from("realtime")),
        Ok(RpbReplMode::Fullsync) => Ok(Value::from("fullsync")),
        Err(_) => Err(bad("repl", "unknown replication mode")),
    }
}

fn repl_from_json(v: &Value) -> Option<RpbReplMode> {
    match v {
        Value::Bool(false) => Some(RpbReplMode::False),
        Value::Bool(true) => Some(RpbReplMode::True),
        Value::String(s) if s == "realtime" => Some(RpbReplMode::Realtime),
        Value::String(s) if s == "fullsync" => Some(RpbReplMode::Fullsync),
        _ => None,
    }
}

fn sync_json(mode: i32) -> Result<Value, PbError> {
    match SyncOnWrite::try_from(mode) {
        Ok(SyncOnWrite::Backend) => Ok(Value::from("backend")),
        Ok(SyncOnWrite::One) => Ok(Value::from("one")),
        Ok(SyncOnWrite::All) => Ok(Value::from("all")),
        Err(_) => Err(bad("sync_on_write", "unknown sync mode")),
    }
}

fn sync_to_pb(mode: eddy_model::props::SyncOnWrite) -> i32 {
    use eddy_model::props::SyncOnWrite as Mode;
    let mode = match mode {
        Mode::Backend => SyncOnWrite::Backend,
        Mode::One => SyncOnWrite::One,
        Mode::All => SyncOnWrite::All,
    };
    mode.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_model::props::BucketProps;
    use eddy_wire::quorum as special;

    #[test]
    fn patches_hold_only_what_was_set() {
        let p = RpbBucketProps {
            n_val: Some(2),
            allow_mult: Some(true),
            r: Some(special::ONE),
            w: Some(1),
            datatype: Some(b"set".to_vec()),
            has_precommit: Some(true),
            repl: Some(RpbReplMode::Realtime.into()),
            ..RpbBucketProps::default()
        };
        let patch = to_patch(p).unwrap();
        let expected = json!({
            "n_val": 2, "allow_mult": true, "r": "one", "w": 1,
            "datatype": "set", "precommit": [], "repl": "realtime"
        });
        assert_eq!(Value::Object(patch), expected);
        let bad = RpbBucketProps {
            backend: Some(vec![0xff]),
            ..RpbBucketProps::default()
        };
        assert!(to_patch(bad).is_err());
    }

    #[test]
    fn effective_props_roundtrip_through_pb() {
        let extra = [("search_index", json!("idx")), ("repl", json!("realtime"))];
        let props = BucketProps {
            precommit: vec![json!({"mod": "m", "fun": "f"}), json!({"name": "js"})],
            node_confirms: Quorum::Count(2),
            extra: extra.map(|(k, v)| (k.to_string(), v)).into(),
            ..BucketProps::default()
        };
        let pb = to_pb(&props);
        assert_eq!(pb.n_val, Some(3));
        assert_eq!(pb.r, Some(special::QUORUM));
        assert_eq!(pb.pr, Some(0));
        assert_eq!(pb.has_precommit, Some(true));
        assert_eq!(pb.search_index.as_deref(), Some(&b"idx"[..]));
        assert_eq!(pb.repl, Some(RpbReplMode::Realtime.into()));
        assert_eq!(
            pb.consistent, None,
            "false is left out, as Riak's JSON does"
        );
        let patch = to_patch(pb).unwrap();
        assert_eq!(props.patched(&patch).unwrap(), props);
    }
}
