//! Big sets stored as a root and segments (`eddy_dt::SetRoot`; design note
//! 020 §6), property-tested against the whole set over random histories of
//! three replicas (adds, removes with and without a context, removes
//! deferred because their context saw more than the set, merges), with
//! 0 to about 5,000 members and 1 to [`SEGMENT_MEMBERS`] members per
//! segment:
//!
//! - the segments of a set assemble back into it, and the root's encoding
//!   round-trips;
//! - an operation run on the partial set of the segments its members touch,
//!   then written back, leaves a root and segment records that assemble
//!   into what the same operation makes of the whole set (a refused one is
//!   refused alike), and a ready delta's join likewise;
//! - after every write-back the table keeps its invariants: no segment
//!   above twice the size, no empty one unless alone, fresh ids only, every
//!   replaced record named dead and no live one;
//! - a damaged segment, a segment given at another index and a cut root are
//!   refused; deltas round-trip through their wire form.

use std::collections::{BTreeMap, BTreeSet};

use eddy_dt::{
    Actor, DecodeError, NotReady, Orswot, OrswotDelta, SEGMENT_MEMBERS, SetRoot, SetSegment, State,
    VersionVector,
};
use proptest::prelude::*;

const REPLICAS: usize = 3;

/// The `i`th member's name: decimal, so byte order is not number order
/// ("10" < "9") and names differ in length.
fn name(i: u32) -> Vec<u8> {
    i.to_string().into_bytes()
}

/// A step of the history that builds the set.
#[derive(Clone, Debug)]
enum Build {
    /// Adds members `from..from + len` (of the universe) at a replica.
    Add {
        at: usize,
        from: u32,
        len: u32,
    },
    /// Removes members `from..from + len`: with the context of a replica
    /// (deferred when that replica saw more), or without one (of those
    /// present).
    Remove {
        at: usize,
        from: u32,
        len: u32,
        context_from: Option<usize>,
    },
    Merge(usize, usize),
}

fn history(universe: u32) -> impl Strategy<Value = Vec<Build>> {
    let u = universe.max(1);
    let r = 0..REPLICAS;
    let add =
        (r.clone(), 0..u, 0..=universe).prop_map(|(at, from, len)| Build::Add { at, from, len });
    let remove = (r.clone(), 0..u, 0..=u / 3 + 1, prop::option::of(r.clone())).prop_map(
        |(at, from, len, context_from)| Build::Remove {
            at,
            from,
            len,
            context_from,
        },
    );
    let merge = (r.clone(), r).prop_map(|(i, j)| Build::Merge(i, j));
    prop::collection::vec(prop_oneof![3 => add, 2 => remove, 1 => merge], 1..10)
}

/// The replicas after `steps` (each operation by the replica's own actor).
fn build(universe: u32, steps: &[Build]) -> Vec<Orswot> {
    let mut sets = vec![Orswot::new(); REPLICAS];
    let names = |from: u32, len: u32| -> Vec<Vec<u8>> {
        (from..from.saturating_add(len).min(universe))
            .map(name)
            .collect()
    };
    for step in steps {
        match *step {
            Build::Add { at, from, len } => {
                let adds = names(from, len);
                let adds: Vec<&[u8]> = adds.iter().map(Vec::as_slice).collect();
                sets[at].apply_op(actor(at), &adds, &[], None).unwrap();
            }
            Build::Remove {
                at,
                from,
                len,
                context_from,
            } => {
                let context = context_from.map(|j| sets[j].clock().clone());
                let mut removes = names(from, len);
                if context.is_none() {
                    removes.retain(|m| sets[at].contains(m));
                }
                let removes: Vec<&[u8]> = removes.iter().map(Vec::as_slice).collect();
                sets[at]
                    .apply_op(actor(at), &[], &removes, context.as_ref())
                    .unwrap();
            }
            Build::Merge(i, j) => {
                let other = sets[j].clone();
                sets[i].merge(&other);
            }
        }
    }
    sets
}

fn actor(replica: usize) -> Actor {
    Actor(replica as u64 + 1)
}

/// How an operation names a member.
#[derive(Clone, Debug)]
enum Pick {
    /// A member of the universe, or beyond it (new).
    Index(u32),
    /// The member at this rank (modulo the set's size) in byte order.
    Rank(usize),
    /// `len` new names just after the member at this rank in byte order
    /// (it, then "/" and a number): they fall in one or two segments.
    Cluster(usize, u32),
    /// The `len` members from this rank on: a run of whole segments.
    Run(usize, u32),
}

