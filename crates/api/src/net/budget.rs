//! The node-wide budget of request bytes being received. A frame or body
//! declaring more than [`THRESHOLD`] bytes reserves its declared size
//! before it is read and holds it until its request is answered; past the
//! budget a request waits up to the configured time, then is refused. So
//! many clients each sending most of a large request cannot together take
//! more memory than the budget.
//!
//! Invariant: reserved bytes never exceed the maximum; a reservation is
//! returned when its permit is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Requests declaring at most this many bytes are not counted.
pub const THRESHOLD: usize = 8 * 1024;

/// The shared budget.
#[derive(Debug)]
pub struct RequestBudget {
    bytes: Arc<Semaphore>,
    maximum: usize,
    wait: Duration,
    refused: AtomicU64,
}

/// Bytes reserved for one request.
#[derive(Debug)]
pub struct BudgetPermit(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// Why a request could not reserve its bytes.
#[derive(Debug, thiserror::Error)]
#[error(
    "Request budget exhausted: {bytes} bytes could not be reserved within {wait_ms} ms (node-wide budget {maximum} bytes)"
)]
pub struct BudgetError {
    pub bytes: usize,
    pub maximum: usize,
    pub wait_ms: u128,
}

impl RequestBudget {
    /// A budget of `maximum` bytes; a request waits up to `wait` for room.
    pub fn new(maximum: usize, wait: Duration) -> Arc<Self> {
        let maximum = maximum.clamp(THRESHOLD, Semaphore::MAX_PERMITS);
        Arc::new(RequestBudget {
            bytes: Arc::new(Semaphore::new(maximum)),
            maximum,
            wait,
            refused: AtomicU64::new(0),
        })
    }

    /// Reserves `bytes` for a request (nothing at or under the threshold).
    pub async fn reserve(&self, bytes: usize) -> Result<BudgetPermit, BudgetError> {
        if bytes <= THRESHOLD {
            return Ok(BudgetPermit(None));
        }
        let refused = || {
            self.refused.fetch_add(1, Ordering::Relaxed);
            BudgetError {
                bytes,
                maximum: self.maximum,
                wait_ms: self.wait.as_millis(),
            }
        };
        let Ok(n) = u32::try_from(bytes) else {
            return Err(refused());
        };
        if bytes > self.maximum {
            return Err(refused());
        }
        let acquire = self.bytes.clone().acquire_many_owned(n);
        match tokio::time::timeout(self.wait, acquire).await {
            Ok(Ok(permit)) => Ok(BudgetPermit(Some(permit))),
            _ => Err(refused()),
        }
    }

    /// The budget in bytes.
    pub fn maximum(&self) -> usize {
        self.maximum
    }

    /// Bytes reserved now.
    pub fn in_use(&self) -> usize {
        self.maximum - self.bytes.available_permits()
    }

    /// Requests refused for want of budget.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}
