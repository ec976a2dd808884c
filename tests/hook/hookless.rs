//! Sessions whose hooks never fired: at SessionStart, the project's recent Claude Code
//! transcripts of sessions walj's hooks never saw are imported (marked imported, once), and the
//! user is told once; `[import] on_start = false` and `walj uninstall` stop it.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{fixtures, walj_bin};

/// The real transcript's session (Claude Code 2.0.69, one Edit of `index.ts`).
const HOOKLESS: &str = "dac34307-159f-4fcd-9c21-35210246ad38";

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// Claude Code's folder (`CLAUDE_CONFIG_DIR`).
    config: PathBuf,
    home: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("proj");
    fs::create_dir_all(&root).unwrap();
    crate::common::git(&root, &["init", "-q"]);
    fs::write(root.join("index.ts"), "console.log('hello world');\n").unwrap();
    let config = dir.path().canonicalize().unwrap().join("claude-config");
    let home = dir.path().canonicalize().unwrap().join("home");
    fs::create_dir_all(&home).unwrap();
    Setup { _dir: dir, root, config, home }
}

impl Setup {
    /// `walj hook` on a SessionStart of `session`, with Claude Code's folder set; its stdout.
    fn session_start(&self, session: &str) -> String {
        let payload = json!({
            "hook_event_name": "SessionStart", "session_id": session, "cwd": self.root, "source": "startup",
            "transcript_path": self.transcript_dir().join(format!("{session}.jsonl")),
        });
        let mut child = Command::new(walj_bin())
            .arg("--project")
            .arg(&self.root)
            .arg("hook")
            .current_dir(&self.root)
            .env("CLAUDE_CONFIG_DIR", &self.config)
            .env("HOME", &self.home)
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "walj hook must exit 0: {}", String::from_utf8_lossy(&out.stderr));
        let errors = self.root.join(".walj/errors.log");
        assert!(!errors.exists(), "hook errors: {}", fs::read_to_string(errors).unwrap_or_default());
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn walj(&self, args: &[&str]) -> String {
        let out = crate::common::walj_at(&self.root)
            .args(args)
            .current_dir(&self.root)
            .env("CLAUDE_CONFIG_DIR", &self.config)
            .env("HOME", &self.home)
            .output()
            .unwrap();
        assert!(out.status.success(), "walj {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn transcript_dir(&self) -> PathBuf {
        let encoded: String =
            self.root.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        self.config.join("projects").join(encoded)
    }

    /// The real transcript, its folder moved to the project and its session renamed `session`,
    /// written now (as Claude Code writes a session run without walj's hooks).
    fn hookless_session(&self, session: &str) -> PathBuf {
        let text = fs::read_to_string(fixtures().join("transcripts/cc-2.0.69-edit-file-history.jsonl")).unwrap();
        let text = text.replace("/Users/svarlamov/projects/testing-git-2", &self.root.to_string_lossy());
        let text = text.replace(HOOKLESS, session);
        fs::create_dir_all(self.transcript_dir()).unwrap();
        let path = self.transcript_dir().join(format!("{session}.jsonl"));
        fs::write(&path, text).unwrap();
        path
    }

    fn records(&self) -> Vec<Value> {
        fs::read_to_string(self.root.join(".walj/journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn of_session(&self, session: &str) -> Vec<Value> {
        self.records().into_iter().filter(|r| r["session"] == session).collect()
    }
}

fn system_message(out: &str) -> String {
    if out.trim().is_empty() {
        return String::new();
    }
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    v["systemMessage"].as_str().unwrap_or_default().to_string()
}

/// A session run without walj's hooks (only its transcript) is in the journal after the next
/// session starts, marked imported, with the user told once; the next start adds nothing and
/// says nothing; the session starting itself is left to its hooks.
#[test]
fn a_session_whose_hooks_never_fired_is_imported_at_the_next_session_start_once() {
    let s = setup();
    // walj's journal begins (a first session with its hooks).
    s.session_start("first-session");
    std::thread::sleep(std::time::Duration::from_millis(20));
    s.hookless_session(HOOKLESS);
    // The starting session's own transcript (a resume) is its hooks' business.
    s.hookless_session("next-session");
    let out = s.session_start("next-session");
    let msg = system_message(&out);
    assert!(msg.contains("1 Claude Code session of this project that walj's hooks never saw was rebuilt"), "{out}");
    let imported = s.of_session(HOOKLESS);
    assert!(!imported.is_empty(), "nothing imported: {:#?}", s.records());
    assert!(imported.iter().all(|r| r["imported"] == json!(true)), "{imported:#?}");
    assert!(imported.iter().any(|r| r["path"] == "index.ts" && r["tool"] == "Edit"), "{imported:#?}");
    assert!(
        s.of_session("next-session").iter().all(|r| r.get("imported").is_none()),
        "the starting session was imported: {:#?}",
        s.of_session("next-session")
    );
    let log = s.walj(&["log", "--all"]);
    assert!(log.contains("index.ts") && log.contains(&HOOKLESS[..6]), "{log}");
    let log: Value = serde_json::from_str(&s.walj(&["log", "--all", "--json"])).unwrap();
    let text = log.to_string();
    assert!(text.contains("\"imported\":true") && text.contains("index.ts"), "{log}");
    // Once: a later start imports nothing again and says nothing of it, even when the
    // transcript was written again (read again, nothing new).
    let n = s.records().len();
    let out = s.session_start("third-session");
    assert!(!system_message(&out).contains("never saw"), "{out}");
    s.hookless_session(HOOKLESS);
    let out = s.session_start("fourth-session");
    assert!(!system_message(&out).contains("never saw"), "{out}");
    let after: Vec<Value> = s.records().into_iter().skip(n).collect();
    assert!(after.iter().all(|r| r["session"] != HOOKLESS), "imported twice: {after:#?}");
}

/// `[import] on_start = false` turns it off; a session walj's hooks journaled is never
/// imported from its transcript.
#[test]
fn the_config_switch_turns_it_off_and_hooked_sessions_are_left_alone() {
    let s = setup();
    s.session_start("first-session");
    fs::write(s.root.join(".walj/config.toml"), "[import]\non_start = false\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    s.hookless_session(HOOKLESS);
    // A hooked session's transcript: known from its hooks, never imported by itself.
    s.hookless_session("first-session");
    let out = s.session_start("next-session");
    assert!(!system_message(&out).contains("never saw"), "{out}");
    assert!(s.of_session(HOOKLESS).is_empty(), "imported with the switch off: {:#?}", s.of_session(HOOKLESS));
    fs::remove_file(s.root.join(".walj/config.toml")).unwrap();
    let out = s.session_start("third-session");
    assert!(system_message(&out).contains("1 Claude Code session"), "{out}");
    assert!(!s.of_session(HOOKLESS).is_empty());
    assert!(s.of_session("first-session").iter().all(|r| r.get("imported").is_none()), "{:#?}", s.records());
}

/// After `walj uninstall` in the project nothing is imported by itself; after `walj install`
/// again, only sessions from then on.
#[test]
fn nothing_is_imported_for_a_project_walj_was_uninstalled_in() {
    let s = setup();
    s.session_start("first-session");
    s.walj(&["install", "--local"]);
    s.walj(&["uninstall", "--local"]);
    assert!(s.root.join(".walj/import/uninstalled").exists());
    std::thread::sleep(std::time::Duration::from_millis(20));
    s.hookless_session(HOOKLESS);
    let out = s.session_start("next-session");
    assert!(!system_message(&out).contains("never saw"), "{out}");
    assert!(s.of_session(HOOKLESS).is_empty(), "imported after uninstall: {:#?}", s.of_session(HOOKLESS));
    // Installed again: the session run while walj was uninstalled stays out; a later one is in.
    s.walj(&["install", "--local"]);
    assert!(!s.root.join(".walj/import/uninstalled").exists());
    let out = s.session_start("third-session");
    assert!(!system_message(&out).contains("never saw"), "{out}");
    assert!(s.of_session(HOOKLESS).is_empty(), "{:#?}", s.of_session(HOOKLESS));
    std::thread::sleep(std::time::Duration::from_millis(20));
    s.hookless_session("later-hookless");
    let out = s.session_start("fourth-session");
    assert!(system_message(&out).contains("1 Claude Code session"), "{out}");
    assert!(!s.of_session("later-hookless").is_empty());
    assert!(s.of_session(HOOKLESS).is_empty());
}

/// Sessions from before walj's journal began are `walj import`'s, when asked.
#[test]
fn sessions_from_before_the_journal_began_are_not_imported_by_themselves() {
    let s = setup();
    s.hookless_session(HOOKLESS);
    std::thread::sleep(std::time::Duration::from_millis(20));
    s.session_start("first-session");
    let out = s.session_start("next-session");
    assert!(!system_message(&out).contains("never saw"), "{out}");
    assert!(s.of_session(HOOKLESS).is_empty(), "{:#?}", s.of_session(HOOKLESS));
}
