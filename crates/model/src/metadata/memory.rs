//! [`MemoryStore`]: the registers kept in memory, for a registry with no
//! cluster behind it (tests). A write is stamped as the cluster stamps it
//! (with a logical clock of milliseconds here), written
//! to the registers, and the registers applied back to the registry
//! before it returns, as the cluster's store does.
//!
//! Invariant: the registry sees every write before [`MetadataStore::
//! write`] returns, with the write's stamp.

use std::sync::{Arc, Weak};

use eddy_ring::NodeName;
use parking_lot::Mutex;

use super::register::BucketMetadata;
use super::{ChangeId, MetadataChange, MetadataStore};
use crate::types::{BucketRegistry, RegistryError};

/// Registers in memory, written by one node.
pub struct MemoryStore {
    node: NodeName,
    registry: Weak<BucketRegistry>,
    state: Mutex<State>,
}

struct State {
    registers: BucketMetadata,
    last: ChangeId,
    clock_ms: u64,
}

impl MemoryStore {
    /// A store for `registry`, writing as `node`, set as its store.
    pub fn attach(registry: &Arc<BucketRegistry>, node: NodeName) -> Arc<MemoryStore> {
        Self::attach_at(registry, node, 0)
    }

    /// [`MemoryStore::attach`], with the clock at `clock_ms` (each write
    /// moves it on by one).
    pub fn attach_at(
        registry: &Arc<BucketRegistry>,
        node: NodeName,
        clock_ms: u64,
    ) -> Arc<MemoryStore> {
        let state = State {
            registers: BucketMetadata::default(),
            last: ChangeId::NONE,
            clock_ms,
        };
        let store = Arc::new(MemoryStore {
            node,
            registry: Arc::downgrade(registry),
            state: Mutex::new(state),
        });
        registry.set_store(store.clone());
        store
    }

    /// The registers as written so far.
    pub fn registers(&self) -> BucketMetadata {
        self.state.lock().registers.clone()
    }
}

impl MetadataStore for MemoryStore {
    fn write(&self, change: MetadataChange) -> Result<ChangeId, RegistryError> {
        let mut state = self.state.lock();
        state.clock_ms += 1;
        state.last = ChangeId(state.last.0 + 1);
        let State {
            registers,
            last,
            clock_ms,
        } = &mut *state;
        let stamp = registers.next_stamp(&self.node, *clock_ms);
        registers.write(change, stamp);
        if let Some(registry) = self.registry.upgrade() {
            registry.apply_registers(registers)?;
        }
        Ok(*last)
    }
}
