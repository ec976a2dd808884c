//! `walj handoff`: a structured brief for Claude, delivered at the next SessionStart.
//!
//! The brief is built from the journal, never a free summary: for each entry its path,
//! tool, event, state and a compact diff (pre-image → disk: a stat line and the first
//! lines of each hunk, "N more lines" instead of silent cuts), within a size budget;
//! per session the last prompt and the open todos. Recording it appends `resolved
//! how: handed_back` for each entry and one `handoff` record (`brief`, `entries`,
//! `kind: handback`); the SessionStart hook (`announce`) delivers it once. A brief that came
//! in an imported bundle is held: shown to the user, delivered only once the user releases
//! it ([`deliver`], `walj handoff --deliver`).

use std::fmt::Write as _;

use serde_json::Value;
use similar::ChangeTag;

use crate::agents::Agent;
use crate::fold::{Entry, EntryState, Fold, Handoff};
use crate::journal::{Record, how, op};
use crate::present::diff::{DiffModel, DiffOptions, is_binary};
use crate::present::{meaning, one_line};
use crate::project::Project;

use super::{Result, TriageError};

use super::action::{
    Batch, already_resolved, append, check_live, entry_record, find_entries, problems, settled_reason,
};
use super::{DiffMode, DiffSides, diff_sides};

/// Most characters of a brief (the SessionStart hook adds it to at most ~9,500).
pub const MAX_BRIEF: usize = 8_000;
/// Changed lines shown per hunk.
const HUNK_LINES: usize = 8;
/// Longest code line shown.
const LINE_CHARS: usize = 160;
/// Room kept for each entry not written yet (its header line).
const ENTRY_RESERVE: usize = 160;

/// The brief written for the coding agent's next session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    /// The text delivered as `additionalContext` (at most [`MAX_BRIEF`] chars).
    pub text: String,
    /// How the entries' session resumes (`claude --resume <id>`, `codex resume <id>`, …) when
    /// they come from one resumable session.
    pub resume_line: Option<String>,
    /// The coding agent the entries' sessions ran, when it is one.
    pub agent: Option<Agent>,
    /// The entries in the brief, handed back unless printed only (full ids).
    pub entries: Vec<String>,
    /// Entries that did not fit in the size budget (not handed back; hand them back
    /// separately).
    pub left_out: Vec<String>,
    /// The `handoff` record's action id (`None` when only printed).
    pub action: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandoffOptions {
    /// Only build and return the brief; record nothing.
    pub print_only: bool,
    /// Act on entries of a live session.
    pub force: bool,
}

/// Builds the brief for `ids` (else the unresolved entries of `session`, else every
/// unresolved entry) and, unless `print_only`, records it for the next SessionStart.
/// Entries already resolved or settled, and (without `force`) entries of a live session,
/// fail the call with nothing recorded.
pub fn handoff(
    project: &Project,
    fold: &Fold,
    ids: &[String],
    session: Option<&str>,
    opts: HandoffOptions,
) -> Result<Brief> {
    handoff_noted(project, fold, ids, session, opts, None)
}

/// [`handoff`] of the entries `ids`, with `note` (what another command found, e.g. `walj
/// bisect`'s culprit and failing output) before the journal's brief, within [`MAX_BRIEF`].
pub(crate) fn handoff_with_note(project: &Project, fold: &Fold, ids: &[String], note: &str) -> Result<Brief> {
    handoff_noted(project, fold, ids, None, HandoffOptions::default(), Some(note))
}

