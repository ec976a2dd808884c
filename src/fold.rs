//! The fold: journal records → one state per tool call, plus per-session context
//! (DESIGN §4 and §6).
//!
//! ```text
//! intent ──PostToolUse──▶ applied ──Stop / checkpoint verifies disk──▶ persisted
//!    │                      └──PostToolUseFailure──▶ failed
//!    └──no outcome, Stop sees file == before──▶ not_applied
//! any unresolved state ──user──▶ done | reverted | handed_back   (undo: a later record)
//! ```
//!
//! Lines are parsed through a borrowed, partial view first; only session records and
//! commands are parsed in full. Without `keep_settled`, persisted entries are dropped as
//! soon as they settle, so memory follows the unresolved entries, not the journal size.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::journal::reader::{check_line, scan_lines};
use crate::journal::record::{Blob, Record, how, kind, op, parse_record};
use crate::journal::{Problem, ScanReport};
use crate::procinfo::{self, Liveness, ProcRef};
use crate::project::Project;
use crate::store::file_blob_id;

/// The state of one tool call on one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntryState {
    InFlight,
    Applied,
    Failed,
    Drifted,
    Persisted,
    NotApplied,
    Done,
    Reverted,
    HandedBack,
}

impl EntryState {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::InFlight => "in_flight",
            EntryState::Applied => "applied",
            EntryState::Failed => "failed",
            EntryState::Drifted => "drifted",
            EntryState::Persisted => "persisted",
            EntryState::NotApplied => "not_applied",
            EntryState::Done => "done",
            EntryState::Reverted => "reverted",
            EntryState::HandedBack => "handed_back",
        }
    }
    /// What `recover` reports.
    pub fn is_unresolved(self) -> bool {
        matches!(self, EntryState::InFlight | EntryState::Applied | EntryState::Failed | EntryState::Drifted)
    }
    fn from_how(h: &str) -> Option<EntryState> {
        Some(match h {
            how::DONE => EntryState::Done,
            how::REVERTED => EntryState::Reverted,
            how::HANDED_BACK => EntryState::HandedBack,
            how::NOT_APPLIED => EntryState::NotApplied,
            _ => return None,
        })
    }
}

impl std::fmt::Display for EntryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A triage action recorded on an entry (`resolved` record), possibly undone later.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    pub action: String,
    pub how: String,
    pub ts: String,
    /// Bytes the action overwrote (revert), captured before the write.
    pub overwrote: Option<Blob>,
    /// Bytes the action wrote (revert).
    pub wrote: Option<Blob>,
    pub undone: bool,
    /// Line number of the record: journal order is the order actions were taken in.
    pub line: u64,
    /// The full record, for fields this fold does not interpret.
    pub record: Record,
}

/// One tool call's change to one path.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: String,
    pub session: String,
    pub sid: String,
    pub tool: String,
    pub event: String,
    pub path: String,
    pub outside: bool,
    /// The command that caused it (Bash side effects).
    pub parent: Option<String>,
    /// State from the tool's lifecycle (intent/applied/failed/persisted/not_applied/drifted).
    pub base: EntryState,
    /// Triage actions, oldest first.
    pub actions: Vec<Action>,
    pub ts: String,
    pub applied_ts: Option<String>,
    pub before: Option<Blob>,
    pub after: Option<Blob>,
    pub nocap: Option<String>,
    pub error: Option<String>,
    /// Line number of the entry's first record (journal order).
    pub line: u64,
    /// Rebuilt from a transcript (`walj import`), not seen by a hook.
    pub imported: bool,
    /// Changed by a background command after it returned.
    pub background: bool,
    /// The journal line was v1 (the proposal's hook): no blobs.
    pub v1: bool,
}

