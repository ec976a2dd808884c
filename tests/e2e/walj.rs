//! Walj end to end with the real Claude Code CLI (pinned by `scripts/claude-code.sh`),
//! driven offline by the scripted stand-in model server (`tests/support`).
//!
//! Each scenario runs in a fresh temp git project with a temp HOME. walj is installed the way a
//! user does it: the walj binary under test first on `PATH`, then `walj install` in the project
//! (which writes `.claude/settings.json` with `walj hook`). Then the real `claude -p` runs, its
//! real tools change real files, its real hooks run walj, and the tests read walj's journal,
//! walj's reports and every request the "model" received.
//!
//! Skipped (with a `SKIPPED:` line) when the CLI cannot be installed; `WALJ_E2E_REQUIRE=1`
//! (CI) turns that into a failure. See docs/e2e.md.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{self, MockServer, Request, Turn};
use crate::support::claude::{self, Sandbox};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use walj::fold::{Fold, FoldOptions};
use walj::journal::record::check_crc;

pub(crate) const SESSION_TIMEOUT: Duration = Duration::from_secs(180);
/// How long hooks that outlive `claude` (SessionEnd) get to write their record.
pub(crate) const HOOK_GRACE: Duration = Duration::from_secs(10);
/// The beginning of walj's recovery note for Claude (src/announce.rs).
pub(crate) const NOTE: &str = "walj recovery note:";
/// How Claude Code 2.1.328 hands SessionStart `additionalContext` to the model.
pub(crate) const CONTEXT_PREFIX: &str = "SessionStart hook additional context:";

pub(crate) fn walj_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

/// Prints a `SKIPPED:` line for one assertion or case (on the real stderr too, so it shows
/// without `--nocapture`).
fn skipped(what: &str) {
    let msg = format!("SKIPPED: {what}");
    println!("{msg}");
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// A scenario's project: a [`Sandbox`] (temp git project, HOME, TMPDIR) plus a `bin/` folder
/// holding the walj binary under test, which comes first on the `PATH` of everything run here.
pub(crate) struct Proj {
    pub(crate) sb: Sandbox,
    /// `bin/:$PATH`.
    pub(crate) path: String,
}

/// `(relative path, content)` pairs.
pub(crate) type Files<'a> = &'a [(&'a str, &'a str)];

impl Proj {
    /// A project holding `files`, committed (fixed author and dates, so two projects with the
    /// same files have the same commit id).
    pub(crate) fn new(files: Files) -> Proj {
        let sb = Sandbox::new();
        let bin = sb.dir.path().canonicalize().unwrap().join("bin");
        fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(walj_bin(), bin.join("walj")).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        for (rel, content) in files {
            sb.write(rel, content);
        }
        let p = Proj { sb, path };
        p.git(&["add", "-A"]);
        p.git(&["commit", "-q", "--allow-empty", "-m", "initial"]);
        p
    }

    pub(crate) fn root(&self) -> &Path {
        &self.sb.project
    }

    pub(crate) fn abs(&self, rel: &str) -> String {
        self.sb.project.join(rel).to_string_lossy().into_owned()
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(self.root())
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "walj-e2e")
            .env("GIT_AUTHOR_EMAIL", "e2e@walj.invalid")
            .env("GIT_COMMITTER_NAME", "walj-e2e")
            .env("GIT_COMMITTER_EMAIL", "e2e@walj.invalid")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .stderr(Stdio::inherit())
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?} failed");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `git hash-object` of a project file (`None` when it does not exist).
    pub(crate) fn hash_object(&self, rel: &str) -> Option<String> {
        self.sb.project.join(rel).is_file().then(|| self.git(&["hash-object", "--", rel]))
    }

    /// `walj install` in the project, as a user runs it (walj found on PATH, no flags).
    pub(crate) fn install_walj(&self) {
        let out = Command::new("sh")
            .args(["-c", "walj install"])
            .current_dir(self.root())
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.sb.home)
            .env("NO_COLOR", "1")
            .output()
            .expect("run walj install");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "walj install failed: {text}");
        let settings: Value =
            serde_json::from_str(&fs::read_to_string(self.sb.project.join(".claude/settings.json")).unwrap()).unwrap();
        for event in ["PreToolUse", "PostToolUse", "PostToolUseFailure", "SessionStart", "Stop", "SessionEnd"] {
            // Exec form (no `claude` on this PATH to ask its version: walj writes exec form, which
            // the pinned CLI honours), so the session below runs walj without a shell.
            let exec = settings["hooks"][event]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
                .any(|h| h["command"] == "walj" && h["args"] == json!(["hook"]));
            assert!(exec, "walj install did not hook {event} with exec-form `walj` [`hook`]: {settings}");
        }
        assert!(self.sb.project.join(".walj").is_dir(), "walj install made no .walj/: {text}");
    }

    /// `claude -p <prompt>` (see `Sandbox::claude_p`) with walj first on PATH and the todo
    /// tools enabled.
    pub(crate) fn claude_p(&self, bin: &Path, mock: &MockServer, prompt: &str) -> Command {
        let mut cmd = self.sb.claude_p(bin, mock, prompt);
        cmd.env("PATH", &self.path).env("CLAUDE_CODE_ENABLE_TODO_TOOLS", "1");
        cmd
    }

    /// Runs a whole `claude -p` session; asserts it succeeded. With walj installed, also waits
    /// for the session's `end` record (SessionEnd hooks may finish after claude exits).
    /// Returns the output and the session id.
    pub(crate) fn session(&self, cmd: Command, mock: &MockServer) -> (claude::Output, String) {
        let out = claude::run(cmd, SESSION_TIMEOUT);
        assert!(
            !out.timed_out && out.status.success(),
            "claude failed: {:?} after {:?}\nstdout: {}\nstderr: {}\nrequests:\n{}",
            out.status,
            out.elapsed,
            out.stdout,
            out.stderr,
            mock.summary()
        );
        let sid = out.json()["session_id"].as_str().expect("session_id in claude's JSON output").to_string();
        if self.journal_path().exists() {
            let ended = self.wait_for_record(HOOK_GRACE, |r| {
                r["op"] == "session" && r["kind"] == "end" && r["session"] == sid.as_str()
            });
            assert!(ended.is_some(), "no `end` record for session {sid}:\n{}", self.journal_text());
        }
        (out, sid)
    }

    /// `walj --project <root> <args>` with a clean environment; returns (success, stdout, stderr).
    pub(crate) fn walj(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(walj_bin())
            .arg("--project")
            .arg(self.root())
            .args(args)
            .current_dir(self.root())
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.sb.home)
            // The user's shell and Claude Code share TMPDIR (where the checkout's watcher's
            // socket is, without XDG_RUNTIME_DIR).
            .env("TMPDIR", &self.sb.tmp)
            .env("NO_COLOR", "1")
            .env_remove("CLAUDE_PROJECT_DIR")
            .stdin(Stdio::null())
            .output()
            .expect("run walj");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `walj <args>` that must succeed, stdout as JSON.
    pub(crate) fn walj_json(&self, args: &[&str]) -> Value {
        let (ok, out, err) = self.walj(args);
        assert!(ok, "walj {args:?} failed: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("walj {args:?}: not JSON ({e}): {out}"))
    }

    /// Whether the walj binary under test has this subcommand.
    pub(crate) fn walj_has(&self, sub: &str) -> bool {
        let (ok, _, _) = self.walj(&[sub, "--help"]);
        ok
    }

    pub(crate) fn journal_path(&self) -> PathBuf {
        self.sb.project.join(".walj/journal.jsonl")
    }

    pub(crate) fn journal_text(&self) -> String {
        fs::read_to_string(self.journal_path()).unwrap_or_default()
    }

    /// Every journal line, each checked: complete (newline-terminated), valid JSON object,
    /// correct crc. Panics on the first bad line.
    pub(crate) fn journal(&self) -> Vec<Value> {
        let text = self.journal_text();
        assert!(text.is_empty() || text.ends_with('\n'), "journal does not end with a newline (torn tail)");
        text.lines()
            .enumerate()
            .map(|(i, line)| {
                assert_eq!(check_crc(line.as_bytes()), Some(true), "journal line {} has a bad crc: {line}", i + 1);
                let v: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("journal line {} is not JSON ({e}): {line}", i + 1));
                assert!(v.is_object(), "journal line {} is not an object: {line}", i + 1);
                v
            })
            .collect()
    }

    /// Records with this op and id.
    pub(crate) fn records(&self, op: &str, id: &str) -> Vec<Value> {
        self.journal().into_iter().filter(|r| r["op"] == op && r["id"] == id).collect()
    }

    pub(crate) fn wait_for_record(&self, timeout: Duration, mut pred: impl FnMut(&Value) -> bool) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let found =
                self.journal_text().lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|r| pred(r));
            if found.is_some() || Instant::now() >= deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn fold(&self) -> Fold {
        Fold::load(&self.journal_path(), &FoldOptions { keep_settled: true, all_commands: true, ..Default::default() })
            .expect("fold the journal")
    }

    /// `.walj/errors.log` (the hook's error log), empty when absent.
    pub(crate) fn hook_errors(&self) -> String {
        fs::read_to_string(self.sb.project.join(".walj/errors.log")).unwrap_or_default()
    }

    /// Asserts that walj logged no error and that no hook failed in Claude Code's eyes.
    /// Claude Code 2.1.328 writes a `hook_non_blocking_error` attachment (with `exitCode`)
    /// to the transcript for every hook that exits non-zero, and lists Stop hook errors in a
    /// `stop_hook_summary` line.
    pub(crate) fn assert_hooks_clean(&self) {
        assert_eq!(self.hook_errors(), "", "walj logged hook errors");
        let mut transcripts = 0;
        for e in fs::read_dir(self.sb.transcripts_dir()).unwrap().flatten() {
            if e.path().extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            transcripts += 1;
            for line in fs::read_to_string(e.path()).unwrap().lines() {
                let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                let a = &v["attachment"];
                let kind = a["type"].as_str().unwrap_or("");
                assert!(
                    !(kind.starts_with("hook_") && kind.contains("error")) && a["exitCode"].as_i64().unwrap_or(0) == 0,
                    "a hook failed in Claude Code's eyes: {line}"
                );
                if v["subtype"] == "stop_hook_summary" {
                    assert_eq!(v["hookErrors"], json!([]), "{line}");
                }
            }
        }
        assert!(transcripts > 0, "no transcript in {}", self.sb.transcripts_dir().display());
    }
}

