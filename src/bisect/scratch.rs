//! Scratch mode: the states live in a copy of the working tree, the user's own is never
//! written. The copy holds the tracked and untracked files (not the ignored ones unless
//! asked: a build folder is often large), without `.git` and `.walj`; `std::fs::copy`
//! clones the data where the file system can (reflinks on Btrfs and XFS through
//! `copy_file_range`). Then only the touched paths change from state to state.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::journal::Blob;

use super::BisectError;
use super::state::Content;

/// A folder of our own under the system's temp folder, removed when dropped.
pub struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub fn new() -> Result<TempDir, BisectError> {
        let base = std::env::temp_dir();
        for i in 0..100u32 {
            let nanos =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
            let path = base.join(format!("walj-bisect-{}-{nanos:08x}-{i}", std::process::id()));
            #[cfg(unix)]
            let b = {
                let mut b = fs::DirBuilder::new();
                std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
                b
            };
            #[cfg(not(unix))]
            let b = fs::DirBuilder::new();
            match b.create(&path) {
                Ok(()) => return Ok(TempDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(BisectError::Io { path, source: e }),
            }
        }
        Err(BisectError::Io { path: base, source: std::io::Error::other("no free name for a temp folder") })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// The files of the working tree to copy: with git, the tracked and untracked ones not
/// ignored (every file with `with_ignored`); without git, every file. Never `.git`, `.walj`.
pub fn files_to_copy(root: &Path, with_ignored: bool) -> Result<Vec<PathBuf>, BisectError> {
    let repo = if with_ignored { None } else { git2::Repository::open(root).ok().filter(|r| r.workdir().is_some()) };
    let Some(repo) = repo else {
        let mut out = Vec::new();
        walk(root, Path::new(""), &mut out)?;
        return Ok(out);
    };
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true).include_ignored(false).include_unmodified(true);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(|e| BisectError::Io { path: root.to_path_buf(), source: std::io::Error::other(e.to_string()) })?;
    let mut out = Vec::new();
    for s in statuses.iter() {
        if s.status().contains(git2::Status::WT_DELETED) {
            continue;
        }
        if let Ok(p) = s.path() {
            let rel = PathBuf::from(p);
            if !skipped(&rel) {
                out.push(rel);
            }
        }
    }
    Ok(out)
}

fn skipped(rel: &Path) -> bool {
    rel.components().next().is_some_and(|c| c.as_os_str() == ".git" || c.as_os_str() == ".walj")
}

fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<(), BisectError> {
    let dir = root.join(rel);
    let io = |e| BisectError::Io { path: dir.clone(), source: e };
    for e in fs::read_dir(&dir).map_err(io)? {
        let e = e.map_err(io)?;
        let r = rel.join(e.file_name());
        if skipped(&r) {
            continue;
        }
        if e.file_type().map_err(io)?.is_dir() {
            walk(root, &r, out)?;
        } else {
            out.push(r);
        }
    }
    Ok(())
}

/// A path from the journal as a relative path inside a tree (no `..`, not absolute).
pub fn inside(root: &Path, rel: &str) -> Result<PathBuf, BisectError> {
    let p = crate::fsutil::name::to_path(rel);
    if rel.is_empty() || !p.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(BisectError::Usage(format!("{rel:?} is not a path inside the project")));
    }
    Ok(root.join(p))
}

/// The scratch copy.
pub struct Scratch {
    pub root: PathBuf,
    /// What each touched path holds in the copy now.
    now: HashMap<String, Blob>,
}

impl Scratch {
    /// Copies the files of `from` (see [`files_to_copy`]) into `to`.
    pub fn copy(from: &Path, to: &Path, with_ignored: bool) -> Result<Scratch, BisectError> {
        for rel in files_to_copy(from, with_ignored)? {
            let (src, dest) = (from.join(&rel), to.join(&rel));
            let io = |e| BisectError::Io { path: src.clone(), source: e };
            if let Some(parent) = dest.parent() {
                fs::create_dir_all(parent).map_err(|e| BisectError::Io { path: parent.to_path_buf(), source: e })?;
            }
            let meta = fs::symlink_metadata(&src).map_err(io)?;
            if meta.file_type().is_symlink() {
                #[cfg(unix)]
                {
                    let target = fs::read_link(&src).map_err(io)?;
                    std::os::unix::fs::symlink(target, &dest).map_err(io)?;
                }
            } else if meta.is_file() {
                fs::copy(&src, &dest).map_err(io)?;
            }
        }
        Ok(Scratch { root: to.to_path_buf(), now: HashMap::new() })
    }

    /// Sets the touched paths to one state's contents (only the ones that differ).
    pub fn set(&mut self, contents: &BTreeMap<String, Content>) -> Result<(), BisectError> {
        for (rel, c) in contents {
            let blob = c.blob();
            if self.now.get(rel) == Some(&blob) {
                continue;
            }
            let abs = inside(&self.root, rel)?;
            let io = |e| BisectError::Io { path: abs.clone(), source: e };
            match c {
                Content::Absent => match fs::remove_file(&abs) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io(e)),
                },
                Content::Bytes(b) => {
                    if let Some(parent) = abs.parent() {
                        fs::create_dir_all(parent).map_err(io)?;
                    }
                    // A link in the copy is replaced, never written through.
                    if fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink()) {
                        fs::remove_file(&abs).map_err(io)?;
                    }
                    fs::write(&abs, b).map_err(io)?;
                }
            }
            self.now.insert(rel.clone(), blob);
        }
        Ok(())
    }
}
