//! Small file-system helpers: private files and folders, atomic writes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub mod beneath;
pub mod name;
pub mod swap;

pub(crate) use beneath::Dir;

/// Opens a file created with mode 0600 (owner only) where the platform has modes. A link at
/// `path` is never followed (`O_NOFOLLOW`: the open fails with `ELOOP`): every file walj opens
/// this way is its own (under `.walj/`, its state folders), and one planted as a link by
/// another program must not make walj write where it points. The open never blocks
/// (`O_NONBLOCK`, which changes nothing for a regular file): a FIFO planted at the name fails
/// to open (`ENXIO`) instead of waiting for a reader.
pub(crate) fn open_private(path: &Path, opts: &mut OpenOptions) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600).custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW).bits() as i32);
    }
    #[cfg(not(unix))]
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, NotAFile));
    }
    opts.open(path)
}

/// The error of [`open_regular`] for a path that is not a regular file (a FIFO, a device,
/// a socket, a folder): walj never reads one, it could block or never end.
#[derive(Debug, thiserror::Error)]
#[error("not a regular file")]
pub(crate) struct NotAFile;

/// True when `e` is [`open_regular`]'s refusal of a path that is not a regular file.
pub fn is_not_a_file(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NotAFile>())
}

fn not_a_file() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, NotAFile)
}

/// Opens `path` for reading only if it is a regular file (symlinks are followed). The open
/// itself never blocks (`O_NONBLOCK`: a FIFO without a writer would hang a plain open) and
/// the type is checked again on the open descriptor (`fstat`), so a file swapped for a
/// FIFO or a device between a look and the open is refused too ([`is_not_a_file`]).
pub(crate) fn open_regular(path: &Path) -> io::Result<(File, fs::Metadata)> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = match opts.open(path) {
        Ok(f) => f,
        // Windows: opening a folder for reading fails with a permission error.
        Err(e) if path.is_dir() && e.kind() != io::ErrorKind::NotFound => return Err(not_a_file()),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_a_file());
    }
    Ok((file, meta))
}

/// Reads the regular file at `path` whole (see [`open_regular`]); anything else is an error.
/// Sized from the `fstat` [`open_regular`] made: `File::read_to_end` would ask the size
/// again (an `fstat` and an `lseek`, two of a hook's system calls per file it reads).
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    /// A plain reader: the generic `read_to_end`, with no size probe of its own.
    struct Plain<'a>(&'a mut File);
    impl Read for Plain<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }
    let (mut file, meta) = open_regular(path)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
    Plain(&mut file).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// How long [`with_lock`] waits for a lock another process holds.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(2);

/// The error of [`lock_until`] when another process held the lock past the deadline: a
/// stopped (Ctrl-Z) or hung holder never makes walj wait without limit.
#[derive(Debug, thiserror::Error)]
#[error("{path} is locked by another process{holder} (waited {waited:.1?})")]
pub(crate) struct LockBusy {
    pub path: PathBuf,
    pub waited: Duration,
    /// ` (pid 123 walj, stopped)` when the holder is known (Linux), else empty.
    pub holder: String,
}

/// True when `e` is [`lock_until`]'s report of a lock held past the deadline.
pub(crate) fn is_lock_busy(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<LockBusy>())
}

/// An exclusive lock on a lock file, released when dropped.
#[derive(Debug)]
pub(crate) struct LockGuard {
    file: File,
}

impl LockGuard {
    /// The locked file (a side file is written through it).
    pub(crate) fn file(&self) -> &File {
        &self.file
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Closing the descriptor would release it too; unlocking says so.
        let _ = self.file.unlock();
    }
}

/// Opens (creating, 0600) a lock file without ever blocking: a FIFO or any other file that
/// is not a regular file at that name is refused ([`is_not_a_file`]), never opened in a way
/// that waits for a reader.
pub(crate) fn open_lock_file(path: &Path) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.create(true).truncate(false).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Never through a link planted at the name (issue 26): refused like a FIFO.
        opts.mode(0o600).custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW).bits() as i32);
    }
    let file = match opts.open(path) {
        Ok(f) => f,
        // A FIFO without a reader: opening it for writing without blocking fails (ENXIO).
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) => return Err(not_a_file()),
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => return Err(not_a_file()),
        Err(e) if path.is_dir() && e.kind() != io::ErrorKind::NotFound => return Err(not_a_file()),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(not_a_file());
    }
    Ok(file)
}

