//! Codex CLI, Gemini CLI and Copilot CLI payloads through `walj hook`, without the CLIs: payloads
//! recorded from the real CLIs (`tests/fixtures/agents/<agent>-<version>/`, the raw stdin of
//! every hook in start order, recorded offline against the stand-ins of `tests/support/`) and
//! payloads built here for what a recording cannot show (concurrent hook processes).
//!
//! The disk changes the real tools made are replayed between each call's Pre and Post hooks.
//! `tests/e2e/agents.rs` runs the same sessions with the real CLIs.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{Repo, walj_bin};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agents");

/// The project of every recording: `a.txt` = "hello\n", `b.txt` = "old\n", committed.
fn project() -> Repo {
    let repo = Repo::init_in("proj").with_home();
    repo.write("a.txt", "hello\n");
    repo.write("b.txt", "old\n");
    repo.commit("initial");
    repo
}

/// `walj hook [--agent AGENT]` in the project with `payload` on stdin, the test process as its
/// parent (the session reads as live). Must exit 0 and print only what SessionStart may.
fn hook(repo: &Repo, agent: Option<&str>, payload: &str) -> String {
    let mut c = Command::new(walj_bin());
    c.arg("hook");
    if let Some(a) = agent {
        c.args(["--agent", a]);
    }
    let mut child = c
        .current_dir(&repo.root)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "walj hook must exit 0: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A disk change the real tool made: `(before the fixture numbered N, path, content or None =
/// deleted)`.
type Effect = (usize, &'static str, Option<&'static str>);

/// Replays the fixtures of `dir` that `pick` selects (file name → the `--agent` flag, `None` =
/// plain `walj hook`, or skip), applying each effect before the first replayed fixture at or
/// after its number. Returns every SessionStart answer printed.
fn replay(
    repo: &Repo,
    dir: &str,
    effects: &[Effect],
    pick: impl Fn(&str) -> Option<Option<&'static str>>,
) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(Path::new(FIXTURES).join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut done = vec![false; effects.len()];
    let mut printed = Vec::new();
    for name in names {
        let Some(agent) = pick(&name) else { continue };
        let n: usize = name[..2].parse().unwrap();
        for (i, (at, rel, content)) in effects.iter().enumerate() {
            if !done[i] && *at <= n {
                match content {
                    Some(c) => repo.write(rel, c),
                    None => std::fs::remove_file(repo.path(rel)).unwrap(),
                }
                done[i] = true;
            }
        }
        let raw = std::fs::read_to_string(Path::new(FIXTURES).join(dir).join(&name)).unwrap();
        let payload = repo.subst(&raw).replace("${CODEX_HOME}", &repo.home.join(".codex").to_string_lossy());
        let out = hook(repo, agent, &payload);
        if !out.trim().is_empty() {
            printed.push(out);
        }
    }
    printed
}

fn errors_log(repo: &Repo) -> String {
    std::fs::read_to_string(repo.path(".walj/errors.log")).unwrap_or_default()
}

/// The records of one op, by path (file records) or command (command records).
fn by_op<'a>(records: &'a [Value], op: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["op"] == op).collect()
}

/// A file tool's records of `path` (not a command's side effects, which have a `parent`).
fn file_records<'a>(records: &'a [Value], op: &str, path: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["op"] == op && r["path"] == path && r.get("parent").is_none()).collect()
}

fn children<'a>(records: &'a [Value], path: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["op"] == "applied" && r["path"] == path && r.get("parent").is_some()).collect()
}

fn commands<'a>(records: &'a [Value], op: &str) -> BTreeMap<String, &'a Value> {
    records
        .iter()
        .filter(|r| r["op"] == op && r["tool"] == "Bash" && r["path"] == "")
        .map(|r| (r["command"].as_str().unwrap().to_string(), r))
        .collect()
}

fn sessions(records: &[Value], kind: &str) -> usize {
    records.iter().filter(|r| r["op"] == "session" && r["kind"] == kind).count()
}

fn blob(s: &str) -> String {
    walj::store::blob_id(s.as_bytes())
}

