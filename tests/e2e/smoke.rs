//! Smoke tests of the end-to-end infrastructure: the real Claude Code CLI (pinned, installed by
//! `scripts/claude-code.sh`) driven offline by the scripted stand-in model server. They do not
//! involve walj itself; they prove that tools run, hooks fire and hook output reaches the model.
//!
//! Skipped (with a `SKIPPED:` line) when the CLI cannot be installed.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{Kind, MockServer, Turn};
use crate::support::claude::{self, Sandbox};
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SESSION_TIMEOUT: Duration = Duration::from_secs(180);

/// Write a file, Edit it, Bash `echo hi > out.txt`, then end the turn.
fn write_edit_bash_script(sb: &Sandbox) -> Vec<Turn> {
    let notes = sb.project.join("notes.txt");
    vec![
        Turn::tool("Write", json!({"file_path": notes, "content": "hello\n"})).with_text("Writing the notes."),
        Turn::tool(
            "Edit",
            json!({"file_path": notes, "old_string": "hello", "new_string": "hello world", "replace_all": false}),
        ),
        Turn::tool("Bash", json!({"command": "echo hi > out.txt", "description": "Write out.txt"})),
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
    assert_eq!(sb.read("notes.txt").as_deref(), Some("hello world\n"), "{}", ctx());
    assert_eq!(sb.read("out.txt").as_deref(), Some("hi\n"), "{}", ctx());

    let result = out.json();
    assert_eq!(result["is_error"], false, "{}", ctx());
    assert_eq!(result["result"], "All done.", "{}", ctx());

    // Every scripted turn was requested, and the last request carried the three results.
    for turn in 0..4 {
        assert!(mock.wait_for_turn(turn, Duration::ZERO), "turn {turn} never requested\n{}", ctx());
    }
    let main = mock.main_requests();
    let last = main.last().expect("a main request");
    let results = last.tool_results();
    let ids: Vec<&str> = results.iter().map(|r| r["tool_use_id"].as_str().unwrap_or("")).collect();
    assert_eq!(ids, ["toolu_mock_0_0", "toolu_mock_1_0", "toolu_mock_2_0"], "{}", ctx());
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
    mock.log_to_file(&sb.dir.path().join("requests.jsonl")).unwrap();

    let started = Instant::now();
    let out = claude::run(sb.claude_p(&bin, &mock, "Write notes, edit them, run echo"), SESSION_TIMEOUT);
    println!("claude -p session took {:?}\nrequests:\n{}", started.elapsed(), mock.summary());
    assert_files_as_scripted(&sb, &mock, &out);

    // Side requests never advanced the script, and all requests were understood.
    let all = mock.all_requests();
    assert!(all.iter().all(|r| r.kind != Kind::Other), "{}", mock.summary());
    assert!(all.iter().filter(|r| r.is_main()).all(|r| r.path.starts_with("/v1/messages")));

    // The transcript exists where CLAUDE-CODE.md says.
    let session_id = out.json()["session_id"].as_str().unwrap_or_default().to_string();
    assert!(sb.transcript(&session_id).is_file(), "no transcript at {}", sb.transcript(&session_id).display());
}

#[test]
fn hooks_fire_and_session_start_context_reaches_the_model() {
    let Some(bin) = claude::claude_or_skip("hooks_fire_and_session_start_context_reaches_the_model") else {
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
    let session_start = format!("{save}; printf '%s\\n' {}", claude::sh_quote(context.to_string()));
    settings["hooks"]["SessionStart"] = json!([{"hooks": [{"type": "command", "command": session_start}]}]);
    sb.settings(&settings);

    let mock = MockServer::start(write_edit_bash_script(&sb));
    mock.log_to_file(&sb.dir.path().join("requests.jsonl")).unwrap();
    let out = claude::run(sb.claude_p(&bin, &mock, "Write notes, edit them, run echo"), SESSION_TIMEOUT);
    println!("claude -p session with hooks took {:?}", out.elapsed);
    assert_files_as_scripted(&sb, &mock, &out);

    // SessionEnd may still be running when claude exits.
    claude::wait_for_payload(&payload_dir, Duration::from_secs(5), |p| p["hook_event_name"] == "SessionEnd");
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
    let pre_bash = payloads.iter().find(|p| p["hook_event_name"] == "PreToolUse" && p["tool_name"] == "Bash").unwrap();
    assert_eq!(pre_bash["tool_input"]["command"], "echo hi > out.txt");
    assert_eq!(pre_bash["tool_use_id"], "toolu_mock_2_0");

    // The SessionStart context is in the first main request, exactly once, and in every later
    // one (it is part of the conversation).
    let main = mock.main_requests();
    let first = &main[0];
    let holders = crate::support::anthropic_mock::strings_containing(&first.body, "MARKER-123");
    println!("MARKER-123 found in: {holders:?}");
    assert_eq!(first.count("MARKER-123"), 1, "{holders:?}");
    assert!(holders[0].contains("SessionStart hook additional context"), "{holders:?}");
    assert!(main.iter().all(|r| r.count("MARKER-123") == 1));
    let side_with_marker =
        mock.all_requests().iter().filter(|r| r.kind == Kind::Side && r.count("MARKER-123") > 0).count();
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
    sb.settings(&claude::hooks_for_all_events(&claude::saver_command(&payload_dir)));

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
    let pids = claude::pids_mentioning(&token);
    let orphans = pids.iter().map(|&pid| claude::cmdline(pid)).collect();
    claude::kill9_tree(&pids);
    let crash = crash.unwrap_or_else(|e| panic!("{e}\n{}", mock.summary()));
    Crashed { sb, mock, payload_dir, crash, orphans }
}

#[test]
fn kill_9_mid_bash_leaves_an_orphan_and_no_post_event() {
    let Some(bin) = claude::claude_or_skip("kill_9_mid_bash_leaves_an_orphan_and_no_post_event") else {
        return;
    };
    let c = crash_mid_bash(&bin);
    println!("orphans: {:?}", c.orphans);
    assert!(c.crash.bash_started, "killed before the Bash command started");
    assert!(!c.crash.output.status.success(), "claude was not killed: {:?}", c.crash.output);
    assert!(!c.orphans.is_empty(), "the Bash child did not survive the kill");
    assert_eq!(c.sb.read("config/settings.json").unwrap(), "{\n  \"retries\": 5\n}\n");
    thread_sleep_ms(300);
    let events = claude::events(&claude::payloads(&c.payload_dir));
    println!("hook events: {events:?}");
    let last = events.last().unwrap();
    assert_eq!((last.0.as_str(), last.1.as_str()), ("PreToolUse", "Bash"));
    assert!(!events.iter().any(|(e, _)| e == "Stop" || e == "SessionEnd"));

    // The transcript ends with the Bash tool_use and no tool_result for it.
    assert!(c.crash.in_transcript, "the Bash tool_use never reached the transcript");
    let transcript = fs::read_to_string(c.sb.transcript(&c.crash.session_id)).unwrap();
    let lines: Vec<Value> = transcript.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let has_block =
        |l: &Value, f: &dyn Fn(&Value) -> bool| l["message"]["content"].as_array().is_some_and(|c| c.iter().any(f));
    assert!(lines.iter().any(|l| has_block(l, &|b| b["type"] == "tool_use" && b["id"] == "toolu_mock_1_0")));
    assert!(!lines.iter().any(|l| has_block(l, &|b| b["tool_use_id"] == "toolu_mock_1_0")));
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
    println!("resumed session took {:?}\n{}", out.elapsed, c.mock.summary());
    assert!(out.status.success(), "{out:?}");
    assert_eq!(out.json()["result"], "Resumed.", "{out:?}");

    let main = c.mock.main_requests();
    let resumed = main.last().unwrap();
    let results: Vec<String> = resumed.tool_results().iter().map(|r| r.to_string()).collect();
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
    let start =
        payloads[before..].iter().find(|p| p["hook_event_name"] == "SessionStart").expect("SessionStart on resume");
    println!("SessionStart on resume: {start}");
    assert_eq!(start["source"], "resume");
    println!("resumed session id: {} (crashed: {})", out.json()["session_id"], c.crash.session_id);
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

// ---------------------------------------------------------------------------------------------
// Fixture recording (`scripts/record-fixtures.sh`): not a test, run on demand with
// `WALJ_FIXTURES_OUT=<dir> cargo test --test e2e -- --ignored --exact smoke::record_fixtures`.

/// Records the hook payloads, transcript and model requests of two scripted sessions of the
/// real client into `$WALJ_FIXTURES_OUT/real-<version>-{clean,killed-mid-bash}/`.
#[test]
#[ignore = "records fixtures; run through scripts/record-fixtures.sh"]
fn record_fixtures() {
    let Some(bin) = claude::claude_or_skip("record_fixtures") else {
        panic!("record_fixtures: the real Claude Code CLI is not available");
    };
    let out_root =
        PathBuf::from(std::env::var_os("WALJ_FIXTURES_OUT").expect("set WALJ_FIXTURES_OUT to the output folder"));
    let version_out = claude::run(
        {
            let mut c = std::process::Command::new(&bin);
            c.arg("--version").stdout(std::process::Stdio::piped());
            c
        },
        Duration::from_secs(30),
    );
    let version = version_out.stdout.split_whitespace().next().expect("claude --version").to_string();

    for scenario in ["clean", "killed-mid-bash"] {
        let dir = out_root.join(format!("real-{version}-{scenario}"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("hooks")).unwrap();
        record_scenario(&bin, &version, scenario, &dir);
        println!("recorded {}", dir.display());
    }
}

fn record_scenario(bin: &Path, version: &str, scenario: &str, dir: &Path) {
    let sb = Sandbox::new();
    let initial = [
        ("config/settings.json", "{\n  \"retries\": 3\n}\n"),
        ("src/main.rs", "fn main() {\n    println!(\"shop\");\n}\n"),
    ];
    for (path, content) in initial {
        sb.write(path, content);
    }
    sb.commit("initial");
    let payload_dir = sb.dir.path().join("payloads");
    fs::create_dir_all(&payload_dir).unwrap();
    let mut settings = claude::hooks_for_all_events(&claude::saver_command(&payload_dir));
    // A denied command, to record what a permission denial looks like.
    settings["permissions"] = json!({"deny": ["Bash(curl:*)"]});
    sb.settings(&settings);
    let p = |rel: &str| sb.project.join(rel);
    let edit_settings = Turn::tool(
        "Edit",
        json!({"file_path": p("config/settings.json"), "old_string": "\"retries\": 3",
               "new_string": "\"retries\": 5", "replace_all": false}),
    )
    .with_text("Updating the retries.");

    let (prompt, turns) = if scenario == "clean" {
        (
            "Raise retries, add a server module, build",
            vec![
                // Todo tools (TaskCreate/TaskUpdate; needs CLAUDE_CODE_ENABLE_TODO_TOOLS=1).
                Turn::tools([
                    ("TaskCreate", json!({"subject": "Raise retries", "description": "retries 3 -> 5"})),
                    ("TaskCreate", json!({"subject": "Regenerate docs", "description": "docs/index.md"})),
                ]),
                edit_settings,
                // Parallel tool calls: a Write and an Edit in one assistant turn.
                Turn::tools([
                    ("Write", json!({"file_path": p("src/server.rs"), "content": "pub fn serve() {}\n"})),
                    (
                        "Edit",
                        json!({"file_path": p("src/main.rs"), "old_string": "fn main() {",
                               "new_string": "mod server;\n\nfn main() {", "replace_all": false}),
                    ),
                ]),
                // A failing command (PostToolUseFailure), then a working one.
                Turn::tool("Bash", json!({"command": "echo checking > check.log; exit 3", "description": "Check"})),
                Turn::tool("Bash", json!({"command": "echo built > build.log", "description": "Build"})),
                Turn::tool("TaskUpdate", json!({"taskId": "1", "status": "completed"})),
                // Denied by the project's permissions: PreToolUse fires, no Post event.
                Turn::tool("Bash", json!({"command": "curl -s http://127.0.0.1:9/deploy", "description": "Deploy"})),
                Turn::text("Done: retries raised, server added, build run."),
            ],
        )
    } else {
        (
            "Raise retries, add server, build",
            vec![
                edit_settings,
                Turn::tool("Write", json!({"file_path": p("src/server.rs"), "content": "pub fn serve() {}\n"})),
                Turn::tool("Bash", json!({"command": "echo started > run.log; sleep 60", "description": "Long build"})),
                Turn::text("unreachable"),
            ],
        )
    };
    let script_desc: Vec<Value> = turns.iter().map(turn_json).collect();
    let mock = MockServer::start(turns);
    mock.log_to_file(&sb.dir.path().join("requests.jsonl")).unwrap();

    let mut cmd = sb.claude_p(bin, &mock, prompt);
    cmd.env("CLAUDE_CODE_ENABLE_TODO_TOOLS", "1");
    let running = claude::spawn(cmd);
    let (session_id, exit, orphans) = if scenario == "clean" {
        let out = running.wait(SESSION_TIMEOUT);
        assert!(out.status.success(), "{out:?}\n{}", mock.summary());
        // SessionEnd hooks may finish after claude.
        claude::wait_for_payload(&payload_dir, Duration::from_secs(5), |p| p["hook_event_name"] == "SessionEnd");
        let sid = out.json()["session_id"].as_str().unwrap().to_string();
        (sid, format!("{}", out.status), vec![])
    } else {
        let pid = running.pid();
        // Kill once the Bash command's `sleep` runs (and the tool_use is in the transcript).
        let is_pre_bash = |p: &Value| p["hook_event_name"] == "PreToolUse" && p["tool_name"] == "Bash";
        claude::wait_for_payload(&payload_dir, SESSION_TIMEOUT, is_pre_bash);
        wait_until(Duration::from_secs(10), || {
            claude::descendants(pid).iter().any(|&d| claude::cmdline(d).starts_with("sleep 60"))
        });
        let crash = claude::kill9_at_payload(running, &sb, &payload_dir, SESSION_TIMEOUT, is_pre_bash)
            .unwrap_or_else(|e| panic!("{e}\n{}", mock.summary()));
        thread_sleep_ms(500);
        let alive: Vec<(u32, String)> =
            crash.descendants.iter().filter(|(p, _)| !claude::cmdline(*p).is_empty()).cloned().collect();
        claude::kill9_tree(&alive.iter().map(|(p, _)| *p).collect::<Vec<_>>());
        assert!(crash.in_transcript, "the Bash tool_use never reached the transcript");
        assert!(crash.bash_started, "killed before the Bash command started");
        let orphans: Vec<String> = alive.into_iter().map(|(_, c)| c).collect();
        (crash.session_id, format!("{}", crash.output.status), orphans)
    };

    let project = sb.project.to_string_lossy().into_owned();
    let home = sb.home.to_string_lossy().into_owned();
    let project_key: String = project.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let tmp = sb.tmp.to_string_lossy().into_owned();
    let root = sb.dir.path().canonicalize().unwrap().to_string_lossy().into_owned();
    let scrub = |s: &str| {
        s.replace(&project, "${PROJECT}")
            .replace(&home, "${HOME}")
            .replace(&tmp, "${TMPDIR}")
            .replace(&project_key, "${PROJECT_KEY}")
            .replace(&root, "${SANDBOX}")
    };

    // Hook payloads, in the order the hooks started: NN-Event[-Tool].json, verbatim but scrubbed.
    let mut events = Vec::new();
    for (i, f) in claude::payload_files(&payload_dir).iter().enumerate() {
        let raw = fs::read_to_string(f).unwrap();
        let v: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
        let event = v["hook_event_name"].as_str().unwrap_or("unparsed");
        let name = match v["tool_name"].as_str() {
            Some(t) => format!("{:02}-{event}-{t}.json", i + 1),
            None => format!("{:02}-{event}.json", i + 1),
        };
        fs::write(dir.join("hooks").join(&name), scrub(raw.trim_end()) + "\n").unwrap();
        events.push(name);
    }

    // The transcript: scrubbed; long strings elided in bulky bookkeeping lines.
    let transcript = fs::read_to_string(sb.transcript(&session_id)).unwrap();
    let mut lines = Vec::new();
    for line in transcript.lines() {
        let mut v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => {
                lines.push(scrub(line));
                continue;
            }
        };
        let bulky =
            matches!(v["type"].as_str(), Some("attachment" | "api-request" | "api-request-blob" | "api-request-shape"));
        if bulky {
            elide_long_strings(&mut v, 300);
            lines.push(scrub(&v.to_string()));
        } else {
            lines.push(scrub(line));
        }
    }
    fs::write(dir.join("transcript.jsonl"), lines.join("\n") + "\n").unwrap();

    // The model requests (method, path, kind, body), scrubbed and with long strings elided.
    let mut reqs = Vec::new();
    for r in mock.all_requests() {
        let mut body = r.body.clone();
        elide_long_strings(&mut body, 300);
        let line = json!({"seq": r.seq, "method": r.method, "path": r.path,
                          "kind": format!("{:?}", r.kind), "body": body});
        reqs.push(scrub(&line.to_string()));
    }
    fs::write(dir.join("model-requests.jsonl"), reqs.join("\n") + "\n").unwrap();

    let files_after: serde_json::Map<String, Value> =
        ["config/settings.json", "src/main.rs", "src/server.rs", "check.log", "build.log", "run.log"]
            .iter()
            .filter_map(|rel| sb.read(rel).map(|c| (rel.to_string(), json!(c))))
            .collect();
    let meta = json!({
        "claude_code_version": version,
        "scenario": scenario,
        "prompt": prompt,
        "command": "CLAUDE_CODE_ENABLE_TODO_TOOLS=1 claude -p <prompt> --output-format json --permission-mode acceptEdits --allowedTools \"Edit Write Bash\"",
        "session_id": session_id,
        "claude_exit": exit,
        "orphans_after_kill": orphans.iter().map(|o| scrub(o)).collect::<Vec<_>>(),
        "files_before": initial.iter().map(|(p, c)| (p.to_string(), json!(c))).collect::<serde_json::Map<_, _>>(),
        "files_after": files_after,
        "hook_payloads": events,
        "model_script": script_desc,
        "placeholders": {
            "${PROJECT}": "the project root",
            "${HOME}": "the session's HOME",
            "${PROJECT_KEY}": "the project root with every non-alphanumeric char replaced by '-' (transcript folder name)",
            "${TMPDIR}": "the session's TMPDIR",
            "${SANDBOX}": "the temp folder holding project, home and tmp"
        }
    });
    fs::write(dir.join("meta.json"), scrub(&serde_json::to_string_pretty(&meta).unwrap()) + "\n").unwrap();
}

/// A scripted turn as JSON, for `meta.json`.
fn turn_json(t: &Turn) -> Value {
    match t {
        Turn::Text(text) => json!({"text": text}),
        Turn::Hang => json!("hang"),
        Turn::Error { status, kind, message } => json!({"error": {"status": status, "type": kind, "message": message}}),
        Turn::Tools { text, calls } => json!({
            "text": text,
            "tool_use": calls.iter().map(|c| json!({"name": c.name, "input": c.input})).collect::<Vec<_>>(),
        }),
    }
}

/// Replaces every string longer than `max` chars by `<elided N chars>`.
fn elide_long_strings(v: &mut Value, max: usize) {
    match v {
        Value::String(s) if s.chars().count() > max => {
            *s = format!("<elided {} chars>", s.chars().count());
        }
        Value::Array(a) => a.iter_mut().for_each(|x| elide_long_strings(x, max)),
        Value::Object(o) => o.values_mut().for_each(|x| elide_long_strings(x, max)),
        _ => {}
    }
}

/// Exec-form hooks (`"command"` + `"args"`, Claude Code 2.1.139 and later), which `walj install`
/// and the plugin write: the pinned CLI spawns `command` (a bare name found on PATH) with `args`
/// as they are (no word splitting) and no shell in between (the hook's parent is Claude Code).
#[test]
fn exec_form_hooks_run_without_a_shell() {
    let Some(bin) = claude::claude_or_skip("exec_form_hooks_run_without_a_shell") else {
        return;
    };
    let sb = Sandbox::new();
    sb.write("README.md", "# demo\n");
    sb.commit("initial");
    let hook =
        |command: &str, args: &[&str]| json!({"type": "command", "command": command, "args": args, "timeout": 10});
    sb.settings(&json!({"hooks": {"SessionStart": [{"hooks": [
        hook("touch", &["args kept whole.txt"]),
        hook("sh", &["-c", "cat /proc/$PPID/comm > parent.txt"]),
    ]}]}}));
    let mock = MockServer::start(vec![Turn::text("Done.")]);
    let out = claude::run(sb.claude_p(&bin, &mock, "Nothing to do"), SESSION_TIMEOUT);
    assert!(out.status.success() && !out.timed_out, "{out:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while sb.read("parent.txt").is_none_or(|p| p.is_empty()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sb.read("args kept whole.txt").as_deref(), Some(""), "the exec-form hook did not run with its args");
    let parent = sb.read("parent.txt").unwrap_or_default();
    let parent = parent.trim();
    assert!(!parent.is_empty() && !["sh", "bash", "dash", "zsh"].contains(&parent), "the hook's parent is {parent:?}");
    println!("an exec-form hook's parent: {parent}");
}
