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
pub(crate) fn state(s: EntryState) -> Style {
    Style::new().fg(color(present::tone(s)))
}

/// A session status as a badge: the status colour as background.
pub(crate) fn badge(st: SessionStatus) -> Style {
    match present::session_tone(st) {
        Tone::Red => Style::new().fg(Color::White).bg(Color::Red).add_modifier(Modifier::BOLD),
        Tone::Gray => Style::new().fg(Color::Gray).bg(Color::Indexed(237)),
        t => Style::new().fg(Color::Black).bg(color(t)),
    }
}

/// Plain text.
pub(crate) const PLAIN: Style = Style::new();
pub(crate) const BOLD: Style = Style::new().add_modifier(Modifier::BOLD);
/// Labels, hints, timestamps, settled paths.
pub(crate) const MUTED: Style = Style::new().fg(Color::DarkGray);
/// Secondary text: tool names, key labels.
pub(crate) const SOFT: Style = Style::new().fg(Color::Gray);
/// The last prompt in the tree.
pub(crate) const PROMPT: Style = Style::new().fg(Color::Gray).add_modifier(Modifier::ITALIC);
/// Needs attention: open counts, why an entry is unresolved, the filter.
pub(crate) const WARN: Style = Style::new().fg(Color::Yellow);
pub(crate) const ERROR: Style = Style::new().fg(Color::Red);
pub(crate) const ERROR_BOLD: Style = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
pub(crate) const OK: Style = Style::new().fg(Color::Green);
/// Todos, background commands, imported entries, hunk headers.
pub(crate) const INFO: Style = Style::new().fg(Color::Cyan);
/// Headings in the detail pane, keys in the footer and help.
pub(crate) const HEADING: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
pub(crate) const EVENT: Style = Style::new().fg(Color::Blue);
pub(crate) const EVENT_BOLD: Style = Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD);
pub(crate) const BRANCH: Style = Style::new().fg(Color::Magenta);
/// The ✚ of an entry picked with Space.
/// The unique start of a shown id (`present::ID_TONE`, bold); its rest is [`MUTED`].
pub(crate) const ID_UNIQUE: Style = Style::new().fg(color(present::ID_TONE)).add_modifier(Modifier::BOLD);
/// The unique start of a shown session (`present::SESSION_TONE`, bold); its rest is [`BOLD`].
pub(crate) const SESSION_UNIQUE: Style = Style::new().fg(color(present::SESSION_TONE)).add_modifier(Modifier::BOLD);
pub(crate) const MARK: Style = Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD);
/// Diff notes (binary, not captured, no newline).
pub(crate) const NOTE: Style = Style::new().fg(Color::Yellow).add_modifier(Modifier::ITALIC);

/// A search match in the diff.
pub(crate) const MATCH: Style = Style::new().fg(Color::Black).bg(Color::Yellow);

pub(crate) const CURSOR_BG: Color = Color::Indexed(238);
pub(crate) const CURSOR_BG_DIM: Color = Color::Indexed(236);
pub(crate) const ADD_EMPH: Style = Style::new().fg(Color::White).bg(Color::Indexed(22));
pub(crate) const DEL_EMPH: Style = Style::new().fg(Color::White).bg(Color::Indexed(52));
pub(crate) const BORDER: Color = Color::DarkGray;
pub(crate) const BORDER_FOCUS: Color = Color::Cyan;
/// Dialogs: a warning (conflict, live session) or a plain question.
pub(crate) const DIALOG_WARN: Color = Color::Yellow;
pub(crate) const DIALOG: Color = Color::Cyan;

/// How colours reach the terminal: the dark palette above as drawn, adapted to a light
/// background, or no colour at all (`NO_COLOR`), where reverse video and bold carry the
/// cues (the selected row, badges and marked words reversed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Theme {
    #[default]
    Dark,
    Light,
    Mono,
}

/// A `[theme] mode` value walj does not know (named in the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[theme] mode = {0:?}: expected auto, dark, light or mono")]
pub struct ThemeModeError(pub String);

impl Theme {
    /// `[theme] mode` of the config (`auto`, `dark`, `light`, `mono`), then `NO_COLOR`,
    /// then the terminal's own hint `COLORFGBG` ("15;0": light text on a dark background).
    pub fn detect(mode: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Result<Theme, ThemeModeError> {
        match mode.map(str::to_ascii_lowercase).as_deref() {
            Some("dark") => return Ok(Theme::Dark),
            Some("light") => return Ok(Theme::Light),
            Some("mono") | Some("none") => return Ok(Theme::Mono),
            None | Some("auto") => {}
            Some(other) => return Err(ThemeModeError(other.to_string())),
        }
        if env("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            return Ok(Theme::Mono);
        }
        // The last field is the background colour; 7 and 9–15 are light ones.
        let bg = env("COLORFGBG").and_then(|v| v.rsplit(';').next().and_then(|b| b.trim().parse::<u8>().ok()));
        Ok(match bg {
            Some(7) | Some(9..=15) => Theme::Light,
            _ => Theme::Dark,
        })
    }

    /// Adapts a frame drawn with the dark palette to this theme (one pass over the cells).
    pub(crate) fn adapt(self, buf: &mut ratatui::buffer::Buffer) {
        match self {
            Theme::Dark => {}
            Theme::Light => {
                for cell in buf.content.iter_mut() {
                    cell.fg = light(cell.fg, true);
                    cell.bg = light(cell.bg, false);
                }
            }
            Theme::Mono => {
                for cell in buf.content.iter_mut() {
                    if cell.bg != Color::Reset {
                        cell.modifier.insert(Modifier::REVERSED);
                    }
                    cell.fg = Color::Reset;
                    cell.bg = Color::Reset;
                }
            }
        }
    }
}

/// A dark-palette colour for a light background: dark text where it was light, light
/// backgrounds where they were dark.
fn light(c: Color, fg: bool) -> Color {
    match (c, fg) {
        (Color::White | Color::Gray, true) => Color::Black,
        (Color::DarkGray, true) => Color::Indexed(243),
        (Color::Yellow, true) => Color::Indexed(130),
        (Color::Cyan, true) => Color::Indexed(30),
        (Color::Green, true) => Color::Indexed(28),
        (Color::Indexed(22), false) => Color::Indexed(194),
        (Color::Indexed(52), false) => Color::Indexed(224),
        (Color::Indexed(236), false) => Color::Indexed(255),
        (Color::Indexed(237), false) => Color::Indexed(252),
        (Color::Indexed(238), false) => Color::Indexed(253),
        (c, _) => c,
    }
}