/// Takes the exclusive lock on `path` if no other process holds it; `Ok(None)` when one does.
pub(crate) fn try_lock(path: &Path) -> io::Result<Option<LockGuard>> {
    let file = open_lock_file(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(LockGuard { file })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Takes the exclusive lock on `path` (created 0600 when missing and never removed, so every
/// process locks the same inode), waiting at most `wait` for another holder to let go; past
/// that, an error ([`is_lock_busy`]) that names the holder where the platform tells.
///
/// The wait is a blocking `flock` in a helper thread (the waiter wakes the moment the holder
/// unlocks, no polling); on timeout the thread is abandoned: should it get the lock later it
/// lets go at once, as nobody is left to receive it.
pub(crate) fn lock_until(path: &Path, wait: Duration) -> io::Result<LockGuard> {
    lock_file_until(open_lock_file(path)?, path, wait)
}

/// [`lock_until`] on a file already open (`path` names it in errors).
pub(crate) fn lock_file_until(file: File, path: &Path, wait: Duration) -> io::Result<LockGuard> {
    match file.try_lock() {
        Ok(()) => return Ok(LockGuard { file }),
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
    }
    let busy = |waited| {
        io::Error::new(
            io::ErrorKind::WouldBlock,
            LockBusy { path: path.to_path_buf(), waited, holder: lock_holder(path).unwrap_or_default() },
        )
    };
    if wait.is_zero() {
        return Err(busy(Duration::ZERO));
    }
    let start = Instant::now();
    let (tx, rx) = mpsc::sync_channel::<io::Result<File>>(1);
    std::thread::Builder::new().name("walj-lock".into()).spawn(move || {
        // Locks belong to the open file description: the lock taken here is the caller's.
        let r = file.lock().map(|()| file);
        // Nobody waiting any more: dropping the file releases the lock.
        let _ = tx.send(r);
    })?;
    match rx.recv_timeout(wait) {
        Ok(Ok(file)) => Ok(LockGuard { file }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(busy(start.elapsed())),
    }
}

/// Who holds the lock on `path`, as ` (pid N comm[, stopped])`, from `/proc/locks` (Linux).
pub(crate) fn lock_holder(path: &Path) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::metadata(path).ok()?;
        let dev = meta.dev();
        let want = format!("{:02x}:{:02x}:{}", rustix::fs::major(dev), rustix::fs::minor(dev), meta.ino());
        let locks = fs::read_to_string("/proc/locks").ok()?;
        let pid: u32 = locks.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // `1: FLOCK  ADVISORY  WRITE 7478 fe:00:6161503 0 EOF` (blocked waiters read `->`).
            (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&want.as_str())).then(|| f.get(4)?.parse().ok())?
        })?;
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let comm = stat.find('(').zip(stat.rfind(')')).and_then(|(a, b)| stat.get(a + 1..b)).unwrap_or("?");
        let stopped = stat.rfind(')').and_then(|b| stat.get(b + 2..b + 3)).is_some_and(|s| s == "T" || s == "t");
        Some(format!(" (pid {pid} {comm}{})", if stopped { ", stopped" } else { "" }))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// Runs `f` holding an exclusive lock on the file `lock` ([`lock_until`], waiting at most
/// [`LOCK_WAIT`]), and unlocks whatever `f` returns. `err(op, e)` names a failure to open or
/// take the lock (`op`: "opening", "locking").
pub(crate) fn with_lock<T, E>(
    lock: &Path,
    err: impl Fn(&'static str, io::Error) -> E,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let guard =
        lock_until(lock, LOCK_WAIT).map_err(|e| err(if is_lock_busy(&e) { "locking" } else { "opening" }, e))?;
    let result = f();
    drop(guard);
    result
}

/// `pread`: reads at `offset` without moving the descriptor's position.
pub(crate) fn read_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        f.read_at(buf, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        f.seek_read(buf, offset)
    }
    #[cfg(not(any(unix, windows)))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = f;
        f.seek(SeekFrom::Start(offset))?;
        f.read(buf)
    }
}

/// Now in walj's one timestamp format (UTC, milliseconds, `2026-12-02T00:27:56.123Z`): the
/// journal's records and the lines of its logs carry it.
pub(crate) fn now_ts() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// Largest log (`errors.log`) before it is rotated to `<name>.1` (the previous one goes).
pub(crate) const LOG_MAX: u64 = 1 << 20;

