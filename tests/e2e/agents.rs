//! End to end with the real Codex CLI (0.171.0), Gemini CLI (0.61.0) and Copilot CLI (1.0.102),
//! offline against the stand-ins of `tests/support/agent_mock.rs`. walj is installed the way a
//! user does it (`walj install --agent NAME`: for Codex that includes the hooks' trust, and
//! Codex runs here without `--dangerously-bypass-hook-trust`); the real tools change real files
//! and the real hooks run `walj hook --agent NAME`.
//!
//! Each test prints `SKIPPED: …` and returns when its CLI cannot be installed
//! (`scripts/agent-cli.sh`); under `WALJ_E2E_REQUIRE=1` that is a failure.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::time::{Duration, Instant};

use crate::support::agent_mock::{AgentMock, Turn};
use crate::support::agents::{AgentBox, Cli};
use crate::support::claude::{self as run, Output};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(180);

fn walj_bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

/// A sandbox for `cli` with walj installed for it, or `None` (skipped).
fn setup(cli: Cli, test: &str, script: Vec<Turn>) -> Option<(AgentBox, AgentMock)> {
    let bin = crate::support::agents::cli_or_skip(cli, test)?;
    let b = AgentBox::new(cli, bin, &walj_bin());
    let mock = AgentMock::start(cli.protocol(), script);
    b.configure(&mock);
    let out = b.walj_ok(&["install", "--agent", cli.name()]);
    assert!(out.contains("Installed `walj hook --agent"), "{out}");
    Some((b, mock))
}

fn run_session(b: &AgentBox, mock: &AgentMock, prompt: &str) -> Output {
    b.assert_ran(run::run(b.command(mock, prompt), TIMEOUT), mock)
}

/// A file tool's records of `path` with `op` (not a command's side effects).
fn file_records<'a>(j: &'a [Value], op: &str, path: &str) -> Vec<&'a Value> {
    j.iter().filter(|r| r["op"] == op && r["path"] == path && r.get("parent").is_none()).collect()
}

fn children<'a>(j: &'a [Value], path: &str) -> Vec<&'a Value> {
    j.iter().filter(|r| r["op"] == "applied" && r["path"] == path && r.get("parent").is_some()).collect()
}

fn commands<'a>(j: &'a [Value], op: &str) -> Vec<&'a Value> {
    j.iter().filter(|r| r["op"] == op && r["tool"] == "Bash" && r["path"] == "").collect()
}

fn blob(s: &str) -> Value {
    json!(walj::store::blob_id(s.as_bytes()))
}

/// One file tool call on `path`: one intent and one outcome with the same id, the images
/// (`before` → `after`, `None` = absent) named and stored, persisted at Stop.
fn check_file(b: &AgentBox, j: &[Value], path: &str, before: Option<&str>, after: Option<&str>) -> String {
    let i = file_records(j, "intent", path);
    let a = file_records(j, "applied", path);
    assert_eq!((i.len(), a.len()), (1, 1), "{path}: one intent and one outcome:\n{j:#?}");
    assert_eq!(i[0]["id"], a[0]["id"], "{path}: paired");
    assert_eq!(i[0]["before"], before.map(blob).unwrap_or(Value::Null), "{path}: before");
    assert_eq!(a[0]["after"], after.map(blob).unwrap_or(Value::Null), "{path}: after");
    for img in [before, after].into_iter().flatten() {
        // In the store, or carried by a journal line.
        let id = walj::store::blob_id(img.as_bytes());
        let got = walj::store::Store::new(b.root().join(".walj/store")).get(&id);
        assert_eq!(got.ok().as_deref(), Some(img.as_bytes()), "{path}: image {id} kept");
    }
    let id = i[0]["id"].as_str().unwrap().to_string();
    assert!(j.iter().any(|r| r["op"] == "persisted" && r["id"] == id.as_str()), "{path}: persisted at Stop");
    id
}

