//! The safe copy of a session's Claude Code transcript (issue 5 item 3).
//!
//! Claude Code's transcript can be cut by a crash and is deleted after 30 days. At Stop,
//! PreCompact and SessionEnd the hook appends the bytes the transcript gained since the last
//! copy to `.walj/transcripts/<session>.jsonl.zst`, as zstd frames (a concatenation of frames is
//! one valid zstd stream: `zstd -dc` reads it). The cost follows the new bytes, never the
//! transcript's size: the new bytes, three 4 KB fingerprint reads, one append, two fsyncs
//! (at most [`HOOK_MAX_BYTES`] per hook; a longer backlog is caught up at the next Stops).
//!
//! Crash safety. The sidecar `<session>.offset` (JSON) records how far the original was copied
//! (`offset`), the committed length of the `.zst` (`zst`) and fingerprints (crc32c) of the
//! original's first and last 4 KB before `offset`. Order: frame appended and fdatasync'd, then
//! the sidecar replaced atomically (temp, fsync, rename, fsync folder). A crash between the two
//! leaves an uncommitted frame, cut off at the next copy and copied again.
//!
//! The original changing under the copy. When it is shorter than `offset`, its fingerprints no
//! longer match (truncated, rewritten, replaced), it moved, or the sidecar is missing while a
//! copy exists, walj *resyncs*: the copy is kept as it is (so lines the original lost stay in
//! the copy) and every complete line of the original that the copy does not hold yet is
//! appended. That costs a read of both, once.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::fsutil;
use crate::project::Project;

/// Bytes fingerprinted at the start and before the copied offset.
const FINGERPRINT: u64 = 4096;
/// Largest frame (and read chunk).
const FRAME: usize = 4 << 20;
/// zstd level: the hook's time matters more than the last percent of size.
const LEVEL: i32 = 1;
/// Most new bytes one hook copies (about 40 ms here); a longer backlog (hooks installed late
/// in a huge session) is caught up over the next Stops.
pub(crate) const HOOK_MAX_BYTES: u64 = 64 << 20;

/// Where one session's copy lives.
#[derive(Debug, Clone)]
pub struct Paths {
    pub copy: PathBuf,
    pub sidecar: PathBuf,
    pub lock: PathBuf,
}

pub(crate) fn dir(project: &Project) -> PathBuf {
    project.dir.join("transcripts")
}

pub fn paths(project: &Project, session: &str) -> Paths {
    let d = dir(project);
    let stem = super::file_stem(session);
    Paths {
        copy: d.join(format!("{stem}.jsonl.zst")),
        sidecar: d.join(format!("{stem}.offset")),
        lock: d.join(format!("{stem}.lock")),
    }
}

/// The sidecar: how far the original was copied.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Sidecar {
    #[serde(default)]
    pub v: u32,
    /// The original transcript's path.
    #[serde(default)]
    pub source: String,
    /// Bytes of the original copied so far (the next copy starts here).
    #[serde(default)]
    pub offset: u64,
    /// Transcript bytes the copy holds (differs from `offset` after a resync).
    #[serde(default)]
    pub copied: u64,
    /// Committed length of the `.zst` file.
    #[serde(default)]
    pub zst: u64,
    #[serde(default)]
    pub head: u32,
    #[serde(default)]
    pub head_len: u64,
    #[serde(default)]
    pub tail: u32,
    #[serde(default)]
    pub tail_len: u64,
    #[serde(default)]
    pub frames: u64,
    #[serde(default)]
    pub resyncs: u64,
    #[serde(default)]
    pub updated: String,
    /// After a resync that left a cut line at `offset`: keys of the copy's lines that line may
    /// complete to, so the next copy does not add it twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<(u64, usize)>,
}

