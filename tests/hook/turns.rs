//! Issue 11 items 4, 5, 7 (hook side) and 8 with payloads in the shapes Claude Code 2.1.328
//! sends (recorded with the real CLI, see tests/e2e/turns.rs), through the real binary: turns
//! that end without a Stop (an Esc interrupt, StopFailure), prompts Claude Code wrote itself,
//! the transcript's safe copy from the first turn and after a crash, and the liveness of
//! background commands Claude Code re-quotes.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::Command as StdCommand;

use crate::common::{Parent, Repo, hook_ok};
use serde_json::{Value, json};

/// The environment variable Claude Code 2.1.328 sets to the session id in its Bash processes.
const SESSION_ENV: &str = "CLAUDE_CODE_SESSION_ID";

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

/// A UserPromptSubmit of turn `prompt_id`.
fn prompt(repo: &Repo, parent: Parent, sid: &str, text: &str, prompt_id: &str) {
    hook(repo, parent, &payload(sid, "UserPromptSubmit", json!({"prompt": text, "prompt_id": prompt_id})));
}

/// A Write of `a.txt` that completed (PreToolUse, the file written, PostToolUse) in turn
/// `prompt_id`.
fn write_a(repo: &Repo, parent: Parent, sid: &str, id: &str, prompt_id: &str) {
    let input = json!({"file_path": "${PROJECT}/a.txt", "content": "new\n"});
    hook(
        repo,
        parent,
        &payload(
            sid,
            "PreToolUse",
            json!({"tool_name": "Write", "tool_use_id": id, "tool_input": input, "prompt_id": prompt_id}),
        ),
    );
    repo.write("a.txt", "new\n");
    hook(
        repo,
        parent,
        &payload(
            sid,
            "PostToolUse",
            json!({"tool_name": "Write", "tool_use_id": id, "tool_input": input, "prompt_id": prompt_id,
                   "tool_response": {"type": "update", "filePath": "a.txt", "content": "new\n"}}),
        ),
    );
}

fn ops_of(repo: &Repo, id: &str) -> Vec<String> {
    repo.records().iter().filter(|r| r["id"] == id).map(|r| r["op"].as_str().unwrap().to_string()).collect()
}

fn settled(repo: &Repo, id: &str) -> bool {
    ops_of(repo, id).iter().any(|o| o == "persisted" || o == "resolved")
}

#[test]
fn an_interrupted_turn_is_verified_by_the_sessions_next_prompt() {
    // Esc fires no Stop while Claude Code lives on (the test process stands for it).
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000001";
    let p = Parent::Test;
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    prompt(&repo, p, sid, "rewrite a.txt", "p-1");
    write_a(&repo, p, sid, "toolu_ESC1", "p-1");
    // The Edit the user interrupted: PreToolUse, then nothing (the file unchanged).
    let edit = json!({"file_path": "${PROJECT}/a.txt", "old_string": "new", "new_string": "newer"});
    hook(
        &repo,
        p,
        &payload(
            sid,
            "PreToolUse",
            json!({"tool_name": "Edit", "tool_use_id": "toolu_ESC2", "tool_input": edit,
                                           "prompt_id": "p-1"}),
        ),
    );
    assert!(!settled(&repo, "toolu_ESC1"));
    // The user pressed Esc and typed again: a new turn (a new prompt_id) verifies the last.
    prompt(&repo, p, sid, "now something else", "p-2");
    assert!(ops_of(&repo, "toolu_ESC1").contains(&"persisted".to_string()), "{:?}", ops_of(&repo, "toolu_ESC1"));
    let esc2: Vec<Value> = repo.records().into_iter().filter(|r| r["id"] == "toolu_ESC2").collect();
    assert!(esc2.iter().any(|r| r["op"] == "resolved" && r["how"] == "not_applied"), "{esc2:#?}");
    let v = repo.json(&["recover", "--json"]);
    assert_eq!(v["unresolved"], 0, "{v:#}");
}

