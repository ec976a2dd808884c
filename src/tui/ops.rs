//! The operation list (`o`, like `jj op log`): every triage action the journal holds,
//! newest first, one command per group; and what `ctrl+r` redoes after `u`.
//!
//! Both read the fold only: an action is a `resolved` record on an entry (undone or not),
//! a command is the records that share a `batch` id.

use crate::fold::{Entry, Fold};
use crate::journal::{how, key};
use crate::present::plural;

use super::dialogs::Choice;

/// One command of the operation list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub ts: String,
    /// `done`, `reverted`, `handed_back`, `not_applied`.
    pub how: String,
    /// The paths it touched, in journal order.
    pub paths: Vec<String>,
    /// Every action of the command was undone since.
    pub undone: bool,
    /// Who recorded it (`claude` through the slash commands, else the user).
    pub actor: Option<String>,
}

impl Operation {
    /// "marked done", "reverted", "handed back".
    pub fn verb(&self) -> &'static str {
        match self.how.as_str() {
            how::DONE => "marked done",
            how::REVERTED => "reverted",
            how::HANDED_BACK => "handed back",
            how::NOT_APPLIED => "not applied",
            _ => "resolved",
        }
    }

    /// "config/settings.json", or "config/settings.json and 2 more".
    pub fn what(&self) -> String {
        match self.paths.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            [first, rest @ ..] => format!("{first} and {}", plural(rest.len(), "more", "more")),
        }
    }
}

/// The journal's triage commands, newest first.
pub fn operations(fold: &Fold) -> Vec<Operation> {
    // (batch or action id, line of the first record, operation)
    let mut ops: Vec<(String, u64, Operation)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for e in &fold.entries {
        for a in &e.actions {
            let group = a.record.get_str(key::BATCH).map_or_else(|| a.action.clone(), str::to_string);
            let group = format!("{group}\u{0}{}", a.how);
            match index.get(&group) {
                Some(&i) => {
                    let op = &mut ops[i];
                    op.1 = op.1.min(a.line);
                    op.2.paths.push(e.path.clone());
                    op.2.undone &= a.undone;
                }
                None => {
                    index.insert(group.clone(), ops.len());
                    ops.push((
                        group,
                        a.line,
                        Operation {
                            ts: a.ts.clone(),
                            how: a.how.clone(),
                            paths: vec![e.path.clone()],
                            undone: a.undone,
                            actor: a.record.get_str(key::ACTOR).map(str::to_string),
                        },
                    ));
                }
            }
        }
    }
    ops.sort_by_key(|op| std::cmp::Reverse(op.1));
    ops.into_iter().map(|(_, _, op)| op).collect()
}

/// What redo does after an undo that reopened `ids`: the action each one lost, again
/// (grouped by kind, in the order done, revert, hand back). Reverting and handing back
/// ask again through their dialogs; marking done does not write files.
pub fn redo_choices(fold: &Fold, ids: &[String]) -> Vec<Choice> {
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
