//! Reads by session and by id on a long journal: each read command on a journal of
//! `WALJ_BENCH_LINES` lines (default 1,000,000) and on one of 1,000 lines, side by side in one
//! run, for two walj binaries (before and after a change), in turns.
//!
//!     WALJ_BENCH_OLD=/path/to/old/walj WALJ_BIN=/path/to/new/walj cargo bench --bench reads
//!
//! (without `WALJ_BENCH_OLD` only the new binary is timed; without `WALJ_BIN`, the one this
//! bench builds; `WALJ_BENCH_ONLY=diff,status` times only the commands naming one of those). Both journals are made of sessions of 1,000 lines (a start, then Edit
//! calls: intent, applied, persisted; the last session's last calls left unresolved, one call
//! marked done for `undo ID`), so a command about one session shows as much on either journal:
//! the budget is a read on the long journal ≤ 3× the same read on the short one, ≤ 100 MB peak memory. Every command is
//! run once untimed first (what a user's first read, or the background `walj fold`, pays: the
//! fold snapshot and the line index are written then). Wall time is the median of
//! `WALJ_BENCH_RUNS` (default 5) runs, process start included; peak memory is the largest
//! resident set of those runs (wait4). Prints a Markdown table (also target/bench-reads.md).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{median, ms, walj_bin};
use walj::journal::{Blob, Record, op};

/// Lines per session.
const SESSION_LINES: usize = 1000;

/// The call of the last session that was marked done.
const UNDONE: usize = 320;

fn session_key(s: usize) -> String {
    // Distinct first six characters (the sid every line carries).
    format!("{:08x}-bench-read-session-{s}", (s as u32).wrapping_mul(0x9E37_79B1))
}

fn entry_id(s: usize, i: usize) -> String {
    format!("toolu_01Bench{s:07}x{i:04}")
}

/// A project whose journal holds `lines` lines (whole sessions of [`SESSION_LINES`]).
fn project(lines: usize) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(d.path()).unwrap();
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::create_dir_all(root.join("src")).unwrap();
    Command::new("git").args(["init", "-q"]).current_dir(&root).status().unwrap();
    let mut f = std::io::BufWriter::new(fs::File::create(root.join(".walj/journal.jsonl")).unwrap());
    let sessions = lines.div_ceil(SESSION_LINES);
    for s in 0..sessions {
        let key = session_key(s);
        let mut start = Record::new(op::SESSION, &key);
        start.kind = Some(walj::journal::kind::START.into());
        f.write_all(&start.to_line()).unwrap();
        let calls = (SESSION_LINES - 1) / 3;
        for i in 0..calls {
            let mut r = Record::new(op::INTENT, &key);
            r.id = entry_id(s, i);
            r.tool = Some("Edit".into());
            r.event = "file_modified".into();
            r.path = format!("src/module_{}/file_{}.rs", i % 17, i % 101);
            r.before = Some(Blob::Id(format!("{:040x}", s * SESSION_LINES + i)));
            f.write_all(&r.to_line()).unwrap();
            r.op = op::APPLIED.into();
            r.before = None;
            r.after = Some(Blob::Id(format!("{:040x}", s * SESSION_LINES + i + 1)));
            f.write_all(&r.to_line()).unwrap();
            // The last session's last ten calls are left unresolved.
            if s + 1 < sessions || i + 10 < calls {
                r.op = op::PERSISTED.into();
                r.persisted = true;
                f.write_all(&r.to_line()).unwrap();
            }
            // One call of the last session was marked done (what `walj undo ID` takes back).
            if s + 1 == sessions && i == UNDONE {
                let mut m = Record::new(op::RESOLVED, &key);
                m.id = r.id.clone();
                m.path = r.path.clone();
                m.event = r.event.clone();
                m.tool = r.tool.clone();
                m.how = Some(walj::journal::how::DONE.into());
                m.action = Some(format!("a-bench-{s}"));
                f.write_all(&m.to_line()).unwrap();
            }
        }
    }
    f.flush().unwrap();
    drop(f);
    fs::File::open(root.join(".walj/journal.jsonl")).unwrap().sync_all().unwrap();
    (d, root)
}

#[cfg(unix)]
fn run(bin: &Path, root: &Path, args: &[String]) -> (Duration, i64) {
    use std::os::unix::process::ExitStatusExt;
    let mut c = Command::new(bin);
    c.arg("--project").arg(root).args(args).env("NO_COLOR", "1").env_remove("CLAUDECODE");
    let t = Instant::now();
    let child = c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value; wait4 reaps the child spawned above.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let el = t.elapsed();
    let code = std::process::ExitStatus::from_raw(status);
    assert!(code.code().is_some(), "walj {args:?} was killed: {code:?}");
    std::mem::forget(child);
    (el, usage.ru_maxrss)
}

#[cfg(not(unix))]
fn run(bin: &Path, root: &Path, args: &[String]) -> (Duration, i64) {
    let t = Instant::now();
    Command::new(bin).arg("--project").arg(root).args(args).stdout(Stdio::null()).status().unwrap();
    (t.elapsed(), -1)
}

