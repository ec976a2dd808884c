//! `walj import` of the session files Codex CLI, Gemini CLI and Copilot CLI keep themselves,
//! like [`super::claude`] does for Claude Code's transcripts.
//!
//! | agent | file | what it holds |
//! |---|---|---|
//! | Codex CLI | `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl` | every call with its call id; `apply_patch` patches, and per file the added and deleted content; commands with their exit codes; the end of each turn with the last answer |
//! | Gemini CLI | `~/.gemini/tmp/<project>/chats/session-*.jsonl` (`$GEMINI_CLI_HOME`) | finished calls only, each with the file's whole content before and after |
//! | Copilot CLI | `$COPILOT_HOME/session-state/<id>/events.jsonl` | every call from its start; the file's content before each prompt (`rewind-file-snapshots/`) |
//!
//! Each file is parsed ([`codex`], [`gemini`], [`copilot`]) into one [`SessionFile`]: a list of
//! [`Step`]s (prompts, calls with their outcome, turn ends, resumptions, the end). [`convert`]
//! turns that into the records walj's hooks would have written: a session start (`source:
//! import`, `agent`), prompts, an `intent` and an `applied` / `failed` per file a call changes
//! (ids `<call id>`, or `<call id>#1…` for several files, as the hook does), the commands, the
//! end of each turn (`stop` with the last answer; the turn's entries settled, unverified), and
//! the end. A call without outcome is in flight. Pre-images: the file's content as the agent
//! recorded it, else the previous call's result on the same file, else the agent's backup
//! (Copilot); post-images: as recorded, else computed by applying the call.
//!
//! Every record carries `imported: true` and its agent's ids, so importing again adds nothing.
//! A session walj's hooks journaled is not imported at all: Gemini's and Copilot's hooks carry no
//! call ids, so its calls would be counted twice.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use super::engine::{Blobs, FileReport, InFlight, Sink, locate_from, normalize_ts, settled_outside, turn_settled};
use super::session_file::{Call, CallKind, Content, Edit, FileChange, SessionFile, Step, first_line};
use super::{codex, copilot, gemini};
use crate::agents::Agent;
use crate::agents::patch;
use crate::claude::payload::clip;
use crate::config::{self, Config, Matcher};
use crate::journal::build::{self, BashIntent, BashOutcome, MAX_ERROR, MAX_MESSAGE};
use crate::journal::{Blob, Record, key, kind, op, tool};
use crate::project::{Located, Project};

/// Which agent's session file `path` is, from its first line: `None` for anything else
/// (Claude Code's transcripts).
pub(crate) fn detect(path: &Path) -> Option<Agent> {
    let v = first_line(path)?;
    detect_value(&v)
}

fn detect_value(v: &Value) -> Option<Agent> {
    let ty = v.get("type").and_then(Value::as_str);
    if ty == Some("session_meta") {
        return Some(Agent::Codex);
    }
    if ty.is_some_and(|t| t.starts_with("session.")) && v.get("data").is_some() {
        return Some(Agent::Copilot);
    }
    if v.get("sessionId").is_some() && v.get("projectHash").is_some() {
        return Some(Agent::Gemini);
    }
    None
}

/// Parses the session file of `agent` at `path`.
pub(crate) fn parse(agent: Agent, path: &Path) -> io::Result<SessionFile> {
    match agent {
        Agent::Codex => codex::parse(path),
        Agent::Gemini => gemini::parse(path),
        Agent::Copilot => copilot::parse(path),
        Agent::ClaudeCode => Err(io::Error::other("a Claude Code transcript")),
    }
}

/// Where an agent keeps its session files.
pub(crate) fn sessions_dir(agent: Agent) -> Option<PathBuf> {
    match agent {
        Agent::Codex => Some(crate::agents::codex_trust::codex_home().join("sessions")),
        Agent::Gemini => Some(gemini_home().join("tmp")),
        Agent::Copilot => Some(crate::agents::copilot_home().join("session-state")),
        Agent::ClaudeCode => None,
    }
}

/// Gemini CLI's folder: `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
pub(crate) fn gemini_home() -> PathBuf {
    match std::env::var_os("GEMINI_CLI_HOME").filter(|v| !v.is_empty()) {
        Some(h) => PathBuf::from(h).join(".gemini"),
        None => crate::agents::home().join(".gemini"),
    }
}

