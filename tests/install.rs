//! Issue 15: `walj install` leaves the committed `.claude/` alone but for the settings file,
//! never commits a machine-specific path, and git-ignores `settings.local.json`. Through the
//! real binary in real git repositories.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

mod common;

use common::{Repo, outcome};
use std::fs;

/// A PATH on which there is surely no `walj`.
fn path_without_walj() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<_> = std::env::split_paths(&path).filter(|d| !d.join("walj").exists()).collect();
    std::env::join_paths(dirs).unwrap().to_string_lossy().into_owned()
}

fn claude_dir_names(repo: &Repo) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(repo.path(".claude"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn install_and_uninstall_keep_their_backup_under_walj_not_in_dot_claude() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let original = "{\n  \"model\": \"opus\"\n}\n";
    repo.write(".claude/settings.json", original);
    repo.ok(&["install", "--command", "walj hook"]);
    assert_eq!(claude_dir_names(&repo), vec!["settings.json"]);
    let backup = repo.path(".walj/backups/settings.json.walj-backup");
    assert_eq!(fs::read_to_string(&backup).unwrap(), original);
    let installed = repo.read(".claude/settings.json");
    repo.ok(&["uninstall", "--command", "walj hook"]);
    assert_eq!(claude_dir_names(&repo), vec!["settings.json"]);
    // One backup: the file before the last change.
    assert_eq!(fs::read_to_string(&backup).unwrap(), installed);
    let names: Vec<_> = fs::read_dir(repo.path(".walj/backups")).unwrap().collect();
    assert_eq!(names.len(), 1);
    // .walj/ is ignored: git sees only the settings file.
    let status = repo.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status.trim(), "?? .claude/settings.json", "{status}");
}

#[test]
fn install_refuses_to_commit_an_absolute_path_and_suggests_local_or_user() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let (code, out, err) = outcome(&repo.walj(&["install"]).env("PATH", path_without_walj()).output().unwrap());
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("--local") && err.contains("--user") && err.contains("refused"), "{err}");
    assert!(!repo.exists(".claude/settings.json"));
    // --local writes the absolute path (this machine only) and makes sure git ignores the file.
    let (code, out, err) =
        outcome(&repo.walj(&["install", "--local"]).env("PATH", path_without_walj()).output().unwrap());
    assert_eq!(code, 0, "{out}\n{err}");
    let local = repo.read(".claude/settings.local.json");
    let bin = common::walj_bin().canonicalize().unwrap();
    assert!(local.contains(&*bin.to_string_lossy()), "{local}");
    assert!(out.contains("git-ignored"), "{out}");
    let (ok, _) = check_ignore(&repo, ".claude/settings.local.json");
    assert!(ok, "settings.local.json is not git-ignored");
    let status = repo.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert!(!status.contains("settings.local.json"), "{status}");
    // A second install adds no second exclude line.
    repo.ok(&["install", "--local", "--command", "walj hook"]);
    let exclude = fs::read_to_string(repo.path(".git/info/exclude")).unwrap();
    assert_eq!(exclude.matches("settings.local.json").count(), 1, "{exclude}");
}

#[test]
fn install_local_leaves_an_already_ignored_file_alone() {
    let repo = Repo::new(&[(".gitignore", ".claude/settings.local.json\n")]);
    let before = fs::read_to_string(repo.path(".git/info/exclude")).unwrap_or_default();
    let out = repo.ok(&["install", "--local", "--command", "walj hook"]);
    assert!(!out.contains("git-ignored"), "{out}");
    assert_eq!(fs::read_to_string(repo.path(".git/info/exclude")).unwrap_or_default(), before);
    assert!(check_ignore(&repo, ".claude/settings.local.json").0);
}

fn check_ignore(repo: &Repo, rel: &str) -> (bool, String) {
    let o =
        std::process::Command::new("git").args(["check-ignore", "-v", rel]).current_dir(&repo.root).output().unwrap();
    (o.status.success(), String::from_utf8_lossy(&o.stdout).into_owned())
}
