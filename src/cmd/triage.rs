//! diff, mark, revert, undo, handoff: thin wrappers printing what `crate::triage` returns.

use std::io::Write;

use crate::fold::{Fold, FoldOptions, ShortIds};
use crate::project::Project;
use crate::style::Style;
use crate::triage::origin::Provenance;
use crate::triage::{self, DiffMode, HandoffOptions, Outcome, RevertOptions};

/// The arguments of `walj mark`.
#[derive(Debug, clap::Args)]
pub struct MarkArgs {
    /// Entry ids or unique prefixes.
    #[arg(required_unless_present = "session", conflicts_with = "session")]
    pub ids: Vec<String>,
    /// Mark them done.
    #[arg(long, required = true)]
    pub done: bool,
    /// Every unresolved entry of this session.
    #[arg(long, value_name = "SID")]
    pub session: Option<String>,
    /// Also entries of a session that is still live.
    #[arg(long)]
    pub force: bool,
    /// Print what was done as JSON (schema in the README).
    #[arg(long)]
    pub json: bool,
    /// Confirm: required when Claude runs this (inside a Claude Code tool call).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// The arguments of `walj revert`.
#[derive(Debug, clap::Args)]
pub struct RevertArgs {
    /// Entry ids or unique prefixes.
    #[arg(required_unless_present = "session", conflicts_with = "session")]
    pub ids: Vec<String>,
    /// Every change of this session (like Claude Code's /rewind), newest first.
    #[arg(long, value_name = "SID")]
    pub session: Option<String>,
    /// Only the changes of this prompt's turn (1 = the session's first prompt).
    #[arg(long, value_name = "N", requires = "session")]
    pub prompt: Option<usize>,
    /// Write the pre-image over conflicting later changes; act on live sessions.
    #[arg(long)]
    pub force: bool,
    /// Say what would happen, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was done (or would be) as JSON (schema in the README).
    #[arg(long)]
    pub json: bool,
    /// Confirm: required when Claude runs this (inside a Claude Code tool call).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// The arguments of `walj handoff`.
#[derive(Debug, clap::Args)]
pub struct HandoffArgs {
    /// Entry ids (default: every unresolved entry).
    #[arg(conflicts_with = "session")]
    pub ids: Vec<String>,
    /// The unresolved entries of this session.
    #[arg(long, value_name = "SID")]
    pub session: Option<String>,
    /// Only print the brief; record nothing.
    #[arg(long)]
    pub print: bool,
    /// Print the brief and what was handed back as JSON (schema in the README).
    #[arg(long)]
    pub json: bool,
    /// Also entries of a session that is still live.
    #[arg(long)]
    pub force: bool,
    /// Show the briefs imported bundles brought, waiting for `--deliver` (nothing recorded).
    #[arg(long, conflicts_with_all = ["session", "print", "deliver"])]
    pub held: bool,
    /// Deliver briefs an imported bundle brought (IDS: their action ids, default all) at the
    /// next SessionStart. Imported briefs are never delivered without it.
    #[arg(long, conflicts_with_all = ["session", "print"])]
    pub deliver: bool,
    /// Confirm: required when Claude runs this (inside a Claude Code tool call).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// Every entry, settled ones included: triage acts on any entry by id.
fn load(project: &Project) -> anyhow::Result<Fold> {
    super::recover::load(project, &FoldOptions { keep_settled: true, ..Default::default() })
}

/// `--json` of mark, revert and undo: `{"action", "dry_run", "changed", "concurrent",
/// "outcomes": [{"id", "short", "path", "message", "changed", "concurrent", "kept"}]}`.
fn print_outcomes_json(action: &str, dry_run: bool, outcomes: &[Outcome], ids: &ShortIds) -> anyhow::Result<()> {
    let v = serde_json::json!({
        "action": action,
        "dry_run": dry_run,
        "changed": outcomes.iter().any(|o| o.changed),
        "concurrent": outcomes.iter().any(|o| o.concurrent),
        "outcomes": outcomes.iter().map(|o| serde_json::json!({
            "id": o.id,
            "short": ids.short(&o.id),
            "path": o.path,
            "message": o.message,
            "changed": o.changed,
            "concurrent": o.concurrent,
            "kept": o.kept,
        })).collect::<Vec<_>>(),
    });
    writeln!(std::io::stdout().lock(), "{}", serde_json::to_string_pretty(&v)?)?;
    Ok(())
}

fn print_outcomes(outcomes: &[Outcome]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for o in outcomes {
        writeln!(out, "{}", crate::present::safe_block(&o.message))?;
    }
    Ok(())
}

/// What `walj diff` shows: one entry, or every change of a session or of one of its turns.
pub enum DiffTarget<'a> {
    Entry(&'a str),
    Turn { session: &'a str, prompt: Option<usize> },
}

pub fn diff(project: &Project, target: DiffTarget<'_>, mode: DiffMode, context: usize) -> anyhow::Result<i32> {
    let fold = load(project)?;
    // (entry, the project whose disk it is compared with, where it comes from)
    let remotes;
    let items: Vec<(&crate::fold::Entry, Project, String)> = match target {
        DiffTarget::Entry(id) => match triage::find_entry(&fold, id) {
            Ok(e) => vec![(e, project.clone(), String::new())],
            // An id of another machine's journal (`walj sync`): its images, this checkout's disk.
            Err(err) => {
                remotes = super::recover::remotes(
                    project,
                    &crate::fold::FoldOptions { keep_settled: true, ..Default::default() },
                );
                match crate::sync::remotes::find_entry(&remotes, id).map_err(|m| anyhow::anyhow!(m))? {
                    Some((r, e)) => vec![(
                        e,
                        r.project(project),
                        format!(" · from {}, {}", crate::present::shown(r.name()), crate::present::shown(&r.as_of())),
                    )],
                    None => return Err(err.into()),
                }
            }
        },
        DiffTarget::Turn { session, prompt } => triage::turn_entries(&fold, session, prompt)?
            .into_iter()
            .map(|e| (e, project.clone(), String::new()))
            .collect(),
    };
    let st = Style::stdout();
    let mut out = std::io::stdout().lock();
    for (i, (e, project, from)) in items.iter().enumerate() {
        let sides = triage::diff_sides(project, e, mode)?;
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{}{}{}",
            st.dim("entry "),
            st.id(fold.ids.split(&e.id), 0),
            st.dim(&format!(
                " · {} · {} {} · {}{from}",
                crate::present::shown(&e.path),
                crate::present::shown(&e.tool),
                crate::present::shown(&e.event),
                e.state()
            ))
        )?;
        write!(out, "{}", crate::report::diff::unified(&sides, &e.path, context, st.color))?;
    }
    Ok(0)
}

/// The entries among `ids` that came from an imported bundle (by where their records lie in
/// the journal, `triage::origin`): (short id, path, "from bundle X").
fn foreign(fold: &Fold, prov: &Provenance, ids: &[String]) -> Vec<(String, String, String)> {
    ids.iter()
        .filter_map(|i| fold.find(i).ok())
        .filter_map(|e| {
            let o = prov.of_entry(e);
            (!o.is_own()).then(|| (fold.ids.short(&e.id).to_string(), e.path.clone(), o.from_what()))
        })
        .collect()
}

/// Asks before acting (`verb`: "revert", "mark done", …) on entries from elsewhere, naming
/// where each comes from. On a terminal the user answers; off one `--yes` stands for the
/// answer, and the origin is printed (stderr) all the same. `Ok(false)`: not confirmed.
pub(crate) fn confirm_foreign(items: &[(String, String, String)], yes: bool, verb: &str) -> anyhow::Result<bool> {
    use std::io::IsTerminal;
    if items.is_empty() {
        return Ok(true);
    }
    let list: Vec<String> = items
        .iter()
        .map(|(id, path, from)| {
            format!("  {id} ({}) {}", crate::present::text::safe(path), crate::present::text::safe(from))
        })
        .collect();
    let head = format!(
        "{} entr{} named here came from elsewhere, not from this checkout's sessions:\n{}",
        items.len(),
        if items.len() == 1 { "y" } else { "ies" },
        list.join("\n")
    );
    if yes {
        eprintln!("{head}\n(--yes: going ahead with {verb})");
        return Ok(true);
    }
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        eprintln!("{head}");
        return Ok(super::sessions::confirm(&format!("Go ahead ({verb})?"))?);
    }
    eprintln!("{head}\nNot confirmed (no terminal to ask on); nothing was changed. Pass --yes to {verb} anyway.");
    Ok(false)
}

/// Splits `entries` into this checkout's own and the ones from bundles, printing how many of
/// those `what` (`--session`, "handoff without ids") leaves out.
fn own_entries<'f>(prov: &Provenance, entries: Vec<&'f crate::fold::Entry>, what: &str) -> Vec<&'f crate::fold::Entry> {
    let (own, skipped) = triage::origin::own_only(prov, entries);
    if !skipped.is_empty() {
        eprintln!("{}", triage::origin::skipped_line(skipped.len(), what));
    }
    own
}

