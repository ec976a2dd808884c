//! Triage through the real binary against real git repositories: diff, mark, revert,
//! undo, handoff (issue 3). Journals are built by replaying hook payloads through
//! `walj hook` (fixtures, or payloads in the documented shapes), or, for changes no
//! file tool makes (a deletion, a path leaving the project), with the library.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::common::{Claude, Repo};
use serde_json::Value;
use walj::fold::{Fold, FoldOptions};
use walj::journal::{Blob, JournalWriter, Record, op};
use walj::project::Project;
use walj::store::{Store, blob_id};

const SESSION: &str = "5e55a0b1-0000-4000-8000-000000000001";
const NUMBERS: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";

fn mode(repo: &Repo, rel: &str) -> u32 {
    fs::metadata(repo.path(rel)).expect("stat").permissions().mode() & 0o7777
}

/// Records with this op.
fn ops<'a>(records: &'a [Value], op_name: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["op"] == op_name).collect()
}

fn project(repo: &Repo) -> Project {
    Project::at(repo.root.clone(), None)
}

/// Records (with the library) that a Bash command deleted `rel`: intent with the stored
/// pre-image, applied with an absent post-image; then deletes the file.
fn record_deletion(repo: &Repo, id: &str, rel: &str) {
    let p = project(repo);
    p.ensure_dir().expect("ensure .walj");
    let bytes = fs::read(repo.path(rel)).expect("read");
    let pre = Store::new(p.store_dir()).put(&bytes).expect("store");
    let mut intent = Record::new(op::INTENT, SESSION);
    intent.id = id.into();
    intent.path = rel.into();
    intent.tool = Some("Bash".into());
    intent.event = "file_deleted".into();
    intent.before = Some(Blob::Id(pre));
    let mut applied = intent.clone();
    applied.op = op::APPLIED.into();
    applied.before = None;
    applied.after = Some(Blob::Absent);
    fs::remove_file(repo.path(rel)).expect("rm");
    JournalWriter::new(&p.journal).append_all(&[intent, applied]).expect("append");
}

/// The intent record's pre-image id of entry `id`.
fn pre_id(repo: &Repo, id: &str) -> String {
    let recs = repo.records();
    let r = recs.iter().find(|r| r["op"] == "intent" && r["id"] == id).expect("intent");
    r["before"].as_str().expect("before id").to_string()
}

/// Runs `walj ARGS` expecting failure, and checks nothing changed: journal bytes and the
/// hashes of `files`. Returns stderr.
fn refused(repo: &Repo, args: &[&str], files: &[&str]) -> String {
    let journal = repo.journal_bytes();
    let before: Vec<Option<String>> = files.iter().map(|f| fs::read(repo.path(f)).ok().map(|b| blob_id(&b))).collect();
    let err = repo.fails(args);
    assert_eq!(repo.journal_bytes(), journal, "the journal must not change on a refusal: {err}");
    let after: Vec<Option<String>> = files.iter().map(|f| fs::read(repo.path(f)).ok().map(|b| blob_id(&b))).collect();
    assert_eq!(before, after, "files must not change on a refusal: {err}");
    err
}

fn recover_json(repo: &Repo) -> Value {
    serde_json::from_str(&repo.ok(&["recover", "--json"])).expect("recover json")
}

fn status_of(repo: &Repo, id: &str) -> String {
    let v: Value = serde_json::from_str(&repo.ok(&["log", "--json", "--all"])).expect("log json");
    let e = v.as_array().expect("array").iter().find(|e| e["id"] == id).expect("entry in log");
    e["status"].as_str().expect("status").to_string()
}

// ---------------------------------------------------------------- revert

#[test]
fn revert_latest_change_writes_the_pre_image_and_records_both_blobs() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.edit("toolu_A", "f.txt", "two", "TWO");
    let post = repo.blob_id("f.txt");
    let out = repo.ok(&["revert", "toolu_A"]);
    assert!(out.contains("wrote the pre-image back to f.txt"), "{out}");
    assert_eq!(repo.read("f.txt"), NUMBERS);
    assert_eq!(repo.git(&["status", "--porcelain", "--", "f.txt"]), "");
    let recs = repo.records();
    let resolved = ops(&recs, "resolved");
    assert_eq!(resolved.len(), 1);
    let r = resolved[0];
    assert_eq!(r["how"], "reverted");
    assert_eq!(r["id"], "toolu_A");
    assert_eq!(r["before"], post.as_str(), "before = the bytes the revert overwrote");
    assert_eq!(r["after"], blob_id(NUMBERS.as_bytes()).as_str());
    assert!(r["action"].as_str().is_some_and(|a| !a.is_empty()));
    assert!(repo.store_object(&post).is_file(), "overwritten bytes are in the store");
    assert_eq!(status_of(&repo, "toolu_A"), "reverted");
}

