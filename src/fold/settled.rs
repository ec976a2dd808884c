//! Settling entries and what the fold keeps of settled ones: per path, digests of the
//! latest settled images, so a later change on disk is not mistaken for drift.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use super::model::{Entry, EntryState, InFlightCheck};
use super::{Fold, FoldOptions};
use crate::journal::record::Blob;
use crate::project::Project;
use crate::store::file_blob_id;

impl Fold {
    /// A `persisted` record: the entry is verified; without `keep_settled` it is dropped.
    #[inline]
    pub(super) fn settle(&mut self, session: &str, id: &str, opts: &FoldOptions) {
        // A walj line with no session names its entry by id alone (the first of that id).
        let found = if session.is_empty() { self.by_id.first(id) } else { self.by_id.get(&self.entries, session, id) };
        if let Some(i) = found {
            let e = &mut self.entries[i];
            e.base = EntryState::Persisted;
            if !opts.keep_settled && e.actions.is_empty() {
                self.remove_entry(i);
            }
        }
    }

    #[inline]
    pub(super) fn push_entry(&mut self, e: Entry) {
        self.by_id.insert(&e.id, self.entries.len());
        self.entries.push(e);
    }

    /// Drops a settled entry (swap-remove keeps this O(1); order is restored at the end).
    #[inline]
    pub(super) fn remove_entry(&mut self, i: usize) {
        let e = self.entries.swap_remove(i);
        self.by_id.remove(&e.id, i);
        if i < self.entries.len() {
            // The last entry took its place.
            let last = self.entries.len();
            self.by_id.moved(&self.entries[i].id, last, i);
        }
        self.remember_settled(e);
    }

    /// Keeps the images of a settled entry that is dropped, when it is the latest on its path.
    #[inline]
    pub(super) fn remember_settled(&mut self, e: Entry) {
        if e.outside || e.v1 {
            return;
        }
        let images = [e.before.as_ref().map(image_digest), e.after.as_ref().map(image_digest)];
        self.settled.keep(digest(&e.path), e.line, images);
    }

