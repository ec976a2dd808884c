//! The command line: clap's argument structs and the dispatch to [`crate::cmd`]. `main.rs`
//! parses with [`Cli`] except on the hook's hot path (`walj hook`), which skips clap.
//!
//! A new command: a variant of [`Command`] (doc comment = its help line) and an arm in [`run`].

use std::path::PathBuf;

use clap::{CommandFactory, Parser, Subcommand};

use crate::cmd::{self, Global};

#[derive(Parser)]
#[command(name = "walj", version, about = "A write-ahead journal that makes Claude Code sessions crash-resilient")]
pub struct Cli {
    /// Project root (default: the git top level above the start folder, $CLAUDE_PROJECT_DIR or the current folder; docs/project-root.md).
    #[arg(long, global = true, value_name = "DIR", help_heading = "Global options")]
    pub project: Option<PathBuf>,
    /// Journal file (default: <project>/.walj/journal.jsonl).
    #[arg(long, global = true, env = "WALJ_JOURNAL", value_name = "FILE", help_heading = "Global options")]
    pub journal: Option<PathBuf>,
    /// Colour: auto (terminals; NO_COLOR turns it off, CLICOLOR_FORCE on), always, never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = crate::style::ColorWhen::Auto, help_heading = "Global options")]
    pub color: crate::style::ColorWhen,
    /// Print long output (diff, log) straight to stdout, not through $PAGER (`less -FRX`).
    #[arg(long, global = true, help_heading = "Global options")]
    pub no_pager: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Handle one hook payload on stdin (run by the coding agent; always exits 0).
    #[command(
        after_help = "Examples:\n  walj hook < payload.json                 # what Claude Code runs on each hook event\n  walj hook --agent codex < payload.json   # what `walj install --agent codex` configures\n  walj hook --project ~/src/shop < payload.json"
    )]
    Hook {
        /// Whose payload this is: claude, codex, gemini or copilot (default: recognised from
        /// the payload, Claude Code unless it carries another agent's marks).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Show unresolved entries, grouped by session, then event.
    #[command(
        after_help = "Examples:\n  walj recover                             # what the last crash left unresolved\n  walj recover --exit-code >/dev/null || echo \"walj: unresolved\""
    )]
    Recover(cmd::recover::RecoverArgs),
    /// Rebuild journal records from Claude Code transcripts, or from Codex's, Gemini's and
    /// Copilot's session files (default: this project's).
    #[command(
        after_help = "Examples:\n  walj import                              # this project's recent Claude Code transcripts\n  walj import ~/.claude/projects/-home-me-shop/8f14e45f.jsonl\n  walj import --agent codex                # this project's Codex sessions (~/.codex/sessions)\n  walj import ~/.copilot/session-state/0c2a2fe9-4cc1-4e01-9e8b-b3c500dd521d/events.jsonl"
    )]
    Import(cmd::import::ImportArgs),
    /// List journal entries in every state.
    #[command(
        after_help = "Examples:\n  walj log                                 # the last 50 entries, every state\n  walj log --all --json | jq '.[] | select(.status == \"drifted\")'"
    )]
    Log(cmd::recover::LogArgs),
    /// Summary of the journal, store and sessions.
    #[command(after_help = "Examples:\n  walj status\n  walj status --json | jq .unresolved")]
    Status {
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add walj's hooks to Claude Code's settings (default: .claude/settings.json).
    #[command(
        after_help = "Examples:\n  walj install                             # .claude/settings.json (committed)\n  walj install --local                     # .claude/settings.local.json (this machine)\n  walj install --form shell                # `\"command\": \"walj hook\"`, for Claude Code before 2.1.139"
    )]
    Install(cmd::setup::SettingsArgs),
    /// Remove exactly the hooks `walj install` added.
    #[command(after_help = "Examples:\n  walj uninstall\n  walj uninstall --user")]
    Uninstall(cmd::setup::SettingsArgs),
    /// Write walj as a Claude Code plugin (hooks, slash commands, this binary) into DIR.
    #[command(
        after_help = "Examples:\n  walj plugin --out ~/.local/share/walj-plugin && claude --plugin-dir ~/.local/share/walj-plugin"
    )]
    Plugin(cmd::plugin::PluginArgs),
    /// Check the hook installation, the journal and the error log.
    #[command(after_help = "Examples:\n  walj doctor\n  walj doctor --json --plugin-dir ~/.local/share/walj-plugin")]
    Doctor(cmd::setup::DoctorArgs),
    /// The keyboard recovery dashboard: see what was in flight, read diffs, triage.
    #[command(
        after_help = "Examples:\n  walj tui\n  walj tui --demo                          # try it on a sample crashed session"
    )]
    Tui {
        /// Open on a sample project with a crashed session (built in a temp folder, removed on quit).
        #[arg(long)]
        demo: bool,
        /// With --demo: keep the sample project's folder after quitting.
        #[arg(long, requires = "demo")]
        keep: bool,
        /// (internal) replay the demo's hooks in DIR.
        #[arg(long, hide = true, value_name = "DIR")]
        demo_replay: Option<PathBuf>,
    },
    /// Verify applied entries against the disk; record persisted entries and an audit.
    #[command(
        after_help = "Examples:\n  walj checkpoint\n  walj checkpoint --every 300               # every 5 minutes, in a terminal"
    )]
    Checkpoint(cmd::recover::CheckpointArgs),
    /// Show an entry's change as a unified diff (pre-image → disk by default).
    #[command(
        after_help = "Examples:\n  walj diff 01EditCfg                      # pre-image → disk\n  walj diff 01EditCfg --applied -U 10       # what the tool did, more context\n  walj diff --session 8f14e4 --prompt 2     # everything the second turn changed"
    )]
    Diff {
        /// Entry id or unique prefix.
        #[arg(required_unless_present = "session", conflicts_with = "session")]
        id: Option<String>,
        /// Every change of this session, one diff after the other (oldest first).
        #[arg(long, value_name = "SID")]
        session: Option<String>,
        /// Only the changes of this prompt's turn (1 = the session's first prompt).
        #[arg(long, value_name = "N", requires = "session")]
        prompt: Option<usize>,
        /// Pre-image → post-image: what the tool did.
        #[arg(long, conflicts_with = "head")]
        applied: bool,
        /// git HEAD → disk.
        #[arg(long)]
        head: bool,
        /// Lines of context around changes.
        #[arg(short = 'U', long, default_value_t = 3)]
        context: usize,
        /// Print each entry with its two sides and diff as JSON (docs/formats.md).
        #[arg(long)]
        json: bool,
    },
    /// Mark entries resolved (`--done`): you checked them, nothing to do.
    #[command(after_help = "Examples:\n  walj mark 01EditCfg --done\n  walj mark --done --session 8f14e4")]
    Mark(cmd::triage::MarkArgs),
    /// Bring paths back to the entries' pre-images (newest first; later changes kept by a three-way merge).
    #[command(
        after_help = "Examples:\n  walj revert 01WriteDoc --dry-run         # say what would happen\n  walj revert 01WriteDoc 01EditCfg          # the current bytes go into the store first\n  walj revert --session 8f14e4 --prompt 3   # roll back one turn, like /rewind"
    )]
    Revert(cmd::triage::RevertArgs),
    /// Find the step (tool call) after which CMD fails, and how to undo only it.
    #[command(
        after_help = "Exit codes of CMD as `git bisect run`: 0 good, 1-127 bad, 125 skip, 128+ aborts.\n\nExamples:\n  walj bisect -- cargo test --lib           # in a scratch copy of the tree\n  walj bisect --in-place --runs 3 -- npm test\n  walj bisect --since 3h --json -- make check"
    )]
    Bisect(cmd::bisect::BisectArgs),
    /// Undo the last operation (or an operation of `walj ops`, or the last action on an entry).
    #[command(
        after_help = "Examples:\n  walj undo                                # the last operation\n  walj undo --dry-run                      # say what it would take back\n  walj undo 01WriteDoc                     # the last action on this entry"
    )]
    Undo(cmd::triage::UndoArgs),
    /// Do again what the last undo took back (or an undone operation of `walj ops`).
    #[command(after_help = "Examples:\n  walj redo\n  walj redo 01JD3K --dry-run")]
    Redo(cmd::triage::RedoArgs),
    /// Serve this project's journal to Claude over MCP (stdio, read-only; docs/plugin.md).
    #[command(
        after_help = "Examples:\n  walj mcp                                 # what Claude Code starts (the plugin, `walj install --mcp`)\n  walj install --mcp                       # declare it in the project's .mcp.json"
    )]
    Mcp,
    /// The operation log: every mark, revert and hand-back, newest first, with its id.
    #[command(after_help = "Examples:\n  walj ops\n  walj ops --json | jq '.[0].id'")]
    Ops(cmd::triage::OpsArgs),
    /// Hand entries back to Claude: a brief delivered at the next SessionStart.
    #[command(
        after_help = "Examples:\n  walj handoff --session 8f14e4            # a brief for the next session start\n  walj handoff --print                     # only print it"
    )]
    Handoff(cmd::triage::HandoffArgs),
    /// Sessions: list, show, resume, transcript, export, import, delete (default: list).
    #[command(after_help = "Examples:\n  walj sessions\n  walj sessions show 8f14e4")]
    Sessions {
        /// With no subcommand: print the list as JSON (`walj sessions list --json`).
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        command: Option<SessionsCommand>,
    },
    /// Background commands of every session, and whether they still run.
    #[command(after_help = "Examples:\n  walj procs\n  walj procs restart bash_1")]
    Procs {
        /// Print the commands as JSON.
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        command: Option<ProcsCommand>,
    },
    /// Rewrite the journal without settled records older than the retention; remove unnamed objects.
    #[command(after_help = "Examples:\n  walj compact --dry-run\n  walj compact --days 7")]
    Compact(cmd::compact::CompactArgs),
    /// Publish this journal to the project's git remote (refs/walj/) and fetch the other machines'.
    #[command(after_help = "Examples:\n  \
        walj sync                                # push this journal, fetch the others (asks once per remote)\n  \
        walj sync --status                       # what is ahead or behind, per machine\n  \
        walj sync --remote backup --dry-run --json")]
    Sync(cmd::sync::SyncArgs),
    /// Print the completion script for a shell (bash, zsh, fish, powershell, elvish); bash, zsh and fish also complete entry and session ids.
    #[command(after_help = "Examples:\n  \
        walj completions bash > ~/.local/share/bash-completion/completions/walj\n  \
        walj completions zsh > \"${fpath[1]}/_walj\"\n  \
        walj completions fish > ~/.config/fish/completions/walj.fish\n  \
        walj completions powershell >> $PROFILE")]
    Completions(cmd::completions::CompletionsArgs),
    /// (internal) The entry or session ids a completion script offers for a command line.
    #[command(
        name = "__complete-ids",
        hide = true,
        after_help = "Examples:\n  walj __complete-ids --shell bash --cword 2 -- walj diff Ab\n  walj __complete-ids --shell fish --cword 3 -- walj revert --session 8f"
    )]
    CompleteIds(cmd::completions::CompleteIdsArgs),
    /// Print the manual page walj(1) in roff, or write every page into a folder.
    #[command(after_help = "Examples:\n  \
        walj man | man -l -\n  \
        walj man --out ~/.local/share/man/man1     # walj.1, walj-recover.1, …")]
    Man(cmd::man::ManArgs),
    /// (internal) The per-checkout watcher of Bash snapshots, started by the hook.
    #[command(
        hide = true,
        after_help = "Examples:\n  walj watch --root . --observed .walj/observed.jsonl     # what a hook starts, detached"
    )]
    Watch(cmd::watch::WatchArgs),
    /// (internal) Folds the journal into its snapshot and prints nothing, started detached by a
    /// SessionStart whose fold ran out of time, so the next reader reads only what is left;
    /// then imports the sessions walj's hooks never saw that SessionStart left to it.
    #[command(
        hide = true,
        after_help = "Examples:\n  walj fold --project . --starting SID     # what a SessionStart starts, detached"
    )]
    Fold {
        /// The session whose SessionStart started it: left to its own hooks, never imported.
        #[arg(long, value_name = "SID")]
        starting: Option<String>,
    },
    /// (internal) The full scan after a turn that used the watcher, started detached by Stop.
    #[command(
        hide = true,
        after_help = "Examples:\n  walj reconcile --session ID --project .     # what a Stop hook starts, detached"
    )]
    Reconcile(cmd::watch::ReconcileArgs),
    /// (internal) Reads and stores what a Bash snapshot could not in its time, started detached
    /// by SessionStart and by a snapshot cut short.
    #[command(
        hide = true,
        after_help = "Examples:\n  walj fill --project .     # what a SessionStart starts, detached"
    )]
    Fill,
    /// (internal) Copies the images a Bash PostToolUse spilled into the store, started
    /// detached by that hook; prints what it did as JSON.
    #[command(
        hide = true,
        after_help = "Examples:\n  walj settle --project .     # what a codemod's PostToolUse starts, detached"
    )]
    Settle,
}

