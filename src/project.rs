//! Where things live: the project root and its `.walj/` folder (DESIGN §2).

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::fsutil;

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
    /// Resolves the project: `explicit` (`--project`), else `$CLAUDE_PROJECT_DIR`, else the
    /// git top level above `cwd`, else `cwd`. `journal` (`--journal` / `$WALJ_JOURNAL`)
    /// overrides the journal path.
    pub fn discover(explicit: Option<&Path>, cwd: &Path, journal: Option<&Path>) -> Project {
        let root = explicit
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("CLAUDE_PROJECT_DIR").filter(|v| !v.is_empty()).map(PathBuf::from))
            .or_else(|| git_toplevel(cwd))
            .unwrap_or_else(|| cwd.to_path_buf());
        let root = absolute(&root, cwd);
        let root = fs::canonicalize(&root).unwrap_or(root);
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
    pub fn locate(&self, file_path: &str, cwd: Option<&Path>) -> Located {
        let p = Path::new(file_path);
        let abs = if p.is_absolute() { p.to_path_buf() } else { cwd.unwrap_or(&self.root).join(p) };
        let abs = normalize(&abs);
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

    /// Absolute path of a root-relative `/`-separated path, refusing anything that would
    /// leave the project (absolute, `..`, through a symlink) or touch `.walj/`.
    pub fn resolve_rel(&self, rel: &str) -> Result<PathBuf, PathError> {
        let p = Path::new(rel);
        let err = |why| Err(PathError { rel: rel.to_string(), why });
        if rel.is_empty() || p.is_absolute() || p.components().any(|c| !matches!(c, Component::Normal(_))) {
            return err(PathRefusal::NotInside);
        }
        if p.starts_with(".walj") {
            return err(PathRefusal::WaljFolder);
        }
        if escapes_through_symlink(&self.root, p) {
            return err(PathRefusal::ThroughSymlink);
        }
        Ok(self.root.join(p))
    }
}

/// A root-relative path [`Project::resolve_rel`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rel}: {why}")]
pub struct PathError {
    pub rel: String,
    pub why: PathRefusal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathRefusal {
    #[error("not a path inside the project")]
    NotInside,
    #[error("inside walj's own folder")]
    WaljFolder,
    #[error("leads outside the project through a symbolic link")]
    ThroughSymlink,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    Inside { rel: String, abs: PathBuf },
    Outside(PathBuf),
}

/// Lexical normalization: drops `.`, folds `..` (never above the root of the path).
pub fn normalize(p: &Path) -> PathBuf {
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

/// `/`-separated text form of a relative path.
pub fn to_slash(p: &Path) -> String {
    let s = p.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' { s.into_owned() } else { s.replace(std::path::MAIN_SEPARATOR, "/") }
}

/// The top level of the git work tree containing `dir`, found by walking up for `.git`.
pub fn git_toplevel(dir: &Path) -> Option<PathBuf> {
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.join(".git").exists() {
            return Some(d.to_path_buf());
        }
        cur = d.parent();
    }
    None
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
}
