//! Applying one record to the fold: a short dispatch on the op, one small function per op.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use super::model::{
    Action, Command, CommandStatus, Entry, EntryState, Handoff, HeadMove, Prompt, SessionInfo, Subagent, Todo,
};
use super::{Fold, FoldOptions};
use crate::journal::record::{Record, how, key, kind, op, parse_record, tool};
use crate::journal::view::RecordView;
use crate::procinfo::ProcRef;

/// One line being applied: its number, bytes (for the full parse), view and session key.
struct Line<'a> {
    no: u64,
    bytes: &'a [u8],
    view: RecordView<'a>,
    session: String,
}

impl Fold {
    /// Applies one readable line (already filtered by session).
    pub(super) fn apply(
        &mut self,
        line: u64,
        bytes: &[u8],
        view: RecordView<'_>,
        opts: &FoldOptions,
        pairs: &mut Pairing,
    ) {
        let v1 = view.is_v1();
        if view.op() == op::AUDIT || view.op() == op::REMOTE {
            // Verification results: kept in the journal for people, nothing to fold. A decision
            // about another machine's entry (`walj sync` carries it there): no session here.
            return;
        }
        // A checkpoint's audit of one entry: not session activity.
        if view.op() == op::VERIFIED {
            if let Some(i) = self.by_id.get(&self.entries, view.session_key(), view.id.as_ref()) {
                self.entries[i].verified = Some(view.ts.into_owned());
            }
            return;
        }
        // A hand-back of another machine's entry (`walj sync`) names no session of this journal.
        if !view.session_key().is_empty() || view.op() != op::HANDOFF {
            self.note_session(&view, v1);
        }
        if view.op() == op::PERSISTED {
            // The bulk of a long journal: settle the entry, nothing else to read.
            self.settle(view.session_key(), &view.id, opts);
            return;
        }
        // A static name, so the view can move into `Line` (no allocation per line).
        let op_name: &'static str = match view.op() {
            op::INTENT => op::INTENT,
            op::APPLIED => op::APPLIED,
            op::FAILED => op::FAILED,
            op::RESOLVED => op::RESOLVED,
            op::UNDO => op::UNDO,
            op::HANDOFF => op::HANDOFF,
            op::SESSION => op::SESSION,
            _ => return, // unknown ops: kept in the journal, nothing to fold
        };
        let is_command = view.is_command();
        let session = view.session_key().to_string();
        if view.unfinished
            && op_name == op::APPLIED
            && let Some(p) = view.parent.as_deref()
        {
            // A killed command's derived entries are appended once its processes are gone.
            self.note_gone(&session, p, &view.ts);
        }
        let l = Line { no: line, bytes, view, session };
        match op_name {
            op::INTENT | op::APPLIED | op::FAILED | op::RESOLVED if is_command => {
                if let Ok(rec) = parse_record(bytes) {
                    self.apply_command(op_name, &l.session, &rec, opts);
                }
            }
            op::INTENT => self.apply_intent(l, pairs),
            op::APPLIED => self.apply_outcome(l, false, v1, opts, pairs),
            op::FAILED => self.apply_outcome(l, true, v1, opts, pairs),
            op::RESOLVED => self.apply_resolved(l, opts),
            op::UNDO => self.apply_undo(l),
            op::HANDOFF => self.apply_handoff(l),
            op::SESSION => {
                if let Ok(rec) = parse_record(bytes) {
                    self.apply_session(&l.session, &rec);
                    if rec.kind.as_deref() == Some(kind::STOP)
                        && let Some(&i) = self.by_session.get(l.session.as_str())
                    {
                        self.sessions[i].last_stop_line = l.no;
                    }
                }
            }
            _ => {}
        }
    }

    /// Every folded record counts for its session (and may name its process).
    #[inline]
    fn note_session(&mut self, view: &RecordView<'_>, v1: bool) {
        // Triage (resolved, undo, handoff) keeps a session's last activity: its crash
        // time and its place in the list.
        let activity = !matches!(view.op(), op::RESOLVED | op::UNDO | op::HANDOFF);
        let si = self.session_index(view.session_key(), &view.sid, &view.ts, activity);
        let s = &mut self.sessions[si];
        s.records += 1;
        s.v1 |= v1;
        s.imported |= view.imported;
        if let (Some(pid), Some(start)) = (view.pid, view.pstart) {
            s.proc = Some(ProcRef { pid, start });
        }
        if activity && !view.unfinished && view.ts.as_ref() > s.last_life_ts.as_str() {
            // Reuses the string's room: no allocation per line.
            s.last_life_ts.clear();
            s.last_life_ts.push_str(&view.ts);
        }
        if let Some(a) = view.agent_id.as_deref() {
            note_subagent(s, a, &view.ts);
        }
    }

    #[inline]
    fn apply_intent(&mut self, l: Line<'_>, pairs: &mut Pairing) {
        let v = &l.view;
        let key = || (l.session.clone(), v.tool.as_deref().unwrap_or("").to_string(), v.path.to_string());
        let id = pairs.intent(l.no, &v.id, v.pair, key);
        if self.is_outcome_first(&l.session, &id) {
            // The outcome landed first (the intent waited in a side file): pair them.
            if let Some(i) = self.by_id.get(&self.entries, &l.session, &id) {
                let e = &mut self.entries[i];
                if e.before.is_none() {
                    e.before = l.view.before;
                    e.nocap = e.nocap.take().or(l.view.nocap);
                }
                if l.view.ts.as_ref() < e.ts.as_str() {
                    e.ts = l.view.ts.into_owned();
                }
            }
            // Not found: it settled and was dropped already.
            return;
        }
        if self.by_id.get(&self.entries, &l.session, &id).is_some() {
            return;
        }
        self.push_entry(Entry::new(l.no, id, l.session, l.view, EntryState::InFlight));
    }

    /// `applied` or `failed`: the outcome of an intent, or an entry of its own (v1, imports).
    #[inline]
    fn apply_outcome(&mut self, l: Line<'_>, failed: bool, v1: bool, opts: &FoldOptions, pairs: &mut Pairing) {
        let v = &l.view;
        let key = || (l.session.clone(), v.tool.as_deref().unwrap_or("").to_string(), v.path.to_string());
        let id = pairs.outcome(l.no, &v.id, v.pair, key);
        let error = if failed {
            parse_record(l.bytes).ok().and_then(|r| r.get_str(key::ERROR).map(str::to_string))
        } else {
            None
        };
        let ts = v.ts.to_string();
        if let Some(i) = self.by_id.get(&self.entries, &l.session, &id) {
            let e = &mut self.entries[i];
            if e.base == EntryState::InFlight || e.base == EntryState::Applied {
                e.base = if failed { EntryState::Failed } else { EntryState::Applied };
            }
            let v = l.view;
            if v.after.is_some() {
                e.after = v.after;
            }
            if v.before.is_some() && e.before.is_none() {
                e.before = v.before;
            }
            e.applied_ts = Some(ts);
            e.error = error;
            if v.persisted && !failed {
                e.base = EntryState::Persisted;
            }
            if e.event.is_empty() {
                e.event = v.event.into_owned();
            }
            return;
        }
        let base = if failed {
            EntryState::Failed
        } else if v.unfinished {
            // A command that never finished: its changes are in flight until triaged.
            EntryState::InFlight
        } else if v.persisted {
            EntryState::Persisted
        } else {
            EntryState::Applied
        };
        if !v1 && !v.pair && !v.imported && v.parent.is_none() && !v.id.is_empty() {
            // A tool call's outcome before its intent: remember it, the intent may follow.
            self.outcome_first.insert((l.session.clone(), id.clone()));
        }
        let after = v.after.clone();
        let mut entry = Entry::new(l.no, id, l.session, l.view, base);
        entry.applied_ts = Some(ts);
        entry.after = after;
        entry.error = error;
        entry.v1 = v1;
        if base == EntryState::Persisted && !opts.keep_settled {
            self.remember_settled(entry);
        } else {
            self.push_entry(entry);
        }
    }

    /// A triage action on an entry (or Stop settling an intent that did not apply).
    fn apply_resolved(&mut self, l: Line<'_>, opts: &FoldOptions) {
        let Some(i) = self.by_id.get(&self.entries, &l.session, l.view.id.as_ref()) else { return };
        let Ok(rec) = parse_record(l.bytes) else { return };
        let h = rec.how.clone().unwrap_or_default();
        if h == how::NOT_APPLIED {
            let e = &mut self.entries[i];
            // A failed call that left the file alone (import settles those) did not apply either.
            if e.base == EntryState::InFlight || e.base == EntryState::Failed {
                e.base = EntryState::NotApplied;
            }
            if !opts.keep_settled && e.actions.is_empty() {
                self.remove_entry(i);
            }
            return;
        }
        self.entries[i].actions.push(Action {
            action: rec.action.clone().unwrap_or_else(|| format!("L{}", l.no)),
            how: h,
            ts: l.view.ts.into_owned(),
            overwrote: rec.before.clone(),
            wrote: rec.after.clone(),
            undone: false,
            line: l.no,
            record: rec,
        });
    }

    fn apply_undo(&mut self, l: Line<'_>) {
        let Ok(rec) = parse_record(l.bytes) else { return };
        let Some(target) = rec.target.as_deref() else { return };
        if let Some(i) = self.by_id.get(&self.entries, &l.session, l.view.id.as_ref())
            && let Some(a) = self.entries[i].actions.iter_mut().rev().find(|a| a.action == target)
        {
            a.undone = true;
        }
        for h in self.handoffs.iter_mut().filter(|h| h.action == target) {
            h.undone = true;
        }
    }

    fn apply_handoff(&mut self, l: Line<'_>) {
        let Ok(rec) = parse_record(l.bytes) else { return };
        self.handoffs.push(Handoff {
            action: rec.action.clone().unwrap_or_else(|| format!("L{}", l.no)),
            ts: l.view.ts.into_owned(),
            session: l.session,
            brief: rec.get_str(key::BRIEF).unwrap_or_default().to_string(),
            entries: rec
                .extra
                .get(key::ENTRIES)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            delivered: None,
            undone: false,
            held: false,
            line: l.no,
            record: rec,
        });
    }

    pub(super) fn apply_command(&mut self, op_name: &str, session: &str, rec: &Record, opts: &FoldOptions) {
        // The outcome came first (the intent waited in a side file): the intent only fills in.
        let early = self.is_outcome_first(session, &rec.id);
        let s = self.session_mut(session, &rec.sid, &rec.ts, op_name != op::RESOLVED);
        let id = rec.id.clone();
        let intent = || Command {
            id: id.clone(),
            ts: rec.ts.clone(),
            command: rec.get_str(key::COMMAND).unwrap_or_default().to_string(),
            description: rec.get_str(key::DESCRIPTION).map(str::to_string),
            cwd: rec.get_str(key::CWD).map(str::to_string),
            background: rec.extra.get(key::BACKGROUND).and_then(Value::as_bool).unwrap_or(false),
            task_id: None,
            status: CommandStatus::InFlight,
            error: None,
            running: None,
            finished: None,
            head_before: head_of(rec),
            ended_ts: None,
            gone_ts: None,
            agent_id: rec.get_str(key::AGENT_ID).map(str::to_string),
            unseen: None,
        };
        let mut first = false;
        match op_name {
            op::INTENT if early => {
                if let Some(c) = s.commands.iter_mut().rev().find(|c| c.id == id) {
                    let i = intent();
                    c.ts = i.ts;
                    c.description = i.description;
                    c.cwd = i.cwd;
                    c.background |= i.background;
                }
            }
            op::INTENT => {
                s.commands_total += 1;
                let c = intent();
                if c.head_before.is_some() {
                    s.head_now.clone_from(&c.head_before);
                }
                s.commands.push(c);
            }
            op::RESOLVED => {
                // Stop settled a command that never got an outcome: it did not run (denied).
                if rec.how.as_deref() == Some(how::NOT_APPLIED)
                    && let Some(c) = s.commands.iter_mut().rev().find(|c| c.id == id)
                    && c.status == CommandStatus::InFlight
                {
                    c.status = CommandStatus::Failed;
                    c.error = Some("not run: no outcome by the end of the turn (denied)".to_string());
                }
            }
            _ => {
                let failed = op_name == op::FAILED;
                let pos = s.commands.iter().rposition(|c| c.id == id);
                let pos = match pos {
                    Some(p) => Some(p),
                    None if !id.is_empty() && !early => {
                        first = true;
                        s.commands_total += 1;
                        s.commands.push(intent());
                        Some(s.commands.len() - 1)
                    }
                    None => None,
                };
                if let Some(after) = head_of(rec) {
                    if let Some(c) = pos.map(|p| &s.commands[p])
                        && let Some(before) = &c.head_before
                        && *before != after
                    {
                        s.head_moves.push(HeadMove {
                            id: c.id.clone(),
                            command: c.command.clone(),
                            from: before.clone(),
                            to: after.clone(),
                        });
                    }
                    s.head_now = Some(after);
                }
                if let Some(p) = pos {
                    let c = &mut s.commands[p];
                    c.status = if failed { CommandStatus::Failed } else { CommandStatus::Ok };
                    c.ended_ts = Some(rec.ts.clone());
                    c.error = rec.get_str(key::ERROR).map(str::to_string);
                    c.unseen = crate::fold::Unseen::of_outcome(
                        rec.extra.get(key::SNAPSHOT).and_then(|s| s.get(key::UNSEEN)),
                        rec.extra.get(key::REPORTED),
                    );
                    if let Some(t) = rec.get_str(key::TASK_ID) {
                        c.task_id = Some(t.to_string());
                        c.background = true;
                    }
                    let notable = c.background || failed || c.unseen.is_some();
                    if !notable && !opts.all_commands {
                        s.commands.remove(p);
                    }
                }
            }
        }
        if first {
            self.outcome_first.insert((session.to_string(), id));
        }
    }

    /// walj saw the processes of `session`'s command `id` gone at `ts` (the earliest counts).
    fn note_gone(&mut self, session: &str, id: &str, ts: &str) {
        if let Some(&i) = self.by_session.get(session)
            && let Some(c) = self.sessions[i].commands.iter_mut().rev().find(|c| c.id == id)
            && c.gone_ts.as_deref().is_none_or(|g| ts < g)
        {
            c.gone_ts = Some(ts.to_string());
        }
    }

    fn apply_session(&mut self, session: &str, rec: &Record) {
        let k = rec.kind.as_deref().unwrap_or("");
        match k {
            kind::GONE => {
                if let Some(t) = rec.target.as_deref() {
                    self.note_gone(session, t, &rec.ts);
                }
                return;
            }
            kind::UNSEEN => {
                if let Some(t) = rec.target.as_deref()
                    && let Some(&i) = self.by_session.get(session)
                    && let Some(c) = self.sessions[i].commands.iter_mut().rev().find(|c| c.id == t)
                {
                    c.unseen = crate::fold::Unseen::from_value(rec.extra.get(key::UNSEEN));
                }
                return;
            }
            kind::ANNOUNCED => {
                if let Some(t) = rec.target.as_deref()
                    && let Some(&i) = self.by_session.get(t)
                {
                    self.sessions[i].announced = true;
                    self.sessions[i].announced_ts = Some(rec.ts.clone());
                }
                return;
            }
            kind::DELIVERED => {
                if let Some(t) = rec.target.as_deref() {
                    for h in self.handoffs.iter_mut().filter(|h| h.action == t) {
                        h.delivered = Some(rec.ts.clone());
                    }
                }
                // The delivery also tells that this session started: fall through is not needed.
                return;
            }
            kind::RELEASED => {
                if let Some(t) = rec.target.as_deref() {
                    for h in self.handoffs.iter_mut().filter(|h| h.action == t) {
                        h.held = false;
                    }
                }
                return;
            }
            kind::IMPORTED => {
                // A bundle's briefs wait for the user (every record in a bundle is of its
                // session, checked at import), and its session's texts stay unseen.
                if let Some(t) = rec.target.as_deref().filter(|t| !t.is_empty()) {
                    for h in self.handoffs.iter_mut().filter(|h| h.session == t && h.delivered.is_none()) {
                        h.held = true;
                    }
                    if let Some(&i) = self.by_session.get(t) {
                        self.sessions[i].from_bundle = true;
                    }
                }
            }
            _ => {}
        }
        let s = self.session_mut(session, &rec.sid, &rec.ts, true);
        let text = |key: &str| rec.get_str(key).map(str::to_string);
        match k {
            kind::START => {
                // A new life: its crash, if it comes, is a new one. (SessionStart writes the
                // marks of what it told before its own start record.)
                s.announced = false;
                if s.started.is_none() {
                    s.started = Some(rec.ts.clone());
                    s.head = text(key::HEAD);
                    s.branch = text(key::BRANCH);
                }
                s.last_start_ts = Some(rec.ts.clone());
                s.source = text(key::SOURCE).or(s.source.take());
                s.model = text(key::MODEL).or(s.model.take());
                s.cwd = text(key::CWD).or(s.cwd.take());
                s.transcript = text(key::TRANSCRIPT).or(s.transcript.take());
                if rec.extra.get(key::IMPORTED).and_then(Value::as_bool) == Some(true) {
                    s.imported = true;
                }
            }
            kind::PROMPT => {
                if let Some(t) = text(key::PROMPT) {
                    s.prompts.push(Prompt { ts: rec.ts.clone(), text: t });
                }
                s.turn_failure = None;
            }
            kind::STOP_FAILURE => s.turn_failure = text(key::REASON),
            kind::TASK_NOTIFICATION => {
                task_finished(s, rec);
                // Claude Code starts a turn for it: the session went on.
                s.turn_failure = None;
            }
            kind::TODOS => {
                if let Some(list) = rec.extra.get(key::TODOS).and_then(Value::as_array) {
                    s.todos = list.iter().filter_map(todo_from_json).collect();
                }
            }
            kind::TASK => apply_task(s, rec),
            kind::SUBAGENT => apply_subagent(s, rec),
            kind::STOP | kind::SUBAGENT_STOP => {
                if k == kind::SUBAGENT_STOP {
                    subagent_stopped(s, rec);
                }
                if let Some(m) = text(key::LAST_ASSISTANT_MESSAGE) {
                    s.last_assistant_message = Some(m);
                }
                if let Some(b) = rec.extra.get(key::BACKGROUND_TASKS).and_then(Value::as_array)
                    && k == kind::STOP
                {
                    s.background_tasks = b.clone();
                    tasks_not_listed_finished(s, b);
                    subagents_at_stop(s, b, &rec.ts);
                }
                if k == kind::STOP {
                    s.turn_failure = None;
                }
            }
            kind::COMPACT => {
                s.compactions.push((rec.ts.clone(), text(key::TRIGGER).unwrap_or_default()));
            }
            kind::END => {
                s.end = Some((rec.ts.clone(), text(key::REASON).unwrap_or_default()));
            }
            _ => {}
        }
        if s.transcript.is_none() {
            s.transcript = text(key::TRANSCRIPT);
        }
        if s.agent.is_none() {
            s.agent = text(key::AGENT);
        }
    }
}

