//! A Stop's `background_tasks` (payload shapes recorded from Claude Code 2.1.328 with an async
//! subagent and a `run_in_background` command): a subagent's outcome when no SubagentStop came
//! (a later Stop no longer lists it, or its `<task-notification>`), and background commands
//! still running at the Stop named in `recover --json` (`background`) and in the next
//! session's note.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::path::Path;

use crate::common::{Parent, Repo, hook_ok, walj_at};
use serde_json::{Value, json};

const S: &str = "5c5c5c5c-stop-tasks-session";
/// Claude Code's agent id of the subagent (the `Agent` call's result names it).
const AGENT: &str = "a1c6aa99e2bd84b54";
const TASK: &str = "btl1asvi0";
const DEV: &str = "npm run dev -- --port 5173";

fn hook(root: &Path, payload: &Value) -> String {
    let out = hook_ok(root, &payload.to_string(), Parent::Timeout(20));
    let errors = root.join(".walj/errors.log");
    assert!(!errors.exists(), "hook errors: {}", fs::read_to_string(errors).unwrap_or_default());
    out
}

fn base(root: &Path, event: &str) -> Value {
    json!({"session_id": S, "transcript_path": "/tmp/none.jsonl", "cwd": root, "hook_event_name": event,
           "permission_mode": "acceptEdits"})
}

fn with(mut v: Value, extra: Value) -> Value {
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// The first turn: the Agent call launched in the background, the subagent's command, a
/// background dev server, and the Stop listing both as running.
fn first_turn(root: &Path) {
    hook(root, &with(base(root, "SessionStart"), json!({"source": "startup"})));
    hook(root, &with(base(root, "UserPromptSubmit"), json!({"prompt": "Run both"})));
    let agent_input = json!({"description": "write the sub log", "prompt": "write sub.log, then wait",
                             "subagent_type": "general-purpose"});
    let agent = json!({"tool_name": "Agent", "tool_use_id": "toolu_agent", "tool_input": agent_input});
    hook(root, &with(base(root, "PreToolUse"), agent.clone()));
    hook(
        root,
        &with(
            with(base(root, "PostToolUse"), agent),
            json!({"tool_response": {"isAsync": true, "status": "async_launched", "agentId": AGENT,
                                     "description": "write the sub log", "canReadOutputFile": true}}),
        ),
    );
    let sub = json!({"tool_name": "Bash", "tool_use_id": "toolu_sub", "agent_id": AGENT, "agent_type": "general-purpose",
                     "tool_input": {"command": "echo s > sub.log; sleep 3", "description": "Sub"}});
    hook(root, &with(base(root, "PreToolUse"), sub.clone()));
    fs::write(root.join("sub.log"), "s\n").unwrap();
    hook(
        root,
        &with(
            with(base(root, "PostToolUse"), sub),
            json!({"tool_response": {"stdout": "", "stderr": "", "interrupted": false}}),
        ),
    );
    let dev = json!({"tool_name": "Bash", "tool_use_id": "toolu_dev",
                     "tool_input": {"command": DEV, "description": "Dev server", "run_in_background": true}});
    hook(root, &with(base(root, "PreToolUse"), dev.clone()));
    hook(
        root,
        &with(
            with(base(root, "PostToolUse"), dev),
            json!({"tool_response": {"stdout": "", "stderr": "", "interrupted": false, "backgroundTaskId": TASK}}),
        ),
    );
    hook(root, &stop(root, json!([running_agent(), running_dev()])));
}

fn running_agent() -> Value {
    json!({"id": AGENT, "type": "subagent", "status": "running", "description": "write the sub log",
           "agent_type": "general-purpose"})
}

fn running_dev() -> Value {
    json!({"id": TASK, "type": "shell", "status": "running", "description": "Dev server", "command": DEV})
}

fn stop(root: &Path, tasks: Value) -> Value {
    with(
        base(root, "Stop"),
        json!({"stop_hook_active": false, "last_assistant_message": "main done", "session_crons": [],
               "background_tasks": tasks}),
    )
}

/// `walj sessions show S --json`.
fn show(root: &Path) -> Value {
    let out = walj_at(root).args(["sessions", "show", S, "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn subagent(root: &Path) -> Value {
    let v = show(root);
    let subs = v["subagents"].as_array().unwrap_or_else(|| panic!("no subagents: {v:#}"));
    assert_eq!(subs.len(), 1, "{v:#}");
    subs[0].clone()
}

#[test]
fn a_subagent_no_later_stop_lists_has_ended_without_its_subagent_stop() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    first_turn(&root);
    // Listed running at the Stop: not ended.
    let a = subagent(&root);
    assert_eq!((&a["agent_id"], &a["call"], &a["background"]), (&json!(AGENT), &json!("toolu_agent"), &json!(true)));
    assert!(a.get("ended").is_none_or(Value::is_null), "{a}");
    // The next turn's Stop no longer lists it (and no SubagentStop ever came): it ended.
    hook(&root, &with(base(&root, "UserPromptSubmit"), json!({"prompt": "and now?"})));
    hook(&root, &stop(&root, json!([running_dev()])));
    let a = subagent(&root);
    assert_eq!(a["ended"][1], "ended", "{a}");
}

#[test]
fn a_subagents_task_notification_is_its_outcome() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    first_turn(&root);
    let note = format!(
        "<task-notification>\n<task-id>{AGENT}</task-id>\n<tool-use-id>toolu_agent</tool-use-id>\n\
         <output-file>/tmp/x/tasks/{AGENT}.output</output-file>\n<status>completed</status>\n\
         <summary>Agent \"write the sub log\" finished</summary>\n<result>sub done</result>\n</task-notification>"
    );
    hook(&root, &with(base(&root, "UserPromptSubmit"), json!({"prompt": note})));
    let a = subagent(&root);
    assert_eq!(a["ended"][1], "completed", "{a}");
}

#[test]
fn a_background_command_running_at_the_last_stop_is_named_after_a_crash() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    first_turn(&root);
    // A second turn cut off by the crash: a Write that never got its Post.
    hook(&root, &with(base(&root, "UserPromptSubmit"), json!({"prompt": "write the server"})));
    let abs = root.join("server.rs");
    hook(
        &root,
        &with(
            base(&root, "PreToolUse"),
            json!({"tool_name": "Write", "tool_use_id": "toolu_w", "tool_input": {"file_path": abs, "content": "fn main() {}\n"}}),
        ),
    );
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &rec["sessions"][0];
    assert_eq!(s["session"], S, "{rec:#}");
    let bg = s["background"].as_array().unwrap_or_else(|| panic!("no background: {rec:#}"));
    assert_eq!(bg.len(), 1, "{rec:#}");
    assert_eq!((&bg[0]["id"], &bg[0]["task_id"], &bg[0]["command"]), (&json!("toolu_dev"), &json!(TASK), &json!(DEV)));
    // Claude Code said it ran; no such process runs here.
    assert_eq!((&bg[0]["reported"], &bg[0]["state"]), (&json!("running"), &json!("not_running")), "{rec:#}");
    // The subagent's command is no background process.
    assert!(!rec.to_string().contains("\"id\":\"toolu_sub\",\"task_id\""), "{rec:#}");

    // The next session's note names the dev server.
    let start = json!({"session_id": "6d6d6d6d-next", "transcript_path": "/tmp/none.jsonl", "cwd": root,
                       "hook_event_name": "SessionStart", "source": "startup"});
    let out = hook(&root, &start);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(
        ctx.contains(&format!(
            "- background command `{DEV}` (task {TASK}): not reported finished when the session stopped; it may still run"
        )),
        "{ctx}"
    );
    assert!(ctx.contains("- server.rs ("), "{ctx}");
}

