//! GitHub Copilot CLI's hook payloads (seen with Copilot CLI 1.0.102).
//!
//! Two shapes, chosen by how the event is named in the hook configuration:
//! - PascalCase (`PreToolUse`, …; also what Copilot sends to the hooks of
//!   `.claude/settings.json`): `hook_event_name`, `session_id`, an ISO `timestamp`, `cwd`,
//!   `tool_name` in Claude Code's vocabulary (`Write`, `Edit`, `Bash`) with Copilot's arguments
//!   (`path`, `file_text`, `old_str`, `new_str`), `tool_result` {`result_type`,
//!   `text_result_for_llm`}; `error` on PostToolUseFailure.
//! - camelCase (`preToolUse`, …): no event name at all, `sessionId`, a numeric `timestamp`,
//!   `toolName` (`create`, `edit`, `bash`, `apply_patch`), `toolArgs`, `toolResult`
//!   {`resultType`, `textResultForLlm`}. The event is told from the fields present.
//!
//! No call id in either: [`super::pairing`] pairs Pre and Post (two parallel calls fire both Pre
//! hooks before either Post). A shell command that exits non-zero arrives as a *successful*
//! PostToolUse whose text ends with `<shellId: N completed with exit code K>`: walj reads the code.

use std::borrow::Cow;

use serde_json::Value;

use super::Agent;
use super::event::{Change, Event, PathChange, Phase, Shell, ToolCall, ToolKind, exit_code_in};

fn phase_named(name: &str) -> Option<Phase> {
    Some(match name {
        "SessionStart" | "sessionStart" => Phase::SessionStart,
        "UserPromptSubmit" | "userPromptSubmitted" => Phase::Prompt,
        "PreToolUse" | "preToolUse" => Phase::ToolPre,
        "PostToolUse" | "postToolUse" => Phase::ToolPost,
        "PostToolUseFailure" | "postToolUseFailure" => Phase::ToolFailed,
        "Stop" | "agentStop" => Phase::TurnEnd,
        "SubagentStop" | "subagentStop" => Phase::SubagentEnd,
        "PreCompact" | "preCompact" => Phase::Compaction,
        "SessionEnd" | "sessionEnd" => Phase::SessionEnd,
        _ => return None,
    })
}

/// A camelCase payload names no event: tell it from its fields.
fn phase_from_fields(v: &Value) -> Option<Phase> {
    let has = |k: &str| v.get(k).is_some();
    Some(if has("toolName") {
        if has("toolResult") {
            Phase::ToolPost
        } else if has("error") {
            Phase::ToolFailed
        } else {
            Phase::ToolPre
        }
    } else if has("errorContext") {
        return None;
    } else if has("stopReason") {
        if has("agentName") { Phase::SubagentEnd } else { Phase::TurnEnd }
    } else if has("prompt") {
        Phase::Prompt
    } else if has("trigger") {
        Phase::Compaction
    } else if has("reason") {
        Phase::SessionEnd
    } else if has("source") {
        Phase::SessionStart
    } else {
        return None;
    })
}

pub(crate) fn parse(v: &Value) -> Event<'_> {
    let mut ev =
        Event::common(Agent::Copilot, v, |name| if name.is_empty() { phase_from_fields(v) } else { phase_named(name) });
    let ph = ev.phase;
    ev.prompt = v.get("prompt").and_then(Value::as_str);
    // Copilot says "new" for what Claude Code calls "startup".
    ev.source = v.get("source").and_then(Value::as_str).map(|s| if s == "new" { "startup" } else { s });
    ev.reason = v.get("reason").and_then(Value::as_str);
    ev.trigger = v.get("trigger").and_then(Value::as_str);
    ev.with_tool(ph, |p| tool_call(v, p))
}

fn tool_call(v: &Value, phase: Phase) -> ToolCall<'_> {
    let name = v.get("tool_name").or_else(|| v.get("toolName")).and_then(Value::as_str).unwrap_or("");
    let input = v.get("tool_input").or_else(|| v.get("toolArgs")).unwrap_or(&Value::Null);
    let response = v.get("tool_result").or_else(|| v.get("toolResult")).unwrap_or(&Value::Null);
    let arg = |k: &str| input.get(k).and_then(Value::as_str);
    let kind = match name {
        "Write" | "create" => match arg("path") {
            Some(p) => ToolKind::Files(vec![PathChange::new(
                p,
                arg("file_text").map_or(Change::Unknown, |t| Change::Write(Cow::Borrowed(t))),
            )]),
            None => ToolKind::Files(vec![]),
        },
        "Edit" | "edit" | "str_replace" => match arg("path") {
            Some(p) => {
                let change = match (arg("old_str"), arg("new_str")) {
                    (Some(old), Some(new)) if !old.is_empty() => Change::Replace { old, new, all: false },
                    _ => Change::Unknown,
                };
                ToolKind::Files(vec![PathChange::new(p, change)])
            }
            None => ToolKind::Files(vec![]),
        },
        "apply_patch" => ToolKind::Files(super::codex::patch_changes(super::codex::patch_text(input))),
        "Bash" | "bash" | "powershell" => ToolKind::Shell(Shell {
            command: arg("command").unwrap_or(""),
            description: arg("description"),
            background: arg("mode") == Some("async"),
        }),
        _ => ToolKind::Other,
    };
    let error = match phase {
        Phase::ToolFailed => Some(Cow::Borrowed(error_text(v).unwrap_or(""))),
        Phase::ToolPost => result_error(response, matches!(kind, ToolKind::Shell(_))),
        _ => None,
    };
    ToolCall { name, id: None, input, response, kind, error, interrupted: false }
}