/// What one copy did.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CopyStats {
    /// `up_to_date`, `appended`, `resynced`, `source_missing`.
    pub outcome: &'static str,
    /// Bytes read from the original (fingerprints included).
    pub read: u64,
    /// Transcript bytes added to the copy.
    pub appended: u64,
    /// Bytes appended to the `.zst` file.
    pub written: u64,
    pub frames: u64,
}

fn ctx<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> io::Error + 'a {
    move |e| io::Error::new(e.kind(), format!("{op} {}: {e}", path.display()))
}

/// Copies the bytes `source` gained since the last copy into the session's safe copy.
pub fn copy(project: &Project, session: &str, source: &Path) -> io::Result<CopyStats> {
    copy_limited(project, session, source, None)
}

/// [`copy`], appending at most `limit` new bytes (the rest waits for the next call).
pub(crate) fn copy_limited(
    project: &Project,
    session: &str,
    source: &Path,
    limit: Option<u64>,
) -> io::Result<CopyStats> {
    let meta = match fs::metadata(source) {
        Ok(m) if m.is_file() => m,
        Ok(_) => return Ok(CopyStats { outcome: "source_missing", ..CopyStats::default() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(CopyStats { outcome: "source_missing", ..CopyStats::default() });
        }
        Err(e) => return Err(ctx("reading", source)(e)),
    };
    let p = paths(project, session);
    locked(project, &p, || copy_locked(&p, source, meta.len(), limit))
}

/// Runs `f` holding the session copy's lock (creating `.walj/transcripts/` first).
fn locked<T>(project: &Project, p: &Paths, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    project.ensure_dir().map_err(ctx("creating", &project.dir))?;
    let d = dir(project);
    fsutil::create_private_dir(&d).map_err(ctx("creating", &d))?;
    fsutil::with_lock(&p.lock, |op, e| ctx(op, &p.lock)(e), f)
}

fn copy_locked(p: &Paths, source: &Path, src_len: u64, limit: Option<u64>) -> io::Result<CopyStats> {
    let side = read_sidecar(&p.sidecar);
    let mut zst = fsutil::open_private(&p.copy, OpenOptions::new().read(true).write(true).create(true).truncate(false))
        .map_err(ctx("opening", &p.copy))?;
    let zlen = zst.metadata().map_err(ctx("reading", &p.copy))?.len();
    let source_str = source.to_string_lossy().into_owned();
    let mut src = CountingFile::open(source)?;
    let resync = match &side {
        None => zlen > 0,
        Some(s) => {
            if zlen > s.zst {
                // An uncommitted frame (crash before the sidecar was written): copied again below.
                zst.set_len(s.zst).map_err(ctx("truncating", &p.copy))?;
            }
            zlen < s.zst || (!s.source.is_empty() && s.source != source_str) || !continuous(s, &mut src, src_len)?
        }
    };
    let mut side = side.unwrap_or_default();
    side.v = 1;
    side.source = source_str;
    let mut stats = if resync {
        resync_copy(p, &mut zst, &mut side, &mut src, src_len)?
    } else {
        if src_len == side.offset {
            return Ok(CopyStats { outcome: "up_to_date", read: src.read, ..CopyStats::default() });
        }
        let end = limit.map_or(src_len, |l| src_len.min(side.offset.saturating_add(l)));
        append_new(p, &mut zst, &mut side, &mut src, end)?
    };
    zst.sync_data().map_err(ctx("syncing", &p.copy))?;
    drop(zst);
    fingerprint_into(&mut side, &mut src, !resync)?;
    side.updated = crate::journal::record::now_ts();
    write_sidecar(&p.sidecar, &side)?;
    stats.read = src.read;
    Ok(stats)
}

/// True when the original still starts with what was copied (fingerprints hold).
fn continuous(s: &Sidecar, src: &mut CountingFile, src_len: u64) -> io::Result<bool> {
    if src_len < s.offset {
        return Ok(false);
    }
    if s.offset == 0 {
        return Ok(true);
    }
    // walj writes lengths of at most 4 KB within `offset`: others are damage (resync), not a
    // read to size or a position before the start.
    if s.head_len.max(s.tail_len) > s.offset.min(FINGERPRINT) {
        return Ok(false);
    }
    let head = src.crc_at(0, s.head_len)?;
    let tail = src.crc_at(s.offset - s.tail_len, s.tail_len)?;
    Ok(head == s.head && tail == s.tail)
}

/// Fingerprints the original's first and last 4 KB before `offset`. `verified_head`: the
/// first 4 KB were just checked against the sidecar (they cannot have changed since).
fn fingerprint_into(side: &mut Sidecar, src: &mut CountingFile, verified_head: bool) -> io::Result<()> {
    let head_len = side.offset.min(FINGERPRINT);
    if !(verified_head && head_len == side.head_len) {
        side.head_len = head_len;
        side.head = src.crc_at(0, head_len)?;
    }
    side.tail_len = side.offset.min(FINGERPRINT);
    side.tail = src.crc_at(side.offset - side.tail_len, side.tail_len)?;
    Ok(())
}

fn compressor() -> io::Result<zstd::bulk::Compressor<'static>> {
    let mut c = zstd::bulk::Compressor::new(LEVEL)?;
    c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
    Ok(c)
}

