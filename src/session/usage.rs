//! The usage index: what each session occupies in the journal (its records, their bytes, the
//! announcement and delivery marks among them, the lines that mark it imported) and which
//! store objects its lines name, so that `walj sessions list` sizes every session without
//! reading the whole journal.
//!
//! A cache, never a source of truth, kept at `.walj/usage.idx` beside the line index and
//! checked the same way (`crate::fold::snapshot::read_cache`): the journal's device and inode
//! (a compaction or a session delete replaces the file), its length (never shorter than the
//! bytes covered), the CRC-32C of the bytes just before the covered offset, the body's length
//! and CRC-32C. Any doubt is a full scan, whose answer is the same, only slower. The lines
//! past the covered offset are read and counted on top; the file is written anew when more
//! than [`WRITE_AFTER`] bytes had to be read past it.
//!
//! Every line, from the cache or read now, is counted by one function ([`count_line`]), so a
//! count through the index is the count of a full scan by construction. Side files waiting
//! (`journal::side`) and `WALJ_NO_LINE_INDEX` mean a full scan.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::fold::snapshot::{WRITE_AFTER, read_cache, write_cache};
use crate::journal::reader::scan_lines;
use crate::journal::{RawLine, Source, classify, identity, kind, op};

/// The first line of the index file; the version changes with its layout.
const MAGIC: &str = "walj usage index v1";

/// An object id as 20 bytes (the lower-case hex ids walj writes).
pub(crate) type Oid = [u8; 20];

/// What one session's lines add up to (see the module's doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Counted {
    pub records: u64,
    pub journal_bytes: u64,
    /// Announcement and delivery marks among the records (about other sessions).
    pub marks: u64,
    /// The lines that mark the session imported (written outside it), in journal order.
    pub imports: Vec<Vec<u8>>,
    /// The lower-case object ids its lines name, sorted, each once.
    pub ids: Vec<Oid>,
    /// Any other 40-hex-digit string its lines name (upper case in it), sorted, each once.
    pub odd: Vec<String>,
}

/// A session's count while lines are read.
#[derive(Debug, Default)]
pub(crate) struct Acc {
    records: u64,
    journal_bytes: u64,
    marks: u64,
    imports: Vec<Vec<u8>>,
    ids: HashSet<Oid>,
    odd: HashSet<String>,
}

/// `id` (40 lower-case hex digits) as bytes; `None` for anything else.
pub(crate) fn oid(id: &str) -> Option<Oid> {
    let b = id.as_bytes();
    if b.len() != 40 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 20];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (digit(b[2 * i])? << 4) | digit(b[2 * i + 1])?;
    }
    Some(out)
}

/// `oid` as its 40 hex digits.
pub(crate) fn hex(oid: &Oid) -> String {
    oid.iter().map(|b| format!("{b:02x}")).collect()
}

/// Counts one journal line for the session it belongs to (`only`: just that session): the
/// fold's classifier reads it, so usage counts exactly the lines the fold reads. An import's
/// mark counts for the session it names, not as one of its records (it is written outside it,
/// so it does not change the session's times).
pub(crate) fn count_line(out: &mut HashMap<String, Acc>, raw: &RawLine<'_>, only: Option<&str>) {
    let Ok(who) = classify(raw.line_no, raw.bytes) else { return };
    if who.op == op::SESSION && who.kind() == Some(kind::IMPORTED) {
        let Some(t) = who.target().filter(|t| !t.is_empty()) else { return };
        if only.is_none_or(|o| o == t) && serde_json::from_slice::<serde_json::Value>(raw.bytes).is_ok() {
            out.entry(t.to_string()).or_default().imports.push(raw.bytes.to_vec());
        }
        return;
    }
    let key = who.session_key();
    if key.is_empty() || only.is_some_and(|o| o != key) {
        return;
    }
    let u = match out.get_mut(key) {
        Some(u) => u,
        None => out.entry(key.to_string()).or_default(),
    };
    u.records += 1;
    u.journal_bytes += raw.bytes.len() as u64 + 1;
    for id in super::hex_ids(raw.bytes) {
        match oid(id) {
            Some(o) => {
                u.ids.insert(o);
            }
            None => {
                if !u.odd.contains(id) {
                    u.odd.insert(id.to_string());
                }
            }
        }
    }
    if who.op == op::SESSION && matches!(who.kind(), Some(kind::ANNOUNCED | kind::DELIVERED)) {
        u.marks += 1;
    }
}

