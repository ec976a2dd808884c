//! Sessions started in a subfolder (docs/project-root.md): Claude Code started in
//! `pkg/core/` runs the hooks of the root's `.claude/settings.local.json`, the user's
//! settings and plugins, but not those of the root's `.claude/settings.json`. A walj
//! installed there alone journals only the sessions started at the root, silently: doctor
//! says so. It also names the subfolder journals of the walj before one project root
//! ([`crate::project::legacy`]).

use std::path::Path;

use super::{DoctorFinding, Level, check};
use crate::claude::settings::Installed;
use crate::project::{Project, legacy};

pub fn check(project: &Project, config_dir: &Path, command: &str, plugins: bool) -> Vec<DoctorFinding> {
    let mut findings = vec![];
    let mut installed = Installed::find(&project.root, config_dir, command);
    installed.plugin |= plugins;
    if installed.any() && !installed.covers_subfolders() {
        // Info, not a warning: the committed settings.json is the team's, and a session started
        // at the root is journaled; doctor's exit code stays what the hooks make it.
        findings.push(DoctorFinding::new(
            Level::Info,
            check::SUBFOLDER,
            "walj's hooks are in .claude/settings.json only: sessions started in a subfolder (`cd pkg && claude`) are \
             not journaled, as Claude Code runs the root's settings.json hooks only for sessions started at the root. \
             Run `walj install` again (it adds the same hooks to .claude/settings.local.json, which subfolder starts \
             run), or `walj install --user`, or use the walj plugin",
        ));
    } else if installed.any() {
        findings.push(DoctorFinding::new(
            Level::Ok,
            check::SUBFOLDER,
            format!(
                "sessions started in any subfolder journal into {}",
                crate::present::text::safe(&project.journal.display().to_string())
            ),
        ));
    }
    for l in legacy::find(project) {
        findings.push(DoctorFinding::new(
            Level::Warn,
            check::SUBFOLDER,
            format!(
                "{}/.walj/ holds a journal from before walj kept one journal per checkout (sessions started in that \
                 subfolder); new sessions journal into {}. Its entries are read beside this checkout's, paths \
                 under {}/; `walj compact --merge-legacy` merges it",
                crate::present::text::safe(&l.rel),
                crate::present::text::safe(&project.dir.display().to_string()),
                crate::present::text::safe(&l.rel),
            ),
        ));
    }
    for (rel, why) in legacy::refused(project) {
        findings.push(DoctorFinding::new(
            Level::Warn,
            check::SUBFOLDER,
            format!(
                "{}/.walj/journal.jsonl is not read: {}",
                crate::present::text::safe(&rel),
                crate::present::text::safe(&why)
            ),
        ));
    }
    findings
}
