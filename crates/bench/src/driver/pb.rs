//! The PB driver: Riak's Protocol Buffers requests over [`PbClient`].

use std::sync::Arc;

use eddy_client::multi::KeyResult;
use eddy_client::pb::PbClient;
use eddy_wire::proto::eddy::{EddyMultiGetReq, EddyMultiPutReq, EddyPutObject};
use eddy_wire::proto::{
    CounterOp, DtOp, DtUpdateReq, RpbBucketProps, RpbContent, RpbDelReq, RpbGetReq, RpbIndexReq,
    RpbMapRedReq, RpbPair, RpbPutReq, RpbSetBucketReq, SetOp, rpb_index_req::IndexQueryType,
};
use eddy_wire::{Quorum, WireQuorum};

use super::{
    DriverOptions, DtChange, Failure, Fetched, IndexEntry, IndexLookup, MultiObject, PutBody,
};
use crate::config::BucketProps;

/// One PB connection.
pub struct PbConn {
    client: PbClient,
    options: Arc<DriverOptions>,
}

fn q(v: Option<Quorum>) -> Option<u32> {
    v.map(Quorum::to_wire)
}

fn fail(e: eddy_client::pb::PbClientError) -> Failure {
    Failure::from_pb(&e)
}

fn index_pair(i: &IndexEntry<'_>) -> RpbPair {
    RpbPair {
        key: i.field.as_bytes().to_vec(),
        value: Some(i.term.as_bytes().to_vec()),
    }
}

impl PbConn {
    /// Connects within the request timeout.
    pub async fn connect(options: Arc<DriverOptions>, endpoint: &str) -> Result<PbConn, Failure> {
        let client = PbClient::connect(endpoint, options.timeout)
            .await
            .map_err(fail)?;
        Ok(PbConn { client, options })
    }

    fn bucket(&self) -> Vec<u8> {
        self.options.target.bucket.as_bytes().to_vec()
    }

    fn bucket_type(&self) -> Option<Vec<u8>> {
        self.options
            .target
            .bucket_type
            .as_ref()
            .map(|t| t.as_bytes().to_vec())
    }

    pub async fn get(&mut self, key: &[u8]) -> Result<Fetched, Failure> {
        let o = &self.options.request;
        let req = RpbGetReq {
            bucket: self.bucket(),
            key: key.to_vec(),
            r: q(o.r),
            pr: q(o.pr),
            r#type: self.bucket_type(),
            ..Default::default()
        };
        let resp = self.client.get(&req).await.map_err(fail)?;
        Ok(Fetched {
            found: !resp.content.is_empty(),
            vclock: resp.vclock,
        })
    }

    pub async fn put(&mut self, key: &[u8], body: PutBody<'_>) -> Result<(), Failure> {
        let o = &self.options.request;
        let req = RpbPutReq {
            bucket: self.bucket(),
            key: Some(key.to_vec()),
            vclock: body.vclock.map(<[u8]>::to_vec),
            content: RpbContent {
                value: body.value.to_vec(),
                content_type: Some(self.options.content_type.as_bytes().to_vec()),
                indexes: body.index.iter().map(index_pair).collect(),
                ..Default::default()
            },
            w: q(o.w),
            dw: q(o.dw),
            pw: q(o.pw),
            return_body: Some(o.returnbody),
            r#type: self.bucket_type(),
            ..Default::default()
        };
        self.client.put(&req).await.map(drop).map_err(fail)
    }

    pub async fn delete(&mut self, key: &[u8]) -> Result<(), Failure> {
        let o = &self.options.request;
        let req = RpbDelReq {
            bucket: self.bucket(),
            key: key.to_vec(),
            r: q(o.r),
            pr: q(o.pr),
            w: q(o.w),
            dw: q(o.dw),
            pw: q(o.pw),
            r#type: self.bucket_type(),
            ..Default::default()
        };
        self.client.delete(&req).await.map_err(fail)
    }

