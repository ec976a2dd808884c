//! `walj undo`: undo the last triage command, or the last action on one entry.
//!
//! Undo is itself a record (`op: undo`, `target` = the action), never a deletion. A
//! revert is undone by writing back the bytes it overwrote, after checking the disk
//! still holds what the revert wrote (else refused without `force`); the bytes on disk
//! are stored first and the undo record names them. A mark or a hand-back is undone by
//! the record alone, which reopens the entry (a brief already delivered to a session
//! cannot be taken back; the entries are reopened all the same).

use crate::fold::{Action, Entry, Fold, Handoff, short_id};
use crate::journal::{Blob, Record, how, op};
use crate::project::Project;

use super::Outcome;
use super::common::{
    Batch, Disk, Objects, Overlay, append, batch_of, check_live, check_writable, entry_record, find_entry, problems,
    read_disk, when, write_or_delete,
};

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
    fn ts(&self) -> &'a str {
        match self {
            Target::Action(_, a) => &a.ts,
            Target::Handoff(h) => &h.ts,
        }
    }
}

/// A revert's undo, worked out.
struct Restore {
    abs: std::path::PathBuf,
    /// What the disk holds before the undo.
    disk: Disk,
    /// What the undo writes (`None` = delete).
    bytes: Option<Vec<u8>>,
}

/// Undoes the last triage command — every action it recorded, newest first — or, with
/// `id`, the last action on that entry. Every action is checked first; a problem fails
/// the call with nothing changed. `force` writes over a file changed since the revert
/// (its bytes are stored first) and acts on entries of live sessions.
pub fn undo(project: &Project, fold: &Fold, id: Option<&str>, force: bool) -> anyhow::Result<Vec<Outcome>> {
    let targets = match id {
        Some(prefix) => {
            let e = find_entry(fold, prefix)?;
            let Some(a) = e.last_action() else {
                anyhow::bail!(
                    "{} ({}) has no triage action to undo (it is {}). Nothing was changed.",
                    short_id(&e.id),
                    e.path,
                    e.state()
                );
            };
            vec![Target::Action(e, a)]
        }
        None => last_command(fold)?,
    };
    let mut objects = Objects::new(project);
    let mut overlay = Overlay::default();
    let mut errors = Vec::new();
    let mut plans: Vec<Option<Restore>> = Vec::new();
    for t in &targets {
        let Target::Action(e, a) = t else {
            plans.push(None);
            continue;
        };
        if a.how != how::REVERTED || a.overwrote.is_none() {
            plans.push(None);
            continue;
        }
        if let Err(why) = check_live(fold, e, force) {
            errors.push(why);
            plans.push(None);
            continue;
        }
        match plan_restore(project, e, a, &mut objects, &overlay, force) {
            Ok(r) => {
                overlay.set(&r.abs, Disk::from_option(r.bytes.clone()));
                plans.push(Some(r));
            }
            Err(why) => {
                errors.push(format!("{} ({}): cannot undo the revert: {why}", short_id(&e.id), e.path));
                plans.push(None);
            }
        }
    }
    if !errors.is_empty() {
        anyhow::bail!(problems(&errors));
    }
    let mut batch = Batch::new();
    let mut out = Vec::new();
    for (t, plan) in targets.iter().zip(plans) {
        match t {
            Target::Handoff(h) => {
                let mut r = Record::new(op::UNDO, &h.session);
                r.id = h.action.clone();
                r.target = Some(h.action.clone());
                r.event = "handoff".to_string();
                append(project, &[batch.stamp(r)])?;
                let message = match &h.delivered {
                    Some(ts) => format!(
                        "the brief for Claude was already delivered at {}; it cannot be taken back from that session",
                        when(ts)
                    ),
                    None => "withdrew the brief for Claude (not delivered yet)".to_string(),
                };
                out.push(Outcome { id: h.action.clone(), path: String::new(), message, changed: true });
            }
            Target::Action(e, a) => {
                let mut r = entry_record(op::UNDO, e);
                r.target = Some(a.action.clone());
                let what = match a.how.as_str() {
                    how::DONE => "mark done",
                    how::REVERTED => "revert",
                    how::HANDED_BACK => "hand-back",
                    other => other,
                };
                let message = match plan {
                    None => {
                        append(project, &[batch.stamp(r)])?;
                        format!("reopened {} ({}): undid the {what} of {}", short_id(&e.id), e.path, when(&a.ts))
                    }
                    Some(p) => {
                        project.resolve_rel(&e.path).map_err(|why| anyhow::anyhow!(why))?;
                        let now = read_disk(&p.abs, &e.path).map_err(|why| anyhow::anyhow!(why))?;
                        if now != p.disk {
                            anyhow::bail!(
                                "{} changed while undoing; nothing written to it. Run the undo again.",
                                e.path
                            );
                        }
                        r.before = Some(match &now {
                            Disk::Absent => Blob::Absent,
                            Disk::File(b) => Blob::Id(objects.put(b)?),
                        });
                        r.after = a.overwrote.clone();
                        write_or_delete(&p.abs, &e.path, p.bytes.as_deref())?;
                        append(project, &[batch.stamp(r)])?;
                        let how_restored = if p.bytes.is_some() { "restored" } else { "deleted again" };
                        format!(
                            "{how_restored} {} (undid the revert of {}); reopened {}",
                            e.path,
                            when(&a.ts),
                            short_id(&e.id)
                        )
                    }
                };
                out.push(Outcome { id: e.id.clone(), path: e.path.clone(), message, changed: true });
            }
        }
    }
    Ok(out)
}

/// Every action of the last recorded triage command (same batch), newest first.
fn last_command(fold: &Fold) -> anyhow::Result<Vec<Target<'_>>> {
    let mut all: Vec<Target> = Vec::new();
    for e in &fold.entries {
        for a in e.actions.iter().filter(|a| !a.undone) {
            all.push(Target::Action(e, a));
        }
    }
    for h in fold.handoffs.iter().filter(|h| !h.undone) {
        all.push(Target::Handoff(h));
    }
    let key = |t: &Target| (t.ts().to_string(), batch_of(t.record()).1);
    let Some(last) = all.iter().max_by_key(|t| key(t)) else {
        anyhow::bail!("nothing to undo: no triage action is recorded (or every one was undone already)");
    };
    let mut picked: Vec<Target> = match batch_of(last.record()).0.map(str::to_string) {
        Some(b) => all.into_iter().filter(|t| batch_of(t.record()).0 == Some(b.as_str())).collect(),
        None => {
            let k = key(last);
            all.into_iter().filter(|t| key(t) == k).take(1).collect()
        }
    };
    picked.sort_by_key(|t| std::cmp::Reverse(batch_of(t.record()).1));
    Ok(picked)
}

fn plan_restore(
    project: &Project,
    e: &Entry,
    a: &Action,
    objects: &mut Objects,
    overlay: &Overlay,
    force: bool,
) -> Result<Restore, String> {
    let abs = project.resolve_rel(&e.path)?;
    let disk = overlay.read(&abs, &e.path)?;
    if let Some(wrote) = &a.wrote
        && disk.blob() != *wrote
        && !force
    {
        return Err(format!(
            "{} changed since the revert of {}; pass --force to overwrite it (its current bytes are kept in the store)",
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
                    &id[..id.len().min(10)]
                ));
            }
        },
    };
    check_writable(&abs, &e.path, &disk)?;
    Ok(Restore { abs, disk, bytes })
}
