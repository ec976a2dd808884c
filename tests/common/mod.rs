//! Helpers shared by the integration tests: throw-away git repositories, the real `walj`
//! binary, and hook payloads (fixtures or built here) replayed through `walj hook`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};

use assert_cmd::Command;
use serde_json::{Value, json};

/// The shared fixtures: `../shared/fixtures` next to the crate, else `/work/shared/fixtures`.
pub fn fixtures() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    if p.is_dir() { p } else { PathBuf::from("/work/shared/fixtures") }
}

/// A git repository in a temp folder with one commit of `files`.
pub struct Repo {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Repo {
    pub fn new(files: &[(&str, &str)]) -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonicalize");
        let repo = Repo { _dir: dir, root };
        repo.git(&["init", "-q", "-b", "main"]);
        for (rel, content) in files {
            repo.write(rel, content);
        }
        repo.commit("initial");
        repo
    }

    /// A repository holding a copy of a fixture project folder.
    pub fn from_fixture(dir: &str) -> Repo {
        let repo = Repo::new(&[]);
        copy_tree(&fixtures().join(dir), &repo.root);
        repo.commit("fixture project");
        repo
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = StdCommand::new("git")
            .args(args)
            .current_dir(&self.root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .env("LC_ALL", "C")
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn commit(&self, msg: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", msg]);
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, content: &str) {
        self.write_bytes(rel, content.as_bytes());
    }

    pub fn write_bytes(&self, rel: &str, content: &[u8]) {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, content).expect("write");
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).expect("read")
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    pub fn journal(&self) -> PathBuf {
        self.root.join(".walj/journal.jsonl")
    }

    /// The journal's bytes (empty when there is none).
    pub fn journal_bytes(&self) -> Vec<u8> {
        std::fs::read(self.journal()).unwrap_or_default()
    }

    /// The journal's records as JSON values.
    pub fn records(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.journal_bytes())
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("journal line is JSON"))
            .collect()
    }

    /// `walj --project <root> ARGS` (no colour, no inherited project).
    pub fn walj(&self, args: &[&str]) -> Command {
        let mut c = Command::cargo_bin("walj").expect("walj binary");
        c.env_remove("CLAUDE_PROJECT_DIR").env_remove("WALJ_JOURNAL").env("NO_COLOR", "1");
        c.arg("--project").arg(&self.root).args(args);
        c
    }

    /// Runs `walj ARGS`: (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.walj(args).output().expect("run walj");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs `walj ARGS` and expects success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "walj {args:?} failed:\nstdout: {out}\nstderr: {err}");
        out
    }

    /// Runs `walj ARGS` and expects failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_ne!(code, 0, "walj {args:?} should fail:\nstdout: {out}\nstderr: {err}");
        err
    }

    /// Substitutes `${PROJECT}` and `${HOME}` in a fixture payload.
    pub fn fixture(&self, rel: &str) -> String {
        let text = std::fs::read_to_string(fixtures().join(rel)).expect("fixture");
        text.replace("${PROJECT}", &self.root.to_string_lossy()).replace("${HOME}", "/home/test")
    }

    /// Replays one payload through `walj hook` under a short-lived parent (`timeout`),
    /// so the session looks crashed once the hook returns. Returns stdout.
    pub fn hook(&self, payload: &str) -> String {
        let bin = assert_cmd::cargo::cargo_bin("walj");
        let mut child = StdCommand::new("timeout")
            .arg("20")
            .arg(bin)
            .arg("--project")
            .arg(&self.root)
            .arg("hook")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn walj hook");
        use std::io::Write;
        child.stdin.take().expect("stdin").write_all(payload.as_bytes()).expect("write payload");
        let out: Output = child.wait_with_output().expect("walj hook");
        assert_eq!(out.status.code(), Some(0), "walj hook must exit 0: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Replays a payload with the test process as the hook's parent: the session stays
    /// live while the test runs.
    pub fn hook_live(&self, payload: &str) -> String {
        let out = self.walj(&["hook"]).write_stdin(payload.to_string()).output().expect("walj hook");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).expect("read fixture dir") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&dest).expect("mkdir");
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::write(&dest, std::fs::read(e.path()).expect("read")).expect("write");
        }
    }
}

/// A scripted Claude Code session: builds PreToolUse/PostToolUse payloads in the
/// documented shapes, applies the tool's change between them as Claude Code would.
pub struct Claude<'r> {
    pub repo: &'r Repo,
    pub session: String,
    /// Replay with a live parent (the test process) instead of a short-lived one.
    pub live: bool,
}

impl<'r> Claude<'r> {
    pub fn new(repo: &'r Repo, session: &str) -> Claude<'r> {
        Claude { repo, session: session.to_string(), live: false }
    }

    fn send(&self, v: Value) -> String {
        let text = v.to_string();
        if self.live { self.repo.hook_live(&text) } else { self.repo.hook(&text) }
    }

    fn base(&self, event: &str) -> Value {
        json!({
            "session_id": self.session,
            "transcript_path": format!("/home/test/.claude/projects/x/{}.jsonl", self.session),
            "cwd": self.repo.root,
            "hook_event_name": event,
        })
    }

    pub fn start(&self) -> String {
        let mut v = self.base("SessionStart");
        v["source"] = json!("startup");
        self.send(v)
    }

    pub fn prompt(&self, text: &str) {
        let mut v = self.base("UserPromptSubmit");
        v["prompt"] = json!(text);
        self.send(v);
    }

    fn tool(&self, event: &str, tool: &str, id: &str, input: Value) -> Value {
        let mut v = self.base(event);
        v["tool_name"] = json!(tool);
        v["tool_use_id"] = json!(id);
        v["tool_input"] = input;
        v
    }

    /// An Edit replacing `old` by `new` in `rel` (PreToolUse, the change, PostToolUse).
    pub fn edit(&self, id: &str, rel: &str, old: &str, new: &str) {
        let file = self.repo.path(rel);
        let input = json!({"file_path": file, "old_string": old, "new_string": new, "replace_all": false});
        self.send(self.tool("PreToolUse", "Edit", id, input.clone()));
        let original = self.repo.read(rel);
        assert!(original.contains(old), "{rel} does not contain {old:?}");
        self.repo.write(rel, &original.replacen(old, new, 1));
        let mut post = self.tool("PostToolUse", "Edit", id, input);
        post["tool_response"] = json!({"filePath": file, "oldString": old, "newString": new, "originalFile": original, "userModified": false, "replaceAll": false});
        self.send(post);
    }

    /// A Write of `content` to `rel` (creating it when absent).
    pub fn write(&self, id: &str, rel: &str, content: &str) {
        let file = self.repo.path(rel);
        let input = json!({"file_path": file, "content": content});
        self.send(self.tool("PreToolUse", "Write", id, input.clone()));
        let created = !self.repo.exists(rel);
        let original = if created { Value::Null } else { json!(self.repo.read(rel)) };
        self.repo.write(rel, content);
        let mut post = self.tool("PostToolUse", "Write", id, input);
        post["tool_response"] = json!({"type": if created {"create"} else {"update"}, "filePath": file, "content": content, "originalFile": original});
        self.send(post);
    }

    /// Only the PreToolUse of a Write: the session dies before the outcome.
    pub fn write_intent(&self, id: &str, rel: &str, content: &str) {
        let input = json!({"file_path": self.repo.path(rel), "content": content});
        self.send(self.tool("PreToolUse", "Write", id, input));
    }

    pub fn stop(&self) {
        self.send(self.base("Stop"));
    }
}
