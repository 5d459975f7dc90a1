//! How far the bucket metadata changes made on this node have been
//! pushed to the cluster, so a request that changed a type or a bucket's
//! props answers once every reachable member has the change, or names
//! those that do not (design notes 010 §2 and 026).
//!
//! The registry numbers the changes it hands to the cluster layer
//! ([`ChangeId`], rising in the order they are pushed); the cluster layer
//! reports each push here with its outcome ([`MetadataPushes::pushed`]).
//!
//! Invariant: a push carries the whole of the pushing node's metadata,
//! so once change `n` is reported, every change before it has reached
//! at least the members change `n`'s push reached. A waiter for an
//! earlier change is given the outcome of the latest push reported,
//! which may name a member that an earlier push did reach: it never
//! claims a member has a change it may lack.

use eddy_model::metadata::ChangeId;
use eddy_ring::NodeName;
use tokio::sync::watch;

/// Where a change has reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Every member has it (or nothing shares this node's changes).
    Complete,
    /// These members did not acknowledge it before the push's deadline;
    /// gossip brings it to them.
    Missing(Vec<NodeName>),
    /// The change could not be stamped and saved for the cluster.
    Failed(String),
}

/// The last change pushed and its outcome.
pub struct MetadataPushes {
    last: watch::Sender<(ChangeId, Sharing)>,
}

impl Default for MetadataPushes {
    fn default() -> Self {
        MetadataPushes {
            last: watch::Sender::new((ChangeId::NONE, Sharing::Complete)),
        }
    }
}

impl MetadataPushes {
    /// Change `id` (and every change before it) was pushed, with
    /// `outcome`. Reports come in id order.
    pub fn pushed(&self, id: ChangeId, outcome: Sharing) {
        self.last.send_if_modified(|last| {
            let newer = id > last.0;
            if newer {
                *last = (id, outcome);
            }
            newer
        });
    }

    /// Whether change `id` was pushed (whatever it reached).
    pub fn has_pushed(&self, id: ChangeId) -> bool {
        id == ChangeId::NONE || self.last.borrow().0 >= id
    }

    /// Waits until change `id` was pushed; answers where it reached.
    /// [`ChangeId::NONE`] (a change nothing shares) answers at once.
    pub async fn shared(&self, id: ChangeId) -> Sharing {
        if id == ChangeId::NONE {
            return Sharing::Complete;
        }
        let mut last = self.last.subscribe();
        match last.wait_for(|(through, _)| *through >= id).await {
            Ok(pushed) => pushed.1.clone(),
            // Unreachable while `self` holds the sender.
            Err(_) => Sharing::Failed("the node is shutting down".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_waiter_gets_the_outcome_of_the_push_that_covers_its_change() {
        let pushes = std::sync::Arc::new(MetadataPushes::default());
        assert_eq!(pushes.shared(ChangeId::NONE).await, Sharing::Complete);
        let waiter = tokio::spawn({
            let pushes = pushes.clone();
            async move { pushes.shared(ChangeId(2)).await }
        });
        pushes.pushed(ChangeId(1), Sharing::Complete);
        let missing = Sharing::Missing(vec![NodeName("n3@host".into())]);
        pushes.pushed(ChangeId(3), missing.clone());
        assert_eq!(waiter.await.unwrap(), missing);
        pushes.pushed(ChangeId(2), Sharing::Complete);
        assert_eq!(
            pushes.shared(ChangeId(1)).await,
            missing,
            "older reports are ignored"
        );
    }
}
