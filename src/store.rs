//! Content-addressed object store for pre- and post-images (DESIGN §2).
//!
//! Objects are kept in git's loose-object layout under `.walj/store/` (`ab/cdef…`,
//! zlib-compressed `blob <len>\0<bytes>`), so ids are git blob ids that compare directly
//! with the project's own objects, and `GIT_OBJECT_DIRECTORY=.walj/store git cat-file -p ID`
//! reads them (a small image once a walj reader or `walj compact` has written it out of its
//! journal line, below). A stored object is written to a temp file, fsynced and renamed into
//! place (and its folder fsynced) before any journal line names it. Existing ids are not
//! rewritten (deduplication) unless a cheap check finds them damaged ([`Store::intact`]).
//!
//! The hook's path ([`Store::put_carried`]) syncs one file, its journal, and creates none: an
//! image of up to [`CARRY_MAX`] compressed bytes is **carried**, base64, in the journal line
//! that names it (`images`), so the line's sync makes it durable, and no loose object is
//! written (a new file is the dearest thing a hook could do: an inode, often a folder). A line
//! names by id only an image one of the journal's last lines already carries (the Pre of the
//! same call, the last edit of the same file). [`Store::get`] takes a carried image from its
//! line, searching the journal from its end, and writes it to the store (synced) for the next
//! reader; `walj compact` writes every carried image to the store before it takes it out of
//! its line. A larger image is written as a loose object with its own syncs run on a thread
//! while the line is appended and synced, and the hook returns only once all are done. Either
//! way the contract holds: once the hook returned, the image and its line are durable. A
//! machine crash before then may leave a line whose object is missing or cut short; the tool
//! had not run, so readers use the disk and say so (`triage::diff`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;

use crate::fsutil;

pub mod pending;
pub(crate) use pending::DEFER_FROM;
pub use pending::{PendingSummary, Settled};

/// The git blob id (SHA-1 of `blob <len>\0<bytes>`) of `bytes`, as 40 hex chars.
pub fn blob_id(bytes: &[u8]) -> String {
    let mut h = crate::sha::Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    h.hex()
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
        let mut h = crate::sha::Sha1::new();
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
            return Ok(h.hex());
        }
    }
    // Still changing: hash one whole read.
    Ok(blob_id(&fsutil::read_regular(path)?))
}

