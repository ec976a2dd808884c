//! Who made a change while a Bash command ran: another session's journaled writes are never
//! the command's; a change made while another command's window was open is listed once,
//! `attribution: uncertain`, naming the other command; a change made while only this
//! command ran stays certain. Through the real binary as the hook, in real git repositories,
//! with real shell writes between the hook events.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use common::{Parent, Repo, hook_ok, walj_at};
use serde_json::{Value, json};

const A: &str = "a0a0a0a0-attribution-session-a";
const B: &str = "b1b1b1b1-attribution-session-b";

fn hook(root: &Path, payload: &Value) {
    let out = hook_ok(root, &payload.to_string(), Parent::Timeout(20));
    assert_eq!(out, "", "walj hook printed");
    let errors = root.join(".walj/errors.log");
    assert!(!errors.exists(), "hook errors: {}", fs::read_to_string(errors).unwrap_or_default());
}

fn bash(root: &Path, session: &str, event: &str, id: &str, command: &str) {
    let mut p = json!({
        "hook_event_name": event, "session_id": session, "transcript_path": "/tmp/none.jsonl",
        "cwd": root, "tool_name": "Bash", "tool_use_id": id,
        "tool_input": {"command": command, "description": "test"},
    });
    if event == "PostToolUse" {
        p["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
    }
    hook(root, &p);
}

/// A Write by `session`, journaled (Pre, the write, Post), as Claude Code's Write tool does.
fn write_tool(root: &Path, session: &str, id: &str, rel: &str, content: &str) {
    let abs = root.join(rel);
    let input = json!({"file_path": abs, "content": content});
    let base = json!({"session_id": session, "transcript_path": "/tmp/none.jsonl", "cwd": root,
                      "tool_name": "Write", "tool_use_id": id, "tool_input": input});
    let mut pre = base.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    hook(root, &pre);
    fs::write(&abs, content).unwrap();
    let mut post = base;
    post["hook_event_name"] = json!("PostToolUse");
    post["tool_response"] = json!({"type": "create", "filePath": abs, "content": content, "originalFile": null});
    hook(root, &post);
}

/// A gap that puts a later ctime (and a later journal timestamp) after what came before.
fn tick() {
    std::thread::sleep(Duration::from_millis(30));
}

/// The journal's child records of command `parent`, by path.
fn children(repo: &Repo, parent: &str) -> BTreeMap<String, Value> {
    repo.records()
        .into_iter()
        .filter(|r| r["parent"] == parent && r["op"] == "applied")
        .map(|r| (r["path"].as_str().unwrap().to_string(), r))
        .collect()
}

#[test]
fn another_sessions_journaled_write_is_not_a_finished_commands_and_the_rest_is_uncertain_only_after_it_began() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    bash(&root, A, "PreToolUse", "toolu_cmdA", "make");
    fs::write(root.join("early.out"), "made while only the command ran\n").unwrap();
    tick();
    // Session B writes while A's command runs: journaled, so B's.
    write_tool(&root, B, "toolu_writeB", "b.txt", "from B\n");
    tick();
    // Nothing journals this one, and B was active: may be anyone's.
    fs::write(root.join("late.out"), "made after B became active\n").unwrap();
    bash(&root, A, "PostToolUse", "toolu_cmdA", "make");

    let c = children(&repo, "toolu_cmdA");
    assert_eq!(c.keys().collect::<Vec<_>>(), ["early.out", "late.out"], "{c:?}");
    assert!(c["early.out"].get("attribution").is_none(), "made while only A ran: certain: {c:?}");
    assert_eq!(c["late.out"]["attribution"], "uncertain", "{c:?}");
    assert!(c["late.out"].get("candidates").is_none(), "no other command was open: {c:?}");
    // recover lists b.txt nowhere as A's, and says which of A's is uncertain.
    let out = walj_at(&root).args(["log", "--json", "--all"]).output().unwrap();
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    let b_entries: Vec<&Value> = log.as_array().unwrap().iter().filter(|e| e["path"] == "b.txt").collect();
    assert_eq!(b_entries.len(), 1, "b.txt is one entry, B's Write: {log}");
    assert_eq!(b_entries[0]["tool"], "Write", "{log}");
}

#[test]
fn two_overlapping_commands_list_a_change_once_naming_the_other() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    bash(&root, A, "PreToolUse", "toolu_cmdA", "build");
    fs::write(root.join("before_b.out"), "A alone\n").unwrap();
    tick();
    // Another session's command starts while A's runs (an async subagent is the same case
    // inside one session).
    bash(&root, B, "PreToolUse", "toolu_cmdB", "test");
    tick();
    fs::write(root.join("both.out"), "either\n").unwrap();
    bash(&root, A, "PostToolUse", "toolu_cmdA", "build");
    bash(&root, B, "PostToolUse", "toolu_cmdB", "test");

    let a = children(&repo, "toolu_cmdA");
    let b = children(&repo, "toolu_cmdB");
    assert_eq!(a.keys().collect::<Vec<_>>(), ["before_b.out", "both.out"], "{a:?}");
    assert!(a["before_b.out"].get("attribution").is_none(), "made before B began: certain: {a:?}");
    assert_eq!(a["both.out"]["attribution"], "uncertain", "{a:?}");
    assert_eq!(a["both.out"]["candidates"], json!(["toolu_cmdB"]), "{a:?}");
    // Never two entries for one change: B's Post finds it claimed.
    assert!(b.is_empty(), "B listed again what A's entry holds: {b:?}");
    // The JSON report names the candidates.
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = rec.to_string();
    assert!(text.contains("\"candidates\":[\"toolu_cmdB\"]"), "{text}");
}

#[test]
fn two_killed_commands_that_overlapped_list_each_change_once() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    // The main thread's command and a subagent's, both cut off by the crash (no Post). The
    // hook's parent exits at once, so the session reads as crashed.
    bash(&root, A, "PreToolUse", "toolu_main", "echo m > main.log; sleep 60");
    fs::write(root.join("only_main.out"), "before the subagent's command\n").unwrap();
    tick();
    bash(&root, A, "PreToolUse", "toolu_sub", "echo s > sub.log; sleep 60");
    tick();
    fs::write(root.join("main.log"), "m\n").unwrap();
    fs::write(root.join("sub.log"), "s\n").unwrap();

    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let main = children(&repo, "toolu_main");
    let sub = children(&repo, "toolu_sub");
    assert_eq!(main.keys().collect::<Vec<_>>(), ["main.log", "only_main.out", "sub.log"], "{main:?}");
    assert!(sub.is_empty(), "a change is listed once: {sub:?}");
    assert!(main["only_main.out"].get("attribution").is_none(), "{main:?}");
    for p in ["main.log", "sub.log"] {
        // Made after the session's last record (the subagent's Pre) and nothing watched: the
        // command's or made after Claude Code stopped, and the subagent's command may have
        // made it too.
        assert_eq!(main[p]["attribution"], "after_stop", "{main:?}");
        assert_eq!(main[p]["candidates"], json!(["toolu_sub"]), "{main:?}");
    }
    // A second reader does not add them again.
    let again = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(again.status.success());
    let all_children = repo.records().into_iter().filter(|r| r["parent"].is_string()).count();
    assert_eq!(all_children, 3, "{:?}", repo.records());
}