/// Kills (-9) every process whose command line holds `token`, and their descendants, on drop:
/// orphans never outlive a test, even a failing one.
pub(crate) struct OrphanGuard(pub(crate) String);

impl Drop for OrphanGuard {
    fn drop(&mut self) {
        claude::kill9_tree(&claude::pids_mentioning(&self.0));
    }
}

/// Asserts that the file tool call `id` on `rel` has an intent with pre-image `before` (`None`
/// = the file did not exist) and an applied record whose post-image is the file on disk now.
fn assert_file_call(p: &Proj, id: &str, tool: &str, rel: &str, before: Option<&str>) {
    let ctx = || p.journal_text();
    let intents = p.records("intent", id);
    assert_eq!(intents.len(), 1, "intent of {id} ({tool} {rel}):\n{}", ctx());
    let intent = &intents[0];
    assert_eq!(intent["tool"], tool, "{intent}");
    assert_eq!(intent["path"], rel, "{intent}");
    assert_eq!(intent["before"], json!(before), "pre-image of {id} ({rel}): {intent}");
    let applied = p.records("applied", id);
    assert_eq!(applied.len(), 1, "applied record of {id} ({tool} {rel}):\n{}", ctx());
    let now = p.hash_object(rel);
    assert!(now.is_some(), "{rel} does not exist after {tool}");
    assert_eq!(applied[0]["after"], json!(now), "post-image of {id} ({rel}) vs git hash-object: {}", applied[0]);
    assert_eq!(applied[0]["path"], rel, "{}", applied[0]);
    // The images themselves are durable: in the store, or carried by a journal line (read
    // through the store, which checks each against its id).
    let store = walj::store::Store::new(p.sb.project.join(".walj/store"));
    for blob in [before.map(str::to_string), now].into_iter().flatten() {
        store.get(&blob).unwrap_or_else(|e| panic!("image {blob} of {rel} cannot be read: {e}"));
    }
}

/// The main requests sent after the first `skip` ones.
pub(crate) fn main_requests_after(mock: &MockServer, skip: usize) -> Vec<Request> {
    mock.main_requests().into_iter().skip(skip).collect()
}

// ---------------------------------------------------------------------------------------------
// A clean session.

const SETTINGS_JSON: &str = "{\n  \"retries\": 3\n}\n";
const MAIN_RS: &str = "fn main() {\n    println!(\"shop\");\n}\n";

#[test]
fn clean_session_is_journaled_and_settled() {
    let Some(bin) = claude::claude_or_skip("clean_session_is_journaled_and_settled") else { return };
    let p = Proj::new(&[("config/settings.json", SETTINGS_JSON), ("src/main.rs", MAIN_RS)]);
    p.install_walj();
    let settings_before = p.hash_object("config/settings.json").unwrap();
    let main_before = p.hash_object("src/main.rs").unwrap();

    let mock = MockServer::start(vec![
        Turn::tools([
            ("TaskCreate", json!({"subject": "Raise retries", "description": "retries 3 -> 5"})),
            ("TaskCreate", json!({"subject": "Add a server", "description": "src/server.rs"})),
        ]),
        Turn::tool(
            "Edit",
            json!({"file_path": p.abs("config/settings.json"), "old_string": "\"retries\": 3",
                   "new_string": "\"retries\": 5", "replace_all": false}),
        )
        .with_text("Raising the retries."),
        Turn::tool("Write", json!({"file_path": p.abs("src/server.rs"), "content": "pub fn serve() {}\n"})),
        Turn::tool(
            "Write",
            json!({"file_path": p.abs("src/main.rs"), "content": "mod server;\n\nfn main() {\n    server::serve();\n}\n"}),
        ),
        Turn::tool("Bash", json!({"command": "echo built > build.log", "description": "Build"})),
        Turn::tool("TaskUpdate", json!({"taskId": "1", "status": "completed"})),
        Turn::text("Done."),
    ]);
    let (out, sid) = p.session(p.claude_p(&bin, &mock, "Raise retries, add a server, build"), &mock);
    assert_eq!(out.json()["result"], "Done.", "{out:?}");
    assert_eq!(p.sb.read("config/settings.json").unwrap(), "{\n  \"retries\": 5\n}\n");
    assert_eq!(p.sb.read("build.log").as_deref(), Some("built\n"));

    // Nothing unresolved, the session ended.
    let recover = p.walj_json(&["recover", "--json"]);
    assert_eq!(recover, json!({"unresolved": 0, "handed_back_waiting": 0, "sessions": []}), "{}", p.journal_text());
    let (_, text, _) = p.walj(&["recover"]);
    assert!(text.contains("no unresolved journal entries"), "{text}");
    let status = p.walj_json(&["status", "--json"]);
    assert_eq!(status["sessions"], json!({"ended": 1}), "{status}");
    assert_eq!(status["unresolved"], 0, "{status}");
    assert_eq!(status["problems"], json!([]), "{status}");

    // Every file tool call: intent + applied with the right blob ids, then persisted at Stop.
    assert_file_call(&p, "toolu_mock_1_0", "Edit", "config/settings.json", Some(&settings_before));
    assert_file_call(&p, "toolu_mock_2_0", "Write", "src/server.rs", None);
    assert_file_call(&p, "toolu_mock_3_0", "Write", "src/main.rs", Some(&main_before));
    for id in ["toolu_mock_1_0", "toolu_mock_2_0", "toolu_mock_3_0"] {
        assert_eq!(p.records("persisted", id).len(), 1, "{id} not persisted at Stop:\n{}", p.journal_text());
    }
    let log = p.walj_json(&["log", "--json", "--all"]);
    let log: Vec<&Value> = log.as_array().unwrap().iter().collect();
    // Three file tool calls, and what the Bash call created (issue 6: a child entry).
    assert_eq!(log.len(), 4, "{log:?}");
    let built = log.iter().find(|e| e["path"] == "build.log").expect("build.log entry");
    assert_eq!(
        (&built["tool"], &built["event"], &built["parent"]),
        (&json!("Bash"), &json!("artifact_created"), &json!("toolu_mock_4_0"))
    );
    for e in &log {
        assert_eq!(e["status"], "persisted", "{e}");
        assert_eq!(e["after"], json!(p.hash_object(e["path"].as_str().unwrap())), "{e}");
    }

    // The Bash call: intent and applied (a command, session context).
    let bash = p.records("intent", "toolu_mock_4_0");
    assert_eq!(bash.len(), 1, "{}", p.journal_text());
    assert_eq!(bash[0]["tool"], "Bash");
    assert_eq!(bash[0]["command"], "echo built > build.log");
    assert_eq!(bash[0]["cwd"], p.root().to_str().unwrap());
    assert_eq!(p.records("applied", "toolu_mock_4_0").len(), 1, "{}", p.journal_text());

    // The todos: three task records, and the fold's todo list.
    for (id, tool) in
        [("toolu_mock_0_0", "TaskCreate"), ("toolu_mock_0_1", "TaskCreate"), ("toolu_mock_5_0", "TaskUpdate")]
    {
        let r = p.records("session", id);
        assert_eq!(r.len(), 1, "todo call {id}:\n{}", p.journal_text());
        assert_eq!(r[0]["kind"], "task");
        assert_eq!(r[0]["tool"], tool);
    }
    let fold = p.fold();
    let s = fold.session(&sid).expect("the session in the fold");
    let todos: Vec<(Option<&str>, &str, &str)> =
        s.todos.iter().map(|t| (t.id.as_deref(), t.content.as_str(), t.status.as_str())).collect();
    assert_eq!(todos, [(Some("1"), "Raise retries", "completed"), (Some("2"), "Add a server", "pending")]);
    assert_eq!(s.prompts.len(), 1);
    assert_eq!(s.prompts[0].text, "Raise retries, add a server, build");
    assert_eq!(s.source.as_deref(), Some("startup"));
    assert_eq!(s.end.as_ref().map(|e| e.1.as_str()), Some("other"));

    // Every tool call the model made is in the journal.
    let last = mock.main_requests().last().unwrap().clone();
    assert_eq!(last.tool_results().len(), 7, "{}", mock.summary());
    for r in last.tool_results() {
        let id = r["tool_use_id"].as_str().unwrap();
        assert!(p.journal().iter().any(|rec| rec["id"] == id), "tool call {id} is not in the journal");
    }
    p.assert_hooks_clean();
}

// ---------------------------------------------------------------------------------------------
// kill -9 mid-Bash.

/// A project where `claude -p` Edited `config/settings.json`, Wrote `src/server.rs`, then was
/// killed (-9) while its Bash command (`sleep 60`, marked with `token`) ran.
pub(crate) struct Crashed {
    pub(crate) p: Proj,
    pub(crate) mock: MockServer,
    pub(crate) sid: String,
    pub(crate) token: String,
    /// Kills the orphaned Bash command when dropped.
    pub(crate) orphans: OrphanGuard,
    /// The files' blob ids before the session.
    settings_before: String,
}

pub(crate) const CRASH_PROMPT: &str = "Raise retries, add a server, then build";

pub(crate) fn crash_mid_bash(bin: &Path) -> Crashed {
    let p = Proj::new(&[("config/settings.json", SETTINGS_JSON), ("src/main.rs", MAIN_RS)]);
    p.install_walj();
    let settings_before = p.hash_object("config/settings.json").unwrap();
    let token = claude::unique_token("walj-e2e-orphan");
    let orphans = OrphanGuard(token.clone());
    let mock = MockServer::start(vec![
        Turn::tool(
            "Edit",
            json!({"file_path": p.abs("config/settings.json"), "old_string": "\"retries\": 3",
                   "new_string": "\"retries\": 5", "replace_all": false}),
        ),
        Turn::tool("Write", json!({"file_path": p.abs("src/server.rs"), "content": "pub fn serve() {}\n"})),
        Turn::tool(
            "Bash",
            json!({"command": format!("echo started > run.log; sleep 60 # {token}"), "description": "Long build"}),
        ),
        Turn::text("unreachable"),
    ]);
    // Killed once the command runs (its shell holds the token and run.log exists) and its
    // tool_use reached the transcript (written asynchronously; `--resume` needs it).
    let sid = kill_mid_bash(&p, p.claude_p(bin, &mock, CRASH_PROMPT), &mock, "toolu_mock_2_0", &token, "run.log");
    Crashed { p, mock, sid, token, orphans, settings_before }
}

