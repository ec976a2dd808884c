//! `walj bisect`: prints what [`crate::bisect`] found (text or `--json`, docs/bisect.md).
//! Every string that comes from the journal (paths, commands, prompts, diffs) is escaped
//! before it reaches the terminal.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::bisect::{self, Found, Options, Report, Scope, Step};
use crate::fold::{Fold, FoldOptions};
use crate::present::text::{safe, safe_block};
use crate::project::Project;
use crate::style::Style;
use crate::triage::{self, DiffMode};

/// The arguments of `walj bisect`.
#[derive(Debug, clap::Args)]
pub struct BisectArgs {
    /// Bisect the steps of this session (id or unique prefix; default: the session with the latest change).
    #[arg(long, value_name = "SID", conflicts_with = "since")]
    pub session: Option<String>,
    /// Bisect every session's steps applied since TIME (RFC 3339, `YYYY-MM-DD`, `YYYY-MM-DD HH:MM` local, or `90m` / `3h` / `2d` ago).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Apply the states in the working tree itself (keeps build caches warm; see the safety rules in docs/bisect.md).
    #[arg(long)]
    pub in_place: bool,
    /// With --in-place: go ahead although touched files differ from the last step's post-image.
    #[arg(long, requires = "in_place")]
    pub force: bool,
    /// Scratch mode: copy ignored files too (a build folder the command needs).
    #[arg(long, conflicts_with = "in_place")]
    pub with_ignored: bool,
    /// Test the states just before and at the culprit again; report "not monotonic" when they disagree.
    #[arg(long)]
    pub verify: bool,
    /// Run the command N times per state (flaky tests): the majority decides, a disagreement is reported.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=99))]
    pub runs: u32,
    /// Abort when one run takes longer than SECS seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Print the command's output at the last passing and the first failing state.
    #[arg(long)]
    pub show_output: bool,
    /// Print the result as JSON (format in docs/bisect.md).
    #[arg(long)]
    pub json: bool,
    /// Hand the culprit back to Claude instead of reverting it: a brief (the culprit step, its diff
    /// and the failing output, asking for a fix that keeps the other steps), printed and recorded
    /// for the next Claude Code session's start, as `walj handoff` does (`walj undo` takes it back).
    #[arg(long, conflicts_with = "json")]
    pub handoff: bool,
    /// Confirm --in-place: required when Claude runs this (inside a Claude Code tool call).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The command that tests a state: exit 0 good, 1–127 bad, 125 skip, 128+ aborts.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// `--since`: an instant from the forms the help names.
pub(crate) fn parse_since(
    s: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<chrono::DateTime<chrono::Utc>> {
    use chrono::{Local, NaiveDate, NaiveDateTime, TimeZone, Utc};
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    for f in ["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f)
            && let Some(t) = Local.from_local_datetime(&t).earliest()
        {
            return Ok(t.with_timezone(&Utc));
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d")
        && let Some(t) = d.and_hms_opt(0, 0, 0).and_then(|t| Local.from_local_datetime(&t).earliest())
    {
        return Ok(t.with_timezone(&Utc));
    }
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => 0,
    };
    match num.parse::<i64>() {
        Ok(n) if secs > 0 => Ok(now - chrono::Duration::seconds(n.saturating_mul(secs))),
        _ => bail!(
            "--since {s:?}: give a time (2026-03-23T09:00:00Z, 2026-03-23, 2026-03-23 09:00) or how long ago (90m, 3h, 2d)"
        ),
    }
}

fn load(project: &Project) -> anyhow::Result<Fold> {
    super::load::load(project, &FoldOptions { keep_settled: true, ..Default::default() })
}

pub(crate) fn bisect_cmd(project: &Project, args: &BisectArgs) -> anyhow::Result<i32> {
    let fold = load(project)?;
    let scope = match (&args.session, &args.since) {
        (Some(s), _) => match fold.find_session(s) {
            Ok(info) => Scope::Session(info.session.clone()),
            Err(e) => bail!(session_error(s, e)),
        },
        (None, Some(t)) => Scope::Since(parse_since(t, chrono::Utc::now())?),
        (None, None) => Scope::LastSession,
    };
    let timeout = match args.timeout {
        Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
        Some(t) => bail!("--timeout {t}: give a number of seconds above 0"),
        None => None,
    };
    let opts = Options {
        scope,
        argv: args.command.clone(),
        timeout,
        runs: args.runs as usize,
        verify: args.verify,
        in_place: args.in_place,
        force: args.force,
        with_ignored: args.with_ignored,
    };
    let bar = (!args.json && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::with_draw_target(Some(1), indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("bisect {bar:30} {pos}/{len} states · {msg}") {
            b.set_style(style);
        }
        b
    });
    let mut progress = |done: usize, bound: usize, state: usize| {
        if let Some(b) = &bar {
            b.set_length(bound.max(done) as u64);
            b.set_position(done as u64);
            b.set_message(format!("testing state {state}"));
        }
    };
    let loader = || {
        load(project)
            .map_err(|e| bisect::LoadError { path: project.journal.clone(), message: e.root_cause().to_string() })
    };
    let result = bisect::bisect(project, &loader, &opts, &mut progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let report = result.context("walj bisect")?;
    let fold = load(project)?;
    remember_verdict(project, &to_json(project, &fold, &report, false, &args.command), &args.command);
    if args.handoff {
        return match brief(project, &fold, &report, &args.command) {
            Some(text) => {
                // Recorded with the hand-back machinery (undoable): the culprit's entries are
                // handed back and the brief goes to the next session's start.
                let ids = report.culprit().map(|s| s.entry_ids()).unwrap_or_default();
                let handed = crate::triage::handoff_with_note(project, &fold, &ids, &text)
                    .map_err(|e| anyhow::anyhow!("walj bisect --handoff: {e}"))?;
                let mut out = std::io::stdout().lock();
                write!(out, "{text}")?;
                writeln!(
                    out,
                    "\nHanded back to Claude: the next Claude Code session of this project starts with this brief ({}).",
                    crate::present::plural(handed.entries.len(), "entry", "entries")
                )?;
                if let Some(a) = &handed.action {
                    writeln!(out, "Undo: walj undo {}", safe(crate::fold::abbrev(a, 12)))?;
                }
                Ok(0)
            }
            None => {
                let why = report.reason().unwrap_or_default();
                eprintln!("walj: no brief: no culprit ({why})");
                Ok(super::EXIT_ERROR)
            }
        };
    }
    if args.json {
        let v = to_json(project, &fold, &report, args.show_output, &args.command);
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        print_text(project, &fold, &report, args.show_output, &args.command)?;
    }
    Ok(if report.culprit().is_some() { 0 } else { super::EXIT_ERROR })
}

/// Where the last bisect's verdict is kept: what `walj mcp`'s `bisect` answers.
pub(crate) fn last_verdict_path(project: &Project) -> std::path::PathBuf {
    project.dir.join("bisect-last.json")
}

/// Keeps the verdict (`walj bisect --json`'s object without the output) with when it was found
/// and the command; a failure to keep it is one line in `.walj/errors.log`, the bisect goes on.
fn remember_verdict(project: &Project, verdict: &Value, argv: &[OsString]) {
    let v = json!({"finished": crate::fsutil::now_ts(), "command": command_line(argv), "verdict": verdict});
    let path = last_verdict_path(project);
    let bytes = serde_json::to_vec_pretty(&v).unwrap_or_default();
    if let Err(e) = crate::fsutil::atomic_write(&path, &bytes, Some(0o600)) {
        crate::fsutil::append_log(
            &project.errors_log(),
            &format!("keeping the bisect verdict in {}: {e}", path.display()),
        );
    }
}

/// The command as typed, for sentences.
fn command_line(argv: &[OsString]) -> String {
    argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
}

fn session_error(prefix: &str, e: crate::fold::IdError) -> String {
    match e {
        crate::fold::IdError::Unknown(_) => {
            format!("no session matches {prefix:?}; `walj sessions list` shows the sessions of this project")
        }
        crate::fold::IdError::Ambiguous { candidates, .. } => {
            format!("{prefix:?} is ambiguous; it matches sessions {}", candidates.join(", "))
        }
    }
}

/// `walj revert` of a step's entries.
fn revert_line(fold: &Fold, step: &Step) -> String {
    let ids: Vec<String> = step.entry_ids().iter().map(|id| safe(fold.ids.short(id)).into_owned()).collect();
    format!("walj revert {}", ids.join(" "))
}

fn range_later(step: &Step, n: usize) -> String {
    match n - step.n {
        0 => "it is the last step".to_string(),
        1 => format!("keeps step {n}"),
        _ => format!("keeps steps {}–{n}", step.n + 1),
    }
}

fn print_text(project: &Project, fold: &Fold, r: &Report, show_output: bool, argv: &[OsString]) -> anyhow::Result<()> {
    let st = Style::stdout();
    let mut out = std::io::stdout().lock();
    let n = r.steps.len();
    let mode = if r.in_place { "in place" } else { "in a scratch copy" };
    let verified = if r.verify.is_some() { 2 } else { 0 };
    let tested = r.tested.iter().filter(|t| !t.codes.is_empty()).count().saturating_sub(verified);
    let again = if verified > 0 { " (+2 to verify)" } else { "" };
    writeln!(
        out,
        "walj bisect: {n} step{} {mode}; {tested} state{}{again} tested, {} command run{} (the search needs at most {} states).",
        if n == 1 { "" } else { "s" },
        if tested == 1 { "" } else { "s" },
        r.runs,
        if r.runs == 1 { "" } else { "s" },
        bisect::search::max_tests(n)
    )?;
    if let Some(d) = &r.disk {
        let p: Vec<String> = d.differs.iter().map(|p| safe(p).into_owned()).collect();
        writeln!(
            out,
            "The disk differs from the last state the journal builds ({}: changed after the session, or outside the journal): the tree as it is was tested too.",
            p.join(", ")
        )?;
        let codes: Vec<String> = d.codes.iter().map(i32::to_string).collect();
        let flaky = if d.flaky { " — the runs disagreed (flaky)" } else { "" };
        writeln!(out, "  the disk : {} (exit {}){flaky}", d.verdict.as_str(), codes.join(", "))?;
    }
    for t in &r.tested {
        let codes: Vec<String> = t.codes.iter().map(i32::to_string).collect();
        let how = if t.codes.is_empty() { "not built".to_string() } else { format!("exit {}", codes.join(", ")) };
        let flaky = if t.flaky { " — the runs disagreed (flaky)" } else { "" };
        writeln!(out, "  state {:>3}: {} ({how}){flaky}", t.state, t.verdict.as_str())?;
    }
    let cmd = command_line(argv);
    if let Some(f) = &r.flaky {
        let states: Vec<String> = f.states.iter().map(usize::to_string).collect();
        writeln!(
            out,
            "Uncertain: the runs of state{} {} disagreed (a flaky command); {}",
            if states.len() == 1 { "" } else { "s" },
            states.join(", "),
            match (r.culprit(), f.confirmed) {
                (Some(s), true) =>
                    format!("the states next to step {} were tested again and agree with the answer.", s.n),
                (Some(s), false) => format!(
                    "tested again, the states next to step {} do not clearly agree: the answer may be wrong (try more --runs).",
                    s.n
                ),
                (None, _) => "the answer may be wrong (try more --runs).".to_string(),
            }
        )?;
    }
    if let Some(step) = r.culprit() {
        writeln!(out)?;
        writeln!(out, "{}", st.bold(&format!("The first failing step: step {} of {n}", step.n)))?;
        let what = if step.combined() { "combined step of overlapping commands" } else { step.tool.as_str() };
        writeln!(out, "  id      {}  ({})", safe(fold.ids.short(&step.id)), safe(what))?;
        if step.combined() {
            let m: Vec<String> = step.members.iter().map(|m| safe(fold.ids.short(m)).into_owned()).collect();
            writeln!(out, "  members {}", m.join(", "))?;
        }
        let label = if step.tool == crate::journal::tool::BASH { "command" } else { "path   " };
        writeln!(out, "  {label} {}", safe(&step.what))?;
        if let Some(p) = bisect::steps::prompt_of(fold, step) {
            let line = p.lines().next().unwrap_or("");
            writeln!(out, "  prompt  {}", safe(line))?;
        }
        for c in &step.changes {
            let Some(e) = fold.entry(&c.entry) else { continue };
            let sides = triage::diff_sides(project, e, DiffMode::Applied);
            write_diff(&mut out, &crate::report::diff::unified(&sides, &e.path, 3, false), st)?;
        }
        writeln!(out)?;
        if let Some(o) = &r.outside {
            let p: Vec<String> = o.paths.iter().map(|p| safe(p).into_owned()).collect();
            writeln!(
                out,
                "Not this step alone: step {} starts from a change made outside the journal in {} (not a tool call), and with that change alone the state before it already fails. Reverting the step will not fix it; look at that change.",
                step.n,
                p.join(", ")
            )?;
        }
        writeln!(
            out,
            "Next: `{}` takes this step out alone (three-way, {}; `walj undo` undoes it).",
            revert_line(fold, step),
            range_later(step, n)
        )?;
        let conflicts = bisect::revert_conflicts(project, fold, step);
        if conflicts.is_empty() {
            writeln!(out, "Reverting it alone does not conflict with a later step on the same path.")?;
        } else {
            writeln!(out, "Reverting it alone would conflict with later changes:")?;
            for c in conflicts {
                writeln!(out, "  {}", safe(&c))?;
            }
        }
    } else if let Some(why) = r.reason() {
        writeln!(out, "No culprit: {why}.")?;
    }
    if let Some(says) = r.disk_says(&cmd) {
        writeln!(out, "{}", st.bold(&format!("The disk: {}.", safe(&says))))?;
    }
    if let Some(v) = &r.verify {
        if v.monotonic {
            writeln!(out, "Verified: the state before it passes again and its own fails again.")?;
        } else {
            writeln!(
                out,
                "Not monotonic: tested again, the state before it is {} and its own is {} — the answer may be wrong (a flaky command? try --runs 3).",
                v.before.as_str(),
                v.at.as_str()
            )?;
        }
    }
    notes(&mut out, fold, r)?;
    if show_output {
        let (good, bad) = r.outputs();
        for (name, t) in [("last passing", good), ("first failing", bad)] {
            if let Some(t) = t {
                writeln!(out, "\n── output at the {name} state ({}) ──", t.state)?;
                for line in String::from_utf8_lossy(&t.output).lines() {
                    writeln!(out, "{}", safe(line))?;
                }
            }
        }
    }
    Ok(())
}

/// A unified diff, each line escaped (file bytes are recorded text too; a tab stays a tab,
/// as in the header's `--- a/PATH<TAB>(label)` and in tab-indented code), then coloured.
fn write_diff(out: &mut impl Write, diff: &str, st: Style) -> std::io::Result<()> {
    for line in diff.lines() {
        let line = safe_block(line);
        let shown = if line.starts_with("+++") || line.starts_with("---") {
            st.bold(&line)
        } else if line.starts_with('+') {
            st.green(&line)
        } else if line.starts_with('-') {
            st.red(&line)
        } else if line.starts_with("@@") {
            st.dim(&line)
        } else {
            line.into_owned()
        };
        writeln!(out, "{shown}")?;
    }
    Ok(())
}

/// The brief `--handoff` prints: what broke, where, and the failing output; every recorded
/// string escaped.
fn brief(project: &Project, fold: &Fold, r: &Report, command: &[OsString]) -> Option<String> {
    use std::fmt::Write as _;
    let step = r.culprit()?;
    let cmd: Vec<String> = command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut b = String::new();
    let _ = writeln!(
        b,
        "`{}` passed before step {} of {} and fails after it (walj bisect). Fix the failure while keeping the change's intent and the later steps; do not revert other steps.\n",
        safe(&cmd.join(" ")),
        step.n,
        r.steps.len()
    );
    let _ = writeln!(b, "The step: {} `{}` ({})", safe(&step.tool), safe(&step.what), safe(fold.ids.short(&step.id)));
    if let Some(p) = bisect::steps::prompt_of(fold, step) {
        let _ = writeln!(b, "Its turn's prompt: {}", safe(p.lines().next().unwrap_or("")));
    }
    let _ = writeln!(b, "\nIts change:\n```diff");
    for c in &step.changes {
        if let Some(e) = fold.entry(&c.entry) {
            let sides = triage::diff_sides(project, e, DiffMode::Applied);
            for line in crate::report::diff::unified(&sides, &e.path, 3, false).lines() {
                let _ = writeln!(b, "{}", safe_block(line));
            }
        }
    }
    let _ = writeln!(b, "```");
    if let (_, Some(bad)) = r.outputs() {
        let text = String::from_utf8_lossy(&bad.output);
        let lines: Vec<&str> = text.lines().collect();
        let _ = writeln!(b, "\nThe failing output (last {} lines):\n```", lines.len().min(60));
        for line in &lines[lines.len().saturating_sub(60)..] {
            let _ = writeln!(b, "{}", safe(line));
        }
        let _ = writeln!(b, "```");
    }
    Some(b)
}

fn notes(out: &mut impl Write, fold: &Fold, r: &Report) -> std::io::Result<()> {
    for g in &r.gaps {
        writeln!(
            out,
            "Gap: {} changed outside the journal between step {} and step {}: states {}–{} hold the journal's images, which may not be what the disk held then.",
            safe(&g.path),
            g.after,
            g.step,
            g.after,
            g.step - 1
        )?;
    }
    for u in &r.unbuildable {
        writeln!(
            out,
            "Not built: state {}: {} — it was skipped, so the answer cannot point inside it.",
            u.state,
            safe(&u.why)
        )?;
    }
    for why in &r.not_copied {
        writeln!(out, "Not copied into the scratch copy: {}.", safe(why))?;
    }
    for l in &r.left_out {
        writeln!(out, "Left out: {} ({}): {}.", safe(fold.ids.short(&l.entry)), safe(&l.path), l.why)?;
    }
    for (k, paths) in &r.off {
        let p: Vec<String> = paths.iter().map(|p| safe(p).into_owned()).collect();
        writeln!(out, "In place, state {k} of {} came out as the revert merge left it (a gap).", p.join(", "))?;
    }
    if !r.changed_by_command.is_empty() {
        let p: Vec<String> = r.changed_by_command.iter().map(|p| safe(p).into_owned()).collect();
        writeln!(out, "The command itself changed (left as they are): {}.", p.join(", "))?;
    }
    Ok(())
}

fn to_json(project: &Project, fold: &Fold, r: &Report, show_output: bool, argv: &[OsString]) -> Value {
    let n = r.steps.len();
    let culprit = r.culprit().map(|s| {
        json!({
            "step": s.n,
            "id": s.id,
            "short": fold.ids.short(&s.id),
            "tool": s.tool,
            "what": s.what,
            "session": s.session,
            "prompt": bisect::steps::prompt_of(fold, s),
            "combined": s.combined(),
            "members": s.members,
            "entries": s.changes.iter().map(|c| json!({"id": c.entry, "path": c.path, "uncertain": c.uncertain})).collect::<Vec<_>>(),
            "revert": revert_line(fold, s),
            "conflicts": bisect::revert_conflicts(project, fold, s),
        })
    });
    let range = match r.found {
        Found::Range { from, to } => json!({"from": from, "to": to}),
        _ => Value::Null,
    };
    let output = if show_output {
        let (good, bad) = r.outputs();
        let text = |t: Option<&bisect::StateRun>| t.map(|t| String::from_utf8_lossy(&t.output).into_owned());
        json!({"last_good": text(good), "first_bad": text(bad)})
    } else {
        Value::Null
    };
    json!({
        "mode": if r.in_place { "in_place" } else { "scratch" },
        "steps": r.steps.iter().map(|s| json!({"step": s.n, "id": s.id, "tool": s.tool, "what": s.what, "members": s.members})).collect::<Vec<_>>(),
        "runs": r.runs,
        "max_states": bisect::search::max_tests(n),
        "tested": r.tested,
        "culprit": culprit,
        "range": range,
        "reason": r.reason(),
        "verify": r.verify,
        "gaps": r.gaps,
        "unbuildable": r.unbuildable,
        "left_out": r.left_out.iter().map(|l| json!({"id": l.entry, "path": l.path, "why": l.why})).collect::<Vec<_>>(),
        "off": r.off.iter().map(|(k, p)| json!({"state": k, "paths": p})).collect::<Vec<_>>(),
        "changed_by_command": r.changed_by_command,
        "not_copied": r.not_copied,
        "disk": r.disk.as_ref().map(|d| json!({
            "differs": d.differs,
            "verdict": d.verdict,
            "codes": d.codes,
            "flaky": d.flaky,
            "says": r.disk_says(&command_line(argv)),
        })),
        "outside_change": r.outside,
        "uncertain": r.flaky.is_some(),
        "flaky": r.flaky,
        "output": output,
    })
}
