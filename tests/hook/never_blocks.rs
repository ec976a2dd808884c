//! The hook never blocks, whatever is on disk (FIFOs, devices), through the real
//! binary with a hard time limit on every call.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test
#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Claude, Locate, Parent, Repo, walj_bin};
use serde_json::{Value, json};

/// Every hook call and command here must end well inside this.
const LIMIT: Duration = Duration::from_secs(5);

/// Runs one hook payload under `timeout` (which kills a hung hook, exit 124) and checks it
/// exited 0 inside [`LIMIT`].
fn hook_in_time(repo: &Repo, payload: &Value) {
    let t = Instant::now();
    let (code, _, err) =
        repo.hook_run(&payload.to_string(), Parent::Timeout(LIMIT.as_secs() as u32 + 5), Locate::Folder);
    let took = t.elapsed();
    assert_eq!(code, 0, "hook exit {code} (124: killed, it hung): {err}");
    assert!(took < LIMIT, "hook took {took:?}");
}

/// Runs `walj ARGS` in the project under `timeout`, checks it ended (any exit code but a
/// kill) inside [`LIMIT`]; returns (code, stdout).
fn walj_in_time(repo: &Repo, args: &[&str]) -> (i32, String) {
    let t = Instant::now();
    let out = Command::new("timeout")
        .arg((LIMIT.as_secs() + 5).to_string())
        .arg(walj_bin())
        .args(args)
        .current_dir(&repo.root)
        .env("NO_COLOR", "1")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = t.elapsed();
    let code = out.status.code().unwrap_or(-1);
    assert_ne!(code, 124, "walj {args:?} hung (killed by timeout)");
    assert!(took < LIMIT, "walj {args:?} took {took:?}");
    (code, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(rustix::fs::CWD, path, rustix::fs::FileType::Fifo, rustix::fs::Mode::from_raw_mode(0o644), 0)
        .unwrap();
}

fn tool(repo: &Repo, event: &str, name: &str, id: &str, input: Value) -> Value {
    json!({
        "session_id": "s-hard", "cwd": repo.root, "hook_event_name": event,
        "tool_name": name, "tool_use_id": id, "tool_input": input,
    })
}

/// The journal's file records of call `id` with their `op` and `nocap`.
fn calls(repo: &Repo, id: &str) -> Vec<(String, Option<String>)> {
    repo.journal_records().into_iter().filter(|r| r.id == id).map(|r| (r.op.clone(), r.nocap.clone())).collect()
}

/// A Write to `rel` (which is not a regular file): PreToolUse and PostToolUse in time,
/// both recorded as `not_a_file`.
fn write_to_special(repo: &Repo, rel: &str, id: &str) {
    let input = json!({"file_path": repo.path(rel), "content": "x"});
    hook_in_time(repo, &tool(repo, "PreToolUse", "Write", id, input.clone()));
    let mut post = tool(repo, "PostToolUse", "Write", id, input);
    post["tool_response"] = json!({"type": "update", "filePath": repo.path(rel), "content": "x"});
    hook_in_time(repo, &post);
    let got = calls(repo, id);
    assert_eq!(
        got,
        vec![
            ("intent".to_string(), Some("not_a_file".to_string())),
            ("applied".to_string(), Some("not_a_file".to_string()))
        ],
        "{rel}"
    );
}

#[test]
fn a_fifo_as_file_path_never_blocks_the_hook() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    mkfifo(&repo.path("pipe"));
    write_to_special(&repo, "pipe", "t-fifo");
    // A symlink inside the project to a FIFO is refused too; one to a regular file is captured.
    std::os::unix::fs::symlink(repo.path("pipe"), repo.path("link-to-pipe")).unwrap();
    write_to_special(&repo, "link-to-pipe", "t-link-fifo");
    std::os::unix::fs::symlink(repo.path("a.txt"), repo.path("link-to-a")).unwrap();
    let input = json!({"file_path": repo.path("link-to-a"), "content": "x"});
    hook_in_time(&repo, &tool(&repo, "PreToolUse", "Write", "t-link", input));
    let r = repo.journal_records().into_iter().find(|r| r.id == "t-link").unwrap();
    assert_eq!(r.nocap, None);
    assert_eq!(crate::common::blob_bytes(&repo.root, &r.before).unwrap(), b"a\n");
}

