//! Verification: applied entries whose file matches are marked persisted (the proposal's
//! `persisted` flag); intents whose file still equals the pre-image were not applied.
//! Run by the Stop hook for its session and by `walj checkpoint` (layer 2 of the proposal).

use std::collections::HashMap;
use std::io;

use serde::Serialize;

use crate::fold::{CommandStatus, EntryState, Fold, FoldOptions, capture_cap, disk_blob, link_blob};
use crate::journal::build::{self, BashIntent};
use crate::journal::{JournalWriter, Record, event, key, op};
use crate::project::Project;

#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct CheckpointReport {
    pub checked: usize,
    pub persisted: usize,
    pub not_applied: usize,
    /// Post-images found on disk for entries whose turn never reached its Stop: recorded
    /// ("on disk, verified"), never settled (DESIGN §4).
    pub verified: usize,
    pub drifted: Vec<String>,
    pub unreadable: Vec<String>,
}

/// What a checkpoint run does besides verifying applied entries.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CheckpointOptions<'a> {
    /// Settle file intents without an outcome as not applied: only when no tool call of the
    /// session can still run (the main agent's Stop, the session's next prompt).
    pub settle_intents: bool,
    /// Settle Bash commands without an outcome as not run (denied): the main agent's Stop.
    pub settle_commands: bool,
    /// Append an `audit` record with the counts (`walj checkpoint`).
    pub audit: bool,
    /// Only entries and commands recorded at or after this time (one turn: the session's
    /// next prompt verifies the turn an Esc or an API error ended, nothing older).
    pub since: Option<&'a str>,
}

/// `by` of the records a checkpoint writes.
const BY_CHECKPOINT: &str = "checkpoint";

