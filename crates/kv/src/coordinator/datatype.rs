//! Data type fetches and updates (Riak's `riak_kv_crdt` paths behind
//! `DtFetchReq`/`DtUpdateReq` and the legacy counters; design note 020).
//!
//! An update is a put whose coordinating vnode applies the operation to
//! the merged state it holds ([`eddy_vnode::msg::DtUpdate`]); the
//! resulting object goes to the other replicas like any put's. A fetch is
//! a get whose siblings' states are merged by the type.
//!
//! Which buckets take what: a bucket of a type with a `datatype` (and
//! `allow_mult`, which props validation already demands) takes operations
//! of that type; a bucket of the `default` type takes counter operations
//! only, as Riak 1.4's counters, and only with `allow_mult`.

use std::sync::Arc;
use std::time::Instant;

use eddy_dt::{DataType, DtError, MAP_DEPTH_MAX, Op, State, decode_context, encode_context};
use eddy_object::{Content, codec};

use super::put::generate_key;
use crate::node::Node;
use eddy_model::error::{DatatypeBucketError, KvError};
use eddy_model::props::BucketProps;
use eddy_model::request::{BucketRef, GetOptions, GetRequest, GetResponse, PutOptions};
use eddy_model::types::DEFAULT_TYPE;
use eddy_vnode::datatype::{binding, state_of};
use eddy_vnode::msg::DtUpdate;

/// Apply one data type operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DtUpdateRequest {
    pub bucket: BucketRef,
    /// `None`: the node makes a key up.
    pub key: Option<Vec<u8>>,
    pub op: Op,
    /// The opaque context the client read (sets and maps), if it sent one.
    pub context: Option<Vec<u8>>,
    /// Quorums, timeout, and `return_body` (answer with the new value).
    pub options: PutOptions,
}

/// The answer to an update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DtUpdateResponse {
    pub key: Vec<u8>,
    /// The node made the key.
    pub generated: bool,
    /// The new value and its context, when `return_body` asked for them.
    pub body: Option<DtBody>,
}

/// A value as a client reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DtBody {
    pub state: State,
    /// The opaque context (sets and maps; empty for the others).
    pub context: Vec<u8>,
}

impl DtBody {
    /// A counter's value (`None` for the other types).
    pub fn counter(&self) -> Option<i64> {
        match &self.state {
            State::Counter(c) => Some(c.value()),
            _ => None,
        }
    }
}

/// Read one data type value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DtFetchRequest {
    pub bucket: BucketRef,
    pub key: Vec<u8>,
    pub options: GetOptions,
}

/// The answer to a fetch: the bucket's type, and the value if there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DtFetchResponse {
    pub datatype: DataType,
    pub body: Option<DtBody>,
    /// No value, and a tombstone was found (HTTP's `X-Riak-Deleted`).
    pub deleted: bool,
}

/// What a bucket's props say of the data type requests it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketDatatype {
    pub datatype: DataType,
    pub hll_precision: u8,
    /// A `default`-type bucket: Riak 1.4's counters.
    pub legacy: bool,
}

/// The data type `bucket` (of props `props`) holds, or why it holds none.
pub fn bucket_datatype(
    bucket: &BucketRef,
    props: &BucketProps,
) -> Result<BucketDatatype, DatatypeBucketError> {
    if bucket.bucket_type == DEFAULT_TYPE {
        if !props.allow_mult {
            return Err(DatatypeBucketError::CountersNeedAllowMult);
        }
        return Ok(BucketDatatype {
            datatype: DataType::Counter,
            hll_precision: eddy_dt::HLL_PRECISION_DEFAULT,
            legacy: true,
        });
    }
    let named = props.datatype.as_deref();
    let Some(datatype) = named.and_then(DataType::from_name) else {
        let name = named.unwrap_or("undefined").to_string();
        return Err(DatatypeBucketError::NoDatatype(name));
    };
    if !props.allow_mult {
        return Err(DatatypeBucketError::NotAllowMult);
    }
    let precision = props
        .hll_precision
        .and_then(|p| u8::try_from(p).ok())
        .unwrap_or(eddy_dt::HLL_PRECISION_DEFAULT);
    Ok(BucketDatatype {
        datatype,
        hll_precision: precision,
        legacy: false,
    })
}

