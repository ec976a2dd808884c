//! `walj import` and `walj recover --from-transcripts` (issue 6) on the real Claude Code
//! transcripts in ../shared/fixtures/transcripts, run through the real binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{Parent, blob_bytes, fixtures, hook_ok, journal_scan, walj_at};
use serde_json::{Value, json};
use walj::journal::Record;
use walj::store::Store;

fn transcript(name: &str) -> PathBuf {
    fixtures().join("transcripts").join(name)
}

const V1: &str = "cc-1.0.111-edit-multiedit-todo.jsonl";
const V2: &str = "cc-2.0.69-edit-file-history.jsonl";
const V3: &str = "cc-2.1.328-killed-mid-bash.jsonl";

/// An empty project folder (`<tmp>/proj`, not a git repository).
fn project() -> (tempfile::TempDir, PathBuf) {
    let (dir, tmp) = crate::common::scratch();
    let root = tmp.join("proj");
    fs::create_dir_all(&root).unwrap();
    (dir, root)
}

/// `walj --project ROOT ARGS` with a private Claude Code folder (`cfg`).
fn walj(root: &Path, cfg: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    walj_at(root).env("CLAUDE_CONFIG_DIR", cfg).args(args).assert()
}

fn stdout(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&a.get_output().stdout).into_owned()
}

/// The journal's records; the journal must read without a problem.
fn records(root: &Path) -> Vec<Record> {
    let (records, problems) = journal_scan(root);
    assert!(problems.is_empty(), "{problems:?}");
    records
}

fn fixture_lines(name: &str) -> Vec<Value> {
    fs::read_to_string(transcript(name)).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// (tool_use id, name, input) in order.
type Uses = Vec<(String, String, Value)>;

/// The tool calls of a transcript and their results (tool_use id → toolUseResult).
fn calls(lines: &[Value]) -> (Uses, HashMap<String, Value>) {
    let mut uses = Vec::new();
    let mut results = HashMap::new();
    for l in lines {
        // Only conversation lines (newer versions also log API requests, which repeat blocks).
        if l["type"] != "user" && l["type"] != "assistant" {
            continue;
        }
        let Some(content) = l["message"]["content"].as_array() else { continue };
        for b in content {
            if b["type"] == "tool_use" {
                uses.push((
                    b["id"].as_str().unwrap().to_string(),
                    b["name"].as_str().unwrap().to_string(),
                    b["input"].clone(),
                ));
            }
            if b["type"] == "tool_result" {
                results.insert(b["tool_use_id"].as_str().unwrap().to_string(), l["toolUseResult"].clone());
            }
        }
    }
    (uses, results)
}

#[test]
fn every_file_call_and_todo_of_every_fixture_is_imported_with_its_original_content() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let a = walj(
        &root,
        &cfg,
        &[
            "import",
            transcript(V1).to_str().unwrap(),
            transcript(V2).to_str().unwrap(),
            transcript(V3).to_str().unwrap(),
        ],
    )
    .success();
    let out = stdout(&a);
    assert!(out.contains("in flight Bash echo started > run.log; sleep 60"), "{out}");
    let recs = records(&root);
    assert!(recs.iter().all(|r| r.extra.get("imported") == Some(&json!(true))), "every record is marked imported");
    let mut file_calls = 0;
    let mut todos = 0;
    for name in [V1, V2, V3] {
        let lines = fixture_lines(name);
        let origin = lines.iter().find_map(|l| l["cwd"].as_str()).unwrap().to_string();
        let (uses, results) = calls(&lines);
        for (id, tool, input) in uses {
            match tool.as_str() {
                "Edit" | "Write" | "MultiEdit" => {
                    file_calls += 1;
                    let intent = recs
                        .iter()
                        .find(|r| r.id == id && r.op == "intent")
                        .unwrap_or_else(|| panic!("{id}: no intent"));
                    // Paths are project-relative, remapped from the transcript's own folder.
                    let fp = input["file_path"].as_str().unwrap();
                    let rel = fp.strip_prefix(&format!("{origin}/")).unwrap();
                    assert_eq!(intent.path, rel, "{id}");
                    assert_eq!(intent.tool.as_deref(), Some(tool.as_str()));
                    let res = &results[&id];
                    let original = res
                        .get("originalFile")
                        .or_else(|| res.get("originalFileContents"))
                        .unwrap_or_else(|| panic!("{id}: {res}"));
                    let pre = blob_bytes(&root, &intent.before);
                    match original {
                        Value::String(s) => assert_eq!(pre.as_deref(), Some(s.as_bytes()), "{id}: pre-image"),
                        Value::Null => assert_eq!(pre, None, "{id}: created"),
                        other => panic!("{other}"),
                    }
                    let applied = recs
                        .iter()
                        .find(|r| r.id == id && r.op == "applied")
                        .unwrap_or_else(|| panic!("{id}: no applied"));
                    assert_eq!(applied.path, rel);
                    let post = blob_bytes(&root, &applied.after).expect("post-image");
                    if tool == "Write" {
                        assert_eq!(post, input["content"].as_str().unwrap().as_bytes());
                    } else {
                        // The edit's new text is in the computed post-image, its old text is gone.
                        let new = input["new_string"].as_str().or(input["edits"][0]["new_string"].as_str()).unwrap();
                        assert!(String::from_utf8(post).unwrap().contains(new), "{id}: post-image");
                    }
                }
                "TodoWrite" => {
                    todos += 1;
                    let t = recs
                        .iter()
                        .find(|r| r.id == id && r.kind.as_deref() == Some("todos"))
                        .unwrap_or_else(|| panic!("{id}: no todo snapshot"));
                    assert_eq!(t.op, "session");
                    assert_eq!(t.extra["todos"], input["todos"]);
                }
                _ => {}
            }
        }
    }
    assert_eq!((file_calls, todos), (6, 2), "fixtures: 3 Edit + 1 MultiEdit + 1 Edit + 1 Write, 2 TodoWrite");
    // The chain is consistent: the MultiEdit's original content is the first Edit's computed result.
    let edit = recs.iter().find(|r| r.id == "toolu_01Sq3QikthL6hZC6Hpk6wrAs" && r.op == "applied").unwrap();
    let multi = recs.iter().find(|r| r.id == "toolu_01WjJZBWBwRe4EMgwU4AWMLh" && r.op == "intent").unwrap();
    assert_eq!(edit.after, multi.before);

    // Sessions: one start each, marked imported, with prompts; status unknown (no process).
    let starts: Vec<&Record> = recs.iter().filter(|r| r.kind.as_deref() == Some("start")).collect();
    assert_eq!(starts.len(), 3);
    assert!(starts.iter().all(|s| s.get_str("source") == Some("import")));
    let v: Value = serde_json::from_str(&stdout(&walj(&root, &cfg, &["recover", "--json"]).success())).unwrap();
    let sessions = v["sessions"].as_array().unwrap();
    assert!(sessions.iter().all(|s| s["imported"] == json!(true) && s["state"] == json!("unknown")), "{v:#}");
    // The 2.0.69 session ended its turn with an answer: settled. The cut 2.1.328 one keeps its
    // Edit and Write open; the 1.0.111 one was interrupted by the user: open too.
    let open: Vec<&str> =
        sessions.iter().flat_map(|s| s["entries"].as_array().unwrap()).map(|e| e["id"].as_str().unwrap()).collect();
    assert!(!open.contains(&"toolu_013JnBoRSqxCShSX71epQz9K"), "{open:?}");
    assert!(open.contains(&"toolu_mock_0_0") && open.contains(&"toolu_mock_1_0"), "{open:?}");
    let bash = recs.iter().filter(|r| r.id == "toolu_mock_2_0").collect::<Vec<_>>();
    assert_eq!(bash.len(), 1, "the killed Bash call has an intent and nothing else");
    assert_eq!(bash[0].get_str("command"), Some("echo started > run.log; sleep 60"));
    let text = stdout(&walj(&root, &cfg, &["recover"]).success());
    assert!(text.contains("command in flight: echo started > run.log; sleep 60"), "{text}");
    assert!(text.contains("imported"), "{text}");
}

