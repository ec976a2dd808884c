//! Issue 15: `walj doctor` recognises a plugin install, warns when walj is installed twice,
//! fails when a hook command cannot be found (with the PATH Claude Code gives its hooks),
//! validates `.walj/config.toml`, and has `--json`. Through the real binary, in real git
//! repositories, with a temp HOME and `CLAUDE_CONFIG_DIR`; one test uses the real Claude Code
//! CLI to install the plugin (and run a session) as a user does.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::common::{Repo, outcome, walj_bin};
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The hook events walj registers (the one table in src/claude/events.rs).
const N: usize = walj::claude::events::HookEvent::ALL.len();

/// A PATH without walj on it (but with sh and git).
const BARE_PATH: &str = "/usr/bin:/bin";

/// A project (git repository), a HOME, Claude Code's config folder, and `bin/` holding walj.
struct World {
    repo: Repo,
    config: PathBuf,
    bin: PathBuf,
}

impl World {
    fn new() -> World {
        let repo = Repo::init_in("project").with_home();
        repo.write("a.txt", "a\n");
        repo.commit("initial");
        let config = repo.tmp.join("claude-config");
        fs::create_dir_all(&config).unwrap();
        let bin = repo.tmp.join("bin");
        fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(walj_bin(), bin.join("walj")).unwrap();
        World { repo, config, bin }
    }

    /// A PATH on which `walj` is found.
    fn walj_path(&self) -> String {
        format!("{}:{BARE_PATH}", self.bin.display())
    }

    /// `walj ARGS` with this world's HOME and config folder and the given PATH.
    fn walj(&self, path: &str, args: &[&str]) -> (i32, String, String) {
        let mut c = self.repo.walj(args);
        c.env("HOME", &self.repo.home)
            .env("CLAUDE_CONFIG_DIR", &self.config)
            .env("PATH", path)
            .env_remove("CARGO_HOME");
        outcome(&c.output().unwrap())
    }

    fn doctor(&self, path: &str, args: &[&str]) -> (i32, String) {
        let mut a = vec!["doctor"];
        a.extend_from_slice(args);
        let (code, out, err) = self.walj(path, &a);
        assert!(err.is_empty(), "doctor wrote to stderr: {err}");
        (code, out)
    }

    fn doctor_json(&self, path: &str, args: &[&str]) -> (i32, Value) {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let (code, out) = self.doctor(path, &a);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("doctor --json: {e}: {out}"));
        assert_eq!(v["exit_code"], code, "{v:#}");
        (code, v)
    }

    fn install(&self, args: &[&str]) {
        // `--yes`: these tests install beside an enabled plugin on purpose (off a terminal,
        // install refuses that without it).
        let mut a = vec!["install", "--command", "walj hook", "--yes"];
        a.extend_from_slice(args);
        let (code, out, err) = self.walj(&self.walj_path(), &a);
        assert_eq!(code, 0, "{out}\n{err}");
    }

    fn write_json(&self, path: &Path, v: &Value) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
    }

    /// `walj plugin --out DIR`: the self-contained plugin (its `bin/walj` is a copy of walj).
    fn generated_plugin(&self) -> PathBuf {
        let dir = self.repo.tmp.join("walj-plugin");
        let (code, out, err) = self.walj(BARE_PATH, &["plugin", "--out", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}\n{err}");
        dir
    }

    /// Claude Code's record of a plugin installed from a git marketplace (the shape
    /// `claude plugin install` writes, see `plugin_installed_with_the_real_cli_…`).
    fn record_plugin_install(&self, id: &str, install_path: &Path, scope: &str, project: Option<&Path>) {
        let mut entry = json!({"scope": scope, "installPath": install_path, "version": "0.1.0",
                               "installedAt": "2026-12-01T00:00:00.000Z", "lastUpdated": "2026-12-01T00:00:00.000Z"});
        if let Some(p) = project {
            entry["projectPath"] = json!(p);
        }
        self.write_json(
            &self.config.join("plugins/installed_plugins.json"),
            &json!({"version": 2, "plugins": {id: [entry]}}),
        );
    }

    fn enable_plugin(&self, settings: &Path, id: &str, on: bool) {
        let mut v: Value =
            fs::read_to_string(settings).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(json!({}));
        v["enabledPlugins"][id] = json!(on);
        self.write_json(settings, &v);
    }

    fn user_settings(&self) -> PathBuf {
        self.config.join("settings.json")
    }
}

