//! Turning the [`Schema`] serde read into [`Settings`]: each value is
//! already of its type and within its rules ([`super::values`]), so this
//! only arranges them into the structs the node's parts take, with the
//! floors a value may not go below (a commit log segment of at least
//! 1 MiB, at least one connection).

use std::time::Duration;

use eddy_bitcask::{BitcaskConfig, MergeWindow};
use eddy_lsm::LsmConfig;
use eddy_model::limits::{Limit, MetaLimits, MultiLimits};
use eddy_model::props::BucketProps;
use eddy_query::js::JsLimits;
use eddy_storage::memory::MemoryConfig;
use eddy_vnode::commitlog::{LogOptions, SyncPolicy};

use super::schema::{CommitLogSync, MergePolicy, Schema};
use super::settings::*;
use super::values::{Dur, Size};

impl From<&Schema> for Settings {
    fn from(s: &Schema) -> Settings {
        Settings {
            node: NodeSettings {
                nodename: s.nodename.0.clone(),
                platform_data_dir: s.platform_data_dir.clone().into(),
                ring_size: s.ring_size.0,
                delete_mode: s.delete_mode.0,
                partition_repair: s.partition_repair,
            },
            listeners: Listeners {
                http: s.listener_http_internal.0,
                protobuf: s.listener_protobuf_internal.0,
                cluster: s.listener_cluster_internal.0,
            },
            cluster: ClusterSettings {
                cookie: s.distributed_cookie.clone(),
                transfer_limit: s.transfer_limit,
            },
            storage: StorageSettings {
                backend: s.storage_backend,
                bitcask: bitcask(s),
                lsm: lsm(s),
                memory: memory(s),
            },
            commit_log: commit_log(s),
            bucket_defaults: bucket_defaults(s),
            objects: objects(s),
            multi: MultiLimits {
                keys_max: usize_of(s.multi_keys_max),
                concurrency: usize_of(s.multi_concurrency).max(1),
                answer_bytes_max: bytes(s.multi_answer_bytes_max),
                ..MultiLimits::default()
            },
            datatype_cache_bytes: bytes(s.datatypes_cache_size),
            http: HttpSettings {
                body_bytes_max: bytes(s.http_body_size_maximum),
                connections_max: usize_of(s.http_connections_maximum).max(1),
                request_timeout: s.http_request_timeout.map(|d| d.0),
                backlog: backlog(s.http_backlog),
            },
            protobuf: PbSettings {
                frame_bytes_max: bytes(s.protobuf_frame_size_maximum),
                connections_max: usize_of(s.protobuf_connections_maximum).max(1),
                idle_timeout: s.protobuf_idle_timeout.map(|d| d.0),
                request_timeout: s.protobuf_request_timeout.map(|d| d.0),
                backlog: backlog(s.protobuf_backlog),
            },
            request_budget: RequestBudget {
                bytes_max: bytes(s.request_budget_maximum),
                wait: s.request_budget_wait.0,
            },
            javascript: javascript(s),
            log: LogSettings {
                level: s.log_level,
                console: s.log_console,
                file: s.log_console_file.clone().into(),
                size_bytes: s.log_console_size.0,
                keep: s.log_console_rotation_keep,
            },
        }
    }
}

fn javascript(s: &Schema) -> Option<JsLimits> {
    if !s.javascript_enabled {
        return None;
    }
    let defaults = JsLimits::default();
    let threads = match usize_of(s.javascript_threads) {
        0 => defaults.threads,
        n => n,
    };
    Some(JsLimits {
        threads,
        memory_bytes: bytes(s.javascript_heap_maximum).max(1 << 20),
        call_timeout: s.javascript_call_timeout.0,
        queue: defaults.queue,
    })
}

