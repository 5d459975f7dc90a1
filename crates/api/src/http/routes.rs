//! Routing: the request path, decoded segment by segment, names one
//! resource, in any of Riak's three URL styles:
//!
//! | path | resource |
//! |---|---|
//! | `/` , `/ping`, `/stats` | [`root`], [`ping`], [`stats`] |
//! | `/metrics` | [`metrics`] (Eddy's own: Prometheus' text format) |
//! | `/health` | [`health`] (Eddy's own) |
//! | `/buckets`, `/types/T/buckets`, `/riak` | [`buckets`] (list) |
//! | `/buckets/B/keys`, `/types/T/buckets/B/keys` | [`keys`] (GET), new object (POST) |
//! | `/buckets/B/keys/K`, `/types/T/buckets/B/keys/K`, `/riak/B/K` | the object |
//! | `/buckets/B/keys/K/preflist`, `/types/T/buckets/B/keys/K/preflist` | [`preflist`] |
//! | `/buckets/B/props`, `/types/T/buckets/B/props` | [`props`] |
//! | `/buckets/B/index/F/V[/END]`, `/types/T/buckets/B/index/F/V[/END]` | [`index`] (2i query) |
//! | `/mapred` | [`mapred`] (POST a MapReduce job) |
//! | `/buckets/B/multi/OP`, `/types/T/buckets/B/multi/OP` | [`multi`] (Eddy's own: OP is `get`, `put` or `delete`) |
//! | `/riak/B` | POST: new object; `keys=true\|stream`: [`keys`]; else [`props`] |
//! | `/types/T/buckets/B/datatypes[/K]` | [`datatype`] (`default` type: 301 to the counter) |
//! | `/buckets/B/counters/K` | [`counter`] (Riak 1.4's counters) |
//! | `/types/T/props` | [`types`] |
//! | `/admin/bucket-types[/T[/activate]]` | [`admin`] (Eddy's own) |
//! | `/admin/buckets/B`, `/admin/types/T/buckets/B` | [`drop_bucket`] (Eddy's own: DELETE drops the bucket) |
//! | `/admin/cluster/OP`, `/admin/{member-status,ring-status,ringready,transfers,transfer-limit,down}` | [`cluster`] (Eddy's own) |
//!
//! Segments are URL-decoded the way Riak decodes them (`+` is a space,
//! `%XX` a byte), so bucket and key names are arbitrary bytes; type names
//! must be UTF-8.
//!
//! [`root`]: super::root
//! [`ping`]: super::ping
//! [`stats`]: super::stats
//! [`metrics`]: super::metrics
//! [`health`]: super::health
//! [`buckets`]: super::buckets
//! [`keys`]: super::keys
//! [`props`]: super::props
//! [`preflist`]: super::preflist
//! [`index`]: super::index
//! [`mapred`]: super::mapred
//! [`multi`]: super::multi
//! [`types`]: super::types
//! [`datatype`]: super::datatype
//! [`counter`]: super::counter
//! [`admin`]: super::admin
//! [`drop_bucket`]: super::drop_bucket
//! [`cluster`]: super::cluster

use std::sync::Arc;

use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;
use eddy_model::BucketRef;
use eddy_model::types::DEFAULT_TYPE;

use super::admin::{self, AdminRoute};
use super::cluster::{self, ClusterRoute};
use super::error::ApiError;
use super::multi::{self, MultiOp};
use super::params::{Query, unquote_plus};
use super::server::App;
use super::{
    buckets, counter, datatype, drop_bucket, health, index, keys, mapred, metrics, object_delete,
    object_get, object_put, ping, preflist, props, root, stats, types,
};

/// Riak's URL styles (its `api_version`), which shape `Link` and
/// `Location` headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `/riak/B/K` (api version 1).
    Legacy,
    /// `/buckets/B/keys/K` (api version 2).
    Buckets,
    /// `/types/T/buckets/B/keys/K` (api version 3).
    Typed,
}

/// A bucket as a request named it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub bucket: BucketRef,
    pub api: Api,
}

