//! Bash side effects (issue 6): real git repositories in temp folders, the real binary as
//! the hook, real shell commands between PreToolUse and PostToolUse.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command as Std;

use crate::common::{Parent, Repo, blob_bytes, git, hook_ok, journal_records, walj_at};
use serde_json::{Value, json};
use walj::journal::Blob;

const SESSION: &str = "5e551011-bash-test";

/// A git repository with `files` committed, and its root.
fn repo(files: &[(&str, &[u8])]) -> (Repo, PathBuf) {
    let repo = Repo::with_bytes(files);
    let root = repo.root.clone();
    (repo, root)
}

/// Runs `walj hook` under a short-lived parent (`timeout`), which walj takes for the Claude
/// Code process: once it exits, the session counts as crashed, not live (as after a kill).
/// It prints nothing and logs no error.
fn hook(root: &Path, payload: &Value) {
    let out = hook_ok(root, &payload.to_string(), Parent::Timeout(20));
    assert_eq!(out, "", "walj hook printed");
    let errors = root.join(".walj/errors.log");
    assert!(!errors.exists(), "hook errors: {}", fs::read_to_string(errors).unwrap_or_default());
}

fn bash_payload(root: &Path, event: &str, id: &str, command: &str, background: bool) -> Value {
    let mut p = json!({
        "hook_event_name": event,
        "session_id": SESSION,
        "transcript_path": "/tmp/none.jsonl",
        "cwd": root,
        "tool_name": "Bash",
        "tool_use_id": id,
        "tool_input": {"command": command, "description": "test"},
    });
    if background {
        p["tool_input"]["run_in_background"] = json!(true);
    }
    match event {
        "PostToolUse" => {
            p["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
            if background {
                p["tool_response"]["backgroundTaskId"] = json!(format!("task-{id}"));
            }
        }
        "PostToolUseFailure" => {
            p["error"] = json!("Exit code 1");
        }
        _ => {}
    }
    p
}

fn sh(root: &Path, command: &str) -> bool {
    Std::new("sh").arg("-c").arg(command).current_dir(root).status().expect("sh runs").success()
}

/// Runs `command` as Claude Code would: PreToolUse, the command, Post (or PostToolUseFailure).
fn run_bash(root: &Path, id: &str, command: &str) {
    hook(root, &bash_payload(root, "PreToolUse", id, command, false));
    let ok = sh(root, command);
    let event = if ok { "PostToolUse" } else { "PostToolUseFailure" };
    hook(root, &bash_payload(root, event, id, command, false));
}

/// Child entries (records with a path) of the command `parent`, by path.
fn children(root: &Path, parent: &str) -> Vec<walj::journal::Record> {
    let mut v: Vec<_> = journal_records(root).into_iter().filter(|r| r.parent.as_deref() == Some(parent)).collect();
    v.sort_by(|a, b| a.path.cmp(&b.path));
    v
}

fn by_path<'a>(v: &'a [walj::journal::Record], path: &str) -> &'a walj::journal::Record {
    v.iter().find(|r| r.path == path).unwrap_or_else(|| panic!("no child entry for {path}: {v:#?}"))
}

