//! Session context (DESIGN §6, issue 5): what one Claude Code session asked, planned, changed
//! and left running, kept so a crashed session can be resumed without re-explaining anything.
//!
//! [`SessionState`] is the proposal's `PersistentStorage`, backed by the journal and the store:
//! the hook saves continuously (every event is a journal record), so
//! - [`SessionState::list`] folds the journal into one [`SessionSummary`] per session,
//! - [`SessionState::load`] folds one session in full (prompts, todos, files, commands,
//!   background processes, compactions, unresolved entries, transcript copy),
//! - `SessionState::delete` removes its records and the objects nothing else names through an
//!   atomic rewrite of the journal (it lives with the rewrite, in [`crate::compact`]),
//! - [`SessionState::save`] writes a session carried from elsewhere (a [`bundle`]) into this
//!   project, idempotently.
//!
//! The other parts: [`transcript`] (the safe, incremental copy of Claude Code's transcript),
//! [`brief`] (the resume brief for Claude), [`procs`] (background commands, alive or not),
//! [`bundle`] (export / import files), [`load`] (the fold every reader shows, read one way),
//! [`empty`] (what to say when the journal holds nothing).

pub mod brief;
pub mod bundle;
pub mod empty;
pub mod load;
pub mod procs;
pub mod redact;
pub mod repair;
pub mod transcript;
pub mod usage;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use crate::fold::{Entry, Fold, FoldOptions, Handoff, IdError, SessionInfo, SessionStatus, ShortIds};
use crate::journal::kind;
use crate::journal::reader::scan_lines;
use crate::project::Project;
use crate::store::Store;

/// Errors of the session commands. Each names what it was doing and on which file.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no session matches {0:?}; `walj sessions list` shows the sessions of this project")]
    Unknown(String),
    #[error("{prefix:?} is ambiguous; it matches sessions {}", candidates.join(", "))]
    Ambiguous { prefix: String, candidates: Vec<String> },
    #[error("{op} {}: {source}", path.display())]
    Io { op: String, path: PathBuf, source: io::Error },
    /// The operation would lose something and was not done.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Bundle(#[from] bundle::BundleError),
    /// An image a journal line carries could not be kept in the store (compaction).
    #[error("keeping an image the journal carries: {0}")]
    Store(#[from] crate::store::StoreError),
}

impl SessionError {
    pub(crate) fn io(op: impl Into<String>, path: &Path) -> impl FnOnce(io::Error) -> SessionError {
        let op = op.into();
        let path = path.to_path_buf();
        move |source| SessionError::Io { op, path, source }
    }
}

/// Full session id of a unique prefix (or a full id).
pub(crate) fn resolve(fold: &Fold, prefix: &str) -> Result<String, SessionError> {
    match fold.find_session(prefix) {
        Ok(s) if !s.session.is_empty() => Ok(s.session.clone()),
        Ok(_) | Err(IdError::Unknown(_)) => Err(SessionError::Unknown(prefix.to_string())),
        Err(IdError::Ambiguous { prefix, candidates }) => Err(SessionError::Ambiguous { prefix, candidates }),
    }
}

/// What one session occupies: its journal lines, the objects they name, its transcript copy.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Usage {
    pub records: u64,
    pub journal_bytes: u64,
    /// Objects named by the session's records that are in the store.
    pub objects: usize,
    pub object_bytes: u64,
    pub transcript_bytes: u64,
    /// `imported` session records: where the session came from.
    #[serde(skip)]
    pub imports: Vec<Value>,
    /// Announcement and delivery marks among the records (about other sessions).
    #[serde(skip)]
    pub marks: u64,
}

impl Usage {
    pub(crate) fn total_bytes(&self) -> u64 {
        self.journal_bytes + self.object_bytes + self.transcript_bytes
    }
}