fn check_clean(b: &AgentBox) {
    assert_eq!(b.errors_log(), "", "no hook error");
    let r = b.walj_json(&["recover", "--json"]);
    assert_eq!(r["unresolved"], 0, "{r:#}");
    let s = b.walj_json(&["sessions", "list", "--json"]);
    assert_eq!((s[0]["agent"].as_str(), s[0]["state"].as_str()), (Some(b.cli.name()), Some("ended")), "{s:#}");
}

// ---------------------------------------------------------------------------------------------
// Clean sessions: edit, create, delete, shell, and calls made in parallel

#[test]
fn codex_clean_session_is_journaled_and_settled() {
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+new file\n*** Update File: a.txt\n@@\n-hello\n+HELLO\n*** Delete File: b.txt\n*** End Patch\n";
    let mv = "*** Begin Patch\n*** Update File: c.txt\n*** Move to: sub/e.txt\n@@\n-hi\n+bye\n*** End Patch\n";
    let script = vec![
        Turn::tool("apply_patch", json!(patch)),
        Turn::tools([
            ("exec_command", json!({"cmd": "echo hi > c.txt"})),
            ("exec_command", json!({"cmd": "echo two > d.txt"})),
        ]),
        Turn::tool("apply_patch", json!(mv)),
        Turn::text("All done."),
    ];
    let Some((b, mock)) = setup(Cli::Codex, "codex_clean_session_is_journaled_and_settled", script) else { return };
    run_session(&b, &mock, "do it");
    let j = b.journal();
    // One apply_patch, three paths, one call id.
    let ids = [
        check_file(&b, &j, "new.txt", None, Some("new file\n")),
        check_file(&b, &j, "a.txt", Some("hello\n"), Some("HELLO\n")),
        check_file(&b, &j, "b.txt", Some("old\n"), None),
    ];
    assert_eq!(ids, ["call_mock_0_0#1", "call_mock_0_0#2", "call_mock_0_0#3"]);
    // The move: c.txt deleted, sub/e.txt created.
    check_file(&b, &j, "c.txt", Some("hi\n"), None);
    check_file(&b, &j, "sub/e.txt", None, Some("bye\n"));
    // The two commands ran in parallel: each paired by its call id; their files claimed once.
    let pre = commands(&j, "intent");
    let post = commands(&j, "applied");
    assert_eq!(pre.len(), 2);
    for c in &pre {
        assert!(post.iter().any(|p| p["id"] == c["id"] && p["command"] == c["command"]), "{c}");
    }
    for p in ["c.txt", "d.txt"] {
        assert_eq!(children(&j, p).len(), 1, "{p}: a command's child once");
    }
    check_clean(&b);
}

#[test]
fn gemini_clean_session_is_journaled_and_settled() {
    let script = vec![
        Turn::tool("write_file", json!({"file_path": "new.txt", "content": "new file\n"})),
        Turn::tools([
            (
                "replace",
                json!({"file_path": "a.txt", "old_string": "hello", "new_string": "HELLO", "instruction": "x"}),
            ),
            ("run_shell_command", json!({"command": "rm b.txt; echo hi > c.txt", "description": "d"})),
        ]),
        Turn::text("All done."),
    ];
    let Some((b, mock)) = setup(Cli::Gemini, "gemini_clean_session_is_journaled_and_settled", script) else { return };
    run_session(&b, &mock, "do it");
    let j = b.journal();
    check_file(&b, &j, "new.txt", None, Some("new file\n"));
    check_file(&b, &j, "a.txt", Some("hello\n"), Some("HELLO\n"));
    let pre = commands(&j, "intent");
    let post = commands(&j, "applied");
    assert_eq!((pre.len(), post.len()), (1, 1));
    assert_eq!(pre[0]["id"], post[0]["id"]);
    assert_eq!(children(&j, "b.txt")[0]["after"], Value::Null);
    assert_eq!(children(&j, "c.txt")[0]["after"], blob("hi\n"));
    assert!(children(&j, "a.txt").is_empty(), "the replace's change is not the command's");
    check_clean(&b);
}