/// The resource a request is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Root,
    Ping,
    Stats,
    /// Every figure, for Prometheus.
    Metrics,
    /// Whether the node accepts writes.
    Health,
    /// The buckets of a type.
    Buckets {
        bucket_type: String,
        api: Api,
    },
    /// `.../buckets/B/keys`: list keys (GET) or create (POST).
    Keys(Target),
    /// One object.
    Object(Target, Vec<u8>),
    /// One key's preference list.
    Preflist(Target, Vec<u8>),
    /// `/riak/B`: props, key list or create, by method and query.
    LegacyBucket(Target),
    /// A bucket's props.
    Props(Target),
    /// A 2i query: the segments after `index` (field, then term or range).
    Index(Target, Vec<Vec<u8>>),
    /// A multi-key request (Eddy's own).
    Multi(Target, MultiOp),
    /// A data type value (`None`: POST with a new key).
    Datatype(BucketRef, Option<Vec<u8>>),
    /// A data type path in the `default` type: bucket and key.
    DefaultDatatype(Vec<u8>, Vec<u8>),
    /// A Riak 1.4 counter.
    Counter(BucketRef, Vec<u8>),
    /// A bucket type's props.
    TypeProps(String),
    /// A MapReduce job.
    MapRed,
    /// Eddy's bucket-type administration.
    Admin(AdminRoute),
    /// Drop a bucket (Eddy's own).
    DropBucket(BucketRef),
    /// Cluster membership administration.
    Cluster(ClusterRoute),
}

/// The operations HTTP requests are counted by (`eddy_api_requests_total`'s
/// `op` label), in [`Op`]'s order.
pub const OPS: [&str; 20] = [
    "get",
    "put",
    "delete",
    "list_keys",
    "list_buckets",
    "index",
    "mapred",
    "multi",
    "datatype",
    "counter",
    "props",
    "preflist",
    "ping",
    "stats",
    "metrics",
    "health",
    "admin",
    "cluster",
    "root",
    "other",
];

/// An operation of [`OPS`], by its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Get,
    Put,
    Delete,
    ListKeys,
    ListBuckets,
    Index,
    MapRed,
    Multi,
    Datatype,
    Counter,
    Props,
    Preflist,
    Ping,
    Stats,
    Metrics,
    Health,
    Admin,
    Cluster,
    Root,
    /// A path that names no resource.
    Other,
}

impl Route {
    /// The operation a request for this resource with `method` counts as.
    pub fn op(&self, method: &Method) -> Op {
        let object_op = |m: &Method| match *m {
            Method::PUT | Method::POST => Op::Put,
            Method::DELETE => Op::Delete,
            _ => Op::Get,
        };
        match self {
            Route::Root => Op::Root,
            Route::Ping => Op::Ping,
            Route::Stats => Op::Stats,
            Route::Metrics => Op::Metrics,
            Route::Health => Op::Health,
            Route::Buckets { .. } => Op::ListBuckets,
            Route::Keys(_) if method == Method::POST => Op::Put,
            Route::Keys(_) => Op::ListKeys,
            Route::Object(..) => object_op(method),
            Route::LegacyBucket(_) if method == Method::POST => Op::Put,
            Route::LegacyBucket(_) | Route::Props(_) | Route::TypeProps(_) => Op::Props,
            Route::Preflist(..) => Op::Preflist,
            Route::Index(..) => Op::Index,
            Route::Multi(..) => Op::Multi,
            Route::Datatype(..) | Route::DefaultDatatype(..) => Op::Datatype,
            Route::Counter(..) => Op::Counter,
            Route::MapRed => Op::MapRed,
            Route::Admin(_) | Route::DropBucket(_) => Op::Admin,
            Route::Cluster(_) => Op::Cluster,
        }
    }
}

