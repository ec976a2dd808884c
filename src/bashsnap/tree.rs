//! Taking a snapshot: the project's working tree opened for one hook call ([`Tree`]), looked at
//! through git's index and untracked walk (in git), the paths the watcher named, or a bounded
//! walk (outside git).

use super::snapshot::{FileState, IndexRef, Mode, Snapshot, Stamp, is_exec, save_index_copy, unread};
use super::{
    MAX_LISTED, MAX_NEW_OBJECTS, RACY_NS, SNAP_V, SnapError, WATCHED, bash_dir, gitform, gitindex, gitscan, links,
    now_ns, untracked,
};
use crate::config::{Config, Matcher};
use crate::fsutil;
use crate::project::{Project, to_slash};
use crate::store::{Store, blob_id};
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// What the watcher said before a snapshot: its clock, and the paths changed since the base
/// (`None`: a full scan, `why` says why).
#[derive(Debug, Clone, Default)]
pub(super) struct WatchView {
    pub(super) clock: Option<crate::watch::Clock>,
    pub(super) paths: Option<Vec<String>>,
    pub(super) why: Option<String>,
}

/// The working tree of a project, opened for one hook call.
pub(super) struct Tree<'a> {
    pub(super) project: &'a Project,
    pub(super) cfg: &'a Config,
    pub(super) matcher: Option<&'a Matcher>,
    pub(super) store: Store,
    pub(super) repo: Option<git2::Repository>,
    /// The project root relative to the repository's work tree (`""` or `"sub/dir/"`).
    pub(super) prefix: String,
    pub(super) started: Instant,
    pub(super) deadline: Instant,
    /// Objects read but not stored yet (stored together, in parallel).
    pub(super) pending: Vec<(String, Vec<u8>)>,
    pub(super) pending_bytes: usize,
    /// The index as the last `take` read it.
    pub(super) index: Option<Vec<gitindex::Entry>>,
    /// New objects queued by this hook call, at most `max_new` (`MAX_NEW_OBJECTS` in a hook;
    /// unbounded in the fill pass, [`super::fill`]).
    pub(super) new_objects: usize,
    pub(super) max_new: usize,
    /// The images the journal's last lines carry, read at the first file the store lacks.
    pub(super) recent: Option<crate::store::RecentlyCarried>,
    /// The diff stopped at `[bash] max_changes`.
    pub(super) changes_cut: bool,
    /// The paths past `[bash] max_changes` the diff did not compare (in order).
    pub(super) unlisted: Vec<String>,
    /// Whether git may store a clean file in another form than the disk's
    /// ([`gitform::GitForm`]), read at the first clean file a change needs.
    pub(super) git_form: Option<gitform::GitForm>,
    /// A foreground Post: from [`crate::store::DEFER_FROM`] objects, [`Tree::flush`] spills them
    /// (one durable file) for the settle pass instead of storing each ([`crate::store::pending`]).
    pub(super) defer: bool,
    /// Ids of the current git index's blobs a change needs, to copy into the store at the
    /// next flush (or to spill as `g` ids).
    pub(super) git_later: Vec<String>,
    /// Ids spilled by this call (named by lines before they are in the store).
    pub(super) spilled: std::collections::HashSet<String>,
    /// Spill files written by this call.
    pub(super) spills: usize,
    /// Ids of `git_later` git did not have when read.
    pub(super) unavailable: std::collections::HashSet<String>,
}

impl<'a> Tree<'a> {
    pub(super) fn open(project: &'a Project, cfg: &'a Config, matcher: Option<&'a Matcher>) -> Tree<'a> {
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
            max_new: MAX_NEW_OBJECTS,
            recent: None,
            changes_cut: false,
            unlisted: Vec::new(),
            git_form: None,
            defer: false,
            git_later: Vec::new(),
            spilled: Default::default(),
            spills: 0,
            unavailable: Default::default(),
        }
    }

