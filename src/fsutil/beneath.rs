//! Writing beneath a folder, checked at the moment of writing (revert, undo).
//!
//! A path checked first and written later can be changed in between: a folder swapped for
//! a symbolic link to `~/.ssh` or to `.git/` makes the later write land there. So walj never
//! writes a project file by its path. It opens the file's folder from the project root with
//! [`Dir::open_beneath`]:
//! - on Linux `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`: the kernel refuses any
//!   symbolic link and any `..` on the way, in one call (`ENOSYS` on a kernel older than 5.6:
//!   the walk below);
//! - elsewhere, and as that fallback, one component at a time with
//!   `openat(O_NOFOLLOW | O_DIRECTORY)`: a link or a non-folder at any step is refused;
//!
//! and then creates, renames, exchanges, reads and removes names *relative to that open
//! folder* ([`Dir`]), so whatever happens to the path meanwhile, the write lands in the folder
//! that was checked. Only plain names (no `/`, no `..`) are given to the `*at` calls.
//!
//! Without `openat` (Windows) the same calls act on joined paths: the lexical checks of the
//! caller hold, the race is not closed there.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::path::{Component, Path, PathBuf};

use super::swap::Support;

/// An open folder: names are created, renamed and removed relative to it.
#[derive(Debug)]
pub struct Dir {
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
    path: PathBuf,
}

/// What is at a name in a [`Dir`] (never following a link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Missing,
    File { mode: u32, uid: u32, gid: u32, nlink: u64 },
    Dir,
    Link,
    Other,
}

/// The error of [`Dir::open_beneath`] for a path that leaves the folder or goes through a
/// symbolic link (`ELOOP`, `EXDEV` from the kernel; a link met by the walk).
#[derive(Debug, thiserror::Error)]
#[error("{0}: a symbolic link (or a way out of the project) on the way; walj writes only through real folders")]
pub(crate) struct NotBeneath(pub String);

/// True when `e` is [`Dir::open_beneath`]'s refusal of a link or a way out.
pub(crate) fn is_not_beneath(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NotBeneath>())
}

fn not_beneath(rel: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, NotBeneath(rel.display().to_string()))
}

/// A plain name: one normal component.
fn check_name(name: &OsStr) -> io::Result<()> {
    let mut c = Path::new(name).components();
    match (c.next(), c.next()) {
        (Some(Component::Normal(n)), None) if n == name => Ok(()),
        _ => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{}: not a plain file name", name.display()))),
    }
}

