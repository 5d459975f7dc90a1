//! The decisions of one run of a put, without I/O (Riak's put FSM less its
//! messaging): the coordinator's drivers feed it what the vnodes answered
//! and do what it returns. The single put (`Node::put`, one channel) and a
//! multi-put's waves (one channel per wave, batched sends) step the same
//! machine, each with its own sends and receives.
//!
//! Which vnode coordinates: the driver picks the first (the first local
//! one not marked damaged, else the first reachable one); a coordinating
//! vnode that is moving (handed off, closing, shutting down) or out of
//! reach is replaced by the next replica of the preflist, each asked at
//! most once, when the client's write was kept for it (only puts with
//! replicas on other nodes keep it). A data type operation is not
//! idempotent: after an unreachable answer, which leaves open whether the
//! vnode applied it, no other replica is asked (Riak's
//! `retry_put_coordinator_failure=false` for data types).
//!
//! Once the coordinating vnode stored the write, its object goes to every
//! other replica (every replica, when the object is an earlier run's);
//! each reply feeds the quorum core ([`PutCore`]) until it has enough, and
//! the run answers: `Ok`, or the first quorum that cannot be met, told as
//! a resource's exhaustion when a replica refused for want of one (so the
//! client hears it is transient). A replica's refusal under newer bucket
//! props ends the run at once: the put runs again under them.
//!
//! A data type operation's delta goes out instead of the object (design
//! note 020 §6); a replica that does not hold the version it applies to
//! answers `Behind`, which is not counted. If the other replies end
//! without an answer, the run has the whole object sent to those replicas
//! and counts their answers; once it answers, the driver catches up the
//! ones still behind in the background, as read repair does.
//!
//! Invariants: the replicas asked to coordinate are distinct, the first
//! one included, so there are at most as many as the preflist has; the
//! run answers only after its object went to the replicas.

use eddy_model::error::{KvError, Signal};

use super::put::{NodeIndex, PutCore, PutReply};

/// One run of a put: who coordinates it, who next after a refusal, and
/// when the replies are enough.
#[derive(Debug)]
pub struct PutRun {
    /// Replicas in the preflist.
    len: usize,
    /// The coordinating vnode's place in the preflist.
    first: usize,
    /// Coordinating vnodes asked, the current one included.
    tries: usize,
    /// Which refusals another replica may follow.
    retry: Retry,
    /// The replies counted against the put's quorums.
    core: PutCore,
    /// The object went to the replicas: the replies may answer the run.
    replicating: bool,
    /// The first refusal for want of a resource: the answer if a quorum
    /// fails.
    exhausted: Option<KvError>,
    /// Replicas that answered `Behind` and were not yet sent the whole
    /// object.
    behind: usize,
}

/// Which refusals of a coordinating vnode another replica may follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// None: the client's write was not kept (every replica is local).
    Never,
    /// A vnode moving or out of reach.
    Moving,
    /// A vnode moving, not one out of reach: the write is a data type
    /// operation, which another replica could apply a second time.
    MovingNotUnreachable,
}

impl Retry {
    /// The retry of a put whose client's write was `kept` for another
    /// replica, `idempotent` unless it is a data type operation.
    pub fn of(kept: bool, idempotent: bool) -> Retry {
        match (kept, idempotent) {
            (false, _) => Retry::Never,
            (true, true) => Retry::Moving,
            (true, false) => Retry::MovingNotUnreachable,
        }
    }
}

/// What happened to a run, as the driver saw it.
#[derive(Debug)]
pub enum PutEvent<'a> {
    /// The coordinating vnode answered with this error instead of its
    /// object (nothing was replicated).
    CoordinateFailed(&'a KvError),
    /// The coordinating vnode stored the write; its object is to go to
    /// the other replicas.
    Coordinated,
    /// The object a vnode of an earlier run coordinated is this run's
    /// write: it goes to every replica.
    CoordinatedBefore,
    /// The object went to the replicas [`PutAction::Replicate`] named.
    Replicated,
    /// A vnode applied the write (`node`: which physical node it runs
    /// on, any number the driver gives each; `durable`: synced first).
    Applied {
        node: NodeIndex,
        primary: bool,
        durable: bool,
    },
    /// A vnode refused the write.
    Refused { primary: bool, error: KvError },
    /// A replica does not hold the version a data type operation's delta
    /// applies to: it waits for the whole object (not counted).
    Behind,
    /// No reply is left to come.
    RepliesEnded,
}

