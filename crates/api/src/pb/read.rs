//! Why the server read no request frame: the wire's reasons (peer gone,
//! bad length, silence) and the server's own limits on a started frame
//! (the request timeout, the node-wide request-bytes budget).

use eddy_wire::FrameError;

use crate::net::BudgetError;

/// Why no request frame could be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The framing failed (closed, truncated, empty, too large, silent).
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// The node-wide request budget had no room for the frame in time.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// A started frame did not fully arrive within the request timeout.
    #[error("request not received within {0} ms")]
    RequestTimeout(u128),
}

impl ReadError {
    /// Whether the peer should be told before the connection is closed:
    /// it broke the framing rules or a server limit, rather than going
    /// away or going silent between requests.
    pub fn is_protocol_error(&self) -> bool {
        match self {
            ReadError::Frame(e) => e.is_protocol_error(),
            ReadError::Budget(_) | ReadError::RequestTimeout(_) => true,
        }
    }
}
