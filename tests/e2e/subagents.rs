//! Subagents with the real Claude Code CLI (2.1.328 runs the `Agent` tool in the background by
//! default): the scripted model answers the main thread and the subagent (its own API calls,
//! told apart by the Agent call's prompt, [`MockServer::subagent`]) from two scripts, so both
//! run commands at once; then Claude Code is killed (-9) and walj says whose work is whose.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{self, MockServer, Turn};
use crate::support::claude;
use crate::walj::{CONTEXT_PREFIX, NOTE, OrphanGuard, Proj, SESSION_TIMEOUT, entries_of, wait_gone};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// In the Agent call's prompt only: the mock answers requests holding it from the subagent's
/// script.
const SUB: &str = "walj-e2e-subagent-task";

/// The ids the mock gives: the Agent call, the main thread's two commands, the subagent's.
const AGENT_CALL: &str = "toolu_mock_0_0";
const MAIN_WAIT: &str = "toolu_mock_1_0";
const MAIN_CMD: &str = "toolu_mock_2_0";
const SUB_CMD: &str = "toolu_mock_a0_0_0";

/// Waits until `pred` holds (checking every 10 ms), up to `timeout`.
fn wait_until(timeout: Duration, mut pred: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !pred() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// The scenario: main runs `sleep 2`, then `echo m > main.log; sleep 60`; the async
/// subagent runs `echo s > sub.log; sleep 60`; Claude Code is killed (-9) while both long
/// commands run. `sub.log` is the subagent's command's (not the finished `sleep 2`'s, which
/// ran when it was written), `main.log` is listed once, under the main thread's command; both
/// are uncertain (two windows were open) and name the other; the subagent was still running at
/// the death; the next session's note lists the subagent's work under it.
#[test]
fn an_async_subagent_and_the_main_thread_killed_mid_command_each_keep_their_own_work() {
    let test = "an_async_subagent_and_the_main_thread_killed_mid_command_each_keep_their_own_work";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("keep.txt", "k\n")]);
    p.install_walj();
    let token = claude::unique_token("walj-e2e-sub");
    let guard = OrphanGuard(token.clone());
    let main_cmd = format!("echo m > main.log; sleep 60 # {token}");
    let sub_cmd = format!("echo s > sub.log; sleep 60 # {token}");
    let mock = MockServer::start(vec![
        Turn::tool(
            "Agent",
            json!({"description": "write the sub log", "prompt": format!("{SUB}: write sub.log, then wait"),
                   "subagent_type": "general-purpose"}),
        ),
        // The Bash tool refuses a standalone `sleep N`.
        Turn::tool("Bash", json!({"command": format!("echo waiting; sleep 2 # {token}"), "description": "Wait"})),
        Turn::tool("Bash", json!({"command": main_cmd, "description": "Main"})),
        Turn::text("unreachable"),
    ]);
    mock.subagent(
        SUB,
        vec![Turn::tool("Bash", json!({"command": sub_cmd, "description": "Sub"})), Turn::text("sub done")],
    );
    let running = claude::spawn(p.claude_p(&bin, &mock, "Run both"));
    let pid = running.pid();
    // Killed once both long commands run and the main one reached the transcript.
    let sid = claude::bash_running(&p.sb, pid, (MAIN_CMD, &token, "main.log"), SESSION_TIMEOUT, || {
        p.wait_for_record(Duration::ZERO, |r| r["op"] == "intent" && r["id"] == MAIN_CMD)
            .and_then(|r| r["session"].as_str().map(str::to_string))
    });
    let both = sid.is_some()
        && wait_until(Duration::from_secs(10), || {
            p.sb.project.join("sub.log").exists()
                && claude::descendants(pid).iter().filter(|&&d| claude::cmdline(d).contains(&token)).count() >= 2
        });
    let mut running = running;
    running.kill9();
    let out = running.wait(Duration::from_secs(10));
    assert!(both, "the two commands never ran at once: {out:?}\n{}\njournal:\n{}", mock.summary(), p.journal_text());
    let sid = sid.unwrap();
    // The subagent made its own API calls, answered by its own script.
    let sub_reqs = mock.subagent_requests(SUB);
    assert!(!sub_reqs.is_empty() && sub_reqs.iter().all(|r| r.count(SUB) >= 1), "{}", mock.summary());
    assert!(mock.main_thread_requests().iter().all(|r| r.tool_results().len() <= 2), "{}", mock.summary());

    // The journal: the subagent's command carries its agent; the finished `sleep 2` has no
    // child (sub.log was written while it ran, but it is the subagent command's).
    let journal = p.journal();
    let intent = journal.iter().find(|r| r["op"] == "intent" && r["id"] == SUB_CMD).expect("the subagent's intent");
    let agent_id = intent["agent_id"].as_str().expect("agent_id on the subagent's command").to_string();
    assert_eq!(intent["agent_type"], "general-purpose", "{intent}");
    let waited: Vec<&Value> = journal.iter().filter(|r| r["parent"] == MAIN_WAIT).collect();
    assert!(waited.is_empty(), "the finished `sleep 2` claimed {waited:?}");

    drop(guard);
    wait_gone(&token, p.root());
    let recover = p.walj_json(&["recover", "--json"]);
    let all: Vec<&Value> =
        recover["sessions"].as_array().unwrap().iter().flat_map(|s| s["entries"].as_array().unwrap()).collect();
    let paths: Vec<&str> = all.iter().map(|e| e["path"].as_str().unwrap()).collect();
    // Each change once (no two entries for one change), nothing else.
    assert_eq!(paths.iter().filter(|p| **p == "main.log").count(), 1, "{recover:#}");
    assert_eq!(paths.iter().filter(|p| **p == "sub.log").count(), 1, "{recover:#}");
    assert_eq!(paths.len(), 2, "{recover:#}");
    let es = entries_of(&recover, &sid);
    let sub = &es["sub.log"];
    assert_eq!((sub["parent"].as_str(), sub["agent_id"].as_str()), (Some(SUB_CMD), Some(agent_id.as_str())), "{sub}");
    assert_eq!(sub["after"], json!(p.hash_object("sub.log")), "{sub}");
    let main = &es["main.log"];
    assert_eq!(main["parent"], MAIN_CMD, "{main}");
    assert!(main.get("agent_id").is_none(), "{main}");
    // Two windows were open at each: never certain, the other named.
    assert_eq!((&sub["attribution"], &sub["candidates"]), (&json!("uncertain"), &json!([MAIN_WAIT])), "{sub}");
    assert_eq!((&main["attribution"], &main["candidates"]), (&json!("uncertain"), &json!([SUB_CMD])), "{main}");
    // The subagent: launched by the Agent call, still running when the session died.
    let subs = recover["sessions"][0]["subagents"].as_array().unwrap();
    assert_eq!(subs.len(), 1, "{recover:#}");
    assert_eq!((&subs[0]["call"], &subs[0]["agent_id"]), (&json!(AGENT_CALL), &json!(agent_id)), "{recover:#}");
    assert_eq!((&subs[0]["background"], &subs[0]["running_at_death"]), (&json!(true), &json!(true)), "{recover:#}");
    // A subagent's killed foreground command is not a background process.
    assert!(recover["sessions"][0]["background"].as_array().is_none_or(Vec::is_empty), "{recover:#}");
    let (_, text, _) = p.walj(&["recover"]);
    println!("walj recover:\n{text}");
    assert!(text.contains("\"write the sub log\", in the background: still running when the session died"), "{text}");

    // The next session: the note lists main.log as the main thread's, sub.log under the
    // subagent's heading.
    mock.script(vec![Turn::text("Checking.")]);
    let before = mock.main_requests().len();
    p.session(p.claude_p(&bin, &mock, "What happened?"), &mock);
    let first = &mock.main_requests()[before];
    assert_eq!(first.count(NOTE), 1, "{}", mock.summary());
    let note = anthropic_mock::strings_containing(&first.body, NOTE)[0].to_string();
    println!("the note:\n{}", &note[note.find(NOTE).unwrap()..]);
    assert!(note.starts_with(CONTEXT_PREFIX), "{note}");
    let heading = note
        .find(
            "subagent general-purpose \"write the sub log\", in the background: still running when the session died:\n",
        )
        .unwrap_or_else(|| panic!("no subagent heading: {note}"));
    let main_at = note.find("- main.log (").unwrap_or_else(|| panic!("main.log not in the note: {note}"));
    let sub_at = note.find("  - sub.log (").unwrap_or_else(|| panic!("sub.log not under the subagent: {note}"));
    assert!(main_at < heading && heading < sub_at, "{note}");
    assert_eq!((note.matches("main.log (").count(), note.matches("sub.log (").count()), (1, 1), "{note}");
}

