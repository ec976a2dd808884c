//! Putting a revert's or an undo's change in place so that no concurrent write is lost
//! (issue 13, item 8).
//!
//! The plan was made against the file as it was (`expected`, already in the store). Another
//! program may write the file between the last check and the write. So:
//! - **a file that exists** is swapped with the staged file in one step (Linux
//!   `renameat2(RENAME_EXCHANGE)`); what comes out is exactly what was in place at that
//!   instant. If it is not what the plan saw, it goes into the store and the swap is taken
//!   back: the other program's file is in place again (the same file, so a program still
//!   holding it open keeps writing to the file at the path), nothing of the action is
//!   written, and the caller tells the user. Should something have been written over the
//!   action's file in the instant between the two swaps, that too is stored and put back in
//!   place (the newest write wins the path, every other version is in the store).
//! - **a file that should not exist** is created with `RENAME_NOREPLACE`: a file created
//!   meanwhile is never replaced.
//! - **a delete** first renames the file aside into `.walj/staging/`, then compares what was
//!   moved with the plan; a different file is stored and moved back (never over a newer one).
//!
//! Taking the action back rather than keeping it is the safe choice: the action was worked
//! out against bytes that are gone, the other program believes its write is in place, and
//! the user runs the action again against the new bytes (a revert then merges). Only when the
//! swap cannot be taken back does the action stay; the bytes it replaced are then its
//! record's `before`, so `walj undo` brings them back.
//!
//! Where the exchange is missing (other systems; `EINVAL`/`ENOSYS`/`EOPNOTSUPP` from a file
//! system without it; `WALJ_PORTABLE_RENAME=1`) the caller's check right before a plain
//! rename is all there is: a write landing between the two is replaced unseen.

use std::io;
use std::path::Path;

use crate::fold::{Entry, abbrev};
use crate::fsutil::swap::{Found, NewFile, Support};
use crate::fsutil::{self, Staged};
use crate::project::Project;

use super::action::{Disk, Objects, append, concurrent_record};
use super::{Result, TriageError};

/// What putting a change in place did.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Placed {
    /// The change is in place.
    pub written: bool,
    /// The change is in place but replaced other bytes than the plan saw (the swap could not
    /// be taken back): their blob id, stored; the record's `before`.
    pub overwrote: Option<String>,
    /// Bytes another program wrote while the action ran, found in what was swapped out and
    /// stored: blob ids, in the order found.
    pub kept: Vec<String>,
    /// What happened, for people, when it is not simply "written".
    pub note: Option<String>,
}

impl Placed {
    fn written() -> Placed {
        Placed { written: true, ..Placed::default() }
    }
    fn untouched(note: String) -> Placed {
        Placed { note: Some(note), ..Placed::default() }
    }
}

/// `a1b2c3d4e5, f6a7b8c9d0`.
pub(crate) fn short_ids(ids: &[String]) -> String {
    ids.iter().map(|id| abbrev(id, 10)).collect::<Vec<_>>().join(", ")
}

/// [`Staged::exchange`]; tests run a step of "another program" right after each one.
fn exchange(staged: &mut Staged) -> io::Result<Support> {
    let r = staged.exchange();
    #[cfg(test)]
    if matches!(r, Ok(Support::Done)) {
        tests::AFTER_EXCHANGE.with(|f| {
            if let Some(f) = f.borrow_mut().as_mut() {
                f(staged.dest());
            }
        });
    }
    r
}

/// Stores bytes swapped out of `rel`; on failure the temp file that holds them stays.
fn store(objects: &Objects, bytes: &[u8], staged: Staged, rel: &str) -> Result<(String, Staged)> {
    match objects.put(bytes) {
        Ok(id) => Ok((id, staged)),
        Err(err) => {
            let tmp = staged.keep();
            Err(TriageError::Failed(format!(
                "{rel} changed at the same time, and its new bytes could not be stored ({err}); they are kept in {}",
                tmp.display()
            )))
        }
    }
}

