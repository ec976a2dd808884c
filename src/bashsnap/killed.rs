//! Bash commands that never finished (a killed Claude Code, an interrupted turn).
//!
//! A foreground command's PreToolUse sidecar goes away at its PostToolUse. When Claude Code
//! dies while the command runs, no Post ever comes: the sidecar stays, and what changed since
//! it was taken is the command's work — or its orphans' work, since after `kill -9` the shell
//! and its children often run on.
//!
//! - While the session's Claude Code runs, the command is simply in flight: nothing here.
//! - Once it is gone (the session crashed or ended), every reader calls [`reconcile`], which
//!   compares the snapshot with the disk. While a process the command started still runs
//!   (Claude Code's environment marker, started after the PreToolUse hook, working in the
//!   project, not under a running Claude Code), the changes are shown "so far", in memory
//!   only. Once nothing runs, they are materialised once: the sidecar is claimed by an atomic
//!   rename (one walj process wins), the child records (`unfinished: true`, ids stable per
//!   command and path) are appended, then the claim is removed. A claim left by a killed walj
//!   is taken over after a grace period; children already in the journal are not appended
//!   twice.
//! - When its own session moves on (its next Stop: a turn cut short while Claude Code lives
//!   on), the hook derives them at once ([`settle_own`]).
//!
//! Attribution: a change another tool call journaled after the snapshot (any session)
//! explains is not the command's; the rest is judged by [`super::attribution`]: certain when
//! only this command's window was open at its ctime, `uncertain` (with `candidates`) when
//! another was or another session was active, `after_stop` when it was made after the
//! session's last sign of life (the orphaned command's, or someone's after Claude Code
//! stopped: walj cannot tell without its watcher). Each record carries its change's time
//! (`changed`).
//!
//! Derived at a reader's first look and appended (claimed once, above) rather than derived at
//! every read: the verdict depends on the disk at that moment (a later reader would see the
//! user's later edits as the command's), so the first look is fixed in the journal, and the
//! claim makes two readers at once safe.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Change, SnapError, Snapshot, Tree, bash_dir, child_records, io_err, load, remove_snapshot};
use crate::config::{Config, Matcher};
use crate::fold::{Fold, FoldOptions, SessionStatus};
use crate::journal::{JournalWriter, Record, attribution, key};
use crate::procinfo::{self, ProcRef};
use crate::project::Project;

/// The phase in child ids (`child_id(parent, phase, path)`): one set per command.
const PHASE: &str = "killed";
/// A claim older than this was left by a killed walj: another process takes it over.
const CLAIM_GRACE: Duration = Duration::from_secs(60);
/// Claimed sidecars are renamed to `<key>.claim<pid>`.
const CLAIM: &str = ".claim";

/// A killed command whose processes still run: its changes so far are shown, not recorded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StillRunning {
    pub parent: String,
    pub session: String,
    pub pids: Vec<u32>,
    pub changes: usize,
}

/// What [`reconcile`] did.
#[derive(Debug, Default)]
pub(crate) struct Reconciled {
    /// Child records appended to the journal (commands whose processes are all gone).
    pub materialised: usize,
    pub running: Vec<StillRunning>,
    /// Derivations that failed (reported, never fatal).
    pub problems: Vec<String>,
}