/// A record a subagent's event made: the subagent is alive at `ts` (known from its records
/// alone when its `Agent` call was not journaled, or before its result names its id).
fn note_subagent(s: &mut SessionInfo, agent_id: &str, ts: &str) {
    match s.subagents.iter_mut().find(|a| a.agent_id.as_deref() == Some(agent_id)) {
        Some(a) => {
            if ts > a.last_ts.as_str() {
                a.last_ts = ts.to_string();
            }
        }
        None => s.subagents.push(Subagent {
            agent_id: Some(agent_id.to_string()),
            started: ts.to_string(),
            last_ts: ts.to_string(),
            ..Default::default()
        }),
    }
}

/// A `subagent` record: the `Agent` call's launch, or its outcome (which names the
/// subagent's `agent_id` in `target`).
fn apply_subagent(s: &mut SessionInfo, rec: &Record) {
    let text = |k: &str| rec.get_str(k).map(str::to_string);
    let call = text(key::CALL);
    let status = rec.get_str(key::STATUS).unwrap_or("");
    if status == "start" {
        s.subagents.push(Subagent {
            call,
            kind: text(key::AGENT_TYPE),
            description: text(key::DESCRIPTION),
            started: rec.ts.clone(),
            last_ts: rec.ts.clone(),
            background: rec.extra.get(key::BACKGROUND).and_then(Value::as_bool) == Some(true),
            ..Default::default()
        });
        return;
    }
    let at = match call.as_deref() {
        Some(c) => s.subagents.iter().rposition(|a| a.call.as_deref() == Some(c)),
        None => None,
    };
    let i = match at {
        Some(i) => i,
        None => {
            s.subagents.push(Subagent {
                call,
                kind: text(key::AGENT_TYPE),
                description: text(key::DESCRIPTION),
                started: rec.ts.clone(),
                last_ts: rec.ts.clone(),
                ..Default::default()
            });
            s.subagents.len() - 1
        }
    };
    if let Some(id) = rec.target.as_deref().filter(|t| !t.is_empty()) {
        // Its tool calls' records came first (a foreground subagent runs before its call's
        // Post): fold that run into this one.
        if let Some(j) = s.subagents.iter().position(|a| a.call.is_none() && a.agent_id.as_deref() == Some(id))
            && j != i
        {
            let orphan = s.subagents.remove(j);
            let i = if j < i { i - 1 } else { i };
            let a = &mut s.subagents[i];
            a.started = a.started.clone().min(orphan.started);
            a.last_ts = a.last_ts.clone().max(orphan.last_ts);
            a.ended = a.ended.take().or(orphan.ended);
            a.agent_id = Some(id.to_string());
            return finish_call(a, rec, status);
        }
        s.subagents[i].agent_id = Some(id.to_string());
    }
    finish_call(&mut s.subagents[i], rec, status);
}

