//! The dashboard's state and how actions change it (`update`). Drawing reads this state
//! and never changes it (see `draw.rs`); triage goes through [`crate::triage`], the same
//! functions `walj mark / revert / undo / handoff` call.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::dialogs;
use super::diff::{self, DiffView};
use super::keymap::{Action, Key, Keymap, Scope};
use super::layout::Zoom;
use super::ops::{self, Operation};
use super::pane::{self, DiffPane};
use super::source::Source;
use super::theme::Theme;
use crate::fold::{Entry, Fold, FoldOptions, SessionStatus};
use crate::present::{self, plural};
use crate::project::Project;
use crate::triage::{self, DiffMode, HandoffOptions, Outcome, RevertOptions};

pub(crate) use super::tree::Row;
pub use super::tree::{Item, NodeKey, Tree};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Tree,
    Diff,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub error: bool,
}

pub(crate) use super::dialogs::{Choice, Dialog};
pub(crate) use super::source::SyncState;

/// Where "now" comes from: the clock, or a fixed instant shown in UTC (tests, screenshots).
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    Real,
    Fixed(DateTime<Utc>),
}

/// A session's folder moves, each with its command's line (as the entries carry it).
pub(crate) type SessionMoves = Vec<(crate::present::command::Moved, Option<String>)>;

#[derive(Debug, Clone)]
pub struct AppOptions {
    pub keymap: Keymap,
    pub clock: Clock,
    /// Least time between two journal polls.
    pub poll: Duration,
    /// The editor `e` runs; `None`: `$VISUAL`, `$EDITOR`, else `vi`.
    pub editor: Option<String>,
    pub theme: Theme,
}

impl Default for AppOptions {
    fn default() -> Self {
        AppOptions {
            keymap: Keymap::default(),
            clock: Clock::Real,
            poll: Duration::from_millis(500),
            editor: None,
            theme: Theme::default(),
        }
    }
}

/// A file to open in the editor (asked by `e` in a conflict), run by the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditRequest {
    /// The file, absolute.
    pub file: std::path::PathBuf,
    /// As the user reads it (project-relative).
    pub path: String,
    /// The editor command.
    pub editor: String,
    /// The line to open at (1-based).
    pub line: Option<usize>,
    /// The entries whose revert is planned again afterwards (a conflict's `e`).
    pub ids: Vec<String>,
}

/// The dashboard: what it shows (the fold and the copies it draws, the tree, the panes, the
/// dialogs and overlays), drawn from `&self` (`draw.rs`), and [`Source`], what it loads and
/// when; [`App::reload`] calls down to it and applies what comes back.
pub struct App {
    pub project: Project,
    pub keymap: Keymap,
    pub clock: Clock,
    pub fold: Fold,
    /// Other machines' journals (`walj sync`'s copies) and what they were read from.
    pub sync: SyncState,
    /// The tree pane: views, rows, cursor, filter, selection.
    pub tree: Tree,
    pub focus: Focus,
    /// Some while the user types a filter.
    pub filter_input: Option<String>,
    pub diff_mode: DiffMode,
    /// First line of the detail pane shown (header lines, then diff lines).
    pub diff_scroll: usize,
    /// Sideways scroll, wrap and search of the diff pane.
    pub pane: DiffPane,
    /// The focused pane alone on screen (`f`).
    pub zoom: bool,
    /// Lines of the detail pane (header and diff) at the last draw.
    detail_len: usize,
    /// Header lines above the diff at the last draw.
    header_len: usize,
    /// Largest `diff_scroll` that still fills the pane (wrapped lines take more rows).
    max_scroll: usize,
    /// Rows the entry's verdict covers at the top of the detail pane while it is scrolled.
    pin_rows: usize,
    /// Computed diffs by (entry id, mode index).
    pub diffs: HashMap<(String, u8), Arc<DiffView>>,
    /// The folders each session's commands moved (by session key), settled entries included:
    /// read when its context is first shown, dropped on every reload.
    pub(crate) moves: HashMap<String, Arc<SessionMoves>>,
    pub dialog: Option<Dialog>,
    /// Body lines of the dialog shown at the last draw (for scrolling it).
    pub dialog_rows: usize,
    editor: Option<String>,
    /// Set by `e`: the loop suspends the terminal, runs the editor, then calls [`App::edited`].
    pub edit_request: Option<EditRequest>,
    pub help: bool,
    /// The operation list overlay (`o`), newest first.
    pub operations: Option<Vec<Operation>>,
    /// First line of the help or operation list shown.
    pub help_scroll: usize,
    /// What `ctrl+r` does: the actions the last undo took back.
    redo: Vec<Choice>,
    /// Text to put on the clipboard (OSC 52), written by the loop.
    pub clipboard: Option<String>,
    pub theme: Theme,
    pub status: Option<Status>,
    /// The terminal's area at the last draw (for paging and mouse hits).
    pub area: Rect,
    pub quit: bool,
    /// What the dashboard loads, and when it loads it again.
    source: Source,
    /// The selection changed: bring its first change into view once its diff is measured.
    reveal_change: bool,
    /// Time the last reload took (shown by the bench).
    pub load_time: Duration,
    /// `b`: the command being typed, the running bisect.
    pub bisect: super::bisect::BisectUi,
}

impl App {
    pub fn new(project: Project, opts: AppOptions) -> App {
        let mut app = App {
            project,
            keymap: opts.keymap,
            clock: opts.clock,
            fold: Fold::default(),
            sync: SyncState::default(),
            tree: Tree::default(),
            focus: Focus::Tree,
            filter_input: None,
            diff_mode: DiffMode::Disk,
            diff_scroll: 0,
            pane: DiffPane::default(),
            zoom: false,
            detail_len: 0,
            header_len: 0,
            max_scroll: 0,
            pin_rows: 0,
            diffs: HashMap::new(),
            moves: HashMap::new(),
            dialog: None,
            dialog_rows: 0,
            editor: opts.editor,
            edit_request: None,
            help: false,
            operations: None,
            help_scroll: 0,
            redo: Vec::new(),
            clipboard: None,
            theme: opts.theme,
            status: None,
            area: Rect::new(0, 0, 120, 40),
            quit: false,
            source: Source::new(opts.poll),
            reveal_change: true,
            bisect: Default::default(),
            load_time: Duration::ZERO,
        };
        app.reload();
        if let Some(w) = app.keymap.warnings.first().cloned() {
            let more = app.keymap.warnings.len() - 1;
            app.error(if more > 0 { format!("{w} (and {more} more)") } else { w });
        }
        if app.tree.views.is_empty() && app.status.is_none() {
            if crate::session::empty::journal_is_empty(&app.project) {
                let config_dir = crate::claude::paths::config_dir_or_default();
                app.info(crate::session::empty::headline(&app.project, &config_dir, "walj hook"));
            } else {
                app.info("Nothing unresolved. s shows resolved entries; the journal is watched for changes.");
            }
        }
        // Open on the first unresolved entry: that is what the user came for.
        if let Some(i) = app.tree.rows.iter().position(|r| matches!(r.item, Item::Entry(..))) {
            app.tree.cursor = i;
        }
        app
    }

    // ---------------------------------------------------------------- loading

