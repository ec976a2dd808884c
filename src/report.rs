//! `walj recover`, `walj log`, `walj status`: the journal read for people and scripts.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::fold::{Entry, EntryState, Fold, SessionInfo, SessionStatus, ShortIds};
use crate::journal::Blob;
use crate::present::{self, hms, human_ts, one_line, plural, safe, shown};
use crate::style::Style;

pub mod diff;
pub mod sync;

fn blob_json(b: &Option<Blob>) -> Value {
    match b {
        None => Value::Null,
        Some(Blob::Absent) => json!("absent"),
        Some(Blob::Id(id)) => json!(id),
    }
}

/// One entry as JSON (the `recover --json` entry shape, plus detail fields); `short` is the id
/// as `ids` shows it.
pub(crate) fn entry_json(e: &Entry, ids: &ShortIds) -> Value {
    let mut v = json!({
        "id": e.id,
        "short": ids.short(&e.id),
        "event": e.event,
        "path": e.path,
        "tool": e.tool,
        "status": e.state().as_str(),
        "ts": e.ts,
    });
    let o = v.as_object_mut().expect("object literal");
    if let Some(t) = &e.applied_ts {
        o.insert("applied_ts".into(), json!(t));
    }
    if e.before.is_some() {
        o.insert("before".into(), blob_json(&e.before));
    }
    if e.after.is_some() {
        o.insert("after".into(), blob_json(&e.after));
    }
    if let Some(n) = &e.nocap {
        o.insert("nocap".into(), json!(n));
    }
    if let Some(k) = &e.kind {
        o.insert("kind".into(), json!(k));
    }
    if let Some(t) = &e.link_before {
        o.insert("link_before".into(), json!(t));
    }
    if let Some(t) = &e.link_after {
        o.insert("link_after".into(), json!(t));
    }
    if let Some(m) = &e.mode_before {
        o.insert("mode_before".into(), json!(m));
    }
    if let Some(m) = &e.mode_after {
        o.insert("mode_after".into(), json!(m));
    }
    if e.outside {
        o.insert("outside".into(), json!(true));
    }
    if let Some(p) = &e.parent {
        o.insert("parent".into(), json!(p));
    }
    if let Some(err) = &e.error {
        o.insert("error".into(), json!(err));
    }
    if e.imported {
        o.insert("imported".into(), json!(true));
    }
    if e.background {
        o.insert("background".into(), json!(true));
    }
    if e.unfinished {
        // Derived from a Bash command that never finished (killed or interrupted mid-run).
        o.insert("unfinished".into(), json!(true));
    }
    if let Some(c) = e.disk_check {
        // An in-flight file tool call: completed / unchanged / other, from the disk now.
        o.insert("disk".into(), json!(c));
    }
    if let Some(i) = &e.intended {
        o.insert("intended".into(), json!(i));
    }
    if e.still_running {
        // Its command's processes still run: not recorded yet, may change further.
        o.insert("still_running".into(), json!(true));
    }
    if let Some(c) = &e.changed {
        o.insert("changed".into(), json!(c));
    }
    if let Some(a) = &e.agent_id {
        o.insert("agent_id".into(), json!(a));
    }
    if e.uncertain {
        use crate::journal::attribution::{AFTER_STOP, UNCERTAIN, UNDECIDED};
        let value = match (e.after_stop, e.undecided, e.redated) {
            (true, _, _) => AFTER_STOP,
            (false, true, _) => UNDECIDED,
            (false, false, true) => crate::journal::attribution::REDATED,
            (false, false, false) => UNCERTAIN,
        };
        o.insert("attribution".into(), json!(value));
        if let Some(t) = e.end_seen.as_ref().filter(|_| e.after_stop) {
            o.insert("end_seen".into(), json!(t));
        }
        if let Some(w) = &e.watch_absent {
            o.insert("watch_absent".into(), json!(w));
        }
        if !e.candidates.is_empty() {
            o.insert("candidates".into(), json!(e.candidates));
        }
        if e.candidate_commands.iter().any(|t| !t.is_empty()) {
            o.insert("candidate_commands".into(), json!(e.candidate_commands));
        }
    }
    if let Some(t) = &e.verified {
        o.insert("verified".into(), json!(t));
    }
    if let Some(a) = e.last_action() {
        o.insert("resolution".into(), json!({"how": a.how, "ts": a.ts, "action": a.action}));
    }
    v
}

