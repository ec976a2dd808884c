//! `walj mark --done`.

use crate::fold::Fold;
use crate::project::Project;

use super::Outcome;

/// Marks entries done (`resolved how: done`).
pub fn mark_done(project: &Project, fold: &Fold, ids: &[String], force: bool) -> anyhow::Result<Vec<Outcome>> {
    let _ = (project, fold, ids, force);
    anyhow::bail!("not implemented yet")
}

/// Marks every unresolved entry of a session done.
pub fn mark_session_done(project: &Project, fold: &Fold, session: &str, force: bool) -> anyhow::Result<Vec<Outcome>> {
    let _ = (project, fold, session, force);
    anyhow::bail!("not implemented yet")
}
