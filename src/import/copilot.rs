//! Copilot CLI's session events (`$COPILOT_HOME/session-state/<id>/events.jsonl`, seen with
//! Copilot CLI 1.0.102). One event a line: `{type, data, id, timestamp, parentId}`.
//!
//! - `session.start` {`sessionId`, `copilotVersion`, `selectedModel`, `startTime`, `context`
//!   {`cwd`, `gitRoot`, `branch`, `headCommit`}}; `session.resume` (a new process took it up);
//!   `session.shutdown` {`shutdownType`}.
//! - `user.message` {`content`}: a prompt. `assistant.message` {`content`, `toolRequests`
//!   [{`toolCallId`, `name`, `arguments`}]}: calls, or (no calls, some text) the turn's answer.
//! - `tool.execution_start` {`toolCallId`, `toolName`, `arguments`}, `tool.execution_complete`
//!   {`toolCallId`, `success`, `error` {`message`}, `result` {`content`}, `shellExecution`
//!   {`exitCode`}}. A call killed with its agent has its start and no completion.
//!
//! Beside the events, `rewind-file-snapshots/index.json` lists, per prompt (`eventId`: the
//! `user.message` event), each file's content before the prompt (`preimage`: `absent`, or a
//! `backupFile` in `backups/`): the pre-image of the first call of the turn that touches it. It
//! is written when the turn ends.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::session_file::{
    Call, CallKind, Content, Edit, FileChange, Outcome, SessionFile, Step, owned, patch_edits, read_lines, s,
};
use crate::agents::event::exit_code_in;

/// The folder a session ran in (its `session.start`).
pub(crate) fn cwd_of(path: &Path) -> Option<PathBuf> {
    let v = super::session_file::first_line(path)?;
    (s(&v, "type") == Some("session.start")).then(|| v.pointer("/data/context/cwd")?.as_str().map(PathBuf::from))?
}

pub(crate) fn parse(path: &Path) -> io::Result<SessionFile> {
    let mut file = SessionFile::default();
    let dir = path.parent().unwrap_or(Path::new("."));
    let snapshots = Snapshots::read(dir);
    let mut steps: Vec<Step> = Vec::new();
    let mut calls: HashMap<String, usize> = HashMap::new();
    // The prompt event of the running turn (its snapshot holds the files before it).
    let mut prompt_event: Option<String> = None;
    let counts = read_lines(path, |v| {
        let ts = owned(&v, "timestamp").unwrap_or_default();
        let id = owned(&v, "id").unwrap_or_else(|| format!("event:{ts}"));
        let d = &v["data"];
        match s(&v, "type").unwrap_or("") {
            "session.start" if file.session.is_empty() => {
                file.session = owned(d, "sessionId").unwrap_or_default();
                file.start_ts = owned(d, "startTime").unwrap_or(ts);
                file.version = owned(d, "copilotVersion");
                file.model = owned(d, "selectedModel");
                let c = &d["context"];
                file.cwd = owned(c, "cwd");
                file.branch = owned(c, "branch");
                file.head = owned(c, "headCommit");
            }
            "session.resume" => steps.push(Step::Resume { id, ts }),
            "session.shutdown" => {
                steps.push(Step::End { id, ts, reason: owned(d, "shutdownType").unwrap_or_else(|| "other".into()) })
            }
            "user.message" => {
                let text = owned(d, "content").unwrap_or_default();
                prompt_event = Some(id.clone());
                if !text.trim().is_empty() {
                    steps.push(Step::Prompt { id, ts, text });
                }
            }
            "assistant.message" => {
                let requests = d["toolRequests"].as_array().map(Vec::as_slice).unwrap_or_default();
                for r in requests {
                    add_call(&mut steps, &mut calls, r, "name", &ts, &snapshots, prompt_event.as_deref());
                }
                let text = owned(d, "content").unwrap_or_default();
                if requests.is_empty() && !text.trim().is_empty() {
                    steps.push(Step::TurnEnd { id, ts, message: Some(text) });
                }
            }
            "tool.execution_start" => {
                add_call(&mut steps, &mut calls, d, "toolName", &ts, &snapshots, prompt_event.as_deref());
            }
            "tool.execution_complete" => {
                let Some(&i) = s(d, "toolCallId").and_then(|c| calls.get(c)) else { return };
                let Step::Call(c) = &mut steps[i] else { return };
                let error = if d["success"].as_bool() == Some(false) {
                    Some(
                        d.pointer("/error/message")
                            .or_else(|| d.get("error"))
                            .and_then(Value::as_str)
                            .or_else(|| d.pointer("/result/content").and_then(Value::as_str))
                            .unwrap_or("failed")
                            .to_string(),
                    )
                } else if matches!(c.kind, CallKind::Shell { .. }) {
                    let code = d
                        .pointer("/shellExecution/exitCode")
                        .and_then(Value::as_i64)
                        .or_else(|| d.pointer("/result/content").and_then(Value::as_str).and_then(exit_code_in));
                    code.filter(|c| *c != 0).map(|c| format!("Exit code {c}"))
                } else {
                    None
                };
                c.outcome = Some(Outcome { ts, error });
            }
            _ => {}
        }
    })?;
    file.steps = steps;
    Ok(file.counted(counts))
}