fn handoff_noted(
    project: &Project,
    fold: &Fold,
    ids: &[String],
    session: Option<&str>,
    opts: HandoffOptions,
    note: Option<&str>,
) -> Result<Brief> {
    let entries: Vec<&Entry> = if !ids.is_empty() {
        if session.is_some() {
            return Err(TriageError::Refused("give entry ids or --session, not both".to_string()));
        }
        find_entries(fold, ids)?
    } else if let Some(s) = session {
        let s = fold.find_session(s).map_err(|e| super::session_error(s, e))?;
        let v: Vec<&Entry> = fold.entries_of(&s.session).filter(|e| e.is_unresolved()).collect();
        if v.is_empty() {
            return Err(TriageError::Refused(format!(
                "session {} has nothing unresolved to hand back; name entries by id to hand back others",
                fold.ids.session(&s.session)
            )));
        }
        v
    } else {
        let v: Vec<&Entry> = fold.unresolved().collect();
        if v.is_empty() {
            return Err(TriageError::Refused(
                "nothing unresolved to hand back; name entries by id (`walj log` lists them)".to_string(),
            ));
        }
        v
    };
    let mut errors = Vec::new();
    for e in &entries {
        if let Some(why) = already_resolved(fold, e) {
            errors.push(why);
        } else if e.state() == EntryState::NotApplied {
            errors.extend(settled_reason(fold, e));
        } else if !opts.print_only
            && let Err(why) = check_live(fold, e, opts.force)
        {
            errors.push(why);
        }
    }
    if !errors.is_empty() {
        return Err(TriageError::Refused(problems(&errors)));
    }
    let mut brief = build_brief(project, fold, &entries);
    if let Some(note) = note {
        let room = MAX_BRIEF.saturating_sub(brief.text.len() + 2);
        let mut end = note.len().min(room);
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        brief.text = format!("{}\n\n{}", &note[..end], brief.text);
    }
    if opts.print_only {
        return Ok(brief);
    }
    let mut batch = Batch::new();
    let mut records = Vec::new();
    for e in entries.iter().filter(|e| brief.entries.contains(&e.id)) {
        let mut r = entry_record(op::RESOLVED, e);
        r.how = Some(how::HANDED_BACK.to_string());
        records.push(batch.stamp(r));
    }
    let first = entries.iter().find(|e| brief.entries.contains(&e.id)).map_or("", |e| e.session.as_str());
    let mut h = Record::new(op::HANDOFF, first);
    h.event = crate::journal::event::HANDOFF.to_string();
    h.kind = Some(crate::journal::kind::HANDBACK.to_string());
    let h = batch
        .stamp(h)
        .with("brief", brief.text.clone())
        .with("entries", Value::from(brief.entries.iter().map(|s| Value::from(s.as_str())).collect::<Vec<_>>()));
    brief.action = h.action.clone();
    records.push(h);
    append(project, &records)?;
    Ok(brief)
}

fn state_text(e: &Entry) -> &'static str {
    match e.state() {
        EntryState::Persisted => "applied and verified on disk",
        _ => meaning(e.state()),
    }
}