fn finish_call(a: &mut Subagent, rec: &Record, status: &str) {
    if rec.ts > a.last_ts {
        a.last_ts = rec.ts.clone();
    }
    match status {
        "async_launched" => a.background = true,
        "completed" | "failed" if a.ended.is_none() => a.ended = Some((rec.ts.clone(), status.to_string())),
        _ => {}
    }
}

/// A SubagentStop: the subagent its `agent_id` names ended (else the oldest one still open
/// of its type, for payloads without an id).
fn subagent_stopped(s: &mut SessionInfo, rec: &Record) {
    let id = rec.get_str(key::AGENT_ID);
    let kind = rec.get_str(key::AGENT_TYPE);
    let at = match id {
        Some(id) => s.subagents.iter().position(|a| a.agent_id.as_deref() == Some(id)),
        None => s.subagents.iter().position(|a| a.ended.is_none() && (kind.is_none() || a.kind.as_deref() == kind)),
    };
    let i = match at {
        Some(i) => i,
        None => {
            s.subagents.push(Subagent {
                agent_id: id.map(str::to_string),
                started: rec.ts.clone(),
                last_ts: rec.ts.clone(),
                ..Default::default()
            });
            s.subagents.len() - 1
        }
    };
    let a = &mut s.subagents[i];
    if a.kind.is_none() {
        a.kind = kind.map(str::to_string);
    }
    a.last_ts = a.last_ts.clone().max(rec.ts.clone());
    a.ended = Some((rec.ts.clone(), "stopped".to_string()));
}

