//! Typed builders for the records that more than one writer makes (the hook, `walj import`,
//! checkpoint): each record kind is spelled in one place.
//!
//! The builders fill a [`Record`] the caller made (stamped with its session, time, process and
//! call id): extra fields are appended in a fixed order, so a line is the same bytes whoever
//! writes it. Text a user or a command typed (prompts, command lines, descriptions, errors) has
//! its secret-looking tokens redacted here ([`crate::secrets::redact`]), before any journal or
//! bundle sees it.

use serde_json::Value;

use super::record::{Record, event, how, key, kind, nocap, op, tool};
use crate::claude::payload::clip;
use crate::claude::transcript::TaskNotification;

/// Longest prompt, brief or instruction text kept in a record.
pub(crate) const MAX_TEXT: usize = 64 * 1024;
/// Longest command line or error text kept in a record.
pub(crate) const MAX_ERROR: usize = 4 * 1024;
/// Longest command description kept.
pub(crate) const MAX_DESCRIPTION: usize = 1024;
/// Longest task tool response text kept.
pub(crate) const MAX_RESPONSE: usize = 2048;
/// Longest assistant message kept (Stop, StopFailure).
pub(crate) const MAX_MESSAGE: usize = 16 * 1024;

/// `text` redacted ([`crate::secrets::redact`]), then cut to `max` bytes: for any text a
/// user typed.
pub(crate) fn safe(text: &str, max: usize) -> String {
    clip(&crate::secrets::redact(text), max)
}

/// A `prompt` session record (see [`session`]) of the user's prompt `text`, redacted.
pub(crate) fn prompt(r: Record, text: &str) -> Record {
    session(r, kind::PROMPT).with(key::PROMPT, safe(text, MAX_TEXT))
}

/// Longest path a file system takes (PATH_MAX), and longest name (NAME_MAX).
const PATH_MAX: usize = 4096;
const NAME_MAX: usize = 255;

/// A tool's `file_path` no file system can open (a NUL byte, too long): fills `r` with the
/// path as it can be shown (`\0` for NUL, cut to [`PATH_MAX`] bytes), the reason in
/// `nocap` and a file event, and returns true; the record is kept, nothing is read.
pub(crate) fn unusable_path(r: &mut Record, file_path: &str) -> bool {
    let why = if file_path.contains('\0') {
        nocap::PATH_NUL
    } else if file_path.len() > PATH_MAX || file_path.split(['/', '\\']).any(|c| c.len() > NAME_MAX) {
        nocap::PATH_TOO_LONG
    } else {
        return false;
    };
    r.path = clip(&file_path.replace('\0', "\\0"), PATH_MAX);
    r.nocap = Some(why.to_string());
    if r.event.is_empty() {
        r.event = event::FILE_MODIFIED.to_string();
    }
    true
}

/// Turns `r` into a `session` record of kind `k`.
pub fn session(mut r: Record, k: &str) -> Record {
    r.op = op::SESSION.to_string();
    r.event = event::SESSION.to_string();
    r.kind = Some(k.to_string());
    r
}

/// A Bash call as its intent records it.
#[derive(Debug, Clone, Copy, Default)]
pub struct BashIntent<'a> {
    pub command: &'a str,
    pub description: Option<&'a str>,
    pub background: bool,
    pub cwd: Option<&'a str>,
}

impl BashIntent<'_> {
    /// Marks `r` as a record of a Bash command (tool and event), without other fields.
    pub fn tag(r: Record) -> Record {
        bash(r)
    }

    /// Fills an `intent` record (its id already set).
    pub fn fill(&self, r: Record) -> Record {
        let mut r = bash(r).with(key::COMMAND, safe(self.command, MAX_ERROR));
        if let Some(d) = self.description {
            r = r.with(key::DESCRIPTION, safe(d, MAX_DESCRIPTION));
        }
        if self.background {
            r = r.with(key::BACKGROUND, true);
        }
        if let Some(c) = self.cwd {
            r = r.with(key::CWD, c);
        }
        r
    }
}

/// How a Bash call ended, as its `applied` or `failed` record tells.
#[derive(Debug, Clone, Copy, Default)]
pub struct BashOutcome<'a> {
    pub command: &'a str,
    pub error: Option<&'a str>,
    /// Claude Code's background task id (the command went on in the background).
    pub task_id: Option<&'a str>,
    pub interrupted: bool,
}

impl BashOutcome<'_> {
    /// Fills an `applied` or `failed` record (op and id already set).
    pub fn fill(&self, r: Record) -> Record {
        let mut r = bash(r).with(key::COMMAND, safe(self.command, MAX_ERROR));
        if let Some(e) = self.error {
            r = r.with(key::ERROR, safe(e, MAX_ERROR));
        }
        if let Some(t) = self.task_id {
            r = r.with(key::TASK_ID, t);
        }
        if self.interrupted {
            r = r.with(key::INTERRUPTED, true);
        }
        r
    }
}

fn bash(mut r: Record) -> Record {
    r.tool = Some(tool::BASH.to_string());
    r.event = event::COMMAND_RUN.to_string();
    r
}

/// A todo list update: TodoWrite's whole list, or one TaskCreate/TaskUpdate call.
#[derive(Debug, Clone)]
pub(crate) enum TodoUpdate {
    Todos(Value),
    Task { input: Value, response: Value },
}

