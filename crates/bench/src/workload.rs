//! A run's plan: everything workers share, built once from the config,
//! and the pure pieces of requests (MapReduce jobs) that do not depend on
//! the protocol; index entries and lookups are [`crate::index`]'s.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::baseline::Trip;
use crate::config::{BenchConfig, Mode, MultiGetVia};
use crate::driver::{DriverOptions, Target};
use crate::index::IndexPlan;
use crate::keygen::KeySpace;
use crate::ops::{OpChooser, OpKind};
use crate::valuegen::ValueGen;

/// What every worker of a run shares.
pub struct Plan {
    pub driver: Arc<DriverOptions>,
    pub endpoints: Vec<String>,
    pub keys: Arc<KeySpace>,
    pub values: ValueGen,
    pub chooser: OpChooser,
    pub index: Option<IndexPlan>,
    pub multi_get_keys: usize,
    pub multi_get_via: MultiGetVia,
    pub multi_put_keys: usize,
    pub mapreduce_job: String,
    /// Seconds between two requests of one worker (`rate` mode).
    pub pace_s: Option<f64>,
    pub seed: u64,
    pub workers: usize,
    /// Requests of the whole measured phase (`ops`), when it counts them.
    pub ops: Option<u64>,
}

impl Plan {
    /// The plan of a validated config.
    pub fn new(config: &BenchConfig) -> Plan {
        let target = Target {
            bucket_type: config.driver.bucket_type.clone(),
            bucket: config.driver.bucket.clone(),
        };
        let values = ValueGen::new(&config.values, config.seed);
        let content_type = config
            .request
            .content_type
            .clone()
            .unwrap_or_else(|| values.content_type().to_string());
        let index = config.index.as_ref().map(|i| IndexPlan::new(i, &values));
        let job = config.mapreduce.as_ref().and_then(|m| m.job.as_deref());
        let mapreduce_job = match job {
            Some(t) => fill_job(t, &target.bucket, target.type_name()),
            None => count_job(&target),
        };
        Plan {
            driver: Arc::new(DriverOptions {
                protocol: config.driver.protocol,
                target,
                request: config.request.clone(),
                content_type,
                timeout: config.request_timeout.0,
                storage: None,
            }),
            endpoints: config.driver.endpoints.clone(),
            keys: Arc::new(KeySpace::new(&config.keys, config.concurrent)),
            values,
            chooser: OpChooser::new(&config.weighted_ops()),
            index,
            multi_get_keys: config.multi_get.as_ref().map_or(1, |m| m.keys),
            multi_get_via: config.multi_get.as_ref().map(|m| m.via).unwrap_or_default(),
            multi_put_keys: config.multi_put.as_ref().map_or(1, |m| m.keys),
            mapreduce_job,
            pace_s: (config.mode == Mode::Rate).then(|| 1.0 / config.rate.unwrap_or(1.0)),
            seed: config.seed,
            workers: config.concurrent,
            ops: config.ops,
        }
    }

    /// The weighted operations as the loopback baseline runs them: the
    /// round trips each makes, with the bytes it moves at the mean value
    /// size ([`echo_trips`]).
    pub fn echo_mix(&self) -> Vec<(Vec<Trip>, u32)> {
        let value = self.values.mean_size();
        self.chooser
            .weights()
            .map(|(op, w)| (echo_trips(op, value, self.batch(op)), w))
            .collect()
    }

    /// The keys one request of `op` names: the batch size of a multi-key
    /// operation, 1 for the others.
    pub fn batch(&self, op: OpKind) -> usize {
        match op {
            OpKind::MultiGet => self.multi_get_keys,
            OpKind::MultiPut => self.multi_put_keys,
            _ => 1,
        }
    }

    /// The requests worker `id` issues under `ops` (its even share), or
    /// `None` when the run is not counted in requests.
    pub fn ops_of_worker(&self, id: usize) -> Option<u64> {
        let (ops, w, i) = (
            u128::from(self.ops?),
            self.workers.max(1) as u128,
            id as u128,
        );
        Some((ops * (i + 1) / w - ops * i / w) as u64)
    }

    /// The endpoint of worker `id` after `reconnects` reconnections:
    /// round-robin, moving on after each failure.
    pub fn endpoint(&self, id: usize, reconnects: usize) -> &str {
        &self.endpoints[(id + reconnects) % self.endpoints.len()]
    }
}