/// Reads what a swap put at the temp name; on failure the temp file stays.
fn swapped_out(staged: Staged, rel: &str) -> Result<(Found, Staged)> {
    match staged.swapped_out() {
        Ok(f) => Ok((f, staged)),
        Err(err) => {
            let tmp = staged.keep();
            Err(TriageError::Failed(format!(
                "reading what was swapped out of {rel} ({err}); it is kept in {}",
                tmp.display()
            )))
        }
    }
}

/// Removes the temp name once its bytes are accounted for; a failure to remove it is said,
/// never an error (the change itself happened).
fn finish(staged: Staged, mut placed: Placed) -> Placed {
    let tmp = staged.temp_path().to_path_buf();
    if let Err(err) = staged.remove_swapped() {
        let left = format!("(could not remove {}: {err})", tmp.display());
        placed.note = Some(match placed.note {
            Some(n) => format!("{n} {left}"),
            None => left,
        });
    }
    placed
}

/// What to do about a write Windows refused because another program holds the file open
/// (an editor, an indexer, a virus scanner): the file is untouched and the action can be run
/// again once it is closed. Empty elsewhere.
fn held_hint(err: &io::Error) -> &'static str {
    // ERROR_ACCESS_DENIED (5), ERROR_SHARING_VIOLATION (32), ERROR_LOCK_VIOLATION (33).
    if cfg!(windows) && matches!(err.raw_os_error(), Some(5 | 32 | 33)) {
        " (another program may hold the file open: close it and run the command again; the file was not changed)"
    } else {
        ""
    }
}

/// Puts `staged` (bytes `ours`) at `rel`, which the plan saw as `expected`; `doing` is
/// "reverting" or "undoing". The caller checked the file right before.
pub(crate) fn put_write(
    objects: &Objects,
    mut staged: Staged,
    rel: &str,
    expected: &Disk,
    ours: &[u8],
    doing: &str,
) -> Result<Placed> {
    let failed = |err: io::Error| TriageError::Failed(format!("writing {rel}: {err}{}", held_hint(&err)));
    let expected = match expected {
        Disk::Absent => {
            return match staged.create_new().map_err(failed)? {
                NewFile::Placed => Ok(Placed::written()),
                NewFile::Exists => Ok(Placed::untouched(format!(
                    "{rel} was created while {doing} (another program wrote it at the same time); nothing written to it, the new file stays"
                ))),
                NewFile::Missing => {
                    staged.commit().map_err(failed)?;
                    Ok(Placed::written())
                }
            };
        }
        Disk::File(b) => b,
    };
    match exchange(&mut staged) {
        Ok(Support::Done) => {}
        Ok(Support::Missing) => {
            staged.commit().map_err(failed)?;
            return Ok(Placed::written());
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Ok(Placed::untouched(format!(
                "{rel} was deleted while {doing} (by another program); nothing written to it"
            )));
        }
        Err(err) => return Err(failed(err)),
    }
    // The temp name now holds what was in place at the instant of the swap.
    let (found, staged) = swapped_out(staged, rel)?;
    let mut placed = Placed::default();
    let staged = match &found {
        Found::File(b) if b == expected => {
            placed.written = true;
            return Ok(finish(staged, placed));
        }
        Found::File(b) => {
            let (id, staged) = store(objects, b, staged, rel)?;
            placed.kept.push(id);
            staged
        }
        Found::Other => staged,
    };
    swap_back(objects, staged, rel, found, ours, doing, placed)
}

/// Most exchanges after the first: a program writing the file again and again while walj
/// takes its swap back cannot keep walj swapping forever.
const MAX_SWAPS_BACK: usize = 8;

