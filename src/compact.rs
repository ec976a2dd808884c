//! The only code that rewrites the journal (DESIGN §1): `walj compact` and
//! `walj sessions delete` (`SessionState::delete`). It is on the top floor: deciding what to
//! keep needs the fold, the sessions and the report's JSON.
//!
//! Appenders are not held up while the journal is read (DESIGN §8: a hook must never wait
//! on a rewrite). A rewrite takes a snapshot (the journal's complete lines when it starts),
//! folds it to decide, copies the lines to keep verbatim into a temp file, then *verifies*
//! the result by folding it again: the recovery view (`recover --json`), pending briefs and
//! announcements must be exactly what they were (less the deleted session). Only then does it
//! take the journal's lock (`journal.lock`, the one every append takes), merge the side files
//! (`journal::side`), append what was written since the snapshot as it is, fsync, rename over
//! the journal and fsync the folder; the lock is held for that alone. The lines written
//! meanwhile come after the rewrite, as they would have had they waited for the lock. One
//! rewrite runs at a time (`journal.rewrite.lock`).
//!
//! Unreadable lines are never dropped silently: the snapshot is first copied to
//! `journal.jsonl.<time>.broken`. Objects no remaining line (nor a side file) names, and older
//! than an hour (so a hook that has just stored an image but not yet appended its line keeps
//! it), are removed last.
//!
//! What compaction keeps (retention = `[retention] days`, default 30):
//! - every record of a session that has unresolved entries (its recovery view stays identical);
//! - for other sessions still within retention, live, or with a pending brief: their context
//!   records (start, prompts, todos, stops, compactions, end), and entries or commands that are
//!   unresolved, failed, background or newer than the retention;
//! - announcements and deliveries whose subject is kept (or they would be made again);
//! - records walj does not know (newer versions).
//!
//! A session older than the retention, settled, not live and without a pending brief goes as a
//! whole, with its transcript copy.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Value, json};

use crate::fold::{CommandStatus, Entry, Fold, FoldOptions, Pairing, SessionStatus};
use crate::fsutil;
use crate::journal::view::{RecordView, classify};
use crate::journal::{JournalWriter, Source, key, kind, op, side};
use crate::project::Project;
use crate::session::{SessionError, SessionState, hex_ids, is_settled, resolve, transcript};
use crate::store::Store;

