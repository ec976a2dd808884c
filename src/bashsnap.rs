//! Bash side effects (issue 6): what a shell command created, changed or deleted.
//!
//! Claude Code tells the hook which command ran, never which files it touched. So the
//! PreToolUse hook takes a cheap *snapshot* of the working tree and the Post hook takes
//! another and compares them; every difference becomes a child entry of the command
//! (`parent` = its tool_use_id, tool `Bash`) with `before`/`after` blobs, so `diff`,
//! `revert` and the TUI treat it like an Edit.
//!
//! - **In git** the snapshot is libgit2's status against the index (its stat cache makes
//!   clean files cost one `lstat`), listing modified, deleted and untracked files and
//!   skipping ignored ones. Dirty and untracked files are captured into the store at Pre
//!   time (their bytes exist nowhere else); clean tracked files are not: their bytes are
//!   the index's blob, copied from git's object database into walj's store only when the
//!   command turns out to have changed them. The index itself is hard-linked aside (git
//!   replaces it by rename, so the link keeps the old version) to see what a `git
//!   checkout`, `reset` or `pull` inside the command did to clean files.
//! - **Outside git** it is a bounded walk (`[bash] max_files`, `max_ms`) comparing
//!   mtime/ctime/size/inode; a walk cut short says so in the command's record.
//!
//! A snapshot is a small JSON sidecar, `.walj/bash/<key>.json` (never a journal line).
//! The latest one is also kept as `cache.json`: a file whose stat has not changed since is
//! not read again. Background commands (`run_in_background`) keep their sidecar after
//! PostToolUse; the session's next Stop compares again and records what changed as
//! `background: true` ("possibly background"), leaving out changes other tool calls
//! already account for.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::{self, Config, Matcher};
use crate::fold::{Fold, FoldOptions};
use crate::fsutil;
use crate::journal::{Blob, Record, key, nocap, op, tool};
use crate::project::{Project, to_slash};
use crate::store::{Store, blob_id, file_blob_id};

pub mod attribution;
mod gitform;
mod gitindex;
mod gitscan;
pub mod killed;
mod links;
mod untracked;

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
pub const MAX_CHANGES: usize = config::DEFAULT_MAX_CHANGES;
/// Files a git snapshot lists at most (dirty and untracked ones; clean files cost nothing):
/// past it the snapshot is cut short (`unlisted`).
pub const MAX_LISTED: usize = 200_000;

#[derive(Debug, thiserror::Error)]
pub enum SnapError {
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
pub struct Call<'a> {
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
    /// The key of the call's sidecar: its tool_use_id, or (old Claude Code versions) a hash
    /// of session and command, so Pre and Post still meet.
    fn key(&self) -> String {
        match self.tool_use_id {
            Some(id) if !id.is_empty() && id.len() <= 100 && id.bytes().all(safe_byte) => id.to_string(),
            Some(id) if !id.is_empty() => format!("k{}", &blob_id(id.as_bytes())[..24]),
            _ => format!("c{}", &blob_id(format!("{}\0{}", self.session, self.command).as_bytes())[..24]),
        }
    }
    /// The parent id child entries name: the tool_use_id, else the key.
    fn parent(&self) -> String {
        self.tool_use_id.filter(|s| !s.is_empty()).map(str::to_string).unwrap_or_else(|| self.key())
    }
}

fn safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// A file's stat fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
struct Stamp {
    m: i64,
    c: i64,
    s: u64,
    i: u64,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Stamp {
                m: meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec()),
                c: meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec()),
                s: meta.len(),
                i: meta.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let m =
                meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as i64);
            Stamp { m, c: 0, s: meta.len(), i: 0 }
        }
    }
    /// Changed so close to `time_ns` that an unchanged stat proves nothing.
    fn racy(&self, time_ns: i64) -> bool {
        self.m.max(self.c) + RACY_NS > time_ns
    }
}

/// One file in a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
struct FileState {
    /// Git blob id of the content; `None` with `absent` false = not read (cut short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    absent: bool,
    /// Not a regular file nor a link (socket, FIFO, device…): not tracked.
    #[serde(default, skip_serializing_if = "is_false")]
    special: bool,
    /// A symbolic link: its target text (`links::text`); `id` is
    /// [`crate::journal::entry_kind::link_id`] of the target (no store object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    link: Option<String>,
    /// Why the bytes are not in the store (`too_large`, `never_capture`, `cut_short`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nocap: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    st: Option<Stamp>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
enum Mode {
    #[default]
    Git,
    Scan,
}

/// The index as it was at snapshot time (a hard link or copy under `.walj/bash/`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct IndexRef {
    /// File name of the saved index under `.walj/bash/`, when saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    copy: Option<String>,
    st: Stamp,
}

/// A sidecar: the working tree as one hook saw it.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
struct Snapshot {
    v: u32,
    session: String,
    parent: String,
    #[serde(default)]
    command: String,
    #[serde(default)]
    background: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task_id: Option<String>,
    mode: Mode,
    /// Unix time of the snapshot, nanoseconds.
    time: i64,
    /// Record timestamp of the snapshot (for comparing with journal records).
    #[serde(default)]
    ts: String,
    #[serde(default, skip_serializing_if = "is_false")]
    cut_short: bool,
    /// Every file the snapshot had to list is listed: `cut_short` then means only that some
    /// files' bytes were not read yet (`nocap: cut_short`), which the next snapshot completes.
    /// False (and in sidecars older than this field) with `cut_short`: files past the cut are
    /// missing from `files`.
    #[serde(default, skip_serializing_if = "is_false")]
    listed: bool,
    /// Milliseconds the snapshot took.
    #[serde(default)]
    ms: u64,
    /// Dirty and untracked files (git) or every file walked (scan).
    files: BTreeMap<String, FileState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    index: Option<IndexRef>,
    /// Start time (clock ticks since boot) of the PreToolUse hook that took the snapshot:
    /// processes the command started began at or after it (see [`killed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hook_start: Option<u64>,
    /// The subagent that runs the command (`agent_id`, `agent_type`): its derived entries
    /// carry it, so they group under the subagent after a crash too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_type: Option<String>,
    /// The checkout watcher's clock, taken before this snapshot looked at the tree
    /// (src/watch.rs): the next snapshot asks what changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    clock: Option<crate::watch::Clock>,
    /// How it was taken: [`WATCHED`] (only the paths the watcher named were looked at), or why
    /// it was a full scan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    watch: Option<String>,
}

/// [`Snapshot::watch`] of a snapshot the watcher made cheap.
pub const WATCHED: &str = "watcher";

/// What the PostToolUse hook adds to the journal for a command.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Child entries (one `applied` record per changed path).
    pub records: Vec<Record>,
    /// Summary for the command's own record (`snapshot` field), when a snapshot was compared.
    pub summary: Option<Value>,
}

/// What the watcher said before a snapshot: its clock, and the paths changed since the base
/// (`None`: a full scan, `why` says why).
#[derive(Debug, Clone, Default)]
struct WatchView {
    clock: Option<crate::watch::Clock>,
    paths: Option<Vec<String>>,
    why: Option<String>,
}

/// [`Snapshot::watch`] when `[bash] watcher = false`.
pub const WATCH_OFF: &str = "off ([bash] watcher = false)";

/// The observer file the watcher writes (docs/architecture.md), under `.walj/`.
pub fn observed_path(project: &Project) -> PathBuf {
    project.dir.join("observed.jsonl")
}

/// Starts the checkout's watcher, detached, unless one holds its claim (a failure is logged:
/// the snapshot falls back to a full scan). `session`, the hook's own, is named on its command
/// line: the new watcher notes that Claude Code's end even if no request of the session ever
/// reaches it (a slow start under load, a session killed before its next hook).
fn start_watcher(project: &Project, places: &crate::watch::Places, session: Option<&crate::watch::SessionRef>) {
    let Ok(exe) = std::env::current_exe() else { return };
    let observed = observed_path(project);
    let mut args: Vec<std::ffi::OsString> =
        vec!["watch".into(), "--root".into(), places.root.clone().into(), "--observed".into(), observed.into()];
    if crate::git::find(&project.root).is_none() {
        args.push("--processes-only".into());
    }
    if let Some(s) = session {
        args.push("--session".into());
        args.push(format!("{}:{}:{}", s.id, s.pid, s.start).into());
    }
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    if let Err(e) = crate::watch::spawn(places, &exe, &args) {
        crate::fsutil::append_log(&project.errors_log(), &format!("starting the watcher: {e}"));
    }
}

