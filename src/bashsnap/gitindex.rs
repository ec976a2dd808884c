//! A direct reader of git's index file (versions 2 to 4), for the snapshot's hot path.
//!
//! libgit2 verifies the index's SHA-1, builds a hash map of its entries and copies each
//! entry out again when iterated: a tenth of a Bash hook's time in a 10,000-file
//! repository. This reader only decodes the entries (the snapshot reads, never writes, and
//! a damaged index at worst lists a file that did not change). Anything it does not know
//! — split index (`link`), sparse directories (`sdir`), a SHA-256 repository, another
//! version — makes it return `None`, and the caller falls back to libgit2.
//! Format: <https://git-scm.com/docs/index-format>.

use std::path::Path;

/// One index entry, as the snapshot uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `/`-separated path relative to the work tree (a name that is not UTF-8 mapped
    /// losslessly: `fsutil::name`).
    pub path: String,
    pub ctime: (i32, u32),
    pub mtime: (i32, u32),
    pub ino: u32,
    pub mode: u32,
    pub size: u32,
    /// Blob id, raw ([`Entry::id`] is its hex): most entries are only stat-ed, never named.
    pub oid: [u8; HASH],
    pub stage: u16,
    pub skip_worktree: bool,
    pub intent_to_add: bool,
    /// `git update-index --assume-unchanged` (the "assume valid" flag).
    pub assume_valid: bool,
}

const HASH: usize = 20;

impl Entry {
    /// The blob id, hex.
    pub(crate) fn id(&self) -> String {
        crate::sha::hex(&self.oid)
    }
}

/// A path from the index as record text: the bytes' own allocation when they are ASCII (most
/// paths), else mapped losslessly (`fsutil::name`).
fn path_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) if s.is_ascii() || !crate::fsutil::name::has_raw(&s) => s,
        Ok(s) => crate::fsutil::name::encode(s.as_bytes()).into_owned(),
        Err(e) => crate::fsutil::name::encode(e.as_bytes()).into_owned(),
    }
}

/// Whether the index file at `path` ends with git's SHA-1 of every byte before it: a copy walj
/// saved that a power cut left cut short or zeroed (copies are not synced) does not, and is
/// never read. An index written with `index.skipHash` (git's `feature.manyFiles`: an all-zero
/// trailer, which a zeroed tail also has) passes only when the repository writes such indexes
/// (`skip_hash`: the live index has one too) and at the length the original had (`len`).
pub(crate) fn intact(path: &Path, len: Option<u64>, skip_hash: bool) -> bool {
    let Ok(data) = std::fs::read(path) else { return false };
    let Some(body) = data.len().checked_sub(HASH) else { return false };
    let trailer = &data[body..];
    if trailer.iter().all(|&b| b == 0) {
        return skip_hash && len == Some(data.len() as u64);
    }
    crate::sha::Sha1::of(&data[..body]).bytes()[..] == trailer[..]
}

/// Whether the index at `path` ends with an all-zero trailer (`index.skipHash`).
pub(crate) fn skips_hash(path: &Path) -> bool {
    let Ok((f, meta)) = crate::fsutil::open_regular(path) else { return false };
    let mut tail = [1u8; HASH];
    meta.len() >= HASH as u64
        && matches!(crate::fsutil::read_at(&f, &mut tail, meta.len() - HASH as u64), Ok(HASH))
        && tail.iter().all(|&b| b == 0)
}

/// Reads `path` (a `.git/index`). `None`: not readable here, use libgit2.
pub(crate) fn read(path: &Path) -> Option<Vec<Entry>> {
    let data = std::fs::read(path).ok()?;
    parse(&data)
}

fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

fn u16_at(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(d.get(at..at + 2)?.try_into().ok()?))
}

/// git's offset varint (index v4 path compression).
fn varint(d: &[u8], at: &mut usize) -> Option<usize> {
    let mut c = *d.get(*at)?;
    *at += 1;
    let mut v = (c & 0x7f) as usize;
    while c & 0x80 != 0 {
        c = *d.get(*at)?;
        *at += 1;
        v = v.checked_add(1)?.checked_shl(7)? | (c & 0x7f) as usize;
    }
    Some(v)
}

