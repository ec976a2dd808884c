//! A slash command's `!` shell line with the real Claude Code 2.1.332 (the first version with
//! the `PreSkillShellCommand` hook event): `walj install` (with that `claude` on PATH) hooks
//! it, `claude -p "/x"` runs the line before the model is asked, and walj journals the line as
//! a command whose window closes at the session's next hook event, with what it changed.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{MockServer, Turn};
use crate::support::claude;
use crate::walj::Proj;
use serde_json::Value;
use std::fs;
use std::process::Command;

#[test]
fn a_slash_commands_shell_line_is_journaled_with_what_it_wrote() {
    let test = "a_slash_commands_shell_line_is_journaled_with_what_it_wrote";
    let Some(bin) = claude::claude_at_least(test, "2.1.332") else { return };
    let p = Proj::new(&[("keep.txt", "k\n")]);
    // The slash command, committed as a user would: one `!` line that writes a file.
    p.sb.write(
        ".claude/commands/stamp.md",
        "---\ndescription: stamp the tree\nallowed-tools: Bash(echo:*)\n---\nStamp: !`echo stamped > stamp.out`\n\nSay done.\n",
    );
    // `walj install` with this `claude` on PATH: it reads the version and hooks the event.
    let claude_dir = p.sb.dir.path().join("claude-bin");
    fs::create_dir_all(&claude_dir).unwrap();
    std::os::unix::fs::symlink(&bin, claude_dir.join("claude")).unwrap();
    let out = Command::new("sh")
        .args(["-c", "walj install"])
        .current_dir(p.root())
        .env_clear()
        .env("PATH", format!("{}:{}", claude_dir.display(), p.path))
        .env("HOME", &p.sb.home)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.contains("PreSkillShellCommand"), "{said}");

    let mock = MockServer::start(vec![Turn::text("done")]);
    let (_, sid) = p.session(p.claude_p(&bin, &mock, "/stamp"), &mock);
    assert_eq!(p.sb.read("stamp.out").as_deref(), Some("stamped\n"), "{}", mock.summary());
    // The command's text reached the model with the line's (empty) output in place of it.
    let first = &mock.main_requests()[0];
    assert!(first.count("Stamp:") >= 1 && first.count("!`echo") == 0, "{}", mock.summary());

    let journal = p.journal();
    let intent = journal
        .iter()
        .find(|r| r["op"] == "intent" && r["command"] == "echo stamped > stamp.out")
        .unwrap_or_else(|| panic!("the `!` line is not journaled:\n{}", p.journal_text()));
    assert_eq!((&intent["session"], &intent["skill"]), (&Value::from(sid.as_str()), &Value::from("stamp")), "{intent}");
    let id = intent["id"].as_str().unwrap();
    let outcome = journal.iter().find(|r| r["op"] == "applied" && r["id"] == id).expect("its window closed");
    // No Post event: closed by the session's next hook event (here the turn's Stop).
    assert_eq!(outcome["closed_by"], "Stop", "{outcome}");
    let children: Vec<&Value> = journal.iter().filter(|r| r["parent"] == id).collect();
    assert_eq!(children.len(), 1, "{children:?}");
    assert_eq!(
        (&children[0]["path"], &children[0]["after"]),
        (&Value::from("stamp.out"), &Value::from(p.hash_object("stamp.out")))
    );
    assert!(children[0].get("attribution").is_none(), "alone in its window: {}", children[0]);
    p.assert_hooks_clean();
}
