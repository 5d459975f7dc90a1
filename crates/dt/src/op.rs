//! What clients ask of a data type and what they read back, independent of
//! PB and JSON: the operations (Riak's `DtOp` tree), the values (`DtValue`),
//! the types and map field types, and why an operation is refused.
//!
//! Invariant: a [`MapOp`] lists its removes and its updates separately and
//! the removes run first, whatever order a client staged them in (as Riak
//! decodes a `MapOp`); a [`SetOp`]'s adds run before its removes.

use std::fmt;

/// A bucket type's `datatype`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataType {
    Counter,
    Set,
    Map,
    Hll,
    GSet,
}

impl DataType {
    pub const ALL: [DataType; 5] = [
        DataType::Counter,
        DataType::Set,
        DataType::Map,
        DataType::Hll,
        DataType::GSet,
    ];

    /// The name a bucket type's `datatype` property and the HTTP JSON use.
    pub fn name(self) -> &'static str {
        match self {
            DataType::Counter => "counter",
            DataType::Set => "set",
            DataType::Map => "map",
            DataType::Hll => "hll",
            DataType::GSet => "gset",
        }
    }

    /// The type a `datatype` property names.
    pub fn from_name(name: &str) -> Option<DataType> {
        DataType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The content type a plain KV read reports for a value of this type.
    pub fn content_type(self) -> &'static str {
        match self {
            DataType::Counter => "application/riak_counter",
            DataType::Set => "application/riak_set",
            DataType::Map => "application/riak_map",
            DataType::Hll => "application/riak_hll",
            DataType::GSet => "application/riak_gset",
        }
    }

    /// Its number in PB's `DataType` enum (1 counter, 2 set, 3 map, 4 hll,
    /// 5 gset), which is also the stored envelope's type tag.
    pub fn tag(self) -> u8 {
        match self {
            DataType::Counter => 1,
            DataType::Set => 2,
            DataType::Map => 3,
            DataType::Hll => 4,
            DataType::GSet => 5,
        }
    }

    /// The type numbered `tag` ([`DataType::tag`]).
    pub fn from_tag(tag: u8) -> Option<DataType> {
        DataType::ALL.into_iter().find(|t| t.tag() == tag)
    }

    /// The type whose values carry content type `ct`.
    pub fn from_content_type(ct: &[u8]) -> Option<DataType> {
        DataType::ALL
            .into_iter()
            .find(|t| t.content_type().as_bytes() == ct)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The type of a map's field. Declared in the order Riak sorts fields of
/// one name (by its module names: emcntr, lwwreg, map, od_flag, orswot).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FieldType {
    Counter,
    Register,
    Map,
    Flag,
    Set,
}

impl FieldType {
    pub const ALL: [FieldType; 5] = [
        FieldType::Counter,
        FieldType::Register,
        FieldType::Map,
        FieldType::Flag,
        FieldType::Set,
    ];

    /// The suffix HTTP field names carry (`name_counter`, …).
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Counter => "counter",
            FieldType::Register => "register",
            FieldType::Map => "map",
            FieldType::Flag => "flag",
            FieldType::Set => "set",
        }
    }

    pub fn from_name(name: &str) -> Option<FieldType> {
        FieldType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Its number in PB's `MapFieldType` enum (1 counter, 2 set,
    /// 3 register, 4 flag, 5 map), which the stored and vnode encodings
    /// use too.
    pub fn tag(self) -> u8 {
        match self {
            FieldType::Counter => 1,
            FieldType::Set => 2,
            FieldType::Register => 3,
            FieldType::Flag => 4,
            FieldType::Map => 5,
        }
    }

    /// The field type numbered `tag` ([`FieldType::tag`]).
    pub fn from_tag(tag: u8) -> Option<FieldType> {
        FieldType::ALL.into_iter().find(|t| t.tag() == tag)
    }
}

/// A map's field: its name and type (one name may hold one field of each
/// type).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Field {
    pub name: Vec<u8>,
    pub kind: FieldType,
}

impl Field {
    pub fn new(name: impl Into<Vec<u8>>, kind: FieldType) -> Field {
        Field {
            name: name.into(),
            kind,
        }
    }
}

/// Adds, then removes, of a set's members.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetOp {
    pub adds: Vec<Vec<u8>>,
    pub removes: Vec<Vec<u8>>,
}

