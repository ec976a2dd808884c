//! `.walj/config.toml`: event types, capture limits, never-capture globs, retention, keys.
//!
//! A `config.toml` that git tracks is anyone's (a cloned repository's): only its safe keys
//! count ([`Config::safe_part`], docs/security.md).
//!
//! ```toml
//! [capture]
//! max_bytes = 8388608                 # larger files are recorded by id only
//! never = ["secrets/**"]             # recorded by id only, never stored; adds to the
//!                                     # built-in list (`crate::secrets::NEVER`)
//! hardlinks = false                   # files with several links: id only
//!
//! [[events]]                          # first match wins (the proposal's detect_event)
//! glob = "config/**"
//! event = "config_updated"
//!
//! [bash]
//! snapshot = true                     # record files changed by Bash commands
//! max_files = 20000                   # outside git: scan at most this many files
//! max_changes = 100000                # entries one command gets at most (the rest: listed)
//! watcher = true                      # ask the checkout's watcher what changed (src/watch.rs)
//! watch_ms = 10                       # wait at most this long for its answer, then scan
//! fill_ms = 60000                     # the detached pass that reads what a snapshot could not
//! fill_wait_ms = 5000                 # a command waits at most this long for that pass
//!
//! [retention]
//! days = 30                           # walj compact drops settled records older than this
//! auto = true                         # compact in the background after a SessionEnd…
//! auto_mb = 64                        # …once the journal is larger than this (MiB)
//!
//! [import]
//! on_start = true                     # SessionStart imports recent sessions walj's hooks never saw
//!
//! [keys]                              # walj tui key overrides, e.g. revert = ["r", "x"]
//!
//! [sync]                              # walj sync (docs/sync.md)
//! name = "laptop"                     # how other machines see this journal (default host:path)
//! remote = "origin"                   # default: the branch's upstream remote, else origin
//! recipients = ["age1…"]              # encrypt what is published to these age keys…
//! passphrase = false                  # …or to a passphrase (WALJ_PASSPHRASE, else asked)
//! identity = "~/.config/walj/age.txt" # age identity file(s) that open other machines' journals
//! transcripts = true                  # default: true when encrypted; plain text only when set
//! auto = false                        # sync in the background after SessionEnd and Stop
//! [theme]
//! mode = "auto"                       # walj tui: auto (NO_COLOR, COLORFGBG), dark, light, mono
//! ```

use std::path::Path;

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

pub(crate) const DEFAULT_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// `[bash] max_changes` by default: entries one Bash command gets at most.
pub(crate) const DEFAULT_MAX_CHANGES: usize = 100_000;

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Config {
    pub capture: Capture,
    pub events: Vec<EventRule>,
    pub bash: Bash,
    pub retention: Retention,
    /// TUI key overrides: action name → keys.
    pub keys: toml::Table,
    pub sync: SyncConfig,
    /// TUI colours: `mode = "auto" | "dark" | "light" | "mono"`.
    pub theme: toml::Table,
    /// `[limits]`: how much a bundle or a sync payload may inflate to.
    pub limits: Limits,
    /// `[import]`: sessions walj's hooks never saw, imported at SessionStart.
    pub import: ImportConfig,
}

/// `[import]`: at SessionStart, the project's recent Claude Code sessions that walj's hooks
/// never saw (hooks that did not fire) are rebuilt from their transcripts
/// (`crate::import::auto`).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ImportConfig {
    /// Off: only `walj import` imports.
    pub on_start: bool,
}

impl Default for ImportConfig {
    fn default() -> Self {
        ImportConfig { on_start: true }
    }
}

/// `[limits]`: bounds on reading data from others (session bundles, other machines' sync
/// payloads); past one the data is refused with a message, never read whole. Journals are not
/// capped. Each has a flag that raises it for one command.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Limits {
    /// Bytes a bundle (or one sync fetch) may decode to in all (`--max-decoded`).
    pub max_decoded: u64,
    /// Bytes one object, transcript or journal section may have (`--max-object`).
    pub max_object: u64,
    /// How many times its own size a bundle may inflate to (`--max-ratio`); data up to
    /// [`Limits::RATIO_FLOOR`] is never refused for its ratio.
    pub max_ratio: u64,
}