/// The normal path: the original grew; append `[offset, src_len)` as frames.
fn append_new(
    p: &Paths,
    zst: &mut File,
    side: &mut Sidecar,
    src: &mut CountingFile,
    src_len: u64,
) -> io::Result<CopyStats> {
    let mut stats = CopyStats { outcome: "appended", ..CopyStats::default() };
    let mut comp = compressor()?;
    zst.seek(SeekFrom::Start(side.zst)).map_err(ctx("seeking", &p.copy))?;
    src.seek(side.offset)?;
    let mut remaining = src_len - side.offset;
    let mut buf = vec![0u8; (remaining as usize).min(FRAME)];
    while remaining > 0 {
        let want = (remaining as usize).min(FRAME);
        let n = src.read_up_to(&mut buf[..want])?;
        if n == 0 {
            break; // cut while we read: the rest is looked at next time
        }
        let mut data = &buf[..n];
        if !side.pending.is_empty() {
            // The line cut at the last resync: skip it when the copy already holds it whole.
            match data.iter().position(|&b| b == b'\n') {
                None if (n as u64) == remaining && n < FRAME => {
                    stats.outcome = "up_to_date"; // still cut: wait for the rest of the line
                    break;
                }
                None => side.pending.clear(),
                Some(i) => {
                    if side.pending.contains(&line_key(&data[..=i])) {
                        side.offset += i as u64 + 1;
                        remaining -= i as u64 + 1;
                        data = &data[i + 1..];
                    }
                    side.pending.clear();
                }
            }
        }
        if !data.is_empty() {
            append_frame(&mut comp, zst, p, data, &mut stats, side)?;
            side.offset += data.len() as u64;
            remaining -= data.len() as u64;
        }
    }
    Ok(stats)
}

/// Compresses `data` into one frame, appends it to the copy and counts it.
fn append_frame(
    comp: &mut zstd::bulk::Compressor<'_>,
    zst: &mut File,
    p: &Paths,
    data: &[u8],
    stats: &mut CopyStats,
    side: &mut Sidecar,
) -> io::Result<()> {
    let frame = comp.compress(data)?;
    zst.write_all(&frame).map_err(ctx("appending to", &p.copy))?;
    stats.written += frame.len() as u64;
    stats.appended += data.len() as u64;
    stats.frames += 1;
    side.copied += data.len() as u64;
    side.zst += frame.len() as u64;
    side.frames += 1;
    Ok(())
}