/// SessionStart: starts the checkout's watcher when it is on and none runs, so the first
/// command finds it ready, and names the session's Claude Code process (`claude`: its pid and
/// start) to it, so that its end is noted from the first moment: without that, a session
/// whose first command's snapshot found no watcher listening yet (a slow start under load)
/// and that was killed mid-command had no witness of its end, and its command's own changes
/// read as made after Claude Code stopped. Costs one `connect` and one write when one runs.
pub fn start_watch(project: &Project, cfg: &Config, session: &str, claude: Option<(u32, u64)>) {
    if !cfg.bash.snapshot || !cfg.bash.watcher {
        return;
    }
    // Outside git, a watcher of processes only (no folder watched): the end of each session's
    // Claude Code is then known there too.
    let workdir = crate::git::find(&project.root).map_or_else(|| project.root.clone(), |(w, _)| w);
    let Ok(places) = crate::watch::Places::of(&workdir) else { return };
    let session = claude.map(|(pid, start)| crate::watch::SessionRef { id: session.to_string(), pid, start });
    let running = match &session {
        Some(s) => crate::watch::register(&places, s.clone()).is_ok(),
        #[cfg(unix)]
        None => std::os::unix::net::UnixStream::connect(&places.socket).is_ok(),
        #[cfg(not(unix))]
        None => false,
    };
    if !running {
        start_watcher(project, &places, session.as_ref());
    }
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64)
}

fn bash_dir(project: &Project) -> PathBuf {
    project.dir.join("bash")
}

/// The open window of a skill's `!` shell line (`PreSkillShellCommand`: no Post event
/// follows) in `session`: one small file whose absence every other hook of the session
/// checks with one `stat` ([`skill_windows_take`]).
fn skill_marker(project: &Project, session: &str) -> PathBuf {
    let safe: String = session.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(64).collect();
    bash_dir(project).join(format!("skill-{safe}.open"))
}

/// Opens the window of a skill's shell line `id` (its snapshot was taken by [`before`]).
pub fn skill_window_open(project: &Project, session: &str, id: &str, command: &str) -> Result<(), SnapError> {
    let path = skill_marker(project, session);
    let line = serde_json::to_string(&(id, command)).unwrap_or_default();
    // Never through a link planted at `.walj/bash` or at the marker itself.
    let dir = bash_dir(project);
    fsutil::create_private_dir(&dir).map_err(io_err(&dir, "creating"))?;
    let mut f = fsutil::open_private(&path, fs::OpenOptions::new().create(true).append(true))
        .map_err(io_err(&path, "opening"))?;
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).map_err(io_err(&path, "writing"))
}

/// The skill shell lines of `session` whose windows are open, taken (their marker removed):
/// the session's next hook event closes them. One `stat` when there are none.
pub fn skill_windows_take(project: &Project, session: &str) -> Vec<(String, String)> {
    let path = skill_marker(project, session);
    if fs::symlink_metadata(&path).is_err() {
        return Vec::new();
    }
    // Renamed first: two hooks at once never close one window twice.
    let taken = path.with_extension(format!("taken{}", std::process::id()));
    if fs::rename(&path, &taken).is_err() {
        return Vec::new();
    }
    let text = fs::read_to_string(&taken).unwrap_or_default();
    let _ = fs::remove_file(&taken);
    text.lines().filter_map(|l| serde_json::from_str::<(String, String)>(l).ok()).collect()
}

/// A foreground command still waiting for its outcome, as its PreToolUse sidecar says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Its command line (clipped).
    pub command: String,
    /// When its snapshot had finished looking at the tree (ms since the epoch, rounded up): a
    /// change with a later ctime is in that command's own comparison (its Post, or its
    /// derivation after a crash), so that command is sure to see it.
    pub seen_ms: i64,
}

/// The command `id` (a tool_use_id) when its foreground sidecar is still there: it has had
/// no outcome yet. One small file read; `None` when it finished, runs in the background (its
/// sidecar is rebased at its Post) or has no snapshot.
pub fn pending(project: &Project, id: &str) -> Option<Pending> {
    let call = Call {
        session: "",
        tool_use_id: Some(id),
        command: "",
        background: false,
        task_id: None,
        agent: None,
        claude: None,
    };
    let snap = load(&bash_dir(project).join(format!("{}.json", call.key()))).ok()?;
    if snap.background || snap.parent != id {
        return None;
    }
    let ms = i64::try_from(snap.ms).unwrap_or(i64::MAX / 2);
    Some(Pending { command: snap.command, seen_ms: (snap.time / 1_000_000).saturating_add(ms).saturating_add(1) })
}

/// PreToolUse: snapshot the working tree and keep it for the PostToolUse of `call`.
pub fn before(project: &Project, cfg: &Config, matcher: Option<&Matcher>, call: &Call) -> Result<(), SnapError> {
    if !cfg.bash.snapshot {
        return Ok(());
    }
    project.ensure_dir().map_err(io_err(&project.dir, "creating"))?;
    let dir = bash_dir(project);
    fsutil::create_private_dir(&dir).map_err(io_err(&dir, "creating"))?;
    let cache = load(&dir.join("cache.json")).ok();
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
    Ok(())
}

