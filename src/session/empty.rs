//! What to say when this checkout's journal holds nothing: the one message `walj recover`,
//! `log`, `sessions`, `status` and the TUI print (docs/project-root.md).
//!
//! It knows the state instead of guessing: walj installed (which settings files, or the
//! plugin) with nothing recorded yet; not installed (never advising `walj install` to a
//! plugin user); installed at the root's `settings.json` only, which sessions started in a
//! subfolder do not run; a journal in a subfolder, with the command that reads it
//! ([`crate::project::legacy`]); other worktrees of the same repository with unresolved
//! sessions (one line, with the command that shows them). It reads settings files, the
//! git dir's `worktrees/` folder (no git process) and other worktrees' journals (folded).

use std::path::{Path, PathBuf};

use crate::claude::paths::SettingsScope;
use crate::claude::settings::Installed;
use crate::fold::{Fold, FoldOptions};
use crate::project::{Project, legacy};

/// The message for `project`, whose journal has no record (missing or empty). `config_dir`:
/// Claude Code's config folder; `command`: the hook command `walj install` would write.
/// Lines end with `\n`; paths are shown relative to the current folder where they can be.
pub(crate) fn message(project: &Project, config_dir: &Path, command: &str) -> String {
    let installed = Installed::find(&project.root, config_dir, command);
    let mut out = String::new();
    out.push_str(&legacy_lines(project));
    out.push_str(&headline_of(&installed));
    out.push('\n');
    if installed.any() {
        if !installed.covers_subfolders() {
            out.push_str(
                "Sessions started in a subfolder are not journaled: Claude Code runs the root's \
                 .claude/settings.json hooks only for sessions started at the root. Run `walj install` again (it \
                 adds them to .claude/settings.local.json), or `walj install --user`.\n",
            );
        }
    } else {
        out.push_str(
            "`walj install` puts the hooks in .claude/settings.json and .claude/settings.local.json; \
             the plugin: `claude plugin install walj@walj`.\n\
             A session that ran before: `walj recover --from-transcripts` rebuilds it from Claude Code's transcripts.\n",
        );
    }
    if let Some(line) = other_worktrees_line(project) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The message's first line about the install (for the TUI's status line, which has one).
pub(crate) fn headline(project: &Project, config_dir: &Path, command: &str) -> String {
    headline_of(&Installed::find(&project.root, config_dir, command))
}

fn headline_of(installed: &Installed) -> String {
    if installed.any() {
        format!(
            "walj is installed ({}); nothing recorded yet: start a Claude Code session here or in any subfolder.",
            how_installed(installed)
        )
    } else {
        "walj is not installed here: run `walj install` (or `--user`), or use the walj plugin; it records from then on."
            .to_string()
    }
}

/// One line per subfolder journal ([`legacy::find`]): walj does not read it here, and the
/// command that does ([`how_to_read`]); empty when there is none.
pub(crate) fn legacy_lines(project: &Project) -> String {
    legacy::find(project).iter().map(|rel| format!("{}\n", legacy_line(rel))).collect()
}

/// What a subfolder journal `rel` is and how to read it, without the full stop.
pub(crate) fn legacy_line(rel: &str) -> String {
    format!(
        "A journal from before walj kept one journal per checkout is in {}/.walj/ (sessions started in that \
         subfolder): walj does not read it beside this one; read it with `{}`.",
        crate::present::text::safe(rel),
        crate::present::text::safe(&how_to_read(rel)),
    )
}

/// The command that reads the subfolder journal of `rel`: with that subfolder as the project
/// (its lines are the journal's v1 lines, which every walj reads).
pub(crate) fn how_to_read(rel: &str) -> String {
    format!("walj --project {} recover", crate::present::shell_quote(rel))
}

/// True when the journal of `project` holds no record (missing or empty).
pub(crate) fn journal_is_empty(project: &Project) -> bool {
    !std::fs::metadata(&project.journal).is_ok_and(|m| m.len() > 0)
}

fn how_installed(i: &Installed) -> String {
    let mut parts: Vec<String> = i
        .scopes
        .iter()
        .map(|s| match s {
            SettingsScope::Project => ".claude/settings.json".to_string(),
            SettingsScope::Local => ".claude/settings.local.json".to_string(),
            SettingsScope::User => "your user settings".to_string(),
        })
        .collect();
    if i.plugin {
        parts.push("the walj plugin".to_string());
    }
    parts.join(", ")
}

/// The other worktrees of `project`'s repository (their top folders), read from the common
/// git dir: the main checkout (the common dir's parent, when it is a `.git` folder) and each
/// `worktrees/<name>/gitdir`.
pub(crate) fn other_worktrees(project: &Project) -> Vec<PathBuf> {
    let Some((top, dirs)) = crate::git::find(&project.root) else { return Vec::new() };
    let mut out = Vec::new();
    let common = dirs.common_dir;
    if common.file_name().is_some_and(|n| n == ".git")
        && let Some(main) = common.parent()
    {
        out.push(main.to_path_buf());
    }
    if let Ok(rd) = std::fs::read_dir(common.join("worktrees")) {
        for e in rd.flatten() {
            let Ok(text) = std::fs::read_to_string(e.path().join("gitdir")) else { continue };
            if let Some(wt) = Path::new(text.trim()).parent() {
                out.push(wt.to_path_buf());
            }
        }
    }
    let me = std::fs::canonicalize(&top).unwrap_or(top);
    out.retain(|w| std::fs::canonicalize(w).is_ok_and(|w| w != me));
    out.sort();
    out.dedup();
    out
}

/// One line about other worktrees' unresolved sessions, with the command that shows them.
pub(crate) fn other_worktrees_line(project: &Project) -> Option<String> {
    let mut found: Vec<(PathBuf, usize)> = Vec::new();
    for wt in other_worktrees(project) {
        let other = Project::at(wt.clone(), None);
        if crate::project::trust::standing(&other) != crate::project::trust::Standing::Own {
            continue;
        }
        let Ok(fold) = Fold::load(&other.journal, &FoldOptions::default()) else { continue };
        let n = fold.unresolved().count();
        if n > 0 {
            found.push((wt, n));
        }
    }
    let total: usize = found.iter().map(|(_, n)| n).sum();
    let (first, _) = found.first()?;
    let path = first.display().to_string();
    let shown = crate::present::text::safe(&crate::present::shell_quote(&path)).into_owned();
    let more = match found.len() {
        1 => String::new(),
        n => format!(" (and {} more worktree{})", n - 1, if n == 2 { "" } else { "s" }),
    };
    Some(format!(
        "Another worktree has {total} unresolved entr{}: `walj --project {shown} recover`{more}.",
        if total == 1 { "y" } else { "ies" }
    ))
}