fn lines_with<'a>(out: &'a str, needle: &str) -> Vec<&'a str> {
    out.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn a_hook_command_that_cannot_be_found_fails_and_is_not_reported_ok() {
    let w = World::new();
    w.install(&[]);
    // Today's doctor said `[ok]` nine times here: `walj` is not on the PATH, every hook fails.
    let (code, out) = w.doctor(BARE_PATH, &[]);
    assert_eq!(code, 2, "{out}");
    // Exec form (no `claude` on PATH to ask for its version): named by its words.
    let err = lines_with(&out, "[error] `[\"walj\",\"hook\"]` (settings) cannot run");
    assert_eq!(err.len(), 1, "{out}");
    assert!(
        err[0].contains("`walj` is not on the PATH Claude Code gives its hooks (this shell's PATH: /usr/bin:/bin)")
    );
    assert!(
        err[0].contains(&format!("all {N} hooks fail on every call")) && err[0].contains("walj install --local"),
        "{out}"
    );
    assert!(lines_with(&out, ": hooked").is_empty(), "an event whose command cannot run is not ok:\n{out}");

    // With walj on PATH: every event hooked, and which walj runs.
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 0, "{out}");
    let hooked: Vec<&str> =
        lines_with(&out, "[ok]").into_iter().filter(|l| l.contains(": hooked (`[\"walj\",\"hook\"]`")).collect();
    // settings.json and the copy in settings.local.json `walj install` makes for subfolder starts:
    // one line per event naming both (two identical lines per event read as a fault).
    assert_eq!(hooked.len(), N, "{out}");
    assert!(
        hooked.iter().all(|l| l.contains(".claude/settings.json and ") && l.ends_with(".claude/settings.local.json)")),
        "{out}"
    );
    assert!(out.contains(&format!("[ok] `[\"walj\",\"hook\"]` (settings) runs {}/walj", w.bin.display())), "{out}");

    // An absolute path that exists but cannot be executed fails too.
    let not_exec = w.repo.tmp.join("opt/walj");
    fs::create_dir_all(not_exec.parent().unwrap()).unwrap();
    fs::write(&not_exec, "#!/bin/sh\n").unwrap();
    let cmd = format!("{} hook", not_exec.display());
    // Without the local copy `walj install` made (else `--local` finds walj there already).
    fs::remove_file(w.repo.path(".claude/settings.local.json")).unwrap();
    let (code, out, err) = w.walj(&w.walj_path(), &["install", "--local", "--command", &cmd]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out) = w.doctor(&w.walj_path(), &["--command", &cmd]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(&format!("`{}` is not executable", not_exec.display())), "{out}");
}

/// walj's handlers for every event, in the shape `walj install` writes, built here from the
/// event table: `handler(event)` gives the handler object.
fn hooks_with(handler: &dyn Fn(usize) -> Value) -> Value {
    let mut events = serde_json::Map::new();
    for (i, ev) in walj::claude::events::HookEvent::ALL.iter().enumerate() {
        let mut group = json!({"hooks": [handler(i)]});
        if let Some(m) = ev.matcher() {
            group["matcher"] = json!(m);
        }
        events.insert(ev.name().to_string(), json!([group]));
    }
    Value::Object(events)
}

