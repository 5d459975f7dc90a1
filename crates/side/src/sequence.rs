//! A vnode incarnation's change sequence (design note 027, "The change
//! sequence"): every change the vnode applies takes the next number and
//! goes to the incarnation's change log ([`ChangeLog`]) as (sequence,
//! deleted, bucket, key); "changes since S" reads the log from S and hands
//! out each key once, at its latest change in what it read.
//!
//! A reader sees the changes the log flushed, and a power loss may take
//! an unsynced tail a reader already saw. So no number is handed out
//! before a **reservation** above it is durable (the file `reserved`):
//! an open goes on above the reservation, never handing out again a
//! number a reader may hold. A reservation covers [`RESERVE`] numbers;
//! [`Sequence::sync`] (a checkpoint) renews it before it runs out, so a
//! write waits for one only when a vnode took half a reservation between
//! two checkpoints.
//!
//! The log is compacted ([`Sequence::compact`]): its closed segments are
//! rewritten keeping each key's latest change, so it holds about one
//! change per key ever written, plus the segments since.
//!
//! Invariants: sequences strictly increase and are never reused by an
//! incarnation; every number handed out is at most the durable
//! reservation; a change is appended under the caller's key lock, after
//! its object reached the backend, so a reader that finds a change finds
//! that object or a later one.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::changelog::{Change, ChangeLog, LogView, SEGMENT_BYTES_DEFAULT, sync_dir, write_synced};

/// Numbers one reservation covers.
pub const RESERVE: u64 = 1 << 20;
const RESERVED_FILE: &str = "reserved";
/// Present once the log holds a change for each object the vnode had
/// when its log began ([`Sequence::mark_seeded`]).
const SEEDED_FILE: &str = "seeded";
/// Names the directory's format version.
const FORMAT_FILE: &str = "format";
/// The format this build writes and reads.
pub const FORMAT: &str = "1";

/// A vnode incarnation's change sequence.
pub struct Sequence {
    dir: PathBuf,
    log: Mutex<Appending>,
    /// The durable reservation (serialises the writes of the file).
    reserved_on_disk: Mutex<u64>,
    /// Held by a compaction: one at a time.
    compacting: Mutex<()>,
}

/// The log and the numbers, under one lock: a number is taken and its
/// change appended together, so the log holds them in order.
struct Appending {
    log: ChangeLog,
    next: u64,
    /// The reservation `next` may reach (durable).
    reserved: u64,
    /// Segments at the last sync (a new one's directory entry is synced).
    synced_segments: usize,
}

/// What "changes since" covered: the last sequence it read, to resume
/// after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Covered {
    pub upto: Option<u64>,
}

impl Sequence {
    /// Opens (or creates) the sequence whose log is in `dir`; the next
    /// number is above both the log's last and the durable reservation.
    pub fn open(dir: &Path) -> io::Result<Sequence> {
        Sequence::open_with(dir, SEGMENT_BYTES_DEFAULT)
    }

    /// [`Sequence::open`] with segments rolled past `segment_bytes`.
    pub fn open_with(dir: &Path, segment_bytes: u64) -> io::Result<Sequence> {
        check_format(dir)?;
        let log = ChangeLog::open(dir, segment_bytes)?;
        let on_disk = read_reserved(dir)?;
        let next = log.last_seq().map_or(1, |s| s + 1).max(on_disk + 1);
        let reserved = write_reserved(dir, next - 1 + RESERVE)?;
        let synced_segments = log.segment_count();
        Ok(Sequence {
            dir: dir.to_path_buf(),
            log: Mutex::new(Appending {
                log,
                next,
                reserved,
                synced_segments,
            }),
            reserved_on_disk: Mutex::new(reserved),
            compacting: Mutex::new(()),
        })
    }

    /// The directory of the log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the log holds a change for each object its vnode held when
    /// the log began: else the vnode records one for each object it holds
    /// ([`Sequence::record`]), then calls [`Sequence::mark_seeded`].
    pub fn is_seeded(&self) -> bool {
        self.dir.join(SEEDED_FILE).exists()
    }

