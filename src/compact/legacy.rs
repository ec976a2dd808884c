//! `walj compact --merge-legacy`: a subfolder journal from before one project root merged into
//! the root's (docs/project-root.md, "Journals from before one root").
//!
//! The contract, for each journal [`crate::project::legacy::find`] lists:
//! 1. its killed commands are reconciled first (their changes become records there);
//! 2. its records are rebased (`path` gets the subfolder prefix, ids and everything else kept)
//!    and its store's objects are copied into the root's store;
//! 3. **verified before anything is replaced**: the root journal's bytes plus the rebased
//!    lines, written to a temp file, fold (every entry kept) to exactly what the two journals
//!    read side by side fold to (each entry's id, session, path, state, images and actions;
//!    each session's prompts and commands). A mismatch stops here, nothing changed;
//! 4. the rebased lines are appended to the root journal (under its lock, one write, one
//!    sync); the root journal is folded again and must hold every entry;
//! 5. only then is the old journal renamed `journal.jsonl.merged` (kept, with its store:
//!    nothing of it is deleted) and the list in `.walj/legacy` says `merged<TAB>folder`.
//!
//! A second run finds nothing to merge (the old journal is no longer there). A run cut off
//! between 4 and 5 finds the root already holding every entry of the old journal: it does not
//! append again, it renames.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::fold::{Fold, FoldOptions};
use crate::journal::{JournalWriter, Record, Source};
use crate::project::{Project, legacy};
use crate::session::SessionError;
use crate::store::Store;

/// The old journal's name once merged.
pub const MERGED: &str = "journal.jsonl.merged";

/// What `walj compact --merge-legacy` did with one subfolder journal.
#[derive(Debug, Clone, Serialize)]
pub struct Merged {
    /// The subfolder (`pkg/core`).
    pub folder: String,
    pub records: usize,
    pub entries: usize,
    pub sessions: usize,
    pub objects_copied: usize,
    /// The root journal already held it all (a run cut off before the rename): not appended.
    pub already_there: bool,
    /// Where the old journal is kept (`pkg/core/.walj/journal.jsonl.merged`).
    pub kept: PathBuf,
    pub dry_run: bool,
}

/// Merges every subfolder journal of `project` (see the module docs). `dry_run`: verify
/// only, change nothing.
pub fn merge_legacy(project: &Project, dry_run: bool) -> Result<Vec<Merged>, SessionError> {
    let mut out = Vec::new();
    for l in legacy::find(project) {
        out.push(merge_one(project, &l, dry_run)?);
    }
    if !dry_run && !out.is_empty() {
        mark_merged(project, &out);
    }
    Ok(out)
}

fn all() -> FoldOptions {
    FoldOptions { keep_settled: true, all_commands: true, ..Default::default() }
}

