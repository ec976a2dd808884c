//! Where things live: the project root and its `.walj/` folder (DESIGN §2).

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::fsutil;

pub mod legacy;
pub mod trust;

/// A project and its walj state folder.
#[derive(Debug, Clone)]
pub struct Project {
    /// The project root (absolute).
    pub root: PathBuf,
    /// `<root>/.walj`.
    pub dir: PathBuf,
    /// The journal (`.walj/journal.jsonl` unless overridden).
    pub journal: PathBuf,
}

impl Project {
    /// Resolves the project (one rule for the hook, the CLI, the TUI and the plugin's
    /// commands; docs/project-root.md): `explicit` (`--project`), else [`find_root`] from the
    /// session's start folder (`$CLAUDE_PROJECT_DIR`, else `cwd`). A session started in a
    /// subfolder of a checkout journals into the checkout's `.walj/`. `journal`
    /// (`--journal` / `$WALJ_JOURNAL`) overrides the journal path. No git process: a walk up
    /// with one `stat` per ancestor.
    pub(crate) fn discover(explicit: Option<&Path>, cwd: &Path, journal: Option<&Path>) -> Project {
        let root = match explicit {
            Some(e) => {
                let root = absolute(e, cwd);
                fs::canonicalize(&root).unwrap_or(root)
            }
            // Already canonical: an ancestor of the canonical start folder (or that folder,
            // left as it is when it cannot be resolved). One `realpath` per hook, not two.
            None => find_root(&start_folder(cwd)),
        };
        Project::at(root, journal.map(|j| absolute(j, cwd)))
    }

    /// A project rooted at `root` (already absolute).
    pub fn at(root: PathBuf, journal: Option<PathBuf>) -> Project {
        let dir = root.join(".walj");
        let journal = journal.unwrap_or_else(|| dir.join("journal.jsonl"));
        Project { root, dir, journal }
    }

