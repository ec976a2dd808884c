//! `walj bisect`: find the tool call that broke a command (a test, a build), and say how to
//! undo only it (issue 32).
//!
//! The journal's changes become [`steps`] (one per Edit/Write, one per Bash command with
//! its side effects, overlapping commands combined). State k is the working tree with every
//! touched path at its first pre-image and steps 1..k applied ([`state`]). The user's
//! command runs on states chosen by a binary search ([`search`]) with `git bisect run`'s
//! exit codes ([`run`]). The states live in a scratch copy of the tree ([`scratch`], the
//! default: the user's tree is never written) or, with `--in-place`, in the tree itself
//! through the triage revert/undo machinery ([`inplace`]).
//!
//! [`bisect`] returns a [`Report`]; `cmd::bisect` prints it. Nothing here prints.

pub mod inplace;
pub mod leftovers;
pub mod run;
pub mod scratch;
pub mod search;
pub mod state;
pub mod steps;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::fold::Fold;
use crate::project::Project;

pub use search::{Found, Verdict};
pub(crate) use state::Gap;
pub(crate) use state::Unbuildable;
pub(crate) use steps::{LeftOut, Scope, Step};

/// Why a bisect did not run, or stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BisectError {
    #[error("{0}")]
    Usage(String),
    /// Refused before anything was written.
    #[error("refused: {0}")]
    Refused(String),
    /// The command ran 128 and above, timed out, or walj was interrupted.
    #[error("aborted: {0}")]
    Aborted(String),
    /// Another program changed a file the in-place bisect wrote.
    #[error("stopped: {0}")]
    Changed(String),
    /// A revert or an undo of the in-place bisect failed.
    #[error("{0}")]
    Failed(String),
    #[error("reading the journal {path}: {source}")]
    Journal { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("running {command}: {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Disk(#[from] inplace::DiskError),
}

/// The journal's fold could not be read (the loader a bisect is given failed).
#[derive(Debug, thiserror::Error)]
#[error("reading the journal {path}: {message}")]
pub(crate) struct LoadError {
    pub path: PathBuf,
    /// What the loader said.
    pub message: String,
}

/// How a bisect reads the journal's fold afresh.
pub(crate) type Loader<'a> = &'a dyn Fn() -> Result<Fold, LoadError>;

/// What a bisect is asked to do.
pub(crate) struct Options {
    pub scope: Scope,
    pub argv: Vec<OsString>,
    pub timeout: Option<Duration>,
    pub runs: usize,
    pub verify: bool,
    pub in_place: bool,
    pub force: bool,
    pub with_ignored: bool,
}

/// Progress, for a bar on a terminal: (tests done, most tests expected, state being tested).
pub(crate) type Progress<'a> = &'a mut dyn FnMut(usize, usize, usize);

/// One state tested.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct StateRun {
    pub state: usize,
    pub verdict: Verdict,
    /// Exit codes of its runs; empty when the state could not be built (skipped unrun).
    pub codes: Vec<i32>,
    pub flaky: bool,
    #[serde(skip)]
    pub output: Vec<u8>,
}

/// `--verify`: the states around the culprit tested again.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Verify {
    pub before: Verdict,
    pub at: Verdict,
    pub monotonic: bool,
}

/// What a bisect found.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub in_place: bool,
    pub steps: Vec<Step>,
    pub left_out: Vec<LeftOut>,
    pub found: Found,
    pub tested: Vec<StateRun>,
    /// Command runs made.
    pub runs: usize,
    pub gaps: Vec<Gap>,
    pub unbuildable: Vec<Unbuildable>,
    pub verify: Option<Verify>,
    /// In place: paths whose state came out otherwise than defined (a gap), per state.
    pub off: Vec<(usize, Vec<String>)>,
    /// In place: files the command changed outside the touched paths (listed, not touched).
    pub changed_by_command: Vec<String>,
    /// Scratch: files of the tree the copy left out, and why (under a symbolic link).
    pub not_copied: Vec<String>,
    /// The disk differs from the last state the journal builds: it was tested too.
    pub disk: Option<DiskRun>,
    /// The culprit's step follows a change made outside the journal, and that change alone
    /// (on the state before it) already fails: the step is not the answer alone.
    pub outside: Option<Outside>,
    /// `--runs N`: states whose runs disagreed (the verdict is uncertain), and the states
    /// next to the culprit tested again.
    pub flaky: Option<Flaky>,
}

/// The working tree as it is, tested as a state of its own when it differs from the last
/// state the journal builds (edits after the session, a gap with `--since`).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct DiskRun {
    /// The touched paths whose bytes on disk differ from the last state.
    pub differs: Vec<String>,
    pub verdict: Verdict,
    pub codes: Vec<i32>,
    pub flaky: bool,
}

