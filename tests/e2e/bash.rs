//! Issue 6 end to end, with the real Claude Code CLI driven offline by the scripted model
//! (tests/support): walj's hooks record what a real Bash call changed, `walj revert` undoes
//! it; a session killed mid-Bash without walj is rebuilt from its real transcript.
//!
//! Skipped (with a `SKIPPED:` line) when the CLI cannot be installed.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::support::anthropic_mock::{MockServer, Turn};
use crate::support::claude::{self, Sandbox};
use serde_json::{Value, json};
use walj::journal::Record;
use walj::journal::reader::scan_records;

const SESSION_TIMEOUT: Duration = Duration::from_secs(180);

fn walj_bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("walj")
}

fn walj(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    std::process::Command::new(walj_bin())
        .args(args)
        .arg("--project")
        .arg(&sb.project)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env("CLAUDE_CONFIG_DIR", sb.home.join(".claude"))
        .env("NO_COLOR", "1")
        .output()
        .expect("walj runs")
}

/// walj's hooks, as `walj install` writes them, with this build's binary.
fn install_hooks(sb: &Sandbox) {
    let cmd = format!("{} hook", claude::sh_quote(walj_bin()));
    let mut settings = claude::hooks_for_all_events(&cmd);
    settings["hooks"].as_object_mut().unwrap().remove("Notification");
    sb.settings(&settings);
}

fn records(root: &Path) -> Vec<Record> {
    let mut v = Vec::new();
    scan_records(&root.join(".walj/journal.jsonl"), |_, r| v.push(r)).unwrap();
    v
}

#[test]
fn a_real_bash_call_becomes_child_entries_that_revert() {
    let Some(bin) = claude::claude_or_skip("a_real_bash_call_becomes_child_entries_that_revert") else {
        return;
    };
    let sb = Sandbox::new();
    sb.write("a.txt", "delete me\n");
    sb.write("b.txt", "b line\n");
    sb.write("c.txt", "move me\n");
    sb.commit("initial");
    install_hooks(&sb);
    let command = "rm a.txt && sed -i 's/b line/B LINE/' b.txt && mv c.txt d.txt && echo new > e.txt";
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": command, "description": "Shuffle files"})),
        Turn::text("Done."),
    ]);
    let out = claude::run(sb.claude_p(&bin, &mock, "Shuffle the files"), SESSION_TIMEOUT);
    assert!(out.status.success(), "{out:?}\n{}", mock.summary());
    assert!(
        !sb.project.join(".walj/errors.log").exists(),
        "{:?}",
        fs::read_to_string(sb.project.join(".walj/errors.log"))
    );

    let recs = records(&sb.project);
    let mut kids: Vec<&Record> = recs.iter().filter(|r| r.parent.as_deref() == Some("toolu_mock_0_0")).collect();
    kids.sort_by(|a, b| a.path.cmp(&b.path));
    let seen: Vec<(&str, &str)> = kids.iter().map(|r| (r.path.as_str(), r.event.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("a.txt", "file_deleted"),
            ("b.txt", "file_modified"),
            ("c.txt", "file_deleted"),
            ("d.txt", "artifact_created"),
            ("e.txt", "artifact_created")
        ],
        "{recs:#?}"
    );
    // The Stop hook verified them.
    for k in &kids {
        assert!(recs.iter().any(|r| r.op == "persisted" && r.id == k.id), "{} not verified at Stop", k.path);
    }
    let ids: Vec<&str> = kids.iter().map(|r| r.id.as_str()).collect();
    let mut args = vec!["revert"];
    args.extend(&ids);
    let o = walj(&sb, &args);
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(sb.read("a.txt").as_deref(), Some("delete me\n"));
    assert_eq!(sb.read("b.txt").as_deref(), Some("b line\n"));
    assert_eq!(sb.read("c.txt").as_deref(), Some("move me\n"));
    assert_eq!(sb.read("d.txt"), None);
    assert_eq!(sb.read("e.txt"), None);

    // Importing the session's own (real) transcript adds nothing: the hooks saw it all.
    let o = walj(&sb, &["import"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && text.contains("Imported 0 records from 1 transcript"), "{text}");
}

