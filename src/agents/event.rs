//! The internal event model every agent's payload becomes ([`super::parse`]).
//!
//! An [`Event`] borrows from the payload: parsing allocates nothing for Claude Code's events
//! except the one-element list of a file tool's path changes.

use std::borrow::Cow;

use serde_json::Value;

use super::Agent;
use super::patch::{self, Chunk};

/// What happened, in walj's terms (each agent names these differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    SessionStart,
    /// The user (or the agent on the user's behalf) submitted a prompt.
    Prompt,
    /// A tool call is about to run.
    ToolPre,
    /// A tool call ran.
    ToolPost,
    /// A tool call started and failed.
    ToolFailed,
    /// The main agent finished its turn.
    TurnEnd,
    /// A subagent finished.
    SubagentEnd,
    /// A turn ended by an API error (Claude Code's StopFailure).
    TurnFailed,
    /// The conversation is about to be compacted.
    Compaction,
    SessionEnd,
}

impl Phase {
    pub(crate) fn is_tool(self) -> bool {
        matches!(self, Phase::ToolPre | Phase::ToolPost | Phase::ToolFailed)
    }

    /// A short stable name (dedup keys, error messages).
    pub const fn name(self) -> &'static str {
        match self {
            Phase::SessionStart => "session_start",
            Phase::Prompt => "prompt",
            Phase::ToolPre => "tool_pre",
            Phase::ToolPost => "tool_post",
            Phase::ToolFailed => "tool_failed",
            Phase::TurnEnd => "turn_end",
            Phase::SubagentEnd => "subagent_end",
            Phase::TurnFailed => "turn_failed",
            Phase::Compaction => "compaction",
            Phase::SessionEnd => "session_end",
        }
    }
}

/// One hook event of one agent.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    pub agent: Agent,
    /// `None`: an event walj does not journal (it is ignored, not an error).
    pub phase: Option<Phase>,
    /// The agent's own name for the event (for messages).
    pub name: &'a str,
    /// The full session id (`"unknown"` when the payload has none).
    pub session: &'a str,
    pub cwd: Option<&'a str>,
    pub transcript: Option<&'a str>,
    /// When the agent fired the event (ms since the epoch), when it says: one event delivered to
    /// two hook configurations carries the same instant ([`super::pairing`]).
    pub at_ms: Option<i64>,
    pub tool: Option<ToolCall<'a>>,
    pub prompt: Option<&'a str>,
    /// SessionStart's `source` (startup, resume, clear, …).
    pub source: Option<&'a str>,
    pub model: Option<Cow<'a, str>>,
    /// SessionEnd's `reason`.
    pub reason: Option<&'a str>,
    /// The agent's last message of the turn (TurnEnd).
    pub last_message: Option<&'a str>,
    /// Compaction's `trigger` (manual, auto).
    pub trigger: Option<&'a str>,
    /// The subagent that fired the event (Claude Code's `agent_id`, `agent_type`): `None` for
    /// the main thread. Kept on every record the event makes, so a subagent's work is told
    /// apart from the main thread's that ran at the same time.
    pub agent_id: Option<&'a str>,
    pub agent_type: Option<&'a str>,
    /// The whole payload, for what only one agent sends.
    pub raw: &'a Value,
}

