//! Sessions whose hooks never fired, journaled anyway.
//!
//! Claude Code's hooks do not always fire (open reports of the VS Code extension running no
//! PreToolUse or UserPromptSubmit hook; a session started with hooks turned off). Such a
//! session reaches walj only through its transcript. At SessionStart walj compares the
//! project's recent transcripts with the journal: a transcript of a session the journal does
//! not know from walj's own hooks is imported ([`super::import`], the same rebuild as `walj
//! import`: every record marked `imported`, images stored first, records already in the journal
//! skipped, so importing again adds nothing), and the user is told once.
//!
//! Bounds, all on work: only transcripts changed since walj's journal began (sessions from
//! before walj are `walj import`'s, when asked) and in the last [`RECENT_DAYS`] days; a
//! transcript unchanged since it was last looked at is not read again
//! (`.walj/import/seen.json`: length and time per file); the session that is starting is left
//! to its own hooks. SessionStart imports at once only what is small
//! ([`INLINE_BYTES`], [`INLINE_JOURNAL`]); the rest is imported by the background fold
//! (`walj fold`, detached), whose note (`.walj/import/note`) the next SessionStart tells.
//!
//! Never for a project the user ran `walj uninstall` in (`.walj/import/uninstalled`, removed by
//! the next `walj install`, which also makes sessions from before it `walj import`'s alone),
//! and never with `[import] on_start = false`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{ImportError, ImportOptions, ImportReport, project_transcripts};
use crate::config::Config;
use crate::fold::Fold;
use crate::project::Project;

/// How far back SessionStart looks for sessions its hooks never saw.
pub(crate) const RECENT_DAYS: u64 = 7;
/// Transcripts SessionStart imports itself when they hold at most this many bytes in all
/// (more: the background fold imports them).
pub(crate) const INLINE_BYTES: u64 = 2 << 20;
/// …and the journal is at most this long (the import reads it whole to skip what it holds).
pub(crate) const INLINE_JOURNAL: u64 = 8 << 20;

fn dir(project: &Project) -> PathBuf {
    project.dir.join("import")
}

/// `.walj/import/uninstalled`: `walj uninstall` ran in this project; nothing is imported by
/// itself until `walj install` runs again.
pub(crate) fn uninstalled_path(project: &Project) -> PathBuf {
    dir(project).join("uninstalled")
}

/// `.walj/import/since`: when `walj install` ran again after a `walj uninstall` (sessions
/// before it were run without walj by choice).
fn since_path(project: &Project) -> PathBuf {
    dir(project).join("since")
}

fn seen_path(project: &Project) -> PathBuf {
    dir(project).join("seen.json")
}

fn note_path(project: &Project) -> PathBuf {
    dir(project).join("note")
}

fn claim_path(project: &Project) -> PathBuf {
    dir(project).join("claim")
}

/// Writes `text` to walj's own file `path` (0600, never through a link), replacing it.
fn write_own(path: &Path, text: &[u8]) -> io::Result<()> {
    if let Some(d) = path.parent() {
        fs::create_dir_all(d)?;
    }
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    let mut f = crate::fsutil::open_private(&tmp, fs::OpenOptions::new().write(true).create_new(true))?;
    io::Write::write_all(&mut f, text)?;
    fs::rename(&tmp, path)
}

/// `walj uninstall` ran in `project`: sessions from now on are not imported by themselves.
/// Only where walj's folder exists (a project walj never journaled has nothing to import).
pub(crate) fn mark_uninstalled(project: &Project) -> io::Result<()> {
    if !project.dir.is_dir() {
        return Ok(());
    }
    write_own(&uninstalled_path(project), now_ts().as_bytes())
}

/// `walj install` ran in `project`: after an uninstall, imports by themselves again, from now.
pub(crate) fn mark_installed(project: &Project) -> io::Result<()> {
    if !uninstalled_path(project).exists() {
        return Ok(());
    }
    write_own(&since_path(project), now_ts().as_bytes())?;
    fs::remove_file(uninstalled_path(project))
}

fn now_ts() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn parse_ts(t: &str) -> Option<SystemTime> {
    let t = chrono::DateTime::parse_from_rfc3339(t.trim()).ok()?;
    let ms = u64::try_from(t.timestamp_millis()).ok()?;
    UNIX_EPOCH.checked_add(Duration::from_millis(ms))
}

/// The time of the journal's first record (its first 64 KiB read): when walj began here.
fn journal_began(project: &Project) -> Option<SystemTime> {
    #[derive(Deserialize)]
    struct Ts {
        ts: Option<String>,
    }
    let (f, _) = crate::fsutil::open_regular(&project.journal).ok()?;
    for line in io::BufReader::new(f.take(64 * 1024)).split(b'\n') {
        let line = line.ok()?;
        if let Ok(Ts { ts: Some(t) }) = serde_json::from_slice(&line) {
            return parse_ts(&t);
        }
    }
    None
}

