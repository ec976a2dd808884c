//! `walj install --agent codex|gemini|copilot [--user]` and `walj uninstall --agent …`: walj's
//! hooks in the other agents' own settings files (Claude Code's are `src/claude/settings.rs`,
//! which also does the merging for the files of Claude Code's shape).
//!
//! | agent | project file | `--user` file | shape |
//! |---|---|---|---|
//! | Codex | `.codex/hooks.json` | `$CODEX_HOME/hooks.json` | Claude Code's; timeouts in s; trust in `$CODEX_HOME/config.toml` ([`super::codex_trust`]) |
//! | Gemini | `.gemini/settings.json` | `~/.gemini/settings.json` | Claude Code's; timeouts in ms |
//! | Copilot | `.github/hooks/walj.json` | `$COPILOT_HOME/hooks/walj.json` | `{"version": 1, "hooks": {EVENT: [{"type", "bash", "timeoutSec"}]}}`, PascalCase event names (their payloads name the event) |
//!
//! Every handler runs `walj hook --agent NAME`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{Agent, codex_trust};
use crate::claude::settings::{self, InstallError, InstallReport};

/// Which of the agent's settings files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Project,
    User,
}

/// The settings file walj's hooks for `agent` go into.
pub(crate) fn hooks_file(agent: Agent, scope: Scope, root: &Path) -> PathBuf {
    match (agent, scope) {
        (Agent::Codex, Scope::Project) => root.join(".codex").join("hooks.json"),
        (Agent::Codex, Scope::User) => codex_trust::codex_home().join("hooks.json"),
        (Agent::Gemini, Scope::Project) => root.join(".gemini").join("settings.json"),
        (Agent::Gemini, Scope::User) => super::home().join(".gemini").join("settings.json"),
        (Agent::Copilot, Scope::Project) => root.join(".github").join("hooks").join("walj.json"),
        (Agent::Copilot, Scope::User) => super::copilot_home().join("hooks").join("walj.json"),
        (Agent::ClaudeCode, Scope::Project) => root.join(".claude").join("settings.json"),
        (Agent::ClaudeCode, Scope::User) => crate::claude::paths::config_dir_or_default().join("settings.json"),
    }
}

/// One hook walj installs for an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hook {
    /// The event's name in the agent's settings.
    pub event: &'static str,
    pub matcher: Option<&'static str>,
}

const fn h(event: &'static str, matcher: Option<&'static str>) -> Hook {
    Hook { event, matcher }
}

const CODEX_TOOLS: Option<&str> = Some("Bash|apply_patch");
const GEMINI_TOOLS: Option<&str> = Some("write_file|replace|run_shell_command");

/// The hooks walj installs for `agent` (Claude Code: `crate::claude::events`). Gemini CLI's
/// `PreCompress` is left out: 0.61.0 fires it before every model request, compacting or not.
pub(crate) fn hooks(agent: Agent) -> &'static [Hook] {
    match agent {
        Agent::Codex => CODEX_HOOKS,
        Agent::Gemini => GEMINI_HOOKS,
        Agent::Copilot => COPILOT_HOOKS,
        Agent::ClaudeCode => &[],
    }
}

const CODEX_HOOKS: &[Hook] = &[
    h("SessionStart", None),
    h("UserPromptSubmit", None),
    h("PreToolUse", CODEX_TOOLS),
    h("PostToolUse", CODEX_TOOLS),
    h("PreCompact", None),
    h("Stop", None),
    h("SessionEnd", None),
];
const GEMINI_HOOKS: &[Hook] = &[
    h("SessionStart", None),
    h("BeforeAgent", None),
    h("BeforeTool", GEMINI_TOOLS),
    h("AfterTool", GEMINI_TOOLS),
    h("AfterAgent", None),
    h("SessionEnd", None),
];
const COPILOT_HOOKS: &[Hook] = &[
    h("SessionStart", None),
    h("UserPromptSubmit", None),
    h("PreToolUse", None),
    h("PostToolUse", None),
    h("PostToolUseFailure", None),
    h("Stop", None),
    h("PreCompact", None),
    h("SessionEnd", None),
];

/// The hook command for `agent`: `<base> --agent NAME` (`base`: `walj hook` or this walj's path).
pub(crate) fn command(base: &str, agent: Agent) -> String {
    format!("{} --agent {}", base.trim(), agent.name())
}

