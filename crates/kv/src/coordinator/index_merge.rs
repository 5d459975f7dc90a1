//! The merge of a 2i page from its coverage vnodes, pulled in chunks.
//!
//! Each vnode of the plan scans its entries in (term, key) order; the page
//! is the `max` smallest of all of them. Rather than have every vnode send
//! a whole page (a page of 100,000 entries from 22 vnodes would move 2.2
//! million), the merge asks each vnode for about its share of the page,
//! merges what came, and asks a vnode for its next chunk (after the last
//! entry it sent) only when its entries ran out while the page is not yet
//! full and the vnode may hold more. Keys are spread over the vnodes by
//! hash, so most pages take one round; what is pulled stays near the
//! page's own size.
//!
//! Pure: the caller runs the folds ([`PageMerge::wants`] says which).
//! Invariants: an entry goes into the page only when every vnode that may
//! still hold a smaller one has sent its next entry, so the page is
//! exactly the `max` smallest entries; a vnode is finished once it sends
//! fewer entries than asked.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use eddy_vnode::index_fold::split_entry;

/// One entry as a vnode sent it (a fold item), ordered by (term, key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    item: Vec<u8>,
    /// Where the term ends and the key begins in `item`.
    key_at: usize,
}

impl Entry {
    /// `item` if it is a well-formed entry.
    pub(crate) fn new(item: Vec<u8>) -> Option<Entry> {
        let (term, _) = split_entry(&item)?;
        let key_at = TERM_AT + term.len();
        Some(Entry { item, key_at })
    }

    /// Its (term, key).
    pub(crate) fn parts(&self) -> (&[u8], &[u8]) {
        (&self.item[TERM_AT..self.key_at], &self.item[self.key_at..])
    }
}

/// Where an item's term begins: after its length.
const TERM_AT: usize = 4;

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parts().cmp(&other.parts())
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A chunk to ask a vnode for: its entries after `after`, at most `count`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Want {
    /// The vnode's place in the plan.
    pub source: usize,
    /// Only entries strictly after this (term, key); `None`: from the
    /// query's own start.
    pub after: Option<(Vec<u8>, Vec<u8>)>,
    pub count: usize,
}

/// What one vnode sent so far.
#[derive(Default)]
struct Source {
    /// Its share of the key space (the page's expected share).
    share: f64,
    /// Entries received and not yet merged (its smallest is in the heap).
    queued: VecDeque<Entry>,
    /// Whether its smallest unmerged entry is in the heap.
    headed: bool,
    /// The last entry it sent: the next chunk starts after it.
    last: Option<(Vec<u8>, Vec<u8>)>,
    /// It sent fewer entries than asked: it holds no more.
    finished: bool,
}

impl Source {
    /// It may hold entries smaller than anything merged next, and none of
    /// them is here.
    fn starved(&self) -> bool {
        !self.finished && !self.headed
    }
}

/// A page being merged from the chunks of its vnodes.
pub(crate) struct PageMerge {
    max: usize,
    /// Every vnode sends everything up to `max` at once: for scans a vnode
    /// cannot resume cheaply (`$bucket`, `$key` sort the bucket each time).
    whole: bool,
    sources: Vec<Source>,
    heads: BinaryHeap<Reverse<(Entry, usize)>>,
    page: Vec<Entry>,
}

impl PageMerge {
    /// A merge of the `max` smallest entries over vnodes whose shares of
    /// the key space are `shares`. With `whole`, each vnode is asked for
    /// `max` entries at once.
    pub(crate) fn new(max: usize, shares: &[f64], whole: bool) -> PageMerge {
        let sources = shares
            .iter()
            .map(|&share| Source {
                share,
                ..Source::default()
            })
            .collect();
        PageMerge {
            max,
            whole,
            sources,
            heads: BinaryHeap::new(),
            page: Vec::new(),
        }
    }

    /// The chunks to fold next, one per vnode whose entries ran out; none
    /// once the page is complete.
    pub(crate) fn wants(&self) -> Vec<Want> {
        let remaining = self.max.saturating_sub(self.page.len());
        if remaining == 0 {
            return Vec::new();
        }
        let sources = self.sources.iter().enumerate();
        sources
            .filter(|(_, s)| s.starved())
            .map(|(source, s)| Want {
                source,
                after: s.last.clone(),
                count: match self.whole {
                    true => remaining,
                    false => chunk(remaining, s.share),
                },
            })
            .collect()
    }

    /// Takes the entries vnode `source` sent for a chunk of `asked`, in
    /// order, then merges as far as the vnodes' entries allow.
    pub(crate) fn take(&mut self, source: usize, entries: Vec<Entry>, asked: usize) {
        let s = &mut self.sources[source];
        s.finished = entries.len() < asked;
        if let Some(last) = entries.last() {
            let (t, k) = last.parts();
            s.last = Some((t.to_vec(), k.to_vec()));
        }
        s.queued.extend(entries);
        self.head(source);
    }

    /// Merges entries into the page until it is full, every vnode is
    /// finished, or some vnode that may hold smaller entries must be
    /// asked for more.
    pub(crate) fn advance(&mut self) {
        if self.sources.iter().all(|s| s.finished) {
            return self.sort_the_rest();
        }
        while self.page.len() < self.max && !self.sources.iter().any(Source::starved) {
            let Some(Reverse((entry, source))) = self.heads.pop() else {
                return;
            };
            self.page.push(entry);
            self.sources[source].headed = false;
            self.head(source);
        }
    }

