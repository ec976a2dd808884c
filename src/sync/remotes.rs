//! Other journals read back: each `.walj/remotes/<id>/journal.jsonl` folded on its own, its
//! sessions' states taken from its manifest (a pid of another machine says nothing here), its
//! entries never checked against this checkout's disk.

use std::path::PathBuf;

use super::Paths;
use super::manifest::Manifest;
use crate::fold::{Fold, FoldOptions, SessionStatus};
use crate::procinfo::Liveness;
use crate::project::Project;

/// Another checkout's journal, as of its last sync.
#[derive(Debug)]
pub struct RemoteJournal {
    pub id: String,
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub fold: Fold,
}

impl RemoteJournal {
    /// Its name for people (`host:path`, or its `[sync] name`).
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// "as of the last sync from laptop (2026-11-29 07:30)".
    pub fn as_of(&self) -> String {
        format!(
            "as of the last sync from {} ({})",
            self.manifest.name,
            crate::present::human_ts(&self.manifest.synced_at)
        )
    }

    /// A project whose images are this journal's and whose disk is this checkout's: what
    /// `walj diff` of one of its entries reads.
    pub fn project(&self, local: &Project) -> Project {
        Project { root: local.root.clone(), dir: self.dir.clone(), journal: self.dir.join("journal.jsonl") }
    }
}

/// The copies of other journals under `.walj/remotes/` (id, folder, manifest), by name.
pub fn list(project: &Project) -> Vec<(String, PathBuf, Manifest)> {
    let paths = Paths::new(project);
    let Ok(rd) = std::fs::read_dir(&paths.remotes) else { return Vec::new() };
    let mut out: Vec<_> = rd
        .flatten()
        .filter_map(|e| {
            let id = e.file_name().to_str()?.to_string();
            if !super::identity::is_journal_id(&id) {
                return None;
            }
            let m = super::accept::read_copy(&paths, &id)?;
            Some((id, e.path(), m))
        })
        .collect();
    out.sort_by(|a, b| a.2.name.cmp(&b.2.name).then(a.0.cmp(&b.0)));
    out
}

/// Folds every copy (with `opts`), states from the manifests. Copies that cannot be read
/// are skipped with a warning line each.
pub fn load(project: &Project, opts: &FoldOptions) -> (Vec<RemoteJournal>, Vec<String>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for (id, dir, manifest) in list(project) {
        let journal = dir.join("journal.jsonl");
        match Fold::load(&journal, opts) {
            Ok(mut fold) => {
                apply_states(&mut fold, &manifest);
                out.push(RemoteJournal { id, dir, manifest, fold });
            }
            Err(e) => warnings.push(format!("the copy of {} ({}): {e}", manifest.name, journal.display())),
        }
    }
    // What this checkout decided about their entries, before they have synced it.
    super::triage::overlay(project, &mut out);
    (out, warnings)
}

/// Session states from the manifest: live and crashed as the other machine saw them; ended
/// comes from the journal itself; anything else is unknown.
pub fn apply_states(fold: &mut Fold, m: &Manifest) {
    for s in &mut fold.sessions {
        let state = m.sessions.iter().find(|x| x.session == s.session).map(|x| x.state.as_str());
        s.liveness = match state {
            Some(x) if x == SessionStatus::Live.as_str() => Some(Liveness::Running),
            Some(x) if x == SessionStatus::Crashed.as_str() => Some(Liveness::Gone),
            _ => None,
        };
    }
}

/// Finds an entry (id or unique prefix) in the other journals: the journal and the entry's
/// full id. `Ok(None)`: no journal has it.
pub fn find_entry<'a>(
    remotes: &'a [RemoteJournal],
    id: &str,
) -> Result<Option<(&'a RemoteJournal, &'a crate::fold::Entry)>, String> {
    let mut hits = Vec::new();
    for r in remotes {
        if let Ok(e) = r.fold.find(id) {
            hits.push((r, e));
        }
    }
    match hits.len() {
        0 => Ok(None),
        1 => Ok(hits.pop()),
        _ => Err(format!(
            "{id:?} matches entries of several journals: {}",
            hits.iter().map(|(r, e)| format!("{} ({})", e.id, r.name())).collect::<Vec<_>>().join(", ")
        )),
    }
}