#[test]
fn a_character_device_is_never_read() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    // /dev/zero's numbers (1, 5): read until memory runs out if walj read it.
    let dev = repo.path("zero");
    let made = rustix::fs::mknodat(
        rustix::fs::CWD,
        &dev,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 5),
    );
    if let Err(e) = made {
        eprintln!("skipped: mknod of a character device is not allowed here ({e})");
        return;
    }
    write_to_special(&repo, "zero", "t-dev");
}

#[test]
fn a_tracked_file_replaced_by_a_fifo_blocks_no_reader() {
    let repo = Repo::new(&[("a.txt", "one\n"), ("b.txt", "b\n")]);
    let claude = Claude::new(&repo, "s-fifo");
    claude.start();
    claude.edit("t-edit", "a.txt", "one", "two");
    std::fs::remove_file(repo.path("a.txt")).unwrap();
    mkfifo(&repo.path("a.txt"));
    // The Stop hook verifies applied entries against the disk.
    hook_in_time(&repo, &json!({"session_id": "s-fifo", "cwd": repo.root, "hook_event_name": "Stop"}));
    let (code, out) = walj_in_time(&repo, &["recover", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let e = &v["sessions"][0]["entries"][0];
    assert_eq!(e["path"], "a.txt", "{v:#}");
    assert_eq!(e["status"], "drifted", "a FIFO where the file was is shown as drifted: {v:#}");
    for args in [
        &["status"][..],
        &["log"],
        &["diff", "t-edit"],
        &["diff", "t-edit", "--head"],
        &["checkpoint"],
        &["revert", "t-edit", "--dry-run"],
    ] {
        walj_in_time(&repo, args);
    }
}

#[test]
fn open_regular_refuses_a_fifo_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("pipe");
    mkfifo(&p);
    let t = Instant::now();
    let err = walj::fsutil::read_regular(&p).unwrap_err();
    assert!(walj::fsutil::is_not_a_file(&err), "{err}");
    let err = walj::store::file_blob_id(&p).unwrap_err();
    assert!(walj::fsutil::is_not_a_file(&err), "{err}");
    assert!(t.elapsed() < LIMIT);
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    assert_eq!(walj::fsutil::read_regular(&dir.path().join("f")).unwrap(), b"x");
}

/// Issue 13 item 11: a hard link inside the project may be a file outside it: recorded by id
/// only (`nocap: "hardlink"`) unless `[capture] hardlinks = true`.
#[test]
fn a_hard_link_is_not_captured_blindly() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("private.txt");
    std::fs::write(&secret, "outside bytes\n").unwrap();
    std::fs::hard_link(&secret, repo.path("linked.txt")).unwrap();
    let input = json!({"file_path": repo.path("linked.txt"), "content": "x"});
    hook_in_time(&repo, &tool(&repo, "PreToolUse", "Write", "t-link", input.clone()));
    let r = repo.journal_records().into_iter().find(|r| r.id == "t-link").unwrap();
    assert_eq!(r.nocap.as_deref(), Some("hardlink"));
    let Some(walj::journal::Blob::Id(id)) = &r.before else { panic!("{r:?}") };
    assert!(!repo.store_object(id).exists(), "the linked bytes were stored");
    // Configured otherwise: captured.
    std::fs::write(repo.root.join(".walj/config.toml"), "[capture]\nhardlinks = true\n").unwrap();
    hook_in_time(&repo, &tool(&repo, "PreToolUse", "Write", "t-link2", input));
    let r = repo.journal_records().into_iter().find(|r| r.id == "t-link2").unwrap();
    assert_eq!(r.nocap, None);
    assert_eq!(crate::common::blob_bytes(&repo.root, &r.before).unwrap(), b"outside bytes\n");
}