#[test]
fn kill_9_mid_bash_leaves_exactly_the_unfinished_turn() {
    let Some(bin) = claude::claude_or_skip("kill_9_mid_bash_leaves_exactly_the_unfinished_turn") else { return };
    let c = crash_mid_bash(&bin);
    let p = &c.p;
    // Nothing is written after the kill (no Post, Stop or SessionEnd).
    std::thread::sleep(Duration::from_millis(300));

    let status = p.walj_json(&["status", "--json"]);
    assert_eq!(status["sessions"], json!({"crashed": 1}), "{status}");
    // The Edit, the Write, and run.log, which the killed command created (its change so far).
    assert_eq!(status["unresolved"], 3, "{status}");

    // The Edit and the Write: unresolved, applied, with the right images; disk = post-image.
    let recover = p.walj_json(&["recover", "--json"]);
    assert_eq!(recover["unresolved"], 3, "{recover}");
    let sessions = recover["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{recover}");
    assert_eq!(sessions[0]["session"], c.sid.as_str());
    assert_eq!(sessions[0]["state"], "crashed", "{recover}");
    assert_eq!(sessions[0]["last_prompt"], CRASH_PROMPT);
    let entries: Vec<(&str, &str, &str)> = sessions[0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["tool"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        entries,
        [
            ("config/settings.json", "Edit", "applied"),
            ("src/server.rs", "Write", "applied"),
            ("run.log", "Bash", "in_flight")
        ]
    );
    // run.log: derived from the killed command, whose orphan still runs: shown, not recorded yet.
    let run_log = &sessions[0]["entries"][2];
    assert_eq!(run_log["parent"], "toolu_mock_2_0", "{run_log}");
    assert_eq!(run_log["unfinished"], true, "{run_log}");
    assert_eq!(run_log["still_running"], true, "{run_log}");
    assert_eq!(run_log["before"], "absent", "{run_log}");
    assert!(run_log.get("attribution").is_none(), "no other session was active: {run_log}");
    let cut = &sessions[0]["commands_in_flight"];
    assert_eq!(cut[0]["id"], "toolu_mock_2_0", "{recover}");
    assert!(cut[0]["running"].as_u64().unwrap_or(0) >= 1, "{recover}");
    assert!(p.journal().iter().all(|r| r["path"] != "run.log"), "recorded while it still runs");
    for e in sessions[0]["entries"].as_array().unwrap() {
        assert_eq!(e["after"], json!(p.hash_object(e["path"].as_str().unwrap())), "disk vs post-image: {e}");
    }
    assert_file_call(p, "toolu_mock_0_0", "Edit", "config/settings.json", Some(&c.settings_before));
    assert_file_call(p, "toolu_mock_1_0", "Write", "src/server.rs", None);
    assert_eq!(p.sb.read("config/settings.json").unwrap(), "{\n  \"retries\": 5\n}\n");
    assert_eq!(p.sb.read("src/server.rs").unwrap(), "pub fn serve() {}\n");

    // The Bash call is in the session's context as in flight: an intent without outcome.
    let intent = p.records("intent", "toolu_mock_2_0");
    assert_eq!(intent.len(), 1, "{}", p.journal_text());
    assert!(intent[0]["command"].as_str().unwrap().contains(&c.token), "{}", intent[0]);
    for op in ["applied", "failed", "resolved"] {
        assert!(p.records(op, "toolu_mock_2_0").is_empty(), "the killed Bash call has a `{op}` record");
    }
    let (_, text, _) = p.walj(&["recover"]);
    println!("walj recover:\n{text}");
    assert!(
        crate::recover_text::says_cut_off(
            &text,
            "command never finished (Claude Code stopped while it ran)",
            "echo started > run.log; sleep 60",
            "still running ("
        ),
        "{text}"
    );
    assert!(text.contains("1 change so far"), "{text}");
    assert!(text.contains("crashed"), "{text}");
    let fold = p.fold();
    let s = fold.session(&c.sid).unwrap();
    assert_eq!(s.commands.len(), 1, "{:?}", s.commands);
    assert_eq!(s.commands[0].status, walj::fold::CommandStatus::InFlight);
    assert_eq!(s.commands[0].id, "toolu_mock_2_0");

    // The orphaned command still runs; `walj procs` reports it.
    let orphans = claude::pids_mentioning(&c.token);
    assert!(!orphans.is_empty(), "the Bash command did not survive the kill");
    if p.walj_has("procs") {
        let (ok, out, err) = p.walj(&["procs"]);
        println!("walj procs:\n{out}{err}");
        assert!(ok, "walj procs failed: {err}");
        let line = out.lines().find(|l| l.contains("sleep 60")).unwrap_or_else(|| panic!("{out}"));
        let l = line.to_lowercase();
        assert!(l.contains("running") || l.contains("alive"), "the orphan is not reported as running: {line}");
    } else {
        skipped(
            "kill_9_mid_bash_leaves_exactly_the_unfinished_turn: `walj procs` reports the orphan \
             (procs not on main yet; the in-flight command is asserted through the journal above)",
        );
    }
    p.assert_hooks_clean();
    drop(c.orphans);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !claude::pids_mentioning(&c.token).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(claude::pids_mentioning(&c.token).is_empty(), "orphans left behind");
    wait_gone(&c.token, p.root());

    // Nothing it started runs any more: the next readers record run.log once (two at a time).
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let mut cmd = std::process::Command::new(walj_bin());
            cmd.args(["recover", "--json"]).current_dir(p.root());
            cmd.output()
        })
        .collect();
    for r in readers {
        assert!(r.unwrap().status.success());
    }
    let recover = p.walj_json(&["recover", "--json"]);
    assert_eq!(recover["unresolved"], 3, "{recover}");
    let run_log = &recover["sessions"][0]["entries"][2];
    assert_eq!((run_log["path"].as_str(), run_log.get("still_running")), (Some("run.log"), None), "{recover}");
    let recorded: Vec<Value> = p.journal().into_iter().filter(|r| r["path"] == "run.log").collect();
    assert_eq!(recorded.len(), 1, "{}", p.journal_text());
    assert_eq!(recorded[0]["op"], "applied");
    assert_eq!(recorded[0]["unfinished"], true);
    assert_eq!(recorded[0]["parent"], "toolu_mock_2_0");
    assert_eq!(recorded[0]["after"], json!(p.hash_object("run.log")));
    assert!(fs::read_dir(p.root().join(".walj/bash")).unwrap().flatten().all(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        // The caches, index copies, and the copy of this index version kept for the next command.
        n == "cache.json"
            || n == "untracked.cache"
            || n.ends_with(".index")
            || (n.starts_with("index-") && n.ends_with(".last"))
            // A fill pass that is still reading what a snapshot could not.
            || n.starts_with("fill.")
    }));
    let (_, text, _) = p.walj(&["recover"]);
    assert!(text.contains("sleep 60 # ") && text.contains("— 1 change since it started"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// The next session.

/// The recovery note in a request: exactly once, as SessionStart context, naming both
/// unresolved paths once each. Returns the context string.
fn assert_note_once(req: &Request, sid: &str) -> String {
    assert_eq!(req.count(NOTE), 1, "the recovery note is not in the request exactly once: {:?}", holders(req, NOTE));
    let held = anthropic_mock::strings_containing(&req.body, NOTE);
    let note = held[0].to_string();
    assert!(note.starts_with(CONTEXT_PREFIX), "{note}");
    assert!(note.contains(sid), "the note does not name the crashed session {sid}: {note}");
    for path in ["config/settings.json", "src/server.rs"] {
        assert_eq!(note.matches(&format!("- {path} (")).count(), 1, "{path} not named once: {note}");
    }
    assert!(!note.contains("src/main.rs"), "{note}");
    note
}

fn holders(req: &Request, needle: &str) -> Vec<String> {
    anthropic_mock::strings_containing(&req.body, needle).into_iter().map(str::to_string).collect()
}

#[test]
fn next_session_gets_the_recovery_note_once_then_the_handoff_brief_once() {
    let test = "next_session_gets_the_recovery_note_once_then_the_handoff_brief_once";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    note_then_brief(test, &bin);
}

/// The same with Claude Code 2.1.328, the release before the pinned one that walj still
/// supports: the crash, the note once, the hand-back brief once.
#[test]
fn next_session_gets_the_note_then_the_brief_with_claude_code_2_1_328() {
    let test = "next_session_gets_the_note_then_the_brief_with_claude_code_2_1_328";
    let Some(bin) = claude::claude_exactly(test, "2.1.328") else { return };
    note_then_brief(test, &bin);
}

fn note_then_brief(test: &str, bin: &Path) {
    let bin = bin.to_path_buf();
    let c = crash_mid_bash(&bin);
    drop(c.orphans);
    let p = &c.p;

    // Session 2 (a new `claude -p`): the first request carries the note once.
    c.mock.script(vec![Turn::text("I will check those files.")]);
    let before = c.mock.main_requests().len();
    let (_, sid2) = p.session(p.claude_p(&bin, &c.mock, "What happened last time?"), &c.mock);
    assert_ne!(sid2, c.sid);
    let reqs = main_requests_after(&c.mock, before);
    assert!(!reqs.is_empty(), "{}", c.mock.summary());
    let note = assert_note_once(&reqs[0], &c.sid);
    let shown = &note[note.find(NOTE).unwrap()..];
    println!("recovery note as the model got it:\n{}", shown.split("\n\n").next().unwrap_or(shown));
    assert!(note.contains(CRASH_PROMPT), "the note lacks the last prompt: {note}");
    assert!(reqs.iter().all(|r| r.count(NOTE) == 1));
    // The note names the command the crash cut off, and what it changed.
    assert!(
        note.contains("command never finished (Claude Code stopped while it ran): echo started > run.log"),
        "{note}"
    );
    assert_eq!(note.matches("- run.log (").count(), 1, "{note}");
    // Still unresolved (the new session did not touch them), announced once.
    let recover = p.walj_json(&["recover", "--json"]);
    assert_eq!(recover["unresolved"], 3, "{recover}");

    // Session 3: the note was delivered; not again.
    let before = c.mock.main_requests().len();
    p.session(p.claude_p(&bin, &c.mock, "Anything else?"), &c.mock);
    for r in main_requests_after(&c.mock, before) {
        assert_eq!(r.count(NOTE), 0, "the recovery note came twice: {:?}", holders(&r, NOTE));
    }

    p.assert_hooks_clean();

    // Hand the two entries back; the next session gets the brief, once.
    if !p.walj_has("handoff") {
        skipped(&format!("{test}: hand-back brief (`walj handoff` is not in this walj yet)"));
        return;
    }
    let (ok, out, err) = p.walj(&["handoff", "toolu_mock_0_0", "toolu_mock_1_0"]);
    println!("walj handoff:\n{out}{err}");
    if !ok {
        skipped(&format!("{test}: hand-back brief (`walj handoff` failed: {})", err.trim()));
        return;
    }
    let handoffs: Vec<Value> = p.journal().into_iter().filter(|r| r["op"] == "handoff").collect();
    assert_eq!(handoffs.len(), 1, "walj handoff recorded no handoff:\n{}", p.journal_text());
    let brief = handoffs[0]["brief"].as_str().expect("a brief").to_string();
    assert!(brief.contains("config/settings.json") && brief.contains("src/server.rs"), "{brief}");
    let needle = brief.lines().find(|l| l.trim().len() > 20).unwrap_or(&brief).to_string();

    c.mock.script(vec![Turn::text("Picking those up.")]);
    let before = c.mock.main_requests().len();
    p.session(p.claude_p(&bin, &c.mock, "Go on with the handed-back work"), &c.mock);
    let reqs = main_requests_after(&c.mock, before);
    assert_eq!(
        reqs[0].count(&brief),
        1,
        "the brief is not in the request exactly once: {:?}",
        holders(&reqs[0], &needle)
    );
    let held = anthropic_mock::strings_containing(&reqs[0].body, &brief);
    assert!(held[0].starts_with(CONTEXT_PREFIX), "{}", held[0]);
    assert_eq!(reqs[0].count(NOTE), 0, "the recovery note came again with the brief");

    let before = c.mock.main_requests().len();
    p.session(p.claude_p(&bin, &c.mock, "And now?"), &c.mock);
    for r in main_requests_after(&c.mock, before) {
        assert_eq!(r.count(&needle), 0, "the brief came twice");
    }
}

#[test]
fn resumed_session_gets_the_recovery_note_once() {
    let Some(bin) = claude::claude_or_skip("resumed_session_gets_the_recovery_note_once") else { return };
    let c = crash_mid_bash(&bin);
    drop(c.orphans);
    let p = &c.p;

    c.mock.script(vec![Turn::text("Resumed.")]);
    let before = c.mock.main_requests().len();
    let mut cmd = p.claude_p(&bin, &c.mock, "Go on");
    cmd.args(["--resume", &c.sid]);
    let (out, sid) = p.session(cmd, &c.mock);
    assert_eq!(sid, c.sid, "--resume changed the session id");
    assert_eq!(out.json()["result"], "Resumed.");
    let reqs = main_requests_after(&c.mock, before);
    let note = assert_note_once(&reqs[0], &c.sid);
    assert!(note.contains("(this session, resumed)"), "{note}");
    // The resumed conversation carries the old turns too: the note is still there once.
    assert!(reqs[0].count("toolu_mock_2_0") > 0, "not the resumed conversation");

    let fold = p.fold();
    let s = fold.session(&c.sid).unwrap();
    assert_eq!(s.source.as_deref(), Some("resume"));
    let status = p.walj_json(&["status", "--json"]);
    assert_eq!(status["sessions"], json!({"ended": 1}), "{status}");
    // The resumed session's Stop verified the changes made before the crash: disk = post-image.
    // What the killed command did (run.log) stays for the user: its command never finished.
    let recover = p.walj_json(&["recover", "--json"]);
    assert_eq!(recover["unresolved"], 1, "{recover}");
    let e = &recover["sessions"][0]["entries"][0];
    assert_eq!((e["path"].as_str(), &e["unfinished"]), (Some("run.log"), &json!(true)), "{recover}");
    p.assert_hooks_clean();
}

#[test]
fn a_resumed_session_killed_again_is_told_to_the_next_session_with_only_its_new_work() {
    let test = "a_resumed_session_killed_again_is_told_to_the_next_session_with_only_its_new_work";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let c = crash_mid_bash(&bin);
    drop(c.orphans);
    let p = &c.p;
    wait_gone(&c.token, p.root());
    // `claude --resume`: told its own crash; it writes notes.md, then runs a command and is
    // killed again mid-command.
    let token = claude::unique_token("walj-e2e-second");
    let orphans = OrphanGuard(token.clone());
    c.mock.script(vec![
        Turn::tool("Write", json!({"file_path": p.abs("notes.md"), "content": "second life\n"})),
        Turn::tool("Bash", json!({"command": format!("echo again > second.log; sleep 60 # {token}")})),
        Turn::text("unreachable"),
    ]);
    let before = c.mock.main_requests().len();
    let mut cmd = p.claude_p(&bin, &c.mock, "Go on");
    cmd.args(["--resume", &c.sid]);
    let sid = kill_mid_bash(p, cmd, &c.mock, "toolu_mock_s1_1_0", &token, "second.log");
    assert_eq!(sid, c.sid, "--resume changed the session id");
    let reqs = main_requests_after(&c.mock, before);
    assert_note_once(&reqs[0], &c.sid);
    drop(orphans);
    wait_gone(&token, p.root());

    // A new session: told the second crash, and only what came after the first note.
    let mock = MockServer::start(vec![Turn::text("Noted.")]);
    p.session(p.claude_p(&bin, &mock, "Hello"), &mock);
    let first = &mock.main_requests()[0];
    assert_eq!(first.count(NOTE), 1, "the second crash was not told: {:?}", holders(first, NOTE));
    let note = anthropic_mock::strings_containing(&first.body, NOTE)[0].to_string();
    assert!(note.contains(&c.sid), "{note}");
    for new in ["notes.md", "second.log"] {
        assert!(note.contains(new), "{new} not told: {note}");
    }
    for old in ["config/settings.json", "src/server.rs", "run.log"] {
        assert!(!note.contains(&format!("- {old} (")), "{old} was told already: {note}");
    }
    // Told once: another session hears nothing more of it.
    let mock2 = MockServer::start(vec![Turn::text("Quiet.")]);
    p.session(p.claude_p(&bin, &mock2, "Hello again"), &mock2);
    assert_eq!(mock2.main_requests()[0].count(NOTE), 0, "told twice");
    p.assert_hooks_clean();
}

// ---------------------------------------------------------------------------------------------
// Parallel tool calls.

#[test]
fn parallel_tool_calls_are_all_recorded() {
    let Some(bin) = claude::claude_or_skip("parallel_tool_calls_are_all_recorded") else { return };
    let p = Proj::new(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    p.install_walj();
    let a = p.hash_object("a.txt").unwrap();
    let b = p.hash_object("b.txt").unwrap();
    let mock = MockServer::start(vec![
        Turn::tools([
            ("Edit", json!({"file_path": p.abs("a.txt"), "old_string": "alpha", "new_string": "ALPHA", "replace_all": false})),
            ("Edit", json!({"file_path": p.abs("b.txt"), "old_string": "beta", "new_string": "BETA", "replace_all": false})),
            ("Write", json!({"file_path": p.abs("c.txt"), "content": "gamma\n"})),
        ])
        .with_text("Three changes at once."),
        Turn::text("Done."),
    ]);
    p.session(p.claude_p(&bin, &mock, "Change a, b and c"), &mock);
    assert_eq!(p.sb.read("a.txt").unwrap(), "ALPHA\n");
    assert_eq!(p.sb.read("b.txt").unwrap(), "BETA\n");
    assert_eq!(p.sb.read("c.txt").unwrap(), "gamma\n");
    let results = mock.main_requests().last().unwrap().tool_results().len();
    assert_eq!(results, 3, "{}", mock.summary());

    // `journal()` checks every line: whole, JSON, crc.
    let journal = p.journal();
    assert_file_call(&p, "toolu_mock_0_0", "Edit", "a.txt", Some(&a));
    assert_file_call(&p, "toolu_mock_0_1", "Edit", "b.txt", Some(&b));
    assert_file_call(&p, "toolu_mock_0_2", "Write", "c.txt", None);
    let ops: Vec<String> = journal
        .iter()
        .filter(|r| r["id"].as_str().is_some_and(|i| i.starts_with("toolu_mock_0_")))
        .map(|r| format!("{} {}", r["op"].as_str().unwrap(), r["id"].as_str().unwrap()))
        .collect();
    println!("records of the parallel calls, in journal order: {ops:?}");
    assert_eq!(ops.len(), 9, "3 intents + 3 applied + 3 persisted: {ops:?}");
    assert_eq!(p.walj_json(&["recover", "--json"])["unresolved"], 0);
    assert_eq!(p.walj_json(&["status", "--json"])["sessions"], json!({"ended": 1}));
    p.assert_hooks_clean();
}

// ---------------------------------------------------------------------------------------------
// A permission denial.

#[test]
fn denied_tool_calls_become_not_applied_at_stop() {
    let Some(bin) = claude::claude_or_skip("denied_tool_calls_become_not_applied_at_stop") else { return };
    let p = Proj::new(&[("secrets/token.txt", "old-token\n"), ("notes.txt", "draft\n"), ("README.md", "# demo\n")]);
    // The user's own settings first; `walj install` merges its hooks into them.
    p.sb.settings(&json!({"permissions": {"deny": ["Edit(./secrets/**)", "Bash(curl:*)"]}}));
    p.install_walj();
    let settings: Value =
        serde_json::from_str(&p.sb.read(".claude/settings.json").unwrap()).expect("settings.json after install");
    assert_eq!(settings["permissions"]["deny"].as_array().map(Vec::len), Some(2), "install lost the permissions");
    let notes_before = p.hash_object("notes.txt").unwrap();

    let mock = MockServer::start(vec![
        // Denied by a path rule: Claude Code refuses it before any hook runs.
        Turn::tool("Write", json!({"file_path": p.abs("secrets/token.txt"), "content": "new-token\n"})),
        // Not granted (default mode, Write not allowed): PreToolUse runs, then the denial.
        Turn::tool("Write", json!({"file_path": p.abs("notes.txt"), "content": "final\n"})),
        // Denied by the `Bash(curl:*)` rule: PreToolUse runs, then the denial.
        Turn::tool("Bash", json!({"command": "curl -s http://127.0.0.1:9/deploy", "description": "Deploy"})),
        Turn::tool(
            "Edit",
            json!({"file_path": p.abs("README.md"), "old_string": "# demo", "new_string": "# Demo", "replace_all": false}),
        ),
        Turn::text("Done."),
    ]);
    let mut cmd = p.sb.claude(&bin, &mock);
    cmd.env("PATH", &p.path)
        .args(["-p", "Rotate the token, finish the notes, deploy, fix the title", "--output-format", "json"])
        .args(["--permission-mode", "default", "--allowedTools", "Edit Bash"]);
    p.session(cmd, &mock);
    let last = mock.main_requests().last().unwrap().clone();
    let results = last.tool_results();
    assert_eq!(results.len(), 4, "{}", mock.summary());
    for id in ["toolu_mock_0_0", "toolu_mock_1_0", "toolu_mock_2_0"] {
        let r = results.iter().find(|r| r["tool_use_id"] == id).unwrap();
        assert_eq!(r["is_error"], true, "{id} was not denied: {r}");
    }
    assert_eq!(p.sb.read("secrets/token.txt").unwrap(), "old-token\n");
    assert_eq!(p.sb.read("notes.txt").unwrap(), "draft\n");
    assert_eq!(p.sb.read("README.md").unwrap(), "# Demo\n");

    // Refused before the hooks: walj saw nothing, so nothing is left open.
    assert!(p.journal().iter().all(|r| r["id"] != "toolu_mock_0_0"), "{}", p.journal_text());
    // The ungranted Write: an intent, no outcome, then `resolved`/`not_applied` at Stop.
    let intent = p.records("intent", "toolu_mock_1_0");
    assert_eq!(intent.len(), 1, "no intent for the denied Write:\n{}", p.journal_text());
    assert_eq!(intent[0]["before"], notes_before.as_str());
    assert!(p.records("applied", "toolu_mock_1_0").is_empty());
    let resolved = p.records("resolved", "toolu_mock_1_0");
    assert_eq!(resolved.len(), 1, "the denied Write was not settled at Stop:\n{}", p.journal_text());
    assert_eq!(resolved[0]["how"], "not_applied");
    // The denied Bash: its intent is settled the same way.
    assert_eq!(p.records("intent", "toolu_mock_2_0").len(), 1, "{}", p.journal_text());
    let resolved = p.records("resolved", "toolu_mock_2_0");
    assert_eq!(resolved.len(), 1, "the denied Bash was not settled at Stop:\n{}", p.journal_text());
    assert_eq!(resolved[0]["how"], "not_applied");
    // The allowed Edit went through as usual.
    assert_eq!(p.records("persisted", "toolu_mock_3_0").len(), 1, "{}", p.journal_text());

    assert_eq!(p.walj_json(&["recover", "--json"]), json!({"unresolved": 0, "handed_back_waiting": 0, "sessions": []}));
    let log = p.walj_json(&["log", "--json", "--all"]);
    let states: BTreeMap<&str, &str> =
        log.as_array().unwrap().iter().map(|e| (e["path"].as_str().unwrap(), e["status"].as_str().unwrap())).collect();
    assert_eq!(states, BTreeMap::from([("README.md", "persisted"), ("notes.txt", "not_applied")]));
    let fold = p.fold();
    let cmds = &fold.sessions[0].commands;
    assert!(
        cmds.iter().all(|c| c.status != walj::fold::CommandStatus::InFlight),
        "the denied command is still in flight after Stop: {cmds:?}"
    );
    p.assert_hooks_clean();
}

// ---------------------------------------------------------------------------------------------
// walj never changes what Claude Code does.

/// The files of a project (without `.git`, `.walj`, `.claude`), path → content.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if [".git", ".walj", ".claude"].contains(&rel.as_str()) {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A request body with the run's volatile parts replaced: sandbox paths, the session id,
/// `metadata` (holds the session id) and walj's own SessionStart context (none expected here).
fn normalized(body: &Value, sandbox: &str, sid: &str) -> Value {
    // Claude Code's folder name for the project: the path with every non-alphanumeric char
    // replaced by '-'.
    let key: String =
        format!("{sandbox}/project").chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let volatile = [(sandbox.to_string(), "${SANDBOX}"), (key, "${PROJECT_KEY}"), (sid.to_string(), "${SESSION}")];
    fn walk(v: &mut Value, volatile: &[(String, &str)]) {
        match v {
            Value::String(s) => {
                for (from, to) in volatile {
                    if s.contains(from.as_str()) {
                        *s = s.replace(from.as_str(), to);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, volatile)),
            Value::Object(o) => o.values_mut().for_each(|x| walk(x, volatile)),
            _ => {}
        }
    }
    let mut v = body.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("metadata");
    }
    walk(&mut v, &volatile);
    v
}

/// The first difference between two JSON values, as a path and the two sides.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (l, r) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                if let Some(d) = first_difference(l, r, &format!("{at}.{k}")) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (l, r))| first_difference(l, r, &format!("{at}[{i}]")))
        }
        _ if a == b => None,
        _ => Some(format!("{at}:\n  without walj: {a}\n  with walj:    {b}")),
    }
}

