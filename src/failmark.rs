//! The failure marker (issue 13, item 5): when the hook cannot write `.walj/` (a full disk,
//! a read-only file system), the records it could not append are lost, and so is the line
//! `errors.log` would have said it in. The hook then keeps one small file where it can still
//! write: `$XDG_RUNTIME_DIR/walj/<key>.json`, else `<temp>/walj-<uid>/<key>.json`, keyed by
//! the project's root. This is the only thing walj ever writes outside `.walj/` (DESIGN §5).
//! The next SessionStart reports the gap to the user (`systemMessage`) and clears the marker
//! once it could write `.walj/` again; `walj doctor` shows it meanwhile.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil;
use crate::journal::record::now_ts;
use crate::project::Project;

/// What the marker says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Mark {
    /// The project's root.
    pub project: String,
    /// When the first and the latest failure happened.
    pub first: String,
    pub last: String,
    /// Failed hook writes since the marker was made.
    pub failures: u64,
    /// Journal records lost with them.
    pub records: u64,
    /// The latest error.
    pub error: String,
}

/// The folder markers live in: `$XDG_RUNTIME_DIR/walj` (a private per-user folder), else a
/// per-user folder in the temp folder.
pub(crate) fn dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|p| p.is_absolute() && p.is_dir()) {
        return x.join("walj");
    }
    std::env::temp_dir().join(format!("walj-{}", uid()))
}

/// This process's user id: the owner of `/proc/self` (Linux), else of the home folder.
#[cfg(unix)]
fn uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/self")
        .or_else(|_| fs::metadata(std::env::var_os("HOME").unwrap_or_default()))
        .map_or(0, |m| m.uid())
}

#[cfg(not(unix))]
fn uid() -> u32 {
    0
}

/// The marker file of `project`: named by a digest of its root, so one project has one.
pub(crate) fn path(project: &Project) -> PathBuf {
    let root = project.root.to_string_lossy();
    let digest = crate::store::blob_id(root.as_bytes());
    dir().join(format!("{}.json", &digest[..16]))
}

/// The marker of `project`, if a failure left one.
pub(crate) fn read(project: &Project) -> Option<Mark> {
    let bytes = fsutil::read_regular(&path(project)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Records a failure to write `.walj/` (`records` journal records lost). Best effort: when
/// even this fails, stderr is all that is left.
pub(crate) fn record(project: &Project, records: usize, error: &str) -> io::Result<()> {
    let dir = dir();
    fsutil::create_private_dir(&dir)?;
    check_own_dir(&dir)?;
    let now = now_ts();
    let mut m = read(project).unwrap_or_else(|| Mark {
        project: project.root.to_string_lossy().into_owned(),
        first: now.clone(),
        ..Mark::default()
    });
    m.last = now;
    m.failures += 1;
    m.records += records as u64;
    m.error = crate::claude::payload::clip(error, 500);
    let text = serde_json::to_vec(&m).map_err(io::Error::other)?;
    let file = path(project);
    let tmp = file.with_extension(format!("tmp-{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let write = || -> io::Result<()> {
        use std::io::Write as _;
        let mut f = fsutil::open_private(&tmp, fs::OpenOptions::new().write(true).create_new(true))?;
        f.write_all(&text)?;
        drop(f);
        fs::rename(&tmp, &file)
    };
    write().inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// Removes the marker (once its gap was reported).
pub(crate) fn clear(project: &Project) {
    let _ = fs::remove_file(path(project));
}

/// A shared temp folder could hold another user's folder (or a link) at our name: only a
/// real folder we own is written into.
fn check_own_dir(dir: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != uid() {
            return Err(io::Error::other(format!("{} belongs to another user", dir.display())));
        }
    }
    if !meta.is_dir() {
        return Err(io::Error::other(format!("{} is not a folder", dir.display())));
    }
    Ok(())
}
