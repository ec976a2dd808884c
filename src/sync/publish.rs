//! The commit a sync publishes: the journal as append-only segments, the images it names as
//! tree entries, and the manifest (docs/sync.md, "Remote layout").
//!
//! The journal (up to its last complete line) is cut greedily into segments of at least
//! [`SEGMENT_BYTES`] that end at a line end. A segment that reached the size is sealed and is
//! never written again; only the last, open segment grows. A sync therefore writes the open
//! segment and what follows it, never the sealed part of the journal, and reads the journal
//! only from the open segment on (plus a small prefix, to tell a rewritten journal from a grown
//! one).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use git2::{Commit, ObjectType, Oid, Repository, Tree};

use super::identity::Identity;
use super::manifest::{Manifest, SessionState};
use super::seal::{KEY_ENTRY, Seal};
use super::{FORMAT, FORMAT_SEALED, SyncError};
use crate::config::Matcher;
use crate::store::{Store, blob_id, is_id};

/// A segment is sealed once it holds at least this many bytes.
pub(crate) const SEGMENT_BYTES: u64 = 64 * 1024;
/// The same for encrypted syncs: ciphertext neither compresses nor deltas against the open
/// segment's previous version, so a smaller open segment keeps a sync after ten new lines
/// small (about this plus one segment folder's tree).
pub(crate) const SEALED_SEGMENT_BYTES: u64 = 16 * 1024;

/// The segment size for a sync sealed with `seal` (or in plain text).
pub(crate) fn segment_size(seal: Option<&Seal>) -> u64 {
    if seal.is_some() { SEALED_SEGMENT_BYTES } else { SEGMENT_BYTES }
}
/// Segments per folder of `segments/`.
pub(crate) const SEGMENTS_PER_DIR: u64 = 256;
/// Leading bytes the manifest's `prefix` covers (at most).
pub(crate) const PREFIX_BYTES: u64 = 4096;

pub(crate) const MANIFEST: &str = "manifest.json";
pub(crate) const SEGMENTS: &str = "segments";
pub(crate) const OBJECTS: &str = "objects";
pub(crate) const TRANSCRIPTS: &str = "transcripts";

/// The folder and file name of segment `i`.
pub(crate) fn segment_path(i: u64) -> (String, String) {
    (format!("{:04}", i / SEGMENTS_PER_DIR), format!("{i:06}"))
}

/// The fixed identity of every commit walj makes (never the user's `user.name`).
pub(crate) fn signature() -> Result<git2::Signature<'static>, git2::Error> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    git2::Signature::new("walj", "walj@localhost", &git2::Time::new(now.as_secs() as i64, 0))
}

/// The manifest of a published commit.
pub(crate) fn manifest_of(repo: &Repository, commit: &Commit<'_>) -> Result<Manifest, String> {
    let tree = commit.tree().map_err(|e| format!("its tree cannot be read ({})", e.message()))?;
    let entry = tree.get_name(MANIFEST).ok_or("it has no manifest.json")?;
    let blob = repo.find_blob(entry.id()).map_err(|_| "its manifest.json is not a file or is missing".to_string())?;
    let m: Manifest =
        serde_json::from_slice(blob.content()).map_err(|e| format!("its manifest.json does not parse ({e})"))?;
    let sealed = m.encryption.is_some();
    if m.format != FORMAT && m.format != FORMAT_SEALED || (m.format == FORMAT_SEALED) != sealed {
        return Err(format!(
            "its manifest has format {} (this walj reads {FORMAT} and {FORMAT_SEALED}; a newer walj?)",
            m.format
        ));
    }
    Ok(m)
}

/// What [`build`] made.
#[derive(Debug)]
pub struct Built {
    /// The commit to publish; `None` when there is nothing to publish (no journal yet).
    pub commit: Option<Oid>,
    pub manifest: Manifest,
    /// Nothing changed since the parent (which is `commit`).
    pub unchanged: bool,
    /// The journal no longer extends what was published: a new epoch (root commit).
    pub new_epoch: bool,
    /// Segments written, and the journal bytes they hold.
    pub segments_written: u64,
    pub bytes_written: u64,
    /// Images newly named by the tree.
    pub images_added: usize,
    /// Transcript bytes in the segments written.
    pub transcript_bytes: u64,
    /// Images left out because they hold secret-looking text (`crate::secrets`).
    pub images_withheld: usize,
}

