//! `walj import` of the session files the real Codex CLI (0.171.0), Gemini CLI (0.61.0) and
//! Copilot CLI (1.0.102) write, and their resume hints, end to end: each CLI runs offline
//! against its stand-in (`tests/support/agent_mock.rs`) *without* walj's hooks, the real tools
//! change real files, and `walj import --agent NAME` finds the session in the agent's own folder
//! (under the sandbox's HOME) and journals it.
//!
//! Each test prints `SKIPPED: …` and returns when its CLI cannot be installed
//! (`scripts/agent-cli.sh`); under `WALJ_E2E_REQUIRE=1` that is a failure.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::time::{Duration, Instant};

use crate::support::agent_mock::{AgentMock, Turn};
use crate::support::agents::{AgentBox, Cli};
use crate::support::claude::{self as run};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(180);

fn walj_bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

/// A sandbox for `cli` (walj not installed), or `None` (skipped).
fn sandbox(cli: Cli, test: &str) -> Option<(AgentBox, AgentMock)> {
    let bin = crate::support::agents::cli_or_skip(cli, test)?;
    let b = AgentBox::new(cli, bin, &walj_bin());
    let mock = AgentMock::start(cli.protocol(), vec![]);
    b.configure(&mock);
    Some((b, mock))
}

/// `walj import --agent NAME --json`: (records added, the report of the first file). A
/// resumed session may have a second file (Gemini starts a new chat file when the resume
/// falls in another minute): every file must be this agent's, of one session.
fn import(b: &AgentBox) -> (u64, Value) {
    let v = b.walj_json(&["import", "--agent", b.cli.name(), "--json"]);
    let imports = v["imports"].as_array().unwrap();
    assert_eq!(imports.len(), 1, "{v:#}");
    let files = imports[0]["report"]["files"].as_array().unwrap();
    assert!(!files.is_empty(), "a session file of this project: {v:#}");
    for f in files {
        assert_eq!(f["agent"], b.cli.name(), "{v:#}");
        assert_eq!(f["sessions"], files[0]["sessions"], "one session: {v:#}");
    }
    (imports[0]["report"]["added"].as_u64().unwrap(), files[0].clone())
}

fn blob(s: &str) -> Value {
    json!(walj::store::blob_id(s.as_bytes()))
}

/// The file records of `path` with `op`.
fn records<'a>(j: &'a [Value], op: &str, path: &str) -> Vec<&'a Value> {
    j.iter().filter(|r| r["op"] == op && r["path"] == path).collect()
}

/// One imported file call on `path`: intent and applied with the same id, the images
/// (`Some(None)` = absent, `None` = not known) named and stored.
fn check_file(b: &AgentBox, j: &[Value], path: &str, before: Option<Option<&str>>, after: Option<Option<&str>>) {
    let i = records(j, "intent", path);
    let a = records(j, "applied", path);
    assert_eq!((i.len(), a.len()), (1, 1), "{path}: one intent and one outcome:\n{j:#?}");
    assert_eq!(i[0]["id"], a[0]["id"], "{path}: paired");
    assert_eq!(i[0]["imported"], true);
    let img = |v: Option<Option<&str>>| match v {
        None => None,
        Some(None) => Some(Value::Null),
        Some(Some(s)) => Some(blob(s)),
    };
    assert_eq!(i[0].get("before").cloned(), img(before), "{path}: before");
    assert_eq!(a[0].get("after").cloned(), img(after), "{path}: after");
    for s in [before, after].into_iter().flatten().flatten() {
        let id = walj::store::blob_id(s.as_bytes());
        let got = walj::store::Store::new(b.root().join(".walj/store")).get(&id);
        assert_eq!(got.ok().as_deref(), Some(s.as_bytes()), "{path}: image {id} kept");
    }
}

