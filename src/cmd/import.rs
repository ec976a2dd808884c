//! `walj import` and `walj recover --from-transcripts`: journals rebuilt from Claude Code
//! transcripts (library side: [`crate::import`]) and from the session files of Codex CLI, Gemini
//! CLI and Copilot CLI ([`crate::import::agents`]).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;

use crate::agents::Agent;
use crate::import::agents as agent_files;
use crate::import::{self, ImportOptions, ImportReport};
use crate::project::Project;
use crate::style::Style;

/// The arguments of `walj import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Transcripts or session files, or folders of them; each file's agent is told by its
    /// content (default: this project's sessions of `--agent`).
    pub paths: Vec<PathBuf>,
    /// Whose sessions: claude (Claude Code's transcripts in ~/.claude/projects, the default),
    /// codex ($CODEX_HOME/sessions), gemini (~/.gemini/tmp/*/chats) or copilot
    /// ($COPILOT_HOME/session-state). With PATHs: only that agent's files.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Every session of the agent, each into the journal of the project its working folder names.
    #[arg(long, conflicts_with = "paths")]
    pub all: bool,
    /// Only sessions whose file changed in the last N days.
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
pub(crate) const RECENT_DAYS: u64 = 7;

fn config_dir() -> anyhow::Result<PathBuf> {
    crate::claude::paths::config_dir()
        .context("cannot find Claude Code's folder: set CLAUDE_CONFIG_DIR (or HOME) to the folder holding `projects/`")
}