/// The scripted session of the comparison: file tools, a failing command, a failing Edit, a
/// Write outside the project, a todo tool, a command.
fn comparison_script(p: &Proj) -> Vec<Turn> {
    let outside = p.sb.tmp.join("outside.txt");
    vec![
        Turn::tool("TaskCreate", json!({"subject": "Tidy up", "description": "several changes"})),
        Turn::tool("Read", json!({"file_path": p.abs("src/main.rs")})),
        Turn::tools([
            (
                "Edit",
                json!({"file_path": p.abs("config/settings.json"), "old_string": "\"retries\": 3", "new_string": "\"retries\": 5", "replace_all": false}),
            ),
            ("Write", json!({"file_path": p.abs("src/server.rs"), "content": "pub fn serve() {}\n"})),
        ]),
        Turn::tool("Bash", json!({"command": "echo checking > check.log; exit 3", "description": "Check"})),
        Turn::tool(
            "Edit",
            json!({"file_path": p.abs("src/main.rs"), "old_string": "no such text", "new_string": "x", "replace_all": false}),
        ),
        Turn::tool("Write", json!({"file_path": outside, "content": "outside the project\n"})),
        Turn::tool("Bash", json!({"command": "ls src > listing.txt; echo done", "description": "List"})),
        Turn::text("Done."),
    ]
}