/// True when `id` has the form of an object id (40 hex digits). Ids read from journal lines
/// or bundles are checked before they name a file.
pub(crate) fn is_id(id: &str) -> bool {
    id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// How old an object may get before a reuse refreshes its time. `walj compact` sweeps
/// objects no line names once they are older than its grace period (an hour,
/// `compact::OBJECT_GRACE`): an object younger than this is safe for the rest of
/// that hour, ample time to append the line that names it.
pub(crate) const REFRESH_AFTER: std::time::Duration = std::time::Duration::from_secs(600);

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

    pub(crate) fn dir(&self) -> &Path {
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
    pub(crate) fn reuse(&self, id: &str) -> bool {
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

    /// Stores `bytes` durably and returns their id. Existing objects are not rewritten
    /// (unless damaged, see [`Store::put_with_id`]).
    pub fn put(&self, bytes: &[u8]) -> Result<String, StoreError> {
        let id = blob_id(bytes);
        self.put_with_id(&id, bytes)?;
        Ok(id)
    }

    /// Stores `bytes` known to have id `id`, durably. An object already under that id is
    /// kept when intact ([`Store::intact`]); one left damaged by a crash is replaced.
    pub fn put_with_id(&self, id: &str, bytes: &[u8]) -> Result<(), StoreError> {
        match self.put_unsynced(id, bytes)? {
            Some(pending) => pending.finish(),
            None => Ok(()),
        }
    }

    /// Stores `bytes` for the hook, which syncs exactly one file, its journal, and creates
    /// no file for an image small enough to be **carried**: an object whose compressed form
    /// is at most [`CARRY_MAX`] bytes is handed back to be carried in the journal line that
    /// names it ([`Durable::Carried`], the line's `images` field), whose sync makes it
    /// durable; readers take it from there ([`Store::get`]). One that a line among the
    /// journal's last [`CARRIED_LATELY`] bytes carries whole already is named by id only
    /// ([`Durable::Journaled`]): that line is before the hook's own in the same file, so the
    /// hook's sync covers it. A larger object ([`Durable::Pending`]) is written under its
    /// final name and has its syncs started on a thread: the caller appends the line that
    /// names it meanwhile and waits for both before it acknowledges anything (one sync's wait,
    /// not three in a row). An intact object already in the store is kept
    /// ([`Durable::Already`]).
    ///
    /// A process killed at any point never leaves a line naming an absent object: a larger
    /// object is complete under its final name before this returns. Only a machine crash can
    /// lose one, and then the hook had not returned: readers treat such an object as lost and
    /// say so (the disk still held the image: the tool had not run).
    ///
    /// `may_carry` is asked (only for an image small enough) whether it may be carried: the
    /// hook says no for images with secret-looking text, which a journal line must not hold
    /// (lines travel in sync segments and bundles).
    pub(crate) fn put_carried(
        &self,
        bytes: &[u8],
        may_carry: impl FnOnce(&[u8]) -> bool,
    ) -> Result<(String, Durable), StoreError> {
        let id = blob_id(bytes);
        if self.intact(&id, bytes) {
            self.reuse(&id);
            return Ok((id, Durable::Already));
        }
        // Only a carried image (small, no secret-looking text) can be in a line already.
        if let Some(file) = self.carried_lately(&id) {
            let j = Journaled { store: self.clone(), file, bytes: bytes.to_vec() };
            return Ok((id, Durable::Journaled(j)));
        }
        let loose = encode(bytes).map_err(|source| StoreError::Io { path: self.object_path(&id), source })?;
        if loose.len() > CARRY_MAX || !may_carry(bytes) {
            let pending = self.write_unsynced(&id, &loose)?;
            return Ok((id, Durable::Pending(Pending::start(pending))));
        }
        Ok((id, Durable::Carried(carry_encode(&loose))))
    }

    /// A search of the journal's last [`RECENTLY`] bytes for the images its lines carry, read
    /// backwards a little at a time and only as far as asked ([`Store::keep_recent`]).
    pub(crate) fn recently_carried(&self) -> RecentlyCarried {
        RecentlyCarried { index: CarriedIndex { step: 64 << 10, back: RECENTLY, ..Default::default() } }
    }

    /// Writes object `id` under its final name, without a sync, when a line among the
    /// journal's last [`RECENTLY`] bytes (`recent`) carries it: that line is the durable copy (readers fall back to it, and `walj compact`
    /// syncs the loose copy before the line goes). True when the store has it now. For a Bash
    /// snapshot, which names images by id in files of its own, not in journal lines: what a
    /// file hook carried is then found in the store as before.
    pub(crate) fn keep_recent(&self, recent: &mut RecentlyCarried, id: &str) -> bool {
        let Some(journal) = self.journal() else { return false };
        let Ok(Some(body)) = recent.index.find(&journal, id) else { return false };
        encode(&body).is_ok_and(|loose| self.write_unsynced(id, &loose).is_ok())
    }

    /// The journal beside the store (`../journal.jsonl`), whose lines carry images.
    fn journal(&self) -> Option<PathBuf> {
        Some(self.dir.parent()?.join("journal.jsonl"))
    }

    /// The journal's identity when a whole line among its last [`CARRIED_LATELY`] bytes
    /// carries object `id` (its checksum holds, and the value is the object).
    fn carried_lately(&self, id: &str) -> Option<(u64, u64)> {
        let journal = self.journal()?;
        let f = File::open(&journal).ok()?;
        let meta = f.metadata().ok()?;
        let start = meta.len().saturating_sub(CARRIED_LATELY);
        let buf = read_range(&f, start, meta.len()).ok()?;
        // The window's first line is cut short unless the window is the whole file.
        let whole_from = if start == 0 { 0 } else { memchr::memchr(b'\n', &buf).map_or(buf.len(), |i| i + 1) };
        carried_in(&buf[whole_from..], id, true)?;
        Some(crate::journal::identity(&meta))
    }

    /// Writes object `id` under its final name, unsynced, unless an intact copy is there:
    /// what is left to make it durable (`None`: nothing).
    fn put_unsynced(&self, id: &str, bytes: &[u8]) -> Result<Option<Unsynced>, StoreError> {
        let path = self.object_path(id);
        if self.intact(id, bytes) {
            self.reuse(id);
            return Ok(None);
        }
        let loose = encode(bytes).map_err(|source| StoreError::Io { path: path.clone(), source })?;
        self.write_unsynced(id, &loose).map(Some)
    }

    /// Writes the loose-object bytes `loose` as object `id` (temp file, rename), unsynced.
    fn write_unsynced(&self, id: &str, loose: &[u8]) -> Result<Unsynced, StoreError> {
        let path = self.object_path(id);
        let io_err = |source: io::Error, path: &Path| StoreError::Io { path: path.to_path_buf(), source };
        let sub = path.parent().unwrap_or(&self.dir).to_path_buf();
        let new_sub = !sub.is_dir();
        if new_sub {
            fsutil::create_private_dir(&sub).map_err(|e| io_err(e, &sub))?;
        }
        let tmp = sub.join(format!(".tmp-{}-{}", std::process::id(), &id[id.len().saturating_sub(8)..]));
        let file = write_object(&tmp, &path, loose, false).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            io_err(e, &path)
        })?;
        Ok(Unsynced { file, path, sub, store: new_sub.then(|| self.dir.clone()) })
    }

    /// True when object `id` is in the store whole, as far as a cheap check can tell without
    /// decompressing it: a zlib header, and the stream's trailing Adler-32 equal to the one of
    /// `blob <len>\0` + `bytes` (the bytes the caller is about to store under that id). An
    /// object a machine crash left empty or cut short (its syncs had not finished) fails it,
    /// and is written again rather than trusted by deduplication.
    pub fn intact(&self, id: &str, bytes: &[u8]) -> bool {
        if !is_id(id) {
            return false;
        }
        let Ok((f, meta)) = fsutil::open_regular(&self.object_path(id)) else { return false };
        let len = meta.len();
        let (mut head, mut tail) = ([0u8; 2], [0u8; 4]);
        if len < 6
            || !matches!(fsutil::read_at(&f, &mut head, 0), Ok(2))
            || !matches!(fsutil::read_at(&f, &mut tail, len - 4), Ok(4))
        {
            return false;
        }
        let zlib_header = head[0] & 0x0f == 8 && (u16::from(head[0]) << 8 | u16::from(head[1])) % 31 == 0;
        let mut sum = Adler32::default();
        sum.update(format!("blob {}\0", bytes.len()).as_bytes());
        sum.update(bytes);
        zlib_header && u32::from_be_bytes(tail) == sum.finish()
    }

    /// Stores many objects (`(id, bytes)`, ids already computed) faster than one `put` each.
    /// Every object is durable when it returns, and an object is never under its final name
    /// before its bytes are durable (a later snapshot's [`Store::reuse`] trusts the name).
    ///
    /// On Linux, from [`SYNCFS_FROM`] objects: up to 8 threads write the objects to temp files without a sync, one `syncfs`
    /// of the store's file system makes all their bytes durable, the temp files are renamed
    /// into place, and a second `syncfs` makes the renames durable. Two syncs in all, not one
    /// per object: a codemod's Post stores thousands. Elsewhere the threads
    /// write, fsync and rename each object (concurrent fsyncs share the file system's journal
    /// commits), then each touched folder is fsynced once.
    pub(crate) fn put_batch(&self, items: &[(String, Vec<u8>)]) -> Result<(), StoreError> {
        let mut seen = std::collections::HashSet::new();
        let mut todo: Vec<&(String, Vec<u8>)> = Vec::new();
        for item in items.iter().filter(|(id, _)| seen.insert(id.as_str())) {
            if self.intact(&item.0, &item.1) {
                self.reuse(&item.0);
            } else {
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
        // `syncfs` waits for every dirty page of the file system, the user's own too (a build
        // writing beside the session): worth it for a codemod's thousands of objects, not for
        // a command's few, which keep one fsync each.
        let syncfs = BATCH_SYNCFS && todo.len() >= SYNCFS_FROM;
        // The whole id: writers run in parallel, names must not collide.
        let tmp_of = |path: &Path, id: &str| {
            path.parent().unwrap_or(&self.dir).join(format!(".tmp-{}-{id}", std::process::id()))
        };
        let write_one = |id: &str, bytes: &[u8]| -> Result<(), StoreError> {
            let path = self.object_path(id);
            let tmp = tmp_of(&path, id);
            let done = if syncfs {
                encode(bytes).and_then(|loose| write_temp(&tmp, &loose))
            } else {
                encode(bytes).and_then(|loose| write_object(&tmp, &path, &loose, true)).map(drop)
            };
            done.map_err(|source| {
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
        // Opened before the writes: `syncfs` reports a write-back error of the file system
        // since this handle was opened (Linux 5.8+), so one that hits the objects is seen.
        let fs_handle = if syncfs {
            Some(File::open(&self.dir).map_err(|source| StoreError::Io { path: self.dir.clone(), source })?)
        } else {
            None
        };
        let written = run(todo
            .iter()
            .map(|(id, bytes)| Box::new(move || write_one(id, bytes)) as Box<dyn Fn() -> _ + Sync>)
            .collect());
        if let Some(fs_handle) = &fs_handle {
            // Bytes durable first, then the names: a crash between leaves temp files only
            // (swept by `walj compact`), never a damaged object under its final name.
            let placed = written.and_then(|()| self.syncfs(fs_handle)).and_then(|()| {
                todo.iter().try_for_each(|(id, _)| {
                    let path = self.object_path(id);
                    fs::rename(tmp_of(&path, id), &path).map_err(|source| StoreError::Io { path, source })
                })
            });
            if let Err(e) = placed {
                for (id, _) in &todo {
                    let _ = fs::remove_file(tmp_of(&self.object_path(id), id));
                }
                return Err(e);
            }
            return self.syncfs(fs_handle);
        }
        written?;
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

    /// Reads an object's bytes, checking the header and the id. A loose object that is
    /// missing or damaged is taken from the journal line that carries it, if any
    /// ([`Store::put_carried`]), and written back (synced) for the next reader.
    /// An object a Bash Post spilled and no settle pass copied yet ([`pending`]) is copied
    /// first (the whole pending work, as the pass would), then read.
    pub fn get(&self, id: &str) -> Result<Vec<u8>, StoreError> {
        let loose = match self.get_loose(id) {
            Err(StoreError::Missing(_)) if is_id(id) && self.has_pending() => {
                // The store is `<root>/.walj/store`: git's objects are the checkout's.
                let root = self.dir.parent().and_then(Path::parent);
                self.settle_pending(root, std::time::Duration::from_secs(30))?;
                self.get_loose(id)
            }
            other => other,
        };
        match loose {
            Err(e) if is_id(id) => match self.carried_in_journal(id) {
                Some(body) => {
                    // Written over whatever is there: it failed to read, whatever the cheap
                    // intactness check says.
                    let _ = self.replace(id, &body);
                    Ok(body)
                }
                None => Err(e),
            },
            other => other,
        }
    }

    /// Object `id` as a line of the journal beside the store (`../journal.jsonl`), or of one
    /// of its side files, carries it in its `images` field: every image the hook carried,
    /// until a reader or `walj compact` wrote it to the store. The journal is searched from
    /// its end (what a recovery asks for is recent), and what one search read is kept for
    /// the next ([`CarriedIndex`]): a process reads a journal at most once for its images.
    fn carried_in_journal(&self, id: &str) -> Option<Vec<u8>> {
        let journal = self.journal()?;
        let side = crate::journal::side::files(crate::journal::JournalWriter::new(&journal).side_dir());
        let skip = not_carried_now(&journal, id);
        let files = [vec![journal], side].concat();
        let mut all = CARRIED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let all = all.get_or_insert_with(Default::default);
        files.iter().skip(usize::from(skip)).find_map(|path| {
            let index = all.entry(path.clone()).or_default();
            index.find(path, id).ok().flatten()
        })
    }

    /// The loose object's bytes, checking the header and the id.
    fn get_loose(&self, id: &str) -> Result<Vec<u8>, StoreError> {
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
        let mut loose = Vec::new();
        let mut f = f;
        f.read_to_end(&mut loose).map_err(|source| StoreError::Io { path: path.clone(), source })?;
        let body = decode(&loose).map_err(|why| StoreError::Corrupt { id: id.to_string(), why })?;
        if blob_id(&body) != id {
            return Err(StoreError::Corrupt { id: id.to_string(), why: "content does not match its id".into() });
        }
        Ok(body)
    }

    /// Makes the objects a line carries (`(id, base64)`, its `images`) durable in the store,
    /// before `walj compact` takes them out of the line: an object missing or damaged is
    /// written from the line (synced); an intact one, which the hook wrote without a sync,
    /// is returned to be synced ([`Store::sync_objects`]). A carried value that does not
    /// decode to its id is left alone (the loose object, if any, is all there is).
    pub(crate) fn keep_carried(&self, id: &str, b64: &str) -> Result<Option<PathBuf>, StoreError> {
        let Some(body) = carried_object(id, b64) else { return Ok(None) };
        self.keep_body(id, &body)
    }

    /// [`Store::keep_carried`] for object `id` as the line of `journal` at `at` carries it
    /// (a line about to be dropped, whose image a kept line names by id only). `Ok(None)`
    /// also when that line does not carry it whole.
    pub(crate) fn keep_carried_at(&self, journal: &File, at: u64, id: &str) -> Result<Option<PathBuf>, StoreError> {
        match line_carrying(journal, at, id) {
            Some(body) => self.keep_body(id, &body),
            None => Ok(None),
        }
    }

    fn keep_body(&self, id: &str, body: &[u8]) -> Result<Option<PathBuf>, StoreError> {
        // Read whole, not the cheap check: a crash can zero pages inside a file and keep its
        // size, and the line's copy is about to go.
        if self.get_loose(id).is_ok_and(|loose| loose == body) {
            return Ok(Some(self.object_path(id)));
        }
        self.replace(id, body)?;
        Ok(None)
    }

    /// Writes object `id` durably over whatever is under its name (a damaged copy).
    fn replace(&self, id: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let loose = encode(bytes).map_err(|source| StoreError::Io { path: self.object_path(id), source })?;
        self.write_unsynced(id, &loose)?.finish()
    }

    /// One `syncfs` of the store's file system through `dir`, a handle on the store's folder
    /// (Linux only; [`BATCH_SYNCFS`]).
    fn syncfs(&self, dir: &File) -> Result<(), StoreError> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            rustix::fs::syncfs(dir).map_err(|e| StoreError::Io { path: self.dir.clone(), source: e.into() })
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let _ = dir;
            Ok(())
        }
    }

    /// Syncs objects written without a sync, and their folders (the store's too, for new
    /// folders). On Linux one `syncfs` of the store's file system does it all.
    pub(crate) fn sync_objects(&self, paths: &[PathBuf]) -> Result<(), StoreError> {
        if paths.is_empty() {
            return Ok(());
        }
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source: io::Error| StoreError::Io { path, source }
        };
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let dir = File::open(&self.dir).map_err(io_err(&self.dir))?;
            rustix::fs::syncfs(&dir).map_err(|e| io_err(&self.dir)(e.into()))
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let mut subs = std::collections::BTreeSet::new();
            for p in paths {
                File::open(p).and_then(|f| f.sync_all()).map_err(io_err(p))?;
                subs.insert(p.parent().unwrap_or(&self.dir).to_path_buf());
            }
            for sub in subs.iter().chain(std::iter::once(&self.dir)) {
                fsutil::sync_dir(sub).map_err(io_err(sub))?;
            }
            Ok(())
        }
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
    pub(crate) fn sweep_temps(&self, grace: std::time::Duration, dry_run: bool) -> io::Result<(u64, u64)> {
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
    pub(crate) fn remove(&self, id: &str) -> io::Result<()> {
        fs::remove_file(self.object_path(id))
    }
}

/// Inputs up to this size are compressed with miniz_oxide, larger ones with zlib-rs.
const SMALL_ENCODE: usize = 64 * 1024;

/// The loose-object form of `bytes`: zlib of `blob <len>\0` + `bytes` (git's encoding).
fn encode(bytes: &[u8]) -> io::Result<Vec<u8>> {
    let header = format!("blob {}\0", bytes.len());
    if bytes.len() <= SMALL_ENCODE {
        // What a hook stores is mostly small: zlib-rs zeroes about 256 KiB of tables before it
        // starts (some 64 page faults, a tenth of a hook's process), miniz_oxide's tables are
        // fresh zeroed pages touched only where used. Both write zlib: every reader decodes it.
        let mut whole = Vec::with_capacity(header.len() + bytes.len());
        whole.extend_from_slice(header.as_bytes());
        whole.extend_from_slice(bytes);
        return Ok(miniz_oxide::deflate::compress_to_vec_zlib(&whole, 1));
    }
    // Level 1: the hook's budget is a couple of milliseconds.
    let mut enc = ZlibEncoder::new(Vec::with_capacity(bytes.len() / 3 + 64), Compression::fast());
    enc.write_all(header.as_bytes())?;
    enc.write_all(bytes)?;
    enc.finish()
}

/// Writes loose-object bytes (from [`encode`]) to `tmp` (created new: a stale or planted file
/// there is replaced, never followed), fsyncs it when `sync` says so, and renames it to `path`
/// (over a damaged copy, if any). The caller syncs the folder (and, unsynced, the file:
/// returned open).
fn write_object(tmp: &Path, path: &Path, loose: &[u8], sync: bool) -> io::Result<File> {
    let open = || fsutil::open_private(tmp, OpenOptions::new().write(true).create_new(true));
    let f = match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            // Left by a writer that crashed with the same pid: nothing names a temp file.
            fs::remove_file(tmp)?;
            open()?
        }
        other => other?,
    };
    let mut f = f;
    f.write_all(loose)?;
    if sync {
        f.sync_all()?;
    }
    fs::rename(tmp, path)?;
    Ok(f)
}

/// Whether [`Store::put_batch`] makes its objects durable with two `syncfs` calls (Linux:
/// one for every object's bytes, one for their names) rather than a sync per object.
const BATCH_SYNCFS: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// The fewest objects a [`Store::put_batch`] makes durable with `syncfs` rather than one fsync
/// each ([`BATCH_SYNCFS`]).
const SYNCFS_FROM: usize = 64;

/// Writes loose-object bytes to the new temp file `tmp`, without a sync (a stale or planted
/// file there is replaced, never followed).
fn write_temp(tmp: &Path, loose: &[u8]) -> io::Result<()> {
    let open = || fsutil::open_private(tmp, OpenOptions::new().write(true).create_new(true));
    let mut f = match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(tmp)?;
            open()?
        }
        other => other?,
    };
    f.write_all(loose)
}

