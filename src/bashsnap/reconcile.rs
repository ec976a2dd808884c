//! The reconciliation after a Stop: when a turn's snapshots trusted the watcher, a detached
//! full scan compares the watcher's view with the tree, journals what the watcher missed (as
//! uncertain, `watch_fault`) and counts it for `walj doctor`.

use super::records::child_records;
use super::snapshot::{load, save};
use super::tree::Tree;
use super::{SnapError, WATCHED, bash_dir, io_err};
use crate::config::{Config, Matcher};
use crate::fsutil;
use crate::journal::{Record, key};
use crate::project::Project;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::PathBuf;

/// Key of a child entry found by the full scan after Stop that the watcher did not report.
pub(crate) const WATCH_FAULT: &str = "watch_fault";

/// `.walj/bash/watch-faults.jsonl`: one line per reconciliation (after a Stop) whose full scan found changes the
/// watcher had not reported (what `walj doctor` counts).
pub(crate) fn faults_path(project: &Project) -> PathBuf {
    bash_dir(project).join("watch-faults.jsonl")
}

/// `.walj/bash/reconcile.claim`: held ("pid start") by the one reconciliation that runs for
/// the checkout ([`run_reconcile`]).
pub(crate) fn reconcile_claim_path(project: &Project) -> PathBuf {
    bash_dir(project).join("reconcile.claim")
}

/// `.walj/bash/reconcile.again`: a Stop asked for a reconciliation while one ran (its session
/// inside); the running one goes again when done.
pub(super) fn reconcile_again_path(project: &Project) -> PathBuf {
    bash_dir(project).join("reconcile.again")
}

/// Whether the last snapshot used the watcher, so the turn needs its reconciliation (one read
/// of the cache: what Stop pays when the watcher is off or was not used).
pub(crate) fn reconcile_due(project: &Project, cfg: &Config) -> bool {
    cfg.bash.snapshot
        && cfg.bash.watcher
        && load(&bash_dir(project).join("cache.json")).is_ok_and(|c| c.watch.as_deref() == Some(WATCHED))
}

/// Starts the turn's reconciliation after Stop: `walj --project ROOT reconcile --session S`,
/// detached (its own process group, as the watcher starts), so the Stop hook does not wait for
/// a full scan. The request is noted first ([`reconcile_again_path`]): a reconciliation that
/// holds the claim goes again for it.
pub(crate) fn spawn_reconcile(project: &Project, session: &str) -> io::Result<()> {
    let again = reconcile_again_path(project);
    // Never through a link planted at `.walj/bash` (refused) or at the file (not followed).
    fsutil::create_private_dir(&bash_dir(project))?;
    fsutil::open_private(&again, fs::OpenOptions::new().write(true).create(true).truncate(true))
        .and_then(|mut f| io::Write::write_all(&mut f, session.as_bytes()))?;
    let exe = std::env::current_exe()?;
    let args: [&std::ffi::OsStr; 5] =
        ["--project".as_ref(), project.root.as_os_str(), "reconcile".as_ref(), "--session".as_ref(), session.as_ref()];
    crate::watch::spawn_detached(&exe, &args)
}

/// Runs the reconciliation under the checkout's claim, for `session` and then for every
/// request a later Stop left meanwhile; `append` journals each round's findings. `Ok(false)`:
/// another reconciliation holds the claim (it will see this request).
pub(crate) fn run_reconcile(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    session: &str,
    mut append: impl FnMut(Vec<Record>) -> io::Result<()>,
) -> Result<bool, SnapError> {
    let claim_path = reconcile_claim_path(project);
    let again = reconcile_again_path(project);
    let mut session = session.to_string();
    let mut ran = false;
    // Bounded: a Stop every few seconds in another session must not keep one process forever.
    for _ in 0..8 {
        let Some(claim) = crate::watch::claim(&claim_path).map_err(io_err(&claim_path, "claiming"))? else {
            return Ok(ran);
        };
        // Taken before the scan: a request made from now on is served by the next round.
        if let Ok(text) = fs::read_to_string(&again) {
            let asked = text.trim();
            if !asked.is_empty() && asked.len() <= 200 {
                session = asked.to_string();
            }
        }
        let _ = fs::remove_file(&again);
        let records = reconcile(project, cfg, matcher, &session)?;
        if !records.is_empty() {
            append(records).map_err(io_err(&project.journal, "appending"))?;
        }
        ran = true;
        drop(claim);
        if !again.exists() {
            break;
        }
    }
    Ok(ran)
}