#[derive(Subcommand)]
pub enum SessionsCommand {
    /// Every session: state, times, branch, prompts, todos, unresolved entries, size.
    #[command(after_help = "Examples:\n  walj sessions list\n  walj sessions list --json")]
    List {
        /// Print the sessions as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One session in full.
    #[command(after_help = "Examples:\n  walj sessions show 8f14e4\n  walj sessions show 8f14 --json")]
    Show {
        /// Session id or unique prefix.
        sid: String,
        /// Print the session as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a brief for Claude and give it to the next session start in this project.
    #[command(after_help = "Examples:\n  walj sessions resume 8f14e4\n  walj sessions resume 8f14e4 --print-only")]
    Resume(cmd::sessions::ResumeArgs),
    /// Write the safe copy of the session's transcript where Claude Code finds it for this
    /// project (`claude --resume` reopens it), or to -o FILE, or to stdout with -o -.
    #[command(
        after_help = "Examples:\n  walj sessions transcript 8f14e4\n  walj sessions transcript 8f14e4 -o transcript.jsonl\n  walj sessions transcript 8f14e4 -o - | jq ."
    )]
    Transcript {
        /// Session id or unique prefix.
        sid: String,
        /// Write it to FILE (`-`: stdout) instead of Claude Code's projects folder.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Replace FILE if it exists (its bytes are kept beside it as .bak).
        #[arg(long)]
        force: bool,
    },
    /// Write a repaired copy of a transcript Claude Code will not resume whole (torn or
    /// NUL-padded tail, tool calls cut off, lines lost) under a new session id, and give it
    /// the session's brief; the original is left as it is.
    #[command(
        after_help = "Examples:\n  walj sessions repair 8f14e4 --dry-run\n  walj sessions repair 8f14e4\n  walj sessions repair 8f14e4 --json"
    )]
    Repair(cmd::sessions::RepairArgs),
    /// Write the session (records, objects, transcript) to one bundle file.
    #[command(after_help = "Examples:\n  walj sessions export 8f14e4 -o session.walj --encrypt")]
    Export(cmd::sessions::ExportArgs),
    /// Add a session from a bundle file to this project (idempotent).
    #[command(
        after_help = "Examples:\n  walj sessions import session.walj --dry-run\n  walj sessions import session.walj\n  walj sessions import session.walj -i ~/.config/age/key.txt --yes"
    )]
    Import(cmd::sessions::ImportArgs),
    /// Remove the session's records, the objects nothing else names, and its transcript copy.
    #[command(after_help = "Examples:\n  walj sessions delete 8f14e4 --dry-run\n  walj sessions delete 8f14e4")]
    Delete(cmd::sessions::DeleteArgs),
}

