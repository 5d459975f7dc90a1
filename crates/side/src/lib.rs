//! Each vnode's ordered side store (design note 027): beside the vnode's
//! object backend, one fjall keyspace per vnode incarnation in one fjall
//! database per node ([`SideEnv`]), holding for every key the vnode has
//! changed a key record, its latest change in sequence order, its
//! secondary-index entries and its place in the expiry order
//! ([`SideStore`]). Its format is [`layout`]; where a reader of the change
//! sequence resumes after a restart is [`position`].
//!
//! Invariants (model-checked in `tests/model.rs`):
//! - a key has at most one key record, and its change entry, index entries
//!   and expiry entry are exactly the ones the record names: after any
//!   sequence of changes, the change sequence holds each key once, at its
//!   latest change;
//! - sequence numbers of one incarnation only grow, across reopens too,
//!   and a change is visible to readers in sequence order (a reader never
//!   sees sequence n + 1 before n);
//! - a deleted key has no index and no expiry entries.
//!
//! The caller serialises the changes of one key (the vnode's key locks)
//! and makes the store durable when it makes its backend durable
//! ([`SideEnv::persist`]).

pub mod env;
pub mod layout;
pub mod position;
pub mod store;

pub use env::SideEnv;
pub use layout::{KeyRecord, Term};
pub use position::{Position, Resume};
pub use store::{Change, ChangeEntry, SideStore};
