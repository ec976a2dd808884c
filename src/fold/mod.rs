//! The fold: journal records → one state per tool call, plus per-session context
//! (DESIGN §4 and §6).
//!
//! ```text
//! intent ──PostToolUse──▶ applied ──Stop / checkpoint verifies disk──▶ persisted
//!    │                      └──PostToolUseFailure──▶ failed
//!    └──no outcome, Stop sees file == before──▶ not_applied
//! any unresolved state ──user──▶ done | reverted | handed_back   (undo: a later record)
//! ```
//!
//! Lines are parsed through a borrowed, partial view first; only session records and
//! commands are parsed in full. Without `keep_settled`, persisted entries are dropped as
//! soon as they settle, so memory follows the unresolved entries, not the journal size.

mod apply;
pub mod ids;
pub mod located;
mod lookup;
mod model;
mod settled;
pub mod snapshot;

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::Path;

use crate::journal::view::{Classified, classify_fast};
use crate::journal::{ScanReport, Source};

pub(crate) use apply::{Pairing, todo_from_json};
pub use ids::ShortIds;
pub(crate) use lookup::IdError;
pub(crate) use lookup::abbrev;
pub(crate) use lookup::{id_starts_with, typeable};
pub(crate) use model::{
    Action, Entry, Handoff, InFlightCheck, SessionInfo, SessionStatus, Subagent, UNLISTED_SAMPLE, Unseen,
};
pub use model::{Command, CommandStatus, EntryState, FoldOptions, Todo};
use settled::SettledMap;
pub(crate) use settled::{capture_cap, disk_blob, link_blob};

/// Entry indexes by tool-call id; one per session that has the id (almost always one).
#[derive(Debug, Default, Clone)]
pub(crate) struct ById(HashMap<String, Vec<usize>>);

impl ById {
    /// The index of `session`'s entry `id`.
    #[inline]
    fn get(&self, entries: &[Entry], session: &str, id: &str) -> Option<usize> {
        self.0.get(id)?.iter().copied().find(|&i| entries[i].session == session)
    }

    /// The first index of `id` in journal order (whichever session).
    fn first(&self, id: &str) -> Option<usize> {
        self.0.get(id)?.iter().copied().min()
    }

    #[inline]
    fn insert(&mut self, id: &str, i: usize) {
        match self.0.get_mut(id) {
            Some(v) => v.push(i),
            None => {
                self.0.insert(id.to_string(), vec![i]);
            }
        }
    }

    /// Forgets index `i` of `id`.
    fn remove(&mut self, id: &str, i: usize) {
        if let Some(v) = self.0.get_mut(id) {
            v.retain(|&j| j != i);
            if v.is_empty() {
                self.0.remove(id);
            }
        }
    }

    /// The entry `id` at `from` now is at `to`.
    fn moved(&mut self, id: &str, from: usize, to: usize) {
        if let Some(j) = self.0.get_mut(id).and_then(|v| v.iter_mut().find(|j| **j == from)) {
            *j = to;
        }
    }
}

/// The folded journal.
#[derive(Debug, Default)]
pub struct Fold {
    /// Entries in journal order.
    pub entries: Vec<Entry>,
    /// Sessions in order of first appearance.
    pub sessions: Vec<SessionInfo>,
    pub handoffs: Vec<Handoff>,
    pub report: ScanReport,
    /// Records read.
    pub records: u64,
    /// Entries by tool-call id, then by session: an id is unique within a session only (imports
    /// from other agents and old transcripts repeat ids across sessions).
    by_id: ById,
    by_session: HashMap<String, usize>,
    /// Per path, the line and images of the latest entry dropped as settled (`keep_settled`
    /// false): the disk may hold that later change, which is not drift ([`Fold::check_disk`]).
    /// Digests (`settled::digest`), so memory stays small however many paths the journal names.
    settled: SettledMap,
    /// (session, id) of tool calls whose outcome came before any intent (an intent that
    /// waited in a side file): the intent pairs with the entry, even one already settled and
    /// dropped.
    outcome_first: HashSet<(String, String)>,
    /// The session of the previous record: consecutive lines mostly share one.
    last_session: Option<usize>,
    /// How this fold's ids are shown: whole until [`Fold::load_short_ids`] reads every id
    /// of the journal ([`ids`]).
    pub ids: ShortIds,
}

/// A fold in progress: the state after some lines, before [`Scan::finish`] (what a
/// snapshot keeps).
#[derive(Default)]
pub(crate) struct Scan {
    fold: Fold,
    pairs: Pairing,
    /// Lines the classifier skipped, in order.
    problems: Vec<crate::journal::Problem>,
}