/// `walj revert IDS...` (the real command), which must succeed.
fn revert(root: &Path, ids: &[&str]) {
    let out = walj_at(root).arg("revert").args(ids).output().unwrap();
    assert!(
        out.status.success(),
        "walj revert {ids:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The command `id` left one child entry: `a.txt` from "v2" back to "v1" (a `git reset`).
fn assert_one_child_v2_to_v1(root: &Path, id: &str) {
    let kids = children(root, id);
    assert_eq!(kids.len(), 1, "{kids:#?}");
    assert_eq!(blob_bytes(root, &kids[0].before).as_deref(), Some(&b"v2\n"[..]));
    assert_eq!(blob_bytes(root, &kids[0].after).as_deref(), Some(&b"v1\n"[..]));
}

/// The files under `.walj/bash/` whose names end with `suffix`.
fn bash_files(root: &Path, suffix: &str) -> Vec<fs::DirEntry> {
    fs::read_dir(root.join(".walj/bash"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
        .collect()
}

fn log_json(root: &Path) -> Vec<Value> {
    let out = walj_at(root).args(["log", "--json", "--all"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn delete_sed_rename_create_become_child_entries_with_exact_preimages() {
    let gone: &[u8] = b"delete me\n\x00binary\xff\n";
    let sed: &[u8] = b"alpha\nbeta\ngamma\n";
    let moved: &[u8] = b"I move\n";
    let (_t, root) =
        repo(&[("src/gone.bin", gone), ("src/sed.txt", sed), ("old/name.txt", moved), ("keep.txt", b"k\n")]);
    let cmd = "rm src/gone.bin && sed -i 's/beta/BETA/' src/sed.txt && mkdir -p new && mv old/name.txt new/name.txt \
               && printf 'one\\n' > made1.txt && printf 'two\\n' > src/made2.txt";
    run_bash(&root, "toolu_bash_1", cmd);

    let kids = children(&root, "toolu_bash_1");
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["made1.txt", "new/name.txt", "old/name.txt", "src/gone.bin", "src/made2.txt", "src/sed.txt"]);
    for r in &kids {
        assert_eq!(r.op, "applied");
        assert_eq!(r.tool.as_deref(), Some("Bash"));
        assert_eq!(r.session, SESSION);
        assert_ne!(r.id, "toolu_bash_1", "children need their own ids");
    }
    let deleted = by_path(&kids, "src/gone.bin");
    assert_eq!(deleted.event, "file_deleted");
    assert_eq!(blob_bytes(&root, &deleted.before).as_deref(), Some(gone));
    assert_eq!(deleted.after, Some(Blob::Absent));

    let edited = by_path(&kids, "src/sed.txt");
    assert_eq!(edited.event, "file_modified");
    assert_eq!(blob_bytes(&root, &edited.before).as_deref(), Some(sed));
    assert_eq!(blob_bytes(&root, &edited.after).as_deref(), Some(&b"alpha\nBETA\ngamma\n"[..]));

    let from = by_path(&kids, "old/name.txt");
    assert_eq!(from.event, "file_deleted");
    assert_eq!(blob_bytes(&root, &from.before).as_deref(), Some(moved));
    let to = by_path(&kids, "new/name.txt");
    assert_eq!(to.event, "artifact_created");
    assert_eq!(to.before, Some(Blob::Absent));
    assert_eq!(blob_bytes(&root, &to.after).as_deref(), Some(moved));

    for (p, bytes) in [("made1.txt", &b"one\n"[..]), ("src/made2.txt", &b"two\n"[..])] {
        let c = by_path(&kids, p);
        assert_eq!(c.event, "artifact_created");
        assert_eq!(c.before, Some(Blob::Absent));
        assert_eq!(blob_bytes(&root, &c.after).as_deref(), Some(bytes));
    }
    // The command's own record says what the comparison found.
    let applied = journal_records(&root).into_iter().find(|r| r.id == "toolu_bash_1" && r.op == "applied").unwrap();
    assert_eq!(applied.extra["snapshot"]["changed"], json!(6));
    assert_eq!(applied.extra["snapshot"]["mode"], json!("git"));

    // They are entries like any other: `walj log` lists them with their parent.
    let log = log_json(&root);
    let logged: Vec<&Value> = log.iter().filter(|e| e["parent"] == json!("toolu_bash_1")).collect();
    assert_eq!(logged.len(), 6);
    assert!(logged.iter().all(|e| e["status"] == json!("applied") && e["tool"] == json!("Bash")));
    // The sidecar is gone once compared.
    assert!(!root.join(".walj/bash/5e551011-bash-test-toolu_bash_1.json").exists());

    // Each child entry's revert (the real `walj revert`) restores that path's exact bytes.
    let originals: [(&str, Option<&[u8]>); 6] = [
        ("src/gone.bin", Some(gone)),
        ("src/sed.txt", Some(sed)),
        ("old/name.txt", Some(moved)),
        ("new/name.txt", None),
        ("made1.txt", None),
        ("src/made2.txt", None),
    ];
    for (path, bytes) in originals {
        let id = by_path(&kids, path).id.clone();
        revert(&root, &[&id]);
        assert_eq!(fs::read(root.join(path)).ok().as_deref(), bytes, "{path} after reverting {id}");
    }
    let log = log_json(&root);
    assert!(log.iter().filter(|e| e["parent"] == json!("toolu_bash_1")).all(|e| e["status"] == json!("reverted")));
}

#[test]
fn reverting_every_child_entry_gives_back_the_original_tree() {
    let (_t, root) = repo(&[("a.txt", b"A\n"), ("b/b.txt", b"B\n"), ("c.txt", b"C\n")]);
    fs::write(root.join("a.txt"), b"A, edited by the user, not committed\n").unwrap();
    fs::write(root.join("notes.txt"), b"untracked notes\n").unwrap();
    let snapshot = |root: &Path| {
        let mut v = Vec::new();
        for p in ["a.txt", "b/b.txt", "c.txt", "notes.txt", "d.txt"] {
            v.push((p, fs::read(root.join(p)).ok()));
        }
        v
    };
    let original = snapshot(&root);
    run_bash(&root, "toolu_many", "echo x >> a.txt; rm -r b; mv c.txt d.txt; echo over > notes.txt");
    let kids = children(&root, "toolu_many");
    assert_eq!(kids.len(), 5, "{kids:#?}");
    let ids: Vec<&str> = kids.iter().map(|r| r.id.as_str()).collect();
    revert(&root, &ids);
    assert_eq!(snapshot(&root), original);
}

#[test]
fn failing_command_still_records_what_it_changed() {
    let (_t, root) = repo(&[("a.txt", b"a\n")]);
    run_bash(&root, "toolu_fail", "echo partial > out.txt; echo b >> a.txt; exit 3");
    let recs = journal_records(&root);
    let cmd = recs.iter().find(|r| r.id == "toolu_fail" && r.op == "failed").expect("failed record");
    assert_eq!(cmd.extra["snapshot"]["changed"], json!(2));
    let kids = children(&root, "toolu_fail");
    assert_eq!(kids.len(), 2);
    assert_eq!(by_path(&kids, "out.txt").event, "artifact_created");
    let a = by_path(&kids, "a.txt");
    assert_eq!(blob_bytes(&root, &a.before).as_deref(), Some(&b"a\n"[..]));
    assert_eq!(blob_bytes(&root, &a.after).as_deref(), Some(&b"a\nb\n"[..]));
    // Recover reports them (applied, unverified) until a Stop verifies them.
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["unresolved"], json!(2));
}

#[test]
fn background_writes_are_picked_up_at_stop_and_others_changes_are_not() {
    let (_t, root) = repo(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    let id = "toolu_bg";
    let cmd = "sleep 1; echo done > build.log.txt";
    hook(&root, &bash_payload(&root, "PreToolUse", id, cmd, true));
    // The command returns at once; its first output lands before PostToolUse.
    fs::write(root.join("started.txt"), b"started\n").unwrap();
    hook(&root, &bash_payload(&root, "PostToolUse", id, cmd, true));
    let early = children(&root, id);
    assert_eq!(early.len(), 1);
    assert_eq!(early[0].path, "started.txt");
    assert!(early[0].extra.get("background").is_none(), "seen at PostToolUse: not a later background write");
    assert!(
        root.join(".walj/bash/5e551011-bash-test-toolu_bg.json").exists(),
        "background commands keep their snapshot"
    );

    // Later: the background command writes, and Claude edits another file with Edit.
    fs::write(root.join("build.log.txt"), b"done\n").unwrap();
    fs::write(root.join("a.txt"), b"a changed in the background\n").unwrap();
    let edit = |event: &str| {
        let mut p = json!({
            "hook_event_name": event, "session_id": SESSION, "cwd": root, "tool_name": "Edit",
            "tool_use_id": "toolu_edit", "tool_input": {"file_path": root.join("b.txt"), "old_string": "b", "new_string": "B"},
        });
        if event == "PostToolUse" {
            p["tool_response"] = json!({"filePath": root.join("b.txt"), "originalFile": "b\n"});
        }
        p
    };
    hook(&root, &edit("PreToolUse"));
    fs::write(root.join("b.txt"), b"B\n").unwrap();
    hook(&root, &edit("PostToolUse"));

    let stop = json!({
        "hook_event_name": "Stop", "session_id": SESSION, "cwd": root, "stop_hook_active": false,
        "background_tasks": [{"id": format!("task-{id}"), "type": "bash", "status": "completed", "command": cmd}],
    });
    hook(&root, &stop);
    let kids = children(&root, id);
    let late: Vec<_> = kids.iter().filter(|r| r.extra.get("background") == Some(&json!(true))).collect();
    let paths: Vec<&str> = late.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "build.log.txt"], "b.txt belongs to the Edit");
    let a = late.iter().find(|r| r.path == "a.txt").unwrap();
    assert_eq!(blob_bytes(&root, &a.before).as_deref(), Some(&b"a\n"[..]));
    assert!(!root.join(".walj/bash/5e551011-bash-test-toolu_bg.json").exists(), "the task completed: no further look");
    // `walj log` marks them.
    let log = log_json(&root);
    assert_eq!(log.iter().filter(|e| e["background"] == json!(true)).count(), 2);
    // A second Stop adds nothing.
    let before = journal_records(&root).len();
    hook(&root, &stop);
    assert_eq!(children(&root, id).len(), kids.len());
    assert!(journal_records(&root).len() > before, "the Stop record itself");
}

#[test]
fn background_task_still_running_is_looked_at_again() {
    let (_t, root) = repo(&[("a.txt", b"a\n")]);
    let id = "toolu_bg2";
    hook(&root, &bash_payload(&root, "PreToolUse", id, "server", true));
    hook(&root, &bash_payload(&root, "PostToolUse", id, "server", true));
    let stop = |status: &str| {
        json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": root,
               "background_tasks": [{"id": format!("task-{id}"), "status": status}]})
    };
    fs::write(root.join("one.txt"), b"1\n").unwrap();
    hook(&root, &stop("running"));
    fs::write(root.join("two.txt"), b"2\n").unwrap();
    hook(&root, &stop("completed"));
    let kids = children(&root, id);
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["one.txt", "two.txt"]);
    assert!(kids.iter().all(|r| r.extra.get("background") == Some(&json!(true))));
    let ids: std::collections::HashSet<&str> = kids.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), 2);
}

