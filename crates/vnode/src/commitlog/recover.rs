//! Replay at start: every record left in the log's segments, oldest first,
//! handed to the caller to apply to its backend, unless its vnode
//! incarnation is no longer live.
//!
//! Invariants:
//! - only whole, intact records are applied, in log order; a torn tail (a
//!   crash mid-write) ends a segment quietly, damage ends it with a report;
//! - no record of an incarnation that a drop record anywhere in the log
//!   names is applied, whether it comes before or after the drop (a first
//!   pass collects the drops), and none that the caller's `is_live` refuses:
//!   a vnode dropped after handoff never gets its data back, and a
//!   partition created again later never receives its earlier life's
//!   records;
//! - no record of an incarnation that lies before the furthest position a
//!   synced mark of that incarnation names is applied (the first pass
//!   collects those too): its backend held it when it synced, and may
//!   since hold newer writes that have no record (a handoff's merges);
//! - segments stay on disk until the caller has synced the backends and
//!   calls [`Recovered::remove`].

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::record::{Dropped, Entry, Op, Position, Record};
use super::segment::{self, End};

/// What replay found.
#[derive(Debug, Default)]
pub struct Recovered {
    dir: PathBuf,
    /// Segments replayed, oldest first.
    pub segments: Vec<u64>,
    /// Records applied.
    pub records: u64,
    /// Records not applied because their incarnation was dropped or is not
    /// live, or because a synced mark covers them.
    pub skipped: u64,
    /// The incarnations the log's drop records name. The caller finishes
    /// destroying any whose data is still there before [`Recovered::remove`]
    /// deletes the records that say so.
    pub dropped: BTreeSet<Dropped>,
    /// Segments that ended in damage: which, where and why.
    pub damaged: Vec<String>,
}

impl Recovered {
    /// The sequence number the next log starts at.
    pub fn next_seq(&self) -> u64 {
        self.segments.last().map_or(0, |s| s + 1)
    }

    /// Deletes the replayed segments. Call once the backends they were
    /// applied to have synced, and the incarnations in
    /// [`Recovered::dropped`] are destroyed.
    pub fn remove(&self) -> std::io::Result<()> {
        for seq in &self.segments {
            std::fs::remove_file(segment::path(&self.dir, *seq))?;
        }
        Ok(())
    }
}

/// Why replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error("commit log {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("commit log segment {seq}: applying a record: {reason}")]
    Apply { seq: u64, reason: String },
}

