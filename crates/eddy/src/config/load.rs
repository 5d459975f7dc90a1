//! Building the effective configuration: defaults, then the file, then
//! `EDDY_*` environment variables; the texts are then read once by serde
//! into the [`Schema`] ([`super::de`]), which refuses any value that does
//! not fit its setting, and turned into [`Settings`] ([`super::build`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::de::{self, DeError};
use super::file::{self, FileError};
use super::schema::{self, SETTINGS, Schema};
use super::settings::Settings;

/// `EDDY_*` variables that are not settings, which `eddy` accepts beside
/// them: the node's log filter, and the variables of the tests, scripts
/// and deploy files around it, which may run `eddy` with them set (a test
/// checks that every `EDDY_` name in the repository is a setting or here).
/// Any other `EDDY_*` variable is refused, as an unknown setting is.
pub const NOT_SETTINGS: &[&str] = &[
    "EDDY_LOG",
    // Tests.
    "EDDY_PYTHON",
    "EDDY_REQUIRE_PYTHON_CLIENT",
    "EDDY_REQUIRE_NETNS",
    "EDDY_TEST_LOGDIR",
    "EDDY_WRITE_FIXTURES",
    "EDDY_SIM_SEED",
    "EDDY_SIM_SEEDS",
    "EDDY_SIM_STATS",
    "EDDY_CRASH_DIR",
    "EDDY_CRASH_SEED",
    "EDDY_CRASH_CYCLES",
    "EDDY_CONFORMANCE_CASES",
    "EDDY_CORRUPTION_ITERATIONS",
    // deploy/ and its README section.
    "EDDY_COOKIE",
    "EDDY_IMAGE",
    "EDDY_NODES",
    "EDDY_PROJECT",
    "EDDY_SUBNET",
    "EDDY_WAIT_SECS",
];

