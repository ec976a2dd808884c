//! The cost issue's SessionStart row: the first SessionStart on a large journal that has no
//! fold snapshot (budget ≤ 2 s, under Claude Code's 10 s hook timeout), each later one once
//! the background fold it started has finished (budget ≤ 50 ms), and the first prompt, which
//! carries the start's note when the fold ran out of time.
//!
//! The journal: tool calls of an intent + applied + persisted line each (Edit calls, and every
//! fourth a Bash call whose command is a 1.5 KB heredoc, as agents write files through Bash),
//! the last 20 calls of a crashed session left unresolved, so the note has something to tell.
//!
//! Run: `cargo bench --bench start`. Env: `WALJ_BENCH_GB` (journal size, default 4),
//! `WALJ_BENCH_RUNS` (later SessionStarts timed, default 20), `WALJ_BIN` (another walj),
//! `WALJ_BENCH_KEEP` (keep the project, for profiling).
//! Prints a Markdown table (also written to `$CARGO_TARGET_DIR/bench-start.md`).

#![allow(clippy::unwrap_used, clippy::panic)] // bench code: a failed step is a failed run

mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{hook_payload, median, ms, walj_bin};
use walj::journal::{Blob, Record, op};

/// One `walj hook` run: its wall time and what it printed.
fn hook(root: &Path, input: &[u8]) -> (Duration, String) {
    let mut c = Command::new(walj_bin());
    c.arg("hook").env_remove("CLAUDE_PROJECT_DIR").current_dir(root);
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let t = Instant::now();
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    let took = t.elapsed();
    assert!(out.status.success());
    (took, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Writes one tool call: intent, applied and (when `resolved`) persisted.
fn call(f: &mut impl Write, i: usize, session: &str, resolved: bool, heredoc: &str) -> (u64, u64) {
    let mut r = Record::new(op::INTENT, session);
    r.id = format!("toolu_{i:012}");
    r.pid = Some(4242);
    r.pstart = Some(1);
    if i % 4 == 3 {
        r.tool = Some("Bash".into());
        r.event = "command_run".into();
        r = r.with("command", format!("cat > src/gen_{i}.rs <<'EOF'\n{heredoc}EOF"));
    } else {
        r.tool = Some("Edit".into());
        r.event = "file_modified".into();
        r.path = format!("src/module_{}/file_{}.rs", i % 97, i % 1013);
        r.before = Some(Blob::Id(format!("{i:040x}")));
    }
    let mut put = |r: &Record| {
        let line = r.to_line();
        f.write_all(&line).unwrap();
        line.len() as u64
    };
    let mut bytes = put(&r);
    r.op = op::APPLIED.into();
    if r.before.is_some() {
        r.before = None;
        r.after = Some(Blob::Id(format!("{:040x}", i + 1)));
    }
    bytes += put(&r);
    if !resolved {
        return (bytes, 2);
    }
    r.op = op::PERSISTED.into();
    r.persisted = true;
    (bytes + put(&r), 3)
}

/// Writes a journal of about `bytes` bytes; returns its line count.
fn journal(path: &Path, bytes: u64) -> u64 {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, fs::File::create(path).unwrap());
    let heredoc: String = (0..30).map(|i| format!("    line {i:02} of the generated module body\n")).collect();
    let (mut written, mut lines, mut i) = (0u64, 0u64, 0usize);
    while written < bytes {
        let (b, l) = call(&mut f, i, &format!("{:08x}-bench", i / 5000), true, &heredoc);
        (written, lines, i) = (written + b, lines + l, i + 1);
    }
    // A crashed session's last calls, never verified: what the note tells.
    for j in i..i + 20 {
        lines += call(&mut f, j, "0badc0de-crashed-session", false, &heredoc).1;
    }
    f.flush().unwrap();
    f.get_ref().sync_all().unwrap();
    lines
}

/// Whether a walj process of this project is still running the detached fold (`walj fold`;
/// `walj status --json` in builds before it).
fn reader_running(root: &Path) -> bool {
    let want = root.to_string_lossy().into_owned();
    let Ok(rd) = fs::read_dir("/proc") else { return false };
    rd.flatten().any(|e| {
        let cmd = fs::read(e.path().join("cmdline")).unwrap_or_default();
        let args: Vec<String> = cmd.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        args.iter().any(|a| a == &want) && args.iter().any(|a| a == "fold" || a == "status")
    })
}

fn main() {
    let gb: f64 = std::env::var("WALJ_BENCH_GB").ok().and_then(|v| v.parse().ok()).unwrap_or(4.0);
    let runs: usize = std::env::var("WALJ_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = fs::canonicalize(dir.path()).unwrap();
    Command::new("git").args(["init", "-q"]).current_dir(&root).status().unwrap();
    fs::create_dir_all(root.join(".walj")).unwrap();
    let path = root.join(".walj/journal.jsonl");
    let t = Instant::now();
    let lines = journal(&path, (gb * 1e9) as u64);
    let size = fs::metadata(&path).unwrap().len();
    eprintln!("journal: {lines} lines, {:.2} GB, written in {:.0} s", size as f64 / 1e9, t.elapsed().as_secs_f64());
    let _ = Command::new("sync").status();
    std::thread::sleep(Duration::from_secs(2));

    let start = hook_payload(&root, "5e55e55e-bench-new", "SessionStart");
    let (first, first_out) = hook(&root, &start);
    // The background reader the first start left, to its end.
    let t = Instant::now();
    while reader_running(&root) && t.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let background = t.elapsed();
    let (prompt, prompt_out) = hook(&root, &hook_payload(&root, "5e55e55e-bench-new", "UserPromptSubmit"));
    let mut later = Vec::with_capacity(runs);
    for i in 0..runs {
        let (d, _) = hook(&root, &hook_payload(&root, &format!("5e55e55e-bench-later-{i}"), "SessionStart"));
        later.push(d);
    }
    let told = |s: &str| if s.contains("0badc0de") || s.contains("unresolved") { "with the note" } else { "no note" };
    let mut out = String::new();
    out.push_str(&format!(
        "\n| SessionStart, {:.2} GB journal ({lines} lines), no snapshot | walj | budget |\n|---|---|---|\n",
        size as f64 / 1e9
    ));
    out.push_str(&format!("| first SessionStart ({}) | {:.0} ms | ≤ 2,000 ms |\n", told(&first_out), ms(first)));
    out.push_str(&format!(
        "| the fold it left running in the background, to its end | {:.1} s | |\n",
        background.as_secs_f64()
    ));
    out.push_str(&format!("| first UserPromptSubmit after it ({}) | {:.0} ms | |\n", told(&prompt_out), ms(prompt)));
    out.push_str(&format!("| each later SessionStart (median of {runs}) | {:.1} ms | ≤ 50 ms |\n", ms(median(later))));
    print!("{out}");
    if std::env::var_os("WALJ_BENCH_KEEP").is_some() {
        // For profiling: the project outlives the bench.
        eprintln!("project kept: {}", dir.keep().display());
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("target"));
    let _ = fs::write(target.join("bench-start.md"), &out);
}
