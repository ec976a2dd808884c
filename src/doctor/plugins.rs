//! Which Claude Code plugins are enabled for a project, where their folders are, and their hooks.
//!
//! Observed with Claude Code 2.1.328 (`claude plugin marketplace add`, `claude plugin install
//! [--scope user|project|local]`, `claude plugin disable`):
//! - `enabledPlugins` in a settings file maps `name@marketplace` to `true`/`false`; the user,
//!   project and local files merge in that order (a later file wins: "Disabled in
//!   ~/.claude/settings.json but still loads — project, gitignored settings enable it").
//! - `<config dir>/plugins/installed_plugins.json` is `{"version": 2, "plugins": {"walj@walj":
//!   [{"scope": "user"|"project"|"local", "installPath": …, "projectPath": … (not for user)}]}}`.
//! - `<config dir>/plugins/known_marketplaces.json` maps a marketplace to its `source` and
//!   `installLocation`. For a `directory` marketplace the hooks run from the marketplace's own
//!   plugin folder (`${CLAUDE_PLUGIN_ROOT}` = `<installLocation>/<plugin source>`), not from
//!   the copy under `plugins/cache/`; for the others, from `installPath`.
//! - A plugin loaded with `claude --plugin-dir DIR` leaves no trace in any of these files.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{DoctorFinding, Level, check};
use crate::claude::paths::{SettingsScope, settings_path};
use crate::claude::settings::{is_walj_handler, load};

/// An enabled plugin whose hooks run walj's hook (or named walj).
#[derive(Debug, Clone)]
pub(crate) struct PluginInstall {
    /// `name@marketplace`, or the folder given to `--plugin-dir`.
    pub id: String,
    /// The settings file that enables it (`None` for `--plugin-dir`).
    pub enabled_in: Option<(SettingsScope, PathBuf)>,
    /// `${CLAUDE_PLUGIN_ROOT}`.
    pub root: PathBuf,
    /// Its hooks, in the settings shape: `{"hooks": {event: [groups]}}`.
    pub hooks: Value,
}

impl PluginInstall {
    pub(crate) fn label(&self) -> String {
        match &self.enabled_in {
            Some(_) => format!("plugin {}", self.id),
            None => format!("plugin {}", self.root.display()),
        }
    }
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The plugins enabled for `project_root` (merged `enabledPlugins`), with their folders; only
/// those whose hooks run walj (`command` or any `walj hook`) or that are named walj. Findings
/// say what was found, and what is enabled but not usable.
pub(crate) fn discover(
    project_root: &Path,
    config_dir: &Path,
    command: &str,
) -> (Vec<PluginInstall>, Vec<DoctorFinding>) {
    let (plugins, _, findings) = discover_with_disabled(project_root, config_dir, command);
    (plugins, findings)
}

/// [`discover`], and the folders of the walj plugins installed but disabled for the project
/// (their hooks do not run).
pub(crate) fn discover_with_disabled(
    project_root: &Path,
    config_dir: &Path,
    command: &str,
) -> (Vec<PluginInstall>, Vec<PathBuf>, Vec<DoctorFinding>) {
    let mut findings = vec![];
    let mut disabled = vec![];
    // id → (enabled, scope, file), later scopes overriding earlier ones.
    let mut enabled: Vec<(String, bool, SettingsScope, PathBuf)> = vec![];
    for scope in [SettingsScope::User, SettingsScope::Project, SettingsScope::Local] {
        let path = settings_path(scope, project_root, config_dir);
        let Ok(Some(l)) = load(&path) else { continue };
        let pairs: Vec<(String, bool)> = match l.root.get("enabledPlugins") {
            Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.as_bool().unwrap_or(false))).collect(),
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(|k| (k.to_string(), true)).collect(),
            _ => continue,
        };
        for (id, on) in pairs {
            enabled.retain(|(e, ..)| *e != id);
            enabled.push((id, on, scope, path.clone()));
        }
    }
    let installed = read_json(&config_dir.join("plugins").join("installed_plugins.json"));
    let marketplaces = read_json(&config_dir.join("plugins").join("known_marketplaces.json"));

    let mut plugins = vec![];
    for (id, on, scope, file) in enabled {
        let (name, marketplace) = id.rsplit_once('@').unwrap_or((id.as_str(), ""));
        let named_walj = name == crate::plugin::NAME;
        let root = plugin_root(&id, name, marketplace, project_root, installed.as_ref(), marketplaces.as_ref());
        if !on {
            if named_walj && let Some(root) = &root {
                disabled.push(root.clone());
                findings.push(DoctorFinding::new(
                    Level::Info,
                    check::PLUGIN,
                    format!(
                        "plugin {id} is installed but disabled in {} ({}): its hooks do not run",
                        file.display(),
                        scope.label()
                    ),
                ));
            }
            continue;
        }
        let Some(root) = root else {
            if named_walj {
                findings.push(DoctorFinding::new(
                    Level::Warn,
                    check::PLUGIN,
                    format!(
                        "plugin {id} is enabled in {} but not installed on this machine (`claude plugin install {id}`)",
                        file.display()
                    ),
                ));
            }
            continue;
        };
        let hooks = match plugin_hooks(&root) {
            Ok(h) => h,
            Err(e) => {
                if named_walj {
                    findings.push(DoctorFinding::new(Level::Error, check::PLUGIN, format!("plugin {id}: {e}")));
                }
                continue;
            }
        };
        if !named_walj && !runs_walj(&hooks, command) {
            continue;
        }
        findings.push(DoctorFinding::new(
            Level::Ok,
            check::PLUGIN,
            format!("plugin {id}: enabled in {} ({}), loaded from {}", file.display(), scope.label(), root.display()),
        ));
        plugins.push(PluginInstall { id, enabled_in: Some((scope, file)), root, hooks });
    }
    (plugins, disabled, findings)
}

