//! The README states facts about the binary: its commands and their flags, the events
//! `walj install` hooks and the matcher it uses, the docs it links to. This test checks each
//! against the real binary and the tree, so the README cannot drift from what walj does.
//! It also keeps the README a user's page: short, and no work log.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::common::{Repo, walj_cmd};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn readme() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md");
    std::fs::read_to_string(p).unwrap()
}

/// The README's section `## title…` up to the next `## `.
fn section<'a>(text: &'a str, title: &str) -> &'a str {
    let start = text.find(&format!("\n## {title}")).unwrap_or_else(|| panic!("README has no section {title}"));
    let rest = &text[start + 1..];
    let end = rest[3..].find("\n## ").map(|i| i + 3).unwrap_or(rest.len());
    &rest[..end]
}

fn help(args: &[&str]) -> String {
    let out = walj_cmd().args(args).arg("--help").output().unwrap();
    assert!(out.status.success(), "walj {args:?} --help failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `(command, flags)` of each row of the Commands table: the first cell's `walj X …` spans.
fn command_rows(text: &str) -> Vec<(String, Vec<String>)> {
    let table = section(text, "Commands");
    let mut rows = Vec::new();
    for line in table.lines().filter(|l| l.starts_with("| `walj ")) {
        let first = line.split(" | ").next().unwrap();
        for span in first.split('`').skip(1).step_by(2) {
            let mut words = span.split_whitespace();
            if words.next() != Some("walj") {
                continue;
            }
            let Some(cmd) = words.next() else { continue };
            let flags: Vec<String> = span
                .split(|c: char| c.is_whitespace() || "[]|\\".contains(c))
                .filter(|w| w.starts_with("--") && w.len() > 2)
                .map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '-').to_string())
                .collect();
            rows.push((cmd.to_string(), flags));
        }
    }
    rows
}

#[test]
fn every_command_and_flag_in_the_readme_exists() {
    let text = readme();
    let rows = command_rows(&text);
    assert!(rows.len() >= 20, "the Commands table was not read: {rows:?}");
    let top = help(&[]);
    for (cmd, flags) in rows {
        assert!(
            top.lines().any(|l| l.trim_start().starts_with(&format!("{cmd} "))),
            "README names `walj {cmd}`, which `walj --help` does not list"
        );
        let sub = help(&[&cmd]);
        for flag in flags {
            assert!(sub.contains(&flag), "README names `walj {cmd} {flag}`, which `walj {cmd} --help` does not know");
        }
    }
}

#[test]
fn the_hooked_events_and_matcher_the_readme_names_are_what_install_writes() {
    let text = readme();
    let install = section(&text, "Install");
    let repo = Repo::new(&[("a.txt", "a\n")]);
    // A `claude` on PATH as new as the README's newest event needs (PreSkillShellCommand is
    // written for 2.1.332 and later only).
    let bin = repo.tmp.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    std::fs::write(&claude, "#!/bin/sh\necho '2.1.332 (Claude Code)'\n").unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let out = repo.walj(&["install", "--command", "walj hook", "--yes"]).env("PATH", path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let settings: Value = serde_json::from_str(&repo.read(".claude/settings.json")).unwrap();
    let hooks = settings["hooks"].as_object().unwrap();
    let written: BTreeSet<&str> = hooks.keys().map(String::as_str).collect();
    // Every event the install paragraph names in backticks that looks like a hook event.
    let named: BTreeSet<&str> = install
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars().all(char::is_alphanumeric)
                && w.chars().any(char::is_lowercase)
        })
        .collect();
    assert_eq!(named, written, "README's hooked events vs the events `walj install` writes");
    let matcher = hooks["PreToolUse"][0]["matcher"].as_str().unwrap();
    assert!(install.contains(&format!("`{matcher}`")), "README should name install's matcher `{matcher}`");
}

#[test]
fn the_readme_links_only_to_files_that_exist_and_stays_a_users_page() {
    let text = readme();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for part in text.split("](").skip(1) {
        let target = part.split(')').next().unwrap();
        if target.starts_with("http") || target.starts_with('#') {
            continue;
        }
        let file = target.split('#').next().unwrap();
        assert!(root.join(file).exists(), "README links to {file}, which does not exist");
    }
    let lines = text.lines().count();
    assert!(lines < 500, "README has {lines} lines: depth belongs in docs/");
    let lower = text.to_lowercase();
    let numbered =
        lower.match_indices("issue ").find(|(i, w)| lower[i + w.len()..].starts_with(|c: char| c.is_ascii_digit()));
    assert!(numbered.is_none(), "README names a work item by number: it tells no history");
}