impl Acc {
    /// Adds this count to `c` (the lines counted here come after those counted in `c`).
    fn add_to(self, c: &mut Counted) {
        c.records += self.records;
        c.journal_bytes += self.journal_bytes;
        c.marks += self.marks;
        c.imports.extend(self.imports);
        if !self.ids.is_empty() {
            c.ids.extend(self.ids);
            c.ids.sort_unstable();
            c.ids.dedup();
        }
        if !self.odd.is_empty() {
            c.odd.extend(self.odd);
            c.odd.sort_unstable();
            c.odd.dedup();
        }
    }
}

/// The counts of `acc`, finished.
pub(crate) fn finish(acc: HashMap<String, Acc>) -> HashMap<String, Counted> {
    acc.into_iter()
        .map(|(k, a)| {
            let mut c = Counted::default();
            a.add_to(&mut c);
            (k, c)
        })
        .collect()
}

/// The index file of `journal`: `usage.idx` next to a project's `.walj/journal.jsonl`; `None`
/// for any other journal (read in full each time).
#[cfg(test)]
fn path(journal: &Path) -> Option<PathBuf> {
    crate::fold::located::cache_path(journal, "usage.idx")
}

/// The index file when it may be used now (the line index's rule:
/// [`crate::fold::located::usable_cache`]).
fn usable(journal: &Path) -> Option<PathBuf> {
    crate::fold::located::usable_cache(journal, "usage.idx")
}

/// Every session's count, read in full (no index).
pub(crate) fn scan_all(journal: &Path) -> io::Result<HashMap<String, Counted>> {
    let mut acc: HashMap<String, Acc> = HashMap::new();
    scan_lines(journal, |raw| count_line(&mut acc, &raw, None))?;
    Ok(finish(acc))
}

/// Every session's count: from the index and the lines past it (written anew when more than
/// [`WRITE_AFTER`] bytes were read past it), else from a full scan.
pub(crate) fn load(journal: &Path) -> io::Result<HashMap<String, Counted>> {
    load_writing_after(journal, WRITE_AFTER)
}

/// Brings the index up to date (the background `walj fold`): nothing when it does not apply
/// now (a full scan would be read for nothing).
pub(crate) fn refresh(journal: &Path) {
    if usable(journal).is_some() {
        let _ = load(journal);
    }
}

/// [`load`], writing the index after reading more than `write_after` bytes past it.
pub(crate) fn load_writing_after(journal: &Path, write_after: u64) -> io::Result<HashMap<String, Counted>> {
    let Some(idx) = usable(journal) else { return scan_all(journal) };
    let file = match crate::fsutil::open_regular(journal) {
        Ok((f, _)) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(e),
    };
    let (mut counted, from, lines) = read_cache(&idx, MAGIC, &file)
        .ok()
        .and_then(|(raw, start, offset, lines)| Some((decode(raw.get(start..)?)?, offset, lines)))
        .unwrap_or_default();
    let mut tail: HashMap<String, Acc> = HashMap::new();
    let report = Source::tail(journal, from, lines).scan(|raw| count_line(&mut tail, &raw, None))?;
    for (k, a) in tail {
        a.add_to(counted.entry(k).or_default());
    }
    if report.end > 0 && report.end.saturating_sub(from) > write_after {
        let same = fs::metadata(journal).ok().map(|m| identity(&m)) == file.metadata().ok().map(|m| identity(&m));
        if same {
            let _ = write_cache(&idx, MAGIC, ".usage.idx.tmp-", &file, &encode(&counted), report.end, report.lines);
        }
    }
    Ok(counted)
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u64).to_le_bytes());
    out.extend_from_slice(b);
}

