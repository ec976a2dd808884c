//! A hand-back carries only Claude's work: `walj handoff --session` / `--all` leave out the
//! changes walj is not sure are Claude's (made after Claude Code's last sign of life, or while
//! another writer was active), say them apart as possibly the user's, and `--json` names them.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::common::{Claude, Repo};
use walj::journal::{Blob, JournalWriter, Record, op};

const SID: &str = "7a1b2c3d-0000-4000-8000-0000000000aa";

/// A crashed session: Claude's edit of a.txt, and a killed command's two derived changes
/// walj is not sure of: README.md changed after Claude Code's last sign of life (the user's,
/// after the crash, as far as anyone knows) and notes.txt changed while another writer ran.
fn crash() -> Repo {
    let repo = Repo::new(&[("a.txt", "a\n"), ("README.md", "# shop\n"), ("notes.txt", "notes\n")]);
    let c = Claude::new(&repo, SID);
    c.start();
    c.edit("toolu_01EditA", "a.txt", "a", "A");
    repo.write("README.md", "# shop\nthe user's line\n");
    repo.write("notes.txt", "notes, edited\n");
    let w = JournalWriter::new(&repo.journal());
    let derived = |path: &str, attribution: &str, n: u32| {
        let mut r = Record::new(op::APPLIED, SID);
        r.id = format!("toolu_01Cmd:{n}");
        r.tool = Some("Bash".into());
        r.event = "file_modified".into();
        r.path = path.into();
        r.parent = Some("toolu_01Cmd".into());
        r.before = Some(Blob::Absent);
        r.after = Some(Blob::Absent);
        r.with("attribution", attribution).with("unfinished", true)
    };
    w.append_all(&[derived("README.md", "after_stop", 1), derived("notes.txt", "uncertain", 2)]).unwrap();
    repo
}

#[test]
fn handoff_session_leaves_out_what_may_be_the_users_and_json_names_it() {
    let repo = crash();
    let v = repo.json(&["recover", "--json"]);
    assert_eq!(v["unresolved"], 3, "{v:#}");

    let (code, out, err) = repo.run(&["handoff", "--session", SID, "--json", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let brief = v["brief"].as_str().unwrap();
    assert!(brief.contains("a.txt"), "{brief}");
    assert!(!brief.contains("README.md") && !brief.contains("notes.txt"), "the user's edits handed to Claude: {brief}");
    assert_eq!(v["entries"].as_array().unwrap().len(), 1, "{v:#}");
    let users = v["possibly_users"].as_array().unwrap();
    let named: Vec<(&str, &str)> =
        users.iter().map(|u| (u["path"].as_str().unwrap(), u["attribution"].as_str().unwrap())).collect();
    assert_eq!(named, [("README.md", "after_stop"), ("notes.txt", "uncertain")], "{v:#}");
    assert!(err.contains("2 entries left out of --session: possibly the user's"), "{err}");
    assert!(err.contains("(README.md): changed after Claude Code's last sign of life"), "{err}");
    // Still unresolved, for the user to decide.
    let left = repo.json(&["recover", "--json"]);
    assert_eq!(left["unresolved"], 2, "{left:#}");
}

#[test]
fn handoff_all_leaves_them_out_too() {
    let repo = crash();
    let (code, out, err) = repo.run(&["handoff", "--all", "--json", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(!v["brief"].as_str().unwrap().contains("README.md"), "{v:#}");
    assert_eq!(v["possibly_users"].as_array().unwrap().len(), 2, "{v:#}");
    assert!(err.contains("left out of --all"), "{err}");
}
