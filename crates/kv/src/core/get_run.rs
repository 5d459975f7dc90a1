//! The decisions of one run of a get, without I/O (Riak's get FSM less its
//! messaging): the coordinator's drivers feed it what the replicas
//! answered and do what it returns. The single get (`Node::get`, one
//! channel) and a multi-get's waves (one channel per wave, batched sends)
//! step the same machine, each with its own sends and receives.
//!
//! When the get answers: the driver reads the local replicas first, on its
//! own thread, all of them ([`GetEvent::LocalRead`] says it is done); from
//! then on the run answers as soon as its quorum core ([`GetCore`]: `r`,
//! `pr`, `notfound_ok`, `basic_quorum`) has enough, or once no reply is
//! left to come. The answer is the core's: the merge of every object
//! received, a merged tombstone read as not found with its context,
//! tombstone siblings hidden beside a live one, and a write_once bucket's
//! object as its one version.
//!
//! Read repair: once the run answered and every replica replied (or no
//! reply is left to come), the merge goes to each replica that answered
//! with another object or with none; a replica that failed is not
//! repaired. A write_once bucket's replicas get its one version. With
//! every replica marked damaged (design note 009) the merge may hold what
//! the damage brought back: it is answered, not spread.
//!
//! The deadline is each driver's: a run with no answer by then is
//! abandoned (the driver answers `timeout`, and nothing is repaired); one
//! that answered repairs with the replies it has.
//!
//! Invariants: the run answers once, and before it repairs or ends; it
//! repairs at most once, and only replicas that replied; a reply after it
//! ended is not counted.

use eddy_model::error::KvError;
use eddy_model::request::GetResponse;
use eddy_object::RiakObject;
use eddy_vnode::once::one_version;

use super::get::{GetCore, GetOutcome, GetReply};

/// One run of a get: when it answers, and whom it repairs with what.
#[derive(Debug)]
pub struct GetRun {
    /// The replies counted against the get's quorums, and their merge.
    core: GetCore,
    /// Each replica that answered (its place in the preflist), and what
    /// it holds.
    seen: Vec<(usize, Option<RiakObject>)>,
    /// Replicas in the preflist.
    len: usize,
    /// Replies from replicas marked damaged.
    marked: usize,
    /// The bucket keeps one version of an object.
    write_once: bool,
    phase: Phase,
    /// No reply is left to come.
    ended: bool,
    /// What read repair sends, once the run repairs.
    spread: Spread,
}

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The local replicas are being read: no answer yet.
    Reading,
    /// Waiting for enough replies to answer.
    Waiting,
    /// Answered; waiting for the other replies before repairing.
    Answered,
    /// Repaired, or nothing left to do.
    Over,
}

/// What read repair sends.
#[derive(Debug)]
enum Spread {
    Nothing,
    /// The merge, as the core holds it.
    Merged,
    /// The merge's one version (a write_once bucket).
    OneVersion(RiakObject),
}

/// What happened to a run, as the driver saw it.
#[derive(Debug)]
pub enum GetEvent {
    /// A replica answered (`place`: its place in the preflist; `marked`:
    /// it is marked damaged, which only a local read knows).
    Replied {
        place: usize,
        marked: bool,
        reply: GetReply,
    },
    /// Every local replica was read: the replies may answer the run.
    LocalRead,
    /// The driver answered with [`GetAction::Answer`]'s result.
    Answered,
    /// No reply is left to come (every one came, or the driver stops
    /// waiting after the answer, at the deadline).
    RepliesEnded,
    /// The driver answered the run itself (its deadline passed before an
    /// answer, or the answer would not fit): nothing is repaired.
    Abandoned,
}

/// What the driver does next.
#[derive(Debug)]
pub enum GetAction {
    /// Waits for the next reply.
    Wait,
    /// Answers with this, then steps [`GetEvent::Answered`].
    Answer(Result<GetResponse, KvError>),
    /// Sends [`GetRun::repairs`]' object to the replicas it names; the
    /// run is over.
    Repair,
    /// Nothing is left to do.
    Done,
}

