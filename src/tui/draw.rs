//! Drawing: `draw(&App)` renders the state and changes nothing. Only the visible slice
//! of the tree and of the diff is turned into text, so a 100k-entry journal or a
//! 10k-line diff costs what the screen shows.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Padding, Paragraph, Wrap};
use unicode_width::UnicodeWidthStr;

use super::app::{App, Focus, Item, Row, mode_label};
use super::diff::{DiffLine, LineKind};
use super::keymap::{Action, BINDINGS, GROUPS};
use super::layout::{MIN_HEIGHT, MIN_WIDTH, too_small};
use super::pane::{self, DiffPane, cw};
use super::theme;
use crate::fold::{CommandStatus, Entry, EntryState, SessionInfo, SessionStatus};
use crate::present::{self, icon as state_icon, one_line, plural, safe, short_time};

/// An entry state's colour (the table in [`crate::present`]).
pub(crate) fn state_style(s: EntryState) -> Style {
    theme::state(s)
}

fn badge(st: SessionStatus) -> Span<'static> {
    Span::styled(format!(" {} ", st.as_str()), theme::badge(st))
}

/// Draws the whole screen.
pub(crate) fn draw(f: &mut Frame, app: &App) {
    let area = f.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    if too_small(area) {
        let msg = format!(
            "walj needs {MIN_WIDTH}×{MIN_HEIGHT}; the terminal is {}×{}. Make it larger, or q quits.",
            area.width, area.height
        );
        f.render_widget(Paragraph::new(msg).style(theme::WARN).wrap(Wrap { trim: true }), area);
        return;
    }
    let l = app.areas();
    if l.tree.width > 0 {
        draw_tree(f, app, l.tree);
    }
    if l.diff.width > 0 {
        draw_detail(f, app, l.diff);
    }
    draw_status(f, app, l.status);
    draw_footer(f, app, l.footer);
    if app.help {
        draw_help(f, app, area);
    }
    if let Some(ops) = &app.operations {
        draw_operations(f, app, ops, area);
    }
    if let Some(d) = &app.dialog {
        draw_dialog(f, d, area);
    }
}

/// A pane's frame: the focused one has a thick border and a ▶ before its title, so focus
/// shows without colour.
fn pane(title: Line<'static>, focused: bool) -> Block<'static> {
    let mut title = title;
    if focused {
        title.spans.insert(0, Span::styled("▶", theme::BOLD));
    }
    Block::bordered()
        .border_type(if focused { BorderType::Thick } else { BorderType::Rounded })
        .border_style(Style::new().fg(if focused { theme::BORDER_FOCUS } else { theme::BORDER }))
        .title(title)
}

/// Cuts `s` to `w` display columns, with `…` when cut (after [`safe`]: no control or
/// invisible characters, one width per char).
fn fit(s: &str, w: usize) -> String {
    let s = safe(s);
    if s.width() <= w {
        return s.into_owned();
    }
    if w == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        if used + cw(c) + 1 > w {
            break;
        }
        out.push(c);
        used += cw(c);
    }
    out.push('…');
    out
}

/// A path cut to `w` columns in the middle, so its start and its file name both stay:
/// `src/components/…/forms/Button.tsx`.
fn fit_path(s: &str, w: usize) -> String {
    let s = safe(s);
    if s.width() <= w {
        return s.into_owned();
    }
    if w <= 4 {
        return fit(&s, w);
    }
    let chars: Vec<char> = s.chars().collect();
    let name = s.rsplit('/').next().unwrap_or(&s);
    // The end gets the file name (and more when there is room), the start the rest.
    let budget = w - 1;
    let tail_w = name.width().max(budget * 2 / 3).min(budget.saturating_sub(1));
    let mut tail: Vec<char> = Vec::new();
    let mut used = 0;
    for &c in chars.iter().rev() {
        if used + cw(c) > tail_w {
            break;
        }
        tail.push(c);
        used += cw(c);
    }
    let mut head = String::new();
    let mut head_used = 0;
    for &c in &chars {
        if head_used + cw(c) > budget - used {
            break;
        }
        head.push(c);
        head_used += cw(c);
    }
    head.push('…');
    head.extend(tail.into_iter().rev());
    head
}

/// Where the cursor is among the entries the list shows: "entry 3 of 47" on an entry row,
/// "47 entries" elsewhere; `None` with none shown.
fn list_position(app: &App) -> Option<String> {
    let is_entry = |r: &Row| matches!(r.item, Item::Entry(..) | Item::RemoteEntry(..));
    let total = app.tree.rows.iter().filter(|r| is_entry(r)).count();
    if total == 0 {
        return None;
    }
    let cursor = app.tree.rows.get(app.tree.cursor)?;
    if is_entry(cursor) {
        let at = app.tree.rows[..app.tree.cursor].iter().filter(|r| is_entry(r)).count() + 1;
        Some(format!("entry {at} of {total}"))
    } else {
        Some(plural(total, "entry", "entries"))
    }
}

fn draw_tree(f: &mut Frame, app: &App, area: Rect) {
    let mut title = vec![Span::styled(" walj ", theme::BOLD)];
    let open: usize = app.tree.views.iter().map(|v| v.open).sum();
    title.push(Span::raw(format!("· {} ", plural(open, "unresolved", "unresolved"))));
    let elsewhere: usize = app.tree.machines.iter().map(|m| m.open).sum();
    if elsewhere > 0 {
        title.push(Span::styled(format!("· {elsewhere} on other machines "), theme::MUTED));
    }
    if !app.tree.filter.is_empty() || app.filter_input.is_some() {
        title.push(Span::styled(
            format!("· /{} ", app.filter_input.as_deref().unwrap_or(&app.tree.filter)),
            theme::WARN,
        ));
        if !app.tree.filter.is_empty() {
            let (pass, all) = app.tree.filtered;
            title.push(Span::styled(format!("{pass} of {all} "), theme::WARN));
        }
    }
    if app.tree.show_resolved {
        title.push(Span::styled("· +resolved ", theme::MUTED));
    }
    let mut block = pane(Line::from(title), app.focus == Focus::Tree);
    if let Some(pos) = list_position(app) {
        block = block.title_bottom(Line::from(Span::styled(format!(" {pos} "), theme::MUTED)).right_aligned());
    }
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    if app.tree.rows.is_empty() {
        let msg = if !app.tree.filter.is_empty() {
            "No entry matches the filter (Esc clears it)."
        } else if app.tree.show_resolved {
            "The journal has no sessions yet."
        } else {
            "Nothing to recover. s shows resolved entries."
        };
        f.render_widget(Paragraph::new(msg).style(theme::MUTED).wrap(Wrap { trim: true }), inner);
        return;
    }
    let w = inner.width as usize;
    let lines: Vec<Line> = app
        .tree
        .rows
        .iter()
        .enumerate()
        .skip(app.tree.offset)
        .take(inner.height as usize)
        .map(|(i, row)| {
            let mut line = tree_line(app, row, w);
            if i == app.tree.cursor {
                let bg = if app.focus == Focus::Tree { theme::CURSOR_BG } else { theme::CURSOR_BG_DIM };
                // Pad so the highlight spans the row.
                let used = line.width();
                if used < w {
                    line.spans.push(Span::raw(" ".repeat(w - used)));
                }
                line = line.patch_style(Style::new().bg(bg));
            }
            line
        })
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

fn arrow(open: bool) -> &'static str {
    if open { "▾ " } else { "▸ " }
}

