//! Large Bash commands are journaled whole: a codemod over 1,500 files, a command that
//! changes 20,000, a large file rewritten many times, and pre-images only where git's bytes
//! are the disk's (attributes, filters). Real git repositories, the real binary as the hook.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::path::Path;
use std::process::Command as Std;

use crate::common::{Parent, Repo, blob_bytes, git, hook_ok, journal_records, walj_at};
use serde_json::{Value, json};

const SESSION: &str = "5e551011-bulk-test";

fn hook(root: &Path, payload: &Value) {
    let out = hook_ok(root, &payload.to_string(), Parent::Timeout(120));
    assert_eq!(out, "", "walj hook printed");
    let errors = root.join(".walj/errors.log");
    assert!(!errors.exists(), "hook errors: {}", fs::read_to_string(errors).unwrap_or_default());
}

fn payload(root: &Path, event: &str, id: &str, command: &str) -> Value {
    let mut p = json!({
        "hook_event_name": event,
        "session_id": SESSION,
        "transcript_path": "/tmp/none.jsonl",
        "cwd": root,
        "tool_name": "Bash",
        "tool_use_id": id,
        "tool_input": {"command": command, "description": "test"},
    });
    if event == "PostToolUse" {
        p["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
    }
    p
}

/// PreToolUse, the command, PostToolUse, as Claude Code runs a Bash call.
fn run_bash(root: &Path, id: &str, command: &str) {
    hook(root, &payload(root, "PreToolUse", id, command));
    let ok = Std::new("sh").arg("-c").arg(command).current_dir(root).status().unwrap().success();
    assert!(ok, "{command} failed");
    hook(root, &payload(root, "PostToolUse", id, command));
}

fn children(root: &Path, parent: &str) -> Vec<walj::journal::Record> {
    journal_records(root).into_iter().filter(|r| r.parent.as_deref() == Some(parent)).collect()
}

/// The command's own outcome record (its `snapshot` summary).
fn outcome(root: &Path, id: &str) -> walj::journal::Record {
    journal_records(root)
        .into_iter()
        .rev()
        .find(|r| r.id == id && r.extra.contains_key("snapshot"))
        .unwrap_or_else(|| panic!("no outcome record of {id}"))
}

/// `walj revert --session SESSION`: (exit code, stdout + stderr).
fn revert_session(root: &Path) -> (i32, String) {
    let out = walj_at(root).args(["revert", "--session", SESSION]).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// A repository of `n` committed files `src/fNNNNN.txt` holding "old N".
fn many_files(n: usize) -> Repo {
    let repo = Repo::with_bytes(&[]);
    let src = repo.root.join("src");
    fs::create_dir_all(&src).unwrap();
    for i in 0..n {
        fs::write(src.join(format!("f{i:05}.txt")), format!("old {i}\n")).unwrap();
    }
    git(&repo.root, &["add", "-A"]);
    git(&repo.root, &["commit", "-q", "-m", "many files"]);
    repo
}

fn assert_all_old(root: &Path, n: usize) {
    let mut wrong = Vec::new();
    for i in 0..n {
        let p = root.join(format!("src/f{i:05}.txt"));
        if fs::read_to_string(&p).ok().as_deref() != Some(&format!("old {i}\n")) {
            wrong.push(i);
        }
    }
    assert!(wrong.is_empty(), "{} files not reverted, first {:?}", wrong.len(), &wrong[..wrong.len().min(5)]);
}

#[test]
fn a_codemod_over_1500_files_is_journaled_whole_and_revert_session_restores_every_file() {
    let repo = many_files(1500);
    let root = repo.root.clone();
    run_bash(&root, "toolu_codemod", "find src -name '*.txt' -exec sed -i 's/old/new/' {} +");
    let kids = children(&root, "toolu_codemod");
    assert_eq!(kids.len(), 1500, "one entry per changed file");
    for k in &kids {
        assert!(k.nocap.is_none(), "{k:#?}");
        assert!(blob_bytes(&root, &k.before).unwrap().starts_with(b"old "));
    }
    let snap = &outcome(&root, "toolu_codemod").extra["snapshot"];
    assert!(snap.get("cut_short").is_none(), "nothing was left out: {snap}");
    let (code, text) = revert_session(&root);
    assert_eq!(code, 0, "{text}");
    assert_all_old(&root, 1500);
}

#[test]
fn a_command_that_changes_20000_files_has_20000_entries_in_the_log() {
    let repo = many_files(20_000);
    let root = repo.root.clone();
    run_bash(&root, "toolu_twenty", "find src -name '*.txt' -exec sed -i 's/old/new/' {} +");
    let out = walj_at(&root).args(["log", "--json", "--all"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let n = log.iter().filter(|e| e["parent"] == json!("toolu_twenty")).count();
    assert_eq!(n, 20_000, "every changed path is an entry of its command");
    let snap = &outcome(&root, "toolu_twenty").extra["snapshot"];
    assert!(snap.get("cut_short").is_none() && snap.get("unseen").is_none(), "nothing left out: {snap}");
}

#[test]
fn after_a_large_codemod_the_next_snapshot_is_whole_again() {
    let repo = many_files(1500);
    let root = repo.root.clone();
    run_bash(&root, "toolu_big", "find src -name '*.txt' -exec sed -i 's/old/new/' {} +");
    run_bash(&root, "toolu_next", "printf 'x\\n' > src/f00001.txt");
    let snap = &outcome(&root, "toolu_next").extra["snapshot"];
    assert!(snap.get("cut_short").is_none(), "the next command's snapshots are whole: {snap}");
    let watch = [snap.get("watch"), snap.get("watch_pre")];
    for w in watch.iter().flatten() {
        assert!(!w.as_str().unwrap_or("").contains("index changed"), "git's index did not change: {snap}");
    }
    let kids = children(&root, "toolu_next");
    assert_eq!(kids.len(), 1, "{kids:#?}");
    assert_eq!(blob_bytes(&root, &kids[0].before).as_deref(), Some(&b"new 1\n"[..]));
}

#[test]
fn a_file_over_the_cap_rewritten_many_times_is_reverted_to_its_first_preimage() {
    let big: Vec<u8> = (0..4000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
    let repo = Repo::with_bytes(&[("gen/big.txt", &big)]);
    let root = repo.root.clone();
    fs::create_dir_all(root.join(".walj")).unwrap();
    // A cap below the file's size, as 8 MiB is below a 20 MB generated file.
    fs::write(root.join(".walj/config.toml"), "[capture]\nmax_bytes = 4096\n").unwrap();
    for i in 0..12 {
        run_bash(&root, &format!("toolu_gen{i}"), &format!("sed -i 's/^line /gen{i} /' gen/big.txt"));
    }
    assert_ne!(fs::read(root.join("gen/big.txt")).unwrap(), big);
    let (code, text) = revert_session(&root);
    assert_eq!(code, 0, "{text}");
    assert_eq!(fs::read(root.join("gen/big.txt")).unwrap(), big, "back to the committed original");
}

/// Git's stored bytes of `path` differ from the disk's here: reverting must never write them.
fn assert_not_git_bytes(root: &Path, id: &str, path: &str, disk_before: &[u8]) {
    let kids = children(root, id);
    let k = kids.iter().find(|k| k.path == path).unwrap_or_else(|| panic!("no entry for {path}: {kids:#?}"));
    let store = walj::store::Store::new(root.join(".walj/store"));
    if let Some(walj::journal::Blob::Id(b)) = &k.before
        && let Ok(bytes) = store.get(b)
    {
        assert_eq!(bytes, disk_before, "the pre-image is the disk's bytes, not git's stored form");
    } else {
        assert!(k.nocap.is_some(), "a pre-image walj does not hold says why: {k:#?}");
    }
    let _ = walj_at(root).args(["revert", &k.id]).output().unwrap();
    let now = fs::read(root.join(path)).unwrap();
    let git_form = Std::new("git").args(["show", &format!("HEAD:{path}")]).current_dir(root).output().unwrap().stdout;
    if git_form != disk_before {
        assert_ne!(now, git_form, "revert wrote git's stored form over {path}");
    }
}

#[test]
fn eol_crlf_files_never_get_gits_lf_bytes_as_their_preimage() {
    let repo = Repo::with_bytes(&[(".gitattributes", b"* text eol=crlf\n"), ("a.txt", b"one\ntwo\n")]);
    let root = repo.root.clone();
    // Checked out again so the working file has git's CRLF form.
    fs::remove_file(root.join("a.txt")).unwrap();
    git(&root, &["checkout", "--", "a.txt"]);
    let disk = fs::read(root.join("a.txt")).unwrap();
    assert_eq!(disk, b"one\r\ntwo\r\n");
    run_bash(&root, "toolu_crlf", "printf 'changed\\r\\n' > a.txt");
    assert_not_git_bytes(&root, "toolu_crlf", "a.txt", &disk);
}

#[test]
fn a_filter_lfs_path_never_gets_the_pointer_as_its_preimage() {
    let repo = Repo::with_bytes(&[(".gitattributes", b"*.bin filter=lfs diff=lfs merge=lfs -text\n")]);
    let root = repo.root.clone();
    // An LFS-like clean/smudge filter: git stores a pointer, the disk holds the content.
    git(&root, &["config", "filter.lfs.clean", "sh -c 'echo pointer-of-$(wc -c)'"]);
    git(&root, &["config", "filter.lfs.smudge", "cat"]);
    git(&root, &["config", "filter.lfs.required", "false"]);
    fs::write(root.join("model.bin"), b"the real large content\n").unwrap();
    git(&root, &["add", "model.bin"]);
    git(&root, &["commit", "-q", "-m", "lfs"]);
    let stored = Std::new("git").args(["show", "HEAD:model.bin"]).current_dir(&root).output().unwrap().stdout;
    assert!(stored.starts_with(b"pointer-of-"), "{}", String::from_utf8_lossy(&stored));
    let disk = fs::read(root.join("model.bin")).unwrap();
    run_bash(&root, "toolu_lfs", "printf 'regenerated\\n' > model.bin");
    assert_not_git_bytes(&root, "toolu_lfs", "model.bin", &disk);
}

#[test]
fn past_the_bound_every_path_is_listed_and_revert_session_says_what_it_left() {
    let repo = many_files(30);
    let root = repo.root.clone();
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::write(root.join(".walj/config.toml"), "[bash]\nmax_changes = 10\n").unwrap();
    run_bash(&root, "toolu_many", "find src -name '*.txt' -exec sed -i 's/old/new/' {} +");
    assert_eq!(children(&root, "toolu_many").len(), 10);
    let snap = &outcome(&root, "toolu_many").extra["snapshot"];
    let unseen = &snap["unseen"];
    assert_eq!(unseen["unlisted"], json!(20), "{snap}");
    assert_eq!(snap["cut_short"], json!(true), "{snap}");
    let file = root.join(unseen["unlisted_file"].as_str().unwrap());
    let listed: Vec<String> = fs::read_to_string(file).unwrap().lines().map(str::to_string).collect();
    assert_eq!(listed, (10..30).map(|i| format!("src/f{i:05}.txt")).collect::<Vec<_>>());

    // Every reader that lists the session says how many and which.
    let out = walj_at(&root).arg("recover").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("20 paths past the limit") && text.contains("src/f00010.txt"), "{text}");
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let left = &v["sessions"][0]["commands_left_out"][0];
    assert_eq!(left["unseen"]["unlisted"], json!(20), "{v:#}");

    let out = walj_at(&root).args(["log", "--all"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("command left changes out of its entries") && text.contains("20 paths"), "{text}");

    let out = walj_at(&root).arg("doctor").output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("changed more files than [bash] max_changes: 20 path(s)"), "{text}");

    // revert --session undoes what it can and never reports all clear.
    let (code, text) = revert_session(&root);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("20 paths past the limit"), "{text}");
    let out = walj_at(&root).arg("recover").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("no unresolved journal entries"), "{text}");
    assert!(text.contains("20 paths past the limit"), "{text}");
}

/// SessionStart, as Claude Code runs it before the first prompt (its note may be printed).
fn session_start(root: &Path) {
    let p = json!({
        "hook_event_name": "SessionStart",
        "session_id": SESSION,
        "transcript_path": "/tmp/none.jsonl",
        "cwd": root,
        "source": "startup",
    });
    hook_ok(root, &p.to_string(), Parent::Timeout(120));
}

/// A command waits as long as the fill pass needs on a loaded test machine (by default it
/// waits 5 s at most, then goes on with what is read).
fn patient_fill(root: &Path) {
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::write(root.join(".walj/config.toml"), "[bash]\nfill_wait_ms = 110000\n").unwrap();
}

/// A folder outside git holding `n` files `src/fNNNNN.txt` ("old N").
fn many_files_outside_git(n: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, root) = crate::common::scratch();
    fs::create_dir_all(root.join("src")).unwrap();
    for i in 0..n {
        fs::write(root.join(format!("src/f{i:05}.txt")), format!("old {i}\n")).unwrap();
    }
    (dir, root)
}

#[test]
fn outside_git_the_first_command_of_a_session_has_every_preimage_and_revert_session_restores_all() {
    let (_dir, root) = many_files_outside_git(1500);
    patient_fill(&root);
    session_start(&root);
    run_bash(&root, "toolu_docs", "find src -name '*.txt' -exec sed -i 's/old/new/' {} +");
    let kids = children(&root, "toolu_docs");
    assert_eq!(kids.len(), 1500, "one entry per changed file");
    let missing: Vec<&str> = kids.iter().filter(|k| k.nocap.is_some()).map(|k| k.path.as_str()).collect();
    assert!(
        missing.is_empty(),
        "{} entries without a pre-image, first {:?}",
        missing.len(),
        &missing[..missing.len().min(3)]
    );
    let snap = &outcome(&root, "toolu_docs").extra["snapshot"];
    assert!(snap.get("cut_short").is_none(), "nothing was left out: {snap}");
    let (code, text) = revert_session(&root);
    assert_eq!(code, 0, "{text}");
    assert_all_old(&root, 1500);
}

#[test]
fn a_snapshot_cut_short_by_thousands_of_new_files_is_whole_again_for_the_next_command() {
    let repo = many_files(10);
    let root = repo.root.clone();
    // A burst of new untracked files walj has never read (a generator run outside Claude).
    fs::create_dir_all(root.join("gen")).unwrap();
    for i in 0..3000 {
        fs::write(root.join(format!("gen/g{i:05}.txt")), format!("gen {i}\n")).unwrap();
    }
    patient_fill(&root);
    // The first command's snapshots cannot read them all in a hook's budget.
    run_bash(&root, "toolu_first", "true");
    // The next command rewrites every one of them: each still has its pre-image.
    run_bash(&root, "toolu_second", "find gen -name '*.txt' -exec sed -i 's/gen/GEN/' {} +");
    let kids = children(&root, "toolu_second");
    assert_eq!(kids.len(), 3000, "one entry per changed file");
    let missing: Vec<&str> = kids.iter().filter(|k| k.nocap.is_some()).map(|k| k.path.as_str()).collect();
    assert!(
        missing.is_empty(),
        "{} entries without a pre-image, first {:?}",
        missing.len(),
        &missing[..missing.len().min(3)]
    );
    for k in kids.iter().take(50) {
        assert!(blob_bytes(&root, &k.before).unwrap().starts_with(b"gen "), "{k:#?}");
    }
    let snap = &outcome(&root, "toolu_second").extra["snapshot"];
    assert!(snap.get("cut_short").is_none(), "the second command's snapshots are whole: {snap}");
    for w in [snap.get("watch"), snap.get("watch_pre")].iter().flatten() {
        let w = w.as_str().unwrap_or("");
        assert!(!w.contains("index changed") && !w.contains("cut short"), "no false reason: {snap}");
    }
    // The first command changed nothing, though its snapshot could not read the new files.
    let first = children(&root, "toolu_first");
    assert!(first.is_empty(), "{} entries of a command that changed nothing: {:?}", first.len(), first.first());
    let (code, text) = revert_session(&root);
    assert_eq!(code, 0, "{text}");
    let wrong = (0..3000)
        .filter(|i| fs::read_to_string(root.join(format!("gen/g{i:05}.txt"))).ok() != Some(format!("gen {i}\n")));
    assert_eq!(wrong.count(), 0, "every file is back");
}

#[test]
fn outside_git_a_command_that_changes_20000_files_has_20000_entries_each_with_its_preimage() {
    let (_dir, root) = many_files_outside_git(20_000);
    patient_fill(&root);
    session_start(&root);
    run_bash(&root, "toolu_twenty_docs", "find src -name '*.txt' -exec sed -i 's/old/new/' {} +");
    let out = walj_at(&root).args(["log", "--json", "--all"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let kids: Vec<&Value> = log.iter().filter(|e| e["parent"] == json!("toolu_twenty_docs")).collect();
    assert_eq!(kids.len(), 20_000, "every changed path is an entry of its command");
    let missing = kids.iter().filter(|k| k.get("nocap").is_some_and(|n| !n.is_null())).count();
    assert_eq!(missing, 0, "entries without a pre-image: {:?}", kids.iter().find(|k| !k["nocap"].is_null()));
    let snap = &outcome(&root, "toolu_twenty_docs").extra["snapshot"];
    assert!(snap.get("cut_short").is_none(), "nothing was left out: {snap}");
}

/// The PostToolUse of `id` as a child process (the real binary), to be killed.
fn spawn_post(root: &Path, id: &str, command: &str) -> std::process::Child {
    spawn_hook(root, &payload(root, "PostToolUse", id, command))
}

fn stop(root: &Path) {
    hook(
        root,
        &json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": root, "transcript_path": "/tmp/none.jsonl"}),
    );
}

/// Every entry of `id` names images the store holds whole (or says why it has none), one per
/// changed file.
fn assert_whole(root: &Path, id: &str, n: usize) {
    let kids = children(root, id);
    let mut paths: Vec<&str> = kids.iter().map(|k| k.path.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!((kids.len(), paths.len()), (n, n), "{id}: one entry per changed file, each once");
    let store = walj::store::Store::new(root.join(".walj/store"));
    for k in &kids {
        assert!(k.nocap.is_none(), "{id}: {k:#?}");
        for b in [&k.before, &k.after] {
            if let Some(walj::journal::record::Blob::Id(blob)) = b {
                store.get(blob).unwrap_or_else(|e| panic!("{id}: {} names {blob}: {e}", k.path));
            }
        }
    }
}

/// The worst moment of a codemod's PostToolUse: its comparison done (thousands of images
/// stored), its entries not yet in the journal. Killed there (here while it waits for the
/// journal's lock, which this test holds), the command's Pre snapshot must still be there, so
/// that the session's Stop records every change; before, the Post had removed it first, and
/// the 300 changes were in no entry while `revert --session` said all was well.
#[test]
fn a_codemods_post_killed_before_its_entries_are_appended_leaves_them_to_the_stop() {
    post_killed_before_its_entries_then_stop("toolu_codemod_killed", false);
}

/// A codemod's PostToolUse (of a background command when `in_background`) holds its
/// comparison, waits for the journal's lock (held here) and is killed there, before it
/// appended; the session's Stop then records all 300 changes, once and whole, and `revert
/// --session` restores every file.
fn post_killed_before_its_entries_then_stop(id: &str, in_background: bool) {
    let n = 300;
    let repo = many_files(n);
    let root = repo.root.clone();
    let command = "find src -name '*.txt' -exec sed -i 's/old/new/' {} +";
    let call = |event: &str| {
        let p = payload(&root, event, id, command);
        if in_background { background(p, id) } else { p }
    };
    hook(&root, &call("PreToolUse"));
    assert!(Std::new("sh").arg("-c").arg(command).current_dir(&root).status().unwrap().success());
    let cache = root.join(".walj/bash/cache.json");
    let stamp = |p: &Path| fs::metadata(p).ok().map(|m| (m.modified().unwrap(), m.len()));
    let before = stamp(&cache);
    let lock =
        fs::OpenOptions::new().create(true).truncate(false).write(true).open(root.join(".walj/journal.lock")).unwrap();
    lock.lock().unwrap();
    let mut post = spawn_hook(&root, &call("PostToolUse"));
    // The Post saved its snapshot as the next command's base: its comparison is done, and
    // it goes on to append (and waits for the lock, whose deadline is 2 s).
    let t = std::time::Instant::now();
    while stamp(&cache) == before {
        assert!(t.elapsed().as_secs() < 120, "the Post never saved its snapshot");
        assert!(post.try_wait().unwrap().is_none(), "the Post ended without the journal's lock");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    post.kill().unwrap();
    post.wait().unwrap();
    lock.unlock().unwrap();
    assert!(children(&root, id).is_empty(), "killed before it appended");
    stop(&root);
    assert_whole(&root, id, n);
    let (code, text) = revert_session(&root);
    assert_eq!(code, 0, "{text}");
    assert_all_old(&root, n);
}

/// kill -9 at random moments of codemods' PostToolUse (each storing hundreds of new images),
/// each followed by its session's Stop: every change of every command is in one entry whose
/// images the store holds whole, and `revert --session` restores every file. Iterations:
/// WALJ_KILL_ITERATIONS (default 6).
#[test]
fn codemods_whose_post_is_killed_at_any_moment_lose_nothing() {
    let iterations: u64 = std::env::var("WALJ_KILL_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
    let n = 300;
    let repo = many_files(n);
    let root = repo.root.clone();
    // One complete Post, timed: the kills land anywhere within such a run.
    let t = std::time::Instant::now();
    run_bash(&root, "toolu_timed", "find src -name '*.txt' -exec sed -i 's/^[a-z0-9]* /t /' {} +");
    let span = t.elapsed().as_micros() as u64;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..iterations {
        let id = format!("toolu_kill{i}");
        let command = format!("find src -name '*.txt' -exec sed -i 's/^[a-z0-9]* /v{i} /' {{}} +");
        hook(&root, &payload(&root, "PreToolUse", &id, &command));
        assert!(Std::new("sh").arg("-c").arg(&command).current_dir(&root).status().unwrap().success());
        let mut post = spawn_post(&root, &id, &command);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(std::time::Duration::from_micros(seed % span.max(1)));
        let _ = post.kill();
        let _ = post.wait();
        stop(&root);
        assert_whole(&root, &id, n);
    }
    let (code, text) = revert_session(&root);
    assert_eq!(code, 0, "{text}");
    assert_all_old(&root, n);
}

/// The PostToolUse of `id` run to its end with `env` set (the settle pass it starts inherits it),
/// under `timeout` as [`hook`] runs it (the session reads as crashed once it returned).
fn post_with(root: &Path, id: &str, command: &str, env: &[(&str, &str)]) {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut cmd = Std::new("timeout");
    cmd.arg("120")
        .arg(crate::common::walj_bin())
        .arg("--project")
        .arg(root)
        .arg("hook")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload(root, "PostToolUse", id, command).to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
}

/// Waits for a settle pass paused (`WALJ_SETTLE_PAUSE`) at `stage` and kills it (kill -9).
fn kill_paused_pass(root: &Path, stage: &str) {
    let marker = root.join(format!(".walj/store/pending/paused-{stage}"));
    let t = std::time::Instant::now();
    let pid = loop {
        if let Some(pid) = fs::read_to_string(&marker).ok().filter(|p| !p.is_empty()) {
            break pid;
        }
        assert!(t.elapsed().as_secs() < 60, "the settle pass never reached {stage}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(Std::new("kill").args(["-9", pid.trim()]).status().unwrap().success());
    // Gone (a zombie no more once its parent, the hook, has exited and init reaped it).
    let proc = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    while proc.exists() && !fs::read_to_string(proc.join("stat")).unwrap_or_default().contains(") Z ") {
        assert!(t.elapsed().as_secs() < 60, "the settle pass outlived kill -9");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    fs::remove_file(&marker).unwrap();
}

fn spills(root: &Path) -> usize {
    fs::read_dir(root.join(".walj/store/pending"))
        .map(|rd| rd.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "spill")).count())
        .unwrap_or(0)
}

fn recover_text(root: &Path) -> String {
    String::from_utf8(walj_at(root).arg("recover").output().unwrap().stdout).unwrap()
}

/// A codemod's Post names its 3,000 images in the journal and leaves their copy into the store
/// to a detached settle pass. That pass, killed (kill -9) before it copied anything and, in a
/// second command, after it copied everything but before it removed its spill: meanwhile
/// `recover`, `recover --json`, `log` and `doctor` say the images are pending; the next hook
/// (the Stop; the next command's Pre) finishes the copy, and `revert --session` restores every
/// file. On the old code the Post stored every image itself (no `pending` in its record).
#[test]
fn a_codemods_settle_pass_killed_at_its_worst_moments_is_finished_by_the_next_hook() {
    let n = 1500;
    let repo = many_files(n);
    let root = repo.root.clone();
    let store = walj::store::Store::new(root.join(".walj/store"));
    for (i, stage) in ["locked", "stored"].into_iter().enumerate() {
        let id = format!("toolu_settle_{stage}");
        let command = format!("find src -name '*.txt' -exec sed -i 's/^[a-z0-9]* /s{i} /' {{}} +");
        hook(&root, &payload(&root, "PreToolUse", &id, &command));
        assert!(Std::new("sh").arg("-c").arg(&command).current_dir(&root).status().unwrap().success());
        post_with(&root, &id, &command, &[("WALJ_SETTLE_PAUSE", stage)]);
        kill_paused_pass(&root, stage);
        let snap = &outcome(&root, &id).extra["snapshot"];
        // Both sides new to the store in the first command; the second's pre-images are the
        // first's post-images, stored already.
        let expected = if i == 0 { 2 * n } else { n };
        assert_eq!(snap["pending"]["objects"], json!(expected), "journaled as pending: {snap}");
        let kids = children(&root, &id);
        assert_eq!(kids.len(), n);
        assert!(spills(&root) > 0, "{stage}: the spill is left");
        if stage == "locked" {
            // Nothing copied: the lines name objects the store does not hold yet.
            let missing = kids
                .iter()
                .filter(|k| match &k.after {
                    Some(walj::journal::record::Blob::Id(b)) => !store.object_path(b).exists(),
                    _ => false,
                })
                .count();
            assert_eq!(missing, n, "the pass was killed before it copied");
        }
        // Every reader says so, without copying anything itself.
        let text = recover_text(&root);
        assert!(text.contains(&format!("pending: {expected} images are named")), "{text}");
        let v: Value =
            serde_json::from_slice(&walj_at(&root).args(["recover", "--json"]).output().unwrap().stdout).unwrap();
        assert_eq!(v["pending_images"]["objects"], json!(expected), "{v}");
        let log = String::from_utf8(walj_at(&root).arg("log").output().unwrap().stdout).unwrap();
        assert!(log.contains("pending: "), "{log}");
        let doctor = String::from_utf8(walj_at(&root).arg("doctor").output().unwrap().stdout).unwrap();
        assert!(doctor.contains("pending: "), "{doctor}");
        assert!(spills(&root) > 0, "readers copied nothing");
        // The next hook finishes it: the Stop of the first, the next command's Pre of the second.
        if i == 0 {
            stop(&root);
        } else {
            hook(&root, &payload(&root, "PreToolUse", "toolu_next", "true"));
            hook(&root, &payload(&root, "PostToolUse", "toolu_next", "true"));
            stop(&root);
        }
        assert_eq!(spills(&root), 0, "{stage}: settled by the next hook");
        for k in &kids {
            for b in [&k.before, &k.after] {
                if let Some(walj::journal::record::Blob::Id(b)) = b {
                    assert!(store.object_path(b).exists(), "{stage}: {} {b} not in the store", k.path);
                }
            }
        }
        assert!(!recover_text(&root).contains("pending:"));
    }
    assert_whole(&root, "toolu_settle_locked", n);
    assert_whole(&root, "toolu_settle_stored", n);
    let (code, text) = revert_session(&root);
    assert_eq!(code, 0, "{text}");
    assert_all_old(&root, n);
}

/// The settle pass killed at random moments of its run (mid-batch included: temp files
/// written, not renamed): the next hook finishes it, every image whole. Iterations:
/// WALJ_KILL_ITERATIONS (default 6).
#[test]
fn a_settle_pass_killed_at_any_moment_loses_nothing() {
    let iterations: u64 = std::env::var("WALJ_KILL_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
    let n = 300;
    let repo = many_files(n);
    let root = repo.root.clone();
    let settle = |root: &Path| {
        Std::new(crate::common::walj_bin())
            .arg("--project")
            .arg(root)
            .arg("settle")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let no_pass = [("WALJ_SETTLE_DETACHED", "0")];
    // One pass, timed: the kills land anywhere within such a run.
    let command = "find src -name '*.txt' -exec sed -i 's/^[a-z0-9]* /t /' {} +";
    hook(&root, &payload(&root, "PreToolUse", "toolu_timed", command));
    assert!(Std::new("sh").arg("-c").arg(command).current_dir(&root).status().unwrap().success());
    post_with(&root, "toolu_timed", command, &no_pass);
    assert!(spills(&root) > 0);
    let t = std::time::Instant::now();
    assert!(settle(&root).wait().unwrap().success());
    let span = t.elapsed().as_micros() as u64;
    assert_eq!(spills(&root), 0);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for i in 0..iterations {
        let id = format!("toolu_pass_kill{i}");
        let command = format!("find src -name '*.txt' -exec sed -i 's/^[a-z0-9]* /p{i} /' {{}} +");
        hook(&root, &payload(&root, "PreToolUse", &id, &command));
        assert!(Std::new("sh").arg("-c").arg(&command).current_dir(&root).status().unwrap().success());
        post_with(&root, &id, &command, &no_pass);
        let mut pass = settle(&root);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(std::time::Duration::from_micros(seed % span.max(1)));
        let _ = pass.kill();
        let _ = pass.wait();
        stop(&root);
        assert_eq!(spills(&root), 0);
        assert_whole(&root, &id, n);
    }
    let (code, text) = revert_session(&root);
    assert_eq!(code, 0, "{text}");
    assert_all_old(&root, n);
}

/// The `git gc` window. The command's pre-images are staged-only blobs (named by the index
/// alone), spilled as git ids. Through Claude, the next command's Pre copies them before that
/// command (`git reset; git gc --prune=now`) can drop them: the revert restores every file.
/// Outside Claude, the same two git commands run while no pass has copied them: the revert
/// says the pre-images are unavailable, and restores nothing in their place.
#[test]
fn staged_only_preimages_survive_a_gc_through_claude_and_are_said_unavailable_outside_it() {
    let n = 100;
    for through_claude in [true, false] {
        let repo = many_files(n);
        let root = repo.root.clone();
        // Staged, never committed: the index alone names these blobs.
        assert!(
            Std::new("sh")
                .arg("-c")
                .arg("find src -name '*.txt' -exec sed -i 's/^old /staged /' {} + && git add -A")
                .current_dir(&root)
                .status()
                .unwrap()
                .success()
        );
        // Older than a snapshot's racy window: clean by their stat, their bytes git's.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let command = "find src -name '*.txt' -exec sed -i 's/^staged /new /' {} +";
        hook(&root, &payload(&root, "PreToolUse", "toolu_stagedit", command));
        assert!(Std::new("sh").arg("-c").arg(command).current_dir(&root).status().unwrap().success());
        post_with(&root, "toolu_stagedit", command, &[("WALJ_SETTLE_PAUSE", "start")]);
        kill_paused_pass(&root, "start");
        assert!(spills(&root) > 0);
        let gc = "git reset -q && git -c gc.reflogExpire=now -c gc.reflogExpireUnreachable=now gc -q --prune=now";
        if through_claude {
            run_bash(&root, "toolu_gc", gc);
        } else {
            assert!(Std::new("sh").arg("-c").arg(gc).current_dir(&root).status().unwrap().success());
        }
        let (code, text) = revert_session(&root);
        let staged = (0..n).filter(|i| {
            fs::read_to_string(root.join(format!("src/f{i:05}.txt"))).ok().as_deref() == Some(&format!("staged {i}\n"))
        });
        if through_claude {
            assert_eq!(code, 0, "{text}");
            assert_eq!(staged.count(), n, "{text}");
        } else {
            assert_ne!(code, 0, "{text}");
            assert!(text.contains("unavailable"), "{text}");
            assert_eq!(staged.count(), 0, "nothing guessed: {text}");
        }
    }
}

/// `walj hook` on `payload` as a child process (the real binary), to be killed.
fn spawn_hook(root: &Path, payload: &Value) -> std::process::Child {
    crate::common::spawn_hook(root, &payload.to_string())
}

fn background(mut p: Value, id: &str) -> Value {
    p["tool_input"]["run_in_background"] = json!(true);
    if p["hook_event_name"] == "PostToolUse" {
        p["tool_response"]["backgroundTaskId"] = json!(format!("task-{id}"));
    }
    p
}

/// A background command's PostToolUse killed before its entries are appended (here while it
/// waits for the journal's lock, which this test holds): its sidecar must still hold the Pre's
/// base, so the session's Stop records every change. Before, the Post replaced that base with
/// its own snapshot first, and the Stop found nothing: the 300 changes were in no entry.
#[test]
fn a_background_commands_post_killed_before_its_entries_are_appended_leaves_them_to_the_stop() {
    post_killed_before_its_entries_then_stop("toolu_bg_killed", true);
}

/// A background command's Post that appended its entries and died before it replaced its
/// sidecar's base (simulated: the Pre's sidecar put back after the Post): the Stop compares
/// from the older base, and records none of those changes a second time.
#[test]
fn a_background_commands_changes_are_not_recorded_twice_when_its_post_died_before_the_rebase() {
    let n = 100;
    let repo = many_files(n);
    let root = repo.root.clone();
    let id = "toolu_bg_twice";
    let command = "find src -name '*.txt' -exec sed -i 's/old/new/' {} +";
    hook(&root, &background(payload(&root, "PreToolUse", id, command), id));
    let sidecars: Vec<_> = fs::read_dir(root.join(".walj/bash"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("cache.json"))
        .collect();
    assert_eq!(sidecars.len(), 1, "{sidecars:?}");
    let pre_sidecar = fs::read(&sidecars[0]).unwrap();
    assert!(Std::new("sh").arg("-c").arg(command).current_dir(&root).status().unwrap().success());
    hook(&root, &background(payload(&root, "PostToolUse", id, command), id));
    assert_eq!(children(&root, id).len(), n);
    fs::write(&sidecars[0], &pre_sidecar).unwrap();
    stop(&root);
    assert_whole(&root, id, n);
}
