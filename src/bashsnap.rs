//! Bash side effects: what a shell command created, changed or deleted.
//!
//! Claude Code tells the hook which command ran, never which files it touched. So the
//! PreToolUse hook takes a cheap *snapshot* of the working tree and the Post hook takes
//! another and compares them; every difference becomes a child entry of the command
//! (`parent` = its tool_use_id, tool `Bash`) with `before`/`after` blobs, so `diff`,
//! `revert` and the TUI treat it like an Edit. This file holds the entry points the hook
//! calls ([`before`], [`after`], [`at_stop`], [`pending`]); each job has its room:
//!
//! - [`tree`]: taking a snapshot. **In git** walj's own quick status ([`gitscan`]: the index's
//!   stat cache checked by several threads, the untracked walk with its folder cache in
//!   [`untracked`]) lists modified, deleted and untracked files, skipping ignored ones; the
//!   checkout watcher ([`watching`], server in `src/watch/`) narrows it to the paths that
//!   changed. Dirty and untracked files are captured into the store at Pre time (their bytes
//!   exist nowhere else); clean tracked files are not: their bytes are the index's blob, read
//!   from git only when the command changed them and git's bytes are the disk's ([`gitform`]).
//!   The index itself is copied aside to see what a `git checkout`, `reset` or `pull` inside
//!   the command did to clean files. **Outside git** it is a bounded walk (`[bash]
//!   max_files`, `max_ms`); a walk cut short says so in the command's record.
//! - [`capture`]: reading bytes into the store, within the capture budget; [`fill`]: the
//!   detached pass without that budget (at SessionStart, and after a snapshot cut short) that
//!   reads what a hook's snapshot could not, so the next command's base is whole.
//! - [`diff`]: comparing two snapshots; [`unseen`]: what the comparison could not see, said in
//!   the record; [`records`]: the journal lines.
//! - [`snapshot`]: the sidecar format and files, `.walj/bash/<key>.json` (never a journal
//!   line); the latest one is also kept as `cache.json`, so a file whose stat has not changed
//!   since is not read again.
//! - [`background`]: background commands (`run_in_background`) keep their sidecar after
//!   PostToolUse; the session's next Stop compares again and records what changed as
//!   `background: true` ("possibly background"), leaving out what other tool calls account for.
//! - [`reconcile`]: the full scan after a Stop that checks what the watcher reported.
//! - [`killed`] and [`attribution`]: a command Claude Code never finished (killed mid-command),
//!   derived after the fact, and who made a change when several commands ran at once.
//! - [`skills`]: the windows of a skill's `!` shell lines.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::config::{self, Config, Matcher};
use crate::fsutil;
use crate::journal::{Record, key};
use crate::project::Project;
use crate::store::blob_id;

pub mod attribution;
mod background;
mod capture;
mod diff;
mod fill;
mod gitform;
mod gitindex;
mod gitscan;
pub mod killed;
mod links;
mod reconcile;
mod records;
mod skills;
mod snapshot;
mod tree;
mod unseen;
mod untracked;
mod watching;

use background::*;
use diff::*;
use records::*;
use snapshot::*;
use tree::*;

pub(crate) use fill::run_fill;
pub(crate) use reconcile::RECONCILED;
pub(crate) use reconcile::{faults_path, reconcile_due, run_reconcile, spawn_reconcile, watch_report};
pub(crate) use skills::{skill_window_open, skill_windows_take};
pub(crate) use watching::WATCH_OFF;
pub(crate) use watching::{observed_path, start_watch};

