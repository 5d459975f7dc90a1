//! The functions that work across entries: `reduce_index_identity`,
//! `_sort`, `_max`, `_min`, `_union`, `_countby` and `_collateresults`.
//! Each accepts its own output again (Riak's re-reduce): identity, sort,
//! max and min give entries; union gives bare values, countby
//! `[value, count]` pairs and collateresults one
//! `{"results": [...], "facet_count": [[value, count], ...]}` object,
//! which they read back as such.

use serde_json::{Value, json};

use super::args::Keep;
use super::item::{self, Shape, bytes, entry, int, is_not_found, order};

/// What `reduce_index_sort` sorts by.
#[derive(Debug)]
pub enum SortBy {
    /// Riak's atom `key`: the whole `[bucket, key, keydata]`.
    Key,
    Attr(String),
}

impl SortBy {
    /// `"key"` sorts by key, any other name by that attribute.
    pub fn of(name: &str) -> SortBy {
        match name {
            "key" => SortBy::Key,
            attr => SortBy::Attr(attr.to_owned()),
        }
    }
}

/// The kind of value `union` and `countby` collect.
#[derive(Clone, Copy, Debug)]
pub enum ValueKind {
    Binary,
    Integer,
}

impl ValueKind {
    fn admits(self, v: &Value) -> bool {
        match self {
            ValueKind::Binary => bytes(v).is_some(),
            ValueKind::Integer => int(v).is_some(),
        }
    }
}

/// `reduce_index_identity`: with no attribute, names and entries pass
/// (`[bucket, key, null]` as `[bucket, key]`); with one, the entries
/// that have it. Anything else is dropped.
pub fn identity(values: Vec<Value>, attr: Option<&str>) -> Vec<Value> {
    enum Fate {
        Pass,
        Strip,
        Drop,
    }
    let fate = |v: &Value| match (item::shape(v), attr) {
        (
            Shape::Name {
                keydata: Some(Value::Null),
                ..
            },
            None,
        ) => Fate::Strip,
        (Shape::Entry { .. } | Shape::Name { .. }, None) => Fate::Pass,
        (Shape::Entry { attrs, .. }, Some(a)) if attrs.contains_key(a) => Fate::Pass,
        _ => Fate::Drop,
    };
    values
        .into_iter()
        .filter_map(|v| match fate(&v) {
            Fate::Pass => Some(v),
            Fate::Strip => v.as_array().map(|l| Value::Array(l[..2].to_vec())),
            Fate::Drop => None,
        })
        .collect()
}

/// `reduce_index_sort`: by key, everything identity passes; by an
/// attribute, the entries that have it, by its value, ties by key.
pub fn sort(values: Vec<Value>, by: &SortBy) -> Vec<Value> {
    match by {
        SortBy::Key => {
            let mut v = identity(values, None);
            v.sort_by(order);
            v
        }
        SortBy::Attr(a) => {
            let mut v = identity(values, Some(a));
            v.sort_by(|x, y| order(&x[2][a], &y[2][a]).then_with(|| order(&x[1], &y[1])));
            v
        }
    }
}

/// `reduce_index_max`: the `count` entries with the highest values of
/// `attr` (or keys, for `"key"`), highest first, ties to the higher key.
pub fn max(values: Vec<Value>, attr: &str, count: usize) -> Vec<Value> {
    let mut v = sort(values, &SortBy::of(attr));
    v.reverse();
    v.truncate(count);
    v
}

/// `reduce_index_min`: the `count` entries with the lowest values of
/// `attr` (or keys, for `"key"`), lowest first, ties to the lower key.
pub fn min(values: Vec<Value>, attr: &str, count: usize) -> Vec<Value> {
    let mut v = sort(values, &SortBy::of(attr));
    v.truncate(count);
    v
}

/// `reduce_index_union`: the distinct values of `attr` of `kind`, sorted.
pub fn union(values: Vec<Value>, attr: &str, kind: ValueKind) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for v in values {
        match item::shape(&v) {
            Shape::Entry { attrs, .. } => {
                out.extend(attrs.get(attr).filter(|x| kind.admits(x)).cloned());
            }
            _ if kind.admits(&v) => out.push(v),
            _ if is_not_found(&v) => {}
            _ => return Err(unhandled("reduce_index_union", &v)),
        }
    }
    out.sort_by(order);
    out.dedup_by(|a, b| order(a, b).is_eq());
    Ok(out)
}

