//! Every action through the real binary in real git repositories: mark, revert and handoff
//! act only on what they are told (ids, `--session` or an explicit `--all`; a bare command asks
//! on a terminal and refuses off one, exit 1, naming the flag), each says how to undo what it
//! did, `--dry-run` records nothing, `--json` carries a refused conflict as
//! `outcomes[].conflict`, `walj ops` lists the operations and `walj undo`/`walj redo` take one
//! back and do it again. `recover` and `status` count handed-back entries as waiting, never as
//! an all-clear.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::{Claude, Repo, recover_marks};
use serde_json::Value;

const SESSION: &str = "5e55a0b1-0000-4000-8000-000000000001";
const NUMBERS: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";

/// A crashed session that edited f.txt and wrote g.txt: two unresolved entries.
fn crashed() -> Repo {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.prompt("number the lines");
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.write("toolu_C", "g.txt", "new file\n");
    repo
}

/// The project's files and journal, to compare before and after a command.
fn snapshot(repo: &Repo) -> (Vec<u8>, Option<String>, Option<String>) {
    let read = |rel: &str| std::fs::read_to_string(repo.path(rel)).ok();
    (repo.journal_bytes(), read("f.txt"), read("g.txt"))
}

fn unresolved(repo: &Repo) -> u64 {
    repo.json(&["recover", "--json"])["unresolved"].as_u64().unwrap()
}

/// Whether util-linux `script` can give walj a terminal (skipped with a message if not,
/// unless WALJ_E2E_REQUIRE=1).
fn script_available() -> bool {
    let ok = Command::new("script").arg("-qec").arg("true").arg("/dev/null").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var("WALJ_E2E_REQUIRE").as_deref() != Ok("1"), "script(1) is required (WALJ_E2E_REQUIRE=1)");
        eprintln!("SKIPPED: script(1) from util-linux is not installed");
    }
    ok
}

