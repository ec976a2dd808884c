//! The fold's model: entries and their states, triage actions, sessions, handoffs.

use std::borrow::Cow;

use serde_json::Value;

use crate::journal::record::{Blob, Record, how, op};
use crate::journal::view::RecordView;
use crate::procinfo::{self, Liveness, ProcRef};

/// The state of one tool call on one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
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
    /// The state's name: the op or `how` that gives it, where one does.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryState::InFlight => "in_flight",
            EntryState::Applied => op::APPLIED,
            EntryState::Failed => op::FAILED,
            EntryState::Drifted => "drifted",
            EntryState::Persisted => op::PERSISTED,
            EntryState::NotApplied => how::NOT_APPLIED,
            EntryState::Done => how::DONE,
            EntryState::Reverted => how::REVERTED,
            EntryState::HandedBack => how::HANDED_BACK,
        }
    }
    /// What `recover` reports.
    pub(crate) fn is_unresolved(self) -> bool {
        matches!(self, EntryState::InFlight | EntryState::Applied | EntryState::Failed | EntryState::Drifted)
    }
    pub(crate) fn from_how(h: &str) -> Option<EntryState> {
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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

/// How much of a command line an entry it caused keeps (the command's own record has it all).
pub(crate) const COMMAND_SHOWN: usize = 200;

/// `s` cut to at most `max` bytes at a character boundary, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// One tool call's change to one path.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// Derived from a Bash command that never finished (killed or interrupted mid-run).
    pub unfinished: bool,
    /// The blob id of the content the call meant to leave (file tools' intents).
    pub intended: Option<String>,
    /// An in-flight file tool call: what the disk holds now ([`super::Fold::check_disk`]).
    pub disk_check: Option<InFlightCheck>,
    /// With [`InFlightCheck::WrittenByLater`]: the later call (entry id) that wrote the
    /// content, when the fold still holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_check_by: Option<String>,
    /// A derived entry that may not be its command's work: any `attribution` but absent
    /// (`uncertain`, `after_stop`, or a value this walj does not know).
    pub uncertain: bool,
    /// A derived entry made (by its ctime) after its session's last sign of life
    /// (`attribution: "after_stop"`): the orphaned command's, or made after Claude Code
    /// stopped. Never counted as Claude's work (`revert --session`, the brief).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_stop: bool,
    /// A derived entry made while several commands' windows were open, none of whose text
    /// singles it out (`attribution: "undecided"`): "uncertain: this command or one of
    /// `candidates`", counted in no command's changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undecided: bool,
    /// A killed command's change whose ctime is after its session's last sign of life, its
    /// mtime not, and no watcher to tell (`attribution: "redated"`): uncertain, never after-stop.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redated: bool,
    /// The subagent whose tool call made it (`agent_id`); `None`: the main thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// For an entry derived from a killed command: when the change was made (its ctime),
    /// shown as its time; `ts` is when walj first looked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
    /// For an after-stop entry: when the checkout's watcher saw Claude Code's process end
    /// (`end_seen`); `None`: walj had no watcher's word, only the journal and the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_seen: Option<String>,
    /// For an after-stop entry no watcher dated: why no watcher saw Claude Code end
    /// (`watch_absent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch_absent: Option<String>,
    /// For an entry a Bash command caused: the command line (cut to [`COMMAND_SHOWN`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// For an uncertain entry: the other commands whose windows were open when the change
    /// was made (`candidates`), each of which may have made it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// The candidates' command lines (shortened), in their order, when recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidate_commands: Vec<String>,
    /// Derived from a killed command whose processes still run: the change may go on
    /// (set by [`crate::bashsnap::killed::reconcile`], never read from the journal).
    pub still_running: bool,
    /// When `walj checkpoint` last found its post-image on disk before its turn finished.
    pub verified: Option<String>,
    /// What the path is (`kind` of its records): `None` a regular file,
    /// [`crate::journal::entry_kind::SYMLINK`] a symbolic link, anything else a kind a newer
    /// walj wrote, which this one shows and never writes ([`Entry::kind_known`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A symbolic-link entry: the link's target text before and after (`None`: no link on
    /// that side), `fsutil::name`-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_after: Option<String>,
    /// A file entry's mode on each side as git writes it (`100644`, `100755`), when recorded:
    /// a revert gives the executable bit back, a diff shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode_after: Option<String>,
}

