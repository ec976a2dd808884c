//! A quick `git status` for snapshots: which files of the work tree may differ from the
//! index (modified, deleted) and which are untracked (not ignored).
//!
//! libgit2's status is exact but single-threaded, and its cost is one `lstat` per tracked
//! file, done one after the other. Here the tracked files are stat-ed by several threads
//! against the index's stat cache, while the calling thread walks the folders for
//! untracked files (asking libgit2's ignore rules only about names the index does not
//! know; folders unchanged since an earlier walk are not read again: `untracked.rs`). The
//! answer may contain files that are in fact clean (stat differs, content does not:
//! `touch`, a racily clean entry); callers hash what is listed, so that costs a read, never
//! a wrong result. It never misses a file whose stat differs from the index.

use std::fs;
use std::path::Path;

use git2::Repository;

use super::gitindex::Entry;
use super::untracked;
use crate::fsutil;

/// One path that may differ from the index (`/`-separated, relative to the project).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub rel: String,
    pub deleted: bool,
}

impl Listed {
    fn untracked(rel: String) -> Listed {
        Listed { rel, deleted: false }
    }
}

/// Indexes with fewer entries are stat-ed on the calling thread (`threads` is then 1).
pub(crate) const PARALLEL_MIN: usize = 256;

const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;
const S_IFGITLINK: u32 = 0o160000;

struct Tracked<'a> {
    /// Borrowed from the index entry (most files are only stat-ed).
    rel: &'a str,
    /// Where `rel`'s last `/` is (`None`: a file at the top); unix stats relative to the
    /// open folder, elsewhere by the whole path.
    #[cfg_attr(not(unix), allow(dead_code))]
    slash: Option<usize>,
    mtime: (i32, u32),
    ctime: (i32, u32),
    size: u32,
    ino: u32,
    mode: u32,
    /// Intent-to-add, conflicted or racily clean: always listed.
    always: bool,
    /// Submodule or sparse (skip-worktree) entry: never listed.
    skip: bool,
}

/// Files under `workdir/prefix` that may differ from `index`, and untracked files.
/// `threads` stat workers (1 = none); `cache`: the untracked walk's (src/bashsnap/untracked.rs);
/// `since_ns`: the base snapshot's time (a nested repository made since is listed, see
/// [`untracked::walk`]).
pub(crate) fn dirty_files(
    repo: &Repository,
    index: &[Entry],
    workdir: &Path,
    prefix: &str,
    threads: usize,
    cache: Option<&untracked::Cache>,
    since_ns: Option<i64>,
) -> Result<Vec<Listed>, git2::Error> {
    let index_mtime = fs::metadata(repo.path().join("index")).ok().map(|m| stamp_mtime(&m));
    let filemode = cfg!(unix) && repo.config().and_then(|c| c.get_bool("core.filemode")).unwrap_or(true);
    let mut tracked = Vec::with_capacity(index.len());
    let mut last_conflict: Option<&str> = None;
    for e in index {
        let Some(rel) = e.path.strip_prefix(prefix) else { continue };
        if rel.is_empty() || rel == ".walj" || rel.starts_with(".walj/") {
            continue;
        }
        // Conflicted paths have up to three entries, next to each other.
        if e.stage != 0 {
            if last_conflict == Some(rel) {
                continue;
            }
            last_conflict = Some(rel);
        }
        let racy = index_mtime.is_none_or(|im| e.mtime >= im);
        tracked.push(Tracked {
            rel,
            slash: rel.as_bytes().iter().rposition(|&b| b == b'/'),
            mtime: e.mtime,
            ctime: e.ctime,
            size: e.size,
            ino: e.ino,
            mode: e.mode,
            always: racy || e.stage != 0 || e.intent_to_add,
            skip: e.mode & S_IFMT == S_IFGITLINK || e.skip_worktree,
        });
    }
    let root = workdir.join(prefix);
    let threads = threads.clamp(1, 8);
    if threads == 1 {
        // No thread to start (about as long as stat-ing a few hundred files).
        let mut out = check_all(&root, &tracked, filemode);
        let mut untracked = Vec::new();
        untracked::walk(repo, &root, prefix, &known(&tracked), cache, since_ns, &mut untracked)?;
        out.extend(untracked.into_iter().map(Listed::untracked));
        return Ok(out);
    }
    let chunk = tracked.len().div_ceil(threads).max(1);
    let mut out = Vec::new();
    let walk = std::thread::scope(|s| {
        let workers: Vec<_> = tracked
            .chunks(chunk)
            .map(|part| {
                let root = &root;
                s.spawn(move || check_all(root, part, filemode))
            })
            .collect();
        // Meanwhile, untracked files (this thread: the repository handle is not Sync).
        let mut untracked = Vec::new();
        let walk = untracked::walk(repo, &root, prefix, &known(&tracked), cache, since_ns, &mut untracked);
        let mut lost = false;
        for w in workers {
            match w.join() {
                Ok(v) => out.extend(v),
                Err(_) => lost = true,
            }
        }
        out.extend(untracked.into_iter().map(Listed::untracked));
        if lost {
            // Never report a partial answer as complete: files would be missed.
            return Err(git2::Error::from_str("a stat worker panicked"));
        }
        walk
    });
    walk?;
    Ok(out)
}

