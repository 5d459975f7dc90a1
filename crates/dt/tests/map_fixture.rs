//! Pins the map's stored encoding (docs/formats/datatype-map.md): a fixed
//! small map (one field of each type, a nested map, a deferred remove)
//! encodes to exactly `fixtures/map-v1.bin`, and the file decodes back to
//! the same state; likewise the records of that map segmented
//! (`map-root-v1.bin`, `map-segment-v1.bin`) and the wire form of a delta
//! on it (`map-delta-v1.bin`). `EDDY_WRITE_FIXTURES=1` rewrites the files.

use eddy_dt::codec::{Reader, Writer};
use eddy_dt::{
    Actor, Delta, Field, FieldOp, FieldType, FieldValue, FlagOp, Map, MapDelta, MapOp, MapRoot,
    MapUpdate, SetOp, VersionVector,
};

fn update(name: &str, op: FieldOp) -> MapOp {
    let field = Field::new(name, op.kind());
    MapOp {
        removes: vec![],
        updates: vec![MapUpdate { field, op }],
    }
}

fn add(members: &[&[u8]]) -> FieldOp {
    FieldOp::Set(SetOp {
        adds: members.iter().map(|m| m.to_vec()).collect(),
        removes: vec![],
    })
}

fn fixture_map() -> Map {
    let (a, b) = (Actor(1), Actor(2));
    let mut m = Map::new();
    m.apply(a, &update("c", FieldOp::Counter(5)), None, 1)
        .unwrap();
    m.apply(a, &update("c", FieldOp::Counter(-2)), None, 2)
        .unwrap();
    m.apply(a, &update("s", add(&[b"a", b"b"])), None, 3)
        .unwrap();
    let assign = FieldOp::Register(b"v".to_vec());
    m.apply(b, &update("r", assign), None, 1000).unwrap();
    m.apply(b, &update("f", FieldOp::Flag(FlagOp::Enable)), None, 5)
        .unwrap();
    let nested = update("n", FieldOp::Map(update("x", add(&[b"x"]))));
    m.apply(a, &nested, None, 6).unwrap();
    let stale = VersionVector::from_entries([(Actor(3), 1)]);
    let remove = MapOp {
        removes: vec![Field::new("gone", FieldType::Flag)],
        updates: vec![],
    };
    m.apply(b, &remove, Some(&stale), 7).unwrap();
    m
}

#[test]
fn the_map_encoding_matches_its_fixture() {
    let map = fixture_map();
    assert_eq!(map.deferred_len(), 1);
    assert_eq!(map.len(), 5);
    let mut w = Writer::new();
    map.encode(&mut w);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/map-v1.bin");
    if std::env::var("EDDY_WRITE_FIXTURES").as_deref() == Ok("1") {
        std::fs::write(path, &w.buf).unwrap();
    }
    let fixture = std::fs::read(path).unwrap();
    assert_eq!(
        w.buf, fixture,
        "the encoding changed: update the format doc"
    );
    let mut r = Reader::new(&fixture);
    let decoded = Map::decode(&mut r).unwrap();
    r.finish().unwrap();
    assert_eq!(decoded, map);
    let value = decoded.value();
    assert_eq!(
        value[0],
        (Field::new("c", FieldType::Counter), FieldValue::Counter(3))
    );
}

/// The bytes pinned in `tests/fixtures/name`, after checking that `bytes`
/// are them (or writing them, with `EDDY_WRITE_FIXTURES=1`).
fn pinned(name: &str, bytes: &[u8]) -> Vec<u8> {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    if std::env::var("EDDY_WRITE_FIXTURES").as_deref() == Ok("1") {
        std::fs::write(&path, bytes).unwrap();
    }
    let pinned = std::fs::read(&path).unwrap();
    assert_eq!(
        bytes, pinned,
        "{name}: the encoding changed: update the format doc"
    );
    pinned
}

/// The fixture map split two top-level fields a segment from id 7:
/// [c, f] (id 7), [n, r] (id 8), [s] (id 9); the root and segment 8 are
/// pinned (docs/formats/datatype-map.md "Segmented map").
#[test]
fn the_map_root_and_segment_match_their_fixtures() {
    let map = fixture_map();
    let (root, segments) = map.clone().into_segments_of(7, 2);
    let ids: Vec<u64> = segments.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [7, 8, 9]);
    let root_bytes = pinned("map-root-v1.bin", &root.encode());
    let segment = pinned("map-segment-v1.bin", &segments[1].1);
    assert_eq!(MapRoot::decode(&root_bytes).unwrap(), root);
    let decoded = root.decode_segment(1, &segment).unwrap();
    let names: Vec<Vec<u8>> = decoded.value().into_iter().map(|(f, _)| f.name).collect();
    assert_eq!(names, [b"n".to_vec(), b"r".to_vec()]);
    let all = (0..3)
        .map(|i| root.decode_segment(i, &segments[i].1).unwrap())
        .collect();
    assert_eq!(root.assemble(all).unwrap(), map);
}

/// On the fixture map, actor 2 removes register r and adds 1 to counter c
/// with a context that saw actor 3's first dot, which the map has not: c
/// is carried, r gone, and the remove deferred (docs/formats/datatype-map.md
/// "Map delta").
#[test]
fn the_map_delta_matches_its_fixture() {
    let mut map = fixture_map();
    let mut context = map.clock().clone();
    context.raise(Actor(3), 1);
    let op = MapOp {
        removes: vec![Field::new("r", FieldType::Register)],
        updates: update("c", FieldOp::Counter(1)).updates,
    };
    let delta = map.apply_op(Actor(2), &op, Some(&context), 8).unwrap();
    let bytes = pinned("map-delta-v1.bin", &delta.encode());
    assert_eq!(MapDelta::decode(&bytes).unwrap(), delta);
    assert_eq!(Delta::decode(&bytes).unwrap(), Delta::Map(delta));
}
