//! Eddy's vnodes: a vnode is the owner of one partition's backend
//! (Riak's vnode). This crate holds the vnode, the messages it takes and
//! sends, its folds, the node's commit log ([`commitlog`]) every vnode
//! appends to, the repair mark ([`marker`]), data type updates applied at
//! the coordinating vnode ([`datatype`]), big data type values kept as a
//! root and segments ([`segments`]), the map phases run at the vnode
//! by a runner it is given ([`mapphase`]), and the figures vnodes count
//! into the node's registry ([`figures`]). It knows nothing of rings
//! beyond a partition's number, of other nodes, or of sockets.
//!
//!
//! Requests arrive as [`msg::VnodeRequest`] messages with a
//! [`reply::ReplyTo`] saying where the answers go. A local vnode handles
//! each on the sender's thread ([`Vnode::send`]): no queue and no thread
//! hop, so a put costs its work and nothing else. A request from another
//! node arrives the same way, off the transport. Vnodes never send
//! requests to other vnodes: coordinators do (design note 010).
//!
//! Invariants:
//! - a read-modify-write of one key runs under that key's lock, so
//!   conditional puts are atomic per key and two updates never interleave;
//! - a write to a persistent bucket is appended to the node's commit log
//!   under the same lock, before the backend and the side store take it
//!   (`Vnode::write_all`), so the log's order of one key's records is the
//!   backend's, and a crash after the append replays it into both; the
//!   one exception, a handed-off
//!   object merged by a handoff receiver ([`Vnode::merge_handed`]), is
//!   durable only once [`Vnode::sync_handed`] synced the backend and the
//!   log holds a synced mark, after which replay applies none of the
//!   vnode's records from before the sync;
//! - every change to a persistent bucket's key is recorded in the side
//!   store's change sequence after the backend and the side store took
//!   it, under the key's lock, so one key's changes are numbered in the
//!   order they were applied;
//! - a reply that promises durability is sent only after the commit log
//!   (or, without one, the backend) synced the write;
//! - every request is answered (a put with `Put`, a get with `Get`), also
//!   when the vnode is closed or fails.
//!
//! Files: [`msg`] (requests and replies), [`reply`] (where replies go),
//! [`apply`] (what a put or merge does to an object, pure), `gate` (the
//! folds running, which a drop waits for), [`replay`]
//! (commit-log records back into a backend), [`damage`] (the repair mark
//! and repair's writes), [`table`] (the vnodes a node runs), this file
//! (the vnode and its writes).

pub mod apply;
pub mod commitlog;
pub mod damage;
pub mod datatype;
pub mod entries;
mod expire;
pub mod figures;
pub mod fold;
mod gate;
pub mod index_fold;
pub mod map_fold;
pub mod mapphase;
pub mod marker;
pub mod msg;
pub mod once;
pub mod replay;
pub mod reply;
mod segmented_put;
pub mod segments;
pub mod side_build;
pub mod states;
pub mod table;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use eddy_object::{Actor, RiakObject, VersionVector, codec};
use eddy_ring::Partition;
use eddy_storage::{Backend, StorageError, WriteOptions};
use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::commitlog::{CommitLog, Lsn, Op, Record};
use crate::entries::{Entries, Stores, changes_error};
use crate::figures::VnodeFigures;
use crate::mapphase::MapRunner;
use eddy_dt::State;
use eddy_model::error::KvError;
use eddy_model::error::Signal;
pub use gate::FoldTicket;
use msg::{
    Coordinate, FoldRequest, PutAck, PutKind, PutRequest, StorageKey, SyncLevel, VnodeReply,
    VnodeRequest, WritePolicy,
};
use reply::{LocalHint, ReplyTo};
use states::StateCache;

/// How long a set delta waits for the version it follows before its
/// replica answers it `Behind`.
const DELTA_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// Key locks per vnode: keys hash onto these stripes.
const KEY_LOCKS: usize = 64;

/// A shared handle to a vnode.
pub type VnodeHandle = Arc<Vnode>;

