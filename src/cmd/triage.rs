//! diff, mark, revert, undo, handoff: thin wrappers printing what `crate::triage` returns.

use std::io::Write;

use crate::fold::{Fold, FoldOptions, short_id};
use crate::project::Project;
use crate::style::Style;
use crate::triage::{self, DiffMode, HandoffOptions, Outcome, RevertOptions};

/// Every entry, settled ones included: triage acts on any entry by id.
fn load(project: &Project) -> anyhow::Result<Fold> {
    super::recover::load(project, &FoldOptions { keep_settled: true, ..Default::default() })
}

fn print_outcomes(outcomes: &[Outcome]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for o in outcomes {
        writeln!(out, "{}", o.message)?;
    }
    Ok(())
}

pub fn diff(project: &Project, id: &str, mode: DiffMode, context: usize) -> anyhow::Result<i32> {
    let fold = load(project)?;
    let e = triage::find_entry(&fold, id)?;
    let st = Style::stdout();
    let sides = triage::diff_sides(project, e, mode)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{}",
        st.dim(&format!("entry {} · {} · {} {} · {}", short_id(&e.id), e.path, e.tool, e.event, e.state()))
    )?;
    write!(out, "{}", triage::unified(&sides, &e.path, context, st.color))?;
    Ok(0)
}

pub fn mark(project: &Project, ids: &[String], session: Option<&str>, force: bool) -> anyhow::Result<i32> {
    let fold = load(project)?;
    let outcomes = match session {
        Some(s) => triage::mark_session_done(project, &fold, s, force)?,
        None => triage::mark_done(project, &fold, ids, force)?,
    };
    if outcomes.is_empty() {
        println!("Nothing unresolved in that session; nothing marked.");
    }
    print_outcomes(&outcomes)?;
    Ok(0)
}

pub fn revert(project: &Project, ids: &[String], force: bool, dry_run: bool) -> anyhow::Result<i32> {
    let fold = load(project)?;
    let outcomes = triage::revert(project, &fold, ids, RevertOptions { force, dry_run })?;
    if dry_run {
        println!("Dry run, nothing changed. Newest first:");
    }
    print_outcomes(&outcomes)?;
    if !dry_run && outcomes.iter().any(|o| o.changed) {
        println!("`walj undo` undoes this.");
    }
    Ok(0)
}

pub fn undo(project: &Project, id: Option<&str>, force: bool) -> anyhow::Result<i32> {
    let fold = load(project)?;
    let outcomes = triage::undo(project, &fold, id, force)?;
    print_outcomes(&outcomes)?;
    Ok(0)
}

pub fn handoff(
    project: &Project,
    ids: &[String],
    session: Option<&str>,
    print_only: bool,
    force: bool,
) -> anyhow::Result<i32> {
    let fold = load(project)?;
    let brief = triage::handoff(project, &fold, ids, session, HandoffOptions { print_only, force })?;
    let st = Style::stdout();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", brief.text)?;
    writeln!(out)?;
    if print_only {
        writeln!(out, "{}", st.dim("(printed only; nothing recorded)"))?;
    } else {
        writeln!(
            out,
            "{}",
            st.bold(&format!(
                "Handed back {} entr{}: Claude receives this brief at the next session start in this project (startup, resume or clear).",
                brief.entries.len(),
                if brief.entries.len() == 1 { "y" } else { "ies" }
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
            brief.left_out.iter().map(|i| short_id(i)).collect::<Vec<_>>().join(" ")
        )?;
    }
    if let Some(line) = &brief.resume_line {
        writeln!(out, "To continue that session: {line}")?;
    }
    Ok(0)
}