#[test]
fn dirty_and_untracked_preimages_are_the_working_bytes_not_head() {
    let (_t, root) = repo(&[("a.txt", b"committed\n")]);
    fs::write(root.join("a.txt"), b"uncommitted work\n").unwrap();
    fs::write(root.join("u.txt"), b"untracked work\n").unwrap();
    run_bash(&root, "toolu_dirty", "echo clobbered > a.txt; rm u.txt");
    let kids = children(&root, "toolu_dirty");
    assert_eq!(blob_bytes(&root, &by_path(&kids, "a.txt").before).as_deref(), Some(&b"uncommitted work\n"[..]));
    assert_eq!(blob_bytes(&root, &by_path(&kids, "u.txt").before).as_deref(), Some(&b"untracked work\n"[..]));
}

#[test]
fn git_commands_that_move_the_index_are_understood() {
    let (_t, root) = repo(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    fs::write(root.join("a.txt"), b"a edited\n").unwrap();
    // Committing changes no bytes: nothing to record.
    run_bash(&root, "toolu_commit", "git -c user.name=t -c user.email=t@e commit -qam wip");
    assert!(children(&root, "toolu_commit").is_empty(), "{:#?}", children(&root, "toolu_commit"));
    // A reset rewrites tracked files through the index.
    run_bash(&root, "toolu_reset", "git reset -q --hard HEAD~1");
    let kids = children(&root, "toolu_reset");
    assert_eq!(kids.len(), 1, "{kids:#?}");
    let a = by_path(&kids, "a.txt");
    // Both images come from git's objects: walj's store must hold them.
    assert_eq!(blob_bytes(&root, &a.before).as_deref(), Some(&b"a edited\n"[..]));
    assert_eq!(blob_bytes(&root, &a.after).as_deref(), Some(&b"a\n"[..]));
    revert(&root, &[&a.id]);
    assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"a edited\n");
    // Restoring a dirty file from the index.
    fs::write(root.join("b.txt"), b"b edited\n").unwrap();
    run_bash(&root, "toolu_checkout", "git checkout -- b.txt");
    let kids = children(&root, "toolu_checkout");
    assert_eq!(kids.len(), 1);
    assert_eq!(blob_bytes(&root, &kids[0].before).as_deref(), Some(&b"b edited\n"[..]));
    assert_eq!(blob_bytes(&root, &kids[0].after).as_deref(), Some(&b"b\n"[..]));
}

#[test]
fn ignored_files_and_walj_itself_are_skipped_and_user_events_apply() {
    let (_t, root) = repo(&[(".gitignore", b"target/\n*.log\n"), ("config/app.toml", b"x = 1\n")]);
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::write(root.join(".walj/config.toml"), "[[events]]\nglob = \"config/**\"\nevent = \"config_updated\"\n")
        .unwrap();
    run_bash(
        &root,
        "toolu_ign",
        "mkdir -p target && echo o > target/out.o && echo l > x.log && echo 'x = 2' > config/app.toml",
    );
    let kids = children(&root, "toolu_ign");
    assert_eq!(kids.len(), 1, "{kids:#?}");
    assert_eq!(kids[0].path, "config/app.toml");
    assert_eq!(kids[0].event, "config_updated");
}

#[test]
fn switch_off_records_nothing() {
    let (_t, root) = repo(&[("a.txt", b"a\n")]);
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::write(root.join(".walj/config.toml"), "[bash]\nsnapshot = false\n").unwrap();
    run_bash(&root, "toolu_off", "echo b > a.txt");
    assert!(children(&root, "toolu_off").is_empty());
    assert!(!root.join(".walj/bash/5e551011-bash-test-toolu_off.json").exists());
    let applied = journal_records(&root).into_iter().find(|r| r.id == "toolu_off" && r.op == "applied").unwrap();
    assert!(applied.extra.get("snapshot").is_none());
}

#[test]
fn project_in_a_subfolder_of_a_repository() {
    let (_t, top) = repo(&[("other/x.txt", b"x\n"), ("app/a.txt", b"a\n")]);
    let root = top.join("app");
    run_bash(&root, "toolu_sub", "echo b > a.txt; echo y > ../other/x.txt; echo n > new.txt");
    let kids = children(&root, "toolu_sub");
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "new.txt"], "paths are project-relative; outside the project is not tracked");
}

#[test]
fn outside_git_a_bounded_scan_finds_changes_and_says_when_cut_short() {
    let (_dir, root) = crate::common::scratch();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/a.txt"), b"a\n").unwrap();
    fs::write(root.join("src/b.txt"), b"b\n").unwrap();
    fs::write(root.join("z.txt"), b"z\n").unwrap();
    run_bash(&root, "toolu_scan", "echo A > src/a.txt; rm src/b.txt; echo n > src/n.txt");
    let kids = children(&root, "toolu_scan");
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["src/a.txt", "src/b.txt", "src/n.txt"]);
    assert_eq!(blob_bytes(&root, &by_path(&kids, "src/a.txt").before).as_deref(), Some(&b"a\n"[..]));
    assert_eq!(blob_bytes(&root, &by_path(&kids, "src/b.txt").before).as_deref(), Some(&b"b\n"[..]));
    let applied = journal_records(&root).into_iter().find(|r| r.id == "toolu_scan" && r.op == "applied").unwrap();
    assert_eq!(applied.extra["snapshot"]["mode"], json!("scan"));
    assert!(applied.extra["snapshot"].get("cut_short").is_none());

    fs::write(root.join(".walj/config.toml"), "[bash]\nmax_files = 2\n").unwrap();
    run_bash(&root, "toolu_cut", "echo Z > z.txt");
    let applied = journal_records(&root).into_iter().find(|r| r.id == "toolu_cut" && r.op == "applied").unwrap();
    assert_eq!(applied.extra["snapshot"]["cut_short"], json!(true), "{applied:#?}");
}

