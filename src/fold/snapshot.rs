//! The fold snapshot: a cache of the fold's state at a journal offset, so that loads read
//! only the lines appended since (SessionStart, Stop, `recover`, `status`, the TUI).
//!
//! A cache, never a source of truth. `.walj/fold.snap` holds the state of a fold in
//! progress ([`super::Scan`]: entries, sessions, handoffs, the settled-path digests, the
//! pairing of id-less intents, the lines skipped so far) after the journal's first `offset`
//! bytes, what the journal alone says: liveness and disk checks are computed fresh on top.
//! It is written (not fsynced; replaced atomically by a rename) by any process whose
//! default-options fold read more than [`WRITE_AFTER`] bytes past the snapshot it started
//! from, and thrown away when:
//! - its magic line or version differs, or its body's length or CRC-32C does not match;
//! - the journal is not the file it was taken of: another device or inode (a compaction or a
//!   deletion replaces the journal), shorter than `offset` (truncated), or the last
//!   [`PREFIX_CHECK`] bytes before `offset` have another CRC-32C (rewritten in place);
//! - side files are waiting (`journal::side`): their lines are read after the journal's, and
//!   a merge in progress may have copied some into the covered prefix.
//!
//! Any of these is a full fold, as without a snapshot. Folds with other options (a session
//! filter, settled entries kept, every command kept) never use it.
//!
//! Other machines' copies (`.walj/remotes/<id>/journal.jsonl`) are cached the same way, with
//! their snapshot in `.walj/cache/remotes/<id>/` ([`load_at`], `crate::sync::remotes`).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::apply::Pairing;
use super::model::{Entry, FoldOptions, Handoff, SessionInfo};
use super::{Fold, Scan};
use crate::journal::{Problem, Source, identity};

/// The first line of a snapshot file; the version changes with the state's layout.
const MAGIC: &str = "walj fold snapshot v5";

/// A fold that read more than this past its snapshot (or from the start) writes a new one.
pub const WRITE_AFTER: u64 = 1 << 20;

/// Bytes before the snapshot's offset whose checksum must still match.
pub(crate) const PREFIX_CHECK: u64 = 4096;

/// The snapshot file of `journal`: `fold.snap` next to a project's `.walj/journal.jsonl`;
/// `None` for any other journal: `--journal` files are never cached, and other machines'
/// copies in `.walj/remotes/` are cached elsewhere ([`load_at`], `crate::sync::remotes`).
pub fn path(journal: &Path) -> Option<PathBuf> {
    let dir = journal.parent()?.file_name()?;
    (journal.file_name()? == "journal.jsonl" && dir == ".walj").then(|| journal.with_file_name("fold.snap"))
}

/// Which journal, and how far: checked before the body is trusted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Header {
    dev: u64,
    ino: u64,
    /// The journal's bytes covered (the end of a complete line).
    offset: u64,
    /// Lines in those bytes (blank ones included).
    lines: u64,
    /// CRC-32C of the [`PREFIX_CHECK`] bytes before `offset`.
    prefix_crc: u32,
    body_len: u64,
    body_crc: u32,
}

/// A settled path's digest, with its latest settled line and image digests.
type SettledPath = (u64, (u64, [Option<u64>; 2]));

/// The state of a fold in progress, as stored.
#[derive(Serialize, Deserialize)]
struct State {
    entries: Vec<Entry>,
    sessions: Vec<SessionInfo>,
    handoffs: Vec<Handoff>,
    records: u64,
    /// Stored after the JSON, in binary ([`encode_settled`]): a long journal has one per
    /// distinct path, and parsing them as JSON numbers was most of a load's time.
    #[serde(skip)]
    settled: Vec<SettledPath>,
    outcome_first: Vec<(String, String)>,
    last_session: Option<usize>,
    pairs: Vec<((String, String, String), Vec<String>)>,
    /// Lines the classifier skipped.
    problems: Vec<Problem>,
    /// Zeroed regions the reader found in the covered bytes.
    regions: Vec<Problem>,
}

impl State {
    fn of(scan: &Scan, regions: Vec<Problem>) -> State {
        let f = &scan.fold;
        let mut outcome_first: Vec<(String, String)> = f.outcome_first.iter().cloned().collect();
        outcome_first.sort();
        let settled = f.settled.sorted();
        let mut pairs: Vec<_> = scan.pairs.open.iter().map(|(k, v)| (k.clone(), v.iter().cloned().collect())).collect();
        pairs.sort();
        State {
            entries: f.entries.clone(),
            sessions: f.sessions.clone(),
            handoffs: f.handoffs.clone(),
            records: f.records,
            settled,
            outcome_first,
            last_session: f.last_session,
            pairs,
            problems: scan.problems.clone(),
            regions,
        }
    }