/// Every 40-hex-digit JSON string in a line: the object ids it may name, whatever the field
/// (blob fields, and fields of newer versions). Conservative on purpose: an object is only
/// removed when no line could name it.
pub(crate) fn hex_ids(line: &[u8]) -> impl Iterator<Item = &str> {
    let mut i = 0usize;
    std::iter::from_fn(move || {
        while i + 41 < line.len() {
            if line[i] == b'"' && line[i + 41] == b'"' && line[i + 1..i + 41].iter().all(|b| b.is_ascii_hexdigit()) {
                let s = std::str::from_utf8(&line[i + 1..i + 41]).ok();
                i += 42;
                if s.is_some() {
                    return s;
                }
                continue;
            }
            i += 1;
        }
        None
    })
}

/// Journal bytes, records and objects per session (`only`: just that one).
///
/// One session: its lines and the import marks, through the line index when it applies. Every
/// session: the usage index ([`usage`]) and the lines past it. Either way each line is counted
/// by [`usage::count_line`], so the answer is a full scan's.
pub(crate) fn scan_usage(project: &Project, only: Option<&str>) -> io::Result<HashMap<String, Usage>> {
    let counted = match only {
        Some(o) => {
            let mut acc: HashMap<String, usage::Acc> = HashMap::new();
            let needle: Vec<u8> = o.chars().take(6).collect::<String>().into_bytes();
            let mut each = |raw: crate::journal::RawLine<'_>| {
                if crate::journal::reader::contains(raw.bytes, &needle) {
                    usage::count_line(&mut acc, &raw, Some(o));
                }
            };
            if crate::fold::located::scan_session(&project.journal, o, &mut each).is_none() {
                scan_lines(&project.journal, each)?;
            }
            usage::finish(acc)
        }
        None => usage::load(&project.journal)?,
    };
    let store = Store::new(project.store_dir());
    // Every session: the store listed once (what `walj status` pays), and only the ids it
    // holds looked at; one session's few ids are looked at directly.
    let listed: Option<(HashSet<usage::Oid>, HashSet<String>)> =
        only.is_none().then(|| store.ids().ok()).flatten().map(|ids| {
            let mut packed = HashSet::with_capacity(ids.len());
            let mut odd = HashSet::new();
            for id in ids {
                match usage::oid(&id) {
                    Some(o) => {
                        packed.insert(o);
                    }
                    None => {
                        odd.insert(id);
                    }
                }
            }
            (packed, odd)
        });
    let mut sizes: HashMap<String, Option<u64>> = HashMap::new();
    let mut size_of = |id: String| -> Option<u64> {
        *sizes.entry(id).or_insert_with_key(|id| std::fs::metadata(store.object_path(id)).ok().map(|m| m.len()))
    };
    let mut out: HashMap<String, Usage> = HashMap::with_capacity(counted.len());
    for (session, c) in counted {
        let mut u = Usage {
            records: c.records,
            journal_bytes: c.journal_bytes,
            marks: c.marks,
            imports: c.imports.iter().filter_map(|b| serde_json::from_slice(b).ok()).collect(),
            ..Usage::default()
        };
        let named = c
            .ids
            .iter()
            .filter(|o| listed.as_ref().is_none_or(|(l, _)| l.contains(*o)))
            .map(usage::hex)
            .chain(c.odd.into_iter().filter(|s| listed.as_ref().is_none_or(|(_, l)| l.contains(s))));
        for id in named {
            if let Some(n) = size_of(id) {
                u.objects += 1;
                u.object_bytes += n;
            }
        }
        u.transcript_bytes = transcript::copy_size(project, &session);
        out.insert(session, u);
    }
    Ok(out)
}

/// One line of `walj sessions list`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    pub session: String,
    pub sid: String,
    /// The coding agent: claude, codex, gemini, copilot.
    pub agent: String,
    pub state: String,
    pub started: String,
    pub last_ts: String,
    pub ended: Option<String>,
    pub end_reason: Option<String>,
    pub branch: Option<String>,
    pub prompts: usize,
    pub last_prompt: Option<String>,
    pub todos_done: usize,
    pub todos_total: usize,
    pub unresolved: usize,
    pub records: u64,
    /// Journal lines + objects named + transcript copy, in bytes.
    pub bytes: u64,
    pub transcript_copy: bool,
    /// Imported with `walj sessions import`.
    pub imported: bool,
}

