//! Turning the checked setting texts into [`Settings`]: each value parsed
//! into its type once, plus the rules that involve a value's meaning
//! beyond its kind (a ring size that is a power of two, an hour of the
//! day, a node name with a host). An error names the setting and where
//! its value came from.

use std::time::Duration;

use eddy_bitcask::{BitcaskConfig, MergeWindow};
use eddy_kv::DeleteMode;
use eddy_lsm::LsmConfig;
use eddy_model::Quorum;
use eddy_model::limits::{Limit, MetaLimits, MultiLimits};
use eddy_model::props::BucketProps;
use eddy_query::js::JsLimits;
use eddy_ring::NodeName;
use eddy_storage::memory::MemoryConfig;
use eddy_vnode::commitlog::{LogOptions, SyncPolicy};

use super::load::{ConfigError, Raw};
use super::settings::*;

impl Settings {
    /// Builds the settings from `raw`, whose every value already fits its
    /// kind; fails on the first cross check that does not hold.
    pub(super) fn build(raw: &Raw) -> Result<Settings, ConfigError> {
        cross_checks(raw)?;
        Ok(Settings {
            node: node(raw)?,
            listeners: Listeners {
                http: raw.addr("listener.http.internal")?,
                protobuf: raw.addr("listener.protobuf.internal")?,
                cluster: raw.addr("listener.cluster.internal")?,
            },
            cluster: ClusterSettings {
                cookie: raw.text("distributed_cookie").to_string(),
                transfer_limit: u32::try_from(raw.int("transfer_limit")?).unwrap_or(u32::MAX),
            },
            storage: storage(raw)?,
            commit_log: commit_log(raw)?,
            bucket_defaults: bucket_defaults(raw)?,
            objects: objects(raw)?,
            multi: multi(raw)?,
            datatype_cache_bytes: usize_of(raw.bytes("datatypes.cache_size")?),
            http: http(raw)?,
            protobuf: protobuf(raw)?,
            request_budget: RequestBudget {
                bytes_max: usize_of(raw.bytes("request_budget.maximum")?),
                wait: raw.duration("request_budget.wait")?,
            },
            javascript: javascript(raw)?,
            log_level: raw.text("log.level").to_string(),
        })
    }
}

fn javascript(raw: &Raw) -> Result<Option<JsLimits>, ConfigError> {
    if !raw.flag("javascript.enabled")? {
        return Ok(None);
    }
    let defaults = JsLimits::default();
    let threads = match usize_of(raw.int("javascript.threads")?) {
        0 => defaults.threads,
        n => n,
    };
    Ok(Some(JsLimits {
        threads,
        memory_bytes: usize_of(raw.bytes("javascript.heap_maximum")?).max(1 << 20),
        call_timeout: raw.duration("javascript.call_timeout")?,
        queue: defaults.queue,
    }))
}

/// Rules that involve a value's meaning beyond its kind.
fn cross_checks(raw: &Raw) -> Result<(), ConfigError> {
    let ring = raw.int("ring_size")?;
    if !ring.is_power_of_two() || !(8..=1024).contains(&ring) {
        return Err(raw.invalid("ring_size", "must be a power of two between 8 and 1024"));
    }
    if raw.int("buckets.default.n_val")? == 0 {
        return Err(raw.invalid("buckets.default.n_val", "must be at least 1"));
    }
    for hour in ["bitcask.merge.window.start", "bitcask.merge.window.end"] {
        if raw.int(hour)? > 23 {
            return Err(raw.invalid(hour, "must be an hour from 0 to 23"));
        }
    }
    if !raw.text("nodename").contains('@') {
        return Err(raw.invalid("nodename", "must look like name@host"));
    }
    Ok(())
}

fn node(raw: &Raw) -> Result<NodeSettings, ConfigError> {
    let ring = raw.int("ring_size")?;
    let delete_mode = match raw.text("delete_mode") {
        "keep" => DeleteMode::Keep,
        "immediate" => DeleteMode::Immediate,
        _ => DeleteMode::DelayMs(millis(raw.duration("delete_mode")?)),
    };
    let partition_repair = match raw.text("partition_repair") {
        "manual" => PartitionRepair::Manual,
        _ => PartitionRepair::Auto,
    };
    Ok(NodeSettings {
        nodename: NodeName(raw.text("nodename").to_string()),
        platform_data_dir: raw.text("platform_data_dir").into(),
        ring_size: ring as u32, // at most 1024 (cross checks)
        delete_mode,
        partition_repair,
    })
}

