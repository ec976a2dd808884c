//! The coding agents walj journals, and the one event model their hook payloads become.
//!
//! Every agent runs `walj hook` on its own hook events with its own payload shape. Each shape
//! has one parser here, and every parser produces the same [`event::Event`]: a session start, a
//! prompt, a tool call before / after / failed, the end of a turn, a compaction, a session end.
//! A tool call is a file edit (a *list* of path changes: one Codex `apply_patch` adds, updates,
//! deletes and moves several files), a shell command, a todo update or something else. The hook
//! (`src/hook.rs`) journals events, never payloads, so the journal format and the fold are the
//! same for every agent.
//!
//! - [`claude`]: Claude Code (the payload is [`crate::claude::payload::Payload`]).
//! - [`codex`]: Codex CLI (`Bash`, `apply_patch` split by [`patch`], real call ids). [`patch`]
//!   also replays Claude Code's Edit/Write/MultiEdit: how every agent's post-image is computed.
//! - [`gemini`]: Gemini CLI (`BeforeTool`/`AfterTool`, paths relative to `cwd`, no call id).
//! - [`copilot`]: GitHub Copilot CLI (camelCase and PascalCase shapes, no call id). Copilot also
//!   runs the hooks in `.claude/settings.json`: [`detect`] recognises its payloads there.
//! - [`pairing`]: Pre and Post of a call without an id, and the same event arriving twice.
//! - [`install`]: the agents' own hook settings files (`walj doctor` checks them:
//!   `crate::doctor::agents`).
//! - `walj import` of the session files the agents keep themselves is an action, not part of
//!   the event model: [`crate::import::agents`].

pub mod claude;
pub mod codex;
pub mod codex_trust;
pub mod copilot;
pub mod event;
pub mod gemini;
pub mod install;
pub mod pairing;
pub mod patch;
pub mod trust;

use std::path::PathBuf;

use serde_json::Value;

pub(crate) use event::{Change, Event, ToolCall};
pub(crate) use event::{PathChange, Phase, ToolKind};

/// `$HOME` (or `/`).
pub(crate) fn home() -> PathBuf {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"))
}

/// `$COPILOT_HOME` (default `~/.copilot`).
pub(crate) fn copilot_home() -> PathBuf {
    match std::env::var_os("COPILOT_HOME").filter(|v| !v.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => home().join(".copilot"),
    }
}

/// A coding agent whose sessions walj journals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
    Copilot,
}

impl Agent {
    pub const ALL: [Agent; 4] = [Agent::ClaudeCode, Agent::Codex, Agent::Gemini, Agent::Copilot];
    /// The agents `walj install --agent` configures (Claude Code is the default install).
    pub(crate) const OTHERS: [Agent; 3] = [Agent::Codex, Agent::Gemini, Agent::Copilot];

