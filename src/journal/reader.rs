//! Tolerant streaming reader (DESIGN §3).
//!
//! Reads the journal in fixed-size chunks (memory does not grow with the journal),
//! hands every complete line to a callback with its line number and byte offset, and
//! reports what it skipped: blank lines silently, malformed lines and checksum
//! failures by line number, runs of NUL bytes by offset and length, an unterminated last
//! line as a torn tail.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read};
use std::path::Path;

use super::record::{Record, check_crc, parse_record};

/// One complete line of the journal, without its `\n`.
pub struct RawLine<'a> {
    /// 1-based line number.
    pub line_no: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    pub bytes: &'a [u8],
}

/// What the reader skipped or noticed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Problem {
    /// Not a JSON object (or not UTF-8).
    Malformed { line: u64, error: String },
    /// The line parses but its checksum does not match (bit rot, hand edits).
    BadChecksum { line: u64 },
    /// The last line has no `\n`: a write cut short by a crash. Healed by the next append.
    TornTail { line: u64, bytes: u64 },
    /// A run of NUL bytes (a zeroed block: data lost in a crash, a damaged disk). JSON never
    /// holds a raw NUL; the lines around it are read as far as they are whole.
    Zeroed { offset: u64, bytes: u64 },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Malformed { line, error } => write!(f, "line {line}: malformed, skipped ({error})"),
            Problem::BadChecksum { line } => write!(f, "line {line}: checksum mismatch, skipped"),
            Problem::TornTail { line, bytes } => {
                write!(f, "line {line}: torn tail ({bytes} bytes without newline), skipped")
            }
            Problem::Zeroed { offset, bytes } => write!(f, "zeroed region, {bytes} bytes at offset {offset}, skipped"),
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct ScanReport {
    /// Lines of the journal file (blank ones included).
    pub lines: u64,
    /// Bytes of the journal file read.
    pub bytes: u64,
    /// Offset after the journal file's last complete line.
    pub end: u64,
    /// Lines read from side files (written while the journal's lock was busy, not merged yet).
    pub pending: u64,
    pub problems: Vec<Problem>,
}

impl ScanReport {
    /// Problems beyond this many are counted, not kept (a garbage file must not eat memory).
    const MAX_KEPT: usize = 1000;
    pub(crate) fn push(&mut self, p: Problem) {
        if self.problems.len() < Self::MAX_KEPT {
            self.problems.push(p);
        }
    }
}

const CHUNK: usize = 1 << 20;

/// What a scan reads: a journal with its side files (every reader), one file alone, or the
/// first bytes of one (a rewrite's snapshot).
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    path: &'a Path,
    sides: bool,
    limit: Option<u64>,
    /// Where to start: (byte offset of a line's start, lines before it).
    start: (u64, u64),
}