/// What [`build`] needs.
pub struct Input<'a> {
    pub repo: &'a Repository,
    pub journal: &'a Path,
    pub store: &'a Store,
    pub ident: &'a Identity,
    /// What this checkout last published.
    pub parent: Option<Oid>,
    /// `[capture] never`: lines on such paths name no image, even one that is stored.
    pub never: Option<&'a Matcher>,
    pub sessions: Vec<SessionState>,
    pub synced_at: String,
    /// This checkout's project root (for `walj sessions resume` elsewhere).
    pub root: String,
    /// Encrypt what is published (`None`: plain text).
    pub seal: Option<&'a Seal>,
    /// `key.age` for this commit, when the previous commit's cannot be kept (asked only then).
    pub wrap: &'a mut dyn FnMut() -> Result<Vec<u8>, SyncError>,
    /// Transcripts to publish (their safe copies): session ids.
    pub transcripts: Option<super::transcripts::Sources<'a>>,
}

fn io_err(journal: &Path) -> impl Fn(io::Error) -> SyncError + '_ {
    move |e| SyncError::Io { what: format!("reading {}", journal.display()), source: e }
}

/// A digest of published bytes: their blob id in plain text, a keyed digest when sealed.
pub(crate) fn digest(seal: Option<&Seal>, what: &str, bytes: &[u8]) -> String {
    match seal {
        Some(s) => s.digest(what, bytes),
        None => blob_id(bytes),
    }
}

fn read_range(f: &mut File, start: u64, len: u64) -> io::Result<Vec<u8>> {
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    f.take(len).read_to_end(&mut buf)?;
    if (buf.len() as u64) < len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the journal shrank while it was read"));
    }
    Ok(buf)
}

/// Whether `m` was sealed the way `seal` seals (same data key), or both are plain text.
pub(crate) fn same_sealing(m: &Manifest, seal: Option<&Seal>) -> bool {
    m.encryption.as_ref().map(|e| e.key.as_str()) == seal.map(|s| s.key.recipient())
}

/// Whether the journal still extends what `m` (in `tree`) published.
fn extends(f: &mut File, len: u64, tree: &Tree<'_>, m: &Manifest, seal: Option<&Seal>) -> io::Result<bool> {
    if len < m.journal_bytes || m.sealed_bytes > m.journal_bytes || m.prefix_len > m.journal_bytes {
        return Ok(false);
    }
    if !same_sealing(m, seal) || digest(seal, "prefix", &read_range(f, 0, m.prefix_len)?) != m.prefix {
        return Ok(false);
    }
    if m.segments > m.sealed {
        let open = read_range(f, m.sealed_bytes, m.journal_bytes - m.sealed_bytes)?;
        let open = digest(seal, "segment", &open);
        if let Some(want) = &m.open {
            return Ok(open == *want);
        }
        // A commit of a walj that did not record `open`: its open segment's blob id.
        let (d, n) = segment_path(m.sealed);
        let Ok(entry) = tree.get_path(Path::new(&format!("{SEGMENTS}/{d}/{n}"))) else { return Ok(false) };
        return Ok(seal.is_none() && open == entry.id().to_string());
    }
    Ok(m.journal_bytes == m.sealed_bytes)
}

/// Cuts `buf` (complete lines) into segments of at least `size` bytes: `(start, end, sealed)`.
pub(crate) fn cut(buf: &[u8], size: u64) -> Vec<(usize, usize, bool)> {
    let seg = size.max(1) as usize;
    let mut out = Vec::new();
    let mut s = 0;
    while s < buf.len() {
        let from = s + seg - 1;
        match buf.get(from..).and_then(|rest| memchr::memchr(b'\n', rest)) {
            Some(i) => {
                out.push((s, from + i + 1, true));
                s = from + i + 1;
            }
            None => {
                out.push((s, buf.len(), false));
                break;
            }
        }
    }
    out
}