#[test]
fn a_session_killed_mid_bash_without_walj_is_rebuilt_from_its_transcript() {
    let Some(bin) = claude::claude_or_skip("a_session_killed_mid_bash_without_walj_is_rebuilt_from_its_transcript")
    else {
        return;
    };
    let sb = Sandbox::new();
    sb.write("config/settings.json", "{\n  \"retries\": 3\n}\n");
    sb.commit("initial");
    let payload_dir = sb.dir.path().join("payloads");
    fs::create_dir_all(&payload_dir).unwrap();
    sb.settings(&claude::hooks_for_all_events(&claude::saver_command(&payload_dir)));
    let token = claude::unique_token("walj-e2e-import");
    let settings = sb.project.join("config/settings.json");
    let mock = MockServer::start(vec![
        Turn::tool(
            "Edit",
            json!({"file_path": settings, "old_string": "\"retries\": 3", "new_string": "\"retries\": 5", "replace_all": false}),
        ),
        Turn::tool("Write", json!({"file_path": sb.project.join("src/server.rs"), "content": "pub fn serve() {}\n"})),
        // (Claude Code refuses a bare `sleep`.)
        Turn::tool(
            "Bash",
            json!({"command": format!("echo started > run.log; sleep 60 # {token}"), "description": "Long build"}),
        ),
        Turn::text("unreachable"),
    ]);
    let running = claude::spawn(sb.claude_p(&bin, &mock, "Raise retries, add a server, build"));
    let crash = claude::kill9_at_payload(running, &sb, &payload_dir, SESSION_TIMEOUT, |p| {
        p["hook_event_name"] == "PreToolUse" && p["tool_name"] == "Bash"
    });
    claude::kill9_tree(&claude::pids_mentioning(&token));
    let crash = crash.unwrap_or_else(|e| panic!("{e}\n{}", mock.summary()));
    assert!(crash.in_transcript);
    assert!(!sb.project.join(".walj").exists(), "walj was not installed");

    // The day walj is installed: one command.
    let o = walj(&sb, &["recover", "--from-transcripts", "--yes", "--json"]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("in flight Bash echo started > run.log; sleep 60"), "{err}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["unresolved"], json!(2), "{v:#}");
    let s = &v["sessions"][0];
    assert_eq!(s["session"], crash.session_id.as_str());
    assert_eq!(s["imported"], json!(true));
    let mut paths: Vec<&str> = s["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    paths.sort();
    assert_eq!(paths, ["config/settings.json", "src/server.rs"]);
    let recs = records(&sb.project);
    let edit = recs.iter().find(|r| r.id == "toolu_mock_0_0" && r.op == "intent").unwrap();
    let pre = walj::store::Store::new(sb.project.join(".walj/store"))
        .get(edit.before.as_ref().unwrap().id().unwrap())
        .unwrap();
    assert_eq!(pre, b"{\n  \"retries\": 3\n}\n");
    // Reverting the imported Edit works like a hooked one.
    let o = walj(&sb, &["revert", "toolu_mock_0_0"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(sb.read("config/settings.json").as_deref(), Some("{\n  \"retries\": 3\n}\n"));
}

/// The untracked cache under the real CLI (src/bashsnap/untracked.rs): with no watcher and
/// folders old enough to be trusted, a Bash call's new file in an old folder, its new folder
/// of files, a rewritten and a removed untracked file are each journaled, as a full walk
/// would journal them, and the cache was in use (it records the folders left alone).
#[test]
fn with_the_untracked_cache_a_real_bash_call_misses_nothing() {
    let Some(bin) = claude::claude_or_skip("with_the_untracked_cache_a_real_bash_call_misses_nothing") else {
        return;
    };
    let sb = Sandbox::new();
    sb.write("src/lib.rs", "pub fn f() {}\n");
    sb.write("docs/guide.md", "# guide\n");
    sb.write("lib/untouched/x.rs", "// x\n");
    sb.commit("initial");
    sb.write("src/notes.txt", "notes v1\n");
    sb.write("docs/old.txt", "old\n");
    sb.write(".walj/config.toml", "[bash]\nwatcher = false\n");
    // Folders changed within 2 s of a walk are read, not recorded.
    std::thread::sleep(Duration::from_millis(2300));
    install_hooks(&sb);
    let command = "echo new > src/new.rs && mkdir -p gen/out && echo g > gen/out/g.txt \
                   && echo 'notes v2' > src/notes.txt && rm docs/old.txt";
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": "ls", "description": "Look"})),
        Turn::tool("Bash", json!({"command": command, "description": "Make files"})),
        Turn::text("Done."),
    ]);
    let out = claude::run(sb.claude_p(&bin, &mock, "Make the files"), SESSION_TIMEOUT);
    assert!(out.status.success(), "{out:?}\n{}", mock.summary());
    let errors = sb.project.join(".walj/errors.log");
    assert!(!errors.exists(), "{:?}", fs::read_to_string(&errors));

    let recs = records(&sb.project);
    // The second turn's call.
    let mut kids: Vec<&Record> = recs.iter().filter(|r| r.parent.as_deref() == Some("toolu_mock_1_0")).collect();
    kids.sort_by(|a, b| a.path.cmp(&b.path));
    let seen: Vec<(&str, &str)> = kids.iter().map(|r| (r.path.as_str(), r.event.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("docs/old.txt", "file_deleted"),
            ("gen/out/g.txt", "artifact_created"),
            ("src/new.rs", "artifact_created"),
            ("src/notes.txt", "file_modified"),
        ],
        "{recs:#?}"
    );
    let cache: Value =
        serde_json::from_slice(&fs::read(sb.project.join(".walj/bash/untracked.cache")).unwrap()).unwrap();
    let dirs = cache["dirs"].as_object().unwrap();
    // The folders the command changed were read again and, changed just now, are to be read
    // again next time; the ones it left alone are recorded.
    assert!(dirs.contains_key("lib/untouched") && dirs["src"]["racy"] == json!(true), "{cache:#}");
}
