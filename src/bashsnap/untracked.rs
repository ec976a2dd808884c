//! The untracked walk of a snapshot, and the cache that lets it skip folders that did not
//! change (git's "untracked cache", kept by walj in `.walj/bash/untracked.cache`).
//!
//! A folder's list of names changes only when an entry is created, removed or renamed in
//! it, and each of those sets the folder's mtime and ctime. So a folder whose stat (mtime,
//! ctime, size, inode) is the one recorded when it was last read still holds the names it
//! held then: its untracked files are the recorded ones and its sub-folders the recorded
//! ones, which are looked at in turn. One `lstat` of the folder (and one of its
//! `.gitignore`) replaces opening and reading it. A file's *contents* are never taken from
//! here: every listed untracked file is stat-ed and compared by the snapshot as before.
//!
//! The contract, each part of which falls back to reading the folder:
//! - **Trusted only when it cannot lie.** A folder changed less than `racy_ns` (2 s) before
//!   the walk began is read again at the next walk (a change in the same timestamp tick
//!   would not show); its record then vouches only for its `.gitignore`, so the folders
//!   below it keep theirs, unless that `.gitignore` is as new. Only on file systems known to
//!   keep folder times (Linux: ext4, xfs, btrfs, tmpfs, f2fs, zfs, bcachefs; elsewhere no
//!   cache is used).
//! - **Same rules.** The cache names a fingerprint of what decides "untracked, not ignored":
//!   the index's stat (a `git add` changes what is tracked), `info/exclude`, the global
//!   excludes file, `core.ignorecase`, and the `.gitignore` of each folder above the walk's
//!   root. Any difference, or any of them changed within `racy_ns`, and the whole walk reads
//!   every folder. A folder whose own `.gitignore` changed is read with everything below it.
//! - **Nested repositories** are recognised when a folder is entered, so a `.git` made or
//!   removed in a sub-folder (which changes that folder, not its parent) is seen.
//! - **Any writer, any age.** Every entry is checked against the folder as it is now, so an
//!   old, torn-free but stale cache (another hook's, or one from before a crash) costs reads,
//!   never a missed file. The file is replaced by rename, written only when it changed, and
//!   never fsynced: losing it costs one full walk.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use git2::Repository;
use serde::{Deserialize, Serialize};

use super::Stamp;
use crate::fsutil;

/// The cache format version.
const V: u32 = 1;

/// Where a walk keeps its cache and what it must match.
#[derive(Debug, Clone)]
pub(crate) struct Cache {
    pub path: PathBuf,
    /// [`fingerprint`] of the rules the walk ran under.
    pub fp: String,
    /// Folders changed this close to the walk's start are not trusted nor recorded.
    pub racy_ns: i64,
}

/// What the walk did (its tests count it).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WalkStats {
    /// Folders read (`readdir`).
    pub read: usize,
    /// Folders taken from the cache.
    pub cached: usize,
}

/// Tracked paths (sorted, `/`-separated, relative to the walk's root) and the folders that
/// hold them, answered by binary search: no set of 100,000 paths is built per hook.
pub(crate) struct Known<'a> {
    paths: Vec<&'a str>,
}

