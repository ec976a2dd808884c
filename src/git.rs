//! Git access (git2). Reads only; walj never changes the user's repository.

use std::path::{Path, PathBuf};

use git2::Repository;

/// HEAD commit id and branch name of the repository at `root`, when there is one.
pub(crate) fn head_info(root: &Path) -> (Option<String>, Option<String>) {
    let Ok(repo) = Repository::open(root) else { return (None, None) };
    let Ok(head) = repo.head() else {
        // An unborn branch: HEAD names a branch with no commit yet.
        let branch = repo
            .find_reference("HEAD")
            .ok()
            .and_then(|r| r.symbolic_target().ok().flatten().map(|t| t.trim_start_matches("refs/heads/").to_string()));
        return (None, branch);
    };
    let oid = head.target().map(|o| o.to_string());
    let branch = if head.is_branch() { head.shorthand().ok().map(str::to_string) } else { None };
    (oid, branch)
}

/// The bytes of `rel` (`/`-separated) in HEAD's tree; `Ok(None)` when HEAD lacks the path.
pub(crate) fn head_blob(root: &Path, rel: &str) -> Result<Option<Vec<u8>>, git2::Error> {
    let repo = Repository::open(root)?;
    let tree = match repo.head().and_then(|h| h.peel_to_tree()) {
        Ok(t) => t,
        Err(_) => return Ok(None),
    };
    let entry = match tree.get_path(&crate::fsutil::name::to_path(rel)) {
        Ok(e) => e,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let blob = repo.find_blob(entry.id())?;
    Ok(Some(blob.content().to_vec()))
}

/// Where HEAD points: the branch (when HEAD is symbolic) and the commit id (when there is one).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Head {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Where a checkout's git files are: its own git dir (`.git`, or where a linked worktree's or
/// submodule's `gitdir:` file points) and the common dir its refs live in (`commondir`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitDirs {
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
}

/// The git dirs of the checkout whose top level is `top`, read from its `.git` (no git
/// process): `None` when `top` has no `.git`, or a `.git` file that names no `gitdir:`.
pub(crate) fn dirs_at(top: &Path) -> Option<GitDirs> {
    let dot = top.join(".git");
    let meta = std::fs::metadata(&dot).ok()?;
    dirs_of(top, dot, &meta)
}

/// [`dirs_at`] with `top/.git` already stat-ed (`meta`, links followed).
fn dirs_of(top: &Path, dot: PathBuf, meta: &std::fs::Metadata) -> Option<GitDirs> {
    let git_dir = if meta.is_dir() {
        dot
    } else {
        let text = std::fs::read_to_string(&dot).ok()?;
        let target = Path::new(text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim());
        if target.is_absolute() { target.to_path_buf() } else { top.join(target) }
    };
    let common_dir = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(c) => {
            let p = Path::new(c.trim());
            if p.is_absolute() { p.to_path_buf() } else { git_dir.join(p) }
        }
        Err(_) => git_dir.clone(),
    };
    Some(GitDirs { git_dir, common_dir })
}

/// The first checkout at or above `start`: its top level and its git dirs.
pub(crate) fn find(start: &Path) -> Option<(PathBuf, GitDirs)> {
    // One `stat` per folder: the first `.git` found is also the one read (the hook's trust
    // check runs this on every event).
    let (top, dot, meta) = start.ancestors().find_map(|d| {
        let dot = d.join(".git");
        std::fs::metadata(&dot).ok().map(|m| (d, dot, m))
    })?;
    Some((top.to_path_buf(), dirs_of(top, dot, &meta)?))
}

/// HEAD of the checkout at `root`, read from git's files (a hook can afford it: two or three
/// small reads, no git process, no repository open): `.git/HEAD` or a worktree's `gitdir:`
/// file, the loose ref, else `packed-refs` (its `commondir` for worktrees). A reftable
/// repository, or anything these files do not answer, goes through git2. `None` outside git.
pub(crate) fn head_state(root: &Path) -> Option<Head> {
    let GitDirs { git_dir, common_dir: common } = dirs_at(root)?;
    let from_git2 = || {
        let (id, branch) = head_info(root);
        Some(Head { branch, id })
    };
    if common.join("reftable").exists() {
        return from_git2();
    }
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(target) = head.strip_prefix("ref:").map(str::trim) else {
        // Detached: HEAD holds the id.
        return Some(Head { branch: None, id: is_oid(head).then(|| head.to_string()) });
    };
    let branch = target.strip_prefix("refs/heads/").unwrap_or(target).to_string();
    if let Ok(id) = std::fs::read_to_string(common.join(target)) {
        let id = id.trim();
        if is_oid(id) {
            return Some(Head { branch: Some(branch), id: Some(id.to_string()) });
        }
        return from_git2();
    }
    let packed = std::fs::read_to_string(common.join("packed-refs")).unwrap_or_default();
    let id = packed.lines().find_map(|l| {
        let (id, name) = l.split_once(' ')?;
        (name.trim() == target && is_oid(id)).then(|| id.to_string())
    });
    // An unborn branch has neither: HEAD names it, no commit yet.
    Some(Head { branch: Some(branch), id })
}