/// `reduce_index_countby`: `[value, count]` for each value of `attr` of
/// `kind`, sorted by value.
pub fn countby(values: Vec<Value>, attr: &str, kind: ValueKind) -> Result<Vec<Value>, String> {
    let mut counts = Counts::default();
    for v in values {
        match item::shape(&v) {
            Shape::Entry { attrs, .. } => {
                if let Some(x) = attrs.get(attr).filter(|x| kind.admits(x)) {
                    counts.add(x, 1);
                }
            }
            _ if is_not_found(&v) => {}
            _ => match pair(&v).filter(|(t, _)| kind.admits(t)) {
                Some((t, n)) => counts.add(t, n),
                None => return Err(unhandled("reduce_index_countby", &v)),
            },
        }
    }
    Ok(counts.into_pairs())
}

/// What `reduce_index_collateresults` is asked for.
#[derive(Debug)]
pub struct Collate {
    pub sort: String,
    pub facet: String,
    pub keep: Keep,
    pub highest: bool,
    pub count: usize,
}

/// `reduce_index_collateresults`: the entries having both attributes,
/// the `count` highest (or lowest) by `sort` as `max`/`min` give them,
/// with a count of every entry's `facet` value.
pub fn collate(values: Vec<Value>, c: &Collate) -> Result<Vec<Value>, String> {
    let mut results = Vec::new();
    let mut facets = Counts::default();
    for v in values {
        match item::shape(&v) {
            Shape::Entry { bucket, key, attrs } => {
                let (Some(s), Some(f)) = (attrs.get(&c.sort), attrs.get(&c.facet)) else {
                    continue;
                };
                facets.add(f, 1);
                results.push(match c.keep {
                    Keep::All => v.clone(),
                    Keep::This => {
                        let only = [(c.sort.clone(), s.clone()), (c.facet.clone(), f.clone())];
                        entry(bucket, key, only.into_iter().collect())
                    }
                });
            }
            _ if is_not_found(&v) => {}
            _ => {
                let (earlier, counted) =
                    collated(&v).ok_or_else(|| unhandled("reduce_index_collateresults", &v))?;
                results.extend(earlier.iter().cloned());
                for (t, n) in counted {
                    facets.add(t, n);
                }
            }
        }
    }
    let results = match c.highest {
        true => max(results, &c.sort, c.count),
        false => min(results, &c.sort, c.count),
    };
    Ok(vec![
        json!({"results": results, "facet_count": facets.into_pairs()}),
    ])
}

/// Facet values with their counts.
type FacetCounts<'a> = Vec<(&'a Value, u64)>;

/// An earlier collateresults output: its results and facet counts.
fn collated(v: &Value) -> Option<(&Vec<Value>, FacetCounts<'_>)> {
    let m = v.as_object().filter(|m| m.len() == 2)?;
    let results = m.get("results")?.as_array()?;
    let counts = m.get("facet_count")?.as_array()?;
    let counts = counts.iter().map(pair).collect::<Option<Vec<_>>>()?;
    Some((results, counts))
}

/// `[value, count]`.
fn pair(v: &Value) -> Option<(&Value, u64)> {
    match v.as_array().map(Vec::as_slice) {
        Some([t, n]) => Some((t, n.as_u64()?)),
        _ => None,
    }
}

fn unhandled(func: &str, v: &Value) -> String {
    format!("{func}: unhandled entry {v}")
}

/// Counts by value, kept sorted by value.
#[derive(Default)]
struct Counts(Vec<(Value, u64)>);

impl Counts {
    fn add(&mut self, term: &Value, n: u64) {
        match self.0.binary_search_by(|(t, _)| order(t, term)) {
            Ok(i) => self.0[i].1 = self.0[i].1.saturating_add(n),
            Err(i) => self.0.insert(i, (term.clone(), n)),
        }
    }

    fn into_pairs(self) -> Vec<Value> {
        self.0.into_iter().map(|(t, n)| json!([t, n])).collect()
    }
}
