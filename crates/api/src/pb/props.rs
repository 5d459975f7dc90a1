//! `RpbBucketProps` ↔ bucket properties: one function each way.
//!
//! Incoming props become a typed [`PropsPatch`] holding only the fields
//! the client set ([`patch_from_pb`], field by typed field); the registry
//! validates it whole. Outgoing props are the effective [`BucketProps`]
//! ([`to_pb`]). Either way, the properties Eddy keeps without interpreting
//! (`search`, `search_index`, `repl`, `aae_tree_exclude`) live in the
//! props' `extra` under Riak's JSON names, so they round-trip.
//! Quorum fields use Riak's special `uint32` values.

use std::collections::BTreeMap;

use eddy_model::Quorum;
use eddy_model::props::{BucketProps, ModFun, PropsError, PropsPatch};
use eddy_model::types::RegistryError;
use eddy_wire::proto::rpb_bucket_props::{RpbReplMode, SyncOnWrite};
use eddy_wire::proto::{RpbBucketProps, RpbCommitHook, RpbModFun};
use serde_json::{Value, json};

use super::error::PbError;
use super::request::{quorum, quorum_value};

/// The fields a client set, as a patch.
pub fn patch_from_pb(p: &RpbBucketProps) -> Result<PropsPatch, PbError> {
    Ok(PropsPatch {
        n_val: p.n_val,
        allow_mult: p.allow_mult,
        last_write_wins: p.last_write_wins,
        precommit: hooks("precommit", &p.precommit, p.has_precommit)?,
        postcommit: hooks("postcommit", &p.postcommit, p.has_postcommit)?,
        chash_keyfun: given_modfun("chash_keyfun", p.chash_keyfun.as_ref())?,
        linkfun: given_modfun("linkfun", p.linkfun.as_ref())?,
        old_vclock: p.old_vclock,
        young_vclock: p.young_vclock,
        big_vclock: p.big_vclock,
        small_vclock: p.small_vclock,
        pr: quorum(p.pr),
        r: quorum(p.r),
        w: quorum(p.w),
        pw: quorum(p.pw),
        dw: quorum(p.dw),
        rw: quorum(p.rw),
        basic_quorum: p.basic_quorum,
        notfound_ok: p.notfound_ok,
        // Not a PB field.
        dvv_enabled: None,
        write_once: p.write_once,
        node_confirms: p.node_confirms.map(Quorum::Count),
        sync_on_write: p.sync_on_write.map(sync_from_pb).transpose()?,
        backend: text("backend", p.backend.as_deref())?.map(Some),
        datatype: text("datatype", p.datatype.as_deref())?.map(Some),
        hll_precision: p.hll_precision.map(Some),
        consistent: p.consistent,
        // Not a PB field: set over HTTP or with the CLI.
        ttl: None,
        generation: None,
        extra: uninterpreted(p)?,
    })
}