/// Whether the command line `cmd` runs walj's hook for `agent`: `walj hook --agent NAME` (any
/// walj path; `--agent=NAME` too). A handler object is checked with
/// [`settings::is_walj_hook`], which also knows exec form.
#[cfg_attr(not(test), allow(dead_code))] // only the unit tests call it
pub(crate) fn is_walj_agent_command(cmd: &str, base: &str, agent: Agent) -> bool {
    settings::is_walj_hook(&json!({ "command": cmd }), base, Some(agent.name()))
}

/// Whether a handler object of `agent`'s settings is walj's hook ([`settings::is_walj_hook`]).
pub(crate) fn is_walj_agent_handler(h: &Value, base: &str, agent: Agent) -> bool {
    settings::is_walj_hook(h, base, Some(agent.name()))
}

/// The handler object walj adds for one event.
pub(crate) fn handler(agent: Agent, event: &str, cmd: &str) -> Value {
    match agent {
        // Codex waits at most 3 s for SessionEnd hooks.
        Agent::Codex => {
            json!({"type": "command", "command": cmd, "timeout": if event == "SessionEnd" { 3 } else { 10 }})
        }
        Agent::Gemini => json!({"type": "command", "command": cmd, "name": "walj", "timeout": 10_000}),
        Agent::Copilot => json!({"type": "command", "bash": cmd, "timeoutSec": 10}),
        Agent::ClaudeCode => json!({"type": "command", "command": cmd, "timeout": settings::HOOK_TIMEOUT_SECS}),
    }
}

/// What `install`/`uninstall` did for an agent.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: InstallReport,
    /// Codex: the config holding the hooks' trust, when walj wrote it.
    pub trust_file: Option<PathBuf>,
    /// What the user must know or do (untrusted project, trust not recorded, …).
    pub notes: Vec<String>,
}

/// Installs walj's hooks for `agent` (not Claude Code) in `scope`.
pub(crate) fn install(
    agent: Agent,
    scope: Scope,
    root: &Path,
    base: &str,
    backup_dir: Option<&Path>,
) -> Result<Outcome, InstallError> {
    if base.trim().is_empty() {
        return Err(InstallError::EmptyCommand);
    }
    let path = hooks_file(agent, scope, root);
    let cmd = command(base, agent);
    let ours = |h: &Value| is_walj_agent_handler(h, base, agent);
    let report = match agent {
        Agent::Copilot => install_copilot(&path, &cmd, &ours, backup_dir)?,
        _ => {
            let groups: Vec<(&str, Value)> = hooks(agent)
                .iter()
                .map(|hk| {
                    let handler = handler(agent, hk.event, &cmd);
                    let g = match hk.matcher {
                        Some(m) => json!({"matcher": m, "hooks": [handler]}),
                        None => json!({"hooks": [handler]}),
                    };
                    (hk.event, g)
                })
                .collect();
            settings::install_groups(&path, &groups, &ours, backup_dir)?
        }
    };
    let mut out = Outcome { report, trust_file: None, notes: vec![] };
    match agent {
        Agent::Codex => trust_codex(&path, root, scope, &ours, &mut out),
        Agent::Gemini => {
            if scope == Scope::Project && !super::trust::gemini_folder_trusted(root) {
                out.notes.push(format!(
                    "Gemini CLI's folder trust is on and {} is not trusted: Gemini ignores the project's \
                     .gemini/settings.json there. Trust the folder in Gemini CLI (`/permissions`), or use \
                     `walj install --agent gemini --user`.",
                    root.display()
                ));
            }
        }
        Agent::Copilot => {
            if scope == Scope::Project && !super::trust::copilot_folder_trusted(root) {
                out.notes.push(format!(
                    "Copilot CLI loads .github/hooks/ only in folders you trust: start `copilot` in {} once and \
                     trust it for future sessions (in `copilot -p` the folder must be trusted, or \
                     GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true set), or use `walj install --agent copilot --user`.",
                    root.display()
                ));
            }
        }
        Agent::ClaudeCode => {}
    }
    Ok(out)
}

