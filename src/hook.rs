//! `walj hook`: one Claude Code hook payload on stdin → journal records (DESIGN §5).
//!
//! The hook never blocks Claude: every error is logged (to `.walj/errors.log` when it
//! can, and stderr) and the process exits 0. It prints nothing on stdout except at
//! SessionStart, where it may print one JSON object (recovery note, hand-back briefs).
//! It writes nothing outside `.walj/`, but a failure marker when `.walj/` itself cannot be
//! written ([`crate::failmark`]). The hot path (Pre/Post of a file tool) reads the
//! config only if the file exists, reads the file, stores its image and appends one line.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::claude::events::{FILE_TOOLS, HookEvent, TODO_TOOLS};
use crate::claude::payload::{Payload, clip};
use crate::claude::transcript::UserText;
use crate::config::{self, Config, Matcher};
use crate::fold::{Fold, FoldOptions, SessionStatus};
use crate::journal::build::{self, BashIntent, BashOutcome, MAX_ERROR, MAX_TEXT, TodoUpdate};
use crate::journal::{Blob, JournalWriter, Record, key, kind, nocap, op, tool};
use crate::procinfo;
use crate::project::{Located, Project};
use crate::store::{Store, file_blob_id};
use crate::{announce, bashsnap, checkpoint};

#[derive(Debug, Default, Clone)]
pub struct HookOptions {
    pub project: Option<PathBuf>,
    pub journal: Option<PathBuf>,
}

/// What the hook prints (only ever at SessionStart).
#[derive(Debug, Default)]
pub struct HookOutcome {
    pub stdout: Option<String>,
    pub errors: Vec<String>,
}

/// Handles one payload. Never fails: problems are returned in `errors` for logging.
pub fn run(input: &[u8], opts: &HookOptions) -> HookOutcome {
    let mut out = HookOutcome::default();
    let process_cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let payload = match Payload::parse(input) {
        Ok(p) => p,
        Err(e) => {
            let e = e.to_string();
            let project = Project::discover(opts.project.as_deref(), &process_cwd, opts.journal.as_deref());
            log_error(&project, &e);
            out.errors.push(e);
            return out;
        }
    };
    let cwd = payload.cwd().map(PathBuf::from).filter(|p| p.is_absolute()).unwrap_or(process_cwd);
    let project = Project::discover(opts.project.as_deref(), &cwd, opts.journal.as_deref());
    let ctx = Ctx { project: &project, payload: &payload, cwd: &cwd };
    match ctx.handle() {
        Ok(stdout) => out.stdout = stdout,
        Err(e) => {
            let msg = format!("{}: {e}", payload.event_name().unwrap_or("hook"));
            log_error(&project, &msg);
            out.errors.push(msg);
        }
    }
    out
}

/// Prints `walj hook: msg` on stderr. Not `eprintln!`, which panics when stderr is closed
/// (Claude Code gone mid-hook): a message must never stop the hook's work.
pub fn warn(msg: &str) {
    let _ = writeln!(std::io::stderr(), "walj hook: {msg}");
}

/// Appends a line to `.walj/errors.log` (best effort) and prints it on stderr.
pub fn log_error(project: &Project, msg: &str) {
    warn(msg);
    if project.ensure_dir().is_err() {
        return;
    }
    // Capped, rotated, repeated messages collapsed.
    crate::fsutil::append_log(&project.errors_log(), msg);
}

struct Ctx<'a> {
    project: &'a Project,
    payload: &'a Payload,
    cwd: &'a Path,
}

type HookResult = Result<Option<String>, Box<dyn std::error::Error>>;