impl<'a> Known<'a> {
    pub(crate) fn new(mut paths: Vec<&'a str>) -> Known<'a> {
        // git writes its index sorted byte-wise; an index read through libgit2 may not be.
        if !paths.is_sorted() {
            paths.sort_unstable();
        }
        Known { paths }
    }

    /// The entries under `dir/` (all of them for the root).
    fn under(&self, dir: &str) -> &[&'a str] {
        if dir.is_empty() {
            return &self.paths;
        }
        let lo = self.paths.partition_point(|p| cmp_dir(p, dir).is_lt());
        let hi = lo + self.paths[lo..].partition_point(|p| cmp_dir(p, dir).is_eq());
        &self.paths[lo..hi]
    }
}

/// Orders `p` against the paths under `dir/`: Less before them, Equal inside, Greater after.
fn cmp_dir(p: &str, dir: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (p, d) = (p.as_bytes(), dir.as_bytes());
    let n = d.len().min(p.len());
    match p[..n].cmp(&d[..n]) {
        Ordering::Equal if p.len() <= d.len() => Ordering::Less,
        Ordering::Equal => p[d.len()].cmp(&b'/'),
        o => o,
    }
}

/// `name` inside the entries `under` some folder whose paths start with `base` (`dir/`, or
/// empty at the root): a tracked file, a folder holding tracked files, or neither.
fn lookup(under: &[&str], base: &str, name: &str) -> (bool, bool) {
    let cmp = |p: &str| -> std::cmp::Ordering {
        let rest = &p.as_bytes()[base.len().min(p.len())..];
        let n = name.as_bytes();
        let k = rest.len().min(n.len());
        match rest[..k].cmp(&n[..k]) {
            std::cmp::Ordering::Equal => rest.len().cmp(&n.len()),
            o => o,
        }
    };
    let i = under.partition_point(|p| cmp(p).is_lt());
    let file = under.get(i).is_some_and(|p| cmp(p).is_eq());
    // A folder: some path continues `base + name` with a `/`. Such paths sort after
    // `base + name` itself and before any name that extends it with a byte above `/`; the
    // ones between (`name!`, `name-x`, `name.txt` …) are skipped with a second search.
    let j = i + usize::from(file);
    let dir_lo = j + under[j..].partition_point(|p| {
        let rest = &p.as_bytes()[base.len().min(p.len())..];
        let n = name.as_bytes();
        rest.len() > n.len() && rest.starts_with(n) && rest[n.len()] < b'/'
    });
    let dir = under.get(dir_lo).is_some_and(|p| {
        let rest = &p.as_bytes()[base.len().min(p.len())..];
        let n = name.as_bytes();
        rest.len() > n.len() && rest.starts_with(n) && rest[n.len()] == b'/'
    });
    (file, dir)
}

/// One folder as it was last read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Folder {
    /// The folder's stat when it was read (taken before reading it).
    st: Stamp,
    /// Its `.gitignore`'s stat, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gi: Option<Stamp>,
    /// Untracked, not ignored files (names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    f: Vec<String>,
    /// Sub-folders walked (names): tracked ones and untracked ones not ignored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    d: Vec<String>,
    /// The folder changed within `racy_ns` of the walk: its names are not trusted (it is read
    /// again), only its `.gitignore`'s stat, so the folders below keep their records.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    racy: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct File {
    v: u32,
    fp: String,
    prefix: String,
    dirs: HashMap<String, Folder>,
}

fn load(c: &Cache, prefix: &str) -> HashMap<String, Folder> {
    let Ok(bytes) = fsutil::read_regular(&c.path) else { return HashMap::new() };
    match serde_json::from_slice::<File>(&bytes) {
        Ok(f) if f.v == V && f.fp == c.fp && f.prefix == prefix => f.dirs,
        _ => HashMap::new(),
    }
}

