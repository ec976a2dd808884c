//! `walj undo`: undo the last triage command, or the last action on one entry.
//!
//! Undo is itself a record (`op: undo`, `target` = the action), never a deletion. A
//! revert is undone by writing back the bytes it overwrote, after checking the disk
//! still holds what the revert wrote (else refused without `force`); the bytes on disk
//! are stored first and the undo record names them. A mark or a hand-back is undone by
//! the record alone, which reopens the entry (a brief already delivered to a session
//! cannot be taken back; the entries are reopened all the same).

use crate::fold::{Action, Entry, Fold, Handoff};
use crate::journal::{Blob, Record, how, op};
use crate::project::Project;

use super::{Result, TriageError};

use super::Outcome;
use super::action::{
    Batch, Disk, Objects, Overlay, append, batch_of, capture_record, check_live, check_writable, entry_record,
    find_entry, problems, read_disk, stage_write, when,
};
use super::origin::Provenance;
use super::place;
use crate::project::WriteScope;

enum Target<'a> {
    Action(&'a Entry, &'a Action),
    Handoff(&'a Handoff),
}

impl<'a> Target<'a> {
    fn record(&self) -> &'a Record {
        match self {
            Target::Action(_, a) => &a.record,
            Target::Handoff(h) => &h.record,
        }
    }
    fn line(&self) -> u64 {
        match self {
            Target::Action(_, a) => a.line,
            Target::Handoff(h) => h.line,
        }
    }
}

/// A revert's undo, worked out.
struct Restore {
    abs: std::path::PathBuf,
    /// A `.git` file only for an own entry and action, with `--force`.
    scope: WriteScope,
    /// What the disk holds before the undo.
    disk: Disk,
    /// What the undo writes (`None` = delete).
    bytes: Option<Vec<u8>>,
    /// The permissions the file had when the revert overwrote it (for a file the revert
    /// deleted; a file still there keeps its own).
    mode: Option<u32>,
    /// The disk already holds what the undo writes (an undo or an in-place bisect killed
    /// after the write, before its record; a revert recorded ahead whose write never
    /// happened): nothing is written, the undo is recorded.
    already: bool,
}

/// Undoes the last triage command — every action it recorded, newest first — or, with
/// `id`, the last action on that entry. Every action is checked first; a problem fails
/// the call with nothing changed. `force` writes over a file changed since the revert
/// (its bytes are stored first) and acts on entries of live sessions.
///
/// Only this checkout's own actions are undone without an id (a bundle's records may end the
/// journal); an action recorded elsewhere (inside an import range, [`super::origin`]) is
/// undone only by its entry's id with `confirmed_foreign` (the caller asked, naming where it
/// comes from).
pub(crate) fn undo(
    project: &Project,
    fold: &Fold,
    id: Option<&str>,
    force: bool,
    confirmed_foreign: bool,
) -> Result<Vec<Outcome>> {
    let mut objects = Objects::new(project);
    let (targets, plans) = prepare(project, fold, id, force, confirmed_foreign, &mut objects)?;
    write_all(project, fold, &targets, plans, objects)
}

/// What [`undo`] with the same arguments would do, checked the same way (a refusal is the
/// same error), with nothing written: one outcome per action, `changed` false.
pub(crate) fn plan_undo(
    project: &Project,
    fold: &Fold,
    id: Option<&str>,
    force: bool,
    confirmed_foreign: bool,
) -> Result<Vec<Outcome>> {
    let mut objects = Objects::new(project);
    let (targets, plans) = prepare(project, fold, id, force, confirmed_foreign, &mut objects)?;
    Ok(targets
        .iter()
        .zip(&plans)
        .map(|(t, plan)| match t {
            Target::Handoff(h) => Outcome {
                id: h.action.clone(),
                message: match &h.delivered {
                    Some(ts) => format!(
                        "would record the brief's undo; it was delivered at {} and cannot be taken back from that session",
                        when(ts)
                    ),
                    None => "would withdraw the brief for Claude (not delivered yet)".to_string(),
                },
                ..Outcome::default()
            },
            Target::Action(e, a) => {
                let what = action_noun(&a.how);
                let message = match plan {
                    Some(p) if p.bytes.is_some() => format!(
                        "would restore {} (undo the revert of {}) and reopen {}",
                        e.path,
                        when(&a.ts),
                        fold.ids.short(&e.id)
                    ),
                    Some(_) => format!(
                        "would delete {} again (undo the revert of {}) and reopen {}",
                        e.path,
                        when(&a.ts),
                        fold.ids.short(&e.id)
                    ),
                    None => {
                        format!("would reopen {} ({}): undo the {what} of {}", fold.ids.short(&e.id), e.path, when(&a.ts))
                    }
                };
                Outcome::of(e, message, false)
            }
        })
        .collect())
}

