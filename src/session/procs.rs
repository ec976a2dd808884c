//! Background commands of every session, and whether they still run (issue 5 item 4,
//! issue 11 item 4).
//!
//! A command is listed when Claude Code ran it in the background (`run_in_background`, a
//! `backgroundTaskId`, or a Stop's `background_tasks`), or when it was still running as the
//! session died (its PostToolUse never came: the child may live on as an orphan).
//!
//! Whether it runs: a process is the command's when its command line holds the command text
//! (at word boundaries, quoting ignored: Claude Code runs `echo 'done'` as
//! `eval 'echo '"'"'done'"'"''` in its shell, and a shim passes the command on as an argument),
//! it started no earlier than the call, and either Claude Code's marker in its environment
//! (`CLAUDE_CODE_SESSION_ID`) names the command's session, or (no marker readable) its
//! working folder is the recorded one. A process whose marker names another session is never
//! the command's. When no command line holds the text (a daemon that re-executed itself, a
//! wrapper script), a re-parented process with the session's marker that started within a few
//! seconds after the call, before the session's next Bash call, is. On Linux this reads /proc; other
//! Unix systems use `ps` (command line and start time only); elsewhere the answer is `unknown`.
//!
//! Restart is offered (`restartable`) only for a background command known not to run that
//! Claude Code did not report finished: never for one that runs or whose state is unknown, a
//! finished one-shot job (a `<task-notification>`, or a Stop that no longer lists it), or a
//! foreground command killed with its session. Nothing is ever started by itself: `walj procs
//! restart ID` asks first.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::SessionError;
use crate::fold::{CommandStatus, Fold, FoldOptions, SessionInfo, SessionStatus, ShortIds};
use crate::fsutil;
use crate::procinfo;
use crate::project::Project;

pub(crate) use crate::procinfo::{ProcEntry, ProcTable};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct ProcStatus {
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
    /// Whether restarting it makes sense: a background command known not to run that Claude
    /// Code did not report finished. Never one that runs (or may), a finished job or a killed
    /// foreground command (`in_flight`).
    pub restartable: bool,
}

/// Every session's background commands.
pub(crate) fn list(project: &Project) -> Result<Vec<ProcStatus>, SessionError> {
    let mut fold =
        Fold::load(&project.journal, &FoldOptions::default()).map_err(SessionError::io("reading", &project.journal))?;
    fold.load_short_ids(&project.journal);
    let table = procinfo::processes();
    let mut out = Vec::new();
    for s in fold.sessions.iter().filter(|s| !s.session.is_empty()) {
        out.extend(for_session(s, s.status(), table.as_deref(), &fold.ids));
    }
    Ok(out)
}