/// A change outside the journal that the culprit step's pre-image carries.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Outside {
    pub step: usize,
    pub paths: Vec<String>,
    /// The state before the step with only that change: bad.
    pub verdict: Verdict,
}

/// Flaky runs seen with `--runs N`.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Flaky {
    /// The states whose runs disagreed.
    pub states: Vec<usize>,
    /// The culprit's neighbours tested again: (state, verdict, the runs disagreed).
    pub retested: Vec<(usize, Verdict, bool)>,
    /// The retests agree with the answer.
    pub confirmed: bool,
}

impl Report {
    pub(crate) fn culprit(&self) -> Option<&Step> {
        match self.found {
            Found::Culprit(k) => self.steps.get(k - 1),
            _ => None,
        }
    }
    /// The output of the last passing and of the first failing state tested.
    pub(crate) fn outputs(&self) -> (Option<&StateRun>, Option<&StateRun>) {
        let (good, bad) = match self.found {
            Found::Culprit(k) => (k - 1, k),
            Found::Range { from, to } => (from - 1, to),
            _ => return (None, None),
        };
        let find = |s: usize| self.tested.iter().rev().find(|t| t.state == s && !t.codes.is_empty());
        (find(good), find(bad))
    }
    /// What the disk, tested as a state of its own, means for the answer, in the user's
    /// terms (`cmd`: the command as typed); `None` when the disk is the last state.
    pub(crate) fn disk_says(&self, cmd: &str) -> Option<String> {
        let d = self.disk.as_ref()?;
        let paths = d.differs.join(", ");
        Some(match (&self.found, d.verdict) {
            (Found::Culprit(k), Verdict::Good) => format!(
                "the tree passes now: the failure of step {k} was fixed after the session (not by a tool call), in {paths}"
            ),
            (Found::Culprit(_), Verdict::Bad) => {
                format!("the tree as it is fails too (it differs from the last state in {paths})")
            }
            (Found::NeverBad, Verdict::Bad) => {
                format!("the steps pass; the change made after the session (not a tool call) breaks `{cmd}`: {paths}")
            }
            (Found::NeverBad, Verdict::Good) => {
                format!("the tree as it is passes too (it differs from the last state in {paths})")
            }
            (_, v) => format!("the tree as it is tests {} (it differs from the last state in {paths})", v.as_str()),
        })
    }

    /// Why no culprit could be named (`None` when one is).
    pub(crate) fn reason(&self) -> Option<String> {
        let n = self.steps.len();
        Some(match &self.found {
            Found::Culprit(_) => return None,
            Found::Empty => "no step to bisect: the journal has no change walj can replay in this scope".to_string(),
            Found::AlreadyBad => {
                "the command already fails before the session (state 0, every step taken out) — nothing to bisect"
                    .to_string()
            }
            Found::NeverBad => {
                format!("the command passes at the last state (all {n} steps applied) — nothing to bisect")
            }
            Found::Untestable(0) => {
                "state 0 (every step taken out) cannot be tested: nothing to compare with".to_string()
            }
            Found::Untestable(k) => format!("the last state ({k}) cannot be tested"),
            Found::Range { from, to } => format!(
                "the first failing step is one of steps {from} to {to}: the states between could not be tested (exit 125 or an image walj lacks)"
            ),
        })
    }
}

