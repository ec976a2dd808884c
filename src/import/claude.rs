//! `walj import`: journal records rebuilt from Claude Code transcripts (issue 6).
//!
//! A journal exists only from the moment the hooks are installed, but Claude Code keeps a
//! transcript of every session (`~/.claude/projects/<encoded cwd>/<session>.jsonl`, 30 days
//! by default) with every tool call and, for Edit and Write, the file's original content.
//! This module reads transcripts and appends the records the hooks would have written:
//!
//! - Edit, Write, MultiEdit, NotebookEdit: `intent` (pre-image) then `applied` (post-image),
//!   `failed`, or `resolved` `not_applied` (rejected). Pre-images come from the result's
//!   `originalFile` / `originalFileContents`, else from the previous imported call on the
//!   same file, else from Claude Code's file-history backups; post-images are computed by
//!   applying the tool input to the pre-image. A call with no result is in flight.
//! - Bash: the command's `intent` and `applied` / `failed` (its file side effects are not in
//!   the transcript). TodoWrite and the Task tools: todo snapshots. Prompts, compactions,
//!   and one session start record (`source: "import"`).
//! - Entries of turns that ended (a later prompt, or a final answer) are settled with an
//!   unverified `persisted` record, as the Stop hook would have; the last, unfinished turn
//!   keeps its entries open, so `walj recover` shows what a crash interrupted.
//!
//! Every record carries `imported: true`. Ids are the transcript's own (tool_use ids,
//! line uuids), and a record whose (id, op, kind) is already in the journal is skipped, so
//! importing again adds nothing and a hooked session only gains what the hooks missed.
//! Transcripts are parsed leniently: unknown line types are skipped, assistant lines that
//! share `message.id` are parts of one message, and a torn last line (a crash while Claude
//! Code wrote it) is reported and marks the session as crashed-looking.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::{Value, json};

use super::engine::{
    BY_IMPORT, Blobs, FileReport, InFlight, jsonl_under, locate_from, normalize_ts, settled_outside, turn_settled,
};
use crate::agents::patch::apply_tool;
use crate::claude::events::FILE_TOOLS;
use crate::claude::payload::clip;
use crate::claude::transcript::{Line, LineType, READ_TYPES, UserText, read_head, user_text};
use crate::config::{self, Config, Matcher};
use crate::journal::build::{self, BashIntent, BashOutcome, MAX_ERROR, TodoUpdate};
use crate::journal::{Blob, Record, key, kind, op, tool};
use crate::project::{Located, Project};
use crate::store::blob_id;

fn inside(cwd: &str, root: &Path) -> bool {
    Path::new(cwd).starts_with(root)
}

