//! The checkout watcher's client (the server is `src/watch/`): starting it at SessionStart or
//! at a command's PreToolUse, and asking it, behind its cookie, which paths changed since a
//! snapshot, so a snapshot looks only at those. Every reason a snapshot was a full scan instead
//! comes from here ([`WATCH_OFF`], the watcher's own errors).

use super::Call;
use super::snapshot::Snapshot;
use super::tree::{Tree, WatchView};
use crate::config::Config;
use crate::project::Project;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// [`Snapshot::watch`] when `[bash] watcher = false`.
pub(crate) const WATCH_OFF: &str = "off ([bash] watcher = false)";

/// The observer file the watcher writes (docs/architecture.md), under `.walj/`.
pub(crate) fn observed_path(project: &Project) -> PathBuf {
    project.dir.join("observed.jsonl")
}

/// Starts the checkout's watcher, detached, unless one holds its claim (a failure is logged:
/// the snapshot falls back to a full scan). `session`, the hook's own, is named on its command
/// line: the new watcher notes that Claude Code's end even if no request of the session ever
/// reaches it (a slow start under load, a session killed before its next hook).
pub(super) fn start_watcher(
    project: &Project,
    places: &crate::watch::Places,
    session: Option<&crate::watch::SessionRef>,
) {
    let Ok(exe) = std::env::current_exe() else { return };
    let observed = observed_path(project);
    let mut args: Vec<std::ffi::OsString> =
        vec!["watch".into(), "--root".into(), places.root.clone().into(), "--observed".into(), observed.into()];
    if crate::git::find(&project.root).is_none() {
        args.push("--processes-only".into());
    }
    if let Some(s) = session {
        args.push("--session".into());
        args.push(format!("{}:{}:{}", s.id, s.pid, s.start).into());
    }
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    if let Err(e) = crate::watch::spawn(places, &exe, &args) {
        crate::fsutil::append_log(&project.errors_log(), &format!("starting the watcher: {e}"));
    }
}

/// SessionStart: starts the checkout's watcher when it is on and none runs, so the first
/// command finds it ready, and names the session's Claude Code process (`claude`: its pid and
/// start) to it, so that its end is noted from the first moment: without that, a session
/// whose first command's snapshot found no watcher listening yet (a slow start under load)
/// and that was killed mid-command had no witness of its end, and its command's own changes
/// read as made after Claude Code stopped. Costs one `connect` and one write when one runs.
/// It also asks for the fill pass ([`super::fill`]), so that the first command's snapshot
/// finds every file it lists read and stored (outside git too, where no watcher looks).
pub(crate) fn start_watch(project: &Project, cfg: &Config, session: &str, claude: Option<(u32, u64)>) {
    if cfg.bash.snapshot
        && let Err(e) = super::fill::request_fill(project, cfg)
    {
        crate::fsutil::append_log(&project.errors_log(), &format!("starting the fill pass: {e}"));
    }
    if !cfg.bash.snapshot || !cfg.bash.watcher {
        return;
    }
    // Outside git, a watcher of processes only (no folder watched): the end of each session's
    // Claude Code is then known there too.
    let workdir = crate::git::find(&project.root).map_or_else(|| project.root.clone(), |(w, _)| w);
    let Ok(places) = crate::watch::Places::of(&workdir) else { return };
    let session = claude.map(|(pid, start)| crate::watch::SessionRef { id: session.to_string(), pid, start });
    let running = match &session {
        Some(s) => crate::watch::register(&places, s.clone()).is_ok(),
        #[cfg(unix)]
        None => std::os::unix::net::UnixStream::connect(&places.socket).is_ok(),
        #[cfg(not(unix))]
        None => false,
    };
    if !running {
        start_watcher(project, &places, session.as_ref());
    }
}

impl Tree<'_> {
    /// Asks the checkout's watcher what changed since `base` (src/watch.rs), behind its
    /// cookie; `start`: a Pre may start a watcher that does not run. Never waits more than
    /// `[bash] watch_ms`.
    pub(super) fn ask_watcher(&mut self, base: Option<&Snapshot>, call: Option<&Call>, start: bool) -> WatchView {
        let view = self.ask_watcher_inner(base, call, start);
        // A full scan after the wait gets its whole `[bash] max_ms`.
        self.deadline = Instant::now() + Duration::from_millis(self.cfg.bash.max_ms.max(1));
        view
    }

    pub(super) fn ask_watcher_inner(&self, base: Option<&Snapshot>, call: Option<&Call>, start: bool) -> WatchView {
        let why = |w: &str| WatchView { clock: None, paths: None, why: Some(w.to_string()) };
        if !self.cfg.bash.watcher {
            return why(WATCH_OFF);
        }
        let Some(workdir) = self.repo.as_ref().and_then(|r| r.workdir()) else {
            return why("not a git checkout (a bounded walk)");
        };
        let places = match crate::watch::Places::of(workdir) {
            Ok(p) => p,
            Err(e) => return why(&e.to_string()),
        };
        let session = call.and_then(|c| {
            c.claude.map(|(pid, start)| crate::watch::SessionRef { id: c.session.to_string(), pid, start })
        });
        let since = base.and_then(|b| b.clock.as_ref());
        let wait = Duration::from_millis(self.cfg.bash.watch_ms.max(1));
        match crate::watch::sync(&places, &self.project.dir, since, session, wait) {
            Ok(a) => {
                let clock = Some(crate::watch::Clock { epoch: a.epoch, seq: a.seq });
                match (a.paths, a.doubt) {
                    (Some(paths), None) if since.is_some() => {
                        let rels = paths
                            .into_iter()
                            .filter_map(|p| p.strip_prefix(self.prefix.as_str()).map(str::to_string))
                            .filter(|p| !p.is_empty() && p != ".walj" && !p.starts_with(".walj/"))
                            .collect();
                        WatchView { clock, paths: Some(rels), why: None }
                    }
                    (_, d) => WatchView { clock, paths: None, why: Some(d.unwrap_or_else(|| "no clock".into())) },
                }
            }
            Err(e) => {
                if start && matches!(e, crate::watch::Why::NotRunning | crate::watch::Why::Stale(_)) {
                    let session = call.and_then(|c| {
                        c.claude.map(|(pid, start)| crate::watch::SessionRef { id: c.session.to_string(), pid, start })
                    });
                    start_watcher(self.project, &places, session.as_ref());
                }
                why(&e.to_string())
            }
        }
    }
}
