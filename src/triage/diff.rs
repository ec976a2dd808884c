//! `walj diff`: an entry's change as a unified diff, printed from the one diff model
//! ([`crate::present::diff`]).
//!
//! Sides that are unknown (not captured, missing from the store) and binary files are
//! summarized instead of diffed; the output says which and why.

use crate::fold::{Entry, EntryState};
use crate::journal::record::Blob;
use crate::project::Project;

use super::action::{Disk, Image, Objects, read_disk};
use super::head::head_side;
use super::{DiffMode, DiffSides, Side};

/// The two sides of `entry`'s diff in `mode`. Unknown content is a side with a `note`,
/// never an error.
pub fn diff_sides(project: &Project, entry: &Entry, mode: DiffMode) -> DiffSides {
    let unknown = |label: &str, why: &str| Side { label: label.to_string(), bytes: None, note: Some(why.to_string()) };
    let (old_label, new_label) = match mode {
        DiffMode::Disk => ("pre-image", "disk"),
        DiffMode::Applied => ("pre-image", "post-image"),
        DiffMode::Head => ("HEAD", "disk"),
    };
    if entry.outside {
        let why = "outside the project: walj captured nothing";
        return DiffSides { old: unknown(old_label, why), new: unknown(new_label, why) };
    }
    if entry.v1 {
        let why = "recorded by a v1 journal line: no images";
        let old = unknown(old_label, why);
        let new = if mode == DiffMode::Applied { unknown(new_label, why) } else { disk_side(project, entry) };
        let old = if mode == DiffMode::Head { head_side(project, entry) } else { old };
        return DiffSides { old, new };
    }
    if entry.is_link() {
        return super::link::diff_sides(project, entry, mode);
    }
    // An image a journal line carries and the store lacks: put there from that line, found
    // through the line index, before the reads below would search the journal for it.
    let store = crate::store::Store::new(project.store_dir());
    for blob in [&entry.before, &entry.after] {
        if let Some(crate::journal::Blob::Id(id)) = blob {
            crate::fold::located::keep_carried(&project.journal, &store, id);
        }
    }
    let mut objects = Objects::new(project);
    let disk = project.resolve_rel(&entry.path).ok().and_then(|abs| read_disk(&abs, &entry.path).ok());
    let pre = || {
        let mut objects = Objects::new(project);
        recorded_side(&mut objects, "pre-image", &entry.before, entry.nocap.as_deref(), disk.as_ref())
    };
    match mode {
        DiffMode::Disk => DiffSides { old: pre(), new: disk_side(project, entry) },
        DiffMode::Applied => {
            let new = if entry.after.is_none() {
                let why = match entry.base {
                    EntryState::Failed => "no post-image: the tool failed",
                    _ => "no post-image: the tool did not finish (in flight)",
                };
                unknown("post-image", why)
            } else {
                recorded_side(&mut objects, "post-image", &entry.after, entry.nocap.as_deref(), disk.as_ref())
            };
            DiffSides { old: pre(), new }
        }
        DiffMode::Head => DiffSides { old: head_side(project, entry), new: disk_side(project, entry) },
    }
}

/// The file mode's change in `entry`'s diff in `mode` (old, new, as git writes them: `100644`,
/// `100755`), when the entry records modes and the two differ: a `chmod +x` shows here, its
/// bytes being the same. The disk's side is its mode now.
pub(crate) fn mode_change(project: &Project, entry: &Entry, mode: DiffMode) -> Option<(&'static str, &'static str)> {
    use crate::journal::entry_kind::file_mode;
    if entry.is_link() || entry.outside {
        return None;
    }
    let old = entry.exec_before()?;
    let new = match mode {
        DiffMode::Applied => entry.exec_after()?,
        DiffMode::Disk => {
            let abs = project.resolve_rel(&entry.path).ok()?;
            let meta = std::fs::symlink_metadata(abs).ok().filter(std::fs::Metadata::is_file)?;
            crate::fsutil::file_mode_of(&meta)? & 0o100 != 0
        }
        DiffMode::Head => return None,
    };
    (old != new).then(|| (file_mode(old), file_mode(new)))
}

/// The side of a record's image. An image the record names as captured (no `nocap`) but
/// the store lost — a machine crash before its hook returned, when the object's syncs had
/// not finished (`store::Store::put_carried`) — is read from the disk, and the side says so:
/// the hook had not returned, so the tool had not run (pre-image) or had just written the
/// disk (post-image).
fn recorded_side(
    objects: &mut Objects,
    label: &str,
    blob: &Option<Blob>,
    nocap: Option<&str>,
    disk: Option<&Disk>,
) -> Side {
    let image = objects.image(blob, nocap, label, disk);
    if let (Image::Unknown(why), Some(Blob::Id(_)), None, Some(Disk::File(b))) = (&image, blob, nocap, disk) {
        return Side { label: image_lost_label(label), bytes: Some(b.clone()), note: Some(why.clone()) };
    }
    image_side(label, image)
}

/// The label of a side whose image was lost and read from the disk instead.
pub(crate) fn image_lost_label(label: &str) -> String {
    format!("{label} lost, disk used")
}

fn image_side(label: &str, image: Image) -> Side {
    match image {
        Image::Absent => Side { label: label.to_string(), bytes: None, note: None },
        Image::Bytes(b) => Side { label: label.to_string(), bytes: Some(b), note: None },
        Image::Unknown(why) => Side { label: label.to_string(), bytes: None, note: Some(why) },
    }
}

fn disk_side(project: &Project, entry: &Entry) -> Side {
    let label = "disk".to_string();
    let abs = match project.resolve_rel(&entry.path) {
        Ok(a) => a,
        Err(why) => return Side { label, bytes: None, note: Some(why.to_string()) },
    };
    match read_disk(&abs, &entry.path) {
        Ok(Disk::Absent) => Side { label, bytes: None, note: None },
        Ok(Disk::File(b)) => Side { label, bytes: Some(b), note: None },
        Err(why) => Side { label, bytes: None, note: Some(why) },
    }
}
