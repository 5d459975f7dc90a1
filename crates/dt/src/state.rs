//! A stored value of any data type ([`State`]): the operation a
//! coordinating replica applies, the merge every other replica path uses,
//! the value and context a client reads, and the stored encoding's
//! envelope (docs/formats/datatypes.md): a format version byte, a type tag,
//! then the type's body.
//!
//! Invariants: an operation of another type than the state's is refused
//! ([`DtError::WrongType`]) and an operation that fails changes nothing;
//! a merge of two states of different types is refused, never half done.

use eddy_object::{Actor, VersionVector};

use crate::codec::{DecodeError, Reader, Writer};
use crate::op::{DataType, DtError, Op, SetOp, Value};
use crate::{GSet, Hll, Map, Orswot, OrswotDelta, PnCounter};

/// The stored encoding's format version.
pub const FORMAT_VERSION: u8 = 1;

/// A value of one data type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Counter(PnCounter),
    Set(Orswot),
    Map(Map),
    Hll(Hll),
    GSet(GSet),
}

impl State {
    /// An empty value of `datatype`; an HLL has `hll_precision` (which the
    /// bucket's props checked to be in range).
    pub fn new(datatype: DataType, hll_precision: u8) -> State {
        match datatype {
            DataType::Counter => State::Counter(PnCounter::new()),
            DataType::Set => State::Set(Orswot::new()),
            DataType::Map => State::Map(Map::new()),
            DataType::Hll => State::Hll(
                Hll::new(hll_precision)
                    .unwrap_or_else(|_| Hll::new(crate::HLL_PRECISION_DEFAULT).expect("default")),
            ),
            DataType::GSet => State::GSet(GSet::new()),
        }
    }

    pub fn datatype(&self) -> DataType {
        match self {
            State::Counter(_) => DataType::Counter,
            State::Set(_) => DataType::Set,
            State::Map(_) => DataType::Map,
            State::Hll(_) => DataType::Hll,
            State::GSet(_) => DataType::GSet,
        }
    }

    /// Applies `op` as `actor`, with the context the client read (if it
    /// sent one) and this replica's time (registers are stamped with it).
    pub fn apply(
        &mut self,
        actor: Actor,
        op: &Op,
        context: Option<&VersionVector>,
        now_us: u64,
    ) -> Result<(), DtError> {
        match (self, op) {
            (State::Counter(c), Op::Counter(n)) => {
                c.increment(actor, *n).map_err(|_| DtError::Overflow)
            }
            (State::Set(s), Op::Set(set_op)) => apply_set(s, actor, set_op, context).map(drop),
            (State::Map(m), Op::Map(map_op)) => m.apply(actor, map_op, context, now_us),
            (State::Hll(h), Op::Hll(adds)) => {
                adds.iter().for_each(|e| h.add(e));
                Ok(())
            }
            (State::GSet(g), Op::GSet(adds)) => {
                adds.iter().for_each(|e| g.add(e));
                Ok(())
            }
            (state, op) => Err(DtError::WrongType {
                op: op.datatype(),
                datatype: state.datatype(),
            }),
        }
    }

    /// Takes in `other`'s state (another replica's version of this value).
    pub fn merge(&mut self, other: &State) -> Result<(), DtError> {
        match (self, other) {
            (State::Counter(a), State::Counter(b)) => a.merge(b),
            (State::Set(a), State::Set(b)) => a.merge(b),
            (State::Map(a), State::Map(b)) => a.merge(b),
            (State::Hll(a), State::Hll(b)) => a.merge(b),
            (State::GSet(a), State::GSet(b)) => a.merge(b),
            (a, b) => {
                return Err(DtError::WrongType {
                    op: b.datatype(),
                    datatype: a.datatype(),
                });
            }
        }
        Ok(())
    }

    /// Lowers an HLL's precision to the bucket's `hll_precision` when that
    /// was lowered after the value was made (Riak never raises it).
    pub fn fit_precision(&mut self, hll_precision: u8) {
        if let State::Hll(h) = self
            && hll_precision < h.precision()
            && hll_precision >= crate::HLL_PRECISION_MIN
        {
            h.reduce(hll_precision);
        }
    }

    /// What a client reads.
    pub fn value(&self) -> Value {
        match self {
            State::Counter(c) => Value::Counter(c.value()),
            State::Set(s) => Value::Set(s.value().map(<[u8]>::to_vec).collect()),
            State::Map(m) => Value::Map(m.value()),
            State::Hll(h) => Value::Hll(h.estimate()),
            State::GSet(g) => Value::GSet(g.value().map(<[u8]>::to_vec).collect()),
        }
    }

    /// The clock a client reads as the context of a set or map (what its
    /// removes need); counters, HLLs and grow-only sets have none.
    pub fn context(&self) -> Option<&VersionVector> {
        match self {
            State::Set(s) => Some(s.clock()),
            State::Map(m) => Some(m.clock()),
            _ => None,
        }
    }

