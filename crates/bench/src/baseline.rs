//! The loopback baseline of a run: the same closed loop against a server
//! that does nothing but answer, measured in the same run, so that a
//! server's figures can be read as a share of what this machine's loopback
//! TCP and scheduler allow at that moment (the machines are shared, and
//! their speed varies by a factor of three from one day to the next).
//!
//! The echo server runs on a runtime of its own, with as many threads as
//! the caller says (a node's count), as a server would. Frames are Riak's
//! PB frames (a 4-byte length, a message code, a body), whatever the
//! driver of the run: the baseline stands for the machine, not for a
//! protocol. Each operation of the mix is one or more round trips
//! ([`Trip`]) that move the bytes the real operation would; a request
//! carries the size of the reply it wants, so the server stays stateless.
//!
//! Invariants: every connection runs until the deadline and no longer;
//! a wrong or short reply fails the baseline instead of being counted;
//! the echo server's runtime is shut down when the measurement ends.

use std::io;
use std::time::Duration;

use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

pub use crate::latency::Latency;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Bytes a request or reply carries besides the value (key, bucket and
/// metadata: about what Riak's messages carry for a benchmark's keys).
pub const OVERHEAD: usize = 40;
/// The largest frame the echo server accepts.
const MAX_FRAME: usize = 64 << 20;
/// The message codes the frames carry (Riak's put request and response).
const CODE_REQUEST: u8 = 11;
const CODE_REPLY: u8 = 12;
/// Latencies above this (ns) are recorded as this.
const LATENCY_NS_MAX: u64 = 3_600_000_000_000;

/// One round trip: bytes sent, bytes answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trip {
    pub request: usize,
    pub reply: usize,
}

impl Trip {
    /// A write of a `value`-byte value: the value goes out, a short reply
    /// comes back.
    pub fn write(value: usize) -> Trip {
        Trip {
            request: value + OVERHEAD,
            reply: 1,
        }
    }

    /// A read of a `value`-byte value: a short request, the value back.
    pub fn read(value: usize) -> Trip {
        Trip {
            request: OVERHEAD,
            reply: value + OVERHEAD,
        }
    }
}

/// What the baseline runs: `connections` closed loops for `secs` seconds,
/// each choosing among `mix`'s operations by weight (every weight above
/// zero, every operation at least one trip).
#[derive(Clone, Debug)]
pub struct EchoPlan {
    pub connections: usize,
    /// Threads of the echo server's runtime.
    pub server_threads: usize,
    pub secs: f64,
    pub seed: u64,
    pub mix: Vec<(Vec<Trip>, u32)>,
}

/// What the baseline measured; latencies are of whole operations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub duration_s: f64,
    pub ops: u64,
    pub ops_per_s: f64,
    #[serde(flatten)]
    pub latency: Latency,
}

impl Baseline {
    fn of(h: &Histogram<u64>, duration_s: f64) -> Baseline {
        Baseline {
            duration_s,
            ops: h.len(),
            ops_per_s: h.len() as f64 / duration_s.max(f64::MIN_POSITIVE),
            latency: Latency::of(h),
        }
    }

    /// `ops_per_s` as a percentage of the echo's (0 when the echo did none).
    pub fn share_of(&self, ops_per_s: f64) -> f64 {
        100.0 * ratio(ops_per_s, self.ops_per_s)
    }

    /// `p99_us` as a multiple of the echo's p99 (0 when the echo did none).
    pub fn p99_ratio(&self, p99_us: f64) -> f64 {
        ratio(p99_us, self.latency.p99_us)
    }

    /// One line for a text report.
    pub fn one_line(&self, ops_per_s: f64) -> String {
        format!(
            "loopback echo: {:.0} ops/s, p50 {:.0} µs, p99 {:.0} µs over {:.1} s · this run: {:.1} % of its ops/s",
            self.ops_per_s,
            self.latency.p50_us,
            self.latency.p99_us,
            self.duration_s,
            self.share_of(ops_per_s)
        )
    }
}

fn ratio(x: f64, of: f64) -> f64 {
    if of > 0.0 { x / of } else { 0.0 }
}

/// Runs the loopback echo `plan` describes, in the caller's runtime (the
/// server gets a runtime of its own).
pub async fn measure(plan: &EchoPlan) -> io::Result<Baseline> {
    if plan.mix.is_empty() || plan.mix.iter().any(|(t, w)| t.is_empty() || *w == 0) {
        return Err(io::Error::other(
            "a baseline needs operations of weight > 0",
        ));
    }
    let server = Server(Some(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(plan.server_threads.max(1))
            .thread_name("eddy-bench-echo")
            .enable_io()
            .build()?,
    ));
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    server.spawn(serve(listener));
    let mut conns = Vec::with_capacity(plan.connections);
    for _ in 0..plan.connections {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        conns.push(stream);
    }
    let began = Instant::now();
    let deadline = began + Duration::from_secs_f64(plan.secs);
    let mut loops = JoinSet::new();
    for (id, stream) in conns.into_iter().enumerate() {
        let rng = rng_of(plan.seed, id);
        loops.spawn(echo_loop(rng, plan.mix.clone(), stream, deadline));
    }
    let mut all = new_histogram();
    while let Some(done) = loops.join_next().await {
        all.add(&done.map_err(io::Error::other)??)
            .expect("same bounds");
    }
    let elapsed = began.elapsed().as_secs_f64();
    drop(server);
    Ok(Baseline::of(&all, elapsed))
}

