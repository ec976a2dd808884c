//! The windows of a skill's `!` shell lines (`PreSkillShellCommand`, which no Post event
//! follows): opened by their snapshot, closed by the session's next hook event.

use super::{SnapError, bash_dir, io_err};
use crate::fsutil;
use crate::project::Project;
use std::fs;
use std::path::PathBuf;

/// The open window of a skill's `!` shell line (`PreSkillShellCommand`: no Post event
/// follows) in `session`: one small file whose absence every other hook of the session
/// checks with one `stat` ([`skill_windows_take`]).
pub(super) fn skill_marker(project: &Project, session: &str) -> PathBuf {
    let safe: String = session.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').take(64).collect();
    bash_dir(project).join(format!("skill-{safe}.open"))
}

/// Opens the window of a skill's shell line `id` (its snapshot was taken by [`before`]).
pub(crate) fn skill_window_open(project: &Project, session: &str, id: &str, command: &str) -> Result<(), SnapError> {
    let path = skill_marker(project, session);
    let line = serde_json::to_string(&(id, command)).unwrap_or_default();
    // Never through a link planted at `.walj/bash` or at the marker itself.
    let dir = bash_dir(project);
    fsutil::create_private_dir(&dir).map_err(io_err(&dir, "creating"))?;
    let mut f = fsutil::open_private(&path, fs::OpenOptions::new().create(true).append(true))
        .map_err(io_err(&path, "opening"))?;
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).map_err(io_err(&path, "writing"))
}

/// The skill shell lines of `session` whose windows are open, taken (their marker removed):
/// the session's next hook event closes them. One `stat` when there are none.
pub(crate) fn skill_windows_take(project: &Project, session: &str) -> Vec<(String, String)> {
    let path = skill_marker(project, session);
    if fs::symlink_metadata(&path).is_err() {
        return Vec::new();
    }
    // Renamed first: two hooks at once never close one window twice.
    let taken = path.with_extension(format!("taken{}", std::process::id()));
    if fs::rename(&path, &taken).is_err() {
        return Vec::new();
    }
    let text = fs::read_to_string(&taken).unwrap_or_default();
    let _ = fs::remove_file(&taken);
    text.lines().filter_map(|l| serde_json::from_str::<(String, String)>(l).ok()).collect()
}
