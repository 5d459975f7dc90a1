//! The put coordinator (Riak's put FSM): the coordinating vnode applies
//! the write as its actor and answers with the new object; then the object
//! goes to the other replicas at once; answer at w/dw/pw.
//!
//! The coordinating vnode is the first local one of the preflist that is
//! not marked damaged (design note 009), else the first reachable one.
//! A vnode that refuses before writing (a condition, a limit, a full disk)
//! refuses the whole put: nothing was replicated.
//!
//! Bucket props (design note 010 §2): puts to vnodes of other nodes carry
//! the stamped props entries the coordinator resolved. A replica holding a
//! newer entry refuses with its entries; the coordinator applies them to
//! its registry and runs the put again under the props they resolve to:
//! the client's write again if nothing was written, else the coordinated
//! object to every replica of the new preflist. At most
//! [`PROPS_RESTARTS_MAX`] times, then the refusal is the put's answer.

use std::sync::Arc;

use bytes::Bytes;
use eddy_object::{Content, VersionVector, codec};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::time::{Instant, timeout_at};

use super::put_delta::Behind;
use super::{PreflistEntry, quorum, storage_key};
use crate::core::put::{NodeIndex, PutCore};
use crate::core::put_run::{PutAction, PutEvent, PutRun, Retry};
use crate::node::Node;
use eddy_model::error::KvError;
use eddy_model::error::PutFailure;
use eddy_model::error::Signal;
use eddy_model::metadata::entries::PropsEntries;
use eddy_model::props::BucketProps;
use eddy_model::props::SyncOnWrite;
use eddy_model::request::{BucketRef, PutOptions, PutRequest, PutResponse};
use eddy_vnode::msg::{
    Conditions, Coordinate, DtDelta, PutKind, PutRequest as VnodePut, StorageKey, SyncLevel,
    VnodeId, VnodeReply, VnodeRequest, WritePolicy,
};
use eddy_vnode::reply::{LocalHint, Reply, ReplyTo};

/// How many times a put starts again under the newer bucket props a
/// replica refused it with, before it fails with that refusal.
const PROPS_RESTARTS_MAX: u32 = 3;

impl Node {
    /// Writes an object with the request's (or the bucket's) quorums.
    /// Counted and timed in the node's figures, whoever asks.
    pub async fn put(self: &Arc<Self>, req: PutRequest) -> Result<PutResponse, KvError> {
        self.metrics.puts.increment();
        let start = std::time::Instant::now();
        let result = self.coordinate_put(req).await;
        self.metrics.put_fsm_time.record_since(start);
        result
    }

    async fn coordinate_put(self: &Arc<Self>, req: PutRequest) -> Result<PutResponse, KvError> {
        let resolved = self.props_entries(&req.bucket)?;
        if !req.content.meta.deleted {
            refuse_plain_put(&req.bucket, &resolved.0)?;
        }
        let key = req.key.clone().unwrap_or_else(generate_key);
        self.check_key(&key)?;
        let coordinate =
            self.client_write((&req.bucket, &key), req.context, req.content, &req.options)?;
        let coordinated = self
            .put_client_write(&req.bucket, &key, &req.options, resolved, coordinate)
            .await?;
        self.put_response(&req.bucket, key, coordinated, &req.options)
    }

    /// Runs a client's write of `key` under the bucket's props (resolved
    /// as `resolved`) until every quorum is met; the coordinating vnode's
    /// object.
    pub(super) async fn put_client_write(
        self: &Arc<Self>,
        bucket: &BucketRef,
        key: &[u8],
        options: &PutOptions,
        resolved: (Arc<BucketProps>, Arc<PropsEntries>),
        coordinate: Coordinate,
    ) -> Result<Coordinated, KvError> {
        let target = Target {
            bucket,
            key,
            options,
            deadline: self.deadline(options.timeout_ms),
        };
        let write = Write {
            client: Some(coordinate),
            coordinated: None,
            spare: None,
        };
        self.put_under_props(&target, resolved, write, 0).await
    }

    /// The client's write of `content` over `context` as the coordinating
    /// vnode applies it: checked against the object limits, stamped with
    /// this node's time and a fresh vtag, with the options' conditions.
    pub(super) fn client_write(
        &self,
        (bucket, key): (&BucketRef, &[u8]),
        context: Option<VersionVector>,
        mut content: Content,
        options: &PutOptions,
    ) -> Result<Coordinate, KvError> {
        self.check_content(bucket, key, &content)?;
        content.meta.last_modified_us = self.config.clock.now_us();
        content.meta.vtag = generate_vtag();
        content.normalise_indexes();
        let conditions = Conditions {
            if_none_match: options.if_none_match,
            if_not_modified: options
                .if_not_modified
                .then(|| context.clone().unwrap_or_default()),
        };
        Ok(Coordinate {
            context: context.unwrap_or_default(),
            content,
            conditions,
            update: None,
        })
    }