/// The commands of the journal: (command, op) of every outcome.
fn command_outcomes(j: &[Value]) -> Vec<(String, String, Option<String>)> {
    j.iter()
        .filter(|r| r["tool"] == "Bash" && (r["op"] == "applied" || r["op"] == "failed"))
        .map(|r| {
            (
                r["command"].as_str().unwrap().to_string(),
                r["op"].as_str().unwrap().to_string(),
                r["error"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// What a test expects of an agent's session file.
struct Expect {
    /// new.txt's images (the first session creates it).
    new_txt: (Option<Option<&'static str>>, Option<Option<&'static str>>),
    /// a.txt's images (the resumed session edits it).
    a_txt: (Option<Option<&'static str>>, Option<Option<&'static str>>),
    /// The file the resumed session fails to edit.
    failed_path: &'static str,
}

/// A session (create, delete, commands, one failing), imported; then resumed with walj's hint
/// (a failing edit, an edit) and imported again. Every import of the same file twice adds
/// nothing.
fn import_and_resume(cli: Cli, test: &str, first: Vec<Turn>, second: Vec<Turn>, expect: Expect) {
    let Some((b, mock)) = sandbox(cli, test) else { return };
    mock.script(b.copilot_paths(first));
    b.assert_ran(run::run(b.command(&mock, "first prompt"), TIMEOUT), &mock);
    assert!(!b.root().join(".walj").exists(), "no hooks: nothing journaled yet");

    let (added, file) = import(&b);
    assert!(added > 0, "{file:#}");
    assert_eq!((file["hooked"].as_bool(), file["in_flight"].as_array().unwrap().len()), (None, 0), "{file:#}");
    let j = b.journal();
    check_file(&b, &j, "new.txt", expect.new_txt.0, expect.new_txt.1);
    let cmds = command_outcomes(&j);
    assert!(cmds.iter().any(|(c, op, _)| c == "exit 3" && op == "failed"), "{cmds:?}");
    assert!(cmds.iter().any(|(c, op, e)| c.contains("echo hi > c.txt") && op == "applied" && e.is_none()), "{cmds:?}");
    assert!(j.iter().all(|r| r["imported"] == true), "every record is marked imported");
    // One session, of this agent, its prompt, its turn settled (the answer ended it).
    let list = b.walj_json(&["sessions", "list", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list:#}");
    assert_eq!(list[0]["agent"], cli.name());
    let sid = list[0]["sid"].as_str().unwrap().to_string();
    let show = b.walj_json(&["sessions", "show", &sid, "--json"]);
    let session = show["session"].as_str().unwrap().to_string();
    let prompts: Vec<&str> = show["prompts"].as_array().unwrap().iter().map(|p| p["text"].as_str().unwrap()).collect();
    assert_eq!(prompts, ["first prompt"]);
    assert_eq!(show["last_assistant_message"], "one");
    assert_eq!(show["unresolved"], json!([]), "the turn ended: its entries are settled");
    assert!(show["transcript"]["original"].as_str().is_some_and(|t| !t.is_empty()), "{show:#}");
    assert_eq!(import(&b).0, 0, "importing twice adds nothing");

    // walj's resume hint resumes the session: the next request carries the first prompt.
    let hint = show["resume"].as_str().unwrap().to_string();
    assert!(hint.starts_with(cli.name()) && hint.contains(&session), "{hint}");
    let text = b.walj_ok(&["sessions", "show", &sid]);
    assert!(text.contains(&hint), "{text}");
    mock.script(b.copilot_paths(second));
    let mark = mock.mark();
    b.assert_ran(run::run(b.resume_command(&mock, &hint, "second prompt"), TIMEOUT), &mock);
    let first_request = &mock.main_requests_from(mark)[0];
    assert!(first_request.count("first prompt") >= 1, "`{hint}` resumed the conversation: {:#}", first_request.body);

    let (added, _) = import(&b);
    assert!(added > 0, "the resumed part is imported");
    let j = b.journal();
    check_file(&b, &j, "a.txt", expect.a_txt.0, expect.a_txt.1);
    let show = b.walj_json(&["sessions", "show", &sid, "--json"]);
    assert_eq!(b.walj_json(&["sessions", "list", "--json"]).as_array().unwrap().len(), 1, "still one session");
    let prompts: Vec<&str> = show["prompts"].as_array().unwrap().iter().map(|p| p["text"].as_str().unwrap()).collect();
    assert_eq!(prompts, ["first prompt", "second prompt"]);
    assert_eq!(show["last_assistant_message"], "two");
    let entries = show["entries"].as_array().unwrap();
    let failed: Vec<&Value> = entries.iter().filter(|e| e["path"] == expect.failed_path).collect();
    assert_eq!(failed.len(), 1, "{entries:#?}");
    assert_eq!(failed[0]["status"], "not_applied", "a failed edit in a turn that went on changed nothing");
    assert_eq!(import(&b).0, 0, "importing again adds nothing");
}

#[test]
fn codex_rollout_is_imported_and_the_session_resumes_with_the_hint() {
    let add = "*** Begin Patch\n*** Add File: new.txt\n+new file\n*** Delete File: b.txt\n*** End Patch\n";
    let first = vec![
        Turn::tool("apply_patch", json!(add)),
        Turn::tools([("exec_command", json!({"cmd": "echo hi > c.txt"})), ("exec_command", json!({"cmd": "exit 3"}))]),
        Turn::text("one"),
    ];
    let second = vec![
        Turn::tool("apply_patch", json!("*** Begin Patch\n*** Update File: missing.txt\n@@\n-x\n+y\n*** End Patch\n")),
        Turn::tool(
            "apply_patch",
            json!("*** Begin Patch\n*** Update File: a.txt\n@@\n-hello\n+HELLO\n*** End Patch\n"),
        ),
        Turn::text("two"),
    ];
    // The rollout holds an added file's and a deleted file's content, not an updated file's.
    let expect =
        Expect { new_txt: (Some(None), Some(Some("new file\n"))), a_txt: (None, None), failed_path: "missing.txt" };
    import_and_resume(
        Cli::Codex,
        "codex_rollout_is_imported_and_the_session_resumes_with_the_hint",
        first,
        second,
        expect,
    );
}

#[test]
fn gemini_chat_is_imported_and_the_session_resumes_with_the_hint() {
    let first = vec![
        Turn::tool("write_file", json!({"file_path": "new.txt", "content": "new file\n"})),
        Turn::tools([
            ("run_shell_command", json!({"command": "rm b.txt; echo hi > c.txt", "description": "d"})),
            ("run_shell_command", json!({"command": "exit 3"})),
        ]),
        Turn::text("one"),
    ];
    let second = vec![
        Turn::tool(
            "replace",
            json!({"file_path": "b.txt", "old_string": "nothere", "new_string": "X", "instruction": "x"}),
        ),
        Turn::tool(
            "replace",
            json!({"file_path": "a.txt", "old_string": "hello", "new_string": "HELLO", "instruction": "x"}),
        ),
        Turn::text("two"),
    ];
    // The chat file holds each file's whole content before and after.
    let expect = Expect {
        new_txt: (Some(None), Some(Some("new file\n"))),
        a_txt: (Some(Some("hello\n")), Some(Some("HELLO\n"))),
        failed_path: "b.txt",
    };
    import_and_resume(
        Cli::Gemini,
        "gemini_chat_is_imported_and_the_session_resumes_with_the_hint",
        first,
        second,
        expect,
    );
}

#[test]
fn copilot_events_are_imported_and_the_session_resumes_with_the_hint() {
    let first = vec![
        Turn::tool("create", json!({"path": "NEW", "file_text": "new file\n"})),
        Turn::tools([
            ("bash", json!({"command": "rm b.txt; echo hi > c.txt", "description": "d"})),
            ("bash", json!({"command": "exit 3", "description": "fail"})),
        ]),
        Turn::text("one"),
    ];
    let second = vec![
        Turn::tool("edit", json!({"path": "A", "old_str": "nothere", "new_str": "X"})),
        Turn::tool("edit", json!({"path": "A", "old_str": "hello", "new_str": "HELLO"})),
        Turn::text("two"),
    ];
    // a.txt's pre-image: Copilot's backup of it from before the prompt; the failed edit is the
    // same file's first entry.
    let expect = Expect {
        new_txt: (Some(None), Some(Some("new file\n"))),
        a_txt: (Some(Some("hello\n")), Some(Some("HELLO\n"))),
        failed_path: "a.txt",
    };
    import_and_resume_copilot(first, second, expect);
}

/// Copilot's failing edit and its real edit are both on a.txt: the checks on a.txt look at the
/// applied one.
fn import_and_resume_copilot(first: Vec<Turn>, second: Vec<Turn>, expect: Expect) {
    let test = "copilot_events_are_imported_and_the_session_resumes_with_the_hint";
    let Some((b, mock)) = sandbox(Cli::Copilot, test) else { return };
    mock.script(b.copilot_paths(first));
    b.assert_ran(run::run(b.command(&mock, "first prompt"), TIMEOUT), &mock);
    let (added, _) = import(&b);
    assert!(added > 0);
    let j = b.journal();
    check_file(&b, &j, "new.txt", expect.new_txt.0, expect.new_txt.1);
    let cmds = command_outcomes(&j);
    assert!(cmds.iter().any(|(c, op, e)| c == "exit 3" && op == "failed" && e.as_deref() == Some("Exit code 3")));
    let list = b.walj_json(&["sessions", "list", "--json"]);
    let sid = list[0]["sid"].as_str().unwrap().to_string();
    let show = b.walj_json(&["sessions", "show", &sid, "--json"]);
    assert_eq!((show["agent"].as_str(), show["state"].as_str()), (Some("copilot"), Some("ended")), "{show:#}");
    assert_eq!(import(&b).0, 0, "importing twice adds nothing");
    let hint = show["resume"].as_str().unwrap().to_string();
    assert_eq!(hint, format!("copilot --resume={}", show["session"].as_str().unwrap()));
    mock.script(b.copilot_paths(second));
    let mark = mock.mark();
    b.assert_ran(run::run(b.resume_command(&mock, &hint, "second prompt"), TIMEOUT), &mock);
    assert!(mock.main_requests_from(mark)[0].count("first prompt") >= 1, "`{hint}` resumed the conversation");
    assert!(import(&b).0 > 0);
    let j = b.journal();
    let applied: Vec<&Value> = records(&j, "applied", "a.txt");
    assert_eq!(applied.len(), 1, "{j:#?}");
    let intent = j.iter().find(|r| r["op"] == "intent" && r["id"] == applied[0]["id"]).unwrap();
    assert_eq!(intent["before"], blob(expect.a_txt.0.unwrap().unwrap()), "{intent}");
    assert_eq!(intent["before_from"], "backup", "{intent}");
    assert_eq!(applied[0]["after"], blob(expect.a_txt.1.unwrap().unwrap()));
    let failed: Vec<&Value> = j.iter().filter(|r| r["path"] == "a.txt" && r["how"] == "not_applied").collect();
    assert_eq!(failed.len(), 1, "the failed edit, not applied: {j:#?}");
    let show = b.walj_json(&["sessions", "show", &sid, "--json"]);
    let prompts: Vec<&str> = show["prompts"].as_array().unwrap().iter().map(|p| p["text"].as_str().unwrap()).collect();
    assert_eq!(prompts, ["first prompt", "second prompt"]);
    assert_eq!(show["state"], "ended", "resumed and shut down again");
    assert_eq!(import(&b).0, 0, "importing again adds nothing");
}

// ---------------------------------------------------------------------------------------------
// kill -9 mid-command, no hooks: the import shows what the crash cut off

/// The session writes new.txt, then runs a long command; the agent's whole process group is
/// killed while it runs. The import leaves new.txt unresolved (its turn never ended) and, where
/// the agent recorded the call's start, the command in flight.
fn crash_then_import(cli: Cli, test: &str, write: Turn, shell: fn(&str) -> Turn, command_recorded: bool) {
    let token = run::unique_token("orphan");
    let Some((b, mock)) = sandbox(cli, test) else { return };
    let mut script = b.copilot_paths(vec![write]);
    script.extend([shell(&token), Turn::text("never")]);
    mock.script(script);
    let running = run::spawn(b.command(&mock, "do it"));
    let deadline = Instant::now() + TIMEOUT;
    while !b.root().join("run.log").exists() {
        assert!(Instant::now() < deadline, "the command never ran; requests:\n{}", mock.summary());
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = running.pid();
    run::kill9_tree(&[pid]);
    let _ = running.wait(Duration::from_secs(30));
    run::kill9_tree(&run::pids_mentioning(&token));

    let v = b.walj_json(&["import", "--agent", cli.name(), "--json"]);
    let file = &v["imports"][0]["report"]["files"][0];
    let in_flight = file["in_flight"].as_array().unwrap();
    let r = b.walj_json(&["recover", "--json"]);
    let s = &r["sessions"][0];
    assert_eq!(s["agent"], cli.name(), "{r:#}");
    let paths: Vec<&str> = s["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["new.txt"], "the write is unresolved: its turn never ended: {r:#}");
    let cut = s["commands_in_flight"].as_array().map(Vec::len).unwrap_or(0);
    if command_recorded {
        assert_eq!(in_flight.len(), 1, "{file:#}");
        assert!(in_flight[0]["what"].as_str().unwrap().contains(&token), "{file:#}");
        assert_eq!(cut, 1, "the command is in flight: {r:#}");
        let text = b.walj_ok(&["recover"]);
        assert!(text.contains(cli.label()) && text.contains(&token), "{text}");
    } else {
        // Gemini CLI writes a call once it finished: the command cut off is not in its file.
        assert_eq!((in_flight.len(), cut), (0, 0), "{file:#} {r:#}");
    }
}

fn long(token: &str) -> String {
    format!("echo started > run.log; sleep 60 # {token}")
}

#[test]
fn codex_killed_mid_command_is_imported_with_the_command_in_flight() {
    crash_then_import(
        Cli::Codex,
        "codex_killed_mid_command_is_imported_with_the_command_in_flight",
        Turn::tool("apply_patch", json!("*** Begin Patch\n*** Add File: new.txt\n+new file\n*** End Patch\n")),
        |t| Turn::tool("exec_command", json!({"cmd": long(t)})),
        true,
    );
}

#[test]
fn gemini_killed_mid_command_is_imported_with_its_write_unresolved() {
    crash_then_import(
        Cli::Gemini,
        "gemini_killed_mid_command_is_imported_with_its_write_unresolved",
        Turn::tool("write_file", json!({"file_path": "new.txt", "content": "new file\n"})),
        |t| Turn::tool("run_shell_command", json!({"command": long(t)})),
        false,
    );
}

#[test]
fn copilot_killed_mid_command_is_imported_with_the_command_in_flight() {
    crash_then_import(
        Cli::Copilot,
        "copilot_killed_mid_command_is_imported_with_the_command_in_flight",
        Turn::tool("create", json!({"path": "NEW", "file_text": "new file\n"})),
        |t| Turn::tool("bash", json!({"command": long(t), "description": "long"})),
        true,
    );
}

// ---------------------------------------------------------------------------------------------
// A session walj's hooks journaled is not imported a second time

#[test]
fn a_hooked_session_is_not_imported_again() {
    for cli in [Cli::Codex, Cli::Gemini, Cli::Copilot] {
        let Some((b, mock)) = sandbox(cli, "a_hooked_session_is_not_imported_again") else { return };
        b.walj_ok(&["install", "--agent", cli.name()]);
        let write = match cli {
            Cli::Codex => {
                Turn::tool("apply_patch", json!("*** Begin Patch\n*** Add File: new.txt\n+new file\n*** End Patch\n"))
            }
            Cli::Gemini => Turn::tool("write_file", json!({"file_path": "new.txt", "content": "new file\n"})),
            Cli::Copilot => Turn::tool("create", json!({"path": "NEW", "file_text": "new file\n"})),
        };
        mock.script(b.copilot_paths(vec![write, Turn::text("done")]));
        b.assert_ran(run::run(b.command(&mock, "do it"), TIMEOUT), &mock);
        let before = b.journal().len();
        assert!(before > 0, "{}: the hooks journaled the session", cli.label());
        let (added, file) = import(&b);
        assert_eq!((added, file["hooked"].as_bool()), (0, Some(true)), "{}: {file:#}", cli.label());
        assert_eq!(b.journal().len(), before);
        let text = b.walj_ok(&["import", "--agent", cli.name()]);
        assert!(text.contains("nothing imported: walj's hooks journaled this"), "{text}");
    }
}
