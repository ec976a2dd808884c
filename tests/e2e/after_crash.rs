//! Truthful under concurrency, with the real Claude Code CLI (issue #30): what walj says after a
//! `kill -9` mid-command when the user changed files before walj first looked, with and without
//! the checkout's watcher; and a killed command that moved git's HEAD.
//!
//! The hook-level tests (`tests/hook/attribution.rs`, `tests/hook/git_state.rs`) cover the same
//! rules with hand-written payloads; these run them through the real CLI, its real Bash tool and
//! a real SIGKILL (docs/e2e.md).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{self, MockServer, Turn};
use crate::support::claude;
use crate::walj::{CONTEXT_PREFIX, NOTE, OrphanGuard, Proj, crash_mid_bash, entries_of, kill_mid_bash, wait_gone};
use serde_json::{Value, json};
use std::fs;
use std::time::{Duration, Instant};

/// Comfortably past the file system's ctime granularity and walj's clock margin (a few ms).
const PAST_GRANULARITY: Duration = Duration::from_millis(300);

const README: &str = "# shop\n";
const USERS_LINE: &str = "the user's line, after the crash\n";

/// The lines of `.walj/observed.jsonl` (the watcher's observer file), parsed.
fn observed(p: &Proj) -> Vec<Value> {
    fs::read_to_string(p.root().join(".walj/observed.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The scene of both after-crash scenarios: a session whose Bash call
/// `sed -i 's/a/A/' a.txt && rm gone.txt && echo made > made.txt && sleep 60` is cut off by
/// `kill -9` of Claude Code mid-`sleep` (its orphan then killed too, as a user's reboot would);
/// then the user appends a line to README.md and deletes notes.txt (both committed), and only
/// then does walj first look. Returns the project, the session id and the command.
fn user_edits_after_a_crash(bin: &std::path::Path, watcher: bool) -> (Proj, MockServer, String, String) {
    let p = Proj::new(&[("a.txt", "a\n"), ("gone.txt", "gone\n"), ("README.md", README), ("notes.txt", "notes\n")]);
    p.install_walj();
    if !watcher {
        // docs/architecture.md, src/config.rs: `[bash] watcher = false`.
        let cfg = p.root().join(".walj/config.toml");
        let mut text = fs::read_to_string(&cfg).unwrap_or_default();
        assert!(!text.contains("[bash]"), "walj install wrote a [bash] table already: {text}");
        text.push_str("\n[bash]\nwatcher = false\n");
        fs::write(&cfg, text).unwrap();
    }
    let token = claude::unique_token("walj-e2e-after-crash");
    let guard = OrphanGuard(token.clone());
    let command = format!("sed -i 's/a/A/' a.txt && rm gone.txt && echo made > made.txt && sleep 60 # {token}");
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": command, "description": "Tidy up"})),
        Turn::text("unreachable"),
    ]);
    let sid =
        kill_mid_bash(&p, p.claude_p(bin, &mock, "Tidy up the files"), &mock, "toolu_mock_0_0", &token, "made.txt");
    // The command's changes are on disk, Claude Code is gone; its orphan goes too.
    assert_eq!(p.sb.read("a.txt").as_deref(), Some("A\n"));
    assert!(!p.root().join("gone.txt").exists());
    drop(guard);
    wait_gone(&token, p.root());

    // The watcher (when on) saw the session and its end (written the moment the process
    // exits, with what it noted before), before anyone looked.
    let deadline = Instant::now() + Duration::from_secs(3);
    while watcher && !observed(&p).iter().any(|v| v["ev"] == "end" && v["session"] == sid.as_str()) {
        assert!(Instant::now() < deadline, "the watcher never saw Claude Code end: {:?}", observed(&p));
        std::thread::sleep(Duration::from_millis(20));
    }
    let seen = observed(&p);
    if watcher {
        let watched = seen.iter().any(|v| v["ev"] == "session" && v["session"] == sid.as_str());
        assert!(watched, "the watcher did not watch session {sid}: {seen:?}");
    } else {
        assert!(seen.is_empty(), "a watcher ran with [bash] watcher = false: {seen:?}");
    }

    // The user, after the crash and before walj first looks.
    std::thread::sleep(PAST_GRANULARITY);
    fs::write(p.root().join("README.md"), format!("{README}{USERS_LINE}")).unwrap();
    fs::remove_file(p.root().join("notes.txt")).unwrap();
    std::thread::sleep(PAST_GRANULARITY);
    assert!(p.journal().iter().all(|r| r["parent"] != "toolu_mock_0_0"), "walj looked before the user's edits");
    (p, mock, sid, command)
}

const COMMANDS: [&str; 3] = ["a.txt", "gone.txt", "made.txt"];
const USERS: [&str; 2] = ["README.md", "notes.txt"];

#[test]
fn with_the_watcher_the_users_edits_after_a_crash_are_never_the_killed_commands() {
    let test = "with_the_watcher_the_users_edits_after_a_crash_are_never_the_killed_commands";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let (p, mock, sid, _command) = user_edits_after_a_crash(&bin, true);

    let recover = p.walj_json(&["recover", "--json"]);
    println!("{}", serde_json::to_string_pretty(&recover).unwrap());
    let es = entries_of(&recover, &sid);
    // Each of the five paths once, nothing else.
    assert_eq!(es.keys().collect::<Vec<_>>(), ["README.md", "a.txt", "gone.txt", "made.txt", "notes.txt"], "{recover}");
    let listed: Vec<&str> =
        recover["sessions"][0]["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(listed.len(), 5, "a path listed twice: {listed:?}");
    for path in COMMANDS {
        let e = &es[path];
        assert_eq!(e["parent"], "toolu_mock_0_0", "{path}: {e}");
        assert!(e.get("attribution").is_none(), "the command's own change, made while Claude Code lived: {path}: {e}");
    }
    // The moment they are measured from: when the watcher saw Claude Code's process end.
    let end = observed(&p)
        .into_iter()
        .find(|v| v["ev"] == "end" && v["session"] == sid.as_str())
        .and_then(|v| v["ns"].as_i64())
        .unwrap();
    for path in USERS {
        assert_eq!(es[path]["attribution"], "after_stop", "the user's, after the crash: {path}: {}", es[path]);
        let seen = es[path]["end_seen"].as_str().unwrap_or_else(|| panic!("no end_seen: {}", es[path]));
        let seen = chrono::DateTime::parse_from_rfc3339(seen).unwrap().timestamp_millis();
        assert!((seen - end / 1_000_000).abs() <= 1, "end_seen {seen} vs the watcher's end {end}: {}", es[path]);
    }
    let uncertain = es.values().filter(|e| e["attribution"] == "uncertain").count();
    assert_eq!(uncertain, 0, "{recover}");
    assert_eq!(es["gone.txt"]["after"], "absent");
    assert_eq!(es["made.txt"]["before"], "absent");
    assert_eq!(es["notes.txt"]["after"], "absent");

    let (_, text, _) = p.walj(&["recover"]);
    println!("walj recover:\n{text}");
    assert!(text.contains("changed on disk by a command that never finished"), "{text}");
    assert!(text.contains("sed -i 's/a/A/' a.txt && rm gone.txt && echo made > made.txt"), "{text}");
    // The watcher ran: walj says when it saw Claude Code end, never "without its watcher".
    for path in USERS {
        let marks = path_marks(&text, path);
        assert!(marks.contains("made after Claude Code's last sign of life"), "{path}: {marks}\n{text}");
        assert!(marks.contains("seen by the checkout's watcher"), "{path}: {marks}\n{text}");
    }
    for path in COMMANDS {
        assert!(!path_marks(&text, path).contains("last sign of life"), "{path}:\n{text}");
    }
    assert!(!text.contains("without its watcher"), "{text}");

    // The next session is told a.txt is the command's, README.md and notes.txt not.
    mock.script(vec![Turn::text("I will check.")]);
    let before = mock.main_requests().len();
    p.session(p.claude_p(&bin, &mock, "What happened?"), &mock);
    let reqs: Vec<_> = mock.main_requests().into_iter().skip(before).collect();
    assert_eq!(reqs[0].count(NOTE), 1, "{}", mock.summary());
    let note = anthropic_mock::strings_containing(&reqs[0].body, NOTE)[0].to_string();
    println!("the note:\n{note}");
    assert!(note.starts_with(CONTEXT_PREFIX), "{note}");
    let late = note
        .find("Changed after Claude Code's last sign of life")
        .unwrap_or_else(|| panic!("the user's changes are not set apart: {note}"));
    for path in COMMANDS {
        let at = note.find(&format!("- {path} (")).unwrap_or_else(|| panic!("{path} not in the note: {note}"));
        assert!(at < late, "{path} is listed as changed after Claude Code stopped: {note}");
        assert_eq!(note.matches(&format!("- {path} (")).count(), 1, "{note}");
    }
    for path in USERS {
        let at = note.find(&format!("- {path} (")).unwrap_or_else(|| panic!("{path} not in the note: {note}"));
        assert!(at > late, "{path} is presented as the command's work: {note}");
        assert_eq!(note.matches(&format!("- {path} (")).count(), 1, "{note}");
    }

    // revert --session: the command's three undone, the user's two left alone and said.
    let (ok, out, err) = p.walj(&["revert", "--session", &sid, "--yes"]);
    println!("walj revert --session:\n{out}{err}");
    assert!(ok, "walj revert --session: {out}{err}");
    assert_eq!(p.sb.read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(p.sb.read("gone.txt").as_deref(), Some("gone\n"));
    assert!(!p.root().join("made.txt").exists());
    assert_eq!(p.sb.read("README.md").unwrap(), format!("{README}{USERS_LINE}"), "the user's line was reverted");
    assert!(!p.root().join("notes.txt").exists(), "the user's deletion was undone");
    assert!(err.contains("2 entries left out of --session: walj is not sure they are Claude's work"), "{err}");
    for path in USERS {
        let line = err.lines().find(|l| l.contains(&format!("({path}):"))).unwrap_or_else(|| panic!("{path}: {err}"));
        assert!(line.contains("changed after Claude Code's last sign of life"), "{line}");
        assert!(line.contains("seen by the checkout's watcher") && !line.contains("without its watcher"), "{line}");
        let id = es[path]["id"].as_str().unwrap();
        let short = &id[..4.min(id.len())];
        assert!(line.contains("`walj revert ") && line.ends_with(" --force`") && line.contains(short), "{line}");
    }
    let left = p.walj_json(&["recover", "--json"]);
    let left = entries_of(&left, &sid);
    assert_eq!(left.keys().collect::<Vec<_>>(), ["README.md", "notes.txt"], "{left:?}");
    p.assert_hooks_clean();
}

#[test]
fn without_the_watcher_nothing_is_lost_and_the_users_edits_are_what_walj_cannot_tell() {
    let test = "without_the_watcher_nothing_is_lost_and_the_users_edits_are_what_walj_cannot_tell";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let (p, _mock, sid, _command) = user_edits_after_a_crash(&bin, false);

    let recover = p.walj_json(&["recover", "--json"]);
    println!("{}", serde_json::to_string_pretty(&recover).unwrap());
    let es = entries_of(&recover, &sid);
    // Nothing is lost: each of the five paths is one entry of the killed command.
    assert_eq!(es.keys().collect::<Vec<_>>(), ["README.md", "a.txt", "gone.txt", "made.txt", "notes.txt"], "{recover}");
    let listed = recover["sessions"][0]["entries"].as_array().unwrap().len();
    assert_eq!(listed, 5, "{recover}");
    for (path, e) in &es {
        assert_eq!(e["parent"], "toolu_mock_0_0", "{path}: {e}");
    }
    // The user's two: made after the last sign of life walj has without its watcher (the
    // transcript, the journal), never certain.
    for path in USERS {
        assert_eq!(es[path]["attribution"], "after_stop", "{path}: {}", es[path]);
        assert!(es[path].get("end_seen").is_none(), "no watcher saw Claude Code end: {}", es[path]);
    }
    // The command's three: without its watcher, walj's last sign of life of Claude Code is its
    // transcript's last write and the session's last record (the Bash PreToolUse). Claude Code
    // 2.1.328 writes nothing more once the command runs, so what the command changed is dated
    // after both. That clock never moves a change out of a command whose own line names the
    // file (its processes write until walj sees them gone): the three stay the command's,
    // certain, while the user's two (named by no command) are the ones walj cannot tell.
    for path in COMMANDS {
        assert!(es[path].get("attribution").is_none(), "{path}: the command's line names it: {}", es[path]);
    }
    let (_, text, _) = p.walj(&["recover"]);
    println!("walj recover:\n{text}");
    // Every after-stop entry is said.
    for path in USERS {
        let marks = path_marks(&text, path);
        assert!(marks.contains("made after Claude Code's last sign of life"), "{path}: {marks}\n{text}");
    }
    for path in COMMANDS {
        assert!(!path_marks(&text, path).contains("last sign of life"), "{path}:\n{text}");
    }
    assert!(text.contains("walj cannot tell without its watcher"), "{text}");

    // revert --session: the command's three undone; the user's two left out, each said with its
    // id and `--force`.
    let (ok, out, err) = p.walj(&["revert", "--session", &sid, "--yes"]);
    println!("walj revert --session:\n{out}{err}");
    assert!(ok, "walj revert --session: {out}{err}");
    assert_eq!(p.sb.read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(p.sb.read("gone.txt").as_deref(), Some("gone\n"));
    assert!(!p.root().join("made.txt").exists());
    assert_eq!(p.sb.read("README.md").unwrap(), format!("{README}{USERS_LINE}"), "the user's line was reverted");
    assert!(!p.root().join("notes.txt").exists(), "the user's deletion was undone");
    assert!(err.contains("2 entries left out of --session: walj is not sure they are Claude's work"), "{err}");
    for path in USERS {
        let line = err.lines().find(|l| l.contains(&format!("({path}):"))).unwrap_or_else(|| panic!("{path}: {err}"));
        assert!(
            line.contains("changed after Claude Code's last sign of life")
                && line.contains("without its watcher")
                && line.ends_with(" --force`"),
            "{line}"
        );
    }
    // Each is still revertable by its id, with --force.
    let readme = es["README.md"]["id"].as_str().unwrap();
    let (ok, out, err) = p.walj(&["revert", readme, "--yes", "--force"]);
    assert!(ok, "walj revert {readme} --force: {out}{err}");
    assert_eq!(p.sb.read("README.md").unwrap(), README);
    p.assert_hooks_clean();
}

// ---------------------------------------------------------------------------------------------
// A killed command that moved HEAD.

#[test]
fn a_killed_checkout_and_commit_is_told_as_the_branch_it_moved_with_its_commit() {
    let test = "a_killed_checkout_and_commit_is_told_as_the_branch_it_moved_with_its_commit";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let p = Proj::new(&[("a.txt", "a\n")]);
    // The test's environment is cleared: the commit needs an identity in the repository.
    p.git(&["config", "user.name", "walj-e2e"]);
    p.git(&["config", "user.email", "e2e@walj.invalid"]);
    let start_branch = p.git(&["rev-parse", "--abbrev-ref", "HEAD"]);
    let start = p.git(&["rev-parse", "HEAD"]);
    // git commit writes it: the sign that the commit is being made (then the sleep).
    fs::remove_file(p.root().join(".git/COMMIT_EDITMSG")).unwrap();
    p.install_walj();
    let token = claude::unique_token("walj-e2e-git");
    let guard = OrphanGuard(token.clone());
    let command =
        format!("git checkout -q -b x && echo more >> a.txt && git commit -qam 'add more' && sleep 60 # {token}");
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": command, "description": "Branch and commit"})),
        Turn::text("unreachable"),
    ]);
    let sid = kill_mid_bash(
        &p,
        p.claude_p(&bin, &mock, "Commit on a branch"),
        &mock,
        "toolu_mock_0_0",
        &token,
        ".git/COMMIT_EDITMSG",
    );
    // The commit finishes (its orphan lives on if need be), then the sleep runs: killed.
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.git(&["log", "-1", "--format=%s"]) != "add more" {
        assert!(Instant::now() < deadline, "the command never committed");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(guard);
    wait_gone(&token, p.root());
    assert_eq!(p.git(&["rev-parse", "--abbrev-ref", "HEAD"]), "x");
    let new = p.git(&["rev-parse", "HEAD"]);
    let short = p.git(&["rev-parse", "--short", "HEAD"]);
    assert_ne!(new, start);

    let recover = p.walj_json(&["recover", "--json"]);
    println!("{}", serde_json::to_string_pretty(&recover).unwrap());
    let s = recover["sessions"].as_array().unwrap().iter().find(|s| s["session"] == sid.as_str()).unwrap();
    let m = &s["git_moves"][0];
    assert_eq!(m["id"], "toolu_mock_0_0", "{recover}");
    assert_eq!(m["from"], json!({"branch": start_branch, "id": start}), "{recover}");
    assert_eq!(m["to"], json!({"branch": "x", "id": new}), "{recover}");
    assert_eq!(m["finished"], false, "{recover}");
    assert_eq!(m["commits"][0]["summary"], "add more", "{recover}");
    assert_eq!(m["commits"].as_array().unwrap().len(), 1, "{recover}");

    let said = format!("HEAD moved from {start_branch} to x, made commit {short} \"add more\" since `");
    let (ok, text, err) = p.walj(&["recover"]);
    println!("walj recover:\n{text}");
    assert!(ok, "{err}");
    assert!(text.contains(&said), "{text}");
    assert!(text.contains("(it never finished: it, or what ran after it)"), "{text}");
    assert!(!text.contains(&format!("branch {start_branch} at")), "{text}");

    let (ok, show, err) = p.walj(&["sessions", "show", &sid]);
    println!("walj sessions show:\n{show}");
    assert!(ok, "{err}");
    assert!(show.contains(&said), "{show}");
    assert!(show.contains(&format!("started on {start_branch} (HEAD {})", &start[..12])), "{show}");
    assert!(!show.contains(&format!("branch {start_branch},")), "{show}");
    assert!(show.contains(&format!("branch x (started on {start_branch})")), "{show}");
    assert!(!show.contains(&format!("branch {start_branch} at")), "{show}");
    let shown = p.walj_json(&["sessions", "show", &sid, "--json"]);
    assert_eq!(shown["git_moves"], recover["sessions"][0]["git_moves"], "{shown}");
    assert_eq!(shown["git_moves"][0]["to"], json!({"branch": "x", "id": new}), "{shown}");

    // Claude is told too: the next session's note names the move and its commit.
    mock.script(vec![Turn::text("I will check.")]);
    let before = mock.main_requests().len();
    p.session(p.claude_p(&bin, &mock, "What happened?"), &mock);
    let first = &mock.main_requests()[before];
    assert_eq!(first.count(NOTE), 1, "{}", mock.summary());
    let note = anthropic_mock::strings_containing(&first.body, NOTE)[0].to_string();
    println!("the note:\n{}", &note[note.find(NOTE).unwrap()..]);
    assert!(note.contains(&format!("- git: {said}")), "{note}");
    p.assert_hooks_clean();
}

// ---------------------------------------------------------------------------------------------
// A dead session's command is no suspect.

/// A session killed (-9) mid-Bash; its orphan ends; walj looks once (and sees the command's
/// processes gone). Then a new session runs a Bash that makes a file: its change is its own,
/// certain, naming no dead command as a possible author, and `revert --session` of the new
/// session reverts it without `--force`.
#[test]
fn after_a_crash_a_new_sessions_bash_changes_name_no_dead_command() {
    let test = "after_a_crash_a_new_sessions_bash_changes_name_no_dead_command";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let c = crash_mid_bash(&bin);
    let token = c.token.clone();
    drop(c.orphans);
    wait_gone(&token, c.p.root());
    let p = &c.p;
    let first = p.walj_json(&["recover", "--json"]);
    assert_eq!(first["sessions"][0]["session"], c.sid.as_str(), "{first}");

    c.mock.script(vec![
        Turn::tool(
            "Bash",
            json!({"command": "mkdir -p out && echo new > out/new.txt", "description": "Make out/new.txt"}),
        ),
        Turn::text("Done."),
    ]);
    let (out, sid2) = p.session(p.claude_p(&bin, &c.mock, "Make out/new.txt"), &c.mock);
    assert_eq!(out.json()["result"], "Done.", "{}", c.mock.summary());
    assert_ne!(sid2, c.sid);
    let log = p.walj_json(&["log", "--json", "--all"]);
    let made: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["path"] == "out/new.txt" && e["session"] == sid2.as_str())
        .collect();
    assert_eq!(made.len(), 1, "{log:#}");
    let e = made[0];
    assert!(e.get("attribution").is_none(), "the new session's change is not certain: {e}");
    assert!(e.get("candidates").is_none(), "a dead command is named as a suspect: {e}");
    assert!(!e.to_string().contains("toolu_mock_2_0"), "{e}");
    let (_, text, _) = p.walj(&["recover"]);
    assert!(!text.contains("ran at the same time"), "{text}");
    let (ok, out, err) = p.walj(&["revert", "--session", &sid2, "--yes"]);
    assert!(ok, "walj revert --session {sid2}: {out}{err}");
    assert!(!p.root().join("out/new.txt").exists(), "{out}{err}");
    assert!(!err.contains("left out"), "{err}");
    p.assert_hooks_clean();
}

/// Metadata after the crash never re-dates content, with the real CLI: a Bash call runs a
/// script (its line names none of the files) that rewrites `a.txt` and `b.txt`, and Claude
/// Code is killed (-9) mid-`sleep`. After the crash, before walj first looks, the user gives
/// `a.txt` the mode it already has (`chmod 644`), copies `a.txt`'s times onto `b.txt`
/// (`touch -r`) and edits `c.txt`. The watcher saw the content written while Claude Code
/// lived and the metadata after: `a.txt` and `b.txt` stay the command's, certain, and
/// `revert --session` restores them; `c.txt` alone is after-stop and left out.
#[test]
fn a_same_mode_chmod_or_touch_r_after_the_crash_keeps_the_killed_commands_change_its_own() {
    let test = "a_same_mode_chmod_or_touch_r_after_the_crash_keeps_the_killed_commands_change_its_own";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let script = "printf 'A\\n' > a.txt\nprintf 'B\\n' > b.txt\n";
    let p = Proj::new(&[("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n"), ("fix.sh", script)]);
    p.install_walj();
    let token = claude::unique_token("walj-e2e-metadata");
    let guard = OrphanGuard(token.clone());
    let command = format!("sh ./fix.sh && echo ran > ran.log && sleep 60 # {token}");
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": command, "description": "Fix the files"})),
        Turn::text("unreachable"),
    ]);
    let sid = kill_mid_bash(&p, p.claude_p(&bin, &mock, "Fix the files"), &mock, "toolu_mock_0_0", &token, "ran.log");
    assert_eq!(p.sb.read("a.txt").as_deref(), Some("A\n"));
    assert_eq!(p.sb.read("b.txt").as_deref(), Some("B\n"));
    drop(guard);
    wait_gone(&token, p.root());
    let deadline = Instant::now() + Duration::from_secs(3);
    while !observed(&p).iter().any(|v| v["ev"] == "end" && v["session"] == sid.as_str()) {
        assert!(Instant::now() < deadline, "the watcher never saw Claude Code end: {:?}", observed(&p));
        std::thread::sleep(Duration::from_millis(20));
    }

    // The user, after the crash and before walj first looks.
    std::thread::sleep(PAST_GRANULARITY);
    let a = p.root().join("a.txt");
    fs::set_permissions(&a, fs::metadata(&a).unwrap().permissions()).unwrap();
    let touched = std::process::Command::new("touch").arg("-r").arg(&a).arg(p.root().join("b.txt")).status().unwrap();
    assert!(touched.success());
    fs::write(p.root().join("c.txt"), "the user's\n").unwrap();
    std::thread::sleep(PAST_GRANULARITY);
    assert!(p.journal().iter().all(|r| r["parent"] != "toolu_mock_0_0"), "walj looked before the user's changes");

    let recover = p.walj_json(&["recover", "--json"]);
    let es = entries_of(&recover, &sid);
    for path in ["a.txt", "b.txt", "ran.log"] {
        let e = &es[path];
        assert_eq!(e["parent"], "toolu_mock_0_0", "{path}: {recover:#}");
        assert!(e.get("attribution").is_none(), "{path}: metadata re-dated the command's content: {e}\n{recover:#}");
    }
    assert_eq!(es["c.txt"]["attribution"], "after_stop", "{recover:#}");
    let kinds = |path: &str| -> Vec<Value> {
        observed(&p)
            .into_iter()
            .filter(|v| v["ev"] == "change" && v["path"] == path)
            .map(|v| v["kind"].clone())
            .collect()
    };
    assert!(kinds("a.txt").contains(&json!("attribute")), "the chmod was not seen: {:?}", observed(&p));
    assert!(kinds("b.txt").contains(&json!("attribute")), "the touch -r was not seen: {:?}", observed(&p));

    let (ok, out, err) = p.walj(&["revert", "--session", &sid, "--yes"]);
    assert!(ok, "walj revert --session: {out}{err}");
    assert_eq!(p.sb.read("a.txt").as_deref(), Some("a\n"), "{out}{err}");
    assert_eq!(p.sb.read("b.txt").as_deref(), Some("b\n"), "{out}{err}");
    assert_eq!(p.sb.read("c.txt").as_deref(), Some("the user's\n"), "the user's edit was reverted: {out}{err}");
    assert!(err.contains("c.txt"), "the after-stop change left out is not named: {err}");
    p.assert_hooks_clean();
}

/// What `walj recover` says of `path`'s entry: its line's marks, with the notes it names.
fn path_marks(text: &str, path: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains("in_flight") && l.split_whitespace().any(|w| w == path))
        .unwrap_or_else(|| panic!("no entry line for {path}:\n{text}"));
    crate::recover_text::recover_marks(text, line)
}