#[test]
fn revert_of_an_earlier_change_keeps_later_edits_by_a_clean_merge() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.edit("toolu_B", "f.txt", "eight", "EIGHT");
    let dry = repo.ok(&["revert", "toolu_A", "--dry-run"]);
    assert!(dry.contains("would take the entry's change out of"), "{dry}");
    let out = repo.ok(&["revert", "toolu_A"]);
    assert!(out.contains("three-way merge"), "{out}");
    assert_eq!(repo.read("f.txt"), NUMBERS.replace("eight", "EIGHT"));
    assert_eq!(status_of(&repo, "toolu_A"), "reverted");
    assert_eq!(status_of(&repo, "toolu_B"), "applied");
}

#[test]
fn revert_conflicting_with_a_later_edit_is_refused_naming_the_lines_unless_forced() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.edit("toolu_B", "f.txt", "TWO", "Two, again");
    let err = refused(&repo, &["revert", "toolu_A"], &["f.txt"]);
    assert!(err.contains("conflicts with later changes"), "{err}");
    assert!(err.contains("f.txt line 2: the file now has:"), "{err}");
    assert!(err.contains("| Two, again"), "{err}");
    assert!(err.contains("where the pre-image has:\n    | two"), "{err}");
    assert!(err.contains("--force"), "{err}");

    let later = repo.blob_id("f.txt");
    let out = repo.ok(&["revert", "toolu_A", "--force"]);
    assert!(out.contains("wrote the pre-image to f.txt over conflicting later changes (--force)"), "{out}");
    assert_eq!(repo.read("f.txt"), NUMBERS, "--force writes the pre-image");
    let recs = repo.records();
    let r = ops(&recs, "resolved")[0];
    assert_eq!(r["before"], later.as_str());
    assert!(repo.store_object(&later).is_file(), "the later edit's bytes were stored first");
}

#[test]
fn revert_of_a_created_file_deletes_it_and_of_a_deleted_file_restores_it() {
    let repo = Repo::new(&[("keep.txt", "keep me\n")]);
    let c = Claude::new(&repo, SESSION);
    c.write("toolu_NEW", "docs/new.md", "# new\n");
    record_deletion(&repo, "bash-rm-1", "keep.txt");
    assert!(!repo.exists("keep.txt"));

    let out = repo.ok(&["revert", "toolu_NEW"]);
    assert!(out.contains("deleted docs/new.md (it did not exist before)"), "{out}");
    assert!(!repo.exists("docs/new.md"));
    let recs = repo.records();
    let r = ops(&recs, "resolved")[0];
    assert_eq!(r["after"], Value::Null, "after = absent (deleted)");
    assert_eq!(r["before"], blob_id(b"# new\n").as_str());

    let out = repo.ok(&["revert", "bash-rm-1"]);
    assert!(out.contains("wrote the pre-image back to keep.txt"), "{out}");
    assert_eq!(repo.read("keep.txt"), "keep me\n");
    let recs = repo.records();
    assert_eq!(ops(&recs, "resolved")[1]["before"], Value::Null, "before = absent (file did not exist)");
}

#[test]
fn revert_after_an_outside_edit_keeps_the_outside_edit() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    // The user edits the file by hand afterwards.
    repo.write("f.txt", &repo.read("f.txt").replace("nine", "NINE"));
    repo.ok(&["revert", "toolu_A"]);
    assert_eq!(repo.read("f.txt"), NUMBERS.replace("nine", "NINE"));
}

#[test]
fn several_ids_are_reverted_newest_first_and_undone_together() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.edit("toolu_B", "f.txt", "TWO", "TWO!");
    c.write("toolu_C", "g.txt", "new file\n");
    let after_b = repo.read("f.txt");
    // Oldest first, A would conflict with B; newest first takes B out, then A.
    let out = repo.ok(&["revert", "toolu_A", "toolu_C", "toolu_B"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("g.txt") && lines[1].contains("f.txt") && lines[2].contains("f.txt"), "{out}");
    assert_eq!(repo.read("f.txt"), NUMBERS);
    assert!(!repo.exists("g.txt"));
    let recs = repo.records();
    let order: Vec<&str> = ops(&recs, "resolved").iter().map(|r| r["id"].as_str().unwrap_or("")).collect();
    assert_eq!(order, ["toolu_C", "toolu_B", "toolu_A"]);
    let batches: Vec<&Value> = ops(&recs, "resolved").iter().map(|r| &r["batch"]).collect();
    assert!(batches.iter().all(|b| *b == batches[0] && b.is_string()), "one command, one batch");

    let out = repo.ok(&["undo"]);
    assert_eq!(out.lines().filter(|l| l.starts_with("restored")).count(), 3, "{out}");
    assert!(out.ends_with("`walj redo` does it again (`walj ops` lists the operations).\n"), "{out}");
    assert_eq!(repo.read("f.txt"), after_b);
    assert_eq!(repo.read("g.txt"), "new file\n");
    for id in ["toolu_A", "toolu_B", "toolu_C"] {
        assert_eq!(status_of(&repo, id), "applied");
    }
    let recs = repo.records();
    let undo_targets: Vec<&str> = ops(&recs, "undo").iter().map(|r| r["id"].as_str().unwrap_or("")).collect();
    assert_eq!(undo_targets, ["toolu_A", "toolu_B", "toolu_C"], "undone in reverse order");
}

