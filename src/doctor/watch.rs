//! `walj doctor`: how Bash snapshots were taken lately (the checkout's watcher, or why a full
//! scan) and the changes the full scan after Stop found the watcher had missed (src/bashsnap.rs,
//! src/watch.rs).

use super::{DoctorFinding, Level, check};
use crate::bashsnap::{self, RECONCILED, WATCH_OFF, WATCHED};
use crate::project::Project;

/// The findings (none before the first Bash snapshot).
pub fn check(project: &Project) -> Vec<DoctorFinding> {
    let r = bashsnap::watch_report(project);
    let mut out = Vec::new();
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
            out.push(f);
        }
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
