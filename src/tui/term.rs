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
}

/// crossterm's event queue.
pub struct CrosstermEvents;

impl EventSource for CrosstermEvents {
    fn next(&mut self, timeout: Duration) -> io::Result<Input> {
        if event::poll(timeout)? { Ok(Input::Event(event::read()?)) } else { Ok(Input::Tick) }
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