#[derive(Subcommand)]
pub enum ProcsCommand {
    /// Start a background command again, detached, output to .walj/procs/<id>.log.
    #[command(after_help = "Examples:\n  walj procs restart bash_1\n  walj procs restart bash_1 --dry-run")]
    Restart(cmd::procs::ProcsRestartArgs),
}

/// Runs a parsed command (not `hook`: the binary runs that itself, exit 0 whatever happens).
pub fn run(command: Command, global: &Global) -> anyhow::Result<i32> {
    // With `recover --exit-code`, 1 means "something is unresolved": a failure is 2.
    let failed = match &command {
        Command::Recover(a) if a.exit_code => Some(cmd::recover::EXIT_RECOVER_FAILED),
        _ => None,
    };
    match (run_command(command, global), failed) {
        (Err(e), Some(code)) if !cmd::is_broken_pipe(&e) => {
            cmd::print_error(&e);
            Ok(code)
        }
        (r, _) => r,
    }
}

fn run_command(command: Command, global: &Global) -> anyhow::Result<i32> {
    if let Command::Plugin(a) = &command {
        return cmd::plugin::plugin_cmd(&a.out, a.launcher);
    }
    if let Command::Completions(a) = &command {
        return cmd::completions::completions(a, &Cli::command());
    }
    if let Command::CompleteIds(a) = &command {
        return Ok(cmd::completions::complete_ids(a, &Cli::command()));
    }
    if let Command::Man(a) = &command {
        return cmd::man::man(a, Cli::command());
    }
    if let Command::Watch(a) = &command {
        return cmd::watch::watch(a);
    }
    if let Some(name) = unconfirmed_change(&command) {
        return Ok(refuse_in_tool_call(name));
    }
    // A journal named on the command line that is not there is a mistake (a typo, the wrong
    // checkout), not an empty journal: reading it as one would say "nothing recorded".
    // `import` may start a new journal there.
    if let Some(j) = &global.journal
        && !matches!(command, Command::Import(_) | Command::Hook { .. })
        && let Err(e) = std::fs::symlink_metadata(j)
    {
        let why = if e.kind() == std::io::ErrorKind::NotFound { "no such file".to_string() } else { e.to_string() };
        cmd::print_error(&anyhow::anyhow!("--journal {}: {why}", j.display()));
        return Ok(EXIT_USAGE);
    }
    let project = global.project()?;
    // A `.walj/` walj did not make is neither read nor written (docs/security.md); doctor
    // reports it, uninstall removes only walj's settings.
    // `mcp` says it in each tool's answer: Claude sees why, the server still starts.
    if !matches!(command, Command::Doctor(_) | Command::Uninstall(_) | Command::Hook { .. } | Command::Mcp) {
        cmd::refuse_foreign_dir(&project)?;
    }
    match command {
        Command::Hook { .. } => Ok(0),
        Command::Recover(a) => {
            if a.from_transcripts {
                cmd::import::recover_from_transcripts(&project, a.yes)?;
            }
            // Paged on a terminal like `log` (not while `--from-transcripts` may ask a question).
            let _paged = cmd::pager::start(global.no_pager || a.json || a.from_transcripts);
            cmd::recover::recover(&project, a.json, a.session, a.exit_code, a.from_transcripts)
        }
        Command::Import(a) => cmd::import::import_cmd(&project, a),
        Command::Log(a) => {
            let _paged = cmd::pager::start(global.no_pager || a.json);
            cmd::recover::log(&project, a)
        }
        Command::Status { json } => cmd::recover::status(&project, json),
        // `--mcp`: walj's MCP server in `.mcp.json`, not the hooks.
        Command::Install(a) if a.mcp => cmd::mcp::install_cmd(&project, a.local, a.user, a.yes),
        Command::Install(a) => cmd::setup::install_cmd(&project, a),
        Command::Uninstall(a) if a.mcp => cmd::mcp::uninstall_cmd(&project),
        Command::Uninstall(a) => cmd::setup::uninstall_cmd(&project, a),
        Command::Plugin(_)
        | Command::Completions(_)
        | Command::CompleteIds(_)
        | Command::Man(_)
        | Command::Watch(_) => Ok(0),
        Command::Doctor(a) => cmd::setup::doctor(&project, a),
        Command::Reconcile(a) => cmd::watch::reconcile(&project, &a),
        Command::Fill => cmd::watch::fill(&project),
        Command::Settle => cmd::watch::settle(&project),
        Command::Fold { starting } => cmd::recover::fold_cmd(&project, starting.as_deref()),
        Command::Tui { demo_replay: Some(dir), .. } => cmd::tui::demo_replay(&dir),
        Command::Tui { demo, keep, .. } => cmd::tui::tui_cmd(&project, demo, keep),
        Command::Checkpoint(a) => cmd::recover::checkpoint_cmd(&project, a),
        Command::Diff { id, session, prompt, applied, head, context, json } => {
            let mode = if applied {
                crate::triage::DiffMode::Applied
            } else if head {
                crate::triage::DiffMode::Head
            } else {
                crate::triage::DiffMode::Disk
            };
            let target = match (&id, &session) {
                (_, Some(s)) => cmd::triage::DiffTarget::Turn { session: s, prompt },
                (Some(id), None) => cmd::triage::DiffTarget::Entry(id),
                // clap requires one of them.
                (None, None) => anyhow::bail!("walj diff needs an entry id or --session"),
            };
            if json {
                let v = cmd::triage::diff_json(&project, target, mode, context)?;
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(0);
            }
            let _paged = cmd::pager::start(global.no_pager);
            cmd::triage::diff(&project, target, mode, context)
        }
        Command::Mark(a) => cmd::triage::mark(&project, &a),
        Command::Revert(a) => cmd::triage::revert(&project, &a),
        Command::Bisect(a) => cmd::bisect::bisect_cmd(&project, &a),
        Command::Undo(a) => cmd::triage::undo(&project, &a),
        Command::Redo(a) => cmd::triage::redo(&project, &a),
        Command::Ops(a) => cmd::triage::ops(&project, &a),
        Command::Mcp => crate::mcp::serve_stdio(&project),
        Command::Handoff(a) => cmd::triage::handoff(&project, &a),
        Command::Sessions { json, command } => sessions(&project, command, json),
        Command::Procs { json, command } => match command {
            None => cmd::procs::list(&project, json),
            Some(ProcsCommand::Restart(a)) => cmd::procs::restart(&project, &a),
        },
        Command::Compact(a) => cmd::compact::compact(&project, &a),
        Command::Sync(a) => cmd::sync::sync_cmd(&project, &a),
    }
}

