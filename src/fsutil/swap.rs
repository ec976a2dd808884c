//! Putting a staged file in place without losing what another program writes at the same
//! instant (revert, undo).
//!
//! A check of the file followed by a rename leaves a window: bytes written between the two
//! are replaced unseen. On Linux `renameat2` closes it:
//! - `RENAME_EXCHANGE` ([`Staged::exchange`]) swaps the staged file and the file in place in
//!   one step, so afterwards the staged name holds exactly what the path held at the instant
//!   of the swap, and the caller can compare it with what it planned against;
//! - `RENAME_NOREPLACE` ([`Staged::create_new`], [`rename_noreplace`]) creates a file that
//!   should not exist only if it still does not.
//!
//! Where the call is missing (other systems, a file system without the flag: `EINVAL`,
//! `ENOSYS`, `EOPNOTSUPP`) both report [`Support::Missing`], and the caller falls back to a
//! check right before a plain rename. `WALJ_PORTABLE_RENAME=1` forces that fallback (tests,
//! and a way out should a file system misbehave).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::Staged;

/// Whether an atomic rename with flags ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    Done,
    /// Not available here (platform, file system, or forced off): use the fallback.
    Missing,
}

/// True when `WALJ_PORTABLE_RENAME=1` forces the portable fallback.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn portable_forced() -> bool {
    #[cfg(test)]
    if FORCED.with(std::cell::Cell::get) {
        return true;
    }
    std::env::var_os("WALJ_PORTABLE_RENAME").is_some_and(|v| v == "1")
}

#[cfg(test)]
thread_local! {
    static FORCED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Tests: forces the fallback on this thread, as `WALJ_PORTABLE_RENAME=1` does for a process.
#[cfg(test)]
pub(crate) fn force_portable(on: bool) {
    FORCED.with(|f| f.set(on));
}

/// Errors of `renameat2` that mean "this flag is not available here", not "this rename
/// failed": an old kernel (`ENOSYS`), a file system without the flag (`EINVAL`,
/// `EOPNOTSUPP`).
#[cfg(target_os = "linux")]
pub(super) fn unsupported(e: rustix::io::Errno) -> bool {
    use rustix::io::Errno;
    e == Errno::INVAL || e == Errno::NOSYS || e == Errno::OPNOTSUPP
}

#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: rustix::fs::RenameFlags) -> io::Result<Support> {
    if portable_forced() {
        return Ok(Support::Missing);
    }
    match rustix::fs::renameat_with(rustix::fs::CWD, from, rustix::fs::CWD, to, flags) {
        Ok(()) => Ok(Support::Done),
        Err(e) if unsupported(e) => Ok(Support::Missing),
        Err(e) => Err(e.into()),
    }
}

/// Swaps the files at `a` and `b` in one step (`RENAME_EXCHANGE`); both must exist.
pub fn exchange(a: &Path, b: &Path) -> io::Result<Support> {
    #[cfg(target_os = "linux")]
    {
        renameat2(a, b, rustix::fs::RenameFlags::EXCHANGE)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (a, b);
        Ok(Support::Missing)
    }
}

/// Renames `from` to `to` only if nothing is at `to` (`RENAME_NOREPLACE`): an error of kind
/// `AlreadyExists` when something is.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<Support> {
    #[cfg(target_os = "linux")]
    {
        renameat2(from, to, rustix::fs::RenameFlags::NOREPLACE)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (from, to);
        Ok(Support::Missing)
    }
}

/// What a staged name holds after an exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A regular file, read whole.
    File(Vec<u8>),
    /// Something that is not a regular file (a folder, a link, a FIFO…): never read.
    Other,
}

/// Reads what is at `path` without following a link or opening anything but a regular file.
pub fn read_found(path: &Path) -> io::Result<Found> {
    let meta = fs::symlink_metadata(path)?;
    if !meta.is_file() {
        return Ok(Found::Other);
    }
    match super::read_regular(path) {
        Ok(b) => Ok(Found::File(b)),
        Err(e) if super::is_not_a_file(&e) => Ok(Found::Other),
        Err(e) => Err(e),
    }
}

/// The result of [`Staged::create_new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewFile {
    /// The staged file is in place (and the folder synced).
    Placed,
    /// Something is at the path now: nothing was written, the staged file is kept for the
    /// caller (dropped: removed).
    Exists,
    /// `RENAME_NOREPLACE` is not available: nothing was done.
    Missing,
}

impl Staged {
    /// The temp name: the staged bytes until an [`exchange`](Staged::exchange), then what
    /// the path held.
    pub fn temp_path(&self) -> &Path {
        &self.tmp
    }

    /// The destination.
    pub fn dest(&self) -> &Path {
        &self.path
    }

