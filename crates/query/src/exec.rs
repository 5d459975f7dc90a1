//! Running a job: resolve its inputs to objects' names, then run its
//! phases in order, each phase's output the next one's input, and keep
//! the outputs of the phases marked `keep`.
//!
//! - A **map** phase reads each named object (through the [`Source`],
//!   with the job's read quorum) and calls its function once per input,
//!   with the object or, for a missing one, the not-found marker.
//!   JavaScript calls go to the pool in batches, several at once.
//! - A **reduce** phase calls its function over its inputs in batches of
//!   [`REDUCE_BATCH`] (or the `reduce_phase_batch_size` an index
//!   function's arg gives), each call given the previous call's output
//!   followed by the next batch (Riak's re-reduce), and at least once (so
//!   a reduce over nothing still answers, e.g. `[0]` for a sum).
//! - A **link** phase reads each object and passes on `[bucket, key, tag]`
//!   for each of its links matching the phase's bucket and tag.
//! - A job with no phases answers its inputs as `[bucket, key]` lists.
//!
//! The job's deadline is checked between batches and bounds every
//! JavaScript call; past it the job fails with [`MapRedError::Timeout`].

use std::time::Instant;

use eddy_metrics::Histogram;
use eddy_model::BucketRef;
use eddy_model::index::term::{self, FieldKind};
use eddy_object::RiakObject;
use serde_json::Value;

use crate::erlang::{self, MapFn, ReduceFn};
use crate::error::MapRedError;
use crate::index_reduce::{Reducer, item};
use crate::job::{BKey, FnPhase, Func, IndexInput, Inputs, LinkPhase, MapRedJob, Phase, bkey};
use crate::js::{JsBatch, JsCall, JsPool};
use crate::object_view::{bkey_json, first_value, not_found_json, object_json, text};

/// Inputs a reduce call takes at a time (after the previous output).
pub const REDUCE_BATCH: usize = 1000;
/// Objects read at a time for a map or link phase.
const FETCH_BATCH: usize = 1000;
/// JavaScript map calls sent to the pool as one batch.
const JS_BATCH: usize = 250;
/// The most keys a bucket or query input may name.
pub const INPUT_KEYS_MAX: usize = 10_000_000;

/// One 2i result: `(term, key)`.
pub type IndexEntry = (Vec<u8>, Vec<u8>);

/// Where a job's inputs and objects come from.
pub trait Source: Sync {
    /// Every live key of a bucket.
    fn keys(&self, bucket: &BucketRef) -> Result<Vec<Vec<u8>>, MapRedError>;
    /// The live keys a key filter (Riak's JSON form) passes.
    fn filtered_keys(
        &self,
        bucket: &BucketRef,
        filter: &Value,
        deadline: Instant,
    ) -> Result<Vec<Vec<u8>>, MapRedError>;
    /// The `(term, key)` entries a 2i query matches, in the query's order;
    /// the term (as a 2i query shows it) is empty unless
    /// `input.return_terms` asks for it and the field has terms.
    fn index_entries(&self, input: &IndexInput) -> Result<Vec<IndexEntry>, MapRedError>;
    /// The objects named, in order; `None` for a missing one.
    fn fetch(
        &self,
        inputs: &[BKey],
        r: u32,
        deadline: Instant,
    ) -> Result<Vec<Option<RiakObject>>, MapRedError>;
    /// The outputs of map phase 0 (`phase`: [`vnode_phase_json`]'s text)
    /// run at the vnodes over `inputs`' objects.
    fn map_at_vnodes(
        &self,
        inputs: VnodeInputs<'_>,
        phase: &[u8],
        deadline: Instant,
    ) -> Result<Vec<Value>, MapRedError>;
}

/// The objects map phase 0 runs over at the vnodes.
#[derive(Clone, Copy, Debug)]
pub enum VnodeInputs<'a> {
    /// The live objects of `bucket` whose keys `filter` (Riak's key-filter
    /// JSON) passes, each once.
    Bucket {
        bucket: &'a BucketRef,
        filter: Option<&'a Value>,
    },
    /// The live objects a 2i query (without terms) names, one input per
    /// matching entry, as the query lists them.
    Index(&'a IndexInput),
}

/// The kept phases' outputs, in phase order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MapRedOutput {
    pub phases: Vec<(usize, Vec<Value>)>,
}

/// Runs jobs; JavaScript phases need a pool.
#[derive(Clone, Debug)]
pub struct Executor {
    js: Option<JsPool>,
}