/// An object written under its final name whose syncs have not run.
struct Unsynced {
    file: File,
    path: PathBuf,
    /// Its folder (the rename is durable once it is synced).
    sub: PathBuf,
    /// The store's folder, when the object's folder is new.
    store: Option<PathBuf>,
}

impl Unsynced {
    /// The object's data, its name, and (for a new folder) the folder's name. The rename
    /// has already happened, so the order of the syncs does not matter, only that all have
    /// finished: the folders are synced on a second thread while this one syncs the data.
    /// Without a thread to be had, they run in turn.
    fn sync(&self) -> io::Result<()> {
        let dirs = || -> io::Result<()> {
            fsutil::sync_dir(&self.sub)?;
            self.store.as_deref().map_or(Ok(()), fsutil::sync_dir)
        };
        std::thread::scope(|s| {
            let folders = std::thread::Builder::new().name("walj-store-dir-sync".into()).spawn_scoped(s, dirs);
            self.file.sync_all()?;
            match folders {
                Ok(h) => h.join().unwrap_or_else(|_| Err(io::Error::other("the folder sync thread panicked"))),
                Err(_) => dirs(),
            }
        })
    }

    fn finish(self) -> Result<(), StoreError> {
        self.sync().map_err(|source| StoreError::Io { path: self.path, source })
    }
}