impl Entry {
    /// A new entry from its first line: `base` is the lifecycle state that line gives.
    #[inline]
    pub(crate) fn new(line: u64, id: String, session: String, view: RecordView<'_>, base: EntryState) -> Entry {
        let command = view.parent.as_ref().and(view.command.as_deref()).map(|c| cut(c, COMMAND_SHOWN));
        // Only entry records carry a kind here (a `session` record's kind names its event).
        let kind = view.kind.as_deref().filter(|_| !view.path.is_empty()).map(str::to_string);
        Entry {
            id,
            session,
            sid: view.sid.into_owned(),
            tool: view.tool.map(Cow::into_owned).unwrap_or_default(),
            event: view.event.into_owned(),
            path: view.path.into_owned(),
            outside: view.outside,
            parent: view.parent,
            base,
            actions: Vec::new(),
            ts: view.ts.into_owned(),
            applied_ts: None,
            before: view.before,
            after: None,
            nocap: view.nocap,
            error: None,
            line,
            imported: view.imported,
            background: view.background,
            v1: false,
            unfinished: view.unfinished,
            intended: view.intended.map(Cow::into_owned),
            disk_check: None,
            disk_check_by: None,
            uncertain: view.attribution.is_some(),
            after_stop: view.attribution.as_deref() == Some(crate::journal::attribution::AFTER_STOP),
            undecided: view.attribution.as_deref() == Some(crate::journal::attribution::UNDECIDED),
            redated: view.attribution.as_deref() == Some(crate::journal::attribution::REDATED),
            agent_id: view.agent_id.map(Cow::into_owned),
            command,
            changed: view.changed.map(Cow::into_owned),
            end_seen: view.end_seen.map(Cow::into_owned),
            watch_absent: view.watch_absent.map(Cow::into_owned),
            candidates: view.candidates,
            candidate_commands: view.candidate_commands,
            still_running: false,
            verified: None,
            kind,
            link_before: view.link_before.map(Cow::into_owned),
            link_after: view.link_after.map(Cow::into_owned),
            mode_before: view.mode_before.map(Cow::into_owned),
            mode_after: view.mode_after.map(Cow::into_owned),
        }
    }
    /// The executable bit the entry's pre-image had (`mode_before`), when recorded; a file that
    /// existed before with only `mode_after` recorded was not executable (both are written
    /// whenever either side is executable).
    pub(crate) fn exec_before(&self) -> Option<bool> {
        match (&self.mode_before, &self.mode_after) {
            (Some(m), _) => Some(m == crate::journal::entry_kind::MODE_EXEC),
            (None, Some(_)) if self.before.as_ref().is_some_and(|b| b.id().is_some()) => Some(false),
            _ => None,
        }
    }
    /// The executable bit of the post-image (`mode_after`), as [`Entry::exec_before`].
    pub(crate) fn exec_after(&self) -> Option<bool> {
        match (&self.mode_after, &self.mode_before) {
            (Some(m), _) => Some(m == crate::journal::entry_kind::MODE_EXEC),
            (None, Some(_)) if self.after.as_ref().is_some_and(|b| b.id().is_some()) => Some(false),
            _ => None,
        }
    }
    /// A symbolic-link entry.
    pub(crate) fn is_link(&self) -> bool {
        self.kind.as_deref() == Some(crate::journal::entry_kind::SYMLINK)
    }
    /// The entry's kind is one this walj knows how to write back (a file, a link); an
    /// unknown kind (a newer walj's) is shown but never reverted.
    pub(crate) fn kind_known(&self) -> bool {
        self.kind.is_none() || self.is_link()
    }
    /// The current state: the last triage action not undone, else the lifecycle state.
    pub fn state(&self) -> EntryState {
        self.actions.iter().rev().find(|a| !a.undone).and_then(|a| EntryState::from_how(&a.how)).unwrap_or(self.base)
    }
    pub fn is_unresolved(&self) -> bool {
        self.state().is_unresolved()
    }
    /// When the change was made, as far as walj knows: a derived entry's ctime, else the
    /// record's time.
    pub(crate) fn when(&self) -> &str {
        self.changed.as_deref().unwrap_or(&self.ts)
    }
    /// The last action not undone.
    pub(crate) fn last_action(&self) -> Option<&Action> {
        self.actions.iter().rev().find(|a| !a.undone)
    }
}

