//! `walj sessions …`.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::json;

use crate::compact::DeleteOptions;
use crate::fold::{CommandStatus, SessionStatus};
use crate::present::{human_ts, safe, safe_block, shell_quote, shown, shown_path};
use crate::procinfo;
use crate::project::Project;
use crate::report::{session_header, state_colored};
use crate::session::brief::{self, BriefInput};
use crate::session::bundle::{self, Keys, Protection};
use crate::session::procs::{self, ProcStatus};
use crate::session::{SessionState, human_bytes, transcript};
use crate::style::Style;

use super::prompt::passphrase;
use super::rel_display;

/// The arguments of `walj sessions resume`.
#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// Session id or unique prefix.
    pub sid: String,
    /// Print the brief only; do not deliver it.
    #[arg(long)]
    pub print_only: bool,
    /// Print the brief as JSON.
    #[arg(long)]
    pub json: bool,
    /// Another machine's session: replace a transcript already in Claude Code's folder that
    /// holds another conversation (kept beside it as a .bak file).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub confirm: super::Confirm,
}

/// The arguments of `walj sessions repair`.
#[derive(Debug, clap::Args)]
pub struct RepairArgs {
    /// Session id or unique prefix.
    pub sid: String,
    /// Say what the repair would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was changed (and where the copy is) as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub confirm: super::Confirm,
}

/// The arguments of `walj sessions export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Session id or unique prefix.
    pub sid: String,
    /// The bundle file to write.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Encrypt with a passphrase (prompt, or $WALJ_PASSPHRASE).
    #[arg(long)]
    pub encrypt: bool,
    /// Encrypt to this age recipient (age1…); repeatable.
    #[arg(long, value_name = "KEY")]
    pub recipient: Vec<String>,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
    /// Keep the transcript as it is: by default its secret-looking tokens are redacted and
    /// never-captured files' contents withheld, as `walj sync` publishes it.
    #[arg(long)]
    pub keep_transcript_secrets: bool,
}

/// The arguments of `walj sessions import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The bundle file (`walj sessions export`).
    pub file: PathBuf,
    /// age identity file for bundles encrypted to recipients; repeatable.
    #[arg(short, long, value_name = "FILE")]
    pub identity: Vec<PathBuf>,
    #[command(flatten)]
    pub confirm: super::Confirm,
    /// Only say what would be imported (the bundle is read and checked, nothing is written).
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was (or would be) imported as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// The arguments of `walj sessions delete`.
#[derive(Debug, clap::Args)]
pub struct DeleteArgs {
    /// Session id or unique prefix.
    pub sid: String,
    #[command(flatten)]
    pub confirm: super::Confirm,
    /// Also when it is live or has unresolved entries.
    #[arg(long)]
    pub force: bool,
    /// Only say what would be removed.
    #[arg(long)]
    pub dry_run: bool,
}

/// Brings the session's safe copy up to date with the original (when it still exists).
fn catch_up(project: &Project, state: &SessionState) {
    if let Some(t) = state.info.transcript.as_deref()
        && let Err(e) = transcript::copy(project, state.session(), Path::new(t))
    {
        eprintln!("walj: warning: could not update the transcript copy: {}", shown(&e.to_string()));
    }
}

// ---------------------------------------------------------------------------------------------
// sessions list / show

