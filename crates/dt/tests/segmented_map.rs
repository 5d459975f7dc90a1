//! Big maps stored as a root and segments of top-level fields
//! (`eddy_dt::MapRoot`, driven through the type-generic `eddy_dt::Root`,
//! `Segment`, `Delta` and `State` API the storage uses; design note 020
//! §6), property-tested against the whole map over random histories of
//! three replicas (counters, sets, registers, flags and nested maps
//! updated; fields, nested fields and set members removed with and without
//! a context, removes deferred because their context saw more than the
//! map; merges), with 0 to about 3,000 top-level fields and 1 to
//! [`SEGMENT_MEMBERS`] fields per segment:
//!
//! - the segments of a map assemble back into it, and the root's encoding
//!   round-trips;
//! - an operation run on the partial map of the segments it touches
//!   (`Root::touched_by_op`), then written back, leaves a root and segment
//!   records that assemble into what the same operation makes of the whole
//!   map, with the same delta (a refused one is refused alike, with the
//!   same error);
//! - a delta joined into the partial map of `Root::touched_by_delta` gives
//!   what it gives joined into the whole map, for deltas from replicas in
//!   the stored state delivered late and out of order (refused alike while
//!   not ready) and from the history's replicas;
//! - after every write-back the table keeps its invariants: no segment
//!   above twice the size, no empty one unless alone, fresh ids only,
//!   every replaced record named dead and no live one;
//! - damaged segments and roots are refused; deltas round-trip through
//!   their wire form and damaged ones are refused.

use std::collections::{BTreeMap, BTreeSet};

use eddy_dt::{
    Actor, DecodeError, Delta, DtError, Field, FieldOp, FieldType, FlagOp, MAP_DEPTH_MAX, Map,
    MapDelta, MapOp, MapRoot, MapUpdate, NotReady, Op, Root, SEGMENT_MEMBERS, Segment, SetOp,
    State, VersionVector,
};
use proptest::prelude::*;

const REPLICAS: usize = 3;

/// The `i`th field's name: decimal, so byte order is not number order.
fn name(i: u32) -> Vec<u8> {
    i.to_string().into_bytes()
}

/// The type field `i` has unless a step says otherwise.
fn kind_of(i: u32) -> FieldType {
    FieldType::ALL[(i % 5) as usize]
}

fn member(p: u8) -> Vec<u8> {
    vec![b'a' + p % 6]
}

fn update(name: &str, op: FieldOp) -> MapOp {
    MapOp {
        removes: vec![],
        updates: vec![MapUpdate {
            field: Field::new(name, op.kind()),
            op,
        }],
    }
}

fn set_op(adds: Vec<Vec<u8>>, removes: Vec<Vec<u8>>) -> FieldOp {
    FieldOp::Set(SetOp { adds, removes })
}

/// An operation on a nested map, shaped by `p`: its counter, set and flag
/// updated, its set or a member of it removed (refused without a context
/// when absent; deferred with a context that saw more), or a map nested in
/// it updated likewise.
fn nested_op(p: u8) -> MapOp {
    match p % 6 {
        0 => update("c", FieldOp::Counter(1)),
        1 => update("s", set_op(vec![member(p / 6)], vec![])),
        2 => MapOp {
            removes: vec![Field::new("s", FieldType::Set)],
            updates: vec![],
        },
        3 => update("s", set_op(vec![], vec![member(p / 6)])),
        4 => update(
            "f",
            FieldOp::Flag(match p / 6 % 2 {
                0 => FlagOp::Enable,
                _ => FlagOp::Disable,
            }),
        ),
        _ => update("m", FieldOp::Map(nested_op(p / 6))),
    }
}

/// An update of a field of type `kind`, shaped by `p`.
fn field_op(kind: FieldType, p: u8) -> FieldOp {
    match kind {
        FieldType::Counter => FieldOp::Counter(i64::from(p) - 100),
        FieldType::Set => {
            let adds = (!p.is_multiple_of(3))
                .then(|| member(p))
                .into_iter()
                .collect();
            let removes = p
                .is_multiple_of(4)
                .then(|| member(p / 4))
                .into_iter()
                .collect();
            set_op(adds, removes)
        }
        FieldType::Register => FieldOp::Register(vec![p]),
        FieldType::Flag => FieldOp::Flag(match p % 2 {
            0 => FlagOp::Enable,
            _ => FlagOp::Disable,
        }),
        FieldType::Map => FieldOp::Map(nested_op(p)),
    }
}

/// A map operation nesting maps one deeper than allowed.
fn too_deep() -> MapUpdate {
    let mut op = update("c", FieldOp::Counter(1));
    for _ in 0..MAP_DEPTH_MAX {
        op = update("m", FieldOp::Map(op));
    }
    op.updates.pop().expect("one update")
}

/// The present top-level fields, in order.
fn fields(map: &Map) -> Vec<Field> {
    map.value().into_iter().map(|(f, _)| f).collect()
}

fn actor(replica: usize) -> Actor {
    Actor(replica as u64 + 1)
}

/// A step of the history that builds the replicas.
#[derive(Clone, Debug)]
enum Build {
    /// Updates fields `from..from + len` (of the universe; of type `kind`,
    /// else each its own) at a replica, shaped by `p`, with a replica's
    /// context (nested removes then deferred when it saw more), else its
    /// own (so that no remove inside is refused).
    Update {
        at: usize,
        from: u32,
        len: u32,
        kind: Option<FieldType>,
        p: u8,
        context_from: Option<usize>,
    },
    /// Removes fields `from..from + len`: with a replica's context
    /// (deferred when it saw more), or without one (of those present).
    Remove {
        at: usize,
        from: u32,
        len: u32,
        kind: Option<FieldType>,
        context_from: Option<usize>,
    },
    Merge(usize, usize),
}

/// A replica, the stored one (0) half of the time.
fn replica() -> impl Strategy<Value = usize> + Clone {
    prop_oneof![Just(0), 0..REPLICAS]
}

fn history(universe: u32) -> impl Strategy<Value = Vec<Build>> {
    let u = universe.max(1);
    let r = replica();
    let kind = prop::option::weighted(0.3, prop::sample::select(FieldType::ALL.to_vec()));
    let context = prop::option::of(0..REPLICAS);
    let up = (
        r.clone(),
        0..u,
        0..=universe,
        kind.clone(),
        any::<u8>(),
        context.clone(),
    )
        .prop_map(|(at, from, len, kind, p, context_from)| Build::Update {
            at,
            from,
            len,
            kind,
            p,
            context_from,
        });
    let remove = (r.clone(), 0..u, 0..=u / 3 + 1, kind, context).prop_map(
        |(at, from, len, kind, context_from)| Build::Remove {
            at,
            from,
            len,
            kind,
            context_from,
        },
    );
    let merge = (r, 0..REPLICAS).prop_map(|(i, j)| Build::Merge(i, j));
    prop::collection::vec(prop_oneof![3 => up, 2 => remove, 1 => merge], 1..10)
}