/// Expands folders into the `*.jsonl` files under them; with `agent`, only that agent's files
/// (a file named explicitly that is not one is an error).
fn expand(paths: &[PathBuf], agent: Option<Agent>) -> anyhow::Result<Vec<PathBuf>> {
    let of = |p: &PathBuf| agent_files::detect(p).unwrap_or(Agent::ClaudeCode);
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).with_context(|| format!("{}: cannot read", p.display()))?;
        if !meta.is_dir() && !meta.is_file() {
            // A FIFO, a device (`/dev/zero`), a socket: it could block or never end.
            anyhow::bail!("{}: not a regular file ({}); walj imports only files and folders", p.display(), what(&meta));
        }
        if meta.is_dir() {
            let mut found = Vec::new();
            import::jsonl_under(p, &mut found);
            found.sort();
            out.extend(found.into_iter().filter(|f| agent.is_none_or(|a| of(f) == a)));
        } else {
            if let Some(a) = agent
                && of(p) != a
            {
                anyhow::bail!("{}: not {} session file (it is {}'s)", p.display(), article(a), of(p).label());
            }
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// What a path that is neither a file nor a folder is, in words.
fn what(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    let _ = meta;
    "not a file"
}

fn article(a: Agent) -> String {
    match a {
        Agent::ClaudeCode => "a Claude Code".to_string(),
        other => format!("a {}", other.label()),
    }
}

/// `walj import [PATH...] [--agent NAME] [--all] [--days N] [--json]`.
pub(crate) fn import_cmd(project: &Project, args: ImportArgs) -> anyhow::Result<i32> {
    let ImportArgs { paths, agent, all, days, json, .. } = args;
    let agent = match agent.as_deref() {
        None => None,
        Some(name) => Some(
            Agent::parse(name).with_context(|| format!("unknown agent {name:?}: claude, codex, gemini or copilot"))?,
        ),
    };
    let progress = std::io::stderr().is_terminal() && !json;
    let cfg_dir = crate::claude::paths::config_dir();
    let opts = ImportOptions { config_dir: cfg_dir.clone(), progress };
    let mut jobs: Vec<(Project, Vec<PathBuf>)> = Vec::new();
    let mut skipped = Vec::new();
    let since = days.and_then(import::since_days);
    match (agent.unwrap_or(Agent::ClaudeCode), paths.is_empty()) {
        (_, false) => jobs.push((project.clone(), expand(&paths, agent)?)),
        (Agent::ClaudeCode, true) if all => {
            let dir = config_dir()?;
            for (root, files) in import::all_transcripts(&dir) {
                match root {
                    Some(root) => jobs.push((Project::at(root, None), files)),
                    None => skipped.extend(files),
                }
            }
        }
        (a, true) if all => {
            for (root, files) in agent_files::all_project_files(a) {
                match root {
                    Some(root) => jobs.push((Project::at(root, None), files)),
                    None => skipped.extend(files),
                }
            }
        }
        (Agent::ClaudeCode, true) => {
            let dir = config_dir()?;
            let files = import::project_transcripts(&dir, &project.root, since);
            if files.is_empty() && !json {
                println!(
                    "No Claude Code transcripts of {} in {}{}.",
                    project.root.display(),
                    dir.join("projects").join(crate::claude::paths::encode_dir(&project.root)).display(),
                    days.map(|d| format!(" from the last {d} days")).unwrap_or_default()
                );
                // The sessions another agent keeps of this project, if any.
                for a in Agent::OTHERS {
                    let n = agent_files::project_files(a, &project.root, since).len();
                    if n > 0 {
                        println!(
                            "{} of this project: `walj import --agent {}` imports {}.",
                            plural_sessions(n, a),
                            a.name(),
                            if n == 1 { "it" } else { "them" }
                        );
                    }
                }
                return Ok(0);
            }
            jobs.push((project.clone(), files));
        }
        (a, true) => {
            let files = agent_files::project_files(a, &project.root, since);
            if files.is_empty() && !json {
                println!(
                    "No {} sessions of {} in {}{}.",
                    a.label(),
                    project.root.display(),
                    agent_files::sessions_dir(a).map(|d| d.display().to_string()).unwrap_or_default(),
                    days.map(|d| format!(" from the last {d} days")).unwrap_or_default()
                );
                return Ok(0);
            }
            jobs.push((project.clone(), files));
        }
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
        let noun = if agent.is_none_or(|a| a == Agent::ClaudeCode) { "transcripts" } else { "session files" };
        writeln!(out, "{} {noun} skipped: their working folder no longer exists.", skipped.len())?;
    }
    let failed = all_reports.iter().any(|(_, r)| r.files.iter().any(|f| f.error.is_some()));
    Ok(if failed { 1 } else { 0 })
}

fn plural_sessions(n: usize, a: Agent) -> String {
    format!("{n} {} session{}", a.label(), if n == 1 { "" } else { "s" })
}

/// The import report for people.
pub(crate) fn report_text(project: &Project, r: &ImportReport, style: &Style) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    // The ids of calls left in flight, shown as every listing shows them.
    let ids = if r.files.iter().any(|f| !f.in_flight.is_empty()) {
        crate::fold::ShortIds::load(&project.journal).unwrap_or_default()
    } else {
        crate::fold::ShortIds::default()
    };
    for f in &r.files {
        // Transcripts are another program's files: every text from them is shown escaped.
        let name = crate::present::shown_path(&f.path);
        if let Some(e) = &f.error {
            let _ = writeln!(s, "{} {name}: {}", style.red("error"), crate::present::shown(&e.to_string()));
            continue;
        }
        let agent = Agent::of_record(f.agent.as_deref());
        if f.hooked {
            let _ = writeln!(
                s,
                "{name}: nothing imported: walj's hooks journaled this {} session ({})",
                agent.label(),
                crate::present::shown(&crate::journal::record::short_sid(
                    f.sessions.first().map(String::as_str).unwrap_or("")
                ))
            );
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
                "  {} the last line is cut short: {} stopped while writing it (a crash).",
                style.yellow("torn"),
                agent.label()
            );
        }
        if f.oversized > 0 {
            let _ = writeln!(
                s,
                "  {} lines were longer than {} MiB and were skipped unread",
                f.oversized,
                import::MAX_LINE >> 20
            );
        }
        if f.malformed > 0 {
            let _ = writeln!(s, "  {} lines were not JSON and were skipped", f.malformed);
        }
        if f.todos_skipped > 0 {
            let n = f.todos_skipped;
            let _ = writeln!(
                s,
                "  {n} todo item{} had no text and {} skipped; the list's other items are kept",
                if n == 1 { "" } else { "s" },
                if n == 1 { "was" } else { "were" }
            );
        }
        for p in &f.outside {
            let _ = writeln!(
                s,
                "  outside the project: {} (kept as session context; walj keeps no image there and never reverts it)",
                crate::present::shown(p)
            );
        }
        for c in &f.in_flight {
            let _ = writeln!(
                s,
                "  {} {} {} ({}, session {})",
                style.red("in flight"),
                crate::present::shown(&c.tool),
                crate::present::shown(&c.what),
                style.id(ids.split(&c.id), 0),
                crate::present::shown(&crate::journal::record::short_sid(&c.session))
            );
        }
    }
    let sessions: std::collections::BTreeSet<&String> = r.files.iter().flat_map(|f| f.sessions.iter()).collect();
    // Claude Code's are transcripts; the other agents' files are their session files.
    let noun = if r.files.iter().all(|f| f.agent.is_none()) { "transcript" } else { "session file" };
    let _ = writeln!(
        s,
        "Imported {} records from {} {noun}{} ({} session{}) into {}.",
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
pub(crate) fn recover_from_transcripts(project: &Project, yes: bool) -> anyhow::Result<()> {
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
