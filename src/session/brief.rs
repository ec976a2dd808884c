//! The resume brief (issue 5 item 5): what Claude needs to pick up a session where it stopped,
//! built from the journal, never from a lossy summary.
//!
//! It lists what the user asked (newest first), every open todo with its status, every
//! unresolved change with path and state, failed commands, background processes and whether
//! they still run, the last assistant message, the transcript (or its safe copy) and how the
//! session resumes (`claude --resume <id>`, or its agent's: [`crate::agents::Agent::resume_hint`]). It must arrive whole: Claude Code cuts hook context over 10,000
//! characters, so the brief fits [`MAX_CHARS`] (about 2,600 tokens; well inside the ~4,000 the
//! issue allows for a 200-entry session) by *shortening text*, level by level; when a list is
//! still too long its tail is *counted with ids* ("… and 12 more: id, id, …"), so nothing open
//! disappears.
//!
//! Delivery: a `handoff` record (`kind: resume`, `action`, `brief`, `entries`) that the
//! SessionStart hook delivers exactly once (src/announce.rs).

use std::fmt::Write as _;

use serde::Serialize;

use super::SessionState;
use super::procs::ProcStatus;
use crate::fold::{Command, CommandStatus, Entry, EntryState, SessionInfo, SessionStatus, Todo};
use crate::journal::{JournalWriter, Record, kind, op};
use crate::present::{clip, human_ts, meaning, plural};
use crate::project::Project;

/// The brief's size limit in characters (Claude Code cuts hook strings over 10,000).
pub(crate) const MAX_CHARS: usize = 9_000;

/// `kind` of a resume handoff record.
pub(crate) const KIND_RESUME: &str = crate::journal::kind::RESUME;

/// How much detail a rendering keeps: clip of free text, full items per list.
#[derive(Debug, Clone, Copy)]
struct Level {
    text: usize,
    items: usize,
}

const LEVELS: &[Level] = &[
    Level { text: 600, items: usize::MAX },
    Level { text: 300, items: usize::MAX },
    Level { text: 200, items: 80 },
    Level { text: 160, items: 60 },
    Level { text: 120, items: 40 },
    Level { text: 100, items: 30 },
    Level { text: 80, items: 20 },
    Level { text: 64, items: 14 },
    Level { text: 50, items: 10 },
    Level { text: 40, items: 6 },
    Level { text: 32, items: 4 },
    Level { text: 24, items: 2 },
];

#[derive(Debug, Clone, Serialize)]
pub struct Brief {
    pub text: String,
    /// Unresolved entry ids (full), for the handoff record.
    pub entries: Vec<String>,
    pub chars: usize,
    /// Estimate: one token per 3.5 characters (paths and ids tokenize worse than prose).
    pub tokens: usize,
    /// Detail level used (0 = full text).
    pub level: usize,
}

/// Inputs besides the session state.
pub(crate) struct BriefInput<'a> {
    /// The project (the resume line runs where the session was started in it).
    pub project: &'a Project,
    pub state: &'a SessionState,
    pub procs: &'a [ProcStatus],
    /// The last assistant text (from the transcript, else the last Stop).
    pub last_message: Option<String>,
    /// Display path of the safe copy, when there is one.
    pub copy_path: Option<String>,
    /// Prompts the user typed while Claude worked, queued and never taken up (from the
    /// transcript's `queue-operation` lines).
    pub queued: Vec<String>,
}

pub(crate) fn build(input: &BriefInput<'_>, max_chars: usize) -> Brief {
    let entries: Vec<String> = input.state.unresolved().map(|e| e.id.clone()).collect();
    let mut chosen = (LEVELS.len() - 1, String::new());
    for (i, lvl) in LEVELS.iter().enumerate() {
        let text = render(input, *lvl, None);
        if text.chars().count() <= max_chars {
            chosen = (i, text);
            break;
        }
        if i == LEVELS.len() - 1 {
            // Even the tersest rendering is too long (thousands of items): cap the id lists.
            let text = render(input, *lvl, Some(max_chars));
            chosen = (i, text);
        }
    }
    let (level, text) = chosen;
    Brief::of(text, entries, level)
}

