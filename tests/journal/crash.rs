//! A crash stays a crash. A scheduled checkpoint records what it verified but never
//! settles an entry of a turn that never reached its Stop; entries the user resolved are never
//! listed as drifted. Through the real binary and recorded hook payloads.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::common::{Locate, Parent, Repo, hook_ok, walj_at};
use serde_json::{Value, json};
use std::fs;

fn hook(repo: &Repo, input: &str) -> (i32, String, String) {
    repo.hook_run(input, Parent::Timeout(20), Locate::Folder)
}

fn crashed_repo() -> Repo {
    let repo = Repo::fixture_in("p", "hooks/crash-mid-write/project");
    crate::common::replay_crash_mid_write(&repo, false, |p| assert_eq!(hook(&repo, p).0, 0));
    repo
}

#[test]
fn a_checkpoint_never_erases_a_crash() {
    let repo = crashed_repo();
    assert_eq!(repo.json(&["recover", "--json"])["unresolved"], 2);
    let c = repo.json(&["checkpoint", "--json"]);
    // The Edit's post-image is on disk: verified, not persisted (its turn never finished).
    assert_eq!(c["persisted"], 0, "{c:#}");
    assert_eq!(c["verified"], 1, "{c:#}");
    let r = repo.json(&["recover", "--json"]);
    assert_eq!(r["unresolved"], 2, "{r:#}");
    let e =
        r["sessions"][0]["entries"].as_array().unwrap().iter().find(|e| e["path"] == "config/settings.json").cloned();
    let e = e.unwrap();
    assert_eq!(e["status"], "applied", "{e:#}");
    assert!(e["verified"].is_string(), "{e:#}");
    let (_, text, _) = repo.run(&["recover"]);
    assert!(text.contains("on disk, verified"), "{text}");
    // Idempotent: a second run records nothing new and still leaves the crash.
    let n = repo.records().len();
    let c = repo.json(&["checkpoint", "--json"]);
    assert_eq!(c["verified"], 1);
    assert_eq!(repo.records().iter().filter(|l| l["op"] == "verified").count(), 1);
    assert_eq!(repo.records().len(), n + 1, "only the audit line is new");
    assert_eq!(repo.json(&["recover", "--json"])["unresolved"], 2);
    // The next session is still told.
    let start = repo.start_payload("11111111-2222-3333-4444-555555555555");
    let (code, out, _) = hook(&repo, &start);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object on stdout");
    assert!(v["systemMessage"].as_str().unwrap().contains("2 changes"), "{v}");
}

#[test]
fn a_checkpoint_still_detects_drift_but_not_on_resolved_entries() {
    let repo = crashed_repo();
    repo.write("config/settings.json", "{\"retries\": 9}\n");
    let c = repo.json(&["checkpoint", "--json"]);
    assert_eq!(c["drifted"], serde_json::json!(["config/settings.json"]), "{c:#}");
    // The user marks it done: a later checkpoint does not list it.
    let r = repo.json(&["recover", "--json"]);
    let id = r["sessions"][0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == "config/settings.json")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _, err) = repo.run(&["mark", &id, "--done"]);
    assert_eq!(code, 0, "{err}");
    let c = repo.json(&["checkpoint", "--json"]);
    assert_eq!(c["drifted"], serde_json::json!([]), "{c:#}");
}

