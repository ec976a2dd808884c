//! Whose `.walj/` this is: walj trusts only a `.walj/` folder it made itself (issue 26, items
//! 4 and 7; docs/security.md).
//!
//! A repository can carry a `.walj/` folder (a committed journal, store, consent or sync id),
//! a checkout can hold a symbolic link at `.walj`, a shared folder can hold another user's.
//! None of them is walj's: a journal there would hand Claude its author's text as a brief, a
//! committed `sync/consent` and `sync/id` with `[sync] auto` would publish the user's prompts,
//! and a `journal.jsonl` symlink would make every append land elsewhere.
//!
//! The contract:
//! - **The marker.** When walj makes `.walj/`, it records the folder's device, inode and
//!   owner ([`MARKER`]) in a place git never carries: walj's folder in the per-worktree git dir
//!   (`<git dir>/walj/`, found by walking up from the root for `.git`, a folder or a worktree's
//!   `gitdir:` file; no git process), else, outside git, the user's state folder keyed by the
//!   root (`$XDG_STATE_HOME/walj/projects/<digest>`, `~/.local/state/…`; macOS
//!   `~/Library/Application Support/walj`, Windows `%LOCALAPPDATA%\walj`): [`state_dir`].
//! - **The check** ([`standing`]) is one `lstat` of `.walj` and one read of the marker: a
//!   `.walj` that matches is [`Standing::Own`]; a clone's, a link or another user's never
//!   matches.
//! - **Adoption, once per folder.** A `.walj/` with no marker of its own (made by a walj
//!   before markers, or restored from a backup) is adopted when it is a real folder (not a
//!   link), owned by this user, and git tracks nothing inside it but a regular `config.toml`:
//!   the marker is written and walj goes on silently. Otherwise the refusal is written down
//!   for that folder and stays: removing the files from git later does not make their
//!   content walj's; the fix is to move the folder aside (walj then makes a new one).
//! - **Tracked files in walj's own folder** ([`check`], run by `walj doctor`, the CLI and
//!   SessionStart): a journal, store, consent or sync file git tracks is never read; git
//!   is asked through libgit2 (never a git process) and the answer is cached in the state
//!   folder under the index's size, inode and mtime, so a tool-call hook never reads the
//!   index ([`set_hook_mode`]). A tracked `config.toml` is read for its safe keys only
//!   (`crate::config`, [`config_is_tracked`]).
//!
//! A refused `.walj/` is neither read nor written: the hook records nothing and says so at
//! SessionStart, the CLI refuses with the fix, `walj doctor` reports it as an error.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::Project;
use crate::fsutil;

/// The marker's file name in the state folder.
pub(crate) const MARKER: &str = "walj-dir";

/// The cache of what git tracks under `.walj/`.
const TRACKED_CACHE: &str = "tracked";

/// The one tracked file a `.walj/` may hold (read for its safe keys only).
pub(crate) const CONFIG_NAME: &str = "config.toml";

/// Whether `.walj/` is walj's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Standing {
    /// No `.walj` yet: walj makes it (and its marker) on its first write.
    Absent,
    /// Made (or adopted) by walj here.
    Own,
    /// Not walj's: read nothing from it, write nothing through it.
    Foreign(Refusal),
}

/// Why a `.walj/` is not trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error("{} is a symbolic link, not a folder walj made", .0.display())]
    Symlink(PathBuf),
    #[error("{} is not a folder", .0.display())]
    NotAFolder(PathBuf),
    #[error("{} belongs to another user (uid {uid})", dir.display())]
    #[cfg_attr(not(unix), allow(dead_code))]
    OtherOwner { dir: PathBuf, uid: u32 },
    #[error("{} holds files git tracks ({}): walj did not make it", dir.display(), files.join(", "))]
    Cloned { dir: PathBuf, files: Vec<String> },
    #[error("{} holds files git tracks ({}): walj never reads a tracked journal, store, consent or sync file", dir.display(), files.join(", "))]
    Tracked { dir: PathBuf, files: Vec<String> },
    #[error("{} was not made by walj here ({why})", dir.display())]
    Refused { dir: PathBuf, why: String },
}

