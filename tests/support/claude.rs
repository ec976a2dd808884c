//! Running the real Claude Code CLI in a sandbox (temp project + temp HOME) against the
//! [`super::anthropic_mock`] server. Independent of walj's own code.

#![allow(dead_code)] // each test binary uses a different part of this module

use super::anthropic_mock::MockServer;
use serde_json::Value;
use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// Path of the pinned `claude` binary, installed on first use by `scripts/claude-code.sh`;
/// `Err` (with the script's message) when it cannot be had.
pub fn claude_bin() -> Result<PathBuf, String> {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("WALJ_CLAUDE_BIN") {
            return Ok(PathBuf::from(p));
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/claude-code.sh");
        let out = Command::new("bash")
            .arg(&script)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || stdout.is_empty() {
            return Err(format!(
                "{} failed ({}): {}",
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(PathBuf::from(stdout.lines().last().unwrap_or_default()))
    })
    .clone()
}

/// The `claude` binary, or `None` after printing `SKIPPED: <test>: <why>` (to the real stderr,
/// so the line shows even though the test harness captures output). With
/// `WALJ_E2E_REQUIRE=1` (CI) a missing CLI fails the test instead.
/// Use as `let Some(bin) = claude_or_skip("my_test") else { return };`.
pub fn claude_or_skip(test: &str) -> Option<PathBuf> {
    match claude_bin() {
        Ok(p) => Some(p),
        Err(e) => {
            let msg = format!("SKIPPED: {test}: the real Claude Code CLI is not available: {e}");
            if std::env::var_os("WALJ_E2E_REQUIRE").is_some_and(|v| v == "1") {
                panic!("{msg} (and WALJ_E2E_REQUIRE=1)");
            }
            println!("{msg}");
            let _ = writeln!(std::io::stderr(), "{msg}");
            None
        }
    }
}

/// A `claude` binary of exactly `version` (`"2.1.328"`, an older release walj still supports):
/// `scripts/claude-code.sh` with `WALJ_CLAUDE_VERSION=<version>` (its own cache folder). `None`
/// after a `SKIPPED:` line (a failure under `WALJ_E2E_REQUIRE=1`).
pub fn claude_exactly(test: &str, version: &str) -> Option<PathBuf> {
    claude_or_skip(test)?;
    install_version(test, version)
}

/// `scripts/claude-code.sh` with `WALJ_CLAUDE_VERSION=<version>`: the binary's path, or `None`
/// after a `SKIPPED:` line (a failure under `WALJ_E2E_REQUIRE=1`).
fn install_version(test: &str, version: &str) -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/claude-code.sh");
    let out = Command::new("bash").arg(&script).env("WALJ_CLAUDE_VERSION", version).stdin(Stdio::null()).output();
    match out {
        Ok(o) if o.status.success() => {
            Some(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().lines().last().unwrap_or_default()))
        }
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                Err(e) => e.to_string(),
            };
            let msg = format!("SKIPPED: {test}: Claude Code {version} is not available: {why}");
            if std::env::var_os("WALJ_E2E_REQUIRE").is_some_and(|v| v == "1") {
                panic!("{msg} (and WALJ_E2E_REQUIRE=1)");
            }
            println!("{msg}");
            let _ = writeln!(std::io::stderr(), "{msg}");
            None
        }
    }
}

/// A `claude` binary of `version` or later (`"2.1.332"`): the one [`claude_or_skip`] gives
/// when it is new enough, else `scripts/claude-code.sh` with `WALJ_CLAUDE_VERSION=<version>`
/// (its own cache folder). `None` after a `SKIPPED:` line (a failure under `WALJ_E2E_REQUIRE=1`).
pub fn claude_at_least(test: &str, version: &str) -> Option<PathBuf> {
    fn parse(text: &str) -> Option<Vec<u32>> {
        let word = text.split_whitespace().next()?;
        word.split('.').map(|p| p.parse().ok()).collect()
    }
    let want = parse(version)?;
    let bin = claude_or_skip(test)?;
    let said = Command::new(&bin).arg("--version").stdin(Stdio::null()).output().ok();
    if said.is_some_and(|o| parse(&String::from_utf8_lossy(&o.stdout)).is_some_and(|v| v >= want)) {
        return Some(bin);
    }
    install_version(test, version)
}