impl Ctx<'_> {
    fn handle(&self) -> HookResult {
        let Some(event) = self.payload.event() else {
            // Unknown events are not errors: newer clients send events walj does not know.
            return Ok(None);
        };
        let tool = self.payload.tool_name();
        match event {
            HookEvent::PreToolUse if FILE_TOOLS.contains(&tool) => self.file_intent(),
            HookEvent::PreToolUse if tool == tool::BASH => self.bash(op::INTENT),
            HookEvent::PostToolUse | HookEvent::PostToolUseFailure if FILE_TOOLS.contains(&tool) => {
                self.file_outcome(event == HookEvent::PostToolUseFailure)
            }
            HookEvent::PostToolUse if tool == tool::BASH => self.bash(op::APPLIED),
            HookEvent::PostToolUseFailure if tool == tool::BASH => self.bash(op::FAILED),
            HookEvent::PostToolUse if TODO_TOOLS.contains(&tool) => self.todos(),
            HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::PostToolUseFailure => Ok(None),
            HookEvent::UserPromptSubmit => self.prompt(),
            HookEvent::Stop | HookEvent::SubagentStop => self.stop(event == HookEvent::Stop),
            HookEvent::StopFailure => self.stop_failure(),
            HookEvent::PreCompact => {
                copy_transcript(self.project, self.payload);
                let mut r = self.session_record(kind::COMPACT);
                r = r.with(key::TRIGGER, self.payload.str("trigger").unwrap_or(""));
                if let Some(ci) = self.payload.str("custom_instructions").filter(|s| !s.is_empty()) {
                    r = r.with(key::CUSTOM_INSTRUCTIONS, build::safe(ci, MAX_TEXT));
                }
                self.append(&[r])
            }
            HookEvent::SessionStart => self.session_start(),
            HookEvent::SessionEnd => {
                copy_transcript(self.project, self.payload);
                self.missed_stop_failure();
                let r = self.session_record(kind::END).with(key::REASON, self.payload.str("reason").unwrap_or("other"));
                self.append(&[r])?;
                // Retention that runs itself: a detached compaction when the journal grew large.
                let (cfg, _) = self.config();
                if let Err(e) = crate::retention::maybe_spawn(self.project, &cfg) {
                    log_error(self.project, &format!("starting the automatic compaction: {e}"));
                }
                Ok(None)
            }
        }
    }

    fn append(&self, records: &[Record]) -> HookResult {
        let written = self
            .project
            .ensure_dir()
            .and_then(|()| JournalWriter::new(&self.project.journal).append_all(records).map(|_| ()));
        if let Err(e) = written {
            // `.walj/` cannot be written (full, read-only): errors.log may not take the
            // message either, so the gap is kept where it can be, for the next SessionStart.
            if let Err(m) = crate::failmark::record(self.project, records.len(), &e.to_string()) {
                warn(&format!("keeping the failure marker: {m}"));
            }
            return Err(e.into());
        }
        Ok(None)
    }

    /// A record of this payload's session, stamped with the Claude Code process.
    fn record(&self, op_name: &str) -> Record {
        let mut r = Record::new(op_name, self.payload.session_id());
        if let Some(p) = procinfo::claude_process() {
            r.pid = Some(p.pid);
            r.pstart = Some(p.start);
        }
        r
    }

    fn session_record(&self, k: &str) -> Record {
        let mut r = build::session(self.record(op::SESSION), k);
        if let Some(t) = self.payload.str("transcript_path") {
            r = r.with(key::TRANSCRIPT, t);
        }
        r
    }

    /// The tool call's id, or a generated one to be paired by (session, tool, path, order).
    fn call_id(&self, r: &mut Record) {
        match self.payload.tool_use_id() {
            Some(id) => r.id = id.to_string(),
            None => {
                r.id = crate::journal::record::new_id("w");
                r.extra.insert(key::PAIR.into(), Value::Bool(true));
            }
        }
    }

    fn file_intent(&self) -> HookResult {
        let tool = self.payload.tool_name();
        let mut r = self.record(op::INTENT);
        r.tool = Some(tool.to_string());
        self.call_id(&mut r);
        let Some(file_path) = self.payload.file_path() else {
            return Err("PreToolUse without a file_path".into());
        };
        if build::unusable_path(&mut r, file_path) {
            return self.append(&[r]);
        }
        if let Some((rel, abs)) = self.locate(&mut r, file_path, tool) {
            let (cfg, matcher) = self.config();
            let image = capture(&self.project.store_dir(), &abs, &rel, &cfg, matcher.as_ref());
            let created = image.blob.as_ref().is_some_and(Blob::is_absent);
            r.event = config::detect_event(matcher.as_ref(), &rel, tool, created && tool == "Write", false);
            // What the call means to leave on disk (by id): after a crash, the disk tells
            // whether it completed ([`crate::fold::InFlightCheck`]).
            let pre = if created { None } else { image.bytes.as_deref() };
            if (created || pre.is_some() || tool == "Write")
                && let Some(want) = crate::import::apply_tool(tool, self.payload.tool_input(), None, pre)
                // Over the cap the disk is compared by sampled identity: no id to expect.
                && (want.len() as u64) <= cfg.capture.max_bytes
            {
                r = r.with(key::INTENDED, crate::store::blob_id(&want));
            }
            r.path = rel;
            r.before = image.blob;
            r.nocap = image.nocap;
        }
        self.log_nocap(&r);
        self.append(&[r])
    }

    /// Where the tool's file is: inside the project `(rel, abs)`, or outside, which is
    /// recorded in `r` as such (absolute path, nothing captured) and gives `None`.
    fn locate(&self, r: &mut Record, file_path: &str, tool: &str) -> Option<(String, PathBuf)> {
        match self.project.locate(file_path, Some(self.cwd)) {
            Located::Inside { rel, abs } => Some((rel, abs)),
            Located::Outside(abs) => {
                r.path = abs.to_string_lossy().into_owned();
                r.outside = true;
                r.event = config::detect_event(None, &r.path, tool, false, false);
                None
            }
        }
    }

    fn file_outcome(&self, failed: bool) -> HookResult {
        let tool = self.payload.tool_name();
        let mut r = self.record(if failed { op::FAILED } else { op::APPLIED });
        r.tool = Some(tool.to_string());
        self.call_id(&mut r);
        let Some(file_path) = self.payload.file_path() else {
            return Err("PostToolUse without a file_path".into());
        };
        if failed {
            let err = self.payload.str("error").unwrap_or("");
            r = r.with(key::ERROR, clip(err, MAX_ERROR));
            if self.payload.0.get("is_interrupt").and_then(Value::as_bool) == Some(true) {
                r = r.with(key::INTERRUPTED, true);
            }
        }
        if build::unusable_path(&mut r, file_path) {
            return self.append(&[r]);
        }
        if let Some((rel, abs)) = self.locate(&mut r, file_path, tool) {
            let (cfg, matcher) = self.config();
            let store = self.project.store_dir();
            // The response's original content is the real pre-image: keep it in case
            // the intent was never recorded (hooks installed mid-call, empty stdin).
            let original = self
                .payload
                .response_field("originalFile")
                .or_else(|| self.payload.response_field("originalFileContents"));
            let created = self.payload.response_field("type").and_then(Value::as_str) == Some("create")
                || original.is_some_and(Value::is_null);
            if let Some(Value::String(orig)) = original {
                if !never(&rel, matcher.as_ref())
                    && (orig.len() as u64) <= cfg.capture.max_bytes
                    && !crate::secrets::secret_content(orig.as_bytes())
                {
                    r.before = Some(Blob::Id(match Store::new(&store).put(orig.as_bytes()) {
                        Ok(id) => id,
                        Err(e) => {
                            // Not stored: the record keeps its id and says so.
                            r.nocap = Some(nocap_err(nocap::STORE_FAILED, &e));
                            crate::store::blob_id(orig.as_bytes())
                        }
                    }));
                }
            } else if created {
                r.before = Some(Blob::Absent);
            }
            if !failed {
                let image = capture(&store, &abs, &rel, &cfg, matcher.as_ref());
                r.after = image.blob;
                r.nocap = image.nocap.or(r.nocap.take());
            }
            r.event = config::detect_event(matcher.as_ref(), &rel, tool, created && tool == "Write", false);
            r.path = rel;
        }
        self.log_nocap(&r);
        self.append(&[r])
    }

    /// An image that could not be stored or read is recorded, and logged too.
    fn log_nocap(&self, r: &Record) {
        if let Some(n) =
            r.nocap.as_deref().filter(|n| n.starts_with(nocap::STORE_FAILED) || n.starts_with(nocap::UNREADABLE))
        {
            log_error(self.project, &format!("{}: {n}", r.path));
        }
    }

    fn bash(&self, op_name: &str) -> HookResult {
        let mut r = self.record(op_name);
        self.call_id(&mut r);
        let command = self.payload.input_str("command").unwrap_or("");
        let flag = |v: Option<&Value>| v.and_then(Value::as_bool) == Some(true);
        let mut r = if op_name == op::INTENT {
            let cwd = self.cwd.to_string_lossy();
            BashIntent {
                command,
                description: self.payload.input_str("description"),
                background: flag(self.payload.tool_input().get("run_in_background")),
                cwd: Some(&cwd),
            }
            .fill(r)
        } else if op_name == op::APPLIED {
            BashOutcome {
                command,
                error: None,
                task_id: self.payload.response_field("backgroundTaskId").and_then(Value::as_str),
                interrupted: flag(self.payload.response_field("interrupted")),
            }
            .fill(r)
        } else {
            BashOutcome {
                command,
                error: Some(self.payload.str("error").unwrap_or("")),
                task_id: None,
                interrupted: flag(self.payload.0.get("is_interrupt")),
            }
            .fill(r)
        };
        let children = self.bash_side_effects(op_name, &mut r);
        self.append(&[vec![r], children].concat())
    }

    /// Bash side effects (src/bashsnap.rs): snapshot at Pre, child entries at Post. A
    /// failure is logged and never fails the hook or loses the command's own record.
    fn bash_side_effects(&self, op_name: &str, r: &mut Record) -> Vec<Record> {
        let (cfg, matcher) = self.config();
        let call = bashsnap::Call {
            session: self.payload.session_id(),
            tool_use_id: self.payload.tool_use_id(),
            command: self.payload.input_str("command").unwrap_or(""),
            background: self.payload.tool_input().get("run_in_background").and_then(Value::as_bool) == Some(true),
            task_id: self.payload.response_field("backgroundTaskId").and_then(Value::as_str),
        };
        let result = if op_name == op::INTENT {
            bashsnap::before(self.project, &cfg, matcher.as_ref(), &call).map(|()| bashsnap::Outcome::default())
        } else {
            bashsnap::after(self.project, &cfg, matcher.as_ref(), &call)
        };
        match result {
            Ok(mut out) => {
                if let Some(s) = out.summary.take() {
                    r.extra.insert(key::SNAPSHOT.into(), s);
                }
                for c in &mut out.records {
                    c.pid = r.pid;
                    c.pstart = r.pstart;
                }
                out.records
            }
            Err(e) => {
                log_error(self.project, &format!("Bash side effects: {e}"));
                Vec::new()
            }
        }
    }

    fn todos(&self) -> HookResult {
        let tool_name = self.payload.tool_name();
        let update = if tool_name == tool::TODO_WRITE {
            let todos = self
                .payload
                .tool_input()
                .get("todos")
                .or_else(|| self.payload.response_field("newTodos"))
                .cloned()
                .unwrap_or(Value::Array(vec![]));
            TodoUpdate::Todos(todos)
        } else {
            TodoUpdate::Task {
                input: self.payload.tool_input().clone(),
                response: self.payload.tool_response().clone(),
            }
        };
        let base = self.session_record(kind::TODOS);
        self.append(&[build::todos(base, tool_name, self.payload.tool_use_id(), update)])
    }

    /// UserPromptSubmit: the transcript's safe copy grows from the first turn; the session's
    /// previous turn, if it ended without a Stop (an Esc interrupt, an API error), is verified
    /// now that the session moved on; then the prompt is recorded, unless Claude Code wrote it
    /// (a local command's output: nothing; a background task's `<task-notification>`: news
    /// of that task).
    fn prompt(&self) -> HookResult {
        copy_transcript(self.project, self.payload);
        self.verify_unfinished_turn();
        let text = self.payload.str("prompt").unwrap_or("");
        let mut r = match crate::claude::transcript::user_text(text) {
            UserText::Prompt(p) => build::prompt(self.session_record(kind::PROMPT), &p),
            UserText::TaskNotification(n) => build::task_notification(self.session_record(kind::TASK_NOTIFICATION), &n),
            UserText::Meta => return Ok(None),
        };
        if let Some(id) = self.payload.str(key::PROMPT_ID) {
            r = r.with(key::PROMPT_ID, id);
        }
        self.append(&[r])
    }

    /// Verifies the session's previous turn when it ended without a Stop while Claude Code
    /// lived on (an Esc interrupt; a StopFailure after an API error): like a Stop would have,
    /// but only that turn's entries (a resumed crashed session's older entries stay as the
    /// crash left them). A Bash command without an outcome gets the changes it made as
    /// unfinished children ([`bashsnap::killed::settle_own`]): an interrupt kills a command
    /// that ran, it was not denied. A message queued while the turn still runs fires
    /// UserPromptSubmit too, with that turn's `prompt_id`: then nothing is verified. Without
    /// prompt ids (older Claude Code) the two cannot be told apart, and the next Stop verifies.
    /// Errors are logged, never fatal.
    fn verify_unfinished_turn(&self) {
        let Some(now) = self.payload.str(key::PROMPT_ID) else { return };
        let Some(turn) = unfinished_turn(&self.project.journal, self.payload.session_id()) else { return };
        if turn.prompt_id.as_deref().is_none_or(|id| id == now) {
            return;
        }
        // A command the interrupt cut off: what it changed, before the turn is verified (no
        // tool call of the new turn has run yet).
        let (cfg, matcher) = self.config();
        match bashsnap::killed::settle_own(self.project, &cfg, matcher.as_ref(), self.payload.session_id()) {
            Ok(children) if !children.is_empty() => {
                if let Err(e) = self.append(&children) {
                    log_error(self.project, &format!("recording an interrupted command's changes: {e}"));
                }
            }
            Ok(_) => {}
            Err(e) => log_error(self.project, &format!("an interrupted command's changes: {e}")),
        }
        let opts = checkpoint::CheckpointOptions { settle_intents: true, since: Some(&turn.ts), ..Default::default() };
        if let Err(e) = checkpoint::checkpoint(self.project, Some(self.payload.session_id()), opts) {
            log_error(self.project, &format!("verifying the previous turn at UserPromptSubmit: {e}"));
        }
    }

    /// StopFailure: the turn ended by an API error, and no Stop follows. Its entries stay
    /// unresolved with the reason (the session's next prompt verifies them; a session that
    /// never continues is reported like a crashed one).
    fn stop_failure(&self) -> HookResult {
        copy_transcript(self.project, self.payload);
        let mut r = build::stop_failure(
            self.session_record(kind::STOP_FAILURE),
            self.payload.str(key::ERROR).unwrap_or(""),
            self.payload.str(key::ERROR_DETAILS),
            self.payload.str(key::LAST_ASSISTANT_MESSAGE),
        );
        if let Some(id) = self.payload.str(key::PROMPT_ID) {
            r = r.with(key::PROMPT_ID, id);
        }
        self.append(&[r])
    }

    /// SessionEnd: a turn that an API error ended, when its StopFailure hook never ran. Claude
    /// Code 2.1.328 in `-p` mode exits without waiting for it (3 times in 5 in
    /// tests/e2e_turns.rs), but its transcript ends with the synthetic "API Error" answer: that
    /// answer gives the same record. Only when the session's last turn has neither a Stop nor
    /// a StopFailure. Errors are logged, never fatal.
    fn missed_stop_failure(&self) {
        let session = self.payload.session_id();
        if !last_turn_unended(&self.project.journal, session) {
            return;
        }
        let Some(path) = self.payload.str("transcript_path").filter(|p| !p.is_empty()) else { return };
        let Some(tail) = crate::session::transcript::tail(self.project, session, Some(path), 64 * 1024) else { return };
        let Some((error, text)) = crate::claude::transcript::last_api_error(&tail, session) else { return };
        let mut r = build::stop_failure(
            self.session_record(kind::STOP_FAILURE),
            &error,
            None,
            Some(&text).filter(|t| !t.is_empty()).map(String::as_str),
        );
        if let Some(id) = self.payload.str(key::PROMPT_ID) {
            r = r.with(key::PROMPT_ID, id);
        }
        if let Err(e) = self.append(&[r]) {
            log_error(self.project, &format!("recording the API error that ended the last turn: {e}"));
        }
    }

    fn stop(&self, main_agent: bool) -> HookResult {
        if main_agent {
            copy_transcript(self.project, self.payload);
        }
        let mut r = self.session_record(if main_agent { kind::STOP } else { kind::SUBAGENT_STOP });
        if let Some(m) = self.payload.str("last_assistant_message") {
            r = r.with(key::LAST_ASSISTANT_MESSAGE, clip(m, 16 * 1024));
        }
        if let Some(b) = self.payload.0.get("background_tasks").filter(|b| b.is_array()) {
            r = r.with(key::BACKGROUND_TASKS, b.clone());
        }
        for k in [key::AGENT_ID, key::AGENT_TRANSCRIPT_PATH] {
            if let Some(v) = self.payload.str(k) {
                r = r.with(k, v);
            }
        }
        let mut records = vec![r];
        if main_agent {
            // Background commands: what they changed since their PostToolUse.
            let (cfg, matcher) = self.config();
            // Foreground commands cut off mid-run (the turn was interrupted): their changes.
            match bashsnap::killed::settle_own(self.project, &cfg, matcher.as_ref(), self.payload.session_id()) {
                Ok(children) => records.extend(children),
                Err(e) => log_error(self.project, &format!("unfinished commands at Stop: {e}")),
            }
            let tasks = self.payload.0.get("background_tasks");
            match bashsnap::at_stop(self.project, &cfg, matcher.as_ref(), self.payload.session_id(), tasks) {
                Ok(children) => records.extend(children),
                Err(e) => log_error(self.project, &format!("Bash side effects at Stop: {e}")),
            }
        }
        self.append(&records)?;
        // Verify this session's applied entries; at the main agent's Stop no tool call is
        // running, so intents whose file is unchanged were not applied (denied).
        let opts = checkpoint::CheckpointOptions {
            settle_intents: main_agent,
            settle_commands: main_agent,
            ..Default::default()
        };
        checkpoint::checkpoint(self.project, Some(self.payload.session_id()), opts)?;
        Ok(None)
    }

    fn session_start(&self) -> HookResult {
        // Fold before recording this start: a resumed crashed session must still look crashed.
        let opts = FoldOptions::default();
        let mut fold = Fold::load(&self.project.journal, &opts)?;
        // Commands a crash cut off: their changes so far belong in the note.
        let killed = bashsnap::killed::reconcile(self.project, &mut fold, &opts);
        for p in &killed.problems {
            log_error(self.project, &format!("unfinished commands: {p}"));
        }
        if fold.sessions.iter().any(|s| !s.announced && s.status() == SessionStatus::Crashed) {
            // The note says what the disk holds now (an in-flight call completed or not).
            fold.check_disk(self.project);
        }
        let mut r = self.session_record(kind::START);
        r = r.with(key::SOURCE, self.payload.str("source").unwrap_or("startup"));
        if let Some(m) = self.payload.0.get("model") {
            // `model` is a string in the docs and an object in some versions.
            let m = m.as_str().map(str::to_string).or_else(|| m.get("id").and_then(Value::as_str).map(str::to_string));
            if let Some(m) = m {
                r = r.with(key::MODEL, m);
            }
        }
        r = r.with(key::CWD, self.cwd.to_string_lossy().into_owned());
        let (head, branch) = crate::git::head_info(&self.project.root);
        if let Some(h) = head {
            r = r.with(key::HEAD, h);
        }
        if let Some(b) = branch {
            r = r.with(key::BRANCH, b);
        }
        let mut records = vec![r];
        copy_crashed_transcripts(self.project, &fold);
        let note = announce::session_start_note(&fold, self.payload.session_id(), announce::left_unfinished);
        for (k, target) in &note.marks {
            let mut m = self.session_record(k);
            m.target = Some(target.clone());
            records.push(m);
        }
        let written = self.append(&records);
        // A gap the hook could not write into `.walj/` (issue 13 item 5): told to the user,
        // and forgotten once `.walj/` takes records again.
        let mut output = note.output;
        if let Some(mark) = crate::failmark::read(self.project) {
            output = Some(announce::add_system_message(output, &announce::write_failures(&mark)));
            if written.is_ok() {
                crate::failmark::clear(self.project);
                log_error(self.project, &format!("reported at SessionStart: {}", announce::write_failures(&mark)));
            }
        }
        if let Err(e) = written {
            // Still failing: say so now rather than nothing (the marker stays).
            log_error(self.project, &format!("SessionStart: {e}"));
            return Ok(output.map(|o| o.to_string()));
        }
        Ok(output.map(|o| o.to_string()))
    }

    /// The config and its compiled globs; a broken config falls back to the defaults
    /// (and is reported), the hook must go on.
    fn config(&self) -> (Config, Option<Matcher>) {
        Config::load_or_default(&self.project.config_path(), |e| {
            log_error(self.project, &format!("config ignored: {e}"))
        })
    }
}

