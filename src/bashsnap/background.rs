//! Background commands (`run_in_background`) at the session's Stop: what they changed since
//! their last baseline, leaving out what other tool calls account for; sidecars of calls that
//! never finished are dropped.

use super::records::child_records;
use super::snapshot::{is_stale, load, rebase, remove_snapshot, save};
use super::tree::Tree;
use super::{SnapError, bash_dir, io_err};
use crate::config::{Config, Matcher};
use crate::fold::{Fold, FoldOptions};
use crate::journal::{Record, key};
use crate::project::Project;
use serde_json::Value;
use std::collections::HashSet;
use std::fs;
use std::io;

/// Background commands at Stop (see [`at_stop`]).
pub(super) fn background_at_stop(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    session: &str,
    background_tasks: Option<&Value>,
) -> Result<Vec<Record>, SnapError> {
    let dir = bash_dir(project);
    let rd = match fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(&dir, "listing")(e)),
    };
    let mut pending = Vec::new();
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") || name == "cache.json" {
            if name.ends_with(".index") && is_stale(&ent.path()) {
                let _ = fs::remove_file(ent.path());
            }
            continue;
        }
        let path = ent.path();
        let Ok(snap) = load(&path) else {
            let _ = fs::remove_file(&path);
            continue;
        };
        if snap.session != session {
            if is_stale(&path) {
                remove_snapshot(&dir, &path, snap.index.as_ref());
            }
            continue;
        }
        if !snap.background || !cfg.bash.snapshot {
            // At the main agent's Stop no call of this session runs: a Pre without a Post
            // was denied or lost.
            remove_snapshot(&dir, &path, snap.index.as_ref());
            continue;
        }
        pending.push((path, snap));
    }
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    // Changes other tool calls already account for (Edit/Write, other commands).
    let fold = Fold::load(
        &project.journal,
        &FoldOptions { session: Some(session.to_string()), keep_settled: true, ..Default::default() },
    )
    .map_err(io_err(&project.journal, "reading"))?;
    let restarted = fold.session(session).and_then(|s| s.last_start_ts.clone());
    let live: Vec<crate::procinfo::ProcRef> = fold.sessions.iter().filter_map(|s| s.proc).collect();
    let mut out = Vec::new();
    for (path, base) in pending {
        // Started before the session was resumed after a crash: its Claude Code is gone. If
        // nothing it started runs any more it is dead, and whatever changed since (the user's
        // own repairs, the resumed session's work) is not its.
        let mut orphaned = false;
        if restarted.as_deref().is_some_and(|start| base.ts.as_str() < start) {
            let pids = base
                .hook_start
                .and_then(|since| {
                    crate::procinfo::started_by_tool_since(
                        since,
                        &project.root,
                        session,
                        &live,
                        crate::claude::env::MARKER,
                    )
                })
                .unwrap_or_default();
            if pids.is_empty() {
                remove_snapshot(&dir, &path, base.index.as_ref());
                continue;
            }
            orphaned = true;
        }
        // The command's own entries since the base count too: a Post killed after it appended
        // them, before it rebased the sidecar, leaves the older base, and its changes are
        // journaled already.
        let known: HashSet<(String, Option<String>)> = fold
            .entries
            .iter()
            .filter(|e| e.applied_ts.as_deref().unwrap_or(&e.ts) >= base.ts.as_str())
            .filter_map(|e| e.after.as_ref().map(|a| (e.path.clone(), a.id().map(str::to_string))))
            .collect();
        let mut tree = Tree::open(project, cfg, matcher);
        let running = task_running(background_tasks, base.task_id.as_deref());
        let key = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let now = tree.take(Some(&base), running.then_some(key.as_str()))?;
        let mut changes = tree.diff(&base, &now)?;
        changes.retain(|c| !known.contains(&(c.rel.clone(), c.after.blob().and_then(|b| b.id().map(str::to_string)))));
        let phase = format!("stop{}", base.time);
        let records = child_records(matcher, &base, &changes, &phase, true);
        if orphaned {
            // It outlived its Claude Code: the user and the resumed session work beside it.
            out.extend(records.into_iter().map(|r| r.with(key::ATTRIBUTION, crate::journal::attribution::UNCERTAIN)));
        } else {
            out.extend(records);
        }
        let _ = save(&dir.join("cache.json"), &now);
        if running {
            let task_id = base.task_id.clone();
            rebase(&dir, &path, &base, now, task_id)?;
        } else {
            remove_snapshot(&dir, &path, base.index.as_ref());
        }
    }
    Ok(out)
}

/// True when Stop's `background_tasks` lists `task_id` as still running.
pub(super) fn task_running(tasks: Option<&Value>, task_id: Option<&str>) -> bool {
    let (Some(tasks), Some(id)) = (tasks.and_then(Value::as_array), task_id) else { return false };
    tasks.iter().any(|t| {
        t.get("id").and_then(Value::as_str) == Some(id)
            && t.get("status").and_then(Value::as_str).is_some_and(|s| s == "running" || s == "pending")
    })
}
