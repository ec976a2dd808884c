//! `walj watch` (hidden): the per-checkout watcher of Bash snapshots, started detached by a
//! hook (src/bashsnap.rs), never by hand. The work is in [`crate::watch::server`]; this is the
//! command line.

use std::path::PathBuf;
use std::time::Duration;

/// `walj watch --root DIR [--observed FILE]`.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// The checkout's work tree.
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// Where the live observer writes what it saw (JSON lines).
    #[arg(long, value_name = "FILE")]
    pub observed: Option<PathBuf>,
    /// Seconds it stays after the last live session and the last request.
    #[arg(long, default_value_t = 300, env = "WALJ_WATCH_LINGER_SECS")]
    pub linger: u64,
    /// Folders it watches at most (lowers the system's watch limit; tests).
    #[arg(long, env = "WALJ_WATCH_MAX_DIRS")]
    pub max_dirs: Option<usize>,
}

/// Runs the watcher until its lifetime ends (exit 0 also when another one holds the checkout).
pub fn watch(a: &WatchArgs) -> anyhow::Result<i32> {
    #[cfg(unix)]
    {
        let opts = crate::watch::server::Options {
            root: a.root.clone(),
            observed: a.observed.clone(),
            linger: Duration::from_secs(a.linger),
            max_dirs: a.max_dirs.unwrap_or(usize::MAX),
        };
        crate::watch::server::run(&opts)?;
        Ok(0)
    }
    #[cfg(not(unix))]
    {
        let _ = (a, Duration::ZERO);
        anyhow::bail!("walj watch: not available on this platform")
    }
}
