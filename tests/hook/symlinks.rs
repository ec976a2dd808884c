//! Symbolic links a Bash command creates, retargets or removes: entries of kind `symlink`
//! with the link's own target text on each side, revertable by re-pointing (real git
//! repositories, the real binary as the hook, real `ln` between PreToolUse and PostToolUse).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command as Std;

use crate::common::{Parent, Repo, git, hook_ok, journal_records, walj_at};
use serde_json::{Value, json};
use walj::journal::entry_kind::link_id;
use walj::journal::{Blob, Record};

const SESSION: &str = "5e551011-link-test";

fn hook(root: &Path, payload: &Value) {
    let out = hook_ok(root, &payload.to_string(), Parent::Timeout(20));
    assert_eq!(out, "", "walj hook printed");
    let errors = root.join(".walj/errors.log");
    assert!(!errors.exists(), "hook errors: {}", fs::read_to_string(errors).unwrap_or_default());
}

fn bash_payload(root: &Path, event: &str, id: &str, command: &str) -> Value {
    let mut p = json!({
        "hook_event_name": event,
        "session_id": SESSION,
        "transcript_path": transcript(root),
        "cwd": root,
        "tool_name": "Bash",
        "tool_use_id": id,
        "tool_input": {"command": command, "description": "links"},
    });
    if event == "PostToolUse" {
        p["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
    }
    p
}

/// The session's transcript, beside the repository: Claude Code writes it while it lives.
fn transcript(root: &Path) -> PathBuf {
    root.parent().unwrap().join("transcript.jsonl")
}

fn sh(root: &Path, command: &str) {
    let ok = Std::new("bash").arg("-c").arg(command).current_dir(root).status().expect("bash runs").success();
    assert!(ok, "{command}");
}

/// A git repository with a.txt, b.txt and the committed links `l2 -> a.txt`, `l3 -> a.txt`.
fn repo() -> (Repo, PathBuf) {
    let repo = Repo::with_bytes(&[("a.txt", b"a\n"), ("b.txt", b"b\n")]);
    let root = repo.root.clone();
    sh(&root, "ln -s a.txt l2 && ln -s a.txt l3");
    git(&root, &["add", "l2", "l3"]);
    git(&root, &["commit", "-qm", "links"]);
    (repo, root)
}

const MAKE: &str = "ln -s a.txt l1 && ln -sfn b.txt l2 && rm l3 && ln -s missing.txt dang";

fn children(root: &Path, parent: &str) -> Vec<Record> {
    let mut v: Vec<_> = journal_records(root).into_iter().filter(|r| r.parent.as_deref() == Some(parent)).collect();
    v.sort_by(|a, b| a.path.cmp(&b.path));
    v
}

fn by_path<'a>(v: &'a [Record], path: &str) -> &'a Record {
    v.iter().find(|r| r.path == path).unwrap_or_else(|| panic!("no child entry for {path}: {v:#?}"))
}

/// The link at `rel`, read (never followed): `None` when nothing is there.
fn link(root: &Path, rel: &str) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    match fs::symlink_metadata(root.join(rel)) {
        Ok(m) => {
            assert!(m.file_type().is_symlink(), "{rel} is not a link");
            Some(fs::read_link(root.join(rel)).unwrap().as_os_str().as_bytes().to_vec())
        }
        Err(_) => None,
    }
}

fn walj_ok(root: &Path, args: &[&str]) -> String {
    let out = walj_at(root).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "walj {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Each link change is one `symlink` entry: its target text on each side, the target's bytes
/// as its blobs, and nothing for the files the links point at.
fn assert_link_entries(root: &Path, kids: &[Record]) {
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["dang", "l1", "l2", "l3"], "{kids:#?}");
    for k in kids {
        assert_eq!(k.kind.as_deref(), Some("symlink"), "{k:?}");
    }
    let sides =
        |r: &Record| (r.get_str("link_before").map(str::to_string), r.get_str("link_after").map(str::to_string));
    assert_eq!(sides(by_path(kids, "l1")), (None, Some("a.txt".into())));
    assert_eq!(sides(by_path(kids, "l2")), (Some("a.txt".into()), Some("b.txt".into())));
    assert_eq!(sides(by_path(kids, "l3")), (Some("a.txt".into()), None));
    assert_eq!(sides(by_path(kids, "dang")), (None, Some("missing.txt".into())));
    // The sides are named by the links' tagged ids; no object by them exists (in the store or
    // in git), so a walj that does not know links finds no image to write as a file.
    let l2 = by_path(kids, "l2");
    assert_eq!(l2.before, Some(Blob::Id(link_id(b"a.txt"))));
    assert_eq!(l2.after, Some(Blob::Id(link_id(b"b.txt"))));
    assert!(!walj::store::Store::new(root.join(".walj/store")).contains(&link_id(b"b.txt")));
    assert_ne!(link_id(b"a.txt"), walj::store::blob_id(b"a.txt"), "a link is not a file holding its target");
    assert_eq!(by_path(kids, "l1").before, Some(Blob::Absent));
    assert_eq!(by_path(kids, "l3").after, Some(Blob::Absent));
}

