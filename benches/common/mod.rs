//! Helpers the benchmarks share (`mod common;` from a bench; not a bench target itself).
#![allow(dead_code)] // each bench uses a subset

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The walj binary built for this bench run (release profile), or `$WALJ_BIN`.
pub fn walj_bin() -> PathBuf {
    match std::env::var_os("WALJ_BIN") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_BIN_EXE_walj")),
    }
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs the command `make` builds with `input` on stdin, `runs` times, calling `prep(i)`
/// (untimed) before each run; the median wall time, process spawn included.
pub fn time_stdin_prep(
    mut make: impl FnMut() -> Command,
    input: &[u8],
    runs: usize,
    mut prep: impl FnMut(usize),
) -> Duration {
    let mut times = Vec::with_capacity(runs);
    for i in 0..runs {
        prep(i);
        let mut c = make();
        c.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null());
        let t = Instant::now();
        let mut child = c.spawn().unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let st = child.wait().unwrap();
        times.push(t.elapsed());
        assert!(st.success());
    }
    median(times)
}

/// A Claude Code payload of a session-level event (SessionStart, Stop, UserPromptSubmit …).
pub fn hook_payload(root: &std::path::Path, session: &str, event: &str) -> Vec<u8> {
    serde_json::json!({
        "session_id": session,
        "transcript_path": root.join("no-transcript.jsonl"),
        "cwd": root,
        "hook_event_name": event,
        "source": "startup",
        "stop_hook_active": false,
        "prompt": "go on",
    })
    .to_string()
    .into_bytes()
}