/// Files modified this close (in time) to a snapshot are re-read instead of trusted by stat:
/// a write within the file system's timestamp granularity leaves the stat unchanged.
const RACY_NS: i64 = 2_000_000_000;
/// Sidecars of commands that never got a PostToolUse (denied, crashed) are dropped after this.
const STALE_SECS: u64 = 7 * 24 * 3600;
/// The sidecar format version.
const SNAP_V: u32 = 1;
/// Longest command text copied onto child records.
const MAX_COMMAND: usize = 512;
/// New objects one snapshot stores at most while it looks at the tree (each costs an fsync);
/// files beyond are stat-only this time (cut short, `nocap: cut_short`). This bounds only the
/// snapshot: the comparison reads every changed file it lacks, and a Post snapshot is
/// completed from the comparison ([`heal`]), so the next snapshot starts whole.
const MAX_NEW_OBJECTS: usize = 512;
/// Child entries one command gets at most by default (`[bash] max_changes`: an unignored `npm
/// install` of hundreds of thousands of files must not flood the journal). Paths past it are
/// not compared one by one: the command's record lists them all (a store object,
/// `unseen.unlisted_list`, and a text file) with how many (`unseen.unlisted`), and every
/// reader says so.
#[allow(dead_code)] // named by `Unseen`'s docs; the bound itself is `config::DEFAULT_MAX_CHANGES`
pub(crate) const MAX_CHANGES: usize = config::DEFAULT_MAX_CHANGES;
/// Files a git snapshot lists at most (dirty and untracked ones; clean files cost nothing):
/// past it the snapshot is cut short (`unlisted`).
pub(crate) const MAX_LISTED: usize = 200_000;

#[derive(Debug, thiserror::Error)]
pub(crate) enum SnapError {
    #[error("{path}: {op}: {source}")]
    Io { path: PathBuf, op: &'static str, source: io::Error },
    #[error("git repository at {path}: {source}")]
    Git { path: PathBuf, source: git2::Error },
    #[error("snapshot {path}: {source}")]
    Format { path: PathBuf, source: serde_json::Error },
    #[error("store: {0}")]
    Store(#[from] crate::store::StoreError),
}

fn io_err<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(io::Error) -> SnapError + 'a {
    move |source| SnapError::Io { path: path.to_path_buf(), op, source }
}

/// The Bash call a hook sees.
#[derive(Debug, Clone, Default)]
pub(crate) struct Call<'a> {
    pub session: &'a str,
    pub tool_use_id: Option<&'a str>,
    pub command: &'a str,
    pub background: bool,
    /// `backgroundTaskId` from the PostToolUse response.
    pub task_id: Option<&'a str>,
    /// The subagent that runs it (`agent_id`, `agent_type`); `None`: the main thread.
    pub agent: Option<(&'a str, Option<&'a str>)>,
    /// The Claude Code process behind the hook (pid, start): the watcher notes when it ends.
    pub claude: Option<(u32, u64)>,
}

impl Call<'_> {
    /// The key of the call's sidecar: its session and tool_use_id (`<session>-<id>`), or (old
    /// Claude Code versions, no id) a hash of session and command, so Pre and Post still meet.
    /// The session is part of it because a tool_use_id is unique only within its session: a
    /// model stand-in, or another agent, may give two sessions' calls the same id, and one
    /// sidecar must never take the other's place (the first command's changes would be lost).
    fn key(&self) -> String {
        match self.tool_use_id {
            Some(id) if !id.is_empty() => sidecar_key(self.session, id),
            _ => format!("c{}", &blob_id(format!("{}\0{}", self.session, self.command).as_bytes())[..24]),
        }
    }
    /// The key sidecars had before they named the session (tool_use_id only): a sidecar an
    /// older walj wrote at Pre is still read at Post, when it is this session's.
    fn legacy_key(&self) -> Option<String> {
        self.tool_use_id.filter(|id| !id.is_empty()).map(id_key)
    }
    /// The parent id child entries name: the tool_use_id, else the key.
    fn parent(&self) -> String {
        self.tool_use_id.filter(|s| !s.is_empty()).map(str::to_string).unwrap_or_else(|| self.key())
    }
}

