//! Reading the subfolder journals from before one project root beside the root's
//! (docs/project-root.md, "Journals from before one root").
//!
//! The contract:
//! - **Which journals.** Those [`legacy::find`] lists (found once, `.walj/legacy`), each of
//!   which passed the ownership check (`crate::project::trust`, whose one-time adoption rule
//!   applies: untracked, owned by this user, not a link). One that fails it is never read:
//!   [`skipped`] names it with the reason, for the messages.
//! - **How.** Each journal is folded on its own with the caller's options, prepared by the
//!   caller as the root's fold is (killed commands reconciled, the disk checked: `prepare`
//!   gets the subfolder's project, whose root is the subfolder), then joined to the root's
//!   fold by [`crate::fold::Fold::absorb_legacy`]: paths rebased, ids kept, ids shown short
//!   against every journal.
//! - **Acting.** An entry or session from such a journal is acted on through that journal
//!   ([`owner_of`]): its triage records go there, next to the entry's own records and blobs,
//!   so a restart folds the same state, and the file written is the subfolder's project root
//!   joined with the entry's own path (= the rebased path under the root).

use crate::fold::{Fold, FoldOptions};
use crate::project::{Project, legacy};

/// A subfolder journal that is not read, and why (for the messages).
#[derive(Debug, Clone)]
pub struct Skipped {
    pub rel: String,
    pub why: String,
}

/// Folds each legacy journal of `project` with `opts`, prepares it with `prepare`, and joins
/// it to `fold`. Returns warnings (a journal that could not be read, ids both journals hold).
pub fn read_beside(
    project: &Project,
    fold: &mut Fold,
    opts: &FoldOptions,
    prepare: impl FnMut(&Project, &mut Fold),
) -> Vec<String> {
    read_these(legacy::find(project), fold, opts, prepare)
}

/// [`read_beside`] of the journals `.walj/legacy` lists, without the walk that makes the
/// list (the hook's SessionStart).
pub fn read_listed(
    project: &Project,
    fold: &mut Fold,
    opts: &FoldOptions,
    prepare: impl FnMut(&Project, &mut Fold),
) -> Vec<String> {
    read_these(legacy::find_listed(project), fold, opts, prepare)
}

fn read_these(
    found: Vec<legacy::Legacy>,
    fold: &mut Fold,
    opts: &FoldOptions,
    mut prepare: impl FnMut(&Project, &mut Fold),
) -> Vec<String> {
    let mut warnings = Vec::new();
    for l in found {
        let mut old = match Fold::load(&l.project.journal, opts) {
            Ok(f) => f,
            Err(e) => {
                warnings.push(format!("reading {}: {e}", l.project.journal.display()));
                continue;
            }
        };
        prepare(&l.project, &mut old);
        let clashes = fold.absorb_legacy(&l.rel, old);
        for id in clashes {
            warnings.push(format!(
                "entry {id} of {}/.walj/journal.jsonl has the id of an entry of this journal: left out",
                l.rel
            ));
        }
    }
    warnings
}

/// Ids shown unique against every id of the subfolder journals too (their id indexes), after
/// the root journal's were read ([`Fold::load_short_ids`]).
pub fn share_ids(project: &Project, fold: &mut Fold) {
    for l in legacy::find(project) {
        if let Ok(index) = crate::fold::ids::IdIndex::load(&l.project.journal) {
            fold.ids = std::mem::take(&mut fold.ids).with_index(index);
        }
    }
    fold.ids = std::mem::take(&mut fold.ids).with_shown(fold.entries.iter().map(|e| e.id.as_str()));
}

/// The subfolder journal `rel` as a project of its own (root = the subfolder), when it is
/// one [`legacy::find`] lists.
pub fn project_of(project: &Project, rel: &str) -> Option<Project> {
    legacy::find(project).into_iter().find(|l| l.rel == rel).map(|l| l.project)
}

/// The one subfolder journal whose fold `here` is true of (what an action names: entry ids,
/// a session, an operation), every entry kept: `Ok(None)` when none is; an error when several
/// are (an action acts on one journal at a time).
pub fn owner_of(project: &Project, here: impl Fn(&Fold) -> bool) -> Result<Option<legacy::Legacy>, String> {
    let opts = FoldOptions { keep_settled: true, ..Default::default() };
    let mut owner: Option<legacy::Legacy> = None;
    for l in legacy::find(project) {
        let Ok(f) = Fold::load(&l.project.journal, &opts) else { continue };
        if !here(&f) {
            continue;
        }
        if let Some(first) = &owner {
            return Err(format!(
                "these entries are in several journals from before one project root ({}/.walj/, {}/.walj/): act on one \
                 journal at a time",
                first.rel, l.rel
            ));
        }
        owner = Some(l);
    }
    Ok(owner)
}

/// The subfolder journals found but not read (they failed the ownership check), with why.
pub fn skipped(project: &Project) -> Vec<Skipped> {
    legacy::refused(project).into_iter().map(|(rel, why)| Skipped { rel, why }).collect()
}

/// The entry as its own journal knows it, and the project to compare or act in: an entry of a
/// subfolder journal read beside this one (`legacy`) keeps its path there, and the project is
/// the subfolder's (its store, its root); any other entry is `project`'s.
pub fn own_view(project: &Project, e: &crate::fold::Entry) -> (crate::fold::Entry, Project) {
    match e.legacy.as_deref().and_then(|rel| project_of(project, rel).map(|p| (rel, p))) {
        Some((rel, p)) => {
            let mut own = e.clone();
            if let Some(path) = e.path.strip_prefix(rel).and_then(|x| x.strip_prefix('/')) {
                own.path = path.to_string();
            }
            (own, p)
        }
        None => (e.clone(), project.clone()),
    }
}

/// The subfolder journal (as a project, with its own fold, every entry kept) that holds the
/// entries `ids` name in `fold` (a fold [`read_beside`] made), when they all come from one;
/// `None` when they are the root's own (or mixed: the action then refuses them as unknown).
pub fn acting_journal(project: &Project, fold: &Fold, ids: &[String]) -> Option<(Project, Fold)> {
    let mut rels = ids.iter().map(|i| fold.find(i).ok().and_then(|e| e.legacy.clone()));
    let first = rels.next()??;
    if !rels.all(|r| r.as_deref() == Some(first.as_str())) {
        return None;
    }
    let old = project_of(project, &first)?;
    let f = Fold::load(&old.journal, &FoldOptions { keep_settled: true, ..Default::default() }).ok()?;
    Some((old, f))
}

/// Rebases a subfolder-relative path by `rel` (`a.txt` → `pkg/core/a.txt`).
pub fn rebase(rel: &str, path: &str) -> String {
    let rel = rel.trim_matches('/');
    if rel.is_empty() || path.starts_with('/') { path.to_string() } else { format!("{rel}/{path}") }
}