fn recover_json(repo: &Repo) -> Value {
    repo.json(&["recover", "--json"])
}

// ---------------------------------------------------------------------------------------------
// Copilot CLI

const COPILOT: &str = "copilot-1.0.102";
/// Create `new.txt`; an Edit of `a.txt` and `echo hi > c.txt` in parallel (both Pre hooks
/// before either Post); `exit 3`.
const COPILOT_EFFECTS: &[Effect] =
    &[(10, "new.txt", Some("new file\n")), (19, "a.txt", Some("HELLO\n")), (19, "c.txt", Some("hi\n"))];

/// What a Copilot session leaves in the journal, whichever hook configuration(s) delivered it
/// (`write`, `edit`: the tool names of the first delivery).
fn check_copilot_journal(repo: &Repo, write: &str, edit: &str) {
    let records = repo.records();
    assert_eq!(errors_log(repo), "", "no hook error");
    // The created file: one intent (before: absent, intended: its content), one outcome.
    let i = file_records(&records, "intent", "new.txt");
    let a = file_records(&records, "applied", "new.txt");
    assert_eq!((i.len(), a.len()), (1, 1), "new.txt journaled once: {records:#?}");
    assert_eq!(i[0]["id"], a[0]["id"]);
    assert_eq!((i[0]["tool"].as_str(), i[0]["before"].clone()), (Some(write), Value::Null));
    assert_eq!(i[0]["intended"], blob("new file\n"));
    assert_eq!(a[0]["after"], blob("new file\n"));
    assert_eq!(i[0]["event"], "artifact_created");
    // The edit, run beside a command: paired by its fingerprint, not taken for the command's.
    let i = file_records(&records, "intent", "a.txt");
    let a = file_records(&records, "applied", "a.txt");
    assert_eq!((i.len(), a.len()), (1, 1), "a.txt journaled once, by the Edit only: {records:#?}");
    assert_eq!(i[0]["id"], a[0]["id"]);
    assert_eq!((i[0]["tool"].as_str(), a[0]["tool"].as_str()), (Some(edit), Some(edit)));
    assert!(children(&records, "a.txt").is_empty(), "the Edit's change is not the command's");
    assert_eq!(
        (i[0]["before"].as_str(), a[0]["after"].as_str()),
        (Some(blob("hello\n").as_str()), Some(blob("HELLO\n").as_str()))
    );
    assert_eq!(i[0]["intended"], blob("HELLO\n"));
    // The commands: each intent paired with its own outcome; `exit 3` failed.
    let pre = commands(&records, "intent");
    let ok = commands(&records, "applied");
    let failed = commands(&records, "failed");
    assert_eq!(pre.keys().collect::<Vec<_>>(), ["echo hi > c.txt", "exit 3"]);
    assert_eq!(pre["echo hi > c.txt"]["id"], ok["echo hi > c.txt"]["id"]);
    assert_eq!(pre["exit 3"]["id"], failed["exit 3"]["id"]);
    assert_eq!(failed["exit 3"]["error"], "Exit code 3");
    assert_eq!(by_op(&records, "intent").iter().filter(|r| r["path"] == "").count(), 2);
    // The command's side effect: c.txt, its child.
    let c = children(&records, "c.txt");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["parent"], pre["echo hi > c.txt"]["id"]);
    // The session: one of each, named as Copilot's.
    for k in ["start", "prompt", "stop", "end"] {
        assert_eq!(sessions(&records, k), 1, "one {k} record");
    }
    let start = records.iter().find(|r| r["kind"] == "start").unwrap();
    assert_eq!((start["agent"].as_str(), start["source"].as_str()), (Some("copilot"), Some("startup")));
    // The Stop verified every change: nothing unresolved.
    assert_eq!(recover_json(repo)["unresolved"], 0);
    assert_eq!(by_op(&records, "persisted").len(), 3, "new.txt, a.txt, c.txt persisted");
}

