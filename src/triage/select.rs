//! Entries by session and turn, for `revert --session SID [--prompt N]` and `diff --session`
//! (parity with Claude Code's `/rewind`, which rolls back whole turns).

use super::{TriageError, session_error};
use crate::fold::{Entry, EntryState, Fold};

/// The entries a session (or its turn `prompt`, 1-based in the order the prompts came) changed
/// files with, oldest first: not triaged yet, not settled as not applied, inside the project.
pub(crate) fn turn_entries<'f>(
    fold: &'f Fold,
    session: &str,
    prompt: Option<usize>,
) -> Result<Vec<&'f Entry>, TriageError> {
    let s = fold.find_session(session).map_err(|e| session_error(session, e))?;
    let (from, to) = match prompt {
        None => (None, None),
        Some(n) => {
            let count = s.prompts.len();
            if n == 0 || n > count {
                return Err(TriageError::Refused(format!(
                    "session {} has {count} prompt{}; --prompt takes 1 to {count} (`walj sessions show {}` lists them)",
                    fold.ids.session(&s.session),
                    if count == 1 { "" } else { "s" },
                    fold.ids.session(&s.session)
                )));
            }
            (Some(s.prompts[n - 1].ts.as_str()), s.prompts.get(n).map(|p| p.ts.as_str()))
        }
    };
    let entries: Vec<&Entry> = fold
        .entries_of(&s.session)
        .filter(|e| from.is_none_or(|f| e.ts.as_str() >= f) && to.is_none_or(|t| e.ts.as_str() < t))
        .filter(|e| e.last_action().is_none() && e.state() != EntryState::NotApplied && !e.outside)
        .collect();
    if entries.is_empty() {
        return Err(TriageError::Refused(match prompt {
            Some(n) => {
                format!("prompt {n} of session {} changed no file walj can act on", fold.ids.session(&s.session))
            }
            None => format!("session {} changed no file walj can act on", fold.ids.session(&s.session)),
        }));
    }
    Ok(entries)
}