/// Brings the killed foreground commands of the sessions in `fold` into it: see the module
/// documentation. `fold` was loaded with `opts`; its entries gain the commands' children.
pub(crate) fn reconcile(project: &Project, fold: &mut Fold, opts: &FoldOptions) -> Reconciled {
    let mut out = Reconciled::default();
    let dir = bash_dir(project);
    let candidates = candidates(&dir);
    if candidates.is_empty() {
        return out;
    }
    let mut killed = Vec::new();
    for path in candidates {
        let Ok(snap) = load(&path) else { continue };
        if snap.background {
            continue;
        }
        let gone = fold
            .session(&snap.session)
            .is_some_and(|s| matches!(s.status(), SessionStatus::Crashed | SessionStatus::Ended));
        if gone {
            killed.push((path, snap));
        }
    }
    if killed.is_empty() {
        return out;
    }
    let (cfg, matcher) = Config::load_or_default(&project.config_path(), |_| {});
    // Attribution needs every session's writes, settled ones included.
    let all = match Fold::load(
        &project.journal,
        &FoldOptions { keep_settled: true, all_commands: true, ..Default::default() },
    ) {
        Ok(f) => f,
        Err(e) => {
            out.problems.push(format!("reading {}: {e}", project.journal.display()));
            return out;
        }
    };
    let live: Vec<ProcRef> =
        all.sessions.iter().filter(|s| s.status() == SessionStatus::Live).filter_map(|s| s.proc).collect();
    let mut derived = Vec::new();
    for (path, snap) in killed {
        if has_outcome(&all, &snap) {
            // A PostToolUse killed after appending, before removing its snapshot: done.
            remove_snapshot(&dir, &path, snap.index.as_ref());
            continue;
        }
        match derive(project, &cfg, matcher.as_ref(), &snap, &all) {
            Ok(records) => derived.push((path, snap, records)),
            Err(e) => out.problems.push(format!("the changes of `{}`: {e}", snap.command)),
        }
    }
    claim_once(&mut derived);
    for (path, snap, records) in derived {
        let pids = snap
            .hook_start
            .and_then(|since| {
                procinfo::started_by_tool_since(since, &project.root, &snap.session, &live, crate::claude::env::MARKER)
            })
            .unwrap_or_default();
        if pids.is_empty() {
            match materialise(project, &dir, &path, &snap, &records, &all) {
                Ok(true) => {
                    out.materialised += records.iter().filter(|r| !r.path.is_empty()).count();
                    fold.add_records(&records, opts);
                }
                Ok(false) => {}
                Err(e) => out.problems.push(format!("recording the changes of `{}`: {e}", snap.command)),
            }
        } else {
            fold.add_records(&records, opts);
            fold.mark_still_running(&snap.parent, pids.len());
            out.running.push(StillRunning {
                parent: snap.parent.clone(),
                session: snap.session.clone(),
                pids,
                changes: records.iter().filter(|r| !r.path.is_empty()).count(),
            });
        }
    }
    out
}

/// Killed commands whose windows overlapped (an async subagent's command beside the main
/// thread's, two sessions' commands) all see a change made while both ran. Each change is
/// listed **once**, with the others that saw it as `candidates` (every killed command's window
/// stays open until walj sees its processes gone), as [`owner`](super::attribution::owner)
/// decides: under the one whose command line alone names the file, a pattern matching it or
/// its folder (`attribution: uncertain`, counted as its change); when none is singled out,
/// `attribution: undecided` — "uncertain: A or B", counted in neither's changes, listed under
/// the first started without its subagent (whose it is, is not known). A change made before
/// the later command started is only the earlier one's snapshot difference, so it stays
/// certain.
fn claim_once(derived: &mut [(PathBuf, Snapshot, Vec<Record>)]) {
    use super::attribution::{At, Evidence, Owner, Window, evidence, owner, shortened};
    use std::collections::HashMap;
    if derived.len() < 2 {
        return;
    }
    derived.sort_by(|a, b| (&a.1.ts, &a.1.parent).cmp(&(&b.1.ts, &b.1.parent)));
    let windows: Vec<Window> = derived
        .iter()
        .map(|(_, snap, _)| Window { id: &snap.parent, open: ms(&snap.ts).unwrap_or(0), close: None })
        .collect();
    // (path, after) → (its time, the indexes of the commands that saw it). (`Key`: one change)
    type Key = (String, Option<String>);
    let mut saw: HashMap<Key, (Option<i64>, Vec<usize>)> = HashMap::new();
    for (i, (_, _, records)) in derived.iter().enumerate() {
        for r in records.iter().filter(|r| !r.path.is_empty()) {
            let k = (r.path.clone(), r.after.as_ref().and_then(|b| b.id().map(str::to_string)));
            let at = r.get_str(key::CHANGED).and_then(ms);
            saw.entry(k).or_insert((at, Vec::new())).1.push(i);
        }
    }
    // (path, after) → (who keeps it, the other commands that saw it: id, shortened text).
    let keepers: HashMap<Key, (Owner, Vec<(String, String)>)> = saw
        .into_iter()
        .filter_map(|(k, (at, claimants))| {
            let names: Vec<Evidence> = derived.iter().map(|(_, snap, _)| evidence(&snap.command, &k.0)).collect();
            let at = at.map_or(At::Unknown, At::Exact);
            let keeper = owner(&windows, &claimants, &names, at, 0)?;
            let others = claimants
                .iter()
                .filter(|&&i| i != keeper.index())
                .map(|&i| (derived[i].1.parent.clone(), shortened(&derived[i].1.command, key::CANDIDATE_SHOWN)))
                .collect();
            Some((k, (keeper, others)))
        })
        .collect();
    drop(windows);
    for (i, (_, _, records)) in derived.iter_mut().enumerate() {
        let taken = std::mem::take(records);
        for r in taken {
            if r.path.is_empty() {
                // The command's own `unseen` note: each keeps its own.
                records.push(r);
                continue;
            }
            let k = (r.path.clone(), r.after.as_ref().and_then(|b| b.id().map(str::to_string)));
            let Some((keeper, others)) = keepers.get(&k) else { continue };
            if keeper.index() != i {
                continue;
            }
            if others.is_empty() {
                records.push(r);
                continue;
            }
            // Each other claimant's snapshot saw the change after its Pre: its window was open.
            // One made after the session stopped stays that; candidates already named stay.
            let after_stop = r.get_str(key::ATTRIBUTION) == Some(attribution::AFTER_STOP);
            let undecided = matches!(keeper, Owner::Undecided(_));
            let kept = match (after_stop, undecided) {
                (true, _) => attribution::AFTER_STOP,
                (false, true) => attribution::UNDECIDED,
                (false, false) => attribution::UNCERTAIN,
            };
            let listed = |k: &str| -> Vec<String> {
                r.extra
                    .get(k)
                    .and_then(serde_json::Value::as_array)
                    .map(|a| a.iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect())
                    .unwrap_or_default()
            };
            let mut names = listed(key::CANDIDATES);
            let mut shown = listed(key::CANDIDATE_COMMANDS);
            shown.resize(names.len(), String::new());
            for (o, text) in others {
                if !names.contains(o) {
                    names.push(o.clone());
                    shown.push(text.clone());
                }
            }
            let mut r =
                r.with(key::ATTRIBUTION, kept).with(key::CANDIDATES, names).with(key::CANDIDATE_COMMANDS, shown);
            if undecided {
                // Not known to be this command's: nor its subagent's work.
                r.extra.remove(key::AGENT_ID);
            }
            records.push(r);
        }
    }
}

