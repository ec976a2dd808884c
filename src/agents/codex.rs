//! Codex CLI's hook payloads (seen with codex-cli 0.171.0, `.codex/hooks.json`).
//!
//! Close to Claude Code's: `hook_event_name`, `session_id`, `transcript_path` (the rollout
//! file), `cwd`, `model`, `turn_id`, and for tools `tool_name`, `tool_input`, `tool_use_id` (a
//! real call id) and `tool_response` (a string). Shell commands arrive as `Bash` with
//! `tool_input.command`; file edits as `apply_patch` with the whole patch in
//! `tool_input.command`, split here into one path change per `*** Add/Update/Delete File:`
//! (a `*** Move to:` is a delete plus a creation). A command that exits non-zero still fires
//! PostToolUse; its `tool_response` may say `Exit code: N`.

use std::borrow::Cow;

use serde_json::Value;

use super::Agent;
use super::event::{Change, Event, PathChange, Phase, Shell, ToolCall, ToolKind, exit_code_in};
use super::patch::{self, PatchOp};

pub(crate) fn phase(name: &str) -> Option<Phase> {
    Some(match name {
        "SessionStart" => Phase::SessionStart,
        "UserPromptSubmit" => Phase::Prompt,
        "PreToolUse" => Phase::ToolPre,
        "PostToolUse" => Phase::ToolPost,
        "PostToolUseFailure" => Phase::ToolFailed,
        "Stop" => Phase::TurnEnd,
        "SubagentStop" => Phase::SubagentEnd,
        "PreCompact" => Phase::Compaction,
        "SessionEnd" => Phase::SessionEnd,
        _ => return None,
    })
}

pub(crate) fn parse(v: &Value) -> Event<'_> {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    let mut ev = Event::common(Agent::Codex, v, phase);
    let ph = ev.phase;
    ev.prompt = s("prompt");
    ev.source = s("source");
    ev.model = super::claude::model(v.get("model"));
    ev.reason = s("reason");
    ev.last_message = s("last_assistant_message");
    ev.trigger = s("trigger");
    ev.with_tool(ph, |p| tool_call(v, p))
}

fn tool_call(v: &Value, phase: Phase) -> ToolCall<'_> {
    let name = v.get("tool_name").and_then(Value::as_str).unwrap_or("");
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    let response = v.get("tool_response").unwrap_or(&Value::Null);
    let command = input.get("command");
    let kind = match name {
        "apply_patch" => ToolKind::Files(patch_changes(patch_text(input))),
        "Bash" | "shell" | "exec_command" | "local_shell" => ToolKind::Shell(Shell {
            command: command.and_then(Value::as_str).or_else(|| input.get("cmd").and_then(Value::as_str)).unwrap_or(""),
            description: input.get("description").and_then(Value::as_str),
            background: false,
        }),
        _ => ToolKind::Other,
    };
    let mut error = match phase {
        Phase::ToolFailed => {
            Some(Cow::Borrowed(v.get("error").and_then(Value::as_str).or_else(|| response.as_str()).unwrap_or("")))
        }
        _ => None,
    };
    if phase == Phase::ToolPost
        && let Some(text) = response.as_str()
        && let Some(code) = exit_code_in(first_line(text)).filter(|c| *c != 0)
    {
        error = Some(Cow::Owned(format!("Exit code {code}")));
    }
    ToolCall {
        name,
        id: v.get("tool_use_id").and_then(Value::as_str).filter(|s| !s.is_empty()),
        input,
        response,
        kind,
        error,
        interrupted: false,
    }
}

/// Codex puts `Exit code: N` on the result's first line; a later line is the command's own output.
fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The patch of an `apply_patch` call: the input itself (a freeform tool), or its `command`,
/// `input` or `patch` field.
pub(crate) fn patch_text(input: &Value) -> &str {
    input
        .as_str()
        .or_else(|| ["command", "input", "patch"].iter().find_map(|k| input.get(*k).and_then(Value::as_str)))
        .unwrap_or("")
}

/// One path change per file of a patch; a move is the old path deleted and the new one created.
pub(crate) fn patch_changes(text: &str) -> Vec<PathChange<'static>> {
    let mut out = Vec::new();
    for f in patch::parse(text) {
        match f.op {
            PatchOp::Add(content) => out.push(PathChange::new(f.path, Change::Write(Cow::Owned(content)))),
            PatchOp::Delete => out.push(PathChange::new(f.path, Change::Delete { moved_to: None })),
            PatchOp::Update { move_to: None, chunks } => out.push(PathChange::new(f.path, Change::Update(chunks))),
            PatchOp::Update { move_to: Some(to), .. } => {
                out.push(PathChange::new(f.path.clone(), Change::Delete { moved_to: Some(to.clone()) }));
                out.push(PathChange::new(to, Change::MovedFrom { from: f.path }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apply_patch_is_split_per_file() {
        // Recorded from codex-cli 0.171.0 (paths shortened).
        let v = json!({"session_id":"01a2","turn_id":"t1","transcript_path":"/h/rollout.jsonl","cwd":"/p",
            "hook_event_name":"PreToolUse","model":"gpt-5.5","permission_mode":"bypassPermissions","tool_name":"apply_patch",
            "tool_input":{"command":"*** Begin Patch\n*** Add File: new.txt\n+new file\n*** Update File: a.txt\n@@\n-hello\n+HELLO\n*** Delete File: b.txt\n*** Update File: c.txt\n*** Move to: sub/e.txt\n@@\n-hi\n+bye\n*** End Patch\n"},
            "tool_use_id":"call_0_0"});
        let ev = parse(&v);
        assert_eq!((ev.agent, ev.phase), (Agent::Codex, Some(Phase::ToolPre)));
        let t = ev.tool.unwrap();
        assert_eq!(t.id, Some("call_0_0"));
        let ToolKind::Files(f) = &t.kind else { panic!() };
        let paths: Vec<&str> = f.iter().map(|c| c.path.as_ref()).collect();
        assert_eq!(paths, ["new.txt", "a.txt", "b.txt", "c.txt", "sub/e.txt"]);
        assert!(f[0].creates() && f[2].deletes() && f[3].deletes() && f[4].creates());
        assert_eq!(f[1].intended("apply_patch", &Value::Null, Some(b"hello\n")), Some(Some(b"HELLO\n".to_vec())));
    }

    #[test]
    fn bash_and_exit_codes() {
        let v = json!({"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"exit 3"},
                       "tool_response":"Exit code: 3\nWall time: 0 seconds\nOutput:\n","tool_use_id":"call_4_0"});
        let ev = parse(&v);
        assert_eq!(ev.phase, Some(Phase::ToolFailed));
        let t = ev.tool.unwrap();
        assert_eq!(t.error.as_deref(), Some("Exit code 3"));
        let ToolKind::Shell(s) = t.kind else { panic!() };
        assert_eq!(s.command, "exit 3");
        // An empty response (what 0.171.0 sent for `exit 3`) is a success as far as walj can tell.
        let v = json!({"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"exit 3"},"tool_response":""});
        assert_eq!(parse(&v).phase, Some(Phase::ToolPost));
        let v = json!({"session_id":"s","hook_event_name":"Stop","last_assistant_message":"done","turn_id":"t"});
        let ev = parse(&v);
        assert_eq!((ev.phase, ev.last_message), (Some(Phase::TurnEnd), Some("done")));
        assert_eq!(parse(&json!({"hook_event_name":"PermissionRequest"})).phase, None);
    }
}