/// "mark done", "revert", "hand-back": an action named in undo's messages.
fn action_noun(h: &str) -> &str {
    match h {
        how::DONE => "mark done",
        how::REVERTED => "revert",
        how::HANDED_BACK => "hand-back",
        other => other,
    }
}

type Prepared<'f> = (Vec<Target<'f>>, Vec<Option<Restore>>);

/// The actions an undo takes back and every revert's restore, all checked.
fn prepare<'f>(
    project: &Project,
    fold: &'f Fold,
    id: Option<&str>,
    force: bool,
    confirmed_foreign: bool,
    objects: &mut Objects,
) -> Result<Prepared<'f>> {
    let prov = Provenance::load(&project.journal);
    let targets = targets(fold, id, &prov)?;
    if !confirmed_foreign {
        let foreign: Vec<String> = targets
            .iter()
            .filter_map(|t| match t {
                Target::Action(e, a) if !prov.of_action(a).is_own() => Some(format!(
                    "{} ({}): its last action was recorded {}, not here; undo it only by its id and confirmed (on a terminal walj asks; elsewhere pass --yes)",
                    fold.ids.short(&e.id),
                    e.path,
                    prov.of_action(a).from_what()
                )),
                _ => None,
            })
            .collect();
        if !foreign.is_empty() {
            return Err(TriageError::Refused(problems(&foreign)));
        }
    }
    let plans = plan_all(project, fold, &targets, force, objects, &prov)?;
    Ok((targets, plans))
}

/// Records, stages and writes what [`prepare`] worked out.
fn write_all(
    project: &Project,
    fold: &Fold,
    targets: &[Target],
    plans: Vec<Option<Restore>>,
    objects: Objects,
) -> Result<Vec<Outcome>> {
    let mut batch = Batch::new();
    // As in a revert: every byte this call overwrites goes into the store and is named
    // in the journal, for every action, and every write is staged, before anything on
    // disk changes.
    let mut records = Vec::new();
    let mut ahead = Vec::new();
    for (t, plan) in targets.iter().zip(&plans) {
        let rec = match t {
            Target::Handoff(h) => {
                let mut r = Record::new(op::UNDO, &h.session);
                r.id = h.action.clone();
                r.target = Some(h.action.clone());
                r.event = crate::journal::event::HANDOFF.to_string();
                batch.stamp(r)
            }
            Target::Action(e, a) => {
                let mut r = entry_record(op::UNDO, e);
                r.target = Some(a.action.clone());
                let mut r = batch.stamp(r);
                if let Some(p) = plan {
                    let before = match &p.disk {
                        Disk::Absent => Blob::Absent,
                        Disk::File(b) => Blob::Id(
                            objects
                                .put(b)
                                .map_err(|err| TriageError::Failed(format!("{err:#}\nNothing was changed.")))?,
                        ),
                    };
                    // Nothing written when the disk already holds it: the record says so.
                    let after = if p.already { before.clone() } else { a.overwrote.clone().unwrap_or(Blob::Absent) };
                    ahead.push(capture_record(e, "undo", r.action.as_deref(), &before, &after));
                    r.before = Some(before);
                    r.after = Some(after);
                }
                r
            }
        };
        records.push(rec);
    }
    append(project, &ahead).map_err(|err| TriageError::Failed(format!("{err:#}\nNothing was changed.")))?;
    let mut staged = Vec::new();
    for (t, plan) in targets.iter().zip(&plans) {
        staged.push(match (t, plan) {
            (Target::Action(e, _), Some(Restore { scope, bytes: Some(b), mode, already: false, .. })) => Some(
                stage_write(project, *scope, &e.path, b, *mode, mode.map(|m| m & 0o100 != 0))
                    .map_err(|err| TriageError::Failed(format!("{err:#}\nNothing was changed.")))?,
            ),
            _ => None,
        });
    }
    let mut out = Vec::new();
    // A file another program writes while this runs stops the call there, as in a revert.
    let mut stopped: Option<String> = None;
    for (((t, plan), r), staged) in targets.iter().zip(plans).zip(records).zip(staged) {
        if let Some(at) = &stopped {
            let (id, path) = match t {
                Target::Action(e, _) => (e.id.clone(), e.path.clone()),
                Target::Handoff(h) => (h.action.clone(), String::new()),
            };
            out.push(Outcome {
                id,
                path,
                message: format!(
                    "not undone: the undo stopped at {at}, which another program wrote at the same time; run the undo again"
                ),
                ..Outcome::default()
            });
            continue;
        }
        let o = apply(project, &objects, fold, t, plan, r, staged)?;
        if o.concurrent && !o.changed {
            stopped = Some(o.path.clone());
        }
        out.push(o);
    }
    Ok(out)
}