/// Appends `msg` as one line, after a timestamp, to a private log file (`.walj/errors.log`),
/// best effort: a log never fails its caller. A message equal to the last line's is not
/// written again: the last line counts it (`<first time> <msg> [x3, last <time>]`). Past
/// [`LOG_MAX`] bytes the log is renamed to `<name>.1`, replacing the previous one.
pub(crate) fn append_log(path: &Path, msg: &str) {
    let msg = msg.replace(['\n', '\r'], " ");
    let ts = now_ts();
    let open = || open_private(path, OpenOptions::new().create(true).read(true).append(true));
    let Ok(mut f) = open() else { return };
    // One writer at a time for the rewrite of the last line; a busy log is just appended to.
    if f.try_lock().is_err() {
        let _ = f.write_all(format!("{ts} {msg}\n").as_bytes());
        return;
    }
    let mut len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len > LOG_MAX {
        let mut old = path.as_os_str().to_owned();
        old.push(".1");
        if fs::rename(path, &old).is_ok()
            && let Ok(new) = open()
        {
            f = new;
            len = 0;
        }
    }
    let line = match last_line(&f, len) {
        Some((start, first, count)) if count.0 == msg => {
            // The same message again: the last line counts it.
            let _ = f.set_len(start);
            format!("{first} {msg} [x{}, last {ts}]\n", count.1 + 1)
        }
        _ => format!("{ts} {msg}\n"),
    };
    let _ = f.write_all(line.as_bytes());
}

/// The log's last line: (its offset, its first timestamp, (its message, times seen)).
fn last_line(f: &File, len: u64) -> Option<(u64, String, (String, u64))> {
    if len == 0 {
        return None;
    }
    let tail_len = len.min(8192);
    let mut tail = vec![0u8; tail_len as usize];
    let mut got = 0;
    while got < tail.len() {
        match read_at(f, &mut tail[got..], len - tail_len + got as u64).ok()? {
            0 => return None,
            n => got += n,
        }
    }
    let body = tail.strip_suffix(b"\n")?;
    let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if start == 0 && tail_len < len {
        return None; // a line longer than the tail read
    }
    let line = std::str::from_utf8(&body[start..]).ok()?;
    let (first, rest) = line.split_once(' ')?;
    let (msg, count) = match rest.strip_suffix(']').and_then(|r| r.rsplit_once(" [x")) {
        Some((msg, n)) => (msg, n.split_once(',')?.0.parse().ok()?),
        None => (rest, 1),
    };
    Some((len - tail_len + start as u64, first.to_string(), (msg.to_string(), count)))
}

/// The error of [`create_private_dir`] for a link where walj keeps a folder of its own under
/// `.walj/` (`.walj/bash`, `.walj/transcripts`…): planted by another program, it would make
/// walj write where it points.
#[derive(Debug, thiserror::Error)]
#[error("{} is a link, not walj's own folder: nothing is written through it (remove it; `walj doctor` lists such links)", path.display())]
pub(crate) struct LinkedDir {
    pub path: PathBuf,
}

/// Creates a folder (and parents) with mode 0700 where the platform has modes. A folder of
/// walj's own under `.walj/` that is a link is refused ([`LinkedDir`]); elsewhere (a state
/// folder under a linked home) links are followed as usual.
pub(crate) fn create_private_dir(path: &Path) -> io::Result<()> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) && under_walj_dir(path) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, LinkedDir { path: path.to_path_buf() }));
    }
    if path.is_dir() {
        return Ok(());
    }
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(path)
}

/// Whether `path` lies inside a `.walj` folder (a folder of a project's `.walj/`).
fn under_walj_dir(path: &Path) -> bool {
    path.parent().is_some_and(|p| p.components().any(|c| c.as_os_str() == ".walj"))
}

/// Makes a rename or a new entry in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        // Windows cannot open a folder as a file; NTFS journals metadata itself.
        let _ = dir;
        Ok(())
    }
}

/// Writes `bytes` to `path` atomically: temp file in the same folder, fsync, rename,
/// fsync the folder. `mode` (unix permissions) is applied to the new file when given;
/// the owner of the file it replaces is kept where the process may set it.
pub(crate) fn atomic_write(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    stage(path, bytes, mode)?.commit()
}