fn merge_one(project: &Project, l: &legacy::Legacy, dry_run: bool) -> Result<Merged, SessionError> {
    let old = &l.project;
    if !dry_run {
        // Commands a crash cut off: their changes recorded in the old journal first.
        let mut f = Fold::load(&old.journal, &FoldOptions::default()).map_err(reading(&old.journal))?;
        let _ = crate::bashsnap::killed::reconcile(old, &mut f, &FoldOptions::default());
    }
    let mut records = Vec::new();
    crate::journal::reader::scan_records(&old.journal, |_, mut r: Record| {
        if !r.path.is_empty() && !r.outside {
            r.path = crate::session::legacy::rebase(&l.rel, &r.path);
        }
        records.push(r);
    })
    .map_err(reading(&old.journal))?;

    // What the two journals say side by side, and what the root says now.
    let root_now = Fold::load(&project.journal, &all()).map_err(reading(&project.journal))?;
    let old_fold = Fold::load(&old.journal, &all()).map_err(reading(&old.journal))?;
    let already_there =
        !old_fold.entries.is_empty() && old_fold.entries.iter().all(|e| root_now.entry_in(&e.session, &e.id).is_some());
    let (entries, sessions) = (old_fold.entries.len(), old_fold.sessions.len());
    let mut beside = Fold::load(&project.journal, &all()).map_err(reading(&project.journal))?;
    if !already_there {
        let clashes = beside.absorb_legacy(&l.rel, old_fold);
        if !clashes.is_empty() {
            return Err(SessionError::Refused(format!(
                "{}/.walj/journal.jsonl has entries whose ids the root journal holds too ({}): not merged, nothing \
                 was changed",
                l.rel,
                clashes.join(", ")
            )));
        }
    }

    // Verified before anything is replaced: root bytes + rebased lines, folded.
    let tmp = project.dir.join("journal.merge.tmp");
    if !already_there {
        project.ensure_dir().map_err(SessionError::io("creating", &project.dir))?;
        let mut bytes = match crate::fsutil::read_regular(&project.journal) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(SessionError::io("reading", &project.journal)(e)),
        };
        if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            // A torn last line stays torn: the rebased lines start on a line of their own.
            bytes.push(b'\n');
        }
        for r in &records {
            bytes.extend_from_slice(&r.to_line());
        }
        crate::fsutil::atomic_write(&tmp, &bytes, Some(0o600)).map_err(SessionError::io("writing", &tmp))?;
        let merged = Fold::load_from(Source::file(&tmp), &all());
        let _ = std::fs::remove_file(&tmp);
        let merged = merged.map_err(reading(&tmp))?;
        if let Some(diff) = first_difference(&view(&beside), &view(&merged)) {
            return Err(SessionError::Refused(format!(
                "merging {}/.walj/journal.jsonl would change what walj reads ({diff}): not merged, nothing was changed",
                l.rel
            )));
        }
    }
    let objects = Store::new(old.store_dir()).ids().unwrap_or_default();
    let kept = old.dir.join(MERGED);
    let mut report = Merged {
        folder: l.rel.clone(),
        records: records.len(),
        entries,
        sessions,
        objects_copied: 0,
        already_there,
        kept: kept.clone(),
        dry_run,
    };
    if dry_run {
        report.objects_copied = objects.len();
        return Ok(report);
    }
    // The images first (a line never names an object the store lacks), then the lines.
    let (from, to) = (Store::new(old.store_dir()), Store::new(project.store_dir()));
    for id in &objects {
        if to.contains(id) {
            continue;
        }
        let bytes = from.get(id)?;
        to.put_with_id(id, &bytes)?;
        report.objects_copied += 1;
    }
    if !already_there {
        JournalWriter::new(&project.journal)
            .append_all(&records)
            .map_err(SessionError::io("appending to", &project.journal))?;
        let after = Fold::load(&project.journal, &all()).map_err(reading(&project.journal))?;
        if let Some(e) = beside.entries.iter().find(|e| after.entry_in(&e.session, &e.id).is_none()) {
            return Err(SessionError::Refused(format!(
                "after merging, entry {} is not in {}: the old journal is kept as it was",
                e.id,
                project.journal.display()
            )));
        }
    }
    std::fs::rename(&old.journal, &kept).map_err(SessionError::io("renaming", &old.journal))?;
    Ok(report)
}

fn reading(p: &Path) -> impl FnOnce(std::io::Error) -> SessionError + use<> {
    let path = p.to_path_buf();
    move |source| SessionError::Io { op: "reading".into(), path, source }
}

/// What a fold says about every entry and session, for the comparison.
fn view(f: &Fold) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in &f.entries {
        let actions: Vec<String> = e.actions.iter().map(|a| format!("{}:{}:{}", a.action, a.how, a.undone)).collect();
        out.insert(
            format!("entry {}", e.id),
            format!(
                "{} {} {} {:?} {:?} {:?} {}",
                e.session,
                e.path,
                e.state(),
                e.before.as_ref().map(|b| format!("{b:?}")),
                e.after.as_ref().map(|b| format!("{b:?}")),
                e.parent,
                actions.join(",")
            ),
        );
    }
    for s in &f.sessions {
        out.insert(
            format!("session {}", s.session),
            format!(
                "{} prompts, {} commands, end {:?}",
                s.prompts.len(),
                s.commands.len(),
                s.end.as_ref().map(|e| &e.1)
            ),
        );
    }
    out
}

fn first_difference(want: &BTreeMap<String, String>, got: &BTreeMap<String, String>) -> Option<String> {
    for (k, v) in want {
        match got.get(k) {
            None => return Some(format!("{k} missing")),
            Some(g) if g != v => return Some(format!("{k}: {v} became {g}")),
            _ => {}
        }
    }
    got.keys().find(|k| !want.contains_key(*k)).map(|k| format!("{k} appeared"))
}

/// `.walj/legacy` after a merge: the merged folders as `merged<TAB>folder` (never read again).
fn mark_merged(project: &Project, merged: &[Merged]) {
    let list = project.dir.join(legacy::LIST);
    let text = crate::fsutil::read_regular(&list).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let mut out = String::new();
    for line in text.lines() {
        if merged.iter().any(|m| m.folder == line) {
            out.push_str(&format!("{}{line}\n", legacy::MERGED_PREFIX));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    let _ = crate::fsutil::atomic_write(&list, out.as_bytes(), Some(0o600));
}
