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
    Install {
        /// .claude/settings.local.json (not committed).
        #[arg(long, conflicts_with = "user")]
        local: bool,
        /// ~/.claude/settings.json (every project).
        #[arg(long)]
        user: bool,
        /// The hook command (default: `walj hook`, or this binary's absolute path).
        #[arg(long)]
        command: Option<String>,
    },
    /// Remove exactly the hooks `walj install` added.
    Uninstall {
        #[arg(long, conflicts_with = "user")]
        local: bool,
        #[arg(long)]
        user: bool,
        #[arg(long)]
        command: Option<String>,
    },
    /// Check the hook installation, the journal and the error log.
    Doctor {
        #[arg(long)]
        command: Option<String>,
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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

/// The hook path: exit 0 whatever happens, print only what SessionStart asks for.
fn hook(global: &Global) -> ExitCode {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        eprintln!("walj hook: reading stdin: {e}");
        return ExitCode::SUCCESS;
    }
    let opts = walj::hook::HookOptions { project: global.project.clone(), journal: global.journal.clone() };
    let outcome = walj::hook::run(&input, &opts);
    if let Some(s) = outcome.stdout {
        println!("{s}");
    }
    ExitCode::SUCCESS
}

fn run(command: Command, global: &Global) -> anyhow::Result<i32> {
    let project = global.project()?;
    match command {
        Command::Hook => Ok(0),
        Command::Recover { json, session } => cmd::core::recover(&project, json, session),
        Command::Log { json, all, session, limit } => cmd::core::log(&project, json, all, session, limit),
        Command::Status { json } => cmd::core::status(&project, json),
        Command::Install { local, user, command } => {
            cmd::setup::install_cmd(&project, cmd::setup::scope(local, user), command)
        }
        Command::Uninstall { local, user, command } => {
            cmd::setup::uninstall_cmd(&project, cmd::setup::scope(local, user), command)
        }
        Command::Doctor { command } => cmd::setup::doctor(&project, command),
        Command::Tui { demo_replay: Some(dir), .. } => cmd::tui::demo_replay(&dir),
        Command::Tui { demo, .. } => cmd::tui::tui_cmd(&project, demo),
        Command::Checkpoint { session, json, every } => cmd::core::checkpoint_cmd(&project, session, json, every),
    }
}
