//! Continuing on machine B a session that crashed on machine A, with the real
//! Claude Code CLI (pinned by `scripts/claude-code.sh`) driven offline by the scripted stand-in
//! model (`tests/support`).
//!
//! Machine A and machine B are two HOMEs and two clones of one bare repository, in folders
//! with different paths. On A, `claude -p` is killed (-9) in the middle of a Bash command;
//! `walj sync` publishes A's journal and the transcript's safe copy (encrypted to an age key
//! both machines hold). On B, `walj sync` fetches them, `walj sessions resume <id>` writes the
//! transcript where B's Claude Code looks for it (A's paths rewritten to B's), and
//! `claude --resume <id> -p …` continues the conversation: the model's first request must carry
//! A's conversation and walj's brief, once; the next session must not get the brief again.
//!
//! Skipped (with a `SKIPPED:` line) when the CLI cannot be installed; `WALJ_E2E_REQUIRE=1`
//! turns that into a failure. See docs/e2e.md.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test
#![cfg(feature = "age")] // the machines share an age key

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::anthropic_mock::{self, MockServer, Turn};
use crate::support::claude::{self, Sandbox};
use serde_json::{Value, json};

const SESSION_TIMEOUT: Duration = Duration::from_secs(180);
const CONTEXT_PREFIX: &str = "SessionStart hook additional context:";
/// The first words of the brief of another machine's session (src/cmd/sessions.rs).
const BRIEF: &str = "This session ran on another machine (machine-a";
const CRASH_PROMPT: &str = "Raise the retries to 5, then run the build";
const SETTINGS_JSON: &str = "{\n  \"retries\": 3,\n  \"timeout\": 30\n}\n";

fn walj_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

/// Kills (-9) every process whose command line holds the token, and their descendants.
struct OrphanGuard(String);

impl Drop for OrphanGuard {
    fn drop(&mut self) {
        claude::kill9_tree(&claude::pids_mentioning(&self.0));
    }
}

/// One machine: a sandbox (HOME, TMPDIR, a project that is a clone of the shared bare
/// repository) with the walj under test first on PATH.
struct Machine {
    sb: Sandbox,
    path: String,
}

impl Machine {
    fn new(remote: &Path, seed: bool) -> Machine {
        let sb = Sandbox::new();
        let bin = sb.dir.path().canonicalize().unwrap().join("bin");
        fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(walj_bin(), bin.join("walj")).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let m = Machine { sb, path };
        m.git(&["remote", "add", "origin", remote.to_str().unwrap()]);
        if seed {
            m.sb.write("config/settings.json", SETTINGS_JSON);
            m.sb.write("src/main.rs", "fn main() {}\n");
            m.sb.commit("initial");
            m.git(&["push", "-q", "origin", "main"]);
        } else {
            m.git(&["fetch", "-q", "origin", "main"]);
            m.git(&["reset", "-q", "--hard", "FETCH_HEAD"]);
        }
        m.git(&["config", "branch.main.remote", "origin"]);
        m.git(&["config", "branch.main.merge", "refs/heads/main"]);
        m
    }

    fn root(&self) -> &Path {
        &self.sb.project
    }

    fn git(&self, args: &[&str]) {
        claude::git(self.root(), args);
    }

    /// `walj --project <root> ARGS` as this machine's user: its HOME, walj on PATH.
    fn walj(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(walj_bin())
            .arg("--project")
            .arg(self.root())
            .args(args)
            .current_dir(self.root())
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.sb.home)
            .env("NO_COLOR", "1")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn walj_ok(&self, args: &[&str]) -> (String, String) {
        let (ok, out, err) = self.walj(args);
        assert!(ok, "walj {args:?} failed:\nstdout:\n{out}\nstderr:\n{err}");
        (out, err)
    }

    fn install(&self, name: &str, key: &str, identity: &Path) {
        self.walj_ok(&["install"]);
        fs::write(
            self.root().join(".walj/config.toml"),
            format!("[sync]\nname = \"{name}\"\nrecipients = [\"{key}\"]\nidentity = \"{}\"\n", identity.display()),
        )
        .unwrap();
    }

