//! `walj doctor`: how Bash snapshots were taken lately (the checkout's watcher, or why a full
//! scan) and the changes the full scan after Stop found the watcher had missed (src/bashsnap.rs,
//! src/watch.rs).

use super::{DoctorFinding, Level, check};
use crate::bashsnap::{self, RECONCILED, WATCH_OFF, WATCHED};
use crate::project::Project;

/// The findings (none before the first Bash snapshot, unless the runtime folder is unusable).
pub(crate) fn check(project: &Project) -> Vec<DoctorFinding> {
    let r = bashsnap::watch_report(project);
    let mut out = Vec::new();
    out.extend(run_dir(project));
    match r.last.as_deref() {
        None => {}
        Some(WATCHED) => out.push(DoctorFinding::new(
            Level::Ok,
            check::WATCHER,
            "Bash snapshots: the checkout's watcher named what changed (only those files were looked at)",
        )),
        Some(RECONCILED) => out.push(DoctorFinding::new(
            Level::Ok,
            check::WATCHER,
            "Bash snapshots: the watcher, checked by a full scan at the last Stop",
        )),
        Some(WATCH_OFF) => out.push(DoctorFinding::new(
            Level::Info,
            check::WATCHER,
            "Bash snapshots: full scans, the watcher is off ([bash] watcher = false in .walj/config.toml)",
        )),
        Some(why) => {
            let mut f = DoctorFinding::new(
                Level::Info,
                check::WATCHER,
                format!("Bash snapshots: the last one fell back to a full scan: {why}"),
            );
            f.details =
                vec!["nothing is lost (a full scan is what walj did before the watcher); it only costs time".into()];
            if crate::watch::is_absence(why) {
                // Why it did not listen: what the last watcher left (its claim, its observer file).
                let workdir = crate::git::find(&project.root).map_or_else(|| project.root.clone(), |(w, _)| w);
                let places = crate::watch::Places::of(&workdir).ok();
                let absence = crate::watch::absence(places.as_ref(), &bashsnap::observed_path(project));
                f.details.push(format!("why no watcher listened: {}", crate::present::text::shown(&absence)));
                f.details.push(
                    "cost besides time: a command killed with its session is dated by Claude Code's last sign of life, not by its end (changes after it read as possibly someone else's)".into(),
                );
            }
            out.push(f);
        }
    }
    if let Some(f) = unlisted(project) {
        out.push(f);
    }
    if r.faults > 0 {
        let mut f = DoctorFinding::new(
            Level::Warn,
            check::WATCHER,
            format!(
                "watcher faults: the full scan after Stop found {} change(s) in {} turn(s) that the watcher had not reported (journaled as uncertain side effects)",
                r.faults, r.fault_turns
            ),
        );
        f.details = r.fault_paths.iter().map(|p| format!("missed: {}", crate::present::text::shown(p))).collect();
        f.details.push(format!("log: {}", bashsnap::faults_path(project).display()));
        out.push(f);
    }
    out
}

/// The runtime folder the watcher's socket lives in, when the watcher is on and that folder
/// is not usable (another local user made it first, a link, open to others): no watcher can
/// run for this user, and every Bash snapshot is a full scan.
fn run_dir(project: &Project) -> Option<DoctorFinding> {
    let (cfg, _) = crate::config::Config::load_or_default(&project.config_path(), |_| {});
    if !cfg.bash.snapshot || !cfg.bash.watcher {
        return None;
    }
    let why = crate::watch::check_run_dir().err()?;
    let mut f = DoctorFinding::new(
        Level::Warn,
        check::WATCHER,
        format!("the watcher cannot run: {}", crate::present::text::shown(&why.to_string())),
    );
    f.details = vec![
        "cost: every Bash snapshot is a full scan of the work tree (slower on a large checkout; nothing is lost)"
            .into(),
        "fix: set WALJ_RUNTIME_DIR to a folder of your own (mode 0700), or remove the folder named above".into(),
    ];
    Some(f)
}

/// Commands that changed more paths than `[bash] max_changes`: the paths past it are in no
/// entry, listed in `.walj/unlisted/` (docs/bash-and-import.md, "Bounds").
fn unlisted(project: &Project) -> Option<DoctorFinding> {
    let dir = project.dir.join("unlisted");
    let mut lists: Vec<(String, usize)> = std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".txt"))
        .map(|e| {
            let n = std::fs::read_to_string(e.path()).map(|t| t.lines().count()).unwrap_or(0);
            (e.path().display().to_string(), n)
        })
        .collect();
    if lists.is_empty() {
        return None;
    }
    lists.sort();
    let paths: usize = lists.iter().map(|(_, n)| n).sum();
    let mut f = DoctorFinding::new(
        Level::Warn,
        check::WATCHER,
        format!(
            "{} changed more files than [bash] max_changes: {paths} path(s) past it are in no entry (not compared, no images); `walj recover` names the commands",
            if lists.len() == 1 { "a Bash command".to_string() } else { format!("{} Bash commands", lists.len()) }
        ),
    );
    f.details =
        lists.iter().map(|(p, n)| format!("{n} path(s) listed in {}", crate::present::text::shown(p))).collect();
    Some(f)
}
