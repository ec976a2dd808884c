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

/// The name of the list of subfolder journals in `.walj/`, one folder (root-relative) a line.
pub const LIST: &str = "legacy";

/// The subfolder journals under `project`'s root that walj made ([`Legacy`]), found once:
/// the list in `.walj/legacy` when it exists (each folder checked again), else a bounded
/// walk ([`scan`]) whose result is written there when `.walj/` is walj's own. Sorted.
pub fn find(project: &Project) -> Vec<Legacy> {
    let list = project.dir.join(LIST);
    if trust::standing(project) == trust::Standing::Own
        && let Ok(bytes) = fsutil::read_regular(&list)
    {
        return String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|l| !l.is_empty() && project.resolve_rel(l).is_ok())
            .filter_map(|rel| {
                let old = Project::at(project.root.join(rel), None);
                (old.journal.is_file() && trust::standing(&old) == trust::Standing::Own)
                    .then(|| Legacy { rel: rel.to_string(), project: old })
            })
            .collect();
    }
    let found = scan(project);
    if trust::standing(project) == trust::Standing::Own {
        let text: String = found.iter().map(|l| format!("{}\n", l.rel)).collect();
        let _ = fsutil::atomic_write(&list, text.as_bytes(), Some(0o600));
    }
    found
}

/// The bounded walk for subfolder journals walj made (see the module docs). Sorted.
pub fn scan(project: &Project) -> Vec<Legacy> {
    let mut out = Vec::new();
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
            if !ft.is_dir() {
                continue;
            }
            let name = e.file_name();
            let name = name.to_string_lossy();
            let path = e.path();
            if name == ".walj" {
                if dir != project.root && path.join("journal.jsonl").is_file() {
                    let old = Project::at(dir.clone(), None);
                    if trust::standing(&old) == trust::Standing::Own {
                        let rel = dir.strip_prefix(&project.root).map(to_slash).unwrap_or_default();
                        out.push(Legacy { rel, project: old });
                    }
                }
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
    out
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