impl Dir {
    /// Opens the folder at `path` (links in `path` itself are followed: this is the trusted
    /// start, the project root or a folder of walj's own).
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
            Ok(Dir { fd, path: path.to_path_buf() })
        }
        #[cfg(not(unix))]
        {
            if !fs::metadata(path)?.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    format!("{} is not a folder", path.display()),
                ));
            }
            Ok(Dir { path: path.to_path_buf() })
        }
    }

    /// The folder's path (for messages; never used to write on unix).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` in this folder (for messages and for readers by path).
    pub(crate) fn join(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// Opens the folder `rel` (relative, normal components only) beneath this one, refusing
    /// every symbolic link and every way out on the way; `create` makes missing folders
    /// (mode 0777 less the umask, as `mkdir -p` does), each one made relative to its checked
    /// parent. An empty `rel` is this folder again.
    pub(crate) fn open_beneath(&self, rel: &Path, create: bool) -> io::Result<Dir> {
        let mut parts = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => parts.push(n.to_os_string()),
                Component::CurDir => {}
                _ => return Err(not_beneath(rel)),
            }
        }
        #[cfg(target_os = "linux")]
        if !parts.is_empty() && !super::swap::portable_forced() {
            use rustix::fs::{Mode, OFlags, ResolveFlags};
            let joined: PathBuf = parts.iter().collect();
            match rustix::fs::openat2(
                &self.fd,
                &joined,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
            ) {
                Ok(fd) => return Ok(Dir { fd, path: self.path.join(&joined) }),
                Err(e) if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::XDEV => {
                    return Err(not_beneath(rel));
                }
                Err(e) if e == rustix::io::Errno::NOENT && create => {} // the walk makes them
                Err(e) if e == rustix::io::Errno::NOSYS || e == rustix::io::Errno::PERM => {} // no openat2 (or a seccomp filter): walk
                Err(e) if e == rustix::io::Errno::NOTDIR => return Err(not_a_folder(rel)),
                Err(e) => return Err(e.into()),
            }
        }
        self.walk(&parts, rel, create)
    }

    /// [`Dir::open_beneath`] one component at a time (`O_NOFOLLOW | O_DIRECTORY`).
    fn walk(&self, parts: &[OsString], rel: &Path, create: bool) -> io::Result<Dir> {
        let mut cur = self.reopen()?;
        for name in parts {
            let next = match cur.open_child(name) {
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                    match cur.mkdir(name) {
                        Ok(()) => {}
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(e),
                    }
                    cur.open_child(name)
                }
                r => r,
            };
            cur = match next {
                Ok(d) => d,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(e),
                Err(_) if matches!(cur.kind(name), Ok(Kind::Link)) => return Err(not_beneath(rel)),
                Err(_) if matches!(cur.kind(name), Ok(Kind::File { .. } | Kind::Other)) => {
                    return Err(not_a_folder(rel));
                }
                Err(e) => return Err(e),
            };
        }
        Ok(cur)
    }

    fn reopen(&self) -> io::Result<Dir> {
        #[cfg(unix)]
        {
            Ok(Dir { fd: self.fd.try_clone()?, path: self.path.clone() })
        }
        #[cfg(not(unix))]
        {
            Ok(Dir { path: self.path.clone() })
        }
    }

    /// Opens the child folder `name`, never through a link.
    fn open_child(&self, name: &OsStr) -> io::Result<Dir> {
        check_name(name)?;
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let fd = rustix::fs::openat(
                &self.fd,
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            Ok(Dir { fd, path: self.path.join(name) })
        }
        #[cfg(not(unix))]
        {
            let p = self.path.join(name);
            let m = fs::symlink_metadata(&p)?;
            if !m.is_dir() {
                return Err(io::Error::new(io::ErrorKind::NotADirectory, format!("{} is not a folder", p.display())));
            }
            Ok(Dir { path: p })
        }
    }

    fn mkdir(&self, name: &OsStr) -> io::Result<()> {
        check_name(name)?;
        #[cfg(unix)]
        {
            Ok(rustix::fs::mkdirat(&self.fd, name, rustix::fs::Mode::from_raw_mode(0o777))?)
        }
        #[cfg(not(unix))]
        {
            fs::create_dir(self.path.join(name))
        }
    }

    /// What is at `name`, without following a link.
    pub(crate) fn kind(&self, name: &OsStr) -> io::Result<Kind> {
        check_name(name)?;
        #[cfg(unix)]
        {
            use rustix::fs::{AtFlags, FileType};
            let st = match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(rustix::io::Errno::NOENT) => return Ok(Kind::Missing),
                Err(e) => return Err(e.into()),
            };
            Ok(match FileType::from_raw_mode(st.st_mode as _) {
                FileType::RegularFile => Kind::File {
                    mode: st.st_mode as u32 & 0o7777,
                    uid: st.st_uid,
                    gid: st.st_gid,
                    nlink: st.st_nlink as u64,
                },
                FileType::Directory => Kind::Dir,
                FileType::Symlink => Kind::Link,
                _ => Kind::Other,
            })
        }
        #[cfg(not(unix))]
        {
            match fs::symlink_metadata(self.path.join(name)) {
                Ok(m) if m.is_file() => Ok(Kind::File { mode: 0, uid: 0, gid: 0, nlink: 1 }),
                Ok(m) if m.is_dir() => Ok(Kind::Dir),
                Ok(m) if m.file_type().is_symlink() => Ok(Kind::Link),
                Ok(_) => Ok(Kind::Other),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Kind::Missing),
                Err(e) => Err(e),
            }
        }
    }

    /// Creates the new file `name` (`O_CREAT | O_EXCL | O_NOFOLLOW`: never an existing file,
    /// never through a link) with permissions `perm` less the umask, open for writing.
    pub(crate) fn create_new(&self, name: &OsStr, perm: u32) -> io::Result<File> {
        check_name(name)?;
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let fd = rustix::fs::openat(
                &self.fd,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(perm as _),
            )?;
            Ok(File::from(fd))
        }
        #[cfg(not(unix))]
        {
            let _ = perm;
            fs::OpenOptions::new().write(true).create_new(true).open(self.path.join(name))
        }
    }

    /// Reads `name` whole when it is a regular file (never through a link, never blocking
    /// on a FIFO); `None` when it is something else.
    pub(crate) fn read_regular(&self, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        use std::io::Read;
        let Some((mut f, meta)) = self.open_regular(name)? else { return Ok(None) };
        let mut out = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
        f.read_to_end(&mut out)?;
        Ok(Some(out))
    }

    /// Opens `name` for reading when it is a regular file (never through a link, never
    /// blocking on a FIFO; the type checked on the open descriptor); `None` when it is
    /// something else.
    pub(crate) fn open_regular(&self, name: &OsStr) -> io::Result<Option<(File, fs::Metadata)>> {
        check_name(name)?;
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let fd = match rustix::fs::openat(
                &self.fd,
                name,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(rustix::io::Errno::LOOP | rustix::io::Errno::NXIO) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            let f = File::from(fd);
            let meta = f.metadata()?;
            if !meta.is_file() {
                return Ok(None);
            }
            Ok(Some((f, meta)))
        }
        #[cfg(not(unix))]
        {
            let p = self.path.join(name);
            if !fs::symlink_metadata(&p)?.is_file() {
                return Ok(None);
            }
            super::open_regular(&p).map(Some)
        }
    }

    /// The target of the symbolic link `name` (read, never followed); `None` when `name` is
    /// not a link.
    pub(crate) fn read_link(&self, name: &OsStr) -> io::Result<Option<Vec<u8>>> {
        check_name(name)?;
        #[cfg(unix)]
        {
            match rustix::fs::readlinkat(&self.fd, name, Vec::new()) {
                Ok(t) => Ok(Some(t.into_bytes())),
                Err(rustix::io::Errno::INVAL) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
        #[cfg(not(unix))]
        {
            match fs::read_link(self.path.join(name)) {
                Ok(t) => Ok(Some(t.to_string_lossy().into_owned().into_bytes())),
                Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(None),
                Err(e) => Err(e),
            }
        }
    }

    /// Makes the new symbolic link `name` pointing at `target` (the link only: nothing at
    /// `target` is created, opened or followed). Fails when `name` exists.
    pub fn symlink(&self, target: &[u8], name: &OsStr) -> io::Result<()> {
        check_name(name)?;
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            Ok(rustix::fs::symlinkat(OsStr::from_bytes(target), &self.fd, name)?)
        }
        #[cfg(not(unix))]
        {
            let _ = target;
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{}: walj makes symbolic links only on Unix", self.path.join(name).display()),
            ))
        }
    }

    /// Renames `from` here to `to` in `dest` (a plain rename: whatever is there is replaced).
    pub(crate) fn rename(&self, from: &OsStr, dest: &Dir, to: &OsStr) -> io::Result<()> {
        check_name(from)?;
        check_name(to)?;
        #[cfg(unix)]
        {
            Ok(rustix::fs::renameat(&self.fd, from, &dest.fd, to)?)
        }
        #[cfg(not(unix))]
        {
            fs::rename(self.path.join(from), dest.path.join(to))
        }
    }

    /// Renames `from` here to `to` in `dest` only if nothing is at `to` (`RENAME_NOREPLACE`);
    /// `Missing` where the flag is not available.
    pub(crate) fn rename_noreplace(&self, from: &OsStr, dest: &Dir, to: &OsStr) -> io::Result<Support> {
        self.rename_with(from, dest, to, Flag::NoReplace)
    }

    /// Swaps `a` here and `b` in `dest` in one step (`RENAME_EXCHANGE`).
    pub(crate) fn exchange(&self, a: &OsStr, dest: &Dir, b: &OsStr) -> io::Result<Support> {
        self.rename_with(a, dest, b, Flag::Exchange)
    }

    fn rename_with(&self, from: &OsStr, dest: &Dir, to: &OsStr, flag: Flag) -> io::Result<Support> {
        check_name(from)?;
        check_name(to)?;
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::RenameFlags;
            if super::swap::portable_forced() {
                return Ok(Support::Missing);
            }
            let flags = match flag {
                Flag::NoReplace => RenameFlags::NOREPLACE,
                Flag::Exchange => RenameFlags::EXCHANGE,
            };
            match rustix::fs::renameat_with(&self.fd, from, &dest.fd, to, flags) {
                Ok(()) => Ok(Support::Done),
                Err(e) if super::swap::unsupported(e) => Ok(Support::Missing),
                Err(e) => Err(e.into()),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (dest, flag);
            Ok(Support::Missing)
        }
    }

    /// Removes whatever is at `name` (an empty folder as a folder), never following a link;
    /// nothing there is no error.
    pub(crate) fn remove_any(&self, name: &OsStr) -> io::Result<()> {
        match self.kind(name)? {
            Kind::Missing => Ok(()),
            Kind::Dir => self.remove(name, true),
            _ => self.remove(name, false),
        }
    }

    /// Removes the file (or empty folder, `dir`) `name`.
    pub(crate) fn remove(&self, name: &OsStr, dir: bool) -> io::Result<()> {
        check_name(name)?;
        #[cfg(unix)]
        {
            let flags = if dir { rustix::fs::AtFlags::REMOVEDIR } else { rustix::fs::AtFlags::empty() };
            Ok(rustix::fs::unlinkat(&self.fd, name, flags)?)
        }
        #[cfg(not(unix))]
        {
            let p = self.path.join(name);
            if dir { fs::remove_dir(p) } else { fs::remove_file(p) }
        }
    }

    /// Makes renames and new names in this folder durable.
    pub(crate) fn sync(&self) -> io::Result<()> {
        #[cfg(unix)]
        {
            Ok(rustix::fs::fsync(&self.fd)?)
        }
        #[cfg(not(unix))]
        {
            Ok(())
        }
    }
}