/// Every session file of `agent` with the folder it ran in (`None` when the file does not say).
fn all_files(agent: Agent) -> Vec<(PathBuf, Option<PathBuf>)> {
    let Some(dir) = sessions_dir(agent) else { return Vec::new() };
    let mut out = Vec::new();
    match agent {
        Agent::Codex => {
            let mut files = Vec::new();
            super::engine::jsonl_under(&dir, &mut files);
            for f in files {
                if f.file_name().is_some_and(|n| n.to_string_lossy().starts_with("rollout-")) {
                    let cwd = codex::cwd_of(&f);
                    out.push((f, cwd));
                }
            }
        }
        Agent::Gemini => {
            let Ok(rd) = fs::read_dir(&dir) else { return out };
            for project in rd.flatten() {
                let root = gemini::project_root(&project.path());
                let Ok(chats) = fs::read_dir(project.path().join("chats")) else { continue };
                for f in chats.flatten() {
                    let p = f.path();
                    if p.extension().is_some_and(|x| x == "jsonl") && p.is_file() {
                        out.push((p, root.clone()));
                    }
                }
            }
        }
        Agent::Copilot => {
            let Ok(rd) = fs::read_dir(&dir) else { return out };
            for s in rd.flatten() {
                let p = s.path().join("events.jsonl");
                if p.is_file() {
                    let cwd = copilot::cwd_of(&p);
                    out.push((p, cwd));
                }
            }
        }
        Agent::ClaudeCode => {}
    }
    out.sort();
    out
}

/// The session files of `agent` whose session ran in `root` or below it (Gemini: also a file
/// whose `projectHash` is the root's). `since`: only files modified after it.
pub(crate) fn project_files(agent: Agent, root: &Path, since: Option<SystemTime>) -> Vec<PathBuf> {
    let hash = (agent == Agent::Gemini).then(|| gemini::project_hash(root));
    all_files(agent)
        .into_iter()
        .filter(|(f, cwd)| {
            let inside = cwd.as_deref().is_some_and(|c| c.starts_with(root));
            inside || hash.as_deref().is_some_and(|h| gemini::file_project_hash(f).as_deref() == Some(h))
        })
        .filter(|(f, _)| since.is_none_or(|s| fs::metadata(f).and_then(|m| m.modified()).is_ok_and(|m| m >= s)))
        .map(|(f, _)| f)
        .collect()
}

/// Every session file of `agent`, grouped by the project its folder names (git top level, else
/// the folder itself); `None`: the folder no longer exists.
pub(crate) fn all_project_files(agent: Agent) -> Vec<(Option<PathBuf>, Vec<PathBuf>)> {
    let mut groups: HashMap<Option<PathBuf>, Vec<PathBuf>> = HashMap::new();
    for (f, cwd) in all_files(agent) {
        let root = cwd.filter(|p| p.is_dir()).map(|cwd| {
            let top = crate::project::git_toplevel(&cwd).unwrap_or(cwd);
            fs::canonicalize(&top).unwrap_or(top)
        });
        groups.entry(root).or_default().push(f);
    }
    let mut v: Vec<_> = groups.into_iter().collect();
    v.sort();
    v
}

/// The records of one session file (not yet filtered against the journal).
pub(crate) struct Converted {
    pub records: Vec<Record>,
    pub blobs: Blobs,
    pub produced: usize,
    pub report: FileReport,
}