/// Routes and handles one request, counting it by operation.
pub async fn handle(app: Arc<App>, req: Request) -> Result<Response, ApiError> {
    let route = parse(req.uri().path());
    let method = req.method().clone();
    let op = route.as_ref().map_or(Op::Other, |r| r.op(&method));
    app.figures.request(op as usize);
    let route = route?;
    let query = Query::parse(req.uri().query())?;
    match route {
        Route::Root => only_get(&method, "GET, HEAD").map(|_| root::get(req.headers())),
        Route::Ping => only_get(&method, "GET, HEAD").map(|_| ping::get()),
        Route::Stats => {
            only_get(&method, "GET, HEAD")?;
            Ok(stats::get(&app))
        }
        Route::Metrics => {
            only_get(&method, "GET, HEAD")?;
            Ok(metrics::get(&app))
        }
        Route::Health => {
            only_get(&method, "GET, HEAD")?;
            Ok(health::get(&app))
        }
        Route::Buckets { bucket_type, .. } => {
            only_get(&method, "GET, HEAD")?;
            buckets::get(&app, &bucket_type, &query).await
        }
        Route::Keys(t) => keys_resource(app, t, &method, query, req).await,
        Route::Object(t, key) => object(app, t, key, query, req).await,
        Route::Preflist(t, key) => {
            only_get(&method, "GET, HEAD")?;
            preflist::get(&app, &t, &key)
        }
        Route::LegacyBucket(t) => legacy_bucket(app, t, query, req).await,
        Route::Props(t) => props::handle(&app, t, req).await,
        Route::Index(t, segments) => {
            only_get(&method, "GET, HEAD")?;
            index::get(app, t, segments, &query).await
        }
        Route::Multi(t, op) => multi::handle(&app, t, op, &query, req).await,
        Route::Datatype(bucket, key) => datatype::handle(&app, bucket, key, &query, req).await,
        Route::DefaultDatatype(b, k) => Ok(datatype::to_legacy_counter(&b, &k)),
        Route::Counter(bucket, key) => counter::handle(&app, bucket, key, &query, req).await,
        Route::TypeProps(name) => types::handle(&app, &name, req).await,
        Route::MapRed => mapred::handle(app, &query, req).await,
        Route::Admin(route) => admin::handle(&app, route, req).await,
        Route::DropBucket(bucket) => drop_bucket::handle(&app, bucket, req).await,
        Route::Cluster(route) => cluster::handle(&app, route, req).await,
    }
}

fn only_get(method: &Method, allowed: &str) -> Result<(), ApiError> {
    match *method {
        Method::GET | Method::HEAD => Ok(()),
        _ => Err(ApiError::method_not_allowed(allowed)),
    }
}

async fn keys_resource(
    app: Arc<App>,
    t: Target,
    method: &Method,
    query: Query,
    req: Request,
) -> Result<Response, ApiError> {
    match *method {
        Method::GET | Method::HEAD => keys::get(app, t, &query).await,
        Method::POST => object_put::handle(&app, t, None, &query, req).await,
        _ => Err(ApiError::method_not_allowed("GET, HEAD, POST")),
    }
}

async fn object(
    app: Arc<App>,
    t: Target,
    key: Vec<u8>,
    query: Query,
    req: Request,
) -> Result<Response, ApiError> {
    match *req.method() {
        Method::GET | Method::HEAD => object_get::handle(&app, t, key, &query, req.headers()).await,
        Method::PUT | Method::POST => object_put::handle(&app, t, Some(key), &query, req).await,
        Method::DELETE => object_delete::handle(&app, t, key, &query, req.headers()).await,
        _ => Err(ApiError::method_not_allowed("GET, HEAD, PUT, POST, DELETE")),
    }
}

/// `/riak/B`: Riak's legacy bucket resource dispatches on the method and
/// the `keys` and `props` parameters.
async fn legacy_bucket(
    app: Arc<App>,
    t: Target,
    query: Query,
    req: Request,
) -> Result<Response, ApiError> {
    if req.method() == Method::POST {
        return object_put::handle(&app, t, None, &query, req).await;
    }
    if matches!(query.get("keys"), Some("true" | "stream")) {
        return keys::get(app, t, &query).await;
    }
    if query.get("props") == Some("false") {
        return Err(ApiError::not_found());
    }
    props::handle(&app, t, req).await
}

