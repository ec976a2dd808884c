//! Sessions started in a subfolder (docs/project-root.md): Claude Code started in
//! `pkg/core/` runs the hooks of the root's `.claude/settings.local.json`, the user's
//! settings and plugins, but not those of the root's `.claude/settings.json`. A walj
//! installed there alone journals only the sessions started at the root, silently: doctor
//! says so. It also names a journal left in a subfolder by a walj build that kept one per
//! start folder, with the command that reads it ([`crate::project::legacy`]).

use std::path::Path;

use super::{DoctorFinding, Level, check};
use crate::claude::settings::Installed;
use crate::project::{Project, legacy};

pub(crate) fn check(project: &Project, config_dir: &Path, command: &str, plugins: bool) -> Vec<DoctorFinding> {
    let mut findings = vec![];
    let mut installed = Installed::find(&project.root, config_dir, command);
    installed.plugin |= plugins;
    if installed.any() && !installed.covers_subfolders() {
        // A warning: sessions started there journal nothing, silently (a fresh clone has only
        // the committed settings.json; `walj install` adds the copy the subfolders run).
        findings.push(DoctorFinding::new(
            Level::Warn,
            check::SUBFOLDER,
            format!(
                "walj's hooks are in .claude/settings.json only: sessions started in {} are not journaled (Claude \
                 Code runs the root's settings.json hooks only for sessions started at the root). Run `walj install` \
                 here: it adds the same hooks to .claude/settings.local.json, which sessions started in a subfolder run",
                start_folders(&project.root)
            ),
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
    for rel in legacy::find(project) {
        findings.push(DoctorFinding::new(
            Level::Warn,
            check::SUBFOLDER,
            format!(
                "{}/.walj/ holds a journal from before walj kept one journal per checkout (sessions started in that \
                 subfolder); new sessions journal into {}. walj does not read it beside this checkout's: read it \
                 with `{}`",
                crate::present::text::safe(&rel),
                crate::present::text::safe(&project.dir.display().to_string()),
                crate::present::text::safe(&crate::session::empty::how_to_read(&rel)),
            ),
        ));
    }
    findings
}

/// The folders a session could be started in below `root`, for the message: its first few
/// subfolders by name (`src/, tests/, … or any folder below them`), or "a subfolder".
fn start_folders(root: &Path) -> String {
    const SHOWN: usize = 4;
    let mut dirs: Vec<String> = std::fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    if dirs.is_empty() {
        return "a subfolder (`cd pkg && claude`)".to_string();
    }
    dirs.sort();
    let more = dirs.len() > SHOWN;
    dirs.truncate(SHOWN);
    let list: Vec<String> = dirs.iter().map(|d| format!("{}/", crate::present::text::safe(d))).collect();
    format!("{}{} or any folder below them", list.join(", "), if more { ", …" } else { "" })
}
