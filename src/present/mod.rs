//! One presentation layer for the CLI (`report`, `walj diff`), the TUI and the briefs:
//! what each entry state and session status means and which colour it has
//! ([`state`]), the small text helpers every printer needs ([`text`]), and the one diff
//! model that `walj diff`, the hand-back brief and the TUI render from ([`diff`]).
//!
//! Colours are named by [`Tone`] here and mapped once per target: to ANSI codes by
//! [`crate::style::Style::tone`], to ratatui colours by `tui::theme`.

pub mod command;
pub mod diff;
pub mod git;
pub mod state;
pub mod text;

/// The colour of an id's unique start (bold), in `walj` listings and the TUI: like jj's change
/// ids. The rest of a shown id is dimmed.
pub(crate) const ID_TONE: Tone = Tone::Magenta;
/// The colour of a session's shown id (its unique start bold).
pub(crate) const SESSION_TONE: Tone = Tone::Cyan;

pub(crate) use state::Tone;
pub(crate) use state::{icon, label};
pub(crate) use state::{meaning, session_meaning, session_tone, tone};
pub use text::safe;
pub(crate) use text::{age, fit, pad, shown, width};
pub(crate) use text::{
    clip, hides_text, hms, human_ts, one_line, plural, safe_block, shell_quote, short_time, shown_path, utc_ts,
};
