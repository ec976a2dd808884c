//! The user's `git` command moves walj's refs: SSH config, credential helpers and any hosting
//! work as they do for the user's own pushes. git runs on walj's repository (`--git-dir`), with
//! the remote's URL as the user's repository resolves it (`git remote get-url`, which applies
//! `insteadOf`) and the repository-local settings that make a connection (`core.sshCommand`,
//! `credential.*`, `http.*`) passed along with `-c`.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use git2::Oid;

use super::{JOURNALS, SyncError};

/// What a fetch found: the remote's journal refs (ref, commit) whose commits are now in
/// walj's repository, and the journals whose fetch failed (id or ref tail, git's reason).
#[derive(Debug, Default)]
pub(crate) struct Fetched {
    pub refs: Vec<(String, String)>,
    pub failed: Vec<(String, String)>,
}

/// A remote of the user's repository, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Remote {
    pub name: String,
    pub url: String,
    pub push_url: String,
    /// `key=value` settings from the user's repository, passed with `-c`.
    settings: Vec<String>,
}

/// Environment variables that would point git at another repository than the one named.
const REPO_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

fn git() -> Command {
    let mut c = Command::new("git");
    for v in REPO_ENV {
        c.env_remove(v);
    }
    if crate::claude::env::in_tool_call() {
        // Claude's tool call has no terminal to answer a password prompt on.
        c.env("GIT_TERMINAL_PROMPT", "0");
    }
    c.stdin(Stdio::null());
    c
}

fn run(mut c: Command, what: &str) -> Result<Output, SyncError> {
    c.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            SyncError::Remote("`git` is not on PATH: walj sync moves its refs with the git command".into())
        } else {
            SyncError::Io { what: format!("running git to {what}"), source: e }
        }
    })
}

fn stdout_line(o: &Output) -> Option<String> {
    let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}

/// git's own reason, in one line: its last `fatal:`/`error:` line, else its last line.
pub(crate) fn git_reason(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines
        .iter()
        .rev()
        .find(|l| l.starts_with("fatal:") || l.starts_with("error:"))
        .or(lines.last())
        .map_or_else(|| "git failed without a message".to_string(), |l| l.to_string())
}

/// The remote to sync through: `name`, else the current branch's upstream remote, else
/// `origin`. Errors say what to do.
pub(crate) fn resolve(root: &Path, name: Option<&str>) -> Result<Remote, SyncError> {
    let mut c = git();
    c.arg("-C").arg(root).args(["rev-parse", "--git-dir"]);
    let o = run(c, "find the repository")?;
    if !o.status.success() {
        return Err(SyncError::Remote(format!(
            "{} is not in a git repository: walj sync publishes through the project's git remote",
            root.display()
        )));
    }
    let name = match name {
        Some(n) => n.to_string(),
        None => upstream_remote(root).unwrap_or_else(|| "origin".to_string()),
    };
    let url = |push: bool| -> Result<Option<String>, SyncError> {
        let mut c = git();
        c.arg("-C").arg(root).args(["remote", "get-url"]);
        if push {
            c.arg("--push");
        }
        c.arg("--").arg(&name);
        Ok(stdout_line(&run(c, "read the remote's URL")?))
    };
    let Some(fetch_url) = url(false)? else {
        return Err(SyncError::Remote(format!(
            "no git remote named {name:?} in {}; add one (`git remote add {name} URL`) or name another with `walj sync --remote NAME`",
            root.display()
        )));
    };
    let push_url = url(true)?.unwrap_or_else(|| fetch_url.clone());
    let mut c = git();
    c.arg("-C").arg(root).args([
        "config",
        "--local",
        "-z",
        "--get-regexp",
        r"^(core\.sshcommand|credential\..*|http\..*)$",
    ]);
    let settings = run(c, "read the repository's connection settings")
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split('\0')
                .filter(|e| !e.is_empty())
                .filter_map(|e| e.split_once('\n').map(|(k, v)| format!("{k}={v}")))
                .collect()
        })
        .unwrap_or_default();
    Ok(Remote { name, url: fetch_url, push_url, settings })
}

/// `branch.<current>.remote`, unless it is `.` (a local upstream).
fn upstream_remote(root: &Path) -> Option<String> {
    let mut c = git();
    c.arg("-C").arg(root).args(["symbolic-ref", "-q", "--short", "HEAD"]);
    let branch = stdout_line(&c.output().ok()?)?;
    let mut c = git();
    c.arg("-C").arg(root).args(["config", "--get", &format!("branch.{branch}.remote")]);
    stdout_line(&c.output().ok()?).filter(|r| r != ".")
}

