//! What both listeners (HTTP and PB) share about connections: binding with
//! a listen backlog, the connection table with its cap and idle-first
//! eviction, the node-wide budget of request bytes being received, the
//! rate limit on accept-failure warnings, and the per-request panic net.

mod budget;
mod listen;
mod panic_net;
mod stats;
mod table;
mod warn_limit;

pub use budget::{BudgetError, BudgetPermit, RequestBudget, THRESHOLD};
pub use listen::{BACKLOG_DEFAULT, listen};
pub use panic_net::{CatchPanic, catch_panic};
pub use stats::{budget_stats, connection_stats};
pub use table::{ConnectionTable, Slot};
pub use warn_limit::{AcceptBackoff, WarnLimiter};
