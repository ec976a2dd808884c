//! What the triage actions share: id lookup, state and liveness checks, images from the
//! store, the disk as it is now, and the records they append.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::Config;
use crate::fold::{Entry, EntryState, Fold, SessionStatus};
use crate::fsutil;
use crate::journal::{Blob, Record, how, key, nocap};
use crate::project::Project;

use super::{Result, TriageError};
use crate::store::{Store, StoreError, blob_id};

/// A new unique action id: time, process and a counter.
pub(crate) fn new_action_id() -> String {
    crate::journal::record::new_id("a")
}

/// The records one command appends share a batch id and carry their order in it.
pub(crate) struct Batch {
    pub id: String,
    next: u64,
}

impl Batch {
    pub(crate) fn new() -> Batch {
        Batch { id: new_action_id(), next: 0 }
    }
    /// Stamps a record with the batch, its position in it and a new action id.
    pub(crate) fn stamp(&mut self, mut r: Record) -> Record {
        if r.action.is_none() {
            r.action = Some(new_action_id());
        }
        let seq = self.next;
        self.next += 1;
        let r = r.with(key::BATCH, self.id.clone()).with(key::SEQ, seq);
        if crate::claude::env::in_tool_call() { r.with(key::ACTOR, crate::claude::env::ACTOR) } else { r }
    }
}

/// The batch and position an action was recorded with (actions of other writers have none).
pub(crate) fn batch_of(r: &Record) -> (Option<&str>, u64) {
    (r.get_str(key::BATCH), r.extra.get(key::SEQ).and_then(Value::as_u64).unwrap_or(0))
}

/// Finds an entry by id or unique prefix, with a message that says what to do next.
pub(crate) fn find_entry<'a>(fold: &'a Fold, prefix: &str) -> Result<&'a Entry> {
    fold.find(prefix).map_err(|e| match e {
        crate::fold::IdError::Unknown(_) => {
            TriageError::Failed(format!("{e}; `walj log` lists the entries and their ids"))
        }
        crate::fold::IdError::Ambiguous { .. } => TriageError::Failed(format!("{e}; give more characters of the id")),
    })
}

