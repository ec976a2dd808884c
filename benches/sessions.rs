//! Issue 5: the hook's safe transcript copy on a 50 MB transcript (the Stop hook's wall time,
//! and the bytes it reads and writes), against a Stop with no transcript to copy.
//!
//! Run: `cargo build --release && cargo bench --bench sessions` (env: WALJ_BENCH_RUNS=30,
//! WALJ_BENCH_MB=50). Prints a Markdown table (also written to target/bench-sessions.md).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{ms, time_stdin_prep, walj_bin};

const SESSION: &str = "bench5000-0000-4000-8000-000000000000";

fn stop(root: &Path, transcript: &Path) -> Vec<u8> {
    serde_json::json!({
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": root,
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": "done",
    })
    .to_string()
    .into_bytes()
}

/// Runs `walj hook` with `input`, `runs` times, calling `prep(i)` (untimed) first; median.
fn time_hook(root: &Path, input: &[u8], runs: usize, prep: impl FnMut(usize)) -> Duration {
    let make = || {
        let mut c = Command::new(walj_bin());
        c.arg("hook").arg("--project").arg(root).env_remove("CLAUDE_PROJECT_DIR");
        c
    };
    time_stdin_prep(make, input, runs, prep)
}

/// Transcript-like JSON lines, `n` bytes or a little more.
fn lines(n: usize, seed: u64, noisy: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 512);
    let mut rng = seed | 1;
    let mut i = 0u64;
    while out.len() < n {
        if noisy {
            let mut hex = String::new();
            for _ in 0..24 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                hex.push_str(&format!("{rng:016x}"));
            }
            writeln!(out, r#"{{"type":"user","uuid":"n{seed}-{i}","noise":"{hex}"}}"#).unwrap();
        } else {
            writeln!(
                out,
                r#"{{"type":"assistant","uuid":"u{i:012}","message":{{"content":[{{"type":"text","text":"line {i}: {}"}}]}}}}"#,
                "the quick brown fox jumps over the lazy dog ".repeat(1 + (i % 7) as usize)
            )
            .unwrap();
        }
        i += 1;
    }
    out
}

fn append(path: &Path, bytes: &[u8]) {
    fs::OpenOptions::new().append(true).open(path).unwrap().write_all(bytes).unwrap();
}