fn copilot_script() -> Vec<Turn> {
    vec![
        Turn::tool("create", json!({"path": "NEW", "file_text": "new file\n"})),
        Turn::tools([
            ("edit", json!({"path": "A", "old_str": "hello", "new_str": "HELLO"})),
            ("bash", json!({"command": "rm b.txt; echo hi > c.txt", "description": "d"})),
        ]),
        Turn::tool("bash", json!({"command": "exit 3", "description": "fail"})),
        Turn::text("All done."),
    ]
}

fn check_copilot_session(b: &AgentBox) {
    let j = b.journal();
    check_file(b, &j, "new.txt", None, Some("new file\n"));
    check_file(b, &j, "a.txt", Some("hello\n"), Some("HELLO\n"));
    assert!(children(&j, "a.txt").is_empty(), "the edit's change is not the command's");
    let pre = commands(&j, "intent");
    assert_eq!(pre.len(), 2, "two commands, each journaled once: {j:#?}");
    let ok = commands(&j, "applied");
    let failed = commands(&j, "failed");
    assert_eq!((ok.len(), failed.len()), (1, 1));
    assert_eq!(ok[0]["id"], pre.iter().find(|c| c["command"] == ok[0]["command"]).unwrap()["id"]);
    assert_eq!((failed[0]["command"].as_str(), failed[0]["error"].as_str()), (Some("exit 3"), Some("Exit code 3")));
    assert_eq!(children(&j, "b.txt").len(), 1);
    assert_eq!(children(&j, "c.txt").len(), 1);
    for k in ["start", "prompt", "stop", "end"] {
        assert_eq!(j.iter().filter(|r| r["op"] == "session" && r["kind"] == k).count(), 1, "one {k} record");
    }
    check_clean(b);
}

#[test]
fn copilot_clean_session_is_journaled_and_settled() {
    let Some((b, mock)) = setup(Cli::Copilot, "copilot_clean_session_is_journaled_and_settled", vec![]) else { return };
    mock.script(b.copilot_paths(copilot_script()));
    run_session(&b, &mock, "do it");
    check_copilot_session(&b);
}

/// Copilot CLI also runs the hooks of `.claude/settings.json`: with walj installed for Claude
/// Code as well, every event reaches walj twice and each call is journaled once; with walj
/// installed for Claude Code only, Copilot's calls are recognised and journaled right.
#[test]
fn copilot_through_claude_settings_is_journaled_once_and_right() {
    let Some((b, mock)) = setup(Cli::Copilot, "copilot_through_claude_settings_is_journaled_once_and_right", vec![])
    else {
        return;
    };
    b.walj_ok(&["install"]);
    mock.script(b.copilot_paths(copilot_script()));
    run_session(&b, &mock, "do it");
    check_copilot_session(&b);

    // Claude Code's install alone.
    let Some((b, mock)) = setup(Cli::Copilot, "copilot_through_claude_settings_is_journaled_once_and_right", vec![])
    else {
        return;
    };
    b.walj_ok(&["uninstall", "--agent", "copilot"]);
    b.walj_ok(&["install"]);
    mock.script(b.copilot_paths(copilot_script()));
    run_session(&b, &mock, "do it");
    check_copilot_session(&b);
}

// ---------------------------------------------------------------------------------------------
// kill -9 mid-shell