/// What `undo` acts on: the last command, or the last action on the entry `id` names.
fn targets<'f>(fold: &'f Fold, id: Option<&str>, prov: &Provenance) -> Result<Vec<Target<'f>>> {
    Ok(match id {
        Some(prefix) if matches!(fold.find(prefix), Err(crate::fold::IdError::Unknown(_))) => {
            match operation_batch(fold, prefix) {
                Some(b) => command(fold, b),
                None => {
                    find_entry(fold, prefix)?;
                    Vec::new()
                }
            }
        }
        Some(prefix) => {
            let e = find_entry(fold, prefix)?;
            let Some(a) = e.last_action() else {
                return Err(TriageError::Refused(format!(
                    "{} ({}) has no triage action to undo (it is {}). Nothing was changed.",
                    fold.ids.short(&e.id),
                    e.path,
                    e.state()
                )));
            };
            // A hand-back whose brief is still waiting: the brief names other entries too
            // and cannot be edited, so the whole hand-back is undone (brief withdrawn,
            // every entry of it reopened) rather than leave it to be delivered.
            match pending_brief_batch(fold, a) {
                Some(b) => command(fold, b),
                None => vec![Target::Action(e, a)],
            }
        }
        None => last_command(fold, prov)?,
    })
}

/// Works out every revert's undo (the others need no plan), checking them all; the first
/// problems fail the call with nothing changed.
fn plan_all(
    project: &Project,
    fold: &Fold,
    targets: &[Target],
    force: bool,
    objects: &mut Objects,
    prov: &Provenance,
) -> Result<Vec<Option<Restore>>> {
    let mut overlay = Overlay::default();
    let mut errors = Vec::new();
    let mut conflicts: Vec<Outcome> = Vec::new();
    let mut plans: Vec<Option<Restore>> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let Target::Action(e, a) = t else {
            plans.push(None);
            continue;
        };
        // What the path holds before the writes this undo makes after this one: a disk
        // holding one of them was never written by this action's revert (it was cut off).
        let later: Vec<&Blob> = targets[i + 1..]
            .iter()
            .filter_map(|t| match t {
                Target::Action(o, b) if o.path == e.path && b.how == how::REVERTED => b.overwrote.as_ref(),
                _ => None,
            })
            .collect();
        if a.how != how::REVERTED || a.overwrote.is_none() {
            plans.push(None);
            continue;
        }
        if let Err(why) = check_live(fold, e, force) {
            errors.push(why);
            plans.push(None);
            continue;
        }
        if e.is_link() {
            // Re-pointed, not written: checked here, carried out by `link::undo`.
            if let Err(why) = super::link::plan_undo(project, e, a, force) {
                errors.push(format!("{} ({}): cannot undo the revert: {why}", fold.ids.short(&e.id), e.path));
            }
            plans.push(None);
            continue;
        }
        let own = prov.of_entry(e).is_own() && prov.of_action(a).is_own();
        match plan_restore(project, e, a, objects, &overlay, force, own, &later) {
            Ok(r) => {
                let after = if r.already { r.disk.clone() } else { Disk::from_option(r.bytes.clone()) };
                overlay.set(&r.abs, after);
                plans.push(Some(r));
            }
            Err(why) => {
                let line = format!("{} ({}): cannot undo the revert: {why}", fold.ids.short(&e.id), e.path);
                // The file changed since the revert wrote it: a conflict between the undo and
                // what came later (an outcome under `--json`).
                if why.contains(CHANGED_SINCE) {
                    conflicts
                        .push(Outcome { conflict: Some(vec![why.clone()]), ..Outcome::of(e, line.clone(), false) });
                }
                errors.push(line);
                plans.push(None);
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(TriageError::Conflict { message: problems(&errors), outcomes: conflicts });
    }
    if !errors.is_empty() {
        return Err(TriageError::Refused(problems(&errors)));
    }
    Ok(plans)
}

/// Carries out one checked, recorded and staged undo: writes the file back (after checking
/// the disk did not change since the plan), then appends its record.
fn apply(
    project: &Project,
    objects: &Objects,
    fold: &Fold,
    t: &Target,
    plan: Option<Restore>,
    r: Record,
    staged: Option<crate::fsutil::Staged>,
) -> Result<Outcome> {
    match t {
        Target::Handoff(h) => {
            append(project, &[r])?;
            let message = match &h.delivered {
                Some(ts) => format!(
                    "the brief for Claude was already delivered at {}; it cannot be taken back from that session",
                    when(ts)
                ),
                None => "withdrew the brief for Claude (not delivered yet)".to_string(),
            };
            Ok(Outcome { id: h.action.clone(), path: String::new(), message, changed: true, ..Outcome::default() })
        }
        Target::Action(e, a) => {
            let what = action_noun(&a.how);
            if plan.is_none() && e.is_link() && a.how == how::REVERTED && a.overwrote.is_some() {
                // Checked (without force) by `plan_all` just before; the write checks the
                // link is still what it saw.
                return super::link::undo(project, fold, e, a, r, true);
            }
            let message = match plan {
                None => {
                    append(project, &[r])?;
                    format!("reopened {} ({}): undid the {what} of {}", fold.ids.short(&e.id), e.path, when(&a.ts))
                }
                Some(p) => {
                    let outcome = |message: String, changed: bool| Outcome::of(e, message, changed);
                    match p.scope {
                        WriteScope::Project => project.resolve_rel(&e.path),
                        WriteScope::GitForced => project.resolve_recorded(&e.path),
                    }
                    .map_err(|why| TriageError::Failed(why.to_string()))?;
                    let now = read_disk(&p.abs, &e.path).map_err(|why| TriageError::Failed(why.to_string()))?;
                    if now != p.disk {
                        return Ok(Outcome {
                            concurrent: true,
                            ..outcome(
                                format!(
                                    "{} changed while undoing (another program wrote it after walj looked at it); nothing written to it. Run the undo again",
                                    e.path
                                ),
                                false,
                            )
                        });
                    }
                    if p.already {
                        append(project, &[r])?;
                        return Ok(outcome(
                            format!(
                                "{} already holds the bytes the revert of {} overwrote (nothing written); reopened {}",
                                e.path,
                                when(&a.ts),
                                fold.ids.short(&e.id)
                            ),
                            true,
                        ));
                    }
                    let placed = match (staged, &p.bytes) {
                        (Some(s), Some(b)) => place::put_write(objects, s, &e.path, &p.disk, b, "undoing")?,
                        (None, None) => place::put_delete(project, objects, p.scope, &e.path, &p.disk, "undoing")?,
                        _ => return Err(TriageError::Failed(format!("{}: nothing staged to write", e.path))),
                    };
                    place::record_kept(project, e, "undo", r.action.as_deref(), &placed.kept)?;
                    if !placed.written {
                        let note = placed.note.unwrap_or_default();
                        return Ok(Outcome { concurrent: true, kept: placed.kept, ..outcome(note, false) });
                    }
                    let mut r = r;
                    if let Some(id) = placed.overwrote {
                        r.before = Some(Blob::Id(id));
                    }
                    append(project, &[r])?;
                    let how_restored = if p.bytes.is_some() { "restored" } else { "deleted again" };
                    let message = format!(
                        "{how_restored} {} (undid the revert of {}); reopened {}",
                        e.path,
                        when(&a.ts),
                        fold.ids.short(&e.id)
                    );
                    return Ok(match placed.note {
                        Some(note) => Outcome {
                            concurrent: !placed.kept.is_empty(),
                            kept: placed.kept,
                            ..outcome(format!("{message}; {note}"), true)
                        },
                        None => outcome(message, true),
                    });
                }
            };
            Ok(Outcome { id: e.id.clone(), path: e.path.clone(), message, changed: true, ..Outcome::default() })
        }
    }
}

/// The batch of the actions not undone yet whose batch id starts with `prefix` (an operation id
/// of `walj ops`), when exactly one does.
fn operation_batch<'f>(fold: &'f Fold, prefix: &str) -> Option<&'f str> {
    let mut batches: Vec<&str> =
        not_undone(fold).iter().filter_map(|t| batch_of(t.record()).0).filter(|b| b.starts_with(prefix)).collect();
    batches.sort_unstable();
    batches.dedup();
    match batches.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// Every action not undone yet (of every origin).
