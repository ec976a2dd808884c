//! Command implementations behind `main.rs`: each takes parsed arguments and a
//! [`Project`], prints, and returns an exit code or an error for the binary edge.

pub mod import;
pub mod plugin;
pub mod recover;
pub mod sessions;
pub mod setup;
pub mod triage;
pub mod tui;

use std::path::PathBuf;

use crate::project::Project;

/// Options every command takes.
#[derive(Debug, Clone, Default)]
pub struct Global {
    pub project: Option<PathBuf>,
    pub journal: Option<PathBuf>,
}

impl Global {
    pub fn project(&self) -> anyhow::Result<Project> {
        let cwd = std::env::current_dir()?;
        Ok(Project::discover(self.project.as_deref(), &cwd, self.journal.as_deref()))
    }
}
