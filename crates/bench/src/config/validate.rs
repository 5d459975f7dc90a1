//! Checks that a parsed config can run; each error names its setting.

use super::{
    BenchConfig, IndexConfig, IndexEntryConfig, IndexQuery, KeyGenerator, Mode, MultiGetVia,
    Protocol, ValueGenerator,
};
use crate::error::BenchError;
use crate::ops::OpKind;

/// Most workers one run may have.
pub const WORKERS_MAX: usize = 10_000;
/// Largest value a generator may make.
pub const VALUE_BYTES_MAX: usize = 64 << 20;
/// Most keys one multi-get may ask for.
pub const MULTI_GET_KEYS_MAX: usize = 10_000;
/// Most keys one of Eddy's multi-key requests may name (its server's
/// limit, design note 016).
pub const NATIVE_KEYS_MAX: usize = 1000;
/// Most index entries each put may carry.
pub const INDEX_ENTRIES_MAX: usize = 16;
/// Longest `prefix` of an index entry.
pub const INDEX_PREFIX_BYTES_MAX: usize = 100;

fn bad(setting: &str, problem: impl Into<String>) -> BenchError {
    BenchError::Setting {
        setting: setting.to_string(),
        problem: problem.into(),
    }
}

/// Every rule below, first failure first.
pub fn check(c: &BenchConfig) -> Result<(), BenchError> {
    check_run(c)?;
    check_driver(c)?;
    check_operations(c)?;
    check_keys(c)?;
    check_values(c)?;
    check_sections(c)
}

fn check_run(c: &BenchConfig) -> Result<(), BenchError> {
    if c.concurrent == 0 || c.concurrent > WORKERS_MAX {
        return Err(bad("concurrent", format!("must be 1 to {WORKERS_MAX}")));
    }
    for (name, span) in [
        ("duration", c.duration),
        ("report_interval", c.report_interval),
        ("request_timeout", c.request_timeout),
        ("give_up_after", c.give_up_after),
    ] {
        if span.0.is_zero() {
            return Err(bad(name, "must be more than zero"));
        }
    }
    if c.ops == Some(0) {
        return Err(bad(
            "ops",
            "must be at least 1 (omit it to run for the duration)",
        ));
    }
    match (c.mode, c.rate) {
        (Mode::Rate, Some(r)) if r.is_finite() && r > 0.0 => Ok(()),
        (Mode::Rate, _) => Err(bad(
            "rate",
            "mode = \"rate\" needs rate > 0 (ops/s per worker)",
        )),
        (Mode::Max, Some(_)) => Err(bad("rate", "only used with mode = \"rate\"")),
        (Mode::Max, None) => Ok(()),
    }
}

fn check_driver(c: &BenchConfig) -> Result<(), BenchError> {
    let d = &c.driver;
    if d.endpoints.is_empty() {
        return Err(bad("driver.endpoints", "needs at least one host:port"));
    }
    let storage = d.protocol == Protocol::Storage;
    if let Some(e) = d.endpoints.iter().find(|e| !storage && !is_host_port(e)) {
        return Err(bad("driver.endpoints", format!("{e:?} is not host:port")));
    }
    if d.bucket.is_empty() {
        return Err(bad("driver.bucket", "must not be empty"));
    }
    if storage {
        check_storage(c)?;
    }
    if d.bucket_type.as_deref() == Some("") {
        return Err(bad(
            "driver.bucket_type",
            "must not be empty (omit it for the default type)",
        ));
    }
    Ok(())
}

/// The storage driver serves what an engine's `Backend` contract has.
fn check_storage(c: &BenchConfig) -> Result<(), BenchError> {
    let served = [
        OpKind::Get,
        OpKind::Put,
        OpKind::Update,
        OpKind::Delete,
        OpKind::IndexQuery,
    ];
    if let Some((op, _)) = c.weighted_ops().iter().find(|(op, _)| !served.contains(op)) {
        return Err(bad(
            &format!("operations.{}", op.name()),
            "not a storage request (the storage driver serves get, put, update, delete and index_query)",
        ));
    }
    if c.bucket_props.is_some() {
        return Err(bad(
            "bucket_props",
            "a storage engine has no bucket properties",
        ));
    }
    Ok(())
}

fn is_host_port(e: &str) -> bool {
    e.rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
}

fn check_operations(c: &BenchConfig) -> Result<(), BenchError> {
    for name in c.operations.keys() {
        if OpKind::from_name(name).is_none() {
            let known: Vec<_> = OpKind::ALL.iter().map(|o| o.name()).collect();
            return Err(bad(
                &format!("operations.{name}"),
                format!("unknown operation; known: {}", known.join(", ")),
            ));
        }
    }
    if c.weighted_ops().is_empty() {
        return Err(bad(
            "operations",
            "needs at least one operation with a weight above 0",
        ));
    }
    Ok(())
}

