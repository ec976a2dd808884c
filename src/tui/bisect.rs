//! `b` in the TUI: `walj bisect` on the selected session (or, on a machine-less root, the
//! session with the latest change), always in scratch mode (the user's tree is never touched
//! while the TUI shows it).
//!
//! `b` asks for the command on the status line (typed by the user: nothing is pre-filled from
//! the journal, a bundle or a synced copy), runs the bisect on a thread (`sh -c CMD` in each
//! state's scratch copy), shows its progress on the status line, then selects the culprit's
//! entry with its diff, ready for `r` (a 3-way revert of that step alone). Esc while typing
//! cancels; the run itself stops with the TUI (its scratch copy is removed by bisect).

use std::ffi::OsString;
use std::sync::mpsc::{Receiver, TryRecvError, channel};

use crate::bisect::{Options, Scope};
use crate::fold::{Fold, FoldOptions};
use crate::present::safe;
use crate::project::Project;

/// What the bisect thread tells the TUI.
#[derive(Debug)]
pub enum Msg {
    /// (tests done, most tests expected, state being tested).
    Progress(usize, usize, usize),
    Done(Result<Outcome, String>),
}

/// A finished bisect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The culprit step's first entry (to select), when one was named.
    pub entry: Option<String>,
    /// What to tell the user.
    pub text: String,
}

/// The `b` state of the app.
#[derive(Debug, Default)]
pub struct BisectUi {
    /// Some while the user types the command.
    pub input: Option<String>,
    /// The scope chosen when `b` was pressed (the selected session).
    pub session: Option<String>,
    /// The running bisect.
    pub running: Option<Receiver<Msg>>,
    /// The command of the running bisect (shown escaped).
    pub command: String,
}

/// Starts `walj bisect -- sh -c COMMAND` on a thread.
pub(crate) fn start(project: &Project, session: Option<String>, command: &str) -> Receiver<Msg> {
    let (tx, rx) = channel();
    let project = project.clone();
    let opts = Options {
        scope: session.map_or(Scope::LastSession, Scope::Session),
        argv: vec![OsString::from("sh"), OsString::from("-c"), OsString::from(command)],
        timeout: None,
        runs: 1,
        verify: false,
        in_place: false,
        force: false,
        with_ignored: false,
    };
    let shown = command.to_string();
    std::thread::spawn(move || {
        let load = || {
            Fold::load(&project.journal, &FoldOptions { keep_settled: true, ..Default::default() })
                .map_err(|e| crate::bisect::LoadError { path: project.journal.clone(), message: e.to_string() })
        };
        let progress_tx = tx.clone();
        let mut progress = move |done: usize, bound: usize, state: usize| {
            let _ = progress_tx.send(Msg::Progress(done, bound, state));
        };
        let result = crate::bisect::bisect(&project, &load, &opts, &mut progress);
        let outcome = match result {
            Ok(report) => Ok(with_notes(
                &report,
                &shown,
                match report.culprit() {
                    Some(step) => Outcome {
                        entry: step.entry_ids().into_iter().next(),
                        text: format!(
                            "bisect: step {} of {} broke `{}`: {} {} ({} states tested). `r` reverts it alone.",
                            step.n,
                            report.steps.len(),
                            safe(&shown),
                            safe(&step.tool),
                            safe(&step.what),
                            report.tested.len()
                        ),
                    },
                    None => Outcome {
                        entry: None,
                        text: format!("bisect: no culprit: {}", safe(&report.reason().unwrap_or_default())),
                    },
                },
            )),
            Err(e) => Err(format!("bisect: {}", safe(&e.to_string()))),
        };
        let _ = tx.send(Msg::Done(outcome));
    });
    rx
}

/// The outcome's line, with what the disk says (it differs from the last state) and an
/// uncertain verdict (flaky runs) after it.
fn with_notes(report: &crate::bisect::Report, command: &str, mut o: Outcome) -> Outcome {
    if let Some(f) = &report.flaky {
        o.text.push_str(if f.confirmed {
            " Uncertain: some runs disagreed (flaky); the states next to it agree when tested again."
        } else {
            " Uncertain: some runs disagreed (flaky); the answer may be wrong."
        });
    }
    if let Some(says) = report.disk_says(command) {
        o.text.push_str(&format!(" The disk: {}.", safe(&says)));
    }
    o
}

