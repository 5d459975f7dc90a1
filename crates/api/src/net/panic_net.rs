//! The per-request panic net: a future wrapper that turns a panic while
//! polling the handler into an `Err`, so one bad request gets an error
//! answer instead of killing its connection (or, for HTTP, dropping it
//! without a response).
//!
//! Invariant: the handler's state is abandoned after a panic (the wrapper
//! returns `Err` and never polls it again); callers discard anything the
//! handler had half-built.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// `fut`, with panics caught. `fut` is polled in place (pin it with
/// `std::pin::pin!`), so the net costs no allocation.
pub fn catch_panic<F: Future + Unpin>(fut: F) -> CatchPanic<F> {
    CatchPanic { fut }
}

/// See [`catch_panic`].
pub struct CatchPanic<F> {
    fut: F,
}

impl<F: Future + Unpin> Future for CatchPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let fut = Pin::new(&mut self.get_mut().fut);
        match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(payload) => Poll::Ready(Err(panic_text(payload.as_ref()))),
        }
    }
}

/// The message a panic carried, for the log.
fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}