fn check_keys(c: &BenchConfig) -> Result<(), BenchError> {
    let k = &c.keys;
    match (k.generator, k.max) {
        (KeyGenerator::Unique, Some(_)) => {
            return Err(bad(
                "keys.max",
                "not used by the unique generator (its key space grows)",
            ));
        }
        (KeyGenerator::Unique, None) => {}
        (_, None | Some(0)) => return Err(bad("keys.max", "must be at least 1")),
        (KeyGenerator::PartitionedSequentialInt, Some(max)) if max < c.concurrent as u64 => {
            return Err(bad(
                "keys.max",
                "partitioned_sequential_int needs at least one key per worker",
            ));
        }
        _ => {}
    }
    let ordered = matches!(
        k.generator,
        KeyGenerator::Unique | KeyGenerator::SequentialInt | KeyGenerator::PartitionedSequentialInt
    );
    if k.order.is_some() && !ordered {
        return Err(bad(
            "keys.order",
            "only used by unique, sequential_int and partitioned_sequential_int",
        ));
    }
    if k.once {
        check_once(c)?;
    }
    Ok(())
}

fn check_once(c: &BenchConfig) -> Result<(), BenchError> {
    if !matches!(
        c.keys.generator,
        KeyGenerator::SequentialInt | KeyGenerator::PartitionedSequentialInt
    ) {
        return Err(bad(
            "keys.once",
            "only with sequential_int or partitioned_sequential_int (the generators that walk the keys in order)",
        ));
    }
    if !c.weighted_ops().iter().any(|(op, _)| op.draws_keys()) {
        return Err(bad(
            "keys.once",
            "needs an operation that draws keys (get, put, update, delete, multi_get, \
             multi_put): index_query and mapreduce never use the keys up",
        ));
    }
    Ok(())
}

fn check_values(c: &BenchConfig) -> Result<(), BenchError> {
    let v = &c.values;
    let (min, max) = match v.generator {
        ValueGenerator::FixedBin | ValueGenerator::Json => {
            let size = v.size.ok_or_else(|| bad("values.size", "required"))?;
            if v.size_min.is_some() || v.size_max.is_some() {
                return Err(bad(
                    "values.size_min",
                    "not used: this generator's size is values.size",
                ));
            }
            (size, size)
        }
        ValueGenerator::RandomBin | ValueGenerator::SemiCompressible => size_range(v)?,
    };
    if min == 0 || max > VALUE_BYTES_MAX {
        return Err(bad(
            "values.size",
            format!("must be 1 to {VALUE_BYTES_MAX} bytes"),
        ));
    }
    match (v.generator, v.compression_ratio) {
        (ValueGenerator::SemiCompressible, Some(r))
            if r.is_finite() && (1.0..=100.0).contains(&r) => {}
        (ValueGenerator::SemiCompressible, _) => {
            return Err(bad(
                "values.compression_ratio",
                "semi_compressible needs a ratio from 1.0 to 100.0",
            ));
        }
        (_, Some(_)) => {
            return Err(bad(
                "values.compression_ratio",
                "only used by semi_compressible",
            ));
        }
        _ => {}
    }
    if !v.int_fields.is_empty() && v.generator != ValueGenerator::Json {
        return Err(bad("values.int_fields", "only used by the json generator"));
    }
    if let Some((name, _)) = v.int_fields.iter().find(|(_, bound)| **bound == 0) {
        return Err(bad(
            &format!("values.int_fields.{name}"),
            "bound must be at least 1",
        ));
    }
    Ok(())
}

fn size_range(v: &super::ValuesConfig) -> Result<(usize, usize), BenchError> {
    let min = v
        .size_min
        .or(v.size)
        .ok_or_else(|| bad("values.size_min", "required (or values.size)"))?;
    let max = v
        .size_max
        .or(v.size)
        .ok_or_else(|| bad("values.size_max", "required (or values.size)"))?;
    if min > max {
        return Err(bad("values.size_min", "must not exceed values.size_max"));
    }
    Ok((min, max))
}

fn check_sections(c: &BenchConfig) -> Result<(), BenchError> {
    let weighted = |op: OpKind| c.weighted_ops().iter().any(|(o, _)| *o == op);
    if let Some(index) = &c.index {
        check_index(c, index)?;
    } else if weighted(OpKind::IndexQuery) {
        return Err(bad(
            "index",
            "operations.index_query needs an [index] section",
        ));
    }
    if weighted(OpKind::MultiGet) {
        let m = c.multi_get.as_ref().ok_or_else(|| {
            bad(
                "multi_get",
                "operations.multi_get needs a [multi_get] section (keys = N)",
            )
        })?;
        let max = match m.via {
            MultiGetVia::Native => NATIVE_KEYS_MAX,
            MultiGetVia::Mapreduce => MULTI_GET_KEYS_MAX,
        };
        if m.keys == 0 || m.keys > max {
            return Err(bad("multi_get.keys", format!("must be 1 to {max}")));
        }
    }
    if weighted(OpKind::MultiPut) {
        let m = c.multi_put.as_ref().ok_or_else(|| {
            bad(
                "multi_put",
                "operations.multi_put needs a [multi_put] section (keys = N)",
            )
        })?;
        if m.keys == 0 || m.keys > NATIVE_KEYS_MAX {
            return Err(bad(
                "multi_put.keys",
                format!("must be 1 to {NATIVE_KEYS_MAX}"),
            ));
        }
    }
    if let Some(job) = c.mapreduce.as_ref().and_then(|m| m.job.as_deref()) {
        let text = crate::workload::fill_job(job, "b", "t");
        serde_json::from_str::<serde_json::Value>(&text)
            .map_err(|e| bad("mapreduce.job", format!("not JSON: {e}")))?;
    }
    if c.preload.as_ref().is_some_and(|p| p.keys == 0) {
        return Err(bad(
            "preload.keys",
            "must be at least 1 (or omit [preload])",
        ));
    }
    Ok(())
}