/// Exit code of a command line that names something that is not there (`--journal`), as
/// clap's usage errors.
pub(crate) const EXIT_USAGE: i32 = 2;

/// Exit code of a command refused because Claude ran it without `--yes`.
pub(crate) const EXIT_NEEDS_YES: i32 = 3;

/// The command line of a command that changes files, settings or the journal's verdicts
/// (marks, reverts, hands back, deletes, rewrites) when it runs inside a Claude Code tool call
/// without `--yes`; `None` when it may run.
fn unconfirmed_change(command: &Command) -> Option<&'static str> {
    if !crate::claude::env::in_tool_call() {
        return None;
    }
    let name = match command {
        Command::Mark(a) if a.confirm.missing_in_tool_call() && !a.dry_run => "walj mark",
        Command::Revert(a) if a.confirm.missing_in_tool_call() && !a.dry_run => "walj revert",
        Command::Bisect(a) if a.in_place && cmd::Confirm::of(a.yes).missing_in_tool_call() => "walj bisect --in-place",
        Command::Undo(a) if a.confirm.missing_in_tool_call() && !a.dry_run => "walj undo",
        Command::Redo(a) if a.confirm.missing_in_tool_call() && !a.dry_run => "walj redo",
        Command::Handoff(a) if a.confirm.missing_in_tool_call() && !a.print && !a.dry_run && !a.held => "walj handoff",
        Command::Checkpoint(a) if a.confirm.missing_in_tool_call() => "walj checkpoint",
        Command::Compact(a) if a.confirm.missing_in_tool_call() && !a.dry_run => "walj compact",
        Command::Import(a) if cmd::Confirm::of(a.yes).missing_in_tool_call() => "walj import",
        Command::Recover(a) if a.from_transcripts && cmd::Confirm::of(a.yes).missing_in_tool_call() => {
            "walj recover --from-transcripts"
        }
        Command::Install(a) if cmd::Confirm::of(a.yes).missing_in_tool_call() => "walj install",
        Command::Sync(a) if cmd::Confirm::of(a.yes).missing_in_tool_call() && !a.dry_run && !a.status => "walj sync",
        Command::Uninstall(a) if cmd::Confirm::of(a.yes).missing_in_tool_call() => "walj uninstall",
        Command::Sessions { command: Some(c), .. } => match c {
            SessionsCommand::Resume(a) if a.confirm.missing_in_tool_call() && !a.print_only => "walj sessions resume",
            SessionsCommand::Import(a) if a.confirm.missing_in_tool_call() && !a.dry_run => "walj sessions import",
            SessionsCommand::Repair(a) if a.confirm.missing_in_tool_call() && !a.dry_run => "walj sessions repair",
            SessionsCommand::Delete(a) if a.confirm.missing_in_tool_call() && !a.dry_run => "walj sessions delete",
            _ => return None,
        },
        Command::Procs { command: Some(ProcsCommand::Restart(a)), .. }
            if a.confirm.missing_in_tool_call() && !a.dry_run =>
        {
            "walj procs restart"
        }
        _ => return None,
    };
    Some(name)
}