/// Issue 13 item 11: walj's own files are 0600 (folders 0700) and its own, without exception:
/// the Bash snapshot's copy of git's index was a 0644 hard link to `.git/index`, the settings
/// backup kept the settings file's mode. walj may give one of its own files two names (the
/// Bash snapshot's copies of one index version): every name of such a file is under `.walj`.
#[test]
fn walj_files_are_private_and_never_links() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let repo = Repo::new(&[("a.txt", "a\n")]);
    std::fs::create_dir_all(repo.path(".claude")).unwrap();
    std::fs::write(repo.path(".claude/settings.json"), "{\"model\": \"opus\"}\n").unwrap();
    std::fs::set_permissions(repo.path(".claude/settings.json"), std::fs::Permissions::from_mode(0o644)).unwrap();
    repo.ok(&["install", "--command", "walj hook"]);
    let claude = Claude::new(&repo, "s-perm");
    claude.start();
    claude.edit("t-edit", "a.txt", "a", "b");
    let bash = |event: &str| {
        json!({"session_id": "s-perm", "cwd": repo.root, "hook_event_name": event, "tool_name": "Bash",
               "tool_use_id": "t-bash", "tool_input": {"command": "echo c > c.txt", "run_in_background": true},
               "tool_response": {"stdout": "", "stderr": "", "backgroundTaskId": "bg1"}})
        .to_string()
    };
    repo.hook(&bash("PreToolUse"));
    std::fs::write(repo.path("c.txt"), "c\n").unwrap();
    repo.hook(&bash("PostToolUse"));
    // The git index is unchanged since the Pre: a second command links its copy.
    let bash2 = bash("PreToolUse").replace("t-bash", "t-bash2");
    repo.hook(&bash2);
    repo.hook(&bash2.replace("PreToolUse", "PostToolUse"));
    let mut seen = 0;
    let mut names: std::collections::HashMap<(u64, u64), (u64, Vec<std::path::PathBuf>)> = Default::default();
    let mut stack = vec![repo.root.join(".walj")];
    while let Some(dir) = stack.pop() {
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
                continue;
            }
            seen += 1;
            assert_eq!(m.permissions().mode() & 0o777, 0o600, "{}", e.path().display());
            names.entry((m.dev(), m.ino())).or_insert((m.nlink(), Vec::new())).1.push(e.path());
        }
    }
    for (nlink, paths) in names.values() {
        assert_eq!(*nlink, paths.len() as u64, "{paths:?}: a name outside .walj");
    }
    assert!(names.values().any(|(n, _)| *n > 1), "the second command's index copy is a link to the first's");
    assert!(repo.root.join(".walj/backups").is_dir(), "the settings backup was written");
    let bash_dir = std::fs::read_dir(repo.root.join(".walj/bash")).unwrap().flatten();
    assert!(
        bash_dir.into_iter().any(|e| e.file_name().to_string_lossy().ends_with(".index")),
        "an index copy was kept"
    );
    assert!(seen > 5);
}

/// Issue 13 item 9: a `file_path` with a NUL byte, or longer than any file system takes, is
/// still recorded (escaped or cut, with the reason); the hook used to fail and drop it.
#[test]
fn an_unusable_file_path_is_still_recorded() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let long = format!("{}/{}", repo.root.display(), "d/".repeat(2100) + "f.txt");
    let long_name = format!("{}/{}.txt", repo.root.display(), "n".repeat(300));
    let nul = format!("{}/a\u{0}b.txt", repo.root.display());
    for (id, path, why) in
        [("t-nul", &nul, "path_nul"), ("t-long", &long, "path_too_long"), ("t-name", &long_name, "path_too_long")]
    {
        let input = json!({"file_path": path, "content": "x"});
        hook_in_time(&repo, &tool(&repo, "PreToolUse", "Write", id, input.clone()));
        let mut post = tool(&repo, "PostToolUse", "Write", id, input);
        post["tool_response"] = json!({"type": "create", "filePath": path, "content": "x"});
        hook_in_time(&repo, &post);
        let got = calls(&repo, id);
        assert_eq!(
            got,
            vec![("intent".to_string(), Some(why.to_string())), ("applied".to_string(), Some(why.to_string()))],
            "{id}"
        );
    }
    let r = repo.journal_records().into_iter().find(|r| r.id == "t-nul").unwrap();
    assert!(r.path.ends_with("a\\0b.txt"), "{}", r.path);
    let (code, out) = walj_in_time(&repo, &["log", "--json"]);
    assert_eq!(code, 0, "{out}");
}

/// Issue 13 item 9: `errors.log` collapses a repeated message into one line and is rotated
/// past 1 MB.
#[test]
fn errors_log_collapses_repeats_and_is_capped() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    for _ in 0..5 {
        let (code, _, _) = repo.hook_run("{not json", Parent::Timeout(20), Locate::Folder);
        assert_eq!(code, 0);
    }
    let log_path = repo.root.join(".walj/errors.log");
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.trim_end().contains("[x5, last "), "{log}");
    std::fs::write(&log_path, "x".repeat((1 << 20) + 10) + "\n").unwrap();
    repo.hook_run("", Parent::Timeout(20), Locate::Folder);
    assert!(repo.root.join(".walj/errors.log.1").exists());
    assert!(std::fs::metadata(&log_path).unwrap().len() < 1000);
}