/// Runs a bisect over the steps of `opts.scope`. `load` reads the journal's fold afresh (with
/// settled entries kept); in place it is read again around every revert and undo.
pub(crate) fn bisect(
    project: &Project,
    load: Loader<'_>,
    opts: &Options,
    progress: Progress<'_>,
) -> Result<Report, BisectError> {
    if opts.argv.is_empty() {
        return Err(BisectError::Usage("no command given: `walj bisect -- CMD [ARGS…]`".to_string()));
    }
    let fold = load()?;
    let (steps, left_out) = steps::steps(&fold, &project.journal, &opts.scope)?;
    let n = steps.len();
    let mut states = state::States::new(project, &steps);
    let unbuildable = states.unbuildable();
    let mut report = Report {
        in_place: opts.in_place,
        steps,
        left_out,
        found: Found::Empty,
        tested: Vec::new(),
        runs: 0,
        gaps: states.gaps.clone(),
        unbuildable: unbuildable.clone(),
        verify: None,
        off: Vec::new(),
        changed_by_command: Vec::new(),
        not_copied: Vec::new(),
        disk: None,
        outside: None,
        flaky: None,
    };
    if n == 0 {
        return Ok(report);
    }
    // The disk is a state too: the touched paths whose bytes differ from the last state.
    let disk_differs: Vec<String> = match states.blobs(n) {
        Ok(last) => last
            .iter()
            .filter(|(rel, want)| !project.resolve_rel(rel).is_ok_and(|abs| inplace::holds(&abs, want)))
            .map(|(rel, _)| rel.clone())
            .collect(),
        Err(_) => Vec::new(),
    };
    let temp = leftovers::TempDir::new()?;
    // Should this process be killed, the guard ends the command's process group and removes
    // the scratch folder.
    let guard = std::sync::Arc::new(leftovers::Guard::start());
    guard.folder(&temp.path);
    let mut runner = run::Runner::new(opts.argv.clone(), opts.timeout, opts.runs, temp.path.join("output"));
    runner.guard = Some(std::sync::Arc::clone(&guard));
    let bound = search::max_tests(n);
    // Where the command runs: the same folder of the tree as the user's, when inside it.
    let cwd_rel = std::env::current_dir().ok().and_then(|c| c.strip_prefix(&project.root).ok().map(PathBuf::from));
    let mut tree = if opts.in_place {
        let last = states.blobs(n).map_err(|u| BisectError::Refused(u.why))?;
        Tree::InPlace(inplace::InPlace::start(project, load, &report.steps, last, opts.force)?)
    } else {
        let root = temp.path.join("tree");
        fs_create(&root)?;
        let s = scratch::Scratch::copy(&project.root, &root, opts.with_ignored)?;
        report.not_copied = s.not_copied.clone();
        Tree::Scratch(s)
    };
    let before = if opts.in_place { Some(snapshot(project)) } else { None };
    let dir = match &tree {
        Tree::Scratch(s) => s.root.clone(),
        Tree::InPlace(_) => project.root.clone(),
    };
    let dir = match &cwd_rel {
        Some(rel) if dir.join(rel).is_dir() => dir.join(rel),
        _ => dir,
    };
    // Tested first, before any state is put in place: the copy (or the tree) is the disk.
    if !disk_differs.is_empty() {
        progress(0, bound, n);
        let t = runner.test_labeled(&dir, "disk")?;
        report.disk =
            Some(DiskRun { differs: disk_differs.clone(), verdict: t.verdict, codes: t.codes, flaky: t.flaky });
    }
    let mut tested: Vec<StateRun> = Vec::new();
    let mut off = Vec::new();
    let mut outside: Option<Outside> = None;
    // States that could not be built in the scratch copy (a link on the way): named, skipped.
    let mut not_built: Vec<Unbuildable> = Vec::new();
    // `carried`: instead of state k, the state before it with only the change made outside
    // the journal that step k's pre-image carries (scratch only; recorded in `outside`).
    let mut test = |k: usize, carried: bool, tested: &mut Vec<StateRun>| -> Result<Verdict, BisectError> {
        if carried {
            let Tree::Scratch(s) = &mut tree else { return Ok(Verdict::Skip) };
            let Some((contents, paths)) = states.contents_outside(k) else { return Ok(Verdict::Skip) };
            if s.set(&contents)?.is_some() {
                return Ok(Verdict::Skip);
            }
            let t = runner.test_labeled(&dir, &format!("{}+outside", k - 1))?;
            outside = Some(Outside { step: k, paths, verdict: t.verdict });
            return Ok(t.verdict);
        }
        progress(tested.len(), bound, k);
        let refused = |why: &str| not_built.iter().any(|u: &Unbuildable| u.state == k && u.why == why);
        if unbuildable.iter().any(|u| u.state == k) || not_built.iter().any(|u| u.state == k) {
            tested.push(StateRun {
                state: k,
                verdict: Verdict::Skip,
                codes: Vec::new(),
                flaky: false,
                output: Vec::new(),
            });
            return Ok(Verdict::Skip);
        }
        match &mut tree {
            Tree::Scratch(s) => {
                let contents = states.contents(k).map_err(|u| BisectError::Failed(u.why))?;
                if let Some(why) = s.set(&contents)? {
                    if !refused(&why) {
                        not_built.push(Unbuildable {
                            state: k,
                            why: format!("cannot be written beneath the scratch copy: {why}"),
                        });
                    }
                    tested.push(StateRun {
                        state: k,
                        verdict: Verdict::Skip,
                        codes: Vec::new(),
                        flaky: false,
                        output: Vec::new(),
                    });
                    return Ok(Verdict::Skip);
                }
            }
            Tree::InPlace(p) => {
                let want = states.blobs(k).map_err(|u| BisectError::Failed(u.why))?;
                let o = p.set(k, &want)?;
                if !o.is_empty() {
                    off.push((k, o));
                }
            }
        }
        let t = runner.test(&dir, k)?;
        tested.push(StateRun { state: k, verdict: t.verdict, codes: t.codes, flaky: t.flaky, output: t.output });
        Ok(t.verdict)
    };
    let result = search::bisect(n, |k| test(k, false, &mut tested));
    let result = result.and_then(|s| {
        let mut verify = None;
        if opts.verify
            && let Found::Culprit(k) = s.found
        {
            let b = test(k - 1, false, &mut tested)?;
            let a = test(k, false, &mut tested)?;
            verify = Some(Verify { before: b, at: a, monotonic: b == Verdict::Good && a == Verdict::Bad });
        }
        // Runs that disagreed make the answer uncertain: the states next to the culprit are
        // tested again before it is named.
        let mut flaky = None;
        let states_flaky: Vec<usize> = tested.iter().filter(|t| t.flaky).map(|t| t.state).collect();
        if !states_flaky.is_empty() {
            let mut retested = Vec::new();
            if let Found::Culprit(k) = s.found
                && verify.is_none()
            {
                test(k - 1, false, &mut tested)?;
                test(k, false, &mut tested)?;
            }
            if let Found::Culprit(k) = s.found {
                for st in [k - 1, k] {
                    if let Some(t) = tested.iter().rev().find(|t| t.state == st) {
                        retested.push((st, t.verdict, t.flaky));
                    }
                }
            }
            let confirmed = match s.found {
                Found::Culprit(k) => {
                    retested.iter().all(|(st, v, f)| !f && *v == if *st == k { Verdict::Bad } else { Verdict::Good })
                }
                _ => false,
            };
            flaky = Some(Flaky { states: states_flaky, retested, confirmed });
        }
        // A culprit that follows a change made outside the journal: is that change alone the failure?
        if let Found::Culprit(k) = s.found {
            test(k, true, &mut tested)?;
        }
        Ok((s, verify, flaky))
    });
    progress(tested.len(), bound, n);
    // In place: back to the last state whatever happened, unless a file changed under it.
    let restored = match &mut tree {
        Tree::InPlace(p) => match &result {
            Err(BisectError::Changed(_)) => Ok(()),
            _ => p.restore(),
        },
        Tree::Scratch(_) => Ok(()),
    };
    let (search, verify, flaky) = match (result, restored) {
        (Ok(r), Ok(())) => r,
        (Err(e), Ok(())) | (Ok(_), Err(e)) => return Err(e),
        (Err(e), Err(r)) => {
            return Err(BisectError::Failed(format!(
                "{e}; then putting the tree back failed: {r}. `walj undo` takes the bisect's last revert batch back"
            )));
        }
    };
    if let Some(before) = before {
        let after = snapshot(project);
        let touched: std::collections::BTreeSet<&str> = states.paths().collect();
        report.changed_by_command = after
            .iter()
            .filter(|(p, m)| !touched.contains(p.as_str()) && before.get(*p) != Some(m))
            .map(|(p, _)| p.clone())
            .chain(before.keys().filter(|p| !after.contains_key(*p) && !touched.contains(p.as_str())).cloned())
            .collect();
    }
    report.unbuildable.extend(not_built);
    report.found = search.found;
    report.tested = tested;
    report.runs = runner.invocations;
    report.verify = verify;
    report.flaky = flaky;
    report.outside = outside.filter(|o| o.verdict == Verdict::Bad);
    report.off = off;
    Ok(report)
}

