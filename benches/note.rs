//! The SessionStart note's size for crashes of 10, 200 and 1,000 entries (Claude Code cuts
//! hook output over 10,000 characters): each crash is a session whose records name a process
//! that is not running, with 5 in 6 of its file entries completed and the rest cut off in
//! flight, two Bash commands that never finished, a background command, a subagent still
//! running, 3 open todos and a last prompt. Prints one row per size: the note's characters,
//! the user's message, and whether every kind is named (killed commands, in-flight entries —
//! all, or the count and the latest —, todos, the background command, the subagent, the
//! prompt), and the hook's wall time.
//!
//! Run: `cargo bench --bench note` (or, without a release build, `cargo test --bench note`).
//! `WALJ_BIN` runs another walj; `WALJ_BENCH_NOTE_SHOW=1` prints each note.

#![allow(clippy::unwrap_used, clippy::panic)] // bench code: a failed step is a failed run

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::walj_bin;
use serde_json::{Value, json};
use walj::journal::{Blob, JournalWriter, Record, kind, op};

const SID: &str = "c0ffee00-0000-4000-8000-00000000beef";

/// Writes the crash; returns (in-flight paths, killed command lines, todos, background, prompt).
fn stage(root: &Path, n: usize) -> (Vec<String>, Vec<String>, Vec<String>) {
    fs::create_dir_all(root.join(".walj")).unwrap();
    let w = JournalWriter::new(&root.join(".walj/journal.jsonl"));
    let rec = |o: &str| {
        let mut r = Record::new(o, SID);
        r.pid = Some(std::process::id());
        r.pstart = Some(1);
        r
    };
    let mut recs = Vec::new();
    let mut start = rec(op::SESSION);
    start.kind = Some(kind::START.into());
    recs.push(start.with("cwd", root.display().to_string()).with("source", "startup"));
    let mut p = rec(op::SESSION);
    p.kind = Some(kind::PROMPT.into());
    recs.push(p.with("prompt", "Split the billing module into one file per invoice kind"));
    let todos: Vec<Value> = (0..5)
        .map(|i| json!({"content": format!("todo step {i}"), "status": if i < 2 { "completed" } else { "pending" }}))
        .collect();
    let mut t = rec(op::SESSION);
    t.kind = Some(kind::TODOS.into());
    t.tool = Some("TodoWrite".into());
    recs.push(t.with("todos", todos));
    let mut sub = rec(op::SESSION);
    sub.kind = Some(kind::SUBAGENT.into());
    recs.push(
        sub.with("status", "start")
            .with("call", "toolu_agent01")
            .with("agent_type", "general-purpose")
            .with("description", "audit the invoice tests")
            .with("background", true),
    );
    let mut bg = rec(op::INTENT);
    bg.id = "toolu_bg01".into();
    bg.tool = Some("Bash".into());
    bg.event = "command_run".into();
    recs.push(bg.with("command", "sleep 300 && echo polled >> poll.log").with("background", true));
    let cut = n / 6;
    let mut in_flight = Vec::new();
    for i in 0..n {
        let mut r = rec(op::INTENT);
        r.id = format!("toolu_{i:05}file");
        r.tool = Some("Write".into());
        r.event = "file_modified".into();
        r.path = format!("src/billing/kind_{:02}/invoice_{i:04}.rs", i % 12);
        r.before = Some(Blob::Absent);
        recs.push(r.clone());
        if i < n - cut {
            let mut a = r;
            a.op = op::APPLIED.into();
            a.after = Some(Blob::Absent);
            recs.push(a);
        } else {
            in_flight.push(r.path);
        }
    }
    let commands: Vec<String> =
        (0..2).map(|i| format!("cargo test -p billing_{i} && ./scripts/regen-{i}.sh")).collect();
    for (i, c) in commands.iter().enumerate() {
        let mut r = rec(op::INTENT);
        r.id = format!("toolu_cmd{i:02}");
        r.tool = Some("Bash".into());
        r.event = "command_run".into();
        recs.push(r.with("command", c.clone()));
    }
    w.append_all(&recs).unwrap();
    (in_flight, commands, vec!["todo step 2".into(), "todo step 3".into(), "todo step 4".into()])
}

fn main() {
    println!("| entries | in flight | note (chars) | named in full | user's message (chars) | hook |");
    println!("|---|---|---|---|---|---|");
    for n in [10, 200, 1000] {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        Command::new("git").args(["init", "-q"]).current_dir(&root).status().unwrap();
        let (in_flight, commands, todos) = stage(&root, n);
        let payload = json!({"session_id": "d0d0d0d0-0000-4000-8000-000000000001", "cwd": root,
            "transcript_path": root.join("none.jsonl"), "hook_event_name": "SessionStart", "source": "startup"});
        let mut c = Command::new(walj_bin());
        c.arg("hook").env_remove("CLAUDE_PROJECT_DIR").current_dir(&root);
        c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let t = Instant::now();
        let mut child = c.spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let took = t.elapsed();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let note = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_default();
        let message = v["systemMessage"].as_str().unwrap_or_default();
        if std::env::var_os("WALJ_BENCH_NOTE_SHOW").is_some() {
            eprintln!("--- {n} entries ---\n{message}\n\n{note}\n");
        }
        let flight = in_flight.iter().filter(|p| note.contains(&format!("- {p} ("))).count();
        let mut kinds = Vec::new();
        kinds.push(format!("{}/2 commands", commands.iter().filter(|c| note.contains(c.as_str())).count()));
        kinds.push(format!("{flight}/{} in flight", in_flight.len()));
        kinds.push(format!("{}/3 todos", todos.iter().filter(|t| note.contains(t.as_str())).count()));
        kinds.push(format!("background {}", note.contains("sleep 300")));
        kinds.push(format!("subagent {}", note.contains("audit the invoice tests")));
        kinds.push(format!("prompt {}", note.contains("Split the billing module")));
        println!(
            "| {n} | {} | {} | {} | {} | {:.0} ms |",
            in_flight.len(),
            note.chars().count(),
            kinds.join(", "),
            message.chars().count(),
            took.as_secs_f64() * 1000.0
        );
        assert!(note.chars().count() <= 10_000, "{n} entries: {} chars", note.chars().count());
    }
}
