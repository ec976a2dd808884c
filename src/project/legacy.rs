//! Journals in subfolders, left by walj builds that kept one journal per start folder
//! (never released: docs/project-root.md, "A journal in a subfolder").
//!
//! walj journals every session of a checkout into the root's `.walj/`; it reads no journal
//! beside it. One small detector remains: [`find`] names a subfolder holding a
//! `.walj/journal.jsonl`, so that the messages ([`crate::session::empty::legacy_lines`],
//! `walj doctor`) say it is there and how to read it: as a project of its own
//! ([`crate::session::empty::how_to_read`]; its lines are the journal's v1 lines, which every walj reads). The walk
//! is bounded (depth, folder count, skipping hidden and build folders and nested checkouts)
//! and made once: its result is kept in `.walj/legacy` when `.walj/` is walj's own.

use std::fs;
use std::path::Path;

use super::{Project, to_slash, trust};
use crate::fsutil;

/// Folder names the walk never enters: build output and dependency trees.
const SKIPPED: &[&str] = &["node_modules", "target", "build", "dist", "vendor", "out", "__pycache__", "venv"];

/// How deep under the root the walk looks, and how many folders it reads at most.
const MAX_DEPTH: usize = 6;
const MAX_FOLDERS: usize = 20_000;

/// The name of the list of subfolder journals in `.walj/`, one folder (root-relative) a line.
pub(crate) const LIST: &str = "legacy";

/// The subfolders under `project`'s root (root-relative, `/`-separated, sorted) that hold a
/// `.walj/journal.jsonl` (a regular file, through no link): the list in `.walj/legacy` when it
/// exists (each folder checked again), else the bounded walk, whose result is kept there.
pub(crate) fn find(project: &Project) -> Vec<String> {
    let holds = |rel: &str| {
        fs::symlink_metadata(project.root.join(rel).join(".walj").join("journal.jsonl")).is_ok_and(|m| m.is_file())
    };
    let own = trust::standing(project) == trust::Standing::Own;
    if own && let Ok(bytes) = fsutil::read_regular(&project.dir.join(LIST)) {
        // Lines of older lists (`refused<TAB>…`, `merged<TAB>…`) name no folder to show.
        return String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|l| !l.is_empty() && !l.contains('\t') && project.resolve_rel(l).is_ok() && holds(l))
            .map(str::to_string)
            .collect();
    }
    let found = walk(&project.root);
    if own {
        let text: String = found.iter().map(|rel| format!("{rel}\n")).collect();
        let _ = fsutil::atomic_write(&project.dir.join(LIST), text.as_bytes(), Some(0o600));
    }
    found
}

/// The bounded walk (see the module docs). Sorted.
fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut queue = vec![(root.to_path_buf(), 0usize)];
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
            if name == ".walj" && dir != root && ft.is_dir() {
                if fs::symlink_metadata(path.join("journal.jsonl")).is_ok_and(|m| m.is_file()) {
                    out.push(dir.strip_prefix(root).map(to_slash).unwrap_or_default());
                }
                continue;
            }
            if !ft.is_dir() || name.starts_with('.') || SKIPPED.contains(&name.as_ref()) || depth + 1 > MAX_DEPTH {
                continue;
            }
            // A nested checkout (a submodule, a worktree inside this one) is its own project.
            if path.join(".git").exists() {
                continue;
            }
            queue.push((path, depth + 1));
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_subfolder_journals_and_skips_build_and_hidden_folders() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        for sub in ["pkg/core", "node_modules/x", "a/.hidden"] {
            let p = Project::at(root.join(sub), None);
            p.ensure_dir().unwrap();
            fs::write(&p.journal, "{}\n").unwrap();
        }
        assert_eq!(walk(&root), ["pkg/core"]);
    }
}
