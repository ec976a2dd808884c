//! install, uninstall, doctor.

use std::path::PathBuf;

use crate::claude::doctor::{self, Level};
use crate::claude::paths::{self, SettingsScope};
use crate::claude::settings;
use crate::project::Project;

/// Which settings file `install` and `uninstall` change, and the hook command.
#[derive(clap::Args)]
pub struct SettingsArgs {
    /// .claude/settings.local.json (not committed).
    #[arg(long, conflicts_with = "user")]
    pub local: bool,
    /// ~/.claude/settings.json, or $CLAUDE_CONFIG_DIR/settings.json (every project).
    #[arg(long)]
    pub user: bool,
    /// The hook command (default: `walj hook`, or this binary's absolute path).
    #[arg(long)]
    pub command: Option<String>,
}

fn path_for(scope: SettingsScope, project: &Project) -> PathBuf {
    paths::settings_path(scope, &project.root, &paths::config_dir_or_default())
}

/// The command the hooks run: `walj hook` when `walj` on PATH is this binary, else its
/// absolute path (so hooks keep working from a build folder).
pub fn hook_command(explicit: Option<String>) -> String {
    if let Some(c) = explicit {
        return c;
    }
    let me = std::env::current_exe().ok().and_then(|p| std::fs::canonicalize(p).ok());
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(if cfg!(windows) { "walj.exe" } else { "walj" }))
            .find(|p| p.is_file())
            .and_then(|p| std::fs::canonicalize(p).ok())
    });
    match (me, on_path) {
        (Some(me), Some(p)) if me == p => "walj hook".to_string(),
        (Some(me), _) => format!("'{}' hook", me.display().to_string().replace('\'', "'\\''")),
        _ => "walj hook".to_string(),
    }
}

impl SettingsArgs {
    pub fn scope(&self) -> SettingsScope {
        if self.user {
            SettingsScope::User
        } else if self.local {
            SettingsScope::Local
        } else {
            SettingsScope::Project
        }
    }
}

pub fn install_cmd(project: &Project, args: SettingsArgs) -> anyhow::Result<i32> {
    let (scope, command) = (args.scope(), args.command);
    let cmd = hook_command(command);
    let path = path_for(scope, project);
    let rep = settings::install(&path, &cmd)?;
    if rep.added.is_empty() {
        println!("walj hooks already installed in {} ({} events).", path.display(), rep.already.len());
    } else {
        println!("Installed `{cmd}` in {} for: {}", path.display(), rep.added.join(", "));
        if let Some(b) = &rep.backup {
            println!("Backup of the previous file: {}", b.display());
        }
    }
    project.ensure_dir()?;
    println!("Journal: {}. Claude Code runs the hooks from its next session on.", project.journal.display());
    Ok(0)
}

pub fn uninstall_cmd(project: &Project, args: SettingsArgs) -> anyhow::Result<i32> {
    let (scope, command) = (args.scope(), args.command);
    let cmd = hook_command(command);
    let path = path_for(scope, project);
    let rep = settings::uninstall(&path, &cmd)?;
    if rep.added.is_empty() {
        println!("No walj hooks in {}.", path.display());
    } else {
        println!("Removed walj's hooks from {} for: {}", path.display(), rep.added.join(", "));
        println!("The journal in {} is kept; delete it yourself if you want.", project.dir.display());
    }
    Ok(0)
}

pub fn doctor(project: &Project, command: Option<String>) -> anyhow::Result<i32> {
    let cmd = hook_command(command);
    let mut findings = doctor::check_scopes(&project.root, &paths::config_dir_or_default(), &cmd);
    findings.extend(doctor::check_project(project));
    for f in &findings {
        println!("[{}] {}", f.level, f.message);
        for d in &f.details {
            println!("      {d}");
        }
    }
    Ok(match doctor::worst(&findings) {
        Level::Error => 2,
        Level::Warn => 1,
        Level::Ok => 0,
    })
}
