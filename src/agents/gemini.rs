//! Gemini CLI's hook payloads (seen with gemini-cli 0.61.0, `.gemini/settings.json`).
//!
//! Common fields: `session_id`, `transcript_path`, `cwd`, `hook_event_name`, an ISO
//! `timestamp`. Events: `SessionStart` (`source`), `BeforeAgent` (`prompt`), `BeforeTool` /
//! `AfterTool` (`tool_name`, `tool_input`, and after the call `tool_response` {`llmContent`,
//! `returnDisplay`, `error`}), `AfterAgent` (`prompt_response`: the end of a turn),
//! `PreCompress` (`trigger`), `SessionEnd` (`reason`). Tools: `write_file` {`file_path`,
//! `content`}, `replace` {`file_path`, `old_string`, `new_string`}, `run_shell_command`
//! {`command`, `description`, `is_background`}; `file_path` may be relative to `cwd`. No call
//! id ([`super::pairing`]); no failure event (an `error` in the response, or `Exit Code: N` in a
//! shell command's output, says the call failed). `returnDisplay.originalContent` /
//! `isNewFile` give the real pre-image after a file tool.

use std::borrow::Cow;

use serde_json::Value;

use super::Agent;
use super::event::{Change, Event, PathChange, Phase, Shell, ToolCall, ToolKind, exit_code_in};

/// Gemini CLI's own event names (the ones no other agent uses).
pub(crate) fn is_gemini_event(name: &str) -> bool {
    matches!(
        name,
        "BeforeTool"
            | "AfterTool"
            | "BeforeAgent"
            | "AfterAgent"
            | "BeforeModel"
            | "AfterModel"
            | "BeforeToolSelection"
            | "PreCompress"
    )
}

pub(crate) fn phase(name: &str) -> Option<Phase> {
    Some(match name {
        "SessionStart" => Phase::SessionStart,
        "BeforeAgent" => Phase::Prompt,
        "BeforeTool" => Phase::ToolPre,
        "AfterTool" => Phase::ToolPost,
        "AfterAgent" => Phase::TurnEnd,
        "PreCompress" => Phase::Compaction,
        "SessionEnd" => Phase::SessionEnd,
        _ => return None,
    })
}

pub(crate) fn parse(v: &Value) -> Event<'_> {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    let mut ev = Event::common(Agent::Gemini, v, phase);
    let ph = ev.phase;
    ev.prompt = s("prompt").filter(|_| ph == Some(Phase::Prompt));
    ev.source = s("source");
    ev.reason = s("reason");
    ev.last_message = s("prompt_response");
    ev.trigger = s("trigger");
    ev.with_tool(ph, |p| tool_call(v, p))
}

fn tool_call(v: &Value, phase: Phase) -> ToolCall<'_> {
    let name = v.get("tool_name").and_then(Value::as_str).unwrap_or("");
    let input = v.get("tool_input").unwrap_or(&Value::Null);
    let response = v.get("tool_response").unwrap_or(&Value::Null);
    let arg = |k: &str| input.get(k).and_then(Value::as_str);
    let kind = match name {
        "write_file" => match arg("content") {
            Some(t) => file_borrowed(input, response, phase, Change::Write(Cow::Borrowed(t))),
            None => file_borrowed(input, response, phase, Change::Unknown),
        },
        "replace" => match (arg("old_string"), arg("new_string")) {
            (Some(old), Some(new)) if !old.is_empty() => {
                let all = input.get("allow_multiple").and_then(Value::as_bool) == Some(true)
                    || input.get("expected_replacements").and_then(Value::as_u64).is_some_and(|n| n > 1);
                file_borrowed(input, response, phase, Change::Replace { old, new, all })
            }
            _ => file_borrowed(input, response, phase, Change::Unknown),
        },
        "run_shell_command" => ToolKind::Shell(Shell {
            command: arg("command").unwrap_or(""),
            description: arg("description"),
            background: input.get("is_background").and_then(Value::as_bool) == Some(true),
        }),
        _ => ToolKind::Other,
    };
    let error =
        if phase == Phase::ToolPost { response_error(response, matches!(kind, ToolKind::Shell(_))) } else { None };
    ToolCall { name, id: None, input, response, kind, error, interrupted: false }
}