#[test]
fn a_message_queued_while_the_turn_runs_verifies_nothing() {
    // Claude Code 2.1.328 fires UserPromptSubmit at once for a message typed while a turn
    // runs, with the running turn's prompt_id (seen in tests/e2e/turns.rs): that turn is not over.
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000008";
    let p = Parent::Test;
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    prompt(&repo, p, sid, "rewrite a.txt", "p-1");
    write_a(&repo, p, sid, "toolu_Q1", "p-1");
    prompt(&repo, p, sid, "and then b.txt", "p-1");
    assert!(!settled(&repo, "toolu_Q1"), "{:?}", ops_of(&repo, "toolu_Q1"));
    // The queued message's own turn starts after an Esc: now the first turn is over.
    prompt(&repo, p, sid, "something else", "p-3");
    assert!(settled(&repo, "toolu_Q1"), "{:?}", ops_of(&repo, "toolu_Q1"));
}

#[test]
fn without_prompt_ids_a_prompt_verifies_nothing() {
    // Older Claude Code sends no prompt_id: a queued message and a new turn look alike, so the
    // next Stop verifies (a turn is never settled while it may run).
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000009";
    let p = Parent::Test;
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    hook(&repo, p, &payload(sid, "UserPromptSubmit", json!({"prompt": "rewrite a.txt"})));
    write_a(&repo, p, sid, "toolu_NP", "");
    hook(&repo, p, &payload(sid, "UserPromptSubmit", json!({"prompt": "more"})));
    assert!(!settled(&repo, "toolu_NP"));
}

#[test]
fn a_resumed_crashed_sessions_next_prompt_leaves_the_crash_alone() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000007";
    let p = Parent::Timeout(10);
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    prompt(&repo, p, sid, "rewrite a.txt", "p-1");
    write_a(&repo, p, sid, "toolu_CR1", "p-1");
    // Killed; `claude --resume` starts it again and the user types.
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "resume"})));
    prompt(&repo, p, sid, "where were we", "p-2");
    assert!(!settled(&repo, "toolu_CR1"), "{:?}", ops_of(&repo, "toolu_CR1"));
}

/// A Write of `rel` cut off by a crash: PreToolUse, then nothing.
fn write_cut_off(repo: &Repo, parent: Parent, sid: &str, id: &str, rel: &str, prompt_id: &str) {
    let input = json!({"file_path": format!("${{PROJECT}}/{rel}"), "content": "never written\n"});
    hook(
        repo,
        parent,
        &payload(
            sid,
            "PreToolUse",
            json!({"tool_name": "Write", "tool_use_id": id, "tool_input": input, "prompt_id": prompt_id}),
        ),
    );
}

/// The SessionStart answer of `sid` as JSON (`Value::Null` when it printed nothing).
fn start(repo: &Repo, parent: Parent, sid: &str, source: &str) -> Value {
    let out = hook_ok(&repo.root, &repo.subst(&payload(sid, "SessionStart", json!({"source": source}))), parent);
    if out.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    }
}

#[test]
fn a_resumed_session_that_crashes_again_is_told_again_with_only_its_new_work() {
    let repo = repo();
    let (sid, next) = ("e5c00000-0000-4000-8000-00000000001a", "e5c00000-0000-4000-8000-00000000001b");
    let p = Parent::Timeout(10);
    // Crash 1: a Write of first.txt cut off.
    start(&repo, p, sid, "startup");
    prompt(&repo, p, sid, "write first", "p-1");
    write_cut_off(&repo, p, sid, "toolu_FIRST", "first.txt", "p-1");
    // `claude --resume`: the session is told its own crash.
    let told = start(&repo, p, sid, "resume");
    let ctx = told["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_else(|| panic!("{told}"));
    assert!(ctx.contains("first.txt"), "{ctx}");
    // Crash 2 of the resumed session: a Write of second.txt cut off.
    prompt(&repo, p, sid, "write second", "p-2");
    write_cut_off(&repo, p, sid, "toolu_SECOND", "second.txt", "p-2");
    // The next session is told the second crash, and only its new work.
    let v = start(&repo, p, next, "startup");
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_else(|| panic!("nothing told: {v}"));
    assert!(ctx.contains("second.txt"), "{ctx}");
    assert!(!ctx.contains("first.txt"), "the first crash was told already: {ctx}");
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("second.txt") && !msg.contains("first.txt"), "{msg}");
    // Once: a further session hears nothing of it.
    let again = start(&repo, p, "e5c00000-0000-4000-8000-00000000001c", "startup");
    let said = again.to_string();
    assert!(!said.contains("second.txt") && !said.contains("first.txt"), "{said}");
    // Both crashes' entries stay unresolved for the user.
    let rec = repo.json(&["recover", "--json"]);
    assert_eq!(rec["unresolved"], 2, "{rec:#}");
}

