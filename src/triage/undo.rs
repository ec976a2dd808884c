//! `walj undo`: undo the last triage command, or the last action on one entry.

use crate::fold::Fold;
use crate::project::Project;

use super::Outcome;

/// Undoes the last triage command (every action it recorded, newest first), or with
/// `id` the last action on that entry.
pub fn undo(project: &Project, fold: &Fold, id: Option<&str>, force: bool) -> anyhow::Result<Vec<Outcome>> {
    let _ = (project, fold, id, force);
    anyhow::bail!("not implemented yet")
}