    /// A snapshot of the tree; `cache` lends blob ids of files whose stat is unchanged;
    /// `save_index` (a sidecar key) keeps a link to the current git index.
    pub(super) fn take(&mut self, cache: Option<&Snapshot>, save_index: Option<&str>) -> Result<Snapshot, SnapError> {
        self.take_with(cache, save_index, None)
    }

    /// [`Tree::take`], looking only at the paths `view` names when the watcher vouches for
    /// them since `cache` (then `cache` is the base the snapshot starts from).
    pub(super) fn take_with(
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
            modes: true,
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
        snap.seen = now_ns();
        Ok(snap)
    }

    pub(super) fn take_git(
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
        let listed = gitscan::dirty_files(
            repo,
            &index,
            &workdir,
            &self.prefix,
            threads,
            walk_cache.as_ref(),
            cache.map(|c| c.time),
        )
        .map_err(git_err)?;
        // Kept for `diff` (reading the index again would cost as much as a tenth of the hook).
        self.index = Some(index);
        snap.listed = listed.len() <= MAX_LISTED;
        if !snap.listed {
            snap.cut_short = true;
        }
        let listed: Vec<(String, bool)> = listed.into_iter().take(MAX_LISTED).map(|l| (l.rel, l.deleted)).collect();
        // Which nested repository each listed file's folder is in, looked up once per folder.
        let mut nested: HashMap<String, Option<String>> = HashMap::new();
        for (rel, deleted) in listed {
            let state = if deleted {
                FileState { absent: true, ..FileState::default() }
            } else {
                let cached = cache.and_then(|c| c.files.get(&rel).map(|f| (f, c.time)));
                self.file_state(&rel, cached, &mut snap.cut_short)?
            };
            let dir = rel.rfind('/').map_or("", |i| &rel[..i]).to_string();
            let root = match nested.get(&dir) {
                Some(r) => r.clone(),
                None => {
                    let r = if dir.is_empty() { None } else { self.nested_root(&rel).map(|(r, _)| r) };
                    nested.insert(dir, r.clone());
                    r
                }
            };
            if let Some(root) = root
                && !snap.nested.contains(&root)
            {
                snap.nested.push(root);
            }
            snap.files.insert(rel, state);
        }
        self.save_index(snap, save_index, &index_path, index_st);
        Ok(())
    }

