//! `walj revert`: bring a path back to an entry's pre-image.
//!
//! - The disk equals the entry's post-image (nothing happened since): write the
//!   pre-image back, or delete the file when it did not exist before.
//! - The file changed since (a later entry, an outside edit): a three-way merge (git2
//!   `merge_file`: ancestor = post-image, ours = disk, theirs = pre-image) takes the
//!   entry's change out and keeps the later ones, like `git revert`. A conflict is
//!   refused, naming the conflicting lines, unless forced (then the pre-image is written).
//! - An entry without a post-image (in flight, failed): the next entry's pre-image on the
//!   same path stands in for it, else the disk itself.
//!
//! The bytes on disk go into the store before any overwrite or delete, and the
//! `resolved` record names them (`before`) and what was written (`after`), so
//! `walj undo` can put them back. Writes are atomic and keep the file's permissions.

use std::path::PathBuf;

use crate::fold::{Entry, EntryState, Fold};
use crate::fsutil;
use crate::journal::{Blob, Record, how, op};
use crate::project::Project;
use std::collections::HashMap;

use super::{Result, TriageError};

use super::Outcome;
use super::action::{
    Batch, Disk, Folders, Image, Objects, Overlay, already_resolved, append, capture_record, check_live,
    check_writable, entry_record, find_entries, problems, read_disk, stage_write_in,
};
use super::origin::{Origin, Provenance};
use super::place;
use crate::present::diff::is_binary;
use crate::project::WriteScope;

/// What reverting an entry would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertPlan {
    /// Nothing to write (the file already equals the pre-image, or the tool never ran).
    Nothing { why: String },
    /// The disk equals the post-image: write the pre-image back.
    WritePre,
    /// The disk equals the post-image and the file did not exist before: delete it.
    DeleteFile,
    /// The file changed since: this clean three-way merge takes the entry's change out.
    Merge { merged: Vec<u8> },
    /// The file changed since and the change cannot be taken out alone: the conflicting
    /// regions, human readable. `--force` writes the pre-image (or deletes) instead.
    Conflict { lines: Vec<String> },
    /// Cannot be reverted (already resolved, no pre-image, outside the project, a
    /// folder or read-only now…): why, and what to do.
    Refused { why: String },
}