    /// Makes the changes recorded so far durable and marks the log seeded.
    pub fn mark_seeded(&self) -> io::Result<()> {
        self.sync()?;
        write_synced(&self.dir.join(SEEDED_FILE), &[])?;
        sync_dir(&self.dir)
    }

    /// Records a change of `bucket`'s `key` (a removal if `deleted`; a
    /// whole bucket's drop with an empty key); returns its number. Caller
    /// holds the key's lock and has written the backend.
    pub fn record(&self, deleted: bool, bucket: &[u8], key: &[u8]) -> io::Result<u64> {
        let mut a = self.log.lock();
        if a.next > a.reserved {
            let want = a.next - 1 + RESERVE;
            a.reserved = self.reserve(want)?;
        }
        let seq = a.next;
        a.log.append(seq, deleted, bucket, key)?;
        a.next += 1;
        Ok(seq)
    }

    /// The last number handed out or passed over (an open goes on above
    /// the reservation): the next change takes a larger one.
    pub fn last(&self) -> u64 {
        self.log.lock().next - 1
    }

    /// Makes every recorded change durable, and renews the reservation
    /// when half of it is used. Writers wait only for the flush.
    pub fn sync(&self) -> io::Result<()> {
        let (file, new_segment, next, reserved) = {
            let mut a = self.log.lock();
            let file = a.log.flushed_file()?;
            let count = a.log.segment_count();
            let new_segment = count != a.synced_segments;
            a.synced_segments = count;
            (file, new_segment, a.next, a.reserved)
        };
        file.sync_data()?;
        if new_segment {
            sync_dir(&self.dir)?;
        }
        if reserved - (next - 1) < RESERVE / 2 {
            let renewed = self.reserve(next - 1 + RESERVE)?;
            let mut a = self.log.lock();
            a.reserved = a.reserved.max(renewed);
        }
        Ok(())
    }

    /// Makes `want` (or a larger reservation already made) durable;
    /// returns the durable reservation.
    fn reserve(&self, want: u64) -> io::Result<u64> {
        let mut on_disk = self.reserved_on_disk.lock();
        if *on_disk < want {
            *on_disk = write_reserved(&self.dir, want)?;
        }
        Ok(*on_disk)
    }

    /// Hands `f` the changes after `after` (all with `None`) among the
    /// next `window` the log holds, in order, each key once: a key changed
    /// again among them is handed out at its last. Stops when `f` returns false.
    /// Returns what it covered (resume after `upto`). Holds in memory the
    /// keys of the window; writers go on meanwhile.
    pub fn changes_since(
        &self,
        after: Option<u64>,
        window: u64,
        f: &mut dyn FnMut(&Change) -> bool,
    ) -> io::Result<Covered> {
        let mut handed = None;
        let mut tries = 0;
        loop {
            // A compaction may delete a segment this read's view named: read
            // again after the last change handed out.
            let from = handed.max(after);
            let mut counted = |c: &Change| {
                handed = Some(c.seq);
                f(c)
            };
            match self.read_window(from, window, &mut counted) {
                Err(e) if e.kind() == io::ErrorKind::NotFound && tries < 3 => tries += 1,
                other => return other,
            }
        }
    }

