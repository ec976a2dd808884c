//! The one table of Claude Code hook events and tools walj uses (CLAUDE-CODE.md "Hook events").
//!
//! The hook dispatches on [`HookEvent`]; `walj install` writes one group per event of
//! [`HookEvent::ALL`] with [`HookEvent::matcher`]; `walj doctor` checks both. The tool lists
//! and the matcher string are generated from one list, so they cannot disagree.

/// Hook events walj handles, in the order `install` adds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    UserPromptSubmit,
    Stop,
    /// A turn ended by an API error (Claude Code 2.1.x: `error`, `error_details`,
    /// `last_assistant_message`); no Stop follows.
    StopFailure,
    SubagentStop,
    PreCompact,
    SessionStart,
    SessionEnd,
}

impl HookEvent {
    /// Every event walj hooks, in the order `install` adds them.
    pub const ALL: [HookEvent; 10] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::StopFailure,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
    ];

    /// The event's name in payloads (`hook_event_name`) and settings files (`hooks.<name>`).
    pub const fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::StopFailure => "StopFailure",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == s)
    }

    /// Whether the event is about one tool call (its settings group takes a matcher).
    pub const fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::PostToolUseFailure)
    }

    /// The matcher of the group `install` adds: [`TOOL_MATCHER`] for tool events, none otherwise.
    pub const fn matcher(self) -> Option<&'static str> {
        if self.is_tool_event() { Some(TOOL_MATCHER) } else { None }
    }
}

/// Claude Code 2.1.332's event for a skill's or slash command's `!` shell line (`tool_name`,
/// `tool_input.command`, `command_name`, `invoked_by`, a `tool_use_id` no transcript call
/// names). No Post event follows: its window closes at the session's next hook event. Not in
/// [`HookEvent::ALL`]: older Claude Code versions do not know it (see [`VERSIONED_EVENTS`]).
pub(crate) const PRE_SKILL_SHELL_COMMAND: &str = "PreSkillShellCommand";

/// Events walj hooks only where Claude Code has them: (name, the first version that fires it).
/// `walj install` writes one (a group without a matcher) only when `claude --version` says
/// that version or later ([`versioned_events`]); an unknown version gets none, and `walj
/// doctor` says so. The plugin's `hooks.json` cannot ask: it lists them all (Claude Code
/// 2.1.328 ignores an event it does not know at runtime, and its `plugin validate --strict`
/// warns "unknown hook event; entry ignored at runtime").
pub const VERSIONED_EVENTS: [(&str, [u32; 3]); 1] = [(PRE_SKILL_SHELL_COMMAND, [2, 1, 332])];

/// The [`VERSIONED_EVENTS`] a Claude Code of `version` fires (none when it is unknown).
pub fn versioned_events(version: Option<[u32; 3]>) -> Vec<&'static str> {
    let Some(v) = version else { return Vec::new() };
    VERSIONED_EVENTS.iter().filter(|(_, since)| v >= *since).map(|(name, _)| *name).collect()
}

/// The first version that fires the versioned event `name`, when it is one.
pub(crate) fn versioned_since(name: &str) -> Option<[u32; 3]> {
    VERSIONED_EVENTS.iter().find(|(n, _)| *n == name).map(|(_, since)| *since)
}

macro_rules! tool_table {
    (file: [$($file:literal),*], shell: $shell:literal, todo: [$($todo:literal),*], subagent: $sub:literal) => {
        /// Tools whose calls change files (entries).
        pub(crate) const FILE_TOOLS: &[&str] = &[$($file),*];
        /// The shell tool (bash snapshots, command entries).
        pub(crate) const SHELL_TOOL: &str = $shell;
        /// Tools whose calls are session context (todo lists).
        pub(crate) const TODO_TOOLS: &[&str] = &[$($todo),*];
        /// The tool that starts a subagent: journaled so its entries group under it and a
        /// subagent still running when the session died is told. Two more hook processes per
        /// subagent launch (its Pre and Post, each about a millisecond of walj's own time),
        /// none per call the subagent makes.
        pub(crate) const SUBAGENT_TOOL: &str = $sub;
        /// Tools walj needs to see in PreToolUse / PostToolUse / PostToolUseFailure: all of the
        /// above, by exact name (never `*`: every Read, Grep and MCP call would start a hook).
        pub(crate) const TOOL_MATCHER: &str = concat!($($file, "|",)* $shell $(, "|", $todo)*, "|", $sub);
    };
}

tool_table!(
    file: ["Edit", "Write", "MultiEdit", "NotebookEdit"],
    shell: "Bash",
    todo: ["TodoWrite", "TaskCreate", "TaskUpdate"],
    subagent: "Agent"
);

/// Whether missing `tool` from a tool-event matcher means file changes go unjournaled.
pub(crate) fn is_essential_tool(tool: &str) -> bool {
    FILE_TOOLS.contains(&tool) || tool == SHELL_TOOL
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_matcher_lists_every_tool() {
        for e in HookEvent::ALL {
            assert_eq!(HookEvent::parse(e.name()), Some(e));
        }
        assert_eq!(HookEvent::parse("Notification"), None);
        assert_eq!(TOOL_MATCHER, "Edit|Write|MultiEdit|NotebookEdit|Bash|TodoWrite|TaskCreate|TaskUpdate|Agent");
        let tools: Vec<&str> = FILE_TOOLS
            .iter()
            .copied()
            .chain([SHELL_TOOL])
            .chain(TODO_TOOLS.iter().copied())
            .chain([SUBAGENT_TOOL])
            .collect();
        assert_eq!(TOOL_MATCHER.split('|').collect::<Vec<_>>(), tools);
        assert!(is_essential_tool("Bash") && is_essential_tool("NotebookEdit") && !is_essential_tool("TodoWrite"));
        assert_eq!(HookEvent::PostToolUseFailure.matcher(), Some(TOOL_MATCHER));
        assert_eq!(HookEvent::Stop.matcher(), None);
    }

    #[test]
    fn a_versioned_event_is_hooked_from_its_version_on_and_never_for_an_unknown_one() {
        assert_eq!(versioned_events(Some([2, 1, 332])), [PRE_SKILL_SHELL_COMMAND]);
        assert_eq!(versioned_events(Some([3, 0, 0])), [PRE_SKILL_SHELL_COMMAND]);
        assert!(versioned_events(Some([2, 1, 331])).is_empty());
        assert!(versioned_events(Some([2, 1, 328])).is_empty());
        assert!(versioned_events(None).is_empty());
        assert_eq!(versioned_since(PRE_SKILL_SHELL_COMMAND), Some([2, 1, 332]));
        assert_eq!(versioned_since("Stop"), None);
        assert!(HookEvent::parse(PRE_SKILL_SHELL_COMMAND).is_none());
    }
}