fn not_undone(fold: &Fold) -> Vec<Target<'_>> {
    let mut all: Vec<Target> = Vec::new();
    for e in &fold.entries {
        for a in e.actions.iter().filter(|a| !a.undone) {
            all.push(Target::Action(e, a));
        }
    }
    for h in fold.handoffs.iter().filter(|h| !h.undone) {
        all.push(Target::Handoff(h));
    }
    all
}

/// The batch of hand-back `a` when its brief has not been delivered (nor withdrawn) yet.
fn pending_brief_batch<'f>(fold: &'f Fold, a: &'f Action) -> Option<&'f str> {
    if a.how != how::HANDED_BACK {
        return None;
    }
    let b = batch_of(&a.record).0?;
    fold.pending_handoffs().find(|h| batch_of(&h.record).0 == Some(b)).map(|_| b)
}

/// Every action of the command recorded as batch `b` not undone yet, newest first.
fn command<'f>(fold: &'f Fold, b: &str) -> Vec<Target<'f>> {
    let mut picked: Vec<Target> = not_undone(fold).into_iter().filter(|t| batch_of(t.record()).0 == Some(b)).collect();
    picked.sort_by_key(|t| std::cmp::Reverse(batch_of(t.record()).1));
    picked
}

/// Every action of the last recorded triage command (same batch), newest first. "Last" is
/// journal order, not the records' clock time (a clock set back must not pick an older one).
/// Only this checkout's own actions count: an imported bundle's records may be the last lines.
fn last_command<'f>(fold: &'f Fold, prov: &Provenance) -> Result<Vec<Target<'f>>> {
    let (all, foreign): (Vec<Target>, Vec<Target>) =
        not_undone(fold).into_iter().partition(|t| prov.of_line(t.line()).is_own());
    let Some(last) = all.iter().max_by_key(|t| t.line()) else {
        let elsewhere = match foreign.len() {
            0 => String::new(),
            n => format!(
                "; {n} action{} recorded in imported bundles {} undone only by an entry's id (`walj undo ID`, confirmed)",
                if n == 1 { "" } else { "s" },
                if n == 1 { "is" } else { "are" }
            ),
        };
        return Err(TriageError::Refused(format!(
            "nothing to undo: no triage action of this checkout's own is recorded (or every one was undone already){elsewhere}"
        )));
    };
    let mut picked: Vec<Target> = match batch_of(last.record()).0.map(str::to_string) {
        Some(b) => all.into_iter().filter(|t| batch_of(t.record()).0 == Some(b.as_str())).collect(),
        None => {
            let line = last.line();
            all.into_iter().filter(|t| t.line() == line).collect()
        }
    };
    picked.sort_by_key(|t| std::cmp::Reverse(batch_of(t.record()).1));
    Ok(picked)
}

