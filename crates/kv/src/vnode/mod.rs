//! A vnode: the owner of one partition's backend (Riak's vnode).
//!
//! Requests arrive as [`msg::VnodeRequest`] messages. A local vnode handles
//! each on the sender's thread ([`Vnode::send`]): no queue and no thread
//! hop, so a put costs its work and nothing else. A remote vnode will take
//! the same messages off the network (design note 004).
//!
//! Invariants:
//! - a read-modify-write of one key runs under that key's lock, so
//!   conditional puts are atomic per key and two updates never interleave;
//! - a write to a persistent bucket is appended to the node's commit log
//!   under the same lock, after the backend took it, so the log's order of
//!   one key's records is the backend's;
//! - a reply that promises durability is sent only after the commit log
//!   (or, without one, the backend) synced the write.
//!
//! Files: [`msg`] (requests and replies), [`apply`] (what a put or merge
//! does to an object, pure), [`replay`] (commit-log records back into a
//! backend), [`damage`] (the repair mark and repair's writes), this file
//! (the vnode and its writes).

pub mod apply;
pub mod damage;
pub mod msg;
pub mod replay;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use eddy_object::{Actor, RiakObject, VersionVector, codec};
use eddy_ring::Partition;
use eddy_storage::{Backend, StorageError, WriteOptions};
use parking_lot::{Mutex, MutexGuard};

use crate::commitlog::{CommitLog, Lsn, Op, Record};
use crate::error::KvError;
use msg::{PutDone, PutKind, PutReplyTo, StorageKey, VnodeRequest, WritePolicy};

/// Key locks per vnode: keys hash onto these stripes.
const KEY_LOCKS: usize = 64;

/// A shared handle to a vnode.
pub type VnodeHandle = Arc<Vnode>;

/// One partition's owner.
pub struct Vnode {
    pub partition: Partition,
    actor: Actor,
    backend: Arc<dyn Backend>,
    locks: Box<[Mutex<()>]>,
    log: Option<Arc<CommitLog>>,
    closed: AtomicBool,
    /// Set while the partition needs repair (design note 009).
    damage: damage::Damage,
}

/// What a put stored.
struct Written {
    object: RiakObject,
    durability: Durability,
    /// Its encoding, if this put wrote it (`None`: the stored object was
    /// already this).
    encoded: Option<Arc<[u8]>>,
    /// Where this put's commit-log record of `encoded` starts, if it
    /// logged one.
    logged_at: Option<Lsn>,
}

/// How a put's write becomes durable.
enum Durability {
    /// Once this commit log made it durable up to here.
    Log(Lsn),
    /// Already: the bucket's backend keeps nothing across restarts.
    Volatile,
    /// By syncing the backend (a node without a commit log).
    Backend,
}

impl Vnode {
    /// A vnode for `partition` over `backend`, coordinating writes as
    /// `actor`, logging writes to `log` if the node has one.
    pub fn new(
        partition: Partition,
        actor: Actor,
        backend: Arc<dyn Backend>,
        log: Option<Arc<CommitLog>>,
    ) -> VnodeHandle {
        Arc::new(Vnode {
            partition,
            actor,
            backend,
            locks: (0..KEY_LOCKS).map(|_| Mutex::new(())).collect(),
            log,
            closed: AtomicBool::new(false),
            damage: damage::Damage::default(),
        })
    }

    /// Delivers a request to this (local) vnode: it is handled now, on the
    /// caller's thread, with the replicas it forwards to; replies go where
    /// the request says. The durable replies go out last: at once if the
    /// commit log is durable past their records (appended records are in
    /// the file), or when it is (`o_sync`).
    pub fn send(&self, req: VnodeRequest) -> Result<(), KvError> {
        let mut pending = Vec::new();
        let handled = self.handle(req, &mut pending);
        if pending.is_empty() {
            return handled;
        }
        let Some(log) = &self.log else {
            // Only a write to a commit log leaves a reply pending.
            let e = "no commit log to wait for";
            pending.into_iter().for_each(|p| p.answer(Err(e.into())));
            return handled;
        };
        let durable = log.durable();
        for p in pending {
            match p.lsn <= durable {
                true => p.answer(Ok(())),
                false => log.when_durable(p.lsn, Box::new(move |r| p.answer(r))),
            }
        }
        handled
    }

