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
/// Kept where `triage/handoff.rs` imports it from; the helper lives in [`crate::present`].
use crate::present::{self, one_line, plural, safe, shown};

/// Claude Code cuts hook strings over 10,000 characters; stay below with room to spare.
pub const MAX_CONTEXT: usize = 9_500;

#[derive(Debug, Default)]
pub struct StartNote {
    /// The JSON object to print, if there is anything to say.
    pub output: Option<Value>,
    /// Session records to append: (`announced`, session id) and (`delivered`, action).
    pub marks: Vec<(&'static str, String)>,
}

/// Whether a session left its last turn unfinished for good: it crashed (no SessionEnd, its
/// process gone), or it ended after a turn that an API error cut short (StopFailure) without
/// continuing. The SessionStart note reports both.
pub fn left_unfinished(s: &SessionInfo) -> bool {
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

/// Builds the SessionStart note. `crashed` tells whether a session counts as crashed
/// (injected so tests need no processes; the hook passes [`left_unfinished`]).
pub fn session_start_note(fold: &Fold, current: &str, crashed: impl Fn(&SessionInfo) -> bool) -> StartNote {
    let mut note = StartNote::default();
    let mut user = Vec::new();
    let mut claude = Vec::new();
    for s in &fold.sessions {
        if s.announced || !crashed(s) {
            continue;
        }
        // A session told before (it crashed, was resumed, and crashed again): only the work
        // since that note is news.
        let since = |ts: &str| s.announced_ts.as_deref().is_none_or(|told| ts > told);
        let open: Vec<&Entry> = fold.entries_of(&s.session).filter(|e| e.is_unresolved() && since(&e.ts)).collect();
        let cut_off: Vec<String> = s
            .commands
            .iter()
            .filter(|c| since(&c.ts))
            .filter_map(|c| {
                present::command::in_flight(
                    c,
                    s.status(),
                    s.agent(),
                    present::command::derived_changes(open.iter().copied(), &c.id),
                    200,
                )
                .or_else(|| present::command::left_out(c, 200))
            })
            .collect();
        if open.is_empty() && !s.commands.iter().any(|c| c.running.is_some()) {
            continue;
        }
        let paths: Vec<String> = open.iter().map(|e| safe(&e.path).into_owned()).collect();
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        let same = if s.session == current { " (this session, resumed)" } else { "" };
        user.push(format!(
            "walj: your last session {}{} {} with {} that may not have been completed: {}. Run `walj tui` (or `walj recover`) to review.",
            shown(&s.sid),
            same,
            how_it_ended(s),
            plural(open.len(), "change", "changes"),
            list_short(&paths, 5)
        ));
        let how = match &s.turn_failure {
            Some(reason) => format!("ended its last turn early ({}, no Stop)", shown(reason)),
            None => "ended unexpectedly (crashed, no SessionEnd)".to_string(),
        };
        let mut c = format!(
            "walj recovery note: the {} session {}{} {how} with {}:\n",
            s.agent().label(),
            shown(&s.session),
            same,
            plural(open.len(), "unfinished change", "unfinished changes")
        );
        let status = s.status();
        let line = |e: &Entry| {
            let mut from = String::new();
            if let Some(v) = present::state::disk_verdict(e, |id| safe(fold.ids.short(id)).into_owned()) {
                from.push_str("; ");
                from.push_str(&v);
            }
            if let Some(a) =
                present::state::attribution(e, &e.candidates.iter().map(|c| safe(c).into_owned()).collect::<Vec<_>>())
            {
                from.push_str("; ");
                from.push_str(&a);
            }
            format!(
                "- {} ({} {}, {}: {}{from})\n",
                shown(&e.path),
                shown(&e.tool),
                shown(&e.event),
                present::state::entry_label(e, status),
                safe(&present::state::entry_meaning_listed(e, status))
            )
        };
        // The main thread's work first, then each subagent's under it; changes made after
        // Claude Code's last sign of life last, never as Claude's work.
        let (late, mine): (Vec<&Entry>, Vec<&Entry>) = open.iter().copied().partition(|e| e.after_stop);
        for e in mine.iter().filter(|e| present::state::by_subagent(e, s).is_none()) {
            c.push_str(&line(e));
        }
        for a in &s.subagents {
            let theirs: Vec<&&Entry> =
                mine.iter().filter(|e| e.agent_id.is_some() && e.agent_id == a.agent_id).collect();
            if theirs.is_empty() && a.ended.is_some() {
                continue;
            }
            c.push_str(&format!("{}:\n", safe(&present::state::subagent_heading(a, status))));
            for e in theirs {
                c.push_str(&format!("  {}", line(e)));
            }
        }
        if !late.is_empty() {
            c.push_str("Changed after Claude Code's last sign of life (the killed command's, or the user's after the crash: check before treating them as your work):\n");
            for e in &late {
                c.push_str(&line(e));
            }
        }
        for t in &cut_off {
            c.push_str(&format!("- {t}\n"));
        }
        // Background commands Claude Code had not reported finished (a dev server, a watcher):
        // they may run on without the session. From the journal only (no process scan in a
        // hook): the last Stop's `background_tasks` and task notifications.
        for b in s.commands.iter().filter(|b| b.background && b.finished.is_none() && since(&b.ts)) {
            let task = b.task_id.as_deref().map(|t| format!(" (task {})", shown(t))).unwrap_or_default();
            c.push_str(&format!(
                "- background command `{}`{task}: not reported finished when the session stopped; it may still run (`walj procs` tells)\n",
                safe(&one_line(&b.command, 200))
            ));
        }
        if let Some(p) = s.last_prompt() {
            c.push_str(&format!("The user's last request was: {}\n", one_line(p, 300)));
        }
        let open_todos: Vec<_> = s.todos.iter().filter(|t| t.is_open()).collect();
        if !open_todos.is_empty() {
            c.push_str("Open todos: ");
            c.push_str(
                &open_todos
                    .iter()
                    .map(|t| format!("[{}] {}", shown(&t.status), one_line(&t.content, 300)))
                    .collect::<Vec<_>>()
                    .join("; "),
            );
            c.push('\n');
        }
        c.push_str("Do not assume these changes are complete; check them before building on them. The user can review them with `walj tui`.");
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
            claude.push(c);
        }
        note.marks.push((kind::ANNOUNCED, s.session.clone()));
    }
    for h in fold.pending_handoffs() {
        if h.held {
            // Imported: shown to the user, never given to Claude without `--deliver`.
            user.push(held_brief_note(h));
            continue;
        }
        claude.push(h.brief.clone());
        note.marks.push((kind::DELIVERED, h.action.clone()));
        user.push(format!("walj: handed a brief back to Claude ({}).", plural(h.entries.len(), "entry", "entries")));
    }
    if claude.is_empty() && user.is_empty() {
        return note;
    }
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

/// The user's note about a brief an imported bundle brought (issue 13 item 12).
pub fn held_brief_note(h: &crate::fold::Handoff) -> String {
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
pub fn write_failures(m: &crate::failmark::Mark) -> String {
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
pub fn add_system_message(output: Option<Value>, message: &str) -> Value {
    let mut o = output.unwrap_or_else(|| crate::claude::output::session_start_json(None, None));
    let message = present::safe_block(message);
    let joined = match o.get("systemMessage").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => format!("{m}\n{message}"),
        _ => message.into_owned(),
    };
    o["systemMessage"] = Value::String(joined);
    o
}
