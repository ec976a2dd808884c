//! The journal's line format (DESIGN §3).
//!
//! Every line is one JSON object carrying the six fields of the original proposal
//! (`v`, `sid`, `ts`, `event`, `path`, `persisted`) so the proposal's own tools keep
//! working, plus walj's v2 fields. Op-specific data (prompt text, todos, command, …)
//! lives in named extra fields that are kept verbatim through `extra`, so a rewrite
//! (`walj compact`, `sessions delete`) never drops a field a newer walj wrote.
//!
//! A v2 line ends with `,"crc":"<crc32c hex>"}` where the checksum covers every byte
//! of the line before `,"crc"`.

use serde::de::Deserializer;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// The record kinds (`op`). Unknown ops are kept as strings.
pub mod op {
    pub const INTENT: &str = "intent";
    pub const APPLIED: &str = "applied";
    pub const FAILED: &str = "failed";
    pub const PERSISTED: &str = "persisted";
    pub const RESOLVED: &str = "resolved";
    pub const SESSION: &str = "session";
    pub(crate) const AUDIT: &str = "audit";
    /// A brief for Claude, delivered at the next SessionStart (hand-back, resume).
    pub const HANDOFF: &str = "handoff";
    /// Undo of an earlier triage action (`target` names its `action`).
    pub const UNDO: &str = "undo";
    /// `walj checkpoint` found an entry's post-image on disk while its turn had not reached
    /// its Stop: an audit ("on disk, verified") that settles nothing (DESIGN §4).
    pub(crate) const VERIFIED: &str = "verified";
    /// A triage action taken in this checkout on an entry of another checkout's journal
    /// (`walj sync`): `id` = that entry, `how`, `action`, `target` = its session, `journal` =
    /// that journal's id. This journal's fold ignores it; the other checkout's sync turns it
    /// into a `resolved` record of its own (docs/sync.md).
    pub const REMOTE: &str = "remote";
}

/// `kind` values of `session` records.
pub mod kind {
    pub const START: &str = "start";
    pub const PROMPT: &str = "prompt";
    pub const STOP: &str = "stop";
    pub(crate) const SUBAGENT_STOP: &str = "subagent_stop";
    /// An `Agent` call (a subagent launch): `call` = its tool_use_id, `status` = `start` at its
    /// PreToolUse, then `async_launched` (it runs on in the background), `completed` or
    /// `failed` at its Post; `agent_type`, `description`, `prompt`, and `agent_id` once known.
    pub const SUBAGENT: &str = "subagent";
    /// A turn ended by an API error (StopFailure): its entries stay unresolved, `reason` says
    /// why, until the session's next prompt verifies them.
    pub(crate) const STOP_FAILURE: &str = "stop_failure";
    /// Claude Code told the session that a background task ended (a `<task-notification>`
    /// message): `id` = the Bash call, `task_id`, `status`, `summary`.
    pub(crate) const TASK_NOTIFICATION: &str = "task_notification";
    pub(crate) const COMPACT: &str = "compact";
    /// What a killed command's snapshots could not see (`target` = the command's id,
    /// `unseen` = [`crate::fold::Unseen`]): written beside its derived entries, so "N changes
    /// since it started" says what it leaves out. Marked `unfinished` (not a sign of life).
    pub(crate) const UNSEEN: &str = "unseen";
    /// walj saw the processes of a command that never finished (`target`) gone: its window
    /// closes here (orphans may write after their session's crash, never after this).
    pub(crate) const GONE: &str = "gone";
    pub const END: &str = "end";
    pub const TODOS: &str = "todos";
    pub(crate) const TASK: &str = "task";
    /// The SessionStart announcement of this (crashed) session was made.
    pub(crate) const ANNOUNCED: &str = "announced";
    /// A handoff brief (named by `target`) was delivered to a new session.
    pub(crate) const DELIVERED: &str = "delivered";
    /// A bundle of this session (named by `target`) was imported (`walj sessions import`).
    pub(crate) const IMPORTED: &str = "imported";
    /// The user released a brief an import held (`walj handoff --deliver`); `target` = the
    /// handoff's action. Written with no session, so no bundle can carry one.
    pub const RELEASED: &str = "released";
    /// `handoff` records: a hand-back of entries (`walj handoff`) or a resume brief.
    pub const HANDBACK: &str = "handback";
    pub(crate) const RESUME: &str = "resume";
    /// `audit` records of revert and undo: the bytes about to be overwritten, named before
    /// anything is written (`before` / `after` as the action's record will have them).
    pub(crate) const CAPTURE: &str = "capture";
    /// `audit` records of revert and undo: bytes another program wrote while the action ran,
    /// found in what it swapped out and stored (`before`); `action` = the action it was.
    pub(crate) const CONCURRENT_WRITE: &str = "concurrent_write";
}

