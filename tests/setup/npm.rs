//! The npm packages (`scripts/npm-pack.sh`), installed without a registry: the packages are
//! built from a walj binary (`WALJ_NPM_BIN`, e.g. the release build `scripts/walj-bin.sh`
//! names; else the binary under test), installed from their tarballs with `npm install -g --offline` into a scratch prefix;
//! `walj install` run from that prefix writes `walj hook`, and a real Claude Code session
//! (scripted model) is journaled through the package's launcher, with Claude Code as the
//! hook's parent (the launcher `exec`s the binary). `npx walj install` refuses.
//!
//! Skipped (with a `SKIPPED:` line) without npm, or (the session) without the Claude Code CLI;
//! `WALJ_E2E_REQUIRE=1` turns that into a failure.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{MockServer, Turn};
use crate::support::claude::{self, Sandbox};
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary the packages carry.
fn packaged_binary() -> PathBuf {
    std::env::var_os("WALJ_NPM_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_walj")))
}

fn npm_or_skip(test: &str) -> bool {
    let ok = Command::new("npm")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        if std::env::var_os("WALJ_E2E_REQUIRE").is_some_and(|v| v == "1") {
            panic!("{test}: npm is not installed");
        }
        println!("SKIPPED: {test}: npm is not installed");
    }
    ok
}

/// The test's PATH without any folder holding a `walj`.
fn path_without_walj() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).filter(|d| !d.join("walj").exists()).collect();
    std::env::join_paths(dirs).unwrap().to_string_lossy().into_owned()
}

struct Packages {
    main: PathBuf,
    platform: PathBuf,
}

/// `scripts/npm-pack.sh --bin linux-x64=BIN --out DIR`.
fn pack(out: &Path) -> Packages {
    let o = Command::new(repo().join("scripts/npm-pack.sh"))
        .arg("--bin")
        .arg(format!("linux-x64={}", packaged_binary().display()))
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "npm-pack.sh: {o:?}");
    let lines: Vec<PathBuf> = String::from_utf8_lossy(&o.stdout).lines().map(PathBuf::from).collect();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        lines,
        vec![out.join(format!("walj-{version}.tgz")), out.join(format!("walj-linux-x64-{version}.tgz"))],
        "{o:?}"
    );
    Packages { main: lines[0].clone(), platform: lines[1].clone() }
}

/// A file of a tarball (`package/<rel>`).
fn tar_file(tgz: &Path, rel: &str) -> Vec<u8> {
    let o = Command::new("tar").arg("xzOf").arg(tgz).arg(format!("package/{rel}")).output().unwrap();
    assert!(o.status.success(), "{rel} in {}: {o:?}", tgz.display());
    o.stdout
}