#[test]
fn walj_never_changes_what_claude_does() {
    let Some(bin) = claude::claude_or_skip("walj_never_changes_what_claude_does") else { return };
    let files = [("config/settings.json", SETTINGS_JSON), ("src/main.rs", MAIN_RS)];
    let run = |with_walj: bool| {
        let p = Proj::new(&files);
        if with_walj {
            p.install_walj();
            // Provocations: walj also runs on events and tools it does not handle.
            let path = p.sb.project.join(".claude/settings.json");
            let mut s: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
            // Each such handler logs walj's exit code.
            let log = claude::sh_quote(p.sb.dir.path().join("extra-hooks.log"));
            let extra = |event: &str| {
                let cmd = format!("walj hook; echo \"{event} $?\" >> {log}");
                json!({"matcher": "", "hooks": [{"type": "command", "command": cmd}]})
            };
            for event in ["Notification", "SubagentStart", "PermissionRequest"] {
                s["hooks"][event] = json!([extra(event)]);
            }
            for event in ["PreToolUse", "PostToolUse"] {
                let mut h = extra(event);
                h["matcher"] = json!("Read|Glob|Grep|ToolSearch");
                s["hooks"][event].as_array_mut().unwrap().push(h);
            }
            fs::write(&path, serde_json::to_string_pretty(&s).unwrap()).unwrap();
        } else {
            // Same git status as with walj (an untracked .claude/).
            p.sb.settings(&json!({}));
        }
        let mock = MockServer::start(comparison_script(&p));
        let (out, sid) = p.session(p.claude_p(&bin, &mock, "Tidy up"), &mock);
        let outside = fs::read_to_string(p.sb.tmp.join("outside.txt")).ok();
        (p, mock, out, sid, outside)
    };
    let (plain, plain_mock, plain_out, plain_sid, plain_outside) = run(false);
    let (walj, walj_mock, walj_out, walj_sid, walj_outside) = run(true);

    // The same files.
    let (t0, t1) = (tree(plain.root()), tree(walj.root()));
    let names = |t: &BTreeMap<String, Vec<u8>>| t.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&t0), names(&t1));
    assert_eq!(t0, t1, "the project files differ with walj");
    assert_eq!(plain_outside.as_deref(), Some("outside the project\n"));
    assert_eq!(plain_outside, walj_outside);
    assert_eq!(plain_out.json()["result"], walj_out.json()["result"]);
    assert_eq!(plain_out.json()["is_error"], walj_out.json()["is_error"]);

    // The same requests to the model, modulo volatile fields.
    let norm = |m: &MockServer, p: &Proj, sid: &str| -> Vec<Value> {
        let sandbox = p.sb.dir.path().canonicalize().unwrap().to_string_lossy().into_owned();
        m.main_requests().iter().map(|r| normalized(&r.body, &sandbox, sid)).collect()
    };
    let (r0, r1) = (norm(&plain_mock, &plain, &plain_sid), norm(&walj_mock, &walj, &walj_sid));
    assert_eq!(r0.len(), r1.len(), "a different number of model requests with walj");
    for (i, (a, b)) in r0.iter().zip(&r1).enumerate() {
        if let Some(d) = first_difference(a, b, &format!("request[{i}]")) {
            panic!("the model saw something different with walj: {d}");
        }
    }

    // walj recorded what it could, logged no error, and the tool errors are where they belong.
    walj.assert_hooks_clean();
    // walj ran for the tool it does not journal (Read), and exited 0 every time.
    let extra = fs::read_to_string(walj.sb.dir.path().join("extra-hooks.log")).unwrap_or_default();
    println!("extra handlers (event, walj's exit code): {extra:?}");
    for event in ["PreToolUse", "PostToolUse"] {
        assert!(extra.lines().any(|l| l.starts_with(event)), "walj never ran for {event} Read: {extra:?}");
    }
    assert!(extra.lines().all(|l| l.ends_with(" 0")), "walj exited non-zero: {extra:?}");
    assert_eq!(r0.len(), 8, "one request per scripted turn");
    let journal = walj.journal();
    let ops: Vec<String> = journal
        .iter()
        .filter(|r| r["id"].as_str().is_some_and(|i| i.starts_with("toolu_")))
        .map(|r| format!("{} {}", r["op"].as_str().unwrap(), r["id"].as_str().unwrap()))
        .collect();
    println!("walj's records of the tool calls: {ops:?}");
    let failed = walj.records("failed", "toolu_mock_3_0");
    assert_eq!(failed.len(), 1, "the failing Bash has no `failed` record:\n{}", walj.journal_text());
    assert!(failed[0]["error"].as_str().unwrap_or("").contains('3'), "{}", failed[0]);
    let outside = walj.records("intent", "toolu_mock_5_0");
    assert_eq!(outside.len(), 1, "{}", walj.journal_text());
    assert_eq!(outside[0]["outside"], true);
    assert_eq!(walj.walj_json(&["recover", "--json"])["unresolved"], 0, "{}", walj.journal_text());
    assert_eq!(walj.walj_json(&["status", "--json"])["sessions"], json!({"ended": 1}));
}