/// A changed path and the entries that changed it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FileChange {
    pub path: String,
    /// State of the latest entry on the path.
    pub state: String,
    pub entries: Vec<String>,
    pub unresolved: usize,
    pub outside: bool,
}

/// Everything walj knows about one session.
#[derive(Debug, Clone)]
pub struct SessionState {
    pub info: SessionInfo,
    pub status: SessionStatus,
    /// Every entry of the session (all states), journal order.
    pub entries: Vec<Entry>,
    /// Briefs written for this session (resume, hand-back), delivered or not.
    pub handoffs: Vec<Handoff>,
    pub usage: Usage,
    pub transcript: transcript::TranscriptStatus,
    /// How ids are shown (unique against every id of the journal).
    pub ids: crate::fold::ShortIds,
}

impl SessionState {
    /// Every session of the project, most recently active first.
    pub fn list(project: &Project) -> Result<Vec<SessionSummary>, SessionError> {
        let opts = FoldOptions::default();
        let mut fold = Fold::load(&project.journal, &opts).map_err(SessionError::io("reading", &project.journal))?;
        crate::bashsnap::killed::reconcile(project, &mut fold, &opts);
        let usage = scan_usage(project, None).map_err(SessionError::io("reading", &project.journal))?;
        let mut out = Vec::new();
        for s in fold.sessions.iter().filter(|s| !s.session.is_empty()) {
            let u = usage.get(&s.session).cloned().unwrap_or_default();
            if u.records > 0 && u.records == u.marks {
                // Only marks about other sessions (kept by a compaction or a bundle): no session
                // to show.
                continue;
            }
            let (done, total) = s.todos_done();
            out.push(SessionSummary {
                session: s.session.clone(),
                sid: s.sid.clone(),
                agent: s.agent().name().to_string(),
                state: s.status().as_str().to_string(),
                started: s.started.clone().unwrap_or_else(|| s.first_ts.clone()),
                last_ts: s.last_ts.clone(),
                ended: s.end.as_ref().map(|e| e.0.clone()),
                end_reason: s.end.as_ref().map(|e| e.1.clone()),
                branch: s.branch.clone(),
                prompts: s.prompts.len(),
                last_prompt: s.last_prompt().map(str::to_string),
                todos_done: done,
                todos_total: total,
                unresolved: fold.entries_of(&s.session).filter(|e| e.is_unresolved()).count(),
                records: u.records,
                bytes: u.total_bytes(),
                transcript_copy: u.transcript_bytes > 0,
                imported: !u.imports.is_empty(),
            });
        }
        out.sort_by(|a, b| b.last_ts.cmp(&a.last_ts));
        Ok(out)
    }

    /// How many sessions [`SessionState::list`] shows in each state, without reading the
    /// whole journal: the fold from its snapshot, each session's records from the line index
    /// (`crate::fold::located`). Without an index (or with subfolder journals beside this
    /// one), [`SessionState::list`] counts them.
    pub(crate) fn count_by_state(project: &Project) -> Result<BTreeMap<String, usize>, SessionError> {
        let mut out: BTreeMap<String, usize> = BTreeMap::new();
        let index = crate::project::legacy::find(project)
            .is_empty()
            .then(|| crate::fold::located::load(&project.journal))
            .flatten();
        let Some(index) = index else {
            for s in Self::list(project)? {
                *out.entry(s.state).or_insert(0) += 1;
            }
            return Ok(out);
        };
        let opts = FoldOptions::default();
        let mut fold = Fold::load(&project.journal, &opts).map_err(SessionError::io("reading", &project.journal))?;
        crate::bashsnap::killed::reconcile(project, &mut fold, &opts);
        let usage = index.usage();
        for s in fold.sessions.iter().filter(|s| !s.session.is_empty()) {
            let (records, marks) = usage.get(s.session.as_str()).copied().unwrap_or_default();
            if records > 0 && records == marks {
                // Marks only, as `list` leaves them out.
                continue;
            }
            *out.entry(s.status().as_str().to_string()).or_insert(0) += 1;
        }
        Ok(out)
    }

