//! The `/stats` entries of the connection tables.

use serde_json::{Value, json};

use super::{ConnectionTable, RequestBudget};

/// `http_connections`, `pb_connections` (open now) and the evictions and
/// refusals of both listeners; a missing table counts as empty.
pub fn connection_stats(
    http: Option<&ConnectionTable>,
    pb: Option<&ConnectionTable>,
) -> Vec<(String, Value)> {
    let open = |t: Option<&ConnectionTable>| t.map_or(0, ConnectionTable::open);
    let sum = |f: fn(&ConnectionTable) -> u64| http.map_or(0, f) + pb.map_or(0, f);
    vec![
        ("http_connections".into(), json!(open(http))),
        ("pb_connections".into(), json!(open(pb))),
        (
            "connections_evicted_total".into(),
            json!(sum(ConnectionTable::evicted)),
        ),
        (
            "connections_refused_total".into(),
            json!(sum(ConnectionTable::refused)),
        ),
    ]
}

/// `request_budget_in_use`, `request_budget_maximum` and
/// `request_budget_refused_total` (zeros without a budget).
pub fn budget_stats(budget: Option<&RequestBudget>) -> Vec<(String, Value)> {
    vec![
        (
            "request_budget_in_use".into(),
            json!(budget.map_or(0, RequestBudget::in_use)),
        ),
        (
            "request_budget_maximum".into(),
            json!(budget.map_or(0, RequestBudget::maximum)),
        ),
        (
            "request_budget_refused_total".into(),
            json!(budget.map_or(0, RequestBudget::refused)),
        ),
    ]
}
