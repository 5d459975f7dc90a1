//! Secondary-index entries: the terms each put carries and the lookups
//! `index_query` sends, built once from `[index]` (docs/bench.md).
//!
//! An entry's term is copied from an integer field of the JSON document
//! (`from`, or in the one-entry form the field named like the index), so
//! that 2i answers can be checked against the data, or drawn uniformly.
//! Invariants: a put carries every entry, in config order, once; a lookup
//! draws its term from the range the entry's terms are drawn from; random
//! `_bin` terms are zero-padded so that byte order is number order.

use rand::Rng;

use crate::config::{IndexConfig, IndexEntryConfig, IndexQuery};
use crate::driver::{IndexEntry, IndexLookup};
use crate::valuegen::ValueGen;

/// How index entries are written and queried.
#[derive(Clone, Debug)]
pub struct IndexPlan {
    /// The field `index_query` asks.
    pub field: String,
    entries: Vec<EntryPlan>,
    /// Position of the queried entry in `entries`.
    queried: usize,
    query: IndexQuery,
    range_width: u64,
    range_start: Option<u64>,
}

/// One entry each put carries.
#[derive(Clone, Debug)]
struct EntryPlan {
    field: String,
    /// The JSON integer field the term copies; `None`: uniform in
    /// `0..bound`.
    json_field: Option<usize>,
    /// Queries draw their terms uniformly in `0..bound`.
    bound: u64,
    /// Text before the number (`_bin` only).
    prefix: String,
    /// Zero-padded to 10 digits, so that byte order is number order.
    padded: bool,
}

impl EntryPlan {
    /// The one entry of `field` and `terms` alone: a copy of the JSON
    /// field of the same stem if there is one, else uniform; `_bin` terms
    /// padded either way.
    fn single(field: &str, terms: u64, values: &ValueGen) -> EntryPlan {
        let stem = &field[..field.len() - 4];
        EntryPlan {
            field: field.to_string(),
            json_field: values.int_field(stem),
            bound: terms,
            prefix: String::new(),
            padded: field.ends_with("_bin"),
        }
    }

    /// An `[[index.entries]]` entry (validated: exactly one of `from`,
    /// naming a JSON integer field, and `terms`). A term copied from the
    /// document is written as the document writes it, after `prefix`.
    fn listed(c: &IndexEntryConfig, values: &ValueGen) -> EntryPlan {
        let json_field = c.from.as_deref().and_then(|name| values.int_field(name));
        let bound = match json_field {
            Some(i) => values.int_bound(i),
            None => c.terms.unwrap_or(1),
        };
        EntryPlan {
            field: c.field.clone(),
            json_field,
            bound,
            prefix: c.prefix.clone(),
            padded: json_field.is_none() && c.field.ends_with("_bin"),
        }
    }

    fn term(&self, n: u64) -> String {
        match self.padded {
            true => format!("{}{n:010}", self.prefix),
            false => format!("{}{n}", self.prefix),
        }
    }
}

impl IndexPlan {
    /// From the `[index]` section (validated) and the run's values.
    pub fn new(c: &IndexConfig, values: &ValueGen) -> IndexPlan {
        let entries: Vec<EntryPlan> = match (&c.field, c.entries.is_empty()) {
            (Some(field), true) => vec![EntryPlan::single(field, c.terms.unwrap_or(1), values)],
            _ => c
                .entries
                .iter()
                .map(|e| EntryPlan::listed(e, values))
                .collect(),
        };
        let queried = c
            .field
            .as_ref()
            .and_then(|f| entries.iter().position(|e| &e.field == f))
            .unwrap_or(0);
        IndexPlan {
            field: entries[queried].field.clone(),
            entries,
            queried,
            query: c.query,
            range_width: c.range_width,
            range_start: c.range_start,
        }
    }

