//! One project root, end to end with the real Claude Code CLI (pinned by
//! `scripts/claude-code.sh`, 2.1.328; the settings table of docs/project-root.md was also
//! checked with 2.1.332), driven offline by the scripted stand-in model (`tests/support`).
//!
//! For each install mode (`walj install`, `--local`, `--user`, the plugin with
//! `--plugin-dir`) a session started in `pkg/core/` writes a file there, changes a file two
//! levels up with Bash, and is killed (-9) in a `sleep`: the crash is in `walj recover` at the
//! root and in the subfolder, with root-relative paths; the Bash change outside the subfolder
//! is an entry; the next session started at the root is told. A session started through a
//! symbolic link to the project is journaled inside the project and reverts through the
//! link's spelling. And the table itself: which settings files a subfolder start runs.
//!
//! Skipped (with a `SKIPPED:` line) when the CLI cannot be installed; `WALJ_E2E_REQUIRE=1`
//! (CI) turns that into a failure.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{MockServer, Turn};
use crate::support::claude::{self, Sandbox};
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const SESSION_TIMEOUT: Duration = Duration::from_secs(180);

fn walj_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Settings,
    Local,
    User,
    Plugin,
}

/// A sandbox with a committed project holding `pkg/core/`, and `bin/` with walj.
fn sandbox() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    sb.write("pkg/core/lib.rs", "pub fn core() {}\n");
    sb.write("README", "shop\n");
    sb.commit("initial");
    let bin = sb.dir.path().canonicalize().unwrap().join("bin");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(walj_bin(), bin.join("walj")).unwrap();
    (sb, bin)
}

fn path_with(bin: &Path) -> String {
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

/// `walj ARGS` in `cwd` as the user runs it (walj on PATH, the sandbox HOME).
fn walj(sb: &Sandbox, bin: &Path, cwd: &Path, args: &[&str]) -> String {
    let o = Command::new(walj_bin())
        .args(args)
        .current_dir(cwd)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("CLAUDECODE")
        .env_remove("WALJ_JOURNAL")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env("PATH", path_with(bin))
        .env("HOME", &sb.home)
        .env("TMPDIR", &sb.tmp)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "walj {args:?}: {text}");
    text
}

/// Installs walj in `mode`; returns the extra `claude` arguments (the plugin's folder).
fn install(sb: &Sandbox, bin: &Path, mode: Mode) -> Vec<String> {
    match mode {
        Mode::Settings => {
            walj(sb, bin, &sb.project, &["install"]);
        }
        Mode::Local => {
            walj(sb, bin, &sb.project, &["install", "--local"]);
        }
        Mode::User => {
            walj(sb, bin, &sb.project, &["install", "--user"]);
        }
        Mode::Plugin => {
            let dir = sb.dir.path().canonicalize().unwrap().join("plugin");
            walj(sb, bin, &sb.project, &["plugin", "--out", dir.to_str().unwrap()]);
            return vec!["--plugin-dir".into(), dir.display().to_string()];
        }
    }
    Vec::new()
}