/// The replicas after `steps` (each operation by the replica's own actor).
fn build(universe: u32, steps: &[Build]) -> Vec<Map> {
    let mut maps = vec![Map::new(); REPLICAS];
    let named = |from: u32, len: u32, kind: Option<FieldType>| -> Vec<Field> {
        (from..from.saturating_add(len).min(universe))
            .map(|i| Field::new(name(i), kind.unwrap_or_else(|| kind_of(i))))
            .collect()
    };
    for (time, step) in steps.iter().enumerate() {
        match *step {
            Build::Update {
                at,
                from,
                len,
                kind,
                p,
                context_from,
            } => {
                let context = maps[context_from.unwrap_or(at)].clock().clone();
                let updates = named(from, len, kind)
                    .into_iter()
                    .map(|field| MapUpdate {
                        op: field_op(field.kind, p),
                        field,
                    })
                    .collect();
                let op = MapOp {
                    removes: vec![],
                    updates,
                };
                maps[at]
                    .apply(actor(at), &op, Some(&context), time as u64)
                    .unwrap();
            }
            Build::Remove {
                at,
                from,
                len,
                kind,
                context_from,
            } => {
                let context = context_from.map(|j| maps[j].clock().clone());
                let mut removes = named(from, len, kind);
                if context.is_none() {
                    let present: BTreeSet<Field> = fields(&maps[at]).into_iter().collect();
                    removes.retain(|f| present.contains(f));
                }
                let op = MapOp {
                    removes,
                    updates: vec![],
                };
                maps[at]
                    .apply(actor(at), &op, context.as_ref(), time as u64)
                    .unwrap();
            }
            Build::Merge(i, j) => {
                let other = maps[j].clone();
                maps[i].merge(&other);
            }
        }
    }
    maps
}

/// How an operation names top-level fields.
#[derive(Clone, Debug)]
enum Pick {
    /// Field `i` of the universe, or beyond it (new), of its own type or
    /// this one.
    Index(u32, Option<FieldType>),
    /// The present field at this rank (modulo their number) in field order.
    Rank(usize),
    /// `len` new fields named just after the field at this rank (its name,
    /// "/" and a number; each of its own type): they fall in one or two
    /// segments.
    Cluster(usize, u32),
    /// The `len` present fields from this rank on: a run of whole segments.
    Run(usize, u32),
}

/// Where an operation's context comes from.
#[derive(Clone, Debug)]
enum Context {
    None,
    /// The map's own clock.
    Own,
    /// A replica's clock from the history (possibly ahead: removes are
    /// deferred).
    Replica(usize),
}

/// An operation. Its actor is the stored replica's own (1: the stored map
/// is replica 0's state) or one no context has heard of: an actor never
/// mints a dot a context already names.
#[derive(Clone, Debug)]
struct Operation {
    actor: u64,
    /// Each pick's fields get an update shaped by the number.
    updates: Vec<(Pick, u8)>,
    removes: Vec<Pick>,
    context: Context,
    /// The first update names its field with another type than its
    /// operation's (the operation's type decides the field).
    mislabel: bool,
    /// An update nesting maps too deep is added (refused).
    deep: bool,
}

/// Operations that, with `per` fields per segment, split segments
/// (clusters of up to three segments' worth) and empty them (runs).
fn operation(per: usize) -> impl Strategy<Value = Operation> {
    let most = (3 * per as u32 + 2).min(3_100);
    let rank = any::<usize>();
    let kind = prop::option::of(prop::sample::select(FieldType::ALL.to_vec()));
    let up = prop_oneof![
        3 => (0..4_000u32, kind.clone()).prop_map(|(i, k)| Pick::Index(i, k)),
        2 => rank.prop_map(Pick::Rank),
        1 => (rank, 1..=most).prop_map(|(r, n)| Pick::Cluster(r, n)),
    ];
    let remove = prop_oneof![
        3 => rank.prop_map(Pick::Rank),
        1 => (0..4_000u32, kind).prop_map(|(i, k)| Pick::Index(i, k)),
        1 => (rank, 1..=most).prop_map(|(r, n)| Pick::Run(r, n)),
    ];
    let context = prop_oneof![
        2 => Just(Context::None),
        1 => Just(Context::Own),
        1 => (0..REPLICAS).prop_map(Context::Replica),
    ];
    (
        prop_oneof![Just(1u64), Just(8), Just(9)],
        prop::collection::vec((up, any::<u8>()), 0..3),
        prop::collection::vec(remove, 0..3),
        context,
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.03),
    )
        .prop_map(
            |(actor, updates, removes, context, mislabel, deep)| Operation {
                actor,
                updates,
                removes,
                context,
                mislabel,
                deep,
            },
        )
}

/// The fields `pick` names among `present` (in order).
fn resolve(pick: &Pick, present: &[Field]) -> Vec<Field> {
    let ranked = |r: usize| present.get(r % present.len().max(1)).cloned();
    match *pick {
        Pick::Index(i, kind) => vec![Field::new(name(i), kind.unwrap_or_else(|| kind_of(i)))],
        Pick::Rank(r) => {
            vec![ranked(r).unwrap_or_else(|| Field::new(name(r as u32), kind_of(r as u32)))]
        }
        Pick::Cluster(r, len) => {
            let base = ranked(r).map_or_else(|| b"m".to_vec(), |f| f.name);
            (0..len)
                .map(|k| Field::new([&base[..], b"/", &name(k)].concat(), kind_of(k)))
                .collect()
        }
        Pick::Run(r, len) => {
            let from = r % present.len().max(1);
            present
                .iter()
                .skip(from)
                .take(len as usize)
                .cloned()
                .collect()
        }
    }
}

/// The map operation `op` makes: updates of fields of `target`, removes of
/// fields of `read` (what the client read).
fn map_op(op: &Operation, target: &[Field], read: &[Field]) -> MapOp {
    let mut updates: Vec<MapUpdate> = Vec::new();
    for (pick, p) in &op.updates {
        for field in resolve(pick, target) {
            updates.push(MapUpdate {
                op: field_op(field.kind, *p),
                field,
            });
        }
    }
    if op.mislabel
        && let Some(first) = updates.first_mut()
    {
        let other = FieldType::ALL.iter().find(|&&k| k != first.field.kind);
        first.field.kind = *other.expect("five types");
    }
    if op.deep {
        updates.push(too_deep());
    }
    let removes = op.removes.iter().flat_map(|p| resolve(p, read)).collect();
    MapOp { removes, updates }
}