/// Objects younger than this are never removed: a hook may have stored one and not yet
/// appended the line that names it.
pub(crate) const OBJECT_GRACE: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Default)]
pub(crate) struct CompactOptions {
    /// Retention in days (`None`: the config's `[retention] days`).
    pub days: Option<u64>,
    pub dry_run: bool,
    /// Show a progress bar on a terminal for long runs.
    pub progress: bool,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOptions {
    pub dry_run: bool,
    /// Delete even a live session or one with unresolved entries.
    pub force: bool,
}

/// What a rewrite did (or, dry, would do).
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct RewriteReport {
    pub dry_run: bool,
    pub records_before: u64,
    pub records_after: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Malformed, checksum-failing or torn lines met (dropped; see `broken_copy`).
    pub unreadable: u64,
    pub broken_copy: Option<PathBuf>,
    pub objects_removed: u64,
    pub object_bytes_removed: u64,
    /// Unreferenced objects kept because they are younger than the grace period.
    pub objects_recent: u64,
    /// Objects no journal line names that a Bash snapshot waiting for its command's outcome
    /// (`.walj/bash/`) names: its pre-images, kept whatever their age.
    pub objects_pending: u64,
    /// Store temp files left by writers killed mid-write, older than the grace period.
    pub temps_removed: u64,
    pub sessions_removed: Vec<String>,
    pub transcripts_removed: u64,
    pub retention_days: Option<u64>,
}

impl RewriteReport {
    pub(crate) fn dropped(&self) -> u64 {
        self.records_before.saturating_sub(self.records_after)
    }
}

#[derive(Clone)]
enum Mode {
    Compact { cutoff: String },
    Delete { session: String },
}

/// `walj compact`.
pub(crate) fn compact(project: &Project, opts: &CompactOptions) -> Result<RewriteReport, SessionError> {
    let days = match opts.days {
        Some(d) => d,
        None => {
            let cfg = crate::config::Config::load(&project.config_path()).map_err(|e| {
                SessionError::Refused(format!("{e}; fix the config (or pass --days N) and run `walj compact` again"))
            })?;
            cfg.retention.days
        }
    };
    // A retention reaching before the calendar's range keeps everything (no record is
    // older than the empty cutoff).
    let cutoff = i64::try_from(days)
        .ok()
        .and_then(chrono::TimeDelta::try_days)
        .and_then(|d| chrono::Utc::now().checked_sub_signed(d))
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_default();
    let mut rep =
        rewrite(project, Mode::Compact { cutoff }, RunOptions { dry_run: opts.dry_run, progress: opts.progress })?;
    rep.retention_days = Some(days);
    Ok(rep)
}

/// `walj sessions delete`.
pub(crate) fn delete_session(
    project: &Project,
    prefix: &str,
    opts: &DeleteOptions,
) -> Result<RewriteReport, SessionError> {
    let fold =
        Fold::load(&project.journal, &FoldOptions::default()).map_err(SessionError::io("reading", &project.journal))?;
    let session = resolve(&fold, prefix)?;
    if !opts.force {
        let s = fold.session(&session).ok_or_else(|| SessionError::Unknown(prefix.to_string()))?;
        if s.status() == SessionStatus::Live {
            return Err(SessionError::Refused(format!(
                "session {} is live (its {} process runs); end it first, or pass --force",
                s.sid,
                s.agent().label()
            )));
        }
        let open = fold.entries_of(&session).filter(|e| e.is_unresolved()).count();
        if open > 0 {
            return Err(SessionError::Refused(format!(
                "session {} has {open} unresolved entr{}; resolve them first (walj recover --session {}), or pass --force to delete them with their images",
                s.sid,
                if open == 1 { "y" } else { "ies" },
                s.sid
            )));
        }
    }
    let mut rep = rewrite(
        project,
        Mode::Delete { session: session.clone() },
        RunOptions { dry_run: opts.dry_run, progress: false },
    )?;
    if !opts.dry_run {
        let tp = transcript::paths(project, &session);
        if tp.copy.exists() || tp.sidecar.exists() {
            transcript::remove(project, &session).map_err(SessionError::io("removing", &tp.copy))?;
            rep.transcripts_removed += 1;
        }
    }
    rep.sessions_removed = vec![session];
    Ok(rep)
}

/// The decisions, made from the fold of the whole journal.
struct Plan {
    mode: Mode,
    /// Sessions dropped whole.
    retired: HashSet<String>,
    /// Sessions kept whole (they have unresolved entries).
    whole: HashSet<String>,
    /// (session, entry id) whose records go: ids repeat across sessions.
    drop_entries: HashSet<(String, String)>,
    /// (session, command id) whose records go.
    drop_commands: HashSet<(String, String)>,
    /// Handoff actions whose records (and deliveries, undos) go.
    drop_handoffs: HashSet<String>,
    /// Lines up to this number keep their numbers (ids of v1 lines are `L<line>`): dropped
    /// lines before it become blank lines.
    keep_numbering_to: u64,
}

fn entry_time(e: &Entry) -> &str {
    let mut t = e.ts.as_str();
    if let Some(a) = &e.applied_ts {
        t = t.max(a.as_str());
    }
    for a in &e.actions {
        t = t.max(a.ts.as_str());
    }
    t
}

fn line_number_id(id: &str) -> Option<u64> {
    id.strip_prefix('L').and_then(|n| n.parse().ok())
}

impl Plan {
    fn new(fold: &Fold, mode: Mode) -> Plan {
        let mut plan = Plan {
            mode,
            retired: HashSet::new(),
            whole: HashSet::new(),
            drop_entries: HashSet::new(),
            drop_commands: HashSet::new(),
            drop_handoffs: HashSet::new(),
            keep_numbering_to: 0,
        };
        for e in &fold.entries {
            if let Some(n) = line_number_id(&e.id) {
                plan.keep_numbering_to = plan.keep_numbering_to.max(n);
            }
            for a in &e.actions {
                if let Some(n) = line_number_id(&a.action) {
                    plan.keep_numbering_to = plan.keep_numbering_to.max(n);
                }
            }
        }
        for h in &fold.handoffs {
            if let Some(n) = line_number_id(&h.action) {
                plan.keep_numbering_to = plan.keep_numbering_to.max(n);
            }
        }
        match &plan.mode {
            Mode::Delete { session } => {
                plan.retired.insert(session.clone());
                for h in fold.handoffs.iter().filter(|h| &h.session == session) {
                    plan.drop_handoffs.insert(h.action.clone());
                }
            }
            Mode::Compact { cutoff } => {
                let cutoff = cutoff.clone();
                let pending: HashSet<&str> = fold.pending_handoffs().map(|h| h.session.as_str()).collect();
                for s in fold.sessions.iter().filter(|s| !s.session.is_empty()) {
                    if fold.entries_of(&s.session).any(|e| e.is_unresolved()) {
                        plan.whole.insert(s.session.clone());
                    } else if s.last_ts < cutoff
                        && !pending.contains(s.session.as_str())
                        && s.status() != SessionStatus::Live
                    {
                        plan.retired.insert(s.session.clone());
                    }
                }
                for e in &fold.entries {
                    if !plan.whole.contains(&e.session) && is_settled(e) && entry_time(e) < cutoff.as_str() {
                        plan.drop_entries.insert((e.session.clone(), e.id.clone()));
                    }
                }
                for s in fold.sessions.iter().filter(|s| !plan.whole.contains(&s.session)) {
                    for c in &s.commands {
                        if c.status == CommandStatus::Ok && !c.background && c.ts < cutoff {
                            plan.drop_commands.insert((s.session.clone(), c.id.clone()));
                        }
                    }
                }
                for h in &fold.handoffs {
                    let settled = h.delivered.is_some() || h.undone;
                    if plan.retired.contains(&h.session)
                        || (settled && h.ts < cutoff && !plan.whole.contains(&h.session))
                    {
                        plan.drop_handoffs.insert(h.action.clone());
                    }
                }
            }
        }
        plan
    }

