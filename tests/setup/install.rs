//! Issue 15: `walj install` leaves the committed `.claude/` alone but for the settings file,
//! never commits a machine-specific path, and git-ignores `settings.local.json`. Through the
//! real binary in real git repositories.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::common::{Repo, outcome};
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
    assert_eq!(claude_dir_names(&repo), vec!["settings.json", "settings.local.json"], "with the subfolder copy");
    let backup = repo.path(".walj/backups/settings.json.walj-backup");
    assert_eq!(fs::read_to_string(&backup).unwrap(), original);
    let installed = repo.read(".claude/settings.json");
    repo.ok(&["uninstall", "--command", "walj hook"]);
    assert_eq!(claude_dir_names(&repo), vec!["settings.json"]);
    // One backup: the file before the last change.
    assert_eq!(fs::read_to_string(&backup).unwrap(), installed);
    let mut names: Vec<String> = fs::read_dir(repo.path(".walj/backups"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // One per file: settings.json's and its subfolder copy's (settings.local.json).
    assert_eq!(names, ["settings.json.walj-backup", "settings.local.json.walj-backup"]);
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
    let bin = crate::common::walj_bin().canonicalize().unwrap();
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

/// A folder holding a `claude` that answers `--version` with `version`, then the PATH with it
/// first (and no walj on it).
fn path_with_claude(repo: &Repo, version: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dir = repo.tmp.join(format!("claude-{version}"));
    fs::create_dir_all(&dir).unwrap();
    let claude = dir.join("claude");
    fs::write(&claude, format!("#!/bin/sh\n[ \"$1\" = --version ] && echo '{version} (Claude Code)'\n")).unwrap();
    fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:{}", dir.display(), path_without_walj())
}

fn handler(repo: &Repo, file: &str, event: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(&repo.read(file)).unwrap();
    v["hooks"][event][0]["hooks"][0].clone()
}

/// `walj install` writes exec form when the `claude` on PATH honours `args` (2.1.139 and
/// later) or when there is no `claude` to ask (and says so), shell form for an older one (and
/// says why); `--form` decides instead.
#[test]
fn install_writes_the_form_the_claude_on_path_honours() {
    for (version, form) in
        [(Some("2.1.328"), "exec"), (Some("2.1.139"), "exec"), (Some("2.1.138"), "shell"), (None, "exec")]
    {
        let repo = Repo::new(&[("a.txt", "a\n")]);
        let path = match version {
            Some(v) => path_with_claude(&repo, v),
            None => path_without_walj(),
        };
        let (code, out, err) =
            outcome(&repo.walj(&["install", "--local", "--command", "walj hook"]).env("PATH", &path).output().unwrap());
        assert_eq!(code, 0, "{version:?}: {out}\n{err}");
        assert!(out.contains(&format!("Installed `walj hook` ({form} form)")), "{version:?}: {out}");
        let h = handler(&repo, ".claude/settings.local.json", "PreToolUse");
        match form {
            "exec" => assert_eq!(
                h,
                serde_json::json!({"type": "command", "command": "walj", "args": ["hook"], "timeout": 10})
            ),
            _ => assert_eq!(h, serde_json::json!({"type": "command", "command": "walj hook", "timeout": 10})),
        }
        match version {
            Some("2.1.138") => assert!(out.contains("older than 2.1.139") && out.contains("shell form"), "{out}"),
            None => assert!(out.contains("no `claude` on PATH") && out.contains("--form shell"), "{out}"),
            _ => assert!(!out.contains("Note:"), "{out}"),
        }
    }
    // --form wins over the version; a command that is not plain words stays shell form.
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let path = path_with_claude(&repo, "2.1.100");
    repo.ok(&["install", "--local", "--command", "walj hook", "--form", "exec"]);
    assert_eq!(handler(&repo, ".claude/settings.local.json", "Stop")["args"], serde_json::json!(["hook"]));
    let (code, out, _) = outcome(
        &repo
            .walj(&["install", "--user", "--command", "cd \"$CLAUDE_PROJECT_DIR\" && walj hook", "--form", "exec"])
            .env("PATH", &path)
            .env("CLAUDE_CONFIG_DIR", repo.tmp.join("claude-config"))
            .output()
            .unwrap(),
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("(shell form)"), "{out}");
}

/// A Claude Code older than 2.1.139 ignores an exec-form hook's `args` and runs its `command`
/// through its shell (`sh -c walj`), the payload on stdin: walj without arguments does the
/// hook's job, exits 0 and prints only what SessionStart asks for. Without a payload (a
/// terminal, nothing, other text) it prints its usage as before.
#[test]
fn walj_without_arguments_and_a_payload_on_stdin_is_the_hook() {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let repo = Repo::new(&[("a.txt", "a\n")]);
    repo.ok(&["install", "--local", "--command", "walj hook", "--form", "exec"]);
    let bin = repo.tmp.join("bin");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(crate::common::walj_bin(), bin.join("walj")).unwrap();
    let path = format!("{}:{}", bin.display(), path_without_walj());
    // What an old Claude Code runs: the handler's `command` alone, through the shell.
    let old_claude = |event: &str, payload: serde_json::Value| {
        let command = handler(&repo, ".claude/settings.local.json", event)["command"].as_str().unwrap().to_string();
        assert_eq!(command, "walj");
        let mut child = Command::new("sh")
            .args(["-c", &command])
            .current_dir(&repo.root)
            .env("PATH", &path)
            .env("CLAUDE_PROJECT_DIR", &repo.root)
            .env_remove("WALJ_JOURNAL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(format!("\n  {payload}").as_bytes()).unwrap();
        outcome(&child.wait_with_output().unwrap())
    };
    let base = |event: &str| {
        serde_json::json!({"session_id": "5e0b1d2c-0000-4000-8000-000000000001", "cwd": repo.root,
                           "transcript_path": repo.tmp.join("t.jsonl"), "hook_event_name": event})
    };
    let mut start = base("SessionStart");
    start["source"] = serde_json::json!("startup");
    let (code, out, err) = old_claude("SessionStart", start);
    assert_eq!(code, 0, "{out}\n{err}");
    let mut pre = base("PreToolUse");
    pre["tool_name"] = serde_json::json!("Write");
    pre["tool_use_id"] = serde_json::json!("toolu_noargs_1");
    pre["tool_input"] = serde_json::json!({"file_path": repo.path("b.txt"), "content": "b\n"});
    let (code, out, err) = old_claude("PreToolUse", pre);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(!err.contains("Usage"), "{err}");
    let records = repo.records();
    assert!(records.iter().any(|r| r["op"] == "intent" && r["path"] == "b.txt"), "{records:?}");
    assert!(records.iter().any(|r| r["op"] == "session"), "{records:?}");

    // Not a payload: the usage, exit 2, as before.
    for input in ["", "hello\n"] {
        let mut child = Command::new(crate::common::walj_bin())
            .current_dir(&repo.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let (code, _, err) = outcome(&child.wait_with_output().unwrap());
        assert_eq!(code, 2, "{input:?}: {err}");
        assert!(err.contains("Usage"), "{input:?}: {err}");
    }
}

/// `walj install --mcp`: walj's MCP server in the project's `.mcp.json` (committed: refused off
/// a terminal without `--yes`), other servers kept; doctor sees it; `--local` writes nothing and
/// prints the `claude mcp add` line; `walj uninstall --mcp` takes out walj's entry only.
#[test]
fn install_mcp_declares_the_server_in_dot_mcp_json_and_uninstall_takes_it_out() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let bin = repo.tmp.join("bin-mcp");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(crate::common::walj_bin(), bin.join("walj")).unwrap();
    let path = format!("{}:{}", bin.display(), path_without_walj());
    let other = "{\n  \"mcpServers\": {\n    \"db\": {\"command\": \"db-mcp\"}\n  }\n}\n";
    repo.write(".mcp.json", other);
    let run = |args: &[&str], path: &str| outcome(&repo.walj(args).env("PATH", path).output().unwrap());

    let (code, _, err) = run(&["install", "--mcp"], &path);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("refused") && err.contains("--yes") && err.contains(".mcp.json"), "{err}");
    assert_eq!(repo.read(".mcp.json"), other, "nothing written without --yes");

    let (code, _, err) = run(&["install", "--mcp", "--yes"], &path_without_walj());
    assert_eq!(code, 2, "an absolute path is never committed: {err}");
    assert_eq!(repo.read(".mcp.json"), other);

    let (code, out, err) = run(&["install", "--mcp", "--yes"], &path);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(".mcp.json"), "says where it wrote: {out}");
    let v: serde_json::Value = serde_json::from_str(&repo.read(".mcp.json")).unwrap();
    assert_eq!(v["mcpServers"]["walj"], serde_json::json!({"type": "stdio", "command": "walj", "args": ["mcp"]}));
    assert_eq!(v["mcpServers"]["db"]["command"], "db-mcp");
    // Hooks were not touched.
    assert!(!repo.exists(".claude/settings.json"));

    let (_, out, _) = run(&["doctor", "--json"], &path);
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mcp: Vec<&serde_json::Value> =
        d["findings"].as_array().unwrap().iter().filter(|f| f["check"] == "mcp").collect();
    assert_eq!(mcp.len(), 1, "{d:#}");
    assert_eq!(mcp[0]["level"], "ok", "{d:#}");
    assert!(mcp[0]["message"].as_str().unwrap().contains(".mcp.json"), "{d:#}");

    let (code, out, _) = run(&["install", "--mcp", "--local"], &path);
    assert_eq!(code, 0);
    assert!(out.contains("claude mcp add --scope local walj -- walj mcp"), "{out}");

    let (code, out, err) = run(&["uninstall", "--mcp"], &path);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Removed walj's MCP server"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&repo.read(".mcp.json")).unwrap();
    assert!(v["mcpServers"].get("walj").is_none(), "{v:#}");
    assert_eq!(v["mcpServers"]["db"]["command"], "db-mcp");
    let (_, out, _) = run(&["doctor", "--json"], &path);
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(d["findings"].as_array().unwrap().iter().any(|f| f["check"] == "mcp" && f["level"] == "info"), "{d:#}");
}