    /// Looks at the selected entry's file: when it changed since it was last looked at
    /// (or, newly selected, since the last reload read the disk), reads everything again so
    /// its badge (applied, drifted) and its diff say what the disk holds now. True when it
    /// reloaded.
    fn check_watched(&mut self) -> bool {
        let path = self.selected_entry().and_then(|e| self.project.resolve_rel(&e.path).ok());
        let stale = self.source.watched_changed(path);
        if stale {
            self.reload();
        }
        stale
    }

    /// Re-reads the journal and rebuilds the tree, keeping the selection.
    pub fn reload(&mut self) {
        let started = Instant::now();
        for said in self.source.load(&self.project, self.tree.show_resolved, &mut self.fold, &mut self.sync) {
            self.error(said);
        }
        self.diffs.clear();
        self.moves.clear();
        let known: std::collections::HashSet<&str> = self.fold.entries.iter().map(|e| e.id.as_str()).collect();
        self.tree.marked.retain(|id| known.contains(id.as_str()));
        self.rebuild_tree();
        self.load_time = started.elapsed();
    }

    /// Reloads when the journal's size or mtime changed, or another machine's copy (a sync
    /// ran) (called on every tick).
    pub fn poll_journal(&mut self) -> bool {
        if self.poll_bisect() {
            return true;
        }
        if !self.source.poll_due() {
            return false;
        }
        if self.source.changed(&self.project) {
            self.reload();
            return true;
        }
        if self.check_watched() {
            return true;
        }
        // A crash writes nothing to the journal: notice a live session's process going away.
        if self.source.liveness_due() {
            self.fold.refresh_liveness();
            let changed = self
                .tree
                .views
                .iter()
                .any(|v| v.status == SessionStatus::Live && self.fold.sessions[v.session].status() != v.status);
            // A session just crashed (its cut-off command's changes appear), or a killed
            // command still runs (its changes so far move on, and it may just have ended).
            let still_running = self.fold.entries.iter().any(|e| e.still_running)
                || self.fold.sessions.iter().any(|s| s.commands.iter().any(|c| c.running.is_some()));
            if changed || still_running {
                self.reload();
                return true;
            }
        }
        false
    }

    /// Rebuilds the views and rows from the fold (after a reload, a filter, a liveness change).
    fn rebuild_tree(&mut self) {
        let height = self.tree_height();
        self.tree.build_views(&self.fold);
        let journals: Vec<(&str, &Fold)> = self.sync.remotes.iter().map(|r| (r.id.as_str(), &r.fold)).collect();
        self.tree.build_machines(&journals);
        self.tree.rebuild_rows(&self.fold, height);
    }

    // ---------------------------------------------------------------- queries

    pub(crate) fn selected(&self) -> Option<&Row> {
        self.tree.selected()
    }

    pub fn selected_entry(&self) -> Option<&Entry> {
        match self.selected()?.item {
            Item::RemoteEntry(mi, _, ei) => self.machine(mi)?.fold.entries.get(ei),
            _ => self.tree.selected_entry(&self.fold),
        }
    }

    /// The journal of the tree's machine header `mi`.
    pub(crate) fn machine(&self, mi: usize) -> Option<&crate::sync::remotes::RemoteJournal> {
        self.sync.remotes.get(self.tree.machines.get(mi)?.remote)
    }

    /// The other machine's journal an entry belongs to (None: this checkout's).
    pub(crate) fn remote_of(&self, e: &Entry) -> Option<&crate::sync::remotes::RemoteJournal> {
        if self.fold.entry_in(&e.session, &e.id).is_some() {
            return None;
        }
        self.sync.remotes.iter().find(|r| r.fold.entry_in(&e.session, &e.id).is_some())
    }

    /// Entries an action applies to (see [`Tree::targets`]).
    pub(crate) fn targets(&self) -> Vec<&Entry> {
        let remote = self.selected().map(|r| r.item).filter(|i| i.is_remote());
        let (Some(item), true) = (remote, self.tree.marked.is_empty()) else { return self.tree.targets(&self.fold) };
        // Another machine's row: its entry, else the unresolved entries under it.
        let (mi, only) = match item {
            Item::Machine(mi) => (mi, None),
            Item::RemoteSession(mi, si) => (mi, Some(si)),
            Item::RemoteEntry(mi, _, ei) => {
                return self.machine(mi).and_then(|r| r.fold.entries.get(ei)).into_iter().collect();
            }
            _ => return Vec::new(),
        };
        let (Some(m), Some(r)) = (self.tree.machines.get(mi), self.machine(mi)) else { return Vec::new() };
        m.sessions
            .iter()
            .enumerate()
            .filter(|(si, _)| only.is_none_or(|o| o == *si))
            .flat_map(|(_, s)| s.entries.iter().map(|(ei, _)| &r.fold.entries[*ei]))
            .filter(|e| e.is_unresolved())
            .collect()
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        match self.clock {
            Clock::Real => Utc::now(),
            Clock::Fixed(t) => t,
        }
    }

    /// "3m", "2h", "5d" since a record timestamp.
    pub(crate) fn age(&self, ts: &str) -> String {
        present::age(ts, self.now())
    }

    /// A record timestamp as the user reads it (local time; UTC with a fixed clock).
    pub(crate) fn time(&self, ts: &str) -> String {
        match self.clock {
            Clock::Real => present::human_ts(ts),
            Clock::Fixed(_) => present::utc_ts(ts),
        }
    }

    pub(crate) fn session_status(&self, session: &str) -> Option<SessionStatus> {
        self.tree.session_status(&self.fold, session)
    }

    /// The diff of the selected entry in the current mode, once computed.
    pub fn current_diff(&self) -> Option<&Arc<DiffView>> {
        let e = self.selected_entry()?;
        self.diffs.get(&(e.id.clone(), mode_index(self.diff_mode)))
    }

    // ---------------------------------------------------------------- layout

    /// Which pane takes the whole screen.
    pub(crate) fn zoom_state(&self) -> Zoom {
        match (self.zoom, self.focus) {
            (false, _) => Zoom::Off,
            (true, Focus::Tree) => Zoom::Tree,
            (true, Focus::Diff) => Zoom::Diff,
        }
    }

    /// The screen's regions now.
    pub(crate) fn areas(&self) -> super::layout::Areas {
        super::layout::layout_with(self.area, self.zoom_state(), self.status_rows())
    }

    /// Rows of the status line: two when its message is wider than the screen (it wraps).
    pub(crate) fn status_rows(&self) -> u16 {
        let long = self.status.as_ref().is_some_and(|s| {
            self.filter_input.is_none()
                && self.pane.search_input.is_none()
                && unicode_width::UnicodeWidthStr::width(s.text.as_str()) + 2 > self.area.width as usize
        });
        if long && self.area.height >= 12 { 2 } else { 1 }
    }

    /// Rows the tree shows at once.
    pub(crate) fn tree_height(&self) -> usize {
        // Zoomed on the diff the tree is hidden, but its cursor keeps a page.
        let l = super::layout::layout_with(self.area, Zoom::Off, self.status_rows());
        l.tree.height.saturating_sub(2) as usize
    }

    pub(crate) fn diff_height(&self) -> usize {
        self.areas().diff.height.saturating_sub(2) as usize
    }

    /// Columns inside the diff pane.
    pub(crate) fn diff_width(&self) -> usize {
        self.areas().diff.width.saturating_sub(2) as usize
    }

    fn scroll_tree_into_view(&mut self) {
        let h = self.tree_height();
        self.tree.scroll_into_view(h);
    }

