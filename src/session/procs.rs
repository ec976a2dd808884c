//! Background commands of every session, and whether they still run (issue 5 item 4).
//!
//! A command is listed when Claude Code ran it in the background (`run_in_background`, a
//! `backgroundTaskId`, or a Stop's `background_tasks`), or when it was still running as the
//! session died (its PostToolUse never came: the child may live on as an orphan). Whether it
//! runs is decided by matching `/proc/*/cmdline` (the command text at word boundaries,
//! quoting-insensitive: Claude Code re-quotes a command into `eval '…'` of its shell, or a shim
//! passes it on as an argument), `/proc/*/cwd` (the recorded folder) and the process's start
//! time (a process older than the call cannot be its) on Linux; elsewhere the answer is
//! `unknown`. Restart is offered only for a background command that is gone while Claude Code
//! last saw it running (never for one that runs, a finished job, or a killed foreground command).
//! Nothing is ever started by itself: `walj procs restart ID` asks first.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::SessionError;
use crate::fold::{CommandStatus, Fold, FoldOptions, SessionInfo, SessionStatus, short_id};
use crate::fsutil;
use crate::procinfo;
use crate::project::Project;

pub use crate::procinfo::ProcTable;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProcStatus {
    /// The Bash call's id (Claude Code's `tool_use_id`), or the task id when only a Stop
    /// reported the task.
    pub id: String,
    pub short: String,
    pub session: String,
    pub sid: String,
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub cwd: Option<String>,
    pub started: String,
    /// Claude Code's background task id (`bash_1`).
    pub task_id: Option<String>,
    /// `background`, or `in_flight` (running when the session died).
    pub kind: &'static str,
    /// `running`, `not_running`, `unknown`.
    pub state: &'static str,
    pub pids: Vec<u32>,
    /// The status Claude Code last reported for the task (Stop's `background_tasks`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported: Option<String>,
    /// The session's state (live, ended, crashed, unknown).
    pub session_state: &'static str,
    /// Whether restarting it makes sense: a background command that no longer runs and that
    /// Claude Code did not report finished. Never one that runs, a finished job or a killed
    /// foreground command (`in_flight`).
    pub restartable: bool,
}

/// Every session's background commands.
pub fn list(project: &Project) -> Result<Vec<ProcStatus>, SessionError> {
    let fold =
        Fold::load(&project.journal, &FoldOptions::default()).map_err(SessionError::io("reading", &project.journal))?;
    let table = procinfo::processes();
    let mut out = Vec::new();
    for s in fold.sessions.iter().filter(|s| !s.session.is_empty()) {
        out.extend(for_session(s, s.status(), table.as_deref()));
    }
    Ok(out)
}