/// What the driver does next.
#[derive(Debug)]
pub enum PutAction {
    /// Sends the client's write to the replica at this place in the
    /// preflist, now the coordinating one.
    Coordinate(usize),
    /// The run fails with the error of the event that led here.
    Fail,
    /// Sends the object to every replica of the preflist but the one at
    /// `except`.
    Replicate { except: Option<usize> },
    /// Waits for the next reply.
    Wait,
    /// A replica holds newer bucket props (its refusal, with them): the
    /// run ends, and the put runs again under them.
    Newer(KvError),
    /// Sends the whole object to the replicas that answered `Behind`
    /// since the last catch-up; their answers are counted, and the run
    /// waits for them (their end is another `RepliesEnded`).
    CatchUp,
    /// The run's answer: every quorum met, or the error to answer with.
    Done(Result<(), KvError>),
}

impl PutRun {
    /// A run over a preflist of `len` replicas, coordinated by the one at
    /// `first`, counting replies in `core`; it asks no other replica to
    /// coordinate until [`PutRun::retry`] allows.
    pub fn new(len: usize, first: usize, core: PutCore) -> PutRun {
        PutRun {
            len,
            first,
            tries: 1,
            retry: Retry::Never,
            core,
            replicating: false,
            exhausted: None,
            behind: 0,
        }
    }

    /// Sets which refusals another replica may follow.
    pub fn retry(&mut self, retry: Retry) {
        self.retry = retry;
    }

    /// The coordinating vnode's place in the preflist.
    pub fn first(&self) -> usize {
        self.first
    }

    /// Takes one event; what to do next.
    pub fn step(&mut self, event: PutEvent<'_>) -> PutAction {
        match event {
            PutEvent::CoordinateFailed(e) => self.coordinate_failed(e),
            PutEvent::Coordinated => self.replicate(Some(self.first)),
            PutEvent::CoordinatedBefore => self.replicate(None),
            PutEvent::Replicated => self.settle(),
            PutEvent::Applied {
                node,
                primary,
                durable,
            } => {
                let applied = PutReply::Ok {
                    node,
                    primary,
                    durable,
                };
                self.core.add_result(applied);
                self.settle()
            }
            PutEvent::Refused {
                error: e @ KvError::Signal(Signal::PropsNewer(_)),
                ..
            } => PutAction::Newer(e),
            PutEvent::Refused { primary, error } => {
                self.core.add_result(PutReply::Failed { primary });
                if is_exhaustion(&error) {
                    self.exhausted.get_or_insert(error);
                }
                self.settle()
            }
            PutEvent::Behind => {
                self.behind += 1;
                PutAction::Wait
            }
            PutEvent::RepliesEnded if self.behind > 0 => {
                self.behind = 0;
                PutAction::CatchUp
            }
            PutEvent::RepliesEnded => PutAction::Done(self.answer()),
        }
    }

    fn replicate(&mut self, except: Option<usize>) -> PutAction {
        self.replicating = true;
        PutAction::Replicate { except }
    }

    /// The answer once the replies are enough, and the object went out.
    fn settle(&mut self) -> PutAction {
        match self.replicating && self.core.enough() {
            true => PutAction::Done(self.answer()),
            false => PutAction::Wait,
        }
    }

    /// The answer so far: a quorum missed for want of disk or descriptors
    /// is answered with that cause.
    fn answer(&mut self) -> Result<(), KvError> {
        self.core
            .response()
            .map_err(|q| self.exhausted.take().unwrap_or(KvError::WriteQuorum(q)))
    }