/// Finds every id (deduplicated, in the order given); all unknown ids are reported together.
pub(crate) fn find_entries<'a>(fold: &'a Fold, ids: &[String]) -> Result<Vec<&'a Entry>> {
    if ids.is_empty() {
        return Err(TriageError::Refused("no entry given; name entries by id (`walj log` lists them)".to_string()));
    }
    let mut out: Vec<&Entry> = Vec::new();
    let mut errors = Vec::new();
    for id in ids {
        match find_entry(fold, id) {
            Ok(e) => {
                if !out.iter().any(|o| o.id == e.id) {
                    out.push(e);
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !errors.is_empty() {
        return Err(TriageError::Refused(problems(&errors)));
    }
    Ok(out)
}

/// One error out of several problems, saying nothing was changed.
pub(crate) fn problems(list: &[String]) -> String {
    if list.len() == 1 {
        return format!("{}\nNothing was changed.", list[0]);
    }
    let mut s = String::from("nothing was changed:");
    for p in list {
        s.push_str("\n  - ");
        s.push_str(&p.replace('\n', "\n    "));
    }
    s
}

/// A timestamp for people: `2026-03-23 09:43:02 UTC`.
pub(crate) fn when(ts: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(ts) {
        Ok(t) => t.with_timezone(&chrono::Utc).format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        Err(_) => ts.to_string(),
    }
}

/// Why a user action cannot act on `e` again: it was resolved by an earlier action.
pub(crate) fn already_resolved(fold: &Fold, e: &Entry) -> Option<String> {
    let a = e.last_action()?;
    let what = match a.how.as_str() {
        how::DONE => "marked done".to_string(),
        how::REVERTED => "reverted".to_string(),
        how::HANDED_BACK => "handed back to Claude".to_string(),
        other => format!("resolved ({other})"),
    };
    Some(format!(
        "{} ({}) was already {what} at {}; `walj undo {}` reopens it",
        fold.ids.short(&e.id),
        e.path,
        when(&a.ts),
        fold.ids.short(&e.id)
    ))
}

/// Refuses entries of a live session unless forced.
pub(crate) fn check_live(fold: &Fold, e: &Entry, force: bool) -> Result<(), String> {
    if e.still_running {
        // Not in the journal yet (recorded once the command stops): nothing to act on, even forced.
        return Err(format!(
            "{} ({}) comes from a Bash command that never finished and still runs (orphaned when Claude Code stopped): \
             its change is not final. Stop the command (`walj procs` lists it) or wait, then try again",
            fold.ids.short(&e.id),
            e.path
        ));
    }
    if force {
        return Ok(());
    }
    match fold.session(&e.session) {
        Some(s) if s.status() == SessionStatus::Live => Err(format!(
            "{} ({}) belongs to session {}, which is still live: {} may still be working on it. Pass --force to act anyway",
            fold.ids.short(&e.id),
            e.path,
            fold.ids.session(&s.session),
            s.agent().label()
        )),
        _ => Ok(()),
    }
}

/// A record about entry `e` (same id, path, event, tool and session).
pub(crate) fn entry_record(op_name: &str, e: &Entry) -> Record {
    let mut r = Record::new(op_name, &e.session);
    if r.sid.is_empty() {
        r.sid = e.sid.clone();
    }
    r.id = e.id.clone();
    r.path = e.path.clone();
    r.event = e.event.clone();
    if !e.tool.is_empty() {
        r.tool = Some(e.tool.clone());
    }
    r
}

/// The file at a path now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Disk {
    Absent,
    File(Vec<u8>),
}

impl Disk {
    pub(crate) fn bytes(&self) -> Option<&[u8]> {
        match self {
            Disk::Absent => None,
            Disk::File(b) => Some(b),
        }
    }
    pub(crate) fn blob(&self) -> Blob {
        match self {
            Disk::Absent => Blob::Absent,
            Disk::File(b) => Blob::Id(blob_id(b)),
        }
    }
    pub(crate) fn from_option(b: Option<Vec<u8>>) -> Disk {
        b.map_or(Disk::Absent, Disk::File)
    }
}

/// Reads the file at `abs` (`rel` for messages); a folder, a symlink or another kind of
/// file is an error: walj only restores regular files.
pub(crate) fn read_disk(abs: &Path, rel: &str) -> Result<Disk, String> {
    match fs::symlink_metadata(abs) {
        Ok(m) if m.is_dir() => Err(format!("{rel} is now a directory; walj only restores files")),
        Ok(m) if m.file_type().is_symlink() => {
            Err(format!("{rel} is now a symbolic link; walj does not replace links"))
        }
        Ok(m) if !m.is_file() => Err(format!("{rel} is not a regular file")),
        Ok(_) => crate::fsutil::read_regular(abs).map(Disk::File).map_err(|e| format!("reading {rel}: {e}")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Disk::Absent),
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
            Err(format!("a parent of {rel} is now a file, not a folder"))
        }
        Err(e) => Err(format!("reading {rel}: {e}")),
    }
}

/// Refuses writing where the file or its folder is read-only (checked by mode bits, so
/// it holds for root too).
pub(crate) fn check_writable(abs: &Path, rel: &str, disk: &Disk) -> Result<(), String> {
    if let Disk::File(_) = disk
        && let Ok(m) = fs::metadata(abs)
        && m.permissions().readonly()
    {
        return Err(format!("{rel} is read-only; make it writable (chmod u+w {rel}) and try again"));
    }
    let mut dir = abs.parent();
    while let Some(d) = dir {
        match fs::metadata(d) {
            Ok(m) => {
                if m.permissions().readonly() {
                    return Err(format!(
                        "the folder {} is read-only; make it writable (chmod u+w) and try again",
                        d.display()
                    ));
                }
                return Ok(());
            }
            Err(_) => dir = d.parent(),
        }
    }
    Ok(())
}

/// An image named by a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Image {
    /// The file did not exist.
    Absent,
    Bytes(Vec<u8>),
    /// Known by id (or not at all) but its bytes are not available: why.
    Unknown(String),
}

