//! Content-addressed object store for pre- and post-images (DESIGN §2).
//!
//! Objects are kept in git's loose-object layout under `.walj/store/` (`ab/cdef…`,
//! zlib-compressed `blob <len>\0<bytes>`), so ids are git blob ids that compare directly
//! with the project's own objects, and `GIT_OBJECT_DIRECTORY=.walj/store git cat-file -p ID`
//! reads them. Every object is written to a temp file, fsynced and renamed into place
//! (and its folder fsynced) before any journal line names it. Existing ids are not
//! rewritten (deduplication).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;

use crate::fsutil;

/// The git blob id (SHA-1 of `blob <len>\0<bytes>`) of `bytes`, as 40 hex chars.
pub fn blob_id(bytes: &[u8]) -> String {
    let mut h = sha1_smol::Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    h.digest().to_string()
}

/// The git blob id of the file at `path`, hashed as it is read: memory does not grow with
/// the file (files over the capture cap are recorded by id only). A file that changes size
/// while it is read is read again. Only a regular file is read: anything else (a FIFO, a
/// device) is an error ([`fsutil::is_not_a_file`]), never a read that blocks or never ends.
pub fn file_blob_id(path: &Path) -> io::Result<String> {
    let mut buf = vec![0u8; 64 * 1024];
    for _ in 0..3 {
        let (mut f, meta) = fsutil::open_regular(path)?;
        let len = meta.len();
        let mut h = sha1_smol::Sha1::new();
        h.update(format!("blob {len}\0").as_bytes());
        let mut read = 0u64;
        loop {
            let n = match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            read += n as u64;
            if read > len {
                break;
            }
            h.update(&buf[..n]);
        }
        if read == len {
            return Ok(h.digest().to_string());
        }
    }
    // Still changing: hash one whole read.
    Ok(blob_id(&fsutil::read_regular(path)?))
}

