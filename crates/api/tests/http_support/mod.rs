//! A node over memory backends served by the real HTTP server on
//! 127.0.0.1:0, and helpers to drive it with a real HTTP client.

#![allow(dead_code)]

use std::sync::Arc;

use eddy_api::http::{HttpConfig, serve};
use eddy_kv::repair::Partition;
use eddy_kv::{Node, NodeConfig};
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_object::Actor;
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use tokio::sync::oneshot;

pub struct Server {
    pub base: String,
    pub node: Arc<Node>,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
}

impl Server {
    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    /// PUTs `value` as text/plain.
    pub async fn put(&self, path: &str, value: &str) -> reqwest::Response {
        self.client
            .put(self.url(path))
            .header("content-type", "text/plain")
            .body(value.to_string())
            .send()
            .await
            .unwrap()
    }

    pub async fn delete(&self, path: &str) -> reqwest::Response {
        self.client.delete(self.url(path)).send().await.unwrap()
    }

    /// Asserts the node still answers.
    pub async fn assert_serving(&self) {
        let r = self.get("/ping").await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.unwrap(), "OK");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A node with ring size 8, the `maps` type (allow_mult, active) and the
/// `inactive` type (created only).
pub async fn start() -> Server {
    start_with(node_config(), HttpConfig::default()).await
}

pub fn node_config() -> NodeConfig {
    NodeConfig {
        ring_size: 8,
        ..NodeConfig::default()
    }
}

pub async fn start_with(config: NodeConfig, http: HttpConfig) -> Server {
    start_on(config, http, |_| {
        Arc::new(MemoryBackend::new(MemoryConfig::default()))
    })
    .await
}

/// [`start_with`], each partition's backend opened by `open`.
pub async fn start_on(
    config: NodeConfig,
    http: HttpConfig,
    open: impl Fn(Partition) -> Arc<dyn Backend>,
) -> Server {
    // The vnodes run map phases with the front end's MapReduce, as a node does.
    let config = NodeConfig {
        map_runner: Some(http.jobs.clone()),
        ..config
    };
    let registry = Arc::new(BucketRegistry::new(BucketProps::default()));
    let empty = eddy_model::props::PropsPatch::new();
    registry.create_type("maps", &empty).unwrap();
    registry.activate_type("maps").unwrap();
    registry.create_type("inactive", &empty).unwrap();
    let node = Node::start(config, registry, |p| {
        (open(p), Actor(1000 + u64::from(p.0)))
    })
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let served = node.clone();
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        serve(listener, served, http, shutdown).await.unwrap();
    });
    Server {
        base: format!("http://{addr}"),
        node,
        client: reqwest::Client::new(),
        stop: Some(stop),
    }
}

/// A header's value as text.
pub fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}