/// `npm ARGS` offline with a private cache.
fn npm(args: &[&str], cache: &Path, cwd: &Path) -> std::process::Output {
    Command::new("npm")
        .args(args)
        .args(["--offline", "--no-audit", "--no-fund", "--cache"])
        .arg(cache)
        .current_dir(cwd)
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn packages_have_os_and_cpu_and_no_install_script() {
    if !npm_or_skip("packages_have_os_and_cpu_and_no_install_script") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let p = pack(tmp.path());
    let main: Value = serde_json::from_slice(&tar_file(&p.main, "package.json")).unwrap();
    assert_eq!(main["name"], "walj");
    assert_eq!(main["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(main["bin"], json!({"walj": "bin/walj"}));
    assert_eq!(main["optionalDependencies"], json!({"@walj/linux-x64": env!("CARGO_PKG_VERSION")}));
    assert!(main.get("scripts").is_none(), "an install script: {main}");
    let launcher = tar_file(&p.main, "bin/walj");
    assert!(launcher.starts_with(b"#!/bin/sh\n"), "the launcher is not sh");
    let plat: Value = serde_json::from_slice(&tar_file(&p.platform, "package.json")).unwrap();
    assert_eq!(plat["name"], "@walj/linux-x64");
    assert_eq!(plat["os"], json!(["linux"]));
    assert_eq!(plat["cpu"], json!(["x64"]));
    assert!(plat.get("scripts").is_none(), "{plat}");
    assert_eq!(tar_file(&p.platform, "bin/walj"), fs::read(packaged_binary()).unwrap(), "the binary differs");
}

#[test]
fn npm_package_installed_offline_runs_walj_install_and_journals_a_claude_session() {
    if !npm_or_skip("npm_package_installed_offline_runs_walj_install_and_journals_a_claude_session") {
        return;
    }
    let Some(claude_bin) =
        claude::claude_or_skip("npm_package_installed_offline_runs_walj_install_and_journals_a_claude_session")
    else {
        return;
    };
    let sb = Sandbox::new();
    sb.write("src/main.rs", "fn main() {\n    println!(\"shop\");\n}\n");
    sb.commit("initial");
    let root = sb.dir.path().canonicalize().unwrap();
    let p = pack(&root.join("tarballs"));
    let prefix = root.join("prefix");
    let cache = root.join("npm-cache");
    let o = npm(
        &[
            "install",
            "-g",
            "--prefix",
            prefix.to_str().unwrap(),
            p.platform.to_str().unwrap(),
            p.main.to_str().unwrap(),
        ],
        &cache,
        &root,
    );
    assert!(o.status.success(), "npm install -g --offline: {o:?}");
    let walj = prefix.join("bin/walj");
    assert!(fs::symlink_metadata(&walj).unwrap().file_type().is_symlink(), "npm made no bin link");
    let path = format!("{}:{}", prefix.join("bin").display(), path_without_walj());
    let o = Command::new(&walj).arg("--version").env("PATH", &path).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("walj {}\n", env!("CARGO_PKG_VERSION")), "{o:?}");

    // `walj install` from the prefix: `walj hook` (the launcher on PATH), committed-safe.
    let o = Command::new("walj")
        .args(["install", "--form", "exec"])
        .current_dir(&sb.project)
        .env("PATH", &path)
        .env("HOME", &sb.home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "walj install: {o:?}");
    let settings: Value = serde_json::from_slice(&fs::read(sb.project.join(".claude/settings.json")).unwrap()).unwrap();
    let h = &settings["hooks"]["PreToolUse"][0]["hooks"][0];
    assert_eq!((h["command"].as_str(), &h["args"]), (Some("walj"), &json!(["hook"])), "{settings}");

    // A real session, its hooks through the npm launcher.
    let p = |rel: &str| sb.project.join(rel);
    let mock = MockServer::start(vec![
        Turn::tool("Write", json!({"file_path": p("src/server.rs"), "content": "pub fn serve() {}\n"})),
        Turn::tool(
            "Edit",
            json!({"file_path": p("src/main.rs"), "old_string": "fn main() {",
                   "new_string": "mod server;\n\nfn main() {", "replace_all": false}),
        ),
        Turn::text("Done."),
    ]);
    let mut cmd = sb.claude_p(&claude_bin, &mock, "Add a server");
    cmd.env("PATH", &path);
    let running = claude::spawn(cmd);
    let claude_pid = running.pid();
    let out = running.wait(Duration::from_secs(180));
    assert!(out.status.success(), "{out:?}\n{}", mock.summary());
    let sid = out.json()["session_id"].as_str().unwrap().to_string();
    let journal = || -> Vec<Value> {
        fs::read_to_string(sb.project.join(".walj/journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && !journal().iter().any(|r| r["kind"] == "end" && r["session"] == sid.as_str()) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let j = journal();
    for (tool, rel) in [("Write", "src/server.rs"), ("Edit", "src/main.rs")] {
        let intent = j
            .iter()
            .find(|r| r["op"] == "intent" && r["tool"] == tool && r["session"] == sid.as_str())
            .unwrap_or_else(|| panic!("no intent for {tool}: {j:?}"));
        assert_eq!(intent["path"], rel);
        let applied = j.iter().find(|r| r["op"] == "applied" && r["id"] == intent["id"]);
        assert!(applied.is_some_and(|a| a["after"].is_string()), "no applied {tool}: {j:?}");
    }
    // The launcher exec'd walj: the hook's parent is Claude Code itself.
    let start = j.iter().find(|r| r["kind"] == "start" && r["session"] == sid.as_str()).expect("a start record");
    assert_eq!(start["pid"].as_u64(), Some(u64::from(claude_pid)), "the hook's parent is not Claude Code: {start}");
    assert_eq!(fs::read_to_string(sb.project.join(".walj/errors.log")).unwrap_or_default(), "");
}

#[test]
fn npx_walj_install_refuses_and_writes_nothing() {
    if !npm_or_skip("npx_walj_install_refuses_and_writes_nothing") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let p = pack(&root.join("tarballs"));
    let project = root.join("project");
    fs::create_dir_all(&project).unwrap();
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&project).status().unwrap().success());
    let o = Command::new("npx")
        .args(["--yes", "--offline", "--no-audit", "--no-fund", "--cache"])
        .arg(root.join("npm-cache"))
        .arg(format!("--package={}", p.platform.display()))
        .arg(format!("--package={}", p.main.display()))
        .args(["walj", "install"])
        .current_dir(&project)
        .env("HOME", root.join("home"))
        .env("PATH", path_without_walj())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        err.contains("npx cache") && err.contains("cargo install --path .") && !err.contains("npm install -g walj"),
        "{err}"
    );
    let left: Vec<String> =
        fs::read_dir(&project).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec![".git".to_string()], "npx walj install wrote into the project");
}

/// `npm install -g --offline` of the packages into `<root>/prefix`: the PATH that finds its
/// `walj` (the launcher) first.
fn install_global(root: &Path) -> String {
    let p = pack(&root.join("tarballs"));
    let prefix = root.join("prefix");
    let o = npm(
        &[
            "install",
            "-g",
            "--prefix",
            prefix.to_str().unwrap(),
            p.platform.to_str().unwrap(),
            p.main.to_str().unwrap(),
        ],
        &root.join("npm-cache"),
        root,
    );
    assert!(o.status.success(), "npm install -g --offline: {o:?}");
    format!("{}:{}", prefix.join("bin").display(), path_without_walj())
}

#[test]
fn walj_install_through_the_launcher_writes_the_binary_itself_where_settings_stay_here() {
    if !npm_or_skip("walj_install_through_the_launcher_writes_the_binary_itself_where_settings_stay_here") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let path = install_global(&root);
    let project = root.join("project");
    fs::create_dir_all(&project).unwrap();
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&project).status().unwrap().success());
    let install = |args: &[&str]| {
        let o = Command::new("walj")
            .arg("install")
            .args(args)
            .current_dir(&project)
            .env("PATH", &path)
            .env("HOME", root.join("home"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "walj install {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // Settings that stay on this machine (--local): the platform binary's own path, exec form.
    let out = install(&["--local", "--form", "exec"]);
    let local: Value = serde_json::from_slice(&fs::read(project.join(".claude/settings.local.json")).unwrap()).unwrap();
    let h = &local["hooks"]["PreToolUse"][0]["hooks"][0];
    let bin = PathBuf::from(h["command"].as_str().unwrap_or_else(|| panic!("{local}")));
    assert_eq!(h["args"], json!(["hook"]), "{local}");
    assert!(bin.starts_with(root.join("prefix")), "not inside the global prefix: {}", bin.display());
    assert!(bin.ends_with("@walj/linux-x64/bin/walj"), "{}", bin.display());
    assert!(!fs::symlink_metadata(&bin).unwrap().file_type().is_symlink());
    assert_eq!(fs::read(&bin).unwrap(), fs::read(packaged_binary()).unwrap(), "not the platform binary");
    assert!(out.contains("not the launcher on PATH: no shell per hook"), "{out}");
    // That command journals a hook by itself (no launcher, no PATH).
    let payload = json!({"session_id": "5e55a0b1-0000-4000-8000-00000000n0de", "transcript_path": "/x/t.jsonl",
        "cwd": project, "hook_event_name": "SessionStart", "source": "startup"});
    let mut child = Command::new(&bin)
        .arg("hook")
        .current_dir(&project)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    let journal = fs::read_to_string(project.join(".walj/journal.jsonl")).unwrap();
    assert!(journal.contains("\"kind\":\"start\""), "{journal}");
    // Committed settings keep `walj hook` (every machine has its own path), and say why.
    let out = install(&["--form", "exec"]);
    let shared: Value = serde_json::from_slice(&fs::read(project.join(".claude/settings.json")).unwrap()).unwrap();
    let h = &shared["hooks"]["PreToolUse"][0]["hooks"][0];
    assert_eq!((h["command"].as_str(), &h["args"]), (Some("walj"), &json!(["hook"])), "{shared}");
    assert!(out.contains("through the npm launcher") && out.contains("walj install --local"), "{out}");
}

/// The main package without its platform package (`--omit=optional`, or a platform with no
/// package): the launcher never fails a hook, but it is not silent either. At SessionStart it
/// tells the user the session is NOT journaled (a systemMessage, as the plugin launcher does);
/// other hooks stay quiet; a command exits 127 naming an install that works.
#[test]
fn npm_package_without_its_platform_binary_says_the_session_is_not_journaled() {
    if !npm_or_skip("npm_package_without_its_platform_binary_says_the_session_is_not_journaled") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let p = pack(&root.join("tarballs"));
    let prefix = root.join("prefix");
    let o = npm(
        &["install", "-g", "--omit=optional", "--prefix", prefix.to_str().unwrap(), p.main.to_str().unwrap()],
        &root.join("npm-cache"),
        &root,
    );
    assert!(o.status.success(), "npm install -g --omit=optional: {o:?}");
    assert!(!prefix.join("lib/node_modules/walj/node_modules/@walj").exists(), "the platform package came anyway");
    let path = format!("{}:{}", prefix.join("bin").display(), path_without_walj());
    let project = root.join("project");
    fs::create_dir_all(&project).unwrap();
    let hook = |event: &str| {
        let payload = json!({
            "session_id": "s1", "hook_event_name": event, "cwd": project, "transcript_path": root.join("t.jsonl"),
            "source": "startup", "tool_name": "Write", "tool_use_id": "toolu_1",
            "tool_input": {"file_path": project.join("a.txt"), "content": "x\n"},
        });
        let mut child = Command::new("walj")
            .arg("hook")
            .current_dir(&project)
            .env("PATH", &path)
            .env("HOME", root.join("home"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    for event in ["PreToolUse", "PostToolUse", "Stop"] {
        let o = hook(event);
        assert_eq!(o.status.code(), Some(0), "{event}: {o:?}");
        assert!(o.stdout.is_empty(), "{event}: {o:?}");
    }
    let o = hook("SessionStart");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let msg: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {o:?}"));
    let text = msg["systemMessage"].as_str().unwrap_or_else(|| panic!("{msg}"));
    assert!(text.contains("NOT journaled") && text.contains("--omit=optional"), "{text}");
    assert!(text.contains("cargo install --path .") && !text.contains("npm install -g walj"), "{text}");
    assert!(!project.join(".walj").exists());

    let o = Command::new("walj").arg("status").current_dir(&project).env("PATH", &path).output().unwrap();
    assert_eq!(o.status.code(), Some(127), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no prebuilt walj binary") && err.contains("cargo install --path ."), "{err}");
    assert!(!err.contains("npm install -g walj") && !err.contains("cargo install walj"), "{err}");
}
