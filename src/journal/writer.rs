//! Appending to the journal (DESIGN §3).
//!
//! Each append builds the whole text in memory, takes an exclusive lock on the sidecar
//! `journal.lock` (never unlinked, so every process locks the same inode), issues one
//! `write(2)` on an `O_APPEND` descriptor, `fdatasync`s, and unlocks. The cost does not
//! depend on the journal's size: the journal is never read to append, only its last
//! byte, to heal a torn tail left by a crash (the next line then starts with `\n`).
//!
//! The lock has a deadline ([`LOCK_DEADLINE`], well inside Claude Code's hook timeout): a
//! holder that is stopped (Ctrl-Z) or hung never blocks a hook without limit. Past the
//! deadline the record is never dropped: it goes to this process's side file
//! ([`super::side`]), the gap is logged in `errors.log` next to the journal, and the next
//! process that takes the lock merges every side file into the journal, in order and
//! exactly once, before its own lines. Readers see side-file records meanwhile.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::record::Record;
use super::side;
use crate::fsutil::{self, LockGuard};

/// How long an append waits for the journal's lock before it writes to its side file.
/// Claude Code's hook timeout is `claude::settings::HOOK_TIMEOUT_SECS` (10 s): the deadline
/// leaves the hook most of it, and a process waits for it once (see [`JournalWriter::append_bytes`]).
pub(crate) const LOCK_DEADLINE: Duration = Duration::from_secs(2);

/// After a deadline passed, this process does not wait again for this long: its next appends
/// only try the lock, so a hook that appends several times waits [`LOCK_DEADLINE`] once.
const BUSY_MEMORY: Duration = Duration::from_secs(10);

/// How long a lock holder spends merging side files before its own lines; what is left
/// waits for the next holder (its own lines then go to its side file, behind them).
const MERGE_BUDGET: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct JournalWriter {
    journal: PathBuf,
    lock: PathBuf,
    side: PathBuf,
    errors_log: PathBuf,
}

/// The journal's lock, held: the journal is open for appending, and every side file that
/// could be merged was (rewrites take it for their final swap).
pub(crate) struct Locked {
    _guard: LockGuard,
    /// What the merge of side files did, for the caller to report.
    pub merged: side::Merged,
}

impl JournalWriter {
    /// A writer for `journal`, locking `<its folder>/journal.lock`.
    pub fn new(journal: &Path) -> JournalWriter {
        let sibling = |ext: &str| {
            journal.with_file_name(match journal.file_name() {
                Some(n) if n != "journal.jsonl" => format!("{}.{ext}", n.to_string_lossy()),
                _ => format!("journal.{ext}"),
            })
        };
        JournalWriter {
            journal: journal.to_path_buf(),
            lock: sibling("lock"),
            side: sibling("side"),
            errors_log: journal.with_file_name("errors.log"),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.journal
    }

    /// The sidecar lock every appender takes; a journal rewrite (`walj compact`) takes it too.
    pub(crate) fn lock_path(&self) -> &Path {
        &self.lock
    }

    /// The folder of side files (records written while the lock was busy).
    pub(crate) fn side_dir(&self) -> &Path {
        &self.side
    }

    /// Appends one record durably.
    pub fn append(&self, record: &Record) -> io::Result<()> {
        self.append_bytes(&record.to_line())
    }

    /// Appends several records with one write and one sync (all or, after a crash, a prefix).
    pub fn append_all(&self, records: &[Record]) -> io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(records.len() * 256);
        for r in records {
            buf.extend_from_slice(&r.to_line());
        }
        self.append_bytes(&buf)
    }

    /// Appends the records `make` returns, made while the journal's lock is held: a writer
    /// that decides from what the journal says (a command's children against those of the
    /// commands that ran beside it) sees every line another holder appended before it, so two
    /// such writers never both decide from a journal that has neither's lines. When the lock
    /// is not to be had in time, `make` runs without it and the records go to the side file,
    /// as with [`JournalWriter::append_bytes`] (one wait, never two).
    pub(crate) fn append_decided(&self, make: impl FnOnce() -> Vec<Record>) -> io::Result<()> {
        self.append_made(|| Cow::Owned(make().iter().flat_map(Record::to_line).collect()))
    }

    /// Appends pre-built, `\n`-terminated lines: to the journal when its lock is free within
    /// [`LOCK_DEADLINE`] (after merging pending side files), else to this process's side
    /// file. Either way the lines are durable when this returns `Ok`.
    pub fn append_bytes(&self, lines: &[u8]) -> io::Result<()> {
        self.append_made(|| Cow::Borrowed(lines))
    }

