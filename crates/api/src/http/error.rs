//! Errors as HTTP answers: one status and one message per failure, worded
//! as Riak words them where Riak has a message (`riak_kv_wm_object`'s
//! `handle_common_error`), so clients that match on them keep working.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use eddy_model::KvError;
use eddy_model::error::DatatypeBucketError;
use eddy_model::error::PutFailure;
use eddy_model::quorum::QuorumError;
use eddy_model::types::RegistryError;
use eddy_storage::{Resource, StorageError};

/// A failed request: the status and the plain-text body to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// The body's media type (`text/plain` unless a resource says so).
    pub content_type: &'static str,
    /// The failure was logged where it happened (a failed MapReduce
    /// phase), so the answer is not logged again.
    pub logged: bool,
}

impl ApiError {
    /// An error with a plain-text message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            content_type: "text/plain",
            logged: false,
        }
    }

    /// This error, noted as logged where it happened.
    pub fn logged(self) -> Self {
        ApiError {
            logged: true,
            ..self
        }
    }

    /// 400 with `message`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404 "not found", Riak's body for a missing object.
    pub fn not_found() -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not found\n")
    }

    /// 404 for a bucket type that does not exist.
    pub fn unknown_type(name: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("Unknown bucket type: {name}"),
        )
    }

    /// 413 for a body over the configured limit.
    pub fn too_large(max: usize) -> Self {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body exceeds the limit of {max} bytes\n"),
        )
    }

    /// 405 naming the methods the resource takes.
    pub fn method_not_allowed(allowed: &str) -> Self {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method not allowed; this resource takes {allowed}\n"),
        )
    }

    /// The response carrying this error.
    pub fn into_response(self) -> Response {
        let mut resp = Response::new(Body::from(self.message));
        *resp.status_mut() = self.status;
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(self.content_type),
        );
        resp
    }
}

impl From<KvError> for ApiError {
    fn from(e: KvError) -> Self {
        ApiError::from(&e)
    }
}

impl From<&KvError> for ApiError {
    fn from(e: &KvError) -> Self {
        match e {
            KvError::Registry(r) => registry_error(r),
            KvError::Quorum(q) => quorum_error(q),
            &KvError::ReadQuorum { which, needed, got } => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{}-value unsatisfied: {got}/{needed}\n",
                    which.to_uppercase()
                ),
            ),
            KvError::WriteQuorum(f) => write_quorum_error(*f),
            KvError::Timeout => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "request timed out\n")
            }
            KvError::MatchFound => ApiError::new(
                StatusCode::PRECONDITION_FAILED,
                "precondition failed: the object already exists\n",
            ),
            KvError::Modified => ApiError::new(
                StatusCode::CONFLICT,
                "conflict: the object was modified since the given context\n",
            ),
            &KvError::TooLarge { what, size, max } => too_large(what, size, max),
            KvError::TooMany { what, count, max } => ApiError::bad_request(format!(
                "too many {what}: {count} exceeds the limit of {max}\n"
            )),
            KvError::TooManySiblings { count, max } => ApiError::new(
                StatusCode::CONFLICT,
                format!("too many siblings: {count} exceeds the limit of {max}; resolve them\n"),
            ),
            KvError::Empty(what) => ApiError::bad_request(format!("{what} must not be empty\n")),
            KvError::ShuttingDown => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "node is shutting down\n")
            }
            KvError::InsufficientVnodes(why) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("insufficient_vnodes_available: {why}\n"),
            ),
            KvError::Unreachable(node) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("node {node} is unreachable\n"),
            ),
            e @ KvError::AnswerTooLarge { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("{e}\n"))
            }
            KvError::DatatypeBucket(e) => datatype_bucket_error(e.clone()),
            KvError::Datatype(e) => ApiError::bad_request(e.to_string()),
            KvError::DatatypeContext(e) => ApiError::bad_request(e.to_string()),
            KvError::Storage(StorageError::Exhausted { resource, detail }) => {
                exhausted(*resource, detail)
            }
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Error:\n{other}\n"),
            ),
        }
    }
}