/// `kind` values of entry records (`applied` side effects of a command, and the triage
/// records on them). Absent: a regular file. A reader meets a kind it does not know as
/// something it must not write: shown, never reverted (`fold::Entry::kind_known`).
pub mod entry_kind {
    /// A symbolic link: the images are the link's target text, never what it points at.
    pub(crate) const SYMLINK: &str = "symlink";

    /// The id a link side's image (`before` / `after`) is named by: the hash of a tagged
    /// form of its target, never the target's plain blob id. The target itself is carried in
    /// the record (`link_before` / `link_after`) and no object by this id exists in the store
    /// nor in git, so a walj that does not know links finds no image to write back and
    /// refuses (it would otherwise make a regular file holding the target's text), while a
    /// file holding `a.txt` and a link to `a.txt` never share an id.
    pub fn link_id(target: &[u8]) -> String {
        // The git blob id of the tagged form (as `store::blob_id`, which stands above the
        // journal and is not imported here).
        let tagged_len = b"walj symlink\0".len() + target.len();
        let mut h = crate::sha::Sha1::new();
        h.update(format!("blob {tagged_len}\0").as_bytes());
        h.update(b"walj symlink\0");
        h.update(target);
        h.hex()
    }

    /// A regular file's mode as git writes it (`mode_before` / `mode_after`): `100755` when its
    /// executable bit is set, else `100644`.
    pub(crate) const MODE_EXEC: &str = "100755";
    pub(crate) const MODE_PLAIN: &str = "100644";

    pub(crate) fn file_mode(exec: bool) -> &'static str {
        if exec { MODE_EXEC } else { MODE_PLAIN }
    }
}

/// `how` values of `resolved` records.
pub mod how {
    pub const DONE: &str = "done";
    pub(crate) const REVERTED: &str = "reverted";
    pub const HANDED_BACK: &str = "handed_back";
    pub const NOT_APPLIED: &str = "not_applied";
}

/// Tool names the journal itself depends on (Claude Code's names).
pub mod tool {
    /// A command: its records have no `path`; its file side effects do.
    pub(crate) const BASH: &str = "Bash";
    pub(crate) const TASK_CREATE: &str = "TaskCreate";
    pub(crate) const TASK_UPDATE: &str = "TaskUpdate";
    pub(crate) const TODO_WRITE: &str = "TodoWrite";
}

/// `event` values walj writes itself (the user's config names file events too).
pub mod event {
    pub(crate) const ARTIFACT_CREATED: &str = "artifact_created";
    pub(crate) const FILE_MODIFIED: &str = "file_modified";
    pub(crate) const FILE_DELETED: &str = "file_deleted";
    pub(crate) const NOTEBOOK_MODIFIED: &str = "notebook_modified";
    pub(crate) const COMMAND_RUN: &str = "command_run";
    pub(crate) const TODO_UPDATED: &str = "todo_updated";
    pub(crate) const SESSION: &str = "session";
    /// A hand-back brief (`handoff` records and their undo).
    pub(crate) const HANDOFF: &str = "handoff";
    /// Checkpoint verification (`audit` records).
    pub(crate) const CHECKPOINT: &str = "checkpoint";
}

/// `attribution` values of derived (Bash side-effect) entries; absent = certain, the
/// command's. A reader treats any value it does not know as [`UNCERTAIN`] (newer walj may add
/// values), so an old reader never calls a change Claude's that a newer one doubted.
pub mod attribution {
    /// Nothing journaled explains the change, but another session (or the user) was active
    /// while the command ran: it may not be the command's.
    pub(crate) const UNCERTAIN: &str = "uncertain";
    /// Made (by its ctime) after the command's session showed its last sign of life: the
    /// orphaned command's, or someone's after Claude Code stopped; walj cannot tell which
    /// without its watcher.
    pub(crate) const AFTER_STOP: &str = "after_stop";
    /// Made while several commands' windows were open (an async subagent's beside the main
    /// thread's, two sessions'), and no command's text names the file, its folder or a pattern
    /// matching it: "uncertain: A or B" (`candidates` name the others), counted in neither
    /// command's changes. Listed once, under the command that opened first.
    pub(crate) const UNDECIDED: &str = "undecided";
    /// A killed command's change whose ctime is after its session's last sign of life but
    /// whose mtime is not, and no watcher's log to tell otherwise: a `chmod` or `touch -r` after the
    /// crash moves the ctime without touching the content. Metadata never re-dates content:
    /// without the watcher the ctime can only make it uncertain, never after-stop.
    pub(crate) const REDATED: &str = "redated";
}

