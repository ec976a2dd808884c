//! Codex CLI's rollout files (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, seen
//! with codex-cli 0.171.0). One JSON object a line: `{timestamp, type, payload}`.
//!
//! - `session_meta`: `id`, `cwd`, `cli_version`, `timestamp`, `git` {`branch`, `commit_hash`}.
//! - `turn_context`: `model`.
//! - `response_item`: `custom_tool_call` {`call_id`, `name: apply_patch`, `input`: the patch},
//!   `function_call` {`call_id`, `name` (`exec_command`, …), `arguments`: a JSON string},
//!   `custom_tool_call_output` / `function_call_output` {`call_id`, `output`}.
//! - `event_msg`: `item_completed` with `item` `UserMessage` (the prompt), `FileChange` {`id`:
//!   the call id, `changes`: absolute path → {`type`: add/update/delete, `content`}, `status`},
//!   `CommandExecution` {`id`, `exit_code`, `status`}; `task_complete` {`turn_id`,
//!   `last_agent_message`}: the end of a turn.
//!
//! A resumed session (`codex resume ID`, `codex exec resume ID`) appends to the same file. A call killed with its
//! agent has its `function_call` line and nothing after.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::session_file::{
    Call, CallKind, Edit, FileChange, Outcome, SessionFile, Step, owned, patch_edits, read_lines, s, text_of,
};
use crate::agents::event::exit_code_in;

/// The folder a rollout's session ran in (its `session_meta`).
pub(crate) fn cwd_of(path: &Path) -> Option<PathBuf> {
    let v = super::session_file::first_line(path)?;
    (s(&v, "type") == Some("session_meta")).then(|| v["payload"]["cwd"].as_str().map(PathBuf::from))?
}

pub(crate) fn parse(path: &Path) -> io::Result<SessionFile> {
    let mut file = SessionFile::default();
    let mut steps: Vec<Step> = Vec::new();
    // Call id → index of its step.
    let mut calls: HashMap<String, usize> = HashMap::new();
    // What the FileChange / CommandExecution items said, by call id (they come before the output).
    let mut items: HashMap<String, Value> = HashMap::new();
    let mut meta_seen = false;
    let counts = read_lines(path, |line| {
        let ts = s(&line, "timestamp").unwrap_or("").to_string();
        let p = &line["payload"];
        match (s(&line, "type").unwrap_or(""), s(p, "type").unwrap_or("")) {
            ("session_meta", _) if !meta_seen => {
                meta_seen = true;
                file_meta(&mut file, p, &ts);
            }
            ("turn_context", _) if file.model.is_none() => file.model = owned(p, "model"),
            ("response_item", "custom_tool_call" | "function_call") => {
                let Some(id) = owned(p, "call_id") else { return };
                if calls.contains_key(&id) {
                    return;
                }
                let name = s(p, "name").unwrap_or("").to_string();
                let kind = call_kind(&name, p);
                calls.insert(id.clone(), steps.len());
                steps.push(Step::Call(Call { id, ts, tool: name, kind, outcome: None }));
            }
            ("response_item", "custom_tool_call_output" | "function_call_output") => {
                let Some(id) = s(p, "call_id") else { return };
                let Some(&i) = calls.get(id) else { return };
                let Step::Call(c) = &mut steps[i] else { return };
                if c.outcome.is_none() {
                    let output = output_text(&p["output"]);
                    c.outcome = Some(Outcome { ts, error: call_error(c, items.get(id), &output) });
                }
            }
            ("event_msg", "item_completed") => {
                let item = &p["item"];
                match s(item, "type").unwrap_or("") {
                    "UserMessage" => {
                        let text = text_of(&item["content"]);
                        let id = owned(item, "id").unwrap_or_else(|| format!("prompt:{ts}"));
                        if !text.trim().is_empty() {
                            steps.push(Step::Prompt { id, ts, text });
                        }
                    }
                    "FileChange" | "CommandExecution" => {
                        let Some(id) = owned(item, "id") else { return };
                        // The item says how the call ended (its output line follows).
                        if let Some(&i) = calls.get(&id)
                            && let Step::Call(c) = &mut steps[i]
                        {
                            if let CallKind::Files(changes) = &mut c.kind {
                                recorded_contents(changes, item);
                            }
                            if c.outcome.is_none() {
                                c.outcome = Some(Outcome { ts, error: call_error(c, Some(item), "") });
                            }
                        }
                        items.insert(id, item.clone());
                    }
                    _ => {}
                }
            }
            ("event_msg", "task_complete") => {
                let turn = s(p, "turn_id").unwrap_or(&ts);
                steps.push(Step::TurnEnd {
                    id: format!("turn:{turn}"),
                    ts: ts.clone(),
                    message: owned(p, "last_agent_message").filter(|m| !m.is_empty()),
                });
            }
            _ => {}
        }
    })?;
    file.steps = steps;
    Ok(file.counted(counts))
}