/// Copilot CLI runs the hooks of `.claude/settings.json` (what `walj install` writes for Claude
/// Code) with its own argument names and no tool_use_id. Before the event model these calls
/// ended in errors.log ("PreToolUse without a file_path") and commands could not be paired.
#[test]
fn copilot_through_claude_settings_is_recognised_and_journaled() {
    let repo = project();
    replay(&repo, COPILOT, COPILOT_EFFECTS, |n| n.contains("-claude-").then_some(None));
    check_copilot_journal(&repo, "Write", "Edit");
}

/// Copilot's own hooks (`walj install --agent copilot`: PascalCase, `--agent copilot`)
/// together with `.claude/settings.json` (plain `walj hook`) and a camelCase configuration:
/// every event arrives three times, and each is journaled once.
#[test]
fn copilot_calls_are_journaled_once_whatever_runs_the_hook() {
    let repo = project();
    replay(&repo, COPILOT, COPILOT_EFFECTS, |n| Some(if n.contains("-claude-") { None } else { Some("copilot") }));
    check_copilot_journal(&repo, "Write", "Edit");
}

#[test]
fn copilot_camel_case_payloads_alone_are_enough() {
    let repo = project();
    replay(&repo, COPILOT, COPILOT_EFFECTS, |n| n.contains("-gh-").then_some(Some("copilot")));
    check_copilot_journal(&repo, "create", "edit");
}

/// Parallel calls without ids whose Posts come in another order than their Pres, and hook
/// processes running at the same time: every command's outcome carries its own intent's id.
#[test]
fn calls_without_ids_pair_right_in_parallel_and_concurrently() {
    let repo = project();
    let ts = |ms: u64| json!(format!("2026-12-01T01:08:{:02}.{:03}Z", ms / 1000, ms % 1000));
    let pre = |cmd: &str, ms: u64| {
        json!({"hook_event_name": "PreToolUse", "session_id": "cp-par", "timestamp": ts(ms), "cwd": repo.root,
               "tool_name": "Bash", "tool_input": {"command": cmd, "description": "d"}})
        .to_string()
    };
    let post = |cmd: &str, ms: u64| {
        json!({"hook_event_name": "PostToolUse", "session_id": "cp-par", "timestamp": ts(ms), "cwd": repo.root,
               "tool_name": "Bash", "tool_input": {"command": cmd, "description": "d"},
               "tool_result": {"result_type": "success", "text_result_for_llm": "<shellId: 0 completed with exit code 0>"}})
        .to_string()
    };
    // Two calls, same timestamp for both Pres (as Copilot sends them), Posts reversed.
    hook(&repo, None, &pre("echo one", 100));
    hook(&repo, None, &pre("echo two", 100));
    hook(&repo, None, &post("echo two", 200));
    hook(&repo, None, &post("echo one", 300));
    // Eight calls whose hook processes all run at once, Pres then Posts.
    let cmds: Vec<String> = (0..8).map(|i| format!("echo c{i}")).collect();
    std::thread::scope(|s| {
        for (i, c) in cmds.iter().enumerate() {
            let p = pre(c, 1000 + i as u64);
            let repo = &repo;
            s.spawn(move || hook(repo, Some("copilot"), &p));
        }
    });
    std::thread::scope(|s| {
        for (i, c) in cmds.iter().enumerate() {
            let p = post(c, 2000 + i as u64);
            let repo = &repo;
            s.spawn(move || hook(repo, Some("copilot"), &p));
        }
    });
    let records = repo.records();
    assert_eq!(errors_log(&repo), "");
    let pre = commands(&records, "intent");
    let ok = commands(&records, "applied");
    assert_eq!(pre.len(), 10);
    for (cmd, i) in &pre {
        assert_eq!(ok[cmd]["id"], i["id"], "{cmd}: outcome paired with its intent");
    }
    let ids: std::collections::BTreeSet<&str> = pre.values().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 10, "distinct ids");
}

// ---------------------------------------------------------------------------------------------
// Codex CLI