/// Runs `walj --project ROOT ARGS` on a pseudo-terminal (`script`), typing `answer`:
/// (exit code, everything the terminal showed).
fn in_pty(repo: &Repo, args: &[&str], answer: &str) -> (i32, String) {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = vec![
        quote(&crate::common::walj_bin().to_string_lossy()),
        "--project".into(),
        quote(&repo.root.to_string_lossy()),
    ];
    line.extend(args.iter().map(|a| quote(a)));
    let mut child = Command::new("script")
        .arg("-qec")
        .arg(line.join(" "))
        .arg("/dev/null")
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script runs");
    child.stdin.take().unwrap().write_all(answer.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

const BARE: [&[&str]; 3] = [&["mark", "--done"], &["revert"], &["handoff"]];

#[test]
fn a_bare_action_refuses_off_a_terminal_naming_the_flag() {
    let repo = crashed();
    let before = snapshot(&repo);
    for args in BARE {
        let (code, out, err) = repo.run(args);
        assert_eq!(code, 1, "walj {args:?}: {out}{err}");
        assert!(err.contains("--all") && err.contains("--session") && err.contains("nothing was changed"), "{err}");
        assert!(!err.contains("[y/N]"), "nothing prompts off a terminal: {err}");
        assert_eq!(snapshot(&repo), before, "walj {args:?} changed something");
    }
    // --dry-run does not make a bare command act on everything either.
    let (code, _, err) = repo.run(&["mark", "--done", "--dry-run"]);
    assert_eq!((code, err.contains("--all")), (1, true), "{err}");
    assert_eq!(snapshot(&repo), before);
    assert_eq!(unresolved(&repo), 2);
}

#[test]
fn a_bare_action_asks_on_a_terminal_and_no_changes_nothing() {
    if !script_available() {
        return;
    }
    let repo = crashed();
    let before = snapshot(&repo);
    for args in BARE {
        let (code, shown) = in_pty(&repo, args, "n\n");
        assert_eq!(code, 1, "walj {args:?}: {shown}");
        assert!(
            shown.contains("every unresolved entry of this project (2)? (--all says so without asking) [y/N]"),
            "{shown}"
        );
        assert!(shown.contains("Nothing was changed") && shown.contains("--all"), "{shown}");
        assert_eq!(snapshot(&repo), before, "walj {args:?} changed something");
    }
    // An empty answer (Enter) is no as well.
    let (code, _) = in_pty(&repo, &["handoff"], "\n");
    assert_eq!(code, 1);
    assert_eq!(snapshot(&repo), before);
    // Yes does what --all does.
    let (code, shown) = in_pty(&repo, &["mark", "--done"], "y\n");
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("marked") && shown.contains("`walj undo` undoes this"), "{shown}");
    assert_eq!(unresolved(&repo), 0);
}

#[test]
fn every_action_says_what_it_did_and_how_to_undo_it() {
    let repo = crashed();
    let out = repo.ok(&["mark", "--done", "--all"]);
    assert_eq!(out.lines().filter(|l| l.starts_with("marked")).count(), 2, "{out}");
    assert!(out.contains("`walj undo` undoes this"), "{out}");
    let out = repo.ok(&["undo"]);
    assert!(out.contains("reopened") && out.contains("`walj redo` does it again"), "{out}");
    assert_eq!(unresolved(&repo), 2);

    let out = repo.ok(&["handoff", "--all"]);
    assert!(out.contains("Handed back 2 entries"), "{out}");
    assert!(out.contains("`walj undo` takes it back"), "{out}");
    repo.ok(&["undo"]);
    assert_eq!(unresolved(&repo), 2);

    let out = repo.ok(&["revert", "--all"]);
    assert!(out.contains("`walj undo` undoes this"), "{out}");
    assert_eq!(repo.read("f.txt"), NUMBERS);
    assert!(!repo.exists("g.txt"));
    let out = repo.ok(&["undo"]);
    assert!(out.contains("`walj redo` does it again"), "{out}");
    assert_eq!(repo.read("g.txt"), "new file\n");

    // The JSON says the same: what undoes it.
    let v = repo.json(&["mark", "toolu_A", "--done", "--json"]);
    assert_eq!((v["changed"].as_bool(), v["undo"].as_str()), (Some(true), Some("walj undo")), "{v}");
    let v = repo.json(&["undo", "--json"]);
    assert_eq!(v["undo"], "walj redo", "{v}");
}

#[test]
fn dry_run_leaves_journal_and_files_byte_identical() {
    let repo = crashed();
    let before = snapshot(&repo);
    let cases: [&[&str]; 6] = [
        &["mark", "--done", "--all", "--dry-run"],
        &["mark", "toolu_A", "--done", "--dry-run", "--json"],
        &["revert", "--all", "--dry-run"],
        &["revert", "toolu_A", "--dry-run", "--json"],
        &["handoff", "--all", "--dry-run"],
        &["handoff", "--session", "5e55a0", "--dry-run", "--json"],
    ];
    for args in cases {
        let out = repo.ok(args);
        assert!(
            out.contains("would") || out.contains("Dry run") || out.contains("\"dry_run\": true"),
            "{args:?}: {out}"
        );
        assert_eq!(snapshot(&repo), before, "walj {args:?} changed something");
    }
    // Undo and redo of a real operation, dry: nothing changes either.
    repo.ok(&["revert", "toolu_C"]);
    let reverted = snapshot(&repo);
    let out = repo.ok(&["undo", "--dry-run"]);
    assert!(out.contains("would delete g.txt again") || out.contains("would restore g.txt"), "{out}");
    assert_eq!(snapshot(&repo), reverted);
    repo.ok(&["undo"]);
    let undone = snapshot(&repo);
    let v = repo.json(&["redo", "--dry-run", "--json"]);
    assert_eq!((v["dry_run"].as_bool(), v["changed"].as_bool()), (Some(true), Some(false)), "{v}");
    assert_eq!(snapshot(&repo), undone);
}

#[test]
fn a_conflicting_revert_is_an_outcome_under_json() {
    let repo = crashed();
    // The user changed the same line again after the crash: the entry's change cannot be taken out alone.
    repo.write("f.txt", &NUMBERS.replace("two", "2 (by hand)"));
    let before = snapshot(&repo);
    for args in [&["revert", "toolu_A", "--json"][..], &["revert", "toolu_A", "--dry-run", "--json"]] {
        let (code, out, err) = repo.run(args);
        assert_eq!(code, 1, "a refused revert fails: {out}{err}");
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"));
        assert_eq!((v["refused"].as_bool(), v["changed"].as_bool()), (Some(true), Some(false)), "{v}");
        let o = &v["outcomes"][0];
        assert_eq!(o["id"], "toolu_A", "{v}");
        let lines = o["conflict"].as_array().unwrap_or_else(|| panic!("outcomes[0].conflict is a list: {v}"));
        assert!(lines.iter().any(|l| l.as_str().unwrap().contains("2 (by hand)")), "the disk's side is named: {v}");
        assert_eq!(snapshot(&repo), before, "walj {args:?} changed something");
    }
    // Without --json the same refusal is an error message, and nothing changes.
    let err = repo.fails(&["revert", "toolu_A"]);
    assert!(err.contains("conflicts with later changes"), "{err}");
    assert_eq!(snapshot(&repo), before);
    // A revert without a conflict has `conflict: null`.
    let v = repo.json(&["revert", "toolu_C", "--dry-run", "--json"]);
    assert!(v["outcomes"][0]["conflict"].is_null(), "{v}");
}

#[test]
fn ops_lists_operations_and_undo_and_redo_take_one_by_its_id() {
    let repo = crashed();
    assert!(repo.ok(&["ops"]).contains("No operation yet"));
    repo.ok(&["mark", "toolu_A", "--done"]);
    repo.ok(&["handoff", "toolu_C"]);
    let ops = repo.json(&["ops", "--json"]);
    let ops = ops.as_array().unwrap();
    assert_eq!(ops.len(), 2, "{ops:?}");
    assert_eq!((ops[0]["how"].as_str(), ops[1]["how"].as_str()), (Some("handed_back"), Some("done")), "newest first");
    let mark_op = ops[1]["id"].as_str().unwrap().to_string();
    let text = repo.ok(&["ops"]);
    assert!(text.contains(&mark_op[..12]) && text.contains("marked done") && text.contains("handed back"), "{text}");

    // Undo the older operation by its id: only its entry reopens.
    let out = repo.ok(&["undo", &mark_op[..14]]);
    assert!(out.contains("reopened") && out.contains("f.txt"), "{out}");
    let v = repo.json(&["log", "--json"]);
    let state = |id: &str| v.as_array().unwrap().iter().find(|e| e["id"] == id).unwrap()["status"].clone();
    assert_eq!((state("toolu_A"), state("toolu_C")), (Value::from("applied"), Value::from("handed_back")));
    assert!(repo.ok(&["ops"]).contains("(undone)"));

    // Redo does it again, and says so; a second redo has nothing left.
    let out = repo.ok(&["redo"]);
    assert!(out.contains("Redo operation") && out.contains("marked A (f.txt) done"), "{out}");
    let err = repo.fails(&["redo"]);
    assert!(err.contains("nothing to redo"), "{err}");
    let err = repo.fails(&["undo", "zzzz"]);
    assert!(err.contains("zzzz"), "{err}");
}

#[test]
fn recover_and_status_count_handed_back_entries_as_waiting() {
    let repo = crashed();
    repo.ok(&["handoff", "--all"]);
    let out = repo.ok(&["recover"]);
    assert!(out.contains("2 entries are handed back, waiting for the next session"), "{out}");
    assert!(!out.contains("Every recorded change was verified"), "not an all-clear: {out}");
    let out = repo.ok(&["status"]);
    assert!(out.contains("2 entries are handed back, waiting for the next session"), "{out}");
    assert!(!out.contains("Nothing unresolved"), "{out}");
    assert_eq!(repo.json(&["recover", "--json"])["handed_back_waiting"], 2);
    assert_eq!(repo.json(&["status", "--json"])["handed_back_waiting"], 2);

    // The next session receives the brief: nothing is waiting any more.
    Claude::new(&repo, "5e55a0b1-0000-4000-8000-000000000002").start();
    assert_eq!(repo.json(&["recover", "--json"])["handed_back_waiting"], 0);
    assert!(repo.ok(&["recover"]).contains("Every recorded change was verified or triaged"));
}

#[test]
fn status_counts_the_sessions_that_sessions_lists_after_a_compaction() {
    let repo = crashed();
    // The next session announces the crash (a record kept while the crashed session is
    // unresolved) and ends; compacting drops the rest of it: status must not count it.
    let next = "5e55a0b1-0000-4000-8000-000000000002";
    Claude::new(&repo, next).start();
    let end = serde_json::json!({"session_id": next, "transcript_path": "/x/n.jsonl", "cwd": repo.root,
        "hook_event_name": "SessionEnd", "reason": "exit"});
    repo.hook(&end.to_string());
    repo.ok(&["compact", "--days", "0", "--yes"]);
    let listed = repo.json(&["sessions", "--json"]);
    let status = repo.json(&["status", "--json"]);
    let counted: u64 = status["sessions"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(counted, listed.as_array().unwrap().len() as u64, "status {status:#} vs sessions {listed:#}");
}

#[test]
fn an_imported_session_says_how_to_remove_it_again() {
    let repo = crashed();
    let bundle = repo.root.join("s.walj");
    repo.ok(&["sessions", "export", "5e55a0", "-o", bundle.to_str().unwrap()]);
    let dst = Repo::new(&[("f.txt", NUMBERS)]);
    let out = dst.ok(&["sessions", "import", "--yes", bundle.to_str().unwrap()]);
    assert!(out.contains("`walj sessions delete 5e55a0` removes it again"), "{out}");
    assert_eq!(dst.json(&["sessions", "--json"]).as_array().unwrap().len(), 1);
    dst.ok(&["sessions", "delete", "5e55a0", "--force", "--yes"]);
    assert_eq!(dst.json(&["sessions", "--json"]).as_array().unwrap().len(), 0, "the hint's command removes it");
}

#[test]
fn an_undo_over_a_later_change_is_a_conflict_outcome_under_json() {
    let repo = crashed();
    repo.ok(&["revert", "toolu_A"]);
    repo.write("f.txt", "changed after the revert\n");
    let before = snapshot(&repo);
    for args in [&["undo", "--json"][..], &["undo", "--dry-run", "--json"]] {
        let (code, out, err) = repo.run(args);
        assert_eq!(code, 1, "{out}{err}");
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"));
        assert_eq!((v["action"].as_str(), v["refused"].as_bool()), (Some("undo"), Some(true)), "{v}");
        assert_eq!(v["outcomes"][0]["id"], "toolu_A");
        let c = v["outcomes"][0]["conflict"].as_array().unwrap_or_else(|| panic!("{v}"));
        assert!(c[0].as_str().unwrap().contains("f.txt changed since the revert"), "{v}");
        assert_eq!(snapshot(&repo), before, "walj {args:?} changed something");
    }
    // --force writes over it (the later bytes kept in the store).
    repo.ok(&["undo", "--force"]);
    assert_eq!(repo.read("f.txt"), NUMBERS.replace("two", "TWO"));
}

/// Every file under `.walj/` with its bytes: what an import that asks first must leave alone.
fn walj_tree(repo: &Repo) -> Vec<(String, Vec<u8>)> {
    // The fill pass a SessionStart starts writes `.walj/bash/` in the background.
    crate::common::wait_fill_done(&repo.root);
    fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.map(Result::unwrap) {
            let p = e.path();
            // The watcher's observer log is written by the watcher process SessionStart started
            // (its session's end, its ticks), whenever it notes something: never by the command
            // under test.
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("observed.jsonl") {
                continue;
            }
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push((p.strip_prefix(base).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo.path(".walj"), &repo.root, &mut out);
    out.sort();
    out
}

#[test]
fn a_session_import_asks_first_off_a_terminal_refuses_and_dry_run_writes_nothing() {
    let repo = crashed();
    let bundle = repo.tmp.join("s.walj");
    repo.ok(&["sessions", "export", "5e55a0", "-o", bundle.to_str().unwrap()]);
    let b = bundle.to_str().unwrap();
    let dst = Repo::new(&[("f.txt", NUMBERS)]);
    // A journal of its own, so "byte-identical" means something.
    Claude::new(&dst, "5e55a0b1-0000-4000-8000-0000000000d5").start();
    let before = walj_tree(&dst);
    assert!(!dst.journal_bytes().is_empty());

    // Off a terminal without --yes: refused, exit 1, the flag named, nothing written.
    let (code, out, err) = dst.run(&["sessions", "import", b]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("nothing imported") && err.contains("--yes") && err.contains("session 5e55a0"), "{err}");
    assert!(!err.contains("[y/N]"), "nothing prompts off a terminal: {err}");
    assert_eq!(walj_tree(&dst), before, "a refused import wrote something");

    // --dry-run says what it would add and writes nothing; --json as every action's.
    let out = dst.ok(&["sessions", "import", b, "--dry-run"]);
    assert!(out.contains("Dry run, nothing written: this would import session 5e55a0"), "{out}");
    assert!(out.contains("`walj sessions delete 5e55a0` would remove it again"), "{out}");
    let v = dst.json(&["sessions", "import", b, "--dry-run", "--json"]);
    assert_eq!(
        (v["action"].as_str(), v["dry_run"].as_bool(), v["changed"].as_bool()),
        (Some("sessions import"), Some(true), Some(false)),
        "{v:#}"
    );
    assert!(v["report"]["records_added"].as_u64().unwrap() > 0, "{v:#}");
    assert_eq!(v["undo"], "walj sessions delete 5e55a0");
    assert_eq!(walj_tree(&dst), before, "--dry-run wrote something");

    if script_available() {
        // On a terminal it asks; no (or Enter) imports nothing.
        for answer in ["n\n", "\n"] {
            let (code, shown) = in_pty(&dst, &["sessions", "import", b], answer);
            assert_eq!(code, 1, "{shown}");
            assert!(shown.contains("Import session 5e55a0") && shown.contains("[y/N]"), "{shown}");
            assert!(shown.contains("`walj sessions delete 5e55a0` removes it again"), "{shown}");
            assert!(shown.contains("Nothing imported."), "{shown}");
            assert_eq!(walj_tree(&dst), before, "answered no, yet something was written");
        }
        let (code, shown) = in_pty(&dst, &["sessions", "import", b], "y\n");
        assert_eq!(code, 0, "{shown}");
        assert!(shown.contains("imported session 5e55a0"), "{shown}");
    } else {
        dst.ok(&["sessions", "import", b, "--yes"]);
    }
    assert_ne!(walj_tree(&dst), before);
    assert_eq!(dst.json(&["sessions", "--json"]).as_array().unwrap().len(), 2);
    // Again, with --yes --json: nothing new, nothing changed, no undo.
    let v = dst.json(&["sessions", "import", b, "--yes", "--json"]);
    assert_eq!((v["changed"].as_bool(), v["undo"].is_null()), (Some(false), true), "{v:#}");
}

/// A dry run validates as the run does: an id no journal holds is rejected by both, with the
/// same exit code and message, and `walj mark ID` (no `--done`) is `walj mark --done ID`.
#[test]
fn mark_dry_run_rejects_what_the_run_rejects_and_done_is_the_default() {
    let repo = crashed();
    let before = snapshot(&repo);
    let (dry, _, dry_err) = repo.run(&["mark", "--done", "nosuch", "--dry-run"]);
    let (run, _, run_err) = repo.run(&["mark", "--done", "nosuch", "--yes"]);
    assert_ne!(run, 0, "{run_err}");
    assert_eq!(dry, run, "dry run {dry_err:?} vs run {run_err:?}");
    assert!(dry_err.contains("no entry matches \"nosuch\""), "{dry_err}");
    assert_eq!(snapshot(&repo), before);

    let (code, out, err) = repo.run(&["mark", "toolu_A", "--dry-run", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["action"].as_str(), v["dry_run"].as_bool()), (Some("mark"), Some(true)), "{v}");
    let (code, out, err) = repo.run(&["mark", "toolu_A", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(unresolved(&repo), 1);

    // `walj ops` shows times as people read them, not the journal's ISO stamps.
    let ops = repo.ok(&["ops"]);
    let first = ops.lines().next().unwrap_or("");
    assert!(!first.contains('T') || !first.contains('Z'), "a raw ISO time: {ops}");
    let stamp = first.split_whitespace().nth(1).unwrap_or("");
    assert!(stamp.len() == 10 && stamp.as_bytes()[4] == b'-', "no date column: {ops}");
}

/// Paths where ids go: `walj diff PATH` shows the path's unresolved entries; `revert`/`mark` of a
/// path with one entry act on it; with several, off a terminal, they refuse listing the ids
/// (nothing changed) unless `--yes`; a path relative to the current folder works too.
#[test]
fn paths_are_taken_where_ids_go() {
    let repo = Repo::new(&[("f.txt", NUMBERS), ("sub/h.txt", "h\n")]);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.edit("toolu_B", "f.txt", "three", "THREE");
    c.write("toolu_C", "g.txt", "new file\n");
    c.edit("toolu_D", "sub/h.txt", "h", "H");

    let diff = repo.ok(&["diff", "f.txt"]);
    assert!(diff.contains("+TWO") && diff.contains("+THREE"), "{diff}");
    assert_eq!(diff.matches("entry ").count(), 2, "{diff}");

    let before = snapshot(&repo);
    let (code, out, err) = repo.run(&["revert", "f.txt"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("2 unresolved entries") && err.contains("--yes") && err.contains("Nothing was changed"),
        "{err}"
    );
    assert!(err.contains("Edit"), "the entries are listed: {err}");
    assert_eq!(snapshot(&repo), before);

    repo.ok(&["revert", "g.txt", "--yes"]);
    assert!(!repo.path("g.txt").exists(), "g.txt was not reverted");
    repo.ok(&["revert", "./f.txt", "--yes"]);
    assert_eq!(repo.read("f.txt"), NUMBERS);

    // From a subfolder, a path relative to it.
    let o = crate::common::walj_at(&repo.root)
        .args(["mark", "h.txt", "--yes"])
        .current_dir(repo.path("sub"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(unresolved(&repo), 0, "{}", repo.ok(&["recover"]));
}

/// `walj recover` fits a screen: with several sessions, one summary line each comes first; a
/// long killed command is named in full once (the session's header, up to 80 columns) and
/// shortened with `…` on each of its changes.
#[test]
fn recover_lists_sessions_first_and_names_a_long_command_once() {
    const OTHER: &str = "5e55a0b1-0000-4000-8000-000000000002";
    let repo = Repo::new(&[("f.txt", NUMBERS), ("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")]);
    let first = Claude::new(&repo, SESSION);
    first.start();
    first.prompt("number the lines");
    first.edit("toolu_A", "f.txt", "two", "TWO");
    let second = Claude::new(&repo, OTHER);
    second.start();
    second.prompt("rename the letters in every file of the project");
    let command = "for f in a.txt b.txt c.txt; do sed -i 's/^/renamed: /' \"$f\"; done && sleep 600 # a long command";
    let pre = serde_json::json!({
        "session_id": OTHER, "transcript_path": format!("/home/test/.claude/projects/x/{OTHER}.jsonl"),
        "cwd": repo.root, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_K",
        "tool_input": {"command": command, "description": "rename"},
    });
    repo.hook(&pre.to_string());
    for f in ["a.txt", "b.txt", "c.txt"] {
        let old = repo.read(f);
        repo.write(f, &format!("renamed: {old}"));
    }

    let text = repo.ok(&["recover", "--color", "never"]);
    let lines: Vec<&str> = text.lines().collect();
    let first_header = lines.iter().position(|l| l.starts_with("session ")).unwrap_or_else(|| panic!("{text}"));
    let summary: Vec<&&str> = lines[..first_header].iter().filter(|l| l.contains("started ")).collect();
    assert_eq!(summary.len(), 2, "one summary line per session before the details:\n{text}");
    assert!(summary.iter().any(|l| l.contains("1 entry") && l.contains("\"number the lines\"")), "{text}");
    assert!(summary.iter().any(|l| l.contains("3 entries") && l.contains("rename the letters")), "{text}");
    // The full command (up to the header's 80 columns) once; each change names it shortened.
    let full = &command[..60];
    assert_eq!(text.matches(full).count(), 1, "{text}");
    // Each change names it shortened; the three share that mark, said once below their lines.
    let changes: Vec<&&str> = lines.iter().filter(|l| l.contains("in_flight")).collect();
    assert_eq!(changes.len(), 3, "{text}");
    for l in &changes {
        assert!(recover_marks(&text, l).contains(&format!("never finished: `{}…`", &command[..40])), "{text}");
    }
    assert_eq!(text.matches("never finished: `").count(), 1, "{text}");
    assert!(lines.iter().all(|l| l.chars().count() <= 120), "a line wider than 120 columns:\n{text}");
}