/// One partition's owner.
pub struct Vnode {
    pub partition: Partition,
    /// Which life of this partition on this node the vnode is: its commit
    /// log records carry it, so a dropped one's never replay.
    incarnation: u64,
    actor: Actor,
    /// The object backend and the side store of index entries.
    stores: Stores,
    locks: Box<[Mutex<()>]>,
    /// Notified, per lock stripe, whenever a key of the stripe is written
    /// (a set delta that arrived before the one it follows waits on it).
    written: Box<[Condvar]>,
    log: Option<Arc<CommitLog>>,
    closed: AtomicBool,
    /// Set while the partition needs repair (design note 009).
    damage: damage::Damage,
    folds: Arc<gate::Folds>,
    /// The node's decoded data type states ([`states`]).
    states: Arc<StateCache>,
    /// The node's figures of merges and data type updates ([`figures`]).
    figures: Arc<VnodeFigures>,
    /// Where this vnode's next expiry sweep starts (`expire`).
    sweep: expire::SweepCursor,
}

/// What a put stored.
struct Written {
    /// Its encoding (empty when `delta` says what changed instead).
    encoded: Bytes,
    /// A coordinated set or map operation on a segmented value: what the other
    /// replicas take in instead of the whole object.
    delta: Option<Box<msg::DtDelta>>,
    /// Its sibling count.
    siblings: usize,
    durability: Durability,
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
        Vnode::with_incarnation(
            partition,
            crate::commitlog::FIRST_INCARNATION,
            actor,
            Stores::new(backend, None),
            log,
            Arc::default(),
            Arc::new(VnodeFigures::unregistered()),
        )
    }

    /// A vnode of `partition`'s incarnation `incarnation` over `stores`,
    /// keeping decoded data type states in `states` and counting its
    /// merges and data type updates in `figures` (both the node's, shared
    /// by its vnodes).
    pub fn with_incarnation(
        partition: Partition,
        incarnation: u64,
        actor: Actor,
        stores: Stores,
        log: Option<Arc<CommitLog>>,
        states: Arc<StateCache>,
        figures: Arc<VnodeFigures>,
    ) -> VnodeHandle {
        Arc::new(Vnode {
            partition,
            incarnation,
            actor,
            stores,
            locks: (0..KEY_LOCKS).map(|_| Mutex::new(())).collect(),
            written: (0..KEY_LOCKS).map(|_| Condvar::new()).collect(),
            log,
            closed: AtomicBool::new(false),
            damage: damage::Damage::default(),
            folds: Arc::default(),
            states,
            figures,
            sweep: Default::default(),
        })
    }

    /// Delivers a request to this vnode: it is handled now, on the
    /// caller's thread, and answered to `reply`. A durable put reply goes
    /// out at once if the commit log is durable past its record (appended
    /// records are in the file), else when it is (`o_sync`). `hint` is
    /// what a local coordinator knows of the request's object.
    pub fn send(&self, req: VnodeRequest, reply: ReplyTo, hint: LocalHint) {
        let closed = self.closed.load(Ordering::Acquire);
        match req {
            VnodeRequest::Put(_) if closed => self.answer_put(&reply, Err(KvError::ShuttingDown)),
            VnodeRequest::Put(put) => self.handle_put(put, reply, hint),
            VnodeRequest::Get { key } => {
                let got = match closed {
                    true => Err(KvError::ShuttingDown),
                    false => self.read_encoded(&key),
                };
                reply.send(self.partition, VnodeReply::Get(got), LocalHint::default());
            }
            VnodeRequest::Fold(fold) => self.fold(fold, None, reply),
            VnodeRequest::Reap { .. } if closed => {}
            VnodeRequest::Reap { key, tombstone } => {
                if let Err(e) = self.reap(&key, &tombstone) {
                    tracing::warn!(partition = self.partition.0, "reap failed: {e}");
                }
            }
        }
    }

    /// Starts a fold on a thread of its own, `runner` running a map fold's
    /// phase (without one, a map fold fails).
    pub fn fold(&self, fold: FoldRequest, runner: Option<Arc<dyn MapRunner>>, reply: ReplyTo) {
        let ticket = match self.begin_fold() {
            Some(ticket) => ticket,
            None => {
                let e = Err(KvError::ShuttingDown);
                return reply.send(self.partition, VnodeReply::Fold(e), LocalHint::default());
            }
        };
        fold::spawn(
            self.partition,
            self.stores.clone(),
            fold,
            runner,
            reply,
            ticket,
        );
    }

    /// Admits a fold over this vnode's backend (until the ticket drops),
    /// unless the vnode is closed or closing.
    pub fn begin_fold(&self) -> Option<FoldTicket> {
        match self.closed.load(Ordering::Acquire) {
            true => None,
            false => self.folds.enter(),
        }
    }

    fn handle_put(&self, put: PutRequest, reply: ReplyTo, hint: LocalHint) {
        let coordinating = matches!(put.kind, PutKind::Coordinate(_));
        let written = match self.put(&put.key, put.kind, put.policy, hint, Records::Log) {
            Ok(written) => written,
            Err(e) => return self.answer_put(&reply, Err(e)),
        };
        if coordinating {
            let hint = LocalHint {
                logged_at: written.logged_at,
            };
            let coordinated = VnodeReply::Coordinated {
                encoded: written.encoded,
                siblings: written.siblings,
                delta: written.delta,
            };
            reply.send(self.partition, coordinated, hint);
        }
        self.reply_put(written.durability, put.sync, reply);
    }

    fn answer_put(&self, reply: &ReplyTo, result: Result<PutAck, KvError>) {
        reply.send(
            self.partition,
            VnodeReply::Put(result),
            LocalHint::default(),
        );
    }

    /// This vnode's incarnation.
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Reads `key` from this vnode's backend. Reads need no lock: each
    /// backend get is atomic.
    pub fn read(&self, key: &StorageKey) -> Result<Option<RiakObject>, KvError> {
        segments::read_object(&*self.stores.backend, key)
    }

    /// The partition's backend, for folds (key listing), which backends
    /// allow concurrently with writes.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.stores.backend
    }

    /// Refuses further requests, waits for the writes under way, makes
    /// the side store and the change sequence durable, and closes the
    /// backend (which syncs it): after a clean close nothing needs the
    /// commit log.
    pub fn close(&self) -> Result<(), StorageError> {
        self.closed.store(true, Ordering::Release);
        self.fence();
        self.stores.sync()?;
        self.stores.backend.close()
    }

    /// Closes the vnode whose data is about to be destroyed: the backend
    /// makes nothing durable on the way out
    /// ([`eddy_storage::Backend::close_discarding`]).
    /// Folds running then end first (for at most
    /// [`gate::FOLD_DRAIN_MAX`]): they answer from the whole partition.
    pub fn close_discarding(&self) -> Result<(), StorageError> {
        self.closed.store(true, Ordering::Release);
        if !self.folds.close(gate::FOLD_DRAIN_MAX) {
            tracing::warn!(partition = self.partition.0, "closing under a running fold");
        }
        self.stores.backend.close_discarding()
    }

    fn lock(&self, key: &StorageKey) -> MutexGuard<'_, ()> {
        self.locks[Self::stripe(key)].lock()
    }

    fn stripe(key: &StorageKey) -> usize {
        let h = eddy_ring::key_hash(b"", &key.bucket, &key.key);
        (h % KEY_LOCKS as u64) as usize
    }

    /// Reads `key`'s stored object's encoding (a segmented one assembled),
    /// unchecked: whoever decodes it refuses a corrupt one.
    fn read_encoded(&self, key: &StorageKey) -> Result<Option<Bytes>, KvError> {
        match self.stores.backend.get(&key.bucket, &key.key)? {
            Some(bytes) => Ok(Some(
                segments::whole_bytes(&*self.stores.backend, key, bytes)?.into(),
            )),
            None => Ok(None),
        }
    }

    /// Reads what `key` holds as stored: its bytes, and the root if they
    /// are a segmented value's root record.
    fn read_stored(&self, key: &StorageKey) -> Result<Stored, KvError> {
        let raw = self
            .stores
            .backend
            .get(&key.bucket, &key.key)?
            .map(Bytes::from);
        let root = match raw.as_deref() {
            Some(bytes) if segments::is_root_record(bytes) => {
                Some(segments::decode_root_record(bytes)?)
            }
            _ => None,
        };
        Ok(Stored { raw, root })
    }

    /// The root `key` holds, if it holds a segmented value whose root
    /// decodes (whose segments a write over it removes).
    pub fn stored_root(&self, key: &StorageKey) -> Option<eddy_dt::Root> {
        Some(self.read_stored(key).ok()?.root?.root)
    }

    /// What `key` holds once it holds version `before` or one not behind
    /// it, waiting (the key's lock released meanwhile) at most
    /// [`DELTA_WAIT`]: requests from other nodes run on several threads,
    /// so a set delta can overtake the one it follows. Caller holds the
    /// key's lock, `locked`.
    fn stored_by(
        &self,
        key: &StorageKey,
        locked: &mut MutexGuard<'_, ()>,
        before: &VersionVector,
    ) -> Result<Stored, KvError> {
        let until = std::time::Instant::now() + DELTA_WAIT;
        loop {
            let stored = self.read_stored(key)?;
            let version = stored.version().unwrap_or_default();
            let behind = version != *before && before.descends(&version);
            if !behind || std::time::Instant::now() >= until {
                return Ok(stored);
            }
            // Read again whether woken or timed out: the key may have
            // changed while its lock was released.
            self.written[Self::stripe(key)].wait_until(locked, until);
        }
    }

    /// Whether the value at `key` may be stored in segments: its bucket's
    /// backend keeps records together, and segment keys fit its limit.
    fn may_segment(&self, key: &StorageKey) -> bool {
        key.key.len() + 8 <= eddy_storage::limits::KEY_BYTES_MAX
            && segments::allowed(self.stores.backend.capabilities_for(&key.bucket))
    }

    /// Merges `encoded`, an object another node handed off, into `key` as
    /// a replica merges a coordinator's object, but appends no commit-log
    /// record: the write is durable once [`Vnode::sync_handed`] returns.
    pub fn merge_handed(
        &self,
        key: &StorageKey,
        encoded: Bytes,
        policy: WritePolicy,
    ) -> Result<(), KvError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(KvError::ShuttingDown);
        }
        let kind = PutKind::Replicate { encoded };
        let hint = LocalHint::default();
        self.put(key, kind, policy, hint, Records::Skip).map(|_| ())
    }

    /// Makes every write this vnode took durable, those of
    /// [`Vnode::merge_handed`] included: notes where the commit log is,
    /// waits for the writes logged before it ([`Vnode::fence`]), syncs the
    /// backend and the side store, appends a synced mark naming that
    /// place, and waits until the log has synced the mark. Replay then
    /// applies no record of this vnode from before the sync, which could
    /// be older than a merge the sync made durable. Blocks on the disk.
    pub fn sync_handed(&self) -> Result<(), KvError> {
        let Some(log) = &self.log else {
            return Ok(self.stores.sync()?);
        };
        let upto = log.position();
        self.fence();
        self.stores.sync()?;
        let mark = log.append_synced(self.partition.0, self.incarnation, upto)?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        log.when_synced(
            mark.end,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        match rx.recv() {
            Ok(synced) => synced.map_err(KvError::SyncFailed),
            Err(_) => Err(KvError::SyncFailed("the commit log stopped".into())),
        }
    }

    /// Waits until every write that logged its records before this call
    /// has finished with the backend and the side store: a write holds
    /// its key's lock from its log append to its last store, so taking
    /// each lock once is enough. A checkpoint (or [`Vnode::sync_handed`])
    /// that read the log's position before this syncs those writes too.
    pub fn fence(&self) {
        for lock in self.locks.iter() {
            drop(lock.lock());
        }
    }

    /// The vnode's backend and side store.
    pub fn stores(&self) -> &Stores {
        &self.stores
    }

    /// Compacts this vnode's change log if it has at least `min_closed`
    /// closed segments ([`eddy_side::Sequence::compact`]): the changes kept
    /// and dropped, if it did.
    pub fn compact_changes(&self, min_closed: usize) -> Result<Option<(u64, u64)>, KvError> {
        let Some(side) = &self.stores.side else {
            return Ok(None);
        };
        let compacted = side.sequence().compact(min_closed);
        Ok(compacted.map_err(|e| changes_error(side, e))?)
    }

    /// Drops the side store's tables of swept expiry entries
    /// ([`eddy_side::SideStore::trim_swept_order`]); returns whether the
    /// swept mark had moved since the last trim.
    pub fn trim_swept_order(&self) -> Result<bool, KvError> {
        match &self.stores.side {
            Some(side) => Ok(side.trim_swept_order()?),
            None => Ok(false),
        }
    }

    /// Hands `f` the changes this incarnation applied after `after` (all
    /// with `None`) among the next `window` its log holds, in order, each
    /// key once at its latest among them
    /// ([`eddy_side::Sequence::changes_since`]); `None` when the vnode
    /// keeps no change sequence (a node without a data directory). A
    /// change whose key the backend no longer holds was followed by a
    /// removal a crash took from the log: a reader treats it as one.
    pub fn changes_since(
        &self,
        after: Option<u64>,
        window: u64,
        f: &mut dyn FnMut(&eddy_side::Change) -> bool,
    ) -> Result<Option<eddy_side::sequence::Covered>, KvError> {
        let Some(side) = &self.stores.side else {
            return Ok(None);
        };
        let covered = side.sequence().changes_since(after, window, f);
        Ok(Some(covered.map_err(|e| changes_error(side, e))?))
    }

    fn put(
        &self,
        key: &StorageKey,
        kind: PutKind,
        policy: WritePolicy,
        hint: LocalHint,
        records: Records,
    ) -> Result<Written, KvError> {
        let mut locked = self.lock(key);
        if policy.write_once {
            return self.put_once(key, kind, hint, records, policy.ttl_secs);
        }
        let stored = match &kind {
            PutKind::DtDelta(d) => self.stored_by(key, &mut locked, &d.before)?,
            _ => self.read_stored(key)?,
        };
        if let PutKind::DtDelta(delta) = kind {
            return self.put_delta(key, stored, *delta, records);
        }
        let Stored { raw, root } = stored;
        let (root, kind) = match (root, kind) {
            (Some(r), PutKind::Coordinate(c)) if self.partial_applies(key, &r, &c) => {
                return self.put_partial(key, r, *c, policy, records);
            }
            pair => pair,
        };
        let (current, encoded) = match &root {
            Some(r) => (
                Some(segments::assemble(&*self.stores.backend, key, r)?),
                None,
            ),
            None => (raw.as_deref().map(codec::decode).transpose()?, raw),
        };
        let mut sent = None;
        let mut state = None;
        let next = match kind {
            PutKind::Coordinate(c) => {
                let Coordinate {
                    context,
                    content,
                    conditions,
                    update,
                } = *c;
                match update {
                    Some(u) => {
                        let stored = (encoded.as_deref(), current.as_ref());
                        let (next, new_state) =
                            self.coordinate_update(key, stored, &u, content, policy)?;
                        state = Some(new_state);
                        next
                    }
                    None => apply::coordinate(
                        current.as_ref(),
                        &context,
                        content,
                        &conditions,
                        policy,
                        self.actor,
                    )?,
                }
            }
            PutKind::DtDelta(_) => return Err(KvError::Signal(Signal::Behind)),
            PutKind::Replicate { encoded } => {
                let incoming = codec::decode(&encoded)?;
                let merged = self.replicate(current.as_ref(), incoming, policy);
                if merged.is_incoming {
                    sent = Some((encoded, hint.logged_at));
                }
                merged.object
            }
        };
        let old_root = root.map(|r| r.root);
        let (shape, kept) = match state {
            Some(s)
                if self.may_segment(key)
                    && segments::worth_segmenting(&next, &s, old_root.is_some()) =>
            {
                (Shape::Segmented(s), None)
            }
            s => (Shape::Whole, s),
        };
        let layout = Layout {
            shape,
            old_root: old_root.as_ref(),
            ttl_secs: policy.ttl_secs,
        };
        let written = self.store(key, current.as_ref(), &next, sent, records, layout)?;
        if let Some(state) = kept {
            self.keep_state(key, &written.encoded, state);
        }
        Ok(written)
    }

    /// Applies the data type operation `update` as this vnode's actor to
    /// the value `key` holds (`stored`: its encoding, if stored whole, and
    /// the object), counting it in the node's figures. Returns the new
    /// object and its state. Caller holds the key's lock.
    fn coordinate_update(
        &self,
        key: &StorageKey,
        (encoded, current): (Option<&[u8]>, Option<&RiakObject>),
        update: &msg::DtUpdate,
        content: eddy_object::Content,
        policy: WritePolicy,
    ) -> Result<(RiakObject, State), KvError> {
        let start = std::time::Instant::now();
        let stored = self.stored_state(key, encoded, current, update.datatype)?;
        let applied =
            apply::coordinate_datatype(current, stored, update, content, policy, self.actor)?;
        self.figures.updated(update.datatype, start);
        Ok(applied)
    }

    /// A replica's merge of `incoming` into `current`, the copy it holds
    /// ([`apply::replicate`]), counted in the node's figures when there is
    /// a copy to merge with.
    fn replicate(
        &self,
        current: Option<&RiakObject>,
        incoming: RiakObject,
        policy: WritePolicy,
    ) -> apply::Replicated {
        if current.is_none() {
            return apply::replicate(current, incoming, policy);
        }
        let start = std::time::Instant::now();
        let datatype = datatype::type_of(&incoming);
        let merged = apply::replicate(current, incoming, policy);
        self.figures.merged(datatype, start);
        merged
    }

    /// The merged state of the stored object's siblings of `update`'s
    /// type: the cached one if it was decoded from exactly `encoded`, else
    /// decoded from `current`. Caller holds the key's lock.
    fn stored_state(
        &self,
        key: &StorageKey,
        encoded: Option<&[u8]>,
        current: Option<&RiakObject>,
        datatype: eddy_dt::DataType,
    ) -> Result<Option<State>, KvError> {
        if let Some(bytes) = encoded.filter(|b| self.states.worth_it(b.len())) {
            let hash = states::stored_hash(bytes);
            let cached = self.states.take(&self.state_key(key), hash, datatype);
            if cached.is_some() {
                return Ok(cached);
            }
        }
        match current {
            Some(obj) => crate::datatype::state_of(obj, datatype),
            None => Ok(None),
        }
    }

    /// Keeps `state`, the state just written as `encoded`, for the key's
    /// next update.
    fn keep_state(&self, key: &StorageKey, encoded: &[u8], state: State) {
        if self.states.worth_it(encoded.len()) {
            let stored = states::stored_hash(encoded);
            self.states
                .keep(self.state_key(key), stored, state, encoded.len());
        }
    }

    fn state_key(&self, key: &StorageKey) -> states::StateKey {
        (self.partition, key.bucket.clone(), key.key.clone())
    }

    /// Stores `next` over `current` unless they are equal, as `layout`
    /// says. `sent` is `next`'s encoding when the request carried it, with
    /// where this node's commit log already holds those bytes, if it does.
    fn store(
        &self,
        key: &StorageKey,
        current: Option<&RiakObject>,
        next: &RiakObject,
        sent: Option<(Bytes, Option<Lsn>)>,
        records: Records,
        layout: Layout<'_>,
    ) -> Result<Written, KvError> {
        let siblings = next.siblings.len();
        let (bytes, same_as) = match sent {
            Some((bytes, logged_at)) => (bytes, logged_at),
            None => (Bytes::from(codec::encode(next)), None),
        };
        if current == Some(next) {
            if records == Records::Skip {
                // A handed object sent again after a crash of this node
                // may have reached the backend without its side entries
                // or its change.
                let entries = Entries::holding(next, layout.ttl_secs);
                self.stores.set_side((&key.bucket, &key.key), &entries)?;
                let persistent = self.target(&key.bucket).persistent();
                let named = (key.bucket.as_slice(), key.key.as_slice());
                let (deleted, expiry) = (next.is_deleted(), entries.expiry());
                (self.stores).record_write(named, deleted, persistent, expiry)?;
            }
            return Ok(Written {
                durability: self.durability_of_stored(&key.bucket),
                delta: None,
                encoded: bytes,
                siblings,
                logged_at: None,
            });
        }
        let entries = Entries::between(current, next, layout.ttl_secs);
        let (durability, logged_at) = match layout.shape {
            Shape::Whole => {
                let put = Put::object(key, &bytes, entries).tombstone_if(next.is_deleted());
                let put = (put, same_as);
                self.write(key, put, layout.old_root, records)?
            }
            Shape::Segmented(state) => {
                self.write_segmented(key, next, state, entries, layout.old_root, records)?
            }
        };
        Ok(Written {
            encoded: bytes,
            delta: None,
            siblings,
            durability,
            logged_at,
        })
    }

    /// Writes `first` (logged as a reference to the record at its
    /// `same_as` when that holds the same bytes), then removes the
    /// segments `old_root` names, and logs each write in that order unless
    /// `records` says not to. Returns how the writes become durable and
    /// where `first`'s record starts. Caller holds the key's lock.
    fn write(
        &self,
        key: &StorageKey,
        first: (Put<'_>, Option<Lsn>),
        old_root: Option<&eddy_dt::Root>,
        records: Records,
    ) -> Result<(Durability, Option<Lsn>), KvError> {
        let mut puts = vec![first.0];
        if let Some(root) = old_root {
            puts.extend(segmented_put::dead_segments(key, root.ids()));
        }
        self.write_all(key, &puts, first.1, records)
    }

    /// Logs each of `puts` in order unless `records` says not to (the
    /// first as a reference to the record at `same_as`, if given), then
    /// writes them to the backend, as one batch, and tells the side store
    /// what they did to index entries. Returns how they become durable and
    /// where the first's record starts.
    ///
    /// The records go first: a crash at any point after them replays
    /// them, into the backend and the side store alike, so the two agree
    /// after any crash; before them, nothing was touched. A write the
    /// backend refuses after its records were logged returns the error,
    /// and a restart before the next checkpoint applies its records.
    fn write_all(
        &self,
        key: &StorageKey,
        puts: &[Put<'_>],
        same_as: Option<Lsn>,
        records: Records,
    ) -> Result<(Durability, Option<Lsn>), KvError> {
        let target = self.checked_target(&key.bucket)?;
        let logged = match (records, target) {
            (Records::Skip, Target::Log(_)) => (Durability::Backend, None),
            _ => self.log_all(target, puts, same_as)?,
        };
        let stores = &self.stores;
        match puts {
            // One object without an expiry, as most writes are: the
            // backend's own put, which need not copy it into a batch.
            [
                Put {
                    bucket,
                    key: k,
                    value: Some(value),
                    entries,
                    ..
                },
            ] if entries.expiry() == 0 => {
                let specs = stores.backend_specs(bucket, entries);
                stores
                    .backend
                    .put(bucket, k, value, &specs, WriteOptions::NO_SYNC)?;
            }
            _ => {
                let mut batch = eddy_storage::WriteBatch::default();
                for p in puts {
                    match p.value {
                        Some(value) => {
                            let specs = stores.backend_specs(&p.bucket, &p.entries);
                            let expiry = Some(p.entries.expiry()).filter(|e| *e != 0);
                            batch.put(&p.bucket, &p.key, value, specs, expiry)
                        }
                        None => batch.delete(&p.bucket, &p.key),
                    };
                }
                stores.backend.write(batch, WriteOptions::NO_SYNC)?;
            }
        }
        for p in puts {
            stores.set_side((&p.bucket, &p.key), &p.entries)?;
        }
        let object = puts
            .iter()
            .find(|p| *p.bucket == key.bucket && *p.key == key.key);
        if let Some(p) = object {
            let named = (p.bucket.as_ref(), p.key.as_ref());
            let expiry = p.entries.expiry();
            stores.record_write(named, p.deleted, target.persistent(), expiry)?;
        }
        self.written[Self::stripe(key)].notify_all();
        Ok(logged)
    }

    /// Appends the records of `puts` to the log `target` names, in order
    /// (the first as a reference to the record at `same_as`, if given).
    /// Returns how they become durable and where the first's starts.
    fn log_all(
        &self,
        target: Target<'_>,
        puts: &[Put<'_>],
        same_as: Option<Lsn>,
    ) -> Result<(Durability, Option<Lsn>), KvError> {
        let mut durability = Durability::Backend;
        let mut first_at = None;
        for (i, p) in puts.iter().enumerate() {
            let op = match p.value {
                Some(value) => Op::Put { value },
                None => Op::Delete,
            };
            let same = if i == 0 { same_as } else { None };
            let (d, at) = self.logged(target, (&p.bucket, &p.key), op, same)?;
            durability = d;
            if i == 0 {
                first_at = at;
            }
        }
        Ok((durability, first_at))
    }

    /// Removes the key if it still holds exactly this tombstone.
    fn reap(&self, key: &StorageKey, tombstone: &VersionVector) -> Result<(), KvError> {
        let _locked = self.lock(key);
        match self.read(key)? {
            Some(obj) if obj.is_deleted() && obj.vv == *tombstone => {
                // A tombstone has no index entries: the side store holds
                // nothing for it. Logged first, as `write_all` says.
                let target = self.checked_target(&key.bucket)?;
                self.logged(target, (&key.bucket, &key.key), Op::Delete, None)?;
                let backend = &self.stores.backend;
                backend.delete(&key.bucket, &key.key, WriteOptions::NO_SYNC)?;
                let named = (key.bucket.as_slice(), key.key.as_slice());
                Ok(self
                    .stores
                    .record_change(named, true, target.persistent())?)
            }
            _ => Ok(()),
        }
    }

    /// Where writes to `bucket` become durable.
    fn target(&self, bucket: &[u8]) -> Target<'_> {
        match &self.log {
            _ if !self.stores.backend.capabilities_for(bucket).persistent => Target::Volatile,
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
        (bucket, key): (&[u8], &[u8]),
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
            incarnation: self.incarnation,
            bucket,
            key,
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

    /// Answers a put: at once, or once its write is durable if `sync`.
    fn reply_put(&self, durability: Durability, sync: SyncLevel, reply: ReplyTo) {
        if sync == SyncLevel::Written {
            return self.answer_put(&reply, Ok(PutAck { durable: false }));
        }
        let waiting = Pending {
            partition: self.partition,
            reply,
        };
        match (durability, &self.log) {
            (Durability::Log(lsn), Some(log)) if sync == SyncLevel::Disk => {
                log.when_synced(lsn, Box::new(move |r| waiting.answer(r)));
            }
            (Durability::Log(lsn), Some(log)) if lsn > log.durable() => {
                log.when_durable(lsn, Box::new(move |r| waiting.answer(r)));
            }
            (Durability::Log(_), _) | (Durability::Volatile, _) => waiting.answer(Ok(())),
            (Durability::Backend, _) => {
                // No commit log: the backend's sync may wait on the disk,
                // so it runs off the caller's (possibly async) thread.
                let backend = self.stores.backend.clone();
                let sync = move || waiting.answer(backend.sync().map_err(|e| e.to_string()));
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) => drop(runtime.spawn_blocking(sync)),
                    Err(_) => sync(),
                }
            }
        }
    }
}

/// A durable put reply waiting for its write to be synced.
struct Pending {
    partition: Partition,
    reply: ReplyTo,
}

impl Pending {
    /// Sends the reply: durable, or the error that kept it from being.
    fn answer(self, durable: Result<(), String>) {
        let result = durable
            .map(|()| PutAck { durable: true })
            .map_err(KvError::SyncFailed);
        self.reply.send(
            self.partition,
            VnodeReply::Put(result),
            LocalHint::default(),
        );
    }
}

/// What a key holds as stored.
struct Stored {
    raw: Option<Bytes>,
    /// The root, when `raw` is a segmented value's root record.
    root: Option<segments::StoredRoot>,
}

impl Stored {
    /// The version vector of what the key holds (its root's object's, or
    /// its stored object's), if it holds a readable object.
    fn version(&self) -> Option<VersionVector> {
        match &self.root {
            Some(r) => Some(r.object.vv.clone()),
            None => segments::version_of(self.raw.as_deref()?),
        }
    }
}

/// How a put stores its object.
struct Layout<'a> {
    shape: Shape,
    /// The root the key held, whose segments the write replaces.
    old_root: Option<&'a eddy_dt::Root>,
    /// The bucket's ttl (0: none), which stamps the object's expiry.
    ttl_secs: u64,
}

/// Whole, or as a root and segments ([`segments`]).
enum Shape {
    Whole,
    /// In segments: the object's one content's state.
    Segmented(State),
}

/// One record a write puts or removes, in the backend and the log.
struct Put<'a> {
    bucket: std::borrow::Cow<'a, [u8]>,
    key: std::borrow::Cow<'a, [u8]>,
    /// `None`: removed.
    value: Option<&'a [u8]>,
    /// What the write does to the key's index entries.
    entries: Entries,
    /// Whether the key holds no live object after it (removed, or a
    /// tombstone), for the change sequence.
    deleted: bool,
}

impl<'a> Put<'a> {
    /// The removal of `bucket`'s `key` (an object's: its index entries go
    /// too).
    fn removed(bucket: &'a [u8], key: &'a [u8]) -> Self {
        Put {
            bucket: bucket.into(),
            key: key.into(),
            value: None,
            entries: Entries::Removed,
            deleted: true,
        }
    }

    /// The object record of `key` (a live object's; see
    /// [`Put::tombstone_if`]).
    fn object(key: &'a StorageKey, value: &'a [u8], entries: Entries) -> Self {
        Put {
            bucket: key.bucket.as_slice().into(),
            key: key.key.as_slice().into(),
            value: Some(value),
            entries,
            deleted: false,
        }
    }

    /// This record, marked as a tombstone's if `deleted`.
    fn tombstone_if(self, deleted: bool) -> Self {
        Put { deleted, ..self }
    }
}

/// Whether a write appends its commit-log record, or is made durable by
/// its writer's [`Vnode::sync_handed`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Records {
    Log,
    Skip,
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

impl Target<'_> {
    /// Whether the bucket's backend keeps data across restarts.
    fn persistent(self) -> bool {
        !matches!(self, Target::Volatile)
    }
}