/// What the disk holds for a file tool call that never reported its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InFlightCheck {
    /// The content the call meant to leave: it completed before the crash.
    Completed,
    /// The pre-image: it never wrote.
    Unchanged,
    /// Neither: written in part, or changed since.
    Other,
    /// The intended content, but a later call on the same path left exactly it: the disk
    /// cannot tell whether this call ever ran (a call cut off by one crash, the same text
    /// written again after a resume).
    WrittenByLater,
    /// The path is a symbolic link, still: Claude Code refuses to write through one (after
    /// its PreToolUse), so the call never wrote, whatever the file the link points at holds
    /// now (changed by another call on its real path, or by the user).
    NotThroughLink,
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

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Prompt {
    pub ts: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    pub(crate) fn is_open(&self) -> bool {
        self.status != "completed" && self.status != "deleted"
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandStatus {
    InFlight,
    Ok,
    Failed,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// A foreground command whose Claude Code is gone before it finished: how many of the
    /// processes it started still run (set by [`crate::bashsnap::killed::reconcile`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<usize>,
    /// A background command that Claude Code said has ended: the status of its
    /// `<task-notification>` (`completed`, `failed`, `killed`), or `ended` when a later Stop no
    /// longer listed its task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished: Option<String>,
    /// Where git's HEAD pointed at the command's intent (`head`, `branch` of the record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_before: Option<crate::git::Head>,
    /// When its outcome was recorded (`None`: none yet): the end of its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ts: Option<String>,
    /// A command that never finished: when walj first saw its processes gone (its `gone`
    /// record, or its derived entries' time) — the end of its window; orphans may write after
    /// their session's crash, never after this. `None`: not seen gone (yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gone_ts: Option<String>,
    /// The subagent that ran it (`agent_id`); `None`: the main thread. A subagent's
    /// foreground command is its own work, never a background process of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// What its snapshots could not see (`None`: they saw everything, or walj does not know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unseen: Option<Unseen>,
}

/// What a command's snapshots could not compare: changes there are in no entry. Zero
/// everywhere (and not cut short) is "saw everything", never written.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Unseen {
    /// FIFOs, sockets, devices: never opened, so never compared.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub special: usize,
    /// Files over the capture cap: compared by a sampled identity only (a change between the
    /// samples is not seen).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub too_large: usize,
    /// Files walj could not read (permissions).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreadable: usize,
    /// A snapshot stopped at `[bash] max_files` / `max_ms`, or the list at its cap: files past
    /// it were not looked at.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut_short: bool,
    /// Paths past the per-command bound of entries (`bashsnap::MAX_CHANGES`): not compared
    /// one by one, so in no entry; `unlisted_list` names the store object that lists them
    /// all (one per line), `unlisted_sample` the first few.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unlisted: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlisted_list: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unlisted_sample: Vec<String>,
    /// The same list as a text file people read (project-relative: `.walj/unlisted/…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlisted_file: Option<String>,
    /// Files Claude Code said the command changed past its own list of the changed files
    /// (`bashEditDiff.moreFiles`: the list stops at 200) while walj's own snapshot was off
    /// (`[bash] snapshot = false`): their changes are in no entry. (With the snapshot on, it
    /// looked at every file the list could name: the list holds only files under Claude
    /// Code's working folder that git does not ignore.)
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub reported_more: u64,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// How many of the paths past the bound a record names itself ([`Unseen::unlisted_sample`]).
pub(crate) const UNLISTED_SAMPLE: usize = 20;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Unseen {
    pub(crate) fn is_empty(&self) -> bool {
        *self == Unseen::default()
    }
    /// Read from a record's JSON (`unseen`), ignoring what it does not know.
    pub(crate) fn from_value(v: Option<&Value>) -> Option<Unseen> {
        let u: Unseen = serde_json::from_value(v?.clone()).ok()?;
        (!u.is_empty()).then_some(u)
    }

    /// A command outcome's `unseen` (under `snapshot`), with what Claude Code's own list of
    /// the changed files left off while walj's snapshot was off (`reported.more`).
    pub(crate) fn of_outcome(snapshot_unseen: Option<&Value>, reported: Option<&Value>) -> Option<Unseen> {
        let off = reported.and_then(|r| r.get("snapshot_off")).and_then(Value::as_bool) == Some(true);
        let more = reported.filter(|_| off).and_then(|r| r.get("more")).and_then(Value::as_u64).unwrap_or(0);
        let mut u = Unseen::from_value(snapshot_unseen).unwrap_or_default();
        u.reported_more = u.reported_more.max(more);
        (!u.is_empty()).then_some(u)
    }
}

/// One subagent of a session: from its `Agent` call (`subagent` records), the records its
/// tool calls made (`agent_id`) and its SubagentStop.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Subagent {
    /// The `Agent` call's id (`None`: known only from its records, the call not journaled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// Claude Code's `agent_id` (`None` until its result or first record names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// `subagent_type` / `agent_type` (`general-purpose`, a custom agent's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its first sign: the call's intent or its first record.
    pub started: String,
    /// Its last record (a tool call, its stop).
    pub last_ts: String,
    /// Launched to run on in the background (`async_launched`).
    pub background: bool,
    /// When it ended (SubagentStop, a completed or failed call, or a Stop that no longer
    /// lists it) and how (`completed`, `failed`, `stopped`). `None`: still running, or, in a
    /// session that is gone, running when it died.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<(String, String)>,
}

impl Subagent {
    /// A name for people: its type and description (`general-purpose "find the bug"`).
    pub(crate) fn label(&self) -> String {
        let kind = self.kind.as_deref().unwrap_or("subagent");
        match self.description.as_deref().filter(|d| !d.is_empty()) {
            Some(d) => format!("{kind} \"{d}\""),
            None => kind.to_string(),
        }
    }
}

/// A command that moved git's HEAD (its intent and outcome name different heads): a branch
/// switched, a commit made, a reset. walj records it and never moves refs itself.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HeadMove {
    /// The command's id.
    pub id: String,
    pub command: String,
    pub from: crate::git::Head,
    pub to: crate::git::Head,
}