/// The Stop of `session`: its foreground commands that never got a PostToolUse (an
/// interrupted turn) get their child records now; the sidecars are removed. A command that
/// changed nothing (denied before it ran) yields nothing.
pub(crate) fn settle_own(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    session: &str,
) -> Result<Vec<Record>, SnapError> {
    let dir = bash_dir(project);
    let mut own = Vec::new();
    for path in candidates(&dir) {
        let Ok(snap) = load(&path) else { continue };
        if snap.session == session && !snap.background {
            own.push((path, snap));
        }
    }
    if own.is_empty() {
        return Ok(Vec::new());
    }
    let all =
        Fold::load(&project.journal, &FoldOptions { keep_settled: true, all_commands: true, ..Default::default() })
            .map_err(io_err(&project.journal, "reading"))?;
    let mut out = Vec::new();
    for (path, snap) in own {
        let done = already_recorded(&all, &snap);
        let records = if done || !cfg.bash.snapshot { Vec::new() } else { derive(project, cfg, matcher, &snap, &all)? };
        remove_snapshot(&dir, &path, snap.index.as_ref());
        out.extend(records);
        if !done {
            // Its turn ended at this Stop: so did its window.
            out.push(gone_record(&snap));
        }
    }
    Ok(out)
}

/// Sidecars of foreground commands without an outcome, and claims left behind by a killed
/// walj (older than the grace period).
fn candidates(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else { return Vec::new() };
    let mut out = Vec::new();
    for ent in rd.flatten() {
        let name = ent.file_name().to_string_lossy().into_owned();
        let sidecar = name.ends_with(".json") && name != "cache.json";
        let stale_claim = name.contains(CLAIM)
            && ent
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|d| d > CLAIM_GRACE);
        if sidecar || stale_claim {
            out.push(ent.path());
        }
    }
    out.sort();
    out
}

