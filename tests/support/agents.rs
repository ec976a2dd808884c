//! Running the real Codex CLI, Gemini CLI and Copilot CLI in a sandbox (temp project + temp
//! HOME, from [`super::claude::Sandbox`]) against [`super::agent_mock`], with walj installed
//! the way a user does it (`walj install --agent NAME`). Independent of walj's own code.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::collections::HashMap;
use std::io::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use super::agent_mock::{AgentMock, Call, Protocol, Turn};
use super::claude::{Output, Sandbox};

/// One of the three CLIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cli {
    Codex,
    Gemini,
    Copilot,
}

impl Cli {
    pub fn name(self) -> &'static str {
        match self {
            Cli::Codex => "codex",
            Cli::Gemini => "gemini",
            Cli::Copilot => "copilot",
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Cli::Codex => "Codex CLI",
            Cli::Gemini => "Gemini CLI",
            Cli::Copilot => "Copilot CLI",
        }
    }
    pub fn protocol(self) -> Protocol {
        match self {
            Cli::Codex => Protocol::Responses,
            Cli::Gemini => Protocol::Gemini,
            Cli::Copilot => Protocol::ChatCompletions,
        }
    }
    /// `WALJ_CODEX_BIN`, `WALJ_GEMINI_BIN`, `WALJ_COPILOT_BIN`: use that binary.
    fn env_var(self) -> String {
        format!("WALJ_{}_BIN", self.name().to_ascii_uppercase())
    }
}

/// The CLI, installed on first use by `scripts/agent-cli.sh` (pinned versions, into
/// `~/.cache/walj-e2e/`); `Err` with the script's message when npm cannot supply it.
pub fn cli_bin(cli: Cli) -> Result<PathBuf, String> {
    static CACHE: OnceLock<Mutex<HashMap<Cli, Result<PathBuf, String>>>> = OnceLock::new();
    if let Some(p) = std::env::var_os(cli.env_var()).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let mut cache = CACHE.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
    cache
        .entry(cli)
        .or_insert_with(|| {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/agent-cli.sh");
            let out = Command::new("bash")
                .arg(&script)
                .arg(cli.name())
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("running {}: {e}", script.display()))?;
            if !out.status.success() {
                return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
            }
            let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if p.is_file() { Ok(p) } else { Err(format!("{} printed no binary", script.display())) }
        })
        .clone()
}

/// The CLI, or `None` after printing `SKIPPED: <test>: …`. Under `WALJ_E2E_REQUIRE=1` (CI) a
/// missing CLI fails the test instead.
pub fn cli_or_skip(cli: Cli, test: &str) -> Option<PathBuf> {
    match cli_bin(cli) {
        Ok(p) => Some(p),
        Err(e) => {
            let msg = format!("SKIPPED: {test}: the real {} is not available: {e}", cli.label());
            if std::env::var_os("WALJ_E2E_REQUIRE").is_some_and(|v| v == "1") {
                panic!("{msg} (and WALJ_E2E_REQUIRE=1)");
            }
            println!("{msg}");
            let _ = writeln!(std::io::stderr(), "{msg}");
            None
        }
    }
}

/// A sandbox for one agent: the project (`a.txt` = "hello\n", `b.txt` = "old\n", committed), a
/// temp HOME with the agent's config pointing at the stand-in, and the walj binary under test
/// first on PATH.
pub struct AgentBox {
    pub sb: Sandbox,
    pub cli: Cli,
    pub bin: PathBuf,
    /// The folder holding a `walj` link to the binary under test.
    pub walj_dir: PathBuf,
}

impl AgentBox {
    pub fn new(cli: Cli, bin: PathBuf, walj: &Path) -> AgentBox {
        let sb = Sandbox::new();
        sb.write("a.txt", "hello\n");
        sb.write("b.txt", "old\n");
        sb.commit("initial");
        let walj_dir = sb.dir.path().canonicalize().unwrap().join("bin");
        std::fs::create_dir_all(&walj_dir).unwrap();
        std::os::unix::fs::symlink(walj, walj_dir.join("walj")).unwrap();
        AgentBox { sb, cli, bin, walj_dir }
    }

    pub fn root(&self) -> &Path {
        &self.sb.project
    }

    pub fn codex_home(&self) -> PathBuf {
        self.sb.home.join(".codex")
    }

    fn path_env(&self) -> std::ffi::OsString {
        let mut p = self.walj_dir.clone().into_os_string();
        p.push(":");
        p.push(std::env::var_os("PATH").unwrap_or_default());
        p
    }

    /// Points the agent's config at `mock` (Codex: its model provider, and the project
    /// trusted; Gemini: API key auth).
    pub fn configure(&self, mock: &AgentMock) {
        match self.cli {
            Cli::Codex => {
                let home = self.codex_home();
                std::fs::create_dir_all(&home).unwrap();
                let cfg = format!(
                    "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
                    mock.base_url(),
                    self.root().display()
                );
                // Keep what `walj install` added (the hooks' trust) when pointing at a new mock.
                let old = std::fs::read_to_string(home.join("config.toml")).unwrap_or_default();
                let kept = old.find("\n# walj: trust").map(|i| &old[i..]).unwrap_or("");
                std::fs::write(home.join("config.toml"), format!("{cfg}{kept}")).unwrap();
            }
            Cli::Gemini => {
                let dir = self.sb.home.join(".gemini");
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(
                    dir.join("settings.json"),
                    r#"{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true}}"#,
                )
                .unwrap();
            }
            Cli::Copilot => {}
        }
    }