fn storage(raw: &Raw) -> Result<StorageSettings, ConfigError> {
    let backend = match raw.text("storage_backend") {
        "lsm" => StorageBackend::Lsm,
        "memory" => StorageBackend::Memory,
        "multi" => StorageBackend::Multi,
        _ => StorageBackend::Bitcask,
    };
    Ok(StorageSettings {
        backend,
        bitcask: bitcask(raw)?,
        lsm: lsm(raw)?,
        memory: memory(raw)?,
    })
}

fn bitcask(raw: &Raw) -> Result<BitcaskConfig, ConfigError> {
    let sync = match raw.text("bitcask.sync.strategy") {
        "o_sync" => SyncPolicy::OSync,
        "interval" => SyncPolicy::Interval,
        _ => SyncPolicy::None,
    };
    let merge_window = match raw.text("bitcask.merge.policy") {
        "never" => MergeWindow::Never,
        // Hours from 0 to 23 (cross checks).
        "window" => MergeWindow::Hours {
            start: raw.int("bitcask.merge.window.start")? as u8,
            end: raw.int("bitcask.merge.window.end")? as u8,
        },
        _ => MergeWindow::Always,
    };
    // Per vnode, as the index lives in each partition's instance: the
    // default is 1 GiB for a node holding all 64 partitions of the
    // default ring (design note 002, "The term index's memory").
    let index_max = "bitcask.index_memory.maximum_per_vnode";
    let index_memory_max_bytes = match raw.text(index_max) {
        "off" => None,
        _ => Some(raw.bytes(index_max)?),
    };
    Ok(BitcaskConfig {
        max_file_size_bytes: raw.bytes("bitcask.max_file_size")?,
        sync,
        sync_interval: raw.duration("bitcask.sync.interval")?,
        expiry_secs: raw.expiry_secs("bitcask.expiry"),
        compression: raw.flag("bitcask.compression")?,
        frag_merge_trigger: percent(raw.int("bitcask.merge.triggers.fragmentation")?),
        dead_bytes_merge_trigger: raw.bytes("bitcask.merge.triggers.dead_bytes")?,
        frag_threshold: percent(raw.int("bitcask.merge.thresholds.fragmentation")?),
        dead_bytes_threshold: raw.bytes("bitcask.merge.thresholds.dead_bytes")?,
        small_file_threshold: raw.bytes("bitcask.merge.thresholds.small_file")?,
        merge_window,
        index_memory_max_bytes,
        ..BitcaskConfig::default()
    })
}

fn lsm(raw: &Raw) -> Result<LsmConfig, ConfigError> {
    let threshold = raw.bytes("lsm.kv_separation_threshold")?;
    Ok(LsmConfig {
        expiry_secs: raw.expiry_secs("lsm.expiry"),
        compression: raw.flag("lsm.compression")?,
        kv_separation_threshold_bytes: (threshold > 0)
            .then(|| threshold.min(u64::from(u32::MAX)) as u32),
        cache_size_bytes: raw.bytes("lsm.cache_size")?,
        ..LsmConfig::default()
    })
}

fn memory(raw: &Raw) -> Result<MemoryConfig, ConfigError> {
    let name = "memory_backend.max_memory_per_vnode";
    let max_memory_bytes = match raw.text(name) {
        "off" => None,
        _ => Some(raw.bytes(name)?),
    };
    Ok(MemoryConfig {
        max_memory_bytes,
        expiry_secs: raw.expiry_secs("memory_backend.ttl"),
        ..MemoryConfig::default()
    })
}

fn commit_log(raw: &Raw) -> Result<LogOptions, ConfigError> {
    let sync = match raw.text("commit_log.sync.strategy") {
        "none" => SyncPolicy::None,
        "o_sync" => SyncPolicy::OSync,
        _ => SyncPolicy::Interval,
    };
    Ok(LogOptions {
        // Below 1 MiB a segment would roll (and checkpoint) every few writes.
        segment_bytes: raw.bytes("commit_log.segment_size")?.max(1 << 20),
        sync,
        sync_interval: raw
            .duration("commit_log.sync.interval")?
            .max(Duration::from_millis(1)),
        ..LogOptions::default()
    })
}