/// One session's background commands, matched against `table` (`None`: cannot tell); their
/// ids shown as `ids` shows them.
pub(crate) fn for_session(
    s: &SessionInfo,
    status: SessionStatus,
    table: Option<&[ProcEntry]>,
    ids: &ShortIds,
) -> Vec<ProcStatus> {
    let mut out: Vec<ProcStatus> = Vec::new();
    for c in &s.commands {
        let kind = if c.background {
            "background"
        } else if c.agent_id.is_some() {
            // A subagent's foreground command is its own work, told under the subagent
            // (`recover`, the note), never a background process of the session.
            continue;
        } else if c.status == CommandStatus::InFlight && status != SessionStatus::Live {
            "in_flight"
        } else {
            continue;
        };
        out.push(ProcStatus {
            id: c.id.clone(),
            short: ids.short(&c.id).to_string(),
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
    // What Claude Code said last: a task notification (or a Stop that no longer lists the
    // task) wins over an earlier Stop's "running".
    for p in &mut out {
        if let Some(f) = s.commands.iter().find(|c| c.id == p.id).and_then(|c| c.finished.as_ref()) {
            p.reported = Some(f.clone());
        }
    }
    if let Some(table) = table {
        match_processes(s, &mut out, table);
    }
    for p in &mut out {
        p.restartable = p.state == "not_running"
            && p.kind == "background"
            && p.reported.as_deref().is_none_or(|r| matches!(r, "running" | "pending"));
    }
    out
}

/// Slack for comparing a process's start time with a record's (clock rounding, the time a
/// hook takes before Claude Code starts the command).
const START_SLACK: Duration = Duration::from_secs(2);
/// How long after its call a process may start and still be the call's (daemons, wrappers).
const SPAWN_WINDOW: Duration = Duration::from_secs(5);

/// Sets `state` and `pids` of each of `out` from the process table (see the module docs).
fn match_processes(s: &SessionInfo, out: &mut [ProcStatus], table: &[ProcEntry]) {
    // This walj and its ancestors (a `walj procs` that Claude runs carries the marker too).
    let mine = own_lineage();
    let session = s.session.as_str();
    let mut taken: Vec<u32> = Vec::new();
    for p in out.iter_mut() {
        // Only the Bash call's own time bounds its processes (a Stop's task list is later).
        let call = s.commands.iter().any(|c| c.id == p.id).then(|| record_time(&p.started)).flatten();
        p.pids = table
            .iter()
            .filter(|e| {
                !mine.contains(&e.pid)
                    && e.claude_session.as_deref().is_none_or(|m| m == session)
                    && started_since(e.started, call)
                    && command_matches(&e.cmdline, &p.command)
                    && (e.claude_session.is_some() || cwd_matches(e.cwd.as_deref(), p.cwd.as_deref()))
            })
            .map(|e| e.pid)
            .collect();
        taken.extend(&p.pids);
        p.state = if p.pids.is_empty() { "not_running" } else { "running" };
    }
    // Children of a matched process are that command's too.
    loop {
        let more: Vec<u32> = table
            .iter()
            .filter(|e| !taken.contains(&e.pid) && e.ppid.is_some_and(|pp| taken.contains(&pp)))
            .map(|e| e.pid)
            .collect();
        if more.is_empty() {
            break;
        }
        taken.extend(more);
    }
    // No command line holds the text: processes the call started, by the session's marker
    // and their start time. Only processes that outlived their parent (re-parented: a daemon,
    // a job whose shell is gone): a child of Claude Code or of another of the session's
    // processes is a hook, a tool or a later call, never this call's leftover.
    let claude = s.proc.map(|p| p.pid);
    let marked: Vec<u32> =
        table.iter().filter(|e| e.claude_session.as_deref() == Some(session)).map(|e| e.pid).collect();
    for p in out.iter_mut().filter(|p| p.pids.is_empty()) {
        let Some(call) = s.commands.iter().position(|c| c.id == p.id) else { continue };
        let Some(at) = record_time(&s.commands[call].ts) else { continue };
        let next = s.commands[call + 1..].iter().filter_map(|c| record_time(&c.ts)).next();
        let until = next.map_or(at + SPAWN_WINDOW, |n| n.min(at + SPAWN_WINDOW));
        p.pids = table
            .iter()
            .filter(|e| {
                !mine.contains(&e.pid)
                    && !taken.contains(&e.pid)
                    && e.claude_session.as_deref() == Some(session)
                    && e.ppid.is_some_and(|pp| Some(pp) != claude && !marked.contains(&pp))
                    && e.started.is_some_and(|t| t + START_SLACK >= at && t < until)
            })
            .map(|e| e.pid)
            .collect();
        if !p.pids.is_empty() {
            p.state = "running";
        }
    }
}

/// This process and its ancestors.
fn own_lineage() -> Vec<u32> {
    #[cfg(unix)]
    let parent = Some(std::os::unix::process::parent_id());
    #[cfg(not(unix))]
    let parent = None;
    std::iter::once(std::process::id()).chain(parent).collect()
}

/// A record's timestamp as a time.
fn record_time(ts: &str) -> Option<SystemTime> {
    let t = chrono::DateTime::parse_from_rfc3339(ts).ok()?;
    let ms = u64::try_from(t.timestamp_millis()).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_millis(ms))
}

/// Whether a process that started at `at` can be the call's (at `call`, with slack); true when
/// either is unknown.
fn started_since(at: Option<SystemTime>, call: Option<SystemTime>) -> bool {
    match (at, call) {
        (Some(at), Some(call)) => at + START_SLACK >= call,
        _ => true,
    }
}

/// Whitespace collapsed, quotes and backslashes dropped: `echo 'done'`, Claude Code's
/// `eval 'echo '"'"'done'"'"''` and `echo done` compare equal.
fn normalize(s: &str) -> String {
    let unquoted: String = s.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
    unquoted.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// True when `command` appears in `cmdline` at word boundaries (a shell running it, or the
/// program itself), whitespace normalized and quoting ignored.
pub(crate) fn command_matches(cmdline: &str, command: &str) -> bool {
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

/// Finds a process by id prefix (the Bash call id as entry ids are typed: any case, with or
/// without `toolu_` or `toolu_01`) or task id.
pub(crate) fn find<'a>(procs: &'a [ProcStatus], id: &str) -> Result<&'a ProcStatus, SessionError> {
    let exact: Vec<&ProcStatus> = procs.iter().filter(|p| p.id == id || p.task_id.as_deref() == Some(id)).collect();
    let matches = if exact.is_empty() {
        procs.iter().filter(|p| crate::fold::id_starts_with(&p.id, id)).collect()
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
pub(crate) fn log_path(project: &Project, id: &str) -> PathBuf {
    project.dir.join("procs").join(format!("{}.log", super::file_stem(id)))
}

/// Starts `p.command` again in `cwd`, detached (own process group, no stdin), with stdout
/// and stderr appended to `.walj/procs/<id>.log`. Returns the pid and the log path.
pub(crate) fn restart(project: &Project, p: &ProcStatus, cwd: &Path) -> Result<(u32, PathBuf), SessionError> {
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
    // Started by walj for the user, not by a Claude Code session: no session's marker, or
    // `walj procs` would take it for that session's process.
    cmd.env_remove(procinfo::SESSION_ENV);
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