fn save(c: &Cache, prefix: &str, dirs: HashMap<String, Folder>) {
    let file = File { v: V, fp: c.fp.clone(), prefix: prefix.to_string(), dirs };
    let Ok(bytes) = serde_json::to_vec(&file) else { return };
    let tmp = c.path.with_extension(format!("tmp{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = fsutil::open_private(&tmp, fs::OpenOptions::new().write(true).create(true).truncate(true))?;
        std::io::Write::write_all(&mut f, &bytes)?;
        fs::rename(&tmp, &c.path)
    };
    if write().is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

fn stamp(path: &Path, follow: bool) -> Option<Stamp> {
    let m = if follow { fs::metadata(path) } else { fs::symlink_metadata(path) };
    m.ok().map(|m| Stamp::of(&m))
}

fn trusted(st: &Stamp, start: i64, racy_ns: i64) -> bool {
    st.m.max(st.c).saturating_add(racy_ns) < start
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") }
}

/// How much older than the base snapshot a nested repository's `.git` may look and still count
/// as made since (file times come from the kernel's coarse clock, up to a tick behind).
pub(super) const NESTED_NEW_NS: i64 = 20_000_000;

/// Untracked, not ignored files under `root` (= the work tree + `prefix`), recursing into
/// untracked folders, into `out`. With `cache`, folders unchanged since they were recorded
/// are not read (see the module's contract). A nested repository is not walked, unless its
/// `.git` was made since `since_ns` (the base snapshot's time, within [`NESTED_NEW_NS`]): the
/// files a command wrote into a folder it also `git init`s are that command's.
#[allow(clippy::too_many_arguments)]
pub(crate) fn walk(
    repo: &Repository,
    root: &Path,
    prefix: &str,
    known: &Known<'_>,
    cache: Option<&Cache>,
    since_ns: Option<i64>,
    out: &mut Vec<String>,
) -> Result<WalkStats, git2::Error> {
    let start = super::now_ns();
    let mut old = cache.map(|c| load(c, prefix)).unwrap_or_default();
    let mut new: HashMap<String, Folder> = HashMap::with_capacity(old.len());
    let mut stats = WalkStats::default();
    // The file is rewritten only when what it records changed.
    let mut changed = false;
    // (folder, read it and everything below it: its rules changed)
    let mut stack = vec![(String::new(), false)];
    while let Some((dir, force)) = stack.pop() {
        let abs = if dir.is_empty() { root.to_path_buf() } else { root.join(fsutil::name::to_path(&dir)) };
        let under = known.under(&dir);
        // A nested repository is not part of this one (checked on entering, so a `.git`
        // made or removed inside a recorded folder is seen).
        if !dir.is_empty() && under.is_empty() {
            let young = |m: &fs::Metadata| {
                let st = Stamp::of(m);
                since_ns.is_some_and(|t| st.m.max(st.c).saturating_add(NESTED_NEW_NS) >= t)
            };
            match fs::symlink_metadata(abs.join(".git")) {
                Ok(m) if young(&m) => {
                    // Made since the base: walked now, never recorded (the next walk skips it).
                    changed |= old.remove(&dir).is_some();
                    walk_young(&abs, &dir, out);
                    continue;
                }
                Ok(_) => {
                    changed |= old.remove(&dir).is_some();
                    continue;
                }
                Err(_) => {}
            }
        }
        let (st, gi) = match cache {
            Some(_) => match stamp(&abs, dir.is_empty()) {
                Some(st) => (Some(st), stamp(&abs.join(".gitignore"), true)),
                None => {
                    changed |= old.remove(&dir).is_some();
                    continue;
                }
            },
            None => (None, None),
        };
        let recorded = match old.remove(&dir) {
            Some(f) if !force && !f.racy && st == Some(f.st) && f.gi == gi => {
                stats.cached += 1;
                out.extend(f.f.iter().map(|n| join(&dir, n)));
                stack.extend(f.d.iter().map(|n| (join(&dir, n), false)));
                new.insert(dir, f);
                continue;
            }
            r => r,
        };
        stats.read += 1;
        changed |= recorded.is_some();
        let rules_changed = force || recorded.as_ref().is_none_or(|f| f.gi != gi);
        let Some(folder) = read(repo, &abs, &dir, prefix, under, st, gi, out)? else { continue };
        stack.extend(folder.d.iter().map(|n| (join(&dir, n), rules_changed)));
        let Some(c) = cache else { continue };
        // A `.gitignore` changed just now is not trusted either: the folders below are then
        // read in full next time (no record, so their rules count as changed).
        if folder.gi.as_ref().is_none_or(|g| trusted(g, start, c.racy_ns)) {
            let racy = !trusted(&folder.st, start, c.racy_ns);
            new.insert(dir, Folder { racy, ..folder });
            changed = true;
        }
    }
    if let Some(c) = cache {
        // Folders recorded but no longer walked (removed, now ignored) are dropped too.
        if changed || !old.is_empty() {
            save(c, prefix, new);
        }
    }
    Ok(stats)
}

/// A nested repository made since the base: every file in it goes to `out`. This repository's
/// ignore rules do not reach into it (to git it is one untracked entry, its files its own), so
/// none is applied: the files a command wrote there are the command's, whatever their names,
/// its `.git` too when that is a file (a gitlink). The watcher names them the same way
/// (`watch::server`, `in_nested`).
fn walk_young(abs: &Path, dir: &str, out: &mut Vec<String>) {
    let mut stack = vec![(abs.to_path_buf(), dir.to_string())];
    while let Some((d, rel)) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for ent in rd.flatten() {
            let name = fsutil::name::encode_os(&ent.file_name()).into_owned();
            let Ok(ft) = ent.file_type() else { continue };
            // Git's own folder stays out; a `.git` file (a gitlink: a worktree's, a
            // submodule's) is the command's like the rest.
            if name == ".git" && !ft.is_file() {
                continue;
            }
            let inner = join(&rel, &name);
            if ft.is_dir() {
                stack.push((ent.path(), inner));
            } else {
                out.push(inner);
            }
        }
    }
}

/// Reads one folder: its untracked files go to `out`, and the folder's record is returned
/// (`None`: it cannot be read).
#[allow(clippy::too_many_arguments)]
fn read(
    repo: &Repository,
    abs: &Path,
    dir: &str,
    prefix: &str,
    under: &[&str],
    st: Option<Stamp>,
    gi: Option<Stamp>,
    out: &mut Vec<String>,
) -> Result<Option<Folder>, git2::Error> {
    let Ok(rd) = fs::read_dir(abs) else { return Ok(None) };
    let base = if dir.is_empty() { String::new() } else { format!("{dir}/") };
    let mut folder = Folder { st: st.unwrap_or_default(), gi, f: Vec::new(), d: Vec::new(), racy: false };
    for ent in rd.flatten() {
        // A name that is not UTF-8 is listed mapped (`fsutil::name`), never left out.
        let os_name = ent.file_name();
        let name = fsutil::name::encode_os(&os_name);
        if name == ".git" || (dir.is_empty() && name == ".walj") {
            continue;
        }
        let Ok(ft) = ent.file_type() else { continue };
        let (is_file, is_dir) = lookup(under, &base, &name);
        if ft.is_dir() {
            if !is_dir {
                let rel = format!("{prefix}{base}{name}/");
                if repo.status_should_ignore(&fsutil::name::to_path(&rel))? {
                    continue;
                }
            }
            folder.d.push(name.into_owned());
        } else if !is_file {
            let rel = format!("{prefix}{base}{name}");
            if repo.status_should_ignore(&fsutil::name::to_path(&rel))? {
                continue;
            }
            out.push(format!("{base}{name}"));
            folder.f.push(name.into_owned());
        }
    }
    Ok(Some(folder))
}

/// What decides "untracked, not ignored" besides the folders themselves, as one string;
/// `None` when the cache must not be used (a file system not known to keep folder times,
/// or a rule file changed within `racy_ns`).
pub(crate) fn fingerprint(
    repo: &Repository,
    index: Option<&Stamp>,
    workdir: &Path,
    prefix: &str,
    racy_ns: i64,
) -> Option<String> {
    if !keeps_folder_times(workdir) {
        return None;
    }
    let start = super::now_ns();
    let cfg = repo.config().ok()?;
    let icase = cfg.get_bool("core.ignorecase").unwrap_or(false);
    let excludes = cfg.get_path("core.excludesfile").ok().or_else(default_excludes);
    let mut rules: Vec<(String, Option<Stamp>)> = Vec::new();
    rules.push(("info/exclude".into(), stamp(&repo.commondir().join("info").join("exclude"), true)));
    if let Some(x) = &excludes {
        rules.push((x.to_string_lossy().into_owned(), stamp(x, true)));
    }
    // The `.gitignore` of each folder above the walk's root.
    let mut above = workdir.to_path_buf();
    let parts: Vec<&str> = prefix.split('/').filter(|s| !s.is_empty()).collect();
    for p in &parts {
        rules.push((format!("{}/.gitignore", above.display()), stamp(&above.join(".gitignore"), true)));
        above.push(p);
    }
    if rules.iter().filter_map(|(_, s)| s.as_ref()).any(|s| !trusted(s, start, racy_ns)) {
        return None;
    }
    let index = index.copied().unwrap_or_default();
    Some(format!("index {}/{}/{} icase {icase} {rules:?}", index.m, index.s, index.i))
}

fn default_excludes() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = xdg.or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("git").join("ignore"))
}