/// The largest compressed object the hook carries in its journal line rather than syncing
/// it on its own ([`Store::put_carried`]): 8 KiB, a source file of about 25 KB (base64 makes
/// it 4/3 longer in the line, so a line stays under about 11 KB per image).
pub(crate) const CARRY_MAX: usize = 8 * 1024;

/// How an object the hook stored becomes durable ([`Store::put_carried`]).
pub(crate) enum Durable {
    /// An intact copy was in the store already.
    Already,
    /// Carried whole by one of the journal's last lines: named by id only. Its wait checks
    /// that the line is still in the journal the caller appended to.
    Journaled(Journaled),
    /// In the line that names it: the loose-object bytes, base64 (a value of `images`).
    Carried(String),
    /// Its own syncs, running: wait for them before acknowledging the line.
    Pending(Pending),
}

impl Durable {
    /// Waits for the object's own syncs, if it has any (a carried one is durable with its line).
    pub(crate) fn wait(self) -> Result<(), StoreError> {
        match self {
            Durable::Pending(p) => p.wait(),
            Durable::Journaled(j) => j.confirm(),
            Durable::Already | Durable::Carried(_) => Ok(()),
        }
    }
}

/// An image named by id only because a recent line of the journal carries it
/// ([`Durable::Journaled`]): the identity of the journal that line is in, and the image's
/// bytes.
pub(crate) struct Journaled {
    store: Store,
    file: (u64, u64),
    bytes: Vec<u8>,
}

