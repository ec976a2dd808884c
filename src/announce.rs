//! What the SessionStart hook tells the user and Claude (DESIGN §5, issue 2 item 8).
//!
//! Two sources ride on one JSON output: (1) crashed sessions that left unresolved entries,
//! announced once each (an `announced` session record); (2) briefs waiting in `handoff`
//! records (hand-back, resume), delivered once each (a `delivered` session record).
//! `systemMessage` is for the user; `additionalContext` is for Claude. Recorded text in
//! either (paths, ids, prompts, todos, reasons) is made [`present::safe`] per field (no line
//! break inside a one-line field), and both strings pass [`present::safe_block`] last, so no
//! control character or bidi override of a record reaches the terminal or Claude raw.

use serde_json::Value;

use crate::fold::{Entry, Fold, SessionInfo, SessionStatus};
use crate::journal::kind;
use crate::present::{self, one_line, plural, safe, shown};

/// Claude Code cuts hook strings over 10,000 characters; stay below with room to spare.
pub(crate) const MAX_CONTEXT: usize = 9_500;

#[derive(Debug, Default)]
pub(crate) struct StartNote {
    /// The JSON object to print, if there is anything to say.
    pub output: Option<Value>,
    /// Session records to append: (`announced`, session id) and (`delivered`, action).
    pub marks: Vec<(&'static str, String)>,
}

/// Whether a session left its last turn unfinished for good: it crashed (no SessionEnd, its
/// process gone), or it ended after a turn that an API error cut short (StopFailure) without
/// continuing. The SessionStart note reports both.
pub(crate) fn left_unfinished(s: &SessionInfo) -> bool {
    match s.status() {
        SessionStatus::Crashed => true,
        SessionStatus::Ended => s.turn_failure.is_some(),
        _ => false,
    }
}

/// How the session's last turn ended, for the note: "ended unexpectedly" (a crash) or the
/// StopFailure's reason.
fn how_it_ended(s: &SessionInfo) -> String {
    match &s.turn_failure {
        Some(reason) => format!("ended its last turn early ({})", shown(reason)),
        None => "ended unexpectedly".to_string(),
    }
}

/// What the hook knows of the checkout beside the journal, for the note: a git operation
/// stopped half-way (`rebase`, `merge`, …), read from `.git/` at SessionStart.
#[derive(Debug, Default, Clone)]
pub(crate) struct Checkout {
    /// [`crate::git::operation_in_progress`]'s words, when one is in progress.
    pub git_op: Option<String>,
    /// Per crashed session: the prompts the user typed while Claude worked, queued by Claude
    /// Code and never taken up ([`crate::claude::transcript::queued_prompts`]).
    pub queued: std::collections::HashMap<String, Vec<String>>,
}

/// Builds the SessionStart note. `crashed` tells whether a session counts as crashed
/// (injected so tests need no processes; the hook passes [`left_unfinished`]); `checkout` is
/// what the hook read of the checkout (a git operation stopped half-way).
pub(crate) fn session_start_note_in(
    fold: &Fold,
    current: &str,
    crashed: impl Fn(&SessionInfo) -> bool,
    checkout: &Checkout,
) -> StartNote {
    let mut note = StartNote::default();
    let mut user = Vec::new();
    // (the session, what it left): Claude's text is built once the budget per session is known.
    let mut told: Vec<(&SessionInfo, Vec<&Entry>, &'static str)> = Vec::new();
    for s in &fold.sessions {
        if s.announced || !crashed(s) {
            continue;
        }
        // A session told before (it crashed, was resumed, and crashed again): only the work
        // since that note is news.
        let since = |ts: &str| s.announced_ts.as_deref().is_none_or(|told| ts > told);
        let open: Vec<&Entry> = fold.entries_of(&s.session).filter(|e| e.is_unresolved() && since(&e.ts)).collect();
        if open.is_empty() && !s.commands.iter().any(|c| c.running.is_some()) {
            continue;
        }
        let same = if s.session == current { " (this session, resumed)" } else { "" };
        user.push(user_line(fold, s, same, &open, &crashed));
        if s.from_bundle {
            // Its prompts, todos and paths came in a bundle: anyone can write one, so they
            // reach Claude only through a brief the user hands back.
            if let Some(last) = user.last_mut() {
                last.push_str(&format!(
                    " (Imported from a bundle: not passed to Claude; `walj handoff --session {}` hands it back.)",
                    shown(&s.sid)
                ));
            }
        } else {
            told.push((s, open, same));
        }
        note.marks.push((kind::ANNOUNCED, s.session.clone()));
    }
    let mut briefs = Vec::new();
    for h in fold.pending_handoffs() {
        // A brief for one session (a repaired copy) waits for that session's start.
        if h.record.get_str(crate::journal::key::FOR_SESSION).is_some_and(|s| s != current) {
            continue;
        }
        if h.held {
            // Imported: shown to the user, never given to Claude without `--deliver`.
            user.push(held_brief_note(h));
            continue;
        }
        briefs.push(h.brief.clone());
        note.marks.push((kind::DELIVERED, h.action.clone()));
        user.push(format!("walj: handed a brief back to Claude ({}).", plural(h.entries.len(), "entry", "entries")));
    }
    if told.is_empty() && user.is_empty() && briefs.is_empty() {
        return note;
    }
    // The budget: what the briefs leave, shared by the crashed sessions' notes.
    let taken: usize = briefs.iter().map(|b| b.len() + 2).sum();
    let each = MAX_CONTEXT.saturating_sub(taken) / told.len().max(1);
    let mut claude: Vec<String> =
        told.iter().map(|(s, open, same)| crash_note(fold, s, open, same, checkout, each.saturating_sub(2))).collect();
    claude.extend(briefs);
    let mut context = claude.join("\n\n");
    if context.len() > MAX_CONTEXT {
        let mut end = MAX_CONTEXT;
        while !context.is_char_boundary(end) {
            end -= 1;
        }
        let cut = context.len() - end;
        context.truncate(end);
        context.push_str(&format!("\n[walj: {cut} more bytes cut; run `walj recover` for the full list]"));
    }
    let message = present::safe_block(&user.join("\n")).into_owned();
    let context = (!context.is_empty()).then(|| present::safe_block(&context).into_owned());
    note.output = Some(crate::claude::output::session_start_json(Some(&message), context.as_deref()));
    note
}

/// The user's line about one crashed session: what this crash left, split as cut off in
/// flight and completed but not yet verified, and what is still unresolved across every
/// session that left work unfinished ("12 from the last session; 47 unresolved in 3 sessions").
fn user_line(
    fold: &Fold,
    s: &SessionInfo,
    same: &str,
    open: &[&Entry],
    crashed: &impl Fn(&SessionInfo) -> bool,
) -> String {
    let paths: Vec<String> = open.iter().rev().map(|e| safe(&e.path).into_owned()).collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let cut = open.iter().filter(|e| present::state::cut_off(e)).count();
    let split = format!("{cut} cut off in flight, {} completed, not yet verified", open.len() - cut);
    // Every unresolved entry of every session but live ones (their work is not left over).
    let mut sessions = std::collections::BTreeSet::new();
    let mut total = 0usize;
    let mut total_cut = 0usize;
    for e in fold.entries.iter().filter(|e| e.is_unresolved()) {
        if fold.session(&e.session).is_some_and(|o| o.status() == SessionStatus::Live && !crashed(o)) {
            continue;
        }
        sessions.insert(e.session.as_str());
        total += 1;
        total_cut += usize::from(present::state::cut_off(e));
    }
    let overall = if total > open.len() {
        format!(
            "; {total} unresolved in {} ({total_cut} cut off in flight, {} completed, not yet verified)",
            plural(sessions.len(), "session", "sessions"),
            total - total_cut
        )
    } else {
        String::new()
    };
    let list = if paths.is_empty() { String::new() } else { format!(" Latest: {}.", list_short(&paths, 5)) };
    format!(
        "walj: your last session {}{same} {}: {} left unfinished by it ({split}){overall}.{list} Run `walj tui` (or `walj recover`) to review.",
        shown(&s.sid),
        how_it_ended(s),
        plural(open.len(), "change", "changes"),
    )
}

/// One thing the note names: its full line, a shorter one for when space runs short, and
/// what sits under it (a killed command's changes, a subagent's work), oldest first.
#[derive(Debug, Default)]
struct Item {
    full: String,
    short: String,
    subs: Vec<Item>,
}

/// A kind of thing the note names: its heading (`None`: items stand alone) and its items,
/// oldest first; when space runs short, the most recent ones are kept and the rest counted.
#[derive(Debug)]
struct Group {
    title: Option<String>,
    items: Vec<Item>,
}

/// How much of the note is given in full ([`crash_note`] tries these in order).
#[derive(Debug, Clone, Copy)]
struct Level {
    /// Short lines for the first groups (what ran, in flight, todos).
    short: bool,
    /// The most recent items kept per group, and per item's sub-list.
    keep: usize,
    keep_subs: usize,
    /// Applied entries (and changes after Claude Code stopped): `None` in full, else
    /// summarised with this many of the most recent by path.
    recent: Option<usize>,
}

/// The levels, fullest first: applied entries summarised first, then the first groups in
/// short lines; past these, [`crash_note`] keeps fewer of each kind's most recent items (every
/// kind's count always stays).
const LEVELS: &[Level] = &[
    Level { short: false, keep: usize::MAX, keep_subs: usize::MAX, recent: None },
    Level { short: false, keep: usize::MAX, keep_subs: usize::MAX, recent: Some(8) },
    Level { short: true, keep: usize::MAX, keep_subs: usize::MAX, recent: Some(5) },
];

fn render_group(out: &mut String, g: &Group, lv: Level) {
    if g.items.is_empty() {
        return;
    }
    if let Some(t) = &g.title {
        out.push_str(t);
        out.push('\n');
    }
    let skip = g.items.len().saturating_sub(lv.keep);
    if skip > 0 {
        out.push_str(&format!("- ({skip} earlier not shown here: `walj recover` lists them)\n"));
    }
    for it in &g.items[skip..] {
        out.push_str("- ");
        out.push_str(if lv.short { &it.short } else { &it.full });
        out.push('\n');
        let sskip = it.subs.len().saturating_sub(lv.keep_subs);
        if sskip > 0 {
            out.push_str(&format!("  - ({sskip} earlier not shown here: `walj recover` lists them)\n"));
        }
        for sub in &it.subs[sskip..] {
            out.push_str("  - ");
            out.push_str(if lv.short { &sub.short } else { &sub.full });
            out.push('\n');
        }
    }
}

/// Applied entries (or changes after Claude Code stopped) in a few lines: counts by folder
/// and by event, and the most recent `recent` by path.
fn summarise(out: &mut String, title: &str, entries: &[&Entry], recent: usize) {
    if entries.is_empty() {
        return;
    }
    let mut folders: std::collections::BTreeMap<String, usize> = Default::default();
    let mut events: std::collections::BTreeMap<String, usize> = Default::default();
    for e in entries {
        let folder = e.path.rsplit_once('/').map(|(d, _)| d).unwrap_or(".");
        *folders.entry(safe(folder).into_owned()).or_default() += 1;
        *events.entry(safe(&e.event).into_owned()).or_default() += 1;
    }
    let top = |m: std::collections::BTreeMap<String, usize>, n: usize| {
        let mut v: Vec<(String, usize)> = m.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let rest = v.len().saturating_sub(n);
        let mut s = v.iter().take(n).map(|(k, c)| format!("{k} {c}")).collect::<Vec<_>>().join(", ");
        if rest > 0 {
            s.push_str(&format!(", {} more", plural(rest, "folder", "folders")));
        }
        s
    };
    out.push_str(title);
    out.push_str(&format!(" — by folder: {}; by event: {}", top(folders, 6), top(events, usize::MAX)));
    if recent > 0 {
        let latest: Vec<String> = entries.iter().rev().take(recent).map(|e| safe(&e.path).into_owned()).collect();
        out.push_str(&format!("; most recent: {}", latest.join(", ")));
    }
    out.push('\n');
}

/// What Claude is told of one crashed session, within `budget` bytes, ordered by what it
/// needs to continue: what was running when the session died (killed commands with their
/// changes, subagents, background commands, git), then the in-flight entries, the open todos
/// and the last prompt; then the applied entries, summarised when space runs short; last,
/// how to see all of them. When even the first groups do not fit, each keeps its count and
/// its most recent items.
fn crash_note(fold: &Fold, s: &SessionInfo, open: &[&Entry], same: &str, checkout: &Checkout, budget: usize) -> String {
    let status = s.status();
    let since = |ts: &str| s.announced_ts.as_deref().is_none_or(|told| ts > told);
    let entry_full = |e: &Entry| {
        let mut from = String::new();
        if let Some(v) = present::state::disk_verdict(e, |id| safe(fold.ids.short(id)).into_owned()) {
            from.push_str("; ");
            from.push_str(&v);
        }
        if let Some(a) = present::state::attribution(
            e,
            &present::state::candidate_names(e, 60, |c| safe(fold.ids.short(c)).into_owned()),
        ) {
            from.push_str("; ");
            from.push_str(&a);
        }
        format!(
            "{} ({} {}, {}: {}{from})",
            shown(&e.path),
            shown(&e.tool),
            shown(&e.event),
            present::state::entry_label(e, status),
            // The note names the killed commands first: above their changes.
            safe(&present::state::entry_meaning_listed(e, status)).replace("(named below)", "(named above)")
        )
    };
    let entry_item = |e: &Entry| Item {
        full: entry_full(e),
        short: format!("{} ({})", shown(&e.path), present::state::short_state(e)),
        subs: Vec::new(),
    };
    // Changes made after Claude Code's last sign of life: never listed as Claude's work.
    let (late, mine): (Vec<&Entry>, Vec<&Entry>) = open.iter().copied().partition(|e| e.after_stop);
    let mut placed = std::collections::HashSet::new();

    // What was running: each killed command with its changes; subagents with their work;
    // background commands; git.
    let command_item = |c: &crate::fold::Command, placed: &mut std::collections::HashSet<*const Entry>| {
        let own: Vec<&Entry> =
            // An undecided change (several commands ran, none named it) is no command's: it is
            // listed with the cut-off entries, naming both.
            mine.iter().copied().filter(|e| e.unfinished && !e.undecided && e.parent.as_deref() == Some(&c.id)).collect();
        let later = late.iter().filter(|e| e.unfinished && e.parent.as_deref() == Some(&c.id)).count();
        // A command that finished but left changes out of its entries (over `[bash]
        // max_changes`) is told like a killed one: what it changed is not all listed.
        let line = |width| {
            present::command::in_flight(c, status, s.agent(), own.len(), width)
                .or_else(|| present::command::left_out(c, width))
        };
        let (full, short) = (line(200)?, line(120)?);
        let also = if later > 0 {
            format!(
                "; {} after Claude Code's last sign of life, listed apart",
                plural(later, "more change", "more changes")
            )
        } else {
            String::new()
        };
        let colon = if own.is_empty() { "" } else { ":" };
        for e in &own {
            placed.insert(*e as *const Entry);
        }
        Some(Item {
            full: format!("{full}{also}{colon}"),
            short: format!("{short}{also}{colon}"),
            subs: own.iter().map(|e| entry_item(e)).collect(),
        })
    };
    // One list per kind (killed commands, subagents, background commands, git): when space
    // runs short, each keeps its own most recent items.
    let mut running: [Vec<Item>; 4] = Default::default();
    for c in s.commands.iter().filter(|c| since(&c.ts) && c.agent_id.is_none()) {
        if let Some(it) = command_item(c, &mut placed) {
            running[0].push(it);
        }
    }
    let mut n_subagents = 0;
    for a in &s.subagents {
        let theirs: Vec<&Entry> =
            mine.iter().copied().filter(|e| e.agent_id.is_some() && e.agent_id == a.agent_id).collect();
        if theirs.is_empty() && a.ended.is_some() {
            continue;
        }
        n_subagents += usize::from(a.ended.is_none());
        let mut subs = Vec::new();
        for c in s.commands.iter().filter(|c| since(&c.ts) && c.agent_id.is_some() && c.agent_id == a.agent_id) {
            // The subagent's command; its changes are listed under the subagent, once.
            if let Some(line) = present::command::in_flight(
                c,
                status,
                s.agent(),
                present::command::derived_changes(theirs.iter().copied(), &c.id),
                200,
            ) {
                subs.push(Item { short: one_line(&line, 140), full: line, subs: Vec::new() });
            }
        }
        for e in &theirs {
            placed.insert(*e as *const Entry);
            subs.push(entry_item(e));
        }
        let heading = safe(&present::state::subagent_heading(a, status)).into_owned();
        let colon = if subs.is_empty() { "" } else { ":" };
        running[1].push(Item { full: format!("{heading}{colon}"), short: format!("{heading}{colon}"), subs });
    }
    // Background commands Claude Code had not reported finished (a dev server, a watcher):
    // they may run on without the session. From the journal only (no process scan in a
    // hook): the last Stop's `background_tasks` and task notifications.
    let background: Vec<&crate::fold::Command> =
        s.commands.iter().filter(|b| b.background && b.finished.is_none() && since(&b.ts)).collect();
    for b in &background {
        let task = b.task_id.as_deref().map(|t| format!(" (task {})", shown(t))).unwrap_or_default();
        let line = |w| {
            format!(
                "background command `{}`{task}: not reported finished when the session stopped; it may still run (`walj procs` tells)",
                safe(&one_line(&b.command, w))
            )
        };
        running[2].push(Item { full: line(200), short: line(100), subs: Vec::new() });
    }
    for m in s.git_moves.iter().filter(|m| !m.finished) {
        let line = format!("git: {}", present::git::git_move(m));
        running[3].push(Item { short: line.clone(), full: line, subs: Vec::new() });
    }
    if let Some(op) = &checkout.git_op {
        let line = format!(
            "git: {} (finish or abort it before other git work; `walj revert --session` waits for it)",
            safe(op)
        );
        running[3].push(Item { short: line.clone(), full: line, subs: Vec::new() });
    }
    let n_commands = s
        .commands
        .iter()
        .filter(|c| since(&c.ts) && c.status == crate::fold::CommandStatus::InFlight && !c.background)
        .count();

    let rest: Vec<&Entry> = mine.iter().copied().filter(|e| !placed.contains(&(*e as *const Entry))).collect();
    let (flight, applied): (Vec<&Entry>, Vec<&Entry>) = rest.iter().copied().partition(|e| present::state::cut_off(e));
    let open_todos: Vec<_> = s.todos.iter().filter(|t| t.is_open()).collect();
    let todo_items: Vec<Item> = open_todos
        .iter()
        .map(|t| Item {
            full: format!("[{}] {}", shown(&t.status), one_line(&t.content, 300)),
            short: format!("[{}] {}", shown(&t.status), one_line(&t.content, 120)),
            subs: Vec::new(),
        })
        .collect();

    let how = match &s.turn_failure {
        Some(reason) => format!("ended its last turn early ({}, no Stop)", shown(reason)),
        None => "ended unexpectedly (crashed, no SessionEnd)".to_string(),
    };
    let cut = open.iter().filter(|e| present::state::cut_off(e)).count();
    let mut head = format!(
        "walj recovery note: the {} session {}{same} {how} with {} ({cut} cut off in flight, {} completed, not yet verified)",
        s.agent().label(),
        shown(&s.session),
        plural(open.len(), "unfinished change", "unfinished changes"),
        open.len() - cut,
    );
    let mut kinds = Vec::new();
    if n_commands > 0 {
        kinds.push(plural(n_commands, "command that never finished", "commands that never finished"));
    }
    if n_subagents > 0 {
        kinds.push(plural(n_subagents, "subagent still running", "subagents still running"));
    }
    if !background.is_empty() {
        kinds.push(plural(background.len(), "background command", "background commands"));
    }
    if checkout.git_op.is_some() {
        kinds.push("a git operation in progress".to_string());
    }
    if !open_todos.is_empty() {
        kinds.push(plural(open_todos.len(), "open todo", "open todos"));
    }
    let queued = checkout.queued.get(&s.session).map_or(0, Vec::len);
    if queued > 0 {
        kinds.push(plural(queued, "queued prompt", "queued prompts"));
    }
    if !kinds.is_empty() {
        head.push_str(&format!("; also {}", kinds.join(", ")));
    }
    head.push_str(":\n");

    let mut title = Some("When the session died:".to_string());
    let running: Vec<Group> = running
        .into_iter()
        .filter(|items| !items.is_empty())
        .map(|items| Group { title: title.take(), items })
        .collect();
    let flight_group = Group {
        title: Some(format!("Cut off in flight ({}):", flight.len())),
        items: flight.iter().map(|e| entry_item(e)).collect(),
    };
    let todo_group = Group { title: Some(format!("Open todos ({}):", todo_items.len())), items: todo_items };
    let render = |lv: Level| {
        let mut c = head.clone();
        for g in &running {
            render_group(&mut c, g, lv);
        }
        render_group(&mut c, &flight_group, lv);
        render_group(&mut c, &todo_group, lv);
        if let Some(p) = s.last_prompt() {
            let w = if lv.short { 200 } else { 300 };
            c.push_str(&format!("The user's last request was: {}\n", one_line(p, w)));
        }
        for q in checkout.queued.get(&s.session).into_iter().flatten() {
            let w = if lv.short { 200 } else { 300 };
            c.push_str(&format!("Queued by the user while Claude worked, never taken up: {}\n", one_line(q, w)));
        }
        let title = format!("Completed, not yet verified or otherwise unfinished ({}):", applied.len());
        let late_title = format!(
            "Changed after Claude Code's last sign of life ({}; the killed command's, or the user's after the crash: check before treating them as your work):",
            late.len()
        );
        match lv.recent {
            None => {
                render_group(
                    &mut c,
                    &Group { title: Some(title), items: applied.iter().map(|e| entry_item(e)).collect() },
                    lv,
                );
                render_group(
                    &mut c,
                    &Group { title: Some(late_title), items: late.iter().map(|e| entry_item(e)).collect() },
                    lv,
                );
            }
            Some(n) => {
                summarise(&mut c, title.trim_end_matches(':'), &applied, n);
                summarise(&mut c, late_title.trim_end_matches(':'), &late, n);
            }
        }
        c.push_str(&format!(
            "`walj recover` lists all {}. walj's MCP tools, where loaded, answer too (read-only): `recover`, then `entry` for a diff, `session` for the session's context. Do not assume these changes are complete; check them before building on them. The user can review them with `walj tui`.",
            open.len()
        ));
        c
    };
    for lv in LEVELS {
        let text = render(*lv);
        if text.len() <= budget {
            return text;
        }
    }
    // The first groups alone overflow: the most recent `keep` of each kind (and of each
    // command's changes), as many as fit (the length grows with `keep`).
    let most = [flight_group.items.len(), todo_group.items.len()]
        .into_iter()
        .chain(running.iter().map(|g| g.items.len()))
        .chain(running.iter().flat_map(|g| g.items.iter().map(|i| i.subs.len())))
        .max()
        .unwrap_or(1)
        .max(1);
    let at = |keep: usize| Level { short: true, keep, keep_subs: keep, recent: Some(3) };
    let (mut lo, mut hi) = (1, most);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if render(at(mid)).len() <= budget { lo = mid } else { hi = mid - 1 }
    }
    let text = render(at(lo));
    if text.len() <= budget {
        return text;
    }
    // Not even one of each: counts only (the caller's cut is the last resort).
    render(Level { short: true, keep: 0, keep_subs: 0, recent: Some(0) })
}

/// The user's note about a brief an imported bundle brought (issue 13 item 12).
pub(crate) fn held_brief_note(h: &crate::fold::Handoff) -> String {
    format!(
        "walj: an imported bundle brought a brief for Claude ({}, session {}); it is not delivered until you read it and run `walj handoff --deliver {}` (`walj handoff --held` shows it).",
        plural(h.entries.len(), "entry", "entries"),
        shown(&crate::journal::record::short_sid(&h.session)),
        shown(crate::fold::abbrev(&h.action, 12)),
    )
}

fn list_short(items: &[&str], max: usize) -> String {
    let mut s = items.iter().take(max).copied().collect::<Vec<_>>().join(", ");
    if items.len() > max {
        s.push_str(&format!(" and {} more", items.len() - max));
    }
    s
}

/// What the user is told about a failure marker ([`crate::failmark`]): at SessionStart
/// (`systemMessage`) and by `walj doctor`.
pub(crate) fn write_failures(m: &crate::failmark::Mark) -> String {
    let when = if m.first == m.last { format!("at {}", m.first) } else { format!("from {} to {}", m.first, m.last) };
    format!(
        "walj could not write .walj/ {when} ({}, {} lost; last error: {}). Tool calls of that time may be missing from the journal: check the files changed then (`git status`).",
        plural(m.failures as usize, "failed hook call", "failed hook calls"),
        plural(m.records as usize, "journal record", "journal records"),
        shown(&m.error)
    )
}

/// Adds `message` for the user to the SessionStart output (`systemMessage`, after what is
/// there), making one when there is none.
pub(crate) fn add_system_message(output: Option<Value>, message: &str) -> Value {
    let mut o = output.unwrap_or_else(|| crate::claude::output::session_start_json(None, None));
    let message = present::safe_block(message);
    let joined = match o.get("systemMessage").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => format!("{m}\n{message}"),
        _ => message.into_owned(),
    };
    o["systemMessage"] = Value::String(joined);
    o
}
