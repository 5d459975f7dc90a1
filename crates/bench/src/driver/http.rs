//! The HTTP driver: Riak's HTTP API (typed URLs, `/types/T/buckets/B/…`)
//! over reqwest, one client with at most one idle connection per worker.
//!
//! Status handling: get 200/300 is found, 404 not found; put 200/201/204
//! (300 with siblings) succeed; delete 204/404 succeed; Eddy's multi-key
//! requests (`POST …/multi/{get,put}`) answer 200 with one result per key;
//! anything else is a [`Failure`] named `http_<status>` with the answer's
//! text.

use std::fmt::Write;
use std::sync::Arc;

use eddy_client::multi::{self, KeyResult, PutItem};
use eddy_wire::Quorum;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_encode};
use reqwest::{Client, Method, StatusCode};

use super::{DriverOptions, DtChange, Failure, Fetched, IndexLookup, MultiObject, PutBody};
use crate::config::BucketProps;

/// Bytes kept literal in a path segment (Riak decodes `+` as a space, so
/// it is encoded too).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// One HTTP "connection": a client bound to one endpoint.
pub struct HttpConn {
    client: Client,
    /// `http://host:port`.
    root: String,
    /// `{root}/types/T/buckets/B`.
    base: String,
    options: Arc<DriverOptions>,
}

fn seg(bytes: &[u8]) -> String {
    percent_encode(bytes, SEGMENT).to_string()
}

