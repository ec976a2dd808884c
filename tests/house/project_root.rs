//! One project root wherever Claude Code is started (docs/project-root.md): the real `walj`
//! binary, hook payloads shaped as Claude Code 2.1.328 sends them, real git repositories.
//!
//! - a session started in a subfolder journals into the root's `.walj/`, paths relative to
//!   the root, its start folder kept (`cwd` of its start record);
//! - a project reached through a symbolic link: a Write through the link's spelling is inside
//!   the project, recorded as a creation, and revert works;
//! - outside git, the project is never `$HOME`, even when `$HOME` has `.claude/` and a `.walj/`;
//! - `walj install` covers subfolder starts, `walj doctor` finds the gap of a settings.json-only
//!   install; the newcomer messages of recover/log/sessions/status.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn walj() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

/// A scratch HOME, runtime dir and state dir, and a folder for projects.
struct Env {
    _dir: tempfile::TempDir,
    base: PathBuf,
    home: PathBuf,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let home = base.join("home");
        for d in ["home", "run", "state"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        Env { _dir: dir, base, home }
    }

    /// A git repository `name` with one commit and a `pkg/core/` subfolder.
    fn repo(&self, name: &str) -> PathBuf {
        let root = self.base.join(name);
        fs::create_dir_all(root.join("pkg/core")).unwrap();
        fs::write(root.join("pkg/core/lib.rs"), "pub fn core() {}\n").unwrap();
        fs::write(root.join("README"), "shop\n").unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "initial"]);
        root
    }

    fn cmd(&self, cwd: &Path) -> Command {
        let mut c = Command::new(walj());
        c.current_dir(cwd)
            .env_remove("CLAUDECODE")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", self.base.join("run"))
            .env("XDG_STATE_HOME", self.base.join("state"))
            .env("NO_COLOR", "1");
        c
    }

    /// `walj ARGS` in `cwd`: (exit code, stdout, stderr).
    fn walj(&self, cwd: &Path, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(cwd).args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    /// `walj hook` as Claude Code runs it for a session started in `start`: cwd and
    /// `$CLAUDE_PROJECT_DIR` = `start` (under a short-lived parent, so the session looks
    /// crashed afterwards). `extra` are more arguments (`--project DIR`).
    fn hook(&self, start: &Path, payload: &Value, extra: &[&str]) -> String {
        let mut c = Command::new("timeout");
        c.arg("20").arg(walj()).args(extra).arg("hook");
        c.current_dir(start)
            .env_remove("CLAUDECODE")
            .env_remove("WALJ_JOURNAL")
            .env("CLAUDE_PROJECT_DIR", start)
            .env("HOME", &self.home)
            .env("XDG_RUNTIME_DIR", self.base.join("run"))
            .env("XDG_STATE_HOME", self.base.join("state"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "walj hook must exit 0: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into()
    }
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "git {args:?}");
}

fn start(session: &str, cwd: &Path) -> Value {
    json!({"session_id": session, "transcript_path": "/nonexistent/t.jsonl", "cwd": cwd,
           "hook_event_name": "SessionStart", "source": "startup", "model": "claude-test"})
}

fn write(session: &str, cwd: &Path, event: &str, file: &Path, content: &str, id: &str) -> Value {
    let mut v = json!({"session_id": session, "transcript_path": "/nonexistent/t.jsonl", "cwd": cwd,
        "permission_mode": "acceptEdits", "hook_event_name": event, "tool_name": "Write",
        "tool_input": {"file_path": file, "content": content}, "tool_use_id": id});
    if event == "PostToolUse" {
        v["tool_response"] = json!({"type": "create", "filePath": file, "content": content});
    }
    v
}

fn records(journal: &Path) -> Vec<Value> {
    fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn paths_of(recs: &[Value]) -> Vec<String> {
    recs.iter().filter_map(|r| r["path"].as_str().map(str::to_string)).collect()
}

#[test]
fn a_session_started_in_a_subfolder_journals_at_the_root_with_root_relative_paths() {
    let env = Env::new();
    let root = env.repo("shop");
    let sub = root.join("pkg/core");
    env.hook(&sub, &start("s-sub", &sub), &[]);
    // A relative path from the subfolder, and an absolute one outside it.
    env.hook(&sub, &write("s-sub", &sub, "PreToolUse", Path::new("new.rs"), "x\n", "t1"), &[]);
    fs::write(sub.join("new.rs"), "x\n").unwrap();
    env.hook(&sub, &write("s-sub", &sub, "PostToolUse", Path::new("new.rs"), "x\n", "t1"), &[]);
    env.hook(&sub, &write("s-sub", &sub, "PreToolUse", &root.join("top.txt"), "t\n", "t2"), &[]);

    assert!(!sub.join(".walj").exists(), "nothing in the subfolder");
    let recs = records(&root.join(".walj/journal.jsonl"));
    let paths = paths_of(&recs);
    assert!(paths.contains(&"pkg/core/new.rs".to_string()), "{paths:?}");
    assert!(paths.contains(&"top.txt".to_string()), "{paths:?}");
    assert!(recs.iter().all(|r| r["outside"].is_null()), "{recs:?}");
    let st = recs.iter().find(|r| r["kind"] == "start").unwrap();
    assert_eq!(st["cwd"].as_str(), Some(sub.to_str().unwrap()), "the start folder is kept");

    // Resumed where it was started: Claude Code keys `--resume` by the start folder.
    let (code, out, err) = env.walj(&root, &["sessions", "show", "s-sub"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("cd pkg/core && claude --resume s-sub"), "{out}");

    // The crash is shown at the root and in the subfolder alike.
    for cwd in [&root, &sub] {
        let (code, out, err) = env.walj(cwd, &["recover"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("top.txt"), "recover in {}: {out}", cwd.display());
    }
}

#[cfg(unix)]
#[test]
fn a_write_through_a_symlinked_project_path_is_inside_and_reverts() {
    let env = Env::new();
    let root = env.repo("real");
    let link = env.base.join("link");
    std::os::unix::fs::symlink(&root, &link).unwrap();
    env.hook(&link, &start("s-link", &link), &[]);
    let f = link.join("pkg/core/made.rs");
    env.hook(&link, &write("s-link", &link, "PreToolUse", &f, "new\n", "t1"), &[]);
    fs::write(&f, "new\n").unwrap();
    env.hook(&link, &write("s-link", &link, "PostToolUse", &f, "new\n", "t1"), &[]);

    let recs = records(&root.join(".walj/journal.jsonl"));
    let rec: Vec<&Value> = recs.iter().filter(|r| r["path"] == "pkg/core/made.rs").collect();
    assert!(!rec.is_empty(), "{recs:?}");
    assert!(rec.iter().all(|r| r["outside"].is_null()), "{rec:?}");
    assert!(rec.iter().all(|r| r["event"] != "file_modified"), "a creation, not a modification: {rec:?}");
    assert!(rec.iter().any(|r| r["event"] == "artifact_created"), "{rec:?}");

    // Revert through the link's spelling: the created file goes (to walj's trash, not lost).
    let (code, out, err) = env.walj(&link, &["revert", "--session", "s-link", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!root.join("pkg/core/made.rs").exists(), "reverted: {out}{err}");
}

#[test]
fn outside_git_the_project_is_never_home() {
    let env = Env::new();
    fs::create_dir_all(env.home.join(".claude")).unwrap();
    // A walj-made .walj/ in $HOME itself (a `walj` run there once).
    let (code, _, err) = env.walj(&env.home, &["--project", env.home.to_str().unwrap(), "install", "--local"]);
    assert_eq!(code, 0, "{err}");
    assert!(env.home.join(".walj").is_dir());
    let proj = env.home.join("notes");
    let deep = proj.join("drafts");
    fs::create_dir_all(&deep).unwrap();
    env.hook(&proj, &start("s-home", &proj), &[]);
    env.hook(&proj, &write("s-home", &proj, "PreToolUse", &proj.join("a.md"), "a\n", "t1"), &[]);
    assert!(paths_of(&records(&proj.join(".walj/journal.jsonl"))).contains(&"a.md".to_string()));
    assert!(!env.home.join(".walj/journal.jsonl").exists(), "not $HOME's");
    // A session started deeper finds the .walj/ walj made in notes/ (not $HOME's).
    env.hook(&deep, &start("s-deep", &deep), &[]);
    env.hook(&deep, &write("s-deep", &deep, "PreToolUse", &deep.join("d.md"), "d\n", "t2"), &[]);
    assert!(paths_of(&records(&proj.join(".walj/journal.jsonl"))).contains(&"drafts/d.md".to_string()));
    assert!(!deep.join(".walj").exists());
    // A .walj/ walj did not make (copied in) is no root.
    let other = env.home.join("dl");
    fs::create_dir_all(other.join(".walj")).unwrap();
    fs::create_dir_all(other.join("x")).unwrap();
    env.hook(&other.join("x"), &start("s-dl", &other.join("x")), &[]);
    assert!(other.join("x/.walj/journal.jsonl").exists() && !other.join(".walj/journal.jsonl").exists());
}

#[test]
fn install_covers_subfolder_starts_and_doctor_finds_the_gap() {
    let env = Env::new();
    let root = env.repo("app");
    let sub = root.join("pkg/core");
    // The newcomer, before anything: not installed.
    let (_, out, _) = env.walj(&sub, &["recover"]);
    assert!(out.contains("walj is not installed here: run `walj install`"), "{out}");
    // An install from before: hooks in settings.json alone.
    let (code, _, err) = env.walj(&root, &["install", "--command", "walj hook"]);
    assert_eq!(code, 0, "{err}");
    let local = root.join(".claude/settings.local.json");
    let text = fs::read_to_string(&local).unwrap();
    assert!(text.contains("walj"), "install writes the local copy: {text}");
    let exclude = fs::read_to_string(root.join(".git/info/exclude")).unwrap();
    assert!(exclude.contains("/.claude/settings.local.json"), "{exclude}");
    // Right after install: installed, nothing recorded, in every command.
    for args in [&["recover"][..], &["log"], &["sessions"], &["status"]] {
        let (_, out, _) = env.walj(&sub, args);
        assert!(
            out.contains("walj is installed (.claude/settings.json, .claude/settings.local.json)"),
            "{args:?}: {out}"
        );
        assert!(out.contains("nothing recorded yet"), "{args:?}: {out}");
        assert!(!out.contains("not installed"), "{args:?}: {out}");
    }
    let (_, out, _) = env.walj(&root, &["doctor"]);
    assert!(out.contains("sessions started in any subfolder journal into"), "{out}");

    // The gap: the local copy gone (an install of before).
    fs::remove_file(&local).unwrap();
    let (_, out, _) = env.walj(&root, &["doctor"]);
    // A warning (exit 1 where nothing else is wrong): those sessions journal nothing.
    assert!(out.contains("[warn] walj's hooks are in .claude/settings.json only"), "{out}");
    assert!(out.contains("sessions started in pkg/ or any folder below them are not journaled"), "{out}");
    let (_, out, _) = env.walj(&sub, &["recover"]);
    assert!(out.contains("Sessions started in a subfolder are not journaled"), "{out}");
    let (_, out, _) = env.walj(&root, &["doctor", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(v["findings"].as_array().unwrap().iter().any(|f| f["check"] == "subfolder" && f["level"] == "warn"), "{v}");

    // uninstall removes both.
    env.walj(&root, &["install", "--command", "walj hook"]);
    let (code, out, err) = env.walj(&root, &["uninstall", "--command", "walj hook"]);
    assert_eq!(code, 0, "{err}");
    assert!(!local.exists(), "the local copy install made is gone: {out}");
}

#[test]
fn a_plugin_user_is_never_told_to_walj_install() {
    let env = Env::new();
    let root = env.repo("plug");
    fs::create_dir_all(env.home.join(".claude")).unwrap();
    fs::write(env.home.join(".claude/settings.json"), r#"{"enabledPlugins": {"walj@walj": true}}"#).unwrap();
    for args in [&["recover"][..], &["log"], &["sessions"], &["status"]] {
        let (_, out, _) = env.walj(&root.join("pkg/core"), args);
        assert!(out.contains("walj is installed (the walj plugin); nothing recorded yet"), "{args:?}: {out}");
        assert!(!out.contains("walj install"), "{args:?}: {out}");
    }
}

#[test]
fn another_worktree_with_unresolved_sessions_is_one_line() {
    let env = Env::new();
    let root = env.repo("main");
    let wt = env.base.join("wt2");
    git(&root, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    env.hook(&wt, &start("s-wt", &wt), &[]);
    env.hook(&wt, &write("s-wt", &wt, "PreToolUse", &wt.join("w.rs"), "w\n", "t1"), &[]);
    let (_, out, _) = env.walj(&root, &["recover"]);
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("Another worktree")).collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].contains(&format!("walj --project {} recover", wt.display())), "{out}");
}