pub(crate) fn session_json(s: &SessionInfo, status: SessionStatus, entries: Vec<Value>) -> Value {
    let mut v = session_json_fields(s, status, entries);
    // Why the last turn ended without a Stop (StopFailure), when Claude Code said so.
    if let Some(reason) = &s.turn_failure {
        v["turn_failure"] = json!(reason);
    }
    if !s.subagents.is_empty() {
        // Each subagent, and whether it ended; `running_at_death`: no end in a session that is gone.
        let gone = matches!(status, SessionStatus::Crashed | SessionStatus::Ended);
        let subs: Vec<Value> = s
            .subagents
            .iter()
            .map(|a| {
                json!({
                    "call": a.call, "agent_id": a.agent_id, "agent_type": a.kind, "description": a.description,
                    "started": a.started, "last_ts": a.last_ts, "background": a.background,
                    "ended": a.ended.as_ref().map(|(ts, how)| json!({"ts": ts, "how": how})),
                    "running_at_death": gone && a.ended.is_none(),
                })
            })
            .collect();
        v["subagents"] = json!(subs);
    }
    v
}

fn session_json_fields(s: &SessionInfo, status: SessionStatus, entries: Vec<Value>) -> Value {
    let (done, total) = s.todos_done();
    let mut v = json!({
        "session": s.session,
        "sid": s.sid,
        "agent": s.agent().name(),
        "state": status.as_str(),
        "started": s.started.as_ref().unwrap_or(&s.first_ts),
        "last_ts": s.last_ts,
        "branch": s.branch,
        "last_prompt": s.last_prompt(),
        "todos": {"done": done, "total": total, "open": s.todos.iter().filter(|t| t.is_open()).collect::<Vec<_>>()},
        "imported": s.imported,
        "entries": entries,
    });
    if !s.git_moves.is_empty() {
        v["git_moves"] = s.git_moves.iter().map(present::git::git_move_json).collect();
    }
    let cut_off: Vec<Value> = s
        .commands
        .iter()
        .filter(|c| c.status == crate::fold::CommandStatus::InFlight && !c.background)
        .map(|c| {
            json!({
                "id": c.id,
                "command": c.command,
                "ts": c.ts,
                "cwd": c.cwd,
                // Processes it started that still run (null: none, or unknown on this platform).
                "running": c.running,
            })
        })
        .collect();
    if !cut_off.is_empty() {
        v["commands_in_flight"] = json!(cut_off);
    }
    let left: Vec<Value> = s
        .commands
        .iter()
        .filter(|c| present::command::left_out(c, 60).is_some())
        .map(|c| json!({"id": c.id, "command": c.command, "ts": c.ts, "unseen": c.unseen}))
        .collect();
    if !left.is_empty() {
        v["commands_left_out"] = json!(left);
    }
    v
}

/// A session with a command whose changes are not all in its entries: shown by `recover`
/// even when every entry is resolved (the rest is not).
fn has_left_out(s: &SessionInfo) -> bool {
    s.commands.iter().any(|c| present::command::left_out(c, 60).is_some())
}

/// A crashed or ended session whose cut-off command still runs: shown even before it changed
/// anything.
fn has_running_command(s: &SessionInfo) -> bool {
    s.commands.iter().any(|c| c.running.is_some())
}

/// The images Bash Posts named in the journal and a settle pass has not copied into the store
/// yet ([`crate::store::pending`]), as one line for every reader; `None` when none wait.
pub(crate) fn pending_line(project: &crate::project::Project) -> Option<String> {
    let p = crate::store::Store::new(project.store_dir()).pending_summary();
    (p.spills > 0).then(|| {
        format!(
            "pending: {} named in the journal, not yet copied into .walj/store (a detached pass copies them; \
             the next walj hook, Stop, `walj revert` or `walj diff` finishes it)",
            plural(p.objects, "image is", "images are")
        )
    })
}

