//! Issue 11: a crash stays a crash. A scheduled checkpoint records what it verified but never
//! settles an entry of a turn that never reached its Stop; entries the user resolved are never
//! listed as drifted. Through the real binary and recorded hook payloads.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

mod common;

use common::{Locate, Parent, Repo, hook_ok, walj_at};
use serde_json::{Value, json};
use std::fs;

fn hook(repo: &Repo, input: &str) -> (i32, String, String) {
    repo.hook_run(input, Parent::Timeout(20), Locate::Folder)
}

fn crashed_repo() -> Repo {
    let repo = Repo::fixture_in("p", "hooks/crash-mid-write/project");
    common::replay_crash_mid_write(&repo, false, |p| assert_eq!(hook(&repo, p).0, 0));
    repo
}

#[test]
fn a_checkpoint_never_erases_a_crash() {
    let repo = crashed_repo();
    assert_eq!(repo.json(&["recover", "--json"])["unresolved"], 2);
    let c = repo.json(&["checkpoint", "--json"]);
    // The Edit's post-image is on disk: verified, not persisted (its turn never finished).
    assert_eq!(c["persisted"], 0, "{c:#}");
    assert_eq!(c["verified"], 1, "{c:#}");
    let r = repo.json(&["recover", "--json"]);
    assert_eq!(r["unresolved"], 2, "{r:#}");
    let e =
        r["sessions"][0]["entries"].as_array().unwrap().iter().find(|e| e["path"] == "config/settings.json").cloned();
    let e = e.unwrap();
    assert_eq!(e["status"], "applied", "{e:#}");
    assert!(e["verified"].is_string(), "{e:#}");
    let (_, text, _) = repo.run(&["recover"]);
    assert!(text.contains("on disk, verified"), "{text}");
    // Idempotent: a second run records nothing new and still leaves the crash.
    let n = repo.records().len();
    let c = repo.json(&["checkpoint", "--json"]);
    assert_eq!(c["verified"], 1);
    assert_eq!(repo.records().iter().filter(|l| l["op"] == "verified").count(), 1);
    assert_eq!(repo.records().len(), n + 1, "only the audit line is new");
    assert_eq!(repo.json(&["recover", "--json"])["unresolved"], 2);
    // The next session is still told.
    let start = repo.start_payload("11111111-2222-3333-4444-555555555555");
    let (code, out, _) = hook(&repo, &start);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object on stdout");
    assert!(v["systemMessage"].as_str().unwrap().contains("2 changes"), "{v}");
}

#[test]
fn a_checkpoint_still_detects_drift_but_not_on_resolved_entries() {
    let repo = crashed_repo();
    repo.write("config/settings.json", "{\"retries\": 9}\n");
    let c = repo.json(&["checkpoint", "--json"]);
    assert_eq!(c["drifted"], serde_json::json!(["config/settings.json"]), "{c:#}");
    // The user marks it done: a later checkpoint does not list it.
    let r = repo.json(&["recover", "--json"]);
    let id = r["sessions"][0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "config/settings.json")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _, err) = repo.run(&["mark", &id, "--done"]);
    assert_eq!(code, 0, "{err}");
    let c = repo.json(&["checkpoint", "--json"]);
    assert_eq!(c["drifted"], serde_json::json!([]), "{c:#}");
}

/// A file tool call without an outcome (the crash came between PreToolUse and PostToolUse):
/// the report compares the disk with the content the call meant to write.
#[test]
fn an_in_flight_write_reports_whether_the_disk_holds_its_intended_content() {
    for (disk, want) in [(Some("pub fn serve() {}\n"), "completed"), (None, "unchanged"), (Some("pub fn se"), "other")]
    {
        let repo = Repo::new(&[("README.md", "hello\n")]);
        let root = &repo.root;
        let pre = json!({
            "hook_event_name": "PreToolUse", "session_id": "5e551011-inflight", "cwd": root,
            "tool_name": "Write", "tool_use_id": "toolu_w",
            "tool_input": {"file_path": root.join("src/server.rs"), "content": "pub fn serve() {}\n"},
        });
        hook_ok(root, &pre.to_string(), Parent::Timeout(20));
        if let Some(d) = disk {
            fs::create_dir_all(root.join("src")).unwrap();
            fs::write(root.join("src/server.rs"), d).unwrap();
        }
        let out = walj_at(root).args(["recover", "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &v["sessions"][0]["entries"][0];
        assert_eq!((e["status"].as_str(), e["disk"].as_str()), (Some("in_flight"), Some(want)), "{v:#}");
        assert_eq!(e["intended"], walj::store::blob_id(b"pub fn serve() {}\n"));
    }
}