/// Settings Eddy no longer has, refused with what to set instead.
const REPLACED: &[(&str, &str)] = &[
    (
        "bitcask.sync.strategy",
        "the commit log owns durability (the node writes its backends without syncing and \
         syncs them at checkpoints): set commit_log.sync.strategy (none, interval, o_sync) \
         instead",
    ),
    (
        "bitcask.sync.interval",
        "the commit log owns durability (the node writes its backends without syncing and \
         syncs them at checkpoints): set commit_log.sync.interval instead",
    ),
    (
        "bitcask.index_memory.maximum_per_vnode",
        "2i entries now live in each vnode's side store on disk, with no per-vnode memory \
         bound to set: remove the setting",
    ),
];

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
    /// The file could not be read, or is neither TOML nor riak.conf lines.
    #[error(transparent)]
    File(#[from] FileError),
    /// A name that is not a setting, in a file or as an `EDDY_*`
    /// variable; `hint` says what was probably meant, if anything.
    #[error("unknown setting {name:?} in {origin}{hint}")]
    Unknown {
        name: String,
        origin: String,
        hint: String,
    },
    /// A value that does not fit its setting.
    #[error("setting {name} ({origin}): {reason}")]
    Invalid {
        name: &'static str,
        origin: String,
        reason: String,
    },
    /// A relative `platform_data_dir` from a file is read from the file's
    /// directory, where there is no data, while the same path from the
    /// current directory holds a node's data (read from there before).
    #[error(
        "platform_data_dir {path} in {file} is read from the file's directory, as \
         {resolved}, which does not exist; {path} in the current directory holds a node's \
         data: write its absolute path in the file (platform_data_dir = \"{absolute}\")"
    )]
    DataDirMoved {
        path: PathBuf,
        file: PathBuf,
        resolved: PathBuf,
        absolute: PathBuf,
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
            for (name, value) in file::read(path)? {
                let setting = schema::find(&name).ok_or_else(|| ConfigError::Unknown {
                    hint: hint(&name, |s| s.to_string()),
                    origin: path.display().to_string(),
                    name,
                })?;
                values.insert(setting.name, (value, Source::File(path.to_path_buf())));
            }
        }
        let by_var: BTreeMap<String, &'static str> = SETTINGS
            .iter()
            .map(|s| (schema::env_name(s.name), s.name))
            .collect();
        let env: BTreeMap<String, String> = env.into_iter().collect();
        for (var, value) in env {
            if !var.starts_with("EDDY_") || NOT_SETTINGS.contains(&var.as_str()) {
                continue;
            }
            let Some(name) = by_var.get(&var) else {
                return Err(ConfigError::Unknown {
                    hint: hint(&var, schema::env_name),
                    origin: "the environment".to_string(),
                    name: var,
                });
            };
            values.insert(name, (value, Source::Env(var)));
        }
        let raw = Raw { values };
        let schema = raw.schema()?;
        let mut settings = Settings::from(&schema);
        raw.resolve_paths(&mut settings)?;
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

    /// Reads relative paths that a file gives from the file's directory,
    /// so every command reading the file (`start`, `stop`, `ping`,
    /// `admin`) finds the same directories wherever it is run; paths from
    /// a default or an `EDDY_*` variable stay relative to the current
    /// directory.
    fn resolve_paths(&self, s: &mut Settings) -> Result<(), ConfigError> {
        if let Some((dir, file)) = self.file_dir("platform_data_dir") {
            let path = &s.node.platform_data_dir;
            let resolved = dir.join(path);
            let held_here = path.join("eddy.lock").exists();
            if resolved != *path && !resolved.exists() && held_here {
                return Err(ConfigError::DataDirMoved {
                    absolute: std::path::absolute(path).unwrap_or_else(|_| path.clone()),
                    path: path.clone(),
                    file: file.to_path_buf(),
                    resolved,
                });
            }
            s.node.platform_data_dir = resolved;
        }
        if let Some((dir, _)) = self.file_dir("log.console.file") {
            s.log.file = dir.join(&s.log.file);
        }
        Ok(())
    }

    /// The directory of the file setting `name` came from, and the file.
    fn file_dir(&self, name: &str) -> Option<(&Path, &Path)> {
        match &self.values.get(name)?.1 {
            Source::File(file) => file
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(|d| (d, file.as_path())),
            _ => None,
        }
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

/// What an unknown setting `name` probably meant, as a clause to append:
/// the replacement of a removed setting, or the nearest known name (by
/// edit distance). `spell` writes a setting's name as `name` is written
/// (the setting itself, or its `EDDY_*` variable).
fn hint(name: &str, spell: impl Fn(&str) -> String) -> String {
    if let Some((_, instead)) = REPLACED.iter().find(|(old, _)| spell(old) == name) {
        return format!(": {instead}");
    }
    let nearest = SETTINGS
        .iter()
        .map(|s| spell(s.name))
        .map(|known| (edit_distance(name, &known), known))
        .min();
    match nearest {
        Some((distance, known)) if distance <= 3 => format!("; did you mean {known}?"),
        _ => String::new(),
    }
}

/// Levenshtein distance between `a` and `b`, by bytes.
fn edit_distance(a: &str, b: &str) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.bytes().enumerate() {
            let replaced = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = replaced.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

fn origin(source: &Source) -> String {
    match source {
        Source::Default => "default".to_string(),
        Source::File(p) => format!("from {}", p.display()),
        Source::Env(v) => format!("from {v}"),
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
        std::fs::write(&file, "[ring\n").unwrap();
        assert!(matches!(
            Config::load(Some(&file), env(&[])),
            Err(ConfigError::File(FileError::Syntax { .. }))
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
            Err(ConfigError::File(FileError::Read { .. }))
        ));
    }

    #[test]
    fn a_riak_conf_file_is_read_with_unquoted_values() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("riak.conf");
        let text = "## Riak's own lines\n\
                    nodename = riak@10.0.0.1\n\
                    listener.http.internal = 127.0.0.1:18098\n\
                    storage_backend = lsm\n\
                    object.size.maximum = 10MB\n\
                    buckets.default.allow_mult = on\n";
        std::fs::write(&file, text).unwrap();
        let c = Config::load(Some(&file), env(&[])).unwrap();
        let s = c.settings();
        assert_eq!(s.node.nodename.0, "riak@10.0.0.1");
        assert_eq!(s.listeners.http.to_string(), "127.0.0.1:18098");
        assert_eq!(s.storage.backend.name(), "lsm");
        assert_eq!(s.objects.size_max_bytes, 10 << 20);
        assert!(s.bucket_defaults.allow_mult);
        assert!(c.show().contains("storage_backend = lsm  # file"));
    }

    #[test]
    fn unknown_eddy_variables_are_refused_but_not_eddys_own() {
        let err = Config::load(None, env(&[("EDDY_RINGSIZE", "64")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown setting \"EDDY_RINGSIZE\" in the environment")
                && err.contains("did you mean EDDY_RING_SIZE?"),
            "{err}"
        );
        let err = Config::load(None, env(&[("EDDY_NO_SUCH_THING_AT_ALL", "1")]))
            .unwrap_err()
            .to_string();
        assert!(!err.contains("did you mean"), "{err}");
        let others: Vec<(&str, &str)> = NOT_SETTINGS.iter().map(|v| (*v, "x")).collect();
        let mut vars = env(&others);
        vars.extend(env(&[("HOME", "/root"), ("RUST_LOG", "debug")]));
        assert!(Config::load(None, vars).is_ok());
    }

    #[test]
    fn bitcask_sync_settings_are_refused_naming_the_commit_log() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("eddy.toml");
        std::fs::write(&file, "bitcask.sync.strategy = \"o_sync\"\n").unwrap();
        let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
        assert!(
            err.contains("unknown setting \"bitcask.sync.strategy\"")
                && err.contains("commit log owns durability")
                && err.contains("commit_log.sync.strategy"),
            "{err}"
        );
        let vars = env(&[("EDDY_BITCASK_SYNC_INTERVAL", "1s")]);
        let err = Config::load(None, vars).unwrap_err().to_string();
        assert!(err.contains("commit_log.sync.interval"), "{err}");
        std::fs::write(&file, "ring_sise = 64\n").unwrap();
        let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
        assert!(err.contains("did you mean ring_size?"), "{err}");
    }

    #[test]
    fn the_bitcask_index_memory_bound_is_refused_naming_the_side_store() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("eddy.toml");
        let line = "bitcask.index_memory.maximum_per_vnode = \"64MB\"\n";
        std::fs::write(&file, line).unwrap();
        let err = Config::load(Some(&file), env(&[])).unwrap_err().to_string();
        assert!(
            err.contains("unknown setting \"bitcask.index_memory.maximum_per_vnode\"")
                && err.contains("side store on disk")
                && err.contains("no per-vnode memory bound"),
            "{err}"
        );
        let vars = env(&[("EDDY_BITCASK_INDEX_MEMORY_MAXIMUM_PER_VNODE", "off")]);
        let err = Config::load(None, vars).unwrap_err().to_string();
        assert!(err.contains("side store on disk"), "{err}");
    }

    /// Every `EDDY_` name the repository's code, scripts and docs use is a
    /// setting's variable, one of [`NOT_SETTINGS`], or a name that is no
    /// variable at all; so no test or script sets a variable `eddy` then
    /// refuses.
    #[test]
    fn every_eddy_variable_in_the_repository_is_known() {
        const NOT_VARIABLES: &[&str] = &[
            "EDDY_",
            "EDDY_CODES",
            "EDDY_VERSION",
            "EDDY_MULTI_",
            // This file's examples of variables eddy refuses.
            "EDDY_RINGSIZE",
            "EDDY_NO_SUCH_THING_AT_ALL",
        ];
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut names = std::collections::BTreeSet::new();
        scan(&root, &mut names);
        assert!(names.contains("EDDY_RING_SIZE"), "the scan found {names:?}");
        let settings: Vec<String> = SETTINGS.iter().map(|s| schema::env_name(s.name)).collect();
        let replaced: Vec<String> = REPLACED.iter().map(|(n, _)| schema::env_name(n)).collect();
        for name in names {
            assert!(
                settings.contains(&name)
                    || replaced.contains(&name)
                    || NOT_SETTINGS.contains(&name.as_str())
                    || NOT_VARIABLES.contains(&name.as_str()),
                "{name} is used in the repository but eddy would refuse it: add it to NOT_SETTINGS"
            );
        }
    }

    fn scan(dir: &Path, names: &mut std::collections::BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(file_name.as_str(), "target" | ".git" | "node_modules") {
                    scan(&path, names);
                }
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for (at, _) in text.match_indices("EDDY_") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                names.insert(name);
            }
        }
    }

    #[test]
    fn relative_paths_in_a_file_are_read_from_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("eddy.toml");
        std::fs::write(
            &file,
            "platform_data_dir = \"./data\"\nlog.console.file = \"log/eddy.log\"\n",
        )
        .unwrap();
        let c = Config::load(Some(&file), env(&[])).unwrap();
        assert_eq!(
            c.settings().node.platform_data_dir,
            dir.path().join("./data")
        );
        assert_eq!(c.settings().log.file, dir.path().join("log/eddy.log"));
        // From the environment, as before: the current directory's.
        let vars = env(&[("EDDY_PLATFORM_DATA_DIR", "rel/data")]);
        let c = Config::load(Some(&file), vars).unwrap();
        assert_eq!(c.settings().node.platform_data_dir, Path::new("rel/data"));
    }

    #[test]
    fn a_data_dir_left_in_the_current_directory_is_pointed_at() {
        let cwd = std::env::current_dir().unwrap();
        let held = tempfile::tempdir_in(&cwd).unwrap();
        std::fs::write(held.path().join("eddy.lock"), "").unwrap();
        let relative = held.path().strip_prefix(&cwd).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("eddy.toml");
        let line = format!("platform_data_dir = {:?}\n", relative.display().to_string());
        std::fs::write(&file, line).unwrap();
        let err = Config::load(Some(&file), env(&[])).unwrap_err();
        assert!(matches!(err, ConfigError::DataDirMoved { .. }), "{err}");
        assert!(err.to_string().contains("write its absolute path"), "{err}");
    }
}
