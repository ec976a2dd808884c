//! The tree pane's model: which sessions and entries are shown (the resolved toggle, the
//! filter), how they flatten into rows (expansion), the cursor and its scroll offset, and
//! the Space selection. Reads the fold, never the disk.

use std::collections::{BTreeSet, HashMap};

use crate::fold::{Entry, Fold, SessionStatus};

/// A node of the tree, by identity (stable across reloads, so the selection survives).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NodeKey {
    Session(String),
    Group(String, String),
    Entry(String),
    /// Another machine's journal (`walj sync`), by journal id.
    Machine(String),
}

/// One visible row of the tree.
#[derive(Debug, Clone)]
pub struct Row {
    pub key: NodeKey,
    pub depth: u8,
    pub item: Item,
}

#[derive(Debug, Clone, Copy)]
pub enum Item {
    /// Index into `Tree::views`.
    Session(usize),
    /// (view, group).
    Group(usize, usize),
    /// (view, group, index into `fold.entries`).
    Entry(usize, usize, usize),
    /// Another machine's header: index into `Tree::machines`.
    Machine(usize),
    /// (machine, index into its `sessions`).
    RemoteSession(usize, usize),
    /// (machine, session, index into that journal's `fold.entries`).
    RemoteEntry(usize, usize, usize),
}

impl Item {
    /// Whether the row is another machine's (read from its synced copy).
    pub fn is_remote(self) -> bool {
        matches!(self, Item::Machine(_) | Item::RemoteSession(..) | Item::RemoteEntry(..))
    }
}

/// Another machine's journal as shown, below this checkout's sessions: its sessions with
/// shown entries, newest first, each always expanded.
#[derive(Debug, Clone)]
pub struct MachineView {
    /// Index into the journals given to [`Tree::build_machines`].
    pub remote: usize,
    /// The journal id (the node's key).
    pub journal: String,
    pub sessions: Vec<RemoteSessionView>,
    /// Unresolved entries of the journal (whatever the filter).
    pub open: usize,
}

#[derive(Debug, Clone)]
pub struct RemoteSessionView {
    /// Index into that journal's `fold.sessions`.
    pub session: usize,
    /// The session's id (the node's key).
    pub id: String,
    pub status: SessionStatus,
    /// (index into that journal's `fold.entries`, full id).
    pub entries: Vec<(usize, String)>,
    pub open: usize,
}

/// A session as shown: its entries (after the resolved toggle and the filter) by event.
#[derive(Debug, Clone)]
pub struct SessionView {
    /// Index into `fold.sessions`.
    pub session: usize,
    pub status: SessionStatus,
    /// (event, entry indexes) in order of first appearance; a subagent's entries after the
    /// main thread's, labelled `event · <its heading>` (`present::state::subagent_heading`).
    pub groups: Vec<(String, Vec<usize>)>,
    /// Unresolved entries of the session (whatever the filter).
    pub open: usize,
}

/// The tree's state; every method that needs the entries takes the fold.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub views: Vec<SessionView>,
    /// Other machines' journals with something shown (`walj sync`), after this checkout's.
    pub machines: Vec<MachineView>,
    pub rows: Vec<Row>,
    pub cursor: usize,
    /// First row shown.
    pub offset: usize,
    pub show_resolved: bool,
    /// The applied filter (lower case).
    pub filter: String,
    /// Entries of this journal the filter lets through, of those shown without it (the
    /// tree's title: "1 of 6").
    pub filtered: (usize, usize),
    /// Entries picked with Space (full ids).
    pub marked: BTreeSet<String>,
    /// Entries (indexes into `fold.entries`) whose path another shown entry of the same
    /// session has too, with the shortest start of their id that tells them apart.
    pub repeated: HashMap<usize, String>,
    /// Expansions the user chose (else: the default of the node).
    toggled: HashMap<NodeKey, bool>,
}

/// The filter's prefix for prompt and command text (`/p:retry count`).
pub(crate) const PROMPT_FILTER: &str = "p:";

impl Tree {
    /// Shown after the resolved toggle and the filter ([`Tree::matches`]).
    fn entry_visible(&self, fold: &Fold, e: &Entry) -> bool {
        if !self.show_resolved && !e.is_unresolved() {
            return false;
        }
        self.filter.is_empty() || self.matches(fold, e)
    }