pub(crate) fn parse(d: &[u8]) -> Option<Vec<Entry>> {
    if d.get(0..4)? != b"DIRC" {
        return None;
    }
    let version = u32_at(d, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = u32_at(d, 8)? as usize;
    let mut entries = Vec::with_capacity(count.min(d.len() / 62));
    let mut at = 12;
    let mut prev: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let ctime = (u32_at(d, at)? as i32, u32_at(d, at + 4)?);
        let mtime = (u32_at(d, at + 8)? as i32, u32_at(d, at + 12)?);
        let ino = u32_at(d, at + 20)?;
        let mode = u32_at(d, at + 24)?;
        let size = u32_at(d, at + 36)?;
        let oid: [u8; HASH] = d.get(at + 40..at + 40 + HASH)?.try_into().ok()?;
        let flags = u16_at(d, at + 40 + HASH)?;
        at += 40 + HASH + 2;
        let (mut skip_worktree, mut intent_to_add) = (false, false);
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            let ext = u16_at(d, at)?;
            at += 2;
            skip_worktree = ext & 0x4000 != 0;
            intent_to_add = ext & 0x2000 != 0;
        }
        let path: Vec<u8> = if version == 4 {
            let strip = varint(d, &mut at)?;
            let nul = d.get(at..)?.iter().position(|&b| b == 0)?;
            let keep = prev.len().checked_sub(strip)?;
            let mut p = prev[..keep].to_vec();
            p.extend_from_slice(&d[at..at + nul]);
            at += nul + 1;
            p
        } else {
            let nul = d.get(at..)?.iter().position(|&b| b == 0)?;
            let p = d[at..at + nul].to_vec();
            // NUL-padded to a multiple of 8 bytes from the entry's start, at least one NUL.
            let len = at + nul - start;
            at = start + (len + 8) / 8 * 8;
            p
        };
        if mode & 0o170000 == 0o040000 {
            return None; // a sparse directory entry
        }
        if at > d.len() {
            return None;
        }
        if version == 4 {
            prev.clone_from(&path);
        }
        entries.push(Entry {
            path: path_text(path),
            ctime,
            mtime,
            ino,
            mode,
            size,
            oid,
            stage: (flags >> 12) & 3,
            skip_worktree,
            intent_to_add,
            assume_valid: flags & 0x8000 != 0,
        });
    }
    // Extensions: refuse those that change what the entries mean.
    while at + 8 <= d.len().saturating_sub(HASH) {
        let sig = &d[at..at + 4];
        let size = u32_at(d, at + 4)? as usize;
        if sig == b"link" || sig == b"sdir" {
            return None;
        }
        at = at.checked_add(8)?.checked_add(size)?;
    }
    Some(entries)
}

/// The same entries from libgit2 (the fallback).
pub(crate) fn from_git2(index: &git2::Index) -> Vec<Entry> {
    index
        .iter()
        .map(|e| {
            let ext = git2::IndexEntryExtendedFlag::from_bits_truncate(e.flags_extended);
            Entry {
                path: crate::fsutil::name::encode(&e.path).into_owned(),
                ctime: (e.ctime.seconds(), e.ctime.nanoseconds()),
                mtime: (e.mtime.seconds(), e.mtime.nanoseconds()),
                ino: e.ino,
                mode: e.mode,
                size: e.file_size,
                oid: e.id.as_bytes().try_into().unwrap_or([0; HASH]),
                stage: (e.flags >> 12) & 3,
                skip_worktree: ext.is_skip_worktree(),
                intent_to_add: ext.is_intent_to_add(),
                assume_valid: e.flags & 0x8000 != 0,
            }
        })
        .collect()
}

/// An index entry's mode is an executable file's (100755).
pub(crate) fn is_exec_mode(mode: u32) -> bool {
    mode & 0o170000 == 0o100000 && mode & 0o100 != 0
}

