//! The background service every instance of a process shares: a fixed
//! set of threads however many instances are open, each instance's
//! interval syncs and hints still done, and a close that returns only
//! once nothing of the service runs on the instance any more.

use std::path::Path;
use std::time::{Duration, Instant};

use eddy_bitcask::{Bitcask, BitcaskConfig};
use eddy_storage::{Backend, SyncPolicy, WriteOptions};

fn status_value(b: &Bitcask, name: &str) -> u64 {
    let st = b.status().unwrap();
    let (_, v) = st.extra.iter().find(|(k, _)| k == name).unwrap();
    v.parse().unwrap()
}

/// Names of this process's threads that start with `prefix`.
fn threads_named(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn put(b: &Bitcask, i: u32) {
    let value = format!("value {i} ").repeat(20);
    b.put(
        b"b",
        &i.to_be_bytes(),
        value.as_bytes(),
        &[],
        WriteOptions::NO_SYNC,
    )
    .unwrap();
}

/// Data file ids in `dir` without a hint file beside them.
fn unhinted(dir: &Path, active: u32) -> Vec<u32> {
    let mut ids: Vec<u32> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".bitcask.data")?.parse().ok()
        })
        .filter(|id| *id != active && !dir.join(format!("{id:010}.bitcask.hint")).exists())
        .collect();
    ids.sort();
    ids
}

#[test]
fn many_instances_share_three_threads_and_each_gets_its_interval_syncs() {
    let dirs: Vec<_> = (0..48).map(|_| tempfile::tempdir().unwrap()).collect();
    let config = BitcaskConfig {
        sync: SyncPolicy::Interval,
        sync_interval: Duration::from_millis(5),
        merge_check_interval_ms: 10,
        ..BitcaskConfig::default()
    };
    let instances: Vec<_> = dirs
        .iter()
        .map(|d| Bitcask::open(d.path(), config.clone()).unwrap())
        .collect();
    let mut names = threads_named("bitcask-");
    names.sort();
    assert_eq!(names, ["bitcask-hint", "bitcask-merge", "bitcask-sync"]);
    for (i, b) in instances.iter().enumerate() {
        put(b, i as u32);
    }
    for b in &instances {
        wait_until("an interval sync of every instance", || {
            status_value(b, "syncs") > 0
        });
    }
    for b in instances {
        b.close().unwrap();
    }
}

/// Instances closed right after many rollovers, side by side, leave a
/// hint for every closed file: those the hint thread had not reached
/// are written by the close.
#[test]
fn close_writes_the_hints_still_queued() {
    let dirs: Vec<_> = (0..6).map(|_| tempfile::tempdir().unwrap()).collect();
    let config = BitcaskConfig {
        max_file_size_bytes: 4096,
        merge_check_interval_ms: 0,
        ..BitcaskConfig::default()
    };
    std::thread::scope(|s| {
        for dir in &dirs {
            let config = config.clone();
            s.spawn(move || {
                let b = Bitcask::open(dir.path(), config).unwrap();
                for i in 0..3000 {
                    put(&b, i);
                }
                b.close().unwrap();
            });
        }
    });
    for dir in &dirs {
        let b = Bitcask::open(dir.path(), config.clone()).unwrap();
        let report = b.open_report().clone();
        assert!(report.hints_used > 20, "{report:?}");
        drop(b);
        // The instance just opened and closed holds the highest id.
        let newest = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".bitcask.data")?.parse::<u32>().ok()
            })
            .max()
            .unwrap();
        assert_eq!(unhinted(dir.path(), newest), Vec::<u32>::new());
    }
}

/// Closing while the merge thread keeps merging the instance: the close
/// waits for (or stops) the merge, and a reopen finds every key. The
/// first round waits until the merge thread has merged, so the test also
/// shows that it merges; the others close at once, racing it.
#[test]
fn close_during_background_merges_loses_nothing() {
    for round in 0..8 {
        let dir = tempfile::tempdir().unwrap();
        let config = BitcaskConfig {
            max_file_size_bytes: 4096,
            frag_merge_trigger: 10,
            frag_threshold: 10,
            small_file_threshold: 0,
            merge_check_interval_ms: 1,
            ..BitcaskConfig::default()
        };
        let b = Bitcask::open(dir.path(), config.clone()).unwrap();
        for i in 0..2000u32 {
            put(&b, i % 100);
        }
        if round == 0 {
            // Unmerged, the 2000 puts fill about 110 files of 4 KiB.
            wait_until("the merge thread merges", || b.status().unwrap().files < 80);
        }
        b.close().unwrap();
        drop(b);
        let b = Bitcask::open(dir.path(), config).unwrap();
        for k in 0..100u32 {
            let want = format!("value {k} ").repeat(20);
            let got = b.get(b"b", &k.to_be_bytes()).unwrap();
            assert_eq!(got, Some(want.into_bytes()), "round {round} key {k}");
        }
    }
}