/// The swap brought out bytes the plan did not see (`found`, stored when a file): takes it
/// back, so the other program's file is in place again.
///
/// Each exchange puts the version held at the temp name in place and brings out what was
/// there; when that is what walj had put there itself, nobody wrote in between and the path
/// holds the newest version: done. Otherwise what came out was written in between, so it is
/// newer: it is stored and the next exchange puts it in place. Every version that comes out
/// is stored, so none is lost whichever way the loop ends.
fn swap_back(
    objects: &Objects,
    mut staged: Staged,
    rel: &str,
    found: Found,
    ours: &[u8],
    doing: &str,
    mut placed: Placed,
) -> Result<Placed> {
    let note = |placed: &Placed| {
        let kept = if placed.kept.is_empty() {
            String::new()
        } else {
            format!("; what it wrote is kept in the store ({})", short_ids(&placed.kept))
        };
        format!(
            "{rel} changed while {doing} (another program wrote it at the same time): the change was taken back and the file holds that program's bytes, nothing of walj's written to it{kept}. Run it again"
        )
    };
    // What walj put at the path with its last exchange, and what the temp name holds.
    let mut at_path = Found::File(ours.to_vec());
    let mut in_tmp = found;
    for round in 0..MAX_SWAPS_BACK {
        match exchange(&mut staged) {
            Ok(Support::Done) => {}
            Ok(Support::Missing) | Err(_) if round > 0 => break,
            Ok(Support::Missing) | Err(_) => {
                // Cannot take the swap back: the action stays, and what it replaced is its
                // record's `before` (in the store), so `walj undo` brings it back.
                return match in_tmp {
                    Found::File(_) => {
                        placed.written = true;
                        placed.overwrote = placed.kept.first().cloned();
                        placed.note = Some(format!(
                            "{rel} changed while {doing} (another program wrote it at the same time) and the change could not be taken back: the bytes it replaced are in the store ({}); `walj undo` brings them back",
                            short_ids(&placed.kept)
                        ));
                        Ok(finish(staged, placed))
                    }
                    Found::Other => {
                        let tmp = staged.keep();
                        Err(TriageError::Failed(format!(
                            "{rel} was replaced by something that is not a file while {doing}, and it could not be put back: it is at {}",
                            tmp.display()
                        )))
                    }
                };
            }
        }
        let (out, s) = swapped_out(staged, rel)?;
        staged = s;
        if out == at_path {
            in_tmp = out;
            break;
        }
        if let Found::File(b) = &out {
            let (id, s) = store(objects, b, staged, rel)?;
            staged = s;
            if !placed.kept.contains(&id) {
                placed.kept.push(id);
            }
        }
        at_path = std::mem::replace(&mut in_tmp, out);
    }
    if in_tmp == Found::Other {
        // Never removed: something that is not a file (a folder…) is not walj's to delete.
        let tmp = staged.keep();
        placed.note =
            Some(format!("{} (what was swapped out is not a file: it is at {})", note(&placed), tmp.display()));
        return Ok(placed);
    }
    placed.note = Some(note(&placed));
    Ok(finish(staged, placed))
}

/// Names in the journal the bytes another program wrote while a `what` ("revert", "undo")
/// of `e` (its `action`) ran, already stored (`kept`).
pub(crate) fn record_kept(
    project: &Project,
    e: &Entry,
    what: &str,
    action: Option<&str>,
    kept: &[String],
) -> Result<()> {
    if kept.is_empty() {
        return Ok(());
    }
    let records: Vec<_> = kept.iter().map(|id| concurrent_record(e, what, action, id)).collect();
    append(project, &records).map_err(|err| {
        TriageError::Failed(format!(
            "{} changed during the {what}; the new bytes are in the store ({}) but could not be recorded: {err:#}",
            e.path,
            short_ids(kept)
        ))
    })
}

/// Where a file about to be deleted is moved first: `.walj/staging/`, else (another file
/// system) beside the file. The staging folder is walj's own, opened by its path.
fn aside_dirs(project: &Project) -> Option<fsutil::Dir> {
    let staging = project.dir.join("staging");
    fsutil::create_private_dir(&staging).ok()?;
    fsutil::Dir::open(&staging).ok()
}