    /// The entries of one put, given the JSON integer fields it drew.
    pub fn entries(&self, rng: &mut impl Rng, ints: &[u64]) -> Vec<IndexEntry<'_>> {
        self.entries
            .iter()
            .map(|e| {
                let n = match e.json_field.and_then(|i| ints.get(i)) {
                    Some(&v) => v,
                    None => rng.random_range(0..e.bound),
                };
                IndexEntry {
                    field: &e.field,
                    term: e.term(n),
                }
            })
            .collect()
    }

    /// One query of the queried entry: an exact term, or `range_width`
    /// terms from `range_start` (else from a random start).
    pub fn lookup(&self, rng: &mut impl Rng) -> IndexLookup {
        let e = &self.entries[self.queried];
        let start = rng.random_range(0..e.bound);
        match self.query {
            IndexQuery::Eq => IndexLookup::Eq(e.term(start)),
            IndexQuery::Range => {
                let start = self.range_start.unwrap_or(start);
                let end = start.saturating_add(self.range_width - 1);
                IndexLookup::Range(e.term(start), e.term(end))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Plan;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    /// The index plan of a json workload with `[index]` as `index`.
    fn index_plan(index: &str) -> IndexPlan {
        let text = format!(
            r#"
            duration = "3s"
            [driver]
            protocol = "pb"
            endpoints = ["127.0.0.1:8087"]
            bucket = "coupons"
            [operations]
            put = 1
            index_query = 1
            [keys]
            generator = "uniform_int"
            max = 100
            [values]
            generator = "json"
            size = 200
            [values.int_fields]
            affiliate_id = 1000
            redeemed_count = 100
            [index]
            {index}
            "#
        );
        let config = crate::config::parse_valid(&text).unwrap();
        Plan::new(&config).index.unwrap()
    }

    fn terms<'a>(entries: &'a [IndexEntry<'_>]) -> Vec<(&'a str, &'a str)> {
        entries.iter().map(|e| (e.field, e.term.as_str())).collect()
    }

    #[test]
    fn a_fixed_range_start_asks_the_same_range_every_time() {
        let plan = index_plan(
            "field = \"redeemed_count_int\"\nterms = 100\nquery = \"range\"\nrange_width = 50\nrange_start = 0",
        );
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..10 {
            assert_eq!(
                plan.lookup(&mut rng),
                IndexLookup::Range("0".into(), "49".into())
            );
        }
    }

    #[test]
    fn index_terms_and_ranges() {
        let plan = index_plan(
            "field = \"redeemed_count_int\"\nterms = 100\nquery = \"range\"\nrange_width = 50",
        );
        let mut rng = SmallRng::seed_from_u64(1);
        // ints in int_fields order: affiliate_id, redeemed_count.
        let entries = plan.entries(&mut rng, &[7, 42]);
        assert_eq!(
            terms(&entries),
            [("redeemed_count_int", "42")],
            "copies the document's field"
        );
        let IndexLookup::Range(a, b) = plan.lookup(&mut rng) else {
            panic!()
        };
        assert_eq!(b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap(), 49);
        let bin = index_plan("field = \"tag_bin\"\nterms = 100");
        assert_eq!(bin.field, "tag_bin");
        let IndexLookup::Eq(t) = bin.lookup(&mut rng) else {
            panic!()
        };
        assert_eq!(t.len(), 10, "random _bin terms are zero-padded");
        let entries = bin.entries(&mut rng, &[7, 42]);
        assert!(entries[0].term.parse::<u64>().unwrap() < 100);
    }

    #[test]
    fn several_entries_copy_the_document_and_the_query_picks_one() {
        let plan = index_plan(
            r#"field = "affiliate_bin"
            [[index.entries]]
            field = "redeemed_count_int"
            from = "redeemed_count"
            [[index.entries]]
            field = "affiliate_bin"
            from = "affiliate_id"
            prefix = "affiliate-"
            [[index.entries]]
            field = "shard_bin"
            terms = 4
            prefix = "s"
            "#,
        );
        let mut rng = SmallRng::seed_from_u64(2);
        let entries = plan.entries(&mut rng, &[17, 3]);
        assert_eq!(
            terms(&entries)[..2],
            [
                ("redeemed_count_int", "3"),
                ("affiliate_bin", "affiliate-17")
            ]
        );
        let shard = &entries[2].term;
        assert!(
            shard.starts_with("s000000000") && shard.len() == 11,
            "{shard}"
        );
        assert_eq!(plan.field, "affiliate_bin");
        for _ in 0..200 {
            let IndexLookup::Eq(t) = plan.lookup(&mut rng) else {
                panic!("eq by default")
            };
            let id: u64 = t.strip_prefix("affiliate-").unwrap().parse().unwrap();
            assert!(id < 1000, "drawn within affiliate_id's bound: {t}");
        }
        // Without `field`, index_query asks the first entry.
        let first = index_plan(
            r#"query = "range"
            range_width = 50
            [[index.entries]]
            field = "redeemed_count_int"
            from = "redeemed_count"
            "#,
        );
        assert_eq!(first.field, "redeemed_count_int");
        let IndexLookup::Range(a, b) = first.lookup(&mut rng) else {
            panic!()
        };
        let a: u64 = a.parse().unwrap();
        assert!(a < 100 && b.parse::<u64>().unwrap() == a + 49);
    }
}
