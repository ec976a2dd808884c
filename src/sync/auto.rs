//! `[sync] auto = true`: a sync after each SessionEnd and Stop, in a detached background
//! process (the pattern of `[retention] auto`, [`crate::retention`]): the hook only starts
//! `walj sync --auto` and returns, so the sync never runs inside a hook's time. A claim file
//! (`.walj/sync/auto`, created exclusively by the run) keeps two from running at once; the
//! hook starts none while it is held. The automatic run never asks anything: a remote not
//! agreed to (plain text), or a passphrase that is neither kept nor in `WALJ_PASSPHRASE`, ends
//! it quietly. What it did is in `.walj/sync/auto.last`.
//!
//! It starts only once the first `walj sync` was run by hand (the journal id exists in walj's
//! state folder, which git never carries: [`super::identity`]): that is where the remote is
//! named, and where what it publishes is shown. `[sync] auto` counts only from a config git
//! does not track (`crate::config::Config::safe_part`).

use std::io;
use std::path::PathBuf;

use super::Paths;
use crate::config::Config;
use crate::project::Project;

fn claim_path(project: &Project) -> PathBuf {
    Paths::new(project).dir.join("auto")
}

/// `.walj/sync/auto.last`: when the last automatic sync ran and what it did (JSON).
pub(crate) fn last_path(project: &Project) -> PathBuf {
    Paths::new(project).dir.join("auto.last")
}

/// Starts a background sync when `[sync] auto` asks for it, this checkout has synced by hand
/// before and no automatic sync runs. Returns whether one was started. Cheap: a few `stat`s.
pub(crate) fn maybe_spawn(project: &Project, cfg: &Config) -> io::Result<bool> {
    if !cfg.sync.auto || crate::retention::held(&claim_path(project)) {
        return Ok(false);
    }
    let paths = Paths::new(project);
    super::identity::migrate(&paths);
    if !paths.id.is_file() {
        return Ok(false);
    }
    crate::retention::spawn_detached(project, &["sync", "--auto"])?;
    Ok(true)
}

/// The right to run the automatic sync (released on drop), or `None` when another holds it.
pub(crate) fn claim(project: &Project) -> io::Result<Option<crate::retention::Claim>> {
    crate::fsutil::create_private_dir(&Paths::new(project).dir)?;
    crate::retention::claim_file(claim_path(project))
}
