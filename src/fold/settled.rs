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
    pub(super) fn settle(&mut self, id: &str, opts: &FoldOptions) {
        if let Some(&i) = self.by_id.get(id) {
            let e = &mut self.entries[i];
            e.base = EntryState::Persisted;
            if !opts.keep_settled && e.actions.is_empty() {
                self.remove_entry(i);
            }
        }
    }

    #[inline]
    pub(super) fn push_entry(&mut self, e: Entry) {
        self.by_id.insert(e.id.clone(), self.entries.len());
        self.entries.push(e);
    }

    /// Drops a settled entry (swap-remove keeps this O(1); order is restored at the end).
    #[inline]
    pub(super) fn remove_entry(&mut self, i: usize) {
        let e = self.entries.swap_remove(i);
        self.by_id.remove(&e.id);
        if i < self.entries.len() {
            let moved = self.entries[i].id.clone();
            self.by_id.insert(moved, i);
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
        let slot = self.settled.entry(digest(&e.path)).or_insert((e.line, images));
        if slot.0 < e.line {
            *slot = (e.line, images);
        }
    }

    /// Marks applied entries whose file now matches none of the known images (of every entry
    /// on the path, and of the latest one dropped as settled) as drifted. Reads only the
    /// files of unresolved applied entries.
    pub fn check_disk(&mut self, project: &Project) {
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
                    .get(&digest(&e.path))
                    .is_some_and(|(_, s)| s.contains(&Some(disk.as_deref().map_or(ABSENT_DIGEST, blob_digest))))
            {
                continue;
            }
            drifted.push(i);
        }
        for i in drifted {
            self.entries[i].base = EntryState::Drifted;
        }
        // File tool calls without an outcome: did they write before the crash?
        for e in &mut self.entries {
            if e.base != EntryState::InFlight || e.outside || e.unfinished || e.parent.is_some() {
                continue;
            }
            let Some(before) = &e.before else { continue };
            let Ok(abs) = project.resolve_rel(&e.path) else { continue };
            let cap = *cap.get_or_insert_with(|| capture_cap(project));
            let Some(disk) = disk_blob(&abs, cap) else { continue };
            e.disk_check = if e.intended.is_some() && disk.as_deref() == e.intended.as_deref() {
                Some(InFlightCheck::Completed)
            } else if disk.as_deref() == before.id() {
                Some(InFlightCheck::Unchanged)
            } else if e.intended.is_some() {
                Some(InFlightCheck::Other)
            } else {
                // Not knowing what the call meant to write (older records), claim nothing.
                None
            };
        }
    }

    /// True when the latest entry on `path` dropped as settled came after journal line `line`
    /// and had `disk` (a blob id, `None` = absent) as an image.
    pub(crate) fn settled_after(&self, path: &str, line: u64, disk: Option<&str>) -> bool {
        self.settled
            .get(&digest(path))
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
pub fn disk_blob(path: &Path, cap: u64) -> Option<Option<String>> {
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

/// The project's capture cap (`[capture] max_bytes`), the size over which the hook records
/// a sampled identity; the default when the config is missing or broken (as the hook reads it).
pub fn capture_cap(project: &Project) -> u64 {
    crate::config::Config::load(&project.config_path()).unwrap_or_default().capture.max_bytes
}
