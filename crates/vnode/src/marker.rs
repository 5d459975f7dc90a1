//! The durable damage marker: `<partitions_dir>/<P>/repair-needed`.
//!
//! Written (and fsynced, with its directory) when a partition's recovery
//! lost records; it holds a human-readable copy of the recovery report.
//! Its presence at start marks the partition again, so a repair that did
//! not finish before a restart is not forgotten.

use std::io::Write;
use std::path::{Path, PathBuf};

use eddy_ring::Partition;
use eddy_storage::RecoveryReport;

/// The marker's file name inside a partition's directory.
pub const MARKER_FILE: &str = "repair-needed";

/// Beside the marker: the report whose damage a finished repair covered.
/// Damage a backend cannot erase (a skipped range stays in its data file
/// until a merge) is reported again at the next open; when that report is
/// the one repaired, the partition is not marked again.
pub const REPAIRED_FILE: &str = "repaired-damage";

/// Where partition `p`'s marker lives under `partitions_dir`.
pub fn path(partitions_dir: &Path, p: Partition) -> PathBuf {
    partitions_dir.join(p.0.to_string()).join(MARKER_FILE)
}

/// Writes the marker at `path`, describing `report`, durably.
pub fn write(path: &Path, report: &RecoveryReport) -> std::io::Result<()> {
    write_report(path, report)
}

/// True when `report` shows lost records that neither a marker (`path`
/// exists: already marked) nor a finished repair covers: the partition is
/// to be marked, and its vnode needs a fresh actor.
pub fn newly_damaged(path: Option<&Path>, report: &RecoveryReport) -> bool {
    report.lost_records() && !path.is_some_and(|p| p.exists() || already_repaired(p, report))
}

/// True when `report` is the damage a finished repair of the partition
/// whose marker is `path` already covered.
pub fn already_repaired(path: &Path, report: &RecoveryReport) -> bool {
    let repaired = path.with_file_name(REPAIRED_FILE);
    std::fs::read_to_string(repaired).is_ok_and(|text| text == render(report))
}

/// Records `report` as repaired, then removes the marker at `path` (if
/// present), each durably.
pub fn clear(path: &Path, report: &RecoveryReport) -> std::io::Result<()> {
    if report.lost_records() {
        write_report(&path.with_file_name(REPAIRED_FILE), report)?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => sync_dir(path.parent().unwrap_or(Path::new("."))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

fn render(report: &RecoveryReport) -> String {
    let mut text = describe(report);
    text.push('\n');
    for f in &report.files {
        text.push_str(&format!("file {}\n", f.display()));
    }
    text
}

fn write_report(path: &Path, report: &RecoveryReport) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = std::fs::File::create(path)?;
    file.write_all(render(report).as_bytes())?;
    file.sync_all()?;
    sync_dir(dir)
}

/// One line of counts, as logged and written into the marker.
pub fn describe(r: &RecoveryReport) -> String {
    format!(
        "ranges_skipped={} bytes_skipped={} tails_truncated={} bytes_truncated={} files_rejected={} hints_rejected={}",
        r.ranges_skipped,
        r.bytes_skipped,
        r.tails_truncated,
        r.bytes_truncated,
        r.files_rejected,
        r.hints_rejected
    )
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_is_written_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), Partition(7));
        let report = RecoveryReport {
            tails_truncated: 1,
            files: vec!["x.data".into()],
            ..RecoveryReport::default()
        };
        write(&p, &report).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("tails_truncated=1") && text.contains("file x.data"));
        assert!(!already_repaired(&p, &report));
        clear(&p, &report).unwrap();
        assert!(!p.exists());
        assert!(already_repaired(&p, &report));
        clear(&p, &report).unwrap();
    }
}