/// The PB fields Eddy keeps without interpreting, in Riak's JSON names.
fn uninterpreted(p: &RpbBucketProps) -> Result<BTreeMap<String, Value>, PbError> {
    let fields = [
        ("search", p.search.map(Value::from)),
        ("aae_tree_exclude", p.aae_tree_exclude.map(Value::from)),
        (
            "search_index",
            text("search_index", p.search_index.as_deref())?.map(Value::from),
        ),
        ("repl", p.repl.map(repl_json).transpose()?),
    ];
    let set = fields
        .into_iter()
        .filter_map(|(name, v)| Some((name.to_string(), v?)));
    Ok(set.collect())
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

fn bad(field: &str, reason: &str) -> PbError {
    let e = PropsError(vec![(field.to_string(), reason.to_string())]);
    PbError::Bucket(RegistryError::Props(e))
}

fn utf8(field: &str, v: &[u8]) -> Result<String, PbError> {
    String::from_utf8(v.to_vec()).map_err(|_| bad(field, "not valid UTF-8"))
}

fn text(field: &str, v: Option<&[u8]>) -> Result<Option<String>, PbError> {
    v.map(|v| utf8(field, v)).transpose()
}

fn bytes(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Hooks are set when given, or cleared when `has_*` is true with none.
/// Hooks naming neither a module/function nor a name are dropped, as Riak
/// drops them.
fn hooks(
    field: &str,
    hooks: &[RpbCommitHook],
    has: Option<bool>,
) -> Result<Option<Vec<Value>>, PbError> {
    if hooks.is_empty() && has != Some(true) {
        return Ok(None);
    }
    let list = hooks
        .iter()
        .filter_map(|h| hook_json(field, h).transpose())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(list))
}

/// A hook as Riak's JSON names it: `{"mod","fun"}` or `{"name"}`; `None`
/// for a hook naming neither.
fn hook_json(field: &str, h: &RpbCommitHook) -> Result<Option<Value>, PbError> {
    match (&h.modfun, &h.name) {
        (Some(mf), _) => {
            let mf = modfun(field, mf)?;
            Ok(Some(json!({ "mod": mf.module, "fun": mf.function })))
        }
        (None, Some(name)) => Ok(Some(json!({ "name": utf8(field, name)? }))),
        (None, None) => Ok(None),
    }
}

fn modfun(field: &str, mf: &RpbModFun) -> Result<ModFun, PbError> {
    Ok(ModFun {
        module: utf8(field, &mf.module)?,
        function: utf8(field, &mf.function)?,
    })
}

fn given_modfun(field: &str, mf: Option<&RpbModFun>) -> Result<Option<ModFun>, PbError> {
    mf.map(|mf| modfun(field, mf)).transpose()
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

fn sync_from_pb(mode: i32) -> Result<eddy_model::props::SyncOnWrite, PbError> {
    use eddy_model::props::SyncOnWrite as Mode;
    match SyncOnWrite::try_from(mode) {
        Ok(SyncOnWrite::Backend) => Ok(Mode::Backend),
        Ok(SyncOnWrite::One) => Ok(Mode::One),
        Ok(SyncOnWrite::All) => Ok(Mode::All),
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
        let patch = patch_from_pb(&p).unwrap();
        let expected = json!({
            "n_val": 2, "allow_mult": true, "r": "one", "w": 1,
            "datatype": "set", "precommit": [], "repl": "realtime"
        });
        assert_eq!(Value::Object(patch.to_json()), expected);
        let bad = RpbBucketProps {
            backend: Some(vec![0xff]),
            ..RpbBucketProps::default()
        };
        assert!(patch_from_pb(&bad).is_err());
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
        let patch = patch_from_pb(&pb).unwrap();
        assert_eq!(props.patched(&patch).unwrap(), props);
    }

    #[test]
    fn each_pb_field_reaches_its_typed_property() {
        let hook = |name: &[u8]| RpbCommitHook {
            modfun: None,
            name: Some(name.to_vec()),
        };
        let mf = RpbModFun {
            module: b"m".to_vec(),
            function: b"f".to_vec(),
        };
        let p = RpbBucketProps {
            postcommit: vec![hook(b"js"), RpbCommitHook::default()],
            linkfun: Some(mf.clone()),
            node_confirms: Some(2),
            sync_on_write: Some(SyncOnWrite::All.into()),
            hll_precision: Some(12),
            backend: Some(b"memory".to_vec()),
            consistent: Some(false),
            write_once: Some(true),
            search: Some(true),
            aae_tree_exclude: Some(false),
            pw: Some(special::ALL),
            dw: Some(special::DEFAULT),
            ..RpbBucketProps::default()
        };
        let patch = patch_from_pb(&p).unwrap();
        let expected = json!({
            "postcommit": [{"name": "js"}], "linkfun": {"mod": "m", "fun": "f"},
            "node_confirms": 2, "sync_on_write": "all", "hll_precision": 12,
            "backend": "memory", "consistent": false, "write_once": true,
            "search": true, "aae_tree_exclude": false, "pw": "all", "dw": "default"
        });
        assert_eq!(Value::Object(patch.to_json()), expected);
        assert_eq!(patch.node_confirms, Some(Quorum::Count(2)));
        assert_eq!(patch.precommit, None, "not sent, not set");
    }

    #[test]
    fn undecodable_fields_are_refused_by_name() {
        let named = |p: RpbBucketProps| match patch_from_pb(&p) {
            Err(PbError::Bucket(RegistryError::Props(e))) => e.0[0].clone(),
            other => panic!("{other:?}"),
        };
        let bad_name = RpbCommitHook {
            modfun: None,
            name: Some(vec![0xff]),
        };
        let cases = [
            (
                RpbBucketProps {
                    precommit: vec![bad_name],
                    ..Default::default()
                },
                "precommit",
                "not valid UTF-8",
            ),
            (
                RpbBucketProps {
                    datatype: Some(vec![0xc0]),
                    ..Default::default()
                },
                "datatype",
                "not valid UTF-8",
            ),
            (
                RpbBucketProps {
                    repl: Some(9),
                    ..Default::default()
                },
                "repl",
                "unknown replication mode",
            ),
            (
                RpbBucketProps {
                    sync_on_write: Some(9),
                    ..Default::default()
                },
                "sync_on_write",
                "unknown sync mode",
            ),
        ];
        for (p, field, reason) in cases {
            assert_eq!(named(p), (field.to_string(), reason.to_string()));
        }
    }
}