/// Issue 13 item 9: temp files a killed hook left in the store go at the next `walj compact`,
/// once older than the grace period (a live writer's stay).
#[test]
fn compact_sweeps_old_store_temp_files() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    Claude::new(&repo, "s-temps").start();
    let sub = repo.root.join(".walj/store/ab");
    std::fs::create_dir_all(&sub).unwrap();
    let old = sub.join(".tmp-99999-deadbeef");
    let fresh = sub.join(".tmp-99998-cafebabe");
    std::fs::write(&old, b"half an object").unwrap();
    std::fs::write(&fresh, b"being written").unwrap();
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::options().append(true).open(&old).unwrap().set_modified(two_hours_ago).unwrap();
    let v: Value = serde_json::from_str(&repo.ok(&["compact", "--json", "--yes"])).unwrap();
    assert_eq!(v["temps_removed"], 1, "{v:#}");
    assert!(!old.exists() && fresh.exists());
}

/// A sparse file of `gb` GiB at `rel` (nothing on disk; hashed in full it takes many seconds).
fn sparse(repo: &Repo, rel: &str, gb: u64) {
    std::fs::File::create(repo.path(rel)).unwrap().set_len(gb << 30).unwrap();
}

fn sampled(b: &Option<walj::journal::Blob>) -> bool {
    matches!(b, Some(walj::journal::Blob::Id(id)) if id.starts_with("sampled:"))
}

/// Issue 13 item 3: a file over the capture cap is never hashed in full in a hook (a 4 GB
/// file took 13–15 s, past the 10 s hook timeout): Pre, Post, Stop, a Bash command around it
/// and `recover` each return inside the limit, and the images are sampled identities.
#[test]
fn a_huge_file_is_never_hashed_in_full_in_a_hook() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    sparse(&repo, "big.bin", 16);
    let input = json!({"file_path": repo.path("big.bin"), "old_string": "x", "new_string": "y"});
    let s = |event: &str| json!({"session_id": "s-hard", "cwd": repo.root, "hook_event_name": event, "prompt": "go"});
    hook_in_time(&repo, &s("UserPromptSubmit"));
    hook_in_time(&repo, &tool(&repo, "PreToolUse", "Edit", "t-big", input.clone()));
    // The tool changes a byte near the end (a sample covers the last 4 KiB).
    let f = std::fs::OpenOptions::new().write(true).open(repo.path("big.bin")).unwrap();
    std::os::unix::fs::FileExt::write_at(&f, b"y", (16 << 30) - 2).unwrap();
    drop(f);
    let mut post = tool(&repo, "PostToolUse", "Edit", "t-big", input);
    post["tool_response"] = json!({"filePath": repo.path("big.bin"), "userModified": false});
    hook_in_time(&repo, &post);
    let recs: Vec<_> = repo.journal_records().into_iter().filter(|r| r.id == "t-big").collect();
    assert_eq!(recs.len(), 2, "{recs:?}");
    for r in &recs {
        assert_eq!(r.nocap.as_deref(), Some("too_large"), "{r:?}");
    }
    assert!(sampled(&recs[0].before), "{:?}", recs[0]);
    assert!(sampled(&recs[1].after), "{:?}", recs[1]);
    assert_ne!(recs[0].before, recs[1].after, "the change is seen");
    // The Stop hook verifies the entry against the disk, by the same identity.
    hook_in_time(&repo, &s("Stop"));
    let (code, out) = walj_in_time(&repo, &["recover", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["unresolved"], 0, "verified and persisted at Stop: {v:#}");

    // A Bash command that changes the huge file: snapshot before, side effect after.
    let bash = |event: &str| {
        json!({"session_id": "s-hard", "cwd": repo.root, "hook_event_name": event, "tool_name": "Bash",
               "tool_use_id": "t-bash", "tool_input": {"command": "truncate -s 17G big.bin"},
               "tool_response": {"stdout": "", "stderr": ""}})
    };
    hook_in_time(&repo, &s("UserPromptSubmit"));
    hook_in_time(&repo, &bash("PreToolUse"));
    std::fs::OpenOptions::new().write(true).open(repo.path("big.bin")).unwrap().set_len(17 << 30).unwrap();
    hook_in_time(&repo, &bash("PostToolUse"));
    let child = repo.journal_records().into_iter().find(|r| r.parent.as_deref() == Some("t-bash"));
    let child = child.expect("the Bash command's change to big.bin is an entry");
    assert_eq!(child.path, "big.bin");
    assert!(sampled(&child.after), "{child:?}");
    hook_in_time(&repo, &s("Stop"));
    let (code, out) = walj_in_time(&repo, &["recover", "--json"]);
    assert_eq!(code, 0, "{out}");
    walj_in_time(&repo, &["checkpoint"]);
}