#[test]
fn dry_runs_change_nothing() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.write("toolu_C", "g.txt", "new\n");
    let journal = repo.journal_bytes();
    let (f, g) = (repo.blob_id("f.txt"), repo.blob_id("g.txt"));
    let stored = || walj::store::Store::new(repo.root.join(".walj/store")).ids().unwrap_or_default();
    let objects = stored();
    let out = repo.ok(&["revert", "toolu_A", "toolu_C", "--dry-run"]);
    assert!(out.contains("Dry run, nothing changed"), "{out}");
    assert!(out.contains("would delete g.txt"), "{out}");
    assert!(out.contains("would write the pre-image back to f.txt"), "{out}");
    assert_eq!(repo.journal_bytes(), journal);
    assert_eq!((repo.blob_id("f.txt"), repo.blob_id("g.txt")), (f.clone(), g.clone()));
    // Nothing captured: the files' current bytes were not stored (a revert stores them first).
    // Reading the pre-image may write it from its journal line to the store, as any read does.
    let after = stored();
    for current in [&f, &g] {
        assert_eq!(after.contains(current), objects.contains(current), "{current} stored by a dry run");
    }
    assert!(after.iter().all(|id| objects.contains(id) || *id == pre_id(&repo, "toolu_A")), "{after:?}");
}

#[test]
fn in_flight_entry_with_nothing_written_is_recorded_as_reverted_without_writing() {
    let repo = Repo::from_fixture("hooks/crash-mid-write/project");
    for f in ["01-session-start", "02-user-prompt", "03-pre-todowrite", "04-post-todowrite", "05-pre-edit-config"] {
        repo.hook(&repo.fixture(&format!("hooks/crash-mid-write/{f}.json")));
    }
    repo.write("config/settings.json", &repo.read("config/settings.json").replace("\"retries\": 3", "\"retries\": 5"));
    for f in ["06-post-edit-config", "07-pre-bash-background", "08-post-bash-background", "09-pre-write-docs"] {
        repo.hook(&repo.fixture(&format!("hooks/crash-mid-write/{f}.json")));
    }
    // Variant (a): the Write never happened.
    let out = repo.ok(&["revert", "01WriteDoc"]);
    assert!(out.contains("already equals the pre-image; recorded as reverted"), "{out}");
    assert!(!repo.exists("docs/generated-index.md"));
    assert_eq!(status_of(&repo, "toolu_01WriteDoc"), "reverted");
}

#[test]
fn in_flight_entry_whose_file_was_written_is_reverted_by_treating_disk_as_post_image() {
    let repo = Repo::from_fixture("hooks/crash-mid-write/project");
    repo.hook(&repo.fixture("hooks/crash-mid-write/01-session-start.json"));
    repo.hook(&repo.fixture("hooks/crash-mid-write/09-pre-write-docs.json"));
    // Variant (b): the file was written, PostToolUse never came.
    let payload: Value = serde_json::from_str(&repo.fixture("hooks/crash-mid-write/09-pre-write-docs.json")).unwrap();
    repo.write("docs/generated-index.md", payload["tool_input"]["content"].as_str().unwrap());
    let out = repo.ok(&["revert", "toolu_01WriteDoc"]);
    assert!(out.contains("deleted docs/generated-index.md"), "{out}");
    assert!(!repo.exists("docs/generated-index.md"));
}

// ---------------------------------------------------------------- undo

#[test]
fn undo_of_a_revert_restores_bytes_exactly_and_keeps_permissions() {
    let repo = Repo::new(&[("run.sh", "#!/bin/sh\necho one\n")]);
    fs::set_permissions(repo.path("run.sh"), fs::Permissions::from_mode(0o754)).unwrap();
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "run.sh", "echo one", "echo two");
    let post = repo.blob_id("run.sh");
    repo.ok(&["revert", "toolu_A"]);
    assert_eq!(repo.read("run.sh"), "#!/bin/sh\necho one\n");
    assert_eq!(mode(&repo, "run.sh"), 0o754, "revert keeps permissions");
    let out = repo.ok(&["undo"]);
    assert!(out.contains("restored run.sh"), "{out}");
    assert_eq!(repo.blob_id("run.sh"), post, "undo restores the exact bytes");
    assert_eq!(mode(&repo, "run.sh"), 0o754, "undo keeps permissions");
    assert_eq!(status_of(&repo, "toolu_A"), "applied");
    let recs = repo.records();
    let u = ops(&recs, "undo")[0];
    assert_eq!(u["id"], "toolu_A");
    assert_eq!(u["target"], ops(&recs, "resolved")[0]["action"]);
    assert_eq!(u["after"], post.as_str());
}