    /// The lines `make` returns, made under the lock when it is taken: appended to the
    /// journal, or behind pending side files, or to the side file when the lock is busy.
    fn append_made<'a>(&self, make: impl FnOnce() -> Cow<'a, [u8]>) -> io::Result<()> {
        let wait = if recently_busy() { Duration::ZERO } else { LOCK_DEADLINE };
        match self.lock(wait) {
            Ok(locked) if !locked.merged.unfinished => {
                let lines = make();
                let r = if lines.is_empty() { Ok(()) } else { append_to(&self.journal, &lines) };
                drop(locked);
                match r {
                    // The journal's name holds a link or a FIFO: never written through,
                    // the records are kept in the side file.
                    Err(e) if fsutil::is_not_a_file(&e) => {
                        self.keep_aside(&lines, &format!("{}: {e}", self.journal.display()))
                    }
                    r => r,
                }
            }
            // Side files are still waiting (a long backlog): behind them, in order.
            Ok(locked) => {
                let lines = make();
                drop(locked);
                if lines.is_empty() {
                    return Ok(());
                }
                self.sync_journal();
                side::append(&self.side, &lines).map(|_| ())
            }
            // Busy past the deadline, or a lock file that is not a regular file (a FIFO
            // would block its opener): the record goes to the side file, never lost.
            Err(e) if fsutil::is_lock_busy(&e) || fsutil::is_not_a_file(&e) => {
                if fsutil::is_lock_busy(&e) {
                    note_busy();
                }
                let lines = make();
                self.keep_aside(&lines, &format!("journal lock not taken ({e})"))
            }
            Err(e) => Err(e),
        }
    }

    /// Appends `lines` to this process's side file and logs why (`why`).
    fn keep_aside(&self, lines: &[u8], why: &str) -> io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        self.sync_journal();
        let side = side::append(&self.side, lines)?;
        let n = lines.iter().filter(|&&b| b == b'\n').count();
        self.log(&format!(
            "{why}: {n} record{} kept in {}; the next writer merges {}",
            if n == 1 { "" } else { "s" },
            side.display(),
            if n == 1 { "it" } else { "them" },
        ));
        Ok(())
    }

    /// Syncs the journal as it is, before lines go to a side file: a line may name an image by
    /// id only because a journal line carries it (`store::Store::put_carried`), and that line
    /// (perhaps written by a holder that has not synced yet) must be durable before this one.
    /// Appending to the journal needs none of this: its own sync covers every earlier line.
    fn sync_journal(&self) {
        if let Ok((f, _)) = fsutil::open_regular(&self.journal) {
            let _ = f.sync_data();
        }
    }

    /// Takes the journal's lock (waiting at most `wait`) and merges pending side files.
    /// A failed merge is logged, never fatal: the side files stay for the next holder.
    pub(crate) fn lock(&self, wait: Duration) -> io::Result<Locked> {
        let guard = fsutil::lock_until(&self.lock, wait)?;
        let merged = side::merge(&self.side, &self.journal, MERGE_BUDGET).unwrap_or_else(|e| {
            self.log(&format!("merging side files of {}: {e}", self.journal.display()));
            side::Merged::default()
        });
        if merged.records > 0 || merged.torn > 0 {
            self.log(&merged.describe());
        }
        Ok(Locked { _guard: guard, merged })
    }

    /// A line in `errors.log` next to the journal (`.walj/errors.log`), which `walj doctor`
    /// shows; best effort.
    fn log(&self, msg: &str) {
        let _ = writeln!(io::stderr(), "walj: {msg}");
        fsutil::append_log(&self.errors_log, msg);
    }
}

/// Appends `lines` to the journal at `path` (the caller holds its lock).
fn append_to(path: &Path, lines: &[u8]) -> io::Result<()> {
    append_healing(&open_append(path)?, lines)
}

/// Opens a journal (or side file) for reading its last byte and appending, created 0600; never
/// blocks on, and refuses, anything but a regular file. A symbolic link at the name is never
/// followed (`O_NOFOLLOW`): a `journal.jsonl` link planted in `.walj/` (by a checkout, or a
/// Bash command) must not make walj append the user's prompts to the file it points to; it is
/// refused like a FIFO, and the records go to the side file.
pub(super) fn open_append(path: &Path) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.create(true).read(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW).bits() as i32);
    }
    #[cfg(not(unix))]
    if fs_is_symlink(path) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, fsutil::NotAFile));
    }
    let file = match fsutil::open_private(path, &mut opts) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, fsutil::NotAFile));
        }
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, fsutil::NotAFile));
    }
    Ok(file)
}

