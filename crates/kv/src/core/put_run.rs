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
//! Invariant: the replicas asked to coordinate are distinct, the first
//! one included, so there are at most as many as the preflist has.

use eddy_model::error::{KvError, Signal};

/// One run of a put: who coordinates it, and who next after a refusal.
#[derive(Clone, Copy, Debug)]
pub struct PutRun {
    /// Replicas in the preflist.
    len: usize,
    /// The coordinating vnode's place in the preflist.
    first: usize,
    /// Coordinating vnodes asked, the current one included.
    tries: usize,
    /// Which refusals another replica may follow.
    retry: Retry,
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
}

/// What the driver does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutAction {
    /// Sends the client's write to the replica at this place in the
    /// preflist, now the coordinating one.
    Coordinate(usize),
    /// The run fails with the error of the event that led here.
    Fail,
}

impl PutRun {
    /// A run over a preflist of `len` replicas, coordinated by the one at
    /// `first`, that asks no other replica until [`PutRun::retry`] allows.
    pub fn new(len: usize, first: usize) -> PutRun {
        PutRun {
            len,
            first,
            tries: 1,
            retry: Retry::Never,
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
        }
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

    #[test]
    fn a_moving_vnode_is_replaced_by_the_next_replica_once_each() {
        let mut run = PutRun::new(3, 1);
        run.retry(Retry::Moving);
        let closed = error(Kind::Closed);
        assert_eq!(
            run.step(PutEvent::CoordinateFailed(&closed)),
            PutAction::Coordinate(2)
        );
        assert_eq!(
            run.step(PutEvent::CoordinateFailed(&closed)),
            PutAction::Coordinate(0)
        );
        assert_eq!(run.first(), 0);
        assert_eq!(
            run.step(PutEvent::CoordinateFailed(&closed)),
            PutAction::Fail
        );
    }

    #[test]
    fn a_data_type_operation_is_not_sent_on_after_an_unreachable_answer() {
        let mut run = PutRun::new(3, 0);
        run.retry(Retry::of(true, false));
        let closed = error(Kind::Closed);
        let gone = error(Kind::Unreachable);
        assert_eq!(
            run.step(PutEvent::CoordinateFailed(&closed)),
            PutAction::Coordinate(1)
        );
        assert_eq!(run.step(PutEvent::CoordinateFailed(&gone)), PutAction::Fail);
    }

    #[test]
    fn a_write_not_kept_goes_nowhere_else() {
        let mut run = PutRun::new(3, 0);
        let gone = error(Kind::Unreachable);
        assert_eq!(run.step(PutEvent::CoordinateFailed(&gone)), PutAction::Fail);
    }

    proptest! {
        /// Against a model: the coordinating replicas follow the preflist
        /// round from the first, each asked once, and a refusal is
        /// followed exactly when its kind allows and a replica is left.
        #[test]
        fn coordinators_follow_the_model(len in 1usize..6, first in 0usize..6, retry in retry(),
                                         refusals in proptest::collection::vec(kind(), 0..8)) {
            let first = first % len;
            let mut run = PutRun::new(len, first);
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
                    true => PutAction::Coordinate((first + asked.len()) % len),
                    false => PutAction::Fail,
                };
                let action = run.step(PutEvent::CoordinateFailed(&error(kind)));
                prop_assert_eq!(action, model);
                match action {
                    PutAction::Coordinate(i) => {
                        prop_assert!(!asked.contains(&i));
                        prop_assert_eq!(run.first(), i);
                        asked.push(i);
                    }
                    PutAction::Fail => break,
                }
            }
        }
    }
}
