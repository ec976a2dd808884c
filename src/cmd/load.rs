//! The commands' fold: [`crate::session::load`] read, with what it found said on stderr so
//! the report itself stays clean.

use anyhow::{Context, bail};

use crate::fold::{Fold, FoldOptions};
use crate::present::shown;
use crate::project::Project;

/// Prints what the reader skipped, on stderr, so the report itself stays clean.
pub(crate) fn warn_problems(fold: &Fold) {
    let n = fold.report.problems.len();
    for p in fold.report.problems.iter().take(10) {
        eprintln!("walj: warning: journal {}", shown(&p.to_string()));
    }
    if n > 10 {
        eprintln!("walj: warning: … and {} more journal problems", n - 10);
    }
}

/// The fold of `opts`, checked and reconciled (see [`load_fold`]), with every id of the
/// journal read so that ids are shown short ([`Fold::load_short_ids`]).
pub(crate) fn load(project: &Project, opts: &FoldOptions) -> anyhow::Result<Fold> {
    let mut fold = load_fold(project, opts)?;
    crate::session::load::short_ids(project, &mut fold);
    Ok(fold)
}

/// The fold of `opts`: `--session` checked, the changes of commands a crash cut off added,
/// the disk checked, the journal's problems warned about.
pub(crate) fn load_fold(project: &Project, opts: &FoldOptions) -> anyhow::Result<Fold> {
    let read =
        crate::session::load::read(project, opts).with_context(|| format!("reading {}", project.journal.display()))?;
    for problem in &read.unfinished {
        eprintln!("walj: warning: unfinished commands: {}", shown(problem));
    }
    let mut fold = read.fold;
    check_session(&fold, opts.session.as_deref())?;
    fold.read_head(&project.root);
    warn_problems(&fold);
    Ok(fold)
}

/// `--session SID` (a fold loaded with that filter) must name one session of the journal.
pub(crate) fn check_session(fold: &Fold, session: Option<&str>) -> anyhow::Result<()> {
    let Some(s) = session.filter(|s| !s.is_empty()) else { return Ok(()) };
    match fold.sessions.len() {
        0 => bail!("no session matches {s:?}; `walj sessions list` shows the sessions of this project"),
        1 => Ok(()),
        _ => bail!(
            "{s:?} is ambiguous; it matches sessions {}",
            fold.sessions.iter().map(|x| x.session.as_str()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Other machines' journals kept by `walj sync` (read-only copies), folded with `opts`;
/// a copy that cannot be read is one warning line.
pub(crate) fn remotes(project: &Project, opts: &FoldOptions) -> Vec<crate::sync::remotes::RemoteJournal> {
    let (remotes, warnings) = crate::sync::remotes::load(project, opts);
    for w in warnings {
        eprintln!("walj: warning: {}", shown(&w.to_string()));
    }
    remotes
}
