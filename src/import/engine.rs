//! The machinery every importer shares: where imported records go ([`Sink`]: records already
//! in the journal skipped, images stored before the lines naming them), the images an import
//! keeps ([`Blobs`]), how an imported turn is settled ([`turn_settled`]), where a file of
//! another machine's session lands ([`locate_from`]), and the report ([`ImportReport`]).
//! Claude Code's transcripts ([`super::claude`]) and the other agents' session files
//! ([`super::agents`]) are both written through it.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::config::{Config, Matcher};
use crate::journal::build;
use crate::journal::{Blob, JournalWriter, Record, key, kind, nocap, op, scan_records};
use crate::project::{Located, Project};
use crate::store::{Store, blob_id};

/// `by` of the records import writes.
pub(crate) const BY_IMPORT: &str = "import";

/// The `persisted` record (`r`, stamped with its session and time) settling the imported
/// entry `e` at the end of its turn, as the agent's Stop hook would have: unverified (the disk
/// of that time is gone), by import.
fn settled_by_import(mut r: Record, e: &Record) -> Record {
    r.id = e.id.clone();
    r.path = e.path.clone();
    r.event = e.event.clone();
    r.tool = e.tool.clone();
    r.after = e.after.clone();
    r.outside = e.outside;
    r.persisted = true;
    r.with(key::UNVERIFIED, true).with(key::BY, BY_IMPORT)
}

/// Why an imported change outside the project is settled at once.
pub(crate) const OUTSIDE_REASON: &str = "outside the project";

/// The record settling `e`, a change to a file outside the project (Claude's plan files under
/// `~/.claude/plans/`, a scratch file in /tmp): walj captured nothing there and writes nothing
/// there, so it is session context (the session names the file), never an unresolved entry.
/// A call that failed did not change the file (not applied); any other is settled as the
/// turn's end would settle it (`persisted`, unverified, by import), with the reason.
pub(crate) fn settled_outside(mut r: Record, e: &Record, failed: bool) -> Record {
    if failed {
        r.id = e.id.clone();
        r.path = e.path.clone();
        r.event = e.event.clone();
        r.tool = e.tool.clone();
        r.outside = true;
        return build::not_applied(r, BY_IMPORT).with(key::REASON, OUTSIDE_REASON);
    }
    settled_by_import(r, e).with(key::REASON, OUTSIDE_REASON)
}

/// The records that end an imported turn, as the agent's Stop hook would have: the calls that
/// failed in a turn that went on, settled as not applied; the entries applied in it (indexes
/// into `records`), settled by a `persisted` record (`persisted(e)` stamps its session and time).
pub(crate) fn turn_settled(
    failed: Vec<Record>,
    applied: Vec<usize>,
    records: &[Record],
    persisted: impl Fn(&Record) -> Record,
) -> Vec<Record> {
    let not_applied = failed.into_iter().map(|r| build::not_applied(r, BY_IMPORT));
    not_applied.chain(applied.into_iter().map(|i| settled_by_import(persisted(&records[i]), &records[i]))).collect()
}

/// Records per journal write.
const BATCH: usize = 2000;

/// Every `*.jsonl` under `dir` (subagent transcripts included), recursively. Links to files
/// count; links to folders are not followed (no loops).
pub(crate) fn jsonl_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => jsonl_under(&p, out),
            Ok(t) if (t.is_file() || t.is_symlink() && p.is_file()) && p.extension().is_some_and(|x| x == "jsonl") => {
                out.push(p)
            }
            _ => {}
        }
    }
}

/// Longest line an import reads (64 MiB): a transcript line holds one message, its tool
/// calls and results (a large Write, an image) and stays far under it; a longer one is
/// skipped, counted ([`FileReport::oversized`]), without holding more of it in memory.
pub(crate) const MAX_LINE: usize = 64 << 20;

/// One line of `reader` into `buf` (cleared first), with its `\n` when it has one. `Ok(None)`
/// at the end; `Ok(Some(true))` when the line was longer than `max`: what `buf` holds then is
/// its start only, the rest was read past and dropped.
pub(crate) fn read_line_capped(
    reader: &mut impl io::BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<bool>> {
    buf.clear();
    let mut read_any = false;
    let mut cut = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(read_any.then_some(cut));
        }
        read_any = true;
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = max.saturating_sub(buf.len());
        if take > room {
            cut = true;
        }
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(take);
        if done {
            return Ok(Some(cut));
        }
    }
}

/// A call still waiting for its result when the transcript ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct InFlight {
    pub session: String,
    pub id: String,
    pub tool: String,
    /// The file (project-relative when inside) or the command.
    pub what: String,
}