impl Node {
    /// The data type `bucket` holds, from its current props.
    pub fn datatype_of(&self, bucket: &BucketRef) -> Result<BucketDatatype, KvError> {
        let props = self.props(bucket)?;
        Ok(bucket_datatype(bucket, &props)?)
    }

    /// Applies a data type operation with the request's (or the bucket's)
    /// quorums. Counted and timed in the node's figures as a put and as an
    /// update of the operation's type.
    pub async fn dt_update(
        self: &Arc<Self>,
        req: DtUpdateRequest,
    ) -> Result<DtUpdateResponse, KvError> {
        self.metrics.puts.increment();
        let start = Instant::now();
        let datatype = req.op.datatype();
        let result = self.coordinate_dt_update(req).await;
        self.metrics.put_fsm_time.record_since(start);
        self.metrics.datatypes.record_put(datatype, start);
        result
    }

    async fn coordinate_dt_update(
        self: &Arc<Self>,
        req: DtUpdateRequest,
    ) -> Result<DtUpdateResponse, KvError> {
        let resolved = self.props_entries(&req.bucket)?;
        let dt = bucket_datatype(&req.bucket, &resolved.0)?;
        check_op(&req.op, dt)?;
        let generated = req.key.is_none();
        let key = req.key.clone().unwrap_or_else(generate_key);
        self.check_key(&key)?;
        let bound = binding(&req.bucket, &key, dt.datatype);
        let context = match req.context.as_deref() {
            None | Some([]) => None,
            Some(bytes) => Some(decode_context(bytes, bound)?),
        };
        // Conditions mean nothing to a data type operation.
        let options = PutOptions {
            if_none_match: false,
            if_not_modified: false,
            ..req.options
        };
        let mut coordinate =
            self.client_write((&req.bucket, &key), None, Content::default(), &options)?;
        coordinate.update = Some(Box::new(DtUpdate {
            op: req.op,
            datatype: dt.datatype,
            hll_precision: dt.hll_precision,
            context,
        }));
        let coordinated = self
            .put_client_write(&req.bucket, &key, &options, resolved, coordinate)
            .await?;
        let body = match options.return_body {
            true => {
                let object = codec::decode(&coordinated.encoded)?;
                let state = state_of(&object, dt.datatype)?
                    .unwrap_or_else(|| State::new(dt.datatype, dt.hll_precision));
                Some(body(state, bound))
            }
            false => None,
        };
        Ok(DtUpdateResponse {
            key,
            generated,
            body,
        })
    }

    /// Reads a data type value: the merge of every sibling's state.
    /// Counted and timed in the node's figures as a get and as a fetch of
    /// the bucket's type.
    pub async fn dt_fetch(
        self: &Arc<Self>,
        req: DtFetchRequest,
    ) -> Result<DtFetchResponse, KvError> {
        let dt = self.datatype_of(&req.bucket)?;
        let bound = binding(&req.bucket, &req.key, dt.datatype);
        let get = GetRequest {
            bucket: req.bucket,
            key: req.key,
            options: GetOptions {
                deleted_vclock: true,
                ..req.options
            },
        };
        let start = Instant::now();
        let got = self.get(get).await;
        self.metrics.datatypes.record_get(dt.datatype, start, &got);
        let (state, deleted) = match got? {
            GetResponse::Found(object) => (state_of(&object, dt.datatype)?, false),
            GetResponse::NotFound { tombstone_context } => (None, tombstone_context.is_some()),
        };
        Ok(DtFetchResponse {
            datatype: dt.datatype,
            body: state.map(|s| body(s, bound)),
            deleted,
        })
    }
}

/// Refuses an operation the bucket cannot take before anything is written.
fn check_op(op: &Op, dt: BucketDatatype) -> Result<(), KvError> {
    if dt.legacy && op.datatype() != DataType::Counter {
        return Err(DatatypeBucketError::NonCounterOnDefault.into());
    }
    if op.datatype() != dt.datatype {
        return Err(DtError::WrongType {
            op: op.datatype(),
            datatype: dt.datatype,
        }
        .into());
    }
    if let Op::Map(m) = op
        && m.depth() > MAP_DEPTH_MAX
    {
        return Err(DtError::TooDeep { depth: m.depth() }.into());
    }
    Ok(())
}

fn body(state: State, bound: u64) -> DtBody {
    let context = state
        .context()
        .map(|clock| encode_context(clock, bound))
        .unwrap_or_default();
    DtBody { state, context }
}
