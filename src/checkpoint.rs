//! Verification: applied entries whose file matches are marked persisted (the proposal's
//! `persisted` flag); intents whose file still equals the pre-image were not applied.
//! Run by the Stop hook for its session and by `walj checkpoint` (layer 2 of the proposal).

use std::collections::HashMap;
use std::io;

use serde::Serialize;

use crate::fold::{CommandStatus, EntryState, Fold, FoldOptions, disk_blob};
use crate::journal::{JournalWriter, Record, how, op};
use crate::project::Project;

#[derive(Debug, Default, Clone, Serialize)]
pub struct CheckpointReport {
    pub checked: usize,
    pub persisted: usize,
    pub not_applied: usize,
    pub drifted: Vec<String>,
    pub unreadable: Vec<String>,
}

/// Verifies the unresolved entries of `session` (or all) against the disk and appends
/// `persisted` / `resolved(not_applied)` records. `settle_intents` is false while other
/// tool calls of the session may still run (SubagentStop).
pub fn checkpoint(
    project: &Project,
    session: Option<&str>,
    settle_intents: bool,
    audit: bool,
) -> io::Result<CheckpointReport> {
    let fold =
        Fold::load(&project.journal, &FoldOptions { session: session.map(str::to_string), ..Default::default() })?;
    let mut report = CheckpointReport::default();
    let mut records = Vec::new();
    // Images of later entries per path: the disk may legitimately hold a later change.
    let mut later: HashMap<&str, Vec<(u64, Option<String>)>> = HashMap::new();
    for e in &fold.entries {
        for b in [&e.before, &e.after].into_iter().flatten() {
            later.entry(e.path.as_str()).or_default().push((e.line, b.id().map(str::to_string)));
        }
        // Bytes a triage action wrote (a merge-revert keeps later changes) come after every entry.
        for a in e.actions.iter().filter(|a| !a.undone) {
            if let Some(w) = &a.wrote {
                later.entry(e.path.as_str()).or_default().push((u64::MAX, w.id().map(str::to_string)));
            }
        }
    }
    for e in &fold.entries {
        if let Some(s) = session
            && !e.session.starts_with(s)
        {
            continue;
        }
        let base = e.base;
        if !matches!(base, EntryState::Applied | EntryState::InFlight | EntryState::Drifted) || e.v1 {
            continue;
        }
        if base == EntryState::InFlight && !settle_intents {
            continue;
        }
        report.checked += 1;
        let mut rec = Record::new(op::PERSISTED, &e.session);
        rec.id = e.id.clone();
        rec.path = e.path.clone();
        rec.event = e.event.clone();
        rec.tool = Some(e.tool.clone());
        if e.outside {
            // Outside the project nothing is captured or verified; settle applied ones.
            if base == EntryState::Applied {
                rec.persisted = true;
                records.push(rec.with("unverified", true));
                report.persisted += 1;
            }
            continue;
        }
        let Ok(abs) = project.resolve_rel(&e.path) else { continue };
        let Some(disk) = disk_blob(&abs) else {
            report.unreadable.push(e.path.clone());
            continue;
        };
        match base {
            EntryState::InFlight => {
                if e.before.as_ref().map(|b| b.id().map(str::to_string)) == Some(disk) {
                    let mut r = Record::new(op::RESOLVED, &e.session);
                    r.id = e.id.clone();
                    r.path = e.path.clone();
                    r.event = e.event.clone();
                    r.tool = Some(e.tool.clone());
                    r.how = Some(how::NOT_APPLIED.to_string());
                    records.push(r.with("by", "checkpoint"));
                    report.not_applied += 1;
                }
            }
            _ => {
                let matches_after = e.after.as_ref().map(|b| b.id().map(str::to_string)) == Some(disk.clone());
                let matches_later = later
                    .get(e.path.as_str())
                    .is_some_and(|v| v.iter().any(|(line, id)| *line > e.line && *id == disk));
                if matches_after || matches_later {
                    rec.persisted = true;
                    rec.after = e.after.clone();
                    records.push(rec);
                    report.persisted += 1;
                } else {
                    report.drifted.push(e.path.clone());
                }
            }
        }
    }
    if settle_intents {
        // Commands are not entries, but the same holds: at the main agent's Stop no Bash call
        // runs, so one without an outcome since the session (re)started never ran (denied).
        // Background commands got their PostToolUse when they were started.
        for s in &fold.sessions {
            if session.is_some_and(|want| !s.session.starts_with(want)) {
                continue;
            }
            let since = s.last_start_ts.as_deref().unwrap_or("");
            for c in &s.commands {
                if c.status != CommandStatus::InFlight || c.background || c.ts.as_str() < since {
                    continue;
                }
                let mut r = Record::new(op::RESOLVED, &s.session);
                r.id = c.id.clone();
                r.event = crate::config::event::COMMAND_RUN.to_string();
                r.tool = Some("Bash".to_string());
                r.how = Some(how::NOT_APPLIED.to_string());
                records.push(r.with("by", "checkpoint"));
            }
        }
    }
    if audit {
        let mut a = Record::new(op::AUDIT, session.unwrap_or(""));
        a.event = "checkpoint".into();
        a.persisted = report.drifted.is_empty();
        let a = a
            .with("checked", report.checked)
            .with("persisted_now", report.persisted)
            .with("not_applied", report.not_applied)
            .with("drifted", report.drifted.clone());
        records.push(a);
    }
    if !records.is_empty() {
        project.ensure_dir()?;
        JournalWriter::new(&project.journal).append_all(&records)?;
    }
    Ok(report)
}
