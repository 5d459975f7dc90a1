//! `transfers`' "Active Transfers:" section: what the answering node is
//! sending and receiving now, one block per transfer as `riak admin
//! transfers` prints it (type, partition, elapsed time, objects moved, rate,
//! and the direction arrow between the two nodes).

use std::fmt::Write;

use super::q;
use crate::admin::views::{ActiveTransfer, InboundTransfer};

/// Appends the section, or nothing when no transfer is running here.
pub(super) fn section(out: &mut String, active: &[ActiveTransfer], inbound: &[InboundTransfer]) {
    if active.is_empty() && inbound.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str("Active Transfers:\n");
    for t in active {
        sending(out, t);
    }
    for t in inbound {
        receiving(out, t);
    }
}

fn sending(out: &mut String, t: &ActiveTransfer) {
    let secs = t.elapsed_ms as f64 / 1000.0;
    let _ = write!(
        out,
        "\ntransfer type: {}\nvnode type: eddy_kv_vnode\npartition: {}\nstarted: [{secs:.2} s ago]\n\
         objects transferred: {} ({})\n",
        t.kind,
        t.partition,
        t.objects,
        size(t.bytes),
    );
    if t.resumes > 0 {
        let last = t.last_error.as_deref().unwrap_or("-");
        let _ = writeln!(out, "resumed: {} times (last error: {last})", t.resumes);
    }
    let _ = writeln!(out, "{:>25}/s", size(t.bytes_per_sec));
    arrow(out, &t.from, &t.to);
}

fn receiving(out: &mut String, t: &InboundTransfer) {
    let _ = write!(
        out,
        "\ntransfer type: inbound\nvnode type: eddy_kv_vnode\npartition: {}\n\
         objects received: {} in {} batches\n",
        t.partition, t.objects, t.batches,
    );
    arrow(out, &t.from, &t.to);
}

fn arrow(out: &mut String, from: &str, to: &str) {
    let _ = writeln!(out, "     {}        =======>       {}", q(from), q(to));
}

/// Bytes as Riak's transfer rates print them: B, KB, MB, GB (powers of 1024).
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_the_largest_unit_below_1024() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1536), "1.50 KB");
        assert_eq!(size(5 * 1024 * 1024), "5.00 MB");
        assert_eq!(size(3 << 30), "3.00 GB");
    }

    #[test]
    fn a_running_transfer_shows_type_partition_counts_rate_and_direction() {
        let mut out = String::new();
        let t = ActiveTransfer {
            kind: "ownership_transfer".into(),
            partition: 7,
            from: "a@h".into(),
            to: "b@h".into(),
            objects: 1200,
            bytes: 2 * 1024 * 1024,
            resumes: 1,
            last_error: Some("connection reset".into()),
            elapsed_ms: 2500,
            bytes_per_sec: 512 * 1024,
        };
        let i = InboundTransfer {
            partition: 9,
            from: "c@h".into(),
            to: "a@h".into(),
            batches: 3,
            objects: 40,
        };
        section(&mut out, &[t], &[i]);
        for line in [
            "Active Transfers:",
            "transfer type: ownership_transfer",
            "partition: 7",
            "started: [2.50 s ago]",
            "objects transferred: 1200 (2.00 MB)",
            "resumed: 1 times (last error: connection reset)",
            "512.00 KB/s",
            "'a@h'        =======>       'b@h'",
            "transfer type: inbound",
            "partition: 9",
            "objects received: 40 in 3 batches",
            "'c@h'        =======>       'a@h'",
        ] {
            assert!(out.contains(line), "{line:?} missing from:\n{out}");
        }
    }

    #[test]
    fn nothing_running_adds_nothing() {
        let mut out = String::new();
        section(&mut out, &[], &[]);
        assert!(out.is_empty());
    }
}
