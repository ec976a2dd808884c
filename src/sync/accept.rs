//! Fetched refs checked and materialised (docs/sync.md, "Readers").
//!
//! A fetched head is accepted when it descends from the head accepted before (fast-forward),
//! or when its manifest declares a higher epoch and names the head it replaced (a journal
//! rewritten on its machine). Anything else is refused and reported, and the last accepted
//! copy stays. Accepted journals are written under `.walj/remotes/<id>/`: the store first,
//! then the journal, then the manifest, then walj's `refs/walj/accepted/<id>`, so a sync killed
//! half-way redoes the work on the next run.

use std::path::Path;

use git2::{ObjectType, Oid, Repository, Tree};
use serde::Serialize;

use super::manifest::Manifest;
use super::publish::{MANIFEST, OBJECTS, SEGMENTS, SEGMENTS_PER_DIR, manifest_of};
use super::{ACCEPTED, FETCHED, Paths, SyncError, ref_oid, set_ref};
use crate::store::Store;

/// What a sync did with another journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Nothing new since the last sync.
    UpToDate,
    /// Seen for the first time.
    New,
    /// New lines (fast-forward).
    Updated,
    /// Its journal was rewritten on its machine (compaction, deletion): a new epoch.
    NewEpoch,
    /// Not accepted: see `detail`; the last accepted copy is kept.
    Refused,
    /// No longer on the remote; the last copy is kept.
    Gone,
    /// Its objects could not be fetched.
    FetchFailed,
    /// Encrypted, and no key here opens it (see `detail`); the last copy is kept.
    Locked,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict::UpToDate => "up to date",
            Verdict::New => "new",
            Verdict::Updated => "updated",
            Verdict::NewEpoch => "new epoch",
            Verdict::Refused => "refused",
            Verdict::Gone => "gone from the remote",
            Verdict::FetchFailed => "fetch failed",
            Verdict::Locked => "locked",
        }
    }
    /// Whether the journal's copy changes (or would, in a dry run).
    pub(crate) fn changes(self) -> bool {
        matches!(self, Verdict::New | Verdict::Updated | Verdict::NewEpoch)
    }
}

/// Another journal, as this sync saw it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Seen {
    pub journal: String,
    pub name: Option<String>,
    pub verdict: Verdict,
    pub detail: Option<String>,
    pub head: Option<String>,
    pub epoch: Option<u64>,
    pub synced_at: Option<String>,
    pub journal_bytes: Option<u64>,
    pub sessions: usize,
    pub unresolved: usize,
    /// Images the tree names that the remote did not have (reported, not fatal).
    pub missing_images: usize,
}

impl Seen {
    fn new(journal: &str, verdict: Verdict) -> Seen {
        Seen {
            journal: journal.to_string(),
            name: None,
            verdict,
            detail: None,
            head: None,
            epoch: None,
            synced_at: None,
            journal_bytes: None,
            sessions: 0,
            unresolved: 0,
            missing_images: 0,
        }
    }
    fn with_manifest(mut self, m: &Manifest) -> Seen {
        self.name = Some(m.name.clone());
        self.epoch = Some(m.epoch);
        self.synced_at = Some(m.synced_at.clone());
        self.journal_bytes = Some(m.journal_bytes);
        self.sessions = m.sessions.len();
        self.unresolved = m.sessions.iter().map(|s| s.unresolved).sum();
        self
    }
}

