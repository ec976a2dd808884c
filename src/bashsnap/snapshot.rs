//! The sidecar: the working tree as one hook saw it (`.walj/bash/<key>.json`, and the latest as
//! `cache.json`), its file stamps, how it is written (by rename, one write for several names),
//! read and swept, the git index copies a snapshot keeps, and how a Post snapshot is completed
//! from its comparison (`heal` in `super::diff`) so the next one starts whole.

use super::{RACY_NS, SNAP_V, STALE_SECS, SnapError, io_err};
use crate::fsutil;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A file's stat fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub(super) struct Stamp {
    pub(super) m: i64,
    pub(super) c: i64,
    pub(super) s: u64,
    pub(super) i: u64,
}

impl Stamp {
    pub(super) fn of(meta: &fs::Metadata) -> Stamp {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Stamp {
                m: meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec()),
                c: meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec()),
                s: meta.len(),
                i: meta.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let m = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i64);
            Stamp { m, c: 0, s: meta.len(), i: 0 }
        }
    }
    /// Changed so close to `time_ns` that an unchanged stat proves nothing.
    pub(super) fn racy(&self, time_ns: i64) -> bool {
        self.m.max(self.c) + RACY_NS > time_ns
    }
}

/// One file in a snapshot.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub(super) struct FileState {
    /// Git blob id of the content; `None` with `absent` false = not read (cut short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) absent: bool,
    /// Not a regular file nor a link (socket, FIFO, device…): not tracked.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) special: bool,
    /// A symbolic link: its target text (`links::text`); `id` is
    /// [`crate::journal::entry_kind::link_id`] of the target (no store object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) link: Option<String>,
    /// Why the bytes are not in the store (`too_large`, `never_capture`, `cut_short`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) nocap: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) st: Option<Stamp>,
    /// A regular file with its owner's executable bit set (git's mode `100755`), in a snapshot
    /// that records modes ([`Snapshot::modes`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) x: bool,
}

/// Whether a regular file's metadata has its owner's executable bit (git's `100755`).
pub(super) fn is_exec(meta: &fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o100 != 0
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

pub(super) fn is_zero(n: &i64) -> bool {
    *n == 0
}

pub(super) fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub(super) enum Mode {
    #[default]
    Git,
    Scan,
}

/// The index as it was at snapshot time (a hard link or copy under `.walj/bash/`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(super) struct IndexRef {
    /// File name of the saved index under `.walj/bash/`, when saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) copy: Option<String>,
    pub(super) st: Stamp,
}

/// A sidecar: the working tree as one hook saw it.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub(super) struct Snapshot {
    pub(super) v: u32,
    pub(super) session: String,
    pub(super) parent: String,
    #[serde(default)]
    pub(super) command: String,
    #[serde(default)]
    pub(super) background: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) task_id: Option<String>,
    pub(super) mode: Mode,
    /// Unix time of the snapshot, nanoseconds.
    pub(super) time: i64,
    /// Record timestamp of the snapshot (for comparing with journal records).
    #[serde(default)]
    pub(super) ts: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) cut_short: bool,
    /// Every file the snapshot had to list is listed: `cut_short` then means only that some
    /// files' bytes were not read yet (`nocap: cut_short`), which the next snapshot completes.
    /// False (and in sidecars older than this field) with `cut_short`: files past the cut are
    /// missing from `files`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) listed: bool,
    /// Milliseconds the snapshot took (from the hook's first look at the checkout, which may
    /// be well before `time`: a wait for the watcher).
    #[serde(default)]
    pub(super) ms: u64,
    /// Unix time, nanoseconds, when the snapshot had finished looking at the tree: a change
    /// with a later ctime was made after it looked. 0 in sidecars older than the field.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) seen: i64,
    /// Dirty and untracked files (git) or every file walked (scan).
    pub(super) files: BTreeMap<String, FileState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) index: Option<IndexRef>,
    /// Start time (clock ticks since boot) of the PreToolUse hook that took the snapshot:
    /// processes the command started began at or after it (see [`killed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) hook_start: Option<u64>,
    /// The subagent that runs the command (`agent_id`, `agent_type`): its derived entries
    /// carry it, so they group under the subagent after a crash too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) agent_type: Option<String>,
    /// The checkout watcher's clock, taken before this snapshot looked at the tree
    /// (src/watch.rs): the next snapshot asks what changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) clock: Option<crate::watch::Clock>,
    /// How it was taken: [`WATCHED`] (only the paths the watcher named were looked at), or why
    /// it was a full scan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) watch: Option<String>,
    /// Nested repositories (folders with their own `.git`) whose files this snapshot lists
    /// because they were made since its base: the next snapshot no longer walks them, so a
    /// snapshot the watcher makes from this one drops their files too, as a full scan would.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) nested: Vec<String>,
    /// Its files' `x` (the executable bit) is recorded: false in sidecars older than the field,
    /// whose files' modes are unknown (never compared).
    #[serde(default, skip_serializing_if = "is_false")]
    pub(super) modes: bool,
}

/// Keeps `now` at `path` as the new baseline of `base`'s background command (it may still
/// change files); the index `base` saved is removed once `now` has its own.
pub(super) fn rebase(
    dir: &Path,
    path: &Path,
    base: &Snapshot,
    mut now: Snapshot,
    task_id: Option<String>,
) -> Result<(), SnapError> {
    now.session = base.session.clone();
    now.parent = base.parent.clone();
    now.command = base.command.clone();
    now.background = true;
    now.task_id = task_id;
    now.hook_start = base.hook_start;
    if let Some(old) = base.index.as_ref().and_then(|i| i.copy.as_ref())
        && now.index.as_ref().and_then(|i| i.copy.as_ref()) != Some(old)
    {
        let _ = fs::remove_file(dir.join(old));
    }
    save(path, &now)
}