impl Journaled {
    /// Called once the line that names the image is appended and synced. The carrying line
    /// is still reachable unless a `walj compact` replaced the journal since it was read (a
    /// compact keeps the images only of the dropped lines a line it sees names): then the
    /// object is written to the store, synced. Either way the image is durable once this
    /// returns.
    fn confirm(self) -> Result<(), StoreError> {
        let same = self
            .store
            .journal()
            .and_then(|j| fs::metadata(j).ok())
            .is_some_and(|m| crate::journal::identity(&m) == self.file);
        if same { Ok(()) } else { self.store.put(&self.bytes).map(drop) }
    }
}

/// A carried object as its line stores it: base64 (standard alphabet, padded) of the loose
/// object's bytes, so `base64 -d | git hash-object`-style tools can read it.
fn carry_encode(loose: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(loose)
}

/// The object `id` carried in `value` (an `images` value), checked against its id.
pub(crate) fn carried_object(id: &str, value: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let loose = base64::engine::general_purpose::STANDARD.decode(value).ok()?;
    let body = decode(&loose).ok()?;
    (blob_id(&body) == id).then_some(body)
}

/// How far back a Bash snapshot looks in the journal for the images of changed files
/// ([`Store::recently_carried`]).
pub(crate) const RECENTLY: u64 = 1 << 20;

/// The images the lines of a journal's last [`RECENTLY`] bytes carry, as far as searched.
pub(crate) struct RecentlyCarried {
    index: CarriedIndex,
}

/// How far back from its end the hook looks in the journal for a line that carries an image
/// already ([`Store::put_carried`]): the Pre of the same call, the last edit of the same file.
pub(crate) const CARRIED_LATELY: u64 = 32 * 1024;

/// How much of a journal a reader reads at a time, searching it backwards for carried images.
const SEARCH_CHUNK: u64 = 4 << 20;

/// The longest line the backwards search reads whole (a line carries a few images of at most
/// [`CARRY_MAX`] bytes each).
const SEARCH_LINE_MAX: u64 = 64 << 20;

/// The carried images of one journal file, as far as searches have read it: every line of
/// `scanned..len` was read, and `offsets` has the start of the last line there that carries
/// each id. A journal that grew has its new lines read first; one replaced or cut short is
/// read again from its end.
#[derive(Default)]
struct CarriedIndex {
    file: (u64, u64),
    len: u64,
    scanned: u64,
    offsets: std::collections::HashMap<String, u64>,
    /// How much is read at a time (0: [`SEARCH_CHUNK`]).
    step: u64,
    /// How far back from the file's end (at the first search) lines are looked at (0: all).
    back: u64,
    /// Where the search stops: `len - back` at the first search, or the file's start.
    floor: u64,
}

impl CarriedIndex {
    /// Object `id` from the last line of `path` that carries it whole.
    fn find(&mut self, path: &Path, id: &str) -> io::Result<Option<Vec<u8>>> {
        let (f, meta) = fsutil::open_regular(path)?;
        let file = crate::journal::identity(&meta);
        if self.file != file || meta.len() < self.len {
            let (len, step, back) = (meta.len(), self.step, self.back);
            let floor = if back > 0 { len.saturating_sub(back) } else { 0 };
            *self = CarriedIndex { file, len, scanned: len, step, back, floor, ..Default::default() };
        }
        if meta.len() > self.len {
            // The lines appended since: read forward, up to the last whole line.
            let buf = read_range(&f, self.len, meta.len())?;
            let whole = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
            self.index(&buf[..whole], self.len);
            self.len += whole as u64;
        }
        if let Some(body) = self.offsets.get(id).and_then(|&at| line_carrying(&f, at, id)) {
            return Ok(Some(body));
        }
        let step = if self.step > 0 { self.step } else { SEARCH_CHUNK };
        let mut chunk = step;
        while self.scanned > self.floor {
            let start = self.scanned.saturating_sub(chunk).max(self.floor);
            let buf = read_range(&f, start, self.scanned)?;
            // Lines whole in the window start after its first newline (or at the file's start).
            let at_floor = start == self.floor && start > 0;
            let from = match (start, memchr::memchr(b'\n', &buf)) {
                (0, _) => 0,
                (_, Some(i)) => i + 1,
                (_, None) if !at_floor && chunk < SEARCH_LINE_MAX => {
                    chunk *= 2;
                    continue;
                }
                (_, None) => return Ok(None),
            };
            self.index(&buf[from..], start + from as u64);
            // At the floor, the line cut by it is out of reach: the search is over.
            self.scanned = if at_floor { self.floor } else { start + from as u64 };
            chunk = step;
            if let Some(body) = self.offsets.get(id).and_then(|&at| line_carrying(&f, at, id)) {
                return Ok(Some(body));
            }
        }
        Ok(None)
    }

    /// Notes the ids the whole lines `lines` (at file offset `at`) carry, keeping an offset
    /// already noted (a later line's) over an earlier one.
    fn index(&mut self, lines: &[u8], at: u64) {
        let finder = memchr::memmem::Finder::new(crate::journal::record::key::IMAGES_FIELD);
        let mut pos = 0;
        for line in lines.split_inclusive(|&b| b == b'\n') {
            if let Some(i) = finder.find(line) {
                for id in carried_ids(&line[i + finder.needle().len()..]) {
                    let offset = at + pos as u64;
                    let e = self.offsets.entry(id.to_string()).or_insert(offset);
                    *e = (*e).max(offset);
                }
            }
            pos += line.len();
        }
    }
}

