//! Hook calls that cannot write `.walj/` (read-only, full) are not lost
//! silently: a marker outside `.walj/` (`$XDG_RUNTIME_DIR/walj/`) keeps the gap, the next
//! SessionStart tells the user (`systemMessage`) and clears it, `walj doctor` shows it.
//! Read-only: `chmod` (as a user) or a tmpfs remounted read-only (as root, where `chmod`
//! stops nothing); full: a 64 KiB tmpfs (root only; skipped with a message elsewhere).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test
#![cfg(target_os = "linux")]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Repo, walj_bin};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(5);

/// Runs one hook payload as Claude Code would (no `--project`), with `XDG_RUNTIME_DIR` set to
/// `xdg`, under `timeout`; it must exit 0 in time. Returns stdout.
fn hook(repo: &Repo, xdg: &Path, payload: &Value) -> String {
    let t = Instant::now();
    let mut child = Command::new("timeout")
        .arg((LIMIT.as_secs() + 5).to_string())
        .arg(walj_bin())
        .arg("hook")
        .current_dir(&repo.root)
        .env("XDG_RUNTIME_DIR", xdg)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "hook: {}", String::from_utf8_lossy(&out.stderr));
    assert!(t.elapsed() < LIMIT, "hook took {:?}", t.elapsed());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn start(repo: &Repo, xdg: &Path) -> String {
    hook(
        repo,
        xdg,
        &json!({"session_id": "s-full", "cwd": repo.root, "hook_event_name": "SessionStart", "source": "startup"}),
    )
}

/// A Write of `content` to `rel` through PreToolUse, the write, PostToolUse.
fn write(repo: &Repo, xdg: &Path, id: &str, rel: &str, content: &str) {
    let input = json!({"file_path": repo.path(rel), "content": content});
    let base = |event: &str| {
        json!({"session_id": "s-full", "cwd": repo.root, "hook_event_name": event, "tool_name": "Write",
               "tool_use_id": id, "tool_input": input})
    };
    hook(repo, xdg, &base("PreToolUse"));
    repo.write(rel, content);
    let mut post = base("PostToolUse");
    post["tool_response"] = json!({"type": "update", "filePath": repo.path(rel), "content": content});
    hook(repo, xdg, &post);
}

/// The failure markers in `xdg` (`<digest>.json`; the checkout watcher's socket and claim
/// live beside them).
fn markers(xdg: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(xdg.join("walj")) {
        Ok(rd) => rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect(),
        Err(_) => Vec::new(),
    }
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid() == 0
}

/// A tmpfs mounted at a folder, unmounted when dropped (even when the test fails).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(at)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "skipped: mounting a tmpfs is not allowed here ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Tmpfs(at.to_path_buf()))
    }

    fn remount(&self, opt: &str) {
        let st = Command::new("mount").args(["-o", &format!("remount,{opt}")]).arg(&self.0).status().unwrap();
        assert!(st.success(), "remount {opt}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_read_only_walj_folder_is_reported_at_the_next_session_start() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let xdg = tempfile::tempdir().unwrap();
    let walj = repo.root.join(".walj");
    // As root `chmod` stops nothing: `.walj/` is a tmpfs remounted read-only instead.
    let mount = if is_root() {
        match Tmpfs::mount(&walj, "4m") {
            Some(m) => Some(m),
            None => return,
        }
    } else {
        None
    };
    start(&repo, xdg.path());
    write(&repo, xdg.path(), "t-1", "a.txt", "one\n");
    assert!(markers(xdg.path()).is_empty(), "no marker while all goes well");
    let set_read_only = |ro: bool| match &mount {
        Some(m) => m.remount(if ro { "ro" } else { "rw" }),
        None => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&walj, std::fs::Permissions::from_mode(if ro { 0o500 } else { 0o700 })).unwrap();
        }
    };
    set_read_only(true);
    if std::fs::write(walj.join("probe"), b"x").is_ok() {
        set_read_only(false);
        eprintln!("skipped: .walj/ stays writable here (root without mount)");
        return;
    }
    write(&repo, xdg.path(), "t-2", "a.txt", "two\n");
    let found = markers(xdg.path());
    assert_eq!(found.len(), 1, "one marker for the project: {found:?}");
    let mark: Value = serde_json::from_slice(&std::fs::read(&found[0]).unwrap()).unwrap();
    assert_eq!(mark["failures"], 2, "{mark}");
    assert_eq!(mark["records"], 2, "{mark}");
    assert_eq!(mark["project"], json!(repo.root), "{mark}");
    // `walj doctor` shows it meanwhile.
    let out = Command::new(walj_bin())
        .arg("doctor")
        .current_dir(&repo.root)
        .env("XDG_RUNTIME_DIR", xdg.path())
        .env("NO_COLOR", "1")
        .env_remove("CLAUDE_PROJECT_DIR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("walj could not write .walj/"), "{text}");
    assert!(text.contains("2 journal records lost"), "{text}");
    // Still read-only: the next SessionStart says so already, and keeps the marker.
    let out = start(&repo, xdg.path());
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert!(v["systemMessage"].as_str().unwrap().contains("walj could not write .walj/"), "{v:#}");
    assert_eq!(markers(xdg.path()).len(), 1);
    // Writable again: reported once, then cleared.
    set_read_only(false);
    let out = start(&repo, xdg.path());
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("3 failed hook calls, 4 journal records lost"), "{msg}"); // the start and its `announced` mark
    assert!(markers(xdg.path()).is_empty(), "cleared once reported");
    let out = start(&repo, xdg.path());
    assert!(!out.contains("could not write"), "{out}");
    let log = std::fs::read_to_string(walj.join("errors.log")).unwrap();
    assert!(log.contains("reported at SessionStart"), "{log}");
}

#[test]
fn a_full_disk_is_reported_at_the_next_session_start() {
    if !is_root() {
        eprintln!("skipped: a full disk needs a tmpfs mount (root)");
        return;
    }
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let xdg = tempfile::tempdir().unwrap();
    let walj = repo.root.join(".walj");
    let Some(_mount) = Tmpfs::mount(&walj, "64k") else { return };
    start(&repo, xdg.path());
    // Fill it to the last byte.
    let filler = walj.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![b'x'; 4096];
    while f.write_all(&block).is_ok() {}
    let mut one = [b'x'];
    while f.write_all(&one).is_ok() {
        one[0] = b'y';
    }
    drop(f);
    for i in 0..20 {
        write(&repo, xdg.path(), &format!("t-{i}"), "a.txt", &format!("{i}\n"));
    }
    let found = markers(xdg.path());
    assert_eq!(found.len(), 1, "the lost records left a marker: {found:?}");
    let mark: Value = serde_json::from_slice(&std::fs::read(&found[0]).unwrap()).unwrap();
    assert!(mark["records"].as_u64().unwrap() > 0, "{mark}");
    assert!(mark["error"].as_str().unwrap().contains("No space left"), "{mark}");
    std::fs::remove_file(&filler).unwrap();
    let out = start(&repo, xdg.path());
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert!(v["systemMessage"].as_str().unwrap().contains("journal records lost"), "{v:#}");
    assert!(markers(xdg.path()).is_empty(), "cleared once reported");
    assert_eq!(repo.run(&["recover", "--json"]).0, 0);
}