    pub fn store_dir(&self) -> PathBuf {
        self.dir.join("store")
    }
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config.toml")
    }
    pub fn errors_log(&self) -> PathBuf {
        self.dir.join("errors.log")
    }

    /// Creates `.walj/` (0700) with a `.gitignore` of `*`, and the journal's folder; a
    /// `.walj/` walj makes is recorded as its own ([`trust::claim`]). A `.walj` that is not
    /// walj's own (a link, another user's, one git carries: [`trust::standing`]) is an error:
    /// nothing is written through it.
    pub fn ensure_dir(&self) -> io::Result<()> {
        match trust::standing(self) {
            trust::Standing::Own => {}
            trust::Standing::Absent => {
                fsutil::create_private_dir(&self.dir)?;
                trust::claim(self)?;
            }
            trust::Standing::Foreign(why) => return Err(io::Error::new(io::ErrorKind::PermissionDenied, why)),
        }
        let gi = self.dir.join(".gitignore");
        if fs::symlink_metadata(&gi).is_err() {
            // `create_new`: never through a link planted at the name.
            match fsutil::open_private(&gi, fs::OpenOptions::new().write(true).create_new(true)) {
                Ok(mut f) => io::Write::write_all(&mut f, b"*\n")?,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        if let Some(parent) = self.journal.parent()
            && parent != self.dir
            && !parent.is_dir()
        {
            fsutil::create_private_dir(parent)?;
        }
        Ok(())
    }

    /// Where a tool's `file_path` lands relative to the root.
    pub(crate) fn locate(&self, file_path: &str, cwd: Option<&Path>) -> Located {
        let p = Path::new(file_path);
        let abs = if p.is_absolute() { p.to_path_buf() } else { cwd.unwrap_or(&self.root).join(p) };
        let mut abs = normalize(&abs);
        if !abs.starts_with(&self.root)
            && let Some(c) = canonical_prefix(&abs)
        {
            // Another spelling of the root (a symbolic link to the project, `/tmp` on macOS):
            // compared canonically. An in-project link to a folder outside resolves outside.
            abs = c;
        }
        match abs.strip_prefix(&self.root) {
            Ok(rel) if !rel.as_os_str().is_empty() && !escapes_through_symlink(&self.root, rel) => {
                if rel.starts_with(".walj") {
                    return Located::Outside(abs);
                }
                Located::Inside { rel: to_slash(rel), abs }
            }
            _ => Located::Outside(abs),
        }
    }

    /// A resume line (`claude --resume ID`) run where the session was started: Claude Code
    /// keys transcripts and `--resume` by the start folder, so a session started in a
    /// subfolder (`cwd` of its start record) resumes with `cd pkg/core && claude --resume ID`.
    pub(crate) fn resume_in(&self, cwd: Option<&str>, hint: &str) -> String {
        let rel = cwd
            .map(|c| normalize(Path::new(c)))
            .and_then(|c| {
                let c = if c.starts_with(&self.root) { c } else { canonical_prefix(&c)? };
                c.strip_prefix(&self.root).ok().map(to_slash)
            })
            .filter(|r| !r.is_empty());
        match rel {
            Some(r) if r.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c)) => {
                format!("cd {r} && {hint}")
            }
            // Quoted for a POSIX shell (the callers escape it for the terminal).
            Some(r) => format!("cd '{}' && {hint}", r.replace('\'', "'\\''")),
            None => hint.to_string(),
        }
    }

    /// Absolute path of a root-relative `/`-separated path, refusing anything that would
    /// leave the project (absolute, `..`, through a symlink) or touch `.walj/` or a `.git`
    /// (any component named `.git`, in any case: the repository's own, a submodule's or a
    /// nested worktree's). This is the set walj may *write*: revert, undo and import check
    /// it, and [`Project::write_dir`] checks it again at the moment of writing.
    pub(crate) fn resolve_rel(&self, rel: &str) -> Result<PathBuf, PathError> {
        let abs = self.resolve_recorded(rel)?;
        if in_git_folder(Path::new(rel)) {
            return Err(PathError { rel: rel.to_string(), why: PathRefusal::GitFolder });
        }
        Ok(abs)
    }

    /// [`Project::resolve_rel`] that lets a path under a `.git` folder through: for showing
    /// and diffing a recorded entry (an own session's `git config …`), never for writing
    /// without [`WriteScope::GitForced`].
    pub(crate) fn resolve_recorded(&self, rel: &str) -> Result<PathBuf, PathError> {
        // A name that is not UTF-8 is recorded mapped (`fsutil::name`): its own bytes here.
        let p = fsutil::name::to_path(rel);
        let p = p.as_ref();
        let err = |why| Err(PathError { rel: rel.to_string(), why });
        if rel.is_empty()
            || rel.contains('\0')
            || p.is_absolute()
            || p.components().any(|c| !matches!(c, Component::Normal(_)))
        {
            return err(PathRefusal::NotInside);
        }
        if p.components().next().is_some_and(|c| same_name(c.as_os_str(), ".walj")) {
            return err(PathRefusal::WaljFolder);
        }
        if escapes_through_symlink(&self.root, p) {
            return err(PathRefusal::ThroughSymlink);
        }
        Ok(self.root.join(p))
    }

    /// True when `rel` (root-relative) lies under a `.git` folder or git's own folders.
    pub(crate) fn is_git_path(&self, rel: &str) -> bool {
        in_git_folder(Path::new(rel)) || self.git_dirs_inside().iter().any(|g| Path::new(rel).starts_with(g))
    }

    /// The git dir and common dir of the checkout, relative to the root, when they lie inside
    /// it under a name other than `.git` (`git init --separate-git-dir`, a worktree's
    /// `gitdir:` file): read from the `.git` file, no git process.
    fn git_dirs_inside(&self) -> Vec<PathBuf> {
        if !self.root.join(".git").is_file() {
            return Vec::new();
        }
        let Some(dirs) = crate::git::dirs_at(&self.root) else { return Vec::new() };
        [dirs.git_dir, dirs.common_dir]
            .iter()
            .map(|d| fs::canonicalize(d).unwrap_or_else(|_| normalize(d)))
            .filter_map(|d| d.strip_prefix(&self.root).ok().map(Path::to_path_buf))
            .filter(|d| !d.as_os_str().is_empty())
            .collect()
    }

    /// Opens the folder of the root-relative `rel` for a write, beneath the root and through
    /// no symbolic link (`fsutil::beneath`), making missing folders when `create`; returns it
    /// with the file's plain name. Refuses what [`Project::resolve_rel`] refuses, git's own
    /// folders wherever they are inside the root, and (the check at the moment of writing)
    /// any link swapped in since. `scope` [`WriteScope::GitForced`] lets a `.git` path through
    /// (`walj revert --force` of an own session's entry), never `.walj/` nor a way out.
    pub(crate) fn write_dir(
        &self,
        rel: &str,
        scope: WriteScope,
        create: bool,
    ) -> Result<(std::sync::Arc<fsutil::Dir>, std::ffi::OsString), WriteError> {
        let refused = |why| WriteError::Refused(PathError { rel: rel.to_string(), why });
        self.resolve_recorded(rel).map_err(WriteError::Refused)?;
        if scope == WriteScope::Project && self.is_git_path(rel) {
            return Err(refused(PathRefusal::GitFolder));
        }
        let p = fsutil::name::to_path(rel);
        let (Some(name), parent) = (p.file_name(), p.parent().unwrap_or(Path::new(""))) else {
            return Err(refused(PathRefusal::NotInside));
        };
        let dir = self.open_parent(rel, parent, create)?;
        Ok((dir, name.to_os_string()))
    }

    /// [`Project::write_dir`]'s refusals for `rel` and its file's plain name, without opening
    /// its folder (a caller that holds that folder open already).
    pub(crate) fn write_dir_checked(&self, rel: &str, scope: WriteScope) -> Result<std::ffi::OsString, WriteError> {
        let refused = |why| WriteError::Refused(PathError { rel: rel.to_string(), why });
        self.resolve_recorded(rel).map_err(WriteError::Refused)?;
        if scope == WriteScope::Project && self.is_git_path(rel) {
            return Err(refused(PathRefusal::GitFolder));
        }
        let p = fsutil::name::to_path(rel);
        match p.file_name() {
            Some(name) => Ok(name.to_os_string()),
            None => Err(refused(PathRefusal::NotInside)),
        }
    }

    /// [`Project::write_dir`] for a symbolic link at `rel` (revert and undo re-point links):
    /// the same refusals for the path up to the link's folder, never inside `.git/` or
    /// `.walj/`, while the link itself may point anywhere (it is written, never written
    /// through: a link to `../outside` is only its target text).
    pub(crate) fn link_dir(
        &self,
        rel: &str,
        create: bool,
    ) -> Result<(std::sync::Arc<fsutil::Dir>, std::ffi::OsString), WriteError> {
        let refused = |why| WriteError::Refused(PathError { rel: rel.to_string(), why });
        let p = fsutil::name::to_path(rel).into_owned();
        let (Some(name), parent) = (p.file_name(), p.parent().unwrap_or(Path::new(""))) else {
            return Err(refused(PathRefusal::NotInside));
        };
        if rel.contains('\0') || p.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(refused(PathRefusal::NotInside));
        }
        if p.components().next().is_some_and(|c| same_name(c.as_os_str(), ".walj")) {
            return Err(refused(PathRefusal::WaljFolder));
        }
        if self.is_git_path(rel) || same_name(name, ".git") {
            return Err(refused(PathRefusal::GitFolder));
        }
        if !parent.as_os_str().is_empty() {
            self.resolve_rel(&to_slash(parent)).map_err(WriteError::Refused)?;
        }
        let dir = self.open_parent(rel, parent, create)?;
        Ok((dir, name.to_os_string()))
    }

    /// Opens `parent` (of the entry `rel`) beneath the root, through no symbolic link,
    /// creating its folders when `create` says so.
    fn open_parent(&self, rel: &str, parent: &Path, create: bool) -> Result<std::sync::Arc<fsutil::Dir>, WriteError> {
        let io = |e: std::io::Error| {
            if fsutil::beneath::is_not_beneath(&e) {
                WriteError::Refused(PathError { rel: rel.to_string(), why: PathRefusal::ThroughSymlink })
            } else {
                WriteError::Io { rel: rel.to_string(), source: e }
            }
        };
        let root = fsutil::Dir::open(&self.root).map_err(io)?;
        let dir = root.open_beneath(parent, create).map_err(io)?;
        Ok(std::sync::Arc::new(dir))
    }

    /// Refuses a folder to run a command in (`walj procs restart`) unless it is inside the
    /// project and outside `.walj/` and git's folders, through no symbolic link.
    pub(crate) fn check_run_dir(&self, dir: &Path) -> Result<(), PathError> {
        let refused = |why| Err(PathError { rel: dir.display().to_string(), why });
        let mut abs = normalize(dir);
        if !abs.starts_with(&self.root)
            && let Some(c) = canonical_prefix(&abs)
        {
            abs = c;
        }
        let Ok(rel) = abs.strip_prefix(&self.root) else { return refused(PathRefusal::NotInside) };
        if rel.as_os_str().is_empty() {
            return Ok(());
        }
        let rel_s = to_slash(rel);
        self.resolve_rel(&rel_s)?;
        if self.is_git_path(&rel_s) {
            return refused(PathRefusal::GitFolder);
        }
        Ok(())
    }
}