/// Images a journal is known to carry in no line, with the journal's (device, inode, length)
/// when that was known (from the line index, `crate::fold::located`, which no module here
/// may call): the journal's own search is skipped while it is still that file at that
/// length. Its side files are searched all the same.
static NOT_CARRIED: std::sync::Mutex<Option<NotCarried>> = std::sync::Mutex::new(None);

/// (journal, image id) → the journal's (device, inode, length) when it carried no such line.
type NotCarried = std::collections::HashMap<(PathBuf, String), (u64, u64, u64)>;

/// Says that no line of `journal`, as (device, inode, length) `at`, carries image `id`.
pub(crate) fn not_carried(journal: &Path, id: &str, at: (u64, u64, u64)) {
    let mut all = NOT_CARRIED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    all.get_or_insert_with(Default::default).insert((journal.to_path_buf(), id.to_string()), at);
}

/// Whether [`not_carried`] said so of `journal` as it is now.
fn not_carried_now(journal: &Path, id: &str) -> bool {
    let all = NOT_CARRIED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(&(dev, ino, len)) = all.as_ref().and_then(|m| m.get(&(journal.to_path_buf(), id.to_string()))) else {
        return false;
    };
    drop(all);
    fs::metadata(journal).is_ok_and(|m| crate::journal::identity(&m) == (dev, ino) && m.len() == len)
}

/// One index per journal file for the whole process (the TUI and `walj diff` make a `Store`
/// per read).
static CARRIED: std::sync::Mutex<Option<std::collections::HashMap<PathBuf, CarriedIndex>>> =
    std::sync::Mutex::new(None);

/// The ids a journal line carries (the keys of its `images` object), read without a parse.
pub fn carried_ids_of(line: &[u8]) -> impl Iterator<Item = &str> {
    let field = crate::journal::record::key::IMAGES_FIELD;
    let rest = memchr::memmem::find(line, field).map_or(&[][..], |i| &line[i + field.len()..]);
    carried_ids(rest)
}

/// The keys of an `images` object as walj writes it (`"<id>":"<base64>",…}`), from just after
/// its `{`; stops at anything else.
fn carried_ids(mut rest: &[u8]) -> impl Iterator<Item = &str> {
    std::iter::from_fn(move || {
        let body = rest.strip_prefix(b"\"")?;
        let id = std::str::from_utf8(body.get(..40)?).ok().filter(|id| is_id(id))?;
        let value = body[40..].strip_prefix(b"\":\"")?;
        let end = memchr::memchr(b'"', value)?;
        rest = value[end + 1..].strip_prefix(b",").unwrap_or(&[]);
        Some(id)
    })
}

/// Object `id` from the line of `f` that starts at `at`, if it carries it whole.
fn line_carrying(f: &File, at: u64, id: &str) -> Option<Vec<u8>> {
    use std::io::{BufRead as _, Seek as _};
    let mut f = f;
    f.seek(io::SeekFrom::Start(at)).ok()?;
    let mut line = Vec::new();
    io::BufReader::new(f).read_until(b'\n', &mut line).ok()?;
    carried_in(&line, id, false)
}

