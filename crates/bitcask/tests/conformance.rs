//! Bitcask against the shared conformance suite, with small files so that
//! rollover, hint files and merges all happen.

mod common;

use common::{MergeOnOpen, SmallFiles};
use eddy_storage::testkit::run_conformance;

#[test]
fn conforms_with_small_files() {
    run_conformance(&SmallFiles::default());
}

#[test]
fn conforms_with_compression_and_background_merge() {
    run_conformance(&SmallFiles {
        compression: true,
        merge_check_interval_ms: 5,
        max_file_size_bytes: 4096,
        ..SmallFiles::default()
    });
}

#[test]
fn conforms_when_merging_at_every_open() {
    run_conformance(&MergeOnOpen(SmallFiles {
        max_file_size_bytes: 4096,
        ..SmallFiles::default()
    }));
}