/// What [`Project::write_dir`] may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WriteScope {
    /// The project tree, less `.walj/` and git's folders.
    Project,
    /// Also a `.git` folder: only for an entry this checkout's own session made, with `--force`.
    GitForced,
}

/// Why [`Project::write_dir`] did not open a folder.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    #[error("{0}")]
    Refused(PathError),
    #[error("opening the folder of {rel}: {source}")]
    Io { rel: String, source: std::io::Error },
}

/// True when a component of `rel` is a `.git` (git's folder, a submodule's, a worktree's).
pub(crate) fn in_git_folder(rel: &Path) -> bool {
    rel.components().any(|c| same_name(c.as_os_str(), ".git"))
}

/// Names equal as a case-insensitive file system (macOS, Windows) sees them: ASCII case
/// folded, trailing dots and spaces dropped (Windows ignores them).
fn same_name(name: &std::ffi::OsStr, want: &str) -> bool {
    let b = name.as_encoded_bytes();
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'.' | b' ') && end > want.len() {
        end -= 1;
    }
    b[..end].eq_ignore_ascii_case(want.as_bytes())
}

/// A root-relative path [`Project::resolve_rel`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rel}: {why}")]
pub(crate) struct PathError {
    pub rel: String,
    pub why: PathRefusal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PathRefusal {
    #[error("not a path inside the project")]
    NotInside,
    #[error("inside walj's own folder")]
    WaljFolder,
    #[error("leads outside the project through a symbolic link")]
    ThroughSymlink,
    #[error("inside git's own folder (.git): walj never writes there")]
    GitFolder,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Located {
    Inside { rel: String, abs: PathBuf },
    Outside(PathBuf),
}

/// Lexical normalization: drops `.`, folds `..` (never above the root of the path).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn absolute(p: &Path, cwd: &Path) -> PathBuf {
    if p.is_absolute() { p.to_path_buf() } else { normalize(&cwd.join(p)) }
}

/// True when some existing ancestor of `root/rel` (or the path itself) is a symlink
/// that resolves outside `root`.
fn escapes_through_symlink(root: &Path, rel: &Path) -> bool {
    let mut cur = root.to_path_buf();
    for c in rel.components() {
        cur.push(c);
        match fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                return match fs::canonicalize(&cur) {
                    Ok(target) => !target.starts_with(root),
                    // A dangling link: its target is unknown, treat as outside.
                    Err(_) => true,
                };
            }
            Ok(_) => {}
            Err(_) => return false, // the rest does not exist yet
        }
    }
    false
}