impl HttpConn {
    /// Builds the client; nothing is sent until the first request.
    pub fn connect(options: Arc<DriverOptions>, endpoint: &str) -> Result<HttpConn, Failure> {
        let client = Client::builder()
            .timeout(options.timeout)
            .connect_timeout(options.timeout)
            .pool_max_idle_per_host(1)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| Failure::from_http(&e))?;
        let t = &options.target;
        let root = format!("http://{endpoint}");
        let base = format!(
            "{root}/types/{}/buckets/{}",
            seg(t.type_name().as_bytes()),
            seg(t.bucket.as_bytes())
        );
        Ok(HttpConn {
            client,
            root,
            base,
            options,
        })
    }

    fn key_url(&self, key: &[u8], params: &[(&str, Option<String>)]) -> String {
        with_params(format!("{}/keys/{}", self.base, seg(key)), params)
    }

    async fn send(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<(StatusCode, reqwest::Response), Failure> {
        let resp = req.send().await.map_err(|e| Failure::from_http(&e))?;
        Ok((resp.status(), resp))
    }

    /// Reads the body of an unexpected answer into a failure.
    async fn refused(status: StatusCode, resp: reqwest::Response) -> Failure {
        let body = resp.bytes().await.unwrap_or_default();
        Failure::http_status(status.as_u16(), &body)
    }

    /// Drains a body so the connection can be reused.
    async fn drain(resp: reqwest::Response) -> Result<(), Failure> {
        resp.bytes()
            .await
            .map(drop)
            .map_err(|e| Failure::from_http(&e))
    }

    pub async fn get(&mut self, key: &[u8]) -> Result<Fetched, Failure> {
        let o = &self.options.request;
        let url = self.key_url(key, &[("r", qs(o.r)), ("pr", qs(o.pr))]);
        let (status, resp) = self.send(self.client.get(url)).await?;
        match status.as_u16() {
            200 | 300 => {
                let vclock = resp
                    .headers()
                    .get("x-riak-vclock")
                    .map(|v| v.as_bytes().to_vec());
                Self::drain(resp).await?;
                Ok(Fetched {
                    found: true,
                    vclock,
                })
            }
            404 => Self::drain(resp).await.map(|()| Fetched::default()),
            _ => Err(Self::refused(status, resp).await),
        }
    }

    pub async fn put(&mut self, key: &[u8], body: PutBody<'_>) -> Result<(), Failure> {
        let o = &self.options.request;
        let params = [
            ("w", qs(o.w)),
            ("dw", qs(o.dw)),
            ("pw", qs(o.pw)),
            ("returnbody", Some(o.returnbody.to_string())),
        ];
        let mut req = self
            .client
            .put(self.key_url(key, &params))
            .header("content-type", &self.options.content_type)
            .body(body.value.to_vec());
        if let Some(v) = body.vclock {
            req = req.header("x-riak-vclock", v);
        }
        for i in body.index {
            req = req.header(format!("x-riak-index-{}", i.field), &i.term);
        }
        let (status, resp) = self.send(req).await?;
        match status.as_u16() {
            200 | 201 | 204 | 300 => Self::drain(resp).await,
            _ => Err(Self::refused(status, resp).await),
        }
    }

    pub async fn delete(&mut self, key: &[u8]) -> Result<(), Failure> {
        let o = &self.options.request;
        let params = [
            ("r", qs(o.r)),
            ("w", qs(o.w)),
            ("dw", qs(o.dw)),
            ("pw", qs(o.pw)),
        ];
        let (status, resp) = self
            .send(self.client.delete(self.key_url(key, &params)))
            .await?;
        match status.as_u16() {
            204 | 404 => Self::drain(resp).await,
            _ => Err(Self::refused(status, resp).await),
        }
    }

    pub async fn index_query(
        &mut self,
        field: &str,
        lookup: &IndexLookup,
    ) -> Result<usize, Failure> {
        let mut url = format!("{}/index/{}", self.base, seg(field.as_bytes()));
        match lookup {
            IndexLookup::Eq(t) => url += &format!("/{}", seg(t.as_bytes())),
            IndexLookup::Range(a, b) => {
                url += &format!("/{}/{}", seg(a.as_bytes()), seg(b.as_bytes()))
            }
        }
        let (status, resp) = self.send(self.client.get(url)).await?;
        if status != StatusCode::OK {
            return Err(Self::refused(status, resp).await);
        }
        let body = resp.bytes().await.map_err(|e| Failure::from_http(&e))?;
        let doc: serde_json::Value =
            serde_json::from_slice(&body).map_err(|_| Failure::new("protocol", false))?;
        Ok(doc["keys"].as_array().map_or(0, Vec::len))
    }

    pub async fn multi_get(&mut self, keys: &[Vec<u8>]) -> Result<usize, Failure> {
        let o = &self.options.request;
        let params = [("r", qs(o.r)), ("pr", qs(o.pr))];
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let body = multi::get_body(&refs);
        let results = self.post_multi("get", &params, body).await?;
        super::tally(results.into_iter(), keys.len())
    }

    pub async fn multi_put(&mut self, objects: &[MultiObject<'_>]) -> Result<(), Failure> {
        let o = &self.options.request;
        let params = [
            ("w", qs(o.w)),
            ("dw", qs(o.dw)),
            ("pw", qs(o.pw)),
            ("returnbody", Some(o.returnbody.to_string())),
        ];
        let indexes: Vec<Vec<(&str, &str)>> = objects
            .iter()
            .map(|m| m.index.iter().map(|i| (i.field, i.term.as_str())).collect())
            .collect();
        let items: Vec<PutItem<'_>> = objects
            .iter()
            .zip(&indexes)
            .map(|(m, indexes)| PutItem {
                key: &m.key,
                value: &m.value,
                content_type: &self.options.content_type,
                vclock: None,
                indexes,
            })
            .collect();
        let body = multi::put_body(&items);
        let results = self.post_multi("put", &params, body).await?;
        super::tally(results.into_iter(), objects.len()).map(drop)
    }

    /// Posts a multi-key request's body to `…/multi/{op}` and reads its
    /// results.
    async fn post_multi(
        &self,
        op: &str,
        params: &[(&str, Option<String>)],
        body: String,
    ) -> Result<Vec<KeyResult>, Failure> {
        let url = with_params(format!("{}/multi/{op}", self.base), params);
        let req = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .body(body);
        let (status, resp) = self.send(req).await?;
        if status != StatusCode::OK {
            return Err(Self::refused(status, resp).await);
        }
        let body = resp.bytes().await.map_err(|e| Failure::from_http(&e))?;
        multi::parse_results(&body).map_err(|_| Failure::new("protocol", false))
    }

    /// A data type update: JSON to `/types/T/buckets/B/datatypes/K`, or
    /// a legacy counter's decimal body to `/buckets/B/counters/K` for the
    /// `default` type.
    pub async fn dt_update(&mut self, key: &[u8], change: &DtChange) -> Result<(), Failure> {
        let o = &self.options.request;
        let params = [("w", qs(o.w)), ("dw", qs(o.dw)), ("pw", qs(o.pw))];
        let legacy = self.options.target.bucket_type.is_none();
        let (path, content_type, body) = match (change, legacy) {
            (DtChange::Increment(n), true) => ("counters", "text/plain", n.to_string()),
            (DtChange::Increment(n), false) => (
                "datatypes",
                "application/json",
                serde_json::json!({ "increment": n }).to_string(),
            ),
            (DtChange::Add(m), _) => (
                "datatypes",
                "application/json",
                serde_json::json!({ "add": String::from_utf8_lossy(m) }).to_string(),
            ),
        };
        let base = match legacy {
            true => format!(
                "{}/buckets/{}",
                self.root,
                seg(self.options.target.bucket.as_bytes())
            ),
            false => self.base.clone(),
        };
        let url = with_params(format!("{base}/{path}/{}", seg(key)), &params);
        let req = self
            .client
            .post(url)
            .header("content-type", content_type)
            .body(body);
        let (status, resp) = self.send(req).await?;
        match status.as_u16() {
            200 | 204 => Self::drain(resp).await,
            _ => Err(Self::refused(status, resp).await),
        }
    }

    pub async fn mapreduce(&mut self, job: &str) -> Result<(), Failure> {
        let url = format!("{}/mapred", self.root);
        let req = self
            .client
            .post(url)
            .header("content-type", "application/json")
            .body(job.to_string());
        let (status, resp) = self.send(req).await?;
        match status.as_u16() {
            200 => Self::drain(resp).await,
            _ => Err(Self::refused(status, resp).await),
        }
    }

    pub async fn set_bucket_props(&mut self, p: &BucketProps) -> Result<(), Failure> {
        let body = serde_json::json!({ "props": props_json(p) });
        let req = self
            .client
            .request(Method::PUT, format!("{}/props", self.base))
            .header("content-type", "application/json")
            .body(body.to_string());
        let (status, resp) = self.send(req).await?;
        match status.as_u16() {
            200 | 204 => Self::drain(resp).await,
            _ => Err(Self::refused(status, resp).await),
        }
    }

    pub async fn server_info(&mut self) -> Result<String, Failure> {
        let root = &self.root;
        let (status, resp) = self.send(self.client.get(format!("{root}/ping"))).await?;
        if status != StatusCode::OK {
            return Err(Self::refused(status, resp).await);
        }
        Self::drain(resp).await?;
        let (status, resp) = self.send(self.client.get(format!("{root}/stats"))).await?;
        if status != StatusCode::OK {
            return Self::drain(resp)
                .await
                .map(|()| "unknown (no /stats)".into());
        }
        let body = resp.bytes().await.map_err(|e| Failure::from_http(&e))?;
        let stats: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let field = |name: &str| stats[name].as_str().unwrap_or("?").to_string();
        Ok(format!(
            "{} {}",
            field("nodename"),
            field("riak_kv_version")
        ))
    }
}

/// `url` with the parameters that have a value appended.
fn with_params(mut url: String, params: &[(&str, Option<String>)]) -> String {
    let mut sep = '?';
    for (name, value) in params {
        if let Some(v) = value {
            let _ = write!(url, "{sep}{name}={v}");
            sep = '&';
        }
    }
    url
}

fn qs(v: Option<Quorum>) -> Option<String> {
    v.map(|q| q.to_string())
}

/// Bucket props as Riak's HTTP API spells them.
fn props_json(p: &BucketProps) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    let mut put = |k: &str, v: Option<serde_json::Value>| {
        if let Some(v) = v {
            m.insert(k.to_string(), v);
        }
    };
    put("n_val", p.n_val.map(Into::into));
    put("allow_mult", p.allow_mult.map(Into::into));
    put("last_write_wins", p.last_write_wins.map(Into::into));
    for (name, value) in [
        ("r", p.r),
        ("pr", p.pr),
        ("w", p.w),
        ("dw", p.dw),
        ("pw", p.pw),
        ("rw", p.rw),
    ] {
        put(
            name,
            value.map(|q| serde_json::to_value(q).expect("a quorum serialises")),
        );
    }
    put("backend", p.backend.clone().map(Into::into));
    serde_json::Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded_like_riak_decodes_them() {
        assert_eq!(seg(b"a b+c/d"), "a%20b%2Bc%2Fd");
        assert_eq!(seg(b"k-1_2.3~"), "k-1_2.3~");
        assert_eq!(seg(&[0, 255]), "%00%FF");
    }

    #[test]
    fn props_keep_only_what_was_given() {
        let p = BucketProps {
            n_val: Some(1),
            dw: Some(Quorum::Count(0)),
            w: Some(Quorum::One),
            ..Default::default()
        };
        assert_eq!(
            props_json(&p),
            serde_json::json!({"n_val": 1, "dw": 0, "w": "one"})
        );
    }
}