#[test]
fn a_call_cut_off_by_a_crash_is_not_called_completed_because_a_later_call_wrote_the_same() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-00000000001d";
    let p = Parent::Timeout(10);
    start(&repo, p, sid, "startup");
    prompt(&repo, p, sid, "write a", "p-1");
    // Crash 1 cuts the Write of a.txt off before it ran (PreToolUse, nothing on disk).
    let input = json!({"file_path": "${PROJECT}/a.txt", "content": "new\n"});
    hook(
        &repo,
        p,
        &payload(
            sid,
            "PreToolUse",
            json!({"tool_name": "Write", "tool_use_id": "toolu_CUT", "tool_input": input, "prompt_id": "p-1"}),
        ),
    );
    // Resumed, the same text is written by a new call that completes.
    start(&repo, p, sid, "resume");
    prompt(&repo, p, sid, "again", "p-2");
    write_a(&repo, p, sid, "toolu_AGAIN", "p-2");
    let v = repo.json(&["log", "--json", "--all"]);
    let cut = v.as_array().unwrap().iter().find(|e| e["id"] == "toolu_CUT").unwrap_or_else(|| panic!("{v:#}"));
    let rec = repo.json(&["recover", "--json"]);
    let e = rec["sessions"][0]["entries"].as_array().unwrap().iter().find(|e| e["id"] == "toolu_CUT").cloned();
    let e = e.unwrap_or_else(|| panic!("the cut-off call is no longer unresolved: {rec:#} {cut}"));
    assert_eq!(e["disk"], "written_by_later", "{rec:#}");
    let text = repo.ok(&["recover"]);
    assert!(!text.contains("the tool completed"), "{text}");
    // The verdict names its cause: the later call, by the id recover shows.
    assert!(text.contains("but the later call AGAI wrote exactly that"), "{text}");
}

/// The StopFailure payload Claude Code 2.1.328 sent when the API answered 529 (recorded in
/// tests/e2e/turns.rs): `error` is `server_error` behind a custom base URL, no
/// `error_details`.
fn stop_failure_payload(sid: &str) -> String {
    payload(
        sid,
        "StopFailure",
        json!({"prompt_id": "p-1", "effort": {"level": "medium"}, "error": "server_error",
               "last_assistant_message": "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:44205)."}),
    )
}

#[test]
fn stop_failure_keeps_the_turn_unresolved_with_its_reason_until_the_session_goes_on() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000002";
    let p = Parent::Test;
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    prompt(&repo, p, sid, "rewrite a.txt", "p-1");
    write_a(&repo, p, sid, "toolu_SF1", "p-1");
    hook(&repo, p, &stop_failure_payload(sid));
    let recs = repo.records();
    let sf = recs.iter().find(|r| r["kind"] == "stop_failure").unwrap_or_else(|| panic!("no stop_failure: {recs:#?}"));
    let reason = "ended by an API error: server_error (API Error: 529 Overloaded)";
    assert_eq!(sf["reason"], reason);
    assert_eq!(sf["error"], "server_error");
    assert_eq!(sf["prompt_id"], "p-1");
    assert!(!settled(&repo, "toolu_SF1"));
    let v = repo.json(&["recover", "--json"]);
    assert_eq!(v["unresolved"], 1, "{v:#}");
    assert_eq!(v["sessions"][0]["turn_failure"], reason, "{v:#}");
    let text = repo.ok(&["recover"]);
    assert!(text.contains(&format!("last turn: {reason}")), "{text}");
    // The user goes on in the same session: the failed turn is verified, the reason is gone.
    prompt(&repo, p, sid, "try again", "p-2");
    assert!(settled(&repo, "toolu_SF1"));
    assert_eq!(repo.json(&["recover", "--json"])["unresolved"], 0);
}

