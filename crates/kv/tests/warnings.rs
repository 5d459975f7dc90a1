//! The warnings a write can log name the object they are about, as
//! `type/bucket/key` (lossy and escaped: one printable line): an object
//! over the size warning threshold, and one with more siblings than the
//! siblings warning threshold.

use std::io::Write;
use std::sync::Arc;

use eddy_kv::*;
use eddy_model::props::BucketProps;
use eddy_model::types::BucketRegistry;
use eddy_model::*;
use eddy_object::{Actor, Content};
use eddy_storage::Backend;
use eddy_storage::memory::{MemoryBackend, MemoryConfig};
use parking_lot::Mutex;

/// What the log said, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

fn node() -> Arc<Node> {
    let defaults = BucketProps {
        allow_mult: true,
        ..BucketProps::default()
    };
    let registry = Arc::new(BucketRegistry::new(defaults));
    let config = NodeConfig {
        ring_size: 8,
        siblings_warn: 2,
        object_size_warn_bytes: 10,
        ..NodeConfig::default()
    };
    Node::start(config, registry, |p| {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(MemoryConfig::default()));
        (backend, Actor(1000 + u64::from(p.0)))
    })
    .unwrap()
}

fn put(key: &[u8], value: &str) -> PutRequest {
    PutRequest {
        bucket: BucketRef::default_type(b"b\xffx\n".to_vec()),
        key: Some(key.to_vec()),
        context: None,
        content: Content::new(value.as_bytes().to_vec()),
        options: PutOptions::default(),
    }
}

// One thread: every log line of the puts reaches the captured subscriber.
#[tokio::test(flavor = "current_thread")]
async fn the_warnings_name_the_object() {
    let log = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(log.clone())
        .with_ansi(false)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let node = node();
    for v in ["one", "two", "three"] {
        node.put(put(b"k\x01", v)).await.unwrap();
    }
    assert_eq!(
        node.metrics.siblings_warnings.get(),
        1,
        "three siblings, once"
    );
    node.put(put(b"big", "more than ten bytes")).await.unwrap();
    let text = log.text();
    let named = "object=default/b\u{fffd}x\\n/k\\u{1}";
    let siblings = text
        .lines()
        .find(|l| l.contains("object has many siblings"));
    let siblings = siblings.unwrap_or_else(|| panic!("no siblings warning in:\n{text}"));
    assert!(siblings.contains(named), "{siblings}");
    assert!(siblings.contains("siblings=3"), "{siblings}");
    let large = text.lines().find(|l| l.contains("large object written"));
    let large = large.unwrap_or_else(|| panic!("no large object warning in:\n{text}"));
    assert!(
        large.contains("object=default/b\u{fffd}x\\n/big"),
        "{large}"
    );
}
