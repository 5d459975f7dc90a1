//! Running a job: resolve its inputs to objects' names, then run its
//! phases in order, each phase's output the next one's input, and keep
//! the outputs of the phases marked `keep`.
//!
//! - A **map** phase reads each named object (through the [`Source`],
//!   with the job's read quorum) and calls its function once per input,
//!   with the object or, for a missing one, the not-found marker.
//!   JavaScript calls go to the pool in batches, several at once.
//! - A **reduce** phase calls its function over its inputs in batches of
//!   [`REDUCE_BATCH`], each call given the previous call's output followed
//!   by the next batch (Riak's re-reduce), and at least once (so a reduce
//!   over nothing still answers, e.g. `[0]` for a sum).
//! - A **link** phase reads each object and passes on `[bucket, key, tag]`
//!   for each of its links matching the phase's bucket and tag.
//! - A job with no phases answers its inputs as `[bucket, key]` lists.
//!
//! The job's deadline is checked between batches and bounds every
//! JavaScript call; past it the job fails with [`MapRedError::Timeout`].

use std::time::Instant;

use eddy_kv::BucketRef;
use eddy_object::RiakObject;
use serde_json::Value;

use crate::erlang::{self, MapFn, ReduceFn};
use crate::error::MapRedError;
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
    /// The keys a 2i query matches, in the query's order.
    fn index_keys(&self, input: &IndexInput) -> Result<Vec<Vec<u8>>, MapRedError>;
    /// The objects named, in order; `None` for a missing one.
    fn fetch(
        &self,
        inputs: &[BKey],
        r: u32,
        deadline: Instant,
    ) -> Result<Vec<Option<RiakObject>>, MapRedError>;
}

/// The kept phases' outputs, in phase order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MapRedOutput {
    pub phases: Vec<(usize, Vec<Value>)>,
}

/// Runs jobs; JavaScript phases need a pool.
#[derive(Clone)]
pub struct Executor {
    js: Option<JsPool>,
}

/// A phase with its function resolved.
enum Ready {
    ErlangMap(MapFn, Value),
    ErlangReduce(ReduceFn),
    JsMap(String, Value),
    JsReduce(String, Value),
    Link(LinkPhase),
}

impl Executor {
    pub fn new(js: Option<JsPool>) -> Executor {
        Executor { js }
    }

    /// Runs `job` to the end (blocking: call from a blocking thread).
    pub fn run(&self, job: &MapRedJob, source: &dyn Source) -> Result<MapRedOutput, MapRedError> {
        let deadline = Instant::now() + job.timeout;
        let ready = job
            .phases
            .iter()
            .map(|p| self.resolve(p, source, deadline))
            .collect::<Result<Vec<_>, _>>()?;
        let mut items = Items::Keys(input_keys(&job.inputs, source, deadline)?);
        past(deadline)?;
        let mut out = MapRedOutput::default();
        if ready.is_empty() {
            out.phases.push((0, items.into_values()));
            return Ok(out);
        }
        for (i, (phase, spec)) in ready.iter().zip(&job.phases).enumerate() {
            let values = match phase {
                Ready::ErlangReduce(_) | Ready::JsReduce(..) => {
                    self.reduce(i, phase, items.into_values(), deadline)?
                }
                _ => self.map_or_link(i, phase, items.into_keys(i)?, job.r, source, deadline)?,
            };
            if spec.keep() {
                out.phases.push((i, values.clone()));
            }
            items = Items::Values(values);
        }
        Ok(out)
    }

    fn resolve(
        &self,
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
                return match is_map {
                    true => {
                        erlang::map_fn(module, function).map(|f| Ready::ErlangMap(f, arg.clone()))
                    }
                    false => erlang::reduce_fn(module, function).map(Ready::ErlangReduce),
                }
                .map_err(MapRedError::BadJob);
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
            match ready {
                Ready::ErlangMap(f, arg) => {
                    for (k, o) in chunk.iter().zip(&objects) {
                        let got = erlang::map(*f, k, o.as_ref(), arg)
                            .map_err(|m| MapRedError::phase(phase, "erlang", m, bkey_json(k)))?;
                        out.extend(got);
                    }
                }
                Ready::JsMap(f, arg) => {
                    out.extend(self.js_map(phase, f, arg, chunk, &objects, deadline)?)
                }
                Ready::Link(l) => out.extend(objects.iter().flat_map(|o| links(l, o))),
                Ready::ErlangReduce(_) | Ready::JsReduce(..) => {
                    unreachable!("reduce phases do not read objects")
                }
            }
        }
        Ok(out)
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
        let mut acc: Vec<Value> = Vec::new();
        let mut rest = values.into_iter().peekable();
        loop {
            past(deadline)?;
            let mut input = std::mem::take(&mut acc);
            input.extend(rest.by_ref().take(REDUCE_BATCH));
            acc = match ready {
                Ready::ErlangReduce(f) => erlang::reduce(*f, input)
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
        Inputs::Index(ix) => (&ix.bucket, source.index_keys(ix)?),
    };
    if keys.len() > INPUT_KEYS_MAX {
        return Err(MapRedError::bad(format!(
            "the inputs name {} keys (at most {INPUT_KEYS_MAX})",
            keys.len()
        )));
    }
    Ok(keys
        .into_iter()
        .map(|key| BKey {
            bucket: bucket.clone(),
            key,
            keydata: Value::Null,
        })
        .collect())
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

fn past(deadline: Instant) -> Result<(), MapRedError> {
    match Instant::now() >= deadline {
        true => Err(MapRedError::Timeout),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests;