    /// Records the index's stamp in `snap` and, for a sidecar key, links a copy of it aside.
    pub(super) fn save_index(
        &self,
        snap: &mut Snapshot,
        save_index: Option<&str>,
        index_path: &Path,
        index_st: Option<Stamp>,
    ) {
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

    /// A snapshot from `base` and the paths the watcher says changed since: each is looked at
    /// again (a folder, or a path that is gone: everything known under it too).
    pub(super) fn take_watched(
        &mut self,
        snap: &mut Snapshot,
        base: &Snapshot,
        paths: &[String],
    ) -> Result<(), SnapError> {
        snap.files = base.files.clone();
        // The files not looked at again keep the base's bits: known only when the base knew them.
        snap.modes = base.modes;
        // The nested repositories the base walked as new are old now: not walked, as a full
        // scan would not (their `.git` was there before the base).
        for root in &base.nested {
            let under = format!("{root}/");
            snap.files.retain(|k, _| !k.starts_with(&under));
        }
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
            // As the full scan: git's own (`.git` folders, not a gitlink file), walj's own
            // `.walj/` at the top; a user's `docs/.walj/` is listed like any folder.
            let abs = self.project.root.join(fsutil::name::to_path(rel));
            if fsutil::git_own(rel, &abs) || rel == ".walj" || rel.starts_with(".walj/") {
                continue;
            }
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
    pub(super) fn current_index(&mut self) -> &[gitindex::Entry] {
        if self.index.is_none() {
            let read = self.repo.as_ref().and_then(|r| read_index(r, &r.path().join("index")).ok());
            self.index = Some(read.unwrap_or_default());
        }
        self.index.as_deref().unwrap_or(&[])
    }

    pub(super) fn tracked(&mut self, rel: &str) -> bool {
        let path = format!("{}{rel}", self.prefix);
        gitindex::find(self.current_index(), &path).is_some()
    }

    /// One path of a watched snapshot, as a full scan would list it: a file that exists is
    /// listed unless git ignores it and does not track it; a gone one is `absent` when git
    /// tracks it, else not listed.
    pub(super) fn refresh(&mut self, snap: &mut Snapshot, base: &Snapshot, rel: &str) -> Result<(), SnapError> {
        let abs = self.project.root.join(fsutil::name::to_path(rel));
        match fs::symlink_metadata(&abs) {
            Ok(m) if m.is_dir() => {
                snap.files.remove(rel);
            }
            Ok(_) if !self.tracked(rel) && self.nested_root(rel).is_some() => {
                // As the full scan: a nested repository is walked only when made since, and
                // only when this repository's rules do not ignore its folder.
                let root_ignored = |root: &str| {
                    self.repo.as_ref().is_some_and(|r| {
                        let path = format!("{}{root}/", self.prefix);
                        r.is_path_ignored(fsutil::name::to_path(&path)).unwrap_or(false)
                    })
                };
                match self.nested_root(rel) {
                    Some((root, st))
                        if st.m.max(st.c).saturating_add(untracked::NESTED_NEW_NS) >= base.time
                            && !root_ignored(&root) =>
                    {
                        let cached = base.files.get(rel).map(|f| (f, base.time));
                        let state = self.file_state(rel, cached, &mut snap.cut_short)?;
                        snap.files.insert(rel.to_string(), state);
                        if !snap.nested.contains(&root) {
                            snap.nested.push(root);
                        }
                    }
                    _ => {
                        snap.files.remove(rel);
                    }
                }
            }
            Ok(_) => {
                let listed = base.files.contains_key(rel);
                let ignored = !listed
                    && self.repo.as_ref().is_some_and(|r| {
                        let path = format!("{}{rel}", self.prefix);
                        r.is_path_ignored(fsutil::name::to_path(&path)).unwrap_or(false)
                    });
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

    /// The nested repository `rel` is inside (the nearest folder below the project root with
    /// its own `.git`: its path and the `.git`'s stamp), if any.
    pub(super) fn nested_root(&self, rel: &str) -> Option<(String, Stamp)> {
        let mut at = rel.rfind('/').map(|i| &rel[..i]);
        while let Some(dir) = at {
            if let Ok(m) = fs::symlink_metadata(self.project.root.join(fsutil::name::to_path(dir)).join(".git")) {
                return Some((dir.to_string(), Stamp::of(&m)));
            }
            at = dir.rfind('/').map(|i| &dir[..i]);
        }
        None
    }

    pub(super) fn take_scan(&mut self, snap: &mut Snapshot, cache: Option<&Snapshot>) -> Result<(), SnapError> {
        let max_files = self.cfg.bash.max_files;
        // `max_ms` bounds reading new files (they stay listed, unread, for the fill pass), not
        // listing: a walk cut there would leave files out of the snapshot altogether. Listing
        // is bounded by `max_files` and, for a very slow file system, by `WALK_MS` more.
        let walk_deadline = self.deadline.max(Instant::now()) + Duration::from_millis(WALK_MS);
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
                if count >= max_files || Instant::now() > walk_deadline {
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
    pub(super) fn file_state(
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
        let x = is_exec(&meta);
        if let Some((c, cache_time)) = cached
            && c.st == Some(st)
            && !st.racy(cache_time)
            && let Some(id) = &c.id
            && (c.nocap.is_some() || self.store.reuse(id))
        {
            return Ok(FileState {
                id: Some(id.clone()),
                nocap: c.nocap.clone(),
                st: Some(st),
                x,
                ..Default::default()
            });
        }
        if Instant::now() > self.deadline || self.new_objects >= self.max_new {
            *cut_short = true;
            return Ok(FileState { nocap: Some("cut_short".into()), st: Some(st), x, ..Default::default() });
        }
        let (id, nocap) = self.read_capture(&abs, rel, &meta)?;
        // The stat was taken before the bytes were read: a file replaced or written in between
        // (a command that runs beside a fill pass, a background process) would pair this stat
        // with bytes of a later moment, and a later snapshot would trust them as this stat's.
        // Stated again after the read; a file that moved meanwhile stays unread.
        if id.is_some() && !fs::symlink_metadata(&abs).is_ok_and(|m| Stamp::of(&m) == st) {
            *cut_short = true;
            return Ok(FileState { nocap: Some("cut_short".into()), st: Some(st), x, ..Default::default() });
        }
        Ok(FileState { id, nocap, st: Some(st), x, ..Default::default() })
    }

    /// A symbolic link's state: its target read (never followed); the target text is the
    /// image (carried in the records, nothing stored). Gone meanwhile: absent.
    pub(super) fn link_state(&mut self, abs: &Path, meta: &fs::Metadata) -> FileState {
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
}

/// Time a walk outside git may take to list the files past the snapshot's `max_ms` (a stat each;
/// reading is still bounded by `max_ms`). Past it the walk is cut short and the files beyond are
/// not listed.
pub(super) const WALK_MS: u64 = 5_000;

/// True when the file `rel` (below `root`) exists and neither it nor any folder above it up to
/// `root` has changed since `time_ns` (a snapshot's start): it was there, at that path, before.
/// A folder moved (renamed) since has a new ctime while its old files keep theirs: those files
/// are new at their new paths. A folder whose entries changed has a new ctime too: a file in it
/// that only an ignore rule change made visible is then recorded as made (with its bytes),
/// never left out. Times come from the kernel's coarse clock, up to a tick behind the
/// snapshot's: [`untracked::NESTED_NEW_NS`] of margin.
pub(super) fn existed_untouched(root: &Path, rel: &str, time_ns: i64) -> bool {
    let old = |m: &fs::Metadata| {
        let st = Stamp::of(m);
        st.m.max(st.c).saturating_add(untracked::NESTED_NEW_NS) < time_ns
    };
    let abs = root.join(fsutil::name::to_path(rel));
    if !fs::symlink_metadata(&abs).is_ok_and(|m| old(&m)) {
        return false;
    }
    let mut at = abs.parent();
    while let Some(dir) = at.filter(|d| d.starts_with(root) && *d != root) {
        if !fs::symlink_metadata(dir).is_ok_and(|m| old(&m)) {
            return false;
        }
        at = dir.parent();
    }
    true
}

/// Stage-0 index entries under `prefix`, keyed by project-relative path: (blob id, is a link,
/// is executable: git's `100755`).
pub(super) fn index_map(index: &[gitindex::Entry], prefix: &str) -> HashMap<String, (String, bool, bool)> {
    let mut m = HashMap::with_capacity(index.len());
    for e in index.iter().filter(|e| e.stage == 0) {
        if let Some(rel) = e.path.strip_prefix(prefix)
            && rel != ".walj"
            && !rel.starts_with(".walj/")
        {
            m.insert(rel.to_string(), (e.id(), links::is_link_mode(e.mode), gitindex::is_exec_mode(e.mode)));
        }
    }
    m
}

/// The repository's index entries: read directly, else through libgit2; none when the
/// repository has no index yet.
pub(super) fn read_index(repo: &git2::Repository, path: &Path) -> Result<Vec<gitindex::Entry>, git2::Error> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    match gitindex::read(path) {
        Some(v) => Ok(v),
        None => Ok(gitindex::from_git2(&repo.index()?)),
    }
}
