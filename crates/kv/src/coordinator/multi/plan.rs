//! Grouping a multi-key request's vnode requests by node (pure): the
//! [`Outbox`] packs each node's requests, in the order they come, into
//! batches of at most `items_max` items and about `bytes_max` bytes (an
//! item larger than that travels alone); [`Admission`] decides which keys
//! make up a wave: as many keys, in request order, as need at most
//! `batches_max` batches to each node.
//!
//! Both pack with the same rule ([`Packer`]), so a wave admitted by
//! [`Admission`] is sent by the [`Outbox`] in at most `batches_max`
//! batches per node, if the items' sizes were estimated right.

use std::collections::BTreeMap;

use eddy_ring::NodeName;

use eddy_vnode::msg::{BatchItem, PutKind, VnodeRequest};

/// How large one batch may grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchCaps {
    /// Most items in one batch (at least 1).
    pub items_max: usize,
    /// Bytes after which a batch takes no further item.
    pub bytes_max: usize,
}

/// The batches one node's requests fill, as they come.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Packer {
    /// Batches closed.
    full: usize,
    /// Items and bytes of the open batch.
    items: usize,
    bytes: usize,
}

impl Packer {
    /// Adds an item of `bytes`; true if it closed the open batch first.
    fn add(&mut self, bytes: usize, caps: BatchCaps) -> bool {
        let closes = self.items > 0
            && (self.items >= caps.items_max.max(1)
                || self.bytes.saturating_add(bytes) > caps.bytes_max);
        if closes {
            self.full += 1;
            self.items = 0;
            self.bytes = 0;
        }
        self.items += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        closes
    }

    fn batches(&self) -> usize {
        self.full + usize::from(self.items > 0)
    }
}

/// Requests bound for other nodes, packed into batches.
pub struct Outbox<R> {
    caps: BatchCaps,
    open: BTreeMap<NodeName, (Packer, Vec<(BatchItem, R)>)>,
    ready: Vec<(NodeName, Vec<(BatchItem, R)>)>,
}

impl<R> Outbox<R> {
    pub fn new(caps: BatchCaps) -> Outbox<R> {
        Outbox {
            caps,
            open: BTreeMap::new(),
            ready: Vec::new(),
        }
    }

    /// Adds a request for a vnode of `node`, with where its replies go.
    pub fn push(&mut self, node: &NodeName, item: BatchItem, reply: R) {
        let bytes = item_bytes(&item);
        let caps = self.caps;
        if !self.open.contains_key(node) {
            self.open.insert(node.clone(), Default::default());
        }
        let Some((packer, items)) = self.open.get_mut(node) else {
            // Not reached (inserted above); the item still goes.
            self.ready.push((node.clone(), vec![(item, reply)]));
            return;
        };
        if packer.add(bytes, caps) {
            self.ready.push((node.clone(), std::mem::take(items)));
        }
        items.push((item, reply));
    }

    /// The batches that are full, in the order they filled.
    pub fn take_full(&mut self) -> Vec<(NodeName, Vec<(BatchItem, R)>)> {
        std::mem::take(&mut self.ready)
    }

    /// Every batch, full or not: the full ones first.
    pub fn take_all(&mut self) -> Vec<(NodeName, Vec<(BatchItem, R)>)> {
        let mut all = self.take_full();
        for (node, (packer, items)) in std::mem::take(&mut self.open) {
            debug_assert!(packer.items == items.len());
            if !items.is_empty() {
                all.push((node, items));
            }
        }
        all
    }
}

/// Which keys make up a wave.
#[derive(Debug)]
pub struct Admission {
    caps: BatchCaps,
    batches_max: usize,
    nodes: BTreeMap<NodeName, Packer>,
    keys: usize,
}

impl Admission {
    /// A wave of at most `batches_max` batches (at least 1) to each node.
    pub fn new(caps: BatchCaps, batches_max: usize) -> Admission {
        Admission {
            caps,
            batches_max: batches_max.max(1),
            nodes: BTreeMap::new(),
            keys: 0,
        }
    }

    /// Takes a key whose requests go to `items` (a node and the request's
    /// estimated bytes each) if the wave stays within its batches; the
    /// first key is always taken.
    pub fn admit(&mut self, items: &[(&NodeName, usize)]) -> bool {
        let mut trial: BTreeMap<&NodeName, Packer> = BTreeMap::new();
        for (node, bytes) in items {
            let packer = trial
                .entry(*node)
                .or_insert_with(|| self.nodes.get(*node).copied().unwrap_or_default());
            packer.add(*bytes, self.caps);
        }
        let fits = trial.values().all(|p| p.batches() <= self.batches_max);
        if !fits && self.keys > 0 {
            return false;
        }
        for (node, packer) in trial {
            match self.nodes.get_mut(node) {
                Some(kept) => *kept = packer,
                None => {
                    self.nodes.insert(node.clone(), packer);
                }
            }
        }
        self.keys += 1;
        true
    }