/// Claude Code 2.1.329 lists a Monitor's script with type `monitor` (it was `shell`): walj
/// reads it as it reads a shell task. The same session with each type gives the same
/// `procs --json`, naming the script.
#[test]
fn a_monitor_background_task_is_read_like_a_shell_one() {
    let run = |ty: &str| -> Value {
        let repo = Repo::new(&[("keep.txt", "k\n")]);
        let root = repo.root.clone();
        hook(&root, &with(base(&root, "SessionStart"), json!({"source": "startup"})));
        hook(&root, &with(base(&root, "UserPromptSubmit"), json!({"prompt": "watch the build"})));
        let task = json!({"id": "bmon1x2y3", "type": ty, "status": "running", "description": "Watch the build",
                          "command": "tail -f build.log | grep --line-buffered ERROR"});
        hook(&root, &stop(&root, json!([task])));
        let out = walj_at(&root).args(["procs", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let procs: Value = serde_json::from_slice(&out.stdout).unwrap();
        serde_json::from_str(&procs.to_string().replace(root.to_str().unwrap(), "ROOT")).unwrap()
    };
    let shell = run("shell");
    let monitor = run("monitor");
    let text = shell.to_string();
    assert!(text.contains("tail -f build.log") && text.contains("bmon1x2y3"), "{shell:#}");
    assert_eq!(strip_times(&monitor), strip_times(&shell));
}

/// `v` without its `started`/`ts` fields (times of the run).
fn strip_times(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "started" | "ts"))
                .map(|(k, x)| (k.clone(), strip_times(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_times).collect()),
        other => other.clone(),
    }
}