    fn into_scan(self) -> (Scan, Vec<Problem>) {
        let mut fold = Fold {
            entries: self.entries,
            sessions: self.sessions,
            handoffs: self.handoffs,
            records: self.records,
            settled: super::SettledMap::from_sorted(self.settled),
            outcome_first: self.outcome_first.into_iter().collect(),
            last_session: self.last_session,
            ..Fold::default()
        };
        fold.last_session = fold.last_session.filter(|&i| i < fold.sessions.len());
        fold.by_session = fold.sessions.iter().enumerate().map(|(i, s)| (s.session.clone(), i)).collect();
        // Entries keep their in-progress order: the index maps ids to those positions.
        fold.reindex();
        let pairs = Pairing { open: self.pairs.into_iter().map(|(k, v)| (k, v.into())).collect() };
        (Scan { fold, pairs, problems: self.problems }, self.regions)
    }
}

/// CRC-32C of the [`PREFIX_CHECK`] bytes of `file` before `offset`.
pub(super) fn prefix_crc(file: &fs::File, offset: u64) -> io::Result<u32> {
    let start = offset.saturating_sub(PREFIX_CHECK);
    let mut buf = vec![0u8; (offset - start) as usize];
    let mut got = 0;
    while got < buf.len() {
        match crate::fsutil::read_at(file, &mut buf[got..], start + got as u64)? {
            0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "journal shorter than the snapshot")),
            n => got += n,
        }
    }
    Ok(crc32c::crc32c(&buf))
}

/// Whether a fold with `opts` may use a snapshot (only the default options are cached).
fn cacheable(opts: &FoldOptions) -> bool {
    !opts.keep_settled && !opts.all_commands && opts.session.as_deref().is_none_or(str::is_empty)
}

/// Why a snapshot was not used (tests and `walj doctor`-style diagnostics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unused {
    Missing,
    Damaged(String),
    Stale(&'static str),
}

/// The snapshot of `journal` when it matches the journal open as `file`: the state and the
/// header's (offset, lines).
fn read(snap: &Path, file: &fs::File) -> Result<(State, u64, u64), Unused> {
    let (raw, start, offset, lines) = read_cache(snap, MAGIC, file)?;
    let body = &raw[start..];
    let (json, settled) = split_body(body).ok_or_else(|| Unused::Damaged("body layout".into()))?;
    let mut state: State = serde_json::from_slice(json).map_err(|e| Unused::Damaged(format!("body: {e}")))?;
    state.settled = decode_settled(settled).ok_or_else(|| Unused::Damaged("settled paths".into()))?;
    Ok((state, offset, lines))
}

/// A cache file of a journal (`fold.snap`, the id index `ids.idx`) when it describes the
/// journal open as `file`: its bytes, where its body starts, and the (offset, lines) it
/// covers. The layout: a `magic` line, a [`Header`] line (which journal, how far, the body's
/// length and CRC-32C), the body.
pub(crate) fn read_cache(path: &Path, magic: &str, file: &fs::File) -> Result<(Vec<u8>, usize, u64, u64), Unused> {
    let mut raw = Vec::new();
    match fs::File::open(path) {
        Ok(mut f) => {
            raw.reserve(f.metadata().map_or(0, |m| m.len() as usize));
            f.read_to_end(&mut raw).map_err(|e| Unused::Damaged(e.to_string()))?
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Unused::Missing),
        Err(e) => return Err(Unused::Damaged(e.to_string())),
    };
    let mut parts = raw.splitn(3, |&b| b == b'\n');
    let (Some(m), Some(header), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(Unused::Damaged("too short".into()));
    };
    if m != magic.as_bytes() {
        return Err(Unused::Stale("another version"));
    }
    let h: Header = serde_json::from_slice(header).map_err(|e| Unused::Damaged(format!("header: {e}")))?;
    if h.body_len != body.len() as u64 || h.body_crc != crc32c::crc32c(body) {
        return Err(Unused::Damaged("body checksum".into()));
    }
    let meta = file.metadata().map_err(|e| Unused::Damaged(e.to_string()))?;
    if identity(&meta) != (h.dev, h.ino) {
        return Err(Unused::Stale("the journal was replaced (compacted)"));
    }
    if meta.len() < h.offset {
        return Err(Unused::Stale("the journal is shorter than the snapshot"));
    }
    if prefix_crc(file, h.offset).ok() != Some(h.prefix_crc) {
        return Err(Unused::Stale("the journal's bytes before the snapshot changed"));
    }
    let start = raw.len() - body.len();
    Ok((raw, start, h.offset, h.lines))
}

