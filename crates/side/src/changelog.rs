//! A vnode incarnation's change log (design note 027, "The write's cost,
//! measured"): every change the vnode applies, appended in sequence
//! order as (sequence, deleted, bucket, key), in segment files named by
//! their first sequence. The change sequence's readers ("changes since
//! S") read it from S; which entry is still a key's latest is the
//! caller's to check (the stored record's sequence).
//!
//! Frame: length (u32, of what follows the checksum) ‖ CRC-32 of what
//! follows it ‖ sequence (u64) ‖ flags (u8: bit 0 deleted) ‖ bucket length
//! (u16) ‖ bucket ‖ key; integers big-endian. A segment is
//! `<first sequence, 16 hex digits>.chg`.
//!
//! Invariants: sequences strictly increase through the log; appends reach
//! readers at [`ChangeLog::flush`]; at open, the active (last) segment is
//! cut at its first frame cut short or failing its checksum (a crash in
//! the middle of an append; the cut is reported), and a bad frame in a
//! closed segment (synced when it closed) is an error, never a change
//! read wrong. The vnode's commit log replays the changes after its last
//! checkpoint, so what a cut loses of them comes back.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes before a frame's body: length and checksum.
const FRAME_HEAD: usize = 8;
/// A body's fixed part: sequence, flags, bucket length.
const BODY_FIXED: usize = 11;
/// The largest body: a bucket and a key of 64 KiB each and the fixed part.
const BODY_MAX: usize = BODY_FIXED + 2 * 65_536;
const SEGMENT_EXT: &str = "chg";
/// A segment is closed and a new one begun past this size.
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;

/// One change as the log holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub seq: u64,
    pub deleted: bool,
    pub bucket: Vec<u8>,
    pub key: Vec<u8>,
}

impl Change {
    /// Whether this change is the drop of its whole bucket (an empty key:
    /// no object has one).
    pub fn is_bucket_drop(&self) -> bool {
        self.key.is_empty()
    }

    /// The bytes of its frame.
    fn frame_len(&self) -> u64 {
        (FRAME_HEAD + BODY_FIXED + self.bucket.len() + self.key.len()) as u64
    }
}

/// A closed or active segment: its first sequence, its file, and where
/// some of its frames start.
#[derive(Clone, Debug)]
struct Segment {
    first: u64,
    path: PathBuf,
    /// (sequence, offset) of a frame every [`MARK_EVERY`] bytes or so, in
    /// order, so a read from a sequence starts near it: kept for the
    /// segments this process wrote or opened active (a segment closed
    /// before the open has none and is read from its start).
    marks: Arc<Vec<(u64, u64)>>,
}

impl Segment {
    fn new(first: u64, path: PathBuf) -> Segment {
        Segment {
            first,
            path,
            marks: Arc::default(),
        }
    }

    /// Where a read of the changes after `after` may start: a frame at or
    /// before the first change after it.
    fn start_for(&self, after: u64) -> u64 {
        let i = self
            .marks
            .partition_point(|(seq, _)| *seq <= after.saturating_add(1));
        i.checked_sub(1).map_or(0, |i| self.marks[i].1)
    }
}

/// Bytes between two marks of a segment.
const MARK_EVERY: u64 = 64 << 10;

/// Whether the frame at `offset` is to be marked: the segment's last mark
/// (of `marks`) is [`MARK_EVERY`] bytes back, or it has none.
fn mark_due(marks: &[(u64, u64)], offset: u64) -> bool {
    marks.last().is_none_or(|(_, m)| offset >= m + MARK_EVERY)
}

/// A vnode incarnation's change log, open for appends.
pub struct ChangeLog {
    dir: PathBuf,
    segments: Vec<Segment>,
    active: BufWriter<File>,
    /// Bytes of the active segment written (buffered or not).
    active_len: u64,
    /// Bytes of the active segment readers may read.
    flushed_len: u64,
    last_seq: Option<u64>,
    /// The highest sequence readers may see.
    flushed_seq: Option<u64>,
    segment_bytes: u64,
    /// Bytes of a torn or corrupt tail cut off at open.
    cut: u64,
}