/// `nocap` values: why an image was recorded by id only.
pub mod nocap {
    pub(crate) const TOO_LARGE: &str = "too_large";
    pub const NEVER_CAPTURE: &str = "never_capture";
    pub(crate) const UNREADABLE: &str = "unreadable";
    /// The image could not be stored (disk full, a read-only store): written as
    /// `store_failed: <error>`, with the id hashed while reading; the record is never dropped.
    pub(crate) const STORE_FAILED: &str = "store_failed";
    pub(crate) const DIRECTORY: &str = "directory";
    /// A FIFO, a device or a socket: never opened (it could block or never end).
    pub(crate) const NOT_A_FILE: &str = "not_a_file";
    /// A file with more than one link (`st_nlink > 1`): the same bytes may be a file outside
    /// the project; recorded by id only unless `[capture] hardlinks = true`.
    pub const HARDLINK: &str = "hardlink";
    /// The tool's path holds a NUL byte (no file system takes it): recorded escaped (`\0`).
    pub(crate) const PATH_NUL: &str = "path_nul";
    /// The tool's path is longer than a path (4096 bytes) or a name (255 bytes) can be:
    /// recorded cut to 4096 bytes.
    pub(crate) const PATH_TOO_LONG: &str = "path_too_long";
    /// An entry of a command made from the agent's own list of the files it changed (Claude
    /// Code's `bashEditDiff.changedFiles`) for a path walj's snapshot missed: no pre-image was
    /// taken. `reported_only; now: <why>` when the file as it is now was not captured either.
    pub(crate) const REPORTED_ONLY: &str =
        "reported_only: the agent reported this change, walj's snapshot missed it (no pre-image)";
    /// A clean tracked file whose bytes git stores in another form than the disk's (a
    /// `filter`, `text`/`eol`/`ident`/`working-tree-encoding` attribute, `core.autocrlf`,
    /// skip-worktree or assume-unchanged): git's blob is not its pre-image, and walj never
    /// runs a filter, so none was recorded.
    pub(crate) const GIT_FORM: &str = "git_form";
}

