//! The node's log: stderr, a file rotated by size (Riak's
//! `log/console.log`), both, or neither, as `log.console` says; filtered by
//! `log.level` (or `EDDY_LOG`, a tracing filter, which overrides it).
//!
//! Rotation is by size, as Riak's lager rotates `console.log`: when a write
//! would take the file past `log.console.size`, `console.log.N-2` becomes
//! `console.log.N-1` and so on down, `console.log` becomes `console.log.0`,
//! and a fresh `console.log` is opened; `log.console.rotation.keep` (N)
//! rotated files are kept. Written by hand (design note 022):
//! tracing-appender rotates by time and names its files by date.
//!
//! A log write that fails (a full disk) is dropped: the node's own log
//! must never touch a request.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::settings::{LogConsole, LogSettings};

/// Installs the node's log as `settings` say.
pub fn init(settings: &LogSettings) -> Result<(), String> {
    let filter = EnvFilter::try_from_env("EDDY_LOG")
        .unwrap_or_else(|_| EnvFilter::new(settings.level.name()));
    let console = matches!(settings.console, LogConsole::Console | LogConsole::Both);
    let to_file = matches!(settings.console, LogConsole::File | LogConsole::Both);
    let stderr = console.then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(io::stderr)
            .with_ansi(io::IsTerminal::is_terminal(&io::stderr()))
            .log_internal_errors(false)
    });
    let file = match to_file {
        true => {
            let rotating = RotatingFile::open(&settings.file, settings.size_bytes, settings.keep)
                .map_err(|e| {
                format!(
                    "cannot open the log file {} (log.console.file): {e}; \
                         set log.console = console to log to stderr only",
                    settings.file.display()
                )
            })?;
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(rotating)
                    .with_ansi(false)
                    .log_internal_errors(false),
            )
        }
        false => None,
    };
    tracing_subscriber::registry()
        .with(stderr.map(|l| l.with_filter(filter.clone())))
        .with(file.map(|l| l.with_filter(filter)))
        .init();
    Ok(())
}

/// A log file that rotates by size; one writer at a time.
pub struct RotatingFile {
    inner: Mutex<Rotation>,
}

struct Rotation {
    path: PathBuf,
    file: File,
    written: u64,
    size_max: u64,
    keep: u32,
}

impl RotatingFile {
    /// Opens (appending to) `path`, creating its directory; rotates
    /// beyond `size_max` bytes, keeping `keep` rotated files.
    pub fn open(path: &Path, size_max: u64, keep: u32) -> io::Result<RotatingFile> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = append(path)?;
        let written = file.metadata()?.len();
        Ok(RotatingFile {
            inner: Mutex::new(Rotation {
                path: path.to_path_buf(),
                file,
                written,
                size_max: size_max.max(1),
                keep,
            }),
        })
    }
}

fn append(path: &Path) -> io::Result<File> {
    File::options().create(true).append(true).open(path)
}

impl Rotation {
    fn rotated(&self, n: u32) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(format!(".{n}"));
        name.into()
    }

    /// Moves every file up one place and opens a fresh one.
    fn rotate(&mut self) -> io::Result<()> {
        if self.keep == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            for n in (0..self.keep - 1).rev() {
                let from = self.rotated(n);
                if from.exists() {
                    std::fs::rename(&from, self.rotated(n + 1))?;
                }
            }
            std::fs::rename(&self.path, self.rotated(0))?;
        }
        self.file = append(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for Rotation {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let len = buf.len() as u64;
        if self.written > 0 && self.written + len > self.size_max {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// The writer one event is written with: the locked file.
pub struct Guard<'a>(MutexGuard<'a, Rotation>);

impl Write for Guard<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<'a> MakeWriter<'a> for RotatingFile {
    type Writer = Guard<'a>;

    fn make_writer(&'a self) -> Guard<'a> {
        Guard(self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_lines(file: &RotatingFile, lines: &[&str]) {
        for line in lines {
            file.make_writer().write_all(line.as_bytes()).unwrap();
        }
    }

    #[test]
    fn a_file_past_its_size_moves_to_dot_zero_and_older_ones_move_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log").join("console.log");
        let file = RotatingFile::open(&path, 10, 2).unwrap();
        write_lines(&file, &["aaaaaa\n", "bbbbbb\n", "cccccc\n", "dddddd\n"]);
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
        assert_eq!(read(path.clone()), "dddddd\n");
        assert_eq!(read(dir.path().join("log/console.log.0")), "cccccc\n");
        assert_eq!(read(dir.path().join("log/console.log.1")), "bbbbbb\n");
        assert!(
            !dir.path().join("log/console.log.2").exists(),
            "only `keep` rotated files are kept"
        );
    }

    #[test]
    fn a_reopened_file_counts_what_it_already_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        write_lines(&RotatingFile::open(&path, 10, 1).unwrap(), &["aaaaaa\n"]);
        write_lines(&RotatingFile::open(&path, 10, 1).unwrap(), &["bbbbbb\n"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "bbbbbb\n");
        let rotated = dir.path().join("console.log.0");
        assert_eq!(std::fs::read_to_string(rotated).unwrap(), "aaaaaa\n");
    }

    #[test]
    fn keep_zero_keeps_only_the_current_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console.log");
        let file = RotatingFile::open(&path, 4, 0).unwrap();
        write_lines(&file, &["aaaa", "bbbb"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "bbbb");
        assert!(!dir.path().join("console.log.0").exists());
    }
}
