//! Pending images: objects a hook named in the journal before they were in the store, and the
//! pass that copies them in.
//!
//! A codemod's PostToolUse would otherwise create thousands of store files inside the hook (a
//! new file is the dearest thing a hook does). From [`DEFER_FROM`] objects, a Bash Post writes
//! instead **one spill**, `.walj/store/pending/<name>.spill`, made durable (data and folder
//! synced) *before* the journal lines that name its objects are appended:
//!
//! - an image walj read from the disk (a post-image, a dirty file's bytes) is in the spill
//!   itself, whole;
//! - a clean tracked file's image is named by its git blob id only (`g <id>`): git's object
//!   database holds its bytes, and the spill promises to copy them.
//!
//! The hook then starts `walj settle` detached ([`Store::settle_pending`]): it copies every
//! spill's objects into the store (one batch, [`Store::put_batch`]) and only then removes the
//! spill. Killed at any moment (kill -9), it leaves the spill, or temp files the store sweeps;
//! the next Bash hook, Stop, SessionStart, or a `revert`/`diff` that needs an object settles
//! what is left before it reads. Meanwhile readers say the images are pending
//! ([`Store::pending_summary`]).
//!
//! **The `git gc` window.** A `g` id is deferred only when it is an entry of the *current* git
//! index (the command did not change the index; else the hook copies it at once): an object
//! the index names is reachable, and `git gc --prune=now` keeps it. It can become unreachable
//! only once the index changes again. If that happens through Claude (a command), that
//! command's PreToolUse settles first, so the copy lands before the command runs. Left open:
//! the user, outside Claude, changes the index so that the blob is named nowhere else (a
//! staged-only version reset away) *and* runs `git gc --prune=now` within the settle pass's
//! own run (it starts at once and takes about as long as the hook). A blob git no longer has
//! then is **unavailable**: the pass lists it in `pending/unavailable`, and a revert says
//! "unavailable" for it, never guesses.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Store, StoreError, blob_id, is_id};
use crate::fsutil;

/// From this many objects, a Bash Post spills them instead of storing each one.
pub(crate) const DEFER_FROM: usize = 64;

/// The spill folder's name inside the store.
const DIR: &str = "pending";
const MAGIC: &[u8] = b"walj-spill 1\n";
/// The file that lists (one id a line) the git ids a pass found gone.
const UNAVAILABLE: &str = "unavailable";
const LOCK: &str = ".lock";

/// What [`Store::settle_pending`] did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Settled {
    /// Spills copied and removed.
    pub spills: usize,
    /// Objects copied into the store (already there ones not counted).
    pub objects: usize,
    /// Git ids git no longer has (also listed in `pending/unavailable`).
    pub unavailable: Vec<String>,
    pub elapsed: Duration,
}

/// The spills waiting for their pass.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PendingSummary {
    pub spills: usize,
    /// Objects they name (bytes and git ids).
    pub objects: usize,
}

struct Parsed {
    bytes: Vec<(String, Vec<u8>)>,
    git: Vec<String>,
}

impl Store {
    pub(crate) fn pending_dir(&self) -> PathBuf {
        self.dir.join(DIR)
    }

    /// Writes one spill of `items` (id, bytes) and `git` ids, durably (the file's data and its
    /// folder synced): once it returns, a journal line may name these objects.
    pub(crate) fn spill(&self, items: &[(String, Vec<u8>)], git: &[String]) -> Result<PathBuf, StoreError> {
        let dir = self.pending_dir();
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        if !dir.is_dir() {
            fsutil::create_private_dir(&self.dir).map_err(io_err(&self.dir))?;
            fsutil::create_private_dir(&dir).map_err(io_err(&dir))?;
            fsutil::sync_dir(&self.dir).map_err(io_err(&self.dir))?;
        }
        let mut buf = Vec::with_capacity(items.iter().map(|(_, b)| b.len() + 64).sum::<usize>() + git.len() * 44 + 32);
        buf.extend_from_slice(MAGIC);
        for id in git {
            buf.extend_from_slice(format!("g {id}\n").as_bytes());
        }
        for (id, bytes) in items {
            buf.extend_from_slice(format!("b {id} {}\n", bytes.len()).as_bytes());
            buf.extend_from_slice(bytes);
        }
        buf.extend_from_slice(format!("end {}\n", items.len() + git.len()).as_bytes());
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = dir.join(format!("{nanos:024}-{}.spill", std::process::id()));
        let mut f =
            fsutil::open_private(&path, OpenOptions::new().write(true).create_new(true)).map_err(io_err(&path))?;
        let written = f.write_all(&buf).and_then(|()| f.sync_data());
        drop(f);
        if let Err(e) = written.and_then(|()| fsutil::sync_dir(&dir)) {
            let _ = fs::remove_file(&path);
            return Err(StoreError::Io { path, source: e });
        }
        Ok(path)
    }