fn main() {
    let runs: usize = std::env::var("WALJ_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let mb: usize = std::env::var("WALJ_BENCH_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap().join("proj");
    fs::create_dir_all(&root).unwrap();
    Command::new("git").args(["init", "-q"]).current_dir(&root).status().unwrap();
    let transcript = root.parent().unwrap().join("transcript.jsonl");
    // Like a real transcript: mostly text, with tool results and blobs that compress less.
    let mut big = Vec::with_capacity((mb << 20) + (1 << 20));
    let mut k = 0u64;
    while big.len() < mb << 20 {
        big.extend_from_slice(&lines(48 << 10, 1000 + k, false));
        big.extend_from_slice(&lines(16 << 10, 2000 + k, true));
        k += 1;
    }
    fs::write(&transcript, &big).unwrap();
    let copies = root.join(".walj/transcripts");
    let zst = copies.join(format!("{SESSION}.jsonl.zst"));
    let project = walj::project::Project::at(root.clone(), None);
    let mut rows: Vec<(String, String)> = Vec::new();

    // Baseline: a Stop whose transcript does not exist (nothing to copy).
    let missing = stop(&root, &root.join("no-such-transcript.jsonl"));
    let base = time_hook(&root, &missing, runs, |_| {});
    rows.push(("Stop, no transcript to copy (baseline)".into(), format!("{:.2} ms", ms(base))));

    // First copy of the whole transcript (the hooks installed late in a long session).
    let input = stop(&root, &transcript);
    let first = time_hook(&root, &input, 3.min(runs).max(1), |_| {
        let _ = fs::remove_dir_all(&copies);
    });
    let zsize = fs::metadata(&zst).map(|m| m.len()).unwrap_or(0);
    rows.push((
        format!("Stop, first copy of a {mb} MB transcript"),
        format!("{:.1} ms ({} MB → {:.1} MB zst)", ms(first), mb, zsize as f64 / (1 << 20) as f64),
    ));

    // Nothing new since the last copy.
    let same = time_hook(&root, &input, runs, |_| {});
    rows.push((format!("Stop, {mb} MB transcript, nothing new"), format!("{:.2} ms", ms(same))));

    // A typical turn: some KB of new lines; and a large one.
    for (label, size, noisy) in [
        ("4 KB", 4 << 10, false),
        ("64 KB", 64 << 10, false),
        ("64 KB incompressible", 64 << 10, true),
        ("1 MB", 1 << 20, false),
    ] {
        let t = time_hook(&root, &input, runs, |i| append(&transcript, &lines(size, 7 + i as u64, noisy)));
        rows.push((format!("Stop, {mb} MB transcript + {label} new"), format!("{:.2} ms", ms(t))));
    }

    // Bytes read from the transcript and written to the copy for one incremental copy,
    // measured by the library's counting reader and the copy's growth.
    for (label, size, noisy) in [("64 KB", 64 << 10, false), ("64 KB incompressible", 64 << 10, true)] {
        let add = lines(size, 99, noisy);
        append(&transcript, &add);
        let before = fs::metadata(&zst).unwrap().len();
        let stats = walj::session::transcript::copy(&project, SESSION, &transcript).unwrap();
        let grew = fs::metadata(&zst).unwrap().len() - before;
        rows.push((
            format!("one copy of {label} new ({} B)", add.len()),
            format!(
                "read {} B from the transcript, appended {} B to the copy (sidecar {} B)",
                stats.read,
                grew,
                fs::metadata(copies.join(format!("{SESSION}.offset"))).unwrap().len()
            ),
        ));
    }

    // Compaction (hooks wait for it: it holds the journal lock): a journal of `calls` tool calls
    // (intent, applied, persisted) in sessions of 1,000 calls, half of them past the retention.
    let calls: usize = std::env::var("WALJ_BENCH_COMPACT_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let cdir = tempfile::tempdir().unwrap();
    let croot = fs::canonicalize(cdir.path()).unwrap();
    let cproject = walj::project::Project::at(croot.clone(), None);
    cproject.ensure_dir().unwrap();
    {
        use walj::journal::{Blob, Record, kind, op};
        let mut f = std::io::BufWriter::new(fs::File::create(&cproject.journal).unwrap());
        let now = walj::journal::record::now_ts();
        for i in 0..calls {
            let session = format!("{:08x}-0000-4000-8000-000000000000", i / 1000);
            let ts = if i < calls / 2 { "2020-01-01T00:00:00.000Z".to_string() } else { now.clone() };
            if i % 1000 == 0 {
                let mut s = Record::new(op::SESSION, &session);
                s.ts = ts.clone();
                s.kind = Some(kind::START.into());
                f.write_all(&s.to_line()).unwrap();
            }
            let mut r = Record::new(op::INTENT, &session);
            r.ts = ts.clone();
            r.id = format!("toolu_{i:08}");
            r.tool = Some("Edit".into());
            r.event = "file_modified".into();
            r.path = format!("src/file_{}.rs", i % 500);
            r.before = Some(Blob::Id(format!("{:040x}", 2 * i)));
            f.write_all(&r.to_line()).unwrap();
            r.op = op::APPLIED.into();
            r.after = Some(Blob::Id(format!("{:040x}", 2 * i + 1)));
            f.write_all(&r.to_line()).unwrap();
            r.op = op::PERSISTED.into();
            r.persisted = true;
            f.write_all(&r.to_line()).unwrap();
        }
    }
    let jbytes = fs::metadata(&cproject.journal).unwrap().len();
    let t = Instant::now();
    let st = Command::new(walj_bin())
        .args(["compact", "--json", "--project"])
        .arg(&croot)
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let compact_time = t.elapsed();
    rows.push((
        format!(
            "walj compact, {} lines ({:.0} MB), half past the retention",
            calls * 3 + calls / 1000,
            jbytes as f64 / (1 << 20) as f64
        ),
        format!(
            "{:.0} ms ({:.0} MB left)",
            ms(compact_time),
            fs::metadata(&cproject.journal).unwrap().len() as f64 / (1 << 20) as f64
        ),
    ));

    let mut md = String::from("| what | result |\n|---|---|\n");
    for (k, v) in &rows {
        md.push_str(&format!("| {k} | {v} |\n"));
    }
    print!("{md}");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let out = target.join("bench-sessions.md");
    let _ = fs::write(out, &md);
}