fn tree_line<'a>(app: &'a App, row: &Row, w: usize) -> Line<'a> {
    match row.item {
        Item::Session(vi) => {
            let v = &app.tree.views[vi];
            let s = &app.fold.sessions[v.session];
            let open = app.tree.is_expanded(&row.key, v);
            let mut spans = vec![Span::raw(arrow(open)), badge(v.status), Span::raw(" ")];
            let (unique, rest) = app.fold.ids.session_split(&s.session);
            spans.push(Span::styled(unique.to_string(), theme::SESSION_UNIQUE));
            spans.push(Span::styled(rest.to_string(), theme::BOLD));
            if v.open > 0 {
                spans.push(Span::styled(format!(" {} open", v.open), theme::WARN));
            }
            let (done, total) = s.todos_done();
            if total > 0 {
                spans.push(Span::styled(format!(" ☐{done}/{total}"), theme::INFO));
            }
            session_tail(app, s, &mut spans, w);
            Line::from(spans)
        }
        Item::Group(vi, gi) => {
            let v = &app.tree.views[vi];
            let (event, entries) = &v.groups[gi];
            let open = app.tree.is_expanded(&row.key, v);
            let unresolved = entries.iter().filter(|&&i| app.fold.entries[i].is_unresolved()).count();
            let mut spans = vec![
                Span::raw("  "),
                Span::raw(arrow(open)),
                Span::styled(event.clone(), theme::EVENT_BOLD),
                Span::styled(format!(" {}", entries.len()), theme::MUTED),
            ];
            if unresolved != entries.len() && unresolved > 0 {
                spans.push(Span::styled(format!(" ({unresolved} open)"), theme::WARN));
            }
            Line::from(spans)
        }
        Item::Entry(_, _, ei) => {
            // The same path twice in a session: the tool call's short id tells them apart.
            let tag = app.tree.repeated.get(&ei).map(|id| format!(" #{id}")).unwrap_or_default();
            entry_line(app, &app.fold.entries[ei], tag, "    ", w)
        }
        Item::Machine(mi) => {
            let (Some(m), Some(r)) = (app.tree.machines.get(mi), app.machine(mi)) else { return Line::default() };
            let mut spans = vec![Span::raw("▾ "), Span::styled(r.name().to_string(), theme::BOLD)];
            if m.open > 0 {
                spans.push(Span::styled(format!(" {} open", m.open), theme::WARN));
            }
            let synced = short_time(&app.time(&r.manifest.synced_at));
            spans.push(Span::styled(format!(" (as of last sync {synced})"), theme::MUTED));
            Line::from(spans)
        }
        Item::RemoteSession(mi, si) => {
            let (Some(v), Some(r)) = (app.tree.machines.get(mi).and_then(|m| m.sessions.get(si)), app.machine(mi))
            else {
                return Line::default();
            };
            let s = &r.fold.sessions[v.session];
            let mut spans = vec![Span::raw("  "), badge(v.status), Span::raw(" ")];
            let (unique, rest) = r.fold.ids.session_split(&s.session);
            spans.push(Span::styled(unique.to_string(), theme::SESSION_UNIQUE));
            spans.push(Span::styled(rest.to_string(), theme::BOLD));
            if v.open > 0 {
                spans.push(Span::styled(format!(" {} open", v.open), theme::WARN));
            }
            session_tail(app, s, &mut spans, w);
            Line::from(spans)
        }
        Item::RemoteEntry(mi, _, ei) => match app.machine(mi).and_then(|r| r.fold.entries.get(ei)) {
            Some(e) => entry_line(app, e, String::new(), "      ", w),
            None => Line::default(),
        },
    }
}

/// An entry's row: selection mark, state, path (and `tag`), tool and age.
/// Columns a session line's prompt needs to be worth showing.
const PROMPT_MIN: usize = 12;

/// A session line's end: its branch, when it started, and its last prompt in the width left.
/// Where the prompt would not get [`PROMPT_MIN`] columns, it takes the start time's place, then
/// the branch's: the prompt says which session it is, the detail pane says when and where.
fn session_tail(app: &App, s: &crate::fold::SessionInfo, spans: &mut Vec<Span<'_>>, w: usize) {
    let started = s.started.as_deref().unwrap_or(&s.first_ts);
    let mut tail = Vec::new();
    if let Some(b) = &s.branch {
        tail.push(Span::styled(format!(" {b}"), theme::BRANCH));
    }
    tail.push(Span::styled(format!(" {}", short_time(&app.time(started))), theme::MUTED));
    let head: usize = spans.iter().map(|s| s.width()).sum();
    if s.last_prompt().is_some() {
        while !tail.is_empty() && head + tail.iter().map(|s| s.width()).sum::<usize>() + 1 + PROMPT_MIN > w {
            tail.pop();
        }
    }
    spans.extend(tail);
    let used: usize = spans.iter().map(|s| s.width()).sum();
    if let Some(p) = s.last_prompt()
        && used + 4 < w
    {
        spans.push(Span::styled(format!(" {}", fit(&one_line(p, 200), w - used - 1)), theme::PROMPT));
    }
}

fn entry_line<'a>(app: &'a App, e: &Entry, tag: String, indent: &'static str, w: usize) -> Line<'a> {
    let st = e.state();
    let marked = app.tree.marked.contains(&e.id);
    // The change's own time: a killed command's change is dated by its ctime, not by walj's
    // first look at it (which would read "Bash 0s" beside an "Edit 5m" made before it).
    let right = format!(" {} {}", if e.tool.is_empty() { "?" } else { &e.tool }, app.age(e.when()));
    let lead = if marked { "  ✚ " } else { indent };
    let avail = w.saturating_sub(lead.width() + 2 + right.width());
    // The path keeps room for its name first.
    let shown_path = crate::present::state::entry_path(e);
    let tag = if tag.width() + shown_path.width().min(14) <= avail { tag } else { String::new() };
    let path = fit_path(&shown_path, avail - tag.width());
    let pad = avail.saturating_sub(path.width() + tag.width());
    let path_style = if st.is_unresolved() { theme::PLAIN } else { theme::MUTED };
    Line::from(vec![
        Span::styled(lead, theme::MARK),
        Span::styled(format!("{} ", state_icon(st)), state_style(st)),
        Span::styled(path, path_style),
        Span::styled(tag, theme::MUTED),
        Span::raw(" ".repeat(pad)),
        Span::styled(right, theme::MUTED),
    ])
}

// ------------------------------------------------------------------- detail pane