/// Entry ids of lines without a `tool_use_id`: an intent's generated id (`pair: true`) is
/// taken by the next outcome of the same (session, tool, path); a line with no id at all is
/// `L<line>`. Shared with journal rewrites, which must name entries exactly as the fold does.
#[derive(Default)]
pub(crate) struct Pairing {
    /// (session, tool, path) → generated ids of intents waiting for their outcome.
    pub(super) open: HashMap<(String, String, String), VecDeque<String>>,
}

impl Pairing {
    /// The entry id of an `intent` line.
    pub(crate) fn intent(
        &mut self,
        line: u64,
        id: &str,
        pair: bool,
        key: impl FnOnce() -> (String, String, String),
    ) -> String {
        let id = if id.is_empty() { format!("L{line}") } else { id.to_string() };
        if pair {
            self.open.entry(key()).or_default().push_back(id.clone());
        }
        id
    }

    /// The entry id of an `applied` or `failed` line.
    pub(crate) fn outcome(
        &mut self,
        line: u64,
        id: &str,
        pair: bool,
        key: impl FnOnce() -> (String, String, String),
    ) -> String {
        if pair || id.is_empty() {
            if let Some(found) = self.open.get_mut(&key()).and_then(VecDeque::pop_front) {
                return found;
            }
            if id.is_empty() {
                return format!("L{line}");
            }
        }
        id.to_string()
    }
}