/// A file tool call without an outcome (the crash came between PreToolUse and PostToolUse):
/// the report compares the disk with the content the call meant to write.
#[test]
fn an_in_flight_write_reports_whether_the_disk_holds_its_intended_content() {
    for (disk, want) in [(Some("pub fn serve() {}\n"), "completed"), (None, "unchanged"), (Some("pub fn se"), "other")]
    {
        let repo = Repo::new(&[("README.md", "hello\n")]);
        let root = &repo.root;
        let pre = json!({
            "hook_event_name": "PreToolUse", "session_id": "5e551011-inflight", "cwd": root,
            "tool_name": "Write", "tool_use_id": "toolu_w",
            "tool_input": {"file_path": root.join("src/server.rs"), "content": "pub fn serve() {}\n"},
        });
        hook_ok(root, &pre.to_string(), Parent::Timeout(20));
        if let Some(d) = disk {
            fs::create_dir_all(root.join("src")).unwrap();
            fs::write(root.join("src/server.rs"), d).unwrap();
        }
        let out = walj_at(root).args(["recover", "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let e = &v["sessions"][0]["entries"][0];
        assert_eq!((e["status"].as_str(), e["disk"].as_str()), (Some("in_flight"), Some(want)), "{v:#}");
        assert_eq!(e["intended"], walj::store::blob_id(b"pub fn serve() {}\n"));
    }
}

/// Text that zlib cannot shrink below `walj::store::CARRY_MAX` (hex of a pseudo-random
/// sequence): an image the hook syncs on its own rather than carrying it in its line.
fn incompressible(lines: usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..lines)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("{x:016x}{:016x}\n", x.rotate_left(29))
        })
        .collect()
}

/// Runs an Edit's PreToolUse ("world" → "there") on `file` as call `call`.
fn pre_edit(repo: &Repo, file: &str, call: &str) {
    let root = &repo.root;
    let pre = json!({
        "hook_event_name": "PreToolUse", "session_id": "5e551011-carry", "cwd": root,
        "tool_name": "Edit", "tool_use_id": call,
        "tool_input": {"file_path": root.join(file), "old_string": "world", "new_string": "there"},
    });
    hook_ok(root, &pre.to_string(), Parent::Timeout(20));
}

/// Issue 14: a large image's object is synced while the line that names it is appended. A
/// machine crash before the hook returned can leave the line and lose the object (missing, or
/// cut short); the tool had not run, so `walj diff` reads the disk and says the image was lost.
#[test]
fn a_large_image_lost_before_its_hook_returned_reads_from_the_disk_and_says_so() {
    for damage in ["missing", "empty", "cut"] {
        let repo = Repo::new(&[("README.md", "x\n")]);
        // Not committed: git cannot supply the image either.
        let text = format!("hello\nworld\n{}", incompressible(2000));
        repo.write("notes.txt", &text);
        pre_edit(&repo, "notes.txt", "toolu_lost");
        let journal = fs::read_to_string(repo.root.join(".walj/journal.jsonl")).unwrap();
        assert!(!journal.contains("\"images\""), "a large image is not carried in its line");
        let object = repo.store_object(&repo.blob_id("notes.txt"));
        damage_object(&object, damage);
        // The disk still holds the pre-image (the tool had not run): its id proves it.
        let out = repo.ok(&["diff", "toolu_lost"]);
        assert!(out.contains("no differences: pre-image and disk are identical"), "{damage}: {out}");
        // Changed since (by the user, after the crash): the image is lost, the disk is shown.
        repo.write("notes.txt", &text.replace("world", "world, edited after the crash"));
        let out = repo.ok(&["diff", "toolu_lost"]);
        assert!(out.contains("(pre-image lost, disk used)"), "{damage}: {out}");
        assert!(out.contains("no differences"), "{damage}: {out}");
    }
}

fn damage_object(object: &std::path::Path, damage: &str) {
    match damage {
        "missing" => fs::remove_file(object).unwrap(),
        "empty" => fs::write(object, b"").unwrap(),
        _ => {
            let b = fs::read(object).unwrap();
            fs::write(object, &b[..b.len() / 2]).unwrap();
        }
    }
}

