//! The real binary out of descriptors or disk space: writes are refused
//! with 503 / 507 naming the cause, reads and `/health` keep answering, and
//! writes resume by themselves once the resource is back, with nothing
//! acknowledged lost (issue 11, finding 1; design note 008).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
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

/// A small tmpfs mounted for one test; unmounted when dropped, also when
/// the test fails (declare it before the node, so the node stops first).
struct SmallDisk {
    _parent: tempfile::TempDir,
    path: PathBuf,
}

impl SmallDisk {
    /// Mounts a tmpfs of `size` (a `mount -o size=` value); `None`, with
    /// the reason printed, when this process cannot.
    #[allow(unsafe_code, reason = "asks whether the test runs as root")]
    fn mount(size: &str) -> Option<SmallDisk> {
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipping: mounting a small tmpfs needs root");
            return None;
        }
        let parent = tempfile::tempdir().unwrap();
        let path = parent.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status();
        if !mounted.as_ref().is_ok_and(|s| s.success()) {
            eprintln!("skipping: mount -t tmpfs failed ({mounted:?})");
            return None;
        }
        Some(SmallDisk {
            _parent: parent,
            path,
        })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(&self.path).status();
        if !unmounted.is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
    }
}

/// Writes 1 MiB blocks to `path` until the disk is full.
fn fill_disk(path: &Path) -> std::fs::File {
    let mut ballast = std::fs::File::create(path).unwrap();
    let block = vec![0xa5u8; 1 << 20];
    loop {
        match ballast.write_all(&block) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => return ballast,
            Err(e) => panic!("filling the disk: {e}"),
        }
    }
}

fn small_value(i: usize) -> Vec<u8> {
    format!("value {i} ").repeat(2000).into_bytes()
}

fn put_small(node: &TestNode, i: usize) -> (u16, String) {
    let headers = [("Content-Type", "application/octet-stream")];
    let r = node.http(
        "PUT",
        &format!("/buckets/d/keys/k{i}"),
        &headers,
        &small_value(i),
    );
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

fn assert_read_back(node: &TestNode, acked: &[usize]) {
    for i in acked {
        let r = node.http("GET", &format!("/buckets/d/keys/k{i}"), &[], b"");
        assert_eq!(r.status, 200, "k{i}");
        assert!(
            r.body == small_value(*i),
            "k{i} holds its acknowledged value"
        );
    }
}

/// Retries `put` of key `i` until it is acknowledged; panics after 20 s.
fn put_until_accepted(node: &TestNode, i: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, message) = put_small(node, i);
        if status == 204 || status == 200 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "writes did not resume: {status} {message}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn on_a_full_disk_writes_get_507_and_resume_once_space_is_back() {
    let Some(disk) = SmallDisk::mount("96m") else {
        return;
    };
    let data = disk.path.join("data");
    let mut node = TestNode::start(&[
        ("EDDY_PLATFORM_DATA_DIR", data.to_str().unwrap()),
        ("EDDY_COMMIT_LOG_SEGMENT_SIZE", "1MB"),
        ("EDDY_BITCASK_MAX_FILE_SIZE", "1MB"),
    ]);
    let mut acked: Vec<usize> = (0..20).collect();
    for i in &acked {
        assert_eq!(put_small(&node, *i).0, 204, "k{i} before the disk fills");
    }

    let ballast_path = disk.path.join("ballast");
    let ballast = fill_disk(&ballast_path);
    let mut next = acked.len();
    let refused = loop {
        let (status, message) = put_small(&node, next);
        if status != 204 && status != 200 {
            break (status, message);
        }
        acked.push(next);
        next += 1;
        assert!(next < 2000, "no write refused on a full disk");
    };
    let (status, message) = refused;
    assert_eq!(status, 507, "{message}");
    assert!(message.contains("disk space"), "{message}");
    let health = node.http("GET", "/health", &[], b"");
    let reason = String::from_utf8_lossy(&health.body).into_owned();
    assert_eq!(health.status, 503, "{reason}");
    assert!(reason.contains("disk space"), "{reason}");
    assert_read_back(&node, &acked);

    // Space comes back: writes resume by themselves.
    drop(ballast);
    std::fs::remove_file(&ballast_path).unwrap();
    next += 1;
    put_until_accepted(&node, next);
    acked.push(next);
    for _ in 0..20 {
        next += 1;
        let (status, message) = put_small(&node, next);
        assert!(status == 204 || status == 200, "{status} {message}");
        acked.push(next);
    }
    assert_eq!(node.http("GET", "/health", &[], b"").status, 200);
    assert_read_back(&node, &acked);

    node.stop();
    node.restart();
    assert_read_back(&node, &acked);
    node.stop();
}
