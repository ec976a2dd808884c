//! `walj plugin --out DIR` and the marketplace plugin committed in `plugin/`, through the real
//! binary: the committed files are exactly what the generator writes (so they cannot drift),
//! the generated plugin bundles this binary, and the sh launcher of the marketplace plugin runs
//! an installed walj, never fails a hook, and says how to install walj at SessionStart only.
//!
//! `WALJ_UPDATE_PLUGIN=1 cargo test --test setup plugin::` rewrites `plugin/` and
//! `.claude-plugin/marketplace.json` from the generator (after a version bump, say).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn walj_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Relative path → (bytes, executable) of every file under `root`.
fn tree(root: &Path) -> BTreeMap<String, (Vec<u8>, bool)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, bool)>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                let exec = fs::metadata(&p).unwrap().permissions().mode() & 0o111 != 0;
                out.insert(rel, (fs::read(&p).unwrap(), exec));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn run_walj(args: &[&str]) -> Output {
    Command::new(walj_bin()).args(args).env("NO_COLOR", "1").stdin(Stdio::null()).output().expect("run walj")
}

fn generate(out: &Path, launcher: bool) {
    let mut args = vec!["plugin", "--out", out.to_str().unwrap()];
    if launcher {
        args.push("--launcher");
    }
    let o = run_walj(&args);
    assert!(o.status.success(), "walj {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn committed_marketplace_plugin_is_what_the_generator_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let gen_dir = tmp.path().join("plugin");
    generate(&gen_dir, true);
    let committed = repo().join("plugin");
    let marketplace = repo().join(".claude-plugin/marketplace.json");
    if std::env::var_os("WALJ_UPDATE_PLUGIN").is_some() {
        let _ = fs::remove_dir_all(&committed);
        generate(&committed, true);
        fs::create_dir_all(marketplace.parent().unwrap()).unwrap();
        fs::write(&marketplace, walj::plugin::marketplace_file()).unwrap();
    }
    let hint = "regenerate with `WALJ_UPDATE_PLUGIN=1 cargo test --test setup plugin::` and commit plugin/";
    let (want, got) = (tree(&gen_dir), tree(&committed));
    assert_eq!(want.keys().collect::<Vec<_>>(), got.keys().collect::<Vec<_>>(), "files of plugin/; {hint}");
    for (rel, w) in &want {
        assert!(got[rel] == *w, "plugin/{rel} differs from what `walj plugin --launcher` writes; {hint}");
    }
    assert_eq!(got["bin/walj"].0, walj::plugin::LAUNCHER.as_bytes());
    assert!(got["bin/walj"].1, "plugin/bin/walj is not executable");
    assert_eq!(
        fs::read_to_string(&marketplace).unwrap(),
        walj::plugin::marketplace_file(),
        ".claude-plugin/marketplace.json; {hint}"
    );
    // The marketplace lists that folder, under the plugin's name and version.
    let m: Value = serde_json::from_str(&walj::plugin::marketplace_file()).unwrap();
    let manifest: Value = serde_json::from_slice(&got[".claude-plugin/plugin.json"].0).unwrap();
    assert_eq!(m["plugins"][0]["name"], manifest["name"]);
    assert_eq!(m["plugins"][0]["version"], manifest["version"]);
    assert!(repo().join(m["plugins"][0]["source"].as_str().unwrap()).join(".claude-plugin/plugin.json").is_file());
}

#[test]
fn generated_plugin_bundles_this_binary_and_the_same_files() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("walj-plugin");
    generate(&out, false);
    let mut got = tree(&out);
    let (bin, exec) = got.remove("bin/walj").expect("bin/walj");
    assert!(exec, "bin/walj is not executable");
    assert!(bin == fs::read(walj_bin()).unwrap(), "bin/walj is not a copy of the walj binary");
    let mut committed = tree(&repo().join("plugin"));
    committed.remove("bin/walj");
    assert_eq!(got, committed, "the generated plugin and plugin/ differ beyond bin/walj");

    // The copy is walj: it answers --version.
    let v = Command::new(out.join("bin/walj")).arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&v.stdout).trim(), format!("walj {}", env!("CARGO_PKG_VERSION")));

    // The manifest and hooks: crate metadata; install's events, matchers, timeouts.
    let manifest: Value = serde_json::from_slice(&got[".claude-plugin/plugin.json"].0).unwrap();
    assert_eq!(manifest["name"], "walj");
    assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(manifest["license"], env!("CARGO_PKG_LICENSE"));
    // Exec form needs Claude Code 2.1.139: the manifest says so.
    assert_eq!(manifest["engines"], json!({"claude-code": ">=2.1.139"}));
    let hooks: Value = serde_json::from_slice(&got["hooks/hooks.json"].0).unwrap();
    let events: Vec<&String> = hooks["hooks"].as_object().unwrap().keys().collect();
    let want: Vec<String> = walj::claude::events::HookEvent::ALL
        .iter()
        .map(|e| e.name().to_string())
        .chain(walj::claude::events::VERSIONED_EVENTS.iter().map(|(n, _)| n.to_string()))
        .collect();
    assert_eq!(events, want.iter().collect::<Vec<_>>(), "{events:?}");
    // A versioned event: every tool (no matcher), the same handler.
    let skill = &hooks["hooks"]["PreSkillShellCommand"][0];
    assert!(skill.get("matcher").is_none(), "{skill}");
    assert_eq!(skill["hooks"][0]["args"], json!(["hook"]));
    for e in walj::claude::events::HookEvent::ALL {
        let h = &hooks["hooks"][e.name()][0];
        assert_eq!(h["matcher"].as_str(), e.matcher());
        // Exec form: Claude Code spawns bin/walj itself (no `sh -c`).
        assert_eq!(h["hooks"][0]["command"], "${CLAUDE_PLUGIN_ROOT}/bin/walj");
        assert_eq!(h["hooks"][0]["args"], json!(["hook"]));
        assert_eq!(h["hooks"][0]["timeout"], walj::claude::settings::HOOK_TIMEOUT_SECS);
    }
    for name in ["recover", "handoff", "sessions"] {
        assert!(got.contains_key(&format!("commands/{name}.md")), "no /walj:{name}");
    }

    // Writing again over it is an update.
    generate(&out, false);
}