/// Another machine's header selected: whose journal, as of when, and what the keys do.
fn machine_lines(app: &App, mi: usize) -> Vec<Line<'static>> {
    let (Some(m), Some(r)) = (app.tree.machines.get(mi), app.machine(mi)) else { return Vec::new() };
    let k = |a| app.keymap.key_of(a);
    vec![
        Line::from(vec![
            Span::styled(r.name().to_string(), theme::BOLD),
            Span::styled(format!("  journal {}", r.id), theme::MUTED),
        ]),
        Line::from(Span::styled(r.as_of(), theme::INFO)),
        Line::from(kv("unresolved", format!("{} in {}", m.open, plural(m.sessions.len(), "session", "sessions")))),
        Line::from(Span::styled(
            format!(
                "{} marks done and {} hands back here; the decision travels back with the next `walj sync`. \
                 {} is refused: `walj revert` reverts this checkout's entries only.",
                k(Action::Done),
                k(Action::HandBack),
                k(Action::Revert)
            ),
            theme::MUTED,
        )),
    ]
}

/// Header lines of the detail pane (everything above the diff), wrapped to its width.
fn detail_header(app: &App) -> Vec<Line<'static>> {
    let Some(row) = app.selected() else { return Vec::new() };
    let lines = match row.item {
        Item::Entry(vi, _, ei) => entry_header(app, &app.fold.entries[ei], app.tree.views[vi].status),
        Item::Session(vi) => {
            session_context(app, &app.fold.sessions[app.tree.views[vi].session], app.tree.views[vi].status)
        }
        Item::Group(vi, gi) => group_lines(app, vi, gi),
        Item::Machine(mi) => machine_lines(app, mi),
        Item::RemoteSession(mi, si) => {
            match (app.tree.machines.get(mi).and_then(|m| m.sessions.get(si)), app.machine(mi)) {
                (Some(v), Some(r)) => {
                    let mut out =
                        vec![Line::from(Span::styled(format!("from {}, {}", r.name(), r.as_of()), theme::INFO))];
                    out.extend(session_context(app, &r.fold.sessions[v.session], v.status));
                    out
                }
                _ => Vec::new(),
            }
        }
        Item::RemoteEntry(mi, si, ei) => {
            let status = app.tree.machines.get(mi).and_then(|m| m.sessions.get(si)).map(|v| v.status);
            match (app.machine(mi), status) {
                (Some(r), Some(status)) => match r.fold.entries.get(ei) {
                    Some(e) => {
                        let mut out =
                            vec![Line::from(Span::styled(format!("from {}, {}", r.name(), r.as_of()), theme::INFO))];
                        out.extend(entry_header(app, e, status));
                        out
                    }
                    None => Vec::new(),
                },
                _ => Vec::new(),
            }
        }
    };
    let width = app.diff_width();
    lines.into_iter().map(safe_line).flat_map(|l| wrap_line(l, width)).collect()
}

/// A line with every span made [`safe`] (file names, prompts, commands come from outside).
fn safe_line(mut line: Line<'static>) -> Line<'static> {
    for span in &mut line.spans {
        if let std::borrow::Cow::Owned(s) = safe(&span.content) {
            span.content = s.into();
        }
    }
    line
}

/// Splits a line into lines of at most `width` columns, at spaces when it can
/// (continuations indented by 2).
fn wrap_line(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    if width < 8 || line.width() <= width {
        return vec![line];
    }
    let cw = |c: char| unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
    let chars: Vec<(char, Style)> =
        line.spans.iter().flat_map(|s| s.content.chars().map(move |c| (c, s.style))).collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut indent = 0;
    while start < chars.len() {
        let mut used = indent;
        let mut end = start;
        while end < chars.len() && used + cw(chars[end].0) <= width {
            used += cw(chars[end].0);
            end += 1;
        }
        if end < chars.len() {
            // Break after the last space, unless that leaves the line nearly empty.
            if let Some(sp) = (start..end).rev().find(|&i| chars[i].0 == ' ')
                && sp + 1 - start > (width - indent) / 3
            {
                end = sp + 1;
            }
        }
        let end = end.max(start + 1);
        let mut spans: Vec<Span<'static>> = Vec::new();
        if indent > 0 {
            spans.push(Span::raw(" ".repeat(indent)));
        }
        for &(c, style) in &chars[start..end] {
            let mergeable = indent == 0 || spans.len() > 1;
            match spans.last_mut() {
                Some(last) if mergeable && last.style == style => last.content.to_mut().push(c),
                _ => spans.push(Span::styled(c.to_string(), style)),
            }
        }
        out.push(Line::from(spans));
        start = end;
        indent = 2;
    }
    out
}

/// The most rows the pinned verdict takes (see [`pinned_verdict`]).
const PIN_ROWS: usize = 2;

/// The selected entry's verdict: its state's icon and the words every reader shares
/// ([`present::state::short_state`]), wrapped to the pane's width (at most [`PIN_ROWS`] rows).
/// While the detail pane is scrolled it covers the pane's top rows, so a short screen that
/// scrolled to the diff still says what state the change is in. Empty for anything but an
/// entry.
fn pinned_verdict(app: &App) -> Vec<Line<'static>> {
    let status = match app.selected().map(|r| r.item) {
        Some(Item::Entry(vi, _, _)) => app.tree.views.get(vi).map(|v| v.status),
        Some(Item::RemoteEntry(mi, si, _)) => {
            app.tree.machines.get(mi).and_then(|m| m.sessions.get(si)).map(|v| v.status)
        }
        _ => None,
    };
    let (Some(e), Some(status)) = (app.selected_entry(), status) else { return Vec::new() };
    let st = e.state();
    let words = if st == EntryState::InFlight && status == SessionStatus::Live {
        "running now: its session is live"
    } else {
        present::state::short_state(e)
    };
    let line = Line::from(Span::styled(
        format!("{} {words}", state_icon(st)),
        state_style(st).add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
    ));
    let mut rows = wrap_line(safe_line(line), app.diff_width());
    rows.truncate(PIN_ROWS);
    rows
}

/// The detail pane's lines as the app scrolls them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DetailMetrics {
    /// Header lines, then diff lines.
    pub lines: usize,
    pub header: usize,
    /// The largest first line that still fills the pane (wrapped lines take more rows).
    pub max_scroll: usize,
    /// Rows the pinned verdict covers at the top while the pane is scrolled.
    pub pin: usize,
}

/// Counts the detail pane: only the lines at the end are measured for wrapping, so the
/// cost does not grow with the diff.
pub(crate) fn detail_metrics(app: &App) -> DetailMetrics {
    let header = detail_header(app).len();
    let diff = app.current_diff();
    let lines = header + diff.map_or(0, |d| d.lines.len());
    let h = app.diff_height().max(1);
    let mut max_scroll = lines.saturating_sub(h);
    if let Some(d) = diff.filter(|_| app.pane.wrap) {
        let (gutter, width) = (d.gutter, app.diff_width());
        let mut rows = 0;
        let mut first = lines;
        while first > 0 {
            let i = first - 1;
            let r = if i < header { 1 } else { pane::rows(&d.lines[i - header], gutter, width, &app.pane) };
            if rows + r > h {
                break;
            }
            rows += r;
            first = i;
        }
        max_scroll = first;
    }
    DetailMetrics { lines, header, max_scroll, pin: pinned_verdict(app).len() }
}

