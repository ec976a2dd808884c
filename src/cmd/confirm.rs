//! `--yes`, defined once: the "Claude must confirm" rule and the answer off a terminal.
//!
//! A command that changes files, settings or the journal's verdicts (marks, reverts, hands
//! back, deletes, rewrites) runs inside a Claude Code tool call only with `--yes`: Claude
//! acts on the user's word, never on its own (`cli::unconfirmed_change` refuses with
//! `cli::EXIT_NEEDS_YES` before anything is read). Off a terminal (Claude's Bash
//! tool, scripts) nothing prompts: where walj would ask, `--yes` stands for the answer, and
//! without it the command refuses with exit 1, naming the flag ([`Confirm::ask`]).

use std::io::IsTerminal;

/// The `--yes` flag every changing command flattens in (`#[command(flatten)]`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::Args)]
pub struct Confirm {
    /// Confirm: required when Claude runs this (inside a Claude Code tool call), and the
    /// answer to walj's questions off a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

impl Confirm {
    /// The rule for a command whose `--yes` has its own help (sync's "publish without asking",
    /// recover's "with --from-transcripts"): the same answer as the flattened flag.
    pub(crate) fn of(yes: bool) -> Confirm {
        Confirm { yes }
    }

    /// Whether a Claude Code tool call runs this without `--yes` (the command must not run).
    pub(crate) fn missing_in_tool_call(self) -> bool {
        !self.yes && crate::claude::env::in_tool_call()
    }

    /// Asks `question` on a terminal; `--yes` answers yes without asking; off a terminal
    /// without `--yes` says `refusal` (what was not done and the flag that does it) and
    /// answers no. `Ok(false)`: not confirmed.
    pub(crate) fn ask(self, question: &str, refusal: &str) -> std::io::Result<bool> {
        if self.yes {
            return Ok(true);
        }
        if on_terminal() {
            return super::prompt::confirm(question);
        }
        eprintln!("walj: {refusal}");
        Ok(false)
    }
}

/// Whether walj can ask: stdin and stderr are both a terminal.
pub(crate) fn on_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}