#[test]
fn a_finished_command_that_makes_retargets_and_removes_links_gets_symlink_entries_revert_re_points() {
    let (_t, root) = repo();
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_ln", MAKE));
    sh(&root, MAKE);
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_ln", MAKE));
    let kids = children(&root, "toolu_ln");
    assert_link_entries(&root, &kids);

    // Shown as `link -> target`.
    let log = walj_ok(&root, &["log", "--all"]);
    assert!(log.contains("l2 -> b.txt"), "{log}");
    let diff = walj_ok(&root, &["diff", &by_path(&kids, "l2").id]);
    assert!(diff.contains("-a.txt") && diff.contains("+b.txt"), "{diff}");

    let ids: Vec<&str> = kids.iter().map(|r| r.id.as_str()).collect();
    let mut args = vec!["revert"];
    args.extend(&ids);
    let out = walj_ok(&root, &args);
    assert!(out.contains("re-pointed l2 to b.txt") || out.contains("re-pointed l2 to a.txt"), "{out}");
    assert_eq!(link(&root, "l1"), None);
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"a.txt"[..]));
    assert_eq!(link(&root, "l3").as_deref(), Some(&b"a.txt"[..]));
    assert_eq!(link(&root, "dang"), None);
    // The files the links point at were never written.
    assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"a\n");
    assert_eq!(fs::read(root.join("b.txt")).unwrap(), b"b\n");
    assert_eq!(git(&root, &["status", "--porcelain"]).trim(), "", "the tree is as committed");

    walj_ok(&root, &["undo"]);
    assert_eq!(link(&root, "l1").as_deref(), Some(&b"a.txt"[..]));
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"b.txt"[..]));
    assert_eq!(link(&root, "l3"), None);
    assert_eq!(link(&root, "dang").as_deref(), Some(&b"missing.txt"[..]));
}

#[test]
fn a_killed_command_s_links_are_listed_by_recover_and_revert_session_re_points_them() {
    let (_t, root) = repo();
    fs::write(transcript(&root), b"{}\n").unwrap();
    hook(
        &root,
        &json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "transcript_path": transcript(&root),
                "cwd": root, "prompt": "make the links"}),
    );
    // PreToolUse under a parent that is gone once it returns: the session reads as crashed.
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_kill", &format!("{MAKE} && sleep 600")));
    sh(&root, MAKE);
    // Claude Code lived on a moment while the command ran (its transcript's time), then died.
    std::thread::sleep(std::time::Duration::from_millis(50));
    fs::write(transcript(&root), b"{}\n{}\n").unwrap();
    let out = walj_ok(&root, &["recover", "--json"]);
    let recover: Value = serde_json::from_str(&out).unwrap();
    let entries = recover["sessions"][0]["entries"].as_array().unwrap();
    let mut listed: Vec<(String, String)> = entries
        .iter()
        .map(|e| (e["path"].as_str().unwrap().to_string(), e["kind"].as_str().unwrap_or("file").to_string()))
        .collect();
    listed.sort();
    let want: Vec<(String, String)> =
        ["dang", "l1", "l2", "l3"].iter().map(|p| (p.to_string(), "symlink".to_string())).collect();
    assert_eq!(listed, want, "{recover:#}");
    assert!(entries.iter().all(|e| e.get("attribution").is_none()), "made while Claude Code lived: {recover:#}");
    assert_link_entries(&root, &children(&root, "toolu_kill"));
    let text = walj_ok(&root, &["recover"]);
    assert!(text.contains("l1 -> a.txt") && text.contains("dang -> missing.txt"), "{text}");

    walj_ok(&root, &["revert", "--session", SESSION]);
    assert_eq!(link(&root, "l1"), None);
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"a.txt"[..]));
    assert_eq!(link(&root, "l3").as_deref(), Some(&b"a.txt"[..]));
    assert_eq!(link(&root, "dang"), None);
    walj_ok(&root, &["undo"]);
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"b.txt"[..]));
    assert_eq!(link(&root, "l3"), None);
}

