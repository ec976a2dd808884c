//! The `walj` command line: parses arguments and calls the library.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use walj::cmd::{self, Global};

#[derive(Parser)]
#[command(name = "walj", version, about = "A write-ahead journal that makes Claude Code sessions crash-resilient")]
struct Cli {
    /// Project root (default: $CLAUDE_PROJECT_DIR, else the git top level, else the current folder).
    #[arg(long, global = true, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Journal file (default: <project>/.walj/journal.jsonl).
    #[arg(long, global = true, env = "WALJ_JOURNAL", value_name = "FILE")]
    journal: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

/// Which settings file `install` and `uninstall` change, and the hook command.
#[derive(clap::Args)]
struct SettingsArgs {
    /// .claude/settings.local.json (not committed).
    #[arg(long, conflicts_with = "user")]
    local: bool,
    /// ~/.claude/settings.json, or $CLAUDE_CONFIG_DIR/settings.json (every project).
    #[arg(long)]
    user: bool,
    /// The hook command (default: `walj hook`, or this binary's absolute path).
    #[arg(long)]
    command: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Handle one Claude Code hook payload on stdin (run by Claude Code; always exits 0).
    Hook,
    /// Show unresolved entries, grouped by session, then event.
    Recover {
        #[arg(long)]
        json: bool,
        /// Only this session (id or prefix).
        #[arg(long, value_name = "SID")]
        session: Option<String>,
        /// First import this project's recent Claude Code transcripts (asks on a terminal).
        #[arg(long)]
        from_transcripts: bool,
        /// With --from-transcripts: import without asking.
        #[arg(long, short = 'y', requires = "from_transcripts")]
        yes: bool,
    },
    /// Rebuild journal records from Claude Code transcripts (default: this project's).
    Import {
        /// Transcript files or folders (default: this project's transcripts in ~/.claude/projects).
        paths: Vec<PathBuf>,
        /// Every transcript, each into the journal of the project its working folder names.
        #[arg(long, conflicts_with = "paths")]
        all: bool,
        /// Only transcripts changed in the last N days.
        #[arg(long, value_name = "N")]
        days: Option<u64>,
        #[arg(long)]
        json: bool,
    },
    /// List journal entries in every state.
    Log {
        #[arg(long)]
        json: bool,
        /// Every entry (default: the last 50).
        #[arg(long)]
        all: bool,
        #[arg(long, value_name = "SID")]
        session: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Summary of the journal, store and sessions.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Add walj's hooks to Claude Code's settings (default: .claude/settings.json).
    Install(SettingsArgs),
    /// Remove exactly the hooks `walj install` added.
    Uninstall(SettingsArgs),
    /// Check the hook installation, the journal and the error log.
    Doctor {
        #[arg(long)]
        command: Option<String>,
    },
    /// Write walj as a Claude Code plugin (hooks, slash commands, this binary) into DIR.
    Plugin {
        /// The plugin folder (created; an earlier walj plugin there is updated).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Put the sh launcher (runs an installed walj) in bin/ instead of this binary.
        #[arg(long)]
        launcher: bool,
    },
    /// The keyboard recovery dashboard: see what was in flight, read diffs, triage.
    Tui {
        /// Open on a sample project with a crashed session (built in a temp folder).
        #[arg(long)]
        demo: bool,
        /// (internal) replay the demo's hooks in DIR.
        #[arg(long, hide = true, value_name = "DIR")]
        demo_replay: Option<PathBuf>,
    },
    /// Verify applied entries against the disk; record persisted entries and an audit.
    Checkpoint {
        #[arg(long, value_name = "SID")]
        session: Option<String>,
        #[arg(long)]
        json: bool,
        /// Repeat every N seconds (the proposal's scheduled checkpoints).
        #[arg(long, value_name = "SECONDS")]
        every: Option<u64>,
    },
    /// Show an entry's change as a unified diff (pre-image → disk by default).
    Diff {
        /// Entry id or unique prefix.
        id: String,
        /// Pre-image → post-image: what the tool did.
        #[arg(long, conflicts_with = "head")]
        applied: bool,
        /// git HEAD → disk.
        #[arg(long)]
        head: bool,
        /// Lines of context around changes.
        #[arg(short = 'U', long, default_value_t = 3)]
        context: usize,
    },
    /// Mark entries resolved (`--done`): you checked them, nothing to do.
    Mark {
        /// Entry ids or unique prefixes.
        #[arg(required_unless_present = "session", conflicts_with = "session")]
        ids: Vec<String>,
        /// Mark them done.
        #[arg(long, required = true)]
        done: bool,
        /// Every unresolved entry of this session.
        #[arg(long, value_name = "SID")]
        session: Option<String>,
        /// Also entries of a session that is still live.
        #[arg(long)]
        force: bool,
    },
    /// Bring paths back to the entries' pre-images (newest first; later changes kept by a three-way merge).
    Revert {
        #[arg(required = true)]
        ids: Vec<String>,
        /// Write the pre-image over conflicting later changes; act on live sessions.
        #[arg(long)]
        force: bool,
        /// Say what would happen, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Undo the last triage command (or the last action on ID).
    Undo {
        id: Option<String>,
        /// Overwrite a file changed since the revert (its bytes are kept in the store); act on live sessions.
        #[arg(long)]
        force: bool,
    },
    /// Hand entries back to Claude: a brief delivered at the next SessionStart.
    Handoff {
        /// Entry ids (default: every unresolved entry).
        #[arg(conflicts_with = "session")]
        ids: Vec<String>,
        /// The unresolved entries of this session.
        #[arg(long, value_name = "SID")]
        session: Option<String>,
        /// Only print the brief; record nothing.
        #[arg(long)]
        print: bool,
        /// Also entries of a session that is still live.
        #[arg(long)]
        force: bool,
    },
    /// Sessions: list, show, resume, transcript, export, import, delete (default: list).
    Sessions {
        #[command(subcommand)]
        command: Option<SessionsCommand>,
    },
    /// Background commands of every session, and whether they still run.
    Procs {
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        command: Option<ProcsCommand>,
    },
    /// Rewrite the journal without settled records older than the retention; remove unnamed objects.
    Compact {
        /// Only say what would be dropped.
        #[arg(long)]
        dry_run: bool,
        /// Retention in days (default: [retention] days in .walj/config.toml, else 30).
        #[arg(long, value_name = "N")]
        days: Option<u64>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum SessionsCommand {
    /// Every session: state, times, branch, prompts, todos, unresolved entries, size.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One session in full.
    Show {
        sid: String,
        #[arg(long)]
        json: bool,
    },
    /// Print a brief for Claude and give it to the next session start in this project.
    Resume {
        sid: String,
        /// Print the brief only; do not deliver it.
        #[arg(long)]
        print_only: bool,
        #[arg(long)]
        json: bool,
    },
    /// Write the safe copy of the session's transcript (stdout, or -o FILE).
    Transcript {
        sid: String,
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Replace FILE if it exists (its bytes are kept beside it as .bak).
        #[arg(long)]
        force: bool,
    },
    /// Write the session (records, objects, transcript) to one bundle file.
    Export {
        sid: String,
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Encrypt with a passphrase (prompt, or $WALJ_PASSPHRASE).
        #[arg(long)]
        encrypt: bool,
        /// Encrypt to this age recipient (age1…); repeatable.
        #[arg(long, value_name = "KEY")]
        recipient: Vec<String>,
        #[arg(long)]
        force: bool,
    },
    /// Add a session from a bundle file to this project (idempotent).
    Import {
        file: PathBuf,
        /// age identity file for bundles encrypted to recipients; repeatable.
        #[arg(short, long, value_name = "FILE")]
        identity: Vec<PathBuf>,
    },
    /// Remove the session's records, the objects nothing else names, and its transcript copy.
    Delete {
        sid: String,
        /// Do not ask.
        #[arg(long, short)]
        yes: bool,
        /// Also when it is live or has unresolved entries.
        #[arg(long)]
        force: bool,
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Subcommand)]
enum ProcsCommand {
    /// Start a background command again, detached, output to .walj/procs/<id>.log.
    Restart {
        id: String,
        /// Do not ask.
        #[arg(long, short)]
        yes: bool,
    },
}

fn main() -> ExitCode {
    // The hook runs on every tool call: building clap's whole command tree costs more than
    // the hook's own work, so `walj hook [--project DIR] [--journal FILE]` skips it.
    if let Some(global) = hook_fast_args() {
        return hook(&global);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A hook must never exit 2: Claude Code reads that as "block this tool call".
        Err(e) if std::env::args_os().any(|a| a == "hook") && e.use_stderr() => {
            walj::hook::warn(&e.to_string());
            return ExitCode::SUCCESS;
        }
        Err(e) => e.exit(),
    };
    let global = Global { project: cli.project, journal: cli.journal };
    if let Command::Hook = cli.command {
        return hook(&global);
    }
    match run(cli.command, &global) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("walj: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Parses exactly `hook` with optional `--project DIR` / `--journal FILE` (also `--x=V`);
/// anything else (help, typos, other commands) goes through clap.
fn hook_fast_args() -> Option<Global> {
    let mut args = std::env::args_os().skip(1);
    let mut global = Global {
        project: None,
        journal: std::env::var_os("WALJ_JOURNAL").filter(|v| !v.is_empty()).map(PathBuf::from),
    };
    let mut saw_hook = false;
    while let Some(a) = args.next() {
        let a = a.to_str()?.to_string();
        match a.as_str() {
            "hook" if !saw_hook => saw_hook = true,
            "--project" => global.project = Some(PathBuf::from(args.next()?)),
            "--journal" => global.journal = Some(PathBuf::from(args.next()?)),
            _ => {
                if let Some(v) = a.strip_prefix("--project=") {
                    global.project = Some(PathBuf::from(v));
                } else if let Some(v) = a.strip_prefix("--journal=") {
                    global.journal = Some(PathBuf::from(v));
                } else {
                    return None;
                }
            }
        }
    }
    saw_hook.then_some(global)
}

/// The hook path: exit 0 whatever happens, print only what SessionStart asks for.
fn hook(global: &Global) -> ExitCode {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        walj::hook::warn(&format!("reading stdin: {e}"));
        return ExitCode::SUCCESS;
    }
    let opts = walj::hook::HookOptions { project: global.project.clone(), journal: global.journal.clone() };
    // A bug must not turn into a failed tool call either: a panic is reported, exit stays 0.
    let outcome = match std::panic::catch_unwind(|| walj::hook::run(&input, &opts)) {
        Ok(o) => o,
        Err(_) => return ExitCode::SUCCESS,
    };
    if let Some(s) = outcome.stdout {
        // Not `println!`: it panics (exit 101) when Claude Code has closed the pipe.
        use std::io::Write;
        if let Err(e) = writeln!(std::io::stdout().lock(), "{s}") {
            walj::hook::warn(&format!("writing the SessionStart answer: {e}"));
        }
    }
    ExitCode::SUCCESS
}

fn run(command: Command, global: &Global) -> anyhow::Result<i32> {
    let project = global.project()?;
    match command {
        Command::Hook => Ok(0),
        Command::Recover { json, session, from_transcripts, yes } => {
            if from_transcripts {
                cmd::import::recover_from_transcripts(&project, yes)?;
            }
            cmd::core::recover(&project, json, session)
        }
        Command::Import { paths, all, days, json } => cmd::import::import_cmd(&project, paths, all, days, json),
        Command::Log { json, all, session, limit } => cmd::core::log(&project, json, all, session, limit),
        Command::Status { json } => cmd::core::status(&project, json),
        Command::Install(a) => cmd::setup::install_cmd(&project, cmd::setup::scope(a.local, a.user), a.command),
        Command::Uninstall(a) => cmd::setup::uninstall_cmd(&project, cmd::setup::scope(a.local, a.user), a.command),
        Command::Doctor { command } => cmd::setup::doctor(&project, command),
        Command::Plugin { out, launcher } => cmd::plugin::plugin_cmd(&out, launcher),
        Command::Tui { demo_replay: Some(dir), .. } => cmd::tui::demo_replay(&dir),
        Command::Tui { demo, .. } => cmd::tui::tui_cmd(&project, demo),
        Command::Checkpoint { session, json, every } => cmd::core::checkpoint_cmd(&project, session, json, every),
        Command::Diff { id, applied, head, context } => {
            let mode = if applied {
                walj::triage::DiffMode::Applied
            } else if head {
                walj::triage::DiffMode::Head
            } else {
                walj::triage::DiffMode::Disk
            };
            cmd::triage::diff(&project, &id, mode, context)
        }
        Command::Mark { ids, done: _, session, force } => cmd::triage::mark(&project, &ids, session.as_deref(), force),
        Command::Revert { ids, force, dry_run } => cmd::triage::revert(&project, &ids, force, dry_run),
        Command::Undo { id, force } => cmd::triage::undo(&project, id.as_deref(), force),
        Command::Handoff { ids, session, print, force } => {
            cmd::triage::handoff(&project, &ids, session.as_deref(), print, force)
        }
        Command::Sessions { command } => sessions(&project, command),
        Command::Procs { json, command } => match command {
            None => cmd::sessions::procs_list(&project, json),
            Some(ProcsCommand::Restart { id, yes }) => cmd::sessions::procs_restart(&project, &id, yes),
        },
        Command::Compact { dry_run, days, json } => cmd::sessions::compact(&project, dry_run, days, json),
    }
}

fn sessions(project: &walj::project::Project, command: Option<SessionsCommand>) -> anyhow::Result<i32> {
    use cmd::sessions as s;
    match command.unwrap_or(SessionsCommand::List { json: false }) {
        SessionsCommand::List { json } => s::list(project, json),
        SessionsCommand::Show { sid, json } => s::show(project, &sid, json),
        SessionsCommand::Resume { sid, print_only, json } => s::resume(project, &sid, print_only, json),
        SessionsCommand::Transcript { sid, output, force } => s::transcript_cmd(project, &sid, output, force),
        SessionsCommand::Export { sid, output, encrypt, recipient, force } => {
            s::export(project, &sid, &output, encrypt, recipient, force)
        }
        SessionsCommand::Import { file, identity } => s::import(project, &file, identity),
        SessionsCommand::Delete { sid, yes, force, dry_run } => s::delete(project, &sid, yes, force, dry_run),
    }
}
