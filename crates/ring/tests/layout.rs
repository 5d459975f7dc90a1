//! The full layout and the spacing bound, checked exhaustively over every
//! ring size, 1–64 members and target_n_val 1–6, and against brute force on
//! small rings.

use std::collections::HashSet;

use eddy_ring::claim::{is_spaced, layout, next_same_distance, spacing, windows_with_repeat};

const SIZES: [u32; 8] = [8, 16, 32, 64, 128, 256, 512, 1024];

fn counts(owners: &[usize], m: usize) -> Vec<usize> {
    let mut c = vec![0; m];
    for &o in owners {
        c[o] += 1;
    }
    c
}

/// Windows of `w` with a repeated owner, counted the slow way.
fn bad_windows_model(owners: &[usize], w: usize) -> usize {
    let len = owners.len();
    (0..len)
        .filter(|&s| {
            (0..w)
                .map(|i| owners[(s + i) % len])
                .collect::<HashSet<_>>()
                .len()
                < w
        })
        .count()
}

#[test]
fn layout_is_balanced_and_as_spaced_as_possible() {
    for size in SIZES {
        for m in 1..=64u32 {
            let owners = layout(size, m);
            assert_eq!(owners.len(), size as usize);
            let (q, r) = (size / m, size % m);
            for c in counts(&owners, m as usize) {
                assert!(c == q as usize || c == q as usize + 1, "size {size} m {m}");
            }
            for t in 1..=6 {
                let w = spacing(size, m, t);
                assert!(is_spaced(&owners, w as usize), "size {size} m {m} t {t}");
                if w < t.min(m) {
                    // Short of the target only where no balanced ring can do
                    // better: a member with q + 1 partitions would need
                    // q + 1 gaps of w + 1 in a ring of `size`.
                    assert!(r > 0 && (q + 1) * (w + 1) > size, "size {size} m {m} t {t}");
                }
            }
        }
    }
}

#[test]
fn target_n_val_4_holds_for_every_ring_of_64_or_more_but_three_nodes() {
    for size in SIZES.into_iter().filter(|&s| s >= 64) {
        for m in 1..=64u32 {
            let w = spacing(size, m, 4);
            if m == 3 {
                // 3 does not divide a power of two: the two runs of three
                // that repeat an owner are the fewest possible.
                assert_eq!(w, 2);
                let owners = layout(size, m);
                assert_eq!(windows_with_repeat(&owners, 3), 2);
            } else {
                assert_eq!(w, m.min(4), "size {size} m {m}");
            }
        }
    }
}

/// With m ≤ target_n_val and m not dividing the size, every run of m - 1 is
/// distinct and exactly r·(m - r) runs of m repeat an owner (each once),
/// the least possible given the first (docs/design/011-claim.md).
#[test]
fn short_rings_repeat_in_the_fewest_runs() {
    for size in 8..=300u32 {
        for m in 2..=8u32 {
            let (q, r) = (size / m, size % m);
            if r == 0 || q + r < m - 1 {
                continue;
            }
            let owners = layout(size, m);
            assert_eq!(spacing(size, m, m), m - 1);
            assert!(is_spaced(&owners, m as usize - 1));
            assert_eq!(
                windows_with_repeat(&owners, m as usize),
                (r * (m - r)) as usize
            );
        }
    }
}

#[test]
fn window_counts_match_the_slow_count() {
    for size in [8u32, 13, 64, 100] {
        for m in 1..=12u32 {
            let owners = layout(size, m);
            for w in 1..=m as usize + 2 {
                assert_eq!(
                    windows_with_repeat(&owners, w),
                    bad_windows_model(&owners, w)
                );
            }
            let dist = next_same_distance(&owners);
            for (i, d) in dist.iter().enumerate() {
                let len = owners.len();
                let model = (1..=len)
                    .find(|&k| owners[(i + k) % len] == owners[i])
                    .unwrap_or(len);
                assert_eq!(*d, model);
            }
        }
    }
}

/// Every balanced sequence over m symbols, by brute force.
fn balanced_sequences(size: usize, m: usize) -> Vec<Vec<usize>> {
    let (q, r) = (size / m, size % m);
    let mut out = Vec::new();
    let total = m.pow(size as u32);
    for mut code in 0..total {
        let seq: Vec<usize> = (0..size)
            .map(|_| {
                let d = code % m;
                code /= m;
                d
            })
            .collect();
        let c = counts(&seq, m);
        if c.iter().all(|&k| k == q || k == q + 1) && c.iter().filter(|&&k| k == q + 1).count() == r
        {
            out.push(seq);
        }
    }
    out
}

#[test]
fn spacing_is_the_best_any_balanced_ring_has() {
    for (size, m) in [(7, 3), (8, 3), (7, 4), (6, 4), (7, 5), (9, 2), (6, 5)] {
        let all = balanced_sequences(size, m);
        for t in 1..=m as u32 + 1 {
            let w = spacing(size as u32, m as u32, t) as usize;
            let best = all
                .iter()
                .map(|s| {
                    (1..=t as usize)
                        .rev()
                        .find(|&w| is_spaced(s, w))
                        .unwrap_or(1)
                })
                .max()
                .unwrap();
            assert_eq!(w, best, "size {size} m {m} t {t}");
            if w + 1 == m && w < t as usize {
                let fewest = all
                    .iter()
                    .filter(|s| is_spaced(s, w))
                    .map(|s| windows_with_repeat(s, m))
                    .min()
                    .unwrap();
                assert_eq!(
                    windows_with_repeat(&layout(size as u32, m as u32), m),
                    fewest
                );
            }
        }
    }
}
