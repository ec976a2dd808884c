//! Helpers shared by the integration tests: throw-away git repositories, the real `walj`
//! binary, and hook payloads (fixtures or built here) replayed through `walj hook`.
#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};

use assert_cmd::Command;
use serde_json::{Value, json};
use walj::journal::{Blob, Problem, Record, scan_records};
use walj::store::Store;

/// The shared fixtures: `../shared/fixtures` next to the crate, else `/work/shared/fixtures`.
pub fn fixtures() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    if p.is_dir() { p } else { PathBuf::from("/work/shared/fixtures") }
}

/// The `walj` binary under test.
pub fn walj_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

/// `walj --project PROJECT hook` as a child process reading `payload` (the real binary, with
/// no inherited project or journal), to be killed or waited for.
pub fn spawn_hook(project: &Path, payload: &str) -> std::process::Child {
    let mut child = StdCommand::new(walj_bin())
        .arg("--project")
        .arg(project)
        .arg("hook")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning walj hook");
    child.stdin.take().expect("the hook's stdin").write_all(payload.as_bytes()).expect("writing the payload");
    child
}

/// A new temp folder and its canonical path (walj prints canonical paths).
pub fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = std::fs::canonicalize(dir.path()).expect("canonicalize");
    (dir, path)
}

/// Runs `git ARGS` in `dir` without user or system config, with a fixed author, committer
/// and date; panics unless it succeeds. Returns its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = StdCommand::new("git")
        .args(args)
        .current_dir(dir)
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

/// `walj` with a clean environment: no inherited project, journal or passphrase; no colour.
pub fn walj_cmd() -> Command {
    let mut c = Command::new(walj_bin());
    c.env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env_remove("WALJ_PASSPHRASE")
        .env("NO_COLOR", "1");
    c
}

/// `walj --project <project>` (see [`walj_cmd`]); add the command's arguments.
pub fn walj_at(project: &Path) -> Command {
    let mut c = walj_cmd();
    c.arg("--project").arg(project);
    c
}