    /// Marks applied entries whose file now matches none of the known images (of every entry
    /// on the path, and of the latest one dropped as settled) as drifted. Reads only the
    /// files of unresolved applied entries.
    pub(crate) fn check_disk(&mut self, project: &Project) {
        let mut known: HashMap<&str, Vec<Option<String>>> = HashMap::new();
        for e in &self.entries {
            let v = known.entry(e.path.as_str()).or_default();
            for b in [&e.before, &e.after].into_iter().flatten() {
                v.push(b.id().map(str::to_string));
            }
            // What a triage action wrote (a revert's merge) is a known state of the path too.
            for b in e.actions.iter().filter(|a| !a.undone).filter_map(|a| a.wrote.as_ref()) {
                v.push(b.id().map(str::to_string));
            }
        }
        let mut drifted = Vec::new();
        let mut cap = None;
        for (i, e) in self.entries.iter().enumerate() {
            if e.base != EntryState::Applied || e.outside || e.v1 || e.after.is_none() {
                continue;
            }
            if !e.kind_known() {
                continue;
            }
            if e.is_link() {
                // A link's image is its target text: read the link, never what it points at.
                match link_blob(project, &e.path) {
                    Some(disk) if known.get(e.path.as_str()).is_some_and(|k| k.contains(&disk)) => {}
                    _ => drifted.push(i),
                }
                continue;
            }
            let Ok(abs) = project.resolve_rel(&e.path) else { continue };
            let cap = *cap.get_or_insert_with(|| capture_cap(project));
            let Some(disk) = disk_blob(&abs, cap) else {
                // A FIFO, a device or a folder where the file was matches no image: drifted.
                if std::fs::metadata(&abs).is_ok_and(|m| !m.is_file()) {
                    drifted.push(i);
                }
                continue;
            };
            if known.get(e.path.as_str()).is_some_and(|k| k.contains(&disk))
                || self
                    .settled
                    .get(digest(&e.path))
                    .is_some_and(|(_, s)| s.contains(&Some(disk.as_deref().map_or(ABSENT_DIGEST, blob_digest))))
            {
                continue;
            }
            drifted.push(i);
        }
        for i in drifted {
            self.entries[i].base = EntryState::Drifted;
        }
        // File tool calls without an outcome, or whose outcome was a failure: did they write?
        // Only this call's own outcome could say "completed" for sure; when a later call left
        // the same content, the disk says nothing about this one.
        // path → (line, after, entry id) of every entry with an after image.
        let mut later: HashMap<String, Vec<(u64, String, String)>> = HashMap::new();
        for e in &self.entries {
            if let Some(id) = e.after.as_ref().and_then(|b| b.id()) {
                later.entry(e.path.clone()).or_default().push((e.line, id.to_string(), e.id.clone()));
            }
        }
        let mut checks = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            // A failed call too: did it fail before writing (an Edit whose text was not found)
            // or part-way? Its outcome carries no post-image; the disk says.
            let unsure = matches!(e.base, EntryState::InFlight | EntryState::Failed);
            if !unsure || e.outside || e.unfinished || e.parent.is_some() {
                continue;
            }
            let Some(before) = &e.before else { continue };
            let Ok(abs) = project.resolve_rel(&e.path) else { continue };
            let cap = *cap.get_or_insert_with(|| capture_cap(project));
            let Some(disk) = disk_blob(&abs, cap) else { continue };
            // The later call that left the disk's content (`Some(None)`: one walj no longer
            // keeps, settled and dropped).
            let rewritten = || {
                let by = later.get(&e.path).and_then(|v| {
                    v.iter().find(|(l, a, _)| *l > e.line && Some(a.as_str()) == disk.as_deref()).map(|x| x.2.clone())
                });
                match by {
                    Some(id) => Some(Some(id)),
                    None => self.settled_after(&e.path, e.line, disk.as_deref()).then_some(None),
                }
            };
            let mut by = None;
            let check = if disk.as_deref() != before.id() && through_link(&abs) {
                // Claude Code refuses to write through a symbolic link (after its PreToolUse):
                // the link is still there, so the call never wrote; what the link points at
                // changed by other means (another call on the real path, the user).
                Some(InFlightCheck::NotThroughLink)
            } else if e.intended.is_some() && disk.as_deref() == e.intended.as_deref() {
                Some(match rewritten() {
                    Some(id) => {
                        by = id;
                        InFlightCheck::WrittenByLater
                    }
                    None => InFlightCheck::Completed,
                })
            } else if disk.as_deref() == before.id() {
                Some(InFlightCheck::Unchanged)
            } else if e.intended.is_some() {
                Some(InFlightCheck::Other)
            } else {
                // Not knowing what the call meant to write (older records), claim nothing.
                None
            };
            checks.push((i, check, by));
        }
        for (i, check, by) in checks {
            self.entries[i].disk_check = check;
            self.entries[i].disk_check_by = by;
        }
    }

    /// True when the latest entry on `path` dropped as settled came after journal line `line`
    /// and had `disk` (a blob id, `None` = absent) as an image.
    pub(crate) fn settled_after(&self, path: &str, line: u64, disk: Option<&str>) -> bool {
        self.settled
            .get(digest(path))
            .is_some_and(|(l, s)| *l > line && s.contains(&Some(disk.map_or(ABSENT_DIGEST, blob_digest))))
    }
}

/// A 64-bit digest of a path or a blob id (what [`Fold`] keeps of settled entries). FNV-1a:
/// this runs for every settled entry of a long journal, and a 64-bit collision between two
/// paths of one project only costs a missed drift mark.
fn digest(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h | 1 // never ABSENT_DIGEST
}

/// The map key is already a digest: hashing it again would only cost time.
#[derive(Default, Clone, Copy)]
pub(super) struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ u64::from(b) ^ (self.0 >> 56);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub(super) type DigestMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<DigestHasher>>;

/// A settled path's latest line and the digests of its two images.
pub(super) type SettledImages = (u64, [Option<u64>; 2]);

/// Per path digest, the latest entry dropped as settled. A fold snapshot lends its paths as
/// one sorted list (`base`, searched by halves) instead of a hash table built at each load:
/// inserting a long journal's ~100,000 paths was the largest part of a SessionStart on it
/// (2 of 9 ms). The lines after the snapshot add to `over`, which wins over `base`.
#[derive(Debug, Default, Clone)]
pub(super) struct SettledMap {
    base: Vec<(u64, SettledImages)>,
    over: DigestMap<SettledImages>,
}

impl SettledMap {
    /// From a snapshot's list; sorted by key here if it is not (it is as written).
    pub(super) fn from_sorted(mut base: Vec<(u64, SettledImages)>) -> SettledMap {
        if !base.is_sorted_by_key(|(k, _)| *k) {
            base.sort_by_key(|(k, _)| *k);
        }
        SettledMap { base, over: DigestMap::default() }
    }

    pub(super) fn get(&self, key: u64) -> Option<&SettledImages> {
        self.over.get(&key).or_else(|| {
            let i = self.base.binary_search_by_key(&key, |(k, _)| *k).ok()?;
            Some(&self.base[i].1)
        })
    }

    /// Keeps `images` at `line` for `key` unless a later line is already kept.
    pub(super) fn keep(&mut self, key: u64, line: u64, images: [Option<u64>; 2]) {
        if self.get(key).is_none_or(|(l, _)| *l < line) {
            self.over.insert(key, (line, images));
        }
    }