/// Says, in one line on stderr, why a command Claude ran without `--yes` did nothing.
fn refuse_in_tool_call(name: &str) -> i32 {
    eprintln!(
        "walj: refused: `{name}` changes files or resolves entries and runs inside a Claude Code tool call ({}=1); run it only when the user asked, with --yes.",
        crate::claude::env::MARKER
    );
    EXIT_NEEDS_YES
}

fn sessions(project: &crate::project::Project, command: Option<SessionsCommand>, json: bool) -> anyhow::Result<i32> {
    use cmd::sessions as s;
    match command.unwrap_or(SessionsCommand::List { json }) {
        SessionsCommand::List { json } => s::list(project, json),
        SessionsCommand::Show { sid, json } => s::show(project, &sid, json),
        SessionsCommand::Resume(a) => s::resume(project, &a),
        SessionsCommand::Transcript { sid, output, force } => s::transcript_cmd(project, &sid, output, force),
        SessionsCommand::Repair(a) => s::repair(project, &a),
        SessionsCommand::Export(a) => s::export(project, a),
        SessionsCommand::Import(a) => s::import(project, a),
        SessionsCommand::Delete(a) => s::delete(project, &a),
    }
}

#[cfg(test)]
mod completion_tests {
    //! The id completion read against walj's real command line (in cli.rs: cmd/completions.rs is
    //! handed the command line and never names it).
    use super::Cli;
    use crate::cmd::completions::{Slot, Want, global_of, slot, want as want_in};
    use clap::CommandFactory;