/// A segmented map as the storage keeps it: the root and the segment
/// records by id.
struct Stored {
    root: Root,
    records: BTreeMap<u64, Vec<u8>>,
}

impl Stored {
    fn new(map: Map, first_id: u64, per: usize) -> Stored {
        let (root, puts) = map.into_segments_of(first_id, per);
        let records: BTreeMap<u64, Vec<u8>> = puts.into_iter().collect();
        assert_eq!(records.len(), root.segments().len(), "ids are distinct");
        Stored {
            root: Root::Map(root),
            records,
        }
    }

    fn map_root(&self) -> &MapRoot {
        match &self.root {
            Root::Map(root) => root,
            Root::Set(_) => unreachable!("a map's root"),
        }
    }

    fn segment(&self, i: usize) -> Segment {
        let bytes = &self.records[&self.root.id(i)];
        self.root.decode_segment(i, bytes).unwrap()
    }

    /// The whole map, from every record.
    fn assemble(&self) -> State {
        let n = self.root.segment_count();
        let segments = (0..n).map(|i| self.segment(i)).collect();
        self.root.assemble(segments).unwrap()
    }

    /// The partial map of the segments at `touched`.
    fn partial(&self, touched: &[usize]) -> State {
        let segments = touched.iter().map(|&i| (i, self.segment(i))).collect();
        self.root.partial(segments).unwrap()
    }

    /// Writes `partial` back as the storage would: new records first, then
    /// the root, then the dead ones deleted. Checks the ids on the way.
    fn write_back(&mut self, partial: State, touched: &[usize]) -> Result<(), TestCaseError> {
        let old_ids: Vec<u64> = touched.iter().map(|&i| self.root.id(i)).collect();
        let old_next = self.root.next_id();
        let write = self.root.write_back(partial, touched).unwrap();
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
    fn check(&self, map: &Map) -> Result<(), TestCaseError> {
        let bytes = self.root.encode();
        prop_assert_eq!(Root::decode(&bytes), Ok(self.root.clone()));
        prop_assert!(Root::is_root(&bytes) && MapRoot::is_root(&bytes));
        let root = self.map_root();
        let table = root.segments();
        prop_assert_eq!(&table[0].first, &Field::new("", FieldType::Counter));
        prop_assert!(table.windows(2).all(|w| w[0].first < w[1].first));
        let ids: Vec<u64> = table.iter().map(|s| s.id).collect();
        prop_assert_eq!(&self.root.ids(), &ids);
        let ids: BTreeSet<u64> = ids.into_iter().collect();
        prop_assert_eq!(&ids, &self.records.keys().copied().collect::<BTreeSet<_>>());
        prop_assert!(ids.iter().all(|&id| id < root.next_id()));
        let most = 2 * root.segment_members() as u32;
        prop_assert!(
            table.iter().all(|s| s.count <= most),
            "a segment above {}",
            most
        );
        prop_assert!(table.len() == 1 || table.iter().all(|s| s.count > 0));
        prop_assert_eq!(self.root.len(), map.len() as u64);
        prop_assert_eq!(self.root.clock(), map.clock());
        prop_assert_eq!(root.deferred_len(), map.deferred_len());
        Ok(())
    }
}

fn universe() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0..40u32, 2 => 0..400u32, 1 => 0..3_000u32]
}

fn per_segment() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 1..6usize, 1 => Just(16), 1 => Just(SEGMENT_MEMBERS)]
}

/// A random map's history, the fields per segment, the first id, and
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

/// The context `op` sends to a replica in state `map`.
fn context_of(op: &Operation, map: &Map, replicas: &[Map]) -> Option<VersionVector> {
    match op.context {
        Context::None => None,
        Context::Own => Some(map.clock().clone()),
        Context::Replica(j) => Some(replicas[j].clock().clone()),
    }
}

