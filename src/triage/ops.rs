//! The operation log (`walj ops`, the TUI's `o`, like `jj op log`): every triage command the
//! journal holds, newest first, one per batch; and what `walj redo` does again.
//!
//! Both read the fold only: an action is a `resolved` record on an entry (undone or not), a
//! command is the records that share a `batch` id ([`super::action::Batch`]). An operation's
//! id is its batch id (an action id for a record written without one), so `walj undo OP` and
//! `walj redo OP` name a whole command.

use crate::fold::{Entry, Fold};
use crate::journal::{how, key};
use crate::present::plural;

/// [`Operation::how`] of an in-place `walj bisect`: every state it put in place, one operation
/// (never done again by `walj redo`: its states were intermediate).
pub(crate) const BISECT: &str = "bisect";

/// One command of the operation log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// The batch id (or the action id of a record without one).
    pub id: String,
    pub ts: String,
    /// `done`, `reverted`, `handed_back`, `not_applied`.
    pub how: String,
    /// The entries it acted on, in journal order.
    pub entries: Vec<String>,
    /// The paths it touched, in journal order.
    pub paths: Vec<String>,
    /// Every action of the command was undone since.
    pub undone: bool,
    /// Who recorded it (`claude` through the slash commands, else the user).
    pub actor: Option<String>,
    /// Journal line of its first record (journal order is the order commands ran in).
    pub line: u64,
}

impl Operation {
    /// "marked done", "reverted", "handed back".
    pub(crate) fn verb(&self) -> &'static str {
        match self.how.as_str() {
            how::DONE => "marked done",
            how::REVERTED => "reverted",
            how::HANDED_BACK => "handed back",
            how::NOT_APPLIED => "not applied",
            BISECT => "bisected",
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
pub(crate) fn operations(fold: &Fold) -> Vec<Operation> {
    // (batch or action id + how, operation)
    let mut ops: Vec<(String, Operation)> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for e in &fold.entries {
        for a in &e.actions {
            let id = a.record.get_str(key::BATCH).map_or_else(|| a.action.clone(), str::to_string);
            // An in-place bisect's states (a revert batch each) are one operation: the bisect.
            let bisect = a.record.get_str(key::BISECT).filter(|_| a.how == how::REVERTED);
            let (group, how) = match bisect {
                Some(run) => (format!("bisect\u{0}{run}"), BISECT.to_string()),
                None => (format!("{id}\u{0}{}", a.how), a.how.clone()),
            };
            match index.get(&group) {
                Some(&i) => {
                    let op = &mut ops[i].1;
                    if a.line < op.line {
                        op.line = a.line;
                        op.id = id;
                    }
                    op.entries.push(e.id.clone());
                    op.paths.push(e.path.clone());
                    op.undone &= a.undone;
                }
                None => {
                    index.insert(group.clone(), ops.len());
                    ops.push((
                        group,
                        Operation {
                            id,
                            ts: a.ts.clone(),
                            how,
                            entries: vec![e.id.clone()],
                            paths: vec![e.path.clone()],
                            undone: a.undone,
                            actor: a.record.get_str(key::ACTOR).map(str::to_string),
                            line: a.line,
                        },
                    ));
                }
            }
        }
    }
    ops.sort_by_key(|(_, op)| std::cmp::Reverse(op.line));
    ops.into_iter().map(|(_, op)| op).collect()
}

/// The operation whose id starts with `prefix` (several kinds in one batch: the newest).
pub(crate) fn find_operation<'o>(ops: &'o [Operation], prefix: &str) -> Result<&'o Operation, super::TriageError> {
    let mut ids: Vec<&str> = ops.iter().map(|o| o.id.as_str()).filter(|id| id.starts_with(prefix)).collect();
    ids.dedup();
    match ids.as_slice() {
        [] => {
            Err(super::TriageError::Refused(format!("no operation id starts with {prefix:?}; `walj ops` lists them")))
        }
        [one] => ops.iter().find(|o| o.id == *one).ok_or_else(|| super::TriageError::Refused(String::new())),
        many => Err(super::TriageError::Refused(format!(
            "{prefix:?} is ambiguous; it starts operations {}",
            many.iter().map(|i| crate::fold::abbrev(i, 12)).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// What `walj redo` does again: the operation `id` names, else the newest operation undone
/// whose entries are all open again. `Err` says why there is nothing to redo.
pub(crate) fn redo_target<'o>(
    fold: &Fold,
    ops: &'o [Operation],
    id: Option<&str>,
) -> Result<&'o Operation, super::TriageError> {
    let open = |op: &Operation| op.entries.iter().all(|i| fold.entry(i).is_some_and(Entry::is_unresolved));
    let op = match id {
        Some(p) => find_operation(ops, p)?,
        None => ops.iter().find(|o| o.undone && o.how != BISECT && open(o)).ok_or_else(|| {
            super::TriageError::Refused(
                "nothing to redo: no undone operation whose entries are all open again (`walj ops` lists them)".into(),
            )
        })?,
    };
    if !op.undone {
        return Err(super::TriageError::Refused(format!(
            "operation {} ({} {}) is not undone; nothing to redo",
            crate::fold::abbrev(&op.id, 12),
            op.verb(),
            op.what()
        )));
    }
    if !open(op) {
        return Err(super::TriageError::Refused(format!(
            "operation {} ({} {}) cannot be done again: some of its entries were resolved since",
            crate::fold::abbrev(&op.id, 12),
            op.verb(),
            op.what()
        )));
    }
    if op.how == BISECT {
        return Err(super::TriageError::Refused(format!(
            "operation {} is an in-place bisect: its states were intermediate, none is done again (run `walj bisect` again)",
            crate::fold::abbrev(&op.id, 12)
        )));
    }
    if ![how::DONE, how::REVERTED, how::HANDED_BACK].contains(&op.how.as_str()) {
        return Err(super::TriageError::Refused(format!(
            "operation {} ({}) is not one walj redoes",
            crate::fold::abbrev(&op.id, 12),
            op.verb()
        )));
    }
    Ok(op)
}
