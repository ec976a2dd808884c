//! Whether walj runs inside a Claude Code tool call (Claude's Bash tool, a slash command's `!`
//! line), from the environment Claude Code gives the commands it runs.
//!
//! Observed with Claude Code 2.1.328: a Bash tool command's environment has `CLAUDECODE=1`
//! (and `CLAUDE_CODE_ENTRYPOINT`); a terminal's has neither.

/// The variable Claude Code sets to `1` for the commands it runs.
pub(crate) const MARKER: &str = "CLAUDECODE";

/// Who acted, as triage records name it (`actor`), when Claude ran the command.
pub(crate) const ACTOR: &str = "claude";

/// True when this process runs inside a Claude Code tool call.
pub(crate) fn in_tool_call() -> bool {
    std::env::var_os(MARKER).is_some_and(|v| v == "1")
}
