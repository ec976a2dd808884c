//! The hard edges of bad input: files that never end, paths that do not exist, commands that
//! fail midway. Each gives a clear error and changes nothing.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Repo, walj_at};

/// Runs `walj --project <repo> ARGS`, killing it after `limit`: (exit code, stderr), or
/// `None` when it did not end by itself.
fn run_within(repo: &Repo, args: &[&str], limit: Duration) -> Option<(i32, String)> {
    let mut child = std::process::Command::new(crate::common::walj_bin())
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .arg("--project")
        .arg(&repo.root)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return Some((st.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned()));
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every file under `dir`, with its bytes (empty when there is no `dir`).
fn files_under(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
#[cfg(unix)]
fn import_refuses_a_device_and_a_fifo_by_type_at_once() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    let fifo = repo.tmp.join("pipe.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for (path, what) in [("/dev/zero", "a character device"), (fifo.to_str().unwrap(), "a FIFO")] {
        let (code, err) = run_within(&repo, &["import", path], Duration::from_secs(20))
            .unwrap_or_else(|| panic!("walj import {path} did not end by itself"));
        assert_ne!(code, 0, "{path}: {err}");
        assert!(err.contains(path) && err.contains("not a regular file") && err.contains(what), "{path}: {err}");
        assert!(repo.journal_bytes().is_empty(), "{path}: the journal was written");
    }
}

/// A regular file that is one endless line (1 GiB of NUL bytes, sparse): the import reads
/// past it holding at most the line cap, and ends by itself under 512 MB.
#[test]
#[cfg(target_os = "linux")]
fn import_of_an_endless_line_ends_by_itself_within_512_mb() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    let big = repo.tmp.join("endless.jsonl");
    fs::File::create(&big).unwrap().set_len(1 << 30).unwrap();
    let start = Instant::now();
    let (code, kib, stderr) = crate::untrusted_writes::peak_kib(&[
        "--project",
        repo.root.to_str().unwrap(),
        "import",
        "--json",
        big.to_str().unwrap(),
    ]);
    assert!(kib < 512 * 1024, "peak memory {kib} KiB: {stderr}");
    assert!(start.elapsed() < Duration::from_secs(120), "{:?}", start.elapsed());
    assert_eq!(code, 0, "{stderr}");
}

/// Tens of MB of a real transcript (Claude Code 2.1.328's, one 30 MB line among its lines)
/// still import whole: the cap is far above any real line.
#[test]
fn a_large_real_transcript_still_imports() {
    let real = fs::read(crate::common::fixtures().join("transcripts/cc-2.1.328-killed-mid-bash.jsonl")).unwrap();
    let import = |bytes: &[u8]| -> Value {
        let repo = Repo::new(&[("a.txt", "one\n")]);
        let t = repo.tmp.join("t.jsonl");
        fs::write(&t, bytes).unwrap();
        let out = repo.ok(&["import", "--json", t.to_str().unwrap()]);
        serde_json::from_str(&out).unwrap()
    };
    let plain = import(&real);
    // A line Claude Code writes and walj skips (`api-request-shape`), made 30 MB long.
    let text = String::from_utf8(real.clone()).unwrap();
    let mut big = String::new();
    for (i, line) in text.lines().enumerate() {
        big.push_str(line);
        big.push('\n');
        if i == 2 {
            let shape = json!({"type": "api-request-shape", "sessionId": "4b79e617-7ef1-4ab2-a219-fbffcb6122b5",
                "timestamp": "2026-11-29T07:10:31.078Z", "shape": {"system": "x".repeat(30 << 20)}});
            big.push_str(&shape.to_string());
            big.push('\n');
        }
    }
    assert!(big.len() > 30 << 20);
    let large = import(big.as_bytes());
    let files = |v: &Value| v["imports"][0]["report"]["files"].as_array().cloned().unwrap_or_else(|| panic!("{v}"));
    let (p, l) = (&files(&plain)[0], &files(&large)[0]);
    assert!(p["tool_calls"].as_u64().unwrap() > 0, "{p}");
    assert_eq!(l["tool_calls"], p["tool_calls"], "{l}");
    assert_eq!(l["added"], p["added"], "{l}");
    assert!(l.get("oversized").is_none(), "{l}");
}

/// `--journal` naming a file that does not exist: an error naming it, exit 2, nothing made.
#[test]
fn a_journal_that_does_not_exist_is_an_error_naming_it() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    let missing = repo.tmp.join("nonexistent/journal.jsonl");
    for cmd in [&["recover"][..], &["log"], &["status"], &["sessions"]] {
        let out = walj_at(&repo.root).arg("--journal").arg(&missing).args(cmd).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(err.contains(missing.to_str().unwrap()) && err.contains("no such file"), "{cmd:?}: {err}");
    }
    assert!(!repo.root.join(".walj").exists(), "a failed command made .walj/");
}

/// A failed `sessions export` (its output's folder does not exist) writes nothing under
/// `.walj/`: it checks it can write the bundle before it copies the transcript.
#[test]
fn a_failed_export_writes_no_objects() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    let session = "6a6a6a6a-1111-4222-8333-444455556666";
    let transcript = repo.tmp.join("t.jsonl");
    let real = fs::read(crate::common::fixtures().join("transcripts/cc-2.0.69-edit-file-history.jsonl")).unwrap();
    fs::write(&transcript, &real).unwrap();
    let base = |event: &str| json!({"session_id": session, "transcript_path": transcript, "cwd": repo.root, "hook_event_name": event});
    let mut start = base("SessionStart");
    start["source"] = json!("startup");
    repo.hook(&start.to_string());
    let mut prompt = base("UserPromptSubmit");
    prompt["prompt"] = json!("hello");
    repo.hook(&prompt.to_string());
    // The transcript grew since the hooks last saw it: an export would copy it now.
    let mut more = real.clone();
    more.extend_from_slice(&real);
    fs::write(&transcript, &more).unwrap();
    let walj_dir = repo.root.join(".walj");
    let before = files_under(&walj_dir);
    let journal = repo.journal_bytes();
    let bad = repo.tmp.join("no-such-folder/out.walj");
    let (code, _, err) = repo.run(&["sessions", "export", "6a6a6a6a", "-o", bad.to_str().unwrap()]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("no-such-folder"), "{err}");
    let after = files_under(&walj_dir);
    let changed: Vec<_> = after.iter().filter(|f| !before.contains(f)).map(|f| f.0.clone()).collect();
    assert!(changed.is_empty(), "the failed export wrote {changed:?}");
    assert_eq!(repo.journal_bytes(), journal);
    assert!(!bad.exists());
    // The same export to a folder that exists works (the test's setup is sound).
    let good = repo.tmp.join("out.walj");
    repo.ok(&["sessions", "export", "6a6a6a6a", "-o", good.to_str().unwrap()]);
    let now = files_under(&walj_dir);
    assert!(
        now.iter().any(|f| !before.contains(f)),
        "a working export copies the transcript: {:?}",
        now.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
}
