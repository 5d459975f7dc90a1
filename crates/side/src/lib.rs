//! Each vnode's ordered side store (design note 027): beside the vnode's
//! object backend, one fjall keyspace per vnode incarnation in one fjall
//! database per node ([`SideEnv`]), holding for every key with index
//! entries or an expiry a key record, its secondary-index entries and its
//! place in the expiry order ([`SideStore`]). Its format is [`layout`].
//! Each side store also holds its incarnation's change sequence
//! ([`Sequence`]: every change the vnode applies, numbered, in a change
//! log of its own, [`changelog`], under `changes/<partition>.<incarnation>/`
//! in the database's directory); where a reader of it resumes is
//! [`position`].
//!
//! Invariants (model-checked in `tests/model.rs`):
//! - a key has at most one key record, and its index entries and expiry
//!   entry are exactly the ones the record names;
//! - a key with neither index entries nor an expiry has no record and no
//!   entries;
//! - except that entries expiring at or before the store's durable swept
//!   mark ([`swept`]) may be gone, each on its own, once fjall compacts
//!   the tables holding them: the sweep processed those keys, and
//!   readers skip expired entries anyway.
//!
//! The caller serialises the changes of one key (the vnode's key locks)
//! and makes the store durable when it makes its backend durable
//! ([`SideEnv::persist`]).

pub mod changelog;
pub mod env;
pub mod layout;
pub mod position;
pub mod sequence;
pub mod store;
pub mod swept;

pub use changelog::{Change, ChangeLog};
pub use env::SideEnv;
pub use layout::{KeyRecord, Term};
pub use position::{Position, Resume};
pub use sequence::Sequence;
pub use store::{KeyState, SideStore, SweepFrom};
pub use swept::Swept;
