//! The optional preload: key numbers `0..keys` put once before the
//! measured phase, untimed, by as many connections as the run has workers
//! (connection `i` writes the numbers `≡ i` modulo their count). The first
//! failure stops the run with an error naming the key.

use std::sync::Arc;
use std::time::Instant;

use tokio::task::JoinSet;

use crate::driver::Conn;
use crate::error::BenchError;
use crate::progress::Progress;
use crate::worker::{WorkerState, put_number};
use crate::workload::Plan;

/// Puts `keys` keys; returns the seconds it took.
pub async fn preload(plan: &Arc<Plan>, keys: u64) -> Result<f64, BenchError> {
    let began = Instant::now();
    let progress = Arc::new(Progress::preload(keys));
    let stride = (plan.workers as u64).min(keys).max(1);
    let mut tasks = JoinSet::new();
    for id in 0..stride {
        let (plan, progress) = (plan.clone(), progress.clone());
        tasks.spawn(async move { load_slice(&plan, id, stride, keys, &progress).await });
    }
    let mut outcome = Ok(());
    while let Some(done) = tasks.join_next().await {
        let result = done.unwrap_or_else(|e| {
            Err(BenchError::Preload {
                key: 0,
                message: e.to_string(),
            })
        });
        if let (Ok(()), Err(e)) = (&outcome, result) {
            outcome = Err(e);
            tasks.abort_all();
        }
    }
    progress.finish();
    outcome?;
    plan.keys.mark_inserted(keys);
    Ok(began.elapsed().as_secs_f64())
}

async fn load_slice(
    plan: &Plan,
    id: u64,
    stride: u64,
    keys: u64,
    progress: &Progress,
) -> Result<(), BenchError> {
    let failed = |key, f: crate::driver::Failure| BenchError::Preload {
        key,
        message: f.describe(),
    };
    let mut conn = Conn::connect(&plan.driver, plan.endpoint(id as usize, 0))
        .await
        .map_err(|f| failed(id, f))?;
    let mut state = WorkerState::new(plan, id as usize);
    for n in (id..keys).step_by(stride as usize) {
        put_number(&mut conn, plan, &mut state, n, None)
            .await
            .map_err(|f| failed(n, f))?;
        progress.inc(1);
    }
    Ok(())
}