    /// One session in full, by id or unique prefix.
    pub(crate) fn load(project: &Project, prefix: &str) -> Result<SessionState, SessionError> {
        let read_err = || SessionError::io("reading", &project.journal);
        // The light fold sees every session's records: deliveries and announcements are
        // recorded by later sessions.
        let light = Fold::load(&project.journal, &FoldOptions::default()).map_err(read_err())?;
        let full = resolve(&light, prefix)?;
        let heavy_opts = FoldOptions { keep_settled: true, session: Some(full.clone()), all_commands: true };
        let mut heavy = Fold::load(&project.journal, &heavy_opts).map_err(read_err())?;
        crate::bashsnap::killed::reconcile(project, &mut heavy, &heavy_opts);
        heavy.check_disk(project);
        // Where HEAD is now, and the commands that moved it (a crashed session's too).
        heavy.read_head(&project.root);
        let mut info = heavy.session(&full).cloned().ok_or_else(|| SessionError::Unknown(prefix.to_string()))?;
        if let Some(l) = light.session(&full) {
            info.announced = l.announced;
        }
        let status = info.status();
        let entries: Vec<Entry> = heavy.entries_of(&full).cloned().collect();
        let handoffs: Vec<Handoff> = light.handoffs.iter().filter(|h| h.session == full).cloned().collect();
        let usage = scan_usage(project, Some(&full)).map_err(read_err())?.remove(&full).unwrap_or_default();
        let transcript = transcript::status(project, &full, info.transcript.as_deref());
        let ids = crate::fold::ShortIds::load(&project.journal)
            .unwrap_or_default()
            .with_shown(entries.iter().map(|e| e.id.as_str()));
        Ok(SessionState { info, status, entries, handoffs, usage, transcript, ids })
    }

    pub(crate) fn session(&self) -> &str {
        &self.info.session
    }

    pub(crate) fn unresolved(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.is_unresolved())
    }

    /// Changed paths in order of first change.
    pub(crate) fn files(&self) -> Vec<FileChange> {
        let mut order: Vec<String> = Vec::new();
        let mut by_path: HashMap<&str, FileChange> = HashMap::new();
        for e in &self.entries {
            let fc = by_path.entry(e.path.as_str()).or_insert_with(|| {
                order.push(e.path.clone());
                FileChange {
                    path: e.path.clone(),
                    state: String::new(),
                    entries: Vec::new(),
                    unresolved: 0,
                    outside: e.outside,
                }
            });
            fc.state = e.state().as_str().to_string();
            fc.entries.push(e.id.clone());
            if e.is_unresolved() {
                fc.unresolved += 1;
            }
        }
        order.iter().filter_map(|p| by_path.remove(p.as_str())).collect()
    }

    /// Where the session came from when it was imported (the latest import).
    pub(crate) fn imported_from(&self) -> Option<&Value> {
        self.usage.imports.last()
    }

    /// The folder a command's recorded `cwd` maps to in this project: the recorded one when it
    /// exists, else (imported sessions) the same place under this project's root.
    pub(crate) fn local_cwd(&self, project: &Project, recorded: Option<&str>) -> Option<PathBuf> {
        let recorded = recorded.or(self.info.cwd.as_deref())?;
        let p = PathBuf::from(recorded);
        if p.is_dir() && (p.starts_with(&project.root) || self.imported_from().is_none()) {
            return Some(p);
        }
        let from = self.imported_from().and_then(|v| v.get("source_root")).and_then(Value::as_str)?;
        let rel = p.strip_prefix(from).ok()?;
        let mapped = project.root.join(rel);
        mapped.is_dir().then_some(mapped)
    }

    /// The whole state as JSON (`walj sessions show --json`), each entry drawn by `entry_json`
    /// (the one entry JSON, `report::entry_json`, which lives with the other faces).
    pub(crate) fn to_json(
        &self,
        project: &Project,
        procs: &[procs::ProcStatus],
        entry_json: impl Fn(&Entry, &ShortIds) -> Value,
    ) -> Value {
        let s = &self.info;
        let (done, total) = s.todos_done();
        let entries: Vec<Value> = self.entries.iter().map(|e| entry_json(e, &self.ids)).collect();
        let unresolved: Vec<Value> =
            self.entries.iter().filter(|e| e.is_unresolved()).map(|e| entry_json(e, &self.ids)).collect();
        json!({
            "session": s.session,
            "sid": s.sid,
            "agent": s.agent().name(),
            "resume": crate::present::text::resume_line(project, s),
            "state": self.status.as_str(),
            "started": s.started.as_ref().unwrap_or(&s.first_ts),
            "last_ts": s.last_ts,
            "source": s.source,
            "model": s.model,
            "cwd": s.cwd,
            "branch": s.branch,
            "head": s.head,
            "git_moves": s.git_moves.iter().map(crate::present::git::git_move_json).collect::<Vec<_>>(),
            "end": s.end.as_ref().map(|(ts, reason)| json!({"ts": ts, "reason": reason})),
            "transcript": self.transcript.to_json(),
            "prompts": s.prompts.iter().map(|p| json!({"ts": p.ts, "text": p.text})).collect::<Vec<_>>(),
            "todos": {"done": done, "total": total, "items": s.todos},
            "files": self.files(),
            "commands": s.commands,
            "commands_total": s.commands_total,
            "subagents": s.subagents,
            "processes": procs,
            "compactions": s.compactions.iter().map(|(ts, t)| json!({"ts": ts, "trigger": t})).collect::<Vec<_>>(),
            "last_assistant_message": s.last_assistant_message,
            "unresolved": unresolved,
            "entries": entries,
            "handoffs": self.handoffs.iter().map(|h| json!({
                "action": h.action,
                "kind": h.record.kind,
                "ts": h.ts,
                "delivered": h.delivered,
                "undone": h.undone,
                "entries": h.entries,
            })).collect::<Vec<_>>(),
            "announced": s.announced,
            "imported_from": self.imported_from(),
            "usage": self.usage,
        })
    }
}

