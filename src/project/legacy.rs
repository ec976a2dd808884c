//! Journals in subfolders, written before one project root (docs/project-root.md).
//!
//! Before one root, a session started in a subfolder of a checkout (`cd pkg/core && claude`)
//! with `walj install --local`, `--user` or the plugin journaled into `pkg/core/.walj/`
//! (the hook preferred `$CLAUDE_PROJECT_DIR`). Now every session journals into the root's
//! `.walj/`. The contract:
//! - **A session live across the upgrade keeps its journal** ([`session_journal`]): its
//!   start record is in the subfolder's journal, so its later calls go there too and no call
//!   is split across two journals. Which journal a session writes is decided once and kept in
//!   a per-session marker under the runtime dir (`$XDG_RUNTIME_DIR/walj/sessions/<digest>`,
//!   where the failure marker lives: [`crate::failmark::dir`]); the marker goes at SessionEnd.
//!   The common case (no `.walj/` in the start folder, or the session started at the root)
//!   costs one `lstat`.
//! - **Old journals are found** ([`find`]): a bounded walk under the root (depth, folder
//!   count, skipping hidden and build folders and nested checkouts) for `*/.walj/journal.jsonl`.
//!   A journal counts only when its `.walj/` passes the ownership check
//!   ([`super::trust::standing`], whose one-time adoption rule applies): a clone cannot plant
//!   one. The messages of every command name them ([`crate::report`]'s callers), and
//!   `walj doctor` reports them.

use std::fs;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use super::{Project, to_slash, trust};
use crate::fsutil;

/// Folder names the scan never enters: build output and dependency trees.
const SKIPPED: &[&str] = &["node_modules", "target", "build", "dist", "vendor", "out", "__pycache__", "venv"];

/// How deep under the root the scan looks, and how many folders it reads at most.
const MAX_DEPTH: usize = 6;
const MAX_FOLDERS: usize = 20_000;

/// A subfolder journal walj made: its folder relative to the root (`pkg/core`) and its project.
#[derive(Debug, Clone)]
pub struct Legacy {
    pub rel: String,
    pub project: Project,
}

/// The journal the hook writes for `session` started in `start` (absolute) under the root of
/// `project`: `Some(project of the subfolder)` when the session's start record is in the
/// subfolder's own journal (a session live across the upgrade), else `None` (the root's).
/// `starting`: this event is the session's SessionStart (it starts in the root's journal);
/// `ending`: its SessionEnd (the marker is removed after this event).
pub fn session_journal(
    project: &Project,
    start: &Path,
    session: &str,
    starting: bool,
    ending: bool,
) -> Option<Project> {
    if session.is_empty() {
        return None;
    }
    // The root itself (the common case; the root is canonical): no `realpath`.
    if start == project.root {
        return None;
    }
    let start = fs::canonicalize(start).ok()?;
    if start == project.root || !start.starts_with(&project.root) {
        return None;
    }
    // The common case: the start folder has no `.walj` (one lstat).
    fs::symlink_metadata(start.join(".walj").join("journal.jsonl")).ok()?;
    let old = Project::at(start, None);
    let marker = marker_path(session);
    let chosen = match fsutil::read_regular(&marker).ok().and_then(|b| String::from_utf8(b).ok()) {
        Some(text) => Some(Path::new(text.trim()) == old.journal),
        None => {
            let old_one =
                !starting && trust::standing(&old) == trust::Standing::Own && holds_session(&old.journal, session);
            let named = if old_one { &old.journal } else { &project.journal };
            let _ = write_marker(&marker, named);
            Some(old_one)
        }
    };
    if ending {
        let _ = fs::remove_file(&marker);
    }
    chosen.filter(|&o| o).map(|_| old)
}

fn marker_path(session: &str) -> PathBuf {
    crate::failmark::dir().join("sessions").join(trust::digest16(session))
}

fn write_marker(marker: &Path, journal: &Path) -> io::Result<()> {
    if let Some(dir) = marker.parent() {
        fsutil::create_private_dir(dir)?;
    }
    fsutil::atomic_write(marker, journal.to_string_lossy().as_bytes(), Some(0o600))
}

/// True when `journal` has a record of `session` (its JSON `"session":"<id>"`). Read once
/// per session, through no link.
fn holds_session(journal: &Path, session: &str) -> bool {
    let Ok((mut file, _)) = fsutil::open_regular(journal) else { return false };
    let Ok(needle) = serde_json::to_string(session) else { return false };
    let needle = format!("\"session\":{needle}");
    let mut text = Vec::new();
    if file.read_to_end(&mut text).is_err() {
        return false;
    }
    memchr_find(&text, needle.as_bytes())
}