/// Where an operation's context comes from.
#[derive(Clone, Debug)]
enum Context {
    None,
    /// The set's own clock.
    Own,
    /// A replica's clock from the history (possibly ahead: the remove is
    /// deferred).
    Replica(usize),
}

/// An operation. Its actor is the replica's own (1 for the stored set,
/// which is replica 0's state) or a coordinator no context has heard of:
/// an actor never mints a dot a context already names.
#[derive(Clone, Debug)]
struct Operation {
    actor: u64,
    adds: Vec<Pick>,
    removes: Vec<Pick>,
    context: Context,
}

/// Operations that, with `per` members per segment, split segments
/// (clusters of up to three segments' worth) and empty them (runs).
fn operation(per: usize) -> impl Strategy<Value = Operation> {
    let most = (3 * per as u32 + 2).min(3_100);
    let rank = any::<usize>();
    let add = prop_oneof![
        3 => (0..6_000u32).prop_map(Pick::Index),
        1 => rank.prop_map(Pick::Rank),
        1 => (rank, 1..=most).prop_map(|(r, n)| Pick::Cluster(r, n)),
    ];
    let remove = prop_oneof![
        3 => rank.prop_map(Pick::Rank),
        1 => (0..6_000u32).prop_map(Pick::Index),
        1 => (rank, 1..=most).prop_map(|(r, n)| Pick::Run(r, n)),
    ];
    let context = prop_oneof![
        2 => Just(Context::None),
        1 => Just(Context::Own),
        1 => (0..REPLICAS).prop_map(Context::Replica),
    ];
    (
        prop_oneof![Just(1u64), Just(8), Just(9)],
        prop::collection::vec(add, 0..3),
        prop::collection::vec(remove, 0..3),
        context,
    )
        .prop_map(|(actor, adds, removes, context)| Operation {
            actor,
            adds,
            removes,
            context,
        })
}

/// The names `picks` give in `set`.
fn resolve(picks: &[Pick], set: &Orswot) -> Vec<Vec<u8>> {
    let ranked = |r: usize| -> Option<Vec<u8>> {
        let n = set.len();
        (n > 0).then(|| set.value().nth(r % n).unwrap().to_vec())
    };
    let mut out = Vec::new();
    for pick in picks {
        match *pick {
            Pick::Index(i) => out.push(name(i)),
            Pick::Rank(r) => out.push(ranked(r).unwrap_or_else(|| name(r as u32))),
            Pick::Cluster(r, len) => {
                let base = ranked(r).unwrap_or_else(|| b"m".to_vec());
                out.extend((0..len).map(|k| [&base[..], b"/", &name(k)].concat()));
            }
            Pick::Run(r, len) => {
                let from = r % set.len().max(1);
                out.extend(
                    set.value()
                        .skip(from)
                        .take(len as usize)
                        .map(<[u8]>::to_vec),
                );
            }
        }
    }
    out
}

fn slices(names: &[Vec<u8>]) -> Vec<&[u8]> {
    names.iter().map(Vec::as_slice).collect()
}

/// A segmented set as the storage keeps it: the root and the segment
/// records by id.
struct Stored {
    root: SetRoot,
    records: BTreeMap<u64, Vec<u8>>,
}

impl Stored {
    fn new(set: Orswot, first_id: u64, per: usize) -> Stored {
        let (root, puts) = set.into_segments_of(first_id, per);
        let records: BTreeMap<u64, Vec<u8>> = puts.into_iter().collect();
        assert_eq!(records.len(), root.segments().len(), "ids are distinct");
        Stored { root, records }
    }

    fn segment(&self, i: usize) -> SetSegment {
        let id = self.root.segments()[i].id;
        self.root.decode_segment(i, &self.records[&id]).unwrap()
    }

    /// The whole set, from every record.
    fn assemble(&self) -> Result<Orswot, DecodeError> {
        let n = self.root.segments().len();
        self.root
            .assemble((0..n).map(|i| self.segment(i)).collect())
    }

    /// The partial set of the segments at `touched`.
    fn partial(&self, touched: &[usize]) -> Orswot {
        self.root
            .partial(touched.iter().map(|&i| (i, self.segment(i))).collect())
    }

