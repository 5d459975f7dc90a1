//! A vnode's change sequence against a model: random changes of a few
//! keys over small segments, reads from random places, syncs, clean
//! reopens, crashes (the unflushed tail lost) and compactions. After every step "changes since S" hands out, in
//! order, each key once at its latest change after S among those that
//! survived; and no number is ever handed out twice, crash or not.

use eddy_side::Change;
use eddy_side::sequence::{RESERVE, Sequence};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Record { key: u8, deleted: bool },
    Read,
    Sync,
    Reopen,
    Crash,
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..5, any::<bool>()).prop_map(|(key, deleted)| Op::Record { key, deleted }),
        2 => Just(Op::Read),
        1 => Just(Op::Sync),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
        1 => Just(Op::Compact),
    ]
}

/// Every change a reader may have seen: what survived, and whether it
/// was flushed (a crash loses the rest).
#[derive(Default)]
struct Model {
    changes: Vec<(Change, bool)>,
    /// Every number handed out, lost or not.
    handed: Vec<u64>,
    /// Bytes of the log's active segment (a segment rolls, synced, once
    /// it reached [`SEGMENT`]).
    active_bytes: u64,
}

/// Segments roll past this many bytes: every seventh change of the test's.
const SEGMENT: u64 = 150;
/// A frame of the test's changes: head 8, fixed 11, bucket 1, key 2.
const FRAME: u64 = 22;

impl Model {
    /// The answer to "changes since `after`": each key's last change after
    /// it, in order.
    fn since(&self, after: Option<u64>) -> Vec<Change> {
        let later: Vec<&Change> = self
            .changes
            .iter()
            .map(|(c, _)| c)
            .filter(|c| after.is_none_or(|a| c.seq > a))
            .collect();
        later
            .iter()
            .enumerate()
            .filter(|(i, c)| !later[i + 1..].iter().any(|d| d.key == c.key))
            .map(|(_, c)| (*c).clone())
            .collect()
    }

    fn flushed(&mut self) {
        self.changes.iter_mut().for_each(|(_, f)| *f = true);
    }

    /// A change appended: the segment rolls first if it is full.
    fn appended(&mut self, change: Change) {
        if self.active_bytes >= SEGMENT {
            self.flushed();
            self.active_bytes = 0;
        }
        self.active_bytes += FRAME;
        self.changes.push((change, false));
    }

    /// A crash: the unflushed changes (all in the active segment) are lost.
    fn crashed(&mut self) {
        let lost = self.changes.iter().filter(|(_, f)| !f).count() as u64;
        self.active_bytes -= lost * FRAME;
        self.changes.retain(|(_, flushed)| *flushed);
    }
}

fn read(seq: &Sequence, after: Option<u64>) -> Vec<Change> {
    let mut got = Vec::new();
    seq.changes_since(after, u64::MAX, &mut |c| {
        got.push(c.clone());
        true
    })
    .unwrap();
    got
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn changes_since_hands_out_each_key_once_at_its_latest(
        ops in prop::collection::vec(op(), 1..60),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 60),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("changes");
        let open = || Sequence::open_with(&path, SEGMENT).unwrap();
        let mut seq = open();
        let mut model = Model::default();
        for (step, op) in ops.into_iter().enumerate() {
            let op_checks = !matches!(op, Op::Record { .. });
            match op {
                Op::Record { key, deleted } => {
                    let n = seq.record(deleted, b"b", &[b'k', key]).unwrap();
                    prop_assert!(model.handed.iter().all(|h| *h < n), "{n} handed out again");
                    model.handed.push(n);
                    let change = Change { seq: n, deleted, bucket: b"b".to_vec(), key: vec![b'k', key] };
                    model.appended(change);
                }
                Op::Read => model.flushed(),
                Op::Sync => {
                    seq.sync().unwrap();
                    model.flushed();
                }
                Op::Reopen => {
                    drop(seq);
                    seq = open();
                    model.flushed();
                }
                Op::Crash => {
                    std::mem::forget(seq);
                    seq = open();
                    model.crashed();
                }
                Op::Compact => {
                    // Flushes what it reads from, as a read does.
                    if let Some((kept, dropped)) = seq.compact(2).unwrap() {
                        prop_assert!(kept + dropped > 0);
                        model.flushed();
                    }
                }
            }
            if !op_checks {
                continue;
            }
            // Reading flushes: the model's changes are all flushed now.
            let all = read(&seq, None);
            model.flushed();
            prop_assert_eq!(&all, &model.since(None), "step {}", step);
            if !model.changes.is_empty() {
                let i = picks[step].index(model.changes.len());
                let after = Some(model.changes[i].0.seq);
                prop_assert_eq!(read(&seq, after), model.since(after), "step {}", step);
            }
        }
    }
}

#[test]
fn a_window_covers_what_it_read_and_the_next_goes_on_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let seq = Sequence::open(dir.path()).unwrap();
    for k in [1u8, 2, 1, 3, 4, 2] {
        seq.record(false, b"b", &[k]).unwrap();
    }
    let mut got = Vec::new();
    let covered = seq
        .changes_since(None, 3, &mut |c| {
            got.push((c.seq, c.key[0]));
            true
        })
        .unwrap();
    // The first three changes: key 1 at its second change, key 2 once.
    assert_eq!(got, [(2, 2), (3, 1)]);
    assert_eq!(covered.upto, Some(3));
    got.clear();
    let covered = seq
        .changes_since(covered.upto, 10, &mut |c| {
            got.push((c.seq, c.key[0]));
            true
        })
        .unwrap();
    assert_eq!(got, [(4, 3), (5, 4), (6, 2)]);
    assert_eq!(covered.upto, Some(6));
}

#[test]
fn a_reader_that_stops_resumes_after_the_last_change_it_took() {
    let dir = tempfile::tempdir().unwrap();
    let seq = Sequence::open(dir.path()).unwrap();
    for k in 1u8..=4 {
        seq.record(false, b"b", &[k]).unwrap();
    }
    let covered = seq.changes_since(None, 100, &mut |c| c.seq < 2).unwrap();
    assert_eq!(covered.upto, Some(2));
}

#[test]
fn an_open_goes_on_above_the_reservation_and_a_sync_renews_it() {
    let dir = tempfile::tempdir().unwrap();
    let seq = Sequence::open(dir.path()).unwrap();
    assert_eq!(seq.record(false, b"b", b"k").unwrap(), 1);
    std::mem::forget(seq);
    // The crash lost change 1 (never flushed): numbers go on above what
    // the first open reserved, which a reader may have seen.
    let seq = Sequence::open(dir.path()).unwrap();
    assert_eq!(seq.record(false, b"b", b"k").unwrap(), RESERVE + 1);
    drop(seq);
    let seq = Sequence::open(dir.path()).unwrap();
    assert_eq!(seq.record(false, b"b", b"k").unwrap(), 2 * RESERVE + 1);
}

#[test]
fn a_damaged_reservation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(Sequence::open(dir.path()).unwrap());
    let file = dir.path().join("reserved");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[3] ^= 0x10;
    std::fs::write(&file, bytes).unwrap();
    let e = Sequence::open(dir.path()).err().expect("refused");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
}