fn bucket_defaults(raw: &Raw) -> Result<BucketProps, ConfigError> {
    let n_val = raw.int("buckets.default.n_val")?;
    let quorum = |name: &'static str| raw.parse(name, |t| Quorum::parse(t.trim()));
    Ok(BucketProps {
        n_val: u32::try_from(n_val).unwrap_or(u32::MAX),
        r: quorum("buckets.default.r")?,
        w: quorum("buckets.default.w")?,
        dw: quorum("buckets.default.dw")?,
        rw: quorum("buckets.default.rw")?,
        pr: quorum("buckets.default.pr")?,
        pw: quorum("buckets.default.pw")?,
        notfound_ok: raw.flag("buckets.default.notfound_ok")?,
        basic_quorum: raw.flag("buckets.default.basic_quorum")?,
        allow_mult: raw.flag("buckets.default.allow_mult")?,
        last_write_wins: raw.flag("buckets.default.last_write_wins")?,
        ..BucketProps::default()
    })
}

fn objects(raw: &Raw) -> Result<ObjectLimits, ConfigError> {
    let limit = |entries: &'static str, size: &'static str| -> Result<Limit, ConfigError> {
        Ok(Limit {
            entries: usize_of(raw.int(entries)?),
            bytes: usize_of(raw.bytes(size)?),
        })
    };
    Ok(ObjectLimits {
        size_warn_bytes: usize_of(raw.bytes("object.size.warning_threshold")?),
        size_max_bytes: usize_of(raw.bytes("object.size.maximum")?),
        siblings_warn: usize_of(raw.int("object.siblings.warning_threshold")?),
        siblings_max: usize_of(raw.int("object.siblings.maximum")?),
        meta: MetaLimits {
            usermeta: limit(
                "object.usermeta.entries.maximum",
                "object.usermeta.size.maximum",
            )?,
            links: limit("object.links.entries.maximum", "object.links.size.maximum")?,
            index: limit("object.index.entries.maximum", "object.index.size.maximum")?,
        },
    })
}

fn multi(raw: &Raw) -> Result<MultiLimits, ConfigError> {
    Ok(MultiLimits {
        keys_max: usize_of(raw.int("multi.keys_max")?),
        concurrency: usize_of(raw.int("multi.concurrency")?).max(1),
        answer_bytes_max: usize_of(raw.bytes("multi.answer_bytes_max")?),
        ..MultiLimits::default()
    })
}

fn http(raw: &Raw) -> Result<HttpSettings, ConfigError> {
    Ok(HttpSettings {
        body_bytes_max: usize_of(raw.bytes("http.body_size_maximum")?),
        connections_max: usize_of(raw.int("http.connections_maximum")?).max(1),
        request_timeout: raw.timeout("http.request_timeout"),
        backlog: backlog(raw.int("http.backlog")?),
    })
}

fn protobuf(raw: &Raw) -> Result<PbSettings, ConfigError> {
    Ok(PbSettings {
        frame_bytes_max: usize_of(raw.bytes("protobuf.frame_size_maximum")?),
        connections_max: usize_of(raw.int("protobuf.connections_maximum")?).max(1),
        idle_timeout: raw.timeout("protobuf.idle_timeout"),
        request_timeout: raw.timeout("protobuf.request_timeout"),
        backlog: backlog(raw.int("protobuf.backlog")?),
    })
}

/// A count or size as a `usize`, saturating (a limit beyond the address
/// space is no limit).
fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn percent(n: u64) -> u8 {
    n.min(100) as u8
}

