//! State k of a bisect (issue 32): the working tree with every path the steps touch set to
//! its first pre-image (a created file absent), then steps 1..k applied from their
//! post-images. Both modes (scratch and in place) build the same states from this.
//!
//! Where a step's pre-image of a path differs from the post-image the step before left
//! (something outside the journal changed the file in between), the states between the two
//! are not what the disk held then: a named [`Gap`]. Where an image is not available (never
//! captured, over the capture cap, missing from the store), the states that need it cannot
//! be built: [`Unbuildable`], which the search skips.

use std::collections::{BTreeMap, HashMap};

use crate::journal::Blob;
use crate::project::Project;
use crate::store::{Store, StoreError};

use super::steps::Step;

/// A path whose history has a change walj did not record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Gap {
    pub path: String,
    /// The step whose pre-image differs from what the previous step (`after`, 0 = none
    /// before) left on this path.
    pub step: usize,
    pub after: usize,
}

/// A state that cannot be built, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Unbuildable {
    pub state: usize,
    pub why: String,
}

/// What a path holds at one state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Content {
    Absent,
    Bytes(Vec<u8>),
}

impl Content {
    pub(crate) fn blob(&self) -> Blob {
        match self {
            Content::Absent => Blob::Absent,
            Content::Bytes(b) => Blob::Id(crate::store::blob_id(b)),
        }
    }
}

/// One touch of a path: (step number, pre-image, post-image, nocap).
type Touch = (usize, Option<Blob>, Option<Blob>, Option<String>);

/// Every state of a list of steps, as blob ids per path.
pub(crate) struct States {
    pub n: usize,
    /// Per path, its touches in step order.
    touches: BTreeMap<String, Vec<Touch>>,
    pub gaps: Vec<Gap>,
    objects: Objects,
}

impl States {
    pub(crate) fn new(project: &Project, steps: &[Step]) -> States {
        let mut touches: BTreeMap<String, Vec<Touch>> = BTreeMap::new();
        for s in steps {
            for c in &s.changes {
                touches.entry(c.path.clone()).or_default().push((
                    s.n,
                    c.before.clone(),
                    c.after.clone(),
                    c.nocap.clone(),
                ));
            }
        }
        let mut gaps = Vec::new();
        for (path, t) in &touches {
            for w in t.windows(2) {
                let (prev, cur) = (&w[0], &w[1]);
                if prev.2.is_some() && cur.1.is_some() && prev.2 != cur.1 {
                    gaps.push(Gap { path: path.clone(), step: cur.0, after: prev.0 });
                }
            }
        }
        States { n: steps.len(), touches, gaps, objects: Objects::new(project) }
    }

