//! Triage: what the user does about journal entries (issue 3) — look at a change
//! (`diff`), mark it done, revert it, undo any of that, or hand it back to Claude.
//!
//! Every action is a record appended to the journal (DESIGN §1: like jj's operation log,
//! undo is a new record, never a deletion):
//!
//! | action | records |
//! |---|---|
//! | mark done | `resolved` `how: done`, `action` = new id |
//! | revert | `resolved` `how: reverted`, `before` = bytes overwritten (stored first), `after` = bytes written (`null` = deleted) |
//! | hand back | `resolved` `how: handed_back` per entry + one `handoff` record (`brief`, `entries`, `kind: handback`) |
//! | undo | `undo`, `id` = entry id, `target` = the action undone (`before`/`after` when it wrote) |
//! | (revert, undo: before writing) | `audit` `kind: capture`, `before`/`after` and `action` of the record to come |
//!
//! Records written by one command share a `batch` id (and carry their `seq` in it), so
//! `walj undo` without an id undoes the whole last command, in reverse order.
//!
//! The functions here return data and change nothing on bad input; `cmd::triage`
//! prints. The TUI calls the same functions.

mod action;
mod diff;
mod folders;
mod handoff;
mod head;
mod link;
mod mark;
pub mod ops;
pub mod origin;
mod place;
mod revert;
mod select;
mod undo;

pub use diff::diff_sides;
pub(crate) use diff::mode_change;
pub(crate) use folders::FolderPlan;
pub(crate) use handoff::Brief;
pub use handoff::handoff;
pub(crate) use handoff::handoff_with_note;
pub use handoff::{HandoffOptions, MAX_BRIEF};
pub(crate) use handoff::{deliver as deliver_held, held as held_briefs};
pub(crate) use mark::{mark_done, plan_mark};
pub(crate) use revert::RevertOptions;
pub use revert::RevertPlan;
pub use revert::plan_revert;
pub(crate) use revert::revert;
pub(crate) use select::turn_entries;
pub(crate) use undo::plan_undo;
pub(crate) use undo::undo;

pub(crate) use action::find_entry;

/// Why a triage action did not happen (or stopped part-way). The message says which, and what
/// was changed: a refusal changes nothing; a failure names what this call already did.
#[derive(Debug, thiserror::Error)]
pub enum TriageError {
    /// Refused before anything changed: unknown or ambiguous id, live session, conflict, a
    /// file that changed under the action (every reason, one per line).
    #[error("{0}")]
    Refused(String),
    /// A step failed: storing bytes, staging or committing a write, appending to the journal.
    #[error("{0}")]
    Failed(String),
    /// Refused before anything changed because at least one entry conflicts (a revert whose
    /// change cannot be taken out alone): the same message as `Refused`, and one outcome per
    /// entry, the conflicting ones with [`Outcome::conflict`] set (`--json` prints them).
    #[error("{message}")]
    Conflict { message: String, outcomes: Vec<Outcome> },
}

/// `--session SID` that names no session, or several.
pub(crate) fn session_error(prefix: &str, e: crate::fold::IdError) -> TriageError {
    match e {
        crate::fold::IdError::Unknown(_) => TriageError::Refused(format!(
            "no session matches {prefix:?}; `walj sessions list` shows the sessions of this project"
        )),
        crate::fold::IdError::Ambiguous { candidates, .. } => {
            TriageError::Refused(format!("{prefix:?} is ambiguous; it matches sessions {}", candidates.join(", ")))
        }
    }
}

/// Results of the triage actions.
pub(crate) type Result<T, E = TriageError> = std::result::Result<T, E>;
pub(crate) use crate::present::diff::DiffSides;
pub use crate::present::diff::Side;

/// Which two versions `diff_sides` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiffMode {
    /// The entry's pre-image → the file on disk now (default).
    #[default]
    Disk,
    /// The pre-image → the post-image: what the tool did.
    Applied,
    /// The file in git's HEAD → the file on disk now.
    Head,
}

/// The result of a triage action on one entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The entry's full id.
    pub id: String,
    pub path: String,
    /// What happened (or, for dry runs, what would happen), one line.
    pub message: String,
    /// Whether the journal or a file changed (false for dry runs and no-ops).
    pub changed: bool,
    /// Another program wrote the file while a revert or an undo ran (after its plan, up to
    /// the instant of its write): nothing of the action was written to it (`changed` is
    /// false), and the actions after it in the same call were not attempted. The exception:
    /// a swap that could not be taken back (`changed` is true, `kept` names what it replaced).
    pub concurrent: bool,
    /// Bytes another program wrote meanwhile that the action found in what it swapped out,
    /// kept in the store (blob ids; `GIT_OBJECT_DIRECTORY=.walj/store git cat-file -p ID`).
    pub kept: Vec<String>,
    /// The action was refused because of a conflict: the conflicting regions, for people
    /// (a heading per region, its lines indented). `None`: no conflict.
    pub conflict: Option<Vec<String>>,
}

impl Outcome {
    /// The outcome of an action on `e`: `message`, and whether anything changed.
    pub(crate) fn of(e: &crate::fold::Entry, message: String, changed: bool) -> Outcome {
        Outcome { id: e.id.clone(), path: e.path.clone(), message, changed, ..Outcome::default() }
    }
}
