//! A request that did not succeed, classified by kind for the report.

use std::error::Error as _;

use eddy_client::pb::PbClientError;

/// Longest server message kept in an error label.
const MESSAGE_CHARS_MAX: usize = 100;

/// Why one request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// A stable short name: `timeout`, `connection_refused`, `connect`,
    /// `closed`, `io`, `server`, `http_503`, `protocol`, …
    pub kind: String,
    /// The server's own words, for `server` and HTTP status kinds.
    pub message: Option<String>,
    /// Whether the connection must be replaced.
    pub reconnect: bool,
    /// The client's own account (`no answer within 5s`, `cannot connect
    /// to …: Connection refused`), for errors that end the run; not part
    /// of the label, so that failures of one kind are counted together.
    pub detail: Option<String>,
}

impl Failure {
    /// A failure of `kind` with no message.
    pub fn new(kind: &str, reconnect: bool) -> Failure {
        Failure {
            kind: kind.to_string(),
            message: None,
            reconnect,
            detail: None,
        }
    }

    /// The server refused the request and said why.
    pub fn server(kind: &str, message: &str) -> Failure {
        let mut m: String = message.trim().chars().take(MESSAGE_CHARS_MAX).collect();
        if m.is_empty() {
            m = "(no message)".into();
        }
        Failure {
            kind: kind.to_string(),
            message: Some(m),
            reconnect: false,
            detail: None,
        }
    }

    /// The label errors are counted under: the kind, with the server's
    /// message when there is one.
    pub fn label(&self) -> String {
        match &self.message {
            Some(m) => format!("{}: {m}", self.kind),
            None => self.kind.clone(),
        }
    }

    /// How an error that ends the run tells of this failure: the
    /// client's account, or else the label.
    pub fn describe(&self) -> String {
        self.detail.clone().unwrap_or_else(|| self.label())
    }

    fn with_detail(self, e: &dyn std::error::Error) -> Failure {
        Failure {
            detail: Some(e.to_string()),
            ..self
        }
    }

    /// A PB client error.
    pub fn from_pb(e: &PbClientError) -> Failure {
        Failure::classify_pb(e).with_detail(e)
    }

    fn classify_pb(e: &PbClientError) -> Failure {
        match e {
            PbClientError::Server { message, .. } => Failure::server("server", message),
            PbClientError::Connect { source, .. } => Failure::new(io_kind(source, "connect"), true),
            PbClientError::Io(source) => Failure::new(io_kind(source, "io"), true),
            PbClientError::Timeout(_) => Failure::new("timeout", true),
            PbClientError::Closed | PbClientError::Truncated => Failure::new("closed", true),
            other => Failure::new(other.kind(), true),
        }
    }

    /// An HTTP client error (no status: the exchange itself failed).
    pub fn from_http(e: &reqwest::Error) -> Failure {
        Failure::classify_http(e).with_detail(e)
    }

    fn classify_http(e: &reqwest::Error) -> Failure {
        if e.is_timeout() {
            return Failure::new("timeout", true);
        }
        let mut source = e.source();
        while let Some(s) = source {
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                let fallback = if e.is_connect() { "connect" } else { "io" };
                return Failure::new(io_kind(io, fallback), true);
            }
            source = s.source();
        }
        match () {
            _ if e.is_connect() => Failure::new("connect", true),
            _ if e.is_body() || e.is_decode() => Failure::new("protocol", true),
            _ => Failure::new("closed", true),
        }
    }

    /// An HTTP answer with an unexpected status.
    pub fn http_status(status: u16, body: &[u8]) -> Failure {
        Failure::server(&format!("http_{status}"), &String::from_utf8_lossy(body))
    }
}

/// The kind of an I/O error: refused, reset and timed out are told apart.
fn io_kind(e: &std::io::Error, fallback: &'static str) -> &'static str {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => "connection_refused",
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => "closed",
        K::TimedOut => "timeout",
        _ => fallback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_carry_the_server_message() {
        let f = Failure::from_pb(&PbClientError::Server {
            message: "Unknown message code: 25".into(),
            code: 0,
        });
        assert_eq!(f.label(), "server: Unknown message code: 25");
        assert!(!f.reconnect);
        let f = Failure::http_status(503, &[b'x'; 500]);
        assert_eq!(f.kind, "http_503");
        assert_eq!(f.message.as_ref().unwrap().len(), MESSAGE_CHARS_MAX);
    }

    #[test]
    fn refused_connects_are_their_own_kind() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let f = Failure::from_pb(&PbClientError::Connect {
            addr: "x:1".into(),
            source: refused,
        });
        assert_eq!(
            (f.label().as_str(), f.reconnect),
            ("connection_refused", true)
        );
        let f = Failure::from_pb(&PbClientError::Timeout(std::time::Duration::from_secs(1)));
        assert_eq!(f.label(), "timeout");
    }

    #[test]
    fn descriptions_keep_the_clients_words_out_of_the_label() {
        let f = Failure::from_pb(&PbClientError::Timeout(std::time::Duration::from_secs(1)));
        assert_eq!(
            (f.label().as_str(), f.describe().as_str()),
            ("timeout", "no answer within 1s")
        );
        let f = Failure::from_pb(&PbClientError::Server {
            message: "w val unsatisfiable".into(),
            code: 0,
        });
        assert_eq!(f.label(), "server: w val unsatisfiable");
        assert_eq!(f.describe(), "server error: w val unsatisfiable");
        assert_eq!(Failure::new("closed", true).describe(), "closed");
    }
}
