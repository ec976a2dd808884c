//! Where Claude Code keeps things: its config folder (`$CLAUDE_CONFIG_DIR`, else `~/.claude`),
//! honoured here and only here, and the settings file of each scope.

use std::path::{Path, PathBuf};

/// Claude Code's config folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude` (the home folder as
/// the platform knows it: `$HOME`, `%USERPROFILE%` on Windows). `None` without either.
pub(crate) fn config_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(d));
    }
    std::env::home_dir().filter(|h| !h.as_os_str().is_empty()).map(|h| h.join(".claude"))
}

/// [`config_dir`], falling back to `./.claude` when there is no home folder either.
pub(crate) fn config_dir_or_default() -> PathBuf {
    config_dir().unwrap_or_else(|| std::env::home_dir().unwrap_or_else(|| PathBuf::from(".")).join(".claude"))
}

/// Claude Code's folder name for a working directory: every non-alphanumeric char → `-`.
pub fn encode_dir(dir: &Path) -> String {
    dir.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// Which settings file to edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SettingsScope {
    /// `<project>/.claude/settings.json` (committed, shared with the team).
    Project,
    /// `<project>/.claude/settings.local.json` (git-ignored, this machine only).
    Local,
    /// `<config dir>/settings.json`: `~/.claude/settings.json` or `$CLAUDE_CONFIG_DIR/settings.json`
    /// (every project of this user).
    User,
}

impl SettingsScope {
    pub(crate) const ALL: [SettingsScope; 3] = [SettingsScope::Project, SettingsScope::Local, SettingsScope::User];

    pub(crate) fn label(self) -> &'static str {
        match self {
            SettingsScope::Project => "project",
            SettingsScope::Local => "local",
            SettingsScope::User => "user",
        }
    }
}

/// Path of the settings file of `scope`; `config_dir` is Claude Code's config folder
/// ([`config_dir_or_default`] outside tests).
pub(crate) fn settings_path(scope: SettingsScope, project_root: &Path, config_dir: &Path) -> PathBuf {
    match scope {
        SettingsScope::Project => project_root.join(".claude").join("settings.json"),
        SettingsScope::Local => project_root.join(".claude").join("settings.local.json"),
        SettingsScope::User => config_dir.join("settings.json"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_per_scope() {
        let (root, cfg) = (Path::new("/p"), Path::new("/h/.claude"));
        assert_eq!(settings_path(SettingsScope::Project, root, cfg), Path::new("/p/.claude/settings.json"));
        assert_eq!(settings_path(SettingsScope::Local, root, cfg), Path::new("/p/.claude/settings.local.json"));
        assert_eq!(settings_path(SettingsScope::User, root, cfg), Path::new("/h/.claude/settings.json"));
    }

    #[test]
    fn encodes_dirs_like_claude_code() {
        assert_eq!(encode_dir(Path::new("/home/a/my_proj.x")), "-home-a-my-proj-x");
    }
}