/// The original no longer continues the copy: keep the copy, append the original's complete
/// lines the copy does not hold.
fn resync_copy(
    p: &Paths,
    zst: &mut File,
    side: &mut Sidecar,
    src: &mut CountingFile,
    src_len: u64,
) -> io::Result<CopyStats> {
    let mut stats = CopyStats { outcome: "resynced", ..CopyStats::default() };
    let raw = fs::read(&p.copy).map_err(ctx("reading", &p.copy))?;
    let mut seen: HashSet<(u64, usize)> = HashSet::new();
    let mut splitter = LineSplitter::default();
    let mut copied = 0u64;
    let mut last = None;
    let valid = walk_frames(&raw, |chunk| {
        copied += chunk.len() as u64;
        last = chunk.last().copied().or(last);
        splitter.feed(chunk, |line| {
            seen.insert(line_key(line));
        });
    });
    if (valid as u64) < raw.len() as u64 {
        zst.set_len(valid as u64).map_err(ctx("truncating", &p.copy))?;
    }
    side.zst = valid as u64;
    side.copied = copied;
    side.frames = count_frames(&raw[..valid]);
    let mut comp = compressor()?;
    zst.seek(SeekFrom::Start(side.zst)).map_err(ctx("seeking", &p.copy))?;
    let mut out: Vec<u8> = Vec::new();
    if copied > 0 && last != Some(b'\n') {
        out.push(b'\n'); // close the copy's cut last line before adding lines
    }
    let mut flush = |out: &mut Vec<u8>, stats: &mut CopyStats, side: &mut Sidecar| -> io::Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        append_frame(&mut comp, zst, p, out, stats, side)?;
        out.clear();
        Ok(())
    };
    src.seek(0)?;
    let mut pos = 0u64;
    let mut complete_end = 0u64;
    let mut carry: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; FRAME.min(src_len as usize).max(1)];
    while pos < src_len {
        let want = ((src_len - pos) as usize).min(buf.len());
        let n = src.read_up_to(&mut buf[..want])?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        let mut start = 0;
        while let Some(rel) = chunk[start..].iter().position(|&b| b == b'\n') {
            let end = start + rel + 1;
            let line: &[u8] = if carry.is_empty() {
                &chunk[start..end]
            } else {
                carry.extend_from_slice(&chunk[start..end]);
                &carry
            };
            if seen.insert(line_key(line)) {
                out.extend_from_slice(line);
            }
            carry.clear();
            complete_end = pos + end as u64;
            start = end;
            if out.len() >= FRAME {
                flush(&mut out, &mut stats, side)?;
            }
        }
        carry.extend_from_slice(&chunk[start..]);
        pos += n as u64;
    }
    flush(&mut out, &mut stats, side)?;
    side.offset = complete_end;
    side.resyncs += 1;
    // The original ends in a cut line: remember which lines of the copy it may complete to.
    side.pending.clear();
    if !carry.is_empty() {
        zst.sync_data().map_err(ctx("syncing", &p.copy))?;
        let raw = fs::read(&p.copy).map_err(ctx("reading", &p.copy))?;
        let mut splitter = LineSplitter::default();
        let pending = &mut side.pending;
        walk_frames(&raw, |chunk| {
            splitter.feed(chunk, |line| {
                if line.starts_with(&carry) && !pending.contains(&line_key(line)) {
                    pending.push(line_key(line));
                }
            })
        });
    }
    Ok(stats)
}

/// A stable key of a line (FNV-1a 64 and length): kept in the sidecar across walj versions.
fn line_key(line: &[u8]) -> (u64, usize) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in line {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h, line.len())
}

/// Splits a byte stream into `\n`-terminated lines (the last, unterminated part is kept).
#[derive(Default)]
struct LineSplitter {
    carry: Vec<u8>,
}

impl LineSplitter {
    fn feed(&mut self, chunk: &[u8], mut f: impl FnMut(&[u8])) {
        let mut start = 0;
        while let Some(rel) = chunk[start..].iter().position(|&b| b == b'\n') {
            let end = start + rel + 1;
            if self.carry.is_empty() {
                f(&chunk[start..end]);
            } else {
                self.carry.extend_from_slice(&chunk[start..end]);
                f(&self.carry);
                self.carry.clear();
            }
            start = end;
        }
        self.carry.extend_from_slice(&chunk[start..]);
    }
}