/// PostToolUse / PostToolUseFailure: compare with the Pre snapshot; one child entry per
/// changed path. A background command keeps its sidecar (as a new baseline) for Stop.
pub fn after(project: &Project, cfg: &Config, matcher: Option<&Matcher>, call: &Call) -> Result<Outcome, SnapError> {
    let dir = bash_dir(project);
    let path = dir.join(format!("{}.json", call.key()));
    let pre = match load(&path) {
        Ok(s) => s,
        Err(SnapError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(Outcome::default());
        }
        Err(e) => {
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
    if background {
        let task_id = call.task_id.map(str::to_string).or(pre.task_id.clone());
        rebase(&dir, &path, &pre, now, task_id)?;
    } else {
        remove_snapshot(&dir, &path, pre.index.as_ref());
    }
    Ok(Outcome { records, summary: Some(summary) })
}

/// The session's Stop: background commands get their later changes (marked
/// `background: true`); sidecars of calls that never finished are dropped. The turn's
/// reconciliation runs after the Stop, detached ([`reconcile_due`], [`spawn_reconcile`]).
pub fn at_stop(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    session: &str,
    background_tasks: Option<&Value>,
) -> Result<Vec<Record>, SnapError> {
    background_at_stop(project, cfg, matcher, session, background_tasks)
}

/// Key of a child entry found by the full scan after Stop that the watcher did not report.
pub const WATCH_FAULT: &str = "watch_fault";

/// `.walj/bash/watch-faults.jsonl`: one line per reconciliation (after a Stop) whose full scan found changes the
/// watcher had not reported (what `walj doctor` counts).
pub fn faults_path(project: &Project) -> PathBuf {
    bash_dir(project).join("watch-faults.jsonl")
}

/// `.walj/bash/reconcile.claim`: held ("pid start") by the one reconciliation that runs for
/// the checkout ([`run_reconcile`]).
pub fn reconcile_claim_path(project: &Project) -> PathBuf {
    bash_dir(project).join("reconcile.claim")
}

/// `.walj/bash/reconcile.again`: a Stop asked for a reconciliation while one ran (its session
/// inside); the running one goes again when done.
fn reconcile_again_path(project: &Project) -> PathBuf {
    bash_dir(project).join("reconcile.again")
}

/// Whether the last snapshot used the watcher, so the turn needs its reconciliation (one read
/// of the cache: what Stop pays when the watcher is off or was not used).
pub fn reconcile_due(project: &Project, cfg: &Config) -> bool {
    cfg.bash.snapshot
        && cfg.bash.watcher
        && load(&bash_dir(project).join("cache.json")).is_ok_and(|c| c.watch.as_deref() == Some(WATCHED))
}

/// Starts the turn's reconciliation after Stop: `walj --project ROOT reconcile --session S`,
/// detached (its own process group, as the watcher starts), so the Stop hook does not wait for
/// a full scan. The request is noted first ([`reconcile_again_path`]): a reconciliation that
/// holds the claim goes again for it.
pub fn spawn_reconcile(project: &Project, session: &str) -> io::Result<()> {
    let again = reconcile_again_path(project);
    // Never through a link planted at `.walj/bash` (refused) or at the file (not followed).
    fsutil::create_private_dir(&bash_dir(project))?;
    fsutil::open_private(&again, fs::OpenOptions::new().write(true).create(true).truncate(true))
        .and_then(|mut f| io::Write::write_all(&mut f, session.as_bytes()))?;
    let exe = std::env::current_exe()?;
    let args: [&std::ffi::OsStr; 5] =
        ["--project".as_ref(), project.root.as_os_str(), "reconcile".as_ref(), "--session".as_ref(), session.as_ref()];
    crate::watch::spawn_detached(&exe, &args)
}

/// Runs the reconciliation under the checkout's claim, for `session` and then for every
/// request a later Stop left meanwhile; `append` journals each round's findings. `Ok(false)`:
/// another reconciliation holds the claim (it will see this request).
pub fn run_reconcile(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    session: &str,
    mut append: impl FnMut(Vec<Record>) -> io::Result<()>,
) -> Result<bool, SnapError> {
    let claim_path = reconcile_claim_path(project);
    let again = reconcile_again_path(project);
    let mut session = session.to_string();
    let mut ran = false;
    // Bounded: a Stop every few seconds in another session must not keep one process forever.
    for _ in 0..8 {
        let Some(claim) = crate::watch::claim(&claim_path).map_err(io_err(&claim_path, "claiming"))? else {
            return Ok(ran);
        };
        // Taken before the scan: a request made from now on is served by the next round.
        if let Ok(text) = fs::read_to_string(&again) {
            let asked = text.trim();
            if !asked.is_empty() && asked.len() <= 200 {
                session = asked.to_string();
            }
        }
        let _ = fs::remove_file(&again);
        let records = reconcile(project, cfg, matcher, &session)?;
        if !records.is_empty() {
            append(records).map_err(io_err(&project.journal, "appending"))?;
        }
        ran = true;
        drop(claim);
        if !again.exists() {
            break;
        }
    }
    Ok(ran)
}

/// The reconciliation after a turn whose snapshots used the watcher: the watcher's view of
/// the tree now against a full scan. A difference is a change the watcher missed: it is
/// journaled as a side effect of the last command that used the watcher (uncertain, with
/// `watch_fault`), and counted in `faults.jsonl`. A path the watcher reports meanwhile (a
/// change made during the scan) is not a miss.
fn reconcile(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    session: &str,
) -> Result<Vec<Record>, SnapError> {
    let dir = bash_dir(project);
    let cache_path = dir.join("cache.json");
    let Ok(cache) = load(&cache_path) else { return Ok(Vec::new()) };
    if !cfg.bash.snapshot || !cfg.bash.watcher || cache.watch.as_deref() != Some(WATCHED) {
        return Ok(Vec::new());
    }
    let mut tree = Tree::open(project, cfg, matcher);
    let view = tree.ask_watcher(Some(&cache), None, false);
    let Some(clock) = view.clock.clone() else { return Ok(Vec::new()) };
    let watched = tree.take_with(Some(&cache), None, Some(&view))?;
    if watched.watch.as_deref() != Some(WATCHED) {
        return Ok(Vec::new());
    }
    let mut full = tree.take(Some(&watched), None)?;
    let mut changes = tree.diff(&watched, &full)?;
    if !changes.is_empty() {
        let later = tree.ask_watcher(Some(&watched), None, false);
        if let Some(p) = later.paths {
            let p: HashSet<String> = p.into_iter().collect();
            changes.retain(|c| !p.contains(&c.rel));
        } else {
            // The watcher cannot say what happened during the scan: no verdict this time.
            changes.clear();
        }
    }
    let mut base = watched.clone();
    if cache.session != session || cache.parent.is_empty() {
        base.session = session.to_string();
        base.parent = format!("watch-{:x}", watched.time);
        base.command = "(changes the watcher did not report)".into();
    } else {
        base.session = cache.session.clone();
        base.parent = cache.parent.clone();
        base.command = cache.command.clone();
    }
    let records: Vec<Record> = child_records(matcher, &base, &changes, &format!("reconcile{}", watched.time), false)
        .into_iter()
        .map(|r| r.with(key::ATTRIBUTION, crate::journal::attribution::UNCERTAIN).with(WATCH_FAULT, true))
        .collect();
    if !records.is_empty() {
        let line = json!({
            "ts": crate::journal::record::now_ts(),
            "session": session,
            "missed": records.len(),
            "paths": changes.iter().take(5).map(|c| c.rel.clone()).collect::<Vec<_>>(),
            // The reconciliation's own process (detached from the Stop that asked for it).
            "pid": std::process::id(),
        });
        if fsutil::create_private_dir(&bash_dir(project)).is_ok()
            && let Ok(mut f) =
                fsutil::open_private(&faults_path(project), fs::OpenOptions::new().append(true).create(true))
        {
            let _ = io::Write::write_all(&mut f, format!("{line}\n").as_bytes());
        }
    }
    // The full scan is the truth from the clock taken before it.
    full.clock = Some(clock);
    full.watch = Some(RECONCILED.to_string());
    // Only over the cache it started from: a command that ran meanwhile (another session's
    // turn) saved a newer one, and its snapshot names that command.
    if load(&cache_path).is_ok_and(|now| now.time == cache.time) {
        let _ = save(&cache_path, &full);
    }
    Ok(records)
}

/// [`Snapshot::watch`] of the full scan the reconciliation after Stop saves as the cache.
pub const RECONCILED: &str = "full scan after Stop (reconciliation)";

/// How the last Bash snapshots were taken and what the reconciliations after Stop found, for
/// `walj doctor`.
#[derive(Debug, Clone, Default)]
pub struct WatchReport {
    /// [`Snapshot::watch`] of the cache: [`WATCHED`], [`RECONCILED`], or why it was a full scan.
    pub last: Option<String>,
    /// Stops whose full scan found changes the watcher missed, and how many changes.
    pub fault_turns: usize,
    pub faults: usize,
    /// The latest such paths.
    pub fault_paths: Vec<String>,
}

/// What `walj doctor` says about the watcher.
pub fn watch_report(project: &Project) -> WatchReport {
    let dir = bash_dir(project);
    let mut r = WatchReport { last: load(&dir.join("cache.json")).ok().and_then(|c| c.watch), ..Default::default() };
    if let Ok(text) = fs::read_to_string(faults_path(project)) {
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            r.fault_turns += 1;
            r.faults += v.get("missed").and_then(Value::as_u64).unwrap_or(0) as usize;
            if let Some(p) = v.get("paths").and_then(Value::as_array) {
                r.fault_paths = p.iter().filter_map(Value::as_str).map(str::to_string).collect();
            }
        }
    }
    r
}

/// Background commands at Stop (see [`at_stop`]).
fn background_at_stop(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    session: &str,
    background_tasks: Option<&Value>,
) -> Result<Vec<Record>, SnapError> {
    let dir = bash_dir(project);
    let rd = match fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(&dir, "listing")(e)),
    };
    let mut pending = Vec::new();
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") || name == "cache.json" {
            if name.ends_with(".index") && is_stale(&ent.path()) {
                let _ = fs::remove_file(ent.path());
            }
            continue;
        }
        let path = ent.path();
        let Ok(snap) = load(&path) else {
            let _ = fs::remove_file(&path);
            continue;
        };
        if snap.session != session {
            if is_stale(&path) {
                remove_snapshot(&dir, &path, snap.index.as_ref());
            }
            continue;
        }
        if !snap.background || !cfg.bash.snapshot {
            // At the main agent's Stop no call of this session runs: a Pre without a Post
            // was denied or lost.
            remove_snapshot(&dir, &path, snap.index.as_ref());
            continue;
        }
        pending.push((path, snap));
    }
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    // Changes other tool calls already account for (Edit/Write, other commands).
    let fold = Fold::load(
        &project.journal,
        &FoldOptions { session: Some(session.to_string()), keep_settled: true, ..Default::default() },
    )
    .map_err(io_err(&project.journal, "reading"))?;
    let restarted = fold.session(session).and_then(|s| s.last_start_ts.clone());
    let live: Vec<crate::procinfo::ProcRef> = fold.sessions.iter().filter_map(|s| s.proc).collect();
    let mut out = Vec::new();
    for (path, base) in pending {
        // Started before the session was resumed after a crash: its Claude Code is gone. If
        // nothing it started runs any more it is dead, and whatever changed since (the user's
        // own repairs, the resumed session's work) is not its.
        let mut orphaned = false;
        if restarted.as_deref().is_some_and(|start| base.ts.as_str() < start) {
            let pids = base
                .hook_start
                .and_then(|since| {
                    crate::procinfo::started_by_tool_since(
                        since,
                        &project.root,
                        session,
                        &live,
                        crate::claude::env::MARKER,
                    )
                })
                .unwrap_or_default();
            if pids.is_empty() {
                remove_snapshot(&dir, &path, base.index.as_ref());
                continue;
            }
            orphaned = true;
        }
        let known: HashSet<(String, Option<String>)> = fold
            .entries
            .iter()
            .filter(|e| e.parent.as_deref() != Some(base.parent.as_str()))
            .filter(|e| e.applied_ts.as_deref().unwrap_or(&e.ts) >= base.ts.as_str())
            .filter_map(|e| e.after.as_ref().map(|a| (e.path.clone(), a.id().map(str::to_string))))
            .collect();
        let mut tree = Tree::open(project, cfg, matcher);
        let running = task_running(background_tasks, base.task_id.as_deref());
        let key = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let now = tree.take(Some(&base), running.then_some(key.as_str()))?;
        let mut changes = tree.diff(&base, &now)?;
        changes.retain(|c| !known.contains(&(c.rel.clone(), c.after.blob().and_then(|b| b.id().map(str::to_string)))));
        let phase = format!("stop{}", base.time);
        let records = child_records(matcher, &base, &changes, &phase, true);
        if orphaned {
            // It outlived its Claude Code: the user and the resumed session work beside it.
            out.extend(records.into_iter().map(|r| r.with(key::ATTRIBUTION, crate::journal::attribution::UNCERTAIN)));
        } else {
            out.extend(records);
        }
        let _ = save(&dir.join("cache.json"), &now);
        if running {
            let task_id = base.task_id.clone();
            rebase(&dir, &path, &base, now, task_id)?;
        } else {
            remove_snapshot(&dir, &path, base.index.as_ref());
        }
    }
    Ok(out)
}

