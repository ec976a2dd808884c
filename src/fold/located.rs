//! The line index: where each session's lines lie in the journal, and which session holds
//! each id, so that a read of one session (`--session`, `sessions show`, an entry by id)
//! reads that session's lines and the journal's unindexed tail, not the whole journal.
//!
//! A cache, never a source of truth, kept at `.walj/lines.idx` beside the fold snapshot and
//! checked the same way ([`super::snapshot::read_cache`]): the journal's device and inode
//! (a compaction replaces the file), its length (never shorter than the bytes covered), the
//! CRC-32C of the [`super::snapshot::PREFIX_CHECK`] bytes before the covered offset, the
//! body's length and CRC-32C. Every line read through it is checked again: it must start
//! after a newline, end at one, trim to the length indexed and belong to the session it is
//! indexed under. Any doubt is a full scan, whose answer is the same, only slower.
//!
//! What it holds, per covered line: the session key the fold's classifier reads from it
//! (`session`, else `sid`), its number, offset and trimmed length; the lines the classifier
//! refuses ("loose": every filtered fold reads them, as a full scan does, and reports them);
//! the zeroed regions the reader found; each id a line names (its first
//! [`super::ids::KEPT`] characters) with its session.
//!
//! A fold through the index folds exactly the lines a full filtered fold would fold (every
//! line of every session the filter starts, and the loose ones), in journal order, through the
//! same per-line code ([`super::Scan::feed`]): the answer is the same by construction.
//! Side files waiting (`journal::side`) mean a full scan, as for the snapshot.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::ids::{KEPT, Key, pack};
use super::model::FoldOptions;
use super::snapshot::{WRITE_AFTER, read_cache, write_cache};
use super::{Feed, Fold, Scan};
use crate::journal::reader::trim;
use crate::journal::view::{Classified, classify_fast};
use crate::journal::{Problem, RawLine, ScanReport, Source, identity, kind, op};

/// The first line of the index file; the version changes with its layout.
const MAGIC: &str = "walj line index v1";

/// Set (to anything) to read every journal in full, never through the index: the tests
/// compare the two answers, and a user who doubts the index can check.
pub const OFF_ENV: &str = "WALJ_NO_LINE_INDEX";

/// Bytes past a line's indexed length read to find its newline (the reader trims leading
/// and trailing blanks and NULs; a line with more than this around it is read in full).
const SLACK: usize = 64;

/// One indexed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Loc {
    line: u64,
    offset: u64,
    len: u64,
}

/// A session's lines: where its encoded run lies in the body's blob.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Run {
    key: String,
    at: usize,
    bytes: usize,
    /// What `walj sessions list` counts of the session ([`LineIndex::usage`]).
    #[serde(default)]
    records: u64,
    #[serde(default)]
    marks: u64,
}

/// The index's table of contents (JSON); the runs and ids follow it in binary.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Meta {
    sessions: Vec<Run>,
    loose: Run,
    /// The lines that mark a session imported: written outside the session they name, and
    /// read by `walj sessions show` for it.
    #[serde(default)]
    imports: Run,
    regions: Vec<Problem>,
    /// Where the id table lies in the blob, and how many ids it holds.
    ids_at: usize,
    ids: usize,
    /// Where the carried-image table lies in the blob, and how many rows it holds.
    #[serde(default)]
    carried_at: usize,
    #[serde(default)]
    carried: usize,
}

/// Bytes per id in the table: the packed key (big-endian, so bytes sort as keys) and the
/// session's number (little-endian `u32`).
const ID_BYTES: usize = 16 + 4;

/// Bytes per carried image in the table: the first 8 bytes of its id (hex digits as a
/// big-endian `u64`) and the offset of the line that carries it (little-endian `u64`).
const CARRIED_BYTES: usize = 8 + 8;

/// The first 16 hex digits of an object id, as a number (ids are hex: see `store::is_id`).
fn id_prefix(id: &str) -> Option<u64> {
    u64::from_str_radix(id.get(..16)?, 16).ok()
}