/// Doctor, install and uninstall on a settings file with walj's hook in exec form, in shell
/// form, and mixed (some events one way, some the other), beside another tool's exec-form hook
/// that merely mentions walj: doctor finds every event hooked, install adds nothing and leaves
/// the file alone, uninstall takes out every walj handler and only those. (Before the one
/// predicate, doctor said "walj is not installed" on exec form, install added a second handler
/// per event and uninstall left the exec ones.)
#[test]
fn doctor_install_uninstall_on_exec_shell_and_mixed_settings() {
    let exec = |_: usize| json!({"type": "command", "command": "walj", "args": ["hook"], "timeout": 10});
    let shell = |_: usize| json!({"type": "command", "command": "walj hook", "timeout": 10});
    let mixed = |i: usize| if i.is_multiple_of(2) { exec(i) } else { shell(i) };
    let other = json!({"type": "command", "command": "/usr/bin/env", "args": ["walj", "hook"], "timeout": 5});
    let cases: [(&str, &dyn Fn(usize) -> Value); 3] = [("exec", &exec), ("shell", &shell), ("mixed", &mixed)];
    for (name, handler) in cases {
        let w = World::new();
        let settings = w.repo.path(".claude/settings.json");
        let mut hooks = hooks_with(handler);
        hooks["Stop"][0]["hooks"].as_array_mut().unwrap().push(other.clone());
        w.write_json(&settings, &json!({"model": "opus", "hooks": hooks}));
        let before = fs::read(&settings).unwrap();

        let (code, out) = w.doctor(&w.walj_path(), &[]);
        // settings.json alone: sessions started in a subfolder are not journaled (the one warning).
        assert_eq!(code, 1, "{name}: {out}");
        assert_eq!(out.lines().filter(|l| l.starts_with("[warn]")).count(), 1, "{name}: {out}");
        assert_eq!(lines_with(&out, "[warn] walj's hooks are in .claude/settings.json only").len(), 1, "{name}: {out}");
        assert_eq!(lines_with(&out, ": hooked (").len(), N, "{name}: {out}");
        assert!(!out.contains("not installed"), "{name}: {out}");

        for form in [&[][..], &["--form", "shell"], &["--form", "exec"]] {
            let mut args = vec!["install"];
            args.extend_from_slice(form);
            let (code, out, err) = w.walj(&w.walj_path(), &args);
            assert_eq!(code, 0, "{name}: {out}{err}");
            assert!(
                out.contains(&format!("walj hooks already installed in {} ({N} events)", settings.display())),
                "{name}: {out}"
            );
            assert_eq!(fs::read(&settings).unwrap(), before, "{name}: install changed the file");
        }

        let (code, out, err) = w.walj(&w.walj_path(), &["uninstall"]);
        assert_eq!(code, 0, "{name}: {out}{err}");
        let after: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
        assert_eq!(after, json!({"model": "opus", "hooks": {"Stop": [{"hooks": [other.clone()]}]}}), "{name}");
        let (code, out) = w.doctor(&w.walj_path(), &[]);
        assert_eq!(code, 2, "{name}: {out}");
        assert!(out.contains("walj is not installed in Claude Code's settings"), "{name}: {out}");
    }
}

/// Both forms in the same event run twice (Claude Code runs each handler): a warning naming
/// both, and uninstall removes both.
#[test]
fn walj_in_both_forms_in_one_event_is_a_duplicate() {
    let w = World::new();
    let settings = w.repo.path(".claude/settings.json");
    let mut hooks = hooks_with(&|_| json!({"type": "command", "command": "walj", "args": ["hook"], "timeout": 10}));
    hooks["PreToolUse"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "command", "command": "walj hook", "timeout": 10}));
    w.write_json(&settings, &json!({"hooks": hooks}));
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 1, "{out}");
    let warn = lines_with(&out, "[warn] PreToolUse: walj's hook is installed 2 times with different commands");
    assert_eq!(warn.len(), 1, "{out}");
    assert!(warn[0].contains("`[\"walj\",\"hook\"]`") && warn[0].contains("`walj hook`"), "{out}");
    w.walj(&w.walj_path(), &["uninstall"]);
    // Nothing but walj's hooks was in it: the file goes rather than staying as `{}`.
    assert!(!settings.exists(), "{:?}", fs::read_to_string(&settings));
}

