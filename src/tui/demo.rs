//! `walj tui --demo`: a sample project built from files embedded in the binary
//! (`assets/demo/`), with a journal written by the real hook.
//!
//! The project is a small git repository (`assets/demo/project/`, one commit). The
//! journal comes from replaying `assets/demo/script.jsonl` — hook payloads in the shapes
//! Claude Code sends, and the file changes each tool made — through `walj hook`, so it
//! has exactly the format of real use. One session ends cleanly; the other dies while
//! writing a file, leaving applied, failed and in-flight entries, a failed and a
//! background command, and an unfinished todo list.
//!
//! A session counts as crashed when the process that ran its hooks is gone. The hooks
//! are therefore run by a short-lived helper (`walj tui --demo-replay DIR`, hidden) that
//! exits before the dashboard opens, as Claude Code's process would have died.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use serde_json::Value;

/// The demo repository's files (path, bytes).
pub const FILES: &[(&str, &[u8])] = &[
    ("README.md", include_bytes!("../../assets/demo/project/README.md")),
    ("package.json", include_bytes!("../../assets/demo/project/package.json")),
    ("config/settings.json", include_bytes!("../../assets/demo/project/config/settings.json")),
    ("src/server.js", include_bytes!("../../assets/demo/project/src/server.js")),
    ("src/routes.js", include_bytes!("../../assets/demo/project/src/routes.js")),
    ("docs/index.md", include_bytes!("../../assets/demo/project/docs/index.md")),
];

/// The replayed steps: `{"hook": payload}` or `{"write": path, "content": text}`.
pub const SCRIPT: &str = include_str!("../../assets/demo/script.jsonl");

/// A fresh folder for the demo under the system temp folder.
pub fn temp_dir() -> anyhow::Result<PathBuf> {
    let base = std::env::temp_dir();
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
    for n in 0..100 {
        let dir = base.join(format!(
            "walj-demo-{stamp}-{}{}",
            std::process::id(),
            if n == 0 { String::new() } else { format!("-{n}") }
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    bail!("could not create a demo folder in {}", base.display())
}

/// Writes the sample files into `dir` and commits them (git2; fixed author and date).
pub fn create_project(dir: &Path) -> anyhow::Result<()> {
    for (rel, bytes) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    let repo = git2::Repository::init(dir).with_context(|| format!("git init in {}", dir.display()))?;
    let mut index = repo.index()?;
    for (rel, _) in FILES {
        index.add_path(Path::new(rel)).with_context(|| format!("git add {rel}"))?;
    }
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = git2::Signature::new("walj demo", "demo@walj.invalid", &git2::Time::new(1_767_225_600, 0))?;
    repo.commit(Some("HEAD"), &sig, &sig, "shop: first version", &tree, &[]).context("git commit")?;
    Ok(())
}

fn substitute(v: &mut Value, project: &str, home: &str) {
    match v {
        Value::String(s) if s.contains("${") => {
            *s = s.replace("${PROJECT}", project).replace("${HOME}", home);
        }
        Value::Array(a) => a.iter_mut().for_each(|x| substitute(x, project, home)),
        Value::Object(o) => o.values_mut().for_each(|x| substitute(x, project, home)),
        _ => {}
    }
}

/// Replays [`SCRIPT`] in `dir`: each hook payload through `walj hook` (the binary at
/// `walj`, as a child of this process), each file change written in between.
pub fn replay(dir: &Path, walj: &Path) -> anyhow::Result<()> {
    let project = dir.to_string_lossy().into_owned();
    let home = std::env::var("HOME").unwrap_or_else(|_| project.clone());
    for (n, line) in SCRIPT.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut step: Value =
            serde_json::from_str(line).with_context(|| format!("assets/demo/script.jsonl line {}", n + 1))?;
        substitute(&mut step, &project, &home);
        if let Some(payload) = step.get("hook") {
            run_hook(dir, walj, payload).with_context(|| format!("demo step {}", n + 1))?;
        } else if let Some(rel) = step.get("write").and_then(Value::as_str) {
            let content = step.get("content").and_then(Value::as_str).unwrap_or("");
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&path, content).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}

fn run_hook(dir: &Path, walj: &Path, payload: &Value) -> anyhow::Result<()> {
    let mut child = Command::new(walj)
        .arg("--project")
        .arg(dir)
        .arg("hook")
        .current_dir(dir)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {} hook", walj.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(payload.to_string().as_bytes()).context("writing the payload to walj hook")?;
    }
    let out = child.wait_with_output().context("waiting for walj hook")?;
    if !out.stderr.is_empty() {
        bail!("walj hook reported: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// Builds the whole demo in `dir`: the repository, then the journal, replayed by a
/// helper process (`walj tui --demo-replay DIR`) that exits before this returns, so the
/// crashed session's process is really gone.
pub fn build(dir: &Path, walj: &Path) -> anyhow::Result<()> {
    create_project(dir)?;
    // No checkout watcher for a project that lives only while the demo runs: one started by
    // the replayed SessionStart would outlive the demo and write into the folder it removes.
    let walj_dir = dir.join(".walj");
    std::fs::create_dir_all(&walj_dir).with_context(|| format!("creating {}", walj_dir.display()))?;
    let config = walj_dir.join("config.toml");
    std::fs::write(&config, "[bash]\nwatcher = false\n").with_context(|| format!("writing {}", config.display()))?;
    let out = Command::new(walj)
        .args(["tui", "--demo-replay"])
        .arg(dir)
        .current_dir(dir)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {} tui --demo-replay", walj.display()))?;
    if !out.status.success() {
        bail!("building the demo journal failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}
