//! walj's MCP server (`walj mcp`): declared by each walj plugin (`.mcp.json` at its root) and by
//! the project's `.mcp.json` (`walj install --mcp`), with a program that can run.

use std::path::Path;

use super::plugins::PluginInstall;
use super::{DoctorFinding, Level, check};
use crate::mcp::install as mcp_file;
use crate::project::Project;

/// The findings: one per plugin, one for the project's `.mcp.json`, or one saying that Claude
/// has no server to ask (an Info: the hooks journal all the same).
pub(super) fn findings(project: &Project, plugins: &[PluginInstall]) -> Vec<DoctorFinding> {
    let mut out = Vec::new();
    let mut declared = false;
    for p in plugins {
        match mcp_file::declared(&p.root.join(mcp_file::FILE)) {
            Ok(Some(s)) if mcp_file::is_walj(&s) => {
                declared = true;
                out.push(DoctorFinding::new(
                    Level::Ok,
                    check::MCP,
                    format!("{} declares walj's MCP server (`walj mcp`, read-only)", p.label()),
                ));
            }
            _ => out.push(DoctorFinding::new(
                Level::Info,
                check::MCP,
                format!(
                    "{} declares no walj MCP server (written by an older walj): `walj plugin --out {}` again adds it",
                    p.label(),
                    p.root.display()
                ),
            )),
        }
    }
    let path = mcp_file::path(project);
    match mcp_file::declared(&path) {
        Err(e) => out.push(DoctorFinding::new(Level::Warn, check::MCP, e.to_string())),
        Ok(Some(s)) if mcp_file::is_walj(&s) => {
            declared = true;
            let program = s.get("command").and_then(|c| c.as_str()).unwrap_or_default();
            if runs(program) {
                out.push(DoctorFinding::new(
                    Level::Ok,
                    check::MCP,
                    format!("{} declares walj's MCP server (`{program} mcp`)", path.display()),
                ));
            } else {
                out.push(DoctorFinding::new(
                    Level::Error,
                    check::MCP,
                    format!(
                        "{} declares walj's MCP server as `{program} mcp`, but no such program is on PATH: Claude Code cannot start it. Put walj on PATH, or `walj uninstall --mcp`",
                        path.display()
                    ),
                ));
            }
        }
        Ok(Some(_)) => out.push(DoctorFinding::new(
            Level::Warn,
            check::MCP,
            format!("{}: its `walj` server does not run `walj mcp`; walj leaves it alone", path.display()),
        )),
        Ok(None) => {}
    }
    if !declared {
        out.push(DoctorFinding::new(
            Level::Info,
            check::MCP,
            "no walj MCP server declared here: Claude reads the journal only through `walj` in Bash. `walj install --mcp` (or the walj plugin) adds it",
        ));
    }
    out
}

/// Whether `program` is a file that can run: a path, or a name found on PATH.
fn runs(program: &str) -> bool {
    let p = Path::new(program);
    if p.components().count() > 1 {
        return p.is_file();
    }
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(p).is_file()))
}