fn never(rel: &str, m: Option<&Matcher>) -> bool {
    m.is_some_and(|m| m.never_capture(rel))
}

/// A captured image: the blob (stored unless `nocap` says why not).
pub struct Image {
    /// `None` when the file could not be read (`nocap` says why): its content is unknown.
    pub blob: Option<Blob>,
    pub nocap: Option<String>,
    /// The bytes read (when they were read whole).
    pub bytes: Option<Vec<u8>>,
}

impl Image {
    fn none(blob: Option<Blob>, nocap: Option<String>) -> Image {
        Image { blob, nocap, bytes: None }
    }
}

/// `<why>: <error>` for a `nocap` that carries the error.
fn nocap_err(why: &str, e: &dyn std::fmt::Display) -> String {
    clip(&format!("{why}: {e}"), MAX_ERROR)
}

/// Reads `abs` and stores its bytes, unless it is absent, over the size cap or matches a
/// never-capture glob (then only its identity is recorded). Never fails, so the record is
/// never dropped: a file it cannot read is recorded with an unknown image
/// (`nocap: "unreadable: …"`), bytes it cannot store with the id hashed while reading
/// (`nocap: "store_failed: …"`). A file over the cap is never read in full: its identity is
/// a sampled one ([`crate::sampled`]), whatever the reason it is not stored.
pub fn capture(store_dir: &Path, abs: &Path, rel: &str, cfg: &Config, m: Option<&Matcher>) -> Image {
    let meta = match std::fs::metadata(abs) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Image::none(Some(Blob::Absent), None),
        Err(e) => return Image::none(None, Some(nocap_err(nocap::UNREADABLE, &e))),
    };
    if meta.is_dir() {
        return Image::none(Some(Blob::Absent), Some(nocap::DIRECTORY.into()));
    }
    // A FIFO, a device, a socket: never opened (it could block the hook or never end).
    let not_a_file = || Image::none(Some(Blob::Absent), Some(nocap::NOT_A_FILE.into()));
    if !meta.is_file() {
        return not_a_file();
    }
    let failed = |e: std::io::Error| {
        if crate::fsutil::is_not_a_file(&e) {
            // Swapped for a FIFO or a device since the look above.
            not_a_file()
        } else if e.kind() == std::io::ErrorKind::NotFound {
            Image::none(Some(Blob::Absent), None)
        } else {
            Image::none(None, Some(nocap_err(nocap::UNREADABLE, &e)))
        }
    };
    let large = meta.len() > cfg.capture.max_bytes;
    let id_only = |why: &str| {
        // Hashed as it is read (never held in memory); over the cap, only sampled.
        let id = if large { crate::sampled::identity_of(abs) } else { file_blob_id(abs) };
        match id {
            Ok(id) => Image::none(Some(Blob::Id(id)), Some(why.into())),
            Err(e) => failed(e),
        }
    };
    if never(rel, m) {
        return id_only(nocap::NEVER_CAPTURE);
    }
    if crate::fsutil::is_hard_linked(&meta) && !cfg.capture.hardlinks {
        return id_only(nocap::HARDLINK);
    }
    if large {
        return id_only(nocap::TOO_LARGE);
    }
    let bytes = match crate::fsutil::read_regular(abs) {
        Ok(b) => b,
        Err(e) => return failed(e),
    };
    if crate::secrets::secret_content(&bytes) {
        // A private key under a name that says nothing: recorded by id only.
        return Image::none(Some(Blob::Id(crate::store::blob_id(&bytes))), Some(nocap::NEVER_CAPTURE.into()));
    }
    match Store::new(store_dir).put(&bytes) {
        Ok(id) => Image { blob: Some(Blob::Id(id)), nocap: None, bytes: Some(bytes) },
        Err(e) => Image {
            blob: Some(Blob::Id(crate::store::blob_id(&bytes))),
            nocap: Some(nocap_err(nocap::STORE_FAILED, &e)),
            bytes: Some(bytes),
        },
    }
}

