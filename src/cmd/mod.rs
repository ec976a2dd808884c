//! Command implementations behind `main.rs`: each takes parsed arguments and a
//! [`Project`], prints, and returns an exit code or an error for the binary edge.

pub mod bisect;
pub mod compact;
pub mod completions;
pub mod confirm;
pub mod import;
pub mod load;
pub mod man;
pub mod mcp;
pub mod pager;
pub mod plugin;
pub mod procs;
pub mod prompt;
pub mod recover;
pub mod sessions;
pub mod setup;
pub mod sync;
pub mod triage;
pub mod tui;
pub mod watch;

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::project::Project;

pub(crate) use confirm::Confirm;

/// Exit status of a command that failed (bad input, I/O errors). The others: `0` success, `2`
/// a command-line usage error (clap), `walj doctor` errors and `walj install` refusing to commit
/// a machine-specific path, and, with `walj recover --exit-code`, any failure; `3` a command
/// refused inside a Claude Code tool call without `--yes` (`cli::EXIT_NEEDS_YES`).
pub const EXIT_ERROR: i32 = 1;

/// Whether the error is stdout closed under us (`walj log | head -1`): not a failure.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == BrokenPipe)
            || c.downcast_ref::<serde_json::Error>().is_some_and(|j| j.io_error_kind() == Some(BrokenPipe))
    })
}

/// The error as one line, each cause once: a cause that a message before it already quotes
/// (`reading X: No such file…` caused by `No such file…`) is not repeated.
pub(crate) fn error_line(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        let text = text.trim();
        if text.is_empty() || line.contains(text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text);
    }
    line
}

/// Prints `walj: <error>` on stderr (never panics, even when stderr is closed), made
/// [`crate::present::safe_block`] (its own line breaks kept): an error can quote a recorded
/// path, id or command.
pub fn print_error(e: &anyhow::Error) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "walj: {}", crate::present::safe_block(&error_line(e)));
}

/// Refuses a project whose `.walj/` is not walj's own, with the fix
/// ([`crate::project::trust::check`]).
pub(crate) fn refuse_foreign_dir(project: &Project) -> anyhow::Result<()> {
    if let crate::project::trust::Standing::Foreign(why) = crate::project::trust::check(project) {
        bail!("{why}; walj reads nothing from it and writes nothing through it. To fix: {}", why.fix());
    }
    Ok(())
}

/// `p` relative to the project's root when it lies inside, else whole.
pub(crate) fn rel_display(project: &Project, p: &Path) -> String {
    p.strip_prefix(&project.root).map(|r| r.display().to_string()).unwrap_or_else(|_| p.display().to_string())
}

/// Options every command takes.
#[derive(Debug, Clone, Default)]
pub struct Global {
    pub project: Option<PathBuf>,
    pub journal: Option<PathBuf>,
    /// `--no-pager`: long output straight to stdout ([`pager`]).
    pub no_pager: bool,
}

impl Global {
    /// The project: `--project DIR` must be an existing folder.
    pub fn project(&self) -> anyhow::Result<Project> {
        if let Some(dir) = &self.project {
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => bail!("--project {}: not a folder", dir.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    bail!("--project {}: no such folder", dir.display())
                }
                Err(e) => bail!("--project {}: {e}", dir.display()),
            }
        }
        let cwd = std::env::current_dir()?;
        Ok(Project::discover(self.project.as_deref(), &cwd, self.journal.as_deref()))
    }
}