/// A `task_notification` record: the background command it names (by call id, else task id)
/// has ended.
fn task_finished(s: &mut SessionInfo, rec: &Record) {
    let task = rec.get_str(key::TASK_ID);
    let status = rec.get_str(key::STATUS).unwrap_or("ended");
    if let Some(c) = s
        .commands
        .iter_mut()
        .rev()
        .find(|c| (!rec.id.is_empty() && c.id == rec.id) || (task.is_some() && c.task_id.as_deref() == task))
    {
        c.finished = Some(status.to_string());
    }
    // A background subagent's end (its `<task-id>` is the agent id, its `<tool-use-id>` the
    // Agent call's): its outcome even when no SubagentStop came.
    if let Some(a) = s.subagents.iter_mut().rev().find(|a| {
        (!rec.id.is_empty() && a.call.as_deref() == Some(rec.id.as_str()))
            || (task.is_some() && a.agent_id.as_deref() == task)
    }) {
        a.last_ts = a.last_ts.clone().max(rec.ts.clone());
        if a.ended.is_none() {
            a.ended = Some((rec.ts.clone(), status.to_string()));
        }
    }
}

/// A Stop's `background_tasks` also lists the session's background subagents (Claude Code
/// 2.1.x: `{"id": <agent id>, "type": "subagent", "status": "running", "description",
/// "agent_type"}`): one listed with a final status ended so; one listed running was alive at
/// the Stop; a background subagent this Claude Code process launched (since the session's
/// last start) that the list no longer holds has ended, SubagentStop or not. The outcome of a
/// subagent whose SubagentStop hook never ran (not installed, timed out).
fn subagents_at_stop(s: &mut SessionInfo, listed: &[Value], ts: &str) {
    let since = s.last_start_ts.clone().unwrap_or_default();
    for a in s.subagents.iter_mut().filter(|a| a.ended.is_none()) {
        let Some(id) = a.agent_id.as_deref() else { continue };
        let task = listed.iter().find(|t| {
            t.get("id").and_then(Value::as_str) == Some(id)
                && t.get("type").and_then(Value::as_str).is_none_or(|k| k == "subagent" || k == "agent")
        });
        match task.map(|t| t.get("status").and_then(Value::as_str).unwrap_or("running")) {
            Some("running" | "pending") => a.last_ts = a.last_ts.clone().max(ts.to_string()),
            Some(status) => a.ended = Some((ts.to_string(), status.to_string())),
            None if a.background && a.started >= since => a.ended = Some((ts.to_string(), "ended".to_string())),
            None => {}
        }
    }
}