    fn want(words: &[String], cword: usize) -> Option<Want> {
        want_in(words, cword, &Cli::command())
    }

    fn w(line: &str) -> Vec<String> {
        let mut v: Vec<String> = line.split(' ').map(str::to_string).collect();
        if line.ends_with(' ') {
            v.pop();
            v.push(String::new());
        }
        v
    }

    fn at_end(line: &str) -> Option<Want> {
        let words = w(line);
        want(&words, words.len() - 1)
    }

    fn entry(typed: &str) -> Option<Want> {
        Some(Want { slot: Slot::Entry, typed: typed.into(), prefix: String::new() })
    }

    fn session(typed: &str, prefix: &str) -> Option<Want> {
        Some(Want { slot: Slot::Session, typed: typed.into(), prefix: prefix.into() })
    }

    #[test]
    fn the_word_is_known_from_the_command_line_definition() {
        assert_eq!(at_end("walj diff "), entry(""));
        assert_eq!(at_end("walj diff Ab"), entry("Ab"));
        assert_eq!(at_end("walj --project /p --color never diff Ab"), entry("Ab"));
        assert_eq!(at_end("walj mark --done Ab Cd"), entry("Cd"));
        assert_eq!(at_end("walj revert --dry-run"), None);
        assert_eq!(at_end("walj undo "), entry(""));
        assert_eq!(at_end("walj handoff x "), entry(""));
        assert_eq!(at_end("walj diff -U 5 "), entry(""));
        assert_eq!(at_end("walj diff -U "), None);
        assert_eq!(at_end("walj diff Ab "), None, "diff takes one id");
        assert_eq!(at_end("walj diff --session 8f"), session("8f", ""));
        assert_eq!(at_end("walj revert --session=8f"), session("8f", "--session="));
        assert_eq!(at_end("walj revert --session = 8f"), session("8f", ""), "bash splits at =");
        assert_eq!(at_end("walj revert --session ="), session("", ""));
        assert_eq!(at_end("walj revert --session = 8f --dry-run "), entry(""));
        assert_eq!(at_end("walj sessions "), None, "a subcommand");
        assert_eq!(at_end("walj sessions show "), session("", ""));
        assert_eq!(at_end("walj sessions delete --dry-run 8"), session("8", ""));
        assert_eq!(at_end("walj recover --session "), session("", ""));
        assert_eq!(at_end("walj procs restart "), None, "command ids are not entry ids");
        assert_eq!(at_end("walj log --limit "), None);
        assert_eq!(at_end("walj "), None);
        assert_eq!(at_end("walj di"), None);
    }

