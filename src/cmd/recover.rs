//! recover, log, status, checkpoint.

use std::io::Write;

use anyhow::Context;
use serde_json::json;

use super::load::{check_session, load, load_fold, remotes};
use crate::checkpoint::{CheckpointOptions, checkpoint};
use crate::fold::{Fold, FoldOptions, SessionStatus};
use crate::present::{shown, shown_path};
use crate::project::Project;
use crate::report;
use crate::store::Store;
use crate::style::Style;

/// The arguments of `walj recover`.
#[derive(Debug, clap::Args)]
pub struct RecoverArgs {
    /// Print the report as JSON (schema in the README).
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
    /// Exit 1 when something is unresolved, 0 when nothing is, 2 on an error (for scripts and prompts).
    #[arg(long)]
    pub exit_code: bool,
}

/// `walj recover --exit-code`'s status when something is unresolved.
pub(crate) const EXIT_UNRESOLVED: i32 = 1;
/// `walj recover --exit-code`'s status when it fails.
pub(crate) const EXIT_RECOVER_FAILED: i32 = 2;

/// The arguments of `walj log`.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// Print the entries as a JSON array.
    #[arg(long)]
    pub json: bool,
    /// Every entry (default: the last 50).
    #[arg(long)]
    pub all: bool,
    /// Only this session (id or prefix).
    #[arg(long, value_name = "SID")]
    pub session: Option<String>,
    /// How many of the newest entries to show.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
}

/// The arguments of `walj checkpoint`.
#[derive(Debug, clap::Args)]
pub struct CheckpointArgs {
    /// Only this session (id or prefix).
    #[arg(long, value_name = "SID")]
    pub session: Option<String>,
    /// Print what was verified as JSON (one line per pass).
    #[arg(long)]
    pub json: bool,
    /// Repeat every N seconds (the proposal's scheduled checkpoints).
    #[arg(long, value_name = "SECONDS")]
    pub every: Option<u64>,
    #[command(flatten)]
    pub confirm: super::Confirm,
}

/// What a broken config means, after its error.
const CONFIG_CONSEQUENCE: &str = "the hook journals with the default settings until it is fixed";

/// The config's problem, said once on stderr by the commands that do not need the config
/// themselves (the hook journals with the defaults meanwhile); `walj doctor` shows the line.
pub(crate) fn config_problem(project: &Project) -> Option<crate::config::ConfigError> {
    crate::config::Config::check(&project.config_path()).err()
}

/// Prints the unresolved entries. Returns the exit status: 0, or with `exit_code`
/// [`EXIT_UNRESOLVED`] when there are some.
/// `from_transcripts`: `--from-transcripts` ran just before (its hint is not given again).
pub(crate) fn recover(
    project: &Project,
    json_out: bool,
    session: Option<String>,
    exit_code: bool,
    from_transcripts: bool,
) -> anyhow::Result<i32> {
    let (fold, remotes, bisect_note) = recover_parts(project, session)?;
    let mut out = std::io::stdout().lock();
    if json_out {
        let v = json_of(project, &fold, &remotes, bisect_note.as_deref());
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        if crate::session::empty::journal_is_empty(project) {
            let others = crate::report::sync::recover_text(&remotes, &Style::stdout());
            if !others.is_empty() {
                writeln!(out, "No journal in this checkout yet.")?;
                write!(out, "{others}")?;
                return Ok(0);
            }
            let mut message = nothing_recorded(project);
            if from_transcripts {
                // After `--from-transcripts` found nothing, its hint would name the command just run.
                message =
                    message.lines().filter(|l| !l.contains("--from-transcripts")).map(|l| format!("{l}\n")).collect();
            }
            write!(out, "{message}")?;
            return Ok(0);
        }
        if let Some(note) = &bisect_note {
            writeln!(out, "{}", Style::stdout().yellow(&format!("walj bisect: {note}")))?;
        }
        if let Some(op) = crate::git::operation_in_progress(&project.root) {
            let line = format!("git: {op}: finish or abort it before `walj revert --session` (it refuses meanwhile)");
            writeln!(out, "{}", Style::stdout().yellow(&crate::present::safe(&line)))?;
        }
        if let Some(line) = report::pending_line(project) {
            writeln!(out, "{}", Style::stdout().yellow(&line))?;
        }
        write!(out, "{}", report::recover_text(&fold, &Style::stdout()))?;
        write!(out, "{}", crate::session::empty::legacy_lines(project))?;
        write!(out, "{}", crate::report::sync::recover_text(&remotes, &Style::stdout()))?;
    }
    Ok(if exit_code && fold.unresolved().next().is_some() { EXIT_UNRESOLVED } else { 0 })
}