/// The start of a session's last turn (see [`unfinished_turn`]).
struct Turn {
    /// The time of the record that started it (a prompt or a task notification).
    ts: String,
    /// Its Claude Code `prompt_id`, when recorded.
    prompt_id: Option<String>,
}

/// The start of the session's last turn when that turn called tools and has not reached a
/// Stop. Read from the journal's end backwards (at most [`TURN_SCAN_BYTES`]), so a prompt
/// costs what its session's last turn wrote, not the journal's size; `None` when that turn
/// reached its Stop, when the session (re)started since, or when the turn's start is further
/// back than the scan reads (then the session's next Stop verifies it).
fn unfinished_turn(journal: &Path, session: &str) -> Option<Turn> {
    use std::ops::ControlFlow::{Break, Continue};
    if session.is_empty() {
        return None;
    }
    let needle: Vec<u8> = session.chars().take(6).collect::<String>().into_bytes();
    let finder = memchr::memmem::Finder::new(&needle);
    // Tool records seen since the last turn start met (walking back).
    let mut called_tools = false;
    // A turn start with no tool call after it: a new turn, or a message queued into the turn
    // before it (same prompt_id).
    let mut later: Option<Option<String>> = None;
    let mut found = None;
    let scan = crate::journal::scan_lines_rev(journal, TURN_SCAN_BYTES, |line| {
        if finder.find(line).is_none() {
            return Continue(());
        }
        let Ok(v) = crate::journal::classify(0, line) else { return Continue(()) };
        if v.session_key() != session {
            return Continue(());
        }
        match (v.op(), v.kind()) {
            (op::INTENT | op::APPLIED | op::FAILED, _) => called_tools = true,
            (op::SESSION, Some(kind::STOP | kind::START | kind::END)) => return Break(()),
            (op::SESSION, Some(kind::PROMPT | kind::TASK_NOTIFICATION)) => {
                let prompt_id = crate::journal::record::parse_record(line)
                    .ok()
                    .and_then(|r| r.get_str(key::PROMPT_ID).map(str::to_string));
                let queued_into_this = match &later {
                    None => true,
                    Some(l) => l.is_some() && *l == prompt_id,
                };
                if !queued_into_this {
                    return Break(());
                }
                if called_tools {
                    found = Some(Turn { ts: v.ts.to_string(), prompt_id });
                    return Break(());
                }
                if prompt_id.is_none() {
                    return Break(());
                }
                later = Some(prompt_id);
            }
            _ => {}
        }
        Continue(())
    });
    scan.ok().and(found)
}

