//! Issue 7, cost: what walj's hooks add to a real Claude Code session, per tool call.
//!
//! Runs the same scripted `claude -p` session (the pinned real CLI against the stand-in model
//! server of `tests/support`) in three set-ups, several times each, interleaved:
//! - `plain`: no hooks;
//! - `noop`: the hooks `walj install` writes (same events, matchers, timeouts) with the
//!   command replaced by `cat >/dev/null` — what running *any* hook costs in Claude Code;
//! - `walj`: `walj install` as a user runs it (exec form: no `claude` on the PATH it runs with);
//! - with `WALJ_BENCH_E2E_PLUGIN=1`, two more: `plugin`, the self-contained plugin (`walj plugin
//!   --out`, `claude --plugin-dir`: exec form, Claude Code spawns the plugin's copy of walj), and
//!   `launcher`, the marketplace plugin of `plugin/` (exec form on its sh launcher, which runs
//!   the walj on PATH).
//!
//! The `noop` hooks keep walj's form: exec form runs `dd of=/dev/null status=none` (one process,
//! no shell, reads the payload), shell form `cat >/dev/null`.
//!
//! Two session sizes (0 and N tool calls) separate the per-session hooks (SessionStart,
//! UserPromptSubmit, Stop with its checkpoint, SessionEnd) from the cost per tool call
//! (PreToolUse + PostToolUse):
//!
//! ```text
//! per call(A vs B) = ((A_N - B_N) - (A_0 - B_0)) / N      on the medians
//! ```
//!
//! Run: `cargo bench --bench e2e` (the bench profile builds walj in release mode). Env:
//! `WALJ_BENCH_E2E_RUNS` (default 7 per row), `WALJ_BENCH_E2E_CALLS` (default 30 tool calls:
//! Edit, Write and Bash in turn, on 10 KB files), `WALJ_BIN` (another walj binary),
//! `WALJ_BENCH_E2E_OLD` (an older walj binary: a fourth set-up, `old`, run in turns with the
//! others, so a change is measured against the same stretch of the machine),
//! `WALJ_CLAUDE_BIN` / `WALJ_CLAUDE_VERSION` (see tests/support/README.md).
//! Prints a Markdown table (also written to `$CARGO_TARGET_DIR/bench-e2e.md`). Goal: walj
//! under 5 ms per tool call, Pre and Post together.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

mod common;
#[path = "../tests/support/mod.rs"]
mod support;

use common::{median, ms, walj_bin};
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::anthropic_mock::{MockServer, Turn};
use support::claude::{self, Sandbox};

const TIMEOUT: Duration = Duration::from_secs(300);
const FILES: usize = 10;

/// A 10 KB text file, different per index.
fn content(i: usize, version: usize) -> String {
    let mut s = String::new();
    let mut n = 0;
    while s.len() < 10 * 1024 {
        s.push_str(&format!("file {i} line {n} version {version}: the quick brown fox jumps over the lazy dog\n"));
        n += 1;
    }
    s
}

/// `calls` tool calls, one per turn: Edit, Write, Bash in turn, then a final text.
fn script(project: &Path, calls: usize) -> Vec<Turn> {
    let mut turns = Vec::new();
    for k in 0..calls {
        let i = k % FILES;
        let path = project.join(format!("src/f{i}.txt"));
        turns.push(match k % 3 {
            0 => Turn::tool(
                "Edit",
                json!({"file_path": path, "old_string": format!("file {i} line 7 version"),
                       "new_string": format!("file {i} line 7 (edited {k}) version"), "replace_all": false}),
            ),
            1 => Turn::tool("Write", json!({"file_path": path, "content": content(i, k)})),
            _ => Turn::tool("Bash", json!({"command": format!("wc -c src/f{i}.txt"), "description": "Count"})),
        });
    }
    turns.push(Turn::text("Done."));
    turns
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Setup {
    Plain,
    Noop,
    Walj,
    /// walj as `WALJ_BENCH_E2E_OLD` builds it.
    Old,
    /// The self-contained plugin (`walj plugin --out`), loaded with `--plugin-dir`.
    Plugin,
    /// The marketplace plugin (`plugin/`, its sh launcher), loaded with `--plugin-dir`.
    Launcher,
}

impl Setup {
    const ALL: [Setup; 3] = [Setup::Plain, Setup::Noop, Setup::Walj];
    fn name(self) -> &'static str {
        match self {
            Setup::Plain => "plain",
            Setup::Noop => "noop",
            Setup::Walj => "walj",
            Setup::Old => "old",
            Setup::Plugin => "plugin",
            Setup::Launcher => "launcher",
        }
    }
}

