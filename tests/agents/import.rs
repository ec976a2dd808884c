//! `walj import` of the session files the real Codex, Gemini and Copilot CLIs wrote
//! (`tests/fixtures/agent-sessions/`, recorded from sessions run without walj's hooks), through
//! the real binary. The end-to-end tests with the CLIs themselves are `tests/e2e/agent_import.rs`.
//! The sessions ran in a folder that no longer exists: their paths land in this project.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::path::{Path, PathBuf};

use crate::common::Repo;
use serde_json::{Value, json};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agent-sessions").join(rel)
}

const CODEX: &str = "codex-0.171.0/resumed.rollout.jsonl";
const CODEX_KILLED: &str = "codex-0.171.0/killed-mid-command.rollout.jsonl";
const GEMINI: &str = "gemini-0.61.0/resume/project/chats/session-2026-12-01T03-11-78ca2e72.jsonl";
const GEMINI_KILLED: &str = "gemini-0.61.0/crash/project/chats/session-2026-12-01T03-07-8c12fc20.jsonl";
const COPILOT: &str = "copilot-1.0.102/resume/c93affc4-9e43-4431-aa3c-837047464ef9/events.jsonl";
const COPILOT_KILLED: &str = "copilot-1.0.102/crash/685d5d94-458f-49af-b852-f6b0255af31c/events.jsonl";

/// The recorded sessions' project: `a.txt` = "hello\n", `b.txt` = "old\n".
fn project() -> Repo {
    Repo::new(&[("a.txt", "hello\n"), ("b.txt", "old\n")]).with_home()
}

/// `walj import FILE --json` (the agent told by the file): (records added, the file's report).
fn import(repo: &Repo, rel: &str) -> (u64, Value) {
    let f = fixture(rel);
    let v = repo.json(&["import", f.to_str().unwrap(), "--json"]);
    let r = &v["imports"][0]["report"];
    (r["added"].as_u64().unwrap(), r["files"][0].clone())
}

fn blob(s: &str) -> Value {
    json!(walj::store::blob_id(s.as_bytes()))
}

fn session(repo: &Repo) -> Value {
    let list = repo.json(&["sessions", "list", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list:#}");
    repo.json(&["sessions", "show", list[0]["sid"].as_str().unwrap(), "--json"])
}

fn prompts(show: &Value) -> Vec<&str> {
    show["prompts"].as_array().unwrap().iter().map(|p| p["text"].as_str().unwrap()).collect()
}

/// The entry of `path` in state `status` (exactly one).
fn entry<'a>(show: &'a Value, path: &str, status: &str) -> &'a Value {
    let e: Vec<&Value> =
        show["entries"].as_array().unwrap().iter().filter(|e| e["path"] == path && e["status"] == status).collect();
    assert_eq!(e.len(), 1, "{path} {status}: {:#}", show["entries"]);
    e[0]
}

/// What every resumed fixture holds: one session of `agent`, two prompts, the last answer,
/// nothing unresolved (both turns ended), the failed edit not applied; importing again adds
/// nothing.
fn check_resumed(repo: &Repo, rel: &str, agent: &str, failed_path: &str) -> Value {
    let (added, file) = import(repo, rel);
    assert!(added > 0 && file["agent"] == agent, "{file:#}");
    let show = session(repo);
    assert_eq!(show["agent"], agent);
    assert_eq!(show["resume"], format!("{} {}", agent, resume_arg(agent, show["session"].as_str().unwrap())));
    assert_eq!(prompts(&show), ["first prompt", "second prompt"]);
    assert_eq!(show["last_assistant_message"], "two");
    assert_eq!(show["unresolved"], json!([]), "{show:#}");
    entry(&show, "new.txt", "persisted");
    entry(&show, failed_path, "not_applied");
    assert_eq!(import(repo, rel).0, 0, "importing twice adds nothing");
    show
}

fn resume_arg(agent: &str, id: &str) -> String {
    match agent {
        "codex" => format!("resume {id}"),
        "gemini" => format!("--resume {id}"),
        _ => format!("--resume={id}"),
    }
}

#[test]
fn codex_rollout() {
    let repo = project();
    let show = check_resumed(&repo, CODEX, "codex", "missing.txt");
    // An added file's content is in the rollout; an updated file's is not.
    let new = entry(&show, "new.txt", "persisted");
    assert_eq!((&new["before"], &new["after"]), (&json!("absent"), &blob("new file\n")), "{new:#}");
    let a = entry(&show, "a.txt", "persisted");
    assert!(a.get("before").is_none() && a.get("after").is_none(), "{a:#}");
    assert_eq!(show["model"], "gpt-5.5");
    assert_eq!(show["branch"], "main");
}

#[test]
fn gemini_chat() {
    let repo = project();
    let show = check_resumed(&repo, GEMINI, "gemini", "a.txt");
    let a = entry(&show, "a.txt", "persisted");
    assert_eq!((&a["before"], &a["after"]), (&blob("hello\n"), &blob("HELLO\n")), "{a:#}");
    // The images are in the store.
    let id = walj::store::blob_id(b"hello\n");
    assert!(repo.store_object(&id).is_file());
    assert_eq!(show["model"], "gemini-2.5-pro");
}