/// `pending_images` of `recover --json`: `{"spills", "objects"}` while some wait.
pub(crate) fn pending_json(project: &crate::project::Project) -> Option<Value> {
    let p = crate::store::Store::new(project.store_dir()).pending_summary();
    (p.spills > 0).then(|| json!({"spills": p.spills, "objects": p.objects}))
}

/// `recover --json`: `{"unresolved": N, "sessions": [...]}` (DESIGN §7).
pub(crate) fn recover_json(fold: &Fold) -> Value {
    let mut sessions = Vec::new();
    let mut total = 0;
    for s in &fold.sessions {
        let entries: Vec<Value> =
            fold.entries_of(&s.session).filter(|e| e.is_unresolved()).map(|e| entry_json(e, &fold.ids)).collect();
        if entries.is_empty() && !has_running_command(s) && !has_left_out(s) {
            continue;
        }
        total += entries.len();
        let mut v = session_json(s, s.status(), entries);
        let moves =
            moves_json(present::command::folder_moves(fold.entries_of(&s.session).filter(|e| e.is_unresolved())));
        if !moves.is_empty() {
            v["folder_moves"] = json!(moves);
        }
        sessions.push(v);
    }
    json!({"unresolved": total, "handed_back_waiting": handed_back_waiting(fold), "sessions": sessions})
}

/// Folder moves ([`present::command::folder_moves`]) as JSON: `{"command", "from", "to", "files"}`.
pub(crate) fn moves_json(moves: Vec<present::command::Moved>) -> Vec<Value> {
    moves.into_iter().map(|m| json!({"command": m.command, "from": m.from, "to": m.to, "files": m.files})).collect()
}

/// Entries handed back whose brief no session has received yet (not withdrawn, not held
/// from a bundle): triaged, but not an all-clear until the next session starts.
pub(crate) fn handed_back_waiting(fold: &Fold) -> usize {
    let ids: std::collections::BTreeSet<&str> = fold
        .pending_handoffs()
        .filter(|h| !h.held)
        .flat_map(|h| h.entries.iter().map(String::as_str))
        .filter(|id| fold.entry(id).is_none_or(|e| e.state() == crate::fold::EntryState::HandedBack))
        .collect();
    ids.len()
}

fn status_badge(st: SessionStatus, style: &Style) -> String {
    style.tone(present::session_tone(st), st.as_str())
}

/// The state name padded to a column, in its colour.
pub(crate) fn state_colored(st: EntryState, style: &Style) -> String {
    style.tone(present::tone(st), &format!("{:<11}", st.as_str()))
}

