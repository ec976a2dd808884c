//! The proposal's own recovery script (`proposal_recover.py`, from
//! ../shared/bench) on a v2 journal written by walj's hook. It runs and reads every line; what
//! it reports differs from `walj recover` exactly as the README says: it counts every line
//! whose `persisted` is false (walj never rewrites a line, an entry settles by a later
//! `persisted` record), so settled entries' `intent`/`applied` lines and session records are
//! listed too.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::path::PathBuf;
use std::process::Command;

use crate::common::{Parent, Repo, hook_ok};
use serde_json::json;

fn script() -> PathBuf {
    crate::common::fixtures().join("../bench/proposal_recover.py")
}

fn python_or_skip() -> bool {
    if Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success()) && script().is_file() {
        return true;
    }
    assert!(std::env::var("WALJ_E2E_REQUIRE").as_deref() != Ok("1"), "python3 and {} are required", script().display());
    eprintln!("SKIPPED: python3 or {} is missing", script().display());
    false
}

#[test]
fn the_proposals_recovery_script_reads_a_v2_journal() {
    if !python_or_skip() {
        return;
    }
    let repo = Repo::new(&[("done.txt", "old\n"), ("open.txt", "old\n")]);
    let sid = "c0a1c0a1-0000-4000-8000-000000000001";
    let p = Parent::Timeout(10);
    let send = |v: serde_json::Value| {
        let mut v = v;
        v["session_id"] = json!(sid);
        v["cwd"] = json!(repo.root);
        hook_ok(&repo.root, &v.to_string(), p);
    };
    let write = |id: &str, rel: &str| {
        let input = json!({"file_path": repo.root.join(rel), "content": "new\n"});
        send(json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": id, "tool_input": input}));
        repo.write(rel, "new\n");
        send(json!({"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": id, "tool_input": input,
                    "tool_response": {"type": "update"}}));
    };
    send(json!({"hook_event_name": "SessionStart", "source": "startup"}));
    send(json!({"hook_event_name": "UserPromptSubmit", "prompt": "one", "prompt_id": "p-1"}));
    write("toolu_DONE", "done.txt");
    send(json!({"hook_event_name": "Stop"}));
    send(json!({"hook_event_name": "UserPromptSubmit", "prompt": "two", "prompt_id": "p-2"}));
    write("toolu_OPEN", "open.txt");
    // Killed here: walj reports one unresolved entry.
    let walj = repo.json(&["recover", "--json"]);
    assert_eq!(walj["unresolved"], 1, "{walj:#}");

    let out = Command::new("python3").arg(script()).arg(repo.journal()).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr, "", "the script skipped lines of walj's journal");
    println!("{stdout}");
    // Every line but the `persisted` ones counts as unpersisted for it.
    let records = repo.records();
    let unpersisted = records.iter().filter(|r| r["persisted"] != true).count();
    assert!(
        stdout.starts_with(&format!("Recovery: {unpersisted} unpersisted entries found:")),
        "{stdout}\n{} records",
        records.len()
    );
    // Grouped by event: the file events, and the session records under `session`.
    for group in ["file_modified", "session"] {
        assert!(stdout.contains(&format!("  {group}: ")), "{group}: {stdout}");
    }
    // The unresolved entry is listed, and so is the one walj verified at the Stop.
    assert!(stdout.contains("- open.txt ("), "{stdout}");
    assert!(stdout.contains("- done.txt ("), "{stdout}");
    assert!(records.iter().any(|r| r["op"] == "persisted" && r["id"] == "toolu_DONE"));
}