impl RevertPlan {
    /// One line for people: what reverting does to `path` (the TUI's dialog title).
    #[cfg_attr(not(test), allow(dead_code))] // only the unit tests call it
    pub(crate) fn summary(&self, path: &str) -> String {
        match self {
            RevertPlan::Nothing { why } => format!("nothing to write: {why}"),
            RevertPlan::WritePre => format!("write the pre-image back to {path}"),
            RevertPlan::DeleteFile => format!("delete {path} (it did not exist before)"),
            RevertPlan::Merge { .. } => {
                format!("take the entry's change out of {path} (three-way merge, later changes kept)")
            }
            RevertPlan::Conflict { lines } => {
                // Region headings are the lines not indented.
                let n = lines.iter().filter(|l| !l.starts_with(' ')).count();
                format!(
                    "{path} changed since, and the change cannot be taken out alone ({n} conflicting region{}); force writes the pre-image over it",
                    if n == 1 { "" } else { "s" }
                )
            }
            RevertPlan::Refused { why } => format!("cannot revert: {why}"),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RevertOptions {
    /// Write the pre-image over a conflicting merge; act on entries of live sessions; write
    /// a file under `.git/` that this checkout's own session changed.
    pub force: bool,
    /// Say what would happen, change nothing.
    pub dry_run: bool,
    /// The user confirmed acting on the entries from elsewhere (imported bundles) that the
    /// ids name: the caller asked, naming each one's origin ([`super::foreign_entries`]).
    /// Without it such entries are refused.
    pub confirmed_foreign: bool,
    /// Append every `resolved` record before the first write (each naming the bytes it
    /// overwrites and writes), not each after its write: an in-place bisect's state, so that
    /// a kill at any moment leaves one batch that `walj undo` takes back whole (a file not
    /// written yet already holds what its undo writes, and is left as it is).
    pub ahead: bool,
    /// An in-place bisect's run id: stamped on every record ([`crate::journal::key::BISECT`]).
    pub bisect: Option<u64>,
}

/// What reverting `entry` would do now, against the disk as it is (the TUI's
/// confirmation dialog). Liveness is not checked here (`revert` does, `force` skips it).
/// Give a fold loaded with `keep_settled` so later entries on the same path are known.
pub fn plan_revert(project: &Project, fold: &Fold, entry: &Entry) -> Result<RevertPlan> {
    let mut objects = Objects::new(project);
    let origin = Provenance::load(&project.journal).of_entry(entry);
    Ok(work_out(fold, entry, None, &mut objects, &Overlay::default(), project, &origin, false).plan)
}

/// A revert worked out against the disk (or what earlier reverts of the batch left).
struct Worked<'e> {
    entry: &'e Entry,
    plan: RevertPlan,
    abs: Option<PathBuf>,
    /// The file before this revert.
    disk: Disk,
    pre: Image,
    /// A `Nothing` worth recording as reverted (the file already is as before).
    record_nothing: bool,
    /// Where the write may go: a `.git` file only for an own session's entry with `--force`.
    scope: WriteScope,
    /// What a `.git` file is, said when it is reverted (`--force`).
    git_note: Option<String>,
    /// The executable bit the write gives the file: the entry's recorded pre-image mode, when
    /// the write brings the pre-image back or the entry changed the bit (`None`: the file keeps
    /// its permissions).
    exec: Option<bool>,
}

impl Worked<'_> {
    /// What this revert writes: `Some(Some(bytes))`, `Some(None)` = delete, `None` = nothing.
    fn target(&self, force: bool) -> Option<Option<Vec<u8>>> {
        match &self.plan {
            RevertPlan::WritePre => self.pre.clone().into_option().map(Some),
            RevertPlan::DeleteFile => Some(None),
            RevertPlan::Merge { merged } => Some(Some(merged.clone())),
            RevertPlan::Conflict { .. } if force => match &self.pre {
                Image::Absent => Some(None),
                Image::Bytes(b) => Some(Some(b.clone())),
                Image::Unknown(_) => None,
            },
            _ => None,
        }
    }

    fn describe(&self, force: bool, dry_run: bool) -> String {
        let p = &self.entry.path;
        // (would …, did …, what follows the path)
        let (would, did, tail) = match &self.plan {
            RevertPlan::Nothing { why } => {
                return if dry_run && self.record_nothing {
                    format!("nothing to write: {why}; it would be recorded as reverted")
                } else if self.record_nothing {
                    format!("nothing to write: {why}; recorded as reverted")
                } else {
                    format!("nothing to do: {why}")
                };
            }
            RevertPlan::WritePre => ("write the pre-image back to", "wrote the pre-image back to", ""),
            RevertPlan::DeleteFile => ("delete", "deleted", " (it did not exist before)"),
            RevertPlan::Merge { .. } => (
                "take the entry's change out of",
                "took the entry's change out of",
                " (three-way merge; later changes kept)",
            ),
            RevertPlan::Conflict { .. } if force && matches!(self.pre, Image::Absent) => {
                ("delete", "deleted", " over conflicting later changes (--force)")
            }
            RevertPlan::Conflict { .. } if force => {
                ("write the pre-image to", "wrote the pre-image to", " over conflicting later changes (--force)")
            }
            RevertPlan::Conflict { .. } => ("refuse to revert", "refused to revert", " (conflict)"),
            RevertPlan::Refused { why } => return format!("refused: {why}"),
        };
        if dry_run { format!("would {would} {p}{tail}") } else { format!("{did} {p}{tail}") }
    }
}

/// `last`: the newest entry of a chain on the path that this revert takes back with `e` (the
/// oldest, [`chains`]): its post-image is checked against the disk, `e`'s pre-image written.
#[allow(clippy::too_many_arguments)]
fn work_out<'e>(
    fold: &Fold,
    e: &'e Entry,
    last: Option<&Entry>,
    objects: &mut Objects,
    overlay: &Overlay,
    project: &Project,
    origin: &Origin,
    force: bool,
) -> Worked<'e> {
    let mut w = Worked {
        entry: e,
        plan: RevertPlan::Refused { why: String::new() },
        abs: None,
        disk: Disk::Absent,
        pre: Image::Unknown(String::new()),
        record_nothing: false,
        scope: WriteScope::Project,
        git_note: None,
        exec: None,
    };
    let refuse = |mut w: Worked<'e>, why: String| {
        w.plan = RevertPlan::Refused { why };
        w
    };
    if let Some(why) = already_resolved(fold, e) {
        return refuse(w, why);
    }
    if e.state() == EntryState::NotApplied {
        w.plan = RevertPlan::Nothing { why: format!("the tool never changed {} (not applied)", e.path) };
        return w;
    }
    if e.outside {
        return refuse(
            w,
            format!("{} is outside the project: walj captured nothing there and writes nothing there", e.path),
        );
    }
    if e.v1 {
        return refuse(w, format!("{} was recorded by a v1 journal line, which has no pre-image", e.path));
    }
    if e.nocap.as_deref() == Some("directory") && e.before == Some(Blob::Absent) {
        // The hook records a folder's pre-image as absent (`nocap: directory`).
        return refuse(w, format!("{} was a folder before the tool ran; walj restores files, not folders", e.path));
    }
    if project.is_git_path(&e.path) {
        let what = git_file_note(&e.path);
        if !origin.is_own() {
            return refuse(
                w,
                format!(
                    "{} is inside git's own folder ({what}) and this entry comes {}: walj never writes there for an entry made elsewhere",
                    e.path,
                    origin.from_what()
                ),
            );
        }
        if !force {
            return refuse(
                w,
                format!(
                    "{} is inside git's own folder: {what}. Pass --force to write it back if this session's change there is what you want undone",
                    e.path
                ),
            );
        }
        w.scope = WriteScope::GitForced;
        w.git_note = Some(format!("{} is {what}", e.path));
    }
    let resolved = match w.scope {
        WriteScope::Project => project.resolve_rel(&e.path),
        WriteScope::GitForced => project.resolve_recorded(&e.path),
    };
    let abs = match resolved {
        Ok(a) => a,
        Err(why) => return refuse(w, why.to_string()),
    };
    let disk = match overlay.read(&abs, &e.path) {
        Ok(d) => d,
        Err(why) => return refuse(w, why),
    };
    let pre = objects.image(&e.before, e.nocap.as_deref(), "pre-image", Some(&disk));
    if let Image::Unknown(why) = &pre {
        return refuse(w, format!("{why}, so {} cannot be brought back", e.path));
    }
    w.abs = Some(abs.clone());
    w.disk = disk.clone();
    w.pre = pre.clone();
    // The recorded mode (`mode_before`): a write of the pre-image gives its executable bit back.
    let exec_before = e.exec_before().filter(|_| !matches!(pre, Image::Absent));
    let exec_now =
        matches!(disk, Disk::File(_)).then(|| crate::fsutil::file_mode(&abs).map(|m| m & 0o100 != 0)).flatten();
    w.exec = exec_before;
    if pre.same_as(&disk) {
        if let (Some(want), Some(now)) = (exec_before, exec_now)
            && want != now
        {
            // The bytes are the pre-image's, the mode is not (`chmod +x`): the bytes are
            // written back with the mode.
            if let Err(why) = check_writable(&abs, &e.path, &disk) {
                return refuse(w, why);
            }
            w.plan = RevertPlan::WritePre;
            return w;
        }
        w.plan = RevertPlan::Nothing { why: format!("{} already equals the pre-image", e.path) };
        w.record_nothing = true;
        return w;
    }
    if let Err(why) = check_writable(&abs, &e.path, &disk) {
        return refuse(w, why);
    }
    let src = last.unwrap_or(e);
    // A post-image over the capture cap is known by its sampled identity only: the disk is
    // checked against it as bisect checks, without the bytes.
    if let Some(Blob::Id(id)) = &src.after
        && crate::sampled::is_sampled(id)
        && overlay.untouched(&abs)
        && crate::sampled::identity_of(&abs).is_ok_and(|now| &now == id)
    {
        w.plan = if matches!(pre, Image::Absent) { RevertPlan::DeleteFile } else { RevertPlan::WritePre };
        return w;
    }
    let post = if src.after.is_some() {
        objects.image(&src.after, src.nocap.as_deref(), "post-image", Some(&disk))
    } else {
        // No post-image: what the next entry on the path saw before it ran, else the disk.
        let next =
            fold.entries.iter().find(|n| n.line > src.line && n.path == e.path && !n.outside && n.before.is_some());
        match next {
            Some(n) => objects.image(&n.before, n.nocap.as_deref(), "post-image", Some(&disk)),
            None => match &disk {
                Disk::Absent => Image::Absent,
                Disk::File(b) => Image::Bytes(b.clone()),
            },
        }
    };
    if post.same_as(&disk) {
        w.plan = if matches!(pre, Image::Absent) { RevertPlan::DeleteFile } else { RevertPlan::WritePre };
        return w;
    }
    let p = &e.path;
    let conflict = |line: String| RevertPlan::Conflict { lines: vec![line] };
    w.plan = match (&post, disk.bytes(), &pre) {
        (Image::Unknown(why), _, _) => {
            conflict(format!("{p} changed since the entry and {why}, so the entry's change cannot be taken out alone"))
        }
        (Image::Absent, _, _) => conflict(format!("{p} was deleted by this entry and created again since")),
        (Image::Bytes(_), None, _) => conflict(format!("{p} was deleted since this entry")),
        (Image::Bytes(_), Some(_), Image::Absent) => conflict(format!(
            "{p} was created by this entry and changed since; reverting deletes it with the later changes"
        )),
        (Image::Bytes(post), Some(cur), Image::Bytes(pre)) => {
            if is_binary(post) || is_binary(cur) || is_binary(pre) {
                conflict(format!("{p} is binary and changed since this entry; walj cannot merge binary files"))
            } else {
                match merge3(post, cur, pre) {
                    Ok((true, merged)) if merged == cur && (w.exec.is_none() || w.exec == exec_now) => {
                        w.record_nothing = true;
                        RevertPlan::Nothing { why: format!("the entry's change is no longer in {p}") }
                    }
                    Ok((true, merged)) => {
                        if e.exec_before() == e.exec_after() {
                            // The entry did not change the bit: the file keeps the one it has now.
                            w.exec = None;
                        }
                        RevertPlan::Merge { merged }
                    }
                    Ok((false, merged)) => RevertPlan::Conflict { lines: conflict_regions(&merged, cur, p) },
                    Err(err) => conflict(format!("merging {p} failed: {}", err.message())),
                }
            }
        }
        (Image::Bytes(_), Some(_), Image::Unknown(why)) => RevertPlan::Refused { why: why.clone() },
    };
    w
}