/// Keeps `now` at `path` as the new baseline of `base`'s background command (it may still
/// change files); the index `base` saved is removed once `now` has its own.
fn rebase(
    dir: &Path,
    path: &Path,
    base: &Snapshot,
    mut now: Snapshot,
    task_id: Option<String>,
) -> Result<(), SnapError> {
    now.session = base.session.clone();
    now.parent = base.parent.clone();
    now.command = base.command.clone();
    now.background = true;
    now.task_id = task_id;
    now.hook_start = base.hook_start;
    if let Some(old) = base.index.as_ref().and_then(|i| i.copy.as_ref())
        && now.index.as_ref().and_then(|i| i.copy.as_ref()) != Some(old)
    {
        let _ = fs::remove_file(dir.join(old));
    }
    save(path, &now)
}

/// True when Stop's `background_tasks` lists `task_id` as still running.
fn task_running(tasks: Option<&Value>, task_id: Option<&str>) -> bool {
    let (Some(tasks), Some(id)) = (tasks.and_then(Value::as_array), task_id) else { return false };
    tasks.iter().any(|t| {
        t.get("id").and_then(Value::as_str) == Some(id)
            && t.get("status").and_then(Value::as_str).is_some_and(|s| s == "running" || s == "pending")
    })
}

/// The name of walj's last copy of the git index, for the index version `st`.
fn last_copy_name(st: Stamp) -> String {
    format!("index-{:x}-{:x}-{:x}.last", st.i, st.s, st.m)
}

/// Saves the git index at `index` (stamped `st` before the snapshot read it) as `dest`: a
/// private copy, never a hard link to git's file (walj's files are 0600 and its own). While
/// git's index does not change (most commands), every command's copy is a hard link to one
/// copy walj made of that version (`index-….last`, named by the version's stamp): no new file,
/// no bytes copied, whatever the index's size. Reused only when made since the system booted
/// (elsewhere than Linux: never) and of the version's length; [`Tree::diff`] also removes
/// one it finds damaged.
fn save_index_copy(dir: &Path, index: &Path, dest: &Path, st: Stamp) -> bool {
    let last = dir.join(last_copy_name(st));
    // Made since the system booted, so whole (copies are not synced): a machine crash could
    // have left it damaged, which only reading it all would tell.
    let this_boot =
        |m: &fs::Metadata| crate::procinfo::boot_time().zip(m.modified().ok()).is_some_and(|(boot, made)| made > boot);
    // `symlink_metadata`: only walj's own regular file is linked, never something a link there
    // points at.
    if fs::symlink_metadata(&last).is_ok_and(|m| m.file_type().is_file() && m.len() == st.s && this_boot(&m))
        && fs::hard_link(&last, dest).is_ok()
    {
        // Dated now, as a copy would be: a Stop sweeps `.index` files by their age.
        let _ = fs::OpenOptions::new().write(true).open(dest).and_then(|f| f.set_modified(SystemTime::now()));
        return true;
    }
    if crate::fsutil::copy_private(index, dest).is_err() {
        return false;
    }
    // Kept for the next commands only when git's file still is the version copied.
    let unchanged = fs::metadata(index).is_ok_and(|m| Stamp { c: 0, ..Stamp::of(&m) } == st);
    if unchanged && fs::symlink_metadata(dest).is_ok_and(|m| m.file_type().is_file() && m.len() == st.s) {
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                let n = e.file_name();
                let n = n.to_string_lossy();
                if n.starts_with("index-") && n.ends_with(".last") {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        let _ = fs::hard_link(dest, &last);
    }
    true
}

fn is_stale(path: &Path) -> bool {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|d| d > Duration::from_secs(STALE_SECS))
}

fn remove_snapshot(dir: &Path, path: &Path, index: Option<&IndexRef>) {
    let _ = fs::remove_file(path);
    if let Some(c) = index.and_then(|i| i.copy.as_ref()) {
        let _ = fs::remove_file(dir.join(c));
    }
}

fn load(path: &Path) -> Result<Snapshot, SnapError> {
    let bytes = fs::read(path).map_err(io_err(path, "reading"))?;
    let s: Snapshot =
        serde_json::from_slice(&bytes).map_err(|source| SnapError::Format { path: path.to_path_buf(), source })?;
    if s.v != SNAP_V {
        return Err(SnapError::Io {
            path: path.to_path_buf(),
            op: "reading",
            source: io::Error::other(format!("snapshot version {} (expected {SNAP_V})", s.v)),
        });
    }
    Ok(s)
}

/// Writes a sidecar by rename (no fsync: losing one to a power cut loses only the child
/// entries of that command, never journal data).
fn save(path: &Path, snap: &Snapshot) -> Result<(), SnapError> {
    save_as(&[path], snap)
}

/// Writes one sidecar under every name of `paths`, each replaced by rename. The bytes are
/// written once: the other names are hard links to them (a new file costs more than its
/// bytes: 0.3–0.5 ms each on ext4 without a journal, where the kernel looks for an inode
/// that was not freed recently). Every writer replaces a sidecar by rename, never in place,
/// so the names never share a change. Where links are refused, each name gets a copy.
fn save_as(paths: &[&Path], snap: &Snapshot) -> Result<(), SnapError> {
    let Some(first) = paths.first() else { return Ok(()) };
    let bytes = serde_json::to_vec(snap).map_err(|source| SnapError::Format { path: first.to_path_buf(), source })?;
    let tmp_of = |p: &Path| p.with_extension(format!("tmp{}", std::process::id()));
    let write = |tmp: &Path| -> io::Result<()> {
        let mut f = fsutil::open_private(tmp, fs::OpenOptions::new().write(true).create(true).truncate(true))?;
        io::Write::write_all(&mut f, &bytes)
    };
    let tmp = tmp_of(first);
    let mut made = vec![tmp.clone()];
    let mut done = || -> Result<(), (&Path, io::Error)> {
        write(&tmp).map_err(|e| (*first, e))?;
        for p in &paths[1..] {
            let other = tmp_of(p);
            let _ = fs::remove_file(&other);
            made.push(other.clone());
            if fs::hard_link(&tmp, &other).is_err() {
                write(&other).map_err(|e| (*p, e))?;
            }
            fs::rename(&other, p).map_err(|e| (*p, e))?;
        }
        fs::rename(&tmp, first).map_err(|e| (*first, e))
    };
    done().map_err(|(path, e)| {
        for m in &made {
            let _ = fs::remove_file(m);
        }
        io_err(path, "writing")(e)
    })
}

/// One side of a change.
#[derive(Debug, Clone, PartialEq)]
enum Side {
    Absent,
    /// Content with this blob id; `nocap` says why it is not in walj's store; `link`: a
    /// symbolic link with this target text (the blob is the target's bytes).
    Known {
        id: String,
        nocap: Option<String>,
        link: Option<String>,
    },
    /// Never read (the snapshot was cut short).
    Unknown,
    /// Not recorded, for this reason (a `nocap` value: [`nocap::GIT_FORM`]).
    NotCaptured(String),
}

impl Side {
    fn blob(&self) -> Option<Blob> {
        match self {
            Side::Absent => Some(Blob::Absent),
            Side::Known { id, .. } => Some(Blob::Id(id.clone())),
            Side::Unknown | Side::NotCaptured(_) => None,
        }
    }
    fn link(&self) -> Option<&str> {
        match self {
            Side::Known { link, .. } => link.as_deref(),
            _ => None,
        }
    }
    fn nocap(&self) -> Option<&str> {
        match self {
            Side::Known { nocap, .. } => nocap.as_deref(),
            Side::Unknown => Some("cut_short"),
            Side::NotCaptured(why) => Some(why),
            Side::Absent => None,
        }
    }
}

#[derive(Debug, Clone)]
struct Change {
    rel: String,
    before: Side,
    after: Side,
}

/// The working tree of a project, opened for one hook call.
struct Tree<'a> {
    project: &'a Project,
    cfg: &'a Config,
    matcher: Option<&'a Matcher>,
    store: Store,
    repo: Option<git2::Repository>,
    /// The project root relative to the repository's work tree (`""` or `"sub/dir/"`).
    prefix: String,
    started: Instant,
    deadline: Instant,
    /// Objects read but not stored yet (stored together, in parallel).
    pending: Vec<(String, Vec<u8>)>,
    pending_bytes: usize,
    /// The index as the last `take` read it.
    index: Option<Vec<gitindex::Entry>>,
    /// New objects queued by this hook call (bounded by `MAX_NEW_OBJECTS`).
    new_objects: usize,
    /// The images the journal's last lines carry, read at the first file the store lacks.
    recent: Option<crate::store::RecentlyCarried>,
    /// The diff stopped at `[bash] max_changes`.
    changes_cut: bool,
    /// The paths past `[bash] max_changes` the diff did not compare (in order).
    unlisted: Vec<String>,
    /// Whether git may store a clean file in another form than the disk's
    /// ([`gitform::GitForm`]), read at the first clean file a change needs.
    git_form: Option<gitform::GitForm>,
}