impl Limits {
    /// Decoded sizes up to this are never refused for their compression ratio.
    pub(crate) const RATIO_FLOOR: u64 = 16 << 20;
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_decoded: 1 << 30, max_object: 256 << 20, max_ratio: 200 }
    }
}

/// `[sync]`: `walj sync` (docs/sync.md).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SyncConfig {
    /// The name other machines see (default `host:path`).
    pub name: Option<String>,
    /// The git remote to sync through (default: the branch's upstream remote, else `origin`).
    pub remote: Option<String>,
    /// age recipients (`age1…`): segments, images and transcripts are published encrypted to
    /// them.
    pub recipients: Vec<String>,
    /// Encrypt to a passphrase instead (`WALJ_PASSPHRASE`, else asked on a terminal).
    pub passphrase: bool,
    /// age identity files (`age-keygen` output) that open other machines' encrypted journals.
    pub identity: OneOrMany,
    /// Publish transcripts (the safe copies): default yes when encrypted; in plain text only
    /// when set to `true`.
    pub transcripts: Option<bool>,
    /// Sync in a detached background process after SessionEnd and Stop.
    pub auto: bool,
}

/// A string or a list of strings (`identity = "a"` or `identity = ["a", "b"]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(from = "OneOrManyRaw")]
pub(crate) struct OneOrMany(pub Vec<String>);

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrManyRaw {
    One(String),
    Many(Vec<String>),
}