#[test]
fn a_link_to_outside_is_re_pointed_and_nothing_outside_is_written() {
    let (_t, root) = repo();
    let outside = root.parent().unwrap().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("f"), b"outside bytes\n").unwrap();
    let cmd = "ln -sfn ../outside/f l2 && ln -s ../outside/f lo && ln -s ../outside od";
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_out", cmd));
    sh(&root, cmd);
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_out", cmd));
    let kids = children(&root, "toolu_out");
    let paths: Vec<&str> = kids.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["l2", "lo", "od"], "{kids:#?}");
    let ids: Vec<&str> = kids.iter().map(|r| r.id.as_str()).collect();
    let mut args = vec!["revert"];
    args.extend(&ids);
    walj_ok(&root, &args);
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"a.txt"[..]));
    assert_eq!(link(&root, "lo"), None);
    assert_eq!(link(&root, "od"), None);
    // Undo makes the links to outside again: links only, nothing written there.
    walj_ok(&root, &["undo"]);
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"../outside/f"[..]));
    assert_eq!(link(&root, "od").as_deref(), Some(&b"../outside"[..]));
    assert_eq!(fs::read(outside.join("f")).unwrap(), b"outside bytes\n");
    let names: Vec<_> = fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["f"], "nothing made outside the project");
    assert_eq!(fs::read(root.join("a.txt")).unwrap(), b"a\n");
}

#[test]
fn a_file_where_the_link_was_is_never_replaced_and_a_link_elsewhere_needs_force() {
    let (_t, root) = repo();
    let cmd = "ln -sfn b.txt l2 && ln -s a.txt l1";
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_chg", cmd));
    sh(&root, cmd);
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_chg", cmd));
    let kids = children(&root, "toolu_chg");
    // The user put a file where l1 was, and pointed l2 elsewhere.
    sh(&root, "rm l1 && printf 'mine\\n' > l1 && ln -sfn other l2");
    let out = walj_at(&root).args(["revert", &by_path(&kids, "l1").id]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("l1 is now a regular file"), "{err}");
    let out = walj_at(&root).args(["revert", "--force", &by_path(&kids, "l1").id]).output().unwrap();
    assert!(!out.status.success(), "forced or not, a file is not dropped for a link");
    assert_eq!(fs::read(root.join("l1")).unwrap(), b"mine\n");
    let out = walj_at(&root).args(["revert", &by_path(&kids, "l2").id]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --force"));
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"other"[..]));
    walj_ok(&root, &["revert", "--force", &by_path(&kids, "l2").id]);
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"a.txt"[..]));
    walj_ok(&root, &["undo"]);
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"other"[..]), "undo brings back the link it replaced");
}

#[test]
fn a_link_target_that_is_not_utf8_is_kept_byte_exact() {
    let (_t, root) = repo();
    let cmd = "ln -s $'t\\xff\\xfe.txt' lb && ln -sfn $'x\\x80' l2";
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_raw", cmd));
    sh(&root, cmd);
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_raw", cmd));
    assert_eq!(link(&root, "lb").as_deref(), Some(&b"t\xff\xfe.txt"[..]));
    let kids = children(&root, "toolu_raw");
    let lb = by_path(&kids, "lb");
    assert_eq!(lb.after, Some(Blob::Id(link_id(b"t\xff\xfe.txt"))));
    assert_eq!(walj::fsutil::name::decode(lb.get_str("link_after").unwrap()).as_ref(), b"t\xff\xfe.txt");
    let text = walj_ok(&root, &["log", "--all"]);
    assert!(text.contains("lb -> t\\xff\\xfe.txt"), "escaped on screen: {text}");
    let ids: Vec<&str> = kids.iter().map(|r| r.id.as_str()).collect();
    let mut args = vec!["revert"];
    args.extend(&ids);
    walj_ok(&root, &args);
    assert_eq!(link(&root, "lb"), None);
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"a.txt"[..]));
    walj_ok(&root, &["undo"]);
    assert_eq!(link(&root, "lb").as_deref(), Some(&b"t\xff\xfe.txt"[..]));
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"x\x80"[..]));
}

