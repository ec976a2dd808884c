//! The journal records of a command's side effects: one `applied` child entry per changed path,
//! with stable ids, images, link targets, the command and its subagent.

use super::diff::{Change, Side};
use super::snapshot::Snapshot;
use crate::config;
use crate::config::Matcher;
use crate::journal::{Record, key, op, tool};
use crate::store::blob_id;

/// Child entry id: stable for (command, phase, path), unique among them.
pub(super) fn child_id(parent: &str, phase: &str, rel: &str) -> String {
    blob_id(format!("{parent}\0{phase}\0{rel}").as_bytes())[..20].to_string()
}

pub(super) fn child_records(
    matcher: Option<&Matcher>,
    snap: &Snapshot,
    changes: &[Change],
    phase: &str,
    background: bool,
) -> Vec<Record> {
    changes
        .iter()
        .map(|c| {
            let created = c.before == Side::Absent;
            let deleted = c.after == Side::Absent;
            let mut r = Record::new(op::APPLIED, &snap.session);
            r.id = child_id(&snap.parent, phase, &c.rel);
            r.tool = Some(tool::BASH.to_string());
            r.event = config::detect_event(matcher, &c.rel, tool::BASH, created, deleted);
            r.path = c.rel.clone();
            r.before = c.before.blob();
            r.after = c.after.blob();
            r.nocap = c.after.nocap().or(c.before.nocap()).map(str::to_string);
            r.parent = Some(snap.parent.clone());
            if c.before.link().is_some() || c.after.link().is_some() {
                r.kind = Some(crate::journal::entry_kind::SYMLINK.to_string());
                if let Some(t) = c.before.link() {
                    r = r.with(key::LINK_BEFORE, t);
                }
                if let Some(t) = c.after.link() {
                    r = r.with(key::LINK_AFTER, t);
                }
            }
            // The mode, as git writes it, on each side that is a regular file: when the bit
            // changed, or either side is executable (so a revert gives the bit back).
            let flipped = c.x_before.zip(c.x_after).is_some_and(|(b, a)| b != a);
            if flipped || c.x_before == Some(true) || c.x_after == Some(true) {
                if let Some(x) = c.x_before.filter(|_| c.before != Side::Absent) {
                    r = r.with(key::MODE_BEFORE, crate::journal::entry_kind::file_mode(x));
                }
                if let Some(x) = c.x_after.filter(|_| c.after != Side::Absent) {
                    r = r.with(key::MODE_AFTER, crate::journal::entry_kind::file_mode(x));
                }
            }
            r = r.with(key::COMMAND, snap.command.clone());
            if let Some(a) = &snap.agent_id {
                r = r.with(key::AGENT_ID, a.clone());
                if let Some(t) = &snap.agent_type {
                    r = r.with(key::AGENT_TYPE, t.clone());
                }
            }
            if background {
                r = r.with(key::BACKGROUND, true);
            }
            r
        })
        .collect()
}