/// `/`-separated text form of a relative path (a name that is not UTF-8 mapped losslessly,
/// `fsutil::name`).
pub(crate) fn to_slash(p: &Path) -> String {
    let s = fsutil::name::encode_os(p.as_os_str());
    if std::path::MAIN_SEPARATOR == '/' { s.into_owned() } else { s.replace(std::path::MAIN_SEPARATOR, "/") }
}

/// The top level of the git work tree containing `dir`, found by walking up for `.git` (a
/// folder, or a worktree's or submodule's `.git` file), stopping at a file system boundary
/// and never taking the home folder itself when `dir` lies below it (a dotfiles repository
/// in `$HOME` is not every folder's project).
pub(crate) fn git_toplevel(dir: &Path) -> Option<PathBuf> {
    let home = home_dir();
    walk_up(dir, |d| {
        if home.as_deref() == Some(d) && d != dir {
            return Step::Stop;
        }
        if d.join(".git").exists() { Step::Found } else { Step::Up }
    })
}

/// The session's start folder: `$CLAUDE_PROJECT_DIR` (Claude Code sets it to the folder
/// `claude` was started in, for hooks and tools alike) when it is an absolute path, else `cwd`.
pub(crate) fn start_folder(cwd: &Path) -> PathBuf {
    std::env::var_os("CLAUDE_PROJECT_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|p| normalize(&p))
        .unwrap_or_else(|| cwd.to_path_buf())
}

/// The project root for a session started in `start`: the checkout's top level
/// ([`git_toplevel`]); outside git, the nearest ancestor holding a `.walj/` walj made
/// ([`trust::marked_own`]: a `.walj/` a download or a clone brought never counts), never the
/// home folder itself and never across a file system boundary; else `start`.
pub(crate) fn find_root(start: &Path) -> PathBuf {
    let start = &fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
    if let Some(top) = git_toplevel(start) {
        return top;
    }
    let home = home_dir();
    walk_up(start, |d| {
        if home.as_deref() == Some(d) {
            return Step::Stop;
        }
        if trust::marked_own(d) { Step::Found } else { Step::Up }
    })
    .unwrap_or_else(|| start.to_path_buf())
}

enum Step {
    Found,
    Up,
    Stop,
}

/// Walks from `dir` up to the file system's root, or to the first folder on another
/// device than `dir` (Unix), asking `at` of each folder.
fn walk_up(dir: &Path, mut at: impl FnMut(&Path) -> Step) -> Option<PathBuf> {
    let device = device_of(dir);
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d != dir && device.is_some() && device_of(d) != device {
            return None;
        }
        match at(d) {
            Step::Found => return Some(d.to_path_buf()),
            Step::Stop => return None,
            Step::Up => cur = d.parent(),
        }
    }
    None
}