/// A call from an `assistant.message` request or a `tool.execution_start` (whichever comes
/// first), with its files' pre-images from before the turn.
fn add_call(
    steps: &mut Vec<Step>,
    calls: &mut HashMap<String, usize>,
    r: &Value,
    name_key: &str,
    ts: &str,
    snapshots: &Snapshots,
    prompt_event: Option<&str>,
) {
    let Some(id) = owned(r, "toolCallId") else { return };
    if calls.contains_key(&id) {
        return;
    }
    let name = s(r, name_key).unwrap_or("").to_string();
    let args = &r["arguments"];
    let arg = |k: &str| owned(args, k);
    let mut kind = match name.as_str() {
        "create" | "Write" => match arg("path") {
            Some(p) => {
                let mut c = FileChange::new(p, arg("file_text").map_or(Edit::Unknown, Edit::Write));
                // `create` refuses an existing file.
                c.before = Some(None);
                CallKind::Files(vec![c])
            }
            None => CallKind::Files(vec![]),
        },
        "edit" | "Edit" | "str_replace" => match arg("path") {
            Some(p) => {
                let edit = match (arg("old_str"), arg("new_str")) {
                    (Some(old), Some(new)) if !old.is_empty() => Edit::Replace { old, new, all: false },
                    _ => Edit::Unknown,
                };
                CallKind::Files(vec![FileChange::new(p, edit)])
            }
            None => CallKind::Files(vec![]),
        },
        "apply_patch" => CallKind::Files(patch_edits(crate::agents::codex::patch_text(args))),
        "bash" | "Bash" | "powershell" => CallKind::Shell {
            command: arg("command").unwrap_or_default(),
            description: arg("description"),
            background: arg("mode").as_deref() == Some("async"),
            cwd: None,
        },
        _ => CallKind::Other,
    };
    if let (CallKind::Files(changes), Some(ev)) = (&mut kind, prompt_event) {
        for c in changes.iter_mut() {
            c.turn_before = snapshots.before(ev, &c.path);
        }
    }
    calls.insert(id.clone(), steps.len());
    steps.push(Step::Call(Call { id, ts: ts.to_string(), tool: name, kind, outcome: None }));
}

/// `rewind-file-snapshots/`: per prompt event, each file's content before the prompt.
struct Snapshots {
    dir: PathBuf,
    /// Prompt event id → absolute path → `None` (absent) or the backup file's name.
    files: HashMap<String, HashMap<String, Option<String>>>,
}

impl Snapshots {
    fn read(session_dir: &Path) -> Snapshots {
        let dir = session_dir.join("rewind-file-snapshots");
        let mut files: HashMap<String, HashMap<String, Option<String>>> = HashMap::new();
        let index: Value = std::fs::read(dir.join("index.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        for snap in index["snapshots"].as_array().into_iter().flatten() {
            let Some(ev) = s(snap, "eventId") else { continue };
            let entry = files.entry(ev.to_string()).or_default();
            for f in snap["files"].as_object().into_iter().flat_map(|m| m.values()) {
                let Some(path) = s(f, "path") else { continue };
                let pre = &f["preimage"];
                match s(pre, "kind") {
                    Some("absent") => {
                        entry.insert(path.to_string(), None);
                    }
                    Some("content") => {
                        if let Some(b) = owned(pre, "backupFile") {
                            entry.insert(path.to_string(), Some(b));
                        }
                    }
                    _ => {}
                }
            }
        }
        Snapshots { dir, files }
    }

    /// `path`'s content before prompt event `ev`, when the snapshot holds it.
    fn before(&self, ev: &str, path: &str) -> Option<Content> {
        match self.files.get(ev)?.get(path)? {
            None => Some(None),
            Some(name) => {
                // Names are content hashes: never a path.
                if name.contains(['/', '\\']) || name.starts_with('.') {
                    return None;
                }
                let bytes = std::fs::read(self.dir.join("backups").join(name)).ok()?;
                String::from_utf8(bytes).ok().map(Some)
            }
        }
    }
}