/// Whether the session's last turn (since its last prompt or start) has neither a Stop nor a
/// StopFailure record, read backwards like [`unfinished_turn`].
fn last_turn_unended(journal: &Path, session: &str) -> bool {
    use std::ops::ControlFlow::{Break, Continue};
    if session.is_empty() {
        return false;
    }
    let needle: Vec<u8> = session.chars().take(6).collect::<String>().into_bytes();
    let finder = memchr::memmem::Finder::new(&needle);
    let mut unended = false;
    let scan = crate::journal::scan_lines_rev(journal, TURN_SCAN_BYTES, |line| {
        if finder.find(line).is_none() {
            return Continue(());
        }
        let Ok(v) = crate::journal::classify(0, line) else { return Continue(()) };
        if v.session_key() != session || v.op() != op::SESSION {
            return Continue(());
        }
        match v.kind() {
            Some(kind::STOP | kind::STOP_FAILURE | kind::END) => Break(()),
            Some(kind::PROMPT | kind::TASK_NOTIFICATION | kind::START) => {
                unended = true;
                Break(())
            }
            _ => Continue(()),
        }
    });
    scan.is_ok() && unended
}

/// How far back (bytes) a prompt looks for its session's previous turn.
const TURN_SCAN_BYTES: u64 = 4 << 20;