/// The reconciliation after a turn whose snapshots used the watcher: the watcher's view of
/// the tree now against a full scan. A difference is a change the watcher missed: it is
/// journaled as a side effect of the last command that used the watcher (uncertain, with
/// `watch_fault`), and counted in `faults.jsonl`. A path the watcher reports meanwhile (a
/// change made during the scan) is not a miss.
pub(super) fn reconcile(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    session: &str,
) -> Result<Vec<Record>, SnapError> {
    let dir = bash_dir(project);
    let cache_path = dir.join("cache.json");
    let Ok(cache) = load(&cache_path) else { return Ok(Vec::new()) };
    if !cfg.bash.snapshot || !cfg.bash.watcher || cache.watch.as_deref() != Some(WATCHED) {
        return Ok(Vec::new());
    }
    let mut tree = Tree::open(project, cfg, matcher);
    let view = tree.ask_watcher(Some(&cache), None, false);
    let Some(clock) = view.clock.clone() else { return Ok(Vec::new()) };
    let watched = tree.take_with(Some(&cache), None, Some(&view))?;
    if watched.watch.as_deref() != Some(WATCHED) {
        return Ok(Vec::new());
    }
    let mut full = tree.take(Some(&watched), None)?;
    let mut changes = tree.diff(&watched, &full)?;
    if !changes.is_empty() {
        let later = tree.ask_watcher(Some(&watched), None, false);
        if let Some(p) = later.paths {
            let p: HashSet<String> = p.into_iter().collect();
            changes.retain(|c| !p.contains(&c.rel));
        } else {
            // The watcher cannot say what happened during the scan: no verdict this time.
            changes.clear();
        }
    }
    let mut base = watched.clone();
    if cache.session != session || cache.parent.is_empty() {
        base.session = session.to_string();
        base.parent = format!("watch-{:x}", watched.time);
        base.command = "(changes the watcher did not report)".into();
    } else {
        base.session = cache.session.clone();
        base.parent = cache.parent.clone();
        base.command = cache.command.clone();
    }
    let records: Vec<Record> = child_records(matcher, &base, &changes, &format!("reconcile{}", watched.time), false)
        .into_iter()
        .map(|r| r.with(key::ATTRIBUTION, crate::journal::attribution::UNCERTAIN).with(WATCH_FAULT, true))
        .collect();
    if !records.is_empty() {
        let line = json!({
            "ts": crate::journal::record::now_ts(),
            "session": session,
            "missed": records.len(),
            "paths": changes.iter().take(5).map(|c| c.rel.clone()).collect::<Vec<_>>(),
            // The reconciliation's own process (detached from the Stop that asked for it).
            "pid": std::process::id(),
        });
        if fsutil::create_private_dir(&bash_dir(project)).is_ok()
            && let Ok(mut f) =
                fsutil::open_private(&faults_path(project), fs::OpenOptions::new().append(true).create(true))
        {
            let _ = io::Write::write_all(&mut f, format!("{line}\n").as_bytes());
        }
    }
    // The full scan is the truth from the clock taken before it.
    full.clock = Some(clock);
    full.watch = Some(RECONCILED.to_string());
    // Only over the cache it started from: a command that ran meanwhile (another session's
    // turn) saved a newer one, and its snapshot names that command.
    if load(&cache_path).is_ok_and(|now| now.time == cache.time) {
        let _ = save(&cache_path, &full);
    }
    Ok(records)
}

/// [`Snapshot::watch`] of the full scan the reconciliation after Stop saves as the cache.
pub(crate) const RECONCILED: &str = "full scan after Stop (reconciliation)";

/// How the last Bash snapshots were taken and what the reconciliations after Stop found, for
/// `walj doctor`.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchReport {
    /// [`Snapshot::watch`] of the cache: [`WATCHED`], [`RECONCILED`], or why it was a full scan.
    pub last: Option<String>,
    /// Stops whose full scan found changes the watcher missed, and how many changes.
    pub fault_turns: usize,
    pub faults: usize,
    /// The latest such paths.
    pub fault_paths: Vec<String>,
}

/// What `walj doctor` says about the watcher.
pub(crate) fn watch_report(project: &Project) -> WatchReport {
    let dir = bash_dir(project);
    let mut r = WatchReport { last: load(&dir.join("cache.json")).ok().and_then(|c| c.watch), ..Default::default() };
    if let Ok(text) = fs::read_to_string(faults_path(project)) {
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            r.fault_turns += 1;
            r.faults += v.get("missed").and_then(Value::as_u64).unwrap_or(0) as usize;
            if let Some(p) = v.get("paths").and_then(Value::as_array) {
                r.fault_paths = p.iter().filter_map(Value::as_str).map(str::to_string).collect();
            }
        }
    }
    r
}