    fn claude_p(&self, bin: &Path, mock: &MockServer, prompt: &str) -> Command {
        let mut cmd = self.sb.claude_p(bin, mock, prompt);
        cmd.env("PATH", &self.path);
        cmd
    }

    fn journal_text(&self) -> String {
        fs::read_to_string(self.root().join(".walj/journal.jsonl")).unwrap_or_default()
    }

    /// Waits (up to `timeout`) for a journal record matching `pred`.
    fn wait_for_record(&self, timeout: Duration, mut pred: impl FnMut(&Value) -> bool) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let found =
                self.journal_text().lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|r| pred(r));
            if found.is_some() || Instant::now() >= deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Runs `cmd` until the Bash call `tool_id` runs (its shell holds `token`, `ready` exists in
/// the project) and reached the transcript, then kills claude (-9). Returns the session id.
fn kill_mid_bash(m: &Machine, cmd: Command, mock: &MockServer, tool_id: &str, token: &str, ready: &str) -> String {
    let mut running = claude::spawn(cmd);
    let pid = running.pid();
    let sid = claude::bash_running(&m.sb, pid, (tool_id, token, ready), SESSION_TIMEOUT, || {
        m.wait_for_record(Duration::ZERO, |r| r["op"] == "intent" && r["id"] == tool_id)
            .and_then(|r| r["session"].as_str().map(str::to_string))
    });
    running.kill9();
    let out = running.wait(Duration::from_secs(10));
    assert!(
        sid.is_some(),
        "the Bash command never started: {out:?}\n{}\njournal:\n{}",
        mock.summary(),
        m.journal_text()
    );
    sid.unwrap()
}

/// The age key both machines hold: (recipient, identity file).
fn team_key(dir: &Path) -> (String, PathBuf) {
    use age::secrecy::ExposeSecret as _;
    let id = age::x25519::Identity::generate();
    let file = dir.join("team.age-key");
    fs::write(&file, format!("{}\n", id.to_string().expose_secret())).unwrap();
    (id.to_public().to_string(), file)
}

#[test]
fn a_session_crashed_on_machine_a_continues_on_machine_b() {
    let Some(bin) = claude::claude_or_skip("a_session_crashed_on_machine_a_continues_on_machine_b") else { return };
    let shared = tempfile::tempdir().unwrap();
    let shared_dir = shared.path().canonicalize().unwrap();
    claude::git(&shared_dir, &["init", "-q", "--bare", "remote.git"]);
    let remote = shared_dir.join("remote.git");
    let (key, identity) = team_key(&shared_dir);

    // Machine A: a session killed while its Bash command runs.
    let a = Machine::new(&remote, true);
    a.install("machine-a", &key, &identity);
    let token = claude::unique_token("walj-e2e-sync-orphan");
    let _orphans = OrphanGuard(token.clone());
    let abs = |rel: &str| a.root().join(rel).to_string_lossy().into_owned();
    let mock = MockServer::start(vec![
        Turn::tool(
            "Edit",
            json!({"file_path": abs("config/settings.json"), "old_string": "\"retries\": 3",
                   "new_string": "\"retries\": 5", "replace_all": false}),
        )
        .with_text("Raising the retries first."),
        Turn::tool(
            "Bash",
            json!({"command": format!("echo started > run.log; sleep 60 # {token}"), "description": "Build"}),
        ),
        Turn::text("unreachable"),
    ]);
    let sid = kill_mid_bash(&a, a.claude_p(&bin, &mock, CRASH_PROMPT), &mock, "toolu_mock_1_0", &token, "run.log");
    drop(_orphans);
    // The crash left no Stop: the safe copy of the transcript is made by the sync itself.
    assert!(!a.root().join(".walj/transcripts").join(format!("{sid}.jsonl.zst")).exists());
    let (out, _) = a.walj_ok(&["sync", "--yes"]);
    println!("walj sync on A:\n{out}");
    assert!(out.contains("encrypted") && out.contains("1 transcript"), "{out}");

    // Machine B: fetch, then resume A's session.
    let b = Machine::new(&remote, false);
    b.install("machine-b", &key, &identity);
    let (out, _) = b.walj_ok(&["sync", "--yes"]);
    assert!(out.contains("machine-a") && out.contains("new"), "{out}");
    let (out, _) = b.walj_ok(&["recover"]);
    assert!(out.contains("machine machine-a") && out.contains("crashed"), "{out}");
    let (brief, err) = b.walj_ok(&["sessions", "resume", &sid[..8]]);
    println!("walj sessions resume on B:\n{brief}{err}");
    assert!(brief.starts_with(BRIEF), "{brief}");
    assert!(brief.contains("config/settings.json"), "{brief}");
    assert!(err.contains(&format!("claude --resume {sid}")), "{err}");
    let written = b.sb.transcript(&sid);
    let text = fs::read_to_string(&written).unwrap_or_else(|e| panic!("{}: {e}\n{err}", written.display()));
    let (a_root, b_root) = (a.root().to_string_lossy().into_owned(), b.root().to_string_lossy().into_owned());
    assert!(!text.contains(&a_root), "A's project path is still in the transcript");
    assert!(text.contains(&b_root) && text.contains("toolu_mock_1_0"), "{text}");

    // `claude --resume` on B continues A's conversation, and the brief arrives once.
    mock.script(vec![Turn::text("Continuing on machine B.")]);
    let before = mock.main_requests().len();
    let mut cmd = b.claude_p(&bin, &mock, "Go on from where machine A stopped");
    cmd.args(["--resume", &sid]);
    let out = claude::run(cmd, SESSION_TIMEOUT);
    assert!(out.status.success() && !out.timed_out, "{out:?}\n{}", mock.summary());
    assert_eq!(out.json()["session_id"], sid.as_str(), "--resume changed the session id");
    assert_eq!(out.json()["result"], "Continuing on machine B.");
    let reqs: Vec<_> = mock.main_requests().into_iter().skip(before).collect();
    let first = &reqs[0];
    assert!(first.count(CRASH_PROMPT) >= 1, "A's prompt is not in the conversation: {}", mock.summary());
    assert!(first.count("Raising the retries first.") >= 1, "A's assistant text is not in the conversation");
    assert!(first.count("toolu_mock_1_0") > 0, "A's cut-off Bash call is not in the conversation");
    assert_eq!(first.count(BRIEF), 1, "the brief is not in the request once");
    // The count of A's unresolved entries is the user's (systemMessage), never the model's.
    assert_eq!(first.count("machine-a has"), 0, "the other machine's count reached the model");
    let held = anthropic_mock::strings_containing(&first.body, BRIEF);
    assert!(held[0].starts_with(CONTEXT_PREFIX), "{}", held[0]);
    assert_eq!(
        first.count(&a_root),
        0,
        "A's project path reached B's model: {:?}",
        anthropic_mock::strings_containing(&first.body, &a_root)
            .iter()
            .map(|s| {
                let i = s.find(a_root.as_str()).unwrap_or(0);
                s[i.saturating_sub(300)..(i + 200).min(s.len())].to_string()
            })
            .collect::<Vec<_>>()
    );

    // The user saw it: Claude Code keeps a hook's systemMessage in the transcript
    // (`hook_system_message`).
    let after = fs::read_to_string(b.sb.transcript(&sid)).unwrap();
    assert!(
        after.lines().any(|l| l.contains("hook_system_message") && l.contains("machine-a has 1 unresolved entry")),
        "the count was not shown to the user"
    );

    // The next session on B does not get the brief again.
    mock.script(vec![Turn::text("A new session.")]);
    let before = mock.main_requests().len();
    let out = claude::run(b.claude_p(&bin, &mock, "Anything else?"), SESSION_TIMEOUT);
    assert!(out.status.success(), "{out:?}");
    for r in mock.main_requests().into_iter().skip(before) {
        assert_eq!(r.count(BRIEF), 0, "the brief came twice");
    }
}
