//! The change log against a model: random appends, flushes, syncs, clean
//! reopens and crashes (the unflushed buffer lost) over small segments,
//! read back whole and from random sequences after every step; torn tails
//! cut at every length; a flipped byte cut from the active segment and
//! refused in a closed one.

use std::fs;
use std::path::{Path, PathBuf};

use eddy_side::{Change, ChangeLog};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Append { keys: Vec<u8>, deleted: bool },
    Flush,
    Sync,
    Reopen,
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (prop::collection::vec(any::<u8>(), 1..6), any::<bool>())
            .prop_map(|(keys, deleted)| Op::Append { keys, deleted }),
        2 => Just(Op::Flush),
        1 => Just(Op::Sync),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

fn read_all(log: &ChangeLog, after: Option<u64>) -> Vec<Change> {
    let mut got = Vec::new();
    log.read_since(after, &mut |c| {
        got.push(c);
        true
    })
    .unwrap();
    got
}

fn change(seq: u64, deleted: bool, k: u8) -> Change {
    Change {
        seq,
        deleted,
        bucket: format!("b{}", k % 3).into_bytes(),
        key: vec![b'k', k],
    }
}

fn append(log: &mut ChangeLog, c: &Change) {
    log.append(c.seq, c.deleted, &c.bucket, &c.key).unwrap();
}

const SEGMENT: u64 = 120;

proptest! {
    #[test]
    fn the_log_reads_back_what_reached_it(
        ops in prop::collection::vec(op(), 1..40),
        gap in 1u64..4,
        probe in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut log = ChangeLog::open(dir.path(), SEGMENT).unwrap();
        // What readers see, and what is appended but still buffered.
        let (mut flushed, mut buffered): (Vec<Change>, Vec<Change>) = (Vec::new(), Vec::new());
        for op in ops {
            match op {
                Op::Append { keys, deleted } => {
                    for k in keys {
                        let seq = log.last_seq().map_or(0, |s| s + gap);
                        let c = change(seq, deleted, k);
                        append(&mut log, &c);
                        buffered.push(c);
                        // A segment that rolls is flushed first.
                        let readable = buffered.iter().take_while(|c| Some(c.seq) <= log.flushed_seq());
                        let n = readable.count();
                        flushed.extend(buffered.drain(..n));
                    }
                }
                Op::Flush => {
                    log.flush().unwrap();
                    flushed.append(&mut buffered);
                }
                Op::Sync => {
                    log.sync().unwrap();
                    flushed.append(&mut buffered);
                }
                Op::Reopen => {
                    drop(log);
                    flushed.append(&mut buffered);
                    log = ChangeLog::open(dir.path(), SEGMENT).unwrap();
                    prop_assert_eq!(log.cut_at_open(), 0);
                }
                Op::Crash => {
                    // The process dies: its buffer never reaches the file.
                    std::mem::forget(log);
                    buffered.clear();
                    log = ChangeLog::open(dir.path(), SEGMENT).unwrap();
                }
            }
            prop_assert_eq!(read_all(&log, None), flushed.clone());
            if let Some(last) = flushed.last() {
                prop_assert!(log.last_seq() >= Some(last.seq));
                let after = probe % (last.seq + 2);
                let want: Vec<Change> =
                    flushed.iter().filter(|c| c.seq > after).cloned().collect();
                prop_assert_eq!(read_all(&log, Some(after)), want);
            }
        }
    }
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    all.sort();
    all
}

#[test]
fn a_torn_tail_is_cut_at_every_length_and_the_log_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = ChangeLog::open(dir.path(), 1 << 20).unwrap();
    let all: Vec<Change> = (0..5).map(|i| change(i, i == 3, i as u8)).collect();
    all.iter().for_each(|c| append(&mut log, c));
    log.sync().unwrap();
    drop(log);
    let file = segments(dir.path()).pop().unwrap();
    let bytes = fs::read(&file).unwrap();
    let last_frame = 8 + 11 + 2 + 2; // head, fixed part, "b1", key
    for len in (bytes.len() - last_frame..bytes.len()).rev() {
        fs::write(&file, &bytes[..len]).unwrap();
        let mut log = ChangeLog::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(log.cut_at_open(), (len - (bytes.len() - last_frame)) as u64);
        assert_eq!(read_all(&log, None), all[..4], "cut to {len} bytes");
        assert_eq!(log.last_seq(), Some(3));
        let next = change(4, false, 9);
        append(&mut log, &next);
        log.flush().unwrap();
        assert_eq!(read_all(&log, Some(3)), [next]);
    }
}

#[test]
fn a_flipped_byte_is_cut_from_the_active_segment_and_refused_in_a_closed_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = ChangeLog::open(dir.path(), 60).unwrap();
    let all: Vec<Change> = (0..8).map(|i| change(i * 2, false, i as u8)).collect();
    all.iter().for_each(|c| append(&mut log, c));
    log.sync().unwrap();
    drop(log);
    let files = segments(dir.path());
    assert!(files.len() >= 3, "{files:?}");
    // The active segment: a bad frame is where a crash tore it.
    let active = files.last().unwrap();
    let mut bytes = fs::read(active).unwrap();
    bytes[10] ^= 0x40;
    fs::write(active, &bytes).unwrap();
    let log = ChangeLog::open(dir.path(), 60).unwrap();
    assert!(log.cut_at_open() > 0);
    let got = read_all(&log, None);
    assert!(all.starts_with(&got) && got.len() < all.len());
    drop(log);
    // A closed segment: an error, never a change read wrong.
    let mut bytes = fs::read(&files[0]).unwrap();
    bytes[12] ^= 0x01;
    fs::write(&files[0], &bytes).unwrap();
    let log = ChangeLog::open(dir.path(), 60).unwrap();
    let mut seen = Vec::new();
    let err = log
        .read_since(None, &mut |c| {
            seen.push(c);
            true
        })
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("checksum"), "{err}");
    assert!(all.starts_with(&seen));
}

