//! recover, log, status, checkpoint.

use std::io::Write;

use anyhow::{Context, bail};
use serde_json::json;

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
pub const EXIT_UNRESOLVED: i32 = 1;
/// `walj recover --exit-code`'s status when it fails.
pub const EXIT_RECOVER_FAILED: i32 = 2;

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

/// Prints what the reader skipped, on stderr, so the report itself stays clean.
pub fn warn_problems(fold: &Fold) {
    let n = fold.report.problems.len();
    for p in fold.report.problems.iter().take(10) {
        eprintln!("walj: warning: journal {}", shown(&p.to_string()));
    }
    if n > 10 {
        eprintln!("walj: warning: … and {} more journal problems", n - 10);
    }
}

/// The fold of `opts`, checked and reconciled (see [`load_fold`]), with every id of the
/// journal read so that ids are shown short ([`Fold::load_short_ids`]).
pub fn load(project: &Project, opts: &FoldOptions) -> anyhow::Result<Fold> {
    let mut fold = load_fold(project, opts)?;
    fold.load_short_ids(&project.journal);
    crate::session::legacy::share_ids(project, &mut fold);
    Ok(fold)
}

/// The fold of `opts`: `--session` checked, the changes of commands a crash cut off added,
/// the disk checked, the journal's problems warned about.
pub fn load_fold(project: &Project, opts: &FoldOptions) -> anyhow::Result<Fold> {
    let mut fold =
        Fold::load(&project.journal, opts).with_context(|| format!("reading {}", project.journal.display()))?;
    // Commands a crash cut off: their changes (recorded once nothing they started runs).
    let prepare = |p: &Project, fold: &mut Fold| {
        for problem in crate::bashsnap::killed::reconcile(p, fold, opts).problems {
            eprintln!("walj: warning: unfinished commands: {}", shown(&problem.to_string()));
        }
        fold.check_disk(p);
    };
    prepare(project, &mut fold);
    // Subfolder journals from before one project root, read beside this one.
    for w in crate::session::legacy::read_beside(project, &mut fold, opts, prepare) {
        eprintln!("walj: warning: {}", shown(&w));
    }
    check_session(&fold, opts.session.as_deref())?;
    fold.read_head(&project.root);
    warn_problems(&fold);
    Ok(fold)
}