#[cfg(not(unix))]
fn fs_is_symlink(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// One write of `lines` on an append descriptor (after a `\n` when the file ends in a torn
/// line), then `fdatasync`. Read + append on one descriptor: the last byte is read with
/// pread (appends ignore the offset).
pub(super) fn append_healing(file: &File, lines: &[u8]) -> io::Result<()> {
    let len = file.metadata()?.len();
    let heal = len > 0 && last_byte(file, len)? != Some(b'\n');
    if heal {
        let mut buf = Vec::with_capacity(lines.len() + 1);
        buf.push(b'\n');
        buf.extend_from_slice(lines);
        write_once(file, &buf)?;
    } else {
        write_once(file, lines)?;
    }
    file.sync_data()
}

/// One `write(2)`; a short write (disk full, signal) is completed by further writes.
fn write_once(mut file: &File, buf: &[u8]) -> io::Result<()> {
    file.write_all(buf)
}

/// When this process last found the lock busy past its deadline (ms since [`epoch`] + 1).
static BUSY_AT: AtomicU64 = AtomicU64::new(0);

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn note_busy() {
    BUSY_AT.store(epoch().elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
}

fn recently_busy() -> bool {
    match BUSY_AT.load(Ordering::Relaxed) {
        0 => false,
        at => (epoch().elapsed().as_millis() as u64 + 1).saturating_sub(at) < BUSY_MEMORY.as_millis() as u64,
    }
}

pub(super) fn last_byte(f: &File, len: u64) -> io::Result<Option<u8>> {
    let mut b = [0u8; 1];
    Ok((read_at(f, &mut b, len - 1)? == 1).then_some(b[0]))
}

pub(super) use crate::fsutil::read_at;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::reader::{scan_file, scan_records};
    use crate::journal::record::op;

    #[test]
    fn heals_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        let w = JournalWriter::new(&p);
        w.append(&Record::new(op::INTENT, "s")).unwrap();
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"v\":2,\"op\":\"appl").unwrap();
        drop(f);
        w.append(&Record::new(op::APPLIED, "s")).unwrap();
        let mut ops = vec![];
        let rep = scan_records(&p, |_, r| ops.push(r.op)).unwrap();
        assert_eq!(ops, vec!["intent", "applied"]);
        assert_eq!(rep.problems.len(), 1);
        assert!(dir.path().join("journal.lock").exists());
    }

    /// Sessions of one record in the journal file itself (side files aside).
    fn in_journal(p: &Path) -> Vec<String> {
        let mut out = vec![];
        scan_file(p, |raw| out.push(crate::journal::record::parse_record(raw.bytes).unwrap().session)).unwrap();
        out
    }

    /// A lock held past the deadline: the record goes to the side file (readers see it), and
    /// the next writer merges it before its own line, once.
    #[test]
    fn a_busy_lock_sends_the_record_to_the_side_file_and_the_next_writer_merges_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        let w = JournalWriter::new(&p);
        w.append(&Record::new(op::INTENT, "first")).unwrap();
        let held = fsutil::lock_until(w.lock_path(), Duration::ZERO).unwrap();
        // Another open file description: the lock above is busy for it, as for another process.
        let t = Instant::now();
        let r = w.lock(Duration::from_millis(200));
        assert!(r.is_err_and(|e| fsutil::is_lock_busy(&e)));
        assert!(t.elapsed() < Duration::from_secs(2));
        // What append_bytes does past the deadline.
        side::append(w.side_dir(), &Record::new(op::INTENT, "second").to_line()).unwrap();
        assert_eq!(in_journal(&p), vec!["first"]);
        let mut seen = vec![];
        scan_records(&p, |_, r| seen.push(r.session)).unwrap();
        assert_eq!(seen, vec!["first", "second"], "readers see side-file records");
        drop(held);
        w.append(&Record::new(op::APPLIED, "third")).unwrap();
        assert_eq!(in_journal(&p), vec!["first", "second", "third"]);
        assert_eq!(std::fs::read_dir(w.side_dir()).unwrap().count(), 0, "merged side files are removed");
        let mut seen = vec![];
        scan_records(&p, |_, r| seen.push(r.session)).unwrap();
        assert_eq!(seen, vec!["first", "second", "third"], "exactly once");
    }

    /// A FIFO at the lock's name is refused without blocking; the record is kept in a side file.
    #[cfg(unix)]
    #[test]
    fn a_fifo_lock_file_is_refused_and_nothing_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("journal.jsonl");
        let w = JournalWriter::new(&p);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            w.lock_path(),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let t = Instant::now();
        w.append(&Record::new(op::INTENT, "s")).unwrap();
        assert!(t.elapsed() < Duration::from_secs(1), "took {:?}", t.elapsed());
        let mut seen = vec![];
        scan_records(&p, |_, r| seen.push(r.session)).unwrap();
        assert_eq!(seen, vec!["s"]);
        let log = std::fs::read_to_string(dir.path().join("errors.log")).unwrap();
        assert!(log.contains("not a regular file"), "{log}");
    }
}
