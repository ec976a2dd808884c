//! Where events come from and how the terminal is set up and restored.
//!
//! The loop (`super::run_loop`) is generic over ratatui's `Backend` and over
//! [`EventSource`]: the real program uses crossterm's terminal and event queue, tests use
//! `TestBackend` and a [`Script`] of events, so scripted keys go through the same loop.

use std::collections::VecDeque;
use std::io::{self, Stdout};
use std::sync::Once;
use std::time::Duration;

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event};
use crossterm::execute;
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::keymap::{Key, parse_keys};

/// What the loop gets next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Event(Event),
    /// Nothing happened for a while: time to poll the journal.
    Tick,
    /// No more input (end of a script).
    End,
}

pub trait EventSource {
    /// The next input, waiting at most `timeout`.
    fn next(&mut self, timeout: Duration) -> io::Result<Input>;

    /// Runs `f` with the terminal given back to the user (an editor runs there); a
    /// script has no terminal to give.
    fn suspend(
        &mut self,
        f: &mut dyn FnMut() -> io::Result<std::process::ExitStatus>,
    ) -> io::Result<std::process::ExitStatus> {
        f()
    }
}

/// crossterm's event queue, and the termination signals: SIGTERM or SIGHUP end the loop
/// like `q` does (then [`super::run`] restores the terminal and exits 128 + the signal).
pub struct CrosstermEvents {
    signals: Signals,
}

impl CrosstermEvents {
    pub fn new() -> CrosstermEvents {
        CrosstermEvents { signals: Signals::register() }
    }

    /// The signal that ended the loop, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.signals.received()
    }
}

impl Default for CrosstermEvents {
    fn default() -> Self {
        CrosstermEvents::new()
    }
}

impl EventSource for CrosstermEvents {
    fn next(&mut self, timeout: Duration) -> io::Result<Input> {
        if self.signals.received().is_some() {
            return Ok(Input::End);
        }
        // Poll in short steps so a signal is noticed within 50 ms.
        let step = Duration::from_millis(50);
        let mut left = timeout;
        loop {
            if event::poll(left.min(step))? {
                return Ok(Input::Event(event::read()?));
            }
            if self.signals.received().is_some() {
                return Ok(Input::End);
            }
            left = left.saturating_sub(step);
            if left.is_zero() {
                return Ok(Input::Tick);
            }
        }
    }

    fn suspend(
        &mut self,
        f: &mut dyn FnMut() -> io::Result<std::process::ExitStatus>,
    ) -> io::Result<std::process::ExitStatus> {
        restore();
        let result = f();
        enable_raw_mode()?;
        execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture, crossterm::cursor::Hide)?;
        result
    }
}

/// SIGTERM and SIGHUP, noted in flags the loop reads (nothing else runs in the handler).
/// A second signal of the same kind terminates at once (the loop may be stuck).
#[cfg(unix)]
struct Signals {
    flags: Vec<(i32, std::sync::Arc<std::sync::atomic::AtomicBool>)>,
}

#[cfg(unix)]
impl Signals {
    fn register() -> Signals {
        use signal_hook::consts::{SIGHUP, SIGTERM};
        use signal_hook::flag;
        let mut flags = Vec::new();
        for sig in [SIGTERM, SIGHUP] {
            let f = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            // Registration only fails for forbidden signals; without it the default action stays.
            if flag::register_conditional_shutdown(sig, 128 + sig, std::sync::Arc::clone(&f)).is_ok()
                && flag::register(sig, std::sync::Arc::clone(&f)).is_ok()
            {
                flags.push((sig, f));
            }
        }
        Signals { flags }
    }

    fn received(&self) -> Option<i32> {
        self.flags.iter().find(|(_, f)| f.load(std::sync::atomic::Ordering::SeqCst)).map(|(s, _)| *s)
    }
}

/// Elsewhere the console closes the program: nothing to watch.
#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn register() -> Signals {
        Signals
    }

    fn received(&self) -> Option<i32> {
        None
    }
}

/// Runs the editor command on a file and waits for it. The command may carry arguments
/// (`code -w`): on unix the shell splits it, elsewhere it is split at spaces.
pub fn run_editor(editor: &str, file: &std::path::Path) -> io::Result<std::process::ExitStatus> {
    #[cfg(unix)]
    {
        std::process::Command::new("sh").arg("-c").arg(format!("{editor} \"$1\"")).arg("sh").arg(file).status()
    }
    #[cfg(not(unix))]
    {
        let mut parts = editor.split_whitespace();
        let program = parts.next().unwrap_or("notepad");
        std::process::Command::new(program).args(parts).arg(file).status()
    }
}

/// A scripted sequence of inputs; `End` once it is used up.
#[derive(Debug, Default, Clone)]
pub struct Script {
    queue: VecDeque<Input>,
}

impl Script {
    pub fn new() -> Script {
        Script::default()
    }
    /// Keys in [`parse_keys`] syntax: `"jj/conf<enter>"`.
    #[allow(clippy::panic, reason = "scripts are written by tests; a broken one is a bug there")]
    pub fn keys(mut self, keys: &str) -> Script {
        match parse_keys(keys) {
            Ok(ks) => self.queue.extend(ks.into_iter().map(|k: Key| Input::Event(Event::Key(k.event())))),
            // A broken script is a bug in the test that wrote it.
            Err(e) => panic!("bad key script {keys:?}: {e}"),
        }
        self
    }
    pub fn event(mut self, ev: Event) -> Script {
        self.queue.push_back(Input::Event(ev));
        self
    }
    pub fn tick(mut self) -> Script {
        self.queue.push_back(Input::Tick);
        self
    }
}

impl EventSource for Script {
    fn next(&mut self, _timeout: Duration) -> io::Result<Input> {
        Ok(self.queue.pop_front().unwrap_or(Input::End))
    }
}

/// Puts the terminal back: raw mode off, main screen, mouse released, cursor shown.
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), DisableMouseCapture, LeaveAlternateScreen, crossterm::cursor::Show);
}

/// Restores the terminal before the previous panic hook prints, so the message is readable.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// The real terminal; restored when dropped (also on early returns and errors).
pub struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    pub fn new() -> io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        let mut out = io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, EnableMouseCapture) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(mut terminal) => {
                let _ = terminal.hide_cursor();
                Ok(TerminalGuard { terminal })
            }
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}
