//! The items of a multi-key request (design note 016), shared by its PB
//! and HTTP forms: items that failed to translate (a bad context, a bad
//! index entry, bad base64) keep their error and never reach the node;
//! the rest run there; [`Failed::join`] puts both back in request order.
//!
//! Invariant: the joined list has one result per item given to [`split`],
//! each at its item's position.

use eddy_model::KvError;

/// Where the items that failed to translate were, and why.
pub(crate) struct Failed<E> {
    /// One entry per item: its error, or `None` when it went to the node.
    slots: Vec<Option<E>>,
}

/// Splits translated items into those to run and the failures.
pub(crate) fn split<T, E>(items: impl IntoIterator<Item = Result<T, E>>) -> (Vec<T>, Failed<E>) {
    let mut run = Vec::new();
    let mut slots = Vec::new();
    for item in items {
        match item {
            Ok(t) => {
                run.push(t);
                slots.push(None);
            }
            Err(e) => slots.push(Some(e)),
        }
    }
    (run, Failed { slots })
}

impl<E> Failed<E> {
    /// The node's results for the items that ran (one each, in order),
    /// with the failures back at their positions; `error` converts the
    /// node's errors.
    pub(crate) fn join<R>(
        self,
        ran: Vec<Result<R, KvError>>,
        error: impl Fn(KvError) -> E,
    ) -> Vec<Result<R, E>> {
        let mut ran = ran.into_iter();
        self.slots
            .into_iter()
            .map(|slot| match slot {
                Some(e) => Err(e),
                // The node answers every item; a missing answer would be
                // its bug, answered as a timeout rather than a panic.
                None => ran.next().unwrap_or(Err(KvError::Timeout)).map_err(&error),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_keep_their_places() {
        let items = vec![Ok(1), Err("bad"), Ok(2), Err("worse")];
        let (run, failed) = split(items);
        assert_eq!(run, vec![1, 2]);
        let ran = vec![Ok(10), Err(KvError::Timeout)];
        let joined = failed.join(ran, |_| "timeout");
        assert_eq!(
            joined,
            vec![Ok(10), Err("bad"), Err("timeout"), Err("worse")]
        );
    }
}