fn safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// A tool_use_id as a file name: itself when short and plain, else `k` and a hash.
fn id_key(id: &str) -> String {
    if id.len() <= 100 && id.bytes().all(safe_byte) {
        id.to_string()
    } else {
        format!("k{}", &blob_id(id.as_bytes())[..24])
    }
}

/// The sidecar key of call `id` of `session`: `<session>-<id>` when both are short and plain
/// (a Claude Code session id is a UUID), else a hash stands for the long or odd part. An
/// empty session (an agent that gives none) keys by the id alone, as before.
fn sidecar_key(session: &str, id: &str) -> String {
    if session.is_empty() {
        return id_key(id);
    }
    let s = if session.len() <= 64 && session.bytes().all(safe_byte) {
        session.to_string()
    } else {
        format!("s{}", &blob_id(session.as_bytes())[..16])
    };
    format!("{s}-{}", id_key(id))
}

/// The sidecar of `call` and its path: the one keyed by session and id, else one an older walj
/// keyed by id alone, when it is this session's (another session's is never taken).
fn find_sidecar(dir: &Path, call: &Call) -> Result<(PathBuf, Snapshot), SnapError> {
    let path = dir.join(format!("{}.json", call.key()));
    let err = match load(&path) {
        Ok(s) => return Ok((path, s)),
        Err(e) => e,
    };
    if let Some(old) = call.legacy_key().filter(|k| *k != call.key()) {
        let old = dir.join(format!("{old}.json"));
        match load(&old) {
            Ok(s) if s.session == call.session || s.session.is_empty() => return Ok((old, s)),
            Ok(_) => {}
            Err(SnapError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Err(err)
}

/// [`Snapshot::watch`] of a snapshot the watcher made cheap.
pub(crate) const WATCHED: &str = "watcher";

/// What the PostToolUse hook adds to the journal for a command.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Child entries (one `applied` record per changed path).
    pub records: Vec<Record>,
    /// Summary for the command's own record (`snapshot` field), when a snapshot was compared.
    pub summary: Option<Value>,
    /// The Pre's snapshot, to remove once the records are in the journal ([`Done::finish`]).
    pub done: Option<Done>,
}

/// A foreground command's Pre snapshot (its sidecar), still on disk after [`after`]: the
/// caller removes it only once the command's records are appended. A Post killed before
/// then leaves it, and the command reads as killed (its changes derived by the session's
/// Stop or the next reader, [`killed`]); one killed after the append leaves a sidecar whose
/// command has its outcome in the journal, which [`killed`] removes without deriving again.
#[derive(Debug)]
pub struct Done {
    dir: PathBuf,
    path: PathBuf,
    index: Option<snapshot::IndexRef>,
    /// The comparison spilled images ([`crate::store::pending`]): the settle pass is started
    /// once the records naming them are appended (this project).
    spilled: Option<Project>,
    /// A background command: its sidecar is not removed but rebased on the Post's snapshot
    /// (Pre's snapshot, Post's, task id), its new baseline for the Stop.
    rebase: Option<Box<(Snapshot, Snapshot, Option<String>)>>,
}

impl Done {
    /// Removes the snapshot: the command's records are in the journal (or a side file). Starts
    /// the settle pass when the comparison spilled images.
    pub fn finish(self) {
        match self.rebase {
            // A failed rebase leaves the Pre's base: the Stop then leaves out what this Post
            // journaled ([`background`]), so nothing is recorded twice.
            Some(b) => {
                let (pre, now, task_id) = *b;
                let _ = rebase(&self.dir, &self.path, &pre, now, task_id);
            }
            None => remove_snapshot(&self.dir, &self.path, self.index.as_ref()),
        }
        if let Some(project) = &self.spilled {
            spawn_settle(project);
        }
    }
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64)
}

pub(crate) fn bash_dir(project: &Project) -> PathBuf {
    project.dir.join("bash")
}

/// A foreground command still waiting for its outcome, as its PreToolUse sidecar says.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// Its command line (clipped).
    pub command: String,
    /// When its snapshot had finished looking at the tree (ms since the epoch, rounded up): a
    /// change with a later ctime is in that command's own comparison (its Post, or its
    /// derivation after a crash), so that command is sure to see it.
    pub seen_ms: i64,
    /// What its snapshot held: the dirty and untracked files (git) or every file (a scan).
    files: std::collections::BTreeMap<String, snapshot::FileState>,
    /// Every file the snapshot had to list is in `files` (not cut short before listing).
    complete: bool,
    /// A git snapshot (unlisted: clean or absent), else a scan (unlisted: absent).
    git: bool,
    /// The snapshot's time (ns): an unlisted file older than it existed then, ignored.
    time: i64,
}