/// True when `id` has the form of an object id (40 hex digits). Ids read from journal lines
/// or bundles are checked before they name a file.
pub fn is_id(id: &str) -> bool {
    id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// How old an object may get before a reuse refreshes its time. `walj compact` sweeps
/// objects no line names once they are older than its grace period (an hour,
/// `journal::rewrite::OBJECT_GRACE`): an object younger than this is safe for the rest of
/// that hour, ample time to append the line that names it.
pub const REFRESH_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("object {0} is not in the store")]
    Missing(String),
    #[error("object {id} is damaged: {why}")]
    Corrupt { id: String, why: String },
    #[error("store {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn object_path(&self, id: &str) -> PathBuf {
        match (id.get(..2), id.get(2..)) {
            (Some(a), Some(b)) => self.dir.join(a).join(b),
            _ => self.dir.join(id),
        }
    }

    pub fn contains(&self, id: &str) -> bool {
        is_id(id) && self.object_path(id).is_file()
    }

    /// True when object `id` is in the store; about to be named again (by a journal line, or
    /// by a Bash snapshot's sidecar before any line does), it has its time refreshed when
    /// older than [`REFRESH_AFTER`], so compaction's sweep spares it.
    pub fn reuse(&self, id: &str) -> bool {
        let path = self.object_path(id);
        let Ok(meta) = fs::metadata(&path) else { return false };
        if !meta.is_file() {
            return false;
        }
        let old = meta.modified().ok().and_then(|m| m.elapsed().ok()).is_none_or(|age| age > REFRESH_AFTER);
        if old && let Ok(f) = File::options().append(true).open(&path) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        true
    }

    /// Stores `bytes` durably and returns their id. Existing objects are not rewritten.
    pub fn put(&self, bytes: &[u8]) -> Result<String, StoreError> {
        let id = blob_id(bytes);
        self.put_with_id(&id, bytes)?;
        Ok(id)
    }

    /// Stores `bytes` known to have id `id`.
    pub fn put_with_id(&self, id: &str, bytes: &[u8]) -> Result<(), StoreError> {
        if self.reuse(id) {
            return Ok(());
        }
        let path = self.object_path(id);
        let io_err = |source: io::Error, path: &Path| StoreError::Io { path: path.to_path_buf(), source };
        let sub = path.parent().unwrap_or(&self.dir).to_path_buf();
        let new_sub = !sub.is_dir();
        if new_sub {
            fsutil::create_private_dir(&sub).map_err(|e| io_err(e, &sub))?;
        }
        let tmp = sub.join(format!(".tmp-{}-{}", std::process::id(), &id[id.len().saturating_sub(8)..]));
        let write = || -> io::Result<()> {
            write_object(&tmp, &path, bytes)?;
            fsutil::sync_dir(&sub)?;
            if new_sub {
                fsutil::sync_dir(&self.dir)?;
            }
            Ok(())
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp);
            io_err(e, &path)
        })
    }

    /// Stores many objects (`(id, bytes)`, ids already computed) faster than one `put` each:
    /// up to 8 threads write, fsync and rename objects at once (file creation and fsync are
    /// most of the cost, and concurrent fsyncs share the file system's journal commits),
    /// then each touched folder is fsynced once. Every object is durable when it returns.
    pub fn put_batch(&self, items: &[(String, Vec<u8>)]) -> Result<(), StoreError> {
        let mut seen = std::collections::HashSet::new();
        let mut todo: Vec<&(String, Vec<u8>)> = Vec::new();
        for item in items.iter().filter(|(id, _)| seen.insert(id.as_str())) {
            if !self.reuse(&item.0) {
                todo.push(item);
            }
        }
        if todo.is_empty() {
            return Ok(());
        }
        // Folders first (one thread), so writers never race to create one.
        let mut subs = std::collections::BTreeSet::new();
        let mut new_sub = false;
        for (id, _) in &todo {
            let sub = self.object_path(id).parent().unwrap_or(&self.dir).to_path_buf();
            if !subs.contains(&sub) && !sub.is_dir() {
                fsutil::create_private_dir(&sub).map_err(|source| StoreError::Io { path: sub.clone(), source })?;
                new_sub = true;
            }
            subs.insert(sub);
        }
        let write_one = |id: &str, bytes: &[u8]| -> Result<(), StoreError> {
            let path = self.object_path(id);
            let sub = path.parent().unwrap_or(&self.dir);
            // The whole id: writers run in parallel, names must not collide.
            let tmp = sub.join(format!(".tmp-{}-{id}", std::process::id()));
            write_object(&tmp, &path, bytes).map_err(|source| {
                let _ = fs::remove_file(&tmp);
                StoreError::Io { path: path.clone(), source }
            })
        };
        let run = |jobs: Vec<Box<dyn Fn() -> Result<(), StoreError> + Sync + '_>>| -> Result<(), StoreError> {
            let workers = jobs.len().clamp(1, 8);
            let chunk = jobs.len().div_ceil(workers);
            std::thread::scope(|s| {
                let handles: Vec<_> =
                    jobs.chunks(chunk).map(|part| s.spawn(move || part.iter().try_for_each(|j| j()))).collect();
                handles.into_iter().try_for_each(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(StoreError::Io {
                            path: self.dir.clone(),
                            source: io::Error::other("a store writer panicked"),
                        })
                    })
                })
            })
        };
        run(todo
            .iter()
            .map(|(id, bytes)| Box::new(move || write_one(id, bytes)) as Box<dyn Fn() -> _ + Sync>)
            .collect())?;
        // The renames are durable once their folders are.
        run(subs
            .iter()
            .map(|sub| {
                Box::new(move || fsutil::sync_dir(sub).map_err(|source| StoreError::Io { path: sub.clone(), source }))
                    as Box<dyn Fn() -> _ + Sync>
            })
            .collect())?;
        if new_sub {
            fsutil::sync_dir(&self.dir).map_err(|source| StoreError::Io { path: self.dir.clone(), source })?;
        }
        Ok(())
    }

    /// Reads an object's bytes, checking the header and the id.
    pub fn get(&self, id: &str) -> Result<Vec<u8>, StoreError> {
        if !is_id(id) {
            // Not an id at all (a damaged or hand-edited line): no object has that name.
            return Err(StoreError::Missing(id.to_string()));
        }
        let path = self.object_path(id);
        let f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(StoreError::Missing(id.to_string())),
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        let mut raw = Vec::new();
        ZlibDecoder::new(f)
            .read_to_end(&mut raw)
            .map_err(|e| StoreError::Corrupt { id: id.to_string(), why: e.to_string() })?;
        let nul = raw
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| StoreError::Corrupt { id: id.to_string(), why: "no header".into() })?;
        let body = raw.split_off(nul + 1);
        if blob_id(&body) != id {
            return Err(StoreError::Corrupt { id: id.to_string(), why: "content does not match its id".into() });
        }
        Ok(body)
    }

    /// Every object id in the store.
    pub fn ids(&self) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        let rd = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        for sub in rd.flatten() {
            let a = sub.file_name().to_string_lossy().into_owned();
            if a.len() != 2 || !sub.path().is_dir() {
                continue;
            }
            for obj in fs::read_dir(sub.path())?.flatten() {
                let b = obj.file_name().to_string_lossy().into_owned();
                if b.len() == 38 && !b.starts_with('.') {
                    out.push(format!("{a}{b}"));
                }
            }
        }
        Ok(out)
    }

    /// Removes the temp files writers killed mid-write left (`.tmp-*` in the object folders)
    /// once older than `grace` (a live writer renames its temp file within milliseconds):
    /// (files, bytes) removed, or that would be on a dry run.
    pub fn sweep_temps(&self, grace: std::time::Duration, dry_run: bool) -> io::Result<(u64, u64)> {
        let (mut n, mut bytes) = (0, 0);
        let rd = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((0, 0)),
            Err(e) => return Err(e),
        };
        let now = std::time::SystemTime::now();
        for sub in rd.flatten().filter(|s| s.path().is_dir()) {
            for f in fs::read_dir(sub.path())?.flatten() {
                if !f.file_name().to_string_lossy().starts_with(".tmp-") {
                    continue;
                }
                let Ok(meta) = f.metadata() else { continue };
                let age = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).unwrap_or_default();
                if !meta.is_file() || age < grace {
                    continue;
                }
                n += 1;
                bytes += meta.len();
                if !dry_run {
                    fs::remove_file(f.path())?;
                }
            }
        }
        Ok((n, bytes))
    }

    /// Removes an object (compaction only).
    pub fn remove(&self, id: &str) -> io::Result<()> {
        fs::remove_file(self.object_path(id))
    }
}