/// Whether SessionStart imports by itself here: `[import] on_start` and no `walj uninstall`.
pub(crate) fn enabled(project: &Project, cfg: &Config) -> bool {
    cfg.import.on_start && !uninstalled_path(project).exists()
}

/// A transcript's length and modification time (ns): unchanged, it is not read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp(u64, u128);

fn stamp(path: &Path) -> Option<Stamp> {
    let m = fs::metadata(path).ok()?;
    let t = m.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some(Stamp(m.len(), t))
}

/// Transcripts looked at: path → stamp (the most kept: the newest [`MAX_SEEN`]).
type Seen = BTreeMap<String, Stamp>;
const MAX_SEEN: usize = 4096;

fn load_seen(project: &Project) -> Seen {
    let Ok((mut f, m)) = crate::fsutil::open_regular(&seen_path(project)) else { return Seen::new() };
    if m.len() > 4 << 20 {
        return Seen::new();
    }
    let mut text = Vec::new();
    if f.read_to_end(&mut text).is_err() {
        return Seen::new();
    }
    serde_json::from_slice(&text).unwrap_or_default()
}

fn save_seen(project: &Project, mut seen: Seen) -> io::Result<()> {
    if seen.len() > MAX_SEEN {
        let mut by_time: Vec<(u128, String)> = seen.iter().map(|(k, s)| (s.1, k.clone())).collect();
        by_time.sort();
        for (_, k) in by_time.iter().take(seen.len() - MAX_SEEN) {
            seen.remove(k);
        }
    }
    write_own(&seen_path(project), &serde_json::to_vec(&seen).map_err(io::Error::other)?)
}

/// The session a transcript is of: its file name (`<session>.jsonl`), or for a subagent's
/// (`<session>/subagents/agent-<id>.jsonl`) the folder above `subagents`.
fn session_of(path: &Path) -> Option<String> {
    let parent = path.parent()?;
    if parent.file_name().is_some_and(|n| n == "subagents") {
        return Some(parent.parent()?.file_name()?.to_string_lossy().into_owned());
    }
    Some(path.file_stem()?.to_string_lossy().into_owned())
}

/// What SessionStart found to import.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Transcripts of sessions walj's hooks never saw, changed since they were last looked at.
    pub files: Vec<PathBuf>,
    /// Their bytes in all.
    pub bytes: u64,
    /// Transcripts of sessions the hooks journaled: remembered as looked at, not read.
    hooked: Vec<PathBuf>,
    stamps: BTreeMap<PathBuf, Stamp>,
}

impl Plan {
    /// Small enough for SessionStart itself ([`INLINE_BYTES`], [`INLINE_JOURNAL`]).
    pub(crate) fn inline(&self, project: &Project) -> bool {
        let journal = fs::metadata(&project.journal).map(|m| m.len()).unwrap_or(0);
        self.bytes <= INLINE_BYTES && journal <= INLINE_JOURNAL
    }
}

/// The transcripts of `project` under Claude Code's folder `config_dir` that hold sessions
/// `fold` (the journal) does not know from walj's hooks, other than `current` (the session
/// starting).
pub(crate) fn plan(project: &Project, fold: &Fold, current: &str, config_dir: &Path) -> Plan {
    let mut plan = Plan::default();
    let Some(began) = journal_began(project) else { return plan };
    let recent = SystemTime::now().checked_sub(Duration::from_secs(RECENT_DAYS * 24 * 3600));
    let reinstalled = fs::read_to_string(since_path(project)).ok().and_then(|t| parse_ts(&t));
    let since = [Some(began), recent, reinstalled].into_iter().flatten().max();
    let seen = load_seen(project);
    for f in project_transcripts(config_dir, &project.root, since) {
        let Some(session) = session_of(&f) else { continue };
        if session == current {
            continue;
        }
        let Some(st) = stamp(&f) else { continue };
        if seen.get(f.to_string_lossy().as_ref()) == Some(&st) {
            continue;
        }
        plan.stamps.insert(f.clone(), st);
        // Known from walj's own hooks (not only from an import or another machine's bundle):
        // the hooks fired; `walj import` adds what they missed when asked.
        if fold.session(&session).is_some_and(|s| !s.imported && !s.from_bundle) {
            plan.hooked.push(f);
            continue;
        }
        plan.bytes += st.0;
        plan.files.push(f);
    }
    plan
}

/// What an import by itself did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Imported {
    /// Sessions that gained records.
    pub sessions: BTreeSet<String>,
    /// Records added.
    pub records: usize,
    /// Transcripts that could not be read (named in the errors log).
    pub failed: usize,
}