/// apply_patch (Add new.txt, Update a.txt, Delete b.txt), two commands in parallel (`echo hi >
/// c.txt`, `echo two > d.txt`), apply_patch (Update c.txt + Move to sub/e.txt), `exit 3`.
#[test]
fn codex_apply_patch_is_one_entry_per_path_with_the_call_id() {
    let repo = project();
    let effects: &[Effect] = &[
        (4, "new.txt", Some("new file\n")),
        (4, "a.txt", Some("HELLO\n")),
        (4, "b.txt", None),
        (7, "c.txt", Some("hi\n")),
        (7, "d.txt", Some("two\n")),
        (10, "c.txt", None),
        (10, "sub/e.txt", Some("bye\n")),
    ];
    replay(&repo, "codex-0.171.0", effects, |_| Some(Some("codex")));
    let records = repo.records();
    assert_eq!(errors_log(&repo), "");
    let one = |op: &str, path: &str| {
        let r = file_records(&records, op, path);
        assert_eq!(r.len(), 1, "{op} {path}: {records:#?}");
        r[0].clone()
    };
    // One call id, one record per path: <id>#1..#3 in the patch's order.
    assert_eq!(one("intent", "new.txt")["id"], "call_0_0#1");
    assert_eq!(one("intent", "a.txt")["id"], "call_0_0#2");
    assert_eq!(one("intent", "b.txt")["id"], "call_0_0#3");
    for p in ["new.txt", "a.txt", "b.txt"] {
        assert_eq!(one("intent", p)["id"], one("applied", p)["id"]);
        assert_eq!(one("intent", p)["tool"], "apply_patch");
    }
    assert_eq!(one("intent", "new.txt")["before"], Value::Null);
    assert_eq!(one("intent", "new.txt")["event"], "artifact_created");
    assert_eq!(one("applied", "new.txt")["after"], blob("new file\n"));
    assert_eq!(one("intent", "a.txt")["intended"], blob("HELLO\n"));
    assert_eq!(one("applied", "a.txt")["after"], blob("HELLO\n"));
    assert_eq!(one("intent", "b.txt")["before"], blob("old\n"));
    assert_eq!(
        (one("applied", "b.txt")["after"].clone(), one("applied", "b.txt")["event"].as_str()),
        (Value::Null, Some("file_deleted"))
    );
    // The move: the old path deleted, the new one created, under the call's id.
    assert_eq!(one("intent", "c.txt")["id"], "call_3_0#1");
    assert_eq!(one("intent", "sub/e.txt")["id"], "call_3_0#2");
    assert_eq!(one("applied", "c.txt")["after"], Value::Null);
    assert_eq!(one("applied", "sub/e.txt")["after"], blob("bye\n"));
    // Commands keep Codex's call ids.
    let pre = commands(&records, "intent");
    assert_eq!(pre["echo hi > c.txt"]["id"], "call_1_0");
    assert_eq!(pre["echo two > d.txt"]["id"], "call_1_1");
    assert_eq!(commands(&records, "applied")["echo hi > c.txt"]["id"], "call_1_0");
    // The two commands ran at the same time: what they made is claimed once, as uncertain.
    for p in ["c.txt", "d.txt"] {
        let c = children(&records, p);
        assert_eq!(c.len(), 1, "{p}: one command's child");
        assert_eq!(c[0]["attribution"], "uncertain", "{p}");
    }
    let start = records.iter().find(|r| r["kind"] == "start").unwrap();
    assert_eq!((start["agent"].as_str(), start["model"].as_str()), (Some("codex"), Some("gpt-5.5")));
    assert_eq!(recover_json(&repo)["unresolved"], 0);
}

// ---------------------------------------------------------------------------------------------
// Gemini CLI