/// The name of walj's last copy of the git index, for the index version `st`.
pub(super) fn last_copy_name(st: Stamp) -> String {
    format!("index-{:x}-{:x}-{:x}.last", st.i, st.s, st.m)
}

/// Saves the git index at `index` (stamped `st` before the snapshot read it) as `dest`: a
/// private copy, never a hard link to git's file (walj's files are 0600 and its own). While
/// git's index does not change (most commands), every command's copy is a hard link to one
/// copy walj made of that version (`index-….last`, named by the version's stamp): no new file,
/// no bytes copied, whatever the index's size. Reused only when made since the system booted
/// (elsewhere than Linux: never) and of the version's length; [`Tree::diff`] also removes
/// one it finds damaged.
pub(super) fn save_index_copy(dir: &Path, index: &Path, dest: &Path, st: Stamp) -> bool {
    let last = dir.join(last_copy_name(st));
    // Made since the system booted, so whole (copies are not synced): a machine crash could
    // have left it damaged, which only reading it all would tell.
    let this_boot =
        |m: &fs::Metadata| crate::procinfo::boot_time().zip(m.modified().ok()).is_some_and(|(boot, made)| made > boot);
    // `symlink_metadata`: only walj's own regular file is linked, never something a link there
    // points at.
    if fs::symlink_metadata(&last).is_ok_and(|m| m.file_type().is_file() && m.len() == st.s && this_boot(&m))
        && fs::hard_link(&last, dest).is_ok()
    {
        // Dated now, as a copy would be: a Stop sweeps `.index` files by their age.
        let _ = fs::OpenOptions::new().write(true).open(dest).and_then(|f| f.set_modified(SystemTime::now()));
        return true;
    }
    if crate::fsutil::copy_private(index, dest).is_err() {
        return false;
    }
    // Kept for the next commands only when git's file still is the version copied.
    let unchanged = fs::metadata(index).is_ok_and(|m| Stamp { c: 0, ..Stamp::of(&m) } == st);
    if unchanged && fs::symlink_metadata(dest).is_ok_and(|m| m.file_type().is_file() && m.len() == st.s) {
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                let n = e.file_name();
                let n = n.to_string_lossy();
                if n.starts_with("index-") && n.ends_with(".last") {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        let _ = fs::hard_link(dest, &last);
    }
    true
}

pub(super) fn is_stale(path: &Path) -> bool {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|d| d > Duration::from_secs(STALE_SECS))
}

pub(super) fn remove_snapshot(dir: &Path, path: &Path, index: Option<&IndexRef>) {
    let _ = fs::remove_file(path);
    if let Some(c) = index.and_then(|i| i.copy.as_ref()) {
        let _ = fs::remove_file(dir.join(c));
    }
}

pub(super) fn load(path: &Path) -> Result<Snapshot, SnapError> {
    let bytes = fs::read(path).map_err(io_err(path, "reading"))?;
    let s: Snapshot =
        serde_json::from_slice(&bytes).map_err(|source| SnapError::Format { path: path.to_path_buf(), source })?;
    if s.v != SNAP_V {
        return Err(SnapError::Io {
            path: path.to_path_buf(),
            op: "reading",
            source: io::Error::other(format!("snapshot version {} (expected {SNAP_V})", s.v)),
        });
    }
    Ok(s)
}

/// Writes a sidecar by rename (no fsync: losing one to a power cut loses only the child
/// entries of that command, never journal data).
pub(super) fn save(path: &Path, snap: &Snapshot) -> Result<(), SnapError> {
    save_as(&[path], snap)
}

/// Writes one sidecar under every name of `paths`, each replaced by rename. The bytes are
/// written once: the other names are hard links to them (a new file costs more than its
/// bytes: 0.3–0.5 ms each on ext4 without a journal, where the kernel looks for an inode
/// that was not freed recently). Every writer replaces a sidecar by rename, never in place,
/// so the names never share a change. Where links are refused, each name gets a copy.
pub(super) fn save_as(paths: &[&Path], snap: &Snapshot) -> Result<(), SnapError> {
    let Some(first) = paths.first() else { return Ok(()) };
    let bytes = serde_json::to_vec(snap).map_err(|source| SnapError::Format { path: first.to_path_buf(), source })?;
    let tmp_of = |p: &Path| p.with_extension(format!("tmp{}", std::process::id()));
    let write = |tmp: &Path| -> io::Result<()> {
        let mut f = fsutil::open_private(tmp, fs::OpenOptions::new().write(true).create(true).truncate(true))?;
        io::Write::write_all(&mut f, &bytes)
    };
    let tmp = tmp_of(first);
    let mut made = vec![tmp.clone()];
    let mut done = || -> Result<(), (&Path, io::Error)> {
        write(&tmp).map_err(|e| (*first, e))?;
        for p in &paths[1..] {
            let other = tmp_of(p);
            let _ = fs::remove_file(&other);
            made.push(other.clone());
            if fs::hard_link(&tmp, &other).is_err() {
                write(&other).map_err(|e| (*p, e))?;
            }
            fs::rename(&other, p).map_err(|e| (*p, e))?;
        }
        fs::rename(&tmp, first).map_err(|e| (*first, e))
    };
    done().map_err(|(path, e)| {
        for m in &made {
            let _ = fs::remove_file(m);
        }
        io_err(path, "writing")(e)
    })
}

/// A file a snapshot lists whose bytes it did not read yet (cut short).
pub(super) fn unread(f: &FileState) -> bool {
    f.id.is_none() && !f.absent && !f.special && f.link.is_none()
}