fn backlog(n: u64) -> u32 {
    n.clamp(1, u64::from(u32::MAX)) as u32
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::schema::{Kind, SETTINGS, env_name};

    /// A valid value for `name` other than `default`.
    fn other_value(name: &str, kind: Kind, default: &str) -> String {
        let special = match name {
            "nodename" => Some("other@example.com"),
            "ring_size" => Some("128"),
            "bitcask.merge.window.end" => Some("22"),
            _ => None,
        };
        if let Some(v) = special {
            return v.to_string();
        }
        match kind {
            Kind::Text => format!("{default}-other"),
            Kind::Int => (default.parse::<u64>().unwrap() + 1).to_string(),
            Kind::Bytes | Kind::BytesOr(_) => "3KB".to_string(),
            Kind::Duration | Kind::DurationOr(_) => "7s".to_string(),
            Kind::Flag => if default == "on" { "off" } else { "on" }.to_string(),
            Kind::Addr => "127.0.0.1:1".to_string(),
            Kind::Choice(words) => words.iter().find(|w| **w != default).unwrap().to_string(),
            Kind::Quorum => if default == "one" { "all" } else { "one" }.to_string(),
        }
    }

    /// Settings another one only matters with.
    fn context(name: &str) -> Vec<(String, String)> {
        let with = |k: &str, v: &str| vec![(env_name(k), v.to_string())];
        match name {
            n if n.starts_with("bitcask.merge.window.") => with("bitcask.merge.policy", "window"),
            "bitcask.sync.interval" => with("bitcask.sync.strategy", "interval"),
            _ => Vec::new(),
        }
    }

    fn typed(env: Vec<(String, String)>) -> String {
        format!("{:?}", Config::load(None, env).unwrap().settings())
    }

    #[test]
    fn every_setting_reaches_the_typed_settings() {
        // The comparison below means something only if equal settings print
        // alike.
        assert_eq!(typed(Vec::new()), typed(Vec::new()));
        for setting in SETTINGS {
            let base = context(setting.name);
            let value = other_value(setting.name, setting.kind, setting.default);
            let mut changed = base.clone();
            changed.push((env_name(setting.name), value.clone()));
            assert_ne!(
                typed(base),
                typed(changed),
                "{} = {value} left the settings as they were",
                setting.name
            );
        }
    }

    #[test]
    fn defaults_are_riaks() {
        let config = Config::load(None, Vec::new()).unwrap();
        let s = config.settings();
        assert_eq!(s.node.nodename.0, "eddy@127.0.0.1");
        assert_eq!(s.node.ring_size, 64);
        assert_eq!(s.node.delete_mode, eddy_kv::DeleteMode::DelayMs(3000));
        assert_eq!(s.storage.backend.name(), "bitcask");
        assert_eq!(s.bucket_defaults.n_val, 3);
        assert!(s.bucket_defaults.notfound_ok && !s.bucket_defaults.allow_mult);
        assert_eq!(s.bucket_defaults.pw, eddy_model::Quorum::Count(0));
        assert_eq!(s.commit_log.segment_bytes, 64 << 20);
        assert_eq!(s.storage.memory.max_memory_bytes, None);
        assert_eq!(s.storage.bitcask.expiry_secs, 0);
        assert_eq!(s.storage.bitcask.index_memory_max_bytes, Some(16 << 20));
        assert_eq!(
            s.http.request_timeout,
            Some(std::time::Duration::from_secs(60))
        );
        assert_eq!(
            s.protobuf.idle_timeout,
            Some(std::time::Duration::from_secs(600))
        );
        assert_eq!(s.objects.meta.usermeta.bytes, 64 << 10);
        assert_eq!(s.multi, eddy_model::limits::MultiLimits::default());
    }

    #[test]
    fn multi_settings_reach_their_limits() {
        let env = [
            ("multi.keys_max", "2"),
            ("multi.concurrency", "0"),
            ("multi.answer_bytes_max", "1KB"),
        ];
        let env = env.iter().map(|(k, v)| (env_name(k), v.to_string()));
        let config = Config::load(None, env).unwrap();
        let multi = config.settings().multi;
        assert_eq!(multi.keys_max, 2);
        assert_eq!(multi.concurrency, 1, "at least one batch in flight");
        assert_eq!(multi.answer_bytes_max, 1024);
    }

    #[test]
    fn cross_checks_name_the_setting() {
        let load = |k: &str, v: &str| {
            Config::load(None, vec![(env_name(k), v.to_string())])
                .unwrap_err()
                .to_string()
        };
        let err = load("buckets.default.n_val", "0");
        assert!(
            err.contains("buckets.default.n_val") && err.contains("at least 1"),
            "{err}"
        );
        let err = load("bitcask.merge.window.start", "24");
        assert!(
            err.contains("window.start") && err.contains("hour from 0 to 23"),
            "{err}"
        );
        let err = load("nodename", "eddy");
        assert!(
            err.contains("name@host") && err.contains("EDDY_NODENAME"),
            "{err}"
        );
        let err = load("ring_size", "2048");
        assert!(err.contains("power of two"), "{err}");
    }
}
