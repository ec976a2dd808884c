//! The steps of a bisect: the journal's changes grouped into the units the user can take
//! back, in the order they were applied (issue 32).
//!
//! - An Edit or a Write (of the main thread or of a subagent) is one step.
//! - A Bash command with every change it caused (its child entries) is one step.
//! - Commands whose windows (their intent line to their outcome line) overlapped, such as
//!   an async subagent's command beside the main thread's, form one combined step; the
//!   derived entries marked `uncertain` belong to their command, so to that step.
//!
//! Steps are ordered by their outcome records (`applied`, a command's outcome), which is
//! the order the changes reached the disk. Entries that changed nothing (not applied, a
//! failed file tool), that the user already reverted, or outside the project are not steps:
//! they are listed as [`LeftOut`] so the report can say so.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::fold::{Entry, EntryState, Fold};
use crate::journal::{Blob, op, tool};

use super::BisectError;

/// One path a step changed (one journal entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    /// The entry's id.
    pub entry: String,
    pub path: String,
    pub before: Option<Blob>,
    pub after: Option<Blob>,
    pub nocap: Option<String>,
    pub uncertain: bool,
}

/// One unit of the bisect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Step {
    /// 1-based position: state `n` is the tree after this step.
    pub n: usize,
    /// The entry id of a file tool call, the tool call id of a command.
    pub id: String,
    /// The tool calls of a combined step (one id otherwise).
    pub members: Vec<String>,
    pub tool: String,
    /// The path a file tool changed, or the command line (several, `;`-separated, when combined).
    pub what: String,
    pub session: String,
    /// When its outcome was recorded.
    pub ts: String,
    /// Journal line of its outcome (the order key).
    pub line: u64,
    pub changes: Vec<Change>,
}

impl Step {
    pub(crate) fn combined(&self) -> bool {
        self.members.len() > 1
    }
    /// The entry ids `walj revert` takes to undo this step alone.
    pub(crate) fn entry_ids(&self) -> Vec<String> {
        self.changes.iter().map(|c| c.entry.clone()).collect()
    }
}

/// An entry that is not part of any step, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeftOut {
    pub entry: String,
    pub path: String,
    pub why: String,
}

/// Which entries to bisect.
#[derive(Debug, Clone, Default)]
pub(crate) enum Scope {
    /// The session with the most recent change.
    #[default]
    LastSession,
    /// One session (full key).
    Session(String),
    /// Every session's changes applied at or after this instant.
    Since(chrono::DateTime<chrono::Utc>),
}

/// What the journal says of each tool call's outcome and of each command's window.
#[derive(Default)]
struct Lines {
    /// Entry id → line of its first outcome record.
    outcome: HashMap<String, u64>,
    /// Command id → (intent line, outcome line).
    window: HashMap<String, (Option<u64>, Option<u64>)>,
    command: HashMap<String, String>,
}

fn read_lines(journal: &Path) -> Result<Lines, BisectError> {
    let mut l = Lines::default();
    crate::journal::scan_records(journal, |no, r| {
        let outcome = r.op == op::APPLIED || r.op == op::FAILED;
        if r.path.is_empty() {
            if r.tool.as_deref() != Some(tool::BASH) || r.id.is_empty() {
                return;
            }
            let w = l.window.entry(r.id.clone()).or_default();
            if r.op == op::INTENT {
                w.0.get_or_insert(no);
            } else if outcome {
                w.1.get_or_insert(no);
            }
            if let Some(c) = r.get_str(crate::journal::key::COMMAND) {
                l.command.entry(r.id.clone()).or_insert_with(|| c.to_string());
            }
        } else if outcome {
            l.outcome.entry(r.id.clone()).or_insert(no);
        }
    })
    .map_err(|source| BisectError::Journal { path: journal.to_path_buf(), source })?;
    Ok(l)
}

/// Why an entry is not a step, or `None` when it is one.
fn left_out(e: &Entry) -> Option<&'static str> {
    if e.outside {
        return Some("outside the project: walj captured nothing there");
    }
    if e.v1 {
        return Some("recorded by a v1 journal line, without images");
    }
    match e.state() {
        EntryState::NotApplied => Some("the tool never changed the file (not applied)"),
        EntryState::Failed if e.parent.is_none() => Some("the tool call failed: it changed nothing"),
        EntryState::Reverted => Some("already reverted: its change is not in the tree"),
        _ => None,
    }
}

fn in_scope(e: &Entry, scope: &Scope) -> bool {
    match scope {
        Scope::LastSession => true,
        Scope::Session(s) => &e.session == s,
        Scope::Since(t) => {
            let ts = e.applied_ts.as_deref().unwrap_or(&e.ts);
            chrono::DateTime::parse_from_rfc3339(ts).is_ok_and(|x| x.with_timezone(&chrono::Utc) >= *t)
        }
    }
}

