//! Bucket metadata changes as both front ends run them (design note 026):
//! a change is stamped and saved before it returns, which blocks on the
//! disk, so it runs on a blocking thread rather than a runtime worker.

use std::sync::Arc;

use eddy_kv::Node;

/// Runs `change` on a blocking thread; `Err` when that thread failed
/// (panicked or was cancelled) before answering.
pub(crate) async fn on_blocking_thread<T, E>(
    node: &Arc<Node>,
    change: impl FnOnce(&Node) -> Result<T, E> + Send + 'static,
) -> Result<Result<T, E>, tokio::task::JoinError>
where
    T: Send + 'static,
    E: Send + 'static,
{
    let node = node.clone();
    tokio::task::spawn_blocking(move || change(&node)).await
}