/// What the running bisect said since the last poll: the last progress, or its end.
pub(crate) fn poll(rx: &Receiver<Msg>) -> Option<Msg> {
    let mut last = None;
    loop {
        match rx.try_recv() {
            Ok(Msg::Done(r)) => return Some(Msg::Done(r)),
            Ok(m) => last = Some(m),
            Err(TryRecvError::Empty) => return last,
            Err(TryRecvError::Disconnected) => {
                return Some(Msg::Done(Err("bisect: the run stopped without an answer".to_string())));
            }
        }
    }
}

use super::app::{App, Item};
use super::keymap::Key;
use crossterm::event::{KeyCode, KeyModifiers};

impl App {
    /// `b`: asks for the command on the status line, for the selected session.
    pub(super) fn start_bisect_input(&mut self) {
        if self.bisect.running.is_some() {
            self.set_status("bisect: one is running already".to_string(), false);
            return;
        }
        let session = match self.selected().map(|r| r.item) {
            Some(Item::Session(vi) | Item::Group(vi, _) | Item::Entry(vi, ..)) => {
                self.tree.views.get(vi).map(|v| self.fold.sessions[v.session].session.clone())
            }
            Some(_) => {
                self.set_status("bisect: another machine's session: bisect it there".to_string(), true);
                return;
            }
            None => None,
        };
        self.bisect.session = session;
        self.bisect.input = Some(String::new());
        self.show_bisect_input();
    }

    fn show_bisect_input(&mut self) {
        let typed = self.bisect.input.clone().unwrap_or_default();
        let whose = match &self.bisect.session {
            Some(s) => format!("session {}", safe(self.fold.ids.session(s))),
            None => "the latest session".to_string(),
        };
        self.set_status(
            format!("bisect {whose}: the test command (Enter runs it, Esc cancels): {}_", safe(&typed)),
            false,
        );
    }

    /// A key while the command is typed.
    pub(super) fn bisect_key(&mut self, key: Key) {
        let Some(input) = self.bisect.input.as_mut() else { return };
        match key.code {
            KeyCode::Enter => {
                let command = input.trim().to_string();
                self.bisect.input = None;
                if command.is_empty() {
                    self.set_status("bisect: no command given, nothing run".to_string(), false);
                    return;
                }
                let rx = start(&self.project, self.bisect.session.clone(), &command);
                self.bisect.running = Some(rx);
                self.set_status(format!("bisect: starting `{}` in a scratch copy…", safe(&command)), false);
                self.bisect.command = command;
            }
            KeyCode::Esc => {
                self.bisect.input = None;
                self.set_status("bisect: cancelled".to_string(), false);
            }
            KeyCode::Backspace => {
                input.pop();
                self.show_bisect_input();
            }
            KeyCode::Char(c) if !key.mods.contains(KeyModifiers::CONTROL) => {
                input.push(c);
                self.show_bisect_input();
            }
            _ => {}
        }
    }

    /// Reads what the running bisect said: progress on the status line; at its end the
    /// culprit selected (settled entries shown, its session expanded). True when the screen
    /// changed.
    pub(super) fn poll_bisect(&mut self) -> bool {
        let Some(rx) = &self.bisect.running else { return false };
        match poll(rx) {
            None => false,
            Some(Msg::Progress(done, bound, state)) => {
                let text = format!(
                    "bisect `{}`: testing state {state} ({done} of at most {bound} runs)…",
                    safe(&self.bisect.command)
                );
                self.set_status(text, false);
                true
            }
            Some(Msg::Done(result)) => {
                self.bisect.running = None;
                match result {
                    Ok(o) => {
                        let mut text = o.text;
                        if let Some(id) = &o.entry {
                            // The step's own change (pre-image → post-image), not the file now.
                            self.set_mode(crate::triage::DiffMode::Applied);
                            if self.reveal_entry(id) {
                                let s = self.keymap.key_of(super::keymap::Action::ToggleResolved);
                                text.push_str(&format!(" (resolved entries are shown to select it: {s} hides them)"));
                            }
                        }
                        self.set_status(text, o.entry.is_none());
                    }
                    Err(e) => self.set_status(e, true),
                }
                true
            }
        }
    }
}