impl Refusal {
    /// What the user can do about it, one line.
    pub(crate) fn fix(&self) -> String {
        match self {
            Refusal::Tracked { .. } => {
                "run `git rm -r --cached .walj` and commit, and ignore the folder (`echo .walj/ >> .git/info/exclude`)"
                    .to_string()
            }
            Refusal::OtherOwner { .. } => {
                "this folder is another user's: run walj as its owner, or move it aside (`mv .walj .walj.other`); walj then makes its own".to_string()
            }
            _ => "if git carries the folder, run `git rm -r --cached .walj`, commit and ignore `.walj/`; then move the folder aside (`mv .walj .walj.foreign`): walj makes a new one of its own".to_string(),
        }
    }
}

/// How the current process may look at git's index for [`check`] and [`config_is_tracked`].
static TOOL_CALL_HOOK: AtomicBool = AtomicBool::new(false);

/// Set by the hook for a tool-call event: the tracked-files cache is used as it is (even when
/// the index changed since), the index is read only when there is no cache at all.
pub(crate) fn set_hook_mode(tool_call: bool) {
    TOOL_CALL_HOOK.store(tool_call, Ordering::Relaxed);
}

/// The `.walj` folder of `project` (its `dir`).
fn walj_dir(project: &Project) -> &Path {
    &project.dir
}

/// The per-worktree git dir and top level above `root`: the first `.git` found walking up,
/// a folder, or a file `gitdir: PATH` (a linked worktree, a submodule).
pub(crate) fn git_dir(root: &Path) -> Option<(PathBuf, PathBuf)> {
    crate::git::find(root).map(|(top, dirs)| (dirs.git_dir, top))
}

/// The user's state folder for walj (projects outside git keep their markers there).
pub(crate) fn user_state_dir() -> Option<PathBuf> {
    let abs = |v: &str| std::env::var_os(v).map(PathBuf::from).filter(|p| p.is_absolute());
    #[cfg(target_os = "macos")]
    {
        abs("HOME").map(|h| h.join("Library").join("Application Support").join("walj"))
    }
    #[cfg(windows)]
    {
        abs("LOCALAPPDATA").map(|h| h.join("walj"))
    }
    #[cfg(not(any(target_os = "macos", windows)))]
    {
        abs("XDG_STATE_HOME")
            .map(|x| x.join("walj"))
            .or_else(|| abs("HOME").map(|h| h.join(".local").join("state").join("walj")))
    }
}

pub(crate) fn digest16(text: &str) -> String {
    let mut h = crate::sha::Sha1::new();
    h.update(text.as_bytes());
    h.hex()[..16].to_string()
}

/// walj's own folder for `root`, which git never carries: `<git dir>/walj` (a project below
/// the top level: `<git dir>/walj/sub/<digest of its path>`), else
/// `<user state dir>/projects/<digest of the root>`. `None` outside git with no home.
pub(crate) fn state_dir(root: &Path) -> Option<PathBuf> {
    match git_dir(root) {
        Some((gd, top)) if top == root => Some(gd.join("walj")),
        Some((gd, top)) => {
            let rel = root.strip_prefix(&top).unwrap_or(root);
            Some(gd.join("walj").join("sub").join(digest16(&rel.to_string_lossy())))
        }
        None => user_state_dir().map(|d| d.join("projects").join(digest16(&root.to_string_lossy()))),
    }
}

/// True when `dir` (outside git) holds a `.walj/` walj made there: a real folder whose
/// identity its marker in the user's state folder records ([`state_dir`]). One `lstat` when
/// there is no `.walj`; never adopts (a `.walj/` a download brought does not make a root).
pub(crate) fn marked_own(dir: &Path) -> bool {
    let Ok(meta) = fs::symlink_metadata(dir.join(".walj")) else { return false };
    if !meta.is_dir() {
        return false;
    }
    let Some(state) = user_state_dir().map(|d| d.join("projects").join(digest16(&dir.to_string_lossy()))) else {
        return false;
    };
    matches!(read_marker(&state), Some(Marker::Own(own)) if own == ident(&meta) && own != (0, 0, 0))
}

