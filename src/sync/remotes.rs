//! Other journals read back: each `.walj/remotes/<id>/journal.jsonl` folded on its own, its
//! sessions' states taken from its manifest (a pid of another machine says nothing here), its
//! entries never checked against this checkout's disk.
//!
//! Each copy is folded like this checkout's journal: from a fold snapshot and an id index
//! (`crate::fold::snapshot`, `crate::fold::ids`), with the same rules (a cache, never a source
//! of truth: it describes the copy's device, inode, length and the checksum of the bytes before
//! its offset, and anything doubtful is a full fold). They live in `.walj/cache/remotes/<id>/`
//! (`fold.snap`, `ids.idx`), never in the copy's folder: that one is `walj sync`'s, which
//! replaces the copy's journal by a rename at each change (so the next fold of a changed copy
//! is a full one, and writes the cache anew; a sync does it when it writes the SessionStart
//! counts). A cache folder whose copy is gone is removed by the next load. The snapshot holds
//! what the copy's journal alone says: the manifest's session states and this checkout's
//! decisions about its entries ([`super::elsewhere::overlay`]) are applied fresh on top.

use std::io;
use std::path::{Path, PathBuf};

use super::Paths;
use super::manifest::Manifest;
use crate::fold::ids::IdIndex;
use crate::fold::snapshot;
use crate::fold::{Fold, FoldOptions, SessionStatus};
use crate::journal::Source;
use crate::procinfo::Liveness;
use crate::project::Project;

/// The fold snapshot of a copy, in its cache folder.
pub(crate) const SNAPSHOT: &str = "fold.snap";
/// The id index of a copy, in its cache folder.
pub(crate) const IDS: &str = "ids.idx";

/// Another checkout's journal, as of its last sync.
#[derive(Debug)]
pub struct RemoteJournal {
    pub id: String,
    pub dir: PathBuf,
    /// Its cache folder (`.walj/cache/remotes/<id>/`).
    pub cache: PathBuf,
    pub manifest: Manifest,
    pub fold: Fold,
}

impl RemoteJournal {
    /// Its name for people (`host:path`, or its `[sync] name`).
    pub(crate) fn name(&self) -> &str {
        &self.manifest.name
    }

    /// "as of the last sync from laptop (2026-11-29 07:30)".
    pub(crate) fn as_of(&self) -> String {
        format!(
            "as of the last sync from {} ({})",
            self.manifest.name,
            crate::present::human_ts(&self.manifest.synced_at)
        )
    }

    /// The copy's journal.
    pub(crate) fn journal(&self) -> PathBuf {
        self.dir.join("journal.jsonl")
    }

    /// Every id and session the copy names, through its cached id index.
    pub(crate) fn ids(&self) -> io::Result<IdIndex> {
        ids_of(&self.journal(), &self.cache, snapshot::WRITE_AFTER)
    }

    /// A project whose images are this journal's and whose disk is this checkout's: what
    /// `walj diff` of one of its entries reads.
    pub(crate) fn project(&self, local: &Project) -> Project {
        Project { root: local.root.clone(), dir: self.dir.clone(), journal: self.dir.join("journal.jsonl") }
    }
}

