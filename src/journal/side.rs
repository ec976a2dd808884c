//! Side files: records written while the journal's lock was busy past its deadline
//! ([`super::writer::LOCK_DEADLINE`]), waiting to be merged into the journal.
//!
//! Each process writes its own side file in `journal.side/` (next to `journal.lock`), named
//! `<time>-<pid>-<n>.jsonl` so that names sort in the order the files were started. A side
//! file takes the same lines as the journal (checksummed, `\n`-terminated, one write, then
//! `fdatasync`); its writer holds a lock on the file itself while it writes.
//!
//! The next process that takes the journal's lock merges the side files, in name order,
//! before it writes its own lines ([`merge`], within a time budget; up to 256 files share one
//! journal write and sync). A merge never duplicates a record, even when it is killed
//! half-way:
//! 1. the side files are renamed to `<stem>.merging-<offset>`, `<offset>` being the journal's
//!    length before the merge, and the folder is synced;
//! 2. their lines are appended to the journal and synced;
//! 3. the side files are unlinked.
//!
//! A merge that finds a `.merging-<offset>` file (one that was interrupted) first drops each
//! line already present, byte for byte, in the journal after `<offset>`: nobody but a merger
//! appends between a holder's merge and its own lines, so that is where an interrupted
//! merge's lines are. A side file whose writer is writing (its lock is busy) is left for the
//! next holder, with that writer's later files, so one writer's records stay in order.
//!
//! Readers ([`super::reader`]) read side files after the journal and drop the lines they met
//! in the journal already (a merge may run while they read).

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::writer::{append_healing, open_append, read_at};
use crate::fsutil;

/// How long a writer waits for its side file's lock (a merger holds it for one merge).
const SIDE_WAIT: Duration = Duration::from_millis(200);

/// Extension of side files being written.
const EXT: &str = ".jsonl";
/// Infix of side files being merged: `<stem>.merging-<journal offset>`.
const MERGING: &str = ".merging-";

/// A side file found in the folder.
#[derive(Debug, Clone)]
struct Name {
    path: PathBuf,
    stem: String,
    /// `Some(offset)`: an interrupted merge started when the journal was this long.
    merging_at: Option<u64>,
    pid: Option<u32>,
}

/// What a merge did.
#[derive(Debug, Clone, Default)]
pub(crate) struct Merged {
    /// Records appended to the journal.
    pub records: u64,
    /// Records of an interrupted merge found in the journal already (not appended again).
    pub already: u64,
    /// Side files merged and removed.
    pub files: Vec<PathBuf>,
    /// Bytes of unterminated last lines dropped (a writer killed in the middle of a write,
    /// which was never acknowledged).
    pub torn: u64,
    /// Side files left for the next holder (their writer was writing, or the budget ran out).
    pub left: u64,
    /// The merge stopped at its time budget: the holder's own lines go to its side file too,
    /// behind the ones left, so one writer's records keep their order.
    pub unfinished: bool,
}

impl Merged {
    /// One line for `errors.log`.
    pub(crate) fn describe(&self) -> String {
        let mut s = format!(
            "journal: merged {} record{} from {} side file{} (written while the journal lock was busy)",
            self.records,
            if self.records == 1 { "" } else { "s" },
            self.files.len(),
            if self.files.len() == 1 { "" } else { "s" },
        );
        if self.already > 0 {
            s.push_str(&format!("; {} already merged by an interrupted merge, not repeated", self.already));
        }
        if self.torn > 0 {
            s.push_str(&format!("; {} bytes of a write cut short by a crash dropped", self.torn));
        }
        if self.left > 0 {
            s.push_str(&format!("; {} side file(s) left for the next writer", self.left));
        }
        s
    }
}