impl Pending {
    /// Whether this command's own comparison (its Post, or its derivation after a crash) is
    /// sure to list the change of `path` from `before_absent` to `after` (a blob id; `None`:
    /// deleted), by the rule that comparison applies to what its snapshot held, not by the
    /// clock: the snapshot held another state of the path, or did not list a file the change
    /// created and that file is newer than the snapshot.
    pub(crate) fn sees_change(&self, root: &Path, path: &str, before_absent: bool, after: Option<&str>) -> bool {
        match self.files.get(path) {
            Some(st) if st.absent => after.is_some(),
            Some(st) => st.id.is_some() && st.id.as_deref() != after,
            None if !before_absent || after.is_none() => false,
            None if self.git => !tree::existed_untouched(root, path, self.time),
            None => self.complete,
        }
    }
}

/// The command `id` (a tool_use_id) when its foreground sidecar is still there: it has had
/// no outcome yet. One small file read; `None` when it finished, runs in the background (its
/// sidecar is rebased at its Post) or has no snapshot.
pub(crate) fn pending(project: &Project, session: &str, id: &str) -> Option<Pending> {
    let call = Call { session, tool_use_id: Some(id), ..Default::default() };
    let (_, snap) = find_sidecar(&bash_dir(project), &call).ok()?;
    if snap.background || snap.parent != id {
        return None;
    }
    let ms = i64::try_from(snap.ms).unwrap_or(i64::MAX / 2);
    // `ms` counts from the hook's first look, which may be long before `time` (a wait for the
    // watcher): `time + ms` would be late. Older sidecars have no `seen`.
    let seen_ms = if snap.seen > 0 { snap.seen / 1_000_000 } else { (snap.time / 1_000_000).saturating_add(ms) };
    Some(Pending {
        command: snap.command,
        seen_ms: seen_ms.saturating_add(1),
        complete: !snap.cut_short || snap.listed,
        git: snap.mode == snapshot::Mode::Git,
        time: snap.time,
        files: snap.files,
    })
}

/// PreToolUse: snapshot the working tree and keep it for the PostToolUse of `call`.
pub(crate) fn before(project: &Project, cfg: &Config, matcher: Option<&Matcher>, call: &Call) -> Result<(), SnapError> {
    if !cfg.bash.snapshot {
        return Ok(());
    }
    project.ensure_dir().map_err(io_err(&project.dir, "creating"))?;
    settle(project);
    let dir = bash_dir(project);
    fsutil::create_private_dir(&dir).map_err(io_err(&dir, "creating"))?;
    let mut cache = load(&dir.join("cache.json")).ok();
    // A base that is not whole (none yet, files it could not read or must read again): a fill
    // pass that runs or was asked for (SessionStart, a cut-short snapshot) is reading them; its
    // result is worth a wait, since what this snapshot cannot read has no pre-image if the
    // command changes it.
    if cache.as_ref().is_none_or(|c| has_unread(c) || has_racy(c)) && fill::wait_for_fill(project, cfg) {
        cache = load(&dir.join("cache.json")).ok();
    }
    let key = call.key();
    let mut tree = Tree::open(project, cfg, matcher);
    let view = tree.ask_watcher(cache.as_ref(), Some(call), true);
    let mut snap = tree.take_with(cache.as_ref(), Some(&key), Some(&view))?;
    snap.session = call.session.to_string();
    snap.parent = call.parent();
    snap.command = crate::claude::payload::clip(call.command, MAX_COMMAND);
    if let Some((id, kind)) = call.agent {
        snap.agent_id = Some(id.to_string());
        snap.agent_type = kind.map(str::to_string);
    }
    snap.background = call.background;
    snap.hook_start = crate::procinfo::own_start();
    save_as(&[&dir.join(format!("{key}.json")), &dir.join("cache.json")], &snap)?;
    if has_unread(&snap) {
        request_fill_logged(project, cfg);
    }
    Ok(())
}

