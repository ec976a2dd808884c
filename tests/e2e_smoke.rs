//! Smoke tests of the end-to-end infrastructure: the real Claude Code CLI (pinned, installed by
//! `scripts/claude-code.sh`) driven offline by the scripted stand-in model server. They do not
//! involve walj itself; they prove that tools run, hooks fire and hook output reaches the model.
//!
//! Skipped (with a `SKIPPED:` line) when the CLI cannot be installed.

mod support;

use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::anthropic_mock::{Kind, MockServer, Turn};
use support::claude::{self, Sandbox};

const SESSION_TIMEOUT: Duration = Duration::from_secs(180);

/// Write a file, Edit it, Bash `echo hi > out.txt`, then end the turn.
fn write_edit_bash_script(sb: &Sandbox) -> Vec<Turn> {
    let notes = sb.project.join("notes.txt");
    vec![
        Turn::tool("Write", json!({"file_path": notes, "content": "hello\n"}))
            .with_text("Writing the notes."),
        Turn::tool(
            "Edit",
            json!({"file_path": notes, "old_string": "hello", "new_string": "hello world", "replace_all": false}),
        ),
        Turn::tool(
            "Bash",
            json!({"command": "echo hi > out.txt", "description": "Write out.txt"}),
        ),
        Turn::text("All done."),
    ]
}

fn assert_files_as_scripted(sb: &Sandbox, mock: &MockServer, out: &claude::Output) {
    let ctx = || {
        format!(
            "claude: {:?} after {:?}\nstdout: {}\nstderr: {}\nrequests:\n{}",
            out.status,
            out.elapsed,
            out.stdout,
            out.stderr,
            mock.summary()
        )
    };
    assert!(!out.timed_out, "claude timed out\n{}", ctx());
    assert!(out.status.success(), "claude failed\n{}", ctx());
    assert_eq!(
        sb.read("notes.txt").as_deref(),
        Some("hello world\n"),
        "{}",
        ctx()
    );
    assert_eq!(sb.read("out.txt").as_deref(), Some("hi\n"), "{}", ctx());

    let result = out.json();
    assert_eq!(result["is_error"], false, "{}", ctx());
    assert_eq!(result["result"], "All done.", "{}", ctx());

    // Every scripted turn was requested, and the last request carried the three results.
    for turn in 0..4 {
        assert!(
            mock.wait_for_turn(turn, Duration::ZERO),
            "turn {turn} never requested\n{}",
            ctx()
        );
    }
    let main = mock.main_requests();
    let last = main.last().expect("a main request");
    let results = last.tool_results();
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["tool_use_id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        ids,
        ["toolu_mock_0_0", "toolu_mock_1_0", "toolu_mock_2_0"],
        "{}",
        ctx()
    );
    for r in &results {
        assert_ne!(r["is_error"], true, "a tool failed: {r}\n{}", ctx());
    }
}

#[test]
fn scripted_session_runs_real_tools() {
    let Some(bin) = claude::claude_or_skip("scripted_session_runs_real_tools") else {
        return;
    };
    let sb = Sandbox::new();
    sb.write("README.md", "# demo\n");
    sb.commit("initial");
    let mock = MockServer::start(write_edit_bash_script(&sb));
    mock.log_to_file(&sb.dir.path().join("requests.jsonl"))
        .unwrap();

    let started = Instant::now();
    let out = claude::run(
        sb.claude_p(&bin, &mock, "Write notes, edit them, run echo"),
        SESSION_TIMEOUT,
    );
    println!(
        "claude -p session took {:?}\nrequests:\n{}",
        started.elapsed(),
        mock.summary()
    );
    assert_files_as_scripted(&sb, &mock, &out);

    // Side requests never advanced the script, and all requests were understood.
    let all = mock.all_requests();
    assert!(
        all.iter().all(|r| r.kind != Kind::Other),
        "{}",
        mock.summary()
    );
    assert!(
        all.iter()
            .filter(|r| r.is_main())
            .all(|r| r.path.starts_with("/v1/messages"))
    );

    // The transcript exists where CLAUDE-CODE.md says.
    let session_id = out.json()["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        sb.transcript(&session_id).is_file(),
        "no transcript at {}",
        sb.transcript(&session_id).display()
    );
}