    #[test]
    fn the_project_on_the_command_line_is_the_one_read() {
        let g = global_of(&w("walj --project /p diff --journal=/j.jsonl x"));
        assert_eq!((g.project.as_deref(), g.journal.as_deref()), (Some("/p".as_ref()), Some("/j.jsonl".as_ref())));
        let g = global_of(&w("walj --project = /q diff"));
        assert_eq!(g.project.as_deref(), Some("/q".as_ref()));
    }

    #[test]
    fn every_id_argument_is_named_for_completion() {
        // Arguments that take entry or session ids are named ID, IDS or SID; nothing else is.
        fn walk(c: &clap::Command, path: &str, found: &mut Vec<String>) {
            for a in c.get_arguments() {
                if let Some(s) = slot(a) {
                    found.push(format!("{path} {} {s:?}", a.get_id()));
                }
            }
            for s in c.get_subcommands() {
                walk(s, &format!("{path} {}", s.get_name()), found);
            }
        }
        let mut found = Vec::new();
        walk(&Cli::command(), "walj", &mut found);
        for want in [
            "walj diff id Entry",
            "walj diff session Session",
            "walj mark ids Entry",
            "walj revert ids Entry",
            "walj revert session Session",
            "walj undo id Entry",
            "walj handoff ids Entry",
            "walj sessions show sid Session",
            "walj sessions delete sid Session",
            "walj recover session Session",
        ] {
            assert!(found.iter().any(|f| f == want), "{want} not in {found:#?}");
        }
        assert!(!found.iter().any(|f| f.starts_with("walj procs")), "{found:#?}");
    }
}
