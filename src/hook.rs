//! `walj hook`: one hook payload on stdin → journal records (DESIGN §5).
//!
//! The payload is parsed into the agents' one event model ([`crate::agents`]): Claude Code's
//! by [`crate::agents::claude`], Codex's, Gemini's and Copilot's by theirs (`--agent NAME`, or
//! recognised by their marks when they arrive through `.claude/settings.json`). Everything
//! below works on that [`Event`]; what only Claude Code sends (prompt ids, task
//! notifications, StopFailure, background tasks) is read from its raw payload.
//!
//! The hook never blocks the agent: every error is logged (to `.walj/errors.log` when it
//! can, and stderr) and the process exits 0. It prints nothing on stdout except at
//! SessionStart, where it may print one JSON object (recovery note, hand-back briefs), and at
//! the first UserPromptSubmit of a session whose SessionStart could not fold the journal in
//! its budget: that note then goes out as the prompt's `additionalContext` ([`deferred`]).
//! It writes nothing outside `.walj/`, but a failure marker when `.walj/` itself cannot be
//! written ([`crate::failmark`]). The hot path (Pre/Post of a file tool) reads the
//! config only if the file exists, reads the file, stores its image and appends one line.

use std::cell::OnceCell;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agents::pairing::{self, Pairing};
use crate::agents::{self, Agent, Change, Event, PathChange, Phase, ToolCall, ToolKind};
use crate::claude::payload::{Payload, clip};
use crate::claude::transcript::UserText;
use crate::config::{self, Config, Matcher};
use crate::fold::{Fold, FoldOptions, SessionStatus};
use crate::journal::build::{self, BashIntent, BashOutcome, MAX_ERROR, MAX_TEXT, TodoUpdate};
use crate::journal::{Blob, JournalWriter, Record, key, kind, nocap, op, tool};
use crate::procinfo;
use crate::project::{Located, Project, trust};
use crate::store::{Durable, Store, file_blob_id};
use crate::{announce, bashsnap, checkpoint};

mod deferred;
pub mod witness;

#[derive(Debug, Default, Clone)]
pub struct HookOptions {
    pub project: Option<PathBuf>,
    pub journal: Option<PathBuf>,
    /// `--agent NAME`: whose payload this is (else recognised from the payload).
    pub agent: Option<Agent>,
}

/// What the hook prints (at SessionStart, or its note at the first UserPromptSubmit).
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
    let ev = agents::parse(&payload.0, opts.agent, &payload);
    let cwd = ev.cwd.map(PathBuf::from).filter(|p| p.is_absolute()).unwrap_or(process_cwd);
    let project = session_project(opts, &cwd);
    if let Some(refused) = refused_folder(&project, &ev) {
        out.stdout = refused;
        return out;
    }
    let ctx = Ctx { project: &project, payload: &payload, ev: &ev, cwd: &cwd };
    match ctx.handle() {
        Ok(stdout) => out.stdout = stdout,
        Err(e) => {
            let name = if ev.name.is_empty() { "hook" } else { ev.name };
            let msg = if ev.agent == Agent::ClaudeCode {
                format!("{name}: {e}")
            } else {
                format!("{} {name}: {e}", ev.agent)
            };
            log_error(&project, &msg);
            out.errors.push(msg);
        }
    }
    out
}

/// The project this event journals into: one root for every start folder
/// ([`Project::discover`]).
fn session_project(opts: &HookOptions, cwd: &Path) -> Project {
    Project::discover(opts.project.as_deref(), cwd, opts.journal.as_deref())
}

/// A `.walj/` that is not walj's own ([`trust`]): the hook reads nothing from it and writes
/// nothing through it. `Some(stdout)` when the event ends here: at SessionStart the
/// one message that says so (a `systemMessage`, for the user), else nothing. A tool-call
/// event checks the folder with one `lstat` and the marker; SessionStart and the turn's end
/// also look at what git tracks inside it (cached by the index's stamp).
fn refused_folder(project: &Project, ev: &Event) -> Option<Option<String>> {
    let phase = ev.phase?;
    let whole = matches!(phase, Phase::SessionStart | Phase::TurnEnd | Phase::SessionEnd);
    trust::set_hook_mode(!whole);
    let standing = if whole { trust::check(project) } else { trust::standing(project) };
    let trust::Standing::Foreign(why) = standing else { return None };
    warn(&format!("{why}: nothing recorded"));
    if phase != Phase::SessionStart {
        return Some(None);
    }
    let msg = format!(
        "walj: {}; walj records nothing in this project and reads nothing from that folder. To fix: {}. (`walj doctor` says more.)",
        crate::present::text::safe(&why.to_string()),
        why.fix()
    );
    let out = announce::add_system_message(None, &msg);
    Some(Some(agents::session_start_output(ev.agent, out).to_string()))
}

/// Prints `walj hook: msg` on stderr. Not `eprintln!`, which panics when stderr is closed
/// (Claude Code gone mid-hook): a message must never stop the hook's work.
pub fn warn(msg: &str) {
    let _ = writeln!(std::io::stderr(), "walj hook: {msg}");
}

/// Appends a line to `.walj/errors.log` (best effort) and prints it on stderr.
pub(crate) fn log_error(project: &Project, msg: &str) {
    warn(msg);
    if project.ensure_dir().is_err() {
        return;
    }
    // Capped, rotated, repeated messages collapsed.
    crate::fsutil::append_log(&project.errors_log(), msg);
}

struct Ctx<'a> {
    project: &'a Project,
    /// The raw payload, for what only Claude Code sends.
    payload: &'a Payload,
    ev: &'a Event<'a>,
    cwd: &'a Path,
}

type HookResult = Result<Option<String>, HookError>;