/// A write refused because a resource ran out: 507 for disk space, 503
/// for the rest (both pass once it is back: design note 008).
fn exhausted(resource: Resource, detail: &str) -> ApiError {
    let status = match resource {
        Resource::Disk => StatusCode::INSUFFICIENT_STORAGE,
        Resource::Descriptors | Resource::Memory => StatusCode::SERVICE_UNAVAILABLE,
    };
    ApiError::new(status, format!("{resource} exhausted: {detail}\n"))
}

/// A bucket that cannot take a data type request, with Riak's statuses
/// (`riak_kv_wm_crdt`, `riak_kv_wm_counter`); Eddy's own refusals are 400.
fn datatype_bucket_error(e: DatatypeBucketError) -> ApiError {
    let status = match e {
        DatatypeBucketError::NotAllowMult | DatatypeBucketError::NoDatatype(_) => {
            StatusCode::FORBIDDEN
        }
        DatatypeBucketError::CountersNeedAllowMult => StatusCode::CONFLICT,
        DatatypeBucketError::NonCounterOnDefault | DatatypeBucketError::PlainPut { .. } => {
            StatusCode::BAD_REQUEST
        }
    };
    ApiError::new(status, e.to_string())
}

fn registry_error(e: &RegistryError) -> ApiError {
    match e {
        RegistryError::NoSuchType(t) => ApiError::unknown_type(t),
        RegistryError::NotActive(t) => ApiError::new(
            StatusCode::NOT_FOUND,
            format!("Bucket type {t} is not active"),
        ),
        RegistryError::Props(p) => ApiError::bad_request(format!("{p}\n")),
        RegistryError::BadName(n) => {
            ApiError::bad_request(format!("invalid bucket type name {n:?}\n"))
        }
        other => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Error:\n{other}\n"),
        ),
    }
}

fn quorum_error(e: &QuorumError) -> ApiError {
    match e {
        QuorumError::ExceedsNVal { n_val, .. } => ApiError::bad_request(format!(
            "Specified w/dw/pw/node_confirms values invalid for bucket n value of {n_val}\n"
        )),
        other => ApiError::bad_request(format!("{other}\n")),
    }
}

fn write_quorum_error(f: PutFailure) -> ApiError {
    let message = match f {
        PutFailure::W { .. } => "Too Many write failures to satisfy W/DW\n".to_string(),
        PutFailure::Dw { needed, got } => format!("DW-value unsatisfied: {got}/{needed}\n"),
        PutFailure::Pw { needed, got } => format!("PW-value unsatisfied: {got}/{needed}\n"),
        PutFailure::NodeConfirms { needed, got } => {
            format!("node_confirms-value unsatisfied: {got}/{needed}\n")
        }
    };
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, message)
}

fn too_large(what: &str, size: usize, max: usize) -> ApiError {
    let status = match what {
        "object" => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(
        status,
        format!("{what} too large: {size} bytes exceeds the limit of {max}\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_errors_map_to_riak_statuses_and_messages() {
        let e: ApiError = KvError::Quorum(QuorumError::ExceedsNVal {
            name: "w",
            value: 4,
            n_val: 3,
        })
        .into();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("invalid for bucket n value of 3"));
        let e: ApiError = KvError::ReadQuorum {
            which: "pr",
            needed: 3,
            got: 1,
        }
        .into();
        assert_eq!(e.message, "PR-value unsatisfied: 1/3\n");
        let e: ApiError = KvError::Timeout.into();
        assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
        let e: ApiError = KvError::MatchFound.into();
        assert_eq!(e.status, StatusCode::PRECONDITION_FAILED);
    }

    #[test]
    fn exhaustion_answers_507_for_disk_and_503_for_descriptors() {
        let refused = |resource| -> ApiError {
            KvError::Storage(StorageError::Exhausted {
                resource,
                detail: "the commit log cannot create segment 4".into(),
            })
            .into()
        };
        let e = refused(Resource::Disk);
        assert_eq!(e.status, StatusCode::INSUFFICIENT_STORAGE);
        assert!(
            e.message
                .starts_with("disk space exhausted: the commit log")
        );
        let e = refused(Resource::Descriptors);
        assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(e.message.starts_with("file descriptors exhausted"), "{e:?}");
    }
}