/// The body: the number of sessions, then per session (by key): the key, records, journal
/// bytes, marks, the import lines, the odd ids, the ids (20 bytes each); numbers are
/// little-endian `u64`s, byte strings a `u64` length and the bytes.
fn encode(counted: &HashMap<String, Counted>) -> Vec<u8> {
    let mut keys: Vec<&String> = counted.keys().collect();
    keys.sort_unstable();
    let mut out = Vec::with_capacity(8 + counted.values().map(|c| 64 + 20 * c.ids.len()).sum::<usize>());
    out.extend_from_slice(&(keys.len() as u64).to_le_bytes());
    for k in keys {
        let c = &counted[k];
        put_bytes(&mut out, k.as_bytes());
        for n in [c.records, c.journal_bytes, c.marks, c.imports.len() as u64] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        for i in &c.imports {
            put_bytes(&mut out, i);
        }
        out.extend_from_slice(&(c.odd.len() as u64).to_le_bytes());
        for o in &c.odd {
            put_bytes(&mut out, o.as_bytes());
        }
        out.extend_from_slice(&(c.ids.len() as u64).to_le_bytes());
        for id in &c.ids {
            out.extend_from_slice(id);
        }
    }
    out
}

/// What [`encode`] wrote; `None` when the bytes do not fit the layout.
fn decode(mut b: &[u8]) -> Option<HashMap<String, Counted>> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (b.get(..n)?, b.get(n..)?);
        *b = rest;
        Some(head)
    }
    fn num(b: &mut &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(take(b, 8)?.try_into().ok()?))
    }
    fn bytes<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
        let n = usize::try_from(num(b)?).ok()?;
        take(b, n)
    }
    fn count(b: &mut &[u8], each: usize) -> Option<usize> {
        // No count claims more items than the bytes left could hold.
        let n = usize::try_from(num(b)?).ok()?;
        (n.checked_mul(each)? <= b.len()).then_some(n)
    }
    let sessions = count(&mut b, 8)?;
    let mut out = HashMap::with_capacity(sessions);
    for _ in 0..sessions {
        let key = String::from_utf8(bytes(&mut b)?.to_vec()).ok()?;
        let (records, journal_bytes, marks) = (num(&mut b)?, num(&mut b)?, num(&mut b)?);
        let imports = (0..count(&mut b, 8)?).map(|_| bytes(&mut b).map(<[u8]>::to_vec)).collect::<Option<Vec<_>>>()?;
        let odd = (0..count(&mut b, 8)?)
            .map(|_| bytes(&mut b).and_then(|s| String::from_utf8(s.to_vec()).ok()))
            .collect::<Option<Vec<_>>>()?;
        let n = count(&mut b, 20)?;
        let raw = take(&mut b, n * 20)?;
        let ids: Vec<Oid> = raw.chunks_exact(20).map(|c| c.try_into().unwrap_or([0; 20])).collect();
        if !ids.is_sorted() || !odd.is_sorted() {
            return None;
        }
        let c = Counted { records, journal_bytes, marks, imports, ids, odd };
        if out.insert(key, c).is_some() {
            return None;
        }
    }
    b.is_empty().then_some(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_as_bytes_and_only_lower_case_hex_is_packed() {
        let id = "ce013625030ba8dba906f756967f9e9ca394464a";
        assert_eq!(hex(&oid(id).unwrap()), id);
        assert_eq!(oid(&id.to_ascii_uppercase()), None);
        assert_eq!(oid("ce01"), None);
    }

    #[test]
    fn the_body_round_trips_and_a_damaged_one_is_refused() {
        let mut m = HashMap::new();
        m.insert(
            "s-1".to_string(),
            Counted {
                records: 3,
                journal_bytes: 300,
                marks: 1,
                imports: vec![b"{\"op\":\"session\"}".to_vec()],
                ids: vec![[1; 20], [2; 20]],
                odd: vec!["A".repeat(40)],
            },
        );
        m.insert("s-2".to_string(), Counted::default());
        let body = encode(&m);
        assert_eq!(decode(&body), Some(m));
        assert_eq!(decode(&body[..body.len() - 1]), None);
        let mut longer = body.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        assert_eq!(decode(&[0xff; 8]), None);
    }

    /// Line `i` of a generated journal: edits of three sessions naming images (shared ones
    /// too), an id in upper case, marks of announcements, an import mark, a line no reader
    /// takes.
    fn line(i: usize) -> Vec<u8> {
        use crate::journal::{Blob, Record};
        let session = ["sess-a", "sess-b", "sess-c"][i % 3];
        let mut r = match i % 7 {
            0 => {
                let mut r = Record::new(op::SESSION, session);
                r.kind = Some(kind::ANNOUNCED.into());
                r.target = Some("sess-b".into());
                r
            }
            1 => {
                let mut r = Record::new(op::SESSION, "");
                r.kind = Some(kind::IMPORTED.into());
                r.target = Some(session.into());
                r
            }
            2 => return format!("not json {i}\n").into_bytes(),
            3 => {
                let mut r = Record::new(op::INTENT, session);
                r.path = format!("{:040X}", i % 5);
                r
            }
            _ => {
                let mut r = Record::new(op::APPLIED, session);
                r.path = format!("src/{}.rs", i % 4);
                r.before = Some(Blob::Id(format!("{:040x}", i % 11)));
                r.after = Some(Blob::Id(format!("{:040x}", i)));
                r
            }
        };
        r.id = format!("toolu_01Gen{i}");
        r.to_line()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, failure_persistence: None, ..Default::default() })]

        /// The counts through the index (written at a cut, maybe over a torn line, then the
        /// lines after it read) are the counts of a full scan; a second index after more
        /// lines too.
        #[test]
        fn counts_through_the_index_are_a_full_scans(n in 1usize..90, cut in 0usize..90, cut2 in 0usize..90, torn in proptest::prelude::any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            fs::create_dir(dir.path().join(".walj")).unwrap();
            let j = dir.path().join(".walj/journal.jsonl");
            let add = |b: &[u8]| {
                let mut f = fs::OpenOptions::new().create(true).append(true).open(&j).unwrap();
                std::io::Write::write_all(&mut f, b).unwrap();
            };
            let (cut, cut2) = (cut.min(n), cut2.clamp(cut.min(n), n));
            add(b"");
            for i in 0..cut { add(&line(i)); }
            if torn { add(b"{\"v\":2,\"op\":\"appl"); }
            load_writing_after(&j, 0).unwrap();
            proptest::prop_assert_eq!(load_writing_after(&j, u64::MAX).unwrap(), scan_all(&j).unwrap());
            if torn { add(b"\n"); }
            for i in cut..cut2 { add(&line(i)); }
            proptest::prop_assert_eq!(load_writing_after(&j, u64::MAX).unwrap(), scan_all(&j).unwrap());
            load_writing_after(&j, 0).unwrap();
            for i in cut2..n { add(&line(i)); }
            proptest::prop_assert!(path(&j).unwrap().is_file());
            proptest::prop_assert_eq!(load_writing_after(&j, u64::MAX).unwrap(), scan_all(&j).unwrap());
        }
    }

    #[test]
    fn an_index_of_another_journal_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(".walj")).unwrap();
        let j = dir.path().join(".walj/journal.jsonl");
        let lines: Vec<u8> = (0..40).flat_map(line).collect();
        fs::write(&j, &lines).unwrap();
        load_writing_after(&j, 0).unwrap();
        let idx = path(&j).unwrap();
        let kept = fs::read(&idx).unwrap();
        // Replaced (a compaction): fewer lines, another inode; the old index put back.
        let tmp = j.with_file_name("new");
        fs::write(&tmp, &lines[..lines.len() / 2]).unwrap();
        let cut = lines[..lines.len() / 2].iter().rposition(|&b| b == b'\n').unwrap() + 1;
        fs::write(&tmp, &lines[..cut]).unwrap();
        fs::rename(&tmp, &j).unwrap();
        fs::write(&idx, &kept).unwrap();
        assert_eq!(load_writing_after(&j, u64::MAX).unwrap(), scan_all(&j).unwrap());
        // Damaged: read in full.
        load_writing_after(&j, 0).unwrap();
        let mut b = fs::read(&idx).unwrap();
        let last = b.len() - 3;
        b[last] ^= 0x40;
        fs::write(&idx, &b).unwrap();
        assert_eq!(load_writing_after(&j, u64::MAX).unwrap(), scan_all(&j).unwrap());
        assert!(scan_all(&j).unwrap().contains_key("sess-a"));
    }
}
