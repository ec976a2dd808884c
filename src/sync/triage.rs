//! Acting on another machine's entries (docs/sync.md, "Acting on another machine's entries").
//!
//! `walj mark ID --done` and `walj handoff ID` on an entry of a synced journal write, in this
//! checkout's journal, one `remote` record per entry (`id`, `how`, `action`, `target` = its
//! session, `journal` = that journal's id). This journal's fold ignores them; they travel with
//! this checkout's next sync. The other checkout's sync reads them from its copy of this
//! journal and appends `resolved` records of its own (same `action`, `by` naming this
//! machine), so both sides show the entry resolved:
//! - here at once: [`super::elsewhere::overlay`] applies them to the copy of the other journal (kept in
//!   `.walj/sync/elsewhere.jsonl`, rebuilt from the journal at each sync);
//! - there after its next sync ([`super::elsewhere::import`]), and here again once it has published that.
//!
//! The other journal stays the authority on its entries: an entry it resolved itself keeps that
//! resolution on both sides. A hand-back's brief goes to Claude on *this* machine at its next
//! session start (the user asked here); the other machine records the entries as handed back
//! and never gives that brief to its own Claude.

use serde_json::Value;

use super::Paths;
use super::remotes::{RemoteJournal, find_entry};
use crate::fold::{Entry, FoldOptions, SessionStatus, ShortIds};
use crate::journal::{JournalWriter, Record, how, key, kind, op};
use crate::project::Project;
use crate::triage::{HandoffOptions, Outcome, TriageError};

/// Another machine's ids, shown whole (their typeable form): unique there, not checked here.
fn short_id(id: &str) -> String {
    ShortIds::default().short(id).to_string()
}

/// The other journals (every entry, settled ones too), for triage.
fn remotes(project: &Project) -> Vec<RemoteJournal> {
    super::remotes::load(project, &FoldOptions { keep_settled: true, ..Default::default() }).0
}

/// The entries `ids` name in one other journal. `Ok(None)`: no other journal has any of them.
fn find_entries<'a>(
    remotes: &'a [RemoteJournal],
    ids: &[String],
) -> Result<Option<(&'a RemoteJournal, Vec<&'a Entry>)>, TriageError> {
    let mut journal: Option<&RemoteJournal> = None;
    let mut out = Vec::new();
    for id in ids {
        match find_entry(remotes, id).map_err(TriageError::Refused)? {
            Some((r, e)) => {
                if journal.is_some_and(|j| j.id != r.id) {
                    return Err(TriageError::Refused(
                        "these entries belong to several other machines' journals: act on one journal at a time".into(),
                    ));
                }
                journal = Some(r);
                out.push(e);
            }
            None if out.is_empty() && journal.is_none() => return Ok(None),
            None => {
                return Err(TriageError::Refused(format!(
                    "no entry matches {id:?} here or in {}'s journal; `walj log` lists the entries and their ids",
                    journal.map_or("another machine", |j| j.name())
                )));
            }
        }
    }
    Ok(journal.map(|j| (j, out)))
}

