//! The commit log out of descriptors or disk: failing to create its next
//! segment refuses writes with an error naming the resource (before the
//! backends are touched), never poisons the log, and writes resume by
//! themselves once segments can be created again, with nothing appended
//! lost (design note 008).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use eddy_model::KvError;
use eddy_storage::{Resource, StorageError};
use eddy_vnode::commitlog::{self, CommitLog, LogFigures, LogOptions, Op, Record};

fn record<'a>(key: &'a [u8], value: &'a [u8]) -> Record<'a> {
    Record {
        partition: 0,
        incarnation: commitlog::FIRST_INCARNATION,
        bucket: b"b",
        key,
        op: Op::Put { value },
    }
}

/// Appends as a vnode does (check, then append) until one is refused.
fn append_until_refused(log: &CommitLog, acked: &mut Vec<Vec<u8>>, value: &[u8]) -> KvError {
    for i in acked.len()..100_000 {
        let key = format!("k{i}").into_bytes();
        match log
            .check()
            .and_then(|()| log.append(&record(&key, value), None))
        {
            Ok(_) => acked.push(key),
            Err(e) => return e,
        }
    }
    panic!("no write was refused");
}

/// Waits (bounded) until the log takes writes again.
fn wait_for_writes(log: &CommitLog) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while log.check().is_err() {
        assert!(Instant::now() < deadline, "writes did not resume");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn failing_to_create_a_segment_refuses_writes_until_it_succeeds() {
    for (errno, resource) in [
        (libc::EMFILE, Resource::Descriptors),
        (libc::ENOSPC, Resource::Disk),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let opts = LogOptions {
            segment_bytes: 64 << 10,
            ..LogOptions::default()
        };
        // Checkpoints fail, so every segment stays for the replay below.
        let keep = Box::new(|| Err("kept for the test".to_string()));
        let log = CommitLog::open(dir.path(), 1, opts, keep, LogFigures::unregistered()).unwrap();
        log.inject_create_failure(Some(errno));
        let value = vec![7u8; 1000];
        let mut acked = Vec::new();

        let err = append_until_refused(&log, &mut acked, &value);
        match &err {
            KvError::Storage(StorageError::Exhausted {
                resource: r,
                detail,
            }) => {
                assert_eq!(*r, resource);
                assert!(detail.contains("cannot create segment"), "{detail}");
            }
            other => panic!("refused with {other:?}"),
        }
        assert!(acked.len() > 10, "writes went on while there was room");
        let why = log.refusing().expect("the log says it refuses writes");
        assert!(why.contains(resource.name()), "{why}");
        let counts = log.refusals();
        assert!(counts.descriptors + counts.disk >= 1, "{counts:?}");
        assert!(log.check().is_err(), "still refused while creation fails");

        log.inject_create_failure(None);
        wait_for_writes(&log);
        assert_eq!(log.refusing(), None);
        // Past several more segment ends: nothing was poisoned.
        let more = acked.len() + 300;
        while acked.len() < more {
            let key = format!("k{}", acked.len()).into_bytes();
            log.check().unwrap();
            log.append(&record(&key, &value), None).unwrap();
            acked.push(key);
        }
        log.close()
            .expect("the log closes cleanly: it was never poisoned");

        let mut replayed = BTreeSet::new();
        commitlog::recover(dir.path(), |r| {
            replayed.insert(r.key.to_vec());
            Ok(())
        })
        .unwrap();
        let missing: Vec<_> = acked.iter().filter(|k| !replayed.contains(*k)).collect();
        assert!(
            missing.is_empty(),
            "appended records lost: {}",
            missing.len()
        );
    }
}

#[test]
fn a_record_that_needs_a_segment_no_one_can_create_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LogOptions {
        segment_bytes: 64 << 10,
        ..LogOptions::default()
    };
    let log = CommitLog::open(
        dir.path(),
        1,
        opts,
        Box::new(|| Ok(())),
        LogFigures::unregistered(),
    )
    .unwrap();
    log.inject_create_failure(Some(libc::ENOSPC));
    // Larger than any segment: the append must create one of its own.
    let big = vec![1u8; 200 << 10];
    let err = log.append(&record(b"big", &big), None).unwrap_err();
    assert!(
        matches!(
            err,
            KvError::Storage(StorageError::Exhausted {
                resource: Resource::Disk,
                ..
            })
        ),
        "{err:?}"
    );
    log.inject_create_failure(None);
    wait_for_writes(&log);
    log.append(&record(b"big", &big), None).unwrap();
    log.close().unwrap();
}