/// A phase with its function resolved.
enum Ready {
    ErlangMap(MapFn, Value),
    ErlangReduce(ReduceFn),
    IndexReduce(Reducer),
    JsMap(String, Value),
    JsReduce(String, Value),
    Link(LinkPhase),
}

impl Executor {
    pub fn new(js: Option<JsPool>) -> Executor {
        Executor { js }
    }

    /// Runs `job` to the end (blocking: call from a blocking thread),
    /// recording the time of each phase that ends in `phase_time` (a map
    /// phase 0 run at the vnodes included).
    pub fn run(
        &self,
        job: &MapRedJob,
        source: &dyn Source,
        phase_time: &Histogram,
    ) -> Result<MapRedOutput, MapRedError> {
        let deadline = Instant::now() + job.timeout;
        let ready = job
            .phases
            .iter()
            .enumerate()
            .map(|(i, p)| self.resolve(i, p, source, deadline))
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = MapRedOutput::default();
        let mapped = match at_vnodes(job, ready.first(), deadline) {
            Some((inputs, phase)) => {
                let started = Instant::now();
                match source.map_at_vnodes(inputs, &phase, deadline) {
                    Err(e) if output_too_large(&e) => None,
                    other => {
                        let values = other?;
                        phase_time.record_since(started);
                        Some(values)
                    }
                }
            }
            None => None,
        };
        let (mut items, first) = match mapped {
            Some(values) => {
                if job.phases[0].keep() {
                    out.phases.push((0, values.clone()));
                }
                (Items::Values(values), 1)
            }
            None => (Items::Keys(input_keys(&job.inputs, source, deadline)?), 0),
        };
        past(deadline)?;
        if ready.is_empty() {
            out.phases.push((0, items.into_values()));
            return Ok(out);
        }
        let phases = ready.iter().zip(&job.phases).enumerate().skip(first);
        for (i, (phase, spec)) in phases {
            let started = Instant::now();
            let values = match phase {
                Ready::ErlangReduce(_) | Ready::IndexReduce(_) | Ready::JsReduce(..) => {
                    self.reduce(i, phase, items.into_values(), deadline)?
                }
                _ => self.map_or_link(i, phase, items.into_keys(i)?, job.r, source, deadline)?,
            };
            phase_time.record_since(started);
            if spec.keep() {
                out.phases.push((i, values.clone()));
            }
            items = Items::Values(values);
        }
        Ok(out)
    }

    /// The phase's function, ready to run; an index function's arg is
    /// read here, and a bad one fails phase `index` before anything runs.
    fn resolve(
        &self,
        index: usize,
        phase: &Phase,
        source: &dyn Source,
        deadline: Instant,
    ) -> Result<Ready, MapRedError> {
        let (p, is_map) = match phase {
            Phase::Link(l) => return Ok(Ready::Link(l.clone())),
            Phase::Map(p) => (p, true),
            Phase::Reduce(p) => (p, false),
        };
        let FnPhase { func, arg, .. } = p;
        let js_source = match func {
            Func::Erlang { module, function } => {
                let ready = match is_map {
                    true => {
                        erlang::map_fn(module, function).map(|f| Ready::ErlangMap(f, arg.clone()))
                    }
                    false => erlang::reduce_fn(module, function).map(Ready::ErlangReduce),
                }
                .map_err(MapRedError::BadJob)?;
                return match ready {
                    Ready::ErlangReduce(ReduceFn::Index(f)) => Reducer::new(f, arg)
                        .map(Ready::IndexReduce)
                        .map_err(|m| MapRedError::phase(index, "erlang", m, arg.clone())),
                    other => Ok(other),
                };
            }
            Func::JsSource(s) | Func::JsNamed(s) => s.clone(),
            Func::JsStored { bucket, key } => stored_source(source, bucket, key, deadline)?,
        };
        if self.js.is_none() {
            return Err(MapRedError::bad(
                "JavaScript functions are disabled on this node",
            ));
        }
        Ok(match is_map {
            true => Ready::JsMap(js_source, arg.clone()),
            false => Ready::JsReduce(js_source, arg.clone()),
        })
    }

    fn map_or_link(
        &self,
        phase: usize,
        ready: &Ready,
        keys: Vec<BKey>,
        r: u32,
        source: &dyn Source,
        deadline: Instant,
    ) -> Result<Vec<Value>, MapRedError> {
        let mut out = Vec::new();
        for chunk in keys.chunks(FETCH_BATCH) {
            past(deadline)?;
            let objects = source.fetch(chunk, r, deadline)?;
            out.extend(self.map_batch(phase, ready, chunk, &objects, deadline)?);
        }
        Ok(out)
    }

