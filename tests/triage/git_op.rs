//! A git operation stopped half-way (a rebase waiting on a conflict): `walj recover` and the
//! next SessionStart note name it, and `walj revert --session` / `--all` refuse to write a
//! session's pre-images into that tree unless `--force`.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::process::Command;

use crate::common::{Claude, Repo};

const SID: &str = "9e0b1a2c-0000-4000-8000-00000000feed";

/// A rebase stopped on a conflict in b.txt, then a session that edited a.txt and crashed.
fn mid_rebase() -> Repo {
    let repo = Repo::new(&[("a.txt", "a\n"), ("b.txt", "base\n")]);
    let base = repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim().to_string();
    repo.git(&["checkout", "-q", "-b", "other"]);
    repo.write("b.txt", "other\n");
    repo.commit("other");
    repo.git(&["checkout", "-q", &base]);
    repo.write("b.txt", "mine\n");
    repo.commit("mine");
    let out = Command::new("git").args(["rebase", "other"]).current_dir(&repo.root).output().unwrap();
    assert!(!out.status.success(), "the rebase should stop on the conflict: {out:?}");
    assert!(repo.root.join(".git/rebase-merge").is_dir(), "{out:?}");
    let c = Claude::new(&repo, SID);
    c.start();
    c.edit("toolu_01EditA", "a.txt", "a", "A");
    repo
}

#[test]
fn revert_session_refuses_mid_rebase_and_recover_and_the_note_name_it() {
    let repo = mid_rebase();
    let err = repo.fails(&["revert", "--session", SID, "--yes"]);
    assert!(err.contains("a rebase is in progress (.git/rebase-merge)") && err.contains("--force"), "{err}");
    assert_eq!(repo.read("a.txt"), "A\n", "reverted mid-rebase");
    let err = repo.fails(&["revert", "--all", "--yes"]);
    assert!(err.contains("a rebase is in progress"), "{err}");
    assert_eq!(repo.read("a.txt"), "A\n", "reverted mid-rebase");

    let text = repo.ok(&["recover"]);
    assert!(text.contains("git: a rebase is in progress (.git/rebase-merge)"), "{text}");
    let v = repo.json(&["recover", "--json"]);
    assert_eq!(v["git_operation"], "a rebase is in progress (.git/rebase-merge)", "{v}");

    // The next session is told, with the crash.
    let out = Claude::new(&repo, "9e0b1a2c-0000-4000-8000-00000000beef").start();
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let note = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(note.contains("- git: a rebase is in progress (.git/rebase-merge)"), "{note}");
    assert!(note.contains("a git operation in progress"), "{note}");

    // With --force, the session is reverted anyway.
    repo.ok(&["revert", "--session", SID, "--yes", "--force"]);
    assert_eq!(repo.read("a.txt"), "a\n");
}