/// Keys of the op-specific extra fields (kept in [`Record::extra`]).
pub mod key {
    /// Command records: the command line, its description, its working directory.
    pub(crate) const COMMAND: &str = "command";
    pub(crate) const DESCRIPTION: &str = "description";
    pub(crate) const CWD: &str = "cwd";
    /// A command run in the background (`run_in_background`), or an entry it changed later.
    pub(crate) const BACKGROUND: &str = "background";
    /// Claude Code's background task id.
    pub(crate) const TASK_ID: &str = "task_id";
    /// The error text of a failed call.
    pub(crate) const ERROR: &str = "error";
    pub(crate) const INTERRUPTED: &str = "interrupted";
    /// Who wrote a triage record (`walj mark`, the TUI, …).
    pub(crate) const BY: &str = "by";
    /// The id of the other journal (`walj sync`) a record refers to or came from.
    pub(crate) const JOURNAL: &str = "journal";
    /// Who ran the command that wrote a triage record, when not the user at a terminal
    /// (`"claude"`: Claude ran it in a tool call, see `crate::claude::env`).
    pub(crate) const ACTOR: &str = "actor";
    pub(crate) const BATCH: &str = "batch";
    /// On the revert records of an in-place `walj bisect`: its run (every state's batch of one
    /// bisect shares it), so `walj ops` lists the bisect as one operation and `redo` skips it.
    pub(crate) const BISECT: &str = "bisect";
    pub(crate) const MODE: &str = "mode";
    pub const NOTE: &str = "note";
    pub(crate) const UNVERIFIED: &str = "unverified";
    /// A child entry derived from a Bash command that never finished (killed, interrupted):
    /// before = the PreToolUse snapshot's image, after = the disk when it was derived.
    pub(crate) const UNFINISHED: &str = "unfinished";
    /// How sure walj is that a derived entry is its command's work ([`super::attribution`]).
    pub(crate) const ATTRIBUTION: &str = "attribution";
    /// On a brief (`handoff` record) meant for one session only (`walj sessions repair`: the
    /// repaired copy's new id): delivered at that session's start, never at another's.
    pub(crate) const FOR_SESSION: &str = "for_session";
    /// On a derived entry of a killed command: when the change was made (its ctime; for a
    /// deletion, its folder's), as a journal timestamp. The record's own `ts` is when walj
    /// first looked.
    pub(crate) const CHANGED: &str = "changed";
    /// On an `after_stop` derived entry: when the checkout's watcher saw the session's Claude
    /// Code process end (the moment the verdict is measured from), as a journal timestamp.
    /// Absent: no watcher saw it, the bound is the last sign of life in the journal and the
    /// transcript.
    pub(crate) const END_SEEN: &str = "end_seen";
    /// On an `after_stop` derived entry without `end_seen`: why no watcher saw Claude Code end
    /// (off, not listening at the command's start, left or killed since), in words. The verdict
    /// then rests on the last sign of life alone, and readers say so.
    pub(crate) const WATCH_ABSENT: &str = "watch_absent";
    /// On an uncertain derived entry: the ids of the other commands whose windows were open
    /// when the change was made (any session or agent), each of which may have made it.
    pub(crate) const CANDIDATES: &str = "candidates";
    /// Beside `candidates`: their command lines, shortened ([`CANDIDATE_SHOWN`] characters), in
    /// the same order: what the readers name them by (the ids stay in `--json`).
    pub(crate) const CANDIDATE_COMMANDS: &str = "candidate_commands";
    /// How many characters of a candidate's command line `candidate_commands` keeps.
    pub(crate) const CANDIDATE_SHOWN: usize = 80;
    /// Symbolic-link entries (`kind: "symlink"`): the link's own target text before and after
    /// (`fsutil::name::encode`d: a target that is not UTF-8 reads back as the same bytes);
    /// absent on a side where there was no link (a side with a blob and no link text was a
    /// regular file: `ln -sf` over a file). The target's bytes are also the blob the
    /// side names (`before` / `after`), as git stores a link.
    pub(crate) const LINK_BEFORE: &str = "link_before";
    pub(crate) const LINK_AFTER: &str = "link_after";
    /// A regular file's mode on each side of an entry, as git writes it (`100644`, `100755`):
    /// a `chmod +x` is an entry whose images are the same bytes.
    pub(crate) const MODE_BEFORE: &str = "mode_before";
    pub(crate) const MODE_AFTER: &str = "mode_after";
    /// What a command's snapshots could not see (`snapshot.unseen` of its outcome, and the
    /// `unseen` session record of a killed one): [`crate::fold::Unseen`].
    pub(crate) const UNSEEN: &str = "unseen";
    /// On an entry: who reported it when walj's snapshot missed it (`claude_code`: Claude
    /// Code's `bashEditDiff.changedFiles`). On a command's outcome: what that list held
    /// (`listed`, `missed`, `outside` and `outside_count`, `own_folders`, `more`).
    pub(crate) const REPORTED: &str = "reported";
    /// On a file tool's intent: the blob id of the content the call means to leave (Write's
    /// content, Edit's replacement applied to the pre-image), not stored.
    pub(crate) const INTENDED: &str = "intended";
    /// On a file tool's intent or outcome: the images the line names that the hook carries
    /// itself rather than syncing them on their own (`{"<blob id>": "<base64 of the loose
    /// object>"}`, [`crate::store::Store::put_carried`]); `walj compact` takes them out once
    /// the store holds them durably.
    pub const IMAGES: &str = "images";
    /// How a line that carries images spells the field (the pre-filter before a parse).
    pub(crate) const IMAGES_FIELD: &[u8] = b"\"images\":{";
    /// Session records.
    pub(crate) const PROMPT: &str = "prompt";
    /// Claude Code's `prompt_id` of the turn a prompt (or task notification) starts. A message
    /// the user queues while a turn runs fires UserPromptSubmit at once, with the running
    /// turn's `prompt_id`: that is how the hook tells it from a new turn.
    pub(crate) const PROMPT_ID: &str = "prompt_id";
    pub(crate) const TRANSCRIPT: &str = "transcript";
    pub(crate) const TODOS: &str = "todos";
    pub(crate) const INPUT: &str = "input";
    pub(crate) const RESPONSE: &str = "response";
    pub(crate) const SOURCE: &str = "source";
    pub(crate) const MODEL: &str = "model";
    pub(crate) const HEAD: &str = "head";
    pub(crate) const BRANCH: &str = "branch";
    /// A session's `start`: the plugin folder whose hooks journaled it (Claude Code's
    /// `CLAUDE_PLUGIN_ROOT`), absent for `walj install`'s hooks: how `walj doctor` finds a
    /// plugin loaded with `claude --plugin-dir`, which leaves no other trace.
    pub(crate) const PLUGIN_ROOT: &str = "plugin_root";
    pub(crate) const TRIGGER: &str = "trigger";
    pub(crate) const REASON: &str = "reason";
    pub(crate) const CUSTOM_INSTRUCTIONS: &str = "custom_instructions";
    pub(crate) const LAST_ASSISTANT_MESSAGE: &str = "last_assistant_message";
    /// StopFailure's `error_details` (Claude Code's text of the API error).
    pub(crate) const ERROR_DETAILS: &str = "error_details";
    /// Task notifications: how the background task ended (`completed`, `failed`, `killed`)
    /// and Claude Code's one-line summary.
    pub(crate) const STATUS: &str = "status";
    pub(crate) const SUMMARY: &str = "summary";
    pub(crate) const BACKGROUND_TASKS: &str = "background_tasks";
    pub(crate) const CLAUDE_VERSION: &str = "claude_version";
    /// An imported session of another coding agent: that agent's version.
    pub(crate) const AGENT_VERSION: &str = "agent_version";
    pub(crate) const IMPORTED: &str = "imported";
    pub(crate) const SEQ: &str = "seq";
    /// Handoff records: the brief and the entries it hands back.
    pub(crate) const BRIEF: &str = "brief";
    pub(crate) const ENTRIES: &str = "entries";
    /// An intent whose generated id is taken by the next outcome on the same path.
    pub const PAIR: &str = "pair";
    /// Audit records (checkpoint).
    pub(crate) const CHECKED: &str = "checked";
    pub(crate) const PERSISTED_NOW: &str = "persisted_now";
    pub(crate) const VERIFIED: &str = "verified";
    pub(crate) const DRIFTED: &str = "drifted";
    pub(crate) const NOT_APPLIED: &str = "not_applied";
    pub(crate) const RECORDS: &str = "records";
    /// Bundles (export/import of a session).
    pub(crate) const BUNDLE: &str = "bundle";
    pub(crate) const EXPORTED: &str = "exported";
    pub(crate) const SOURCE_ROOT: &str = "source_root";
    pub(crate) const SNAPSHOT: &str = "snapshot";
    pub(crate) const BEFORE_FROM: &str = "before_from";
    /// Session records of a coding agent other than Claude Code: `codex`, `gemini`, `copilot`
    /// (`crate::agents::Agent::name`). Absent = Claude Code.
    pub(crate) const AGENT: &str = "agent";
    /// The subagent whose event made the record (every record of a subagent's tool calls,
    /// its SubagentStop, its launch): Claude Code's `agent_id` and `agent_type`. Absent = the
    /// main thread.
    pub(crate) const AGENT_ID: &str = "agent_id";
    pub(crate) const AGENT_TYPE: &str = "agent_type";
    /// A skill's `!` shell line (`PreSkillShellCommand`): the skill or slash command that ran
    /// it (`command_name`) and who invoked it (`invoked_by`).
    pub(crate) const SKILL: &str = "skill";
    pub(crate) const INVOKED_BY: &str = "invoked_by";
    /// The outcome of a command with no Post event of its own (a skill's shell line): the
    /// event that closed its window.
    pub(crate) const CLOSED_BY: &str = "closed_by";
    /// A subagent launch (`subagent` session records): the `Agent` call's id.
    pub(crate) const CALL: &str = "call";
    pub(crate) const AGENT_TRANSCRIPT_PATH: &str = "agent_transcript_path";
    /// The checksum field every v2 line ends with.
    pub(crate) const CRC: &str = "crc";
}