fn memchr_find(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// The name of the list of subfolder journals in `.walj/`, one folder (root-relative) a line;
/// a folder whose `.walj/` failed the ownership check is listed as `refused<TAB>folder`.
pub const LIST: &str = "legacy";

/// The prefix of a refused folder's line in [`LIST`].
const REFUSED: &str = "refused\t";

/// The prefix of a merged folder's line in [`LIST`] (`walj compact --merge-legacy`): never
/// read again.
pub const MERGED_PREFIX: &str = "merged\t";

/// The subfolder journals under `project`'s root that walj made ([`Legacy`]), found once:
/// the list in `.walj/legacy` when it exists (each folder checked again), else a bounded
/// walk ([`scan`]) plus the start folders Claude Code's projects folder names
/// ([`from_claude_projects`]), whose result is written there when `.walj/` is walj's own.
/// Sorted.
pub fn find(project: &Project) -> Vec<Legacy> {
    listed(project)
        .into_iter()
        .filter(|(_, refused)| !refused)
        .filter_map(|(rel, _)| {
            let old = Project::at(project.root.join(&rel), None);
            (old.journal.is_file() && trust::standing(&old) == trust::Standing::Own)
                .then_some(Legacy { rel, project: old })
        })
        .collect()
}

/// [`find`] without the walk: only what `.walj/legacy` lists (empty when no command has
/// made the list yet). For the hook's SessionStart, which never walks the tree.
pub fn find_listed(project: &Project) -> Vec<Legacy> {
    if fs::symlink_metadata(project.dir.join(LIST)).is_err() {
        return Vec::new();
    }
    find(project)
}

/// The subfolder journals found but refused by the ownership check (a tracked or linked
/// `.walj/`, another user's): (folder, why). Never read.
pub fn refused(project: &Project) -> Vec<(String, String)> {
    listed(project)
        .into_iter()
        .filter(|(_, refused)| *refused)
        .filter_map(|(rel, _)| {
            let old = Project::at(project.root.join(&rel), None);
            match trust::standing(&old) {
                trust::Standing::Foreign(why) => Some((rel, why.to_string())),
                trust::Standing::Absent => None,
                trust::Standing::Own => Some((rel, "not checked again (found refused before)".to_string())),
            }
        })
        .collect()
}

/// The folders of [`LIST`] (read, or found and written once), each with whether it was refused.
fn listed(project: &Project) -> Vec<(String, bool)> {
    let own = trust::standing(project) == trust::Standing::Own;
    if own && let Ok(bytes) = fsutil::read_regular(&project.dir.join(LIST)) {
        return String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with(MERGED_PREFIX))
            .map(|l| match l.strip_prefix(REFUSED) {
                Some(rel) => (rel.to_string(), true),
                None => (l.to_string(), false),
            })
            .filter(|(rel, _)| project.resolve_rel(rel).is_ok())
            .collect();
    }
    let (mut found, mut refused) = scan_all(project);
    for rel in from_claude_projects(project, crate::claude::paths::config_dir().as_deref()) {
        if found.iter().chain(&refused).any(|l| l.rel == rel) {
            continue;
        }
        let old = Project::at(project.root.join(&rel), None);
        match trust::standing(&old) {
            trust::Standing::Own => found.push(Legacy { rel, project: old }),
            trust::Standing::Foreign(_) => refused.push(Legacy { rel, project: old }),
            trust::Standing::Absent => {}
        }
    }
    found.sort_by(|a, b| a.rel.cmp(&b.rel));
    let mut out: Vec<(String, bool)> = found.into_iter().map(|l| (l.rel, false)).collect();
    out.extend(refused.into_iter().map(|l| (l.rel, true)));
    if own {
        let text: String =
            out.iter().map(|(rel, r)| if *r { format!("{REFUSED}{rel}\n") } else { format!("{rel}\n") }).collect();
        let _ = fsutil::atomic_write(&project.dir.join(LIST), text.as_bytes(), Some(0o600));
    }
    out
}

/// How many session folders of Claude Code's projects folder [`from_claude_projects`] reads
/// at most, and how many bytes of one transcript.
const MAX_SESSION_FOLDERS: usize = 2_000;
const TRANSCRIPT_HEAD: u64 = 64 * 1024;