/// The folders above `rel` that its deletion left empty, removed from the deepest up, as git
/// does when it removes a file (`git rm`, a checkout): a folder is no content of its own, so a
/// revert of a command that made `n/e/x.txt` (a folder moved there) leaves no `n/e/` behind,
/// and an undo's write makes it again. Stops at the first folder that is not empty or cannot
/// be removed; never the project's top folder, nor one [`Project::write_dir`] refuses (under
/// `.git`, `.walj/`, through a link). Returns the removed ones, deepest first.
fn prune_empty(project: &Project, scope: crate::project::WriteScope, rel: &str) -> Vec<String> {
    let mut removed = Vec::new();
    let mut at = rel.rfind('/').map(|i| &rel[..i]);
    while let Some(dir) = at {
        let Ok((parent, name)) = project.write_dir(dir, scope, false) else { break };
        // Only an empty folder goes (`rmdir`): a file written there meanwhile keeps it.
        if parent.remove(&name, true).is_err() {
            break;
        }
        let _ = parent.sync();
        removed.push(dir.to_string());
        at = dir.rfind('/').map(|i| &dir[..i]);
    }
    removed
}

/// Deletes the project file `rel`, which the plan saw as `expected`: moves it aside, compares
/// what was moved with the plan, and only then removes it; a different file is stored and
/// moved back. Its folder is opened beneath the root through no link ([`Project::write_dir`],
/// `scope` as for a write), and every rename is relative to it.
pub(crate) fn put_delete(
    project: &Project,
    objects: &Objects,
    scope: crate::project::WriteScope,
    rel: &str,
    expected: &Disk,
    doing: &str,
) -> Result<Placed> {
    let Disk::File(expected) = expected else {
        return Ok(Placed::written()); // nothing there to delete
    };
    let refused = |err: io::Error| TriageError::Refused(format!("deleting {rel}: {err}"));
    let (dir, name) = project.write_dir(rel, scope, false).map_err(|e| match e {
        crate::project::WriteError::Refused(why) => TriageError::Refused(format!("refused: {why}")),
        crate::project::WriteError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => {
            TriageError::Refused(format!("deleting {rel}: its folder is gone"))
        }
        e => TriageError::Failed(format!("deleting {rel}: {e}")),
    })?;
    let aside_name = std::ffi::OsString::from(fsutil::temp_name(Path::new(&name)));
    let staging = aside_dirs(project);
    let mut moved: Option<&fsutil::Dir> = None;
    for aside_dir in staging.iter().chain([&*dir]) {
        match dir.rename(&name, aside_dir, &aside_name) {
            Ok(()) => {
                moved = Some(aside_dir);
                break;
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Ok(Placed::untouched(format!(
                    "{rel} was deleted while {doing} (by another program); nothing to delete"
                )));
            }
            Err(err) if err.kind() == io::ErrorKind::CrossesDevices => continue,
            Err(err) => return Err(refused(err)),
        }
    }
    let Some(aside_dir) = moved else {
        return Err(refused(io::Error::new(io::ErrorKind::CrossesDevices, "no folder to move it aside to")));
    };
    let aside = aside_dir.join(&aside_name);
    let keep_aside = |err: String| {
        TriageError::Failed(format!("deleting {rel}: {err}; what was there is kept in {}", aside.display()))
    };
    let found = match aside_dir.read_regular(&aside_name) {
        Ok(Some(b)) => Found::File(b),
        Ok(None) => Found::Other,
        Err(e) => return Err(keep_aside(e.to_string())),
    };
    let mut placed = Placed::default();
    match &found {
        Found::File(b) if b == expected => {
            aside_dir.remove(&aside_name, false).map_err(|e| keep_aside(e.to_string()))?;
            dir.sync().map_err(|e| TriageError::Failed(format!("syncing the folder of {rel}: {e}")))?;
            placed.written = true;
            let pruned = prune_empty(project, scope, rel);
            if !pruned.is_empty() {
                let list = pruned.join(", ");
                let folders = if pruned.len() == 1 { "folder" } else { "folders" };
                placed.note = Some(format!("removed the {folders} it left empty ({list})"));
            }
            return Ok(placed);
        }
        Found::File(b) => {
            let id = objects
                .put(b)
                .map_err(|e| keep_aside(format!("it changed at the same time, and storing it failed: {e}")))?;
            placed.kept.push(id);
        }
        Found::Other => {}
    }
    // Another program wrote it: move it back, never over a file created since.
    let back = match aside_dir.rename_noreplace(&aside_name, &dir, &name) {
        Ok(Support::Done) => Ok(true),
        Ok(Support::Missing) => match dir.kind(&name) {
            Ok(fsutil::beneath::Kind::Missing) => aside_dir.rename(&aside_name, &dir, &name).map(|()| true),
            _ => Ok(false),
        },
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    };
    let ids = short_ids(&placed.kept);
    match back {
        Ok(true) => {
            let _ = dir.sync();
            let kept =
                if ids.is_empty() { String::new() } else { format!("; what it wrote is kept in the store ({ids})") };
            placed.note = Some(format!(
                "{rel} changed while {doing} (another program wrote it at the same time): it was put back, not deleted{kept}. Run it again"
            ));
        }
        // A newer file took the path meanwhile: it stays; the one moved aside is stored.
        Ok(false) if matches!(found, Found::File(_)) => {
            let _ = aside_dir.remove(&aside_name, false);
            placed.note = Some(format!(
                "{rel} changed twice while {doing} (another program wrote it at the same time): nothing deleted, its newest file stays, and the one walj had moved aside is kept in the store ({ids}). Run it again"
            ));
        }
        Ok(false) | Err(_) => {
            return Err(keep_aside(format!("it changed while {doing} and could not be moved back")));
        }
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::WriteScope;
    use std::cell::RefCell;
    use std::fs;
    use std::path::PathBuf;

    /// A step of "another program", given the destination.
    type Step = Box<dyn FnMut(&Path)>;

    thread_local! {
        /// Run after each exchange of this thread with the destination.
        pub(super) static AFTER_EXCHANGE: RefCell<Option<Step>> = const { RefCell::new(None) };
    }

    /// Runs `f` with `step` as the other program (called with the path after each exchange).
    fn racing<T>(step: impl FnMut(&Path) + 'static, f: impl FnOnce() -> T) -> T {
        AFTER_EXCHANGE.with(|a| *a.borrow_mut() = Some(Box::new(step)));
        let out = f();
        AFTER_EXCHANGE.with(|a| *a.borrow_mut() = None);
        crate::fsutil::swap::force_portable(false);
        out
    }

    /// Writes `bytes` to `path` as editors do: a new file renamed over it.
    fn rename_write(path: &Path, bytes: &[u8]) {
        let tmp = path.with_extension("other.tmp");
        fs::write(&tmp, bytes).unwrap();
        fs::rename(&tmp, path).unwrap();
    }

    // A write landing on walj's file between its swap and the swap back: it is the newest,
    // so it ends in place; the write the first swap found is stored.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_write_between_the_swap_and_the_swap_back_ends_in_place() {
        if crate::fsutil::swap::portable_forced() {
            return;
        }
        let (_d, p, f, s) = planned();
        let objects = Objects::new(&p);
        fs::write(&f, b"first write").unwrap();
        let mut n = 0;
        let placed = racing(
            move |path| {
                n += 1;
                if n == 1 {
                    rename_write(path, b"second write");
                }
            },
            || put_ours(&objects, s),
        );
        assert!(!placed.written, "{placed:?}");
        assert_eq!(fs::read(&f).unwrap(), b"second write");
        let ids = [crate::store::blob_id(b"first write"), crate::store::blob_id(b"second write")];
        assert_eq!(placed.kept, ids);
        assert!(blob_in_store(&p, b"first write") && blob_in_store(&p, b"second write"));
        assert_eq!(fs::read_dir(&p.root).unwrap().count(), 2, "no temp file left");
    }

    // A writer that never stops: walj stops swapping after a bounded number of rounds, and
    // every version that came out is in the store.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_writer_that_never_stops_cannot_keep_walj_swapping() {
        if crate::fsutil::swap::portable_forced() {
            return;
        }
        let (_d, p, f, s) = planned();
        let objects = Objects::new(&p);
        fs::write(&f, b"write 0").unwrap();
        let mut n = 0;
        let placed = racing(
            move |path| {
                n += 1;
                rename_write(path, format!("write {n}").as_bytes());
            },
            || put_ours(&objects, s),
        );
        assert!(!placed.written);
        assert_eq!(placed.kept.len(), MAX_SWAPS_BACK + 1, "{placed:?}");
        for i in 0..=MAX_SWAPS_BACK {
            assert!(blob_in_store(&p, format!("write {i}").as_bytes()), "write {i}");
        }
        // The last write the other program made is on disk.
        assert_eq!(fs::read(&f).unwrap(), format!("write {}", MAX_SWAPS_BACK + 1).as_bytes());
    }

    // The swap cannot be taken back (the exchange fails the second time): the action stays
    // and what it replaced becomes the record's `before`, so undo brings it back.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_swap_that_cannot_be_taken_back_keeps_the_action_and_names_what_it_replaced() {
        if crate::fsutil::swap::portable_forced() {
            return;
        }
        let (_d, p, f, s) = planned();
        let objects = Objects::new(&p);
        fs::write(&f, b"theirs").unwrap();
        let placed = racing(|_| crate::fsutil::swap::force_portable(true), || put_ours(&objects, s));
        assert!(placed.written);
        assert_eq!(fs::read(&f).unwrap(), b"ours");
        let theirs = crate::store::blob_id(b"theirs");
        assert_eq!(placed.overwrote.as_deref(), Some(theirs.as_str()));
        assert!(blob_in_store(&p, b"theirs"));
        assert!(placed.note.unwrap().contains("`walj undo` brings them back"));
    }

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let p = Project::at(root, None);
        p.ensure_dir().unwrap();
        (dir, p)
    }

    /// A revert of `f.txt` planned against "planned", its "ours" staged beside it.
    fn planned() -> (tempfile::TempDir, Project, PathBuf, Staged) {
        let (d, p) = project();
        let f = p.root.join("f.txt");
        fs::write(&f, b"planned").unwrap();
        let s = fsutil::stage(&f, b"ours", None).unwrap();
        (d, p, f, s)
    }

    /// Puts the staged "ours" in place of `f.txt`, as the revert [`planned`] planned it.
    fn put_ours(objects: &Objects, s: Staged) -> Placed {
        put_write(objects, s, "f.txt", &Disk::File(b"planned".to_vec()), b"ours", "reverting").unwrap()
    }

    fn blob_in_store(p: &Project, bytes: &[u8]) -> bool {
        let id = crate::store::blob_id(bytes);
        p.store_dir().join(&id[..2]).join(&id[2..]).is_file()
    }

    #[test]
    fn a_write_lands_when_the_file_is_what_the_plan_saw() {
        let (_d, p, f, s) = planned();
        let objects = Objects::new(&p);
        let placed = put_ours(&objects, s);
        assert_eq!(placed, Placed::written());
        assert_eq!(fs::read(&f).unwrap(), b"ours");
        assert_eq!(fs::read_dir(&p.root).unwrap().count(), 2, "no temp file left (f.txt and .walj)");
    }

    // The window the issue names: the file changes after the last check, before the rename.
    // Staged, then written by "another program", then put in place: the exchange finds the new
    // bytes, stores them and takes the swap back.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_write_landing_after_the_last_check_is_kept_and_the_swap_taken_back() {
        if crate::fsutil::swap::portable_forced() {
            return; // the test switch is set for the whole run: nothing to exchange
        }
        let (_d, p, f, s) = planned();
        let objects = Objects::new(&p);
        fs::write(&f, b"theirs, written after the last check").unwrap();
        let placed = put_ours(&objects, s);
        assert!(!placed.written, "{placed:?}");
        assert_eq!(fs::read(&f).unwrap(), b"theirs, written after the last check");
        assert_eq!(placed.kept, [crate::store::blob_id(b"theirs, written after the last check")]);
        assert!(blob_in_store(&p, b"theirs, written after the last check"));
        let note = placed.note.unwrap();
        assert!(
            note.contains("changed while reverting")
                && note.contains("taken back")
                && note.contains("kept in the store"),
            "{note}"
        );
        assert_eq!(fs::read_dir(&p.root).unwrap().count(), 2, "no temp file left");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_file_created_meanwhile_is_never_replaced() {
        if crate::fsutil::swap::portable_forced() {
            return;
        }
        let (_d, p) = project();
        let objects = Objects::new(&p);
        let f = p.root.join("new.txt");
        let s = fsutil::stage(&f, b"ours", None).unwrap();
        fs::write(&f, b"theirs").unwrap();
        let placed = put_write(&objects, s, "new.txt", &Disk::Absent, b"ours", "reverting").unwrap();
        assert!(!placed.written);
        assert_eq!(fs::read(&f).unwrap(), b"theirs");
        assert!(placed.note.unwrap().contains("was created while reverting"));
    }

    #[test]
    fn a_delete_moves_aside_and_checks_first() {
        let (_d, p) = project();
        let objects = Objects::new(&p);
        let f = p.root.join("gone.txt");
        fs::write(&f, b"planned").unwrap();
        let placed =
            put_delete(&p, &objects, WriteScope::Project, "gone.txt", &Disk::File(b"planned".to_vec()), "reverting")
                .unwrap();
        assert_eq!(placed, Placed::written());
        assert!(!f.exists());
        assert_eq!(fs::read_dir(p.dir.join("staging")).unwrap().count(), 0, "nothing left aside");

        // What is moved aside is not what the plan saw: stored and moved back.
        fs::write(&f, b"theirs").unwrap();
        let placed =
            put_delete(&p, &objects, WriteScope::Project, "gone.txt", &Disk::File(b"planned".to_vec()), "reverting")
                .unwrap();
        assert!(!placed.written);
        assert_eq!(fs::read(&f).unwrap(), b"theirs");
        assert!(blob_in_store(&p, b"theirs"));
        assert!(placed.note.unwrap().contains("it was put back, not deleted"));
        assert_eq!(fs::read_dir(p.dir.join("staging")).unwrap().count(), 0);
    }

    // The fallback (no exchange: other systems, a file system without it, or forced): a plain
    // rename after the caller's check. Forced here through the same switch the binary reads.
    #[test]
    fn the_portable_fallback_writes_with_a_plain_rename() {
        let (_d, p, f, s) = planned();
        let objects = Objects::new(&p);
        let placed = with_portable(|| put_ours(&objects, s));
        assert_eq!(placed, Placed::written());
        assert_eq!(fs::read(&f).unwrap(), b"ours");
        let g = p.root.join("g.txt");
        let s = fsutil::stage(&g, b"new", None).unwrap();
        let placed = with_portable(|| put_write(&objects, s, "g.txt", &Disk::Absent, b"new", "reverting").unwrap());
        assert_eq!(placed, Placed::written());
        assert_eq!(fs::read(&g).unwrap(), b"new");
        // A delete needs no exchange; its move back uses NOREPLACE, else a check and a rename.
        fs::write(&g, b"theirs").unwrap();
        let placed = with_portable(|| {
            put_delete(&p, &objects, WriteScope::Project, "g.txt", &Disk::File(b"new".to_vec()), "reverting").unwrap()
        });
        assert!(!placed.written);
        assert_eq!(fs::read(&g).unwrap(), b"theirs");
    }

    /// Runs `f` on this thread as `WALJ_PORTABLE_RENAME=1` would (the environment itself
    /// is not changed: other tests run beside it).
    fn with_portable<T>(f: impl FnOnce() -> T) -> T {
        crate::fsutil::swap::force_portable(true);
        let out = f();
        crate::fsutil::swap::force_portable(false);
        out
    }
}