/// The copies of other journals under `.walj/remotes/` (id, folder, manifest), by name.
pub(crate) fn list(project: &Project) -> Vec<(String, PathBuf, Manifest)> {
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

/// Folds every copy (with `opts`, through its cache), states from the manifests. Copies
/// that cannot be read are skipped with a warning line each.
pub(crate) fn load(project: &Project, opts: &FoldOptions) -> (Vec<RemoteJournal>, Vec<String>) {
    load_with(project, opts, snapshot::WRITE_AFTER)
}

/// [`load`], writing a copy's snapshot when more than `write_after` bytes were read past it.
pub(crate) fn load_with(project: &Project, opts: &FoldOptions, write_after: u64) -> (Vec<RemoteJournal>, Vec<String>) {
    let paths = Paths::new(project);
    sweep_caches(&paths);
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for (id, dir, manifest) in list(project) {
        let journal = dir.join("journal.jsonl");
        let cache = cache_dir(&paths, &id);
        match fold_copy(&journal, &cache, opts, write_after) {
            Ok(mut fold) => {
                apply_states(&mut fold, &manifest);
                out.push(RemoteJournal { id, dir, cache, manifest, fold });
            }
            Err(e) => warnings.push(format!("the copy of {} ({}): {e}", manifest.name, journal.display())),
        }
    }
    // What this checkout decided about their entries, before they have synced it.
    super::elsewhere::overlay(project, out.iter_mut().map(|r| (r.id.as_str(), &mut r.fold)));
    (out, warnings)
}

/// The cache folder of copy `id`: `.walj/cache/remotes/<id>/`.
pub(crate) fn cache_dir(paths: &Paths, id: &str) -> PathBuf {
    paths.caches.join(id)
}

/// The fold of a copy's `journal` (what its journal alone says), from the snapshot in `cache`
/// when one matches; a new snapshot is written there when more than `write_after` bytes had
/// to be read (default options only, as for this checkout's journal).
pub fn fold_copy(journal: &Path, cache: &Path, opts: &FoldOptions, write_after: u64) -> io::Result<Fold> {
    make_cache_dir(journal, cache, write_after);
    if let Some(fold) = snapshot::load_at(journal, Some(cache.join(SNAPSHOT)), opts, write_after)? {
        return Ok(fold);
    }
    Fold::load_from(Source::journal(journal), opts)
}

/// Every id and session a copy's `journal` names, through the id index in `cache`.
pub fn ids_of(journal: &Path, cache: &Path, write_after: u64) -> io::Result<IdIndex> {
    make_cache_dir(journal, cache, write_after);
    IdIndex::load_at(journal, Some(cache.join(IDS)), write_after)
}

/// The cache folder, made when a cache may be written there (a journal longer than
/// `write_after`): small copies leave no folder. Best effort: without it, no cache is written.
fn make_cache_dir(journal: &Path, cache: &Path, write_after: u64) {
    if std::fs::metadata(journal).is_ok_and(|m| m.len() > write_after) {
        let _ = crate::fsutil::create_private_dir(cache);
    }
}

/// Removes the cache folders of copies that are gone (their folder under `.walj/remotes/`
/// removed). Best effort.
fn sweep_caches(paths: &Paths) {
    let Ok(rd) = std::fs::read_dir(&paths.caches) else { return };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(id) = name.to_str().filter(|n| super::identity::is_journal_id(n)) else { continue };
        if !paths.remotes.join(id).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A file's length, modification time, device and inode (`None`: missing).
type FileSig = Option<(u64, std::time::SystemTime, u64, u64)>;

fn file_sig(p: &Path) -> FileSig {
    let m = std::fs::metadata(p).ok()?;
    let (dev, ino) = crate::journal::identity(&m);
    Some((m.len(), m.modified().ok()?, dev, ino))
}

/// What [`load`] reads: each copy's journal and manifest, this checkout's decisions about
/// their entries (the sidecar [`super::elsewhere::overlay`] reads) and its journal id. Two equal
/// signatures: a load gives the same copies (the TUI reloads them only when it changes).
/// `walj sync` replaces a copy's files by a rename, so each change is a new inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    copies: Vec<(String, FileSig, FileSig)>,
    sidecar: FileSig,
    id: FileSig,
}

/// The copies' [`Signature`] now (a few `stat`s per copy).
pub(crate) fn signature(project: &Project) -> Signature {
    let paths = Paths::new(project);
    let mut copies = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&paths.remotes) {
        for e in rd.flatten() {
            let Some(id) = e.file_name().to_str().filter(|n| super::identity::is_journal_id(n)).map(String::from)
            else {
                continue;
            };
            let dir = e.path();
            copies.push((id, file_sig(&dir.join("journal.jsonl")), file_sig(&dir.join(super::publish::MANIFEST))));
        }
    }
    copies.sort();
    Signature { copies, sidecar: file_sig(&super::elsewhere::sidecar(project)), id: file_sig(&paths.id) }
}

/// Session states from the manifest: live and crashed as the other machine saw them; ended
/// comes from the journal itself; anything else is unknown.
pub(crate) fn apply_states(fold: &mut Fold, m: &Manifest) {
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
pub(crate) fn find_entry<'a>(
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