fn kv(k: &str, v: impl Into<String>) -> Vec<Span<'static>> {
    vec![Span::styled(format!("{k} "), theme::MUTED), Span::raw(v.into())]
}

fn entry_header(app: &App, e: &Entry, status: SessionStatus) -> Vec<Line<'static>> {
    let st = e.state();
    let mut out = Vec::new();
    let mut first = vec![
        Span::styled(
            format!("{} {}", state_icon(st), present::state::entry_label(e, status)),
            state_style(st).add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!("  {}", e.tool), theme::SOFT),
        Span::styled(format!("  {}", present::text::event_title(&e.event)), theme::EVENT),
        Span::styled("  id ", theme::MUTED),
    ];
    let (unique, rest) = app.fold.ids.split(&e.id);
    first.push(Span::styled(unique.to_string(), theme::ID_UNIQUE));
    first.push(Span::styled(rest.to_string(), theme::MUTED));
    if e.background {
        first.push(Span::styled("  background", theme::INFO));
    }
    if e.imported {
        first.push(Span::styled("  imported", theme::INFO));
    }
    if e.unfinished {
        first.push(Span::styled("  command never finished", theme::WARN));
    }
    out.push(Line::from(first));
    let mut times = kv(if e.changed.is_some() { "changed" } else { "at" }, app.time(e.when()));
    // A change a snapshot found has no moment it was applied: only when walj saw it.
    // The outcome's moment: a failure never "applied".
    if let Some(t) = e.applied_ts.as_ref().filter(|_| !e.unfinished) {
        times.extend(kv(if st == EntryState::Failed { "  failed" } else { "  applied" }, app.time(t)));
    }
    times.extend(kv("  session", format!("{} ({})", app.fold.ids.session(&e.session), status.as_str())));
    out.push(Line::from(times));
    if st.is_unresolved() {
        out.push(Line::from(Span::styled(present::state::entry_meaning(e, status), theme::WARN)));
    }
    if let Some(v) = present::state::extra_disk_verdict(e, |id| app.fold.ids.short(id).to_string()) {
        out.push(Line::from(Span::styled(v, theme::WARN)));
    }
    if let Some(err) = &e.error {
        out.push(Line::from(vec![Span::styled("error ", theme::ERROR), Span::raw(one_line(err, 300))]));
    }
    if let Some(n) = &e.nocap {
        out.push(Line::from(kv("not captured", n.replace('_', " "))));
    }
    if let Some(p) = &e.parent {
        out.push(Line::from(kv("caused by command", app.fold.ids.short(p))));
    }
    if e.still_running {
        out.push(Line::from(Span::styled(
            "its command still runs: this is the change so far, recorded once it stops".to_string(),
            theme::WARN,
        )));
    }
    let others = present::state::candidate_names(e, 60, |c| app.fold.ids.short(c).to_string());
    if let Some(a) = present::state::attribution(e, &others) {
        out.push(Line::from(Span::styled(a, theme::WARN)));
    }
    if let Some(a) = e.agent_id.as_deref() {
        let label = app.fold.session(&e.session).and_then(|s| s.subagent(a)).map(|s| s.label());
        out.push(Line::from(kv("by subagent", label.unwrap_or_else(|| a.to_string()))));
    }
    // Actions taken back one after another fold into one line: they changed nothing.
    let mut i = 0;
    while i < e.actions.len() {
        let a = &e.actions[i];
        let run = e.actions[i..].iter().take_while(|x| x.undone).count();
        if run >= 2 {
            let last = &e.actions[i + run - 1];
            let text = format!("{run} actions, all undone ({} – {})", app.time(&a.ts), app.time(&last.ts));
            out.push(Line::from(vec![Span::styled("history ", theme::MUTED), Span::styled(text, theme::MUTED)]));
            i += run;
            continue;
        }
        let mut spans = kv("history", format!("{} {}", a.how.replace('_', " "), app.time(&a.ts)));
        if a.undone {
            spans.push(Span::styled(" (undone)", theme::MUTED));
        }
        out.push(Line::from(spans));
        i += 1;
    }
    let mode = app.diff_mode;
    let mut diff_line = vec![Span::styled(format!("── {} ", mode_label(mode)), theme::HEADING)];
    if let Some(d) = app.current_diff() {
        if let Some(eol) = &d.eol {
            diff_line.push(Span::styled(format!("line endings only ({eol})"), theme::WARN));
        } else if d.added + d.removed > 0 {
            diff_line.push(Span::styled(format!("+{}", d.added), theme::OK));
            diff_line.push(Span::raw(" "));
            diff_line.push(Span::styled(format!("-{}", d.removed), theme::ERROR));
        }
        if d.approximate {
            diff_line.push(Span::styled(" (approximate: large diff)", theme::WARN));
        }
    }
    out.push(Line::from(diff_line));
    out
}

