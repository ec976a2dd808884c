//! The SessionStart note of a big crash, through the real binary: ordered by what Claude needs
//! to continue (what was running, the in-flight entries, the open todos, the last prompt; the
//! applied entries summarised when space runs short), within Claude Code's 10,000-character
//! limit for hook output, with the counts of every kind; and the user's message with exact
//! numbers across sessions.
//!
//! The journal is written directly (as `benches/note.rs` does): a session whose records carry
//! a process id that is not running, so it reads as crashed.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;

use crate::common::{Parent, Repo, hook_ok};
use serde_json::{Value, json};
use walj::journal::{Blob, JournalWriter, Record, kind, op};

/// Claude Code cuts hook output over this many characters.
const LIMIT: usize = 10_000;

/// What a staged crash holds, to check the note against.
struct Crash {
    sid: String,
    in_flight: Vec<String>,
    applied: Vec<String>,
    commands: Vec<String>,
    background: String,
    subagent: String,
    todos: Vec<String>,
    prompt: String,
}

/// A crashed session of `n` file entries (5 in 6 completed, the rest cut off in flight, the
/// in-flight ones last as a crash leaves them), two Bash commands that never finished, a
/// background `sleep 300`, a subagent still running, 3 open todos of 5, and a last prompt.
fn stage(repo: &Repo, sid: &str, n: usize) -> Crash {
    fs::create_dir_all(repo.root.join(".walj")).unwrap();
    let w = JournalWriter::new(&repo.root.join(".walj/journal.jsonl"));
    let rec = |o: &str| {
        let mut r = Record::new(o, sid);
        // A process that is not this one's start: the session reads as crashed.
        r.pid = Some(std::process::id());
        r.pstart = Some(1);
        r
    };
    let mut recs = Vec::new();
    let mut start = rec(op::SESSION);
    start.kind = Some(kind::START.into());
    let transcript = repo.root.join(format!("{sid}.jsonl")).display().to_string();
    recs.push(
        start.with("cwd", repo.root.display().to_string()).with("source", "startup").with("transcript", transcript),
    );
    let prompt = "Split the billing module into one file per invoice kind and keep the tests green".to_string();
    let mut p = rec(op::SESSION);
    p.kind = Some(kind::PROMPT.into());
    recs.push(p.with("prompt", prompt.clone()));
    let todos: Vec<(&str, String)> = (0..5)
        .map(|i| {
            let status = match i {
                0 | 1 => "completed",
                2 => "in_progress",
                _ => "pending",
            };
            (status, format!("todo step {i}: move the invoice kind {i} into its own file"))
        })
        .collect();
    let mut t = rec(op::SESSION);
    t.kind = Some(kind::TODOS.into());
    t.tool = Some("TodoWrite".into());
    recs.push(t.with("todos", todos.iter().map(|(s, c)| json!({"content": c, "status": s})).collect::<Vec<_>>()));
    let mut sub = rec(op::SESSION);
    sub.kind = Some(kind::SUBAGENT.into());
    let subagent = "audit the invoice tests".to_string();
    recs.push(
        sub.with("status", "start")
            .with("call", "toolu_agent01")
            .with("agent_type", "general-purpose")
            .with("description", subagent.clone())
            .with("background", true),
    );
    let mut bg = rec(op::INTENT);
    bg.id = format!("toolu_{}_bg01", &sid[..4]);
    bg.tool = Some("Bash".into());
    bg.event = "command_run".into();
    let background = "sleep 300 && echo polled >> poll.log".to_string();
    recs.push(bg.with("command", background.clone()).with("background", true));
    let cut = n / 6;
    let (mut in_flight, mut applied) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut r = rec(op::INTENT);
        r.id = format!("toolu_{}_{i:05}file", &sid[..4]);
        r.tool = Some("Write".into());
        r.event = "file_modified".into();
        r.path = format!("src/billing/kind_{:02}/invoice_{i:04}.rs", i % 12);
        r.before = Some(Blob::Absent);
        recs.push(r.clone());
        if i < n - cut {
            let mut a = r.clone();
            a.op = op::APPLIED.into();
            a.after = Some(Blob::Absent);
            recs.push(a);
            applied.push(r.path);
        } else {
            in_flight.push(r.path);
        }
    }
    let commands: Vec<String> = (0..2)
        .map(|i| format!("cargo test -p billing_{i} --no-fail-fast -- invoice_totals_{i} && ./scripts/regen-{i}.sh"))
        .collect();
    for (i, c) in commands.iter().enumerate() {
        let mut r = rec(op::INTENT);
        r.id = format!("toolu_{}_cmd{i:02}", &sid[..4]);
        r.tool = Some("Bash".into());
        r.event = "command_run".into();
        recs.push(r.with("command", c.clone()));
    }
    w.append_all(&recs).unwrap();
    let open = todos.iter().filter(|(s, _)| *s != "completed").map(|(_, c)| c.clone()).collect();
    Crash { sid: sid.to_string(), in_flight, applied, commands, background, subagent, todos: open, prompt }
}