/// A finished process as (exit code, stdout, stderr); -1 when a signal ended it.
pub fn outcome(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The process that starts a replayed `walj hook`. walj takes the hook's nearest non-shell
/// ancestor for the Claude Code process, so the parent decides how the session reads.
#[derive(Clone, Copy, Debug)]
pub enum Parent {
    /// `timeout SECS`: gone once the hook returns, so the session reads as crashed (as after
    /// a kill). A hook still running after SECS is killed, and the run fails.
    Timeout(u32),
    /// The test process itself: the session reads as live while the test runs.
    Test,
}

/// How a replayed `walj hook` finds its project.
#[derive(Clone, Copy, Debug)]
pub enum Locate {
    /// `--project <project>`.
    Flag,
    /// No `--project`: the hook finds the project from the payload's `cwd` or its own folder,
    /// as the plain `walj hook` command installed in settings.json does.
    Folder,
}

/// Runs `walj hook` in the folder `project` with `payload` on stdin: (exit code, stdout,
/// stderr), whatever the exit code.
pub fn hook_run(project: &Path, payload: &str, parent: Parent, locate: Locate) -> (i32, String, String) {
    let mut c = match parent {
        Parent::Timeout(secs) => {
            let mut c = StdCommand::new("timeout");
            c.arg(secs.to_string()).arg(walj_bin());
            c
        }
        Parent::Test => StdCommand::new(walj_bin()),
    };
    if let Locate::Flag = locate {
        c.arg("--project").arg(project);
    }
    let mut child = c
        .arg("hook")
        .current_dir(project)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn walj hook");
    child.stdin.take().expect("stdin").write_all(payload.as_bytes()).expect("write payload");
    outcome(&child.wait_with_output().expect("walj hook"))
}

/// Runs `walj hook --project <project>` (see [`hook_run`]), which must exit 0; returns stdout.
pub fn hook_ok(project: &Path, payload: &str, parent: Parent) -> String {
    let (code, out, err) = hook_run(project, payload, parent, Locate::Flag);
    assert_eq!(code, 0, "walj hook must exit 0: {err}");
    out
}

/// `<project>/.walj/journal.jsonl` read with walj's own reader: its records and the problems
/// found (none and none when there is no journal).
pub fn journal_scan(project: &Path) -> (Vec<Record>, Vec<Problem>) {
    let mut out = Vec::new();
    let rep = scan_records(&project.join(".walj/journal.jsonl"), |_, r| out.push(r)).expect("read the journal");
    (out, rep.problems)
}

/// The journal's records, read with walj's own reader (see [`journal_scan`]).
pub fn journal_records(project: &Path) -> Vec<Record> {
    journal_scan(project).0
}

/// The bytes a recorded blob names, from the project's store: `None` for `Blob::Absent`;
/// panics when no blob is recorded or the store lacks it.
pub fn blob_bytes(project: &Path, b: &Option<Blob>) -> Option<Vec<u8>> {
    match b.as_ref().expect("a blob is recorded") {
        Blob::Absent => None,
        Blob::Id(id) => Some(
            Store::new(project.join(".walj/store")).get(id).unwrap_or_else(|e| panic!("blob {id} not in store: {e}")),
        ),
    }
}

/// Substitutes a payload's `${PROJECT}` and `${HOME}` (all placeholders: [`Repo::subst`]).
pub fn subst(text: &str, project: &Path, home: &Path) -> String {
    text.replace("${PROJECT}", &project.to_string_lossy()).replace("${HOME}", &home.to_string_lossy())
}

/// Replays `hooks/crash-mid-write` up to its 09 (the Write's PreToolUse; the session dies
/// there), changing the files as Claude Code did between a PreToolUse and its PostToolUse.
/// With `written`, the Write reached the disk (variant b); without, it never happened (a).
/// `hook` runs each payload, placeholders substituted.
pub fn replay_crash_mid_write(repo: &Repo, written: bool, mut hook: impl FnMut(&str)) {
    for f in ["01-session-start", "02-user-prompt", "03-pre-todowrite", "04-post-todowrite", "05-pre-edit-config"] {
        hook(&repo.fixture(&format!("hooks/crash-mid-write/{f}.json")));
    }
    repo.write("config/settings.json", &repo.read("config/settings.json").replace("\"retries\": 3", "\"retries\": 5"));
    for f in ["06-post-edit-config", "07-pre-bash-background", "08-post-bash-background"] {
        hook(&repo.fixture(&format!("hooks/crash-mid-write/{f}.json")));
    }
    let pre = repo.fixture("hooks/crash-mid-write/09-pre-write-docs.json");
    hook(&pre);
    if written {
        let v: Value = serde_json::from_str(&pre).expect("payload is JSON");
        repo.write("docs/generated-index.md", v["tool_input"]["content"].as_str().expect("Write content"));
    }
}

/// A git repository in a temp folder: the folder itself, or a subfolder of it
/// ([`Repo::init_in`]) with room beside it for a home, other checkouts, bundles.
pub struct Repo {
    _dir: tempfile::TempDir,
    /// The temp folder (canonical): `root`, or the folder holding it.
    pub tmp: PathBuf,
    pub root: PathBuf,
    /// What `${HOME}` stands for in payloads: `/home/test` (nothing there), or a real
    /// folder after [`Repo::with_home`].
    pub home: PathBuf,
}

impl Repo {
    /// A repository with one commit of `files`.
    pub fn new(files: &[(&str, &str)]) -> Repo {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(rel, text)| (*rel, text.as_bytes())).collect();
        Repo::with_bytes(&files)
    }

    /// A repository with one commit of `files` (any bytes).
    pub fn with_bytes(files: &[(&str, &[u8])]) -> Repo {
        let repo = Repo::init(None);
        for (rel, content) in files {
            repo.write_bytes(rel, content);
        }
        repo.commit("initial");
        repo
    }

    /// A repository holding a copy of a fixture project folder.
    pub fn from_fixture(dir: &str) -> Repo {
        let repo = Repo::new(&[]);
        repo.copy_fixture(dir);
        repo.commit("fixture project");
        repo
    }

    /// An empty repository (no commit yet) in the folder `sub` of its temp folder.
    pub fn init_in(sub: &str) -> Repo {
        Repo::init(Some(sub))
    }

    /// A repository in the folder `sub` of its temp folder with one commit: a copy of the
    /// fixture project folder `dir`.
    pub fn fixture_in(sub: &str, dir: &str) -> Repo {
        let repo = Repo::init_in(sub);
        repo.copy_fixture(dir);
        repo.commit("fixture project");
        repo
    }

    fn init(sub: Option<&str>) -> Repo {
        let (dir, tmp) = scratch();
        let root = match sub {
            Some(sub) => tmp.join(sub),
            None => tmp.clone(),
        };
        std::fs::create_dir_all(&root).expect("mkdir");
        let repo = Repo { _dir: dir, tmp, root, home: PathBuf::from("/home/test") };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    /// A clone of the repository at `url` (a path), in its own temp folder: a checkout git
    /// made, as a user who clones someone's repository has.
    pub fn clone_of(url: &Path) -> Repo {
        let (dir, tmp) = scratch();
        git(&tmp, &["clone", "-q", &url.to_string_lossy(), "clone"]);
        let root = tmp.join("clone");
        Repo { _dir: dir, tmp, root, home: PathBuf::from("/home/test") }
    }

    /// Makes `${HOME}` a real, empty folder: `<tmp>/home`.
    pub fn with_home(mut self) -> Repo {
        self.home = self.tmp.join("home");
        std::fs::create_dir_all(&self.home).expect("mkdir home");
        self
    }

    /// Copies the fixture folder `dir` (below [`fixtures`]) into the repository.
    pub fn copy_fixture(&self, dir: &str) {
        copy_tree(&fixtures().join(dir), &self.root);
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(&self.root, args)
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

    /// The git blob id of the file `rel` as it is now.
    pub fn blob_id(&self, rel: &str) -> String {
        walj::store::blob_id(&std::fs::read(self.path(rel)).expect("read"))
    }

    /// Where walj's store keeps object `id`.
    pub fn store_object(&self, id: &str) -> PathBuf {
        self.root.join(".walj/store").join(&id[..2]).join(&id[2..])
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

    /// The journal's records, read with walj's own reader.
    pub fn journal_records(&self) -> Vec<Record> {
        journal_records(&self.root)
    }

    /// `walj --project <root> ARGS` (no colour, no inherited project).
    pub fn walj(&self, args: &[&str]) -> Command {
        let mut c = walj_at(&self.root);
        c.args(args);
        c
    }

    /// Runs `walj ARGS`: (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        outcome(&self.walj(args).output().expect("run walj"))
    }

    /// Runs `walj ARGS` and expects success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "walj {args:?} failed:\nstdout: {out}\nstderr: {err}");
        out
    }

    /// Runs `walj ARGS` and expects success; returns stdout parsed as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("walj {args:?}: {e}: {out}"))
    }

    /// Runs `walj ARGS` and expects failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_ne!(code, 0, "walj {args:?} should fail:\nstdout: {out}\nstderr: {err}");
        err
    }

    /// Substitutes a payload's placeholders: `${PROJECT}` (the root), `${HOME}`, and those of
    /// recorded sessions: `${PROJECT_KEY}` (Claude Code's folder name for the project),
    /// `${TMPDIR}` (`<tmp>/tmp`) and `${SANDBOX}` (`<tmp>`).
    pub fn subst(&self, text: &str) -> String {
        let key: String =
            self.root.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        subst(&text.replace("${PROJECT_KEY}", &key), &self.root, &self.home)
            .replace("${TMPDIR}", &self.tmp.join("tmp").to_string_lossy())
            .replace("${SANDBOX}", &self.tmp.to_string_lossy())
    }

    /// A fixture payload (path below [`fixtures`]) with its placeholders substituted.
    pub fn fixture(&self, rel: &str) -> String {
        self.subst(&std::fs::read_to_string(fixtures().join(rel)).expect("fixture"))
    }

    /// A SessionStart payload (`source: startup`, no transcript) of session `session`
    /// starting in the project.
    pub fn start_payload(&self, session: &str) -> String {
        json!({"session_id": session, "cwd": self.root, "hook_event_name": "SessionStart", "source": "startup"})
            .to_string()
    }

    /// Replays one payload through `walj hook` (see [`hook_run`]): (exit code, stdout, stderr).
    pub fn hook_run(&self, payload: &str, parent: Parent, locate: Locate) -> (i32, String, String) {
        hook_run(&self.root, payload, parent, locate)
    }

    /// Replays one payload through `walj hook` under a short-lived parent (`timeout`),
    /// so the session looks crashed once the hook returns. Returns stdout.
    pub fn hook(&self, payload: &str) -> String {
        hook_ok(&self.root, payload, Parent::Timeout(20))
    }

    /// Replays a payload with the test process as the hook's parent: the session stays
    /// live while the test runs.
    pub fn hook_live(&self, payload: &str) -> String {
        hook_ok(&self.root, payload, Parent::Test)
    }
}

/// Copies the folder `from` into `to`, leaving out `.git` and `.walj` folders (a project's
/// own history and journal stay behind).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            if e.file_name() == ".git" || e.file_name() == ".walj" {
                continue;
            }
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

/// Waits (at most 30 s) until no fill pass runs for the project at `root`: the detached `walj
/// --project ROOT fill` a SessionStart starts reads the tree and writes `.walj/bash/` and the
/// store in the background, so a test that compares `.walj/` before and after an action, or
/// hands it to `git add`, waits for it first.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn wait_fill_done(root: &Path) {
    let root = root.canonicalize().ok();
    let filling = || {
        std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                let args: Vec<String> = c.split(|&b| b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
                args.iter().any(|a| a == "fill") && args.iter().any(|a| Path::new(a).canonicalize().ok() == root)
            })
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while filling() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[path = "../support/recover.rs"]
mod recover_text;
#[allow(unused_imports)] // not every test binary that includes this module uses it
pub use recover_text::{recover_marks, says_cut_off};