#[test]
fn plugin_refuses_a_folder_holding_something_else() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("mine.txt"), "keep me\n").unwrap();
    let o = run_walj(&["plugin", "--out", tmp.path().to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"), "{o:?}");
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1, "walj wrote into a foreign folder");
}

// ---------------------------------------------------------------------------------------------
// The launcher (plugin/bin/walj).

/// A git project, a HOME without walj, and a folder for a walj on PATH.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        for d in ["project", "home", "bin", "empty"] {
            fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        let git = Command::new("git").args(["init", "-q"]).current_dir(dir.path().join("project")).status().unwrap();
        assert!(git.success());
        Env { dir }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Puts walj (a symlink to the binary under test) into `rel`.
    fn install_walj(&self, rel: &str) {
        fs::create_dir_all(self.p(rel)).unwrap();
        std::os::unix::fs::symlink(walj_bin(), self.p(rel).join("walj")).unwrap();
    }

    /// Runs `launcher args` with stdin `input`, PATH = `path` (+ /usr/bin:/bin for sh tools).
    fn launch(&self, launcher: &Path, path: &str, args: &[&str], input: &str) -> Output {
        let mut child = Command::new(launcher)
            .args(args)
            .current_dir(self.p("project"))
            .env_clear()
            .env("PATH", format!("{path}:/usr/bin:/bin"))
            .env("HOME", self.p("home"))
            .env("CLAUDE_PROJECT_DIR", self.p("project"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    fn journal(&self) -> Vec<Value> {
        fs::read_to_string(self.p("project/.walj/journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn launcher() -> PathBuf {
    repo().join("plugin/bin/walj")
}

fn payload(env: &Env, event: &str) -> String {
    let project = env.p("project");
    let mut p = json!({
        "session_id": "0f6b3c1e-1111-4222-8333-444455556666",
        "transcript_path": env.p("home/t.jsonl"),
        "cwd": project,
        "hook_event_name": event,
    });
    if event == "SessionStart" {
        p["source"] = json!("startup");
    }
    if event == "PreToolUse" {
        p["tool_name"] = json!("Write");
        p["tool_use_id"] = json!("toolu_launcher_1");
        p["tool_input"] = json!({"file_path": project.join("a.txt"), "content": "hi \"SessionStart\"\n"});
        p["permission_mode"] = json!("acceptEdits");
    }
    p.to_string()
}

#[test]
fn launcher_without_walj_never_fails_and_speaks_only_at_session_start() {
    let env = Env::new();
    let empty = env.p("empty");
    let empty = empty.to_str().unwrap();
    for event in ["PreToolUse", "UserPromptSubmit", "Stop", "SessionEnd"] {
        let o = env.launch(&launcher(), empty, &["hook"], &payload(&env, event));
        assert_eq!(o.status.code(), Some(0), "{event}: {o:?}");
        assert!(o.stdout.is_empty(), "{event}: the launcher printed {:?}", String::from_utf8_lossy(&o.stdout));
    }
    let o = env.launch(&launcher(), empty, &["hook"], &payload(&env, "SessionStart"));
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let msg: Value = serde_json::from_slice(&o.stdout).expect("a JSON answer at SessionStart");
    let text = msg["systemMessage"].as_str().expect("systemMessage");
    assert!(text.contains("NOT journaled") && text.contains("cargo install --path ."), "{text}");
    assert!(!text.contains("npm install -g walj"), "names a package that is not published: {text}");
    assert!(msg.get("hookSpecificOutput").is_none(), "{msg}");
    // Compact JSON payloads too.
    let compact = payload(&env, "SessionStart").replace("\": \"", "\":\"");
    let o = env.launch(&launcher(), empty, &["hook"], &compact);
    assert!(!o.stdout.is_empty());
    // And no hook left anything behind.
    assert!(!env.p("project/.walj").exists());

    // Anything but a hook: a clear error, exit 127.
    let o = env.launch(&launcher(), empty, &["status"], "");
    assert_eq!(o.status.code(), Some(127), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("not installed"), "{o:?}");
}

#[test]
fn launcher_on_path_does_not_find_itself() {
    let env = Env::new();
    let dir = launcher().parent().unwrap().to_str().unwrap().to_string();
    let o = env.launch(&launcher(), &dir, &["hook"], &payload(&env, "PreToolUse"));
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let o = env.launch(&launcher(), &dir, &["status"], "");
    assert_eq!(o.status.code(), Some(127), "{o:?}");
    // A copy of the launcher on PATH (not the same file) stops after one hop.
    fs::copy(launcher(), env.p("bin/walj")).unwrap();
    let o = env.launch(&launcher(), env.p("bin").to_str().unwrap(), &["status"], "");
    assert_eq!(o.status.code(), Some(127), "{o:?}");
}

#[test]
fn launcher_runs_the_walj_on_path_or_in_cargo_bin() {
    for (place, path) in [("bin", "bin"), ("home/.cargo/bin", "empty")] {
        let env = Env::new();
        env.install_walj(place);
        let path = env.p(path);
        let path = path.to_str().unwrap();
        // The plugin's own bin/ first on PATH, as in Claude Code's Bash tool.
        let path = format!("{}:{path}", launcher().parent().unwrap().display());
        let o = env.launch(&launcher(), &path, &["hook"], &payload(&env, "PreToolUse"));
        assert_eq!(o.status.code(), Some(0), "{place}: {o:?}");
        let j = env.journal();
        let intent = j.iter().find(|r| r["op"] == "intent").unwrap_or_else(|| panic!("{place}: no intent: {j:?}"));
        assert_eq!(intent["tool"], "Write");
        assert_eq!(intent["path"], "a.txt");
        // A command: walj's own output and exit code.
        let o = env.launch(&launcher(), &path, &["status", "--json"], "");
        assert!(o.status.success(), "{place}: {o:?}");
        let status: Value = serde_json::from_slice(&o.stdout).expect("walj status --json");
        assert!(status.is_object(), "{status}");
        let o = env.launch(&launcher(), &path, &["no-such-command"], "");
        assert_eq!(o.status.code(), Some(2), "{place}: {o:?}");
    }
}

/// This machine's platform in npm's names, as the launcher spells it (`linux-x64`, …).
fn npm_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        o => o,
    };
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        a => a,
    };
    format!("{os}-{cpu}")
}

/// A plugin that brings its binary (`bin/platforms/<os>-<cpu>/walj`, as `scripts/plugin-pack.sh`
/// packs it) needs no walj on PATH: the launcher runs the bundled one, before any on PATH; a
/// binary bundled for another platform only is not run, and the user is told at SessionStart.
#[test]
fn launcher_runs_the_binary_bundled_for_this_platform_first() {
    let env = Env::new();
    let plugin_bin = env.p("plugin/bin");
    fs::create_dir_all(plugin_bin.join("platforms").join(npm_platform())).unwrap();
    fs::copy(launcher(), plugin_bin.join("walj")).unwrap();
    fs::copy(walj_bin(), plugin_bin.join("platforms").join(npm_platform()).join("walj")).unwrap();
    let empty = env.p("empty");
    let o = env.launch(&plugin_bin.join("walj"), empty.to_str().unwrap(), &["hook"], &payload(&env, "PreToolUse"));
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let j = env.journal();
    assert!(j.iter().any(|r| r["op"] == "intent" && r["path"] == "a.txt"), "the bundled walj did not journal: {j:?}");
    let o = env.launch(&plugin_bin.join("walj"), empty.to_str().unwrap(), &["--version"], "");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), format!("walj {}", env!("CARGO_PKG_VERSION")), "{o:?}");

    // Bundled first: a "walj" on PATH that is not walj is not run.
    fs::write(env.p("bin/walj"), "#!/bin/sh\necho impostor\nexit 3\n").unwrap();
    fs::set_permissions(env.p("bin/walj"), fs::Permissions::from_mode(0o755)).unwrap();
    let o = env.launch(&plugin_bin.join("walj"), env.p("bin").to_str().unwrap(), &["--version"], "");
    assert!(o.status.success() && !String::from_utf8_lossy(&o.stdout).contains("impostor"), "{o:?}");

    // Only another platform's binary: not run; SessionStart says NOT journaled.
    let other = if npm_platform() == "linux-x64" { "darwin-arm64" } else { "linux-x64" };
    fs::rename(plugin_bin.join("platforms").join(npm_platform()), plugin_bin.join("platforms").join(other)).unwrap();
    let o = env.launch(&plugin_bin.join("walj"), empty.to_str().unwrap(), &["hook"], &payload(&env, "SessionStart"));
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let msg: Value = serde_json::from_slice(&o.stdout).expect("a JSON answer at SessionStart");
    assert!(msg["systemMessage"].as_str().unwrap().contains("NOT journaled"), "{msg}");
}