/// The older walj binary of `WALJ_BENCH_E2E_OLD`, if set.
fn old_bin() -> Option<PathBuf> {
    std::env::var_os("WALJ_BENCH_E2E_OLD").filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// One session in a fresh project; returns its wall time and, per tool call, the time from the
/// model request that asked for it to the next one (the stand-in answers at once, so that is
/// PreToolUse hooks + the tool + PostToolUse hooks + Claude Code's own work).
fn session(claude_bin: &Path, setup: Setup, calls: usize) -> (Duration, Vec<f64>) {
    let sb = Sandbox::new();
    let bin = sb.dir.path().canonicalize().unwrap().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let walj = if setup == Setup::Old { old_bin().expect("WALJ_BENCH_E2E_OLD") } else { walj_bin() };
    std::os::unix::fs::symlink(walj, bin.join("walj")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    for i in 0..FILES {
        sb.write(&format!("src/f{i}.txt"), &content(i, 0));
    }
    sb.commit("initial");
    let plugin_dir = match setup {
        Setup::Plugin => {
            let dir = sb.dir.path().canonicalize().unwrap().join("walj-plugin");
            let out = Command::new(walj_bin()).arg("plugin").arg("--out").arg(&dir).output().expect("walj plugin");
            assert!(out.status.success(), "walj plugin: {}", String::from_utf8_lossy(&out.stderr));
            Some(dir)
        }
        Setup::Launcher => Some(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/plugin"))),
        _ => None,
    };
    if plugin_dir.is_some() {
        sb.settings(&json!({}));
    } else if setup != Setup::Plain {
        let out = Command::new("sh")
            .args(["-c", "walj install"])
            .current_dir(&sb.project)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", &sb.home)
            .output()
            .expect("walj install");
        assert!(out.status.success(), "walj install: {}", String::from_utf8_lossy(&out.stderr));
        if setup == Setup::Noop {
            let f = sb.project.join(".claude/settings.json");
            let mut v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&f).unwrap()).unwrap();
            let mut replaced = 0;
            for groups in v["hooks"].as_object_mut().unwrap().values_mut() {
                for g in groups.as_array_mut().unwrap() {
                    for h in g["hooks"].as_array_mut().unwrap() {
                        if h.get("args").is_some() {
                            h["command"] = json!("dd");
                            h["args"] = json!(["of=/dev/null", "status=none"]);
                        } else {
                            h["command"] = json!("cat >/dev/null");
                        }
                        replaced += 1;
                    }
                }
            }
            assert!(replaced > 0, "{v}");
            fs::write(&f, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        }
    } else {
        sb.settings(&json!({}));
    }
    let mock = MockServer::start(script(&sb.project, calls));
    let mut cmd = sb.claude_p(claude_bin, &mock, "Work through the files");
    cmd.env("PATH", &path);
    if let Some(dir) = &plugin_dir {
        cmd.arg("--plugin-dir").arg(dir);
    }
    let out = claude::run(cmd, TIMEOUT);
    assert!(out.status.success() && !out.timed_out, "claude failed: {out:?}\n{}", mock.summary());
    assert_eq!(out.json()["result"], "Done.", "{out:?}");
    if !matches!(setup, Setup::Plain | Setup::Noop) {
        // Not timed: walj saw every call (an intent per call).
        let journal = sb.project.join(".walj/journal.jsonl");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = fs::read_to_string(&journal).unwrap_or_default();
            let intents = text.lines().filter(|l| l.contains("\"op\":\"intent\"")).count();
            if intents == calls && text.contains("\"kind\":\"end\"") {
                break;
            }
            assert!(Instant::now() < deadline, "walj journaled {intents} of {calls} calls");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let at: Vec<f64> = mock.main_requests().iter().map(|r| r.at_us as f64 / 1000.0).collect();
    assert_eq!(at.len(), calls + 1, "{}", mock.summary());
    (out.elapsed, at.windows(2).map(|w| w[1] - w[0]).collect())
}

/// The 1-minute load average (`/proc/loadavg`), "?" elsewhere.
fn load() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runs: usize = std::env::var("WALJ_BENCH_E2E_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let calls: usize = std::env::var("WALJ_BENCH_E2E_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let claude_bin = match claude::claude_bin() {
        Ok(b) => b,
        Err(e) => {
            println!("SKIPPED: bench e2e: the real Claude Code CLI is not available: {e}");
            if std::env::var_os("WALJ_E2E_REQUIRE").is_some_and(|v| v == "1") {
                std::process::exit(1);
            }
            return;
        }
    };
    let version = Command::new(&claude_bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("walj: {}\nclaude: {} ({version})", walj_bin().display(), claude_bin.display());

    let mut setups = Setup::ALL.to_vec();
    if old_bin().is_some() {
        setups.push(Setup::Old);
    }
    let plugins = std::env::var_os("WALJ_BENCH_E2E_PLUGIN").is_some_and(|v| v == "1");
    if plugins {
        setups.extend([Setup::Plugin, Setup::Launcher]);
    }
    // Warm-up (page cache, the CLI's first start), not counted.
    for &setup in &setups {
        session(&claude_bin, setup, 3);
    }

    // rows: (size, setup); the order alternates to spread drift evenly.
    let sizes = [0, calls];
    let rows: Vec<(usize, Setup)> = sizes.iter().flat_map(|&n| setups.iter().map(move |&s| (n, s))).collect();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); rows.len()];
    let mut per_turn: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    let load_before = load();
    for r in 0..runs {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        if r % 2 == 1 {
            order.reverse();
        }
        for k in order {
            let (size, setup) = rows[k];
            let (t, turns) = session(&claude_bin, setup, size);
            times[k].push(t);
            per_turn[k].extend(turns);
            eprintln!("run {r}: {size:>3} calls, {:<6} {:7.1} ms", setup.name(), ms(t));
        }
    }
    let med = |n: usize, s: Setup| {
        let k = rows.iter().position(|&r| r == (n, s)).unwrap();
        ms(median(times[k].clone()))
    };
    let spread = |k: usize| {
        let mut v: Vec<f64> = times[k].iter().map(|d| ms(*d)).collect();
        v.sort_by(f64::total_cmp);
        format!("{:.0}–{:.0}", v[0], v[v.len() - 1])
    };
    let per_call = |a: Setup, b: Setup| ((med(calls, a) - med(calls, b)) - (med(0, a) - med(0, b))) / calls as f64;
    let per_session = |a: Setup, b: Setup| med(0, a) - med(0, b);

    let mut out = String::new();
    out.push_str(&format!(
        "## walj's cost in a real Claude Code session ({version}; {runs} runs per row, medians)\n\n"
    ));
    out.push_str(
        "| session | plain (no hooks) | noop hooks | walj | range plain / noop / walj |\n|---|---|---|---|---|\n",
    );
    for n in sizes {
        let label = if n == 0 {
            "0 tool calls (text only)".to_string()
        } else {
            format!("{n} tool calls (Edit, Write, Bash; 10 KB files)")
        };
        let ks: Vec<usize> = Setup::ALL.iter().map(|&s| rows.iter().position(|&r| r == (n, s)).unwrap()).collect();
        out.push_str(&format!(
            "| {label} | {:.0} ms | {:.0} ms | {:.0} ms | {} / {} / {} |\n",
            med(n, Setup::Plain),
            med(n, Setup::Noop),
            med(n, Setup::Walj),
            spread(ks[0]),
            spread(ks[1]),
            spread(ks[2])
        ));
    }
    out.push_str("\n| cost | per tool call (PreToolUse + PostToolUse) | per session |\n|---|---|---|\n");
    for (what, a, b) in [
        ("walj's own work (walj − noop)", Setup::Walj, Setup::Noop),
        ("any hook in Claude Code (noop − plain)", Setup::Noop, Setup::Plain),
        ("total with walj (walj − plain)", Setup::Walj, Setup::Plain),
    ]
    .into_iter()
    .chain(old_bin().map(|_| ("this walj against the old one (walj − old)", Setup::Walj, Setup::Old)))
    .chain(old_bin().map(|_| ("the old walj's own work (old − noop)", Setup::Old, Setup::Noop)))
    .chain(plugins.then_some(("the plugin's hook (plugin − noop)", Setup::Plugin, Setup::Noop)))
    .chain(plugins.then_some((
        "the marketplace plugin's hook, through its launcher (launcher − noop)",
        Setup::Launcher,
        Setup::Noop,
    )))
    .chain(plugins.then_some(("plugin against walj install (plugin − walj)", Setup::Plugin, Setup::Walj)))
    {
        out.push_str(&format!("| {what} | **{:.2} ms** | {:+.1} ms |\n", per_call(a, b), per_session(a, b)));
    }
    out.push_str(&format!(
        "\nper call = ((A_{calls} − B_{calls}) − (A_0 − B_0)) / {calls} on the medians of the session wall times.\n"
    ));
    // The second estimate: medians over every tool call of every run of the time between the
    // request that asked for the call and the next request (no process start-up in it).
    let turn_median = |s: Setup| {
        let k = rows.iter().position(|&r| r == (calls, s)).unwrap();
        let mut v = per_turn[k].clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    // The same per kind of call (the script runs Edit, Write, Bash in turn): the median of a
    // mix of three kinds moves with whichever kind is in the middle.
    let kind_median = |s: Setup, kind: usize| {
        let k = rows.iter().position(|&r| r == (calls, s)).unwrap();
        let mut v: Vec<f64> =
            per_turn[k].iter().enumerate().filter(|(i, _)| (i % calls) % 3 == kind).map(|(_, t)| *t).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    out.push_str(
        "\n| request to request (median per kind) | Edit | Write | Bash | mean of the three |\n|---|---|---|---|---|\n",
    );
    let mut rows_kind: Vec<(String, [f64; 3])> = Vec::new();
    for &s in &setups {
        rows_kind.push((s.name().to_string(), [0, 1, 2].map(|kind| kind_median(s, kind))));
    }
    let by = |name: &str| rows_kind.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let mut extra = Vec::new();
    if let (Some(w), Some(n)) = (by("walj"), by("noop")) {
        extra.push(("walj's own work (walj − noop)".to_string(), [w[0] - n[0], w[1] - n[1], w[2] - n[2]]));
    }
    if let (Some(o), Some(n)) = (by("old"), by("noop")) {
        extra.push(("the old walj's own work (old − noop)".to_string(), [o[0] - n[0], o[1] - n[1], o[2] - n[2]]));
    }
    for name in ["plugin", "launcher"] {
        if let (Some(p), Some(n)) = (by(name), by("noop")) {
            extra.push((format!("{name}'s own work ({name} − noop)"), [p[0] - n[0], p[1] - n[1], p[2] - n[2]]));
        }
    }
    for (name, v) in rows_kind.iter().chain(extra.iter()) {
        out.push_str(&format!(
            "| {name} | {:.2} ms | {:.2} ms | {:.2} ms | **{:.2} ms** |\n",
            v[0],
            v[1],
            v[2],
            (v[0] + v[1] + v[2]) / 3.0
        ));
    }
    let (tp, tn, tw) = (turn_median(Setup::Plain), turn_median(Setup::Noop), turn_median(Setup::Walj));
    if old_bin().is_some() {
        let to = turn_median(Setup::Old);
        out.push_str(&format!(
            "\nThe old walj, from request to request: {to:.1} ms → its own work **{:.2} ms** (this one: {:.2} ms).\n",
            to - tn,
            tw - tn
        ));
    }
    out.push_str(&format!(
        "\nPer tool call, from request to request (median of {} calls per set-up): plain {tp:.1} ms, noop {tn:.1} ms, \
         walj {tw:.1} ms → walj's own work **{:.2} ms**, any hook {:.2} ms, total with walj {:.2} ms.\n",
        calls * runs,
        tw - tn,
        tn - tp,
        tw - tp
    ));
    out.push_str(&format!(
        "\nGoal: walj's own work < 5 ms per call. Load average (1 min) before / after: {load_before} / {}; \
         {} CPUs.\n",
        load(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    out.push_str(&format!("walj binary: {}\n", walj_bin().display()));
    if let Some(old) = old_bin() {
        out.push_str(&format!("old walj binary: {}\n", old.display()));
    }
    println!("\n{out}");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target")));
    let _ = fs::create_dir_all(&target);
    let _ = fs::write(target.join("bench-e2e.md"), &out);
}