/// The loop beside a subagent's sleep (seen with the real CLI, 3 of 3 runs): the async
/// subagent runs `echo s > sub.txt; sleep 90`, opened first; the main thread runs `sleep 2`,
/// then a loop writing `out/o1.txt`…`out/o3.txt` and sleeping; Claude Code is killed (-9) with
/// both running. The loop's line names a pattern matching its files: they are its, never "by
/// subagent"; each command keeps its own, and the other is named by its command line.
#[test]
fn a_subagents_sleep_never_takes_the_main_threads_loop_files() {
    let test = "a_subagents_sleep_never_takes_the_main_threads_loop_files";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("keep.txt", "k\n")]);
    p.install_walj();
    let token = claude::unique_token("walj-e2e-loop");
    let guard = OrphanGuard(token.clone());
    let main_cmd = format!("mkdir -p out; for i in 1 2 3; do echo $i > out/o$i.txt; done; sleep 60 # {token}");
    let sub_cmd = format!("echo s > sub.txt; sleep 90 # {token}");
    let mock = MockServer::start(vec![
        Turn::tool(
            "Agent",
            json!({"description": "write the sub file", "prompt": format!("{SUB}: write sub.txt, then wait"),
                   "subagent_type": "general-purpose"}),
        ),
        Turn::tool("Bash", json!({"command": format!("echo waiting; sleep 2 # {token}"), "description": "Wait"})),
        Turn::tool("Bash", json!({"command": main_cmd, "description": "Main"})),
        Turn::text("unreachable"),
    ]);
    mock.subagent(
        SUB,
        vec![Turn::tool("Bash", json!({"command": sub_cmd, "description": "Sub"})), Turn::text("sub done")],
    );
    let running = claude::spawn(p.claude_p(&bin, &mock, "Run both"));
    let pid = running.pid();
    let sid = claude::bash_running(&p.sb, pid, (MAIN_CMD, &token, "out/o3.txt"), SESSION_TIMEOUT, || {
        p.wait_for_record(Duration::ZERO, |r| r["op"] == "intent" && r["id"] == MAIN_CMD)
            .and_then(|r| r["session"].as_str().map(str::to_string))
    });
    let both = sid.is_some()
        && wait_until(Duration::from_secs(10), || {
            p.sb.project.join("sub.txt").exists()
                && p.sb.project.join("out/o3.txt").exists()
                && claude::descendants(pid).iter().filter(|&&d| claude::cmdline(d).contains(&token)).count() >= 2
        });
    let mut running = running;
    running.kill9();
    let out = running.wait(Duration::from_secs(10));
    assert!(both, "the two commands never ran at once: {out:?}\n{}\njournal:\n{}", mock.summary(), p.journal_text());
    let sid = sid.unwrap();
    drop(guard);
    wait_gone(&token, p.root());
    let recover = p.walj_json(&["recover", "--json"]);
    let es = entries_of(&recover, &sid);
    for f in ["out/o1.txt", "out/o2.txt", "out/o3.txt"] {
        let e = &es[f];
        assert_eq!(e["parent"], MAIN_CMD, "{f}: {recover:#}");
        assert!(e.get("agent_id").is_none(), "{f} credited to the subagent: {recover:#}");
        assert_ne!(e["attribution"], "undecided", "{f}: {recover:#}");
    }
    assert_eq!(es["sub.txt"]["parent"], SUB_CMD, "{recover:#}");
    let (_, text, _) = p.walj(&["recover"]);
    println!("walj recover:\n{text}");
    for line in text.lines().filter(|l| l.contains("out/o")) {
        assert!(!line.contains("by subagent"), "{line}\n{text}");
        assert!(!line.contains("toolu_"), "a candidate named by its id: {line}\n{text}");
    }
}
