//! `walj install --agent codex|gemini|copilot [--user]`, `walj uninstall --agent …` and what
//! `walj doctor` says about each agent's hooks, with temp HOME, CODEX_HOME and COPILOT_HOME.
//! (`tests/e2e/agents.rs` proves with the real CLIs that what install writes makes them run
//! walj's hooks: Codex's trust entries included.)

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::path::{Path, PathBuf};

use crate::common::Repo;
use serde_json::Value;
use walj::agents::codex_trust;

struct Env {
    repo: Repo,
    home: PathBuf,
    codex_home: PathBuf,
    copilot_home: PathBuf,
}

fn env() -> Env {
    let repo = Repo::new(&[("a.txt", "hello\n")]);
    let home = repo.tmp.join("home");
    std::fs::create_dir_all(&home).unwrap();
    Env { codex_home: home.join(".codex"), copilot_home: home.join(".copilot"), home, repo }
}

impl Env {
    /// `walj ARGS` in the project with the temp homes; (exit code, stdout + stderr).
    fn walj(&self, args: &[&str]) -> (i32, String) {
        let out = crate::common::walj_at(&self.repo.root)
            .args(args)
            .current_dir(&self.repo.root)
            .env("HOME", &self.home)
            .env("CODEX_HOME", &self.codex_home)
            .env("COPILOT_HOME", &self.copilot_home)
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code().unwrap_or(-1), text)
    }

    fn ok(&self, args: &[&str]) -> String {
        let (code, text) = self.walj(args);
        assert_eq!(code, 0, "walj {args:?}: {text}");
        text
    }

    fn doctor(&self) -> Value {
        let (_, text) = self.walj(&["doctor", "--json", "--command", "walj hook"]);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn agent_findings(doctor: &Value, agent_label: &str) -> Vec<(String, String)> {
    doctor["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["check"] == "agent" && f["message"].as_str().unwrap().starts_with(agent_label))
        .map(|f| (f["level"].as_str().unwrap().to_string(), f["message"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn codex_install_records_trust_and_uninstall_takes_exactly_it_back() {
    let e = env();
    std::fs::create_dir_all(&e.codex_home).unwrap();
    let mine = "# my settings\nmodel = \"gpt-5.5\"\n";
    std::fs::write(e.codex_home.join("config.toml"), mine).unwrap();
    let out = e.ok(&["install", "--agent", "codex", "--command", "walj hook"]);
    assert!(out.contains("Trusted walj's hooks"), "{out}");
    assert!(out.contains("not trusted"), "the untrusted project is reported: {out}");
    let hooks_file = e.repo.path(".codex/hooks.json");
    let hooks = read_json(&hooks_file);
    let events: Vec<&String> = hooks["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        events,
        ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "Stop", "SessionEnd"]
    );
    assert_eq!(hooks["hooks"]["PreToolUse"][0]["matcher"], "Bash|apply_patch");
    assert_eq!(hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "walj hook --agent codex");
    // The trust: one entry per hook, with the hash Codex computes.
    let text = std::fs::read_to_string(e.codex_home.join("config.toml")).unwrap();
    assert!(text.starts_with(mine), "the user's config is kept");
    let config: toml::Table = text.parse().unwrap();
    let abs = std::fs::canonicalize(&hooks_file).unwrap();
    let ours = |h: &Value| h["command"] == "walj hook --agent codex";
    let entries = codex_trust::entries(&abs, &hooks, &ours);
    assert_eq!(entries.len(), 7);
    for t in &entries {
        assert_eq!(codex_trust::trusted_hash(&config, &t.key), Some(t.hash.as_str()), "{}", t.key);
    }
    // doctor: hooks ok, trusted ok, project not trusted: warn.
    let d = e.doctor();
    let f = agent_findings(&d, "Codex CLI");
    assert!(f.iter().any(|(l, m)| l == "ok" && m.contains("7 events")), "{f:?}");
    assert!(f.iter().any(|(l, m)| l == "ok" && m.contains("trusted")), "{f:?}");
    assert!(f.iter().any(|(l, m)| l == "warn" && m.contains("trusted projects")), "{f:?}");
    assert_eq!(d["agents"][0]["trusted"], true);
    // A changed hook (here: its timeout) is no longer trusted: doctor says so.
    let mut changed = hooks.clone();
    changed["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 11.into();
    std::fs::write(&hooks_file, serde_json::to_vec_pretty(&changed).unwrap()).unwrap();
    let f = agent_findings(&e.doctor(), "Codex CLI");
    assert!(
        f.iter().any(|(l, m)| l == "error" && m.contains("skips untrusted hooks silently") && m.contains("stop")),
        "{f:?}"
    );
    std::fs::write(&hooks_file, serde_json::to_vec_pretty(&hooks).unwrap()).unwrap();
    // Idempotent.
    let again = e.ok(&["install", "--agent", "codex", "--command", "walj hook"]);
    assert!(again.contains("already installed"), "{again}");
    assert_eq!(std::fs::read_to_string(e.codex_home.join("config.toml")).unwrap(), text);
    // Uninstall: the hooks and exactly the trust entries.
    let out = e.ok(&["uninstall", "--agent", "codex", "--command", "walj hook"]);
    assert!(out.contains("Removed walj's hooks"), "{out}");
    assert_eq!(std::fs::read_to_string(e.codex_home.join("config.toml")).unwrap(), mine);
    assert!(read_json(&hooks_file).get("hooks").is_none());
    assert!(agent_findings(&e.doctor(), "Codex CLI").is_empty());
}

#[test]
fn codex_user_scope_and_a_trusted_project() {
    let e = env();
    std::fs::create_dir_all(&e.codex_home).unwrap();
    std::fs::write(
        e.codex_home.join("config.toml"),
        format!("[projects.\"{}\"]\ntrust_level = \"trusted\"\n", e.repo.root.display()),
    )
    .unwrap();
    e.ok(&["install", "--agent", "codex", "--command", "walj hook"]);
    let f = agent_findings(&e.doctor(), "Codex CLI");
    assert!(f.iter().all(|(l, _)| l == "ok"), "{f:?}");
    e.ok(&["install", "--agent", "codex", "--user", "--command", "walj hook"]);
    assert!(e.codex_home.join("hooks.json").is_file());
    let d = e.doctor();
    let scopes: Vec<&str> = d["agents"].as_array().unwrap().iter().map(|a| a["scope"].as_str().unwrap()).collect();
    assert_eq!(scopes, ["project", "user"]);
}

#[test]
fn gemini_install_keeps_settings_and_doctor_warns_on_folder_trust() {
    let e = env();
    let settings = e.repo.path(".gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, r#"{"model": {"name": "gemini-2.5-pro"}}"#).unwrap();
    e.ok(&["install", "--agent", "gemini", "--command", "walj hook"]);
    let v = read_json(&settings);
    assert_eq!(v["model"]["name"], "gemini-2.5-pro");
    assert_eq!(v["hooks"]["BeforeTool"][0]["matcher"], "write_file|replace|run_shell_command");
    assert_eq!(v["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"], 10000);
    assert!(v["hooks"].get("PreCompress").is_none());
    let f = agent_findings(&e.doctor(), "Gemini CLI");
    assert_eq!(f.len(), 1, "folder trust off (the default): nothing to warn about: {f:?}");
    // Folder trust on, the project not trusted: warned; trusted: fine.
    std::fs::create_dir_all(e.home.join(".gemini")).unwrap();
    std::fs::write(e.home.join(".gemini/settings.json"), r#"{"security": {"folderTrust": {"enabled": true}}}"#)
        .unwrap();
    let f = agent_findings(&e.doctor(), "Gemini CLI");
    assert!(f.iter().any(|(l, m)| l == "warn" && m.contains("folder trust")), "{f:?}");
    std::fs::write(
        e.home.join(".gemini/trustedFolders.json"),
        serde_json::json!({e.repo.root.display().to_string(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    assert_eq!(agent_findings(&e.doctor(), "Gemini CLI").len(), 1);
    e.ok(&["uninstall", "--agent", "gemini", "--command", "walj hook"]);
    assert_eq!(read_json(&settings), serde_json::json!({"model": {"name": "gemini-2.5-pro"}}));
}

#[test]
fn copilot_install_writes_its_own_file_and_doctor_checks_folder_trust() {
    let e = env();
    e.ok(&["install", "--agent", "copilot", "--command", "walj hook"]);
    let file = e.repo.path(".github/hooks/walj.json");
    let v = read_json(&file);
    assert_eq!(v["version"], 1);
    assert_eq!(v["hooks"]["PostToolUseFailure"][0]["bash"], "walj hook --agent copilot");
    let f = agent_findings(&e.doctor(), "Copilot CLI");
    assert!(f.iter().any(|(l, m)| l == "warn" && m.contains("trusted folders")), "{f:?}");
    std::fs::create_dir_all(&e.copilot_home).unwrap();
    std::fs::write(
        e.copilot_home.join("config.json"),
        format!("// managed\n{{\"trusted_folders\": [\"{}\"]}}\n", e.repo.root.display()),
    )
    .unwrap();
    let f = agent_findings(&e.doctor(), "Copilot CLI");
    assert!(f.iter().all(|(l, _)| l == "ok"), "{f:?}");
    e.ok(&["uninstall", "--agent", "copilot", "--command", "walj hook"]);
    assert!(!file.exists());
    // --user: $COPILOT_HOME/hooks/walj.json.
    e.ok(&["install", "--agent", "copilot", "--user", "--command", "walj hook"]);
    assert!(e.copilot_home.join("hooks/walj.json").is_file());
    let (code, text) = e.walj(&["install", "--agent", "cursor"]);
    assert_ne!(code, 0);
    assert!(text.contains("unknown agent"), "{text}");
}