/// One sync per hook, and no file made: a small image is carried in the line that names it,
/// and the hook writes no loose object for it at all. `walj diff` shows the true pre-image
/// from the line even once the disk changed, and writes the object to the store (synced) for
/// the next reader. A loose copy found missing, empty or cut short (a machine crash during an
/// earlier write-back) is never trusted: the line's copy is read and written over it.
#[test]
fn a_small_image_is_read_from_its_line_and_written_to_the_store_by_its_reader() {
    for damage in ["missing", "empty", "cut"] {
        let repo = Repo::new(&[("README.md", "x\n")]);
        repo.write("notes.txt", "hello\nworld\n");
        let root = &repo.root;
        pre_edit(&repo, "notes.txt", "toolu_lost");
        let id = repo.blob_id("notes.txt");
        let object = repo.store_object(&id);
        assert!(!object.exists(), "{damage}: the hook made no loose object");
        let store = walj::store::Store::new(root.join(".walj/store"));
        if damage != "missing" {
            store.put_with_id(&id, b"hello\nworld\n").unwrap();
            damage_object(&object, damage);
        }
        repo.write("notes.txt", "hello\nworld, edited after the crash\n");
        let out = repo.ok(&["diff", "toolu_lost"]);
        assert!(!out.contains("pre-image lost"), "{damage}: {out}");
        assert!(out.contains("-world\n") || out.contains("-world"), "{damage}: the pre-image's line: {out}");
        assert!(out.contains("+world, edited after the crash"), "{damage}: {out}");
        // Written by the reader: the loose object reads whole, without the journal.
        assert!(store.intact(&id, b"hello\nworld\n"), "{damage}");
    }
}

/// A damaged object is never trusted by deduplication: the next hook that stores the same
/// bytes names it only through a line that carries it (on the old code, the cut-short object
/// stayed and every later line named it), so it reads whole once the object is damaged and
/// again once `walj compact` has taken every copy out of the lines.
#[test]
fn a_damaged_object_is_never_named_on_trust_by_the_next_hook_that_stores_its_bytes() {
    for damage in ["empty", "cut"] {
        let repo = Repo::new(&[("README.md", "hello\nworld\n")]);
        let root = &repo.root;
        let pre = |id: &str| {
            json!({
                "hook_event_name": "PreToolUse", "session_id": "5e551011-dedup", "cwd": root,
                "tool_name": "Edit", "tool_use_id": id,
                "tool_input": {"file_path": root.join("README.md"), "old_string": "world", "new_string": "there"},
            })
            .to_string()
        };
        hook_ok(root, &pre("toolu_a"), Parent::Timeout(20));
        let id = repo.blob_id("README.md");
        // A reader writes the object to the store; then a crash damages it.
        let store = walj::store::Store::new(root.join(".walj/store"));
        assert_eq!(store.get(&id).unwrap(), b"hello\nworld\n", "{damage}: read from its line");
        let object = repo.store_object(&id);
        let b = fs::read(&object).unwrap();
        fs::write(&object, if damage == "empty" { &b[..0] } else { &b[..b.len() - 3] }).unwrap();
        hook_ok(root, &pre("toolu_b"), Parent::Timeout(20));
        assert_eq!(store.get(&id).unwrap(), b"hello\nworld\n", "{damage}");
        damage_object(&object, damage);
        repo.ok(&["compact", "--json", "--yes"]);
        let journal = fs::read_to_string(root.join(".walj/journal.jsonl")).unwrap();
        assert!(!journal.contains("\"images\""), "{damage}: {journal}");
        assert_eq!(store.get(&id).unwrap(), b"hello\nworld\n", "{damage}: after compact");
    }
}