/// What one transcript gave.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct FileReport {
    pub path: PathBuf,
    pub sessions: Vec<String>,
    pub lines: u64,
    /// Records appended (new to the journal).
    pub added: usize,
    /// Records already in the journal.
    pub existing: usize,
    pub tool_calls: usize,
    pub in_flight: Vec<InFlight>,
    /// The last line was cut (Claude Code crashed while writing it).
    pub torn_tail: bool,
    /// Lines that were not JSON (other than a torn last line).
    pub malformed: u64,
    /// Lines longer than [`MAX_LINE`]: skipped unread.
    #[serde(skip_serializing_if = "is_zero")]
    pub oversized: u64,
    /// Files outside the project the session changed (absolute paths): kept as session
    /// context, settled at once, never unresolved nor reverted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<String>,
    /// Todo list items that were not todos (no text): skipped, the list's other items kept.
    #[serde(skip_serializing_if = "is_zero")]
    pub todos_skipped: u64,
    /// The coding agent whose session file this is, when not Claude Code (`codex`, `gemini`,
    /// `copilot`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The session was journaled by walj's hooks: nothing imported from this file (another
    /// agent's session files have other call ids than its hooks, so they would count twice).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hooked: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub(crate) struct ImportReport {
    pub files: Vec<FileReport>,
    pub added: usize,
    pub existing: usize,
}

impl ImportReport {}

/// Import options.
#[derive(Debug, Clone, Default)]
pub(crate) struct ImportOptions {
    /// Claude Code's config folder (file-history backups live there).
    pub config_dir: Option<PathBuf>,
    /// Show a progress bar (on a terminal).
    pub progress: bool,
}

/// Keys of records already in the journal.
#[derive(Default)]
struct Existing {
    keys: HashSet<(String, String, String)>,
    /// Prompts the hooks recorded (they carry no id): (session, text hash) → how many.
    hooked_prompts: HashMap<(String, String), usize>,
    /// Sessions with a start record (hooked or imported).
    started: HashSet<String>,
    /// StopFailures the hooks recorded, per session: the transcript's API error answers are
    /// the same turns' ends.
    hooked_failures: HashMap<String, usize>,
    /// Sessions the hooks journaled (a start, prompt, stop, end or intent not imported).
    hooked: HashSet<String>,
}

impl Existing {
    fn load(journal: &Path) -> io::Result<Existing> {
        let mut ex = Existing::default();
        scan_records(journal, |_, r| {
            let k = r.kind.clone().unwrap_or_default();
            if r.kind.as_deref() == Some(kind::PROMPT)
                && r.id.is_empty()
                && let Some(p) = r.get_str(key::PROMPT)
            {
                *ex.hooked_prompts.entry((r.session_key().to_string(), blob_id(p.as_bytes()))).or_default() += 1;
            }
            if r.kind.as_deref() == Some(kind::START) {
                ex.started.insert(r.session_key().to_string());
            }
            if r.kind.as_deref() == Some(kind::STOP_FAILURE) && r.extra.get(key::IMPORTED).is_none() {
                *ex.hooked_failures.entry(r.session_key().to_string()).or_default() += 1;
            }
            let hook_written = r.op() == op::INTENT
                || r.op() == op::SESSION
                    && matches!(r.kind.as_deref(), Some(kind::START | kind::PROMPT | kind::STOP | kind::END));
            if hook_written && r.extra.get(key::IMPORTED).is_none() {
                ex.hooked.insert(r.session_key().to_string());
            }
            if !r.id.is_empty() {
                ex.keys.insert((r.id.clone(), r.op().to_string(), k));
            }
        })?;
        Ok(ex)
    }
    /// True (and remembered) when no record with the same (id, op, kind) is in the journal:
    /// how records of other agents' session files, which all carry their own ids, are told new.
    fn admit_keyed(&mut self, r: &Record) -> bool {
        self.keys.insert((r.id.clone(), r.op.clone(), r.kind.clone().unwrap_or_default()))
    }

    /// True (and remembered) when the record is new.
    fn admit(&mut self, r: &Record) -> bool {
        if r.kind.as_deref() == Some(kind::START) && !self.started.insert(r.session.clone()) {
            return false;
        }
        if !self.keys.insert((r.id.clone(), r.op.clone(), r.kind.clone().unwrap_or_default())) {
            return false;
        }
        if r.kind.as_deref() == Some(kind::STOP_FAILURE)
            && let Some(n) = self.hooked_failures.get_mut(&r.session)
            && *n > 0
        {
            *n -= 1;
            return false;
        }
        // A prompt the hooks already recorded (once per time they saw it).
        if r.kind.as_deref() == Some(kind::PROMPT)
            && let Some(p) = r.get_str(key::PROMPT)
            && let Some(n) = self.hooked_prompts.get_mut(&(r.session.clone(), blob_id(p.as_bytes())))
            && *n > 0
        {
            *n -= 1;
            return false;
        }
        true
    }
}

/// Why an import stopped (a transcript that cannot be read is not one: it is reported in its
/// [`FileReport`] and the others are imported).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ImportError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("creating {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("storing pre- and post-images in {path}: {source}")]
    Store { path: PathBuf, source: crate::store::StoreError },
    #[error("appending to {path}: {source}")]
    Append { path: PathBuf, source: io::Error },
}

