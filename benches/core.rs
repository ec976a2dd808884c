//! Issue 2 budgets (DESIGN §8), side by side with the proposal's Python hook and recovery:
//! hook latency (Edit on a 10 KB file, pre-image + fsync), append at 1M entries vs empty,
//! `walj recover` on 1M entries (wall time and peak memory).
//!
//! Run: `cargo bench --bench core` (env: WALJ_BENCH_RUNS=200, WALJ_BENCH_ENTRIES=1000000).
//! Prints a Markdown table (also written to target/bench-core.md).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{median, ms, time_stdin_prep, walj_bin};
use walj::journal::{Blob, JournalWriter, Record, op};

fn shared() -> PathBuf {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared"));
    if p.is_dir() { p } else { PathBuf::from("/work/shared") }
}

/// Runs `cmd` with `input` on stdin, `runs` times; median wall time.
fn time_stdin(make: impl FnMut() -> Command, input: &[u8], runs: usize) -> Duration {
    time_stdin_prep(make, input, runs, |_| {})
}

fn project() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(d.path()).unwrap();
    fs::create_dir_all(root.join("src")).unwrap();
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 10 * 1024 {
        text.push_str(&format!("fn function_{i}() -> u32 {{ {i} }}\n"));
        i += 1;
    }
    fs::write(root.join("src/lib.rs"), &text).unwrap();
    Command::new("git").args(["init", "-q"]).current_dir(&root).status().unwrap();
    (d, root)
}

fn edit_payload(root: &Path, event: &str, n: usize) -> Vec<u8> {
    serde_json::json!({
        "session_id": "bench-session-0000",
        "transcript_path": "/nonexistent/t.jsonl",
        "cwd": root,
        "hook_event_name": event,
        "tool_name": "Edit",
        "tool_use_id": format!("toolu_bench_{n}"),
        "tool_input": {"file_path": root.join("src/lib.rs"), "old_string": "fn function_1()", "new_string": "fn function_one()"},
        "tool_response": {"filePath": root.join("src/lib.rs")}
    })
    .to_string()
    .into_bytes()
}

fn walj_hook(root: &Path) -> impl FnMut() -> Command + '_ {
    move || {
        let mut c = Command::new(walj_bin());
        c.arg("hook").env_remove("CLAUDE_PROJECT_DIR").current_dir(root);
        c
    }
}

fn python_hook(root: &Path) -> impl FnMut() -> Command + '_ {
    move || {
        let mut c = Command::new("python3");
        c.arg(shared().join("bench/proposal_hook.py")).env("CLAUDE_PROJECT_DIR", root).current_dir(root);
        c
    }
}

/// A journal of `n` entries (lines, as the proposal counts them): tool calls of an intent +
/// applied + persisted line each, but for the last 20 calls, left unresolved (no persisted).
fn big_journal(path: &Path, n: usize) {
    let mut f = std::io::BufWriter::new(fs::File::create(path).unwrap());
    let blob = |i: usize| Blob::Id(format!("{:040x}", i));
    let calls = (n + 20) / 3;
    for i in 0..calls {
        let session = format!("{:08x}-bench-session-{}", i / 5000, i / 5000);
        let mut r = Record::new(op::INTENT, &session);
        r.id = format!("toolu_{i:012}");
        r.tool = Some("Edit".into());
        r.event = "file_modified".into();
        r.path = format!("src/module_{}/file_{}.rs", i % 97, i % 1013);
        r.before = Some(blob(i));
        r.pid = Some(4242);
        r.pstart = Some(1);
        f.write_all(&r.to_line()).unwrap();
        r.op = op::APPLIED.into();
        r.before = None;
        r.after = Some(blob(i + 1));
        f.write_all(&r.to_line()).unwrap();
        if i + 20 < calls {
            r.op = op::PERSISTED.into();
            r.persisted = true;
            f.write_all(&r.to_line()).unwrap();
        }
    }
    f.flush().unwrap();
}

#[cfg(unix)]
fn peak_rss_kib_of(mut c: Command) -> (Duration, i64) {
    // Peak RSS of this one child: getrusage(RUSAGE_CHILDREN) after reaping only it would mix
    // in earlier children, so read it through wait4.
    use std::os::unix::process::ExitStatusExt;
    let t = Instant::now();
    let child = c.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let el = t.elapsed();
    assert!(std::process::ExitStatus::from_raw(status).success());
    std::mem::forget(child);
    (el, usage.ru_maxrss)
}

