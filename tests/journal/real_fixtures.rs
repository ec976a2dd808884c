//! Real Claude Code payloads replayed through `walj hook`, without the CLI: the recording of a
//! clean session of Claude Code 2.1.328 (`tests/fixtures/real-2.1.328-clean/`, made by
//! `scripts/record-fixtures.sh`; see docs/e2e.md). The same properties as the end-to-end
//! scenarios of `tests/e2e/walj.rs`, for machines where the real CLI cannot be installed.
//!
//! The session: TaskCreate ×2 (one turn), Edit, Write + Edit (one turn), a failing Bash
//! (`exit 3` → PostToolUseFailure), a Bash, TaskUpdate, a Bash denied by a `permissions.deny`
//! rule (PreToolUse only), Stop, SessionEnd.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::path::Path;

use crate::common::{Locate, Parent, Repo};
use serde_json::{Value, json};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/real-2.1.328-clean");

/// The project (`<tmp>/project`, the recording's files before the session, committed) and
/// a home (`<tmp>/home`).
fn project() -> Repo {
    let repo = Repo::init_in("project").with_home();
    for (rel, content) in meta()["files_before"].as_object().unwrap() {
        repo.write(rel, content.as_str().unwrap());
    }
    repo.commit("initial");
    repo
}

/// A recorded payload with its placeholders replaced.
fn payload(repo: &Repo, name: &str) -> String {
    repo.subst(&fs::read_to_string(Path::new(FIXTURE).join("hooks").join(name)).unwrap())
}

/// `walj hook` on one payload, under a short-lived parent (`timeout`), as Claude Code
/// runs it under its own process. Returns (exit code, stdout, stderr).
fn hook(repo: &Repo, payload: &str) -> (i32, String, String) {
    repo.hook_run(payload, Parent::Timeout(10), Locate::Flag)
}

/// What the tool did, done to the files (between its PreToolUse and PostToolUse).
fn apply(p: &Value) {
    let input = &p["tool_input"];
    let Some(path) = input["file_path"].as_str() else { return };
    match p["tool_name"].as_str() {
        Some("Write") => fs::write(path, input["content"].as_str().unwrap()).unwrap(),
        Some("Edit") => {
            let old = fs::read_to_string(path).unwrap();
            let new = old.replacen(input["old_string"].as_str().unwrap(), input["new_string"].as_str().unwrap(), 1);
            fs::write(path, new).unwrap();
        }
        _ => {}
    }
}

/// The journal's lines, each with a valid checksum.
fn journal(repo: &Repo) -> Vec<Value> {
    let text = fs::read_to_string(repo.journal()).unwrap();
    text.lines()
        .map(|l| {
            assert_eq!(walj::journal::record::check_crc(l.as_bytes()), Some(true), "{l}");
            serde_json::from_str(l).unwrap()
        })
        .collect()
}

fn meta() -> Value {
    serde_json::from_str(&fs::read_to_string(Path::new(FIXTURE).join("meta.json")).unwrap()).unwrap()
}

#[test]
fn recorded_clean_session_replays_to_nothing_unresolved() {
    let r = project();
    let meta = meta();
    assert_eq!(meta["claude_code_version"], "2.1.328");
    let mut files: Vec<String> =
        meta["hook_payloads"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    files.sort();
    for name in &files {
        let text = payload(&r, name);
        let p: Value = serde_json::from_str(&text).unwrap();
        if p["hook_event_name"] == "PostToolUse" {
            apply(&p);
        }
        let (code, stdout, stderr) = hook(&r, &text);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(stdout.trim().is_empty(), "{name} printed: {stdout}");
        assert!(stderr.trim().is_empty(), "{name}: {stderr}");
    }
    // The files as the real session left them.
    for (rel, content) in meta["files_after"].as_object().unwrap() {
        if rel.ends_with(".log") {
            continue; // written by the Bash calls, which are not replayed
        }
        assert_eq!(fs::read_to_string(r.root.join(rel)).unwrap(), content.as_str().unwrap(), "{rel}");
    }

    assert_eq!(r.json(&["recover", "--json"]), json!({"unresolved": 0, "handed_back_waiting": 0, "sessions": []}));
    let status = r.json(&["status", "--json"]);
    assert_eq!(status["sessions"], json!({"ended": 1}), "{status}");
    let journal = journal(&r);
    let find = |op: &str, id: &str| journal.iter().filter(|l| l["op"] == op && l["id"] == id).collect::<Vec<_>>();
    // Files: intent, applied (post-image = git hash-object of the file now), persisted at Stop.
    for (id, rel) in [
        ("toolu_mock_1_0", "config/settings.json"),
        ("toolu_mock_2_0", "src/server.rs"),
        ("toolu_mock_2_1", "src/main.rs"),
    ] {
        assert_eq!(find("intent", id).len(), 1, "{id}");
        let applied = find("applied", id);
        assert_eq!(applied.len(), 1, "{id}");
        assert_eq!(applied[0]["after"], r.git(&["hash-object", rel]).trim(), "{id} {rel}");
        assert_eq!(find("persisted", id).len(), 1, "{id}");
    }
    // Commands: the failing one failed, the working one applied, the denied one settled at Stop.
    assert_eq!(find("failed", "toolu_mock_3_0").len(), 1);
    assert_eq!(find("applied", "toolu_mock_4_0").len(), 1);
    let denied = find("resolved", "toolu_mock_6_0");
    assert_eq!(denied.len(), 1, "the denied Bash was not settled at Stop");
    assert_eq!(denied[0]["how"], "not_applied");
    assert_eq!(denied[0]["tool"], "Bash");

    let fold = walj::fold::Fold::load(
        &r.root.join(".walj/journal.jsonl"),
        &walj::fold::FoldOptions { all_commands: true, ..Default::default() },
    )
    .unwrap();
    let s = &fold.sessions[0];
    let todos: Vec<(Option<&str>, &str)> = s.todos.iter().map(|t| (t.id.as_deref(), t.status.as_str())).collect();
    assert_eq!(todos, [(Some("1"), "completed"), (Some("2"), "pending")]);
    let commands: Vec<(&str, walj::fold::CommandStatus)> =
        s.commands.iter().map(|c| (c.id.as_str(), c.status)).collect();
    use walj::fold::CommandStatus::{Failed, Ok as Done};
    assert_eq!(commands, [("toolu_mock_3_0", Failed), ("toolu_mock_4_0", Done), ("toolu_mock_6_0", Failed)]);
    assert!(s.commands[2].error.as_deref().unwrap_or("").contains("not run"), "{:?}", s.commands[2]);
    assert!(!r.root.join(".walj/errors.log").exists());
}