    /// Every path a state writes.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        self.touches.keys().map(String::as_str)
    }

    /// The blob `path` holds at state `k` (`None`: walj recorded none), and where it comes from.
    fn blob_at(&self, path: &str, k: usize) -> (Option<&Blob>, Option<&str>, &'static str, usize) {
        let t = &self.touches[path];
        match t.iter().rev().find(|t| t.0 <= k) {
            Some(last) => (last.2.as_ref(), last.3.as_deref(), "post-image", last.0),
            None => (t[0].1.as_ref(), t[0].3.as_deref(), "pre-image", t[0].0),
        }
    }

    /// The blob id (or absence) of every path at state `k`, without reading the store.
    pub(crate) fn blobs(&self, k: usize) -> Result<BTreeMap<String, Blob>, Unbuildable> {
        let mut out = BTreeMap::new();
        for path in self.touches.keys() {
            match self.blob_at(path, k) {
                (Some(b), _, _, _) => {
                    out.insert(path.clone(), b.clone());
                }
                (None, _, what, step) => {
                    return Err(Unbuildable {
                        state: k,
                        why: format!("step {step} recorded no {what} of {path} (its end is unknown)"),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The content of every path at state `k`.
    pub(crate) fn contents(&mut self, k: usize) -> Result<BTreeMap<String, Content>, Unbuildable> {
        let blobs = self.blobs(k)?;
        let mut out = BTreeMap::new();
        for (path, blob) in blobs {
            let content = match &blob {
                Blob::Absent => Content::Absent,
                Blob::Id(id) => {
                    let (_, nocap, what, step) = self.blob_at(&path, k);
                    let nocap = nocap.map(str::to_string);
                    match self.objects.get(id) {
                        Ok(Some(b)) => Content::Bytes(b),
                        // Not stored (over the capture cap, say), but the file holds it now.
                        Ok(None) if let Some(b) = self.objects.on_disk(&path, id) => Content::Bytes(b),
                        Ok(None) => {
                            let why = match nocap.as_deref() {
                                Some(n) => format!("was not captured ({n})"),
                                None => "is missing from the store".to_string(),
                            };
                            return Err(Unbuildable {
                                state: k,
                                why: format!(
                                    "the {what} of {path} at step {step} ({}) {why}",
                                    crate::fold::abbrev(id, 10)
                                ),
                            });
                        }
                        Err(e) => {
                            return Err(Unbuildable { state: k, why: format!("reading the {what} of {path}: {e}") });
                        }
                    }
                }
            };
            out.insert(path, content);
        }
        Ok(out)
    }

    /// State `k - 1` with only the changes made outside the journal just before step `k`
    /// (every gap path of step `k` at step `k`'s pre-image), and those paths. `None` when
    /// step `k` follows no gap or the state cannot be built.
    pub(crate) fn contents_outside(&mut self, k: usize) -> Option<(BTreeMap<String, Content>, Vec<String>)> {
        if k == 0 {
            return None;
        }
        let paths: Vec<String> = self.gaps.iter().filter(|g| g.step == k).map(|g| g.path.clone()).collect();
        if paths.is_empty() {
            return None;
        }
        let mut out = self.contents(k - 1).ok()?;
        for path in &paths {
            let pre = self.touches.get(path)?.iter().find(|t| t.0 == k)?.1.clone()?;
            let content = match pre {
                Blob::Absent => Content::Absent,
                Blob::Id(id) => match self.objects.get(&id) {
                    Ok(Some(b)) => Content::Bytes(b),
                    _ => return None,
                },
            };
            out.insert(path.clone(), content);
        }
        Some((out, paths))
    }

    /// The states `0..=n` that cannot be built (each with its first reason).
    pub(crate) fn unbuildable(&mut self) -> Vec<Unbuildable> {
        (0..=self.n).filter_map(|k| self.contents(k).err()).collect()
    }
}

/// Reads images: the store first, then the project's git objects (ids are git blob ids).
struct Objects {
    store: Store,
    root: std::path::PathBuf,
    repo: Option<Option<git2::Repository>>,
    cache: HashMap<String, Option<Vec<u8>>>,
}

impl Objects {
    fn new(project: &Project) -> Objects {
        Objects {
            store: Store::new(project.store_dir()),
            root: project.root.clone(),
            repo: None,
            cache: HashMap::new(),
        }
    }

    /// The bytes of `rel` in the working tree when their id is `id`.
    fn on_disk(&self, rel: &str, id: &str) -> Option<Vec<u8>> {
        // Read beneath the root through no link: a file under a linked folder is not the project's.
        let (parent, name) = crate::fsutil::name::split_plain(rel)?;
        let dir = crate::fsutil::Dir::open(&self.root).ok()?.open_beneath(&parent, false).ok()?;
        if crate::sampled::is_sampled(id) {
            // A file over the cap is known by its sampled identity only: the same file untouched.
            if !matches!(dir.kind(&name), Ok(crate::fsutil::beneath::Kind::File { .. })) {
                return None;
            }
            let same = crate::sampled::identity_of(&dir.join(&name)).ok()? == id;
            return if same { dir.read_regular(&name).ok().flatten() } else { None };
        }
        let b = dir.read_regular(&name).ok().flatten()?;
        (crate::store::blob_id(&b) == id).then_some(b)
    }

    fn get(&mut self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(b) = self.cache.get(id) {
            return Ok(b.clone());
        }
        let found = match self.store.get(id) {
            Ok(b) => Some(b),
            Err(StoreError::Missing(_)) => {
                let root = &self.root;
                let repo = self.repo.get_or_insert_with(|| git2::Repository::open(root).ok());
                repo.as_ref()
                    .and_then(|r| git2::Oid::from_str(id).ok().and_then(|oid| r.find_blob(oid).ok()))
                    .map(|b| b.content().to_vec())
            }
            Err(e) => return Err(e),
        };
        self.cache.insert(id.to_string(), found.clone());
        Ok(found)
    }
}
