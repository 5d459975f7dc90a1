//! A MapReduce job as Riak's clients send it (`POST /mapred`, PB 23): the
//! JSON `{"inputs": ..., "query": [phases], "timeout": ms}` read into a
//! [`MapRedJob`], or a [`MapRedError::BadJob`] saying what is wrong.
//!
//! Inputs take Riak's forms: a bucket name; `["type", "bucket"]`; a list
//! of `[bucket, key]`, `[bucket, key, keydata]` or
//! `[bucket, key, keydata, type]` (a bucket may itself be
//! `["type", "bucket"]`); `{"bucket": B, "key_filters": [...]}`; and a 2i
//! query `{"bucket": B, "index": F, "key": V}` or `..., "start": S, "end": E}`,
//! which may add Riak 3's `"return_terms": true` (each input then carries
//! its term as keydata, for the `reduce_index_*` functions) and
//! `"term_regex": R`.
//! Phases are `{"map": spec}`, `{"reduce": spec}` and `{"link": spec}`.
//! When no phase keeps its output, the last one does (as Riak does).
//!
//! Eddy adds one field: `"r"`, the read quorum for map and link inputs
//! (Riak reads one replica; seed 003 wanted more).
//!
//! Everything has a limit ([`LIMITS`]); a job over one is refused whole.

use std::time::Duration;

use eddy_model::BucketRef;
use serde_json::{Map, Value};

use crate::error::MapRedError;

/// The bounds every job is checked against.
pub struct Limits {
    pub phases: usize,
    pub listed_inputs: usize,
    pub source_bytes: usize,
    pub timeout: Duration,
}

pub const LIMITS: Limits = Limits {
    phases: 32,
    listed_inputs: 100_000,
    source_bytes: 64 * 1024,
    timeout: Duration::from_secs(3600),
};

/// Riak's default job timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Debug, PartialEq)]
pub struct MapRedJob {
    pub inputs: Inputs,
    pub phases: Vec<Phase>,
    pub timeout: Duration,
    /// The read quorum for objects given to map and link phases.
    pub r: u32,
}

/// One object named as a map input.
#[derive(Clone, Debug, PartialEq)]
pub struct BKey {
    pub bucket: BucketRef,
    pub key: Vec<u8>,
    pub keydata: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Inputs {
    Bucket(BucketRef),
    Keys(Vec<BKey>),
    KeyFilter { bucket: BucketRef, filter: Value },
    Index(IndexInput),
}

#[derive(Clone, Debug, PartialEq)]
pub struct IndexInput {
    pub bucket: BucketRef,
    pub field: Vec<u8>,
    pub start: Vec<u8>,
    pub end: Option<Vec<u8>>,
    /// Each input carries its term as keydata `{"term": T}`.
    pub return_terms: bool,
    /// Only terms this regular expression matches (keys for `$key`).
    pub term_regex: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Phase {
    Map(FnPhase),
    Reduce(FnPhase),
    Link(LinkPhase),
}

impl Phase {
    pub fn keep(&self) -> bool {
        match self {
            Phase::Map(p) | Phase::Reduce(p) => p.keep,
            Phase::Link(l) => l.keep,
        }
    }