fn file_meta(file: &mut SessionFile, p: &Value, ts: &str) {
    file.session = owned(p, "id").or_else(|| owned(p, "session_id")).unwrap_or_default();
    file.start_ts = owned(p, "timestamp").unwrap_or_else(|| ts.to_string());
    file.cwd = owned(p, "cwd");
    file.version = owned(p, "cli_version");
    file.branch = p.pointer("/git/branch").and_then(Value::as_str).map(str::to_string);
    file.head = p.pointer("/git/commit_hash").and_then(Value::as_str).map(str::to_string);
}

fn call_kind(name: &str, p: &Value) -> CallKind {
    // A freeform tool's input is the text itself; a function's arguments are a JSON string.
    let args: Value = match (&p["input"], s(p, "arguments")) {
        (Value::String(t), _) => Value::String(t.clone()),
        (_, Some(a)) => serde_json::from_str(a).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    match name {
        "apply_patch" => CallKind::Files(patch_edits(crate::agents::codex::patch_text(&args))),
        "exec_command" | "shell" | "local_shell" | "Bash" => {
            let command = match args.get("cmd").or_else(|| args.get("command")) {
                Some(Value::String(c)) => c.clone(),
                Some(Value::Array(parts)) => {
                    let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                    // `["bash", "-lc", "…"]`: the script.
                    match parts.as_slice() {
                        [_, "-lc" | "-c", script] => script.to_string(),
                        _ => parts.join(" "),
                    }
                }
                _ => String::new(),
            };
            CallKind::Shell {
                command,
                description: None,
                background: false,
                cwd: owned(&args, "workdir").or_else(|| owned(&args, "cwd")),
            }
        }
        _ => CallKind::Other,
    }
}

fn output_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        // `{content, success}` in some versions.
        Value::Object(_) => owned(v, "content").unwrap_or_default(),
        _ => String::new(),
    }
}

/// Why a call failed, from its item (FileChange / CommandExecution) or its output text.
fn call_error(c: &Call, item: Option<&Value>, output: &str) -> Option<String> {
    match &c.kind {
        CallKind::Shell { .. } => {
            let code = item.and_then(|i| i["exit_code"].as_i64()).or_else(|| exit_code(output));
            code.filter(|c| *c != 0).map(|c| format!("Exit code {c}"))
        }
        CallKind::Files(_) => match item {
            Some(i) if s(i, "status") == Some("completed") => None,
            Some(i) => Some(owned(i, "stderr").filter(|e| !e.trim().is_empty()).unwrap_or_else(|| {
                format!("{}: {}", s(i, "status").unwrap_or("failed"), s(i, "stdout").unwrap_or(""))
            })),
            // No item: the patch was refused before it ran (its output says why), unless the
            // output's first line says `Exit code: 0`.
            None => match output.lines().next().and_then(exit_code_in) {
                Some(0) => None,
                _ => Some(output.to_string()),
            },
        },
        CallKind::Other => None,
    }
}

/// "Process exited with code N" (exec_command) or "Exit code: N" on the first line.
fn exit_code(output: &str) -> Option<i64> {
    for line in output.lines().take(4) {
        if let Some(rest) = line.strip_prefix("Process exited with code ") {
            return rest.trim().parse().ok();
        }
    }
    output.lines().next().and_then(exit_code_in)
}

/// The contents a FileChange item recorded: a deleted file's, an added file's.
fn recorded_contents(changes: &mut [FileChange], item: &Value) {
    let Some(map) = item["changes"].as_object() else { return };
    for (path, ch) in map {
        let content = owned(ch, "content");
        for c in changes.iter_mut().filter(|c| same_path(&c.path, path)) {
            match (s(ch, "type"), &c.edit) {
                (Some("delete"), Edit::Delete) if content.is_some() => c.before = Some(content.clone()),
                (Some("add"), Edit::Write(_)) if content.is_some() => c.after = Some(content.clone()),
                _ => {}
            }
        }
    }
}

/// A patch's path (relative to the session's folder, or absolute) and an item's absolute one.
fn same_path(patch_path: &str, abs: &str) -> bool {
    if Path::new(patch_path).is_absolute() {
        return patch_path == abs;
    }
    Path::new(abs).ends_with(patch_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(exit_code("Chunk ID: 1\nWall time: 0.0000 seconds\nProcess exited with code 3\nOutput:\n"), Some(3));
        assert_eq!(exit_code("Exit code: 0\nWall time: 0 seconds\nOutput:\n"), Some(0));
        assert_eq!(exit_code("no code here"), None);
    }

    #[test]
    fn commands() {
        let p = serde_json::json!({"arguments": "{\"cmd\":\"echo hi > c.txt\",\"workdir\":\"/p/sub\"}"});
        let CallKind::Shell { command, cwd, .. } = call_kind("exec_command", &p) else { panic!() };
        assert_eq!((command.as_str(), cwd.as_deref()), ("echo hi > c.txt", Some("/p/sub")));
        let p = serde_json::json!({"arguments": "{\"command\":[\"bash\",\"-lc\",\"ls\"]}"});
        let CallKind::Shell { command, .. } = call_kind("shell", &p) else { panic!() };
        assert_eq!(command, "ls");
        assert!(same_path("a.txt", "/p/a.txt") && !same_path("a.txt", "/p/ba.txt"));
    }
}
