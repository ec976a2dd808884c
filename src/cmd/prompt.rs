//! Asking on a terminal: a yes/no question ([`confirm`]) and a hidden passphrase
//! ([`passphrase`]). Whether to ask at all (`--yes`, off a terminal) is [`super::Confirm`]'s.

use std::io::{self, BufRead, IsTerminal, Write};

use anyhow::bail;

use crate::crypt::Secret;

/// Asks a yes/no question on stderr and reads the answer from stdin (EOF = no).
pub(crate) fn confirm(question: &str) -> io::Result<bool> {
    eprint!("{question} [y/N] ");
    io::stderr().flush()?;
    let mut line = String::new();
    io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// `WALJ_PASSPHRASE`, else a hidden prompt on a terminal (twice when `twice`), else `None`.
pub(crate) fn passphrase(twice: bool) -> anyhow::Result<Option<Secret>> {
    if let Some(p) = std::env::var_os("WALJ_PASSPHRASE").filter(|p| !p.is_empty()) {
        return Ok(Some(Secret::from(p.to_string_lossy().into_owned())));
    }
    if !io::stdin().is_terminal() || !io::stderr().is_terminal() {
        return Ok(None);
    }
    let first = read_hidden("Passphrase: ")?;
    if first.is_empty() {
        bail!("an empty passphrase was given; nothing was done");
    }
    if twice && read_hidden("Passphrase again: ")? != first {
        bail!("the passphrases differ; nothing was done");
    }
    Ok(Some(Secret::from(first)))
}

/// Reads a line from the terminal without echo.
fn read_hidden(prompt: &str) -> io::Result<String> {
    use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers, read};
    eprint!("{prompt}");
    io::stderr().flush()?;
    crossterm::terminal::enable_raw_mode()?;
    let mut s = String::new();
    let res = loop {
        match read() {
            Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => match k.code {
                KeyCode::Enter => break Ok(()),
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    break Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
                }
                KeyCode::Esc => break Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled")),
                KeyCode::Char(c) => s.push(c),
                KeyCode::Backspace => {
                    s.pop();
                }
                _ => {}
            },
            Ok(_) => {}
            Err(e) => break Err(e),
        }
    };
    let _ = crossterm::terminal::disable_raw_mode();
    eprintln!();
    res.map(|()| s)
}