/// Calls `f` with the decoded content of every complete, valid frame, in order; returns the
/// length of the valid prefix of `raw` (a torn or damaged frame ends the walk).
fn walk_frames(raw: &[u8], mut f: impl FnMut(&[u8])) -> usize {
    let mut pos = 0;
    let mut buf = vec![0u8; 256 * 1024];
    while pos < raw.len() {
        let Ok(len) = zstd::zstd_safe::find_frame_compressed_size(&raw[pos..]) else { break };
        let frame = &raw[pos..pos + len];
        // Check the whole frame (content checksum) before handing out any of it.
        let mut dec = match zstd::stream::read::Decoder::with_buffer(frame) {
            Ok(d) => d.single_frame(),
            Err(_) => break,
        };
        let mut content = Vec::new();
        let ok = loop {
            match dec.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => content.extend_from_slice(&buf[..n]),
                Err(_) => break false,
            }
        };
        if !ok {
            break;
        }
        f(&content);
        pos += len;
    }
    pos
}

fn count_frames(raw: &[u8]) -> u64 {
    let mut pos = 0;
    let mut n = 0;
    while pos < raw.len() {
        match zstd::zstd_safe::find_frame_compressed_size(&raw[pos..]) {
            Ok(len) if len > 0 => {
                pos += len;
                n += 1;
            }
            _ => break,
        }
    }
    n
}

fn read_sidecar(path: &Path) -> Option<Sidecar> {
    let bytes = fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn write_sidecar(path: &Path, side: &Sidecar) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(side).map_err(io::Error::other)?;
    bytes.push(b'\n');
    fsutil::atomic_write(path, &bytes, Some(0o600)).map_err(ctx("writing", path))
}

/// A read-only handle on the original that counts what it reads.
struct CountingFile {
    file: File,
    path: PathBuf,
    read: u64,
}

impl CountingFile {
    fn open(path: &Path) -> io::Result<CountingFile> {
        Ok(CountingFile { file: File::open(path).map_err(ctx("opening", path))?, path: path.to_path_buf(), read: 0 })
    }
    fn seek(&mut self, at: u64) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(at)).map_err(ctx("seeking", &self.path)).map(|_| ())
    }
    /// Reads until `buf` is full or the file ends.
    fn read_up_to(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match self.file.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ctx("reading", &self.path)(e)),
            }
        }
        self.read += got as u64;
        Ok(got)
    }
    fn crc_at(&mut self, at: u64, len: u64) -> io::Result<u32> {
        if len == 0 {
            return Ok(0);
        }
        self.seek(at)?;
        let mut buf = vec![0u8; len as usize];
        let n = self.read_up_to(&mut buf)?;
        Ok(crc32c::crc32c(&buf[..n]))
    }
}

/// What `show` says about the transcript and its copy.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TranscriptStatus {
    pub original: Option<String>,
    pub original_exists: bool,
    pub original_bytes: Option<u64>,
    /// The `.zst` copy, when there is one.
    pub copy: Option<PathBuf>,
    /// Size of the copy on disk (`.zst` and sidecar).
    pub copy_bytes: u64,
    /// Transcript bytes the copy holds.
    pub copied: u64,
    pub updated: Option<String>,
    pub resyncs: u64,
}

impl TranscriptStatus {
    pub(crate) fn to_json(&self) -> Value {
        json!(self)
    }
    /// The original is gone or shorter than what the copy holds.
    pub(crate) fn copy_has_more(&self) -> bool {
        self.copy.is_some() && self.original_bytes.is_none_or(|n| n < self.copied)
    }
}