#[test]
fn importing_twice_adds_nothing() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let all = [transcript(V1), transcript(V2), transcript(V3)];
    let args: Vec<&str> = std::iter::once("import").chain(all.iter().map(|p| p.to_str().unwrap())).collect();
    walj(&root, &cfg, &args).success();
    let journal = fs::read(root.join(".walj/journal.jsonl")).unwrap();
    let objects = Store::new(root.join(".walj/store")).ids().unwrap().len();
    let a = walj(&root, &cfg, &args).success();
    assert!(stdout(&a).contains("Imported 0 records"), "{}", stdout(&a));
    assert_eq!(fs::read(root.join(".walj/journal.jsonl")).unwrap(), journal);
    assert_eq!(Store::new(root.join(".walj/store")).ids().unwrap().len(), objects);
    let v: Value =
        serde_json::from_str(&stdout(&walj(&root, &cfg, &["import", "--json", all[0].to_str().unwrap()]).success()))
            .unwrap();
    assert_eq!(v["imports"][0]["report"]["added"], json!(0));
    assert_eq!(v["imports"][0]["report"]["existing"], json!(10));
}

/// The first `n` lines of a fixture and then half of line `n`.
fn cut(name: &str, n: usize, dest: &Path) {
    let text = fs::read_to_string(transcript(name)).unwrap();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = lines[..n].concat();
    out.push_str(&lines[n][..lines[n].len() / 2]);
    fs::write(dest, out).unwrap();
}