/// A Stop lists every background task of its Claude Code process still in flight: one that
/// process started (since the session's last start) and that it does not list has ended. A
/// task of an earlier, crashed run is not its to list.
fn tasks_not_listed_finished(s: &mut SessionInfo, listed: &[Value]) {
    let ids: Vec<&str> = listed.iter().filter_map(|t| t.get("id").and_then(Value::as_str)).collect();
    let since = s.last_start_ts.clone().unwrap_or_default();
    for c in s.commands.iter_mut().filter(|c| c.background && c.finished.is_none() && c.ts >= since) {
        if let Some(t) = c.task_id.as_deref()
            && !ids.contains(&t)
        {
            c.finished = Some("ended".to_string());
        }
    }
}

/// A todo of a TodoWrite list; `None` for an item without a text (skipped, the others kept).
pub(crate) fn todo_from_json(v: &Value) -> Option<Todo> {
    let content = v.get("content").or_else(|| v.get("subject")).and_then(Value::as_str)?;
    Some(Todo {
        id: v.get("id").and_then(|i| i.as_str().map(str::to_string).or_else(|| i.as_u64().map(|n| n.to_string()))),
        content: content.to_string(),
        status: v.get("status").and_then(Value::as_str).unwrap_or("pending").to_string(),
        active_form: v.get("activeForm").and_then(Value::as_str).map(str::to_string),
    })
}