/// Why a plugin's folder or hooks could not be read (each names the file).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PluginDirError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{} is not a plugin folder (no .claude-plugin/plugin.json)", .0.display())]
    NotAPlugin(PathBuf),
    #[error("`hooks` in {} is not an object", .0.display())]
    HooksNotAnObject(PathBuf),
    #[error("{} is not valid JSON ({source})", path.display())]
    Json { path: PathBuf, source: serde_json::Error },
}

/// A plugin folder given on the command line (`walj doctor --plugin-dir DIR`, as Claude Code's
/// `--plugin-dir`).
pub(crate) fn from_dir(dir: &Path) -> Result<PluginInstall, PluginDirError> {
    let root = std::path::absolute(dir).map_err(|source| PluginDirError::Io { path: dir.to_path_buf(), source })?;
    if !root.join(".claude-plugin").join("plugin.json").is_file() && !root.join("hooks").join("hooks.json").is_file() {
        return Err(PluginDirError::NotAPlugin(root));
    }
    let hooks = plugin_hooks(&root)?;
    Ok(PluginInstall { id: root.display().to_string(), enabled_in: None, root, hooks })
}

fn runs_walj(hooks: &Value, command: &str) -> bool {
    hooks.get("hooks").and_then(Value::as_object).is_some_and(|events| {
        events.values().filter_map(Value::as_array).flatten().any(|group| {
            group
                .get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|hs| hs.iter().any(|h| is_walj_handler(h, command)))
        })
    })
}

/// The plugin's folder: the marketplace's own folder for a `directory` marketplace, else the
/// install path recorded for this project (or the user).
fn plugin_root(
    id: &str,
    name: &str,
    marketplace: &str,
    project_root: &Path,
    installed: Option<&Value>,
    marketplaces: Option<&Value>,
) -> Option<PathBuf> {
    let entries: Vec<&Value> = match installed.and_then(|v| v.get("plugins")).and_then(|p| p.get(id)) {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v @ Value::Object(_)) => vec![v],
        _ => vec![],
    };
    let here = project_root.canonicalize().unwrap_or_else(|_| project_root.to_path_buf());
    let for_here = |e: &Value| {
        e.get("projectPath").and_then(Value::as_str).is_some_and(|p| {
            let p = Path::new(p);
            p.canonicalize().unwrap_or_else(|_| p.to_path_buf()) == here
        })
    };
    let entry = entries
        .iter()
        .copied()
        .find(|e| for_here(e))
        .or_else(|| entries.iter().copied().find(|e| e.get("projectPath").is_none()))?;

    if let Some(m) = marketplaces.and_then(|m| m.get(marketplace))
        && m.pointer("/source/source").and_then(Value::as_str) == Some("directory")
    {
        let dir =
            m.get("installLocation").or_else(|| m.pointer("/source/path")).and_then(Value::as_str).map(PathBuf::from);
        if let Some(dir) = dir
            && let Some(src) = read_json(&dir.join(".claude-plugin").join("marketplace.json")).and_then(|mk| {
                mk.get("plugins")?
                    .as_array()?
                    .iter()
                    .find(|p| p.get("name").and_then(Value::as_str) == Some(name))?
                    .get("source")?
                    .as_str()
                    .map(str::to_string)
            })
        {
            let root = crate::project::normalize(&dir.join(src));
            if root.is_dir() {
                return Some(root);
            }
        }
    }
    let p = PathBuf::from(entry.get("installPath")?.as_str()?);
    p.is_dir().then_some(p)
}