#[test]
fn a_torn_last_line_imports_everything_before_it_and_reports_the_call_in_flight() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let lines = fixture_lines(V1);
    // Line 31 is the result of the last Edit (HistoryLog.tsx): cut it in half.
    assert_eq!(lines[31]["message"]["content"][0]["tool_use_id"], json!("toolu_01A4gL6DmbUmYMWtEHy8mYjy"));
    let t = root.parent().unwrap().join("torn.jsonl");
    cut(V1, 31, &t);
    let a = walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    let out = stdout(&a);
    assert!(out.contains("cut short"), "{out}");
    assert!(out.contains("in flight Edit src/game/HistoryLog.tsx"), "{out}");
    let recs = records(&root);
    for id in ["toolu_01Sq3QikthL6hZC6Hpk6wrAs", "toolu_01WjJZBWBwRe4EMgwU4AWMLh"] {
        assert!(recs.iter().any(|r| r.id == id && r.op == "applied"), "{id} before the cut is imported");
    }
    assert!(recs.iter().any(|r| r.id == "toolu_01A8LEZ3iYSwkWFq7WMCoCAj" && r.kind.as_deref() == Some("todos")));
    let last = recs.iter().filter(|r| r.id == "toolu_01A4gL6DmbUmYMWtEHy8mYjy").collect::<Vec<_>>();
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].op, "intent");
    assert!(recs.iter().any(|r| r.kind.as_deref() == Some("torn_tail")), "the crash marker is kept");
    let v: Value = serde_json::from_str(&stdout(&walj(&root, &cfg, &["recover", "--json"]).success())).unwrap();
    let entries: Vec<&Value> = v["sessions"][0]["entries"].as_array().unwrap().iter().collect();
    let inflight = entries.iter().find(|e| e["id"] == json!("toolu_01A4gL6DmbUmYMWtEHy8mYjy")).unwrap();
    assert_eq!(inflight["status"], json!("in_flight"));

    // The complete transcript later (the session went on): the missing records join, once.
    let a = walj(&root, &cfg, &["import", transcript(V1).to_str().unwrap()]).success();
    assert!(!stdout(&a).contains("Imported 0 records"));
    let recs = records(&root);
    assert_eq!(recs.iter().filter(|r| r.id == "toolu_01A4gL6DmbUmYMWtEHy8mYjy" && r.op == "intent").count(), 1);
    assert!(recs.iter().any(|r| r.id == "toolu_01A4gL6DmbUmYMWtEHy8mYjy" && r.op == "applied"));
}

#[test]
fn file_history_backups_give_the_pre_image_of_a_call_cut_before_its_result() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let lines = fixture_lines(V2);
    let session = lines[2]["sessionId"].as_str().unwrap();
    let original = lines[7]["toolUseResult"]["originalFile"].as_str().unwrap();
    let backups = cfg.join("file-history").join(session);
    fs::create_dir_all(&backups).unwrap();
    fs::write(backups.join("4885eab57567133b@v1"), original).unwrap();
    let t = root.parent().unwrap().join("cut.jsonl");
    cut(V2, 7, &t); // line 7 is the Edit's result
    walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    let recs = records(&root);
    let intent = recs.iter().find(|r| r.id == "toolu_013JnBoRSqxCShSX71epQz9K").unwrap();
    assert_eq!(intent.op, "intent");
    assert_eq!(intent.path, "index.ts");
    assert_eq!(blob_bytes(&root, &intent.before).as_deref(), Some(original.as_bytes()));
    assert_eq!(intent.get_str("before_from"), Some("file_history"));
}

/// A fixture as if recorded in `root` (its folder replaced).
fn relocated(name: &str, root: &Path) -> String {
    let text = fs::read_to_string(transcript(name)).unwrap();
    let origin = fixture_lines(name).iter().find_map(|l| l["cwd"].as_str().map(str::to_string)).unwrap();
    text.replace(&origin, root.to_str().unwrap())
}

#[test]
fn a_hooked_session_gains_nothing_from_its_own_transcript() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    fs::create_dir_all(root.join("config")).unwrap();
    fs::write(root.join("config/settings.json"), "{\n  \"retries\": 3\n}\n").unwrap();
    let dir = fixtures().join("hooks/real-2.1.328-killed-mid-bash");
    let mut names: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for p in names {
        let payload = crate::common::subst(&fs::read_to_string(&p).unwrap(), &root, cfg.parent().unwrap());
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("05") {
            // Between Pre and Post Edit, Claude Code applies the edit.
            fs::write(root.join("config/settings.json"), "{\n  \"retries\": 5\n}\n").unwrap();
        }
        if name.starts_with("06") {
            fs::create_dir_all(root.join("src")).unwrap();
            fs::write(root.join("src/server.rs"), "pub fn serve() {}\n").unwrap();
        }
        // The test process is the hook's parent: the session stays live.
        hook_ok(&root, &payload, Parent::Test);
    }
    let before = records(&root).len();
    assert!(before >= 7, "the hooks recorded the session: {before} records");
    assert!(!root.join(".walj/errors.log").exists());
    let t = root.parent().unwrap().join("t.jsonl");
    fs::write(&t, relocated(V3, &root)).unwrap();
    let a = walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    assert!(stdout(&a).contains("Imported 0 records"), "{}", stdout(&a));
    assert_eq!(records(&root).len(), before);
}

