//! The membership service's messages between nodes, format v1.
//!
//! Every message and reply is `[SERVICE, VERSION]` followed by the JSON
//! text of a [`Message`] or [`Reply`]. The first byte lets a node's one
//! transport handler tell membership traffic from kv's (`b'K'`) and
//! handoff's; JSON because the state carries bucket props as free-form
//! JSON values, and the traffic is small and rare (a digest a second, a
//! full state only when digests differ).
//!
//! Invariant: a decoder refuses anything whose header is not exactly this
//! service and version; nothing here panics on any input.

use bytes::{BufMut, Bytes, BytesMut};
use eddy_ring::NodeName;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::ErrorWire;
use crate::member::Member;
use crate::state::ClusterState;

/// The first byte of every membership message.
pub const SERVICE: u8 = b'M';
/// The format version this code writes and reads.
pub const VERSION: u8 = 1;

/// A request or one-way message.
#[derive(Serialize, Deserialize)]
pub(crate) enum Message {
    /// Call: are you alive? Carries the sender's epoch; answered with
    /// [`Reply::Ack`].
    Ping { epoch: u64 },
    /// Call: ping `target` for me (an indirect probe); answered with the
    /// target's [`Reply::Ack`], or not at all.
    PingReq { target: NodeName },
    /// Call: my state's digest; answered with [`Reply::Same`] or the
    /// receiver's full state.
    Digest { digest: [u64; 2] },
    /// One-way: a full state to merge (a gossip push).
    State(Box<ClusterState>),
    /// Call: merge this state, save it, then answer [`Reply::Ack`] (bucket
    /// metadata pushes and the claimant's pre-commit sync).
    Sync(Box<ClusterState>),
    /// Call: an admin operation for the claimant; `hops` counts forwards.
    Admin { hops: u8, request: AdminRequest },
    /// Call: set the receiver's transfer limit; answered with an ack.
    TransferLimit { limit: u32 },
}

/// The admin operations the claimant carries out.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) enum AdminRequest {
    Join { node: NodeName, member: Member },
    Leave { node: NodeName },
    ForceRemove { node: NodeName },
    Replace { node: NodeName, with: NodeName },
    ForceReplace { node: NodeName, with: NodeName },
    Clear,
    Plan,
    Commit,
    Down { node: NodeName },
}

/// A call's answer.
#[derive(Serialize, Deserialize)]
pub(crate) enum Reply {
    /// Alive, at this epoch.
    Ack { epoch: u64 },
    /// Same digest: nothing to exchange.
    Same,
    /// The receiver's state (its digest differed).
    State(Box<ClusterState>),
    /// An admin operation's outcome.
    Admin(Result<AdminDone, ErrorWire>),
}

/// What the claimant answers to an admin operation.
#[derive(Serialize, Deserialize)]
pub(crate) struct AdminDone {
    /// Its state before the operation (what `plan` ran on, for a commit).
    pub before: Box<ClusterState>,
    /// Its state after.
    pub after: Box<ClusterState>,
}

/// Why bytes are not a membership message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// Shorter than the header.
    #[error("membership message truncated")]
    Truncated,
    /// The first byte is not [`SERVICE`]: another service's message.
    #[error("not a membership message (service byte {0:#04x})")]
    NotMembership(u8),
    /// A version this node does not speak.
    #[error("unknown membership message version {0}")]
    UnknownVersion(u8),
    /// The body is not a valid message.
    #[error("bad membership message: {0}")]
    Body(String),
}

/// Whether `body` is addressed to the membership service.
pub fn is_membership(body: &[u8]) -> bool {
    body.first() == Some(&SERVICE)
}

pub(crate) fn encode<T: Serialize>(value: &T) -> Bytes {
    let mut buf = BytesMut::with_capacity(256).writer();
    buf.get_mut().put_slice(&[SERVICE, VERSION]);
    // The service's types always serialize: string map keys, no
    // non-finite floats (bucket props come in as JSON already).
    if let Err(e) = serde_json::to_writer(&mut buf, value) {
        tracing::error!(error = %e, "membership message did not serialize");
    }
    buf.into_inner().freeze()
}

pub(crate) fn decode<T: DeserializeOwned>(body: &[u8]) -> Result<T, WireError> {
    let (&service, rest) = body.split_first().ok_or(WireError::Truncated)?;
    if service != SERVICE {
        return Err(WireError::NotMembership(service));
    }
    let (&version, json) = rest.split_first().ok_or(WireError::Truncated)?;
    if version != VERSION {
        return Err(WireError::UnknownVersion(version));
    }
    serde_json::from_slice(json).map_err(|e| WireError::Body(e.to_string()))
}

/// A digest as two JSON-safe halves.
pub(crate) fn split_digest(d: u128) -> [u64; 2] {
    [(d >> 64) as u64, d as u64]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ClusterState {
        ClusterState::new("c", NodeName("a@h".into()), 1, "127.0.0.1:1", 8).unwrap()
    }

    #[test]
    fn messages_round_trip() {
        let m = Message::Sync(Box::new(state()));
        let back: Message = decode(&encode(&m)).unwrap();
        assert!(matches!(back, Message::Sync(s) if *s == state()));
        let m = Message::Admin {
            hops: 2,
            request: AdminRequest::Replace {
                node: NodeName("a@h".into()),
                with: NodeName("b@h".into()),
            },
        };
        let back: Message = decode(&encode(&m)).unwrap();
        assert!(matches!(
            back,
            Message::Admin {
                hops: 2,
                request: AdminRequest::Replace { .. }
            }
        ));
    }

    #[test]
    fn other_services_and_versions_are_refused() {
        assert_eq!(decode::<Message>(b"").err(), Some(WireError::Truncated));
        assert_eq!(decode::<Message>(b"M").err(), Some(WireError::Truncated));
        assert_eq!(
            decode::<Message>(b"K\x01{}").err(),
            Some(WireError::NotMembership(b'K'))
        );
        assert_eq!(
            decode::<Message>(b"M\x02{}").err(),
            Some(WireError::UnknownVersion(2))
        );
        assert!(matches!(
            decode::<Message>(b"M\x01{\"Ping\":{}}"),
            Err(WireError::Body(_))
        ));
        assert!(is_membership(&encode(&Message::Ping { epoch: 1 })));
        assert!(!is_membership(b"K"));
    }

    #[test]
    fn digest_halves_keep_every_bit() {
        let d = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210_u128;
        let [hi, lo] = split_digest(d);
        assert_eq!((u128::from(hi) << 64) | u128::from(lo), d);
    }
}