/// The replicas read repair sends an object to.
#[derive(Debug)]
pub struct Repairs<'a> {
    object: &'a RiakObject,
    seen: &'a [(usize, Option<RiakObject>)],
}

impl<'a> Repairs<'a> {
    /// The object to send: the merge (or its one version).
    pub fn object(&self) -> &'a RiakObject {
        self.object
    }

    /// The places in the preflist of the replicas whose copy differs from
    /// the object, in the order they replied.
    pub fn replicas(&self) -> impl Iterator<Item = usize> + 'a {
        let object = self.object;
        self.seen
            .iter()
            .filter(move |(_, held)| held.as_ref() != Some(object))
            .map(|(place, _)| *place)
    }
}

impl GetRun {
    /// A run over a preflist of `len` replicas, counting replies in
    /// `core`, for a bucket that keeps one version if `write_once`.
    pub fn new(len: usize, core: GetCore, write_once: bool) -> GetRun {
        GetRun {
            core,
            seen: Vec::with_capacity(len),
            len,
            marked: 0,
            write_once,
            phase: Phase::Reading,
            ended: false,
            spread: Spread::Nothing,
        }
    }

    /// The run answered (or was abandoned): no answer is due from it.
    pub fn answered(&self) -> bool {
        matches!(self.phase, Phase::Answered | Phase::Over)
    }

    /// Nothing is left to do.
    pub fn over(&self) -> bool {
        self.phase == Phase::Over
    }

    /// Takes one event; what to do next.
    pub fn step(&mut self, event: GetEvent) -> GetAction {
        match event {
            _ if self.over() => GetAction::Done,
            GetEvent::Replied {
                place,
                marked,
                reply,
            } => {
                self.record(place, marked, reply);
                self.settle()
            }
            GetEvent::LocalRead => {
                self.read();
                self.settle()
            }
            GetEvent::Answered => self.settle(),
            GetEvent::RepliesEnded => {
                self.ended = true;
                self.read();
                self.settle()
            }
            GetEvent::Abandoned => {
                self.phase = Phase::Over;
                GetAction::Done
            }
        }
    }

    /// What read repair sends, and to whom, after [`GetAction::Repair`].
    pub fn repairs(&self) -> Option<Repairs<'_>> {
        let object = match &self.spread {
            Spread::Nothing => return None,
            Spread::Merged => self.core.merged()?,
            Spread::OneVersion(object) => object,
        };
        Some(Repairs {
            object,
            seen: &self.seen,
        })
    }

    fn record(&mut self, place: usize, marked: bool, reply: GetReply) {
        self.marked += usize::from(marked);
        match &reply {
            GetReply::Found { object, .. } => self.seen.push((place, Some(object.clone()))),
            GetReply::NotFound { .. } => self.seen.push((place, None)),
            GetReply::Failed { .. } => {}
        }
        self.core.add_result(reply);
    }

    fn read(&mut self) {
        if self.phase == Phase::Reading {
            self.phase = Phase::Waiting;
        }
    }

    /// The answer once the replies are enough, the repair once they are
    /// all in.
    fn settle(&mut self) -> GetAction {
        match self.phase {
            Phase::Waiting if self.core.enough() || self.ended => {
                self.phase = Phase::Answered;
                GetAction::Answer(answer(self.core.response(), self.write_once))
            }
            Phase::Answered if self.core.all_replied() || self.ended => self.repair(),
            Phase::Reading | Phase::Waiting | Phase::Answered => GetAction::Wait,
            Phase::Over => GetAction::Done,
        }
    }

    /// Ends the run: a repair if there is a merge to spread.
    fn repair(&mut self) -> GetAction {
        self.phase = Phase::Over;
        let Some(merged) = self.core.merged() else {
            return GetAction::Done;
        };
        if self.marked == self.len {
            return GetAction::Done;
        }
        self.spread = match self.write_once {
            true => Spread::OneVersion(one_version(merged.clone())),
            false => Spread::Merged,
        };
        GetAction::Repair
    }
}

