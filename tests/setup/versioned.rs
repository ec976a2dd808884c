//! Hook events only newer Claude Code versions fire (`PreSkillShellCommand`, 2.1.332: a skill's
//! or slash command's `!` shell line): `walj install` writes one only when `claude --version`
//! says that version or later (an unknown version gets none, and install says so), and
//! `walj doctor` reports it present or missing against the version. Through the real binary,
//! with a `claude` on PATH that answers `--version` as the real one does (and, when it can be
//! had, the real pinned CLI).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::common::{Repo, outcome, walj_bin};
use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const EVENT: &str = "PreSkillShellCommand";
/// A PATH without walj or claude on it (but with sh and git).
const BARE_PATH: &str = "/usr/bin:/bin";

/// A project, a HOME, Claude Code's config folder, and `bin/` with walj (and, per case, a
/// `claude` that answers `--version`).
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

    /// Puts a `claude` on PATH that prints `version` for `--version` (as 2.1.x does:
    /// "2.1.332 (Claude Code)"); `None` takes it away.
    fn claude_says(&self, version: Option<&str>) {
        let path = self.bin.join("claude");
        let _ = fs::remove_file(&path);
        if let Some(v) = version {
            fs::write(&path, format!("#!/bin/sh\necho '{v}'\n")).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    /// A real `claude` binary on PATH.
    fn real_claude(&self, bin: &Path) {
        let _ = fs::remove_file(self.bin.join("claude"));
        std::os::unix::fs::symlink(bin, self.bin.join("claude")).unwrap();
    }

    fn walj(&self, args: &[&str]) -> (i32, String, String) {
        let mut c = self.repo.walj(args);
        c.env("HOME", &self.repo.home)
            .env("CLAUDE_CONFIG_DIR", &self.config)
            .env("PATH", format!("{}:{BARE_PATH}", self.bin.display()))
            .env_remove("CARGO_HOME");
        outcome(&c.output().unwrap())
    }

    fn install(&self) -> String {
        let (code, out, err) = self.walj(&["install", "--command", "walj hook", "--yes"]);
        assert_eq!(code, 0, "{out}\n{err}");
        out
    }

    fn doctor(&self) -> (i32, String) {
        let (code, out, err) = self.walj(&["doctor"]);
        assert!(err.is_empty(), "doctor wrote to stderr: {err}");
        (code, out)
    }

    fn settings(&self, name: &str) -> Value {
        serde_json::from_str(&fs::read_to_string(self.repo.path(&format!(".claude/{name}"))).unwrap()).unwrap()
    }
}

/// Whether `settings` hooks `event` with walj's handler (no matcher: every shell line).
fn hooks_event(settings: &Value, event: &str) -> bool {
    settings["hooks"][event].as_array().into_iter().flatten().any(|g| {
        g.get("matcher").is_none()
            && g["hooks"].as_array().into_iter().flatten().any(|h| h["command"] == "walj" && h["args"][0] == "hook")
    })
}

fn line_with<'a>(out: &'a str, needle: &str) -> Option<&'a str> {
    out.lines().find(|l| l.contains(needle))
}

#[test]
fn install_hooks_a_skills_shell_line_only_where_claude_code_fires_it_and_doctor_tells() {
    // 2.1.332: hooked in settings.json and its subfolder copy; doctor ok.
    let w = World::new();
    w.claude_says(Some("2.1.332 (Claude Code)"));
    let out = w.install();
    assert!(out.contains(EVENT), "{out}");
    assert!(hooks_event(&w.settings("settings.json"), EVENT), "{}", w.settings("settings.json"));
    assert!(hooks_event(&w.settings("settings.local.json"), EVENT), "{}", w.settings("settings.local.json"));
    let (code, out) = w.doctor();
    assert_eq!(code, 0, "{out}");
    let l = line_with(&out, EVENT).unwrap_or_else(|| panic!("{out}"));
    assert!(l.starts_with("[ok]") && l.contains("hooked; Claude Code 2.1.332 (Claude Code) fires it"), "{out}");
    // Uninstall takes it out with the rest.
    let (code, out, err) = w.walj(&["uninstall"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!w.repo.path(".claude/settings.json").exists() || !hooks_event(&w.settings("settings.json"), EVENT));

    // 2.1.328: not hooked (it does not know the event); doctor says why, as info.
    let w = World::new();
    w.claude_says(Some("2.1.328 (Claude Code)"));
    let out = w.install();
    assert!(!out.contains(EVENT), "{out}");
    assert!(!hooks_event(&w.settings("settings.json"), EVENT), "{}", w.settings("settings.json"));
    let (code, out) = w.doctor();
    assert_eq!(code, 0, "{out}");
    let l = line_with(&out, EVENT).unwrap_or_else(|| panic!("{out}"));
    assert!(
        l.starts_with("[info]") && l.contains("not hooked; Claude Code 2.1.328 (Claude Code) is older than 2.1.332"),
        "{out}"
    );

    // Claude Code updated to 2.1.332: doctor warns until install runs again, which adds only it.
    w.claude_says(Some("2.1.332 (Claude Code)"));
    let (code, out) = w.doctor();
    assert_eq!(code, 1, "{out}");
    let l = line_with(&out, EVENT).unwrap_or_else(|| panic!("{out}"));
    assert!(
        l.starts_with("[warn]") && l.contains("not hooked, though Claude Code 2.1.332") && l.contains("walj install"),
        "{out}"
    );
    let out = w.install();
    assert!(out.contains(&format!("for: {EVENT}\n")), "install added more than the new event: {out}");
    assert!(hooks_event(&w.settings("settings.json"), EVENT));
    let (code, out) = w.doctor();
    assert_eq!(code, 0, "{out}");

    // No claude on PATH: the version is unknown, nothing versioned is written, both say so.
    let w = World::new();
    w.claude_says(None);
    let out = w.install();
    assert!(out.contains("Claude Code's version is unknown") && out.contains(EVENT), "{out}");
    assert!(!hooks_event(&w.settings("settings.json"), EVENT), "{}", w.settings("settings.json"));
    let (code, out) = w.doctor();
    assert_eq!(code, 0, "{out}");
    let l = line_with(&out, EVENT).unwrap_or_else(|| panic!("{out}"));
    assert!(l.starts_with("[info]") && l.contains("not hooked; whether Claude Code fires it is unknown"), "{out}");

    // A `claude` that says no version counts as unknown.
    let w = World::new();
    w.claude_says(Some("Claude Code"));
    w.install();
    assert!(!hooks_event(&w.settings("settings.json"), EVENT));
}

/// The real pinned CLI's `--version` (2.1.328) as install reads it: the event is not written.
#[test]
fn install_reads_the_real_clis_version() {
    let Some(bin) = crate::support::claude::claude_or_skip("install_reads_the_real_clis_version") else { return };
    let w = World::new();
    w.real_claude(&bin);
    let version = std::process::Command::new(&bin).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let fires = walj::claude::events::versioned_events(walj::claude::settings::parse_version(&version));
    w.install();
    assert_eq!(hooks_event(&w.settings("settings.json"), EVENT), fires.contains(&EVENT), "{version}");
    let (_, out) = w.doctor();
    let l = line_with(&out, EVENT).unwrap_or_else(|| panic!("{out}"));
    assert!(l.contains(&version), "{out}");
}