    /// Keys taken.
    #[cfg(test)]
    pub fn keys(&self) -> usize {
        self.keys
    }
}

/// Roughly the bytes a request adds to a batch message.
pub fn item_bytes(item: &BatchItem) -> usize {
    match &item.request {
        VnodeRequest::Get { key } => 9 + key.bucket.len() + key.key.len(),
        VnodeRequest::Put(put) => {
            let body = match &put.kind {
                PutKind::Replicate { encoded } => encoded.len(),
                PutKind::Coordinate(c) => c.content.value.len() + 64,
                PutKind::DtDelta(d) => d.object.len() + d.delta.len() + 64,
            };
            let props = put.props.as_deref().map_or(0, |p| {
                let len = |e: &Option<eddy_model::metadata::entries::StampedEntry>| {
                    e.as_ref().map_or(0, |e| 24 + e.json.len())
                };
                1 + len(&p.bucket_type) + len(&p.bucket)
            });
            24 + put.key.bucket.len() + put.key.key.len() + props + body
        }
        VnodeRequest::Reap { key, .. } => 64 + key.bucket.len() + key.key.len(),
        VnodeRequest::Fold(_) => 64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_ring::Partition;
    use eddy_vnode::msg::StorageKey;

    fn get(key: &str) -> BatchItem {
        BatchItem {
            partition: Partition(1),
            request: VnodeRequest::Get {
                key: StorageKey {
                    bucket: b"b".to_vec(),
                    key: key.as_bytes().to_vec(),
                },
            },
        }
    }

    fn node(n: &str) -> NodeName {
        NodeName(n.into())
    }

    #[test]
    fn the_outbox_packs_each_node_in_order_within_its_caps() {
        let caps = BatchCaps {
            items_max: 3,
            bytes_max: 1000,
        };
        let mut out = Outbox::new(caps);
        for i in 0..7 {
            out.push(&node("a"), get(&format!("a{i}")), i);
            if i < 2 {
                out.push(&node("b"), get(&format!("b{i}")), 10 + i);
            }
        }
        let full = out.take_full();
        assert_eq!(full.len(), 2, "a filled two batches of 3");
        assert!(
            full.iter()
                .all(|(n, items)| *n == node("a") && items.len() == 3)
        );
        let rest = out.take_all();
        let sizes: Vec<(String, Vec<i32>)> = rest
            .iter()
            .map(|(n, items)| (n.0.clone(), items.iter().map(|i| i.1).collect()))
            .collect();
        assert_eq!(
            sizes,
            vec![("a".into(), vec![6]), ("b".into(), vec![10, 11])]
        );
        assert!(out.take_all().is_empty());
    }

    #[test]
    fn an_item_above_the_byte_cap_travels_alone() {
        let caps = BatchCaps {
            items_max: 100,
            bytes_max: 30,
        };
        let mut out = Outbox::new(caps);
        let long = "k".repeat(40);
        out.push(&node("a"), get("x"), 0);
        out.push(&node("a"), get(&long), 1);
        out.push(&node("a"), get("y"), 2);
        let all = out.take_all();
        let batches: Vec<Vec<i32>> = all
            .iter()
            .map(|(_, items)| items.iter().map(|i| i.1).collect())
            .collect();
        assert_eq!(batches, vec![vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn admission_keeps_each_node_within_its_batches_and_takes_the_first_key() {
        let caps = BatchCaps {
            items_max: 2,
            bytes_max: 1 << 20,
        };
        let (a, b) = (node("a"), node("b"));
        let mut wave = Admission::new(caps, 2);
        // Each key: one request to a, one to b; four keys fill 2 × 2.
        for _ in 0..4 {
            assert!(wave.admit(&[(&a, 10), (&b, 10)]));
        }
        assert!(!wave.admit(&[(&a, 10)]), "a third batch to a");
        assert!(!wave.admit(&[(&b, 10)]));
        assert_eq!(wave.keys(), 4);
        let mut wave = Admission::new(caps, 1);
        assert!(wave.admit(&[(&a, 10), (&a, 10), (&a, 10)]), "the first key");
        assert!(!wave.admit(&[(&a, 10)]));
        assert!(wave.admit(&[]), "a key with no remote request");
    }
}