pub(crate) fn status(project: &Project, session: &str, original: Option<&str>) -> TranscriptStatus {
    let p = paths(project, session);
    let side = read_sidecar(&p.sidecar);
    let original_bytes = original.and_then(|o| fs::metadata(o).ok()).filter(|m| m.is_file()).map(|m| m.len());
    let has_copy = p.copy.is_file();
    TranscriptStatus {
        original: original.map(str::to_string),
        original_exists: original_bytes.is_some(),
        original_bytes,
        copy: has_copy.then(|| p.copy.clone()),
        copy_bytes: copy_size(project, session),
        copied: side.as_ref().map(|s| s.copied).unwrap_or(0),
        updated: side.as_ref().map(|s| s.updated.clone()).filter(|u| !u.is_empty()),
        resyncs: side.as_ref().map(|s| s.resyncs).unwrap_or(0),
    }
}

/// Bytes the copy takes on disk (0 when there is none).
pub(crate) fn copy_size(project: &Project, session: &str) -> u64 {
    let p = paths(project, session);
    [&p.copy, &p.sidecar].iter().filter_map(|f| fs::metadata(f).ok()).map(|m| m.len()).sum()
}

/// What reading the copy found.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ReadReport {
    pub bytes: u64,
    pub frames: u64,
    /// A torn or damaged frame at the end was skipped (a crash while appending).
    pub torn: bool,
}