/// Object ids quoted in `line` (`"` + 40 hex digits + `"`): every image field, whatever its
/// name, without a list of keys to keep in step with the journal's vocabulary.
pub(crate) fn quoted_ids(line: &[u8]) -> impl Iterator<Item = &str> {
    memchr::memchr_iter(b'"', line).filter_map(move |i| {
        let cand = line.get(i + 1..i + 41)?;
        (line.get(i + 41) == Some(&b'"')).then_some(())?;
        let s = std::str::from_utf8(cand).ok()?;
        is_id(s).then_some(s)
    })
}

/// Segment blobs for `segs` (ranges of `buf`, numbered from `first`), encrypted when sealed,
/// grouped by folder.
pub(crate) fn segment_blobs(
    repo: &Repository,
    buf: &[u8],
    segs: &[(usize, usize, bool)],
    first: u64,
    seal: Option<&Seal>,
) -> Result<BTreeMap<String, Vec<(String, Oid)>>, SyncError> {
    let mut dirs: BTreeMap<String, Vec<(String, Oid)>> = BTreeMap::new();
    for (i, (a, b, _)) in segs.iter().enumerate() {
        let bytes = &buf[*a..*b];
        let oid = match seal {
            Some(s) => repo.blob(&s.encrypt(bytes)?)?,
            None => repo.blob(bytes)?,
        };
        let (d, n) = segment_path(first + i as u64);
        dirs.entry(d).or_default().push((n, oid));
    }
    Ok(dirs)
}

/// The folder `name` of `t`, when it is one.
pub(crate) fn subtree<'r>(repo: &'r Repository, t: Option<&Tree<'_>>, name: &str) -> Option<Tree<'r>> {
    let e = t?.get_name(name)?;
    (e.kind() == Some(ObjectType::Tree)).then(|| repo.find_tree(e.id()).ok()).flatten()
}

/// A two-level tree (`dir/name`): `base` with `groups` added. `None` when both are empty.
pub(crate) fn two_level(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    groups: &BTreeMap<String, Vec<(String, Oid)>>,
) -> Result<Option<Oid>, git2::Error> {
    if groups.is_empty() {
        return Ok(base.map(|t| t.id()));
    }
    let mut tb = repo.treebuilder(base)?;
    for (dir, items) in groups {
        let base_dir = subtree(repo, base, dir);
        let mut db = repo.treebuilder(base_dir.as_ref())?;
        for (name, oid) in items {
            db.insert(name, *oid, 0o100644)?;
        }
        tb.insert(dir, db.write()?, 0o040000)?;
    }
    Ok(Some(tb.write()?))
}