/// Files the snapshot listed but could not read (cut short): a fill pass completes them.
fn has_unread(snap: &Snapshot) -> bool {
    snap.files.values().any(unread)
}

/// Files written so close to the snapshot that their stat proves nothing: the next snapshot
/// reads them again (a fill pass that runs goes again for them once the window has passed).
fn has_racy(snap: &Snapshot) -> bool {
    snap.files.values().any(|f| f.st.is_some_and(|s| s.racy(snap.time)))
}

/// [`fill::request_fill`], a failure noted in `.walj/errors.log` (the snapshot stands as it is).
fn request_fill_logged(project: &Project, cfg: &Config) {
    if let Err(e) = fill::request_fill(project, cfg) {
        fsutil::append_log(&project.errors_log(), &format!("starting the fill pass: {e}"));
    }
}

/// PostToolUse / PostToolUseFailure: compare with the Pre snapshot; one child entry per
/// changed path. A background command keeps its sidecar (as a new baseline) for Stop.
pub(crate) fn after(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    call: &Call,
) -> Result<Outcome, SnapError> {
    let dir = bash_dir(project);
    let (path, pre) = match find_sidecar(&dir, call) {
        Ok(found) => found,
        Err(SnapError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(Outcome::default());
        }
        Err(e) => {
            let path = match &e {
                SnapError::Io { path, .. } | SnapError::Format { path, .. } => path.clone(),
                _ => dir.join(format!("{}.json", call.key())),
            };
            remove_snapshot(&dir, &path, None);
            return Err(e);
        }
    };
    if !cfg.bash.snapshot {
        remove_snapshot(&dir, &path, pre.index.as_ref());
        return Ok(Outcome::default());
    }
    let background = pre.background || call.task_id.is_some();
    let mut tree = Tree::open(project, cfg, matcher);
    // A background command's sidecar is rebased on this snapshot before its records are
    // appended: its images are stored, not spilled.
    tree.defer = !background;
    let view = tree.ask_watcher(Some(&pre), None, false);
    let mut now = tree.take_with(Some(&pre), background.then_some(call.key().as_str()), Some(&view))?;
    let changes = tree.diff(&pre, &now)?;
    heal(&mut now, &changes);
    let records = child_records(matcher, &pre, &changes, "post", false);
    let mut summary = json!({
        "mode": pre.mode,
        "changed": records.len(),
        // Pre's snapshot, and Post's snapshot and comparison.
        "ms": pre.ms + tree.started.elapsed().as_millis() as u64,
    });
    // How Pre and Post looked at the tree: the watcher, or why each was a full scan.
    if let Some(w) = &now.watch {
        summary["watch"] = json!(w);
    }
    if pre.watch != now.watch
        && let Some(w) = &pre.watch
    {
        summary["watch_pre"] = json!(w);
    }
    // The cache names the last command that used the watcher (the reconciliation after Stop
    // credits a miss to it).
    now.session = pre.session.clone();
    now.parent = pre.parent.clone();
    now.command = pre.command.clone();
    if tree.spills > 0 {
        // Journaled as pending: these images are in a spill, not yet in the store.
        summary["pending"] = json!({"spills": tree.spills, "objects": tree.spilled.len()});
    }
    let unseen = tree.unseen(&pre, &now, &changes);
    if unseen.cut_short {
        summary["cut_short"] = json!(true);
    }
    if !unseen.is_empty() {
        summary[key::UNSEEN] = json!(unseen);
    }
    // The Pre's snapshot is the cache: unless the command changed something, it still holds
    // (its older time only makes more stats look racy), and the write is skipped.
    // (The Pre's clock is as good a base for the watcher: it only names more paths.)
    let unchanged = now.files == pre.files && now.index.as_ref().map(|i| i.st) == pre.index.as_ref().map(|i| i.st);
    if !unchanged || !dir.join("cache.json").exists() {
        save(&dir.join("cache.json"), &now)?;
    }
    // What the comparison did not read either is read by a fill pass before the next command.
    if has_unread(&now) {
        request_fill_logged(project, cfg);
    }
    let spilled = (tree.spills > 0).then(|| project.clone());
    let done = if background {
        // Rebased only once the records are appended, as a foreground sidecar is removed: a
        // Post killed before leaves the old base, and the Stop records the changes.
        let task_id = call.task_id.map(str::to_string).or(pre.task_id.clone());
        let index = pre.index.clone();
        Done { dir, path, index, spilled, rebase: Some(Box::new((pre, now, task_id))) }
    } else {
        Done { dir, path, index: pre.index, spilled, rebase: None }
    };
    Ok(Outcome { records, summary: Some(summary), done: Some(done) })
}

