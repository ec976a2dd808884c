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

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::apply::Pairing;
use super::model::{Entry, FoldOptions, Handoff, SessionInfo};
use super::{Fold, Scan};
use crate::journal::{Problem, Source};

/// The first line of a snapshot file; the version changes with the state's layout.
const MAGIC: &str = "walj fold snapshot v1";

/// A fold that read more than this past its snapshot (or from the start) writes a new one.
pub const WRITE_AFTER: u64 = 1 << 20;

/// Bytes before the snapshot's offset whose checksum must still match.
pub const PREFIX_CHECK: u64 = 4096;

/// The snapshot file of `journal`: `fold.snap` next to a project's `.walj/journal.jsonl`;
/// `None` for any other journal (other machines' copies in `.walj/remotes/`, `--journal`
/// files): those are never cached.
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
    settled: Vec<SettledPath>,
    outcome_first: Vec<String>,
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
        let mut outcome_first: Vec<String> = f.outcome_first.iter().cloned().collect();
        outcome_first.sort();
        let mut settled: Vec<_> = f.settled.iter().map(|(k, v)| (*k, *v)).collect();
        settled.sort_by_key(|(k, _)| *k);
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
            settled: self.settled.into_iter().collect(),
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

/// The journal's identity (device, inode) and length.
pub(super) fn identity(meta: &fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (0, 0)
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
    let mut raw = Vec::new();
    match fs::File::open(snap) {
        Ok(mut f) => f.read_to_end(&mut raw).map_err(|e| Unused::Damaged(e.to_string()))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Unused::Missing),
        Err(e) => return Err(Unused::Damaged(e.to_string())),
    };
    let mut parts = raw.splitn(3, |&b| b == b'\n');
    let (Some(magic), Some(header), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(Unused::Damaged("too short".into()));
    };
    if magic != MAGIC.as_bytes() {
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
    let state: State = serde_json::from_slice(body).map_err(|e| Unused::Damaged(format!("body: {e}")))?;
    Ok((state, h.offset, h.lines))
}

/// Why `journal`'s snapshot would not be used now (`None`: it would be).
pub fn check(journal: &Path) -> Option<Unused> {
    let snap = path(journal)?;
    let Ok((file, _)) = crate::fsutil::open_regular(journal) else { return Some(Unused::Stale("no journal")) };
    read(&snap, &file).err()
}

/// Writes the snapshot of `scan` (the fold of `journal`'s first `offset` bytes, `lines`
/// lines): temp file, rename; not synced (a cache). Best effort.
fn write(snap: &Path, file: &fs::File, scan: &Scan, regions: Vec<Problem>, offset: u64, lines: u64) -> io::Result<()> {
    let meta = file.metadata()?;
    let (dev, ino) = identity(&meta);
    let body = serde_json::to_vec(&State::of(scan, regions))?;
    let header = Header {
        dev,
        ino,
        offset,
        lines,
        prefix_crc: prefix_crc(file, offset)?,
        body_len: body.len() as u64,
        body_crc: crc32c::crc32c(&body),
    };
    let tmp = snap.with_file_name(format!(".fold.snap.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = crate::fsutil::open_private(&tmp, fs::OpenOptions::new().write(true).create(true).truncate(true))?;
        f.write_all(MAGIC.as_bytes())?;
        f.write_all(b"\n")?;
        f.write_all(&serde_json::to_vec(&header)?)?;
        f.write_all(b"\n")?;
        f.write_all(&body)?;
        drop(f);
        fs::rename(&tmp, snap)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// [`Fold::load`] through the snapshot: `None` when it does not apply (other options, a
/// journal name that is not cached, side files waiting) and the caller folds in full. Reads
/// the snapshot when it matches, else starts from the beginning; folds the rest; writes a
/// new snapshot when it read more than `write_after` bytes.
pub fn load(journal: &Path, opts: &FoldOptions, write_after: u64) -> io::Result<Option<Fold>> {
    let Some(snap) = path(journal).filter(|_| cacheable(opts)) else { return Ok(None) };
    let side = crate::journal::JournalWriter::new(journal).side_dir().to_path_buf();
    if fs::read_dir(&side).is_ok_and(|mut d| d.next().is_some()) {
        return Ok(None);
    }
    let file = match crate::fsutil::open_regular(journal) {
        Ok((f, _)) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let (mut scan, from, lines, mut regions) = match read(&snap, &file) {
        Ok((state, offset, lines)) => {
            let (scan, regions) = state.into_scan();
            (scan, offset, lines, regions)
        }
        Err(_) => (Scan::default(), 0, 0, Vec::new()),
    };
    let mut report = scan.run(Source::tail(journal, from, lines), opts)?;
    // Zeroed regions found now join the ones the snapshot covered; a torn tail is past `end`.
    let (tail_regions, torn): (Vec<Problem>, Vec<Problem>) =
        std::mem::take(&mut report.problems).into_iter().partition(|p| matches!(p, Problem::Zeroed { .. }));
    regions.extend(tail_regions);
    if report.end.saturating_sub(from) > write_after && report.end > 0 {
        // The journal read may have been replaced meanwhile: only the file read is described.
        let same = fs::metadata(journal).ok().map(|m| identity(&m)) == file.metadata().ok().map(|m| identity(&m));
        let covered =
            regions.iter().all(|p| matches!(p, Problem::Zeroed { offset, bytes } if offset + bytes <= report.end));
        if same && covered {
            let _ = write(&snap, &file, &scan, regions.clone(), report.end, report.lines);
        }
    }
    report.problems = regions.into_iter().chain(torn).collect();
    Ok(Some(scan.finish(report, opts)))
}
