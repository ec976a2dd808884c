//! `walj sync`: this checkout's journal, and the images it names, published to the project's
//! own git remote under `refs/walj/journals/<id>`; every other checkout's journal fetched and
//! kept read-only under `.walj/remotes/<id>/` (docs/sync.md).
//!
//! - [`identity`]: the journal id (`.walj/sync/id`), its name (`host:path`), the machine id.
//! - [`manifest`]: `manifest.json`, what a published commit says about itself.
//! - [`publish`]: the journal cut into append-only segments, images as tree entries, the commit.
//! - [`transport`]: the user's `git` command (fetch / push with explicit refspecs and a lease).
//! - [`accept`]: fetched refs checked (fast-forward or a new epoch) and materialised.
//! - [`remotes`]: other journals read back for `recover`, `log`, `sessions`, `diff`.
//! - [`run`]: one `walj sync` (or `--status`) from start to end.
//! - [`seal`]: encrypted syncs (`[sync] recipients` / `passphrase`): the data key, `key.age`.
//! - [`transcripts`]: the transcripts' safe copies, secrets removed, in segments.
//! - [`resume`]: `walj sessions resume` of another machine's session (its transcript placed
//!   where this machine's Claude Code finds it).
//! - [`triage`]: `mark --done` / `handoff` on another machine's entries, and their way back.
//! - [`note`]: the SessionStart counts of other machines' unresolved entries.
//! - [`auto`]: `[sync] auto`, a detached sync after Stop and SessionEnd.
//!
//! walj works in its own bare repository `.walj/sync/repo.git` (git2 for local object work),
//! never in the user's `.git`; its objects list walj's store as a git alternate, so plain-text
//! images are pushed without being copied (encrypted ones are written into it).

pub mod accept;
pub mod auto;
pub mod elsewhere;
pub mod identity;
pub mod manifest;
pub mod note;
pub mod publish;
pub mod remotes;
pub mod resume;
pub mod run;
pub mod seal;

pub mod transcripts;
pub mod transport;
pub mod triage;

use std::io;
use std::path::PathBuf;

use crate::project::Project;

pub(crate) use run::sync;
pub(crate) use run::{SyncOptions, SyncReport};

/// Where every journal's ref lives on the remote (and, in walj's repository, what this
/// checkout last pushed).
pub(crate) const JOURNALS: &str = "refs/walj/journals/";
/// What the last fetch brought, as is (walj's repository only).
pub(crate) const FETCHED: &str = "refs/walj/fetched/";
/// Per other journal, the head that was checked and materialised.
pub(crate) const ACCEPTED: &str = "refs/walj/accepted/";
/// A commit being pushed: set before the push, so a sync killed after the remote took it
/// recognises it on the next run.
pub(crate) const PENDING: &str = "refs/walj/pending/";
/// Every commit this checkout ever tried to push and has not seen land yet
/// (`refs/walj/sent/<id>/<oid>`): a push killed mid-way may still complete after a later
/// sync began (the `git push` child outlives a killed walj), and its commit is still ours.
pub(crate) const SENT: &str = "refs/walj/sent/";

/// The published format (`manifest.format`): 1 in plain text, 2 when sealed (encrypted
/// objects; a walj that reads only 1 refuses it rather than show ciphertext).
pub(crate) const FORMAT: u32 = 1;
pub(crate) const FORMAT_SEALED: u32 = 2;

/// The files of `walj sync` in one checkout.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `.walj/sync`
    pub dir: PathBuf,
    /// `.walj/sync/repo.git`: walj's own bare repository.
    pub repo: PathBuf,
    /// `<state dir>/sync/id`: this journal's id, where git never carries it
    /// ([`crate::project::trust::state_dir`]; `.walj/sync/id` before, [`identity::migrate`]).
    pub id: PathBuf,
    /// `.walj/sync/id`, where walj kept the id before: moved once, never read otherwise.
    pub legacy_id: PathBuf,
    /// `.walj/sync/lock`: one sync at a time per checkout.
    pub lock: PathBuf,
    /// `<state dir>/sync/consent`: remote URLs the user agreed to publish to in plain text
    /// (a consent git could carry would be anyone's).
    pub consent: PathBuf,
    /// `.walj/sync/consent`, where walj kept it before (moved once).
    pub legacy_consent: PathBuf,
    /// `.walj/sync/key`: this journal's data key (encrypted syncs).
    pub key: PathBuf,
    /// `.walj/sync/keys/<id>`: other journals' data keys, once opened.
    pub keys: PathBuf,
    /// `.walj/remotes`: other journals, one folder per id.
    pub remotes: PathBuf,
    /// `.walj/cache/remotes`: the fold snapshot and id index of each copy, one folder per id
    /// (caches, outside the copies' folders, which are sync's; [`remotes`]).
    pub caches: PathBuf,
    /// `.walj/store`
    pub store: PathBuf,
}

impl Paths {
    pub(crate) fn new(project: &Project) -> Paths {
        let dir = project.dir.join("sync");
        let own = crate::project::trust::state_dir(&project.root).map_or_else(|| dir.clone(), |s| s.join("sync"));
        Paths {
            repo: dir.join("repo.git"),
            id: own.join("id"),
            legacy_id: dir.join("id"),
            lock: dir.join("lock"),
            consent: own.join("consent"),
            legacy_consent: dir.join("consent"),
            key: dir.join("key"),
            keys: dir.join("keys"),
            remotes: project.dir.join("remotes"),
            caches: project.dir.join("cache").join("remotes"),
            store: project.store_dir(),
            dir,
        }
    }
}