/// The start folders under `project`'s root that hold a `.walj/journal.jsonl`, as Claude
/// Code's projects folder names them (`<config dir>/projects/<encoded start folder>/`, one
/// per folder a session was started in): a folder whose encoded name extends the root's is
/// read for the `cwd` of the first lines of one transcript (the encoding loses `/` and `.`).
/// Finds what the bounded walk skipped (deeper than its depth, under a build folder). Bounded:
/// [`MAX_SESSION_FOLDERS`] folders, one transcript's first [`TRANSCRIPT_HEAD`] bytes each.
pub fn from_claude_projects(project: &Project, config_dir: Option<&Path>) -> Vec<String> {
    let Some(dir) = config_dir.map(|d| d.join("projects")) else { return Vec::new() };
    let Ok(entries) = fs::read_dir(&dir) else { return Vec::new() };
    let prefix = format!("{}-", crate::claude::paths::encode_dir(&project.root));
    let mut out: Vec<String> = Vec::new();
    for e in entries.flatten().take(MAX_SESSION_FOLDERS) {
        if !e.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let Some(cwd) = transcript_cwd(&e.path()) else { continue };
        let cwd = fs::canonicalize(&cwd).unwrap_or(cwd);
        let Ok(rel) = cwd.strip_prefix(&project.root) else { continue };
        if rel.as_os_str().is_empty() || fs::symlink_metadata(cwd.join(".walj").join("journal.jsonl")).is_err() {
            continue;
        }
        let rel = to_slash(rel);
        if !out.contains(&rel) {
            out.push(rel);
        }
    }
    out.sort();
    out
}

/// The `cwd` of the first transcript line that has one, in one `*.jsonl` of `folder`.
fn transcript_cwd(folder: &Path) -> Option<PathBuf> {
    let entries = fs::read_dir(folder).ok()?;
    for e in entries.flatten().take(20) {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let Ok((file, _)) = fsutil::open_regular(&path) else { continue };
        let mut head = Vec::new();
        if file.take(TRANSCRIPT_HEAD).read_to_end(&mut head).is_err() {
            continue;
        }
        for line in head.split(|&b| b == b'\n') {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(line)
                && let Some(cwd) = v.get("cwd").and_then(|c| c.as_str())
                && Path::new(cwd).is_absolute()
            {
                return Some(PathBuf::from(cwd));
            }
        }
    }
    None
}

/// The bounded walk for subfolder journals walj made (see the module docs). Sorted.
pub fn scan(project: &Project) -> Vec<Legacy> {
    scan_all(project).0
}

/// The bounded walk: (journals walj made, journals whose `.walj/` the ownership check refused).
fn scan_all(project: &Project) -> (Vec<Legacy>, Vec<Legacy>) {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    let mut queue = vec![(project.root.clone(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = queue.pop() {
        seen += 1;
        if seen > MAX_FOLDERS {
            break;
        }
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let name = e.file_name();
            let name = name.to_string_lossy();
            let path = e.path();
            if name == ".walj" && dir != project.root && (ft.is_dir() || ft.is_symlink()) {
                if fs::symlink_metadata(path.join("journal.jsonl")).is_ok() || ft.is_symlink() {
                    let old = Project::at(dir.clone(), None);
                    let rel = dir.strip_prefix(&project.root).map(to_slash).unwrap_or_default();
                    match trust::standing(&old) {
                        trust::Standing::Own => out.push(Legacy { rel, project: old }),
                        trust::Standing::Foreign(_) => refused.push(Legacy { rel, project: old }),
                        trust::Standing::Absent => {}
                    }
                }
                continue;
            }
            if !ft.is_dir() {
                continue;
            }
            if name.starts_with('.') || SKIPPED.contains(&name.as_ref()) || depth + 1 > MAX_DEPTH {
                continue;
            }
            // A nested checkout (a submodule, a worktree inside this one) is its own project.
            if path.join(".git").exists() {
                continue;
            }
            queue.push((path, depth + 1));
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    refused.sort_by(|a, b| a.rel.cmp(&b.rel));
    (out, refused)
}

/// Forgets what was found (the next [`find`] scans again): after `walj compact --merge-legacy`.
pub fn forget(project: &Project) {
    let _ = fs::remove_file(project.dir.join(LIST));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_own_subfolder_journals_and_skips_build_folders() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        for sub in ["pkg/core", "node_modules/x", "a/.hidden"] {
            let p = Project::at(root.join(sub), None);
            p.ensure_dir().unwrap();
            fs::write(&p.journal, "{}\n").unwrap();
        }
        let found = scan(&Project::at(root, None));
        let rels: Vec<&str> = found.iter().map(|l| l.rel.as_str()).collect();
        assert_eq!(rels, ["pkg/core"]);
    }
}
