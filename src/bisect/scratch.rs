//! Scratch mode: the states live in a copy of the working tree, the user's own is never
//! written. The copy holds the tracked and untracked files (not the ignored ones unless
//! asked: a build folder is often large), without `.git` and `.walj`; `std::fs::copy`
//! clones the data where the file system can (reflinks on Btrfs and XFS through
//! `copy_file_range`). Then only the touched paths change from state to state.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fsutil::Dir;
use crate::fsutil::beneath::Kind;

use crate::journal::Blob;

use super::BisectError;
use super::state::Content;
use crate::fsutil::name::split_plain;

/// The files of the working tree to copy: with git, the tracked and untracked ones not
/// ignored (every file with `with_ignored`); without git, every file. Never `.git`, `.walj`.
pub(crate) fn files_to_copy(root: &Path, with_ignored: bool) -> Result<Vec<PathBuf>, BisectError> {
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

/// The scratch copy.
pub(crate) struct Scratch {
    pub root: PathBuf,
    /// The copy's root, open: every state is written beneath it, never through a link.
    dir: Arc<Dir>,
    /// What each touched path holds in the copy now.
    now: HashMap<String, Blob>,
    /// Files of the tree not copied, and why (under a link, gone meanwhile).
    pub not_copied: Vec<String>,
}

/// Why a path cannot be reached beneath a root: `Some(why)` for a refusal (a link or a
/// file on the way), `None` for another error.
fn refusal(rel: &str, e: &std::io::Error) -> Option<String> {
    if crate::fsutil::beneath::is_not_beneath(e) {
        Some(format!("{rel}: a symbolic link on the way (walj never writes through one)"))
    } else if e.kind() == std::io::ErrorKind::NotADirectory {
        Some(format!("{rel}: a parent is a file, not a folder"))
    } else {
        None
    }
}

impl Scratch {
    /// Copies the files of `from` (see [`files_to_copy`]) into `to` (an empty folder). Each
    /// file is opened beneath `from` through no link (a file under a linked folder is not
    /// copied, and named), a link is copied as a link (its target text, never followed), and
    /// each copy is created beneath `to` through no link.
    pub(crate) fn copy(from: &Path, to: &Path, with_ignored: bool) -> Result<Scratch, BisectError> {
        let src = Dir::open(from).map_err(|e| BisectError::Io { path: from.to_path_buf(), source: e })?;
        let dst = Dir::open(to).map_err(|e| BisectError::Io { path: to.to_path_buf(), source: e })?;
        let mut dirs: HashMap<PathBuf, (Dir, Dir)> = HashMap::new();
        let mut not_copied = Vec::new();
        for rel in files_to_copy(from, with_ignored)? {
            let slash = crate::project::to_slash(&rel);
            let Some((parent, name)) = split_plain(&slash) else { continue };
            let io = |e| BisectError::Io { path: from.join(&rel), source: e };
            if !dirs.contains_key(&parent) {
                let s = match src.open_beneath(&parent, false) {
                    Ok(d) => d,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue, // gone meanwhile
                    Err(e) => match refusal(&slash, &e) {
                        Some(why) => {
                            not_copied.push(why);
                            continue;
                        }
                        None => return Err(io(e)),
                    },
                };
                let d = dst.open_beneath(&parent, true).map_err(io)?;
                dirs.insert(parent.clone(), (s, d));
            }
            let Some((s, d)) = dirs.get(&parent) else { continue };
            match s.kind(&name).map_err(io)? {
                Kind::Link => {
                    if let Some(target) = s.read_link(&name).map_err(io)? {
                        match d.symlink(&target, &name) {
                            Ok(()) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
                                not_copied.push(format!("{slash}: a symbolic link (not made on this system)"))
                            }
                            Err(e) => return Err(io(e)),
                        }
                    }
                }
                Kind::File { mode, .. } => {
                    let Some((mut f, _)) = s.open_regular(&name).map_err(io)? else { continue };
                    let perm = if mode == 0 { 0o666 } else { mode & 0o777 };
                    let mut out = d.create_new(&name, perm).map_err(io)?;
                    // `copy_file_range` where the file system has it (reflinks on Btrfs, XFS).
                    std::io::copy(&mut f, &mut out).map_err(io)?;
                }
                _ => {}
            }
        }
        Ok(Scratch { root: to.to_path_buf(), dir: Arc::new(dst), now: HashMap::new(), not_copied })
    }

    /// Sets the touched paths to one state's contents (only the ones that differ), beneath
    /// the copy's root through no link, for writes and deletions alike. `Ok(Some(why))`: the
    /// state cannot be built there (a link or a file on the way): not built, named.
    pub(crate) fn set(&mut self, contents: &BTreeMap<String, Content>) -> Result<Option<String>, BisectError> {
        let mut refused = Vec::new();
        for (rel, c) in contents {
            let blob = c.blob();
            if self.now.get(rel) == Some(&blob) {
                continue;
            }
            let Some((parent, name)) = split_plain(rel) else {
                return Err(BisectError::Usage(format!("{rel:?} is not a path inside the project")));
            };
            let abs = self.root.join(crate::fsutil::name::to_path(rel));
            let io = |e| BisectError::Io { path: abs.clone(), source: e };
            match c {
                Content::Absent => {
                    let d = match self.dir.open_beneath(&parent, false) {
                        Ok(d) => d,
                        // No folder, or a file where it would be: the path is absent already.
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                            self.now.insert(rel.clone(), blob);
                            continue;
                        }
                        Err(e) => match refusal(rel, &e) {
                            Some(why) => {
                                refused.push(why);
                                continue;
                            }
                            None => return Err(io(e)),
                        },
                    };
                    match d.kind(&name).map_err(io)? {
                        Kind::Missing => {}
                        Kind::Dir => {
                            refused.push(format!("{rel}: a folder in the copy where the state has no file"));
                            continue;
                        }
                        _ => d.remove(&name, false).map_err(io)?,
                    }
                }
                Content::Bytes(b) => {
                    let d = match self.dir.open_beneath(&parent, true) {
                        Ok(d) => d,
                        Err(e) => match refusal(rel, &e) {
                            Some(why) => {
                                refused.push(why);
                                continue;
                            }
                            None => return Err(io(e)),
                        },
                    };
                    let mode = match d.kind(&name).map_err(io)? {
                        Kind::File { mode, .. } => Some(mode),
                        // A link in the copy is replaced (a new file at its name), never written through.
                        Kind::Missing | Kind::Link | Kind::Other => None,
                        Kind::Dir => {
                            refused.push(format!("{rel}: a folder in the copy where the state has a file"));
                            continue;
                        }
                    };
                    let staged = crate::fsutil::stage_in(Arc::new(d), &name, b, mode).map_err(io)?;
                    staged.commit().map_err(io)?;
                }
            }
            self.now.insert(rel.clone(), blob);
        }
        Ok(if refused.is_empty() { None } else { Some(refused.join("; ")) })
    }
}