/// Parses a side file's name; `None` for anything else in the folder.
fn parse_name(path: PathBuf) -> Option<Name> {
    let file = path.file_name()?.to_str()?.to_string();
    let (stem, merging_at) = if let Some(stem) = file.strip_suffix(EXT) {
        (stem.to_string(), None)
    } else {
        let (stem, off) = file.rsplit_once(MERGING)?;
        (stem.strip_suffix(EXT).unwrap_or(stem).to_string(), Some(off.parse().ok()?))
    };
    let pid = stem.split('-').nth(1).and_then(|p| p.parse().ok());
    Some(Name { path, stem, merging_at, pid })
}

/// The side files in `dir`, in merge order (an interrupted merge first for its stem). A
/// missing folder has none.
fn list(dir: &Path) -> io::Result<Vec<Name>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    let mut names: Vec<Name> = rd.flatten().filter_map(|e| parse_name(e.path())).collect();
    names.sort_by(|a, b| (&a.stem, a.merging_at.is_none()).cmp(&(&b.stem, b.merging_at.is_none())));
    Ok(names)
}

/// The name of this process's current side file (`n` changes when one cannot be used).
fn own_name(n: u32) -> String {
    static STARTED: OnceLock<u128> = OnceLock::new();
    let t = STARTED.get_or_init(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos()
    });
    format!("{t:020}-{}-{n:03}{EXT}", std::process::id())
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Appends `lines` durably to this process's side file in `dir`; returns its path.
pub(super) fn append(dir: &Path, lines: &[u8]) -> io::Result<PathBuf> {
    fsutil::create_private_dir(dir)?;
    let mut last = None;
    for _ in 0..8 {
        let n = SEQ.load(Ordering::Relaxed);
        let path = dir.join(own_name(n));
        match append_to(&path, dir, lines) {
            Ok(true) => return Ok(path),
            // Busy (a merger is stopped on it), unlinked under us, or not a regular file: a
            // new file, later in the order.
            Ok(false) => {}
            Err(e) if fsutil::is_not_a_file(&e) => last = Some(e),
            Err(e) => return Err(e),
        }
        let _ = SEQ.compare_exchange(n, n + 1, Ordering::Relaxed, Ordering::Relaxed);
    }
    Err(last.unwrap_or_else(|| io::Error::other(format!("no side file in {} could be written", dir.display()))))
}

/// `Ok(false)`: this file cannot take the lines (see [`append`]).
fn append_to(path: &Path, dir: &Path, lines: &[u8]) -> io::Result<bool> {
    let file = open_append(path)?;
    let guard = match fsutil::lock_file_until(file, path, SIDE_WAIT) {
        Ok(g) => g,
        Err(e) if fsutil::is_lock_busy(&e) => return Ok(false),
        Err(e) => return Err(e),
    };
    let file = guard.file();
    let meta = file.metadata()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // Merged and unlinked between our open and our lock: lines written now would be lost.
        if meta.nlink() == 0 {
            return Ok(false);
        }
    }
    append_healing(file, lines)?;
    if meta.len() == 0 {
        // A new file: its name must survive a crash as its lines do.
        fsutil::sync_dir(dir)?;
    }
    Ok(true)
}