    /// A put's answer once the coordinating vnode's object met every
    /// quorum: that object if the options ask for it.
    pub(super) fn put_response(
        &self,
        bucket: &BucketRef,
        key: Vec<u8>,
        coordinated: Coordinated,
        options: &PutOptions,
    ) -> Result<PutResponse, KvError> {
        self.warn_siblings(bucket, &key, coordinated.siblings);
        let object = match options.return_body || options.return_head {
            true => Some(codec::decode(&coordinated.encoded)?),
            false => None,
        };
        Ok(PutResponse { key, object })
    }

    /// Runs the put under the bucket's props and, when a replica holds
    /// newer ones (design note 010 §2), applies them and runs it again
    /// under them: from the start if nothing was written, else by sending
    /// the coordinated object to every replica of the new preflist.
    /// `restarts`: how many times the put started again already.
    pub(super) async fn put_under_props(
        self: &Arc<Self>,
        target: &Target<'_>,
        mut resolved: (Arc<BucketProps>, Arc<PropsEntries>),
        mut write: Write,
        mut restarts: u32,
    ) -> Result<Coordinated, KvError> {
        loop {
            let (props, entries) = resolved;
            let mut fsm = self.put_fsm(target, &props, entries)?;
            match fsm.run(&mut write).await {
                Err(KvError::Signal(Signal::PropsNewer(theirs)))
                    if restarts < PROPS_RESTARTS_MAX =>
                {
                    restarts += 1;
                    let BucketRef {
                        bucket_type,
                        bucket,
                    } = target.bucket;
                    tracing::debug!(restarts, "a replica has newer bucket props");
                    self.registry.apply_entries(bucket_type, bucket, &theirs)?;
                    resolved = self.props_entries(target.bucket)?;
                    if resolved.0.generation != props.generation {
                        // The bucket was dropped: what the coordinating
                        // vnode stored merged objects of the dropped
                        // generation, so the client's write starts again.
                        write.restart_client();
                    }
                }
                outcome => return outcome,
            }
        }
    }

    /// The coordinator of one run of a put under `props`.
    pub(super) fn put_fsm<'a>(
        self: &'a Arc<Self>,
        target: &'a Target<'a>,
        props: &BucketProps,
        entries: Arc<PropsEntries>,
    ) -> Result<PutFsm<'a>, KvError> {
        let options = target.options;
        let n = props.n_val;
        let w = quorum("w", options.w, props.w, n)?;
        let dw = quorum("dw", options.dw, props.dw, n)?;
        let pw = quorum("pw", options.pw, props.pw, n)?;
        let node_confirms = quorum("node_confirms", None, props.node_confirms, n)?;
        let key = storage_key(target.bucket, props, target.key);
        let hash = Node::key_hash(target.bucket, target.key);
        let preflist = self.preflist_entries(hash, n);
        if preflist.is_empty() {
            // A node that owns no partition (joining, or left) and sees
            // every owner down has no vnode to write to.
            let needed = w.max(dw);
            return Err(KvError::WriteQuorum(PutFailure::W { needed, got: 0 }));
        }
        let first = self.coordinator(&preflist);
        if let Some(vnode) = self.local_vnode(&preflist[first]) {
            vnode.check_writable(&key.bucket)?;
        }
        let remote = preflist.iter().any(|e| !e.local);
        let core = PutCore::new(preflist.len() as u32, w, dw, pw).with_node_confirms(node_confirms);
        Ok(PutFsm {
            node: self,
            steps: PutRun::new(preflist.len(), first, core),
            preflist,
            key,
            policy: self.write_policy(props),
            sync: Syncs {
                dw: dw > 0,
                on_write: props.sync_on_write,
            },
            props: remote.then_some(entries),
            deadline: target.deadline,
            wants_object: options.return_body || options.return_head,
        })
    }

    /// The vnode that should coordinate: the first local one not marked
    /// damaged (a marked vnode may have lost the key's latest version,
    /// design note 009), else the first unmarked one, else the first.
    fn coordinator(&self, preflist: &[PreflistEntry]) -> usize {
        let local = |e: &PreflistEntry| self.local_vnode(e);
        let healthy = |e: &PreflistEntry| local(e).is_none_or(|v| !v.is_marked());
        preflist
            .iter()
            .position(|e| local(e).is_some_and(|v| !v.is_marked()))
            .or_else(|| preflist.iter().position(healthy))
            .unwrap_or(0)
    }

    /// Warns of an object written with more siblings than
    /// `object.siblings.warning_threshold`, naming it as the large-object
    /// warning does ([`BucketRef::object_name`]).
    fn warn_siblings(&self, bucket: &BucketRef, key: &[u8], siblings: usize) {
        if siblings > self.config.siblings_warn {
            self.metrics.siblings_warnings.increment();
            let object = bucket.object_name(key);
            tracing::warn!(%object, siblings, "object has many siblings");
        }
    }
}