    fn set_keep(&mut self) {
        match self {
            Phase::Map(p) | Phase::Reduce(p) => p.keep = true,
            Phase::Link(l) => l.keep = true,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct FnPhase {
    pub func: Func,
    pub arg: Value,
    pub keep: bool,
}

/// A phase's function.
#[derive(Clone, Debug, PartialEq)]
pub enum Func {
    /// A built-in of `riak_kv_mapreduce`, by name.
    Erlang { module: String, function: String },
    /// JavaScript source (`function (v, kd, arg) {...}`).
    JsSource(String),
    /// A named JavaScript function, such as `Riak.mapValuesJson`.
    JsNamed(String),
    /// JavaScript source stored as an object's value.
    JsStored { bucket: BucketRef, key: Vec<u8> },
}

/// `{"link": {"bucket": B, "tag": T}}`; `None` is Riak's `"_"` (any).
#[derive(Clone, Debug, PartialEq)]
pub struct LinkPhase {
    pub bucket: Option<Vec<u8>>,
    pub tag: Option<Vec<u8>>,
    pub keep: bool,
}

/// Reads a job from its JSON text.
pub fn parse_job(body: &[u8]) -> Result<MapRedJob, MapRedError> {
    let job: Value = serde_json::from_slice(body)
        .map_err(|e| MapRedError::bad(format!("Invalid job JSON: {e}")))?;
    let Value::Object(job) = job else {
        return Err(MapRedError::bad("The job must be a JSON object"));
    };
    let inputs = job
        .get("inputs")
        .ok_or_else(|| MapRedError::bad("The job has no \"inputs\""))
        .and_then(inputs)?;
    let phases = match job.get("query") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => phases(list)?,
        Some(_) => return Err(MapRedError::bad("\"query\" must be a list of phases")),
    };
    Ok(MapRedJob {
        inputs,
        phases,
        timeout: timeout(job.get("timeout"))?,
        r: quorum(job.get("r"))?,
    })
}

fn timeout(v: Option<&Value>) -> Result<Duration, MapRedError> {
    let ms = match v {
        None | Some(Value::Null) => return Ok(DEFAULT_TIMEOUT),
        Some(v) => v.as_u64().ok_or_else(|| {
            MapRedError::bad("\"timeout\" must be a whole number of milliseconds")
        })?,
    };
    Ok(Duration::from_millis(ms).min(LIMITS.timeout))
}

fn quorum(v: Option<&Value>) -> Result<u32, MapRedError> {
    match v {
        None | Some(Value::Null) => Ok(1),
        Some(v) => v
            .as_u64()
            .filter(|r| (1..=64).contains(r))
            .map(|r| r as u32)
            .ok_or_else(|| MapRedError::bad("\"r\" must be a whole number from 1 to 64")),
    }
}

fn inputs(v: &Value) -> Result<Inputs, MapRedError> {
    match v {
        Value::String(b) => Ok(Inputs::Bucket(BucketRef::default_type(b.as_bytes()))),
        Value::Array(list) if is_typed_bucket(list) => Ok(Inputs::Bucket(bucket(v)?)),
        Value::Array(list) => {
            if list.len() > LIMITS.listed_inputs {
                return Err(MapRedError::bad(format!(
                    "Too many inputs: {} (at most {})",
                    list.len(),
                    LIMITS.listed_inputs
                )));
            }
            list.iter()
                .map(bkey)
                .collect::<Result<_, _>>()
                .map(Inputs::Keys)
        }
        Value::Object(m) => object_inputs(m),
        _ => Err(MapRedError::bad(
            "Invalid inputs: a bucket, a list of [bucket, key] or a query",
        )),
    }
}

fn is_typed_bucket(list: &[Value]) -> bool {
    list.len() == 2 && list.iter().all(Value::is_string)
}

fn object_inputs(m: &Map<String, Value>) -> Result<Inputs, MapRedError> {
    let b = m
        .get("bucket")
        .ok_or_else(|| MapRedError::bad("Query inputs need a \"bucket\""))
        .and_then(bucket)?;
    if m.contains_key("query") {
        return Err(MapRedError::bad("Search inputs are not served"));
    }
    if let Some(filter) = m.get("key_filters") {
        return Ok(Inputs::KeyFilter {
            bucket: b,
            filter: filter.clone(),
        });
    }
    let Some(field) = m.get("index") else {
        return Ok(Inputs::Bucket(b));
    };
    let field = text(field, "index")?.into_bytes();
    let (start, end) = match (m.get("key"), m.get("start"), m.get("end")) {
        (Some(k), None, None) => (index_term(k)?, None),
        (None, Some(s), Some(e)) => (index_term(s)?, Some(index_term(e)?)),
        _ => {
            return Err(MapRedError::bad(
                "An index input needs \"key\", or \"start\" and \"end\"",
            ));
        }
    };
    let return_terms = match m.get("return_terms") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(MapRedError::bad("\"return_terms\" must be true or false")),
    };
    let term_regex = match m.get("term_regex") {
        None | Some(Value::Null) => None,
        Some(v) => Some(text(v, "term_regex")?),
    };
    Ok(Inputs::Index(IndexInput {
        bucket: b,
        field,
        start,
        end,
        return_terms,
        term_regex,
    }))
}

/// An index term as JSON gives it: `_int` terms may come as numbers.
fn index_term(v: &Value) -> Result<Vec<u8>, MapRedError> {
    match v {
        Value::String(s) => Ok(s.clone().into_bytes()),
        Value::Number(n) if n.is_i64() => Ok(n.to_string().into_bytes()),
        _ => Err(MapRedError::bad(format!("Invalid index term: {v}"))),
    }
}

/// `"bucket"` or `["type", "bucket"]`.
fn bucket(v: &Value) -> Result<BucketRef, MapRedError> {
    match v {
        Value::String(b) => Ok(BucketRef::default_type(b.as_bytes())),
        Value::Array(l) if is_typed_bucket(l) => Ok(BucketRef {
            bucket_type: text(&l[0], "bucket type")?,
            bucket: text(&l[1], "bucket")?.into_bytes(),
        }),
        _ => Err(MapRedError::bad(format!("Invalid bucket: {v}"))),
    }
}

/// One listed input: `[bucket, key(, keydata(, type))]`.
pub(crate) fn bkey(v: &Value) -> Result<BKey, MapRedError> {
    let bad = || MapRedError::bad(format!("Invalid input: {v}"));
    let Value::Array(l) = v else {
        return Err(bad());
    };
    if !(2..=4).contains(&l.len()) {
        return Err(bad());
    }
    let mut b = bucket(&l[0]).map_err(|_| bad())?;
    let key = l[1].as_str().ok_or_else(bad)?.as_bytes().to_vec();
    if let Some(t) = l.get(3).filter(|t| !t.is_null()) {
        b.bucket_type = t.as_str().ok_or_else(bad)?.to_owned();
    }
    Ok(BKey {
        bucket: b,
        key,
        keydata: l.get(2).cloned().unwrap_or(Value::Null),
    })
}

fn text(v: &Value, what: &str) -> Result<String, MapRedError> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| MapRedError::bad(format!("Invalid {what}: {v}")))
}

fn phases(list: &[Value]) -> Result<Vec<Phase>, MapRedError> {
    if list.len() > LIMITS.phases {
        return Err(MapRedError::bad(format!(
            "Too many phases: {} (at most {})",
            list.len(),
            LIMITS.phases
        )));
    }
    let mut out = list
        .iter()
        .enumerate()
        .map(|(i, p)| phase(p).map_err(|e| MapRedError::bad(format!("Phase {i}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    if !out.iter().any(Phase::keep)
        && let Some(last) = out.last_mut()
    {
        last.set_keep();
    }
    Ok(out)
}

/// Reads one phase (`{"map"|"reduce"|"link": spec}`), as a job's are read.
pub(crate) fn parse_phase(v: &Value) -> Result<Phase, MapRedError> {
    phase(v)
}

fn phase(v: &Value) -> Result<Phase, MapRedError> {
    let Some((kind, spec)) = v
        .as_object()
        .filter(|m| m.len() == 1)
        .and_then(|m| m.iter().next())
    else {
        return Err(MapRedError::bad(format!(
            "a phase is {{\"map\"|\"reduce\"|\"link\": spec}}, not {v}"
        )));
    };
    let Value::Object(spec) = spec else {
        return Err(MapRedError::bad(format!(
            "the {kind} spec must be an object"
        )));
    };
    let keep = match spec.get("keep") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(MapRedError::bad("\"keep\" must be true or false")),
    };
    match kind.as_str() {
        "map" | "reduce" => {
            let p = FnPhase {
                func: func(spec)?,
                arg: spec.get("arg").cloned().unwrap_or(Value::Null),
                keep,
            };
            Ok(if kind == "map" {
                Phase::Map(p)
            } else {
                Phase::Reduce(p)
            })
        }
        "link" => Ok(Phase::Link(LinkPhase {
            bucket: link_part(spec.get("bucket"))?,
            tag: link_part(spec.get("tag"))?,
            keep,
        })),
        other => Err(MapRedError::bad(format!("unknown phase kind \"{other}\""))),
    }
}

fn link_part(v: Option<&Value>) -> Result<Option<Vec<u8>>, MapRedError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "_" => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone().into_bytes())),
        Some(other) => Err(MapRedError::bad(format!("Invalid link spec part: {other}"))),
    }
}

