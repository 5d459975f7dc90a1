//! The grow-only set (riak_dt_gset): members are only added; a merge is
//! the union; the value is the members in byte order.

use std::collections::BTreeSet;

use crate::codec::{DecodeError, Reader, Writer};

/// A grow-only set's state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GSet {
    members: BTreeSet<Vec<u8>>,
}

impl GSet {
    pub fn new() -> GSet {
        GSet::default()
    }

    /// Adds `member` (already there: nothing changes).
    pub fn add(&mut self, member: &[u8]) {
        if !self.members.contains(member) {
            self.members.insert(member.to_vec());
        }
    }

    /// Takes in `other`'s members.
    pub fn merge(&mut self, other: &GSet) {
        for m in &other.members {
            self.add(m);
        }
    }

    /// The members, in byte order.
    pub fn value(&self) -> impl Iterator<Item = &[u8]> {
        self.members.iter().map(Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Writes the state (docs/formats/datatypes.md): the number of
    /// members, then each member as length-prefixed bytes, in byte order.
    pub fn encode(&self, w: &mut Writer) {
        w.len(self.members.len());
        self.members.iter().for_each(|m| w.bytes(m));
    }

    /// Reads a state [`GSet::encode`] wrote: members strictly increasing.
    pub fn decode(r: &mut Reader) -> Result<GSet, DecodeError> {
        let n = r.count(1)?;
        let mut members = BTreeSet::new();
        for _ in 0..n {
            let m = r.bytes()?;
            if members
                .last()
                .is_some_and(|last: &Vec<u8>| last.as_slice() >= m)
            {
                return Err(DecodeError("gset members not sorted"));
            }
            members.insert(m.to_vec());
        }
        Ok(GSet { members })
    }
}
