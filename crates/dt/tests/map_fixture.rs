//! Pins the map's stored encoding (docs/formats/datatype-map.md): a fixed
//! small map (one field of each type, a nested map, a deferred remove)
//! encodes to exactly `fixtures/map-v1.bin`, and the file decodes back to
//! the same state. `EDDY_WRITE_FIXTURES=1` rewrites the file.

use eddy_dt::codec::{Reader, Writer};
use eddy_dt::{
    Actor, Field, FieldOp, FieldType, FieldValue, FlagOp, Map, MapOp, MapUpdate, SetOp,
    VersionVector,
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