/// Checks a fetched head of journal `id` against the head accepted before.
pub(crate) fn check(
    repo: &Repository,
    id: &str,
    new: Oid,
    accepted: Option<Oid>,
) -> Result<(Manifest, Verdict), String> {
    let c = repo.find_commit(new).map_err(|_| "it does not point to a commit".to_string())?;
    let m = manifest_of(repo, &c)?;
    if m.journal != id {
        return Err(format!("its manifest names journal {:?}, not {id}", m.journal));
    }
    let verdict = match accepted {
        None => Verdict::New,
        Some(a) if a == new => Verdict::UpToDate,
        Some(a) if repo.graph_descendant_of(new, a).unwrap_or(false) => Verdict::Updated,
        Some(a) => {
            let before = repo.find_commit(a).ok().and_then(|c| manifest_of(repo, &c).ok()).map_or(0, |m| m.epoch);
            if m.epoch > before && m.previous.is_some() {
                Verdict::NewEpoch
            } else {
                return Err(format!(
                    "its history does not extend the one accepted before (epoch {}, and no new epoch declared): rewritten or forged",
                    m.epoch
                ));
            }
        }
    };
    Ok((m, verdict))
}

/// What another machine's payload may still inflate to (`[limits]`, `walj sync --max-…`):
/// every blob of a fetched tree is sized first (`odb.read_header`: nothing inflated) and
/// counted, and what a manifest claims is checked before anything is allocated for it. Past
/// a bound the journal is refused (its last copy stays), never read whole.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    limits: crate::config::Limits,
    left: u64,
}

impl Budget {
    pub(crate) fn new(limits: crate::config::Limits) -> Budget {
        Budget { limits, left: limits.max_decoded }
    }

    fn over(&self, what: &str, size: u64, key: &str, flag: &str, bound: u64) -> String {
        format!(
            "{what} is {size} bytes, over {key} ({bound}); if you trust it, raise it with `walj sync {flag} N` or `{key} = N` under [limits] in .walj/config.toml"
        )
    }

    /// Refuses a size a manifest claims (`what`) past what may still be read.
    pub(crate) fn claim(&self, what: &str, size: u64) -> Result<(), String> {
        if size > self.left {
            return Err(self.over(what, size, "max_decoded", "--max-decoded", self.limits.max_decoded));
        }
        Ok(())
    }

    /// Blob `oid` (`what`, for messages) when it fits: `Ok(None)` when the fetched objects
    /// lack it.
    pub(crate) fn blob<'r>(
        &mut self,
        repo: &'r Repository,
        oid: Oid,
        what: &str,
    ) -> Result<Option<git2::Blob<'r>>, String> {
        let Ok((size, kind)) = repo.odb().and_then(|o| o.read_header(oid)) else { return Ok(None) };
        if kind != ObjectType::Blob {
            return Ok(None);
        }
        let size = size as u64;
        if size > self.limits.max_object {
            return Err(self.over(what, size, "max_object", "--max-object", self.limits.max_object));
        }
        if size > self.left {
            return Err(self.over(what, size, "max_decoded", "--max-decoded", self.limits.max_decoded));
        }
        self.left -= size;
        Ok(repo.find_blob(oid).ok())
    }
}

pub(crate) fn subtree<'r>(repo: &'r Repository, t: &Tree<'_>, name: &str) -> Result<Option<Tree<'r>>, String> {
    match t.get_name(name) {
        None => Ok(None),
        Some(e) if e.kind() == Some(ObjectType::Tree) => {
            repo.find_tree(e.id()).map(Some).map_err(|_| format!("{name}/ is missing from the fetched objects"))
        }
        Some(_) => Err(format!("{name} is not a folder")),
    }
}

