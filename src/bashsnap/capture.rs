//! Pre-image capture and its budget: reading a file's bytes into the store (never a secret, never
//! over the capture cap), reusing images the journal's last lines carry, and storing the queued
//! objects together. A snapshot stops storing new objects at `MAX_NEW_OBJECTS` or its deadline
//! (the rest stat-only, `cut_short`); a comparison reads whatever it lacks.

use super::SnapError;
use super::tree::Tree;
use crate::journal::nocap;
use crate::store::{DEFER_FROM, blob_id, file_blob_id};
use std::fs;
use std::io;
use std::path::Path;

impl Tree<'_> {
    /// Reads a file and queues its bytes for the store (unless too large / never captured).
    /// `(None, _)` when the file vanished meanwhile.
    pub(super) fn read_capture(
        &mut self,
        abs: &Path,
        rel: &str,
        meta: &fs::Metadata,
    ) -> Result<(Option<String>, Option<String>), SnapError> {
        let len = meta.len();
        let unread = |e: io::Error| match e.kind() {
            io::ErrorKind::NotFound => Ok((None, None)),
            _ => Ok((None, Some(nocap::UNREADABLE.into()))),
        };
        let never = self.matcher.is_some_and(|m| m.never_capture(rel));
        let linked = crate::fsutil::is_hard_linked(meta) && !self.cfg.capture.hardlinks;
        if never || linked || len > self.cfg.capture.max_bytes {
            // Recorded by id only: hashed as it is read, never held in memory.
            let nocap = if never {
                nocap::NEVER_CAPTURE
            } else if linked {
                nocap::HARDLINK
            } else {
                nocap::TOO_LARGE
            };
            // Over the cap, a sampled identity: a huge file is never read in full in a hook.
            let id =
                if len > self.cfg.capture.max_bytes { crate::sampled::identity_of(abs) } else { file_blob_id(abs) };
            return id.map_or_else(unread, |id| Ok((Some(id), Some(nocap.into()))));
        }
        let bytes = match crate::fsutil::read_regular(abs) {
            Ok(b) => b,
            Err(e) => return unread(e),
        };
        let id = blob_id(&bytes);
        if bytes.len() as u64 > self.cfg.capture.max_bytes {
            return Ok((Some(id), Some(nocap::TOO_LARGE.into())));
        }
        if crate::secrets::secret_content(&bytes) {
            return Ok((Some(id), Some(nocap::NEVER_CAPTURE.into())));
        }
        // A file hook's image is carried in its journal line, not stored: written out here
        // (unsynced: the line is its durable copy) rather than stored again with syncs.
        if !self.store.reuse(&id) && !self.keep_recent(&id) {
            self.new_objects += 1;
            self.pending_bytes += bytes.len();
            self.pending.push((id.clone(), bytes));
            if self.pending_bytes > 64 << 20 {
                self.flush()?;
            }
        }
        Ok((Some(id), None))
    }

    /// Writes object `id` to the store from a recent journal line that carries it, if one does.
    pub(super) fn keep_recent(&mut self, id: &str) -> bool {
        let store = &self.store;
        store.keep_recent(self.recent.get_or_insert_with(|| store.recently_carried()), id)
    }

    /// Stores the queued objects, several at a time: concurrent fsyncs share the file
    /// system's journal commits, which is most of the cost. With [`Tree::defer`] and at least
    /// [`DEFER_FROM`] objects, writes them instead to one durable spill for the settle pass
    /// (the git ids as ids only): one file instead of one per object.
    pub(super) fn flush(&mut self) -> Result<(), SnapError> {
        let mut items = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        items.sort_by(|a, b| a.0.cmp(&b.0));
        items.dedup_by(|a, b| a.0 == b.0);
        let mut git = std::mem::take(&mut self.git_later);
        git.sort();
        git.dedup();
        if self.defer && items.len() + git.len() >= DEFER_FROM {
            self.store.spill(&items, &git)?;
            self.spills += 1;
            self.spilled.extend(items.into_iter().map(|(id, _)| id).chain(git));
            return Ok(());
        }
        if let Some(repo) = &self.repo {
            for id in git {
                match git2::Oid::from_str(&id).ok().and_then(|oid| repo.find_blob(oid).ok()) {
                    Some(blob) => items.push((id, blob.content().to_vec())),
                    None => {
                        self.unavailable.insert(id);
                    }
                }
            }
        }
        Ok(self.store.put_batch(&items)?)
    }

    /// Whether object `id` is in the store, or in a spill this call wrote.
    pub(super) fn holds(&self, id: &str) -> bool {
        self.spilled.contains(id) || self.store.contains(id)
    }
}