/// Builds the brief text within [`MAX_BRIEF`].
fn build_brief(project: &Project, fold: &Fold, entries: &[&Entry]) -> Brief {
    // Sessions in order of their first entry.
    let mut sessions: Vec<&str> = Vec::new();
    for e in entries {
        if !sessions.contains(&e.session.as_str()) {
            sessions.push(&e.session);
        }
    }
    let n = entries.len();
    // Who left them: the sessions' agents, by name.
    let agent_of = |s: &str| fold.session(s).map(|i| i.agent()).unwrap_or(Agent::ClaudeCode);
    let mut agents: Vec<Agent> = Vec::new();
    for s in &sessions {
        if !agents.contains(&agent_of(s)) {
            agents.push(agent_of(s));
        }
    }
    let mut text = format!(
        "walj hand-back: the user asks you to review {n} change{} that {} left unfinished (a crash or an interrupted turn) and to finish or repair {}.\n",
        if n == 1 { "" } else { "s" },
        agents.iter().map(|a| a.label()).collect::<Vec<_>>().join(" and "),
        if n == 1 { "it" } else { "them" }
    );
    let footer = "\nEach diff compares the file before the tool ran with the file on disk now; read the files before changing them, the disk is the truth. When a change is complete and correct, tell the user. Record nothing yourself: `walj mark`, `walj revert`, `walj undo` and `walj handoff` refuse to run in your tools without `--yes`; add it only when the user asks for that exact command.";
    let mut included = Vec::new();
    let mut left_out = Vec::new();
    let mut index = 0usize;
    // The brief is kept in the journal: never show what the user keeps out of `.walj/`.
    let (_, matcher) = crate::config::Config::load_or_default(&project.config_path(), |_| {});
    let never = |e: &Entry| {
        e.nocap.as_deref() == Some("never_capture") || matcher.as_ref().is_some_and(|m| m.never_capture(&e.path))
    };
    for s in &sessions {
        let group: Vec<&&Entry> = entries.iter().filter(|e| e.session == *s).collect();
        let mut head = String::new();
        match fold.session(s) {
            Some(info) => {
                // Claude Code's sessions as before; another agent's named.
                let who = match info.agent() {
                    Agent::ClaudeCode => String::new(),
                    a => format!("{}, ", a.label()),
                };
                let _ = writeln!(head, "\nSession {} ({who}{}):", info.session, info.status());
                if let Some(p) = info.last_prompt() {
                    let _ = writeln!(head, "The user's last request was: {}", one_line(p, 300));
                }
                let open: Vec<String> = info
                    .todos
                    .iter()
                    .filter(|t| t.is_open())
                    .map(|t| format!("[{}] {}", t.status, one_line(&t.content, 120)))
                    .collect();
                if !open.is_empty() {
                    let _ = writeln!(head, "Open todos: {}", open.join("; "));
                }
            }
            None => {
                let _ = writeln!(head, "\nSession {s}:");
            }
        }
        if text.len() + head.len() + footer.len() > MAX_BRIEF {
            left_out.extend(group.iter().map(|e| e.id.clone()));
            continue;
        }
        text.push_str(&head);
        for e in &group {
            index += 1;
            let line = format!(
                "{index}. {} ({} {}): {}; entry {}\n",
                e.path,
                e.tool,
                e.event,
                state_text(e),
                fold.ids.short(&e.id)
            );
            // Entries after this one, each keeping room for its header line.
            let later = entries.len().saturating_sub(included.len() + left_out.len() + 1);
            let room = MAX_BRIEF.saturating_sub(text.len() + footer.len() + later * ENTRY_RESERVE);
            if line.len() > room {
                left_out.push(e.id.clone());
                index -= 1;
                continue;
            }
            text.push_str(&line);
            let budget = (room - line.len()) / (later + 1);
            if never(e) {
                text.push_str(
                    "   (content not shown: the path matches a never-capture pattern; read the file itself)\n",
                );
            } else {
                text.push_str(&compact_diff(project, e, budget));
            }
            included.push(e.id.clone());
        }
    }
    if !left_out.is_empty() {
        let _ = write!(text, "\n({} more entries did not fit in this brief.)\n", left_out.len());
    }
    text.push_str(footer);
    let resume_line = match sessions.as_slice() {
        [s] if s.len() > 8 && !included.is_empty() => Some(match fold.session(s) {
            Some(info) => crate::present::text::resume_line(project, info),
            None => agent_of(s).resume_hint(s),
        }),
        _ => None,
    };
    let agent = match agents.as_slice() {
        [a] => Some(*a),
        _ => None,
    };
    Brief { text, resume_line, agent, entries: included, left_out, action: None }
}

/// The entry's change (pre-image → disk) in at most `budget` chars, indented.
fn compact_diff(project: &Project, e: &Entry, budget: usize) -> String {
    let sides = diff_sides(project, e, DiffMode::Disk);
    let body = render_compact(&sides, budget.saturating_sub(60));
    let mut out = String::new();
    for l in body.lines() {
        let _ = writeln!(out, "   {l}");
    }
    if out.len() > budget {
        // Should not happen (the renderer counts), but never exceed the budget.
        let mut end = budget.saturating_sub(40);
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        let cut = out[end..].lines().count();
        out.truncate(end);
        let _ = writeln!(out, "\n   … {cut} more lines");
    }
    out
}

fn clip_line(s: &str) -> String {
    let s = s.strip_suffix('\n').unwrap_or(s);
    if s.chars().count() > LINE_CHARS {
        let mut t: String = s.chars().take(LINE_CHARS).collect();
        t.push('…');
        t
    } else {
        s.to_string()
    }
}