/// This process's user id: the owner of `/proc/self` (Linux), else of the home folder.
#[cfg(unix)]
fn current_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self")
        .or_else(|_| fs::metadata(std::env::var_os("HOME").unwrap_or_default()))
        .ok()
        .map(|m| m.uid())
}

/// A folder's identity: (device, inode, owner).
type Ident = (u64, u64, u32);

/// A folder's identity ([`Ident`]): (device, inode, owner). Windows has no stable inode in std: zeros,
/// and the check there is the link and folder test alone.
fn ident(meta: &fs::Metadata) -> Ident {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino(), meta.uid())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0, 0)
    }
}

/// What the marker says: `own DEV INO UID` or `foreign DEV INO WHY`.
#[derive(Debug, PartialEq, Eq)]
enum Marker {
    Own(Ident),
    Foreign { dev: u64, ino: u64, why: String },
}

fn read_marker(state: &Path) -> Option<Marker> {
    let bytes = fsutil::read_regular(&state.join(MARKER)).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let line = text.lines().find(|l| l.starts_with("own ") || l.starts_with("foreign "))?;
    let mut f = line.splitn(4, ' ');
    let kind = f.next()?;
    let dev = f.next()?.parse().ok()?;
    let ino = f.next()?.parse().ok()?;
    let rest = f.next().unwrap_or("");
    match kind {
        "own" => Some(Marker::Own((dev, ino, rest.trim().parse().ok()?))),
        _ => Some(Marker::Foreign { dev, ino, why: rest.to_string() }),
    }
}

fn write_marker(state: &Path, m: &Marker) -> io::Result<()> {
    fsutil::create_private_dir(state)?;
    let line = match m {
        Marker::Own((d, i, u)) => format!("own {d} {i} {u}\n"),
        Marker::Foreign { dev, ino, why } => format!("foreign {dev} {ino} {}\n", why.replace('\n', " ")),
    };
    let text = format!("# walj: whose .walj/ folder this is (docs/security.md)\n{line}");
    fsutil::atomic_write(&state.join(MARKER), text.as_bytes(), Some(0o600))
}

/// Records that walj made `project`'s `.walj/` just now ([`Project::ensure_dir`]).
pub(crate) fn claim(project: &Project) -> io::Result<()> {
    let Some(state) = state_dir(&project.root) else { return Ok(()) };
    let meta = fs::symlink_metadata(walj_dir(project))?;
    write_marker(&state, &Marker::Own(ident(&meta)))
}

/// Whether `project`'s `.walj/` is walj's own: one `lstat` and one small read when it is
/// known; a folder without a marker is adopted or refused once ([`adopt`]). Does not look
/// at tracked files inside walj's own folder: [`check`] does.
pub(crate) fn standing(project: &Project) -> Standing {
    let dir = walj_dir(project);
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Standing::Absent,
        Err(e) => return Standing::Foreign(Refusal::Refused { dir: dir.to_path_buf(), why: e.to_string() }),
    };
    if meta.file_type().is_symlink() {
        return Standing::Foreign(Refusal::Symlink(dir.to_path_buf()));
    }
    if !meta.is_dir() {
        return Standing::Foreign(Refusal::NotAFolder(dir.to_path_buf()));
    }
    let id = ident(&meta);
    if known_own(dir, id) {
        return Standing::Own;
    }
    let Some(state) = state_dir(&project.root) else {
        // Outside git with no home folder: nowhere to keep a marker, nothing git carries.
        return Standing::Own;
    };
    match read_marker(&state) {
        Some(Marker::Own(own)) if own == id => {
            remember_own(dir, id);
            Standing::Own
        }
        Some(Marker::Foreign { dev, ino, why }) if (dev, ino) == (id.0, id.1) => {
            Standing::Foreign(Refusal::Refused { dir: dir.to_path_buf(), why })
        }
        _ => adopt(project, &state, &meta),
    }
}

/// The folder this process last found to be walj's own, by its identity: a hook checks
/// `.walj` at its start and again before each write ([`Project::ensure_dir`]); the second
/// look is the `lstat` alone.
static KNOWN_OWN: std::sync::Mutex<Option<(PathBuf, Ident)>> = std::sync::Mutex::new(None);