/// Three-way merge (ancestor = post-image, ours = disk, theirs = pre-image):
/// (clean, result).
fn merge3(post: &[u8], disk: &[u8], pre: &[u8]) -> Result<(bool, Vec<u8>), git2::Error> {
    // `git2::merge_file` does not initialize libgit2 itself (its allocator is unset until
    // then and the merge fails without a message); `Buf::new` runs git2's one-time init.
    drop(git2::Buf::new());
    let mut ancestor = git2::MergeFileInput::new();
    ancestor.content(post);
    let mut ours = git2::MergeFileInput::new();
    ours.content(disk);
    let mut theirs = git2::MergeFileInput::new();
    theirs.content(pre);
    let mut opts = git2::MergeFileOptions::new();
    opts.ancestor_label("post-image").our_label("now").their_label("pre-image");
    let r = git2::merge_file(&ancestor, &ours, &theirs, Some(&mut opts))?;
    Ok((r.is_automergeable(), r.content().to_vec()))
}

/// Most lines of one side shown per conflict region.
const REGION_LINES: usize = 6;

/// The conflicting regions of a merge result, as lines for people: where in the file
/// (line numbers of the file on disk now), what it has there now, what the pre-image has.
pub(crate) fn conflict_regions(merged: &[u8], disk: &[u8], path: &str) -> Vec<String> {
    let merged = String::from_utf8_lossy(merged);
    let disk_text = String::from_utf8_lossy(disk);
    let disk_lines: Vec<&str> = disk_text.lines().collect();
    enum In {
        Out,
        Ours,
        Theirs,
    }
    let mut state = In::Out;
    let mut out = Vec::new();
    // Lines of the file on disk seen so far (outside regions and in "ours" parts).
    let mut approx = 0usize;
    let (mut ours, mut theirs): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    let mut start = 0usize;
    for line in merged.lines() {
        match state {
            In::Out if line.starts_with("<<<<<<< ") || line == "<<<<<<<" => {
                state = In::Ours;
                start = approx;
                ours.clear();
                theirs.clear();
            }
            In::Out => approx += 1,
            In::Ours if line.starts_with("=======") && line.trim_end() == "=======" => state = In::Theirs,
            In::Ours => {
                ours.push(line);
                approx += 1;
            }
            In::Theirs if line.starts_with(">>>>>>> ") || line == ">>>>>>>" => {
                state = In::Out;
                let at = locate(&disk_lines, &ours, start);
                let range = match ours.len() {
                    0 => format!("after line {at}"),
                    1 => format!("line {}", at + 1),
                    n => format!("lines {}-{}", at + 1, at + n),
                };
                out.push(format!("{path} {range}: the file now has:"));
                push_lines(&mut out, &ours);
                out.push("  where the pre-image has:".to_string());
                push_lines(&mut out, &theirs);
            }
            In::Theirs => theirs.push(line),
        }
    }
    if out.is_empty() {
        out.push(format!("{path}: the merge reported a conflict without markers"));
    }
    out
}