// ---------------------------------------------------------------------------------------------
// A Bash command cut off by a crash: its changes so far are in-flight children.

/// Runs `cmd` (a `claude -p`) until its Bash call `tool_id` runs (a process holds `token` and
/// the project file `ready` exists) and reached the transcript, then kills claude (-9).
/// Returns the session id.
pub(crate) fn kill_mid_bash(
    p: &Proj,
    cmd: Command,
    mock: &MockServer,
    tool_id: &str,
    token: &str,
    ready: &str,
) -> String {
    let running = claude::spawn(cmd);
    let pid = running.pid();
    let sid = claude::bash_running(&p.sb, pid, (tool_id, token, ready), SESSION_TIMEOUT, || {
        p.wait_for_record(Duration::ZERO, |r| r["op"] == "intent" && r["id"] == tool_id)
            .and_then(|r| r["session"].as_str().map(str::to_string))
    });
    let mut running = running;
    running.kill9();
    let out = running.wait(Duration::from_secs(10));
    assert!(
        sid.is_some(),
        "the Bash command never started: {out:?}\n{}\njournal:\n{}",
        mock.summary(),
        p.journal_text()
    );
    sid.unwrap()
}

/// Processes working inside `root` (a killed command's orphans: the shell holding the token,
/// and its children such as `sleep`, which do not).
pub(crate) fn pids_in(root: &Path) -> Vec<u32> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c.starts_with(&root)))
        .filter(|&pid| pid != std::process::id())
        .collect()
}

/// Waits until no process holds `token` nor works inside `root` (after the guard killed the
/// token's holders; a child reparented before the guard saw it is killed here).
pub(crate) fn wait_gone(token: &str, root: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<u32> = claude::pids_mentioning(token).into_iter().chain(pids_in(root)).collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "orphans left behind: {left:?}");
        claude::kill9_pids(&left);
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `recover --json` entries of session `sid` as (path, entry).
pub(crate) fn entries_of(recover: &Value, sid: &str) -> BTreeMap<String, Value> {
    recover["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["session"] == sid)
        .flat_map(|s| s["entries"].as_array().unwrap().clone())
        .map(|e| (e["path"].as_str().unwrap().to_string(), e))
        .collect()
}

#[test]
fn a_bash_command_killed_mid_run_shows_what_it_changed_and_reverts() {
    let test = "a_bash_command_killed_mid_run_shows_what_it_changed_and_reverts";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("a.txt", "value = old\n"), ("old.txt", "legacy\n"), ("keep.txt", "untouched\n")]);
    p.install_walj();
    let token = claude::unique_token("walj-e2e-migrate");
    let guard = OrphanGuard(token.clone());
    let command = format!("sed -i 's/old/new/' a.txt && rm old.txt && echo new > new.txt && sleep 60 # {token}");
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": command, "description": "Migrate"})),
        Turn::text("unreachable"),
    ]);
    let sid =
        kill_mid_bash(&p, p.claude_p(&bin, &mock, "Migrate the config"), &mock, "toolu_mock_0_0", &token, "new.txt");
    std::thread::sleep(Duration::from_millis(300));

    // While its orphan (the sleep) runs: shown as in-flight children, computed on read.
    let recover = p.walj_json(&["recover", "--json"]);
    let es = entries_of(&recover, &sid);
    assert_eq!(es.keys().collect::<Vec<_>>(), ["a.txt", "new.txt", "old.txt"], "{recover}");
    for (path, e) in &es {
        assert_eq!(e["status"], "in_flight", "{path}: {e}");
        assert_eq!(e["tool"], "Bash", "{path}: {e}");
        assert_eq!(e["parent"], "toolu_mock_0_0", "{path}: {e}");
        assert_eq!(e["unfinished"], true, "{path}: {e}");
        assert_eq!(e["still_running"], true, "{path}: {e}");
        assert!(e.get("attribution").is_none(), "{path}: {e}");
    }
    assert_eq!(es["old.txt"]["after"], "absent");
    assert_eq!(es["new.txt"]["before"], "absent");
    assert_eq!(es["a.txt"]["after"], json!(p.hash_object("a.txt")));
    let cut = &recover["sessions"][0]["commands_in_flight"][0];
    assert_eq!((cut["id"].as_str(), cut["command"].as_str()), (Some("toolu_mock_0_0"), Some(command.as_str())));
    let (_, text, _) = p.walj(&["recover"]);
    println!("walj recover (orphan running):\n{text}");
    assert!(text.contains("still running (") && text.contains("3 changes so far"), "{text}");
    let (_, log, _) = p.walj(&["log", "--all"]);
    for path in ["a.txt", "old.txt", "new.txt"] {
        assert!(log.contains(path), "walj log --all lacks {path}:\n{log}");
    }
    // Diffable now; not revertable while it may still change.
    let a_id = es["a.txt"]["id"].as_str().unwrap().to_string();
    let (ok, diff, err) = p.walj(&["diff", &a_id]);
    assert!(ok && diff.contains("-value = old") && diff.contains("+value = new"), "{diff}{err}");
    let (ok, _, err) = p.walj(&["revert", &a_id]);
    assert!(!ok && err.contains("still runs"), "revert while the command runs: {err}");
    assert!(p.journal().iter().all(|r| r["parent"] != "toolu_mock_0_0"), "recorded while it runs");

    // The orphan stops: the next reader records the children once.
    drop(guard);
    wait_gone(&token, p.root());
    let recover = p.walj_json(&["recover", "--json"]);
    let es = entries_of(&recover, &sid);
    assert_eq!(es.len(), 3, "{recover}");
    assert!(es.values().all(|e| e.get("still_running").is_none()), "{recover}");
    let children: Vec<Value> = p.journal().into_iter().filter(|r| r["parent"] == "toolu_mock_0_0").collect();
    assert_eq!(children.len(), 3, "{}", p.journal_text());
    assert!(children.iter().all(|r| r["op"] == "applied" && r["unfinished"] == true), "{children:?}");
    let (_, text, _) = p.walj(&["recover"]);
    assert!(text.contains("3 changes since it started"), "{text}");

    // Revertable like any entry: the deleted file comes back, the created one goes.
    let old_id = es["old.txt"]["id"].as_str().unwrap();
    let new_id = es["new.txt"]["id"].as_str().unwrap();
    let (ok, out, err) = p.walj(&["revert", old_id, new_id, &a_id]);
    assert!(ok, "walj revert: {out}{err}");
    assert_eq!(p.sb.read("old.txt").as_deref(), Some("legacy\n"));
    assert_eq!(p.sb.read("a.txt").as_deref(), Some("value = old\n"));
    assert!(!p.sb.project.join("new.txt").exists());
    assert_eq!(p.sb.read("keep.txt").as_deref(), Some("untouched\n"));
    assert_eq!(p.walj_json(&["recover", "--json"])["unresolved"], 0);
    p.assert_hooks_clean();
}

/// Outside git (a docs folder, the first proposal's own case): a Bash command killed -9 with
/// its Claude Code. The watcher outside git observes Claude Code's process only (no folder
/// watched), so the command's changes, made while Claude Code lived, are the command's:
/// `revert --session` restores them all without `--force`.
#[test]
fn outside_git_a_killed_commands_changes_are_reverted_by_revert_session() {
    let test = "outside_git_a_killed_commands_changes_are_reverted_by_revert_session";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("guide.md", "status: draft\n"), ("old.md", "legacy\n"), ("keep.md", "untouched\n")]);
    fs::remove_dir_all(p.root().join(".git")).unwrap();
    p.install_walj();
    let token = claude::unique_token("walj-e2e-nogit");
    let guard = OrphanGuard(token.clone());
    let command = format!("sed -i 's/draft/final/' guide.md && rm old.md && echo new > new.md && sleep 60 # {token}");
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": command, "description": "Publish"})),
        Turn::text("unreachable"),
    ]);
    let sid =
        kill_mid_bash(&p, p.claude_p(&bin, &mock, "Publish the guide"), &mock, "toolu_mock_0_0", &token, "new.md");
    drop(guard);
    wait_gone(&token, p.root());
    let recover = p.walj_json(&["recover", "--json"]);
    let es = entries_of(&recover, &sid);
    assert_eq!(es.keys().collect::<Vec<_>>(), ["guide.md", "new.md", "old.md"], "{recover}");
    for (path, e) in &es {
        assert!(e.get("attribution").is_none(), "made while Claude Code lived: {path}: {e}");
    }
    let (ok, out, err) = p.walj(&["revert", "--session", &sid, "--yes"]);
    assert!(ok, "walj revert --session: {out}{err}");
    assert_eq!(p.sb.read("guide.md").as_deref(), Some("status: draft\n"), "{out}{err}");
    assert_eq!(p.sb.read("old.md").as_deref(), Some("legacy\n"), "{out}{err}");
    assert!(!p.root().join("new.md").exists(), "{out}{err}");
    assert_eq!(p.sb.read("keep.md").as_deref(), Some("untouched\n"));
    assert_eq!(p.walj_json(&["recover", "--json"])["unresolved"], 0);
}

