//! A big crash with the real Claude Code CLI: ~200 entries, two Bash commands killed mid-run
//! (the main thread's and an async subagent's), a background `sleep 300`, 3 open todos. The
//! next session's first request holds the SessionStart note: it names every killed command,
//! every change they made, the background command, the running subagent, every open todo and
//! the last prompt, within Claude Code's 10,000-character limit for hook output; the 150
//! completed changes are summarised, and `walj recover` is named for all of them.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{self, MockServer, Turn};
use crate::support::claude;
use crate::walj::{NOTE, OrphanGuard, Proj, SESSION_TIMEOUT, wait_gone};
use serde_json::json;
use std::time::{Duration, Instant};

/// In the Agent call's prompt only: the mock answers the subagent from its own script.
const SUB: &str = "walj-e2e-big-crash-subagent";
const MAIN_CMD: &str = "toolu_mock_5_0";
const LIMIT: usize = 10_000;
/// Files the finished command writes, the killed main command, the killed subagent command.
const GEN: usize = 150;
const MAIN_FILES: usize = 30;
const SUB_FILES: usize = 10;

fn wait_until(timeout: Duration, mut pred: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !pred() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn a_200_entry_crash_is_told_to_the_next_session_in_full_within_the_limit() {
    let test = "a_200_entry_crash_is_told_to_the_next_session_in_full_within_the_limit";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("README.md", "# shop\n")]);
    p.install_walj();
    let token = claude::unique_token("walj-e2e-big");
    let guard = OrphanGuard(token.clone());
    let todos = [
        ("completed", "Write the generated fixtures"),
        ("completed", "Start the poller"),
        ("pending", "Regenerate the work files"),
        ("pending", "Audit the subagent's logs"),
        ("pending", "Run the invoice tests"),
    ];
    let background = format!("echo polling; sleep 300 # {token}");
    let generate = format!("mkdir -p gen && for i in $(seq 1 {GEN}); do echo $i > gen/f$i.txt; done # {token}");
    let main_cmd =
        format!("mkdir -p work && for i in $(seq 1 {MAIN_FILES}); do echo m > work/m$i.txt; done; sleep 60 # {token}");
    let sub_cmd =
        format!("mkdir -p sub && for i in $(seq 1 {SUB_FILES}); do echo s > sub/s$i.log; done; sleep 60 # {token}");
    let subagent = "audit the generated logs";
    let mock = MockServer::start(vec![
        // The todo tools of this Claude Code (CLAUDE_CODE_ENABLE_TODO_TOOLS=1): five tasks, two
        // done.
        Turn::tools(todos.iter().map(|(_, c)| ("TaskCreate", json!({"subject": c, "description": c})))),
        Turn::tools([
            ("TaskUpdate", json!({"taskId": "1", "status": "completed"})),
            ("TaskUpdate", json!({"taskId": "2", "status": "completed"})),
        ]),
        Turn::tool("Bash", json!({"command": background, "description": "Poll", "run_in_background": true})),
        Turn::tool("Bash", json!({"command": generate, "description": "Generate"})),
        Turn::tool(
            "Agent",
            json!({"description": subagent, "prompt": format!("{SUB}: write the logs, then wait"),
                   "subagent_type": "general-purpose"}),
        ),
        Turn::tool("Bash", json!({"command": main_cmd, "description": "Work"})),
        Turn::text("unreachable"),
    ]);
    mock.subagent(
        SUB,
        vec![Turn::tool("Bash", json!({"command": sub_cmd, "description": "Sub"})), Turn::text("sub done")],
    );
    let prompt = "Regenerate the work files and audit the logs";
    let running = claude::spawn(p.claude_p(&bin, &mock, prompt));
    let pid = running.pid();
    let last = format!("work/m{MAIN_FILES}.txt");
    let sid = claude::bash_running(&p.sb, pid, (MAIN_CMD, &token, &last), SESSION_TIMEOUT, || {
        p.wait_for_record(Duration::ZERO, |r| r["op"] == "intent" && r["id"] == MAIN_CMD)
            .and_then(|r| r["session"].as_str().map(str::to_string))
    });
    let both = sid.is_some()
        && wait_until(Duration::from_secs(20), || p.sb.project.join(format!("sub/s{SUB_FILES}.log")).exists());
    // The killed commands' files are all on disk before the kill.
    std::thread::sleep(Duration::from_millis(300));
    let mut running = running;
    running.kill9();
    let out = running.wait(Duration::from_secs(10));
    assert!(both, "the two commands never ran at once: {out:?}\n{}\njournal:\n{}", mock.summary(), p.journal_text());
    let sid = sid.unwrap();
    drop(guard);
    wait_gone(&token, p.root());

    let recover = p.walj_json(&["recover", "--json"]);
    let unresolved = recover["unresolved"].as_u64().unwrap() as usize;
    // Claude Code writes an Edit or Write through `<file>.tmp.<pid>.<hex>`: never an entry,
    // even when the crash cut a write off between the two.
    let temps: Vec<&str> = recover["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["entries"].as_array().unwrap())
        .filter_map(|e| e["path"].as_str())
        .filter(|p| p.contains(".tmp."))
        .collect();
    assert!(temps.is_empty(), "Claude Code's temporary files listed as entries: {temps:?}\n{recover:#}");
    println!("unresolved: {unresolved}");
    assert!(unresolved >= GEN + MAIN_FILES + SUB_FILES, "{recover:#}");

    mock.script(vec![Turn::text("Checking.")]);
    let before = mock.main_requests().len();
    let started = Instant::now();
    p.session(p.claude_p(&bin, &mock, "What happened?"), &mock);
    println!("next session: {:?}", started.elapsed());
    let first = &mock.main_requests()[before];
    assert_eq!(first.count(NOTE), 1, "{}", mock.summary());
    let held = anthropic_mock::strings_containing(&first.body, NOTE)[0].to_string();
    // The string holding it goes on with Claude Code's own context: the note ends with its
    // last sentence.
    let from = held.find(NOTE).unwrap();
    let end = "The user can review them with `walj tui`.";
    let to = from + held[from..].find(end).unwrap_or_else(|| panic!("no end: {held}")) + end.len();
    let note = &held[from..to];
    let chars = note.chars().count();
    println!("the note as Claude received it ({chars} chars):\n{note}");
    assert!(chars <= LIMIT, "{chars} chars");
    assert!(!note.contains("more bytes cut"), "cut blind: {note}");
    assert!(note.contains(&sid), "{note}");
    // 100% of each kind.
    let (mut named, mut total) = (0, 0);
    for i in 1..=MAIN_FILES {
        total += 1;
        named += usize::from(note.contains(&format!("- work/m{i}.txt (")));
    }
    for i in 1..=SUB_FILES {
        total += 1;
        named += usize::from(note.contains(&format!("- sub/s{i}.log (")));
    }
    println!("killed commands' changes named: {named} of {total}");
    assert_eq!(named, total, "{note}");
    let cut = |c: &str| c.split(" # ").next().unwrap().to_string();
    for c in [&main_cmd, &sub_cmd] {
        assert!(note.contains(&cut(c)), "killed command {c} missing: {note}");
    }
    assert!(note.contains(&cut(&background)) && note.contains("background command"), "{note}");
    assert!(note.contains(subagent) && note.contains("still running when the session died"), "{note}");
    for (_, t) in todos.iter().filter(|(s, _)| *s != "completed") {
        assert!(note.contains(&format!("] {t}")), "todo {t} missing: {note}");
    }
    for (_, t) in todos.iter().filter(|(s, _)| *s == "completed") {
        assert!(!note.contains(t), "done todo {t} named: {note}");
    }
    assert!(note.contains(prompt), "{note}");
    // The finished command's changes: counted, not listed one by one.
    assert!(note.contains("gen 150") || note.contains(&format!("- gen/f{GEN}.txt (")), "{note}");
    assert!(note.contains(&format!("`walj recover` lists all {unresolved}.")), "{note}");
    // Ordered: what ran before the todos, the todos before the prompt, the rest last.
    let at = |s: &str| note.find(s).unwrap_or_else(|| panic!("{s}: {note}"));
    assert!(at(&cut(&main_cmd)) < at("Open todos"), "{note}");
    assert!(at("Open todos") < at(prompt) && at(prompt) < at("Completed, not yet verified"), "{note}");
    p.assert_hooks_clean();
}