/// Reads `path` (a session file of `agent`) into the records the hooks would have written.
pub(crate) fn convert(
    project: &Project,
    cfg: &Config,
    matcher: Option<&Matcher>,
    agent: Agent,
    path: &Path,
    sink: &Sink,
) -> Converted {
    let mut report = FileReport { path: path.to_path_buf(), agent: Some(agent.name().into()), ..FileReport::default() };
    let file = match parse(agent, path) {
        Ok(f) => f,
        Err(e) => {
            report.error = Some(e.to_string());
            return Converted { records: Vec::new(), blobs: Blobs::default(), produced: 0, report };
        }
    };
    report.lines = file.lines;
    report.torn_tail = file.torn_tail;
    report.malformed = file.malformed;
    report.oversized = file.oversized;
    if file.session.is_empty() {
        report.error = Some(format!("no session id: not a {} session file", agent.label()));
        return Converted { records: Vec::new(), blobs: Blobs::default(), produced: 0, report };
    }
    report.sessions = vec![file.session.clone()];
    if sink.hooked(&file.session) {
        report.hooked = true;
        return Converted { records: Vec::new(), blobs: Blobs::default(), produced: 0, report };
    }
    let mut conv = Conv {
        project,
        cfg,
        matcher,
        agent,
        file: &file,
        path,
        records: Vec::new(),
        blobs: Blobs::default(),
        report,
        chain: HashMap::new(),
        turn: Vec::new(),
        turn_failed: Vec::new(),
    };
    conv.run();
    let produced = conv.records.len();
    Converted { records: conv.records, blobs: conv.blobs, produced, report: conv.report }
}

struct Conv<'a> {
    project: &'a Project,
    cfg: &'a Config,
    matcher: Option<&'a Matcher>,
    agent: Agent,
    file: &'a SessionFile,
    path: &'a Path,
    records: Vec<Record>,
    blobs: Blobs,
    report: FileReport,
    /// Last known content per absolute path, for the next call's pre-image.
    chain: HashMap<PathBuf, Content>,
    /// Entries applied in the current turn (settled when it ends).
    turn: Vec<usize>,
    /// Failed calls of the current turn: `failed` if it stays open, else not applied.
    turn_failed: Vec<Record>,
}