/// The child records of a killed command: what changed since its snapshot, less what other
/// journaled tool calls explain, each judged by the rule of [`super::attribution`].
fn derive(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    snap: &Snapshot,
    all: &Fold,
) -> Result<Vec<Record>, SnapError> {
    use super::attribution::{self as rule, Scene, Verdict, Window};
    let mut tree = Tree::open(project, cfg, matcher);
    let now = tree.take(Some(snap), None)?;
    let changes = tree.diff(snap, &now)?;
    let since = snap.ts.as_str();
    // Other tool calls (any session) journaled since the snapshot, by path.
    let others: Vec<&crate::fold::Entry> = all
        .entries
        .iter()
        .filter(|e| {
            e.session != snap.session || (e.id != snap.parent && e.parent.as_deref() != Some(snap.parent.as_str()))
        })
        // A file tool call still in flight (an intent, no outcome) may have written after the
        // snapshot whenever it started.
        .filter(|e| {
            e.applied_ts.as_deref().unwrap_or(&e.ts) >= since || (e.applied_ts.is_none() && e.intended.is_some())
        })
        .collect();
    // When another session became active while the command could run: an unexplained change
    // made since may be its (or the user's), one made before is the command's.
    // (Its own hooks' records: what walj derived for a dead session since is no sign of it.)
    let crowded_from: Option<String> = all
        .sessions
        .iter()
        .filter(|s| {
            let last = if s.last_life_ts.is_empty() { s.last_ts.as_str() } else { s.last_life_ts.as_str() };
            s.session != snap.session && (last >= since || s.status() == SessionStatus::Live)
        })
        .map(|s| s.first_ts.as_str().max(since).to_string())
        .min();
    // Every other command's window: from its intent to its outcome, or — never finished — to
    // the moment walj saw its processes gone (a dead session's command is no suspect for what
    // was made after that); still open while they may run.
    let windows: Vec<(String, i64, Option<i64>)> = all
        .sessions
        .iter()
        .flat_map(|s| s.commands.iter())
        .filter(|c| c.id != snap.parent)
        .filter_map(|c| {
            let close = c.ended_ts.as_deref().or(c.gone_ts.as_deref()).and_then(ms);
            Some((c.id.clone(), ms(&c.ts)?, close))
        })
        .filter(|(_, _, close)| close.is_none_or(|c| c >= ms(since).unwrap_or(0)))
        .collect();
    // Their command lines, as the readers name them.
    let texts: std::collections::HashMap<&str, String> = all
        .sessions
        .iter()
        .flat_map(|s| s.commands.iter())
        .map(|c| (c.id.as_str(), rule::shortened(&c.command, key::CANDIDATE_SHOWN)))
        .collect();
    let own = Window { id: &snap.parent, open: ms(since).unwrap_or(0), close: None };
    // Without a watcher, the last sign of life in the journal and the transcript; with one that
    // saw Claude Code's process end, that moment (said on each after-stop entry).
    let journal_life = last_sign_of_life(all, &snap.session);
    let seen_end = observed_end(project, all, &snap.session, since);
    let end_seen = seen_end.filter(|e| journal_life.is_none_or(|j| *e >= j)).and_then(ts_of);
    let scene = Scene {
        others: windows.iter().map(|(id, open, close)| Window { id, open: *open, close: *close }).collect(),
        writer_from: crowded_from.as_deref().and_then(ms),
        last_life: journal_life.max(seen_end),
        margin: ctime_margin(project),
    };
    let mut kept: Vec<(Change, Verdict, Option<i64>, bool)> = Vec::new();
    // What the watcher saw, read once, only when a change has no time of its own.
    let mut watched: Option<Option<std::collections::HashMap<String, i64>>> = None;
    for c in changes {
        if let Some(base) = super::attribution::claude_temp_of(&c.rel)
            && others.iter().any(|e| e.path == base)
        {
            // Claude Code's own temporary file for a file tool call on `base` (journaled):
            // part of that call, never a change (left behind when it was cut off mid-write).
            continue;
        }
        let after = c.after.blob();
        let on_path: Vec<&&crate::fold::Entry> = others.iter().filter(|e| e.path == c.rel).collect();
        let after_id = after.as_ref().and_then(|b| b.id());
        let mode_changed = c.x_before.zip(c.x_after).is_some_and(|(b, a)| b != a);
        if !mode_changed
            && on_path.iter().any(|e| {
                (e.after.is_some() && e.after.as_ref().map(|b| b.id()) == after.as_ref().map(|b| b.id()))
                    || (after_id.is_some() && e.intended.as_deref() == after_id)
            })
        {
            // The disk holds what another journaled call wrote, or what one meant to write
            // (its intent's content; it may have been cut off after writing): its change, not
            // the command's.
            continue;
        }
        let mut at = change_time(&project.root, &c.rel);
        if !matches!(at, rule::At::Exact(_)) {
            // A deletion: its folder's ctime moves with every later entry made or removed in it
            // (the user's own, after the crash). The watcher dates it better when it saw it.
            let seen = watched.get_or_insert_with(|| observed_changes(project, cfg, ms(since).unwrap_or(i64::MAX)));
            if let Some(&t) = seen.as_ref().and_then(|m| m.get(&c.rel)) {
                at = match at {
                    rule::At::NoLaterThan(f) => rule::At::NoLaterThan(f.min(t)),
                    _ => rule::At::NoLaterThan(t),
                };
            }
        }
        let mut verdict = rule::judge(&own, &scene, at);
        // A change the command's own text names (the file, a pattern matching it, its folder)
        // made after Claude Code's last sign of life: the command's processes write until walj
        // sees them gone, whether Claude Code waited in silence (a codemod that outlasts the
        // last transcript write) or died (an orphan goes on). The clock alone never moves such
        // a change out of the command most likely to have made it, nor makes it uncertain by
        // falling within the clock's margin of that sign of life: judged as if the session
        // still lived (other open windows and writers can still make it uncertain).
        if verdict != Verdict::Certain && rule::evidence(&snap.command, &c.rel) != rule::Evidence::None {
            verdict = rule::judge(&own, &Scene { last_life: None, ..scene.clone() }, at);
        }
        let mut redated = false;
        if verdict == Verdict::AfterStop
            && let rule::At::Exact(c_at) = at
        {
            // Metadata never re-dates content (`attribution::redate`): the watcher's last
            // content change on the path, else the file's mtime.
            let seen = watched.get_or_insert_with(|| observed_changes(project, cfg, ms(since).unwrap_or(i64::MAX)));
            let content = seen.as_ref().and_then(|m| m.get(&c.rel)).copied();
            let file = project.root.join(crate::fsutil::name::to_path(&c.rel));
            (verdict, at, redated) = rule::redate(&own, &scene, c_at, content, || mtime_ms(&file));
        }
        if !on_path.is_empty() && verdict == Verdict::Certain {
            // Another call journaled this path since: the disk matches neither's image.
            verdict = Verdict::Uncertain(Vec::new());
        }
        let when = match at {
            rule::At::Exact(t) | rule::At::NoLaterThan(t) => Some(t),
            rule::At::Unknown => None,
        };
        kept.push((c, verdict, when, redated));
    }
    // Why no watcher saw Claude Code end, said on each after-stop entry it leaves bounded by the
    // last sign of life only (the clock walj did not have).
    let absent_why = || -> String {
        if !cfg.bash.watcher {
            return "the watcher is off ([bash] watcher = false)".into();
        }
        let workdir = crate::git::find(&project.root).map_or_else(|| project.root.clone(), |(w, _)| w);
        let places = crate::watch::Places::of(&workdir).ok();
        let now = crate::watch::absence(places.as_ref(), &super::observed_path(project));
        match snap.watch.as_deref() {
            Some(w) if crate::watch::is_absence(w) => {
                format!("at the command's start: {w}; {now}")
            }
            _ => now,
        }
    };
    let absent = (end_seen.is_none() && kept.iter().any(|(_, v, _, _)| *v == Verdict::AfterStop)).then(absent_why);
    let changes: Vec<Change> = kept.iter().map(|(c, _, _, _)| c.clone()).collect();
    let records = child_records(matcher, snap, &changes, PHASE, false);
    let unseen = tree.unseen(snap, &now, &changes);
    let mut out: Vec<Record> = records
        .into_iter()
        .zip(kept)
        .map(|(r, (_, verdict, when, redated))| {
            let mut r = r.with(key::UNFINISHED, true);
            if let Some(t) = when.and_then(ts_of) {
                r = r.with(key::CHANGED, t);
            }
            match verdict {
                Verdict::Certain => r,
                Verdict::AfterStop => match (&end_seen, &absent) {
                    (Some(t), _) => r.with(key::ATTRIBUTION, attribution::AFTER_STOP).with(key::END_SEEN, t.as_str()),
                    (None, Some(why)) => {
                        r.with(key::ATTRIBUTION, attribution::AFTER_STOP).with(key::WATCH_ABSENT, why.as_str())
                    }
                    (None, None) => r.with(key::ATTRIBUTION, attribution::AFTER_STOP),
                },
                Verdict::Uncertain(_) if redated => r.with(key::ATTRIBUTION, attribution::REDATED),
                Verdict::Uncertain(c) if c.is_empty() => r.with(key::ATTRIBUTION, attribution::UNCERTAIN),
                Verdict::Uncertain(c) => {
                    let shown: Vec<String> = c.iter().map(|id| texts.get(id).cloned().unwrap_or_default()).collect();
                    r.with(key::ATTRIBUTION, attribution::UNCERTAIN)
                        .with(key::CANDIDATES, c)
                        .with(key::CANDIDATE_COMMANDS, shown)
                }
            }
        })
        .collect();
    if !unseen.is_empty() {
        // What the count leaves out, beside the entries (no path: never an entry itself).
        let mut r = Record::new(crate::journal::op::SESSION, &snap.session);
        r.kind = Some(crate::journal::kind::UNSEEN.to_string());
        r.target = Some(snap.parent.clone());
        out.push(r.with(key::UNSEEN, serde_json::json!(unseen)).with(key::UNFINISHED, true));
    }
    Ok(out)
}

