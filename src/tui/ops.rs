//! The operation list (`o`, like `jj op log`): every triage action the journal holds,
//! newest first, one command per group; and what `ctrl+r` redoes after `u`.
//!
//! The list itself is [`crate::triage::ops`] (`walj ops` prints the same); redo reads the fold.

use crate::fold::{Entry, Fold};
use crate::journal::how;

use super::dialogs::Choice;

pub(crate) use crate::triage::ops::Operation;
pub(crate) use crate::triage::ops::operations;

/// What redo does after an undo that reopened `ids`: the action each one lost, again
/// (grouped by kind, in the order done, revert, hand back). Reverting and handing back
/// ask again through their dialogs; marking done does not write files.
pub(crate) fn redo_choices(fold: &Fold, ids: &[String]) -> Vec<Choice> {
    let undone_how = |e: &Entry| e.actions.iter().rev().find(|a| a.undone).map(|a| a.how.clone());
    let mut by_how: Vec<(String, Vec<String>)> = Vec::new();
    for id in ids {
        let Some(e) = fold.entry(id) else { continue };
        if !e.is_unresolved() {
            continue;
        }
        let Some(h) = undone_how(e) else { continue };
        match by_how.iter_mut().find(|(x, _)| *x == h) {
            Some((_, v)) => v.push(e.id.clone()),
            None => by_how.push((h, vec![e.id.clone()])),
        }
    }
    let order = [how::DONE, how::REVERTED, how::HANDED_BACK];
    by_how.sort_by_key(|(h, _)| order.iter().position(|o| o == h).unwrap_or(order.len()));
    by_how
        .into_iter()
        .filter_map(|(h, ids)| match h.as_str() {
            how::DONE => Some(Choice::Done { ids, force: false }),
            how::REVERTED => Some(Choice::Revert { ids, force: false }),
            how::HANDED_BACK => Some(Choice::HandBack { ids, force: false }),
            _ => None,
        })
        .collect()
}