/// Exec-form hooks and a `claude` on PATH older than 2.1.139 (which ignores `args`): a warning
/// with the fix; none for a newer one or for shell form.
#[test]
fn exec_form_under_a_claude_code_that_ignores_args_is_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new();
    let claude_dir = |version: &str| {
        let dir = w.repo.tmp.join(format!("claude-{version}"));
        fs::create_dir_all(&dir).unwrap();
        let claude = dir.join("claude");
        fs::write(&claude, format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
        fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
        format!("{}:{}", dir.display(), w.walj_path())
    };
    w.install(&["--form", "exec"]);
    let (code, out) = w.doctor(&claude_dir("2.1.100"), &[]);
    assert_eq!(code, 1, "{out}");
    let warn = lines_with(&out, "[warn] Claude Code 2.1.100 (Claude Code)");
    assert_eq!(warn.len(), 1, "{out}");
    assert!(warn[0].contains("older than 2.1.139") && warn[0].contains("walj install --form shell"), "{out}");
    let (code, out) = w.doctor(&claude_dir("2.1.328"), &[]);
    assert_eq!(code, 0, "{out}");
    w.walj(&w.walj_path(), &["uninstall"]);
    w.install(&["--form", "shell"]);
    let (code, out) = w.doctor(&claude_dir("2.1.100"), &[]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn the_path_hooks_get_is_the_settings_env_path() {
    let w = World::new();
    w.install(&[]);
    // walj is on this shell's PATH, but Claude Code gives its hooks the settings' env.PATH.
    w.write_json(&w.user_settings(), &json!({"env": {"PATH": BARE_PATH}}));
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 2, "{out}");
    let from = format!("env.PATH in {}", w.user_settings().display());
    assert!(
        out.contains(&format!("`walj` is not on the PATH Claude Code gives its hooks ({from}: {BARE_PATH})")),
        "{out}"
    );
    // The local settings override the user's: a PATH with walj there makes it fine again.
    let local = w.repo.path(".claude/settings.local.json");
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&local).unwrap()).unwrap();
    v["env"] = json!({"PATH": w.walj_path()});
    w.write_json(&local, &v);
    let (code, out) = w.doctor(BARE_PATH, &[]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_plugin_install_is_recognised_and_its_binary_checked() {
    let w = World::new();
    let plugin = w.generated_plugin();
    w.record_plugin_install("walj@walj-git", &plugin, "user", None);
    w.enable_plugin(&w.user_settings(), "walj@walj-git", true);

    // Only the plugin: no settings hooks, walj not on PATH (the plugin holds a copy of walj).
    let (code, out) = w.doctor(BARE_PATH, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "[ok] plugin walj@walj-git: enabled in {} (user), loaded from {}",
            w.user_settings().display(),
            plugin.display()
        )),
        "{out}"
    );
    assert_eq!(lines_with(&out, ": hooked (`[\"${CLAUDE_PLUGIN_ROOT}/bin/walj\",\"hook\"]`").len(), N, "{out}");
    assert!(out.contains(&format!("(plugin walj@walj-git) runs {}/bin/walj", plugin.display())), "{out}");
    assert!(!out.contains("not installed"), "{out}");

    // Its binary gone: every hook fails.
    fs::remove_file(plugin.join("bin/walj")).unwrap();
    let (code, out) = w.doctor(BARE_PATH, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(&format!("`{}/bin/walj` does not exist", plugin.display())), "{out}");

    // Disabled in the project's local settings (which win over the user's): not an install.
    w.enable_plugin(&w.repo.path(".claude/settings.local.json"), "walj@walj-git", false);
    let (code, out) = w.doctor(BARE_PATH, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("[info] plugin walj@walj-git is installed but disabled in"), "{out}");
    assert!(out.contains("walj is not installed in Claude Code's settings"), "{out}");
}

#[test]
fn a_plugin_installed_for_another_project_is_not_this_ones() {
    let w = World::new();
    let plugin = w.generated_plugin();
    let elsewhere = w.repo.tmp.join("other-project");
    fs::create_dir_all(&elsewhere).unwrap();
    w.record_plugin_install("walj@walj-git", &plugin, "project", Some(&elsewhere));
    w.enable_plugin(&w.repo.path(".claude/settings.json"), "walj@walj-git", true);
    let (code, out) = w.doctor(BARE_PATH, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("[warn] plugin walj@walj-git is enabled in"), "{out}");
    assert!(out.contains("but not installed on this machine (`claude plugin install walj@walj-git`)"), "{out}");
}

#[test]
fn walj_installed_twice_is_a_warning_naming_both_and_the_fix() {
    let w = World::new();
    let plugin = w.generated_plugin();
    w.record_plugin_install("walj@walj-git", &plugin, "user", None);
    w.enable_plugin(&w.user_settings(), "walj@walj-git", true);
    w.install(&["--local"]);
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 1, "{out}");
    let twice = lines_with(&out, "[warn] walj is installed twice");
    assert_eq!(twice.len(), 1, "{out}");
    let local = w.repo.path(".claude/settings.local.json");
    assert!(twice[0].contains(&format!("the hooks in {}, and the plugin walj@walj-git", local.display())), "{out}");
    assert!(twice[0].contains("every event is journaled twice"), "{out}");
    assert!(twice[0].contains("`walj uninstall --local` or `claude plugin disable walj@walj-git`"), "{out}");
    // One finding, not one per event.
    assert!(lines_with(&out, "different commands").is_empty(), "{out}");
}

