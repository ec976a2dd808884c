//! `walj mcp`: the journal served to Claude over the Model Context Protocol (stdio, read-only).
//!
//! Claude Code starts `walj mcp` as a child (the plugin's `.mcp.json`, or the project's
//! `.mcp.json` that `walj install --mcp` writes) and talks JSON-RPC 2.0 with it, one message a
//! line on stdin and stdout ([`protocol`]). The tools ([`tools`]) answer what the commands'
//! `--json` answer, paged and bounded, with recorded text framed as data: they read the journal,
//! never act on it. What Claude may not do through them (revert, mark, hand back, undo) the
//! server's instructions tell it to ask the user for, naming the `walj` command.
//!
//! Start-up reads nothing: `initialize` is answered before any fold, watcher or lock (the first
//! `tools/call` folds the journal, as `walj recover --json` does).

pub mod install;
pub mod protocol;
pub mod rpc;
pub mod tools;

use std::io::{self, BufRead, Write};

use crate::project::Project;

/// Serves stdin/stdout until stdin ends. Exit status 0; stdout closed under it ends it quietly.
pub(crate) fn serve_stdio(project: &Project) -> anyhow::Result<i32> {
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    match serve(project, stdin, stdout) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(anyhow::anyhow!("walj mcp: {e}")),
        Ok(()) => Ok(0),
    }
}

/// Reads one JSON-RPC message (or batch) a line from `input` and writes each reply as one line
/// to `output`, flushed, until `input` ends.
pub(crate) fn serve(project: &Project, mut input: impl BufRead, mut output: impl Write) -> io::Result<()> {
    let mut server = protocol::Server::new(project.clone());
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(reply) = server.handle_line(&line) {
            serde_json::to_writer(&mut output, &reply)?;
            output.write_all(b"\n")?;
            output.flush()?;
        }
    }
}