fn known_own(dir: &Path, id: Ident) -> bool {
    // Windows has no identity to compare (zeros): always look at the marker.
    id != (0, 0, 0) && KNOWN_OWN.lock().is_ok_and(|k| k.as_ref().is_some_and(|(d, i)| d == dir && *i == id))
}

fn remember_own(dir: &Path, id: Ident) {
    if let Ok(mut k) = KNOWN_OWN.lock() {
        *k = Some((dir.to_path_buf(), id));
    }
}

/// A `.walj/` with no marker of its own: adopted (the marker is written) when it is this
/// user's and git tracks nothing in it but a regular `config.toml`; else refused, and the
/// refusal written down for this folder.
fn adopt(project: &Project, state: &Path, meta: &fs::Metadata) -> Standing {
    let dir = walj_dir(project).to_path_buf();
    let id = ident(meta);
    let refusal = refusal_to_adopt(project, &dir, id);
    let marker = match &refusal {
        None => Marker::Own(id),
        Some(r) => Marker::Foreign { dev: id.0, ino: id.1, why: r.to_string() },
    };
    // Best effort: without the marker the next run decides again, the same way.
    let _ = write_marker(state, &marker);
    match refusal {
        None => Standing::Own,
        Some(r) => Standing::Foreign(r),
    }
}

fn refusal_to_adopt(project: &Project, dir: &Path, id: Ident) -> Option<Refusal> {
    #[cfg(unix)]
    if let Some(uid) = current_uid()
        && uid != id.2
    {
        return Some(Refusal::OtherOwner { dir: dir.to_path_buf(), uid: id.2 });
    }
    #[cfg(not(unix))]
    let _ = id;
    let tracked = tracked(project).unwrap_or_default();
    let config = format!(".walj/{CONFIG_NAME}");
    let config_is_regular =
        fs::symlink_metadata(project.dir.join(CONFIG_NAME)).map(|m| m.file_type().is_file()).unwrap_or(true);
    let carried: Vec<String> = tracked.into_iter().filter(|f| *f != config || !config_is_regular).collect();
    if carried.is_empty() { None } else { Some(Refusal::Cloned { dir: dir.to_path_buf(), files: carried }) }
}

/// [`standing`], and for walj's own folder the files git tracks in it: a tracked journal,
/// store, consent or sync file makes the folder refused until it is untracked. Reads git's
/// index at most once per index change (cached); run by the CLI, `walj doctor` and
/// SessionStart.
pub(crate) fn check(project: &Project) -> Standing {
    match standing(project) {
        Standing::Own => {
            let config = format!(".walj/{CONFIG_NAME}");
            let files: Vec<String> =
                tracked(project).unwrap_or_default().into_iter().filter(|f| *f != config).collect();
            if files.is_empty() {
                Standing::Own
            } else {
                Standing::Foreign(Refusal::Tracked { dir: project.dir.clone(), files })
            }
        }
        other => other,
    }
}

/// True when `path` is a project's `.walj/config.toml` that git tracks: only its safe keys
/// count (`crate::config`).
pub(crate) fn config_is_tracked(path: &Path) -> bool {
    let Some(dir) = path.parent() else { return false };
    if path.file_name().is_none_or(|n| n != CONFIG_NAME) || dir.file_name().is_none_or(|n| n != ".walj") {
        return false;
    }
    let Some(root) = dir.parent() else { return false };
    let project = Project::at(root.to_path_buf(), None);
    tracked(&project).is_some_and(|t| t.iter().any(|f| f == ".walj/config.toml"))
}

/// The files under `.walj/` that git tracks (`.walj/…`, relative to the root); `None`
/// outside git. Cached in the state folder under the index's stamp.
pub(crate) fn tracked(project: &Project) -> Option<Vec<String>> {
    let (gd, _) = git_dir(&project.root)?;
    let index = gd.join("index");
    let stamp = match fs::metadata(&index) {
        Ok(m) => stamp_of(&m),
        Err(_) => return Some(Vec::new()),
    };
    let state = state_dir(&project.root);
    let cache = state.as_ref().map(|s| s.join(TRACKED_CACHE));
    let cached = cache.as_ref().and_then(|c| fsutil::read_regular(c).ok()).and_then(|b| String::from_utf8(b).ok());
    if let Some(text) = &cached {
        let mut lines = text.lines();
        let fresh = lines.next() == Some(stamp.as_str());
        if fresh || TOOL_CALL_HOOK.load(Ordering::Relaxed) {
            return Some(lines.filter(|l| !l.is_empty()).map(str::to_string).collect());
        }
    }
    let files = tracked_by_index(&project.root).unwrap_or_default();
    if let (Some(state), Some(cache)) = (&state, &cache) {
        let mut text = format!("{stamp}\n");
        for f in &files {
            text.push_str(f);
            text.push('\n');
        }
        let _ =
            fsutil::create_private_dir(state).and_then(|()| fsutil::atomic_write(cache, text.as_bytes(), Some(0o600)));
    }
    Some(files)
}