/// Records the trust of walj's Codex hooks in `$CODEX_HOME/config.toml` (a backup beside it
/// first), or says what to run when it cannot.
fn trust_codex(path: &Path, root: &Path, scope: Scope, ours: &dyn Fn(&Value) -> bool, out: &mut Outcome) {
    let config = codex_trust::config_path();
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let file = match settings::read_json(path) {
        Ok(Some(v)) => v,
        _ => return,
    };
    let entries = codex_trust::entries(&abs, &file, ours);
    let text = match std::fs::read_to_string(&config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            out.notes.push(format!(
                "cannot read {} ({e}): Codex will skip walj's hooks until you trust them with `/hooks` in Codex",
                config.display()
            ));
            return;
        }
    };
    match codex_trust::with_trust(&text, &entries) {
        Ok(new) if new == text => {}
        Ok(new) => {
            let written = (|| -> std::io::Result<()> {
                if let Some(d) = config.parent() {
                    std::fs::create_dir_all(d)?;
                }
                if !text.is_empty() {
                    let backup = config.with_file_name("config.toml.walj-backup");
                    crate::fsutil::atomic_write(&backup, text.as_bytes(), crate::fsutil::file_mode(&config))?;
                }
                crate::fsutil::atomic_write(&config, new.as_bytes(), crate::fsutil::file_mode(&config))
            })();
            match written {
                Ok(()) => out.trust_file = Some(config.clone()),
                Err(e) => out.notes.push(format!(
                    "cannot write {} ({e}): Codex skips untrusted hooks silently; trust walj's with `/hooks` in Codex",
                    config.display()
                )),
            }
        }
        Err(why) => out.notes.push(format!(
            "{}: {why}. Codex skips untrusted hooks silently: open Codex in this project and trust walj's hooks with \
             `/hooks`, then check with `walj doctor`",
            config.display()
        )),
    }
    if scope == Scope::Project {
        let cfg = codex_trust::read_config(&config).ok().flatten().unwrap_or_default();
        if !codex_trust::project_trusted(&cfg, root) {
            out.notes.push(format!(
                "Codex reads .codex/ only in trusted projects, and {} is not trusted in {}: trust it when Codex asks \
                 (or run `codex exec --trust …` once here), or use `walj install --agent codex --user`.",
                root.display(),
                config.display()
            ));
        }
    }
}

fn install_copilot(
    path: &Path,
    cmd: &str,
    ours: &dyn Fn(&Value) -> bool,
    backup_dir: Option<&Path>,
) -> Result<InstallReport, InstallError> {
    let old = settings::read_json(path)?;
    let mut root = old.clone().unwrap_or_else(|| json!({"version": 1}));
    let mut report = InstallReport { path: path.to_path_buf(), added: vec![], already: vec![], backup: None };
    let Some(obj) = root.as_object_mut() else {
        return Err(InstallError::Shape { path: path.to_path_buf(), message: "the top level is not an object".into() });
    };
    obj.entry("version").or_insert(json!(1));
    let hooks = obj.entry("hooks").or_insert_with(|| Value::Object(Map::new()));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(InstallError::Shape { path: path.to_path_buf(), message: "`hooks` is not an object".into() });
    };
    for hk in hooks_of(Agent::Copilot) {
        let list = hooks.entry(hk).or_insert_with(|| Value::Array(vec![]));
        let Some(list) = list.as_array_mut() else {
            return Err(InstallError::Shape {
                path: path.to_path_buf(),
                message: format!("`hooks.{hk}` is not an array"),
            });
        };
        if list.iter().any(ours) {
            report.already.push(hk.to_string());
        } else {
            list.push(handler(Agent::Copilot, hk, cmd));
            report.added.push(hk.to_string());
        }
    }
    if !report.added.is_empty() {
        report.backup = settings::write_json(path, &root, backup_dir)?;
    }
    Ok(report)
}

fn hooks_of(agent: Agent) -> impl Iterator<Item = &'static str> {
    hooks(agent).iter().map(|h| h.event)
}