impl From<OneOrManyRaw> for OneOrMany {
    fn from(r: OneOrManyRaw) -> OneOrMany {
        match r {
            OneOrManyRaw::One(s) => OneOrMany(vec![s]),
            OneOrManyRaw::Many(v) => OneOrMany(v),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Capture {
    pub max_bytes: u64,
    /// The user's own never-capture globs: they add to `crate::secrets::NEVER`, which always
    /// applies.
    pub never: Vec<String>,
    /// Capture files with more than one hard link (another name may be outside the project):
    /// off by default, such files are recorded by id only (`nocap: "hardlink"`).
    pub hardlinks: bool,
}

impl Default for Capture {
    fn default() -> Self {
        Capture { max_bytes: DEFAULT_MAX_BYTES, never: Vec::new(), hardlinks: false }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventRule {
    pub glob: String,
    pub event: String,
    /// Only for these tools (default: any).
    #[serde(default)]
    pub tools: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Bash {
    pub snapshot: bool,
    pub max_files: usize,
    /// Child entries one command gets at most; paths past it are listed in one file and the
    /// command's record (`unseen.unlisted`), not compared one by one.
    pub max_changes: usize,
    pub max_ms: u64,
    /// Snapshots ask the checkout's watcher what changed (src/watch.rs) instead of looking at
    /// every file; off: every snapshot is a full scan.
    pub watcher: bool,
    /// How long a hook waits for the watcher's answer at most, in ms (then: a full scan).
    pub watch_ms: u64,
    /// Time the detached fill pass (started at SessionStart and after a snapshot cut short)
    /// reads and stores files for, in ms: past it the files left stay unread, as said.
    pub fill_ms: u64,
    /// How long a PreToolUse whose base is not whole waits for a running fill pass, in ms.
    pub fill_wait_ms: u64,
}

impl Default for Bash {
    fn default() -> Self {
        Bash {
            snapshot: true,
            max_files: 20_000,
            max_changes: crate::config::DEFAULT_MAX_CHANGES,
            max_ms: 200,
            watcher: true,
            watch_ms: 10,
            fill_ms: 60_000,
            fill_wait_ms: 5_000,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Retention {
    pub days: u64,
    /// Compact by itself (detached, after a SessionEnd) once the journal passes `auto_mb`.
    pub auto: bool,
    pub auto_mb: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention { days: 30, auto: true, auto_mb: 64 }
    }
}

/// A config file that cannot be used: `path:line:column: message` (the place when known).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}{}: {message}", self.place())]
pub(crate) struct ConfigError {
    pub path: String,
    pub message: String,
    /// 1-based line and column of the offending text, when known.
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// The offending line, as written in the file.
    pub source_line: Option<String>,
}

impl ConfigError {
    fn new(path: &Path, message: impl Into<String>) -> ConfigError {
        ConfigError {
            path: path.display().to_string(),
            message: message.into(),
            line: None,
            column: None,
            source_line: None,
        }
    }

    /// The error at byte `offset` of `text`.
    fn at(mut self, text: &str, offset: usize) -> ConfigError {
        let offset = offset.min(text.len());
        let before = text.get(..offset).unwrap_or(text);
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        self.line = Some(before.matches('\n').count() + 1);
        self.column = Some(text.get(line_start..offset).map_or(1, |s| s.chars().count() + 1));
        let line_end = text[line_start..].find('\n').map_or(text.len(), |i| line_start + i);
        self.source_line = Some(text[line_start..line_end].trim_end_matches('\r').to_string());
        self
    }

    /// The error at the first place `needle` (a value as written, quoted) appears in `text`.
    fn at_value(self, text: &str, needle: &str) -> ConfigError {
        match [format!("\"{needle}\""), format!("'{needle}'")].iter().find_map(|q| text.find(q.as_str())) {
            Some(offset) => self.at(text, offset),
            None => self,
        }
    }

    fn place(&self) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!(":{l}:{c}"),
            (Some(l), None) => format!(":{l}"),
            _ => String::new(),
        }
    }
}

impl Config {
    /// Loads the config; a missing file is the default config.
    pub(crate) fn load(path: &Path) -> Result<Config, ConfigError> {
        match Config::parse(path)? {
            None => Ok(Config::default()),
            Some(cfg) => cfg.compiled(path).map(|_| cfg),
        }
    }

    /// [`Config::load`] and the compiled globs, compiled once (the hook and import need both).
    pub(crate) fn load_with_matcher(path: &Path) -> Result<(Config, Matcher), ConfigError> {
        let cfg = Config::parse(path)?.unwrap_or_default();
        let m = cfg.compiled(path)?;
        Ok((cfg, m))
    }

    /// [`Config::load_with_matcher`]; a broken config is reported through `warn` and the
    /// defaults are used (the hook and import go on).
    pub(crate) fn load_or_default(path: &Path, warn: impl FnOnce(&ConfigError)) -> (Config, Option<Matcher>) {
        match Config::load_with_matcher(path) {
            Ok((c, m)) => (c, Some(m)),
            Err(e) => {
                warn(&e);
                let c = Config::default();
                let m = c.matcher().ok();
                (c, m)
            }
        }
    }

    /// Checks the file as [`Config::load`] reads it (`walj doctor`): `Ok(None)` when there is
    /// no file, the config when it parses and its globs compile, else where it goes wrong.
    pub(crate) fn check(path: &Path) -> Result<Option<Config>, ConfigError> {
        match Config::parse(path)? {
            None => Ok(None),
            Some(cfg) => cfg.compiled(path).map(|_| Some(cfg)),
        }
    }

    /// The file's config, `None` when there is no file.
    fn parse(path: &Path) -> Result<Option<Config>, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ConfigError::new(path, e.to_string())),
        };
        let cfg: Config = toml::from_str(&text).map_err(|e| {
            let err = ConfigError::new(path, e.message().trim_end());
            match e.span() {
                Some(span) => err.at(&text, span.start),
                None => err,
            }
        })?;
        // A config git carries is anyone's: only its safe keys count.
        Ok(Some(if crate::project::trust::config_is_tracked(path) { cfg.safe_part() } else { cfg }))
    }

    /// What a config git tracks may set (docs/security.md): keys that narrow what is
    /// captured (`[capture] never`, lower limits, `[bash] snapshot = false`) or style the
    /// output (`[[events]]`, `[keys]`, `[theme]`). Keys that run a command, publish or widen
    /// capture fall back to their defaults: all of `[sync]`, `[retention]`,
    /// `[capture] hardlinks`, and limits above the defaults.
    pub(crate) fn safe_part(mut self) -> Config {
        let d = Config::default();
        self.sync = d.sync;
        self.retention = d.retention;
        self.capture.hardlinks = false;
        self.capture.max_bytes = self.capture.max_bytes.min(d.capture.max_bytes);
        self.bash.max_files = self.bash.max_files.min(d.bash.max_files);
        self.bash.max_changes = self.bash.max_changes.min(d.bash.max_changes);
        self.bash.max_ms = self.bash.max_ms.min(d.bash.max_ms);
        self.bash.watch_ms = self.bash.watch_ms.min(d.bash.watch_ms);
        self.bash.fill_ms = self.bash.fill_ms.min(d.bash.fill_ms);
        self.bash.fill_wait_ms = self.bash.fill_wait_ms.min(d.bash.fill_wait_ms);
        self
    }

    /// The keys of this config that [`Config::safe_part`] ignores when git tracks the file
    /// (`walj doctor` names them).
    pub(crate) fn unsafe_keys(&self) -> Vec<&'static str> {
        let d = Config::default();
        let s = &self.sync;
        let mut out = Vec::new();
        let mut key = |set: bool, name: &'static str| {
            if set {
                out.push(name);
            }
        };
        key(s.auto, "[sync] auto");
        key(s.transcripts.is_some(), "[sync] transcripts");
        key(!s.recipients.is_empty(), "[sync] recipients");
        key(s.passphrase, "[sync] passphrase");
        key(!s.identity.0.is_empty(), "[sync] identity");
        key(s.remote.is_some(), "[sync] remote");
        key(s.name.is_some(), "[sync] name");
        key(self.retention.days != d.retention.days, "[retention] days");
        key(self.retention.auto != d.retention.auto, "[retention] auto");
        key(self.retention.auto_mb != d.retention.auto_mb, "[retention] auto_mb");
        key(self.capture.hardlinks, "[capture] hardlinks");
        key(self.capture.max_bytes > d.capture.max_bytes, "[capture] max_bytes");
        key(self.bash.max_files > d.bash.max_files, "[bash] max_files");
        key(self.bash.max_changes > d.bash.max_changes, "[bash] max_changes");
        key(self.bash.max_ms > d.bash.max_ms, "[bash] max_ms");
        key(self.bash.watch_ms > d.bash.watch_ms, "[bash] watch_ms");
        key(self.bash.fill_ms > d.bash.fill_ms, "[bash] fill_ms");
        key(self.bash.fill_wait_ms > d.bash.fill_wait_ms, "[bash] fill_wait_ms");
        out
    }

    /// The file as written, without [`Config::safe_part`] (doctor's view of a tracked file).
    pub(crate) fn parse_as_written(path: &Path) -> Option<Config> {
        let text = std::fs::read_to_string(path).ok()?;
        toml::from_str(&text).ok()
    }

    fn compiled(&self, path: &Path) -> Result<Matcher, ConfigError> {
        self.build_matcher().map_err(|bad| {
            let err = ConfigError::new(path, bad.to_string());
            match std::fs::read_to_string(path) {
                Ok(text) => err.at_value(&text, &bad.glob),
                Err(_) => err,
            }
        })
    }

    /// Compiles the globs.
    pub(crate) fn matcher(&self) -> Result<Matcher, BadGlob> {
        self.build_matcher()
    }

    fn build_matcher(&self) -> Result<Matcher, BadGlob> {
        let never = build_set(&self.capture.never, "[capture] never")?;
        let event_globs: Vec<String> = self.events.iter().map(|r| r.glob.clone()).collect();
        let events = build_set(&event_globs, "[[events]] glob")?;
        Ok(Matcher { never, events, rules: self.events.clone() })
    }
}

/// A glob of the config that does not compile, named with its key.
#[derive(Debug, thiserror::Error)]
#[error("bad glob {glob:?} in {key}: {message}")]
pub(crate) struct BadGlob {
    /// The glob as written.
    pub glob: String,
    /// Its key: `[capture] never` or `[[events]] glob`.
    pub key: &'static str,
    pub message: String,
}

fn build_set(globs: &[String], key: &'static str) -> Result<GlobSet, BadGlob> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        b.add(Glob::new(g).map_err(|e| BadGlob { glob: g.clone(), key, message: e.kind().to_string() })?);
    }
    b.build().map_err(|e| BadGlob { glob: String::new(), key, message: e.to_string() })
}

