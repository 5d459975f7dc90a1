//! Building the effective configuration: defaults, then the file, then
//! `EDDY_*` environment variables; the texts are then read once by serde
//! into the [`Schema`] ([`super::de`]), which refuses any value that does
//! not fit its setting, and turned into [`Settings`] ([`super::build`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::de::{self, DeError};
use super::schema::{self, SETTINGS, Schema};
use super::settings::Settings;

/// Where an effective value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Env(String),
}

/// A configuration that could not be used, naming the setting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("config file {path} is not valid TOML: {reason}")]
    Syntax { path: PathBuf, reason: String },
    /// A name that is not a setting.
    #[error("unknown setting {name:?} in {origin}")]
    Unknown { name: String, origin: String },
    /// A value that does not fit its setting.
    #[error("setting {name} ({origin}): {reason}")]
    Invalid {
        name: &'static str,
        origin: String,
        reason: String,
    },
    /// The schema refused the settings without naming one (a bug: every
    /// refusal of a value names its setting).
    #[error("{0}")]
    Schema(DeError),
}

/// The loaded configuration: every setting's effective text and its
/// source (for `eddy config show` and error messages), and the same values
/// parsed once into [`Settings`].
#[derive(Clone, Debug)]
pub struct Config {
    raw: Raw,
    settings: Settings,
}

/// Every setting's effective text and its source.
#[derive(Clone, Debug)]
struct Raw {
    values: BTreeMap<&'static str, (String, Source)>,
}

impl Config {
    /// Loads the configuration: `file` if given, else `./eddy.toml` if it
    /// exists; then the `EDDY_*` variables of `env`.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut values: BTreeMap<&'static str, (String, Source)> = SETTINGS
            .iter()
            .map(|s| (s.name, (s.default.to_string(), Source::Default)))
            .collect();
        let default_file = Path::new("eddy.toml");
        let file = file.or(default_file.exists().then_some(default_file));
        if let Some(path) = file {
            for (name, value) in read_file(path)? {
                let setting = schema::find(&name).ok_or_else(|| ConfigError::Unknown {
                    name: name.clone(),
                    origin: path.display().to_string(),
                })?;
                values.insert(setting.name, (value, Source::File(path.to_path_buf())));
            }
        }
        let env: BTreeMap<String, String> = env.into_iter().collect();
        for setting in SETTINGS {
            let var = schema::env_name(setting.name);
            if let Some(value) = env.get(&var) {
                values.insert(setting.name, (value.clone(), Source::Env(var)));
            }
        }
        let raw = Raw { values };
        let schema = raw.schema()?;
        let settings = Settings::from(&schema);
        Ok(Config { raw, settings })
    }

    /// The typed settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// `eddy config show`: every setting with its meaning (as a riak.conf
    /// `##` comment), its value, and where the value came from.
    pub fn show(&self) -> String {
        let mut out = String::new();
        for setting in SETTINGS {
            let (value, source) = &self.raw.values[setting.name];
            let from = match source {
                Source::Default => "default".to_string(),
                Source::File(p) => format!("file {}", p.display()),
                Source::Env(v) => format!("env {v}"),
            };
            let _ = writeln!(
                out,
                "## {}\n{} = {}  # {}",
                setting.doc(),
                setting.name,
                value,
                from
            );
        }
        out
    }
}

impl Raw {
    /// Reads every text as its setting's type; the first that does not
    /// fit is the error, naming the setting and where its value came from.
    fn schema(&self) -> Result<Schema, ConfigError> {
        let entries = self
            .values
            .iter()
            .map(|(name, (text, _))| (*name, text.as_str()))
            .collect();
        Schema::deserialize(de::Settings::new(entries)).map_err(|e| self.invalid(e))
    }

    fn invalid(&self, e: DeError) -> ConfigError {
        let setting = e.setting.as_deref().and_then(schema::find);
        match setting {
            Some(setting) => ConfigError::Invalid {
                name: setting.name,
                origin: origin(&self.values[setting.name].1),
                reason: e.reason,
            },
            None => ConfigError::Schema(e),
        }
    }
}