/// The index: what the cache file holds (decoded lazily) and the lines read after it.
#[derive(Default)]
pub struct LineIndex {
    meta: Meta,
    /// The cache file's bytes, and where the blob (the runs and tables) starts in them: kept
    /// as read, never copied.
    raw: Vec<u8>,
    base: usize,
    /// Sessions of the cache and the tail, in order of first appearance; by key.
    keys: Vec<String>,
    by_key: HashMap<String, usize>,
    /// Lines read past the cache, per session number.
    tail: HashMap<usize, Vec<Loc>>,
    tail_loose: Vec<Loc>,
    tail_imports: Vec<Loc>,
    tail_ids: Vec<(Key, u32)>,
    /// Images lines past the cache carry: (the id's first 8 bytes, the line's offset).
    tail_carried: Vec<(u64, u64)>,
    tail_regions: Vec<Problem>,
    /// (records, marks) of the lines read past the cache, per session number.
    tail_counts: HashMap<usize, (u64, u64)>,
    /// The journal bytes and lines covered by the cache, and by the cache and the tail.
    cached: (u64, u64),
    end: (u64, u64),
    /// Why the cache was not used (`None`: it was, or there was none to use).
    pub unused: Option<String>,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Lines as deltas of line number and offset, then length: about three bytes a line.
fn encode_locs(locs: &[Loc], out: &mut Vec<u8>) {
    put_varint(out, locs.len() as u64);
    let (mut line, mut offset) = (0u64, 0u64);
    for l in locs {
        put_varint(out, l.line - line);
        put_varint(out, l.offset - offset);
        put_varint(out, l.len);
        (line, offset) = (l.line, l.offset);
    }
}

fn decode_locs(b: &[u8]) -> Option<Vec<Loc>> {
    let mut at = 0;
    let n = usize::try_from(get_varint(b, &mut at)?).ok()?;
    let mut out = Vec::with_capacity(n.min(b.len()));
    let (mut line, mut offset) = (0u64, 0u64);
    for _ in 0..n {
        line = line.checked_add(get_varint(b, &mut at)?)?;
        offset = offset.checked_add(get_varint(b, &mut at)?)?;
        let len = get_varint(b, &mut at)?;
        out.push(Loc { line, offset, len });
    }
    (at == b.len()).then_some(out)
}

/// The keys an id `typed` could name, as prefixes to search: the typed text in any case,
/// with `toolu_` or `toolu_01` before it ([`super::Fold::find`]'s forms).
fn typed_forms(typed: &str) -> [Vec<u8>; 3] {
    let t = typed.to_ascii_lowercase();
    [t.clone().into_bytes(), format!("toolu_{t}").into_bytes(), format!("toolu_01{t}").into_bytes()]
}

/// The key range of ids starting with `q` (as far as [`KEPT`] characters tell).
fn key_range(q: &[u8]) -> (Key, Key) {
    let m = q.len().min(KEPT);
    let lo = pack(&q[..m]);
    (lo, lo + (1 << (6 * (KEPT - m))))
}

impl LineIndex {
    /// The blob of the cache file (empty without one).
    fn blob(&self) -> &[u8] {
        self.raw.get(self.base..).unwrap_or_default()
    }

    fn session_no(&mut self, key: &str) -> usize {
        if let Some(&i) = self.by_key.get(key) {
            return i;
        }
        self.keys.push(key.to_string());
        self.by_key.insert(key.to_string(), self.keys.len() - 1);
        self.keys.len() - 1
    }

    /// Takes one line past the cache.
    fn add_line(&mut self, raw: &RawLine<'_>) {
        let loc = Loc { line: raw.line_no, offset: raw.offset, len: raw.bytes.len() as u64 };
        for id in crate::store::carried_ids_of(raw.bytes) {
            if let Some(p) = id_prefix(id) {
                self.tail_carried.push((p, raw.offset));
            }
        }
        let (n, id) = match classify_fast(raw.line_no, raw.bytes) {
            // A persisted line names an entry an intent or outcome named before.
            Ok(Classified::Persisted { session, .. }) => {
                let n = self.session_no(session);
                self.tail_counts.entry(n).or_default().0 += 1;
                (n, None)
            }
            Ok(Classified::View(v)) => {
                // Counted as `walj sessions list` counts: an import's mark is written outside
                // the session it names, and is not one of its records.
                let session_kind = (v.op() == op::SESSION).then(|| v.kind()).flatten();
                if session_kind == Some(kind::IMPORTED) {
                    self.tail_imports.push(loc);
                }
                if session_kind != Some(kind::IMPORTED) && !v.session_key().is_empty() {
                    let n = self.session_no(v.session_key());
                    let c = self.tail_counts.entry(n).or_default();
                    c.0 += 1;
                    c.1 += u64::from(matches!(session_kind, Some(kind::ANNOUNCED | kind::DELIVERED)));
                }
                let id = if !v.id.is_empty() {
                    Some(pack(v.id.as_bytes()))
                } else if matches!(v.op(), op::INTENT | op::APPLIED | op::FAILED) {
                    // The fold names an entry without an id by its line.
                    Some(pack(format!("L{}", raw.line_no).as_bytes()))
                } else {
                    None
                };
                (self.session_no(v.session_key()), id)
            }
            Err(_) => {
                self.tail_loose.push(loc);
                return;
            }
        };
        self.tail.entry(n).or_default().push(loc);
        if let Some(k) = id {
            self.tail_ids.push((k, n as u32));
        }
    }