fn fs_create(dir: &std::path::Path) -> Result<(), BisectError> {
    crate::fsutil::create_private_dir(dir).map_err(|e| BisectError::Io { path: dir.to_path_buf(), source: e })
}

enum Tree<'a> {
    Scratch(scratch::Scratch),
    InPlace(inplace::InPlace<'a>),
}

/// Size and modification time of the files a scratch copy would take (in place: to list
/// what the command itself changed).
fn snapshot(project: &Project) -> BTreeMap<String, (u64, Option<std::time::SystemTime>)> {
    let Ok(files) = scratch::files_to_copy(&project.root, false) else { return BTreeMap::new() };
    files
        .into_iter()
        .filter_map(|rel| {
            let m = std::fs::symlink_metadata(project.root.join(&rel)).ok()?;
            Some((crate::project::to_slash(&rel), (m.len(), m.modified().ok())))
        })
        .collect()
}

/// Whether reverting `step` alone (on the tree as it is) would conflict with a later step
/// on the same path: the paths that would, with the first conflicting line.
pub(crate) fn revert_conflicts(project: &Project, fold: &Fold, step: &Step) -> Vec<String> {
    let mut out = Vec::new();
    for c in &step.changes {
        let Some(e) = fold.entry(&c.entry) else { continue };
        match crate::triage::plan_revert(project, fold, e) {
            Ok(crate::triage::RevertPlan::Conflict { lines }) => {
                out.push(format!("{}: {}", c.path, lines.first().cloned().unwrap_or_default()))
            }
            Ok(crate::triage::RevertPlan::Refused { why }) => out.push(format!("{}: {why}", c.path)),
            _ => {}
        }
    }
    out
}