    fn coordinate_failed(&mut self, e: &KvError) -> PutAction {
        let follows = match self.retry {
            Retry::Never => false,
            Retry::Moving => moving(e),
            Retry::MovingNotUnreachable => moving(e) && !matches!(e, KvError::Unreachable(_)),
        };
        if !follows || self.tries >= self.len {
            return PutAction::Fail;
        }
        self.tries += 1;
        self.first = (self.first + 1) % self.len;
        PutAction::Coordinate(self.first)
    }
}

/// A replica refused for want of a resource (disk, descriptors, memory):
/// the put's answer, if it fails, says so rather than only that too few
/// replicas wrote.
fn is_exhaustion(e: &KvError) -> bool {
    matches!(
        e,
        KvError::Storage(eddy_storage::StorageError::Exhausted { .. })
    )
}

/// A coordinating vnode that did not apply the write because it is being
/// handed off, closing, or out of reach: another replica may.
fn moving(e: &KvError) -> bool {
    matches!(
        e,
        KvError::Storage(eddy_storage::StorageError::Closed)
            | KvError::Signal(Signal::NotHosted(_))
            | KvError::ShuttingDown
            | KvError::Unreachable(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An action as the tests compare it.
    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Coordinate(usize),
        Fail,
        Replicate(Option<usize>),
        Wait,
        Newer,
        CatchUp,
        Done(Result<(), String>),
    }

    fn seen(action: PutAction) -> Seen {
        match action {
            PutAction::Coordinate(i) => Seen::Coordinate(i),
            PutAction::Fail => Seen::Fail,
            PutAction::Replicate { except } => Seen::Replicate(except),
            PutAction::Wait => Seen::Wait,
            PutAction::Newer(_) => Seen::Newer,
            PutAction::CatchUp => Seen::CatchUp,
            PutAction::Done(answer) => Seen::Done(answer.map_err(|e| e.to_string())),
        }
    }

    /// A refusal of each kind the machine tells apart.
    #[derive(Clone, Copy, Debug)]
    enum Kind {
        Closed,
        Unreachable,
        Final,
    }

    fn error(kind: Kind) -> KvError {
        match kind {
            Kind::Closed => KvError::Storage(eddy_storage::StorageError::Closed),
            Kind::Unreachable => KvError::Unreachable("gone".into()),
            Kind::Final => KvError::Timeout,
        }
    }

    fn exhausted() -> KvError {
        KvError::Storage(eddy_storage::StorageError::Exhausted {
            resource: eddy_storage::Resource::Disk,
            detail: "full".into(),
        })
    }

    fn newer() -> KvError {
        KvError::Signal(Signal::PropsNewer(Box::default()))
    }

    fn kind() -> impl Strategy<Value = Kind> {
        prop_oneof![
            Just(Kind::Closed),
            Just(Kind::Unreachable),
            Just(Kind::Final)
        ]
    }

    fn retry() -> impl Strategy<Value = Retry> {
        prop_oneof![
            Just(Retry::Never),
            Just(Retry::Moving),
            Just(Retry::MovingNotUnreachable)
        ]
    }

    fn failed(run: &mut PutRun, kind: Kind) -> Seen {
        seen(run.step(PutEvent::CoordinateFailed(&error(kind))))
    }

    fn run_of_three(w: u32) -> PutRun {
        PutRun::new(3, 0, PutCore::new(3, w, 0, 0))
    }

    fn applied(node: NodeIndex) -> PutEvent<'static> {
        PutEvent::Applied {
            node,
            primary: true,
            durable: false,
        }
    }

    fn refused(error: KvError) -> PutEvent<'static> {
        PutEvent::Refused {
            primary: true,
            error,
        }
    }

    #[test]
    fn a_moving_vnode_is_replaced_by_the_next_replica_once_each() {
        let mut run = PutRun::new(3, 1, PutCore::new(3, 2, 0, 0));
        run.retry(Retry::Moving);
        assert_eq!(failed(&mut run, Kind::Closed), Seen::Coordinate(2));
        assert_eq!(failed(&mut run, Kind::Closed), Seen::Coordinate(0));
        assert_eq!(run.first(), 0);
        assert_eq!(failed(&mut run, Kind::Closed), Seen::Fail);
    }

    #[test]
    fn a_data_type_operation_is_not_sent_on_after_an_unreachable_answer() {
        let mut run = run_of_three(2);
        run.retry(Retry::of(true, false));
        assert_eq!(failed(&mut run, Kind::Closed), Seen::Coordinate(1));
        assert_eq!(failed(&mut run, Kind::Unreachable), Seen::Fail);
    }

    #[test]
    fn a_write_not_kept_goes_nowhere_else() {
        let mut run = run_of_three(2);
        assert_eq!(failed(&mut run, Kind::Unreachable), Seen::Fail);
    }

    #[test]
    fn the_object_goes_to_the_others_or_to_all() {
        let mut run = PutRun::new(3, 2, PutCore::new(3, 2, 0, 0));
        assert_eq!(
            seen(run.step(PutEvent::Coordinated)),
            Seen::Replicate(Some(2))
        );
        let mut run = run_of_three(2);
        let action = run.step(PutEvent::CoordinatedBefore);
        assert_eq!(seen(action), Seen::Replicate(None));
    }

    #[test]
    fn replies_before_the_object_went_out_do_not_answer() {
        let mut run = run_of_three(1);
        assert_eq!(seen(run.step(applied(0))), Seen::Wait);
        run.step(PutEvent::Coordinated);
        assert_eq!(seen(run.step(PutEvent::Replicated)), Seen::Done(Ok(())));
    }

    #[test]
    fn a_quorum_missed_for_want_of_disk_says_so() {
        let mut run = run_of_three(2);
        run.step(PutEvent::Coordinated);
        run.step(PutEvent::Replicated);
        assert_eq!(seen(run.step(refused(exhausted()))), Seen::Wait);
        let answer = seen(run.step(refused(error(Kind::Final))));
        assert_eq!(answer, Seen::Done(Err(exhausted().to_string())));
    }

    #[test]
    fn a_refusal_under_newer_props_ends_the_run() {
        let mut run = run_of_three(1);
        run.step(PutEvent::CoordinatedBefore);
        run.step(PutEvent::Replicated);
        assert_eq!(seen(run.step(refused(newer()))), Seen::Newer);
    }

    #[test]
    fn replicas_behind_are_sent_the_whole_object_once_the_replies_end() {
        let mut run = run_of_three(3);
        run.step(PutEvent::Coordinated);
        run.step(PutEvent::Replicated);
        run.step(applied(0));
        assert_eq!(seen(run.step(PutEvent::Behind)), Seen::Wait);
        assert_eq!(seen(run.step(PutEvent::Behind)), Seen::Wait);
        assert_eq!(seen(run.step(PutEvent::RepliesEnded)), Seen::CatchUp);
        assert_eq!(seen(run.step(applied(1))), Seen::Wait);
        assert_eq!(seen(run.step(applied(2))), Seen::Done(Ok(())));
    }

    #[test]
    fn a_replica_behind_does_not_hold_up_an_answer() {
        let mut run = run_of_three(2);
        run.step(PutEvent::Coordinated);
        run.step(PutEvent::Replicated);
        run.step(applied(0));
        assert_eq!(seen(run.step(PutEvent::Behind)), Seen::Wait);
        assert_eq!(seen(run.step(applied(1))), Seen::Done(Ok(())));
    }

    /// A reply as the property tests send it.
    #[derive(Clone, Copy, Debug)]
    enum Answer {
        Applied { node: NodeIndex, durable: bool },
        Failed,
        Exhausted,
        Newer,
        Behind,
    }

    fn answer() -> impl Strategy<Value = Answer> {
        prop_oneof![
            4 => (0u32..3, any::<bool>()).prop_map(|(node, durable)| Answer::Applied { node, durable }),
            1 => Just(Answer::Failed),
            1 => Just(Answer::Exhausted),
            1 => Just(Answer::Newer),
            1 => Just(Answer::Behind),
        ]
    }

    proptest! {
        /// Against a model: the coordinating replicas follow the preflist
        /// round from the first, each asked once, and a refusal is
        /// followed exactly when its kind allows and a replica is left.
        #[test]
        fn coordinators_follow_the_model(len in 1usize..6, first in 0usize..6, retry in retry(),
                                         refusals in proptest::collection::vec(kind(), 0..8)) {
            let first = first % len;
            let mut run = PutRun::new(len, first, PutCore::new(len as u32, 1, 0, 0));
            run.retry(retry);
            let mut asked = vec![first];
            for kind in refusals {
                let allowed = !matches!(
                    (retry, kind),
                    (_, Kind::Final)
                        | (Retry::Never, _)
                        | (Retry::MovingNotUnreachable, Kind::Unreachable)
                );
                let model = match allowed && asked.len() < len {
                    true => Seen::Coordinate((first + asked.len()) % len),
                    false => Seen::Fail,
                };
                let action = failed(&mut run, kind);
                prop_assert_eq!(&action, &model);
                match action {
                    Seen::Coordinate(i) => {
                        prop_assert!(!asked.contains(&i));
                        prop_assert_eq!(run.first(), i);
                        asked.push(i);
                    }
                    _ => break,
                }
            }
        }

        /// Against a model (the quorum core fed alongside): the run waits
        /// until the core has enough, then answers as the core does, an
        /// exhaustion named when a quorum fails; a refusal under newer
        /// props ends it at once; a replica behind is not counted, and
        /// is sent the whole object if the replies end without an answer.
        #[test]
        fn answers_follow_the_model(w in 0u32..4, dw in 0u32..4, nc in 0u32..3,
                                    answers in proptest::collection::vec(answer(), 0..4)) {
            let core = || PutCore::new(3, w, dw, 0).with_node_confirms(nc);
            let mut run = PutRun::new(3, 0, core());
            let mut model = core();
            let mut exhausted_seen = false;
            let mut behind = 0;
            prop_assert_eq!(seen(run.step(PutEvent::Coordinated)), Seen::Replicate(Some(0)));
            let model_answer = |model: &PutCore, exhausted_seen: bool| match model.response() {
                Ok(()) => Ok(()),
                Err(_) if exhausted_seen => Err(exhausted().to_string()),
                Err(q) => Err(KvError::WriteQuorum(q).to_string()),
            };
            let mut action = seen(run.step(PutEvent::Replicated));
            for a in answers {
                let expected = match model.enough() {
                    true => Seen::Done(model_answer(&model, exhausted_seen)),
                    false => Seen::Wait,
                };
                prop_assert_eq!(&action, &expected);
                if matches!(action, Seen::Done(_)) {
                    return Ok(());
                }
                let event = match a {
                    Answer::Applied { node, durable } => {
                        model.add_result(PutReply::Ok { node, primary: true, durable });
                        PutEvent::Applied { node, primary: true, durable }
                    }
                    Answer::Failed => {
                        model.add_result(PutReply::Failed { primary: true });
                        refused(error(Kind::Final))
                    }
                    Answer::Exhausted => {
                        model.add_result(PutReply::Failed { primary: true });
                        exhausted_seen = true;
                        refused(exhausted())
                    }
                    Answer::Newer => {
                        prop_assert_eq!(seen(run.step(refused(newer()))), Seen::Newer);
                        return Ok(());
                    }
                    Answer::Behind => {
                        behind += 1;
                        PutEvent::Behind
                    }
                };
                action = seen(run.step(event));
            }
            if !matches!(action, Seen::Done(_)) {
                if behind > 0 {
                    prop_assert_eq!(seen(run.step(PutEvent::RepliesEnded)), Seen::CatchUp);
                }
                let ended = seen(run.step(PutEvent::RepliesEnded));
                prop_assert_eq!(ended, Seen::Done(model_answer(&model, exhausted_seen)));
            }
        }
    }
}