    /// The lines of session number `n` (cached, then read past the cache).
    fn locs_of(&self, n: usize) -> Option<Vec<Loc>> {
        let mut out = match self.meta.sessions.get(n) {
            Some(r) => decode_locs(self.blob().get(r.at..r.at + r.bytes)?)?,
            None => Vec::new(),
        };
        out.extend(self.tail.get(&n).into_iter().flatten().copied());
        Some(out)
    }

    fn loose(&self) -> Option<Vec<Loc>> {
        Self::run_and(self.blob(), &self.meta.loose, &self.tail_loose)
    }

    fn imports(&self) -> Option<Vec<Loc>> {
        Self::run_and(self.blob(), &self.meta.imports, &self.tail_imports)
    }

    /// The lines of a cached run, then `tail`.
    fn run_and(blob: &[u8], r: &Run, tail: &[Loc]) -> Option<Vec<Loc>> {
        let mut out = if r.bytes == 0 { Vec::new() } else { decode_locs(blob.get(r.at..r.at + r.bytes)?)? };
        out.extend(tail.iter().copied());
        Some(out)
    }

    /// The sessions (numbers) holding an id in the key range `(lo, hi)`.
    fn sessions_with(&self, (lo, hi): (Key, Key), out: &mut Vec<usize>) -> Option<()> {
        let table = self.blob().get(self.meta.ids_at..self.meta.ids_at + self.meta.ids * ID_BYTES)?;
        let key_at = |i: usize| -> Key {
            let mut k = [0u8; 16];
            k.copy_from_slice(&table[i * ID_BYTES..i * ID_BYTES + 16]);
            Key::from_be_bytes(k)
        };
        let (mut a, mut b) = (0usize, self.meta.ids);
        while a < b {
            let mid = (a + b) / 2;
            if key_at(mid) < lo { a = mid + 1 } else { b = mid }
        }
        let mut i = a;
        while i < self.meta.ids && key_at(i) < hi {
            let s = &table[i * ID_BYTES + 16..(i + 1) * ID_BYTES];
            out.push(u32::from_le_bytes(s.try_into().ok()?) as usize);
            i += 1;
        }
        out.extend(self.tail_ids.iter().filter(|(k, _)| *k >= lo && *k < hi).map(|&(_, s)| s as usize));
        Some(())
    }

    /// The one session holding every id of `typed` (each as [`super::Fold::find`] reads it),
    /// when exactly one does; `None` when several do, none does, or an id names its session
    /// (`SESSION/ID`): the caller reads every session then.
    pub fn session_of(&self, typed: &[&str]) -> Option<String> {
        let mut found: Vec<usize> = Vec::new();
        for t in typed {
            if t.is_empty() || t.contains('/') {
                return None;
            }
            let before = found.len();
            for q in typed_forms(t) {
                self.sessions_with(key_range(&q), &mut found)?;
            }
            if found.len() == before {
                return None;
            }
        }
        found.sort_unstable();
        found.dedup();
        match found.as_slice() {
            [one] => self.keys.get(*one).filter(|k| !k.is_empty()).cloned(),
            _ => None,
        }
    }

    fn usage_of(&self, n: usize) -> (u64, u64) {
        let cached = self.meta.sessions.get(n).map_or((0, 0), |r| (r.records, r.marks));
        let tail = self.tail_counts.get(&n).copied().unwrap_or_default();
        (cached.0 + tail.0, cached.1 + tail.1)
    }

    /// Per session: its records and, among them, the marks of briefs announced or delivered
    /// (what `walj sessions list` counts to leave out the sessions that are marks only).
    pub fn usage(&self) -> HashMap<&str, (u64, u64)> {
        self.keys.iter().enumerate().map(|(n, k)| (k.as_str(), self.usage_of(n))).collect()
    }

    /// The cached carried-image table's rows.
    fn carried_rows(&self) -> Option<Vec<(u64, u64)>> {
        let table = self.blob().get(self.meta.carried_at..self.meta.carried_at + self.meta.carried * CARRIED_BYTES)?;
        table
            .chunks_exact(CARRIED_BYTES)
            .map(|c| Some((u64::from_be_bytes(c[..8].try_into().ok()?), u64::from_le_bytes(c[8..].try_into().ok()?))))
            .collect()
    }