    /// Runs a map or link phase over `keys` and their `objects`.
    fn map_batch(
        &self,
        phase: usize,
        ready: &Ready,
        keys: &[BKey],
        objects: &[Option<RiakObject>],
        deadline: Instant,
    ) -> Result<Vec<Value>, MapRedError> {
        let mut out = Vec::new();
        match ready {
            Ready::ErlangMap(f, arg) => {
                for (k, o) in keys.iter().zip(objects) {
                    let got = erlang::map(*f, k, o.as_ref(), arg)
                        .map_err(|m| MapRedError::phase(phase, "erlang", m, bkey_json(k)))?;
                    out.extend(got);
                }
            }
            Ready::JsMap(f, arg) => {
                out.extend(self.js_map(phase, f, arg, keys, objects, deadline)?)
            }
            Ready::Link(l) => out.extend(objects.iter().flat_map(|o| links(l, o))),
            Ready::ErlangReduce(_) | Ready::IndexReduce(_) | Ready::JsReduce(..) => {
                unreachable!("reduce phases do not read objects")
            }
        }
        Ok(out)
    }

    /// Runs map phase 0 as a vnode's runner asks: `phase` is
    /// [`vnode_phase_json`]'s text, `objects` live ones.
    pub(crate) fn map_at_vnode(
        &self,
        phase: &Value,
        keys: &[BKey],
        objects: &[Option<RiakObject>],
    ) -> Result<Vec<Value>, MapRedError> {
        let timeout_ms = phase["timeout_ms"].as_u64().unwrap_or(0);
        let deadline = Instant::now() + std::time::Duration::from_millis(timeout_ms);
        let spec = crate::job::parse_phase(&phase["phase"])?;
        let ready = match &spec {
            Phase::Map(FnPhase {
                func: Func::Erlang { module, function },
                arg,
                ..
            }) => erlang::map_fn(module, function)
                .map(|f| Ready::ErlangMap(f, arg.clone()))
                .map_err(MapRedError::BadJob)?,
            Phase::Map(FnPhase {
                func: Func::JsSource(s),
                arg,
                ..
            }) if self.js.is_some() => Ready::JsMap(s.clone(), arg.clone()),
            _ => return Err(MapRedError::bad("not a map phase a vnode can run")),
        };
        past(deadline)?;
        self.map_batch(0, &ready, keys, objects, deadline)
    }

    fn js_map(
        &self,
        phase: usize,
        function: &str,
        arg: &Value,
        keys: &[BKey],
        objects: &[Option<RiakObject>],
        deadline: Instant,
    ) -> Result<Vec<Value>, MapRedError> {
        let pool = self.js.as_ref().expect("resolved with a pool");
        let calls: Vec<JsCall> = keys
            .iter()
            .zip(objects)
            .map(|(k, o)| JsCall::Map {
                value: match o {
                    Some(o) => object_json(k, o),
                    None => not_found_json(k),
                }
                .to_string(),
                keydata: k.keydata.to_string(),
            })
            .collect();
        let batches: Vec<&[JsCall]> = calls.chunks(JS_BATCH).collect();
        let in_flight = pool.limits().threads.max(1);
        let mut out = Vec::with_capacity(calls.len());
        for (g, group) in batches.chunks(in_flight).enumerate() {
            let answers: Vec<_> = std::thread::scope(|s| {
                let handles: Vec<_> = group
                    .iter()
                    .map(|calls| {
                        let batch = JsBatch {
                            function: function.to_owned(),
                            arg: arg.to_string(),
                            calls: calls.to_vec(),
                            deadline,
                        };
                        s.spawn(move || pool.run(batch))
                    })
                    .collect();
                handles.into_iter().map(|h| h.join()).collect()
            });
            for (b, answer) in answers.into_iter().enumerate() {
                let first = (g * in_flight + b) * JS_BATCH;
                let lists = answer
                    .map_err(|_| {
                        MapRedError::phase(phase, "javascript", "the call panicked", Value::Null)
                    })?
                    .map_err(|f| js_failure(phase, f.message, bkey_json(&keys[first + f.call])))?;
                out.extend(lists.into_iter().flatten());
            }
        }
        Ok(out)
    }