/// A command's arguments for a journal of so many lines.
type Args = Box<dyn Fn(usize) -> Vec<String>>;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let lines: usize = std::env::var("WALJ_BENCH_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let runs: usize = std::env::var("WALJ_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let mut bins: Vec<(&str, PathBuf)> = Vec::new();
    if let Some(old) = std::env::var_os("WALJ_BENCH_OLD") {
        bins.push(("before", PathBuf::from(old)));
    }
    bins.push(("after", walj_bin()));
    let t = Instant::now();
    let (_small_dir, small) = project(SESSION_LINES);
    let (_big_dir, big) = project(lines);
    let big_bytes = fs::metadata(big.join(".walj/journal.jsonl")).unwrap().len();
    eprintln!("journals written in {:.1} s ({} MB)", t.elapsed().as_secs_f64(), big_bytes / 1_000_000);
    // The same session and entry on both journals: the last session (unresolved entries),
    // and an entry in the middle of it.
    let last = |n: usize| n.div_ceil(SESSION_LINES) - 1;
    let cmds: Vec<(&str, Args)> = vec![
        ("recover --json", Box::new(|_| vec!["recover".into(), "--json".into()])),
        ("status --json", Box::new(|_| vec!["status".into(), "--json".into()])),
        ("diff ID", Box::new(move |n| vec!["diff".into(), entry_id(last(n), 100)[8..].to_string()])),
        (
            "log --session SID --all",
            Box::new(move |n| {
                vec!["log".into(), "--session".into(), session_key(last(n))[..8].to_string(), "--all".into()]
            }),
        ),
        (
            "sessions show SID",
            Box::new(move |n| vec!["sessions".into(), "show".into(), session_key(last(n))[..8].to_string()]),
        ),
        ("sessions list", Box::new(|_| vec!["sessions".into(), "list".into()])),
        (
            "mark --dry-run ID",
            Box::new(move |n| {
                vec!["mark".into(), "--dry-run".into(), "--yes".into(), entry_id(last(n), 330)[8..].to_string()]
            }),
        ),
        (
            "revert --dry-run ID",
            Box::new(move |n| {
                vec!["revert".into(), "--dry-run".into(), "--force".into(), entry_id(last(n), 331)[8..].to_string()]
            }),
        ),
        (
            "undo --dry-run ID",
            Box::new(move |n| vec!["undo".into(), "--dry-run".into(), entry_id(last(n), UNDONE)[8..].to_string()]),
        ),
        (
            "handoff --print ID",
            Box::new(move |n| {
                vec!["handoff".into(), "--print".into(), "--force".into(), entry_id(last(n), 332)[8..].to_string()]
            }),
        ),
    ];
    // `WALJ_BENCH_ONLY=diff,log`: only the commands whose name contains one of these words.
    let only: Vec<String> = std::env::var("WALJ_BENCH_ONLY")
        .map(|v| v.split(',').filter(|w| !w.is_empty()).map(str::to_string).collect())
        .unwrap_or_default();
    let cmds: Vec<_> = cmds
        .into_iter()
        .filter(|(name, _)| only.is_empty() || only.iter().any(|w| name.contains(w.as_str())))
        .collect();
    let mut out = format!(
        "Journals: {lines} lines ({} MB) and {SESSION_LINES} lines, sessions of {SESSION_LINES} lines; median of {runs} runs after one untimed run, in turns.\n\n| command | binary | 1,000 lines | {lines} lines | ratio (budget ≤ 3×) | peak memory, long journal (budget ≤ 100 MB) |\n|---|---|---|---|---|---|\n",
        big_bytes / 1_000_000
    );
    for (name, args) in &cmds {
        let (a_small, a_big) = (args(SESSION_LINES), args(lines));
        for (_, bin) in &bins {
            let _ = run(bin, &small, &a_small);
            let _ = run(bin, &big, &a_big);
        }
        let mut times: Vec<[Vec<Duration>; 2]> = bins.iter().map(|_| [Vec::new(), Vec::new()]).collect();
        let mut peak: Vec<i64> = vec![0; bins.len()];
        for _ in 0..runs {
            for (b, (_, bin)) in bins.iter().enumerate() {
                times[b][0].push(run(bin, &small, &a_small).0);
                let (t, rss) = run(bin, &big, &a_big);
                times[b][1].push(t);
                peak[b] = peak[b].max(rss);
            }
        }
        for (b, (label, _)) in bins.iter().enumerate() {
            let (s, l) = (median(times[b][0].clone()), median(times[b][1].clone()));
            let row = format!(
                "| `walj {name}` | {label} | {:.1} ms | {:.1} ms | {:.1}× | {:.0} MB |\n",
                ms(s),
                ms(l),
                ms(l) / ms(s),
                peak[b] as f64 / 1024.0
            );
            eprint!("{row}");
            out.push_str(&row);
        }
    }
    println!("{out}");
    if std::env::var_os("WALJ_BENCH_KEEP").is_some() {
        // Left for a closer look (a profiler): say where.
        eprintln!("kept: {} {}", _small_dir.keep().display(), _big_dir.keep().display());
        return;
    }
    let _ = fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench-reads.md"), &out);
}