    pub async fn index_query(
        &mut self,
        field: &str,
        lookup: &IndexLookup,
    ) -> Result<usize, Failure> {
        let mut req = RpbIndexReq {
            bucket: self.bucket(),
            index: field.as_bytes().to_vec(),
            r#type: self.bucket_type(),
            ..Default::default()
        };
        match lookup {
            IndexLookup::Eq(term) => {
                req.set_qtype(IndexQueryType::Eq);
                req.key = Some(term.as_bytes().to_vec());
            }
            IndexLookup::Range(min, max) => {
                req.set_qtype(IndexQueryType::Range);
                req.range_min = Some(min.as_bytes().to_vec());
                req.range_max = Some(max.as_bytes().to_vec());
            }
        }
        let answers = self.client.index(&req).await.map_err(fail)?;
        Ok(answers
            .iter()
            .map(|a| a.keys.len().max(a.results.len()))
            .sum())
    }

    pub async fn multi_get(&mut self, keys: &[Vec<u8>]) -> Result<usize, Failure> {
        let o = &self.options.request;
        let req = EddyMultiGetReq {
            bucket: self.bucket(),
            r#type: self.bucket_type(),
            keys: keys.to_vec(),
            r: q(o.r),
            pr: q(o.pr),
            ..Default::default()
        };
        let resp = self.client.multi_get(&req).await.map_err(fail)?;
        let results = resp.results.into_iter().map(KeyResult::from_pb);
        super::tally(results, keys.len())
    }

    pub async fn multi_put(&mut self, objects: &[MultiObject<'_>]) -> Result<(), Failure> {
        let o = &self.options.request;
        let content_type = self.options.content_type.as_bytes();
        let objects = objects.iter().map(|m| EddyPutObject {
            key: m.key.clone(),
            vclock: None,
            content: RpbContent {
                value: m.value.clone(),
                content_type: Some(content_type.to_vec()),
                indexes: m.index.iter().map(index_pair).collect(),
                ..Default::default()
            },
        });
        let req = EddyMultiPutReq {
            bucket: self.bucket(),
            r#type: self.bucket_type(),
            objects: objects.collect(),
            w: q(o.w),
            dw: q(o.dw),
            pw: q(o.pw),
            return_body: Some(o.returnbody),
            ..Default::default()
        };
        let expected = req.objects.len();
        let resp = self.client.multi_put(&req).await.map_err(fail)?;
        let results = resp.results.into_iter().map(KeyResult::from_pb);
        super::tally(results, expected).map(drop)
    }

    pub async fn dt_update(&mut self, key: &[u8], change: &DtChange) -> Result<(), Failure> {
        let o = &self.options.request;
        let op = match change {
            DtChange::Increment(n) => DtOp {
                counter_op: Some(CounterOp {
                    increment: Some(*n),
                }),
                ..Default::default()
            },
            DtChange::Add(member) => DtOp {
                set_op: Some(SetOp {
                    adds: vec![member.clone()],
                    removes: vec![],
                }),
                ..Default::default()
            },
        };
        let req = DtUpdateReq {
            bucket: self.bucket(),
            key: Some(key.to_vec()),
            r#type: self.bucket_type().unwrap_or_else(|| b"default".to_vec()),
            op,
            w: q(o.w),
            dw: q(o.dw),
            pw: q(o.pw),
            return_body: Some(false),
            ..Default::default()
        };
        self.client.dt_update(&req).await.map(drop).map_err(fail)
    }

    pub async fn mapreduce(&mut self, job: &str) -> Result<(), Failure> {
        let req = RpbMapRedReq {
            request: job.as_bytes().to_vec(),
            content_type: b"application/json".to_vec(),
        };
        self.client.mapred(&req).await.map(drop).map_err(fail)
    }

    pub async fn set_bucket_props(&mut self, p: &BucketProps) -> Result<(), Failure> {
        let req = RpbSetBucketReq {
            bucket: self.bucket(),
            props: RpbBucketProps {
                n_val: p.n_val,
                allow_mult: p.allow_mult,
                last_write_wins: p.last_write_wins,
                r: q(p.r),
                pr: q(p.pr),
                w: q(p.w),
                dw: q(p.dw),
                pw: q(p.pw),
                rw: q(p.rw),
                backend: p.backend.as_ref().map(|b| b.as_bytes().to_vec()),
                ..Default::default()
            },
            r#type: self.bucket_type(),
        };
        self.client.set_bucket(&req).await.map_err(fail)
    }

    pub async fn server_info(&mut self) -> Result<String, Failure> {
        let info = self.client.server_info().await.map_err(fail)?;
        let text =
            |b: Option<Vec<u8>>| String::from_utf8_lossy(&b.unwrap_or_default()).into_owned();
        Ok(format!("{} {}", text(info.node), text(info.server_version)))
    }
}