    /// One attempt of [`Sequence::changes_since`].
    fn read_window(
        &self,
        after: Option<u64>,
        window: u64,
        f: &mut dyn FnMut(&Change) -> bool,
    ) -> io::Result<Covered> {
        let view = {
            let mut a = self.log.lock();
            a.log.flush()?;
            a.log.view()
        };
        let (latest, end) = latest_of(&view, after, window)?;
        let Some(end) = end else {
            return Ok(Covered { upto: after });
        };
        let mut stopped_at = None;
        let mut previous = after;
        view.read_since(after, &mut |c| {
            let Change {
                seq,
                deleted,
                bucket,
                key,
            } = c;
            if seq > end {
                return false;
            }
            // A compaction cut short between its rename and its deletes
            // leaves changes twice, in order: the second is passed over.
            if previous.is_some_and(|p| seq <= p) {
                return true;
            }
            previous = Some(seq);
            let named = (bucket, key);
            if latest.get(&named) != Some(&seq) {
                return true;
            }
            let (bucket, key) = named;
            let change = Change {
                seq,
                deleted,
                bucket,
                key,
            };
            if !f(&change) {
                stopped_at = Some(seq);
                return false;
            }
            true
        })?;
        Ok(Covered {
            upto: Some(stopped_at.unwrap_or(end)),
        })
    }

    /// Compacts the log if it has at least `min_closed` closed segments:
    /// rewrites them keeping only each key's latest change (as far as the
    /// log was flushed when it began; a change after that point keeps an
    /// older one it supersedes, which readers pass over). Writers wait
    /// only for the swap of the files. Returns the changes kept and
    /// dropped, if it compacted.
    pub fn compact(&self, min_closed: usize) -> io::Result<Option<(u64, u64)>> {
        let _one = self.compacting.lock();
        let (closed, view) = {
            let mut a = self.log.lock();
            let Some(closed) = a.log.closed_segments(min_closed) else {
                return Ok(None);
            };
            a.log.flush()?;
            (closed, a.log.view())
        };
        let (latest, _) = latest_of(&view, None, u64::MAX)?;
        let written = closed.write(&mut |c| {
            let named = (c.bucket.clone(), c.key.clone());
            latest.get(&named) == Some(&c.seq)
        })?;
        let counts = (written.kept, written.dropped);
        self.log.lock().log.compact(&closed, written)?;
        Ok(Some(counts))
    }
}

/// Each (bucket, key)'s last sequence.
type Latest = HashMap<(Vec<u8>, Vec<u8>), u64>;

/// Each key's last change among the next `window` changes `view` holds
/// after `after`, and the last of those changes.
fn latest_of(view: &LogView, after: Option<u64>, window: u64) -> io::Result<(Latest, Option<u64>)> {
    let mut latest = Latest::new();
    let (mut read, mut end) = (0u64, None);
    view.read_since(after, &mut |c| {
        read += 1;
        end = Some(c.seq);
        latest.insert((c.bucket, c.key), c.seq);
        read < window
    })?;
    Ok((latest, end))
}

/// Refuses a directory of another format; names this one's in a new
/// directory.
fn check_format(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    let path = dir.join(FORMAT_FILE);
    match fs::read_to_string(&path) {
        Ok(text) if text.trim() == FORMAT => Ok(()),
        Ok(text) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: change log format {:?}, this build reads {FORMAT}",
                path.display(),
                text.trim()
            ),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            write_synced(&path, FORMAT.as_bytes())?;
            sync_dir(dir)
        }
        Err(e) => Err(e),
    }
}

/// The durable reservation in `dir` (0 when there is none).
fn read_reserved(dir: &Path) -> io::Result<u64> {
    let bytes = match fs::read(dir.join(RESERVED_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let valid = bytes.len() == 12 && crc32fast::hash(&bytes[..8]).to_be_bytes() == bytes[8..];
    if !valid {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: damaged", dir.join(RESERVED_FILE).display()),
        ));
    }
    Ok(u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")))
}

/// Writes `reserved` durably (a new file renamed over the old); returns
/// it.
fn write_reserved(dir: &Path, reserved: u64) -> io::Result<u64> {
    let tmp = dir.join(format!("{RESERVED_FILE}.tmp"));
    let mut bytes = reserved.to_be_bytes().to_vec();
    bytes.extend_from_slice(&crc32fast::hash(&bytes).to_be_bytes());
    write_synced(&tmp, &bytes)?;
    fs::rename(&tmp, dir.join(RESERVED_FILE))?;
    sync_dir(dir)?;
    Ok(reserved)
}
