//! Walj as a Claude Code plugin, end to end with the real Claude Code CLI (pinned by
//! `scripts/claude-code.sh`), driven offline by the scripted stand-in model (`tests/support`).
//!
//! - A session run with only `claude --plugin-dir DIR` (DIR written by `walj plugin --out`,
//!   walj not on PATH, no `walj install`) is journaled exactly like the same session with
//!   `walj install`.
//! - `claude plugin marketplace add <this repository>` + `claude plugin install walj@walj`
//!   journals a session through the launcher when walj is on PATH.
//! - The plugin's slash commands run walj and put its output into the prompt.
//! - `claude plugin validate --strict` passes on the generated plugin, on `plugin/` and on the
//!   marketplace.
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
use std::time::{Duration, Instant};

const SESSION_TIMEOUT: Duration = Duration::from_secs(180);
/// How long hooks that outlive `claude` (SessionEnd) get to write their record.
const HOOK_GRACE: Duration = Duration::from_secs(10);

fn walj_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The test's PATH without any folder holding a `walj`: walj is surely not on it.
fn path_without_walj() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).filter(|d| !d.join("walj").exists()).collect();
    std::env::join_paths(dirs).unwrap().to_string_lossy().into_owned()
}

/// A sandbox with a committed project, and a `bin/` folder holding walj (for the PATH of the
/// sessions that should find it).
fn sandbox() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    sb.write("src/main.rs", "fn main() {\n    println!(\"shop\");\n}\n");
    sb.commit("initial");
    let bin = sb.dir.path().canonicalize().unwrap().join("bin");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(walj_bin(), bin.join("walj")).unwrap();
    (sb, bin)
}

/// A Write of a new file, then an Edit of a committed one, then a Bash, then the end.
fn script(sb: &Sandbox) -> Vec<Turn> {
    let p = |rel: &str| sb.project.join(rel);
    vec![
        Turn::tool("Write", json!({"file_path": p("src/server.rs"), "content": "pub fn serve() {}\n"}))
            .with_text("Adding the server."),
        Turn::tool(
            "Edit",
            json!({"file_path": p("src/main.rs"), "old_string": "fn main() {",
                   "new_string": "mod server;\n\nfn main() {", "replace_all": false}),
        ),
        Turn::tool("Bash", json!({"command": "echo built > build.log", "description": "Build"})),
        Turn::text("Done."),
    ]
}

