//! Issue 11 items 4, 5, 7 (hook side) and 8, with recorded-shape payloads through the real
//! binary: turns that end without a Stop (an Esc interrupt, StopFailure), prompts Claude Code
//! wrote itself, the transcript's safe copy from the first turn and after a crash, and the
//! liveness of background commands Claude Code re-quotes.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

mod common;

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::Command as StdCommand;

use common::{Parent, Repo, hook_ok};
use serde_json::{Value, json};

fn repo() -> Repo {
    let repo = Repo::new(&[("a.txt", "old\n")]).with_home();
    fs::create_dir_all(repo.home.join(".claude/projects/-work-demo")).unwrap();
    repo
}

fn transcript(repo: &Repo, session: &str) -> PathBuf {
    repo.home.join(format!(".claude/projects/-work-demo/{session}.jsonl"))
}

/// A payload as Claude Code 2.1.328 sends it (common fields plus `extra`).
fn payload(session: &str, event: &str, extra: Value) -> String {
    let mut v = json!({
        "session_id": session,
        "transcript_path": format!("${{HOME}}/.claude/projects/-work-demo/{session}.jsonl"),
        "cwd": "${PROJECT}",
        "hook_event_name": event,
    });
    for (k, val) in extra.as_object().unwrap() {
        v[k] = val.clone();
    }
    v.to_string()
}

fn hook(repo: &Repo, parent: Parent, p: &str) {
    hook_ok(&repo.root, &repo.subst(p), parent);
}

/// A Write of `a.txt` that completed (PreToolUse, the file written, PostToolUse).
fn write_a(repo: &Repo, parent: Parent, sid: &str, id: &str) {
    let input = json!({"file_path": "${PROJECT}/a.txt", "content": "new\n"});
    hook(
        repo,
        parent,
        &payload(sid, "PreToolUse", json!({"tool_name": "Write", "tool_use_id": id, "tool_input": input})),
    );
    repo.write("a.txt", "new\n");
    hook(
        repo,
        parent,
        &payload(
            sid,
            "PostToolUse",
            json!({"tool_name": "Write", "tool_use_id": id, "tool_input": input,
                   "tool_response": {"type": "update", "filePath": "a.txt", "content": "new\n"}}),
        ),
    );
}

fn ops_of(repo: &Repo, id: &str) -> Vec<String> {
    repo.records().iter().filter(|r| r["id"] == id).map(|r| r["op"].as_str().unwrap().to_string()).collect()
}

#[test]
fn an_interrupted_turn_is_verified_by_the_sessions_next_prompt() {
    // Esc fires no Stop while Claude Code lives on (the test process stands for it).
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000001";
    hook(&repo, Parent::Test, &payload(sid, "SessionStart", json!({"source": "startup"})));
    hook(&repo, Parent::Test, &payload(sid, "UserPromptSubmit", json!({"prompt": "rewrite a.txt"})));
    write_a(&repo, Parent::Test, sid, "toolu_ESC1");
    assert!(!ops_of(&repo, "toolu_ESC1").contains(&"persisted".to_string()));
    // The user pressed Esc and typed again: the previous turn's entries are verified.
    hook(&repo, Parent::Test, &payload(sid, "UserPromptSubmit", json!({"prompt": "now something else"})));
    let ops = ops_of(&repo, "toolu_ESC1");
    assert!(ops.contains(&"persisted".to_string()), "the next prompt did not verify the interrupted turn: {ops:?}");
    let v = repo.json(&["recover", "--json"]);
    assert_eq!(v["unresolved"], 0, "{v:#}");
}

#[test]
fn a_resumed_crashed_sessions_next_prompt_leaves_the_crash_alone() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000007";
    let p = Parent::Timeout(10);
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    hook(&repo, p, &payload(sid, "UserPromptSubmit", json!({"prompt": "rewrite a.txt"})));
    write_a(&repo, p, sid, "toolu_CR1");
    // Killed; `claude --resume` starts it again and the user types.
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "resume"})));
    hook(&repo, p, &payload(sid, "UserPromptSubmit", json!({"prompt": "where were we"})));
    assert!(!ops_of(&repo, "toolu_CR1").contains(&"persisted".to_string()), "{:?}", ops_of(&repo, "toolu_CR1"));
}