/// What `walj recover` reads: the fold (`session` only, or all), the other machines'
/// journals (none when one session is asked for) and an interrupted in-place bisect's note.
fn recover_parts(
    project: &Project,
    session: Option<String>,
) -> anyhow::Result<(Fold, Vec<crate::sync::remotes::RemoteJournal>, Option<String>)> {
    let session_given = session.as_deref().is_some_and(|s| !s.is_empty());
    let fold = load(project, &FoldOptions { session, ..Default::default() })?;
    // The report does not depend on the config: say what is wrong with it, report anyway.
    if let Some(e) = config_problem(project) {
        eprintln!("walj: warning: {e}; {CONFIG_CONSEQUENCE}");
    }
    // Other machines' journals (`walj sync`), unless one session was asked for.
    let mut remotes = if session_given { Vec::new() } else { remotes(project, &FoldOptions::default()) };
    crate::session::load::share_ids(&fold, &mut remotes);
    // An in-place bisect's marker: read against the journal too (a revert batch recorded
    // while the files are back still wants its `walj undo`).
    let bisect_note = if crate::bisect::inplace::marker(project).exists() {
        let settled = load(project, &FoldOptions { keep_settled: true, ..Default::default() }).ok();
        crate::bisect::inplace::interrupted_with(project, settled.as_ref())
    } else {
        None
    };
    Ok((fold, remotes, bisect_note))
}

/// `walj recover --json` (the schema in docs/formats.md); `walj mcp`'s `recover` serves it too.
/// With `foreign` (`walj mcp`), a bundle's entries carry `foreign` (`from bundle X`) and each
/// of `machines` `foreign: "from machine M"`.
pub(crate) fn recover_json_value(
    project: &Project,
    session: Option<String>,
    foreign: bool,
) -> anyhow::Result<serde_json::Value> {
    let (fold, remotes, bisect_note) = recover_parts(project, session)?;
    let mut v = json_of(project, &fold, &remotes, bisect_note.as_deref());
    if foreign {
        let prov = crate::triage::origin::Provenance::load(&project.journal);
        for s in v.get_mut("sessions").and_then(|x| x.as_array_mut()).into_iter().flatten() {
            let mut any = None;
            for e in s.get_mut("entries").and_then(|x| x.as_array_mut()).into_iter().flatten() {
                let from = e["id"].as_str().and_then(|id| fold.entry(id)).map(|x| prov.of_entry(x).from_what());
                if let Some(from) = from.filter(|f| !f.is_empty()) {
                    e["foreign"] = json!(from);
                    any.get_or_insert(from);
                }
            }
            // A session a bundle brought: its prompt and todos are the bundle's words too.
            if let Some(from) = any {
                s["foreign"] = json!(from);
            }
        }
        for m in v.get_mut("machines").and_then(|x| x.as_array_mut()).into_iter().flatten() {
            let name = m["machine"].as_str().or_else(|| m["name"].as_str()).unwrap_or("another machine").to_string();
            m["foreign"] = json!(format!("from machine {name}"));
        }
    }
    Ok(v)
}

fn json_of(
    project: &Project,
    fold: &Fold,
    remotes: &[crate::sync::remotes::RemoteJournal],
    bisect_note: Option<&str>,
) -> serde_json::Value {
    let mut v = report::recover_json(fold);
    background_json(fold, &mut v);
    if let Some(note) = bisect_note {
        v["bisect"] = serde_json::Value::String(note.to_string());
    }
    if let Some(op) = crate::git::operation_in_progress(&project.root) {
        v["git_operation"] = serde_json::Value::String(op);
    }
    if let Some(p) = report::pending_json(project) {
        v["pending_images"] = p;
    }
    if !remotes.is_empty() {
        v["machines"] = crate::report::sync::recover_json(remotes);
    }
    v
}

/// `background` on each session of `recover --json`: its background commands (a dev server
/// started with `run_in_background`, a task a Stop listed) and whether each still runs, from
/// the process table ([`crate::session::procs`]): `id`, `task_id`, `command`, `description`,
/// `state` (`running`, `not_running`, `unknown`), `pids`, `reported` (what Claude Code last said
/// of it: `running`, `completed`, …). A subagent's foreground command is never one of them.
fn background_json(fold: &Fold, v: &mut serde_json::Value) {
    let Some(sessions) = v["sessions"].as_array_mut() else { return };
    let table = crate::procinfo::processes();
    for sv in sessions {
        let Some(s) = sv["session"].as_str().and_then(|id| fold.session(id)) else { continue };
        let bg: Vec<serde_json::Value> = crate::session::procs::for_session(s, s.status(), table.as_deref(), &fold.ids)
            .into_iter()
            .filter(|p| p.kind == "background")
            .map(|p| {
                serde_json::json!({
                    "id": p.id, "task_id": p.task_id, "command": p.command, "description": p.description,
                    "state": p.state, "pids": p.pids, "reported": p.reported,
                })
            })
            .collect();
        if !bg.is_empty() {
            sv["background"] = serde_json::Value::Array(bg);
        }
    }
}