    /// Writes `partial` back as the storage would: new records first, then
    /// the root, then the dead ones deleted. Checks the ids on the way.
    fn write_back(&mut self, partial: Orswot, touched: &[usize]) -> Result<(), TestCaseError> {
        let old_ids: Vec<u64> = touched
            .iter()
            .map(|&i| self.root.segments()[i].id)
            .collect();
        let old_next = self.root.next_id();
        let write = self.root.write_back(partial, touched);
        prop_assert_eq!(&write.dead, &old_ids, "every loaded segment is replaced");
        for (id, bytes) in write.puts {
            prop_assert!(
                id >= old_next && id < self.root.next_id(),
                "fresh id {}",
                id
            );
            prop_assert!(
                self.records.insert(id, bytes).is_none(),
                "{} overwritten",
                id
            );
        }
        for id in write.dead {
            prop_assert!(self.records.remove(&id).is_some());
        }
        Ok(())
    }

    /// The root's invariants, and the records are exactly those it names.
    fn check(&self, set: &Orswot) -> Result<(), TestCaseError> {
        let root = &self.root;
        prop_assert_eq!(&SetRoot::decode(&root.encode()), &Ok(root.clone()));
        prop_assert!(SetRoot::is_root(&root.encode()));
        let table = root.segments();
        prop_assert!(table[0].first.is_empty());
        prop_assert!(table.windows(2).all(|w| w[0].first < w[1].first));
        let ids: BTreeSet<u64> = table.iter().map(|s| s.id).collect();
        prop_assert_eq!(&ids, &self.records.keys().copied().collect::<BTreeSet<_>>());
        prop_assert!(ids.iter().all(|&id| id < root.next_id()));
        let most = 2 * root.segment_members() as u32;
        prop_assert!(
            table.iter().all(|s| s.count <= most),
            "a segment above {}",
            most
        );
        prop_assert!(table.len() == 1 || table.iter().all(|s| s.count > 0));
        prop_assert_eq!(root.len(), set.len() as u64);
        prop_assert_eq!(root.clock(), set.clock());
        Ok(())
    }
}

fn universe() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0..40u32, 2 => 0..400u32, 1 => 0..5_000u32]
}

fn per_segment() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 1..6usize, 1 => Just(16), 1 => Just(SEGMENT_MEMBERS)]
}

/// A random set's history, the members per segment, the first id, and
/// operations for it.
fn case() -> impl Strategy<Value = (u32, Vec<Build>, usize, u64, Vec<Operation>)> {
    (universe(), per_segment()).prop_flat_map(|(u, per)| {
        (
            Just(u),
            history(u),
            Just(per),
            prop_oneof![Just(0u64), 0..1u64 << 40],
            prop::collection::vec(operation(per), 1..6),
        )
    })
}

/// The context `op` sends to a replica in state `set`.
fn context_of(op: &Operation, set: &Orswot, replicas: &[Orswot]) -> Option<VersionVector> {
    match op.context {
        Context::None => None,
        Context::Own => Some(set.clock().clone()),
        Context::Replica(j) => Some(replicas[j].clock().clone()),
    }
}