/// TaskCreate adds a todo, TaskUpdate changes one (by `taskId`).
fn apply_task(s: &mut SessionInfo, rec: &Record) {
    let input = rec.extra.get(key::INPUT).cloned().unwrap_or(Value::Null);
    let tool_name = rec.tool.as_deref().unwrap_or("");
    let response = rec.extra.get(key::RESPONSE).cloned().unwrap_or(Value::Null);
    let id_in = |v: &Value| -> Option<String> {
        v.get("taskId")
            .or_else(|| v.get("id"))
            .and_then(|i| i.as_str().map(str::to_string).or_else(|| i.as_u64().map(|n| n.to_string())))
    };
    if tool_name == tool::TASK_CREATE {
        // The id comes back in the response: an object with an id, or text like "Task #3 created".
        let id = id_in(&response)
            .or_else(|| response.get("task").and_then(id_in))
            .or_else(|| response.as_str().and_then(task_number));
        let content = input
            .get("subject")
            .or_else(|| input.get("description"))
            .or_else(|| input.get("content"))
            .and_then(Value::as_str)
            .unwrap_or("(task)")
            .to_string();
        s.todos.push(Todo {
            id,
            content,
            status: input.get("status").and_then(Value::as_str).unwrap_or("pending").to_string(),
            active_form: input.get("activeForm").and_then(Value::as_str).map(str::to_string),
        });
    } else if let Some(id) = id_in(&input) {
        let status = input.get("status").and_then(Value::as_str).map(str::to_string);
        let subject = input.get("subject").and_then(Value::as_str).map(str::to_string);
        match s.todos.iter_mut().find(|t| t.id.as_deref() == Some(id.as_str())) {
            Some(t) => {
                if let Some(st) = status {
                    t.status = st;
                }
                if let Some(su) = subject {
                    t.content = su;
                }
            }
            None => s.todos.push(Todo {
                id: Some(id.clone()),
                content: subject.unwrap_or_else(|| format!("task #{id}")),
                status: status.unwrap_or_else(|| "pending".into()),
                active_form: None,
            }),
        }
    }
}

fn task_number(text: &str) -> Option<String> {
    let at = text.find('#')?;
    let digits: String = text[at + 1..].chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty()).then_some(digits)
}

/// The git HEAD a command record names (`head`, `branch`), when it names one.
fn head_of(rec: &Record) -> Option<crate::git::Head> {
    let id = rec.get_str(key::HEAD).map(str::to_string);
    let branch = rec.get_str(key::BRANCH).map(str::to_string);
    (id.is_some() || branch.is_some()).then_some(crate::git::Head { branch, id })
}