pub(crate) fn list(project: &Project, json_out: bool) -> anyhow::Result<i32> {
    let sessions = SessionState::list(project)?;
    // Other machines' sessions (`walj sync`), after this checkout's.
    let remotes = super::load::remotes(project, &crate::fold::FoldOptions::default());
    let mut out = io::stdout().lock();
    if json_out {
        let mut v = serde_json::to_value(&sessions)?;
        if let Some(a) = v.as_array_mut() {
            a.extend(crate::report::sync::sessions_json(&remotes));
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    let others = crate::report::sync::sessions_text(&remotes, &Style::stdout());
    if sessions.is_empty() && !others.is_empty() {
        writeln!(out, "No sessions recorded in this checkout.")?;
        write!(out, "{others}")?;
        return Ok(0);
    }
    if sessions.is_empty() {
        if crate::session::empty::journal_is_empty(project) {
            write!(out, "{}", super::recover::nothing_recorded(project))?;
        } else {
            writeln!(out, "No sessions recorded in {}.", shown_path(&project.journal))?;
        }
        return Ok(0);
    }
    let style = Style::stdout();
    let ids = crate::fold::ShortIds::load(&project.journal).unwrap_or_default();
    let w = sessions.iter().map(|s| ids.session(&s.session).chars().count()).max().unwrap_or(0).max(8);
    writeln!(
        out,
        "{}",
        style.bold(&format!(
            "{:<w$}  {:<7}  {:<8}  {:<16}  {:<16}  {:<14}  {:>7}  {:>6}  {:>10}  {:>9}",
            "SESSION", "AGENT", "STATE", "STARTED", "LAST", "BRANCH", "PROMPTS", "TODOS", "UNRESOLVED", "SIZE"
        ))
    )?;
    for s in &sessions {
        let state = crate::present::pad(&s.state, 8);
        let state = match s.state.as_str() {
            "crashed" => style.red(&state),
            "live" => style.green(&state),
            "ended" => style.dim(&state),
            _ => style.yellow(&state),
        };
        let branch = crate::present::fit(s.branch.as_deref().unwrap_or("-"), 14);
        writeln!(
            out,
            "{}  {}  {}  {:<16}  {:<16}  {}  {:>7}  {:>6}  {:>10}  {:>9}{}",
            style.session(ids.session_split(&s.session), w),
            crate::present::pad(&s.agent, 7),
            state,
            human_ts(&s.started),
            human_ts(&s.last_ts),
            branch,
            s.prompts,
            format!("{}/{}", s.todos_done, s.todos_total),
            s.unresolved,
            human_bytes(s.bytes),
            if s.imported { "  (imported)" } else { "" }
        )?;
    }
    write!(out, "{others}")?;
    writeln!(out, "{}", style.dim("Next: walj sessions show SID · walj sessions resume SID · walj procs"))?;
    Ok(0)
}

fn proc_table() -> Option<procs::ProcTable> {
    procinfo::processes()
}

/// `walj sessions show --json`'s object (docs/formats.md); `walj mcp`'s `session` serves it too.
/// With `foreign` (`walj mcp`): entries and hand-backs that came in a bundle carry `foreign`
/// (`from bundle X`), and so does the session when any of them did.
pub(crate) fn show_json_value(project: &Project, sid: &str, foreign: bool) -> anyhow::Result<serde_json::Value> {
    let state = SessionState::load(project, sid)?;
    let table = proc_table();
    let ps = procs::for_session(&state.info, state.status, table.as_deref(), &state.ids);
    let mut v = state.to_json(project, &ps, crate::report::entry_json);
    let moves = crate::report::moves_json(crate::present::command::folder_moves(state.entries.iter()));
    if !moves.is_empty() {
        v["folder_moves"] = json!(moves);
    }
    if foreign {
        let prov = crate::triage::origin::Provenance::load(&project.journal);
        let mut any: Option<String> = None;
        let mut mark = |x: &mut serde_json::Value, from: String| {
            if !from.is_empty() {
                x["foreign"] = json!(from);
                any.get_or_insert(from);
            }
        };
        for list in ["entries", "unresolved"] {
            for e in v.get_mut(list).and_then(|l| l.as_array_mut()).into_iter().flatten() {
                let from =
                    state.entries.iter().find(|x| e["id"] == x.id.as_str()).map(|x| prov.of_entry(x).from_what());
                mark(e, from.unwrap_or_default());
            }
        }
        for (h, hv) in
            state.handoffs.iter().zip(v.get_mut("handoffs").and_then(|l| l.as_array_mut()).into_iter().flatten())
        {
            mark(hv, prov.of_line(h.line).from_what());
        }
        if let Some(from) = any {
            v["foreign"] = json!(from);
        }
    }
    Ok(v)
}

pub(crate) fn show(project: &Project, sid: &str, json_out: bool) -> anyhow::Result<i32> {
    let mut out = io::stdout().lock();
    if json_out {
        writeln!(out, "{}", serde_json::to_string_pretty(&show_json_value(project, sid, false)?)?)?;
        return Ok(0);
    }
    let state = SessionState::load(project, sid)?;
    let table = proc_table();
    let ps = procs::for_session(&state.info, state.status, table.as_deref(), &state.ids);
    write!(out, "{}", show_text(project, &state, &ps, &Style::stdout()))?;
    Ok(0)
}

/// `sessions show` as text.
pub(crate) fn show_text(project: &Project, st: &SessionState, ps: &[ProcStatus], style: &Style) -> String {
    let s = &st.info;
    let mut o = String::new();
    show_fields(&mut o, project, st, style);
    show_history(&mut o, st, style);
    show_commands(&mut o, st, ps, style);
    show_moves(&mut o, st, style);
    let un: Vec<_> = st.unresolved().collect();
    if let Some(line) = crate::report::pending_line(project) {
        let _ = writeln!(o, "\n{}", style.yellow(&line));
    }
    let _ = writeln!(o, "\n{} ({})", style.bold("Unresolved entries"), un.len());
    let w = crate::report::id_width(&un, &st.ids);
    for e in &un {
        let _ = writeln!(
            o,
            "  {}  {}  {}  {}",
            style.id(st.ids.split(&e.id), w),
            state_colored(e.state(), style),
            shown(&e.path),
            shown(&e.tool)
        );
    }
    if let Some(m) = &s.last_assistant_message {
        let _ = writeln!(
            o,
            "\n{}\n  {}",
            style.bold("Last assistant message (at the last Stop)"),
            safe_block(m).replace('\n', "\n  ")
        );
    }
    let pending = st.handoffs.iter().filter(|h| h.delivered.is_none() && !h.undone).count();
    if pending > 0 {
        let _ = writeln!(o, "\n{pending} brief(s) wait for the next session start.");
    }
    let sid = shown(&shell_quote(st.ids.session(&s.session))).to_string();
    // A live session is not offered a resume: Claude Code is still running it.
    let next = if s.status() == SessionStatus::Live {
        format!("Next: walj recover --session {sid} (the session is live: no resume needed)")
    } else {
        format!(
            "Next: walj sessions resume {sid} · walj recover --session {sid} · {}",
            shown(&crate::present::text::resume_line(project, s))
        )
    };
    let _ = writeln!(o, "\n{}", style.dim(&next));
    o
}

/// `sessions show`: the header lines and the `key value` fields (times, git, transcript, storage).
fn show_fields(o: &mut String, project: &Project, st: &SessionState, style: &Style) {
    let s = &st.info;
    let mut head = String::new();
    session_header(&mut head, s, st.status, &[], &st.ids, style);
    // The header's first two lines (id, state, start, branch); the rest is shown in full below.
    for l in head.lines().take(2) {
        let _ = writeln!(o, "{l}");
    }
    let field = |o: &mut String, k: &str, v: String| {
        let _ = writeln!(o, "  {:<11} {v}", style.dim(k));
    };
    let mut started = human_ts(s.started.as_ref().unwrap_or(&s.first_ts));
    if let Some(src) = &s.source {
        let _ = write!(started, " ({})", shown(src));
    }
    if let Some(m) = &s.model {
        let _ = write!(started, ", model {}", shown(m));
    }
    field(o, "started", started);
    let ended = match (&s.end, st.status) {
        (Some((ts, reason)), SessionStatus::Ended) => format!("{} ({})", human_ts(ts), shown(reason)),
        (_, SessionStatus::Crashed) => {
            format!("never: no SessionEnd, and its {} process is gone (crashed)", s.agent().label())
        }
        (_, SessionStatus::Live) => "still running".into(),
        _ => "unknown".into(),
    };
    field(o, "ended", ended);
    field(o, "last", human_ts(&s.last_ts));
    if let Some(c) = &s.cwd {
        field(o, "cwd", safe(c).into_owned());
    }
    if s.branch.is_some() || s.head.is_some() {
        let branch = shown(s.branch.as_deref().unwrap_or("-"));
        let head = shown(s.head.as_deref().map(|h| crate::fold::abbrev(h, 12)).unwrap_or("-"));
        // Where the session started; once a command moved HEAD, never as where it is.
        let git = if s.git_moves.is_empty() {
            format!("branch {branch}, HEAD {head}")
        } else {
            format!("started on {branch} (HEAD {head})")
        };
        field(o, "git", git);
    }
    for m in &s.git_moves {
        field(o, "moved", crate::present::git::git_move(m));
    }
    let t = &st.transcript;
    match &t.original {
        Some(p) => field(
            o,
            "transcript",
            match t.original_bytes {
                Some(n) => format!("{} ({})", shown(p), human_bytes(n)),
                None => format!("{} (gone)", shown(p)),
            },
        ),
        None => field(o, "transcript", "none recorded".into()),
    }
    match &t.copy {
        Some(c) => field(
            o,
            "safe copy",
            format!(
                "{} ({} of transcript in {}{}{})",
                shown(&rel_display(project, c)),
                human_bytes(t.copied),
                human_bytes(t.copy_bytes),
                t.updated.as_deref().map(|u| format!(", copied {}", human_ts(u))).unwrap_or_default(),
                if t.copy_has_more() { "; holds lines the original lacks" } else { "" }
            ),
        ),
        None => field(o, "safe copy", "none yet (made at Stop, PreCompact and SessionEnd)".into()),
    }
    field(
        o,
        "stored",
        format!(
            "{} records ({}), {} objects ({})",
            st.usage.records,
            human_bytes(st.usage.journal_bytes),
            st.usage.objects,
            human_bytes(st.usage.object_bytes)
        ),
    );
    if let Some(from) = st.imported_from() {
        field(
            o,
            "imported",
            format!(
                "from {} ({}), exported {}",
                shown(from.get("source_root").and_then(|v| v.as_str()).unwrap_or("?")),
                shown(from.get("bundle").and_then(|v| v.as_str()).unwrap_or("?")),
                human_ts(from.get("exported").and_then(|v| v.as_str()).unwrap_or("?"))
            ),
        );
    }
}

/// `sessions show`: prompts, todos and files changed.
fn show_history(o: &mut String, st: &SessionState, style: &Style) {
    let s = &st.info;
    let _ = writeln!(o, "\n{} ({}, oldest first)", style.bold("Prompts"), s.prompts.len());
    for (i, p) in s.prompts.iter().enumerate() {
        let _ = writeln!(
            o,
            "  {:>2}. {}  {}",
            i + 1,
            style.dim(&human_ts(&p.ts)),
            safe_block(&p.text).replace('\n', "\n      ")
        );
    }
    let (done, total) = s.todos_done();
    let _ = writeln!(o, "\n{} ({done}/{total} done)", style.bold("Todos"));
    for (i, t) in s.todos.iter().enumerate() {
        let label = t.id.as_deref().map(|id| format!("#{}", shown(id))).unwrap_or_else(|| format!("{}", i + 1));
        let status = format!("[{}]", shown(&t.status));
        let status =
            if t.is_open() { style.yellow(&format!("{status:<13}")) } else { style.dim(&format!("{status:<13}")) };
        let _ = writeln!(o, "  {label:>4} {status} {}", shown(&t.content));
    }
    let files = st.files();
    let _ = writeln!(o, "\n{} ({})", style.bold("Files changed"), files.len());
    let width = files.iter().map(|f| crate::present::width(&f.path)).max().unwrap_or(0).min(60);
    for f in &files {
        let last = f.entries.last().map(|i| style.id(st.ids.split(i), 0)).unwrap_or_default();
        let state = st.entries.iter().rev().find(|e| e.path == f.path).map(|e| e.state());
        let _ = writeln!(
            o,
            "  {}  {}  {} entr{}, last {}{}",
            crate::present::pad(&f.path, width),
            state.map(|s| state_colored(s, style)).unwrap_or_default(),
            f.entries.len(),
            if f.entries.len() == 1 { "y" } else { "ies" },
            last,
            if f.outside { "  (outside the project)" } else { "" }
        );
    }
}

/// `sessions show`: commands, background processes and compactions.
fn show_commands(o: &mut String, st: &SessionState, ps: &[ProcStatus], style: &Style) {
    let s = &st.info;
    let failed = s.commands.iter().filter(|c| c.status == CommandStatus::Failed).count();
    let _ = writeln!(o, "\n{} ({}, {failed} failed)", style.bold("Commands"), s.commands.len());
    for c in &s.commands {
        let status = match c.status {
            CommandStatus::Ok => style.dim("ok       "),
            CommandStatus::Failed => style.red("FAILED   "),
            CommandStatus::InFlight => style.yellow("in flight"),
        };
        let mut line = format!("  {}  {status}  {}", style.dim(&human_ts(&c.ts)), shown(&c.command));
        if c.background {
            let _ = write!(
                line,
                "  (background{})",
                c.task_id.as_deref().map(|t| format!(" {}", shown(t))).unwrap_or_default()
            );
        }
        if let Some(e) = c.error.as_deref().filter(|_| c.status == CommandStatus::Failed) {
            let _ = write!(line, "\n      {}", shown(e.lines().next().unwrap_or("")));
        }
        let _ = writeln!(o, "{line}");
    }
    // A foreground command cut off by the session's death is not a background process.
    let (cut, bg): (Vec<&ProcStatus>, Vec<&ProcStatus>) = ps.iter().partition(|p| p.kind == "in_flight");
    let _ = writeln!(o, "\n{} ({})", style.bold("Background processes"), bg.len());
    for p in bg {
        let _ = writeln!(o, "  {}", super::procs::proc_line(p, style));
    }
    if !cut.is_empty() {
        let _ = writeln!(o, "\n{} ({})", style.bold("Foreground commands running when the session died"), cut.len());
        for p in cut {
            let _ = writeln!(o, "  {}", super::procs::proc_line(p, style));
        }
    }
    if !s.compactions.is_empty() {
        let _ = writeln!(o, "\n{} ({})", style.bold("Compactions"), s.compactions.len());
        for (ts, trig) in &s.compactions {
            let _ = writeln!(o, "  {}  {}", human_ts(ts), shown(trig));
        }
    }
}

/// `sessions show`: the folders the session's commands moved, settled entries included (a
/// move a Stop verified is still one move, not unrelated deletions and creations).
fn show_moves(o: &mut String, st: &SessionState, style: &Style) {
    let moves = crate::present::command::folder_moves(st.entries.iter());
    if moves.is_empty() {
        return;
    }
    let _ = writeln!(o, "\n{} ({})", style.bold("Folder moves"), moves.len());
    for m in &moves {
        let cmd = st.info.commands.iter().find(|c| c.id == m.command).map(|c| c.command.as_str());
        let _ = writeln!(o, "  {}", crate::present::command::moved_line(m, cmd, 60));
    }
}

// ---------------------------------------------------------------------------------------------
// delete / resume / transcript

pub(crate) fn delete(project: &Project, args: &DeleteArgs) -> anyhow::Result<i32> {
    let (sid, yes, force, dry_run) = (args.sid.as_str(), args.confirm.yes, args.force, args.dry_run);
    let state = SessionState::load(project, sid)?;
    let s = &state.info;
    let un = state.unresolved().count();
    eprintln!(
        "Session {} ({}, {}): {} records ({}), {} objects, transcript copy {}{}.",
        shown(&s.sid),
        state.status,
        human_ts(s.started.as_ref().unwrap_or(&s.first_ts)),
        state.usage.records,
        human_bytes(state.usage.journal_bytes),
        state.usage.objects,
        human_bytes(state.transcript.copy_bytes),
        if un > 0 { format!(", {un} UNRESOLVED entries") } else { String::new() }
    );
    let opts = DeleteOptions { dry_run, force };
    if dry_run {
        let rep = SessionState::delete(project, &state.info.session, &opts)?;
        println!("{}", super::compact::rewrite_summary(&rep, "would delete"));
        return Ok(0);
    }
    if !yes
        && !super::prompt::confirm(&format!(
            "Delete session {} from the journal, with the objects nothing else names and its transcript copy?",
            shown(&s.sid)
        ))?
    {
        eprintln!("Nothing deleted.");
        return Ok(1);
    }
    let rep = SessionState::delete(project, &state.info.session, &opts)?;
    println!("{}", super::compact::rewrite_summary(&rep, "deleted"));
    Ok(0)
}

pub(crate) fn resume(project: &Project, args: &ResumeArgs) -> anyhow::Result<i32> {
    let state = match SessionState::load(project, &args.sid) {
        // Only briefs or marks here (an earlier resume of another machine's session, before
        // it ran here): that machine's session.
        Ok(s) if s.info.started.is_none() && s.info.prompts.is_empty() && s.entries.is_empty() => {
            match crate::sync::resume::find(project, s.session())? {
                Some(rs) => return resume_remote(project, args, rs),
                None => s,
            }
        }
        Ok(s) => s,
        // Another machine's session (`walj sync`): continued here.
        Err(crate::session::SessionError::Unknown(sid)) => match crate::sync::resume::find(project, &args.sid)? {
            Some(rs) => return resume_remote(project, args, rs),
            None => return Err(crate::session::SessionError::Unknown(sid).into()),
        },
        Err(e) => return Err(e.into()),
    };
    resume_local(project, args, state)
}

fn resume_local(project: &Project, args: &ResumeArgs, mut state: SessionState) -> anyhow::Result<i32> {
    let (print_only, json_out) = (args.print_only, args.json);
    if state.status == SessionStatus::Live {
        eprintln!(
            "walj: note: session {} is still running; the brief goes to the next session start in this project",
            shown(&state.info.sid)
        );
    }
    catch_up(project, &state);
    let b = local_brief(project, &mut state, "");
    let action =
        if print_only { None } else { Some(brief::deliver(project, &state, &b).context("recording the brief")?) };
    if json_out {
        let v = b.json(state.session(), action.as_deref());
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    print!("{}", safe_block(&b.text));
    if action.is_some() {
        let agent = state.info.agent();
        let receiver = if agent == crate::agents::Agent::ClaudeCode { "Claude" } else { agent.label() };
        eprintln!(
            "\nwalj: this brief ({} characters, about {} tokens) goes to {} at the next session start in this project: `{}` (or a new `{}`).",
            b.chars,
            b.tokens,
            receiver,
            shown(&crate::present::text::resume_line(project, &state.info)),
            agent.name()
        );
    }
    Ok(0)
}

/// The brief of a session of this machine (its transcript copy caught up by the caller):
/// entries, todos, processes, the last answer and the prompts queued when it stopped, under
/// `head`.
fn local_brief(project: &Project, state: &mut SessionState, head: &str) -> brief::Brief {
    state.transcript = transcript::status(project, state.session(), state.info.transcript.as_deref());
    let table = proc_table();
    let ps = procs::for_session(&state.info, state.status, table.as_deref(), &state.ids);
    // Claude Code's transcript holds the last answer; another agent's last Stop does.
    let claude = state.info.agent() == crate::agents::Agent::ClaudeCode;
    let tail =
        transcript::tail(project, state.session(), state.info.transcript.as_deref(), 512 * 1024).filter(|_| claude);
    let last_message = tail
        .as_deref()
        .and_then(|t| crate::claude::transcript::last_assistant_text_of(t, Some(state.session())))
        .or_else(|| state.info.last_assistant_message.clone());
    let queued =
        tail.as_deref().map(|t| crate::claude::transcript::queued_prompts(t, state.session())).unwrap_or_default();
    let copy_path = state.transcript.copy.as_ref().map(|c| rel_display(project, c));
    let budget = brief::MAX_CHARS.saturating_sub(head.chars().count());
    let b = brief::build(&BriefInput { project, state, procs: &ps, last_message, copy_path, queued }, budget);
    if head.is_empty() { b } else { b.headed(head) }
}

/// `walj sessions repair SID`: a repaired copy of the session's transcript under a new
/// session id, where Claude Code finds it for this project ([`claude_transcript_place`]), so
/// that `claude --resume NEWID` opens it; the original and the safe copy are only read. The
/// source is walj's safe copy (caught up first: it keeps lines the original lost), else the
/// original. Refused while the session's Claude Code process runs. The session's brief goes
/// to the repaired session's start (and only to it).
pub(crate) fn repair(project: &Project, args: &RepairArgs) -> anyhow::Result<i32> {
    use crate::session::repair;
    let mut state = SessionState::load(project, &args.sid)?;
    if state.status == SessionStatus::Live {
        bail!(
            "session {} is still running (its Claude Code process is alive); end it first: a copy made now would miss what it still writes. Nothing was written.",
            shown(&state.info.sid)
        );
    }
    if state.info.agent() != crate::agents::Agent::ClaudeCode {
        bail!(
            "session {} is a {} session: repair writes Claude Code transcripts only. Nothing was written.",
            shown(&state.info.sid),
            state.info.agent().label()
        );
    }
    catch_up(project, &state);
    let session = state.session().to_string();
    let original = state.info.transcript.clone();
    let (bytes, source) = match transcript::read_copy(project, &session)? {
        Some(b) => (b, "walj's safe copy".to_string()),
        None => {
            let Some(p) = original.as_deref() else {
                bail!(
                    "session {} recorded no transcript path and has no safe copy; nothing to repair",
                    shown(&state.info.sid)
                )
            };
            match std::fs::read(p) {
                Ok(b) => (b, format!("the original {}", shown(p))),
                Err(e) => bail!(
                    "no safe copy of the transcript of session {}, and the original {} cannot be read ({e}); nothing to repair",
                    shown(&state.info.sid),
                    shown(p)
                ),
            }
        }
    };
    let new = repair::new_session_id(&session);
    let r = repair::repair(&bytes, &session, &new);
    let dest = claude_transcript_place(project, &new)?;
    let hint = format!("claude --resume {new}");
    let resume_line = project.resume_in(Some(&project.root.to_string_lossy()), &hint);
    let changes: Vec<String> = r.changes.iter().map(ToString::to_string).collect();
    let action = if args.dry_run {
        None
    } else {
        if let Some(dir) = dest.parent() {
            crate::fsutil::create_private_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        if dest.exists() {
            bail!("{} exists already; nothing was written (run the repair again for another id)", shown_path(&dest));
        }
        crate::fsutil::atomic_write(&dest, &r.bytes, Some(0o600))
            .with_context(|| format!("writing {}", dest.display()))?;
        let head = repair_head(&state, &new, &changes);
        let old_line = crate::present::text::resume_line(project, &state.info);
        let b = local_brief(project, &mut state, &head).resuming_with(&old_line, &resume_line);
        Some((brief::deliver_to(project, &state, &b, Some(&new)).context("recording the brief")?, b))
    };
    if args.json {
        let v = json!({
            "session": session,
            "new_session": new,
            "path": dest,
            "written": !args.dry_run,
            "source": source,
            "lines_in": r.lines_in,
            "lines_out": r.lines_out,
            "changes": r.changes,
            "resume": resume_line,
            "brief_action": action.as_ref().map(|(a, _)| a),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    let mut o = String::new();
    let _ = writeln!(o, "Repair of session {} ({} lines read from {}):", shown(&state.info.sid), r.lines_in, source);
    if changes.is_empty() {
        let _ = writeln!(o, "  nothing was damaged; the copy differs only in its session id");
    }
    for c in &changes {
        let _ = writeln!(o, "  - {}", safe(c));
    }
    match &action {
        Some((_, b)) => {
            let _ = writeln!(
                o,
                "Wrote {} lines to {} as session {new}; the original is untouched.",
                r.lines_out,
                shown_path(&dest)
            );
            let _ = writeln!(o, "walj's brief of the session ({} characters) goes to Claude when it starts.", b.chars);
            let _ = writeln!(
                o,
                "Continue it with:
  {}",
                shown(&resume_line)
            );
        }
        None => {
            let _ = writeln!(o, "Dry run: nothing written (it would go to {} as a new session).", shown_path(&dest));
        }
    }
    print!("{o}");
    Ok(0)
}

/// What the brief of a repaired session says first.
fn repair_head(state: &SessionState, new: &str, changes: &[String]) -> String {
    let mut h = format!(
        "This session ({new}) continues session {} from a copy of its transcript that `walj sessions repair` made after it ended abruptly.",
        state.info.sid
    );
    if changes.is_empty() {
        h.push_str(" The transcript needed no change.\n\n");
    } else {
        h.push_str(" What the repair changed:\n");
        for c in changes {
            h.push_str("- ");
            h.push_str(c);
            h.push('\n');
        }
        h.push('\n');
    }
    h
}

/// `walj sessions resume` of another machine's session: its transcript (the synced copy,
/// paths rewritten) where this machine's Claude Code finds it, and the brief for the next
/// session start here.
fn resume_remote(project: &Project, args: &ResumeArgs, rs: crate::sync::resume::RemoteSession) -> anyhow::Result<i32> {
    use crate::sync::resume::{TranscriptError, install_transcript};
    let session = rs.state.session().to_string();
    let installed = if args.print_only {
        None
    } else {
        match install_transcript(project, &rs, args.force) {
            Ok(i) => Some(Ok(i)),
            // No transcript came: the brief still goes to the next session.
            Err(e @ TranscriptError::NoCopy { .. }) => Some(Err(e.to_string())),
            Err(e) => bail!("{e}; nothing was done"),
        }
    };
    let mut state = rs.state.clone();
    // Its folder as this checkout has it: the other machine's paths mean nothing here.
    state.info.cwd = Some(crate::sync::resume::local_cwd(project, &rs).display().to_string());
    state.transcript = match &installed {
        Some(Ok(i)) => transcript::TranscriptStatus {
            original: Some(i.path.display().to_string()),
            original_exists: true,
            original_bytes: Some(i.bytes),
            ..Default::default()
        },
        _ => transcript::TranscriptStatus::default(),
    };
    // Briefs of this session waiting here (an earlier resume) are superseded by the new one.
    let here = crate::fold::Fold::load(&project.journal, &crate::fold::FoldOptions::default())
        .with_context(|| format!("reading {}", project.journal.display()))?;
    state.handoffs = here.handoffs.iter().filter(|h| h.session == session).cloned().collect();
    let last_message = transcript::tail(&rs.project, &session, None, 512 * 1024)
        .and_then(|t| crate::claude::transcript::last_assistant_text_of(&t, Some(&session)))
        .or_else(|| state.info.last_assistant_message.clone());
    let machine = crate::present::one_line(rs.name(), 60);
    let head = format!(
        "This session ran on another machine ({machine}, state {} as of its last sync {}). Its changes were made in that checkout: check each file here before building on it (`walj diff ID` compares that machine's images with this disk).\n\n",
        state.status,
        human_ts(&rs.manifest.synced_at)
    );
    let budget = brief::MAX_CHARS.saturating_sub(head.chars().count());
    let b = brief::build(
        &BriefInput { project, state: &state, procs: &[], last_message, copy_path: None, queued: Vec::new() },
        budget,
    )
    .headed(&head);
    let action =
        if args.print_only { None } else { Some(brief::deliver(project, &state, &b).context("recording the brief")?) };
    let (written, why_not) = match &installed {
        Some(Ok(i)) => (Some(i), None),
        Some(Err(e)) => (None, Some(e.clone())),
        None => (None, None),
    };
    if args.json {
        let mut v = b.json(&session, action.as_deref());
        v.insert("machine".into(), json!(rs.name()));
        v.insert("journal".into(), json!(rs.journal));
        v.insert("transcript".into(), json!(written));
        v.insert("transcript_missing".into(), json!(why_not));
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    print!("{}", safe_block(&b.text));
    if let Some(i) = written {
        eprintln!(
            "\nwalj: the transcript of session {} from {machine} is in {} ({}, {}); `claude --resume {}` in {} continues it here, and this brief ({} characters) goes to Claude at that start.",
            shown(&state.info.sid),
            shown_path(&i.path),
            human_bytes(i.bytes),
            i.outcome,
            shown(&shell_quote(&session)),
            shown_path(&i.cwd),
            b.chars
        );
    } else if action.is_some() {
        if let Some(w) = &why_not {
            eprintln!("\nwalj: {}", shown(w));
        }
        eprintln!(
            "walj: this brief ({} characters) goes to Claude at the next session start in this project (a new `claude`).",
            b.chars
        );
    }
    Ok(0)
}

/// Where Claude Code looks for a session's transcript when `claude --resume` runs in this
/// project: `<config dir>/projects/<encoded project root>/<session>.jsonl`. Computed here from
/// the project and a file-name-safe form of the id ([`crate::session::file_stem`]), never from
/// a path a record holds (a bundle or another machine chose those).
pub(crate) fn claude_transcript_place(project: &Project, session: &str) -> anyhow::Result<PathBuf> {
    let dir = crate::claude::paths::config_dir().context(
        "no home folder and no $CLAUDE_CONFIG_DIR: cannot tell where Claude Code keeps transcripts; pass -o FILE",
    )?;
    Ok(dir
        .join("projects")
        .join(crate::claude::paths::encode_dir(&project.root))
        .join(format!("{}.jsonl", crate::session::file_stem(session))))
}

/// `walj sessions transcript SID [-o FILE|-]`: the safe copy written to FILE (a path the user
/// typed), to stdout with `-o -`, and without `-o` to where Claude Code finds it for this
/// project ([`claude_transcript_place`]), so that `claude --resume` reopens it.
pub(crate) fn transcript_cmd(
    project: &Project,
    sid: &str,
    output: Option<PathBuf>,
    force: bool,
) -> anyhow::Result<i32> {
    let state = SessionState::load(project, sid)?;
    catch_up(project, &state);
    let session = state.session().to_string();
    let Some(bytes) = transcript::read_copy(project, &session)? else {
        match state.info.transcript.as_deref() {
            Some(p) => bail!(
                "no safe copy of the transcript of session {}, and the original {} is gone; nothing to write",
                shown(&state.info.sid),
                shown(p)
            ),
            None => bail!("session {} recorded no transcript path and has no safe copy", shown(&state.info.sid)),
        }
    };
    let path = match output {
        Some(p) if p.as_os_str() == "-" => {
            io::stdout().lock().write_all(&bytes)?;
            return Ok(0);
        }
        Some(p) => p,
        None => {
            let p = claude_transcript_place(project, &session)?;
            if std::fs::read(&p).is_ok_and(|b| b == bytes) {
                eprintln!("walj: {} already holds the safe copy; nothing written.", shown_path(&p));
                return Ok(0);
            }
            if let Some(dir) = p.parent() {
                crate::fsutil::create_private_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
            }
            p
        }
    };
    if path.exists() {
        if !force {
            bail!(
                "{} exists; pass --force to replace it (its current bytes are kept beside it as a .bak file)",
                shown_path(&path)
            );
        }
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let bak = PathBuf::from(format!("{}.{stamp}.bak", path.display()));
        std::fs::copy(&path, &bak).with_context(|| format!("keeping {} as {}", path.display(), bak.display()))?;
        eprintln!("walj: the previous {} is kept as {}", shown_path(&path), shown_path(&bak));
    }
    crate::fsutil::atomic_write(&path, &bytes, Some(0o600)).with_context(|| format!("writing {}", path.display()))?;
    let realigned = transcript::realign(project, &session, &path).unwrap_or(false);
    eprintln!(
        "walj: wrote {} ({}) from the safe copy{}.",
        shown_path(&path),
        human_bytes(bytes.len() as u64),
        if realigned { "; later copies continue from it" } else { "" }
    );
    Ok(0)
}

// ---------------------------------------------------------------------------------------------
// export / import

pub(crate) fn export(project: &Project, args: ExportArgs) -> anyhow::Result<i32> {
    let ExportArgs { sid, output, encrypt, recipient: recipients, force, keep_transcript_secrets } = args;
    let (sid, output) = (sid.as_str(), output.as_path());
    if output.exists() && !force {
        bail!("{} exists; choose another file or pass --force to replace it", output.display());
    }
    if (encrypt || !recipients.is_empty()) && !crate::crypt::available() {
        bail!("{}: cannot encrypt the bundle; nothing was written", crate::crypt::CryptError::Unsupported);
    }
    let state = SessionState::load(project, sid)?;
    // The bundle can be written (its folder exists and takes a file) before anything is
    // copied into the store: a failed export writes nothing.
    drop(crate::fsutil::stage(output, b"", Some(0o600)).with_context(|| format!("cannot write {}", output.display()))?);
    catch_up(project, &state);
    let protection = if !recipients.is_empty() {
        Protection::Recipients(recipients)
    } else if encrypt {
        match passphrase(true)? {
            Some(p) => Protection::Passphrase(p),
            None => bail!(
                "--encrypt needs a passphrase: set WALJ_PASSPHRASE, run in a terminal, or use --recipient age1…; nothing was written"
            ),
        }
    } else {
        Protection::None
    };
    let contents = bundle::collect(project, state.session(), keep_transcript_secrets)?;
    for w in &contents.warnings {
        eprintln!("walj: warning: {}", shown(&w.to_string()));
    }
    let size = bundle::write(output, &contents, &protection)?;
    let how = protection.describe();
    println!(
        "exported session {}: {} records, {} objects, transcript {} → {} ({}, {how})",
        shown(&state.info.sid),
        contents.meta.records,
        contents.objects.len(),
        contents.transcript.as_ref().map(|t| human_bytes(t.len() as u64)).unwrap_or_else(|| "none".into()),
        shown_path(output),
        human_bytes(size)
    );
    Ok(0)
}

/// Flags that raise the `[limits]` of reading others' data for one command.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LimitArgs {
    /// Most bytes the bundle may decode to in all (default 1 GiB; `[limits] max_decoded`).
    #[arg(long, value_name = "BYTES")]
    pub max_decoded: Option<u64>,
    /// Most bytes of one object, transcript or record section (default 256 MiB; `[limits] max_object`).
    #[arg(long, value_name = "BYTES")]
    pub max_object: Option<u64>,
    /// Most times its own size the bundle may inflate to, past 16 MiB (default 200; `[limits] max_ratio`).
    #[arg(long, value_name = "N")]
    pub max_ratio: Option<u64>,
}

impl LimitArgs {
    /// The project's `[limits]` with these flags over them.
    pub(crate) fn limits(&self, project: &Project) -> crate::config::Limits {
        let (cfg, _) = crate::config::Config::load_or_default(&project.config_path(), |e| eprintln!("walj: {e}"));
        let mut l = cfg.limits;
        l.max_decoded = self.max_decoded.unwrap_or(l.max_decoded);
        l.max_object = self.max_object.unwrap_or(l.max_object);
        l.max_ratio = self.max_ratio.unwrap_or(l.max_ratio);
        l
    }
}

/// Exit status of an import refused for what the bundle holds (damaged, forged, too large,
/// bad session ids): nothing was written.
pub(crate) const EXIT_BUNDLE_REFUSED: i32 = 2;

/// `walj sessions import FILE`: reads and checks the bundle, says what it would add, asks on a
/// terminal (off one it refuses without `--yes`, exit 1, naming the flag), then writes it.
/// `--dry-run` stops after saying; `--json` prints the report (`outcomes` as every action's).
/// The undo is `walj sessions delete SID`.
pub(crate) fn import(project: &Project, args: ImportArgs) -> anyhow::Result<i32> {
    let ImportArgs { file, identity, confirm, dry_run, json, limits } = args;
    let file = file.as_path();
    let limits = limits.limits(project);
    let mut ask = || match passphrase(false) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("walj: {e}");
            None
        }
    };
    let mut keys = Keys { passphrase: &mut ask, identities: identity };
    // Refused for what it holds (past a limit, bad session ids, records it may not bring):
    // exit 2; damaged, undecryptable or unreadable bundles stay errors (exit 1).
    let refused = |e: &bundle::BundleError| {
        eprintln!("walj: {}", crate::present::text::safe(&e.to_string()));
        Ok(EXIT_BUNDLE_REFUSED)
    };
    let is_refusal = |e: &bundle::BundleError| {
        matches!(e, bundle::BundleError::Refused { .. } | bundle::BundleError::TooLarge { .. })
    };
    let contents = match bundle::read_within(file, &mut keys, &limits) {
        Ok(c) => c,
        Err(e) if is_refusal(&e) => return refused(&e),
        Err(e) => return Err(e.into()),
    };
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| file.display().to_string());
    let save = |write: bool| {
        let r =
            if write { bundle::save_from(project, &contents, &name) } else { bundle::plan(project, &contents, &name) };
        match r {
            Ok(r) => Ok(Ok(r)),
            Err(crate::session::SessionError::Bundle(e)) if is_refusal(&e) => Ok(Err(e)),
            Err(e) => Err(anyhow::Error::from(e)),
        }
    };
    let plan = match save(false)? {
        Ok(r) => r,
        Err(e) => return refused(&e),
    };
    let nothing_new = |r: &bundle::SaveReport| {
        r.records_added == 0 && r.objects_added == 0 && !matches!(r.transcript.as_str(), "installed" | "updated")
    };
    let undo = format!("walj sessions delete {}", shell_quote(&plan.sid));
    let report_json = |r: &bundle::SaveReport, dry: bool, changed: bool| {
        serde_json::json!({
            "action": "sessions import",
            "dry_run": dry,
            "changed": changed,
            "bundle": file,
            "session": r.session,
            "sid": r.sid,
            "report": r,
            "undo": if changed || (dry && !nothing_new(r)) { Some(undo.as_str()) } else { None },
        })
    };
    if nothing_new(&plan) {
        if json {
            println!("{}", serde_json::to_string_pretty(&report_json(&plan, dry_run, false))?);
        } else {
            println!("nothing new: session {} ({}) is already here.", shown(&plan.sid), shown(&plan.session));
        }
        return Ok(0);
    }
    let summary = format!(
        "session {} ({}) from {}: {} records ({} already here), {} objects, transcript {}",
        shown(&plan.sid),
        shown(&plan.session),
        shown_path(file),
        plan.records_added,
        plan.records_present,
        plan.objects_added,
        shown(&plan.transcript)
    );
    if dry_run {
        if json {
            println!("{}", serde_json::to_string_pretty(&report_json(&plan, true, false))?);
        } else {
            println!("Dry run, nothing written: this would import {summary}.");
            println!("`{}` would remove it again.", shown(&undo));
        }
        return Ok(0);
    }
    if !confirm.ask(
        &format!("Import {summary} into {}? (`{}` removes it again)", shown_path(&project.journal), shown(&undo)),
        &format!(
            "nothing imported: `walj sessions import` asks first and there is no terminal to ask on; pass --yes to import {summary} (--dry-run shows it without writing)"
        ),
    )? {
        eprintln!("Nothing imported.");
        return Ok(1);
    }
    let rep = match save(true)? {
        Ok(r) => r,
        Err(e) => return refused(&e),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report_json(&rep, false, !nothing_new(&rep)))?);
        return Ok(0);
    }
    if rep.records_left_out > 0 {
        println!(
            "left out {} record{} only this checkout may write (brief deliveries and releases, announcements, import marks).",
            rep.records_left_out,
            if rep.records_left_out == 1 { "" } else { "s" }
        );
    }
    if nothing_new(&rep) {
        println!("nothing new: session {} ({}) is already here.", shown(&rep.sid), shown(&rep.session));
        return Ok(0);
    }
    println!(
        "imported session {} ({}): {} records added ({} already here), {} objects added ({} already here), transcript {}.",
        shown(&rep.sid),
        shown(&rep.session),
        rep.records_added,
        rep.records_present,
        rep.objects_added,
        rep.objects_present,
        shown(&rep.transcript)
    );
    if let Some(p) = &rep.transcript_side {
        println!("A different transcript copy was already here; the bundle's is in {}.", shown_path(p));
    }
    println!(
        "Next: walj sessions show {sid} · walj recover --session {sid} · walj sessions resume {sid}",
        sid = shown(&shell_quote(&rep.sid))
    );
    println!("`{}` removes it again (with --force while it has unresolved entries).", shown(&undo));
    Ok(0)
}