/// Runs `op` with `context` on the whole set and on the stored one,
/// requiring the same result and the same state after. Its removes name
/// members of `read` (the state the client read), else of the set.
fn operate(
    stored: &mut Stored,
    whole: &mut Orswot,
    op: &Operation,
    context: Option<VersionVector>,
    read: Option<&Orswot>,
) -> Result<(), TestCaseError> {
    let adds = resolve(&op.adds, whole);
    let removes = resolve(&op.removes, read.unwrap_or(whole));
    let touched = stored
        .root
        .touched(adds.iter().chain(&removes).map(Vec::as_slice));
    let mut partial = stored.partial(&touched);
    let (adds, removes) = (slices(&adds), slices(&removes));
    let actor = Actor(op.actor);
    let expected = whole.apply_op(actor, &adds, &removes, context.as_ref());
    let got = partial.apply_op(actor, &adds, &removes, context.as_ref());
    prop_assert_eq!(&got, &expected);
    if got.is_err() {
        // A refused operation changes nothing: the storage writes nothing.
        return Ok(());
    }
    stored.write_back(partial, &touched)?;
    stored.check(whole)?;
    prop_assert_eq!(&stored.assemble()?, &*whole);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    /// (1) and (2): the segments assemble into the set; each operation on
    /// the touched segments gives what it gives on the whole set.
    #[test]
    fn an_operation_on_the_touched_segments_equals_it_on_the_whole_set(
        (universe, steps, per, first_id, ops) in case()
    ) {
        let replicas = build(universe, &steps);
        let mut whole = replicas[0].clone();
        let mut stored = Stored::new(whole.clone(), first_id, per);
        prop_assert_eq!(stored.root.next_id(), first_id + stored.root.segments().len() as u64);
        stored.check(&whole)?;
        prop_assert_eq!(&stored.assemble()?, &whole);
        for op in &ops {
            let context = context_of(op, &whole, &replicas);
            operate(&mut stored, &mut whole, op, context, None)?;
        }
    }

    /// (3): a delta joined into the touched segments gives what it gives
    /// joined into the whole set. Deltas come from coordinators in the
    /// stored set's state (what the storage sends), possibly several
    /// operations of one, and wait, arriving in any order, while the stored
    /// replica runs operations of its own with contexts read from those
    /// coordinators (removes deferred until the deltas arrive, run by a
    /// later one that need not name the member); or they come from the
    /// history's replicas (ready or not).
    #[test]
    fn a_delta_joined_into_the_touched_segments_equals_it_joined_into_the_whole_set(
        (universe, steps, per, first_id, events) in join_case()
    ) {
        let mut replicas = build(universe, &steps);
        let mut whole = replicas[0].clone();
        let mut stored = Stored::new(whole.clone(), first_id, per);
        // Deltas on their way, with their coordinator (its state after,
        // its actor).
        let mut pending: Vec<(OrswotDelta, Orswot, Actor)> = Vec::new();
        for (n, event) in events.iter().enumerate() {
            match event {
                Event::Remote(op, chain) => {
                    // A coordinator in the stored state, with an actor of
                    // its own, or the last one again after its operation.
                    let (mut other, actor) = match pending.last() {
                        Some((_, after, actor)) if *chain => (after.clone(), *actor),
                        _ => (whole.clone(), Actor(100 + n as u64)),
                    };
                    if let Some(delta) = coordinate(&mut other, actor, op, &replicas) {
                        pending.push((delta, other, actor));
                    }
                }
                Event::Local(op, read) => {
                    // The client read a waiting delta's coordinator, or
                    // as the operation says.
                    let read = read
                        .filter(|_| !pending.is_empty())
                        .map(|k| pending[pending.len() - 1 - k.min(pending.len() - 1)].1.clone());
                    let context = match &read {
                        Some(coordinator) => Some(coordinator.clock().clone()),
                        None => context_of(op, &whole, &replicas),
                    };
                    let read = read.map(|coordinator| news(&coordinator, &whole));
                    operate(&mut stored, &mut whole, op, context, read.as_ref())?;
                }
                Event::Foreign(j, op) => {
                    let mut other = replicas[*j].clone();
                    let delta = coordinate(&mut other, actor(*j), op, &replicas);
                    replicas[*j] = other;
                    if let Some(delta) = delta {
                        // Ready or not: the partial and the whole set agree.
                        let _ready = join(&mut stored, &mut whole, &delta)?;
                    }
                }
                Event::Deliver(k) if !pending.is_empty() => {
                    // A delta that builds on one still waiting is refused
                    // and waits on.
                    let k = k % pending.len();
                    let ready = whole.clock().descends(&pending[k].0.before);
                    let joined = join(&mut stored, &mut whole, &pending[k].0)?;
                    prop_assert_eq!(joined.is_ok(), ready);
                    if ready {
                        pending.remove(k);
                    }
                }
                Event::Deliver(_) => {}
            }
        }
    }

    /// (5): a changed byte in a segment, a segment at another index, a cut
    /// or lengthened root are refused.
    #[test]
    fn damaged_segments_and_roots_are_refused(
        (universe, steps, per, first_id, _ops) in case(),
        at in any::<usize>(),
        flip in 1..=255u8,
        other in any::<usize>(),
    ) {
        let replicas = build(universe, &steps);
        let stored = Stored::new(replicas[0].clone(), first_id, per);
        let table = stored.root.segments();
        let i = at % table.len();
        let bytes = &stored.records[&table[i].id];
        let mut damaged = bytes.clone();
        let j = at % damaged.len();
        damaged[j] ^= flip;
        prop_assert!(stored.root.decode_segment(i, &damaged).is_err(), "byte {} changed", j);
        prop_assert!(stored.root.decode_segment(i, &bytes[..bytes.len() - 1]).is_err());
        prop_assert!(stored.root.decode_segment(table.len(), bytes).is_err());
        let k = other % table.len();
        if k != i {
            prop_assert!(stored.root.decode_segment(k, bytes).is_err(), "{} given as {}", i, k);
            let mut segments: Vec<SetSegment> = (0..table.len()).map(|s| stored.segment(s)).collect();
            segments.swap(i, k);
            prop_assert!(stored.root.assemble(segments).is_err(), "{} and {} swapped", i, k);
        }
        let mut fewer: Vec<SetSegment> = (0..table.len()).map(|s| stored.segment(s)).collect();
        fewer.pop();
        prop_assert!(stored.root.assemble(fewer).is_err());
        let root = stored.root.encode();
        // Every cut of a small root; of a big one (thousands of segments)
        // about a thousand, and every cut in its last entries.
        let stride = (root.len() / 1_000).max(1);
        let cuts = (0..root.len()).filter(|&end| end % stride == 0 || end + 64 > root.len());
        for end in cuts {
            prop_assert!(SetRoot::decode(&root[..end]).is_err(), "cut at {}", end);
        }
        let mut longer = root.clone();
        longer.push(0);
        prop_assert!(SetRoot::decode(&longer).is_err());
        prop_assert!(State::decode(&root).is_err(), "a root is not a whole state");
        prop_assert!(!SetRoot::is_root(&State::Set(replicas[0].clone()).encode()));
        prop_assert!(!SetRoot::is_root(bytes));
        // A damaged root never panics, and what it decodes to round-trips.
        let mut changed = root.clone();
        changed[at % root.len()] ^= flip;
        if let Ok(decoded) = SetRoot::decode(&changed) {
            prop_assert_eq!(SetRoot::decode(&decoded.encode()), Ok(decoded));
        }
    }

    /// Deltas of random histories round-trip through their wire form;
    /// every cut, and a trailing byte, is refused; a changed byte never
    /// panics, and what it decodes to round-trips.
    #[test]
    fn deltas_round_trip_through_their_wire_form(
        (universe, steps, _per, _first_id, ops) in case(),
        at in any::<usize>(),
        flip in 1..=255u8,
    ) {
        let mut replicas = build(universe.min(400), &steps);
        for (n, op) in ops.iter().enumerate() {
            let set = &mut replicas[n % REPLICAS];
            let adds = resolve(&op.adds, set);
            let removes = resolve(&op.removes, set);
            let context = match op.context {
                Context::None => None,
                Context::Own => Some(set.clock().clone()),
                Context::Replica(j) => Some(VersionVector::from_entries(
                    set.clock().entries().iter().map(|&(a, c)| (a, c + j as u64 + 1)),
                )),
            };
            let by = actor(n % REPLICAS);
            let Ok(delta) = set.apply_op(by, &slices(&adds), &slices(&removes), context.as_ref())
            else { continue };
            let bytes = delta.encode();
            prop_assert_eq!(&OrswotDelta::decode(&bytes), &Ok(delta));
            for end in 0..bytes.len().min(4_000) {
                prop_assert!(OrswotDelta::decode(&bytes[..end]).is_err(), "cut at {}", end);
            }
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert!(OrswotDelta::decode(&longer).is_err());
            let mut changed = bytes.clone();
            changed[at % bytes.len()] ^= flip;
            if let Ok(decoded) = OrswotDelta::decode(&changed) {
                prop_assert_eq!(OrswotDelta::decode(&decoded.encode()), Ok(decoded));
            }
        }
    }
}