/// write_file (relative path), replace and run_shell_command, `exit 3`.
#[test]
fn gemini_relative_paths_and_shell_failures() {
    let repo = project();
    let effects: &[Effect] =
        &[(5, "new.txt", Some("new file\n")), (8, "a.txt", Some("HELLO\n")), (10, "c.txt", Some("hi\n"))];
    replay(&repo, "gemini-0.61.0", effects, |_| Some(Some("gemini")));
    let records = repo.records();
    assert_eq!(errors_log(&repo), "");
    let i = file_records(&records, "intent", "new.txt");
    let a = file_records(&records, "applied", "new.txt");
    assert_eq!((i.len(), a.len()), (1, 1), "relative new.txt resolved against cwd: {records:#?}");
    assert_eq!(i[0]["id"], a[0]["id"]);
    assert_eq!(
        (i[0]["tool"].as_str(), i[0]["before"].clone(), a[0]["before"].clone()),
        (Some("write_file"), Value::Null, Value::Null)
    );
    let a = file_records(&records, "applied", "a.txt");
    // AfterTool's originalContent is the pre-image.
    assert_eq!(
        (a[0]["before"].as_str(), a[0]["after"].as_str()),
        (Some(blob("hello\n").as_str()), Some(blob("HELLO\n").as_str()))
    );
    let failed = commands(&records, "failed");
    assert_eq!(failed["exit 3"]["error"], "Exit code 3");
    assert_eq!(commands(&records, "intent")["exit 3"]["id"], failed["exit 3"]["id"]);
    assert_eq!(children(&records, "c.txt")[0]["parent"], commands(&records, "intent")["echo hi > c.txt"]["id"]);
    for k in ["start", "prompt", "stop", "end"] {
        assert_eq!(sessions(&records, k), 1, "one {k} record");
    }
    let stop = records.iter().find(|r| r["kind"] == "stop").unwrap();
    assert_eq!(stop["last_assistant_message"], "All done.");
    assert_eq!(recover_json(&repo)["unresolved"], 0);
}

// ---------------------------------------------------------------------------------------------
// The flag

#[test]
fn agent_flag_forms_and_unknown_agents() {
    let repo = project();
    let p = json!({"session_id": "s-flag", "hook_event_name": "SessionStart", "source": "startup", "cwd": repo.root,
                   "timestamp": "2026-12-01T01:11:32.934Z"});
    // Gemini's SessionStart looks like Copilot's: the flag decides.
    hook(&repo, Some("gemini"), &p.to_string());
    let mut c = Command::new(walj_bin());
    let out = c
        .args(["hook", "--agent=nonesuch"])
        .current_dir(&repo.root)
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown --agent"), "{out:?}");
    let records = repo.records();
    assert_eq!(records[0]["agent"], "gemini");
}

// ---------------------------------------------------------------------------------------------
// Sessions of other agents in reports and notes

/// A Copilot session that died mid-command (its process gone: the hooks ran under `timeout`):
/// `recover` and `sessions` name the agent; the next Copilot session is told once, in the
/// shape Copilot reads (a top-level `additionalContext`); a Claude Code session is not told.
#[test]
fn a_crashed_copilot_session_is_reported_and_told_to_the_next_copilot_session() {
    let repo = project();
    let dir = Path::new(FIXTURES).join(COPILOT);
    for name in ["03-claude-SessionStart.json", "06-claude-UserPromptSubmit.json", "09-claude-PreToolUse.json"] {
        let payload = repo.subst(&std::fs::read_to_string(dir.join(name)).unwrap());
        crate::common::hook_ok(&repo.root, &payload, crate::common::Parent::Timeout(20));
        if name.starts_with("09") {
            repo.write("new.txt", "new file\n");
        }
    }
    let r = recover_json(&repo);
    assert_eq!(r["unresolved"], 1, "{r:#}");
    assert_eq!(
        (r["sessions"][0]["agent"].as_str(), r["sessions"][0]["state"].as_str()),
        (Some("copilot"), Some("crashed"))
    );
    let text = repo.ok(&["recover"]);
    assert!(text.contains("Copilot CLI"), "{text}");
    let list = repo.json(&["sessions", "list", "--json"]);
    assert_eq!(list[0]["agent"], "copilot");
    assert!(repo.ok(&["sessions"]).contains("copilot"));
    let show = repo.ok(&["sessions", "show", "d65c8d"]);
    assert!(show.contains("copilot --resume=d65c8d8b-7541-4118-9d59-8ac9c5059561"), "{show}");

    // A Claude Code session starts: not told about Copilot's crash.
    let claude = hook(&repo, None, &repo.start_payload("claude-after"));
    assert_eq!(claude.trim(), "", "a Claude Code session is not told");
    // The next Copilot session (its own hooks, PascalCase) is told once.
    let start = |id: &str, ms: &str| {
        json!({"hook_event_name": "SessionStart", "session_id": id, "timestamp": ms, "cwd": repo.root, "source": "new"})
            .to_string()
    };
    let out = hook(&repo, Some("copilot"), &start("cp-next", "2026-12-02T00:00:00.000Z"));
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let ctx = v["additionalContext"].as_str().unwrap();
    assert!(ctx.contains("new.txt") && ctx.contains("d65c8d"), "{ctx}");
    assert!(v.get("hookSpecificOutput").is_none(), "one copy of the note: {v}");
    let again = hook(&repo, Some("copilot"), &start("cp-third", "2026-12-02T00:01:00.000Z"));
    assert_eq!(again.trim(), "", "told once");
}

