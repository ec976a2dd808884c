//! Reverting and undoing symbolic-link entries (`kind: "symlink"`): the link is re-pointed,
//! never written through.
//!
//! A link entry's sides are the link's own target text (`link_before` / `link_after`, their
//! bytes also the `before` / `after` blobs) or absent. Reverting puts the pre-image back: a
//! link made by the command is removed, a retargeted one points at its old target again, a
//! removed one is made again. Undo puts back what the revert replaced.
//!
//! - The link's folder is opened beneath the project root through no symbolic link, never
//!   inside `.git/` or `.walj/` ([`Project::link_dir`]); the link is made there under a
//!   temporary name (`symlinkat`, which creates nothing at the target) and renamed over the
//!   name: a link to `../outside` is only its text, and nothing outside the project is
//!   written.
//! - Only a link (or nothing) at the path is replaced. A regular file or a folder there now
//!   is refused, forced or not: walj never drops bytes to make a link.
//! - The disk must still show the entry's post-image (what the command left); a link that
//!   points elsewhere since is re-pointed only with `--force`, its target captured first.
//! - As for files, what is replaced is stored and named in the journal (a `capture` audit)
//!   before the write, and the `resolved` / `undo` record names both sides.
//! - A change between a regular file and a link (`ln -sf` over a file) is shown, not
//!   reverted here: say so and leave it to the user.

use std::ffi::OsStr;

use crate::fold::{Action, Entry, EntryState, Fold};
use crate::fsutil::{self, beneath::Kind};
use crate::journal::{Blob, Record, entry_kind, how, key, op};
use crate::project::Project;

use super::action::{Batch, already_resolved, append, capture_record, check_live, entry_record, when};
use super::{Outcome, Result, TriageError};

/// One side of a link entry, or what the path holds now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LinkSide {
    Absent,
    /// A link with this target (bytes).
    Link(Vec<u8>),
    /// A regular file (a side of a file ↔ link change, or the disk now).
    File,
    /// A folder, a socket…, or unknown.
    Other(String),
}

impl LinkSide {
    /// A recorded side: its blob and its link text.
    fn recorded(blob: &Option<Blob>, link: &Option<String>) -> LinkSide {
        match (blob, link) {
            (Some(Blob::Absent), _) => LinkSide::Absent,
            (_, Some(t)) => LinkSide::Link(fsutil::name::decode(t).into_owned()),
            (Some(Blob::Id(_)), None) => LinkSide::File,
            (None, None) => LinkSide::Other("not recorded".into()),
        }
    }

    /// For people: `a link to a.txt`, `absent`.
    pub(crate) fn describe(&self) -> String {
        match self {
            LinkSide::Absent => "absent".into(),
            LinkSide::Link(t) => {
                format!("a link to {}", crate::present::text::safe(&fsutil::name::encode(t)))
            }
            LinkSide::File => "a regular file".into(),
            LinkSide::Other(what) => what.clone(),
        }
    }

    /// The side as a record names it: a link by [`entry_kind::link_id`] (no store object:
    /// the text travels in the record), else absent.
    fn blob(&self) -> Blob {
        match self {
            LinkSide::Link(t) => Blob::Id(entry_kind::link_id(t)),
            _ => Blob::Absent,
        }
    }

    /// The target text a record carries for this side (`None`: no link).
    fn text(&self) -> Option<String> {
        match self {
            LinkSide::Link(t) => Some(fsutil::name::encode(t).into_owned()),
            _ => None,
        }
    }
}

/// `r` naming `before` and `after` as link sides: their ids and their target texts.
fn with_sides(mut r: Record, before: &LinkSide, after: &LinkSide) -> Record {
    r.kind = Some(entry_kind::SYMLINK.to_string());
    r.before = Some(before.blob());
    r.after = Some(after.blob());
    for (k, side) in [(key::LINK_BEFORE, before), (key::LINK_AFTER, after)] {
        match side.text() {
            Some(t) => r = r.with(k, t),
            None => {
                r.extra.remove(k);
            }
        }
    }
    r
}

/// What `rel` is now (never following a link).
fn read_now(project: &Project, rel: &str) -> Result<LinkSide, String> {
    let (dir, name) = match project.link_dir(rel, false) {
        Ok(d) => d,
        Err(crate::project::WriteError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(LinkSide::Absent);
        }
        Err(e) => return Err(e.to_string()),
    };
    now_in(&dir, &name).map_err(|e| format!("reading {rel}: {e}"))
}

fn now_in(dir: &fsutil::Dir, name: &OsStr) -> std::io::Result<LinkSide> {
    Ok(match dir.kind(name)? {
        Kind::Missing => LinkSide::Absent,
        Kind::Link => match dir.read_link(name)? {
            Some(t) => LinkSide::Link(t),
            None => LinkSide::Absent,
        },
        Kind::File { .. } => LinkSide::File,
        Kind::Dir => LinkSide::Other("a folder".into()),
        Kind::Other => LinkSide::Other("not a regular file nor a link".into()),
    })
}

