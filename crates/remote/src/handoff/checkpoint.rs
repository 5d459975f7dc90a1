//! A receiver's checkpoints: for each inbound transfer, how much of it is
//! durable here (design note 010 §5, "Handoff, as built").
//!
//! One file per `(partition, sending node)` in the handoff directory,
//! `P-HEXNAME.ckpt`: the version, the fields, and a CRC-32 of them. A save
//! writes a temporary file and renames it over the old one; it syncs only
//! when asked (a finished transfer), because a checkpoint lost to a machine
//! crash, or one that does not read back whole, only makes the sender
//! resend more: it is written after the data it names is durable, so it
//! never claims more than the partition holds.
//!
//! Invariants: a checkpoint that does not decode, or whose CRC fails, is no
//! checkpoint; a checkpoint belongs to the receiving vnode's incarnation
//! that wrote it ([`Checkpoint::receiver_incarnation`]), and the receiver
//! ignores it once that vnode is gone.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use eddy_ring::NodeName;
use parking_lot::Mutex;

use super::wire::{
    Kind, Progress, ReadFields, TransferKey, WireError, WriteFields, reader, writer,
};

/// What a receiver has made durable of one inbound transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The sending node.
    pub from: NodeName,
    pub transfer: TransferKey,
    /// The incarnation of the receiving vnode the data went into.
    pub receiver_incarnation: u64,
    pub progress: Progress,
    /// The sender finished and everything is durable.
    pub finished: bool,
}

/// The checkpoints of a node's inbound transfers, cached in memory and, with
/// a directory, kept in files.
#[derive(Debug, Default)]
pub struct Checkpoints {
    dir: Option<PathBuf>,
    cache: Mutex<HashMap<(u32, NodeName), Checkpoint>>,
}

impl Checkpoints {
    /// Checkpoints kept in `dir` (created on the first save), or in memory
    /// only.
    pub fn new(dir: Option<PathBuf>) -> Checkpoints {
        Checkpoints {
            dir,
            cache: Mutex::default(),
        }
    }

    /// The checkpoint of partition `p`'s transfer from `from`, if any.
    pub fn load(&self, p: u32, from: &NodeName) -> Option<Checkpoint> {
        let key = (p, from.clone());
        if let Some(c) = self.cache.lock().get(&key) {
            return Some(c.clone());
        }
        let path = self.path(p, from)?;
        let bytes = std::fs::read(&path).ok()?;
        match decode(&Bytes::from(bytes)) {
            Ok(c) if c.from == *from && c.transfer.partition == p => {
                self.cache.lock().insert(key, c.clone());
                Some(c)
            }
            _ => {
                tracing::warn!(path = %path.display(), "unreadable handoff checkpoint ignored");
                None
            }
        }
    }

    /// Records `c`; with `sync`, durably before returning.
    pub fn save(&self, c: &Checkpoint, sync: bool) -> std::io::Result<()> {
        if let Some(path) = self.path(c.transfer.partition, &c.from) {
            write_file(&path, &encode(c), sync)?;
        }
        let key = (c.transfer.partition, c.from.clone());
        self.cache.lock().insert(key, c.clone());
        Ok(())
    }

    /// Forgets every checkpoint of partition `p` (its vnode here is gone).
    pub fn remove_partition(&self, p: u32) -> std::io::Result<()> {
        self.cache.lock().retain(|(q, _), _| *q != p);
        let Some(dir) = &self.dir else { return Ok(()) };
        let prefix = format!("{p}-");
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(&prefix) && name.ends_with(".ckpt") {
                std::fs::remove_file(dir.join(name.as_ref()))?;
            }
        }
        Ok(())
    }

    fn path(&self, p: u32, from: &NodeName) -> Option<PathBuf> {
        let hex: String = from.0.bytes().map(|b| format!("{b:02x}")).collect();
        Some(self.dir.as_ref()?.join(format!("{p}-{hex}.ckpt")))
    }
}

/// Writes `bytes` to a temporary file and renames it to `path`; with
/// `sync`, the file and then the directory are synced.
fn write_file(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    if sync {
        f.sync_data()?;
    }
    std::fs::rename(&tmp, path)?;
    if sync {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

fn encode(c: &Checkpoint) -> Bytes {
    let mut w = writer();
    let kind = match c.transfer.kind {
        Kind::Ownership => 0,
        Kind::Hinted => 1,
    };
    w.bytes(c.from.0.as_bytes());
    w.u32(c.transfer.partition);
    w.u8(kind);
    w.u64(c.transfer.sender_incarnation);
    w.u64(c.receiver_incarnation);
    w.u64(c.progress.session);
    w.u64(c.progress.seq);
    w.position(&c.progress.position);
    w.u8(u8::from(c.finished));
    let mut body = w.finish().to_vec();
    let crc = crc32fast::hash(&body);
    body.extend_from_slice(&crc.to_be_bytes());
    Bytes::from(body)
}

fn decode(file: &Bytes) -> Result<Checkpoint, WireError> {
    let body_len = file.len().checked_sub(4).ok_or(WireError::Truncated)?;
    let (body, crc) = file.split_at(body_len);
    if crc32fast::hash(body).to_be_bytes() != crc {
        return Err(WireError::Truncated);
    }
    let body = file.slice(..body_len);
    let mut r = reader(&body)?;
    let from = NodeName(String::from_utf8_lossy(&r.bytes()?).into_owned());
    let partition = r.u32()?;
    let kind = match r.u8()? {
        0 => Kind::Ownership,
        1 => Kind::Hinted,
        tag => return Err(WireError::Tag { what: "kind", tag }),
    };
    let c = Checkpoint {
        from,
        transfer: TransferKey {
            partition,
            kind,
            sender_incarnation: r.u64()?,
        },
        receiver_incarnation: r.u64()?,
        progress: Progress {
            session: r.u64()?,
            seq: r.u64()?,
            position: r.position()?,
        },
        finished: r.u8()? == 1,
    };
    r.end()?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::wire::Position;

    fn checkpoint(p: u32, position: Position) -> Checkpoint {
        Checkpoint {
            from: NodeName("dev1@127.0.0.1".into()),
            transfer: TransferKey {
                partition: p,
                kind: Kind::Hinted,
                sender_incarnation: 7,
            },
            receiver_incarnation: 3,
            progress: Progress {
                session: 99,
                seq: 12,
                position,
            },
            finished: false,
        }
    }

    #[test]
    fn checkpoints_survive_a_reopen_and_a_damaged_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let c = checkpoint(5, Position::After(b"b".to_vec(), b"k".to_vec()));
        let store = Checkpoints::new(Some(dir.path().to_path_buf()));
        store.save(&c, true).unwrap();
        store.save(&checkpoint(6, Position::Folded), false).unwrap();
        let reopened = Checkpoints::new(Some(dir.path().to_path_buf()));
        assert_eq!(reopened.load(5, &c.from), Some(c.clone()));
        assert_eq!(reopened.load(5, &NodeName("other".into())), None);

        let path = reopened.path(6, &c.from).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[3] ^= 0xFF;
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(
            Checkpoints::new(Some(dir.path().into())).load(6, &c.from),
            None
        );

        reopened.remove_partition(5).unwrap();
        assert_eq!(reopened.load(5, &c.from), None);
        assert_eq!(
            Checkpoints::new(Some(dir.path().into())).load(5, &c.from),
            None
        );
    }
}