    /// The spills waiting, oldest first.
    fn spills(&self) -> Vec<PathBuf> {
        let Ok(rd) = fs::read_dir(self.pending_dir()) else { return Vec::new() };
        let mut out: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "spill") && p.is_file())
            .collect();
        out.sort();
        out
    }

    /// True when a spill waits (one `read_dir` of a folder that is usually absent).
    pub(crate) fn has_pending(&self) -> bool {
        !self.spills().is_empty()
    }

    /// How many spills and objects wait for their pass (readers say so).
    pub fn pending_summary(&self) -> PendingSummary {
        let mut s = PendingSummary::default();
        for p in self.spills() {
            s.spills += 1;
            s.objects += fs::read(&p).ok().and_then(|b| parse(&b)).map_or(0, |p| p.bytes.len() + p.git.len());
        }
        s
    }

    /// Whether a settle pass found git's object `id` gone before it could copy it.
    pub fn pending_unavailable(&self, id: &str) -> bool {
        fs::read_to_string(self.pending_dir().join(UNAVAILABLE)).is_ok_and(|t| t.lines().any(|l| l == id))
    }

    /// Copies every spill's objects into the store and removes the spill, under the pending
    /// lock (one pass at a time; a caller waits at most `wait` for another). `git_root`: the
    /// checkout whose object database holds the `g` ids. A damaged or cut-short spill (a hook
    /// killed while writing it, before any journal line named its objects) gives what it
    /// holds whole and is removed.
    pub fn settle_pending(&self, git_root: Option<&Path>, wait: Duration) -> Result<Settled, StoreError> {
        let started = Instant::now();
        let mut out = Settled::default();
        let spills = self.spills();
        if spills.is_empty() {
            return Ok(out);
        }
        let dir = self.pending_dir();
        let lock_path = dir.join(LOCK);
        let _lock = fsutil::lock_until(&lock_path, wait)
            .map_err(|source| StoreError::Io { path: lock_path.clone(), source })?;
        // Another pass may have settled them while this one waited.
        let spills: Vec<PathBuf> = spills.into_iter().filter(|p| p.is_file()).collect();
        if spills.is_empty() {
            return Ok(out);
        }
        pause_for_tests(self, "locked");
        let repo = git_root.and_then(|r| git2::Repository::discover(r).ok());
        let mut items: Vec<(String, Vec<u8>)> = Vec::new();
        for p in &spills {
            let bytes = fs::read(p).map_err(|source| StoreError::Io { path: p.clone(), source })?;
            let Some(parsed) = parse(&bytes) else { continue };
            for (id, b) in parsed.bytes {
                if !self.contains(&id) {
                    items.push((id, b));
                }
            }
            for id in parsed.git {
                if self.contains(&id) {
                    continue;
                }
                let blob =
                    repo.as_ref().and_then(|r| git2::Oid::from_str(&id).ok().and_then(|oid| r.find_blob(oid).ok()));
                match blob {
                    Some(b) => items.push((id, b.content().to_vec())),
                    None => out.unavailable.push(id),
                }
            }
        }
        items.sort_by(|a, b| a.0.cmp(&b.0));
        items.dedup_by(|a, b| a.0 == b.0);
        out.objects = items.len();
        self.put_batch(&items)?;
        if !out.unavailable.is_empty() {
            let path = dir.join(UNAVAILABLE);
            let mut text = String::new();
            for id in &out.unavailable {
                text.push_str(id);
                text.push('\n');
            }
            fsutil::open_private(&path, OpenOptions::new().append(true).create(true))
                .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_data()))
                .map_err(|source| StoreError::Io { path: path.clone(), source })?;
        }
        pause_for_tests(self, "stored");
        // The objects are durable: the spills may go.
        for p in &spills {
            match fs::remove_file(p) {
                Ok(()) => out.spills += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(StoreError::Io { path: p.clone(), source }),
            }
        }
        fsutil::sync_dir(&dir).map_err(|source| StoreError::Io { path: dir.clone(), source })?;
        out.elapsed = started.elapsed();
        Ok(out)
    }
}