fn push_lines(out: &mut Vec<String>, lines: &[&str]) {
    if lines.is_empty() {
        out.push("    (nothing)".to_string());
    }
    for l in lines.iter().take(REGION_LINES) {
        out.push(format!("    | {l}"));
    }
    if lines.len() > REGION_LINES {
        out.push(format!("    | … {} more lines", lines.len() - REGION_LINES));
    }
}

/// Where the block `ours` starts in the disk's lines (0-based), nearest to `approx`.
fn locate(disk: &[&str], ours: &[&str], approx: usize) -> usize {
    if ours.is_empty() || ours.len() > disk.len() {
        return approx.min(disk.len());
    }
    (0..=disk.len() - ours.len())
        .filter(|&i| disk[i..i + ours.len()] == *ours)
        .min_by_key(|&i| i.abs_diff(approx))
        .unwrap_or(approx.min(disk.len()))
}

/// Reverts entries, newest first (later changes are taken out before earlier ones).
/// Every entry is worked out first (against the disk as the earlier reverts of this call
/// leave it); any refusal, conflict (without `force`) or live session (without `force`)
/// fails the call with every reason and nothing changed. `dry_run` returns what would
/// happen.
pub(crate) fn revert(project: &Project, fold: &Fold, ids: &[String], opts: RevertOptions) -> Result<Vec<Outcome>> {
    let entries = find_entries(fold, ids)?;
    let (links, files): (Vec<&Entry>, Vec<&Entry>) = entries.into_iter().partition(|e| e.is_link());
    // A kind this walj does not know (a newer walj's): shown, never written.
    let unknown: Vec<String> = files
        .iter()
        .filter(|e| !e.kind_known())
        .map(|e| {
            format!(
                "{} ({}) is a {:?} entry, a kind this walj does not know how to write back; a newer walj can revert it",
                fold.ids.short(&e.id),
                e.path,
                e.kind.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !unknown.is_empty() {
        return Err(TriageError::Refused(problems(&unknown)));
    }
    let mut batch = Batch::new();
    if links.is_empty() {
        return revert_files(project, fold, ids, opts, &mut batch);
    }
    let prov = Provenance::load(&project.journal);
    let mut errors = Vec::new();
    for e in &links {
        let head = format!("{} ({})", fold.ids.short(&e.id), e.path);
        if !prov.of_entry(e).is_own() && !opts.confirmed_foreign && !opts.dry_run {
            errors.push(format!("{head} comes {}: walj reverts it only when asked by its id and confirmed (on a terminal walj asks; elsewhere pass --yes)", prov.of_entry(e).from_what()));
        } else if e.uncertain && !opts.force && !opts.dry_run {
            errors.push(format!(
                "{head}: this change may not be from its command (another session or the user was active while it ran); look at `walj diff {}` and pass --force to revert it anyway",
                fold.ids.short(&e.id)
            ));
        }
    }
    if !errors.is_empty() {
        return Err(TriageError::Refused(problems(&errors)));
    }
    // Every link is checked before any file is written, and the files before any link.
    super::link::revert(project, fold, &links, opts.force, true, &mut Batch::new())?;
    let file_ids: Vec<String> = files.iter().map(|e| e.id.clone()).collect();
    let mut out =
        if file_ids.is_empty() { Vec::new() } else { revert_files(project, fold, &file_ids, opts, &mut batch)? };
    out.extend(super::link::revert(project, fold, &links, opts.force, opts.dry_run, &mut batch)?);
    Ok(out)
}

/// [`revert`] of file entries, as part of `batch`.
fn revert_files(
    project: &Project,
    fold: &Fold,
    ids: &[String],
    opts: RevertOptions,
    batch: &mut Batch,
) -> Result<Vec<Outcome>> {
    let mut objects = Objects::new(project);
    let steps = work_out_all(project, fold, ids, &opts, &mut objects)?;
    let mut out = Vec::new();
    if opts.dry_run {
        // The folders each step removes (left empty) or makes, as the revert will.
        let mut plan = super::FolderPlan::default();
        for w in &steps {
            let mut message = w.describe(opts.force, true);
            let said = match w.target(opts.force) {
                Some(None) => {
                    super::folders::said("remove", "it leaves empty", &plan.delete(project, w.scope, &w.entry.path))
                }
                Some(Some(_)) => super::folders::said("make", "it needs", &plan.write(project, &w.entry.path)),
                None => None,
            };
            if let Some(said) = said {
                message = format!("{message}, and {said}");
            }
            out.push(Outcome { id: w.entry.id.clone(), path: w.entry.path.clone(), message, ..Outcome::default() });
        }
        return Ok(out);
    }
    // Everything this call overwrites or writes goes into the store first, for every id,
    // before anything is written: a capture failing (disk full) changes nothing.
    let mut plans = Vec::new();
    for w in &steps {
        let target = w.target(opts.force);
        let mut r = entry_record(op::RESOLVED, w.entry);
        r.how = Some(how::REVERTED.to_string());
        let mut r = batch.stamp(r);
        if let Some(run) = opts.bisect {
            r = r.with(crate::journal::key::BISECT, format!("{run:016x}"));
        }
        let blobs = match (&target, &w.abs) {
            (Some(bytes), Some(_)) => {
                let put = |b: &[u8]| {
                    objects.put(b).map_err(|err| TriageError::Failed(format!("{err:#}\nNothing was changed.")))
                };
                let before = match &w.disk {
                    Disk::Absent => Blob::Absent,
                    Disk::File(b) => Blob::Id(put(b)?),
                };
                let after = match bytes {
                    None => Blob::Absent,
                    Some(b) => Blob::Id(put(b)?),
                };
                Some((before, after))
            }
            _ => None,
        };
        plans.push((target, r, blobs));
    }
    // Then the journal names them (write-ahead): a crash between a write and its
    // `resolved` record leaves the overwritten bytes named all the same.
    let ahead: Vec<Record> = steps
        .iter()
        .zip(&plans)
        .filter_map(|(w, (_, r, blobs))| {
            blobs.as_ref().map(|(before, after)| capture_record(w.entry, "revert", r.action.as_deref(), before, after))
        })
        .collect();
    append(project, &ahead).map_err(|err| TriageError::Failed(format!("{err:#}\nNothing was changed.")))?;
    if opts.ahead {
        // Every `resolved` record now, as it will read once written (see `RevertOptions::ahead`).
        for (w, (target, r, blobs)) in steps.iter().zip(plans.iter_mut()) {
            if let (Some(_), Some(abs), Some((before, after))) = (&*target, &w.abs, &*blobs) {
                if let Disk::File(_) = w.disk
                    && let Some(mode) = fsutil::file_mode(abs)
                {
                    *r = r.clone().with(crate::journal::key::MODE, mode);
                }
                r.before = Some(before.clone());
                r.after = Some(after.clone());
            }
        }
        let records: Vec<Record> = steps
            .iter()
            .zip(&plans)
            .filter(|(w, (target, _, blobs))| match target {
                None => w.record_nothing,
                Some(_) => blobs.is_some() && w.abs.is_some(),
            })
            .map(|(_, (_, r, _))| r.clone())
            .collect();
        append(project, &records).map_err(|err| TriageError::Failed(format!("{err:#}\nNothing was changed.")))?;
    }
    // Then every write is staged (temp file written and synced): a write failing (disk
    // full) still changes nothing.
    let mut staged = Vec::new();
    let mut folders = Folders::default();
    for (w, (target, _, _)) in steps.iter().zip(&plans) {
        staged.push(match (target, &w.abs) {
            (Some(Some(bytes)), Some(_)) => Some(
                stage_write_in(&mut folders, project, w.scope, &w.entry.path, bytes, None, w.exec)
                    .map_err(|err| TriageError::Failed(format!("{err:#}\nNothing was changed.")))?,
            ),
            _ => None,
        });
    }
    // A file another program writes while this runs stops the call there (the later steps
    // were worked out against what this one would have left).
    let mut stopped: Option<String> = None;
    for ((w, plan), staged) in steps.iter().zip(plans).zip(staged) {
        if let Some(at) = &stopped {
            out.push(Outcome {
                id: w.entry.id.clone(),
                path: w.entry.path.clone(),
                message: format!(
                    "not reverted: the revert stopped at {at}, which another program wrote at the same time; run the revert again"
                ),
                ..Outcome::default()
            });
            continue;
        }
        let outcome = write_one(project, &objects, w, &opts, plan, staged, &out)?;
        if outcome.concurrent && !outcome.changed {
            stopped = Some(outcome.path.clone());
        }
        out.push(outcome);
    }
    Ok(out)
}

/// Works out every entry's revert, newest first, against the disk as the earlier ones leave
/// it; every refusal, conflict (without `force`) or live session fails with nothing changed.
fn work_out_all<'f>(
    project: &Project,
    fold: &'f Fold,
    ids: &[String],
    opts: &RevertOptions,
    objects: &mut Objects,
) -> Result<Vec<Worked<'f>>> {
    let mut entries = find_entries(fold, ids)?;
    entries.sort_by_key(|e| std::cmp::Reverse(e.line));
    let (oldest_of, newest_of) = chains(fold, &entries, objects);
    // The steps of a chain's later entries, put right after its oldest entry's step (the one
    // that writes): they are recorded as reverted only once that write is done.
    let mut followers: HashMap<&str, Vec<Worked<'f>>> = HashMap::new();
    let prov = Provenance::load(&project.journal);
    let mut overlay = Overlay::default();
    let mut steps = Vec::new();
    let mut errors = Vec::new();
    // One per entry, for a refusal with a conflict (`TriageError::Conflict`).
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut conflicted = false;
    for e in entries {
        let before = errors.len();
        let origin = prov.of_entry(e);
        if !origin.is_own() && !opts.confirmed_foreign && !opts.dry_run {
            errors.push(format!(
                "{} ({}) comes {}: walj reverts it only when asked by its id and confirmed (on a terminal walj asks; elsewhere pass --yes)",
                fold.ids.short(&e.id),
                e.path,
                origin.from_what()
            ));
            outcomes.push(Outcome::of(e, errors[before].clone(), false));
            continue;
        }
        if let Err(why) = check_live(fold, e, opts.force) {
            outcomes.push(Outcome::of(e, why.clone(), false));
            errors.push(why);
            continue;
        }
        if e.uncertain && !opts.force && !opts.dry_run {
            let why = match (e.after_stop, &e.end_seen) {
                (true, None) => "this change was made after Claude Code's last sign of life (the killed command's, or someone's after \
                 Claude Code stopped: walj cannot tell which without its watcher)"
                    .to_string(),
                (true, Some(t)) => format!(
                    "this change was made after Claude Code's last sign of life (the killed command's, or someone's after \
                     Claude Code stopped: walj cannot tell which; its watcher saw Claude Code end at {})",
                    crate::present::hms(t)
                ),
                (false, _) => {
                    "this change may not be from its command (another session or the user was active while it ran)".to_string()
                }
            };
            errors.push(format!(
                "{} ({}): {why}; look at `walj diff {}` and pass --force to revert it anyway",
                fold.ids.short(&e.id),
                e.path,
                fold.ids.short(&e.id)
            ));
            outcomes.push(Outcome::of(e, errors[before].clone(), false));
            continue;
        }
        if let Some(&first) = oldest_of.get(e.id.as_str()) {
            let why = format!(
                "{} goes back to its pre-image before {} (the earliest entry on it in this revert)",
                e.path,
                fold.ids.short(first)
            );
            let w = Worked {
                entry: e,
                plan: RevertPlan::Nothing { why },
                abs: None,
                disk: Disk::Absent,
                pre: Image::Unknown(String::new()),
                record_nothing: true,
                scope: WriteScope::Project,
                git_note: None,
                exec: None,
            };
            outcomes.push(Outcome::of(e, w.describe(opts.force, true), false));
            followers.entry(first).or_default().push(w);
            continue;
        }
        let last = newest_of.get(e.id.as_str()).copied();
        let w = work_out(fold, e, last, objects, &overlay, project, &origin, opts.force);
        let head = format!("{} ({})", fold.ids.short(&e.id), e.path);
        match &w.plan {
            RevertPlan::Refused { why } => errors.push(format!("{head}: cannot revert: {why}")),
            RevertPlan::Conflict { lines } if !opts.force => {
                let why = format!(
                    "{head}: reverting conflicts with later changes:\n{}\nEdit the file by hand, or pass --force to write the pre-image over them (the current bytes are kept in the store; `walj undo` brings them back)",
                    lines.join("\n")
                );
                conflicted = true;
                outcomes.push(Outcome { conflict: Some(lines.clone()), ..Outcome::of(e, why.clone(), false) });
                errors.push(why);
            }
            _ => outcomes.push(Outcome::of(e, w.describe(opts.force, true), false)),
        }
        if let (Some(abs), Some(t)) = (&w.abs, w.target(opts.force)) {
            overlay.set(abs, Disk::from_option(t));
        }
        let id = w.entry.id.as_str();
        steps.push(w);
        steps.extend(followers.remove(id).unwrap_or_default());
    }
    if conflicted {
        return Err(TriageError::Conflict { message: problems(&errors), outcomes });
    }
    if !errors.is_empty() {
        return Err(TriageError::Refused(problems(&errors)));
    }
    Ok(steps)
}

/// Chains among the entries a revert takes back (newest first): on one path, entries that
/// follow each other with nothing between them (no other entry on the path, each one's
/// pre-image the previous one's post-image) go back together to the oldest one's pre-image,
/// checked against the disk by the newest one's post-image, when an image in between is
/// missing (a file over the capture cap rewritten many times has none): those images are not
/// needed. (Where every image is there, each entry is taken out in turn, newest first.)
/// Returns, for each later entry of a chain, its oldest entry's id, and for each oldest entry,
/// its chain's newest.
fn chains<'f>(
    fold: &'f Fold,
    entries: &[&'f Entry],
    objects: &mut Objects,
) -> (HashMap<&'f str, &'f str>, HashMap<&'f str, &'f Entry>) {
    let chosen: std::collections::HashSet<&str> = entries.iter().map(|e| e.id.as_str()).collect();
    let mut by_path: HashMap<&str, Vec<&Entry>> = HashMap::new();
    for e in fold.entries.iter().filter(|e| e.kind.is_none() && !e.outside) {
        by_path.entry(e.path.as_str()).or_default().push(e);
    }
    let (mut oldest_of, mut newest_of) = (HashMap::new(), HashMap::new());
    for list in by_path.values_mut() {
        if list.iter().filter(|e| chosen.contains(e.id.as_str())).count() < 2 {
            continue;
        }
        list.sort_by_key(|e| e.line);
        let mut run: Vec<&Entry> = Vec::new();
        let mut close = |run: &mut Vec<&'f Entry>| {
            let mut missing = || {
                run[1..].iter().any(|e| {
                    matches!(objects.image(&e.before, e.nocap.as_deref(), "pre-image", None), Image::Unknown(_))
                })
            };
            if run.len() > 1 && missing() {
                let (first, last) = (run[0], run[run.len() - 1]);
                newest_of.insert(first.id.as_str(), last);
                for later in &run[1..] {
                    oldest_of.insert(later.id.as_str(), first.id.as_str());
                }
            }
            run.clear();
        };
        for e in list.iter().copied() {
            let joins = chosen.contains(e.id.as_str())
                && e.state() != EntryState::NotApplied
                && run.last().is_none_or(|p| p.after.is_some() && p.after == e.before);
            if !joins {
                close(&mut run);
                if chosen.contains(e.id.as_str()) && e.state() != EntryState::NotApplied {
                    run.push(e);
                }
                continue;
            }
            run.push(e);
        }
        close(&mut run);
    }
    (oldest_of, newest_of)
}

