//! Checks before the measured phase: every endpoint answers, the bucket's
//! properties are set, and each weighted operation is tried once on the
//! first endpoint, so that an operation the server does not serve (2i or
//! MapReduce on a server without them: `RpbErrorResp`, HTTP 4xx/5xx)
//! stops the run with an error naming it instead of filling the report
//! with errors.

use crate::config::{BucketProps, MultiGetVia};
use crate::driver::{Conn, Failure};
use crate::error::BenchError;
use crate::ops::OpKind;
use crate::worker::{WorkerState, execute};
use crate::workload::Plan;

/// Connects to and pings every endpoint; returns the first one's
/// connection and what its server says it is.
pub async fn check_endpoints(plan: &Plan) -> Result<(Conn, String), BenchError> {
    let mut first = None;
    for endpoint in &plan.endpoints {
        let unreachable = |f: Failure| BenchError::Unreachable {
            endpoint: endpoint.clone(),
            message: f.describe(),
        };
        let mut conn = Conn::connect(&plan.driver, endpoint)
            .await
            .map_err(unreachable)?;
        let server = conn.ping().await.map_err(unreachable)?;
        first.get_or_insert((conn, server));
    }
    Ok(first.expect("validated: at least one endpoint"))
}

/// Sets the bucket's properties through `conn`.
pub async fn set_props(conn: &mut Conn, props: &BucketProps) -> Result<(), BenchError> {
    conn.set_bucket_props(props)
        .await
        .map_err(|f| BenchError::BucketProps(f.label()))
}

/// Runs each weighted operation once through `conn`.
pub async fn probe_ops(plan: &Plan, conn: &mut Conn) -> Result<(), BenchError> {
    let mut state = WorkerState::probe(plan);
    let endpoint = plan.endpoints[0].clone();
    for op in plan.chooser.ops().collect::<Vec<_>>() {
        let Err(f) = execute(conn, plan, &mut state, op).await else {
            continue;
        };
        let mut message = f.label();
        match (op, plan.multi_get_via) {
            (OpKind::MultiGet, MultiGetVia::Mapreduce) => {
                message += " (multi_get is sent as a MapReduce job: Riak has no multi-get request)"
            }
            (OpKind::MultiGet | OpKind::MultiPut, _) => {
                message += " (multi_get and multi_put are Eddy's own requests; against Riak, \
                            set [multi_get] via = \"mapreduce\")"
            }
            _ => {}
        }
        let (op, endpoint) = (op.name(), endpoint);
        return Err(match f.reconnect {
            false => BenchError::Unsupported {
                op,
                endpoint,
                message,
            },
            true => BenchError::ProbeFailed {
                op,
                endpoint,
                message,
            },
        });
    }
    Ok(())
}