impl ChangeLog {
    /// Opens (or creates) the log in `dir`, cutting off a torn tail of its
    /// last segment; segments roll past `segment_bytes`.
    pub fn open(dir: &Path, segment_bytes: u64) -> io::Result<ChangeLog> {
        fs::create_dir_all(dir)?;
        finish_compaction(dir)?;
        let mut segments = list_segments(dir)?;
        if segments.is_empty() {
            let first = Segment::new(0, segment_path(dir, 0));
            File::create(&first.path)?;
            segments.push(first);
        }
        let at = segments.len() - 1;
        let mut marks = Vec::new();
        let (good, last) = scan(&segments[at].path, (0, u64::MAX), true, &mut |offset, c| {
            if mark_due(&marks, offset) {
                marks.push((c.seq, offset));
            }
            true
        })?;
        segments[at].marks = Arc::new(marks);
        let active = segments[at].clone();
        // An empty active segment was begun for its first sequence, which
        // may have been handed out: the next change takes a larger one.
        let last_seq = last.or(active.first.checked_sub(1));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&active.path)?;
        let cut = file.metadata()?.len() - good;
        file.set_len(good)?;
        file.seek(SeekFrom::Start(good))?;
        Ok(ChangeLog {
            cut,
            dir: dir.to_path_buf(),
            segments,
            active: BufWriter::with_capacity(64 << 10, file),
            active_len: good,
            flushed_len: good,
            last_seq,
            flushed_seq: last_seq,
            segment_bytes: segment_bytes.max(1),
        })
    }

    /// The highest sequence used, if any: the next change takes a larger
    /// one.
    pub fn last_seq(&self) -> Option<u64> {
        self.last_seq
    }

    /// The highest sequence readers may see: appends up to the last
    /// flush (a segment rolls with a flush).
    pub fn flushed_seq(&self) -> Option<u64> {
        self.flushed_seq
    }

    /// Bytes of the active segment's torn or corrupt tail cut off at
    /// open (a crash in the middle of an append, or unsynced pages lost).
    pub fn cut_at_open(&self) -> u64 {
        self.cut
    }

    /// Appends a change; its sequence must follow the last one. Readers
    /// see it after the next [`ChangeLog::flush`].
    pub fn append(&mut self, seq: u64, deleted: bool, bucket: &[u8], key: &[u8]) -> io::Result<()> {
        if self.last_seq.is_some_and(|last| seq <= last) {
            return Err(invalid(format!(
                "change {seq} does not follow {:?}",
                self.last_seq
            )));
        }
        let body_len = BODY_FIXED + bucket.len() + key.len();
        if bucket.len() > usize::from(u16::MAX) || body_len > BODY_MAX {
            return Err(invalid("a change's bucket or key is too long".into()));
        }
        if self.active_len >= self.segment_bytes {
            self.roll(seq)?;
        }
        self.mark(seq);
        write_frame(&mut self.active, (seq, deleted, bucket, key))?;
        self.active_len += (FRAME_HEAD + body_len) as u64;
        self.last_seq = Some(seq);
        Ok(())
    }

    /// Marks the frame of `seq`, about to be appended, if the active
    /// segment's last mark is [`MARK_EVERY`] bytes back.
    fn mark(&mut self, seq: u64) {
        let at = self.segments.len() - 1;
        let marks = &mut self.segments[at].marks;
        if mark_due(marks, self.active_len) {
            Arc::make_mut(marks).push((seq, self.active_len));
        }
    }

    /// Hands the appended changes to the OS: readers see them.
    pub fn flush(&mut self) -> io::Result<()> {
        self.active.flush()?;
        self.flushed_len = self.active_len;
        self.flushed_seq = self.last_seq;
        Ok(())
    }

    /// Flushes and makes the appended changes durable.
    pub fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        self.active.get_ref().sync_data()
    }

    /// Hands each change after sequence `after` (all with `None`), in
    /// order, to `f` until it returns false.
    pub fn read_since(
        &self,
        after: Option<u64>,
        f: &mut dyn FnMut(Change) -> bool,
    ) -> io::Result<()> {
        self.view().read_since(after, f)
    }

    /// What readers may read now (up to the last flush), to read without
    /// holding the log.
    pub fn view(&self) -> LogView {
        LogView {
            segments: self.segments.clone(),
            flushed_len: self.flushed_len,
        }
    }

    /// The number of segment files.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// The directory holding the log's segments.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A handle to the active segment's file, after a flush, to sync
    /// without holding the log (a segment closed meanwhile was synced).
    pub fn flushed_file(&mut self) -> io::Result<File> {
        self.flush()?;
        self.active.get_ref().try_clone()
    }

    /// The closed segments, when there are at least `min` of them: what a
    /// compaction rewrites ([`ChangeLog::compact`]).
    pub fn closed_segments(&self, min: usize) -> Option<Closed> {
        let closed = &self.segments[..self.segments.len() - 1];
        (closed.len() >= min.max(1)).then(|| Closed {
            segments: closed.to_vec(),
        })
    }

    /// Rewrites `closed` (this log's first closed segments, as
    /// [`ChangeLog::closed_segments`] gave them) as one segment holding
    /// the changes `keep` picks, in order, under the first one's name; its
    /// file was written by [`Closed::write`] (the slow part, done without
    /// holding the log). Crash-safe: a marker names the segments to delete
    /// once the new one took the first's name, and an open finishes or
    /// undoes what a crash cut short. Readers holding a view of the old
    /// segments may find one gone: they read again.
    pub fn compact(&mut self, closed: &Closed, written: Written) -> io::Result<()> {
        let n = closed.segments.len();
        let same = self.segments.len() > n
            && self.segments[..n]
                .iter()
                .zip(&closed.segments)
                .all(|(a, b)| a.path == b.path);
        if !same {
            let _ = fs::remove_file(&written.path);
            return Err(invalid(
                "the closed segments changed under a compaction".into(),
            ));
        }
        let doomed: Vec<String> = closed.segments[1..]
            .iter()
            .filter_map(|s| s.path.file_name()?.to_str().map(str::to_string))
            .collect();
        write_synced(&self.dir.join(MARKER), doomed.join("\n").as_bytes())?;
        fs::rename(&written.path, &closed.segments[0].path)?;
        sync_dir(&self.dir)?;
        for s in &closed.segments[1..] {
            remove_if_there(&s.path)?;
        }
        fs::remove_file(self.dir.join(MARKER))?;
        sync_dir(&self.dir)?;
        self.segments.drain(1..n);
        self.segments[0].marks = Arc::new(written.marks);
        Ok(())
    }

    /// Closes the active segment (synced) and begins one at `first`.
    fn roll(&mut self, first: u64) -> io::Result<()> {
        self.sync()?;
        let path = segment_path(&self.dir, first);
        let file = OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&path)?;
        self.segments.push(Segment::new(first, path));
        self.active = BufWriter::with_capacity(64 << 10, file);
        self.active_len = 0;
        self.flushed_len = 0;
        Ok(())
    }
}

