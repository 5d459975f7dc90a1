//! Building the effective configuration: defaults, then the file, then
//! `EDDY_*` environment variables, each value checked against its kind and
//! then parsed once into [`Settings`] ([`super::build`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::schema::{self, SETTINGS, Setting};
use super::settings::Settings;
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

/// The loaded configuration: every setting's effective text and its
/// source (for `eddy config show` and error messages), and the same values
/// parsed once into [`Settings`].
#[derive(Clone, Debug)]
pub struct Config {
    raw: Raw,
    settings: Settings,
}

/// Every setting's effective text and its source, each text checked
/// against its kind.
#[derive(Clone, Debug)]
pub(super) struct Raw {
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
        raw.check_kinds()?;
        let settings = Settings::build(&raw)?;
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
                setting.doc, setting.name, value, from
            );
        }
        out
    }
}

impl Raw {
    /// Checks every value against its setting's kind, in schema order.
    fn check_kinds(&self) -> Result<(), ConfigError> {
        for setting in SETTINGS {
            let (value, source) = &self.values[setting.name];
            values::check(setting.kind, value)
                .map_err(|reason| invalid(setting, source, reason))?;
        }
        Ok(())
    }

    /// The error for setting `name` with `reason`.
    pub(super) fn invalid(&self, name: &'static str, reason: &str) -> ConfigError {
        let source = &self.entry(name).1;
        ConfigError::Invalid {
            name,
            origin: origin(source),
            reason: reason.to_string(),
        }
    }

    fn entry(&self, name: &'static str) -> &(String, Source) {
        // Every name the builder asks for is in SETTINGS (the default
        // configuration's build, a unit test, asks for all of them).
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("no setting {name}"))
    }

    /// The text of a setting.
    pub(super) fn text(&self, name: &'static str) -> &str {
        &self.entry(name).0
    }

    /// A setting's text parsed by `parse`; its error names the setting.
    pub(super) fn parse<T, E: ToString>(
        &self,
        name: &'static str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<T, ConfigError> {
        parse(self.text(name)).map_err(|e| self.invalid(name, &e.to_string()))
    }

    /// A non-negative integer.
    pub(super) fn int(&self, name: &'static str) -> Result<u64, ConfigError> {
        self.parse(name, |t| {
            t.trim()
                .parse::<u64>()
                .map_err(|_| format!("{t:?} is not a whole number"))
        })
    }

    /// A byte size.
    pub(super) fn bytes(&self, name: &'static str) -> Result<u64, ConfigError> {
        self.parse(name, values::bytes)
    }

    /// An on/off flag.
    pub(super) fn flag(&self, name: &'static str) -> Result<bool, ConfigError> {
        self.parse(name, values::flag)
    }

    /// A `host:port` address.
    pub(super) fn addr(&self, name: &'static str) -> Result<SocketAddr, ConfigError> {
        self.parse(name, |t| {
            t.trim()
                .parse::<SocketAddr>()
                .map_err(|_| format!("{t:?} is not an address like 127.0.0.1:8098"))
        })
    }

    /// A duration.
    pub(super) fn duration(&self, name: &'static str) -> Result<Duration, ConfigError> {
        self.parse(name, values::duration_ms)
            .map(Duration::from_millis)
    }

    /// A duration, or `None` for a word of its kind such as `off` (the
    /// text fits its kind, so what is not a duration is one of its words).
    pub(super) fn timeout(&self, name: &'static str) -> Option<Duration> {
        values::duration_ms(self.text(name))
            .ok()
            .map(Duration::from_millis)
    }

    /// A time to live in whole seconds; `off` is 0 (none).
    pub(super) fn expiry_secs(&self, name: &'static str) -> u64 {
        self.timeout(name).map_or(0, |d| d.as_secs())
    }
}

fn origin(source: &Source) -> String {
    match source {
        Source::Default => "default".to_string(),
        Source::File(p) => format!("from {}", p.display()),
        Source::Env(v) => format!("from {v}"),
    }
}

fn invalid(setting: &Setting, source: &Source, reason: String) -> ConfigError {
    ConfigError::Invalid {
        name: setting.name,
        origin: origin(source),
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