/// Decodes a path into a route.
pub fn parse(path: &str) -> Result<Route, ApiError> {
    let raw: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
    let segs: Vec<Vec<u8>> = raw.iter().map(|s| unquote_plus(s)).collect();
    let s: Vec<&[u8]> = segs.iter().map(Vec::as_slice).collect();
    let default = |b: &[u8], api| Target {
        bucket: BucketRef::default_type(b.to_vec()),
        api,
    };
    let route = match s.as_slice() {
        [b""] => Route::Root,
        [b"ping"] => Route::Ping,
        [b"stats"] => Route::Stats,
        [b"metrics"] => Route::Metrics,
        [b"health"] => Route::Health,
        [b"mapred"] => Route::MapRed,
        [b"riak"] => buckets_of(DEFAULT_TYPE, Api::Legacy),
        [b"buckets"] => buckets_of(DEFAULT_TYPE, Api::Buckets),
        [b"riak", b] => Route::LegacyBucket(default(b, Api::Legacy)),
        [b"riak", b, k] => Route::Object(default(b, Api::Legacy), k.to_vec()),
        [b"buckets", b, b"keys"] => Route::Keys(default(b, Api::Buckets)),
        [b"buckets", b, b"keys", k] => Route::Object(default(b, Api::Buckets), k.to_vec()),
        [b"buckets", b, b"keys", k, b"preflist"] => {
            Route::Preflist(default(b, Api::Buckets), k.to_vec())
        }
        [b"buckets", b, b"props"] => Route::Props(default(b, Api::Buckets)),
        [b"buckets", b, b"index", rest @ ..] if !rest.is_empty() => {
            Route::Index(default(b, Api::Buckets), owned(rest))
        }
        [b"buckets", b, b"multi", op] => Route::Multi(default(b, Api::Buckets), multi_op(op)?),
        [b"buckets", b, b"counters", k] => {
            Route::Counter(BucketRef::default_type(b.to_vec()), k.to_vec())
        }
        [b"types", t, rest @ ..] => typed(type_name(t)?, rest)?,
        [b"admin", b"repair"] => Route::Admin(AdminRoute::Repair),
        [b"admin", b"buckets", b] => Route::DropBucket(BucketRef::default_type(b.to_vec())),
        [b"admin", b"types", t, b"buckets", b] => {
            Route::DropBucket(BucketRef::typed(&type_name(t)?, b.to_vec()))
        }
        [b"admin", b"bucket-types"] => Route::Admin(AdminRoute::Types),
        [b"admin", b"bucket-types", t] => Route::Admin(AdminRoute::Type(type_name(t)?)),
        [b"admin", b"bucket-types", t, b"activate"] => {
            Route::Admin(AdminRoute::Activate(type_name(t)?))
        }
        [b"admin", b"cluster", op] => {
            Route::Cluster(ClusterRoute::cluster_op(op).ok_or_else(no_resource)?)
        }
        [b"admin", view] => Route::Cluster(ClusterRoute::admin_view(view).ok_or_else(no_resource)?),
        _ => return Err(no_resource()),
    };
    Ok(route)
}

fn buckets_of(bucket_type: &str, api: Api) -> Route {
    Route::Buckets {
        bucket_type: bucket_type.to_string(),
        api,
    }
}

fn typed(t: String, rest: &[&[u8]]) -> Result<Route, ApiError> {
    let target = |b: &[u8]| Target {
        bucket: BucketRef::typed(&t, b.to_vec()),
        api: Api::Typed,
    };
    let route = match rest {
        [b"props"] => Route::TypeProps(t.clone()),
        [b"buckets"] => buckets_of(&t, Api::Typed),
        [b"buckets", b, b"keys"] => Route::Keys(target(b)),
        [b"buckets", b, b"keys", k] => Route::Object(target(b), k.to_vec()),
        [b"buckets", b, b"keys", k, b"preflist"] => Route::Preflist(target(b), k.to_vec()),
        [b"buckets", b, b"props"] => Route::Props(target(b)),
        [b"buckets", b, b"index", rest @ ..] if !rest.is_empty() => {
            Route::Index(target(b), owned(rest))
        }
        [b"buckets", b, b"multi", op] => Route::Multi(target(b), multi_op(op)?),
        [b"buckets", b, b"datatypes"] => Route::Datatype(BucketRef::typed(&t, b.to_vec()), None),
        [b"buckets", b, b"datatypes", k] if t == DEFAULT_TYPE => {
            Route::DefaultDatatype(b.to_vec(), k.to_vec())
        }
        [b"buckets", b, b"datatypes", k] => {
            Route::Datatype(BucketRef::typed(&t, b.to_vec()), Some(k.to_vec()))
        }
        _ => return Err(no_resource()),
    };
    Ok(route)
}

