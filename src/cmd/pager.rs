//! Long output (`walj diff`, `walj log`) through a pager on a terminal, as git and jj do.
//!
//! The pager is `$WALJ_PAGER`, else `$PAGER`, else `less -FRX` (quits when the text fits one
//! screen, passes colours, leaves the text on the screen); empty or `cat` means none, and so
//! does `--no-pager` or a stdout that is not a terminal (pipes, files, Claude's Bash tool). It
//! runs through `sh -c` with walj's stdout (fd 1) moved onto its stdin, so every line the
//! command prints goes to it; when the guard drops, fd 1 comes back and walj waits for the
//! pager to end. Colour is decided before the move (on the terminal): it stays on in the pager
//! unless `NO_COLOR`/`--color never` turned it off. What reaches the pager is what would reach
//! the terminal: recorded text is escaped by the commands themselves (`present::text`).
//! Quitting the pager early is a closed stdout, which walj ends quietly on (`is_broken_pipe`).
//! Unix only; elsewhere nothing is paged.

/// The pager started for this command, if any; dropping it ends the paging.
pub(crate) struct Paged {
    #[cfg(unix)]
    inner: Option<(std::process::Child, std::os::fd::OwnedFd)>,
}

/// The pager command line, or `None` when output is not paged.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn command() -> Option<String> {
    let chosen = ["WALJ_PAGER", "PAGER"].iter().find_map(|k| std::env::var(k).ok());
    let cmd = chosen.unwrap_or_else(|| "less -FRX".to_string());
    let cmd = cmd.trim();
    (!cmd.is_empty() && cmd != "cat").then(|| cmd.to_string())
}

/// Starts the pager when stdout is a terminal and paging is not turned off (`no_pager`). Any
/// failure (no such pager) prints unpaged, as if none was asked for.
pub(crate) fn start(no_pager: bool) -> Paged {
    #[cfg(unix)]
    {
        use std::io::IsTerminal;
        if no_pager || !std::io::stdout().is_terminal() {
            return Paged { inner: None };
        }
        let Some(cmd) = command() else { return Paged { inner: None } };
        // Decided on the terminal: a pipe to the pager would turn colour off.
        if crate::style::Style::stdout().color {
            crate::style::set_color(crate::style::ColorWhen::Always);
        }
        Paged { inner: spawn(&cmd) }
    }
    #[cfg(not(unix))]
    {
        let _ = no_pager;
        Paged {}
    }
}

#[cfg(unix)]
fn spawn(cmd: &str) -> Option<(std::process::Child, std::os::fd::OwnedFd)> {
    use std::io::Write;
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("LESS", std::env::var("LESS").unwrap_or_else(|_| "FRX".into()))
        .stdin(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let stdin = child.stdin.take()?;
    let _ = std::io::stdout().flush();
    let saved = rustix::io::dup(rustix::stdio::stdout()).ok()?;
    if rustix::stdio::dup2_stdout(&stdin).is_err() {
        drop(stdin);
        let _ = child.wait();
        return None;
    }
    // fd 1 holds the pipe now; this handle is not needed.
    drop(stdin);
    Some((child, saved))
}

impl Drop for Paged {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some((mut child, saved)) = self.inner.take() {
            use std::io::Write;
            let _ = std::io::stdout().flush();
            // The terminal back on fd 1 closes the pipe: the pager reads its end and waits for
            // the user (less -F quits at once when it all fit).
            let _ = rustix::stdio::dup2_stdout(&saved);
            let _ = child.wait();
        }
    }
}
