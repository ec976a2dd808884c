//! Codex CLI's hook trust. Codex runs a hook of `hooks.json` (user or project) only when its
//! user config (`$CODEX_HOME/config.toml`, default `~/.codex/config.toml`) holds, for that hook,
//!
//! ```toml
//! [hooks.state."<absolute path of hooks.json>:<event label>:<group index>:<handler index>"]
//! trusted_hash = "sha256:<hex>"
//! ```
//!
//! where the hash covers the hook's normalised definition; an untrusted or changed hook is
//! **skipped silently** (seen with codex-cli 0.171.0: no warning in `codex exec`). The
//! definition hashed: `{"event_name": <label>, "matcher": <matcher, none for
//! UserPromptSubmit and Stop>, "hooks": [{"type": "command", "command", "timeout" (600 when
//! unset, at least 1; SessionEnd 1..=3), "async" (false when unset), "statusMessage" (when
//! set)}]}`, object keys sorted, compact JSON, SHA-256. `walj install --agent codex` records
//! the trust of walj's own hooks this way; `walj doctor` recomputes and compares.
//!
//! Codex also reads a project's `.codex/` only when the project is trusted
//! (`[projects."<root>"] trust_level = "trusted"`); walj never sets that (it trusts the whole
//! project config), doctor reports it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Codex's label of a hook event in trust keys (`PreToolUse` → `pre_tool_use`).
pub(crate) fn event_label(event: &str) -> Option<&'static str> {
    Some(match event {
        "PreToolUse" => "pre_tool_use",
        "PermissionRequest" => "permission_request",
        "PostToolUse" => "post_tool_use",
        "PreCompact" => "pre_compact",
        "PostCompact" => "post_compact",
        "SessionStart" => "session_start",
        "SessionEnd" => "session_end",
        "UserPromptSubmit" => "user_prompt_submit",
        "SubagentStart" => "subagent_start",
        "SubagentStop" => "subagent_stop",
        "Stop" => "stop",
        _ => return None,
    })
}

/// The trust key of handler `handler` of group `group` of `event` in the hooks file `file`.
pub(crate) fn hook_key(file: &Path, label: &str, group: usize, handler: usize) -> String {
    format!("{}:{label}:{group}:{handler}", file.display())
}

/// The hash Codex expects for one command handler.
pub(crate) fn hook_hash(event: &str, label: &str, matcher: Option<&str>, handler: &Value) -> String {
    let timeout = handler.get("timeout").or_else(|| handler.get("timeoutSec")).and_then(Value::as_u64);
    let timeout = if event == "SessionEnd" { timeout.unwrap_or(1).clamp(1, 3) } else { timeout.unwrap_or(600).max(1) };
    let mut h = json!({
        "type": "command",
        "command": handler.get("command").and_then(Value::as_str).unwrap_or(""),
        "timeout": timeout,
        "async": handler.get("async").and_then(Value::as_bool).unwrap_or(false),
    });
    if let Some(m) = handler.get("statusMessage").and_then(Value::as_str) {
        h["statusMessage"] = json!(m);
    }
    let mut identity = json!({"event_name": label, "hooks": [h]});
    let matcher = if matches!(event, "UserPromptSubmit" | "Stop") { None } else { matcher };
    if let Some(m) = matcher {
        identity["matcher"] = json!(m);
    }
    let mut canonical = String::new();
    write_canonical(&identity, &mut canonical);
    let digest = Sha256::digest(canonical.as_bytes());
    let mut hex = String::with_capacity(71);
    hex.push_str("sha256:");
    for b in digest {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&o[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// One hook to trust: its key and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trust {
    pub key: String,
    pub hash: String,
}

/// The trust entries of the handlers `ours` recognises in a hooks file (`root`, at the absolute
/// path `file`), at their current positions.
pub fn entries(file: &Path, root: &Value, ours: &dyn Fn(&Value) -> bool) -> Vec<Trust> {
    let mut out = Vec::new();
    let Some(hooks) = root.get("hooks").and_then(Value::as_object) else { return out };
    for (event, groups) in hooks {
        let Some(label) = event_label(event) else { continue };
        for (gi, g) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = g.get("matcher").and_then(Value::as_str);
            for (hi, h) in g.get("hooks").and_then(Value::as_array).into_iter().flatten().enumerate() {
                if ours(h) {
                    out.push(Trust { key: hook_key(file, label, gi, hi), hash: hook_hash(event, label, matcher, h) });
                }
            }
        }
    }
    out
}

/// `$CODEX_HOME` (default `~/.codex`).
pub(crate) fn codex_home() -> PathBuf {
    match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => super::home().join(".codex"),
    }
}

