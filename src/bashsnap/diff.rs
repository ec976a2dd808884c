//! The comparison of two snapshots: one [`Change`] per path whose content, link target or
//! existence differs, each side an image walj holds or the reason it does not (cut short, not
//! captured, git's bytes not the disk's), up to `[bash] max_changes` paths (the rest listed).

use super::snapshot::{FileState, Mode, Snapshot, last_copy_name, unread};
use super::tree::{Tree, existed_untouched, index_map, read_index};
use super::{SnapError, bash_dir, gitform, gitindex, links};
use crate::fsutil;
use crate::journal::{Blob, nocap};
use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::io;

/// One side of a change.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Side {
    Absent,
    /// Content with this blob id; `nocap` says why it is not in walj's store; `link`: a
    /// symbolic link with this target text (the blob is the target's bytes).
    Known {
        id: String,
        nocap: Option<String>,
        link: Option<String>,
    },
    /// Never read (the snapshot was cut short).
    Unknown,
    /// Not recorded, for this reason (a `nocap` value: [`nocap::GIT_FORM`]).
    NotCaptured(String),
}

impl Side {
    pub(super) fn blob(&self) -> Option<Blob> {
        match self {
            Side::Absent => Some(Blob::Absent),
            Side::Known { id, .. } => Some(Blob::Id(id.clone())),
            Side::Unknown | Side::NotCaptured(_) => None,
        }
    }
    pub(super) fn link(&self) -> Option<&str> {
        match self {
            Side::Known { link, .. } => link.as_deref(),
            _ => None,
        }
    }
    pub(super) fn nocap(&self) -> Option<&str> {
        match self {
            Side::Known { nocap, .. } => nocap.as_deref(),
            Side::Unknown => Some("cut_short"),
            Side::NotCaptured(why) => Some(why),
            Side::Absent => None,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Change {
    pub(super) rel: String,
    pub(super) before: Side,
    pub(super) after: Side,
    /// Each side's executable bit (git's `100755`), when that side is a regular file whose
    /// mode is known: a change of the bit alone is a change.
    pub(super) x_before: Option<bool>,
    pub(super) x_after: Option<bool>,
}

impl Tree<'_> {
    /// Differences between two snapshots of this tree.
    pub(super) fn diff(&mut self, pre: &Snapshot, now: &Snapshot) -> Result<Vec<Change>, SnapError> {
        let mut moved: BTreeSet<String> = BTreeSet::new();
        let mut paths: BTreeSet<&str> = pre.files.keys().map(String::as_str).collect();
        paths.extend(now.files.keys().map(String::as_str));
        let git = pre.mode == Mode::Git && now.mode == Mode::Git && self.repo.is_some();
        // The current index, read only when a path's other side must come from it (a command
        // that changed nothing, or only listed files, reads none: 100,000 entries cost ms).
        let index_moved = pre.index.as_ref().map(|i| i.st) != now.index.as_ref().map(|i| i.st);
        let needs_index =
            index_moved || paths.iter().any(|p| !pre.files.contains_key(*p) || !now.files.contains_key(*p));
        let current = if git && needs_index {
            self.index.take().or_else(|| self.repo.as_ref().and_then(|r| read_index(r, &r.path().join("index")).ok()))
        } else {
            None
        };
        // When the command changed the index (add, commit, checkout, reset, pull…), clean
        // files' bytes before it come from the saved index, and every path whose index
        // entry moved is a candidate.
        let mut old_index = None;
        if git && pre.index.as_ref().map(|i| i.st) != now.index.as_ref().map(|i| i.st) {
            let dir = bash_dir(self.project);
            old_index = pre
                .index
                .as_ref()
                .and_then(|i| {
                    let p = dir.join(i.copy.as_ref()?);
                    // Checked: the copy was not synced (a damaged one is as good as none).
                    let live = self.repo.as_ref().map(|r| r.path().join("index"));
                    let skip_hash = live.is_some_and(|l| gitindex::skips_hash(&l));
                    if !gitindex::intact(&p, Some(i.st.s), skip_hash) {
                        // Nor reused: the next command copies git's index again.
                        let _ = fs::remove_file(dir.join(last_copy_name(i.st)));
                        return None;
                    }
                    gitindex::read(&p).or_else(|| git2::Index::open(&p).ok().map(|i| gitindex::from_git2(&i)))
                })
                .map(|i| index_map(&i, &self.prefix));
            if let (Some(old), Some(cur)) = (&old_index, &current) {
                let cur = index_map(cur, &self.prefix);
                for (p, id) in old {
                    if cur.get(p) != Some(id) {
                        moved.insert(p.clone());
                    }
                }
                moved.extend(cur.keys().filter(|p| !old.contains_key(*p)).cloned());
            }
        }
        paths.extend(moved.iter().map(String::as_str));
        let prefix = self.prefix.clone();
        let in_current = |rel: &str| -> Option<(String, bool, bool)> {
            gitindex::find(current.as_ref()?, &format!("{prefix}{rel}"))
                .map(|e| (e.id(), links::is_link_mode(e.mode), gitindex::is_exec_mode(e.mode)))
        };
        // Git's recorded mode means something only where git compares it (`core.fileMode`, as
        // the full scan's dirty check: a file listed for its bytes alone has no mode change).
        let filemode = git
            && cfg!(unix)
            && self.repo.as_ref().is_some_and(|r| r.config().and_then(|c| c.get_bool("core.filemode")).unwrap_or(true));
        let index_x = |x: bool| filemode.then_some(x);
        let in_old = |rel: &str| -> Option<(String, bool, bool)> {
            match &old_index {
                Some(m) => m.get(rel).cloned(),
                None => in_current(rel),
            }
        };
        let mut changes = Vec::new();
        let mut from_git: Vec<String> = Vec::new();
        let mut paths = paths.into_iter();
        while let Some(rel) = paths.next() {
            if changes.len() >= self.cfg.bash.max_changes.max(1) {
                // Past the bound every remaining candidate is named, never dropped.
                self.changes_cut = true;
                self.unlisted = std::iter::once(rel).chain(paths).map(str::to_string).collect();
                break;
            }
            // A nested repository the Pre walked because it was new to *its* base was there
            // before this command: not walked for it (as a full scan from the Pre's time would not).
            if pre
                .nested
                .iter()
                .any(|r| rel.len() > r.len() && rel.starts_with(r.as_str()) && rel.as_bytes()[r.len()] == b'/')
            {
                continue;
            }
            let a = pre.files.get(rel);
            let b = now.files.get(rel);
            if a.is_some_and(|f| f.special) || b.is_some_and(|f| f.special) {
                continue;
            }
            if let (Some(a), Some(b)) = (a, b)
                && !a.absent
                && !b.absent
                && a.st.is_some()
                && a.st == b.st
                && !a.st.is_some_and(|s| s.racy(pre.time))
            {
                continue;
            }
            // A file the Pre snapshot listed but could not read (cut short), written just
            // before it: its stat, to the nanosecond, from before the snapshot, is unchanged. A
            // write after the snapshot began would have moved it (a file system that keeps
            // whole seconds only is still compared), so it is no change of the command's
            // (else it would read as one without a pre-image).
            if let (Some(a), Some(b)) = (a, b)
                && super::snapshot::unread(a)
                && a.st.is_some()
                && a.st == b.st
                && a.st
                    .is_some_and(|s| (s.m % 1_000_000_000 != 0 || s.c % 1_000_000_000 != 0) && s.m.max(s.c) < pre.time)
            {
                continue;
            }
            let (before, x_before) = match a {
                Some(f) => (side_of(f), x_of(f, pre.modes)),
                None if git => match in_old(rel) {
                    Some((id, true, _)) => (self.git_link_side(&id), None),
                    Some((_, false, x)) if !self.git_bytes_are_disks(rel, current.as_deref()) => {
                        (Side::NotCaptured(nocap::GIT_FORM.to_string()), index_x(x))
                    }
                    Some((id, false, x)) => {
                        from_git.push(id.clone());
                        (Side::Known { id, nocap: None, link: None }, index_x(x))
                    }
                    None => {
                        // Not listed and not tracked: it did not exist, or was ignored and untouched.
                        if existed_untouched(&self.project.root, rel, pre.time) {
                            continue;
                        }
                        (Side::Absent, None)
                    }
                },
                None if !pre.cut_short || pre.listed => (Side::Absent, None),
                None => {
                    if existed_untouched(&self.project.root, rel, pre.time) {
                        continue;
                    }
                    (Side::Unknown, None)
                }
            };
            let (after, x_after) = match b {
                Some(f) => (side_of(f), x_of(f, now.modes)),
                None if git => match in_current(rel) {
                    Some((id, true, _)) => (self.git_link_side(&id), None),
                    Some((_, false, _)) if !self.git_bytes_are_disks(rel, current.as_deref()) => {
                        (self.disk_side(rel)?, self.disk_x(rel))
                    }
                    Some((id, false, x)) => {
                        from_git.push(id.clone());
                        (Side::Known { id, nocap: None, link: None }, index_x(x))
                    }
                    None => (self.disk_side(rel)?, self.disk_x(rel)),
                },
                None => (self.disk_side(rel)?, self.disk_x(rel)),
            };
            let (after, x_after) =
                if after == Side::Unknown { (self.disk_side(rel)?, self.disk_x(rel)) } else { (after, x_after) };
            let same = match (&before, &after) {
                (Side::Absent, Side::Absent) => true,
                // A file holding `a.txt` and a link to `a.txt` have one blob id.
                (Side::Known { id: x, link: lx, .. }, Side::Known { id: y, link: ly, .. }) => {
                    x == y && lx.is_some() == ly.is_some()
                }
                _ => false,
            };
            // The executable bit alone (`chmod +x`), where both sides' bits are known.
            let same = same && x_before.zip(x_after).is_none_or(|(p, n)| p == n);
            if !same {
                changes.push(Change { rel: rel.to_string(), before, after, x_before, x_after });
            }
        }
        // Bytes named by a change must be in walj's store: copy them from git's objects.
        let needed: HashSet<&str> = changes
            .iter()
            .flat_map(|c| [&c.before, &c.after])
            .filter_map(|s| match s {
                Side::Known { id, nocap: None, link: None } => Some(id.as_str()),
                _ => None,
            })
            .collect();
        // Ids of the current index (the command did not change it) are reachable, so `git gc`
        // keeps them: read (or spilled as ids) at the flush. Ids of the index before the
        // command may be reachable no more: read now.
        let mut missing = HashSet::new();
        if let Some(repo) = &self.repo {
            let later = old_index.is_none();
            for id in from_git.iter().filter(|id| needed.contains(id.as_str())) {
                if self.store.reuse(id) {
                    continue;
                }
                let Ok(oid) = git2::Oid::from_str(id) else {
                    missing.insert(id.clone());
                    continue;
                };
                if later {
                    // Present now (a partial clone may lack it: "unavailable", never guessed).
                    if repo.odb().is_ok_and(|db| db.exists(oid)) {
                        self.git_later.push(id.clone());
                    } else {
                        missing.insert(id.clone());
                    }
                    continue;
                }
                match repo.find_blob(oid) {
                    Ok(blob) => self.pending.push((id.clone(), blob.content().to_vec())),
                    Err(_) => {
                        missing.insert(id.clone());
                    }
                }
            }
        }
        self.flush()?;
        for c in &mut changes {
            for s in [&mut c.before, &mut c.after] {
                if let Side::Known { id, nocap, link: None } = s
                    && nocap.is_none()
                    && (missing.contains(id.as_str()) || self.unavailable.contains(id.as_str()) || !self.holds(id))
                {
                    *nocap = Some("unavailable".into());
                }
            }
        }
        Ok(changes)
    }

    /// Whether git's blob of the clean tracked file `rel` is the disk's bytes
    /// ([`gitform::GitForm`]); `index`: the current index.
    pub(super) fn git_bytes_are_disks(&mut self, rel: &str, index: Option<&[gitindex::Entry]>) -> bool {
        let Some(repo) = &self.repo else { return true };
        let path = format!("{}{rel}", self.prefix);
        let entry = index.and_then(|i| gitindex::find(i, &path));
        self.git_form.get_or_insert_with(|| gitform::GitForm::of(repo, index)).same_bytes(repo, &path, entry)
    }

    /// The side of a tracked link whose target git's objects hold as blob `id`; unknown when
    /// git lost it.
    pub(super) fn git_link_side(&self, id: &str) -> Side {
        let blob =
            self.repo.as_ref().and_then(|repo| git2::Oid::from_str(id).ok().and_then(|oid| repo.find_blob(oid).ok()));
        match blob {
            Some(b) => Side::Known {
                id: crate::journal::entry_kind::link_id(b.content()),
                nocap: None,
                link: Some(links::text(b.content())),
            },
            None => Side::Unknown,
        }
    }

    /// The executable bit of the regular file at `rel` now (none for a link, a folder, a gone path).
    pub(super) fn disk_x(&self, rel: &str) -> Option<bool> {
        let abs = self.project.root.join(fsutil::name::to_path(rel));
        fs::symlink_metadata(&abs).ok().filter(|m| m.file_type().is_file()).map(|m| super::snapshot::is_exec(&m))
    }

    /// The file as it is now on disk (read and captured).
    pub(super) fn disk_side(&mut self, rel: &str) -> Result<Side, SnapError> {
        let abs = self.project.root.join(fsutil::name::to_path(rel));
        match fs::symlink_metadata(&abs) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Side::Absent),
            Ok(m) if m.file_type().is_symlink() => match links::read_target(&abs) {
                Ok(bytes) => Ok(Side::Known {
                    id: crate::journal::entry_kind::link_id(&bytes),
                    nocap: None,
                    link: Some(links::text(&bytes)),
                }),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Side::Absent),
                Err(_) => Ok(Side::Unknown),
            },
            Ok(m) if m.file_type().is_file() => match self.read_capture(&abs, rel, &m)? {
                (Some(id), nocap) => Ok(Side::Known { id, nocap, link: None }),
                (None, Some(_)) => Ok(Side::Unknown),
                (None, None) => Ok(Side::Absent),
            },
            _ => Ok(Side::Unknown),
        }
    }
}

/// A listed file's executable bit, when its snapshot records modes and it is a regular file.
pub(super) fn x_of(f: &FileState, modes: bool) -> Option<bool> {
    (modes && !f.absent && !f.special && f.link.is_none()).then_some(f.x)
}

pub(super) fn side_of(f: &FileState) -> Side {
    if f.absent {
        Side::Absent
    } else if let Some(id) = &f.id {
        Side::Known { id: id.clone(), nocap: f.nocap.clone(), link: f.link.clone() }
    } else {
        Side::Unknown
    }
}

/// Completes a Post snapshot from its comparison: a file the snapshot could not read (cut
/// short) that the comparison read gets its id, so the next snapshot starts from a whole base
/// instead of reading (and cutting short) again.
pub(super) fn heal(now: &mut Snapshot, changes: &[Change]) {
    for c in changes {
        if let Side::Known { id, nocap, link: None } = &c.after
            && let Some(f) = now.files.get_mut(&c.rel)
            && unread(f)
        {
            f.id = Some(id.clone());
            f.nocap = nocap.clone();
        }
    }
    now.cut_short = !now.listed && now.cut_short || now.files.values().any(unread);
}