/// What a fold with a session filter skips unparsed: lines without the session's first six
/// characters (every v2 line carries its 6-char sid), then lines of other sessions.
pub(crate) struct Feed<'a> {
    filter: Option<&'a str>,
    finder: Option<memchr::memmem::Finder<'static>>,
}

impl<'a> Feed<'a> {
    pub(crate) fn of(opts: &'a FoldOptions) -> Feed<'a> {
        let filter = opts.session.as_deref().filter(|s| !s.is_empty());
        let needle: Option<Vec<u8>> = filter.map(|s| s.chars().take(6).collect::<String>().into_bytes());
        let finder = needle.map(|n| memchr::memmem::Finder::new(&n).into_owned());
        Feed { filter, finder }
    }
}

impl Scan {
    /// Folds the lines `source` gives into this state.
    fn run(&mut self, source: Source<'_>, opts: &FoldOptions) -> io::Result<ScanReport> {
        let feed = Feed::of(opts);
        source.scan(|raw| self.feed(&feed, raw, opts))
    }

    /// Folds one line (what [`Scan::run`] does with each line its source gives).
    fn feed(&mut self, feed: &Feed<'_>, raw: crate::journal::RawLine<'_>, opts: &FoldOptions) {
        let Scan { fold, pairs, problems } = self;
        let filter = feed.filter;
        if let Some(f) = &feed.finder
            && f.find(raw.bytes).is_none()
        {
            return;
        }
        let view = match classify_fast(raw.line_no, raw.bytes) {
            Ok(Classified::Persisted { id, session }) => {
                if filter.is_none_or(|f| session.starts_with(f)) {
                    fold.records += 1;
                    fold.settle(session, id, opts);
                }
                return;
            }
            Ok(Classified::View(v)) => v,
            Err(p) => {
                problems.push(p);
                return;
            }
        };
        if let Some(f) = filter
            && !view.session_key().starts_with(f)
        {
            return;
        }
        fold.records += 1;
        fold.apply(raw.line_no, raw.bytes, view, opts, pairs);
    }

    /// The fold of every line scanned: settled entries dropped (unless kept), journal order,
    /// indexes, and liveness read fresh.
    fn finish(self, mut report: ScanReport, opts: &FoldOptions) -> Fold {
        let Scan { mut fold, problems, .. } = self;
        let torn = std::mem::take(&mut report.problems);
        for p in problems.into_iter().chain(torn) {
            report.push(p);
        }
        fold.report = report;
        if !opts.keep_settled {
            for e in std::mem::take(&mut fold.entries) {
                if matches!(e.state(), EntryState::Persisted | EntryState::NotApplied) {
                    fold.remember_settled(e);
                } else {
                    fold.entries.push(e);
                }
            }
        }
        // Settled entries were swap-removed: restore journal order.
        fold.entries.sort_by_key(|e| e.line);
        fold.reindex();
        fold.refresh_liveness();
        fold
    }
}

impl Fold {
    /// Reads and folds a journal, with the records of its side files that are not merged
    /// yet (`journal::side`). A missing journal folds to nothing.
    ///
    /// With the default options, the fold starts from the snapshot of an earlier fold
    /// ([`snapshot`]) when one matches the journal, and reads only the lines after it; it
    /// writes a new snapshot when it had to read more than [`snapshot::WRITE_AFTER`] bytes,
    /// in steps on a long journal, so a reader killed midway keeps what it folded.
    /// Any doubt (no snapshot, a damaged or stale one, side files waiting) is a full fold.
    pub fn load(journal: &Path, opts: &FoldOptions) -> io::Result<Fold> {
        // One session's lines, through the line index ([`located`]): the same fold.
        if let Ok(fold) = located::load_fold(journal, opts)? {
            return Ok(fold);
        }
        if let Some(fold) = snapshot::load(journal, opts, snapshot::WRITE_AFTER)? {
            return Ok(fold);
        }
        Fold::load_from(Source::journal(journal), opts)
    }

    /// [`Fold::load`] that stops at `deadline` (SessionStart's budget): `None` when a long
    /// journal could not be folded in time. What was folded stays in the snapshot, written in
    /// steps ([`snapshot::load_within`]), and the next reader continues from it. A journal the
    /// snapshot does not apply to (another name, side files waiting) is folded in full.
    pub(crate) fn load_within(
        journal: &Path,
        opts: &FoldOptions,
        deadline: std::time::Instant,
    ) -> io::Result<Option<Fold>> {
        match snapshot::load_within(journal, opts, deadline)? {
            Some(snapshot::Budgeted::Done(fold)) => Ok(Some(*fold)),
            Some(snapshot::Budgeted::Partial { .. }) => Ok(None),
            None => Fold::load_from(Source::journal(journal), opts).map(Some),
        }
    }