    /// Handles a request; durable replies that wait for the commit log are
    /// left in `pending`.
    fn handle(&self, req: VnodeRequest, pending: &mut Vec<Pending>) -> Result<(), KvError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(KvError::ShuttingDown);
        }
        match req {
            VnodeRequest::Put {
                key,
                kind,
                policy,
                sync,
                reply,
                forward,
            } => {
                match self.put(&key, *kind, policy) {
                    Ok(written) => {
                        let sent = Sent {
                            object: &written.object,
                            encoded: written.encoded,
                            logged_at: written.logged_at,
                        };
                        forward_to_replicas(&forward, &key, sent, (policy, sync), &reply, pending);
                        let durability = written.durability;
                        self.reply_put(written.object, durability, sync, reply, pending);
                    }
                    Err(e) => {
                        let _ = reply.send((self.partition, Err(e)));
                    }
                }
                Ok(())
            }
            VnodeRequest::Reap { key, tombstone } => {
                if let Err(e) = self.reap(&key, &tombstone) {
                    tracing::warn!(partition = self.partition.0, "reap failed: {e}");
                }
                Ok(())
            }
        }
    }

    /// Reads `key` from this vnode's backend. Reads need no lock: each
    /// backend get is atomic.
    pub fn read(&self, key: &StorageKey) -> Result<Option<RiakObject>, KvError> {
        apply::read_object(&*self.backend, key)
    }

    /// The partition's backend, for folds (key listing), which backends
    /// allow concurrently with writes.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Refuses further requests and closes the backend (which syncs it).
    pub fn close(&self) -> Result<(), StorageError> {
        self.closed.store(true, Ordering::Release);
        self.backend.close()
    }

    fn lock(&self, key: &StorageKey) -> MutexGuard<'_, ()> {
        let h = eddy_ring::key_hash(b"", &key.bucket, &key.key);
        self.locks[(h % KEY_LOCKS as u64) as usize].lock()
    }

    fn put(
        &self,
        key: &StorageKey,
        kind: PutKind,
        policy: WritePolicy,
    ) -> Result<Written, KvError> {
        let _locked = self.lock(key);
        let current = self.read(key)?;
        let (mut encoded, mut same_as) = (None, None);
        let next = match kind {
            PutKind::Coordinate {
                context,
                content,
                conditions,
            } => apply::coordinate(
                current.as_ref(),
                &context,
                *content,
                &conditions,
                policy,
                self.actor,
            )?,
            PutKind::Replicate {
                object,
                encoded: sent,
                logged_at,
            } => {
                let merged = apply::replicate(current.as_ref(), object, policy);
                if merged.is_incoming {
                    (encoded, same_as) = (sent, logged_at);
                }
                merged.object
            }
        };
        if current.as_ref() == Some(&next) {
            return Ok(Written {
                durability: self.durability_of_stored(&key.bucket),
                object: next,
                encoded: None,
                logged_at: None,
            });
        }
        let same_as = same_as.filter(|_| encoded.is_some());
        let bytes = encoded.unwrap_or_else(|| codec::encode(&next).into());
        let (durability, logged_at) = self.write(key, current.as_ref(), &next, &bytes, same_as)?;
        Ok(Written {
            object: next,
            durability,
            encoded: Some(bytes),
            logged_at,
        })
    }

    /// Writes `new` (encoded as `bytes`) over `old`, with the index specs
    /// that turn one's entries into the other's, and logs the write (as a
    /// reference to the record at `same_as` when that holds these bytes).
    /// Returns how it becomes durable and where its record starts.
    /// Caller holds the key's lock.
    fn write(
        &self,
        key: &StorageKey,
        old: Option<&RiakObject>,
        new: &RiakObject,
        bytes: &[u8],
        same_as: Option<Lsn>,
    ) -> Result<(Durability, Option<Lsn>), KvError> {
        let specs = apply::index_specs(old, new);
        let target = self.checked_target(&key.bucket)?;
        self.backend
            .put(&key.bucket, &key.key, bytes, &specs, WriteOptions::NO_SYNC)?;
        self.logged(target, key, Op::Put { value: bytes }, same_as)
    }

    /// Removes the key if it still holds exactly this tombstone.
    fn reap(&self, key: &StorageKey, tombstone: &VersionVector) -> Result<(), KvError> {
        let _locked = self.lock(key);
        match self.read(key)? {
            Some(obj) if obj.is_deleted() && obj.vv == *tombstone => {
                let target = self.checked_target(&key.bucket)?;
                self.backend
                    .delete(&key.bucket, &key.key, WriteOptions::NO_SYNC)?;
                self.logged(target, key, Op::Delete, None).map(|_| ())
            }
            _ => Ok(()),
        }
    }

    /// Where writes to `bucket` become durable.
    fn target(&self, bucket: &[u8]) -> Target<'_> {
        match &self.log {
            _ if !self.backend.capabilities_for(bucket).persistent => Target::Volatile,
            Some(log) => Target::Log(log),
            None => Target::Backend,
        }
    }

    /// [`Vnode::target`], with a commit log checked to be taking records
    /// before the backend is touched.
    fn checked_target(&self, bucket: &[u8]) -> Result<Target<'_>, KvError> {
        let target = self.target(bucket);
        if let Target::Log(log) = target {
            log.check()?;
        }
        Ok(target)
    }

    /// Refuses a write to `bucket` while the commit log it would go to
    /// refuses records, before anything is touched (the coordinator asks
    /// first, so that a put is refused whole rather than by some replicas).
    pub fn check_writable(&self, bucket: &[u8]) -> Result<(), KvError> {
        self.checked_target(bucket).map(|_| ())
    }

    /// Appends the record of a write to the log, if the write goes to one;
    /// returns how the write becomes durable and where its record starts.
    fn logged(
        &self,
        target: Target<'_>,
        key: &StorageKey,
        op: Op<'_>,
        same_as: Option<Lsn>,
    ) -> Result<(Durability, Option<Lsn>), KvError> {
        let log = match target {
            Target::Log(log) => log,
            Target::Volatile => return Ok((Durability::Volatile, None)),
            Target::Backend => return Ok((Durability::Backend, None)),
        };
        let record = Record {
            partition: self.partition.0,
            incarnation: crate::commitlog::FIRST_INCARNATION,
            bucket: &key.bucket,
            key: &key.key,
            op,
        };
        let at = log.append(&record, same_as)?;
        Ok((Durability::Log(at.end), Some(at.start)))
    }

    /// How an unchanged stored object becomes durable: it may have been
    /// written by a put whose sync is still to come.
    fn durability_of_stored(&self, bucket: &[u8]) -> Durability {
        match self.target(bucket) {
            Target::Log(log) => Durability::Log(log.appended()),
            Target::Volatile => Durability::Volatile,
            Target::Backend => Durability::Backend,
        }
    }

    /// Answers a put: at once, or once its write is durable if `sync`. A
    /// reply that waits for the commit log goes to `pending`.
    fn reply_put(
        &self,
        object: RiakObject,
        durability: Durability,
        sync: bool,
        reply: PutReplyTo,
        pending: &mut Vec<Pending>,
    ) {
        let partition = self.partition;
        if !sync {
            let _ = reply.send((
                partition,
                Ok(PutDone {
                    object,
                    durable: false,
                }),
            ));
            return;
        }
        let waiting = Pending {
            lsn: 0,
            partition,
            object,
            reply,
        };
        match durability {
            Durability::Log(lsn) => pending.push(Pending { lsn, ..waiting }),
            Durability::Backend => waiting.answer(self.backend.sync().map_err(|e| e.to_string())),
            Durability::Volatile => waiting.answer(Ok(())),
        }
    }
}