    fn keep(&self, l: &RecordView<'_>, entry_id: Option<&str>) -> bool {
        let key = l.session_key();
        let target = l.target();
        let is_mark = l.op == op::SESSION && matches!(l.kind(), Some(kind::ANNOUNCED | kind::DELIVERED));
        match &self.mode {
            Mode::Delete { session } => {
                if is_mark {
                    // Marks the session wrote about *other* sessions stay, or those would be
                    // announced (or briefed) again.
                    return match l.kind() {
                        Some(kind::ANNOUNCED) => target != Some(session.as_str()),
                        _ => !target.is_some_and(|t| self.drop_handoffs.contains(t)),
                    };
                }
                if key == session.as_str() {
                    return false;
                }
                if l.op == op::UNDO && target.is_some_and(|t| self.drop_handoffs.contains(t)) {
                    return false;
                }
                if l.op == op::SESSION && l.kind() == Some(kind::IMPORTED) {
                    return target != Some(session.as_str());
                }
                true
            }
            Mode::Compact { cutoff } => {
                if self.whole.contains(key) {
                    return true;
                }
                if is_mark {
                    // Dropping a mark whose subject stays would make it happen again.
                    return match l.kind() {
                        Some(kind::ANNOUNCED) => target.is_some_and(|t| !self.retired.contains(t)),
                        _ => !target.is_some_and(|t| self.drop_handoffs.contains(t)),
                    };
                }
                let known = matches!(
                    l.op.as_ref(),
                    op::INTENT
                        | op::APPLIED
                        | op::FAILED
                        | op::PERSISTED
                        | op::RESOLVED
                        | op::UNDO
                        | op::HANDOFF
                        | op::SESSION
                        | op::AUDIT
                ) || l.is_v1();
                if !known {
                    return true; // a newer walj's record: not ours to judge
                }
                if !key.is_empty() && self.retired.contains(key) {
                    return false;
                }
                match l.op.as_ref() {
                    op::AUDIT => l.ts.as_ref() >= cutoff.as_str(),
                    op::SESSION if l.kind() == Some(kind::IMPORTED) => {
                        !target.is_some_and(|t| self.retired.contains(t))
                    }
                    op::SESSION => true,
                    op::HANDOFF => !l.action.as_deref().is_some_and(|a| self.drop_handoffs.contains(a)),
                    op::UNDO if target.is_some_and(|t| self.drop_handoffs.contains(t)) => false,
                    _ if l.is_command() => !self.drop_commands.contains(&(key.to_string(), l.id.to_string())),
                    _ => !entry_id.is_some_and(|id| self.drop_entries.contains(&(key.to_string(), id.to_string()))),
                }
            }
        }
    }
}

/// Maps a line to its entry id exactly as the fold does ([`Pairing`]).
#[derive(Default)]
struct EntryIds {
    pairs: Pairing,
}

impl EntryIds {
    fn of(&mut self, line: u64, l: &RecordView<'_>) -> Option<String> {
        if l.is_command() {
            return None;
        }
        let key = || (l.session_key().to_string(), l.tool.as_deref().unwrap_or("").to_string(), l.path.to_string());
        match l.op() {
            op::INTENT => Some(self.pairs.intent(line, &l.id, l.pair, key)),
            op::APPLIED | op::FAILED => Some(self.pairs.outcome(line, &l.id, l.pair, key)),
            op::PERSISTED | op::RESOLVED | op::UNDO => Some(l.id.to_string()),
            _ => None,
        }
    }
}

/// What must not change: the recovery view, pending briefs, announcements (`skip`: the deleted
/// session). Liveness is read once per session so both sides compare equal.
fn protected_view(fold: &Fold, skip: Option<&str>, live: &HashMap<String, SessionStatus>) -> Value {
    let mut sessions = Vec::new();
    for s in fold.sessions.iter().filter(|s| Some(s.session.as_str()) != skip) {
        let entries: Vec<Value> = fold
            .entries_of(&s.session)
            .filter(|e| e.is_unresolved())
            .map(|e| crate::report::entry_json(e, &fold.ids))
            .collect();
        if entries.is_empty() {
            continue;
        }
        let status = live.get(&s.session).copied().unwrap_or(SessionStatus::Unknown);
        sessions.push(crate::report::session_json(s, status, entries));
    }
    let pending: Vec<Value> = fold
        .pending_handoffs()
        .filter(|h| Some(h.session.as_str()) != skip)
        .map(|h| json!({"action": h.action, "session": h.session, "brief": h.brief, "entries": h.entries}))
        .collect();
    json!({"sessions": sessions, "pending_handoffs": pending})
}

fn announced_of(fold: &Fold) -> HashMap<String, bool> {
    fold.sessions.iter().map(|s| (s.session.clone(), s.announced)).collect()
}

/// How a rewrite runs.
#[derive(Debug, Clone, Copy, Default)]
struct RunOptions {
    dry_run: bool,
    /// Show a progress bar on a terminal for long runs.
    progress: bool,
}

/// How long a rewrite waits for the journal's lock for its final swap. Appenders hold it for
/// a moment; a holder that is stopped makes the rewrite give up, not wait without limit.
const SWAP_WAIT: Duration = Duration::from_secs(10);

/// A rewrite that finds, at its swap, the journal replaced or a line it may not copy as it is
/// (one named by its line number) starts again from a new snapshot, at most this many times.
const ATTEMPTS: usize = 3;

fn rewrite(project: &Project, mode: Mode, run: RunOptions) -> Result<RewriteReport, SessionError> {
    let journal = &project.journal;
    if !journal.exists() {
        return Ok(RewriteReport { dry_run: run.dry_run, ..RewriteReport::default() });
    }
    let writer = JournalWriter::new(journal);
    // One rewrite at a time (their temp files share a folder); appenders do not take this.
    let own_lock = writer.lock_path().with_extension("rewrite.lock");
    fsutil::with_lock(
        &own_lock,
        |op, e| SessionError::io(op, &own_lock)(e),
        || {
            let mut why = String::new();
            for _ in 0..ATTEMPTS {
                let mut rep = RewriteReport { dry_run: run.dry_run, ..RewriteReport::default() };
                match rewrite_once(project, &writer, mode.clone(), run, &mut rep)? {
                    None => return Ok(rep),
                    Some(w) => why = w,
                }
            }
            Err(SessionError::Refused(format!(
                "the journal kept changing during the rewrite ({why}); nothing was changed, run it again"
            )))
        },
    )
}

/// What the copying pass saw and kept.
#[derive(Default)]
struct Copied {
    /// Object ids the kept (and the unreadable) lines name.
    referenced: HashSet<String>,
    unreadable: u64,
    records_before: u64,
    records_after: u64,
    bytes_after: u64,
    /// Lines of the snapshot, and lines written (blank ones kept for numbering included).
    snapshot_lines: u64,
    written_lines: u64,
    write_err: Option<io::Error>,
    /// Kept lines whose carried images (`images`) were taken out.
    uncarried: u64,
    /// Objects written without a sync, to sync before the swap: carried by kept lines, or by
    /// dropped lines while a kept line names them by id only (deduplicated).
    to_sync: Vec<PathBuf>,
    /// The images dropped lines carry: id → the offset of a line that carries it.
    dropped_images: HashMap<String, u64>,
}

/// Where the rewritten journal goes: the journal's folder, its name, the temp file.
struct Paths {
    dir: PathBuf,
    name: String,
    tmp: PathBuf,
}

impl Paths {
    /// Removes the temp file on the way out of a failed rewrite.
    fn fail(&self, e: SessionError) -> SessionError {
        let _ = fs::remove_file(&self.tmp);
        e
    }
}

/// The journal's identity: a rewrite swaps only the file it read.
fn identity(journal: &Path) -> io::Result<(u64, u64, u64)> {
    let meta = fs::metadata(journal)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok((meta.dev(), meta.ino(), meta.len()))
    }
    #[cfg(not(unix))]
    Ok((0, 0, meta.len()))
}