#[test]
fn copilot_events() {
    let repo = project();
    let show = check_resumed(&repo, COPILOT, "copilot", "a.txt");
    // a.txt's pre-image: Copilot's backup from before the second prompt.
    let a = entry(&show, "a.txt", "persisted");
    assert_eq!((&a["before"], &a["after"]), (&blob("hello\n"), &blob("HELLO\n")), "{a:#}");
    let j = repo.records();
    let intent = j.iter().find(|r| r["op"] == "intent" && r["id"] == a["id"]).unwrap();
    assert_eq!(intent["before_from"], "backup");
    // Shut down, resumed, shut down again: ended.
    assert_eq!(show["state"], "ended");
    let starts: Vec<&str> = j.iter().filter(|r| r["kind"] == "start").map(|r| r["source"].as_str().unwrap()).collect();
    assert_eq!(starts, ["import", "resume"]);
}

#[test]
fn a_killed_session_leaves_its_turn_open_and_its_command_in_flight() {
    for (rel, agent, unresolved, command) in [
        (CODEX_KILLED, "codex", &["new.txt", "a.txt"][..], true),
        (COPILOT_KILLED, "copilot", &["new.txt", "a.txt"][..], true),
        // Gemini CLI writes a call once it finished: the command cut off is not in its file.
        (GEMINI_KILLED, "gemini", &["new.txt"][..], false),
    ] {
        let repo = project();
        let (_, file) = import(&repo, rel);
        let in_flight = file["in_flight"].as_array().unwrap();
        assert_eq!(in_flight.len(), usize::from(command), "{agent}: {file:#}");
        if command {
            assert_eq!(in_flight[0]["tool"], "Bash");
            assert!(in_flight[0]["what"].as_str().unwrap().contains("sleep 60 # probe"), "{file:#}");
        }
        let r = repo.json(&["recover", "--json"]);
        let s = &r["sessions"][0];
        assert_eq!(s["agent"], agent);
        let mut paths: Vec<&str> =
            s["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
        paths.sort();
        let mut want = unresolved.to_vec();
        want.sort();
        assert_eq!(paths, want, "{agent}: the last turn never ended: {r:#}");
        let text = repo.ok(&["recover"]);
        let label = match agent {
            "codex" => "Codex CLI",
            "gemini" => "Gemini CLI",
            _ => "Copilot CLI",
        };
        assert!(text.contains(label), "{text}");
        assert_eq!(text.contains("command in flight: echo started > run.log"), command, "{text}");
    }
}

#[test]
fn a_cut_last_line_is_reported_with_the_agent_named() {
    let repo = project();
    let src = std::fs::read(fixture(COPILOT_KILLED)).unwrap();
    let cut = repo.tmp.join("events.jsonl");
    std::fs::write(&cut, &src[..src.len() - 40]).unwrap();
    let out = repo.ok(&["import", cut.to_str().unwrap()]);
    assert!(out.contains("the last line is cut short: Copilot CLI stopped while writing it"), "{out}");
}

#[test]
fn agent_filter_and_errors() {
    let repo = project();
    let f = fixture(CODEX);
    let err = repo.fails(&["import", "--agent", "gemini", f.to_str().unwrap()]);
    assert!(err.contains("not a Gemini CLI session file (it is Codex CLI's)"), "{err}");
    let err = repo.fails(&["import", "--agent", "cursor"]);
    assert!(err.contains("unknown agent \"cursor\""), "{err}");
    // A folder with --agent: only that agent's files.
    let v = repo.json(&["import", "--agent", "codex", fixture("").to_str().unwrap(), "--json"]);
    let files = v["imports"][0]["report"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{v:#}");
    assert!(files.iter().all(|f| f["agent"] == "codex"));
    assert!(!repo.exists(".walj/errors.log"));
}

#[test]
fn without_paths_the_agents_own_folder_is_searched_and_other_agents_are_pointed_at() {
    let repo = project();
    // Copilot's session-state holding the recorded session, its folder made this project's.
    let state = repo.home.join(".copilot/session-state/c93affc4-9e43-4431-aa3c-837047464ef9");
    std::fs::create_dir_all(&state).unwrap();
    let src = std::fs::read_to_string(fixture(COPILOT)).unwrap();
    let root = repo.root.to_string_lossy();
    std::fs::write(state.join("events.jsonl"), src.replace("/tmp/walj-e2e-UeNl1O/project", &root)).unwrap();
    let home = |c: &mut assert_cmd::Command| {
        c.env("HOME", &repo.home).env_remove("COPILOT_HOME").env_remove("CODEX_HOME").env_remove("GEMINI_CLI_HOME");
    };
    let mut c = repo.walj(&["import"]);
    home(&mut c);
    let out = String::from_utf8(c.output().unwrap().stdout).unwrap();
    assert!(out.contains("1 Copilot CLI session of this project: `walj import --agent copilot` imports it."), "{out}");
    let mut c = repo.walj(&["import", "--agent", "copilot"]);
    home(&mut c);
    let o = c.output().unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(o.status.success() && out.contains("Imported") && out.contains("1 session file"), "{out}");
    assert_eq!(session(&repo)["agent"], "copilot");
    let mut c = repo.walj(&["import", "--agent", "codex"]);
    home(&mut c);
    let out = String::from_utf8(c.output().unwrap().stdout).unwrap();
    assert!(out.starts_with("No Codex CLI sessions of"), "{out}");
}

#[test]
fn a_session_the_hooks_journaled_is_not_imported() {
    let repo = project();
    // Copilot's hook told walj of the session's start.
    let payload = json!({"sessionId": "c93affc4-9e43-4431-aa3c-837047464ef9", "timestamp": 1796094688435u64,
                         "cwd": repo.root, "source": "new"});
    let out = repo.walj(&["hook", "--agent", "copilot"]).write_stdin(payload.to_string()).output().unwrap();
    assert!(out.status.success());
    let before = repo.records().len();
    let (added, file) = import(&repo, COPILOT);
    assert_eq!((added, file["hooked"].as_bool()), (0, Some(true)), "{file:#}");
    assert_eq!(repo.records().len(), before);
}

#[test]
fn a_file_outside_the_project_is_session_context_not_an_unresolved_entry() {
    let repo = project();
    // The killed Codex session, its added file moved outside the project (a plan in a home
    // folder beside it: the repository's temp folder is the project).
    let home = tempfile::tempdir().unwrap();
    let plan = home.path().join(".codex/plans/new.md");
    let src = std::fs::read_to_string(fixture(CODEX_KILLED)).unwrap();
    let plan_s = plan.to_string_lossy();
    let moved = src
        .replace("/tmp/walj-e2e-kla37H/project/new.txt", &plan_s)
        .replace("Add File: new.txt", &format!("Add File: {plan_s}"));
    assert_ne!(moved, src);
    let f = repo.tmp.join("rollout.jsonl");
    std::fs::write(&f, moved).unwrap();
    let v = repo.json(&["import", f.to_str().unwrap(), "--json"]);
    let file = &v["imports"][0]["report"]["files"][0];
    assert_eq!(file["outside"], json!([plan]), "{file:#}");
    let r = repo.json(&["recover", "--json"]);
    let paths: Vec<&str> =
        r["sessions"][0]["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["a.txt"], "only the project's file is unresolved: {r:#}");
    let show = session(&repo);
    let files = show["files"].as_array().unwrap();
    let p = files.iter().find(|x| x["path"] == json!(plan)).unwrap_or_else(|| panic!("{show:#}"));
    assert_eq!((p["outside"].as_bool(), p["unresolved"].as_u64()), (Some(true), Some(0)), "{p:#}");
    assert!(!plan.exists(), "nothing is written outside the project");
    let text = repo.ok(&["import", f.to_str().unwrap()]);
    assert!(text.contains(&format!("outside the project: {plan_s}")), "{text}");
}

/// Copilot CLI's session files can end in NUL bytes after a crash (its size grown before its
/// bytes were written; its open reports), and a resumed session appends after them: such a
/// file imports as the same file without them, with no cut or malformed line reported.
#[test]
fn a_nul_padded_copilot_session_file_imports() {
    let src = std::fs::read(fixture(COPILOT_KILLED)).unwrap();
    let plain = project();
    let (want_added, want) = import(&plain, COPILOT_KILLED);
    let repo = project();
    // NULs after the third line (the crash, then the rest written after them) and at the end.
    let third = src.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(2).unwrap().0 + 1;
    let mut padded = src[..third].to_vec();
    padded.extend_from_slice(&[0u8; 4096]);
    padded.extend_from_slice(&src[third..]);
    padded.extend_from_slice(&[0u8; 8192]);
    let dir = repo.tmp.join("session-state/685d5d94-458f-49af-b852-f6b0255af31c");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("events.jsonl");
    std::fs::write(&f, &padded).unwrap();
    let v = repo.json(&["import", f.to_str().unwrap(), "--json"]);
    let r = &v["imports"][0]["report"];
    let file = &r["files"][0];
    assert_eq!(file["agent"], "copilot", "{file:#}");
    assert_eq!((&file["torn_tail"], &file["malformed"]), (&json!(false), &json!(0)), "{file:#}");
    assert_eq!(r["added"].as_u64().unwrap(), want_added, "{file:#}");
    assert_eq!(file["in_flight"], want["in_flight"], "{file:#}");
    assert_eq!(file["tool_calls"], want["tool_calls"], "{file:#}");
    let out = repo.ok(&["recover"]);
    assert!(out.contains("Copilot CLI") && !out.contains("cut short"), "{out}");
}
