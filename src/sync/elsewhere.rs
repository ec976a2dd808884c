//! This checkout's decisions about other machines' entries (docs/sync.md, "Acting on another
//! machine's entries"): the `remote` records `walj mark` and `walj handoff` write
//! ([`super::triage`]), kept beside the journal in `.walj/sync/elsewhere.jsonl` ([`sidecar`],
//! rebuilt from the journal at each sync), laid over the copies of the journals they name
//! ([`overlay`]), and read back from other journals' copies as `resolved` records of this one
//! ([`import`]).

use std::collections::HashSet;
use std::path::PathBuf;

use super::accept::{Seen, Verdict};
use super::{Paths, SyncError};
use crate::fold::{Entry, EntryState, Fold, FoldOptions};
use crate::journal::reader::{contains, scan_lines};
use crate::journal::{JournalWriter, Record, key, op};
use crate::project::Project;

/// `.walj/sync/elsewhere.jsonl`: this checkout's `remote` records, for [`overlay`].
pub(crate) fn sidecar(project: &Project) -> PathBuf {
    Paths::new(project).dir.join("elsewhere.jsonl")
}

/// A `remote` record read back (from the sidecar, or another journal's copy).
struct Foreign {
    rec: Record,
    journal: String,
}

fn parse_foreign(bytes: &[u8]) -> Option<Foreign> {
    if !contains(bytes, b"\"remote\"") {
        return None;
    }
    let rec = crate::journal::record::parse_record(bytes).ok()?;
    if rec.op() != op::REMOTE {
        return None;
    }
    let journal = rec.get_str(key::JOURNAL)?.to_string();
    (rec.how.is_some() && rec.action.is_some() && !rec.id.is_empty()).then_some(Foreign { rec, journal })
}

/// The `resolved` record `f` becomes in the fold of the journal it names.
fn as_resolved(f: &Foreign, by: &str, from: &str) -> Record {
    let session = f.rec.target.clone().unwrap_or_default();
    let mut r = Record::new(op::RESOLVED, &session);
    r.id = f.rec.id.clone();
    r.path = f.rec.path.clone();
    r.event = f.rec.event.clone();
    r.tool = f.rec.tool.clone();
    r.how = f.rec.how.clone();
    r.action = f.rec.action.clone();
    r.ts = f.rec.ts.clone();
    r.with(key::BY, by).with(key::JOURNAL, from)
}

/// The entry `f` is about: its session's (`target`) tool call of that id.
fn entry_of<'a>(fold: &'a crate::fold::Fold, f: &Foreign) -> Option<&'a Entry> {
    match f.rec.target.as_deref().filter(|s| !s.is_empty()) {
        Some(session) => fold.entry_in(session, &f.rec.id),
        None => fold.entry(&f.rec.id),
    }
}

/// Whether `e` still needs `f`: unresolved, and not carrying that action already.
fn applies(e: &Entry, f: &Foreign) -> bool {
    let action = f.rec.action.as_deref().unwrap_or("");
    e.is_unresolved() && !e.actions.iter().any(|a| a.action == action)
}

/// Applies this checkout's `remote` records to the folds of the journal copies they name
/// (`(journal id, fold)`), so this machine shows its own decisions before the other machine
/// has synced them.
pub(crate) fn overlay<'a>(project: &Project, copies: impl IntoIterator<Item = (&'a str, &'a mut Fold)>) {
    let Ok(bytes) = std::fs::read(sidecar(project)) else { return };
    let foreign: Vec<Foreign> = bytes.split(|&b| b == b'\n').filter_map(parse_foreign).collect();
    if foreign.is_empty() {
        return;
    }
    let own = super::identity::read_id(&Paths::new(project)).unwrap_or_default();
    for (id, fold) in copies {
        let recs: Vec<Record> = foreign
            .iter()
            .filter(|f| f.journal == id)
            .filter(|f| entry_of(fold, f).is_some_and(|e| applies(e, f)))
            .map(|f| as_resolved(f, "this checkout", &own))
            .collect();
        if !recs.is_empty() {
            let opts = FoldOptions { keep_settled: true, ..Default::default() };
            fold.add_records(&recs, &opts);
        }
    }
}

/// Rewrites the sidecar from the journal (each sync), so it holds exactly the journal's
/// `remote` records.
pub(crate) fn rebuild_sidecar(project: &Project) -> Result<(), SyncError> {
    let mut out = Vec::new();
    scan_lines(&project.journal, |raw| {
        if parse_foreign(raw.bytes).is_some() {
            out.extend_from_slice(raw.bytes);
            out.push(b'\n');
        }
    })
    .map_err(SyncError::io(format!("reading {}", project.journal.display())))?;
    let side = sidecar(project);
    if out.is_empty() && !side.exists() {
        return Ok(());
    }
    crate::fsutil::atomic_write(&side, &out, Some(0o600)).map_err(SyncError::io(format!("writing {}", side.display())))
}

/// Turns the `remote` records other journals hold about this one (`own`) into `resolved`
/// records of this journal: one per entry still unresolved here that does not carry that
/// action yet. Reads the copies that changed in this sync (`seen`). Returns how many records
/// were appended.
pub(crate) fn import(project: &Project, paths: &Paths, own: &str, seen: &[Seen]) -> Result<usize, SyncError> {
    let mut wanted: Vec<(Foreign, String, String)> = Vec::new();
    for s in seen.iter().filter(|s| matches!(s.verdict, Verdict::New | Verdict::Updated | Verdict::NewEpoch)) {
        let journal = super::accept::journal_dir(paths, &s.journal).join("journal.jsonl");
        let name = s.name.clone().unwrap_or_else(|| s.journal.clone());
        scan_lines(&journal, |raw| {
            if let Some(f) = parse_foreign(raw.bytes)
                && f.journal == own
            {
                wanted.push((f, name.clone(), s.journal.clone()));
            }
        })
        .map_err(SyncError::io(format!("reading {}", journal.display())))?;
    }
    if wanted.is_empty() {
        return Ok(0);
    }
    let fold = Fold::load(&project.journal, &FoldOptions { keep_settled: true, ..Default::default() })
        .map_err(SyncError::io(format!("reading {}", project.journal.display())))?;
    let mut done: HashSet<String> = HashSet::new();
    let mut records = Vec::new();
    for (f, name, from) in &wanted {
        let Some(e) = entry_of(&fold, f) else { continue };
        if e.state() == EntryState::NotApplied || !applies(e, f) || !done.insert(e.id.clone()) {
            continue;
        }
        records.push(as_resolved(f, &format!("walj sync: {name}"), from));
    }
    if records.is_empty() {
        return Ok(0);
    }
    JournalWriter::new(&project.journal)
        .append_all(&records)
        .map_err(SyncError::io(format!("appending to {}", project.journal.display())))?;
    Ok(records.len())
}