#[test]
fn a_sequence_that_does_not_follow_and_an_oversized_bucket_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = ChangeLog::open(dir.path(), 1 << 20).unwrap();
    log.append(5, false, b"b", b"k").unwrap();
    for seq in [5, 4] {
        let err = log.append(seq, false, b"b", b"k").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    }
    let long = vec![b'b'; 70_000];
    assert!(log.append(6, false, &long, b"k").is_err());
    log.flush().unwrap();
    assert_eq!(read_all(&log, None), [change_of(5)]);
}

fn change_of(seq: u64) -> Change {
    Change {
        seq,
        deleted: false,
        bucket: b"b".to_vec(),
        key: b"k".to_vec(),
    }
}

/// A log of 20 changes over segments of 120 bytes (at least three
/// closed), of keys 0–2.
fn log_of_four_segments(dir: &Path) -> ChangeLog {
    let mut log = ChangeLog::open(dir, SEGMENT).unwrap();
    for seq in 1..=20u64 {
        append(&mut log, &change(seq, false, (seq % 3) as u8));
    }
    log.flush().unwrap();
    assert!(segments(dir).len() >= 4);
    log
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// What the test's compaction keeps of the closed segments.
fn keep_late(c: &Change) -> bool {
    c.seq > 15
}

#[test]
fn a_compaction_keeps_what_it_picks_and_a_crash_at_any_step_is_finished_or_undone() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live");
    let mut log = log_of_four_segments(&live);
    let before = read_all(&log, None);
    let pre = dir.path().join("pre");
    copy_dir(&live, &pre);
    let closed = log.closed_segments(2).unwrap();
    let written = closed.write(&mut keep_late).unwrap();
    // A crash before the new segment took the first's name: the old ones stand.
    let undone = dir.path().join("undone");
    copy_dir(&live, &undone);
    fs::write(undone.join("compacting"), b"anything").unwrap();
    let reopened = ChangeLog::open(&undone, SEGMENT).unwrap();
    assert_eq!(read_all(&reopened, None), before);
    assert!(!undone.join("compacting.tmp").exists());
    log.compact(&closed, written).unwrap();
    let after = read_all(&log, None);
    let active = segments(&pre).last().unwrap().clone();
    let stem = active.file_stem().unwrap().to_str().unwrap();
    let active_first = u64::from_str_radix(stem, 16).unwrap();
    let want: Vec<Change> = before
        .iter()
        .filter(|c| keep_late(c) || c.seq >= active_first)
        .cloned()
        .collect();
    assert_eq!(
        after, want,
        "the closed segments keep what the compaction picked"
    );
    assert!(after.len() < before.len());
    assert_eq!(
        segments(&live).len(),
        2,
        "one compacted segment and the active one"
    );
    // A crash after the rename, before the old segments went: an open
    // deletes the ones the marker names.
    let finished = dir.path().join("finished");
    copy_dir(&pre, &finished);
    let names: Vec<PathBuf> = segments(&pre);
    let first = names[0].file_name().unwrap();
    fs::copy(live.join(first), finished.join(first)).unwrap();
    let doomed: Vec<String> = names[1..names.len() - 1]
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    fs::write(finished.join("compacting"), doomed.join("\n")).unwrap();
    let reopened = ChangeLog::open(&finished, SEGMENT).unwrap();
    assert_eq!(read_all(&reopened, None), after);
    assert!(!finished.join("compacting").exists());
    // Reading a log a crash left with changes twice is Sequence's concern;
    // the compacted log goes on taking changes.
    append(&mut log, &change(21, true, 1));
    log.flush().unwrap();
    assert_eq!(read_all(&log, Some(20)), [change(21, true, 1)]);
}

/// Reads from any sequence start near it (the segments' marks) and still
/// hand out exactly the changes after it: over segments of many marks,
/// after a reopen (the active segment's marks rebuilt, the closed ones
/// read from their start) and after a compaction (the new segment marked).
#[test]
fn a_read_from_anywhere_hands_out_exactly_the_changes_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = ChangeLog::open(dir.path(), 300 << 10).unwrap();
    for seq in 1..=40_000u64 {
        append(&mut log, &change(seq * 2, seq % 5 == 0, (seq % 251) as u8));
    }
    log.flush().unwrap();
    let check = |log: &ChangeLog, what: &str| {
        let all = read_all(log, None);
        for after in (0..=80_002u64).step_by(997).chain([79_999, 80_000, 1, 2]) {
            let want: Vec<&Change> = all.iter().filter(|c| c.seq > after).collect();
            let got = read_all(log, Some(after));
            assert_eq!(
                got.iter().collect::<Vec<_>>(),
                want,
                "{what}: after {after}"
            );
        }
    };
    check(&log, "written");
    drop(log);
    let mut log = ChangeLog::open(dir.path(), 300 << 10).unwrap();
    check(&log, "reopened");
    let closed = log.closed_segments(2).unwrap();
    let written = closed.write(&mut |c| c.seq % 3 != 0).unwrap();
    log.compact(&closed, written).unwrap();
    check(&log, "compacted");
}