/// What to say when this checkout's journal holds nothing ([`crate::session::empty::message`]).
pub(crate) fn nothing_recorded(project: &Project) -> String {
    let config_dir = crate::claude::paths::config_dir_or_default();
    crate::session::empty::message(project, &config_dir, &super::setup::hook_command(None))
}

/// What `walj log` reads: this checkout's fold (settled entries and every command kept) and
/// the other machines' journals (none when one session is asked for).
fn log_parts(
    project: &Project,
    session: Option<String>,
) -> anyhow::Result<(Fold, Vec<crate::sync::remotes::RemoteJournal>)> {
    let remotes = if session.as_deref().is_some_and(|s| !s.is_empty()) {
        Vec::new()
    } else {
        remotes(project, &FoldOptions { keep_settled: true, all_commands: true, ..Default::default() })
    };
    let fold = load(project, &FoldOptions { session, keep_settled: true, all_commands: true })?;
    let mut remotes = remotes;
    crate::session::load::share_ids(&fold, &mut remotes);
    Ok((fold, remotes))
}

/// `walj log --json`'s list: every entry (`all`) or the `limit` newest of each journal, each
/// with its session; other machines' with `machine` and `journal`. With `foreign`, a bundle's
/// entries carry `foreign` (`from bundle X`) and other machines' `foreign` (`from machine M`)
/// (`walj mcp`).
pub(crate) fn log_json_value(
    project: &Project,
    session: Option<String>,
    all: bool,
    limit: usize,
    foreign: bool,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let (fold, remotes) = log_parts(project, session)?;
    Ok(log_json_of(project, &fold, &remotes, all, limit, foreign))
}

fn log_json_of(
    project: &Project,
    fold: &Fold,
    remotes: &[crate::sync::remotes::RemoteJournal],
    all: bool,
    limit: usize,
    foreign: bool,
) -> Vec<serde_json::Value> {
    let prov = foreign.then(|| crate::triage::origin::Provenance::load(&project.journal));
    let n = fold.entries.len();
    let shown = fold.entries.iter().skip(if all { 0 } else { n.saturating_sub(limit) });
    // Entries of every session in one list: each says which session it belongs to.
    shown
        .map(|e| {
            let mut j = report::entry_json(e, &fold.ids);
            if let Some(o) = j.as_object_mut() {
                o.insert("session".into(), json!(e.session));
                o.insert("sid".into(), json!(e.sid));
                if let Some(from) = prov.as_ref().map(|p| p.of_entry(e).from_what()).filter(|f| !f.is_empty()) {
                    o.insert("foreign".into(), json!(from));
                }
            }
            j
        })
        .chain(crate::report::sync::log_json(remotes, all, limit).into_iter().map(|mut j| {
            if foreign && let Some(m) = j.get("machine").and_then(|m| m.as_str()).map(str::to_string) {
                j["foreign"] = json!(format!("from machine {m}"));
            }
            j
        }))
        .collect()
}