/// The bytes of a segments tree (`dir/segment`), in order, decrypted with `key` when sealed,
/// checked against the `count` and `bytes` a manifest gives.
pub(crate) fn read_segments(
    repo: &Repository,
    segs: Option<Tree<'_>>,
    count: u64,
    bytes: u64,
    key: Option<&crate::crypt::DataKey>,
    budget: &mut Budget,
) -> Result<Vec<u8>, String> {
    budget.claim("its journal (as its manifest says)", bytes)?;
    let mut out = Vec::with_capacity(usize::try_from(bytes).unwrap_or(0));
    let mut next = 0u64;
    if let Some(segs) = segs {
        for dir in segs.iter() {
            let dname = dir.name().unwrap_or("");
            let d = subtree(repo, &segs, dname)?.ok_or("segments/ holds a file")?;
            for seg in d.iter() {
                let n = seg.name().unwrap_or("");
                let i: u64 = n.parse().map_err(|_| format!("segments/{dname}/{n} is not a segment number"))?;
                if i != next || format!("{:04}", i / SEGMENTS_PER_DIR) != dname || n.len() != 6 {
                    return Err(format!("segment {dname}/{n} is out of order (expected segment {next})"));
                }
                let blob = budget
                    .blob(repo, seg.id(), &format!("segment {dname}/{n}"))?
                    .ok_or_else(|| format!("segment {dname}/{n} is missing or not a file"))?;
                match key {
                    Some(k) => out.extend_from_slice(
                        &k.decrypt(blob.content()).map_err(|e| format!("segment {dname}/{n}: {e}"))?,
                    ),
                    None => out.extend_from_slice(blob.content()),
                }
                next += 1;
            }
        }
    }
    if next != count || out.len() as u64 != bytes {
        return Err(format!(
            "its segments hold {} bytes in {next} segments; the manifest says {bytes} in {count}",
            out.len(),
        ));
    }
    Ok(out)
}

/// The journal's bytes: its segments, in order, checked against the manifest.
pub(crate) fn journal_bytes(
    repo: &Repository,
    tree: &Tree<'_>,
    m: &Manifest,
    key: Option<&crate::crypt::DataKey>,
    budget: &mut Budget,
) -> Result<Vec<u8>, String> {
    read_segments(repo, subtree(repo, tree, SEGMENTS)?, m.segments, m.journal_bytes, key, budget)
}

/// Writes the images an encrypted tree holds for the ids `journal` names into `store` (those
/// it lacks): each found by its keyed name, decrypted, checked against its id. Returns how
/// many the fetched objects did not have.
fn sealed_images(
    repo: &Repository,
    tree: &Tree<'_>,
    journal: &[u8],
    store: &Store,
    key: &crate::crypt::DataKey,
    budget: &mut Budget,
) -> Result<usize, String> {
    let objs = subtree(repo, tree, OBJECTS)?;
    let mut missing = 0;
    let mut seen = std::collections::HashSet::new();
    let mut batch: Vec<(String, Vec<u8>)> = Vec::new();
    for line in journal.split(|&b| b == b'\n') {
        for id in super::publish::quoted_ids(line) {
            if !seen.insert(id.to_string()) || store.contains(id) {
                continue;
            }
            let name = key.digest("image", id.as_bytes());
            let (xx, rest) = name.split_at(2);
            let Some(entry) = objs.as_ref().and_then(|o| o.get_path(Path::new(&format!("{xx}/{rest}"))).ok()) else {
                // Not published (never captured, over the cap, not stored): nothing to fetch.
                continue;
            };
            let Some(blob) = budget.blob(repo, entry.id(), &format!("image {id}"))? else {
                missing += 1;
                continue;
            };
            let plain = key.decrypt(blob.content()).map_err(|e| format!("image {id}: {e}"))?;
            if crate::store::blob_id(&plain) != id {
                return Err(format!("the image named {id} holds other bytes"));
            }
            batch.push((id.to_string(), plain));
            if batch.len() >= 256 {
                store.put_batch(&batch).map_err(|e| e.to_string())?;
                batch.clear();
            }
        }
    }
    store.put_batch(&batch).map_err(|e| e.to_string())?;
    Ok(missing)
}