/// Compiled path rules.
#[derive(Debug, Clone)]
pub struct Matcher {
    never: GlobSet,
    events: GlobSet,
    rules: Vec<EventRule>,
}

impl Matcher {
    /// True when a path must never be captured: a secret by the built-in list
    /// ([`crate::secrets::secret_path`]) or by the user's `never` globs (matched on the path
    /// and on its file name).
    pub(crate) fn never_capture(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        crate::secrets::secret_path(rel) || self.never.is_match(rel) || self.never.is_match(name)
    }

    /// The user's event type for `rel` (first matching rule), if any.
    pub(crate) fn user_event(&self, rel: &str, tool: &str) -> Option<&str> {
        let mut matches = self.events.matches(rel);
        matches.sort_unstable();
        matches
            .into_iter()
            .map(|i| &self.rules[i])
            // A rule restricted to other tools does not count: try the next one.
            .find(|r| r.tools.is_empty() || r.tools.iter().any(|t| t == tool))
            .map(|r| r.event.as_str())
    }
}

/// Default event names.
pub use crate::journal::event;

/// The event type of a change to `rel` by `tool`: the user's rule, else a default.
pub(crate) fn detect_event(m: Option<&Matcher>, rel: &str, tool: &str, created: bool, deleted: bool) -> String {
    if let Some(e) = m.and_then(|m| m.user_event(rel, tool)) {
        return e.to_string();
    }
    if tool == "NotebookEdit" {
        event::NOTEBOOK_MODIFIED
    } else if created {
        event::ARTIFACT_CREATED
    } else if deleted {
        event::FILE_DELETED
    } else {
        event::FILE_MODIFIED
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_rules() {
        let cfg: Config = toml::from_str(
            r#"
            [[events]]
            glob = "config/**"
            event = "config_updated"
            [[events]]
            glob = "**/*.md"
            event = "docs_changed"
            tools = ["Write"]
            [[events]]
            glob = "docs/**"
            event = "docs_touched"
            "#,
        )
        .unwrap();
        let m = cfg.matcher().unwrap();
        assert!(m.never_capture(".env"));
        assert!(m.never_capture("deploy/.env.prod"));
        assert!(m.never_capture("keys/server.pem"));
        assert!(!m.never_capture("home/id_rsa.pub"), "a public key is not a secret");
        assert!(!m.never_capture("src/env.rs"));
        assert_eq!(detect_event(Some(&m), "config/settings.json", "Edit", false, false), "config_updated");
        assert_eq!(detect_event(Some(&m), "docs/a.md", "Write", false, false), "docs_changed");
        assert_eq!(detect_event(Some(&m), "docs/a.md", "Edit", false, false), "docs_touched");
        assert_eq!(detect_event(Some(&m), "src/new.rs", "Write", true, false), "artifact_created");
        assert_eq!(detect_event(None, "a.ipynb", "NotebookEdit", false, false), "notebook_modified");
        assert!(toml::from_str::<Config>("[capture]\nmax_byte = 1\n").is_err());
    }

    #[test]
    fn errors_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[capture]\nmax_bytes = 10\nmax_byte = 1\n").unwrap();
        let e = Config::check(&path).unwrap_err();
        assert_eq!((e.line, e.column), (Some(3), Some(1)), "{e}");
        assert_eq!(e.source_line.as_deref(), Some("max_byte = 1"));
        assert!(e.to_string().starts_with(&format!("{}:3:1: unknown field `max_byte`", path.display())), "{e}");

        std::fs::write(&path, "[[events]]\nglob = \"src/{a,b\"\nevent = \"x\"\n").unwrap();
        let e = Config::check(&path).unwrap_err();
        assert_eq!((e.line, e.column), (Some(2), Some(8)), "{e}");
        assert!(e.message.contains("bad glob \"src/{a,b\" in [[events]] glob"), "{e}");
        let mut c = Config::default();
        c.capture.never.push("[oops".into());
        let bad = c.matcher().unwrap_err();
        assert_eq!((bad.glob.as_str(), bad.key), ("[oops", "[capture] never"));
        assert!(bad.to_string().starts_with("bad glob \"[oops\" in [capture] never: "), "{bad}");
        // The hook's loader reports the same error.
        assert_eq!(Config::load(&path).unwrap_err(), e);

        assert!(Config::check(&dir.path().join("none.toml")).unwrap().is_none());
    }

    /// A user's `never` list adds to the built-in one, never replaces it (the old default
    /// list was replaced: `never = ["secrets/**"]` stored `.env`).
    #[test]
    fn a_users_never_list_adds_to_the_defaults() {
        let cfg: Config = toml::from_str("[capture]\nnever = [\"secrets/**\"]\n").unwrap();
        let m = cfg.matcher().unwrap();
        assert!(m.never_capture("secrets/db.txt"));
        assert!(m.never_capture(".env"));
        assert!(m.never_capture("home/.ssh/id_ed25519"));
        assert!(!m.never_capture("src/main.rs"));
    }
}