    fn reduce(
        &self,
        phase: usize,
        ready: &Ready,
        values: Vec<Value>,
        deadline: Instant,
    ) -> Result<Vec<Value>, MapRedError> {
        let batch = match ready {
            Ready::IndexReduce(r) => r.batch.unwrap_or(REDUCE_BATCH),
            _ => REDUCE_BATCH,
        };
        let mut acc: Vec<Value> = Vec::new();
        let mut rest = values.into_iter().peekable();
        loop {
            past(deadline)?;
            let mut input = std::mem::take(&mut acc);
            input.extend(rest.by_ref().take(batch));
            acc = match ready {
                Ready::ErlangReduce(f) => erlang::reduce(*f, input)
                    .map_err(|m| MapRedError::phase(phase, "erlang", m, Value::Null))?,
                Ready::IndexReduce(r) => r
                    .reduce(input)
                    .map_err(|m| MapRedError::phase(phase, "erlang", m, Value::Null))?,
                Ready::JsReduce(function, arg) => {
                    self.js_reduce(phase, function, arg, input, deadline)?
                }
                _ => unreachable!("map and link phases are not reduces"),
            };
            if rest.peek().is_none() {
                return Ok(acc);
            }
        }
    }

    fn js_reduce(
        &self,
        phase: usize,
        function: &str,
        arg: &Value,
        values: Vec<Value>,
        deadline: Instant,
    ) -> Result<Vec<Value>, MapRedError> {
        let pool = self.js.as_ref().expect("resolved with a pool");
        let batch = JsBatch {
            function: function.to_owned(),
            arg: arg.to_string(),
            calls: vec![JsCall::Reduce {
                values: Value::Array(values).to_string(),
            }],
            deadline,
        };
        let mut lists = pool
            .run(batch)
            .map_err(|f| js_failure(phase, f.message, Value::Null))?;
        Ok(lists.pop().unwrap_or_default())
    }
}

/// What a phase's items are: object names, or any values.
enum Items {
    Keys(Vec<BKey>),
    Values(Vec<Value>),
}

impl Items {
    fn into_values(self) -> Vec<Value> {
        match self {
            Items::Keys(keys) => keys.iter().map(bkey_json).collect(),
            Items::Values(v) => v,
        }
    }

    /// Names for a map or link phase: earlier outputs must be
    /// `[bucket, key(, keydata)]` lists.
    fn into_keys(self, phase: usize) -> Result<Vec<BKey>, MapRedError> {
        match self {
            Items::Keys(keys) => Ok(keys),
            Items::Values(values) => values
                .iter()
                .map(|v| {
                    bkey(v).map_err(|_| {
                        let m = "a map or link phase's input must be [bucket, key(, keydata)]";
                        MapRedError::phase(phase, "input", m, v.clone())
                    })
                })
                .collect(),
        }
    }
}

/// The inputs and phase text when map phase 0 runs at the vnodes: a
/// bucket, key-filter or index input (one without terms: a vnode's map
/// gives its inputs no keydata), a map first, and a read quorum of one (a
/// vnode reads only its own replica).
fn at_vnodes<'a>(
    job: &'a MapRedJob,
    first: Option<&Ready>,
    deadline: Instant,
) -> Option<(VnodeInputs<'a>, Vec<u8>)> {
    let inputs = match &job.inputs {
        Inputs::Bucket(bucket) => VnodeInputs::Bucket {
            bucket,
            filter: None,
        },
        Inputs::KeyFilter { bucket, filter } => VnodeInputs::Bucket {
            bucket,
            filter: Some(filter),
        },
        Inputs::Index(input) if !input.return_terms => VnodeInputs::Index(input),
        Inputs::Keys(_) | Inputs::Index(_) => return None,
    };
    let Some(Phase::Map(spec)) = job.phases.first() else {
        return None;
    };
    if job.r > 1 {
        return None;
    }
    let phase = vnode_phase_json(&spec.func, first?, deadline)?;
    Some((inputs, phase))
}

/// Map phase 0 as the vnodes' runners read it: the phase in Riak's JSON
/// form with its function resolved (a stored function as its source), and
/// the time left before `deadline`, which bounds the vnodes' calls:
/// `{"phase": {"map": spec}, "timeout_ms": N}`.
fn vnode_phase_json(func: &Func, ready: &Ready, deadline: Instant) -> Option<Vec<u8>> {
    let spec = match (func, ready) {
        (Func::Erlang { module, function }, Ready::ErlangMap(_, arg)) => serde_json::json!({
            "language": "erlang", "module": module, "function": function, "arg": arg
        }),
        (_, Ready::JsMap(source, arg)) => serde_json::json!({
            "language": "javascript", "source": source, "arg": arg
        }),
        _ => return None,
    };
    let timeout_ms = deadline
        .saturating_duration_since(Instant::now())
        .as_millis() as u64;
    serde_json::to_vec(&serde_json::json!({"phase": {"map": spec}, "timeout_ms": timeout_ms})).ok()
}

