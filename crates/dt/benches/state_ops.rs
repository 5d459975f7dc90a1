//! What one data type operation costs the coordinating vnode today
//! (design note 020 §6): decode the stored state, apply the operation,
//! encode the state again; for sets of 1,000, 10,000 and 100,000 members
//! and for a counter. Run: `cargo bench -p eddy-dt --bench state_ops`.

use divan::Bencher;
use eddy_dt::{Actor, DataType, Op, SetOp, State};

fn main() {
    divan::main();
}

fn set_of(n: usize) -> Vec<u8> {
    let mut s = State::new(DataType::Set, 14);
    let adds = (0..n)
        .map(|i| format!("member-{i:08}").into_bytes())
        .collect();
    let op = Op::Set(SetOp {
        adds,
        removes: vec![],
    });
    s.apply(Actor(1), &op, None, 0).unwrap();
    s.encode()
}

#[divan::bench(args = [1_000, 10_000, 100_000])]
fn set_add_one(bencher: Bencher, n: usize) {
    let stored = set_of(n);
    let op = Op::Set(SetOp {
        adds: vec![b"one-more".to_vec()],
        removes: vec![],
    });
    bencher.bench(|| {
        let mut s = State::decode(divan::black_box(&stored)).unwrap();
        s.apply(Actor(2), &op, None, 0).unwrap();
        s.encode()
    });
}

#[divan::bench]
fn counter_increment(bencher: Bencher) {
    let mut c = State::new(DataType::Counter, 14);
    for a in 0..5 {
        c.apply(Actor(a), &Op::Counter(3), None, 0).unwrap();
    }
    let stored = c.encode();
    bencher.bench(|| {
        let mut s = State::decode(divan::black_box(&stored)).unwrap();
        s.apply(Actor(2), &Op::Counter(1), None, 0).unwrap();
        s.encode()
    });
}

/// Decoding alone, then encoding alone, of a set: where the time of
/// [`set_add_one`] goes.
#[divan::bench(args = [100_000])]
fn set_decode(bencher: Bencher, n: usize) {
    let stored = set_of(n);
    bencher.bench(|| State::decode(divan::black_box(&stored)).unwrap());
}

#[divan::bench(args = [100_000])]
fn set_encode(bencher: Bencher, n: usize) {
    let state = State::decode(&set_of(n)).unwrap();
    bencher.bench(|| divan::black_box(&state).encode());
}