/// The next session's SessionStart: its JSON output.
fn next_start(repo: &Repo, sid: &str) -> Value {
    let payload = json!({
        "session_id": sid,
        "transcript_path": repo.root.join("no-transcript.jsonl"),
        "cwd": repo.root,
        "hook_event_name": "SessionStart",
        "source": "startup",
    });
    let out = hook_ok(&repo.root, &payload.to_string(), Parent::Timeout(20));
    serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn context(out: &Value) -> String {
    out["hookSpecificOutput"]["additionalContext"].as_str().unwrap().to_string()
}

/// The 200-entry crash: the note names every killed command, in-flight entry, open todo,
/// background command and running subagent, and the last prompt, in ≤ 10,000 characters;
/// the applied entries are summarised with their count, and `walj recover` is named for all.
#[test]
fn a_200_entry_crash_note_names_every_kind_in_full_within_the_limit() {
    let repo = Repo::new(&[("README.md", "# shop\n")]);
    let c = stage(&repo, "c0ffee00-0000-4000-8000-000000000200", 200);
    let out = next_start(&repo, "d0d0d0d0-0000-4000-8000-000000000001");
    let note = context(&out);
    let chars = note.chars().count();
    eprintln!("200-entry note: {chars} chars\n{note}");
    assert!(chars <= LIMIT, "{chars} chars");
    assert!(!note.contains("more bytes cut"), "the note was cut blind: {note}");
    for p in &c.in_flight {
        assert_eq!(note.matches(&format!("- {p} (")).count(), 1, "in-flight {p} not named once: {note}");
    }
    for cmd in &c.commands {
        assert!(note.contains(cmd.as_str()), "killed command {cmd} missing: {note}");
    }
    assert!(note.contains(&c.background), "{note}");
    assert!(note.contains(&c.subagent) && note.contains("still running when the session died"), "{note}");
    for t in &c.todos {
        assert!(note.contains(t.as_str()), "todo {t} missing: {note}");
    }
    assert!(note.contains(&c.prompt), "{note}");
    // Ordered by what Claude needs: what ran, then in flight, todos, the prompt, the rest.
    let at = |s: &str| note.find(s).unwrap_or_else(|| panic!("{s} missing: {note}"));
    assert!(at(&c.commands[0]) < at(&c.in_flight[0]), "{note}");
    assert!(at(&c.in_flight[c.in_flight.len() - 1]) < at(&c.todos[0]), "{note}");
    assert!(at(&c.todos[2]) < at(&c.prompt), "{note}");
    let rest = at("Completed, not yet verified");
    assert!(at(&c.prompt) < rest, "{note}");
    // The applied ones: counted (by folder and event), the most recent named by path.
    assert!(
        note.contains(&format!("Completed, not yet verified or otherwise unfinished ({})", c.applied.len())),
        "{note}"
    );
    assert!(note[rest..].contains(c.applied.last().unwrap().as_str()), "{note}");
    assert!(note.contains("by folder: ") && note.contains("by event: file_modified 167"), "{note}");
    assert!(note.contains("`walj recover` lists all 200."), "{note}");
    assert!(note.contains("(33 cut off in flight, 167 completed, not yet verified)"), "{note}");
    assert!(note.contains("2 commands that never finished, 1 subagent still running, 1 background command"), "{note}");
    assert!(note.contains("3 open todos"), "{note}");
}

/// The 1,000-entry crash: even when the first groups alone overflow, every kind's count is
/// there and the most recent items of each; within the limit.
#[test]
fn a_1000_entry_crash_note_keeps_every_kinds_count_and_its_latest_items() {
    let repo = Repo::new(&[("README.md", "# shop\n")]);
    let c = stage(&repo, "c0ffee00-0000-4000-8000-000000001000", 1000);
    let note = context(&next_start(&repo, "d0d0d0d0-0000-4000-8000-000000000002"));
    let chars = note.chars().count();
    eprintln!("1000-entry note: {chars} chars\n{note}");
    assert!(chars <= LIMIT, "{chars} chars");
    assert!(!note.contains("more bytes cut"), "the note was cut blind: {note}");
    assert!(note.contains(&format!("Cut off in flight ({}):", c.in_flight.len())), "{note}");
    // The most recent in-flight entries are named; the earlier ones counted.
    assert!(note.contains(&format!("- {} (", c.in_flight.last().unwrap())), "{note}");
    assert!(note.contains("earlier not shown here: `walj recover` lists them"), "{note}");
    for cmd in &c.commands {
        assert!(note.contains(cmd.as_str()), "killed command {cmd} missing: {note}");
    }
    assert!(note.contains(&c.background) && note.contains(&c.subagent), "{note}");
    assert!(note.contains(&c.todos[2]), "the latest open todo: {note}");
    assert!(note.contains(&c.prompt), "{note}");
    assert!(note.contains(&format!("({})", c.applied.len())), "{note}");
    assert!(note.contains("`walj recover` lists all 1000."), "{note}");
    assert!(note.contains("(166 cut off in flight, 834 completed, not yet verified)"), "{note}");
}

/// The user's message: what this crash left and what is still unresolved across sessions,
/// split as cut off in flight and completed but not yet verified.
#[test]
fn the_users_message_counts_this_crash_and_every_session_still_unresolved() {
    let repo = Repo::new(&[("README.md", "# shop\n")]);
    // An older crash, told already (its note went to an earlier session), still unresolved.
    let old = stage(&repo, "a0a0a0a0-0000-4000-8000-000000000001", 24);
    let first = next_start(&repo, "b0b0b0b0-0000-4000-8000-000000000001");
    assert!(context(&first).contains(&old.sid), "{first}");
    let new = stage(&repo, "c0c0c0c0-0000-4000-8000-000000000012", 12);
    let out = next_start(&repo, "d0d0d0d0-0000-4000-8000-000000000003");
    let message = out["systemMessage"].as_str().unwrap();
    eprintln!("{message}");
    assert!(message.contains(&new.sid[..6]), "{message}");
    assert!(
        message.contains(": 12 changes left unfinished by it (2 cut off in flight, 10 completed, not yet verified); "),
        "{message}"
    );
    assert!(
        message.contains("; 36 unresolved in 2 sessions (6 cut off in flight, 30 completed, not yet verified)."),
        "{message}"
    );
}

/// A prompt the user typed while Claude worked, queued by Claude Code (a `queue-operation`
/// line of the transcript) and never taken up when the session died: named in the note.
#[test]
fn a_prompt_queued_when_the_session_died_is_named_in_the_note() {
    let repo = Repo::new(&[("README.md", "# shop\n")]);
    let sid = "c0ffee00-0000-4000-8000-000000000051".to_string();
    stage(&repo, &sid, 6);
    let line = |op: &str, content: Option<&str>| {
        let mut v = json!({"type": "queue-operation", "operation": op, "timestamp": "2026-11-29T07:10:30.959Z", "sessionId": sid});
        if let Some(c) = content {
            v["content"] = json!(c);
        }
        v.to_string()
    };
    let text = [
        line("enqueue", Some("Split the billing module")),
        line("dequeue", None),
        line("enqueue", Some("and also update the changelog")),
    ]
    .join("\n");
    fs::write(repo.root.join(format!("{sid}.jsonl")), text + "\n").unwrap();
    let note = context(&next_start(&repo, "d0d0d0d0-0000-4000-8000-000000000004"));
    eprintln!("{note}");
    assert!(
        note.contains("Queued by the user while Claude worked, never taken up: and also update the changelog"),
        "{note}"
    );
    assert_eq!(note.matches("Queued by the user").count(), 1, "{note}");
    assert!(note.contains("1 queued prompt"), "{note}");
}

/// The brief (`walj sessions resume`) lists the in-flight entries first, by path, every one of
/// them in a 200-entry crash, and names a prompt queued when the session died.
#[test]
fn the_resume_brief_lists_in_flight_entries_first_and_the_queued_prompt() {
    let repo = Repo::new(&[("README.md", "# shop\n")]);
    let sid = "c0ffee00-0000-4000-8000-000000000052";
    let c = stage(&repo, sid, 200);
    let queued = json!({"type": "queue-operation", "operation": "enqueue", "sessionId": sid,
                        "timestamp": "2026-11-29T07:10:30.959Z", "content": "then bump the version"});
    fs::write(repo.root.join(format!("{sid}.jsonl")), format!("{queued}\n")).unwrap();
    let v = repo.json(&["sessions", "resume", &sid[..8], "--json", "--print-only"]);
    let brief = v["brief"].as_str().unwrap();
    eprintln!("{brief}");
    let list = &brief[brief.find("## Unresolved changes").unwrap()..];
    let first = list.lines().find(|l| l.starts_with("- [")).unwrap();
    assert!(first.starts_with("- [in_flight] ") && first.contains(c.in_flight[0].as_str()), "{first}");
    // Every in-flight entry by path, or (past the brief's budget) counted by its id; none of
    // the completed ones comes before them.
    let listed: Vec<&str> = list.lines().filter(|l| l.starts_with("- [")).collect();
    let flight = listed.iter().take_while(|l| l.starts_with("- [in_flight] ")).count();
    assert!(flight >= 30 && listed[flight..].iter().all(|l| !l.starts_with("- [in_flight] ")), "{list}");
    for (i, p) in c.in_flight.iter().enumerate() {
        let id = format!("c0ff_{:05}", 200 - c.in_flight.len() + i);
        assert!(brief.contains(p.as_str()) || brief.contains(&id), "in-flight {p} missing: {brief}");
    }
    assert!(brief.contains("then bump the version"), "{brief}");
}