/// A file written and synced next to its destination, not yet renamed into place: the
/// caller can check the destination once more right before [`Staged::commit`]. Dropped
/// without a commit, the temp file is removed.
#[derive(Debug)]
pub struct Staged {
    /// The destination's folder, open: every rename and removal is relative to it.
    dir: std::sync::Arc<Dir>,
    tmp_name: std::ffi::OsString,
    name: std::ffi::OsString,
    /// `dir`/`tmp_name` and `dir`/`name`, for messages and readers.
    tmp: PathBuf,
    path: PathBuf,
    committed: bool,
    /// Exchanged with the destination at least once ([`Staged::exchange`]): the temp name
    /// may hold someone else's bytes and is never removed on drop.
    swapped: bool,
}

/// Longest file name most file systems take (NAME_MAX).
const NAME_MAX: usize = 255;

/// A temp file name next to `path`, unique to this process and call (several writers of
/// one path never share one), within [`NAME_MAX`] however long the file's name is.
pub(crate) fn temp_name(path: &Path) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let suffix = format!(".walj-tmp-{}-{nanos:x}-{n:x}", std::process::id());
    let mut name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let room = NAME_MAX - 1 - suffix.len();
    if name.len() > room {
        let mut end = room;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    format!(".{name}{suffix}")
}

/// Creates a new temp file with permissions `perm` (less the umask) from the start;
/// never opens an existing file or follows a link planted at its name.
#[cfg(test)]
fn create_temp(tmp: &Path, perm: u32) -> io::Result<File> {
    let dir = tmp.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Dir::open(dir)?.create_new(tmp.file_name().unwrap_or_default(), perm)
}

/// Writes and syncs `bytes` in a new temp file next to `path` (see [`Staged`]). The folder
/// is opened by its path (links in it followed): for walj's own files and others the caller
/// trusts; project files go through [`stage_in`] with a folder opened beneath the root.
pub fn stage(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<Staged> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{}: no file name", path.display())))?;
    stage_in(std::sync::Arc::new(Dir::open(dir)?), name, bytes, mode)
}