/// Verifies the unresolved entries of `session` (or all) against the disk and appends
/// `persisted` / `resolved(not_applied)` records.
pub(crate) fn checkpoint(
    project: &Project,
    session: Option<&str>,
    opts: CheckpointOptions,
) -> io::Result<CheckpointReport> {
    let CheckpointOptions { settle_intents, settle_commands, audit, since } = opts;
    // The default fold starts from the fold snapshot and reads only the lines after it, so a
    // Stop costs about the same on a long journal as on a short one (issue 14 item 3); this
    // session's entries are picked out below. It knows every session's later writes, so a
    // path another session changed since is matched here, without a second read.
    let fold = Fold::load(&project.journal, &FoldOptions::default())?;
    let mut report = CheckpointReport::default();
    let mut records = Vec::new();
    let later = Later::new(&fold);
    // A turn finished when its session's Stop came after the entry: only then is a verified
    // entry persisted. The Stop hook verifies its own turn, so this holds for it too.
    let stops: HashMap<&str, u64> = fold.sessions.iter().map(|s| (s.session.as_str(), s.last_stop_line)).collect();
    let turn_finished = |e: &crate::fold::Entry| !audit || stops.get(e.session.as_str()).is_some_and(|&l| l > e.line);
    // Files over the capture cap are compared by sampled identity, as the hook recorded them.
    let mut cap = None;
    for e in &fold.entries {
        if let Some(s) = session
            && !e.session.starts_with(s)
        {
            continue;
        }
        if since.is_some_and(|t| e.ts.as_str() < t) {
            continue;
        }
        let base = e.base;
        if !matches!(base, EntryState::Applied | EntryState::InFlight | EntryState::Drifted) || e.v1 {
            continue;
        }
        if base == EntryState::InFlight && (!settle_intents || e.unfinished) {
            continue;
        }
        // Resolved by the user (done, reverted, handed back): never verified, never drifted.
        if e.last_action().is_some() {
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
                records.push(rec.with(key::UNVERIFIED, true));
                report.persisted += 1;
            }
            continue;
        }
        // A link's image is its own target (read, never followed), wherever it points.
        let disk = if e.is_link() {
            link_blob(project, &e.path)
        } else {
            let Ok(abs) = project.resolve_rel(&e.path) else { continue };
            disk_blob(&abs, *cap.get_or_insert_with(|| capture_cap(project)))
        };
        let Some(disk) = disk else {
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
                    records.push(build::not_applied(r, BY_CHECKPOINT));
                    report.not_applied += 1;
                }
            }
            _ => {
                let matches_after = e.after.as_ref().map(|b| b.id()) == Some(disk.as_deref());
                if (matches_after || later.holds(&e.path, e.line, disk.as_deref())) && !turn_finished(e) {
                    // The disk holds it, but its turn never finished: a crash stays a crash.
                    if e.verified.is_none() {
                        let mut v = Record::new(op::VERIFIED, &e.session);
                        v.id = e.id.clone();
                        v.path = e.path.clone();
                        v.event = e.event.clone();
                        v.tool = Some(e.tool.clone());
                        v.after = e.after.clone();
                        records.push(v.with(key::BY, BY_CHECKPOINT));
                    }
                    report.verified += 1;
                } else if matches_after || later.holds(&e.path, e.line, disk.as_deref()) {
                    rec.persisted = true;
                    rec.after = e.after.clone();
                    records.push(rec);
                    report.persisted += 1;
                } else {
                    // Nothing this fold knows (every session's writes, the settled images of
                    // each path) holds what the disk has.
                    report.drifted.push(e.path.clone());
                }
            }
        }
    }
    if settle_commands {
        // Commands are not entries, but the same holds: at the main agent's Stop no Bash call
        // runs, so one without an outcome since the session (re)started never ran (denied).
        // Background commands got their PostToolUse when they were started.
        for s in &fold.sessions {
            if session.is_some_and(|want| !s.session.starts_with(want)) {
                continue;
            }
            let since = s.last_start_ts.as_deref().unwrap_or("").max(since.unwrap_or(""));
            for c in &s.commands {
                if c.status != CommandStatus::InFlight || c.background || c.ts.as_str() < since {
                    continue;
                }
                // It ran and changed files before it was cut off (killed, interrupted): not denied.
                if fold.entries.iter().any(|e| e.unfinished && e.parent.as_deref() == Some(c.id.as_str())) {
                    continue;
                }
                let mut r = Record::new(op::RESOLVED, &s.session);
                r.id = c.id.clone();
                records.push(build::not_applied(BashIntent::tag(r), BY_CHECKPOINT));
            }
        }
    }
    if audit {
        let mut a = Record::new(op::AUDIT, session.unwrap_or(""));
        a.event = event::CHECKPOINT.into();
        a.persisted = report.drifted.is_empty();
        let a = a
            .with(key::CHECKED, report.checked)
            .with(key::PERSISTED_NOW, report.persisted)
            .with(key::NOT_APPLIED, report.not_applied)
            .with(key::VERIFIED, report.verified)
            .with(key::DRIFTED, report.drifted.clone());
        records.push(a);
    }
    if !records.is_empty() {
        project.ensure_dir()?;
        JournalWriter::new(&project.journal).append_all(&records)?;
    }
    Ok(report)
}

/// What each path held after each journal line, as far as a fold knows: its entries' pre- and
/// post-images, what triage actions wrote, and the latest entry it dropped as settled.
struct Later<'f> {
    fold: &'f Fold,
    by_path: HashMap<&'f str, Vec<(u64, Option<&'f str>)>>,
}

impl<'f> Later<'f> {
    fn new(fold: &'f Fold) -> Later<'f> {
        let mut by_path: HashMap<&str, Vec<(u64, Option<&str>)>> = HashMap::new();
        for e in &fold.entries {
            let v = by_path.entry(e.path.as_str()).or_default();
            for b in [&e.before, &e.after].into_iter().flatten() {
                v.push((e.line, b.id()));
            }
            // Bytes a triage action wrote (a merge-revert keeps later changes) come after every entry.
            for w in e.actions.iter().filter(|a| !a.undone).filter_map(|a| a.wrote.as_ref()) {
                v.push((u64::MAX, w.id()));
            }
        }
        Later { fold, by_path }
    }

    /// True when `disk` (a blob id, `None` = absent) is an image `path` had after line `line`.
    fn holds(&self, path: &str, line: u64, disk: Option<&str>) -> bool {
        self.by_path.get(path).is_some_and(|v| v.iter().any(|&(l, id)| l > line && id == disk))
            || self.fold.settled_after(path, line, disk)
    }
}
