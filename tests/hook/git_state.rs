//! A command that moves git's HEAD (a branch switched, a commit made) is told as such, for a
//! finished command and for one a crash cut off; walj never moves refs itself. Through the real
//! binary as the hook, in real git repositories, with the real `git` run between the events.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::path::Path;
use std::process::Command as Std;

use crate::common::{Parent, Repo, hook_ok, walj_at};
use serde_json::{Value, json};

const SESSION: &str = "9e7a0000-git-state-session";

fn bash(root: &Path, event: &str, id: &str, command: &str) {
    let mut p = json!({
        "hook_event_name": event, "session_id": SESSION, "transcript_path": "/tmp/none.jsonl",
        "cwd": root, "tool_name": "Bash", "tool_use_id": id,
        "tool_input": {"command": command, "description": "test"},
    });
    if event == "PostToolUse" {
        p["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
    }
    assert_eq!(hook_ok(root, &p.to_string(), Parent::Timeout(20)), "");
}

fn sh(root: &Path, command: &str) {
    let ok = Std::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .status()
        .unwrap()
        .success();
    assert!(ok, "{command}");
}

fn recover(root: &Path) -> (String, Value) {
    let text = walj_at(root).arg("recover").output().unwrap();
    let json = walj_at(root).args(["recover", "--json"]).output().unwrap();
    (String::from_utf8_lossy(&text.stdout).into_owned(), serde_json::from_slice(&json.stdout).unwrap())
}

const CMD: &str = "git checkout -q -b feature && echo more >> a.txt && git commit -qam 'add more'";

#[test]
fn a_command_that_switched_branch_and_committed_is_told_with_its_commit() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let root = repo.root.clone();
    let start = repo.git(&["rev-parse", "HEAD"]);
    // A journaled start on main, then the command, finished.
    bash(&root, "PreToolUse", "toolu_ls", "ls");
    bash(&root, "PostToolUse", "toolu_ls", "ls");
    bash(&root, "PreToolUse", "toolu_git", CMD);
    sh(&root, CMD);
    bash(&root, "PostToolUse", "toolu_git", CMD);
    let new = repo.git(&["rev-parse", "HEAD"]);
    assert_ne!(start, new);
    let recs = repo.records();
    let post = recs.iter().find(|r| r["id"] == "toolu_git" && r["op"] == "applied" && r["path"] == "").unwrap();
    assert_eq!((post["branch"].as_str(), post["head"].as_str()), (Some("feature"), Some(new.trim())), "{post}");
    let pre = recs.iter().find(|r| r["id"] == "toolu_git" && r["op"] == "intent").unwrap();
    assert_eq!((pre["branch"].as_str(), pre["head"].as_str()), (Some("main"), Some(start.trim())), "{pre}");

    // The change to a.txt keeps the session unresolved, so recover shows it with the move.
    let (text, json) = recover(&root);
    assert!(text.contains("moved HEAD from main to feature, made commit"), "{text}");
    assert!(text.contains(&new.trim()[..7]) && text.contains("\"add more\""), "{text}");
    let moves = &json["sessions"][0]["git_moves"];
    assert_eq!(moves[0]["id"], "toolu_git", "{json}");
    assert_eq!(moves[0]["from"], json!({"branch": "main", "id": start.trim()}), "{json}");
    assert_eq!(moves[0]["to"], json!({"branch": "feature", "id": new.trim()}), "{json}");
    assert_eq!(moves[0]["finished"], true);
    assert_eq!(moves[0]["commits"][0]["summary"], "add more", "{json}");
    // walj moved nothing.
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), new);
    assert_eq!(repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "feature");
}

#[test]
fn a_killed_command_that_moved_head_is_told_by_what_the_disk_holds_now() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let root = repo.root.clone();
    // The session started on main; Claude Code dies while the command runs (no Post).
    bash(&root, "PreToolUse", "toolu_git", CMD);
    sh(&root, CMD);
    let new = repo.git(&["rev-parse", "HEAD"]);
    let (text, json) = recover(&root);
    assert!(text.contains("HEAD moved from main to feature, made commit"), "{text}");
    assert!(text.contains("it never finished"), "{text}");
    let m = &json["sessions"][0]["git_moves"][0];
    assert_eq!((m["finished"].as_bool(), m["to"]["id"].as_str()), (Some(false), Some(new.trim())), "{json}");
}