/// One session's background commands, matched against `table` (`None`: cannot tell).
pub fn for_session(
    s: &SessionInfo,
    status: SessionStatus,
    table: Option<&[(u32, String, Option<PathBuf>)]>,
) -> Vec<ProcStatus> {
    let mut out: Vec<ProcStatus> = Vec::new();
    for c in &s.commands {
        let kind = if c.background {
            "background"
        } else if c.status == CommandStatus::InFlight && status != SessionStatus::Live {
            "in_flight"
        } else {
            continue;
        };
        out.push(ProcStatus {
            id: c.id.clone(),
            short: short_id(&c.id),
            session: s.session.clone(),
            sid: s.sid.clone(),
            command: c.command.clone(),
            description: c.description.clone(),
            cwd: c.cwd.clone().or_else(|| s.cwd.clone()),
            started: c.ts.clone(),
            task_id: c.task_id.clone(),
            kind,
            state: "unknown",
            pids: Vec::new(),
            reported: None,
            session_state: status.as_str(),
            restartable: false,
        });
    }
    for t in &s.background_tasks {
        let id = t.get("id").and_then(Value::as_str).unwrap_or_default();
        let reported = t.get("status").and_then(Value::as_str).map(str::to_string);
        if let Some(p) = out.iter_mut().find(|p| !id.is_empty() && p.task_id.as_deref() == Some(id)) {
            p.reported = reported;
            continue;
        }
        let Some(command) = t.get("command").and_then(Value::as_str).filter(|c| !c.is_empty()) else { continue };
        if let Some(p) = out.iter_mut().find(|p| p.task_id.is_none() && p.command == command) {
            p.task_id = Some(id.to_string()).filter(|i| !i.is_empty());
            p.reported = reported;
            continue;
        }
        out.push(ProcStatus {
            id: if id.is_empty() { format!("task-{}", out.len() + 1) } else { id.to_string() },
            short: id.to_string(),
            session: s.session.clone(),
            sid: s.sid.clone(),
            command: command.to_string(),
            description: t.get("description").and_then(Value::as_str).map(str::to_string),
            cwd: s.cwd.clone(),
            started: s.last_ts.clone(),
            task_id: Some(id.to_string()).filter(|i| !i.is_empty()),
            kind: "background",
            state: "unknown",
            pids: Vec::new(),
            reported,
            session_state: status.as_str(),
            restartable: false,
        });
    }
    if let Some(table) = table {
        let me = std::process::id();
        for p in &mut out {
            // Only the Bash call's own time bounds its processes (a Stop's task list is later).
            let call = s.commands.iter().any(|c| c.id == p.id).then(|| call_time(&p.started)).flatten();
            p.pids = table
                .iter()
                .filter(|(pid, cmdline, cwd)| {
                    *pid != me
                        && command_matches(cmdline, &p.command)
                        && cwd_matches(cwd.as_deref(), p.cwd.as_deref())
                        && started_since(*pid, call)
                })
                .map(|(pid, _, _)| *pid)
                .collect();
            p.state = if p.pids.is_empty() { "not_running" } else { "running" };
        }
    }
    for p in &mut out {
        p.restartable = p.state != "running"
            && p.kind == "background"
            && p.reported.as_deref().is_none_or(|r| matches!(r, "running" | "pending"));
    }
    out
}

/// The call's time from its record's timestamp.
fn call_time(ts: &str) -> Option<std::time::SystemTime> {
    let t = chrono::DateTime::parse_from_rfc3339(ts).ok()?;
    let ms = u64::try_from(t.timestamp_millis()).ok()?;
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(ms))
}

/// Whether `pid` started at or after `call` (with 2 s of slack for the clocks' rounding);
/// true when either is unknown.
fn started_since(pid: u32, call: Option<std::time::SystemTime>) -> bool {
    let Some(call) = call else { return true };
    let Some(at) = procinfo::started_at(pid) else { return true };
    at + std::time::Duration::from_secs(2) >= call
}

