//! A foreground Bash command without an outcome, in words: in flight while its session
//! runs, cut off once the session's agent is gone (`recover`, the SessionStart note, the TUI).

use super::{one_line, plural};
use crate::agents::Agent;
use crate::fold::{Command, CommandStatus, Entry, SessionStatus, Unseen};

/// Changes derived from command `id` (a killed command's children) among `entries`.
pub(crate) fn derived_changes<'a>(entries: impl IntoIterator<Item = &'a Entry>, id: &str) -> usize {
    // An undecided change (several commands ran, none named it) is counted in none of them.
    entries.into_iter().filter(|e| e.unfinished && !e.undecided && e.parent.as_deref() == Some(id)).count()
}

/// `None` unless `c` is a foreground command without an outcome. `changes`: how many
/// changes were derived from it ([`derived_changes`]); `width`: the command text's width;
/// `agent`: the session's coding agent (named when it stopped).
pub(crate) fn in_flight(
    c: &Command,
    status: SessionStatus,
    agent: Agent,
    changes: usize,
    width: usize,
) -> Option<String> {
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
    let unseen = c.unseen.as_ref().and_then(unseen).map(|u| format!("; {u}")).unwrap_or_default();
    Some(format!("command never finished ({} stopped while it ran): {cmd} — {detail}{unseen}", agent.label()))
}

/// A finished command whose snapshots left changes out of its entries (a cut list, paths past
/// the per-command bound): "command left changes out of the journal: CMD — not seen: …".
/// `None` for a command in flight (its own line says it) or one that saw everything that
/// matters here (only special or over-cap files, said on their entries).
pub(crate) fn left_out(c: &Command, width: usize) -> Option<String> {
    let u = c.unseen.as_ref()?;
    if c.status == CommandStatus::InFlight || !(u.cut_short || u.unlisted > 0 || u.reported_more > 0) {
        return None;
    }
    Some(format!("command left changes out of its entries: {} — {}", one_line(&c.command, width), unseen(u)?))
}

/// What a count of changes leaves out, in words (`None`: nothing): "not seen: 1 special
/// file (FIFO, socket or device), 2 files over the capture cap (compared by samples only)".
pub(crate) fn unseen(u: &Unseen) -> Option<String> {
    let mut parts = Vec::new();
    if u.special > 0 {
        let n = plural(u.special, "special file", "special files");
        parts.push(format!("{n} (FIFO, socket or device: never opened)"));
    }
    if u.unreadable > 0 {
        parts.push(format!("{} walj could not read", plural(u.unreadable, "file", "files")));
    }
    if u.too_large > 0 {
        let n = plural(u.too_large, "file", "files");
        parts.push(format!("{n} over the capture cap (compared by samples only)"));
    }
    if u.unlisted > 0 {
        let n = plural(u.unlisted, "path", "paths");
        let sample: Vec<_> = u.unlisted_sample.iter().map(|p| crate::present::text::safe(p)).collect();
        let sample = sample.join(", ");
        let more = if u.unlisted > u.unlisted_sample.len() { ", …" } else { "" };
        let list = u.unlisted_file.as_deref().map(|f| format!("; all listed in {f}")).unwrap_or_default();
        parts.push(format!(
            "{n} past the limit of entries per command ([bash] max_changes), not compared (may have changed): {sample}{more}{list}"
        ));
    } else if u.cut_short {
        parts.push("files past the snapshot's limit ([bash] max_files / max_ms), without a recorded image".to_string());
    }
    if u.reported_more > 0 {
        let n = u.reported_more;
        parts.push(format!(
            "{n} more {} Claude Code's own list of changed files left unnamed (it stops at 200) while walj's snapshot was off ([bash] snapshot = false): in no entry",
            if n == 1 { "file" } else { "files" }
        ));
    }
    (!parts.is_empty()).then(|| format!("not seen: {}", parts.join(", ")))
}