/// The unresolved entries of session `prefix` in the other journals (`Ok(None)`: none has it).
fn session_entries<'a>(
    remotes: &'a [RemoteJournal],
    prefix: &str,
) -> Result<Option<(&'a RemoteJournal, Vec<&'a Entry>)>, TriageError> {
    let mut hits = Vec::new();
    for r in remotes {
        if let Ok(s) = r.fold.find_session(prefix)
            && !s.session.is_empty()
        {
            hits.push((r, s.session.clone()));
        }
    }
    match hits.len() {
        0 => Ok(None),
        1 => {
            let (r, s) = hits.remove(0);
            Ok(Some((r, r.fold.entries.iter().filter(|e| e.session == s && e.is_unresolved()).collect())))
        }
        _ => Err(TriageError::Refused(format!(
            "{prefix:?} names sessions of several machines: {}",
            hits.iter().map(|(r, s)| format!("{} ({})", short_id(s), r.name())).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// `--session` of another machine's session: refused, its entries are acted on by id only
/// (with a confirmation that names the machine).
fn refuse_session<'a>(
    (r, entries): (&'a RemoteJournal, Vec<&'a Entry>),
) -> Result<(&'a RemoteJournal, Vec<&'a Entry>), TriageError> {
    Err(TriageError::Refused(format!(
        "that session is {}'s (from machine {}, {} unresolved entr{}): --session acts on this checkout's own entries only; name its entries by id (walj asks first)",
        r.name(),
        r.name(),
        entries.len(),
        if entries.len() == 1 { "y" } else { "ies" }
    )))
}

/// The entries `ids` name in another machine's journal, for the confirmation that names it:
/// (short id, path, "from machine NAME"). Empty when none is another machine's.
pub(crate) fn describe(project: &Project, ids: &[String]) -> Vec<(String, String, String)> {
    let remotes = remotes(project);
    match find_entries(&remotes, ids) {
        Ok(Some((r, es))) => {
            es.iter().map(|e| (short_id(&e.id), e.path.clone(), format!("from machine {}", r.name()))).collect()
        }
        _ => Vec::new(),
    }
}

/// Why `e` (of journal `r`) cannot be acted on, if it cannot.
fn refusal(r: &RemoteJournal, e: &Entry, force: bool) -> Option<String> {
    if !e.is_unresolved() {
        let st = e.state();
        let what = match e.last_action() {
            Some(a) => format!("already {} ({})", a.how, crate::present::human_ts(&a.ts)),
            None => format!("{} (nothing to resolve)", st.as_str()),
        };
        return Some(format!("{} ({}) on {} is {what}", short_id(&e.id), e.path, r.name()));
    }
    let live = r.fold.session(&e.session).is_some_and(|s| s.status() == SessionStatus::Live);
    if live && !force {
        return Some(format!(
            "{} ({}) belongs to a session that was live on {} at its last sync; --force acts anyway",
            short_id(&e.id),
            e.path,
            r.name()
        ));
    }
    None
}

/// The `remote` record for `e` of journal `r`.
fn record(r: &RemoteJournal, e: &Entry, how_: &str, batch: &str) -> Record {
    let mut rec = Record::new(op::REMOTE, "");
    rec.id = e.id.clone();
    rec.path = e.path.clone();
    rec.event = e.event.clone();
    if !e.tool.is_empty() {
        rec.tool = Some(e.tool.clone());
    }
    rec.how = Some(how_.to_string());
    rec.action = Some(crate::journal::record::new_id("a"));
    rec.target = Some(e.session.clone());
    let rec = rec.with(key::JOURNAL, r.id.clone()).with(key::BATCH, batch);
    if crate::claude::env::in_tool_call() { rec.with(key::ACTOR, crate::claude::env::ACTOR) } else { rec }
}

/// Appends `records` to the journal, then to the sidecar.
fn append(project: &Project, records: &[Record]) -> Result<(), TriageError> {
    let fail = |e: std::io::Error| TriageError::Failed(format!("appending to {}: {e}", project.journal.display()));
    project.ensure_dir().map_err(fail)?;
    JournalWriter::new(&project.journal).append_all(records).map_err(fail)?;
    let side = super::elsewhere::sidecar(project);
    let mut bytes = Vec::new();
    for r in records.iter().filter(|r| r.op() == op::REMOTE) {
        bytes.extend_from_slice(&r.to_line());
    }
    let written = crate::fsutil::create_private_dir(&Paths::new(project).dir).and_then(|()| {
        let mut f = crate::fsutil::open_private(&side, std::fs::OpenOptions::new().create(true).append(true))?;
        std::io::Write::write_all(&mut f, &bytes)
    });
    // The journal holds them: the next sync rebuilds the sidecar.
    if let Err(e) = written {
        eprintln!("walj: warning: {}: {e} (the next `walj sync` rewrites it)", side.display());
    }
    Ok(())
}

/// `walj mark --done` on entries (`ids`, or the unresolved entries of `session`) of another
/// machine's journal. `Ok(None)`: no other journal has them (the caller reports its own error).
pub(crate) fn mark_done(
    project: &Project,
    ids: &[String],
    session: Option<&str>,
    force: bool,
) -> Result<Option<Vec<Outcome>>, TriageError> {
    let remotes = remotes(project);
    let found = match session {
        Some(s) => session_entries(&remotes, s)?.map(refuse_session).transpose()?,
        None => find_entries(&remotes, ids)?,
    };
    let Some((r, entries)) = found else { return Ok(None) };
    let problems: Vec<String> = entries.iter().filter_map(|e| refusal(r, e, force)).collect();
    if !problems.is_empty() {
        return Err(TriageError::Refused(problems.join("\n")));
    }
    let batch = crate::journal::record::new_id("a");
    let records: Vec<Record> = entries.iter().map(|e| record(r, e, how::DONE, &batch)).collect();
    append(project, &records)?;
    let _ = super::note::write_summaries(project);
    Ok(Some(
        entries
            .iter()
            .map(|e| Outcome {
                id: e.id.clone(),
                path: e.path.clone(),
                message: format!(
                    "marked {} ({}) of {} done here; {} records it at its next sync",
                    short_id(&e.id),
                    e.path,
                    r.name(),
                    r.name()
                ),
                changed: true,
                concurrent: false,
                kept: Vec::new(),
                conflict: None,
            })
            .collect(),
    ))
}

/// `walj handoff` of entries of another machine's journal: the brief (built from that journal's
/// copy: its images, this disk) goes to Claude here at the next session start; the entries are
/// recorded as handed back for that machine. `Ok(None)`: no other journal has them.
pub fn handoff(
    project: &Project,
    ids: &[String],
    session: Option<&str>,
    opts: HandoffOptions,
) -> Result<Option<crate::triage::Brief>, TriageError> {
    let remotes = remotes(project);
    let found = match session {
        Some(s) => session_entries(&remotes, s)?.map(refuse_session).transpose()?,
        None => find_entries(&remotes, ids)?,
    };
    let Some((r, entries)) = found else { return Ok(None) };
    if entries.is_empty() {
        return Err(TriageError::Refused(format!("nothing unresolved to hand back in that session of {}", r.name())));
    }
    let problems: Vec<String> = entries.iter().filter_map(|e| refusal(r, e, opts.force)).collect();
    if !problems.is_empty() && !opts.print_only {
        return Err(TriageError::Refused(problems.join("\n")));
    }
    let ids: Vec<String> = entries.iter().map(|e| e.id.clone()).collect();
    let copy = r.project(project);
    // Built from the copy, recorded nowhere there.
    let mut brief =
        crate::triage::handoff(&copy, &r.fold, &ids, None, HandoffOptions { print_only: true, force: opts.force })?;
    let head = format!(
        "These changes were made on another machine ({}, {}), not in this checkout: each diff compares that machine's file before the tool ran with this checkout's file now.\n\n",
        crate::present::one_line(r.name(), 60),
        r.as_of()
    );
    brief.text = format!("{head}{}", brief.text);
    if opts.print_only {
        return Ok(Some(brief));
    }
    let batch = crate::journal::record::new_id("a");
    let mut records: Vec<Record> = entries
        .iter()
        .filter(|e| brief.entries.contains(&e.id))
        .map(|e| record(r, e, how::HANDED_BACK, &batch))
        .collect();
    // The brief, for the next session start here (no session: it names another journal's).
    let mut h = Record::new(op::HANDOFF, "");
    h.event = crate::journal::event::HANDOFF.to_string();
    h.kind = Some(kind::HANDBACK.to_string());
    h.action = Some(crate::journal::record::new_id("a"));
    let h = h
        .with(key::BRIEF, brief.text.clone())
        .with(key::ENTRIES, Value::from(brief.entries.iter().map(|s| Value::from(s.as_str())).collect::<Vec<_>>()))
        .with(key::JOURNAL, r.id.clone())
        .with(key::BATCH, batch);
    brief.action = h.action.clone();
    records.push(h);
    append(project, &records)?;
    let _ = super::note::write_summaries(project);
    Ok(Some(brief))
}