/// Whether the ids (or the session) name nothing in this checkout's journal: they may be
/// another machine's (`walj sync`).
fn not_here(fold: &Fold, ids: &[String], session: Option<&str>) -> bool {
    match session {
        Some(s) => fold.find_session(s).is_err(),
        None => !ids.is_empty() && ids.iter().all(|i| fold.find(i).is_err()),
    }
}

pub fn mark(project: &Project, args: &MarkArgs) -> anyhow::Result<i32> {
    let (ids, session, force) = (&args.ids, args.session.as_deref(), args.force);
    let fold = load(project)?;
    let elsewhere = if not_here(&fold, ids, session) {
        // Another machine's entries: named by id and confirmed (the confirmation names it).
        if session.is_none() && !confirm_foreign(&crate::sync::triage::describe(project, ids), args.yes, "mark done")? {
            return Ok(super::EXIT_ERROR);
        }
        crate::sync::triage::mark_done(project, ids, session, force)?
    } else {
        None
    };
    let prov = Provenance::load(&project.journal);
    let outcomes = match (elsewhere, session) {
        (Some(o), _) => o,
        (None, Some(s)) if prov.any() => {
            let sess = fold.find_session(s).map_err(|e| triage::session_error(s, e))?;
            let entries: Vec<&crate::fold::Entry> =
                fold.entries_of(&sess.session).filter(|e| e.is_unresolved()).collect();
            let own: Vec<String> = own_entries(&prov, entries, "--session").iter().map(|e| e.id.clone()).collect();
            if own.is_empty() { Vec::new() } else { triage::mark_done(project, &fold, &own, force)? }
        }
        (None, Some(s)) => triage::mark_session_done(project, &fold, s, force)?,
        (None, None) => {
            if !confirm_foreign(&foreign(&fold, &prov, ids), args.yes, "mark done")? {
                return Ok(super::EXIT_ERROR);
            }
            triage::mark_done(project, &fold, ids, force)?
        }
    };
    if args.json {
        print_outcomes_json("mark", false, &outcomes, &fold.ids)?;
        return Ok(0);
    }
    if outcomes.is_empty() {
        println!("Nothing unresolved in that session; nothing marked.");
    }
    print_outcomes(&outcomes)?;
    Ok(0)
}

