//! Facts about the machine the generator ran on, read from `/proc` (empty
//! where a file is missing: the report never fails for want of a fact).

use serde::{Deserialize, Serialize};

/// What `machine.txt` and `summary.json` say about the machine.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineFacts {
    pub hostname: String,
    pub nproc: usize,
    pub memory_gib: f64,
    pub kernel: String,
    pub cpu_model: String,
    /// The 1, 5 and 15 minute load averages when the run started.
    pub load_average: String,
    /// The version of the tool (the `eddy` binary) that ran the bench.
    pub tool_version: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The value of the first `name: value` line of `text`.
fn field(text: &str, name: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == name)
        .map(|(_, v)| v.trim().to_string())
}

impl MachineFacts {
    /// This machine's facts now.
    pub fn collect(tool_version: &str) -> MachineFacts {
        let mem_kib: f64 = field(&read("/proc/meminfo"), "MemTotal")
            .and_then(|v| v.trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        MachineFacts {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            nproc: std::thread::available_parallelism().map_or(0, std::num::NonZeroUsize::get),
            memory_gib: (mem_kib / (1024.0 * 1024.0) * 10.0).round() / 10.0,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            cpu_model: field(&read("/proc/cpuinfo"), "model name").unwrap_or_default(),
            load_average: read("/proc/loadavg")
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            tool_version: tool_version.to_string(),
        }
    }

    /// One line for the text report.
    pub fn one_line(&self) -> String {
        format!(
            "machine: {} cores ({}), {} GiB, kernel {}, load {}, eddy {}",
            self.nproc,
            self.cpu_model,
            self.memory_gib,
            self.kernel,
            self.load_average,
            self.tool_version
        )
    }

    /// `machine.txt`: one `name: value` line per fact.
    pub fn to_text(&self) -> String {
        format!(
            "hostname: {}\nnproc: {}\nmemory: {} GiB\nkernel: {}\ncpu: {}\nload average: {}\neddy: {}\n",
            self.hostname,
            self.nproc,
            self.memory_gib,
            self.kernel,
            self.cpu_model,
            self.load_average,
            self.tool_version
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_found_by_name() {
        let text = "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\n";
        assert_eq!(
            field(text, "model name").as_deref(),
            Some("Some CPU @ 2.0GHz")
        );
        assert_eq!(field(text, "flags"), None);
    }

    #[test]
    fn this_machine_has_cores_and_memory() {
        let m = MachineFacts::collect("0.1.0");
        assert!(m.nproc >= 1);
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(m.memory_gib > 0.0, "{m:?}");
        }
        assert!(m.to_text().contains("eddy: 0.1.0"));
    }
}