/// Takes walj's hooks for `agent` out of its settings file (and, for Codex, their trust out
/// of `$CODEX_HOME/config.toml`). Copilot's `walj.json` is removed when nothing else is left.
pub(crate) fn uninstall(
    agent: Agent,
    scope: Scope,
    root: &Path,
    base: &str,
    backup_dir: Option<&Path>,
) -> Result<Outcome, InstallError> {
    let path = hooks_file(agent, scope, root);
    let ours = |h: &Value| is_walj_agent_handler(h, base, agent);
    let events: Vec<&str> = hooks_of(agent).collect();
    let mut out = Outcome {
        report: InstallReport { path: path.clone(), added: vec![], already: vec![], backup: None },
        trust_file: None,
        notes: vec![],
    };
    // Codex: the trust keys walj's hooks have now, before they move.
    let keys: Vec<String> = match (agent, settings::read_json(&path)) {
        (Agent::Codex, Ok(Some(v))) => {
            let abs = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            codex_trust::entries(&abs, &v, &ours).into_iter().map(|t| t.key).collect()
        }
        _ => vec![],
    };
    out.report = match agent {
        Agent::Copilot => uninstall_copilot(&path, &events, &ours, backup_dir)?,
        _ => settings::uninstall_groups(&path, &events, &ours, backup_dir)?,
    };
    if !keys.is_empty() {
        let config = codex_trust::config_path();
        if let Ok(text) = std::fs::read_to_string(&config) {
            let new = codex_trust::without_trust(&text, &keys);
            if new != text {
                match crate::fsutil::atomic_write(&config, new.as_bytes(), crate::fsutil::file_mode(&config)) {
                    Ok(()) => out.trust_file = Some(config),
                    Err(e) => out.notes.push(format!("cannot remove walj's hook trust from {}: {e}", config.display())),
                }
            }
        }
    }
    Ok(out)
}

fn uninstall_copilot(
    path: &Path,
    events: &[&str],
    ours: &dyn Fn(&Value) -> bool,
    backup_dir: Option<&Path>,
) -> Result<InstallReport, InstallError> {
    let mut report = InstallReport { path: path.to_path_buf(), added: vec![], already: vec![], backup: None };
    let Some(mut root) = settings::read_json(path)? else {
        report.already = events.iter().map(|e| e.to_string()).collect();
        return Ok(report);
    };
    if let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) {
        let keys: Vec<String> = hooks.keys().cloned().collect();
        for k in keys {
            let Some(list) = hooks.get_mut(&k).and_then(Value::as_array_mut) else { continue };
            let before = list.len();
            list.retain(|h| !ours(h));
            if list.len() != before {
                if list.is_empty() {
                    hooks.shift_remove(&k);
                }
                report.added.push(k);
            }
        }
    }
    report.already = events.iter().filter(|e| !report.added.iter().any(|a| a == *e)).map(|e| e.to_string()).collect();
    if report.added.is_empty() {
        return Ok(report);
    }
    let only_version = root.as_object().is_some_and(|o| {
        o.iter().all(|(k, v)| k == "version" || (k == "hooks" && v.as_object().is_some_and(Map::is_empty)))
    });
    if only_version {
        std::fs::remove_file(path).map_err(|source| InstallError::Io { path: path.to_path_buf(), source })?;
    } else {
        report.backup = settings::write_json(path, &root, backup_dir)?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_recognised_per_agent() {
        let base = "walj hook";
        assert_eq!(command(base, Agent::Codex), "walj hook --agent codex");
        assert!(is_walj_agent_command("walj hook --agent codex", base, Agent::Codex));
        assert!(is_walj_agent_command("/usr/local/bin/walj hook --agent=gemini", base, Agent::Gemini));
        assert!(is_walj_agent_command("'/x y/walj' hook  --agent copilot", base, Agent::Copilot));
        assert!(!is_walj_agent_command("walj hook --agent codex", base, Agent::Gemini));
        assert!(!is_walj_agent_command("walj hook", base, Agent::Codex));
        assert!(!is_walj_agent_command("other hook --agent codex", base, Agent::Codex));
    }

    #[test]
    fn copilot_file_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".github/hooks/walj.json");
        let ours = |h: &Value| is_walj_agent_handler(h, "walj hook", Agent::Copilot);
        let r = install_copilot(&path, "walj hook --agent copilot", &ours, None).unwrap();
        assert_eq!(r.added.len(), hooks(Agent::Copilot).len());
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(
            v["hooks"]["PreToolUse"][0],
            json!({"type": "command", "bash": "walj hook --agent copilot", "timeoutSec": 10})
        );
        let again = install_copilot(&path, "walj hook --agent copilot", &ours, None).unwrap();
        assert!(again.added.is_empty());
        let events: Vec<&str> = hooks_of(Agent::Copilot).collect();
        let u = uninstall_copilot(&path, &events, &ours, None).unwrap();
        assert_eq!(u.added.len(), events.len());
        assert!(!path.exists(), "walj's own file goes with its hooks");
    }
}