/// A session whose hooks never fired (here: run with walj's settings moved aside, as in an
/// editor that runs no hooks) is known only from its transcript. The next session's
/// SessionStart imports it: its Write is in `walj log`, marked imported.
#[test]
fn a_session_run_without_walj_hooks_is_in_walj_log_after_the_next_session_starts() {
    let test = "a_session_run_without_walj_hooks_is_in_walj_log_after_the_next_session_starts";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("notes.md", "draft\n")]);
    p.install_walj();
    // A first session with walj's hooks: the journal begins.
    let mock = MockServer::start(vec![Turn::text("Hello.")]);
    p.session(p.claude_p(&bin, &mock, "Hi"), &mock);
    // A session without them: every settings file holding walj's hooks moved aside.
    let aside: Vec<(PathBuf, PathBuf)> = ["settings.json", "settings.local.json"]
        .iter()
        .map(|f| p.root().join(".claude").join(f))
        .filter(|f| f.exists())
        .map(|f| (f.clone(), f.with_extension("aside")))
        .collect();
    for (f, a) in &aside {
        fs::rename(f, a).unwrap();
    }
    let mock = MockServer::start(vec![
        Turn::tool("Write", json!({"file_path": p.abs("made.md"), "content": "made without hooks\n"})),
        Turn::text("Done."),
    ]);
    let out = claude::run(p.claude_p(&bin, &mock, "Write made.md"), SESSION_TIMEOUT);
    assert!(out.status.success(), "claude failed: {}\n{}", out.stdout, out.stderr);
    let hookless = out.json()["session_id"].as_str().expect("session_id").to_string();
    for (f, a) in &aside {
        fs::rename(a, f).unwrap();
    }
    assert_eq!(p.sb.read("made.md").as_deref(), Some("made without hooks\n"));
    assert!(!p.journal_text().contains(&hookless), "walj's hooks ran in the hookless session");
    // The next session starts with walj's hooks: the hookless one is imported.
    let mock = MockServer::start(vec![Turn::text("Hello again.")]);
    p.session(p.claude_p(&bin, &mock, "Hi again"), &mock);
    let log = p.walj_json(&["log", "--all", "--json"]);
    let text = log.to_string();
    assert!(text.contains("made.md") && text.contains(&hookless[..6]), "{log:#}");
    let rec = p
        .journal()
        .into_iter()
        .find(|r| r["session"] == hookless.as_str() && r["path"] == "made.md" && r["op"] == "applied")
        .unwrap_or_else(|| panic!("no applied made.md of {hookless}:\n{}", p.journal_text()));
    assert_eq!(rec["imported"], json!(true), "{rec}");
    // Once: the session after that imports nothing more.
    let n = p.journal().iter().filter(|r| r["session"] == hookless.as_str()).count();
    let mock = MockServer::start(vec![Turn::text("Hello once more.")]);
    p.session(p.claude_p(&bin, &mock, "Hi once more"), &mock);
    assert_eq!(p.journal().iter().filter(|r| r["session"] == hookless.as_str()).count(), n);
    p.assert_hooks_clean();
}

/// Claude Code 2.1.332's own list of the files a Bash command changed
/// (`bashEditDiff.changedFiles`, on with `bashEditDiffEnabled`) is a second witness: with walj's
/// snapshot off (`[bash] snapshot = false`, so walj itself records no file of the command),
/// every file the list names is an entry of the command, marked reported by Claude Code, holding
/// the file as it is after the command.
#[test]
fn claude_codes_changed_files_give_entries_walj_did_not_record() {
    let test = "claude_codes_changed_files_give_entries_walj_did_not_record";
    let Some(bin) = claude::claude_at_least(test, "2.1.332") else { return };
    let p = Proj::new(&[("a.txt", "a\n")]);
    p.install_walj();
    fs::write(p.root().join(".walj/config.toml"), "[bash]\nsnapshot = false\n").unwrap();
    let user = p.sb.home.join(".claude/settings.json");
    fs::create_dir_all(user.parent().unwrap()).unwrap();
    fs::write(&user, r#"{"bashEditDiffEnabled": true}"#).unwrap();
    let command = "sed -i s/a/A/ a.txt && echo n > new.txt";
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": command, "description": "Edit"})),
        Turn::text("Done."),
    ]);
    p.session(p.claude_p(&bin, &mock, "Edit"), &mock);
    let outcome = p
        .records("applied", "toolu_mock_0_0")
        .into_iter()
        .find(|r| r["parent"].is_null())
        .unwrap_or_else(|| panic!("no outcome:\n{}", p.journal_text()));
    let note = outcome.get("reported").unwrap_or_else(|| panic!("Claude Code sent no list: {outcome}"));
    let kids: Vec<Value> = p.journal().into_iter().filter(|r| r["parent"] == "toolu_mock_0_0").collect();
    let a = kids.iter().find(|r| r["path"] == "a.txt").unwrap_or_else(|| panic!("{note} {kids:#?}"));
    assert_eq!(a["reported"], "claude_code", "{a}");
    assert!(a["nocap"].as_str().is_some_and(|n| n.starts_with("reported_only")), "{a}");
    assert_eq!(a["after"].as_str(), p.hash_object("a.txt").as_deref(), "{a}");
    // An untracked new file is on the list (2.1.332 lists files under its working folder only:
    // a file the command wrote outside it is not named).
    assert_eq!(note["listed"], json!(2), "{note}");
    assert!(kids.iter().any(|r| r["path"] == "new.txt" && r["reported"] == "claude_code"), "{note} {kids:#?}");
    p.assert_hooks_clean();
}

/// The link at `rel` in `p`, read (never followed); `None` when nothing is there.
fn link_at(p: &Proj, rel: &str) -> Option<String> {
    let path = p.root().join(rel);
    fs::symlink_metadata(&path).ok()?;
    Some(fs::read_link(&path).unwrap().to_string_lossy().into_owned())
}

/// A real Bash call that makes, retargets and removes links (and a dangling one), killed -9
/// mid-run: recover lists each as a `symlink` entry with its targets, `revert --session`
/// re-points them, `undo` puts the command's links back.
#[test]
fn a_bash_command_making_links_killed_mid_run_gets_symlink_entries_and_revert_re_points() {
    let test = "a_bash_command_making_links_killed_mid_run_gets_symlink_entries_and_revert_re_points";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    std::os::unix::fs::symlink("a.txt", p.root().join("l2")).unwrap();
    std::os::unix::fs::symlink("a.txt", p.root().join("l3")).unwrap();
    p.git(&["add", "-A"]);
    p.git(&["commit", "-q", "-m", "links"]);
    p.install_walj();
    let token = claude::unique_token("walj-e2e-links");
    let guard = OrphanGuard(token.clone());
    let command = format!("ln -sfn b.txt l2 && rm l3 && ln -s gone.txt dang && ln -s a.txt l1 && sleep 60 # {token}");
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": command, "description": "Links"})),
        Turn::text("unreachable"),
    ]);
    let sid = kill_mid_bash(&p, p.claude_p(&bin, &mock, "Relink"), &mock, "toolu_mock_0_0", &token, "l1");
    drop(guard);
    wait_gone(&token, p.root());
    let recover = p.walj_json(&["recover", "--json"]);
    let es = entries_of(&recover, &sid);
    assert_eq!(es.keys().collect::<Vec<_>>(), ["dang", "l1", "l2", "l3"], "{recover}");
    for (path, e) in &es {
        assert_eq!(e["kind"], "symlink", "{path}: {e}");
        assert_eq!(e["parent"], "toolu_mock_0_0", "{path}: {e}");
        assert!(e.get("attribution").is_none(), "made while Claude Code lived: {path}: {e}");
    }
    let sides = |p: &str| (es[p]["link_before"].as_str(), es[p]["link_after"].as_str());
    assert_eq!(sides("l1"), (None, Some("a.txt")));
    assert_eq!(sides("l2"), (Some("a.txt"), Some("b.txt")));
    assert_eq!(sides("l3"), (Some("a.txt"), None));
    assert_eq!(sides("dang"), (None, Some("gone.txt")));
    let (_, text, _) = p.walj(&["recover"]);
    println!("walj recover:\n{text}");
    assert!(text.contains("l2 -> b.txt") && text.contains("4 changes since it started"), "{text}");

    let (ok, out, err) = p.walj(&["revert", "--session", &sid]);
    assert!(ok, "walj revert --session: {out}{err}");
    assert_eq!(link_at(&p, "l1"), None);
    assert_eq!(link_at(&p, "l2").as_deref(), Some("a.txt"));
    assert_eq!(link_at(&p, "l3").as_deref(), Some("a.txt"));
    assert_eq!(link_at(&p, "dang"), None);
    assert_eq!(p.git(&["status", "--porcelain", "--", "l1", "l2", "l3", "dang"]), "", "the links are as committed");
    assert_eq!(p.walj_json(&["recover", "--json"])["unresolved"], 0);
    let (ok, out, err) = p.walj(&["undo"]);
    assert!(ok, "walj undo: {out}{err}");
    assert_eq!(link_at(&p, "l2").as_deref(), Some("b.txt"));
    assert_eq!(link_at(&p, "l3"), None);
    assert_eq!(link_at(&p, "l1").as_deref(), Some("a.txt"));
    assert_eq!(link_at(&p, "dang").as_deref(), Some("gone.txt"));
    p.assert_hooks_clean();
}

/// Starts session A (`claude -p "Build A"` against `mock_a`) and returns once its command has
/// made `ready` (and a moment more, so what comes next is later).
fn start_until(p: &Proj, bin: &Path, mock_a: &MockServer, ready: &str) -> claude::Running {
    let running = claude::spawn(p.claude_p(bin, mock_a, "Build A"));
    let deadline = Instant::now() + SESSION_TIMEOUT;
    while !p.sb.project.join(ready).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(p.sb.project.join(ready).exists(), "{}", mock_a.summary());
    std::thread::sleep(Duration::from_millis(50));
    running
}

/// Session B, while session A's command runs: a Write of b.txt and an Edit of shared.txt,
/// journaled. Returns B's session id. (A second script generation: B's tool ids differ from
/// A's, as real ids do.)
fn session_b_writes(p: &Proj, bin: &Path) -> String {
    let mock_b = MockServer::start(vec![]);
    mock_b.script(vec![
        Turn::tools([
            ("Write", json!({"file_path": p.abs("b.txt"), "content": "from B\n"})),
            (
                "Edit",
                json!({"file_path": p.abs("shared.txt"), "old_string": "one", "new_string": "two", "replace_all": false}),
            ),
        ]),
        Turn::text("B done."),
    ]);
    p.session(p.claude_p(bin, &mock_b, "Write B"), &mock_b).1
}

#[test]
fn another_sessions_writes_are_never_a_killed_commands() {
    let test = "another_sessions_writes_are_never_a_killed_commands";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("shared.txt", "one\n")]);
    p.install_walj();
    let token = claude::unique_token("walj-e2e-two");
    let guard = OrphanGuard(token.clone());
    // Session A: a command that writes a.out, then runs on.
    let mock_a = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": format!("echo a > a.out && sleep 60 # {token}")})),
        Turn::text("unreachable"),
    ]);
    let running_a = start_until(&p, &bin, &mock_a, "a.out");
    let sid_b = session_b_writes(&p, &bin);
    // And the user's editor, while both ran (nothing journals it).
    fs::write(p.sb.project.join("notes.txt"), "the user's\n").unwrap();
    // Now A dies (its command was running all along).
    let sid_a = p
        .wait_for_record(Duration::ZERO, |r| r["op"] == "intent" && r["tool"] == "Bash")
        .and_then(|r| r["session"].as_str().map(str::to_string))
        .unwrap();
    let mut running_a = running_a;
    running_a.kill9();
    let _ = running_a.wait(Duration::from_secs(10));
    drop(guard);
    wait_gone(&token, p.root());

    let recover = p.walj_json(&["recover", "--json"]);
    println!("{}", serde_json::to_string_pretty(&recover).unwrap());
    let a = entries_of(&recover, &sid_a);
    // B's journaled writes are B's, never the killed command's.
    assert!(!a.contains_key("b.txt") && !a.contains_key("shared.txt"), "{recover}");
    // a.out was written before B started: the command's, certain. notes.txt: nothing explains
    // it and B was active: the command's, but flagged.
    assert_eq!(a.keys().collect::<Vec<_>>(), ["a.out", "notes.txt"], "{recover}");
    assert!(a["a.out"].get("attribution").is_none(), "{recover}");
    assert_eq!(a["notes.txt"]["attribution"], "uncertain", "{recover}");
    assert!(entries_of(&recover, &sid_b).is_empty(), "{recover}");
    let (_, text, _) = p.walj(&["recover"]);
    assert!(text.contains("may not be this command's"), "{text}");
    // Reverting the uncertain one asks first (CLI: --force).
    let id = a["notes.txt"]["id"].as_str().unwrap();
    let (ok, _, err) = p.walj(&["revert", id]);
    assert!(!ok && err.contains("may not be from its command"), "{err}");
    assert_eq!(p.sb.read("notes.txt").as_deref(), Some("the user's\n"));
    p.assert_hooks_clean();
}