fn bitcask(s: &Schema) -> BitcaskConfig {
    let merge_window = match s.bitcask_merge_policy {
        MergePolicy::Always => MergeWindow::Always,
        MergePolicy::Never => MergeWindow::Never,
        MergePolicy::Window => MergeWindow::Hours {
            start: s.bitcask_merge_window_start.0,
            end: s.bitcask_merge_window_end.0,
        },
    };
    BitcaskConfig {
        max_file_size_bytes: s.bitcask_max_file_size.0,
        // No sync setting: the node writes its backends without syncing
        // and the commit log owns durability (`commit_log.sync.*`); the
        // backend syncs at checkpoints. BitcaskConfig's default is `None`.
        expiry_secs: expiry_secs(s.bitcask_expiry),
        compression: s.bitcask_compression,
        frag_merge_trigger: percent(s.bitcask_merge_triggers_fragmentation),
        dead_bytes_merge_trigger: s.bitcask_merge_triggers_dead_bytes.0,
        frag_threshold: percent(s.bitcask_merge_thresholds_fragmentation),
        dead_bytes_threshold: s.bitcask_merge_thresholds_dead_bytes.0,
        small_file_threshold: s.bitcask_merge_thresholds_small_file.0,
        merge_window,
        ..BitcaskConfig::default()
    }
}

fn lsm(s: &Schema) -> LsmConfig {
    let threshold = s.lsm_kv_separation_threshold.0;
    LsmConfig {
        expiry_secs: expiry_secs(s.lsm_expiry),
        compression: s.lsm_compression,
        kv_separation_threshold_bytes: (threshold > 0)
            .then(|| threshold.min(u64::from(u32::MAX)) as u32),
        cache_size_bytes: s.lsm_cache_size.0,
        ..LsmConfig::default()
    }
}

fn memory(s: &Schema) -> MemoryConfig {
    MemoryConfig {
        max_memory_bytes: s.memory_backend_max_memory_per_vnode.map(|b| b.0),
        expiry_secs: expiry_secs(s.memory_backend_ttl),
        ..MemoryConfig::default()
    }
}

fn commit_log(s: &Schema) -> LogOptions {
    let sync = match s.commit_log_sync_strategy {
        CommitLogSync::None => SyncPolicy::None,
        CommitLogSync::Interval => SyncPolicy::Interval,
        CommitLogSync::OSync => SyncPolicy::OSync,
    };
    LogOptions {
        // Below 1 MiB a segment would roll (and checkpoint) every few writes.
        segment_bytes: s.commit_log_segment_size.0.max(1 << 20),
        sync,
        sync_interval: s.commit_log_sync_interval.0.max(Duration::from_millis(1)),
        ..LogOptions::default()
    }
}

fn bucket_defaults(s: &Schema) -> BucketProps {
    BucketProps {
        n_val: s.buckets_default_n_val.0,
        r: s.buckets_default_r.0,
        w: s.buckets_default_w.0,
        dw: s.buckets_default_dw.0,
        rw: s.buckets_default_rw.0,
        pr: s.buckets_default_pr.0,
        pw: s.buckets_default_pw.0,
        notfound_ok: s.buckets_default_notfound_ok,
        basic_quorum: s.buckets_default_basic_quorum,
        allow_mult: s.buckets_default_allow_mult,
        last_write_wins: s.buckets_default_last_write_wins,
        ..BucketProps::default()
    }
}

fn objects(s: &Schema) -> ObjectLimits {
    let limit = |entries: u64, size: Size| Limit {
        entries: usize_of(entries),
        bytes: bytes(size),
    };
    ObjectLimits {
        size_warn_bytes: bytes(s.object_size_warning_threshold),
        size_max_bytes: bytes(s.object_size_maximum),
        siblings_warn: usize_of(s.object_siblings_warning_threshold),
        siblings_max: usize_of(s.object_siblings_maximum),
        meta: MetaLimits {
            usermeta: limit(
                s.object_usermeta_entries_maximum,
                s.object_usermeta_size_maximum,
            ),
            links: limit(s.object_links_entries_maximum, s.object_links_size_maximum),
            index: limit(s.object_index_entries_maximum, s.object_index_size_maximum),
        },
    }
}

/// A count as a `usize`, saturating (a limit beyond the address space is
/// no limit).
fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// A size as a `usize`, saturating.
fn bytes(size: Size) -> usize {
    usize_of(size.0)
}

/// A time to live in whole seconds; `off` is 0 (none).
fn expiry_secs(ttl: Option<Dur>) -> u64 {
    ttl.map_or(0, |d| d.0.as_secs())
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
        // The commit log owns durability; the backends never sync alone.
        assert!(matches!(
            s.storage.bitcask.sync,
            eddy_storage::SyncPolicy::None
        ));
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
