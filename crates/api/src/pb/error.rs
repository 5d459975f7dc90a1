//! Every PB failure, and the text Riak sends for it in `RpbErrorResp`
//! (errcode is always 0, as in Riak).
//!
//! Riak formats most errors as the Erlang term its KV layer returned, so
//! clients match on texts like `{n_val_violation,3}`, `notfound`,
//! `match_found` or `modified`; this module keeps those spellings.

use eddy_model::KvError;
use eddy_model::error::PutFailure;
use eddy_model::quorum::QuorumError;
use eddy_model::types::RegistryError;
use eddy_object::context::ContextError;

use super::read::ReadError;

/// Why a PB request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PbError {
    /// The message did not decode as the protobuf its code names.
    #[error("Message decoding error: {0}")]
    Decode(#[from] prost::DecodeError),
    /// The frame could not be read (too large, empty).
    #[error("Invalid message packet, reason: {0}")]
    Frame(ReadError),
    /// A field that must not be empty was (`Bucket`, `Key`, `Type`).
    #[error("{0} cannot be zero-length")]
    ZeroLength(&'static str),
    /// A text field is not UTF-8.
    #[error("{0} must be valid UTF-8")]
    NotUtf8(&'static str),
    /// A secondary-index entry has an unknown field type or a bad term.
    #[error(transparent)]
    InvalidIndex(#[from] eddy_model::index::term::TermError),
    /// A request's vclock is not a context this node issued.
    #[error("Invalid vclock: {0}")]
    Context(#[from] ContextError),
    /// A data type request was malformed or refused (its message says why).
    #[error("{0}")]
    Datatype(String),
    /// A key-value operation failed.
    #[error("{}", kv_text(.0))]
    Kv(#[from] KvError),
    /// A bucket or bucket-type request failed.
    #[error("{}", registry_text(.0))]
    Bucket(RegistryError),
    /// `if_not_modified` found no object at all.
    #[error("notfound")]
    NotFound,
    /// StartTLS while security is off.
    #[error("Security not enabled; STARTTLS not allowed.")]
    StartTls,
    /// Authentication while security is off.
    #[error("Security not enabled; authentication not allowed.")]
    Auth,
    /// A MapReduce job was malformed or failed (Riak's report of it).
    #[error("{0}")]
    MapRed(String),
    /// A message code this server does not serve.
    #[error("Unknown message code: {0}")]
    UnknownCode(u8),
    /// The blocking task serving the request failed.
    #[error("Internal error: the request's worker failed")]
    WorkerFailed,
    /// The request's handler panicked; the connection stays usable.
    #[error("Internal error: the request failed unexpectedly")]
    Panicked,
    /// Too many connections are open.
    #[error("Too many connections: the limit is {0}")]
    ConnectionLimit(usize),
    /// The connection failed while answering; nothing can be sent.
    #[error("connection failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Riak's texts for a bad index entry.
/// Riak's text for a key-value error.
pub fn kv_text(e: &KvError) -> String {
    match e {
        KvError::Registry(r) => match r {
            RegistryError::NoSuchType(_) | RegistryError::NotActive(_) => "no_type".into(),
            other => registry_text(other),
        },
        KvError::Quorum(QuorumError::ExceedsNVal { n_val, .. }) => {
            format!("{{n_val_violation,{n_val}}}")
        }
        KvError::Quorum(QuorumError::Unparsable(v)) => format!("{{invalid_quorum,{v:?}}}"),
        KvError::ReadQuorum { which, needed, got } => {
            format!("{{{which}_val_unsatisfied,{needed},{got}}}")
        }
        KvError::WriteQuorum(f) => write_failure_text(f),
        KvError::Timeout => "timeout".into(),
        KvError::MatchFound => "match_found".into(),
        KvError::Modified => "modified".into(),
        KvError::TooLarge {
            what: "object",
            size,
            ..
        } => format!("{{too_large,{size}}}"),
        KvError::TooManySiblings { count, .. } => format!("{{too_many_siblings,{count}}}"),
        KvError::Empty("bucket") => "Bucket cannot be zero-length".into(),
        KvError::Empty("key") => "Key cannot be zero-length".into(),
        other => other.to_string(),
    }
}

fn write_failure_text(f: &PutFailure) -> String {
    let (which, needed, got) = match *f {
        PutFailure::W { needed, got } => ("w", needed, got),
        PutFailure::Dw { needed, got } => ("dw", needed, got),
        PutFailure::Pw { needed, got } => ("pw", needed, got),
        PutFailure::NodeConfirms { needed, got } => ("node_confirms", needed, got),
    };
    format!("{{{which}_val_unsatisfied,{needed},{got}}}")
}

/// Riak's text for a failed bucket or bucket-type request.
pub fn registry_text(e: &RegistryError) -> String {
    match e {
        RegistryError::NoSuchType(t) | RegistryError::NotActive(t) | RegistryError::BadName(t) => {
            format!("Invalid bucket type: <<\"{t}\">>")
        }
        RegistryError::Props(p) => {
            let details: Vec<String> =
                p.0.iter()
                    .map(|(field, reason)| format!("{{{field},<<{reason:?}>>}}"))
                    .collect();
            format!("Invalid bucket properties: [{}]", details.join(","))
        }
        other => other.to_string(),
    }
}

impl PbError {
    /// The text sent in `RpbErrorResp.errmsg`.
    pub fn text(&self) -> String {
        self.to_string()
    }

    /// Whether the node, not the request, is at fault: a key-value error
    /// HTTP answers with a 5xx, or a failed worker or handler. Such an
    /// error is logged; a failed MapReduce job is logged by the query
    /// layer and a broken connection is no answer.
    pub fn is_internal(&self) -> bool {
        match self {
            PbError::Kv(e) => crate::http::error::ApiError::from(e)
                .status
                .is_server_error(),
            PbError::WorkerFailed | PbError::Panicked => true,
            _ => false,
        }
    }

    /// Whether the connection must be closed after this error.
    pub fn closes_connection(&self) -> bool {
        matches!(self, PbError::Frame(_) | PbError::Io(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_model::props::PropsError;

    #[test]
    fn texts_match_riak() {
        let q = KvError::Quorum(QuorumError::ExceedsNVal {
            name: "w",
            value: 4,
            n_val: 3,
        });
        assert_eq!(PbError::from(q).text(), "{n_val_violation,3}");
        let r = KvError::ReadQuorum {
            which: "r",
            needed: 2,
            got: 1,
        };
        assert_eq!(kv_text(&r), "{r_val_unsatisfied,2,1}");
        assert_eq!(kv_text(&KvError::MatchFound), "match_found");
        assert_eq!(kv_text(&KvError::Modified), "modified");
        assert_eq!(kv_text(&KvError::Timeout), "timeout");
        let t = KvError::Registry(RegistryError::NotActive("t".into()));
        assert_eq!(kv_text(&t), "no_type");
        let p = RegistryError::Props(PropsError(vec![("n_val".into(), "bad".into())]));
        assert_eq!(
            registry_text(&p),
            "Invalid bucket properties: [{n_val,<<\"bad\">>}]"
        );
        assert_eq!(PbError::UnknownCode(99).text(), "Unknown message code: 99");
    }

    #[test]
    fn failures_of_the_node_are_internal_and_refusals_are_not() {
        assert!(PbError::from(KvError::Timeout).is_internal());
        let disk = eddy_storage::StorageError::Exhausted {
            resource: eddy_storage::Resource::Disk,
            detail: "full".into(),
        };
        assert!(PbError::from(KvError::Storage(disk)).is_internal());
        assert!(PbError::WorkerFailed.is_internal());
        assert!(!PbError::from(KvError::MatchFound).is_internal());
        assert!(!PbError::ZeroLength("Key").is_internal());
        assert!(!PbError::MapRed("phase failed".into()).is_internal());
    }
}