/// The plugin's hooks: `hooks/hooks.json`, and `hooks` in `.claude-plugin/plugin.json` (a path
/// relative to the plugin, an object, or a list of them), merged per event.
fn plugin_hooks(root: &Path) -> Result<Value, PluginDirError> {
    let mut events = serde_json::Map::new();
    // `{"hooks": {event: groups}}` (a hooks file), or inline in plugin.json the events alone.
    let mut add = |v: &Value, from: &Path| -> Result<(), PluginDirError> {
        let Some(h) = v.get("hooks").or((from.ends_with("plugin.json")).then_some(v)) else { return Ok(()) };
        let Some(h) = h.as_object() else {
            return Err(PluginDirError::HooksNotAnObject(from.to_path_buf()));
        };
        for (ev, groups) in h {
            let list = events.entry(ev.clone()).or_insert_with(|| Value::Array(vec![]));
            if let (Value::Array(list), Some(groups)) = (list, groups.as_array()) {
                list.extend(groups.iter().cloned());
            }
        }
        Ok(())
    };
    let read = |p: &Path| -> Result<Option<Value>, PluginDirError> {
        match std::fs::read(p) {
            Ok(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|source| PluginDirError::Json { path: p.to_path_buf(), source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(PluginDirError::Io { path: p.to_path_buf(), source }),
        }
    };
    let default = root.join("hooks").join("hooks.json");
    if let Some(v) = read(&default)? {
        add(&v, &default)?;
    }
    let manifest = root.join(".claude-plugin").join("plugin.json");
    if let Some(m) = read(&manifest)? {
        let refs = match m.get("hooks") {
            Some(Value::Array(a)) => a.clone(),
            Some(v) => vec![v.clone()],
            None => vec![],
        };
        for r in refs {
            match r {
                Value::String(rel) => {
                    let p = root.join(rel.trim_start_matches("./"));
                    if p != default
                        && let Some(v) = read(&p)?
                    {
                        add(&v, &p)?;
                    }
                }
                v @ Value::Object(_) => add(&v, &manifest)?,
                _ => {}
            }
        }
    }
    Ok(Value::Object([("hooks".to_string(), Value::Object(events))].into_iter().collect()))
}

/// The latest session start in the journal at `journal` (its last `session` `start` record,
/// looked for in the journal's last 16 MiB): its session id, time, and the plugin folder whose
/// hooks journaled it (`plugin_root`, `None` for `walj install`'s hooks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LastStart {
    pub session: String,
    pub ts: String,
    pub plugin_root: Option<PathBuf>,
}

/// The journal's latest session start ([`LastStart`]); `None` when there is none (or the
/// journal cannot be read).
pub(crate) fn last_start(journal: &Path) -> Option<LastStart> {
    use crate::journal::{key, kind, op};
    const LOOK_BACK: u64 = 16 << 20;
    let mut found = None;
    let _ = crate::journal::reader::scan_lines_rev(journal, LOOK_BACK, |line| {
        // Cheap test first: most lines are not a start.
        if memchr::memmem::find(line, b"\"start\"").is_none() {
            return std::ops::ControlFlow::Continue(());
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else { return std::ops::ControlFlow::Continue(()) };
        if v["op"] != op::SESSION || v["kind"] != kind::START {
            return std::ops::ControlFlow::Continue(());
        }
        found = Some(LastStart {
            session: v["session"].as_str().unwrap_or_default().to_string(),
            ts: v["ts"].as_str().unwrap_or_default().to_string(),
            plugin_root: v[key::PLUGIN_ROOT].as_str().filter(|r| !r.is_empty()).map(PathBuf::from),
        });
        std::ops::ControlFlow::Break(())
    });
    found
}