#[derive(Clone, Copy)]
enum Flag {
    NoReplace,
    Exchange,
}

fn not_a_folder(rel: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotADirectory, format!("a parent of {} is a file, not a folder", rel.display()))
}

/// Unused on some platforms: keeps `fs` imported everywhere.
#[allow(dead_code)]
fn _uses(_: fs::Metadata) {}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn both<T>(f: impl Fn() -> T) -> (T, T) {
        let a = f();
        super::super::swap::force_portable(true);
        let b = f();
        super::super::swap::force_portable(false);
        (a, b)
    }

    #[test]
    fn a_link_anywhere_on_the_way_is_refused_by_openat2_and_by_the_walk() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("a/b")).unwrap();
        symlink(outside.path(), d.path().join("a/out")).unwrap();
        symlink(d.path().join("a/b"), d.path().join("inner")).unwrap();
        let root = Dir::open(d.path()).unwrap();
        let (x, y) = both(|| root.open_beneath(Path::new("a/out"), true).unwrap_err());
        assert!(is_not_beneath(&x) && is_not_beneath(&y), "{x} / {y}");
        // A link that stays inside is refused too: no link is ever followed.
        let (x, y) = both(|| root.open_beneath(Path::new("inner"), false).unwrap_err());
        assert!(is_not_beneath(&x) && is_not_beneath(&y));
        let (x, y) = both(|| root.open_beneath(Path::new("a/out/deeper"), true).unwrap_err());
        assert!(is_not_beneath(&x) && is_not_beneath(&y));
        assert!(root.open_beneath(Path::new("../x"), true).is_err());
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing made outside");
        let (x, y) = both(|| root.open_beneath(Path::new("a/b"), false).map(|d| d.path().to_path_buf()).unwrap());
        assert_eq!(x, y);
    }

    #[test]
    fn missing_folders_are_made_beneath_and_names_stay_plain() {
        let d = tempfile::tempdir().unwrap();
        let root = Dir::open(d.path()).unwrap();
        let sub = root.open_beneath(Path::new("x/y/z"), true).unwrap();
        let mut f = sub.create_new(OsStr::new("f"), 0o644).unwrap();
        io::Write::write_all(&mut f, b"hi").unwrap();
        assert_eq!(fs::read(d.path().join("x/y/z/f")).unwrap(), b"hi");
        assert!(sub.create_new(OsStr::new("f"), 0o644).is_err(), "never an existing file");
        assert!(sub.create_new(OsStr::new("../g"), 0o644).is_err());
        assert!(sub.create_new(OsStr::new(".."), 0o644).is_err());
        symlink("/etc/passwd", d.path().join("x/y/z/l")).unwrap();
        assert_eq!(sub.read_regular(OsStr::new("l")).unwrap(), None, "a link is never read");
        assert_eq!(sub.kind(OsStr::new("l")).unwrap(), Kind::Link);
        fs::write(d.path().join("x/file"), b"").unwrap();
        let e = root.open_beneath(Path::new("x/file/deeper"), true).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotADirectory, "{e}");
    }
}
