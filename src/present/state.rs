//! Entry states and session statuses as people read them: one icon, one colour and one
//! description each, shared by `recover`, `log`, the TUI, the SessionStart note and the
//! briefs.

use crate::fold::{EntryState, SessionStatus};

/// A colour by meaning; each output maps it once (ANSI in `style.rs`, ratatui in
/// `tui/theme.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Red,
    Yellow,
    Green,
    Blue,
    Cyan,
    Magenta,
    /// Quiet: settled, not applied, ended.
    Gray,
}

/// The colour of an entry state. Unfinished work is red (in flight, failed), unverified
/// work yellow, drift magenta, settled work green/blue/cyan by how it settled.
pub fn tone(s: EntryState) -> Tone {
    match s {
        EntryState::InFlight | EntryState::Failed => Tone::Red,
        EntryState::Applied => Tone::Yellow,
        EntryState::Drifted => Tone::Magenta,
        EntryState::Done | EntryState::Persisted => Tone::Green,
        EntryState::Reverted => Tone::Blue,
        EntryState::HandedBack => Tone::Cyan,
        EntryState::NotApplied => Tone::Gray,
    }
}

/// The colour of a session status.
pub fn session_tone(s: SessionStatus) -> Tone {
    match s {
        SessionStatus::Crashed => Tone::Red,
        SessionStatus::Live => Tone::Green,
        SessionStatus::Ended => Tone::Gray,
        SessionStatus::Unknown => Tone::Yellow,
    }
}

/// One character per state, so a glance down a list reads the situation.
pub fn icon(s: EntryState) -> &'static str {
    match s {
        EntryState::InFlight => "◐",
        EntryState::Applied => "●",
        EntryState::Failed => "✗",
        EntryState::Drifted => "≠",
        EntryState::Persisted => "✓",
        EntryState::NotApplied => "○",
        EntryState::Done => "✓",
        EntryState::Reverted => "↺",
        EntryState::HandedBack => "↪",
    }
}

/// The state's name in prose: `in flight`, `handed back`.
pub fn label(s: EntryState) -> String {
    s.as_str().replace('_', " ")
}

/// What the state means: the one description the note, the briefs and the TUI share.
pub fn meaning(s: EntryState) -> &'static str {
    match s {
        EntryState::InFlight => "the tool may not have run, or not finished",
        EntryState::Applied => "the tool ran, but the change was never verified on disk",
        EntryState::Failed => "the tool failed part-way",
        EntryState::Drifted => "the file changed since and matches neither image",
        EntryState::Persisted => "applied and verified on disk",
        EntryState::NotApplied => "the tool did not change the file",
        EntryState::Done => "marked done",
        EntryState::Reverted => "reverted to the pre-image",
        EntryState::HandedBack => "handed back to Claude",
    }
}

/// What the disk says of a file tool call that never reported its outcome.
pub fn in_flight_check(c: crate::fold::InFlightCheck) -> &'static str {
    use crate::fold::InFlightCheck::*;
    match c {
        Completed => "the disk holds the intended content: the tool completed",
        Unchanged => "not applied: the file is unchanged",
        Other => "partly applied or changed since: the disk holds neither the pre-image nor the intended content",
        WrittenByLater => {
            "the disk holds the intended content, but a later call wrote exactly that: whether this one ran is unknown"
        }
    }
}

/// What a session status means: the one description the TUI's session pane, `walj
/// sessions` and the resume brief can share. `agent`: the session's coding agent.
pub fn session_meaning(s: SessionStatus, agent: crate::agents::Agent) -> String {
    match s {
        SessionStatus::Crashed => {
            format!("no SessionEnd, and its {} process is gone: the session died mid-turn", agent.label())
        }
        SessionStatus::Live => format!("its {} process is still running", agent.label()),
        SessionStatus::Ended => "ended (SessionEnd seen)".to_string(),
        SessionStatus::Unknown => "walj cannot tell how it ended (no process information)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [EntryState; 9] = [
        EntryState::InFlight,
        EntryState::Applied,
        EntryState::Failed,
        EntryState::Drifted,
        EntryState::Persisted,
        EntryState::NotApplied,
        EntryState::Done,
        EntryState::Reverted,
        EntryState::HandedBack,
    ];

    #[test]
    fn unresolved_states_stand_out_and_failed_is_red() {
        for s in ALL {
            assert!(!meaning(s).is_empty());
            assert_eq!(
                s.is_unresolved(),
                tone(s) != Tone::Gray && !matches!(tone(s), Tone::Green | Tone::Blue | Tone::Cyan),
                "{s:?}"
            );
        }
        assert_eq!(tone(EntryState::Failed), Tone::Red);
        assert_eq!(label(EntryState::HandedBack), "handed back");
    }
}