/// Writes the images the tree names into `store` (those it lacks). Returns how many the
/// fetched objects did not have.
fn images(repo: &Repository, tree: &Tree<'_>, store: &Store, budget: &mut Budget) -> Result<usize, String> {
    let Some(objs) = subtree(repo, tree, OBJECTS)? else { return Ok(0) };
    let mut missing = 0;
    let mut batch: Vec<(String, Vec<u8>)> = Vec::new();
    let flush = |batch: &mut Vec<(String, Vec<u8>)>| -> Result<(), String> {
        store.put_batch(batch).map_err(|e| e.to_string())?;
        batch.clear();
        Ok(())
    };
    for dir in objs.iter() {
        let xx = dir.name().unwrap_or("").to_string();
        let Some(d) = subtree(repo, &objs, &xx)? else { continue };
        for e in d.iter() {
            let id = format!("{xx}{}", e.name().unwrap_or(""));
            if e.id().to_string() != id {
                return Err(format!("objects/{xx}/{} does not hold the object it names", e.name().unwrap_or("")));
            }
            if store.contains(&id) {
                continue;
            }
            match budget.blob(repo, e.id(), &format!("image {id}"))? {
                Some(b) => batch.push((id, b.content().to_vec())),
                None => missing += 1,
            }
            if batch.len() >= 256 {
                flush(&mut batch)?;
            }
        }
    }
    flush(&mut batch)?;
    Ok(missing)
}

/// The folder of another journal's copy.
pub(crate) fn journal_dir(paths: &Paths, id: &str) -> std::path::PathBuf {
    paths.remotes.join(id)
}

/// Writes journal `id`'s copy from commit `head` (opened with `key` when sealed). Returns
/// the images missing.
fn materialise(
    repo: &Repository,
    paths: &Paths,
    id: &str,
    head: Oid,
    m: &Manifest,
    key: Option<&crate::crypt::DataKey>,
    budget: &mut Budget,
) -> Result<usize, String> {
    let tree = repo.find_commit(head).and_then(|c| c.tree()).map_err(|e| e.message().to_string())?;
    let bytes = journal_bytes(repo, &tree, m, key, budget)?;
    check_session_ids(&bytes)?;
    let dir = journal_dir(paths, id);
    let io = |what: &str, p: &Path, e: std::io::Error| format!("{what} {}: {e}", p.display());
    crate::fsutil::create_private_dir(&dir).map_err(|e| io("creating", &dir, e))?;
    let store = Store::new(dir.join("store"));
    let missing = match key {
        Some(k) => sealed_images(repo, &tree, &bytes, &store, k, budget)?,
        None => images(repo, &tree, &store, budget)?,
    };
    let before = read_copy(paths, id).map(|b| b.transcripts).unwrap_or_default();
    super::transcripts::materialise(repo, &tree, &m.transcripts, &before, &dir, key, budget)?;
    let journal = dir.join("journal.jsonl");
    crate::fsutil::atomic_write(&journal, &bytes, Some(0o600)).map_err(|e| io("writing", &journal, e))?;
    let mpath = dir.join(MANIFEST);
    crate::fsutil::atomic_write(&mpath, &m.to_bytes(), Some(0o600)).map_err(|e| io("writing", &mpath, e))?;
    Ok(missing)
}