#[test]
fn stop_failure_keeps_the_turn_unresolved_with_its_reason() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000002";
    let p = Parent::Timeout(10);
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    hook(&repo, p, &payload(sid, "UserPromptSubmit", json!({"prompt": "rewrite a.txt"})));
    write_a(&repo, p, sid, "toolu_SF1");
    // The payload of Claude Code 2.1.328's StopFailure (its cli schema: error, error_details,
    // last_assistant_message).
    hook(
        &repo,
        p,
        &payload(
            sid,
            "StopFailure",
            json!({"error": "overloaded", "error_details": "529 {\"type\":\"overloaded_error\"}",
                   "last_assistant_message": "I rewrote a.txt and"}),
        ),
    );
    let recs = repo.records();
    let sf = recs.iter().find(|r| r["kind"] == "stop_failure").unwrap_or_else(|| panic!("no stop_failure: {recs:#?}"));
    assert_eq!(sf["reason"], "ended by an API error: overloaded");
    assert_eq!(sf["error"], "overloaded");
    assert!(sf["error_details"].as_str().unwrap().contains("overloaded_error"));
    assert!(!ops_of(&repo, "toolu_SF1").iter().any(|o| o == "persisted" || o == "resolved"));
    let v = repo.json(&["recover", "--json"]);
    assert_eq!(v["unresolved"], 1, "{v:#}");
}

#[test]
fn stop_failure_is_registered_by_install() {
    let repo = repo();
    let (code, _, err) = repo.run(&["install", "--command", "walj hook"]);
    assert_eq!(code, 0, "{err}");
    let settings: Value = serde_json::from_slice(&fs::read(repo.root.join(".claude/settings.json")).unwrap()).unwrap();
    assert!(settings["hooks"]["StopFailure"].is_array(), "{settings:#}");
}

#[test]
fn messages_claude_code_writes_are_not_prompts() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000003";
    for prompt in [
        "<task-notification>\n<task-id>bash_1</task-id>\n<status>completed</status>\n<summary>Background command \"sleep 5\" completed</summary>\n</task-notification>",
        "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.",
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
        "<local-command-stdout></local-command-stdout>",
        "a real prompt",
    ] {
        hook(&repo, Parent::Test, &payload(sid, "UserPromptSubmit", json!({"prompt": prompt})));
    }
    let prompts: Vec<String> = repo
        .records()
        .iter()
        .filter(|r| r["kind"] == "prompt")
        .map(|r| r["prompt"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(prompts, ["a real prompt"]);
}

#[test]
fn the_first_prompt_copies_the_transcript() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000004";
    let lines = format!(
        "{}\n",
        json!({"type": "user", "sessionId": sid, "uuid": "u1", "message": {"role": "user", "content": "hello"}})
    );
    fs::write(transcript(&repo, sid), &lines).unwrap();
    let p = Parent::Timeout(10);
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    hook(&repo, p, &payload(sid, "UserPromptSubmit", json!({"prompt": "hello"})));
    // Killed in its first turn: Claude Code's file is gone later.
    fs::remove_file(transcript(&repo, sid)).unwrap();
    let out = repo.walj(&["sessions", "transcript", &sid[..8]]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), lines);
}

#[test]
fn the_next_session_start_copies_a_crashed_sessions_transcript() {
    let repo = repo();
    let (a, b) = ("e5c00000-0000-4000-8000-00000000000a", "e5c00000-0000-4000-8000-00000000000b");
    let p = Parent::Timeout(10);
    hook(&repo, p, &payload(a, "SessionStart", json!({"source": "startup"})));
    // What Claude Code wrote after the last hook that copied (here: none did).
    let lines = format!(
        "{}\n{}\n",
        json!({"type": "user", "sessionId": a, "uuid": "u1", "message": {"role": "user", "content": "go"}}),
        json!({"type": "assistant", "sessionId": a, "uuid": "u2", "message": {"role": "assistant", "content": [{"type": "text", "text": "on it"}]}})
    );
    fs::write(transcript(&repo, a), &lines).unwrap();
    let input = json!({"file_path": "${PROJECT}/a.txt", "content": "new\n"});
    hook(
        &repo,
        p,
        &payload(a, "PreToolUse", json!({"tool_name": "Write", "tool_use_id": "toolu_A1", "tool_input": input})),
    );
    // Session a died (its parent is gone); session b starts in the project.
    hook(&repo, p, &payload(b, "SessionStart", json!({"source": "startup"})));
    fs::remove_file(transcript(&repo, a)).unwrap();
    let out = repo.walj(&["sessions", "transcript", &a[..8]]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), lines);
}