pub(crate) fn log(project: &Project, args: LogArgs) -> anyhow::Result<i32> {
    let LogArgs { json: json_out, all, session, limit } = args;
    let (fold, remotes) = log_parts(project, session)?;
    let entries: Vec<_> = fold.entries.iter().collect();
    let shown: Vec<_> = if all { entries } else { entries.iter().rev().take(limit).rev().copied().collect() };
    let mut out = std::io::stdout().lock();
    if json_out {
        let v = log_json_of(project, &fold, &remotes, all, limit, false);
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        if shown.is_empty() && remotes.is_empty() && crate::session::empty::journal_is_empty(project) {
            write!(out, "{}", nothing_recorded(project))?;
            return Ok(0);
        }
        write!(out, "{}", report::log_text(&shown, &fold.ids, &Style::stdout()))?;
        if shown.len() < fold.entries.len() {
            writeln!(out, "({} earlier entries; --all shows every one)", fold.entries.len() - shown.len())?;
        }
        // A folder moved by a command: the deletions and creations above are one move.
        for m in crate::present::command::folder_moves(shown.iter().copied()) {
            let cmd = fold.sessions.iter().flat_map(|s| &s.commands).find(|c| c.id == m.command);
            writeln!(out, "{}", crate::present::command::moved_line(&m, cmd.map(|c| c.command.as_str()), 60))?;
        }
        // A command whose changes are not all entries: the list above is not the whole story.
        for c in fold.sessions.iter().flat_map(|s| &s.commands) {
            if let Some(t) = crate::present::command::left_out(c, 60) {
                writeln!(out, "{t}")?;
            }
        }
        write!(out, "{}", crate::report::sync::log_text(&remotes, all, limit, &Style::stdout()))?;
        if let Some(line) = report::pending_line(project) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(0)
}

pub(crate) fn status(project: &Project, json_out: bool) -> anyhow::Result<i32> {
    // Counts only: no id is shown.
    let fold = load_fold(project, &FoldOptions::default())?;
    // The sessions `walj sessions` lists (not the marks-only ones a compaction or a bundle
    // leaves), so the two never disagree.
    let by_state = crate::session::SessionState::count_by_state(project)?;
    let journal_bytes = std::fs::metadata(&project.journal).map(|m| m.len()).unwrap_or(0);
    let objects = Store::new(project.store_dir()).ids().map(|v| v.len()).unwrap_or(0);
    let unresolved = fold.unresolved().count();
    let waiting = report::handed_back_waiting(&fold);
    let crashed = by_state.get(SessionStatus::Crashed.as_str()).copied().unwrap_or(0);
    let config_error = config_problem(project);
    let code = if config_error.is_some() { super::EXIT_ERROR } else { 0 };
    if let Some(e) = &config_error {
        eprintln!("walj: {e}; {CONFIG_CONSEQUENCE}");
    }
    let v = json!({
        "project": project.root,
        "journal": project.journal,
        "journal_bytes": journal_bytes,
        "records": fold.records,
        "problems": fold.report.problems.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "sessions": by_state,
        "unresolved": unresolved,
        "handed_back_waiting": waiting,
        "objects": objects,
        "config_error": config_error.as_ref().map(ToString::to_string),
    });
    let mut out = std::io::stdout().lock();
    if json_out {
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(code);
    }
    writeln!(out, "project   {}", shown_path(&project.root))?;
    writeln!(out, "journal   {} ({} records, {} bytes)", shown_path(&project.journal), fold.records, journal_bytes)?;
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
    } else if crate::session::empty::journal_is_empty(project) {
        write!(out, "\n{}", nothing_recorded(project))?;
    } else if waiting == 0 {
        writeln!(out, "\nNothing unresolved.")?;
    }
    if waiting > 0 {
        writeln!(
            out,
            "{}{} handed back, waiting for the next session (`walj undo` takes it back).",
            if unresolved > 0 { "" } else { "\n" },
            crate::present::plural(waiting, "entry is", "entries are")
        )?;
    }
    Ok(code)
}

pub(crate) fn checkpoint_cmd(project: &Project, args: CheckpointArgs) -> anyhow::Result<i32> {
    let CheckpointArgs { session, json: json_out, every, .. } = args;
    if session.is_some() {
        let fold = Fold::load(&project.journal, &FoldOptions { session: session.clone(), ..Default::default() })
            .with_context(|| format!("reading {}", project.journal.display()))?;
        check_session(&fold, session.as_deref())?;
    }
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
                if rep.drifted.is_empty() { String::new() } else { format!(" ({})", shown(&rep.drifted.join(", "))) }
            );
        }
        match every {
            None => return Ok(0),
            Some(secs) => std::thread::sleep(std::time::Duration::from_secs(secs.max(1))),
        }
    }
}

/// `walj fold`: the fold every reader does (its snapshot written in steps, under the claim the
/// other snapshot writers take), and nothing else. Errors go to `.walj/errors.log`: nobody
/// reads this detached process's output.
pub(crate) fn fold_cmd(project: &Project, starting: Option<&str>) -> anyhow::Result<i32> {
    // The line index and the usage index too, so that the next read of one session (or of
    // every session's size, `walj sessions list`) finds them current.
    let _ = crate::fold::located::load(&project.journal);
    crate::session::usage::refresh(&project.journal);
    match Fold::load(&project.journal, &FoldOptions::default()) {
        // Then the sessions walj's hooks never saw that SessionStart left for it.
        Ok(fold) => crate::import::auto::in_background(project, &fold, starting.unwrap_or("")),
        Err(e) => crate::fsutil::append_log(
            &project.errors_log(),
            &format!("folding {} in the background: {e}", project.journal.display()),
        ),
    }
    Ok(0)
}