    /// Every path, sorted by key (what a snapshot stores).
    pub(super) fn sorted(&self) -> Vec<(u64, SettledImages)> {
        let mut all: Vec<(u64, SettledImages)> =
            self.base.iter().filter(|(k, _)| !self.over.contains_key(k)).copied().collect();
        all.extend(self.over.iter().map(|(k, v)| (*k, *v)));
        all.sort_by_key(|(k, _)| *k);
        all
    }
}

/// The digest standing for "the file was absent".
const ABSENT_DIGEST: u64 = 0;

fn image_digest(b: &Blob) -> u64 {
    b.id().map_or(ABSENT_DIGEST, blob_digest)
}

/// A blob id is already a SHA-1: its first 16 hex digits are a fine digest.
fn blob_digest(id: &str) -> u64 {
    match id.get(..16).and_then(|h| u64::from_str_radix(h, 16).ok()) {
        Some(d) => d | 1,
        None => digest(id),
    }
}

/// The id of a file on disk as the hook records it: its git blob id, or over `cap` (the
/// capture cap) its sampled identity ([`crate::sampled`]), so a disk check costs at most the
/// cap's worth of hashing, whatever the file's size. `Some(None)` when absent, `None` when
/// unreadable (or not a regular file).
pub(crate) fn disk_blob(path: &Path, cap: u64) -> Option<Option<String>> {
    let id = match crate::fsutil::open_regular(path) {
        Ok((f, meta)) if meta.len() > cap => crate::sampled::identity(&f, &meta),
        Ok(_) => file_blob_id(path),
        Err(e) => Err(e),
    };
    match id {
        Ok(id) => Some(Some(id)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Some(None),
        Err(_) => None,
    }
}

/// True when `abs` itself is a symbolic link (not followed).
fn through_link(abs: &Path) -> bool {
    std::fs::symlink_metadata(abs).is_ok_and(|m| m.file_type().is_symlink())
}

/// The blob of what the link entry's path holds now: its target's bytes, `None` when nothing
/// is there; `None` outright when something else is (a file, a folder) or it cannot be read.
pub(crate) fn link_blob(project: &Project, rel: &str) -> Option<Option<String>> {
    let (dir, name) = match project.link_dir(rel, false) {
        Ok(d) => d,
        Err(crate::project::WriteError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Some(None);
        }
        Err(_) => return None,
    };
    match dir.kind(&name).ok()? {
        crate::fsutil::beneath::Kind::Missing => Some(None),
        crate::fsutil::beneath::Kind::Link => {
            Some(dir.read_link(&name).ok()?.map(|t| crate::journal::entry_kind::link_id(&t)))
        }
        _ => None,
    }
}

/// The project's capture cap (`[capture] max_bytes`), the size over which the hook records
/// a sampled identity; the default when the config is missing or broken (as the hook reads it).
pub(crate) fn capture_cap(project: &Project) -> u64 {
    crate::config::Config::load(&project.config_path()).unwrap_or_default().capture.max_bytes
}

#[cfg(test)]
mod settled_map_tests {
    use super::{SettledImages, SettledMap};
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// The old map's rule, as a model: a path keeps the images of its latest line.
    fn keep(model: &mut HashMap<u64, SettledImages>, key: u64, line: u64, images: [Option<u64>; 2]) {
        let slot = model.entry(key).or_insert((line, images));
        if slot.0 < line {
            *slot = (line, images);
        }
    }

    proptest! {
        /// A snapshot's sorted list plus the tail's keeps answer like one map kept from the start.
        #[test]
        fn base_and_overlay_answer_like_one_map(
            before in prop::collection::vec((0u64..40, 0u64..1000, any::<Option<u64>>()), 0..60),
            after in prop::collection::vec((0u64..40, 0u64..1000, any::<Option<u64>>()), 0..60),
        ) {
            let mut model = HashMap::new();
            for &(k, l, a) in &before {
                keep(&mut model, k, l, [a, None]);
            }
            let mut base: Vec<_> = model.iter().map(|(k, v)| (*k, *v)).collect();
            base.reverse(); // any order: from_sorted sorts what is not
            let mut map = SettledMap::from_sorted(base);
            for &(k, l, a) in &after {
                keep(&mut model, k, l, [None, a]);
                map.keep(k, l, [None, a]);
            }
            for k in 0..40 {
                prop_assert_eq!(map.get(k), model.get(&k));
            }
            let mut want: Vec<_> = model.into_iter().collect();
            want.sort_by_key(|(k, _)| *k);
            prop_assert_eq!(map.sorted(), want);
        }
    }
}