fn journal(root: &Path) -> Vec<Value> {
    fs::read_to_string(root.join(".walj/journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("journal line is not JSON ({e}): {l}")))
        .collect()
}

/// The saver hook for the kill helper, in the subfolder's own local settings (Claude Code runs
/// them for a session started there: docs/project-root.md).
fn saver(sb: &Sandbox, start: &Path) -> PathBuf {
    let dir = sb.dir.path().canonicalize().unwrap().join("payloads");
    fs::create_dir_all(&dir).unwrap();
    fs::create_dir_all(start.join(".claude")).unwrap();
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": claude::saver_command(&dir)}]}]}});
    fs::write(start.join(".claude/settings.local.json"), hooks.to_string()).unwrap();
    dir
}

/// A session started in `start` (the subfolder, or a link's spelling of it) writes
/// `new.rs` there, runs `echo z > ../../made.txt`, and is killed in a `sleep`.
fn crash_in(sb: &Sandbox, bin: &Path, mock: &MockServer, start: &Path, extra: &[String]) -> String {
    let payloads = saver(sb, start);
    // Claude Code 2.1.328 blocks a standalone `sleep N`: a loop that waits for a file never made.
    let sleep = format!("until test -e {}; do sleep 1; done", claude::unique_token("never-"));
    mock.script(vec![
        Turn::tool("Write", json!({"file_path": start.join("new.rs"), "content": "pub fn new() {}\n"})),
        Turn::tool("Bash", json!({"command": "echo z > ../../made.txt", "description": "Outside"})),
        Turn::tool("Bash", json!({"command": sleep.clone(), "description": "Wait"})),
        Turn::text("Done."),
    ]);
    let mut cmd = sb.claude_p(bin_claude(), mock, "go");
    cmd.current_dir(start).env("PWD", start).env("PATH", path_with(bin)).args(extra);
    let running = claude::spawn(cmd);
    let crash = claude::kill9_at_payload(running, sb, &payloads, Duration::from_secs(40), |p| {
        p["tool_name"] == "Bash" && p["tool_input"]["command"].as_str().is_some_and(|c| c.contains(&sleep))
    })
    .unwrap_or_else(|e| panic!("{e}\nrequests:\n{}", mock.summary()));
    claude::kill9_tree(&crash.descendants.iter().map(|(p, _)| *p).collect::<Vec<_>>());
    // The last hook (PreToolUse of the sleep) may still be writing.
    std::thread::sleep(Duration::from_millis(500));
    crash.session_id
}

static CLAUDE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

fn bin_claude() -> &'static Path {
    CLAUDE.get().and_then(|c| c.as_deref()).expect("claude binary")
}

fn have_claude(test: &str) -> bool {
    CLAUDE.get_or_init(|| claude::claude_or_skip(test)).is_some()
}

fn subfolder_start(mode: Mode) {
    if !have_claude(&format!("subfolder_start_{mode:?}")) {
        return;
    }
    let (sb, bin) = sandbox();
    let extra = install(&sb, &bin, mode);
    let sub = sb.project.join("pkg/core");
    let mock = MockServer::start(vec![]);
    let sid = crash_in(&sb, &bin, &mock, &sub, &extra);

    assert!(!sub.join(".walj/journal.jsonl").exists(), "{mode:?}: nothing journaled in the subfolder");
    let j = journal(&sb.project);
    let text = fs::read_to_string(sb.project.join(".walj/journal.jsonl")).unwrap_or_default();
    assert!(
        j.iter().any(|r| r["op"] == "intent"
            && r["tool"] == "Write"
            && r["path"] == "pkg/core/new.rs"
            && r["session"] == sid.as_str()),
        "{mode:?}: the Write, root-relative:\n{text}"
    );
    assert!(j.iter().any(|r| r["path"] == "made.txt"), "{mode:?}: the Bash change outside the subfolder:\n{text}");
    assert_eq!(fs::read_to_string(sb.project.join("made.txt")).unwrap(), "z\n");

    for cwd in [&sb.project, &sub] {
        let out = walj(&sb, &bin, cwd, &["recover"]);
        assert!(
            out.contains("pkg/core/new.rs") && out.contains("made.txt"),
            "{mode:?}: recover in {}:\n{out}",
            cwd.display()
        );
        assert!(!out.contains("walj install"), "{mode:?}: {out}");
    }

    // The next session, started at the root, is told.
    mock.script(vec![Turn::text("Noted.")]);
    let mut cmd = sb.claude_p(bin_claude(), &mock, "hello");
    cmd.env("PATH", path_with(&bin)).args(&extra);
    let before = mock.requests().len();
    let out = claude::run(cmd, SESSION_TIMEOUT);
    assert!(out.status.success(), "{mode:?}: {out:?}");
    let told = mock.requests()[before..].iter().any(|r| r.to_string().contains("pkg/core/new.rs"));
    assert!(told, "{mode:?}: the root session was not told:\n{}", mock.summary());
}

#[test]
fn subfolder_start_walj_install() {
    subfolder_start(Mode::Settings);
}

#[test]
fn subfolder_start_install_local() {
    subfolder_start(Mode::Local);
}

#[test]
fn subfolder_start_install_user() {
    subfolder_start(Mode::User);
}

#[test]
fn subfolder_start_plugin() {
    subfolder_start(Mode::Plugin);
}

#[test]
fn a_session_through_a_symlinked_path_reverts_through_the_link() {
    if !have_claude("a_session_through_a_symlinked_path_reverts_through_the_link") {
        return;
    }
    let (sb, bin) = sandbox();
    install(&sb, &bin, Mode::Settings);
    let link = sb.dir.path().canonicalize().unwrap().join("link");
    std::os::unix::fs::symlink(&sb.project, &link).unwrap();
    let mock = MockServer::start(vec![]);
    let sid = crash_in(&sb, &bin, &mock, &link.join("pkg/core"), &[]);
    let j = journal(&sb.project);
    let new: Vec<&Value> = j.iter().filter(|r| r["path"] == "pkg/core/new.rs").collect();
    assert!(!new.is_empty(), "{j:?}");
    assert!(new.iter().all(|r| r["outside"].is_null() && r["event"] != "file_modified"), "{new:?}");
    let out = walj(&sb, &bin, &link, &["revert", "--session", &sid, "--yes"]);
    assert!(!sb.project.join("pkg/core/new.rs").exists(), "reverted through the link:\n{out}");
}

/// The table of docs/project-root.md: which settings files' hooks a session started in a
/// subfolder runs (a logging SessionStart hook in each).
#[test]
fn which_settings_files_a_subfolder_start_runs() {
    if !have_claude("which_settings_files_a_subfolder_start_runs") {
        return;
    }
    let (sb, _bin) = sandbox();
    let log = sb.dir.path().canonicalize().unwrap().join("ran");
    let logger = |name: &str| {
        json!({"hooks": {"SessionStart": [{"matcher": "", "hooks": [{"type": "command",
            "command": format!("echo {name} >> {}", claude::sh_quote(&log))}]}]}})
        .to_string()
    };
    let files = [
        (".claude/settings.json", "root-settings"),
        (".claude/settings.local.json", "root-local"),
        ("pkg/.claude/settings.json", "parent-settings"),
        ("pkg/.claude/settings.local.json", "parent-local"),
        ("pkg/core/.claude/settings.json", "start-settings"),
        ("pkg/core/.claude/settings.local.json", "start-local"),
    ];
    for (rel, name) in files {
        sb.write(rel, &logger(name));
    }
    fs::create_dir_all(sb.home.join(".claude")).unwrap();
    fs::write(sb.home.join(".claude/settings.json"), logger("user")).unwrap();
    let mock = MockServer::start(vec![Turn::text("ok")]);
    let ran = |cwd: &Path| {
        let _ = fs::remove_file(&log);
        let mut cmd = sb.claude_p(bin_claude(), &mock, "hi");
        cmd.current_dir(cwd);
        let out = claude::run(cmd, SESSION_TIMEOUT);
        assert!(out.status.success(), "{out:?}");
        let mut v: Vec<String> = fs::read_to_string(&log).unwrap_or_default().lines().map(str::to_string).collect();
        v.sort();
        v
    };
    assert_eq!(ran(&sb.project), ["root-local", "root-settings", "user"]);
    assert_eq!(ran(&sb.project.join("pkg/core")), ["root-local", "start-local", "start-settings", "user"]);
}