/// Quotes a string for `sh`.
pub fn sh_quote(s: impl AsRef<OsStr>) -> String {
    let s = s.as_ref().to_string_lossy();
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A temp folder holding `project/` (a git repository), `home/` (the session's HOME) and
/// `tmp/` (its TMPDIR).
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub project: PathBuf,
    pub home: PathBuf,
    /// The session's TMPDIR (Claude Code keeps e.g. a Bash cwd file there).
    pub tmp: PathBuf,
}

impl Sandbox {
    /// An empty git repository `project/` (no commit yet) and an empty `home/`.
    /// With `WALJ_E2E_KEEP=1` in the environment the folder is kept (and its path printed).
    pub fn new() -> Sandbox {
        let mut dir = tempfile::Builder::new().prefix("walj-e2e-").tempdir().expect("tempdir");
        if std::env::var_os("WALJ_E2E_KEEP").is_some_and(|v| v == "1") {
            dir.disable_cleanup(true);
            println!("WALJ_E2E_KEEP: keeping {}", dir.path().display());
        }
        // Canonical paths: Claude Code reports real paths in payloads and transcripts.
        let root = dir.path().canonicalize().expect("canonicalize tempdir");
        let project = root.join("project");
        let home = root.join("home");
        let tmp = root.join("tmp");
        for d in [&project, &home, &tmp] {
            fs::create_dir_all(d).unwrap();
        }
        git(&project, &["init", "-q", "-b", "main"]);
        Sandbox { dir, project, home, tmp }
    }

    /// Writes `rel` (relative to the project), creating folders.
    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.project.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, content).unwrap();
        p
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.project.join(rel)).ok()
    }

    /// `git add -A && git commit` in the project.
    pub fn commit(&self, msg: &str) {
        git(&self.project, &["add", "-A"]);
        git(
            &self.project,
            &[
                "-c",
                "user.name=walj-e2e",
                "-c",
                "user.email=e2e@walj.invalid",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                msg,
            ],
        );
    }

    /// Writes `.claude/settings.json` in the project.
    pub fn settings(&self, settings: &Value) {
        self.write(".claude/settings.json", &serde_json::to_string_pretty(settings).unwrap());
    }

    /// A `claude` command: cwd = project, a clean environment (PATH, the sandbox HOME, the
    /// mock's URL and the variables that keep Claude Code offline), own process group.
    pub fn claude(&self, bin: &Path, mock: &MockServer) -> Command {
        let mut cmd = Command::new(bin);
        cmd.current_dir(&self.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("USER", "walj-e2e")
            .env("LANG", "C.UTF-8")
            .env("TMPDIR", &self.tmp)
            .env("ANTHROPIC_BASE_URL", mock.base_url())
            .env("ANTHROPIC_API_KEY", "test")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        cmd
    }

    /// `claude -p <prompt> --output-format json --permission-mode acceptEdits
    /// --allowedTools "Edit Write Bash"`, see [`Sandbox::claude`].
    pub fn claude_p(&self, bin: &Path, mock: &MockServer, prompt: &str) -> Command {
        let mut cmd = self.claude(bin, mock);
        cmd.args(["-p", prompt, "--output-format", "json"])
            .args(["--permission-mode", "acceptEdits"])
            .args(["--allowedTools", "Edit Write Bash"]);
        cmd
    }

    /// Claude Code's transcripts folder for this project.
    pub fn transcripts_dir(&self) -> PathBuf {
        let key: String =
            self.project.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        self.home.join(".claude/projects").join(key)
    }

    /// The transcript of `session_id`.
    pub fn transcript(&self, session_id: &str) -> PathBuf {
        self.transcripts_dir().join(format!("{session_id}.jsonl"))
    }
}

pub fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(Stdio::null())
        .status()
        .expect("run git");
    assert!(st.success(), "git {args:?} failed");
}

/// A finished process.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    pub timed_out: bool,
}

impl Output {
    /// stdout parsed as JSON (`--output-format json`), `Null` if it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or(Value::Null)
    }
}

/// A spawned process whose stdout/stderr are drained by threads.
pub struct Running {
    pub child: Child,
    started: Instant,
    out: Option<thread::JoinHandle<String>>,
    err: Option<thread::JoinHandle<String>>,
}