/// Fills a `session` record (see [`session`]) with a todo update by tool `tool_name`.
pub(crate) fn todos(r: Record, tool_name: &str, id: Option<&str>, update: TodoUpdate) -> Record {
    let k = if matches!(update, TodoUpdate::Todos(_)) { kind::TODOS } else { kind::TASK };
    let mut r = session(r, k);
    r.event = event::TODO_UPDATED.to_string();
    r.tool = Some(tool_name.to_string());
    if let Some(id) = id {
        r.id = id.to_string();
    }
    match update {
        TodoUpdate::Todos(list) => r.with(key::TODOS, list),
        TodoUpdate::Task { input, response } => {
            let response = match response {
                Value::String(s) => Value::String(clip(&s, MAX_RESPONSE)),
                other => other,
            };
            r.with(key::INPUT, input).with(key::RESPONSE, response)
        }
    }
}

/// Fills a `session` record (see [`session`]) with Claude Code's news that a background task
/// ended (a `<task-notification>` message): the record's id is the Bash call's id when the
/// notification names it, so the fold finds the command.
pub(crate) fn task_notification(r: Record, n: &TaskNotification) -> Record {
    let mut r = session(r, kind::TASK_NOTIFICATION);
    if let Some(id) = n.tool_use_id.as_deref() {
        r.id = id.to_string();
    }
    if let Some(t) = n.task_id.as_deref() {
        r = r.with(key::TASK_ID, t);
    }
    r = r.with(key::STATUS, n.status.as_deref().unwrap_or("ended"));
    if let Some(s) = n.summary.as_deref() {
        r = r.with(key::SUMMARY, clip(s, MAX_DESCRIPTION));
    }
    r
}

/// Fills a `session` record (see [`session`]) with a turn's end by an API error (Claude Code's
/// StopFailure hook, or its synthetic "API Error" answer in a transcript): the error type, the
/// reason people read ("ended by an API error: overloaded (API Error: 529 Overloaded)"), and
/// what Claude Code said.
pub(crate) fn stop_failure(r: Record, error: &str, details: Option<&str>, message: Option<&str>) -> Record {
    let error = if error.is_empty() { "unknown" } else { error };
    let said = details
        .filter(|d| !d.is_empty())
        .or_else(|| message.filter(|m| m.starts_with("API Error")))
        .map(|d| d.split(". ").next().unwrap_or(d).trim_end_matches('.'));
    let reason = match said {
        Some(d) => format!("ended by an API error: {error} ({})", clip(d, 120)),
        None => format!("ended by an API error: {error}"),
    };
    let mut r = session(r, kind::STOP_FAILURE).with(key::ERROR, clip(error, MAX_ERROR)).with(key::REASON, reason);
    if let Some(d) = details.filter(|d| !d.is_empty()) {
        r = r.with(key::ERROR_DETAILS, clip(d, MAX_ERROR));
    }
    if let Some(m) = message {
        r = r.with(key::LAST_ASSISTANT_MESSAGE, clip(m, MAX_MESSAGE));
    }
    r
}

/// Turns `r` (an entry's or command's record, id set) into a `resolved` record: `how`, by whom.
pub fn resolution(mut r: Record, how_: &str, by: &str) -> Record {
    r.op = op::RESOLVED.to_string();
    r.how = Some(how_.to_string());
    r.with(key::BY, by)
}

/// A resolution of a call that never applied (Stop or import settling it).
pub(crate) fn not_applied(r: Record, by: &str) -> Record {
    resolution(r, how::NOT_APPLIED, by)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hook and import write a Bash call's records through these: same fields, same order.
    #[test]
    fn bash_records_have_one_shape() {
        let intent = BashIntent { command: "ls", description: Some("list"), background: true, cwd: Some("/p") }
            .fill(Record::new(op::INTENT, "s"));
        let keys: Vec<&str> = intent.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, [key::COMMAND, key::DESCRIPTION, key::BACKGROUND, key::CWD]);
        assert_eq!((intent.tool.as_deref(), intent.event.as_str()), (Some(tool::BASH), event::COMMAND_RUN));
        let mut failed = Record::new(op::FAILED, "s");
        failed.id = "t1".into();
        let failed =
            BashOutcome { command: "false", error: Some("exit 1"), task_id: None, interrupted: true }.fill(failed);
        let keys: Vec<&str> = failed.extra.keys().map(String::as_str).collect();
        assert_eq!(keys, [key::COMMAND, key::ERROR, key::INTERRUPTED]);
        assert_eq!(failed.id, "t1");
    }

    #[test]
    fn todo_and_resolution_records() {
        let t = todos(Record::new(op::SESSION, "s"), "TodoWrite", Some("x"), TodoUpdate::Todos(Value::Array(vec![])));
        assert_eq!((t.kind.as_deref(), t.event.as_str(), t.id.as_str()), (Some(kind::TODOS), event::TODO_UPDATED, "x"));
        let long = "é".repeat(MAX_RESPONSE);
        let long_len = long.len();
        let t = todos(
            Record::new(op::SESSION, "s"),
            "TaskCreate",
            None,
            TodoUpdate::Task { input: Value::Null, response: Value::String(long) },
        );
        assert_eq!(t.kind.as_deref(), Some(kind::TASK));
        assert!(t.get_str(key::RESPONSE).is_some_and(|s| s.len() < long_len && s.contains('…')));
        let r = not_applied(Record::new(op::INTENT, "s"), "import");
        assert_eq!(
            (r.op.as_str(), r.how.as_deref(), r.get_str(key::BY)),
            (op::RESOLVED, Some(how::NOT_APPLIED), Some("import"))
        );
    }
}