/// The stage-0 entry of `path` in sorted `entries`.
pub(crate) fn find<'a>(entries: &'a [Entry], path: &str) -> Option<&'a Entry> {
    let i = entries.partition_point(|e| e.path.as_bytes() < path.as_bytes());
    entries[i..].iter().take_while(|e| e.path == path).find(|e| e.stage == 0)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::process::Command;

    /// Runs git in `dir` with no user or system configuration (the unit tests of this module
    /// and of [`super::super::gitscan`]).
    pub(in crate::bashsnap) fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@e")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@e")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Every index version and flag, compared with libgit2's reading.
    #[test]
    fn matches_libgit2_in_every_version() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        let long = format!("deep/{}file.txt", format!("{}/", "x".repeat(200)).repeat(5));
        for p in ["a.txt", "b/c.txt", "b/d/e.txt", "b.txt", "sparse.txt", "ita.txt", long.as_str()] {
            let f = root.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, p).unwrap();
        }
        git(root, &["add", "a.txt", "b", "b.txt", "sparse.txt", "deep"]);
        git(root, &["commit", "-qm", "x"]);
        git(root, &["add", "-N", "ita.txt"]);
        git(root, &["update-index", "--skip-worktree", "sparse.txt"]);
        // A conflict: stages 1 to 3 of one path.
        let blob = git2::Repository::open(root).unwrap().blob(b"conflict\n").unwrap();
        let info = format!("100644 {blob} 1\tz.txt\n100644 {blob} 2\tz.txt\n100644 {blob} 3\tz.txt\n");
        let mut child = Command::new("git")
            .args(["update-index", "--index-info"])
            .current_dir(root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), info.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
        for v in ["2", "3", "4"] {
            git(root, &["update-index", "--index-version", v]);
            let ours = read(&root.join(".git/index")).unwrap_or_else(|| panic!("version {v} not read"));
            let repo = git2::Repository::open(root).unwrap();
            let theirs = from_git2(&repo.index().unwrap());
            assert_eq!(ours, theirs, "index version {v}");
            assert!(ours.iter().any(|e| e.skip_worktree && e.path == "sparse.txt"));
            assert!(ours.iter().any(|e| e.intent_to_add && e.path == "ita.txt"));
            assert_eq!(ours.iter().filter(|e| e.path == "z.txt").count(), 3);
            assert!(find(&ours, "z.txt").is_none(), "no stage 0 for a conflicted path");
            assert_eq!(find(&ours, "b/c.txt").map(|e| e.path.as_str()), Some("b/c.txt"));
            assert!(find(&ours, "b/c").is_none());
            assert!(ours.iter().any(|e| e.path == long));
        }
        // Split index: not read here.
        git(root, &["update-index", "--split-index"]);
        assert_eq!(read(&root.join(".git/index")), None);
        assert_eq!(parse(b"DIRC\0\0\0\x09\0\0\0\0"), None);
        assert_eq!(parse(b"garbage"), None);
    }

    /// A saved copy is read only whole: cut short, zeroed or flipped, it is refused (copies
    /// are not synced); the real index passes.
    #[test]
    fn a_damaged_copy_is_not_intact() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join("a.txt"), "a").unwrap();
        git(root, &["add", "a.txt"]);
        let index = root.join(".git/index");
        assert!(intact(&index, None, false));
        let whole = std::fs::read(&index).unwrap();
        let copy = root.join("copy.index");
        let n = whole.len();
        let mut zeroed = whole.clone();
        zeroed[12..n / 2].fill(0);
        let mut flipped = whole.clone();
        flipped[n / 2] ^= 1;
        let mut zero_tail = whole.clone();
        zero_tail[n - 40..].fill(0);
        for damaged in [whole[..n - 7].to_vec(), zeroed, flipped, zero_tail, vec![]] {
            std::fs::write(&copy, &damaged).unwrap();
            assert!(!intact(&copy, Some(n as u64), false), "{} bytes", damaged.len());
        }
        std::fs::write(&copy, &whole).unwrap();
        assert!(intact(&copy, Some(n as u64), false));
        // `index.skipHash`: a zero trailer passes in such a repository, at the original's length.
        let mut skip = whole.clone();
        skip[n - 20..].fill(0);
        std::fs::write(&copy, &skip).unwrap();
        assert!(skips_hash(&copy) && !skips_hash(&index));
        assert!(intact(&copy, Some(n as u64), true));
        assert!(!intact(&copy, Some(n as u64 + 1), true));
        assert!(!intact(&copy, Some(n as u64), false));
    }
}