fn session_context(app: &App, s: &SessionInfo, status: SessionStatus) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let bold = theme::BOLD;
    let mut head = vec![badge(status), Span::styled(format!(" session {}", s.session), bold)];
    head.push(Span::styled(format!("  {}", s.agent().label()), theme::SOFT));
    out.push(Line::from(head));
    let started = s.started.as_deref().unwrap_or(&s.first_ts);
    let mut l = kv("started", app.time(started));
    if let Some(src) = &s.source {
        l.push(Span::raw(format!(" ({src})")));
    }
    l.extend(kv("  last activity", format!("{} ({} ago)", app.time(&s.last_ts), app.age(&s.last_ts))));
    out.push(Line::from(l));
    let mut l = Vec::new();
    if let Some(m) = &s.model {
        l.extend(kv("model", m.clone()));
    }
    if let Some(b) = &s.branch {
        l.extend(kv(if l.is_empty() { "branch" } else { "  branch" }, b.clone()));
    }
    if let Some(h) = &s.head {
        l.extend(kv(" @", h.chars().take(8).collect::<String>()));
    }
    if !l.is_empty() {
        out.push(Line::from(l));
    }
    if let Some((ts, reason)) = &s.end {
        out.push(Line::from(kv("ended", format!("{} ({reason})", app.time(ts)))));
    } else if status == SessionStatus::Crashed {
        out.push(Line::from(Span::styled(present::session_meaning(status, s.agent()), theme::ERROR)));
    }
    let open: usize = app.fold.entries_of(&s.session).filter(|e| e.is_unresolved()).count();
    if open > 0 {
        out.push(Line::from(Span::styled(
            format!(
                "{}: d r H act on all of them, or open the tree to pick",
                plural(open, "unresolved entry", "unresolved entries")
            ),
            theme::WARN,
        )));
    }
    let heading = |t: String| Line::from(Span::styled(t, theme::HEADING));
    out.push(Line::raw(""));
    out.push(heading(format!("Prompts ({})", s.prompts.len())));
    if s.prompts.is_empty() {
        out.push(Line::from(Span::styled("  none recorded", theme::MUTED)));
    }
    let skip = s.prompts.len().saturating_sub(5);
    if skip > 0 {
        out.push(Line::from(Span::styled(format!("  … {skip} earlier"), theme::MUTED)));
    }
    for p in s.prompts.iter().skip(skip) {
        out.push(Line::from(vec![
            Span::styled(format!("  {} ", short_time(&app.time(&p.ts))), theme::MUTED),
            Span::raw(one_line(&p.text, 400)),
        ]));
    }
    if !s.todos.is_empty() {
        let (done, total) = s.todos_done();
        out.push(Line::raw(""));
        out.push(heading(format!("Todos ({done}/{total} done)")));
        for t in &s.todos {
            let (mark, style) = match t.status.as_str() {
                "completed" => ("✓", theme::OK),
                "in_progress" => ("▶", theme::WARN),
                "deleted" => ("-", theme::MUTED),
                _ => ("○", theme::PLAIN),
            };
            out.push(Line::from(vec![
                Span::styled(format!("  {mark} "), style),
                Span::styled(t.content.clone(), style),
            ]));
        }
    }
    if !s.commands.is_empty() || !s.background_tasks.is_empty() {
        out.push(Line::raw(""));
        out.push(heading(format!("Commands ({} run, notable ones below)", s.commands_total.max(s.commands.len()))));
        for c in &s.commands {
            let (mark, style, note) = match c.status {
                CommandStatus::Failed => ("✗", theme::ERROR, "failed".to_string()),
                CommandStatus::InFlight => match c.running {
                    Some(n) => (
                        "◐",
                        theme::ERROR,
                        format!("never finished — still running ({})", plural(n, "process", "processes")),
                    ),
                    None if status == SessionStatus::Live => ("◐", theme::WARN, "running now".into()),
                    None => ("◐", theme::ERROR, "in flight when the session stopped".into()),
                },
                CommandStatus::Ok if c.background => (
                    "»",
                    theme::INFO,
                    format!("background{}", c.task_id.as_ref().map(|t| format!(" {t}")).unwrap_or_default()),
                ),
                CommandStatus::Ok => ("✓", theme::OK, "ok".into()),
            };
            out.push(Line::from(vec![
                Span::styled(format!("  {mark} "), style),
                Span::raw(one_line(&c.command, 200)),
                Span::styled(format!("  {note}"), style),
            ]));
            if let Some(d) = &c.description {
                out.push(Line::from(Span::styled(format!("      {}", one_line(d, 200)), theme::MUTED)));
            }
            if let Some(e) = c.error.as_deref().filter(|e| !e.is_empty()) {
                out.push(Line::from(Span::styled(format!("      {}", one_line(e, 200)), theme::ERROR)));
            }
            // What the command's snapshots left out of its entries (paths past `[bash]
            // max_changes`, a cut list): how many and which, as `recover` says it.
            if let Some(u) = c
                .unseen
                .as_ref()
                .filter(|_| present::command::left_out(c, 1).is_some())
                .and_then(present::command::unseen)
            {
                out.push(Line::from(Span::styled(format!("      left changes out of its entries — {u}"), theme::WARN)));
            }
        }
    }
    // The folders its commands moved: a deletion and a creation per file, one move.
    if let Some(moves) = app.moves.get(&s.session).filter(|m| !m.is_empty()) {
        out.push(Line::raw(""));
        out.push(heading(format!("Folder moves ({})", moves.len())));
        for (m, cmd) in moves.iter() {
            let cmd = s.commands.iter().find(|c| c.id == m.command).map(|c| c.command.as_str()).or(cmd.as_deref());
            out.push(Line::from(Span::styled(format!("  {}", present::command::moved_line(m, cmd, 200)), theme::INFO)));
        }
    }
    if !s.compactions.is_empty() {
        out.push(Line::raw(""));
        out.push(Line::from(kv("compactions", s.compactions.len().to_string())));
    }
    if let Some(m) = &s.last_assistant_message {
        out.push(Line::raw(""));
        out.push(heading(format!("{}'s last message", s.agent().label())));
        out.push(Line::raw(format!("  {}", one_line(m, 400))));
    }
    if let Some(t) = &s.transcript {
        out.push(Line::raw(""));
        out.push(Line::from(kv("transcript", t.clone())));
    }
    // A live session is not offered a resume: Claude Code is still running it.
    if status == SessionStatus::Live {
        out.push(Line::from(kv("resume", "not needed: the session is live".to_string())));
    } else {
        out.push(Line::from(kv("resume", crate::present::text::resume_line(&app.project, s))));
    }
    out
}

fn group_lines(app: &App, vi: usize, gi: usize) -> Vec<Line<'static>> {
    let (event, entries) = &app.tree.views[vi].groups[gi];
    let mut out = vec![Line::from(Span::styled(
        format!("{event}: {}", plural(entries.len(), "entry", "entries")),
        theme::EVENT_BOLD,
    ))];
    for &i in entries {
        let e = &app.fold.entries[i];
        out.push(Line::from(vec![
            Span::styled(format!("  {} {:<11} ", state_icon(e.state()), e.state().as_str()), state_style(e.state())),
            Span::raw(e.path.clone()),
            Span::styled(format!("  {}", e.tool), theme::MUTED),
        ]));
    }
    out
}