#[test]
fn denied_command_leaves_nothing_after_stop() {
    let (_t, root) = repo(&[("a.txt", b"a\n")]);
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_denied", "rm a.txt", false));
    assert!(root.join(".walj/bash/5e551011-bash-test-toolu_denied.json").exists());
    hook(&root, &json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": root}));
    assert!(!root.join(".walj/bash/5e551011-bash-test-toolu_denied.json").exists());
    assert!(!root.join(".walj/bash/5e551011-bash-test-toolu_denied.index").exists());
    assert!(children(&root, "toolu_denied").is_empty());
}

#[test]
fn background_command_that_moves_the_index_before_returning() {
    let (_t, root) = repo(&[("a.txt", b"v1\n")]);
    fs::write(root.join("a.txt"), b"v2\n").unwrap();
    git(&root, &["commit", "-qam", "v2"]);
    let id = "toolu_bg_reset";
    hook(&root, &bash_payload(&root, "PreToolUse", id, "git reset --hard HEAD~1 &", true));
    git(&root, &["reset", "-q", "--hard", "HEAD~1"]);
    hook(&root, &bash_payload(&root, "PostToolUse", id, "git reset --hard HEAD~1 &", true));
    assert_one_child_v2_to_v1(&root, id);
    // The baseline kept for Stop has its own copy of the index; the Pre one is gone.
    let idx: Vec<String> =
        bash_files(&root, ".index").iter().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(idx.len(), 1, "{idx:?}");
    hook(&root, &json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": root}));
    assert!(bash_files(&root, ".index").is_empty());
}

#[test]
fn touching_changes_nothing_and_same_size_rewrites_are_seen() {
    let (_t, root) = repo(&[("a.txt", b"a\n")]);
    run_bash(&root, "toolu_touch", "touch a.txt");
    assert!(children(&root, "toolu_touch").is_empty(), "same bytes: no entry");
    // A file written just before the command and rewritten by it with as many bytes: its
    // stat may not change (timestamp granularity), its bytes did.
    fs::write(root.join("b.txt"), b"1111\n").unwrap();
    run_bash(&root, "toolu_same_size", "printf '2222\\n' > b.txt");
    let kids = children(&root, "toolu_same_size");
    assert_eq!(kids.len(), 1, "{kids:#?}");
    assert_eq!(blob_bytes(&root, &kids[0].before).as_deref(), Some(&b"1111\n"[..]));
    assert_eq!(blob_bytes(&root, &kids[0].after).as_deref(), Some(&b"2222\n"[..]));
}

#[test]
fn a_command_cut_off_mid_turn_gets_its_changes_at_stop() {
    // An interrupted turn: PreToolUse, the command ran (partly), no Post; Claude Code lives
    // on and the session's Stop comes.
    let (_t, root) = repo(&[("a.txt", b"a\n")]);
    let cmd = "rm a.txt; echo half > y.txt; sleep 600";
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_cut", cmd, false));
    assert!(sh(&root, "rm a.txt; echo half > y.txt"));
    hook(&root, &json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": root}));
    let kids = children(&root, "toolu_cut");
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "y.txt"]);
    assert!(kids.iter().all(|r| r.op == "applied" && r.extra.get("unfinished") == Some(&json!(true))), "{kids:?}");
    assert_eq!(blob_bytes(&root, &by_path(&kids, "a.txt").before).as_deref(), Some(&b"a\n"[..]));
    assert!(!root.join(".walj/bash/5e551011-bash-test-toolu_cut.json").exists());
    // It ran: not settled as denied; its changes stay for the user.
    let resolved: Vec<_> =
        journal_records(&root).into_iter().filter(|r| r.op == "resolved" && r.id == "toolu_cut").collect();
    assert!(resolved.is_empty(), "{resolved:?}");
    let log = log_json(&root);
    assert_eq!(log.iter().filter(|e| e["unfinished"] == json!(true) && e["status"] == "in_flight").count(), 2);
}

#[test]
fn a_killed_command_is_recorded_once_even_after_a_walj_died_holding_its_claim() {
    let (_t, root) = repo(&[("a.txt", b"a\n")]);
    let cmd = "echo x > y.txt; sleep 600";
    // The hook's parent (the "Claude Code") is gone once it returns: the session reads as crashed.
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_kill", cmd, false));
    assert!(sh(&root, "echo x > y.txt"));
    let sidecar = root.join(".walj/bash/5e551011-bash-test-toolu_kill.json");
    let saved = fs::read(&sidecar).unwrap();
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success());
    let recover: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(recover["unresolved"], 1, "{recover}");
    assert_eq!(recover["sessions"][0]["entries"][0]["path"], "y.txt");
    assert_eq!(children(&root, "toolu_kill").len(), 1);
    assert!(!sidecar.exists(), "claimed and removed");

    // A walj killed after appending, before removing its claim: the claim is left behind. Once
    // it is stale, the next reader takes it over and appends nothing twice.
    let claim = root.join(".walj/bash/5e551011-bash-test-toolu_kill.claim4242");
    fs::write(&claim, &saved).unwrap();
    assert!(Std::new("touch").args(["-d", "2 hours ago"]).arg(&claim).status().unwrap().success());
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(children(&root, "toolu_kill").len(), 1, "recorded twice");
    assert!(!claim.exists(), "the stale claim was taken over and removed");
    // A fresh claim (another walj at work right now) is left alone.
    fs::write(&claim, &saved).unwrap();
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success());
    assert!(claim.exists());
}

