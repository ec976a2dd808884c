//! Appending to the journal (DESIGN §3).
//!
//! Each append builds the whole text in memory, takes an exclusive lock on the sidecar
//! `journal.lock` (never unlinked, so every process locks the same inode), issues one
//! `write(2)` on an `O_APPEND` descriptor, `fdatasync`s, and unlocks. The cost does not
//! depend on the journal's size: the journal is never read to append, only its last
//! byte, to heal a torn tail left by a crash (the next line then starts with `\n`).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::record::Record;
use crate::fsutil;

#[derive(Debug, Clone)]
pub struct JournalWriter {
    journal: PathBuf,
    lock: PathBuf,
}

impl JournalWriter {
    /// A writer for `journal`, locking `<its folder>/journal.lock`.
    pub fn new(journal: &Path) -> JournalWriter {
        let lock = journal.with_file_name(match journal.file_name() {
            Some(n) if n != "journal.jsonl" => format!("{}.lock", n.to_string_lossy()),
            _ => "journal.lock".to_string(),
        });
        JournalWriter { journal: journal.to_path_buf(), lock }
    }

    pub fn path(&self) -> &Path {
        &self.journal
    }

    /// The sidecar lock every appender takes; a journal rewrite (`walj compact`) takes it too.
    pub fn lock_path(&self) -> &Path {
        &self.lock
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

    /// Appends pre-built, `\n`-terminated lines.
    pub fn append_bytes(&self, lines: &[u8]) -> io::Result<()> {
        fsutil::with_lock(&self.lock, |_, e| e, || self.append_locked(lines))
    }

    fn append_locked(&self, lines: &[u8]) -> io::Result<()> {
        // Read + append on one descriptor: the last byte is read with pread (appends ignore
        // the offset), so no second open is needed.
        let mut file = fsutil::open_private(&self.journal, OpenOptions::new().create(true).read(true).append(true))?;
        let len = file.metadata()?.len();
        let heal = len > 0 && last_byte(&file, len)? != Some(b'\n');
        if heal {
            let mut buf = Vec::with_capacity(lines.len() + 1);
            buf.push(b'\n');
            buf.extend_from_slice(lines);
            write_once(&mut file, &buf)?;
        } else {
            write_once(&mut file, lines)?;
        }
        file.sync_data()
    }
}

/// One `write(2)`; a short write (disk full, signal) is completed by further writes.
fn write_once(file: &mut File, buf: &[u8]) -> io::Result<()> {
    file.write_all(buf)
}

fn last_byte(f: &File, len: u64) -> io::Result<Option<u8>> {
    let mut b = [0u8; 1];
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        let n = f.read_at(&mut b, len - 1)?;
        Ok((n == 1).then_some(b[0]))
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        let n = f.seek_read(&mut b, len - 1)?;
        Ok((n == 1).then_some(b[0]))
    }
    #[cfg(not(any(unix, windows)))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = f;
        f.seek(SeekFrom::Start(len - 1))?;
        let n = f.read(&mut b)?;
        Ok((n == 1).then_some(b[0]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::reader::scan_records;
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
}
