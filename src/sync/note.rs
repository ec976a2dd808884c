//! The SessionStart line about other machines (docs/sync.md, "The SessionStart note"):
//! "walj: laptop has 3 unresolved entries (as of its last sync …); `walj recover` shows them."
//!
//! Counts only: no prompt, path or other text of another journal, and the line goes to the
//! user (`systemMessage`), never into Claude's context. Each sync (and each mark or hand-back of
//! another machine's entries) writes the counts to `.walj/remotes/summary.json`, so the hook
//! reads one small file and folds nothing. A machine's count is told once per change
//! (`.walj/sync/noted`), not at every session start.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Paths;
use crate::fold::FoldOptions;
use crate::present::plural;
use crate::project::Project;

/// One other journal's count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub journal: String,
    pub name: String,
    pub synced_at: String,
    pub unresolved: usize,
    pub sessions: usize,
}

fn summary_path(project: &Project) -> PathBuf {
    Paths::new(project).remotes.join("summary.json")
}

fn noted_path(project: &Project) -> PathBuf {
    Paths::new(project).dir.join("noted")
}

/// Writes `.walj/remotes/summary.json` from the copies (and this checkout's decisions about
/// their entries).
pub(crate) fn write_summaries(project: &Project) -> std::io::Result<()> {
    let (remotes, _) = super::remotes::load(project, &FoldOptions::default());
    write_summaries_of(project, &remotes)
}

/// [`write_summaries`] from the copies already folded (with the default options).
pub(crate) fn write_summaries_of(project: &Project, remotes: &[super::remotes::RemoteJournal]) -> std::io::Result<()> {
    let list: Vec<Summary> = remotes
        .iter()
        .map(|r| {
            let open: Vec<&crate::fold::Entry> = r.fold.unresolved().collect();
            let mut sessions: Vec<&str> = open.iter().map(|e| e.session.as_str()).collect();
            sessions.sort_unstable();
            sessions.dedup();
            Summary {
                journal: r.id.clone(),
                name: r.name().to_string(),
                synced_at: r.manifest.synced_at.clone(),
                unresolved: open.len(),
                sessions: sessions.len(),
            }
        })
        .collect();
    let path = summary_path(project);
    if list.is_empty() && !path.exists() {
        return Ok(());
    }
    crate::fsutil::create_private_dir(&Paths::new(project).remotes)?;
    crate::fsutil::atomic_write(&path, &serde_json::to_vec_pretty(&list).unwrap_or_default(), Some(0o600))
}

/// A machine's name as the note shows it: printable ASCII only, at most 40 characters.
fn label(name: &str) -> String {
    let clean: String = name.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '?' }).take(40).collect();
    if clean.chars().any(|c| c.is_ascii_alphanumeric()) { clean } else { "another machine".to_string() }
}

/// The line for the user at SessionStart, when another machine's count changed since it was
/// last told (and is not zero). Cheap: one small file read when nothing was ever synced.
pub(crate) fn session_start_line(project: &Project) -> Option<String> {
    let bytes = std::fs::read(summary_path(project)).ok()?;
    let list: Vec<Summary> = serde_json::from_slice(&bytes).ok()?;
    let noted: BTreeMap<String, (String, usize)> =
        std::fs::read(noted_path(project)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
    let now: BTreeMap<String, (String, usize)> =
        list.iter().map(|s| (s.journal.clone(), (s.synced_at.clone(), s.unresolved))).collect();
    if now == noted {
        return None;
    }
    let changed: Vec<&Summary> =
        list.iter().filter(|s| s.unresolved > 0 && noted.get(&s.journal) != now.get(&s.journal)).collect();
    let _ =
        crate::fsutil::atomic_write(&noted_path(project), &serde_json::to_vec(&now).unwrap_or_default(), Some(0o600));
    if changed.is_empty() {
        return None;
    }
    let parts: Vec<String> = changed
        .iter()
        .map(|s| {
            format!(
                "{} has {} in {} (as of its last sync, {})",
                label(&s.name),
                plural(s.unresolved, "unresolved entry", "unresolved entries"),
                plural(s.sessions, "session", "sessions"),
                crate::present::human_ts(&s.synced_at)
            )
        })
        .collect();
    Some(format!(
        "walj: {}. `walj recover` shows them and `walj sessions resume SID` continues one here (walj gives Claude nothing from other machines unless you ask).",
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shown_printable_and_short() {
        assert_eq!(label("laptop"), "laptop");
        assert_eq!(label("a\nb\u{1b}[31m"), "a?b?[31m");
        assert_eq!(label(&"x".repeat(100)).len(), 40);
        assert_eq!(label("\n"), "another machine");
    }
}
