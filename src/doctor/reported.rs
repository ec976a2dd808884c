//! `walj doctor`: what Claude Code's own lists of the files its Bash commands changed
//! (`bashEditDiff.changedFiles`) named that walj's snapshot had not recorded, read from
//! `.walj/reported.jsonl` ([`crate::hook::witness`]).

use super::{DoctorFinding, Level, check};
use crate::hook::witness;
use crate::project::Project;

/// The findings (none when no list ever named a miss, a path outside or a cut).
pub(crate) fn check(project: &Project) -> Vec<DoctorFinding> {
    let s = witness::log_summary(project);
    let log = witness::log_path(project);
    let mut out = Vec::new();
    if s.missed > 0 {
        let mut f = DoctorFinding::new(
            Level::Warn,
            check::REPORTED,
            format!(
                "Claude Code's own list named {} changed file(s) in {} Bash command(s) that walj's snapshot missed (journaled as reported entries, without a pre-image)",
                s.missed, s.missed_commands
            ),
        );
        f.details = s.last_paths.iter().map(|p| format!("latest: {}", crate::present::text::shown(p))).collect();
        f.details.push(format!("log: {}", log.display()));
        out.push(f);
    }
    if s.only_witness > 0 {
        out.push(DoctorFinding::new(
            Level::Info,
            check::REPORTED,
            format!(
                "[bash] snapshot = false: {} changed file(s) of {} Bash command(s) were journaled from Claude Code's own list alone (no pre-images)",
                s.only_witness, s.only_witness_commands
            ),
        ));
    }
    if s.more > 0 {
        out.push(DoctorFinding::new(
            Level::Warn,
            check::REPORTED,
            format!(
                "Claude Code's list of changed files stopped at 200 in {} Bash command(s) while walj's snapshot was off: {} more changed file(s) are in no entry ([bash] snapshot = true would record them)",
                s.more_commands, s.more
            ),
        ));
    }
    if s.outside > 0 {
        out.push(DoctorFinding::new(
            Level::Info,
            check::REPORTED,
            format!(
                "Bash commands changed {} file(s) outside the project by Claude Code's list (journaled as outside: nothing captured, never reverted)",
                s.outside
            ),
        ));
    }
    out
}