    /// Takes the detail pane's length as drawing counts it (after [`App::prepare`]): its
    /// lines, the header lines above the diff, the largest scroll that fills the pane; and
    /// keeps the scroll inside it.
    pub(crate) fn set_detail_len(&mut self, lines: usize, header: usize, max_scroll: usize, pin: usize) {
        self.detail_len = lines;
        self.header_len = header;
        self.max_scroll = max_scroll;
        self.pin_rows = pin;
        self.clamp_diff_scroll();
        self.reveal_first_change();
    }

    fn clamp_diff_scroll(&mut self) {
        self.diff_scroll = self.diff_scroll.min(self.max_scroll);
    }

    /// Work before a draw: compute the selected entry's diff if it is not cached yet, and
    /// keep the scroll positions valid for the current size.
    pub(crate) fn prepare(&mut self, area: Rect) {
        self.area = area;
        if let Some(e) = self.selected_entry() {
            let key = (e.id.clone(), mode_index(self.diff_mode));
            if !self.diffs.contains_key(&key) {
                // Another machine's entry: its synced images against this checkout's disk.
                let project = self.remote_of(e).map_or_else(|| self.project.clone(), |r| r.project(&self.project));
                let mut view = diff::build(&triage::diff_sides(&project, e, self.diff_mode));
                if let Some(mode) = triage::mode_change(&project, e, self.diff_mode) {
                    view = diff::with_mode(view, mode);
                }
                // A cache, not a history: keep it small.
                if self.diffs.len() > 64 {
                    self.diffs.clear();
                }
                self.diffs.insert(key, Arc::new(view));
            }
        }
        if let Some(Item::Session(vi)) = self.selected().map(|r| r.item)
            && let Some(s) = self.tree.views.get(vi).and_then(|v| self.fold.sessions.get(v.session))
            && !self.moves.contains_key(&s.session)
        {
            let session = s.session.clone();
            let moves = self.session_moves(&session);
            self.moves.insert(session, Arc::new(moves));
        }
        self.scroll_tree_into_view();
        self.clamp_diff_scroll();
    }

    /// The folders `session`'s commands moved ([`crate::present::command::folder_moves`]),
    /// from every entry of the session: a move whose entries a Stop settled is still named,
    /// so with settled entries hidden the session's own records are read (one session's, as
    /// `walj sessions show` reads them).
    fn session_moves(&self, session: &str) -> SessionMoves {
        let named = |f: &Fold| {
            let entries: Vec<&Entry> = f.entries_of(session).collect();
            crate::present::command::folder_moves(entries.iter().copied())
                .into_iter()
                .map(|m| {
                    let cmd =
                        entries.iter().find(|e| e.parent.as_ref() == Some(&m.command)).and_then(|e| e.command.clone());
                    (m, cmd)
                })
                .collect()
        };
        if self.tree.show_resolved {
            return named(&self.fold);
        }
        let opts = FoldOptions { keep_settled: true, session: Some(session.to_string()), all_commands: false };
        match Fold::load(&self.project.journal, &opts) {
            Ok(f) => named(&f),
            // Unreadable now: the entries the tree holds still name what they prove.
            Err(_) => named(&self.fold),
        }
    }

    // ---------------------------------------------------------------- events

    /// A status line from a sibling module (`b`'s prompt and progress).
    pub(super) fn set_status(&mut self, text: String, error: bool) {
        self.status = Some(Status { text, error });
    }

    /// Selects entry `id` with its diff: settled entries shown, every session expanded.
    /// Selects entry `id`, its session expanded. A resolved entry is hidden unless resolved
    /// entries are shown: then they are, and the answer is true (the caller says so).
    pub(super) fn reveal_entry(&mut self, id: &str) -> bool {
        let hidden = !self.tree.show_resolved && self.fold.entry(id).is_none_or(|e| !e.is_unresolved());
        if hidden {
            self.tree.show_resolved = true;
        }
        self.reload();
        let h = self.tree_height();
        self.tree.set_all_expanded(true, &self.fold, h);
        self.tree.select_entry(id, h);
        self.focus = Focus::Tree;
        self.entry_changed();
        hidden
    }

    fn info(&mut self, text: impl Into<String>) {
        self.status = Some(Status { text: text.into(), error: false });
    }

    fn error(&mut self, text: impl Into<String>) {
        self.status = Some(Status { text: text.into(), error: true });
    }

    /// The terminal refused the clipboard sequence.
    pub(crate) fn copy_failed(&mut self, e: &std::io::Error) {
        self.error(format!("copy failed: {e}"));
    }

    /// Handles one terminal event.
    pub(crate) fn handle_event(&mut self, ev: &Event) {
        match ev {
            Event::Key(k) if k.kind != KeyEventKind::Release => self.handle_key(k),
            Event::Mouse(m) => self.handle_mouse(m),
            Event::Resize(w, h) => {
                self.area = Rect::new(0, 0, *w, *h);
                self.scroll_tree_into_view();
                self.clamp_diff_scroll();
            }
            _ => {}
        }
    }