fn draw_detail(f: &mut Frame, app: &App, area: Rect) {
    let title = match app.selected().map(|r| r.item) {
        Some(Item::Entry(_, _, ei)) => Line::from(vec![Span::styled(
            format!(" {} ", fit_path(&app.fold.entries[ei].path, area.width.saturating_sub(6) as usize)),
            theme::BOLD,
        )]),
        Some(Item::RemoteEntry(..)) => match app.selected_entry() {
            Some(e) => Line::from(vec![Span::styled(
                format!(" {} ", fit_path(&e.path, area.width.saturating_sub(6) as usize)),
                theme::BOLD,
            )]),
            None => Line::from(" detail "),
        },
        Some(Item::Machine(_)) => Line::from(" machine "),
        Some(Item::Session(_) | Item::RemoteSession(..)) => Line::from(" session context "),
        Some(Item::Group(..)) => Line::from(" event "),
        None => Line::from(" detail "),
    };
    let mut block = pane(title, app.focus == Focus::Diff);
    if let Some(flags) = pane_flags(app) {
        block = block.title(Line::from(Span::styled(flags, theme::MUTED)).right_aligned());
    }
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    let header = detail_header(app);
    let header_len = header.len();
    let h = inner.height as usize;
    let mut lines: Vec<Line> = header.into_iter().skip(app.diff_scroll).take(h).collect();
    if lines.len() < h
        && let Some(d) = app.current_diff()
    {
        let start = app.diff_scroll.saturating_sub(header_len);
        let gutter = d.gutter;
        let query = app.pane.search.as_deref();
        for dl in d.lines.iter().skip(start) {
            if lines.len() >= h {
                break;
            }
            let rows = diff_rows(dl, gutter, inner.width as usize, &app.pane, query);
            lines.extend(rows.into_iter().take(h - lines.len()));
        }
    }
    // Scrolled: the verdict covers the top rows (what they held is one scroll up).
    if app.diff_scroll > 0 {
        let pin = pinned_verdict(app);
        if pin.len() < h {
            let n = pin.len().min(lines.len());
            lines.splice(..n, pin);
        }
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// What the diff pane's top-right corner says: wrap, sideways scroll, the search.
fn pane_flags(app: &App) -> Option<String> {
    let mut flags = Vec::new();
    if app.pane.wrap {
        flags.push("wrap".to_string());
    }
    if app.pane.hscroll > 0 {
        flags.push(format!("col {}+", app.pane.hscroll + 1));
    }
    if let Some(q) = &app.pane.search {
        flags.push(format!("/{}", fit(q, 20)));
    }
    (!flags.is_empty()).then(|| format!(" {} ", flags.join(" · ")))
}

/// One diff line as rows of the pane: the line numbers and sign, then its text shifted
/// left by the sideways scroll, cut at the pane's edge (`›` marks more on the right, `‹`
/// more on the left) or wrapped onto more rows; search matches highlighted.
fn diff_rows(dl: &DiffLine, gutter: usize, width: usize, view: &DiffPane, query: Option<&str>) -> Vec<Line<'static>> {
    let (sign, base, emph) = match dl.kind {
        LineKind::Added => ("+", theme::OK, theme::ADD_EMPH),
        LineKind::Removed => ("-", theme::ERROR, theme::DEL_EMPH),
        LineKind::Context => (" ", theme::PLAIN, theme::PLAIN),
        LineKind::Hunk => {
            let line = Line::from(Span::styled(dl.text(), theme::INFO));
            return if view.wrap { wrap_line(line, width) } else { vec![line] };
        }
        // Notes are prose: always wrapped.
        LineKind::Note => return wrap_line(Line::from(Span::styled(dl.text(), theme::NOTE)), width),
    };
    let num = |n: Option<usize>| n.map(|n| format!("{n:>gutter$}")).unwrap_or_else(|| " ".repeat(gutter));
    let prefix =
        vec![Span::styled(format!("{} {} ", num(dl.old_no), num(dl.new_no)), theme::MUTED), Span::styled(sign, base)];
    let avail = width.saturating_sub(pane::prefix_width(gutter)).max(1);
    // The text as styled chars, with the search's matches marked.
    let mut chars: Vec<(char, Style)> =
        dl.segments.iter().flat_map(|(e, s)| s.chars().map(move |c| (c, if *e { emph } else { base }))).collect();
    if let Some(q) = query {
        let text: String = chars.iter().map(|(c, _)| c).collect();
        for r in pane::find_all(&text, q) {
            for (_, st) in &mut chars[r] {
                *st = theme::MATCH;
            }
        }
    }
    // Sideways: drop the first `hscroll` columns.
    let mut skipped = 0;
    let mut start = 0;
    while start < chars.len() && skipped + cw(chars[start].0) <= view.hscroll {
        skipped += cw(chars[start].0);
        start += 1;
    }
    let hidden_left = start > 0;
    let chars = &chars[start..];
    // Rows of at most `avail` columns.
    let mut rows: Vec<Vec<(char, Style)>> = vec![Vec::new()];
    let mut used = 0;
    for &(c, st) in chars {
        if used + cw(c) > avail {
            if !view.wrap {
                // Cut: the last column says there is more.
                if let Some(row) = rows.last_mut() {
                    while used + 1 > avail {
                        let Some((p, _)) = row.pop() else { break };
                        used -= cw(p);
                    }
                    row.push(('›', theme::MUTED));
                }
                break;
            }
            rows.push(Vec::new());
            used = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push((c, st));
        }
        used += cw(c);
    }
    if hidden_left && let Some(first) = rows.first_mut() {
        match first.first_mut() {
            Some(c) if cw(c.0) == 1 => *c = ('‹', theme::MUTED),
            _ => first.insert(0, ('‹', theme::MUTED)),
        }
    }
    let blank = " ".repeat(pane::prefix_width(gutter));
    rows.into_iter()
        .enumerate()
        .map(|(n, row)| {
            let mut spans = if n == 0 { prefix.clone() } else { vec![Span::raw(blank.clone())] };
            let lead = spans.len();
            for (c, st) in row {
                let len = spans.len();
                match spans.last_mut() {
                    Some(last) if len > lead && last.style == st => last.content.to_mut().push(c),
                    _ => spans.push(Span::styled(c.to_string(), st)),
                }
            }
            Line::from(spans)
        })
        .collect()
}

// ------------------------------------------------------------------- bottom lines

fn draw_status(f: &mut Frame, app: &App, area: Rect) {
    let line = match (&app.filter_input, &app.status) {
        _ if app.pane.search_input.is_some() => Line::from(vec![
            Span::styled("search /", theme::WARN),
            Span::raw(safe(app.pane.search_input.as_deref().unwrap_or_default()).into_owned()),
            Span::styled("▏", theme::WARN),
            Span::styled("  in the diff; Enter finds, then n/N; Esc cancels", theme::MUTED),
        ]),
        (Some(input), _) => Line::from(vec![
            Span::styled("filter /", theme::WARN),
            Span::raw(safe(input).into_owned()),
            Span::styled("▏", theme::WARN),
            Span::styled("  path, id, session, prompt or command; Enter keeps it, Esc clears", theme::MUTED),
        ]),
        (None, Some(s)) if s.error => Line::from(Span::styled(format!("✗ {}", safe(&s.text)), theme::ERROR_BOLD)),
        (None, Some(s)) => Line::from(Span::styled(safe(&s.text).into_owned(), theme::OK)),
        (None, None) => {
            let crashed = app.tree.views.iter().filter(|v| v.status == SessionStatus::Crashed).count();
            let open: usize = app.tree.views.iter().map(|v| v.open).sum();
            let mut t = format!(
                "{} · {} · ? for help",
                plural(open, "unresolved entry", "unresolved entries"),
                plural(crashed, "crashed session", "crashed sessions"),
            );
            if !app.tree.marked.is_empty() {
                t = format!("{} selected · {t}", app.tree.marked.len());
            }
            Line::from(Span::styled(t, theme::MUTED))
        }
    };
    // A long message wraps onto the second row the layout gave it (see `App::status_rows`).
    f.render_widget(Paragraph::new(line).wrap(ratatui::widgets::Wrap { trim: false }), area);
}

fn draw_footer(f: &mut Frame, app: &App, area: Rect) {
    let k = |a: Action| app.keymap.key_of(a);
    let mut keys: Vec<(String, &str)> = Vec::new();
    if let Some(d) = &app.dialog {
        for (c, label, _) in &d.choices {
            keys.push((c.to_string(), label.as_str()));
        }
        let default = d.default.and_then(|c| d.choices.iter().find(|(k, ..)| *k == c)).map(|(_, l, _)| l.as_str());
        keys.push((k(Action::Confirm), default.unwrap_or("cancel")));
        keys.push((k(Action::Cancel), "cancel"));
    } else if app.pane.search_input.is_some() {
        keys.push(("enter".into(), "search"));
        keys.push(("esc".into(), "cancel"));
    } else if app.filter_input.is_some() {
        keys.push(("enter".into(), "keep filter"));
        keys.push(("esc".into(), "clear"));
    } else if app.help || app.operations.is_some() {
        keys.push((format!("{}/{}", k(Action::MoveDown), k(Action::MoveUp)), "scroll"));
        keys.push(("any other key".into(), "close"));
    } else {
        let targets = app.targets();
        let open = targets.iter().any(|e| e.is_unresolved());
        let entry = app.selected_entry();
        if app.focus == Focus::Tree {
            keys.push((format!("{}/{}", k(Action::MoveDown), k(Action::MoveUp)), "move"));
            if entry.is_none() && !app.tree.rows.is_empty() {
                keys.push((k(Action::Toggle), "fold"));
            }
        } else {
            keys.push((format!("{}/{}", k(Action::MoveDown), k(Action::MoveUp)), "scroll"));
            keys.push((format!("{}/{}", k(Action::PrevHunk), k(Action::NextHunk)), "hunk"));
            keys.push((k(Action::Search), "search"));
            if app.pane.search.is_some() {
                keys.push((format!("{}/{}", k(Action::SearchNext), k(Action::SearchPrev)), "next/prev"));
            }
            keys.push((k(Action::Wrap), if app.pane.wrap { "cut lines" } else { "wrap" }));
        }
        if open {
            keys.push((k(Action::Done), "done"));
            keys.push((k(Action::Revert), "revert"));
            keys.push((k(Action::HandBack), "hand back"));
        }
        if entry.is_some_and(|e| e.last_action().is_some()) || app.fold.entries.iter().any(|e| !e.actions.is_empty()) {
            keys.push((k(Action::Undo), "undo"));
        }
        if !app.tree.rows.is_empty() {
            keys.push((k(Action::Select), "select"));
        }
        if entry.is_some() {
            keys.push((k(Action::DiffMode), mode_label(app.diff_mode)));
        }
        if app.focus == Focus::Tree {
            keys.push((k(Action::Filter), "filter"));
        }
        keys.push((k(Action::ToggleResolved), if app.tree.show_resolved { "hide resolved" } else { "show resolved" }));
        keys.push((k(Action::SwitchPane), "pane"));
        keys.push((k(Action::Zoom), if app.zoom { "both panes" } else { "full screen" }));
        keys.push((k(Action::Help), "help"));
        keys.push((k(Action::Quit), "quit"));
        // Too wide: what comes just before help and quit goes first (they go last).
        let width = |keys: &[(String, &str)]| -> usize {
            keys.iter().map(|(k, l)| k.width() + 1 + l.width()).sum::<usize>() + 2 * keys.len().saturating_sub(1)
        };
        while keys.len() > 2 && width(&keys) > area.width as usize {
            keys.remove(keys.len() - 3);
        }
    }
    let mut spans = Vec::new();
    for (i, (key, label)) in keys.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw("  "));
        }
        spans.push(Span::styled(key.clone(), theme::HEADING));
        spans.push(Span::styled(format!(" {label}"), theme::SOFT));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

