//! A SessionStart that could not fold the journal in its budget (a long journal without a
//! fold snapshot): its start record and note wait for the session's first UserPromptSubmit.
//!
//! SessionStart folds within [`FOLD_BUDGET`]; out of time, the fold's progress is in the
//! snapshot (written in steps, `crate::fold::snapshot`), and the start record waits in
//! `.walj/deferred/<session>` (one journal line), so that the fold at the first prompt still
//! sees a resumed crashed session as crashed. That prompt folds within the budget again from
//! the snapshot: done, the note goes out as its `additionalContext` (still before the
//! model's first request) and the marks, then the start, are appended; not done, the start
//! is appended at once (the session acts from now on) and the file is left empty: a later
//! prompt tells the note. A SessionEnd, or another SessionStart, before any prompt appends
//! the waiting start. Nothing here is synced: a power loss before the first prompt can lose
//! a start record of a session that had not done anything yet, never a tool call's.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::journal::Record;
use crate::journal::record::parse_record;
use crate::project::Project;

/// How long SessionStart (and the first prompt) folds before it keeps its progress and
/// goes on: under Claude Code's hook timeout with room for the rest of the hook.
pub(crate) const FOLD_BUDGET: Duration = Duration::from_millis(1500);

/// The file of `session`'s waiting start: its id when it is a plain name, else its digest.
fn path(project: &Project, session: &str) -> PathBuf {
    let plain = !session.is_empty()
        && session.len() <= 100
        && session.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let name = if plain { session.to_string() } else { crate::sha::Sha1::of(session.as_bytes()).hex() };
    project.dir.join("deferred").join(name)
}

/// Keeps `start` waiting for `session`'s first prompt (`None`: the start is in the journal,
/// only the note waits).
pub(crate) fn save(project: &Project, session: &str, start: Option<&Record>) -> io::Result<()> {
    let p = path(project, session);
    if let Some(dir) = p.parent() {
        fs::create_dir_all(dir)?;
    }
    let line = start.map(Record::to_line).unwrap_or_default();
    let tmp = p.with_extension("tmp");
    crate::fsutil::open_private(&tmp, fs::OpenOptions::new().write(true).create(true).truncate(true))
        .and_then(|mut f| io::Write::write_all(&mut f, &line))?;
    fs::rename(&tmp, &p)
}

/// What waits for `session`: its start record (`None`: only the note) and the file to
/// remove once done. `None` when nothing waits; an unreadable file is dropped.
pub(crate) fn take(project: &Project, session: &str) -> Option<(Option<Record>, PathBuf)> {
    let p = path(project, session);
    let bytes = fs::read(&p).ok()?;
    let line = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    if line.is_empty() {
        return Some((None, p));
    }
    match parse_record(line) {
        // Only this session's own start (a file of another name is never trusted).
        Ok(r) if r.session == session => Some((Some(r), p)),
        _ => {
            remove(&p);
            None
        }
    }
}

pub(crate) fn remove(path: &Path) {
    let _ = fs::remove_file(path);
}

/// The SessionStart note as a UserPromptSubmit output: the same `systemMessage` and
/// `additionalContext`, named for this event.
pub(crate) fn prompt_output(mut out: Value) -> Value {
    if let Some(h) = out.get_mut("hookSpecificOutput").and_then(Value::as_object_mut) {
        h.insert("hookEventName".into(), Value::String("UserPromptSubmit".into()));
    }
    out
}