/// Tests only: with `WALJ_SETTLE_PAUSE=<stage>` (`start`, `locked`, `stored`), a settle pass
/// writes its pid to `pending/paused-<stage>` and sleeps a minute there, so a test can kill it
/// at that moment.
pub fn pause_for_tests(store: &Store, stage: &str) {
    if std::env::var_os("WALJ_SETTLE_PAUSE").is_some_and(|v| v == stage) {
        let _ = fs::write(store.pending_dir().join(format!("paused-{stage}")), std::process::id().to_string());
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// The objects of a spill; `None` when it is not one. A spill cut short gives its whole
/// records (each checked against its id); a damaged record ends the reading.
fn parse(bytes: &[u8]) -> Option<Parsed> {
    let mut rest = bytes.strip_prefix(MAGIC)?;
    let mut out = Parsed { bytes: Vec::new(), git: Vec::new() };
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        let head = std::str::from_utf8(&rest[..nl]).ok()?;
        rest = &rest[nl + 1..];
        let mut parts = head.split(' ');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("g"), Some(id), None) if is_id(id) => out.git.push(id.to_string()),
            (Some("b"), Some(id), Some(len)) if is_id(id) => {
                let len: usize = len.parse().ok()?;
                if rest.len() < len {
                    break;
                }
                let (body, tail) = rest.split_at(len);
                if blob_id(body) != id {
                    break;
                }
                out.bytes.push((id.to_string(), body.to_vec()));
                rest = tail;
            }
            _ => break,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spill_settles_its_bytes_and_a_cut_one_gives_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path().join("store"));
        let a = b"alpha\n".to_vec();
        let b = b"beta\n".to_vec();
        let items = vec![(blob_id(&a), a.clone()), (blob_id(&b), b.clone())];
        let p = s.spill(&items, &[]).unwrap();
        assert_eq!(s.pending_summary(), PendingSummary { spills: 1, objects: 2 });
        assert!(!s.contains(&blob_id(&a)));
        // A copy cut in the middle of its second record.
        let whole = fs::read(&p).unwrap();
        let cut = s.pending_dir().join("000-cut.spill");
        fs::write(&cut, &whole[..whole.len() - 9]).unwrap();
        let done = s.settle_pending(None, Duration::from_secs(5)).unwrap();
        assert_eq!(done.spills, 2);
        assert_eq!(s.get(&blob_id(&a)).unwrap(), a);
        assert_eq!(s.get(&blob_id(&b)).unwrap(), b);
        assert!(!s.has_pending());
        assert_eq!(s.pending_summary(), PendingSummary::default());
    }

    #[test]
    fn a_git_id_git_lacks_is_listed_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(dir.path().join("w")).unwrap();
        let kept = repo.blob(b"kept\n").unwrap().to_string();
        let gone = blob_id(b"never written\n");
        let s = Store::new(dir.path().join("store"));
        s.spill(&[], &[kept.clone(), gone.clone()]).unwrap();
        let done = s.settle_pending(Some(&dir.path().join("w")), Duration::from_secs(5)).unwrap();
        assert_eq!(done.unavailable, vec![gone.clone()]);
        assert_eq!(s.get(&kept).unwrap(), b"kept\n");
        assert!(s.pending_unavailable(&gone));
        assert!(!s.pending_unavailable(&kept));
    }
}