#[cfg(unix)]
fn device_of(dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(dir).ok().map(|m| m.dev())
}

#[cfg(not(unix))]
fn device_of(_dir: &Path) -> Option<u64> {
    None
}

/// The home folder (`$HOME`, `%USERPROFILE%`), lexically normalized, when absolute.
fn home_dir() -> Option<PathBuf> {
    let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute()).map(|p| normalize(&p))
}

/// Canonical form of a path that may not exist yet (a file about to be written): the
/// longest existing prefix canonicalized, the rest appended (lexically normalized first, so
/// a `..` never climbs out through a link). `None` when not even the file system's root
/// can be canonicalized.
pub(crate) fn canonical_prefix(p: &Path) -> Option<PathBuf> {
    let p = normalize(p);
    let mut head = p.as_path();
    let mut tail = Vec::new();
    loop {
        if let Ok(c) = fs::canonicalize(head) {
            let mut out = c;
            for t in tail.iter().rev() {
                out.push(t);
            }
            return Some(out);
        }
        tail.push(head.file_name()?.to_os_string());
        head = head.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_inside_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let p = Project::at(root.clone(), None);
        let f = format!("{}/src/a.rs", root.display());
        assert!(matches!(p.locate(&f, None), Located::Inside { ref rel, .. } if rel == "src/a.rs"));
        let f = format!("{}/../x.txt", root.display());
        assert!(matches!(p.locate(&f, None), Located::Outside(_)));
        assert!(matches!(p.locate("/etc/passwd", None), Located::Outside(_)));
        assert!(
            matches!(p.locate("b/c.txt", Some(&root.join("a"))), Located::Inside { ref rel, .. } if rel == "a/b/c.txt")
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/tmp", root.join("link")).unwrap();
            assert!(matches!(p.locate(&format!("{}/link/x", root.display()), None), Located::Outside(_)));
            assert!(p.resolve_rel("link/x").is_err());
        }
        assert!(p.resolve_rel("../x").is_err());
        assert!(p.resolve_rel("/x").is_err());
        assert!(p.resolve_rel("a/b").is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn another_spelling_of_the_root_is_inside_and_a_link_out_stays_outside() {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let root = base.join("repo");
        fs::create_dir_all(root.join("pkg")).unwrap();
        fs::create_dir_all(base.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(&root, base.join("link")).unwrap();
        std::os::unix::fs::symlink(base.join("elsewhere"), root.join("out")).unwrap();
        let p = Project::at(root.clone(), None);
        // A new file (does not exist yet) under the link's spelling.
        let f = base.join("link/pkg/new.rs");
        assert!(matches!(p.locate(f.to_str().unwrap(), None), Located::Inside { ref rel, .. } if rel == "pkg/new.rs"));
        assert!(
            matches!(p.locate("new.rs", Some(&base.join("link/pkg"))), Located::Inside { ref rel, .. } if rel == "pkg/new.rs")
        );
        assert!(matches!(p.locate(base.join("link/out/x").to_str().unwrap(), None), Located::Outside(_)));
        assert!(matches!(p.locate(root.join("out/x").to_str().unwrap(), None), Located::Outside(_)));
        assert_eq!(canonical_prefix(&base.join("link/a/b")), Some(root.join("a/b")));
        // The resume line runs where the session was started.
        let hint = "claude --resume s1";
        assert_eq!(p.resume_in(Some(root.join("pkg").to_str().unwrap()), hint), "cd pkg && claude --resume s1");
        assert_eq!(p.resume_in(Some(base.join("link/pkg").to_str().unwrap()), hint), "cd pkg && claude --resume s1");
        assert_eq!(p.resume_in(Some(root.to_str().unwrap()), hint), hint);
        assert_eq!(p.resume_in(None, hint), hint);
        fs::create_dir_all(root.join("it's")).unwrap();
        assert_eq!(p.resume_in(Some(root.join("it's").to_str().unwrap()), hint), "cd 'it'\\''s' && claude --resume s1");
    }

    #[test]
    fn the_allowed_set_leaves_out_walj_and_every_git_folder_in_any_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let p = Project::at(root.clone(), None);
        for rel in
            [".git/config", ".GIT/config", "sub/.git/config", "m/.Git/hooks/pre-commit", ".git./config", ".git /x"]
        {
            assert_eq!(p.resolve_rel(rel).unwrap_err().why, PathRefusal::GitFolder, "{rel}");
            assert!(p.resolve_recorded(rel).is_ok(), "{rel}: shown, diffable");
            assert!(p.is_git_path(rel), "{rel}");
            let e = p.write_dir(rel, WriteScope::Project, true).unwrap_err();
            assert!(matches!(e, WriteError::Refused(PathError { why: PathRefusal::GitFolder, .. })), "{rel}: {e}");
        }
        for rel in [".walj/journal.jsonl", ".WALJ/x", ".walj", "a\0b", "", "/etc/passwd", "a/../../x"] {
            assert!(p.resolve_recorded(rel).is_err(), "{rel:?}");
            assert!(p.write_dir(rel, WriteScope::GitForced, true).is_err(), "{rel:?}");
        }
        assert!(!p.is_git_path("gitx/config") && !p.is_git_path(".github/workflows/ci.yml"));
        // A worktree's git dir inside the root under another name (its `.git` is a file).
        fs::create_dir_all(root.join("store/wt")).unwrap();
        fs::write(root.join("store/wt/commondir"), "..\n").unwrap();
        fs::write(root.join(".git"), "gitdir: store/wt\n").unwrap();
        assert!(p.is_git_path("store/wt/HEAD") && p.is_git_path("store/config"), "git dir and common dir");
        assert!(!p.is_git_path("storefront/x"));
        // An own session's .git file with --force: written beneath the root all the same.
        fs::remove_file(root.join(".git")).unwrap();
        fs::create_dir_all(root.join(".git")).unwrap();
        let (d, name) = p.write_dir(".git/config", WriteScope::GitForced, true).unwrap();
        assert_eq!(d.join(&name), root.join(".git/config"));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_swapped_in_after_the_check_is_refused_at_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let p = Project::at(root.clone(), None);
        fs::create_dir_all(root.join("a")).unwrap();
        assert!(p.resolve_rel("a/f").is_ok(), "checked: a real folder");
        // Between the check and the write: the folder becomes a link out (and into .git).
        fs::remove_dir(root.join("a")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("a")).unwrap();
        let e = p.write_dir("a/f", WriteScope::Project, true).unwrap_err();
        assert!(matches!(e, WriteError::Refused(PathError { why: PathRefusal::ThroughSymlink, .. })), "{e}");
        fs::create_dir_all(root.join(".git")).unwrap();
        std::os::unix::fs::symlink(".git", root.join("g")).unwrap();
        assert!(p.write_dir("g/config", WriteScope::Project, true).is_err());
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