/// One rewrite (see the module's text). Appenders run freely while the journal is read,
/// folded, copied and verified (a snapshot: its complete lines when the rewrite started);
/// the journal's lock is taken only for the final swap, which copies what was appended
/// meanwhile as it is. `Some(why)`: see [`swap`]; nothing was changed, and the caller starts
/// again.
fn rewrite_once(
    project: &Project,
    writer: &JournalWriter,
    mode: Mode,
    run: RunOptions,
    rep: &mut RewriteReport,
) -> Result<Option<String>, SessionError> {
    let journal = &project.journal;
    let dir = journal.parent().unwrap_or(Path::new(".")).to_path_buf();
    let name = journal.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    remove_stale_temps(&dir, &name);
    let tmp = dir.join(format!(".{name}.walj-rewrite-{}", std::process::id()));
    let paths = Paths { dir, name, tmp };
    let (dev, ino, size) = identity(journal).map_err(SessionError::io("reading", journal))?;
    let all = FoldOptions { keep_settled: true, all_commands: true, ..Default::default() };
    let before = Fold::load_from(Source::prefix(journal, size), &all).map_err(SessionError::io("reading", journal))?;
    let end = before.report.end;
    let plan = Plan::new(&before, mode);
    rep.bytes_before = size;

    let mut out: Option<BufWriter<File>> = if run.dry_run {
        None
    } else {
        let f = fsutil::open_private(&paths.tmp, OpenOptions::new().write(true).create(true).truncate(true))
            .map_err(SessionError::io("creating", &paths.tmp))?;
        Some(BufWriter::with_capacity(1 << 20, f))
    };
    let store = Store::new(project.store_dir());
    let keep_images = (!run.dry_run).then_some(&store);
    let mut copied = copy_kept(journal, end, &plan, out.as_mut(), keep_images, progress_bar(run.progress, end))
        .map_err(|e| paths.fail(SessionError::io("reading", journal)(e)))?;
    if let Some(e) = copied.write_err.take() {
        return Err(paths.fail(SessionError::Io { op: "writing".into(), path: paths.tmp.clone(), source: e }));
    }
    // Objects named by records still waiting in side files are not swept.
    for (_, bytes) in side::read_pending(writer.side_dir()) {
        copied.referenced.extend(hex_ids(&bytes).map(str::to_string));
    }
    // The images the lines carried are in the store, durably, before any line loses them.
    if !run.dry_run {
        let named = &copied.referenced;
        keep_dropped_images(journal, &store, |id| named.contains(id), &mut copied.dropped_images, &mut copied.to_sync)
            .map_err(|e| paths.fail(e))?;
    }
    if let Err(e) = store.sync_objects(&copied.to_sync) {
        return Err(paths.fail(SessionError::Store(e)));
    }
    rep.unreadable = copied.unreadable;
    rep.records_before = copied.records_before;
    rep.records_after = copied.records_after;
    rep.bytes_after = copied.bytes_after;
    let nothing_to_drop =
        copied.records_before == copied.records_after && copied.unreadable == 0 && copied.uncarried == 0;
    match out.take() {
        Some(w) if !nothing_to_drop => {
            let f = w.into_inner().map_err(|e| paths.fail(SessionError::io("writing", &paths.tmp)(e.into_error())))?;
            // Synced now, so the swap under the lock syncs only the tail.
            f.sync_all().map_err(|e| paths.fail(SessionError::io("syncing", &paths.tmp)(e)))?;
            verify(journal, &paths, &before, &plan).map_err(|e| paths.fail(e))?;
            if copied.unreadable > 0 {
                rep.broken_copy = Some(broken_copy(journal, end, &paths).map_err(|e| paths.fail(e))?);
            }
            if let Some(why) = swap(writer, &paths, f, (dev, ino, end), (&store, &mut copied), rep)? {
                if let Some(b) = rep.broken_copy.take() {
                    let _ = fs::remove_file(b);
                }
                return Ok(Some(why));
            }
        }
        // Nothing to drop: leave the journal as it is (no rewrite, no new inode).
        other => {
            drop(other);
            let _ = fs::remove_file(&paths.tmp);
        }
    }
    sweep(project, &copied.referenced, run.dry_run, rep)?;
    finish_transcripts(project, &plan, run.dry_run, rep)?;
    Ok(None)
}