    /// Every vnode sent all it holds: the rest, each entry no smaller
    /// than the page's, is sorted at once (cheaper than merging it).
    fn sort_the_rest(&mut self) {
        let merged = self.page.len();
        let heads = self.heads.drain().map(|Reverse((entry, _))| entry);
        self.page.extend(heads);
        for s in &mut self.sources {
            s.headed = false;
            self.page.extend(s.queued.drain(..));
        }
        if self.page.len() > self.max {
            self.page[merged..].select_nth_unstable(self.max - merged);
            self.page.truncate(self.max);
        }
        self.page[merged..].sort_unstable();
    }

    /// The page, smallest first (at most `max` entries).
    pub(crate) fn finish(self) -> Vec<Entry> {
        self.page
    }

    /// Entries pulled from the vnodes so far (merged or queued).
    #[cfg(test)]
    pub(crate) fn pulled(&self) -> usize {
        let queued: usize = self.sources.iter().map(|s| s.queued.len()).sum();
        self.page.len() + queued + self.heads.len()
    }

    /// Puts vnode `source`'s smallest unmerged entry in the heap.
    fn head(&mut self, source: usize) {
        let s = &mut self.sources[source];
        if s.headed {
            return;
        }
        if let Some(next) = s.queued.pop_front() {
            s.headed = true;
            self.heads.push(Reverse((next, source)));
        }
    }
}

/// How many entries to ask a vnode holding `share` of the key space for,
/// when the page still needs `remaining`: its expected part, an eighth
/// more and three standard deviations of slack (a vnode's part of a page
/// is about binomial), so that a second round is rare; never more than
/// the page needs.
fn chunk(remaining: usize, share: f64) -> usize {
    let expected = remaining as f64 * share.clamp(0.0, 1.0);
    let slack = expected / 8.0 + 3.0 * expected.sqrt() + 8.0;
    ((expected + slack).ceil() as usize).clamp(1, remaining)
}

#[cfg(test)]
mod tests {
    use super::*;
    use eddy_vnode::index_fold::encode_entry;
    use proptest::prelude::*;

    /// Runs a merge against vnodes holding `held` (each sorted), answering
    /// each want as a vnode scan would.
    fn run(held: &[Vec<Entry>], max: usize, whole: bool) -> (Vec<Entry>, usize, usize) {
        let shares = vec![1.0 / held.len() as f64; held.len()];
        let mut merge = PageMerge::new(max, &shares, whole);
        let mut rounds = 0;
        loop {
            merge.advance();
            let wants = merge.wants();
            if wants.is_empty() {
                break;
            }
            rounds += 1;
            for w in wants {
                let chunk: Vec<Entry> = held[w.source]
                    .iter()
                    .filter(|e| w.after.as_ref().is_none_or(|(t, k)| e.parts() > (t, k)))
                    .take(w.count)
                    .cloned()
                    .collect();
                merge.take(w.source, chunk, w.count);
            }
        }
        let pulled = merge.pulled();
        (merge.finish(), rounds, pulled)
    }

    fn entry(term: u16, key: u16) -> Entry {
        Entry::new(encode_entry(&term.to_be_bytes(), &key.to_be_bytes())).unwrap()
    }

    /// Vnodes holding `(term, key)` entries, each key on one vnode by hash.
    fn spread(entries: &[(u16, u16)], vnodes: usize) -> Vec<Vec<Entry>> {
        let mut held = vec![Vec::new(); vnodes];
        for &(t, k) in entries {
            let v = (k as usize).wrapping_mul(2_654_435_761) % vnodes;
            held[v].push(entry(t, k));
        }
        held.iter_mut().for_each(|h| {
            h.sort();
            h.dedup();
        });
        held
    }

    proptest! {
        #[test]
        fn the_page_is_the_smallest_entries_of_all_vnodes(
            entries in prop::collection::vec((0u16..50, any::<u16>()), 0..600),
            vnodes in 1usize..12,
            max in 1usize..300,
            whole in any::<bool>(),
        ) {
            let held = spread(&entries, vnodes);
            let mut all: Vec<Entry> = held.iter().flatten().cloned().collect();
            all.sort();
            all.truncate(max);
            let (page, _, _) = run(&held, max, whole);
            prop_assert_eq!(page, all);
        }
    }

    #[test]
    fn a_page_pulls_about_its_own_size_in_one_round() {
        let entries: Vec<(u16, u16)> = (0..60_000u32)
            .map(|i| ((i % 1000) as u16, (i / 7) as u16))
            .collect();
        let held = spread(&entries, 22);
        let (page, rounds, pulled) = run(&held, 10_000, false);
        assert_eq!(page.len(), 10_000);
        assert_eq!(rounds, 1, "a page of even hash shares takes one round");
        assert!(
            pulled < 13_000,
            "pulled {pulled} entries for a page of 10,000"
        );
    }

    #[test]
    fn one_vnode_holding_the_whole_page_is_asked_again() {
        let mut held = vec![Vec::new(); 4];
        held[2] = (0..500).map(|k| entry(1, k)).collect();
        held[0] = vec![entry(9, 1)];
        let (page, rounds, _) = run(&held, 400, false);
        assert_eq!(page, held[2][..400].to_vec());
        assert!(rounds > 1);
    }

    #[test]
    fn whole_chunks_take_one_round() {
        let mut held = vec![Vec::new(); 4];
        held[3] = (0..500).map(|k| entry(0, k)).collect();
        let (page, rounds, _) = run(&held, 400, true);
        assert_eq!(page.len(), 400);
        assert_eq!(rounds, 1);
    }
}