/// A journal timestamp as milliseconds since the epoch.
pub(crate) fn ms(ts: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(ts).ok().map(|t| t.timestamp_millis())
}

fn ts_of(ms: i64) -> Option<String> {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms).map(|t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

/// The last sign of life of `session` without a watcher: the latest of its last journal
/// record (its own hooks', not what walj derived for it since) and its transcript's mtime.
fn last_sign_of_life(all: &Fold, session: &str) -> Option<i64> {
    let s = all.session(session)?;
    let journal = ms(&s.last_life_ts).or_else(|| ms(&s.last_ts));
    let transcript = s
        .transcript
        .as_deref()
        .and_then(|t| fs::metadata(t).ok())
        .and_then(|m| m.modified().ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_millis()).ok());
    journal.max(transcript).or(journal)
}

/// When the checkout's watcher saw `session`'s Claude Code process end (milliseconds since the
/// epoch; the lower bound of the moment), for the first end at or after `since`: read from its
/// observer file ([`super::observed_path`]), never from the journal. The watcher writes the end
/// the moment the process exits (its pidfd); when it was watching the session and the process
/// is gone but the line is not there yet, this waits for it while the watcher lives (at most
/// [`END_WAIT`], only at a killed command's first look). `None`: no watcher saw it end — the bound without a watcher
/// ([`last_sign_of_life`]) stands.
fn observed_end(project: &Project, all: &Fold, session: &str, since: &str) -> Option<i64> {
    let from = ms(since).unwrap_or(0);
    let path = super::observed_path(project);
    let read = || -> (bool, Option<i64>) {
        let Ok(text) = crate::fsutil::read_regular(&path) else { return (false, None) };
        let (mut watched, mut end) = (false, None::<i64>);
        for line in String::from_utf8_lossy(&text).lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            if v["session"].as_str() != Some(session) {
                continue;
            }
            match v["ev"].as_str() {
                Some("session") => watched = true,
                Some("end") => {
                    let (Some(ns), Some(within)) = (v["ns"].as_i64(), v["within_ms"].as_i64()) else { continue };
                    let at = ns / 1_000_000 - within;
                    if ns / 1_000_000 >= from && end.is_none_or(|e| at < e) {
                        end = Some(at);
                    }
                }
                _ => {}
            }
        }
        (watched, end)
    };
    let (watched, end) = read();
    if end.is_some() || !watched {
        return end;
    }
    let gone =
        all.session(session).and_then(|s| s.proc).is_some_and(|p| procinfo::liveness(p) == procinfo::Liveness::Gone);
    if !gone {
        return None;
    }
    // The watcher writes the end the moment its pidfd fires; on a loaded machine that can take
    // a while. Waited for while the watcher lives (its claim is held), at most 5 s; a dead
    // watcher writes nothing more.
    let workdir = crate::git::find(&project.root).map_or_else(|| project.root.clone(), |(w, _)| w);
    let places = crate::watch::Places::of(&workdir).ok();
    let started = std::time::Instant::now();
    while started.elapsed() < END_WAIT {
        std::thread::sleep(std::time::Duration::from_millis(50));
        if let (_, Some(e)) = read() {
            return Some(e);
        }
        if started.elapsed() > std::time::Duration::from_millis(500)
            && places.as_ref().is_none_or(|p| !crate::watch::claimed(p))
        {
            break;
        }
    }
    read().1
}