/// A brief waiting for (or delivered to) the next SessionStart.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Handoff {
    pub action: String,
    pub ts: String,
    pub session: String,
    pub brief: String,
    pub entries: Vec<String>,
    pub delivered: Option<String>,
    pub undone: bool,
    /// Brought by an imported bundle and not released by the user yet (`walj handoff
    /// --deliver`): never delivered automatically.
    pub held: bool,
    /// Line number of the record (journal order).
    pub line: u64,
    pub record: Record,
}

/// What the journal knows of one Claude Code session.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SessionInfo {
    pub session: String,
    pub sid: String,
    pub first_ts: String,
    pub last_ts: String,
    /// Its last sign of life in the journal: the last record its own hooks wrote (not the
    /// entries walj derived for it later, nor triage).
    #[serde(default)]
    pub last_life_ts: String,
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
    /// Journal line of the session's last (main agent) Stop: entries before it finished their turn.
    pub last_stop_line: u64,
    pub proc: Option<ProcRef>,
    /// Whether `proc` still ran when the journal was folded (or last refreshed): read
    /// fresh on every load, never kept in a fold snapshot.
    #[serde(skip)]
    pub liveness: Option<Liveness>,
    pub last_assistant_message: Option<String>,
    /// Why the session's last turn ended without a Stop, when Claude Code said so
    /// (StopFailure: "ended by an API error: …"); cleared by its next prompt or Stop.
    pub turn_failure: Option<String>,
    pub background_tasks: Vec<Value>,
    /// The session's subagents, in launch order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<Subagent>,
    /// The commands of the session that moved git's HEAD, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub head_moves: Vec<HeadMove>,
    /// Where HEAD pointed at the session's latest command record (`None`: none recorded one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_now: Option<crate::git::Head>,
    /// Where HEAD points on disk now ([`super::Fold::read_head`]): read fresh by the commands
    /// that report, never kept in a fold snapshot.
    #[serde(skip)]
    pub disk_head: Option<crate::git::Head>,
    /// The commands that moved HEAD, with their commits ([`super::Fold::read_head`]).
    #[serde(skip)]
    pub git_moves: Vec<super::GitMove>,
    /// The coding agent (`agent` of its session records: codex, gemini, copilot); `None` =
    /// Claude Code ([`SessionInfo::agent`]).
    pub agent: Option<String>,
    /// The session's crash was told (an `announced` mark) and it has not started again since:
    /// a resumed session that crashes again is a new crash, told again.
    pub announced: bool,
    /// When its crash was last told: the next note names only work that came after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub announced_ts: Option<String>,
    pub imported: bool,
    /// Records of this session came in a bundle (`walj sessions import`): what they say is
    /// not passed to Claude unseen.
    pub from_bundle: bool,
    pub v1: bool,
    pub records: u64,
}