/// Puts `want` (a link or nothing) at `rel`, provided the path still holds `expect`.
fn place(project: &Project, rel: &str, expect: &LinkSide, want: &LinkSide) -> Result<(), String> {
    let create = matches!(want, LinkSide::Link(_));
    let (dir, name) = project.link_dir(rel, create).map_err(|e| e.to_string())?;
    let now = now_in(&dir, &name).map_err(|e| format!("reading {rel}: {e}"))?;
    if now != *expect {
        return Err(format!(
            "{rel} changed while walj worked (it is now {}); nothing written to it. Run the command again",
            now.describe()
        ));
    }
    match want {
        LinkSide::Link(target) => {
            let tmp = std::ffi::OsString::from(format!(".walj-link-{}", super::action::new_action_id()));
            dir.symlink(target, &tmp).map_err(|e| format!("making the link {rel}: {e}"))?;
            if let Err(e) = dir.rename(&tmp, &dir, &name) {
                let _ = dir.remove(&tmp, false);
                return Err(format!("putting the link {rel} in place: {e}"));
            }
        }
        LinkSide::Absent if matches!(now, LinkSide::Link(_)) => {
            dir.remove(&name, false).map_err(|e| format!("removing the link {rel}: {e}"))?;
        }
        LinkSide::Absent => {}
        other => return Err(format!("{rel}: walj writes only links here, not {}", other.describe())),
    }
    dir.sync().map_err(|e| format!("syncing the folder of {rel}: {e}"))
}

/// A link entry's revert worked out: (what the path holds, what to put there), or why not;
/// `Ok(None)`: nothing to write (it already is the pre-image).
fn work_out(project: &Project, fold: &Fold, e: &Entry, force: bool) -> Result<Option<(LinkSide, LinkSide)>, String> {
    if let Some(why) = already_resolved(fold, e) {
        return Err(why);
    }
    if e.state() == EntryState::NotApplied {
        return Ok(None);
    }
    let pre = LinkSide::recorded(&e.before, &e.link_before);
    let post = LinkSide::recorded(&e.after, &e.link_after);
    for side in [&pre, &post] {
        if let LinkSide::File | LinkSide::Other(_) = side {
            return Err(format!(
                "{} changed between a regular file and a link ({} → {}); walj re-points links but does not turn one into the other: `walj diff {}` shows both sides",
                e.path,
                pre.describe(),
                post.describe(),
                fold.ids.short(&e.id)
            ));
        }
    }
    let now = read_now(project, &e.path)?;
    if now == pre {
        return Ok(None);
    }
    match &now {
        LinkSide::File | LinkSide::Other(_) => {
            return Err(format!(
                "{} is now {}; walj replaces only a link or nothing with a link, never a file",
                e.path,
                now.describe()
            ));
        }
        _ if now != post && !force => {
            return Err(format!(
                "{} changed since the command ({} then, {} now); pass --force to re-point it anyway (its target is kept in the store; `walj undo` brings it back)",
                e.path,
                post.describe(),
                now.describe()
            ));
        }
        _ => {}
    }
    Ok(Some((now, pre)))
}

/// `walj revert` of link entries (the ids of `entries`), as one step of the caller's batch:
/// every one is checked first, any refusal fails with nothing changed.
pub(crate) fn revert(
    project: &Project,
    fold: &Fold,
    entries: &[&Entry],
    force: bool,
    dry_run: bool,
    batch: &mut Batch,
) -> Result<Vec<Outcome>> {
    let mut plans = Vec::new();
    let mut errors = Vec::new();
    for e in entries {
        if let Err(why) = check_live(fold, e, force) {
            errors.push(why);
            continue;
        }
        match work_out(project, fold, e, force) {
            Ok(p) => plans.push((*e, p)),
            Err(why) => errors.push(format!("{} ({}): cannot revert: {why}", fold.ids.short(&e.id), e.path)),
        }
    }
    if !errors.is_empty() {
        return Err(TriageError::Refused(super::action::problems(&errors)));
    }
    let mut out = Vec::new();
    for (e, plan) in plans {
        let Some((now, pre)) = plan else {
            let msg = format!(
                "nothing to write: {} already is {}",
                e.path,
                LinkSide::recorded(&e.before, &e.link_before).describe()
            );
            if dry_run {
                out.push(Outcome::of(e, format!("{msg}; it would be recorded as reverted"), false));
                continue;
            }
            let pre = LinkSide::recorded(&e.before, &e.link_before);
            append(project, &[with_sides(resolved(e, batch), &pre, &pre)])?;
            out.push(Outcome::of(e, format!("{msg}; recorded as reverted"), true));
            continue;
        };
        let what = match &pre {
            LinkSide::Absent => format!("remove the link {} (the command made it)", e.path),
            p => format!("re-point {} to {}", e.path, p.describe().trim_start_matches("a link to ")),
        };
        if dry_run {
            out.push(Outcome::of(e, format!("would {what}"), false));
            continue;
        }
        let r = resolved(e, batch);
        let audit = with_sides(capture_record(e, "revert", r.action.as_deref(), &now.blob(), &pre.blob()), &now, &pre);
        append(project, &[audit]).map_err(|err| TriageError::Failed(format!("{err:#}\nNothing was changed.")))?;
        place(project, &e.path, &now, &pre).map_err(TriageError::Failed)?;
        append(project, &[with_sides(r, &now, &pre)])?;
        let done = match &pre {
            LinkSide::Absent => format!("removed the link {} (the command made it)", e.path),
            p => format!("re-pointed {} to {}", e.path, p.describe().trim_start_matches("a link to ")),
        };
        out.push(Outcome::of(e, done, true));
    }
    Ok(out)
}