impl<'a> Source<'a> {
    /// The journal and, after its lines, the records of its side files that are not merged
    /// yet ([`super::side`]), each once.
    pub fn journal(path: &'a Path) -> Source<'a> {
        Source { path, sides: true, limit: None, start: (0, 0) }
    }

    /// One file from byte `offset` (the start of a line), its lines numbered after `lines`
    /// earlier ones: the tail a fold snapshot did not cover ([`crate::fold`]). The report's
    /// `lines`, `bytes` and `end` count the whole file, as a scan from its start would.
    pub(crate) fn tail(path: &'a Path, offset: u64, lines: u64) -> Source<'a> {
        Source { path, sides: false, limit: None, start: (offset, lines) }
    }

    /// [`Source::tail`], then the records of the journal's side files (as
    /// [`Source::journal`] reads them after its lines).
    pub(crate) fn tail_with_sides(path: &'a Path, offset: u64, lines: u64) -> Source<'a> {
        Source { path, sides: true, limit: None, start: (offset, lines) }
    }

    /// At most `max_bytes` of one file from byte `offset` (the start of a line), its lines
    /// numbered after `lines` earlier ones: one step of a fold snapshot written in steps
    /// ([`crate::fold::snapshot`]). An unterminated line at the end is left out and not
    /// reported (the next step reads it); the report's `end` is the end of the last whole line.
    pub(crate) fn range(path: &'a Path, offset: u64, lines: u64, max_bytes: u64) -> Source<'a> {
        Source { path, sides: false, limit: Some(max_bytes), start: (offset, lines) }
    }

    /// One file alone.
    pub(crate) fn file(path: &'a Path) -> Source<'a> {
        Source { path, sides: false, limit: None, start: (0, 0) }
    }

    /// The first `limit` bytes of one file. An unterminated line at the limit is left out
    /// and not reported: it may be a line being appended.
    pub(crate) fn prefix(path: &'a Path, limit: u64) -> Source<'a> {
        Source { path, sides: false, limit: Some(limit), start: (0, 0) }
    }

    pub fn path(&self) -> &'a Path {
        self.path
    }

    /// Calls `f` for every complete, non-blank line. A missing journal is an empty one.
    pub(crate) fn scan(&self, mut f: impl FnMut(RawLine<'_>)) -> io::Result<ScanReport> {
        let files = if self.sides {
            super::side::read_pending(super::JournalWriter::new(self.path).side_dir())
        } else {
            vec![]
        };
        let pending = super::side::pending_lines(&files);
        if pending.is_empty() {
            return scan_one(self.path, self.limit, self.start, f);
        }
        // A merge may run while we read: a side line met in the journal is read there, once.
        let lens: HashSet<usize> = pending.iter().map(|l| trim(l).len()).collect();
        let mut met: HashMap<&[u8], usize> = pending.iter().map(|l| (trim(l), 0)).collect();
        let mut report = scan_one(self.path, self.limit, self.start, |raw| {
            if lens.contains(&raw.bytes.len())
                && let Some(c) = met.get_mut(raw.bytes)
            {
                *c += 1;
            }
            f(raw);
        })?;
        let (mut line_no, mut offset) = (report.lines, report.bytes);
        for l in pending {
            let bytes = trim(l);
            if let Some(c) = met.get_mut(bytes).filter(|c| **c > 0) {
                *c -= 1;
                continue;
            }
            line_no += 1;
            f(RawLine { line_no, offset, bytes });
            offset += l.len() as u64 + 1;
            report.pending += 1;
        }
        Ok(report)
    }
}

/// Calls `f` for every complete, non-blank line of a journal, then of its side files
/// ([`Source::journal`]). A missing journal is an empty one.
pub fn scan_lines(path: &Path, f: impl FnMut(RawLine<'_>)) -> io::Result<ScanReport> {
    Source::journal(path).scan(f)
}

/// [`scan_lines`] of one file alone (no side files).
pub fn scan_file(path: &Path, f: impl FnMut(RawLine<'_>)) -> io::Result<ScanReport> {
    Source::file(path).scan(f)
}

/// Reads one file in chunks (memory does not grow with it), up to `limit` bytes. Only a
/// regular file is read: a FIFO at the journal's name never blocks a reader.
fn scan_one(
    path: &Path,
    limit: Option<u64>,
    (start, lines_before): (u64, u64),
    mut f: impl FnMut(RawLine<'_>),
) -> io::Result<ScanReport> {
    let mut report = ScanReport::default();
    let mut file = match crate::fsutil::open_regular(path) {
        Ok((file, _)) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(e),
    };
    if start > 0 {
        io::Seek::seek(&mut file, io::SeekFrom::Start(start))?;
    }
    let mut file = file.take(limit.unwrap_or(u64::MAX));
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK * 2);
    let mut base: u64 = start; // file offset of buf[0]
    let mut line_no: u64 = lines_before;
    let mut chunk = vec![0u8; CHUNK];
    let mut zeros = Zeros::default();
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        zeros.scan(base + buf.len() as u64, &chunk[..n], &mut report);
        buf.extend_from_slice(&chunk[..n]);
        let mut start = 0usize;
        while let Some(rel) = memchr(b'\n', &buf[start..]) {
            let end = start + rel;
            line_no += 1;
            let bytes = trim(&buf[start..end]);
            if !bytes.is_empty() {
                f(RawLine { line_no, offset: base + start as u64, bytes });
            }
            start = end + 1;
        }
        buf.drain(..start);
        base += start as u64;
    }
    zeros.finish(&mut report);
    report.lines = line_no;
    report.end = base;
    if limit.is_some() {
        // Past the snapshot: the rest is not ours to judge.
        report.bytes = base;
        return Ok(report);
    }
    report.bytes = base + buf.len() as u64;
    if !trim(&buf).is_empty() {
        // Trailing NULs (a crash after the size was extended) are trimmed: a tail of only
        // zeros is skipped silently, like a blank line.
        report.push(Problem::TornTail { line: line_no + 1, bytes: buf.len() as u64 });
    }
    Ok(report)
}

/// How a backward scan ([`scan_lines_rev`]) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RevScan {
    /// The callback stopped it.
    Stopped,
    /// Every line was seen (the start of the file was reached).
    Start,
    /// `max_bytes` were read before either.
    Limit,
}

/// Calls `f` for the complete, non-blank lines of the journal's end, newest first, reading at
/// most `max_bytes` (rounded up to whole chunks), until `f` breaks. An unterminated last line
/// (a torn tail) is skipped. The hooks use it to look at the current turn without reading the
/// whole journal: the cost follows how far back the answer is, never the journal's size.
pub(crate) fn scan_lines_rev(
    path: &Path,
    max_bytes: u64,
    mut f: impl FnMut(&[u8]) -> std::ops::ControlFlow<()>,
) -> io::Result<RevScan> {
    use std::io::{Seek, SeekFrom};
    const REV_CHUNK: u64 = 64 * 1024;
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(RevScan::Start),
        Err(e) => return Err(e),
    };
    let mut pos = file.metadata()?.len();
    // Bytes of a line whose start lies before `pos`.
    let mut carry: Vec<u8> = Vec::new();
    // The bytes after the file's last `\n` are a torn tail (or nothing).
    let mut tail_seen = false;
    let mut read = 0u64;
    while pos > 0 {
        if read >= max_bytes {
            return Ok(RevScan::Limit);
        }
        let n = REV_CHUNK.min(pos);
        pos -= n;
        let mut window = vec![0u8; usize::try_from(n).map_err(io::Error::other)?];
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut window)?;
        read += n;
        window.extend_from_slice(&carry);
        let mut end = window.len();
        while let Some(i) = memchr::memrchr(b'\n', &window[..end]) {
            let line = trim(&window[i + 1..end]);
            end = i;
            if !tail_seen {
                tail_seen = true;
                continue;
            }
            if !line.is_empty() && f(line).is_break() {
                return Ok(RevScan::Stopped);
            }
        }
        carry = window[..end].to_vec();
    }
    let first = trim(&carry);
    if tail_seen && !first.is_empty() && f(first).is_break() {
        return Ok(RevScan::Stopped);
    }
    Ok(RevScan::Start)
}

/// Runs of NUL bytes met while reading, reported as [`Problem::Zeroed`].
#[derive(Default)]
struct Zeros {
    /// The run being read: (offset, length).
    run: Option<(u64, u64)>,
}

impl Zeros {
    /// Looks at `bytes`, read at file offset `at`: one `memchr` pass when there is no NUL.
    fn scan(&mut self, at: u64, bytes: &[u8], report: &mut ScanReport) {
        if memchr(0, bytes).is_none() {
            self.finish(report);
            return;
        }
        for i in memchr::memchr_iter(0, bytes) {
            let pos = at + i as u64;
            match &mut self.run {
                Some((start, len)) if *start + *len == pos => *len += 1,
                _ => {
                    self.finish(report);
                    self.run = Some((pos, 1));
                }
            }
        }
        if bytes.last() != Some(&0) {
            self.finish(report);
        }
    }

    fn finish(&mut self, report: &mut ScanReport) {
        if let Some((offset, bytes)) = self.run.take() {
            report.push(Problem::Zeroed { offset, bytes });
        }
    }
}

/// Calls `f` for every line the classifier ([`super::classify`]) reads that also parses as a
/// full [`Record`].
pub fn scan_records(path: &Path, mut f: impl FnMut(u64, Record)) -> io::Result<ScanReport> {
    let mut problems = Vec::new();
    let mut report = scan_lines(path, |raw| match super::view::classify(raw.line_no, raw.bytes) {
        Ok(_) => match parse_record(raw.bytes) {
            Ok(r) => f(raw.line_no, r),
            Err(e) => problems.push(Problem::Malformed { line: raw.line_no, error: e.to_string() }),
        },
        Err(p) => problems.push(p),
    })?;
    let torn = std::mem::take(&mut report.problems);
    for p in problems.into_iter().chain(torn) {
        report.push(p);
    }
    Ok(report)
}

/// Checks a line before parsing: must look like an object, its checksum tail (if any) must
/// hold. `Ok(true)`: the checksum passed; `Ok(false)`: the line has no readable checksum
/// tail, which only a line that is not v2 may lack ([`super::view::classify`] decides, once
/// the line is parsed).
pub(crate) fn check_line(line_no: u64, bytes: &[u8]) -> Result<bool, Problem> {
    if bytes.first() != Some(&b'{') {
        return Err(Problem::Malformed { line: line_no, error: "not a JSON object".into() });
    }
    match check_crc(bytes) {
        Some(false) => Err(Problem::BadChecksum { line: line_no }),
        Some(true) => Ok(true),
        None => Ok(false),
    }
}

/// Strips trailing `\r`, spaces and NUL bytes (zeroed sectors) and leading whitespace.
pub(crate) fn trim(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() || *first == 0 {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() || *last == 0 {
            b = rest;
        } else {
            break;
        }
    }
    b
}

#[inline]
pub(crate) fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    memchr::memchr(needle, hay)
}

/// Substring search used to pre-filter lines before parsing them.
#[inline]
pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::record::{Record, op};
    use std::fs::File;
    use std::io::Write;

    #[test]
    fn tolerant_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        let mut f = File::create(&p).unwrap();
        let good = Record::new(op::INTENT, "s1").to_line();
        f.write_all(&good).unwrap();
        f.write_all(b"\n   \n").unwrap();
        f.write_all(b"{not json}\n").unwrap();
        f.write_all(b"{\"v\":1,\"sid\":\"abc\",\"ts\":\"t\",\"event\":\"e\",\"path\":\"p\",\"persisted\":false}\n")
            .unwrap();
        let mut bad = good.clone();
        bad[5] ^= 2;
        f.write_all(&bad).unwrap();
        f.write_all(b"{\"v\":2,\"op\":\"intent\"").unwrap();
        drop(f);
        let mut n = 0;
        let rep = scan_records(&p, |_, _| n += 1).unwrap();
        assert_eq!(n, 2);
        assert_eq!(rep.problems.len(), 3, "{:?}", rep.problems);
        assert!(matches!(rep.problems[0], Problem::Malformed { line: 4, .. }));
        assert!(matches!(rep.problems[1], Problem::BadChecksum { line: 6 }));
        assert!(matches!(rep.problems[2], Problem::TornTail { line: 7, .. }));
    }

    /// Issue 13 item 6: a run of NUL bytes inside the journal (a zeroed block) is reported
    /// with its offset and length, not skipped as blank; the lines around it are still read.
    #[test]
    fn zeroed_regions_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        let a = Record::new(op::INTENT, "s1").to_line();
        let b = Record::new(op::APPLIED, "s1").to_line();
        let mut bytes = a.clone();
        bytes.extend(std::iter::repeat_n(0u8, 4096));
        bytes.extend_from_slice(&b);
        bytes.extend_from_slice(b"\0\0\0");
        std::fs::write(&p, &bytes).unwrap();
        let mut n = 0;
        let rep = scan_records(&p, |_, _| n += 1).unwrap();
        assert_eq!(n, 2, "the lines around a zeroed region are read");
        assert_eq!(
            rep.problems,
            vec![
                Problem::Zeroed { offset: a.len() as u64, bytes: 4096 },
                Problem::Zeroed { offset: (a.len() + 4096 + b.len()) as u64, bytes: 3 },
            ]
        );
        assert_eq!(rep.problems[0].to_string(), format!("zeroed region, 4096 bytes at offset {}, skipped", a.len()));
        // A run across the reader's chunks is one region.
        let mut big = a.clone();
        big.extend(std::iter::repeat_n(0u8, CHUNK + 10));
        big.extend_from_slice(&b);
        std::fs::write(&p, &big).unwrap();
        let rep = scan_records(&p, |_, _| {}).unwrap();
        assert_eq!(rep.problems, vec![Problem::Zeroed { offset: a.len() as u64, bytes: CHUNK as u64 + 10 }]);
    }

