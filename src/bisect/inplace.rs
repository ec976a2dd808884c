//! `--in-place`: the states live in the working tree itself (build caches stay warm), with
//! the safety rules of issue 32:
//!
//! - refused while any session of the checkout is live;
//! - refused (without `--force`) unless every path it writes holds the last step's
//!   post-image now; paths it does not touch are never written, dirty or not;
//! - each state is a `walj revert` batch of the steps after it (the triage machinery: bytes
//!   stored and named in the journal before any write), and going back is `walj undo` of
//!   that batch. So a crash in the middle leaves a revert batch that `walj undo` takes back,
//!   and a marker (`.walj/bisect.json`) that `walj recover` reports;
//! - before each transition and before the restore, every written path must still hold what
//!   the bisect left there: if another program changed one, the bisect stops where it is,
//!   writes nothing more, and both versions are kept (the other program's in the file and
//!   in the store, the tree's own in the store, named by the revert records).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::fold::{Fold, SessionStatus};
use crate::journal::Blob;
use crate::project::Project;
use crate::triage::{self, RevertOptions};

use super::steps::Step;
use super::{BisectError, Loader};

/// The marker of an in-place bisect under way.
pub(crate) fn marker(project: &Project) -> PathBuf {
    project.dir.join("bisect.json")
}

/// What `walj recover` says about an in-place bisect that did not finish (its marker is
/// there): one line, or `None`. From the files alone (the hook's one small read); see
/// [`interrupted_with`].
pub(crate) fn interrupted(project: &Project) -> Option<String> {
    interrupted_with(project, None)
}