impl<'a> Event<'a> {
    /// An event with every optional part empty.
    pub(crate) fn new(
        agent: Agent,
        raw: &'a Value,
        name: &'a str,
        phase: Option<Phase>,
        session: &'a str,
    ) -> Event<'a> {
        Event {
            agent,
            phase,
            name,
            session,
            cwd: None,
            transcript: None,
            at_ms: None,
            tool: None,
            prompt: None,
            source: None,
            model: None,
            reason: None,
            last_message: None,
            trigger: None,
            agent_id: None,
            agent_type: None,
            raw,
        }
    }

    /// The preamble every agent's payload starts with, read once for all parsers: the event's
    /// name (`hook_event_name`), its phase (`phase_of` the name), the session (`session_id`,
    /// `"unknown"` when absent or empty), `cwd`, `transcript_path`, `timestamp` and the
    /// subagent's `agent_id`/`agent_type`. Each key is also read in camelCase (Copilot's own
    /// hooks spell them so).
    pub(crate) fn common(agent: Agent, raw: &'a Value, phase_of: impl FnOnce(&str) -> Option<Phase>) -> Event<'a> {
        let s = |snake: &str, camel: &str| {
            raw.get(snake).or_else(|| raw.get(camel)).and_then(Value::as_str).filter(|x| !x.is_empty())
        };
        let name = s("hook_event_name", "hookEventName").unwrap_or("");
        let phase = phase_of(name);
        let mut ev = Event::new(agent, raw, name, phase, s("session_id", "sessionId").unwrap_or("unknown"));
        ev.cwd = raw.get("cwd").and_then(Value::as_str);
        ev.transcript = s("transcript_path", "transcriptPath");
        ev.at_ms = raw.get("timestamp").and_then(parse_ms);
        ev.agent_id = s("agent_id", "agentId");
        ev.agent_type = s("agent_type", "agentType");
        ev
    }

    /// Sets the phase and, for a tool phase, the call `tool_call` reads: a Post whose result
    /// carries an error is a failed call (agents that have no PostToolUseFailure of their own).
    pub(crate) fn with_tool(
        mut self,
        phase: Option<Phase>,
        tool_call: impl FnOnce(Phase) -> ToolCall<'a>,
    ) -> Event<'a> {
        let mut phase = phase;
        if let Some(p) = phase.filter(|p| p.is_tool()) {
            let call = tool_call(p);
            if p == Phase::ToolPost && call.error.is_some() {
                phase = Some(Phase::ToolFailed);
            }
            self.tool = Some(call);
        }
        self.phase = phase;
        self
    }

    /// `raw.<key>` as a string.
    pub fn str(&self, key: &str) -> Option<&'a str> {
        self.raw.get(key).and_then(Value::as_str)
    }
}

/// One tool call.
#[derive(Debug, Clone)]
pub struct ToolCall<'a> {
    /// The agent's name for the tool (`Edit`, `apply_patch`, `write_file`, `create`, …).
    pub name: &'a str,
    /// The agent's call id (Claude Code's `tool_use_id`, Codex's call id); `None` for agents
    /// that have none (Gemini, Copilot), paired by [`super::pairing`].
    pub id: Option<&'a str>,
    pub input: &'a Value,
    pub response: &'a Value,
    pub kind: ToolKind<'a>,
    /// Why the call failed: the failure event's text, or a result that says it failed (an
    /// exit code other than 0 in a shell tool's output).
    pub error: Option<Cow<'a, str>>,
    /// The user interrupted it.
    pub interrupted: bool,
}

/// What a tool call does, as far as walj cares.
#[derive(Debug, Clone)]
pub enum ToolKind<'a> {
    /// Changes files: one or several paths.
    Files(Vec<PathChange<'a>>),
    Shell(Shell<'a>),
    /// Updates the session's todo list (Claude Code's todo tools).
    Todo,
    /// Starts a subagent (Claude Code's `Agent` tool, `Task` before 2.1).
    Subagent(Subagent<'a>),
    Other,
}

impl ToolKind<'_> {
    /// A short tag for fingerprints: one call seen under two tool names (Copilot's `create` in
    /// its own hooks, `Write` through `.claude/settings.json`) gets one fingerprint.
    pub(crate) fn tag(&self) -> &'static str {
        match self {
            ToolKind::Files(_) => "files",
            ToolKind::Shell(_) => "shell",
            ToolKind::Todo => "todo",
            ToolKind::Subagent(_) => "subagent",
            ToolKind::Other => "other",
        }
    }
}

/// A shell command.
#[derive(Debug, Clone)]
pub struct Shell<'a> {
    pub command: &'a str,
    pub description: Option<&'a str>,
    /// Runs on after the call returns.
    pub background: bool,
}

/// A subagent launch: what it was asked and of which type.
#[derive(Debug, Clone)]
pub struct Subagent<'a> {
    /// `subagent_type` (`general-purpose`, a custom agent's name).
    pub kind: Option<&'a str>,
    pub description: Option<&'a str>,
    pub prompt: Option<&'a str>,
    /// Runs on after the call returns (`run_in_background`; 2.1.328 runs subagents in the
    /// background by default, and says so in the result).
    pub background: Option<bool>,
}

/// One path a file tool changes, as given by the agent (absolute, or relative to `cwd`).
#[derive(Debug, Clone)]
pub struct PathChange<'a> {
    pub path: Cow<'a, str>,
    pub change: Change<'a>,
    /// After the call (Post events): the file before it, when the agent's result says
    /// (Claude Code's `originalFile`, Gemini's `originalContent`): `Some(None)` = it did not exist.
    pub original: Option<Option<&'a str>>,
}

impl<'a> PathChange<'a> {
    pub(crate) fn new(path: impl Into<Cow<'a, str>>, change: Change<'a>) -> PathChange<'a> {
        PathChange { path: path.into(), change, original: None }
    }
}