impl<'a> Tree<'a> {
    fn open(project: &'a Project, cfg: &'a Config, matcher: Option<&'a Matcher>) -> Tree<'a> {
        let started = Instant::now();
        let repo = git2::Repository::discover(&project.root).ok().filter(|r| r.workdir().is_some());
        let mut prefix = String::new();
        let mut repo = repo;
        if let Some(r) = &repo {
            let wd = r.workdir().map(|w| fs::canonicalize(w).unwrap_or_else(|_| w.to_path_buf()));
            match wd.as_deref().and_then(|w| project.root.strip_prefix(w).ok()) {
                Some(rel) if rel.as_os_str().is_empty() => {}
                Some(rel) => prefix = format!("{}/", to_slash(rel)),
                // The root is not inside this work tree (odd layouts): walk instead.
                None => repo = None,
            }
        }
        Tree {
            project,
            cfg,
            matcher,
            store: Store::new(project.store_dir()),
            repo,
            prefix,
            started,
            deadline: started + Duration::from_millis(cfg.bash.max_ms.max(1)),
            pending: Vec::new(),
            pending_bytes: 0,
            index: None,
            new_objects: 0,
            recent: None,
            changes_cut: false,
            unlisted: Vec::new(),
            git_form: None,
        }
    }

    /// A snapshot of the tree; `cache` lends blob ids of files whose stat is unchanged;
    /// `save_index` (a sidecar key) keeps a link to the current git index.
    fn take(&mut self, cache: Option<&Snapshot>, save_index: Option<&str>) -> Result<Snapshot, SnapError> {
        self.take_with(cache, save_index, None)
    }

    /// [`Tree::take`], looking only at the paths `view` names when the watcher vouches for
    /// them since `cache` (then `cache` is the base the snapshot starts from).
    fn take_with(
        &mut self,
        cache: Option<&Snapshot>,
        save_index: Option<&str>,
        view: Option<&WatchView>,
    ) -> Result<Snapshot, SnapError> {
        let time = now_ns();
        let mut snap = Snapshot {
            v: SNAP_V,
            time,
            ts: crate::journal::record::now_ts(),
            mode: if self.repo.is_some() { Mode::Git } else { Mode::Scan },
            ..Snapshot::default()
        };
        if let Some(v) = view {
            snap.clock = v.clock.clone();
            snap.watch = Some(v.why.clone().unwrap_or_else(|| WATCHED.to_string()));
        }
        if self.repo.is_some() {
            let paths = view.and_then(|v| v.paths.as_deref());
            self.take_git(&mut snap, cache, save_index, paths)?;
        } else {
            self.take_scan(&mut snap, cache)?;
        }
        self.flush()?;
        snap.ms = self.started.elapsed().as_millis() as u64;
        Ok(snap)
    }

    fn take_git(
        &mut self,
        snap: &mut Snapshot,
        cache: Option<&Snapshot>,
        save_index: Option<&str>,
        watched: Option<&[String]>,
    ) -> Result<(), SnapError> {
        let Some(repo) = self.repo.as_ref() else { return Ok(()) };
        let index_path = repo.path().join("index");
        // Stamp the index before reading the status: a later rewrite then shows as a change.
        // Without ctime: linking the index aside (below) changes its ctime; git replaces the
        // index by rename, which changes its inode and mtime.
        let index_st = fs::metadata(&index_path).ok().map(|m| Stamp { c: 0, ..Stamp::of(&m) });
        let workdir = repo.workdir().unwrap_or(&self.project.root).to_path_buf();
        let git_err = |source| SnapError::Git { path: workdir.clone(), source };
        // The watcher named what changed since `cache`: only those paths are looked at, while
        // git's index is the one `cache` saw (a changed index changes what is dirty).
        if let (Some(paths), Some(base)) = (watched, cache) {
            let why = if base.mode != Mode::Git {
                Some("the last snapshot was a walk outside git (full scan)")
            } else if base.cut_short && !base.listed {
                Some("the last snapshot's list was cut short (full scan)")
            } else if base.index.as_ref().map(|i| i.st) != index_st {
                Some("the git index changed (full scan)")
            } else {
                None
            };
            match why {
                // A base whose files are all listed is completed here: the files it could not
                // read yet are read now (within this snapshot's budget).
                None => {
                    self.take_watched(snap, base, paths)?;
                    self.save_index(snap, save_index, &index_path, index_st);
                    return Ok(());
                }
                Some(w) => snap.watch = Some(w.into()),
            }
        }
        let repo = self.repo.as_ref().ok_or_else(|| SnapError::Io {
            path: workdir.clone(),
            op: "opening",
            source: io::Error::other("no repository"),
        })?;
        let index = read_index(repo, &index_path).map_err(git_err)?;
        // Stat workers only for an index big enough to repay starting them (and asking the
        // system how many cores there are, which reads cgroup files).
        let threads = if index.len() < gitscan::PARALLEL_MIN {
            1
        } else {
            std::thread::available_parallelism().map_or(2, |n| n.get()).min(4)
        };
        let walk_cache = untracked::fingerprint(repo, index_st.as_ref(), &workdir, &self.prefix, RACY_NS).map(|fp| {
            let name = if self.prefix.is_empty() {
                "untracked.cache".to_string()
            } else {
                format!("untracked-{}.cache", &blob_id(self.prefix.as_bytes())[..12])
            };
            untracked::Cache { path: bash_dir(self.project).join(name), fp, racy_ns: RACY_NS }
        });
        let listed = gitscan::dirty_files(repo, &index, &workdir, &self.prefix, threads, walk_cache.as_ref())
            .map_err(git_err)?;
        // Kept for `diff` (reading the index again would cost as much as a tenth of the hook).
        self.index = Some(index);
        snap.listed = listed.len() <= MAX_LISTED;
        if !snap.listed {
            snap.cut_short = true;
        }
        let listed: Vec<(String, bool)> = listed.into_iter().take(MAX_LISTED).map(|l| (l.rel, l.deleted)).collect();
        for (rel, deleted) in listed {
            let state = if deleted {
                FileState { absent: true, ..FileState::default() }
            } else {
                let cached = cache.and_then(|c| c.files.get(&rel).map(|f| (f, c.time)));
                self.file_state(&rel, cached, &mut snap.cut_short)?
            };
            snap.files.insert(rel, state);
        }
        self.save_index(snap, save_index, &index_path, index_st);
        Ok(())
    }

    /// Records the index's stamp in `snap` and, for a sidecar key, links a copy of it aside.
    fn save_index(&self, snap: &mut Snapshot, save_index: Option<&str>, index_path: &Path, index_st: Option<Stamp>) {
        if let Some(st) = index_st {
            let mut copy = None;
            if let Some(key) = save_index {
                // Named after the snapshot, not only the call: a background command's new
                // baseline is taken while its previous one is still needed by the diff.
                let name = format!("{key}-{:x}.index", snap.time);
                let dest = bash_dir(self.project).join(&name);
                let _ = fs::remove_file(&dest);
                if save_index_copy(&bash_dir(self.project), index_path, &dest, st) {
                    copy = Some(name);
                }
            }
            snap.index = Some(IndexRef { copy, st });
        }
    }

    /// Asks the checkout's watcher what changed since `base` (src/watch.rs), behind its
    /// cookie; `start`: a Pre may start a watcher that does not run. Never waits more than
    /// `[bash] watch_ms`.
    fn ask_watcher(&mut self, base: Option<&Snapshot>, call: Option<&Call>, start: bool) -> WatchView {
        let view = self.ask_watcher_inner(base, call, start);
        // A full scan after the wait gets its whole `[bash] max_ms`.
        self.deadline = Instant::now() + Duration::from_millis(self.cfg.bash.max_ms.max(1));
        view
    }

    fn ask_watcher_inner(&self, base: Option<&Snapshot>, call: Option<&Call>, start: bool) -> WatchView {
        let why = |w: &str| WatchView { clock: None, paths: None, why: Some(w.to_string()) };
        if !self.cfg.bash.watcher {
            return why(WATCH_OFF);
        }
        let Some(workdir) = self.repo.as_ref().and_then(|r| r.workdir()) else {
            return why("not a git checkout (a bounded walk)");
        };
        let places = match crate::watch::Places::of(workdir) {
            Ok(p) => p,
            Err(e) => return why(&e.to_string()),
        };
        let session = call.and_then(|c| {
            c.claude.map(|(pid, start)| crate::watch::SessionRef { id: c.session.to_string(), pid, start })
        });
        let since = base.and_then(|b| b.clock.as_ref());
        let wait = Duration::from_millis(self.cfg.bash.watch_ms.max(1));
        match crate::watch::sync(&places, &self.project.dir, since, session, wait) {
            Ok(a) => {
                let clock = Some(crate::watch::Clock { epoch: a.epoch, seq: a.seq });
                match (a.paths, a.doubt) {
                    (Some(paths), None) if since.is_some() => {
                        let rels = paths
                            .into_iter()
                            .filter_map(|p| p.strip_prefix(self.prefix.as_str()).map(str::to_string))
                            .filter(|p| !p.is_empty() && p != ".walj" && !p.starts_with(".walj/"))
                            .collect();
                        WatchView { clock, paths: Some(rels), why: None }
                    }
                    (_, d) => WatchView { clock, paths: None, why: Some(d.unwrap_or_else(|| "no clock".into())) },
                }
            }
            Err(e) => {
                if start && matches!(e, crate::watch::Why::NotRunning | crate::watch::Why::Stale(_)) {
                    let session = call.and_then(|c| {
                        c.claude.map(|(pid, start)| crate::watch::SessionRef { id: c.session.to_string(), pid, start })
                    });
                    start_watcher(self.project, &places, session.as_ref());
                }
                why(&e.to_string())
            }
        }
    }

    /// A snapshot from `base` and the paths the watcher says changed since: each is looked at
    /// again (a folder, or a path that is gone: everything known under it too).
    fn take_watched(&mut self, snap: &mut Snapshot, base: &Snapshot, paths: &[String]) -> Result<(), SnapError> {
        snap.files = base.files.clone();
        snap.listed = true;
        let mut seen: HashSet<String> = HashSet::new();
        // What the base could not read yet is read now: a cut-short snapshot heals here.
        let cut: Vec<String> = base.files.iter().filter(|(_, f)| unread(f)).map(|(p, _)| p.clone()).collect();
        for p in cut {
            if seen.insert(p.clone()) {
                self.refresh(snap, base, &p)?;
            }
        }
        for rel in paths {
            if rel.split('/').any(|c| c == ".git" || c == ".walj") {
                continue;
            }
            let abs = self.project.root.join(rel);
            let is_file = fs::symlink_metadata(&abs).is_ok_and(|m| !m.is_dir());
            let mut todo = vec![rel.clone()];
            if !is_file {
                let under = format!("{rel}/");
                todo.extend(base.files.keys().filter(|k| k.starts_with(&under)).cloned());
                let top = self.prefix.clone();
                let prefix = format!("{top}{under}");
                let entries = self.current_index();
                let start = entries.partition_point(|e| e.path.as_bytes() < prefix.as_bytes());
                todo.extend(
                    entries[start..]
                        .iter()
                        .take_while(|e| e.path.starts_with(&prefix))
                        .filter_map(|e| e.path.strip_prefix(top.as_str()).map(str::to_string)),
                );
            }
            for p in todo {
                if seen.insert(p.clone()) {
                    self.refresh(snap, base, &p)?;
                }
            }
        }
        snap.cut_short = snap.files.values().any(unread);
        Ok(())
    }

    /// The current git index (read once per hook).
    fn current_index(&mut self) -> &[gitindex::Entry] {
        if self.index.is_none() {
            let read = self.repo.as_ref().and_then(|r| read_index(r, &r.path().join("index")).ok());
            self.index = Some(read.unwrap_or_default());
        }
        self.index.as_deref().unwrap_or(&[])
    }

    fn tracked(&mut self, rel: &str) -> bool {
        let path = format!("{}{rel}", self.prefix);
        gitindex::find(self.current_index(), &path).is_some()
    }

    /// One path of a watched snapshot, as a full scan would list it: a file that exists is
    /// listed unless git ignores it and does not track it; a gone one is `absent` when git
    /// tracks it, else not listed.
    fn refresh(&mut self, snap: &mut Snapshot, base: &Snapshot, rel: &str) -> Result<(), SnapError> {
        let abs = self.project.root.join(rel);
        match fs::symlink_metadata(&abs) {
            Ok(m) if m.is_dir() => {
                snap.files.remove(rel);
            }
            Ok(_) => {
                let listed = base.files.contains_key(rel);
                let ignored = !listed
                    && self
                        .repo
                        .as_ref()
                        .is_some_and(|r| r.is_path_ignored(format!("{}{rel}", self.prefix)).unwrap_or(false));
                if ignored && !self.tracked(rel) {
                    snap.files.remove(rel);
                    return Ok(());
                }
                let cached = base.files.get(rel).map(|f| (f, base.time));
                let state = self.file_state(rel, cached, &mut snap.cut_short)?;
                snap.files.insert(rel.to_string(), state);
            }
            Err(_) => {
                if self.tracked(rel) {
                    snap.files.insert(rel.to_string(), FileState { absent: true, ..FileState::default() });
                } else {
                    snap.files.remove(rel);
                }
            }
        }
        Ok(())
    }

    fn take_scan(&mut self, snap: &mut Snapshot, cache: Option<&Snapshot>) -> Result<(), SnapError> {
        let max_files = self.cfg.bash.max_files;
        snap.listed = true;
        let mut stack = vec![(self.project.root.clone(), String::new())];
        let mut count = 0usize;
        while let Some((dir, rel_dir)) = stack.pop() {
            // A name that is not UTF-8 is kept mapped (`fsutil::name`), never left out.
            let mut names: Vec<(String, fs::FileType)> = match fs::read_dir(&dir) {
                Ok(rd) => rd
                    .flatten()
                    .filter_map(|e| Some((fsutil::name::encode_os(&e.file_name()).into_owned(), e.file_type().ok()?)))
                    .collect(),
                Err(_) => continue,
            };
            names.sort_by(|a, b| b.0.cmp(&a.0)); // reversed: the stack pops in name order
            let mut subdirs = Vec::new();
            for (name, ft) in names.into_iter().rev() {
                let rel = if rel_dir.is_empty() { name.clone() } else { format!("{rel_dir}/{name}") };
                if ft.is_dir() {
                    if matches!(name.as_str(), ".git" | ".hg" | ".svn" | ".jj") || rel == ".walj" {
                        continue;
                    }
                    subdirs.push((dir.join(fsutil::name::to_path(&name)), rel));
                    continue;
                }
                if count >= max_files || Instant::now() > self.deadline {
                    snap.cut_short = true;
                    snap.listed = false;
                    return Ok(());
                }
                count += 1;
                let cached = cache.and_then(|c| c.files.get(&rel).map(|f| (f, c.time)));
                let state = self.file_state(&rel, cached, &mut snap.cut_short)?;
                snap.files.insert(rel, state);
            }
            stack.extend(subdirs.into_iter().rev());
        }
        Ok(())
    }

    /// Stat (and, unless a cached id still holds, read and capture) one file.
    fn file_state(
        &mut self,
        rel: &str,
        cached: Option<(&FileState, i64)>,
        cut_short: &mut bool,
    ) -> Result<FileState, SnapError> {
        let abs = self.project.root.join(fsutil::name::to_path(rel));
        let meta = match fs::symlink_metadata(&abs) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(FileState { absent: true, ..Default::default() });
            }
            Err(_) => return Ok(FileState { special: true, ..Default::default() }),
        };
        if meta.file_type().is_symlink() {
            return Ok(self.link_state(&abs, &meta));
        }
        if !meta.file_type().is_file() {
            return Ok(FileState { special: true, ..Default::default() });
        }
        let st = Stamp::of(&meta);
        if let Some((c, cache_time)) = cached
            && c.st == Some(st)
            && !st.racy(cache_time)
            && let Some(id) = &c.id
            && (c.nocap.is_some() || self.store.reuse(id))
        {
            return Ok(FileState { id: Some(id.clone()), nocap: c.nocap.clone(), st: Some(st), ..Default::default() });
        }
        if Instant::now() > self.deadline || self.new_objects >= MAX_NEW_OBJECTS {
            *cut_short = true;
            return Ok(FileState { nocap: Some("cut_short".into()), st: Some(st), ..Default::default() });
        }
        let (id, nocap) = self.read_capture(&abs, rel, &meta)?;
        Ok(FileState { id, nocap, st: Some(st), ..Default::default() })
    }

    /// A symbolic link's state: its target read (never followed); the target text is the
    /// image (carried in the records, nothing stored). Gone meanwhile: absent.
    fn link_state(&mut self, abs: &Path, meta: &fs::Metadata) -> FileState {
        let st = Stamp::of(meta);
        match links::read_target(abs) {
            Ok(bytes) => FileState {
                id: Some(crate::journal::entry_kind::link_id(&bytes)),
                link: Some(links::text(&bytes)),
                st: Some(st),
                ..Default::default()
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => FileState { absent: true, ..Default::default() },
            Err(_) => FileState { special: true, ..Default::default() },
        }
    }

    /// Reads a file and queues its bytes for the store (unless too large / never captured).
    /// `(None, _)` when the file vanished meanwhile.
    fn read_capture(
        &mut self,
        abs: &Path,
        rel: &str,
        meta: &fs::Metadata,
    ) -> Result<(Option<String>, Option<String>), SnapError> {
        let len = meta.len();
        let unread = |e: io::Error| match e.kind() {
            io::ErrorKind::NotFound => Ok((None, None)),
            _ => Ok((None, Some(nocap::UNREADABLE.into()))),
        };
        let never = self.matcher.is_some_and(|m| m.never_capture(rel));
        let linked = crate::fsutil::is_hard_linked(meta) && !self.cfg.capture.hardlinks;
        if never || linked || len > self.cfg.capture.max_bytes {
            // Recorded by id only: hashed as it is read, never held in memory.
            let nocap = if never {
                nocap::NEVER_CAPTURE
            } else if linked {
                nocap::HARDLINK
            } else {
                nocap::TOO_LARGE
            };
            // Over the cap, a sampled identity: a huge file is never read in full in a hook.
            let id =
                if len > self.cfg.capture.max_bytes { crate::sampled::identity_of(abs) } else { file_blob_id(abs) };
            return id.map_or_else(unread, |id| Ok((Some(id), Some(nocap.into()))));
        }
        let bytes = match crate::fsutil::read_regular(abs) {
            Ok(b) => b,
            Err(e) => return unread(e),
        };
        let id = blob_id(&bytes);
        if bytes.len() as u64 > self.cfg.capture.max_bytes {
            return Ok((Some(id), Some(nocap::TOO_LARGE.into())));
        }
        if crate::secrets::secret_content(&bytes) {
            return Ok((Some(id), Some(nocap::NEVER_CAPTURE.into())));
        }
        // A file hook's image is carried in its journal line, not stored: written out here
        // (unsynced: the line is its durable copy) rather than stored again with syncs.
        if !self.store.reuse(&id) && !self.keep_recent(&id) {
            self.new_objects += 1;
            self.pending_bytes += bytes.len();
            self.pending.push((id.clone(), bytes));
            if self.pending_bytes > 64 << 20 {
                self.flush()?;
            }
        }
        Ok((Some(id), None))
    }

    /// Writes object `id` to the store from a recent journal line that carries it, if one does.
    fn keep_recent(&mut self, id: &str) -> bool {
        let store = &self.store;
        store.keep_recent(self.recent.get_or_insert_with(|| store.recently_carried()), id)
    }

    /// Stores the queued objects, several at a time: concurrent fsyncs share the file
    /// system's journal commits, which is most of the cost.
    fn flush(&mut self) -> Result<(), SnapError> {
        let mut items = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        items.sort_by(|a, b| a.0.cmp(&b.0));
        items.dedup_by(|a, b| a.0 == b.0);
        Ok(self.store.put_batch(&items)?)
    }

    /// Differences between two snapshots of this tree.
    fn diff(&mut self, pre: &Snapshot, now: &Snapshot) -> Result<Vec<Change>, SnapError> {
        let mut moved: BTreeSet<String> = BTreeSet::new();
        let mut paths: BTreeSet<&str> = pre.files.keys().map(String::as_str).collect();
        paths.extend(now.files.keys().map(String::as_str));
        let git = pre.mode == Mode::Git && now.mode == Mode::Git && self.repo.is_some();
        // The current index, read only when a path's other side must come from it (a command
        // that changed nothing, or only listed files, reads none: 100,000 entries cost ms).
        let index_moved = pre.index.as_ref().map(|i| i.st) != now.index.as_ref().map(|i| i.st);
        let needs_index =
            index_moved || paths.iter().any(|p| !pre.files.contains_key(*p) || !now.files.contains_key(*p));
        let current = if git && needs_index {
            self.index.take().or_else(|| self.repo.as_ref().and_then(|r| read_index(r, &r.path().join("index")).ok()))
        } else {
            None
        };
        // When the command changed the index (add, commit, checkout, reset, pull…), clean
        // files' bytes before it come from the saved index, and every path whose index
        // entry moved is a candidate.
        let mut old_index = None;
        if git && pre.index.as_ref().map(|i| i.st) != now.index.as_ref().map(|i| i.st) {
            let dir = bash_dir(self.project);
            old_index = pre
                .index
                .as_ref()
                .and_then(|i| {
                    let p = dir.join(i.copy.as_ref()?);
                    // Checked: the copy was not synced (a damaged one is as good as none).
                    let live = self.repo.as_ref().map(|r| r.path().join("index"));
                    let skip_hash = live.is_some_and(|l| gitindex::skips_hash(&l));
                    if !gitindex::intact(&p, Some(i.st.s), skip_hash) {
                        // Nor reused: the next command copies git's index again.
                        let _ = fs::remove_file(dir.join(last_copy_name(i.st)));
                        return None;
                    }
                    gitindex::read(&p).or_else(|| git2::Index::open(&p).ok().map(|i| gitindex::from_git2(&i)))
                })
                .map(|i| index_map(&i, &self.prefix));
            if let (Some(old), Some(cur)) = (&old_index, &current) {
                let cur = index_map(cur, &self.prefix);
                for (p, id) in old {
                    if cur.get(p) != Some(id) {
                        moved.insert(p.clone());
                    }
                }
                moved.extend(cur.keys().filter(|p| !old.contains_key(*p)).cloned());
            }
        }
        paths.extend(moved.iter().map(String::as_str));
        let prefix = self.prefix.clone();
        let in_current = |rel: &str| -> Option<(String, bool)> {
            gitindex::find(current.as_ref()?, &format!("{prefix}{rel}")).map(|e| (e.id(), links::is_link_mode(e.mode)))
        };
        let in_old = |rel: &str| -> Option<(String, bool)> {
            match &old_index {
                Some(m) => m.get(rel).cloned(),
                None => in_current(rel),
            }
        };
        let mut changes = Vec::new();
        let mut from_git: Vec<String> = Vec::new();
        let mut paths = paths.into_iter();
        while let Some(rel) = paths.next() {
            if changes.len() >= self.cfg.bash.max_changes.max(1) {
                // Past the bound every remaining candidate is named, never dropped.
                self.changes_cut = true;
                self.unlisted = std::iter::once(rel).chain(paths).map(str::to_string).collect();
                break;
            }
            let a = pre.files.get(rel);
            let b = now.files.get(rel);
            if a.is_some_and(|f| f.special) || b.is_some_and(|f| f.special) {
                continue;
            }
            if let (Some(a), Some(b)) = (a, b)
                && !a.absent
                && !b.absent
                && a.st.is_some()
                && a.st == b.st
                && !a.st.is_some_and(|s| s.racy(pre.time))
            {
                continue;
            }
            let before = match a {
                Some(f) => side_of(f),
                None if git => match in_old(rel) {
                    Some((id, true)) => self.git_link_side(&id),
                    Some((_, false)) if !self.git_bytes_are_disks(rel, current.as_deref()) => {
                        Side::NotCaptured(nocap::GIT_FORM.to_string())
                    }
                    Some((id, false)) => {
                        from_git.push(id.clone());
                        Side::Known { id, nocap: None, link: None }
                    }
                    None => {
                        // Not listed and not tracked: it did not exist, or was ignored and untouched.
                        if existed_untouched(&self.project.root.join(fsutil::name::to_path(rel)), pre.time) {
                            continue;
                        }
                        Side::Absent
                    }
                },
                None if !pre.cut_short || pre.listed => Side::Absent,
                None => {
                    if existed_untouched(&self.project.root.join(fsutil::name::to_path(rel)), pre.time) {
                        continue;
                    }
                    Side::Unknown
                }
            };
            let after = match b {
                Some(f) => side_of(f),
                None if git => match in_current(rel) {
                    Some((id, true)) => self.git_link_side(&id),
                    Some((_, false)) if !self.git_bytes_are_disks(rel, current.as_deref()) => self.disk_side(rel)?,
                    Some((id, false)) => {
                        from_git.push(id.clone());
                        Side::Known { id, nocap: None, link: None }
                    }
                    None => self.disk_side(rel)?,
                },
                None => self.disk_side(rel)?,
            };
            let after = if after == Side::Unknown { self.disk_side(rel)? } else { after };
            let same = match (&before, &after) {
                (Side::Absent, Side::Absent) => true,
                // A file holding `a.txt` and a link to `a.txt` have one blob id.
                (Side::Known { id: x, link: lx, .. }, Side::Known { id: y, link: ly, .. }) => {
                    x == y && lx.is_some() == ly.is_some()
                }
                _ => false,
            };
            if !same {
                changes.push(Change { rel: rel.to_string(), before, after });
            }
        }
        // Bytes named by a change must be in walj's store: copy them from git's objects.
        let needed: HashSet<&str> = changes
            .iter()
            .flat_map(|c| [&c.before, &c.after])
            .filter_map(|s| match s {
                Side::Known { id, nocap: None, link: None } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        let mut missing = HashSet::new();
        if let Some(repo) = &self.repo {
            for id in from_git.iter().filter(|id| needed.contains(id.as_str())) {
                if self.store.reuse(id) {
                    continue;
                }
                match git2::Oid::from_str(id).ok().and_then(|oid| repo.find_blob(oid).ok()) {
                    Some(blob) => self.pending.push((id.clone(), blob.content().to_vec())),
                    None => {
                        missing.insert(id.clone());
                    }
                }
            }
        }
        self.flush()?;
        for c in &mut changes {
            for s in [&mut c.before, &mut c.after] {
                if let Side::Known { id, nocap, link: None } = s
                    && nocap.is_none()
                    && (missing.contains(id.as_str()) || !self.store.contains(id))
                {
                    *nocap = Some("unavailable".into());
                }
            }
        }
        Ok(changes)
    }

    /// Whether git's blob of the clean tracked file `rel` is the disk's bytes
    /// ([`gitform::GitForm`]); `index`: the current index.
    fn git_bytes_are_disks(&mut self, rel: &str, index: Option<&[gitindex::Entry]>) -> bool {
        let Some(repo) = &self.repo else { return true };
        let path = format!("{}{rel}", self.prefix);
        let entry = index.and_then(|i| gitindex::find(i, &path));
        self.git_form.get_or_insert_with(|| gitform::GitForm::of(repo, index)).same_bytes(repo, &path, entry)
    }

    /// The side of a tracked link whose target git's objects hold as blob `id`; unknown when
    /// git lost it.
    fn git_link_side(&self, id: &str) -> Side {
        let blob =
            self.repo.as_ref().and_then(|repo| git2::Oid::from_str(id).ok().and_then(|oid| repo.find_blob(oid).ok()));
        match blob {
            Some(b) => Side::Known {
                id: crate::journal::entry_kind::link_id(b.content()),
                nocap: None,
                link: Some(links::text(b.content())),
            },
            None => Side::Unknown,
        }
    }

    /// The file as it is now on disk (read and captured).
    fn disk_side(&mut self, rel: &str) -> Result<Side, SnapError> {
        let abs = self.project.root.join(fsutil::name::to_path(rel));
        match fs::symlink_metadata(&abs) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Side::Absent),
            Ok(m) if m.file_type().is_symlink() => match links::read_target(&abs) {
                Ok(bytes) => Ok(Side::Known {
                    id: crate::journal::entry_kind::link_id(&bytes),
                    nocap: None,
                    link: Some(links::text(&bytes)),
                }),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Side::Absent),
                Err(_) => Ok(Side::Unknown),
            },
            Ok(m) if m.file_type().is_file() => match self.read_capture(&abs, rel, &m)? {
                (Some(id), nocap) => Ok(Side::Known { id, nocap, link: None }),
                (None, Some(_)) => Ok(Side::Unknown),
                (None, None) => Ok(Side::Absent),
            },
            _ => Ok(Side::Unknown),
        }
    }
}