    /// The name in `--agent NAME` and in the journal's `agent` field.
    pub const fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Copilot => "copilot",
        }
    }

    /// The product's name, for people.
    pub const fn label(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex CLI",
            Agent::Gemini => "Gemini CLI",
            Agent::Copilot => "Copilot CLI",
        }
    }

    /// `claude`, `claude-code`, `codex`, `gemini`, `copilot` (any case).
    pub fn parse(s: &str) -> Option<Agent> {
        match s.trim().to_ascii_lowercase().as_str() {
            "claude" | "claude-code" | "claude_code" | "claudecode" => Some(Agent::ClaudeCode),
            "codex" | "codex-cli" => Some(Agent::Codex),
            "gemini" | "gemini-cli" => Some(Agent::Gemini),
            "copilot" | "copilot-cli" | "github-copilot" => Some(Agent::Copilot),
            _ => None,
        }
    }

    /// The agent a journal `agent` field names; a missing field is Claude Code (journals written
    /// before other agents existed).
    pub(crate) fn of_record(field: Option<&str>) -> Agent {
        field.and_then(Agent::parse).unwrap_or(Agent::ClaudeCode)
    }

    /// How the user resumes a session of this agent (interactively, in the project's folder),
    /// for briefs and the TUI. Each takes the full session id (checked with the real CLIs:
    /// `tests/e2e/agent_import.rs` resumes with these, in their non-interactive forms:
    /// `claude -p --resume`, `codex exec resume`, `gemini --resume ID -p`, `copilot
    /// --resume=ID -p`).
    pub(crate) fn resume_hint(self, session: &str) -> String {
        match self {
            Agent::ClaudeCode => format!("claude --resume {session}"),
            Agent::Codex => format!("codex resume {session}"),
            Agent::Gemini => format!("gemini --resume {session}"),
            Agent::Copilot => format!("copilot --resume={session}"),
        }
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which agent wrote a payload that came without `--agent`: Claude Code, unless the payload
/// carries another agent's marks. Claude Code's payloads have no `timestamp`, no camelCase
/// `sessionId` and no `turn_id`: three lookups in a small map, so Claude Code's path pays
/// nothing measurable.
pub(crate) fn detect(v: &Value) -> Agent {
    let Some(o) = v.as_object() else { return Agent::ClaudeCode };
    if o.contains_key("sessionId") || o.contains_key("toolName") || o.contains_key("toolArgs") {
        return Agent::Copilot;
    }
    if let Some(ts) = o.get("timestamp") {
        let event = o.get("hook_event_name").and_then(Value::as_str).unwrap_or("");
        if gemini::is_gemini_event(event) {
            return Agent::Gemini;
        }
        // Copilot's payloads (PascalCase, the shape `.claude/settings.json` gets) carry an
        // ISO `timestamp`; Claude Code's never do.
        if ts.is_string() || ts.is_number() {
            return Agent::Copilot;
        }
    }
    if o.contains_key("turn_id") {
        return Agent::Codex;
    }
    Agent::ClaudeCode
}

/// Parses a payload (already JSON) into the event model, with the agent given by `--agent` or
/// else [`detect`]ed.
pub(crate) fn parse<'a>(v: &'a Value, agent: Option<Agent>, claude: &'a crate::claude::payload::Payload) -> Event<'a> {
    match agent.unwrap_or_else(|| detect(v)) {
        Agent::ClaudeCode => claude::parse(claude),
        Agent::Codex => codex::parse(v),
        Agent::Gemini => gemini::parse(v),
        Agent::Copilot => copilot::parse(v),
    }
}

/// The SessionStart answer for `agent`, from Claude Code's shape
/// (`hookSpecificOutput.additionalContext`, `systemMessage`), which Codex and Gemini take as
/// it is. Copilot CLI reads a top-level `additionalContext`.
pub(crate) fn session_start_output(agent: Agent, mut out: Value) -> Value {
    if agent == Agent::Copilot
        && let Some(c) = out.pointer("/hookSpecificOutput/additionalContext").cloned()
        && let Some(o) = out.as_object_mut()
    {
        o.shift_remove("hookSpecificOutput");
        o.insert("additionalContext".to_string(), c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip() {
        for a in Agent::ALL {
            assert_eq!(Agent::parse(a.name()), Some(a));
        }
        assert_eq!(Agent::parse("Claude-Code"), Some(Agent::ClaudeCode));
        assert_eq!(Agent::parse("cursor"), None);
        assert_eq!(Agent::of_record(None), Agent::ClaudeCode);
        assert_eq!(Agent::of_record(Some("gemini")), Agent::Gemini);
    }

    #[test]
    fn detection() {
        let claude = json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Edit",
                            "tool_input": {"file_path": "/p/a"}, "tool_use_id": "toolu_1", "permission_mode": "default"});
        assert_eq!(detect(&claude), Agent::ClaudeCode);
        // Copilot through .claude/settings.json (seen with Copilot CLI 1.0.102).
        let copilot = json!({"hook_event_name": "PreToolUse", "session_id": "s", "timestamp": "2026-12-01T01:08:44.405Z",
                             "cwd": "/p", "tool_name": "Write", "tool_input": {"path": "/p/a", "file_text": "x"}});
        assert_eq!(detect(&copilot), Agent::Copilot);
        let camel = json!({"sessionId": "s", "timestamp": 1796087324405u64, "cwd": "/p", "toolName": "create"});
        assert_eq!(detect(&camel), Agent::Copilot);
        let gemini =
            json!({"session_id": "s", "hook_event_name": "BeforeTool", "timestamp": "2026-12-01T01:13:07.390Z"});
        assert_eq!(detect(&gemini), Agent::Gemini);
        let gemini_start =
            json!({"session_id": "s", "hook_event_name": "SessionStart", "timestamp": "x", "source": "startup"});
        // Ambiguous by shape (Gemini's SessionStart looks like Copilot's): the installers pass
        // `--agent`, detection only matters for payloads arriving through Claude Code's settings.
        assert_eq!(detect(&gemini_start), Agent::Copilot);
        let codex =
            json!({"session_id": "s", "turn_id": "t", "hook_event_name": "PreToolUse", "tool_name": "apply_patch"});
        assert_eq!(detect(&codex), Agent::Codex);
    }
}