/// One revert ready to write: what to write (`Some(None)` = delete), its `resolved` record,
/// and the (before, after) blobs captured for it.
type Prepared = (Option<Option<Vec<u8>>>, Record, Option<(Blob, Blob)>);

/// Carries out one worked-out, captured and staged revert (`out`: the ones done before it in
/// this call, named in errors), and appends its record.
fn write_one(
    project: &Project,
    objects: &Objects,
    w: &Worked,
    opts: &RevertOptions,
    (target, mut r, blobs): Prepared,
    staged: Option<fsutil::Staged>,
    out: &[Outcome],
) -> Result<Outcome> {
    let (force, ahead) = (opts.force, opts.ahead);
    let e = w.entry;
    let done_so_far = |out: &[Outcome]| {
        if out.is_empty() {
            String::new()
        } else {
            format!(
                "\nAlready reverted in this call (`walj undo` undoes them): {}",
                out.iter().map(|o| o.path.as_str()).collect::<Vec<_>>().join(", ")
            )
        }
    };
    let message = w.describe(force, false);
    let outcome = |message: String, changed: bool| Outcome::of(e, message, changed);
    match (&target, &w.abs, blobs) {
        (None, _, _) if !w.record_nothing => return Ok(outcome(message, false)),
        (None, _, _) if ahead => {}
        (None, _, _) => append(project, &[r])?,
        (Some(bytes), Some(abs), Some((before, after))) => {
            // Right before the write: the path must still stay inside the project (no
            // symlink swapped in since) and the disk must still be what the plan saw (and
            // captured). Then the write itself checks what it replaces (`place`).
            match w.scope {
                WriteScope::Project => project.resolve_rel(&e.path),
                WriteScope::GitForced => project.resolve_recorded(&e.path),
            }
            .map_err(|why| TriageError::Failed(format!("{why}{}", done_so_far(out))))?;
            let now =
                read_disk(abs, &e.path).map_err(|why| TriageError::Failed(format!("{why}{}", done_so_far(out))))?;
            if now != w.disk {
                return Ok(Outcome {
                    concurrent: true,
                    ..outcome(
                        format!(
                            "{} changed while reverting (another program wrote it after walj looked at it); nothing written to it. Run the revert again",
                            e.path
                        ),
                        false,
                    )
                });
            }
            if let Disk::File(_) = now
                && let Some(mode) = fsutil::file_mode(abs)
            {
                // Undoing a revert that deleted the file gives it back its permissions.
                r = r.with(crate::journal::key::MODE, mode);
            }
            let placed = match (staged, bytes) {
                (Some(s), Some(b)) => place::put_write(objects, s, &e.path, &w.disk, b, "reverting"),
                (None, None) => place::put_delete(project, objects, w.scope, &e.path, &w.disk, "reverting"),
                _ => Err(TriageError::Failed(format!("{}: nothing staged to write", e.path))),
            }
            .map_err(|err| TriageError::Failed(format!("{err:#}{}", done_so_far(out))))?;
            place::record_kept(project, e, "revert", r.action.as_deref(), &placed.kept)?;
            if !placed.written {
                let note = placed.note.unwrap_or_default();
                return Ok(Outcome { concurrent: true, kept: placed.kept, ..outcome(note, false) });
            }
            let before = placed.overwrote.map_or(before, Blob::Id);
            r.before = Some(before.clone());
            r.after = Some(after);
            let records = if ahead { Vec::new() } else { vec![r] };
            (if records.is_empty() { Ok(()) } else { append(project, &records) }).map_err(|err| {
                TriageError::Failed(format!(
                    "reverted {} but could not record it: {err:#}. The bytes it overwrote are in the store as {}",
                    e.path,
                    before.id().unwrap_or("(the file was absent)")
                ))
            })?;
            if let Some(note) = placed.note {
                let concurrent = !placed.kept.is_empty();
                return Ok(Outcome { concurrent, kept: placed.kept, ..outcome(format!("{message}; {note}"), true) });
            }
        }
        _ => return Err(TriageError::Refused(format!("{}: no path to write{}", e.path, done_so_far(out)))),
    }
    Ok(outcome(
        match &w.git_note {
            Some(n) => format!("{message} (--force: {n})"),
            None => message,
        },
        true,
    ))
}