// ------------------------------------------------------------------- overlays

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(area.x + (area.width - w) / 2, area.y + (area.height - h) / 2, w, h)
}

/// An overlay of `lines` in the middle of the screen that scrolls: its bottom border says
/// which lines show and how to scroll when they do not all fit.
fn draw_overlay(f: &mut Frame, area: Rect, title: &str, lines: Vec<Line<'static>>, scroll: usize, width: u16) {
    // Above the status line and the footer, which say how to scroll and close it.
    let above = Rect { height: area.height.saturating_sub(2), ..area };
    let r = centered(above, width, (lines.len() as u16).saturating_add(2));
    let rows = r.height.saturating_sub(2) as usize;
    let scroll = scroll.min(lines.len().saturating_sub(rows));
    let mut block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme::INFO)
        .title(Line::from(Span::styled(format!(" {title} "), theme::BOLD)));
    if lines.len() > rows {
        let last = (scroll + rows).min(lines.len());
        block = block.title_bottom(
            Line::from(Span::styled(
                format!(" lines {}-{last} of {} · j/k, PgUp/PgDn scroll ", scroll + 1, lines.len()),
                theme::MUTED,
            ))
            .right_aligned(),
        );
    }
    f.render_widget(Clear, r);
    f.render_widget(Paragraph::new(lines).block(block).scroll((scroll as u16, 0)), r);
}

fn draw_help(f: &mut Frame, app: &App, area: Rect) {
    let mut lines = Vec::new();
    for group in GROUPS.iter().filter(|g| **g != "dialogs") {
        lines.push(Line::from(Span::styled(format!("{group:>16}"), theme::BOLD)));
        for (_, action, _, _, help) in BINDINGS.iter().filter(|b| b.3 == *group) {
            lines.push(Line::from(vec![
                Span::styled(format!("{:>16}  ", app.keymap.keys_of(*action)), theme::HEADING),
                Span::raw(*help),
            ]));
        }
    }
    let mut states = vec![Span::styled(format!("{:>16}  ", "states"), theme::BOLD)];
    for st in [
        EntryState::InFlight,
        EntryState::Applied,
        EntryState::Failed,
        EntryState::Drifted,
        EntryState::Done,
        EntryState::Reverted,
        EntryState::HandedBack,
        EntryState::NotApplied,
    ] {
        states.push(Span::styled(format!("{} ", state_icon(st)), state_style(st)));
        states.push(Span::raw(format!("{}  ", present::label(st))));
    }
    lines.push(Line::raw(""));
    lines.extend(wrap_line(Line::from(states), 72).into_iter().map(|mut l| {
        if l.spans.first().is_some_and(|s| s.content == "  ") {
            l.spans[0] = Span::raw(" ".repeat(18));
        }
        l
    }));
    lines.push(Line::raw(""));
    for (head, text) in [
        ("dialogs", "Enter: the default shown; Esc cancels; j/k scroll"),
        ("", "f force (over later edits) is never the default:"),
        ("", "only force left, or a live session: Enter cancels"),
        ("", "a conflict shows both sides; e opens $EDITOR on it"),
        ("", "d on a batch or an in-flight/failed entry asks"),
    ] {
        lines.push(Line::from(vec![Span::styled(format!("{head:>16}  "), theme::BOLD), Span::raw(text)]));
    }
    lines.push(Line::raw(""));
    lines.push(Line::from(Span::styled(
        "  Rebind: .walj/config.toml [keys] revert = [\"x\"] · mouse: wheel, click",
        theme::MUTED,
    )));
    draw_overlay(f, area, "keys", lines, app.help_scroll, 76);
}