/// A Claude Code older than 2.1.139 ignores the hooks' `args` (exec form) and runs their
/// `command` alone through its shell: `sh -c '${CLAUDE_PLUGIN_ROOT}/bin/walj'`, the payload on
/// stdin. The launcher takes that for the hook: with walj, it journals; without, it speaks at
/// SessionStart only; always exit 0.
#[test]
fn launcher_without_arguments_is_the_hook_for_a_claude_code_that_ignores_args() {
    let hooks: Value = serde_json::from_slice(&fs::read(repo().join("plugin/hooks/hooks.json")).unwrap()).unwrap();
    let command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().unwrap().to_string();
    let old_claude = |env: &Env, path: &str, event: &str| {
        let mut child = Command::new("sh")
            .args(["-c", &command])
            .current_dir(env.p("project"))
            .env_clear()
            .env("PATH", format!("{path}:/usr/bin:/bin"))
            .env("HOME", env.p("home"))
            .env("CLAUDE_PROJECT_DIR", env.p("project"))
            .env("CLAUDE_PLUGIN_ROOT", repo().join("plugin"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(payload(env, event).as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let env = Env::new();
    env.install_walj("bin");
    let o = old_claude(&env, env.p("bin").to_str().unwrap(), "PreToolUse");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    let j = env.journal();
    assert!(j.iter().any(|r| r["op"] == "intent" && r["path"] == "a.txt"), "no intent journaled: {j:?}");

    let env = Env::new();
    let o = old_claude(&env, env.p("empty").to_str().unwrap(), "PreToolUse");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    let o = old_claude(&env, env.p("empty").to_str().unwrap(), "SessionStart");
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("NOT journaled"), "{o:?}");
}

// ---------------------------------------------------------------------------------------------
// Install hygiene: uninstall undoes install, install beside the plugin, the plugin's
// SessionStart beside install's hooks, doctor run from a plugin, install from an npx cache.

/// `walj ARGS` in `env`'s project, its HOME, nothing else from the test's environment (no
/// terminal: stdin is null), `extra` added.
fn walj_in(env: &Env, exe: &Path, args: &[&str], extra: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(exe);
    c.args(args)
        .current_dir(env.p("project"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", env.p("home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    for (k, v) in extra {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Every file and folder of the project but `.git/` and `.walj/` (walj's own, git-ignored
/// folder, which keeps the journal): relative path → bytes (`None` for a folder).
fn project_tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".git" || rel == ".walj" {
                continue;
            }
            if p.is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else {
                out.insert(rel, Some(fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

#[test]
fn uninstall_leaves_the_tree_exactly_as_before_install() {
    let cmd = ["--command", "walj hook"];
    // No .claude/ at all: install creates it, uninstall takes it away again.
    let env = Env::new();
    fs::write(env.p("project/main.rs"), "fn main() {}\n").unwrap();
    let before = project_tree(&env.p("project"));
    let o = walj_in(&env, &walj_bin(), &[&["install"][..], &cmd].concat(), &[]);
    assert!(o.status.success(), "{o:?}");
    assert!(env.p("project/.claude/settings.json").is_file());
    let o = walj_in(&env, &walj_bin(), &[&["uninstall"][..], &cmd].concat(), &[]);
    assert!(o.status.success(), "{o:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("install created it"), "{out}");
    assert_eq!(project_tree(&env.p("project")), before, "uninstall left something of install's");
    assert!(!env.p("project/.claude").exists());
    // Installed twice, uninstalled once: still nothing left.
    walj_in(&env, &walj_bin(), &[&["install"][..], &cmd].concat(), &[]);
    walj_in(&env, &walj_bin(), &[&["install"][..], &cmd].concat(), &[]);
    walj_in(&env, &walj_bin(), &[&["uninstall"][..], &cmd].concat(), &[]);
    assert_eq!(project_tree(&env.p("project")), before);

    // .claude/ held something else (a command): it stays, only the settings file goes.
    let env = Env::new();
    fs::create_dir_all(env.p("project/.claude/commands")).unwrap();
    fs::write(env.p("project/.claude/commands/x.md"), "hi\n").unwrap();
    let before = project_tree(&env.p("project"));
    walj_in(&env, &walj_bin(), &[&["install"][..], &cmd].concat(), &[]);
    walj_in(&env, &walj_bin(), &[&["uninstall"][..], &cmd].concat(), &[]);
    assert_eq!(project_tree(&env.p("project")), before);

    // A settings file that was `{}` before install: it is still `{}` after uninstall.
    let env = Env::new();
    fs::create_dir_all(env.p("project/.claude")).unwrap();
    fs::write(env.p("project/.claude/settings.json"), "{}\n").unwrap();
    walj_in(&env, &walj_bin(), &[&["install"][..], &cmd].concat(), &[]);
    walj_in(&env, &walj_bin(), &[&["uninstall"][..], &cmd].concat(), &[]);
    let v: Value = serde_json::from_slice(&fs::read(env.p("project/.claude/settings.json")).unwrap()).unwrap();
    assert_eq!(v, json!({}));

    // Other settings are kept as they were, and the file with them.
    let env = Env::new();
    fs::create_dir_all(env.p("project/.claude")).unwrap();
    let mine = "{\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(ls:*)\"\n    ]\n  }\n}\n";
    fs::write(env.p("project/.claude/settings.json"), mine).unwrap();
    let before = project_tree(&env.p("project"));
    walj_in(&env, &walj_bin(), &[&["install"][..], &cmd].concat(), &[]);
    walj_in(&env, &walj_bin(), &[&["uninstall"][..], &cmd].concat(), &[]);
    assert_eq!(project_tree(&env.p("project")), before);

    // --local: the same.
    let env = Env::new();
    let before = project_tree(&env.p("project"));
    walj_in(&env, &walj_bin(), &[&["install", "--local"][..], &cmd].concat(), &[]);
    assert!(env.p("project/.claude/settings.local.json").is_file());
    walj_in(&env, &walj_bin(), &[&["uninstall", "--local"][..], &cmd].concat(), &[]);
    assert_eq!(project_tree(&env.p("project")), before);
}

/// Runs `walj ARGS` on a terminal (`script`), typing `answer`; returns (exit code, output).
fn walj_on_terminal(env: &Env, args: &str, answer: &str, extra: &[(&str, &Path)]) -> (i32, String) {
    let line = format!("{} {args}", walj_bin().display());
    let mut c = Command::new("script");
    c.args(["-qec", &line, "/dev/null"])
        .current_dir(env.p("project"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", env.p("home"))
        .env("NO_COLOR", "1")
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Give the question time to be asked before the answer is typed.
    std::thread::sleep(std::time::Duration::from_millis(700));
    stdin.write_all(answer.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn install_beside_the_plugin_asks_on_a_terminal_and_refuses_off_one() {
    let env = Env::new();
    let plugin = env.p("walj-plugin");
    generate(&plugin, true);
    // As the marketplace launcher runs walj from a `--plugin-dir` plugin (its folder named).
    let beside: &[(&str, &Path)] = &[("WALJ_PLUGIN_ROOT", &plugin)];
    let o = walj_in(&env, &walj_bin(), &["install", "--command", "walj hook"], beside);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(err.contains("refused") && err.contains("twice") && err.contains("--yes"), "{err}");
    assert!(!env.p("project/.claude").exists(), "a refused install wrote settings");

    // On a terminal: asked; "n" installs nothing, "y" installs.
    let (code, out) = walj_on_terminal(&env, "install --command 'walj hook'", "n\n", beside);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Install the hooks anyway?") && out.contains("nothing installed"), "{out}");
    assert!(!env.p("project/.claude").exists());
    let (code, out) = walj_on_terminal(&env, "install --command 'walj hook'", "y\n", beside);
    assert_eq!(code, 0, "{out}");
    assert!(env.p("project/.claude/settings.json").is_file(), "{out}");

    // `--yes` off a terminal installs; without the plugin nothing is asked.
    let env = Env::new();
    let o =
        walj_in(&env, &walj_bin(), &["install", "--command", "walj hook", "--yes"], &[("WALJ_PLUGIN_ROOT", &plugin)]);
    assert!(o.status.success(), "{o:?}");
    let env = Env::new();
    let o = walj_in(&env, &walj_bin(), &["install", "--command", "walj hook"], &[]);
    assert!(o.status.success(), "{o:?}");
    // A WALJ_PLUGIN_ROOT that is no walj plugin is not taken for one.
    let env = Env::new();
    let o =
        walj_in(&env, &walj_bin(), &["install", "--command", "walj hook"], &[("WALJ_PLUGIN_ROOT", &env.p("empty"))]);
    assert!(o.status.success(), "{o:?}");
}

/// `walj hook` at SessionStart in `env`'s project, as Claude Code runs a plugin's hook
/// (`CLAUDE_PLUGIN_ROOT` set) or a settings hook (`plugin` = None); returns stdout.
fn session_start(env: &Env, plugin: Option<&Path>) -> String {
    let mut c = Command::new(walj_bin());
    c.arg("hook")
        .current_dir(env.p("project"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", env.p("home"))
        .env("CLAUDE_PROJECT_DIR", env.p("project"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(p) = plugin {
        c.env("CLAUDE_PLUGIN_ROOT", p);
    }
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload(env, "SessionStart").as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn the_plugins_session_start_warns_once_when_installs_hooks_are_there_too() {
    let env = Env::new();
    let plugin = env.p("walj-plugin");
    generate(&plugin, false);
    // The plugin alone: no warning.
    assert!(!session_start(&env, Some(&plugin)).contains("twice"));
    let o = walj_in(&env, &walj_bin(), &["install", "--command", "walj hook", "--yes"], &[]);
    assert!(o.status.success(), "{o:?}");
    // Both: the plugin's SessionStart says so (for the user), the settings' hook does not.
    let out = session_start(&env, Some(&plugin));
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let msg = v["systemMessage"].as_str().unwrap_or_default();
    assert!(msg.contains("walj runs twice") && msg.contains("walj uninstall"), "{out}");
    assert!(msg.contains(".claude/settings.json"), "{msg}");
    assert!(
        !out.contains("additionalContext")
            || !v["hookSpecificOutput"]["additionalContext"].to_string().contains("twice")
    );
    assert!(!session_start(&env, None).contains("twice"), "the settings' hook warned too");
    // Uninstalled: the warning stops.
    walj_in(&env, &walj_bin(), &["uninstall", "--command", "walj hook"], &[]);
    assert!(!session_start(&env, Some(&plugin)).contains("twice"));
}

#[test]
fn doctor_run_from_a_plugin_checks_that_plugin() {
    // The self-contained plugin: its bin/walj is this binary.
    let env = Env::new();
    let plugin = env.p("walj-plugin");
    generate(&plugin, false);
    let plain = walj_in(&env, &walj_bin(), &["doctor"], &[]);
    assert!(String::from_utf8_lossy(&plain.stdout).contains("walj is not installed"), "{plain:?}");
    let o = walj_in(&env, &plugin.join("bin/walj"), &["doctor"], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("not installed"), "{out}");
    assert!(out.contains("as `claude --plugin-dir` loads it"), "{out}");
    assert!(o.status.code().unwrap() < 2, "{out}");
    // The marketplace launcher names its folder for the walj it runs.
    let env = Env::new();
    env.install_walj("bin");
    let o = env.launch(&launcher(), env.p("bin").to_str().unwrap(), &["doctor"], "");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("not installed"), "{out}");
    assert!(out.contains(&format!("plugin folder {}", repo().join("plugin").display())), "{out}");
    // Given as --plugin-dir too: checked once.
    let o = walj_in(&env, &plugin_copy(&env), &["doctor", "--plugin-dir", env.p("copy").to_str().unwrap()], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("as `claude --plugin-dir` loads it").count(), 1, "{out}");
}

/// A self-contained plugin at `env`'s `copy/`; returns its bin/walj.
fn plugin_copy(env: &Env) -> PathBuf {
    generate(&env.p("copy"), false);
    env.p("copy/bin/walj")
}

#[test]
fn install_from_an_npx_cache_refuses_and_writes_nothing() {
    let env = Env::new();
    let cached = env.p("home/.npm/_npx/4f1c2a/node_modules/@walj/linux-x64/bin");
    fs::create_dir_all(&cached).unwrap();
    fs::copy(walj_bin(), cached.join("walj")).unwrap();
    let before = project_tree(&env.p("project"));
    for args in [&["install"][..], &["install", "--local"], &["install", "--user"]] {
        let o = walj_in(&env, &cached.join("walj"), args, &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        assert!(
            err.contains("npx cache") && err.contains("cargo install --path .") && !err.contains("npm install -g walj"),
            "{err}"
        );
    }
    assert_eq!(project_tree(&env.p("project")), before);
    assert!(!env.p("home/.claude/settings.json").exists());
    // Run by the npm shim from the cache (the binary elsewhere): refused as well.
    let shim = env.p("home/.npm/_npx/4f1c2a/node_modules/walj/bin/walj.js");
    fs::create_dir_all(shim.parent().unwrap()).unwrap();
    fs::write(&shim, "").unwrap();
    let o = walj_in(&env, &walj_bin(), &["install", "--local"], &[("WALJ_NPM_SHIM", &shim)]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}