#[test]
fn without_paths_this_projects_transcripts_are_found_by_folder_name_and_by_cwd() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let projects = cfg.join("projects");
    let own = projects.join(walj::claude::paths::encode_dir(&root));
    // 1. In the project's folder, with a subagent transcript beside it.
    fs::create_dir_all(own.join("4b79e617-7ef1-4ab2-a219-fbffcb6122b5/subagents")).unwrap();
    fs::write(own.join("4b79e617-7ef1-4ab2-a219-fbffcb6122b5.jsonl"), relocated(V3, &root)).unwrap();
    let sub = json!({"type": "assistant", "isSidechain": true, "sessionId": "4b79e617-7ef1-4ab2-a219-fbffcb6122b5",
        "cwd": root, "timestamp": "2026-11-29T07:10:32.000Z", "uuid": "sub-1",
        "message": {"id": "msg_sub", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_sub_write", "name": "Write",
            "input": {"file_path": root.join("docs/agent.md"), "content": "by the agent\n"}}]}});
    let sub_res = json!({"type": "user", "isSidechain": true, "sessionId": "4b79e617-7ef1-4ab2-a219-fbffcb6122b5",
        "cwd": root, "timestamp": "2026-11-29T07:10:33.000Z", "uuid": "sub-2", "toolUseResult": {"type": "create", "originalFile": null},
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_sub_write", "content": "ok"}]}});
    fs::write(own.join("4b79e617-7ef1-4ab2-a219-fbffcb6122b5/subagents/agent-1.jsonl"), format!("{sub}\n{sub_res}\n"))
        .unwrap();
    // 2. A session started in a subfolder of the project: another folder name, cwd inside.
    let subdir = root.join("web");
    fs::create_dir_all(&subdir).unwrap();
    let other = projects.join(walj::claude::paths::encode_dir(&subdir));
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("dac34307-159f-4fcd-9c21-35210246ad38.jsonl"), relocated(V2, &subdir)).unwrap();
    // 3. Same folder name, other project (the encoding is lossy): not this project's.
    fs::write(own.join("cb947e5b-246e-4253-a953-631f7e464c6b.jsonl"), fs::read(transcript(V1)).unwrap()).unwrap();

    let out = stdout(&walj(&root, &cfg, &["import"]).success());
    assert!(out.contains("from 3 transcripts"), "{out}");
    let recs = records(&root);
    let sessions: std::collections::BTreeSet<&str> = recs.iter().map(|r| r.session.as_str()).collect();
    assert_eq!(
        sessions.into_iter().collect::<Vec<_>>(),
        ["4b79e617-7ef1-4ab2-a219-fbffcb6122b5", "dac34307-159f-4fcd-9c21-35210246ad38"]
    );
    let agent = recs.iter().find(|r| r.id == "toolu_sub_write" && r.op == "applied").expect("subagent call");
    assert_eq!(agent.path, "docs/agent.md");
    assert!(recs.iter().any(|r| r.id == "toolu_013JnBoRSqxCShSX71epQz9K" && r.path == "web/index.ts"));
    assert!(recs.iter().filter(|r| r.kind.as_deref() == Some("start")).count() == 2);
}

#[test]
fn recover_from_transcripts_imports_and_reports_in_one_command() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let own = cfg.join("projects").join(walj::claude::paths::encode_dir(&root));
    fs::create_dir_all(&own).unwrap();
    fs::write(own.join("4b79e617-7ef1-4ab2-a219-fbffcb6122b5.jsonl"), relocated(V3, &root)).unwrap();
    // Without a terminal and without --yes: it says how, and imports nothing.
    let a = walj(&root, &cfg, &["recover", "--from-transcripts"]).success();
    assert!(String::from_utf8_lossy(&a.get_output().stderr).contains("--from-transcripts --yes"));
    assert!(!root.join(".walj/journal.jsonl").exists());
    // The no-journal note does not suggest the command just run (stderr named `--yes`).
    assert!(!stdout(&a).contains("walj recover --from-transcripts`"), "{}", stdout(&a));
    // With --yes: imported, then the recovery report.
    let a = walj(&root, &cfg, &["recover", "--from-transcripts", "--yes"]).success();
    let out = stdout(&a);
    assert!(out.contains("Recovery: 2 unresolved entries in 1 session"), "{out}");
    assert!(out.contains("config/settings.json") && out.contains("src/server.rs"), "{out}");
    assert!(out.contains("command in flight: echo started > run.log; sleep 60"), "{out}");
    let err = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(err.contains("in flight Bash"), "{err}");
    // --json stays parseable.
    let a = walj(&root, &cfg, &["recover", "--from-transcripts", "--yes", "--json"]).success();
    let v: Value = serde_json::from_str(&stdout(&a)).unwrap();
    assert_eq!(v["unresolved"], json!(2));
}

/// A transcript line: `v` with the session, folder, uuid and time Claude Code gives each.
fn transcript_line(mut v: Value, session: &str, cwd: &Path, uuid: &str, timestamp: &str) -> String {
    v["sessionId"] = json!(session);
    v["cwd"] = json!(cwd);
    v["uuid"] = json!(uuid);
    v["timestamp"] = json!(timestamp);
    v.to_string()
}