/// kill -9 at random moments of file hooks that store new images: every line that names a
/// captured image finds it whole in the store (the object is complete under its name before
/// the line is written; only its syncs run beside the append). Iterations:
/// WALJ_KILL_ITERATIONS (default 40).
#[test]
fn a_hook_killed_at_any_moment_never_leaves_a_line_naming_an_absent_image() {
    let iterations: u64 = std::env::var("WALJ_KILL_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let repo = Repo::new(&[("big.txt", "start\n")]);
    let root = &repo.root;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..iterations {
        // A fresh ~10 KB image each time.
        repo.write("big.txt", &format!("{i}\n").repeat(2500));
        let payload = json!({
            "hook_event_name": "PreToolUse", "session_id": "5e551011-kill", "cwd": root,
            "tool_name": "Edit", "tool_use_id": format!("toolu_k{i}"),
            "tool_input": {"file_path": root.join("big.txt"), "old_string": "1", "new_string": "2"},
        });
        let mut child = crate::common::spawn_hook(root, &payload.to_string());
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(std::time::Duration::from_micros(seed % 6000));
        let _ = child.kill();
        let _ = child.wait();
    }
    let store = walj::store::Store::new(root.join(".walj/store"));
    let records = crate::common::journal_records(root);
    let mut named = 0;
    for r in &records {
        if let (Some(walj::journal::record::Blob::Id(id)), None) = (&r.before, &r.nocap) {
            named += 1;
            store.get(id).unwrap_or_else(|e| panic!("line {} names {id}: {e}", r.id));
        }
    }
    eprintln!("{iterations} hooks killed at random: {} lines, {named} naming an image, all whole", records.len());
}

/// Issue 14: `walj compact` keeps the images the lines carry — each made durable in the
/// store (the hook wrote none of them) — then takes them out of the lines, so the journal does not keep a second copy of every image. Recovery is unchanged.
#[test]
fn compact_stores_carried_images_then_takes_them_out_of_the_lines() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let root = &repo.root;
    for (file, id) in [("a.txt", "toolu_ca"), ("b.txt", "toolu_cb")] {
        repo.write(file, &format!("{file}\nworld\n"));
        pre_edit(&repo, file, id);
    }
    let journal = root.join(".walj/journal.jsonl");
    assert_eq!(fs::read_to_string(&journal).unwrap().matches("\"images\":{").count(), 2);
    let (a, b) = (repo.blob_id("a.txt"), repo.blob_id("b.txt"));
    assert!(!repo.store_object(&a).exists() && !repo.store_object(&b).exists(), "the hook made no loose object");
    let recover = |repo: &Repo| {
        let mut v: Value = serde_json::from_str(&repo.ok(&["recover", "--json"])).unwrap();
        v.as_object_mut().unwrap().remove("generated_at");
        v
    };
    let before = recover(&repo);
    let rep: Value = serde_json::from_str(&repo.ok(&["compact", "--json", "--yes"])).unwrap();
    let text = fs::read_to_string(&journal).unwrap();
    assert!(!text.contains("\"images\""), "taken out of the lines: {text}\n{rep:#}");
    let store = walj::store::Store::new(root.join(".walj/store"));
    assert!(store.intact(&a, b"a.txt\nworld\n"), "written from its line");
    assert!(store.intact(&b, b"b.txt\nworld\n"));
    assert_eq!(recover(&repo), before);
    repo.write("a.txt", "changed after the crash\n");
    let out = repo.ok(&["diff", "toolu_ca"]);
    assert!(out.contains("-world") && !out.contains("pre-image lost"), "{out}");
}

/// Issue 14: a journal line never carries an image with secret-looking text (lines travel in
/// sync segments and bundles, which such an image never joins): its object is synced on its
/// own instead, and it reads as usual.
#[test]
fn an_image_with_a_secret_looking_token_is_never_carried_in_its_line() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let root = &repo.root;
    let text = "token = \"ghp_abcdefghijklmnopqrstuvwxyz0123456789\"\nworld\n";
    repo.write("conf.txt", text);
    pre_edit(&repo, "conf.txt", "toolu_secret");
    let journal = fs::read_to_string(root.join(".walj/journal.jsonl")).unwrap();
    assert!(!journal.contains("\"images\""), "{journal}");
    let store = walj::store::Store::new(root.join(".walj/store"));
    assert_eq!(store.get(&repo.blob_id("conf.txt")).unwrap(), text.as_bytes());
}

/// A loose object a crash zeroed inside, its size, zlib header and checksum trailer intact (the
/// cheap check passes): `walj compact` reads it whole before it takes the line's copy out, and
/// writes it again from the line (review of issue 14: the cheap check alone would have kept the
/// damaged object and dropped the only good copy).
#[test]
fn compact_rewrites_a_carried_object_damaged_inside_before_taking_the_copy_out() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let text: String = (0..200).map(|i| format!("line {i} of the pre-image\n")).collect::<String>() + "world\n";
    repo.write("big.txt", &text);
    pre_edit(&repo, "big.txt", "toolu_zero");
    let id = repo.blob_id("big.txt");
    let object = repo.store_object(&id);
    let store = walj::store::Store::new(repo.root.join(".walj/store"));
    // Written to the store by an earlier reader, then zeroed inside by a crash.
    store.put_with_id(&id, text.as_bytes()).unwrap();
    let mut b = fs::read(&object).unwrap();
    let n = b.len();
    b[2..n - 4].fill(0);
    fs::write(&object, &b).unwrap();
    assert!(store.intact(&id, text.as_bytes()), "the cheap check is fooled");
    repo.ok(&["compact", "--json", "--yes"]);
    assert!(!fs::read_to_string(repo.root.join(".walj/journal.jsonl")).unwrap().contains("\"images\""));
    assert_eq!(store.get(&id).unwrap(), text.as_bytes(), "written again from the line");
}

