//! The real binary out of descriptors or disk space: writes are refused
//! with 503 / 507 naming the cause, reads and `/health` keep answering, and
//! writes resume by themselves once the resource is back, with nothing
//! acknowledged lost (issue 11, finding 1; design note 008).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use support::TestNode;

/// One kept-alive HTTP connection: opened before descriptors run out, so
/// it can still talk to the node after.
struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Conn {
            reader: BufReader::new(s),
        }
    }

    /// Sends a request and reads its reply: the status and the body.
    fn request(&mut self, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let s = self.reader.get_mut();
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status: u16 = line.split(' ').nth(1).unwrap().parse().unwrap();
        let mut len = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).unwrap();
        (status, body)
    }
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

fn value(i: usize) -> Vec<u8> {
    vec![(i % 251) as u8; 64 << 10]
}

#[test]
fn out_of_descriptors_writes_get_503_and_resume_once_connections_close() {
    let mut node = TestNode::start(&[("EDDY_COMMIT_LOG_SEGMENT_SIZE", "1MB")]);
    let pid = node.pid().unwrap();
    let mut conn = Conn::open(node.http_port);
    assert_eq!(conn.request("GET", "/health", b"").0, 200);

    // Room for a few more descriptors, then idle connections take them.
    let limit = open_descriptors(pid) + 16;
    let lowered = Command::new("prlimit")
        .args([format!("--pid={pid}"), format!("--nofile={limit}:{limit}")])
        .status();
    if !lowered.is_ok_and(|s| s.success()) {
        eprintln!("skipping: prlimit could not lower the node's descriptor limit");
        return;
    }
    let idle: Vec<TcpStream> = (0..64)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", node.http_port)).ok())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    while open_descriptors(pid) < limit {
        assert!(
            Instant::now() < deadline,
            "the node did not take the idle connections"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Writes go on until the commit log needs a segment it cannot create.
    let mut acked = Vec::new();
    let refused = (0..200).find_map(|i| {
        let (status, body) = conn.request("PUT", &format!("/buckets/b/keys/k{i}"), &value(i));
        match status {
            200 | 204 => {
                acked.push(i);
                None
            }
            _ => Some((status, String::from_utf8_lossy(&body).into_owned())),
        }
    });
    let (status, message) = refused.expect("a write is refused when descriptors run out");
    assert_eq!(status, 503, "{message}");
    assert!(message.contains("file descriptors"), "{message}");
    let (status, health) = conn.request("GET", "/health", b"");
    let health = String::from_utf8_lossy(&health).into_owned();
    assert_eq!(status, 503, "{health}");
    assert!(health.contains("file descriptors"), "{health}");
    let (status, _) = conn.request("GET", "/buckets/b/keys/k0", b"");
    assert_eq!(status, 200, "reads go on");

    // Descriptors come back: writes resume by themselves.
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut next = acked.last().map_or(0, |i| i + 1) + 1;
    loop {
        let (status, body) = conn.request("PUT", &format!("/buckets/b/keys/k{next}"), &value(next));
        if status == 204 || status == 200 {
            acked.push(next);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "writes did not resume: {status} {}",
            String::from_utf8_lossy(&body)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    for _ in 0..40 {
        next += 1;
        let (status, _) = conn.request("PUT", &format!("/buckets/b/keys/k{next}"), &value(next));
        assert!(status == 204 || status == 200, "{status}");
        acked.push(next);
    }
    assert_eq!(conn.request("GET", "/health", b"").0, 200);
    for i in &acked {
        let (status, body) = conn.request("GET", &format!("/buckets/b/keys/k{i}"), b"");
        assert_eq!(status, 200, "k{i}");
        assert!(body == value(*i), "k{i} holds its acknowledged value");
    }
    drop(conn);
    node.stop();
}