    pub fn handle_key(&mut self, ev: &KeyEvent) {
        let key = Key::from_event(ev);
        // Esc then a key, typed fast, reach walj as one Alt+key: the terminal sends ESC and the
        // key's byte together, and crossterm reads ESC+u as Alt+u. Unless the user bound that
        // Alt key, it is what was typed: Esc (the dialog cancelled, the input left, a step
        // back), then the key. (Read as a plain `u`, a dialog would take it as its choice.)
        if key.mods.contains(KeyModifiers::ALT) && matches!(key.code, KeyCode::Char(_)) && !self.keymap.binds(&key) {
            self.handle_key(&Key { code: KeyCode::Esc, mods: KeyModifiers::NONE }.event());
            let plain = Key { code: key.code, mods: key.mods - KeyModifiers::ALT };
            return self.handle_key(&plain.event());
        }
        // Ctrl+C leaves from anywhere.
        if key.code == KeyCode::Char('c') && key.mods.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return;
        }
        if self.dialog.is_some() {
            return self.dialog_key(key);
        }
        if let Some(input) = self.filter_input.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    self.filter_input = None;
                }
                KeyCode::Esc => {
                    self.filter_input = None;
                    self.set_filter(String::new());
                }
                KeyCode::Backspace => {
                    input.pop();
                    let f = input.clone();
                    self.set_filter(f);
                }
                KeyCode::Char(c) if !key.mods.contains(KeyModifiers::CONTROL) => {
                    input.push(c);
                    let f = input.clone();
                    self.set_filter(f);
                }
                _ => {}
            }
            return;
        }
        if self.bisect.input.is_some() {
            return self.bisect_key(key);
        }
        if let Some(input) = self.pane.search_input.as_mut() {
            match key.code {
                KeyCode::Enter => {
                    let q = input.clone();
                    self.pane.search_input = None;
                    self.pane.search = (!q.is_empty()).then_some(q);
                    self.jump_to_match(true, true);
                }
                KeyCode::Esc => self.pane.search_input = None,
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) if !key.mods.contains(KeyModifiers::CONTROL) => input.push(c),
                _ => {}
            }
            return;
        }
        if self.help || self.operations.is_some() {
            // The overlays scroll with the moving keys; any other key closes them.
            let page = self.area.height.saturating_sub(6).max(1) as usize;
            match self.keymap.action(&key) {
                Some(Action::MoveDown) => self.help_scroll += 1,
                Some(Action::MoveUp) => self.help_scroll = self.help_scroll.saturating_sub(1),
                Some(Action::PageDown | Action::ScrollDown) => self.help_scroll += page,
                Some(Action::PageUp | Action::ScrollUp) => self.help_scroll = self.help_scroll.saturating_sub(page),
                Some(Action::First) => self.help_scroll = 0,
                Some(Action::Last) => self.help_scroll = usize::MAX / 2,
                _ => {
                    self.help = false;
                    self.operations = None;
                    self.help_scroll = 0;
                }
            }
            return;
        }
        let scope = if self.focus == Focus::Diff { Scope::Diff } else { Scope::Tree };
        if let Some(a) = self.keymap.action_in(&key, scope) {
            self.update(a)
        }
    }

    fn set_filter(&mut self, f: String) {
        self.tree.filter = f.to_lowercase();
        self.rebuild_tree();
        // Land on the first match rather than on a session header.
        if !self.tree.filter.is_empty()
            && !matches!(self.selected().map(|r| r.item), Some(Item::Entry(..)))
            && let Some(i) = self.tree.rows.iter().position(|r| matches!(r.item, Item::Entry(..)))
        {
            self.tree.cursor = i;
        }
        self.entry_changed();
    }

    fn handle_mouse(&mut self, m: &MouseEvent) {
        if self.dialog.is_some() || self.help || self.operations.is_some() {
            return;
        }
        let l = self.areas();
        let at = Position::new(m.column, m.row);
        let in_tree = l.tree.contains(at);
        let in_diff = l.diff.contains(at);
        match m.kind {
            MouseEventKind::ScrollDown if in_diff => self.scroll_diff(3),
            MouseEventKind::ScrollUp if in_diff => self.scroll_diff(-3),
            MouseEventKind::ScrollDown if in_tree => self.move_cursor(3),
            MouseEventKind::ScrollUp if in_tree => self.move_cursor(-3),
            MouseEventKind::Down(MouseButton::Left) if in_tree => {
                self.focus = Focus::Tree;
                let inner_top = l.tree.y + 1;
                if m.row >= inner_top && m.row < l.tree.y + l.tree.height.saturating_sub(1) {
                    let i = self.tree.offset + (m.row - inner_top) as usize;
                    if i < self.tree.rows.len() {
                        if i == self.tree.cursor {
                            self.toggle(None);
                        } else {
                            self.tree.cursor = i;
                            self.entry_changed();
                        }
                    }
                }
            }
            MouseEventKind::Down(MouseButton::Left) if in_diff => self.focus = Focus::Diff,
            _ => {}
        }
    }

    fn move_cursor(&mut self, delta: isize) {
        let h = self.tree_height();
        if self.tree.move_cursor(delta, h) {
            self.entry_changed();
        }
    }

    fn scroll_diff(&mut self, delta: isize) {
        self.diff_scroll = (self.diff_scroll as isize + delta).max(0) as usize;
        self.clamp_diff_scroll();
    }

    /// Another entry (or node) is selected: its diff starts at the top, scrolled sideways
    /// to its first change (see [`App::set_detail_len`]); its file is looked at again.
    fn entry_changed(&mut self) {
        self.diff_scroll = 0;
        self.pane.hscroll = 0;
        self.pane.current = None;
        self.reveal_change = true;
        self.check_watched();
    }

    /// Columns of text in the diff pane (after the line numbers and the sign).
    fn text_avail(&self, d: &DiffView) -> usize {
        self.diff_width().saturating_sub(pane::prefix_width(d.gutter)).max(1)
    }

    /// Scrolls so diff line `line` is on screen (with the `after` lines below it, where the
    /// diff has them) and, unless lines wrap, columns `col..col+len` of it too.
    fn reveal(&mut self, d: &DiffView, (line, after): (usize, usize), col: usize, len: usize) {
        let h = self.diff_height().max(1);
        let row = self.header_len + line;
        let last = self.header_len + (line + after).min(d.lines.len().saturating_sub(1));
        if row < self.diff_scroll + self.pinned() || last >= self.diff_scroll + h {
            self.show_diff_line(line, 3);
        }
        if !self.pane.wrap {
            self.pane.hscroll = pane::reveal(col, len, self.text_avail(d), self.pane.hscroll);
        }
    }

    /// After the first measure of a newly selected entry's diff: its first change in view.
    fn reveal_first_change(&mut self) {
        if !self.reveal_change {
            return;
        }
        let Some(d) = self.current_diff().cloned() else { return };
        self.reveal_change = false;
        if let Some((line, col)) = pane::first_change(&d, 0) {
            // The line after it too: a changed line shows as its removed and its added side.
            self.reveal(&d, (line, 1), col, 1);
        }
    }

    fn scroll_sideways(&mut self, delta: isize) {
        let widest = self.current_diff().map_or(0, |d| d.widest);
        let max = widest.saturating_sub(pane::HSTEP);
        self.pane.hscroll = (self.pane.hscroll as isize + delta).clamp(0, max as isize) as usize;
    }

    /// Expands (`Some(true)`), collapses (`Some(false)`) or flips the selected node.
    fn toggle(&mut self, want: Option<bool>) -> bool {
        let h = self.tree_height();
        self.tree.toggle(want, &self.fold, h)
    }

    /// The diff line at the top of the pane, below the pinned verdict (None while the header
    /// shows).
    fn diff_line_at_top(&self) -> Option<usize> {
        (self.diff_scroll + self.pinned()).checked_sub(self.header_len)
    }

    /// Scrolls so diff line `i` is at the top (`above` lines of context above it).
    /// Scrolled, the pane's top rows show the entry's verdict, not the line under it; on a
    /// short pane the context above shrinks so the line and what follows it show.
    fn show_diff_line(&mut self, i: usize, above: usize) {
        let above = above.min(self.diff_height().saturating_sub(self.pin_rows) / 3);
        self.diff_scroll = (self.header_len + i).saturating_sub(above + self.pin_rows);
        self.clamp_diff_scroll();
    }

    /// Rows at the top of the detail pane that the pinned verdict covers now.
    fn pinned(&self) -> usize {
        if self.diff_scroll > 0 { self.pin_rows } else { 0 }
    }

    /// `]` / `[`: the next or previous hunk header to the top of the pane.
    fn jump_hunk(&mut self, forward: bool) {
        let Some(d) = self.current_diff().cloned() else {
            return self.info("no diff: select an entry");
        };
        let hunks: Vec<usize> = pane::hunks(&d).collect();
        if hunks.is_empty() {
            return self.info("no hunks in this diff");
        }
        // Where we are: the top diff line (before the first hunk while the header shows).
        let at = self.diff_line_at_top();
        let next = match (at, forward) {
            (None, true) => Some(hunks[0]),
            (None, false) => None,
            (Some(at), true) => hunks.iter().copied().find(|&h| h > at),
            (Some(at), false) => hunks.iter().rev().copied().find(|&h| h < at),
        };
        match next {
            Some(h) => {
                self.show_diff_line(h, 0);
                // Its first change in view sideways too.
                if let Some((_, col)) = pane::first_change(&d, h).filter(|_| !self.pane.wrap) {
                    self.pane.hscroll = pane::reveal(col, 1, self.text_avail(&d), 0);
                }
                let n = hunks.iter().position(|&x| x == h).unwrap_or(0) + 1;
                self.info(format!("hunk {n} of {}", hunks.len()));
            }
            None => self.info(if forward { "last hunk" } else { "first hunk" }),
        }
    }

    /// Moves to the next (or previous) line matching the search; `from_top` starts at the
    /// line at the top of the pane itself (a new search).
    fn jump_to_match(&mut self, forward: bool, from_top: bool) {
        let Some(q) = self.pane.search.clone() else {
            let k = self.keymap.key_of(Action::Search);
            return self.info(format!("no search: {k} in the diff pane searches it"));
        };
        let Some(d) = self.current_diff().cloned() else { return };
        let found = pane::matches(&d, &q);
        if found.is_empty() {
            return self.error(format!("not found: {q}"));
        }
        // A new search starts at the top of the pane; n/N go on from the last match.
        let next = if from_top {
            let at = self.diff_line_at_top().unwrap_or(0);
            found.iter().copied().find(|&m| m >= at).or(found.first().copied())
        } else {
            let at = self.pane.current.or(self.diff_line_at_top().map(|t| t + 2));
            pane::next_target(&found, at, forward)
        };
        if let Some(m) = next {
            self.pane.current = Some(m);
            self.show_diff_line(m, 2);
            // The match itself, sideways too (a long line hides it on the right).
            let text = d.lines[m].text();
            if let Some(r) = pane::find_all(&text, &q).first().cloned() {
                let (col, len) =
                    (pane::col_of(&text, r.start), pane::col_of(&text, r.end) - pane::col_of(&text, r.start));
                if !self.pane.wrap {
                    self.pane.hscroll = pane::reveal(col, len, self.text_avail(&d), self.pane.hscroll);
                }
            }
            let n = found.iter().position(|&x| x == m).unwrap_or(0) + 1;
            self.info(format!("/{q}: match {n} of {}", found.len()));
        }
    }

    /// The row of the next (or previous) session node.
    fn jump_session(&mut self, forward: bool) {
        let sessions: Vec<usize> =
            self.tree.rows.iter().enumerate().filter(|(_, r)| r.depth == 0).map(|(i, _)| i).collect();
        let c = self.tree.cursor;
        let next = if forward {
            sessions.iter().copied().find(|&i| i > c)
        } else {
            // From inside a session, its own node comes first.
            sessions.iter().rev().copied().find(|&i| i < c)
        };
        match next {
            Some(i) => {
                self.focus = Focus::Tree;
                let h = self.tree_height();
                self.tree.move_cursor(i as isize - c as isize, h);
                self.entry_changed();
            }
            None => self.info(if forward { "last session" } else { "first session" }),
        }
    }

    /// `-` / `+`: every session collapsed, or every session and group expanded.
    fn fold_all(&mut self, expand: bool) {
        let h = self.tree_height();
        self.tree.set_all_expanded(expand, &self.fold, h);
        self.entry_changed();
        self.info(if expand { "expanded all" } else { "collapsed all" });
    }

    /// Applies one action.
    pub(crate) fn update(&mut self, action: Action) {
        let page = self.tree_height().max(2) as isize - 1;
        let dpage = self.diff_height().max(2) as isize - 1;
        match (action, self.focus) {
            (Action::Quit, _) => self.quit = true,
            (Action::Back, _) => self.back(),
            (Action::Help, _) => {
                self.help = true;
                self.help_scroll = 0;
            }
            (Action::Operations, _) => self.show_operations(),
            (Action::Bisect, _) => self.start_bisect_input(),
            (Action::SwitchPane, _) => {
                self.focus = if self.focus == Focus::Tree { Focus::Diff } else { Focus::Tree };
            }
            (Action::Zoom, _) => {
                self.zoom = !self.zoom;
                self.info(if self.zoom { "full screen: f again for both panes" } else { "both panes" });
            }
            (Action::MoveDown, Focus::Tree) => self.move_cursor(1),
            (Action::MoveUp, Focus::Tree) => self.move_cursor(-1),
            (Action::First, Focus::Tree) => self.move_cursor(isize::MIN / 2),
            (Action::Last, Focus::Tree) => self.move_cursor(isize::MAX / 2),
            (Action::PageDown, Focus::Tree) => self.move_cursor(page),
            (Action::PageUp, Focus::Tree) => self.move_cursor(-page),
            (Action::MoveDown, Focus::Diff) => self.scroll_diff(1),
            (Action::MoveUp, Focus::Diff) => self.scroll_diff(-1),
            (Action::First, Focus::Diff) => self.diff_scroll = 0,
            (Action::Last, Focus::Diff) => self.scroll_diff(isize::MAX / 2),
            (Action::PageDown, Focus::Diff) => self.scroll_diff(dpage),
            (Action::PageUp, Focus::Diff) => self.scroll_diff(-dpage),
            (Action::ScrollDown, _) => self.scroll_diff(dpage / 2 + 1),
            (Action::ScrollUp, _) => self.scroll_diff(-(dpage / 2 + 1)),
            (Action::ScrollRight, _) => self.scroll_sideways(pane::HSTEP as isize),
            (Action::ScrollLeft, _) => self.scroll_sideways(-(pane::HSTEP as isize)),
            (Action::Wrap, _) => {
                self.pane.wrap = !self.pane.wrap;
                // Wrapped lines start at column 1; cut ones too (the next key scrolls again).
                self.pane.hscroll = 0;
                self.info(if self.pane.wrap { "long lines wrap" } else { "long lines are cut (← → scroll)" });
            }
            (Action::NextHunk, _) => self.jump_hunk(true),
            (Action::PrevHunk, _) => self.jump_hunk(false),
            (Action::Search, _) => {
                self.focus = Focus::Diff;
                self.pane.search_input = Some(String::new());
            }
            (Action::SearchNext, _) => self.jump_to_match(true, false),
            (Action::SearchPrev, _) => self.jump_to_match(false, false),
            (Action::Toggle, _) => {
                if !self.toggle(None) && self.selected_entry().is_some() {
                    // Enter on an entry reads it: focus the diff.
                    self.focus = Focus::Diff;
                }
            }
            (Action::Expand, Focus::Tree) => {
                if !self.toggle(Some(true))
                    && self.selected().is_some_and(|r| !matches!(r.item, Item::Entry(..)))
                    && self
                        .tree
                        .rows
                        .get(self.tree.cursor + 1)
                        .is_some_and(|n| n.depth > self.tree.rows[self.tree.cursor].depth)
                {
                    self.move_cursor(1);
                }
            }
            (Action::Collapse, Focus::Tree) => {
                if !self.toggle(Some(false))
                    && let Some(p) = self.tree.parent_row()
                {
                    self.tree.cursor = p;
                    self.entry_changed();
                    self.scroll_tree_into_view();
                }
            }
            (Action::Expand, Focus::Diff) => self.scroll_sideways(pane::HSTEP as isize),
            (Action::Collapse, Focus::Diff) => {
                if self.pane.hscroll > 0 {
                    self.scroll_sideways(-(pane::HSTEP as isize));
                } else {
                    self.focus = Focus::Tree;
                }
            }
            (Action::CollapseAll, _) => self.fold_all(false),
            (Action::ExpandAll, _) => self.fold_all(true),
            (Action::NextSession, _) => self.jump_session(true),
            (Action::PrevSession, _) => self.jump_session(false),
            (Action::Select, _) => self.select(),
            (Action::Filter, _) => {
                self.filter_input = Some(self.tree.filter.clone());
            }
            (Action::ToggleResolved, _) => {
                self.tree.show_resolved = !self.tree.show_resolved;
                self.reload();
                self.info(if self.tree.show_resolved { "showing resolved entries" } else { "hiding resolved entries" });
            }
            (Action::DiffMode, _) => {
                self.diff_mode = match self.diff_mode {
                    DiffMode::Disk => DiffMode::Applied,
                    DiffMode::Applied => DiffMode::Head,
                    DiffMode::Head => DiffMode::Disk,
                };
                self.entry_changed();
            }
            (Action::DiffPre, _) => self.set_mode(DiffMode::Disk),
            (Action::DiffApplied, _) => self.set_mode(DiffMode::Applied),
            (Action::DiffHead, _) => self.set_mode(DiffMode::Head),
            (Action::Refresh, _) => {
                // Everything read again, other machines' copies too.
                self.source.forget_remotes();
                self.reload();
                if !self.status.as_ref().is_some_and(|s| s.error) {
                    self.info(format!("reloaded {} records", self.fold.records));
                }
            }
            (Action::Done, _) => self.ask_done(),
            (Action::Revert, _) => self.ask_revert(),
            (Action::Undo, _) => self.ask_undo(),
            (Action::Redo, _) => self.redo(),
            (Action::HandBack, _) => self.ask_handback(),
            (Action::Edit, _) => self.ask_edit(),
            (Action::Copy, _) => self.ask_copy(),
            // Only dialogs read these (see `dialog_key`).
            (Action::Confirm | Action::Cancel, _) => {}
        }
    }

    /// Esc: one step back, never out. The diff pane goes back to the tree, then the
    /// selection is cleared, then the filter.
    fn back(&mut self) {
        if self.focus == Focus::Diff && self.pane.search.is_some() {
            self.pane.search = None;
            self.info("search cleared");
        } else if self.zoom {
            self.zoom = false;
        } else if self.focus == Focus::Diff {
            self.focus = Focus::Tree;
        } else if !self.tree.marked.is_empty() {
            self.tree.marked.clear();
            self.info("selection cleared");
        } else if !self.tree.filter.is_empty() {
            self.set_filter(String::new());
        } else {
            let q = self.keymap.key_of(Action::Quit);
            self.info(format!("{q} quits"));
        }
    }

    pub(super) fn set_mode(&mut self, m: DiffMode) {
        if self.diff_mode != m {
            self.diff_mode = m;
            self.entry_changed();
        }
    }

    fn select(&mut self) {
        if self.selected().is_some_and(|r| r.item.is_remote()) {
            return self.info("Space selects this checkout's entries; on another machine's, d and H act on the row");
        }
        let Some(item) = self.tree.select(&self.fold) else { return };
        if matches!(item, Item::Entry(..)) {
            self.move_cursor(1);
        }
        let n = self.tree.marked.len();
        self.info(if n == 0 {
            "nothing selected".to_string()
        } else {
            format!("{n} selected: d r H act on all of them, Esc clears")
        });
    }

    /// Sessions among the targets that still run (Claude may still be working there).
    fn live_note(&self, entries: &[&Entry]) -> Option<String> {
        let live: BTreeSet<&str> = entries
            .iter()
            .filter(|e| self.session_status(&e.session) == Some(SessionStatus::Live))
            .map(|e| e.sid.as_str())
            .collect();
        // The agents of those sessions, by name ("Claude Code may still be working …").
        let agents: BTreeSet<&str> = entries
            .iter()
            .filter(|e| live.contains(e.sid.as_str()))
            .filter_map(|e| self.fold.session(&e.session))
            .map(|s| s.agent().label())
            .collect();
        (!live.is_empty()).then(|| {
            format!(
                "Session {} is still running: {} may still be working on these files.",
                live.into_iter().collect::<Vec<_>>().join(", "),
                agents.into_iter().collect::<Vec<_>>().join(" and ")
            )
        })
    }

    fn ask_done(&mut self) {
        let targets = self.targets();
        let open: Vec<&Entry> = targets.iter().copied().filter(|e| e.is_unresolved()).collect();
        if open.is_empty() {
            return self.info(if targets.is_empty() {
                "nothing to mark: select an entry"
            } else {
                "already resolved: u undoes the last action"
            });
        }
        // One finished entry is marked at once (u undoes it); a batch, an entry whose tool
        // did not finish, or a live session asks first.
        let live = self.live_note(&open);
        if dialogs::done_needs_asking(&open, live.is_some()) {
            let d = self.elsewhere_note(&open, dialogs::done(&open, live));
            self.open_dialog(d);
        } else {
            let ids = open.iter().map(|e| e.id.clone()).collect();
            self.run_choice(Choice::Done { ids, force: false })
        }
    }

    fn ask_revert(&mut self) {
        let targets = self.targets();
        // `walj revert` reverts this checkout's entries only.
        if let Some(r) = targets.iter().find_map(|e| self.remote_of(e)) {
            let (d, h) = (self.keymap.key_of(Action::Done), self.keymap.key_of(Action::HandBack));
            let msg = format!(
                "{}'s entries are not reverted here (`walj revert` reverts this checkout's): {d} marks done, {h} hands back",
                r.name()
            );
            return self.error(msg);
        }
        // A change kept when its turn ended (persisted) is reverted as `walj revert` does: only
        // an action of the user's (done, reverted, handed back) makes it resolved.
        let open: Vec<&Entry> = targets
            .iter()
            .copied()
            .filter(|e| {
                e.is_unresolved() || (e.state() == crate::fold::EntryState::Persisted && e.last_action().is_none())
            })
            .collect();
        if open.is_empty() {
            return self.info(if targets.is_empty() {
                "nothing to revert: select an entry"
            } else {
                "already resolved: u undoes the last action"
            });
        }
        let d = self.revert_dialog(&open);
        self.open_dialog(d);
    }

    fn revert_dialog(&self, open: &[&Entry]) -> Dialog {
        let plans: Vec<_> = open.iter().map(|e| triage::plan_revert(&self.project, &self.fold, e)).collect();
        let live = self.live_note(open);
        // What the revert does to folders: deletions first (they may empty a folder), then
        // the writes (they may need one back).
        let mut folders = triage::FolderPlan::default();
        let (mut removed, mut made) = (Vec::new(), Vec::new());
        let scope = crate::project::WriteScope::Project;
        for (e, plan) in open.iter().zip(&plans) {
            if matches!(plan, Ok(triage::RevertPlan::DeleteFile)) && !e.still_running {
                removed.extend(folders.delete(&self.project, scope, &e.path));
            }
        }
        for (e, plan) in open.iter().zip(&plans) {
            if matches!(plan, Ok(triage::RevertPlan::WritePre | triage::RevertPlan::Merge { .. })) && !e.still_running {
                made.extend(folders.write(&self.project, &e.path));
            }
        }
        removed.retain(|d| !made.contains(d));
        removed.sort_by(|a, b| b.matches('/').count().cmp(&a.matches('/').count()).then(a.cmp(b)));
        dialogs::with_folders(dialogs::revert(open, &plans, live), &removed, &made)
    }

    fn open_dialog(&mut self, d: Dialog) {
        self.dialog = Some(d);
        // Until the first draw of the dialog says how many body lines fit.
        self.dialog_rows = 0;
    }

    fn ask_undo(&mut self) {
        // The selected entry's last action, else the last triage command (like `walj undo`).
        if let Some(r) = self.selected_entry().and_then(|e| self.remote_of(e)) {
            let msg = format!("a mark or hand-back of {}'s entry is not undone here (`walj undo` does not)", r.name());
            return self.error(msg);
        }
        let id = self.selected_entry().filter(|e| e.last_action().is_some()).map(|e| e.id.clone());
        self.run_choice(Choice::Undo { id, force: false });
    }

    /// `ctrl+r`: does again what the last undo took back. Marking done runs at once;
    /// reverting and handing back show their dialogs again (the disk may have changed).
    fn redo(&mut self) {
        let Some(choice) = self.redo.first().cloned() else {
            let u = self.keymap.key_of(Action::Undo);
            return self.info(format!("nothing to redo: redo follows {u}"));
        };
        let rest = self.redo.split_off(1);
        self.redo.clear();
        let open = |app: &App, ids: &[String]| -> Vec<Entry> {
            ids.iter().filter_map(|id| app.fold.entry(id)).filter(|e| e.is_unresolved()).cloned().collect()
        };
        match choice {
            Choice::Revert { ids, .. } => {
                let entries = open(self, &ids);
                let refs: Vec<&Entry> = entries.iter().collect();
                if refs.is_empty() {
                    return self.info("nothing to redo: the entries were resolved since");
                }
                let d = self.revert_dialog(&refs);
                self.open_dialog(d);
            }
            Choice::HandBack { ids, .. } => {
                let entries = open(self, &ids);
                let refs: Vec<&Entry> = entries.iter().collect();
                if refs.is_empty() {
                    return self.info("nothing to redo: the entries were resolved since");
                }
                let live = self.live_note(&refs);
                self.open_dialog(dialogs::hand_back(&refs, live));
            }
            other => self.run_choice(other),
        }
        // A batch that mixed kinds: the others stay for the next ctrl+r.
        if self.redo.is_empty() {
            self.redo = rest;
        }
    }

    /// The operation list overlay, read with resolved entries kept.
    fn show_operations(&mut self) {
        let opts = FoldOptions { keep_settled: true, session: None, all_commands: false };
        let fold = if self.tree.show_resolved { None } else { Fold::load(&self.project.journal, &opts).ok() };
        let list = ops::operations(fold.as_ref().unwrap_or(&self.fold));
        self.operations = Some(list);
        self.help_scroll = 0;
    }

    /// `e`: the selected entry's file in `$EDITOR`, at the change shown (the first changed
    /// line at or below the top of the diff pane, else the first one).
    fn ask_edit(&mut self) {
        let Some(e) = self.selected_entry() else {
            return self.info("nothing to edit: select an entry");
        };
        let path = e.path.clone();
        let line = self.current_diff().and_then(|d| edit_line(d, self.diff_line_at_top().unwrap_or(0)));
        match self.project.resolve_rel(&path) {
            Ok(file) if file.is_file() => {
                let editor = self.editor();
                self.edit_request = Some(EditRequest { file, path, editor, line, ids: Vec::new() });
            }
            Ok(_) => self.error(format!("{path} is not on disk (deleted?): nothing to edit")),
            Err(err) => self.error(format!("cannot edit {path}: {err:#}")),
        }
    }

    /// `y`: what to copy, for the selected row.
    fn ask_copy(&mut self) {
        let Some(row) = self.selected() else {
            return self.info("nothing to copy: select an entry or a session");
        };
        let (path, id, session) = match row.item {
            Item::Entry(_, _, ei) => {
                let e = &self.fold.entries[ei];
                (Some(e.path.clone()), Some(e.id.clone()), e.session.clone())
            }
            Item::Session(vi) | Item::Group(vi, _) => {
                let s = &self.fold.sessions[self.tree.views[vi].session];
                (None, None, s.session.clone())
            }
            Item::RemoteEntry(..) => match self.selected_entry() {
                Some(e) => (Some(e.path.clone()), Some(e.id.clone()), e.session.clone()),
                None => return,
            },
            Item::RemoteSession(mi, si) => match self.tree.machines.get(mi).and_then(|m| m.sessions.get(si)) {
                Some(s) => (None, None, s.id.clone()),
                None => return,
            },
            Item::Machine(_) => return self.info("nothing to copy: select one of its entries or sessions"),
        };
        let resume = match self.fold.session(&session) {
            Some(s) => crate::present::text::resume_line(&self.project, s),
            None => crate::agents::Agent::ClaudeCode.resume_hint(&crate::present::shell_quote(&session)),
        };
        self.open_dialog(dialogs::copy(path, id, &session, resume));
    }

    fn ask_handback(&mut self) {
        let targets = self.targets();
        let open: Vec<&Entry> = targets.iter().copied().filter(|e| e.is_unresolved()).collect();
        if open.is_empty() {
            return self.info(if targets.is_empty() {
                "nothing to hand back: select an entry or a session"
            } else {
                "already resolved: u undoes the last action"
            });
        }
        let live = self.live_note(&open);
        let d = self.elsewhere_note(&open, dialogs::hand_back(&open, live));
        self.open_dialog(d);
    }

    /// A key while a dialog is open: a choice, Enter (the default), Esc (cancel), a
    /// scroll key, or quit (which leaves without doing the dialog's action).
    fn dialog_key(&mut self, key: Key) {
        let Some(d) = &self.dialog else { return };
        if let Some(c) = self.keymap.dialog_key(&key).and_then(|k| d.choice_for(k)) {
            self.dialog = None;
            return self.run_choice(c);
        }
        let rows = self.dialog_rows.max(1);
        let page = rows.saturating_sub(1).max(1) as isize;
        let delta = match self.keymap.action(&key) {
            Some(Action::MoveDown) => 1,
            Some(Action::MoveUp) => -1,
            Some(Action::PageDown | Action::ScrollDown) => page,
            Some(Action::PageUp | Action::ScrollUp) => -page,
            Some(Action::First) => isize::MIN / 2,
            Some(Action::Last) => isize::MAX / 2,
            Some(Action::Quit) => {
                self.quit = true;
                return;
            }
            _ => return,
        };
        if let Some(d) = self.dialog.as_mut() {
            d.scroll_by(delta, rows);
        }
    }

    /// The editor command: the option, else `$VISUAL`, `$EDITOR`, else a platform default.
    fn editor(&self) -> String {
        self.editor
            .clone()
            .or_else(|| std::env::var("VISUAL").ok().filter(|v| !v.trim().is_empty()))
            .or_else(|| std::env::var("EDITOR").ok().filter(|v| !v.trim().is_empty()))
            .unwrap_or_else(|| if cfg!(windows) { "notepad".into() } else { "vi".into() })
    }

    /// After the editor ran (or failed to start): reload, and plan the revert again.
    pub(crate) fn edited(&mut self, result: std::io::Result<std::process::ExitStatus>) {
        let Some(req) = self.edit_request.take() else { return };
        self.reload();
        let open: Vec<&Entry> =
            req.ids.iter().filter_map(|id| self.fold.entry(id)).filter(|e| e.is_unresolved()).collect();
        if !open.is_empty() {
            let d = self.revert_dialog(&open);
            self.open_dialog(d);
        }
        match result {
            Ok(st) if st.success() && req.ids.is_empty() => self.info(format!("edited {}: reloaded", req.path)),
            Ok(st) if st.success() => self.info(format!("edited {}: the revert is planned again", req.path)),
            Ok(st) => self.error(format!("{} exited with {st} on {}", req.editor, req.path)),
            Err(e) => self.error(format!("cannot run the editor `{}`: {e} (set $EDITOR)", req.editor)),
        }
    }

    /// Runs a decided action through the triage library, then reloads.
    pub(crate) fn run_choice(&mut self, choice: Choice) {
        let mut reopened: Vec<String> = Vec::new();
        let result: Result<String, triage::TriageError> = match &choice {
            Choice::Cancel => {
                self.info("cancelled");
                return;
            }
            Choice::Copy { what, text } => {
                self.clipboard = Some(text.clone());
                self.info(format!("copied {what}: {}", present::clip(text, 60)));
                return;
            }
            Choice::Edit { path, ids } => {
                // At the first change of the pre-image → disk diff, as `e` in the tree does.
                let line = ids.iter().filter_map(|id| self.fold.entry(id)).find(|e| e.path == *path).and_then(|e| {
                    let sides = triage::diff_sides(&self.project, e, DiffMode::Disk);
                    edit_line(&diff::build(&sides), 0)
                });
                match self.project.resolve_rel(path) {
                    Ok(file) => {
                        let editor = self.editor();
                        self.edit_request =
                            Some(EditRequest { file, path: path.clone(), editor, line, ids: ids.clone() });
                    }
                    Err(e) => self.error(format!("cannot edit {path}: {e:#}")),
                }
                return;
            }
            // Ids of another machine's journal go where `walj mark` sends them.
            Choice::Done { ids, force } if self.elsewhere(ids) => {
                crate::sync::triage::mark_done(&self.project, ids, None, *force)
                    .map(|o| summary("marked done", &o.unwrap_or_default()))
            }
            Choice::Done { ids, force } => {
                triage::mark_done(&self.project, &self.fold, ids, *force).map(|o| summary("marked done", &o))
            }
            Choice::Revert { ids, force } => triage::revert(
                &self.project,
                &self.fold,
                ids,
                RevertOptions { force: *force, ..RevertOptions::default() },
            )
            .and_then(|o| concurrent_is_an_error(summary("reverted", &o), &o)),
            Choice::Undo { id, force } => triage::undo(&self.project, &self.fold, id.as_deref(), *force, false)
                .and_then(|o| {
                    reopened = o.iter().filter(|x| x.changed).map(|x| x.id.clone()).collect();
                    concurrent_is_an_error(summary("undone", &o), &o)
                }),
            Choice::HandBack { ids, force } => {
                let opts = HandoffOptions { print_only: false, force: *force };
                if self.elsewhere(ids) {
                    crate::sync::triage::handoff(&self.project, ids, None, opts).and_then(|b| {
                        b.ok_or_else(|| triage::TriageError::Refused("no other journal has these entries".into()))
                    })
                } else {
                    triage::handoff(&self.project, &self.fold, ids, None, opts)
                }
            }
            .map(|b| {
                let who = match b.agent {
                    None | Some(crate::agents::Agent::ClaudeCode) => "Claude",
                    Some(a) => a.label(),
                };
                let mut s = format!(
                    "handed back {}: {who} reads the brief at its next session start",
                    plural(b.entries.len(), "entry", "entries")
                );
                if let Some(r) = b.resume_line {
                    s.push_str(&format!(" — resume with `{r}`"));
                }
                s
            }),
        };
        match result {
            Ok(msg) => {
                self.reload();
                if let Choice::Undo { .. } = &choice {
                    // What the undo reopened can be redone (the newest undo wins), and is what
                    // the user looks at next: the next key acts on it, not on a neighbour.
                    self.redo = ops::redo_choices(&self.fold, &reopened);
                    if let Some(id) = reopened.first() {
                        let height = self.tree_height();
                        self.tree.select_entry(id, height);
                    }
                    if !self.redo.is_empty() {
                        let r = self.keymap.key_of(Action::Redo);
                        return self.info(format!("{msg} — {r} redoes it"));
                    }
                } else {
                    // A new action: there is nothing left to redo.
                    self.redo.clear();
                    self.tree.marked.clear();
                }
                self.info(msg);
            }
            // Nothing to take back is a fact, not a failure.
            Err(triage::TriageError::Refused(m))
                if matches!(choice, Choice::Undo { .. }) && m.starts_with("nothing to undo") =>
            {
                self.info(m);
            }
            Err(e) => {
                self.reload();
                self.error(format!("{e:#}"));
            }
        }
    }
}