#[test]
fn undo_of_a_revert_refuses_a_file_changed_since_unless_forced() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    let post = repo.blob_id("f.txt");
    repo.ok(&["revert", "toolu_A"]);
    repo.write("f.txt", "edited by hand after the revert\n");
    let err = refused(&repo, &["undo"], &["f.txt"]);
    assert!(err.contains("changed since the revert"), "{err}");
    assert!(err.contains("--force"), "{err}");
    let hand = repo.blob_id("f.txt");
    repo.ok(&["undo", "--force"]);
    assert_eq!(repo.blob_id("f.txt"), post);
    let recs = repo.records();
    assert_eq!(ops(&recs, "undo")[0]["before"], hand.as_str());
    assert!(repo.store_object(&hand).is_file(), "the hand edit was stored before the overwrite");
}

#[test]
fn undo_of_a_mark_reopens_the_entry() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    assert_eq!(recover_json(&repo)["unresolved"], 1);
    let out = repo.ok(&["mark", "toolu_A", "--done"]);
    assert!(out.contains("marked A (f.txt) done"), "{out}");
    assert_eq!(recover_json(&repo)["unresolved"], 0);
    assert_eq!(status_of(&repo, "toolu_A"), "done");
    let out = repo.ok(&["undo", "A"]);
    assert!(out.contains("reopened A (f.txt)"), "{out}");
    assert_eq!(recover_json(&repo)["unresolved"], 1);
    assert_eq!(status_of(&repo, "toolu_A"), "applied");
    let err = refused(&repo, &["undo", "A"], &[]);
    assert!(err.contains("no triage action to undo"), "{err}");
}

#[test]
fn mark_session_marks_every_unresolved_entry_of_it() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.write("toolu_C", "g.txt", "x\n");
    let out = repo.ok(&["mark", "--done", "--session", "5e55a0"]);
    assert_eq!(out.lines().filter(|l| l.starts_with("marked")).count(), 2, "{out}");
    assert!(out.contains("`walj undo` undoes this"), "{out}");
    assert_eq!(recover_json(&repo)["unresolved"], 0);
    let out = repo.ok(&["mark", "--done", "--session", "5e55a0"]);
    assert!(out.contains("nothing marked"), "{out}");
    // Undo without an id undoes the whole mark command.
    repo.ok(&["undo"]);
    assert_eq!(recover_json(&repo)["unresolved"], 2);
}

#[test]
fn undo_with_nothing_recorded_says_so() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    Claude::new(&repo, SESSION).edit("toolu_A", "f.txt", "two", "TWO");
    let err = refused(&repo, &["undo"], &["f.txt"]);
    assert!(err.contains("nothing to undo"), "{err}");
}

// ---------------------------------------------------------------- handoff

#[test]
fn handoff_is_delivered_exactly_once_at_the_next_session_start() {
    let repo = Repo::from_fixture("hooks/crash-mid-write/project");
    for f in ["01-session-start", "02-user-prompt", "03-pre-todowrite", "04-post-todowrite", "05-pre-edit-config"] {
        repo.hook(&repo.fixture(&format!("hooks/crash-mid-write/{f}.json")));
    }
    repo.write("config/settings.json", &repo.read("config/settings.json").replace("\"retries\": 3", "\"retries\": 5"));
    for f in ["06-post-edit-config", "07-pre-bash-background", "08-post-bash-background", "09-pre-write-docs"] {
        repo.hook(&repo.fixture(&format!("hooks/crash-mid-write/{f}.json")));
    }
    assert_eq!(recover_json(&repo)["unresolved"], 2);

    // --print records nothing.
    let journal = repo.journal_bytes();
    let printed = repo.ok(&["handoff", "--session", "8f14e4", "--print"]);
    assert!(printed.contains("printed only"), "{printed}");
    assert_eq!(repo.journal_bytes(), journal);

    let out = repo.ok(&["handoff", "--session", "8f14e4"]);
    assert!(out.contains("config/settings.json"), "{out}");
    assert!(out.contains("-  \"retries\": 3,") && out.contains("+  \"retries\": 5,"), "{out}");
    assert!(out.contains("Raise the retry count to 5"), "last prompt: {out}");
    assert!(out.contains("[pending] Regenerate docs/generated-index.md"), "open todos: {out}");
    assert!(out.contains("claude --resume 8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10"), "{out}");
    assert_eq!(recover_json(&repo)["unresolved"], 0);
    assert_eq!(status_of(&repo, "toolu_01EditCfg"), "handed_back");
    let recs = repo.records();
    let h = ops(&recs, "handoff");
    assert_eq!(h.len(), 1);
    assert_eq!(h[0]["kind"], "handback");
    let brief = h[0]["brief"].as_str().expect("brief").to_string();
    assert!(brief.len() <= walj::triage::MAX_BRIEF);
    let entries: Vec<&str> = h[0]["entries"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(entries, ["toolu_01EditCfg", "toolu_01WriteDoc"]);
    assert_eq!(ops(&recs, "resolved").iter().filter(|r| r["how"] == "handed_back").count(), 2);

    // The next SessionStart (a new session) delivers it, once.
    let start = repo.start_payload("9a9a9a9a-1111-4222-8333-444455556666");
    let first = repo.hook(&start);
    let v: Value = serde_json::from_str(first.trim()).expect("SessionStart output is one JSON object");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().expect("additionalContext");
    assert!(ctx.contains(&brief), "the brief is delivered whole:\n{ctx}");
    assert!(v["systemMessage"].as_str().is_some_and(|m| m.contains("handed a brief back")));
    let recs = repo.records();
    assert!(recs.iter().any(|r| r["kind"] == "delivered" && r["target"] == h[0]["action"]), "the delivery is recorded");
    let second = repo.hook(&start);
    assert_eq!(second.trim(), "", "delivered exactly once");

    // Handing back again is refused: the entries are already handed back.
    let err = refused(&repo, &["handoff", "toolu_01EditCfg"], &["config/settings.json"]);
    assert!(err.contains("already handed back to Claude"), "{err}");
}

#[test]
fn handoff_undone_before_delivery_is_not_delivered() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    Claude::new(&repo, SESSION).edit("toolu_A", "f.txt", "two", "TWO");
    repo.ok(&["handoff", "toolu_A"]);
    let out = repo.ok(&["undo"]);
    assert!(out.contains("withdrew the brief"), "{out}");
    assert_eq!(status_of(&repo, "toolu_A"), "applied");
    let start = repo.start_payload("9a9a9a9a-1111-4222-8333-444455556666");
    let out = repo.hook(&start);
    assert!(!out.contains("walj hand-back"), "{out}");
}