#[test]
fn a_plugin_dir_cannot_be_seen_so_doctor_says_so_and_takes_it_as_an_argument() {
    let w = World::new();
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("cannot be seen from here: check it with `walj doctor --plugin-dir DIR`"), "{out}");
    assert!(out.contains("If Claude Code loads walj that way, do not also run `walj install`"), "{out}");

    let plugin = w.generated_plugin();
    let (code, out) = w.doctor(BARE_PATH, &["--plugin-dir", plugin.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("[ok] plugin folder {} (as `claude --plugin-dir` loads it)", plugin.display())));

    // With settings hooks too: installed twice.
    w.install(&[]);
    let (code, out) = w.doctor(&w.walj_path(), &["--plugin-dir", plugin.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("[warn] walj is installed twice"), "{out}");
    assert!(out.contains(&format!("the plugin folder {} (`--plugin-dir`)", plugin.display())), "{out}");
    // Settings hooks alone: a note that a --plugin-dir plugin would not show.
    let (_, out) = w.doctor(&w.walj_path(), &[]);
    assert!(out.contains("[info] a plugin loaded with `claude --plugin-dir DIR` cannot be seen from here"), "{out}");
}

/// A `--plugin-dir` plugin that journals the project: its hook records its folder in the
/// session's start, so `walj doctor` run from the user's shell (no `--plugin-dir`) finds and
/// checks it, and advises no second install. A later session journaled by `walj install`'s
/// hooks instead is the one that runs: the old folder is no longer taken.
#[test]
fn doctor_finds_the_plugin_dir_plugin_that_journaled_the_latest_session() {
    let w = World::new();
    let plugin = w.generated_plugin();
    // `walj hook` at a SessionStart, as Claude Code runs it (for a plugin: `CLAUDE_PLUGIN_ROOT` set).
    let start_session = |program: &Path, plugin_root: Option<&Path>, session: &str| {
        let mut hook = Command::new(program);
        hook.arg("hook")
            .current_dir(&w.repo.root)
            .env("HOME", &w.repo.home)
            .env("CLAUDE_CONFIG_DIR", &w.config)
            .env("PATH", BARE_PATH)
            .env_remove("CLAUDE_PLUGIN_ROOT")
            .stdin(Stdio::piped())
            .stdout(Stdio::null());
        if let Some(r) = plugin_root {
            hook.env("CLAUDE_PLUGIN_ROOT", r);
        }
        let mut child = hook.spawn().unwrap();
        let payload = w.repo.start_payload(session);
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.as_bytes()).unwrap();
        assert!(child.wait().unwrap().success());
    };
    start_session(&plugin.join("bin/walj"), Some(&plugin), "91d91e00-0000-4000-8000-000000000001");
    let start = w.repo.records().into_iter().find(|r| r["kind"] == "start").expect("a start record");
    assert_eq!(start["plugin_root"], json!(plugin), "{start}");

    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("[ok] plugin folder {}: its hooks journaled the latest session", plugin.display())),
        "{out}"
    );
    assert!(!out.contains("run `walj install`") && !out.contains("not working"), "{out}");

    // The next session journaled by `walj install`'s hooks: the plugin is no longer named.
    w.install(&[]);
    start_session(&walj_bin(), None, "91d91e00-0000-4000-8000-000000000002");
    let (_, out) = w.doctor(&w.walj_path(), &[]);
    assert!(!out.contains("journaled the latest session"), "{out}");
    assert!(!out.contains("installed twice"), "{out}");

    // Another plugin's folder in the environment (leaked into a nested session) is not recorded.
    let other = w.repo.tmp.join("other-plugin");
    w.write_json(&other.join(".claude-plugin/plugin.json"), &json!({"name": "other"}));
    start_session(&walj_bin(), Some(&other), "91d91e00-0000-4000-8000-000000000003");
    let start = w.repo.records().into_iter().rev().find(|r| r["kind"] == "start").unwrap();
    assert_eq!(start["session"], "91d91e00-0000-4000-8000-000000000003");
    assert!(start.get("plugin_root").is_none(), "{start}");
}