/// Under the journal's lock (side files merged first): appends what was written after the
/// snapshot to the rewrite as it is, syncs it and renames it over the journal. `Some(why)`:
/// the journal was replaced, or a new line's identity is its line number, which the
/// rewrite shifted (nothing changed).
fn swap(
    writer: &JournalWriter,
    paths: &Paths,
    mut tmp: File,
    (dev, ino, end): (u64, u64, u64),
    (store, copied): (&Store, &mut Copied),
    rep: &mut RewriteReport,
) -> Result<Option<String>, SessionError> {
    let journal = writer.path();
    let changed = |why: String| {
        let _ = fs::remove_file(&paths.tmp);
        Ok(Some(why))
    };
    let locked = writer.lock(SWAP_WAIT).map_err(|e| paths.fail(SessionError::io("locking", writer.lock_path())(e)))?;
    if locked.merged.left > 0 && side::interrupted(writer.side_dir()) {
        return changed("a merge of side files is under way".into());
    }
    let (dev2, ino2, size) = identity(journal).map_err(|e| paths.fail(SessionError::io("reading", journal)(e)))?;
    if (dev2, ino2) != (dev, ino) || size < end {
        return changed("the journal was replaced".into());
    }
    let mut tail = Vec::new();
    let read = fsutil::open_regular(journal).and_then(|(mut f, _)| {
        io::Seek::seek(&mut f, io::SeekFrom::Start(end))?;
        io::Read::read_to_end(&mut f, &mut tail)
    });
    read.map_err(|e| paths.fail(SessionError::io("reading", journal)(e)))?;
    // The tail is copied as it is: its records come after the rewrite, exactly as if they had
    // waited for the lock (what a rewrite that held the lock throughout gave). Lines dropped
    // before them shift their numbers, which only matters to records named by their number.
    let shifted = copied.written_lines != copied.snapshot_lines;
    let mut named = HashSet::new();
    for line in tail.split(|&b| b == b'\n') {
        let bytes = crate::journal::reader::trim(line);
        let Ok(l) = classify(0, bytes) else { continue };
        if shifted && numbered(&l) {
            return changed("a record named by its line number was appended meanwhile".into());
        }
        rep.records_before += 1;
        rep.records_after += 1;
        named.extend(hex_ids(bytes).map(str::to_string));
    }
    // A line appended meanwhile may name by id an image only a dropped line carries.
    copied.to_sync.clear();
    keep_dropped_images(journal, store, |id| named.contains(id), &mut copied.dropped_images, &mut copied.to_sync)
        .map_err(|e| paths.fail(e))?;
    store.sync_objects(&copied.to_sync).map_err(|e| paths.fail(SessionError::Store(e)))?;
    copied.referenced.extend(named);
    let mut write = || -> io::Result<()> {
        tmp.write_all(&tail)?;
        tmp.sync_all()
    };
    write().map_err(|e| paths.fail(SessionError::io("writing", &paths.tmp)(e)))?;
    drop(tmp);
    fs::rename(&paths.tmp, journal).map_err(|e| paths.fail(SessionError::io("replacing", journal)(e)))?;
    fsutil::sync_dir(&paths.dir).map_err(SessionError::io("syncing", &paths.dir))?;
    drop(locked);
    rep.bytes_before = size;
    rep.bytes_after += tail.len() as u64;
    Ok(None)
}

/// A record whose identity is its line number (`L<n>`): v1 lines, entries without an id,
/// triage records without an action.
fn numbered(l: &RecordView<'_>) -> bool {
    l.is_v1()
        || (l.id.is_empty() && matches!(l.op(), op::INTENT | op::APPLIED | op::FAILED))
        || (l.action.is_none() && matches!(l.op(), op::RESOLVED | op::HANDOFF))
}

/// Reads the journal's first `end` bytes once, writing the lines `plan` keeps to `out`
/// (none on a dry run).
fn copy_kept(
    journal: &Path,
    end: u64,
    plan: &Plan,
    mut out: Option<&mut BufWriter<File>>,
    store: Option<&Store>,
    bar: Option<indicatif::ProgressBar>,
) -> io::Result<Copied> {
    let mut c = Copied::default();
    let mut ids = EntryIds::default();
    let mut written_lines = 0u64;
    let mut last_tick = 0u64;
    let scan = Source::prefix(journal, end).scan(|raw| {
        if let Some(b) = &bar
            && raw.offset - last_tick > (1 << 20)
        {
            b.set_position(raw.offset);
            last_tick = raw.offset;
        }
        // The fold's own classifier: a line the fold reads is never dropped as unreadable.
        let keep = match classify(raw.line_no, raw.bytes) {
            Err(_) => {
                c.unreadable += 1;
                // Keep the images an unreadable line may name: it is only in the .broken copy now.
                for id in hex_ids(raw.bytes) {
                    c.referenced.insert(id.to_string());
                }
                false
            }
            Ok(l) => {
                c.records_before += 1;
                let entry = ids.of(raw.line_no, &l);
                plan.keep(&l, entry.as_deref())
            }
        };
        if keep {
            c.records_after += 1;
            for id in hex_ids(raw.bytes) {
                if !c.referenced.contains(id) {
                    c.referenced.insert(id.to_string());
                }
            }
        }
        // Keep line numbers where ids depend on them (`L<line>`): dropped and blank lines up to
        // the last such line stay as blank lines.
        let numbered = raw.line_no <= plan.keep_numbering_to;
        let mut buf: Vec<u8> = Vec::new();
        if numbered {
            while written_lines + 1 < raw.line_no {
                buf.push(b'\n');
                written_lines += 1;
            }
        }
        if !keep {
            // A dropped line's carried images may be named by id only by a kept line (the
            // hook names by id an image a recent line carries): noted, and those a kept line
            // names are written to the store before the line goes ([`keep_dropped_images`]).
            // The others go with the line, unless the store has a copy.
            for id in crate::store::carried_ids_of(raw.bytes) {
                c.dropped_images.entry(id.to_string()).or_insert(raw.offset);
                // A loose copy written without a sync (a Bash snapshot names it in a file of
                // its own, not in a line): synced before the line that has it durably goes.
                if let Some(p) = store.map(|s| s.object_path(id)).filter(|p| p.is_file()) {
                    c.to_sync.push(p);
                }
            }
        }
        if keep {
            let uncarried = uncarry(raw.bytes, store, &mut c);
            buf.extend_from_slice(uncarried.as_deref().unwrap_or(raw.bytes));
            buf.push(b'\n');
            written_lines += 1;
        } else if numbered {
            buf.push(b'\n');
            written_lines += 1;
        }
        c.bytes_after += buf.len() as u64;
        if let (Some(w), None) = (out.as_mut(), c.write_err.as_ref())
            && let Err(e) = w.write_all(&buf)
        {
            c.write_err = Some(e);
        }
    })?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    // Zeroed regions are damage too: the `.broken` copy keeps them.
    c.unreadable += scan.problems.iter().filter(|p| matches!(p, crate::journal::Problem::Zeroed { .. })).count() as u64;
    c.snapshot_lines = scan.lines;
    c.written_lines = written_lines;
    Ok(c)
}