impl Entry {
    /// The current state: the last triage action not undone, else the lifecycle state.
    pub fn state(&self) -> EntryState {
        self.actions.iter().rev().find(|a| !a.undone).and_then(|a| EntryState::from_how(&a.how)).unwrap_or(self.base)
    }
    pub fn is_unresolved(&self) -> bool {
        self.state().is_unresolved()
    }
    /// The last action not undone.
    pub fn last_action(&self) -> Option<&Action> {
        self.actions.iter().rev().find(|a| !a.undone)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStatus {
    Live,
    Ended,
    Crashed,
    Unknown,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Live => "live",
            SessionStatus::Ended => "ended",
            SessionStatus::Crashed => "crashed",
            SessionStatus::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub ts: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Todo {
    /// Task id (TaskCreate/TaskUpdate), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub content: String,
    /// pending / in_progress / completed (open string).
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}

impl Todo {
    pub fn is_open(&self) -> bool {
        self.status != "completed" && self.status != "deleted"
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandStatus {
    InFlight,
    Ok,
    Failed,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Command {
    pub id: String,
    pub ts: String,
    pub command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub cwd: Option<String>,
    pub background: bool,
    /// Claude Code's background task id (`backgroundTaskId`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub status: CommandStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A brief waiting for (or delivered to) the next SessionStart.
#[derive(Debug, Clone, PartialEq)]
pub struct Handoff {
    pub action: String,
    pub ts: String,
    pub session: String,
    pub brief: String,
    pub entries: Vec<String>,
    pub delivered: Option<String>,
    pub undone: bool,
    /// Line number of the record (journal order).
    pub line: u64,
    pub record: Record,
}

/// What the journal knows of one Claude Code session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionInfo {
    pub session: String,
    pub sid: String,
    pub first_ts: String,
    pub last_ts: String,
    pub started: Option<String>,
    pub source: Option<String>,
    pub model: Option<String>,
    pub cwd: Option<String>,
    pub head: Option<String>,
    pub branch: Option<String>,
    pub transcript: Option<String>,
    pub prompts: Vec<Prompt>,
    pub todos: Vec<Todo>,
    pub commands: Vec<Command>,
    /// Commands not kept in `commands` (light folds keep only notable ones).
    pub commands_total: usize,
    pub compactions: Vec<(String, String)>,
    pub end: Option<(String, String)>,
    pub last_start_ts: Option<String>,
    pub proc: Option<ProcRef>,
    pub last_assistant_message: Option<String>,
    pub background_tasks: Vec<Value>,
    pub announced: bool,
    pub imported: bool,
    pub v1: bool,
    pub records: u64,
}

impl SessionInfo {
    /// live / ended / crashed / unknown (DESIGN §4).
    pub fn status(&self) -> SessionStatus {
        if let Some((end_ts, _)) = &self.end
            && self.last_start_ts.as_deref().is_none_or(|s| s <= end_ts.as_str())
        {
            return SessionStatus::Ended;
        }
        match self.proc {
            None => SessionStatus::Unknown,
            Some(p) => match procinfo::liveness(p) {
                Liveness::Running => SessionStatus::Live,
                Liveness::Gone => SessionStatus::Crashed,
                Liveness::Unknown => SessionStatus::Unknown,
            },
        }
    }
    pub fn last_prompt(&self) -> Option<&str> {
        self.prompts.last().map(|p| p.text.as_str())
    }
    pub fn todos_done(&self) -> (usize, usize) {
        (self.todos.iter().filter(|t| !t.is_open()).count(), self.todos.len())
    }
}

#[derive(Debug, Clone, Default)]
pub struct FoldOptions {
    /// Keep persisted and not-applied entries (the TUI's "show resolved", `log`).
    pub keep_settled: bool,
    /// Only this session (full id or prefix).
    pub session: Option<String>,
    /// Keep every command (else only in-flight, failed and background ones).
    pub all_commands: bool,
}

/// The folded journal.
#[derive(Debug, Default)]
pub struct Fold {
    /// Entries in journal order.
    pub entries: Vec<Entry>,
    /// Sessions in order of first appearance.
    pub sessions: Vec<SessionInfo>,
    pub handoffs: Vec<Handoff>,
    pub report: ScanReport,
    /// Records read.
    pub records: u64,
    by_id: HashMap<String, usize>,
    by_session: HashMap<String, usize>,
    /// Per path, the line and images of the latest entry dropped as settled (`keep_settled`
    /// false): the disk may hold that later change, which is not drift ([`Fold::check_disk`]).
    /// Digests ([`digest`]), so memory stays small however many paths the journal names.
    settled: DigestMap<(u64, [Option<u64>; 2])>,
    /// The session of the previous record: consecutive lines mostly share one.
    last_session: Option<usize>,
}

/// The borrowed partial view used for every line.
#[derive(Deserialize, Default, Debug, PartialEq)]
struct Lite<'a> {
    #[serde(default)]
    v: u32,
    #[serde(default, borrow)]
    sid: Cow<'a, str>,
    #[serde(default, borrow)]
    ts: Cow<'a, str>,
    #[serde(default, borrow)]
    event: Cow<'a, str>,
    #[serde(default, borrow)]
    path: Cow<'a, str>,
    #[serde(default)]
    persisted: bool,
    #[serde(default, borrow)]
    op: Cow<'a, str>,
    #[serde(default, borrow)]
    id: Cow<'a, str>,
    #[serde(default, borrow)]
    session: Cow<'a, str>,
    #[serde(default, borrow)]
    tool: Option<Cow<'a, str>>,
    #[serde(default, with = "crate::journal::record::blob_field")]
    before: Option<Blob>,
    #[serde(default, with = "crate::journal::record::blob_field")]
    after: Option<Blob>,
    #[serde(default)]
    nocap: Option<String>,
    #[serde(default)]
    outside: bool,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    pair: bool,
    #[serde(default)]
    imported: bool,
    #[serde(default)]
    background: bool,
    #[serde(default)]
    pid: Option<u32>,
    #[serde(default)]
    pstart: Option<u64>,
}

impl Fold {
    /// Reads and folds a journal. A missing journal folds to nothing.
    pub fn load(journal: &Path, opts: &FoldOptions) -> io::Result<Fold> {
        let mut fold = Fold::default();
        let filter = opts.session.as_deref().filter(|s| !s.is_empty());
        // Every v2 line carries the 6-char sid: skip other sessions' lines unparsed.
        let needle: Option<Vec<u8>> = filter.map(|s| s.chars().take(6).collect::<String>().into_bytes());
        let finder = needle.as_deref().map(memchr::memmem::Finder::new);
        let mut problems = Vec::new();
        let mut pairs = Pairing::default();
        let report = scan_lines(journal, |raw| {
            if let Some(f) = &finder
                && f.find(raw.bytes).is_none()
            {
                return;
            }
            if let Err(p) = check_line(raw.line_no, raw.bytes) {
                problems.push(p);
                return;
            }
            // Fast path for the bulk of a long journal: a `persisted` line only settles an
            // entry. walj writes `"op":"persisted","id":"…","session":"…"` in that order.
            if let Some((id, session)) = persisted_fast(raw.bytes) {
                if filter.is_none_or(|f| session.starts_with(f)) {
                    fold.records += 1;
                    fold.settle(id, opts);
                }
                return;
            }
            // The scanner reads walj's own lines without allocating; anything unusual
            // (escapes, unexpected types) takes serde's full parse.
            let lite: Lite = match scan_lite(raw.bytes).map_or_else(|| serde_json::from_slice(raw.bytes), Ok) {
                Ok(l) => l,
                Err(e) => {
                    problems.push(Problem::Malformed { line: raw.line_no, error: e.to_string() });
                    return;
                }
            };
            let session_key = if lite.session.is_empty() { &lite.sid } else { &lite.session };
            if let Some(f) = filter
                && !session_key.starts_with(f)
            {
                return;
            }
            fold.records += 1;
            fold.apply(raw.line_no, raw.bytes, lite, opts, &mut pairs);
        })?;
        let mut report = report;
        let torn = std::mem::take(&mut report.problems);
        for p in problems.into_iter().chain(torn) {
            report.push(p);
        }
        fold.report = report;
        if !opts.keep_settled {
            for e in std::mem::take(&mut fold.entries) {
                if matches!(e.state(), EntryState::Persisted | EntryState::NotApplied) {
                    fold.remember_settled(e);
                } else {
                    fold.entries.push(e);
                }
            }
        }
        // Settled entries were swap-removed: restore journal order.
        fold.entries.sort_by_key(|e| e.line);
        fold.reindex();
        Ok(fold)
    }

    fn reindex(&mut self) {
        self.by_id = self.entries.iter().enumerate().map(|(i, e)| (e.id.clone(), i)).collect();
    }

    /// The session of a record; `activity`: the record is the session's own work (not the
    /// user's triage of it), so it moves the session's last activity.
    fn session_index(&mut self, key: &str, sid: &str, ts: &str, activity: bool) -> usize {
        let idx = match self.last_session {
            Some(i) if self.sessions[i].session == key => i,
            _ => match self.by_session.get(key) {
                Some(&i) => i,
                None => {
                    self.sessions.push(SessionInfo {
                        session: key.to_string(),
                        sid: if sid.is_empty() { key.chars().take(6).collect() } else { sid.to_string() },
                        first_ts: ts.to_string(),
                        ..SessionInfo::default()
                    });
                    self.by_session.insert(key.to_string(), self.sessions.len() - 1);
                    self.sessions.len() - 1
                }
            },
        };
        self.last_session = Some(idx);
        let s = &mut self.sessions[idx];
        if (activity || s.last_ts.is_empty()) && ts > s.last_ts.as_str() {
            // Reuse the buffer: this runs for every line.
            s.last_ts.clear();
            s.last_ts.push_str(ts);
        }
        idx
    }

    fn session_mut(&mut self, key: &str, sid: &str, ts: &str, activity: bool) -> &mut SessionInfo {
        let i = self.session_index(key, sid, ts, activity);
        &mut self.sessions[i]
    }

    fn apply(&mut self, line: u64, bytes: &[u8], lite: Lite<'_>, opts: &FoldOptions, pairs: &mut Pairing) {
        let v1 = lite.v <= 1 && lite.op.is_empty();
        let op_name: &str = if v1 { op::APPLIED } else { &lite.op };
        if op_name == op::AUDIT {
            // Verification results: kept in the journal for people, nothing to fold.
            return;
        }
        let tool = lite.tool.as_deref().unwrap_or("");
        {
            let key: &str = if lite.session.is_empty() { &lite.sid } else { &lite.session };
            // Triage (resolved, undo, handoff) keeps a session's last activity: its crash
            // time and its place in the list.
            let activity = !matches!(op_name, op::RESOLVED | op::UNDO | op::HANDOFF);
            let si = self.session_index(key, &lite.sid, &lite.ts, activity);
            let s = &mut self.sessions[si];
            s.records += 1;
            s.v1 |= v1;
            s.imported |= lite.imported;
            if let (Some(pid), Some(start)) = (lite.pid, lite.pstart) {
                s.proc = Some(ProcRef { pid, start });
            }
        }
        if op_name == op::PERSISTED {
            // The bulk of a long journal: settle the entry, nothing else to read.
            self.settle(&lite.id, opts);
            return;
        }
        let session_key = if lite.session.is_empty() { lite.sid.to_string() } else { lite.session.to_string() };
        let ts = lite.ts.to_string();
        let is_command = tool == "Bash" && lite.path.is_empty();
        match op_name {
            op::INTENT | op::APPLIED | op::FAILED | op::RESOLVED if is_command => {
                if let Ok(rec) = parse_record(bytes) {
                    self.apply_command(op_name, &session_key, &rec, opts);
                }
            }
            op::INTENT => {
                let key = || (session_key.clone(), tool.to_string(), lite.path.to_string());
                let id = pairs.intent(line, &lite.id, lite.pair, key);
                if self.by_id.contains_key(&id) {
                    return;
                }
                self.push_entry(Entry {
                    id,
                    sid: lite.sid.to_string(),
                    session: session_key,
                    tool: tool.to_string(),
                    event: lite.event.to_string(),
                    path: lite.path.to_string(),
                    outside: lite.outside,
                    parent: lite.parent,
                    base: EntryState::InFlight,
                    actions: Vec::new(),
                    ts,
                    applied_ts: None,
                    before: lite.before,
                    after: None,
                    nocap: lite.nocap,
                    error: None,
                    line,
                    imported: lite.imported,
                    background: lite.background,
                    v1: false,
                });
            }
            op::APPLIED | op::FAILED => {
                let key = || (session_key.clone(), tool.to_string(), lite.path.to_string());
                let id = pairs.outcome(line, &lite.id, lite.pair, key);
                let failed = op_name == op::FAILED;
                let error = if failed {
                    parse_record(bytes).ok().and_then(|r| r.get_str("error").map(str::to_string))
                } else {
                    None
                };
                match self.by_id.get(&id) {
                    Some(&i) => {
                        let e = &mut self.entries[i];
                        if e.base == EntryState::InFlight || e.base == EntryState::Applied {
                            e.base = if failed { EntryState::Failed } else { EntryState::Applied };
                        }
                        if lite.after.is_some() {
                            e.after = lite.after;
                        }
                        if lite.before.is_some() && e.before.is_none() {
                            e.before = lite.before;
                        }
                        e.applied_ts = Some(ts);
                        e.error = error;
                        if lite.persisted && !failed {
                            e.base = EntryState::Persisted;
                        }
                        if e.event.is_empty() {
                            e.event = lite.event.to_string();
                        }
                    }
                    None => {
                        let base = if failed {
                            EntryState::Failed
                        } else if lite.persisted {
                            EntryState::Persisted
                        } else {
                            EntryState::Applied
                        };
                        let entry = Entry {
                            id,
                            sid: lite.sid.to_string(),
                            session: session_key,
                            tool: tool.to_string(),
                            event: lite.event.to_string(),
                            path: lite.path.to_string(),
                            outside: lite.outside,
                            parent: lite.parent,
                            base,
                            actions: Vec::new(),
                            ts: ts.clone(),
                            applied_ts: Some(ts),
                            before: lite.before,
                            after: lite.after,
                            nocap: lite.nocap,
                            error,
                            line,
                            imported: lite.imported,
                            background: lite.background,
                            v1,
                        };
                        if base == EntryState::Persisted && !opts.keep_settled {
                            self.remember_settled(entry);
                        } else {
                            self.push_entry(entry);
                        }
                    }
                }
            }
            op::RESOLVED => {
                let Some(&i) = self.by_id.get(lite.id.as_ref()) else { return };
                let Ok(rec) = parse_record(bytes) else { return };
                let h = rec.how.clone().unwrap_or_default();
                if h == how::NOT_APPLIED {
                    let e = &mut self.entries[i];
                    // A failed call that left the file alone (import settles those) did not apply either.
                    if e.base == EntryState::InFlight || e.base == EntryState::Failed {
                        e.base = EntryState::NotApplied;
                    }
                    if !opts.keep_settled && e.actions.is_empty() {
                        self.remove_entry(i);
                    }
                    return;
                }
                self.entries[i].actions.push(Action {
                    action: rec.action.clone().unwrap_or_else(|| format!("L{line}")),
                    how: h,
                    ts,
                    overwrote: rec.before.clone(),
                    wrote: rec.after.clone(),
                    undone: false,
                    line,
                    record: rec,
                });
            }
            op::UNDO => {
                let Ok(rec) = parse_record(bytes) else { return };
                let Some(target) = rec.target.as_deref() else { return };
                if let Some(&i) = self.by_id.get(lite.id.as_ref())
                    && let Some(a) = self.entries[i].actions.iter_mut().rev().find(|a| a.action == target)
                {
                    a.undone = true;
                }
                for h in self.handoffs.iter_mut().filter(|h| h.action == target) {
                    h.undone = true;
                }
            }
            op::HANDOFF => {
                let Ok(rec) = parse_record(bytes) else { return };
                self.handoffs.push(Handoff {
                    action: rec.action.clone().unwrap_or_else(|| format!("L{line}")),
                    ts,
                    session: session_key,
                    brief: rec.get_str("brief").unwrap_or_default().to_string(),
                    entries: rec
                        .extra
                        .get("entries")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                        .unwrap_or_default(),
                    delivered: None,
                    undone: false,
                    line,
                    record: rec,
                });
            }
            op::SESSION => {
                if let Ok(rec) = parse_record(bytes) {
                    self.apply_session(&session_key, &rec);
                }
            }
            _ => {} // audit and unknown ops: kept in the journal, nothing to fold
        }
    }

    /// A `persisted` record: the entry is verified; without `keep_settled` it is dropped.
    fn settle(&mut self, id: &str, opts: &FoldOptions) {
        if let Some(&i) = self.by_id.get(id) {
            let e = &mut self.entries[i];
            e.base = EntryState::Persisted;
            if !opts.keep_settled && e.actions.is_empty() {
                self.remove_entry(i);
            }
        }
    }

    fn push_entry(&mut self, e: Entry) {
        self.by_id.insert(e.id.clone(), self.entries.len());
        self.entries.push(e);
    }

    /// Drops a settled entry (swap-remove keeps this O(1); order is restored at the end).
    fn remove_entry(&mut self, i: usize) {
        let e = self.entries.swap_remove(i);
        self.by_id.remove(&e.id);
        if i < self.entries.len() {
            let moved = self.entries[i].id.clone();
            self.by_id.insert(moved, i);
        }
        self.remember_settled(e);
    }

    /// Keeps the images of a settled entry that is dropped, when it is the latest on its path.
    fn remember_settled(&mut self, e: Entry) {
        if e.outside || e.v1 {
            return;
        }
        let images = [e.before.as_ref().map(image_digest), e.after.as_ref().map(image_digest)];
        let slot = self.settled.entry(digest(&e.path)).or_insert((e.line, images));
        if slot.0 < e.line {
            *slot = (e.line, images);
        }
    }

    fn apply_command(&mut self, op_name: &str, session: &str, rec: &Record, opts: &FoldOptions) {
        let s = self.session_mut(session, &rec.sid, &rec.ts, op_name != op::RESOLVED);
        let id = rec.id.clone();
        match op_name {
            op::INTENT => {
                s.commands_total += 1;
                s.commands.push(Command {
                    id,
                    ts: rec.ts.clone(),
                    command: rec.get_str("command").unwrap_or_default().to_string(),
                    description: rec.get_str("description").map(str::to_string),
                    cwd: rec.get_str("cwd").map(str::to_string),
                    background: rec.extra.get("background").and_then(Value::as_bool).unwrap_or(false),
                    task_id: None,
                    status: CommandStatus::InFlight,
                    error: None,
                });
            }
            op::RESOLVED => {
                // Stop settled a command that never got an outcome: it did not run (denied).
                if rec.how.as_deref() == Some(how::NOT_APPLIED)
                    && let Some(c) = s.commands.iter_mut().rev().find(|c| c.id == id)
                    && c.status == CommandStatus::InFlight
                {
                    c.status = CommandStatus::Failed;
                    c.error = Some("not run: no outcome by the end of the turn (denied)".to_string());
                }
            }
            _ => {
                let failed = op_name == op::FAILED;
                let pos = s.commands.iter().rposition(|c| c.id == id);
                if let Some(p) = pos {
                    let c = &mut s.commands[p];
                    c.status = if failed { CommandStatus::Failed } else { CommandStatus::Ok };
                    c.error = rec.get_str("error").map(str::to_string);
                    if let Some(t) = rec.get_str("task_id") {
                        c.task_id = Some(t.to_string());
                        c.background = true;
                    }
                    let notable = c.background || failed;
                    if !notable && !opts.all_commands {
                        s.commands.remove(p);
                    }
                }
            }
        }
    }

    fn apply_session(&mut self, session: &str, rec: &Record) {
        let k = rec.kind.as_deref().unwrap_or("");
        match k {
            kind::ANNOUNCED => {
                if let Some(t) = rec.target.as_deref()
                    && let Some(&i) = self.by_session.get(t)
                {
                    self.sessions[i].announced = true;
                }
                return;
            }
            kind::DELIVERED => {
                if let Some(t) = rec.target.as_deref() {
                    for h in self.handoffs.iter_mut().filter(|h| h.action == t) {
                        h.delivered = Some(rec.ts.clone());
                    }
                }
                // The delivery also tells that this session started: fall through is not needed.
                return;
            }
            _ => {}
        }
        let s = self.session_mut(session, &rec.sid, &rec.ts, true);
        let text = |key: &str| rec.get_str(key).map(str::to_string);
        match k {
            kind::START => {
                if s.started.is_none() {
                    s.started = Some(rec.ts.clone());
                    s.head = text("head");
                    s.branch = text("branch");
                }
                s.last_start_ts = Some(rec.ts.clone());
                s.source = text("source").or(s.source.take());
                s.model = text("model").or(s.model.take());
                s.cwd = text("cwd").or(s.cwd.take());
                s.transcript = text("transcript").or(s.transcript.take());
                if rec.extra.get("imported").and_then(Value::as_bool) == Some(true) {
                    s.imported = true;
                }
            }
            kind::PROMPT => {
                if let Some(t) = text("prompt") {
                    s.prompts.push(Prompt { ts: rec.ts.clone(), text: t });
                }
            }
            kind::TODOS => {
                if let Some(list) = rec.extra.get("todos").and_then(Value::as_array) {
                    s.todos = list.iter().filter_map(todo_from_json).collect();
                }
            }
            kind::TASK => apply_task(s, rec),
            kind::STOP | kind::SUBAGENT_STOP => {
                if let Some(m) = text("last_assistant_message") {
                    s.last_assistant_message = Some(m);
                }
                if let Some(b) = rec.extra.get("background_tasks").and_then(Value::as_array)
                    && k == kind::STOP
                {
                    s.background_tasks = b.clone();
                }
            }
            kind::COMPACT => {
                s.compactions.push((rec.ts.clone(), text("trigger").unwrap_or_default()));
            }
            kind::END => {
                s.end = Some((rec.ts.clone(), text("reason").unwrap_or_default()));
            }
            _ => {}
        }
        if s.transcript.is_none() {
            s.transcript = text("transcript");
        }
    }

    /// Unresolved entries in journal order.
    pub fn unresolved(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.is_unresolved())
    }

    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.by_id.get(id).map(|&i| &self.entries[i])
    }

    pub fn session(&self, key: &str) -> Option<&SessionInfo> {
        self.by_session.get(key).map(|&i| &self.sessions[i])
    }

    /// Entries of one session, in journal order.
    pub fn entries_of<'a>(&'a self, session: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries.iter().filter(move |e| e.session == session)
    }

    /// Handoffs not delivered (nor undone) yet.
    pub fn pending_handoffs(&self) -> impl Iterator<Item = &Handoff> {
        self.handoffs.iter().filter(|h| h.delivered.is_none() && !h.undone)
    }

    /// Marks applied entries whose file now matches none of the known images (of every entry
    /// on the path, and of the latest one dropped as settled) as drifted. Reads only the
    /// files of unresolved applied entries.
    pub fn check_disk(&mut self, project: &Project) {
        let mut known: HashMap<&str, Vec<Option<String>>> = HashMap::new();
        for e in &self.entries {
            let v = known.entry(e.path.as_str()).or_default();
            for b in [&e.before, &e.after].into_iter().flatten() {
                v.push(b.id().map(str::to_string));
            }
            // What a triage action wrote (a revert's merge) is a known state of the path too.
            for b in e.actions.iter().filter(|a| !a.undone).filter_map(|a| a.wrote.as_ref()) {
                v.push(b.id().map(str::to_string));
            }
        }
        let mut drifted = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            if e.base != EntryState::Applied || e.outside || e.v1 || e.after.is_none() {
                continue;
            }
            let Ok(abs) = project.resolve_rel(&e.path) else { continue };
            let disk = disk_blob(&abs);
            let Some(disk) = disk else { continue };
            if known.get(e.path.as_str()).is_some_and(|k| k.contains(&disk))
                || self
                    .settled
                    .get(&digest(&e.path))
                    .is_some_and(|(_, s)| s.contains(&Some(disk.as_deref().map_or(ABSENT_DIGEST, blob_digest))))
            {
                continue;
            }
            drifted.push(i);
        }
        for i in drifted {
            self.entries[i].base = EntryState::Drifted;
        }
    }

    /// True when the latest entry on `path` dropped as settled came after journal line `line`
    /// and had `disk` (a blob id, `None` = absent) as an image.
    pub(crate) fn settled_after(&self, path: &str, line: u64, disk: Option<&str>) -> bool {
        self.settled
            .get(&digest(path))
            .is_some_and(|(l, s)| *l > line && s.contains(&Some(disk.map_or(ABSENT_DIGEST, blob_digest))))
    }

    /// Resolves a full id or a unique prefix (also without Claude Code's `toolu_` prefix).
    pub fn find(&self, prefix: &str) -> Result<&Entry, IdError> {
        find_by_prefix(&self.entries, prefix, |e| &e.id).map(|i| &self.entries[i])
    }

    /// Resolves a session id or unique prefix.
    pub fn find_session(&self, prefix: &str) -> Result<&SessionInfo, IdError> {
        find_by_prefix(&self.sessions, prefix, |s| &s.session).map(|i| &self.sessions[i])
    }
}

/// Entry ids of lines without a `tool_use_id`: an intent's generated id (`pair: true`) is
/// taken by the next outcome of the same (session, tool, path); a line with no id at all is
/// `L<line>`. Shared with journal rewrites, which must name entries exactly as the fold does.
#[derive(Default)]
pub(crate) struct Pairing {
    open: HashMap<(String, String, String), VecDeque<String>>,
}

impl Pairing {
    /// The entry id of an `intent` line.
    pub(crate) fn intent(
        &mut self,
        line: u64,
        id: &str,
        pair: bool,
        key: impl FnOnce() -> (String, String, String),
    ) -> String {
        let id = if id.is_empty() { format!("L{line}") } else { id.to_string() };
        if pair {
            self.open.entry(key()).or_default().push_back(id.clone());
        }
        id
    }