/// A line may name by id only an image a recent line of another session carries (the hook
/// does not carry it twice): `walj sessions delete` of that other session writes the image to
/// the store before its line goes, and takes the images only its own lines named with it.
#[test]
fn deleting_a_session_keeps_an_image_another_sessions_line_names_by_id_only() {
    let repo = Repo::new(&[("README.md", "x\n")]);
    let root = &repo.root;
    // File tools only: the Bash snapshot's fill pass (started at SessionStart) would store the
    // untracked files' objects itself, and the image this test follows must live in a line only.
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::write(root.join(".walj/config.toml"), "[bash]\nsnapshot = false\n").unwrap();
    let (a, b) = ("a0a0a0a0-0000-4000-8000-00000000000a", "b0b0b0b0-0000-4000-8000-00000000000b");
    let ev = |session: &str, event: &str, extra: Value| {
        let mut v = json!({"hook_event_name": event, "session_id": session, "cwd": root});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        hook_ok(root, &v.to_string(), Parent::Timeout(20));
    };
    let write = |session: &str, call: &str, file: &str, content: &str| {
        let input = json!({"file_path": root.join(file), "content": content});
        ev(session, "PreToolUse", json!({"tool_name": "Write", "tool_use_id": call, "tool_input": input}));
        repo.write(file, content);
        let response = json!({"type": "create", "filePath": root.join(file)});
        ev(
            session,
            "PostToolUse",
            json!({"tool_name": "Write", "tool_use_id": call, "tool_input": input, "tool_response": response}),
        );
    };
    ev(b, "SessionStart", json!({"source": "startup"}));
    write(b, "toolu_b1", "notes.txt", "shared by both sessions\n");
    write(b, "toolu_b2", "only-b.txt", "only session b wrote this\n");
    ev(b, "Stop", json!({"stop_hook_active": false, "last_assistant_message": "done"}));
    ev(b, "SessionEnd", json!({"reason": "prompt_input_exit"}));
    // Session A starts editing notes.txt: its pre-image is what B's last line carries.
    ev(a, "SessionStart", json!({"source": "startup"}));
    let input = json!({"file_path": root.join("notes.txt"), "old_string": "shared", "new_string": "SHARED"});
    ev(a, "PreToolUse", json!({"tool_name": "Edit", "tool_use_id": "toolu_a1", "tool_input": input}));
    let shared = repo.blob_id("notes.txt");
    let only_b = walj::store::blob_id(b"only session b wrote this\n");
    let journal = root.join(".walj/journal.jsonl");
    let text = fs::read_to_string(&journal).unwrap();
    let a_line = text.lines().find(|l| l.contains("toolu_a1") && l.contains("\"intent\"")).unwrap();
    assert!(a_line.contains(&shared) && !a_line.contains("\"images\""), "named by id only: {a_line}");
    assert!(!repo.store_object(&shared).exists(), "in B's line only");

    repo.ok(&["sessions", "delete", "b0b0", "--yes", "--force"]);
    let text = fs::read_to_string(&journal).unwrap();
    assert!(!text.contains(b) || text.lines().all(|l| !l.contains("\"images\"")), "{text}");
    let store = walj::store::Store::new(root.join(".walj/store"));
    assert!(store.intact(&shared, b"shared by both sessions\n"), "written to the store before B's line went");
    assert!(!repo.store_object(&only_b).exists() && !text.contains(&only_b), "B's own image went with B");
    repo.write("notes.txt", "changed by hand after the crash\n");
    let out = repo.ok(&["diff", "toolu_a1"]);
    assert!(out.contains("-shared by both sessions"), "{out}");
}