/// An entry kind this walj does not know (a newer walj's) is shown and never written.
#[test]
fn an_unknown_entry_kind_is_listed_but_never_reverted() {
    let (_t, root) = repo();
    let cmd = "ln -s a.txt l1";
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_k", cmd));
    sh(&root, cmd);
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_k", cmd));
    // The same journal, as a newer walj might write it: the entry has a kind unknown here.
    let journal = root.join(".walj/journal.jsonl");
    let mut lines = Vec::new();
    for mut r in journal_records(&root) {
        if r.parent.as_deref() == Some("toolu_k") {
            r.kind = Some("fifo".into());
            r.extra.remove("link_after");
        }
        lines.extend(r.to_line());
    }
    fs::write(&journal, lines).unwrap();
    let _ = fs::remove_file(root.join(".walj/fold.snap"));
    let kid = children(&root, "toolu_k").remove(0);
    let out = walj_ok(&root, &["log", "--all", "--json"]);
    assert!(out.contains("\"l1\""), "still listed: {out}");
    let out = walj_at(&root).args(["revert", "--force", &kid.id]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a kind this walj does not know"), "{err}");
    assert_eq!(link(&root, "l1").as_deref(), Some(&b"a.txt"[..]), "nothing written");
}

fn edit_payload(root: &Path, event: &str, id: &str, file: &str, old: &str, new: &str) -> Value {
    let mut p = json!({
        "hook_event_name": event, "session_id": SESSION, "transcript_path": transcript(root), "cwd": root,
        "tool_name": "Edit", "tool_use_id": id,
        "tool_input": {"file_path": root.join(file), "old_string": old, "new_string": new},
    });
    if event == "PostToolUse" {
        p["tool_response"] = json!({"filePath": root.join(file), "oldString": old, "newString": new});
    }
    p
}

/// An Edit of an in-project link that Claude Code refused after its PreToolUse (it does not
/// write through links), then the same change made on the real path, then a crash: the
/// link's Edit never ran, whatever the file behind it holds now.
#[test]
fn an_edit_of_a_link_claude_code_refused_is_not_called_partly_applied_after_a_crash() {
    let repo = Repo::with_bytes(&[("real.txt", b"hello\nworld\n")]);
    let root = repo.root.clone();
    sh(&root, "ln -s real.txt link.txt");
    git(&root, &["add", "link.txt"]);
    git(&root, &["commit", "-qm", "link"]);
    hook(&root, &edit_payload(&root, "PreToolUse", "toolu_link", "link.txt", "hello", "HELLO"));
    // Refused: no Post. Claude edits the real path instead.
    hook(&root, &edit_payload(&root, "PreToolUse", "toolu_real", "real.txt", "hello", "hi"));
    fs::write(root.join("real.txt"), b"hi\nworld\n").unwrap();
    hook(&root, &edit_payload(&root, "PostToolUse", "toolu_real", "real.txt", "hello", "hi"));
    let out: Value = serde_json::from_str(&walj_ok(&root, &["recover", "--json"])).unwrap();
    let entries = out["sessions"][0]["entries"].as_array().unwrap();
    let link = entries.iter().find(|e| e["path"] == "link.txt").unwrap();
    assert_eq!(link["disk"], "not_through_link", "{out:#}");
    let text = walj_ok(&root, &["recover"]);
    assert!(!text.contains("partly applied"), "{text}");
    assert!(text.contains("not applied: the path is a symbolic link"), "{text}");
    assert_eq!(fs::read_link(root.join("link.txt")).unwrap(), Path::new("real.txt"));
}

/// Kills a command after `work` ran under its PreToolUse (Claude Code alive a moment longer,
/// then gone) and returns `walj recover`'s text.
fn killed_recover(root: &Path, id: &str, work: &str) -> String {
    fs::write(transcript(root), b"{}\n").unwrap();
    hook(
        root,
        &json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "transcript_path": transcript(root),
                "cwd": root, "prompt": "go"}),
    );
    hook(root, &bash_payload(root, "PreToolUse", id, &format!("{work} && sleep 600")));
    sh(root, work);
    std::thread::sleep(std::time::Duration::from_millis(50));
    fs::write(transcript(root), b"{}\n{}\n").unwrap();
    walj_ok(root, &["recover"])
}

