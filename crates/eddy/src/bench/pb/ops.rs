//! What the generator sends: the key space, the choice between get and put,
//! and request templates built once per connection so that each request
//! only rewrites its key.

use eddy_wire::proto::{RpbContent, RpbGetReq, RpbPutReq};
use rand::Rng;
use rand::rngs::SmallRng;

use crate::cli::{PbArgs, PbWorkload};

/// One request of the measured phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Get,
    Put,
}

/// The key of number `n`: its decimal digits, as a Riak user would write.
pub fn key(n: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(n.to_string().as_bytes());
}

/// The next operation of `workload` (`read_percent` only matters for mixed).
pub fn choose(workload: PbWorkload, read_percent: u8, rng: &mut SmallRng) -> Op {
    match workload {
        PbWorkload::Get => Op::Get,
        PbWorkload::Put => Op::Put,
        PbWorkload::Mixed if rng.random_range(0..100u8) < read_percent => Op::Get,
        PbWorkload::Mixed => Op::Put,
    }
}

/// A get of the run's bucket with its `--r`.
pub fn get_template(args: &PbArgs) -> RpbGetReq {
    RpbGetReq {
        bucket: args.bucket.as_bytes().to_vec(),
        r: args.r.map(eddy_wire::Quorum::to_wire),
        r#type: args.bucket_type.as_ref().map(|t| t.as_bytes().to_vec()),
        ..Default::default()
    }
}

/// A blind put (no vclock) of `value` with the run's `--w` and `--dw`.
pub fn put_template(args: &PbArgs, value: Vec<u8>) -> RpbPutReq {
    RpbPutReq {
        bucket: args.bucket.as_bytes().to_vec(),
        content: RpbContent {
            value,
            content_type: Some(b"application/octet-stream".to_vec()),
            ..Default::default()
        },
        w: args.w.map(eddy_wire::Quorum::to_wire),
        dw: args.dw.map(eddy_wire::Quorum::to_wire),
        r#type: args.bucket_type.as_ref().map(|t| t.as_bytes().to_vec()),
        ..Default::default()
    }
}

/// `size` bytes that do not compress: a value like a user's encrypted or
/// compressed payload, so no layer gets a free ride.
pub fn value(size: usize, rng: &mut SmallRng) -> Vec<u8> {
    let mut v = vec![0u8; size];
    rng.fill(v.as_mut_slice());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::pb::test_args as args;
    use rand::SeedableRng;

    #[test]
    fn mixed_follows_the_read_percent() {
        let mut rng = SmallRng::seed_from_u64(1);
        let gets = (0..10_000)
            .filter(|_| choose(PbWorkload::Mixed, 90, &mut rng) == Op::Get)
            .count();
        assert!((8_700..9_300).contains(&gets), "{gets}");
        assert_eq!(choose(PbWorkload::Mixed, 0, &mut rng), Op::Put);
        assert_eq!(choose(PbWorkload::Mixed, 100, &mut rng), Op::Get);
        assert_eq!(choose(PbWorkload::Get, 0, &mut rng), Op::Get);
        assert_eq!(choose(PbWorkload::Put, 100, &mut rng), Op::Put);
    }

    #[test]
    fn templates_carry_the_quorums_and_type() {
        let a = args(&["--w=2", "--dw=all", "--r=one", "--bucket-type=t"]);
        let put = put_template(&a, vec![7; 3]);
        assert_eq!(put.w, Some(2));
        assert_eq!(put.dw, Some(u32::MAX - 3));
        assert_eq!(put.r#type.as_deref(), Some(&b"t"[..]));
        assert_eq!(put.content.value, vec![7; 3]);
        let get = get_template(&a);
        assert_eq!(get.r, Some(u32::MAX - 1));
        assert_eq!(get.bucket, b"eddy-bench");
        let plain = put_template(&args(&[]), vec![]);
        assert_eq!((plain.w, plain.dw, plain.r#type), (None, None, None));
    }

    #[test]
    fn keys_are_decimal() {
        let mut k = b"old".to_vec();
        key(4711, &mut k);
        assert_eq!(k, b"4711");
    }
}