#[test]
fn hooks_fire_and_session_start_context_reaches_the_model() {
    let Some(bin) =
        claude::claude_or_skip("hooks_fire_and_session_start_context_reaches_the_model")
    else {
        return;
    };
    let sb = Sandbox::new();
    sb.write("README.md", "# demo\n");
    sb.commit("initial");
    let payload_dir = sb.dir.path().join("payloads");
    fs::create_dir_all(&payload_dir).unwrap();

    // Every event saves its payload; SessionStart also hands context to the model.
    let save = claude::saver_command(&payload_dir);
    let mut settings = claude::hooks_for_all_events(&save);
    let context = json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "MARKER-123"}});
    let session_start = format!(
        "{save}; printf '%s\\n' {}",
        claude::sh_quote(context.to_string())
    );
    settings["hooks"]["SessionStart"] =
        json!([{"hooks": [{"type": "command", "command": session_start}]}]);
    sb.settings(&settings);

    let mock = MockServer::start(write_edit_bash_script(&sb));
    mock.log_to_file(&sb.dir.path().join("requests.jsonl"))
        .unwrap();
    let out = claude::run(
        sb.claude_p(&bin, &mock, "Write notes, edit them, run echo"),
        SESSION_TIMEOUT,
    );
    println!("claude -p session with hooks took {:?}", out.elapsed);
    assert_files_as_scripted(&sb, &mock, &out);

    // SessionEnd may still be running when claude exits.
    claude::wait_for_payload(&payload_dir, Duration::from_secs(5), |p| {
        p["hook_event_name"] == "SessionEnd"
    });
    let payloads = claude::payloads(&payload_dir);
    let events = claude::events(&payloads);
    println!("hook events: {events:?}");
    let has = |e: &str, t: &str| events.iter().any(|(ev, tool)| ev == e && tool == t);
    for (e, t) in [
        ("SessionStart", ""),
        ("UserPromptSubmit", ""),
        ("PreToolUse", "Write"),
        ("PostToolUse", "Write"),
        ("PreToolUse", "Edit"),
        ("PostToolUse", "Edit"),
        ("PreToolUse", "Bash"),
        ("PostToolUse", "Bash"),
        ("Stop", ""),
    ] {
        assert!(has(e, t), "no {e} {t} payload; got {events:?}");
    }
    let session_id = out.json()["session_id"].as_str().unwrap().to_string();
    for p in &payloads {
        assert_eq!(p["session_id"], session_id.as_str(), "{p}");
        assert_eq!(p["cwd"], sb.project.to_str().unwrap(), "{p}");
    }
    let pre_bash = payloads
        .iter()
        .find(|p| p["hook_event_name"] == "PreToolUse" && p["tool_name"] == "Bash")
        .unwrap();
    assert_eq!(pre_bash["tool_input"]["command"], "echo hi > out.txt");
    assert_eq!(pre_bash["tool_use_id"], "toolu_mock_2_0");

    // The SessionStart context is in the first main request, exactly once, and in every later
    // one (it is part of the conversation).
    let main = mock.main_requests();
    let first = &main[0];
    let holders = support::anthropic_mock::strings_containing(&first.body, "MARKER-123");
    println!("MARKER-123 found in: {holders:?}");
    assert_eq!(first.count("MARKER-123"), 1, "{holders:?}");
    assert!(
        holders[0].contains("SessionStart hook additional context"),
        "{holders:?}"
    );
    assert!(main.iter().all(|r| r.count("MARKER-123") == 1));
    let side_with_marker = mock
        .all_requests()
        .iter()
        .filter(|r| r.kind == Kind::Side && r.count("MARKER-123") > 0)
        .count();
    println!("side requests carrying the marker: {side_with_marker}");
}

/// A project with `config/settings.json`, hooks saving every payload, and a session that
/// Edits the settings then runs a long Bash command during which claude is killed (-9).
struct Crashed {
    sb: Sandbox,
    mock: MockServer,
    payload_dir: PathBuf,
    crash: claude::Crash,
    /// Live processes left by the Bash call (already killed by the time the caller sees them).
    orphans: Vec<String>,
}

fn crash_mid_bash(bin: &Path) -> Crashed {
    let sb = Sandbox::new();
    sb.write("config/settings.json", "{\n  \"retries\": 3\n}\n");
    sb.commit("initial");
    let payload_dir = sb.dir.path().join("payloads");
    fs::create_dir_all(&payload_dir).unwrap();
    sb.settings(&claude::hooks_for_all_events(&claude::saver_command(
        &payload_dir,
    )));

    // A unique token marks the Bash child, to find (and clean up) the orphan.
    let token = claude::unique_token("walj-e2e-orphan");
    let settings = sb.project.join("config/settings.json");
    let mock = MockServer::start(vec![
        Turn::tool(
            "Edit",
            json!({"file_path": settings, "old_string": "\"retries\": 3", "new_string": "\"retries\": 5", "replace_all": false}),
        ),
        Turn::tool(
            "Bash",
            json!({"command": format!("echo started > run.log; sleep 60 # {token}"), "description": "Long build"}),
        ),
        Turn::text("unreachable"),
    ]);
    let running = claude::spawn(sb.claude_p(bin, &mock, "Raise retries, then build"));
    let crash = claude::kill9_at_payload(running, &sb, &payload_dir, SESSION_TIMEOUT, |p| {
        p["hook_event_name"] == "PreToolUse" && p["tool_name"] == "Bash"
    });
    // The Bash tool starts its child right after the hook returned; the kill may beat it.
    wait_until(Duration::from_secs(2), || {
        !claude::pids_mentioning(&token).is_empty()
    });
    let pids = claude::pids_mentioning(&token);
    let orphans = pids
        .iter()
        .map(|pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).replace('\0', " ")
        })
        .collect();
    claude::kill9_tree(&pids);
    let crash = crash.unwrap_or_else(|e| panic!("{e}\n{}", mock.summary()));
    Crashed {
        sb,
        mock,
        payload_dir,
        crash,
        orphans,
    }
}