/// The `resolved` record of a link entry's revert (kind `symlink`: undo re-points too).
fn resolved(e: &Entry, batch: &mut Batch) -> Record {
    let mut r = entry_record(op::RESOLVED, e);
    r.how = Some(how::REVERTED.to_string());
    r.kind = Some(entry_kind::SYMLINK.to_string());
    batch.stamp(r)
}

/// What undoing the revert `a` of link entry `e` puts back: (the path now, what the revert
/// replaced), or why it cannot.
pub(crate) fn plan_undo(project: &Project, e: &Entry, a: &Action, force: bool) -> Result<(LinkSide, LinkSide), String> {
    // The revert's record carries both targets (its blobs only name them).
    let side_of = |b: &Option<Blob>, k: &str, what: &str| -> Result<LinkSide, String> {
        match (b, a.record.get_str(k)) {
            (None | Some(Blob::Absent), _) => Ok(LinkSide::Absent),
            (Some(Blob::Id(_)), Some(t)) => Ok(LinkSide::Link(fsutil::name::decode(t).into_owned())),
            (Some(Blob::Id(_)), None) => Err(format!("the revert's record does not say which link it {what}")),
        }
    };
    let wrote = side_of(&a.wrote, key::LINK_AFTER, "wrote")?;
    let back = side_of(&a.overwrote, key::LINK_BEFORE, "replaced")?;
    let now = read_now(project, &e.path)?;
    match &now {
        LinkSide::File | LinkSide::Other(_) => {
            return Err(format!(
                "{} is now {}; walj replaces only a link or nothing with a link",
                e.path,
                now.describe()
            ));
        }
        _ if now != wrote && !force => {
            return Err(format!(
                "{} changed since the revert of {} (it is now {}); pass --force to re-point it anyway",
                e.path,
                when(&a.ts),
                now.describe()
            ));
        }
        _ => {}
    }
    Ok((now, back))
}

/// Undoes the revert `a` of link entry `e` (checked by [`plan_undo`]): writes the capture,
/// re-points the link, appends `r` (the `undo` record) naming both sides.
pub(crate) fn undo(project: &Project, fold: &Fold, e: &Entry, a: &Action, r: Record, force: bool) -> Result<Outcome> {
    let (now, back) = plan_undo(project, e, a, force).map_err(TriageError::Failed)?;
    let audit = with_sides(capture_record(e, "undo", r.action.as_deref(), &now.blob(), &back.blob()), &now, &back);
    append(project, &[audit])?;
    if now != back {
        place(project, &e.path, &now, &back).map_err(TriageError::Failed)?;
    }
    append(project, &[with_sides(r, &now, &back)])?;
    let how_back = match &back {
        LinkSide::Absent => format!("removed the link {} again", e.path),
        b => format!("re-pointed {} to {} again", e.path, b.describe().trim_start_matches("a link to ")),
    };
    Ok(Outcome::of(
        e,
        format!("{how_back} (undid the revert of {}); reopened {}", when(&a.ts), fold.ids.short(&e.id)),
        true,
    ))
}

/// `walj diff` of a link entry: each side is the link's target text (a one-line change of
/// the target), the disk read as a link, never followed.
pub(crate) fn diff_sides(project: &Project, e: &Entry, mode: super::DiffMode) -> super::DiffSides {
    use super::{DiffMode, Side};
    let side = |label: &str, s: LinkSide| match s {
        LinkSide::Absent => Side { label: label.to_string(), bytes: None, note: None },
        LinkSide::Link(t) => Side { label: format!("{label} (link target)"), bytes: Some(t), note: None },
        other => Side { label: label.to_string(), bytes: None, note: Some(other.describe()) },
    };
    let disk = || match read_now(project, &e.path) {
        Ok(now) => side("disk", now),
        Err(why) => Side { label: "disk".into(), bytes: None, note: Some(why) },
    };
    let pre = side("pre-image", LinkSide::recorded(&e.before, &e.link_before));
    match mode {
        DiffMode::Disk => super::DiffSides { old: pre, new: disk() },
        DiffMode::Applied => {
            super::DiffSides { old: pre, new: side("post-image", LinkSide::recorded(&e.after, &e.link_after)) }
        }
        DiffMode::Head => super::DiffSides { old: super::head::head_side(project, e), new: disk() },
    }
}