#[test]
fn a_resumed_sessions_dead_background_command_gets_nothing() {
    let (_t, root) = repo(&[("a.txt", b"a\n")]);
    let start = |source: &str| {
        json!({"hook_event_name": "SessionStart", "session_id": SESSION, "cwd": root, "source": source,
               "transcript_path": "/tmp/none.jsonl"})
    };
    hook_ok(&root, &start("startup").to_string(), Parent::Timeout(20));
    let id = "toolu_bg_dead";
    hook(&root, &bash_payload(&root, "PreToolUse", id, "npm run watch", true));
    hook(&root, &bash_payload(&root, "PostToolUse", id, "npm run watch", true));
    assert!(root.join(".walj/bash/5e551011-bash-test-toolu_bg_dead.json").exists());
    // Claude Code dies (the hooks' parent is gone); nothing the command started runs. The user
    // repairs a file by hand and resumes the session, which ends its turn.
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::write(root.join("a.txt"), b"fixed by the user\n").unwrap();
    hook_ok(&root, &start("resume").to_string(), Parent::Timeout(20));
    hook(&root, &json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": root, "background_tasks": []}));
    assert!(children(&root, id).is_empty(), "the user's edit was given to a dead background command");
    assert!(!root.join(".walj/bash/5e551011-bash-test-toolu_bg_dead.json").exists());
}

/// Issue 14: while git's index does not change, each command's saved copy of it is a link
/// to one copy (no new file, no bytes copied). A command that then moves the index still
/// diffs against the right version, and a shared copy found damaged is dropped, not reused.
#[test]
fn index_copies_are_shared_while_the_index_does_not_change() {
    let (_t, root) = repo(&[("a.txt", b"v1\n")]);
    fs::write(root.join("a.txt"), b"v2\n").unwrap();
    git(&root, &["commit", "-qam", "v2"]);
    let lasts = || -> Vec<String> {
        bash_files(&root, ".last").iter().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
    };
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_ls", "ls", false));
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_ls", "ls", false));
    assert_eq!(lasts().len(), 1, "the first command's copy is kept for the next");
    let id = "toolu_reset";
    hook(&root, &bash_payload(&root, "PreToolUse", id, "git reset --hard HEAD~1", false));
    let linked = bash_files(&root, ".index");
    assert_eq!(linked.len(), 1);
    assert_eq!(std::os::unix::fs::MetadataExt::nlink(&linked[0].metadata().unwrap()), 2, "a link, not a copy");
    git(&root, &["reset", "-q", "--hard", "HEAD~1"]);
    hook(&root, &bash_payload(&root, "PostToolUse", id, "git reset --hard HEAD~1", false));
    assert_one_child_v2_to_v1(&root, id);

    // A power cut left the shared copy zeroed (same length) and the machine rebooted: a copy
    // made before the boot is not reused.
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_ls2", "ls", false));
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_ls2", "ls", false));
    let last = lasts();
    assert_eq!(last.len(), 1, "a copy of the new version: {last:?}");
    let last = root.join(".walj/bash").join(&last[0]);
    let len = fs::metadata(&last).unwrap().len() as usize;
    fs::write(&last, vec![0u8; len]).unwrap();
    let before_boot = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    fs::File::options().write(true).open(&last).unwrap().set_modified(before_boot).unwrap();
    let id = "toolu_add";
    hook(&root, &bash_payload(&root, "PreToolUse", id, "git add b.txt", false));
    fs::write(root.join("b.txt"), b"b\n").unwrap();
    git(&root, &["add", "b.txt"]);
    hook(&root, &bash_payload(&root, "PostToolUse", id, "git add b.txt", false));
    assert_eq!(children(&root, id).len(), 1, "b.txt is seen: the index before `git add` was copied again");
    let copy = fs::read(&last).unwrap();
    assert!(copy.iter().any(|&b| b != 0), "the zeroed copy was replaced");
}

/// Issue 14: a command that changed nothing leaves the Pre's snapshot as the cache (no new
/// file); one that changed something leaves its own.
#[test]
fn the_cache_is_rewritten_only_when_the_command_changed_something() {
    use std::os::unix::fs::MetadataExt;
    let (_t, root) = repo(&[("a.txt", b"v1\n")]);
    let cache = root.join(".walj/bash/cache.json");
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_ls", "ls", false));
    let ino = fs::metadata(&cache).unwrap().ino();
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_ls", "ls", false));
    assert_eq!(fs::metadata(&cache).unwrap().ino(), ino, "nothing changed: the Pre's cache is kept");
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_echo", "echo x > b.txt", false));
    fs::write(root.join("b.txt"), b"x\n").unwrap();
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_echo", "echo x > b.txt", false));
    let text = fs::read_to_string(&cache).unwrap();
    assert!(text.contains("\"b.txt\""), "the cache is the Post's snapshot: {text}");
}

/// A link planted where walj keeps its copy of the index is never followed: the command gets
/// a copy of its own, and the file the link points at is not touched (not even its date).
#[test]
fn a_link_at_the_shared_index_copy_is_not_followed() {
    use std::os::unix::fs::MetadataExt;
    let (_t, root) = repo(&[("a.txt", b"v1\n")]);
    let elsewhere = tempfile::tempdir().unwrap();
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_first", "ls", false));
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_first", "ls", false));
    let m = fs::metadata(root.join(".git/index")).unwrap();
    let mtime = m.mtime() * 1_000_000_000 + m.mtime_nsec();
    let name = format!("index-{:x}-{:x}-{:x}.last", m.ino(), m.size(), mtime);
    let last = root.join(".walj/bash").join(&name);
    assert!(last.is_file(), "the first command kept its copy as {name}");
    let outside = elsewhere.path().join("outside.bin");
    fs::write(&outside, vec![b'x'; m.size() as usize]).unwrap();
    // Dated after the boot, as walj's own copy would be.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(5);
    fs::File::options().write(true).open(&outside).unwrap().set_modified(old).unwrap();
    fs::remove_file(&last).unwrap();
    std::os::unix::fs::symlink(&outside, &last).unwrap();
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_second", "ls", false));
    let copies = bash_files(&root, ".index");
    assert_eq!(copies.len(), 1);
    let copy = fs::symlink_metadata(copies[0].path()).unwrap();
    assert!(copy.file_type().is_file(), "a regular file, not the planted link");
    assert_eq!(fs::read(copies[0].path()).unwrap(), fs::read(root.join(".git/index")).unwrap());
    assert_eq!(fs::metadata(&outside).unwrap().modified().unwrap(), old, "the outside file was not touched");
}

/// The untracked cache (src/bashsnap/untracked.rs): once the folders are old enough to be
/// trusted, unchanged ones are not read again, and yet a command's new file in an old
/// folder, a new folder of files, a rewritten and a removed untracked file, a new nested
/// repository and a `.gitignore` edit are each seen exactly as a full walk would see them.
#[test]
fn the_untracked_cache_misses_no_change_a_command_makes() {
    let (_t, root) = repo(&[
        ("src/a.txt", b"a\n"),
        ("docs/b.txt", b"b\n"),
        ("deep/x/y/z.txt", b"z\n"),
        ("deep/.gitignore", b"*.tmp\n"),
    ]);
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::write(root.join(".walj/config.toml"), "[bash]\nwatcher = false\n").unwrap();
    fs::write(root.join("src/notes.txt"), b"n1\n").unwrap();
    fs::write(root.join("deep/x/y/old.txt"), b"old\n").unwrap();
    fs::write(root.join("deep/x/y/keep.tmp"), b"ignored\n").unwrap();
    fs::create_dir_all(root.join("vendor/lib")).unwrap();
    fs::write(root.join("vendor/lib/v.txt"), b"v\n").unwrap();
    run_bash(&root, "toolu_first", "true");
    // Folders changed within 2 s of a walk are read but not recorded.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    run_bash(&root, "toolu_warm", "true");
    let cache = root.join(".walj/bash/untracked.cache");
    let recorded: Value = serde_json::from_slice(&fs::read(&cache).unwrap()).unwrap();
    let dirs = recorded["dirs"].as_object().unwrap();
    for d in ["src", "deep/x/y", "vendor/lib"] {
        assert!(dirs.contains_key(d), "{d} is recorded once it is old: {recorded:#}");
    }
    assert_eq!(children(&root, "toolu_warm").len(), 0, "nothing changed");

    let command = "echo new > src/new.txt && mkdir -p gen/sub && echo g > gen/sub/g.txt \
                   && echo n2 > src/notes.txt && rm deep/x/y/old.txt && echo t > deep/x/y/t.tmp \
                   && mkdir -p vendor/lib/inner && git -C vendor/lib/inner init -q \
                   && echo i > vendor/lib/inner/i.txt";
    run_bash(&root, "toolu_change", command);
    let kids = children(&root, "toolu_change");
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    // The nested repository the command made: its file is the command's too.
    assert_eq!(
        paths,
        ["deep/x/y/old.txt", "gen/sub/g.txt", "src/new.txt", "src/notes.txt", "vendor/lib/inner/i.txt"],
        "{kids:#?}"
    );
    assert_eq!(blob_bytes(&root, &by_path(&kids, "src/notes.txt").before).as_deref(), Some(&b"n1\n"[..]));
    assert_eq!(blob_bytes(&root, &by_path(&kids, "deep/x/y/old.txt").before).as_deref(), Some(&b"old\n"[..]));

    // A `.gitignore` edit in an old folder makes what it stops ignoring below it visible,
    // in folders whose own stat did not change: rewriting a file changes no folder, so only
    // reading `deep/x/y` again finds the rewritten `t.tmp`. (`keep.tmp`, also no longer
    // ignored but older than the command, is not the command's: a full walk says the same.)
    std::thread::sleep(std::time::Duration::from_millis(2200));
    run_bash(&root, "toolu_warm2", "true");
    run_bash(&root, "toolu_unignore", "echo '*.log' > deep/.gitignore && echo t2 > deep/x/y/t.tmp");
    let kids = children(&root, "toolu_unignore");
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["deep/.gitignore", "deep/x/y/t.tmp"], "{kids:#?}");
}