#[test]
fn kill_9_mid_bash_leaves_an_orphan_and_no_post_event() {
    let Some(bin) = claude::claude_or_skip("kill_9_mid_bash_leaves_an_orphan_and_no_post_event")
    else {
        return;
    };
    let c = crash_mid_bash(&bin);
    println!("orphans: {:?}", c.orphans);
    assert!(
        !c.crash.output.status.success(),
        "claude was not killed: {:?}",
        c.crash.output
    );
    assert!(
        !c.orphans.is_empty(),
        "the Bash child did not survive the kill"
    );
    assert_eq!(
        c.sb.read("config/settings.json").unwrap(),
        "{\n  \"retries\": 5\n}\n"
    );
    thread_sleep_ms(300);
    let events = claude::events(&claude::payloads(&c.payload_dir));
    println!("hook events: {events:?}");
    let last = events.last().unwrap();
    assert_eq!((last.0.as_str(), last.1.as_str()), ("PreToolUse", "Bash"));
    assert!(!events.iter().any(|(e, _)| e == "Stop" || e == "SessionEnd"));

    // The transcript ends with the Bash tool_use and no tool_result for it.
    assert!(
        c.crash.in_transcript,
        "the Bash tool_use never reached the transcript"
    );
    let transcript = fs::read_to_string(c.sb.transcript(&c.crash.session_id)).unwrap();
    let lines: Vec<Value> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let has_block = |l: &Value, f: &dyn Fn(&Value) -> bool| {
        l["message"]["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(f))
    };
    assert!(
        lines
            .iter()
            .any(|l| has_block(l, &|b| b["type"] == "tool_use"
                && b["id"] == "toolu_mock_1_0"))
    );
    assert!(
        !lines
            .iter()
            .any(|l| has_block(l, &|b| b["tool_use_id"] == "toolu_mock_1_0"))
    );
}

#[test]
fn resume_after_kill_9() {
    let Some(bin) = claude::claude_or_skip("resume_after_kill_9") else {
        return;
    };
    let c = crash_mid_bash(&bin);
    let before = claude::payloads(&c.payload_dir).len();

    // A new script for the resumed session: it starts at the next main request, whatever the
    // number of tool results the resumed conversation carries.
    c.mock.script(vec![Turn::text("Resumed.")]);
    let mut cmd = c.sb.claude_p(&bin, &c.mock, "Go on");
    cmd.args(["--resume", &c.crash.session_id]);
    let out = claude::run(cmd, SESSION_TIMEOUT);
    println!(
        "resumed session took {:?}\n{}",
        out.elapsed,
        c.mock.summary()
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.json()["result"], "Resumed.", "{out:?}");

    let main = c.mock.main_requests();
    let resumed = main.last().unwrap();
    let results: Vec<String> = resumed
        .tool_results()
        .iter()
        .map(|r| r.to_string())
        .collect();
    println!("tool results in the resumed request: {results:#?}");
    // Claude Code 2.1.328 answers the interrupted call itself, with an error result.
    let interrupted = resumed
        .tool_results()
        .into_iter()
        .find(|r| r["tool_use_id"] == "toolu_mock_1_0")
        .cloned()
        .expect("a tool_result for the interrupted Bash call");
    assert_eq!(interrupted["is_error"], true, "{interrupted}");
    assert_eq!(out.json()["session_id"], c.crash.session_id.as_str());
    let payloads = claude::payloads(&c.payload_dir);
    let new_events = claude::events(&payloads[before..]);
    println!("hook events of the resumed session: {new_events:?}");
    let start = payloads[before..]
        .iter()
        .find(|p| p["hook_event_name"] == "SessionStart")
        .expect("SessionStart on resume");
    println!("SessionStart on resume: {start}");
    assert_eq!(start["source"], "resume");
    println!(
        "resumed session id: {} (crashed: {})",
        out.json()["session_id"],
        c.crash.session_id
    );
}

fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        thread_sleep_ms(20);
    }
    f()
}

fn thread_sleep_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}