    /// A filter matches what an entry is: its path, event, tool, id and session. Behind `p:` it
    /// matches the words around it instead: its session's prompts and the command line of the
    /// command behind it (a prompt's word pulls in a whole session, so it is asked for).
    fn matches(&self, fold: &Fold, e: &Entry) -> bool {
        if let Some(words) = self.filter.strip_prefix(PROMPT_FILTER) {
            let has = |s: &str| s.to_lowercase().contains(words);
            let Some(s) = fold.session(&e.session) else { return false };
            return s.prompts.iter().any(|p| has(&p.text))
                || s.commands.iter().any(|c| (c.id == e.id || e.parent.as_deref() == Some(&c.id)) && has(&c.command));
        }
        let has = |s: &str| s.to_lowercase().contains(&self.filter);
        [e.path.as_str(), &e.event, &crate::present::text::event_title(&e.event), &e.tool, &e.id, &e.session]
            .into_iter()
            .any(has)
    }

    /// Groups the fold's entries into the sessions shown, newest first.
    pub(crate) fn build_views(&mut self, fold: &Fold) {
        let mut views = Vec::new();
        let shown = fold.entries.iter().filter(|e| self.show_resolved || e.is_unresolved());
        let (mut pass, mut all) = (0, 0);
        for e in shown {
            all += 1;
            pass += usize::from(self.filter.is_empty() || self.matches(fold, e));
        }
        self.filtered = (pass, all);
        let mut by_session: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, e) in fold.entries.iter().enumerate() {
            by_session.entry(e.session.as_str()).or_default().push(i);
        }
        for (si, s) in fold.sessions.iter().enumerate() {
            let idx = by_session.get(s.session.as_str()).map(Vec::as_slice).unwrap_or(&[]);
            let open = idx.iter().filter(|&&i| fold.entries[i].is_unresolved()).count();
            let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
            // A subagent's entries in groups of their own, under its heading, after the main
            // thread's (as recover and the note list them).
            let mut theirs: Vec<(String, Vec<usize>)> = Vec::new();
            for &i in idx {
                let e = &fold.entries[i];
                if !self.entry_visible(fold, e) {
                    continue;
                }
                let (list, label) = match e.agent_id.as_deref() {
                    None => (&mut groups, crate::present::text::event_title(&e.event)),
                    Some(a) => {
                        let heading = match crate::present::state::by_subagent(e, s) {
                            Some(sub) => crate::present::state::subagent_heading(sub, s.status()),
                            None => format!("subagent [{}]", a.chars().take(8).collect::<String>()),
                        };
                        (&mut theirs, format!("{} · {heading}", crate::present::text::event_title(&e.event)))
                    }
                };
                match list.iter_mut().find(|(ev, _)| *ev == label) {
                    Some((_, v)) => v.push(i),
                    None => list.push((label, vec![i])),
                }
            }
            groups.extend(theirs);
            // Ended sessions with nothing open are history: shown with the resolved toggle.
            // Crashed and live ones are shown for their context even without entries.
            let has_entries = !groups.is_empty();
            if !self.filter.is_empty() && !has_entries {
                continue;
            }
            if !self.show_resolved && !has_entries {
                if s.v1 || s.records == 0 {
                    continue;
                }
                let st = s.status();
                if !matches!(st, SessionStatus::Crashed | SessionStatus::Live) {
                    continue;
                }
                views.push(SessionView { session: si, status: st, groups, open });
                continue;
            }
            views.push(SessionView { session: si, status: s.status(), groups, open });
        }
        // Newest first: after a crash the session that crashed is on top.
        views.sort_by(|a, b| fold.sessions[b.session].last_ts.cmp(&fold.sessions[a.session].last_ts));
        self.repeated.clear();
        for v in &views {
            let mut by_path: HashMap<&str, Vec<usize>> = HashMap::new();
            for &i in v.groups.iter().flat_map(|(_, g)| g) {
                by_path.entry(fold.entries[i].path.as_str()).or_default().push(i);
            }
            for same in by_path.values().filter(|v| v.len() > 1) {
                // Shown ids are unique in the whole journal, so among these too.
                for &i in same {
                    self.repeated.insert(i, fold.ids.short(&fold.entries[i].id).to_string());
                }
            }
        }
        self.views = views;
    }

    /// Other machines' journals (`(journal id, fold)`, their states from their manifests):
    /// their sessions with shown entries, newest first; a journal with none is not shown.
    pub(crate) fn build_machines(&mut self, journals: &[(&str, &Fold)]) {
        self.machines.clear();
        for (ri, (journal, fold)) in journals.iter().enumerate() {
            let mut sessions = Vec::new();
            for (si, s) in fold.sessions.iter().enumerate() {
                let mut entries = Vec::new();
                let mut open = 0;
                for (i, e) in fold.entries.iter().enumerate().filter(|(_, e)| e.session == s.session) {
                    open += usize::from(e.is_unresolved());
                    if self.entry_visible(fold, e) {
                        entries.push((i, e.id.clone()));
                    }
                }
                if !entries.is_empty() {
                    sessions.push(RemoteSessionView {
                        session: si,
                        id: s.session.clone(),
                        status: s.status(),
                        entries,
                        open,
                    });
                }
            }
            if sessions.is_empty() {
                continue;
            }
            sessions.sort_by(|a, b| fold.sessions[b.session].last_ts.cmp(&fold.sessions[a.session].last_ts));
            let open = fold.entries.iter().filter(|e| e.is_unresolved()).count();
            self.machines.push(MachineView { remote: ri, journal: journal.to_string(), sessions, open });
        }
    }

    fn default_expanded(&self, key: &NodeKey, view: &SessionView) -> bool {
        match key {
            NodeKey::Session(_) => {
                !self.filter.is_empty() || view.open > 0 || matches!(view.status, SessionStatus::Crashed)
            }
            _ => true,
        }
    }

    pub(crate) fn is_expanded(&self, key: &NodeKey, view: &SessionView) -> bool {
        self.toggled.get(key).copied().unwrap_or_else(|| self.default_expanded(key, view))
    }

    /// Flattens the visible tree, keeping the cursor on the same node when it still exists
    /// (else on the row that took its place); `height` is the rows the pane shows.
    pub(crate) fn rebuild_rows(&mut self, fold: &Fold, height: usize) {
        let selected = self.rows.get(self.cursor).map(|r| r.key.clone());
        let mut rows = Vec::new();
        for (vi, view) in self.views.iter().enumerate() {
            let s = &fold.sessions[view.session];
            let skey = NodeKey::Session(s.session.clone());
            let open = self.is_expanded(&skey, view);
            rows.push(Row { key: skey, depth: 0, item: Item::Session(vi) });
            if !open {
                continue;
            }
            for (gi, (event, entries)) in view.groups.iter().enumerate() {
                let gkey = NodeKey::Group(s.session.clone(), event.clone());
                let gopen = self.is_expanded(&gkey, view);
                rows.push(Row { key: gkey, depth: 1, item: Item::Group(vi, gi) });
                if !gopen {
                    continue;
                }
                for &ei in entries {
                    rows.push(Row {
                        key: NodeKey::Entry(fold.entries[ei].id.clone()),
                        depth: 2,
                        item: Item::Entry(vi, gi, ei),
                    });
                }
            }
        }
        for (mi, m) in self.machines.iter().enumerate() {
            rows.push(Row { key: NodeKey::Machine(m.journal.clone()), depth: 0, item: Item::Machine(mi) });
            for (si, s) in m.sessions.iter().enumerate() {
                let key = NodeKey::Session(s.id.clone());
                rows.push(Row { key, depth: 1, item: Item::RemoteSession(mi, si) });
                for (ei, id) in &s.entries {
                    rows.push(Row { key: NodeKey::Entry(id.clone()), depth: 2, item: Item::RemoteEntry(mi, si, *ei) });
                }
            }
        }
        self.rows = rows;
        if let Some(key) = selected {
            if let Some(i) = self.rows.iter().position(|r| r.key == key) {
                self.cursor = i;
            } else if let NodeKey::Entry(id) = &key {
                // The entry left the view (resolved, filtered): stay near it, on its group
                // or session when it was the last one there.
                let session = fold.entry(id).map(|e| e.session.clone());
                let near = session.and_then(|s| self.rows.iter().position(|r| r.key == NodeKey::Session(s.clone())));
                self.cursor = self.cursor.min(self.rows.len().saturating_sub(1));
                if let Some(n) = near
                    && self.cursor < n
                {
                    self.cursor = n;
                }
            }
        }
        self.cursor = self.cursor.min(self.rows.len().saturating_sub(1));
        self.scroll_into_view(height);
    }

    /// Keeps the cursor inside the `height` rows shown.
    pub(crate) fn scroll_into_view(&mut self, height: usize) {
        let h = height.max(1);
        if self.cursor < self.offset {
            self.offset = self.cursor;
        } else if self.cursor >= self.offset + h {
            self.offset = self.cursor + 1 - h;
        }
        let max_off = self.rows.len().saturating_sub(h);
        self.offset = self.offset.min(max_off);
    }

    pub(crate) fn selected(&self) -> Option<&Row> {
        self.rows.get(self.cursor)
    }

    pub(crate) fn selected_entry<'f>(&self, fold: &'f Fold) -> Option<&'f Entry> {
        match self.selected()?.item {
            Item::Entry(_, _, ei) => fold.entries.get(ei),
            _ => None,
        }
    }

    /// Entry indexes under a row (all of them, whatever their state).
    fn under(&self, item: Item) -> Vec<usize> {
        match item {
            Item::Entry(_, _, ei) => vec![ei],
            Item::Group(vi, gi) => self.views[vi].groups[gi].1.clone(),
            Item::Session(vi) => self.views[vi].groups.iter().flat_map(|(_, v)| v.iter().copied()).collect(),
            // Other machines' entries are not this fold's.
            Item::Machine(_) | Item::RemoteSession(..) | Item::RemoteEntry(..) => Vec::new(),
        }
    }

    /// Entries an action applies to: the Space selection, else the selected entry, else the
    /// unresolved entries under the selected session or group.
    pub(crate) fn targets<'f>(&self, fold: &'f Fold) -> Vec<&'f Entry> {
        if !self.marked.is_empty() {
            return fold.entries.iter().filter(|e| self.marked.contains(&e.id)).collect();
        }
        let Some(row) = self.selected() else { return Vec::new() };
        match row.item {
            Item::Entry(_, _, ei) => fold.entries.get(ei).into_iter().collect(),
            item => self.under(item).into_iter().map(|i| &fold.entries[i]).filter(|e| e.is_unresolved()).collect(),
        }
    }

    /// Moves the cursor by `delta` rows (clamped); true when it moved.
    pub(crate) fn move_cursor(&mut self, delta: isize, height: usize) -> bool {
        if self.rows.is_empty() {
            return false;
        }
        let max = self.rows.len() - 1;
        let next = (self.cursor as isize + delta).clamp(0, max as isize) as usize;
        let moved = next != self.cursor;
        self.cursor = next;
        self.scroll_into_view(height);
        moved
    }

    /// Expands (`Some(true)`), collapses (`Some(false)`) or flips the selected node; true
    /// when it changed.
    pub(crate) fn toggle(&mut self, want: Option<bool>, fold: &Fold, height: usize) -> bool {
        let Some(row) = self.selected().cloned() else { return false };
        let vi = match row.item {
            Item::Session(vi) | Item::Group(vi, _) => vi,
            Item::Entry(..) | Item::Machine(_) | Item::RemoteSession(..) | Item::RemoteEntry(..) => return false,
        };
        let now = self.is_expanded(&row.key, &self.views[vi]);
        let next = want.unwrap_or(!now);
        if next == now {
            return false;
        }
        self.toggled.insert(row.key, next);
        self.rebuild_rows(fold, height);
        true
    }

    /// Puts the cursor on entry `id` when it has a row (an undo's reopened entry).
    pub(crate) fn select_entry(&mut self, id: &str, height: usize) {
        if let Some(i) = self.rows.iter().position(|r| matches!(&r.key, NodeKey::Entry(e) if e == id)) {
            self.cursor = i;
            self.scroll_into_view(height);
        }
    }

    /// Every session collapsed (`false`), or every session and group expanded; the cursor
    /// stays on its node, or on the session it was in.
    pub(crate) fn set_all_expanded(&mut self, expand: bool, fold: &Fold, height: usize) {
        let session_of = |t: &Tree| match t.selected().map(|r| r.item) {
            Some(Item::Session(vi) | Item::Group(vi, _) | Item::Entry(vi, ..)) => {
                Some(NodeKey::Session(fold.sessions[t.views[vi].session].session.clone()))
            }
            Some(Item::Machine(_) | Item::RemoteSession(..) | Item::RemoteEntry(..)) | None => None,
        };
        let session = session_of(self);
        for v in &self.views {
            let s = &fold.sessions[v.session].session;
            self.toggled.insert(NodeKey::Session(s.clone()), expand);
            for (event, _) in &v.groups {
                self.toggled.insert(NodeKey::Group(s.clone(), event.clone()), true);
            }
        }
        self.rebuild_rows(fold, height);
        if !expand
            && let Some(key) = session
            && let Some(i) = self.rows.iter().position(|r| r.key == key)
        {
            self.cursor = i;
            self.scroll_into_view(height);
        }
    }

    /// The row of the selected node's parent.
    pub(crate) fn parent_row(&self) -> Option<usize> {
        let row = self.selected()?;
        (0..self.cursor).rev().find(|&i| self.rows[i].depth < row.depth)
    }

    /// Space: adds the entries under the selected row to the selection, or removes them
    /// when all are in it. Returns the row's item.
    pub(crate) fn select(&mut self, fold: &Fold) -> Option<Item> {
        let item = self.selected()?.item;
        let ids: Vec<String> = self.under(item).into_iter().map(|i| fold.entries[i].id.clone()).collect();
        if ids.iter().all(|id| self.marked.contains(id)) {
            for id in &ids {
                self.marked.remove(id);
            }
        } else {
            self.marked.extend(ids);
        }
        Some(item)
    }

    /// The status of a session as shown.
    pub(crate) fn session_status(&self, fold: &Fold, session: &str) -> Option<SessionStatus> {
        self.views.iter().find(|v| fold.sessions[v.session].session == session).map(|v| v.status)
    }
}