fn stamp_of(m: &fs::Metadata) -> String {
    let mtime = m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).unwrap_or_default();
    #[cfg(unix)]
    let ino = {
        use std::os::unix::fs::MetadataExt;
        m.ino()
    };
    #[cfg(not(unix))]
    let ino = 0;
    format!("index {} {} {}", m.len(), ino, mtime.as_nanos())
}

/// What git's index holds under `<root>/.walj/` (libgit2, no git process).
fn tracked_by_index(root: &Path) -> Option<Vec<String>> {
    let repo = git2::Repository::discover(root).ok()?;
    let workdir = repo.workdir()?.canonicalize().ok()?;
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let rel = root.strip_prefix(&workdir).ok()?;
    let mut prefix = super::to_slash(rel);
    if !prefix.is_empty() {
        prefix.push('/');
    }
    prefix.push_str(".walj/");
    let index = repo.index().ok()?;
    let mut out = Vec::new();
    for e in index.iter() {
        if let Some(rest) = e.path.strip_prefix(prefix.as_bytes()) {
            out.push(format!(".walj/{}", String::from_utf8_lossy(rest).replace('\n', "\\n")));
        }
    }
    Some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_git_dir_of_a_worktree_file_and_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::create_dir_all(root.join("main/.git")).unwrap();
        fs::create_dir_all(root.join("main/sub/deep")).unwrap();
        assert_eq!(git_dir(&root.join("main/sub/deep")), Some((root.join("main/.git"), root.join("main"))));
        fs::create_dir_all(root.join("wt")).unwrap();
        fs::write(root.join("wt/.git"), "gitdir: ../main/.git/worktrees/wt\n").unwrap();
        assert_eq!(git_dir(&root.join("wt")), Some((root.join("wt/../main/.git/worktrees/wt"), root.join("wt"))));
        assert_eq!(state_dir(&root.join("main")), Some(root.join("main/.git/walj")));
        let sub = state_dir(&root.join("main/sub")).unwrap();
        assert!(sub.starts_with(root.join("main/.git/walj/sub")), "{}", sub.display());
    }

    #[test]
    fn markers_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        write_marker(dir.path(), &Marker::Own((1, 2, 3))).unwrap();
        assert_eq!(read_marker(dir.path()), Some(Marker::Own((1, 2, 3))));
        let m = Marker::Foreign { dev: 4, ino: 5, why: "x y".into() };
        write_marker(dir.path(), &m).unwrap();
        assert_eq!(read_marker(dir.path()), Some(m));
    }

    #[cfg(unix)]
    #[test]
    fn made_adopted_and_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::create_dir(root.join(".git")).unwrap();
        let p = Project::at(root.clone(), None);
        assert_eq!(standing(&p), Standing::Absent);
        p.ensure_dir().unwrap();
        assert_eq!(standing(&p), Standing::Own);
        // Replaced by a link: never walj's, and nothing is made through it.
        fs::rename(root.join(".walj"), root.join("old")).unwrap();
        std::os::unix::fs::symlink(root.join("old"), root.join(".walj")).unwrap();
        assert!(matches!(standing(&p), Standing::Foreign(Refusal::Symlink(_))));
        assert!(p.ensure_dir().is_err());
        // A folder walj did not make, untracked and this user's: adopted.
        fs::remove_file(root.join(".walj")).unwrap();
        fs::create_dir(root.join(".walj")).unwrap();
        assert_eq!(standing(&p), Standing::Own);
    }
}