/// A file tool's one path change with a change that borrows from the input.
fn file_borrowed<'a>(input: &'a Value, response: &'a Value, phase: Phase, change: Change<'a>) -> ToolKind<'a> {
    let path = input.get("file_path").or_else(|| input.get("path")).and_then(Value::as_str);
    match path {
        Some(p) => {
            let mut c = PathChange::new(p, change);
            if phase == Phase::ToolPost {
                c.original = original(response);
            }
            ToolKind::Files(vec![c])
        }
        None => ToolKind::Files(vec![]),
    }
}

/// `returnDisplay.originalContent` (the file before), or `isNewFile`.
fn original(r: &Value) -> Option<Option<&str>> {
    let d = r.get("returnDisplay")?;
    if d.get("isNewFile").and_then(Value::as_bool) == Some(true) {
        return Some(None);
    }
    d.get("originalContent").and_then(Value::as_str).map(Some)
}

fn response_error(r: &Value, shell: bool) -> Option<Cow<'_, str>> {
    if let Some(e) = r.get("error").filter(|e| !e.is_null()) {
        let text = e.as_str().or_else(|| e.get("message").and_then(Value::as_str)).unwrap_or("error");
        return Some(Cow::Borrowed(text));
    }
    if shell && let Some(code) = r.get("llmContent").and_then(Value::as_str).and_then(exit_code_in).filter(|c| *c != 0)
    {
        return Some(Cow::Owned(format!("Exit code {code}")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Payloads recorded from gemini-cli 0.61.0 (paths shortened, long strings cut).
    #[test]
    fn recorded_tools() {
        let v = json!({"session_id":"013a","transcript_path":"/h/chats/session.jsonl","cwd":"/p","hook_event_name":"BeforeTool",
            "timestamp":"2026-12-01T01:13:07.390Z","tool_name":"write_file","tool_input":{"file_path":"new.txt","content":"new file\n"}});
        let ev = parse(&v);
        assert_eq!((ev.agent, ev.phase, ev.at_ms), (Agent::Gemini, Some(Phase::ToolPre), Some(1796087587390)));
        let t = ev.tool.unwrap();
        let ToolKind::Files(f) = &t.kind else { panic!() };
        assert_eq!(f[0].path, "new.txt");
        assert!(f[0].creates());

        let v = json!({"session_id":"013a","cwd":"/p","hook_event_name":"AfterTool","timestamp":"2026-12-01T01:13:07.743Z",
            "tool_name":"replace","tool_input":{"file_path":"a.txt","old_string":"hello","new_string":"HELLO","instruction":"x"},
            "tool_response":{"llmContent":"Successfully modified file","returnDisplay":{"fileName":"a.txt","originalContent":"hello\n","newContent":"HELLO\n","isNewFile":false}}});
        let ev = parse(&v);
        assert_eq!(ev.phase, Some(Phase::ToolPost));
        let t = ev.tool.unwrap();
        let ToolKind::Files(f) = &t.kind else { panic!() };
        assert_eq!(f[0].original, Some(Some("hello\n")));

        let v = json!({"session_id":"013a","cwd":"/p","hook_event_name":"AfterTool","timestamp":"x","tool_name":"run_shell_command",
            "tool_input":{"command":"exit 3"},"tool_response":{"llmContent":"<untrusted_context>\nOutput: (empty)\nExit Code: 3\nProcess Group PGID: 22812\n</untrusted_context>","returnDisplay":"Command exited with code: 3"}});
        let ev = parse(&v);
        assert_eq!((ev.phase, ev.tool.unwrap().error.as_deref()), (Some(Phase::ToolFailed), Some("Exit code 3")));
    }

    #[test]
    fn lifecycle() {
        let v = json!({"session_id":"s","hook_event_name":"BeforeAgent","timestamp":"x","prompt":"do it"});
        assert_eq!((parse(&v).phase, parse(&v).prompt), (Some(Phase::Prompt), Some("do it")));
        let v = json!({"session_id":"s","hook_event_name":"AfterAgent","prompt":"do it","prompt_response":"All done.","stop_hook_active":false});
        let ev = parse(&v);
        assert_eq!((ev.phase, ev.last_message, ev.prompt), (Some(Phase::TurnEnd), Some("All done."), None));
        assert_eq!(parse(&json!({"hook_event_name":"BeforeModel"})).phase, None);
        assert!(is_gemini_event("AfterTool") && !is_gemini_event("PreToolUse"));
    }
}