/// A fresh clone holds only the committed settings.json: sessions started in a subfolder run
/// none of its hooks. doctor warns (exit 1), names the start folders and the one command that
/// fixes it; after that command it is healthy.
#[test]
fn a_clone_with_committed_settings_only_warns_which_start_folders_go_unjournaled() {
    let w = World::new();
    w.repo.write("src/lib.rs", "\n");
    w.repo.write("docs/x.md", "\n");
    w.install(&[]);
    assert!(w.repo.exists(".claude/settings.local.json"), "install writes the subfolder copy");
    // The teammate's clone: the committed file only.
    fs::remove_file(w.repo.path(".claude/settings.local.json")).unwrap();
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 1, "{out}");
    let warn = lines_with(&out, "[warn] walj's hooks are in .claude/settings.json only");
    assert_eq!(warn.len(), 1, "{out}");
    assert!(warn[0].contains("sessions started in docs/, src/ or any folder below them are not journaled"), "{out}");
    assert!(warn[0].contains("Run `walj install` here"), "{out}");

    w.install(&[]);
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("[ok] sessions started in any subfolder journal into"), "{out}");
}

#[test]
fn a_broken_config_is_an_error_that_says_where() {
    let w = World::new();
    w.install(&[]);
    w.repo.write(".walj/config.toml", "[capture]\nmax_bytes = 10\nmax_byte = 1\n");
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 2, "{out}");
    let config = w.repo.path(".walj/config.toml");
    assert!(
        out.contains(&format!("[error] config {}:3:1: unknown field `max_byte`, expected", config.display())),
        "{out}"
    );
    assert!(out.contains("      3 | max_byte = 1\n           | ^\n"), "{out}");

    w.repo.write(".walj/config.toml", "[[events]]\nglob = \"src/{a,b\"\nevent = \"x\"\n");
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(&format!("config {}:2:8: bad glob \"src/{{a,b\"", config.display())), "{out}");

    w.repo.write(".walj/config.toml", "[keys]\nrevert = [\"ctrl-zz\"]\n");
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("revert: unknown key \"ctrl-zz\""), "{out}");

    w.repo.write(".walj/config.toml", "[retention]\ndays = 7\n");
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("[ok] config {}: valid", config.display())), "{out}");
}

#[test]
fn json_output_follows_the_documented_schema() {
    let w = World::new();
    w.install(&[]);
    let (code, v) = w.doctor_json(BARE_PATH, &[]);
    assert_eq!(code, 2);
    assert_eq!(v["status"], "error");
    assert_eq!(v["hook_path"], BARE_PATH);
    assert_eq!(v["hook_path_from"], "this shell's PATH");
    assert_eq!(
        v["installs"],
        json!([{"kind": "settings", "files": [w.repo.path(".claude/settings.json"), w.repo.path(".claude/settings.local.json")]}]),
        "{v:#}"
    );
    let cmds = v["commands"].as_array().unwrap();
    assert_eq!(cmds.len(), 1, "{v:#}");
    assert_eq!(cmds[0]["command"], "[\"walj\",\"hook\"]");
    assert_eq!(cmds[0]["form"], "exec");
    assert_eq!(cmds[0]["install"], "settings");
    assert_eq!(cmds[0]["status"], "missing");
    assert_eq!(cmds[0]["events"].as_array().unwrap().len(), N);
    assert!(cmds[0]["why"].as_str().unwrap().contains("not on the PATH"), "{v:#}");
    for f in v["findings"].as_array().unwrap() {
        assert!(["info", "ok", "warn", "error"].contains(&f["level"].as_str().unwrap()), "{f}");
        assert!(
            [
                "settings",
                "hooks",
                "command",
                "plugin",
                "install",
                "config",
                "journal",
                "errors_log",
                "walj_dir",
                "subfolder",
                "mcp"
            ]
            .contains(&f["check"].as_str().unwrap()),
            "{f}"
        );
        assert!(f["message"].is_string() && f["details"].is_array(), "{f}");
    }
    assert!(v["findings"].as_array().unwrap().iter().any(|f| f["check"] == "command" && f["level"] == "error"));

    let (code, v) = w.doctor_json(&w.walj_path(), &[]);
    assert_eq!(code, 0);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["commands"][0]["status"], "found");
    assert_eq!(v["commands"][0]["program"], json!(w.bin.join("walj")));
}

