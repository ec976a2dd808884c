//! Where Claude Code finds `walj mcp` on the settings route: the project's `.mcp.json`
//! (Claude Code's project scope, committed), walj's entry added, found and removed there.
//! Everything else in the file is kept as it was.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::plugin::{MCP_ARGS, MCP_SERVER};
use crate::project::Project;

/// The file, relative to the project root.
pub(crate) const FILE: &str = ".mcp.json";

/// Errors reading or writing `.mcp.json`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum McpFileError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not JSON ({source}); fix or remove it, then run this again")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{path}: `mcpServers` is not an object; fix it by hand")]
    Shape { path: PathBuf },
    #[error("{path}: its `{MCP_SERVER}` server is not walj's ({found}); walj leaves it alone")]
    Taken { path: PathBuf, found: String },
}

pub(crate) fn path(project: &Project) -> PathBuf {
    project.root.join(FILE)
}

/// walj's entry, running `program` (`walj` on PATH).
pub(crate) fn entry(program: &str) -> Value {
    json!({"type": "stdio", "command": program, "args": MCP_ARGS})
}

/// Whether a server entry is walj's: `args` `["mcp"]`, a program named `walj` (any folder).
pub(crate) fn is_walj(server: &Value) -> bool {
    let program = server.get("command").and_then(Value::as_str).unwrap_or_default();
    let name = Path::new(program).file_name().and_then(|n| n.to_str()).unwrap_or_default();
    server.get("args") == Some(&json!(MCP_ARGS)) && (name == "walj" || name == "walj.exe")
}

fn read(path: &Path) -> Result<Option<Value>, McpFileError> {
    match std::fs::read(path) {
        Ok(b) => {
            serde_json::from_slice(&b).map(Some).map_err(|source| McpFileError::Json { path: path.into(), source })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(McpFileError::Io { path: path.into(), source }),
    }
}

fn write(path: &Path, v: &Value) -> Result<(), McpFileError> {
    let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
    text.push('\n');
    crate::fsutil::atomic_write(path, text.as_bytes(), Some(0o644))
        .map_err(|source| McpFileError::Io { path: path.into(), source })
}

/// walj's server entry in `path`, when there is one (whoever's it is: see [`is_walj`]).
pub(crate) fn declared(path: &Path) -> Result<Option<Value>, McpFileError> {
    Ok(read(path)?.and_then(|v| v.get("mcpServers")?.get(MCP_SERVER).cloned()))
}

/// Adds walj's entry running `program`. `Ok(false)`: it was there already, unchanged.
pub(crate) fn add(path: &Path, program: &str) -> Result<bool, McpFileError> {
    let mut root = read(path)?.unwrap_or_else(|| json!({}));
    let Some(obj) = root.as_object_mut() else { return Err(McpFileError::Shape { path: path.into() }) };
    let servers = obj.entry("mcpServers").or_insert_with(|| Value::Object(Map::new()));
    let Some(servers) = servers.as_object_mut() else { return Err(McpFileError::Shape { path: path.into() }) };
    let want = entry(program);
    match servers.get(MCP_SERVER) {
        Some(old) if *old == want => return Ok(false),
        Some(old) if !is_walj(old) => {
            return Err(McpFileError::Taken { path: path.into(), found: old.to_string() });
        }
        _ => {}
    }
    servers.insert(MCP_SERVER.into(), want);
    write(path, &root)?;
    Ok(true)
}

/// Removes walj's entry (and the file, when nothing else is left in it). `Ok(false)`: none.
pub(crate) fn remove(path: &Path) -> Result<bool, McpFileError> {
    let Some(mut root) = read(path)? else { return Ok(false) };
    let Some(servers) = root.get_mut("mcpServers").and_then(Value::as_object_mut) else { return Ok(false) };
    if !servers.get(MCP_SERVER).is_some_and(is_walj) {
        return Ok(false);
    }
    servers.remove(MCP_SERVER);
    let empty = servers.is_empty() && root.as_object().is_some_and(|o| o.len() == 1);
    if empty {
        std::fs::remove_file(path).map_err(|source| McpFileError::Io { path: path.into(), source })?;
    } else {
        write(path, &root)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_keeps_other_servers_and_remove_takes_only_walj() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        std::fs::write(&p, r#"{"mcpServers": {"other": {"command": "x"}}, "note": 1}"#).unwrap();
        assert!(add(&p, "walj").unwrap());
        assert!(!add(&p, "walj").unwrap());
        let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert!(is_walj(&v["mcpServers"]["walj"]));
        assert!(remove(&p).unwrap());
        let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert!(v["mcpServers"].get("walj").is_none());
        assert_eq!(v["note"], 1);
        // Alone in a file walj made: the file goes.
        let q = dir.path().join("b.json");
        add(&q, "walj").unwrap();
        assert!(remove(&q).unwrap());
        assert!(!q.exists());
        // Someone else's server named walj is never replaced.
        std::fs::write(&q, r#"{"mcpServers": {"walj": {"command": "node", "args": ["srv.js"]}}}"#).unwrap();
        assert!(matches!(add(&q, "walj"), Err(McpFileError::Taken { .. })));
        assert!(!remove(&q).unwrap());
    }
}
