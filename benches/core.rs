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

use common::{hook_payload, median, ms, time_stdin_prep, walj_bin};
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

/// Syncs `path` and the whole file system and waits a moment: nothing written before a
/// measurement is still being written back during it.
fn settle_disk(path: &Path) {
    fs::File::open(path).unwrap().sync_all().unwrap();
    let _ = Command::new("sync").status();
    std::thread::sleep(Duration::from_secs(2));
}

type Side<'a, M> = (M, &'a [u8], &'a mut dyn FnMut(usize));

/// Medians of two commands run in turns (`a` then `b`, `runs` times each), each run after
/// its untimed `prep`.
fn time_in_turns<A: FnMut() -> Command, B: FnMut() -> Command>(
    (mut make_a, in_a, prep_a): Side<'_, A>,
    (mut make_b, in_b, prep_b): Side<'_, B>,
    runs: usize,
) -> (Duration, Duration) {
    let (mut ta, mut tb) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for i in 0..runs {
        ta.push(time_stdin_prep(&mut make_a, in_a, 1, |_| prep_a(i)));
        tb.push(time_stdin_prep(&mut make_b, in_b, 1, |_| prep_b(i)));
    }
    (median(ta), median(tb))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::var_os("WALJ_BENCH_SINK").is_some() {
        // The baseline of issue 14: a Rust binary that only reads its stdin.
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
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

    // 2. Append at N entries vs empty. Two projects, one journal each, timed in turns (one
    // run on the big journal, one on the small): a slower or busier stretch of the machine
    // weighs on both sides alike. The big journal is written and synced, and the disk left a
    // moment to finish writing it back, before anything is timed: the first runs otherwise
    // wait on the writeback of its hundreds of MB (that made this row read 1.45x once).
    let walj_dir = root.join(".walj");
    let journal = walj_dir.join("journal.jsonl");
    let (_d_small, small_root) = project();
    let small_file = small_root.join("src/lib.rs");
    let small_pre = edit_payload(&small_root, "PreToolUse", 0);
    let _ = time_stdin(walj_hook(&small_root), &small_pre, 3);
    fs::remove_file(&journal).ok();
    let t = Instant::now();
    big_journal(&journal, entries);
    let generated = t.elapsed();
    settle_disk(&journal);
    let size = fs::metadata(&journal).unwrap().len();
    let (full, empty) = time_in_turns(
        (walj_hook(&root), &pre, &mut |i| touch(3 * runs + i)),
        (walj_hook(&small_root), &small_pre, &mut |i| fs::write(&small_file, format!("{base}// small {i}\n")).unwrap()),
        runs,
    );
    out.push_str(&format!(
        "| hook append at {entries} entries ({} MB journal) vs empty, in turns | {:.2} ms vs {:.2} ms | | {:.2}× | ≤ 1.2× |\n",
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
    // The budget of issue 14: recover once a snapshot exists and 100 lines were appended.
    let tail: Vec<Record> = (0..100)
        .map(|i| {
            let mut r = Record::new(op::INTENT, "bench-tail-session");
            r.id = format!("toolu_tail_{i}");
            r.tool = Some("Edit".into());
            r.event = "file_modified".into();
            r.path = format!("src/tail_{i}.rs");
            r
        })
        .collect();
    JournalWriter::new(&journal).append_all(&tail).unwrap();
    let mut tail_times = Vec::new();
    for _ in 0..5 {
        let mut c = Command::new(walj_bin());
        c.args(["recover", "--project"]).arg(&root).env_remove("CLAUDE_PROJECT_DIR");
        tail_times.push(peak_rss_kib_of(c).0);
    }
    out.push_str(&format!(
        "| recover on {entries} entries, snapshot + 100 lines appended (median of 5) | {:.0} ms | | | ≤ 50 ms |\n",
        ms(median(tail_times))
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
    issue14(&mut out, runs);
    out.push_str(&format!("\n(journal of {entries} entries generated in {:.1} s)\n", generated.as_secs_f64()));
    println!("{out}");
    let target = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target"));
    let _ = fs::create_dir_all(&target);
    let _ = fs::write(target.join("bench-core.md"), &out);
}

/// Issue 14's rows: a file hook against a Rust binary that only reads the same stdin;
/// SessionStart and Stop on a 150,000-line journal against a small one (in turns); `recover`
/// on 1M entries after a fold snapshot exists and 100 lines were appended.
fn issue14(out: &mut String, runs: usize) {
    out.push_str("\n| issue 14 | walj | baseline | ratio | budget |\n|---|---|---|---|---|\n");
    // File hook with a new 10 KB pre-image vs an empty Rust binary reading the same payload,
    // in a store in use: its 256 fan-out folders exist (they all do after ~1,500 images). In
    // a fresh store most new images also create their folder, a second new inode per hook:
    // the Edit rows above time that case.
    let (_d, root) = project();
    for i in 0..256 {
        fs::create_dir_all(root.join(format!(".walj/store/{i:02x}"))).unwrap();
    }
    let file = root.join("src/lib.rs");
    let base = fs::read_to_string(&file).unwrap();
    let pre = edit_payload(&root, "PreToolUse", 0);
    let sink = || {
        let mut c = Command::new(std::env::current_exe().unwrap());
        c.env("WALJ_BENCH_SINK", "1");
        c
    };
    let (hook, empty) = time_in_turns(
        (walj_hook(&root), &pre, &mut |i| fs::write(&file, format!("{base}// sink {i}\n")).unwrap()),
        (sink, &pre, &mut |_| {}),
        runs,
    );
    out.push_str(&format!(
        "| file hook, new 10 KB image (store in use), vs a Rust binary reading the same stdin | {:.2} ms | {:.2} ms | {:.2}× | ≤ 1.6× |\n",
        ms(hook),
        ms(empty),
        ms(hook) / ms(empty)
    ));

    // SessionStart and Stop: 150k lines vs a small journal of 150 lines.
    let lines: usize = std::env::var("WALJ_BENCH_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(150_000);
    let (_dl, large) = project();
    let (_ds, small) = project();
    for (root, n) in [(&large, lines), (&small, 150)] {
        fs::create_dir_all(root.join(".walj")).unwrap();
        big_journal(&root.join(".walj/journal.jsonl"), n);
    }
    let large_journal = large.join(".walj/journal.jsonl");
    settle_disk(&large_journal);
    if std::env::var_os("WALJ_BENCH_KEEP").is_some() {
        // For profiling: the large project outlives the bench.
        eprintln!("large project kept: {}", _dl.keep().display());
    }
    let mb = fs::metadata(&large_journal).unwrap().len() as f64 / 1e6;
    let start_l = hook_payload(&large, "bench-stop-session", "SessionStart");
    let start_s = hook_payload(&small, "bench-stop-session", "SessionStart");
    // The first SessionStart on the large journal has no snapshot yet: a full fold.
    let first = time_stdin(walj_hook(&large), &start_l, 1);
    let _ = time_stdin(walj_hook(&small), &start_s, 1);
    let (sl, ss) = time_in_turns(
        (walj_hook(&large), &start_l, &mut |_| {}),
        (walj_hook(&small), &start_s, &mut |_| {}),
        runs.min(100),
    );
    out.push_str(&format!(
        "| SessionStart, {lines}-line ({mb:.0} MB) journal vs 150 lines, in turns (first on the large one: {:.1} ms) | {:.2} ms | {:.2} ms | {:.2}× | ≤ 3× |\n",
        ms(first), ms(sl), ms(ss), ms(sl) / ms(ss)
    ));
    // Stop after a turn that edited one file (its Pre and Post run untimed before each Stop).
    let stop_l = hook_payload(&large, "bench-stop-session", "Stop");
    let stop_s = hook_payload(&small, "bench-stop-session", "Stop");
    let turn = |root: &Path, i: usize| {
        let f = root.join("src/lib.rs");
        let text = fs::read_to_string(&f).unwrap();
        let mut p: serde_json::Value = serde_json::from_slice(&edit_payload(root, "PreToolUse", i)).unwrap();
        p["session_id"] = "bench-stop-session".into();
        let _ = time_stdin(walj_hook(root), p.to_string().as_bytes(), 1);
        fs::write(&f, format!("{text}// turn {i}\n")).unwrap();
        p["hook_event_name"] = "PostToolUse".into();
        let _ = time_stdin(walj_hook(root), p.to_string().as_bytes(), 1);
    };
    let (tl, ts) = time_in_turns(
        (walj_hook(&large), &stop_l, &mut |i| turn(&large, i)),
        (walj_hook(&small), &stop_s, &mut |i| turn(&small, i)),
        runs.min(100),
    );
    out.push_str(&format!(
        "| Stop after a one-file turn, {lines}-line journal vs 150 lines, in turns | {:.2} ms | {:.2} ms | {:.2}× | ≤ 3× |\n",
        ms(tl), ms(ts), ms(tl) / ms(ts)
    ));
}