fn input_keys(
    inputs: &Inputs,
    source: &dyn Source,
    deadline: Instant,
) -> Result<Vec<BKey>, MapRedError> {
    let (bucket, keys) = match inputs {
        Inputs::Keys(keys) => return Ok(keys.clone()),
        Inputs::Bucket(b) => (b, source.keys(b)?),
        Inputs::KeyFilter { bucket, filter } => {
            (bucket, source.filtered_keys(bucket, filter, deadline)?)
        }
        Inputs::Index(ix) => return index_inputs(ix, source.index_entries(ix)?),
    };
    check_input_count(keys.len())?;
    Ok(keys
        .into_iter()
        .map(|key| BKey {
            bucket: bucket.clone(),
            key,
            keydata: Value::Null,
        })
        .collect())
}

fn check_input_count(n: usize) -> Result<(), MapRedError> {
    match n > INPUT_KEYS_MAX {
        true => Err(MapRedError::bad(format!(
            "the inputs name {n} keys (at most {INPUT_KEYS_MAX})"
        ))),
        false => Ok(()),
    }
}

/// A 2i input's names; with `return_terms`, each carries its term as Riak's
/// index keydata does (`{{Bucket, Key}, [{term, Term}]}`): keydata
/// `{"term": T}`.
fn index_inputs(ix: &IndexInput, entries: Vec<IndexEntry>) -> Result<Vec<BKey>, MapRedError> {
    check_input_count(entries.len())?;
    let kind = term::kind_of(&ix.field.to_ascii_lowercase());
    Ok(entries
        .into_iter()
        .map(|(term, key)| {
            let keydata = match ix.return_terms {
                true => serde_json::json!({ "term": term_json(kind, &term, &key) }),
                false => Value::Null,
            };
            BKey {
                bucket: ix.bucket.clone(),
                key,
                keydata,
            }
        })
        .collect())
}

/// A returned term as the index functions read it: an integer for an
/// `_int` field, a binary ([`item`]) for `_bin`, the key itself for
/// `$key` and `$bucket` (`kind` `None`).
fn term_json(kind: Option<FieldKind>, term: &[u8], key: &[u8]) -> Value {
    let number = || std::str::from_utf8(term).ok()?.parse::<i64>().ok();
    match (kind, number()) {
        (None, _) => item::binary(key),
        (Some(FieldKind::Int), Some(n)) => Value::from(n),
        (Some(_), _) => item::binary(term),
    }
}

fn stored_source(
    source: &dyn Source,
    bucket: &BucketRef,
    key: &[u8],
    deadline: Instant,
) -> Result<String, MapRedError> {
    let name = BKey {
        bucket: bucket.clone(),
        key: key.to_vec(),
        keydata: Value::Null,
    };
    let found = source.fetch(std::slice::from_ref(&name), 1, deadline)?;
    let value = found
        .first()
        .and_then(|o| o.as_ref())
        .and_then(first_value)
        .ok_or_else(|| MapRedError::bad(format!("no stored function at {}", bkey_json(&name))))?;
    let src = std::str::from_utf8(value)
        .map_err(|_| MapRedError::bad("the stored function is not UTF-8 text"))?;
    if src.len() > crate::job::LIMITS.source_bytes {
        return Err(MapRedError::bad("the stored function is too long"));
    }
    Ok(src.to_owned())
}

/// `[bucket, key, tag]` for each link of the object matching the phase.
fn links(phase: &LinkPhase, obj: &Option<RiakObject>) -> Vec<Value> {
    let Some(obj) = obj else { return Vec::new() };
    let mut out: Vec<Value> = Vec::new();
    for s in obj.siblings.iter().filter(|s| !s.content.meta.deleted) {
        for l in &s.content.meta.links {
            let bucket_ok = phase.bucket.as_ref().is_none_or(|b| *b == l.bucket);
            let tag_ok = phase.tag.as_ref().is_none_or(|t| *t == l.tag);
            let v = serde_json::json!([text(&l.bucket), text(&l.key), text(&l.tag)]);
            if bucket_ok && tag_ok && !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

fn js_failure(phase: usize, message: String, input: Value) -> MapRedError {
    match message.starts_with("timeout") {
        true => MapRedError::Timeout,
        false => MapRedError::phase(phase, "javascript", message, input),
    }
}

/// A map output too long for one vnode-message item: the job then runs
/// phase 0 here instead, reading the objects (slower, but not refused).
fn output_too_large(e: &MapRedError) -> bool {
    let text = e.to_string();
    text.contains("map output of ") && text.contains("exceeds the limit of")
}

fn past(deadline: Instant) -> Result<(), MapRedError> {
    match Instant::now() >= deadline {
        true => Err(MapRedError::Timeout),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests;
