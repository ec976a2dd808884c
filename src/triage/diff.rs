//! `walj diff`: an entry's change as a unified diff.

use crate::fold::Entry;
use crate::project::Project;

use super::{DiffMode, DiffSides};

/// The two sides of `entry`'s diff in `mode`.
pub fn diff_sides(project: &Project, entry: &Entry, mode: DiffMode) -> anyhow::Result<DiffSides> {
    let _ = (project, entry, mode);
    anyhow::bail!("not implemented yet")
}

/// A unified diff of `sides` for `path` with `context` lines; binary sides give a summary.
pub fn unified(sides: &DiffSides, path: &str, context: usize, color: bool) -> String {
    let _ = (sides, path, context, color);
    String::new()
}