/// A Codex session that died in a command, after an apply_patch (its process gone: the hooks
/// ran under `timeout`): every text about it names Codex CLI, never Claude Code, and resumes it
/// with `codex resume ID`: `recover`, the resume brief, the hand-back brief and its report.
#[test]
fn texts_about_a_codex_session_name_codex_and_its_resume_command() {
    let repo = project();
    let dir = Path::new(FIXTURES).join("codex-0.171.0");
    for name in ["01-SessionStart.json", "02-UserPromptSubmit.json", "03-PreToolUse.json", "05-PreToolUse.json"] {
        let raw = std::fs::read_to_string(dir.join(name)).unwrap();
        let payload = repo.subst(&raw).replace("${CODEX_HOME}", &repo.home.join(".codex").to_string_lossy());
        // Under `timeout`: the "agent" process is gone once the hook returns (a crash).
        let out = Command::new("timeout")
            .arg("20")
            .arg(walj_bin())
            .args(["hook", "--agent", "codex"])
            .current_dir(&repo.root)
            .env_remove("CLAUDE_PROJECT_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                c.stdin.take().unwrap().write_all(payload.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        assert!(out.status.success());
    }
    let id = "01a22f27-b866-7913-8158-c0a5decb3c24";
    let r = recover_json(&repo);
    assert_eq!(
        (r["sessions"][0]["agent"].as_str(), r["sessions"][0]["state"].as_str()),
        (Some("codex"), Some("crashed"))
    );
    let recover = repo.ok(&["recover"]);
    assert!(recover.contains("command never finished (Codex CLI stopped while it ran): echo two > d.txt"), "{recover}");
    // Codex's rollout is still there (resumable).
    let show = repo.json(&["sessions", "show", "01a22f", "--json"]);
    let rollout = Path::new(show["transcript"]["original"].as_str().unwrap());
    std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    std::fs::write(rollout, "{}\n").unwrap();
    let brief = repo.ok(&["sessions", "resume", "01a22f", "--print-only"]);
    for want in [
        format!("# walj resume brief: Codex CLI session {id}"),
        "command never finished (Codex CLI stopped while it ran)".to_string(),
        format!("codex resume {id}"),
    ] {
        assert!(brief.contains(&want), "{want:?} in:\n{brief}");
    }
    let handoff = repo.ok(&["handoff", "--session", "01a22f", "--print"]);
    for want in [
        "that Codex CLI left unfinished".to_string(),
        format!("Session {id} (Codex CLI, crashed):"),
        format!("To continue that session: codex resume {id}"),
    ] {
        assert!(handoff.contains(&want), "{want:?} in:\n{handoff}");
    }
    let handed = repo.ok(&["handoff", "--session", "01a22f", "--yes"]);
    assert!(handed.contains("Codex CLI receives this brief at the next session start"), "{handed}");
    for text in [&recover, &brief, &handoff, &handed] {
        assert!(!text.contains("Claude"), "no Claude in texts about a Codex session:\n{text}");
    }
}