/// The user config holding hook trust.
pub(crate) fn config_path() -> PathBuf {
    codex_home().join("config.toml")
}

/// The parsed config (`Ok(None)`: no file).
pub(crate) fn read_config(path: &Path) -> Result<Option<toml::Table>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => text.parse::<toml::Table>().map(Some).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The `trusted_hash` recorded for `key`.
pub fn trusted_hash<'a>(config: &'a toml::Table, key: &str) -> Option<&'a str> {
    config.get("hooks")?.get("state")?.get(key)?.get("trusted_hash")?.as_str()
}

/// Whether `[projects."<root>"] trust_level = "trusted"` (Codex reads the project's `.codex/`).
pub(crate) fn project_trusted(config: &toml::Table, root: &Path) -> bool {
    let Some(projects) = config.get("projects").and_then(|p| p.as_table()) else { return false };
    root.ancestors().any(|dir| {
        projects.get(&dir.display().to_string()).and_then(|p| p.get("trust_level")).and_then(|t| t.as_str())
            == Some("trusted")
    })
}

/// Whether `[features] hooks = false` (or the old `codex_hooks = false`) turned hooks off.
pub(crate) fn hooks_disabled(config: &toml::Table) -> bool {
    let Some(f) = config.get("features").and_then(|f| f.as_table()) else { return false };
    ["hooks", "codex_hooks"].iter().any(|k| f.get(*k).and_then(|v| v.as_bool()) == Some(false))
}