    /// Swaps the staged file and the file at the destination in one step. Afterwards the
    /// temp name holds what the destination held at that instant ([`Staged::swapped_out`]);
    /// it is never removed on drop from then on (it may hold the only copy of someone's
    /// bytes), only by [`Staged::remove_swapped`]. Exchanging again swaps back.
    pub fn exchange(&mut self) -> io::Result<Support> {
        let r = self.dir.exchange(&self.tmp_name, &self.dir, &self.name)?;
        if r == Support::Done {
            self.swapped = true;
        }
        Ok(r)
    }

    /// What the temp name holds now (after an exchange: what was swapped out).
    pub fn swapped_out(&self) -> io::Result<Found> {
        Ok(match self.dir.read_regular(&self.tmp_name)? {
            Some(b) => Found::File(b),
            None => Found::Other,
        })
    }

    /// Removes the temp name (its bytes are accounted for) and syncs the folder, which also
    /// makes the exchanges durable.
    pub fn remove_swapped(mut self) -> io::Result<()> {
        self.committed = true;
        self.dir.remove_any(&self.tmp_name)?;
        self.dir.sync()
    }

    /// Leaves the temp name on disk (an error left bytes there that are nowhere else) and
    /// returns it.
    pub fn keep(mut self) -> PathBuf {
        self.committed = true;
        std::mem::take(&mut self.tmp)
    }

    /// Renames the staged file into place only if nothing is there (`RENAME_NOREPLACE`).
    pub fn create_new(&mut self) -> io::Result<NewFile> {
        match self.dir.rename_noreplace(&self.tmp_name, &self.dir, &self.name) {
            Ok(Support::Done) => {
                self.committed = true;
                self.dir.sync()?;
                Ok(NewFile::Placed)
            }
            Ok(Support::Missing) => Ok(NewFile::Missing),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(NewFile::Exists),
            Err(e) => Err(e),
        }
    }

    /// The open folder the file is put in.
    pub fn dir(&self) -> &super::Dir {
        &self.dir
    }

    /// The destination's plain name in [`Staged::dir`].
    pub fn name(&self) -> &std::ffi::OsStr {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    fn stage_at(path: &Path, bytes: &[u8]) -> Staged {
        super::super::stage(path, bytes, None).unwrap()
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn an_exchange_hands_back_exactly_what_was_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f.txt");
        fs::write(&f, b"theirs").unwrap();
        let mut s = stage_at(&f, b"ours");
        assert_eq!(s.exchange().unwrap(), Support::Done);
        assert_eq!(fs::read(&f).unwrap(), b"ours");
        assert_eq!(s.swapped_out().unwrap(), Found::File(b"theirs".to_vec()));
        // Swapping back puts their file back.
        assert_eq!(s.exchange().unwrap(), Support::Done);
        assert_eq!(fs::read(&f).unwrap(), b"theirs");
        let tmp = s.temp_path().to_path_buf();
        s.remove_swapped().unwrap();
        assert!(!tmp.exists());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn an_exchanged_temp_file_is_never_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f.txt");
        fs::write(&f, b"theirs").unwrap();
        let mut s = stage_at(&f, b"ours");
        s.exchange().unwrap();
        let tmp = s.temp_path().to_path_buf();
        drop(s);
        assert_eq!(fs::read(&tmp).unwrap(), b"theirs", "the swapped-out bytes survive an early return");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn an_exchange_with_a_missing_file_fails_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("gone.txt");
        let mut s = stage_at(&f, b"ours");
        let e = s.exchange().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(!f.exists());
        let tmp = s.temp_path().to_path_buf();
        drop(s);
        assert!(!tmp.exists(), "a staged file never swapped is removed on drop");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn create_new_never_replaces_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("new.txt");
        let mut s = stage_at(&f, b"ours");
        fs::write(&f, b"theirs, created meanwhile").unwrap();
        assert_eq!(s.create_new().unwrap(), NewFile::Exists);
        assert_eq!(fs::read(&f).unwrap(), b"theirs, created meanwhile");
        fs::remove_file(&f).unwrap();
        assert_eq!(s.create_new().unwrap(), NewFile::Placed);
        assert_eq!(fs::read(&f).unwrap(), b"ours");
    }

    #[test]
    fn found_never_reads_a_link_or_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        fs::write(&f, b"x").unwrap();
        assert_eq!(read_found(&f).unwrap(), Found::File(b"x".to_vec()));
        assert_eq!(read_found(dir.path()).unwrap(), Found::Other);
        #[cfg(unix)]
        {
            let l = dir.path().join("l");
            std::os::unix::fs::symlink(&f, &l).unwrap();
            assert_eq!(read_found(&l).unwrap(), Found::Other);
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_flags_a_file_system_lacks_read_as_missing_not_as_failures() {
        use rustix::io::Errno;
        assert!(unsupported(Errno::INVAL) && unsupported(Errno::NOSYS) && unsupported(Errno::OPNOTSUPP));
        assert!(!unsupported(Errno::NOENT) && !unsupported(Errno::EXIST) && !unsupported(Errno::XDEV));
    }
}