    /// `walj ARGS` in the project with the sandbox's HOME (and agent homes); (code, output).
    pub fn walj(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(self.walj_dir.join("walj"))
            .args(args)
            .current_dir(self.root())
            .env("HOME", &self.sb.home)
            .env("CODEX_HOME", self.codex_home())
            .env("COPILOT_HOME", self.sb.home.join(".copilot"))
            .env("PATH", self.path_env())
            .env("NO_COLOR", "1")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    pub fn walj_ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.walj(args);
        assert_eq!(code, 0, "walj {args:?}: {out}{err}");
        out
    }

    pub fn walj_json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.walj_ok(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("walj {args:?}: {e}: {out}"))
    }

    /// Copilot's file tools take absolute paths: `NEW` and `A` in a script become this
    /// project's new.txt and a.txt.
    pub fn copilot_paths(&self, turns: Vec<Turn>) -> Vec<Turn> {
        let fill = |v: &serde_json::Value| {
            let s = v.to_string().replace("\"NEW\"", &serde_json::json!(self.root().join("new.txt")).to_string());
            let s = s.replace("\"A\"", &serde_json::json!(self.root().join("a.txt")).to_string());
            serde_json::from_str::<serde_json::Value>(&s).unwrap()
        };
        turns
            .into_iter()
            .map(|t| match t {
                Turn::Tools(calls) => {
                    Turn::Tools(calls.into_iter().map(|c| Call { name: c.name, args: fill(&c.args) }).collect())
                }
                other => other,
            })
            .collect()
    }

    /// `out`, after checking that the agent's run succeeded in time (else a failure that shows
    /// its output and what the mock was asked).
    pub fn assert_ran(&self, out: Output, mock: &AgentMock) -> Output {
        assert!(
            out.status.success() && !out.timed_out,
            "{} failed: {:?}\nstdout: {}\nstderr: {}\nrequests:\n{}",
            self.cli.label(),
            out.status,
            out.stdout,
            out.stderr,
            mock.summary()
        );
        out
    }

    /// The agent's non-interactive command for `prompt`, against `mock`: a cleared environment
    /// (PATH with walj first, the sandbox HOME and TMPDIR, what keeps the CLI offline), its own
    /// process group.
    pub fn command(&self, mock: &AgentMock, prompt: &str) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.current_dir(self.root())
            .env_clear()
            .env("PATH", self.path_env())
            .env("HOME", &self.sb.home)
            .env("USER", "walj-e2e")
            .env("LANG", "C.UTF-8")
            .env("TMPDIR", &self.sb.tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        match self.cli {
            Cli::Codex => {
                cmd.env("CODEX_HOME", self.codex_home()).env("OPENAI_API_KEY", "test").args([
                    "exec",
                    "--json",
                    "--dangerously-bypass-approvals-and-sandbox",
                    prompt,
                ]);
            }
            Cli::Gemini => {
                cmd.env("GEMINI_API_KEY", "test")
                    .env("GOOGLE_GEMINI_BASE_URL", mock.base_url())
                    .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
                    .env("GEMINI_CLI_NO_RELAUNCH", "true")
                    .args(["-p", prompt, "--yolo", "-o", "json", "-m", "gemini-2.5-pro"]);
            }
            Cli::Copilot => {
                cmd.env("COPILOT_HOME", self.sb.home.join(".copilot"))
                    .env("COPILOT_OFFLINE", "true")
                    .env("COPILOT_PROVIDER_BASE_URL", format!("{}/v1", mock.base_url()))
                    .env("COPILOT_MODEL", "claude-sonnet-4.5")
                    .env("GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS", "true")
                    .env("COPILOT_AUTO_UPDATE", "false")
                    .args(["-p", prompt, "--allow-all"]);
            }
        }
        cmd
    }

    /// The agent's non-interactive command resuming a session with `prompt`, from walj's resume
    /// hint (`codex resume ID`, `gemini --resume ID`, `copilot --resume=ID`: the interactive
    /// commands; run here as `codex exec resume ID`, `gemini --resume ID -p`,
    /// `copilot --resume=ID -p`).
    pub fn resume_command(&self, mock: &AgentMock, hint: &str, prompt: &str) -> Command {
        let words: Vec<&str> = hint.split_whitespace().collect();
        assert_eq!(words.first().copied(), Some(self.cli.name()), "the hint runs {}: {hint}", self.cli.label());
        let mut cmd = self.command(mock, prompt);
        // The same environment, the hint's arguments.
        let mut c = Command::new(&self.bin);
        c.current_dir(self.root()).env_clear().stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        c.process_group(0);
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        let hint_args = &words[1..];
        match self.cli {
            Cli::Codex => {
                assert_eq!(hint_args.first().copied(), Some("resume"), "{hint}");
                c.args(["exec", "--json", "--dangerously-bypass-approvals-and-sandbox"]).args(hint_args).arg(prompt);
            }
            Cli::Gemini => {
                c.args(hint_args).args(["-p", prompt, "--yolo", "-o", "json", "-m", "gemini-2.5-pro"]);
            }
            Cli::Copilot => {
                c.args(hint_args).args(["-p", prompt, "--allow-all"]);
            }
        }
        let _ = &mut cmd;
        c
    }

    pub fn journal(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.root().join(".walj/journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad journal line {l}: {e}")))
            .collect()
    }

    pub fn errors_log(&self) -> String {
        std::fs::read_to_string(self.root().join(".walj/errors.log")).unwrap_or_default()
    }

    /// `git hash-object` of a project file as it is now.
    pub fn blob(&self, rel: &str) -> String {
        let out = Command::new("git").args(["hash-object", rel]).current_dir(self.root()).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}
