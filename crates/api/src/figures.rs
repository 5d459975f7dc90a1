//! The front ends' figures (design note 025): requests taken per API and
//! operation, and failed ones per API and side (the client's request, or
//! the server). Registered once per listener in the node's registry (the
//! same name and labels give the same counter), counted by index on each
//! request.

use eddy_metrics::{Counter, Registry};

const REQUESTS: &str = "eddy_api_requests_total";
const REQUESTS_HELP: &str = "Requests taken, by API (http, pb) and operation.";
const ERRORS: &str = "eddy_api_errors_total";
const ERRORS_HELP: &str = "Requests answered with an error, by API and side: client (a refused request, HTTP 4xx) or server (a failure, HTTP 5xx).";

/// Which side of a failed request is at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The request was refused (HTTP 4xx; a PB request the same failure
    /// would answer 4xx).
    Client,
    /// The node failed to serve it (HTTP 5xx).
    Server,
}

/// One API's counters: requests by operation index, errors by side.
pub struct ApiFigures {
    requests: Vec<Counter>,
    client_errors: Counter,
    server_errors: Counter,
}

impl ApiFigures {
    /// Registers `api`'s counters, one per name in `ops`, in `r`.
    pub fn register(r: &Registry, api: &'static str, ops: &[&'static str]) -> ApiFigures {
        let requests = ops
            .iter()
            .map(|op| r.counter_with(REQUESTS, REQUESTS_HELP, &[("api", api), ("op", op)]))
            .collect();
        let errors = |side| r.counter_with(ERRORS, ERRORS_HELP, &[("api", api), ("side", side)]);
        ApiFigures {
            requests,
            client_errors: errors("client"),
            server_errors: errors("server"),
        }
    }

    /// Counts a request of the operation at `op` in the names registered.
    pub fn request(&self, op: usize) {
        if let Some(c) = self.requests.get(op) {
            c.increment();
        }
    }

    /// Counts a failed request.
    pub fn error(&self, side: Side) {
        match side {
            Side::Client => self.client_errors.increment(),
            Side::Server => self.server_errors.increment(),
        }
    }
}