    /// [`Fold::load`] of what `source` names (a rewrite folds one file, or a snapshot of it).
    pub fn load_from(source: Source<'_>, opts: &FoldOptions) -> io::Result<Fold> {
        let mut scan = Scan::default();
        let report = scan.run(source, opts)?;
        Ok(scan.finish(report, opts))
    }

    fn reindex(&mut self) {
        self.by_id = ById::default();
        for (i, e) in self.entries.iter().enumerate() {
            self.by_id.insert(&e.id, i);
        }
    }

    /// Whether `(session, id)` is a tool call whose outcome came before its intent.
    fn is_outcome_first(&self, session: &str, id: &str) -> bool {
        // Mostly empty: no key is built for the lookup then.
        !self.outcome_first.is_empty() && self.outcome_first.contains(&(session.to_string(), id.to_string()))
    }

    /// The session of a record; `activity`: the record is the session's own work (not the
    /// user's triage of it), so it moves the session's last activity.
    pub(super) fn session_index(&mut self, key: &str, sid: &str, ts: &str, activity: bool) -> usize {
        let idx = match self.last_session {
            Some(i) if self.sessions[i].session == key => i,
            _ => match self.by_session.get(key) {
                Some(&i) => i,
                None => {
                    self.sessions.push(SessionInfo {
                        session: key.to_string(),
                        sid: if sid.is_empty() { key.chars().take(6).collect() } else { sid.to_string() },
                        first_ts: ts.to_string(),
                        ..SessionInfo::default()
                    });
                    self.by_session.insert(key.to_string(), self.sessions.len() - 1);
                    self.sessions.len() - 1
                }
            },
        };
        self.last_session = Some(idx);
        let s = &mut self.sessions[idx];
        if (activity || s.last_ts.is_empty()) && ts > s.last_ts.as_str() {
            // Reuse the buffer: this runs for every line.
            s.last_ts.clear();
            s.last_ts.push_str(ts);
        }
        idx
    }

    pub(super) fn session_mut(&mut self, key: &str, sid: &str, ts: &str, activity: bool) -> &mut SessionInfo {
        let i = self.session_index(key, sid, ts, activity);
        &mut self.sessions[i]
    }

    /// Folds records that are not (yet) journal lines, after the journal's last line: the
    /// changes of a killed command ([`crate::bashsnap::killed`]). Unreadable ones are skipped.
    pub(crate) fn add_records(&mut self, records: &[crate::journal::Record], opts: &FoldOptions) {
        let mut pairs = Pairing::default();
        for r in records {
            let line = r.to_line();
            let bytes = line.strip_suffix(b"\n").unwrap_or(&line);
            let no = self.report.lines + self.records + 1;
            if let Ok(view) = crate::journal::view::classify(no, bytes) {
                self.records += 1;
                self.apply(no, bytes, view, opts, &mut pairs);
            }
        }
        self.reindex();
    }

    /// Marks a killed command (and its derived entries) as still running `n` processes.
    pub(crate) fn mark_still_running(&mut self, command: &str, n: usize) {
        for e in self.entries.iter_mut().filter(|e| e.unfinished && e.parent.as_deref() == Some(command)) {
            e.still_running = true;
        }
        for s in &mut self.sessions {
            for c in s.commands.iter_mut().filter(|c| c.id == command) {
                c.running = Some(n);
                c.gone_ts = None;
            }
        }
    }

    /// Reads again whether each session's Claude Code process runs (the TUI, on a timer).
    pub(crate) fn refresh_liveness(&mut self) {
        for s in &mut self.sessions {
            s.refresh_liveness();
        }
    }

    /// Unresolved entries in journal order.
    pub fn unresolved(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.is_unresolved())
    }