/// What happens to the stored replica in the join test.
#[derive(Clone, Debug)]
enum Event {
    /// A coordinator in the stored replica's state runs the operation, or
    /// (`true`) the last such coordinator runs another after its first;
    /// the delta waits to be delivered.
    Remote(Operation, bool),
    /// The stored replica coordinates the operation, as a client that read
    /// a waiting delta's coordinator after it (if any: the newest, or the
    /// one or two before) sends it: that context, removes of members read
    /// there; else with the operation's own context.
    Local(Operation, Option<usize>),
    /// A history replica runs the operation; its delta arrives at once.
    Foreign(usize, Operation),
    /// A waiting delta (picked modulo) arrives.
    Deliver(usize),
}

fn join_case() -> impl Strategy<Value = (u32, Vec<Build>, usize, u64, Vec<Event>)> {
    (universe(), per_segment()).prop_flat_map(|(u, per)| {
        let read = prop::option::weighted(0.75, 0..3usize);
        let event = prop_oneof![
            3 => (operation(per), any::<bool>()).prop_map(|(op, chain)| Event::Remote(op, chain)),
            2 => (operation(per), read).prop_map(|(op, read)| Event::Local(op, read)),
            1 => (0..REPLICAS, operation(per)).prop_map(|(j, op)| Event::Foreign(j, op)),
            3 => any::<usize>().prop_map(Event::Deliver),
        ];
        (
            Just(u),
            history(u),
            Just(per),
            prop_oneof![Just(0u64), 0..1u64 << 40],
            prop::collection::vec(event, 1..24),
        )
    })
}