pub fn revert(project: &Project, args: &RevertArgs) -> anyhow::Result<i32> {
    let (force, dry_run) = (args.force, args.dry_run);
    let fold = load(project)?;
    let prov = Provenance::load(&project.journal);
    let ids: Vec<String> = match &args.session {
        Some(s) => {
            let own = own_entries(&prov, triage::turn_entries(&fold, s, args.prompt)?, "--session");
            if own.is_empty() {
                anyhow::bail!("nothing of this checkout's own to revert in that session; nothing was changed");
            }
            own.into_iter().map(|e| e.id.clone()).collect()
        }
        None => args.ids.clone(),
    };
    let confirmed_foreign = dry_run || confirm_foreign(&foreign(&fold, &prov, &ids), args.yes, "revert")?;
    if !confirmed_foreign {
        return Ok(super::EXIT_ERROR);
    }
    let outcomes = triage::revert(project, &fold, &ids, RevertOptions { force, dry_run, confirmed_foreign })?;
    if args.json {
        print_outcomes_json("revert", dry_run, &outcomes, &fold.ids)?;
        return Ok(exit_code(&outcomes));
    }
    if dry_run {
        println!("Dry run, nothing changed. Newest first:");
    }
    print_outcomes(&outcomes)?;
    if !dry_run && outcomes.iter().any(|o| o.changed) {
        println!("`walj undo` undoes this.");
    }
    Ok(exit_code(&outcomes))
}