/// Issue 13 item 4: a store failure never drops the intent/applied record (a file in the
/// store's place fails every write, as root too). Issue 14: a small image is carried in its
/// line (the hook writes no loose object for it), so it is kept all the same; a large one is recorded with the
/// id hashed while reading and `nocap: "store_failed: …"`.
#[test]
fn a_store_failure_never_drops_the_record() {
    let big: String = (0..3000u64).map(|i| format!("{:016x}\n", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))).collect();
    let repo = Repo::new(&[("a.txt", "one\n"), ("big.txt", &format!("one\n{big}"))]);
    let claude = Claude::new(&repo, "s-store");
    claude.start();
    let store = repo.root.join(".walj/store");
    let _ = std::fs::remove_dir_all(&store);
    std::fs::write(&store, b"not a folder").unwrap();
    claude.edit("t-edit", "a.txt", "one", "two");
    claude.edit("t-big", "big.txt", "one", "two");
    let id = |s: &str| Some(walj::journal::Blob::Id(walj::store::blob_id(s.as_bytes())));
    let records = |call: &str| -> Vec<_> { repo.journal_records().into_iter().filter(|r| r.id == call).collect() };
    for (call, before, after) in
        [("t-edit", "one\n".to_string(), "two\n".to_string()), ("t-big", format!("one\n{big}"), format!("two\n{big}"))]
    {
        let recs = records(call);
        let ops: Vec<&str> = recs.iter().map(|r| r.op.as_str()).collect();
        assert_eq!(ops, ["intent", "applied"], "both records kept: {recs:?}");
        assert_eq!(recs[0].before, id(&before));
        assert_eq!(recs[1].after, id(&after));
        for r in &recs {
            let n = r.nocap.as_deref().unwrap_or("");
            if call == "t-big" {
                assert!(n.starts_with("store_failed: "), "{r:?}");
            } else {
                assert!(n.is_empty() && r.extra.contains_key("images"), "carried in its line: {r:?}");
            }
        }
    }
    let log = std::fs::read_to_string(repo.root.join(".walj/errors.log")).unwrap();
    // The small image needs no store: it is carried in its line, and nothing failed for it.
    assert!(!log.contains("a.txt"), "{log}");
    assert!(log.contains("big.txt: store_failed"), "{log}");
    // The carried image reads from its line, with no store at all.
    let out = repo.ok(&["diff", "t-edit"]);
    assert!(out.contains("-one") && out.contains("+two"), "{out}");
    // The entries are verified at Stop like any other (their ids are known).
    claude.stop();
    let v = repo.json(&["recover", "--json"]);
    assert_eq!(v["unresolved"], 0, "{v:#}");
}

/// Issue 13 item 8's leftover: a file a revert moved aside into `.walj/staging/` before
/// deleting it, left there by a crash, goes at the next `walj compact` once older than the
/// grace period: stored first, so its bytes stay reachable.
#[test]
fn compact_stores_then_sweeps_old_staging_files() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    Claude::new(&repo, "s-staging").start();
    let staging = repo.root.join(".walj/staging");
    std::fs::create_dir_all(&staging).unwrap();
    let old = staging.join("gone.txt.walj-aside-1");
    let fresh = staging.join("other.txt.walj-aside-2");
    let bytes = b"the only copy of a deleted file\n";
    std::fs::write(&old, bytes).unwrap();
    std::fs::write(&fresh, b"a revert in progress").unwrap();
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    std::fs::File::options().append(true).open(&old).unwrap().set_modified(two_hours_ago).unwrap();
    let v: Value = serde_json::from_str(&repo.ok(&["compact", "--json", "--yes"])).unwrap();
    assert_eq!(v["temps_removed"], 1, "{v:#}");
    assert!(!old.exists() && fresh.exists());
    let id = walj::store::blob_id(bytes);
    assert_eq!(walj::store::Store::new(repo.root.join(".walj/store")).get(&id).unwrap(), bytes);
}