/// The coordinating vnode's object (empty when it replicated a delta and
/// nobody asked for the object).
pub(super) struct Coordinated {
    pub(super) encoded: Bytes,
    pub(super) siblings: usize,
}

/// What a put writes and when it must answer, whatever the props.
pub(super) struct Target<'a> {
    pub(super) bucket: &'a BucketRef,
    /// The client's key: its storage key depends on the bucket's
    /// generation, which a run under newer props may change.
    pub(super) key: &'a [u8],
    pub(super) options: &'a PutOptions,
    pub(super) deadline: Instant,
}

/// A put's write: the client's until a vnode coordinated it, then the
/// object that vnode stored (which a run under newer props sends to
/// every replica).
pub(super) struct Write {
    pub(super) client: Option<Coordinate>,
    pub(super) coordinated: Option<Written>,
    /// The client's write kept after a vnode coordinated it, when the
    /// put has remote replicas (only those can refuse under newer props).
    pub(super) spare: Option<Coordinate>,
}

impl Write {
    /// Makes the client's write the next run's again, if it was kept.
    fn restart_client(&mut self) {
        if let Some(client) = self.spare.take() {
            self.client = Some(client);
            self.coordinated = None;
        }
    }
}

/// One run of a put: its preflist, the coordinating vnode's place in it,
/// key, policy and deadline.
pub(super) struct PutFsm<'a> {
    node: &'a Arc<Node>,
    pub(super) preflist: Arc<[PreflistEntry]>,
    /// The run's decisions: who coordinates, who next after a refusal,
    /// when the replies are enough.
    pub(super) steps: PutRun,
    key: StorageKey,
    policy: WritePolicy,
    sync: Syncs,
    /// The bucket props entries the policy came from, sent to vnodes of
    /// other nodes; `None` when every replica is local (one registry).
    props: Option<Arc<PropsEntries>>,
    deadline: Instant,
    /// The client asked for the stored object (return_body/return_head).
    pub(super) wants_object: bool,
}

/// What makes a replica sync before it replies: the request's dw, and the
/// bucket's `sync_on_write` (all: every replica to disk; one: the
/// coordinating vnode to disk).
struct Syncs {
    dw: bool,
    on_write: SyncOnWrite,
}

impl Syncs {
    fn level(&self, coordinating: bool) -> SyncLevel {
        match (self.on_write.syncs(coordinating), self.dw) {
            (true, _) => SyncLevel::Disk,
            (false, true) => SyncLevel::Durable,
            (false, false) => SyncLevel::Written,
        }
    }
}