/// What [`plan_restore`] says of a file changed since the revert wrote it (a conflict).
const CHANGED_SINCE: &str = "changed since the revert of";

#[allow(clippy::too_many_arguments)]
fn plan_restore(
    project: &Project,
    e: &Entry,
    a: &Action,
    objects: &mut Objects,
    overlay: &Overlay,
    force: bool,
    own: bool,
    later: &[&Blob],
) -> Result<Restore, String> {
    let scope = if project.is_git_path(&e.path) {
        if !own {
            return Err(format!(
                "{} is inside git's own folder and was not changed here: walj never writes there",
                e.path
            ));
        }
        if !force {
            return Err(format!(
                "{} is inside git's own folder (git reads it as repository state; a config can make git run commands); pass --force to write it",
                e.path
            ));
        }
        WriteScope::GitForced
    } else {
        WriteScope::Project
    };
    let abs = match scope {
        WriteScope::Project => project.resolve_rel(&e.path),
        WriteScope::GitForced => project.resolve_recorded(&e.path),
    }
    .map_err(|why| why.to_string())?;
    let disk = overlay.read(&abs, &e.path)?;
    let now = disk.blob();
    let already = (a.overwrote.as_ref() == Some(&now) || later.contains(&&now)) && a.wrote.as_ref() != Some(&now);
    if let Some(wrote) = &a.wrote
        && disk.blob() != *wrote
        && !already
        && !force
    {
        return Err(format!(
            "{} {CHANGED_SINCE} {}; pass --force to overwrite it (its current bytes are kept in the store)",
            e.path,
            when(&a.ts)
        ));
    }
    let bytes = match &a.overwrote {
        None | Some(Blob::Absent) => None,
        Some(Blob::Id(id)) => match objects.get(id)? {
            Some(b) => Some(b),
            None => {
                return Err(format!(
                    "the bytes the revert overwrote ({}) are missing from the store",
                    crate::fold::abbrev(id, 10)
                ));
            }
        },
    };
    check_writable(&abs, &e.path, &disk)?;
    let mode =
        a.record.extra.get(crate::journal::key::MODE).and_then(serde_json::Value::as_u64).map(|m| m as u32 & 0o7777);
    Ok(Restore { abs, scope, disk, bytes, mode, already })
}