/// Why a hook could not record its event (logged to `.walj/errors.log`; the hook still exits 0).
#[derive(Debug, thiserror::Error)]
enum HookError {
    #[error("{0} without a file_path")]
    NoFilePath(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// The id of a tool call's records.
enum CallId {
    /// The agent's id, or the one [`pairing`] gave an id-less call.
    Known(String),
    /// None known: a generated id per record, paired by (session, tool, path, order).
    Generated,
}

impl CallId {
    /// Record `n` of `total` of the call (one per path change): the id itself for one,
    /// `<id>#<n>` (from 1) for several.
    fn assign(&self, r: &mut Record, n: usize, total: usize) {
        match self {
            CallId::Known(id) if total <= 1 => r.id = id.clone(),
            CallId::Known(id) => r.id = format!("{id}#{}", n + 1),
            CallId::Generated => {
                r.id = crate::journal::record::new_id("w");
                r.extra.insert(key::PAIR.into(), Value::Bool(true));
            }
        }
    }

    fn known(&self) -> Option<&str> {
        match self {
            CallId::Known(id) => Some(id),
            CallId::Generated => None,
        }
    }
}

/// Whether a file tool's change writes the whole file (so a missing file is being created).
fn writes_whole(tool: &str, c: &PathChange) -> bool {
    c.creates() || (matches!(c.change, Change::Claude) && tool == "Write")
}

impl Ctx<'_> {
    fn handle(&self) -> HookResult {
        let Some(phase) = self.ev.phase else {
            // Unknown events are not errors: newer clients send events walj does not know.
            return Ok(None);
        };
        let session = self.ev.session;
        if !phase.is_tool()
            && self.ev.agent != Agent::ClaudeCode
            && let Some(k) = pairing::delivery_key(phase.name(), self.ev.at_ms, None)
        {
            match pairing::seen(self.project, session, &k) {
                Ok(true) => return Ok(None),
                Ok(false) => {}
                Err(e) => log_error(self.project, &format!("pairing state of session {session}: {e}")),
            }
        }
        let skill_line = self.ev.name == crate::claude::events::PRE_SKILL_SHELL_COMMAND;
        if self.ev.agent == Agent::ClaudeCode && !skill_line {
            // A skill's `!` line ran since the last event: this event closes its window.
            self.close_skill_windows();
        }
        if let Some(t) = &self.ev.tool {
            let Some(id) = self.call_id(phase, t) else { return Ok(None) };
            if skill_line {
                return self.skill_line(t, &id);
            }
            return match (&t.kind, phase) {
                (ToolKind::Files(_), Phase::ToolPre) => self.file_intent(t, &id),
                (ToolKind::Files(_), _) => self.file_outcome(t, &id, phase == Phase::ToolFailed),
                (ToolKind::Shell(_), Phase::ToolPre) => self.bash(t, &id, op::INTENT),
                (ToolKind::Shell(_), Phase::ToolPost) => self.bash(t, &id, op::APPLIED),
                (ToolKind::Shell(_), _) => self.bash(t, &id, op::FAILED),
                (ToolKind::Todo, Phase::ToolPost) => self.todos(),
                (ToolKind::Subagent(a), _) => self.subagent_call(t, a, phase),
                _ => Ok(None),
            };
        }
        match phase {
            Phase::ToolPre | Phase::ToolPost | Phase::ToolFailed => Ok(None),
            Phase::Prompt => self.prompt(),
            Phase::TurnEnd | Phase::SubagentEnd => self.stop(phase == Phase::TurnEnd),
            Phase::TurnFailed => self.stop_failure(),
            Phase::Compaction => {
                self.copy_transcript();
                let mut r = self.session_record(kind::COMPACT);
                r = r.with(key::TRIGGER, self.ev.trigger.unwrap_or(""));
                if let Some(ci) = self.payload.str("custom_instructions").filter(|s| !s.is_empty()) {
                    r = r.with(key::CUSTOM_INSTRUCTIONS, build::safe(ci, MAX_TEXT));
                }
                self.append(&[r])
            }
            Phase::SessionStart => self.session_start(),
            Phase::SessionEnd => {
                self.copy_transcript();
                self.flush_deferred_start();
                if self.ev.agent == Agent::ClaudeCode {
                    self.missed_stop_failure();
                } else {
                    pairing::end(self.project, session);
                }
                let r = self.session_record(kind::END).with(key::REASON, self.ev.reason.unwrap_or("other"));
                self.append(&[r])?;
                // Retention that runs itself: a detached compaction when the journal grew large.
                let (cfg, _) = self.config();
                if let Err(e) = crate::retention::maybe_spawn(self.project, &cfg) {
                    log_error(self.project, &format!("starting the automatic compaction: {e}"));
                }
                self.auto_sync(&cfg);
                Ok(None)
            }
        }
    }

    /// The id of this call's records: the agent's; for an agent without ids, the one the
    /// session's pairing queue holds (`None`: this delivery was seen already, skip it).
    fn call_id(&self, phase: Phase, t: &ToolCall) -> Option<CallId> {
        if let Some(id) = t.id {
            return Some(CallId::Known(id.to_string()));
        }
        if matches!(self.ev.agent, Agent::ClaudeCode | Agent::Codex) || matches!(t.kind, ToolKind::Other) {
            return Some(CallId::Generated);
        }
        let fp = pairing::fingerprint(t.kind.tag(), t.input);
        let k = pairing::delivery_key(phase.name(), self.ev.at_ms, Some(&fp));
        let r = if phase == Phase::ToolPre {
            pairing::pre(self.project, self.ev.session, &fp, k.as_deref())
        } else {
            pairing::post(self.project, self.ev.session, &fp, k.as_deref())
        };
        match r {
            Ok(Pairing::Duplicate) => None,
            Ok(Pairing::Fresh(Some(id))) => Some(CallId::Known(id)),
            Ok(Pairing::Fresh(None)) => Some(CallId::Generated),
            Err(e) => {
                log_error(self.project, &format!("pairing state of session {}: {e}", self.ev.session));
                Some(CallId::Generated)
            }
        }
    }

    fn append(&self, records: &[Record]) -> HookResult {
        let written =
            self.project.ensure_dir().and_then(|()| JournalWriter::new(&self.project.journal).append_all(records));
        self.written(written, records.len())
    }

    /// Appends the records `make` returns (`expected` of them, as far as is known before it
    /// runs), made under the journal's lock ([`JournalWriter::append_decided`]).
    fn append_with(&self, expected: usize, make: impl FnOnce() -> Vec<Record>) -> HookResult {
        let mut count = expected;
        let written = self.project.ensure_dir().and_then(|()| {
            JournalWriter::new(&self.project.journal).append_decided(|| {
                let records = make();
                count = records.len();
                records
            })
        });
        self.written(written, count)
    }

    /// The hook's answer to an append of `count` records.
    fn written(&self, written: std::io::Result<()>, count: usize) -> HookResult {
        if let Err(e) = written {
            // `.walj/` cannot be written (full, read-only): errors.log may not take the
            // message either, so the gap is kept where it can be, for the next SessionStart.
            if let Err(m) = crate::failmark::record(self.project, count, &e.to_string()) {
                warn(&format!("keeping the failure marker: {m}"));
            }
            return Err(e.into());
        }
        Ok(None)
    }

    /// Appends `records` while the syncs of the objects they name run ([`Store::put_carried`]),
    /// and returns once both are durable: one sync's wait, not one per file in a row.
    fn append_durable(&self, records: &[Record], syncs: Vec<Durable>) -> HookResult {
        let appended = self.append(records);
        for s in syncs {
            s.wait()?;
        }
        appended
    }

    /// A record of this event's session, stamped with the agent's process and, for a
    /// subagent's event, the subagent (`agent_id`, `agent_type`: two short strings).
    fn record(&self, op_name: &str) -> Record {
        let mut r = Record::new(op_name, self.ev.session);
        if let Some(p) = procinfo::claude_process() {
            r.pid = Some(p.pid);
            r.pstart = Some(p.start);
        }
        if let Some(a) = self.ev.agent_id {
            r.extra.insert(key::AGENT_ID.into(), Value::String(a.to_string()));
            if let Some(t) = self.ev.agent_type {
                r.extra.insert(key::AGENT_TYPE.into(), Value::String(t.to_string()));
            }
        }
        r
    }

    /// A skill's or slash command's `!` shell line (`PreSkillShellCommand`): journaled as a
    /// command intent with its snapshot, named by the skill (`skill`, `invoked_by`); no Post
    /// comes, so its window stays open until the session's next hook event.
    fn skill_line(&self, t: &ToolCall, id: &CallId) -> HookResult {
        let ToolKind::Shell(sh) = &t.kind else { return Ok(None) };
        let mut r = self.record(op::INTENT);
        id.assign(&mut r, 0, 1);
        let cwd = self.cwd.to_string_lossy();
        let mut r = BashIntent { command: sh.command, description: None, background: false, cwd: Some(&cwd) }.fill(r);
        for (k, field) in [(key::SKILL, "command_name"), (key::INVOKED_BY, "invoked_by")] {
            if let Some(v) = self.payload.str(field) {
                r = r.with(k, clip(v, 1024));
            }
        }
        let (children, _) = self.bash_side_effects(t, id, op::INTENT, &mut r);
        self.append(&[vec![r], children].concat())?;
        if let Some(known) = id.known()
            && let Err(e) = bashsnap::skill_window_open(self.project, self.ev.session, known, sh.command)
        {
            log_error(self.project, &format!("skill shell line: {e}"));
        }
        Ok(None)
    }

    /// Closes the windows of the session's skill shell lines: their outcome (`applied`,
    /// `closed_by` this event) and what changed since their snapshot, judged like any
    /// command's. One `stat` when none is open.
    fn close_skill_windows(&self) {
        let open = bashsnap::skill_windows_take(self.project, self.ev.session);
        if open.is_empty() {
            return;
        }
        let (cfg, matcher) = self.config();
        for (id, command) in open {
            let call = bashsnap::Call {
                session: self.ev.session,
                tool_use_id: Some(&id),
                command: &command,
                background: false,
                task_id: None,
                agent: self.ev.agent_id.map(|a| (a, self.ev.agent_type)),
                // The watcher learns Claude Code's process from the session's Bash calls.
                claude: None,
            };
            let mut r = self.record(op::APPLIED);
            r.id.clone_from(&id);
            let r = BashOutcome { command: &command, error: None, task_id: None, interrupted: false }
                .fill(r)
                .with(key::CLOSED_BY, self.ev.name);
            let (children, done) = match bashsnap::after(self.project, &cfg, matcher.as_ref(), &call) {
                Ok(out) => (out.records, out.done),
                Err(e) => {
                    log_error(self.project, &format!("skill shell line `{command}`: {e}"));
                    (Vec::new(), None)
                }
            };
            let (project, session) = (self.project, self.ev.session);
            let expected = 1 + children.len();
            let appended = self.append_with(expected, || {
                [vec![r], explained_elsewhere(project, session, (&id, &command), children)].concat()
            });
            // The Pre's snapshot goes once its changes are journaled, never before.
            if appended.is_ok()
                && let Some(d) = done
            {
                d.finish();
            }
        }
    }

    /// An `Agent` call (a subagent launch): a `subagent` session record at its Pre (type,
    /// description, prompt) and at its outcome (`async_launched` when it runs on in the
    /// background, else how it ended; the subagent's `agent_id` when the result names it).
    fn subagent_call(&self, t: &ToolCall, a: &crate::agents::event::Subagent, phase: Phase) -> HookResult {
        let mut r = self.session_record(kind::SUBAGENT);
        if let Some(id) = t.id {
            r = r.with(key::CALL, id);
        }
        let field = |k: &str| t.response.get(k);
        let launched_async = field("isAsync").and_then(Value::as_bool) == Some(true)
            || field("status").and_then(Value::as_str) == Some("async_launched");
        let status = match phase {
            Phase::ToolPre => "start",
            Phase::ToolFailed => "failed",
            _ if launched_async => "async_launched",
            _ => "completed",
        };
        r = r.with(key::STATUS, status);
        if let Some(k) = a.kind {
            r = r.with(key::AGENT_TYPE, k);
        }
        if let Some(d) = a.description {
            r = r.with(key::DESCRIPTION, clip(d, 1024));
        }
        if phase == Phase::ToolPre {
            if let Some(p) = a.prompt {
                r = r.with(key::PROMPT, clip(p, 4 * 1024));
            }
            if let Some(b) = a.background {
                r = r.with(key::BACKGROUND, b);
            }
        }
        // The subagent's own id (the one its tool calls' records carry): the record's
        // `agent_id` names the caller, so the launched one goes in `target`.
        if let Some(id) = field("agentId").or_else(|| field("agent_id")).and_then(Value::as_str) {
            r.target = Some(id.to_string());
        }
        if let Some(e) = t.error.as_deref().filter(|e| !e.is_empty()) {
            r = r.with(key::ERROR, clip(e, 4 * 1024));
        }
        self.append(&[r])
    }

    /// A session record; other agents than Claude Code are named in `agent`.
    fn session_record(&self, k: &str) -> Record {
        let mut r = build::session(self.record(op::SESSION), k);
        if let Some(t) = self.ev.transcript {
            r = r.with(key::TRANSCRIPT, t);
        }
        if self.ev.agent != Agent::ClaudeCode {
            r = r.with(key::AGENT, self.ev.agent.name());
        }
        r
    }

    fn changes<'t>(&self, t: &'t ToolCall) -> Result<&'t [PathChange<'t>], HookError> {
        match &t.kind {
            ToolKind::Files(c) if !c.is_empty() => Ok(c),
            _ => Err(HookError::NoFilePath(self.ev.name.to_string())),
        }
    }

    fn file_intent(&self, t: &ToolCall, id: &CallId) -> HookResult {
        let changes = self.changes(t)?;
        let config = OnceCell::new();
        let mut records = Vec::with_capacity(changes.len());
        let mut syncs = Vec::new();
        for (n, c) in changes.iter().enumerate() {
            let mut r = self.record(op::INTENT);
            r.tool = Some(t.name.to_string());
            id.assign(&mut r, n, changes.len());
            if build::unusable_path(&mut r, &c.path) {
                records.push(r);
                continue;
            }
            if let Some((rel, abs)) = self.locate(&mut r, &c.path, t.name) {
                let (cfg, matcher) = config.get_or_init(|| self.config());
                let mut image = capture(&self.project.store_dir(), &abs, &rel, cfg, matcher.as_ref());
                image.settle(&mut r, &mut syncs);
                let created = image.blob.as_ref().is_some_and(Blob::is_absent);
                let whole = writes_whole(t.name, c);
                r.event =
                    config::detect_event(matcher.as_ref(), &rel, t.name, created && whole, c.deletes() && !created);
                // What the call means to leave on disk (by id): after a crash, the disk tells
                // whether it completed ([`crate::fold::InFlightCheck`]).
                let pre = if created { None } else { image.bytes.as_deref() };
                if (created || pre.is_some() || whole)
                    && let Some(Some(want)) = c.intended(t.name, t.input, pre)
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
            records.push(r);
        }
        self.append_durable(&records, syncs)
    }

    /// Where the tool's file is: inside the project `(rel, abs)`, or outside, which is
    /// recorded in `r` as such (absolute path, nothing captured) and gives `None`. A relative
    /// path is relative to the event's `cwd`.
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

    fn file_outcome(&self, t: &ToolCall, id: &CallId, failed: bool) -> HookResult {
        let changes = self.changes(t)?;
        let config = OnceCell::new();
        let mut records = Vec::with_capacity(changes.len());
        let mut syncs = Vec::new();
        for (n, c) in changes.iter().enumerate() {
            let mut r = self.record(if failed { op::FAILED } else { op::APPLIED });
            r.tool = Some(t.name.to_string());
            id.assign(&mut r, n, changes.len());
            if failed {
                r = r.with(key::ERROR, clip(t.error.as_deref().unwrap_or(""), MAX_ERROR));
                if t.interrupted {
                    r = r.with(key::INTERRUPTED, true);
                }
            }
            if build::unusable_path(&mut r, &c.path) {
                records.push(r);
                continue;
            }
            if let Some((rel, abs)) = self.locate(&mut r, &c.path, t.name) {
                let (cfg, matcher) = config.get_or_init(|| self.config());
                let store = self.project.store_dir();
                // The result's original content is the real pre-image: keep it in case the
                // intent was never recorded (hooks installed mid-call, empty stdin).
                let created = matches!(c.original, Some(None));
                // A file with another name (maybe outside the project): its pre-image is
                // recorded by id only, as `capture` does with the file itself.
                let linked = matches!(c.original, Some(Some(_)))
                    && !cfg.capture.hardlinks
                    && std::fs::metadata(&abs).is_ok_and(|m| crate::fsutil::is_hard_linked(&m));
                match c.original {
                    Some(Some(orig)) if linked => {
                        r.before = Some(Blob::Id(crate::store::blob_id(orig.as_bytes())));
                        r.nocap = Some(nocap::HARDLINK.into());
                    }
                    Some(Some(orig))
                        if !never(&rel, matcher.as_ref())
                            && (orig.len() as u64) <= cfg.capture.max_bytes
                            && !crate::secrets::secret_content(orig.as_bytes()) =>
                    {
                        // Not stored: the record keeps its id and says so (`nocap`).
                        let mut image = store_image(&store, orig.as_bytes());
                        image.settle(&mut r, &mut syncs);
                        r.before = image.blob;
                        r.nocap = image.nocap;
                    }
                    Some(None) => r.before = Some(Blob::Absent),
                    _ => {}
                }
                if !failed {
                    let mut image = capture(&store, &abs, &rel, cfg, matcher.as_ref());
                    image.settle(&mut r, &mut syncs);
                    r.after = image.blob;
                    r.nocap = image.nocap.or(r.nocap.take());
                }
                let whole = writes_whole(t.name, c);
                r.event = config::detect_event(matcher.as_ref(), &rel, t.name, created && whole, c.deletes());
                r.path = rel;
            }
            self.log_nocap(&r);
            records.push(r);
        }
        self.append_durable(&records, syncs)
    }

    fn log_nocap(&self, r: &Record) {
        if let Some(n) =
            r.nocap.as_deref().filter(|n| n.starts_with(nocap::STORE_FAILED) || n.starts_with(nocap::UNREADABLE))
        {
            log_error(self.project, &format!("{}: {n}", r.path));
        }
    }

    fn bash(&self, t: &ToolCall, id: &CallId, op_name: &str) -> HookResult {
        let ToolKind::Shell(sh) = &t.kind else { return Ok(None) };
        let mut r = self.record(op_name);
        id.assign(&mut r, 0, 1);
        let flag = |v: Option<&Value>| v.and_then(Value::as_bool) == Some(true);
        let mut r = if op_name == op::INTENT {
            let cwd = self.cwd.to_string_lossy();
            BashIntent { command: sh.command, description: sh.description, background: sh.background, cwd: Some(&cwd) }
                .fill(r)
        } else if op_name == op::APPLIED {
            BashOutcome {
                command: sh.command,
                error: None,
                task_id: self.payload.response_field("backgroundTaskId").and_then(Value::as_str),
                interrupted: flag(self.payload.response_field("interrupted")),
            }
            .fill(r)
        } else {
            BashOutcome {
                command: sh.command,
                error: Some(t.error.as_deref().unwrap_or("")),
                task_id: None,
                interrupted: t.interrupted,
            }
            .fill(r)
        };
        // Where git's HEAD points, at the intent and the outcome: a command that switches a
        // branch or commits is told as such (a few small file reads, no git process).
        if let Some(h) = crate::git::head_state(&self.project.root) {
            if let Some(id) = h.id {
                r = r.with(key::HEAD, id);
            }
            if let Some(b) = h.branch {
                r = r.with(key::BRANCH, b);
            }
        }
        let (mut children, done) = self.bash_side_effects(t, id, op_name, &mut r);
        if op_name == op::APPLIED
            && let Some(rep) = witness::reported(self.payload.tool_response())
        {
            // Claude Code's own list of what the command changed: what the snapshot missed.
            let w = self.witnessed(&rep, &children, &r, sh.command);
            children.extend(w.entries);
            if let Some(n) = w.note {
                r = r.with(key::REPORTED, n);
            }
        }
        let appended = if !children.is_empty()
            && let Some(id) = id.known()
        {
            // Decided under the journal's lock: two commands that ran side by side never both
            // claim a file from a journal that has neither's children yet.
            let (project, session) = (self.project, self.ev.session);
            let expected = 1 + children.len();
            self.append_with(expected, || {
                [vec![r], explained_elsewhere(project, session, (id, sh.command), children)].concat()
            })
        } else {
            self.append(&[vec![r], children].concat())
        };
        // The Pre's snapshot goes once the command's entries are journaled, never before: a
        // Post killed in between leaves the command to the killed-command path, not to nobody.
        if appended.is_ok()
            && let Some(d) = done
        {
            d.finish();
        }
        appended
    }

    /// The entries of what Claude Code reported a command changed and its snapshot did not
    /// record ([`witness`]), each image stored and synced before the line names it.
    fn witnessed(&self, rep: &witness::Reported, recorded: &[Record], r: &Record, command: &str) -> witness::Witnessed {
        let (cfg, matcher) = self.config();
        let store = self.project.store_dir();
        let mut syncs = Vec::new();
        let mut w = witness::missed(self.project, rep, recorded, r, command, matcher.as_ref(), |rel, c| {
            let mut image = capture(&store, &self.project.root.join(rel), rel, &cfg, matcher.as_ref());
            image.settle(c, &mut syncs);
            c.after = image.blob;
            c.nocap = image.nocap;
        });
        for s in syncs {
            if let Err(e) = s.wait() {
                log_error(self.project, &format!("storing what Claude Code reported: {e}"));
            }
        }
        if !cfg.bash.snapshot
            && let Some(n) = w.note.as_mut()
        {
            // The list was the only witness: what it left off is in no entry.
            n["snapshot_off"] = Value::Bool(true);
        }
        witness::log(self.project, &w, &r.id, &r.ts, cfg.bash.snapshot);
        w
    }

    /// Bash side effects (src/bashsnap.rs): snapshot at Pre, child entries at Post. A
    /// failure is logged and never fails the hook or loses the command's own record.
    /// The Pre snapshot to remove once the records are appended comes with them.
    fn bash_side_effects(
        &self,
        t: &ToolCall,
        id: &CallId,
        op_name: &str,
        r: &mut Record,
    ) -> (Vec<Record>, Option<bashsnap::Done>) {
        let ToolKind::Shell(sh) = &t.kind else { return (Vec::new(), None) };
        let (cfg, matcher) = self.config();
        let call = bashsnap::Call {
            session: self.ev.session,
            tool_use_id: id.known(),
            command: sh.command,
            background: sh.background,
            task_id: self.payload.response_field("backgroundTaskId").and_then(Value::as_str),
            agent: self.ev.agent_id.map(|a| (a, self.ev.agent_type)),
            claude: r.pid.zip(r.pstart),
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
                (out.records, out.done)
            }
            Err(e) => {
                log_error(self.project, &format!("Bash side effects: {e}"));
                (Vec::new(), None)
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
        self.copy_transcript();
        // The SessionStart note that waited for the fold: before anything of this turn.
        let note = self.deferred_note();
        self.verify_unfinished_turn();
        let text = self.ev.prompt.unwrap_or("");
        let mut r = match crate::claude::transcript::user_text(text) {
            UserText::Prompt(p) => build::prompt(self.session_record(kind::PROMPT), &p),
            UserText::TaskNotification(n) => build::task_notification(self.session_record(kind::TASK_NOTIFICATION), &n),
            UserText::Meta => return Ok(note),
        };
        if let Some(id) = self.payload.str(key::PROMPT_ID) {
            r = r.with(key::PROMPT_ID, id);
        }
        self.append(&[r]).map(|_| note)
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
        let Some(turn) = unfinished_turn(&self.project.journal, self.ev.session) else { return };
        if turn.prompt_id.as_deref().is_none_or(|id| id == now) {
            return;
        }
        // A command the interrupt cut off: what it changed, before the turn is verified (no
        // tool call of the new turn has run yet).
        let (cfg, matcher) = self.config();
        match bashsnap::killed::settle_own(self.project, &cfg, matcher.as_ref(), self.ev.session) {
            Ok(children) if !children.is_empty() => {
                if let Err(e) = self.append(&children) {
                    log_error(self.project, &format!("recording an interrupted command's changes: {e}"));
                }
            }
            Ok(_) => {}
            Err(e) => log_error(self.project, &format!("an interrupted command's changes: {e}")),
        }
        let opts = checkpoint::CheckpointOptions { settle_intents: true, since: Some(&turn.ts), ..Default::default() };
        if let Err(e) = checkpoint::checkpoint(self.project, Some(self.ev.session), opts) {
            log_error(self.project, &format!("verifying the previous turn at UserPromptSubmit: {e}"));
        }
    }

    /// StopFailure: the turn ended by an API error, and no Stop follows. Its entries stay
    /// unresolved with the reason (the session's next prompt verifies them; a session that
    /// never continues is reported like a crashed one).
    fn stop_failure(&self) -> HookResult {
        self.copy_transcript();
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
    /// tests/e2e/turns.rs), but its transcript ends with the synthetic "API Error" answer: that
    /// answer gives the same record. Only when the session's last turn has neither a Stop nor
    /// a StopFailure. Errors are logged, never fatal.
    fn missed_stop_failure(&self) {
        let session = self.ev.session;
        if !last_turn_unended(&self.project.journal, session) {
            return;
        }
        let Some(path) = self.ev.transcript.filter(|p| !p.is_empty()) else { return };
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
            self.copy_transcript();
        }
        let mut r = self.session_record(if main_agent { kind::STOP } else { kind::SUBAGENT_STOP });
        if let Some(m) = self.ev.last_message {
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
        let cfg = main_agent.then(|| self.config());
        if let Some((cfg, matcher)) = &cfg {
            // Background commands: what they changed since their PostToolUse.
            // Foreground commands cut off mid-run (the turn was interrupted): their changes.
            match bashsnap::killed::settle_own(self.project, cfg, matcher.as_ref(), self.ev.session) {
                Ok(children) => records.extend(children),
                Err(e) => log_error(self.project, &format!("unfinished commands at Stop: {e}")),
            }
            let tasks = self.payload.0.get("background_tasks");
            match bashsnap::at_stop(self.project, cfg, matcher.as_ref(), self.ev.session, tasks) {
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
        checkpoint::checkpoint(self.project, Some(self.ev.session), opts)?;
        if let Some((cfg, _)) = &cfg {
            // The turn used the watcher: a full scan checks it, after this hook, detached.
            if bashsnap::reconcile_due(self.project, cfg)
                && let Err(e) = bashsnap::spawn_reconcile(self.project, self.ev.session)
            {
                log_error(self.project, &format!("starting the reconciliation after Stop: {e}"));
            }
            self.auto_sync(cfg);
        }
        Ok(None)
    }

    /// SessionStart: folds the journal (within [`deferred::FOLD_BUDGET`] for Claude Code),
    /// tells what crashed sessions left ([`Ctx::start_note`]) and records this start. A fold
    /// that runs out of time keeps its progress in the snapshot and the start waits, with its
    /// note, for the session's first UserPromptSubmit ([`deferred`]).
    fn session_start(&self) -> HookResult {
        let began = std::time::Instant::now();
        if self.ev.agent != Agent::ClaudeCode {
            pairing::prune(self.project);
        }
        // A start still waiting (a second SessionStart before any prompt): it happened first.
        self.flush_deferred_start();
        let start = self.start_record();
        // The checkout's watcher of Bash snapshots, ready by the first command, and told this
        // session's Claude Code process (its end is then noted however slow the start).
        bashsnap::start_watch(self.project, &self.config().0, self.ev.session, start.pid.zip(start.pstart));
        // Images a Post spilled and no pass copied yet (the last session's machine crashed):
        // copied in the background; the first Bash call's Pre waits for them if need be.
        if crate::store::Store::new(self.project.store_dir()).has_pending() {
            bashsnap::spawn_settle(self.project);
        }
        // Fold before recording this start: a resumed crashed session must still look crashed.
        let opts = FoldOptions::default();
        let fold = if self.ev.agent == Agent::ClaudeCode {
            match Fold::load_within(&self.project.journal, &opts, began + deferred::FOLD_BUDGET)? {
                Some(fold) => fold,
                None => {
                    deferred::save(self.project, self.ev.session, Some(&start))?;
                    // Finishes the fold in the background (a reader writes the snapshot in
                    // steps), so the first prompt's fold reads only what is left.
                    let starting = format!("--starting={}", self.ev.session);
                    if let Err(e) = crate::retention::spawn_detached(self.project, &["fold", &starting]) {
                        log_error(self.project, &format!("starting the fold's background reader: {e}"));
                    }
                    return Ok(None);
                }
            }
        } else {
            Fold::load(&self.project.journal, &opts)?
        };
        let imported = self.auto_import(&fold);
        let agent = self.ev.agent;
        let mut output = self.start_note(fold, Some(start));
        if let Some(m) = imported {
            output = Some(announce::add_system_message(output, &m));
        }
        Ok(output.map(|o| agents::session_start_output(agent, o).to_string()))
    }

    /// Claude Code sessions of this project that walj's hooks never saw, rebuilt from their
    /// transcripts ([`crate::import::auto`]): imported here when small, else by the background
    /// fold (whose note a later SessionStart tells). The line to tell the user, once.
    fn auto_import(&self, fold: &Fold) -> Option<String> {
        use crate::import::auto;
        if self.ev.agent != Agent::ClaudeCode || !auto::enabled(self.project, &self.config().0) {
            return None;
        }
        let mut lines: Vec<String> = auto::take_note(self.project).into_iter().collect();
        if let Some(config_dir) = crate::claude::paths::config_dir() {
            let plan = auto::plan(self.project, fold, self.ev.session, &config_dir);
            if plan.files.is_empty() || plan.inline(self.project) {
                match auto::run(self.project, &plan, &config_dir) {
                    Ok(done) => lines.extend(done.and_then(|d| d.message())),
                    Err(e) => log_error(self.project, &format!("importing sessions walj's hooks never saw: {e}")),
                }
            } else if let Err(e) =
                crate::retention::spawn_detached(self.project, &["fold", &format!("--starting={}", self.ev.session)])
            {
                log_error(self.project, &format!("starting the background import: {e}"));
            }
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    /// This session's `start` record, as SessionStart writes it.
    fn start_record(&self) -> Record {
        let mut r = self.session_record(kind::START);
        r = r.with(key::SOURCE, self.ev.source.unwrap_or("startup"));
        if let Some(m) = &self.ev.model {
            r = r.with(key::MODEL, m.as_ref());
        }
        r = r.with(key::CWD, self.cwd.to_string_lossy().into_owned());
        let (head, branch) = crate::git::head_info(&self.project.root);
        if let Some(h) = head {
            r = r.with(key::HEAD, h);
        }
        if let Some(b) = branch {
            r = r.with(key::BRANCH, b);
        }
        if let Some(root) = crate::plugin::hook_root() {
            r = r.with(key::PLUGIN_ROOT, root.to_string_lossy().into_owned());
        }
        r
    }

    /// The SessionStart note from `fold` (the journal before `start`): reconciles commands a
    /// crash cut off, appends the marks of what it tells and then `start` (`None`: written
    /// already), and returns the output (recovery note, failure marker, other machines').
    fn start_note(&self, mut fold: Fold, start: Option<Record>) -> Option<serde_json::Value> {
        let opts = FoldOptions::default();
        // Commands a crash cut off: their changes so far belong in the note.
        let killed = bashsnap::killed::reconcile(self.project, &mut fold, &opts);
        for p in &killed.problems {
            log_error(self.project, &format!("unfinished commands: {p}"));
        }
        if fold.sessions.iter().any(|s| !s.announced && s.status() == SessionStatus::Crashed) {
            // The note says what the disk holds now (an in-flight call completed or not).
            fold.check_disk(self.project);
        }
        copy_crashed_transcripts(self.project, &fold);
        // A crashed session is told to the next session of the same agent (it can act on it).
        let agent = self.ev.agent;
        let checkout = if fold.sessions.iter().any(|s| !s.announced && announce::left_unfinished(s)) {
            // HEAD moved by a command that never finished, a rebase stopped on a conflict:
            // told with the crash (a few small reads of `.git/`, only after a crash).
            fold.read_head(&self.project.root);
            // Prompts typed while Claude worked, queued and never taken up: only in the
            // transcript (`queue-operation` lines), read from its tail.
            let mut queued = std::collections::HashMap::new();
            for s in fold.sessions.iter().filter(|s| !s.announced && announce::left_unfinished(s)) {
                let tail =
                    crate::session::transcript::tail(self.project, &s.session, s.transcript.as_deref(), 256 * 1024);
                let q = tail.map(|t| crate::claude::transcript::queued_prompts(&t, &s.session)).unwrap_or_default();
                if !q.is_empty() {
                    queued.insert(s.session.clone(), q);
                }
            }
            announce::Checkout { git_op: crate::git::operation_in_progress(&self.project.root), queued }
        } else {
            announce::Checkout::default()
        };
        let note = announce::session_start_note_in(
            &fold,
            self.ev.session,
            |s| s.agent() == agent && announce::left_unfinished(s),
            &checkout,
        );
        // The marks of what this start told come first: a resumed session's own start then
        // opens its new life, whose crash (if one comes) is told again.
        let mut records = Vec::with_capacity(note.marks.len() + 1);
        for (k, target) in &note.marks {
            let mut m = self.session_record(k);
            m.target = Some(target.clone());
            records.push(m);
        }
        records.extend(start);
        let written = if records.is_empty() { Ok(None) } else { self.append(&records) };
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
        }
        // An in-place `walj bisect` has a state in the tree (running, or cut off): one small
        // file read, only at SessionStart.
        if let Some(note) = crate::bisect::inplace::interrupted(self.project) {
            output = Some(announce::add_system_message(output, &format!("walj: {note}")));
        }
        // The plugin's hook with `walj install`'s hooks in the settings too (up to three small
        // reads, only at SessionStart, only under a plugin).
        if let Some(note) =
            crate::plugin::twice_note(&self.project.root, &crate::claude::paths::config_dir_or_default())
        {
            output = Some(announce::add_system_message(output, &note));
        }
        // Other machines' unresolved entries (`walj sync`): counts, for the user only.
        if let Some(line) = crate::sync::note::session_start_line(self.project) {
            output = Some(announce::add_system_message(output, &line));
        }
        output
    }

    /// UserPromptSubmit of a session whose SessionStart ran out of time: folds within the
    /// budget again (the snapshot holds what earlier folds did); done, the note goes out as
    /// this prompt's `additionalContext` and the start is recorded after its marks. Not done,
    /// the start is recorded now (this session acts) and the note waits for a later prompt.
    fn deferred_note(&self) -> Option<String> {
        let (start, path) = deferred::take(self.project, self.ev.session)?;
        let began = std::time::Instant::now();
        let fold =
            match Fold::load_within(&self.project.journal, &FoldOptions::default(), began + deferred::FOLD_BUDGET) {
                Ok(Some(fold)) => fold,
                Ok(None) => {
                    if let Some(start) = start {
                        let _ = self.append(&[start]);
                        if let Err(e) = deferred::save(self.project, self.ev.session, None) {
                            log_error(self.project, &format!("keeping the SessionStart note for later: {e}"));
                        }
                    }
                    return None;
                }
                Err(e) => {
                    log_error(self.project, &format!("the SessionStart note at the first prompt: {e}"));
                    if let Some(start) = start {
                        let _ = self.append(&[start]);
                    }
                    deferred::remove(&path);
                    return None;
                }
            };
        let output = self.start_note(fold, start);
        deferred::remove(&path);
        output.map(|o| deferred::prompt_output(o).to_string())
    }

    /// Writes this session's start record if it still waits ([`deferred`]): before another
    /// SessionStart or the SessionEnd of a session that never got a prompt.
    fn flush_deferred_start(&self) {
        let Some((start, path)) = deferred::take(self.project, self.ev.session) else { return };
        if let Some(start) = start
            && let Err(e) = self.append(&[start])
        {
            log_error(self.project, &format!("recording a SessionStart that waited: {e}"));
        }
        deferred::remove(&path);
    }

    /// Stop, PreCompact and SessionEnd: copies what the transcript gained into its safe copy
    /// ([`crate::session::transcript`]), logs errors, never fails.
    fn copy_transcript(&self) {
        let session = self.ev.session;
        let Some(source) = self.ev.transcript.filter(|s| !s.is_empty()) else { return };
        if session == "unknown" {
            return;
        }
        let limit = Some(crate::session::transcript::HOOK_MAX_BYTES);
        if let Err(e) = crate::session::transcript::copy_limited(self.project, session, Path::new(source), limit) {
            log_error(self.project, &format!("transcript copy of session {session}: {e}"));
        }
    }

    /// The config and its compiled globs; a broken config falls back to the defaults
    /// (and is reported), the hook must go on.
    /// `[sync] auto`: a detached background sync (never inside the hook's time).
    fn auto_sync(&self, cfg: &Config) {
        if let Err(e) = crate::sync::auto::maybe_spawn(self.project, cfg) {
            log_error(self.project, &format!("starting the automatic sync: {e}"));
        }
    }

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
pub(crate) struct Image {
    /// `None` when the file could not be read (`nocap` says why): its content is unknown.
    pub blob: Option<Blob>,
    pub nocap: Option<String>,
    /// The bytes read (when they were read whole).
    pub bytes: Option<Vec<u8>>,
    /// What must be waited for once the line that names the image is appended, before it is
    /// acknowledged ([`Store::put_carried`]): the stored object's syncs, still running, or
    /// the check that the recent line carrying the image is still in the journal.
    pub sync: Option<Durable>,
    /// `(id, base64)`: the object the line that names it must carry ([`key::IMAGES`]).
    pub carried: Option<(String, String)>,
}

impl Image {
    fn none(blob: Option<Blob>, nocap: Option<String>) -> Image {
        Image { blob, nocap, bytes: None, sync: None, carried: None }
    }

    /// Moves what the line must carry into `r` and the syncs to wait for into `syncs`.
    fn settle(&mut self, r: &mut Record, syncs: &mut Vec<Durable>) {
        syncs.extend(self.sync.take());
        if let Some((id, b64)) = self.carried.take() {
            carry(r, id, b64);
        }
    }
}

/// Adds an object to the images `r` carries ([`key::IMAGES`]).
fn carry(r: &mut Record, id: String, b64: String) {
    let images = r.extra.entry(key::IMAGES).or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(m) = images {
        m.insert(id, Value::String(b64));
    }
}

/// Stores `bytes` for a line about to name them: its id, with what the line must carry or
/// wait for ([`Store::put_carried`]).
fn store_image(store_dir: &Path, bytes: &[u8]) -> Image {
    // A line never carries secret-looking text: lines travel (sync segments, bundles) where
    // such an image does not (`walj sync` withholds it).
    let may_carry = |b: &[u8]| crate::secrets::findings(b).is_empty();
    match Store::new(store_dir).put_carried(bytes, may_carry) {
        Ok((id, durable)) => {
            let (sync, carried) = match durable {
                Durable::Already => (None, None),
                Durable::Carried(b64) => (None, Some((id.clone(), b64))),
                wait @ (Durable::Pending(_) | Durable::Journaled(_)) => (Some(wait), None),
            };
            Image { blob: Some(Blob::Id(id)), nocap: None, bytes: None, sync, carried }
        }
        Err(e) => Image {
            nocap: Some(nocap_err(nocap::STORE_FAILED, &e)),
            ..Image::none(Some(Blob::Id(crate::store::blob_id(bytes))), None)
        },
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
pub(crate) fn capture(store_dir: &Path, abs: &Path, rel: &str, cfg: &Config, m: Option<&Matcher>) -> Image {
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
    // Stored without a sync of its own: the line carries it, or the caller waits for its
    // syncs while the journal line is synced ([`Ctx::append_durable`]).
    let image = store_image(store_dir, &bytes);
    Image { bytes: Some(bytes), ..image }
}

/// How far back (bytes) a command's Post looks for the calls that ran beside it.
const BESIDE_SCAN_BYTES: u64 = 4 << 20;

/// A command's Post, deciding which of the changes its snapshot saw are its own. Other things
/// write while a command runs: another session of this checkout, an async subagent of the same
/// session (Claude Code 2.1.x runs them in the background), the other agents' parallel calls.
/// The rule (docs/architecture.md, "Who made a change"):
/// 1. A change whose path and content a record journaled since the command's intent explains
///    (any session's file tool result or intended content, another command's child) is that
///    call's: left out here.
/// 2. What is left is the command's. It is **certain** only when no other window was open when
///    the change was made: no other command (any session) between its intent and its outcome,
///    no other session writing records. Otherwise it is listed once, `attribution: uncertain`,
///    with `candidates`: the other commands whose windows were open at the change's ctime
///    (ctime only: mtime is set freely by `touch -d`, `cp -p`, `tar`); a deletion is bounded
///    by its folder's ctime. Decided by [`crate::bashsnap::attribution::judge`], the rule
///    killed commands use too. (No margin here: the hook probes no clock; a change within a
///    millisecond of another window's edge is judged by the journal's own times.)
/// 3. Of an uncertain change, the commands' texts may say who is the likelier writer
///    ([`crate::bashsnap::attribution::evidence`]: a command that names the file, a pattern
///    matching it — `out/o$i.txt` — or, weaker, its folder). When this command's text alone
///    points at it most strongly, it stays this command's (uncertain, naming the others). When
///    a candidate's does, and that candidate still runs with its snapshot finished before the
///    change's ctime ([`bashsnap::pending`]), it is left to it: its own outcome (or its
///    derivation after a crash) is sure to see the change and lists it, once, under it. Else —
///    no text singles one out — the change is `attribution: undecided`: "uncertain: this
///    command or the candidates", listed once here and counted in neither's changes.
/// 4. Claude Code's own temporary file for a journaled Edit or Write
///    (`<file>.tmp.<pid>.<hex>`, [`crate::bashsnap::attribution::claude_temp_of`]) is part of
///    that call, never a change.
///
/// Decided under the journal's lock, so two commands that ran side by side never both claim a
/// file from a journal that has neither's children yet.
fn explained_elsewhere(
    project: &Project,
    session: &str,
    (id, command): (&str, &str),
    children: Vec<Record>,
) -> Vec<Record> {
    use crate::bashsnap::attribution::{self as rule, Scene, Verdict, Window};
    use crate::bashsnap::killed::{change_time, ms};
    use crate::journal::attribution;
    use std::collections::{HashMap, HashSet};
    use std::ops::ControlFlow::{Break, Continue};
    let mut known: HashSet<(String, Option<String>)> = HashSet::new();
    // The paths file tool calls named in the look back (for their temporary files).
    let mut journaled: HashSet<String> = HashSet::new();
    // The other windows' command lines (their intents), for the evidence rule.
    let mut texts: HashMap<String, String> = HashMap::new();
    // Other commands (any session): outcomes seen first walking back (id → its time), then
    // the windows, from their intent to their outcome (or still open).
    let mut closed: HashMap<String, String> = HashMap::new();
    let mut windows: Vec<(String, String, Option<String>)> = Vec::new();
    // Each window's session (its sidecar is keyed by session and id).
    let mut window_session: HashMap<String, String> = HashMap::new();
    // The first time another session wrote a record inside this command's window.
    let mut other_from: Option<String> = None;
    let mut own_open: Option<String> = None;
    let scan = crate::journal::scan_lines_rev(&project.journal, BESIDE_SCAN_BYTES, |line| {
        let Ok(v) = crate::journal::classify(0, line) else { return Continue(()) };
        let own_session = v.session_key() == session;
        if v.is_command() && v.id != id {
            match v.op() {
                op::APPLIED | op::FAILED | op::RESOLVED => {
                    closed.entry(v.id.to_string()).or_insert_with(|| v.ts.to_string());
                }
                op::INTENT => {
                    windows.push((v.id.to_string(), v.ts.to_string(), closed.get(v.id.as_ref()).cloned()));
                    window_session.insert(v.id.to_string(), v.session_key().to_string());
                    if let Ok(r) = serde_json::from_slice::<serde_json::Value>(line)
                        && let Some(text) = r.get(key::COMMAND).and_then(serde_json::Value::as_str)
                    {
                        texts.insert(v.id.to_string(), text.to_string());
                    }
                }
                _ => {}
            }
        }
        if !v.path.is_empty() && v.parent.is_none() && !v.is_command() {
            journaled.insert(v.path.to_string());
        }
        // A command that never finished closes when walj saw its processes gone (its `gone`
        // record, its derived entries): a dead session's command is no suspect after that.
        // Walking back, the earliest such record is the last seen.
        let gone = match (v.op(), v.kind()) {
            (op::SESSION, Some(kind::GONE)) => v.target.as_deref(),
            (op::APPLIED, _) if v.unfinished => v.parent.as_deref(),
            _ => None,
        };
        if let Some(g) = gone {
            closed.insert(g.to_string(), v.ts.to_string());
        }
        if own_session && v.op() == op::INTENT && v.id == id {
            own_open = Some(v.ts.to_string());
            return Continue(());
        }
        if own_open.is_some() {
            // Before this command: only its own session's turn start ends the look for
            // commands still open beside it.
            let turn_start = own_session
                && v.op() == op::SESSION
                && matches!(v.kind(), Some(kind::PROMPT | kind::START | kind::STOP));
            return if turn_start { Break(()) } else { Continue(()) };
        }
        if !own_session && !v.session_key().is_empty() {
            other_from = Some(v.ts.to_string());
        }
        if v.path.is_empty() || v.parent.as_deref() == Some(id) {
            return Continue(());
        }
        match v.op() {
            op::APPLIED => {
                if let Some(a) = &v.after {
                    known.insert((v.path.to_string(), a.id().map(str::to_string)));
                }
            }
            op::INTENT => {
                if let Some(i) = &v.intended {
                    known.insert((v.path.to_string(), Some(i.to_string())));
                }
            }
            _ => {}
        }
        Continue(())
    });
    if scan.is_err() {
        return children;
    }
    let open = own_open.as_deref().and_then(ms).unwrap_or(0);
    // Windows that closed before this command opened were never beside it.
    windows.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
    let parsed: Vec<(String, i64, Option<i64>)> = windows
        .into_iter()
        .filter_map(|(w, o, c)| Some((w, ms(&o)?, c.as_deref().and_then(ms))))
        .filter(|(_, _, c)| c.is_none_or(|c| c >= open))
        .collect();
    let own = Window { id, open, close: None };
    let scene = Scene {
        others: parsed.iter().map(|(w, o, c)| Window { id: w, open: *o, close: *c }).collect(),
        writer_from: other_from.as_deref().and_then(ms),
        last_life: None,
        margin: 0,
    };
    // Candidates still running, read once each (their sidecars).
    let mut pending: HashMap<String, Option<bashsnap::Pending>> = HashMap::new();
    let pending_of = |w: &str| bashsnap::pending(project, window_session.get(w).map_or("", String::as_str), w);
    children
        .into_iter()
        .filter(|c| {
            let after = c.after.as_ref().and_then(|b| b.id().map(str::to_string));
            // Another call's bytes explain the bytes, never a mode this command changed.
            let mode_changed = matches!(
                (c.extra.get(key::MODE_BEFORE), c.extra.get(key::MODE_AFTER)),
                (Some(b), Some(a)) if b != a
            );
            mode_changed || !known.contains(&(c.path.clone(), after))
        })
        // Claude Code's temporary file of a journaled Edit or Write: that call's, not a change.
        .filter(|c| rule::claude_temp_of(&c.path).is_none_or(|base| !journaled.contains(base)))
        .filter_map(|c| {
            let at = change_time(&project.root, &c.path);
            match rule::judge(&own, &scene, at) {
                Verdict::Certain => Some(c),
                Verdict::Uncertain(ids) if !ids.is_empty() => {
                    let mut levels = vec![rule::evidence(command, &c.path)];
                    for w in &ids {
                        let text = match texts.get(*w) {
                            Some(t) => Some(t.clone()),
                            None => pending
                                .entry(w.to_string())
                                .or_insert_with(|| pending_of(w))
                                .as_ref()
                                .map(|p| p.command.clone()),
                        };
                        levels.push(text.map_or(rule::Evidence::None, |t| rule::evidence(&t, &c.path)));
                    }
                    match rule::likelier(&levels) {
                        Some(0) => Some(uncertain(c, &ids, &texts, attribution::UNCERTAIN)),
                        Some(k) => {
                            // The likelier writer takes it when it is sure to see it.
                            let w = ids[k - 1];
                            let before_absent = c.before.as_ref().is_some_and(|b| b.is_absent());
                            let after = c.after.as_ref().and_then(|b| b.id());
                            let sure =
                                pending.entry(w.to_string()).or_insert_with(|| pending_of(w)).as_ref().is_some_and(
                                    |p| {
                                        matches!(at, rule::At::Exact(t) if t > p.seen_ms)
                                            || p.sees_change(&project.root, &c.path, before_absent, after)
                                    },
                                );
                            (!sure).then(|| uncertain(c, &ids, &texts, attribution::UNDECIDED))
                        }
                        None => Some(uncertain(c, &ids, &texts, attribution::UNDECIDED)),
                    }
                }
                _ => Some(c.with(key::ATTRIBUTION, attribution::UNCERTAIN)),
            }
        })
        .collect()
}

/// A change that may be `candidates`' as well: `attribution` (`uncertain`: likelier this
/// command's; `undecided`: no more this command's than theirs), naming them.
fn uncertain(
    c: Record,
    candidates: &[&str],
    texts: &std::collections::HashMap<String, String>,
    attribution: &str,
) -> Record {
    use crate::bashsnap::attribution::shortened;
    let shown: Vec<String> = candidates
        .iter()
        .map(|w| texts.get(*w).map(|t| shortened(t, key::CANDIDATE_SHOWN)).unwrap_or_default())
        .collect();
    let mut c = c
        .with(key::ATTRIBUTION, attribution)
        .with(key::CANDIDATES, candidates.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .with(key::CANDIDATE_COMMANDS, shown);
    if attribution == crate::journal::attribution::UNDECIDED {
        // Not known to be this command's: nor its subagent's work.
        c.extra.remove(key::AGENT_ID);
    }
    c
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