/// The operation list: what was marked, reverted, handed back, newest first.
fn draw_operations(f: &mut Frame, app: &App, ops: &[super::ops::Operation], area: Rect) {
    let mut lines = Vec::new();
    if ops.is_empty() {
        lines.push(Line::from(Span::styled("  nothing yet: d, r and H record what they do here", theme::MUTED)));
    }
    let w = area.width.saturating_sub(4).min(96) as usize;
    for op in ops {
        let style = if op.undone { theme::MUTED } else { theme::PLAIN };
        let mut spans = vec![
            Span::styled(format!(" {} ", short_time(&app.time(&op.ts))), theme::MUTED),
            Span::styled(format!("{:<12}", op.verb()), if op.undone { theme::MUTED } else { theme::HEADING }),
        ];
        let mut tail = String::new();
        if op.undone {
            tail.push_str("  (undone)");
        }
        if let Some(a) = &op.actor {
            tail.push_str(&format!("  by {a}"));
        }
        let used: usize = spans.iter().map(Span::width).sum::<usize>() + tail.width();
        spans.push(Span::styled(fit_path(&op.what(), w.saturating_sub(used + 1)), style));
        spans.push(Span::styled(tail, theme::MUTED));
        lines.push(Line::from(spans));
    }
    let u = app.keymap.key_of(Action::Undo);
    let r = app.keymap.key_of(Action::Redo);
    lines.push(Line::raw(""));
    lines.push(Line::from(Span::styled(format!("  {u} undoes the newest, {r} redoes what {u} undid"), theme::MUTED)));
    draw_overlay(f, area, "operations, newest first", lines, app.help_scroll, (w + 4) as u16);
}

/// Where a dialog goes and how its lines split: the fixed lines above the body (title is
/// the border), the body rows shown, and the fixed lines under it.
struct DialogLayout {
    rect: Rect,
    inner_w: usize,
    body_rows: usize,
    /// A short screen: no blank lines between the parts, so the body keeps its rows.
    compact: bool,
}

/// Body lines a dialog keeps on a short screen (while it has that many).
const MIN_BODY_ROWS: usize = 3;

fn dialog_choices(d: &super::app::Dialog, color: ratatui::style::Color) -> Line<'static> {
    let mut choices = Vec::new();
    for (i, (c, label, _)) in d.choices.iter().enumerate() {
        if i > 0 {
            choices.push(Span::raw("   "));
        }
        let mut key = Style::new().fg(color).add_modifier(Modifier::BOLD);
        if d.default == Some(*c) {
            key = key.add_modifier(Modifier::REVERSED);
        }
        choices.push(Span::styled(format!("[{c}]"), key));
        choices.push(Span::raw(format!(" {label}")));
    }
    Line::from(choices)
}

/// The lines under the body: the note, the choices, what Enter and Esc do.
fn dialog_tail(d: &super::app::Dialog, color: ratatui::style::Color, compact: bool) -> Vec<Line<'static>> {
    let mut tail = if compact { Vec::new() } else { vec![Line::raw("")] };
    tail.extend(
        d.note.iter().map(|n| Line::from(Span::styled(n.clone(), if d.warning { theme::WARN } else { theme::SOFT }))),
    );
    if !compact {
        tail.push(Line::raw(""));
    }
    tail.push(dialog_choices(d, color));
    tail.push(Line::from(Span::styled(format!("{} · Esc: cancel", d.enter_label()), theme::MUTED)));
    tail
}

fn wrapped_rows(lines: &[Line], w: usize) -> usize {
    lines.iter().map(|l| l.width().max(1).div_ceil(w.max(1))).sum()
}

fn dialog_layout(d: &super::app::Dialog, area: Rect) -> DialogLayout {
    let color = theme::DIALOG;
    let tail = dialog_tail(d, color, false);
    let widest = d
        .body
        .iter()
        .map(|b| b.width())
        .chain(tail.iter().map(Line::width))
        .chain([d.summary.width() + 2, d.title.width() + 4])
        .max()
        .unwrap_or(0);
    let max_w = area.width.saturating_sub(4).max(area.width.min(10));
    let w = (widest as u16 + 6).max(30).min(max_w);
    let inner_w = w.saturating_sub(4).max(1) as usize;
    let summary = wrapped_rows(&[Line::raw(d.summary.clone())], inner_w);
    // Summary, a blank line, the body (+ a scroll line when it does not fit), the tail.
    let fixed = summary + 1 + wrapped_rows(&tail, inner_w);
    // Borders, and a row above and below when the screen is short (the footer stays visible).
    let room = (area.height as usize).saturating_sub(4 + fixed);
    let body_rows = if d.body.len() <= room { d.body.len() } else { room.saturating_sub(1) };
    let want = d.body.len().min(MIN_BODY_ROWS);
    if body_rows >= want {
        let scroll_line = usize::from(d.body.len() > body_rows);
        let r = centered(area, w, (fixed + body_rows + scroll_line + 2) as u16);
        return DialogLayout { rect: r, inner_w, body_rows, compact: false };
    }
    // Too short: no blank lines and no margin rows, so the body keeps its rows.
    let fixed = summary + wrapped_rows(&dialog_tail(d, color, true), inner_w);
    let room = (area.height as usize).saturating_sub(2 + fixed);
    let body_rows = if d.body.len() <= room { d.body.len() } else { room.saturating_sub(1) };
    let scroll_line = usize::from(d.body.len() > body_rows);
    let r = centered(area, w, (fixed + body_rows + scroll_line + 2) as u16);
    DialogLayout { rect: r, inner_w, body_rows, compact: true }
}

/// Body lines of a dialog that fit on a screen of `area` (what scrolling moves by).
pub(crate) fn dialog_body_rows(d: &super::app::Dialog, area: Rect) -> usize {
    dialog_layout(d, area).body_rows
}

fn draw_dialog(f: &mut Frame, d: &super::app::Dialog, area: Rect) {
    let color = if d.warning { theme::DIALOG_WARN } else { theme::DIALOG };
    let l = dialog_layout(d, area);
    let mut lines: Vec<Line> = vec![Line::from(Span::styled(d.summary.clone(), theme::BOLD))];
    if !l.compact {
        lines.push(Line::raw(""));
    }
    let scroll = d.scroll.min(d.body.len().saturating_sub(l.body_rows));
    for b in d.body.iter().skip(scroll).take(l.body_rows) {
        let style = if b.contains("CONFLICT") { theme::ERROR } else { theme::PLAIN };
        lines.push(Line::from(Span::styled(fit(b, l.inner_w), style)));
    }
    if d.body.len() > l.body_rows {
        let last = (scroll + l.body_rows).min(d.body.len());
        lines.push(Line::from(Span::styled(
            format!("── lines {}-{last} of {} · j/k, PgUp/PgDn scroll ──", scroll + 1, d.body.len()),
            theme::MUTED,
        )));
    }
    lines.extend(dialog_tail(d, color, l.compact));
    f.render_widget(Clear, l.rect);
    let block = Block::bordered()
        .border_type(BorderType::Double)
        .border_style(Style::new().fg(color))
        .padding(Padding::horizontal(1))
        .title(Line::from(Span::styled(format!(" {} ", d.title), theme::BOLD)));
    f.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: false }), l.rect);
}
