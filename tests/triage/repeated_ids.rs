//! Tool-call ids are unique within a session only: imports from other agents and old
//! transcripts repeat them across sessions. Entries are keyed by session and id.

use serde_json::Value;

use crate::common::{Claude, Repo};

const A: &str = "aaaa1111-0000-4000-8000-000000000001";
const B: &str = "bbbb2222-0000-4000-8000-000000000002";

fn entries(repo: &Repo) -> Vec<Value> {
    let v: Value = serde_json::from_str(&repo.ok(&["log", "--json", "--all"])).expect("log json");
    v.as_array().expect("array").iter().filter(|e| e["id"] == "toolu_mock_3").cloned().collect()
}

/// Two sessions, one tool-call id, two files: two entries, each its own session's change
/// (neither turns `drifted`); the id alone is refused naming both; `SESSION/ID` picks one.
#[test]
fn the_same_id_in_two_sessions_is_two_entries() {
    let repo = Repo::new(&[("a.txt", "alpha\n"), ("b.txt", "beta\n")]);
    let a = Claude::new(&repo, A);
    a.start();
    a.edit("toolu_mock_3", "a.txt", "alpha", "ALPHA");
    let b = Claude::new(&repo, B);
    b.start();
    b.edit("toolu_mock_3", "b.txt", "beta", "BETA");

    let found = entries(&repo);
    assert_eq!(found.len(), 2, "{found:#?}");
    let mut paths: Vec<&str> = found.iter().map(|e| e["path"].as_str().unwrap()).collect();
    paths.sort();
    assert_eq!(paths, ["a.txt", "b.txt"], "{found:#?}");
    for e in &found {
        assert_eq!(e["status"], "applied", "{e:#}");
    }

    // The id alone: refused, naming each session's entry.
    let (code, out, err) = repo.run(&["diff", "mock_3"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("ambiguous") && err.contains("aaaa11/toolu_mock_3") && err.contains("bbbb22/toolu_mock_3"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
    let (code, _, err) = repo.run(&["revert", "toolu_mock_3"]);
    assert_ne!(code, 0, "{err}");
    assert_eq!(repo.read("a.txt"), "ALPHA\n");
    assert_eq!(repo.read("b.txt"), "BETA\n");

    // One session's, by `SESSION/ID`.
    let out = repo.ok(&["diff", "aaaa11/mock_3"]);
    assert!(out.contains("a/a.txt") && out.contains("+ALPHA") && !out.contains("b.txt"), "{out}");
    repo.ok(&["revert", "bbbb2222/toolu_mock_3"]);
    assert_eq!(repo.read("b.txt"), "beta\n");
    assert_eq!(repo.read("a.txt"), "ALPHA\n", "the other session's change stays");
    let found = entries(&repo);
    let state = |path: &str| found.iter().find(|e| e["path"] == path).unwrap()["status"].clone();
    assert_eq!((state("a.txt"), state("b.txt")), ("applied".into(), "reverted".into()), "{found:#?}");
}