impl Remote {
    fn git_on(&self, repo: &Path) -> Command {
        let mut c = git();
        for s in &self.settings {
            c.arg("-c").arg(s);
        }
        c.arg(format!("--git-dir={}", repo.display()));
        c
    }

    /// Lists the remote's journals and fetches the commits walj lacks (`have`: already
    /// fetched), by id: git writes objects into walj's repository and no ref at all (walj
    /// records the refs itself, so a git process killed with walj leaves no lock behind).
    /// When the fetch of all of them fails but the remote answers, they are fetched one by
    /// one, so one damaged journal does not stop the others.
    pub(crate) fn fetch(&self, repo: &Path, have: impl Fn(&str, &str) -> bool) -> Result<Fetched, SyncError> {
        let refs = self.list(repo)?;
        let mut wants: Vec<&str> = refs.iter().filter(|(n, o)| !have(n, o)).map(|(_, o)| o.as_str()).collect();
        wants.sort_unstable();
        wants.dedup();
        let mut failed: Vec<(String, String)> = Vec::new();
        if !wants.is_empty() && self.fetch_ids(repo, &wants).is_err() {
            for oid in wants {
                if let Err(why) = self.fetch_ids(repo, &[oid]) {
                    for (name, _) in refs.iter().filter(|(_, o)| o == oid) {
                        failed.push((name.strip_prefix(JOURNALS).unwrap_or(name).to_string(), why.clone()));
                    }
                }
            }
        }
        let refs = refs
            .into_iter()
            .filter(|(n, _)| !failed.iter().any(|(f, _)| n.strip_prefix(JOURNALS) == Some(f.as_str())))
            .collect();
        Ok(Fetched { refs, failed })
    }

    fn fetch_ids(&self, repo: &Path, oids: &[&str]) -> Result<(), String> {
        let mut c = self.git_on(repo);
        c.args(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules"])
            .arg(&self.url)
            .args(oids);
        let o = run(c, "fetch").map_err(|e| e.to_string())?;
        if o.status.success() { Ok(()) } else { Err(git_reason(&o.stderr)) }
    }

    fn unreachable(&self, reason: &str) -> SyncError {
        SyncError::Remote(format!("cannot reach remote {} ({}): {reason}", self.name, self.url))
    }

    /// The remote's `refs/walj/journals/*`: (ref, commit).
    pub(crate) fn list(&self, repo: &Path) -> Result<Vec<(String, String)>, SyncError> {
        let mut c = self.git_on(repo);
        c.args(["ls-remote", "--refs"]).arg(&self.url).arg(format!("{JOURNALS}*"));
        let o = run(c, "list the remote's refs")?;
        if !o.status.success() {
            return Err(self.unreachable(&git_reason(&o.stderr)));
        }
        Ok(String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.split_once('\t').map(|(oid, name)| (name.to_string(), oid.to_string())))
            .collect())
    }

    /// Pushes `new` to `refs/walj/journals/<id>` if, and only if, the remote's ref is still
    /// `expected` (`None`: must not exist). Never runs the user's push hooks.
    pub(crate) fn push(&self, repo: &Path, id: &str, new: Oid, expected: Option<Oid>) -> Result<(), SyncError> {
        let dst = format!("{JOURNALS}{id}");
        let lease = format!("--force-with-lease={dst}:{}", expected.map(|o| o.to_string()).unwrap_or_default());
        let mut c = self.git_on(repo);
        c.args(["push", "--porcelain", "--no-verify", "--quiet"])
            .arg(lease)
            .arg(&self.push_url)
            .arg(format!("{new}:{dst}"));
        let o = run(c, "push")?;
        if o.status.success() {
            return Ok(());
        }
        let out = String::from_utf8_lossy(&o.stdout);
        if let Some(line) = out.lines().find(|l| l.starts_with('!')) {
            let why = line.rsplit('\t').next().unwrap_or(line).trim();
            if why.contains("stale info") {
                return Err(SyncError::Refused(format!(
                    "{dst} on {} changed since this checkout last pushed it (another checkout with a copy of this .walj/?); refused, nothing was changed",
                    self.name
                )));
            }
            let hint = if why.contains("failed to update ref") {
                " (a push killed on the remote's side can leave its ref lock there: git refuses until `<remote>/refs/walj/…/*.lock` is removed; re-run once it is)"
            } else {
                ""
            };
            return Err(SyncError::Refused(format!("{} refused the push of {dst}: {why}{hint}", self.name)));
        }
        Err(SyncError::Remote(format!(
            "pushing to remote {} ({}): {}",
            self.name,
            self.push_url,
            git_reason(&o.stderr)
        )))
    }
}
