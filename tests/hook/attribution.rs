//! Who made a change while a Bash command ran: another session's journaled writes are never
//! the command's; a change made while another command's window was open is listed once,
//! `attribution: uncertain`, naming the other command; a change made while only this
//! command ran stays certain. Through the real binary as the hook, in real git repositories,
//! with real shell writes between the hook events.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::common::{Parent, Repo, hook_ok, recover_marks, walj_at};
use serde_json::{Value, json};

const A: &str = "a0a0a0a0-attribution-session-a";
const B: &str = "b1b1b1b1-attribution-session-b";

fn hook(root: &Path, payload: &Value) {
    let out = hook_ok(root, &payload.to_string(), Parent::Timeout(20));
    assert_eq!(out, "", "walj hook printed");
    let errors = root.join(".walj/errors.log");
    assert!(!errors.exists(), "hook errors: {}", fs::read_to_string(errors).unwrap_or_default());
}

fn bash(root: &Path, session: &str, event: &str, id: &str, command: &str) {
    let mut p = json!({
        "hook_event_name": event, "session_id": session, "transcript_path": "/tmp/none.jsonl",
        "cwd": root, "tool_name": "Bash", "tool_use_id": id,
        "tool_input": {"command": command, "description": "test"},
    });
    if event == "PostToolUse" {
        p["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
    }
    hook(root, &p);
}

/// A Write by `session`, journaled (Pre, the write, Post), as Claude Code's Write tool does.
fn write_tool(root: &Path, session: &str, id: &str, rel: &str, content: &str) {
    let abs = root.join(rel);
    let input = json!({"file_path": abs, "content": content});
    let base = json!({"session_id": session, "transcript_path": "/tmp/none.jsonl", "cwd": root,
                      "tool_name": "Write", "tool_use_id": id, "tool_input": input});
    let mut pre = base.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    hook(root, &pre);
    fs::write(&abs, content).unwrap();
    let mut post = base;
    post["hook_event_name"] = json!("PostToolUse");
    post["tool_response"] = json!({"type": "create", "filePath": abs, "content": content, "originalFile": null});
    hook(root, &post);
}

/// A gap that puts a later ctime (and a later journal timestamp) after what came before.
fn tick() {
    std::thread::sleep(Duration::from_millis(30));
}

/// The journal's child records of command `parent`, by path.
fn children(repo: &Repo, parent: &str) -> BTreeMap<String, Value> {
    repo.records()
        .into_iter()
        .filter(|r| r["parent"] == parent && r["op"] == "applied")
        .map(|r| (r["path"].as_str().unwrap().to_string(), r))
        .collect()
}

#[test]
fn another_sessions_journaled_write_is_not_a_finished_commands_and_the_rest_is_uncertain_only_after_it_began() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    bash(&root, A, "PreToolUse", "toolu_cmdA", "make");
    fs::write(root.join("early.out"), "made while only the command ran\n").unwrap();
    tick();
    // Session B writes while A's command runs: journaled, so B's.
    write_tool(&root, B, "toolu_writeB", "b.txt", "from B\n");
    tick();
    // Nothing journals this one, and B was active: may be anyone's.
    fs::write(root.join("late.out"), "made after B became active\n").unwrap();
    bash(&root, A, "PostToolUse", "toolu_cmdA", "make");

    let c = children(&repo, "toolu_cmdA");
    assert_eq!(c.keys().collect::<Vec<_>>(), ["early.out", "late.out"], "{c:?}");
    assert!(c["early.out"].get("attribution").is_none(), "made while only A ran: certain: {c:?}");
    assert_eq!(c["late.out"]["attribution"], "uncertain", "{c:?}");
    assert!(c["late.out"].get("candidates").is_none(), "no other command was open: {c:?}");
    // recover lists b.txt nowhere as A's, and says which of A's is uncertain.
    let out = walj_at(&root).args(["log", "--json", "--all"]).output().unwrap();
    let log: Value = serde_json::from_slice(&out.stdout).unwrap();
    let b_entries: Vec<&Value> = log.as_array().unwrap().iter().filter(|e| e["path"] == "b.txt").collect();
    assert_eq!(b_entries.len(), 1, "b.txt is one entry, B's Write: {log}");
    assert_eq!(b_entries[0]["tool"], "Write", "{log}");
}