/// A git operation stopped half-way in the checkout at `root` (a rebase or merge waiting on a
/// conflict, a cherry-pick, a revert, a bisect), read from its git dir's marker files (no git
/// process): its words and the marker ("a rebase is in progress (.git/rebase-merge)"). `None`
/// outside git or when none is.
pub(crate) fn operation_in_progress(root: &Path) -> Option<String> {
    let GitDirs { git_dir, .. } = dirs_at(root)?;
    const MARKERS: [(&str, &str); 6] = [
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase (or `git am`)"),
        ("MERGE_HEAD", "a merge"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
        ("BISECT_LOG", "a bisect"),
    ];
    let (marker, what) = MARKERS.iter().find(|(m, _)| git_dir.join(m).exists())?;
    let shown = match git_dir.strip_prefix(root) {
        Ok(rel) => rel.join(marker).to_string_lossy().into_owned(),
        Err(_) => git_dir.join(marker).to_string_lossy().into_owned(),
    };
    Some(format!("{what} is in progress ({shown})"))
}

fn is_oid(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The commits reachable from `new` and not from `old` (`old..new`), newest first, at most
/// `max`: (id, first line of the message). Empty when either is unknown or not a commit.
pub(crate) fn commits_between(root: &Path, old: &str, new: &str, max: usize) -> Vec<(String, String)> {
    let run = || -> Result<Vec<(String, String)>, git2::Error> {
        let repo = Repository::open(root)?;
        let mut walk = repo.revwalk()?;
        walk.push(git2::Oid::from_str(new)?)?;
        walk.hide(git2::Oid::from_str(old)?)?;
        let mut out = Vec::new();
        for oid in walk.take(max) {
            let oid = oid?;
            let c = repo.find_commit(oid)?;
            out.push((oid.to_string(), c.summary().ok().flatten().unwrap_or_default().to_string()));
        }
        Ok(out)
    };
    run().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn head_state_reads_loose_packed_detached_unborn_and_worktrees_like_git2() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        assert_eq!(head_state(&root), Some(Head { branch: Some("main".into()), id: None }), "unborn");
        std::fs::write(root.join("a"), "a").unwrap();
        git(&root, &["add", "a"]);
        git(&root, &["commit", "-qm", "one"]);
        let same = |root: &Path| {
            let (id, branch) = head_info(root);
            assert_eq!(head_state(root), Some(Head { branch, id }));
        };
        same(&root);
        git(&root, &["pack-refs", "--all"]);
        assert!(!root.join(".git/refs/heads/main").exists());
        same(&root);
        git(&root, &["checkout", "-q", "-b", "x"]);
        same(&root);
        git(&root, &["checkout", "-q", "--detach"]);
        same(&root);
        assert_eq!(head_state(&root).unwrap().branch, None);
        git(&root, &["checkout", "-q", "main"]);
        let wt = dir.path().join("wt");
        git(&root, &["worktree", "add", "-q", "-b", "side", wt.to_str().unwrap()]);
        same(&wt);
        assert_eq!(head_state(&wt).unwrap().branch.as_deref(), Some("side"));
        assert_eq!(head_state(dir.path()), None, "not a checkout");
        let (old, _) = head_info(&root);
        std::fs::write(root.join("b"), "b").unwrap();
        git(&root, &["add", "b"]);
        git(&root, &["commit", "-qm", "two"]);
        let (new, _) = head_info(&root);
        let made = commits_between(&root, &old.unwrap(), &new.unwrap(), 10);
        assert_eq!(made.iter().map(|c| c.1.as_str()).collect::<Vec<_>>(), ["two"]);
    }
}