impl Brief {
    /// A brief of `text`, its length and token estimate counted. The text is made
    /// [`crate::present::safe_block`]: recorded prompts, paths and commands in it keep no
    /// control character or bidi override (one-line fields are already [`clip`]ped flat).
    fn of(text: String, entries: Vec<String>, level: usize) -> Brief {
        let text = match crate::present::safe_block(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(t) => t,
        };
        let chars = text.chars().count();
        Brief { entries, chars, tokens: chars.div_ceil(7) * 2, level, text }
    }

    /// The brief with `head` before its text (counted again).
    pub(crate) fn headed(self, head: &str) -> Brief {
        Brief::of(format!("{head}{}", self.text), self.entries, self.level)
    }

    /// The brief with its resume line `old` (`claude --resume <id>`) replaced by `new`: a
    /// repaired copy resumes under its own id, not the damaged original's.
    pub(crate) fn resuming_with(self, old: &str, new: &str) -> Brief {
        let marker = format!("resumes with: {old}");
        if !self.text.contains(&marker) {
            return self;
        }
        let text = self.text.replace(&marker, &format!("resumes with: {new}"));
        Brief::of(text, self.entries, self.level)
    }

    /// The fields `walj sessions brief --json` and `sessions resume --json` print for it:
    /// `session`, `brief`, `chars`, `tokens_estimate`, `level`, `entries`, `action` (the
    /// delivery record, when delivered) and `delivered_at_next_start`.
    pub(crate) fn json(&self, session: &str, action: Option<&str>) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        [
            ("session", json!(session)),
            ("brief", json!(self.text)),
            ("chars", json!(self.chars)),
            ("tokens_estimate", json!(self.tokens)),
            ("level", json!(self.level)),
            ("entries", json!(self.entries)),
            ("action", json!(action)),
            ("delivered_at_next_start", json!(action.is_some())),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// "… and N more <what>: a, b, c" (the ids capped to `budget` characters when given).
fn rest(out: &mut String, n: usize, what: &str, ids: &[String], budget: Option<usize>) {
    if n == 0 {
        return;
    }
    let mut list = String::new();
    let mut shown = 0;
    for id in ids {
        if budget.is_some_and(|b| list.len() + id.len() + 2 > b) {
            break;
        }
        if !list.is_empty() {
            list.push_str(", ");
        }
        list.push_str(id);
        shown += 1;
    }
    if shown < ids.len() {
        let _ = write!(list, ", … ({} more ids)", ids.len() - shown);
    }
    let _ = writeln!(out, "- … and {n} more {what}: {list}");
}

/// The todos not shown, grouped by status, list positions as ranges: `pending: todo 31–60`,
/// task ids as `#7`.
fn todo_rest(rest: &[(usize, &Todo)]) -> Vec<String> {
    let mut statuses: Vec<&str> = Vec::new();
    for (_, t) in rest {
        if !statuses.contains(&t.status.as_str()) {
            statuses.push(&t.status);
        }
    }
    let mut out = Vec::new();
    for st in statuses {
        let mut parts: Vec<String> = Vec::new();
        let mut run: Option<(usize, usize)> = None;
        let flush = |run: &mut Option<(usize, usize)>, parts: &mut Vec<String>| {
            if let Some((a, b)) = run.take() {
                parts.push(if a == b { format!("todo {a}") } else { format!("todos {a}–{b}") });
            }
        };
        for (i, t) in rest.iter().filter(|(_, t)| t.status == st) {
            match &t.id {
                Some(id) => {
                    flush(&mut run, &mut parts);
                    parts.push(format!("#{id}"));
                }
                None => {
                    let n = i + 1;
                    run = match run {
                        Some((a, b)) if b + 1 == n => Some((a, n)),
                        other => {
                            let mut r = other;
                            flush(&mut r, &mut parts);
                            Some((n, n))
                        }
                    };
                }
            }
        }
        flush(&mut run, &mut parts);
        out.push(format!("{st}: {}", parts.join(", ")));
    }
    out
}

/// One rendering of the brief at detail `lvl`; `cap` (a character budget) also caps the
/// id lists of counted tails.
fn render(input: &BriefInput<'_>, lvl: Level, cap: Option<usize>) -> String {
    let id_budget = cap.map(|c| c / 8);
    let mut out = String::new();
    header(&mut out, input.state);
    prompts(&mut out, &input.state.info, lvl);
    if !input.queued.is_empty() {
        let _ = writeln!(out, "\n## Queued by the user while Claude worked, never taken up ({})", input.queued.len());
        for q in &input.queued {
            let _ = writeln!(out, "- {}", clip(q, lvl.text));
        }
    }
    todos(&mut out, &input.state.info, lvl, id_budget);
    unresolved(&mut out, input.state, lvl, id_budget);
    cut_off_commands(&mut out, input.state, lvl);
    failed_commands(&mut out, input.state, lvl, id_budget);
    subagents(&mut out, input.state, lvl);
    background(&mut out, input.procs, lvl, id_budget);
    if let Some(m) = &input.last_message {
        let _ = writeln!(out, "\n## Last assistant message\n{}", clip(m, lvl.text * 2));
    }
    transcript(&mut out, input);
    out
}

/// Title, how the session ended, where it ran, and what to do.
fn header(out: &mut String, st: &SessionState) {
    let s = &st.info;
    let _ = writeln!(out, "# walj resume brief: {} session {}", s.agent().label(), s.session);
    let how = match st.status {
        SessionStatus::Crashed => "ended unexpectedly (crashed: no SessionEnd, its process is gone)".to_string(),
        SessionStatus::Ended => {
            format!("ended ({})", s.end.as_ref().map(|e| e.1.as_str()).filter(|r| !r.is_empty()).unwrap_or("normally"))
        }
        SessionStatus::Live => "is still running".to_string(),
        SessionStatus::Unknown => "ended; walj cannot tell how".to_string(),
    };
    let mut where_ = format!("The session {how}. It started {}", human_ts(s.started.as_ref().unwrap_or(&s.first_ts)));
    if let Some(c) = &s.cwd {
        let _ = write!(where_, " in {c}");
    }
    if let Some(b) = &s.branch {
        let _ = write!(where_, " on branch {b}");
    }
    if let Some(h) = &s.head {
        let _ = write!(where_, " (HEAD {})", crate::fold::abbrev(h, 10));
    }
    let _ = writeln!(out, "{where_}; last activity {}.", human_ts(&s.last_ts));
    let _ = writeln!(
        out,
        "walj wrote this from its journal. Every open item is listed or counted with its id; `walj sessions show {}` has the full record. Continue the user's work; do not redo what is done, and check unresolved changes before building on them.",
        crate::present::shell_quote(&s.sid)
    );
}

/// What the user asked, newest first.
fn prompts(out: &mut String, s: &SessionInfo, lvl: Level) {
    let n = s.prompts.len();
    let _ = writeln!(out, "\n## What the user asked ({}, newest first)", plural(n, "prompt", "prompts"));
    if n == 0 {
        let _ = writeln!(out, "- (no prompt recorded)");
    }
    let shown = n.min(lvl.items.max(1));
    for (i, p) in s.prompts.iter().rev().take(shown).enumerate() {
        // The newest prompt matters most: it keeps more text.
        let max = if i == 0 { lvl.text * 2 } else { lvl.text };
        let _ = writeln!(out, "{}. [{}] {}", i + 1, human_ts(&p.ts), clip(&p.text, max));
    }
    if n > shown {
        let older = &s.prompts[..n - shown];
        let _ = writeln!(
            out,
            "- … and {} (from {} to {})",
            plural(older.len(), "earlier prompt", "earlier prompts"),
            human_ts(&older[0].ts),
            human_ts(&older[older.len() - 1].ts)
        );
    }
}

/// Every open todo, or counted by status.
fn todos(out: &mut String, s: &SessionInfo, lvl: Level, id_budget: Option<usize>) {
    let open: Vec<(usize, &Todo)> = s.todos.iter().enumerate().filter(|(_, t)| t.is_open()).collect();
    let (done, total) = s.todos_done();
    let _ = writeln!(out, "\n## Open todos ({} open, {done} of {total} done)", open.len());
    if open.is_empty() {
        let _ = writeln!(out, "- none");
    }
    let label = |i: usize, t: &Todo| match &t.id {
        Some(id) => format!("#{id}"),
        None => format!("todo {}", i + 1),
    };
    let shown = open.len().min(lvl.items);
    for (i, t) in open.iter().take(shown) {
        let _ = writeln!(out, "- [{}] {} ({})", t.status, clip(&t.content, lvl.text), label(*i, t));
    }
    let ids = todo_rest(&open[shown..]);
    rest(out, open.len() - shown, "open todos", &ids, id_budget);
}

/// Unresolved changes: the state's meaning is said once, not on every line.
fn unresolved(out: &mut String, st: &SessionState, lvl: Level, id_budget: Option<usize>) {
    // Cut off in flight first (a tool call without its outcome, a killed command's change),
    // then the completed ones not yet verified; each in journal order.
    let mut un: Vec<&Entry> = st.unresolved().collect();
    un.sort_by_key(|e| !crate::present::state::cut_off(e));
    let _ = writeln!(out, "\n## Unresolved changes ({}): verify each before building on it", un.len());
    if un.is_empty() {
        let _ = writeln!(out, "- none: every recorded change was verified or triaged");
    } else {
        let mut states: Vec<EntryState> = un.iter().map(|e| e.state()).collect();
        states.sort();
        states.dedup();
        let legend: Vec<String> = states.iter().map(|s| format!("{}: {}", s.as_str(), meaning(*s))).collect();
        let _ = writeln!(out, "({})", legend.join("; "));
    }
    let shown = un.len().min(lvl.items);
    for e in un.iter().take(shown) {
        let mut notes = String::new();
        if let Some(v) = crate::present::state::disk_verdict(e, |id| st.ids.short(id).to_string()) {
            let _ = write!(notes, "; {v}");
        }
        if e.unfinished {
            // The command line is said once, under the commands cut off.
            let _ = write!(
                notes,
                "; {}",
                crate::present::state::entry_meaning_listed(e, crate::fold::SessionStatus::Crashed)
            );
        }
        if let Some(a) = e.agent_id.as_deref() {
            let label = st.info.subagent(a).map(|s| s.label()).unwrap_or_else(|| "subagent".to_string());
            let _ = write!(notes, "; by {}", clip(&label, lvl.text));
        }
        let others = crate::present::state::candidate_names(e, 60, |c| st.ids.short(c).to_string());
        if let Some(a) = crate::present::state::attribution(e, &others) {
            let _ = write!(notes, "; {a}");
        }
        let _ = writeln!(
            out,
            "- [{}] {} ({} {}, id {}{notes})",
            e.state().as_str(),
            clip(&e.path, lvl.text.max(48)),
            e.tool,
            e.event,
            st.ids.short(&e.id)
        );
    }
    let ids: Vec<String> = un.iter().skip(shown).map(|e| st.ids.short(&e.id).to_string()).collect();
    rest(out, un.len() - shown, "unresolved changes", &ids, id_budget);
}

/// Foreground commands the end of the session cut off, with their command lines.
fn cut_off_commands(out: &mut String, st: &SessionState, lvl: Level) {
    let lines: Vec<String> = st
        .info
        .commands
        .iter()
        .filter_map(|c| {
            let n = crate::present::command::derived_changes(st.entries.iter(), &c.id);
            crate::present::command::in_flight(c, st.status, st.info.agent(), n, lvl.text)
                .map(|t| format!("- {t} (id {})", st.ids.short(&c.id)))
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Commands in flight ({})", lines.len());
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
}

fn failed_commands(out: &mut String, st: &SessionState, lvl: Level, id_budget: Option<usize>) {
    let failed: Vec<&Command> = st.info.commands.iter().filter(|c| c.status == CommandStatus::Failed).collect();
    if failed.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Failed commands ({})", failed.len());
    let shown = failed.len().min(lvl.items);
    for c in failed.iter().take(shown) {
        let err = c.error.as_deref().unwrap_or("").lines().next().unwrap_or("");
        let _ =
            writeln!(out, "- `{}`: {} (id {})", clip(&c.command, lvl.text), clip(err, lvl.text), st.ids.short(&c.id));
    }
    let ids: Vec<String> = failed.iter().skip(shown).map(|c| st.ids.short(&c.id).to_string()).collect();
    rest(out, failed.len() - shown, "failed commands", &ids, id_budget);
}

/// Subagents with no end (still running, or running when the session died): their work is
/// theirs, listed under them in the unresolved changes.
fn subagents(out: &mut String, st: &SessionState, lvl: Level) {
    let open: Vec<&crate::fold::Subagent> = st.info.subagents_unended().collect();
    if open.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Subagents without an end ({})", open.len());
    for a in open.iter().take(lvl.items) {
        let n = st.unresolved().filter(|e| e.agent_id.is_some() && e.agent_id == a.agent_id).count();
        let _ = writeln!(
            out,
            "- {} ({} unresolved)",
            clip(&crate::present::state::subagent_heading(a, st.status), lvl.text),
            n
        );
    }
}

/// Background processes and whether they still run.
fn background(out: &mut String, procs: &[ProcStatus], lvl: Level, id_budget: Option<usize>) {
    // A foreground command cut off by the session's death is not a background process: its
    // own heading.
    let (cut, bg): (Vec<ProcStatus>, Vec<ProcStatus>) = procs.iter().cloned().partition(|p| p.kind == "in_flight");
    proc_list(out, &bg, "Background processes", "background processes", lvl, id_budget);
    proc_list(
        out,
        &cut,
        "Foreground commands running when the session died",
        "foreground commands running when the session died",
        lvl,
        id_budget,
    );
}

/// One list of [`background`]: `heading`, then each process (`lvl.items` at most, the rest named
/// by id as `rest_what`).
fn proc_list(
    out: &mut String,
    procs: &[ProcStatus],
    heading: &str,
    rest_what: &str,
    lvl: Level,
    id_budget: Option<usize>,
) {
    if procs.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## {heading} ({})", procs.len());
    let shown = procs.len().min(lvl.items);
    for p in procs.iter().take(shown) {
        let state = match p.state {
            "running" => {
                format!("still running (pid {})", p.pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))
            }
            "not_running" => "not running".to_string(),
            _ => "unknown whether it runs".to_string(),
        };
        let what = match (p.kind, p.reported.as_deref()) {
            ("in_flight", _) => ", was running when the session died".to_string(),
            (_, Some(r)) if !matches!(r, "running" | "pending") => format!(", Claude Code reported it {r}"),
            _ => String::new(),
        };
        let restart = if p.restartable {
            format!(
                "; killed, or finished after Claude Code last reported it (walj cannot tell): if it was killed, the user can restart it with `walj procs restart {}`",
                crate::present::shell_quote(&p.short)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "- `{}`{}{}: {state}{what}{restart}",
            clip(&p.command, lvl.text),
            p.task_id.as_deref().map(|t| format!(" (task {t})")).unwrap_or_default(),
            p.cwd.as_deref().map(|c| format!(" in {}", clip(c, lvl.text))).unwrap_or_default(),
        );
    }
    let ids: Vec<String> = procs.iter().skip(shown).map(|p| p.short.clone()).collect();
    rest(out, procs.len() - shown, rest_what, &ids, id_budget);
}

/// Where the conversation is and how it resumes.
fn transcript(out: &mut String, input: &BriefInput<'_>) {
    // Ids in suggested commands are shell words: a bundle's id could be `$(…)`.
    let sid = &crate::present::shell_quote(&input.state.info.sid);
    let _ = writeln!(out, "\n## Transcript");
    let t = &input.state.transcript;
    let agent = input.state.info.agent().label();
    match (&t.original, t.original_exists) {
        (Some(o), true) => {
            let _ = writeln!(out, "- {agent}'s transcript: {o}");
        }
        (Some(o), false) => {
            let _ = writeln!(out, "- {agent}'s transcript {o} is gone.");
        }
        (None, _) => {
            let _ = writeln!(out, "- No transcript path was recorded.");
        }
    }
    if let Some(c) = &input.copy_path {
        let more = if t.copy_has_more() { " (it holds lines the original lacks)" } else { "" };
        let _ = writeln!(out, "- walj's safe copy{more}: {c}; `walj sessions transcript {sid} -o FILE` writes it out.");
    }
    // The agent that ran the session resumes it (`claude --resume`, `codex resume`, …).
    let resume = crate::present::text::resume_line(input.project, &input.state.info);
    match (&t.original, t.original_exists, &input.copy_path) {
        (_, true, _) => {
            let _ = writeln!(out, "- The conversation itself resumes with: {resume}");
        }
        // Resuming needs the agent's own file: never offered without it.
        (Some(_), false, Some(_)) => {
            let _ = writeln!(
                out,
                "- `{resume}` cannot reopen it while the file is gone; writing the copy back first ({}) makes it resumable.",
                // Only Claude Code's place is computed here; another agent's file is the user's to choose.
                if input.state.info.agent() == crate::agents::Agent::ClaudeCode {
                    format!("`walj sessions transcript {sid}` writes it where {agent} finds it for this project")
                } else {
                    format!("`walj sessions transcript {sid} -o FILE`, FILE where {agent} keeps it")
                }
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "- The conversation cannot be resumed (no transcript is left): this brief is what remains."
            );
        }
    }
}

/// Appends the brief as a `handoff` record (kind `resume`) for the next SessionStart,
/// superseding (undoing) an earlier resume brief of the session not delivered yet. A crashed
/// session not announced yet is marked announced: the brief says all the note would.
pub(crate) fn deliver(project: &Project, state: &SessionState, brief: &Brief) -> std::io::Result<String> {
    deliver_to(project, state, brief, None)
}

/// [`deliver`], for the start of one session only when `for_session` names it (the repaired
/// copy of `walj sessions repair`); another session's start leaves it waiting.
pub(crate) fn deliver_to(
    project: &Project,
    state: &SessionState,
    brief: &Brief,
    for_session: Option<&str>,
) -> std::io::Result<String> {
    let session = state.session();
    let action = crate::journal::record::new_id("resume-");
    let mut records = Vec::new();
    for h in state.handoffs.iter().filter(|h| h.delivered.is_none() && !h.undone) {
        if h.record.kind.as_deref() == Some(KIND_RESUME) {
            let mut u = Record::new(op::UNDO, session);
            u.event = crate::journal::event::HANDOFF.into();
            u.target = Some(h.action.clone());
            records.push(u.with(crate::journal::key::REASON, "superseded by a newer resume brief"));
        }
    }
    let mut r = Record::new(op::HANDOFF, session);
    r.event = crate::journal::event::HANDOFF.into();
    r.kind = Some(KIND_RESUME.into());
    r.action = Some(action.clone());
    let mut r = r
        .with(crate::journal::key::BRIEF, brief.text.clone())
        .with(crate::journal::key::ENTRIES, brief.entries.clone());
    if let Some(target) = for_session {
        r = r.with(crate::journal::key::FOR_SESSION, target);
    }
    records.push(r);
    if state.status == SessionStatus::Crashed && !state.info.announced && !brief.entries.is_empty() {
        let mut m = Record::new(op::SESSION, session);
        m.event = crate::journal::event::SESSION.into();
        m.kind = Some(kind::ANNOUNCED.into());
        m.target = Some(session.to_string());
        records.push(m.with(crate::journal::key::BY, "walj sessions resume"));
    }
    project.ensure_dir()?;
    JournalWriter::new(&project.journal).append_all(&records)?;
    Ok(action)
}