impl Image {
    pub(crate) fn same_as(&self, disk: &Disk) -> bool {
        match (self, disk) {
            (Image::Absent, Disk::Absent) => true,
            (Image::Bytes(a), Disk::File(b)) => a == b,
            _ => false,
        }
    }
    pub(crate) fn into_option(self) -> Option<Vec<u8>> {
        match self {
            Image::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// Reads objects: the store first, then the project's git objects (ids are git blob ids).
pub(crate) struct Objects<'a> {
    project: &'a Project,
    store: Store,
    repo: Option<Option<git2::Repository>>,
    max_bytes: Option<u64>,
}

impl<'a> Objects<'a> {
    pub(crate) fn new(project: &'a Project) -> Objects<'a> {
        Objects { project, store: Store::new(project.store_dir()), repo: None, max_bytes: None }
    }

    /// Stores bytes (before an overwrite), naming the store in the error, and reads them
    /// back: an object already stored under their id may be damaged (the store does not
    /// rewrite existing ids), and these bytes may be about to exist nowhere else.
    pub(crate) fn put(&self, bytes: &[u8]) -> Result<String> {
        let err = |e: StoreError| TriageError::Failed(format!("saving the current bytes into the store: {e}"));
        let id = self.store.put(bytes).map_err(err)?;
        match self.store.get(&id) {
            Ok(_) => Ok(id),
            Err(StoreError::Corrupt { .. }) => {
                let path = self.store.object_path(&id);
                fs::remove_file(&path).map_err(|e| {
                    TriageError::Failed(format!("replacing the damaged store object {}: {e}", path.display()))
                })?;
                self.store.put(bytes).map_err(err)?;
                self.store.get(&id).map_err(err)?;
                Ok(id)
            }
            Err(e) => Err(err(e)),
        }
    }

    /// The bytes of object `id`, when the store or git has them.
    pub(crate) fn get(&mut self, id: &str) -> Result<Option<Vec<u8>>, String> {
        // An image a journal line carries and the store lacks: put there from the line the
        // line index names (or, when no line carries it, the store told not to search the
        // journal for it), before the read below would search the journal.
        crate::fold::located::keep_carried(&self.project.journal, &self.store, id);
        match self.store.get(id) {
            Ok(b) => return Ok(Some(b)),
            Err(StoreError::Missing(_)) => {}
            Err(e) => return Err(e.to_string()),
        }
        let repo = self.repo.get_or_insert_with(|| git2::Repository::open(&self.project.root).ok());
        let Some(repo) = repo else { return Ok(None) };
        let Ok(oid) = git2::Oid::from_str(id) else { return Ok(None) };
        match repo.find_blob(oid) {
            Ok(b) => Ok(Some(b.content().to_vec())),
            Err(_) => Ok(None),
        }
    }

    fn cap(&mut self) -> u64 {
        *self.max_bytes.get_or_insert_with(|| {
            Config::load(&self.project.config_path())
                .map(|c| c.capture.max_bytes)
                .unwrap_or(crate::config::DEFAULT_MAX_BYTES)
        })
    }

    /// Resolves a record's image. `disk` supplies the bytes when its id matches (images
    /// over the capture cap are recorded by id only).
    pub(crate) fn image(&mut self, blob: &Option<Blob>, nocap: Option<&str>, what: &str, disk: Option<&Disk>) -> Image {
        let id = match blob {
            None => return Image::Unknown(format!("no {what} was recorded")),
            Some(Blob::Absent) => return Image::Absent,
            Some(Blob::Id(id)) => id,
        };
        if let Some(Disk::File(b)) = disk
            && blob_id(b) == *id
        {
            return Image::Bytes(b.clone());
        }
        match self.get(id) {
            Ok(Some(b)) => Image::Bytes(b),
            Ok(None) => Image::Unknown(self.why_missing(id, nocap, what)),
            Err(e) => Image::Unknown(format!("the {what} is unreadable: {e}")),
        }
    }

    /// Why object `id` is not available, from the record's `nocap`.
    pub(crate) fn why_missing(&mut self, id: &str, nocap: Option<&str>, what: &str) -> String {
        let short = crate::fold::abbrev(id, 10);
        match nocap {
            Some(nocap::TOO_LARGE) => {
                format!("the {what} ({short}) was not captured: over the {} cap", human(self.cap()))
            }
            Some(nocap::NEVER_CAPTURE) => {
                format!("the {what} ({short}) was not captured: the path matches a never-capture pattern")
            }
            Some(nocap::DIRECTORY) => format!("the {what} was a directory"),
            Some(other) => format!("the {what} ({short}) was not captured ({other})"),
            None if self.store.pending_unavailable(id) => format!(
                "the {what} ({short}) is unavailable: it was pending its copy from git's objects, and git no \
                 longer had it when the copy ran (a `git gc` in between?)"
            ),
            None => format!("the {what} ({short}) is missing from the store"),
        }
    }
}

/// `8 MiB`, `500 KiB`, `100 bytes`.
pub(crate) fn human(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
    } else if n >= 1 << 10 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// Writes and syncs `bytes` next to the project file `rel` (creating its folder when
/// missing), to be renamed into place by `commit` once the caller has checked the file one
/// last time. The folder is opened beneath the root through no symbolic link, refusing
/// `.walj/` and git's folders unless `scope` lets a `.git` file through
/// ([`Project::write_dir`]): the file lands in the folder checked, whatever the path becomes.
/// Keeps the permissions of the file it replaces, else gives `mode` when known; `exec` then
/// sets or clears the executable bits (an entry's recorded mode given back).
pub(crate) fn stage_write(
    project: &Project,
    scope: crate::project::WriteScope,
    rel: &str,
    bytes: &[u8],
    mode: Option<u32>,
    exec: Option<bool>,
) -> Result<fsutil::Staged> {
    stage_write_in(&mut Folders::default(), project, scope, rel, bytes, mode, exec)
}

/// `mode` with its executable bits set (where it is readable, as git checks out `100755`)
/// or cleared, when its owner's bit (the one entries record) is not already so: a mode whose
/// owner's bit already matches is kept as it is (`0754` stays `0754`).
pub(crate) fn with_exec(mode: u32, exec: bool) -> u32 {
    match (mode & 0o100 != 0, exec) {
        (false, true) => mode | (mode & 0o444) >> 2,
        (true, false) => mode & !0o111,
        _ => mode,
    }
}

/// The folders a batch of staged writes holds open, one descriptor per folder however many
/// files it stages there (20,000 staged files of one folder would otherwise hold 20,000).
#[derive(Default)]
pub(crate) struct Folders {
    open: HashMap<(String, crate::project::WriteScope), std::sync::Arc<fsutil::Dir>>,
}

/// [`stage_write`], sharing the folder's open descriptor with the batch's other writes there.
pub(crate) fn stage_write_in(
    folders: &mut Folders,
    project: &Project,
    scope: crate::project::WriteScope,
    rel: &str,
    bytes: &[u8],
    mode: Option<u32>,
    exec: Option<bool>,
) -> Result<fsutil::Staged> {
    let refused = |e| match e {
        crate::project::WriteError::Refused(why) => TriageError::Refused(format!("refused: {why}")),
        e => TriageError::Failed(format!("creating the folder of {rel}: {e}")),
    };
    let parent = rel.rsplit_once('/').map_or("", |(p, _)| p).to_string();
    let (dir, name) = match folders.open.get(&(parent.clone(), scope)) {
        // The path is checked as `write_dir` checks it; only the folder's descriptor is shared.
        Some(d) => (d.clone(), project.write_dir_checked(rel, scope).map_err(refused)?),
        None => {
            let (dir, name) = project.write_dir(rel, scope, true).map_err(refused)?;
            folders.open.insert((parent, scope), dir.clone());
            (dir, name)
        }
    };
    let mode = match dir.kind(&name) {
        Ok(fsutil::beneath::Kind::File { mode, .. }) => Some(mode),
        _ => mode,
    };
    let mode = match (mode, exec) {
        (Some(m), Some(x)) => Some(with_exec(m, x)),
        // A new file: what a plain create gives (0666 less the umask), executable when asked.
        (None, Some(true)) => Some(0o755),
        (m, _) => m,
    };
    fsutil::stage_in(dir, &name, bytes, mode).map_err(|e| TriageError::Failed(format!("writing {rel}: {e}")))
}

/// The record appended before a revert or an undo overwrites or deletes anything: it
/// names the bytes about to be overwritten (`before`, already in the store) and those
/// about to be written (`after`), so that whatever happens next (a crash before the
/// `resolved` or `undo` record), the journal still names them. Folds to nothing.
pub(crate) fn capture_record(e: &Entry, what: &str, action: Option<&str>, before: &Blob, after: &Blob) -> Record {
    let mut r = entry_record(crate::journal::op::AUDIT, e);
    r.event = what.to_string();
    r.kind = Some(crate::journal::record::kind::CAPTURE.to_string());
    r.action = action.map(str::to_string);
    r.before = Some(before.clone());
    r.after = Some(after.clone());
    r
}

/// The record naming bytes another program wrote while a revert or an undo (`what`) of `e`
/// ran, found in what it swapped out and stored (`kept`): the journal names them, so they
/// stay in the store (compaction keeps named objects) and `walj log` readers can find them.
pub(crate) fn concurrent_record(e: &Entry, what: &str, action: Option<&str>, kept: &str) -> Record {
    let mut r = entry_record(crate::journal::op::AUDIT, e);
    r.event = what.to_string();
    r.kind = Some(crate::journal::record::kind::CONCURRENT_WRITE.to_string());
    r.action = action.map(str::to_string);
    r.before = Some(Blob::Id(kept.to_string()));
    r
}

/// The disk as a batch of actions sees it: files already (virtually) written by earlier
/// actions of the same batch, else the real disk.
#[derive(Default)]
pub(crate) struct Overlay {
    files: HashMap<PathBuf, Disk>,
}

impl Overlay {
    pub(crate) fn read(&self, abs: &Path, rel: &str) -> Result<Disk, String> {
        match self.files.get(abs) {
            Some(d) => Ok(d.clone()),
            None => read_disk(abs, rel),
        }
    }
    pub(crate) fn set(&mut self, abs: &Path, d: Disk) {
        self.files.insert(abs.to_path_buf(), d);
    }
    /// True when no earlier step of the batch changed `abs`: the disk is what is there.
    pub(crate) fn untouched(&self, abs: &Path) -> bool {
        !self.files.contains_key(abs)
    }
}

/// Entry states a mark or a hand-back can act on.
pub(crate) fn settled_reason(fold: &Fold, e: &Entry) -> Option<String> {
    match e.state() {
        EntryState::Persisted => Some(format!(
            "{} ({}) is persisted: its change was verified on disk, nothing is left to resolve",
            fold.ids.short(&e.id),
            e.path
        )),
        EntryState::NotApplied => Some(format!(
            "{} ({}) was not applied: the tool never changed the file, nothing is left to resolve",
            fold.ids.short(&e.id),
            e.path
        )),
        _ => None,
    }
}

/// Appends records durably (one write), naming the journal in the error.
pub(crate) fn append(project: &Project, records: &[Record]) -> Result<()> {
    project.ensure_dir().map_err(|err| TriageError::Failed(format!("creating {}: {err}", project.dir.display())))?;
    crate::journal::JournalWriter::new(&project.journal)
        .append_all(records)
        .map_err(|err| TriageError::Failed(format!("appending to {}: {err}", project.journal.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(human(8 * 1024 * 1024), "8 MiB");
        assert_eq!(human(3 * 1024 * 1024 / 2), "1.5 MiB");
        assert_eq!(human(2048), "2 KiB");
        assert_eq!(human(64), "64 bytes");
    }

    #[test]
    fn action_ids_are_unique_and_batches_count() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| new_action_id()).collect();
        assert_eq!(ids.len(), 1000);
        let mut b = Batch::new();
        let r0 = b.stamp(Record::new("resolved", "s"));
        let r1 = b.stamp(Record::new("resolved", "s"));
        assert_eq!(batch_of(&r0), (Some(b.id.as_str()), 0));
        assert_eq!(batch_of(&r1), (Some(b.id.as_str()), 1));
        assert_ne!(r0.action, r1.action);
    }

    #[test]
    fn several_problems_read_as_one_list() {
        assert_eq!(problems(&["x".into()]), "x\nNothing was changed.");
        assert_eq!(problems(&["x".into(), "y\nz".into()]), "nothing was changed:\n  - x\n  - y\n    z");
    }

    #[test]
    fn timestamps_read_as_utc() {
        assert_eq!(when("2026-03-23T09:43:02.123Z"), "2026-03-23 09:43:02 UTC");
        assert_eq!(when("garbage"), "garbage");
    }
}
