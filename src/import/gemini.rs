//! Gemini CLI's chat files (`~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`, seen with
//! gemini-cli 0.61.0; the folder's `.project_root` names the project's folder).
//!
//! The first line is the session's header {`sessionId`, `projectHash` (sha256 of the project's
//! folder), `startTime`, `kind`}; then message records {`id`, `timestamp`, `type` (`user`,
//! `gemini`, …), `content`}, written again under the same `id` as they grow, and `{"$set": …}`
//! metadata updates. A resumed session appends a new header and a `$set` of the whole history
//! (rewritten, without the tool calls). A `gemini` message's `toolCalls` {`id`, `name`, `args`,
//! `result`, `status` (`success`, `error`, `cancelled`), `timestamp`, `resultDisplay`} are written
//! once the calls finished: for `write_file` and `replace` `resultDisplay` holds the file's whole
//! content before (`originalContent`, `isNewFile`) and after (`newContent`). A call cut off by
//! a crash is not in the file.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::session_file::{
    Call, CallKind, Edit, FileChange, Outcome, SessionFile, Step, owned, read_lines, s, text_of,
};
use crate::agents::event::exit_code_in;

/// The project folder a `tmp/<project>` folder belongs to (its `.project_root`).
pub(crate) fn project_root(dir: &Path) -> Option<PathBuf> {
    let s = std::fs::read_to_string(dir.join(".project_root")).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| PathBuf::from(s))
}

/// Gemini CLI's `projectHash` of a folder: its path's sha256, in hex.
pub(crate) fn project_hash(root: &Path) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(root.to_string_lossy().as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A chat file's `projectHash`.
pub(crate) fn file_project_hash(path: &Path) -> Option<String> {
    owned(&super::session_file::first_line(path)?, "projectHash")
}

/// One message as the file's records build it up.
#[derive(Default)]
struct Message {
    ts: String,
    ty: String,
    text: String,
    model: Option<String>,
    /// Tool calls by id, in order.
    calls: Vec<(String, Value)>,
}

pub(crate) fn parse(path: &Path) -> io::Result<SessionFile> {
    let mut file = SessionFile::default();
    // The project's folder: the working folder of the session (relative paths).
    let root = path.parent().and_then(Path::parent).and_then(project_root);
    file.cwd = root.as_ref().map(|r| r.to_string_lossy().into_owned());
    let mut order: Vec<String> = Vec::new();
    let mut messages: HashMap<String, Message> = HashMap::new();
    // Resumptions: (header time, index in `order` where it happened).
    let mut resumes: Vec<(String, usize)> = Vec::new();
    let counts = read_lines(path, |v| {
        if v.get("sessionId").is_some() && v.get("projectHash").is_some() {
            let ts = owned(&v, "startTime").unwrap_or_default();
            if file.session.is_empty() {
                file.session = owned(&v, "sessionId").unwrap_or_default();
                file.start_ts = ts;
            } else {
                resumes.push((ts, order.len()));
            }
            // A whole-file record (older versions) carries its messages.
            for m in v.get("messages").and_then(Value::as_array).into_iter().flatten() {
                message(m, &mut order, &mut messages);
            }
            return;
        }
        if let Some(set) = v.get("$set") {
            for m in set.get("messages").and_then(Value::as_array).into_iter().flatten() {
                message(m, &mut order, &mut messages);
            }
            return;
        }
        if v.get("id").and_then(Value::as_str).is_some() {
            message(&v, &mut order, &mut messages);
        }
    })?;
    if file.cwd.is_none() {
        file.cwd = messages.values().flat_map(|m| &m.calls).find_map(|(_, c)| folder_of(c));
    }
    let mut steps = Vec::new();
    let mut resumes = resumes.into_iter().peekable();
    for (i, id) in order.iter().enumerate() {
        while let Some((ts, _)) = resumes.next_if(|(_, at)| *at <= i) {
            steps.push(Step::Resume { id: format!("resume:{ts}"), ts });
        }
        let Some(m) = messages.get(id) else { continue };
        if file.model.is_none() {
            file.model.clone_from(&m.model);
        }
        match m.ty.as_str() {
            "user" if is_prompt(&m.text) => {
                steps.push(Step::Prompt { id: id.clone(), ts: m.ts.clone(), text: m.text.trim().to_string() })
            }
            "gemini" if !m.calls.is_empty() => {
                for (call_id, c) in &m.calls {
                    steps.push(Step::Call(call(call_id, c, &m.ts)));
                }
            }
            // An answer without calls ends the turn.
            "gemini" if !m.text.trim().is_empty() => {
                steps.push(Step::TurnEnd { id: format!("turn:{id}"), ts: m.ts.clone(), message: Some(m.text.clone()) })
            }
            _ => {}
        }
    }
    for (ts, _) in resumes {
        steps.push(Step::Resume { id: format!("resume:{ts}"), ts });
    }
    file.steps = steps;
    Ok(file.counted(counts))
}

/// The project's folder as a file tool's call shows it (the file's absolute path ending in
/// the relative path it was given): for a chat file without its folder's `.project_root`.
fn folder_of(c: &Value) -> Option<String> {
    let abs = Path::new(c.pointer("/resultDisplay/filePath")?.as_str()?);
    let rel = Path::new(c.pointer("/args/file_path")?.as_str()?);
    if !abs.is_absolute() || rel.is_absolute() || rel.as_os_str().is_empty() {
        return None;
    }
    let mut dir = abs;
    for _ in rel.components() {
        dir = dir.parent()?;
    }
    (dir.join(rel) == abs).then(|| dir.to_string_lossy().into_owned())
}

/// Folds one message record into `messages`: the first record of an id gives its time and
/// type (a resumed session's rewritten history restamps them), the first text its text; tool
/// calls are kept by their id, the latest record of each.
fn message(v: &Value, order: &mut Vec<String>, messages: &mut HashMap<String, Message>) {
    let Some(id) = s(v, "id") else { return };
    let m = messages.entry(id.to_string()).or_insert_with(|| {
        order.push(id.to_string());
        Message {
            ts: owned(v, "timestamp").unwrap_or_default(),
            ty: owned(v, "type").unwrap_or_default(),
            ..Message::default()
        }
    });
    if m.text.is_empty() {
        m.text = text_of(&v["content"]);
    }
    if m.model.is_none() {
        m.model = owned(v, "model");
    }
    for c in v.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
        let Some(cid) = s(c, "id") else { continue };
        match m.calls.iter_mut().find(|(k, _)| k == cid) {
            Some((_, old)) => *old = c.clone(),
            None => m.calls.push((cid.to_string(), c.clone())),
        }
    }
}

