//! What a batch of reverts (or undos) will do to folders, worked out before it runs, so that
//! `revert --dry-run` and the TUI's dialog say it: a deletion removes the folders it leaves
//! empty ([`super::place`], as git does), a write makes the folders its path needs. The rule
//! is the one the writes follow, applied to the disk as it is now and to the batch's own
//! earlier steps; nothing is written.

use std::collections::HashSet;
use std::fs;

use crate::project::{Project, WriteScope};

/// The folders of one batch, step by step: what earlier steps deleted, removed, wrote and made.
#[derive(Debug, Default)]
pub(crate) struct FolderPlan {
    /// Files the batch deletes (so far).
    gone: HashSet<String>,
    /// Folders its deletions left empty and removed.
    removed: HashSet<String>,
    /// Files it writes and folders those writes make.
    written: HashSet<String>,
    made: HashSet<String>,
}

/// The folders above `rel`, deepest first (`a/b/c.txt` → `a/b`, `a`).
fn parents(rel: &str) -> impl Iterator<Item = &str> {
    let mut at = rel.rfind('/').map(|i| &rel[..i]);
    std::iter::from_fn(move || {
        let dir = at?;
        at = dir.rfind('/').map(|i| &dir[..i]);
        Some(dir)
    })
}

impl FolderPlan {
    /// Whether folder `dir` is there at this step.
    fn exists(&self, project: &Project, dir: &str) -> bool {
        self.made.contains(dir)
            || (!self.removed.contains(dir)
                && fs::symlink_metadata(project.root.join(crate::fsutil::name::to_path(dir))).is_ok_and(|m| m.is_dir()))
    }

    /// The step deletes `rel`: the folders above it that it leaves empty, deepest first (as
    /// [`super::place`] removes them: never the top folder, nor one a write may not touch).
    pub(crate) fn delete(&mut self, project: &Project, scope: WriteScope, rel: &str) -> Vec<String> {
        self.gone.insert(rel.to_string());
        self.written.remove(rel);
        let mut out = Vec::new();
        for dir in parents(rel) {
            if !self.exists(project, dir) || project.write_dir(dir, scope, false).is_err() || !self.empty(project, dir)
            {
                break;
            }
            self.removed.insert(dir.to_string());
            self.made.remove(dir);
            out.push(dir.to_string());
        }
        out
    }

    /// Whether folder `dir` holds nothing once the steps so far ran.
    fn empty(&self, project: &Project, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        let below = |p: &String| p.strip_prefix(&prefix).is_some_and(|rest| !rest.is_empty());
        if self.written.iter().chain(&self.made).any(below) {
            return false;
        }
        let Ok(rd) = fs::read_dir(project.root.join(crate::fsutil::name::to_path(dir))) else { return false };
        rd.flatten().all(|e| {
            let name = crate::fsutil::name::encode_os(&e.file_name()).into_owned();
            let child = format!("{prefix}{name}");
            self.gone.contains(&child) || self.removed.contains(&child)
        })
    }

    /// The step writes `rel`: the folders it makes for it, from the top down.
    pub(crate) fn write(&mut self, project: &Project, rel: &str) -> Vec<String> {
        let mut out: Vec<String> =
            parents(rel).filter(|d| !self.exists(project, d)).map(str::to_string).collect::<Vec<_>>();
        out.reverse();
        for d in &out {
            self.made.insert(d.clone());
            self.removed.remove(d);
        }
        self.gone.remove(rel);
        self.written.insert(rel.to_string());
        out
    }
}

/// "remove the folders it leaves empty (n/e, n)" and the like, for a list of folders.
pub(crate) fn said(verb: &str, what: &str, folders: &[String]) -> Option<String> {
    if folders.is_empty() {
        return None;
    }
    let list: Vec<_> = folders.iter().map(|f| crate::present::text::safe(f).to_string()).collect();
    let noun = if folders.len() == 1 { "folder" } else { "folders" };
    Some(format!("{verb} the {noun} {what} ({})", list.join(", ")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn project() -> (tempfile::TempDir, Project) {
        let t = tempfile::tempdir().unwrap();
        let p = Project::at(t.path().canonicalize().unwrap(), None);
        (t, p)
    }

    #[test]
    fn a_moved_folders_files_deleted_remove_it_and_written_make_the_old_one() {
        let (t, p) = project();
        fs::create_dir_all(t.path().join("n/e")).unwrap();
        fs::write(t.path().join("n/a.txt"), "a").unwrap();
        fs::write(t.path().join("n/e/l.txt"), "l").unwrap();
        fs::write(t.path().join("keep.txt"), "k").unwrap();
        let mut f = FolderPlan::default();
        assert_eq!(f.write(&p, "d/e/l.txt"), ["d", "d/e"]);
        assert!(f.delete(&p, WriteScope::Project, "n/e/l.txt").contains(&"n/e".to_string()));
        assert_eq!(f.delete(&p, WriteScope::Project, "n/a.txt"), ["n"]);
        assert!(f.write(&p, "d/a.txt").is_empty(), "d was made by the first write");
        // The top folder is never removed, and a folder with another file stays.
        let mut g = FolderPlan::default();
        assert!(g.delete(&p, WriteScope::Project, "keep.txt").is_empty());
        assert!(g.delete(&p, WriteScope::Project, "n/a.txt").is_empty(), "n/e still holds l.txt");
    }
}