/// Bytes `start..end` of `f` (fewer if the file is shorter).
fn read_range(f: &File, start: u64, end: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(end.saturating_sub(start)).map_err(io::Error::other)?;
    let mut buf = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match fsutil::read_at(f, &mut buf[got..], start + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// Object `id` as the last line of `lines` (which start at a line's start) that carries it
/// has it, checked against its id. A line counts only once its `\n` is written, and with
/// `whole` only when its checksum holds too: a line walj reads as a record, which
/// `walj compact` keeps or writes the images of ([`Store::put_carried`] names an image by id
/// only after such a line).
fn carried_in(lines: &[u8], id: &str, whole: bool) -> Option<Vec<u8>> {
    // A key with its quotes unescaped: never inside a JSON string.
    let key = format!("\"{id}\":\"");
    let finder = memchr::memmem::FinderRev::new(key.as_bytes());
    let mut end = lines.len();
    while let Some(at) = finder.rfind(&lines[..end]) {
        end = at;
        let Some(nl) = memchr::memchr(b'\n', &lines[at..]) else { continue };
        let start = memchr::memrchr(b'\n', &lines[..at]).map_or(0, |i| i + 1);
        if whole && crate::journal::record::check_crc(&lines[start..at + nl]) != Some(true) {
            continue;
        }
        let value = &lines[at + key.len()..at + nl];
        let Some(q) = memchr::memchr(b'"', value) else { continue };
        if let Some(body) = std::str::from_utf8(&value[..q]).ok().and_then(|v| carried_object(id, v)) {
            return Some(body);
        }
    }
    None
}

/// The bytes of a loose object (zlib of `blob <len>\0` + bytes), header checked.
fn decode(loose: &[u8]) -> Result<Vec<u8>, String> {
    let mut raw = Vec::new();
    ZlibDecoder::new(loose).read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let nul = raw.iter().position(|&b| b == 0).ok_or("no header")?;
    Ok(raw.split_off(nul + 1))
}

/// An object's syncs, running on their own thread ([`Store::put_carried`]). [`Pending::wait`]
/// returns once the object is durable. Dropped without a wait, it still waits (a hook never
/// returns with an object's syncs in flight).
#[must_use = "the object is durable only once its Pending has been waited for"]
pub(crate) struct Pending {
    path: PathBuf,
    thread: Option<std::thread::JoinHandle<Result<(), StoreError>>>,
    /// The syncs' result when no thread could be started (they ran in place).
    done: Option<Result<(), StoreError>>,
}

impl Pending {
    fn start(unsynced: Unsynced) -> Pending {
        let path = unsynced.path.clone();
        let (sub, store) = (unsynced.sub.clone(), unsynced.store.clone());
        match std::thread::Builder::new().name("walj-store-sync".into()).spawn(move || unsynced.finish()) {
            Ok(h) => Pending { path, thread: Some(h), done: None },
            Err(_) => {
                // No thread to be had (the closure, and its descriptor, are gone): sync in place.
                let sync = || -> io::Result<()> {
                    File::open(&path)?.sync_all()?;
                    fsutil::sync_dir(&sub)?;
                    store.as_deref().map_or(Ok(()), fsutil::sync_dir)
                };
                let done = Some(sync().map_err(|source| StoreError::Io { path: path.clone(), source }));
                Pending { path, thread: None, done }
            }
        }
    }

    /// Waits for the object's syncs.
    pub(crate) fn wait(mut self) -> Result<(), StoreError> {
        self.join()
    }

    fn join(&mut self) -> Result<(), StoreError> {
        match self.thread.take() {
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(StoreError::Io {
                    path: self.path.clone(),
                    source: io::Error::other("the store's sync thread panicked"),
                })
            }),
            None => self.done.take().unwrap_or(Ok(())),
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// Adler-32 (RFC 1950), the checksum that ends a zlib stream.
#[derive(Default)]
struct Adler32 {
    a: u32,
    b: u32,
    started: bool,
}

impl Adler32 {
    fn update(&mut self, bytes: &[u8]) {
        const MOD: u32 = 65_521;
        if !self.started {
            (self.a, self.started) = (1, true);
        }
        // 5552 bytes: the most that can be summed before `b` could overflow a u32.
        for chunk in bytes.chunks(5552) {
            for &x in chunk {
                self.a += u32::from(x);
                self.b += self.a;
            }
            self.a %= MOD;
            self.b %= MOD;
        }
    }

    fn finish(&self) -> u32 {
        if self.started { (self.b << 16) | self.a } else { 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_id_is_the_blob_id_of_its_tagged_target() {
        for target in [&b""[..], b"a.txt", b"../../outside/\xff"] {
            let mut tagged = b"walj symlink\0".to_vec();
            tagged.extend_from_slice(target);
            assert_eq!(crate::journal::entry_kind::link_id(target), blob_id(&tagged));
        }
        assert_ne!(crate::journal::entry_kind::link_id(b"a.txt"), blob_id(b"a.txt"));
    }

    #[cfg(unix)]
    #[test]
    fn a_sampled_identity_is_never_a_store_id() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(4 << 30).unwrap();
        drop(f);
        let a = crate::sampled::identity_of(&p).unwrap();
        assert!(crate::sampled::is_sampled(&a) && !is_id(&a), "{a}");
    }

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
        // A damaged object under its name is written again by a batch, never trusted; no
        // temp file is left in any folder.
        s.put_batch(&batch).unwrap();
        assert_eq!(s.get(&id).unwrap(), b"hello\n");
        assert_eq!(s.sweep_temps(std::time::Duration::ZERO, true).unwrap(), (0, 0));
    }

    /// The cheap intactness check agrees with zlib's own trailer for whole objects of every
    /// size, and rejects empty, cut and flipped ones.
    #[test]
    fn intact_objects_are_told_from_damaged_ones() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path().join("store"));
        for size in [0usize, 1, 5551, 5552, 5553, 100_000] {
            let bytes: Vec<u8> = (0..size).map(|i| (i * 7 % 256) as u8).collect();
            let id = s.put(&bytes).unwrap();
            assert!(s.intact(&id, &bytes), "{size} bytes");
            let path = s.object_path(&id);
            let whole = fs::read(&path).unwrap();
            for damaged in [vec![], whole[..whole.len() - 1].to_vec(), whole[..whole.len() / 2].to_vec(), {
                let mut z = whole.clone();
                let n = z.len();
                z[n - 1] ^= 1;
                z
            }] {
                fs::write(&path, &damaged).unwrap();
                assert!(!s.intact(&id, &bytes), "{size} bytes, damaged to {} bytes", damaged.len());
                // Not trusted by the hook (carried, or written again) nor by a durable put.
                let (again, durable) = s.put_carried(&bytes, |_| true).unwrap();
                assert_eq!(again, id);
                assert!(!matches!(durable, Durable::Already | Durable::Journaled(_)), "not reused");
                durable.wait().unwrap();
                s.put_with_id(&id, &bytes).unwrap();
                assert_eq!(s.get(&id).unwrap(), bytes);
            }
            assert!(
                matches!(s.put_carried(&bytes, |_| true).unwrap().1, Durable::Already),
                "an intact object is reused"
            );
        }
    }

    /// A journal line as the hook writes it: a v2 record naming `id` and carrying `b64`.
    fn carrying_line(id: &str, b64: &str) -> Vec<u8> {
        let mut r = crate::journal::record::Record::new("intent", "s1");
        r.path = "src/lib.rs".into();
        let mut images = serde_json::Map::new();
        images.insert(id.to_string(), serde_json::Value::String(b64.to_string()));
        r.extra.insert(crate::journal::record::key::IMAGES.into(), serde_json::Value::Object(images));
        r.to_line()
    }

    /// Stores `bytes` as the hook does, expecting it carried: `(id, base64)`.
    fn carried(s: &Store, bytes: &[u8]) -> (String, String) {
        match s.put_carried(bytes, |_| true).unwrap() {
            (id, Durable::Carried(b64)) => (id, b64),
            _ => panic!("a small new image is carried"),
        }
    }

    fn source(n: usize, salt: u32) -> Vec<u8> {
        (0..n).map(|i| format!("fn f_{salt}_{i}() -> u32 {{ {i} }}\n")).collect::<String>().into_bytes()
    }

    /// The hook creates no file for a small image: its line carries it. The next call naming
    /// the same bytes names them by id only while that line is among the journal's last ones,
    /// and a reader takes them from the line, then from the store it wrote them to.
    #[test]
    fn a_carried_image_is_in_its_line_only_and_read_from_there() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path().join("store"));
        let journal = dir.path().join("journal.jsonl");
        let bytes = source(300, 1);
        let (id, b64) = carried(&s, &bytes);
        assert!(!s.object_path(&id).exists(), "no loose object");
        assert!(!s.dir().exists(), "not even the store's folder");
        // Before any line carries it: carried again, and no reader finds it.
        assert!(matches!(s.put_carried(&bytes, |_| true).unwrap().1, Durable::Carried(_)));
        assert!(matches!(s.get(&id), Err(StoreError::Missing(_))));

        fs::write(&journal, carrying_line(&id, &b64)).unwrap();
        assert!(matches!(s.put_carried(&bytes, |_| true).unwrap().1, Durable::Journaled(_)), "named by id");
        assert_eq!(s.get(&id).unwrap(), bytes);
        assert!(s.intact(&id, &bytes), "written to the store by the read");
        assert!(matches!(s.put_carried(&bytes, |_| true).unwrap().1, Durable::Already));
    }

    /// A Bash snapshot finds a file hook's carried image in the journal's last MiB, searched
    /// backwards a chunk at a time, and writes it to the store; further back it is not found
    /// (the snapshot then stores the file's bytes itself).
    #[test]
    fn a_bash_snapshot_writes_out_an_image_a_recent_line_carries() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path().join("store"));
        let journal = dir.path().join("journal.jsonl");
        let filler = |kib: usize| "{\"op\":\"filler\"}\n".repeat(kib * 1024 / 16);
        for (after, found) in [(0, true), (300, true), (1100, false)] {
            let bytes = source(300, 10 + after as u32);
            let (id, b64) = carried(&s, &bytes);
            let line = String::from_utf8(carrying_line(&id, &b64)).unwrap();
            fs::write(&journal, format!("{}{line}{}", filler(2), filler(after))).unwrap();
            let mut recent = s.recently_carried();
            assert_eq!(s.keep_recent(&mut recent, &id), found, "{after} KiB after its line");
            assert_eq!(s.intact(&id, &bytes), found, "{after} KiB after its line");
            assert!(!s.keep_recent(&mut recent, &"0".repeat(40)), "an id no line carries");
        }
    }

    /// A `walj compact` that replaced the journal between the hook's look at it and its append
    /// may have dropped the line that carries the image: the wait finds another journal and
    /// stores the image, synced. With the same journal it writes nothing.
    #[test]
    fn an_image_named_by_id_is_stored_when_the_journal_was_replaced_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path().join("store"));
        let journal = dir.path().join("journal.jsonl");
        let bytes = source(300, 3);
        let (id, b64) = carried(&s, &bytes);
        fs::write(&journal, carrying_line(&id, &b64)).unwrap();
        let (_, durable) = s.put_carried(&bytes, |_| true).unwrap();
        assert!(matches!(durable, Durable::Journaled(_)));
        durable.wait().unwrap();
        assert!(!s.object_path(&id).exists(), "the line is still there: nothing written");
        let (_, durable) = s.put_carried(&bytes, |_| true).unwrap();
        let replaced = dir.path().join("journal.jsonl.new");
        fs::write(&replaced, b"{}\n").unwrap();
        fs::rename(&replaced, &journal).unwrap();
        durable.wait().unwrap();
        assert!(s.intact(&id, &bytes), "stored once the journal was replaced");
        assert_eq!(s.get(&id).unwrap(), bytes);
    }

    /// Only a whole line, checksum and all, lets the hook name an image by id: a cut or
    /// damaged one, or one further back than it looks, makes it carry the image again.
    #[test]
    fn only_a_whole_recent_line_lets_the_hook_name_an_image_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path().join("store"));
        let journal = dir.path().join("journal.jsonl");
        let bytes = source(300, 2);
        let (id, b64) = carried(&s, &bytes);
        let line = carrying_line(&id, &b64);
        let carried = |s: &Store| matches!(s.put_carried(&bytes, |_| true).unwrap().1, Durable::Carried(_));

        fs::write(&journal, &line[..line.len() - 1]).unwrap();
        assert!(carried(&s), "a line without its newline (a writer killed mid-line)");
        let mut damaged = line.clone();
        let at = damaged.len() - 20;
        damaged[at] ^= 1;
        fs::write(&journal, &damaged).unwrap();
        assert!(carried(&s), "a line whose checksum fails");
        let mut far = line.clone();
        let filler = carrying_line("0000000000000000000000000000000000000000", "AAAA");
        while far.len() < 2 * CARRIED_LATELY as usize {
            far.extend_from_slice(&filler);
        }
        fs::write(&journal, &far).unwrap();
        assert!(carried(&s), "a line further back than the hook looks");
        assert_eq!(s.get(&id).unwrap(), bytes, "a reader looks all the way back");
    }

    /// A reader searches the journal from its end, chunk by chunk, across lines cut by the
    /// chunks' edges, and in the side files; what it read once serves the next search, and a
    /// journal that grew has its new lines read.
    #[test]
    fn readers_find_carried_images_anywhere_in_the_journal_and_its_side_files() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path().join("store"));
        let journal = dir.path().join("journal.jsonl");
        let mut images = Vec::new();
        let mut text = Vec::new();
        let filler = carrying_line("0000000000000000000000000000000000000000", "AAAA");
        let mut n = 0;
        while text.len() < (SEARCH_CHUNK as usize) * 2 + 4096 {
            if n % 400 == 0 {
                let bytes = source(200, n);
                let (id, b64) = carried(&s, &bytes);
                text.extend_from_slice(&carrying_line(&id, &b64));
                images.push((id, bytes));
            } else {
                text.extend_from_slice(&filler);
            }
            n += 1;
        }
        fs::write(&journal, &text).unwrap();
        // Oldest first: the first search reads the whole journal, the rest is the index's.
        for (id, bytes) in &images {
            assert_eq!(&s.get(id).unwrap(), bytes, "{id}");
        }
        // Appended since the index was made, and one in a side file.
        let late = source(100, 9_001);
        let (late_id, d) = s.put_carried(&late, |_| true).unwrap();
        let Durable::Carried(b64) = d else { panic!("carried") };
        fs::OpenOptions::new().append(true).open(&journal).unwrap().write_all(&carrying_line(&late_id, &b64)).unwrap();
        assert_eq!(s.get(&late_id).unwrap(), late);
        let aside = source(100, 9_002);
        let (aside_id, d) = s.put_carried(&aside, |_| true).unwrap();
        let Durable::Carried(b64) = d else { panic!("carried") };
        fs::create_dir(dir.path().join("journal.side")).unwrap();
        fs::write(dir.path().join("journal.side/1-2-0.jsonl"), carrying_line(&aside_id, &b64)).unwrap();
        assert_eq!(s.get(&aside_id).unwrap(), aside);
    }

    #[test]
    fn the_ids_of_an_images_object_are_read_without_a_parse() {
        let a = "a".repeat(40);
        let b = "0123456789abcdef0123456789abcdef01234567";
        let text = format!("\"{a}\":\"eJw=\",\"{b}\":\"eA==\"}},\"crc\":\"00\"}}");
        assert_eq!(carried_ids(text.as_bytes()).collect::<Vec<_>>(), [a.as_str(), b]);
        assert_eq!(carried_ids(b"\"short\":\"x\"}").count(), 0);
        assert_eq!(carried_ids(b"}").count(), 0);
    }
}
