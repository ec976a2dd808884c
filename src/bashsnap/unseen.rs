//! What a comparison could not see, as the command's record says it (`unseen`): special and
//! unreadable files, files over the capture cap, a cut-short snapshot or list, and every path past
//! `[bash] max_changes` (stored whole, and as a text file under `.walj/unlisted/`).

use super::diff::{Change, Side};
use super::snapshot::{FileState, Snapshot};
use super::tree::Tree;
use crate::fsutil;
use crate::journal::nocap;
use crate::store::blob_id;
use std::collections::BTreeSet;
use std::fs;
use std::io;

impl Tree<'_> {
    /// What comparing `pre` with `now` could not see: special files, files over the capture
    /// cap (sampled), unreadable ones; whether a change lacks an image because a snapshot was
    /// cut short, or a list was; and the paths past `[bash] max_changes`, all of them, stored as one
    /// object (their count and the first few in the record). A path counts once, whichever
    /// side saw it so.
    pub(super) fn unseen(&mut self, pre: &Snapshot, now: &Snapshot, changes: &[Change]) -> crate::fold::Unseen {
        let list_cut = |s: &Snapshot| s.cut_short && !s.listed;
        let image_cut = changes.iter().any(|c| c.before == Side::Unknown || c.after == Side::Unknown);
        let mut u = unseen(pre, now);
        u.cut_short = list_cut(pre) || list_cut(now) || self.changes_cut || image_cut;
        if !self.unlisted.is_empty() {
            u.unlisted = self.unlisted.len();
            u.unlisted_sample = self.unlisted.iter().take(crate::fold::UNLISTED_SAMPLE).cloned().collect();
            let mut text = self.unlisted.join("\n");
            text.push('\n');
            u.unlisted_list = self.store.put(text.as_bytes()).ok();
            // And as a plain text file people read (`.walj/unlisted/<command>.txt`).
            let dir = self.project.dir.join("unlisted");
            let name = format!("{}.txt", &blob_id(pre.parent.as_bytes())[..16]);
            let written = fsutil::create_private_dir(&dir).and_then(|()| {
                let mut f = fsutil::open_private(
                    &dir.join(&name),
                    fs::OpenOptions::new().write(true).create(true).truncate(true),
                )?;
                io::Write::write_all(&mut f, text.as_bytes())
            });
            if written.is_ok() {
                u.unlisted_file = Some(format!(".walj/unlisted/{name}"));
            }
        }
        u
    }
}

/// [`Tree::unseen`]'s counts of files the snapshots could not compare.
pub(super) fn unseen(pre: &Snapshot, now: &Snapshot) -> crate::fold::Unseen {
    let mut u = crate::fold::Unseen::default();
    let mut paths: BTreeSet<&str> = pre.files.keys().map(String::as_str).collect();
    paths.extend(now.files.keys().map(String::as_str));
    for p in paths {
        let sides = [pre.files.get(p), now.files.get(p)];
        let any = |f: &dyn Fn(&FileState) -> bool| sides.iter().flatten().any(|s| f(s));
        if any(&|s| s.special) {
            u.special += 1;
        } else if any(&|s| s.nocap.as_deref().is_some_and(|n| n.starts_with(nocap::UNREADABLE))) {
            u.unreadable += 1;
        } else if any(&|s| s.nocap.as_deref() == Some(nocap::TOO_LARGE)) {
            u.too_large += 1;
        }
    }
    u
}