/// A file a snapshot lists whose bytes it did not read yet (cut short).
fn unread(f: &FileState) -> bool {
    f.id.is_none() && !f.absent && !f.special && f.link.is_none()
}

/// Completes a Post snapshot from its comparison: a file the snapshot could not read (cut
/// short) that the comparison read gets its id, so the next snapshot starts from a whole base
/// instead of reading (and cutting short) again.
fn heal(now: &mut Snapshot, changes: &[Change]) {
    for c in changes {
        if let Side::Known { id, nocap, link: None } = &c.after
            && let Some(f) = now.files.get_mut(&c.rel)
            && unread(f)
        {
            f.id = Some(id.clone());
            f.nocap = nocap.clone();
        }
    }
    now.cut_short = !now.listed && now.cut_short || now.files.values().any(unread);
}

impl Tree<'_> {
    /// What comparing `pre` with `now` could not see: special files, files over the capture
    /// cap (sampled), unreadable ones; whether a change lacks an image because a snapshot was
    /// cut short, or a list was; and the paths past `[bash] max_changes`, all of them, stored as one
    /// object (their count and the first few in the record). A path counts once, whichever
    /// side saw it so.
    fn unseen(&mut self, pre: &Snapshot, now: &Snapshot, changes: &[Change]) -> crate::fold::Unseen {
        let list_cut = |s: &Snapshot| s.cut_short && !s.listed;
        let image_cut = changes.iter().any(|c| c.before == Side::Unknown || c.after == Side::Unknown);
        let mut u = unseen(pre, now);
        u.cut_short = list_cut(pre) || list_cut(now) || self.changes_cut || image_cut;
        if !self.unlisted.is_empty() {
            u.unlisted = self.unlisted.len();
            u.unlisted_sample = self.unlisted.iter().take(crate::fold::UNLISTED_SAMPLE).cloned().collect();
            let mut text = self.unlisted.join("\n");
            text.push('\n');
            u.unlisted_list = self.store.put(text.as_bytes()).ok();
            // And as a plain text file people read (`.walj/unlisted/<command>.txt`).
            let dir = self.project.dir.join("unlisted");
            let name = format!("{}.txt", &blob_id(pre.parent.as_bytes())[..16]);
            let written = fsutil::create_private_dir(&dir).and_then(|()| {
                let mut f = fsutil::open_private(
                    &dir.join(&name),
                    fs::OpenOptions::new().write(true).create(true).truncate(true),
                )?;
                io::Write::write_all(&mut f, text.as_bytes())
            });
            if written.is_ok() {
                u.unlisted_file = Some(format!(".walj/unlisted/{name}"));
            }
        }
        u
    }
}