/// Claude Code 2.1.332's PostToolUse Bash payload (the real recording), its project folder
/// and file paths moved to `root`, with `extra` paths added to its `changedFiles` and
/// `moreFiles` set to `more`.
fn real_bash_edit_diff_post(root: &Path, extra: &[&str], more: u64) -> Value {
    let dir = crate::common::fixtures().join("hooks/real-2.1.332-bash-edit-diff");
    let text = fs::read_to_string(dir.join("PostToolUse-Bash.json")).unwrap();
    let mut p: Value = serde_json::from_str(&text.replace("/home/dev/proj", &root.to_string_lossy())).unwrap();
    p["session_id"] = json!(SESSION);
    let list = p["tool_response"]["bashEditDiff"]["changedFiles"].as_array_mut().unwrap();
    list.extend(extra.iter().map(|e| json!(e)));
    p["tool_response"]["bashEditDiff"]["moreFiles"] = json!(more);
    p
}

/// Claude Code's own list of the files a command changed (`bashEditDiff.changedFiles`) is a
/// second witness: with snapshots off, each path it names becomes an entry of the command
/// (marked reported, the file as it is now, no pre-image); a path outside the project and the
/// count it left off are said on the command's record.
#[test]
fn claude_codes_changed_files_are_journaled_when_the_snapshot_is_off() {
    let (_repo, root) = repo(&[("a.txt", b"a\n")]);
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::write(root.join(".walj/config.toml"), "[bash]\nsnapshot = false\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let elsewhere = outside.path().join("elsewhere.txt");
    let post = real_bash_edit_diff_post(&root, &[&elsewhere.to_string_lossy()], 5);
    let command = post["tool_input"]["command"].as_str().unwrap().to_string();
    let mut pre = post.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    pre.as_object_mut().unwrap().remove("tool_response");
    hook(&root, &pre);
    assert!(sh(&root, &command));
    hook(&root, &post);
    let (kids, outside_kids): (Vec<_>, Vec<_>) = children(&root, "toolu_b1").into_iter().partition(|r| !r.outside);
    assert_eq!(kids.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), ["a.txt", "new.txt"], "{kids:?}");
    // The path outside the project is recorded as outside, as a file tool's is: its absolute
    // path, nothing captured.
    assert_eq!(outside_kids.len(), 1, "{outside_kids:?}");
    let o = &outside_kids[0];
    assert_eq!(o.path, elsewhere.to_string_lossy(), "{o:?}");
    assert!(o.before.is_none() && o.after.is_none(), "nothing captured outside: {o:?}");
    assert_eq!(o.extra.get("reported"), Some(&json!("claude_code")), "{o:?}");
    for k in &kids {
        assert_eq!(k.extra.get("reported"), Some(&json!("claude_code")), "{k:?}");
        assert!(k.before.is_none(), "no pre-image was taken: {k:?}");
        assert!(k.nocap.as_deref().is_some_and(|n| n.starts_with("reported_only")), "{k:?}");
    }
    assert_eq!(by_path(&kids, "new.txt").after, Some(Blob::Id(walj::store::blob_id(b"x\n"))));
    assert_eq!(by_path(&kids, "a.txt").after, Some(Blob::Id(walj::store::blob_id(b"A\n"))));
    assert_eq!(blob_bytes(&root, &by_path(&kids, "new.txt").after), Some(b"x\n".to_vec()));
    let outcome = journal_records(&root)
        .into_iter()
        .find(|r| r.id == "toolu_b1" && r.op == "applied" && r.parent.is_none())
        .expect("the command's outcome");
    let note = outcome.extra.get("reported").expect("the outcome says what Claude Code listed");
    assert_eq!(note["listed"], json!(3), "{note}");
    assert_eq!(note["missed"], json!(2), "{note}");
    assert_eq!(note["outside_count"], json!(1), "{note}");
    assert_eq!(note["outside"], json!([elsewhere.to_string_lossy()]), "{note}");
    assert_eq!(note["more"], json!(5), "{note}");
    // Said by recover: the entries are there, with why they have no pre-image.
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("reported_only"), "{text}");
    // The list was the only witness: the 5 files it left off are in no entry, said with the
    // command by log and recover, and counted by doctor.
    assert_eq!(note["snapshot_off"], json!(true), "{note}");
    let cut = "5 more files Claude Code's own list of changed files left unnamed";
    let out = walj_at(&root).args(["log"]).output().unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(log.contains(cut), "{log}");
    let out = walj_at(&root).args(["recover"]).output().unwrap();
    let recover = String::from_utf8_lossy(&out.stdout);
    assert!(recover.contains(cut), "{recover}");
    let out = walj_at(&root).args(["doctor"]).output().unwrap();
    let doctor = String::from_utf8_lossy(&out.stdout);
    assert!(
        doctor.contains("2 changed file(s) of 1 Bash command(s) were journaled from Claude Code's own list alone"),
        "{doctor}"
    );
    assert!(doctor.contains("stopped at 200 in 1 Bash command(s) while walj's snapshot was off: 5 more"), "{doctor}");
    assert!(doctor.contains("changed 1 file(s) outside the project"), "{doctor}");
}