/// Builds (but does not publish) the commit for the journal as it is now.
pub(crate) fn build(inp: Input<'_>) -> Result<Built, SyncError> {
    let Input { repo, journal, store, ident, parent, never, sessions, synced_at, root, seal, wrap, transcripts } = inp;
    let (mut file, len) = match File::open(journal) {
        Ok(f) => {
            let len = f.metadata().map_err(io_err(journal))?.len();
            (Some(f), len)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => (None, 0),
        Err(e) => return Err(io_err(journal)(e)),
    };
    let prev = match parent {
        Some(oid) => {
            let c = repo.find_commit(oid)?;
            manifest_of(repo, &c).ok().map(|m| (c, m))
        }
        None => None,
    };
    let mut incremental = None;
    if let (Some((c, m)), Some(f)) = (&prev, file.as_mut())
        && m.journal == ident.id
    {
        let tree = c.tree()?;
        if extends(f, len, &tree, m, seal).map_err(io_err(journal))? {
            incremental = Some((tree, m.clone()));
        }
    }
    let (start, first) = incremental.as_ref().map_or((0, 0), |(_, m)| (m.sealed_bytes, m.sealed));
    let mut buf = match file.as_mut() {
        Some(f) => read_range(f, start, len - start.min(len)).map_err(io_err(journal))?,
        None => Vec::new(),
    };
    let complete = memchr::memrchr(b'\n', &buf).map_or(0, |i| i + 1);
    buf.truncate(complete);
    let journal_bytes = start + buf.len() as u64;
    let segs = cut(&buf, segment_size(seal));
    let sealed_here = segs.iter().filter(|s| s.2).count() as u64;
    let sealed_bytes = start + segs.iter().filter(|s| s.2).map(|s| s.1 as u64).max().unwrap_or(0);
    let prefix_len = journal_bytes.min(PREFIX_BYTES);
    let prefix = match file.as_mut() {
        Some(f) => digest(seal, "prefix", &read_range(f, 0, prefix_len).map_err(io_err(journal))?),
        None => digest(seal, "prefix", b""),
    };
    let open = (journal_bytes > sealed_bytes).then(|| digest(seal, "segment", &buf[(sealed_bytes - start) as usize..]));
    let (epoch, previous) = match (&incremental, &prev) {
        (Some((_, m)), _) => (m.epoch, m.previous.clone()),
        (None, Some((c, m))) => (m.epoch + 1, Some(c.id().to_string())),
        (None, None) => (0, None),
    };
    // The previous tree, when its sealing is ours: its transcripts and key.age may be kept.
    let prev_same = prev.as_ref().filter(|(_, m)| same_sealing(m, seal)).map(|(c, m)| (c.tree(), m));
    let prev_same = match prev_same {
        Some((Ok(t), m)) => Some((t, m)),
        _ => None,
    };
    let tr = match transcripts {
        Some(src) => Some(super::transcripts::publish(
            repo,
            src,
            prev_same.as_ref().map(|(t, m)| (t, m.transcripts.as_slice())),
            seal,
        )?),
        None => None,
    };
    let manifest = Manifest {
        format: if seal.is_some() { FORMAT_SEALED } else { FORMAT },
        journal: ident.id.clone(),
        name: ident.name.clone(),
        machine: ident.machine.clone(),
        host: ident.host.clone(),
        walj_version: env!("CARGO_PKG_VERSION").to_string(),
        epoch,
        previous,
        synced_at,
        journal_bytes,
        sealed_bytes,
        segments: first + segs.len() as u64,
        sealed: first + sealed_here,
        prefix_len,
        prefix,
        sessions,
        root: Some(root),
        open,
        encryption: seal.map(|s| s.encryption.clone()),
        transcripts: tr.as_ref().map(|t| t.states.clone()).unwrap_or_default(),
    };
    let built = |commit, unchanged, segments_written, bytes_written, images_added| Built {
        commit,
        manifest: manifest.clone(),
        unchanged,
        new_epoch: incremental.is_none() && prev.is_some(),
        segments_written,
        bytes_written,
        images_added,
        images_withheld: 0,
        transcript_bytes: 0,
    };
    if let Some((_, m)) = &incremental
        && m.same_content(&manifest)
    {
        return Ok(built(parent, true, 0, 0, 0));
    }
    if journal_bytes == 0 && prev.is_none() && manifest.transcripts.is_empty() {
        return Ok(built(None, true, 0, 0, 0));
    }

    let base = incremental.as_ref().map(|(t, _)| t);
    let seg_dirs = segment_blobs(repo, &buf, &segs, first, seal)?;
    // Images named by the lines written.
    let mut images: BTreeMap<String, Vec<(String, Oid)>> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    let mut added = 0;
    let mut withheld = 0;
    for line in buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if let Some(m) = never
            && let Ok(view) = crate::journal::view::classify(0, line)
            && !view.path.is_empty()
            && m.never_capture(&view.path)
        {
            continue;
        }
        for id in quoted_ids(line) {
            if !seen.insert(id.to_string()) {
                continue;
            }
            let name = match seal {
                Some(s) => s.image_name(id),
                None => id.to_string(),
            };
            let (xx, rest) = name.split_at(2);
            if base.is_some_and(|t| t.get_path(Path::new(&format!("{OBJECTS}/{xx}/{rest}"))).is_ok()) {
                continue;
            }
            // Only what the store holds, intact (a damaged object would fail the push); `get`
            // also takes an object a machine crash lost from the journal line that carries it.
            let Ok(bytes) = store.get(id) else { continue };
            // Secrets are never synced: an image with secret-looking text stays here.
            if !crate::secrets::findings(&bytes).is_empty() {
                withheld += 1;
                continue;
            }
            let oid = match seal {
                // Encrypted into walj's repository: the store's plain object is never pushed.
                Some(s) => repo.blob(&s.encrypt(&bytes)?)?,
                None => {
                    let Ok(oid) = Oid::from_str(id) else { continue };
                    oid
                }
            };
            images.entry(xx.to_string()).or_default().push((rest.to_string(), oid));
            added += 1;
        }
    }

    let seg_tree = two_level(repo, subtree(repo, base, SEGMENTS).as_ref(), &seg_dirs)?;
    let obj_tree = two_level(repo, subtree(repo, base, OBJECTS).as_ref(), &images)?;
    let mut root = repo.treebuilder(base)?;
    root.insert(MANIFEST, repo.blob(&manifest.to_bytes())?, 0o100644)?;
    let tr_tree = tr.as_ref().and_then(|t| t.tree);
    for (name, t) in [(SEGMENTS, seg_tree), (OBJECTS, obj_tree), (TRANSCRIPTS, tr_tree)] {
        match t {
            Some(oid) => {
                root.insert(name, oid, 0o040000)?;
            }
            None => {
                if root.get(name)?.is_some() {
                    root.remove(name)?;
                }
            }
        }
    }
    match seal {
        Some(s) => {
            // key.age: kept from the previous commit when it sealed the same key the same way.
            let keep = prev_same
                .as_ref()
                .filter(|(_, m)| m.encryption.as_ref() == Some(&s.encryption))
                .and_then(|(t, _)| t.get_name(KEY_ENTRY).map(|e| e.id()));
            let oid = match keep {
                Some(oid) => oid,
                None => repo.blob(&wrap()?)?,
            };
            root.insert(KEY_ENTRY, oid, 0o100644)?;
        }
        None => {
            if root.get(KEY_ENTRY)?.is_some() {
                root.remove(KEY_ENTRY)?;
            }
        }
    }
    let tree = repo.find_tree(root.write()?)?;
    let sig = signature()?;
    let parent_commit = match &incremental {
        Some(_) => prev.as_ref().map(|(c, _)| c.clone()),
        None => None,
    };
    let parents: Vec<&Commit<'_>> = parent_commit.iter().collect();
    let msg = format!(
        "walj sync: {} (epoch {}, {} journal bytes{})\n",
        manifest.name,
        manifest.epoch,
        manifest.journal_bytes,
        if incremental.is_none() && prev.is_some() { ", journal rewritten: new epoch" } else { "" }
    );
    let oid = repo.commit(None, &sig, &sig, &msg, &tree, &parents)?;
    let tr_written = tr.as_ref().map_or(0, |t| t.bytes_written);
    let mut b = built(Some(oid), false, segs.len() as u64, buf.len() as u64, added);
    b.images_withheld = withheld;
    b.transcript_bytes = tr_written;
    Ok(b)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn segments_end_at_line_ends_and_seal_at_the_size() {
        let line = vec![b'x'; 1000];
        let mut buf = Vec::new();
        for _ in 0..200 {
            buf.extend_from_slice(&line);
            buf.push(b'\n');
        }
        let segs = cut(&buf, SEGMENT_BYTES);
        assert_eq!(segs.len(), 4, "{segs:?}");
        for (a, b, sealed) in &segs {
            assert_eq!(buf[b - 1], b'\n');
            if *sealed {
                assert!((b - a) as u64 >= SEGMENT_BYTES);
            }
        }
        assert!(!segs[3].2);
        assert_eq!(segs.last().unwrap().1, buf.len());
        assert!(cut(b"", SEGMENT_BYTES).is_empty());
    }

    #[test]
    fn quoted_ids_are_found_whatever_the_key() {
        let a = "a".repeat(40);
        let line = format!(r#"{{"before":"{a}","x":"{}","after":null,"k":"{a}z"}}"#, "b".repeat(40));
        let ids: Vec<_> = quoted_ids(line.as_bytes()).collect();
        assert_eq!(ids, vec![a.as_str(), &"b".repeat(40)]);
    }
}
