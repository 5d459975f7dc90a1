//! Calls over loopback TCP: 32 concurrent callers on one node calling a
//! node that echoes 1 KiB bodies. Reports calls per second (each call is a
//! request frame and a reply frame). Run briefly: `cargo bench -p eddy-net`.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use divan::Bencher;
use divan::counter::ItemsCount;
use eddy_net::{Incoming, Lane, NetConfig, NodeName, Transport};
use tokio::runtime::Runtime;

const CALLERS: usize = 32;
const CALLS_PER_CALLER: usize = 200;

fn main() {
    divan::main();
}

async fn pair() -> (Transport, Transport) {
    let addr = "127.0.0.1:0".parse().unwrap();
    let a = Transport::tcp(NodeName("a@127.0.0.1".into()), addr, NetConfig::default())
        .await
        .unwrap();
    let b = Transport::tcp(NodeName("b@127.0.0.1".into()), addr, NetConfig::default())
        .await
        .unwrap();
    a.set_peer_address(b.local().clone(), b.listen_addr().unwrap());
    b.set_handler(Arc::new(|m: Incoming| {
        if let Some(r) = m.responder {
            let _ = r.reply(m.body);
        }
    }))
    .unwrap();
    (a, b)
}

async fn round(a: &Transport, to: &NodeName, body: &Bytes) {
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..CALLERS {
        let (a, to, body) = (a.clone(), to.clone(), body.clone());
        callers.spawn(async move {
            for _ in 0..CALLS_PER_CALLER {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
                let reply = a.call(&to, Lane::Control, body.clone(), deadline).await;
                assert_eq!(reply.map(|r| r.len()), Ok(body.len()));
            }
        });
    }
    while let Some(done) = callers.join_next().await {
        done.unwrap();
    }
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn calls_1kib_32_callers(bencher: Bencher) {
    let rt = Runtime::new().unwrap();
    let (a, b) = rt.block_on(pair());
    let body = Bytes::from(vec![0xab; 1024]);
    rt.block_on(round(&a, b.local(), &body));
    bencher
        .counter(ItemsCount::new(CALLERS * CALLS_PER_CALLER))
        .bench_local(|| rt.block_on(round(&a, b.local(), &body)));
}