/// The random source of connection `id` of a run seeded `seed`: its own,
/// repeatable (the echo's connections and `eddy bench pb`'s draw alike).
pub fn rng_of(seed: u64, id: usize) -> SmallRng {
    SmallRng::seed_from_u64(seed ^ (id as u64).wrapping_mul(0x9E37_79B9))
}

/// Nanoseconds since `started`, at least 1 (a histogram's least value).
pub fn nanos_since(started: Instant) -> u64 {
    (started.elapsed().as_nanos() as u64).max(1)
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_NS_MAX, 3).expect("static histogram bounds are valid")
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

/// The operation of `mix` a draw of `rng` picks, by weight.
fn choose<'a>(mix: &'a [(Vec<Trip>, u32)], rng: &mut SmallRng) -> &'a [Trip] {
    let total: u64 = mix.iter().map(|(_, w)| u64::from(*w)).sum();
    let mut at = rng.random_range(0..total);
    for (trips, w) in mix {
        match at.checked_sub(u64::from(*w)) {
            Some(rest) => at = rest,
            None => return trips,
        }
    }
    &mix[mix.len() - 1].0
}

/// One connection's closed loop over the mix.
async fn echo_loop(
    mut rng: SmallRng,
    mix: Vec<(Vec<Trip>, u32)>,
    mut stream: TcpStream,
    deadline: Instant,
) -> io::Result<Histogram<u64>> {
    let mut hist = new_histogram();
    let mut request = Vec::new();
    let mut reply = Vec::new();
    while Instant::now() < deadline {
        let trips = choose(&mix, &mut rng);
        let started = Instant::now();
        for trip in trips {
            frame(&mut request, trip.request, trip.reply);
            stream.write_all(&request).await?;
            read_frame(&mut stream, &mut reply).await?;
            if reply.len() != trip.reply.max(1) || reply[0] != CODE_REPLY {
                return Err(io::Error::other("the echo server answered wrongly"));
            }
        }
        hist.saturating_record(nanos_since(started));
    }
    Ok(hist)
}

/// Fills `out` with a request frame of `body` bytes (at least 5) whose
/// reply is to be `answer` bytes (at least 1).
fn frame(out: &mut Vec<u8>, body: usize, answer: usize) {
    let body = body.max(5);
    let answer = answer.clamp(1, MAX_FRAME);
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

    fn plan(mix: Vec<(Vec<Trip>, u32)>) -> EchoPlan {
        EchoPlan {
            connections: 4,
            server_threads: 1,
            secs: 0.2,
            seed: 7,
            mix,
        }
    }

    /// The echo completes round trips of every shape, one trip or several
    /// per operation, and every operation is counted and timed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn echo_answers_every_shape() {
        let v = 5000;
        let update = vec![Trip::read(v), Trip::write(v)];
        for mix in [
            vec![(vec![Trip::write(v)], 1)],
            vec![(vec![Trip::read(v)], 1)],
            vec![(vec![Trip::read(v)], 3), (update, 1)],
        ] {
            let b = measure(&plan(mix.clone())).await.unwrap();
            assert!(b.ops > 0, "{mix:?}: no round trips");
            let l = &b.latency;
            assert!(l.p50_us > 0.0 && l.p99_us >= l.p50_us && l.max_us >= l.p99_us);
            assert!((b.ops as f64 / b.duration_s - b.ops_per_s).abs() < 1e-6);
        }
    }

    #[tokio::test]
    async fn an_empty_or_weightless_mix_is_refused() {
        assert!(measure(&plan(vec![])).await.is_err());
        assert!(
            measure(&plan(vec![(vec![Trip::read(1)], 0)]))
                .await
                .is_err()
        );
        assert!(measure(&plan(vec![(vec![], 1)])).await.is_err());
    }

    #[test]
    fn trips_move_the_value_the_way_the_operation_does() {
        assert_eq!(
            Trip::write(1024),
            Trip {
                request: 1024 + OVERHEAD,
                reply: 1
            }
        );
        assert_eq!(
            Trip::read(1024),
            Trip {
                request: OVERHEAD,
                reply: 1024 + OVERHEAD
            }
        );
        let mut f = Vec::new();
        frame(&mut f, 100, 7);
        assert_eq!(f.len(), 104);
        assert_eq!(&f[..4], &100u32.to_be_bytes());
        assert_eq!(f[4], CODE_REQUEST);
        assert_eq!(&f[5..9], &7u32.to_be_bytes());
    }

    #[test]
    fn choice_follows_the_weights() {
        let mix = vec![(vec![Trip::read(1)], 1), (vec![Trip::write(1)], 3)];
        let mut rng = SmallRng::seed_from_u64(1);
        let writes = (0..40_000)
            .filter(|_| choose(&mix, &mut rng)[0] == Trip::write(1))
            .count();
        assert!((29_000..31_000).contains(&writes), "{writes}");
    }

    #[test]
    fn ratios_read_a_run_against_the_echo() {
        let b = Baseline {
            duration_s: 1.0,
            ops: 400,
            ops_per_s: 400.0,
            latency: Latency {
                p99_us: 200.0,
                ..Latency::default()
            },
        };
        assert!((b.share_of(100.0) - 25.0).abs() < 1e-9);
        assert!((b.p99_ratio(500.0) - 2.5).abs() < 1e-9);
        assert!(
            b.one_line(100.0).contains("25.0 %"),
            "{}",
            b.one_line(100.0)
        );
    }
}