/// Whitespace collapsed, quotes and backslashes dropped: `echo 'done'`, Claude Code's
/// `eval 'echo '"'"'done'"'"''` and `echo done` compare equal.
fn normalize(s: &str) -> String {
    let unquoted: String = s.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
    unquoted.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// True when `command` appears in `cmdline` at word boundaries (a shell running it, or the
/// program itself), whitespace normalized and quoting ignored.
pub fn command_matches(cmdline: &str, command: &str) -> bool {
    let c = normalize(command);
    let p = normalize(cmdline);
    if c.is_empty() {
        return false;
    }
    let boundary = |ch: Option<char>| ch.is_none_or(|ch| matches!(ch, ' ' | '\'' | '"' | ';' | '&' | '|' | '(' | ')'));
    let mut from = 0;
    while let Some(i) = p[from..].find(&c) {
        let at = from + i;
        let before = p[..at].chars().next_back();
        let after = p[at + c.len()..].chars().next();
        if boundary(before) && boundary(after) {
            return true;
        }
        from = at + c.len().max(1);
        while from < p.len() && !p.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

fn cwd_matches(actual: Option<&Path>, recorded: Option<&str>) -> bool {
    match (actual, recorded) {
        (Some(a), Some(r)) => {
            let r = Path::new(r);
            a == r || std::fs::canonicalize(r).is_ok_and(|c| c == a)
        }
        _ => true, // unreadable cwd or none recorded: the command line decides
    }
}

/// Finds a process by id prefix (the Bash call id, with or without `toolu_`) or task id.
pub fn find<'a>(procs: &'a [ProcStatus], id: &str) -> Result<&'a ProcStatus, SessionError> {
    let exact: Vec<&ProcStatus> = procs.iter().filter(|p| p.id == id || p.task_id.as_deref() == Some(id)).collect();
    let matches = if exact.is_empty() {
        procs
            .iter()
            .filter(|p| {
                !id.is_empty()
                    && (p.id.starts_with(id) || p.id.strip_prefix("toolu_").is_some_and(|s| s.starts_with(id)))
            })
            .collect()
    } else {
        exact
    };
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(SessionError::Refused(format!(
            "no background command matches {id:?}; `walj procs` lists them with their ids"
        ))),
        many => Err(SessionError::Refused(format!(
            "{id:?} is ambiguous; it matches {}",
            many.iter().map(|p| format!("{} (session {})", p.id, p.sid)).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Path of a restarted command's output log.
pub fn log_path(project: &Project, id: &str) -> PathBuf {
    project.dir.join("procs").join(format!("{}.log", super::file_stem(id)))
}

/// Starts `p.command` again in `cwd`, detached (own process group, no stdin), with stdout
/// and stderr appended to `.walj/procs/<id>.log`. Returns the pid and the log path.
pub fn restart(project: &Project, p: &ProcStatus, cwd: &Path) -> Result<(u32, PathBuf), SessionError> {
    let log = log_path(project, &p.id);
    let logs = log.parent().unwrap_or(&project.dir).to_path_buf();
    project.ensure_dir().map_err(SessionError::io("creating", &project.dir))?;
    fsutil::create_private_dir(&logs).map_err(SessionError::io("creating", &logs))?;
    let mut f = fsutil::open_private(&log, OpenOptions::new().create(true).append(true))
        .map_err(SessionError::io("opening", &log))?;
    writeln!(f, "=== walj procs restart {}: {} (in {})", crate::journal::record::now_ts(), p.command, cwd.display())
        .map_err(SessionError::io("writing", &log))?;
    let err_f = f.try_clone().map_err(SessionError::io("opening", &log))?;
    let mut cmd = shell_command(&p.command);
    cmd.current_dir(cwd).stdin(std::process::Stdio::null()).stdout(f).stderr(err_f);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: a Ctrl-C or hang-up of this terminal does not reach it.
        cmd.process_group(0);
    }
    let child = cmd.spawn().map_err(SessionError::io(format!("starting {:?} in", p.command), cwd))?;
    // Not waited for: it runs on after walj exits (and is reaped by init).
    Ok((child.id(), log))
}

fn shell_command(command: &str) -> std::process::Command {
    #[cfg(unix)]
    {
        let shell = if Path::new("/bin/bash").exists() { "/bin/bash" } else { "/bin/sh" };
        let mut c = std::process::Command::new(shell);
        c.arg("-c").arg(command);
        c
    }
    #[cfg(not(unix))]
    {
        let mut c = std::process::Command::new("cmd");
        c.arg("/C").arg(command);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_at_word_boundaries() {
        assert!(command_matches("npm run dev", "npm run dev"));
        assert!(command_matches("/bin/bash -c -l eval 'npm run dev' < /dev/null", "npm  run dev"));
        assert!(command_matches("sh -c sleep 60", "sleep 60"));
        assert!(!command_matches("sleep 600", "sleep 60"));
        assert!(!command_matches("xsleep 60", "sleep 60"));
        assert!(!command_matches("anything", ""));
    }

    #[test]
    fn matching_ignores_claude_codes_requoting() {
        // What Claude Code 2.1.328's shell runs for `sleep 302; echo 'done' > b.txt`.
        let cmdline = "/bin/bash -c -l source /root/.claude/shell-snapshots/snapshot-bash-1.sh && eval 'sleep 302; echo '\"'\"'done'\"'\"' > b.txt' < /dev/null && pwd -P >| /tmp/claude-ab12-cwd";
        assert!(command_matches(cmdline, "sleep 302; echo 'done' > b.txt"));
        assert!(command_matches("bash -c sleep\\ 302", "sleep 302"));
        assert!(!command_matches(cmdline, "sleep 30"));
    }
}
