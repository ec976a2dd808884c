//! Claude Code's payload ([`Payload`], `src/claude/payload.rs`) as an [`Event`]: one parser among
//! several. It only borrows (the file list of a file tool is the one allocation), so Claude
//! Code's hot path stays as fast as before the event model.

use std::borrow::Cow;

use serde_json::Value;

use super::Agent;
use super::event::{Change, Event, PathChange, Phase, Shell, Subagent, ToolCall, ToolKind};
use crate::claude::events::{FILE_TOOLS, HookEvent, PRE_SKILL_SHELL_COMMAND, SHELL_TOOL, SUBAGENT_TOOL, TODO_TOOLS};
use crate::claude::payload::Payload;

pub(crate) fn phase(e: HookEvent) -> Phase {
    match e {
        HookEvent::PreToolUse => Phase::ToolPre,
        HookEvent::PostToolUse => Phase::ToolPost,
        HookEvent::PostToolUseFailure => Phase::ToolFailed,
        HookEvent::UserPromptSubmit => Phase::Prompt,
        HookEvent::Stop => Phase::TurnEnd,
        HookEvent::StopFailure => Phase::TurnFailed,
        HookEvent::SubagentStop => Phase::SubagentEnd,
        HookEvent::PreCompact => Phase::Compaction,
        HookEvent::SessionStart => Phase::SessionStart,
        HookEvent::SessionEnd => Phase::SessionEnd,
    }
}

pub(crate) fn parse(p: &Payload) -> Event<'_> {
    let mut ev = Event::common(Agent::ClaudeCode, &p.0, |name| {
        HookEvent::parse(name).map(phase).or_else(|| (name == PRE_SKILL_SHELL_COMMAND).then_some(Phase::ToolPre))
    });
    match ev.phase {
        Some(ph) if ph.is_tool() => ev.tool = Some(tool_call(p, ph)),
        Some(Phase::Prompt) => ev.prompt = p.str("prompt"),
        Some(Phase::SessionStart) => {
            ev.source = p.str("source");
            ev.model = model(p.0.get("model"));
        }
        Some(Phase::SessionEnd) => ev.reason = p.str("reason"),
        Some(Phase::TurnEnd | Phase::SubagentEnd | Phase::TurnFailed) => {
            ev.last_message = p.str("last_assistant_message");
        }
        Some(Phase::Compaction) => ev.trigger = p.str("trigger"),
        _ => {}
    }
    ev
}

/// `model` is a string in the docs and an object with an `id` in some versions.
pub(crate) fn model(m: Option<&Value>) -> Option<Cow<'_, str>> {
    let m = m?;
    m.as_str().map(Cow::Borrowed).or_else(|| m.get("id").and_then(Value::as_str).map(Cow::Borrowed))
}

fn tool_call(p: &Payload, phase: Phase) -> ToolCall<'_> {
    let tool = p.tool_name();
    let kind = if FILE_TOOLS.contains(&tool) {
        let mut files = Vec::with_capacity(1);
        if let Some(f) = p.file_path() {
            let mut c = PathChange::new(f, Change::Claude);
            if phase != Phase::ToolPre {
                c.original = original(p);
            }
            files.push(c);
        }
        ToolKind::Files(files)
    } else if tool == SHELL_TOOL || p.event_name() == Some(PRE_SKILL_SHELL_COMMAND) {
        ToolKind::Shell(Shell {
            command: p.input_str("command").unwrap_or(""),
            description: p.input_str("description"),
            background: p.tool_input().get("run_in_background").and_then(Value::as_bool) == Some(true),
        })
    } else if TODO_TOOLS.contains(&tool) {
        ToolKind::Todo
    } else if tool == SUBAGENT_TOOL || tool == "Task" {
        ToolKind::Subagent(Subagent {
            kind: p.input_str("subagent_type"),
            description: p.input_str("description"),
            prompt: p.input_str("prompt"),
            background: p.tool_input().get("run_in_background").and_then(Value::as_bool),
        })
    } else {
        ToolKind::Other
    };
    ToolCall {
        name: tool,
        id: p.tool_use_id(),
        input: p.tool_input(),
        response: p.tool_response(),
        kind,
        error: (phase == Phase::ToolFailed).then(|| Cow::Borrowed(p.str("error").unwrap_or(""))),
        interrupted: phase == Phase::ToolFailed && p.0.get("is_interrupt").and_then(Value::as_bool) == Some(true),
    }
}

/// The response's original content is the real pre-image (`originalFile`, or MultiEdit's
/// `originalFileContents`); `null` or `type: "create"` means the file did not exist.
fn original(p: &Payload) -> Option<Option<&str>> {
    let original = p.response_field("originalFile").or_else(|| p.response_field("originalFileContents"));
    match original {
        Some(Value::String(s)) => Some(Some(s.as_str())),
        Some(Value::Null) => Some(None),
        _ if p.response_field("type").and_then(Value::as_str) == Some("create") => Some(None),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_and_bash() {
        let p = Payload::parse(
            br#"{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Write","tool_use_id":"toolu_1",
                 "tool_input":{"file_path":"/p/a.txt","content":"x"},"tool_response":{"type":"create","originalFile":null}}"#,
        )
        .unwrap();
        let ev = parse(&p);
        assert_eq!((ev.agent, ev.phase, ev.session), (Agent::ClaudeCode, Some(Phase::ToolPost), "s1"));
        let t = ev.tool.unwrap();
        assert_eq!(t.id, Some("toolu_1"));
        let ToolKind::Files(f) = &t.kind else { panic!() };
        assert_eq!((f[0].path.as_ref(), f[0].original), ("/p/a.txt", Some(None)));
        let p = Payload::parse(
            br#"{"session_id":"s1","hook_event_name":"PostToolUseFailure","tool_name":"Bash","error":"Exit code 1",
                 "is_interrupt":true,"tool_input":{"command":"false","run_in_background":true}}"#,
        )
        .unwrap();
        let t = parse(&p).tool.unwrap();
        let ToolKind::Shell(s) = &t.kind else { panic!() };
        assert!(s.background && t.interrupted);
        assert_eq!(t.error.as_deref(), Some("Exit code 1"));
    }
}