/// 1 when another program wrote a file while the revert or undo ran (that file, and the
/// ones after it, were left as they were): the command did not do all it was asked.
fn exit_code(outcomes: &[Outcome]) -> i32 {
    if outcomes.iter().any(|o| o.concurrent) { super::EXIT_ERROR } else { 0 }
}

pub fn undo(project: &Project, id: Option<&str>, force: bool, json: bool, yes: bool) -> anyhow::Result<i32> {
    let fold = load(project)?;
    let prov = Provenance::load(&project.journal);
    // By id: the entry's last action may have been recorded elsewhere (an imported bundle).
    let mut confirmed = false;
    if let Some(i) = id
        && let Ok(e) = fold.find(i)
        && let Some(a) = e.last_action()
    {
        let o = prov.of_action(a);
        if !o.is_own() {
            let item = (
                fold.ids.short(&e.id).to_string(),
                e.path.clone(),
                format!("(its last action comes {})", o.from_what()),
            );
            if !confirm_foreign(&[item], yes, "undo")? {
                return Ok(super::EXIT_ERROR);
            }
            confirmed = true;
        }
    }
    let outcomes = triage::undo(project, &fold, id, force, confirmed)?;
    if json {
        print_outcomes_json("undo", false, &outcomes, &fold.ids)?;
        return Ok(exit_code(&outcomes));
    }
    print_outcomes(&outcomes)?;
    Ok(exit_code(&outcomes))
}