#[test]
fn a_session_that_ends_after_a_stop_failure_is_announced_like_a_crash() {
    let repo = repo();
    let (a, b) = ("e5c00000-0000-4000-8000-00000000000c", "e5c00000-0000-4000-8000-00000000000d");
    let p = Parent::Timeout(10);
    hook(&repo, p, &payload(a, "SessionStart", json!({"source": "startup"})));
    prompt(&repo, p, a, "rewrite a.txt", "p-1");
    write_a(&repo, p, a, "toolu_SFE", "p-1");
    hook(&repo, p, &stop_failure_payload(a));
    hook(&repo, p, &payload(a, "SessionEnd", json!({"reason": "other"})));
    let out = hook_ok(&repo.root, &repo.subst(&payload(b, "SessionStart", json!({"source": "startup"}))), p);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("ended its last turn early (ended by an API error: server_error"), "{msg}");
    assert!(msg.contains("a.txt"), "{msg}");
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(ctx.contains("ended by an API error") && ctx.contains(a), "{ctx}");
}

/// The transcript of a turn a 529 ended, as Claude Code 2.1.328 wrote it (shortened).
fn api_error_transcript(repo: &Repo, sid: &str) {
    let lines = [
        json!({"type": "user", "sessionId": sid, "uuid": "u1", "message": {"role": "user", "content": "rewrite a.txt"}}),
        json!({"type": "assistant", "sessionId": sid, "uuid": "u2", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_SE", "name": "Write", "input": {}}]}}),
        json!({"type": "assistant", "sessionId": sid, "uuid": "u3", "isApiErrorMessage": true, "error": "server_error", "apiErrorStatus": 529,
               "message": {"model": "<synthetic>", "role": "assistant", "content": [{"type": "text", "text": "API Error: 529 Overloaded. This is a server-side issue, usually temporary."}]}}),
        json!({"type": "last-prompt", "lastPrompt": "rewrite a.txt", "sessionId": sid}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(transcript(repo, sid), text).unwrap();
}

#[test]
fn session_end_records_the_api_error_a_missed_stop_failure_hook_would_have() {
    // Claude Code 2.1.328 in `-p` mode often exits without running StopFailure hooks.
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000010";
    let p = Parent::Timeout(10);
    hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
    prompt(&repo, p, sid, "rewrite a.txt", "p-1");
    write_a(&repo, p, sid, "toolu_SE", "p-1");
    api_error_transcript(&repo, sid);
    hook(&repo, p, &payload(sid, "SessionEnd", json!({"reason": "other", "prompt_id": "p-1"})));
    let recs = repo.records();
    let sf: Vec<&Value> = recs.iter().filter(|r| r["kind"] == "stop_failure").collect();
    assert_eq!(sf.len(), 1, "{recs:#?}");
    assert_eq!(sf[0]["reason"], "ended by an API error: server_error (API Error: 529 Overloaded)");
    let v = repo.json(&["recover", "--json"]);
    assert_eq!((v["unresolved"].as_u64(), v["sessions"][0]["state"].as_str()), (Some(1), Some("ended")), "{v:#}");
}

#[test]
fn session_end_adds_nothing_when_the_stop_failure_hook_ran_or_the_turn_stopped() {
    let repo = repo();
    let (a, b) = ("e5c00000-0000-4000-8000-000000000011", "e5c00000-0000-4000-8000-000000000012");
    let p = Parent::Timeout(10);
    for sid in [a, b] {
        hook(&repo, p, &payload(sid, "SessionStart", json!({"source": "startup"})));
        prompt(&repo, p, sid, "rewrite a.txt", "p-1");
        write_a(&repo, p, sid, &format!("toolu_{}", &sid[34..]), "p-1");
        api_error_transcript(&repo, sid);
    }
    hook(&repo, p, &stop_failure_payload(a));
    hook(&repo, p, &payload(b, "Stop", json!({})));
    for sid in [a, b] {
        hook(&repo, p, &payload(sid, "SessionEnd", json!({"reason": "other"})));
    }
    let n = |sid: &str| repo.records().iter().filter(|r| r["kind"] == "stop_failure" && r["session"] == sid).count();
    assert_eq!((n(a), n(b)), (1, 0));
}

#[test]
fn stop_failure_is_registered_by_install() {
    let repo = repo();
    let (code, _, err) = repo.run(&["install", "--command", "walj hook"]);
    assert_eq!(code, 0, "{err}");
    let settings: Value = serde_json::from_slice(&fs::read(repo.root.join(".claude/settings.json")).unwrap()).unwrap();
    let cmds: Vec<String> = settings["hooks"]["StopFailure"]
        .as_array()
        .unwrap_or_else(|| panic!("{settings:#}"))
        .iter()
        .flat_map(|g| g["hooks"].as_array().unwrap())
        .filter_map(|h| {
            // Exec form (`command` + `args`) or shell form (`command` alone).
            let args = h["args"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>());
            let cmd = h["command"].as_str()?;
            Some(match args {
                Some(a) => std::iter::once(cmd).chain(a).collect::<Vec<_>>().join(" "),
                None => cmd.to_string(),
            })
        })
        .collect();
    assert_eq!(cmds, ["walj hook"], "{settings:#}");
}

#[test]
fn messages_claude_code_writes_are_not_prompts() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000003";
    for text in [
        // What 2.1.328 sends when a background command ends (recorded in tests/e2e/turns.rs).
        "<task-notification>\n<task-id>bohx39i35</task-id>\n<tool-use-id>toolu_BG</tool-use-id>\n<output-file>/tmp/t/tasks/bohx39i35.output</output-file>\n<status>completed</status>\n<summary>Background command \"bg\" completed (exit code 0)</summary>\n</task-notification>",
        "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.",
        "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
        "<local-command-stdout></local-command-stdout>",
        "a real prompt",
    ] {
        prompt(&repo, Parent::Test, sid, text, "p-1");
    }
    let recs = repo.records();
    let prompts: Vec<&str> =
        recs.iter().filter(|r| r["kind"] == "prompt").map(|r| r["prompt"].as_str().unwrap()).collect();
    assert_eq!(prompts, ["a real prompt"]);
    let n = recs.iter().find(|r| r["kind"] == "task_notification").unwrap_or_else(|| panic!("{recs:#?}"));
    assert_eq!(
        (n["id"].as_str(), n["task_id"].as_str(), n["status"].as_str()),
        (Some("toolu_BG"), Some("bohx39i35"), Some("completed"))
    );
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
    prompt(&repo, p, sid, "hello", "p-1");
    // Killed in its first turn; Claude Code's file is gone later.
    fs::remove_file(transcript(&repo, sid)).unwrap();
    let out = repo.walj(&["sessions", "transcript", sid, "-o", "-"]).output().unwrap();
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
    let out = repo.walj(&["sessions", "transcript", a, "-o", "-"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), lines);
}

/// Waits until process `pid` has exec'd (its cmdline contains `needle`).
fn wait_exec(pid: u32, needle: &str) {
    for _ in 0..500 {
        if fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle)) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("process {pid} never ran {needle:?}");
}

/// Kills a process group when dropped (a failing test leaves nothing running).
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        let _ = StdCommand::new("kill").args(["-KILL", "--", &format!("-{}", self.0)]).status();
    }
}