    /// The entry id of an `applied` or `failed` line.
    pub(crate) fn outcome(
        &mut self,
        line: u64,
        id: &str,
        pair: bool,
        key: impl FnOnce() -> (String, String, String),
    ) -> String {
        if pair || id.is_empty() {
            if let Some(found) = self.open.get_mut(&key()).and_then(VecDeque::pop_front) {
                return found;
            }
            if id.is_empty() {
                return format!("L{line}");
            }
        }
        id.to_string()
    }
}

/// Reads the top-level members of a JSON object line into a [`Lite`] without allocating.
/// Returns `None` (the caller then uses serde) on string escapes, non-UTF-8, a known field
/// of an unexpected type, or anything that is not a plain object.
fn scan_lite(line: &[u8]) -> Option<Lite<'_>> {
    let text = std::str::from_utf8(line).ok()?;
    let b = text.as_bytes();
    let mut lite = Lite::default();
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(lite);
    }
    loop {
        let (key, next) = raw_string(text, i)?;
        i = ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        match *b.get(i)? {
            b'"' => {
                let (v, next) = raw_string(text, i)?;
                i = next;
                let c = Cow::Borrowed(v);
                match key {
                    "sid" => lite.sid = c,
                    "ts" => lite.ts = c,
                    "event" => lite.event = c,
                    "path" => lite.path = c,
                    "op" => lite.op = c,
                    "id" => lite.id = c,
                    "session" => lite.session = c,
                    "tool" => lite.tool = Some(c),
                    "before" => lite.before = Some(Blob::Id(v.to_string())),
                    "after" => lite.after = Some(Blob::Id(v.to_string())),
                    "nocap" => lite.nocap = Some(v.to_string()),
                    "parent" => lite.parent = Some(v.to_string()),
                    "v" | "persisted" | "outside" | "pair" | "imported" | "background" | "pid" | "pstart" => {
                        return None;
                    }
                    _ => {}
                }
            }
            b'{' | b'[' => {
                if LITE_FIELDS.contains(&key) {
                    return None;
                }
                i = skip_nested(b, i)?;
            }
            _ => {
                let start = i;
                while i < b.len() && !matches!(b[i], b',' | b'}') && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
                let v = &text[start..i];
                let flag = || match v {
                    "true" => Some(true),
                    "false" | "null" => Some(false),
                    _ => None,
                };
                match key {
                    "v" => lite.v = v.parse().ok()?,
                    "persisted" => lite.persisted = flag()?,
                    "outside" => lite.outside = flag()?,
                    "pair" => lite.pair = flag()?,
                    "imported" => lite.imported = flag()?,
                    "background" => lite.background = flag()?,
                    "pid" => lite.pid = if v == "null" { None } else { Some(v.parse().ok()?) },
                    "pstart" => lite.pstart = if v == "null" { None } else { Some(v.parse().ok()?) },
                    "before" | "after" if v == "null" => {
                        let absent = Some(Blob::Absent);
                        if key == "before" { lite.before = absent } else { lite.after = absent }
                    }
                    k if LITE_FIELDS.contains(&k) && v != "null" => return None,
                    _ => {
                        // Any other scalar must at least look like JSON.
                        if v.is_empty() {
                            return None;
                        }
                    }
                }
            }
        }
        i = ws(b, i);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return (ws(b, i + 1) == b.len()).then_some(lite),
            _ => return None,
        }
    }
}