fn render_compact(sides: &DiffSides, budget: usize) -> String {
    let (old, new) = (&sides.old, &sides.new);
    for side in [old, new] {
        if let Some(note) = side.note.as_ref().filter(|_| side.bytes.is_none()) {
            return format!("(no diff: {} {note})\n", side.label);
        }
    }
    let a = old.bytes.as_deref().unwrap_or_default();
    let b = new.bytes.as_deref().unwrap_or_default();
    if old.is_absent() && new.is_absent() {
        return "(the file does not exist, before or now)\n".to_string();
    }
    if a == b && old.is_absent() == new.is_absent() {
        return "(no difference: the file on disk equals its state before the tool ran)\n".to_string();
    }
    if is_binary(a) || is_binary(b) {
        return format!("(binary file: {} → {} bytes)\n", a.len(), b.len());
    }
    let model = DiffModel::new(sides, DiffOptions::BRIEF);
    let (added, removed) = (model.added, model.removed);
    let mut out = String::new();
    let what = if old.is_absent() {
        "new file"
    } else if new.is_absent() {
        "file deleted"
    } else {
        "changed"
    };
    let _ = writeln!(out, "{what}: +{added} -{removed} lines");
    let hunks = model.hunks(1);
    let total = hunks.len();
    for (i, hunk) in hunks.iter().enumerate() {
        let mut block = format!("{}\n", hunk.header());
        let changes: Vec<_> = hunk.lines(&model).collect();
        for c in changes.iter().take(HUNK_LINES) {
            let sign = match c.tag {
                ChangeTag::Delete => '-',
                ChangeTag::Insert => '+',
                ChangeTag::Equal => ' ',
            };
            let _ = writeln!(block, "{sign}{}", clip_line(c.text));
        }
        if changes.len() > HUNK_LINES {
            let _ = writeln!(block, "… {} more lines in this hunk", changes.len() - HUNK_LINES);
        }
        if out.len() + block.len() + 60 > budget {
            let _ = writeln!(out, "… {} more hunk{} not shown", total - i, if total - i == 1 { "" } else { "s" });
            break;
        }
        out.push_str(&block);
    }
    out
}

/// Briefs an imported bundle brought, waiting for the user (issue 13 item 12): never
/// delivered to Claude until released by [`deliver`].
pub(crate) fn held(fold: &Fold) -> Vec<&Handoff> {
    fold.pending_handoffs().filter(|h| h.held).collect()
}

/// Releases held briefs (`walj handoff --deliver [ACTION...]`, all held ones when none are
/// named): each gets a `released` record, and the next SessionStart delivers it. Returns the
/// briefs released.
pub(crate) fn deliver<'f>(project: &Project, fold: &'f Fold, actions: &[String]) -> Result<Vec<&'f Handoff>> {
    let waiting = held(fold);
    let chosen: Vec<&Handoff> = if actions.is_empty() {
        waiting
    } else {
        let mut v = Vec::new();
        for a in actions {
            let found: Vec<&&Handoff> = waiting.iter().filter(|h| h.action.starts_with(a.as_str())).collect();
            match found.as_slice() {
                [h] => v.push(**h),
                [] => {
                    return Err(TriageError::Refused(format!("no held brief {a} (`walj handoff --held` lists them)")));
                }
                _ => return Err(TriageError::Refused(format!("{a} names several held briefs; give more characters"))),
            }
        }
        v
    };
    if chosen.is_empty() {
        return Err(TriageError::Refused("no imported brief is waiting to be delivered".to_string()));
    }
    let records: Vec<Record> = chosen
        .iter()
        .map(|h| {
            // No session: a record written here, never one a bundle can carry.
            let mut r = Record::new(op::SESSION, "");
            r.event = crate::journal::event::SESSION.to_string();
            r.kind = Some(crate::journal::kind::RELEASED.to_string());
            r.target = Some(h.action.clone());
            r
        })
        .collect();
    append(project, &records)?;
    Ok(chosen)
}