    /// Offsets of the lines that may carry image `id` (its first 16 hex digits match), the
    /// latest first. A hint: the caller reads the line and checks it carries `id` whole.
    pub fn carrying(&self, id: &str) -> Vec<u64> {
        let Some(p) = id_prefix(id) else { return Vec::new() };
        let mut out: Vec<u64> = self.tail_carried.iter().filter(|(q, _)| *q == p).map(|&(_, at)| at).collect();
        if let Some(rows) = self.carried_rows() {
            let from = rows.partition_point(|&(q, _)| q < p);
            out.extend(rows[from..].iter().take_while(|&&(q, _)| q == p).map(|&(_, at)| at));
        }
        out.sort_unstable_by(|a, b| b.cmp(a));
        out
    }

    /// The encoded body of everything indexed (the cache and the tail).
    fn encode(&self) -> Option<Vec<u8>> {
        let mut blob = Vec::new();
        let mut meta = Meta::default();
        for (n, key) in self.keys.iter().enumerate() {
            let locs = self.locs_of(n)?;
            let at = blob.len();
            encode_locs(&locs, &mut blob);
            let (records, marks) = self.usage_of(n);
            meta.sessions.push(Run { key: key.clone(), at, bytes: blob.len() - at, records, marks });
        }
        let at = blob.len();
        encode_locs(&self.loose()?, &mut blob);
        meta.loose = Run { at, bytes: blob.len() - at, ..Run::default() };
        let at = blob.len();
        encode_locs(&self.imports()?, &mut blob);
        meta.imports = Run { at, bytes: blob.len() - at, ..Run::default() };
        meta.regions = self.meta.regions.iter().chain(&self.tail_regions).cloned().collect();
        let mut ids: Vec<(Key, u32)> = Vec::with_capacity(self.meta.ids + self.tail_ids.len());
        let table = self.blob().get(self.meta.ids_at..self.meta.ids_at + self.meta.ids * ID_BYTES)?;
        for c in table.chunks_exact(ID_BYTES) {
            ids.push((Key::from_be_bytes(c[..16].try_into().ok()?), u32::from_le_bytes(c[16..].try_into().ok()?)));
        }
        ids.extend(self.tail_ids.iter().copied());
        ids.sort_unstable();
        ids.dedup();
        meta.ids_at = blob.len();
        meta.ids = ids.len();
        for (k, s) in ids {
            blob.extend_from_slice(&k.to_be_bytes());
            blob.extend_from_slice(&s.to_le_bytes());
        }
        let mut carried: Vec<(u64, u64)> = self.carried_rows()?;
        carried.extend(self.tail_carried.iter().copied());
        carried.sort_unstable();
        carried.dedup();
        meta.carried_at = blob.len();
        meta.carried = carried.len();
        for (p, at) in carried {
            blob.extend_from_slice(&p.to_be_bytes());
            blob.extend_from_slice(&at.to_le_bytes());
        }
        let json = serde_json::to_vec(&meta).ok()?;
        let mut body = Vec::with_capacity(8 + json.len() + blob.len());
        body.extend_from_slice(&(json.len() as u64).to_le_bytes());
        body.extend_from_slice(&json);
        body.extend_from_slice(&blob);
        Some(body)
    }