/// How a path changes.
#[derive(Debug, Clone)]
pub enum Change<'a> {
    /// A Claude Code file tool: what it leaves is computed from the tool's input
    /// ([`patch::apply_tool`]).
    Claude,
    /// The file's whole new content (Write, `write_file`, `create`, a patch's Add File).
    Write(Cow<'a, str>),
    /// `old` replaced by `new`, once or everywhere.
    Replace { old: &'a str, new: &'a str, all: bool },
    /// A patch's chunks for this file.
    Update(Vec<Chunk>),
    /// Deleted; `moved_to` when a patch moved it.
    Delete { moved_to: Option<String> },
    /// Created by a patch's `*** Move to:` from `from`, with `from`'s chunks applied.
    MovedFrom { from: String },
    /// Changed in a way walj cannot compute (it still captures before and after).
    Unknown,
}

impl PathChange<'_> {
    /// Whether the call means to create the file (when it did not exist).
    pub(crate) fn creates(&self) -> bool {
        matches!(self.change, Change::Write(_) | Change::MovedFrom { .. })
    }

    pub(crate) fn deletes(&self) -> bool {
        matches!(self.change, Change::Delete { .. })
    }

    /// What the call means to leave at this path, from the file before (`pre`, `None` =
    /// absent): `Some(Some(bytes))`, `Some(None)` (the file gone), or `None` when it cannot be
    /// told. `tool`/`input` serve Claude Code's tools.
    pub(crate) fn intended(&self, tool: &str, input: &Value, pre: Option<&[u8]>) -> Option<Option<Vec<u8>>> {
        match &self.change {
            Change::Claude => patch::apply_tool(tool, input, None, pre).map(Some),
            Change::Write(s) => Some(Some(s.as_bytes().to_vec())),
            Change::Replace { old, new, all } => {
                let text = std::str::from_utf8(pre?).ok()?;
                if old.is_empty() || !text.contains(old) {
                    return None;
                }
                let out = if *all { text.replace(old, new) } else { text.replacen(old, new, 1) };
                Some(Some(out.into_bytes()))
            }
            Change::Update(chunks) => {
                let text = std::str::from_utf8(pre?).ok()?;
                patch::apply(text, chunks).map(|s| Some(s.into_bytes()))
            }
            Change::Delete { .. } => Some(None),
            Change::MovedFrom { .. } | Change::Unknown => None,
        }
    }
}

/// An ISO 8601 time (`2026-12-01T01:08:44.405Z`) or a number of ms since the epoch.
pub(crate) fn parse_ms(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp_millis()),
        _ => None,
    }
}

/// "exit code N" / "Exit Code: N" in a shell tool's output (Copilot, Gemini, Codex): the code.
pub(crate) fn exit_code_in(text: &str) -> Option<i64> {
    let lower = text.to_ascii_lowercase();
    let at = lower.rfind("exit code")?;
    let rest = lower[at + "exit code".len()..].trim_start_matches([':', ' ']);
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn times_and_exit_codes() {
        assert_eq!(parse_ms(&json!("2026-12-01T01:08:44.405Z")), Some(1796087324405));
        assert_eq!(parse_ms(&json!(1796087324405u64)), Some(1796087324405));
        assert_eq!(parse_ms(&json!("yesterday")), None);
        assert_eq!(exit_code_in("\n<shellId: 1 completed with exit code 3>"), Some(3));
        assert_eq!(exit_code_in("Output: (empty)\nExit Code: 3\nProcess Group PGID: 1"), Some(3));
        assert_eq!(exit_code_in("Exit code: 0\nWall time: 0 seconds"), Some(0));
        assert_eq!(exit_code_in("No Content"), None);
    }

    #[test]
    fn intended_contents() {
        let i = json!({});
        let w = PathChange::new("a", Change::Write("x\n".into()));
        assert_eq!(w.intended("write_file", &i, Some(b"old")), Some(Some(b"x\n".to_vec())));
        assert!(w.creates() && !w.deletes());
        let r = PathChange::new("a", Change::Replace { old: "b", new: "B", all: false });
        assert_eq!(r.intended("replace", &i, Some(b"abcb")), Some(Some(b"aBcb".to_vec())));
        assert_eq!(r.intended("replace", &i, Some(b"zzz")), None);
        let d = PathChange::new("a", Change::Delete { moved_to: None });
        assert_eq!(d.intended("apply_patch", &i, Some(b"x")), Some(None));
        let c = PathChange::new("a", Change::Claude);
        let edit = json!({"old_string": "b", "new_string": "B"});
        assert_eq!(c.intended("Edit", &edit, Some(b"ab")), Some(Some(b"aB".to_vec())));
    }
}