/// [`Tree::unseen`]'s counts of files the snapshots could not compare.
fn unseen(pre: &Snapshot, now: &Snapshot) -> crate::fold::Unseen {
    let mut u = crate::fold::Unseen::default();
    let mut paths: BTreeSet<&str> = pre.files.keys().map(String::as_str).collect();
    paths.extend(now.files.keys().map(String::as_str));
    for p in paths {
        let sides = [pre.files.get(p), now.files.get(p)];
        let any = |f: &dyn Fn(&FileState) -> bool| sides.iter().flatten().any(|s| f(s));
        if any(&|s| s.special) {
            u.special += 1;
        } else if any(&|s| s.nocap.as_deref().is_some_and(|n| n.starts_with(nocap::UNREADABLE))) {
            u.unreadable += 1;
        } else if any(&|s| s.nocap.as_deref() == Some(nocap::TOO_LARGE)) {
            u.too_large += 1;
        }
    }
    u
}

fn side_of(f: &FileState) -> Side {
    if f.absent {
        Side::Absent
    } else if let Some(id) = &f.id {
        Side::Known { id: id.clone(), nocap: f.nocap.clone(), link: f.link.clone() }
    } else {
        Side::Unknown
    }
}

/// True when the file exists and has not been touched since `time_ns` (it was there before).
fn existed_untouched(abs: &Path, time_ns: i64) -> bool {
    fs::symlink_metadata(abs).is_ok_and(|m| {
        let st = Stamp::of(&m);
        st.m.max(st.c) + RACY_NS < time_ns
    })
}