/// A blob reference: the file was absent (`null` in JSON), or had these bytes (git blob id).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Blob {
    Absent,
    Id(String),
}

impl Blob {
    pub fn id(&self) -> Option<&str> {
        match self {
            Blob::Absent => None,
            Blob::Id(s) => Some(s),
        }
    }
    pub(crate) fn is_absent(&self) -> bool {
        matches!(self, Blob::Absent)
    }
}

/// Serde helper: a missing field is `None`, `null` is `Some(Blob::Absent)`.
pub mod blob_field {
    use super::*;
    pub(crate) fn serialize<S: Serializer>(b: &Option<Blob>, s: S) -> Result<S::Ok, S::Error> {
        match b {
            None | Some(Blob::Absent) => s.serialize_none(),
            Some(Blob::Id(id)) => s.serialize_str(id),
        }
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Blob>, D::Error> {
        let v: Option<String> = Option::deserialize(d)?;
        Ok(Some(match v {
            None => Blob::Absent,
            Some(s) => Blob::Id(s),
        }))
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One journal line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Record {
    /// Schema version: 1 = the proposal's lines, 2 = walj's.
    #[serde(default)]
    pub v: u32,
    /// First 6 chars of the session id.
    #[serde(default)]
    pub sid: String,
    #[serde(default)]
    pub ts: String,
    #[serde(default)]
    pub event: String,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub persisted: bool,

    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub op: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Kind of a `session` record (start, prompt, stop, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Pre-image (intent) or the bytes a triage action overwrote.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "blob_field")]
    pub before: Option<Blob>,
    /// Post-image (applied) or the bytes a triage action wrote.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "blob_field")]
    pub after: Option<Blob>,
    /// Why an image was recorded by id only: `too_large`, `never_capture`, `unreadable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nocap: Option<String>,
    /// The path is outside the project: `path` is absolute and nothing was captured.
    #[serde(default, skip_serializing_if = "is_false")]
    pub outside: bool,
    /// The tool call that caused this entry (Bash side effects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// `resolved` records: done / reverted / handed_back / not_applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<String>,
    /// Unique id of a triage action (resolved, handoff), named by `undo` records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// `undo` records: the `action` undone. Session `delivered`: the handoff action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The Claude Code process (nearest non-shell ancestor of the hook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// That process's start time (clock ticks since boot on Linux), against pid reuse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pstart: Option<u64>,
    /// Everything else (op-specific fields, fields of newer versions), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Record {
    /// A new v2 record of `op` for `session`, stamped now.
    pub fn new(op: &str, session: &str) -> Record {
        Record {
            v: 2,
            sid: short_sid(session),
            ts: now_ts(),
            op: op.to_string(),
            session: session.to_string(),
            ..Record::default()
        }
    }

    /// Sets an extra field (builder style).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Record {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.extra.get(key).and_then(Value::as_str)
    }

    /// The op, with v1 lines read as `applied` (the proposal's lines record finished writes).
    pub fn op(&self) -> &str {
        if self.v <= 1 && self.op.is_empty() { op::APPLIED } else { &self.op }
    }

    /// The session key: the full id when known, else the 6-char `sid` (v1 lines).
    pub fn session_key(&self) -> &str {
        if self.session.is_empty() { &self.sid } else { &self.session }
    }

    /// Serializes the record as one journal line with its checksum and the trailing `\n`.
    pub fn to_line(&self) -> Vec<u8> {
        let mut body = match serde_json::to_vec(self) {
            Ok(b) => b,
            // Serializing a map of JSON values cannot fail; keep a valid line regardless.
            Err(_) => b"{}".to_vec(),
        };
        seal(&mut body);
        body.push(b'\n');
        body
    }
}

/// Appends `,"crc":"xxxxxxxx"}` to a serialized JSON object (which ends in `}`).
pub fn seal(body: &mut Vec<u8>) {
    if body.last() == Some(&b'}') {
        body.pop();
    }
    let crc = crc32c::crc32c(body);
    body.extend_from_slice(format!(",\"crc\":\"{crc:08x}\"}}").as_bytes());
}

/// Checks a line's checksum. `None` when the line has no checksum tail as walj writes it
/// (v1, foreign writers, or a damaged tail: the classifier then refuses a v2 line).
pub fn check_crc(line: &[u8]) -> Option<bool> {
    const TAG: &[u8] = b",\"crc\":\"";
    // The checksum is always the last field: `,"crc":"xxxxxxxx"}`.
    let n = line.len();
    if n < TAG.len() + 10 || &line[n - 2..] != b"\"}" {
        return None;
    }
    let start = n - 2 - 8 - TAG.len();
    if &line[start..start + TAG.len()] != TAG {
        return None;
    }
    // Exactly as written: 8 lowercase hex digits (an upper-case digit is damage too).
    let hex = &line[start + TAG.len()..n - 2];
    if !hex.iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)) {
        return None;
    }
    let want = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
    Some(crc32c::crc32c(&line[..start]) == want)
}