/// Waits until process `pid` has exec'd (its cmdline contains `needle`).
fn wait_exec(pid: u32, needle: &str) {
    for _ in 0..200 {
        if fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("process {pid} never ran {needle:?}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_requoted_background_command_is_running_and_restart_is_offered_only_when_it_makes_sense() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000005";
    let p = Parent::Timeout(10);
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    let bash = |id: &str, command: &str, background: bool, task: &str, post: bool| {
        let input = json!({"command": command, "run_in_background": background});
        hook(
            &repo,
            p,
            &payload(sid, "PreToolUse", json!({"tool_name": "Bash", "tool_use_id": id, "tool_input": input})),
        );
        if post {
            hook(
                &repo,
                p,
                &payload(
                    sid,
                    "PostToolUse",
                    json!({"tool_name": "Bash", "tool_use_id": id, "tool_input": input,
                           "tool_response": {"stdout": "", "stderr": "", "interrupted": false, "backgroundTaskId": task}}),
                ),
            );
        }
    };
    let cmd = "sleep 302; echo 'done' > b.txt";
    bash("toolu_BGQ", cmd, true, "bash_1", true);
    bash("toolu_ONE", "sleep 1; echo one > c.txt", true, "bash_2", true);
    hook(
        &repo,
        p,
        &payload(
            sid,
            "Stop",
            json!({"background_tasks": [
                {"id": "bash_1", "status": "running", "command": cmd},
                {"id": "bash_2", "status": "completed", "command": "sleep 1; echo one > c.txt"}]}),
        ),
    );
    // A foreground command killed with the session.
    bash("toolu_FG", "cargo build", false, "", false);
    // How Claude Code 2.1.328's shell runs it: re-quoted inside `eval '…'`.
    let mut child = StdCommand::new("bash")
        .arg("-c")
        .arg("eval 'sleep 302; echo '\"'\"'done'\"'\"' > b.txt'")
        .current_dir(&repo.root)
        .process_group(0)
        .spawn()
        .unwrap();
    wait_exec(child.id(), "eval");
    let v = repo.json(&["procs", "--json"]);
    // The shell and its sleep: the whole group.
    let _ = StdCommand::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
    let _ = child.wait();
    let get = |id: &str| v.as_array().unwrap().iter().find(|p| p["id"] == id).unwrap_or_else(|| panic!("{id}: {v:#}"));
    assert_eq!(get("toolu_BGQ")["state"], "running", "{v:#}");
    assert!(get("toolu_BGQ")["pids"].as_array().unwrap().contains(&json!(child.id())));
    assert_eq!(get("toolu_BGQ")["restartable"], false, "it runs");
    assert_eq!(get("toolu_ONE")["restartable"], false, "a finished one-shot job");
    assert_eq!(get("toolu_FG")["kind"], "in_flight");
    assert_eq!(get("toolu_FG")["restartable"], false, "a killed foreground command");
    // Once it is gone, it may be restarted; a restart of a running one is refused.
    let v = repo.json(&["procs", "--json"]);
    let bgq = v.as_array().unwrap().iter().find(|p| p["id"] == "toolu_BGQ").unwrap();
    assert_eq!(bgq["state"], "not_running");
    assert_eq!(bgq["restartable"], true);
    // The brief offers a restart only for that one.
    let brief = repo.json(&["sessions", "resume", &sid[..8], "--print-only", "--json"]);
    let text = brief["brief"].as_str().unwrap();
    assert!(text.contains("walj procs restart"), "{text}");
    assert_eq!(text.matches("walj procs restart").count(), 1, "{text}");
}

#[cfg(target_os = "linux")]
#[test]
fn restarting_a_command_that_still_runs_is_refused() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000006";
    let p = Parent::Timeout(10);
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    let input = json!({"command": "sleep 303", "run_in_background": true});
    hook(
        &repo,
        p,
        &payload(sid, "PreToolUse", json!({"tool_name": "Bash", "tool_use_id": "toolu_R", "tool_input": input})),
    );
    hook(
        &repo,
        p,
        &payload(
            sid,
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "toolu_R", "tool_input": input,
                   "tool_response": {"stdout": "", "stderr": "", "interrupted": false, "backgroundTaskId": "bash_9"}}),
        ),
    );
    let mut child = StdCommand::new("sleep").arg("303").current_dir(&repo.root).spawn().unwrap();
    wait_exec(child.id(), "303");
    let out = repo.walj(&["procs", "restart", "toolu_R", "--yes"]).output().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("still runs"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!repo.root.join(".walj/procs").exists(), "something was started");
}