impl PutFsm<'_> {
    /// Runs the put to its answer: the coordinating vnode's object once
    /// every quorum is met. A replica's refusal under newer bucket props
    /// ends the run at once, `write` keeping what was not yet sent or
    /// what was coordinated.
    async fn run(&mut self, write: &mut Write) -> Result<Coordinated, KvError> {
        let node = self.node;
        let (tx, mut rx, coordinated) = match write.coordinated.take() {
            None => self.coordinate(write).await?,
            Some(coordinated) => {
                let (tx, rx) = unbounded_channel::<Reply>();
                let hint = LocalHint::default();
                if let PutAction::Replicate { except } =
                    self.steps.step(PutEvent::CoordinatedBefore)
                {
                    self.replicate(&coordinated, hint, &tx, except);
                }
                (tx, rx, coordinated)
            }
        };
        node.metrics.vnode_puts.add(self.preflist.len() as u64);
        drop(tx);
        let mut behind = Behind::default();
        let mut action = self.steps.step(PutEvent::Replicated);
        let answer = loop {
            match action {
                PutAction::Done(answer) => break answer,
                PutAction::Newer(newer) => {
                    write.coordinated = Some(coordinated);
                    return Err(newer);
                }
                _ => {}
            }
            let reply = match timeout_at(self.deadline, behind.next(&mut rx)).await {
                Ok(Some(reply)) => reply,
                Ok(None) => {
                    action = self.steps.step(PutEvent::RepliesEnded);
                    if let PutAction::CatchUp = action {
                        self.send_whole(&coordinated, &mut behind).await?;
                    }
                    continue;
                }
                Err(_) => return Err(KvError::Timeout),
            };
            action = match self.catch_up(reply, &mut behind) {
                Some(reply) => self.record(reply),
                None => self.steps.step(PutEvent::Behind),
            };
        };
        // A quorum missed for want of disk or descriptors is answered with
        // that cause, so the client hears it is transient; /health reports
        // it until a write is acknowledged again.
        if let Err(e) = answer {
            node.write_refusal.refused(&e);
            return Err(e);
        }
        node.write_refusal.accepted();
        let known = behind.whole.clone();
        self.catch_up_later(&coordinated, behind);
        let encoded = match (&coordinated.delta, known) {
            (None, _) => coordinated.encoded,
            (Some(_), Some(whole)) if self.wants_object => whole,
            (Some(_), _) if self.wants_object => self.fetch_whole(&coordinated).await?,
            (Some(_), _) => Bytes::new(),
        };
        Ok(Coordinated {
            encoded,
            siblings: coordinated.siblings,
        })
    }

    /// Has the coordinating vnode apply the client's write, then sends
    /// its object to the other replicas.
    async fn coordinate(
        &mut self,
        write: &mut Write,
    ) -> Result<(UnboundedSender<Reply>, UnboundedReceiver<Reply>, Written), KvError> {
        let node = self.node;
        // A vnode of another node may be handing its partition off or be
        // gone: the write then goes to the next replica, once each.
        let spare = match self.preflist.iter().any(|e| !e.local) {
            true => write.client.clone(),
            false => None,
        };
        let idempotent = write.client.as_ref().is_none_or(|c| c.update.is_none());
        self.steps.retry(Retry::of(spare.is_some(), idempotent));
        loop {
            let (tx, mut rx) = unbounded_channel::<Reply>();
            let Some(client) = write.client.take().or_else(|| spare.clone()) else {
                return Err(KvError::Unreachable("no replica took the write".into()));
            };
            let first = self.first();
            let req = self.request(PutKind::Coordinate(Box::new(client)), first);
            let to = &self.preflist[first].id;
            let partition = to.partition;
            node.deliver(to, req, ReplyTo::Local(tx.clone()), LocalHint::default());
            match self.await_coordinated(&mut rx).await {
                Ok(coordinated) => {
                    write.spare = spare;
                    let hint = coordinated.hint;
                    if let PutAction::Replicate { except } = self.steps.step(PutEvent::Coordinated)
                    {
                        self.replicate(&coordinated, hint, &tx, except);
                    }
                    return Ok((tx, rx, coordinated));
                }
                Err(e) => match self.steps.step(PutEvent::CoordinateFailed(&e)) {
                    PutAction::Coordinate(_) => {
                        tracing::debug!(partition = partition.0, "coordinating elsewhere: {e}");
                    }
                    _ => {
                        // Kept for a run under newer props, which follows
                        // only a refusal: the vnode wrote nothing.
                        write.client = spare;
                        return Err(e);
                    }
                },
            }
        }
    }

    /// Waits for the coordinating vnode's object. A refusal before it
    /// wrote is the put's answer: nothing was replicated.
    async fn await_coordinated(
        &mut self,
        rx: &mut UnboundedReceiver<Reply>,
    ) -> Result<Written, KvError> {
        loop {
            let reply = match timeout_at(self.deadline, rx.recv()).await {
                Ok(Some(reply)) => reply,
                Ok(None) => return Err(KvError::Timeout),
                Err(_) => return Err(KvError::Timeout),
            };
            match reply.reply {
                VnodeReply::Coordinated {
                    encoded,
                    siblings,
                    delta,
                } => {
                    return Ok(Written {
                        encoded,
                        siblings,
                        hint: reply.hint,
                        delta: delta.map(|d| (*d, self.preflist[self.first()].id.clone())),
                    });
                }
                VnodeReply::Put(Err(e)) => {
                    self.node.write_refusal.refused(&e);
                    return Err(e);
                }
                VnodeReply::Put(Ok(_)) => {
                    // Counted; the run answers only once it replicated.
                    self.record(reply);
                }
                VnodeReply::Get(_) | VnodeReply::Fold(_) => {}
            }
        }
    }

    /// Sends the coordinated object (or its delta) to every replica but
    /// `except` (the vnode that coordinated it, in this run).
    fn replicate(
        &self,
        written: &Written,
        hint: LocalHint,
        tx: &UnboundedSender<Reply>,
        except: Option<usize>,
    ) {
        let others = self
            .preflist
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != except);
        for (i, entry) in others {
            let kind = match &written.delta {
                Some((delta, _)) => {
                    self.node.metrics.datatype_deltas.increment();
                    PutKind::DtDelta(Box::new(delta.clone()))
                }
                None => PutKind::Replicate {
                    encoded: written.encoded.clone(),
                },
            };
            let req = self.request(kind, i);
            // The commit-log position is a fact of this node only.
            let hint = match entry.local {
                true => hint,
                false => LocalHint::default(),
            };
            self.node
                .deliver(&entry.id, req, ReplyTo::Local(tx.clone()), hint);
        }
    }

    /// Counts one replica's reply; what the run does next.
    pub(super) fn record(&mut self, reply: Reply) -> PutAction {
        let (node, primary) = self.replier(reply.partition);
        let event = match reply.reply {
            VnodeReply::Put(Ok(ack)) => PutEvent::Applied {
                node,
                primary,
                durable: ack.durable,
            },
            VnodeReply::Put(Err(error)) => {
                match &error {
                    KvError::Signal(Signal::PropsNewer(_)) => {}
                    KvError::Unreachable(_) => {
                        tracing::debug!(partition = reply.partition.0, "{error}")
                    }
                    _ => tracing::warn!(partition = reply.partition.0, "vnode put failed: {error}"),
                }
                PutEvent::Refused { primary, error }
            }
            VnodeReply::Coordinated { .. } | VnodeReply::Get(_) | VnodeReply::Fold(_) => {
                return PutAction::Wait;
            }
        };
        self.steps.step(event)
    }

    /// The node a reply's vnode runs on (as the index of its first entry
    /// in the preflist, so that two vnodes of one node count once for
    /// `node_confirms`) and whether it is a primary.
    pub(super) fn replier(&self, p: eddy_ring::Partition) -> (NodeIndex, bool) {
        let Some(entry) = self.preflist.iter().find(|e| e.id.partition == p) else {
            return (NodeIndex::MAX, false);
        };
        let node = self
            .preflist
            .iter()
            .position(|e| e.id.node == entry.id.node)
            .unwrap_or(0);
        (node as NodeIndex, entry.primary)
    }

    /// The coordinating vnode's place in the preflist.
    pub(super) fn first(&self) -> usize {
        self.steps.first()
    }

    pub(super) fn node(&self) -> &Arc<Node> {
        self.node
    }

    pub(super) fn key(&self) -> &StorageKey {
        &self.key
    }

    pub(super) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The put to the replica at `i` in the preflist.
    pub(super) fn request(&self, kind: PutKind, i: usize) -> VnodeRequest {
        let entry = &self.preflist[i];
        VnodeRequest::Put(VnodePut {
            key: self.key.clone(),
            kind,
            policy: self.policy,
            sync: self.sync.level(i == self.first()),
            props: match entry.local {
                true => None,
                false => self.props.clone(),
            },
        })
    }
}

