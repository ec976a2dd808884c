//! One liveness truth for every way the README installs walj, end to end with the real Claude
//! Code CLI: `walj install` (settings), `claude --plugin-dir` (the folder `walj plugin --out`
//! writes), the marketplace plugin (its sh launcher `plugin/bin/walj`), and the npm package's
//! launcher (packed and installed offline; skipped without npm).
//!
//! In each route, while the session hangs in a Bash `sleep`: `walj sessions list` says `live`
//! and `walj revert --all --dry-run` offers none of its entries (it says it left them out);
//! after `kill -9` of Claude Code the session is `crashed`; a session that exits normally is
//! `ended`; `walj doctor`, run from the user's shell, finds the route and advises no second
//! install. `WALJ_E2E_LOAD=N` runs N busy loops meanwhile (the states must not depend on timing).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{MockServer, Turn};
use crate::support::claude::{self, Sandbox};
use serde_json::{Value, json};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SESSION_TIMEOUT: Duration = Duration::from_secs(180);
/// How long hooks that outlive `claude` (SessionEnd) get to write their record.
const HOOK_GRACE: Duration = Duration::from_secs(15);

fn walj_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The test's PATH without any folder holding a `walj`.
fn path_without_walj() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).filter(|d| !d.join("walj").exists()).collect();
    std::env::join_paths(dirs).unwrap().to_string_lossy().into_owned()
}

/// How walj's hooks reach a session.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// `walj install` (walj on PATH).
    Settings,
    /// `claude --plugin-dir DIR`, DIR written by `walj plugin --out` (walj not on PATH).
    PluginDir,
    /// `claude plugin marketplace add <repo>` + `claude plugin install walj@walj`: the launcher.
    Marketplace,
    /// The npm package installed offline into a prefix, then `walj install` through it.
    Npm,
}

/// What a session of a route needs: its PATH and `claude`'s extra arguments.
struct Setup {
    path: String,
    args: Vec<OsString>,
}

fn run_ok(mut cmd: Command, what: &str) -> String {
    let o = cmd.stdin(Stdio::null()).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{what} failed: {text}");
    text
}