/// Every tracked path, for the untracked walk.
fn known<'a>(tracked: &[Tracked<'a>]) -> untracked::Known<'a> {
    untracked::Known::new(tracked.iter().map(|t| t.rel).collect())
}

/// A file's stat, as far as the index compares it.
struct Stat {
    is_dir: bool,
    is_symlink: bool,
    size: u64,
    mtime: (i64, u32),
    ctime: (i64, u32),
    ino: u64,
    mode: u32,
}

/// Stats a run of tracked files. On unix, relative to an open folder (the index is sorted,
/// so neighbours share it): the kernel then resolves one name instead of a whole path,
/// which is half the cost of a stat.
#[cfg(unix)]
// The stat fields' types differ between platforms and rustix backends: the casts are needed.
#[allow(clippy::unnecessary_cast)]
fn check_all(root: &Path, part: &[Tracked<'_>], filemode: bool) -> Vec<Listed> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let mut out = Vec::new();
    let mut cur: Option<(&str, Option<std::os::fd::OwnedFd>)> = None;
    for t in part.iter().filter(|t| !t.skip) {
        let (dir, file) = match t.slash {
            Some(i) => (&t.rel[..i], &t.rel[i + 1..]),
            None => ("", t.rel),
        };
        if cur.as_ref().is_none_or(|(d, _)| *d != dir) {
            let fd = rustix::fs::open(
                root.join(fsutil::name::to_path(dir)),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok();
            cur = Some((dir, fd));
        }
        let st = match cur.as_ref().and_then(|(_, fd)| fd.as_ref()) {
            Some(fd) => rustix::fs::statat(fd, fsutil::name::to_path(file).as_ref(), AtFlags::SYMLINK_NOFOLLOW),
            // The folder is gone (or is a file now): so is the file.
            None => Err(rustix::io::Errno::NOENT),
        };
        let stat = match st {
            Ok(s) => {
                let fmt = s.st_mode as u32 & S_IFMT;
                Ok(Stat {
                    is_dir: fmt == 0o040000,
                    is_symlink: fmt == S_IFLNK,
                    size: s.st_size as u64,
                    mtime: (s.st_mtime as i64, s.st_mtime_nsec as u32),
                    ctime: (s.st_ctime as i64, s.st_ctime_nsec as u32),
                    ino: s.st_ino as u64,
                    mode: s.st_mode as u32,
                })
            }
            Err(e) => Err(e),
        };
        if let Some(l) = compare(t, stat.ok(), filemode) {
            out.push(l);
        }
    }
    out
}

#[cfg(not(unix))]
fn check_all(root: &Path, part: &[Tracked<'_>], filemode: bool) -> Vec<Listed> {
    part.iter()
        .filter(|t| !t.skip)
        .filter_map(|t| {
            let stat = fs::symlink_metadata(root.join(fsutil::name::to_path(t.rel))).ok().map(|m| {
                let (s, n) = stamp_mtime(&m);
                Stat {
                    is_dir: m.is_dir(),
                    is_symlink: m.file_type().is_symlink(),
                    size: m.len(),
                    mtime: (s as i64, n),
                    ctime: (s as i64, n),
                    ino: 0,
                    mode: 0,
                }
            });
            compare(t, stat, filemode)
        })
        .collect()
}

/// Compares one tracked file's stat (`None`: it is gone) with its index entry.
fn compare(t: &Tracked<'_>, stat: Option<Stat>, filemode: bool) -> Option<Listed> {
    let Some(st) = stat else {
        return Some(Listed { rel: t.rel.to_string(), deleted: true });
    };
    if st.is_dir {
        return Some(Listed { rel: t.rel.to_string(), deleted: true });
    }
    // Only a listed file gets its own copy of the path (most are clean).
    differs(t, &st, filemode).then(|| Listed { rel: t.rel.to_string(), deleted: false })
}

/// Whether a tracked file's stat differs from its index entry (or it is always listed).
fn differs(t: &Tracked<'_>, st: &Stat, filemode: bool) -> bool {
    if t.always {
        return true;
    }
    let want_link = t.mode & S_IFMT == S_IFLNK;
    if st.is_symlink != want_link || st.size as u32 != t.size {
        return true;
    }
    // Index times are 32-bit seconds; entries written without nanoseconds compare on seconds.
    let same = |disk: (i64, u32), idx: (i32, u32)| disk.0 as i32 == idx.0 && (idx.1 == 0 || disk.1 == idx.1);
    if !same(st.mtime, t.mtime) || (cfg!(unix) && !same(st.ctime, t.ctime)) {
        return true;
    }
    if t.ino != 0 && st.ino as u32 != t.ino {
        return true;
    }
    filemode && !want_link && (st.mode & 0o100 != 0) != (t.mode & 0o100 != 0)
}

fn stamp_mtime(m: &fs::Metadata) -> (i32, u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (m.mtime() as i32, m.mtime_nsec() as u32)
    }
    #[cfg(not(unix))]
    {
        let d = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).unwrap_or_default();
        (d.as_secs() as i32, d.subsec_nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::super::gitindex::tests::git;
    use super::*;

    /// Small indexes are stat-ed on the calling thread, big ones by workers: both list the
    /// same files (modified, deleted, untracked; ignored and clean ones left out).
    #[test]
    fn the_calling_thread_and_the_workers_list_the_same_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        for i in 0..40 {
            let f = root.join(format!("d{}/f{i}.txt", i % 5));
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(&f, format!("{i}\n")).unwrap();
        }
        fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-qm", "x"]);
        // Past git's racy-clean window, so clean files are not listed on their stat alone.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        git(root, &["update-index", "--refresh"]);
        fs::write(root.join("d1/f1.txt"), "changed, longer\n").unwrap();
        fs::remove_file(root.join("d2/f7.txt")).unwrap();
        fs::write(root.join("d3/new.txt"), "new\n").unwrap();
        fs::write(root.join("d3/noise.log"), "ignored\n").unwrap();
        let repo = Repository::open(root).unwrap();
        let index = super::super::gitindex::read(&repo.path().join("index")).unwrap();
        let list = |threads| {
            let mut v = dirty_files(&repo, &index, root, "", threads, None, None).unwrap();
            v.sort_by(|a, b| a.rel.cmp(&b.rel));
            v
        };
        let inline = list(1);
        let want = [("d1/f1.txt", false), ("d2/f7.txt", true), ("d3/new.txt", false)];
        let got: Vec<(&str, bool)> = inline.iter().map(|l| (l.rel.as_str(), l.deleted)).collect();
        assert_eq!(got, want);
        assert_eq!(list(3), inline);
    }
}