/// Writes the copy's transcript bytes to `out`. `Ok(None)` when there is no copy.
pub(crate) fn write_copy(project: &Project, session: &str, out: &mut dyn Write) -> io::Result<Option<ReadReport>> {
    let p = paths(project, session);
    let raw = match fs::read(&p.copy) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ctx("reading", &p.copy)(e)),
    };
    let mut rep = ReadReport::default();
    let mut err = None;
    let valid = walk_frames(&raw, |chunk| {
        if err.is_none() {
            if let Err(e) = out.write_all(chunk) {
                err = Some(e);
            }
            rep.bytes += chunk.len() as u64;
            rep.frames += 1;
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    rep.torn = valid < raw.len();
    Ok(Some(rep))
}

/// The copy's transcript bytes in memory. `Ok(None)` when there is no copy.
pub fn read_copy(project: &Project, session: &str) -> io::Result<Option<Vec<u8>>> {
    let mut v = Vec::new();
    Ok(write_copy(project, session, &mut v)?.map(|_| v))
}

/// Installs a whole copy (import), atomically: `.zst` then sidecar. The sidecar names the
/// original path the session recorded, so a later copy continues (or resyncs) from it.
pub fn install(project: &Project, session: &str, source: Option<&str>, content: &[u8]) -> io::Result<()> {
    let p = paths(project, session);
    locked(project, &p, || {
        let mut comp = compressor()?;
        let mut zbytes = Vec::new();
        let mut frames = 0;
        for chunk in content.chunks(FRAME) {
            zbytes.extend_from_slice(&comp.compress(chunk)?);
            frames += 1;
        }
        fsutil::atomic_write(&p.copy, &zbytes, Some(0o600)).map_err(ctx("writing", &p.copy))?;
        let n = content.len() as u64;
        let fp = n.min(FINGERPRINT);
        let side = Sidecar {
            v: 1,
            source: source.unwrap_or_default().to_string(),
            offset: n,
            copied: n,
            zst: zbytes.len() as u64,
            head: crc32c::crc32c(&content[..fp as usize]),
            head_len: fp,
            tail: crc32c::crc32c(&content[(n - fp) as usize..]),
            tail_len: fp,
            frames,
            resyncs: 0,
            updated: crate::journal::record::now_ts(),
            pending: Vec::new(),
        };
        write_sidecar(&p.sidecar, &side)
    })
}

/// After the copy was written back over the original (`walj sessions transcript -o` on the
/// recorded path), the original equals the copy: later copies continue from its end instead
/// of resyncing. Returns whether the sidecar was realigned.
pub(crate) fn realign(project: &Project, session: &str, written: &Path) -> io::Result<bool> {
    let p = paths(project, session);
    if !dir(project).is_dir() {
        return Ok(false); // no copy was ever made
    }
    fsutil::with_lock(
        &p.lock,
        |op, e| ctx(op, &p.lock)(e),
        || {
            let Some(mut side) = read_sidecar(&p.sidecar) else { return Ok(false) };
            let same = |a: &Path, b: &Path| a == b || fs::canonicalize(a).ok() == fs::canonicalize(b).ok();
            if side.source.is_empty() || !same(Path::new(&side.source), written) {
                return Ok(false);
            }
            let len = fs::metadata(written).map_err(ctx("reading", written))?.len();
            if len != side.copied {
                return Ok(false);
            }
            let mut src = CountingFile::open(written)?;
            side.offset = len;
            side.pending.clear();
            fingerprint_into(&mut side, &mut src, false)?;
            side.updated = crate::journal::record::now_ts();
            write_sidecar(&p.sidecar, &side)?;
            Ok(true)
        },
    )
}

/// Removes the copy, its sidecar and lock (session delete, compaction of a gone session).
pub(crate) fn remove(project: &Project, session: &str) -> io::Result<()> {
    let p = paths(project, session);
    for f in [&p.copy, &p.sidecar, &p.lock] {
        match fs::remove_file(f) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(ctx("removing", f)(e)),
        }
    }
    let _ = fsutil::sync_dir(&dir(project));
    Ok(())
}

/// The end of the transcript (original when it exists, else the copy): at most `max` bytes.
pub(crate) fn tail(project: &Project, session: &str, original: Option<&str>, max: u64) -> Option<Vec<u8>> {
    if let Some(o) = original
        && let Ok(mut f) = File::open(o)
    {
        let len = f.metadata().ok()?.len();
        let start = len.saturating_sub(max);
        f.seek(SeekFrom::Start(start)).ok()?;
        let mut v = Vec::new();
        f.read_to_end(&mut v).ok()?;
        return Some(v);
    }
    let mut v = read_copy(project, session).ok()??;
    let cut = v.len().saturating_sub(max as usize);
    Some(v.split_off(cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, Project) {
        let d = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(d.path()).unwrap();
        (d, Project::at(root, None))
    }

    fn read_all(p: &Project, s: &str) -> Vec<u8> {
        read_copy(p, s).unwrap().unwrap()
    }

    #[test]
    fn incremental_then_truncated_then_grows() {
        let (d, p) = project();
        let t = d.path().join("t.jsonl");
        fs::write(&t, b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        let s1 = copy(&p, "s", &t).unwrap();
        assert_eq!(s1.outcome, "appended");
        assert_eq!(s1.appended, 16);
        let s2 = copy(&p, "s", &t).unwrap();
        assert_eq!(s2.outcome, "up_to_date");
        assert_eq!(s2.written, 0);
        let mut f = OpenOptions::new().append(true).open(&t).unwrap();
        f.write_all(b"{\"c\":3}\n").unwrap();
        drop(f);
        let s3 = copy(&p, "s", &t).unwrap();
        assert_eq!((s3.outcome, s3.appended), ("appended", 8));
        assert_eq!(read_all(&p, "s"), b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
        // Truncated (a crash cut it): the copy keeps the lost lines.
        fs::write(&t, b"{\"a\":1}\n{\"b").unwrap();
        let s4 = copy(&p, "s", &t).unwrap();
        assert_eq!((s4.outcome, s4.appended), ("resynced", 0));
        assert_eq!(read_all(&p, "s"), b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
        // It grows again from the cut: new complete lines are added once.
        fs::write(&t, b"{\"a\":1}\n{\"b\":2}\n{\"d\":4}\n").unwrap();
        let s5 = copy(&p, "s", &t).unwrap();
        assert_eq!((s5.outcome, s5.appended), ("appended", 8), "{s5:?}");
        let all = read_all(&p, "s");
        assert_eq!(all, b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n".to_vec(), "{}", String::from_utf8_lossy(&all));
    }

    #[test]
    fn replaced_original_resyncs_without_duplicates() {
        let (d, p) = project();
        let t = d.path().join("t.jsonl");
        fs::write(&t, b"l1\nl2\nl3\n").unwrap();
        copy(&p, "s", &t).unwrap();
        // Same length, different content (rewritten): resync appends only new lines.
        fs::write(&t, b"l1\nl2\nl4\nl5\n").unwrap();
        let s = copy(&p, "s", &t).unwrap();
        assert_eq!(s.outcome, "resynced");
        assert_eq!(read_all(&p, "s"), b"l1\nl2\nl3\nl4\nl5\n");
        let again = copy(&p, "s", &t).unwrap();
        assert_eq!(again.outcome, "up_to_date");
    }

    #[test]
    fn uncommitted_frame_is_cut_and_copied_again() {
        let (d, p) = project();
        let t = d.path().join("t.jsonl");
        fs::write(&t, b"one\n").unwrap();
        copy(&p, "s", &t).unwrap();
        let side_before = fs::read(paths(&p, "s").sidecar).unwrap();
        fs::write(&t, b"one\ntwo\n").unwrap();
        copy(&p, "s", &t).unwrap();
        // Simulate a crash after the frame was appended but before the sidecar was replaced.
        fs::write(paths(&p, "s").sidecar, side_before).unwrap();
        let s = copy(&p, "s", &t).unwrap();
        assert_eq!((s.outcome, s.appended), ("appended", 4));
        assert_eq!(read_all(&p, "s"), b"one\ntwo\n");
    }

    #[test]
    fn torn_frame_is_skipped_on_read_and_missing_sidecar_resyncs() {
        let (d, p) = project();
        let t = d.path().join("t.jsonl");
        fs::write(&t, b"one\n").unwrap();
        copy(&p, "s", &t).unwrap();
        let pp = paths(&p, "s");
        let mut f = OpenOptions::new().append(true).open(&pp.copy).unwrap();
        f.write_all(&[0x28, 0xb5, 0x2f, 0xfd, 1, 2]).unwrap();
        drop(f);
        let mut out = Vec::new();
        let rep = write_copy(&p, "s", &mut out).unwrap().unwrap();
        assert!(rep.torn);
        assert_eq!(out, b"one\n");
        fs::remove_file(&pp.sidecar).unwrap();
        fs::write(&t, b"one\ntwo\n").unwrap();
        let s = copy(&p, "s", &t).unwrap();
        assert_eq!(s.outcome, "resynced");
        assert_eq!(read_all(&p, "s"), b"one\ntwo\n");
    }

    #[test]
    fn limited_copies_catch_up_over_calls() {
        let (d, p) = project();
        let t = d.path().join("t.jsonl");
        let body: Vec<u8> = (0..100).flat_map(|i| format!("{{\"n\":{i:04}}}\n").into_bytes()).collect();
        fs::write(&t, &body).unwrap();
        let a = copy_limited(&p, "s", &t, Some(500)).unwrap();
        assert_eq!(a.appended, 500);
        let b = copy_limited(&p, "s", &t, Some(500)).unwrap();
        assert_eq!(b.appended, 500);
        let c = copy_limited(&p, "s", &t, Some(10_000)).unwrap();
        assert_eq!(c.appended, body.len() as u64 - 1000);
        assert_eq!(read_all(&p, "s"), body);
    }

    #[test]
    fn missing_source_is_not_an_error() {
        let (d, p) = project();
        let s = copy(&p, "s", &d.path().join("nope.jsonl")).unwrap();
        assert_eq!(s.outcome, "source_missing");
        assert!(!paths(&p, "s").copy.exists());
    }
}
