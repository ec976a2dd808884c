//! Real Claude Code payloads replayed through `walj hook`, without the CLI: the recording of a
//! clean session of Claude Code 2.1.328 (`tests/fixtures/real-2.1.328-clean/`, made by
//! `scripts/record-fixtures.sh`; see docs/e2e.md). The same properties as the end-to-end
//! scenarios of `tests/e2e_walj.rs`, for machines where the real CLI cannot be installed.
//!
//! The session: TaskCreate ×2 (one turn), Edit, Write + Edit (one turn), a failing Bash
//! (`exit 3` → PostToolUseFailure), a Bash, TaskUpdate, a Bash denied by a `permissions.deny`
//! rule (PreToolUse only), Stop, SessionEnd.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/real-2.1.328-clean");

fn walj_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

struct Replay {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    home: PathBuf,
}

impl Replay {
    fn new() -> Replay {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let project = root.join("project");
        let home = root.join("home");
        fs::create_dir_all(&home).unwrap();
        let meta = meta();
        for (rel, content) in meta["files_before"].as_object().unwrap() {
            let p = project.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, content.as_str().unwrap()).unwrap();
        }
        let r = Replay { _dir: dir, root, project, home };
        r.git(&["init", "-q", "-b", "main"]);
        r.git(&["add", "-A"]);
        r.git(&["commit", "-qm", "initial"]);
        r
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(&self.project)
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A recorded payload with its placeholders replaced.
    fn payload(&self, name: &str) -> String {
        let key: String =
            self.project.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        fs::read_to_string(Path::new(FIXTURE).join("hooks").join(name))
            .unwrap()
            .replace("${PROJECT_KEY}", &key)
            .replace("${PROJECT}", &self.project.to_string_lossy())
            .replace("${HOME}", &self.home.to_string_lossy())
            .replace("${TMPDIR}", &self.root.join("tmp").to_string_lossy())
            .replace("${SANDBOX}", &self.root.to_string_lossy())
    }

    /// `walj hook` on one payload, under a short-lived parent (`timeout`), as Claude Code
    /// runs it under its own process. Returns (exit code, stdout, stderr).
    fn hook(&self, payload: &str) -> (i32, String, String) {
        let mut child = Command::new("timeout")
            .arg("10")
            .arg(walj_bin())
            .arg("--project")
            .arg(&self.project)
            .arg("hook")
            .current_dir(&self.project)
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// What the tool did, done to the files (between its PreToolUse and PostToolUse).
    fn apply(&self, p: &Value) {
        let input = &p["tool_input"];
        let Some(path) = input["file_path"].as_str() else { return };
        match p["tool_name"].as_str() {
            Some("Write") => fs::write(path, input["content"].as_str().unwrap()).unwrap(),
            Some("Edit") => {
                let old = fs::read_to_string(path).unwrap();
                let new = old.replacen(input["old_string"].as_str().unwrap(), input["new_string"].as_str().unwrap(), 1);
                fs::write(path, new).unwrap();
            }
            _ => {}
        }
    }

    fn walj_json(&self, args: &[&str]) -> Value {
        let out = Command::new(walj_bin())
            .arg("--project")
            .arg(&self.project)
            .args(args)
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "walj {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn journal(&self) -> Vec<Value> {
        let text = fs::read_to_string(self.project.join(".walj/journal.jsonl")).unwrap();
        text.lines()
            .map(|l| {
                assert_eq!(walj::journal::record::check_crc(l.as_bytes()), Some(true), "{l}");
                serde_json::from_str(l).unwrap()
            })
            .collect()
    }
}

fn meta() -> Value {
    serde_json::from_str(&fs::read_to_string(Path::new(FIXTURE).join("meta.json")).unwrap()).unwrap()
}

#[test]
fn recorded_clean_session_replays_to_nothing_unresolved() {
    let r = Replay::new();
    let meta = meta();
    assert_eq!(meta["claude_code_version"], "2.1.328");
    let mut files: Vec<String> =
        meta["hook_payloads"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    files.sort();
    for name in &files {
        let text = r.payload(name);
        let p: Value = serde_json::from_str(&text).unwrap();
        if p["hook_event_name"] == "PostToolUse" {
            r.apply(&p);
        }
        let (code, stdout, stderr) = r.hook(&text);
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(stdout.trim().is_empty(), "{name} printed: {stdout}");
        assert!(stderr.trim().is_empty(), "{name}: {stderr}");
    }
    // The files as the real session left them.
    for (rel, content) in meta["files_after"].as_object().unwrap() {
        if rel.ends_with(".log") {
            continue; // written by the Bash calls, which are not replayed
        }
        assert_eq!(fs::read_to_string(r.project.join(rel)).unwrap(), content.as_str().unwrap(), "{rel}");
    }

    assert_eq!(r.walj_json(&["recover", "--json"]), json!({"unresolved": 0, "sessions": []}));
    let status = r.walj_json(&["status", "--json"]);
    assert_eq!(status["sessions"], json!({"ended": 1}), "{status}");
    let journal = r.journal();
    let find = |op: &str, id: &str| journal.iter().filter(|l| l["op"] == op && l["id"] == id).collect::<Vec<_>>();
    // Files: intent, applied (post-image = git hash-object of the file now), persisted at Stop.
    for (id, rel) in [
        ("toolu_mock_1_0", "config/settings.json"),
        ("toolu_mock_2_0", "src/server.rs"),
        ("toolu_mock_2_1", "src/main.rs"),
    ] {
        assert_eq!(find("intent", id).len(), 1, "{id}");
        let applied = find("applied", id);
        assert_eq!(applied.len(), 1, "{id}");
        assert_eq!(applied[0]["after"], r.git(&["hash-object", rel]).as_str(), "{id} {rel}");
        assert_eq!(find("persisted", id).len(), 1, "{id}");
    }
    // Commands: the failing one failed, the working one applied, the denied one settled at Stop.
    assert_eq!(find("failed", "toolu_mock_3_0").len(), 1);
    assert_eq!(find("applied", "toolu_mock_4_0").len(), 1);
    let denied = find("resolved", "toolu_mock_6_0");
    assert_eq!(denied.len(), 1, "the denied Bash was not settled at Stop");
    assert_eq!(denied[0]["how"], "not_applied");
    assert_eq!(denied[0]["tool"], "Bash");

    let fold = walj::fold::Fold::load(
        &r.project.join(".walj/journal.jsonl"),
        &walj::fold::FoldOptions { all_commands: true, ..Default::default() },
    )
    .unwrap();
    let s = &fold.sessions[0];
    let todos: Vec<(Option<&str>, &str)> = s.todos.iter().map(|t| (t.id.as_deref(), t.status.as_str())).collect();
    assert_eq!(todos, [(Some("1"), "completed"), (Some("2"), "pending")]);
    let commands: Vec<(&str, walj::fold::CommandStatus)> =
        s.commands.iter().map(|c| (c.id.as_str(), c.status)).collect();
    use walj::fold::CommandStatus::{Failed, Ok as Done};
    assert_eq!(commands, [("toolu_mock_3_0", Failed), ("toolu_mock_4_0", Done), ("toolu_mock_6_0", Failed)]);
    assert!(s.commands[2].error.as_deref().unwrap_or("").contains("not run"), "{:?}", s.commands[2]);
    assert!(!r.project.join(".walj/errors.log").exists());
}