/// "N changes since it started" names what the snapshots could not compare (a FIFO, a file
/// over the capture cap), and says nothing more when they saw everything.
#[test]
fn a_killed_commands_count_says_what_its_snapshot_could_not_see() {
    let (_t, root) = repo();
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::write(root.join(".walj/config.toml"), "[capture]\nmax_bytes = 1000\n").unwrap();
    fs::write(root.join("big.bin"), vec![7u8; 4000]).unwrap();
    sh(&root, "mkfifo pipe");
    let text = killed_recover(&root, "toolu_unseen", "ln -s a.txt l1");
    let line = text.lines().find(|l| l.contains("command never finished")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("1 change since it started; not seen: "), "{line}");
    assert!(line.contains("1 special file (FIFO, socket or device: never opened)"), "{line}");
    assert!(line.contains("1 file over the capture cap (compared by samples only)"), "{line}");

    let (_t2, root2) = repo();
    let text = killed_recover(&root2, "toolu_seen", "ln -s a.txt l1");
    let line = text.lines().find(|l| l.contains("command never finished")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.ends_with("1 change since it started"), "nothing unseen, nothing said: {line}");
}

/// A walj that does not know links reads a link entry as a file entry (it ignores `kind` and
/// the link texts): for a removed link, its revert must find no image and refuse, never make
/// a regular file holding the target's text.
#[test]
fn a_link_entry_read_as_a_file_entry_is_refused_not_written_as_a_file() {
    let (_t, root) = repo();
    let cmd = "rm l3 && ln -sfn b.txt l2";
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_old", cmd));
    sh(&root, cmd);
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_old", cmd));
    let journal = root.join(".walj/journal.jsonl");
    let mut lines = Vec::new();
    for mut r in journal_records(&root) {
        if r.parent.as_deref() == Some("toolu_old") {
            r.kind = None;
            r.extra.remove("link_before");
            r.extra.remove("link_after");
        }
        lines.extend(r.to_line());
    }
    fs::write(&journal, lines).unwrap();
    let _ = fs::remove_file(root.join(".walj/fold.snap"));
    let kids = children(&root, "toolu_old");
    for path in ["l3", "l2"] {
        let out = walj_at(&root).args(["revert", "--force", &by_path(&kids, path).id]).output().unwrap();
        assert!(!out.status.success(), "{path}: {}", String::from_utf8_lossy(&out.stdout));
    }
    assert!(fs::symlink_metadata(root.join("l3")).is_err(), "no file made where the link was");
    assert_eq!(link(&root, "l2").as_deref(), Some(&b"b.txt"[..]));
}

/// The turn's Stop (its checkpoint) finds each link as the command left it (read as a link,
/// never followed): persisted; a link pointed elsewhere since is not.
#[test]
fn checkpoint_reads_links_as_links() {
    let (_t, root) = repo();
    hook(&root, &bash_payload(&root, "PreToolUse", "toolu_cp", MAKE));
    sh(&root, MAKE);
    hook(&root, &bash_payload(&root, "PostToolUse", "toolu_cp", MAKE));
    sh(&root, "ln -sfn elsewhere l1");
    hook(&root, &json!({"hook_event_name": "Stop", "session_id": SESSION, "cwd": root}));
    let log: Vec<Value> = serde_json::from_str(&walj_ok(&root, &["log", "--all", "--json"])).unwrap();
    let status = |p: &str| log.iter().find(|e| e["path"] == p).map(|e| e["status"].as_str().unwrap().to_string());
    for p in ["l2", "l3", "dang"] {
        assert_eq!(status(p).as_deref(), Some("persisted"), "{p}: {log:#?}");
    }
    assert_eq!(status("l1").as_deref(), Some("drifted"), "{log:#?}");
}
