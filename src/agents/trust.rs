//! The trust questions about the other agents' settings: does the agent read this project's
//! hooks at all? Asked by `walj install` (to say what else the user must do) and by
//! `walj doctor` (to report it). Codex's hook trust is in [`super::codex_trust`].

use std::path::Path;

use serde_json::Value;

use crate::claude::settings;

/// Whether Gemini CLI reads the project's settings: folder trust off (the default), or the
/// folder (or a parent) trusted in `~/.gemini/trustedFolders.json`.
pub(crate) fn gemini_folder_trusted(root: &Path) -> bool {
    let gemini = super::home().join(".gemini");
    let user = settings::read_json(&gemini.join("settings.json")).ok().flatten().unwrap_or(Value::Null);
    if user.pointer("/security/folderTrust/enabled").and_then(Value::as_bool) != Some(true) {
        return true;
    }
    let Ok(Some(trusted)) = settings::read_json(&gemini.join("trustedFolders.json")) else { return false };
    let Some(map) = trusted.as_object() else { return false };
    map.iter().any(|(p, v)| {
        let p = Path::new(p);
        match v.as_str() {
            Some("TRUST_FOLDER") => root.starts_with(p),
            Some("TRUST_PARENT") => p.parent().is_some_and(|parent| root.starts_with(parent)),
            _ => false,
        }
    })
}

/// Whether the project is among Copilot CLI's trusted folders (`trusted_folders` or
/// `trustedFolders` of `$COPILOT_HOME/config.json`, a folder or a parent).
pub(crate) fn copilot_folder_trusted(root: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(super::copilot_home().join("config.json")) else { return false };
    // The file starts with `//` comment lines.
    let json: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let Ok(v) = serde_json::from_str::<Value>(&json) else { return false };
    ["trusted_folders", "trustedFolders"].iter().any(|k| {
        v.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().filter_map(Value::as_str).any(|p| root.starts_with(Path::new(p))))
    })
}