/// Writes to the store (unsynced: into `to_sync`) the images only dropped lines of `journal`
/// carry (`dropped`, [`Copied::dropped_images`]) that a line still there names (`named`),
/// each once: a line may name by id only an image a recent line carries
/// ([`crate::store::Store::put_carried`]). The images nothing names go with their lines
/// (`walj sessions delete` removes a session's images).
fn keep_dropped_images(
    journal: &Path,
    store: &Store,
    named: impl Fn(&str) -> bool,
    dropped: &mut HashMap<String, u64>,
    to_sync: &mut Vec<PathBuf>,
) -> Result<(), SessionError> {
    let wanted: Vec<String> = dropped.keys().filter(|id| named(id)).cloned().collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let (f, _) = fsutil::open_regular(journal).map_err(SessionError::io("reading", journal))?;
    for id in wanted {
        let Some(at) = dropped.remove(&id) else { continue };
        if let Some(path) = store.keep_carried_at(&f, at, &id).map_err(SessionError::Store)? {
            to_sync.push(path);
        }
    }
    Ok(())
}

/// A kept line without the images it carries (`images`, [`crate::store::Store::put_carried`]),
/// each made durable in the store first (`store`; `None` on a dry run). `None`: the line
/// carries none, or could not be re-read, and is kept as it is.
fn uncarry(line: &[u8], store: Option<&Store>, c: &mut Copied) -> Option<Vec<u8>> {
    if !crate::journal::reader::contains(line, key::IMAGES_FIELD) {
        return None;
    }
    let mut r = crate::journal::record::parse_record(line).ok()?;
    let Some(Value::Object(images)) = r.extra.shift_remove(key::IMAGES) else { return None };
    if let Some(store) = store {
        let mut written = Vec::new();
        for (id, b64) in &images {
            match store.keep_carried(id, b64.as_str().unwrap_or_default()) {
                Ok(Some(path)) => written.push(path),
                Ok(None) => {}
                // Not in the store (it cannot be written): the line keeps its copies.
                Err(_) => return None,
            }
        }
        c.to_sync.extend(written);
    }
    c.uncarried += 1;
    let mut out = r.to_line();
    out.pop();
    Some(out)
}

/// Folds the rewritten journal: the recovery view, pending briefs and announcements must be
/// what they were (less a deleted session). Liveness is read once so both sides compare equal.
fn verify(journal: &Path, paths: &Paths, before: &Fold, plan: &Plan) -> Result<(), SessionError> {
    let skip = match &plan.mode {
        Mode::Delete { session } => Some(session.as_str()),
        Mode::Compact { .. } => None,
    };
    let live: HashMap<String, SessionStatus> =
        before.sessions.iter().map(|s| (s.session.clone(), s.status())).collect();
    let after = Fold::load_from(
        Source::file(&paths.tmp),
        &FoldOptions { keep_settled: true, all_commands: true, ..Default::default() },
    )
    .map_err(SessionError::io("reading", &paths.tmp))?;
    let (want, got) = (protected_view(before, skip, &live), protected_view(&after, None, &live));
    let announced_before = announced_of(before);
    let announced_lost =
        after.sessions.iter().any(|s| announced_before.get(&s.session).is_some_and(|&was| was != s.announced));
    if want != got || announced_lost {
        if std::env::var_os("WALJ_DEBUG_REWRITE").is_some() {
            eprintln!("want: {want:#}\ngot: {got:#}\nannounced_lost: {announced_lost}");
        }
        return Err(SessionError::Refused(format!(
            "the rewritten journal would not recover the same way; nothing was changed ({} kept as it is). Please report this (WALJ_DEBUG_REWRITE=1 prints the difference)",
            journal.display()
        )));
    }
    Ok(())
}

/// Copies the journal's first `end` bytes (the snapshot that had unreadable lines) aside to
/// `journal.jsonl.<time>.broken`, synced: the only place those lines stay.
fn broken_copy(journal: &Path, end: u64, paths: &Paths) -> Result<PathBuf, SessionError> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let broken = paths.dir.join(format!("{}.{stamp}.broken", paths.name));
    let copy = || -> io::Result<()> {
        let (src, _) = fsutil::open_regular(journal)?;
        let mut dst = fsutil::open_private(&broken, OpenOptions::new().write(true).create(true).truncate(true))?;
        io::copy(&mut io::Read::take(src, end), &mut dst)?;
        dst.sync_all()
    };
    copy().map_err(SessionError::io("copying the journal to", &broken))?;
    Ok(broken)
}