/// Maps the core's outcome to the client's answer. Tombstone siblings are
/// hidden when a live sibling exists (the context still covers them).
fn answer(outcome: GetOutcome, write_once: bool) -> Result<GetResponse, KvError> {
    match outcome {
        GetOutcome::Found(obj) if write_once => Ok(GetResponse::Found(one_version(obj))),
        GetOutcome::Found(mut obj) => {
            obj.siblings.retain(|s| !s.content.meta.deleted);
            Ok(GetResponse::Found(obj))
        }
        GetOutcome::NotFound(tomb) => Ok(GetResponse::NotFound {
            tombstone_context: tomb.map(|t| t.vv),
        }),
        GetOutcome::RUnsatisfied { needed, got } => Err(KvError::ReadQuorum {
            which: "r",
            needed,
            got,
        }),
        GetOutcome::PrUnsatisfied { needed, got } => Err(KvError::ReadQuorum {
            which: "pr",
            needed,
            got,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_object::{Actor, Content, VersionVector, merge};
    use proptest::prelude::*;

    /// An action as the tests compare it (a repair with its object and
    /// replicas).
    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Wait,
        Answer(Result<GetResponse, String>),
        Repair(RiakObject, Vec<usize>),
        Done,
    }

    fn seen(run: &GetRun, action: GetAction) -> Seen {
        match action {
            GetAction::Wait => Seen::Wait,
            GetAction::Answer(answer) => Seen::Answer(answer.map_err(|e| e.to_string())),
            GetAction::Repair => match run.repairs() {
                Some(r) => Seen::Repair(r.object().clone(), r.replicas().collect()),
                None => Seen::Done,
            },
            GetAction::Done => Seen::Done,
        }
    }

    fn step(run: &mut GetRun, event: GetEvent) -> Seen {
        let action = run.step(event);
        seen(run, action)
    }

    fn written(v: u8, content: Content) -> RiakObject {
        let mut o = RiakObject::default();
        merge::update(&mut o, &VersionVector::new(), Actor(u64::from(v)), content);
        o
    }

    fn obj(v: u8) -> RiakObject {
        written(v, Content::new(vec![v]))
    }

    fn tombstone(v: u8) -> RiakObject {
        written(v, Content::tombstone(5))
    }

    fn found(place: usize, object: RiakObject) -> GetEvent {
        replied(
            place,
            false,
            GetReply::Found {
                primary: true,
                object,
            },
        )
    }

    fn not_found(place: usize) -> GetEvent {
        replied(place, false, GetReply::NotFound { primary: true })
    }

    fn failed(place: usize) -> GetEvent {
        replied(place, false, GetReply::Failed { primary: true })
    }

    fn replied(place: usize, marked: bool, reply: GetReply) -> GetEvent {
        GetEvent::Replied {
            place,
            marked,
            reply,
        }
    }

    /// A run of three replicas needing `r`, with notfound_ok.
    fn run_of_three(r: u32) -> GetRun {
        GetRun::new(3, GetCore::new(3, r, 0, true, false), false)
    }

    fn found_answer(object: RiakObject) -> Seen {
        Seen::Answer(Ok(GetResponse::Found(object)))
    }

    #[test]
    fn local_replies_answer_only_once_all_were_read() {
        let mut run = run_of_three(1);
        assert_eq!(step(&mut run, found(0, obj(1))), Seen::Wait);
        assert_eq!(step(&mut run, found(1, obj(2))), Seen::Wait);
        let both = merge::merge(&obj(1), &obj(2));
        assert_eq!(step(&mut run, GetEvent::LocalRead), found_answer(both));
    }

    #[test]
    fn answers_at_r_and_repairs_once_every_replica_replied() {
        let mut run = run_of_three(2);
        run.step(GetEvent::LocalRead);
        assert_eq!(step(&mut run, found(0, obj(1))), Seen::Wait);
        assert_eq!(step(&mut run, found(1, obj(1))), found_answer(obj(1)));
        assert!(run.answered() && !run.over());
        assert_eq!(step(&mut run, GetEvent::Answered), Seen::Wait);
        let repair = step(&mut run, not_found(2));
        assert_eq!(repair, Seen::Repair(obj(1), vec![2]));
        assert!(run.over());
        assert_eq!(step(&mut run, found(2, obj(3))), Seen::Done);
    }

    #[test]
    fn every_replica_but_the_failed_and_the_agreeing_is_repaired() {
        let mut run = run_of_three(2);
        run.step(GetEvent::LocalRead);
        run.step(found(0, obj(1)));
        run.step(failed(1));
        let both = merge::merge(&obj(1), &obj(2));
        let answer = step(&mut run, found(2, obj(2)));
        assert_eq!(answer, found_answer(both.clone()));
        let repair = step(&mut run, GetEvent::Answered);
        assert_eq!(repair, Seen::Repair(both, vec![0, 2]));
    }

    #[test]
    fn replies_ended_answer_and_repair_with_what_came() {
        let mut run = run_of_three(3);
        run.step(GetEvent::LocalRead);
        run.step(found(0, obj(1)));
        run.step(not_found(1));
        let answer = step(&mut run, GetEvent::RepliesEnded);
        assert_eq!(
            answer,
            Seen::Answer(Err(KvError::ReadQuorum {
                which: "r",
                needed: 3,
                got: 2
            }
            .to_string()))
        );
        let repair = step(&mut run, GetEvent::Answered);
        assert_eq!(repair, Seen::Repair(obj(1), vec![1]));
    }

    #[test]
    fn with_every_replica_marked_the_merge_is_answered_not_spread() {
        let marked = |place, v| {
            replied(
                place,
                true,
                GetReply::Found {
                    primary: true,
                    object: obj(v),
                },
            )
        };
        let mut run = GetRun::new(2, GetCore::new(2, 1, 0, true, false), false);
        run.step(marked(0, 1));
        run.step(marked(1, 2));
        let both = merge::merge(&obj(1), &obj(2));
        assert_eq!(step(&mut run, GetEvent::RepliesEnded), found_answer(both));
        assert_eq!(step(&mut run, GetEvent::Answered), Seen::Done);

        let mut run = GetRun::new(2, GetCore::new(2, 1, 0, true, false), false);
        run.step(marked(0, 1));
        run.step(not_found(1));
        run.step(GetEvent::RepliesEnded);
        let repair = step(&mut run, GetEvent::Answered);
        assert_eq!(repair, Seen::Repair(obj(1), vec![1]));
    }

    #[test]
    fn a_write_once_bucket_answers_and_spreads_one_version() {
        let mut run = GetRun::new(2, GetCore::new(2, 2, 0, true, false), true);
        run.step(found(0, obj(1)));
        run.step(found(1, obj(2)));
        let one = one_version(merge::merge(&obj(1), &obj(2)));
        assert_eq!(one.siblings.len(), 1);
        let answer = step(&mut run, GetEvent::LocalRead);
        assert_eq!(answer, found_answer(one.clone()));
        let repair = step(&mut run, GetEvent::Answered);
        assert_eq!(repair, Seen::Repair(one, vec![0, 1]));
    }

    #[test]
    fn a_tombstone_reads_as_not_found_with_its_context_and_is_spread() {
        let mut run = run_of_three(2);
        run.step(GetEvent::LocalRead);
        run.step(found(0, tombstone(1)));
        let answer = step(&mut run, not_found(1));
        let context = Some(tombstone(1).vv);
        let not_found_answer = GetResponse::NotFound {
            tombstone_context: context,
        };
        assert_eq!(answer, Seen::Answer(Ok(not_found_answer)));
        run.step(GetEvent::Answered);
        let repair = step(&mut run, found(2, obj(2)));
        let merged = merge::merge(&tombstone(1), &obj(2));
        assert_eq!(repair, Seen::Repair(merged, vec![0, 1, 2]));
    }

    #[test]
    fn a_tombstone_sibling_is_hidden_beside_a_live_one() {
        let mut run = GetRun::new(2, GetCore::new(2, 2, 0, true, false), false);
        run.step(found(0, obj(1)));
        run.step(found(1, tombstone(2)));
        let action = run.step(GetEvent::LocalRead);
        let GetAction::Answer(Ok(GetResponse::Found(answer))) = action else {
            panic!("not found: {action:?}");
        };
        assert_eq!(answer.siblings.len(), 1);
        assert_eq!(answer.vv, merge::merge(&obj(1), &tombstone(2)).vv);
    }

    #[test]
    fn basic_quorum_answers_not_found_early() {
        let mut run = GetRun::new(3, GetCore::new(3, 2, 0, false, true), false);
        run.step(GetEvent::LocalRead);
        assert_eq!(step(&mut run, not_found(0)), Seen::Wait);
        let answer = step(&mut run, not_found(1));
        let nothing = GetResponse::NotFound {
            tombstone_context: None,
        };
        assert_eq!(answer, Seen::Answer(Ok(nothing)));
        run.step(GetEvent::Answered);
        assert_eq!(step(&mut run, not_found(2)), Seen::Done);
    }

    #[test]
    fn an_abandoned_run_repairs_nothing() {
        let mut run = run_of_three(3);
        run.step(GetEvent::LocalRead);
        run.step(found(0, obj(1)));
        assert_eq!(step(&mut run, GetEvent::Abandoned), Seen::Done);
        assert!(run.answered() && run.over());
        assert_eq!(step(&mut run, not_found(1)), Seen::Done);
        assert_eq!(step(&mut run, GetEvent::RepliesEnded), Seen::Done);
        assert!(run.repairs().is_none());
    }

    /// A reply as the property tests send it.
    #[derive(Clone, Copy, Debug)]
    enum Kind {
        Found(u8),
        Tombstone(u8),
        NotFound,
        Failed,
    }

    fn kind() -> impl Strategy<Value = Kind> {
        prop_oneof![
            3 => (1u8..4).prop_map(Kind::Found),
            1 => (1u8..3).prop_map(Kind::Tombstone),
            2 => Just(Kind::NotFound),
            1 => Just(Kind::Failed),
        ]
    }

    fn reply(kind: Kind, primary: bool) -> GetReply {
        match kind {
            Kind::Found(v) => GetReply::Found {
                primary,
                object: obj(v),
            },
            Kind::Tombstone(v) => GetReply::Found {
                primary,
                object: tombstone(v),
            },
            Kind::NotFound => GetReply::NotFound { primary },
            Kind::Failed => GetReply::Failed { primary },
        }
    }

    /// What a run should do, from the quorum core fed alongside and the
    /// rules of the module's docs.
    struct Model {
        core: GetCore,
        /// What each replica that answered holds.
        held: Vec<(usize, Option<RiakObject>)>,
        marked: usize,
        len: usize,
        write_once: bool,
        read: bool,
        ended: bool,
        answered: bool,
        over: bool,
    }

    impl Model {
        fn reply(&mut self, place: usize, marked: bool, reply: GetReply) {
            if self.over {
                return;
            }
            self.marked += usize::from(marked);
            match &reply {
                GetReply::Found { object, .. } => self.held.push((place, Some(object.clone()))),
                GetReply::NotFound { .. } => self.held.push((place, None)),
                GetReply::Failed { .. } => {}
            }
            self.core.add_result(reply);
        }

        /// The action due now.
        fn due(&mut self) -> Seen {
            let all_in = self.core.all_replied() || self.ended;
            match (self.over, self.answered) {
                (true, _) => Seen::Done,
                (false, false) if self.read && (self.core.enough() || self.ended) => {
                    self.answered = true;
                    let answer = answer(self.core.response(), self.write_once);
                    Seen::Answer(answer.map_err(|e| e.to_string()))
                }
                (false, true) if all_in => {
                    self.over = true;
                    self.repair()
                }
                (false, _) => Seen::Wait,
            }
        }

        fn repair(&self) -> Seen {
            let Some(merged) = self.core.merged().filter(|_| self.marked < self.len) else {
                return Seen::Done;
            };
            let object = match self.write_once {
                true => one_version(merged.clone()),
                false => merged.clone(),
            };
            let replicas = self
                .held
                .iter()
                .filter(|(_, held)| held.as_ref() != Some(&object))
                .map(|(place, _)| *place)
                .collect();
            Seen::Repair(object, replicas)
        }
    }

    /// Steps `event` into the run and checks what it returns against the
    /// model (and, after an answer, what `Answered` returns).
    fn check(run: &mut GetRun, model: &mut Model, event: GetEvent) -> Result<(), TestCaseError> {
        let action = step(run, event);
        let due = model.due();
        let answered = matches!(due, Seen::Answer(_));
        prop_assert_eq!(action, due);
        prop_assert_eq!(run.answered(), model.answered);
        prop_assert_eq!(run.over(), model.over);
        if answered {
            check(run, model, GetEvent::Answered)?;
        }
        Ok(())
    }

    proptest! {
        /// Against a model: the run answers once, at the first moment
        /// after the local reads when the core has enough (or no reply is
        /// left), as the core answers; it repairs once every replica
        /// replied (or none is left to come), sending the merge (its one
        /// version for write_once) to each replica that holds another,
        /// unless every replica is marked; abandoned, it does nothing
        /// more.
        #[test]
        fn runs_follow_the_model(len in 1usize..5, r in 1u32..5, pr in 0u32..5,
                                 notfound_ok in any::<bool>(), basic_quorum in any::<bool>(),
                                 write_once in any::<bool>(), local in 0usize..5,
                                 replies in proptest::collection::vec((kind(), any::<bool>(), any::<bool>()), 0..5),
                                 abandon in proptest::option::of(0usize..5), ended in any::<bool>()) {
            let (r, pr) = (r.min(len as u32), pr.min(len as u32));
            let replies = &replies[..replies.len().min(len)];
            let local = local.min(replies.len());
            let core = || GetCore::new(len as u32, r, pr, notfound_ok, basic_quorum);
            let mut run = GetRun::new(len, core(), write_once);
            let mut model = Model {
                core: core(),
                held: Vec::new(),
                marked: 0,
                len,
                write_once,
                read: false,
                ended: false,
                answered: false,
                over: false,
            };
            for (place, &(kind, primary, marked)) in replies.iter().enumerate() {
                if place == local {
                    model.read = true;
                    check(&mut run, &mut model, GetEvent::LocalRead)?;
                }
                if abandon == Some(place) && !model.answered {
                    (model.answered, model.over) = (true, true);
                    check(&mut run, &mut model, GetEvent::Abandoned)?;
                }
                // Only a local read knows its replica is marked.
                let marked = marked && place < local;
                model.reply(place, marked, reply(kind, primary));
                let event = replied(place, marked, reply(kind, primary));
                check(&mut run, &mut model, event)?;
            }
            if !model.read {
                model.read = true;
                check(&mut run, &mut model, GetEvent::LocalRead)?;
            }
            if ended {
                model.ended = true;
                check(&mut run, &mut model, GetEvent::RepliesEnded)?;
                prop_assert!(run.over());
            }
        }
    }
}