#[test]
fn two_overlapping_commands_list_a_change_once_naming_the_other() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    bash(&root, A, "PreToolUse", "toolu_cmdA", "build");
    fs::write(root.join("before_b.out"), "A alone\n").unwrap();
    tick();
    // Another session's command starts while A's runs (an async subagent is the same case
    // inside one session).
    bash(&root, B, "PreToolUse", "toolu_cmdB", "test");
    tick();
    fs::write(root.join("both.out"), "either\n").unwrap();
    bash(&root, A, "PostToolUse", "toolu_cmdA", "build");
    bash(&root, B, "PostToolUse", "toolu_cmdB", "test");

    let a = children(&repo, "toolu_cmdA");
    let b = children(&repo, "toolu_cmdB");
    assert_eq!(a.keys().collect::<Vec<_>>(), ["before_b.out", "both.out"], "{a:?}");
    assert!(a["before_b.out"].get("attribution").is_none(), "made before B began: certain: {a:?}");
    // Neither line (`build`, `test`) names it: undecided, counted in neither's changes.
    assert_eq!(a["both.out"]["attribution"], "undecided", "{a:?}");
    assert_eq!(a["both.out"]["candidates"], json!(["toolu_cmdB"]), "{a:?}");
    assert_eq!(a["both.out"]["candidate_commands"], json!(["test"]), "{a:?}");
    // Never two entries for one change: B's Post finds it claimed.
    assert!(b.is_empty(), "B listed again what A's entry holds: {b:?}");
    // The JSON report names the candidates.
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = rec.to_string();
    assert!(text.contains("\"candidates\":[\"toolu_cmdB\"]"), "{text}");
}

#[test]
fn two_killed_commands_that_overlapped_list_each_change_once() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    // The main thread's command and a subagent's, both cut off by the crash (no Post). The
    // hook's parent exits at once, so the session reads as crashed.
    bash(&root, A, "PreToolUse", "toolu_main", "echo m > main.log; sleep 60");
    fs::write(root.join("only_main.out"), "before the subagent's command\n").unwrap();
    tick();
    bash(&root, A, "PreToolUse", "toolu_sub", "echo s > sub.log; sleep 60");
    tick();
    fs::write(root.join("main.log"), "m\n").unwrap();
    fs::write(root.join("sub.log"), "s\n").unwrap();

    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let main = children(&repo, "toolu_main");
    let sub = children(&repo, "toolu_sub");
    // Each change once, under the command whose line names the file (both were open).
    assert_eq!(main.keys().collect::<Vec<_>>(), ["main.log", "only_main.out"], "{main:?}");
    assert_eq!(sub.keys().collect::<Vec<_>>(), ["sub.log"], "a change is listed once: {sub:?}");
    assert!(main["only_main.out"].get("attribution").is_none(), "{main:?}");
    // Made after the session's last record (the subagent's Pre) and nothing watched: the clock
    // cannot move a file its command names out of it (its processes may still have run), but
    // the other command's window was open too: uncertain, naming it.
    assert_eq!(main["main.log"]["attribution"], "uncertain", "{main:?}");
    assert_eq!(main["main.log"]["candidates"], json!(["toolu_sub"]), "{main:?}");
    assert_eq!(sub["sub.log"]["attribution"], "uncertain", "{sub:?}");
    assert_eq!(sub["sub.log"]["candidates"], json!(["toolu_main"]), "{sub:?}");
    // A second reader does not add them again.
    let again = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(again.status.success());
    let all_children = repo.records().into_iter().filter(|r| r["parent"].is_string()).count();
    assert_eq!(all_children, 3, "{:?}", repo.records());
}

/// A Bash hook payload of `session` with its transcript at `transcript`.
fn bash_with_transcript(root: &Path, session: &str, id: &str, command: &str, transcript: &Path) {
    let p = json!({
        "hook_event_name": "PreToolUse", "session_id": session, "transcript_path": transcript,
        "cwd": root, "tool_name": "Bash", "tool_use_id": id,
        "tool_input": {"command": command, "description": "test"},
    });
    hook(root, &p);
}