const LITE_FIELDS: &[&str] = &[
    "v",
    "sid",
    "ts",
    "event",
    "path",
    "persisted",
    "op",
    "id",
    "session",
    "tool",
    "before",
    "after",
    "nocap",
    "outside",
    "parent",
    "pair",
    "imported",
    "background",
    "pid",
    "pstart",
];

fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The contents of the string starting at `text[i] == '"'` and the index after its closing
/// quote; `None` when it has escapes (serde decodes those).
fn raw_string(text: &str, i: usize) -> Option<(&str, usize)> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let end = i + 1 + memchr::memchr2(b'"', b'\\', &b[i + 1..])?;
    if b[end] != b'"' {
        return None;
    }
    Some((&text[i + 1..end], end + 1))
}

/// Skips a nested object or array starting at `b[i]`; returns the index after it.
fn skip_nested(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' => {
                // Strings may hold brackets and escaped quotes.
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// `(id, session)` of a walj-written `persisted` line, without parsing it; `None` when the
/// line is anything else or has escapes (then it takes the full parse).
fn persisted_fast(line: &[u8]) -> Option<(&str, &str)> {
    const OP: &[u8] = b",\"op\":\"persisted\",\"id\":\"";
    const SESSION: &[u8] = b"\",\"session\":\"";
    // Built once: `memmem::find` would build a searcher for every line.
    static FINDER: std::sync::OnceLock<memchr::memmem::Finder<'static>> = std::sync::OnceLock::new();
    let finder = FINDER.get_or_init(|| memchr::memmem::Finder::new(OP));
    let at = finder.find(line)? + OP.len();
    let rest = &line[at..];
    let id_end = memchr::memchr(b'"', rest)?;
    let id = &rest[..id_end];
    let rest = rest.get(id_end..)?;
    if !rest.starts_with(SESSION) {
        return None;
    }
    let rest = &rest[SESSION.len()..];
    let s_end = memchr::memchr(b'"', rest)?;
    let session = &rest[..s_end];
    if id.contains(&b'\\') || session.contains(&b'\\') {
        return None;
    }
    Some((std::str::from_utf8(id).ok()?, std::str::from_utf8(session).ok()?))
}

fn todo_from_json(v: &Value) -> Option<Todo> {
    let content = v.get("content").or_else(|| v.get("subject")).and_then(Value::as_str)?;
    Some(Todo {
        id: v.get("id").and_then(|i| i.as_str().map(str::to_string).or_else(|| i.as_u64().map(|n| n.to_string()))),
        content: content.to_string(),
        status: v.get("status").and_then(Value::as_str).unwrap_or("pending").to_string(),
        active_form: v.get("activeForm").and_then(Value::as_str).map(str::to_string),
    })
}

/// TaskCreate adds a todo, TaskUpdate changes one (by `taskId`).
fn apply_task(s: &mut SessionInfo, rec: &Record) {
    let input = rec.extra.get("input").cloned().unwrap_or(Value::Null);
    let tool = rec.tool.as_deref().unwrap_or("");
    let response = rec.extra.get("response").cloned().unwrap_or(Value::Null);
    let id_in = |v: &Value| -> Option<String> {
        v.get("taskId")
            .or_else(|| v.get("id"))
            .and_then(|i| i.as_str().map(str::to_string).or_else(|| i.as_u64().map(|n| n.to_string())))
    };
    if tool == "TaskCreate" {
        // The id comes back in the response: an object with an id, or text like "Task #3 created".
        let id = id_in(&response)
            .or_else(|| response.get("task").and_then(id_in))
            .or_else(|| response.as_str().and_then(task_number));
        let content = input
            .get("subject")
            .or_else(|| input.get("description"))
            .or_else(|| input.get("content"))
            .and_then(Value::as_str)
            .unwrap_or("(task)")
            .to_string();
        s.todos.push(Todo {
            id,
            content,
            status: input.get("status").and_then(Value::as_str).unwrap_or("pending").to_string(),
            active_form: input.get("activeForm").and_then(Value::as_str).map(str::to_string),
        });
    } else if let Some(id) = id_in(&input) {
        let status = input.get("status").and_then(Value::as_str).map(str::to_string);
        let subject = input.get("subject").and_then(Value::as_str).map(str::to_string);
        match s.todos.iter_mut().find(|t| t.id.as_deref() == Some(id.as_str())) {
            Some(t) => {
                if let Some(st) = status {
                    t.status = st;
                }
                if let Some(su) = subject {
                    t.content = su;
                }
            }
            None => s.todos.push(Todo {
                id: Some(id.clone()),
                content: subject.unwrap_or_else(|| format!("task #{id}")),
                status: status.unwrap_or_else(|| "pending".into()),
                active_form: None,
            }),
        }
    }
}

fn task_number(text: &str) -> Option<String> {
    let at = text.find('#')?;
    let digits: String = text[at + 1..].chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty()).then_some(digits)
}