fn func(spec: &Map<String, Value>) -> Result<Func, MapRedError> {
    let language = spec
        .get("language")
        .and_then(Value::as_str)
        .unwrap_or("javascript");
    let field = |name: &str| spec.get(name).and_then(Value::as_str);
    match language {
        "javascript" => {
            if let Some(src) = field("source") {
                check_source(src)?;
                Ok(Func::JsSource(src.to_owned()))
            } else if let Some(name) = field("name") {
                check_source(name)?;
                Ok(Func::JsNamed(name.to_owned()))
            } else if let (Some(b), Some(k)) = (spec.get("bucket"), field("key")) {
                Ok(Func::JsStored {
                    bucket: bucket(b)?,
                    key: k.as_bytes().to_vec(),
                })
            } else {
                Err(MapRedError::bad(
                    "a javascript phase needs \"source\", \"name\" or \"bucket\" and \"key\"",
                ))
            }
        }
        "erlang" => match (field("module"), field("function"), field("source")) {
            (Some(m), Some(f), _) => Ok(Func::Erlang {
                module: m.to_owned(),
                function: f.to_owned(),
            }),
            (_, _, Some(_)) => Err(MapRedError::bad(
                "worker_startup_failed: Erlang source functions are not allowed; \
                 use a built-in or JavaScript",
            )),
            _ => Err(MapRedError::bad(
                "an erlang phase needs \"module\" and \"function\"",
            )),
        },
        other => Err(MapRedError::bad(format!("unknown language \"{other}\""))),
    }
}