fn npm_available() -> bool {
    Command::new("npm").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Installs walj the route's way; `None` (with a `SKIPPED:` line) when the route cannot be had.
fn install(route: Route, sb: &Sandbox, claude_bin: &Path) -> Option<Setup> {
    let root = sb.dir.path().canonicalize().unwrap();
    let walj_dir = root.join("bin");
    fs::create_dir_all(&walj_dir).unwrap();
    std::os::unix::fs::symlink(walj_bin(), walj_dir.join("walj")).unwrap();
    let with_walj = format!("{}:{}", walj_dir.display(), path_without_walj());
    let walj_install = |path: &str| {
        let mut c = Command::new("walj");
        c.arg("install").current_dir(&sb.project).env("PATH", path).env("HOME", &sb.home);
        run_ok(c, "walj install");
    };
    match route {
        Route::Settings => {
            walj_install(&with_walj);
            Some(Setup { path: with_walj, args: vec![] })
        }
        Route::PluginDir => {
            let dir = root.join("walj-plugin");
            let mut c = Command::new(walj_bin());
            c.args(["plugin", "--out"]).arg(&dir);
            run_ok(c, "walj plugin --out");
            Some(Setup { path: path_without_walj(), args: vec!["--plugin-dir".into(), dir.into()] })
        }
        Route::Marketplace => {
            for args in [&["marketplace", "add", repo().to_str().unwrap()][..], &["install", "walj@walj"]] {
                let mut c = Command::new(claude_bin);
                c.arg("plugin")
                    .args(args)
                    .current_dir(&sb.project)
                    .env_clear()
                    .env("PATH", path_without_walj())
                    .env("HOME", &sb.home)
                    .env("TMPDIR", &sb.tmp)
                    .env("DISABLE_AUTOUPDATER", "1")
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
                run_ok(c, &format!("claude plugin {args:?}"));
            }
            Some(Setup { path: with_walj, args: vec![] })
        }
        Route::Npm => {
            if !npm_available() {
                if std::env::var_os("WALJ_E2E_REQUIRE").is_some_and(|v| v == "1") {
                    panic!("npm is not installed");
                }
                println!("SKIPPED: the npm route: npm is not installed");
                return None;
            }
            let tarballs = root.join("tarballs");
            let mut c = Command::new(repo().join("scripts/npm-pack.sh"));
            c.arg("--bin").arg(format!("linux-x64={}", walj_bin().display())).arg("--out").arg(&tarballs);
            let packed = run_ok(c, "npm-pack.sh");
            let tgz: Vec<&str> = packed.lines().filter(|l| l.ends_with(".tgz")).collect();
            assert_eq!(tgz.len(), 2, "{packed}");
            let prefix = root.join("prefix");
            let mut c = Command::new("npm");
            // The platform package first (the main one names it as an optional dependency).
            c.args(["install", "-g", "--prefix"])
                .arg(&prefix)
                .args([tgz[1], tgz[0]])
                .args(["--offline", "--no-audit", "--no-fund", "--cache"])
                .arg(root.join("npm-cache"))
                .current_dir(&root)
                .env("npm_config_update_notifier", "false");
            run_ok(c, "npm install -g --offline");
            let path = format!("{}:{}", prefix.join("bin").display(), path_without_walj());
            walj_install(&path);
            Some(Setup { path, args: vec![] })
        }
    }
}

/// `walj ARGS` in the project (as the user runs it in a terminal): (success, stdout + stderr).
fn walj(sb: &Sandbox, args: &[&str]) -> (bool, String) {
    let o = Command::new(walj_bin())
        .args(args)
        .current_dir(&sb.project)
        .env_clear()
        .env("PATH", path_without_walj())
        .env("HOME", &sb.home)
        .env("TMPDIR", &sb.tmp)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (o.status.success(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

/// The state `walj sessions list --json` gives the session `sid`.
fn state(sb: &Sandbox, sid: &str) -> String {
    let (ok, out) = walj(sb, &["sessions", "list", "--json"]);
    assert!(ok, "walj sessions list: {out}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    let s = v.as_array().unwrap().iter().find(|s| s["session"] == sid).unwrap_or_else(|| panic!("no {sid}: {v:#}"));
    s["state"].as_str().unwrap_or_default().to_string()
}

fn journal_text(sb: &Sandbox) -> String {
    fs::read_to_string(sb.project.join(".walj/journal.jsonl")).unwrap_or_default()
}

fn records(sb: &Sandbox) -> Vec<Value> {
    journal_text(sb).lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Busy loops that load the machine while a route is checked (`WALJ_E2E_LOAD=N`: N of them,
/// default none), killed on drop. The states must not depend on timing.
struct Load(Vec<std::process::Child>);

impl Load {
    fn from_env() -> Load {
        let n: usize = std::env::var("WALJ_E2E_LOAD").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        Load(
            (0..n)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The whole check of one route.
fn liveness_through(route: Route, test: &str) {
    let Some(bin) = claude::claude_or_skip(test) else {
        return;
    };
    let _load = Load::from_env();
    let sb = Sandbox::new();
    sb.write("src/main.rs", "fn main() {}\n");
    sb.commit("initial");
    let Some(setup) = install(route, &sb, &bin) else {
        return;
    };
    let token = claude::unique_token("walj-route");
    let p = |rel: &str| sb.project.join(rel).to_string_lossy().into_owned();

    // A session that hangs in a Bash `sleep` after writing a file.
    let mock = MockServer::start(vec![
        Turn::tool("Write", json!({"file_path": p("new.txt"), "content": "hello\n"})),
        Turn::tool(
            "Bash",
            json!({"command": format!("echo started > ready.txt; sleep 60 # {token}"), "description": "Wait"}),
        ),
        Turn::text("Done."),
    ]);
    let mut cmd = sb.claude_p(&bin, &mock, "Write and wait");
    cmd.env("PATH", &setup.path).args(&setup.args);
    let mut running = claude::spawn(cmd);
    let pid = running.pid();
    let sid = claude::bash_running(&sb, pid, ("toolu_mock_1_0", &token, "ready.txt"), SESSION_TIMEOUT, || {
        records(&sb)
            .into_iter()
            .find(|r| r["op"] == "intent" && r["id"] == "toolu_mock_1_0")
            .and_then(|r| r["session"].as_str().map(str::to_string))
    });
    let check_live = || -> Result<(), String> {
        let Some(sid) = &sid else { return Err("the Bash command never started".into()) };
        let st = state(&sb, sid);
        if st != "live" {
            return Err(format!("{route:?}: the hanging session is {st}, not live"));
        }
        let (_, out) = walj(&sb, &["revert", "--all", "--dry-run"]);
        if out.lines().any(|l| l.contains("would") && l.contains("new.txt")) {
            return Err(format!("{route:?}: revert --all --dry-run offers the live session's entries:\n{out}"));
        }
        if !out.contains("still live") {
            return Err(format!("{route:?}: revert --all --dry-run does not say it left the live session out:\n{out}"));
        }
        Ok(())
    };
    let live = check_live();
    running.kill9();
    let out = running.wait(Duration::from_secs(10));
    claude::kill9_tree(&claude::pids_mentioning(&token));
    if let Err(e) = live {
        panic!("{e}\nclaude: {out:?}\n{}\njournal:\n{}", mock.summary(), journal_text(&sb));
    }
    let sid = sid.unwrap();
    assert_eq!(state(&sb, &sid), "crashed", "{route:?} after kill -9\n{}", journal_text(&sb));

    // A session that exits normally.
    let mock = MockServer::start(vec![
        Turn::tool("Write", json!({"file_path": p("other.txt"), "content": "bye\n"})),
        Turn::text("Done."),
    ]);
    let mut cmd = sb.claude_p(&bin, &mock, "Write one");
    cmd.env("PATH", &setup.path).args(&setup.args);
    let out = claude::run(cmd, SESSION_TIMEOUT);
    assert!(out.status.success(), "{out:?}\n{}", mock.summary());
    let sid2 = out.json()["session_id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + HOOK_GRACE;
    while Instant::now() < deadline
        && !records(&sb).iter().any(|r| r["op"] == "session" && r["kind"] == "end" && r["session"] == sid2.as_str())
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(state(&sb, &sid2), "ended", "{route:?}\n{}", journal_text(&sb));
    assert_eq!(fs::read_to_string(sb.project.join(".walj/errors.log")).unwrap_or_default(), "", "{route:?}");

    // `walj doctor` from the user's shell (the route's PATH) knows the route: not broken, no
    // second install advised.
    let o = Command::new(walj_bin())
        .arg("doctor")
        .current_dir(&sb.project)
        .env_clear()
        .env("PATH", &setup.path)
        .env("HOME", &sb.home)
        .env("TMPDIR", &sb.tmp)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.code().is_some_and(|c| c < 2), "{route:?}: doctor: {o:?}\n{text}");
    assert!(!text.contains("run `walj install`") && !text.contains("installed twice"), "{route:?}: {text}");
}

#[test]
fn settings_route_live_crashed_ended() {
    liveness_through(Route::Settings, "settings_route_live_crashed_ended");
}

#[test]
fn plugin_dir_route_live_crashed_ended() {
    liveness_through(Route::PluginDir, "plugin_dir_route_live_crashed_ended");
}

#[test]
fn marketplace_route_live_crashed_ended() {
    liveness_through(Route::Marketplace, "marketplace_route_live_crashed_ended");
}

#[test]
fn npm_route_live_crashed_ended() {
    liveness_through(Route::Npm, "npm_route_live_crashed_ended");
}