/// Writes and syncs `bytes` in a new temp file in `dir`, to be put at `name` (a plain name)
/// in that same open folder: whatever the path to `dir` becomes meanwhile, the file lands in
/// the folder that was opened ([`beneath`]).
pub fn stage_in(
    dir: std::sync::Arc<Dir>,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    mode: Option<u32>,
) -> io::Result<Staged> {
    let path = dir.join(name);
    let (tmp_name, mut f) = {
        let mut tries = 0;
        loop {
            let tmp_name = std::ffi::OsString::from(temp_name(&path));
            // Owner-only until the final permissions are set; a new file (no `mode`) gets
            // what a plain create gives (0666 less the umask).
            match dir.create_new(&tmp_name, if mode.is_some() { 0o600 } else { 0o666 }) {
                Ok(f) => break (tmp_name, f),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
                Err(e) => return Err(e),
            }
        }
    };
    let staged = Staged {
        tmp: dir.join(&tmp_name),
        path,
        tmp_name,
        name: name.to_os_string(),
        dir: std::sync::Arc::clone(&dir),
        committed: false,
        swapped: false,
    };
    f.write_all(bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Keep the owner of the file replaced (root acting in a user's project); a
        // process that may not is left the owner, as any editor would.
        if let Ok(beneath::Kind::File { uid, gid, .. }) = dir.kind(name) {
            let _ = std::os::unix::fs::fchown(&f, Some(uid), Some(gid));
        }
        if let Some(mode) = mode {
            f.set_permissions(fs::Permissions::from_mode(mode))?;
        }
    }
    #[cfg(not(unix))]
    let _ = mode;
    f.sync_all()?;
    Ok(staged)
}

impl Staged {
    /// Renames the temp file into place (a plain rename: whatever is there is replaced;
    /// see [`swap`] for the checked ways) and syncs the folder.
    pub fn commit(mut self) -> io::Result<()> {
        self.dir.rename(&self.tmp_name, &self.dir, &self.name)?;
        self.committed = true;
        self.dir.sync()
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed && !self.swapped {
            let _ = self.dir.remove(&self.tmp_name, false);
        }
    }
}

/// True when the file has more than one hard link: another name of the same bytes may be
/// anywhere on the file system (outside the project).
pub fn is_hard_linked(meta: &fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.is_file() && meta.nlink() > 1
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// Copies the regular file `from` to a new private file `to` (0600, replacing nothing that
/// exists: the caller removed it): walj's own copies are never links to, nor as readable as,
/// the original. Not synced: its one caller (a Bash snapshot's copy of the git index) writes a
/// sidecar that is not synced either, and a reader that finds the copy missing or damaged
/// after a power cut goes without it (the hook syncs one file, its journal).
pub fn copy_private(from: &Path, to: &Path) -> io::Result<()> {
    let (mut src, _) = open_regular(from)?;
    let mut dst = open_private(to, OpenOptions::new().write(true).create_new(true))?;
    io::copy(&mut src, &mut dst)?;
    Ok(())
}

/// `rel` (root-relative, `/`-separated; `abs` the same path on disk) is git's own, which
/// snapshots leave out: the top `.git`, anything inside a folder named `.git`, and a `.git`
/// folder below the top (a nested repository's). A `.git` *file* below the top (a gitlink,
/// as `git worktree add`, `git submodule` and `git init --separate-git-dir` write it), or one
/// gone, is a work-tree file like any other: a command that makes it changed the project.
pub fn git_own(rel: &str, abs: &Path) -> bool {
    let mut parts = rel.rsplit('/');
    let last = parts.next().unwrap_or("");
    if rel == ".git" || parts.any(|c| c == ".git") {
        return true;
    }
    last == ".git" && fs::symlink_metadata(abs).is_ok_and(|m| !m.is_file())
}

/// The unix permission bits of metadata already read, when the platform has them.
pub fn file_mode_of(meta: &fs::Metadata) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Some(meta.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// The unix permission bits of a file, when the platform has them.
pub fn file_mode(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_gitlink_file_below_the_top_is_no_part_of_git() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("sub")).unwrap();
        fs::create_dir_all(r.join("nested/.git")).unwrap();
        fs::write(r.join("sub/.git"), "gitdir: ../x\n").unwrap();
        let own = |rel: &str| git_own(rel, &r.join(rel));
        assert!(own(".git") && own(".git/config") && own("nested/.git") && own("nested/.git/HEAD"));
        assert!(!own("sub/.git") && !own("gone/.git") && !own("sub/x.txt") && !own(".github/ci.yml"));
    }

    // Defect: the temp file was opened without O_EXCL at a predictable name, so a
    // symbolic link planted there (a hostile repository, a tool) made the write follow it
    // and truncate a file outside the project.
    #[test]
    fn a_link_at_the_temp_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        fs::write(&victim, b"precious\n").unwrap();
        let target = dir.path().join("f.txt");
        fs::write(&target, b"old\n").unwrap();
        // A link at the name the old scheme picked for this process.
        std::os::unix::fs::symlink(&victim, dir.path().join(format!(".f.txt.walj-tmp-{}", std::process::id())))
            .unwrap();
        atomic_write(&target, b"new\n", Some(0o644)).unwrap();
        // Whatever the name, a temp file is only ever created, never opened through a link.
        let planted = dir.path().join(temp_name(&target));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let err = create_temp(&planted, 0o600).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&victim).unwrap(), b"precious\n", "wrote through a planted link");
        assert_eq!(fs::read(&target).unwrap(), b"new\n");
        assert!(!fs::symlink_metadata(&target).unwrap().file_type().is_symlink());
    }

    // Defect: two writes of one path by one process shared their temp file: one rename
    // failed, or a half-written temp file was renamed into place.
    #[test]
    fn concurrent_writes_of_one_path_do_not_share_a_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.txt");
        let contents: Vec<Vec<u8>> = (0..8u8).map(|i| vec![b'a' + i; 256 * 1024]).collect();
        std::thread::scope(|s| {
            let handles: Vec<_> = contents
                .iter()
                .map(|c| {
                    let target = &target;
                    s.spawn(move || (0..20).map(|_| atomic_write(target, c, None)).collect::<io::Result<Vec<()>>>())
                })
                .collect();
            for h in handles {
                h.join().unwrap().unwrap();
            }
        });
        let last = fs::read(&target).unwrap();
        assert!(contents.contains(&last), "the file is one whole write");
        let litter: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(litter.len(), 1, "{litter:?}");
    }

    // Checked and sound: names that are not UTF-8 (the temp name is built lossily, the
    // destination keeps its bytes), also at the longest length a name can have.
    #[test]
    fn names_that_are_not_utf8_or_very_long_are_written_in_place() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        for name in [&b"caf\xe9.txt"[..], &[0xffu8; 255][..]] {
            let target = dir.path().join(std::ffi::OsStr::from_bytes(name));
            fs::write(&target, b"old\n").unwrap();
            atomic_write(&target, b"new\n", Some(0o640)).unwrap();
            assert_eq!(fs::read(&target).unwrap(), b"new\n");
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temp file left");
    }
}