/// The log as a reader found it: its segments and how much of the
/// active one was flushed.
#[derive(Clone, Debug)]
pub struct LogView {
    segments: Vec<Segment>,
    flushed_len: u64,
}

impl LogView {
    /// Hands each change after sequence `after` (all with `None`) this
    /// view holds, in order, to `f` until it returns false.
    pub fn read_since(
        &self,
        after: Option<u64>,
        f: &mut dyn FnMut(Change) -> bool,
    ) -> io::Result<()> {
        let start = match after {
            None => 0,
            Some(a) => self
                .segments
                .iter()
                .rposition(|s| s.first <= a.saturating_add(1))
                .unwrap_or(0),
        };
        let last = self.segments.len() - 1;
        for (i, s) in self.segments.iter().enumerate().skip(start) {
            let limit = if i == last {
                self.flushed_len
            } else {
                u64::MAX
            };
            let from = match (i == start, after) {
                (true, Some(a)) => s.start_for(a).min(limit),
                _ => 0,
            };
            let mut more = true;
            let mut keep = |_, c: Change| {
                if after.is_some_and(|a| c.seq <= a) {
                    return true;
                }
                more = f(c);
                more
            };
            scan(&s.path, (from, limit), false, &mut keep)?;
            if !more {
                break;
            }
        }
        Ok(())
    }
}