/// Runs `op` as `actor` with `context` at `now` on the whole map and on
/// the stored one, requiring the same result (delta or error) and the
/// same state after.
fn operate(
    stored: &mut Stored,
    whole: &mut Map,
    (actor, op): (Actor, &MapOp),
    context: Option<&VersionVector>,
    now: u64,
) -> Result<(), TestCaseError> {
    let op = Op::Map(op.clone());
    let touched = stored.root.touched_by_op(&op).unwrap();
    let Op::Map(map_op) = &op else { unreachable!() };
    let bound = map_op.removes.len() + map_op.updates.len() + stored.map_root().deferred_len();
    prop_assert!(
        touched.len() <= bound,
        "{:?} touched by {} fields",
        touched,
        bound
    );
    let mut partial = stored.partial(&touched);
    let expected = whole.apply_op(actor, map_op, context, now);
    let got = partial.apply_with_delta(actor, &op, context, now);
    prop_assert_eq!(&got, &expected.clone().map(|d| Some(Delta::Map(d))));
    if got.is_err() {
        // A refused operation changes nothing: the storage writes nothing.
        prop_assert_eq!(&partial, &stored.partial(&touched));
        return Ok(());
    }
    stored.write_back(partial, &touched)?;
    stored.check(whole)?;
    prop_assert_eq!(stored.assemble(), State::Map(whole.clone()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// (1) and (2): the segments assemble into the map; each operation on
    /// the touched segments gives what it gives on the whole map.
    #[test]
    fn a_map_operation_on_the_touched_segments_equals_it_on_the_whole_map(
        (universe, steps, per, first_id, ops) in case()
    ) {
        let replicas = build(universe, &steps);
        let mut whole = replicas[0].clone();
        let mut stored = Stored::new(whole.clone(), first_id, per);
        let count = stored.root.segment_count() as u64;
        prop_assert_eq!(stored.root.next_id(), first_id + count);
        stored.check(&whole)?;
        prop_assert_eq!(stored.assemble(), State::Map(whole.clone()));
        for (n, op) in ops.iter().enumerate() {
            let context = context_of(op, &whole, &replicas);
            let present = fields(&whole);
            let map_op = map_op(op, &present, &present);
            let now = 1_000 + n as u64;
            let by = (Actor(op.actor), &map_op);
            operate(&mut stored, &mut whole, by, context.as_ref(), now)?;
        }
    }

    /// (3): a delta joined into the touched segments gives what it gives
    /// joined into the whole map. Deltas come from coordinators in the
    /// stored map's state (what the storage sends), possibly several
    /// operations of one, and wait, arriving in any order, while the
    /// stored replica runs operations of its own with contexts read from
    /// those coordinators (removes deferred until the deltas arrive, run by
    /// a later one that need not name the field); or they come from the
    /// history's other replicas (ready or not).
    #[test]
    fn a_map_delta_joined_into_the_touched_segments_equals_it_joined_into_the_whole_map(
        (universe, steps, per, first_id, events) in join_case()
    ) {
        let mut replicas = build(universe, &steps);
        let mut whole = replicas[0].clone();
        let mut stored = Stored::new(whole.clone(), first_id, per);
        // Deltas on their way, with their coordinator (its state after,
        // its actor).
        let mut pending: Vec<(MapDelta, Map, Actor)> = Vec::new();
        for (n, event) in events.iter().enumerate() {
            let now = 1_000 + n as u64;
            match event {
                Event::Remote(op, chain) => {
                    let (mut other, actor) = match pending.last() {
                        Some((_, after, actor)) if *chain => (after.clone(), *actor),
                        _ => (whole.clone(), Actor(100 + n as u64)),
                    };
                    if let Some(delta) = coordinate(&mut other, actor, op, &replicas, now) {
                        pending.push((delta, other, actor));
                    }
                }
                Event::Local(op, read) => {
                    let read = read
                        .filter(|_| !pending.is_empty())
                        .map(|k| pending[pending.len() - 1 - k.min(pending.len() - 1)].1.clone());
                    let context = match &read {
                        Some(coordinator) => Some(coordinator.clock().clone()),
                        None => context_of(op, &whole, &replicas),
                    };
                    let present = fields(&whole);
                    let read = read.map_or_else(|| present.clone(), |c| news(&c, &whole));
                    let map_op = map_op(op, &present, &read);
                    let by = (Actor(op.actor), &map_op);
                    operate(&mut stored, &mut whole, by, context.as_ref(), now)?;
                }
                Event::Foreign(j, op) => {
                    let mut other = replicas[*j].clone();
                    let delta = coordinate(&mut other, actor(*j), op, &replicas, now);
                    replicas[*j] = other;
                    if let Some(delta) = delta {
                        // Ready or not: the partial and the whole map agree.
                        let _ready = join(&mut stored, &mut whole, &delta)?;
                    }
                }
                Event::Deliver(k) if !pending.is_empty() => {
                    let k = k % pending.len();
                    let ready = whole.clock().descends(pending[k].0.before());
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
    /// or lengthened root are refused; a root is no whole state.
    #[test]
    fn damaged_map_segments_and_roots_are_refused(
        (universe, steps, per, first_id, _ops) in case(),
        at in any::<usize>(),
        flip in 1..=255u8,
        other in any::<usize>(),
    ) {
        let replicas = build(universe, &steps);
        let stored = Stored::new(replicas[0].clone(), first_id, per);
        let n = stored.root.segment_count();
        let i = at % n;
        let bytes = &stored.records[&stored.root.id(i)];
        let mut damaged = bytes.clone();
        let j = at % damaged.len();
        damaged[j] ^= flip;
        prop_assert!(stored.root.decode_segment(i, &damaged).is_err(), "byte {} changed", j);
        prop_assert!(stored.root.decode_segment(i, &bytes[..bytes.len() - 1]).is_err());
        prop_assert!(stored.root.decode_segment(n, bytes).is_err());
        let k = other % n;
        if k != i {
            prop_assert!(stored.root.decode_segment(k, bytes).is_err(), "{} given as {}", i, k);
            let mut segments: Vec<Segment> = (0..n).map(|s| stored.segment(s)).collect();
            segments.swap(i, k);
            prop_assert!(stored.root.assemble(segments).is_err(), "{} and {} swapped", i, k);
            let swapped = vec![(i, stored.segment(k))];
            prop_assert!(stored.root.partial(swapped).is_err(), "{} given as {}", k, i);
        }
        let mut fewer: Vec<Segment> = (0..n).map(|s| stored.segment(s)).collect();
        fewer.pop();
        prop_assert!(stored.root.assemble(fewer).is_err());
        let root = stored.root.encode();
        // Every cut of a small root; of a big one about a thousand, and
        // every cut in its last entries.
        let stride = (root.len() / 1_000).max(1);
        let cuts = (0..root.len()).filter(|&end| end % stride == 0 || end + 64 > root.len());
        for end in cuts {
            prop_assert!(Root::decode(&root[..end]).is_err(), "cut at {}", end);
        }
        let mut longer = root.clone();
        longer.push(0);
        prop_assert!(Root::decode(&longer).is_err());
        prop_assert!(State::decode(&root).is_err(), "a root is not a whole state");
        prop_assert!(!Root::is_root(&State::Map(replicas[0].clone()).encode()));
        prop_assert!(!Root::is_root(bytes));
        prop_assert!(Delta::decode(&root).is_err() && Delta::decode(bytes).is_err());
        // A damaged root never panics, and what it decodes to round-trips.
        let mut changed = root.clone();
        changed[at % root.len()] ^= flip;
        if let Ok(decoded) = Root::decode(&changed) {
            prop_assert_eq!(Root::decode(&decoded.encode()), Ok(decoded));
        }
    }

    /// Map deltas of random histories round-trip through their wire form
    /// (as `MapDelta` and as the generic `Delta`); every cut, and a
    /// trailing byte, is refused; a changed byte never panics, and what it
    /// decodes to round-trips.
    #[test]
    fn map_deltas_round_trip_through_their_wire_form(
        (universe, steps, _per, _first_id, ops) in case(),
        at in any::<usize>(),
        flip in 1..=255u8,
    ) {
        let mut replicas = build(universe.min(400), &steps);
        for (n, op) in ops.iter().enumerate() {
            let map = &mut replicas[n % REPLICAS];
            let present = fields(map);
            let map_op = map_op(op, &present, &present);
            let context = match op.context {
                Context::None => None,
                Context::Own => Some(map.clock().clone()),
                Context::Replica(j) => Some(VersionVector::from_entries(
                    map.clock().entries().iter().map(|&(a, c)| (a, c + j as u64 + 1)),
                )),
            };
            let by = actor(n % REPLICAS);
            let Ok(delta) = map.apply_op(by, &map_op, context.as_ref(), n as u64) else {
                continue;
            };
            let bytes = delta.encode();
            prop_assert_eq!(MapDelta::decode(&bytes), Ok(delta.clone()));
            let generic = Delta::Map(delta);
            prop_assert_eq!(&generic.encode(), &bytes);
            prop_assert_eq!(Delta::decode(&bytes), Ok(generic));
            for end in 0..bytes.len().min(4_000) {
                prop_assert!(MapDelta::decode(&bytes[..end]).is_err(), "cut at {}", end);
                prop_assert!(Delta::decode(&bytes[..end]).is_err(), "cut at {}", end);
            }
            let mut longer = bytes.clone();
            longer.push(0);
            prop_assert!(MapDelta::decode(&longer).is_err());
            prop_assert!(Root::decode(&bytes).is_err() && State::decode(&bytes).is_err());
            let mut changed = bytes.clone();
            changed[at % bytes.len()] ^= flip;
            if let Ok(decoded) = MapDelta::decode(&changed) {
                prop_assert_eq!(MapDelta::decode(&decoded.encode()), Ok(decoded));
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
    /// one or two before) sends it: that context, removes of fields read
    /// there; else with the operation's own context.
    Local(Operation, Option<usize>),
    /// A history replica other than the stored one's runs the operation;
    /// its delta arrives at once.
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
            1 => (1..REPLICAS, operation(per)).prop_map(|(j, op)| Event::Foreign(j, op)),
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

/// The fields a client that read `coordinator` removes: those it holds
/// that `map` lacks (added by deltas still on their way: the removes are
/// deferred, and run by the delta that completes their context, which
/// need not name the field), or any of its fields if none.
fn news(coordinator: &Map, map: &Map) -> Vec<Field> {
    let held: BTreeSet<Field> = fields(map).into_iter().collect();
    let news: Vec<Field> = (fields(coordinator).into_iter())
        .filter(|f| !held.contains(f))
        .collect();
    match news.is_empty() {
        true => fields(coordinator),
        false => news,
    }
}

/// Runs `op` as `actor` at a coordinator in state `map`; its delta, if the
/// operation was not refused.
fn coordinate(
    map: &mut Map,
    actor: Actor,
    op: &Operation,
    replicas: &[Map],
    now: u64,
) -> Option<MapDelta> {
    let present = fields(map);
    let map_op = map_op(op, &present, &present);
    let context = context_of(op, map, replicas);
    map.apply_op(actor, &map_op, context.as_ref(), now).ok()
}

/// Joins `delta`, sent through its wire form, into the whole map and into
/// the stored one's touched segments, requiring the same result and the
/// same state after.
fn join(
    stored: &mut Stored,
    whole: &mut Map,
    delta: &MapDelta,
) -> Result<Result<(), NotReady>, TestCaseError> {
    let sent = Delta::decode(&Delta::Map(delta.clone()).encode());
    prop_assert_eq!(&sent, &Ok(Delta::Map(delta.clone())));
    let sent = sent.unwrap();
    let touched = stored.root.touched_by_delta(&sent).unwrap();
    let mut partial = stored.partial(&touched);
    let expected = whole.join_delta(delta);
    prop_assert_eq!(partial.join_delta(&sent), expected);
    if expected.is_ok() {
        stored.write_back(partial, &touched)?;
        stored.check(whole)?;
        prop_assert_eq!(stored.assemble(), State::Map(whole.clone()));
    }
    Ok(expected)
}

/// Counters "a00" to "a19" (actor 1), `per` to a segment.
fn twenty(per: usize) -> (Map, Stored) {
    let mut map = Map::new();
    let updates = (0..20)
        .map(|i| MapUpdate {
            field: Field::new(format!("a{i:02}"), FieldType::Counter),
            op: FieldOp::Counter(1),
        })
        .collect();
    let op = MapOp {
        removes: vec![],
        updates,
    };
    map.apply(Actor(1), &op, None, 0).unwrap();
    let stored = Stored::new(map.clone(), 100, per);
    (map, stored)
}

fn counters(names: &[String]) -> MapOp {
    MapOp {
        removes: vec![],
        updates: (names.iter())
            .map(|n| MapUpdate {
                field: Field::new(n.as_str(), FieldType::Counter),
                op: FieldOp::Counter(1),
            })
            .collect(),
    }
}

fn removes(names: &[String]) -> MapOp {
    MapOp {
        removes: (names.iter())
            .map(|n| Field::new(n.as_str(), FieldType::Counter))
            .collect(),
        updates: vec![],
    }
}

fn names(range: std::ops::Range<u32>, prefix: &str) -> Vec<String> {
    range.map(|i| format!("{prefix}{i:02}")).collect()
}

/// Runs one operation through the stored map and the whole one; panics on
/// any difference. Returns the table indexes the operation touched.
fn run(stored: &mut Stored, whole: &mut Map, op: &MapOp) -> Vec<usize> {
    let touched = stored.root.touched_by_op(&Op::Map(op.clone())).unwrap();
    operate(stored, whole, (Actor(2), op), None, 7).unwrap();
    touched
}

fn counts(stored: &Stored) -> Vec<u32> {
    stored
        .map_root()
        .segments()
        .iter()
        .map(|s| s.count)
        .collect()
}

/// (4): a segment above twice the size splits in halves, an emptied one
/// leaves the table (the first one's successor then starts at the
/// bottom), and the last one stays, empty.
#[test]
fn map_segments_split_when_they_grow_and_leave_when_emptied() {
    let (mut whole, mut stored) = twenty(4);
    assert_eq!(counts(&stored), [4, 4, 4, 4, 4]);
    let table = stored.map_root().segments();
    assert_eq!(table[2].first, Field::new("a08", FieldType::Counter));
    // Nine fields after a09 ("a09/00".."a09/08") fall in segment 2.
    let touched = run(&mut stored, &mut whole, &counters(&names(0..9, "a09/")));
    assert_eq!(touched, [2]);
    assert_eq!(counts(&stored), [4, 4, 7, 6, 4, 4], "13 > 8: two halves");
    let table = stored.map_root().segments();
    assert_eq!(table[3].first, Field::new("a09/05", FieldType::Counter));
    assert_eq!((table[2].id, table[3].id), (105, 106), "fresh ids");
    // Segment 1 (a04..a07) emptied: it leaves.
    let kept = stored.map_root().segments()[2].clone();
    assert_eq!(
        run(&mut stored, &mut whole, &removes(&names(4..8, "a"))),
        [1]
    );
    assert_eq!(counts(&stored), [4, 7, 6, 4, 4]);
    assert_eq!(
        stored.map_root().segments()[1],
        kept,
        "untouched segments stay"
    );
    // Segment 0 emptied: the next one, untouched, now starts at the bottom.
    let next = stored.map_root().segments()[1].clone();
    run(&mut stored, &mut whole, &removes(&names(0..4, "a")));
    assert_eq!(counts(&stored), [7, 6, 4, 4]);
    let first = &stored.map_root().segments()[0];
    assert_eq!(
        (&first.first, first.id, first.digest),
        (&Field::new("", FieldType::Counter), next.id, next.digest)
    );
    // Everything removed: one empty segment is left.
    let all: Vec<String> = (fields(&whole).into_iter())
        .map(|f| String::from_utf8(f.name).unwrap())
        .collect();
    run(&mut stored, &mut whole, &removes(&all));
    assert_eq!(counts(&stored), [0]);
    assert!(stored.root.is_empty());
    // And it fills again.
    run(&mut stored, &mut whole, &counters(&names(0..3, "b")));
    assert_eq!(counts(&stored), [3]);
}

/// Fields of one name and five types are five fields, ordered by type
/// (counter, register, map, flag, set): a range may end between two of
/// them, and an operation on one loads its segment only, whatever type its
/// update names (the operation's type decides the field).
#[test]
fn fields_of_one_name_fall_in_segments_by_type() {
    let mut whole = Map::new();
    let updates = FieldType::ALL
        .iter()
        .map(|&kind| MapUpdate {
            field: Field::new("x", kind),
            op: field_op(kind, 1),
        })
        .collect();
    let op = MapOp {
        removes: vec![],
        updates,
    };
    whole.apply(Actor(1), &op, None, 0).unwrap();
    let mut stored = Stored::new(whole.clone(), 0, 2);
    let firsts: Vec<FieldType> = (stored.map_root().segments().iter())
        .map(|s| s.first.kind)
        .collect();
    assert_eq!(
        firsts,
        [FieldType::Counter, FieldType::Map, FieldType::Set],
        "[counter x, register x], [map x, flag x], [set x]"
    );
    assert_eq!(
        stored.map_root().locate(&Field::new("x", FieldType::Flag)),
        1
    );
    let flag = MapOp {
        removes: vec![],
        updates: vec![MapUpdate {
            // Named a counter, but a flag operation: the flag field.
            field: Field::new("x", FieldType::Counter),
            op: FieldOp::Flag(FlagOp::Disable),
        }],
    };
    assert_eq!(run(&mut stored, &mut whole, &flag), [1]);
    let set = MapOp {
        removes: vec![Field::new("x", FieldType::Set)],
        updates: vec![],
    };
    assert_eq!(run(&mut stored, &mut whole, &set), [2]);
    assert_eq!(counts(&stored), [2, 2]);
}

/// A remove deferred at the stored replica, of a nested field a
/// coordinator added, is forgotten when the delta that completes its
/// context arrives, though that delta names only a field of another
/// segment. A map runs its deferred removes on every join, dropping at
/// once what their context covers (unlike a set, which waits for the whole
/// context): the nested set goes with the first delta. `touched_by_delta`
/// loads the segments of the deferred removes' top-level fields (the first
/// map of a nested remove's path) all the same.
#[test]
fn a_map_delta_that_completes_a_deferred_remove_forgets_it() {
    let (mut whole, mut stored) = twenty(4);
    let mut coordinator = whole.clone();
    let k = Actor(100);
    let nested = update(
        "a17",
        FieldOp::Map(update("s", set_op(vec![b"m".to_vec()], vec![]))),
    );
    let first = coordinator.apply_op(k, &nested, None, 1).unwrap();
    let second = (coordinator.apply_op(k, &counters(&["a01".into()]), None, 2)).unwrap();
    // A client read the coordinator and removes the nested set here:
    // deferred, with a path.
    let read = coordinator.clock().clone();
    let remove = update(
        "a17",
        FieldOp::Map(MapOp {
            removes: vec![Field::new("s", FieldType::Set)],
            updates: vec![],
        }),
    );
    operate(&mut stored, &mut whole, (Actor(1), &remove), Some(&read), 3).unwrap();
    assert_eq!(whole.deferred_len(), 1);
    assert_eq!(stored.map_root().deferred_len(), 1);
    let nested_value = |map: &Map| {
        (map.value().into_iter())
            .find(|(f, _)| *f == Field::new("a17", FieldType::Map))
            .map(|(_, v)| v)
    };
    let emptied = Some(eddy_dt::FieldValue::Map(vec![]));
    assert_eq!(
        join(&mut stored, &mut whole, &second).unwrap(),
        Err(NotReady)
    );
    assert_eq!(join(&mut stored, &mut whole, &first).unwrap(), Ok(()));
    assert_eq!(nested_value(&whole), emptied, "the set's one dot was seen");
    assert_eq!(whole.deferred_len(), 1, "the context is not all seen yet");
    let root = stored.map_root();
    assert_eq!(root.locate(&Field::new("a17", FieldType::Map)), 4);
    assert_eq!(root.locate(&Field::new("a01", FieldType::Counter)), 0);
    let touched = stored.root.touched_by_delta(&Delta::Map(second.clone()));
    assert_eq!(touched, Ok(vec![0, 4]));
    assert_eq!(join(&mut stored, &mut whole, &second).unwrap(), Ok(()));
    assert_eq!(whole.deferred_len(), 0);
    assert_eq!(stored.map_root().deferred_len(), 0);
    assert_eq!(nested_value(&whole), emptied);
}

/// The point of it all: one update of a 100,000-field map writes the root
/// and one segment, a small fraction of the whole state.
#[test]
fn an_update_of_a_100000_field_map_writes_one_segment() {
    let mut whole = Map::new();
    let all: Vec<String> = (0..100_000).map(|i| format!("field-{i:06}")).collect();
    whole.apply(Actor(1), &counters(&all), None, 0).unwrap();
    let state = State::Map(whole.clone()).encode().len();
    let (root, puts) = State::Map(whole).into_segments(7).unwrap();
    assert_eq!(root.segment_count(), 98);
    let mut stored = Stored {
        root,
        records: puts.into_iter().collect(),
    };
    let op = Op::Map(counters(&["field-054321/new".into()]));
    let touched = stored.root.touched_by_op(&op).unwrap();
    assert_eq!(touched, [53]);
    let id = stored.root.id(53);
    let mut partial = stored.partial(&touched);
    partial.apply_with_delta(Actor(2), &op, None, 1).unwrap();
    let write = stored.root.write_back(partial, &touched).unwrap();
    assert_eq!(write.dead, [id]);
    assert_eq!(write.puts.len(), 1);
    let written = write.puts[0].1.len() + stored.root.encode().len();
    assert!(written * 50 < state, "{written} bytes written of {state}");
    assert_eq!(stored.root.len(), 100_001);
}

/// A map root refuses a table no write-back makes, and a deferred remove
/// its clock has seen.
#[test]
fn a_map_root_with_an_impossible_table_is_refused() {
    let (_, stored) = twenty(8);
    assert_eq!(counts(&stored), [8, 8, 4]);
    let bytes = stored.root.encode();
    // The table ends the root: each entry is its first (name, type), id,
    // count, then 8 bytes of digest. The last is "a16" counter, id 102.
    let last = bytes.len() - (4 + 1 + 1 + 1 + 8);
    assert_eq!(&bytes[last..last + 7], b"\x03a16\x01\x66\x04");
    let decode = |b: &[u8]| MapRoot::decode(b).map(drop);
    let mut duplicate = bytes.clone();
    duplicate[last + 5] = 101;
    assert_eq!(
        decode(&duplicate),
        Err(DecodeError("segment id named twice"))
    );
    let mut unsorted = bytes.clone();
    unsorted[last + 2] = b'0';
    assert_eq!(decode(&unsorted), Err(DecodeError("segments not sorted")));
    let mut unborn = bytes.clone();
    unborn[last + 5] = 103;
    assert_eq!(
        decode(&unborn),
        Err(DecodeError("segment id not below the next id"))
    );
    let mut kind = bytes.clone();
    kind[last + 4] = 6;
    assert_eq!(decode(&kind), Err(DecodeError("unknown map field type")));
    // The first entry: "" counter, id 100, count 8. As "" register it no
    // longer starts at the bottom.
    let first = last - (4 + 1 + 1 + 1 + 8) - (1 + 1 + 1 + 1 + 8);
    assert_eq!(&bytes[first..first + 4], b"\x00\x01\x64\x08");
    let mut high = bytes.clone();
    high[first + 1] = FieldType::Register.tag();
    assert_eq!(
        decode(&high),
        Err(DecodeError("first segment does not start at the bottom"))
    );
    let mut none = bytes[..first].to_vec();
    *none.last_mut().unwrap() = 0;
    assert_eq!(decode(&none), Err(DecodeError("root without segments")));
    let mut set_magic = bytes.clone();
    set_magic[0] = eddy_dt::SetRoot::MAGIC;
    assert_eq!(decode(&set_magic), Err(DecodeError("not a map root")));
    assert!(Root::decode(&set_magic).is_err());
}

/// A map delta no operation makes is refused: a dot that is not its
/// actor's next, a field both present and gone, gone fields out of order,
/// a deferred context the clock after the operation has seen, an unknown
/// deferred flag.
#[test]
fn a_map_delta_no_operation_makes_is_refused() {
    let mut map = Map::new();
    map.apply(Actor(1), &counters(&["c".into()]), None, 0)
        .unwrap();
    let mut ahead = map.clock().clone();
    ahead.raise(Actor(3), 1);
    let op = MapOp {
        removes: vec![Field::new("gone", FieldType::Flag)],
        updates: vec![],
    };
    let delta = map.apply_op(Actor(2), &op, Some(&ahead), 1).unwrap();
    let bytes = delta.encode();
    // 86, 3 actors (1, 2, 3), before {1: 1}, dot (2, 1), no present
    // fields, one gone: "gone" flag, deferred: 1, {1: 1, 3: 1}, 1 target.
    let actors = 1 + 3 * 8;
    let at = 1 + actors;
    assert_eq!(&bytes[at..at + 6], b"\x01\x00\x01\x01\x01\x00");
    assert_eq!(&bytes[at + 6..at + 13], b"\x01\x04gone\x04");
    assert_eq!(MapDelta::decode(&bytes), Ok(delta.clone()));
    let decode = |b: &[u8]| MapDelta::decode(b).map(drop);
    let mut late = bytes.clone();
    late[at + 4] = 2;
    assert_eq!(
        decode(&late),
        Err(DecodeError("delta dot not its actor's next"))
    );
    let mut flag = bytes.clone();
    flag[at + 13] = 2;
    assert_eq!(decode(&flag), Err(DecodeError("unknown deferred flag")));
    // The context {1: 1, 3: 1} made {1: 1}: seen.
    let mut seen = bytes[..at + 14].to_vec();
    seen.extend_from_slice(b"\x01\x00\x01");
    seen.extend_from_slice(&bytes[at + 19..]);
    assert_eq!(
        decode(&seen),
        Err(DecodeError("deferred remove already seen"))
    );
    // Two gone fields out of order, and one both present and gone.
    let mut other = Map::new();
    other
        .apply(Actor(2), &counters(&["a".into(), "b".into()]), None, 0)
        .unwrap();
    let both = MapOp {
        removes: vec![
            Field::new("a", FieldType::Counter),
            Field::new("b", FieldType::Counter),
        ],
        updates: vec![],
    };
    let gone = other.apply_op(Actor(2), &both, None, 1).unwrap().encode();
    let at = 1 + 1 + 8 + 3 + 2 + 1;
    assert_eq!(&gone[at..], b"\x02\x01a\x01\x01b\x01\x00");
    let mut unsorted = gone.clone();
    unsorted[at + 2] = b'b';
    unsorted[at + 5] = b'a';
    assert_eq!(
        decode(&unsorted),
        Err(DecodeError("gone fields not sorted"))
    );
    let readded = other
        .apply_op(Actor(2), &counters(&["a".into()]), None, 2)
        .unwrap();
    let present = readded.encode();
    // One present field "a": 01 01 61 01 <body>; make "b" gone also "a".
    let mut twice = present[..present.len() - 2].to_vec();
    twice.extend_from_slice(b"\x01\x01a\x01\x00");
    assert_eq!(present[present.len() - 2..], *b"\x00\x00");
    assert_eq!(
        decode(&twice),
        Err(DecodeError("delta field both present and gone"))
    );
}

/// `State::apply_with_delta` is `State::apply` (same result, same state,
/// same refusals) plus a delta for sets and maps only; the generic API
/// refuses mixing types without panicking.
mod generic {
    use super::*;
    use eddy_dt::{Orswot, SetRoot};

    fn op_of(datatype: eddy_dt::DataType, p: u8, map_op: &MapOp) -> Op {
        let elements = vec![vec![p % 7]];
        match datatype {
            eddy_dt::DataType::Counter => Op::Counter(i64::from(p) - 128),
            eddy_dt::DataType::Set => Op::Set(SetOp {
                adds: if p.is_multiple_of(2) {
                    elements.clone()
                } else {
                    vec![]
                },
                removes: if p.is_multiple_of(3) {
                    vec![vec![p % 5]]
                } else {
                    vec![]
                },
            }),
            eddy_dt::DataType::Map => Op::Map(map_op.clone()),
            eddy_dt::DataType::Hll => Op::Hll(elements),
            eddy_dt::DataType::GSet => Op::GSet(elements),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn apply_with_delta_is_apply_plus_a_delta(
            ops in prop::collection::vec(
                (0..5usize, any::<u8>(), operation(4), any::<bool>(), 0..3u8),
                1..20,
            ),
            datatype in 0..5usize,
        ) {
            let datatype = eddy_dt::DataType::ALL[datatype];
            let mut plain = State::new(datatype, 12);
            let mut with = plain.clone();
            for (n, (of, p, op, context, by)) in ops.iter().enumerate() {
                // Mostly of the state's type; sometimes of another.
                let of = if n % 4 == 3 { eddy_dt::DataType::ALL[*of] } else { datatype };
                let present = match &plain { State::Map(m) => fields(m), _ => vec![] };
                let op = op_of(of, *p, &map_op(op, &present, &present));
                let context = context.then(|| plain.context().cloned()).flatten();
                let actor = Actor(u64::from(*by) + 1);
                let expected = plain.apply(actor, &op, context.as_ref(), n as u64);
                let got = with.apply_with_delta(actor, &op, context.as_ref(), n as u64);
                prop_assert_eq!(&got.clone().map(drop), &expected);
                prop_assert_eq!(&with, &plain);
                if let Ok(delta) = got {
                    let segmented = plain.segmentable_len().is_some();
                    prop_assert_eq!(delta.is_some(), segmented);
                    prop_assert_eq!(delta.map(|d| d.datatype()), segmented.then_some(datatype));
                }
            }
            prop_assert_eq!(plain.segmentable_len().is_some(),
                matches!(datatype, eddy_dt::DataType::Set | eddy_dt::DataType::Map));
        }
    }

    /// A set through the generic API: what the set-specific one gives.
    #[test]
    fn a_set_through_the_generic_api_is_the_set_api() {
        let mut set = Orswot::new();
        for i in 0..50u32 {
            set.add(Actor(1), format!("m{i:02}").as_bytes());
        }
        let (mut root, puts) = set.clone().into_segments_of(3, 4);
        let records: BTreeMap<u64, Vec<u8>> = puts.into_iter().collect();
        let mut generic = Root::Set(root.clone());
        assert_eq!(Root::decode(&root.encode()), Ok(generic.clone()));
        assert_eq!(generic.datatype(), eddy_dt::DataType::Set);
        assert_eq!(generic.len(), 50);
        assert_eq!(generic.segment_count(), 13);
        assert_eq!(generic.ids(), (3..16).collect::<Vec<u64>>());
        let op = SetOp {
            adds: vec![b"m07/x".to_vec()],
            removes: vec![b"m33".to_vec()],
        };
        let touched = generic.touched_by_op(&Op::Set(op.clone())).unwrap();
        assert_eq!(touched, root.touched([&b"m07/x"[..], b"m33"]));
        assert_eq!(touched, [1, 8]);
        let segment = |i: usize| {
            root.decode_segment(i, &records[&root.segments()[i].id])
                .unwrap()
        };
        let mut partial = root.partial(touched.iter().map(|&i| (i, segment(i))).collect());
        let generic_segments = touched
            .iter()
            .map(|&i| {
                (
                    i,
                    generic.decode_segment(i, &records[&generic.id(i)]).unwrap(),
                )
            })
            .collect();
        let mut generic_partial = generic.partial(generic_segments).unwrap();
        assert_eq!(generic_partial, State::Set(partial.clone()));
        let delta = (partial.apply_op(Actor(2), &[&b"m07/x"[..]], &[&b"m33"[..]], None)).unwrap();
        let got = generic_partial.apply_with_delta(Actor(2), &Op::Set(op), None, 0);
        assert_eq!(got, Ok(Some(Delta::Set(delta.clone()))));
        let write = root.write_back(partial, &touched);
        assert_eq!(generic.write_back(generic_partial, &touched), Ok(write));
        assert_eq!(generic, Root::Set(root.clone()));
        assert_eq!(
            generic.touched_by_delta(&Delta::Set(delta.clone())),
            Ok(root.touched_by_delta(&delta))
        );
        // Delta dispatch by first byte.
        assert_eq!(Delta::decode(&delta.encode()), Ok(Delta::Set(delta)));
    }

    /// Mixing types: refused, never a panic, and nothing changes.
    #[test]
    fn the_generic_api_refuses_mixing_types() {
        let mut set = Orswot::new();
        set.add(Actor(1), b"x");
        let (set_root, set_puts) = State::Set(set.clone()).into_segments(0).unwrap();
        let (mut map, stored) = twenty(8);
        let map_root = stored.root.clone();
        let map_segment = stored.segment(0);
        let set_segment = set_root.decode_segment(0, &set_puts[0].1).unwrap();
        // A segment of one type is not the other's.
        assert!(map_root.decode_segment(0, &set_puts[0].1).is_err());
        assert!(
            set_root
                .decode_segment(0, &stored.records[&map_root.id(0)])
                .is_err()
        );
        assert!(map_root.partial(vec![(0, set_segment.clone())]).is_err());
        assert!(set_root.partial(vec![(0, map_segment.clone())]).is_err());
        assert!(set_root.assemble(vec![map_segment]).is_err());
        let mut all: Vec<Segment> = (0..3).map(|i| stored.segment(i)).collect();
        all[1] = set_segment;
        assert!(map_root.assemble(all).is_err());
        // An operation or delta of another type.
        let set_op = Op::Set(SetOp::default());
        assert_eq!(
            map_root.touched_by_op(&set_op),
            Err(DtError::WrongType {
                op: eddy_dt::DataType::Set,
                datatype: eddy_dt::DataType::Map
            })
        );
        assert!(set_root.touched_by_op(&Op::Counter(1)).is_err());
        let map_delta = map
            .apply_op(Actor(2), &counters(&["z".into()]), None, 0)
            .unwrap();
        assert_eq!(
            set_root.touched_by_delta(&Delta::Map(map_delta.clone())),
            Err(NotReady)
        );
        let mut state = State::Set(set.clone());
        assert_eq!(state.join_delta(&Delta::Map(map_delta)), Err(NotReady));
        assert_eq!(state, State::Set(set.clone()));
        // A partial of another type: refused, the root unchanged.
        let mut root = map_root.clone();
        assert!(root.write_back(State::Set(set.clone()), &[0]).is_err());
        let counter = State::new(eddy_dt::DataType::Counter, 12);
        assert!(root.write_back(counter, &[0]).is_err());
        assert_eq!(root, map_root);
        // A partial holding a field outside the loaded segments, or a
        // segment the table lacks: refused, the root unchanged.
        let whole = stored.assemble();
        assert!(root.write_back(whole.clone(), &[0]).is_err());
        assert!(root.write_back(whole, &[0, 1, 2, 3]).is_err());
        assert_eq!(root, map_root);
        // Only sets and maps split.
        let counter = State::new(eddy_dt::DataType::Counter, 12);
        assert_eq!(
            counter.clone().into_segments(0).map(drop),
            Err(counter.clone())
        );
        assert_eq!(counter.segmentable_len(), None);
        assert_eq!(State::Set(set).segmentable_len(), Some(1));
        // Records are told apart by their first byte.
        assert!(Root::is_root(&set_root.encode()) && SetRoot::is_root(&set_root.encode()));
        assert!(!MapRoot::is_root(&set_root.encode()));
        assert!(Delta::decode(&set_root.encode()).is_err());
        assert_eq!(Delta::decode(&[]), Err(DecodeError("truncated")));
        assert_eq!(Root::decode(&[0x85]), Err(DecodeError("not a root")));
    }
}