/// Opens an existing side file for reading; `None` when it is gone or not a regular file.
fn open_side(path: &Path) -> io::Result<Option<File>> {
    match fsutil::open_regular(path) {
        Ok((f, _)) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound || fsutil::is_not_a_file(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The complete (`\n`-terminated) lines of `bytes`, without their `\n`, and the length of
/// an unterminated rest.
fn complete_lines(bytes: &[u8]) -> (Vec<&[u8]>, u64) {
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let lines = bytes[..end].split(|&b| b == b'\n').filter(|l| !super::reader::trim(l).is_empty()).collect();
    (lines, (bytes.len() - end) as u64)
}

/// Side files merged with one journal write and one sync, at most.
const BATCH: usize = 256;

/// A side file taken for a merge: its lock, name, path and bytes.
struct Taken {
    _guard: fsutil::LockGuard,
    name: Name,
    bytes: Vec<u8>,
}

/// Locks and reads `n`; `None` when it is gone, not a regular file, or its writer is writing
/// (then `busy` learns its pid and `out.left` counts it).
fn take(n: &Name, busy: &mut HashSet<Option<u32>>, out: &mut Merged) -> io::Result<Option<Taken>> {
    if busy.contains(&n.pid) {
        out.left += 1;
        return Ok(None);
    }
    let Some(file) = open_side(&n.path)? else { return Ok(None) };
    let guard = match fsutil::lock_file_until(file, &n.path, Duration::ZERO) {
        Ok(g) => g,
        Err(e) if fsutil::is_lock_busy(&e) => {
            busy.insert(n.pid);
            out.left += 1;
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    let mut f = guard.file();
    f.read_to_end(&mut bytes)?;
    Ok(Some(Taken { _guard: guard, name: n.clone(), bytes }))
}

/// Merges the side files of `dir` into `journal` (see the module's text), within `budget`:
/// what is left past it is for the next holder ([`Merged::unfinished`]). The caller holds the
/// journal's lock. Interrupted merges are finished first; then up to [`BATCH`] files at a
/// time are renamed with the journal's length, the folder synced once, their lines appended
/// in one write and synced once, and the files unlinked.
pub(super) fn merge(dir: &Path, journal: &Path, budget: Duration) -> io::Result<Merged> {
    let mut out = Merged::default();
    let names = list(dir)?;
    if names.is_empty() {
        return Ok(out);
    }
    let deadline = std::time::Instant::now() + budget;
    let jf = open_append(journal)?;
    let mut busy: HashSet<Option<u32>> = HashSet::new();
    // Interrupted merges, by the offset they started at.
    let mut interrupted: std::collections::BTreeMap<u64, Vec<Name>> = std::collections::BTreeMap::new();
    let mut plain = Vec::new();
    for n in names {
        match n.merging_at {
            Some(offset) => interrupted.entry(offset).or_default().push(n),
            None => plain.push(n),
        }
    }
    for (offset, group) in interrupted {
        let mut taken = Vec::new();
        for n in &group {
            taken.extend(take(n, &mut busy, &mut out)?);
        }
        let mut lines = Vec::new();
        for t in &taken {
            let (l, torn) = complete_lines(&t.bytes);
            out.torn += torn;
            lines.extend(l);
        }
        let all = lines.len();
        let fresh = not_in_journal(&jf, offset, lines)?;
        out.already += (all - fresh.len()) as u64;
        finish(&jf, &taken, &fresh, &mut out)?;
    }
    let mut rest = plain.as_slice();
    while !rest.is_empty() {
        if std::time::Instant::now() > deadline {
            out.left += rest.len() as u64;
            out.unfinished = true;
            break;
        }
        let (chunk, after) = rest.split_at(rest.len().min(BATCH));
        rest = after;
        let mut taken = Vec::new();
        for n in chunk {
            taken.extend(take(n, &mut busy, &mut out)?);
        }
        if taken.is_empty() {
            continue;
        }
        // 1. Name the offset, durably, before the journal gets a byte of these files.
        let offset = jf.metadata()?.len();
        for t in &mut taken {
            let to = dir.join(format!("{}{EXT}{MERGING}{offset}", t.name.stem));
            fs::rename(&t.name.path, &to)?;
            t.name.path = to;
        }
        fsutil::sync_dir(dir)?;
        let mut lines = Vec::new();
        for t in &taken {
            let (l, torn) = complete_lines(&t.bytes);
            out.torn += torn;
            lines.extend(l);
        }
        finish(&jf, &taken, &lines, &mut out)?;
    }
    Ok(out)
}

/// Steps 2 and 3 of a merge: `lines` in one write, synced, then the files of `taken`
/// unlinked (should an unlink be lost in a crash, the next merge finds their lines in the
/// journal).
fn finish(jf: &File, taken: &[Taken], lines: &[&[u8]], out: &mut Merged) -> io::Result<()> {
    if !lines.is_empty() {
        let mut buf = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for l in lines {
            buf.extend_from_slice(l);
            buf.push(b'\n');
        }
        append_healing(jf, &buf)?;
        out.records += lines.len() as u64;
    }
    for t in taken {
        fs::remove_file(&t.name.path)?;
        out.files.push(t.name.path.clone());
    }
    Ok(())
}

/// The lines not already in the journal after `offset` (each journal line matches one).
fn not_in_journal<'a>(jf: &File, offset: u64, lines: Vec<&'a [u8]>) -> io::Result<Vec<&'a [u8]>> {
    let len = jf.metadata()?.len();
    if offset >= len {
        return Ok(lines);
    }
    let mut tail = vec![0u8; (len - offset) as usize];
    let mut got = 0;
    while got < tail.len() {
        match read_at(jf, &mut tail[got..], offset + got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    tail.truncate(got);
    let mut present: HashMap<&[u8], usize> = HashMap::new();
    for l in tail.split(|&b| b == b'\n') {
        *present.entry(super::reader::trim(l)).or_default() += 1;
    }
    Ok(lines
        .into_iter()
        .filter(|l| match present.get_mut(super::reader::trim(l)) {
            Some(c) if *c > 0 => {
                *c -= 1;
                false
            }
            _ => true,
        })
        .collect())
}

/// The side files of a journal as readers see them: their bytes, in merge order.
pub(crate) fn read_pending(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(names) = list(dir) else { return vec![] };
    let mut out = Vec::new();
    for n in names {
        // Best effort: a file merged and removed meanwhile is in the journal now.
        if let Ok(bytes) = fsutil::read_regular(&n.path) {
            out.push((n.path, bytes));
        }
    }
    out
}

/// The lines a reader takes from side files: complete lines only (a writer may be writing).
pub(super) fn pending_lines(files: &[(PathBuf, Vec<u8>)]) -> Vec<&[u8]> {
    files.iter().flat_map(|(_, b)| complete_lines(b).0).collect()
}

/// True when a merge was interrupted (a `.merging-` file is left): its offset names a place
/// in this journal file, so a rewrite must not replace the file before it is finished.
pub(crate) fn interrupted(dir: &Path) -> bool {
    list(dir).is_ok_and(|l| l.iter().any(|n| n.merging_at.is_some()))
}

/// The side files in `dir`, in merge order (for a reader that opens them itself).
pub(crate) fn files(dir: &Path) -> Vec<PathBuf> {
    list(dir).map(|l| l.into_iter().map(|n| n.path).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::JournalWriter;
    use crate::journal::reader::scan_file;
    use crate::journal::record::{Record, op};
    use std::fs::OpenOptions;

    fn lines_of(p: &Path) -> Vec<String> {
        let mut out = vec![];
        scan_file(p, |raw| out.push(String::from_utf8(raw.bytes.to_vec()).unwrap())).unwrap();
        out
    }

    fn rec(n: u32) -> Vec<u8> {
        Record::new(op::INTENT, &format!("s{n}")).with("n", n).to_line()
    }

    /// Every point where a merge can be killed: the next merge appends each record once.
    #[test]
    fn an_interrupted_merge_never_duplicates() {
        for crash in 0..4 {
            let dir = tempfile::tempdir().unwrap();
            let journal = dir.path().join("journal.jsonl");
            let w = JournalWriter::new(&journal);
            w.append_bytes(&rec(0)).unwrap();
            let side = w.side_dir().to_path_buf();
            let (r1, r2, r3) = (rec(1), rec(2), rec(3));
            let file = append(&side, &[r1.clone(), r2.clone(), r3.clone()].concat()).unwrap();
            let stem = parse_name(file.clone()).unwrap().stem;
            let offset = std::fs::metadata(&journal).unwrap().len();
            let merging = side.join(format!("{stem}{EXT}{MERGING}{offset}"));
            // The state a kill leaves after step `crash`.
            if crash >= 1 {
                std::fs::rename(&file, &merging).unwrap();
            }
            if crash == 2 {
                // Half of step 2: one record and a torn piece of the next.
                let mut f = OpenOptions::new().append(true).open(&journal).unwrap();
                io::Write::write_all(&mut f, &[r1.clone(), r2[..20].to_vec()].concat()).unwrap();
            }
            if crash == 3 {
                let mut f = OpenOptions::new().append(true).open(&journal).unwrap();
                io::Write::write_all(&mut f, &[r1, r2, r3].concat()).unwrap();
            }
            // Another writer appended after the interrupted merge (its side file was busy).
            w.append_bytes(&rec(4)).unwrap();
            let got: Vec<u64> = lines_of(&journal)
                .iter()
                .filter_map(|l| crate::journal::record::parse_record(l.as_bytes()).ok())
                .map(|r| r.extra["n"].as_u64().unwrap())
                .collect();
            let mut sorted = got.clone();
            sorted.sort();
            assert_eq!(sorted, vec![0, 1, 2, 3, 4], "crash point {crash}: {got:?}");
            assert_eq!(std::fs::read_dir(&side).unwrap().count(), 0, "crash point {crash}");
        }
    }

    /// A writer that opened its side file before a merge renamed and unlinked it never writes
    /// into the unlinked file; one that finds it renamed (merge killed) writes into it, and the
    /// next merge takes those lines too.
    #[test]
    fn a_writer_never_loses_lines_to_a_merge() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.jsonl");
        let w = JournalWriter::new(&journal);
        let side = w.side_dir().to_path_buf();
        let file = append(&side, &rec(1)).unwrap();
        // A merge runs; the writer then appends again: a new file (the old one is gone).
        drop(w.lock(Duration::ZERO).unwrap());
        let again = append(&side, &rec(2)).unwrap();
        assert_eq!(again, file, "the same name, a new file");
        drop(w.lock(Duration::ZERO).unwrap());
        assert_eq!(lines_of(&journal).len(), 2);
    }

    /// A long backlog is merged in batches within the holder's budget; past it, the holder's
    /// own lines wait behind the backlog, so every writer's order holds.
    #[test]
    fn a_backlog_is_merged_in_batches_within_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let journal = dir.path().join("journal.jsonl");
        let w = JournalWriter::new(&journal);
        let side = w.side_dir().to_path_buf();
        std::fs::create_dir_all(&side).unwrap();
        for i in 0..600u32 {
            std::fs::write(side.join(format!("{i:020}-{}-000{EXT}", 1000 + i)), rec(i)).unwrap();
        }
        let none = merge(&side, &journal, Duration::ZERO).unwrap();
        assert!(none.unfinished && none.records == 0 && none.left == 600, "{none:?}");
        let all = merge(&side, &journal, Duration::from_secs(60)).unwrap();
        assert_eq!((all.records, all.files.len(), all.unfinished), (600, 600, false));
        let got: Vec<u64> = lines_of(&journal)
            .iter()
            .map(|l| crate::journal::record::parse_record(l.as_bytes()).unwrap().extra["n"].as_u64().unwrap())
            .collect();
        assert_eq!(got, (0..600).collect::<Vec<u64>>(), "in name order");
    }

    #[test]
    fn names_sort_in_merge_order() {
        let a = parse_name(PathBuf::from("d/00000000000000000001-10-000.jsonl")).unwrap();
        let b = parse_name(PathBuf::from("d/00000000000000000001-10-000.jsonl.merging-55")).unwrap();
        let c = parse_name(PathBuf::from("d/00000000000000000002-9-000.jsonl")).unwrap();
        assert_eq!((b.merging_at, b.pid, a.merging_at, a.pid), (Some(55), Some(10), None, Some(10)));
        let mut v = [c.clone(), a.clone(), b.clone()];
        v.sort_by(|a, b| (&a.stem, a.merging_at.is_none()).cmp(&(&b.stem, b.merging_at.is_none())));
        assert_eq!(v.iter().map(|n| n.path.clone()).collect::<Vec<_>>(), vec![b.path, a.path, c.path]);
        assert!(parse_name(PathBuf::from("d/.tmp")).is_none());
    }
}