/// How long a hook waits for a settle pass that holds the pending lock.
const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Settles what earlier Posts spilled ([`crate::store::Store::settle_pending`]) before this
/// hook looks at the tree: a pass killed or still running is finished (or waited for) here,
/// so a cache id is in the store before a command can change its file, and a `git gc` the
/// next command runs finds the copies made. Errors go to `.walj/errors.log`. Costs one
/// `read_dir` when nothing is pending.
pub(crate) fn settle(project: &Project) {
    let store = crate::store::Store::new(project.store_dir());
    if !store.has_pending() {
        return;
    }
    match store.settle_pending(Some(&project.root), SETTLE_WAIT) {
        Ok(s) if !s.unavailable.is_empty() => fsutil::append_log(
            &project.errors_log(),
            &format!(
                "settling pending images: {} no longer in git's objects (unavailable): {}",
                s.unavailable.len(),
                s.unavailable.join(" ")
            ),
        ),
        Ok(_) => {}
        Err(e) => fsutil::append_log(&project.errors_log(), &format!("settling pending images: {e}")),
    }
}

/// Starts `walj --project ROOT settle`, detached: the copy of a Post's spilled images into the
/// store, after the hook. A failure is logged; the next hook settles instead.
pub(crate) fn spawn_settle(project: &Project) {
    // Benchmarks time the pass on its own (`walj settle`) with `WALJ_SETTLE_DETACHED=0`.
    if std::env::var_os("WALJ_SETTLE_DETACHED").is_some_and(|v| v == "0") {
        return;
    }
    let started = std::env::current_exe().and_then(|exe| {
        let args: [&std::ffi::OsStr; 3] = ["--project".as_ref(), project.root.as_os_str(), "settle".as_ref()];
        crate::watch::spawn_detached(&exe, &args)
    });
    if let Err(e) = started {
        fsutil::append_log(&project.errors_log(), &format!("starting the settle pass: {e}"));
    }
}

/// The session's Stop: background commands get their later changes (marked
/// `background: true`); sidecars of calls that never finished are dropped. The turn's
/// reconciliation runs after the Stop, detached ([`reconcile_due`], [`spawn_reconcile`]).
pub(crate) fn at_stop(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    session: &str,
    background_tasks: Option<&Value>,
) -> Result<Vec<Record>, SnapError> {
    settle(project);
    background_at_stop(project, cfg, matcher, session, background_tasks)
}