pub fn handoff(project: &Project, args: &HandoffArgs) -> anyhow::Result<i32> {
    let (ids, session, print_only, force) = (&args.ids, args.session.as_deref(), args.print, args.force);
    let fold = load(project)?;
    if args.held || args.deliver {
        return held_briefs(project, &fold, args);
    }
    let opts = HandoffOptions { print_only, force };
    let elsewhere = if not_here(&fold, ids, session) {
        if session.is_none()
            && !print_only
            && !confirm_foreign(&crate::sync::triage::describe(project, ids), args.yes, "hand back")?
        {
            return Ok(super::EXIT_ERROR);
        }
        crate::sync::triage::handoff(project, ids, session, opts)?
    } else {
        None
    };
    let brief = match elsewhere {
        Some(b) => b,
        None => {
            let prov = Provenance::load(&project.journal);
            if ids.is_empty() && prov.any() {
                // Every unresolved entry (of the session): this checkout's own only.
                let entries: Vec<&crate::fold::Entry> = match session {
                    Some(s) => {
                        let sess = fold.find_session(s).map_err(|e| triage::session_error(s, e))?;
                        fold.entries_of(&sess.session).filter(|e| e.is_unresolved()).collect()
                    }
                    None => fold.unresolved().collect(),
                };
                let what = if session.is_some() { "--session" } else { "handoff without ids" };
                let own: Vec<String> = own_entries(&prov, entries, what).iter().map(|e| e.id.clone()).collect();
                if own.is_empty() {
                    anyhow::bail!(
                        "nothing of this checkout's own is unresolved to hand back; name entries by id to hand back others"
                    );
                }
                triage::handoff(project, &fold, &own, None, opts)?
            } else {
                if !print_only && !confirm_foreign(&foreign(&fold, &prov, ids), args.yes, "hand back")? {
                    return Ok(super::EXIT_ERROR);
                }
                triage::handoff(project, &fold, ids, session, opts)?
            }
        }
    };
    if args.json {
        let v = serde_json::json!({
            "recorded": !print_only,
            "action": brief.action,
            "entries": brief.entries,
            "left_out": brief.left_out,
            "resume_line": brief.resume_line,
            "brief": brief.text,
        });
        writeln!(std::io::stdout().lock(), "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    let st = Style::stdout();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", crate::present::safe_block(&brief.text))?;
    writeln!(out)?;
    if print_only {
        writeln!(out, "{}", st.dim("(printed only; nothing recorded)"))?;
    } else {
        writeln!(
            out,
            "{}",
            st.bold(&format!(
                "Handed back {} entr{}: {} receives this brief at the next session start in this project (startup, resume or clear).",
                brief.entries.len(),
                if brief.entries.len() == 1 { "y" } else { "ies" },
                receiver(brief.agent)
            ))
        )?;
    }
    if !brief.left_out.is_empty() {
        writeln!(
            out,
            "{} entr{} did not fit in the brief and {} not handed back: {}",
            brief.left_out.len(),
            if brief.left_out.len() == 1 { "y" } else { "ies" },
            if brief.left_out.len() == 1 { "was" } else { "were" },
            crate::present::shown(&brief.left_out.iter().map(|i| fold.ids.short(i)).collect::<Vec<_>>().join(" "))
        )?;
    }
    if let Some(line) = &brief.resume_line {
        writeln!(out, "To continue that session: {}", crate::present::shown(line))?;
    }
    Ok(0)
}

/// Who reads a hand-back brief: the agent whose session started next in the project. Named as
/// the agent of the entries' sessions ("Claude" for Claude Code's, as before).
fn receiver(agent: Option<crate::agents::Agent>) -> &'static str {
    match agent {
        None | Some(crate::agents::Agent::ClaudeCode) => "Claude",
        Some(a) => a.label(),
    }
}

/// `walj handoff --held` / `--deliver`: the briefs imported bundles brought (issue 13 item 12).
fn held_briefs(project: &Project, fold: &Fold, args: &HandoffArgs) -> anyhow::Result<i32> {
    let list = if args.deliver { triage::deliver_held(project, fold, &args.ids)? } else { triage::held_briefs(fold) };
    if args.json {
        let v: Vec<_> = list
            .iter()
            .map(|h| {
                serde_json::json!({"action": h.action, "session": h.session, "entries": h.entries, "brief": h.brief})
            })
            .collect();
        let v = serde_json::json!({"delivered": args.deliver, "briefs": v});
        writeln!(std::io::stdout().lock(), "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    let st = Style::stdout();
    let mut out = std::io::stdout().lock();
    if list.is_empty() {
        writeln!(out, "No imported brief is waiting.")?;
        return Ok(0);
    }
    for h in &list {
        writeln!(
            out,
            "{}",
            st.bold(&format!(
                "Brief {} (session {}, imported):",
                crate::present::shown(crate::fold::abbrev(&h.action, 12)),
                crate::present::shown(fold.ids.session(&h.session))
            ))
        )?;
        writeln!(out, "{}", crate::present::safe_block(&h.brief))?;
        writeln!(out)?;
    }
    if args.deliver {
        writeln!(
            out,
            "{}",
            st.bold(&format!(
                "Released {}: Claude receives {} at the next session start in this project.",
                if list.len() == 1 { "1 brief".to_string() } else { format!("{} briefs", list.len()) },
                if list.len() == 1 { "it" } else { "them" }
            ))
        )?;
    } else {
        writeln!(out, "{}", st.dim("Held: `walj handoff --deliver ACTION` delivers one at the next session start."))?;
    }
    Ok(0)
}