/// A 64-bit digest of a path or a blob id (what [`Fold`] keeps of settled entries). FNV-1a:
/// this runs for every settled entry of a long journal, and a 64-bit collision between two
/// paths of one project only costs a missed drift mark.
fn digest(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h | 1 // never ABSENT_DIGEST
}

/// The map key is already a digest: hashing it again would only cost time.
#[derive(Default, Clone, Copy)]
struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ u64::from(b) ^ (self.0 >> 56);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type DigestMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<DigestHasher>>;

/// The digest standing for "the file was absent".
const ABSENT_DIGEST: u64 = 0;

fn image_digest(b: &Blob) -> u64 {
    b.id().map_or(ABSENT_DIGEST, blob_digest)
}

/// A blob id is already a SHA-1: its first 16 hex digits are a fine digest.
fn blob_digest(id: &str) -> u64 {
    match id.get(..16).and_then(|h| u64::from_str_radix(h, 16).ok()) {
        Some(d) => d | 1,
        None => digest(id),
    }
}

/// The blob id of a file on disk: `Some(None)` when absent, `None` when unreadable.
pub fn disk_blob(path: &Path) -> Option<Option<String>> {
    match file_blob_id(path) {
        Ok(id) => Some(Some(id)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Some(None),
        Err(_) => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("no entry matches {0:?}")]
    Unknown(String),
    #[error("{prefix:?} is ambiguous; it matches: {}", candidates.join(", "))]
    Ambiguous { prefix: String, candidates: Vec<String> },
}

/// Display form of an id: Claude Code's `toolu_` prefix dropped, at most 12 chars.
pub fn short_id(id: &str) -> String {
    abbrev(id.strip_prefix("toolu_").unwrap_or(id), 12).to_string()
}

/// The first `n` characters of `s`, for showing ids and hashes read from the journal
/// (never cuts a character: those strings are user data, not always hex).
pub fn abbrev(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

fn find_by_prefix<T>(items: &[T], prefix: &str, id: impl Fn(&T) -> &str) -> Result<usize, IdError> {
    if prefix.is_empty() {
        return Err(IdError::Unknown(prefix.to_string()));
    }
    if let Some(i) = items.iter().position(|t| id(t) == prefix) {
        return Ok(i);
    }
    let matches: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            let full = id(t);
            full.starts_with(prefix) || full.strip_prefix("toolu_").is_some_and(|s| s.starts_with(prefix))
        })
        .map(|(i, _)| i)
        .collect();
    match matches.len() {
        0 => Err(IdError::Unknown(prefix.to_string())),
        1 => Ok(matches[0]),
        _ => Err(IdError::Ambiguous {
            prefix: prefix.to_string(),
            candidates: matches.iter().map(|&i| id(&items[i]).to_string()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde_lite(line: &[u8]) -> Lite<'_> {
        serde_json::from_slice(line).unwrap()
    }

    proptest! {
        /// The allocation-free scanner reads every walj line exactly as serde does (or defers).
        #[test]
        fn scanner_agrees_with_serde(
            path in "\\PC{0,20}",
            id in "[a-zA-Z0-9_\\\\\"]{0,12}",
            op in prop::sample::select(vec!["intent", "applied", "failed", "persisted", "session", "x"]),
            before in prop::option::of(prop::option::of("[0-9a-f]{40}")),
            pid in prop::option::of(any::<u32>()),
            outside in any::<bool>(),
            extra in "\\PC{0,10}",
        ) {
            let mut r = Record::new(op, "sess-ion");
            r.path = path;
            r.id = id;
            r.before = before.map(|b| b.map_or(Blob::Absent, Blob::Id));
            r.pid = pid;
            r.outside = outside;
            r = r.with("nested", serde_json::json!({"a": [1, "]}", {"b": extra.clone()}]})).with("note", extra);
            let line = r.to_line();
            let line = &line[..line.len() - 1];
            if let Some(fast) = scan_lite(line) {
                prop_assert_eq!(fast, serde_lite(line));
            }
        }
    }

    #[test]
    fn scanner_handles_walj_lines_and_defers_on_escapes() {
        let mut r = Record::new(op::INTENT, "s");
        r.path = "a/b.rs".into();
        r.before = Some(Blob::Absent);
        let line = r.to_line();
        let l = scan_lite(&line[..line.len() - 1]).expect("plain line scans");
        assert_eq!(l.before, Some(Blob::Absent));
        assert_eq!(l.path, "a/b.rs");
        r.path = "a\"b".into();
        let line = r.to_line();
        assert!(scan_lite(&line[..line.len() - 1]).is_none());
        assert!(scan_lite(b"{\"v\":\"2\"}").is_none());
        assert!(scan_lite(b"{\"v\":2} trailing").is_none());
        assert!(scan_lite(b"[1]").is_none());
    }
}