/// A durable put reply waiting for the node's commit log to be durable
/// past `lsn`. Every local vnode shares the node's one log, so the vnode
/// that took the request answers it after writing the log out.
struct Pending {
    lsn: Lsn,
    partition: Partition,
    object: RiakObject,
    reply: PutReplyTo,
}

impl Pending {
    /// Sends the reply: durable, or the error that kept it from being.
    fn answer(self, durable: Result<(), String>) {
        let object = self.object;
        let result = durable
            .map(|()| PutDone {
                object,
                durable: true,
            })
            .map_err(KvError::SyncFailed);
        let _ = self.reply.send((self.partition, result));
    }
}

/// Where a write to a bucket becomes durable.
#[derive(Clone, Copy)]
enum Target<'a> {
    /// In the node's commit log.
    Log(&'a CommitLog),
    /// Nowhere: the bucket's backend keeps nothing across restarts.
    Volatile,
    /// In the backend, by syncing it (a node without a commit log).
    Backend,
}

/// The object a coordinator forwards, and its encoding if it wrote one.
struct Sent<'a> {
    object: &'a RiakObject,
    encoded: Option<Arc<[u8]>>,
    logged_at: Option<Lsn>,
}

/// Sends the coordinator's written object to the other replicas, which
/// merge it in and answer on the same `reply`.
fn forward_to_replicas(
    forward: &[VnodeHandle],
    key: &StorageKey,
    sent: Sent<'_>,
    (policy, sync): (WritePolicy, bool),
    reply: &PutReplyTo,
    pending: &mut Vec<Pending>,
) {
    for replica in forward {
        let req = VnodeRequest::Put {
            key: key.clone(),
            kind: Box::new(PutKind::Replicate {
                object: sent.object.clone(),
                encoded: sent.encoded.clone(),
                logged_at: sent.logged_at,
            }),
            policy,
            sync,
            reply: reply.clone(),
            forward: Vec::new(),
        };
        if let Err(e) = replica.handle(req, pending) {
            let _ = reply.send((replica.partition, Err(e)));
        }
    }
}
