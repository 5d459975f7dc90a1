//! The binary form of an [`Op`] as it travels from a coordinator to the
//! coordinating vnode on another node (docs/formats/vnode-messages.md,
//! "Data type update").
//!
//! Layout: a tag byte per operation (1 counter, 2 set, 3 map, 4 hll,
//! 5 gset); a counter amount as a zigzag varint; element lists as a count
//! then length-prefixed elements; a map operation as its removes (fields)
//! then its updates (field, then a field-op tag 1 counter, 2 set,
//! 3 register, 4 flag, 5 map and its operand). A field is its type tag
//! (the PB `MapFieldType` numbers) and its length-prefixed name.
//!
//! Invariant: decoding refuses maps nested deeper than
//! [`MAP_DEPTH_MAX`], so a hostile message cannot exhaust the stack.

use crate::codec::{DecodeError, Reader, Writer};
use crate::op::{Field, FieldOp, FieldType, FlagOp, MAP_DEPTH_MAX, MapOp, MapUpdate, Op, SetOp};

impl Op {
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Op::Counter(n) => {
                w.u8(1);
                w.varint(zigzag(*n));
            }
            Op::Set(s) => {
                w.u8(2);
                set_op(w, s);
            }
            Op::Map(m) => {
                w.u8(3);
                map_op(w, m);
            }
            Op::Hll(adds) => {
                w.u8(4);
                elements(w, adds);
            }
            Op::GSet(adds) => {
                w.u8(5);
                elements(w, adds);
            }
        }
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<Op, DecodeError> {
        Ok(match r.u8()? {
            1 => Op::Counter(unzigzag(r.varint()?)),
            2 => Op::Set(read_set_op(r)?),
            3 => Op::Map(read_map_op(r, 1)?),
            4 => Op::Hll(read_elements(r)?),
            5 => Op::GSet(read_elements(r)?),
            _ => return Err(DecodeError("unknown operation tag")),
        })
    }
}

fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

fn elements(w: &mut Writer, list: &[Vec<u8>]) {
    w.len(list.len());
    list.iter().for_each(|e| w.bytes(e));
}

fn read_elements(r: &mut Reader<'_>) -> Result<Vec<Vec<u8>>, DecodeError> {
    let n = r.count(1)?;
    (0..n).map(|_| r.bytes().map(<[u8]>::to_vec)).collect()
}

fn set_op(w: &mut Writer, s: &SetOp) {
    elements(w, &s.adds);
    elements(w, &s.removes);
}

fn read_set_op(r: &mut Reader<'_>) -> Result<SetOp, DecodeError> {
    Ok(SetOp {
        adds: read_elements(r)?,
        removes: read_elements(r)?,
    })
}

fn field(w: &mut Writer, f: &Field) {
    w.u8(f.kind.tag());
    w.bytes(&f.name);
}

fn read_field(r: &mut Reader<'_>) -> Result<Field, DecodeError> {
    let kind = FieldType::from_tag(r.u8()?).ok_or(DecodeError("unknown field type"))?;
    Ok(Field::new(r.bytes()?, kind))
}

fn map_op(w: &mut Writer, m: &MapOp) {
    w.len(m.removes.len());
    m.removes.iter().for_each(|f| field(w, f));
    w.len(m.updates.len());
    for u in &m.updates {
        field(w, &u.field);
        w.u8(u.op.kind().tag());
        match &u.op {
            FieldOp::Counter(n) => w.varint(zigzag(*n)),
            FieldOp::Set(s) => set_op(w, s),
            FieldOp::Register(v) => w.bytes(v),
            FieldOp::Flag(f) => w.u8(matches!(f, FlagOp::Enable) as u8),
            FieldOp::Map(inner) => map_op(w, inner),
        }
    }
}

fn read_map_op(r: &mut Reader<'_>, depth: usize) -> Result<MapOp, DecodeError> {
    if depth > MAP_DEPTH_MAX {
        return Err(DecodeError("map operation nested too deep"));
    }
    let n = r.count(2)?;
    let removes = (0..n).map(|_| read_field(r)).collect::<Result<_, _>>()?;
    let n = r.count(3)?;
    let mut updates = Vec::with_capacity(n);
    for _ in 0..n {
        let field = read_field(r)?;
        let op = match FieldType::from_tag(r.u8()?) {
            Some(FieldType::Counter) => FieldOp::Counter(unzigzag(r.varint()?)),
            Some(FieldType::Set) => FieldOp::Set(read_set_op(r)?),
            Some(FieldType::Register) => FieldOp::Register(r.bytes()?.to_vec()),
            Some(FieldType::Flag) => FieldOp::Flag(match r.u8()? {
                1 => FlagOp::Enable,
                0 => FlagOp::Disable,
                _ => return Err(DecodeError("unknown flag operation")),
            }),
            Some(FieldType::Map) => FieldOp::Map(read_map_op(r, depth + 1)?),
            None => return Err(DecodeError("unknown field operation")),
        };
        if op.kind() != field.kind {
            return Err(DecodeError(
                "field operation of another type than its field",
            ));
        }
        updates.push(MapUpdate { field, op });
    }
    Ok(MapOp { removes, updates })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(op: &Op) -> Op {
        let mut w = Writer::new();
        op.encode(&mut w);
        let mut r = Reader::new(&w.buf);
        let back = Op::decode(&mut r).unwrap();
        r.finish().unwrap();
        back
    }

    #[test]
    fn every_operation_reads_back() {
        let nested = MapOp {
            removes: vec![Field::new("gone", FieldType::Flag)],
            updates: vec![
                MapUpdate {
                    field: Field::new("c", FieldType::Counter),
                    op: FieldOp::Counter(i64::MIN),
                },
                MapUpdate {
                    field: Field::new("r", FieldType::Register),
                    op: FieldOp::Register(b"v".to_vec()),
                },
                MapUpdate {
                    field: Field::new("f", FieldType::Flag),
                    op: FieldOp::Flag(FlagOp::Enable),
                },
            ],
        };
        let outer = MapOp {
            removes: vec![],
            updates: vec![
                MapUpdate {
                    field: Field::new("m", FieldType::Map),
                    op: FieldOp::Map(nested),
                },
                MapUpdate {
                    field: Field::new("s", FieldType::Set),
                    op: FieldOp::Set(SetOp {
                        adds: vec![b"a".to_vec()],
                        removes: vec![b"b".to_vec()],
                    }),
                },
            ],
        };
        for op in [
            Op::Counter(-5),
            Op::Counter(i64::MAX),
            Op::Hll(vec![b"x".to_vec()]),
            Op::GSet(vec![]),
            Op::Map(outer),
        ] {
            assert_eq!(roundtrip(&op), op);
        }
    }

    #[test]
    fn nesting_beyond_the_limit_is_refused() {
        let mut op = MapOp::default();
        for _ in 0..MAP_DEPTH_MAX {
            op = MapOp {
                removes: vec![],
                updates: vec![MapUpdate {
                    field: Field::new("m", FieldType::Map),
                    op: FieldOp::Map(op),
                }],
            };
        }
        let mut w = Writer::new();
        Op::Map(op).encode(&mut w);
        assert!(Op::decode(&mut Reader::new(&w.buf)).is_err());
    }
}