/// Stage-0 index entries under `prefix`, keyed by project-relative path: (blob id, is a link).
fn index_map(index: &[gitindex::Entry], prefix: &str) -> HashMap<String, (String, bool)> {
    let mut m = HashMap::with_capacity(index.len());
    for e in index.iter().filter(|e| e.stage == 0) {
        if let Some(rel) = e.path.strip_prefix(prefix)
            && rel != ".walj"
            && !rel.starts_with(".walj/")
        {
            m.insert(rel.to_string(), (e.id(), links::is_link_mode(e.mode)));
        }
    }
    m
}

/// The repository's index entries: read directly, else through libgit2; none when the
/// repository has no index yet.
fn read_index(repo: &git2::Repository, path: &Path) -> Result<Vec<gitindex::Entry>, git2::Error> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    match gitindex::read(path) {
        Some(v) => Ok(v),
        None => Ok(gitindex::from_git2(&repo.index()?)),
    }
}

/// Child entry id: stable for (command, phase, path), unique among them.
fn child_id(parent: &str, phase: &str, rel: &str) -> String {
    blob_id(format!("{parent}\0{phase}\0{rel}").as_bytes())[..20].to_string()
}

fn child_records(
    matcher: Option<&Matcher>,
    snap: &Snapshot,
    changes: &[Change],
    phase: &str,
    background: bool,
) -> Vec<Record> {
    changes
        .iter()
        .map(|c| {
            let created = c.before == Side::Absent;
            let deleted = c.after == Side::Absent;
            let mut r = Record::new(op::APPLIED, &snap.session);
            r.id = child_id(&snap.parent, phase, &c.rel);
            r.tool = Some(tool::BASH.to_string());
            r.event = config::detect_event(matcher, &c.rel, tool::BASH, created, deleted);
            r.path = c.rel.clone();
            r.before = c.before.blob();
            r.after = c.after.blob();
            r.nocap = c.after.nocap().or(c.before.nocap()).map(str::to_string);
            r.parent = Some(snap.parent.clone());
            if c.before.link().is_some() || c.after.link().is_some() {
                r.kind = Some(crate::journal::entry_kind::SYMLINK.to_string());
                if let Some(t) = c.before.link() {
                    r = r.with(key::LINK_BEFORE, t);
                }
                if let Some(t) = c.after.link() {
                    r = r.with(key::LINK_AFTER, t);
                }
            }
            r = r.with(key::COMMAND, snap.command.clone());
            if let Some(a) = &snap.agent_id {
                r = r.with(key::AGENT_ID, a.clone());
                if let Some(t) = &snap.agent_type {
                    r = r.with(key::AGENT_TYPE, t.clone());
                }
            }
            if background {
                r = r.with(key::BACKGROUND, true);
            }
            r
        })
        .collect()
}