/// What a client that read `coordinator` removes: the members it holds
/// that `set` lacks (added by deltas still on their way: the removes are
/// deferred, and run by the delta that completes their context, which need
/// not be the one that adds the member), or any of its members if none.
fn news(coordinator: &Orswot, set: &Orswot) -> Orswot {
    let mut news = Orswot::new();
    for m in coordinator.value().filter(|m| !set.contains(m)) {
        news.add(Actor(0), m);
    }
    match news.is_empty() {
        true => coordinator.clone(),
        false => news,
    }
}

/// Runs `op` as `actor` at a coordinator in state `set`; its delta, if the
/// operation was not refused.
fn coordinate(
    set: &mut Orswot,
    actor: Actor,
    op: &Operation,
    replicas: &[Orswot],
) -> Option<OrswotDelta> {
    let adds = resolve(&op.adds, set);
    let removes = resolve(&op.removes, set);
    let context = context_of(op, set, replicas);
    set.apply_op(actor, &slices(&adds), &slices(&removes), context.as_ref())
        .ok()
}

/// Joins `delta`, sent through its wire form, into the whole set and into
/// the stored one's touched segments, requiring the same result and the
/// same state after.
fn join(
    stored: &mut Stored,
    whole: &mut Orswot,
    delta: &OrswotDelta,
) -> Result<Result<(), NotReady>, TestCaseError> {
    let sent = OrswotDelta::decode(&delta.encode());
    prop_assert_eq!(sent.as_ref(), Ok(delta));
    let touched = stored.root.touched_by_delta(delta);
    let mut partial = stored.partial(&touched);
    let expected = whole.join_delta(delta);
    prop_assert_eq!(partial.join_delta(delta), expected);
    if expected.is_ok() {
        stored.write_back(partial, &touched)?;
        stored.check(whole)?;
        prop_assert_eq!(&stored.assemble()?, &*whole);
    }
    Ok(expected)
}

/// Members "a00" to "a19" (actor 1), four per segment: five segments.
fn twenty() -> Orswot {
    let mut s = Orswot::new();
    for i in 0..20 {
        s.add(Actor(1), format!("a{i:02}").as_bytes());
    }
    s
}

/// Runs one operation through the stored set and the whole one; panics on
/// any difference. Returns the table indexes the operation touched.
fn run(
    stored: &mut Stored,
    whole: &mut Orswot,
    adds: &[Vec<u8>],
    removes: &[Vec<u8>],
) -> Vec<usize> {
    let touched = stored
        .root
        .touched(adds.iter().chain(removes).map(Vec::as_slice));
    let mut partial = stored.partial(&touched);
    let (adds, removes) = (slices(adds), slices(removes));
    let expected = whole.apply_op(Actor(2), &adds, &removes, None);
    assert_eq!(partial.apply_op(Actor(2), &adds, &removes, None), expected);
    stored.write_back(partial, &touched).unwrap();
    stored.check(whole).unwrap();
    assert_eq!(stored.assemble().unwrap(), *whole);
    touched
}

fn counts(root: &SetRoot) -> Vec<u32> {
    root.segments().iter().map(|s| s.count).collect()
}

fn names(range: std::ops::Range<u32>, prefix: &str) -> Vec<Vec<u8>> {
    range
        .map(|i| format!("{prefix}{i:02}").into_bytes())
        .collect()
}