#[cfg(not(unix))]
fn peak_rss_kib_of(mut c: Command) -> (Duration, i64) {
    let t = Instant::now();
    c.stdout(Stdio::null()).status().unwrap();
    (t.elapsed(), -1)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runs: usize = std::env::var("WALJ_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let entries: usize = std::env::var("WALJ_BENCH_ENTRIES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let mut out = String::new();
    out.push_str("| measurement | walj | proposal (Python) | ratio | budget |\n|---|---|---|---|---|\n");

    // 1. Hook latency: Pre + Post of an Edit on a 10 KB file (each a process, pre-image + fsync).
    let (_d, root) = project();
    let pre = edit_payload(&root, "PreToolUse", 0);
    let post = edit_payload(&root, "PostToolUse", 0);
    let _ = time_stdin(walj_hook(&root), &pre, 5);
    // Each run sees new file content, so the pre-/post-image is really stored (and fsynced),
    // not deduplicated against the previous run's object.
    let file = root.join("src/lib.rs");
    let base = fs::read_to_string(&file).unwrap();
    let touch = |i: usize| fs::write(&file, format!("{base}// edit {i}\n")).unwrap();
    let w_pre = time_stdin_prep(walj_hook(&root), &pre, runs, &touch);
    let w_post = time_stdin_prep(walj_hook(&root), &post, runs, |i| touch(runs + i));
    let _ = time_stdin(python_hook(&root), &post, 3);
    let py = time_stdin(python_hook(&root), &post, runs.min(60));
    out.push_str(&format!(
        "| hook, Edit PreToolUse on 10 KB file (median of {runs}) | {:.2} ms | {:.2} ms (PostToolUse) | {:.0}× faster | ≤ 2 ms, ≥ 25× |\n",
        ms(w_pre), ms(py), ms(py) / ms(w_pre)
    ));
    out.push_str(&format!(
        "| hook, Edit PostToolUse on 10 KB file (median of {runs}) | {:.2} ms | {:.2} ms | {:.0}× faster | ≤ 2 ms, ≥ 25× |\n",
        ms(w_post), ms(py), ms(py) / ms(w_post)
    ));

    // 2. Append at N entries vs empty (the same hook, journal swapped in).
    let walj_dir = root.join(".walj");
    let journal = walj_dir.join("journal.jsonl");
    fs::remove_file(&journal).ok();
    let empty = time_stdin_prep(walj_hook(&root), &pre, runs, |i| touch(3 * runs + i));
    let t = Instant::now();
    big_journal(&journal, entries);
    let generated = t.elapsed();
    let size = fs::metadata(&journal).unwrap().len();
    let full = time_stdin_prep(walj_hook(&root), &pre, runs, |i| touch(4 * runs + i));
    out.push_str(&format!(
        "| hook append at {entries} entries ({} MB journal) vs empty | {:.2} ms vs {:.2} ms | | {:.2}× | ≤ 1.2× |\n",
        size / 1_000_000,
        ms(full),
        ms(empty),
        ms(full) / ms(empty)
    ));
    // In-process append cost (lock + write + fdatasync), same two journals.
    let w = JournalWriter::new(&journal);
    let rec = Record::new(op::INTENT, "inproc");
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        w.append(&rec).unwrap();
        times.push(t.elapsed());
    }
    let big_append = median(times);
    let small = walj_dir.join("small.jsonl");
    let ws = JournalWriter::new(&small);
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        ws.append(&rec).unwrap();
        times.push(t.elapsed());
    }
    let small_append = median(times);
    out.push_str(&format!(
        "| append in-process (lock, write, fdatasync) at {entries} vs empty | {:.3} ms vs {:.3} ms | | {:.2}× | ≤ 1.2× |\n",
        ms(big_append), ms(small_append), ms(big_append) / ms(small_append)
    ));

    // 3. recover on N entries vs the proposal's recovery over the same file.
    let mut rc = Command::new(walj_bin());
    rc.args(["recover", "--project"]).arg(&root).env_remove("CLAUDE_PROJECT_DIR");
    let _ = peak_rss_kib_of({
        let mut c = Command::new(walj_bin());
        c.args(["recover", "--project"]).arg(&root).env_remove("CLAUDE_PROJECT_DIR");
        c
    });
    let mut walj_times = Vec::new();
    let mut walj_rss = 0;
    for _ in 0..5 {
        let mut c = Command::new(walj_bin());
        c.args(["recover", "--project"]).arg(&root).env_remove("CLAUDE_PROJECT_DIR");
        let (t, rss) = peak_rss_kib_of(c);
        walj_times.push(t);
        walj_rss = rss;
    }
    let mut c = Command::new(walj_bin());
    c.args(["recover", "--json", "--project"]).arg(&root).env_remove("CLAUDE_PROJECT_DIR");
    let (json_t, _) = peak_rss_kib_of(c);
    let mut c = Command::new("python3");
    c.arg(shared().join("bench/proposal_recover.py")).arg(&journal);
    let (py_t, py_rss) = peak_rss_kib_of(c);
    let wt = median(walj_times);
    out.push_str(&format!(
        "| recover on {entries} entries (median of 5) | {:.0} ms ({:.0} ms --json) | {:.0} ms | {:.1}× faster | ≤ 1 s, ≥ 10× |\n",
        ms(wt), ms(json_t), ms(py_t), ms(py_t) / ms(wt)
    ));
    out.push_str(&format!(
        "| recover peak memory on {entries} entries ({} MB journal) | {} MiB | {} MiB | | follows unresolved entries |\n",
        size / 1_000_000, walj_rss / 1024, py_rss / 1024
    ));
    // Memory follows unresolved entries: a journal 1/10 the size, same 20 unresolved.
    big_journal(&journal, entries / 10);
    let mut c = Command::new(walj_bin());
    c.args(["recover", "--project"]).arg(&root).env_remove("CLAUDE_PROJECT_DIR");
    let (_, small_rss) = peak_rss_kib_of(c);
    out.push_str(&format!(
        "| recover peak memory on {} entries (same 20 unresolved) | {} MiB | | | |\n",
        entries / 10,
        small_rss / 1024
    ));
    out.push_str(&format!("\n(journal of {entries} entries generated in {:.1} s)\n", generated.as_secs_f64()));
    println!("{out}");
    let target = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target"));
    let _ = fs::create_dir_all(&target);
    let _ = fs::write(target.join("bench-core.md"), &out);
}
