//! Commands that change files or resolve entries, run inside a Claude Code tool call
//! (`CLAUDECODE=1`, as Claude Code 2.1.328 sets for its Bash tool), refuse without `--yes` and,
//! with it, record who acted (`actor: "claude"`). Through the real binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::common::{Claude, Repo, outcome};
use serde_json::Value;

const SESSION: &str = "5e55a0b1-0000-4000-8000-000000000001";
const NUMBERS: &str = "one\ntwo\nthree\n";

fn in_claude(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    outcome(&repo.walj(args).env("CLAUDECODE", "1").output().unwrap())
}

fn resolved(repo: &Repo) -> Vec<Value> {
    repo.records().into_iter().filter(|r| r["op"] == "resolved").collect()
}

#[test]
fn changing_commands_refuse_in_a_tool_call_without_yes_and_change_nothing() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    let before = repo.journal_bytes();
    let cases: &[&[&str]] = &[
        &["mark", "toolu_A", "--done"],
        &["revert", "toolu_A"],
        &["undo"],
        &["handoff"],
        &["checkpoint"],
        &["compact"],
        &["install"],
        &["sessions", "delete", SESSION],
        &["sessions", "resume", SESSION],
    ];
    for args in cases {
        let (code, out, err) = in_claude(&repo, args);
        assert_eq!(code, 3, "walj {args:?}: {out}\n{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains("refused") && err.contains("--yes") && err.contains("Claude Code"), "{err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(repo.journal_bytes(), before, "walj {args:?} changed the journal");
    }
    assert_eq!(repo.read("f.txt"), "one\nTWO\nthree\n");
    assert!(!repo.exists(".claude/settings.json"));
    // Read-only commands and dry runs still run.
    for args in [&["recover"][..], &["log"], &["status"], &["revert", "toolu_A", "--dry-run"], &["handoff", "--print"]]
    {
        let (code, out, err) = in_claude(&repo, args);
        assert_eq!(code, 0, "walj {args:?}: {out}\n{err}");
    }
    assert_eq!(repo.journal_bytes(), before);
}

#[test]
fn with_yes_claude_is_recorded_as_the_actor_and_a_terminal_user_is_not() {
    let repo = Repo::new(&[("f.txt", NUMBERS), ("g.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.edit("toolu_B", "g.txt", "two", "TWO");
    let (code, out, err) = in_claude(&repo, &["mark", "toolu_A", "--done", "--yes"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("marked A (f.txt) done"), "{out}");
    let r = resolved(&repo);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["actor"], "claude", "{:?}", r[0]);
    // The same command from a terminal: no actor.
    repo.ok(&["mark", "toolu_B", "--done"]);
    let r = resolved(&repo);
    assert_eq!(r.len(), 2);
    assert_eq!(r[1]["id"], "toolu_B");
    assert!(r[1].get("actor").is_none(), "{:?}", r[1]);
    // Claude's revert with -y: the file is back, the record names Claude.
    let (code, out, err) = in_claude(&repo, &["undo", "-y"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let undo: Vec<Value> = repo.records().into_iter().filter(|r| r["op"] == "undo").collect();
    assert_eq!(undo.len(), 1);
    assert_eq!(undo[0]["actor"], "claude");
}
