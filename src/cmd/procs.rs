//! `walj procs` (the background commands of every session, alive or not) and
//! `walj procs restart`.

use std::io::{self, Write};

use anyhow::bail;

use crate::present::{human_ts, safe, shell_quote, shown, shown_path};
use crate::project::Project;
use crate::session::SessionState;
use crate::session::procs::{self, ProcStatus};
use crate::style::Style;

use super::rel_display;

/// The arguments of `walj procs restart`.
#[derive(Debug, clap::Args)]
pub struct ProcsRestartArgs {
    /// Command id or unique prefix (`walj procs` lists them).
    #[arg(value_name = "COMMAND")]
    pub id: String,
    /// Start it even though its recorded text holds control characters (a carriage
    /// return, ESC, a bidi override): they can make a terminal show another command.
    #[arg(long)]
    pub force: bool,
    /// Say what would be started, start nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was started (or would be) as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub confirm: super::Confirm,
}

pub(crate) fn list(project: &Project, json_out: bool) -> anyhow::Result<i32> {
    let ps = procs::list(project)?;
    let mut out = io::stdout().lock();
    if json_out {
        writeln!(out, "{}", serde_json::to_string_pretty(&ps)?)?;
        return Ok(0);
    }
    if ps.is_empty() {
        writeln!(out, "No background commands recorded.")?;
        return Ok(0);
    }
    let style = Style::stdout();
    for p in &ps {
        writeln!(out, "{}  {}", style.dim(&human_ts(&p.started)), proc_line(p, &style))?;
    }
    if ps.iter().any(|p| p.restartable) {
        writeln!(out, "{}", style.dim("Restart one with: walj procs restart ID"))?;
    }
    Ok(0)
}

/// `walj procs restart ID`: shows the exact command (escaped and shell-quoted, so a `\r` or
/// an ESC sequence inside it cannot rewrite the lines above the question), its folder and log,
/// then asks. A command whose text hides something ([`crate::present::hides_text`]) is refused
/// unless `force`: it can come from a bundle, another machine or a prompt-injected tool call.
pub(crate) fn restart(project: &Project, args: &ProcsRestartArgs) -> anyhow::Result<i32> {
    let (id, force) = (args.id.as_str(), args.force);
    let ps = procs::list(project)?;
    let p = procs::find(&ps, id)?.clone();
    let state = SessionState::load(project, &p.session)?;
    let command = shown(&shell_quote(&p.command)).to_string();
    let Some(cwd) = state.local_cwd(project, p.cwd.as_deref()) else {
        bail!(
            "the recorded folder {} does not exist here; nothing was started (run the command yourself where it belongs: {command})",
            shown(p.cwd.as_deref().unwrap_or("(none)")),
        );
    };
    // The allowed set: a folder of the project, not `.walj/` nor git's, through no link.
    let cwd = std::fs::canonicalize(&cwd).unwrap_or(cwd);
    if let Err(why) = project.check_run_dir(&cwd) {
        bail!("walj starts commands only in a folder of this project: {why}; nothing was started");
    }
    let log = procs::log_path(project, &p.id);
    eprintln!("Restart a background command of session {}:", shown(&p.sid));
    eprintln!("  command  {command}");
    eprintln!("  folder   {}", shown_path(&cwd));
    eprintln!("  output   {}", shown(&rel_display(project, &log)));
    let hidden = crate::present::hides_text(&p.command);
    if hidden {
        eprintln!(
            "  WARNING  the command holds control characters (shown escaped above): a terminal shows another command than the one that runs"
        );
    }
    if p.state == "running" {
        bail!(
            "{command} still runs (pid {}); nothing was started",
            p.pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        );
    }
    if hidden && !force {
        bail!(
            "refused: the recorded command holds control characters; nothing was started (read it above; `walj procs restart {} --force` starts it anyway)",
            shown(&shell_quote(id))
        );
    }
    if p.state == "unknown" {
        eprintln!("  note     walj cannot tell on this system whether it still runs");
    }
    if let Some(r) = p.reported.as_deref().filter(|r| !matches!(*r, "running" | "pending")) {
        eprintln!("  note     Claude Code reported it {}: a one-shot job need not run again", shown(r));
    }
    let json_line = |started: Option<u32>| {
        serde_json::json!({
            "action": "procs restart",
            "dry_run": args.dry_run,
            "id": p.id,
            "command": p.command,
            "cwd": cwd,
            "log": log,
            "started": started.is_some(),
            "pid": started,
            "undo": null,
        })
    };
    if args.dry_run {
        if args.json {
            println!("{}", serde_json::to_string_pretty(&json_line(None))?);
        } else {
            println!(
                "Dry run, nothing started: this would start {command} (no undo: a started command is stopped by you)."
            );
        }
        return Ok(0);
    }
    eprintln!("  undo     none: once started, the command runs until it ends or you stop it");
    if !args.confirm.ask(
        "Start it?",
        "nothing started: `walj procs restart` asks first and there is no terminal to ask on; pass --yes to start it",
    )? {
        eprintln!("Nothing started.");
        return Ok(1);
    }
    let (pid, log) = procs::restart(project, &p, &cwd)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&json_line(Some(pid)))?);
    } else {
        println!("started pid {pid}: {command} (output: {})", shown(&rel_display(project, &log)));
    }
    Ok(0)
}

/// One background command as `walj procs` and `walj sessions show` list it.
pub(crate) fn proc_line(p: &ProcStatus, style: &Style) -> String {
    let state = match p.state {
        "running" => {
            style.green(&format!("running (pid {})", p.pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")))
        }
        "not_running" => style.red("not running"),
        _ => style.yellow("unknown"),
    };
    let note = match (p.kind, p.reported.as_deref()) {
        ("in_flight", _) => "  (a foreground command, running when the session died)".to_string(),
        (_, Some(r)) if !matches!(r, "running" | "pending") => format!("  (Claude Code reported it {})", shown(r)),
        _ => String::new(),
    };
    format!(
        "{}  {}  {}  {state}{}{note}{}{}",
        crate::present::pad(&p.short, 12),
        style.cyan(&safe(&p.sid)),
        shown(&p.command),
        p.task_id.as_deref().map(|t| format!("  task {}", shown(t))).unwrap_or_default(),
        p.cwd.as_deref().map(|c| format!("  in {}", shown(c))).unwrap_or_default(),
        // Not running and not reported finished: killed with its session, or finished after
        // Claude Code last said anything of it (walj cannot tell which).
        if p.restartable { "  · restartable (unless it finished: Claude Code did not say)" } else { "" },
    )
}
