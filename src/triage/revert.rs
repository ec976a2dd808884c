//! `walj revert`: bring a path back to an entry's pre-image.

use crate::fold::{Entry, Fold};
use crate::project::Project;

use super::Outcome;

/// What reverting an entry would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertPlan {
    /// Nothing to do (the file already equals the pre-image).
    Nothing { why: String },
    /// The disk equals the post-image: write the pre-image back.
    WritePre,
    /// The disk equals the post-image and the file did not exist before: delete it.
    DeleteFile,
    /// The file changed since: a clean three-way merge takes the entry's change out.
    Merge { merged: Vec<u8> },
    /// The file changed since and the merge conflicts (`--force` writes the pre-image).
    Conflict { lines: Vec<String> },
    /// Cannot be reverted (no pre-image, outside the project, a folder now…).
    Refused { why: String },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RevertOptions {
    /// Write the pre-image over a conflicting merge; act on live sessions' entries.
    pub force: bool,
    /// Say what would happen, change nothing.
    pub dry_run: bool,
}

/// What reverting `entry` would do now (for the TUI's confirmation dialog).
pub fn plan_revert(project: &Project, fold: &Fold, entry: &Entry) -> anyhow::Result<RevertPlan> {
    let _ = (project, fold, entry);
    anyhow::bail!("not implemented yet")
}

/// Reverts entries, newest first.
pub fn revert(project: &Project, fold: &Fold, ids: &[String], opts: RevertOptions) -> anyhow::Result<Vec<Outcome>> {
    let _ = (project, fold, ids, opts);
    anyhow::bail!("not implemented yet")
}