    fn decode(body: &[u8]) -> Option<(Meta, usize)> {
        let (len, rest) = body.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
        if len > rest.len() {
            return None;
        }
        let (json, blob) = rest.split_at(len);
        let meta: Meta = serde_json::from_slice(json).ok()?;
        let fits = |at: usize, n: usize| at.checked_add(n).is_some_and(|e| e <= blob.len());
        let ok = meta.sessions.iter().chain([&meta.loose, &meta.imports]).all(|r| fits(r.at, r.bytes))
            && meta.ids.checked_mul(ID_BYTES).is_some_and(|n| fits(meta.ids_at, n))
            && meta.carried.checked_mul(CARRIED_BYTES).is_some_and(|n| fits(meta.carried_at, n));
        ok.then(|| (meta, body.len() - blob.len()))
    }
}

/// The index file of `journal`: `lines.idx` next to a project's `.walj/journal.jsonl`;
/// `None` for any other journal (read in full each time).
pub fn path(journal: &Path) -> Option<PathBuf> {
    cache_path(journal, "lines.idx")
}

/// A per-journal cache file `name` next to a project's `.walj/journal.jsonl`; `None` for any
/// other journal (read in full each time).
pub(crate) fn cache_path(journal: &Path, name: &str) -> Option<PathBuf> {
    let dir = journal.parent()?.file_name()?;
    (journal.file_name()? == "journal.jsonl" && dir == ".walj").then(|| journal.with_file_name(name))
}

/// Whether the index may be used for `journal` now ([`usable_cache`]).
fn usable(journal: &Path) -> Option<PathBuf> {
    usable_cache(journal, "lines.idx")
}

/// Cache file `name` of `journal` when it may be used now: a project journal, no side files
/// waiting (their lines are read after the journal's, and a merge in progress may have copied
/// some into the covered bytes), not turned off ([`OFF_ENV`]).
pub(crate) fn usable_cache(journal: &Path, name: &str) -> Option<PathBuf> {
    if std::env::var_os(OFF_ENV).is_some() {
        return None;
    }
    let idx = cache_path(journal, name)?;
    let side = crate::journal::JournalWriter::new(journal).side_dir().to_path_buf();
    if fs::read_dir(&side).is_ok_and(|mut d| d.next().is_some()) {
        return None;
    }
    Some(idx)
}

/// The index of `journal` open as `file`: the cache when it matches, and the lines after it
/// read (with `each` called for each of them). Written anew when more than [`WRITE_AFTER`]
/// bytes were read past the cache and the journal is still the file read.
fn load_with(
    journal: &Path,
    idx: &Path,
    file: &fs::File,
    write_after: u64,
    mut each: impl FnMut(&RawLine<'_>),
) -> io::Result<(LineIndex, ScanReport)> {
    let mut ix = LineIndex::default();
    match read_cache(idx, MAGIC, file) {
        Ok((raw, start, offset, lines)) => match LineIndex::decode(&raw[start..]) {
            Some((meta, at)) => {
                ix.keys = meta.sessions.iter().map(|r| r.key.clone()).collect();
                ix.by_key = ix.keys.iter().enumerate().map(|(i, k)| (k.clone(), i)).collect();
                if ix.by_key.len() == ix.keys.len() {
                    ix.meta = meta;
                    ix.raw = raw;
                    ix.base = start + at;
                    ix.cached = (offset, lines);
                } else {
                    ix = LineIndex { unused: Some("damaged (sessions repeat)".into()), ..LineIndex::default() };
                }
            }
            None => ix.unused = Some("damaged (body layout)".into()),
        },
        Err(super::snapshot::Unused::Missing) => {}
        Err(super::snapshot::Unused::Damaged(why)) => ix.unused = Some(format!("damaged ({why})")),
        Err(super::snapshot::Unused::Stale(why)) => ix.unused = Some(format!("stale ({why})")),
    }
    let (from, lines) = ix.cached;
    let mut report = Source::tail(journal, from, lines).scan(|raw| {
        ix.add_line(&raw);
        each(&raw);
    })?;
    // Zeroed regions join the index; a torn tail is past the end covered.
    let (regions, torn): (Vec<Problem>, Vec<Problem>) =
        std::mem::take(&mut report.problems).into_iter().partition(|p| matches!(p, Problem::Zeroed { .. }));
    let covered = regions.iter().all(|p| matches!(p, Problem::Zeroed { offset: o, bytes } if o + bytes <= report.end));
    ix.tail_regions = regions;
    report.problems = torn;
    ix.end = (report.end, report.lines);
    if covered && report.end > 0 && report.end.saturating_sub(from) > write_after {
        let same = fs::metadata(journal).ok().map(|m| identity(&m)) == file.metadata().ok().map(|m| identity(&m));
        if same && let Some(body) = ix.encode() {
            let _ = write_cache(idx, MAGIC, ".lines.idx.tmp-", file, &body, report.end, report.lines);
        }
    }
    Ok((ix, report))
}

/// The index of `journal` brought up to date (written when it had to read more than
/// [`WRITE_AFTER`] bytes past the cache): `None` when the journal has none
/// ([`path`], side files waiting, turned off) or cannot be read.
///
/// Kept for the rest of the process (a command asks more than once: which session holds an
/// id, then whether a line carries an image), and used again while the journal is the same
/// file at the same length.
pub fn load(journal: &Path) -> Option<Arc<LineIndex>> {
    let now = fs::metadata(journal).ok().map(|m| (identity(&m), m.len()));
    let mut last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let (Some(now), Some((path, at, ix))) = (now, last.as_ref())
        && path == journal
        && *at == now
    {
        return Some(Arc::clone(ix));
    }
    let ix = Arc::new(load_writing_after(journal, WRITE_AFTER)?);
    // Kept only when nothing was appended while it was read (its end is the length seen).
    if let Some(now) = now
        && ix.end.0 == now.1
    {
        *last = Some((journal.to_path_buf(), now, Arc::clone(&ix)));
    }
    Some(ix)
}

/// The index [`load`] kept, when `journal` is still the file it described, at that length.
fn kept(journal: &Path) -> Option<Arc<LineIndex>> {
    let now = fs::metadata(journal).ok().map(|m| (identity(&m), m.len()))?;
    let last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (path, at, ix) = last.as_ref()?;
    (path == journal && *at == now).then(|| Arc::clone(ix))
}

/// The index [`load`] read last: its journal, that journal's ((device, inode), length).
type Last = Option<(PathBuf, ((u64, u64), u64), Arc<LineIndex>)>;
static LAST: std::sync::Mutex<Last> = std::sync::Mutex::new(None);

/// [`load`], writing the index when more than `write_after` bytes were read past it.
pub fn load_writing_after(journal: &Path, write_after: u64) -> Option<LineIndex> {
    let idx = usable(journal)?;
    let (file, _) = crate::fsutil::open_regular(journal).ok()?;
    load_with(journal, &idx, &file, write_after, |_| {}).ok().map(|(ix, _)| ix)
}

/// The session holding every id of `typed`, from the index (see [`LineIndex::session_of`]).
pub(crate) fn session_of(journal: &Path, typed: &[&str]) -> Option<String> {
    load(journal)?.session_of(typed)
}

/// Puts image `id` into `store` from the journal line that carries it, found through the
/// index (no journal scan): true when the store has it now. False (the reader then searches
/// the journal as before) when there is no index, no line listed carries it whole, or it is
/// carried only by a side file's line.
pub fn keep_carried(journal: &Path, store: &crate::store::Store, id: &str) -> bool {
    if store.contains(id) {
        return true;
    }
    let Ok((file, meta)) = crate::fsutil::open_regular(journal) else { return false };
    let Some(ix) = load(journal) else { return false };
    let lines = ix.carrying(id);
    if lines.is_empty() {
        // No line up to the journal's end carries it (the index was read up to date, and no
        // torn line is waiting to be finished): the store's reader need not search the
        // journal for it while it is this file at this length.
        let (dev, ino) = identity(&meta);
        if ix.end.0 == meta.len() && file.metadata().is_ok_and(|m| m.len() == meta.len()) {
            crate::store::not_carried(journal, id, (dev, ino, meta.len()));
        }
        return false;
    }
    // `Ok(None)` is both "written from the line" and "the line does not carry it": the
    // store says which.
    lines.into_iter().any(|at| store.keep_carried_at(&file, at, id).is_ok() && store.contains(id))
}

/// Calls `f` with every line of `journal` whose session is `session` and every line that
/// marks a session imported, in journal order, through the index: the lines a scan of the
/// whole journal would hand `f` that `f` can count for `session` (`walj sessions show`'s
/// usage). `None` when the index does not apply or a line is not where it says (`f` has not
/// been called: the caller scans the journal).
pub(crate) fn scan_session(journal: &Path, session: &str, f: impl FnMut(RawLine<'_>)) -> Option<ScanReport> {
    scan_picked(journal, Pick { session: Some(session), loose: false }, f)
}

/// Calls `f` with every line of `journal` that marks a session imported and every line the
/// classifier refuses (it may still parse as a record), in journal order, through the index:
/// every line that can mark an import range (`triage::origin::Provenance`), without reading
/// the rest. `None` as for [`scan_session`] (`f` has not been called).
pub(crate) fn scan_imports(journal: &Path, f: impl FnMut(RawLine<'_>)) -> Option<ScanReport> {
    scan_picked(journal, Pick { session: None, loose: true }, f)
}

/// The lines [`scan_picked`] hands on: those of one session, the import marks (always), the
/// loose lines.
#[derive(Clone, Copy)]
struct Pick<'a> {
    session: Option<&'a str>,
    loose: bool,
}

/// The runs a line belongs to, as [`Pick`] reads them: (the session's, an import mark, loose).
fn picked(pick: Pick<'_>, line_no: u64, bytes: &[u8]) -> (bool, bool, bool) {
    match classify_fast(line_no, bytes) {
        Ok(Classified::Persisted { session: s, .. }) => (pick.session == Some(s), false, false),
        Ok(Classified::View(v)) => {
            (pick.session == Some(v.session_key()), v.op() == op::SESSION && v.kind() == Some(kind::IMPORTED), false)
        }
        Err(_) => (false, false, pick.loose),
    }
}

/// Which run an indexed line was listed in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listed {
    Own,
    Import,
    Loose,
}

/// [`scan_session`] and [`scan_imports`]: the lines `pick` names, the listed ones read back
/// (each checked to still be a line of the run it is listed in), then the tail's.
fn scan_picked(journal: &Path, pick: Pick<'_>, mut f: impl FnMut(RawLine<'_>)) -> Option<ScanReport> {
    let idx = usable(journal)?;
    let (file, _) = crate::fsutil::open_regular(journal).ok()?;
    let mut tail: Vec<(u64, u64, Vec<u8>)> = Vec::new();
    // The index this process read last, when the journal is still that file at that length:
    // every line is listed (its tail too), nothing is left to read past it.
    let (ix, report, limit, listed) = match kept(journal) {
        Some(ix) => {
            let report = ScanReport { lines: ix.end.1, bytes: ix.end.0, end: ix.end.0, ..ScanReport::default() };
            let limit = ix.end.0;
            (ix, report, limit, true)
        }
        None => {
            let (ix, report) = load_with(journal, &idx, &file, WRITE_AFTER, |raw| {
                let (own, import, loose) = picked(pick, raw.line_no, raw.bytes);
                if own || import || loose {
                    tail.push((raw.line_no, raw.offset, raw.bytes.to_vec()));
                }
            })
            .ok()?;
            let limit = ix.cached.0;
            (Arc::new(ix), report, limit, false)
        }
    };
    let run = |r: &Run, extra: &[Loc]| -> Option<Vec<Loc>> {
        LineIndex::run_and(ix.blob(), r, if listed { extra } else { &[] })
    };
    let mut locs: Vec<(Loc, Listed)> = Vec::new();
    if let Some(n) = pick.session.and_then(|s| ix.by_key.get(s).copied()) {
        let cached = ix.meta.sessions.get(n).cloned().unwrap_or_default();
        let extra = ix.tail.get(&n).map_or(&[][..], Vec::as_slice);
        locs.extend(run(&cached, extra)?.into_iter().map(|l| (l, Listed::Own)));
    }
    locs.extend(run(&ix.meta.imports, &ix.tail_imports)?.into_iter().map(|l| (l, Listed::Import)));
    if pick.loose {
        locs.extend(run(&ix.meta.loose, &ix.tail_loose)?.into_iter().map(|l| (l, Listed::Loose)));
    }
    locs.sort_unstable_by_key(|(l, _)| l.line);
    locs.dedup_by_key(|(l, _)| l.line);
    let mut lines: Vec<(Loc, Vec<u8>)> = Vec::with_capacity(locs.len());
    let mut buf = Vec::new();
    for (loc, from) in locs {
        if loc.offset + loc.len > limit {
            return None;
        }
        read_line(&file, loc, &mut buf)?;
        let (own, import, loose) = picked(pick, loc.line, &buf);
        let fits = match from {
            Listed::Own => own || import,
            Listed::Import => import || own,
            Listed::Loose => loose,
        };
        if !fits {
            return None;
        }
        lines.push((loc, std::mem::take(&mut buf)));
    }
    for (loc, bytes) in &lines {
        f(RawLine { line_no: loc.line, offset: loc.offset, bytes });
    }
    for (line_no, offset, bytes) in &tail {
        f(RawLine { line_no: *line_no, offset: *offset, bytes });
    }
    Some(report)
}

/// One line of the cache read back, as the reader gives it: `None` when the bytes there
/// are not that line (the caller folds in full).
fn read_line(file: &fs::File, loc: Loc, buf: &mut Vec<u8>) -> Option<()> {
    let want = usize::try_from(loc.len).ok()?;
    let before = u64::from(loc.offset > 0);
    buf.resize(want + SLACK + before as usize, 0);
    let mut got = 0;
    while got < buf.len() {
        match crate::fsutil::read_at(file, &mut buf[got..], loc.offset - before + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(_) => return None,
        }
    }
    buf.truncate(got);
    if before == 1 && buf.first() != Some(&b'\n') {
        return None;
    }
    let line = &buf[before as usize..];
    let end = memchr::memchr(b'\n', line)?;
    let t = trim(&line[..end]);
    if t.len() != want {
        return None;
    }
    let start = t.as_ptr() as usize - buf.as_ptr() as usize;
    buf.truncate(start + want);
    buf.drain(..start);
    Some(())
}

/// Why a fold did not go through the index (tests): `None` when it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skipped {
    NotApplicable,
    LineMismatch,
}