/// Parses one line (without its `\n`) into a record, dropping the checksum field.
pub fn parse_record(line: &[u8]) -> Result<Record, serde_json::Error> {
    let mut r: Record = serde_json::from_slice(line)?;
    r.extra.remove(key::CRC);
    Ok(r)
}

/// `(id, session)` of a walj-written `persisted` line, without parsing it; `None` when the
/// line is anything else or has escapes (then it takes the full parse).
///
/// This relies on the field order of [`Record`]'s serialization: `op`, `id`, `session`
/// follow each other (pinned by the test `persisted_fast_path_field_order`).
pub(crate) fn persisted_fast(line: &[u8]) -> Option<(&str, &str)> {
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

pub(crate) fn short_sid(session: &str) -> String {
    session.chars().take(6).collect()
}

/// A new id, unique across processes and calls: `prefix`, then the time (µs), the process
/// id and a per-process counter, in hex. For generated tool-call ids and triage actions.
pub fn new_id(prefix: &str) -> String {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{prefix}{:x}{:05x}{:03x}", now.as_micros(), std::process::id() & 0xfffff, n & 0xfff)
}

/// UTC, milliseconds, `Z`: sorts lexically in time order.
pub fn now_ts() -> String {
    crate::fsutil::now_ts()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_images_field_is_spelled_as_written() {
        let mut r = Record::new(op::INTENT, "s");
        r.extra.insert(key::IMAGES.into(), serde_json::json!({"ab": "cd"}));
        assert!(crate::journal::reader::contains(&r.to_line(), key::IMAGES_FIELD));
    }

    #[test]
    fn line_roundtrip_with_crc() {
        let mut r = Record::new(op::INTENT, "8f14e45f-ceea");
        r.path = "a/b.txt".into();
        r.before = Some(Blob::Absent);
        r.after = None;
        r = r.with("command", "ls");
        let line = r.to_line();
        assert_eq!(*line.last().unwrap(), b'\n');
        let body = &line[..line.len() - 1];
        assert_eq!(check_crc(body), Some(true));
        let back = parse_record(body).unwrap();
        assert!(!back.extra.contains_key("crc"));
        assert_eq!(back.before, Some(Blob::Absent));
        assert_eq!(back.after, None);
        assert_eq!(back.sid, "8f14e4");
        assert_eq!(back.get_str("command"), Some("ls"));
        // The crc field is kept in extra on read; it must not be written twice.
        let mut flipped = body.to_vec();
        flipped[10] ^= 1;
        assert_ne!(check_crc(&flipped), Some(true));
    }

    /// The fold's fast path reads `persisted` lines by byte pattern: `op`, `id` and
    /// `session` must stay adjacent and in this order in [`Record`]'s serialization.
    #[test]
    fn persisted_fast_path_field_order() {
        let mut r = Record::new(op::PERSISTED, "sess-1234");
        r.id = "toolu_abc".into();
        r.path = "a.txt".into();
        r.persisted = true;
        r.tool = Some("Edit".into());
        let line = r.to_line();
        assert_eq!(persisted_fast(&line[..line.len() - 1]), Some(("toolu_abc", "sess-1234")));
        // Anything else takes the full parse.
        let mut other = r.clone();
        other.op = op::APPLIED.into();
        assert_eq!(persisted_fast(&other.to_line()), None);
        let mut escaped = r.clone();
        escaped.id = "a\"b".into();
        assert_eq!(persisted_fast(&escaped.to_line()), None);
    }

    #[test]
    fn v1_line_reads_as_applied() {
        let l = br#"{"v":1,"sid":"a1b2c3","ts":"2026-03-23T09:43:02","event":"config_updated","path":"config/settings.json","persisted":false}"#;
        let r: Record = serde_json::from_slice(l).unwrap();
        assert_eq!(r.op(), op::APPLIED);
        assert_eq!(r.session_key(), "a1b2c3");
        assert_eq!(check_crc(l), None);
    }
}
