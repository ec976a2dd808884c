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

    /// Puts `text` on the clipboard (the terminal's, through OSC 52); a script keeps it.
    fn copy(&mut self, text: &str) -> io::Result<()> {
        let _ = text;
        Ok(())
    }
}

/// The OSC 52 sequence that asks the terminal to put `text` on the clipboard. Inside
/// tmux it goes to tmux, which keeps it as a paste buffer and passes it on to the outer
/// terminal (`set-clipboard`, on by default for the outer terminal).
pub(crate) fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

/// Standard base64 with padding (OSC 52's encoding).
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// crossterm's event queue, and the termination signals: SIGTERM or SIGHUP end the loop
/// like `q` does (then [`super::run`] restores the terminal and exits 128 + the signal).
/// A terminal that goes away without a signal (its window closed, `tmux kill-server`)
/// ends walj the same way, through [`Hangup`].
pub(crate) struct CrosstermEvents {
    signals: Signals,
    hangup: Hangup,
}

impl CrosstermEvents {
    pub(crate) fn new() -> CrosstermEvents {
        CrosstermEvents { signals: Signals::register(), hangup: Hangup::watch() }
    }

    /// The signal that ended the loop, if one did (a hangup counts as SIGHUP).
    pub(crate) fn signal(&self) -> Option<i32> {
        self.signals.received().or_else(|| self.hangup.hung_up().then_some(SIGHUP))
    }

    /// The loop may act on what it returns; false when the hangup watch is ending walj.
    fn returning(&self, input: Input) -> io::Result<Input> {
        if self.hangup.busy() { Ok(input) } else { Hangup::wait_for_exit() }
    }
}

impl Default for CrosstermEvents {
    fn default() -> Self {
        CrosstermEvents::new()
    }
}