/// How long a killed command's first look waits for a living watcher to write its session's end.
const END_WAIT: Duration = Duration::from_secs(5);

/// The latest moment the checkout's watcher took in a change of each path (ms since the epoch,
/// rounded up), when its observer file can be trusted for it: the watcher that answers now
/// (a barrier that also writes its pending lines, [`crate::watch::sync_flushed`]) started and
/// finished its first crawl, without doubt, before `since` (the command's snapshot), and
/// neither doubted, restarted nor left since. A change is made at or before the moment the
/// watcher took it in, so the last one on a path bounds when the path took its present state
/// (a deletion, which has no ctime of its own). `None`: no such watcher, or it cannot tell.
fn observed_changes(project: &Project, cfg: &Config, since: i64) -> Option<std::collections::HashMap<String, i64>> {
    if !cfg.bash.snapshot || !cfg.bash.watcher {
        return None;
    }
    let (workdir, _) = crate::git::find(&project.root)?;
    let places = crate::watch::Places::of(&workdir).ok()?;
    let answer = crate::watch::sync_flushed(&places, &project.dir, Duration::from_millis(500)).ok()?;
    let text = crate::fsutil::read_regular(&super::observed_path(project)).ok()?;
    let (mut ours, mut seen) = (false, None::<std::collections::HashMap<String, i64>>);
    for line in String::from_utf8_lossy(&text).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let ns = v["ns"].as_i64().unwrap_or(i64::MAX);
        let at = ns.saturating_add(999_999) / 1_000_000;
        match v["ev"].as_str() {
            Some("start") => {
                // Another watcher's start after this one's: two streams, neither complete.
                ours = v["epoch"].as_str() == Some(answer.epoch.as_str()) && at <= since;
                seen = None;
            }
            Some("ready") if ours => {
                if !v["doubt"].is_null() || at > since {
                    return None;
                }
                seen = Some(std::collections::HashMap::new());
            }
            Some("doubt" | "exit") if ours => return None,
            // Attribute-only changes (`chmod`, `touch -r`: `kind: "attribute"`) never date the
            // content; lines without a kind (older watchers) count as content.
            Some("change") if v["kind"].as_str() != Some("attribute") => {
                if let (Some(m), Some(p)) = (seen.as_mut(), v["path"].as_str()) {
                    m.insert(p.to_string(), at);
                }
            }
            _ => {}
        }
    }
    if ours { seen } else { None }
}