/// SessionStart: copies the transcripts of crashed sessions while Claude Code still keeps
/// them (a session killed in its first turn has no copy yet). Shares one hook's byte budget
/// ([`crate::session::transcript::HOOK_MAX_BYTES`]) among them; a copy already up to date
/// costs a few small reads. Errors are logged.
fn copy_crashed_transcripts(project: &Project, fold: &Fold) {
    use crate::session::transcript::{HOOK_MAX_BYTES, copy_limited};
    let mut budget = HOOK_MAX_BYTES;
    for s in fold.sessions.iter().filter(|s| s.status() == SessionStatus::Crashed) {
        let Some(t) = s.transcript.as_deref().filter(|t| !t.is_empty()) else { continue };
        if budget == 0 {
            break;
        }
        match copy_limited(project, &s.session, Path::new(t), Some(budget)) {
            Ok(stats) => budget = budget.saturating_sub(stats.read),
            Err(e) => log_error(project, &format!("transcript copy of crashed session {}: {e}", s.sid)),
        }
    }
}

/// Stop, PreCompact and SessionEnd: copies what the transcript gained into its safe copy
/// ([`crate::session::transcript`]), logs errors, never fails.
fn copy_transcript(project: &Project, payload: &Payload) {
    let session = payload.session_id();
    let Some(source) = payload.str("transcript_path").filter(|s| !s.is_empty()) else { return };
    if session == "unknown" {
        return;
    }
    let limit = Some(crate::session::transcript::HOOK_MAX_BYTES);
    if let Err(e) = crate::session::transcript::copy_limited(project, session, Path::new(source), limit) {
        log_error(project, &format!("transcript copy of session {session}: {e}"));
    }
}