    /// The stored encoding: version, type tag, body.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(FORMAT_VERSION);
        w.u8(self.datatype().tag());
        match self {
            State::Counter(c) => c.encode(&mut w),
            State::Set(s) => s.encode(&mut w),
            State::Map(m) => m.encode(&mut w),
            State::Hll(h) => h.encode(&mut w),
            State::GSet(g) => g.encode(&mut w),
        }
        w.buf
    }

    /// Decodes [`State::encode`]'s bytes, refusing anything else.
    pub fn decode(bytes: &[u8]) -> Result<State, DecodeError> {
        let mut r = Reader::new(bytes);
        if r.u8()? != FORMAT_VERSION {
            return Err(DecodeError("unknown format version"));
        }
        let datatype = DataType::from_tag(r.u8()?).ok_or(DecodeError("unknown type tag"))?;
        let state = match datatype {
            DataType::Counter => State::Counter(PnCounter::decode(&mut r)?),
            DataType::Set => State::Set(Orswot::decode(&mut r)?),
            DataType::Map => State::Map(Map::decode(&mut r)?),
            DataType::Hll => State::Hll(Hll::decode(&mut r)?),
            DataType::GSet => State::GSet(GSet::decode(&mut r)?),
        };
        r.finish()?;
        Ok(state)
    }
}

/// A set operation, all or nothing: adds, then removes; without a context
/// every removed member must be present (or added by this operation).
/// Every operation mints a dot ([`Orswot::apply_op`]). Returns its delta.
pub(crate) fn apply_set(
    s: &mut Orswot,
    actor: Actor,
    op: &SetOp,
    context: Option<&VersionVector>,
) -> Result<OrswotDelta, DtError> {
    let adds: Vec<&[u8]> = op.adds.iter().map(Vec::as_slice).collect();
    let removes: Vec<&[u8]> = op.removes.iter().map(Vec::as_slice).collect();
    s.apply_op(actor, &adds, &removes, context)
        .map_err(|crate::Precondition::NotPresent(m)| DtError::NotPresent(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_of_another_type_is_refused() {
        let mut s = State::new(DataType::Set, 14);
        let err = s.apply(Actor(1), &Op::Counter(1), None, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Operation type is `counter` but bucket type is `set`."
        );
        assert_eq!(s, State::new(DataType::Set, 14));
    }

    #[test]
    fn a_set_remove_without_context_of_an_absent_member_changes_nothing() {
        let mut s = State::new(DataType::Set, 14);
        let op = SetOp {
            adds: vec![b"a".to_vec()],
            removes: vec![b"zz".to_vec()],
        };
        let err = s.apply(Actor(1), &Op::Set(op), None, 0).unwrap_err();
        assert_eq!(err, DtError::NotPresent(b"zz".to_vec()));
        assert_eq!(s.value(), Value::Set(vec![]));
    }

    #[test]
    fn add_and_remove_of_one_member_with_a_context_keeps_it() {
        let mut s = State::new(DataType::Set, 14);
        let ctx = s.context().cloned();
        let op = SetOp {
            adds: vec![b"x".to_vec()],
            removes: vec![b"x".to_vec()],
        };
        s.apply(Actor(1), &Op::Set(op), ctx.as_ref(), 0).unwrap();
        assert_eq!(s.value(), Value::Set(vec![b"x".to_vec()]));
    }

    #[test]
    fn every_type_reads_back_from_its_encoding() {
        for dt in DataType::ALL {
            let mut s = State::new(dt, 12);
            let op = match dt {
                DataType::Counter => Op::Counter(-4),
                DataType::Set => Op::Set(SetOp {
                    adds: vec![b"m".to_vec()],
                    removes: vec![],
                }),
                DataType::Map => Op::Map(crate::MapOp {
                    removes: vec![],
                    updates: vec![crate::MapUpdate {
                        field: crate::Field::new("c", crate::FieldType::Counter),
                        op: crate::FieldOp::Counter(3),
                    }],
                }),
                DataType::Hll | DataType::GSet => {
                    let adds = vec![b"e".to_vec(), b"f".to_vec()];
                    match dt {
                        DataType::Hll => Op::Hll(adds),
                        _ => Op::GSet(adds),
                    }
                }
            };
            s.apply(Actor(7), &op, None, 1).unwrap();
            let bytes = s.encode();
            assert_eq!(bytes[..2], [FORMAT_VERSION, dt.tag()]);
            assert_eq!(State::decode(&bytes).unwrap(), s, "{dt}");
            let mut trailing = bytes.clone();
            trailing.push(0);
            assert!(State::decode(&trailing).is_err());
            assert!(State::decode(&bytes[..bytes.len() - 1]).is_err());
        }
    }
}