/// The round trips an operation makes, with a `value`-byte value and
/// `batch` keys per multi-key request: an update reads, then writes; a
/// multi-get sends its keys and gets their values back in one trip, a
/// multi-put the reverse; a delete, a data type update, a 2i query and a
/// MapReduce job move small messages (their replies' sizes depend on the data, which the
/// echo does not have).
pub fn echo_trips(op: OpKind, value: usize, batch: usize) -> Vec<Trip> {
    match op {
        OpKind::Get => vec![Trip::read(value)],
        OpKind::Put => vec![Trip::write(value)],
        OpKind::Update => vec![Trip::read(value), Trip::write(value)],
        OpKind::Delete | OpKind::CounterIncr | OpKind::SetAdd => vec![Trip::write(0)],
        OpKind::IndexQuery | OpKind::Mapreduce => vec![Trip::read(0)],
        OpKind::MultiGet | OpKind::MultiPut => {
            let one = match op {
                OpKind::MultiGet => Trip::read(value),
                _ => Trip::write(value),
            };
            let n = batch.max(1);
            vec![Trip {
                request: one.request * n,
                reply: one.reply * n,
            }]
        }
    }
}

/// A job template with `{bucket}` and `{type}` filled in.
pub fn fill_job(template: &str, bucket: &str, bucket_type: &str) -> String {
    template
        .replace("{bucket}", bucket)
        .replace("{type}", bucket_type)
}

/// How MapReduce inputs name the bucket: a name for the default type,
/// `[type, bucket]` otherwise.
fn bucket_json(t: &Target) -> Value {
    match &t.bucket_type {
        Some(ty) if ty != "default" => json!([ty, t.bucket]),
        _ => json!(t.bucket),
    }
}

/// The default `mapreduce` job: count the bucket's objects.
pub fn count_job(t: &Target) -> String {
    json!({
        "inputs": bucket_json(t),
        "query": [{"reduce": {
            "language": "erlang",
            "module": "riak_kv_mapreduce",
            "function": "reduce_count_inputs",
            "arg": {"reduce_phase_only_1": true}
        }}]
    })
    .to_string()
}

/// A multi-get as one MapReduce job: `map_object_value` over the keys.
pub fn multi_get_job(t: &Target, keys: &[Vec<u8>]) -> String {
    let b = bucket_json(t);
    let inputs: Vec<Value> = keys
        .iter()
        .map(|k| json!([b, String::from_utf8_lossy(k)]))
        .collect();
    json!({
        "inputs": inputs,
        "query": [{"map": {
            "language": "erlang",
            "module": "riak_kv_mapreduce",
            "function": "map_object_value"
        }}]
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(ty: Option<&str>) -> Target {
        Target {
            bucket_type: ty.map(str::to_string),
            bucket: "coupons".into(),
        }
    }

    #[test]
    fn the_echo_mix_moves_what_each_operation_moves() {
        let text = r#"
            duration = "3s"
            [driver]
            protocol = "pb"
            endpoints = ["127.0.0.1:8087"]
            bucket = "b"
            [operations]
            get = 4
            update = 1
            multi_get = 2
            multi_put = 1
            [multi_get]
            keys = 3
            via = "mapreduce"
            [multi_put]
            keys = 5
            [keys]
            generator = "uniform_int"
            max = 100
            [values]
            generator = "random_bin"
            size_min = 1000
            size_max = 3000
        "#;
        let plan = Plan::new(&crate::config::parse_valid(text).unwrap());
        let (read, write) = (Trip::read(2000), Trip::write(2000));
        let many = Trip {
            request: 3 * read.request,
            reply: 3 * read.reply,
        };
        let many_writes = Trip {
            request: 5 * write.request,
            reply: 5 * write.reply,
        };
        assert_eq!(
            plan.echo_mix(),
            vec![
                (vec![read], 4),
                (vec![read, write], 1),
                (vec![many], 2),
                (vec![many_writes], 1)
            ]
        );
        assert_eq!(echo_trips(OpKind::Delete, 2000, 1), vec![Trip::write(0)]);
    }

    #[test]
    fn jobs_name_typed_buckets_as_pairs() {
        let job: Value = serde_json::from_str(&count_job(&target(None))).unwrap();
        assert_eq!(job["inputs"], "coupons");
        let job: Value = serde_json::from_str(&count_job(&target(Some("t")))).unwrap();
        assert_eq!(job["inputs"], json!(["t", "coupons"]));
        let keys = vec![b"a".to_vec(), b"b".to_vec()];
        let job: Value = serde_json::from_str(&multi_get_job(&target(None), &keys)).unwrap();
        assert_eq!(job["inputs"], json!([["coupons", "a"], ["coupons", "b"]]));
        assert_eq!(job["query"][0]["map"]["function"], "map_object_value");
        assert_eq!(
            fill_job("{\"inputs\":\"{bucket}\",\"t\":\"{type}\"}", "b", "x"),
            "{\"inputs\":\"b\",\"t\":\"x\"}"
        );
    }
}