fn check_index(c: &BenchConfig, i: &IndexConfig) -> Result<(), BenchError> {
    if i.range_start.is_some() && i.query != IndexQuery::Range {
        return Err(bad("index.range_start", "only used with query = \"range\""));
    }
    if i.range_width == 0 {
        return Err(bad("index.range_width", "must be at least 1"));
    }
    if i.entries.is_empty() {
        let field = i.field.as_deref().ok_or_else(|| {
            bad(
                "index.field",
                "required (or one [[index.entries]] table per entry)",
            )
        })?;
        check_field_name("index.field", field)?;
        return match i.terms {
            None => Err(bad("index.terms", "required with index.field alone")),
            Some(0) => Err(bad("index.terms", "must be at least 1")),
            Some(_) => Ok(()),
        };
    }
    if i.terms.is_some() {
        return Err(bad(
            "index.terms",
            "not used with [[index.entries]]: give each entry its own `from` or `terms`",
        ));
    }
    if i.entries.len() > INDEX_ENTRIES_MAX {
        return Err(bad(
            "index.entries",
            format!("at most {INDEX_ENTRIES_MAX} entries"),
        ));
    }
    for (n, e) in i.entries.iter().enumerate() {
        check_entry(c, n, e)?;
        if i.entries[..n].iter().any(|o| o.field == e.field) {
            return Err(bad(
                &format!("index.entries[{n}].field"),
                format!("{:?} is already an entry", e.field),
            ));
        }
    }
    check_queried(i)
}

/// `index.field` (with entries) names an entry, and a range query asks an
/// entry whose terms sort as numbers.
fn check_queried(i: &IndexConfig) -> Result<(), BenchError> {
    let queried = match &i.field {
        None => &i.entries[0],
        Some(f) => i.entries.iter().find(|e| &e.field == f).ok_or_else(|| {
            let names: Vec<_> = i.entries.iter().map(|e| e.field.as_str()).collect();
            bad(
                "index.field",
                format!(
                    "{f:?} (the field index_query asks) is not an entry; entries: {}",
                    names.join(", ")
                ),
            )
        })?,
    };
    if i.query == IndexQuery::Range && queried.field.ends_with("_bin") && queried.from.is_some() {
        return Err(bad(
            "index.query",
            format!(
                "a range over {} would compare text, not numbers (its terms copy a JSON field, \
                 unpadded); query an _int entry, or a _bin entry with `terms`",
                queried.field
            ),
        ));
    }
    Ok(())
}

fn check_entry(c: &BenchConfig, n: usize, e: &IndexEntryConfig) -> Result<(), BenchError> {
    let at = |key: &str| format!("index.entries[{n}].{key}");
    check_field_name(&at("field"), &e.field)?;
    match (&e.from, e.terms) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(bad(
                &format!("index.entries[{n}]"),
                "needs exactly one of `from` (a JSON integer field) and `terms`",
            ));
        }
        (None, Some(0)) => return Err(bad(&at("terms"), "must be at least 1")),
        (None, Some(_)) => {}
        (Some(name), None) if !c.values.int_fields.contains_key(name) => {
            let known: Vec<_> = c.values.int_fields.keys().map(String::as_str).collect();
            let problem = match known.is_empty() {
                true => format!(
                    "{name:?}: no values.int_fields (needs json values with [values.int_fields])"
                ),
                false => format!(
                    "{name:?} is not one of values.int_fields ({})",
                    known.join(", ")
                ),
            };
            return Err(bad(&at("from"), problem));
        }
        (Some(_), None) => {}
    }
    if !e.prefix.is_empty() && !e.field.ends_with("_bin") {
        return Err(bad(
            &at("prefix"),
            "only for _bin entries (an _int term is a number)",
        ));
    }
    let printable = |b: &u8| b.is_ascii_graphic() && *b != b',';
    if e.prefix.len() > INDEX_PREFIX_BYTES_MAX || !e.prefix.bytes().all(|b| printable(&b)) {
        return Err(bad(
            &at("prefix"),
            format!(
                "at most {INDEX_PREFIX_BYTES_MAX} printable ASCII characters, no spaces or commas \
                 (HTTP sends terms in a comma-separated header)"
            ),
        ));
    }
    Ok(())
}

fn check_field_name(setting: &str, field: &str) -> Result<(), BenchError> {
    if !(field.ends_with("_int") || field.ends_with("_bin")) || field.len() < 5 {
        return Err(bad(setting, "must be a name ending in _int or _bin"));
    }
    Ok(())
}