/// Applies every record in `dir`'s segments with `apply`, oldest first,
/// but those of incarnations the log says were dropped. For a node whose
/// every incarnation with records is live (each partition in its first
/// life); otherwise [`recover_live`]. A missing directory holds no records.
pub fn recover(
    dir: &Path,
    apply: impl FnMut(&Record<'_>) -> Result<(), String>,
) -> Result<Recovered, RecoverError> {
    recover_live(dir, |_, _| true, apply)
}

/// Applies every record in `dir`'s segments with `apply`, oldest first,
/// but those of incarnations the log says were dropped and those for which
/// `is_live(partition, incarnation)` is false (the node has no open vnode
/// of that incarnation: its data was destroyed, or the partition lives on
/// in a later incarnation). A missing directory holds no records.
pub fn recover_live(
    dir: &Path,
    is_live: impl Fn(u32, u64) -> bool,
    mut apply: impl FnMut(&Record<'_>) -> Result<(), String>,
) -> Result<Recovered, RecoverError> {
    let mut out = Recovered {
        dir: dir.to_path_buf(),
        ..Recovered::default()
    };
    if !dir.exists() {
        return Ok(out);
    }
    super::retire::remove_leftovers(dir).map_err(io(dir))?;
    let seqs = segment::list(dir).map_err(io(dir))?;
    // For each incarnation with a synced mark, the furthest position one names.
    let mut synced: HashMap<Dropped, Position> = HashMap::new();
    for seq in &seqs {
        let bytes = read_segment(dir, *seq)?;
        scan(&bytes, |_, entry| match entry {
            Entry::Dropped(d) => {
                out.dropped.insert(d);
            }
            Entry::Synced(m) => {
                let of = Dropped {
                    partition: m.partition,
                    incarnation: m.incarnation,
                };
                let upto = synced.entry(of).or_insert(m.upto);
                *upto = (*upto).max(m.upto);
            }
            Entry::Record(_) => {}
        });
    }
    for seq in seqs {
        let bytes = read_segment(dir, seq)?;
        let mut failure = None;
        let end = scan(&bytes, |offset, entry| {
            let Entry::Record(record) = entry else { return };
            if failure.is_some() {
                return;
            }
            let of = Dropped {
                partition: record.partition,
                incarnation: record.incarnation,
            };
            let at = Position {
                seq,
                offset: offset as u64,
            };
            let covered = synced.get(&of).is_some_and(|upto| at < *upto);
            if covered
                || out.dropped.contains(&of)
                || !is_live(record.partition, record.incarnation)
            {
                out.skipped += 1;
                return;
            }
            match apply(&record) {
                Ok(()) => out.records += 1,
                Err(reason) => failure = Some(reason),
            }
        });
        if let Some(reason) = failure {
            return Err(RecoverError::Apply { seq, reason });
        }
        if let End::Damaged { offset, reason } = end {
            let text = format!("segment {seq}: {reason} at byte {offset}, rest skipped");
            tracing::error!("commit log: {text}");
            out.damaged.push(text);
        }
        out.segments.push(seq);
    }
    Ok(out)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RecoverError + use<> {
    let path = path.to_path_buf();
    move |source| RecoverError::Io { path, source }
}

fn read_segment(dir: &Path, seq: u64) -> Result<Vec<u8>, RecoverError> {
    let path = segment::path(dir, seq);
    std::fs::read(&path).map_err(io(&path))
}

/// Calls `f` on each entry of one segment's bytes with put-same records
/// resolved to puts, up to its clean end or its first damage (which a
/// put-same that refers to no put of its key is); says how it ended.
fn scan<'a>(bytes: &'a [u8], mut f: impl FnMut(usize, Entry<'a>)) -> End {
    let mut resolver = Resolver::new();
    let end = segment::read(bytes, |offset, entry| {
        if resolver.damage.is_some() {
            return;
        }
        match entry {
            Entry::Record(record) => {
                if let Some(record) = resolver.resolve(offset, record) {
                    f(offset, Entry::Record(record));
                }
            }
            other => f(offset, other),
        }
    });
    match resolver.damage {
        Some((offset, reason)) => End::Damaged { offset, reason },
        None => end,
    }
}

/// Turns put-same records of one segment back into puts of the value they
/// refer to.
struct Resolver<'a> {
    /// The put records read so far, by offset, ascending.
    puts: Vec<(usize, Record<'a>)>,
    /// Where a reference could not be resolved, and why: the segment's
    /// records end there.
    damage: Option<(usize, &'static str)>,
}

impl<'a> Resolver<'a> {
    fn new() -> Self {
        Resolver {
            puts: Vec::new(),
            damage: None,
        }
    }

    /// The record at `offset` with its value in place, or `None` (and
    /// `damage` set) when it refers to no earlier put of its key.
    fn resolve(&mut self, offset: usize, record: Record<'a>) -> Option<Record<'a>> {
        let Op::PutSame { back } = record.op else {
            if matches!(record.op, Op::Put { .. }) {
                self.puts.push((offset, record.clone()));
            }
            return Some(record);
        };
        let value = usize::try_from(back)
            .ok()
            .and_then(|back| offset.checked_sub(back))
            .and_then(|at| self.puts.binary_search_by_key(&at, |(o, _)| *o).ok())
            .map(|i| &self.puts[i].1)
            .filter(|put| put.bucket == record.bucket && put.key == record.key)
            .and_then(|put| match put.op {
                Op::Put { value } => Some(value),
                _ => None,
            });
        let Some(value) = value else {
            self.damage = Some((offset, "put-same record refers to no put of its key"));
            return None;
        };
        Some(Record {
            op: Op::Put { value },
            ..record
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put<'a>(key: &'a [u8], value: &'a [u8]) -> Record<'a> {
        Record {
            partition: 0,
            incarnation: crate::commitlog::FIRST_INCARNATION,
            bucket: b"b",
            key,
            op: Op::Put { value },
        }
    }

    /// Replays one segment made of `records`; what was applied, and damage.
    fn replay(records: &[Record<'_>]) -> (Vec<String>, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = segment::HEADER.to_vec();
        records.iter().for_each(|r| r.encode_into(&mut bytes));
        std::fs::write(segment::path(dir.path(), 3), &bytes).unwrap();
        let mut applied = Vec::new();
        let out = recover(dir.path(), |r| {
            applied.push(format!("{}={:?}", r.partition, r.op));
            Ok(())
        })
        .unwrap();
        (applied, out.damaged)
    }

    fn frame_len(r: &Record<'_>) -> u64 {
        let mut b = Vec::new();
        r.encode_into(&mut b);
        b.len() as u64
    }

    #[test]
    fn a_put_same_takes_the_value_of_the_put_it_refers_to() {
        let first = put(b"k", b"value");
        let back = frame_len(&first) + frame_len(&put(b"x", b"other"));
        let same = Record {
            partition: 9,
            op: Op::PutSame { back },
            ..put(b"k", b"")
        };
        let (applied, damaged) = replay(&[first, put(b"x", b"other"), same]);
        assert_eq!(applied.len(), 3);
        assert_eq!(applied[2], format!("9={:?}", Op::Put { value: b"value" }));
        assert!(damaged.is_empty());
    }

    #[test]
    fn a_synced_mark_skips_its_incarnations_records_before_where_it_points() {
        use crate::commitlog::record::Synced;
        let dir = tempfile::tempdir().unwrap();
        let other = Record {
            partition: 1,
            ..put(b"k", b"other partition")
        };
        let later = Record {
            incarnation: 2,
            ..put(b"k", b"later incarnation")
        };
        let mut first = segment::HEADER.to_vec();
        put(b"k", b"old").encode_into(&mut first);
        other.encode_into(&mut first);
        later.encode_into(&mut first);
        let upto = Position {
            seq: 3,
            offset: first.len() as u64,
        };
        put(b"k", b"after the position").encode_into(&mut first);
        std::fs::write(segment::path(dir.path(), 3), &first).unwrap();
        // The mark comes in a later segment, as it may: it is appended after
        // the backend synced, and the log may have rolled meanwhile.
        let mut second = segment::HEADER.to_vec();
        put(b"k", b"newest").encode_into(&mut second);
        let mark = Synced {
            partition: 0,
            incarnation: crate::commitlog::FIRST_INCARNATION,
            upto,
        };
        mark.encode_into(&mut second);
        std::fs::write(segment::path(dir.path(), 4), &second).unwrap();

        let mut applied = Vec::new();
        let out = recover(dir.path(), |r| {
            let Op::Put { value } = r.op else { panic!() };
            applied.push(String::from_utf8(value.to_vec()).unwrap());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            applied,
            [
                "other partition",
                "later incarnation",
                "after the position",
                "newest"
            ]
        );
        assert_eq!(out.skipped, 1, "only the old put of the marked incarnation");
    }

    #[test]
    fn a_put_same_that_refers_to_no_put_of_its_key_ends_the_segment() {
        let first = put(b"k", b"value");
        let len = frame_len(&first);
        let cases: [(&[u8], u64); 3] = [(b"other", len), (b"k", len - 1), (b"k", len + 1)];
        for (key, back) in cases {
            let bad = Record {
                op: Op::PutSame { back },
                ..put(key, b"")
            };
            let (applied, damaged) = replay(&[first.clone(), bad, put(b"z", b"after")]);
            assert_eq!(applied.len(), 1, "{key:?} {back}: only the put before");
            assert_eq!(damaged.len(), 1, "{key:?} {back}: reported");
        }
    }
}