/// When the change at `rel` was made: its ctime; a deletion is bounded by its nearest
/// existing folder's ctime (which only proves "no later than").
pub(crate) fn change_time(root: &Path, rel: &str) -> super::attribution::At {
    use super::attribution::At;
    let abs = root.join(crate::fsutil::name::to_path(rel));
    if let Some(t) = ctime_ms(&abs) {
        return At::Exact(t);
    }
    let mut dir = abs.parent();
    while let Some(d) = dir {
        if let Some(t) = ctime_ms(d) {
            return At::NoLaterThan(t);
        }
        if d == root {
            break;
        }
        dir = d.parent();
    }
    At::Unknown
}

/// A path's ctime (its own, not a link's target), ms since the epoch; the mtime where no
/// ctime exists (Windows).
fn ctime_ms(abs: &Path) -> Option<i64> {
    let meta = fs::symlink_metadata(abs).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(meta.ctime() * 1000 + meta.ctime_nsec() / 1_000_000)
    }
    #[cfg(not(unix))]
    {
        let t = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
        i64::try_from(t.as_millis()).ok()
    }
}

/// A path's mtime (its own, not a link's target), ms since the epoch: the content's own clock,
/// set freely (`touch -d`, `cp -p`), so only ever a reason for doubt.
fn mtime_ms(abs: &Path) -> Option<i64> {
    let t = fs::symlink_metadata(abs).ok()?.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(t.as_millis()).ok()
}

/// The least margin, in ms, however fine the file system's clock.
const MIN_MARGIN_MS: i64 = 2;