/// With the snapshot on, a path it recorded is not entered twice; a path it does not look at
/// (an ignored folder) but Claude Code reports becomes a reported entry.
#[test]
fn claude_codes_changed_files_add_only_what_the_snapshot_missed() {
    let (_repo, root) = repo(&[("a.txt", b"a\n"), (".gitignore", b"build/\n")]);
    let mut post = real_bash_edit_diff_post(&root, &[&root.join("build/out.txt").to_string_lossy()], 0);
    let command = "echo x > new.txt && sed -i s/a/A/ a.txt && mkdir -p build && echo o > build/out.txt";
    post["tool_input"]["command"] = json!(command);
    let mut pre = post.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    pre.as_object_mut().unwrap().remove("tool_response");
    hook(&root, &pre);
    assert!(sh(&root, command));
    hook(&root, &post);
    let kids = children(&root, "toolu_b1");
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "build/out.txt", "new.txt"], "{kids:?}");
    assert!(by_path(&kids, "a.txt").extra.get("reported").is_none(), "the snapshot's own: {kids:?}");
    assert!(by_path(&kids, "new.txt").extra.get("reported").is_none(), "the snapshot's own: {kids:?}");
    assert_eq!(by_path(&kids, "build/out.txt").extra.get("reported"), Some(&json!("claude_code")), "{kids:?}");
}

/// A command whose Claude Code list named a file the snapshot missed: `walj doctor` counts the
/// miss; `.git/` paths on the list follow the snapshot's rule (no entry); the list's cut at 200
/// (`moreFiles`) is no miss with the snapshot on (it looked at every file the list could name).
#[test]
fn claude_codes_misses_are_counted_by_doctor_and_git_paths_make_no_entry() {
    let (_repo, root) = repo(&[("a.txt", b"a\n"), (".gitignore", b"build/\n")]);
    let extra = [root.join("build/out.txt"), root.join(".git/COMMIT_EDITMSG")];
    let extra: Vec<String> = extra.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let mut post = real_bash_edit_diff_post(&root, &extra, 250);
    let command = "echo x > new.txt && sed -i s/a/A/ a.txt && mkdir -p build && echo o > build/out.txt";
    post["tool_input"]["command"] = json!(command);
    let mut pre = post.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    pre.as_object_mut().unwrap().remove("tool_response");
    hook(&root, &pre);
    assert!(sh(&root, command));
    hook(&root, &post);
    let kids = children(&root, "toolu_b1");
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["a.txt", "build/out.txt", "new.txt"], "no entry under .git/: {kids:?}");
    let outcome = journal_records(&root)
        .into_iter()
        .find(|r| r.id == "toolu_b1" && r.op == "applied" && r.parent.is_none())
        .expect("the command's outcome");
    assert_eq!(outcome.extra["reported"]["own_folders"], json!(1), "{outcome:?}");
    assert_eq!(outcome.extra["reported"]["more"], json!(250), "{outcome:?}");
    assert!(outcome.extra["reported"].get("snapshot_off").is_none(), "{outcome:?}");
    let out = walj_at(&root).args(["log"]).output().unwrap();
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(!log.contains("more files Claude Code's own list"), "{log}");
    let out = walj_at(&root).args(["doctor"]).output().unwrap();
    let doctor = String::from_utf8_lossy(&out.stdout);
    assert!(
        doctor.contains(
            "Claude Code's own list named 1 changed file(s) in 1 Bash command(s) that walj's snapshot missed"
        ),
        "{doctor}"
    );
    assert!(doctor.contains("build/out.txt"), "{doctor}");
    assert!(!doctor.contains("stopped at 200"), "{doctor}");
}