/// Whether creating or removing a name in a folder of `path`'s file system is known to set
/// the folder's mtime and ctime.
#[cfg(target_os = "linux")]
fn keeps_folder_times(path: &Path) -> bool {
    const KNOWN: [i64; 7] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0xF2F5_2010, // f2fs
        0x2FC1_2FC1, // zfs
        0xCA45_1A4E, // bcachefs
    ];
    // `f_type`'s width and sign differ between targets (i64 here, i32 or u32 elsewhere);
    // the magic numbers are 32-bit.
    #[allow(clippy::unnecessary_cast)]
    rustix::fs::statfs(path).is_ok_and(|s| KNOWN.contains(&((s.f_type as i64) & 0xFFFF_FFFF)))
}

#[cfg(not(target_os = "linux"))]
fn keeps_folder_times(_path: &Path) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::super::gitindex::tests::git;
    use super::*;

    #[test]
    fn lookup_tells_files_from_folders() {
        let paths = ["a", "b.txt", "b/c", "b/d/e", "b!", "b-x/y", "bb/z", "c"];
        let known = Known::new(paths.to_vec());
        assert_eq!(known.under("b"), &["b/c", "b/d/e"]);
        assert_eq!(known.under("b-x"), &["b-x/y"]);
        assert!(known.under("q").is_empty());
        let all = known.under("");
        assert_eq!(lookup(all, "", "b"), (false, true));
        assert_eq!(lookup(all, "", "b.txt"), (true, false));
        assert_eq!(lookup(all, "", "b!"), (true, false));
        assert_eq!(lookup(all, "", "b-x"), (false, true));
        assert_eq!(lookup(all, "", "a"), (true, false));
        assert_eq!(lookup(all, "", "bb"), (false, true));
        assert_eq!(lookup(all, "", "zz"), (false, false));
        let b = known.under("b");
        assert_eq!(lookup(b, "b/", "c"), (true, false));
        assert_eq!(lookup(b, "b/", "d"), (false, true));
        assert_eq!(lookup(b, "b/", "e"), (false, false));
    }

    /// Lists untracked files with a cache (trusting folders 10 ms old) and without, and
    /// checks both agree; returns what the cached walk did.
    fn both(repo: &Repository, root: &Path, cache: &Cache) -> (Vec<String>, WalkStats) {
        let idx = super::super::gitindex::read(&repo.path().join("index")).unwrap_or_default();
        let known = Known::new(idx.iter().map(|e| e.path.as_str()).collect());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let stats = walk(repo, root, "", &known, Some(cache), None, &mut a).unwrap();
        walk(repo, root, "", &known, None, None, &mut b).unwrap();
        let names = |mut v: Vec<String>| {
            v.sort();
            v
        };
        let (a, b) = (names(a), names(b));
        assert_eq!(a, b, "the cached walk and a full walk disagree");
        (a, stats)
    }

    /// An empty repository in a temp dir, or `None` (said) where the cache is not used.
    fn new_repo() -> Option<tempfile::TempDir> {
        let dir = tempfile::tempdir().unwrap();
        if !keeps_folder_times(dir.path()) {
            eprintln!("skipped: the temp dir's file system is not one the cache trusts");
            return None;
        }
        git(dir.path(), &["init", "-q"]);
        Some(dir)
    }

    fn tick() {
        // Past the test's 10 ms racy window and the file system's timestamp tick.
        std::thread::sleep(std::time::Duration::from_millis(30));
    }

    #[test]
    fn the_cache_skips_unchanged_folders_and_sees_every_change() {
        let Some(dir) = new_repo() else { return };
        let root = dir.path();
        for d in ["a", "b", "b/deep", "c"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in ["a/1.txt", "b/2.txt", "b/deep/3.txt", "c/4.txt"] {
            fs::write(root.join(f), f).unwrap();
        }
        fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-qm", "x"]);
        fs::write(root.join("c/loose.txt"), "u").unwrap();
        tick();
        let repo = Repository::open(root).unwrap();
        let idx = fs::metadata(repo.path().join("index")).map(|m| Stamp { c: 0, ..Stamp::of(&m) }).ok();
        let fp = fingerprint(&repo, idx.as_ref(), root, "", 10_000_000).expect("a fingerprint");
        let keep = tempfile::tempdir().unwrap();
        let cache = Cache { path: keep.path().join("untracked.cache"), fp, racy_ns: 10_000_000 };

        let (list, s) = both(&repo, root, &cache);
        assert_eq!(list, ["c/loose.txt"]);
        assert_eq!(s, WalkStats { read: 5, cached: 0 });
        let (_, s) = both(&repo, root, &cache);
        assert_eq!(s, WalkStats { read: 0, cached: 5 }, "nothing changed: nothing read");

        // A new file in a deep folder: only that folder is read.
        fs::write(root.join("b/deep/new.txt"), "n").unwrap();
        tick();
        let (list, s) = both(&repo, root, &cache);
        assert_eq!(list, ["b/deep/new.txt", "c/loose.txt"]);
        assert_eq!(s, WalkStats { read: 1, cached: 4 });

        // A new folder with files, made by moving an old one in (its times are old).
        let outside = tempfile::tempdir_in(root.join("..")).unwrap();
        fs::create_dir(outside.path().join("moved")).unwrap();
        fs::write(outside.path().join("moved/m.txt"), "m").unwrap();
        tick();
        fs::rename(outside.path().join("moved"), root.join("a/moved")).unwrap();
        tick();
        let (list, _) = both(&repo, root, &cache);
        assert!(list.contains(&"a/moved/m.txt".to_string()), "{list:?}");

        // An ignore rule that changes in place (same folder times): the folder and everything
        // below it are read again.
        fs::write(root.join("b/deep/x.log"), "l").unwrap();
        fs::write(root.join(".gitignore"), "*.txt\n").unwrap();
        tick();
        let (list, s) = both(&repo, root, &cache);
        assert!(list.contains(&"b/deep/x.log".to_string()), "{list:?}");
        assert!(!list.iter().any(|l| l.ends_with(".txt")), "{list:?}");
        assert!(s.read >= 5, "{s:?}");
        fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        tick();
        both(&repo, root, &cache);

        // A folder that becomes a nested repository, and stops being one.
        git(&root.join("a/moved"), &["init", "-q"]);
        tick();
        let (list, _) = both(&repo, root, &cache);
        assert!(!list.iter().any(|l| l.starts_with("a/moved/")), "{list:?}");
        fs::remove_dir_all(root.join("a/moved/.git")).unwrap();
        tick();
        let (list, _) = both(&repo, root, &cache);
        assert!(list.contains(&"a/moved/m.txt".to_string()), "{list:?}");

        // A removed folder, and a file replaced by a folder of the same name.
        fs::remove_dir_all(root.join("a/moved")).unwrap();
        fs::remove_file(root.join("c/loose.txt")).unwrap();
        fs::create_dir(root.join("c/loose.txt")).unwrap();
        fs::write(root.join("c/loose.txt/inner"), "i").unwrap();
        tick();
        let (list, _) = both(&repo, root, &cache);
        assert_eq!(list, ["b/deep/new.txt", "c/loose.txt/inner"]);
    }

    /// A folder changed within the racy window is read every time; its record still vouches
    /// for its `.gitignore` (unless that is as new), so the folders below are not read.
    #[test]
    fn a_folder_changed_just_now_is_read_again_and_vouches_for_the_ones_below() {
        let Some(dir) = new_repo() else { return };
        let root = dir.path();
        fs::create_dir_all(root.join("old/deeper")).unwrap();
        fs::write(root.join("old/deeper/o.txt"), "o").unwrap();
        fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        let repo = Repository::open(root).unwrap();
        let keep = tempfile::tempdir().unwrap();
        let cache = Cache { path: keep.path().join("untracked.cache"), fp: "x".into(), racy_ns: 10_000_000 };
        let known = Known::new(Vec::new());
        tick();
        let (_, s) = both(&repo, root, &cache);
        assert_eq!(s, WalkStats { read: 3, cached: 0 });
        // The root changes now and again: it is read each time, and the folders below it,
        // which did not change, are not.
        for i in 0..2 {
            fs::write(root.join(format!("u{i}.txt")), "u").unwrap();
            let mut out = Vec::new();
            let s = walk(&repo, root, "", &known, Some(&cache), None, &mut out).unwrap();
            assert_eq!(s, WalkStats { read: 1, cached: 2 }, "walk {i}");
            out.sort();
            let mut want: Vec<String> = (0..=i).map(|j| format!("u{j}.txt")).collect();
            want.extend([".gitignore".into(), "old/deeper/o.txt".into()]);
            want.sort();
            assert_eq!(out, want);
        }
        // A `.gitignore` changed just now vouches for nothing: the walk after reads all.
        fs::write(root.join(".gitignore"), "*.txt\n").unwrap();
        let (list, _) = both(&repo, root, &cache);
        assert_eq!(list, [".gitignore"]);
        let (_, s) = both(&repo, root, &cache);
        assert_eq!(s.read, 3, "{s:?}");
    }
}