/// What a file under `.git/` is, for the line that asks for (or reports) `--force`.
fn git_file_note(rel: &str) -> String {
    let p = std::path::Path::new(rel);
    let name = p.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let parent = p.parent().and_then(|d| d.file_name()).map(|n| n.to_string_lossy().to_ascii_lowercase());
    if name == ".git" {
        "a gitlink file (.git): it tells git where this folder's repository is (a worktree's, a submodule's)"
            .to_string()
    } else if parent.as_deref() == Some("hooks") {
        "a git hook: git runs it as a program".to_string()
    } else if name == "config" {
        "git's configuration of this repository: settings such as core.fsmonitor, core.pager or an alias make git run commands".to_string()
    } else {
        "a file of git's own folder (.git/), which git reads as its repository state".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_takes_an_earlier_change_out_and_keeps_a_later_one() {
        let pre = b"a\nb\nc\nd\ne\nf\ng\nh\n";
        let post = b"a\nB\nc\nd\ne\nf\ng\nh\n";
        let disk = b"a\nB\nc\nd\ne\nf\ng\nH\n";
        let (clean, merged) = merge3(post, disk, pre).unwrap();
        assert!(clean);
        assert_eq!(merged, b"a\nb\nc\nd\ne\nf\ng\nH\n");
    }

    #[test]
    fn conflict_regions_name_disk_lines_and_both_sides() {
        let pre = b"a\nb\nc\nd\n";
        let post = b"a\nB\nc\nd\n";
        let disk = b"x\na\nBB\nc\nd\n";
        let (clean, merged) = merge3(post, disk, pre).unwrap();
        assert!(!clean);
        let lines = conflict_regions(&merged, disk, "f.txt");
        assert_eq!(lines, ["f.txt line 3: the file now has:", "    | BB", "  where the pre-image has:", "    | b"]);
        let plan = RevertPlan::Conflict { lines };
        assert!(plan.summary("f.txt").contains("(1 conflicting region)"), "{}", plan.summary("f.txt"));
    }

    #[test]
    fn locate_prefers_the_occurrence_nearest_the_estimate() {
        let disk = ["x", "y", "x", "y", "x"];
        assert_eq!(locate(&disk, &["x", "y"], 3), 2);
        assert_eq!(locate(&disk, &["x", "y"], 0), 0);
        assert_eq!(locate(&disk, &["z"], 4), 4);
        assert_eq!(locate(&disk, &[], 9), 5);
    }

    #[test]
    fn long_regions_say_how_many_lines_are_not_shown() {
        let mut out = Vec::new();
        let many: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        push_lines(&mut out, &refs);
        assert_eq!(out.len(), REGION_LINES + 1);
        assert_eq!(out.last().unwrap(), "    | … 4 more lines");
    }
}