impl EventSource for CrosstermEvents {
    fn next(&mut self, timeout: Duration) -> io::Result<Input> {
        self.hangup.waiting();
        let ended = |me: &Self| me.signals.received().is_some() || me.hangup.hung_up();
        if ended(self) {
            return self.returning(Input::End);
        }
        // Poll in short steps so a signal is noticed within 50 ms.
        let step = Duration::from_millis(50);
        let mut left = timeout;
        loop {
            if event::poll(left.min(step))? {
                let ev = event::read()?;
                return self.returning(Input::Event(ev));
            }
            if ended(self) {
                return self.returning(Input::End);
            }
            left = left.saturating_sub(step);
            if left.is_zero() {
                return self.returning(Input::Tick);
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

    fn copy(&mut self, text: &str) -> io::Result<()> {
        use std::io::Write as _;
        let mut out = io::stdout();
        out.write_all(osc52(text).as_bytes())?;
        out.flush()
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

#[cfg(unix)]
const SIGHUP: i32 = signal_hook::consts::SIGHUP;
#[cfg(not(unix))]
const SIGHUP: i32 = 1;

/// Watches the terminal for a hangup that comes without a signal: the pty's other side
/// closed (a terminal window closed, `tmux kill-server`, a dropped ssh link whose SIGHUP
/// went to the shell only).
///
/// crossterm cannot report it: on a hung-up tty `read` returns 0 bytes at once and its
/// event reader loops on that forever, inside `event::poll`, at full CPU. So a thread
/// blocks in `poll(2)` on the tty asking for nothing, which reports only POLLHUP/POLLERR;
/// on a hangup it restores what it can and exits 128 + SIGHUP, as SIGHUP does. It never
/// exits while the loop handles an event (a triage write is never cut): the loop marks
/// itself waiting while it waits for input and busy while it acts, and the two sides
/// decide with one compare-and-swap.
struct Hangup {
    #[cfg(unix)]
    state: Option<std::sync::Arc<std::sync::atomic::AtomicU8>>,
}

#[cfg(unix)]
mod watch_state {
    /// The loop waits for input: the watch may end walj.
    pub(crate) const WAITING: u8 = 0;
    /// The loop acts on an event: the watch waits.
    pub(crate) const BUSY: u8 = 1;
    /// The terminal hung up and the loop is busy: it ends at its next wait.
    pub(crate) const HUNG_UP: u8 = 2;
    /// The watch is ending walj.
    pub(crate) const EXITING: u8 = 3;
}

impl Hangup {
    #[cfg(unix)]
    fn watch() -> Hangup {
        use std::io::IsTerminal;
        use std::sync::Arc;
        use std::sync::atomic::AtomicU8;
        // The terminal crossterm reads: stdin when it is one, else /dev/tty.
        let tty: Option<std::os::fd::OwnedFd> = if io::stdin().is_terminal() {
            std::os::fd::AsFd::as_fd(&io::stdin()).try_clone_to_owned().ok()
        } else {
            std::fs::File::open("/dev/tty").ok().map(std::os::fd::OwnedFd::from)
        };
        let Some(tty) = tty else { return Hangup { state: None } };
        let state = Arc::new(AtomicU8::new(watch_state::BUSY));
        let shared = Arc::clone(&state);
        let spawned = std::thread::Builder::new().name("walj-hangup".into()).spawn(move || {
            if wait_for_hangup(&tty) {
                end_on_hangup(&shared);
            }
        });
        Hangup { state: spawned.is_ok().then_some(state) }
    }

    #[cfg(not(unix))]
    fn watch() -> Hangup {
        Hangup {}
    }

    /// The terminal hung up.
    fn hung_up(&self) -> bool {
        #[cfg(unix)]
        if let Some(s) = &self.state {
            return s.load(std::sync::atomic::Ordering::SeqCst) >= watch_state::HUNG_UP;
        }
        false
    }

    /// The loop waits for input (the watch may end walj from now on).
    fn waiting(&self) {
        #[cfg(unix)]
        if let Some(s) = &self.state {
            use std::sync::atomic::Ordering::SeqCst;
            use watch_state::*;
            // After a hangup seen while busy, the watch is waiting for this: end now.
            if s.compare_exchange(HUNG_UP, EXITING, SeqCst, SeqCst).is_ok() {
                exit_on_hangup();
            }
            let _ = s.compare_exchange(BUSY, WAITING, SeqCst, SeqCst);
        }
    }

    /// The loop is about to act on an input: false when the watch is already ending walj.
    fn busy(&self) -> bool {
        #[cfg(unix)]
        if let Some(s) = &self.state {
            use std::sync::atomic::Ordering::SeqCst;
            use watch_state::*;
            return match s.compare_exchange(WAITING, BUSY, SeqCst, SeqCst) {
                Ok(_) => true,
                Err(now) => now != EXITING,
            };
        }
        true
    }

    /// The watch thread is ending the process: wait for it.
    fn wait_for_exit() -> ! {
        loop {
            std::thread::park();
        }
    }
}

/// Blocks until the terminal hangs up (true) or cannot be watched (false).
#[cfg(unix)]
fn wait_for_hangup(tty: &std::os::fd::OwnedFd) -> bool {
    use rustix::event::{PollFd, PollFlags, poll};
    loop {
        // Asking for no event: poll(2) still reports a hangup, an error, a closed fd.
        let mut fds = [PollFd::new(tty, PollFlags::empty())];
        match poll(&mut fds, None) {
            Ok(_) => {
                if fds[0].revents().intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
                    return true;
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
}

/// The terminal hung up: end walj now if the loop is waiting for input, else when it next
/// waits (see [`Hangup::waiting`]).
#[cfg(unix)]
fn end_on_hangup(state: &std::sync::atomic::AtomicU8) {
    use std::sync::atomic::Ordering::SeqCst;
    use watch_state::*;
    loop {
        match state.compare_exchange(WAITING, EXITING, SeqCst, SeqCst) {
            Ok(_) => exit_on_hangup(),
            Err(BUSY) => {
                if state.compare_exchange(BUSY, HUNG_UP, SeqCst, SeqCst).is_ok() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// Restores what can be restored (a hung-up terminal refuses most of it) and exits as
/// SIGHUP would.
#[cfg(unix)]
fn exit_on_hangup() -> ! {
    restore();
    std::process::exit(128 + SIGHUP)
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

/// How an editor is told the line to open at: `+N file` (vi, vim, nvim, nano, emacs,
/// micro, kak…), `-g file:N` (VS Code), `file:N` (Sublime Text, Zed, Helix).
pub(crate) fn editor_args(editor: &str, file: &str, line: Option<usize>) -> Vec<String> {
    let Some(n) = line else { return vec![file.to_string()] };
    let program = editor.split_whitespace().next().unwrap_or_default();
    let name = std::path::Path::new(program).file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    match name {
        "code" | "code-insiders" | "codium" | "cursor" => vec!["-g".into(), format!("{file}:{n}")],
        "subl" | "zed" | "hx" | "helix" => vec![format!("{file}:{n}")],
        "notepad" => vec![file.to_string()],
        _ => vec![format!("+{n}"), file.to_string()],
    }
}

/// Runs the editor command on a file (at `line` when given) and waits for it. The
/// command may carry arguments (`code -w`): on unix the shell splits it, elsewhere it is
/// split at spaces.
pub(crate) fn run_editor(
    editor: &str,
    file: &std::path::Path,
    line: Option<usize>,
) -> io::Result<std::process::ExitStatus> {
    let args = editor_args(editor, &file.to_string_lossy(), line);
    #[cfg(unix)]
    {
        let quoted: Vec<String> = (1..=args.len()).map(|i| format!("\"${i}\"")).collect();
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} {}", quoted.join(" ")))
            .arg("sh")
            .args(&args)
            .status()
    }
    #[cfg(not(unix))]
    {
        let mut parts = editor.split_whitespace();
        let program = parts.next().unwrap_or("notepad");
        std::process::Command::new(program).args(parts).args(&args).status()
    }
}

/// A scripted sequence of inputs; `End` once it is used up. What the app copies is kept
/// in `copied`.
#[derive(Debug, Default, Clone)]
pub struct Script {
    queue: VecDeque<Input>,
    pub copied: Vec<String>,
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

    fn copy(&mut self, text: &str) -> io::Result<()> {
        self.copied.push(text.to_string());
        Ok(())
    }
}

/// Puts the terminal back: raw mode off, main screen, mouse released, cursor shown.
pub(crate) fn restore() {
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
pub(crate) struct TerminalGuard {
    pub terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    pub(crate) fn new() -> io::Result<TerminalGuard> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_is_base64_and_editors_get_the_line() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(osc52("src/a.rs"), "\x1b]52;c;c3JjL2EucnM=\x07");
        assert_eq!(editor_args("vim", "f.rs", Some(12)), ["+12", "f.rs"]);
        assert_eq!(editor_args("/usr/bin/code -w", "f.rs", Some(3)), ["-g", "f.rs:3"]);
        assert_eq!(editor_args("hx", "f.rs", Some(3)), ["f.rs:3"]);
        assert_eq!(editor_args("nano", "f.rs", None), ["f.rs"]);
    }
}