/// Writes the session's header lines (shared by recover and sessions views).
/// `entries`: the session's entries (for the changes of a command cut off mid-run).
pub(crate) fn session_header(
    out: &mut String,
    s: &SessionInfo,
    status: SessionStatus,
    entries: &[&Entry],
    ids: &ShortIds,
    style: &Style,
) {
    let mut head = format!(
        "{} {}  {}",
        style.bold("session"),
        style.session(ids.session_split(&s.session), 0),
        status_badge(status, style)
    );
    // Claude Code's sessions are the default; another agent's are named.
    let agent = s.agent();
    if agent != crate::agents::Agent::ClaudeCode {
        let _ = write!(head, "  {}", agent.label());
    }
    let _ = write!(head, "  started {}", human_ts(s.started.as_ref().unwrap_or(&s.first_ts)));
    if let Some(b) = &s.branch {
        // A command moved HEAD: the branch it is on now, and where the session started.
        match s.git_moves.last().and_then(|m| m.to.branch.as_deref()) {
            Some(now) if now != b => {
                let _ = write!(head, "  branch {} (started on {})", present::safe(now), present::safe(b));
            }
            _ => {
                let _ = write!(head, "  branch {}", present::safe(b));
            }
        }
    }
    if s.imported {
        head.push_str("  (imported from transcript)");
    }
    let _ = writeln!(out, "{head}");
    let _ = writeln!(out, "  {}", style.dim(&safe(&s.session)));
    if let Some(reason) = &s.turn_failure {
        let _ = writeln!(out, "  last turn: {}", style.red(&safe(reason)));
    }
    if let Some(p) = s.last_prompt() {
        let _ = writeln!(out, "  prompt: \"{}\"", one_line(p, 100));
    }
    for m in &s.git_moves {
        let _ = writeln!(out, "  git: {}", present::git::git_move(m));
    }
    if !s.todos.is_empty() {
        let (done, total) = s.todos_done();
        let open: Vec<String> = s
            .todos
            .iter()
            .filter(|t| t.is_open())
            .map(|t| format!("[{}] {}", shown(&t.status), one_line(&t.content, 60)))
            .collect();
        let _ = writeln!(
            out,
            "  todos: {done}/{total} done{}",
            if open.is_empty() { String::new() } else { format!(" — {}", open.join("; ")) }
        );
    }
    for c in s.commands.iter().filter(|c| c.background) {
        let _ = writeln!(
            out,
            "  background: {}{}",
            one_line(&c.command, 80),
            c.task_id.as_deref().map(|t| format!(" ({})", shown(t))).unwrap_or_default()
        );
    }
    for c in s.commands.iter().filter(|c| c.status == crate::fold::CommandStatus::Failed) {
        let _ = writeln!(
            out,
            "  failed command: {} — {}",
            one_line(&c.command, 60),
            one_line(c.error.as_deref().unwrap_or(""), 60)
        );
    }
    for c in &s.commands {
        if let Some(t) = present::command::left_out(c, 60) {
            let _ = writeln!(out, "  {t}");
        }
    }
    // A folder moved by a command: its files' deletions and creations below are one move.
    for m in present::command::folder_moves(entries.iter().copied()) {
        let cmd = s.commands.iter().find(|c| c.id == m.command).map(|c| c.command.as_str());
        let _ = writeln!(out, "  {}", present::command::moved_line(&m, cmd, 60));
    }
    for c in &s.commands {
        let changes = present::command::derived_changes(entries.iter().copied(), &c.id);
        if let Some(p) = present::command::in_flight_parts(c, status, s.agent(), changes, 80) {
            let whole = match &p.detail {
                None => format!("{}: {}", p.what, p.command),
                Some(d) => format!("{}: {} — {d}", p.what, p.command),
            };
            if 2 + present::width(&whole) <= LINE_BUDGET {
                let _ = writeln!(out, "  {whole}");
            } else {
                // Too wide for one line: what became of it, then the command on a line of its own.
                let detail = p.detail.map(|d| format!(" — {d}")).unwrap_or_default();
                let _ = writeln!(out, "  {}{detail}", p.what);
                let _ = writeln!(out, "      {}", p.command);
            }
        }
    }
    // Its subagents: each one's entries are marked with it below; one with no end is said.
    for a in &s.subagents {
        let n = entries.iter().filter(|e| e.agent_id.is_some() && e.agent_id == a.agent_id).count();
        if n == 0 && a.ended.is_some() {
            continue;
        }
        let tail = if n == 0 { String::new() } else { format!(" — {} below", plural(n, "entry", "entries")) };
        let id = a.agent_id.as_deref().map(|i| format!(" [{}]", safe(short_agent(i)))).unwrap_or_default();
        let _ = writeln!(out, "  {}{id}{tail}", safe(&present::state::subagent_heading(a, status)));
    }
}

/// An agent id as shown beside its entries: its first 8 characters.
fn short_agent(id: &str) -> &str {
    id.char_indices().nth(8).map_or(id, |(i, _)| &id[..i])
}

