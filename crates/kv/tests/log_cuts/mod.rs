//! The cuts of a commit log a crash could leave, for the crash tests:
//! after each record, the segments before it whole, its own up to the end
//! of that record (zeros after, as an allocated segment is), none after.

use std::path::{Path, PathBuf};

use eddy_vnode::commitlog;

/// Every cut of the log in `log`: the segments before it whole, its own
/// up to the end of a record (zeros after), none after. Writes each into
/// a directory of its own and returns them.
pub fn cuts(log: &Path, into: &Path) -> Vec<PathBuf> {
    let seqs = commitlog::segment::list(log).unwrap();
    let files: Vec<Vec<u8>> = seqs
        .iter()
        .map(|s| std::fs::read(commitlog::segment::path(log, *s)).unwrap())
        .collect();
    let mut ends = Vec::new();
    for (i, bytes) in files.iter().enumerate() {
        commitlog::segment::read(bytes, |offset, e| {
            let mut frame = Vec::new();
            e.encode_into(&mut frame);
            ends.push((i, offset + frame.len()));
        });
    }
    let mut dirs = Vec::new();
    for (n, (i, end)) in ends.iter().enumerate() {
        let cut = into.join(format!("cut{n}"));
        std::fs::create_dir_all(&cut).unwrap();
        for (j, bytes) in files.iter().enumerate().take(i + 1) {
            let mut kept = bytes.clone();
            if j == *i {
                kept[*end..].fill(0);
            }
            std::fs::write(commitlog::segment::path(&cut, seqs[j]), &kept).unwrap();
        }
        dirs.push(cut);
    }
    dirs
}