fn toml_key(key: &str) -> String {
    let mut s = String::with_capacity(key.len() + 2);
    s.push('"');
    for c in key.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

fn header(key: &str) -> String {
    format!("[hooks.state.{}]", toml_key(key))
}

/// Why [`with_trust`] could not record the trust (the message names the hook's key).
#[derive(Debug, thiserror::Error)]
pub(crate) enum TrustError {
    #[error("the trust entries would make it invalid TOML ({0})")]
    Invalid(toml::de::Error),
    #[error("its layout keeps walj from recording the trust of {key}")]
    Layout { key: String },
}

/// The config text with `entries` trusted: a missing `[hooks.state."<key>"]` table is
/// appended; an existing one written as such a table gets its `trusted_hash` line replaced.
/// The rest of the file (comments, order) is kept. `Err` when the result would not read back
/// with exactly these hashes (an unusual layout, e.g. an inline `hooks` table): the user is told
/// what to do instead.
pub(crate) fn with_trust(text: &str, entries: &[Trust]) -> Result<String, TrustError> {
    let mut out = text.to_string();
    for t in entries {
        let h = header(&t.key);
        let line = format!("trusted_hash = \"{}\"", t.hash);
        if let Some(at) = out.lines().position(|l| l.trim() == h) {
            let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
            let end = lines[at + 1..]
                .iter()
                .position(|l| l.trim_start().starts_with('['))
                .map_or(lines.len(), |i| at + 1 + i);
            match (at + 1..end).find(|&i| lines[i].trim_start().starts_with("trusted_hash")) {
                Some(i) => lines[i] = line,
                None => lines.insert(at + 1, line),
            }
            out = lines.join("\n");
            out.push('\n');
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            let _ = write!(
                out,
                "\n# walj: trust for walj's hook (`walj uninstall --agent codex` removes it)\n{h}\n{line}\n"
            );
        }
    }
    let parsed: toml::Table = out.parse().map_err(TrustError::Invalid)?;
    if let Some(bad) = entries.iter().find(|t| trusted_hash(&parsed, &t.key) != Some(t.hash.as_str())) {
        return Err(TrustError::Layout { key: bad.key.clone() });
    }
    Ok(out)
}

/// The config text without the tables of `keys` that walj added (header, its comment line,
/// `trusted_hash`); other contents of such a table keep it.
pub(crate) fn without_trust(text: &str, keys: &[String]) -> String {
    let headers: Vec<String> = keys.iter().map(|k| header(k)).collect();
    let lines: Vec<&str> = text.lines().collect();
    let mut keep = vec![true; lines.len()];
    for (i, l) in lines.iter().enumerate() {
        if !headers.iter().any(|h| l.trim() == h) {
            continue;
        }
        let end =
            lines[i + 1..].iter().position(|l| l.trim_start().starts_with('[')).map_or(lines.len(), |j| i + 1 + j);
        let body: Vec<usize> =
            (i + 1..end).filter(|&j| !lines[j].trim().is_empty() && !lines[j].trim_start().starts_with('#')).collect();
        if body.iter().all(|&j| lines[j].trim_start().starts_with("trusted_hash")) {
            keep[i] = false;
            for &j in &body {
                keep[j] = false;
            }
            if i > 0 && lines[i - 1].starts_with("# walj: trust") {
                keep[i - 1] = false;
                if i > 1 && lines[i - 2].trim().is_empty() {
                    keep[i - 2] = false;
                }
            }
        }
    }
    let mut out: String = lines.iter().zip(&keep).filter(|(_, k)| **k).map(|(l, _)| format!("{l}\n")).collect();
    if out.trim().is_empty() {
        out.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_stable_and_normalised() {
        let h = json!({"type": "command", "command": "walj hook --agent codex", "timeout": 10});
        let a = hook_hash("PreToolUse", "pre_tool_use", Some("Bash|apply_patch"), &h);
        assert!(a.starts_with("sha256:") && a.len() == 71);
        // The canonical form walj hashes (checked against codex-cli 0.171.0 by tests/e2e/agents.rs).
        let mut c = String::new();
        write_canonical(
            &json!({"matcher": "m", "hooks": [{"type": "command", "command": "c", "timeout": 1, "async": false}], "event_name": "x"}),
            &mut c,
        );
        assert_eq!(
            c,
            r#"{"event_name":"x","hooks":[{"async":false,"command":"c","timeout":1,"type":"command"}],"matcher":"m"}"#
        );
        // Stop and UserPromptSubmit hash without their matcher; SessionEnd's timeout is clamped.
        assert_eq!(hook_hash("Stop", "stop", Some("x"), &h), hook_hash("Stop", "stop", None, &h));
        let t3 = json!({"type": "command", "command": "walj hook --agent codex", "timeout": 3});
        assert_eq!(hook_hash("SessionEnd", "session_end", None, &h), hook_hash("SessionEnd", "session_end", None, &t3));
        assert_ne!(a, hook_hash("PostToolUse", "post_tool_use", Some("Bash|apply_patch"), &h));
    }

    #[test]
    fn trust_is_added_replaced_and_removed_keeping_the_rest() {
        let e = vec![
            Trust { key: "/p/.codex/hooks.json:stop:0:0".into(), hash: "sha256:aa".into() },
            Trust { key: "/p/.codex/hooks.json:pre_tool_use:1:0".into(), hash: "sha256:bb".into() },
        ];
        let text = "# mine\nmodel = \"gpt-5.5\"\n\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n";
        let out = with_trust(text, &e).unwrap();
        let t: toml::Table = out.parse().unwrap();
        assert_eq!(trusted_hash(&t, "/p/.codex/hooks.json:stop:0:0"), Some("sha256:aa"));
        assert!(out.starts_with(text) && project_trusted(&t, Path::new("/p")));
        // Idempotent, and a changed hash replaces the line.
        assert_eq!(with_trust(&out, &e).unwrap(), out);
        let e2 = vec![Trust { key: e[0].key.clone(), hash: "sha256:cc".into() }];
        let out2 = with_trust(&out, &e2).unwrap();
        assert_eq!(trusted_hash(&out2.parse().unwrap(), &e[0].key), Some("sha256:cc"));
        assert_eq!(out2.matches("[hooks.state.").count(), 2);
        // Removed exactly.
        let keys: Vec<String> = e.iter().map(|t| t.key.clone()).collect();
        assert_eq!(without_trust(&out, &keys), text);
        // An inline `hooks` table cannot take the entries: refused, never a broken file.
        assert!(with_trust("hooks = { state = {} }\n", &e).is_err());
        let t: toml::Table = "[features]\nhooks = false\n".parse().unwrap();
        assert!(hooks_disabled(&t));
    }
}
