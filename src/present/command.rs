//! A foreground Bash command without an outcome, in words: in flight while its session
//! runs, cut off once the session's agent is gone (`recover`, the SessionStart note, the TUI).

use super::{one_line, plural};
use crate::agents::Agent;
use crate::fold::{Command, CommandStatus, Entry, SessionStatus};

/// Changes derived from command `id` (a killed command's children) among `entries`.
pub fn derived_changes<'a>(entries: impl IntoIterator<Item = &'a Entry>, id: &str) -> usize {
    entries.into_iter().filter(|e| e.unfinished && e.parent.as_deref() == Some(id)).count()
}

/// `None` unless `c` is a foreground command without an outcome. `changes`: how many
/// changes were derived from it ([`derived_changes`]); `width`: the command text's width;
/// `agent`: the session's coding agent (named when it stopped).
pub fn in_flight(c: &Command, status: SessionStatus, agent: Agent, changes: usize, width: usize) -> Option<String> {
    if c.status != CommandStatus::InFlight || c.background {
        return None;
    }
    let cmd = one_line(&c.command, width);
    if matches!(status, SessionStatus::Live | SessionStatus::Unknown) && c.running.is_none() {
        return Some(format!("command in flight: {cmd}"));
    }
    let found = plural(changes, "change", "changes");
    let detail = match c.running {
        Some(n) => format!("still running ({}), {found} so far", plural(n, "process", "processes")),
        None if changes == 0 => "no changes found".to_string(),
        None => format!("{found} since it started"),
    };
    Some(format!("command never finished ({} stopped while it ran): {cmd} — {detail}", agent.label()))
}