/// The session writes a file, then runs a long command; the agent process is killed once the
/// command's intent is journaled. The session is crashed, the file applied but unresolved, the
/// command in flight; the next session of the agent is told once (the note reaches the model),
/// the one after is not.
fn kill9_mid_shell(cli: Cli, test: &str, write: Turn, shell: fn(&str) -> Turn) {
    let token = run::unique_token("orphan");
    let Some((b, mock)) = setup(cli, test, vec![]) else { return };
    let write = b.copilot_paths(vec![write]).remove(0);
    mock.script(vec![write, shell(&token), Turn::text("never")]);
    let running = run::spawn(b.command(&mock, "do it"));
    // The command's intent in the journal names the agent's process.
    let deadline = Instant::now() + TIMEOUT;
    let pid = loop {
        let j = b.journal();
        if let Some(r) =
            commands(&j, "intent").into_iter().find(|r| r["command"].as_str().is_some_and(|c| c.contains(&token)))
        {
            break r["pid"].as_u64().unwrap() as u32;
        }
        assert!(Instant::now() < deadline, "no command intent; requests:\n{}", mock.summary());
        std::thread::sleep(Duration::from_millis(50));
    };
    // The command runs (its output file exists), then the agent dies.
    while !b.root().join("run.log").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    run::kill9_pids(&[pid]);
    let out = running.wait(Duration::from_secs(30));
    let orphans = run::pids_mentioning(&token);
    run::kill9_tree(&orphans);
    run::kill9_tree(&run::pids_mentioning(&b.sb.project.to_string_lossy()));
    let _ = out;

    let r = b.walj_json(&["recover", "--json"]);
    let s = &r["sessions"][0];
    assert_eq!((s["agent"].as_str(), s["state"].as_str()), (Some(cli.name()), Some("crashed")), "{r:#}");
    let paths: Vec<&str> = s["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"new.txt"), "the write is unresolved (its turn never ended): {r:#}");
    let in_flight = s["commands_in_flight"].as_array().map(Vec::len).unwrap_or(0);
    assert_eq!(in_flight, 1, "the command is in flight: {r:#}");
    let text = b.walj_ok(&["recover"]);
    assert!(text.contains(cli.label()) && text.contains("never finished"), "{text}");
    let sid = s["sid"].as_str().unwrap().to_string();

    // The next session of the agent is told, once.
    mock.script(vec![Turn::text("ok")]);
    let mark = mock.mark();
    run_session(&b, &mock, "next");
    let first = &mock.main_requests_from(mark)[0];
    // The note names the session, the unresolved path and the command cut off (its token is
    // unique to this test; Codex's session ids, UUIDv7, share their first characters).
    assert!(first.count(&sid) >= 1, "the note names the crashed session {sid}: {:#}", first.body);
    assert!(first.count("new.txt") >= 1, "the note names the unresolved path");
    assert_eq!(first.count(&token), 1, "the note, once: {:#}", first.body);
    mock.script(vec![Turn::text("ok")]);
    let mark = mock.mark();
    run_session(&b, &mock, "again");
    assert_eq!(mock.main_requests_from(mark)[0].count(&token), 0, "told once");
    assert_eq!(b.errors_log(), "");
}

fn long(token: &str) -> String {
    format!("echo started > run.log; sleep 60 # {token}")
}

#[test]
fn codex_kill_9_mid_shell_then_the_next_codex_session_is_told_once() {
    kill9_mid_shell(
        Cli::Codex,
        "codex_kill_9_mid_shell_then_the_next_codex_session_is_told_once",
        Turn::tool("apply_patch", json!("*** Begin Patch\n*** Add File: new.txt\n+new file\n*** End Patch\n")),
        |t| Turn::tool("exec_command", json!({"cmd": long(t)})),
    );
}

#[test]
fn gemini_kill_9_mid_shell_then_the_next_gemini_session_is_told_once() {
    kill9_mid_shell(
        Cli::Gemini,
        "gemini_kill_9_mid_shell_then_the_next_gemini_session_is_told_once",
        Turn::tool("write_file", json!({"file_path": "new.txt", "content": "new file\n"})),
        |t| Turn::tool("run_shell_command", json!({"command": long(t)})),
    );
}

#[test]
fn copilot_kill_9_mid_shell_then_the_next_copilot_session_is_told_once() {
    kill9_mid_shell(
        Cli::Copilot,
        "copilot_kill_9_mid_shell_then_the_next_copilot_session_is_told_once",
        Turn::tool("create", json!({"path": "NEW", "file_text": "new file\n"})),
        |t| Turn::tool("bash", json!({"command": long(t), "description": "long"})),
    );
}
