//! `walj tui [--demo]`.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::Context;

use crate::project::Project;
use crate::tui;

/// Opens the dashboard on `project`, or with `demo` on a sample project built in a temp folder,
/// removed when the dashboard closes (kept with `keep`, and then said where).
pub(crate) fn tui_cmd(project: &Project, demo: bool, keep: bool) -> anyhow::Result<i32> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!("walj tui needs a terminal; for scripts use `walj recover` (or `walj recover --json`)");
    }
    if !demo {
        tui::run(project.clone())?;
        return Ok(0);
    }
    let dir = tui::demo::temp_dir()?;
    let exe = std::env::current_exe().context("finding the walj binary to replay the demo hooks")?;
    eprintln!("walj: building the demo project in {} …", dir.display());
    let result = tui::demo::build(&dir, &exe).map_err(anyhow::Error::from).and_then(|()| {
        let demo_project = Project::at(dir.canonicalize().unwrap_or(dir.clone()), None);
        tui::run(demo_project)
    });
    if keep {
        println!("The demo project is in {}", dir.display());
        println!("Try: walj --project {} recover   (remove the folder when done)", dir.display());
    } else if let Err(e) = std::fs::remove_dir_all(&dir) {
        eprintln!("walj: could not remove the demo project {}: {e}", dir.display());
    } else {
        println!("The demo project was removed (`walj tui --demo --keep` keeps it to look around).");
    }
    result.map(|()| 0)
}

/// The hidden helper behind `--demo`: replays the demo hooks in `dir` and exits, so the
/// crashed demo session's process is gone when the dashboard reads the journal.
pub(crate) fn demo_replay(dir: &Path) -> anyhow::Result<i32> {
    let exe = std::env::current_exe().context("finding the walj binary")?;
    tui::demo::replay(dir, &exe)?;
    Ok(0)
}