#[test]
fn another_sessions_writes_are_never_a_finished_commands() {
    let test = "another_sessions_writes_are_never_a_finished_commands";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("shared.txt", "one\n")]);
    p.install_walj();
    // Session A: a command that writes a.out, waits for session B's writes, then ends normally.
    let go = p.sb.project.join("b.done");
    let mock_a = MockServer::start(vec![
        Turn::tool(
            "Bash",
            json!({"command": "echo a > a.out && for i in $(seq 300); do [ -e b.done ] && break; sleep 0.1; done; rm -f b.done"}),
        ),
        Turn::text("A done."),
    ]);
    let running_a = start_until(&p, &bin, &mock_a, "a.out");
    let sid_b = session_b_writes(&p, &bin);
    fs::write(&go, "").unwrap();
    let out_a = running_a.wait(SESSION_TIMEOUT);
    assert!(!out_a.timed_out && out_a.status.success(), "session A: {}", out_a.stderr);
    let post = p.wait_for_record(HOOK_GRACE, |r| r["op"] == "applied" && r["tool"] == "Bash" && r["path"] == "");
    let cmd = post.expect("A's command has its outcome")["id"].as_str().unwrap().to_string();
    let children: BTreeMap<String, Value> = p
        .journal()
        .into_iter()
        .filter(|r| r["parent"] == cmd.as_str())
        .map(|r| (r["path"].as_str().unwrap().to_string(), r))
        .collect();
    // a.out is A's, certain: nothing else ran when it was written. B's Write and Edit are B's.
    assert!(!children.contains_key("b.txt") && !children.contains_key("shared.txt"), "{children:?}");
    assert!(children["a.out"].get("attribution").is_none(), "{children:?}");
    let log = p.walj_json(&["log", "--json", "--all"]);
    let on = |path: &str| log.as_array().unwrap().iter().filter(|e| e["path"] == path).count();
    assert_eq!((on("b.txt"), on("shared.txt")), (1, 1), "each of B's changes is one entry: {log}");
    assert!(
        log.as_array().unwrap().iter().filter(|e| e["path"] == "b.txt").all(|e| e["session"] == sid_b.as_str()),
        "{log}"
    );
    p.assert_hooks_clean();
}

// ---------------------------------------------------------------------------------------------
// A file tool call in flight: the report says whether it wrote.

#[test]
fn a_write_killed_before_it_ran_is_reported_as_not_applied() {
    let test = "a_write_killed_before_it_ran_is_reported_as_not_applied";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("config/settings.json", SETTINGS_JSON)]);
    p.install_walj();
    // A second PreToolUse hook for Write that holds Claude Code there (as a slow hook would)
    // while the test kills it.
    let token = claude::unique_token("walj-e2e-hold");
    let _guard = OrphanGuard(token.clone());
    let hold = json!({"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": format!("cat > /dev/null; sleep 30 # {token}"), "timeout": 60}
    ]}]}});
    p.sb.write(".claude/settings.local.json", &hold.to_string());
    let mock = MockServer::start(vec![
        Turn::tool(
            "Edit",
            json!({"file_path": p.abs("config/settings.json"), "old_string": "\"retries\": 3",
                   "new_string": "\"retries\": 5", "replace_all": false}),
        ),
        Turn::tool("Write", json!({"file_path": p.abs("src/server.rs"), "content": "pub fn serve() {}\n"})),
        Turn::text("unreachable"),
    ]);
    let mut running = claude::spawn(p.claude_p(&bin, &mock, "Raise retries and add a server"));
    let intent = p.wait_for_record(SESSION_TIMEOUT, |r| r["op"] == "intent" && r["id"] == "toolu_mock_1_0");
    let held = Instant::now() + Duration::from_secs(20);
    while claude::pids_mentioning(&token).is_empty() && Instant::now() < held {
        std::thread::sleep(Duration::from_millis(10));
    }
    running.kill9();
    let _ = running.wait(Duration::from_secs(10));
    let intent = intent.unwrap_or_else(|| panic!("no intent for the Write:\n{}", p.journal_text()));
    assert_eq!(intent["intended"], walj::store::blob_id(b"pub fn serve() {}\n"), "{intent}");
    assert!(!p.sb.project.join("src/server.rs").exists(), "the Write ran");

    let recover = p.walj_json(&["recover", "--json"]);
    let es: BTreeMap<String, Value> = entries_of(&recover, intent["session"].as_str().unwrap());
    assert_eq!(es["src/server.rs"]["status"], "in_flight", "{recover}");
    assert_eq!(es["src/server.rs"]["disk"], "unchanged", "{recover}");
    assert!(es["config/settings.json"].get("disk").is_none(), "{recover}");
    let (_, text, _) = p.walj(&["recover"]);
    assert!(text.contains("not applied: the file is unchanged"), "{text}");
    p.assert_hooks_clean();
}

/// Issue 14, one sync per hook, with the real CLI: the hook syncs only the journal, and a new
/// image rides in the line that names it. A machine crash loses what was not synced: here the
/// whole store goes (worse than a crash can do). After the kill -9 mid-Bash, the Edit's
/// pre-image is still shown (from its line, never "lost") and `walj revert` puts it back.
#[test]
fn after_a_crash_that_lost_the_store_the_lines_still_hold_the_images() {
    let Some(bin) = claude::claude_or_skip("after_a_crash_that_lost_the_store_the_lines_still_hold_the_images") else {
        return;
    };
    let c = crash_mid_bash(&bin);
    let p = &c.p;
    std::thread::sleep(Duration::from_millis(300));
    let journal = p.journal_text();
    assert!(journal.contains("\"images\":{"), "new images ride in their lines:\n{journal}");
    std::fs::remove_dir_all(p.root().join(".walj/store")).unwrap();
    let (ok, diff, err) = p.walj(&["diff", "toolu_mock_0_0"]);
    assert!(ok && diff.contains("-  \"retries\": 3") && diff.contains("+  \"retries\": 5"), "{diff}{err}");
    assert!(!diff.contains("lost"), "{diff}");
    let (ok, out, err) = p.walj(&["revert", "toolu_mock_0_0", "toolu_mock_1_0"]);
    assert!(ok, "walj revert: {out}{err}");
    assert_eq!(p.sb.read("config/settings.json").as_deref(), Some(SETTINGS_JSON));
    assert!(!p.sb.project.join("src/server.rs").exists());
    // What the revert overwrote is kept: undo brings the session's work back.
    let (ok, out, err) = p.walj(&["undo"]);
    assert!(ok, "walj undo: {out}{err}");
    assert_eq!(p.sb.read("config/settings.json").as_deref(), Some("{\n  \"retries\": 5\n}\n"));
    assert_eq!(p.sb.read("src/server.rs").as_deref(), Some("pub fn serve() {}\n"));
}

/// `walj bisect` on a real session (issue 32): the model's second call breaks the project's
/// test; bisect names that call, and `walj revert` of it alone fixes the test and keeps the
/// later ones (a Bash `sed -i` on the same file, a Write).
#[test]
fn bisect_names_the_call_that_broke_the_test() {
    let Some(bin) = claude::claude_or_skip("bisect_names_the_call_that_broke_the_test") else { return };
    let p = Proj::new(&[
        ("lib.txt", "answer=42\none\ntwo\nthree\nfour\nother=1\n"),
        ("test.sh", "grep -qx answer=42 lib.txt\n"),
        ("notes.md", "draft\n"),
    ]);
    p.install_walj();
    let mock = MockServer::start(vec![
        Turn::tool(
            "Edit",
            json!({"file_path": p.abs("notes.md"), "old_string": "draft", "new_string": "final", "replace_all": false}),
        ),
        Turn::tool(
            "Edit",
            json!({"file_path": p.abs("lib.txt"), "old_string": "answer=42", "new_string": "answer=41", "replace_all": false}),
        ),
        Turn::tool("Bash", json!({"command": "sed -i s/other=1/other=2/ lib.txt", "description": "Bump other"})),
        Turn::tool("Write", json!({"file_path": p.abs("new.txt"), "content": "new\n"})),
        Turn::text("Done."),
    ]);
    let (out, _) = p.session(p.claude_p(&bin, &mock, "Tidy the notes and the numbers"), &mock);
    assert_eq!(out.json()["result"], "Done.", "{out:?}");
    let test = |p: &Proj| Command::new("sh").arg("test.sh").current_dir(p.root()).status().unwrap().success();
    assert!(!test(&p));
    let (ok, text, err) = p.walj(&["bisect", "--json", "--", "sh", "test.sh"]);
    assert!(ok, "walj bisect failed: {text}\n{err}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["steps"].as_array().unwrap().len(), 4, "{v:#}");
    assert_eq!(v["culprit"]["id"], "toolu_mock_1_0", "{v:#}");
    assert_eq!(v["culprit"]["prompt"], "Tidy the notes and the numbers", "{v:#}");
    assert_eq!(v["culprit"]["conflicts"], json!([]), "{v:#}");
    let (ok, _, err) = p.walj(&["revert", "toolu_mock_1_0"]);
    assert!(ok, "{err}");
    assert!(test(&p));
    assert_eq!(p.sb.read("lib.txt").unwrap(), "answer=42\none\ntwo\nthree\nfour\nother=2\n");
    assert_eq!(p.sb.read("new.txt").as_deref(), Some("new\n"));
    p.assert_hooks_clean();
}