#[test]
fn handoff_brief_stays_within_budget_and_says_what_it_cut() {
    let mut lines = String::new();
    for i in 0..200 {
        lines.push_str(&format!("line {i}\n"));
    }
    let repo = Repo::new(&[]);
    let p = project(&repo);
    p.ensure_dir().unwrap();
    let store = Store::new(p.store_dir());
    let mut records = Vec::new();
    for n in 0..60 {
        let rel = format!("src/file{n}.txt");
        let changed: String = lines.lines().map(|l| format!("{l} changed\n")).collect();
        repo.write(&rel, &changed);
        let mut r = Record::new(op::APPLIED, SESSION);
        r.id = format!("e{n:03}");
        r.path = rel;
        r.tool = Some("Write".into());
        r.event = "file_modified".into();
        r.before = Some(Blob::Id(store.put(lines.as_bytes()).unwrap()));
        r.after = Some(Blob::Id(store.put(changed.as_bytes()).unwrap()));
        records.push(r);
    }
    JournalWriter::new(&p.journal).append_all(&records).unwrap();
    let fold = Fold::load(&p.journal, &FoldOptions { keep_settled: true, ..Default::default() }).unwrap();
    let brief =
        walj::triage::handoff(&p, &fold, &[], None, walj::triage::HandoffOptions { print_only: true, force: false })
            .unwrap();
    assert!(brief.text.len() <= walj::triage::MAX_BRIEF, "{} chars", brief.text.len());
    assert_eq!(brief.entries.len() + brief.left_out.len(), 60);
    assert!(brief.text.contains("more lines in this hunk") || brief.text.contains("more hunk"), "{}", brief.text);
    assert!(brief.text.contains("changed: +200 -200 lines"), "{}", brief.text);
    assert!(brief.action.is_none());
}

// ---------------------------------------------------------------- diff