/// [`Fold::load`] of one session's lines (`opts.session` set): the lines the index lists
/// for every session the filter starts, the loose lines, then the unindexed tail, folded in
/// journal order. `Ok(None)`: the index does not apply, or a line is not where it says; the
/// caller folds in full.
pub fn load_fold(journal: &Path, opts: &FoldOptions) -> io::Result<Result<Fold, Skipped>> {
    let Some(filter) = opts.session.as_deref().filter(|s| !s.is_empty()) else {
        return Ok(Err(Skipped::NotApplicable));
    };
    let Some(idx) = usable(journal) else { return Ok(Err(Skipped::NotApplicable)) };
    let file = match crate::fsutil::open_regular(journal) {
        Ok((f, _)) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Err(Skipped::NotApplicable)),
        Err(e) => return Err(e),
    };
    // The tail's lines of the sessions asked for (and loose ones) are kept as they are read.
    let mut tail: Vec<(u64, u64, Vec<u8>)> = Vec::new();
    // The index this process read last, when the journal is still that file at that length:
    // every line is listed (its tail too), nothing is left to read past it.
    let (ix, mut report, limit, listed) = match kept(journal) {
        Some(ix) => {
            let report = ScanReport { lines: ix.end.1, bytes: ix.end.0, end: ix.end.0, ..ScanReport::default() };
            let limit = ix.end.0;
            (ix, report, limit, true)
        }
        None => {
            let (ix, report) = load_with(journal, &idx, &file, WRITE_AFTER, |raw| {
                let keep = match classify_fast(raw.line_no, raw.bytes) {
                    Ok(Classified::Persisted { session, .. }) => session.starts_with(filter),
                    Ok(Classified::View(v)) => v.session_key().starts_with(filter),
                    Err(_) => true,
                };
                if keep {
                    tail.push((raw.line_no, raw.offset, raw.bytes.to_vec()));
                }
            })?;
            let limit = ix.cached.0;
            (Arc::new(ix), report, limit, false)
        }
    };
    let mut locs: Vec<(Loc, Option<usize>)> = Vec::new();
    for (n, key) in ix.keys.iter().enumerate() {
        if key.starts_with(filter) {
            // Without the kept index, the tail's lines are in `tail` already (read above).
            let r = if listed {
                ix.locs_of(n)
            } else {
                ix.meta.sessions.get(n).map_or(Some(Vec::new()), |r| decode_locs(ix.blob().get(r.at..r.at + r.bytes)?))
            };
            let Some(r) = r else { return Ok(Err(Skipped::LineMismatch)) };
            locs.extend(r.into_iter().map(|l| (l, Some(n))));
        }
    }
    let loose = if listed { ix.loose() } else { LineIndex::run_and(ix.blob(), &ix.meta.loose, &[]) };
    let Some(loose) = loose else { return Ok(Err(Skipped::LineMismatch)) };
    locs.extend(loose.into_iter().map(|l| (l, None)));
    locs.sort_unstable_by_key(|(l, _)| l.line);
    let feed = Feed::of(opts);
    let mut scan = Scan::default();
    let mut buf = Vec::new();
    for (loc, session) in locs {
        if loc.offset + loc.len > limit || read_line(&file, loc, &mut buf).is_none() {
            return Ok(Err(Skipped::LineMismatch));
        }
        // The line must still be the session's it is indexed under.
        let key = match classify_fast(loc.line, &buf) {
            Ok(Classified::Persisted { session, .. }) => Some(session.to_string()),
            Ok(Classified::View(v)) => Some(v.session_key().to_string()),
            Err(_) => None,
        };
        if key.as_deref() != session.map(|n| ix.keys[n].as_str()) {
            return Ok(Err(Skipped::LineMismatch));
        }
        scan.feed(&feed, RawLine { line_no: loc.line, offset: loc.offset, bytes: &buf }, opts);
    }
    for (line_no, offset, bytes) in &tail {
        scan.feed(&feed, RawLine { line_no: *line_no, offset: *offset, bytes }, opts);
    }
    // The reader's zeroed regions, the covered ones first, then a torn tail: as a full scan.
    let torn = std::mem::take(&mut report.problems);
    report.problems = ix.meta.regions.iter().chain(&ix.tail_regions).cloned().chain(torn).collect();
    Ok(Ok(scan.finish(report, opts)))
}