/// Why a sync did not complete. Every variant is one line for the user; none of them leaves
/// the journal, the store or the copies of other journals changed.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// No remote, not a git repository, a remote that cannot be reached.
    #[error("{0}")]
    Remote(String),
    /// The remote refused the push, or a ref there is not what it should be.
    #[error("{0}")]
    Refused(String),
    /// The user did not agree to publish (or could not be asked).
    #[error("{0}")]
    NotConfirmed(String),
    /// Another `walj sync` runs in this checkout.
    #[error("another `walj sync` is running in this checkout; nothing was done")]
    Busy,
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    #[error("walj's sync repository: {0}")]
    Git(#[from] git2::Error),
}

impl SyncError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> SyncError {
        let what = what.into();
        move |source| SyncError::Io { what, source }
    }
}

/// Opens (creating it when missing) walj's bare repository, with walj's store as an
/// alternate object folder (rewritten each time: the project may have moved).
pub(crate) fn open_repo(paths: &Paths) -> Result<git2::Repository, SyncError> {
    crate::fsutil::create_private_dir(&paths.dir)
        .map_err(SyncError::io(format!("creating {}", paths.dir.display())))?;
    let repo = match git2::Repository::open_bare(&paths.repo) {
        Ok(r) => r,
        Err(_) => git2::Repository::init_bare(&paths.repo)?,
    };
    crate::fsutil::create_private_dir(&paths.store)
        .map_err(SyncError::io(format!("creating {}", paths.store.display())))?;
    let info = paths.repo.join("objects").join("info");
    crate::fsutil::create_private_dir(&info).map_err(SyncError::io(format!("creating {}", info.display())))?;
    let alternates = info.join("alternates");
    let store = std::fs::canonicalize(&paths.store).unwrap_or_else(|_| paths.store.clone());
    let want = format!("{}\n", store.display());
    if std::fs::read_to_string(&alternates).ok().as_deref() != Some(want.as_str()) {
        crate::fsutil::atomic_write(&alternates, want.as_bytes(), Some(0o600))
            .map_err(SyncError::io(format!("writing {}", alternates.display())))?;
        // Reopen so the object database sees the alternate.
        return Ok(git2::Repository::open_bare(&paths.repo)?);
    }
    Ok(repo)
}

/// The id a ref name ends with, when it is a journal id.
pub(crate) fn ref_id<'a>(name: &'a str, prefix: &str) -> Option<&'a str> {
    name.strip_prefix(prefix).filter(|id| identity::is_journal_id(id))
}

/// The commit a ref of walj's repository points to.
pub(crate) fn ref_oid(repo: &git2::Repository, name: &str) -> Option<git2::Oid> {
    repo.find_reference(name).ok().and_then(|r| r.target())
}

/// Points `name` at `oid` (or deletes it with `None`).
pub(crate) fn set_ref(repo: &git2::Repository, name: &str, oid: Option<git2::Oid>) -> Result<(), SyncError> {
    match oid {
        Some(o) => {
            repo.reference(name, o, true, "walj sync")?;
        }
        None => {
            if let Ok(mut r) = repo.find_reference(name) {
                r.delete()?;
            }
        }
    }
    Ok(())
}

/// Lock files left in walj's repository by a sync killed while it moved a ref. Only walj
/// writes refs there, and only under `.walj/sync/lock`, which the caller holds: any lock
/// file found is stale.
pub(crate) fn remove_stale_locks(paths: &Paths) {
    fn walk(dir: &std::path::Path) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p);
            } else if p.extension().is_some_and(|x| x == "lock") {
                let _ = std::fs::remove_file(&p);
            }
        }
    }
    walk(&paths.repo.join("refs").join("walj"));
    let _ = std::fs::remove_file(paths.repo.join("packed-refs.lock"));
}

/// Records what a fetch found as `refs/walj/fetched/*` (refs gone from the remote are
/// removed; journals whose fetch failed keep their previous ref).
pub(crate) fn record_fetched(repo: &git2::Repository, f: &transport::Fetched) -> Result<(), SyncError> {
    let mut keep = std::collections::HashSet::new();
    for (name, oid) in &f.refs {
        let Some(tail) = name.strip_prefix(JOURNALS) else { continue };
        // A tail git would not take as a ref name is reported by its absence.
        let local = format!("{FETCHED}{tail}");
        if !git2::Reference::is_valid_name(&local) {
            continue;
        }
        let oid = git2::Oid::from_str(oid)?;
        if ref_oid(repo, &local) != Some(oid) {
            set_ref(repo, &local, Some(oid))?;
        }
        keep.insert(local);
    }
    keep.extend(f.failed.iter().map(|(t, _)| format!("{FETCHED}{t}")));
    let mut stale = Vec::new();
    for r in repo.references_glob(&format!("{FETCHED}*"))? {
        if let Ok(name) = r?.name()
            && !keep.contains(name)
        {
            stale.push(name.to_string());
        }
    }
    for name in stale {
        set_ref(repo, &name, None)?;
    }
    Ok(())
}