impl App {
    /// Whether `ids` name no entry of this checkout's journal (another machine's, as
    /// `walj mark` and `walj handoff` decide).
    fn elsewhere(&self, ids: &[String]) -> bool {
        !ids.is_empty() && ids.iter().all(|i| self.fold.entry(i).is_none())
    }

    /// A dialog on another machine's entries says where the decision goes, not "u undoes it"
    /// (`walj undo` does not take back a mark or hand-back of another machine's entry).
    fn elsewhere_note(&self, open: &[&Entry], mut d: Dialog) -> Dialog {
        if let Some(r) = open.first().and_then(|e| self.remote_of(e)) {
            let name = r.name().to_string();
            for line in &mut d.note {
                if let Some(head) = line.strip_suffix(" u undoes it.") {
                    *line =
                        format!("{head} Recorded here, {name} records it at its next `walj sync`; u does not undo it.");
                }
            }
        }
        d
    }
}

/// A revert or undo that stopped at a file another program wrote meanwhile is shown as an
/// error (it did not do all it was asked): that file's message, which says what to do.
fn concurrent_is_an_error(msg: String, outcomes: &[Outcome]) -> Result<String, triage::TriageError> {
    match outcomes.iter().find(|o| o.concurrent) {
        Some(o) => Err(triage::TriageError::Failed(o.message.clone())),
        None => Ok(msg),
    }
}

