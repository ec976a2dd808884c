//! What the dashboard loads, and when it loads it again: the journal's fold (through
//! [`crate::session::load`], as every command reads it), other machines' copies
//! ([`crate::sync::remotes`]), and the signatures polled to notice a change (the journal, the
//! copies, the selected entry's file). What it shows (the tree, the panes, the dialogs) is
//! [`super::app::App`]'s; its reload calls down here and applies what comes back.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::fold::{Fold, FoldOptions};
use crate::present::plural;
use crate::project::Project;
use crate::sync::remotes::{RemoteJournal, Signature};

/// Other machines' journals (`walj sync`'s copies), as the dashboard shows them.
#[derive(Default)]
pub struct SyncState {
    /// Other machines' journals, states from their manifests.
    pub remotes: Vec<RemoteJournal>,
    /// How many times the copies were read (tests, the bench).
    pub loads: usize,
}

/// Size and mtime of a file (None: not there, or unreadable metadata).
type FileSig = Option<(u64, SystemTime)>;

fn file_sig(path: &Path) -> FileSig {
    let m = std::fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()?))
}

/// The loading side's bookkeeping: what was read, from what, and when.
pub struct Source {
    journal_sig: FileSig,
    /// When the last reload started: the fold's disk checks (applied / drifted) and the
    /// cached diffs read the disk after it.
    loaded_at: SystemTime,
    /// The selected entry's file and its size and mtime when last looked at: polled like
    /// the journal, so a change made outside walj shows at once (only this one file).
    watched: Option<(PathBuf, FileSig)>,
    last_poll: Instant,
    last_status_check: Instant,
    /// Least time between two journal polls.
    poll: Duration,
    /// What the copies were loaded from (their signature, whether settled entries were kept):
    /// a reload reads them again only when it changed.
    remotes_from: Option<(Signature, bool)>,
    /// The copies' id indexes (for ids unique across every journal), read with them.
    remote_ids: Vec<Option<crate::fold::ids::IdIndex>>,
    /// The first copy that could not be read, said again at each reload.
    remote_warning: Option<String>,
}

impl Source {
    pub(crate) fn new(poll: Duration) -> Source {
        Source {
            journal_sig: None,
            loaded_at: SystemTime::now(),
            watched: None,
            last_poll: Instant::now(),
            last_status_check: Instant::now(),
            poll,
            remotes_from: None,
            remote_ids: Vec::new(),
            remote_warning: None,
        }
    }

    /// Reads the journal of `project` into `fold` (kept as it was when it cannot be read) and,
    /// when they changed, other machines' copies into `sync`. Returns what to tell the user,
    /// in order (each an error line; the last one stays on the status line).
    pub(crate) fn load(
        &mut self,
        project: &Project,
        keep_settled: bool,
        fold: &mut Fold,
        sync: &mut SyncState,
    ) -> Vec<String> {
        let mut said = Vec::new();
        self.loaded_at = SystemTime::now();
        self.journal_sig = file_sig(&project.journal);
        let opts = FoldOptions { keep_settled, session: None, all_commands: false };
        match crate::session::load::read(project, &opts) {
            Ok(read) => {
                let mut read_fold = read.fold;
                crate::session::load::short_ids(project, &mut read_fold);
                if let Some(p) = read.unfinished.first() {
                    said.push(format!("unfinished commands: {p}"));
                }
                let problems = read_fold.report.problems.len();
                *fold = read_fold;
                if problems > 0 {
                    said.push(format!(
                        "the journal has {} (skipped); `walj status` lists them",
                        plural(problems, "unreadable line", "unreadable lines")
                    ));
                }
            }
            Err(e) => said.push(format!("reading {}: {e}", project.journal.display())),
        }
        // Other machines' journals, as `walj recover` reads them: again only when one of them
        // (or this checkout's decisions about them) changed since they were read.
        let from = (crate::sync::remotes::signature(project), keep_settled);
        if self.remotes_from.as_ref() != Some(&from) {
            let (remotes, warnings) = crate::sync::remotes::load(project, &opts);
            self.remote_ids = remotes.iter().map(|r| r.ids().ok()).collect();
            sync.remotes = remotes;
            self.remote_warning = warnings.into_iter().next();
            self.remotes_from = Some(from);
            sync.loads += 1;
        }
        // Ids unique across all, this journal's new ones too.
        crate::session::load::share_ids_with(fold, &mut sync.remotes, &self.remote_ids);
        if let Some(r) = sync.remotes.first() {
            // Every id shown unique among this journal's and the copies' (typeable in the CLI).
            fold.ids = r.fold.ids.clone();
        }
        if let Some(w) = self.remote_warning.clone() {
            said.push(format!("another machine's journal: {w}"));
        }
        // A rebase or merge stopped half-way: said, as `recover` and the note say it.
        if let Some(op) = crate::git::operation_in_progress(&project.root) {
            said.push(format!("git: {op}: finish or abort it before reverting a whole session"));
        }
        // A Bash Post's images not yet copied into the store, as every reader says it.
        if let Some(line) = crate::report::pending_line(project) {
            said.push(line);
        }
        said
    }

    /// The next load reads other machines' copies again (`Refresh`).
    pub(crate) fn forget_remotes(&mut self) {
        self.remotes_from = None;
    }

    /// Whether a poll is due (at most one per `poll`); starts the next wait when it is.
    pub(crate) fn poll_due(&mut self) -> bool {
        if self.last_poll.elapsed() < self.poll {
            return false;
        }
        self.last_poll = Instant::now();
        true
    }

    /// Whether the journal's size or mtime, or another machine's copy (a sync ran), changed
    /// since the last load.
    pub(crate) fn changed(&self, project: &Project) -> bool {
        let copies_changed =
            || self.remotes_from.as_ref().is_some_and(|(sig, _)| *sig != crate::sync::remotes::signature(project));
        file_sig(&project.journal) != self.journal_sig || copies_changed()
    }

    /// Whether the live sessions' processes are due a look (every 2 s: a crash writes
    /// nothing to the journal); starts the next wait when they are.
    pub(crate) fn liveness_due(&mut self) -> bool {
        if self.last_status_check.elapsed() < Duration::from_secs(2) {
            return false;
        }
        self.last_status_check = Instant::now();
        true
    }

    /// Looks at the selected entry's file `path` (None: nothing selected): true when it
    /// changed since it was last looked at (or, newly selected, since the last load read
    /// the disk), so that everything is read again and its badge (applied, drifted) and its
    /// diff say what the disk holds now.
    pub(crate) fn watched_changed(&mut self, path: Option<PathBuf>) -> bool {
        let Some(path) = path else {
            self.watched = None;
            return false;
        };
        let sig = file_sig(&path);
        let stale = match &self.watched {
            Some((p, old)) if *p == path => *old != sig,
            // Newly selected: written since the disk was read for the fold and the diffs?
            // (A file gone before it was selected is caught by the next poll only if it
            // comes back: its badge was checked at the reload.)
            // File times come from the kernel's coarse clock (a tick behind `SystemTime::now`,
            // and whole seconds on some file systems): a file written just after the reload
            // can carry an earlier time, so anything as recent as 2 s before it counts (git's
            // "racily clean" rule); the cost is one more reload.
            _ => sig.is_some_and(|(_, mtime)| mtime + Duration::from_secs(2) >= self.loaded_at),
        };
        self.watched = Some((path, sig));
        stale
    }
}