/// Closed segments a compaction rewrites.
#[derive(Clone, Debug)]
pub struct Closed {
    segments: Vec<Segment>,
}

/// A compaction's new segment, written and synced, not yet in place.
pub struct Written {
    path: PathBuf,
    marks: Vec<(u64, u64)>,
    /// Changes it kept and changes it dropped.
    pub kept: u64,
    pub dropped: u64,
}

impl Closed {
    /// Writes the changes of these segments `keep` picks, in order, to a
    /// new file beside them, synced.
    pub fn write(&self, keep: &mut dyn FnMut(&Change) -> bool) -> io::Result<Written> {
        let dir = self.segments[0].path.parent().unwrap_or(Path::new("."));
        let path = dir.join(COMPACTING);
        let mut out = BufWriter::with_capacity(64 << 10, File::create(&path)?);
        let (mut kept, mut dropped) = (0, 0);
        let (mut len, mut marks) = (0u64, Vec::<(u64, u64)>::new());
        let mut failed = None;
        for s in &self.segments {
            scan(&s.path, (0, u64::MAX), false, &mut |_, c| {
                if !keep(&c) {
                    dropped += 1;
                    return true;
                }
                kept += 1;
                if mark_due(&marks, len) {
                    marks.push((c.seq, len));
                }
                len += c.frame_len();
                match write_frame(&mut out, (c.seq, c.deleted, &c.bucket, &c.key)) {
                    Ok(()) => true,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            })?;
            if let Some(e) = failed.take() {
                return Err(e);
            }
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(Written {
            path,
            marks,
            kept,
            dropped,
        })
    }
}

/// The file a compaction writes its new segment to.
const COMPACTING: &str = "compacting.tmp";
/// Names the segments a compaction deletes once its new one is in place.
const MARKER: &str = "compacting";

/// Finishes or undoes a compaction a crash cut short in `dir`: before
/// the new segment took the first's name (its file still there), the old
/// segments stand and the new file goes; after, the segments the marker
/// names go.
fn finish_compaction(dir: &Path) -> io::Result<()> {
    let marker = dir.join(MARKER);
    let tmp = dir.join(COMPACTING);
    if marker.exists() && !tmp.exists() {
        for name in fs::read_to_string(&marker)?.lines() {
            remove_if_there(&dir.join(name))?;
        }
    }
    remove_if_there(&tmp)?;
    remove_if_there(&marker)?;
    sync_dir(dir)
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Writes one change's frame (its bucket's length checked by the
/// caller), without building it first: into a buffered writer, each part
/// is a copy.
fn write_frame(
    out: &mut impl Write,
    (seq, deleted, bucket, key): (u64, bool, &[u8], &[u8]),
) -> io::Result<()> {
    let body_len = BODY_FIXED + bucket.len() + key.len();
    let mut fixed = [0u8; BODY_FIXED];
    fixed[..8].copy_from_slice(&seq.to_be_bytes());
    fixed[8] = u8::from(deleted);
    fixed[9..].copy_from_slice(&(bucket.len() as u16).to_be_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&fixed);
    crc.update(bucket);
    crc.update(key);
    let mut head = [0u8; FRAME_HEAD];
    head[..4].copy_from_slice(&(body_len as u32).to_be_bytes());
    head[4..].copy_from_slice(&crc.finalize().to_be_bytes());
    out.write_all(&head)?;
    out.write_all(&fixed)?;
    out.write_all(bucket)?;
    out.write_all(key)
}

/// Writes `bytes` as the whole file at `path`, synced (its directory
/// entry is the caller's to sync).
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn segment_path(dir: &Path, first: u64) -> PathBuf {
    dir.join(format!("{first:016x}.{SEGMENT_EXT}"))
}

/// The segments in `dir`, by first sequence.
fn list_segments(dir: &Path) -> io::Result<Vec<Segment>> {
    let mut segments = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some(SEGMENT_EXT) {
            continue;
        }
        let first = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| u64::from_str_radix(s, 16).ok());
        if let Some(first) = first {
            segments.push(Segment::new(first, path));
        }
    }
    segments.sort_by_key(|s| s.first);
    Ok(segments)
}

/// Reads the frames of the segment at `path` from byte `from` (a frame's
/// start) up to byte `limit`, handing each change and its frame's offset
/// to `f` until it returns false. A frame cut short or failing its
/// checksum ends the scan when `torn_tail_ends` (the active segment at
/// open), and is an error otherwise. Returns the offset after the last
/// whole frame read and the last sequence.
fn scan(
    path: &Path,
    (from, limit): (u64, u64),
    torn_tail_ends: bool,
    f: &mut dyn FnMut(u64, Change) -> bool,
) -> io::Result<(u64, Option<u64>)> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut r = BufReader::with_capacity(64 << 10, file.take(limit.saturating_sub(from)));
    let mut at = from;
    let mut last = None;
    let mut body = Vec::new();
    while let Some(frame) = read_frame(&mut r, &mut body)? {
        let change = match frame {
            Ok(change) => change,
            Err(_) if torn_tail_ends => break,
            Err(why) => return Err(corrupt(path, at, why)),
        };
        let offset = at;
        at += change.frame_len();
        last = Some(change.seq);
        if !f(offset, change) {
            break;
        }
    }
    Ok((at, last))
}

