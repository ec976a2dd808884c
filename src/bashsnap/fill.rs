//! The fill pass: a detached full snapshot without the hook's object budget, so what a hook's
//! snapshot could not read in its time is read before a command needs it.
//!
//! A hook's snapshot stores at most `MAX_NEW_OBJECTS` new objects within `[bash] max_ms`: the
//! first Bash call in a folder outside git (every file is new to walj), or the first after a
//! burst of thousands of untracked files, would otherwise run its command over files it never
//! read, and those entries would have no pre-image. So:
//!
//! - **SessionStart** asks for a pass ([`request_fill`]): it reads every file the snapshot lists
//!   (in git: dirty and untracked ones; outside git: every file of the walk, up to `[bash]
//!   max_files`), stores each within the capture caps, and keeps the result as the snapshot
//!   cache (`.walj/bash/cache.json`), the base the first command's snapshot starts from.
//! - **A snapshot left cut short** (files it listed but could not read) asks for one too, which
//!   completes the cache; the next command's snapshot starts whole, however many calls the
//!   hook's budget would have needed.
//! - **A PreToolUse whose base is not whole** (no cache yet, or a cut-short one) waits for a
//!   pass that runs or was asked for, at most `[bash] fill_wait_ms`, then takes its snapshot.
//!
//! The pass only ever adds what it read to the cache it finds at its end: a file's id is
//! filled in where the cache's entry is unread and its stat is the one the pass read it at (the
//! file did not change in between), so a command that ran meanwhile is never given images of
//! another moment. What it could not read in `[bash] fill_ms` stays unread, and a command that
//! changes such a file says "not captured (cut_short)".

use super::snapshot::{Snapshot, load, save, unread};
use super::tree::Tree;
use super::{RACY_NS, SnapError, bash_dir, io_err};
use crate::config::{Config, Matcher};
use crate::fsutil;
use crate::project::Project;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `.walj/bash/fill.claim`: held ("pid start") by the one fill pass that runs for the project.
pub(crate) fn fill_claim_path(project: &Project) -> PathBuf {
    bash_dir(project).join("fill.claim")
}

/// `.walj/bash/fill.asked`: a pass was started and has not taken its claim yet (a PreToolUse
/// right after waits for it too).
fn asked_path(project: &Project) -> PathBuf {
    bash_dir(project).join("fill.asked")
}

/// A request younger than this still counts (a pass that never started does not hold hooks up).
const ASKED_FRESH: Duration = Duration::from_secs(3);

/// Asks for a fill pass: notes the request (a pass that runs goes again for it) and starts
/// `walj --project ROOT fill`, detached, unless one holds the claim. Costs a file write and a
/// process start.
pub(crate) fn request_fill(project: &Project, cfg: &Config) -> io::Result<()> {
    if !cfg.bash.snapshot {
        return Ok(());
    }
    fsutil::create_private_dir(&bash_dir(project))?;
    fsutil::open_private(&asked_path(project), fs::OpenOptions::new().write(true).create(true).truncate(true))?;
    if crate::watch::held(&fill_claim_path(project)) {
        return Ok(());
    }
    let exe = std::env::current_exe()?;
    let args: [&std::ffi::OsStr; 3] = ["--project".as_ref(), project.root.as_os_str(), "fill".as_ref()];
    crate::watch::spawn_detached(&exe, &args)
}

/// A fill pass runs, or was asked for a moment ago.
pub(super) fn running(project: &Project) -> bool {
    let asked = fs::metadata(asked_path(project))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|d| d < ASKED_FRESH);
    asked || crate::watch::held(&fill_claim_path(project))
}

/// Waits while a fill pass runs, at most `[bash] fill_wait_ms`. True when one ran.
pub(super) fn wait_for_fill(project: &Project, cfg: &Config) -> bool {
    let until = Instant::now() + Duration::from_millis(cfg.bash.fill_wait_ms);
    let mut waited = false;
    while running(project) && Instant::now() < until {
        waited = true;
        std::thread::sleep(Duration::from_millis(5));
    }
    waited
}

/// What a fill pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Filled {
    /// Files whose id it gave the cache.
    pub filled: usize,
    /// Files it could not read in its time.
    pub left: usize,
}

