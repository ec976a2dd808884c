//! `walj import` and `walj recover --from-transcripts`: journals rebuilt from Claude Code
//! transcripts (library side: [`crate::import`]).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;

use crate::import::{self, ImportOptions, ImportReport};
use crate::project::Project;
use crate::style::Style;

/// The arguments of `walj import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Transcript files or folders (default: this project's transcripts in ~/.claude/projects).
    pub paths: Vec<PathBuf>,
    /// Every transcript, each into the journal of the project its working folder names.
    #[arg(long, conflicts_with = "paths")]
    pub all: bool,
    /// Only transcripts changed in the last N days.
    #[arg(long, value_name = "N")]
    pub days: Option<u64>,
    /// Print what was imported as JSON.
    #[arg(long)]
    pub json: bool,
    /// Confirm: required when Claude runs this (inside a Claude Code tool call).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Transcripts younger than this count as "recent" for `recover --from-transcripts`.
pub const RECENT_DAYS: u64 = 7;

fn config_dir() -> anyhow::Result<PathBuf> {
    crate::claude::paths::config_dir()
        .context("cannot find Claude Code's folder: set CLAUDE_CONFIG_DIR (or HOME) to the folder holding `projects/`")
}

/// Expands folders into the `*.jsonl` files under them.
fn expand(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| format!("{}: cannot read", p.display()))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            import::jsonl_under(p, &mut found);
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// `walj import [PATH...] [--all] [--days N] [--json]`.
pub fn import_cmd(project: &Project, args: ImportArgs) -> anyhow::Result<i32> {
    let ImportArgs { paths, all, days, json, .. } = args;
    let progress = std::io::stderr().is_terminal() && !json;
    let cfg_dir = crate::claude::paths::config_dir();
    let opts = ImportOptions { config_dir: cfg_dir.clone(), progress };
    let mut jobs: Vec<(Project, Vec<PathBuf>)> = Vec::new();
    let mut skipped = Vec::new();
    if !paths.is_empty() {
        jobs.push((project.clone(), expand(&paths)?));
    } else if all {
        let dir = config_dir()?;
        for (root, files) in import::all_transcripts(&dir) {
            match root {
                Some(root) => jobs.push((Project::at(root, None), files)),
                None => skipped.extend(files),
            }
        }
    } else {
        let dir = config_dir()?;
        let files = import::project_transcripts(&dir, &project.root, days.and_then(import::since_days));
        if files.is_empty() && !json {
            println!(
                "No Claude Code transcripts of {} in {}{}.",
                project.root.display(),
                dir.join("projects").join(crate::claude::paths::encode_dir(&project.root)).display(),
                days.map(|d| format!(" from the last {d} days")).unwrap_or_default()
            );
            return Ok(0);
        }
        jobs.push((project.clone(), files));
    }
    let mut out = std::io::stdout().lock();
    let mut all_reports = Vec::new();
    for (proj, files) in jobs {
        let report =
            import::import(&proj, &files, &opts).with_context(|| format!("importing into {}", proj.root.display()))?;
        if !json {
            write!(out, "{}", report_text(&proj, &report, &Style::stdout()))?;
        }
        all_reports.push((proj, report));
    }
    if json {
        let v: Vec<_> = all_reports
            .iter()
            .map(|(p, r)| serde_json::json!({"project": p.root, "journal": p.journal, "report": r}))
            .collect();
        let v = serde_json::json!({"imports": v, "skipped": skipped});
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else if !skipped.is_empty() {
        writeln!(out, "{} transcripts skipped: their working folder no longer exists.", skipped.len())?;
    }
    let failed = all_reports.iter().any(|(_, r)| r.files.iter().any(|f| f.error.is_some()));
    Ok(if failed { 1 } else { 0 })
}

/// The import report for people.
pub fn report_text(project: &Project, r: &ImportReport, style: &Style) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    // The ids of calls left in flight, shown as every listing shows them.
    let ids = if r.files.iter().any(|f| !f.in_flight.is_empty()) {
        crate::fold::ShortIds::load(&project.journal).unwrap_or_default()
    } else {
        crate::fold::ShortIds::default()
    };
    for f in &r.files {
        let name = f.path.display();
        if let Some(e) = &f.error {
            let _ = writeln!(s, "{} {name}: {e}", style.red("error"));
            continue;
        }
        let _ = write!(s, "{name}: {} new records", f.added);
        if f.existing > 0 {
            let _ = write!(s, " ({} already in the journal)", f.existing);
        }
        let _ = writeln!(s, ", {} tool calls, {} lines", f.tool_calls, f.lines);
        if f.torn_tail {
            let _ = writeln!(
                s,
                "  {} the last line is cut short: Claude Code stopped while writing it (a crash).",
                style.yellow("torn")
            );
        }
        if f.malformed > 0 {
            let _ = writeln!(s, "  {} lines were not JSON and were skipped", f.malformed);
        }
        for c in &f.in_flight {
            let _ = writeln!(
                s,
                "  {} {} {} ({}, session {})",
                style.red("in flight"),
                c.tool,
                c.what,
                style.id(ids.split(&c.id), 0),
                crate::journal::record::short_sid(&c.session)
            );
        }
    }
    let sessions: std::collections::BTreeSet<&String> = r.files.iter().flat_map(|f| f.sessions.iter()).collect();
    let _ = writeln!(
        s,
        "Imported {} records from {} transcript{} ({} session{}) into {}.",
        r.added,
        r.files.len(),
        if r.files.len() == 1 { "" } else { "s" },
        sessions.len(),
        if sessions.len() == 1 { "" } else { "s" },
        project.journal.display()
    );
    if r.added > 0 {
        let _ = writeln!(s, "Next: walj recover (or walj tui) shows what is unresolved.");
    }
    s
}

/// `walj recover --from-transcripts`: offers to import this project's recent transcripts
/// (prompt on a terminal, `--yes` to skip it). Messages go to stderr so `--json` stays clean.
pub fn recover_from_transcripts(project: &Project, yes: bool) -> anyhow::Result<()> {
    let dir = config_dir()?;
    let files = import::project_transcripts(&dir, &project.root, import::since_days(RECENT_DAYS));
    if files.is_empty() {
        eprintln!(
            "No Claude Code transcripts of {} from the last {RECENT_DAYS} days in {} (`walj import --all` looks further).",
            project.root.display(),
            dir.join("projects").display()
        );
        return Ok(());
    }
    let bytes: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
    let had_journal = project.journal.exists();
    if !yes {
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "{} transcript{} of this project from the last {RECENT_DAYS} days can be imported: run `walj recover --from-transcripts --yes`.",
                files.len(),
                if files.len() == 1 { "" } else { "s" }
            );
            return Ok(());
        }
        eprint!(
            "{}Import {} Claude Code transcript{} ({:.1} MB) of this project from the last {RECENT_DAYS} days into {}? [Y/n] ",
            if had_journal { "" } else { "No journal yet. " },
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            bytes as f64 / 1e6,
            project.journal.display()
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer).context("reading the answer")?;
        let a = answer.trim().to_ascii_lowercase();
        if !(a.is_empty() || a == "y" || a == "yes") {
            eprintln!("Nothing imported.");
            return Ok(());
        }
    }
    let opts = ImportOptions { config_dir: Some(dir), progress: std::io::stderr().is_terminal() };
    let report = import::import(project, &files, &opts)?;
    eprint!("{}", report_text(project, &report, &Style::stderr()));
    eprintln!();
    Ok(())
}