/// Session A in `root` with the watcher off (ctime and the transcript are the only clocks) and
/// its first prompt, naming a transcript whose later writes are Claude Code's signs of life.
/// Returns the transcript (its folder must outlive the test).
fn unwatched_session(root: &Path, prompt: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    fs::create_dir_all(root.join(".walj")).unwrap();
    fs::write(root.join(".walj/config.toml"), "[bash]\nwatcher = false\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    fs::write(&transcript, "{}\n").unwrap();
    hook(
        root,
        &json!({"hook_event_name": "UserPromptSubmit", "session_id": A, "transcript_path": transcript,
                "cwd": root, "prompt": prompt}),
    );
    (dir, transcript)
}

#[test]
fn the_users_edits_after_a_crash_are_not_the_killed_commands_and_say_what_walj_cannot_tell() {
    let repo = Repo::new(&[("a.txt", "x\n"), ("README.md", "# readme\n"), ("notes.txt", "n\n")]);
    let root = repo.root.clone();
    // The case without the watcher (with one, whether it named the session before the hook's
    // process ended is a race under load: 1 run in 4 saw the end, and the words differ).
    let (_dir, transcript) = unwatched_session(&root, "fix a.txt");
    let cmd = "sed -i s/x/y/ a.txt && sleep 60";
    bash_with_transcript(&root, A, "toolu_sed", cmd, &transcript);
    // The command's own work, then Claude Code still alive (it writes its transcript), then
    // the crash.
    fs::write(root.join("a.txt"), "y\n").unwrap();
    tick();
    fs::write(&transcript, "{}\n{}\n").unwrap();
    std::thread::sleep(Duration::from_millis(150));
    // The user, after the crash and before walj first looks.
    fs::write(root.join("README.md"), "# readme\nthe user's line\n").unwrap();
    fs::remove_file(root.join("notes.txt")).unwrap();

    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = children(&repo, "toolu_sed");
    assert_eq!(c.keys().collect::<Vec<_>>(), ["README.md", "a.txt", "notes.txt"], "{c:?}");
    assert!(c["a.txt"].get("attribution").is_none(), "made while Claude Code lived: the command's: {c:?}");
    for p in ["README.md", "notes.txt"] {
        assert_eq!(c[p]["attribution"], "after_stop", "{p}: {c:?}");
    }
    // Each carries its change's time, not walj's first look.
    let changed = c["README.md"]["changed"].as_str().unwrap();
    assert!(changed < c["README.md"]["ts"].as_str().unwrap(), "{c:?}");
    assert!(c["a.txt"]["changed"].as_str().unwrap() < changed, "{c:?}");

    // The words: what ran, no "applied" moment, no "may not have run"; what walj cannot tell.
    let text = walj_at(&root).args(["recover", "--color", "never"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains(&format!("changed on disk by a command that never finished: `{cmd}`")), "{text}");
    assert!(text.contains("walj cannot tell without its watcher"), "{text}");
    assert!(!text.contains("may not have run"), "{text}");

    // `revert --session` leaves the user's work alone: the after-stop entries need their id
    // and --force.
    // and --force. The session's certain work is reverted; each left-out entry is said, with
    // why and how to revert it by id.
    let out = walj_at(&root).args(["revert", "--session", A, "--yes"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "x\n", "the command's own change stays: {err}");
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\nthe user's line\n");
    assert!(!root.join("notes.txt").exists(), "the user's deletion was undone");
    assert!(err.contains("2 entries left out of --session: walj is not sure they are Claude's work"), "{err}");
    for p in ["README.md", "notes.txt"] {
        let line = err.lines().find(|l| l.contains(&format!("({p}):"))).unwrap_or_else(|| panic!("{p}: {err}"));
        assert!(
            line.contains("changed after Claude Code's last sign of life") && line.contains("without its watcher"),
            "{line}"
        );
        assert!(line.contains("`walj revert ") && line.ends_with(" --force`"), "{line}");
    }
    // By its id, without --force: refused, saying why.
    let id = c["README.md"]["id"].as_str().unwrap();
    let out = walj_at(&root).args(["revert", id, "--yes"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success() && err.contains("made after Claude Code's last sign of life") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\nthe user's line\n");
}

/// An old walj meets an `attribution` value a newer one wrote: it reads it as uncertain (never
/// as the command's, certain work) and revert asks for --force.
#[test]
fn an_attribution_value_this_walj_does_not_know_reads_as_uncertain() {
    use walj::journal::{Blob, JournalWriter, Record};
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    bash(&root, A, "PreToolUse", "toolu_old", "make");
    bash(&root, A, "PostToolUse", "toolu_old", "make");
    fs::write(root.join("f.txt"), "f\n").unwrap();
    let mut r = Record::new("applied", A);
    r.id = "child-from-a-newer-walj".into();
    r.tool = Some("Bash".into());
    r.event = "artifact_created".into();
    r.path = "f.txt".into();
    r.before = Some(Blob::Absent);
    r.after = Some(Blob::Id("0000000000000000000000000000000000000001".into()));
    r.parent = Some("toolu_old".into());
    let r = r.with("command", "make").with("attribution", "seen_by_a_watcher_in_2027");
    JournalWriter::new(&root.join(".walj/journal.jsonl")).append_all(&[r]).unwrap();

    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = rec.to_string();
    assert!(text.contains("\"attribution\":\"uncertain\""), "{text}");
    let out = walj_at(&root).args(["revert", "child-from-a-newer-walj", "--yes"]).output().unwrap();
    assert!(!out.status.success(), "an uncertain entry reverted without --force");
    assert!(root.join("f.txt").exists());
}

/// One event of the subagent `agent` (its payloads carry `agent_id` and `agent_type`).
fn as_subagent(mut p: Value, agent: &str) -> Value {
    p["agent_id"] = json!(agent);
    p["agent_type"] = json!("general-purpose");
    p
}

#[test]
fn an_async_subagents_work_is_its_own_and_one_still_running_when_the_session_died_is_said() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    let agent = "a7f3c2e9d1b04f66";
    let call = |event: &str, response: Option<Value>| {
        let mut p = json!({
            "hook_event_name": event, "session_id": A, "transcript_path": "/tmp/none.jsonl", "cwd": root,
            "tool_name": "Agent", "tool_use_id": "toolu_agent",
            "tool_input": {"description": "write the sub log", "prompt": "echo s > sub.log, then wait",
                           "subagent_type": "general-purpose"},
        });
        if let Some(r) = response {
            p["tool_response"] = r;
        }
        p
    };
    hook(&root, &call("PreToolUse", None));
    hook(&root, &call("PostToolUse", Some(json!({"isAsync": true, "status": "async_launched", "agentId": agent}))));
    // The main thread's command finishes; the subagent's runs on and is cut off by the crash.
    bash(&root, A, "PreToolUse", "toolu_main", "sleep 2");
    bash(&root, A, "PostToolUse", "toolu_main", "sleep 2");
    let sub = as_subagent(
        json!({"hook_event_name": "PreToolUse", "session_id": A, "transcript_path": "/tmp/none.jsonl", "cwd": root,
               "tool_name": "Bash", "tool_use_id": "toolu_sub",
               "tool_input": {"command": "echo s > sub.log; sleep 60", "description": "sub"}}),
        agent,
    );
    hook(&root, &sub);
    fs::write(root.join("sub.log"), "s\n").unwrap();

    // Every record of the subagent's call names it; the Agent call is journaled.
    let records = repo.records();
    let intent = records.iter().find(|r| r["id"] == "toolu_sub" && r["op"] == "intent").unwrap();
    assert_eq!((&intent["agent_id"], &intent["agent_type"]), (&json!(agent), &json!("general-purpose")), "{intent}");
    let launch: Vec<&Value> = records.iter().filter(|r| r["kind"] == "subagent").collect();
    assert_eq!(launch.len(), 2, "{records:?}");
    assert_eq!((&launch[0]["status"], &launch[1]["status"]), (&json!("start"), &json!("async_launched")));
    assert_eq!(launch[1]["target"], agent);

    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let subs = &rec["sessions"][0]["subagents"];
    assert_eq!(subs.as_array().map(Vec::len), Some(1), "{rec:#}");
    assert_eq!((&subs[0]["agent_id"], &subs[0]["call"]), (&json!(agent), &json!("toolu_agent")), "{rec:#}");
    assert_eq!(subs[0]["running_at_death"], true, "{rec:#}");
    // sub.log is the subagent's command's, not credited to the main thread's finished command.
    assert!(children(&repo, "toolu_main").is_empty(), "{:?}", children(&repo, "toolu_main"));
    let c = children(&repo, "toolu_sub");
    assert_eq!(c.keys().collect::<Vec<_>>(), ["sub.log"], "{c:?}");
    assert_eq!(c["sub.log"]["agent_id"], agent, "{c:?}");
    let text = walj_at(&root).args(["recover", "--color", "never"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains(
            "subagent general-purpose \"write the sub log\", in the background: still running when the session died"
        ),
        "{text}"
    );
    assert!(text.contains("by subagent [a7f3c2e9]"), "{text}");
    // Its killed foreground command is not one of the session's background processes.
    let procs = walj_at(&root).args(["procs", "--json"]).output().unwrap();
    let procs = String::from_utf8_lossy(&procs.stdout).into_owned();
    assert!(!procs.contains("toolu_sub"), "{procs}");
}

/// Claude Code 2.1.332's `PreSkillShellCommand` (a skill's `!` line): no Post follows, so its
/// window closes at the session's next hook event, and what changed in it is the line's.
#[test]
fn a_skills_shell_line_is_journaled_and_its_window_closes_at_the_next_event() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    let payload = json!({
        "hook_event_name": "PreSkillShellCommand", "session_id": A, "transcript_path": "/tmp/none.jsonl",
        "cwd": root, "tool_name": "Bash", "tool_use_id": "skill_sh_1",
        "tool_input": {"command": "date > stamp.out"}, "command_name": "release-notes", "invoked_by": "user",
    });
    hook(&root, &payload);
    fs::write(root.join("stamp.out"), "Wed Dec  2\n").unwrap();
    tick();
    hook(
        &root,
        &json!({"hook_event_name": "UserPromptSubmit", "session_id": A, "transcript_path": "/tmp/none.jsonl",
                "cwd": root, "prompt": "go on"}),
    );
    let records = repo.records();
    let intent = records.iter().find(|r| r["id"] == "skill_sh_1" && r["op"] == "intent").unwrap();
    assert_eq!(
        (&intent["command"], &intent["skill"], &intent["invoked_by"]),
        (&json!("date > stamp.out"), &json!("release-notes"), &json!("user")),
        "{intent}"
    );
    let outcome = records.iter().find(|r| r["id"] == "skill_sh_1" && r["op"] == "applied").unwrap();
    assert_eq!(outcome["closed_by"], "UserPromptSubmit", "{outcome}");
    let c = children(&repo, "skill_sh_1");
    assert_eq!(c.keys().collect::<Vec<_>>(), ["stamp.out"], "{c:?}");
    assert!(c["stamp.out"].get("attribution").is_none(), "{c:?}");
    // Closed once: a later event adds nothing.
    hook(
        &root,
        &json!({"hook_event_name": "Stop", "session_id": A, "transcript_path": "/tmp/none.jsonl", "cwd": root}),
    );
    let again = repo.records().into_iter().filter(|r| r["id"] == "skill_sh_1").count();
    assert_eq!(again, 2, "{:?}", repo.records());
}

/// The async-subagent case seen with the real CLI: a subagent's `echo s > sub.txt; sleep 90`
/// opened first, then the main thread's loop wrote `out/o1.txt`…`out/o3.txt`, and Claude Code
/// was killed with both running. The loop's line names the folder and a pattern matching the
/// files: they are its, never "by subagent", and each command's count holds its own only.
#[test]
fn a_subagents_sleep_does_not_take_the_main_threads_loop_files() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    let sub_cmd = "echo s > sub.txt; sleep 90";
    let main_cmd = "mkdir -p out; for i in 1 2 3; do echo $i > out/o$i.txt; done; sleep 60";
    let pre = |id: &str, command: &str| {
        json!({
            "hook_event_name": "PreToolUse", "session_id": A, "transcript_path": "/tmp/none.jsonl",
            "cwd": root, "tool_name": "Bash", "tool_use_id": id,
            "tool_input": {"command": command, "description": "test"},
        })
    };
    hook(&root, &as_subagent(pre("toolu_sub", sub_cmd), "a7f3c2e9d1b04f66"));
    fs::write(root.join("sub.txt"), "s\n").unwrap();
    tick();
    hook(&root, &pre("toolu_main", main_cmd));
    tick();
    fs::create_dir(root.join("out")).unwrap();
    for i in 1..=3 {
        fs::write(root.join(format!("out/o{i}.txt")), format!("{i}\n")).unwrap();
    }
    // Claude Code lived on a moment (a journaled Write), then died.
    tick();
    write_tool(&root, A, "toolu_w", "w.txt", "w\n");

    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let main = children(&repo, "toolu_main");
    let sub = children(&repo, "toolu_sub");
    assert_eq!(main.keys().collect::<Vec<_>>(), ["out/o1.txt", "out/o2.txt", "out/o3.txt"], "{main:?}");
    assert_eq!(sub.keys().collect::<Vec<_>>(), ["sub.txt"], "{sub:?}");
    for (p, r) in &main {
        assert!(r.get("agent_id").is_none(), "{p} is the main thread's, not the subagent's: {r}");
        assert_ne!(r["attribution"], "undecided", "{p}: the loop's line names it: {r}");
        // The subagent's command was open too: named, by its line as well as its id.
        assert_eq!(r["candidates"], json!(["toolu_sub"]), "{p}: {r}");
        assert_eq!(r["candidate_commands"], json!([sub_cmd]), "{p}: {r}");
    }
    assert_eq!(sub["sub.txt"]["agent_id"], "a7f3c2e9d1b04f66", "{sub:?}");
    // recover names the other command by its line, never by its tool-call id.
    let text = walj_at(&root).args(["recover", "--color", "never"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let entries: Vec<&str> = text.lines().filter(|l| l.contains("in_flight") && l.contains("out/o")).collect();
    assert_eq!(entries.len(), 3, "{text}");
    for line in entries {
        let marks = recover_marks(&text, line);
        assert!(!marks.contains("by subagent"), "{marks}\n{text}");
        assert!(!marks.contains("toolu_"), "a candidate named by its id: {marks}\n{text}");
        assert!(marks.contains(&format!("or `{sub_cmd}`'s: they ran at the same time")), "{marks}\n{text}");
    }
    // The three changes share their marks: each is said once, below, not on every line.
    assert_eq!(text.matches("they ran at the same time").count(), 1, "{text}");
    // Each command counts its own.
    // (on one line when it fits, else the command on the next)
    let counts = |cmd: &str, n: &str| {
        text.contains(&format!("{cmd} — {n} since it started"))
            || text.contains(&format!("— {n} since it started\n      {cmd}"))
    };
    assert!(counts(sub_cmd, "1 change"), "{text}");
    assert!(counts(main_cmd, "3 changes"), "{text}");
}

/// The same scene in the other order (seen with the real CLI under load, 1 run in 30): the main
/// thread's `echo waiting; sleep 2` opens first and finishes while the async subagent's
/// `echo s > sub.txt; sleep 90` runs. The file was created after the subagent's snapshot
/// looked, but that snapshot's hook had waited long before it looked (for the watcher, on a
/// loaded machine: simulated by a larger `ms` in its sidecar), and its time plus its duration
/// put "when it finished looking" after the file's ctime. Its snapshot did not hold
/// `sub.txt`, so the subagent's own comparison is sure to list it: the finished `sleep 2`
/// leaves it to the command whose line names it, and never keeps it as "undecided".
#[test]
fn a_finished_command_leaves_a_file_to_the_open_command_whose_snapshot_had_not_seen_it() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    let sub_cmd = "echo s > sub.txt; sleep 90";
    bash(&root, A, "PreToolUse", "toolu_wait", "echo waiting; sleep 2");
    tick();
    let pre = json!({
        "hook_event_name": "PreToolUse", "session_id": A, "transcript_path": "/tmp/none.jsonl",
        "cwd": root, "tool_name": "Bash", "tool_use_id": "toolu_sub",
        "tool_input": {"command": sub_cmd, "description": "test"},
    });
    hook(&root, &as_subagent(pre, "a7f3c2e9d1b04f66"));
    fs::write(root.join("sub.txt"), "s\n").unwrap();
    // The subagent's hook took 5 s from its first look at the checkout.
    let sidecar = root.join(format!(".walj/bash/{A}-toolu_sub.json"));
    let mut snap: Value = serde_json::from_str(&fs::read_to_string(&sidecar).unwrap()).unwrap();
    snap["ms"] = json!(snap["ms"].as_u64().unwrap() + 5_000);
    fs::write(&sidecar, serde_json::to_string(&snap).unwrap()).unwrap();
    tick();
    bash(&root, A, "PostToolUse", "toolu_wait", "echo waiting; sleep 2");
    assert!(children(&repo, "toolu_wait").is_empty(), "the finished sleep kept {:?}", children(&repo, "toolu_wait"));
    // Claude Code lived on a moment (a journaled Write), then died.
    tick();
    write_tool(&root, A, "toolu_w", "w.txt", "w\n");
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sub = children(&repo, "toolu_sub");
    assert_eq!(sub.keys().collect::<Vec<_>>(), ["sub.txt"], "{:#?}", repo.records());
    assert_ne!(sub["sub.txt"]["attribution"], "undecided", "{sub:?}");
    assert_eq!(sub["sub.txt"]["agent_id"], "a7f3c2e9d1b04f66", "{sub:?}");
}

/// Two killed commands open at a change, neither of whose lines names the file, its folder or
/// a pattern matching it: "uncertain: A or B", listed once, counted in neither's changes.
#[test]
fn a_change_no_open_command_names_is_undecided_and_counted_in_neither() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    bash(&root, A, "PreToolUse", "toolu_one", "sleep 60");
    tick();
    bash(&root, A, "PreToolUse", "toolu_two", "sleep 61");
    tick();
    fs::write(root.join("who.out"), "either\n").unwrap();
    tick();
    write_tool(&root, A, "toolu_w", "w.txt", "w\n");

    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let one = children(&repo, "toolu_one");
    let two = children(&repo, "toolu_two");
    assert_eq!(one.keys().collect::<Vec<_>>(), ["who.out"], "listed once, under the first: {one:?}");
    assert!(two.is_empty(), "{two:?}");
    assert_eq!(one["who.out"]["attribution"], "undecided", "{one:?}");
    assert_eq!(one["who.out"]["candidates"], json!(["toolu_two"]), "{one:?}");
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rec.to_string().contains("\"attribution\":\"undecided\""), "{rec}");

    let text = walj_at(&root).args(["recover", "--color", "never"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let line =
        text.lines().find(|l| l.contains("in_flight") && l.contains("who.out")).unwrap_or_else(|| panic!("{text}"));
    let marks = recover_marks(&text, line);
    assert!(marks.contains("uncertain: `sleep 60` or `sleep 61`"), "{marks}");
    assert!(marks.contains("counted in neither's changes"), "{marks}");
    // Neither command counts it among its changes.
    for l in text.lines().filter(|l| l.contains("command never finished")) {
        assert!(!l.contains("1 change"), "{l}\n{text}");
    }
    // revert --session leaves it out (it may be either's; by its id with --force).
    let out = walj_at(&root).args(["revert", "--session", A, "--yes"]).output().unwrap();
    assert!(root.join("who.out").exists(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// After a crash, walj saw the killed command's processes gone: a later session's changes
/// never name it as a possible author, finished (its Post) or killed (a second crash).
#[test]
fn a_dead_sessions_command_is_no_suspect_after_its_processes_ended() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    // Session A: its command is killed with Claude Code; nothing runs on.
    bash(&root, A, "PreToolUse", "toolu_dead", "sleep 100");
    tick();
    // The next session's start: a reader looks, and sees the command's processes gone.
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    tick();
    // Session B: a finished command.
    bash(&root, B, "PreToolUse", "toolu_b1", "make");
    fs::write(root.join("b1.out"), "b\n").unwrap();
    bash(&root, B, "PostToolUse", "toolu_b1", "make");
    let b1 = children(&repo, "toolu_b1");
    assert!(b1["b1.out"].get("attribution").is_none(), "the dead command is no suspect: {b1:?}");
    // Then a command killed in B's own crash, after which B still wrote (a journaled Write).
    tick();
    bash(&root, B, "PreToolUse", "toolu_b2", "make install");
    fs::write(root.join("b2.out"), "b\n").unwrap();
    tick();
    write_tool(&root, B, "toolu_w", "w.txt", "w\n");
    tick();
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let b2 = children(&repo, "toolu_b2");
    assert!(b2["b2.out"].get("candidates").is_none(), "{b2:?}");
    assert!(b2["b2.out"].get("attribution").is_none(), "{b2:?}");
    // What closed the dead command's window: walj saw its processes gone, once.
    let gone = repo.records().into_iter().filter(|r| r["kind"] == "gone" && r["target"] == "toolu_dead").count();
    assert_eq!(gone, 1, "{:?}", repo.records());
}

/// Claude Code writes an Edit through `<file>.tmp.<pid>.<hex>` and renames it within the
/// call; killed in between, the temporary file is left. It is part of that (journaled) call,
/// never a change of a command that ran beside it.
#[test]
fn claude_codes_temporary_file_is_never_an_entry() {
    let repo = Repo::new(&[("src/m.py", "a = 1\n")]);
    let root = repo.root.clone();
    let edit = |id: &str| {
        json!({
            "hook_event_name": "PreToolUse", "session_id": A, "transcript_path": "/tmp/none.jsonl",
            "cwd": root, "tool_name": "Edit", "tool_use_id": id,
            "tool_input": {"file_path": root.join("src/m.py"), "old_string": "a = 1", "new_string": "a = 2"},
        })
    };
    // A finished command beside an Edit cut off mid-write.
    bash(&root, A, "PreToolUse", "toolu_fin", "make");
    hook(&root, &edit("toolu_edit1"));
    fs::write(root.join("src/m.py.tmp.4242.a1b2c3d4"), "a = 2\n").unwrap();
    fs::write(root.join("made.out"), "m\n").unwrap();
    bash(&root, A, "PostToolUse", "toolu_fin", "make");
    let fin = children(&repo, "toolu_fin");
    assert_eq!(fin.keys().collect::<Vec<_>>(), ["made.out"], "{fin:?}");
    // A killed one, in the crash.
    fs::remove_file(root.join("src/m.py.tmp.4242.a1b2c3d4")).unwrap();
    bash(&root, A, "PreToolUse", "toolu_killed", "make test");
    hook(&root, &edit("toolu_edit2"));
    fs::write(root.join("src/m.py.tmp.4243.ffee0011"), "a = 2\n").unwrap();
    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(".tmp.4243."), "{}", String::from_utf8_lossy(&out.stdout));
    let killed = children(&repo, "toolu_killed");
    assert!(killed.is_empty(), "{killed:?}");
}

/// Metadata never re-dates content: the killed command wrote `a.txt` and `b.txt` while Claude
/// Code lived; after the crash, before walj first looks, a same-mode `chmod` and a `touch -r`
/// move their ctimes. Without the watcher's log the ctime can only make them uncertain
/// (`redated`), never "made after Claude Code stopped"; the user's own edit stays after-stop.
#[test]
fn a_chmod_or_touch_after_the_crash_never_makes_the_commands_change_after_stop() {
    let repo = Repo::new(&[("a.txt", "x\n"), ("b.txt", "x\n"), ("c.txt", "x\n")]);
    let root = repo.root.clone();
    // The case without the watcher's log (the watcher logs a chmod as a content change today,
    // and whether it has started before the writes is a race): ctime is the only clock.
    // The prompt names the session's transcript, whose later write is Claude Code's last sign
    // of life (without it the last sign is the command's own intent, a race with its writes).
    let (_dir, transcript) = unwatched_session(&root, "make a.txt and b.txt y");
    // The command names no file (a script does the work): only the clocks speak. (A command
    // that names them keeps them: a_codemod_that_outlasts_the_last_sign_of_life_keeps_the_files_it_names.)
    bash_with_transcript(&root, A, "toolu_sed", "sh ./fix.sh && sleep 60", &transcript);
    fs::write(root.join("a.txt"), "y\n").unwrap();
    fs::write(root.join("b.txt"), "y\n").unwrap();
    tick();
    fs::write(&transcript, "{}\n{}\n").unwrap();
    std::thread::sleep(Duration::from_millis(150));
    // After the crash: metadata only, then the user's real edit.
    // `chmod` to the mode it has: only the ctime moves.
    let same = fs::metadata(root.join("a.txt")).unwrap().permissions();
    fs::set_permissions(root.join("a.txt"), same).unwrap();
    // `touch -r a.txt b.txt`: b.txt's times set to a.txt's (its ctime moves to now).
    let reference = fs::metadata(root.join("a.txt")).unwrap().modified().unwrap();
    fs::File::options().write(true).open(root.join("b.txt")).unwrap().set_modified(reference).unwrap();
    fs::write(root.join("c.txt"), "the user's\n").unwrap();

    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = children(&repo, "toolu_sed");
    assert_eq!(c.keys().collect::<Vec<_>>(), ["a.txt", "b.txt", "c.txt"], "{c:?}");
    for p in ["a.txt", "b.txt"] {
        assert_ne!(c[p]["attribution"], "after_stop", "{p}: metadata re-dated the content: {c:?}");
        assert_eq!(c[p]["attribution"], "redated", "{p}: {c:?}");
    }
    assert_eq!(c["c.txt"]["attribution"], "after_stop", "{c:?}");
    let text = walj_at(&root).args(["recover", "--color", "never"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let line =
        text.lines().find(|l| l.contains("in_flight") && l.contains(" a.txt ")).unwrap_or_else(|| panic!("{text}"));
    assert!(recover_marks(&text, line).contains("its mtime is not"), "{line}\n{text}");
}

/// A codemod that outlasts Claude Code's last sign of life: Claude Code waits in silence while
/// `find … -exec sed` works through the files (or dies, and the orphan goes on), so most of the
/// command's changes come after the session's last journal record and transcript write. Without
/// a watcher that saw Claude Code end, that clock never moves a change the command's own text
/// names out of the command: `revert --session` restores every file. A file the command does not
/// name, changed after the last sign of life, stays "not sure" (the user's, after the crash).
#[test]
fn a_codemod_that_outlasts_the_last_sign_of_life_keeps_the_files_it_names() {
    let files: Vec<(String, String)> = (0..20).map(|i| (format!("src/f{i:02}.txt"), format!("old {i}\n"))).collect();
    let mut refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    refs.push(("notes.md", "n\n"));
    let repo = Repo::new(&refs);
    let root = repo.root.clone();
    let (_dir, transcript) = unwatched_session(&root, "rename old to new");
    let cmd = "find src -name '*.txt' -exec sed -i 's/old/new/' {} + && sleep 60";
    bash_with_transcript(&root, A, "toolu_codemod", cmd, &transcript);
    let sed = |range: std::ops::Range<usize>| {
        for i in range {
            fs::write(root.join(format!("src/f{i:02}.txt")), format!("new {i}\n")).unwrap();
        }
    };
    sed(0..5);
    tick();
    // Claude Code's last write: after it, only the command's own processes.
    fs::write(&transcript, "{}\n{}\n").unwrap();
    std::thread::sleep(Duration::from_millis(150));
    sed(5..20);
    // The user, after the crash.
    fs::write(root.join("notes.md"), "the user's\n").unwrap();

    let out = walj_at(&root).args(["recover", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = children(&repo, "toolu_codemod");
    assert_eq!(c.len(), 21, "{:?}", c.keys().collect::<Vec<_>>());
    for (p, _) in &files {
        assert!(c[p].get("attribution").is_none(), "{p}: the command names it: {:?}", c[p]);
    }
    assert_eq!(c["notes.md"]["attribution"], "after_stop", "{c:?}");

    let out = walj_at(&root).args(["revert", "--session", A, "--yes"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    for (p, old) in &files {
        assert_eq!(fs::read_to_string(root.join(p)).unwrap(), *old, "{p}: {err}");
    }
    assert_eq!(fs::read_to_string(root.join("notes.md")).unwrap(), "the user's\n");
    assert!(err.contains("1 entry left out of --session"), "{err}");
}
