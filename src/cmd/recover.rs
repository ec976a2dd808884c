//! recover, log, status, checkpoint.

use std::io::Write;

use anyhow::Context;
use serde_json::json;

use crate::checkpoint::{CheckpointOptions, checkpoint};
use crate::fold::{Fold, FoldOptions, SessionStatus};
use crate::project::Project;
use crate::report;
use crate::store::Store;
use crate::style::Style;

/// The arguments of `walj recover`.
#[derive(Debug, clap::Args)]
pub struct RecoverArgs {
    #[arg(long)]
    pub json: bool,
    /// Only this session (id or prefix).
    #[arg(long, value_name = "SID")]
    pub session: Option<String>,
    /// First import this project's recent Claude Code transcripts (asks on a terminal).
    #[arg(long)]
    pub from_transcripts: bool,
    /// With --from-transcripts: import without asking.
    #[arg(long, short = 'y', requires = "from_transcripts")]
    pub yes: bool,
}

/// The arguments of `walj log`.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    #[arg(long)]
    pub json: bool,
    /// Every entry (default: the last 50).
    #[arg(long)]
    pub all: bool,
    #[arg(long, value_name = "SID")]
    pub session: Option<String>,
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

/// The arguments of `walj checkpoint`.
#[derive(Debug, clap::Args)]
pub struct CheckpointArgs {
    #[arg(long, value_name = "SID")]
    pub session: Option<String>,
    #[arg(long)]
    pub json: bool,
    /// Repeat every N seconds (the proposal's scheduled checkpoints).
    #[arg(long, value_name = "SECONDS")]
    pub every: Option<u64>,
    /// Confirm: required when Claude runs this (inside a Claude Code tool call).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Prints what the reader skipped, on stderr, so the report itself stays clean.
pub fn warn_problems(fold: &Fold) {
    let n = fold.report.problems.len();
    for p in fold.report.problems.iter().take(10) {
        eprintln!("walj: warning: journal {p}");
    }
    if n > 10 {
        eprintln!("walj: warning: … and {} more journal problems", n - 10);
    }
}

pub fn load(project: &Project, opts: &FoldOptions) -> anyhow::Result<Fold> {
    let mut fold =
        Fold::load(&project.journal, opts).with_context(|| format!("reading {}", project.journal.display()))?;
    fold.check_disk(project);
    warn_problems(&fold);
    Ok(fold)
}

pub fn recover(project: &Project, json_out: bool, session: Option<String>) -> anyhow::Result<i32> {
    let fold = load(project, &FoldOptions { session, ..Default::default() })?;
    let mut out = std::io::stdout().lock();
    if json_out {
        writeln!(out, "{}", serde_json::to_string_pretty(&report::recover_json(&fold))?)?;
    } else {
        if !project.journal.exists() {
            writeln!(
                out,
                "No journal at {}. Install the hooks with `walj install`; walj records from the next session on.\n\
                 A session that ran before: `walj recover --from-transcripts` rebuilds it from Claude Code's transcripts.",
                project.journal.display()
            )?;
            return Ok(0);
        }
        write!(out, "{}", report::recover_text(&fold, &Style::stdout()))?;
    }
    Ok(0)
}

pub fn log(project: &Project, args: LogArgs) -> anyhow::Result<i32> {
    let LogArgs { json: json_out, all, session, limit } = args;
    let fold = load(project, &FoldOptions { session, keep_settled: true, all_commands: true })?;
    let entries: Vec<_> = fold.entries.iter().collect();
    let shown: Vec<_> = if all { entries } else { entries.iter().rev().take(limit).rev().copied().collect() };
    let mut out = std::io::stdout().lock();
    if json_out {
        let v: Vec<_> = shown.iter().map(|e| report::entry_json(e)).collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        write!(out, "{}", report::log_text(&shown, &Style::stdout()))?;
        if shown.len() < fold.entries.len() {
            writeln!(out, "({} earlier entries; --all shows every one)", fold.entries.len() - shown.len())?;
        }
    }
    Ok(0)
}

pub fn status(project: &Project, json_out: bool) -> anyhow::Result<i32> {
    let fold = load(project, &FoldOptions::default())?;
    let mut by_state = std::collections::BTreeMap::new();
    for s in &fold.sessions {
        *by_state.entry(s.status().as_str()).or_insert(0usize) += 1;
    }
    let journal_bytes = std::fs::metadata(&project.journal).map(|m| m.len()).unwrap_or(0);
    let objects = Store::new(project.store_dir()).ids().map(|v| v.len()).unwrap_or(0);
    let unresolved = fold.unresolved().count();
    let crashed = fold.sessions.iter().filter(|s| s.status() == SessionStatus::Crashed).count();
    let v = json!({
        "project": project.root,
        "journal": project.journal,
        "journal_bytes": journal_bytes,
        "records": fold.records,
        "problems": fold.report.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "sessions": by_state,
        "unresolved": unresolved,
        "objects": objects,
    });
    let mut out = std::io::stdout().lock();
    if json_out {
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    writeln!(out, "project   {}", project.root.display())?;
    writeln!(out, "journal   {} ({} records, {} bytes)", project.journal.display(), fold.records, journal_bytes)?;
    writeln!(out, "store     {objects} objects")?;
    let states: Vec<String> = by_state.iter().map(|(k, v)| format!("{v} {k}")).collect();
    writeln!(out, "sessions  {}", if states.is_empty() { "none".to_string() } else { states.join(", ") })?;
    writeln!(out, "problems  {}", fold.report.problems.len())?;
    if unresolved > 0 {
        writeln!(
            out,
            "\n{unresolved} unresolved entr{} ({crashed} crashed session{}): run `walj recover` or `walj tui`.",
            if unresolved == 1 { "y" } else { "ies" },
            if crashed == 1 { "" } else { "s" }
        )?;
    } else {
        writeln!(out, "\nNothing unresolved.")?;
    }
    Ok(0)
}

pub fn checkpoint_cmd(project: &Project, args: CheckpointArgs) -> anyhow::Result<i32> {
    let CheckpointArgs { session, json: json_out, every, .. } = args;
    loop {
        let rep = checkpoint(project, session.as_deref(), CheckpointOptions { audit: true, ..Default::default() })
            .with_context(|| format!("checkpoint of {}", project.journal.display()))?;
        if json_out {
            println!("{}", serde_json::to_string(&rep)?);
        } else {
            println!(
                "checkpoint: {} checked, {} persisted, {} on disk, verified (turn unfinished), {} not applied, {} drifted{}",
                rep.checked,
                rep.persisted,
                rep.verified,
                rep.not_applied,
                rep.drifted.len(),
                if rep.drifted.is_empty() { String::new() } else { format!(" ({})", rep.drifted.join(", ")) }
            );
        }
        match every {
            None => return Ok(0),
            Some(secs) => std::thread::sleep(std::time::Duration::from_secs(secs.max(1))),
        }
    }
}