    /// The entry of tool call `id`; the first in journal order when sessions repeat the id
    /// ([`Fold::entry_in`] when the session is known, [`Fold::find`] for what a user typed).
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.by_id.first(id).map(|i| &self.entries[i])
    }

    /// The entry of tool call `id` in `session`.
    pub(crate) fn entry_in(&self, session: &str, id: &str) -> Option<&Entry> {
        self.by_id.get(&self.entries, session, id).map(|i| &self.entries[i])
    }

    pub fn session(&self, key: &str) -> Option<&SessionInfo> {
        self.by_session.get(key).map(|&i| &self.sessions[i])
    }

    /// Entries of one session, in journal order.
    pub(crate) fn entries_of<'a>(&'a self, session: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        self.entries.iter().filter(move |e| e.session == session)
    }

    /// Handoffs not delivered (nor undone) yet.
    pub(crate) fn pending_handoffs(&self) -> impl Iterator<Item = &Handoff> {
        self.handoffs.iter().filter(|h| h.delivered.is_none() && !h.undone)
    }
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::journal::{JournalWriter, Record, kind, op};
    use crate::procinfo::ProcRef;

    /// Start time (clock ticks) of this process, from /proc/self/stat (field 22).
    fn own_start() -> u64 {
        let text = std::fs::read_to_string("/proc/self/stat").unwrap();
        let rest = &text[text.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(19).unwrap().parse().unwrap()
    }

    /// Liveness is read when the journal is folded and on `refresh_liveness`, not by
    /// `status()` (which the TUI calls per row and keystroke).
    #[test]
    fn liveness_is_read_once_per_load_and_on_refresh() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.jsonl");
        let mut r = Record::new(op::SESSION, "live-session");
        r.kind = Some(kind::START.into());
        r.pid = Some(std::process::id());
        r.pstart = Some(own_start());
        JournalWriter::new(&journal).append(&r).unwrap();
        let mut fold = Fold::load(&journal, &FoldOptions::default()).unwrap();
        assert_eq!(fold.sessions[0].status(), SessionStatus::Live);
        // Another process start: status() keeps what the load read...
        let me = fold.sessions[0].proc.unwrap();
        fold.sessions[0].proc = Some(ProcRef { pid: me.pid, start: me.start + 1 });
        assert_eq!(fold.sessions[0].status(), SessionStatus::Live);
        // ...until the liveness is refreshed.
        fold.refresh_liveness();
        assert_eq!(fold.sessions[0].status(), SessionStatus::Crashed);
        // An ended session is never read.
        fold.sessions[0].end = Some(("9999".into(), "exit".into()));
        fold.refresh_liveness();
        assert_eq!((fold.sessions[0].status(), fold.sessions[0].liveness), (SessionStatus::Ended, None));
    }
}

impl Fold {
    /// Reads where git's HEAD points now, for every session (the report compares it with what
    /// a command that never finished saw at its start).
    /// Also lists each session's commands that moved it ([`SessionInfo::git_moves`]), with
    /// the commits each made (`from..to`, at most 20).
    pub(crate) fn read_head(&mut self, root: &std::path::Path) {
        let head = crate::git::head_state(root);
        for s in &mut self.sessions {
            s.disk_head.clone_from(&head);
            let mut moves = s.find_git_moves();
            for m in &mut moves {
                if let (Some(a), Some(b)) = (&m.from.id, &m.to.id) {
                    m.commits = crate::git::commits_between(root, a, b, 20);
                }
            }
            s.git_moves = moves;
        }
    }
}

/// A command that moved git's HEAD, as the reports tell it.
#[derive(Debug, Clone, PartialEq)]
pub struct GitMove {
    pub id: String,
    pub command: String,
    pub from: crate::git::Head,
    pub to: crate::git::Head,
    /// False: the command never finished, and `to` is where HEAD points on disk now (the
    /// command, or whatever ran after it, moved it).
    pub finished: bool,
    /// The commits `from..to`, newest first: (id, first line of the message).
    pub commits: Vec<(String, String)>,
}

impl SessionInfo {
    /// The session's commands that moved HEAD: those whose outcome names another HEAD than
    /// their intent, and a command cut off mid-run (its session gone) when HEAD on disk is
    /// no longer what it saw at its start.
    fn find_git_moves(&self) -> Vec<GitMove> {
        let mut out: Vec<GitMove> = self
            .head_moves
            .iter()
            .map(|m| GitMove {
                id: m.id.clone(),
                command: m.command.clone(),
                from: m.from.clone(),
                to: m.to.clone(),
                finished: true,
                commits: Vec::new(),
            })
            .collect();
        let gone = matches!(self.status(), SessionStatus::Crashed | SessionStatus::Ended);
        if let (true, Some(now)) = (gone, &self.disk_head) {
            // The latest cut-off command that saw another HEAD than the disk's.
            if let Some(c) = self.commands.iter().rev().find(|c| c.status == CommandStatus::InFlight && !c.background)
                && let Some(before) = &c.head_before
                && before != now
            {
                out.push(GitMove {
                    id: c.id.clone(),
                    command: c.command.clone(),
                    from: before.clone(),
                    to: now.clone(),
                    finished: false,
                    commits: Vec::new(),
                });
            }
        }
        out
    }
}