/// Transcript copies of sessions no record names any more go too (compaction).
fn finish_transcripts(
    project: &Project,
    plan: &Plan,
    dry_run: bool,
    rep: &mut RewriteReport,
) -> Result<(), SessionError> {
    if let Mode::Compact { .. } = plan.mode {
        rep.sessions_removed = plan.retired.iter().cloned().collect();
        rep.sessions_removed.sort();
        for s in &plan.retired {
            let tp = transcript::paths(project, s);
            if tp.copy.exists() {
                rep.transcripts_removed += 1;
                if !dry_run {
                    transcript::remove(project, s).map_err(SessionError::io("removing", &tp.copy))?;
                }
            }
        }
    }
    Ok(())
}

/// Removes objects no kept line names (older than the grace period).
fn sweep(
    project: &Project,
    referenced: &HashSet<String>,
    dry_run: bool,
    rep: &mut RewriteReport,
) -> Result<(), SessionError> {
    let store = Store::new(project.store_dir());
    let ids = store.ids().map_err(SessionError::io("listing", store.dir()))?;
    let pending = snapshot_ids(project)?;
    let now = SystemTime::now();
    rep.objects_removed = 0;
    rep.object_bytes_removed = 0;
    rep.objects_recent = 0;
    rep.objects_pending = 0;
    for id in ids {
        if referenced.contains(&id) {
            continue;
        }
        if pending.contains(&id) {
            rep.objects_pending += 1;
            continue;
        }
        let path = store.object_path(&id);
        let Ok(meta) = fs::metadata(&path) else { continue };
        let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).unwrap_or_default();
        if age < OBJECT_GRACE {
            rep.objects_recent += 1;
            continue;
        }
        rep.objects_removed += 1;
        rep.object_bytes_removed += meta.len();
        if !dry_run {
            store.remove(&id).map_err(SessionError::io("removing", &path))?;
        }
    }
    if !dry_run && rep.objects_removed > 0 {
        let _ = fsutil::sync_dir(store.dir());
    }
    let (temps, _) = store.sweep_temps(OBJECT_GRACE, dry_run).map_err(SessionError::io("sweeping", store.dir()))?;
    rep.temps_removed = temps + sweep_staging(project, &store, dry_run)?;
    Ok(())
}

/// Every object id the Bash snapshots in `.walj/bash/` name: a command's PreToolUse stores
/// the pre-images of the files dirty then, and no journal line names them until its outcome
/// is written (a long build, a command killed whose changes wait for its processes to end),
/// however long that takes. A snapshot that cannot be read stops the sweep: what it names is
/// not known.
fn snapshot_ids(project: &Project) -> Result<HashSet<String>, SessionError> {
    let dir = crate::bashsnap::bash_dir(project);
    let mut out = HashSet::new();
    let rd = match fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(SessionError::io("listing", &dir)(e)),
    };
    for ent in rd {
        let ent = ent.map_err(SessionError::io("listing", &dir))?;
        let path = ent.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        match fs::read(&path) {
            Ok(bytes) => out.extend(hex_ids(&bytes).map(str::to_string)),
            // Compared and removed meanwhile: its command's lines name what it named.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(SessionError::io("reading", &path)(e)),
        }
    }
    Ok(out)
}

/// Files a revert moved aside before deleting them (`.walj/staging/`, [`crate::triage`]'s
/// place step) that a crash left there, older than the grace period: stored (their bytes
/// normally are already), then removed. Never removed unless stored.
fn sweep_staging(project: &Project, store: &Store, dry_run: bool) -> Result<u64, SessionError> {
    let dir = project.dir.join("staging");
    let Ok(rd) = fs::read_dir(&dir) else { return Ok(0) };
    let now = SystemTime::now();
    let mut removed = 0;
    for ent in rd.flatten() {
        let path = ent.path();
        let Ok(meta) = fs::symlink_metadata(&path) else { continue };
        let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).unwrap_or_default();
        if !meta.is_file() || age < OBJECT_GRACE {
            continue;
        }
        removed += 1;
        if dry_run {
            continue;
        }
        let bytes = fs::read(&path).map_err(SessionError::io("reading", &path))?;
        store.put(&bytes).map_err(|e| SessionError::io("storing", &path)(std::io::Error::other(e.to_string())))?;
        fs::remove_file(&path).map_err(SessionError::io("removing", &path))?;
    }
    Ok(removed)
}

/// Temp files of an interrupted rewrite (this process's pid is never one of them).
fn remove_stale_temps(dir: &Path, name: &str) {
    let prefix = format!(".{name}.walj-rewrite-");
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = fs::remove_file(e.path());
        }
    }
}

fn progress_bar(enabled: bool, total: u64) -> Option<indicatif::ProgressBar> {
    // Only worth drawing for journals that take a noticeable time.
    if !enabled || total < (8 << 20) || !io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template("compacting {bar:40} {bytes}/{total_bytes} ({eta})") {
        bar.set_style(style);
    }
    Some(bar)
}