/// The next frame: `None` at a clean end; `Some(Err)` for a frame cut
/// short or failing its checksum (the reason). `body` is scratch space.
fn read_frame(
    r: &mut impl Read,
    body: &mut Vec<u8>,
) -> io::Result<Option<Result<Change, &'static str>>> {
    let mut head = [0u8; FRAME_HEAD];
    match read_full(r, &mut head)? {
        0 => return Ok(None),
        FRAME_HEAD => {}
        _ => return Ok(Some(Err("a frame's head is cut short"))),
    }
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let crc = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    if !(BODY_FIXED..=BODY_MAX).contains(&len) {
        return Ok(Some(Err("a frame's length is out of bounds")));
    }
    body.resize(len, 0);
    if read_full(r, body)? != len {
        return Ok(Some(Err("a frame's body is cut short")));
    }
    if crc32fast::hash(body) != crc {
        return Ok(Some(Err("a frame fails its checksum")));
    }
    Ok(Some(
        decode_body(body).ok_or("a frame's bucket length is out of bounds"),
    ))
}

fn decode_body(body: &[u8]) -> Option<Change> {
    let seq = u64::from_be_bytes(body.get(0..8)?.try_into().ok()?);
    let deleted = body.get(8)? & 1 == 1;
    let bucket_len = usize::from(u16::from_be_bytes(body.get(9..11)?.try_into().ok()?));
    let rest = body.get(BODY_FIXED..)?;
    let (bucket, key) = rest.split_at_checked(bucket_len)?;
    Some(Change {
        seq,
        deleted,
        bucket: bucket.to_vec(),
        key: key.to_vec(),
    })
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn corrupt(path: &Path, at: u64, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("change log {}: {why} at byte {at}", path.display()),
    )
}