fn multi_op(segment: &[u8]) -> Result<MultiOp, ApiError> {
    MultiOp::from_segment(segment).ok_or_else(no_resource)
}

fn owned(segments: &[&[u8]]) -> Vec<Vec<u8>> {
    segments.iter().map(|s| s.to_vec()).collect()
}

fn type_name(raw: &[u8]) -> Result<String, ApiError> {
    String::from_utf8(raw.to_vec())
        .map_err(|_| ApiError::bad_request("bucket type name is not valid UTF-8\n"))
}

fn no_resource() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        "no such resource; see / for the list\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_three_url_styles_route() {
        let obj = |bt: &str, b: &[u8], k: &[u8], api| {
            Route::Object(
                Target {
                    bucket: BucketRef::typed(bt, b.to_vec()),
                    api,
                },
                k.to_vec(),
            )
        };
        assert_eq!(
            parse("/riak/b/k%2Fx").unwrap(),
            obj("default", b"b", b"k/x", Api::Legacy)
        );
        assert_eq!(
            parse("/buckets/a+b/keys/%FF").unwrap(),
            obj("default", b"a b", b"\xff", Api::Buckets)
        );
        assert_eq!(
            parse("/types/t/buckets/b/keys/k").unwrap(),
            obj("t", b"b", b"k", Api::Typed)
        );
        assert_eq!(
            parse("/buckets/b/keys/").unwrap(),
            obj("default", b"b", b"", Api::Buckets)
        );
        assert_eq!(parse("/").unwrap(), Route::Root);
        assert_eq!(
            parse("/types/t/props").unwrap(),
            Route::TypeProps("t".into())
        );
        assert!(parse("/types/%FF/props").is_err());
        let index = |bt: &str, api| {
            Route::Index(
                Target {
                    bucket: BucketRef::typed(bt, b"b".to_vec()),
                    api,
                },
                vec![b"$key".to_vec(), b"a b".to_vec(), b"z".to_vec()],
            )
        };
        assert_eq!(
            parse("/buckets/b/index/%24key/a+b/z").unwrap(),
            index("default", Api::Buckets)
        );
        assert_eq!(
            parse("/types/t/buckets/b/index/$key/a%20b/z").unwrap(),
            index("t", Api::Typed)
        );
        assert!(parse("/buckets/b/index").is_err());
        let multi = |bt: &str, api, op| {
            let bucket = BucketRef::typed(bt, b"b".to_vec());
            Route::Multi(Target { bucket, api }, op)
        };
        assert_eq!(
            parse("/buckets/b/multi/get").unwrap(),
            multi("default", Api::Buckets, MultiOp::Get)
        );
        assert_eq!(
            parse("/types/t/buckets/b/multi/delete").unwrap(),
            multi("t", Api::Typed, MultiOp::Delete)
        );
        assert!(parse("/buckets/b/multi/scan").is_err());
        assert_eq!(
            parse("/types/sets/buckets/b/datatypes/k%20x").unwrap(),
            Route::Datatype(
                BucketRef::typed("sets", b"b".to_vec()),
                Some(b"k x".to_vec())
            )
        );
        assert_eq!(
            parse("/types/sets/buckets/b/datatypes").unwrap(),
            Route::Datatype(BucketRef::typed("sets", b"b".to_vec()), None)
        );
        assert_eq!(
            parse("/types/default/buckets/b/datatypes/k").unwrap(),
            Route::DefaultDatatype(b"b".to_vec(), b"k".to_vec())
        );
        assert_eq!(
            parse("/buckets/b/counters/k").unwrap(),
            Route::Counter(BucketRef::default_type(b"b".to_vec()), b"k".to_vec())
        );
        assert!(parse("/nope").is_err());
    }
}
