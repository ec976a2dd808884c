//! A codemod over 1,500 files cut off by `kill -9` of the real Claude Code CLI mid-command:
//! every file it changed is an in-flight entry, and `walj revert --session` restores them all
//! (docs/bash-and-import.md, "Bounds").

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{MockServer, Turn};
use crate::support::claude;
use crate::walj::{OrphanGuard, Proj, kill_mid_bash, wait_gone};
use serde_json::json;

const FILES: usize = 1500;

#[test]
fn a_1500_file_codemod_killed_mid_command_is_fully_restored_by_revert_session() {
    codemod_killed("a_1500_file_codemod_killed_mid_command_is_fully_restored_by_revert_session", true);
}

/// Outside git every file is new to walj when the session starts: the fill pass SessionStart
/// starts reads them before the first command, so each has its pre-image.
#[test]
fn outside_git_a_1500_file_codemod_killed_mid_command_is_fully_restored_by_revert_session() {
    codemod_killed("outside_git_a_1500_file_codemod_killed_mid_command_is_fully_restored_by_revert_session", false);
}

fn codemod_killed(test: &str, in_git: bool) {
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let files: Vec<(String, String)> = (0..FILES).map(|i| (format!("src/f{i:05}.txt"), format!("old {i}\n"))).collect();
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let p = Proj::new(&refs);
    if !in_git {
        std::fs::remove_dir_all(p.root().join(".git")).unwrap();
    }
    p.install_walj();
    if !in_git {
        // No watcher: nothing sees Claude Code end, so the session's last sign of life is its
        // last record and transcript write, before the command's first change (the hardest
        // case for authorship; with a watcher its end, seen after the work, dates it).
        std::fs::write(p.root().join(".walj/config.toml"), "[bash]\nwatcher = false\n").unwrap();
    }
    let token = claude::unique_token("walj-e2e-codemod");
    let guard = OrphanGuard(token.clone());
    // The command starts its work a second after it begins: Claude Code writes nothing while it
    // waits, so every change comes after the session's last sign of life (its last record, its
    // transcript's last write), as a slow codemod's or an orphan's would.
    let command = format!(
        "sleep 1 && find src -name '*.txt' -exec sed -i 's/old/new/' {{}} + && echo done > done.marker && sleep 60 # {token}"
    );
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": command, "description": "Rename old to new"})),
        Turn::text("unreachable"),
    ]);
    let sid =
        kill_mid_bash(&p, p.claude_p(&bin, &mock, "Rename old to new"), &mock, "toolu_mock_0_0", &token, "done.marker");
    assert_eq!(p.sb.read("src/f01499.txt").as_deref(), Some("new 1499\n"));
    drop(guard);
    wait_gone(&token, p.root());

    let recover = p.walj_json(&["recover", "--json"]);
    let entries = recover["sessions"][0]["entries"].as_array().unwrap();
    let of_command = entries.iter().filter(|e| e["parent"] == "toolu_mock_0_0").count();
    assert_eq!(of_command, FILES + 1, "every changed file and the marker is an entry of the killed command");

    let (ok, out, err) = p.walj(&["revert", "--session", &sid]);
    assert!(ok, "walj revert --session failed:\n{out}\n{err}");
    let wrong: Vec<usize> = (0..FILES)
        .filter(|i| p.sb.read(&format!("src/f{i:05}.txt")).as_deref() != Some(format!("old {i}\n").as_str()))
        .collect();
    assert!(wrong.is_empty(), "{} files not restored, first {:?}", wrong.len(), &wrong[..wrong.len().min(5)]);
    assert_eq!(p.sb.read("done.marker"), None);
    let (_, text, _) = p.walj(&["recover"]);
    assert!(text.contains("no unresolved journal entries"), "{text}");
}

/// A 20 MB generated file (over the 8 MiB capture cap) rewritten by three Bash calls, the
/// third cut off by `kill -9` of the real Claude Code CLI: the later images are over the cap
/// and never stored, but `walj revert --session` needs only the earliest pre-image (the
/// committed original, from git) and the disk checked against the last entry's identity: it
/// restores the file byte for byte.
#[test]
fn a_20_mb_file_rewritten_by_three_commands_the_last_killed_is_restored_by_revert_session() {
    let test = "a_20_mb_file_rewritten_by_three_commands_the_last_killed_is_restored_by_revert_session";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let big: String = (0..2_400_000u32).map(|i| format!("line {i:07}\n")).collect();
    assert!(big.len() > 20_000_000, "{}", big.len());
    let p = Proj::new(&[("gen/big.txt", big.as_str())]);
    p.install_walj();
    let token = claude::unique_token("walj-e2e-big");
    let guard = OrphanGuard(token.clone());
    let last = format!("sed -i 's/^gen1 /gen2 /' gen/big.txt && echo done > done.marker && sleep 60 # {token}");
    let mock = MockServer::start(vec![
        Turn::tool("Bash", json!({"command": "sed -i 's/^line /gen0 /' gen/big.txt", "description": "first pass"})),
        Turn::tool("Bash", json!({"command": "sed -i 's/^gen0 /gen1 /' gen/big.txt", "description": "second pass"})),
        Turn::tool("Bash", json!({"command": last, "description": "third pass"})),
        Turn::text("unreachable"),
    ]);
    let sid =
        kill_mid_bash(&p, p.claude_p(&bin, &mock, "Rewrite big.txt"), &mock, "toolu_mock_2_0", &token, "done.marker");
    assert!(p.sb.read("gen/big.txt").unwrap().starts_with("gen2 0000000\n"));
    drop(guard);
    wait_gone(&token, p.root());

    // Three entries on the file, the later images over the cap.
    let log = p.walj_json(&["log", "--json", "--all"]);
    let on_big: Vec<&serde_json::Value> =
        log.as_array().unwrap().iter().filter(|e| e["path"] == "gen/big.txt").collect();
    assert_eq!(on_big.len(), 3, "an entry per command on the file: {log}");
    assert!(on_big.iter().all(|e| e["nocap"] == "too_large"), "every image of it is over the cap: {on_big:#?}");
    let (ok, out, err) = p.walj(&["revert", "--session", &sid]);
    assert!(ok, "walj revert --session failed:\n{out}\n{err}");
    assert!(p.sb.read("gen/big.txt").unwrap() == big, "gen/big.txt is not the committed original:\n{out}\n{err}");
    assert_eq!(p.sb.read("done.marker"), None);
    let (_, text, _) = p.walj(&["recover"]);
    assert!(text.contains("no unresolved journal entries"), "{text}");
}