/// Starts `bash -c SCRIPT` in its own process group in `cwd`, with Claude Code's session marker
/// set to `marker` (or none).
fn spawn_group(script: &str, cwd: &std::path::Path, marker: Option<&str>) -> (std::process::Child, Group) {
    let mut c = StdCommand::new("bash");
    c.arg("-c").arg(script).current_dir(cwd).process_group(0).env_remove(SESSION_ENV);
    if let Some(m) = marker {
        c.env(SESSION_ENV, m);
    }
    let child = c.spawn().unwrap();
    let g = Group(child.id());
    (child, g)
}

/// A Bash call (PreToolUse, and PostToolUse unless `post` is false) of turn p-1.
fn bash(repo: &Repo, sid: &str, id: &str, command: &str, background: bool, task: &str, post: bool) {
    let p = Parent::Timeout(10);
    let input = json!({"command": command, "run_in_background": background});
    hook(
        repo,
        p,
        &payload(
            sid,
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_use_id": id, "tool_input": input, "prompt_id": "p-1"}),
        ),
    );
    if post {
        hook(
            repo,
            p,
            &payload(
                sid,
                "PostToolUse",
                json!({"tool_name": "Bash", "tool_use_id": id, "tool_input": input, "prompt_id": "p-1",
                       "tool_response": {"stdout": "", "stderr": "", "interrupted": false, "backgroundTaskId": task}}),
            ),
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_requoted_background_command_is_running_and_restart_is_offered_only_when_it_makes_sense() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000005";
    hook(&repo, Parent::Timeout(10), &payload(sid, "SessionStart", json!({"source": "startup"})));
    let cmd = "sleep 302; echo 'done' > b.txt";
    bash(&repo, sid, "toolu_BGQ", cmd, true, "bash_1", true);
    bash(&repo, sid, "toolu_ONE", "sleep 1; echo one > c.txt", true, "bash_2", true);
    bash(&repo, sid, "toolu_DEV", "npm run dev", true, "bash_3", true);
    // The Stop lists what still runs; the one-shot job has ended (2.1.328 drops it from the
    // list, and sent a task notification for it).
    hook(
        &repo,
        Parent::Timeout(10),
        &payload(
            sid,
            "Stop",
            json!({"background_tasks": [
                {"id": "bash_1", "type": "shell", "status": "running", "command": cmd},
                {"id": "bash_3", "type": "shell", "status": "running", "command": "npm run dev"}]}),
        ),
    );
    // A foreground command killed with the session.
    bash(&repo, sid, "toolu_FG", "cargo build", false, "", false);
    // How Claude Code 2.1.328's shell runs it: re-quoted inside `eval '…'`, with its marker.
    let (child, _g) = spawn_group("eval 'sleep 302; echo '\"'\"'done'\"'\"' > b.txt'", &repo.root, Some(sid));
    wait_exec(child.id(), "eval");
    // The same command in another session's shell is not this one's.
    let (other, _g2) =
        spawn_group("eval 'sleep 302; echo '\"'\"'done'\"'\"' > b.txt'", &repo.root, Some("another-session"));
    wait_exec(other.id(), "eval");
    let v = repo.json(&["procs", "--json"]);
    let get = |v: &Value, id: &str| {
        v.as_array().unwrap().iter().find(|p| p["id"] == id).cloned().unwrap_or_else(|| panic!("{id}: {v:#}"))
    };
    let bgq = get(&v, "toolu_BGQ");
    assert_eq!(bgq["state"], "running", "{v:#}");
    let pids: Vec<u64> = bgq["pids"].as_array().unwrap().iter().map(|p| p.as_u64().unwrap()).collect();
    assert!(pids.contains(&u64::from(child.id())), "{bgq:#}");
    assert!(!pids.contains(&u64::from(other.id())), "another session's process: {bgq:#}");
    assert_eq!(bgq["restartable"], false, "it runs");
    let one = get(&v, "toolu_ONE");
    assert_eq!((one["state"].as_str(), one["reported"].as_str()), (Some("not_running"), Some("ended")), "{one:#}");
    assert_eq!(one["restartable"], false, "a finished one-shot job");
    let fg = get(&v, "toolu_FG");
    assert_eq!((fg["kind"].as_str(), fg["restartable"].as_bool()), (Some("in_flight"), Some(false)), "{fg:#}");
    let dev = get(&v, "toolu_DEV");
    assert_eq!((dev["state"].as_str(), dev["restartable"].as_bool()), (Some("not_running"), Some(true)), "{dev:#}");
    let text = repo.ok(&["procs"]);
    assert!(text.contains("Restart one with: walj procs restart ID"), "{text}");
    // The brief offers a restart only for the dev server.
    let brief = repo.json(&["sessions", "resume", sid, "--print-only", "--json"]);
    let text = brief["brief"].as_str().unwrap();
    assert_eq!(text.matches("walj procs restart").count(), 1, "{text}");
    assert!(
        text.contains("walj procs restart toolu_DEV")
            || text.contains(&format!("walj procs restart {}", dev["short"].as_str().unwrap())),
        "{text}"
    );
    drop(_g);
    drop(_g2);
    // Once it is gone, it may be restarted.
    let _ = (child, other);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let v = repo.json(&["procs", "--json"]);
    let bgq = get(&v, "toolu_BGQ");
    assert_eq!((bgq["state"].as_str(), bgq["restartable"].as_bool()), (Some("not_running"), Some(true)), "{bgq:#}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_task_notification_marks_the_job_finished() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-00000000000e";
    hook(&repo, Parent::Timeout(10), &payload(sid, "SessionStart", json!({"source": "startup"})));
    bash(&repo, sid, "toolu_TN", "make release", true, "bash_7", true);
    let v = repo.json(&["procs", "--json"]);
    assert_eq!(v[0]["restartable"], true, "{v:#}");
    // Not running, never reported finished: killed or finished, which walj cannot tell.
    let text = repo.ok(&["procs"]);
    assert!(text.contains("restartable (unless it finished: Claude Code did not say)"), "{text}");
    // The session crashed before a Stop, but the notification came first.
    prompt(
        &repo,
        Parent::Timeout(10),
        sid,
        "<task-notification>\n<task-id>bash_7</task-id>\n<tool-use-id>toolu_TN</tool-use-id>\n<status>failed</status>\n<summary>Background command \"make release\" failed with exit code 2</summary>\n</task-notification>",
        "p-2",
    );
    let v = repo.json(&["procs", "--json"]);
    assert_eq!((v[0]["reported"].as_str(), v[0]["restartable"].as_bool()), (Some("failed"), Some(false)), "{v:#}");
}

/// Pids of processes whose command line is exactly `cmdline`.
fn pids_running(cmdline: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let raw = fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&raw).replace('\0', " ").trim_end() == cmdline {
            out.push(pid);
        }
    }
    out
}

#[cfg(target_os = "linux")]
#[test]
fn a_process_the_call_left_under_another_name_is_found_by_the_session_marker() {
    // A command that leaves a daemon behind under another command line: the text is in no
    // command line; the session marker, the start time and the re-parenting tell. The test
    // process stands for Claude Code (the hooks' parent): its own children (hooks, tools,
    // later calls) are never taken for the call's leftovers.
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-00000000000f";
    hook(&repo, Parent::Test, &payload(sid, "SessionStart", json!({"source": "startup"})));
    let input = json!({"command": "./serve.sh --daemon", "run_in_background": true});
    hook(
        &repo,
        Parent::Test,
        &payload(sid, "PreToolUse", json!({"tool_name": "Bash", "tool_use_id": "toolu_D", "tool_input": input})),
    );
    hook(
        &repo,
        Parent::Test,
        &payload(
            sid,
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "toolu_D", "tool_input": input,
                                            "tool_response": {"stdout": "", "backgroundTaskId": "bash_8"}}),
        ),
    );
    let (child, _g) =
        spawn_group("(exec -a walj-test-daemon sleep 304 &); exec -a walj-test-hook sleep 306", &repo.root, Some(sid));
    wait_exec(child.id(), "walj-test-hook");
    let daemon = (0..200)
        .find_map(|_| {
            let p = pids_running("walj-test-daemon 304");
            if p.is_empty() {
                std::thread::sleep(std::time::Duration::from_millis(10));
                None
            } else {
                Some(p)
            }
        })
        .unwrap_or_else(|| panic!("the daemon never started"));
    let v = repo.json(&["procs", "--json"]);
    claude_kill(&daemon);
    assert_eq!(v[0]["state"], "running", "{v:#}");
    assert_eq!(v[0]["pids"], json!(daemon), "only the re-parented daemon, not Claude Code's child: {v:#}");
    // Without the marker (another user's process, or none set) nothing ties it to the call.
    drop(_g);
    let (child, _g) =
        spawn_group("(exec -a walj-test-daemon sleep 305 &); exec -a walj-test-hook sleep 307", &repo.root, None);
    wait_exec(child.id(), "walj-test-hook");
    std::thread::sleep(std::time::Duration::from_millis(100));
    let v = repo.json(&["procs", "--json"]);
    claude_kill(&pids_running("walj-test-daemon 305"));
    assert_eq!(v[0]["state"], "not_running", "{v:#}");
}

fn claude_kill(pids: &[u32]) {
    for p in pids {
        let _ = StdCommand::new("kill").args(["-KILL", &p.to_string()]).status();
    }
}

#[cfg(target_os = "linux")]
#[test]
fn restarting_a_command_that_still_runs_is_refused() {
    let repo = repo();
    let sid = "e5c00000-0000-4000-8000-000000000006";
    hook(&repo, Parent::Timeout(10), &payload(sid, "SessionStart", json!({"source": "startup"})));
    bash(&repo, sid, "toolu_R", "sleep 303", true, "bash_9", true);
    let (child, _g) = spawn_group("exec sleep 303", &repo.root, None);
    wait_exec(child.id(), "303");
    let out = repo.walj(&["procs", "restart", "toolu_R", "--yes"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("still runs"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!repo.root.join(".walj/procs").exists(), "something was started");
}
