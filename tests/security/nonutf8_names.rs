//! File names that are not UTF-8, made by a Bash command (`touch $'bad\xff.txt'`): journaled
//! with their exact bytes (mapped losslessly into the record's text, `walj::fsutil::name`),
//! shown escaped (`bad\xff.txt`, never the raw byte), diffed, and reverted to the very same
//! name. Real binary as the hook, real Bash between PreToolUse and PostToolUse, a real git
//! repository (the index and the untracked walk) and a folder without git (the scan).

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command as Std;

use crate::common::{Parent, Repo, blob_bytes, git, hook_ok, journal_records, walj_at};
use serde_json::{Value, json};
use walj::fsutil::name;

const SESSION: &str = "5e551011-name-test";

fn hook(root: &Path, payload: &Value) {
    let out = hook_ok(root, &payload.to_string(), Parent::Timeout(20));
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

fn bash(root: &Path, command: &str) {
    let st = Std::new("bash").arg("-c").arg(command).current_dir(root).status().unwrap();
    assert!(st.success(), "bash -c {command:?}");
}

/// `command` as Claude Code runs it: PreToolUse, the command in Bash, PostToolUse.
fn run_bash(root: &Path, id: &str, command: &str) {
    hook(root, &payload(root, "PreToolUse", id, command));
    bash(root, command);
    hook(root, &payload(root, "PostToolUse", id, command));
}

/// The record text of the name with these bytes.
fn rec(bytes: &[u8]) -> String {
    name::encode(bytes).into_owned()
}

fn children(root: &Path, parent: &str) -> Vec<walj::journal::Record> {
    let mut v: Vec<_> = journal_records(root).into_iter().filter(|r| r.parent.as_deref() == Some(parent)).collect();
    v.sort_by(|a, b| a.path.cmp(&b.path));
    v
}

fn child<'a>(v: &'a [walj::journal::Record], bytes: &[u8]) -> &'a walj::journal::Record {
    let want = rec(bytes);
    v.iter().find(|r| r.path == want).unwrap_or_else(|| panic!("no entry for {want:?}: {v:#?}"))
}

/// Every name under `root` (less `.git` and `.walj`), as bytes relative to it.
fn names(root: &Path) -> Vec<Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let n = e.file_name();
            if n == OsStr::new(".git") || n == OsStr::new(".walj") {
                continue;
            }
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().as_os_str().as_bytes().to_vec());
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

fn path_of(root: &Path, bytes: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(bytes))
}

/// stdout of `walj ARGS` in `root`, which must succeed; it must show no raw non-UTF-8 byte
/// nor a char of the mapped range.
fn shown(root: &Path, args: &[&str]) -> String {
    let out = walj_at(root).args(args).output().unwrap();
    assert!(out.status.success(), "walj {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("walj {args:?} printed a raw byte: {e}"));
    assert!(!name::has_raw(&text), "walj {args:?} printed a mapped char unescaped: {text}");
    text
}

#[test]
fn non_utf8_names_from_bash_are_journaled_shown_escaped_diffed_and_reverted_in_a_git_repository() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let root = repo.root.clone();
    // A tracked file whose name is not UTF-8 (git keeps the bytes).
    bash(&root, "printf 'orig\\n' > $'old\\xfe.txt'");
    repo.commit("a name that is not UTF-8");
    let cmd = "printf 'new\\n' > $'bad\\xff.txt' && printf 'changed\\n' > $'old\\xfe.txt' \
               && mkdir $'d\\xe9' && printf 'deep\\n' > $'d\\xe9/f.txt'";
    run_bash(&root, "toolu_names", cmd);

    let kids = children(&root, "toolu_names");
    assert_eq!(kids.len(), 3, "{kids:#?}");
    let made = child(&kids, b"bad\xff.txt");
    assert_eq!(made.path, "bad\u{10ffff}.txt", "the record's text form of the name");
    assert_eq!(blob_bytes(&root, &made.before), None);
    assert_eq!(blob_bytes(&root, &made.after).as_deref(), Some(&b"new\n"[..]));
    let changed = child(&kids, b"old\xfe.txt");
    assert_eq!(blob_bytes(&root, &changed.before).as_deref(), Some(&b"orig\n"[..]));
    assert_eq!(blob_bytes(&root, &changed.after).as_deref(), Some(&b"changed\n"[..]));
    let deep = child(&kids, b"d\xe9/f.txt");
    assert_eq!(blob_bytes(&root, &deep.after).as_deref(), Some(&b"deep\n"[..]));
    // The journal stays valid UTF-8 JSON, line by line.
    for line in repo.journal_bytes().split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<Value>(line).unwrap();
    }

    // On screen: escaped, never the raw byte.
    let out = shown(&root, &["recover"]);
    assert!(out.contains("bad\\xff.txt") && out.contains("old\\xfe.txt"), "{out}");
    let out = shown(&root, &["log", "--all"]);
    assert!(out.contains("d\\xe9/f.txt"), "{out}");
    let out = shown(&root, &["diff", &changed.id]);
    assert!(out.contains("old\\xfe.txt") && out.contains("-orig") && out.contains("+changed"), "{out}");

    // Reverted under the same bytes: the new files go, the tracked one gets its bytes back,
    // and no file is made under the mapped text of a name.
    let out = walj_at(&root).args(["revert", &made.id, &changed.id, &deep.id, "--yes"]).output().unwrap();
    assert!(out.status.success(), "walj revert: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!path_of(&root, b"bad\xff.txt").exists());
    assert!(!path_of(&root, b"d\xe9/f.txt").exists());
    assert_eq!(fs::read(path_of(&root, b"old\xfe.txt")).unwrap(), b"orig\n");
    for n in names(&root) {
        assert!(!n.windows(2).any(|w| w == [0xf4, 0x8f]), "a mapped name was written: {n:?}");
    }
    assert_eq!(git(&root, &["status", "--porcelain"]), "", "the work tree is as committed");
}

#[test]
fn non_utf8_names_are_journaled_and_reverted_in_a_folder_without_git() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::write(root.join("keep.txt"), b"keep\n").unwrap();
    bash(&root, "printf 'one\\n' > $'was\\x80.bin'");
    run_bash(&root, "toolu_scan", "printf 'x\\n' > $'x\\xff.bin' && printf 'two\\n' > $'was\\x80.bin'");

    let kids = children(&root, "toolu_scan");
    assert_eq!(kids.len(), 2, "{kids:#?}");
    let made = child(&kids, b"x\xff.bin");
    assert_eq!(blob_bytes(&root, &made.after).as_deref(), Some(&b"x\n"[..]));
    let changed = child(&kids, b"was\x80.bin");
    assert_eq!(blob_bytes(&root, &changed.before).as_deref(), Some(&b"one\n"[..]));
    let out = shown(&root, &["recover"]);
    assert!(out.contains("x\\xff.bin") && out.contains("was\\x80.bin"), "{out}");

    let out = walj_at(&root).args(["revert", &made.id, &changed.id, "--yes"]).output().unwrap();
    assert!(out.status.success(), "walj revert: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(names(&root), vec![b"keep.txt".to_vec(), b"was\x80.bin".to_vec()]);
    assert_eq!(fs::read(path_of(&root, b"was\x80.bin")).unwrap(), b"one\n");
}
