//! The building blocks of the stored encoding of data type states
//! (docs/formats/datatypes.md): LEB128 varints, length-prefixed byte
//! strings, and the actor table each state writes once so that dots and
//! clocks name an actor by a small index instead of its 8 bytes.
//!
//! Invariants: a [`Reader`] never reads past its input and never allocates
//! more than its input could describe (a count is refused when fewer bytes
//! remain than it needs at one byte per item); every decode ends with
//! [`Reader::finish`], so trailing bytes are an error, not ignored.

use std::fmt;

use eddy_object::{Actor, VersionVector};

/// Why stored or sent bytes do not decode as a data type state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "corrupt data type state: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

/// Appends encoded fields to a buffer.
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Writer {
        Writer::default()
    }

    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    /// Makes room for `additional` more bytes at once (a big state's
    /// buffer then does not grow by copying itself over and over).
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    pub fn u64_be(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// An unsigned LEB128 varint.
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    /// A length, as a varint.
    pub fn len(&mut self, n: usize) {
        self.varint(n as u64);
    }

    /// A varint length, then the bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.buf.extend_from_slice(b);
    }

    /// A table of `actors` (sorted, without repeats): its length, then each
    /// actor as 8 big-endian bytes. Returns the table for [`Writer::actor`].
    pub fn actor_table(&mut self, actors: impl IntoIterator<Item = Actor>) -> ActorTable {
        // A state names few actors many times: keep the distinct ones
        // sorted as they come instead of collecting every mention.
        let mut list: Vec<Actor> = Vec::new();
        let mut last = None;
        for actor in actors {
            if last == Some(actor) {
                continue;
            }
            last = Some(actor);
            if let Err(at) = list.binary_search(&actor) {
                list.insert(at, actor);
            }
        }
        self.len(list.len());
        for a in &list {
            self.u64_be(a.0);
        }
        ActorTable(list)
    }

    /// An actor as its index in `table` (which must hold it).
    pub fn actor(&mut self, table: &ActorTable, actor: Actor) {
        let i = table
            .0
            .binary_search(&actor)
            .expect("the actor table holds every actor the state names");
        self.len(i);
    }

    /// A version vector on its own: a table of its actors, then the
    /// vector ([`Writer::actor_table`], [`Writer::clock`]).
    pub fn clock_alone(&mut self, clock: &VersionVector) {
        let table = self.actor_table(clock.entries().iter().map(|&(a, _)| a));
        self.clock(&table, clock);
    }

    /// A version vector: its length, then (actor index, counter) pairs.
    pub fn clock(&mut self, table: &ActorTable, clock: &VersionVector) {
        self.len(clock.entries().len());
        for &(actor, counter) in clock.entries() {
            self.actor(table, actor);
            self.varint(counter);
        }
    }
}

/// The actors a state names, in order; an actor is written as its index.
#[derive(Clone, Debug, Default)]
pub struct ActorTable(pub Vec<Actor>);

/// Reads encoded fields from a byte slice.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        let b = *self.buf.get(self.pos).ok_or(DecodeError("truncated"))?;
        self.pos += 1;
        Ok(b)
    }

    pub fn u64_be(&mut self) -> Result<u64, DecodeError> {
        let raw = self.take(8)?;
        Ok(u64::from_be_bytes(raw.try_into().expect("eight bytes")))
    }

    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return Err(DecodeError("varint overflows 64 bits"));
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError("varint longer than 10 bytes"))
    }

    /// A count of items of at least `min_item` bytes each: refused when
    /// the rest of the input could not hold that many.
    pub fn count(&mut self, min_item: usize) -> Result<usize, DecodeError> {
        let n = self.varint()?;
        let fits = (self.remaining() / min_item.max(1)) as u64;
        if n > fits {
            return Err(DecodeError("count larger than the input"));
        }
        Ok(n as usize)
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError("truncated"));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// A varint length, then that many bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.count(1)?;
        self.take(n)
    }

    /// An actor table as [`Writer::actor_table`] wrote it.
    pub fn actor_table(&mut self) -> Result<ActorTable, DecodeError> {
        let n = self.count(8)?;
        let list = (0..n)
            .map(|_| self.u64_be().map(Actor))
            .collect::<Result<Vec<_>, _>>()?;
        if list.windows(2).any(|w| w[0] >= w[1]) {
            return Err(DecodeError("actor table not sorted"));
        }
        Ok(ActorTable(list))
    }

    /// An actor index into `table`.
    pub fn actor(&mut self, table: &ActorTable) -> Result<Actor, DecodeError> {
        let i = self.varint()?;
        usize::try_from(i)
            .ok()
            .and_then(|i| table.0.get(i).copied())
            .ok_or(DecodeError("actor index out of the table"))
    }

    /// A version vector as [`Writer::clock`] wrote it: actors strictly
    /// increasing, counters above zero.
    pub fn clock(&mut self, table: &ActorTable) -> Result<VersionVector, DecodeError> {
        let n = self.count(2)?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let actor = self.actor(table)?;
            let counter = self.varint()?;
            if counter == 0 {
                return Err(DecodeError("clock entry of zero"));
            }
            if entries.last().is_some_and(|&(a, _)| a >= actor) {
                return Err(DecodeError("clock entries not sorted"));
            }
            entries.push((actor, counter));
        }
        Ok(VersionVector::from_entries(entries))
    }

    /// A version vector as [`Writer::clock_alone`] wrote it.
    pub fn clock_alone(&mut self) -> Result<VersionVector, DecodeError> {
        let table = self.actor_table()?;
        self.clock(&table)
    }

    /// Ends the decode: every byte must have been read.
    pub fn finish(self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            _ => Err(DecodeError("trailing bytes")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_as_written() {
        let mut w = Writer::new();
        let clock = VersionVector::from_entries([(Actor(9), 3), (Actor(2), 700)]);
        let table = w.actor_table([Actor(9), Actor(2)]);
        w.clock(&table, &clock);
        w.varint(u64::MAX);
        w.bytes(b"abc");
        let mut r = Reader::new(&w.buf);
        let table = r.actor_table().unwrap();
        assert_eq!(r.clock(&table).unwrap(), clock);
        assert_eq!(r.varint().unwrap(), u64::MAX);
        assert_eq!(r.bytes().unwrap(), b"abc");
        r.finish().unwrap();
    }

    #[test]
    fn counts_beyond_the_input_and_truncations_are_refused() {
        let mut w = Writer::new();
        w.varint(1 << 40);
        assert!(Reader::new(&w.buf).bytes().is_err());
        assert!(Reader::new(&[0x80]).varint().is_err());
        assert!(Reader::new(&[0xff; 11]).varint().is_err());
        let mut r = Reader::new(&[1, 0]);
        r.u8().unwrap();
        assert_eq!(r.finish(), Err(DecodeError("trailing bytes")));
    }
}