/// (4): a segment above twice the size splits in halves, an emptied one
/// leaves the table (the first one's successor then starts at the
/// bottom), and the last one stays, empty.
#[test]
fn segments_split_when_they_grow_and_leave_when_emptied() {
    let mut whole = twenty();
    let mut stored = Stored::new(whole.clone(), 100, 4);
    assert_eq!(counts(&stored.root), [4, 4, 4, 4, 4]);
    assert_eq!(stored.root.segments()[2].first, b"a08");
    // Nine members after a09 ("a09/00".."a09/08") fall in segment 2.
    let touched = run(&mut stored, &mut whole, &names(0..9, "a09/"), &[]);
    assert_eq!(touched, [2]);
    assert_eq!(
        counts(&stored.root),
        [4, 4, 7, 6, 4, 4],
        "13 > 8: two halves"
    );
    let table = stored.root.segments();
    assert_eq!(
        (table[2].first.as_slice(), table[3].first.as_slice()),
        (&b"a08"[..], &b"a09/05"[..])
    );
    assert_eq!((table[2].id, table[3].id), (105, 106), "fresh ids");
    // Segment 1 (a04..a07) emptied: it leaves.
    let kept = stored.root.segments()[2].clone();
    run(&mut stored, &mut whole, &[], &names(4..8, "a"));
    assert_eq!(counts(&stored.root), [4, 7, 6, 4, 4]);
    assert_eq!(
        stored.root.segments()[1],
        kept,
        "untouched segments stay as they are"
    );
    // Segment 0 emptied: the next one, untouched, now starts at the bottom.
    let next = stored.root.segments()[1].clone();
    run(&mut stored, &mut whole, &[], &names(0..4, "a"));
    assert_eq!(counts(&stored.root), [7, 6, 4, 4]);
    let first = &stored.root.segments()[0];
    assert_eq!(
        (first.first.as_slice(), first.id, first.digest),
        (&b""[..], next.id, next.digest)
    );
    // Everything removed: one empty segment is left.
    let all: Vec<Vec<u8>> = whole.value().map(<[u8]>::to_vec).collect();
    run(&mut stored, &mut whole, &[], &all);
    assert_eq!(counts(&stored.root), [0]);
    assert!(stored.root.is_empty());
    // And it fills again.
    run(&mut stored, &mut whole, &names(0..3, "b"), &[]);
    assert_eq!(counts(&stored.root), [3]);
}

/// (4) at the default size: 5,000 members make five segments; 1,100 adds
/// into one split it in halves; removing a whole segment drops it; each
/// operation rewrites only the segments it touched.
#[test]
fn a_big_set_splits_and_shrinks_at_the_default_size() {
    let mut whole = Orswot::new();
    for i in 0..5_000 {
        whole.add(Actor(1), format!("m{i:05}").as_bytes());
    }
    let mut stored = Stored::new(whole.clone(), 0, SEGMENT_MEMBERS);
    assert_eq!(counts(&stored.root), [1024, 1024, 1024, 1024, 904]);
    let adds: Vec<Vec<u8>> = (0..1_100)
        .map(|k| format!("m01500/{k}").into_bytes())
        .collect();
    let untouched = stored.root.segments()[0].clone();
    assert_eq!(run(&mut stored, &mut whole, &adds, &[]), [1]);
    assert_eq!(counts(&stored.root), [1024, 1062, 1062, 1024, 1024, 904]);
    assert_eq!(stored.root.segments()[0], untouched);
    let last: Vec<Vec<u8>> = (4_096..5_000)
        .map(|i| format!("m{i:05}").into_bytes())
        .collect();
    assert_eq!(run(&mut stored, &mut whole, &[], &last), [5]);
    assert_eq!(counts(&stored.root), [1024, 1062, 1062, 1024, 1024]);
}

