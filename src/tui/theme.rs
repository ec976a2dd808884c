//! Every colour the dashboard draws with, by role. Entry states and session statuses take
//! theirs from the one table in [`crate::present`] (the CLI maps the same table to ANSI).

use ratatui::style::{Color, Modifier, Style};

use crate::fold::{EntryState, SessionStatus};
use crate::present::{self, Tone};

/// A [`Tone`] as a terminal colour.
pub const fn color(t: Tone) -> Color {
    match t {
        Tone::Red => Color::Red,
        Tone::Yellow => Color::Yellow,
        Tone::Green => Color::Green,
        Tone::Blue => Color::Blue,
        Tone::Cyan => Color::Cyan,
        Tone::Magenta => Color::Magenta,
        Tone::Gray => Color::DarkGray,
    }
}

/// An entry state's colour.
pub fn state(s: EntryState) -> Style {
    Style::new().fg(color(present::tone(s)))
}

/// A session status as a badge: the status colour as background.
pub fn badge(st: SessionStatus) -> Style {
    match present::session_tone(st) {
        Tone::Red => Style::new().fg(Color::White).bg(Color::Red).add_modifier(Modifier::BOLD),
        Tone::Gray => Style::new().fg(Color::Gray).bg(Color::Indexed(237)),
        t => Style::new().fg(Color::Black).bg(color(t)),
    }
}

/// Plain text.
pub const PLAIN: Style = Style::new();
pub const BOLD: Style = Style::new().add_modifier(Modifier::BOLD);
/// Labels, hints, timestamps, settled paths.
pub const MUTED: Style = Style::new().fg(Color::DarkGray);
/// Secondary text: tool names, key labels.
pub const SOFT: Style = Style::new().fg(Color::Gray);
/// The last prompt in the tree.
pub const PROMPT: Style = Style::new().fg(Color::Gray).add_modifier(Modifier::ITALIC);
/// Needs attention: open counts, why an entry is unresolved, the filter.
pub const WARN: Style = Style::new().fg(Color::Yellow);
pub const ERROR: Style = Style::new().fg(Color::Red);
pub const ERROR_BOLD: Style = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
pub const OK: Style = Style::new().fg(Color::Green);
/// Todos, background commands, imported entries, hunk headers.
pub const INFO: Style = Style::new().fg(Color::Cyan);
/// Headings in the detail pane, keys in the footer and help.
pub const HEADING: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
pub const EVENT: Style = Style::new().fg(Color::Blue);
pub const EVENT_BOLD: Style = Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD);
pub const BRANCH: Style = Style::new().fg(Color::Magenta);
/// The ✚ of an entry picked with Space.
pub const MARK: Style = Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD);
/// Diff notes (binary, not captured, no newline).
pub const NOTE: Style = Style::new().fg(Color::Yellow).add_modifier(Modifier::ITALIC);

pub const CURSOR_BG: Color = Color::Indexed(238);
pub const CURSOR_BG_DIM: Color = Color::Indexed(236);
pub const ADD: Style = Style::new().fg(Color::Green);
pub const DEL: Style = Style::new().fg(Color::Red);
pub const ADD_EMPH: Style = Style::new().fg(Color::White).bg(Color::Indexed(22));
pub const DEL_EMPH: Style = Style::new().fg(Color::White).bg(Color::Indexed(52));
pub const BORDER: Color = Color::DarkGray;
pub const BORDER_FOCUS: Color = Color::Cyan;
/// Dialogs: a warning (conflict, live session) or a plain question.
pub const DIALOG_WARN: Color = Color::Yellow;
pub const DIALOG: Color = Color::Cyan;
pub const HELP_BORDER: Style = Style::new().fg(Color::Cyan);