    #[test]
    fn backward_scan_sees_complete_lines_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        // Lines longer than a chunk cross chunk borders; the last one is torn.
        let long = "x".repeat(100_000);
        let text = format!("first\n\n{long}\nthird\n  \nfourth\ntorn");
        std::fs::write(&p, &text).unwrap();
        let mut seen = Vec::new();
        let end = scan_lines_rev(&p, u64::MAX, |l| {
            seen.push(String::from_utf8_lossy(l).into_owned());
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(end, RevScan::Start);
        assert_eq!(seen, ["fourth", "third", long.as_str(), "first"]);
        let mut n = 0;
        let end = scan_lines_rev(&p, u64::MAX, |_| {
            n += 1;
            if n == 2 { std::ops::ControlFlow::Break(()) } else { std::ops::ControlFlow::Continue(()) }
        })
        .unwrap();
        assert_eq!((end, n), (RevScan::Stopped, 2));
        // A limit smaller than the file stops the scan before its start.
        let end = scan_lines_rev(&p, 1, |_| std::ops::ControlFlow::Continue(())).unwrap();
        assert_eq!(end, RevScan::Limit);
        assert_eq!(
            scan_lines_rev(&dir.path().join("none"), 1, |_| std::ops::ControlFlow::Break(())).unwrap(),
            RevScan::Start
        );
    }

    #[test]
    fn contains_works() {
        assert!(contains(b"hello world", b"o w"));
        assert!(!contains(b"hello", b"hellox"));
        assert!(contains(b"aab", b"ab"));
    }
}