/// The transcripts of the project at `root` under Claude Code's `config_dir`: those in the
/// folder named after the root (when their lines' `cwd` agrees: the encoding is lossy) and
/// those anywhere else whose `cwd` lies inside the project (sessions started in a
/// subfolder). `since`: only files modified after it.
pub(crate) fn project_transcripts(config_dir: &Path, root: &Path, since: Option<SystemTime>) -> Vec<PathBuf> {
    let projects = config_dir.join("projects");
    let encoded = crate::claude::paths::encode_dir(root);
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(&projects) else { return out };
    for folder in rd.flatten() {
        if !folder.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let name = folder.file_name().to_string_lossy().into_owned();
        let own = name == encoded;
        // Other folders can only hold this project's sessions if their name could encode a
        // path inside the root.
        if !own && !name.starts_with(&format!("{encoded}-")) {
            continue;
        }
        let mut files = Vec::new();
        jsonl_under(&folder.path(), &mut files);
        for f in files {
            if let Some(s) = since
                && fs::metadata(&f).and_then(|m| m.modified()).is_ok_and(|m| m < s)
            {
                continue;
            }
            let head = read_head(&f).unwrap_or_default();
            let ok = match head.cwd.as_deref() {
                Some(cwd) => inside(cwd, root),
                None => own,
            };
            if ok {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

/// Every transcript under `config_dir`, grouped by the project its `cwd` names (git top
/// level, else the folder itself). Folders that no longer exist are returned under `None`.
pub(crate) fn all_transcripts(config_dir: &Path) -> Vec<(Option<PathBuf>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    jsonl_under(&config_dir.join("projects"), &mut files);
    let mut groups: HashMap<Option<PathBuf>, Vec<PathBuf>> = HashMap::new();
    for f in files {
        let head = read_head(&f).unwrap_or_default();
        let root = head.cwd.map(PathBuf::from).filter(|p| p.is_dir()).map(|cwd| {
            let top = crate::project::git_toplevel(&cwd).unwrap_or(cwd);
            fs::canonicalize(&top).unwrap_or(top)
        });
        groups.entry(root).or_default().push(f);
    }
    let mut v: Vec<_> = groups.into_iter().collect();
    v.sort();
    for (_, files) in &mut v {
        files.sort();
    }
    v
}

struct Pending {
    id: String,
    name: String,
    input: Value,
    ts: String,
    cwd: Option<String>,
    session: String,
}

/// One transcript → records.
pub(super) struct Converter<'a> {
    project: &'a Project,
    cfg: &'a Config,
    matcher: Option<&'a Matcher>,
    path: PathBuf,
    config_dir: Option<PathBuf>,
    pub(super) records: Vec<Record>,
    /// Objects the records name (stored before they are appended).
    pub(super) blobs: Blobs,
    pub(super) produced: usize,
    report: FileReport,
    pending: HashMap<String, Pending>,
    pending_order: Vec<String>,
    seen_uses: HashSet<String>,
    /// Last known content per absolute path (`None` = absent), for chained pre-images.
    chain: HashMap<String, Option<Vec<u8>>>,
    /// Claude Code's file-history backups: absolute path → backup file name (`None` = did not exist).
    backups: HashMap<String, Option<String>>,
    sessions: Vec<String>,
    started: HashSet<String>,
    /// The session's first `cwd`: paths are remapped from it when the transcript comes from
    /// another place (a moved project, another machine).
    origin: Option<PathBuf>,
    cwd: Option<String>,
    /// Entries applied in the current turn (settled when the turn ends).
    turn: Vec<usize>,
    /// Failed calls of the current turn (`failed` if it stays open, else not applied).
    turn_failed: Vec<Record>,
    /// Last conversation line: an assistant answer without tool calls ends a turn.
    last_final: bool,
    model: Option<String>,
    /// Timestamp of the last line read.
    last_ts: String,
    /// The assistant message being read (`message.id`) and whether it called a tool.
    message_id: Option<String>,
    message_called_tool: bool,
}

impl<'a> Converter<'a> {
    pub(super) fn new(
        project: &'a Project,
        cfg: &'a Config,
        matcher: Option<&'a Matcher>,
        path: &Path,
        config_dir: Option<&Path>,
    ) -> Converter<'a> {
        Converter {
            project,
            cfg,
            matcher,
            path: path.to_path_buf(),
            config_dir: config_dir.map(Path::to_path_buf),
            records: Vec::new(),
            blobs: Blobs::default(),
            produced: 0,
            report: FileReport { path: path.to_path_buf(), ..FileReport::default() },
            pending: HashMap::new(),
            pending_order: Vec::new(),
            seen_uses: HashSet::new(),
            chain: HashMap::new(),
            backups: HashMap::new(),
            sessions: Vec::new(),
            started: HashSet::new(),
            origin: None,
            cwd: None,
            turn: Vec::new(),
            turn_failed: Vec::new(),
            last_final: false,
            model: None,
            last_ts: String::new(),
            message_id: None,
            message_called_tool: false,
        }
    }

    pub(super) fn read(&mut self, bar: &indicatif::ProgressBar) -> io::Result<()> {
        // A regular file only: a FIFO or a device (`/dev/zero`) could block or never end.
        let (f, _) = crate::fsutil::open_regular(&self.path)?;
        let mut reader = io::BufReader::with_capacity(1 << 20, f);
        let mut buf = Vec::with_capacity(64 * 1024);
        while let Some(cut) = super::engine::read_line_capped(&mut reader, &mut buf, super::engine::MAX_LINE)? {
            bar.inc(buf.len() as u64);
            self.report.lines += 1;
            if cut {
                self.report.oversized += 1;
                continue;
            }
            let complete = buf.last() == Some(&b'\n');
            let body = if complete { &buf[..buf.len() - 1] } else { &buf[..] };
            if body.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let ty = match serde_json::from_slice::<LineType>(body) {
                Ok(k) => k.ty.map(|t| t.into_owned()).unwrap_or_default(),
                Err(_) if !complete => {
                    self.report.torn_tail = true;
                    break;
                }
                Err(_) => {
                    self.report.malformed += 1;
                    continue;
                }
            };
            if !READ_TYPES.contains(&ty.as_str()) {
                continue; // summary, attachment, api-request, metadata lines, future types
            }
            match serde_json::from_slice::<Line>(body) {
                Ok(line) => self.line(line),
                Err(_) => self.report.malformed += 1,
            }
        }
        Ok(())
    }

    fn emit(&mut self, mut r: Record) {
        r.extra.insert(key::IMPORTED.into(), Value::Bool(true));
        self.produced += 1;
        self.records.push(r);
    }

    /// A record of `session` stamped with the transcript's time.
    fn rec(&self, op_name: &str, session: &str, ts: &str) -> Record {
        let mut r = Record::new(op_name, session);
        if !ts.is_empty() {
            r.ts = normalize_ts(ts);
        }
        r
    }

    fn session_rec(&self, k: &str, session: &str, ts: &str) -> Record {
        build::session(self.rec(op::SESSION, session, ts), k)
    }

    fn line(&mut self, line: Line) {
        let ts = line.timestamp.clone().unwrap_or_default();
        if !ts.is_empty() {
            self.last_ts = ts.clone();
        }
        let Some(session) = line.session.clone().filter(|s| !s.is_empty()) else {
            if line.ty == "file-history-snapshot" {
                self.file_history(&line);
            }
            return;
        };
        if let Some(c) = &line.cwd {
            if self.origin.is_none() {
                self.origin = Some(PathBuf::from(c));
            }
            self.cwd = Some(c.clone());
        }
        if !self.sessions.contains(&session) {
            self.sessions.push(session.clone());
        }
        if !line.sidechain && !self.started.contains(&session) && matches!(line.ty.as_str(), "user" | "assistant") {
            self.started.insert(session.clone());
            let mut r = self.session_rec(kind::START, &session, &ts);
            r.id = format!("import:{session}");
            r = r.with(key::SOURCE, "import").with(key::TRANSCRIPT, self.path.to_string_lossy().into_owned());
            if let Some(c) = &line.cwd {
                r = r.with(key::CWD, c.as_str());
            }
            if let Some(b) = &line.branch {
                r = r.with(key::BRANCH, b.as_str());
            }
            if let Some(v) = &line.version {
                r = r.with(key::CLAUDE_VERSION, v.as_str());
            }
            self.emit(r);
        }
        match line.ty.as_str() {
            "assistant" => self.assistant(line, &session, &ts),
            "user" => self.user(line, &session, &ts),
            "system" if line.subtype.as_deref() == Some("compact_boundary") => {
                let mut r = self.session_rec(kind::COMPACT, &session, &ts);
                r.id = line.uuid.clone().unwrap_or_default();
                let trigger = line.compact.as_ref().and_then(|c| c.get("trigger")).and_then(Value::as_str);
                r = r.with(key::TRIGGER, trigger.unwrap_or(""));
                if !r.id.is_empty() {
                    self.emit(r);
                }
            }
            "file-history-snapshot" => self.file_history(&line),
            _ => {}
        }
    }

    fn file_history(&mut self, line: &Line) {
        let Some(tracked) = line.snapshot.as_ref().and_then(|s| s.get("trackedFileBackups")).and_then(Value::as_object)
        else {
            return;
        };
        for (p, b) in tracked {
            let abs = self.absolute(p);
            let name = b.get("backupFileName").and_then(Value::as_str).map(str::to_string);
            self.backups.insert(abs, name);
        }
    }

    fn absolute(&self, p: &str) -> String {
        if Path::new(p).is_absolute() {
            return p.to_string();
        }
        let base = self.cwd.as_deref().map(PathBuf::from).or_else(|| self.origin.clone());
        match base {
            Some(b) => crate::project::normalize(&b.join(p)).to_string_lossy().into_owned(),
            None => p.to_string(),
        }
    }

    fn assistant(&mut self, line: Line, session: &str, ts: &str) {
        if line.api_error {
            self.api_error(&line, session, ts);
            return;
        }
        let Some(msg) = line.message else { return };
        if self.model.is_none() {
            self.model = msg.model.clone().filter(|m| !m.starts_with('<'));
        }
        // Lines sharing `message.id` are parts of one streamed message: their blocks are read
        // one by one (a block repeated by a later line is seen once), and whether the message
        // called a tool is decided over all its parts.
        if msg.id.is_none() || msg.id != self.message_id {
            self.message_id = msg.id.clone();
            self.message_called_tool = false;
        }
        let blocks = match msg.content {
            Value::Array(b) => b,
            _ => Vec::new(),
        };
        let mut has_tool = false;
        for b in blocks {
            if b.get("type").and_then(Value::as_str) != Some("tool_use") {
                continue;
            }
            has_tool = true;
            let Some(id) = b.get("id").and_then(Value::as_str).map(str::to_string) else { continue };
            // Streamed or repeated lines may carry the same block again.
            if !self.seen_uses.insert(id.clone()) {
                continue;
            }
            let name = b.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            let input = b.get("input").cloned().unwrap_or(Value::Null);
            self.report.tool_calls += 1;
            self.pending_order.push(id.clone());
            self.pending.insert(
                id.clone(),
                Pending { id, name, input, ts: ts.to_string(), cwd: line.cwd.clone(), session: session.to_string() },
            );
        }
        self.message_called_tool |= has_tool;
        self.last_final = !self.message_called_tool && self.pending.is_empty();
    }

    /// Claude Code's synthetic answer when the API failed: the turn ended without finishing
    /// (the StopFailure hook's record, with its reason); its entries stay open.
    fn api_error(&mut self, line: &Line, session: &str, ts: &str) {
        let text = match line.message.as_ref().map(|m| &m.content) {
            Some(Value::Array(blocks)) => {
                blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
            }
            Some(Value::String(t)) => t.clone(),
            _ => String::new(),
        };
        let error = line.error.as_ref().and_then(Value::as_str).unwrap_or("unknown");
        let mut r = self.rec(op::SESSION, session, ts);
        r.id = line.uuid.clone().unwrap_or_default();
        let r = build::stop_failure(r, error, None, Some(&text).filter(|t| !t.is_empty()).map(String::as_str));
        if !r.id.is_empty() {
            self.emit(r);
        }
        self.last_final = false;
        self.message_id = None;
    }

    fn user(&mut self, line: Line, session: &str, ts: &str) {
        let Some(msg) = &line.message else { return };
        let mut results = Vec::new();
        let mut text = String::new();
        match &msg.content {
            Value::String(s) => text = s.clone(),
            Value::Array(blocks) => {
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("tool_result") => {
                            if let Some(id) = b.get("tool_use_id").and_then(Value::as_str) {
                                results.push((id.to_string(), b.clone()));
                            }
                        }
                        Some("text") => {
                            if let Some(t) = b.get("text").and_then(Value::as_str) {
                                if !text.is_empty() {
                                    text.push('\n');
                                }
                                text.push_str(t);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        self.last_final = false;
        // A user line ends the assistant message before it (even one reusing its id).
        self.message_id = None;
        for (id, block) in results {
            self.result(&id, &block, line.tool_use_result.as_ref(), ts);
        }
        let text = text.trim();
        if text.is_empty() || line.meta || line.sidechain || line.compact_summary {
            return;
        }
        let text = match user_text(text) {
            UserText::Prompt(t) => t,
            UserText::TaskNotification(n) => {
                // A background task ended: news for its command, not a prompt. Claude Code
                // delivers it between turns, and it starts one: the previous turn ended.
                self.settle_turn(ts);
                let mut r = self.session_rec(kind::TASK_NOTIFICATION, session, ts);
                r.id = line.uuid.clone().unwrap_or_default();
                let r = build::task_notification(r, &n);
                if !r.id.is_empty() {
                    self.emit(r);
                }
                return;
            }
            UserText::Meta => return,
        };
        // A new prompt: the previous turn ended.
        self.settle_turn(ts);
        let mut r = self.session_rec(kind::PROMPT, session, ts);
        r.id = line.uuid.clone().unwrap_or_else(|| format!("prompt:{}", blob_id(text.as_bytes())));
        let r = build::prompt(r, &text);
        self.emit(r);
    }

    /// Entries applied in the turn that just ended are settled, as the Stop hook would have
    /// (unverified: the disk of that time is gone).
    fn settle_turn(&mut self, ts: &str) {
        let (failed, applied) = (std::mem::take(&mut self.turn_failed), std::mem::take(&mut self.turn));
        for r in turn_settled(failed, applied, &self.records, |e| self.rec(op::PERSISTED, &e.session, ts)) {
            self.emit(r);
        }
    }

    fn result(&mut self, id: &str, block: &Value, tur: Option<&Value>, ts: &str) {
        let Some(p) = self.pending.remove(id) else { return };
        self.pending_order.retain(|x| x != id);
        let content_text = match block.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(a)) => {
                a.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
            }
            _ => String::new(),
        };
        // The result block's `is_error` decides, never the shape of `toolUseResult`: older
        // transcripts store a successful call's result as a plain string too.
        let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
        let error_text = if is_error {
            Some(tur.and_then(Value::as_str).map(str::to_string).filter(|s| !s.is_empty()).unwrap_or(content_text))
        } else {
            None
        };
        let resp = tur.filter(|v| v.is_object());
        match p.name.as_str() {
            n if FILE_TOOLS.contains(&n) => self.file_call(&p, Some((resp, error_text.as_deref(), ts))),
            tool::BASH => self.bash_call(&p, Some((resp, error_text.as_deref(), ts))),
            tool::TODO_WRITE | tool::TASK_CREATE | tool::TASK_UPDATE if error_text.is_none() => {
                self.todo_call(&p, tur, ts)
            }
            _ => {}
        }
    }

    /// Ends the transcript: calls without results are in flight.
    pub(super) fn finish(&mut self) -> FileReport {
        for id in std::mem::take(&mut self.pending_order) {
            let Some(p) = self.pending.remove(&id) else { continue };
            match p.name.as_str() {
                n if FILE_TOOLS.contains(&n) => self.file_call(&p, None),
                tool::BASH => self.bash_call(&p, None),
                _ => {}
            }
        }
        // A final answer ends the last turn; an interrupted or cut one stays open.
        if self.last_final && !self.report.torn_tail && self.report.in_flight.is_empty() {
            let ts = self.last_ts.clone();
            self.settle_turn(&ts);
        }
        for r in std::mem::take(&mut self.turn_failed) {
            self.emit(r);
        }
        if self.report.torn_tail {
            let sessions = self.sessions.clone();
            for s in sessions {
                let ts = self.records.iter().rev().find(|r| r.session == s).map(|r| r.ts.clone()).unwrap_or_default();
                let mut r = self.session_rec("torn_tail", &s, &ts);
                r.id = format!("torn:{}:{}", s, self.report.lines);
                r = r.with(key::TRANSCRIPT, self.path.to_string_lossy().into_owned());
                self.emit(r);
            }
        }
        if let Some(m) = self.model.clone() {
            for r in self.records.iter_mut().filter(|r| r.kind.as_deref() == Some(kind::START)) {
                r.extra.insert(key::MODEL.into(), json!(m));
            }
        }
        self.report.sessions = self.sessions.clone();
        std::mem::take(&mut self.report)
    }

    /// Where a tool's file lands in this project: remapped from the transcript's origin when
    /// the transcript was recorded elsewhere.
    fn locate(&self, file_path: &str, cwd: Option<&str>) -> Located {
        locate_from(self.project, self.origin.as_deref(), file_path, cwd)
    }

    fn blob(&mut self, bytes: &[u8], rel: &str) -> (Blob, Option<String>) {
        self.blobs.put(self.cfg, self.matcher, bytes, rel)
    }

    fn file_call(&mut self, p: &Pending, outcome: Option<(Option<&Value>, Option<&str>, &str)>) {
        let Some(file_path) = p
            .input
            .get("file_path")
            .or_else(|| p.input.get("notebook_path"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            return;
        };
        let abs_key = self.absolute(file_path);
        let mut intent = self.rec(op::INTENT, &p.session, &p.ts);
        intent.id = p.id.clone();
        intent.tool = Some(p.name.clone());
        let resp = outcome.and_then(|(r, _, _)| r);
        let field = |k: &str| resp.and_then(|r| r.get(k));
        // The pre-image: the result's original content, else the previous call's result,
        // else Claude Code's file-history backup.
        let original =
            field("originalFile").or_else(|| field("originalFileContents")).or_else(|| field("original_file"));
        let created = field("type").and_then(Value::as_str) == Some("create") || original.is_some_and(Value::is_null);
        let mut before_from = "transcript";
        let pre: Option<Option<Vec<u8>>> = match original {
            Some(Value::String(s)) => Some(Some(s.as_bytes().to_vec())),
            _ if created => Some(None),
            _ => match self.chain.get(&abs_key) {
                Some(c) => {
                    before_from = "previous_call";
                    Some(c.clone())
                }
                None => {
                    before_from = "file_history";
                    self.backup(&p.session, &abs_key)
                }
            },
        };
        let located = self.locate(file_path, p.cwd.as_deref());
        let (rel, outside) = match &located {
            Located::Inside { rel, .. } => (rel.clone(), false),
            Located::Outside(abs) => (abs.to_string_lossy().into_owned(), true),
        };
        intent.path = rel.clone();
        intent.outside = outside;
        intent.event = config::detect_event(
            if outside { None } else { self.matcher },
            &rel,
            &p.name,
            created && p.name == "Write",
            false,
        );
        if !outside {
            match &pre {
                Some(Some(bytes)) => {
                    let (b, nocap) = self.blob(bytes, &rel);
                    intent.before = Some(b);
                    intent.nocap = nocap;
                    if before_from != "transcript" {
                        intent = intent.with(key::BEFORE_FROM, before_from);
                    }
                }
                Some(None) => intent.before = Some(Blob::Absent),
                None => {}
            }
        }
        let before = intent.before.clone();
        let event = intent.event.clone();
        self.emit(intent);
        if outside {
            self.outside_call(p, outcome.map(|(_, error, ts)| (error, ts)), rel, event);
            return;
        }
        let Some((_, error, ts)) = outcome else {
            self.report.in_flight.push(InFlight {
                session: p.session.clone(),
                id: p.id.clone(),
                tool: p.name.clone(),
                what: rel,
            });
            return;
        };
        if let Some(err) = error {
            let rejected = is_rejection(err);
            let mut r = self.rec(if rejected { op::RESOLVED } else { op::FAILED }, &p.session, ts);
            r.id = p.id.clone();
            r.tool = Some(p.name.clone());
            r.path = rel;
            r.outside = outside;
            r.event = event;
            r = r.with(key::ERROR, clip(err, MAX_ERROR));
            if rejected {
                self.emit(build::not_applied(r, BY_IMPORT));
            } else {
                // Held until the turn's end tells whether it stays open.
                self.turn_failed.push(r);
            }
            return;
        }
        let post = match &pre {
            Some(pre) => apply_tool(&p.name, &p.input, resp, pre.as_deref()),
            // A Write's result does not depend on what was there.
            None if p.name == "Write" => apply_tool(&p.name, &p.input, resp, None),
            None => None,
        };
        let mut r = self.rec(op::APPLIED, &p.session, ts);
        r.id = p.id.clone();
        r.tool = Some(p.name.clone());
        r.path = rel.clone();
        r.outside = outside;
        r.event = event;
        r.before = before;
        if !outside && let Some(bytes) = &post {
            let (b, nocap) = self.blob(bytes, &rel);
            r.after = Some(b);
            r.nocap = nocap.or(r.nocap.take());
        }
        match post {
            Some(bytes) => {
                self.chain.insert(abs_key, Some(bytes));
            }
            None => {
                self.chain.remove(&abs_key);
            }
        }
        self.emit(r);
        self.turn.push(self.records.len() - 1);
    }

    /// A call on a file outside the project (`rel` is its absolute path): its outcome, then
    /// settled at once ([`settled_outside`]): session context, never an unresolved entry.
    fn outside_call(&mut self, p: &Pending, outcome: Option<(Option<&str>, &str)>, rel: String, event: String) {
        let failed = outcome.is_some_and(|(error, _)| error.is_some());
        let ts = outcome.map_or(p.ts.as_str(), |(_, ts)| ts);
        if let Some((error, ts)) = outcome {
            let mut r = self.rec(if failed { op::FAILED } else { op::APPLIED }, &p.session, ts);
            r.id = p.id.clone();
            r.tool = Some(p.name.clone());
            r.path = rel.clone();
            r.outside = true;
            r.event = event;
            if let Some(err) = error {
                r = r.with(key::ERROR, clip(err, MAX_ERROR));
            }
            self.emit(r);
        }
        let Some(e) = self.records.last() else { return };
        let settled = settled_outside(self.rec(op::PERSISTED, &p.session, ts), e, failed);
        self.emit(settled);
        if !self.report.outside.contains(&rel) {
            self.report.outside.push(rel);
        }
    }

    /// A file-history backup of `abs` for `session`: `Some(None)` = the file did not exist.
    fn backup(&self, session: &str, abs: &str) -> Option<Option<Vec<u8>>> {
        let name = self.backups.get(abs)?;
        let Some(name) = name else { return Some(None) };
        let dir = self.config_dir.as_ref()?.join("file-history").join(session);
        fs::read(dir.join(name)).ok().map(Some)
    }

    fn bash_call(&mut self, p: &Pending, outcome: Option<(Option<&Value>, Option<&str>, &str)>) {
        let command = p.input.get("command").and_then(Value::as_str).unwrap_or("");
        let mut r = self.rec(op::INTENT, &p.session, &p.ts);
        r.id = p.id.clone();
        let r = BashIntent {
            command,
            description: p.input.get("description").and_then(Value::as_str),
            background: p.input.get("run_in_background").and_then(Value::as_bool) == Some(true),
            cwd: p.cwd.as_deref(),
        }
        .fill(r);
        self.emit(r);
        let Some((resp, error, ts)) = outcome else {
            self.report.in_flight.push(InFlight {
                session: p.session.clone(),
                id: p.id.clone(),
                tool: tool::BASH.into(),
                what: clip(command, 200),
            });
            return;
        };
        let mut r = self.rec(if error.is_some() { op::FAILED } else { op::APPLIED }, &p.session, ts);
        r.id = p.id.clone();
        let r = BashOutcome {
            command,
            error,
            task_id: resp.and_then(|v| v.get("backgroundTaskId")).and_then(Value::as_str),
            interrupted: resp.and_then(|v| v.get("interrupted")).and_then(Value::as_bool) == Some(true),
        }
        .fill(r);
        self.emit(r);
    }

    fn todo_call(&mut self, p: &Pending, tur: Option<&Value>, ts: &str) {
        let update = if p.name == tool::TODO_WRITE {
            let todos = p
                .input
                .get("todos")
                .or_else(|| tur.and_then(|t| t.get("newTodos")))
                .cloned()
                .unwrap_or(Value::Array(vec![]));
            let skipped =
                todos.as_array().map_or(0, |l| l.iter().filter(|t| crate::fold::todo_from_json(t).is_none()).count());
            self.report.todos_skipped += skipped as u64;
            TodoUpdate::Todos(todos)
        } else {
            TodoUpdate::Task { input: p.input.clone(), response: tur.cloned().unwrap_or(Value::Null) }
        };
        let base = self.rec(op::SESSION, &p.session, ts);
        self.emit(build::todos(base, &p.name, Some(&p.id), update));
    }
}

/// Claude Code's texts for a call the user refused (or interrupted before it ran).
fn is_rejection(err: &str) -> bool {
    let e = err.to_ascii_lowercase();
    e.contains("doesn't want to proceed")
        || e.contains("user rejected")
        || e.contains("was rejected")
        || e.contains("interrupted by user for tool use")
        || e.contains("permission to use") && e.contains("denied")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections() {
        assert!(is_rejection(
            "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
        ));
        assert!(!is_rejection("String to replace not found in file."));
    }
}