fn check_source(src: &str) -> Result<(), MapRedError> {
    match src.len() > LIMITS.source_bytes {
        true => Err(MapRedError::bad(format!(
            "function source of {} bytes (at most {})",
            src.len(),
            LIMITS.source_bytes
        ))),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<MapRedJob, MapRedError> {
        parse_job(s.as_bytes())
    }

    #[test]
    fn reads_riaks_input_forms() {
        let j = parse(r#"{"inputs":"b","query":[]}"#).unwrap();
        assert_eq!(j.inputs, Inputs::Bucket(BucketRef::default_type("b")));
        let j = parse(r#"{"inputs":["t","b"],"query":[]}"#).unwrap();
        let typed = BucketRef {
            bucket_type: "t".into(),
            bucket: b"b".to_vec(),
        };
        assert_eq!(j.inputs, Inputs::Bucket(typed.clone()));
        let j = parse(r#"{"inputs":[["b","k"],["b","k2",5,"t"],[["t","b"],"k3",null]]}"#).unwrap();
        let Inputs::Keys(keys) = j.inputs else {
            panic!()
        };
        assert_eq!(keys.len(), 3);
        assert_eq!(keys[1].bucket, typed);
        assert_eq!(keys[1].keydata, serde_json::json!(5));
        assert_eq!(keys[2].bucket, typed);
        let j = parse(r#"{"inputs":{"bucket":"b","index":"n_int","start":1,"end":"9"}}"#).unwrap();
        let Inputs::Index(ix) = j.inputs else {
            panic!()
        };
        assert_eq!((ix.start, ix.end), (b"1".to_vec(), Some(b"9".to_vec())));
        assert!(!ix.return_terms && ix.term_regex.is_none());
        let j = parse(
            r#"{"inputs":{"bucket":"b","index":"t_bin","key":"a","return_terms":true,"term_regex":"^a"}}"#,
        )
        .unwrap();
        let Inputs::Index(ix) = j.inputs else {
            panic!()
        };
        assert!(ix.return_terms);
        assert_eq!(ix.term_regex.as_deref(), Some("^a"));
        let j = parse(r#"{"inputs":{"bucket":"b","key_filters":[["eq","a"]]}}"#).unwrap();
        assert!(matches!(j.inputs, Inputs::KeyFilter { .. }));
    }

    #[test]
    fn the_last_phase_keeps_when_none_does() {
        let j = parse(
            r#"{"inputs":"b","query":[{"map":{"language":"javascript","name":"Riak.mapValues"}},
                {"reduce":{"language":"erlang","module":"riak_kv_mapreduce","function":"reduce_sum"}}]}"#,
        )
        .unwrap();
        assert!(!j.phases[0].keep() && j.phases[1].keep());
        assert_eq!(j.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn malformed_jobs_say_what_is_wrong() {
        let cases = [
            ("{", "Invalid job JSON"),
            ("[]", "JSON object"),
            (r#"{"query":[]}"#, "no \"inputs\""),
            (r#"{"inputs":5}"#, "Invalid inputs"),
            (r#"{"inputs":[["b"]]}"#, "Invalid input"),
            (r#"{"inputs":"b","query":[{"map":{}}]}"#, "needs \"source\""),
            (
                r#"{"inputs":"b","query":[{"fold":{}}]}"#,
                "unknown phase kind",
            ),
            (
                r#"{"inputs":"b","query":[{"map":{"language":"erlang","source":"fun"}}]}"#,
                "worker_startup_failed",
            ),
            (
                r#"{"inputs":"b","query":[{"map":{"language":"cobol"}}]}"#,
                "unknown language",
            ),
            (r#"{"inputs":"b","timeout":"soon"}"#, "timeout"),
            (r#"{"inputs":"b","r":0}"#, "\"r\""),
            (
                r#"{"inputs":{"bucket":"b","index":"x_bin"}}"#,
                "needs \"key\"",
            ),
            (
                r#"{"inputs":{"bucket":"b","index":"x","query":"q"}}"#,
                "Search",
            ),
            (
                r#"{"inputs":{"bucket":"b","index":"x_bin","key":"a","return_terms":1}}"#,
                "return_terms",
            ),
        ];
        for (job, want) in cases {
            let err = parse(job).unwrap_err().to_string();
            assert!(err.contains(want), "{job}: {err}");
        }
    }

    #[test]
    fn limits_are_enforced() {
        let phase = r#"{"map":{"name":"Riak.mapValues"}}"#;
        let many = vec![phase; LIMITS.phases + 1].join(",");
        let err = parse(&format!(r#"{{"inputs":"b","query":[{many}]}}"#)).unwrap_err();
        assert!(err.to_string().contains("Too many phases"));
        let big = "x".repeat(LIMITS.source_bytes + 1);
        let err = parse(&format!(
            r#"{{"inputs":"b","query":[{{"map":{{"source":"{big}"}}}}]}}"#
        ))
        .unwrap_err();
        assert!(err.to_string().contains("bytes"));
        let keys = vec![r#"["b","k"]"#; LIMITS.listed_inputs + 1].join(",");
        let err = parse(&format!(r#"{{"inputs":[{keys}]}}"#)).unwrap_err();
        assert!(err.to_string().contains("Too many inputs"));
        let j = parse(r#"{"inputs":"b","timeout":999999999999}"#).unwrap();
        assert_eq!(j.timeout, LIMITS.timeout);
    }
}