/// Runs the fill pass under the project's claim. `Ok(None)`: another pass holds it (it serves
/// this request).
pub(crate) fn run_fill(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
) -> Result<Option<Filled>, SnapError> {
    if !cfg.bash.snapshot {
        return Ok(None);
    }
    // Only in a `.walj/` that is there (a project removed meanwhile is not made again).
    if !project.dir.is_dir() {
        return Ok(None);
    }
    let claim_path = fill_claim_path(project);
    fsutil::create_private_dir(&bash_dir(project)).map_err(io_err(&bash_dir(project), "creating"))?;
    let asked = asked_path(project);
    let mut done = None;
    // Bounded: snapshots cut short one after another must not keep one process forever.
    for _ in 0..4 {
        let Some(claim) = crate::watch::claim(&claim_path).map_err(io_err(&claim_path, "claiming"))? else {
            return Ok(done);
        };
        // Files written just before a round began are racy: a snapshot re-reads them rather
        // than trust their stat. Once that window has passed, one more round (under the same
        // claim, so a waiting PreToolUse goes on waiting) reads them again and the cache trusts
        // them.
        for _ in 0..3 {
            // Taken before the round: a request made from now on is served by the next one.
            let _ = fs::remove_file(&asked);
            let cache_path = bash_dir(project).join("cache.json");
            let base = load(&cache_path).ok();
            let mut tree = Tree::open(project, cfg, matcher);
            tree.max_new = usize::MAX;
            tree.deadline = Instant::now() + Duration::from_millis(cfg.bash.fill_ms.max(1));
            let full = tree.take(base.as_ref(), None)?;
            done = Some(merge(&cache_path, base.as_ref(), &full)?);
            let racy_until = full.files.values().filter_map(|f| f.st).map(|s| s.m.max(s.c) + RACY_NS).max();
            let Some(t) = racy_until.filter(|&t| t > full.time) else { break };
            let wait = (t - super::now_ns()).clamp(0, RACY_NS);
            std::thread::sleep(Duration::from_nanos(wait as u64 + 1_000_000));
        }
        drop(claim);
        // A snapshot saved meanwhile over the merged cache asked again (its request saw the
        // claim held): once more, from the cache it saved.
        if !asked.exists() {
            break;
        }
    }
    Ok(done)
}

/// Adds what the pass read (`full`) to the cache as it is now: the whole snapshot where there
/// is none yet (or it is still the one the pass started from and its list was cut), else the
/// ids of its unread files whose stat the pass read them at.
fn merge(path: &std::path::Path, base: Option<&Snapshot>, full: &Snapshot) -> Result<Filled, SnapError> {
    let cur = match load(path) {
        Ok(c) => Some(c),
        Err(SnapError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => None,
        // Damaged or of another version: replaced, as a hook would.
        Err(_) => None,
    };
    let mut cur = match cur {
        None => {
            let left = full.files.values().filter(|f| unread(f)).count();
            let filled = full.files.values().filter(|f| f.id.is_some()).count();
            save(path, full)?;
            return Ok(Filled { filled, left });
        }
        Some(c) => c,
    };
    let untouched = base.is_some_and(|b| b.time == cur.time);
    let mut filled = 0;
    if untouched {
        // Still the cache the pass started from: the pass's snapshot is the same tree looked at
        // later and whole. The cache keeps its watcher clock (taken earlier: the watcher then
        // names more paths, never fewer) and its command.
        filled = full.files.values().filter(|f| f.id.is_some()).count();
        cur.files = full.files.clone();
        cur.listed = full.listed;
        cur.cut_short = full.cut_short;
        cur.time = full.time;
        cur.ts = full.ts.clone();
        cur.index = full.index.clone();
    } else {
        for (rel, f) in cur.files.iter_mut().filter(|(_, f)| unread(f)) {
            if let Some(g) = full.files.get(rel)
                && g.st.is_some()
                && g.st == f.st
                && !unread(g)
                && !g.absent
            {
                *f = g.clone();
                filled += 1;
            }
        }
    }
    let left = cur.files.values().filter(|f| unread(f)).count();
    cur.cut_short = (cur.cut_short && !cur.listed) || left > 0;
    // Only when the pass changed something: a hook may have saved a newer cache meanwhile, and
    // this write would put back the older one (consistent, but it costs the hook a re-read).
    if filled > 0 {
        save(path, &cur)?;
    }
    Ok(Filled { filled, left })
}
