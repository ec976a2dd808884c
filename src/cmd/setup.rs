//! install, uninstall, doctor.

use std::path::{Path, PathBuf};

use crate::fold::{Fold, FoldOptions};
use crate::install::{self, Level, SettingsScope};
use crate::project::Project;

fn home() -> PathBuf {
    std::env::home_dir().unwrap_or_else(|| PathBuf::from("."))
}

/// The user's settings file, in Claude Code's folder (which honours `$CLAUDE_CONFIG_DIR`).
fn user_settings(home: &Path) -> PathBuf {
    crate::import::claude_config_dir().unwrap_or_else(|| home.join(".claude")).join("settings.json")
}

fn path_for(scope: SettingsScope, project: &Project) -> PathBuf {
    let home = home();
    match scope {
        SettingsScope::User => user_settings(&home),
        _ => install::settings_path(scope, &project.root, &home),
    }
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

pub fn scope(local: bool, user: bool) -> SettingsScope {
    if user {
        SettingsScope::User
    } else if local {
        SettingsScope::Local
    } else {
        SettingsScope::Project
    }
}

pub fn install_cmd(project: &Project, scope: SettingsScope, command: Option<String>) -> anyhow::Result<i32> {
    let cmd = hook_command(command);
    let path = path_for(scope, project);
    let rep = install::install(&path, &cmd)?;
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

pub fn uninstall_cmd(project: &Project, scope: SettingsScope, command: Option<String>) -> anyhow::Result<i32> {
    let cmd = hook_command(command);
    let path = path_for(scope, project);
    let rep = install::uninstall(&path, &cmd)?;
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
    let home = home();
    let mut findings = install::check_scopes(&project.root, &home, &cmd);
    let user = user_settings(&home);
    if user != install::settings_path(SettingsScope::User, &project.root, &home) {
        findings.extend(install::check_settings(&user, &cmd));
    }
    for f in &findings {
        println!("[{}] {}", f.level, f.message);
    }
    let mut worst = install::worst(&findings);
    match Fold::load(&project.journal, &FoldOptions::default()) {
        Ok(fold) => {
            println!(
                "[{}] journal {}: {} records, {} problems",
                if fold.report.problems.is_empty() { Level::Ok } else { Level::Warn },
                project.journal.display(),
                fold.records,
                fold.report.problems.len()
            );
            for p in fold.report.problems.iter().take(5) {
                println!("      {p}");
            }
            if !fold.report.problems.is_empty() {
                worst = worst.max(Level::Warn);
            }
        }
        Err(e) => {
            println!("[{}] journal {}: {e}", Level::Error, project.journal.display());
            worst = Level::Error;
        }
    }
    if let Ok(text) = std::fs::read_to_string(project.errors_log()) {
        let n = text.lines().count();
        if n > 0 {
            println!(
                "[{}] {} hook errors logged in {}; last: {}",
                Level::Warn,
                n,
                project.errors_log().display(),
                text.lines().last().unwrap_or("")
            );
            worst = worst.max(Level::Warn);
        }
    }
    Ok(match worst {
        Level::Error => 2,
        Level::Warn => 1,
        Level::Ok => 0,
    })
}