/// The coordinating vnode's reply, with what it knows locally.
pub(super) struct Written {
    pub(super) encoded: Bytes,
    pub(super) siblings: usize,
    pub(super) hint: LocalHint,
    /// A set or map operation's delta, replicated instead of the object, and the
    /// vnode that coordinated it (which holds the whole object).
    pub(super) delta: Option<(DtDelta, VnodeId)>,
}

/// A plain object put into a bucket of a data type is refused: its value
/// would be a sibling no data type read could use (design note 020).
/// Deletes (tombstones) are plain KV requests and pass.
pub(super) fn refuse_plain_put(bucket: &BucketRef, props: &BucketProps) -> Result<(), KvError> {
    let Some(datatype) = props
        .datatype
        .as_deref()
        .and_then(eddy_dt::DataType::from_name)
    else {
        return Ok(());
    };
    Err(eddy_model::error::DatatypeBucketError::PlainPut {
        bucket_type: bucket.bucket_type.clone(),
        datatype: datatype.name(),
    }
    .into())
}

/// A server-generated key, like Riak's: 27 random base-62 characters.
pub(super) fn generate_key() -> Vec<u8> {
    eddy_object::base62::random(27)
}

/// A random version tag (the HTTP ETag).
fn generate_vtag() -> Vec<u8> {
    eddy_object::base62::random(22)
}