fn summary(verb: &str, outcomes: &[Outcome]) -> String {
    match outcomes {
        [] => format!("{verb}: nothing"),
        [o] => o.message.clone(),
        many => {
            let changed = many.iter().filter(|o| o.changed).count();
            let first = many.iter().map(|o| o.message.as_str()).take(2).collect::<Vec<_>>().join("; ");
            format!("{verb} {changed} of {}: {first}{}", many.len(), if many.len() > 2 { "; …" } else { "" })
        }
    }
}

/// The line `e` opens the editor at: the first changed line at or below diff line `top`,
/// else the first one; a removed line has no new number, so the line after it.
fn edit_line(d: &DiffView, top: usize) -> Option<usize> {
    let changed = |l: &&diff::DiffLine| matches!(l.kind, diff::LineKind::Added | diff::LineKind::Removed);
    let first = d.lines.iter().skip(top).find(changed).or_else(|| d.lines.iter().find(changed))?;
    first.new_no.or_else(|| d.lines.iter().skip_while(|l| !std::ptr::eq(*l, first)).find_map(|l| l.new_no))
}

/// A cache key for a mode (`DiffMode` is not `Hash`).
fn mode_index(m: DiffMode) -> u8 {
    match m {
        DiffMode::Disk => 0,
        DiffMode::Applied => 1,
        DiffMode::Head => 2,
    }
}

pub(crate) fn mode_label(m: DiffMode) -> &'static str {
    match m {
        DiffMode::Disk => "pre-image → disk",
        DiffMode::Applied => "pre-image → post-image",
        DiffMode::Head => "HEAD → disk",
    }
}