fn origin(source: &Source) -> String {
    match source {
        Source::Default => "default".to_string(),
        Source::File(p) => format!("from {}", p.display()),
        Source::Env(v) => format!("from {v}"),
    }
}

/// Reads a TOML file into dotted names and text values. Nested tables
/// flatten into dotted names, so riak.conf-style lines
/// (`listener.http.internal = "127.0.0.1:8098"`) are valid TOML as they are.
fn read_file(path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::Syntax {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    let mut out = Vec::new();
    flatten("", &table, &mut out);
    Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_file_then_env() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("eddy.toml");
        std::fs::write(&file, "ring_size = 128\nlistener.http.internal = \"127.0.0.1:9000\"\n[bitcask]\ncompression = true\n").unwrap();
        let vars = env(&[
            ("EDDY_LISTENER_HTTP_INTERNAL", "127.0.0.1:9100"),
            ("PATH", "/bin"),
        ]);
        let c = Config::load(Some(&file), vars).unwrap();
        let s = c.settings();
        assert_eq!(s.node.ring_size, 128);
        assert_eq!(s.listeners.http.to_string(), "127.0.0.1:9100");
        assert!(s.storage.bitcask.compression);
        assert_eq!(s.listeners.protobuf.to_string(), "127.0.0.1:8087");
        assert_eq!(s.objects.size_max_bytes, 50 << 20);
        let shown = c.show();
        assert!(shown.contains(
            "listener.http.internal = 127.0.0.1:9100  # env EDDY_LISTENER_HTTP_INTERNAL"
        ));
        assert!(shown.contains("ring_size = 128  # file"));
    }

    #[test]
    fn show_prints_each_setting_as_a_riak_conf_line_with_its_meaning() {
        let shown = Config::load(None, env(&[])).unwrap().show();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 2 * SETTINGS.len());
        assert_eq!(
            lines[..4],
            [
                "## This node's name, name@host.",
                "nodename = eddy@127.0.0.1  # default",
                "## Address of the HTTP API.",
                "listener.http.internal = 127.0.0.1:8098  # default",
            ]
        );
        assert!(shown.contains(
            "## Repair partitions whose files were found damaged at start (auto), or wait for `eddy admin repair` (manual).\npartition_repair = auto  # default\n"
        ));
    }

    #[test]
    fn bad_config_names_the_setting() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("eddy.toml");
        std::fs::write(&file, "ring_size = 63\n").unwrap();
        let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
        assert!(
            err.contains("ring_size") && err.contains("power of two"),
            "{err}"
        );
        std::fs::write(&file, "ring_sise = 64\n").unwrap();
        let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
        assert!(err.contains("unknown setting \"ring_sise\""), "{err}");
        std::fs::write(&file, "ring_size = [\n").unwrap();
        assert!(matches!(
            Config::load(Some(&file), env(&[])),
            Err(ConfigError::Syntax { .. })
        ));
        let vars = env(&[("EDDY_STORAGE_BACKEND", "leveldb")]);
        let err = Config::load(None, vars).unwrap_err().to_string();
        assert!(
            err.contains("storage_backend") && err.contains("EDDY_STORAGE_BACKEND"),
            "{err}"
        );
        let vars = env(&[("EDDY_BUCKETS_DEFAULT_R", "most")]);
        assert!(Config::load(None, vars).is_err());
        // An unknown word is refused, not taken for the default, and the
        // error lists the words the setting takes (as cuttlefish does).
        std::fs::write(&file, "storage_backend = \"leveldb\"\n").unwrap();
        let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
        assert!(
            err.contains("storage_backend")
                && err.contains("\"leveldb\" is not one of bitcask, lsm, memory, multi"),
            "{err}"
        );
        let vars = env(&[("EDDY_BITCASK_MERGE_POLICY", "sometimes")]);
        let err = Config::load(None, vars).unwrap_err().to_string();
        assert!(err.contains("always, never, window"), "{err}");
        let missing = dir.path().join("nope.toml");
        assert!(matches!(
            Config::load(Some(&missing), env(&[])),
            Err(ConfigError::Read { .. })
        ));
    }
}