/// Bytes per settled path: digest, line, which images are present, the two image digests.
const SETTLED_BYTES: usize = 8 + 8 + 1 + 8 + 8;

/// The body: `json length (u64 LE) | JSON state | settled paths`.
fn split_body(body: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = body.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    (len <= rest.len()).then(|| rest.split_at(len))
}

/// `count (u64 LE)`, then per path [`SETTLED_BYTES`] (all little-endian).
fn encode_settled(settled: &[SettledPath], out: &mut Vec<u8>) {
    out.extend_from_slice(&(settled.len() as u64).to_le_bytes());
    for &(key, (line, [a, b])) in settled {
        out.extend_from_slice(&key.to_le_bytes());
        out.extend_from_slice(&line.to_le_bytes());
        out.push(u8::from(a.is_some()) | (u8::from(b.is_some()) << 1));
        out.extend_from_slice(&a.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&b.unwrap_or(0).to_le_bytes());
    }
}

/// The settled paths [`encode_settled`] wrote; `None` when the bytes do not fit the layout.
fn decode_settled(bytes: &[u8]) -> Option<Vec<SettledPath>> {
    let (count, rest) = bytes.split_first_chunk::<8>()?;
    let count = usize::try_from(u64::from_le_bytes(*count)).ok()?;
    if rest.len() != count.checked_mul(SETTLED_BYTES)? {
        return None;
    }
    let u64_at = |c: &[u8], at: usize| c.get(at..at + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    // A loop into a list of the right size: collecting `Option`s cannot size it beforehand,
    // and growing it was half of this decode's time.
    let mut out = Vec::with_capacity(count);
    for c in rest.chunks_exact(SETTLED_BYTES) {
        let flags = c[16];
        if flags > 3 {
            return None;
        }
        let (a, b) = (u64_at(c, 17)?, u64_at(c, 25)?);
        out.push((u64_at(c, 0)?, (u64_at(c, 8)?, [(flags & 1 != 0).then_some(a), (flags & 2 != 0).then_some(b)])));
    }
    Some(out)
}

/// Why `journal`'s snapshot would not be used now (`None`: it would be).
pub fn check(journal: &Path) -> Option<Unused> {
    check_at(journal, &path(journal)?)
}

/// Why the snapshot at `snap` would not be used for `journal` now (`None`: it would be).
pub fn check_at(journal: &Path, snap: &Path) -> Option<Unused> {
    let Ok((file, _)) = crate::fsutil::open_regular(journal) else { return Some(Unused::Stale("no journal")) };
    read(snap, &file).err()
}

/// Writes the snapshot of `scan` (the fold of `journal`'s first `offset` bytes, `lines`
/// lines): temp file, rename; not synced (a cache). Best effort.
fn write(snap: &Path, file: &fs::File, scan: &Scan, regions: Vec<Problem>, offset: u64, lines: u64) -> io::Result<()> {
    let state = State::of(scan, regions);
    let json = serde_json::to_vec(&state)?;
    let mut body = Vec::with_capacity(8 + json.len() + 8 + state.settled.len() * SETTLED_BYTES);
    body.extend_from_slice(&(json.len() as u64).to_le_bytes());
    body.extend_from_slice(&json);
    encode_settled(&state.settled, &mut body);
    write_cache(snap, MAGIC, TMP_PREFIX, file, &body, offset, lines)
}

/// Writes a cache file [`read_cache`] reads: temp file (`<tmp_prefix><pid>`), rename; not
/// synced (a cache). Temp files a killed writer left (older than a minute) are removed first.
pub(crate) fn write_cache(
    path: &Path,
    magic: &str,
    tmp_prefix: &str,
    file: &fs::File,
    body: &[u8],
    offset: u64,
    lines: u64,
) -> io::Result<()> {
    let (dev, ino) = identity(&file.metadata()?);
    let header = Header {
        dev,
        ino,
        offset,
        lines,
        prefix_crc: prefix_crc(file, offset)?,
        body_len: body.len() as u64,
        body_crc: crc32c::crc32c(body),
    };
    sweep_stale_temps(path, tmp_prefix);
    let tmp = path.with_file_name(format!("{tmp_prefix}{}", std::process::id()));
    let result = (|| {
        let mut f = crate::fsutil::open_private(&tmp, fs::OpenOptions::new().write(true).create(true).truncate(true))?;
        f.write_all(magic.as_bytes())?;
        f.write_all(b"\n")?;
        f.write_all(&serde_json::to_vec(&header)?)?;
        f.write_all(b"\n")?;
        f.write_all(body)?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Temp files of a snapshot being written: `<TMP_PREFIX><pid>`.
const TMP_PREFIX: &str = ".fold.snap.tmp-";

/// A writer killed between creating its temp file and the rename leaves it behind: removed
/// by the next writer once older than a minute (a live writer finishes in well under that).
fn sweep_stale_temps(path: &Path, tmp_prefix: &str) {
    let Some(dir) = path.parent() else { return };
    let Ok(rd) = fs::read_dir(dir) else { return };
    for ent in rd.flatten() {
        if !ent.file_name().to_string_lossy().starts_with(tmp_prefix) {
            continue;
        }
        let stale = ent
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(60));
        if stale {
            let _ = fs::remove_file(ent.path());
        }
    }
}

/// [`Fold::load`] through the snapshot: `None` when it does not apply (other options, a
/// journal name that is not cached, side files waiting) and the caller folds in full. Reads
/// the snapshot when it matches, else starts from the beginning; folds the rest in steps,
/// writing a snapshot after a step when it read more than `write_after` bytes past the last
/// one written and [`STEP_EVERY`] has passed, and at the end.
pub fn load(journal: &Path, opts: &FoldOptions, write_after: u64) -> io::Result<Option<Fold>> {
    load_at(journal, path(journal), opts, write_after)
}

/// [`load`] with the snapshot kept at `snap` (`None`: not cached): another machine's copy
/// is cached outside its folder, which is `walj sync`'s (`crate::sync::remotes`).
pub(crate) fn load_at(
    journal: &Path,
    snap: Option<PathBuf>,
    opts: &FoldOptions,
    write_after: u64,
) -> io::Result<Option<Fold>> {
    let steps = Steps { write_after, bytes: STEP_BYTES, deadline: None };
    Ok(match load_stepped(journal, snap, opts, &steps)? {
        Some(Budgeted::Done(fold)) => Some(*fold),
        // Never without a deadline; a full fold answers if it were.
        Some(Budgeted::Partial { .. }) | None => None,
    })
}

/// Bytes folded between two looks at the clock (and two possible snapshots).
pub(crate) const STEP_BYTES: u64 = 8 << 20;

/// A fold in steps writes a snapshot at most this often: a kill loses at most this much
/// folded work (plus one step), never what an earlier snapshot holds.
pub(crate) const STEP_EVERY: Duration = Duration::from_millis(250);

/// How a fold goes in steps.
#[derive(Debug, Clone)]
pub struct Steps {
    /// A snapshot is written once the fold read more than this past the last one.
    pub write_after: u64,
    /// Bytes per step.
    pub bytes: u64,
    /// When given, the fold stops at the first step that ends past it.
    pub deadline: Option<Instant>,
}

/// What a fold with a deadline gave.
pub enum Budgeted {
    Done(Box<Fold>),
    /// Out of time after the journal's first `offset` bytes of `len`: what was folded is in
    /// the snapshot (unless another writer holds the claim, or has gone further), for the
    /// next reader to continue from.
    Partial {
        offset: u64,
        len: u64,
    },
}

/// [`load`] that stops at `deadline`, its progress kept in the snapshot (SessionStart on a
/// journal too long to fold in its budget). `None` as for [`load`].
pub(crate) fn load_within(journal: &Path, opts: &FoldOptions, deadline: Instant) -> io::Result<Option<Budgeted>> {
    let steps = Steps { write_after: WRITE_AFTER, bytes: STEP_BYTES, deadline: Some(deadline) };
    load_stepped(journal, path(journal), opts, &steps)
}

/// The snapshot's claim: only the process holding this lock (`flock`, released when it dies,
/// even by `kill -9`) writes `fold.snap`, and never a snapshot that covers less of the same
/// journal than the one there. A reader that cannot take it folds without writing.
fn claim_path(snap: &Path) -> PathBuf {
    let mut name = snap.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    snap.with_file_name(name)
}

/// The offset the snapshot at `snap` covers of the journal open as `file`, when it is one
/// a load would use (`None`: missing, damaged, stale: any snapshot may replace it).
fn covers(snap: &Path, file: &fs::File) -> Option<u64> {
    read_cache(snap, MAGIC, file).ok().map(|(_, _, offset, _)| offset)
}

/// Writes the snapshots of one fold: under the claim, each a valid prefix.
struct Writer<'a> {
    snap: &'a Path,
    journal: &'a Path,
    file: &'a fs::File,
    claim: Option<crate::fsutil::LockGuard>,
    /// The offset of the last snapshot this fold started from or wrote.
    written: u64,
    at: Instant,
    /// How long the last write took: a fold with a deadline stops early enough to write.
    cost: Duration,
}

impl Writer<'_> {
    /// Writes the snapshot of `scan` at (`offset`, `lines`) when the claim is (or can be)
    /// held, the journal read is still the one at its path, every zeroed region is inside
    /// the covered bytes and no snapshot there covers more. Best effort.
    fn write(&mut self, scan: &Scan, regions: &[Problem], offset: u64, lines: u64) {
        if self.claim.is_none() {
            self.claim = crate::fsutil::try_lock(&claim_path(self.snap)).ok().flatten();
        }
        if self.claim.is_none() {
            return;
        }
        // The journal read may have been replaced meanwhile: only the file read is described.
        let same =
            fs::metadata(self.journal).ok().map(|m| identity(&m)) == self.file.metadata().ok().map(|m| identity(&m));
        let covered = regions.iter().all(|p| matches!(p, Problem::Zeroed { offset: o, bytes } if o + bytes <= offset));
        if same && covered && covers(self.snap, self.file).is_none_or(|there| there < offset) {
            let t = Instant::now();
            let _ = write(self.snap, self.file, scan, regions.to_vec(), offset, lines);
            self.cost = t.elapsed();
        }
        self.written = offset;
        self.at = Instant::now();
    }
}

/// [`load_at`] in `steps`: `Partial` when the deadline passed before the journal's end.
pub fn load_stepped(
    journal: &Path,
    snap: Option<PathBuf>,
    opts: &FoldOptions,
    steps: &Steps,
) -> io::Result<Option<Budgeted>> {
    let Some(snap) = snap.filter(|_| cacheable(opts)) else { return Ok(None) };
    let side = crate::journal::JournalWriter::new(journal).side_dir().to_path_buf();
    if fs::read_dir(&side).is_ok_and(|mut d| d.next().is_some()) {
        return Ok(None);
    }
    let file = match crate::fsutil::open_regular(journal) {
        Ok((f, _)) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let (mut scan, mut from, mut lines, mut regions) = match read(&snap, &file) {
        Ok((state, offset, lines)) => {
            let (scan, regions) = state.into_scan();
            (scan, offset, lines, regions)
        }
        Err(_) => (Scan::default(), 0, 0, Vec::new()),
    };
    let mut writer = Writer {
        snap: &snap,
        journal,
        file: &file,
        claim: None,
        written: from,
        at: Instant::now(),
        cost: Duration::ZERO,
    };
    let len = file.metadata()?.len();
    // Whole steps while more than one is left: the last part is read as a tail, as a fold
    // from this snapshot would read it, so a fold in steps ends exactly like one without.
    while len.saturating_sub(from) > steps.bytes.max(1) {
        let mut report = scan.run(Source::range(journal, from, lines, steps.bytes.max(1)), opts)?;
        if report.end <= from {
            // One line longer than a step: the tail reads it.
            break;
        }
        // A step reports no torn tail; zeroed bytes past its last whole line are the next
        // step's (a zeroed region never spans a line's end: that byte is a newline).
        let end = report.end;
        regions.extend(
            std::mem::take(&mut report.problems)
                .into_iter()
                .filter(|p| matches!(p, Problem::Zeroed { offset, .. } if *offset < end)),
        );
        (from, lines) = (end, report.lines);
        // Late once the next write would end past the deadline (the last write's time).
        let late = steps.deadline.is_some_and(|d| Instant::now() + writer.cost >= d);
        if from - writer.written > steps.write_after && (late || writer.at.elapsed() >= STEP_EVERY) {
            writer.write(&scan, &regions, from, lines);
        }
        if late {
            return Ok(Some(Budgeted::Partial { offset: from, len }));
        }
    }
    let mut report = scan.run(Source::tail(journal, from, lines), opts)?;
    // Zeroed regions found now join the ones the snapshot covered; a torn tail is past `end`.
    let (tail_regions, torn): (Vec<Problem>, Vec<Problem>) =
        std::mem::take(&mut report.problems).into_iter().partition(|p| matches!(p, Problem::Zeroed { .. }));
    regions.extend(tail_regions);
    if report.end.saturating_sub(writer.written) > steps.write_after && report.end > 0 {
        writer.write(&scan, &regions, report.end, report.lines);
    }
    drop(writer);
    report.problems = regions.into_iter().chain(torn).collect();
    Ok(Some(Budgeted::Done(Box::new(scan.finish(report, opts)))))
}