#[test]
fn errors_rejections_and_turns() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let s = "11111111-2222-3333-4444-555555555555";
    let f = |name: &str| root.join(name).to_string_lossy().into_owned();
    let mut lines = Vec::new();
    let mut n = 0;
    let mut line = |v: Value| {
        n += 1;
        lines.push(transcript_line(v, s, &root, &format!("u{n}"), &format!("2026-01-01T00:00:{n:02}.000Z")));
    };
    let prompt = |t: &str| json!({"type": "user", "message": {"role": "user", "content": t}});
    let call = |id: &str, name: &str, input: Value| json!({"type": "assistant", "message": {"id": format!("m{id}"), "role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}});
    let result = |id: &str, tur: Value, is_error: bool| json!({"type": "user", "toolUseResult": tur, "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "is_error": is_error, "content": "x"}]}});
    line(prompt("first"));
    line(call("t_err", "Edit", json!({"file_path": f("a.txt"), "old_string": "zz", "new_string": "y"})));
    line(result("t_err", json!("Error: String to replace not found in file."), true));
    line(call("t_rej", "Write", json!({"file_path": f("b.txt"), "content": "b"})));
    line(result(
        "t_rej",
        json!("The user doesn't want to proceed with this tool use. The tool use was rejected."),
        true,
    ));
    line(call("t_ok", "Write", json!({"file_path": f("c.txt"), "content": "c\n"})));
    line(result("t_ok", json!({"type": "create", "originalFile": null}), false));
    line(
        json!({"type": "assistant", "message": {"id": "m_end", "role": "assistant", "content": [{"type": "text", "text": "done"}]}}),
    );
    line(json!({"type": "some-future-line", "whatever": [1, 2, 3]}));
    line(prompt("second"));
    line(call("t_err2", "Edit", json!({"file_path": f("c.txt"), "old_string": "nope", "new_string": "y"})));
    line(result("t_err2", json!("Error: String to replace not found in file."), true));
    line(call("t_bash", "Bash", json!({"command": "make", "run_in_background": true})));
    line(result("t_bash", json!({"stdout": "", "backgroundTaskId": "bg1"}), false));
    line(call("t_task", "TaskUpdate", json!({"taskId": "3", "status": "completed"})));
    line(result("t_task", json!("Updated task #3 status"), false));
    let t = root.parent().unwrap().join("synthetic.jsonl");
    fs::write(&t, lines.join("\n") + "\n").unwrap();
    walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    let v: Value = serde_json::from_str(&stdout(&walj(&root, &cfg, &["log", "--json", "--all"]).success())).unwrap();
    let status: HashMap<&str, &str> =
        v.as_array().unwrap().iter().map(|e| (e["id"].as_str().unwrap(), e["status"].as_str().unwrap())).collect();
    assert_eq!(status["t_err"], "not_applied", "an error in a turn that went on left the file alone");
    assert_eq!(status["t_rej"], "not_applied", "rejected");
    assert_eq!(status["t_ok"], "persisted", "its turn ended with an answer (unverified)");
    assert_eq!(status["t_err2"], "failed", "the last turn is still open");
    let recs = records(&root);
    let bash = recs.iter().find(|r| r.id == "t_bash" && r.op == "applied").unwrap();
    assert_eq!(bash.get_str("task_id"), Some("bg1"));
    assert!(
        recs.iter().any(|r| r.id == "t_bash" && r.op == "intent" && r.extra.get("background") == Some(&json!(true)))
    );
    let task = recs.iter().find(|r| r.id == "t_task").unwrap();
    assert_eq!(task.kind.as_deref(), Some("task"));
    assert_eq!(recs.iter().filter(|r| r.kind.as_deref() == Some("prompt")).count(), 2);
}

#[test]
fn string_results_are_decided_by_is_error_todos_keep_good_items_and_meta_lines_are_not_prompts() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let s = "44444444-2222-3333-4444-555555555555";
    fs::write(root.join("a.txt"), "one\n").unwrap();
    let f = |name: &str| root.join(name).to_string_lossy().into_owned();
    let mut lines = Vec::new();
    let mut n = 0;
    let mut line = |v: Value| {
        n += 1;
        lines.push(transcript_line(v, s, &root, &format!("q{n}"), &format!("2026-01-04T00:00:{n:02}.000Z")));
    };
    let user = |t: &str| json!({"type": "user", "message": {"role": "user", "content": t}});
    let call = |id: &str, name: &str, input: Value| json!({"type": "assistant", "message": {"id": format!("m{id}"), "role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}});
    // Older transcripts: `toolUseResult` is a plain string, also for calls that succeeded.
    let result = |id: &str, text: &str, is_error: Option<bool>| {
        let mut block = json!({"type": "tool_result", "tool_use_id": id, "content": text});
        if let Some(e) = is_error {
            block["is_error"] = json!(e);
        }
        json!({"type": "user", "toolUseResult": text, "message": {"role": "user", "content": [block]}})
    };
    line(user(
        "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.",
    ));
    line(user(
        "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>",
    ));
    line(user("<local-command-stdout>Set model to opus</local-command-stdout>"));
    line(user("fix a.txt"));
    line(call("t_edit", "Edit", json!({"file_path": f("a.txt"), "old_string": "one", "new_string": "two"})));
    line(result("t_edit", "The file a.txt has been updated.", None));
    line(call("t_bash", "Bash", json!({"command": "make"})));
    line(result("t_bash", "build ok", Some(false)));
    line(call("t_bash_err", "Bash", json!({"command": "make test"})));
    line(result("t_bash_err", "Error: Exit code 2", Some(true)));
    line(call(
        "t_todo",
        "TodoWrite",
        json!({"todos": [
            {"content": "good one", "status": "in_progress", "activeForm": "Doing one"},
            "not a todo",
            {"status": "completed"},
            {"content": "good two", "status": "pending", "activeForm": "Doing two"}]}),
    ));
    line(result("t_todo", "Todos have been modified successfully.", None));
    line(
        json!({"type": "assistant", "message": {"id": "m_end", "role": "assistant", "content": [{"type": "text", "text": "done"}]}}),
    );
    line(user("<task-notification>\n<task-id>bash_1</task-id>\n<status>completed</status>\n</task-notification>"));
    let t = root.parent().unwrap().join("strings.jsonl");
    fs::write(&t, lines.join("\n") + "\n").unwrap();
    walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    let recs = records(&root);
    let ops = |id: &str| recs.iter().filter(|r| r.id == id).map(|r| r.op.clone()).collect::<Vec<_>>();
    assert!(ops("t_edit").contains(&"applied".to_string()), "a successful Edit: {:?}", ops("t_edit"));
    assert!(!recs.iter().any(|r| r.id == "t_edit" && (r.op == "failed" || r.how.as_deref() == Some("not_applied"))));
    assert!(ops("t_bash").contains(&"applied".to_string()), "a successful Bash: {:?}", ops("t_bash"));
    assert!(!ops("t_bash").contains(&"failed".to_string()));
    assert!(ops("t_bash_err").contains(&"failed".to_string()), "{:?}", ops("t_bash_err"));
    let prompts: Vec<&str> =
        recs.iter().filter(|r| r.kind.as_deref() == Some("prompt")).filter_map(|r| r.get_str("prompt")).collect();
    assert_eq!(prompts, ["fix a.txt"]);
    // The task notification is news of the background task, not a prompt.
    let n = recs.iter().find(|r| r.kind.as_deref() == Some("task_notification")).expect("no task_notification");
    assert_eq!((n.get_str("task_id"), n.get_str("status")), (Some("bash_1"), Some("completed")));
    let v: Value =
        serde_json::from_str(&stdout(&walj(&root, &cfg, &["sessions", "show", &s[..8], "--json"]).success())).unwrap();
    let items: Vec<&str> =
        v["todos"]["items"].as_array().unwrap().iter().map(|t| t["content"].as_str().unwrap()).collect();
    assert_eq!(items, ["good one", "good two"], "{v:#}");
}

#[test]
fn a_turn_ended_by_an_api_error_stays_open_with_its_reason() {
    // Claude Code 2.1.328's transcript of a turn cut by a 529 (recorded in tests/e2e/turns.rs):
    // a synthetic assistant line `isApiErrorMessage: true`, `error: "server_error"`.
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let s = "aeaeaeae-2222-3333-4444-555555555555";
    fs::write(root.join("a.txt"), "new\n").unwrap();
    let a = root.join("a.txt").to_string_lossy().into_owned();
    let lines = [
        transcript_line(
            json!({"type": "user", "message": {"role": "user", "content": "rewrite a.txt"}}),
            s,
            &root,
            "u1",
            "2026-01-06T00:00:01.000Z",
        ),
        transcript_line(
            json!({"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "t_w", "name": "Write", "input": {"file_path": a, "content": "new\n"}}]}}),
            s,
            &root,
            "u2",
            "2026-01-06T00:00:02.000Z",
        ),
        transcript_line(
            json!({"type": "user", "toolUseResult": {"type": "update", "filePath": a, "content": "new\n", "originalFile": "old\n"}, "message": {"role": "user", "content": [{"tool_use_id": "t_w", "type": "tool_result", "content": "The file has been updated successfully."}]}}),
            s,
            &root,
            "u3",
            "2026-01-06T00:00:03.000Z",
        ),
        transcript_line(
            json!({"type": "assistant", "isApiErrorMessage": true, "error": "server_error", "apiErrorStatus": 529, "message": {"id": "x", "model": "<synthetic>", "role": "assistant", "content": [{"type": "text", "text": "API Error: 529 Overloaded. This is a server-side issue, usually temporary."}]}}),
            s,
            &root,
            "u4",
            "2026-01-06T00:00:04.000Z",
        ),
    ];
    let t = root.parent().unwrap().join("api-error.jsonl");
    fs::write(&t, lines.join("\n") + "\n").unwrap();
    walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    let v: Value = serde_json::from_str(&stdout(&walj(&root, &cfg, &["recover", "--json"]).success())).unwrap();
    assert_eq!(v["unresolved"], 1, "the failed turn was settled: {v:#}");
    assert_eq!(
        v["sessions"][0]["turn_failure"], "ended by an API error: server_error (API Error: 529 Overloaded)",
        "{v:#}"
    );
    // Importing again adds nothing.
    let before = records(&root).len();
    walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    assert_eq!(records(&root).len(), before);
}

#[test]
fn each_imported_session_gets_its_own_last_assistant_message() {
    // A transcript holding two sessions' lines (a resumed or forked conversation): the brief
    // of each names its own last answer.
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let (a, b) = ("aaaaaaaa-2222-3333-4444-555555555555", "bbbbbbbb-2222-3333-4444-555555555555");
    let user = |t: &str| json!({"type": "user", "message": {"role": "user", "content": t}});
    let say = |id: &str, t: &str| json!({"type": "assistant", "message": {"id": id, "role": "assistant", "content": [{"type": "text", "text": t}]}});
    let lines = [
        transcript_line(user("question of a"), a, &root, "u1", "2026-01-05T00:00:01.000Z"),
        transcript_line(say("m1", "ANSWER-OF-A"), a, &root, "u2", "2026-01-05T00:00:02.000Z"),
        transcript_line(user("question of b"), b, &root, "u3", "2026-01-05T00:00:03.000Z"),
        transcript_line(say("m2", "ANSWER-OF-B"), b, &root, "u4", "2026-01-05T00:00:04.000Z"),
    ];
    let t = root.parent().unwrap().join("two.jsonl");
    fs::write(&t, lines.join("\n") + "\n").unwrap();
    walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    for (sid, own, other) in [(a, "ANSWER-OF-A", "ANSWER-OF-B"), (b, "ANSWER-OF-B", "ANSWER-OF-A")] {
        let v: Value = serde_json::from_str(&stdout(
            &walj(&root, &cfg, &["sessions", "resume", sid, "--print-only", "--json"]).success(),
        ))
        .unwrap();
        let brief = v["brief"].as_str().unwrap();
        assert!(brief.contains(own) && !brief.contains(other), "session {sid}: {brief}");
    }
}

#[test]
fn all_imports_each_transcript_into_its_own_project() {
    let (_dir, base) = crate::common::scratch();
    let cfg = base.join("claude");
    let (p1, p2) = (base.join("one"), base.join("two"));
    for (p, name) in [(&p1, V2), (&p2, V3)] {
        fs::create_dir_all(p).unwrap();
        let folder = cfg.join("projects").join(walj::claude::paths::encode_dir(p));
        fs::create_dir_all(&folder).unwrap();
        fs::write(folder.join("s.jsonl"), relocated(name, p)).unwrap();
    }
    // A transcript whose folder is gone is skipped.
    let gone = cfg.join("projects/-gone");
    fs::create_dir_all(&gone).unwrap();
    fs::write(gone.join("g.jsonl"), fs::read(transcript(V1)).unwrap()).unwrap();
    let out = stdout(&walj(&p1, &cfg, &["import", "--all"]).success());
    assert!(out.contains("1 transcripts skipped"), "{out}");
    assert!(records(&p1).iter().any(|r| r.path == "index.ts"));
    assert!(records(&p2).iter().any(|r| r.path == "config/settings.json"));
}

#[test]
fn streamed_message_parts_are_one_message_and_repeated_blocks_count_once() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let s = "22222222-2222-3333-4444-555555555555";
    let mut lines = Vec::new();
    let mut push = |n: usize, v: Value| {
        lines.push(transcript_line(v, s, &root, &format!("s{n}"), &format!("2026-01-02T00:00:{n:02}.000Z")));
    };
    let part = |msg: &str, block: Value| json!({"type": "assistant", "message": {"id": msg, "role": "assistant", "content": [block]}});
    let write = |id: &str, file: &str| json!({"type": "tool_use", "id": id, "name": "Write", "input": {"file_path": root.join(file), "content": "x\n"}});
    push(1, json!({"type": "user", "message": {"role": "user", "content": "go"}}));
    push(2, part("m1", write("w1", "one.txt")));
    push(3, part("m1", write("w1", "one.txt"))); // the same block again
    push(
        4,
        json!({"type": "user", "toolUseResult": {"type": "create", "originalFile": null},
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "w1", "content": "ok"}]}}),
    );
    push(5, part("m2", json!({"type": "text", "text": "Now the second file."})));
    push(6, part("m2", write("w2", "two.txt")));
    let t = root.parent().unwrap().join("stream.jsonl");
    fs::write(&t, lines.join("\n") + "\n").unwrap();
    let v: Value =
        serde_json::from_str(&stdout(&walj(&root, &cfg, &["import", "--json", t.to_str().unwrap()]).success()))
            .unwrap();
    let rep = &v["imports"][0]["report"]["files"][0];
    assert_eq!(rep["tool_calls"], json!(2), "{rep:#}");
    assert_eq!(rep["in_flight"][0]["id"], json!("w2"));
    let recs = records(&root);
    assert_eq!(recs.iter().filter(|r| r.id == "w1" && r.op == "intent").count(), 1);
    // The turn did not end (the message's second part called a tool): w1 stays open.
    assert!(!recs.iter().any(|r| r.id == "w1" && r.op == "persisted"));
}

#[test]
fn a_prompt_typed_twice_is_kept_twice() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let s = "33333333-2222-3333-4444-555555555555";
    let lines: Vec<String> = (1..=3)
        .map(|n| {
            json!({"type": "user", "sessionId": s, "cwd": root, "uuid": format!("p{n}"),
                   "timestamp": format!("2026-01-03T00:00:0{n}.000Z"),
                   "message": {"role": "user", "content": if n == 2 { "other" } else { "continue" }}})
            .to_string()
        })
        .collect();
    let t = root.parent().unwrap().join("prompts.jsonl");
    fs::write(&t, lines.join("\n") + "\n").unwrap();
    walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    let prompts: Vec<String> = records(&root)
        .iter()
        .filter(|r| r.kind.as_deref() == Some("prompt"))
        .map(|r| r.get_str("prompt").unwrap().to_string())
        .collect();
    assert_eq!(prompts, ["continue", "other", "continue"]);
}

/// The real killed-mid-bash transcript, recorded in `root`, with what a session also does in
/// its last (open) turn: writes Claude's plan file under `home/.claude/plans/` (outside the
/// project), starts an edit of a scratch file outside that never returns, and updates its todo
/// list with one malformed item.
fn with_plan_and_todos(root: &Path, home: &Path) -> (String, PathBuf, PathBuf) {
    let text = relocated(V3, root);
    let last: Value = text
        .lines()
        .rev()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["sessionId"].is_string())
        .unwrap();
    let s = last["sessionId"].as_str().unwrap().to_string();
    let plan = home.join(".claude/plans/shiny-crafting-otter.md");
    let scratch = home.join("scratch/notes.md");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut n = 0;
    let mut line = |v: Value| {
        n += 1;
        lines.push(transcript_line(v, &s, root, &format!("plan-{n}"), &format!("2026-11-29T07:20:{n:02}.000Z")));
    };
    let call = |id: &str, name: &str, input: Value| json!({"type": "assistant", "message": {"id": format!("m{id}"), "role": "assistant", "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}});
    let result = |id: &str, tur: Value| json!({"type": "user", "toolUseResult": tur, "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "ok"}]}});
    line(call("toolu_plan", "Write", json!({"file_path": plan, "content": "# Plan\n1. raise retries\n"})));
    line(result("toolu_plan", json!({"type": "create", "filePath": plan, "originalFile": null})));
    line(call(
        "toolu_todo",
        "TodoWrite",
        json!({"todos": [
            {"content": "raise retries", "status": "completed", "activeForm": "Raising retries"},
            {"status": "pending", "activeForm": "no text"},
            {"content": "add server", "status": "in_progress", "activeForm": "Adding server"}]}),
    ));
    line(result("toolu_todo", json!({"oldTodos": [], "newTodos": []})));
    line(call("toolu_scratch", "Edit", json!({"file_path": scratch, "old_string": "a", "new_string": "b"})));
    (lines.join("\n") + "\n", plan, scratch)
}

#[test]
fn files_outside_the_project_are_session_context_and_a_bad_todo_item_is_skipped_alone() {
    let (_t, root) = project();
    let cfg = root.parent().unwrap().join("claude");
    let home = root.parent().unwrap().join("home");
    let (text, plan, scratch) = with_plan_and_todos(&root, &home);
    let t = root.parent().unwrap().join("t.jsonl");
    fs::write(&t, text).unwrap();
    let a = walj(&root, &cfg, &["import", t.to_str().unwrap()]).success();
    let out = stdout(&a);
    assert!(out.contains(&format!("outside the project: {}", plan.display())), "{out}");
    assert!(out.contains(&format!("outside the project: {}", scratch.display())), "{out}");
    assert!(out.contains("1 todo item had no text and was skipped; the list's other items are kept"), "{out}");
    // The calls on files outside are not in flight, and not unresolved: the same 2 entries as
    // without them (the project's two files).
    assert!(!out.contains("in flight Edit"), "{out}");
    let v: Value = serde_json::from_str(&stdout(&walj(&root, &cfg, &["recover", "--json"]).success())).unwrap();
    assert_eq!(v["unresolved"], json!(2), "{v:#}");
    let text = stdout(&walj(&root, &cfg, &["recover"]).success());
    assert!(!text.contains("plans") && !text.contains("notes.md"), "{text}");
    // Never offered for revert: `--all` leaves them out, by id it refuses; nothing is written there.
    // (exit 1: the drifted settings file is a conflict.)
    let dry = stdout(&walj(&root, &cfg, &["revert", "--all", "--dry-run", "--json"]));
    let outcomes: Value = serde_json::from_str(&dry).unwrap();
    assert_eq!(outcomes["outcomes"].as_array().unwrap().len(), 2, "{dry}");
    assert!(!dry.contains("toolu_plan") && !dry.contains("toolu_scratch"), "{dry}");
    walj(&root, &cfg, &["revert", "toolu_plan", "--yes"]).failure();
    assert!(!plan.exists() && !scratch.exists(), "walj writes nothing outside the project");
    // Kept as session context: the session names both files, settled, outside the project.
    let show: Value =
        serde_json::from_str(&stdout(&walj(&root, &cfg, &["sessions", "show", "4b79e617", "--json"]).success()))
            .unwrap();
    let files = show["files"].as_array().unwrap();
    for p in [&plan, &scratch] {
        let f = files.iter().find(|f| f["path"] == json!(p)).unwrap_or_else(|| panic!("{p:?}: {show:#}"));
        assert_eq!((f["outside"].as_bool(), f["unresolved"].as_u64()), (Some(true), Some(0)), "{f:#}");
    }
    let items: Vec<&str> =
        show["todos"]["items"].as_array().unwrap().iter().map(|t| t["content"].as_str().unwrap()).collect();
    assert_eq!(items, ["raise retries", "add server"], "{show:#}");
    // --json names them too.
    let v: Value =
        serde_json::from_str(&stdout(&walj(&root, &cfg, &["import", t.to_str().unwrap(), "--json"]).success()))
            .unwrap();
    let f = &v["imports"][0]["report"]["files"][0];
    assert_eq!(f["added"], json!(0), "importing twice adds nothing: {f:#}");
    assert_eq!(f["outside"], json!([plan, scratch]), "{f:#}");
    assert_eq!(f["todos_skipped"], json!(1), "{f:#}");
}