impl SessionInfo {
    /// live / ended / crashed / unknown (DESIGN §4). Liveness is read when the journal is
    /// folded ([`super::Fold::refresh_liveness`]), not here: this runs per row and keystroke.
    pub fn status(&self) -> SessionStatus {
        if self.ended() {
            return SessionStatus::Ended;
        }
        match self.liveness {
            None | Some(Liveness::Unknown) => SessionStatus::Unknown,
            Some(Liveness::Running) => SessionStatus::Live,
            Some(Liveness::Gone) => SessionStatus::Crashed,
        }
    }
    /// The coding agent that ran the session (Claude Code unless its records name another).
    pub(crate) fn agent(&self) -> crate::agents::Agent {
        crate::agents::Agent::of_record(self.agent.as_deref())
    }
    /// An end record not followed by a new start (resume).
    pub(crate) fn ended(&self) -> bool {
        self.end.as_ref().is_some_and(|(end_ts, _)| self.last_start_ts.as_deref().is_none_or(|s| s <= end_ts.as_str()))
    }
    /// Reads whether the recorded Claude Code process still runs (`None`: none recorded,
    /// or the session ended).
    pub(crate) fn refresh_liveness(&mut self) {
        self.liveness = match self.proc {
            Some(p) if !self.ended() => Some(procinfo::liveness(p)),
            _ => None,
        };
    }
    pub(crate) fn last_prompt(&self) -> Option<&str> {
        self.prompts.last().map(|p| p.text.as_str())
    }
    /// The subagent `agent_id` names.
    pub fn subagent(&self, agent_id: &str) -> Option<&Subagent> {
        self.subagents.iter().find(|a| a.agent_id.as_deref() == Some(agent_id))
    }
    /// Subagents with no end: still running while the session lives; running when it died
    /// once it is gone.
    pub(crate) fn subagents_unended(&self) -> impl Iterator<Item = &Subagent> {
        self.subagents.iter().filter(|a| a.ended.is_none())
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