/// The steps of `scope`, in the order they were applied, and the entries left out.
/// `fold` must be loaded with `keep_settled` (every entry, persisted ones too).
pub(crate) fn steps(fold: &Fold, journal: &Path, scope: &Scope) -> Result<(Vec<Step>, Vec<LeftOut>), BisectError> {
    let lines = read_lines(journal)?;
    let scope = match scope {
        Scope::LastSession => {
            let last = fold.entries.iter().filter(|e| left_out(e).is_none()).max_by_key(|e| e.line);
            match last {
                Some(e) => Scope::Session(e.session.clone()),
                None => return Ok((Vec::new(), Vec::new())),
            }
        }
        s => s.clone(),
    };
    // Group entries: a command's children under the command, the others alone.
    let mut groups: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    let mut out = Vec::new();
    for e in fold.entries.iter().filter(|e| in_scope(e, &scope)) {
        if let Some(why) = left_out(e) {
            out.push(LeftOut { entry: e.id.clone(), path: e.path.clone(), why: why.to_string() });
            continue;
        }
        let key = e.parent.clone().unwrap_or_else(|| e.id.clone());
        groups.entry(key).or_default().push(e);
    }
    struct Group<'f> {
        ids: Vec<String>,
        entries: Vec<&'f Entry>,
        line: u64,
        window: Option<(u64, u64)>,
    }
    let mut list: Vec<Group> = groups
        .into_iter()
        .map(|(key, mut entries)| {
            entries.sort_by_key(|e| (lines.outcome.get(&e.id).copied().unwrap_or(e.line), e.line));
            let last_child = entries.iter().map(|e| lines.outcome.get(&e.id).copied().unwrap_or(e.line)).max();
            let is_command = entries.iter().any(|e| e.parent.as_deref() == Some(key.as_str()));
            let (line, window) = if is_command {
                let (start, end) = lines.window.get(&key).copied().unwrap_or_default();
                let first_child = entries.iter().map(|e| e.line).min().unwrap_or(0);
                let end = end.or(last_child).unwrap_or(0);
                (end.max(last_child.unwrap_or(0)), Some((start.unwrap_or(first_child), end)))
            } else {
                (last_child.unwrap_or(0), None)
            };
            // An uncertain change names the other commands that may have made it (their windows
            // were open too): they are members of this step, whether or not they kept entries.
            let mut ids = vec![key];
            for c in entries.iter().flat_map(|e| e.candidates.iter()) {
                if !ids.contains(c) {
                    ids.push(c.clone());
                }
            }
            Group { ids, entries, line, window }
        })
        .collect();
    list.sort_by_key(|g| g.line);
    // Combine commands whose windows overlap (in outcome order, each with the open one).
    let mut merged: Vec<Group> = Vec::new();
    for g in list {
        if let (Some(prev), Some((start, end))) = (merged.last_mut(), g.window)
            && let Some((ps, pe)) = prev.window
            && start <= pe
        {
            for id in g.ids {
                if !prev.ids.contains(&id) {
                    prev.ids.push(id);
                }
            }
            prev.entries.extend(g.entries);
            prev.line = prev.line.max(g.line);
            prev.window = Some((ps.min(start), pe.max(end)));
            continue;
        }
        merged.push(g);
    }
    let steps = merged
        .into_iter()
        .enumerate()
        .map(|(i, g)| {
            let first = g.entries[0];
            let is_command = g.window.is_some();
            let what = if is_command {
                g.ids.iter().map(|id| lines.command.get(id).cloned().unwrap_or_default()).collect::<Vec<_>>().join("; ")
            } else {
                first.path.clone()
            };
            let ts = g.entries.iter().filter_map(|e| e.applied_ts.clone()).max().unwrap_or_else(|| first.ts.clone());
            Step {
                n: i + 1,
                id: g.ids[0].clone(),
                members: g.ids.clone(),
                tool: if is_command { tool::BASH.to_string() } else { first.tool.clone() },
                what,
                session: first.session.clone(),
                ts,
                line: g.line,
                changes: g
                    .entries
                    .iter()
                    .map(|e| Change {
                        entry: e.id.clone(),
                        path: e.path.clone(),
                        before: e.before.clone(),
                        after: e.after.clone(),
                        nocap: e.nocap.clone(),
                        uncertain: e.uncertain,
                    })
                    .collect(),
            }
        })
        .collect();
    Ok((steps, out))
}

/// The prompt of the turn a step belongs to: the session's last prompt before it.
pub(crate) fn prompt_of<'f>(fold: &'f Fold, step: &Step) -> Option<&'f str> {
    let s = fold.session(&step.session)?;
    s.prompts.iter().rev().find(|p| p.ts <= step.ts).map(|p| p.text.as_str())
}
