//! The loopback baseline of a PB run: the same closed loop against a server
//! that does nothing but answer, measured in the same run, so that a node's
//! figures can be read as a share of what this machine's loopback TCP and
//! scheduler allow at that moment (the machines are shared and their speed
//! varies by a factor of two from one day to the next).
//!
//! The echo server runs on a runtime of its own, with as many threads as
//! the generator, as a node would. Frames are Riak's (a 4-byte length, a
//! message code, a body), and each request moves the workload's bytes the
//! way its operation would: a put sends the value and gets a one-byte
//! reply; a get sends a small request and gets the value back. The request
//! carries the size of the reply it wants, so the server stays stateless.

use std::io;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::ops::{self, Op};
use super::report::Latency;
use super::worker;
use crate::bench::report::new_histogram;
use crate::cli::PbArgs;

/// Bytes a get request or a put's key, bucket and metadata take besides
/// the value (about what Riak's messages carry for the bench's keys).
const OVERHEAD: usize = 40;
/// The largest frame the echo server accepts.
const MAX_FRAME: usize = 64 << 20;
/// Riak's message codes the frames carry (put request and response).
const CODE_REQUEST: u8 = 11;
const CODE_REPLY: u8 = 12;

/// What the baseline measured.
#[derive(Clone, Debug, Serialize)]
pub struct Baseline {
    pub duration_s: f64,
    pub ops: u64,
    pub ops_per_s: f64,
    #[serde(flatten)]
    pub latency: Latency,
}

/// Runs the loopback echo for `secs` seconds with `args`' connections and
/// workload shape; the echo server gets a runtime of `threads` threads.
pub async fn measure(args: &PbArgs, threads: usize, secs: f64) -> io::Result<Baseline> {
    let server = Server(Some(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("eddy-bench-echo")
            .enable_io()
            .build()?,
    ));
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    server.spawn(serve(listener));
    let mut conns = Vec::with_capacity(args.connections);
    for _ in 0..args.connections {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        conns.push(stream);
    }
    let began = Instant::now();
    let deadline = began + Duration::from_secs_f64(secs);
    let mut loops = JoinSet::new();
    for (id, stream) in conns.into_iter().enumerate() {
        loops.spawn(echo_loop(id, args.clone(), stream, deadline));
    }
    let mut all = new_histogram();
    while let Some(done) = loops.join_next().await {
        all.add(&done.map_err(io::Error::other)??)
            .expect("same bounds");
    }
    let elapsed = began.elapsed().as_secs_f64();
    drop(server);
    Ok(Baseline {
        duration_s: elapsed,
        ops: all.len(),
        ops_per_s: all.len() as f64 / elapsed.max(f64::MIN_POSITIVE),
        latency: Latency::of(&all),
    })
}

/// The echo server's runtime. It is shut down without waiting when
/// dropped: a runtime may not be dropped the usual way inside another.
struct Server(Option<tokio::runtime::Runtime>);

impl Server {
    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        if let Some(rt) = &self.0 {
            rt.spawn(task);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// The sizes of one request and its reply, for an operation of `args`.
fn shape(op: Op, value_size: usize) -> (usize, usize) {
    match op {
        Op::Put => (value_size + OVERHEAD, 1),
        Op::Get => (OVERHEAD, value_size + OVERHEAD),
    }
}

/// One connection's closed loop, with the workload's mix of operations.
async fn echo_loop(
    id: usize,
    args: PbArgs,
    mut stream: TcpStream,
    deadline: Instant,
) -> io::Result<Histogram<u64>> {
    let mut rng = worker::rng_of(&args, id);
    let mut hist = new_histogram();
    let mut request = Vec::new();
    let mut reply = Vec::new();
    while Instant::now() < deadline {
        let op = ops::choose(args.workload, args.read_percent, &mut rng);
        let (ask, answer) = shape(op, args.value_size);
        frame(&mut request, ask, answer);
        let started = Instant::now();
        stream.write_all(&request).await?;
        read_frame(&mut stream, &mut reply).await?;
        if reply.len() != answer || reply[0] != CODE_REPLY {
            return Err(io::Error::other("the echo server answered wrongly"));
        }
        hist.saturating_record(worker::nanos_since(started));
    }
    Ok(hist)
}

/// Fills `out` with a request frame of `body` bytes (at least 5) whose
/// reply is to be `answer` bytes.
fn frame(out: &mut Vec<u8>, body: usize, answer: usize) {
    let body = body.max(5);
    out.clear();
    out.extend_from_slice(&(body as u32).to_be_bytes());
    out.push(CODE_REQUEST);
    out.extend_from_slice(&(answer as u32).to_be_bytes());
    out.resize(4 + body, 0xa5);
}

/// Reads one frame's body (code and message) into `body`.
async fn read_frame(stream: &mut TcpStream, body: &mut Vec<u8>) -> io::Result<()> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(io::Error::other(format!("frame of {len} bytes")));
    }
    body.resize(len, 0);
    stream.read_exact(body).await?;
    Ok(())
}

/// Accepts connections and answers each request frame with a reply of
/// the size it asks for, until the runtime is shut down.
async fn serve(listener: std::net::TcpListener) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(answer(stream));
    }
}

async fn answer(mut stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut request = Vec::new();
    let mut reply = Vec::new();
    loop {
        read_frame(&mut stream, &mut request).await?;
        let wanted = request
            .get(1..5)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .filter(|n| (1..=MAX_FRAME).contains(n))
            .ok_or_else(|| io::Error::other("a request without a reply size"))?;
        reply.clear();
        reply.extend_from_slice(&(wanted as u32).to_be_bytes());
        reply.push(CODE_REPLY);
        reply.resize(4 + wanted, 0x5a);
        stream.write_all(&reply).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> PbArgs {
        let mut argv = vec!["eddy", "bench", "pb", "--connections", "4"];
        argv.extend_from_slice(extra);
        let cli = crate::cli::Cli::parse_from(argv);
        let crate::cli::Command::Bench(b) = cli.command else {
            panic!("not a bench command");
        };
        let crate::cli::BenchTarget::Pb(a) = b.target else {
            panic!("not a pb bench command");
        };
        a
    }

    /// The echo completes round trips of each workload's shape, and every
    /// one of them is counted and timed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn echo_answers_every_shape() {
        for workload in ["put", "get", "mixed"] {
            let a = args(&["--workload", workload, "--value-size", "5000"]);
            let b = measure(&a, 1, 0.2).await.unwrap();
            assert!(b.ops > 0, "{workload}: no round trips");
            assert!(b.latency.p50_us > 0.0 && b.latency.p99_us >= b.latency.p50_us);
            assert!((b.ops as f64 / b.duration_s - b.ops_per_s).abs() < 1e-6);
        }
    }

    #[test]
    fn shapes_move_the_value_the_way_the_operation_does() {
        assert_eq!(shape(Op::Put, 1024), (1024 + OVERHEAD, 1));
        assert_eq!(shape(Op::Get, 1024), (OVERHEAD, 1024 + OVERHEAD));
        let mut f = Vec::new();
        frame(&mut f, 100, 7);
        assert_eq!(f.len(), 104);
        assert_eq!(&f[..4], &100u32.to_be_bytes());
        assert_eq!(f[4], CODE_REQUEST);
        assert_eq!(&f[5..9], &7u32.to_be_bytes());
    }
}
