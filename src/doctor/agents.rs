//! `walj doctor` for Codex CLI, Gemini CLI and Copilot CLI: for each agent whose settings hold
//! walj's hooks (project or user scope), which events are hooked, and what would keep the agent
//! from running them: Codex's hook trust (untrusted hooks are skipped silently) and project
//! trust, Gemini's `hooksConfig.enabled` and folder trust, Copilot's folder trust.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::{DoctorFinding, Level, check};
use crate::agents::install::{self, Scope};
use crate::agents::trust::{copilot_folder_trusted, gemini_folder_trusted};
use crate::agents::{Agent, codex_trust};
use crate::claude::settings;

/// One agent install (`agents` of `walj doctor --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct AgentInfo {
    pub agent: &'static str,
    /// `project` or `user`.
    pub scope: &'static str,
    pub file: String,
    /// walj's events in the file.
    pub events: Vec<String>,
    /// walj's events the file lacks.
    pub missing: Vec<String>,
    /// Codex: whether every walj hook is trusted (`null` for the other agents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trusted: Option<bool>,
}

fn finding(level: Level, message: String) -> DoctorFinding {
    DoctorFinding { level, check: check::AGENT, message, details: vec![] }
}

/// Checks every agent's settings files for walj's hooks (`base`: the hook command `walj
/// install` writes, without `--agent`).
pub(crate) fn check(root: &Path, base: &str) -> (Vec<DoctorFinding>, Vec<AgentInfo>) {
    let mut findings = Vec::new();
    let mut infos = Vec::new();
    for agent in Agent::OTHERS {
        for scope in [Scope::Project, Scope::User] {
            let path = install::hooks_file(agent, scope, root);
            let file = match settings::read_json(&path) {
                Ok(Some(v)) => v,
                Ok(None) => continue,
                Err(e) => {
                    findings.push(finding(Level::Warn, format!("{}: {e}", agent.label())));
                    continue;
                }
            };
            let ours = |h: &Value| install::is_walj_agent_handler(h, base, agent);
            let events: Vec<String> = hooked_events(&file, &ours);
            if events.is_empty() {
                continue;
            }
            let missing: Vec<String> =
                install::hooks(agent).iter().map(|h| h.event.to_string()).filter(|e| !events.contains(e)).collect();
            let scope_name = if scope == Scope::Project { "project" } else { "user" };
            let flag = if scope == Scope::User { " --user" } else { "" };
            let mut info = AgentInfo {
                agent: agent.name(),
                scope: scope_name,
                file: path.display().to_string(),
                events: events.clone(),
                missing: missing.clone(),
                trusted: None,
            };
            if missing.is_empty() {
                findings.push(finding(
                    Level::Ok,
                    format!("{}: walj's hooks in {} ({} events)", agent.label(), path.display(), events.len()),
                ));
            } else {
                findings.push(finding(
                    Level::Warn,
                    format!(
                        "{}: walj's hooks in {} lack {}; run `walj install --agent {}{flag}`",
                        agent.label(),
                        path.display(),
                        missing.join(", "),
                        agent.name()
                    ),
                ));
            }
            match agent {
                Agent::Codex => codex(&path, &file, root, scope, &ours, &mut findings, &mut info),
                Agent::Gemini => gemini(root, scope, &mut findings),
                Agent::Copilot => {
                    if scope == Scope::Project && !copilot_folder_trusted(root) {
                        findings.push(finding(
                            Level::Warn,
                            format!(
                                "Copilot CLI: {} is not among the trusted folders of {}; Copilot loads .github/hooks/ \
                                 only in trusted folders (trust it when Copilot asks, for future sessions too)",
                                root.display(),
                                crate::agents::copilot_home().join("config.json").display()
                            ),
                        ));
                    }
                }
                Agent::ClaudeCode => {}
            }
            infos.push(info);
        }
    }
    (findings, infos)
}

fn hooked_events(file: &Value, ours: &dyn Fn(&Value) -> bool) -> Vec<String> {
    let Some(hooks) = file.get("hooks").and_then(Value::as_object) else { return vec![] };
    hooks
        .iter()
        .filter(|(_, list)| {
            list.as_array().into_iter().flatten().any(|x| {
                // Claude Code's shape (groups of handlers) or Copilot's (handlers).
                ours(x) || x.get("hooks").and_then(Value::as_array).is_some_and(|hs| hs.iter().any(ours))
            })
        })
        .map(|(k, _)| k.clone())
        .collect()
}

fn codex(
    path: &Path,
    file: &Value,
    root: &Path,
    scope: Scope,
    ours: &dyn Fn(&Value) -> bool,
    findings: &mut Vec<DoctorFinding>,
    info: &mut AgentInfo,
) {
    let config_path = codex_trust::config_path();
    let config = match codex_trust::read_config(&config_path) {
        Ok(c) => c.unwrap_or_default(),
        Err(e) => {
            findings.push(finding(Level::Error, format!("Codex CLI: {e}")));
            return;
        }
    };
    if codex_trust::hooks_disabled(&config) {
        findings.push(finding(
            Level::Error,
            format!("Codex CLI: hooks are turned off (`[features] hooks = false` in {})", config_path.display()),
        ));
    }
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let entries = codex_trust::entries(&abs, file, ours);
    let untrusted: Vec<&str> = entries
        .iter()
        .filter(|t| codex_trust::trusted_hash(&config, &t.key) != Some(t.hash.as_str()))
        .map(|t| t.key.rsplit(':').nth(2).unwrap_or(""))
        .collect();
    info.trusted = Some(untrusted.is_empty());
    let flag = if scope == Scope::User { " --user" } else { "" };
    if untrusted.is_empty() {
        findings.push(finding(Level::Ok, format!("Codex CLI: walj's hooks are trusted in {}", config_path.display())));
    } else {
        findings.push(finding(
            Level::Error,
            format!(
                "Codex CLI skips untrusted hooks silently: {} of walj's {} hooks have no (or a stale) trust in {} ({}); \
                 run `walj install --agent codex{flag}` again, or trust them with `/hooks` in Codex",
                untrusted.len(),
                entries.len(),
                config_path.display(),
                untrusted.join(", ")
            ),
        ));
    }
    if scope == Scope::Project && !codex_trust::project_trusted(&config, root) {
        findings.push(finding(
            Level::Warn,
            format!(
                "Codex CLI reads .codex/ only in trusted projects, and {} is not trusted in {}: trust it when Codex \
                 asks, or install with `walj install --agent codex --user`",
                root.display(),
                config_path.display()
            ),
        ));
    }
}

fn gemini(root: &Path, scope: Scope, findings: &mut Vec<DoctorFinding>) {
    for s in [Scope::Project, Scope::User] {
        let p = install::hooks_file(Agent::Gemini, s, root);
        if let Ok(Some(v)) = settings::read_json(&p)
            && v.pointer("/hooksConfig/enabled").and_then(Value::as_bool) == Some(false)
        {
            findings.push(finding(
                Level::Error,
                format!("Gemini CLI: hooks are turned off (`hooksConfig.enabled: false` in {})", p.display()),
            ));
        }
    }
    if scope == Scope::Project && !gemini_folder_trusted(root) {
        findings.push(finding(
            Level::Warn,
            format!(
                "Gemini CLI's folder trust is on and {} is not trusted ({}): Gemini ignores the project's \
                 .gemini/settings.json, and walj's hooks in it; trust the folder in Gemini, or install with \
                 `walj install --agent gemini --user`",
                root.display(),
                crate::agents::home().join(".gemini/trustedFolders.json").display()
            ),
        ));
    }
}