pub fn spawn(mut cmd: Command) -> Running {
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn claude");
    let drain = |r: Option<Box<dyn Read + Send>>| {
        r.map(|mut r| {
            thread::spawn(move || {
                let mut s = Vec::new();
                let _ = r.read_to_end(&mut s);
                String::from_utf8_lossy(&s).into_owned()
            })
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    Running { child, started, out, err }
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9` of the process (only it, not its children).
    pub fn kill9(&mut self) {
        let _ = self.child.kill(); // SIGKILL on unix
    }

    /// Waits up to `timeout`; on timeout kills the process (SIGKILL) and says so.
    pub fn wait(mut self, timeout: Duration) -> Output {
        let deadline = Instant::now() + timeout;
        let mut timed_out = false;
        let status = loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                break st;
            }
            if Instant::now() >= deadline {
                timed_out = true;
                let _ = self.child.kill();
                break self.child.wait().expect("wait");
            }
            thread::sleep(Duration::from_millis(20));
        };
        let elapsed = self.started.elapsed();
        // Pipes stay open while children of claude (e.g. an orphaned Bash command) live;
        // do not wait for those forever.
        let join = |h: Option<thread::JoinHandle<String>>| {
            let Some(h) = h else { return String::new() };
            let until = Instant::now() + Duration::from_secs(2);
            while !h.is_finished() && Instant::now() < until {
                thread::sleep(Duration::from_millis(10));
            }
            if h.is_finished() {
                h.join().unwrap_or_default()
            } else {
                String::from("<output still open: a child process holds the pipe>")
            }
        };
        Output { status, stdout: join(self.out.take()), stderr: join(self.err.take()), elapsed, timed_out }
    }
}

/// Runs a command to completion (killing it after `timeout`).
pub fn run(cmd: Command, timeout: Duration) -> Output {
    spawn(cmd).wait(timeout)
}

/// A hook command that saves its stdin as `<dir>/<nanoseconds>-<pid>.json` (written to a
/// temp name, then renamed, so a reader never sees half a payload).
pub fn saver_command(dir: &Path) -> String {
    format!("f={}/$(date +%s%N)-$$.json; cat > \"$f.part\" && mv \"$f.part\" \"$f\"", sh_quote(dir))
}

/// `.claude/settings.json` content running `command` for every hook event (all tools).
pub fn hooks_for_all_events(command: &str) -> Value {
    let events = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SubagentStop",
        "PreCompact",
        "SessionEnd",
        "Notification",
    ];
    let mut hooks = serde_json::Map::new();
    for e in events {
        hooks.insert(
            e.to_string(),
            serde_json::json!([{"matcher": "", "hooks": [{"type": "command", "command": command}]}]),
        );
    }
    serde_json::json!({ "hooks": hooks })
}

/// The payloads saved by [`saver_command`] in `dir`, in the order the hooks ran.
pub fn payloads(dir: &Path) -> Vec<Value> {
    payload_files(dir)
        .iter()
        .map(|p| {
            let s = fs::read_to_string(p).unwrap_or_default();
            serde_json::from_str(&s).unwrap_or(Value::String(s))
        })
        .collect()
}

/// The payload files in `dir` (finished ones only), sorted by the time their hook started.
pub fn payload_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    // Names are `<nanos>-<pid>.json`: numeric order of the first part.
    files.sort_by_key(|p| {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let nanos: u128 = name.split('-').next().and_then(|n| n.parse().ok()).unwrap_or(0);
        (nanos, name)
    });
    files
}

/// Waits until a payload in `dir` satisfies `pred`.
pub fn wait_for_payload(dir: &Path, timeout: Duration, mut pred: impl FnMut(&Value) -> bool) -> Option<Value> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = payloads(dir).into_iter().find(&mut pred) {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// `(hook_event_name, tool_name)` of each payload, e.g. `("PreToolUse", "Bash")`.
pub fn events(payloads: &[Value]) -> Vec<(String, String)> {
    payloads
        .iter()
        .map(|p| {
            (
                p["hook_event_name"].as_str().unwrap_or("?").to_string(),
                p["tool_name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Pids of live processes whose command line contains `token` (use a unique token, such as
/// a sandbox path, so that only processes the test started match).
pub fn pids_mentioning(token: &str) -> Vec<u32> {
    let me = std::process::id();
    let mut pids = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmdline) = fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // Zombies have an empty cmdline and are skipped.
        if cmdline.contains(token) {
            pids.push(pid);
        }
    }
    pids
}

/// The command line of a process (arguments joined by spaces; empty if it is gone).
pub fn cmdline(pid: u32) -> String {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw).replace('\0', " ").trim_end().to_string()
}

/// `kill -9` of the given pids (processes the test started).
pub fn kill9_pids(pids: &[u32]) {
    for pid in pids {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).stderr(Stdio::null()).status();
    }
}

/// Waits, up to `timeout`, until the Bash call `tool_id` of the claude process `pid` runs
/// (`ready` exists in `sb`'s project and a descendant's command line holds `token`) and its
/// tool_use reached the transcript of the session `session` finds (written asynchronously;
/// `--resume` needs it). The session id when both happened in time.
pub fn bash_running(
    sb: &Sandbox,
    pid: u32,
    (tool_id, token, ready): (&str, &str, &str),
    timeout: Duration,
    mut session: impl FnMut() -> Option<String>,
) -> Option<String> {
    let deadline = Instant::now() + timeout;
    let mut sid = None;
    loop {
        if sid.is_none() {
            sid = session();
        }
        let started = sb.project.join(ready).exists() && descendants(pid).iter().any(|&d| cmdline(d).contains(token));
        let in_transcript = sid.as_ref().is_some_and(|s| {
            fs::read_to_string(sb.transcript(s)).is_ok_and(|t| t.contains(&format!("\"id\":\"{tool_id}\"")))
        });
        if started && in_transcript {
            return sid;
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pids of all live descendants of `pid` (by walking `/proc/*/stat` parent links).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may contain spaces, so split after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|x| x.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parent_of.push((p, ppid));
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &(p, pp) in &parent_of {
            if pp == parent && !out.contains(&p) {
                out.push(p);
                frontier.push(p);
            }
        }
    }
    out
}

/// `kill -9` of the given pids and all their descendants (children first collected, so that
/// none is reparented away before it is found).
pub fn kill9_tree(pids: &[u32]) {
    let mut all = Vec::new();
    for &p in pids {
        all.push(p);
        all.extend(descendants(p));
    }
    kill9_pids(&all);
}

/// A token unique to this call (pid, time, counter), e.g. to mark a command line.
pub fn unique_token(prefix: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{prefix}-{}-{nanos}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst))
}

/// What [`kill9_at_payload`] did.
#[derive(Debug)]
pub struct Crash {
    /// The payload that triggered the kill.
    pub payload: Value,
    pub session_id: String,
    /// Whether the payload's `tool_use_id` had reached the transcript before the kill.
    pub in_transcript: bool,
    /// For a Bash payload: whether the command's shell had started before the kill.
    pub bash_started: bool,
    /// The killed process.
    pub output: Output,
    /// Descendants of the claude process just before the kill (e.g. a Bash command, now an
    /// orphan): `(pid, command line)`. Clean up with [`kill9_tree`] when done.
    pub descendants: Vec<(u32, String)>,
}

/// The kill-9 approach: waits (up to `timeout`) for a hook payload in `payload_dir` that
/// satisfies `pred` (e.g. PreToolUse Bash), then for its `tool_use_id` to appear in the
/// transcript (Claude Code writes it asynchronously; up to 10 s), for a Bash payload also for
/// the command's shell to start (it starts after the hook returned; up to 10 s), then
/// `kill -9`s the claude process (only it: a Bash child survives as an orphan). When no
/// payload comes the process is killed all the same and `Err` describes it.
pub fn kill9_at_payload(
    mut running: Running,
    sb: &Sandbox,
    payload_dir: &Path,
    timeout: Duration,
    pred: impl FnMut(&Value) -> bool,
) -> Result<Crash, String> {
    let Some(payload) = wait_for_payload(payload_dir, timeout, pred) else {
        running.kill9();
        let out = running.wait(Duration::from_secs(10));
        return Err(format!("no matching hook payload within {timeout:?}; claude: {out:?}"));
    };
    let session_id = payload["session_id"].as_str().unwrap_or_default().to_string();
    let transcript = sb.transcript(&session_id);
    let mut in_transcript = true;
    if let Some(id) = payload["tool_use_id"].as_str() {
        let deadline = Instant::now() + Duration::from_secs(10);
        in_transcript = loop {
            if fs::read_to_string(&transcript).is_ok_and(|t| t.contains(id)) {
                break true;
            }
            if Instant::now() >= deadline {
                break false;
            }
            thread::sleep(Duration::from_millis(10));
        };
    }
    let mut bash_started = false;
    if let (Some("Bash"), Some(command)) = (payload["tool_name"].as_str(), payload["tool_input"]["command"].as_str()) {
        // Claude Code runs `bash -c '… eval <quoted command> …'`: look for the longest piece
        // of the command that quoting cannot change.
        let piece = command.split(['\'', '"', '\\']).max_by_key(|p| p.len()).unwrap_or(command);
        let deadline = Instant::now() + Duration::from_secs(10);
        bash_started = loop {
            if descendants(running.pid()).into_iter().any(|p| cmdline(p).contains(piece)) {
                break true;
            }
            if Instant::now() >= deadline {
                break false;
            }
            thread::sleep(Duration::from_millis(5));
        };
    }
    let descendants = descendants(running.pid()).into_iter().map(|p| (p, cmdline(p))).collect();
    running.kill9();
    let output = running.wait(Duration::from_secs(10));
    Ok(Crash { payload, session_id, in_transcript, bash_started, output, descendants })
}