/// A remove deferred at the stored replica for members a coordinator added
/// in two operations runs when the second one's delta arrives, though that
/// delta names only a member of another segment: `touched_by_delta` loads
/// the segments of deferred removes' members too.
#[test]
fn a_delta_that_completes_a_deferred_remove_reaches_its_member_in_another_segment() {
    let mut whole = Orswot::new();
    for m in ["a", "b", "c", "d", "e", "f"] {
        whole.add(Actor(1), m.as_bytes());
    }
    let mut stored = Stored::new(whole.clone(), 0, 2);
    let mut coordinator = whole.clone();
    let k = Actor(100);
    let first = coordinator.apply_op(k, &[b"e0"], &[], None).unwrap();
    let second = coordinator.apply_op(k, &[b"a0"], &[], None).unwrap();
    // A client read the coordinator and removes e0 here: deferred.
    let removes = [b"e0".to_vec()];
    let read = Some(coordinator.clock().clone());
    let local = Operation {
        actor: 1,
        adds: vec![],
        removes: vec![Pick::Rank(0)],
        context: Context::None,
    };
    let mut e0 = Orswot::new();
    e0.add(Actor(0), &removes[0]);
    operate(&mut stored, &mut whole, &local, read, Some(&e0)).unwrap();
    assert_eq!(whole.deferred_len(), 1);
    assert_eq!(
        join(&mut stored, &mut whole, &second).unwrap(),
        Err(NotReady)
    );
    assert_eq!(join(&mut stored, &mut whole, &first).unwrap(), Ok(()));
    assert!(whole.contains(b"e0"), "the remove waits for the second add");
    assert_eq!(stored.root.locate(b"e0"), 2);
    assert_eq!(stored.root.locate(b"a0"), 0);
    assert_eq!(stored.root.touched_by_delta(&second), [0, 2]);
    assert_eq!(join(&mut stored, &mut whole, &second).unwrap(), Ok(()));
    assert!(!whole.contains(b"e0") && whole.contains(b"a0"));
    assert_eq!(whole.deferred_len(), 0);
}

/// The point of it all: one add to a 100,000-member set writes the root
/// and one segment, a small fraction of the whole state.
#[test]
fn an_add_to_a_100000_member_set_writes_one_segment() {
    let mut whole = Orswot::new();
    for i in 0..100_000 {
        whole.add(Actor(1), format!("member-{i:06}").as_bytes());
    }
    let state = State::Set(whole.clone()).encode().len();
    let (mut root, puts) = whole.into_segments(7);
    assert_eq!(root.segments().len(), 98);
    let records: BTreeMap<u64, Vec<u8>> = puts.into_iter().collect();
    let member = b"member-054321/new";
    let touched = root.touched([&member[..]]);
    assert_eq!(touched, [53]);
    let id = root.segments()[53].id;
    let segment = root.decode_segment(53, &records[&id]).unwrap();
    let mut partial = root.partial(vec![(53, segment)]);
    partial.apply_op(Actor(2), &[member], &[], None).unwrap();
    let write = root.write_back(partial, &touched);
    assert_eq!(write.dead, [id]);
    assert_eq!(write.puts.len(), 1);
    let written = write.puts[0].1.len() + root.encode().len();
    assert!(written * 50 < state, "{written} bytes written of {state}");
    assert_eq!(root.len(), 100_001);
}

/// A root refuses a table no write-back makes.
#[test]
fn a_root_with_an_impossible_table_is_refused() {
    let (root, _) = twenty().into_segments_of(0, 8);
    assert_eq!(counts(&root), [8, 8, 4]);
    let bytes = root.encode();
    // The table ends the root: each entry is its first (length, bytes),
    // id, count, then 8 bytes of digest. The last is "a16", id 2, count 4.
    let last = bytes.len() - (4 + 1 + 1 + 8);
    assert_eq!(&bytes[last..last + 6], b"\x03a16\x02\x04");
    let mut duplicate = bytes.clone();
    duplicate[last + 4] = 1;
    assert_eq!(
        SetRoot::decode(&duplicate),
        Err(DecodeError("segment id named twice"))
    );
    let mut unsorted = bytes.clone();
    unsorted[last + 2] = b'0';
    assert_eq!(
        SetRoot::decode(&unsorted),
        Err(DecodeError("segments not sorted"))
    );
    let mut unborn = bytes.clone();
    unborn[last + 4] = 3;
    assert_eq!(
        SetRoot::decode(&unborn),
        Err(DecodeError("segment id not below the next id"))
    );
    // The first entry: an empty first, id 0, count 8. With "a" as its
    // first (one byte longer) it no longer starts at the bottom.
    let first = last - (4 + 1 + 1 + 8) - (1 + 1 + 1 + 8);
    assert_eq!(&bytes[first..first + 3], b"\x00\x00\x08");
    let mut high = bytes[..first].to_vec();
    high.extend_from_slice(b"\x01a");
    high.extend_from_slice(&bytes[first + 1..]);
    assert_eq!(
        SetRoot::decode(&high),
        Err(DecodeError("first segment does not start at the bottom"))
    );
    // No table at all: the count before the first entry made zero.
    let mut none = bytes[..first].to_vec();
    *none.last_mut().unwrap() = 0;
    assert_eq!(
        SetRoot::decode(&none),
        Err(DecodeError("root without segments"))
    );
}