/// A user message the user typed: not the session context walj's or Gemini's own additions, not
/// a slash command (what Gemini CLI itself skips when it resumes).
fn is_prompt(text: &str) -> bool {
    let t = text.trim();
    !(t.is_empty()
        || t.starts_with('/')
        || t.starts_with('?')
        || t.starts_with("<session_context>")
        || t.starts_with("<hook_context>"))
}

fn call(id: &str, c: &Value, msg_ts: &str) -> Call {
    let name = s(c, "name").unwrap_or("").to_string();
    let args = &c["args"];
    let display = &c["resultDisplay"];
    let kind = match name.as_str() {
        "write_file" | "replace" => {
            let edit =
                match (name.as_str(), owned(args, "content"), owned(args, "old_string"), owned(args, "new_string")) {
                    ("write_file", Some(content), _, _) => Edit::Write(content),
                    ("replace", _, Some(old), Some(new)) if !old.is_empty() => {
                        let all = args.get("allow_multiple").and_then(Value::as_bool) == Some(true)
                            || args.get("expected_replacements").and_then(Value::as_u64).is_some_and(|n| n > 1);
                        Edit::Replace { old, new, all }
                    }
                    _ => Edit::Unknown,
                };
            // As the model gave it (relative to the project's folder), else the absolute path the
            // tool resolved.
            let path = owned(args, "file_path").or_else(|| owned(args, "path")).or_else(|| owned(display, "filePath"));
            match path {
                Some(p) => {
                    let mut ch = FileChange::new(p, edit);
                    if display.is_object() {
                        if display.get("isNewFile").and_then(Value::as_bool) == Some(true) {
                            ch.before = Some(None);
                        } else if let Some(o) = owned(display, "originalContent") {
                            ch.before = Some(Some(o));
                        }
                        if let Some(n) = owned(display, "newContent") {
                            ch.after = Some(Some(n));
                        }
                    }
                    CallKind::Files(vec![ch])
                }
                None => CallKind::Files(vec![]),
            }
        }
        "run_shell_command" => CallKind::Shell {
            command: owned(args, "command").unwrap_or_default(),
            description: owned(args, "description"),
            background: args.get("is_background").and_then(Value::as_bool) == Some(true),
            cwd: owned(args, "dir_path").or_else(|| owned(args, "directory")),
        },
        _ => CallKind::Other,
    };
    let response = c.pointer("/result/0/functionResponse/response").unwrap_or(&Value::Null);
    let error = match s(c, "status").unwrap_or("") {
        "success" => match (&kind, s(response, "output").and_then(exit_code_in)) {
            (CallKind::Shell { .. }, Some(code)) if code != 0 => Some(Some(format!("Exit code {code}"))),
            _ => Some(None),
        },
        status @ ("error" | "cancelled") => Some(Some(
            s(response, "error").or(display.as_str()).map(str::to_string).unwrap_or_else(|| status.to_string()),
        )),
        // Not finished (scheduled, executing, …).
        _ => None,
    };
    let outcome = error.map(|error| Outcome { ts: owned(c, "timestamp").unwrap_or_else(|| msg_ts.to_string()), error });
    Call { id: id.to_string(), ts: msg_ts.to_string(), tool: name, kind, outcome }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_the_roots_sha256() {
        // Recorded from gemini-cli 0.61.0: the chat file of /tmp/walj-e2e-rXrmcJ/project.
        assert_eq!(
            project_hash(Path::new("/tmp/walj-e2e-rXrmcJ/project")),
            "e14ee68db288c16b5fbd31b5099a1beab8c3111b1973979d5893a765d10c88f6"
        );
        let c =
            serde_json::json!({"args": {"file_path": "src/a.txt"}, "resultDisplay": {"filePath": "/p/q/src/a.txt"}});
        assert_eq!(folder_of(&c).as_deref(), Some("/p/q"));
        let c = serde_json::json!({"args": {"file_path": "b.txt"}, "resultDisplay": {"filePath": "/p/q/src/a.txt"}});
        assert_eq!(folder_of(&c), None);
        assert!(is_prompt("do it") && !is_prompt("<session_context>\nThis is the Gemini CLI.") && !is_prompt("/help"));
    }
}