/// `recover` as text: unresolved entries grouped by session, then event.
pub(crate) fn recover_text(fold: &Fold, style: &Style) -> String {
    let mut out = String::new();
    let total = fold.unresolved().count();
    let running = fold.sessions.iter().any(|s| has_running_command(s) || has_left_out(s));
    let waiting = handed_back_waiting(fold);
    if total == 0 && !running {
        if waiting > 0 {
            let _ = writeln!(
                out,
                "Recovery: nothing left to triage here, but {} handed back, waiting for the next session \
                 (its brief is given at the next session start in this project; `walj undo` takes it back).",
                plural(waiting, "entry is", "entries are")
            );
        } else {
            out.push_str("Recovery: no unresolved journal entries. Every recorded change was verified or triaged.\n");
        }
        return out;
    }
    let nsess = fold.sessions.iter().filter(|s| fold.entries_of(&s.session).any(|e| e.is_unresolved())).count();
    let _ = writeln!(
        out,
        "Recovery: {} in {}.\n",
        plural(total, "unresolved entry", "unresolved entries"),
        plural(nsess, "session", "sessions")
    );
    if waiting > 0 {
        let _ = writeln!(
            out,
            "{} handed back, waiting for the next session.\n",
            plural(waiting, "entry is", "entries are")
        );
    }
    let shown_sessions: Vec<&SessionInfo> = fold
        .sessions
        .iter()
        .filter(|s| fold.entries_of(&s.session).any(|e| e.is_unresolved()) || has_running_command(s) || has_left_out(s))
        .collect();
    // Several sessions: one line each first, so the whole picture fits the first screen.
    if shown_sessions.len() > 1 {
        for s in &shown_sessions {
            let n = fold.entries_of(&s.session).filter(|e| e.is_unresolved()).count();
            let head = |style: &Style| {
                format!(
                    "  {}  {}  {}  started {}",
                    style.session(fold.ids.session_split(&s.session), 0),
                    status_badge(s.status(), style),
                    plural(n, "entry", "entries"),
                    human_ts(s.started.as_ref().unwrap_or(&s.first_ts)),
                )
            };
            // The prompt takes what the line's budget leaves (at least 20 columns).
            let used = present::width(&head(&Style { color: false }));
            let room = LINE_BUDGET.saturating_sub(used + 5).max(20); // `  "…"`, and `…` when cut
            let prompt = s.prompts.last().map(|p| format!("  \"{}\"", one_line(&p.text, room))).unwrap_or_default();
            let _ = writeln!(out, "{}{prompt}", head(style));
        }
        out.push('\n');
    }
    for s in shown_sessions {
        let entries: Vec<&Entry> = fold.entries_of(&s.session).filter(|e| e.is_unresolved()).collect();
        session_header(&mut out, s, s.status(), &entries, &fold.ids, style);
        entries_by_event(&mut out, &entries, &fold.ids, style);
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "{}",
        style.dim("Next: walj diff ID · walj mark ID --done · walj revert ID · walj handoff --session SID · walj tui")
    );
    out
}

