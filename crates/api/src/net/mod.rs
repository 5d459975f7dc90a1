//! What both listeners (HTTP and PB) share about connections: binding with
//! a listen backlog, the connection table with its cap and idle-first
//! eviction, the node-wide budget of request bytes being received, and the
//! per-request panic net. The accept loop itself (with its rate-limited
//! accept-failure warnings) is `eddy_net::accept`, which the node-to-node
//! transport runs too.

mod budget;
mod listen;
mod panic_net;
mod stats;
mod table;

pub use budget::{BudgetError, BudgetPermit, RequestBudget, THRESHOLD};
pub use listen::{BACKLOG_DEFAULT, listen};
pub use panic_net::{CatchPanic, catch_panic};
pub use stats::{budget_stats, connection_stats};
pub use table::{ConnectionTable, Slot};