/// How far a ctime can sit from the journal's clock: written once, read back. A file is
/// written in `.walj/` between two reads of the clock; its ctime's distance outside that span
/// (a coarse kernel clock, a network file system's clock) plus the span itself is the margin
/// within which no verdict is certain. Falls back to 1 s when `.walj/` cannot be written.
pub(crate) fn ctime_margin(project: &Project) -> i64 {
    let probe = project.dir.join(format!("ctime-probe.{}", std::process::id()));
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .and_then(|d| i64::try_from(d.as_micros()).ok())
            .unwrap_or(0)
    };
    let before = now();
    // A new file, never through a link planted at its name.
    let written = crate::fsutil::open_private(&probe, fs::OpenOptions::new().write(true).create_new(true))
        .and_then(|mut f| io::Write::write_all(&mut f, b"walj ctime probe\n"));
    let after = now();
    let c = written.ok().and_then(|()| fs::symlink_metadata(&probe).ok());
    let _ = fs::remove_file(&probe);
    let Some(meta) = c else { return 1000 };
    #[cfg(unix)]
    let c_us = {
        use std::os::unix::fs::MetadataExt;
        meta.ctime() * 1_000_000 + meta.ctime_nsec() / 1000
    };
    #[cfg(not(unix))]
    let c_us = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_micros()).ok())
        .unwrap_or(before);
    let off = if c_us < before { before - c_us } else { c_us.saturating_sub(after) };
    // The journal's times are in ms: one more for their rounding.
    ((off + (after - before)) / 1000 + 1).max(MIN_MARGIN_MS)
}

/// `kind: gone` for the killed command `snap`: walj saw its processes gone now (not a sign of
/// its session's life: marked `unfinished` like its derived entries).
fn gone_record(snap: &Snapshot) -> Record {
    let mut r = Record::new(crate::journal::op::SESSION, &snap.session);
    r.kind = Some(crate::journal::kind::GONE.to_string());
    r.target = Some(snap.parent.clone());
    r.with(key::UNFINISHED, true)
}

/// True when the journal already has the command's derived children (a walj killed after
/// appending them, before removing its claim), or its outcome (a PostToolUse killed after
/// appending its entries, before removing the sidecar: [`super::Done`]).
fn already_recorded(all: &Fold, snap: &Snapshot) -> bool {
    let parent = snap.parent.as_str();
    all.entries.iter().any(|e| e.unfinished && e.parent.as_deref() == Some(parent) && same_session(&e.session, snap))
        || has_outcome(all, snap)
}

/// True when the journal has the outcome of the command of `snap` (its PostToolUse appended):
/// a command of its own session with its id (another session's call with the same id is
/// another command).
fn has_outcome(all: &Fold, snap: &Snapshot) -> bool {
    all.sessions
        .iter()
        .filter(|s| same_session(&s.session, snap))
        .any(|s| s.commands.iter().any(|c| c.id == snap.parent && c.status != crate::fold::CommandStatus::InFlight))
}

/// Whether `session` (a fold's session key) is the session of `snap` (a sidecar without a
/// session matches any).
fn same_session(session: &str, snap: &Snapshot) -> bool {
    snap.session.is_empty() || session == snap.session
}

/// Claims the sidecar at `path` (an atomic rename: one process wins), appends `records`
/// unless they are already in the journal, and removes the claim. `Ok(false)`: another
/// process claimed it first.
fn materialise(
    project: &Project,
    dir: &Path,
    path: &Path,
    snap: &Snapshot,
    records: &[Record],
    all: &Fold,
) -> Result<bool, SnapError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let key = name.split('.').next().unwrap_or_default();
    let claim = dir.join(format!("{key}{CLAIM}{}", std::process::id()));
    match fs::rename(path, &claim) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io_err(path, "claiming")(e)),
    }
    if !already_recorded(all, snap) {
        // The moment walj saw its processes gone closes its window (`gone`), whatever it changed.
        let mut out = records.to_vec();
        out.push(gone_record(snap));
        project.ensure_dir().map_err(io_err(&project.dir, "creating"))?;
        JournalWriter::new(&project.journal).append_all(&out).map_err(io_err(&project.journal, "appending"))?;
    }
    remove_snapshot(dir, &claim, snap.index.as_ref());
    Ok(true)
}