// ------------------------------------------------------------------------------------------
// With the real Claude Code CLI

fn claude_in(bin: &Path, w: &World, args: &[&str]) -> String {
    let o = Command::new(bin)
        .args(args)
        .current_dir(&w.repo.root)
        .env_clear()
        .env("PATH", BARE_PATH)
        .env("HOME", &w.repo.home)
        .env("CLAUDE_CONFIG_DIR", &w.config)
        .env("TMPDIR", &w.repo.tmp)
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "claude {args:?} failed: {text}");
    text
}

/// Installs the marketplace plugin with the real CLI, then: doctor recognises it and follows
/// its launcher; without walj the launcher journals nothing and doctor fails; with `walj
/// install` too doctor warns of two installs, and a real session proves each call is then
/// journaled twice; `claude plugin disable` ends the warning.
#[test]
fn plugin_installed_with_the_real_cli_is_recognised_and_a_double_install_journals_twice() {
    use crate::support::anthropic_mock::{MockServer, Turn};
    let test = "plugin_installed_with_the_real_cli_is_recognised_and_a_double_install_journals_twice";
    let Some(claude) = crate::support::claude::claude_or_skip(test) else { return };
    let w = World::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    claude_in(&claude, &w, &["plugin", "marketplace", "add", repo.to_str().unwrap()]);
    claude_in(&claude, &w, &["plugin", "install", "walj@walj"]);

    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("[ok] plugin walj@walj: enabled in {} (user)", w.user_settings().display())),
        "{out}"
    );
    let launcher = repo.join("plugin/bin/walj");
    assert!(
        out.contains(&format!(
            "runs walj's plugin launcher {}, which runs {}/walj",
            launcher.display(),
            w.bin.display()
        )),
        "{out}"
    );

    // No walj on PATH nor in ~/.cargo/bin: the launcher runs and journals nothing.
    let (code, out) = w.doctor(BARE_PATH, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("on the PATH Claude Code gives"), "{out}");
    // The plugin's hooks.json also lists the versioned events (PreSkillShellCommand).
    let plugin_n = N + walj::claude::events::VERSIONED_EVENTS.len();
    assert!(out.contains(&format!("all {plugin_n} hooks run, exit 0 and journal nothing")), "{out}");
    // ~/.cargo/bin is where the launcher looks next.
    let cargo_bin = w.repo.home.join(".cargo/bin");
    fs::create_dir_all(&cargo_bin).unwrap();
    std::os::unix::fs::symlink(walj_bin(), cargo_bin.join("walj")).unwrap();
    let (code, out) = w.doctor(BARE_PATH, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!("which runs {}/walj", cargo_bin.display())), "{out}");

    // walj install on top: doctor warns, and a real session journals every call twice.
    w.install(&[]);
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("[warn] walj is installed twice"), "{out}");
    let file = w.repo.path("notes.md");
    let mock = MockServer::start(vec![
        Turn::tool("Write", json!({"file_path": file, "content": "twice?\n"})),
        Turn::text("Done."),
    ]);
    let out = Command::new(&claude)
        .current_dir(&w.repo.root)
        .env_clear()
        .env("PATH", w.walj_path())
        .env("HOME", &w.repo.home)
        .env("CLAUDE_CONFIG_DIR", &w.config)
        .env("TMPDIR", &w.repo.tmp)
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "Write notes", "--output-format", "json", "--permission-mode", "acceptEdits"])
        .args(["--allowedTools", "Edit Write Bash"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let intents_of_write = || {
        w.repo
            .records()
            .iter()
            .filter(|r| r["op"] == "intent" && r["tool"] == "Write" && r["path"] == "notes.md")
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while intents_of_write() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(intents_of_write(), 2, "one Write, journaled by both installs");

    claude_in(&claude, &w, &["plugin", "disable", "walj@walj"]);
    let (code, out) = w.doctor(&w.walj_path(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("[info] plugin walj@walj is installed but disabled in"), "{out}");
    assert!(!out.contains("installed twice"), "{out}");
}