/// Entries grouped by event, one line each (id, state, path, tool, time, marks): the body of a
/// session in `recover` (this journal's and other machines').
///
/// A line keeps its marks when it fits [`LINE_BUDGET`] columns. Otherwise its marks go below the
/// session's groups as numbered notes, each said once however many lines share it (a killed
/// command's changes share its name and who else may have made them), and the line carries
/// their numbers: `[1] [2]`.
pub(crate) fn entries_by_event(out: &mut String, entries: &[&Entry], ids: &ShortIds, style: &Style) {
    let mut by_event: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for e in entries {
        by_event.entry(e.event.as_str()).or_default().push(e);
    }
    let width = entries.iter().map(|e| present::width(&present::state::entry_path(e))).max().unwrap_or(0).min(60);
    let id_width = id_width(entries, ids);
    let mut notes: Vec<(String, usize)> = Vec::new();
    for (event, es) in by_event {
        // In words, as the TUI's groups ("File modified"), not the journal's field value.
        let title = present::text::event_title(event);
        let _ = writeln!(out, "  {}: {}", style.bold(&title), plural(es.len(), "entry", "entries"));
        for e in es {
            let path = present::state::entry_path(e);
            let marks = entry_marks(e, ids);
            // id, state (11), path, tool (12), time (8), with their separators.
            let line = 4 + id_width + 2 + 11 + 2 + width.max(present::width(&path)) + 2 + 12 + 2 + 8;
            let inline = marks.join("; ");
            let tail = if marks.is_empty() {
                String::new()
            } else if line + 2 + present::width(&inline) <= LINE_BUDGET {
                format!("  {}", style.dim(&inline))
            } else {
                let numbers: Vec<String> = marks
                    .into_iter()
                    .map(|m| {
                        let n = match notes.iter().position(|(t, _)| *t == m) {
                            Some(i) => i,
                            None => {
                                notes.push((m, 0));
                                notes.len() - 1
                            }
                        };
                        notes[n].1 += 1;
                        format!("[{}]", n + 1)
                    })
                    .collect();
                format!("  {}", style.dim(&numbers.join(" ")))
            };
            let _ = writeln!(
                out,
                "    {}  {}  {}  {}  {}{tail}",
                style.id(ids.split(&e.id), id_width),
                state_colored(e.state(), style),
                present::pad(&path, width),
                present::pad(&e.tool, 12),
                hms(e.when()),
            );
        }
    }
    for (i, (text, n)) in notes.iter().enumerate() {
        let shared = if *n > 1 { format!(" ({n} entries)") } else { String::new() };
        let _ = writeln!(out, "  {}", style.dim(&format!("[{}] {text}{shared}", i + 1)));
    }
}

/// The columns an entry's line of `recover` may take with its marks inline; past it they are
/// numbered notes below the session's groups.
const LINE_BUDGET: usize = 100;

/// How much of a command line an entry's line of `recover` shows (the session's header shows 80).
const SHORT_COMMAND: usize = 40;

/// What the state alone does not say: a checkpoint's audit, a command that never finished
/// (and which), who else may have made the change ([`present::state`]'s words).
fn entry_marks(e: &Entry, ids: &ShortIds) -> Vec<String> {
    let mut marks: Vec<String> = Vec::new();
    if e.verified.is_some() && e.state() == crate::fold::EntryState::Applied {
        marks.push("on disk, verified (its turn never finished)".into());
    }
    if e.unfinished {
        // The command is named in full once, above (the session's commands); here shortened.
        marks.push(
            safe(&present::state::entry_meaning_short(e, crate::fold::SessionStatus::Crashed, SHORT_COMMAND))
                .into_owned(),
        );
    }
    if let Some(a) = &e.agent_id {
        marks.push(format!("by subagent [{}]", safe(short_agent(a))));
    }
    if let Some(v) = present::state::disk_verdict(e, |id| safe(ids.short(id)).into_owned()) {
        marks.push(v);
    }
    let others = present::state::candidate_names(e, SHORT_COMMAND, |c| safe(ids.short(c)).into_owned());
    if let Some(a) = present::state::attribution(e, &others) {
        marks.push(a);
    }
    marks
}

/// The width of the id column: the longest id shown.
pub(crate) fn id_width(entries: &[&Entry], ids: &ShortIds) -> usize {
    entries.iter().map(|e| ids.short(&e.id).chars().count()).max().unwrap_or(0)
}

/// `walj log`: entries (all states) newest last.
pub(crate) fn log_text(entries: &[&Entry], ids: &ShortIds, style: &Style) -> String {
    let mut out = String::new();
    let id_width = id_width(entries, ids);
    let session_width = entries.iter().map(|e| ids.session(&e.session).chars().count()).max().unwrap_or(0);
    for e in entries {
        let _ = writeln!(
            out,
            "{}  {}  {}  {}  {}  {}",
            human_ts(&e.ts),
            style.session(ids.session_split(&e.session), session_width),
            state_colored(e.state(), style),
            style.id(ids.split(&e.id), id_width),
            present::pad(&e.event, 16),
            shown(&present::state::entry_path(e))
        );
    }
    out
}