/// A flag's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagOp {
    Enable,
    Disable,
}

/// An operation on one field of a map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldOp {
    /// Add this amount (negative: subtract).
    Counter(i64),
    Set(SetOp),
    /// Assign this value.
    Register(Vec<u8>),
    Flag(FlagOp),
    Map(MapOp),
}

impl FieldOp {
    /// The field type this operation applies to.
    pub fn kind(&self) -> FieldType {
        match self {
            FieldOp::Counter(_) => FieldType::Counter,
            FieldOp::Set(_) => FieldType::Set,
            FieldOp::Register(_) => FieldType::Register,
            FieldOp::Flag(_) => FieldType::Flag,
            FieldOp::Map(_) => FieldType::Map,
        }
    }
}

/// An update of one field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapUpdate {
    pub field: Field,
    pub op: FieldOp,
}

/// Field removes, then field updates, of a map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapOp {
    pub removes: Vec<Field>,
    pub updates: Vec<MapUpdate>,
}

impl MapOp {
    /// How deep this operation nests maps: 1 for an op on a map's own
    /// fields, one more per nested map update.
    pub fn depth(&self) -> usize {
        1 + self
            .updates
            .iter()
            .map(|u| match &u.op {
                FieldOp::Map(m) => m.depth(),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }
}

/// An operation on a stored value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Add this amount (negative: subtract).
    Counter(i64),
    Set(SetOp),
    Map(MapOp),
    /// Add these elements to a HyperLogLog.
    Hll(Vec<Vec<u8>>),
    /// Add these members to a grow-only set.
    GSet(Vec<Vec<u8>>),
}

impl Op {
    /// The data type this operation applies to.
    pub fn datatype(&self) -> DataType {
        match self {
            Op::Counter(_) => DataType::Counter,
            Op::Set(_) => DataType::Set,
            Op::Map(_) => DataType::Map,
            Op::Hll(_) => DataType::Hll,
            Op::GSet(_) => DataType::GSet,
        }
    }
}

/// The value of one map field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldValue {
    Counter(i64),
    /// Members in byte order.
    Set(Vec<Vec<u8>>),
    Register(Vec<u8>),
    Flag(bool),
    /// Fields in [`Field`] order.
    Map(Vec<(Field, FieldValue)>),
}

/// What a client reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Counter(i64),
    /// Members in byte order.
    Set(Vec<Vec<u8>>),
    /// Fields in [`Field`] order.
    Map(Vec<(Field, FieldValue)>),
    /// The estimated number of distinct elements added.
    Hll(u64),
    /// Members in byte order.
    GSet(Vec<Vec<u8>>),
}

/// The deepest a map operation or value may nest maps (a map holding a map
/// is depth 2).
pub const MAP_DEPTH_MAX: usize = 8;

/// Why an operation was refused. It changed nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DtError {
    /// A counter would leave the signed 64-bit range.
    Overflow,
    /// A set remove without a context named an absent member.
    NotPresent(Vec<u8>),
    /// A map field remove without a context named an absent field.
    FieldNotPresent(Field),
    /// The operation is for another type than the value's.
    WrongType { op: DataType, datatype: DataType },
    /// A map operation nests maps deeper than [`MAP_DEPTH_MAX`].
    TooDeep { depth: usize },
}

impl fmt::Display for DtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DtError::Overflow => {
                f.write_str("counter overflow: the value must stay within a signed 64-bit integer")
            }
            DtError::NotPresent(m) => write!(
                f,
                "precondition: {{not_present, {:?}}}: a remove without a context needs the member",
                String::from_utf8_lossy(m)
            ),
            DtError::FieldNotPresent(field) => write!(
                f,
                "precondition: {{not_present, {{{:?}, {}}}}}: a field remove without a context needs the field",
                String::from_utf8_lossy(&field.name),
                field.kind.name()
            ),
            DtError::WrongType { op, datatype } => {
                write!(
                    f,
                    "Operation type is `{op}` but bucket type is `{datatype}`."
                )
            }
            DtError::TooDeep { depth } => write!(
                f,
                "map operation nests {depth} maps; at most {MAP_DEPTH_MAX} are allowed"
            ),
        }
    }
}

impl std::error::Error for DtError {}