/// `--session SID` (a fold loaded with that filter) must name one session of the journal.
pub fn check_session(fold: &Fold, session: Option<&str>) -> anyhow::Result<()> {
    let Some(s) = session.filter(|s| !s.is_empty()) else { return Ok(()) };
    match fold.sessions.len() {
        0 => bail!("no session matches {s:?}; `walj sessions list` shows the sessions of this project"),
        1 => Ok(()),
        _ => bail!(
            "{s:?} is ambiguous; it matches sessions {}",
            fold.sessions.iter().map(|x| x.session.as_str()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// What a broken config means, after its error.
const CONFIG_CONSEQUENCE: &str = "the hook journals with the default settings until it is fixed";

/// The config's problem, said once on stderr by the commands that do not need the config
/// themselves (the hook journals with the defaults meanwhile); `walj doctor` shows the line.
pub fn config_problem(project: &Project) -> Option<crate::config::ConfigError> {
    crate::config::Config::check(&project.config_path()).err()
}

/// Prints the unresolved entries. Returns the exit status: 0, or with `exit_code`
/// [`EXIT_UNRESOLVED`] when there are some.
/// `from_transcripts`: `--from-transcripts` ran just before (its hint is not given again).
pub fn recover(
    project: &Project,
    json_out: bool,
    session: Option<String>,
    exit_code: bool,
    from_transcripts: bool,
) -> anyhow::Result<i32> {
    let session_given = session.as_deref().is_some_and(|s| !s.is_empty());
    let fold = load(project, &FoldOptions { session, ..Default::default() })?;
    // The report does not depend on the config: say what is wrong with it, report anyway.
    if let Some(e) = config_problem(project) {
        eprintln!("walj: warning: {e}; {CONFIG_CONSEQUENCE}");
    }
    // Other machines' journals (`walj sync`), unless one session was asked for.
    let mut remotes = if session_given { Vec::new() } else { remotes(project, &FoldOptions::default()) };
    share_ids(&fold, &mut remotes);
    // An in-place bisect's marker: read against the journal too (a revert batch recorded
    // while the files are back still wants its `walj undo`).
    let bisect_note = if crate::bisect::inplace::marker(project).exists() {
        let settled = load(project, &FoldOptions { keep_settled: true, ..Default::default() }).ok();
        crate::bisect::inplace::interrupted_with(project, settled.as_ref())
    } else {
        None
    };
    let mut out = std::io::stdout().lock();
    if json_out {
        let mut v = report::recover_json(&fold);
        background_json(&fold, &mut v);
        if let Some(note) = &bisect_note {
            v["bisect"] = serde_json::Value::String(note.clone());
        }
        if let Some(op) = crate::git::operation_in_progress(&project.root) {
            v["git_operation"] = serde_json::Value::String(op);
        }
        if !remotes.is_empty() {
            v["machines"] = crate::report::sync::recover_json(&remotes);
        }
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
        write!(out, "{}", report::recover_text(&fold, &Style::stdout()))?;
        write!(out, "{}", crate::session::empty::legacy_lines(project))?;
        write!(out, "{}", crate::report::sync::recover_text(&remotes, &Style::stdout()))?;
    }
    Ok(if exit_code && fold.unresolved().next().is_some() { EXIT_UNRESOLVED } else { 0 })
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

/// Other machines' journals kept by `walj sync` (read-only copies), folded with `opts`;
/// a copy that cannot be read is one warning line.
pub fn remotes(project: &Project, opts: &FoldOptions) -> Vec<crate::sync::remotes::RemoteJournal> {
    let (remotes, warnings) = crate::sync::remotes::load(project, opts);
    for w in warnings {
        eprintln!("walj: warning: {}", shown(&w.to_string()));
    }
    remotes
}

/// Other machines' entries are shown unique against every id of this journal and of the
/// copies (`walj diff ID` looks here first, then in the copies). A copy's ids come from its
/// cached id index (`.walj/cache/remotes/<id>/ids.idx`, [`crate::sync::remotes`]).
pub fn share_ids(fold: &Fold, remotes: &mut [crate::sync::remotes::RemoteJournal]) {
    let indexes: Vec<_> = remotes.iter().map(|r| r.ids().ok()).collect();
    share_ids_with(fold, remotes, &indexes);
}

/// [`share_ids`] with the copies' id indexes already read (`None`: a copy whose ids could
/// not be read; its entries' ids count).
pub fn share_ids_with(
    fold: &Fold,
    remotes: &mut [crate::sync::remotes::RemoteJournal],
    indexes: &[Option<crate::fold::ids::IdIndex>],
) {
    let mut ids = fold.ids.clone();
    for (i, r) in remotes.iter().enumerate() {
        match indexes.get(i).and_then(Option::as_ref) {
            Some(theirs) => ids = ids.with_index(theirs.clone()),
            None => ids = ids.with_shown(r.fold.entries.iter().map(|e| e.id.as_str())),
        }
    }
    for r in remotes {
        r.fold.ids = ids.clone();
    }
}

/// What to say when this checkout's journal holds nothing ([`crate::session::empty::message`]).
pub fn nothing_recorded(project: &Project) -> String {
    let config_dir = crate::claude::paths::config_dir_or_default();
    crate::session::empty::message(project, &config_dir, &super::setup::hook_command(None))
}

pub fn log(project: &Project, args: LogArgs) -> anyhow::Result<i32> {
    let LogArgs { json: json_out, all, session, limit } = args;
    let remotes = if session.as_deref().is_some_and(|s| !s.is_empty()) {
        Vec::new()
    } else {
        remotes(project, &FoldOptions { keep_settled: true, all_commands: true, ..Default::default() })
    };
    let fold = load(project, &FoldOptions { session, keep_settled: true, all_commands: true })?;
    let mut remotes = remotes;
    share_ids(&fold, &mut remotes);
    let entries: Vec<_> = fold.entries.iter().collect();
    let shown: Vec<_> = if all { entries } else { entries.iter().rev().take(limit).rev().copied().collect() };
    let mut out = std::io::stdout().lock();
    if json_out {
        // Entries of every session in one list: each says which session it belongs to.
        let v: Vec<_> = shown
            .iter()
            .map(|e| {
                let mut j = report::entry_json(e, &fold.ids);
                if let Some(o) = j.as_object_mut() {
                    o.insert("session".into(), json!(e.session));
                    o.insert("sid".into(), json!(e.sid));
                }
                j
            })
            .chain(crate::report::sync::log_json(&remotes, all, limit))
            .collect();
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
        // A command whose changes are not all entries: the list above is not the whole story.
        for c in fold.sessions.iter().flat_map(|s| &s.commands) {
            if let Some(t) = crate::present::command::left_out(c, 60) {
                writeln!(out, "{t}")?;
            }
        }
        write!(out, "{}", crate::report::sync::log_text(&remotes, all, limit, &Style::stdout()))?;
    }
    Ok(0)
}

pub fn status(project: &Project, json_out: bool) -> anyhow::Result<i32> {
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

pub fn checkpoint_cmd(project: &Project, args: CheckpointArgs) -> anyhow::Result<i32> {
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
pub fn fold_cmd(project: &Project, starting: Option<&str>) -> anyhow::Result<i32> {
    // The line index too, so that the next read of one session finds it current.
    let _ = crate::fold::located::load(&project.journal);
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
