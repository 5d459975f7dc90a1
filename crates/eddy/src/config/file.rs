//! Reading a configuration file into `(setting name, text)` pairs. A file
//! is TOML (`eddy.toml`: nested tables flatten into dotted names, so
//! `listener.http.internal = "127.0.0.1:8098"` is valid as it is) or, when
//! it is not valid TOML, riak.conf's own syntax: one `name = value` a line,
//! the value unquoted, `#` starting a comment line. So a Riak operator's
//! lines (`listener.http.internal = 127.0.0.1:8098`) work as written.

use std::path::{Path, PathBuf};

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is neither TOML nor riak.conf lines.
    #[error(
        "config file {path} is neither TOML nor riak.conf lines: line {line}: {reason}; \
         write one setting a line, `name = value` (riak.conf: \
         `listener.http.internal = 127.0.0.1:8098`) or as TOML, quoting text \
         (`listener.http.internal = \"127.0.0.1:8098\"`); as TOML: {toml}"
    )]
    Syntax {
        path: PathBuf,
        line: usize,
        reason: String,
        toml: String,
    },
}

/// Reads `path`: TOML, else riak.conf lines.
pub fn read(path: &Path) -> Result<Vec<(String, String)>, FileError> {
    let text = std::fs::read_to_string(path).map_err(|source| FileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let toml_error = match text.parse::<toml::Table>() {
        Ok(table) => {
            let mut out = Vec::new();
            flatten("", &table, &mut out);
            return Ok(out);
        }
        Err(e) => e.to_string(),
    };
    riak_conf(&text).map_err(|(line, reason)| FileError::Syntax {
        path: path.to_path_buf(),
        line,
        reason,
        toml: toml_error.lines().next().unwrap_or_default().to_string(),
    })
}

fn flatten(prefix: &str, table: &toml::Table, out: &mut Vec<(String, String)>) {
    for (k, v) in table {
        let name = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        let text = match v {
            toml::Value::Table(t) => {
                flatten(&name, t, out);
                continue;
            }
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            other => other.to_string(),
        };
        out.push((name, text));
    }
}

/// Parses riak.conf lines; an error is `(line number, reason)`.
fn riak_conf(text: &str) -> Result<Vec<(String, String)>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            return Err((i + 1, format!("{line:?} is not `name = value`")));
        };
        let name = name.trim();
        let name_ok = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        if !name_ok {
            return Err((i + 1, format!("{name:?} is not a setting's name")));
        }
        out.push((name.to_string(), unquote(value.trim())));
    }
    Ok(out)
}

/// A value as written, or the text inside double quotes (so a line copied
/// from an `eddy.toml` reads the same in a riak.conf-style file).
fn unquote(value: &str) -> String {
    match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) => inner.to_string(),
        None => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<Vec<(String, String)>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("riak.conf");
        std::fs::write(&path, text).unwrap();
        read(&path).map_err(|e| e.to_string())
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn riak_conf_lines_are_read_as_written() {
        let text = "## The HTTP listener.\n\
                    listener.http.internal = 127.0.0.1:8098\n\
                    \n\
                    # storage_backend = lsm\n\
                    storage_backend=bitcask\n\
                    nodename = \"eddy@10.0.0.1\"\n\
                    object.size.maximum = 50MB   \n";
        assert_eq!(
            read_text(text).unwrap(),
            pairs(&[
                ("listener.http.internal", "127.0.0.1:8098"),
                ("storage_backend", "bitcask"),
                ("nodename", "eddy@10.0.0.1"),
                ("object.size.maximum", "50MB"),
            ])
        );
    }

    #[test]
    fn toml_tables_flatten_into_dotted_names() {
        let text = "ring_size = 128\n[bitcask]\ncompression = true\nmax_file_size = \"1GB\"\n";
        assert_eq!(
            read_text(text).unwrap(),
            pairs(&[
                ("bitcask.compression", "on"),
                ("bitcask.max_file_size", "1GB"),
                ("ring_size", "128"),
            ])
        );
    }

    #[test]
    fn a_file_of_neither_syntax_says_how_to_write_a_value() {
        let err = read_text("[bitcask]\nmax_file_size = 1 GB\n").unwrap_err();
        assert!(
            err.contains("line 1")
                && err.contains("name = value")
                && err.contains("listener.http.internal = \"127.0.0.1:8098\""),
            "{err}"
        );
        let err = read_text("ring size = 64\n").unwrap_err();
        assert!(
            err.contains("\"ring size\" is not a setting's name"),
            "{err}"
        );
    }
}