#[test]
fn diff_shows_changes_new_and_deleted_files_and_head() {
    let repo = Repo::new(&[("f.txt", NUMBERS), ("old.txt", "bye\n")]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.write("toolu_NEW", "n.txt", "hello\n");
    record_deletion(&repo, "bash-rm-1", "old.txt");
    // An outside edit after the tool: --applied shows what the tool did, the default the disk.
    repo.write("f.txt", &repo.read("f.txt").replace("ten", "TEN"));

    let out = repo.ok(&["diff", "toolu_A"]);
    assert!(out.contains("--- a/f.txt\t(pre-image)\n+++ b/f.txt\t(disk)"), "{out}");
    assert!(out.contains("-two\n+TWO") && out.contains("+TEN"), "{out}");
    assert!(!out.contains('\x1b'), "no colour when not a terminal");
    let out = repo.ok(&["diff", "toolu_A", "--applied"]);
    assert!(out.contains("(post-image)") && out.contains("+TWO") && !out.contains("TEN"), "{out}");
    let out = repo.ok(&["diff", "toolu_A", "--head", "-U", "0"]);
    assert!(out.contains("(HEAD)") && out.contains("+TEN") && !out.contains(" one"), "{out}");

    let out = repo.ok(&["diff", "toolu_NEW"]);
    assert!(out.contains("--- /dev/null\t(pre-image)") && out.contains("new file") && out.contains("+hello"), "{out}");
    let out = repo.ok(&["diff", "bash-rm-1"]);
    assert!(out.contains("+++ /dev/null\t(disk)") && out.contains("deleted file") && out.contains("-bye"), "{out}");
}

#[test]
fn diff_of_binary_over_cap_and_missing_blob_says_so() {
    let big = "x".repeat(100) + "\n";
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    // Not committed: git cannot stand in for the uncaptured pre-image.
    repo.write("big.txt", &big);
    let c = Claude::new(&repo, SESSION);
    c.write("toolu_BIN", "img.bin", "PNG\0\u{1}\u{2}binary");
    // In neither git nor the store once removed, nor in its line: too large to be carried
    // there (issue 14: an image the hook carries is read from its line instead).
    let noise: String = (0..3000u64).map(|i| format!("{:016x}\n", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))).collect();
    repo.write("m.txt", &format!("{NUMBERS}m\n{noise}"));
    c.edit("toolu_A", "m.txt", "two", "TWO");
    repo.write(".walj/config.toml", "[capture]\nmax_bytes = 64\n");
    c.edit("toolu_BIG", "big.txt", "xxxx", "yyyy");

    let out = repo.ok(&["diff", "toolu_BIN"]);
    assert!(out.contains("Binary files /dev/null and b/img.bin differ (absent → 12 bytes)"), "{out}");
    assert!(!out.contains("PNG"), "no bytes of binary files: {out}");

    let out = repo.ok(&["diff", "toolu_BIG", "--applied"]);
    assert!(out.contains("was not captured: over the 64 bytes cap"), "{out}");
    let err = refused(&repo, &["revert", "toolu_BIG"], &["big.txt"]);
    assert!(err.contains("over the 64 bytes cap"), "{err}");

    let pre = pre_id(&repo, "toolu_A");
    fs::remove_file(repo.store_object(&pre)).unwrap();
    let out = repo.ok(&["diff", "toolu_A"]);
    assert!(out.contains("is missing from the store"), "{out}");
    let err = refused(&repo, &["revert", "toolu_A"], &["m.txt"]);
    assert!(err.contains("missing from the store"), "{err}");
}

#[test]
fn a_missing_pre_image_is_found_in_the_projects_git_objects() {
    // Ids are git blob ids: a pre-image committed in git is readable even when the
    // store lost it.
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    Claude::new(&repo, SESSION).edit("toolu_A", "f.txt", "two", "TWO");
    let pre = pre_id(&repo, "toolu_A");
    // Out of its line and into the store (`walj compact`), then lost from the store.
    repo.ok(&["compact", "--yes"]);
    assert!(!String::from_utf8_lossy(&repo.journal_bytes()).contains("\"images\""), "images left in lines");
    fs::remove_file(repo.store_object(&pre)).unwrap();
    repo.ok(&["revert", "toolu_A"]);
    assert_eq!(repo.read("f.txt"), NUMBERS);
}

// ---------------------------------------------------------------- bad input

#[test]
fn unknown_and_ambiguous_ids_are_refused_listing_candidates() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_AB1", "f.txt", "two", "TWO");
    c.edit("toolu_AB2", "f.txt", "three", "THREE");
    for args in [&["mark", "AB", "--done"][..], &["revert", "AB"], &["undo", "AB"], &["handoff", "AB"], &["diff", "AB"]]
    {
        let err = refused(&repo, args, &["f.txt"]);
        assert!(err.contains("ambiguous") && err.contains("toolu_AB1") && err.contains("toolu_AB2"), "{args:?}: {err}");
    }
    let err = refused(&repo, &["revert", "AB1", "nope"], &["f.txt"]);
    assert!(err.contains("no entry matches \"nope\""), "{err}");
    assert_eq!(status_of(&repo, "toolu_AB1"), "applied", "nothing reverted when one id is bad");
    let err = refused(&repo, &["mark", "--done", "--session", "zzz"], &[]);
    assert!(err.contains("zzz"), "{err}");
}

#[test]
fn entries_already_resolved_say_how_and_when() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.edit("toolu_B", "f.txt", "three", "THREE");
    repo.ok(&["mark", "toolu_A", "--done"]);
    repo.ok(&["revert", "toolu_B"]);
    let err = refused(&repo, &["mark", "A", "--done"], &["f.txt"]);
    assert!(err.contains("already marked done at 20") && err.contains("UTC") && err.contains("walj undo A"), "{err}");
    let err = refused(&repo, &["revert", "B"], &["f.txt"]);
    assert!(err.contains("already reverted at"), "{err}");
    let err = refused(&repo, &["revert", "A"], &["f.txt"]);
    assert!(err.contains("already marked done"), "{err}");
}