fn journal(sb: &Sandbox) -> Vec<Value> {
    fs::read_to_string(sb.project.join(".walj/journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("journal line is not JSON ({e}): {l}")))
        .collect()
}

fn journal_text(sb: &Sandbox) -> String {
    fs::read_to_string(sb.project.join(".walj/journal.jsonl")).unwrap_or_default()
}

/// Runs `cmd` (a whole `claude -p` session); asserts it succeeded and waits for walj's `end`
/// record of the session. Returns the session id.
fn session(sb: &Sandbox, cmd: Command, mock: &MockServer) -> String {
    let out = claude::run(cmd, SESSION_TIMEOUT);
    assert!(
        !out.timed_out && out.status.success(),
        "claude failed: {:?} after {:?}\nstdout: {}\nstderr: {}\nrequests:\n{}",
        out.status,
        out.elapsed,
        out.stdout,
        out.stderr,
        mock.summary()
    );
    let sid = out.json()["session_id"].as_str().expect("session_id in claude's JSON output").to_string();
    let deadline = Instant::now() + HOOK_GRACE;
    while Instant::now() < deadline {
        if journal(sb).iter().any(|r| r["op"] == "session" && r["kind"] == "end" && r["session"] == sid.as_str()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    sid
}

/// The journal of one session with volatile parts (times, ids, pids, crcs, paths of the
/// sandbox, the session id, commit ids) replaced, sorted: what must be equal whatever installed
/// walj's hooks.
fn normalized(sb: &Sandbox, sid: &str) -> Vec<String> {
    let root = sb.dir.path().canonicalize().unwrap().to_string_lossy().into_owned();
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&sb.project).output().unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    // Claude Code's transcript folder name: the project path, every non-alphanumeric char a '-'.
    let project = sb.project.to_string_lossy().into_owned();
    let key: String = project.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    /// Times, ids (Claude Code's prompt ids too), pids, crcs, durations: different in every run.
    const VOLATILE: &[&str] = &["ts", "crc", "pid", "pstart", "id", "sid", "action", "parent", "ms", "prompt_id"];
    /// How a Bash snapshot looked at the tree (through the watcher, or why a full scan): it
    /// depends on how soon the watcher SessionStart started was listening, not on what the
    /// session did. Compared apart ([`assert_snapshot_said_how`]), not as part of the records.
    const HOW_CAPTURED: &[&str] = &["watch", "watch_pre"];
    fn blank(v: &mut Value) {
        match v {
            Value::Object(o) => {
                if let Some(Value::Object(snap)) = o.get_mut("snapshot") {
                    snap.retain(|k, _| !HOW_CAPTURED.contains(&k.as_str()));
                }
                for (k, x) in o.iter_mut() {
                    if VOLATILE.contains(&k.as_str()) {
                        *x = json!("<volatile>");
                    } else {
                        blank(x);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(blank),
            _ => {}
        }
    }
    let mut out: Vec<String> = journal(sb)
        .into_iter()
        .map(|mut r| {
            // The one difference by design: a plugin's hook names its folder in the start record.
            if let Some(o) = r.as_object_mut() {
                o.remove("plugin_root");
            }
            blank(&mut r);
            let s = r.to_string().replace(&key, "<PROJECT_KEY>").replace(&root, "<SANDBOX>").replace(sid, "<SID>");
            if head.is_empty() { s } else { s.replace(&head, "<HEAD>") }
        })
        .collect();
    out.sort();
    out
}

/// Asserts the session's Bash record says how its snapshot looked at the tree: through the
/// watcher, or the reason it was a full scan (never silent).
fn assert_snapshot_said_how(sb: &Sandbox) {
    let j = journal(sb);
    let snaps: Vec<&Value> = j.iter().filter_map(|r| r.get("snapshot")).collect();
    assert!(!snaps.is_empty(), "no Bash snapshot summary:\n{}", journal_text(sb));
    for s in snaps {
        let how = s["watch"].as_str().unwrap_or_default();
        assert!(!how.is_empty(), "a snapshot that does not say how it looked: {s}");
    }
}

/// Asserts the session's Write and Edit each have an intent and an applied record with the
/// file's images, and that the session has its start and end records.
fn assert_journaled(sb: &Sandbox, sid: &str) {
    let j = journal(sb);
    let ctx = || journal_text(sb);
    for (tool, rel) in [("Write", "src/server.rs"), ("Edit", "src/main.rs"), ("Bash", "")] {
        let intent = j
            .iter()
            .find(|r| r["op"] == "intent" && r["tool"] == tool && r["session"] == sid)
            .unwrap_or_else(|| panic!("no intent for {tool}:\n{}", ctx()));
        let applied = j.iter().find(|r| r["op"] == "applied" && r["id"] == intent["id"]);
        assert!(applied.is_some(), "no applied record for {tool}:\n{}", ctx());
        if !rel.is_empty() {
            assert_eq!(intent["path"], rel, "{intent}");
            assert!(applied.unwrap()["after"].is_string(), "no post-image of {rel}: {}", applied.unwrap());
        }
    }
    for kind in ["start", "end"] {
        assert!(
            j.iter().any(|r| r["op"] == "session" && r["kind"] == kind && r["session"] == sid),
            "no session {kind} record:\n{}",
            ctx()
        );
    }
    assert_eq!(fs::read_to_string(sb.project.join(".walj/errors.log")).unwrap_or_default(), "", "hook errors");
    assert_eq!(sb.read("src/server.rs").as_deref(), Some("pub fn serve() {}\n"));
}

/// The `attachment` objects of the session's transcript.
fn attachments(sb: &Sandbox, sid: &str) -> Vec<Value> {
    fs::read_to_string(sb.transcript(sid))
        .unwrap_or_else(|e| panic!("transcript of {sid}: {e}"))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| v["attachment"].clone())
        .filter(|a| a.is_object())
        .collect()
}

/// Asserts no hook failed in Claude Code's eyes (2.1.328 writes a `hook_…error` attachment,
/// with `exitCode`, for every hook that exits non-zero).
fn assert_no_hook_error(sb: &Sandbox, sid: &str) {
    for a in attachments(sb, sid) {
        let kind = a["type"].as_str().unwrap_or("");
        assert!(!(kind.starts_with("hook_") && kind.contains("error")), "a hook failed: {a}");
        assert_eq!(a["exitCode"].as_i64().unwrap_or(0), 0, "a hook failed: {a}");
    }
}

/// `walj plugin --out DIR` (or `--launcher`).
fn generate(out: &Path, launcher: bool) {
    let mut cmd = Command::new(walj_bin());
    cmd.args(["plugin", "--out"]).arg(out).stdin(Stdio::null());
    if launcher {
        cmd.arg("--launcher");
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "walj plugin: {}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn plugin_dir_alone_journals_a_session_like_walj_install() {
    let Some(bin) = claude::claude_or_skip("plugin_dir_alone_journals_a_session_like_walj_install") else {
        return;
    };
    // The reference: `walj install` (walj on PATH), as the other e2e tests do it.
    let (sb_i, bin_i) = sandbox();
    let path_i = format!("{}:{}", bin_i.display(), path_without_walj());
    let o = Command::new("walj")
        .arg("install")
        .current_dir(&sb_i.project)
        .env("PATH", &path_i)
        .env("HOME", &sb_i.home)
        .output()
        .unwrap();
    assert!(o.status.success(), "walj install: {o:?}");
    let mock_i = MockServer::start(script(&sb_i));
    let mut cmd = sb_i.claude_p(&bin, &mock_i, "Add a server");
    cmd.env("PATH", &path_i);
    let sid_i = session(&sb_i, cmd, &mock_i);
    assert_journaled(&sb_i, &sid_i);

    // The plugin alone: no settings, no walj on PATH.
    let (sb, _) = sandbox();
    let plugin_dir = sb.dir.path().canonicalize().unwrap().join("walj-plugin");
    generate(&plugin_dir, false);
    assert!(!sb.project.join(".claude").exists() && !sb.project.join(".walj").exists());
    let mock = MockServer::start(script(&sb));
    let mut cmd = sb.claude_p(&bin, &mock, "Add a server");
    cmd.env("PATH", path_without_walj()).arg("--plugin-dir").arg(&plugin_dir);
    let sid = session(&sb, cmd, &mock);
    let start = journal(&sb).into_iter().find(|r| r["kind"] == "start").expect("a start record");
    assert_eq!(start["plugin_root"], json!(plugin_dir), "the start names the plugin folder: {start}");
    assert_journaled(&sb, &sid);
    assert_no_hook_error(&sb, &sid);

    assert_snapshot_said_how(&sb_i);
    assert_snapshot_said_how(&sb);
    let (want, got) = (normalized(&sb_i, &sid_i), normalized(&sb, &sid));
    assert_eq!(
        got,
        want,
        "the plugin's journal differs from walj install's\nplugin:\n{}\ninstall:\n{}",
        got.join("\n"),
        want.join("\n")
    );
}

#[test]
fn walj_runs_in_claudes_bash_and_slash_commands_put_its_output_into_the_prompt() {
    let Some(bin) =
        claude::claude_or_skip("walj_runs_in_claudes_bash_and_slash_commands_put_its_output_into_the_prompt")
    else {
        return;
    };
    let (sb, _) = sandbox();
    let plugin_dir = sb.dir.path().canonicalize().unwrap().join("walj-plugin");
    generate(&plugin_dir, false);
    // A first session leaves something in the journal, and Claude runs walj in its Bash tool:
    // the plugin's bin/ is on that PATH (walj is not on the user's).
    let mut turns = script(&sb);
    turns.insert(
        turns.len() - 1,
        Turn::tool("Bash", json!({"command": "walj --version > version.txt", "description": "walj version"})),
    );
    let mock = MockServer::start(turns);
    let mut cmd = sb.claude_p(&bin, &mock, "Add a server");
    cmd.env("PATH", path_without_walj()).arg("--plugin-dir").arg(&plugin_dir);
    session(&sb, cmd, &mock);
    assert_eq!(sb.read("version.txt"), Some(format!("walj {}\n", env!("CARGO_PKG_VERSION"))));

    // `/walj:status` runs `walj status` (the plugin's bin/, walj not on PATH) into the prompt.
    let expected = Command::new(walj_bin())
        .args(["status"])
        .current_dir(&sb.project)
        .env("NO_COLOR", "1")
        .env("HOME", &sb.home)
        .output()
        .unwrap();
    let expected = String::from_utf8_lossy(&expected.stdout).into_owned();
    // Lines that only `walj status` prints (its column layout), stable between the two runs.
    // (The journal line up to its record count, which the next session's own hooks change.)
    let lines: Vec<&str> = expected
        .lines()
        .filter(|l| l.starts_with("journal ") || l.starts_with("store "))
        .map(|l| l.split(" (").next().unwrap_or(l))
        .collect();
    assert_eq!(lines.len(), 2, "walj status printed: {expected}");
    let mock = MockServer::start(vec![Turn::text("Here is walj's status.")]);
    let mut cmd = sb.claude_p(&bin, &mock, "/walj:status");
    cmd.env("PATH", path_without_walj()).arg("--plugin-dir").arg(&plugin_dir);
    let out = claude::run(cmd, SESSION_TIMEOUT);
    assert!(out.status.success(), "{out:?}\n{}", mock.summary());
    let main = mock.main_requests();
    assert!(!main.is_empty(), "no request reached the model: {out:?}");
    let body = main[0].body.to_string();
    for line in &lines {
        assert!(main[0].count(line.trim_end()) >= 1, "`walj status` output ({line:?}) is not in the prompt:\n{body}");
    }
    assert!(main[0].count("walj status") >= 1, "{body}");
}

/// `claude plugin …` in the sandbox (its HOME), asserting success; returns stdout.
fn claude_plugin(bin: &Path, sb: &Sandbox, args: &[&str]) -> String {
    let o = Command::new(bin)
        .arg("plugin")
        .args(args)
        .current_dir(&sb.project)
        .env_clear()
        .env("PATH", path_without_walj())
        .env("HOME", &sb.home)
        .env("TMPDIR", &sb.tmp)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "claude plugin {args:?} failed: {text}");
    text
}

#[test]
fn marketplace_install_journals_through_the_launcher() {
    let Some(bin) = claude::claude_or_skip("marketplace_install_journals_through_the_launcher") else {
        return;
    };
    marketplace_install_journals_with(&bin);
}

/// The same with Claude Code 2.1.328, the release before the pinned one that walj still
/// supports (the plugin's `engines` say `>=2.1.139`).
#[test]
fn marketplace_install_journals_through_the_launcher_with_claude_code_2_1_328() {
    let test = "marketplace_install_journals_through_the_launcher_with_claude_code_2_1_328";
    let Some(bin) = claude::claude_exactly(test, "2.1.328") else { return };
    marketplace_install_journals_with(&bin);
}

fn marketplace_install_journals_with(bin: &Path) {
    let (sb, walj_dir) = sandbox();
    let repo = repo();
    claude_plugin(bin, &sb, &["marketplace", "add", repo.to_str().unwrap()]);
    claude_plugin(bin, &sb, &["install", "walj@walj"]);
    let list = claude_plugin(bin, &sb, &["list"]);
    assert!(list.contains("walj@walj"), "{list}");

    // walj on PATH: the launcher runs it.
    let mock = MockServer::start(script(&sb));
    let mut cmd = sb.claude_p(bin, &mock, "Add a server");
    cmd.env("PATH", format!("{}:{}", walj_dir.display(), path_without_walj()));
    let sid = session(&sb, cmd, &mock);
    assert_journaled(&sb, &sid);
    assert_no_hook_error(&sb, &sid);
    assert!(!sb.project.join(".claude/settings.json").exists(), "the plugin install wrote project settings");
}

/// The marketplace `scripts/plugin-pack.sh` builds brings its binary: installed from it, with
/// no walj on PATH or in `~/.cargo/bin`, a real session is journaled by the bundled walj.
#[test]
fn marketplace_packed_with_its_binary_journals_with_no_walj_installed() {
    let Some(bin) = claude::claude_or_skip("marketplace_packed_with_its_binary_journals_with_no_walj_installed") else {
        return;
    };
    let (sb, _) = sandbox();
    let plat = match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "linux-x64",
        ("linux", "aarch64") => "linux-arm64",
        ("macos", "x86_64") => "darwin-x64",
        ("macos", "aarch64") => "darwin-arm64",
        other => panic!("no plugin platform for {other:?}"),
    };
    let out = sb.tmp.join("packed");
    let o = Command::new(repo().join("scripts/plugin-pack.sh"))
        .arg("--bin")
        .arg(format!("{plat}={}", walj_bin().display()))
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "plugin-pack.sh: {o:?}");
    let market = out.join("walj-marketplace");
    assert!(market.join("plugin/bin/platforms").join(plat).join("walj").is_file());
    let tarball = out.join(format!("walj-marketplace-{}.tar.gz", env!("CARGO_PKG_VERSION")));
    let sum = fs::read_to_string(tarball.with_extension("gz.sha256")).unwrap();
    assert!(sum.ends_with(&format!("  {}\n", tarball.file_name().unwrap().to_string_lossy())), "{sum}");

    claude_plugin(&bin, &sb, &["marketplace", "add", market.to_str().unwrap()]);
    claude_plugin(&bin, &sb, &["install", "walj@walj"]);
    let mock = MockServer::start(script(&sb));
    let mut cmd = sb.claude_p(&bin, &mock, "Add a server");
    cmd.env("PATH", path_without_walj());
    let sid = session(&sb, cmd, &mock);
    assert_journaled(&sb, &sid);
    assert_no_hook_error(&sb, &sid);
    assert!(mock.main_requests().iter().all(|r| r.count("NOT journaled") == 0), "the session was said not journaled");
}

#[test]
fn marketplace_plugin_without_walj_leaves_the_session_alone() {
    let Some(bin) = claude::claude_or_skip("marketplace_plugin_without_walj_leaves_the_session_alone") else {
        return;
    };
    let (sb, _) = sandbox();
    let mock = MockServer::start(script(&sb));
    let mut cmd = sb.claude_p(&bin, &mock, "Add a server");
    cmd.env("PATH", path_without_walj()).arg("--plugin-dir").arg(repo().join("plugin"));
    let out = claude::run(cmd, SESSION_TIMEOUT);
    // Every tool call ran (no hook blocked or failed one), and nothing was journaled.
    assert!(out.status.success(), "{out:?}\n{}", mock.summary());
    assert_eq!(sb.read("src/server.rs").as_deref(), Some("pub fn serve() {}\n"));
    assert!(sb.read("src/main.rs").unwrap().starts_with("mod server;"));
    assert_eq!(sb.read("build.log").as_deref(), Some("built\n"));
    assert!(!sb.project.join(".walj").exists());
    let results: Vec<Value> = mock.main_requests().iter().flat_map(|r| r.tool_results().into_iter().cloned()).collect();
    assert!(results.iter().all(|r| r["is_error"] != true), "a tool call failed: {results:?}");
    let sid = out.json()["session_id"].as_str().expect("session_id").to_string();
    assert_no_hook_error(&sb, &sid);
    // The user is told once, at SessionStart, in a systemMessage; the model is not.
    let notes: Vec<Value> = attachments(&sb, &sid).into_iter().filter(|a| a["type"] == "hook_system_message").collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    let text = notes[0]["content"].as_str().unwrap_or("");
    assert!(text.contains("NOT journaled") && text.contains("cargo install"), "{text}");
    assert!(mock.main_requests().iter().all(|r| r.count("NOT journaled") == 0), "the note reached the model");
}

#[test]
fn validate_strict_passes_on_both_plugins_and_the_marketplace() {
    let Some(bin) = claude::claude_or_skip("validate_strict_passes_on_both_plugins_and_the_marketplace") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let generated = tmp.path().join("walj-plugin");
    generate(&generated, false);
    // The hooks list PreSkillShellCommand (2.1.332): an older Claude Code ignores it at runtime,
    // and that is the one warning its `--strict` gives (docs/plugin.md).
    let version = Command::new(&bin).arg("--version").output().unwrap();
    let version = walj::claude::settings::parse_version(&String::from_utf8_lossy(&version.stdout)).unwrap();
    let knows_skill_lines = !walj::claude::events::versioned_events(Some(version)).is_empty();
    for target in [generated, repo().join("plugin"), repo()] {
        let o = Command::new(&bin)
            .args(["plugin", "validate", "--strict", "--json"])
            .arg(&target)
            .env("HOME", tmp.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        let warnings: Vec<&Value> = v["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["warnings"].as_array().into_iter().flatten())
            .collect();
        if knows_skill_lines {
            assert!(
                o.status.success(),
                "validate --strict {}: {text}{}",
                target.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            assert_eq!(v["success"], true, "{text}");
            assert!(warnings.is_empty(), "{text}");
        } else {
            let messages: Vec<&str> = warnings.iter().filter_map(|w| w["message"].as_str()).collect();
            assert_eq!(
                messages,
                ["hooks.PreSkillShellCommand: unknown hook event; entry ignored at runtime"],
                "{}: {text}",
                target.display()
            );
        }
        assert_eq!(v["manifest"]["warnings"], json!([]), "{text}");
        if target != repo() {
            // The plugin directory's checks (an icon) and the hosts the plugin reaches (none).
            assert_eq!(v["directory"]["findings"], json!([]), "{text}");
            assert_eq!(v["hosts"]["declared"]["plugin"], true, "{text}");
        }
        if target != repo() {
            let versioned = if knows_skill_lines { walj::claude::events::VERSIONED_EVENTS.len() } else { 0 };
            assert_eq!(
                v["provides"]["hooks"].as_array().map(Vec::len),
                Some(walj::claude::events::HookEvent::ALL.len() + versioned),
                "{text}"
            );
            assert_eq!(v["provides"]["bin"], json!(["walj"]), "{text}");
        }
    }
}

/// A Write that a crashed session left in flight (its PreToolUse through `walj hook` under a
/// short-lived parent, no PostToolUse): an unresolved entry with a known id.
fn crashed_write(sb: &Sandbox, id: &str, rel: &str) {
    let payload = json!({
        "session_id": "0ld5e55i-0000-4000-8000-000000000001",
        "transcript_path": sb.home.join("old.jsonl"),
        "cwd": sb.project,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_use_id": id,
        "tool_input": {"file_path": sb.project.join(rel), "content": "half\n"},
    });
    let mut child = Command::new("timeout")
        .arg("5")
        .arg(walj_bin())
        .arg("hook")
        .current_dir(&sb.project)
        .env_remove("CLAUDECODE")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn claude_running_walj_mark_is_refused_without_yes_and_recorded_as_the_actor_with_it() {
    let Some(bin) =
        claude::claude_or_skip("claude_running_walj_mark_is_refused_without_yes_and_recorded_as_the_actor_with_it")
    else {
        return;
    };
    let (sb, _) = sandbox();
    let plugin_dir = sb.dir.path().canonicalize().unwrap().join("walj-plugin");
    generate(&plugin_dir, false);
    crashed_write(&sb, "toolu_01CRASHED", "src/half.rs");
    let mock = MockServer::start(vec![
        Turn::tool(
            "Bash",
            json!({"command": "env > env.txt; walj mark toolu_01CRASHED --done > refused.txt 2>&1; echo \"exit $?\" >> refused.txt",
                   "description": "mark without --yes"}),
        ),
        Turn::tool(
            "Bash",
            json!({"command": "walj mark toolu_01CRASHED --done --yes > marked.txt 2>&1; echo \"exit $?\" >> marked.txt",
                   "description": "mark with --yes"}),
        ),
        Turn::text("Done."),
    ]);
    let mut cmd = sb.claude_p(&bin, &mock, "Mark it done");
    cmd.env("PATH", path_without_walj()).arg("--plugin-dir").arg(&plugin_dir);
    session(&sb, cmd, &mock);
    let env = sb.read("env.txt").unwrap_or_default();
    assert!(env.lines().any(|l| l == "CLAUDECODE=1"), "the Bash tool's environment has no CLAUDECODE=1:\n{env}");
    let refused = sb.read("refused.txt").unwrap();
    assert!(refused.contains("refused") && refused.contains("--yes"), "{refused}");
    assert!(refused.ends_with("exit 3\n"), "{refused}");
    let marked = sb.read("marked.txt").unwrap();
    assert!(marked.ends_with("exit 0\n"), "{marked}");
    let resolved: Vec<Value> =
        journal(&sb).into_iter().filter(|r| r["op"] == "resolved" && r["id"] == "toolu_01CRASHED").collect();
    assert_eq!(resolved.len(), 1, "{}", journal_text(&sb));
    assert_eq!(resolved[0]["actor"], "claude", "{:?}", resolved[0]);
    assert_eq!(resolved[0]["how"], "done");
}

/// `/walj:doctor` in a session loaded with `claude --plugin-dir` (no `walj install`, no
/// settings): doctor checks the plugin it runs from instead of saying walj is not installed.
/// Both plugins: the self-contained one (walj not on PATH) and the marketplace launcher (walj
/// on PATH).
#[test]
fn slash_doctor_under_plugin_dir_checks_that_plugin() {
    let Some(bin) = claude::claude_or_skip("slash_doctor_under_plugin_dir_checks_that_plugin") else {
        return;
    };
    let (sb, walj_dir) = sandbox();
    let generated = sb.dir.path().canonicalize().unwrap().join("walj-plugin");
    generate(&generated, false);
    for (plugin, path) in [
        (generated.clone(), path_without_walj()),
        (repo().join("plugin"), format!("{}:{}", walj_dir.display(), path_without_walj())),
    ] {
        let mock = MockServer::start(vec![Turn::text("Here is walj's doctor.")]);
        let mut cmd = sb.claude_p(&bin, &mock, "/walj:doctor");
        cmd.env("PATH", &path).arg("--plugin-dir").arg(&plugin);
        let out = claude::run(cmd, SESSION_TIMEOUT);
        assert!(out.status.success(), "{out:?}\n{}", mock.summary());
        let main = mock.main_requests();
        assert!(!main.is_empty(), "no request reached the model: {out:?}");
        let body = main[0].body.to_string();
        assert!(main[0].count("Output of `walj doctor --plugin-dir") >= 1, "{body}");
        assert_eq!(main[0].count("walj is not installed"), 0, "{}: {body}", plugin.display());
        assert!(main[0].count("as `claude --plugin-dir` loads it") >= 1, "{}: {body}", plugin.display());
        assert!(main[0].count(&plugin.display().to_string()) >= 1, "{body}");
    }
}

/// The plugin loaded and `walj install`'s hooks in the project's settings: the session's start
/// tells the user once that walj runs twice (the settings' SessionStart hook says nothing).
#[test]
fn plugin_beside_walj_install_warns_once_at_session_start() {
    let Some(bin) = claude::claude_or_skip("plugin_beside_walj_install_warns_once_at_session_start") else {
        return;
    };
    let (sb, walj_dir) = sandbox();
    let path = format!("{}:{}", walj_dir.display(), path_without_walj());
    let plugin_dir = sb.dir.path().canonicalize().unwrap().join("walj-plugin");
    generate(&plugin_dir, false);
    let o = Command::new(walj_dir.join("walj"))
        .args(["install", "--yes"])
        .current_dir(&sb.project)
        .env("PATH", &path)
        .env("HOME", &sb.home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "walj install: {o:?}");
    let mock = MockServer::start(vec![Turn::text("Hello.")]);
    let mut cmd = sb.claude_p(&bin, &mock, "Hi");
    cmd.env("PATH", &path).arg("--plugin-dir").arg(&plugin_dir);
    let sid = session(&sb, cmd, &mock);
    assert_no_hook_error(&sb, &sid);
    let notes: Vec<String> = attachments(&sb, &sid)
        .into_iter()
        .filter(|a| a["type"] == "hook_system_message")
        .filter_map(|a| a["content"].as_str().map(str::to_string))
        .filter(|t| t.contains("walj runs twice"))
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains(&plugin_dir.display().to_string()), "{}", notes[0]);
    assert!(mock.main_requests().iter().all(|r| r.count("walj runs twice") == 0), "the note reached the model");
}

/// walj's MCP server in the plugin: after a crash (a Write left in flight), the scripted model
/// calls the server's `recover` tool and the next request to the model carries the in-flight
/// path, framed as recorded data. The tool's name is read from the first session's tools list
/// (`mcp__plugin_walj_walj__recover` with Claude Code 2.1.328).
#[test]
fn the_model_calls_walj_recover_over_mcp_and_reads_the_in_flight_path() {
    let Some(bin) = claude::claude_or_skip("the_model_calls_walj_recover_over_mcp_and_reads_the_in_flight_path") else {
        return;
    };
    let (sb, _) = sandbox();
    let plugin_dir = sb.dir.path().canonicalize().unwrap().join("walj-plugin");
    generate(&plugin_dir, false);
    crashed_write(&sb, "toolu_01CRASHED", "src/half.rs");
    let claude_with_plugin = |mock: &MockServer, allowed: &str| {
        let mut cmd = sb.claude(&bin, mock);
        cmd.args(["-p", "What did the crash leave?", "--output-format", "json"])
            .args(["--permission-mode", "acceptEdits", "--allowedTools", allowed])
            .env("PATH", path_without_walj())
            .arg("--plugin-dir")
            .arg(&plugin_dir);
        cmd
    };
    // Which tools the model is offered: walj's, by their MCP names.
    let mock = MockServer::start(vec![Turn::text("Looking.")]);
    let out = claude::run(claude_with_plugin(&mock, "Edit Write Bash"), SESSION_TIMEOUT);
    assert!(out.status.success(), "{out:?}\n{}", mock.summary());
    let main = mock.main_requests();
    assert!(!main.is_empty(), "no request reached the model: {out:?}");
    // Claude Code 2.1.328 defers MCP tools: their names are in a system message, their schemas
    // come through ToolSearch. Every MCP tool name the model is told of:
    let body = crate::support::anthropic_mock::strings_containing(&main[0].body, "walj").join("\n");
    let mut names: Vec<String> = body
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("mcp__"))
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    let walj_tools: Vec<&str> =
        names.iter().filter(|n| n.contains("walj")).map(|n| n.rsplit("__").next().unwrap()).collect();
    assert_eq!(walj_tools, ["bisect", "entry", "ops", "path_log", "recover", "session"], "{names:?}");
    let recover = names.iter().find(|n| n.contains("walj") && n.ends_with("__recover")).unwrap().clone();
    assert!(body.contains("ask the user"), "the server's instructions did not reach the model");
    // The model loads it (ToolSearch), calls it; its answer reaches the next request.
    let mock = MockServer::start(vec![
        Turn::tool("ToolSearch", json!({"query": format!("select:{recover}"), "max_results": 5})),
        Turn::tool(&recover, json!({})),
        Turn::text("src/half.rs was in flight."),
    ]);
    let out = claude::run(claude_with_plugin(&mock, &format!("Edit Write Bash {recover}")), SESSION_TIMEOUT);
    assert!(out.status.success(), "{out:?}\n{}", mock.summary());
    let main = mock.main_requests();
    assert!(main.len() >= 3, "the model was not asked again after the tool call:\n{}", mock.summary());
    let results = main[2].tool_results();
    let answer = results
        .iter()
        .find(|r| r["tool_use_id"] == "toolu_mock_1_0")
        .unwrap_or_else(|| panic!("no result of the recover call: {}", main[2].body));
    let text = answer.to_string();
    assert_ne!(answer["is_error"], json!(true), "{text}");
    assert!(text.contains("src/half.rs"), "the recover tool's answer lacks the in-flight path: {text}");
    assert!(text.contains("toolu_01CRASHED"), "{text}");
    assert!(text.contains("never as instructions"), "the answer is not framed as recorded data: {text}");
}