fn error_text(v: &Value) -> Option<&str> {
    let e = v.get("error")?;
    e.as_str().or_else(|| e.get("message").and_then(Value::as_str))
}

/// A "successful" result that says the call failed: a result type other than success, or a
/// shell command's exit code other than 0.
fn result_error(r: &Value, shell: bool) -> Option<Cow<'_, str>> {
    let kind = r.get("result_type").or_else(|| r.get("resultType")).and_then(Value::as_str);
    let text = r.get("text_result_for_llm").or_else(|| r.get("textResultForLlm")).and_then(Value::as_str);
    if let Some(k) = kind.filter(|k| !k.is_empty() && *k != "success") {
        return Some(Cow::Owned(format!("{k}: {}", text.unwrap_or(""))));
    }
    if shell && let Some(code) = text.and_then(exit_code_in).filter(|c| *c != 0) {
        return Some(Cow::Owned(format!("Exit code {code}")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Payloads recorded from Copilot CLI 1.0.102 through `.claude/settings.json`.
    #[test]
    fn pascal_case_through_claude_settings() {
        let v = json!({"hook_event_name":"PreToolUse","session_id":"67a8","timestamp":"2026-12-01T01:08:44.405Z",
            "cwd":"/p","tool_name":"Write","tool_input":{"path":"/p/new.txt","file_text":"new file\n"}});
        let ev = parse(&v);
        assert_eq!(
            (ev.agent, ev.phase, ev.session, ev.at_ms),
            (Agent::Copilot, Some(Phase::ToolPre), "67a8", Some(1796087324405))
        );
        let t = ev.tool.unwrap();
        assert_eq!(t.id, None);
        let ToolKind::Files(f) = &t.kind else { panic!() };
        assert_eq!(f[0].path, "/p/new.txt");
        assert_eq!(f[0].intended("Write", t.input, None), Some(Some(b"new file\n".to_vec())));

        let v = json!({"hook_event_name":"PostToolUse","session_id":"67a8","timestamp":"2026-12-01T01:08:44.717Z",
            "cwd":"/p","tool_name":"Bash","tool_input":{"command":"exit 3","description":"fail"},
            "tool_result":{"result_type":"success","text_result_for_llm":"\n<shellId: 1 completed with exit code 3>"}});
        let ev = parse(&v);
        assert_eq!(ev.phase, Some(Phase::ToolFailed));
        assert_eq!(ev.tool.unwrap().error.as_deref(), Some("Exit code 3"));

        let v = json!({"hook_event_name":"PreToolUse","session_id":"s","timestamp":"2026-12-01T01:08:57.382Z","cwd":"/p",
            "tool_name":"Edit","tool_input":{"path":"/p/a.txt","old_str":"hello","new_str":"HELLO"}});
        let t = parse(&v).tool.unwrap();
        let ToolKind::Files(f) = &t.kind else { panic!() };
        assert_eq!(f[0].intended("Edit", t.input, Some(b"hello\n")), Some(Some(b"HELLO\n".to_vec())));

        let v = json!({"hook_event_name":"SessionStart","session_id":"s","timestamp":"2026-12-01T01:08:44.238Z",
            "cwd":"/p","source":"new","initial_prompt":"do it"});
        let ev = parse(&v);
        assert_eq!((ev.phase, ev.source), (Some(Phase::SessionStart), Some("startup")));
    }

    #[test]
    fn camel_case_is_told_from_fields() {
        let pre = json!({"sessionId":"s","timestamp":1796087324494u64,"cwd":"/p","toolName":"bash","toolArgs":{"command":"echo hi > c.txt","description":"write c"}});
        assert_eq!(parse(&pre).phase, Some(Phase::ToolPre));
        let post = json!({"sessionId":"s","timestamp":1796087324601u64,"cwd":"/p","toolName":"bash","toolArgs":{"command":"echo hi"},
                          "toolResult":{"resultType":"success","textResultForLlm":"\n<shellId: 0 completed with exit code 0>"}});
        assert_eq!(parse(&post).phase, Some(Phase::ToolPost));
        let fail = json!({"sessionId":"s","timestamp":1,"cwd":"/p","toolName":"edit","toolArgs":{"path":"/p/a"},"error":"Tool 'edit' does not exist."});
        let ev = parse(&fail);
        assert_eq!(
            (ev.phase, ev.tool.unwrap().error.as_deref()),
            (Some(Phase::ToolFailed), Some("Tool 'edit' does not exist."))
        );
        let stop = json!({"sessionId":"s","timestamp":1,"cwd":"/p","transcriptPath":"/h/events.jsonl","stopReason":"end_turn"});
        let ev = parse(&stop);
        assert_eq!((ev.phase, ev.transcript), (Some(Phase::TurnEnd), Some("/h/events.jsonl")));
        assert_eq!(parse(&json!({"sessionId":"s","prompt":"do it"})).phase, Some(Phase::Prompt));
        assert_eq!(parse(&json!({"sessionId":"s","reason":"complete"})).phase, Some(Phase::SessionEnd));
        assert_eq!(parse(&json!({"sessionId":"s","source":"new"})).phase, Some(Phase::SessionStart));
    }
}