/// A file-name-safe form of a session id (ids are UUIDs; anything else is escaped and
/// disambiguated with a hash).
pub(crate) fn file_stem(session: &str) -> String {
    let safe: String = session
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(96)
        .collect();
    if safe == session && !safe.is_empty() {
        safe
    } else {
        format!("{safe}-{:08x}", crc32c::crc32c(session.as_bytes()))
    }
}

/// Human size: `532 B`, `12.3 KB`, `4.1 MB`.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// True when the entry is settled (every state but the unresolved ones) and so may be
/// forgotten after the retention.
pub(crate) fn is_settled(e: &Entry) -> bool {
    !e.is_unresolved()
}

/// Marks of other sessions that concern `session`: its announcement, and deliveries of its
/// briefs. They travel with the session in a bundle.
pub(crate) fn is_mark_for(
    kind_: Option<&str>,
    target: Option<&str>,
    session: &str,
    actions: &BTreeSet<String>,
) -> bool {
    match (kind_, target) {
        (Some(kind::ANNOUNCED), Some(t)) => t == session,
        (Some(kind::DELIVERED), Some(t)) => actions.contains(t),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_finds_quoted_ids_only() {
        let a = "ce013625030ba8dba906f756967f9e9ca394464a";
        let line = format!(r#"{{"before":"{a}","after":null,"x":"{a}0","y":"zz{a}"}}"#);
        let ids: Vec<&str> = hex_ids(line.as_bytes()).collect();
        assert_eq!(ids, vec![a]);
        let two = format!(r#"["{a}","{a}"]"#);
        assert_eq!(hex_ids(two.as_bytes()).count(), 2);
    }

    #[test]
    fn file_stems() {
        assert_eq!(file_stem("8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10"), "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10");
        let odd = file_stem("../etc/passwd");
        assert!(!odd.contains('/') && !odd.contains(".."), "{odd}");
        assert_ne!(file_stem("a/b"), file_stem("a_b"));
        assert_eq!(human_bytes(500), "500 B");
        assert_eq!(human_bytes(2048), "2.0 KB");
    }
}