/// Writes `bytes` as a loose object to `tmp` (created new: a stale or planted file there is
/// replaced, never followed), fsyncs it and renames it to `path`. The caller syncs the folder.
fn write_object(tmp: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let open = || fsutil::open_private(tmp, OpenOptions::new().write(true).create_new(true));
    let f = match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            // Left by a writer that crashed with the same pid: nothing names a temp file.
            fs::remove_file(tmp)?;
            open()?
        }
        other => other?,
    };
    // Level 1: the hook's budget is a couple of milliseconds.
    let mut enc = ZlibEncoder::new(f, Compression::fast());
    enc.write_all(format!("blob {}\0", bytes.len()).as_bytes())?;
    enc.write_all(bytes)?;
    let f = enc.finish()?;
    f.sync_all()?;
    drop(f);
    fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_id_matches_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(blob_id(b"hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }

    #[test]
    fn file_ids_are_hashed_as_the_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        for size in [0usize, 1, 64 * 1024, 200_001] {
            let bytes: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
            fs::write(&p, &bytes).unwrap();
            assert_eq!(file_blob_id(&p).unwrap(), blob_id(&bytes), "{size} bytes");
        }
        let err = file_blob_id(&dir.path().join("missing")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn put_get_dedup_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path().join("store"));
        let id = s.put(b"hello\n").unwrap();
        assert_eq!(s.get(&id).unwrap(), b"hello\n");
        assert_eq!(s.put(b"hello\n").unwrap(), id);
        assert_eq!(s.ids().unwrap(), vec![id.clone()]);
        assert!(matches!(s.get("00000000000000000000000000000000000000aa"), Err(StoreError::Missing(_))));
        let batch: Vec<(String, Vec<u8>)> = (0..20u8)
            .map(|i| vec![i; 10 + i as usize])
            .map(|b| (blob_id(&b), b))
            .chain([(id.clone(), b"hello\n".to_vec())])
            .collect();
        s.put_batch(&batch).unwrap();
        for (bid, bytes) in &batch {
            assert_eq!(&s.get(bid).unwrap(), bytes);
        }
        assert_eq!(s.ids().unwrap().len(), 21);
        assert!(
            fs::read_dir(s.object_path(&id).parent().unwrap()).unwrap().all(|e| !e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".tmp"))
        );
        fs::write(s.object_path(&id), b"garbage").unwrap();
        assert!(matches!(s.get(&id), Err(StoreError::Corrupt { .. })));
    }
}
