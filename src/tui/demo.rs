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

use serde_json::Value;

/// Why the demo could not be built; each names the file, folder or step.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    #[error("could not create a demo folder in {0}")]
    NoFolder(PathBuf),
    #[error("{op} in {path}: {source}")]
    Git { op: String, path: PathBuf, source: git2::Error },
    #[error("assets/demo/script.jsonl line {line}: {source}")]
    Script { line: usize, source: serde_json::Error },
    #[error("demo step {step}: {what} {walj}: {source}")]
    Hook { step: usize, what: &'static str, walj: PathBuf, source: std::io::Error },
    #[error("demo step {step}: walj hook reported: {stderr}")]
    HookSaid { step: usize, stderr: String },
    #[error("running {walj} tui --demo-replay: {source}")]
    Spawn { walj: PathBuf, source: std::io::Error },
    #[error("building the demo journal in {dir} failed: {stderr}")]
    Replay { dir: PathBuf, stderr: String },
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> DemoError {
    let path = path.to_path_buf();
    move |source| DemoError::Io { op, path, source }
}

/// The demo repository's files (path, bytes).
pub(crate) const FILES: &[(&str, &[u8])] = &[
    ("README.md", include_bytes!("../../assets/demo/project/README.md")),
    ("package.json", include_bytes!("../../assets/demo/project/package.json")),
    ("config/settings.json", include_bytes!("../../assets/demo/project/config/settings.json")),
    ("src/server.js", include_bytes!("../../assets/demo/project/src/server.js")),
    ("src/routes.js", include_bytes!("../../assets/demo/project/src/routes.js")),
    ("docs/index.md", include_bytes!("../../assets/demo/project/docs/index.md")),
];

/// The replayed steps: `{"hook": payload}` or `{"write": path, "content": text}`.
pub(crate) const SCRIPT: &str = include_str!("../../assets/demo/script.jsonl");

/// A fresh folder for the demo under the system temp folder.
pub(crate) fn temp_dir() -> Result<PathBuf, DemoError> {
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
            Err(e) => return Err(io("creating", &dir)(e)),
        }
    }
    Err(DemoError::NoFolder(base))
}

/// Writes the sample files into `dir` and commits them (git2; fixed author and date).
pub(crate) fn create_project(dir: &Path) -> Result<(), DemoError> {
    for (rel, bytes) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
        }
        std::fs::write(&path, bytes).map_err(io("writing", &path))?;
    }
    let git = |op: &str| {
        let (op, path) = (op.to_string(), dir.to_path_buf());
        move |source| DemoError::Git { op, path, source }
    };
    let repo = git2::Repository::init(dir).map_err(git("git init"))?;
    let mut index = repo.index().map_err(git("reading git's index"))?;
    for (rel, _) in FILES {
        index.add_path(Path::new(rel)).map_err(git(&format!("git add {rel}")))?;
    }
    index.write().map_err(git("writing git's index"))?;
    let tree_id = index.write_tree().map_err(git("git write-tree"))?;
    let tree = repo.find_tree(tree_id).map_err(git("reading the tree"))?;
    let sig = git2::Signature::new("walj demo", "demo@walj.invalid", &git2::Time::new(1_767_225_600, 0))
        .map_err(git("making the commit's author"))?;
    repo.commit(Some("HEAD"), &sig, &sig, "shop: first version", &tree, &[]).map_err(git("git commit"))?;
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
pub(crate) fn replay(dir: &Path, walj: &Path) -> Result<(), DemoError> {
    let project = dir.to_string_lossy().into_owned();
    let home = std::env::var("HOME").unwrap_or_else(|_| project.clone());
    for (n, line) in SCRIPT.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut step: Value = serde_json::from_str(line).map_err(|source| DemoError::Script { line: n + 1, source })?;
        substitute(&mut step, &project, &home);
        if let Some(payload) = step.get("hook") {
            run_hook(dir, walj, payload, n + 1)?;
        } else if let Some(rel) = step.get("write").and_then(Value::as_str) {
            let content = step.get("content").and_then(Value::as_str).unwrap_or("");
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io("creating", parent))?;
            }
            std::fs::write(&path, content).map_err(io("writing", &path))?;
        }
    }
    Ok(())
}

fn run_hook(dir: &Path, walj: &Path, payload: &Value, step: usize) -> Result<(), DemoError> {
    let failed = |what: &'static str| move |source| DemoError::Hook { step, what, walj: walj.to_path_buf(), source };
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
        .map_err(failed("running"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(payload.to_string().as_bytes()).map_err(failed("writing the payload to"))?;
    }
    let out = child.wait_with_output().map_err(failed("waiting for"))?;
    if !out.stderr.is_empty() {
        return Err(DemoError::HookSaid { step, stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() });
    }
    Ok(())
}

/// Builds the whole demo in `dir`: the repository, then the journal, replayed by a
/// helper process (`walj tui --demo-replay DIR`) that exits before this returns, so the
/// crashed session's process is really gone.
pub fn build(dir: &Path, walj: &Path) -> Result<(), DemoError> {
    create_project(dir)?;
    // No checkout watcher for a project that lives only while the demo runs: one started by
    // the replayed SessionStart would outlive the demo and write into the folder it removes.
    let walj_dir = dir.join(".walj");
    std::fs::create_dir_all(&walj_dir).map_err(io("creating", &walj_dir))?;
    let config = walj_dir.join("config.toml");
    std::fs::write(&config, "[bash]\nwatcher = false\n").map_err(io("writing", &config))?;
    let out = Command::new(walj)
        .args(["tui", "--demo-replay"])
        .arg(dir)
        .current_dir(dir)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| DemoError::Spawn { walj: walj.to_path_buf(), source })?;
    if !out.status.success() {
        return Err(DemoError::Replay {
            dir: dir.to_path_buf(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}
