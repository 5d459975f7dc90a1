//! What `eddy admin transfers` shows of a node's outbound transfers: each
//! one's state and counts, updated by its sender as batches are acknowledged.

use std::time::Duration;

use eddy_ring::{NodeName, Partition};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::wire::Kind;

/// Where a transfer is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferState {
    /// Waiting for a slot under `transfer_limit`.
    Waiting,
    /// Sending the partition's objects (and the writes made meanwhile).
    Running,
    /// Everything sent is durable at the receiver. An ownership transfer
    /// stays here, its writes still recorded, until the cluster layer has
    /// changed the ring and asks for the vnode to be dropped.
    Handed,
    /// Sending the last writes, then dropping the vnode.
    Dropping,
    /// The vnode was dropped: the transfer is over.
    Dropped,
}

/// One outbound transfer, as shown to operators.
#[derive(Clone, Debug, PartialEq)]
pub struct TransferStatus {
    pub partition: Partition,
    pub kind: Kind,
    pub to: NodeName,
    pub state: TransferState,
    /// Objects sent in acknowledged batches (a batch resent after a failure
    /// counts again).
    pub objects: u64,
    /// Bytes of those objects.
    pub bytes: u64,
    /// Batches sent, acknowledged or not.
    pub batches_sent: u64,
    /// Batches the receiver acknowledged (made durable).
    pub batches_acked: u64,
    /// Times the transfer started again from the receiver's checkpoint.
    pub resumes: u64,
    /// The last failure, until the transfer is over.
    pub last_error: Option<String>,
    /// Time since the transfer began running.
    pub elapsed: Duration,
    /// Acknowledged bytes per second since it began running.
    pub bytes_per_sec: u64,
}

/// A transfer's status, shared by its sender and the status view.
#[derive(Debug)]
pub(crate) struct Tracked {
    status: Mutex<TransferStatus>,
    started: Mutex<Option<Instant>>,
}

impl Tracked {
    pub(crate) fn new(partition: Partition, kind: Kind, to: NodeName) -> Tracked {
        Tracked {
            status: Mutex::new(TransferStatus {
                partition,
                kind,
                to,
                state: TransferState::Waiting,
                objects: 0,
                bytes: 0,
                batches_sent: 0,
                batches_acked: 0,
                resumes: 0,
                last_error: None,
                elapsed: Duration::ZERO,
                bytes_per_sec: 0,
            }),
            started: Mutex::new(None),
        }
    }

    /// A copy, with the elapsed time and rate as of now.
    pub(crate) fn snapshot(&self) -> TransferStatus {
        let mut s = self.status.lock().clone();
        if let Some(started) = *self.started.lock() {
            s.elapsed = started.elapsed();
            let ms = s.elapsed.as_millis().max(1) as u64;
            s.bytes_per_sec = s.bytes.saturating_mul(1000) / ms;
        }
        s
    }

    pub(crate) fn state(&self) -> TransferState {
        self.status.lock().state.clone()
    }

    pub(crate) fn set_state(&self, state: TransferState) {
        if state == TransferState::Running {
            self.started.lock().get_or_insert_with(Instant::now);
        }
        let mut s = self.status.lock();
        if matches!(state, TransferState::Handed | TransferState::Dropped) {
            s.last_error = None;
        }
        s.state = state;
    }

    pub(crate) fn sent(&self) {
        self.status.lock().batches_sent += 1;
    }

    pub(crate) fn acked(&self, objects: usize, bytes: usize) {
        let mut s = self.status.lock();
        s.batches_acked += 1;
        s.objects += objects as u64;
        s.bytes += bytes as u64;
    }

    pub(crate) fn failed(&self, error: String) {
        let mut s = self.status.lock();
        s.resumes += 1;
        s.last_error = Some(error);
    }
}