/// A command that runs for more than an hour (a long build): the pre-images its PreToolUse
/// stored are named only by its snapshot in `.walj/bash/` until its outcome is written. A
/// `walj compact` meanwhile keeps them, says so, and the command's change can still be
/// reverted after its Post.
#[test]
fn compact_keeps_the_preimages_a_running_commands_snapshot_names() {
    let (_repo, root) = repo(&[("a.txt", b"v1\n")]);
    fs::write(root.join("a.txt"), "dirty before the command\n").unwrap();
    let dirty = walj::store::blob_id(b"dirty before the command\n");
    let pre = bash_payload(&root, "PreToolUse", "toolu_long", "make all", false);
    assert_eq!(hook_ok(&root, &pre.to_string(), Parent::Test), "");
    let sidecar = fs::read_to_string(root.join(".walj/bash/5e551011-bash-test-toolu_long.json")).unwrap();
    assert!(sidecar.contains(&dirty), "the snapshot names the dirty file's image: {sidecar}");
    let object = root.join(".walj/store").join(&dirty[..2]).join(&dirty[2..]);
    assert!(object.is_file(), "the Pre stored the dirty file's image");
    let journal = fs::read_to_string(root.join(".walj/journal.jsonl")).unwrap();
    assert!(!journal.contains(&dirty), "no journal line names it yet");
    // An hour and more later, while the command still runs: every object looks old.
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    for sub in fs::read_dir(root.join(".walj/store")).unwrap() {
        for obj in fs::read_dir(sub.unwrap().path()).into_iter().flatten() {
            let p = obj.unwrap().path();
            fs::File::options().append(true).open(&p).unwrap().set_modified(two_hours_ago).unwrap();
        }
    }
    let out = walj_at(&root).args(["compact", "--json", "--yes"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(object.is_file(), "compaction removed the pre-image a running command needs: {v:#}");
    assert!(v["objects_pending"].as_u64().is_some_and(|n| n >= 1), "{v:#}");
    let text = walj_at(&root).args(["compact", "--yes"]).output().unwrap();
    let said = String::from_utf8_lossy(&text.stdout);
    assert!(said.contains("a Bash command waiting for its outcome snapshotted kept"), "{said}");
    // The command ends: its change is an entry whose pre-image is there to revert to.
    fs::write(root.join("a.txt"), "built\n").unwrap();
    let post = bash_payload(&root, "PostToolUse", "toolu_long", "make all", false);
    assert_eq!(hook_ok(&root, &post.to_string(), Parent::Test), "");
    let kids = children(&root, "toolu_long");
    let a = by_path(&kids, "a.txt");
    assert_eq!(blob_bytes(&root, &a.before).as_deref(), Some(&b"dirty before the command\n"[..]));
}

/// A Bash payload of session `session` (the others here are [`SESSION`]'s).
fn bash_payload_of(root: &Path, session: &str, event: &str, id: &str, command: &str) -> Value {
    let mut p = bash_payload(root, event, id, command, false);
    p["session_id"] = json!(session);
    p
}

/// The paths of the child entries of command `id` of `session`.
fn children_of(root: &Path, session: &str, id: &str) -> Vec<String> {
    let mut v: Vec<String> = journal_records(root)
        .into_iter()
        .filter(|r| r.session == session && r.parent.as_deref() == Some(id))
        .map(|r| r.path)
        .collect();
    v.sort();
    v
}

/// A tool_use_id is unique within its session only: a model stand-in (and another agent) may
/// give two sessions' calls the same one. Each command keeps its own snapshot (keyed by
/// session and id), so neither hides the other's changes: session A's Pre, its write, session
/// B's Pre with the same id, A's Post, B's write and Post. Keyed by the id alone, B's snapshot
/// took A's place: A's Post compared B's snapshot (which already held `a.txt`) and found
/// nothing, then removed it, and B's Post found no snapshot; neither file was journaled.
#[test]
fn two_sessions_commands_with_the_same_tool_id_both_journal_their_changes() {
    let (_t, root) = repo(&[("base.txt", b"base\n")]);
    const B: &str = "b0b0b0b0-other-session";
    let id = "toolu_01SameIdFromAMock";
    let (cmd_a, cmd_b) = ("echo a > a.txt", "echo b > b.txt");
    hook(&root, &bash_payload_of(&root, SESSION, "PreToolUse", id, cmd_a));
    assert!(sh(&root, cmd_a));
    hook(&root, &bash_payload_of(&root, B, "PreToolUse", id, cmd_b));
    hook(&root, &bash_payload_of(&root, SESSION, "PostToolUse", id, cmd_a));
    assert!(sh(&root, cmd_b));
    hook(&root, &bash_payload_of(&root, B, "PostToolUse", id, cmd_b));
    assert_eq!(children_of(&root, SESSION, id), ["a.txt"]);
    assert_eq!(children_of(&root, B, id), ["b.txt"]);
    assert!(bash_files(&root, ".json").iter().all(|e| e.file_name() == "cache.json"), "a sidecar was left");
}

/// The same on the killed-command path: session A's command finished (its outcome is in the
/// journal); session B's command with the same id was killed (no Post, its Claude Code gone).
/// B's change is derived from B's snapshot; A's outcome does not count as B's. Before, the
/// reader took A's outcome for B's and dropped B's snapshot: `y.txt` was never journaled.
#[test]
fn a_killed_command_whose_id_another_session_finished_still_gets_its_changes() {
    let (_t, root) = repo(&[("base.txt", b"base\n")]);
    const B: &str = "b0b0b0b0-other-session";
    let id = "toolu_01SameIdFromAMock";
    run_bash(&root, id, "echo a > a.txt");
    let cmd = "echo y > y.txt; sleep 600";
    hook(&root, &bash_payload_of(&root, B, "PreToolUse", id, cmd));
    assert!(sh(&root, "echo y > y.txt"));
    // The hooks' parent (B's "Claude Code") is gone: B reads as crashed.
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recover: Value = serde_json::from_slice(&out.stdout).unwrap();
    let b = recover["sessions"].as_array().unwrap().iter().find(|s| s["session"] == B);
    let paths: Vec<&str> = b
        .map(|s| s["entries"].as_array().unwrap().iter().filter_map(|e| e["path"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(paths, ["y.txt"], "{recover}");
    assert_eq!(children_of(&root, B, id), ["y.txt"]);
    assert_eq!(children_of(&root, SESSION, id), ["a.txt"]);
}

/// A sidecar an older walj wrote at PreToolUse (keyed by the tool_use_id alone) is still read
/// at PostToolUse; another session's old sidecar with that id is never taken.
#[test]
fn a_sidecar_keyed_by_the_id_alone_is_still_read_by_its_own_session() {
    let (_t, root) = repo(&[("base.txt", b"base\n")]);
    let id = "toolu_old_key";
    let cmd = "echo o > o.txt";
    hook(&root, &bash_payload(&root, "PreToolUse", id, cmd, false));
    let dir = root.join(".walj/bash");
    fs::rename(dir.join(format!("{SESSION}-{id}.json")), dir.join(format!("{id}.json"))).unwrap();
    assert!(sh(&root, cmd));
    // Another session's Post with the same id leaves it alone.
    hook(&root, &bash_payload_of(&root, "c0c0c0c0-third", "PostToolUse", id, cmd));
    assert!(dir.join(format!("{id}.json")).exists(), "another session took the old sidecar");
    hook(&root, &bash_payload(&root, "PostToolUse", id, cmd, false));
    assert_eq!(children_of(&root, SESSION, id), ["o.txt"]);
    assert!(!dir.join(format!("{id}.json")).exists());
}
