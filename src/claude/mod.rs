//! Claude Code's boundary: everything walj knows about the agent it journals, in one place.
//!
//! - [`events`]: the one table of hook events and tools (the hook dispatches on it, `install`
//!   writes it, `doctor` checks it).
//! - [`payload`]: hook payloads on stdin; [`output`]: the JSON a hook prints back.
//! - [`paths`]: Claude Code's config folder (`$CLAUDE_CONFIG_DIR`, honoured only here) and the
//!   settings file of each scope.
//! - [`settings`]: merging walj's handlers into settings files and taking them out
//!   (`walj doctor` checks them: [`crate::doctor`]).
//! - [`env`]: whether walj runs inside a Claude Code tool call (who acted).
//! - [`transcript`]: the transcript line format (what walj reads of `~/.claude/projects/*.jsonl`).
//! - [`version`]: the version of the `claude` on PATH (`walj install` picks the hook form by it).

pub mod env;
pub mod events;
pub mod output;
pub mod paths;
pub mod payload;
pub mod settings;
pub mod transcript;
pub mod version;