impl SessionState {
    /// Removes the session's records (atomic journal rewrite) and the objects nothing else
    /// names, and its transcript copy. Refuses a live session or one with unresolved
    /// entries unless `force`.
    pub(crate) fn delete(project: &Project, prefix: &str, opts: &DeleteOptions) -> Result<RewriteReport, SessionError> {
        delete_session(project, prefix, opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Blob, Record, how};

    fn rec(op_: &str, session: &str, ts: &str) -> Record {
        let mut r = Record::new(op_, session);
        r.ts = ts.to_string();
        r
    }

    fn session_rec(session: &str, k: &str, ts: &str) -> Record {
        let mut r = rec(op::SESSION, session, ts);
        r.kind = Some(k.to_string());
        r
    }

    /// An old settled session goes; a v1 entry (id = its line number) keeps its id; a recent
    /// session and an unresolved entry stay; an old audit goes.
    #[test]
    fn compaction_by_age_keeps_line_numbered_ids() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let project = Project::at(root.clone(), None);
        project.ensure_dir().unwrap();
        let old = "2020-01-01T00:00:00.000Z";
        let now = crate::journal::record::now_ts();
        let w = JournalWriter::new(&project.journal);
        let mut recs = vec![session_rec("old-session", kind::START, old)];
        let mut i = rec(op::INTENT, "old-session", old);
        i.id = "toolu_old".into();
        i.path = "a.txt".into();
        i.tool = Some("Write".into());
        i.before = Some(Blob::Absent);
        let mut a = i.clone();
        a.op = op::APPLIED.into();
        a.after = Some(Blob::Id("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391".into()));
        let mut p = a.clone();
        p.op = op::PERSISTED.into();
        p.persisted = true;
        recs.extend([i, a, p, session_rec("old-session", kind::END, old)]);
        let mut audit = rec(op::AUDIT, "", old);
        audit.event = "checkpoint".into();
        recs.push(audit);
        w.append_all(&recs).unwrap();
        // The proposal's own line (v1): its id is its line number.
        let v1 = br#"{"v":1,"sid":"a1b2c3","ts":"2019-03-23T09:43:02","event":"config_updated","path":"config/settings.json","persisted":false}"#;
        let mut line = v1.to_vec();
        line.push(b'\n');
        w.append_bytes(&line).unwrap();
        let mut new_start = session_rec("new-session", kind::START, &now);
        new_start = new_start.with("cwd", root.display().to_string());
        let mut open = rec(op::INTENT, "new-session", &now);
        open.id = "toolu_open".into();
        open.path = "b.txt".into();
        open.tool = Some("Edit".into());
        open.before = Some(Blob::Absent);
        let mut done = rec(op::INTENT, "new-session", &now);
        done.id = "toolu_done".into();
        done.path = "c.txt".into();
        done.tool = Some("Edit".into());
        let mut resolved = rec(op::RESOLVED, "new-session", &now);
        resolved.id = "toolu_done".into();
        resolved.how = Some(how::DONE.into());
        resolved.action = Some("act-1".into());
        w.append_all(&[new_start, open, done, resolved]).unwrap();

        let before = Fold::load(&project.journal, &FoldOptions::default()).unwrap();
        let v1_id = before.entries.iter().find(|e| e.v1).unwrap().id.clone();
        assert_eq!(v1_id, "L7");
        let view_before = crate::report::recover_json(&before);

        let dry = compact(&project, &CompactOptions { days: Some(30), dry_run: true, progress: false }).unwrap();
        assert_eq!(dry.records_before, 11);
        assert_eq!(dry.records_after, 5, "{dry:?}");
        assert_eq!(fs::read(&project.journal).unwrap().len() as u64, dry.bytes_before, "dry run wrote");

        let rep = compact(&project, &CompactOptions { days: Some(30), dry_run: false, progress: false }).unwrap();
        assert_eq!((rep.records_before, rep.records_after), (11, 5));
        assert_eq!(rep.sessions_removed, vec!["old-session".to_string()]);
        let after = Fold::load(&project.journal, &FoldOptions { keep_settled: true, ..Default::default() }).unwrap();
        assert!(after.entries.iter().any(|e| e.id == "L7" && e.v1), "the v1 entry kept its id");
        assert!(after.entry("toolu_done").is_some() && after.entry("toolu_open").is_some());
        assert!(after.session("old-session").is_none());
        assert_eq!(crate::report::recover_json(&after), view_before);
        // The object only the old session named goes once it is old enough; not before.
        let store = Store::new(project.store_dir());
        store.put(b"").unwrap();
        let rep = compact(&project, &CompactOptions { days: Some(30), dry_run: false, progress: false }).unwrap();
        assert_eq!((rep.objects_removed, rep.objects_recent), (0, 1));
    }

    /// One odd line must not block compaction: every reader classifies lines alike, so a line
    /// the fold reads is kept, and a line it skips goes to the `.broken` copy without changing
    /// what recovers.
    #[test]
    fn odd_lines_do_not_block_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let project = Project::at(root.clone(), None);
        project.ensure_dir().unwrap();
        let now = crate::journal::record::now_ts();
        let w = JournalWriter::new(&project.journal);
        let mut open = rec(op::INTENT, "s-odd", &now);
        open.id = "toolu_open".into();
        open.path = "b.txt".into();
        open.tool = Some("Edit".into());
        open.before = Some(Blob::Absent);
        // A wrongly typed field the fold does not decide on (a newer or foreign writer).
        let open = open.with("kind", 5).with("target", serde_json::json!(["x"]));
        w.append_all(&[open]).unwrap();
        // A wrongly typed field the fold needs: unreadable for every reader.
        w.append_bytes(
            b"{\"v\":\"2\",\"op\":\"intent\",\"session\":\"s-odd\",\"id\":\"toolu_bad\",\"path\":\"c.txt\"}\n",
        )
        .unwrap();
        let before = Fold::load(&project.journal, &FoldOptions::default()).unwrap();
        assert!(before.entry("toolu_open").is_some());
        assert_eq!(before.report.problems.len(), 1, "{:?}", before.report.problems);
        let view_before = crate::report::recover_json(&before);
        let opts = CompactOptions { days: Some(30), dry_run: false, progress: false };
        let rep = compact(&project, &opts).expect("compaction is not blocked");
        assert_eq!((rep.records_before, rep.records_after, rep.unreadable), (1, 1, 1));
        assert!(rep.broken_copy.as_ref().is_some_and(|p| p.exists()));
        let after = Fold::load(&project.journal, &FoldOptions::default()).unwrap();
        assert!(after.report.problems.is_empty());
        assert_eq!(crate::report::recover_json(&after), view_before);
        // And again: nothing left to do.
        let again = compact(&project, &opts).unwrap();
        assert_eq!((again.records_before, again.records_after, again.unreadable), (1, 1, 0));
    }
}
