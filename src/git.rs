//! Git access (git2). Reads only; walj never changes the user's repository.

use std::path::Path;

use git2::Repository;

/// HEAD commit id and branch name of the repository at `root`, when there is one.
pub fn head_info(root: &Path) -> (Option<String>, Option<String>) {
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
pub fn head_blob(root: &Path, rel: &str) -> Result<Option<Vec<u8>>, git2::Error> {
    let repo = Repository::open(root)?;
    let tree = match repo.head().and_then(|h| h.peel_to_tree()) {
        Ok(t) => t,
        Err(_) => return Ok(None),
    };
    let entry = match tree.get_path(Path::new(rel)) {
        Ok(e) => e,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let blob = repo.find_blob(entry.id())?;
    Ok(Some(blob.content().to_vec()))
}