impl Imported {
    /// The line the user is told (`None`: nothing was imported).
    pub(crate) fn message(&self) -> Option<String> {
        if self.records == 0 {
            return None;
        }
        let n = self.sessions.len();
        Some(format!(
            "walj: {n} Claude Code session{} of this project that walj's hooks never saw {} rebuilt from {} transcript{} ({} records, marked imported; `walj log` shows them; `[import] on_start = false` in .walj/config.toml turns this off)",
            if n == 1 { "" } else { "s" },
            if n == 1 { "was" } else { "were" },
            if n == 1 { "its" } else { "their" },
            if n == 1 { "" } else { "s" },
            self.records
        ))
    }
}

/// Imports `plan`'s transcripts and remembers every one looked at. `Ok(None)`: another import
/// runs (it will do the same).
pub(crate) fn run(project: &Project, plan: &Plan, config_dir: &Path) -> Result<Option<Imported>, ImportError> {
    let mut seen = load_seen(project);
    let mut done = Imported::default();
    if !plan.files.is_empty() {
        let claim = crate::retention::claim_file(claim_path(project))
            .or_else(|_| {
                fs::create_dir_all(dir(project)).and_then(|()| crate::retention::claim_file(claim_path(project)))
            })
            .map_err(|source| ImportError::CreateDir { path: dir(project), source })?;
        let Some(_claim) = claim else { return Ok(None) };
        let opts = ImportOptions { config_dir: Some(config_dir.to_path_buf()), progress: false };
        let report: ImportReport = super::import(project, &plan.files, &opts)?;
        for f in &report.files {
            if f.error.is_some() {
                done.failed += 1;
                continue;
            }
            if let Some(st) = plan.stamps.get(&f.path) {
                seen.insert(f.path.to_string_lossy().into_owned(), *st);
            }
            if f.added > 0 {
                done.sessions.extend(f.sessions.iter().cloned());
            }
        }
        done.records = report.added;
    }
    for f in &plan.hooked {
        if let Some(st) = plan.stamps.get(f) {
            seen.insert(f.to_string_lossy().into_owned(), *st);
        }
    }
    if !plan.files.is_empty() || !plan.hooked.is_empty() {
        save_seen(project, seen).map_err(|source| ImportError::CreateDir { path: dir(project), source })?;
    }
    Ok(Some(done))
}

/// Keeps `message` for the next SessionStart to tell (an import the background fold did).
pub(crate) fn keep_note(project: &Project, message: &str) -> io::Result<()> {
    let mut text = take_note(project).map(|t| format!("{t}\n")).unwrap_or_default();
    text.push_str(message);
    write_own(&note_path(project), text.as_bytes())
}

/// The note an earlier background import left, removed as it is read (told once).
pub(crate) fn take_note(project: &Project) -> Option<String> {
    let p = note_path(project);
    let (mut f, m) = crate::fsutil::open_regular(&p).ok()?;
    let mut text = String::new();
    let ok = m.len() <= 64 * 1024 && f.read_to_string(&mut text).is_ok();
    let _ = fs::remove_file(&p);
    (ok && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// The background fold's part (`walj fold`): plans and imports without a time bound, and
/// keeps the note for the next SessionStart. `current`: the session whose SessionStart started
/// it (its start may still wait, unjournaled). Errors go to the errors log.
pub(crate) fn in_background(project: &Project, fold: &Fold, current: &str) {
    let (cfg, _) = Config::load_or_default(&project.config_path(), |_| {});
    if !enabled(project, &cfg) {
        return;
    }
    let Some(config_dir) = crate::claude::paths::config_dir() else { return };
    let plan = plan(project, fold, current, &config_dir);
    match run(project, &plan, &config_dir) {
        Ok(Some(done)) => {
            if let Some(m) = done.message()
                && let Err(e) = keep_note(project, &m)
            {
                crate::fsutil::append_log(&project.errors_log(), &format!("keeping the import's note: {e}"));
            }
        }
        Ok(None) => {}
        Err(e) => {
            crate::fsutil::append_log(&project.errors_log(), &format!("importing sessions walj's hooks never saw: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcripts_session_is_its_file_or_the_folder_above_subagents() {
        assert_eq!(session_of(Path::new("/c/projects/-p/abc.jsonl")).as_deref(), Some("abc"));
        assert_eq!(session_of(Path::new("/c/projects/-p/abc/subagents/agent-1.jsonl")).as_deref(), Some("abc"));
    }

    #[test]
    fn the_message_names_sessions_and_records_once_something_was_imported() {
        assert_eq!(Imported::default().message(), None);
        let i = Imported { sessions: ["s1".to_string()].into(), records: 7, failed: 0 };
        let m = i.message().unwrap();
        assert!(m.contains("1 Claude Code session of this project that walj's hooks never saw was rebuilt"), "{m}");
        assert!(m.contains("7 records"), "{m}");
    }
}