impl Conv<'_> {
    fn rec(&self, op_name: &str, ts: &str) -> Record {
        let mut r = Record::new(op_name, &self.file.session);
        if !ts.is_empty() {
            r.ts = normalize_ts(ts);
        }
        r
    }

    /// A session record of kind `k`, naming the agent.
    fn session_rec(&self, k: &str, id: String, ts: &str) -> Record {
        let mut r = build::session(self.rec(op::SESSION, ts), k).with(key::AGENT, self.agent.name());
        r.id = id;
        r
    }

    fn emit(&mut self, mut r: Record) {
        r.extra.insert(key::IMPORTED.into(), Value::Bool(true));
        self.records.push(r);
    }

    fn run(&mut self) {
        let f = self.file;
        let mut start = self
            .session_rec(kind::START, format!("import:{}", f.session), &f.start_ts)
            .with(key::SOURCE, "import")
            .with(key::TRANSCRIPT, self.path.to_string_lossy().into_owned());
        for (k, v) in [
            (key::CWD, &f.cwd),
            (key::HEAD, &f.head),
            (key::BRANCH, &f.branch),
            (key::MODEL, &f.model),
            (key::AGENT_VERSION, &f.version),
        ] {
            if let Some(v) = v {
                start = start.with(k, v.as_str());
            }
        }
        self.emit(start);
        let mut seen = HashSet::new();
        for step in &f.steps {
            match step {
                Step::Prompt { id, ts, text } => {
                    self.settle_turn(ts);
                    let r = build::prompt(self.session_rec(kind::PROMPT, id.clone(), ts), text);
                    self.emit(r);
                }
                Step::Call(c) if seen.insert(c.id.as_str()) => {
                    self.report.tool_calls += 1;
                    self.call(c);
                }
                Step::Call(_) => {}
                Step::TurnEnd { id, ts, message } => {
                    self.settle_turn(ts);
                    let mut r = self.session_rec(kind::STOP, id.clone(), ts);
                    if let Some(m) = message {
                        r = r.with(key::LAST_ASSISTANT_MESSAGE, build::safe(m, MAX_MESSAGE));
                    }
                    self.emit(r);
                }
                Step::Resume { id, ts } => {
                    let r = self.session_rec(kind::START, id.clone(), ts).with(key::SOURCE, "resume");
                    self.emit(r);
                }
                Step::End { id, ts, reason } => {
                    let r = self.session_rec(kind::END, id.clone(), ts).with(key::REASON, reason.as_str());
                    self.emit(r);
                }
            }
        }
        // The last turn never ended: its failed calls stay failed, its entries open.
        for r in std::mem::take(&mut self.turn_failed) {
            self.emit(r);
        }
    }

    /// The entries applied in the turn that just ended are settled, as the agent's Stop hook
    /// would have (unverified: the disk of that time is gone).
    fn settle_turn(&mut self, ts: &str) {
        let (failed, applied) = (std::mem::take(&mut self.turn_failed), std::mem::take(&mut self.turn));
        for r in turn_settled(failed, applied, &self.records, |_| self.rec(op::PERSISTED, ts)) {
            self.emit(r);
        }
    }

    fn call(&mut self, c: &Call) {
        match &c.kind {
            CallKind::Files(changes) => {
                for (n, ch) in changes.iter().enumerate() {
                    let id = if changes.len() <= 1 { c.id.clone() } else { format!("{}#{}", c.id, n + 1) };
                    self.file_change(c, ch, id);
                }
            }
            CallKind::Shell { command, description, background, cwd } => {
                let mut r = self.rec(op::INTENT, &c.ts);
                r.id = c.id.clone();
                let cwd = cwd.as_deref().or(self.file.cwd.as_deref());
                let r =
                    BashIntent { command, description: description.as_deref(), background: *background, cwd }.fill(r);
                self.emit(r);
                let Some(o) = &c.outcome else {
                    self.in_flight(c, &c.id, clip(command, 200));
                    return;
                };
                let mut r = self.rec(if o.error.is_some() { op::FAILED } else { op::APPLIED }, &o.ts);
                r.id = c.id.clone();
                let r = BashOutcome { command, error: o.error.as_deref(), task_id: None, interrupted: false }.fill(r);
                self.emit(r);
            }
            CallKind::Other => {}
        }
    }

    fn in_flight(&mut self, c: &Call, id: &str, what: String) {
        self.report.in_flight.push(InFlight {
            session: self.file.session.clone(),
            id: id.to_string(),
            tool: match c.kind {
                CallKind::Shell { .. } => tool::BASH.to_string(),
                _ => c.tool.clone(),
            },
            what,
        });
    }

    fn absolute(&self, p: &str) -> PathBuf {
        let path = Path::new(p);
        if path.is_absolute() {
            return crate::project::normalize(path);
        }
        let base = self.file.cwd.as_deref().map(PathBuf::from).unwrap_or_else(|| self.project.root.clone());
        crate::project::normalize(&base.join(path))
    }

    fn image(&mut self, content: Option<&str>, rel: &str) -> (Blob, Option<String>) {
        match content {
            Some(s) => self.blobs.put(self.cfg, self.matcher, s.as_bytes(), rel),
            None => (Blob::Absent, None),
        }
    }

    fn file_change(&mut self, c: &Call, ch: &FileChange, id: String) {
        let abs = self.absolute(&ch.path);
        // The pre-image: as recorded for this call, else the previous call's result, else the
        // agent's backup from before the turn.
        let (pre, from): (Option<Content>, Option<&str>) = match (&ch.before, self.chain.get(&abs), &ch.turn_before) {
            (Some(b), _, _) => (Some(b.clone()), None),
            (None, Some(prev), _) => (Some(prev.clone()), Some("previous_call")),
            (None, None, Some(b)) => (Some(b.clone()), Some("backup")),
            (None, None, None) => (None, None),
        };
        // A move's new file: the old file's content with the patch's chunks applied.
        let moved = match &ch.edit {
            Edit::MovedFrom { from, chunks } => self
                .chain
                .get(&self.absolute(from))
                .cloned()
                .flatten()
                .and_then(|old| patch::apply(&old, chunks))
                .map(Some),
            _ => None,
        };
        let pre = if matches!(ch.edit, Edit::MovedFrom { .. }) && pre.is_none() { Some(None) } else { pre };
        let intended = ch.after.clone().or(moved).or_else(|| match (&pre, &ch.edit) {
            (Some(p), _) => ch.edit.apply(p.as_deref()),
            // What a write or a deletion leaves does not depend on what was there.
            (None, Edit::Write(_) | Edit::Delete) => ch.edit.apply(None),
            (None, _) => None,
        });
        let located =
            locate_from(self.project, self.file.cwd.as_deref().map(Path::new), &ch.path, self.file.cwd.as_deref());
        let (rel, outside) = match &located {
            Located::Inside { rel, .. } => (rel.clone(), false),
            Located::Outside(abs) => (abs.to_string_lossy().into_owned(), true),
        };
        let created = matches!(pre, Some(None)) && ch.edit.creates();
        let deleted = matches!(ch.edit, Edit::Delete);
        let event = config::detect_event(if outside { None } else { self.matcher }, &rel, &c.tool, created, deleted);
        let mut intent = self.rec(op::INTENT, &c.ts);
        intent.id = id.clone();
        intent.tool = Some(c.tool.clone());
        intent.path = rel.clone();
        intent.outside = outside;
        intent.event = event.clone();
        if !outside {
            if let Some(p) = &pre {
                let (b, nocap) = self.image(p.as_deref(), &rel);
                intent.before = Some(b);
                intent.nocap = nocap;
                if let Some(from) = from {
                    intent = intent.with(key::BEFORE_FROM, from);
                }
            }
            if let Some(Some(want)) = &intended
                && (want.len() as u64) <= self.cfg.capture.max_bytes
            {
                intent = intent.with(key::INTENDED, crate::store::blob_id(want.as_bytes()));
            }
        }
        let before = intent.before.clone();
        self.emit(intent);
        if outside {
            // Session context, settled at once: never an unresolved entry (see `settled_outside`).
            let failed = c.outcome.as_ref().is_some_and(|o| o.error.is_some());
            let ts = c.outcome.as_ref().map_or(c.ts.as_str(), |o| o.ts.as_str());
            if let Some(o) = &c.outcome {
                let mut r = self.rec(if failed { op::FAILED } else { op::APPLIED }, &o.ts);
                r.id = id;
                r.tool = Some(c.tool.clone());
                r.path = rel.clone();
                r.outside = true;
                r.event = event;
                if let Some(err) = &o.error {
                    r = r.with(key::ERROR, clip(err, MAX_ERROR));
                }
                self.emit(r);
            }
            if let Some(e) = self.records.last() {
                let settled = settled_outside(self.rec(op::PERSISTED, ts), e, failed);
                self.emit(settled);
            }
            if !self.report.outside.contains(&rel) {
                self.report.outside.push(rel);
            }
            return;
        }
        let Some(o) = &c.outcome else {
            self.in_flight(c, &id, rel);
            return;
        };
        if let Some(err) = &o.error {
            let mut r = self.rec(op::FAILED, &o.ts);
            r.id = id;
            r.tool = Some(c.tool.clone());
            r.path = rel;
            r.outside = outside;
            r.event = event;
            r = r.with(key::ERROR, clip(err, MAX_ERROR));
            // Held until the turn's end tells whether it stays open.
            self.turn_failed.push(r);
            return;
        }
        let mut r = self.rec(op::APPLIED, &o.ts);
        r.id = id;
        r.tool = Some(c.tool.clone());
        r.path = rel.clone();
        r.outside = outside;
        r.event = event;
        r.before = before;
        if !outside && let Some(after) = &intended {
            let (b, nocap) = self.image(after.as_deref(), &rel);
            r.after = Some(b);
            r.nocap = nocap;
        }
        match intended {
            Some(after) => {
                self.chain.insert(abs, after);
            }
            None => {
                self.chain.remove(&abs);
            }
        }
        self.emit(r);
        self.turn.push(self.records.len() - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_are_told_by_their_first_line() {
        assert_eq!(detect_value(&json!({"timestamp": "t", "type": "session_meta", "payload": {}})), Some(Agent::Codex));
        assert_eq!(detect_value(&json!({"sessionId": "s", "projectHash": "h", "kind": "main"})), Some(Agent::Gemini));
        assert_eq!(detect_value(&json!({"type": "session.start", "data": {}, "id": "e"})), Some(Agent::Copilot));
        // Claude Code's transcript lines.
        assert_eq!(detect_value(&json!({"type": "user", "sessionId": "s", "cwd": "/p"})), None);
        assert_eq!(detect_value(&json!({"type": "summary", "summary": "x"})), None);
    }
}
