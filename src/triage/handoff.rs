//! `walj handoff`: a structured brief for Claude, delivered at the next SessionStart.

use crate::fold::Fold;
use crate::project::Project;

/// The brief written for Claude.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    /// The text delivered as `additionalContext` (≤ ~8000 chars).
    pub text: String,
    /// `claude --resume <session id>` when the entries come from one resumable session.
    pub resume_line: Option<String>,
    /// The entries handed back (full ids).
    pub entries: Vec<String>,
    /// The `handoff` record's action id (None when only printed).
    pub action: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandoffOptions {
    /// Only build and return the brief; record nothing.
    pub print_only: bool,
    /// Act on entries of a live session.
    pub force: bool,
}

/// Builds the brief for `ids` (or the unresolved entries of `session`, or all unresolved
/// entries) and, unless `print_only`, records it for the next SessionStart.
pub fn handoff(
    project: &Project,
    fold: &Fold,
    ids: &[String],
    session: Option<&str>,
    opts: HandoffOptions,
) -> anyhow::Result<Brief> {
    let _ = (project, fold, ids, session, opts);
    anyhow::bail!("not implemented yet")
}
