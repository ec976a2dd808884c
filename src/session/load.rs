//! The fold every reader shows (`walj recover`, `log`, `status`, the triage commands, bisect,
//! `sessions list`, the TUI), read one way: the journal folded, the changes of commands a crash
//! cut off added ([`crate::bashsnap::killed`]), the disk checked, and ids shown unique across
//! this journal and other machines' copies ([`crate::sync::remotes`]).
//!
//! Nothing here prints: what the reading found besides the fold comes back in [`Read`], and each
//! face says it its own way (the commands on stderr, the TUI in its status line).

use std::io;

use crate::fold::ids::IdIndex;
use crate::fold::{Fold, FoldOptions};
use crate::project::Project;
use crate::sync::remotes::RemoteJournal;

/// A fold as [`read`] leaves it, with what the reading found besides.
pub(crate) struct Read {
    pub fold: Fold,
    /// Problems with the commands a crash cut off, in this journal.
    pub unfinished: Vec<String>,
}

/// The journal of `project` folded with `opts`, the changes of commands a crash cut off added
/// (recorded once nothing they started runs), the disk checked. The error is the journal's own (its path is
/// `project.journal`).
pub(crate) fn read(project: &Project, opts: &FoldOptions) -> io::Result<Read> {
    let mut fold = Fold::load(&project.journal, opts)?;
    let unfinished = crate::bashsnap::killed::reconcile(project, &mut fold, opts).problems;
    fold.check_disk(project);
    Ok(Read { fold, unfinished })
}

/// Every id of the journal read (its id index, and the fold's own entries), so that ids are
/// shown short ([`Fold::load_short_ids`]).
pub(crate) fn short_ids(project: &Project, fold: &mut Fold) {
    fold.load_short_ids(&project.journal);
    fold.ids = std::mem::take(&mut fold.ids).with_shown(fold.entries.iter().map(|e| e.id.as_str()));
}

/// Other machines' entries are shown unique against every id of this journal and of the
/// copies (`walj diff ID` looks here first, then in the copies). A copy's ids come from its
/// cached id index (`.walj/cache/remotes/<id>/ids.idx`, [`crate::sync::remotes`]).
pub(crate) fn share_ids(fold: &Fold, remotes: &mut [RemoteJournal]) {
    let indexes: Vec<_> = remotes.iter().map(|r| r.ids().ok()).collect();
    share_ids_with(fold, remotes, &indexes);
}

/// [`share_ids`] with the copies' id indexes already read (`None`: a copy whose ids could
/// not be read; its entries' ids count).
pub(crate) fn share_ids_with(fold: &Fold, remotes: &mut [RemoteJournal], indexes: &[Option<IdIndex>]) {
    let mut ids = fold.ids.clone();
    for (i, r) in remotes.iter().enumerate() {
        match indexes.get(i).and_then(Option::as_ref) {
            Some(theirs) => ids = ids.with_index(theirs.clone()),
            None => ids = ids.with_shown(r.fold.entries.iter().map(|e| e.id.as_str())),
        }
    }
    for r in remotes {
        r.fold.ids = ids.clone();
    }
}