/// Checks every fetched journal but `own` and, unless `dry_run`, materialises those accepted.
/// `fetch_failed`: journals whose fetch failed, with git's reason.
pub(crate) fn accept_all(
    repo: &Repository,
    paths: &Paths,
    own: &str,
    dry_run: bool,
    fetch_failed: &[(String, String)],
    opener: &mut super::seal::Opener<'_>,
    limits: crate::config::Limits,
) -> Result<Vec<Seen>, SyncError> {
    let mut out = Vec::new();
    let mut fetched_ids = std::collections::BTreeSet::new();
    let mut refs: Vec<(String, Oid)> = Vec::new();
    for r in repo.references_glob(&format!("{FETCHED}*"))? {
        let r = r?;
        if let (Ok(name), Some(oid)) = (r.name(), r.target()) {
            refs.push((name.to_string(), oid));
        }
    }
    refs.sort();
    for (name, new) in refs {
        let tail = name.strip_prefix(FETCHED).unwrap_or(&name);
        let Some(id) = super::ref_id(&name, FETCHED) else {
            let mut s = Seen::new(tail, Verdict::Refused);
            s.detail = Some(format!("refs/walj/journals/{tail} is not named by a journal id; ignored"));
            out.push(s);
            continue;
        };
        fetched_ids.insert(id.to_string());
        if id == own {
            continue;
        }
        let accepted_ref = format!("{ACCEPTED}{id}");
        let accepted = ref_oid(repo, &accepted_ref);
        let have_copy = journal_dir(paths, id).join(MANIFEST).is_file();
        let mut seen = match check(repo, id, new, accepted) {
            Err(why) => {
                let mut s = Seen::new(id, Verdict::Refused);
                s.detail = Some(why);
                if let Some(m) = read_copy(paths, id) {
                    s.name = Some(m.name);
                }
                out.push(s);
                continue;
            }
            Ok((m, v)) => {
                let mut s = Seen::new(id, v).with_manifest(&m);
                s.head = Some(new.to_string());
                if (v == Verdict::UpToDate && have_copy) || dry_run {
                    out.push(s);
                    continue;
                }
                let key = repo
                    .find_commit(new)
                    .and_then(|c| c.tree())
                    .map_err(|e| e.message().to_string())
                    .and_then(|t| opener.open(repo, &t, id, &m));
                let key = match key {
                    Ok(k) => k,
                    Err(why) => {
                        s.verdict = Verdict::Locked;
                        s.detail = Some(why);
                        out.push(s);
                        continue;
                    }
                };
                match materialise(repo, paths, id, new, &m, key.as_ref(), &mut Budget::new(limits)) {
                    Ok(missing) => {
                        s.missing_images = missing;
                        set_ref(repo, &accepted_ref, Some(new))?;
                        if v == Verdict::UpToDate {
                            s.verdict = Verdict::Updated;
                        }
                    }
                    Err(why) => {
                        s.verdict = Verdict::Refused;
                        s.detail = Some(format!("damaged: {why}"));
                    }
                }
                s
            }
        };
        if seen.missing_images > 0 && seen.detail.is_none() {
            seen.detail = Some(format!("{} images missing on the remote", seen.missing_images));
        }
        out.push(seen);
    }
    for (id, why) in fetch_failed {
        if id != own {
            let mut s = Seen::new(id, Verdict::FetchFailed);
            s.detail = Some(why.clone());
            out.push(s);
        }
        fetched_ids.insert(id.clone());
    }
    for r in repo.references_glob(&format!("{ACCEPTED}*"))? {
        let r = r?;
        let Some(id) = r.name().ok().and_then(|n| super::ref_id(n, ACCEPTED)) else { continue };
        if !fetched_ids.contains(id) {
            let mut s = Seen::new(id, Verdict::Gone);
            if let Some(m) = read_copy(paths, id) {
                s = s.with_manifest(&m);
                s.verdict = Verdict::Gone;
            }
            out.push(s);
        }
    }
    Ok(out)
}

/// Refuses another machine's journal when a record names a session id walj does not accept
/// from others ([`crate::session::bundle::is_session_id`]): such ids name files here and are
/// offered to shells by completions.
fn check_session_ids(journal: &[u8]) -> Result<(), String> {
    for (i, line) in journal.split(|&b| b == b'\n').enumerate() {
        let Ok(view) = crate::journal::classify(i as u64 + 1, line) else { continue };
        let s = view.session_key();
        if !s.is_empty() && !crate::session::bundle::is_session_id(s) {
            return Err(format!(
                "line {}: session id {:?} is not one walj accepts (1 to 128 of A-Z a-z 0-9 . _ -)",
                i + 1,
                s.chars().take(64).collect::<String>()
            ));
        }
    }
    Ok(())
}

/// The manifest of journal `id`'s copy, when there is one.
pub(crate) fn read_copy(paths: &Paths, id: &str) -> Option<Manifest> {
    let bytes = std::fs::read(journal_dir(paths, id).join(MANIFEST)).ok()?;
    serde_json::from_slice(&bytes).ok()
}
