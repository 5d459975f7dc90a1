//! Building the effective configuration: defaults, then the file, then
//! `EDDY_*` environment variables, each value checked against its kind.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::schema::{self, SETTINGS, Setting};
use super::values;

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
}

/// Every setting's effective value and its source.
#[derive(Clone, Debug)]
pub struct Config {
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
        let config = Config { values };
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        for setting in SETTINGS {
            let (value, source) = &self.values[setting.name];
            values::check(setting.kind, value)
                .map_err(|reason| invalid(setting, source, reason))?;
        }
        self.cross_checks()
    }

    /// Rules that involve a value's meaning beyond its kind.
    fn cross_checks(&self) -> Result<(), ConfigError> {
        let ring = self.int("ring_size");
        if !ring.is_power_of_two() || !(8..=1024).contains(&ring) {
            return Err(self.invalid("ring_size", "must be a power of two between 8 and 1024"));
        }
        if self.int("buckets.default.n_val") == 0 {
            return Err(self.invalid("buckets.default.n_val", "must be at least 1"));
        }
        for hour in ["bitcask.merge.window.start", "bitcask.merge.window.end"] {
            if self.int(hour) > 23 {
                return Err(self.invalid(hour, "must be an hour from 0 to 23"));
            }
        }
        if !self.text("nodename").contains('@') {
            return Err(self.invalid("nodename", "must look like name@host"));
        }
        Ok(())
    }

    fn invalid(&self, name: &'static str, reason: &str) -> ConfigError {
        let setting = schema::find(name).expect("known setting");
        invalid(setting, &self.values[name].1, reason.to_string())
    }

    /// The text of a setting.
    pub fn text(&self, name: &str) -> &str {
        &self
            .values
            .get(name)
            .unwrap_or_else(|| panic!("no setting {name}"))
            .0
    }

    /// An integer setting (validated at load).
    pub fn int(&self, name: &str) -> u64 {
        self.text(name).trim().parse().unwrap_or(0)
    }

    /// A byte-size setting (validated at load).
    pub fn bytes(&self, name: &str) -> u64 {
        values::bytes(self.text(name)).unwrap_or(0)
    }

    /// A duration setting in milliseconds, `None` for a word such as `off`.
    pub fn duration_ms(&self, name: &str) -> Option<u64> {
        values::duration_ms(self.text(name)).ok()
    }

    /// An on/off setting.
    pub fn flag(&self, name: &str) -> bool {
        values::flag(self.text(name)).unwrap_or(false)
    }

    /// `eddy config show`: every setting with its meaning (as a riak.conf
    /// `##` comment), its value, and where the value came from.
    pub fn show(&self) -> String {
        let mut out = String::new();
        for setting in SETTINGS {
            let (value, source) = &self.values[setting.name];
            let from = match source {
                Source::Default => "default".to_string(),
                Source::File(p) => format!("file {}", p.display()),
                Source::Env(v) => format!("env {v}"),
            };
            let _ = writeln!(
                out,
                "## {}\n{} = {}  # {}",
                setting.doc, setting.name, value, from
            );
        }
        out
    }
}

fn invalid(setting: &Setting, source: &Source, reason: String) -> ConfigError {
    let origin = match source {
        Source::Default => "default".to_string(),
        Source::File(p) => format!("from {}", p.display()),
        Source::Env(v) => format!("from {v}"),
    };
    ConfigError::Invalid {
        name: setting.name,
        origin,
        reason,
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
        assert_eq!(c.int("ring_size"), 128);
        assert_eq!(c.text("listener.http.internal"), "127.0.0.1:9100");
        assert!(c.flag("bitcask.compression"));
        assert_eq!(c.text("listener.protobuf.internal"), "127.0.0.1:8087");
        assert_eq!(c.bytes("object.size.maximum"), 50 << 20);
        let shown = c.show();
        assert!(shown.contains(
            "listener.http.internal = 127.0.0.1:9100  # env EDDY_LISTENER_HTTP_INTERNAL"
        ));
        assert!(shown.contains("ring_size = 128  # file"));
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
        let missing = dir.path().join("nope.toml");
        assert!(matches!(
            Config::load(Some(&missing), env(&[])),
            Err(ConfigError::Read { .. })
        ));
    }
}
