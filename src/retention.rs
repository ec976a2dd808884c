//! Retention that runs itself (`[retention] auto`, on by default): after a SessionEnd, when
//! the journal has grown past `[retention] auto_mb`, the hook starts `walj compact --auto` as a
//! detached process and returns at once; the compaction never runs inside a hook's time. A
//! claim file (`.walj/compact.auto`, created exclusively) keeps two from running at once; a
//! claim left by a killed compaction is taken over after an hour. Each automatic run leaves
//! its report in `.walj/compact.last`.

use std::fs::{self, OpenOptions};
use std::io;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::config::Config;
use crate::project::Project;

/// A claim older than this was left by a killed compaction.
const STALE: Duration = Duration::from_secs(3600);

/// Starts a background compaction when `cfg` asks for it and the journal is past the size
/// threshold. Returns whether one was started. Cheap: one `stat` when nothing is due.
pub(crate) fn maybe_spawn(project: &Project, cfg: &Config) -> io::Result<bool> {
    if !cfg.retention.auto {
        return Ok(false);
    }
    let len = match fs::metadata(&project.journal) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    if len < cfg.retention.auto_mb.saturating_mul(1024 * 1024) || held(&claim_path(project)) {
        return Ok(false);
    }
    spawn_detached(project, &["compact", "--auto", "--yes"])?;
    Ok(true)
}

/// Starts `walj --project <root> ARGS` detached: its own process group, no stdin or output,
/// not waited for (it outlives the hook; on Unix it is reparented when the hook exits), and
/// outside any Claude Code tool call (the marker is removed from its environment). Shared by
/// the automatic compaction and `[sync] auto`.
pub(crate) fn spawn_detached(project: &Project, args: &[&str]) -> io::Result<()> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg("--project")
        .arg(&project.root)
        .args(args)
        .env_remove(crate::claude::env::MARKER)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        // Its own process group: Claude Code exiting (or a Ctrl-C to it) does not take it along.
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    cmd.spawn()?;
    Ok(())
}

/// Whether the claim file `path` is held (exists, and is not stale).
pub(crate) fn held(path: &std::path::Path) -> bool {
    path.exists() && !stale(path)
}

/// `.walj/compact.last`: when the last automatic compaction ran and what it did (JSON).
pub(crate) fn last_path(project: &Project) -> PathBuf {
    project.dir.join("compact.last")
}

fn claim_path(project: &Project) -> PathBuf {
    project.dir.join("compact.auto")
}

fn stale(path: &std::path::Path) -> bool {
    fs::metadata(path).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|d| d > STALE)
}

/// The right to run the automatic compaction; released on drop.
#[derive(Debug)]
pub(crate) struct Claim(PathBuf);

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// Claims the automatic compaction, or `None` when another one holds it.
pub(crate) fn claim(project: &Project) -> io::Result<Option<Claim>> {
    claim_file(claim_path(project))
}

/// Claims `path` (created exclusively; a claim older than an hour was left by a killed run and
/// is taken over), or `None` when another run holds it.
pub(crate) fn claim_file(path: PathBuf) -> io::Result<Option<Claim>> {
    if stale(&path) {
        let _ = fs::remove_file(&path);
    }
    match crate::fsutil::open_private(&path, OpenOptions::new().write(true).create_new(true)) {
        Ok(f) => {
            let _ = io::Write::write_all(&mut &f, std::process::id().to_string().as_bytes());
            Ok(Some(Claim(path)))
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(e),
    }
}
