//! `walj install --mcp` and `walj uninstall --mcp`: walj's MCP server declared in, and taken
//! out of, the project's `.mcp.json` ([`crate::mcp::install`]).

use crate::mcp::install::{add, declared, entry, path, remove};
use crate::plugin::MCP_SERVER;
use crate::project::Project;

/// `walj install --mcp`: walj's server in the project's `.mcp.json` (committed: asked first on
/// a terminal, `--yes` off one). `local`/`user`: Claude Code keeps those scopes in its own
/// `~/.claude.json`, which walj does not write; the `claude mcp add` line is printed instead.
pub(crate) fn install_cmd(project: &Project, local: bool, user: bool, yes: bool) -> anyhow::Result<i32> {
    use std::io::IsTerminal;
    let program = match super::setup::hook_command(None).strip_suffix(" hook") {
        Some("walj") => "walj".to_string(),
        Some(other) => other.trim_matches('\'').to_string(),
        None => "walj".to_string(),
    };
    if local || user {
        let scope = if user { "user" } else { "local" };
        println!(
            "Claude Code keeps {scope}-scope MCP servers in ~/.claude.json, its own state file, which walj does not write. Run:\n  claude mcp add --scope {scope} {MCP_SERVER} -- {} mcp",
            shell_word(&program)
        );
        return Ok(0);
    }
    let path = path(project);
    if program != "walj" {
        eprintln!(
            "walj: refused: `walj` on PATH is not this binary, and its absolute path ({program}) would be committed in {}, where it works on this machine only. Put walj on PATH, or use `walj install --mcp --local`.",
            path.display()
        );
        return Ok(super::setup::EXIT_REFUSED);
    }
    if declared(&path)?.is_some_and(|s| s == entry(&program)) {
        println!("{} already declares walj's MCP server (`walj mcp`).", path.display());
        return Ok(0);
    }
    if !yes {
        let what = format!(
            "walj install --mcp writes {} (committed with the project: everyone who opens it with Claude Code is asked to approve the `walj` server)",
            path.display()
        );
        if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            eprintln!("{what}.");
            if !super::prompt::confirm("Write it?")? {
                eprintln!("Nothing was written.");
                return Ok(super::EXIT_ERROR);
            }
        } else {
            eprintln!("walj: refused: {what}; pass --yes to write it. Nothing was written.");
            return Ok(super::EXIT_ERROR);
        }
    }
    add(&path, &program)?;
    println!(
        "Declared walj's MCP server in {} (`walj mcp`, read-only). Claude Code asks once to approve it; its tools are then `mcp__walj__recover`, `mcp__walj__entry`, … `walj uninstall --mcp` removes it.",
        path.display()
    );
    Ok(0)
}

/// `walj uninstall --mcp` (and plain `walj uninstall`): walj's server out of `.mcp.json`.
pub(crate) fn uninstall_cmd(project: &Project) -> anyhow::Result<i32> {
    let path = path(project);
    if remove(&path)? {
        println!("Removed walj's MCP server from {}.", path.display());
    } else {
        println!("No walj MCP server in {}.", path.display());
    }
    Ok(0)
}

fn shell_word(s: &str) -> String {
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
