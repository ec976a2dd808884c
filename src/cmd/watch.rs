//! `walj watch` (hidden): the per-checkout watcher of Bash snapshots, started detached by a
//! hook (src/bashsnap.rs), never by hand. The work is in [`crate::watch::server`]; this is the
//! command line. `walj reconcile` (hidden) is the full scan a Stop hook starts after a turn
//! that used the watcher ([`crate::bashsnap::run_reconcile`]).

use std::path::PathBuf;
use std::time::Duration;

/// `walj watch --root DIR [--observed FILE]`.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// The checkout's work tree.
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// Where the live observer writes what it saw (JSON lines).
    #[arg(long, value_name = "FILE")]
    pub observed: Option<PathBuf>,
    /// Seconds it stays after the last live session and the last request.
    #[arg(long, default_value_t = 300, env = "WALJ_WATCH_LINGER_SECS")]
    pub linger: u64,
    /// Folders it watches at most (lowers the system's watch limit; tests).
    #[arg(long, env = "WALJ_WATCH_MAX_DIRS")]
    pub max_dirs: Option<usize>,
    /// A session whose Claude Code process it observes from its first moment, as
    /// `ID:PID:START` (the hook that starts it names its own session: its end is noted even
    /// when no request ever reached the new watcher).
    #[arg(long, value_name = "ID:PID:START", value_parser = parse_session)]
    pub session: Vec<crate::watch::SessionRef>,
    /// Watch no folder, only the sessions' processes (a project outside git).
    #[arg(long)]
    pub processes_only: bool,
}

/// `ID:PID:START` (the id may itself hold colons: the last two fields are the numbers).
fn parse_session(s: &str) -> Result<crate::watch::SessionRef, String> {
    let bad = || format!("{s:?}: expected ID:PID:START");
    let mut it = s.rsplitn(3, ':');
    let start = it.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    let pid = it.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    let id = it.next().filter(|x| !x.is_empty()).ok_or_else(bad)?;
    Ok(crate::watch::SessionRef { id: id.to_string(), pid, start })
}

/// Runs the watcher until its lifetime ends (exit 0 also when another one holds the checkout).
pub(crate) fn watch(a: &WatchArgs) -> anyhow::Result<i32> {
    #[cfg(unix)]
    {
        let opts = crate::watch::server::Options {
            root: a.root.clone(),
            observed: a.observed.clone(),
            linger: Duration::from_secs(a.linger),
            max_dirs: a.max_dirs.unwrap_or(usize::MAX),
            sessions: a.session.clone(),
            processes_only: a.processes_only,
        };
        crate::watch::server::run(&opts)?;
        Ok(0)
    }
    #[cfg(not(unix))]
    {
        let _ = (a, Duration::ZERO);
        anyhow::bail!("walj watch: not available on this platform")
    }
}

/// `walj reconcile --session ID`.
#[derive(clap::Args, Debug)]
pub struct ReconcileArgs {
    /// The session whose Stop asked for it (what a miss is credited to when the last command
    /// is another session's).
    #[arg(long, value_name = "ID")]
    pub session: String,
}

/// Reconciles the watcher's view with a full scan and journals what it missed (exit 0 also
/// when another reconciliation holds the checkout's claim: it serves this request). Errors go
/// to `.walj/errors.log`, as the hook's do: nobody reads this process's output.
pub(crate) fn reconcile(project: &crate::project::Project, a: &ReconcileArgs) -> anyhow::Result<i32> {
    let (cfg, matcher) = crate::config::Config::load_or_default(&project.config_path(), |e| {
        crate::fsutil::append_log(&project.errors_log(), &format!("config ignored: {e}"))
    });
    let append = |records: Vec<crate::journal::Record>| {
        project.ensure_dir()?;
        crate::journal::JournalWriter::new(&project.journal).append_all(&records)
    };
    if let Err(e) = crate::bashsnap::run_reconcile(project, &cfg, matcher.as_ref(), &a.session, append) {
        crate::fsutil::append_log(&project.errors_log(), &format!("reconciling the watcher after Stop: {e}"));
    }
    Ok(0)
}

/// `walj fill`: reads and stores the files the Bash snapshot cache lists unread
/// ([`crate::bashsnap::run_fill`]). Errors go to `.walj/errors.log`: nobody reads this
/// process's output.
pub(crate) fn fill(project: &crate::project::Project) -> anyhow::Result<i32> {
    let (cfg, matcher) = crate::config::Config::load_or_default(&project.config_path(), |e| {
        crate::fsutil::append_log(&project.errors_log(), &format!("config ignored: {e}"))
    });
    if let Err(e) = crate::bashsnap::run_fill(project, &cfg, matcher.as_ref()) {
        crate::fsutil::append_log(&project.errors_log(), &format!("the fill pass: {e}"));
    }
    Ok(0)
}

/// `walj settle`: copies the images Bash Posts spilled into the store
/// ([`crate::store::Store::settle_pending`]) and prints what it did (`{"spills", "objects",
/// "unavailable", "ms"}`). Errors go to `.walj/errors.log` too: when the hook starts it,
/// nobody reads its output.
pub(crate) fn settle(project: &crate::project::Project) -> anyhow::Result<i32> {
    let store = crate::store::Store::new(project.store_dir());
    pause_for_tests(&store, "start");
    match store.settle_pending(Some(&project.root), std::time::Duration::from_secs(60)) {
        Ok(s) => {
            if !s.unavailable.is_empty() {
                crate::fsutil::append_log(
                    &project.errors_log(),
                    &format!("the settle pass: {} no longer in git's objects (unavailable)", s.unavailable.len()),
                );
            }
            println!(
                "{}",
                serde_json::json!({"spills": s.spills, "objects": s.objects, "unavailable": s.unavailable,
                    "ms": s.elapsed.as_secs_f64() * 1000.0})
            );
            Ok(0)
        }
        Err(e) => {
            crate::fsutil::append_log(&project.errors_log(), &format!("the settle pass: {e}"));
            eprintln!("walj settle: {e}");
            Ok(1)
        }
    }
}

/// Tests only: with `WALJ_SETTLE_PAUSE=<stage>`, the pass writes its pid to
/// `.walj/store/pending/paused-<stage>` and sleeps there, for a test to kill it at that moment.
pub(crate) fn pause_for_tests(store: &crate::store::Store, stage: &str) {
    crate::store::pending::pause_for_tests(store, stage);
}
