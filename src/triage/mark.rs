//! `walj mark --done`: the user says an entry is fine as it is.

use crate::fold::{Entry, Fold};
use crate::journal::{how, op};
use crate::project::Project;

use super::{Result, TriageError};

use super::Outcome;
use super::action::{
    Batch, already_resolved, append, check_live, entry_record, find_entries, problems, settled_reason,
};

/// Marks entries done (`resolved how: done`). Every id is checked first: an unknown or
/// ambiguous id, an entry already resolved or settled, or (without `force`) an entry of
/// a live session fails the whole call and nothing is recorded.
pub(crate) fn mark_done(project: &Project, fold: &Fold, ids: &[String], force: bool) -> Result<Vec<Outcome>> {
    let entries = find_entries(fold, ids)?;
    mark_entries(project, fold, &entries, force)
}

/// What [`mark_done`] would do, checked the same way (a refusal is the same error), with
/// nothing recorded: one outcome per entry, `changed` false.
pub(crate) fn plan_mark(fold: &Fold, ids: &[String], force: bool) -> Result<Vec<Outcome>> {
    let entries = find_entries(fold, ids)?;
    check(fold, &entries, force)?;
    Ok(entries
        .iter()
        .map(|e| Outcome::of(e, format!("would mark {} ({}) done", fold.ids.short(&e.id), e.path), false))
        .collect())
}

fn check(fold: &Fold, entries: &[&Entry], force: bool) -> Result<()> {
    let mut errors = Vec::new();
    for e in entries {
        if let Some(why) = already_resolved(fold, e).or_else(|| settled_reason(fold, e)) {
            errors.push(why);
        } else if let Err(why) = check_live(fold, e, force) {
            errors.push(why);
        }
    }
    if !errors.is_empty() {
        return Err(TriageError::Refused(problems(&errors)));
    }
    Ok(())
}

fn mark_entries(project: &Project, fold: &Fold, entries: &[&Entry], force: bool) -> Result<Vec<Outcome>> {
    check(fold, entries, force)?;
    let mut batch = Batch::new();
    let mut records = Vec::new();
    let mut out = Vec::new();
    for e in entries {
        let mut r = entry_record(op::RESOLVED, e);
        r.how = Some(how::DONE.to_string());
        records.push(batch.stamp(r));
        out.push(Outcome {
            id: e.id.clone(),
            path: e.path.clone(),
            message: format!("marked {} ({}) done", fold.ids.short(&e.id), e.path),
            changed: true,
            ..Outcome::default()
        });
    }
    append(project, &records)?;
    Ok(out)
}