/// Where imported records go: the journal (records already in it skipped) and the store.
pub(crate) struct Sink<'p> {
    project: &'p Project,
    store: Store,
    existing: Existing,
    ensured: bool,
    pub report: ImportReport,
}

impl<'p> Sink<'p> {
    pub(crate) fn open(project: &'p Project) -> Result<Sink<'p>, ImportError> {
        let existing = Existing::load(&project.journal)
            .map_err(|source| ImportError::Read { path: project.journal.clone(), source })?;
        Ok(Sink {
            project,
            store: Store::new(project.store_dir()),
            existing,
            ensured: false,
            report: ImportReport::default(),
        })
    }

    /// Whether walj's hooks journaled `session`.
    pub(crate) fn hooked(&self, session: &str) -> bool {
        self.existing.hooked.contains(session)
    }

    /// Appends the new ones of `records` (`keyed`: told new by their ids alone), after storing
    /// the objects they name; `fr` is completed and kept in the report.
    pub(crate) fn add(
        &mut self,
        mut fr: FileReport,
        records: Vec<Record>,
        blobs: Vec<(String, Vec<u8>)>,
        produced: usize,
        keyed: bool,
    ) -> Result<(), ImportError> {
        let existing = &mut self.existing;
        let records: Vec<Record> =
            records.into_iter().filter(|r| if keyed { existing.admit_keyed(r) } else { existing.admit(r) }).collect();
        fr.existing = produced - records.len();
        fr.added = records.len();
        if !records.is_empty() {
            if !self.ensured {
                self.project
                    .ensure_dir()
                    .map_err(|source| ImportError::CreateDir { path: self.project.dir.clone(), source })?;
                self.ensured = true;
            }
            // Every object a line names is durable before the line is written.
            let named: HashSet<&str> =
                records.iter().flat_map(|r| [&r.before, &r.after]).filter_map(|b| b.as_ref()?.id()).collect();
            let blobs: Vec<(String, Vec<u8>)> =
                blobs.into_iter().filter(|(id, _)| named.contains(id.as_str())).collect();
            self.store
                .put_batch(&blobs)
                .map_err(|source| ImportError::Store { path: self.project.store_dir(), source })?;
            let writer = JournalWriter::new(&self.project.journal);
            for chunk in records.chunks(BATCH) {
                writer
                    .append_all(chunk)
                    .map_err(|source| ImportError::Append { path: self.project.journal.clone(), source })?;
            }
        }
        self.report.added += fr.added;
        self.report.existing += fr.existing;
        self.report.files.push(fr);
        Ok(())
    }
}

/// The images an import keeps: each object once, by id.
#[derive(Default)]
pub(crate) struct Blobs {
    pub list: Vec<(String, Vec<u8>)>,
    ids: HashSet<String>,
}

impl Blobs {
    /// The image of `bytes` at `rel`: stored (later, with the records), or named by id only
    /// with the reason (never captured, a secret, too large).
    pub(crate) fn put(
        &mut self,
        cfg: &Config,
        matcher: Option<&Matcher>,
        bytes: &[u8],
        rel: &str,
    ) -> (Blob, Option<String>) {
        let id = blob_id(bytes);
        if matcher.is_some_and(|m| m.never_capture(rel)) || crate::secrets::secret_content(bytes) {
            return (Blob::Id(id), Some(nocap::NEVER_CAPTURE.into()));
        }
        if bytes.len() as u64 > cfg.capture.max_bytes {
            return (Blob::Id(id), Some("too_large".into()));
        }
        if self.ids.insert(id.clone()) {
            self.list.push((id.clone(), bytes.to_vec()));
        }
        (Blob::Id(id), None)
    }
}

/// Where a tool's file lands in `project`: remapped from `origin` (the session's first working
/// folder) when the session was recorded elsewhere (another machine, a moved project).
pub(crate) fn locate_from(project: &Project, origin: Option<&Path>, file_path: &str, cwd: Option<&str>) -> Located {
    let found = project.locate(file_path, cwd.map(Path::new));
    if let Located::Outside(abs) = &found
        && let Some(origin) = origin
    {
        // Only a session from elsewhere: its folder is unrelated to this project and no
        // longer exists here.
        let root = &project.root;
        if !origin.starts_with(root)
            && !root.starts_with(origin)
            && !origin.is_dir()
            && let Ok(rel) = abs.strip_prefix(origin)
            && !rel.as_os_str().is_empty()
        {
            return project.locate(&project.root.join(rel).to_string_lossy(), None);
        }
    }
    found
}

/// Timestamps as walj writes them (UTC, milliseconds, `Z`) when they parse; verbatim else.
pub(crate) fn normalize_ts(ts: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(ts) {
        Ok(t) => t.with_timezone(&chrono::Utc).format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        Err(_) => ts.to_string(),
    }
}

/// Files modified in the last `days` days (for "recent" transcripts); `None` (no limit)
/// when that reaches before the clock's range.
pub(crate) fn since_days(days: u64) -> Option<SystemTime> {
    SystemTime::now().checked_sub(Duration::from_secs(days.saturating_mul(24 * 3600)))
}