#[test]
fn read_only_file_or_folder_is_refused() {
    let repo = Repo::new(&[("f.txt", NUMBERS), ("sub/g.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.edit("toolu_G", "sub/g.txt", "two", "TWO");
    fs::set_permissions(repo.path("f.txt"), fs::Permissions::from_mode(0o444)).unwrap();
    let err = refused(&repo, &["revert", "toolu_A"], &["f.txt"]);
    assert!(err.contains("f.txt is read-only") && err.contains("chmod u+w"), "{err}");
    fs::set_permissions(repo.path("sub"), fs::Permissions::from_mode(0o555)).unwrap();
    let err = refused(&repo, &["revert", "toolu_G"], &["sub/g.txt"]);
    fs::set_permissions(repo.path("sub"), fs::Permissions::from_mode(0o755)).unwrap();
    assert!(err.contains("sub is read-only"), "{err}");
}

#[test]
fn a_path_that_is_now_a_directory_is_refused() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    Claude::new(&repo, SESSION).edit("toolu_A", "f.txt", "two", "TWO");
    fs::remove_file(repo.path("f.txt")).unwrap();
    fs::create_dir(repo.path("f.txt")).unwrap();
    let err = refused(&repo, &["revert", "toolu_A"], &[]);
    assert!(err.contains("f.txt is now a directory"), "{err}");
    assert!(repo.path("f.txt").is_dir());
    let out = repo.ok(&["diff", "toolu_A"]);
    assert!(out.contains("is now a directory"), "{out}");
}

#[test]
fn paths_leaving_the_project_are_refused() {
    let repo = Repo::new(&[("sub/f.txt", NUMBERS)]);
    Claude::new(&repo, SESSION).edit("toolu_A", "sub/f.txt", "two", "TWO");
    // `sub` is replaced by a symbolic link to a folder outside the project.
    let outside = tempfile::tempdir().unwrap();
    fs::rename(repo.path("sub"), outside.path().join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("sub"), repo.path("sub")).unwrap();
    let outside_file = outside.path().join("sub/f.txt");
    let before = fs::read(&outside_file).unwrap();
    let err = refused(&repo, &["revert", "toolu_A"], &[]);
    assert!(err.contains("outside the project through a symbolic link"), "{err}");
    assert_eq!(fs::read(&outside_file).unwrap(), before);

    // A record naming `..` (a damaged or hostile journal).
    let p = project(&repo);
    let mut r = Record::new(op::APPLIED, SESSION);
    r.id = "evil".into();
    r.path = "../evil.txt".into();
    r.tool = Some("Write".into());
    r.before = Some(Blob::Absent);
    r.after = Some(Blob::Id(blob_id(b"x")));
    JournalWriter::new(&p.journal).append(&r).unwrap();
    let err = refused(&repo, &["revert", "evil"], &[]);
    assert!(err.contains("not a path inside the project"), "{err}");
    assert!(!repo.root.parent().unwrap().join("evil.txt").exists());
}

#[test]
fn entries_of_a_live_session_need_force() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let mut c = Claude::new(&repo, SESSION);
    c.live = true; // the test process is the hook's parent, and it is running
    c.start();
    c.edit("toolu_A", "f.txt", "two", "TWO");
    for args in [&["mark", "A", "--done"][..], &["revert", "A"], &["handoff", "A"]] {
        let err = refused(&repo, args, &["f.txt"]);
        assert!(err.contains("still live") && err.contains("--force"), "{args:?}: {err}");
    }
    repo.ok(&["revert", "A", "--force"]);
    assert_eq!(repo.read("f.txt"), NUMBERS);
    let err = refused(&repo, &["undo"], &["f.txt"]);
    assert!(err.contains("still live"), "{err}");
    repo.ok(&["undo", "--force"]);
    assert_eq!(repo.read("f.txt"), NUMBERS.replace("two", "TWO"));
}

/// `--all` and `--session` (and their `--dry-run`) leave a live session's entries out and say
/// so on stderr (with how to act on one anyway); the other sessions' entries are acted on. By
/// id the action refuses as before.
#[test]
fn all_and_session_leave_a_live_sessions_entries_out_and_say_so() {
    const LIVE: &str = "11ve0000-0000-4000-8000-000000000002";
    let repo = Repo::new(&[("f.txt", NUMBERS), ("g.txt", NUMBERS)]);
    let gone = Claude::new(&repo, SESSION); // its hooks' parent is gone: crashed
    gone.start();
    gone.edit("toolu_A", "f.txt", "two", "TWO");
    let mut live = Claude::new(&repo, LIVE);
    live.live = true; // the test process is the hook's parent, and it is running
    live.start();
    live.edit("toolu_L", "g.txt", "two", "TWO");

    for args in [
        &["revert", "--all", "--dry-run"][..],
        &["mark", "--done", "--all", "--dry-run"],
        &["handoff", "--all", "--dry-run"],
        &["revert", "--all", "--dry-run", "--json"],
    ] {
        let (code, out, err) = repo.run(args);
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        assert!(out.contains("f.txt"), "{args:?}: the crashed session's entry is offered: {out}");
        assert!(!out.contains("g.txt"), "{args:?}: the live session's entry is offered: {out}");
        assert!(err.contains("left out of --all") && err.contains("still live"), "{args:?}: {err}");
        assert!(err.contains("g.txt") && err.contains("--force"), "{args:?}: {err}");
    }
    // --session of the live session: nothing to act on, and why.
    for args in [&["revert", "--session", LIVE, "--dry-run"][..], &["mark", "--done", "--session", LIVE]] {
        let (_, out, err) = repo.run(args);
        assert!(!out.contains("would") && err.contains("still live"), "{args:?}: {out}{err}");
    }
    // For real: the crashed session's entry is marked, the live one's stays open.
    let (code, _, err) = repo.run(&["mark", "--done", "--all"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("left out of --all"), "{err}");
    let resolved: Vec<String> = repo
        .records()
        .iter()
        .filter(|r| r["op"] == "resolved")
        .map(|r| r["id"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(resolved, vec!["toolu_A".to_string()]);
    // By id: refused without --force, as before.
    let err = refused(&repo, &["revert", "toolu_L"], &["g.txt"]);
    assert!(err.contains("still live") && err.contains("--force"), "{err}");
}

// ---------------------------------------------------------------- library

#[test]
fn plan_revert_tells_the_tui_what_will_happen() {
    use walj::triage::{RevertPlan, plan_revert};
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.edit("toolu_B", "f.txt", "TWO", "TWO!");
    c.write("toolu_C", "g.txt", "x\n");
    let p = project(&repo);
    let fold = Fold::load(&p.journal, &FoldOptions { keep_settled: true, ..Default::default() }).unwrap();
    let plan = |id: &str| plan_revert(&p, &fold, fold.find(id).unwrap()).unwrap();
    assert_eq!(plan("toolu_B"), RevertPlan::WritePre);
    assert_eq!(plan("toolu_C"), RevertPlan::DeleteFile);
    match plan("toolu_A") {
        RevertPlan::Conflict { lines } => assert!(lines[0].contains("f.txt line 2"), "{lines:?}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    let sides = walj::triage::diff_sides(&p, fold.find("toolu_B").unwrap(), walj::triage::DiffMode::Applied);
    let text = walj::report::diff::unified(&sides, "f.txt", 3, true);
    assert!(text.contains("\x1b[31m-TWO\x1b[0m") && text.contains("\x1b[32m+TWO!\x1b[0m"), "{text}");
}

// ---------------------------------------------------------------- /rewind parity

#[test]
fn a_whole_turn_is_diffed_and_reverted_like_rewind() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.prompt("first");
    c.edit("toolu_T1", "f.txt", "one", "ONE");
    c.stop();
    c.prompt("second");
    c.edit("toolu_T2", "f.txt", "two", "TWO");
    c.write("toolu_T2b", "new.txt", "made in turn two\n");
    c.stop();
    let after_first = NUMBERS.replacen("one", "ONE", 1);

    let diff = repo.ok(&["diff", "--session", SESSION, "--prompt", "2"]);
    assert!(diff.contains("+TWO") && diff.contains("+made in turn two"), "{diff}");
    assert!(!diff.contains("+ONE"), "turn 1 is not part of turn 2: {diff}");

    let dry = repo.ok(&["revert", "--session", SESSION, "--prompt", "2", "--dry-run"]);
    assert!(dry.contains("Dry run"), "{dry}");
    assert!(repo.read("new.txt").contains("turn two"));

    let out = repo.ok(&["revert", "--session", SESSION, "--prompt", "2"]);
    assert!(out.contains("new.txt") && out.contains("f.txt"), "{out}");
    assert_eq!(repo.read("f.txt"), after_first, "turn 1's edit stays");
    assert!(!repo.root.join("new.txt").exists());
    // Nothing left to roll back in that turn; the session still has turn 1.
    let (code, _, err) = repo.run(&["revert", "--session", SESSION, "--prompt", "2"]);
    assert_ne!(code, 0);
    assert!(err.contains("changed no file"), "{err}");
    let (code, _, err) = repo.run(&["revert", "--session", SESSION, "--prompt", "3"]);
    assert_ne!(code, 0);
    assert!(err.contains("has 2 prompts"), "{err}");
    repo.ok(&["revert", "--session", SESSION]);
    assert_eq!(repo.read("f.txt"), NUMBERS);
}

/// A live session is not offered `claude --resume` (Claude Code is still running it); a crashed
/// one is.
#[test]
fn sessions_show_offers_resume_only_to_a_session_that_is_not_live() {
    const LIVE: &str = "11ve0000-0000-4000-8000-000000000003";
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let gone = Claude::new(&repo, SESSION);
    gone.start();
    gone.edit("toolu_A", "f.txt", "two", "TWO");
    let mut live = Claude::new(&repo, LIVE);
    live.live = true;
    live.start();
    let shown = repo.ok(&["sessions", "show", LIVE]);
    assert!(!shown.contains("--resume"), "a live session is offered a resume: {shown}");
    assert!(shown.contains("the session is live: no resume needed"), "{shown}");
    let shown = repo.ok(&["sessions", "show", SESSION]);
    assert!(shown.contains(&format!("claude --resume {SESSION}")), "{shown}");
}