/// [`interrupted`], and with the journal's fold (settled entries kept) also when the files
/// are back but a revert batch of the bisect is still recorded (a kill after its records,
/// before its writes): `walj undo` takes it back, writing nothing.
pub(crate) fn interrupted_with(project: &Project, fold: Option<&Fold>) -> Option<String> {
    let text = std::fs::read_to_string(marker(project)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let started = v.get("started").and_then(|s| s.as_str()).unwrap_or("?");
    let pid = v.get("pid").and_then(serde_json::Value::as_u64).unwrap_or(0);
    let start = v.get("pstart").and_then(serde_json::Value::as_u64);
    // The tree is back at the last state (`walj undo` ran): nothing left to say.
    let back = v.get("paths").and_then(serde_json::Value::as_object).is_some_and(|paths| {
        paths.iter().all(|(rel, id)| {
            let want = match id.as_str() {
                Some("") | None => Blob::Absent,
                Some(id) => Blob::Id(id.to_string()),
            };
            project.resolve_rel(rel).is_ok_and(|abs| holds(&abs, &want))
        })
    });
    let running = match start {
        Some(start) => {
            crate::procinfo::liveness(crate::procinfo::ProcRef { pid: pid as u32, start })
                == crate::procinfo::Liveness::Running
        }
        None => false,
    };
    let recorded = || {
        fold.is_some_and(|fold| {
            v.get("entries").and_then(serde_json::Value::as_array).is_some_and(|ids| {
                ids.iter().filter_map(serde_json::Value::as_str).any(|id| {
                    fold.entry(id).and_then(|e| e.last_action()).is_some_and(|a| a.how == crate::journal::how::REVERTED)
                })
            })
        })
    };
    if back && !running && !recorded() {
        return None;
    }
    Some(if running {
        format!("an in-place `walj bisect` is running (pid {pid}, since {started}): the tree holds one of its states")
    } else {
        format!(
            "an in-place `walj bisect` started at {started} did not finish: the tree holds one of its states. \
             `walj undo` puts every file back (the last triage command is its revert batch)"
        )
    })
}

/// A file the in-place bisect would write that it cannot read as one.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DiskError {
    /// A folder, a link, a FIFO or a device where the file was: the bisect writes no such thing.
    #[error("{path}: not a regular file")]
    NotAFile { path: PathBuf },
    #[error("reading {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// The blob id (or absence) of the file at `abs` now; anything but a regular file is an error.
pub(crate) fn disk_blob(abs: &Path) -> Result<Blob, DiskError> {
    let io = |source| DiskError::Io { path: abs.to_path_buf(), source };
    match std::fs::symlink_metadata(abs) {
        Ok(m) if m.is_file() => crate::store::file_blob_id(abs).map(Blob::Id).map_err(io),
        Ok(_) => Err(DiskError::NotAFile { path: abs.to_path_buf() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Blob::Absent),
        Err(e) => Err(io(e)),
    }
}

/// Whether the file at `abs` holds `want` (a sampled identity for a file over the cap).
pub(crate) fn holds(abs: &Path, want: &Blob) -> bool {
    match want {
        Blob::Id(id) if crate::sampled::is_sampled(id) => crate::sampled::identity_of(abs).is_ok_and(|now| &now == id),
        _ => disk_blob(abs).is_ok_and(|now| &now == want),
    }
}

/// The in-place tree.
pub(crate) struct InPlace<'a> {
    project: &'a Project,
    load: Loader<'a>,
    /// Per step (index n-1), the entry ids a revert takes.
    entries: Vec<Vec<String>>,
    /// What each written path must hold now.
    expected: BTreeMap<String, Blob>,
    /// A revert batch of this bisect is in place (undone to go back to the last state).
    outstanding: bool,
    /// This bisect's run id, on its revert records (one operation in `walj ops`).
    run: u64,
}

impl<'a> InPlace<'a> {
    /// Checks the rules that let a bisect write the tree, and leaves its marker.
    /// `last`: every path at the last state.
    pub(crate) fn start(
        project: &'a Project,
        load: Loader<'a>,
        steps: &[Step],
        last: BTreeMap<String, Blob>,
        force: bool,
    ) -> Result<InPlace<'a>, BisectError> {
        let fold = load()?;
        if let Some(note) = interrupted_with(project, Some(&fold)) {
            return Err(BisectError::Refused(format!("{note}; bisect in place again once the tree is back")));
        }
        let live: Vec<String> = fold
            .sessions
            .iter()
            .filter(|s| s.status() == SessionStatus::Live)
            .map(|s| fold.ids.session(&s.session).to_string())
            .collect();
        if !live.is_empty() {
            return Err(BisectError::Refused(format!(
                "session{} {} of this checkout {} live: an agent may write the files while the bisect changes them. \
                 End {} first, or bisect in a scratch copy (without --in-place)",
                if live.len() == 1 { "" } else { "s" },
                live.join(", "),
                if live.len() == 1 { "is" } else { "are" },
                if live.len() == 1 { "it" } else { "them" }
            )));
        }
        // States are revert batches, and `walj revert` acts only on entries not resolved yet.
        let resolved: Vec<String> = steps
            .iter()
            .flat_map(|s| &s.changes)
            .filter_map(|c| fold.entry(&c.entry))
            .filter(|e| e.last_action().is_some())
            .map(|e| format!("{} ({}, {})", fold.ids.short(&e.id), e.path, e.state()))
            .collect();
        if !resolved.is_empty() {
            return Err(BisectError::Refused(format!(
                "in place, each state is a `walj revert`, which does not act on entries already resolved: {}. \
                 `walj undo ID` reopens one, or bisect in a scratch copy (without --in-place)",
                resolved.join(", ")
            )));
        }
        let mut differ = Vec::new();
        for (rel, want) in &last {
            let abs = project.resolve_rel(rel).map_err(|e| BisectError::Refused(e.to_string()))?;
            if let Err(e) = disk_blob(&abs) {
                return Err(BisectError::Refused(e.to_string()));
            }
            if !holds(&abs, want) {
                differ.push(rel.clone());
            }
        }
        if !differ.is_empty() && !force {
            return Err(BisectError::Refused(format!(
                "{} changed since the last step (the tree does not hold the last step's post-image), so the \
                 bisect would write over changes of yours. Commit or stash them, bisect in a scratch copy \
                 (without --in-place), or pass --force (those files are then part of every state written; \
                 `walj undo` brings them back)",
                differ.join(", ")
            )));
        }
        // From here on, what the disk holds is compared by full blob id.
        let mut expected = last;
        for (rel, b) in expected.iter_mut() {
            if let Ok(abs) = project.resolve_rel(rel)
                && let Ok(now) = disk_blob(&abs)
            {
                *b = now;
            }
        }
        project.ensure_dir().map_err(|e| BisectError::Io { path: project.dir.clone(), source: e })?;
        let paths: serde_json::Map<String, serde_json::Value> = expected
            .iter()
            .map(|(rel, b)| (rel.clone(), serde_json::Value::String(b.id().unwrap_or_default().to_string())))
            .collect();
        let entries: Vec<String> = steps.iter().flat_map(Step::entry_ids).collect();
        let mark = serde_json::json!({
            "paths": paths,
            "entries": entries,
            "pid": std::process::id(),
            "pstart": crate::procinfo::own_start(),
            "started": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        });
        crate::fsutil::atomic_write(&marker(project), mark.to_string().as_bytes(), None)
            .map_err(|e| BisectError::Io { path: marker(project), source: e })?;
        Ok(InPlace {
            project,
            load,
            entries: steps.iter().map(Step::entry_ids).collect(),
            expected,
            outstanding: false,
            run: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64 ^ u64::from(std::process::id())),
        })
    }

    /// Every written path holds what the bisect left there, or the bisect stops.
    fn check(&self) -> Result<(), BisectError> {
        let mut changed = Vec::new();
        for (rel, want) in &self.expected {
            let Ok(abs) = self.project.resolve_rel(rel) else { continue };
            let now = disk_blob(&abs).unwrap_or(Blob::Absent);
            if &now != want {
                // Keep the other program's bytes in the store too.
                let kept = crate::fsutil::read_regular(&abs)
                    .ok()
                    .and_then(|b| crate::store::Store::new(self.project.store_dir()).put(&b).ok());
                changed.push(match kept {
                    Some(id) => {
                        format!("{rel} (its new bytes are also kept in the store as {})", crate::fold::abbrev(&id, 10))
                    }
                    None => rel.clone(),
                });
            }
        }
        if changed.is_empty() {
            return Ok(());
        }
        Err(BisectError::Changed(format!(
            "another program changed {} while the bisect had a state in place: the bisect stopped and wrote nothing more. \
             The file keeps that program's bytes; the tree's own are in the store, named by the bisect's revert. \
             `walj undo` puts the other files back and refuses this one (`walj undo --force` writes the tree's \
             bytes back, keeping the new ones in the store)",
            changed.join(", ")
        )))
    }

    fn load(&self) -> Result<Fold, BisectError> {
        Ok((self.load)()?)
    }

    /// Back to the last state: `walj undo` of the outstanding batch.
    fn undo(&mut self) -> Result<(), BisectError> {
        if !self.outstanding {
            return Ok(());
        }
        let fold = self.load()?;
        let out =
            triage::undo(self.project, &fold, None, false, false).map_err(|e| BisectError::Failed(e.to_string()))?;
        if let Some(o) = out.iter().find(|o| o.concurrent) {
            return Err(BisectError::Changed(o.message.clone()));
        }
        self.outstanding = false;
        Ok(())
    }

    /// Puts state `k` in place: back to the last state, then a revert batch of steps k+1..n.
    /// `want`: every path at state `k`. Returns the paths that came out otherwise (a gap).
    pub(crate) fn set(&mut self, k: usize, want: &BTreeMap<String, Blob>) -> Result<Vec<String>, BisectError> {
        self.check()?;
        self.undo()?;
        let ids: Vec<String> = self.entries[k..].iter().flatten().cloned().collect();
        if !ids.is_empty() {
            let fold = self.load()?;
            let opts = RevertOptions {
                force: true,
                dry_run: false,
                confirmed_foreign: false,
                ahead: true,
                bisect: Some(self.run),
            };
            let out =
                triage::revert(self.project, &fold, &ids, opts).map_err(|e| BisectError::Failed(e.to_string()))?;
            self.outstanding = true;
            if let Some(o) = out.iter().find(|o| o.concurrent) {
                return Err(BisectError::Changed(o.message.clone()));
            }
        }
        let mut off = Vec::new();
        for (rel, w) in want {
            let Ok(abs) = self.project.resolve_rel(rel) else { continue };
            if !holds(&abs, w) {
                off.push(rel.clone());
            }
            self.expected.insert(rel.clone(), disk_blob(&abs).unwrap_or(Blob::Absent));
        }
        Ok(off)
    }

    /// Back to the last state, checked first; the marker goes once the tree is back.
    pub(crate) fn restore(&mut self) -> Result<(), BisectError> {
        self.check()?;
        self.undo()?;
        let _ = std::fs::remove_file(marker(self.project));
        Ok(())
    }
}
