//! install, uninstall, doctor.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::agents::Agent;
use crate::agents::install as agent_install;
use crate::claude::paths::{self, SettingsScope};
use crate::claude::settings;
use crate::doctor;
use crate::present::Tone;
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
    /// Another coding agent's settings instead of Claude Code's: codex (.codex/hooks.json),
    /// gemini (.gemini/settings.json) or copilot (.github/hooks/walj.json); with --user, the
    /// agent's user settings.
    #[arg(long, value_name = "NAME", conflicts_with = "local")]
    pub agent: Option<String>,
    /// Confirm: required when Claude runs this (inside a Claude Code tool call).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// How Claude Code's hooks run walj: exec (`"command": "walj", "args": ["hook"]`, no shell;
    /// Claude Code 2.1.139 and later) or shell (`"command": "walj hook"`). Default: what the
    /// `claude` on PATH honours (`claude --version`), exec form when there is none.
    #[arg(long, value_enum, value_name = "FORM")]
    pub form: Option<FormArg>,
    /// walj's MCP server (`walj mcp`, read-only) instead of the hooks: the project's .mcp.json
    /// (committed; asks first), or with --local/--user the `claude mcp add` line to run.
    #[arg(long, conflicts_with_all = ["agent", "command", "form"])]
    pub mcp: bool,
}

/// `--form`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormArg {
    Exec,
    Shell,
}

/// The hook form `walj install` writes for Claude Code, and a line saying why when it was not
/// asked for (see [`SettingsArgs::form`]).
fn hook_form(
    explicit: Option<FormArg>,
    claude: Option<&crate::claude::version::Installed>,
) -> (settings::HookForm, Option<String>) {
    use settings::HookForm;
    let since = settings::exec_form_since();
    match explicit {
        Some(FormArg::Exec) => return (HookForm::Exec, None),
        Some(FormArg::Shell) => return (HookForm::Shell, None),
        None => {}
    }
    let Some(claude) = claude else {
        return (
            HookForm::Exec,
            Some(format!(
                "no `claude` on PATH answered `--version`: wrote exec form, which Claude Code honours from {since} on \
                 (an older one runs `walj` without arguments, which walj takes for the hook). `--form shell` writes \
                 shell form."
            )),
        );
    };
    let who = format!("{} ({})", claude.text, claude.program.display());
    match HookForm::for_version(&claude.text) {
        Some(HookForm::Exec) => (HookForm::Exec, None),
        Some(HookForm::Shell) => (
            HookForm::Shell,
            Some(format!(
                "Claude Code {who} is older than {since}, which ignores a hook's `args`: wrote shell form. After \
                 `claude update`, `walj uninstall` then `walj install` writes exec form (no shell in between)."
            )),
        ),
        None => (
            HookForm::Exec,
            Some(format!(
                "`claude --version` said {:?}, no version: wrote exec form (Claude Code {since} or later)",
                claude.text
            )),
        ),
    }
}

/// The hook events only newer Claude Code versions fire that the installed one does
/// ([`crate::claude::events::VERSIONED_EVENTS`]), and what to tell about the others: an
/// unknown version gets none of them (an older Claude Code would be handed an event it does
/// not know), said once.
fn versioned_events(claude: Option<&crate::claude::version::Installed>) -> (Vec<&'static str>, Option<String>) {
    use crate::claude::events::{VERSIONED_EVENTS, versioned_events};
    let version = claude.and_then(|c| settings::parse_version(&c.text));
    let events = versioned_events(version);
    let left: Vec<String> = VERSIONED_EVENTS
        .iter()
        .filter(|(name, _)| !events.contains(name))
        .map(|(name, since)| format!("{name} (Claude Code {})", since.map(|n| n.to_string()).join(".")))
        .collect();
    let note = (version.is_none() && !left.is_empty()).then(|| {
        format!(
            "Claude Code's version is unknown (no `claude` on PATH answered `--version`): not hooked: {}. Run `walj install` again where `claude` is on PATH to add {}.",
            left.join(", "),
            if left.len() == 1 { "it" } else { "them" }
        )
    });
    (events, note)
}

fn path_for(scope: SettingsScope, project: &Project) -> PathBuf {
    paths::settings_path(scope, &project.root, &paths::config_dir_or_default())
}

/// The command the hooks run: `walj hook` when `walj` on PATH is this binary, else its
/// absolute path (so hooks keep working from a build folder).
pub(crate) fn hook_command(explicit: Option<String>) -> String {
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
    // Run through the npm package's shim (`walj` on PATH is `bin/walj.js`, which runs this
    // binary and names itself in [`NPM_SHIM_ENV`]): `walj hook` reaches this binary too.
    let shim = std::env::var_os(NPM_SHIM_ENV).and_then(|s| std::fs::canonicalize(s).ok());
    match (me, on_path) {
        (Some(me), Some(p)) if me == p => "walj hook".to_string(),
        (Some(_), Some(p)) if shim.as_ref() == Some(&p) => "walj hook".to_string(),
        (Some(me), _) => format!("'{}' hook", me.display().to_string().replace('\'', "'\\''")),
        _ => "walj hook".to_string(),
    }
}

/// Run through the npm package's launcher (`walj` on PATH is its sh script, which `exec`s this
/// binary and names itself in [`NPM_SHIM_ENV`]), from a stable install (not an npx cache): the
/// hook command that runs this binary directly, `'<npm prefix>/…/@walj/<os>-<cpu>/bin/walj' hook`,
/// so each hook skips the launcher's sh and readlink. The path stays across `npm update -g`
/// (the package is replaced in place). `None` elsewhere.
pub(crate) fn npm_direct_command() -> Option<String> {
    let shim = std::env::var_os(NPM_SHIM_ENV).and_then(|s| std::fs::canonicalize(s).ok())?;
    let me = std::env::current_exe().ok().and_then(|p| std::fs::canonicalize(p).ok())?;
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("walj"))
            .find(|p| p.is_file())
            .and_then(|p| std::fs::canonicalize(p).ok())
    })?;
    if on_path != shim || me == shim || in_npx_cache(&me) || in_npx_cache(&shim) {
        return None;
    }
    Some(format!("'{}' hook", me.display().to_string().replace('\'', "'\\''")))
}

impl SettingsArgs {
    pub(crate) fn scope(&self) -> SettingsScope {
        if self.user {
            SettingsScope::User
        } else if self.local {
            SettingsScope::Local
        } else {
            SettingsScope::Project
        }
    }
}

/// Where `install`/`uninstall` keep the backup of a settings file they change: the user's
/// settings beside themselves (not in a project), a project's in `.walj/backups/` (never in the
/// committed `.claude/`).
fn backup_dir(scope: SettingsScope, project: &Project) -> anyhow::Result<Option<PathBuf>> {
    Ok(match scope {
        SettingsScope::User => None,
        _ => {
            project.ensure_dir()?;
            Some(project.dir.join("backups"))
        }
    })
}

/// Exit code of an install refused because it would commit a machine-specific path.
pub(crate) const EXIT_REFUSED: i32 = 2;

/// Set by the npm package's shim (`bin/walj.js`) for the binary it runs: the shim's own path.
pub(crate) const NPM_SHIM_ENV: &str = "WALJ_NPM_SHIM";

/// Where npm keeps what `npx walj` fetched: a cache npm cleans (`npm cache clean`, an npx of
/// another version), so a hook pointing into it would break.
fn in_npx_cache(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "_npx")
}

/// When this walj runs from an npx cache (its binary, or the npm shim that ran it): the path.
fn npx_cache_path() -> Option<PathBuf> {
    let me = std::env::current_exe().ok().and_then(|p| std::fs::canonicalize(p).ok());
    let shim = std::env::var_os(NPM_SHIM_ENV).map(PathBuf::from);
    [me, shim].into_iter().flatten().find(|p| in_npx_cache(p))
}

/// The refusal of `walj install` run from an npx cache, unless `--command` names the hook.
fn refuse_npx(explicit: bool) -> Option<i32> {
    let path = npx_cache_path().filter(|_| !explicit)?;
    eprintln!(
        "walj: refused: this walj runs from npm's npx cache ({}), which npm cleans: hooks pointing there would \
         break without a word. Install walj for good (`npm install -g` of the walj package and its platform package, or \
         `cargo install --path .` in a walj checkout), then run `walj install` again; or give the hook's command with `--command`.",
        path.display()
    );
    Some(EXIT_REFUSED)
}

/// Walj plugins that already journal this project: enabled in Claude Code's settings, or the
/// plugin folder this walj runs from (`claude --plugin-dir`).
fn walj_plugins(project: &Project, command: &str) -> Vec<PathBuf> {
    let (found, _) = doctor::plugins::discover(&project.root, &paths::config_dir_or_default(), command);
    let mut roots: Vec<PathBuf> = found.into_iter().map(|p| p.root).collect();
    if let Some(r) = crate::plugin::running_root()
        && !roots.iter().any(|x| std::fs::canonicalize(x).ok().as_ref() == Some(&r))
    {
        roots.push(r);
    }
    roots
}

/// `walj install` while a walj plugin journals the project: the hooks would run twice. Asks on
/// a terminal; off one (a script, Claude's Bash tool) refuses unless `--yes`. `Some(code)`:
/// stop with that exit code.
fn confirm_beside_plugin(project: &Project, command: &str, yes: bool) -> anyhow::Result<Option<i32>> {
    use std::io::IsTerminal;
    let plugins = walj_plugins(project, command);
    if plugins.is_empty() || yes {
        return Ok(None);
    }
    let list: Vec<String> = plugins.iter().map(|p| p.display().to_string()).collect();
    let why = format!(
        "the walj plugin already journals this project ({}): with `walj install`'s hooks too, every event \
         would be journaled twice",
        list.join(", ")
    );
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        eprintln!("walj: {why}.");
        if super::prompt::confirm("Install the hooks anyway?")? {
            return Ok(None);
        }
        eprintln!("walj: nothing installed.");
        return Ok(Some(1));
    }
    eprintln!("walj: refused: {why}. Disable the plugin, or run `walj install --yes` to install anyway.");
    Ok(Some(1))
}

/// `--agent NAME`: `None` for Claude Code (the default install).
fn other_agent(args: &SettingsArgs) -> anyhow::Result<Option<Agent>> {
    let Some(name) = &args.agent else { return Ok(None) };
    match Agent::parse(name) {
        Some(Agent::ClaudeCode) => Ok(None),
        Some(a) => Ok(Some(a)),
        None => anyhow::bail!("unknown agent {name:?}: claude, codex, gemini or copilot"),
    }
}

fn agent_scope(args: &SettingsArgs) -> agent_install::Scope {
    if args.user { agent_install::Scope::User } else { agent_install::Scope::Project }
}

/// `walj install --agent NAME`: walj's hooks in that agent's settings.
fn install_agent(project: &Project, args: SettingsArgs, agent: Agent) -> anyhow::Result<i32> {
    let scope = agent_scope(&args);
    let explicit = args.command.is_some();
    let base = hook_command(args.command);
    let path = agent_install::hooks_file(agent, scope, &project.root);
    if scope == agent_install::Scope::Project && !explicit && base != "walj hook" {
        eprintln!(
            "walj: refused: `walj` on PATH is not this binary, and its absolute path ({base}) would be committed in {}, where it works on this machine only. Use `--user`, put walj on PATH (`cargo install --path .`), or give `--command`.",
            path.display()
        );
        return Ok(EXIT_REFUSED);
    }
    let backups =
        if scope == agent_install::Scope::Project { backup_dir(SettingsScope::Project, project)? } else { None };
    let out = agent_install::install(agent, scope, &project.root, &base, backups.as_deref())?;
    let cmd = agent_install::command(&base, agent);
    if out.report.added.is_empty() {
        println!("walj hooks already installed in {} ({} events).", path.display(), out.report.already.len());
    } else {
        println!("Installed `{cmd}` in {} for: {}", path.display(), out.report.added.join(", "));
        if let Some(b) = &out.report.backup {
            println!("Backup of the previous file: {}", b.display());
        }
    }
    if let Some(t) = &out.trust_file {
        println!("Trusted walj's hooks for Codex in {} (Codex skips untrusted hooks).", t.display());
    }
    for n in &out.notes {
        println!("Note: {n}");
    }
    project.ensure_dir()?;
    say_walj_dir_ignored(project);
    println!("Journal: {}. {} runs the hooks from its next session on.", project.journal.display(), agent.label());
    Ok(0)
}

fn uninstall_agent(project: &Project, args: SettingsArgs, agent: Agent) -> anyhow::Result<i32> {
    let scope = agent_scope(&args);
    let base = hook_command(args.command);
    let path = agent_install::hooks_file(agent, scope, &project.root);
    let backups = if scope == agent_install::Scope::Project && path.exists() {
        backup_dir(SettingsScope::Project, project)?
    } else {
        None
    };
    let out = agent_install::uninstall(agent, scope, &project.root, &base, backups.as_deref())?;
    if out.report.added.is_empty() {
        println!("No walj hooks in {}.", path.display());
    } else {
        println!("Removed walj's hooks from {} for: {}", path.display(), out.report.added.join(", "));
        if let Some(t) = &out.trust_file {
            println!("Removed their trust from {}.", t.display());
        }
        println!("The journal in {} is kept; delete it yourself if you want.", project.dir.display());
    }
    for n in &out.notes {
        println!("Note: {n}");
    }
    Ok(0)
}

pub(crate) fn install_cmd(project: &Project, args: SettingsArgs) -> anyhow::Result<i32> {
    if let Some(agent) = other_agent(&args)? {
        return install_agent(project, args, agent);
    }
    let scope = args.scope();
    let explicit = args.command.is_some();
    if let Some(code) = refuse_npx(explicit) {
        return Ok(code);
    }
    let yes = args.yes;
    let mut cmd = hook_command(args.command);
    let path = path_for(scope, project);
    // Through the npm launcher: settings that stay on this machine run the binary itself (no
    // shell per hook); committed ones keep `walj hook`, which works on every machine.
    let mut npm_note = None;
    if !explicit && let Some(direct) = npm_direct_command() {
        if scope == SettingsScope::Project {
            npm_note = Some(
                "the hooks run `walj hook` through the npm launcher (a sh exec per hook, docs/performance.md); \
                 `walj install --local` or `--user` writes the binary's own path and skips it"
                    .to_string(),
            );
        } else {
            npm_note = Some(format!(
                "the hooks run the npm package's binary directly ({}), not the launcher on PATH: no shell per hook",
                direct.trim_end_matches(" hook")
            ));
            cmd = direct;
        }
    }
    if let Some(code) = confirm_beside_plugin(project, &cmd, yes)? {
        return Ok(code);
    }
    if scope == SettingsScope::Project && !explicit && cmd != "walj hook" {
        eprintln!(
            "walj: refused: `walj` on PATH is not this binary, and its absolute path ({cmd}) would be committed in {}, where it works on this machine only. Use `walj install --local` (not committed) or `--user`, or put walj on PATH (`cargo install --path .`), or give `--command`.",
            path.display()
        );
        return Ok(EXIT_REFUSED);
    }
    // `claude --version`: a process at install time (never in a hook), for the hook form and
    // the events only newer versions fire.
    let claude = crate::claude::version::installed();
    let (mut form, why) = hook_form(args.form, claude.as_ref());
    if settings::plain_words(&cmd).is_none() {
        form = settings::HookForm::Shell;
    }
    let (extra, unversioned) = versioned_events(claude.as_ref());
    let before = Created::before(scope, &path);
    let rep = settings::install_with(&path, &cmd, form, &extra, backup_dir(scope, project)?.as_deref())?;
    if !rep.added.is_empty()
        && let Err(e) = before.record(project)
    {
        eprintln!("walj: warning: could not note what install created (uninstall may leave it): {e:#}");
    }
    if rep.added.is_empty() {
        println!("walj hooks already installed in {} ({} events).", path.display(), rep.already.len());
    } else {
        let how = match form {
            settings::HookForm::Exec => "exec form",
            settings::HookForm::Shell => "shell form",
        };
        println!("Installed `{cmd}` ({how}) in {} for: {}", path.display(), rep.added.join(", "));
        if let Some(b) = &rep.backup {
            println!("Backup of the previous file: {}", b.display());
        }
        if let Some(why) = why {
            println!("Note: {why}");
        }
        if let Some(n) = &npm_note {
            println!("Note: {n}");
        }
    }
    if let Some(n) = unversioned {
        println!("Note: {n}");
    }
    if scope == SettingsScope::Project {
        subfolder_copy(project, &cmd, form, &extra)?;
    }
    if scope == SettingsScope::Local {
        match ignore_local_settings(project, &path) {
            Ok(Some(exclude)) => println!("{} is now git-ignored (in {}).", path.display(), exclude.display()),
            Ok(None) => {}
            Err(e) => eprintln!("walj: warning: could not make sure {} is git-ignored: {e:#}", path.display()),
        }
    }
    project.ensure_dir()?;
    // After a `walj uninstall` here: SessionStart imports sessions its hooks never saw again,
    // from now on (those run while walj was uninstalled were run without it by choice).
    if let Err(e) = crate::import::auto::mark_installed(project) {
        eprintln!("walj: warning: {}: {e}", crate::import::auto::uninstalled_path(project).display());
    }
    say_walj_dir_ignored(project);
    println!("Journal: {}. Claude Code runs the hooks from its next session on.", project.journal.display());
    Ok(0)
}

/// The same hooks in the root's `.claude/settings.local.json`: Claude Code started in a
/// subfolder (`cd pkg/core && claude`) runs the hooks of the root's `settings.local.json`
/// but not those of its `settings.json`; started at the root it runs both, and identical
/// hooks once (checked with 2.1.328 and 2.1.332: docs/project-root.md). Same command, same
/// form, or the root would run them twice.
fn subfolder_copy(project: &Project, cmd: &str, form: settings::HookForm, extra: &[&str]) -> anyhow::Result<()> {
    let local = path_for(SettingsScope::Local, project);
    let rep = settings::install_with(&local, cmd, form, extra, backup_dir(SettingsScope::Local, project)?.as_deref())?;
    if !rep.added.is_empty() {
        println!(
            "Also in {} (not committed), for sessions started in a subfolder: Claude Code reads the root's settings.json only for sessions started at the root (identical hooks run once).",
            local.display()
        );
    }
    match ignore_local_settings(project, &local) {
        Ok(Some(exclude)) => println!("{} is now git-ignored (in {}).", local.display(), exclude.display()),
        Ok(None) => {}
        Err(e) => eprintln!("walj: warning: could not make sure {} is git-ignored: {e:#}", local.display()),
    }
    Ok(())
}

/// Makes sure the local settings file is git-ignored: when the project is a git repository and
/// git does not ignore it yet, adds it to the repository's `info/exclude` (not committed, so no
/// project file changes). Returns the exclude file when it added the line.
fn ignore_local_settings(project: &Project, settings: &Path) -> anyhow::Result<Option<PathBuf>> {
    let parent = settings.parent().and_then(|p| p.canonicalize().ok()).unwrap_or_default();
    exclude_unless_ignored(project, &parent, settings.file_name().unwrap_or_default().as_ref(), None)
}

/// Makes sure git ignores walj's folder: when nothing ignores a file in `.walj/` (its own
/// `.gitignore` removed, or a folder walj adopted), `/.walj/` goes into the repository's
/// `info/exclude` (never committed), so a `git add -A` does not commit the journal.
fn ignore_walj_dir(project: &Project) -> anyhow::Result<Option<PathBuf>> {
    let parent = project.root.canonicalize().unwrap_or_else(|_| project.root.clone());
    exclude_unless_ignored(project, &parent, Path::new(".walj/"), Some(Path::new(".walj/journal.jsonl")))
}

/// Adds `parent/name` (relative to the work tree) to `info/exclude` when git does not ignore
/// it (or `probe`, a path below it, when given). Returns the exclude file when it added a line.
fn exclude_unless_ignored(
    project: &Project,
    parent: &Path,
    name: &Path,
    probe: Option<&Path>,
) -> anyhow::Result<Option<PathBuf>> {
    let Ok(repo) = git2::Repository::discover(&project.root) else {
        return Ok(None);
    };
    let Some(workdir) = repo.workdir().and_then(|w| w.canonicalize().ok()) else {
        return Ok(None);
    };
    let Ok(rel_dir) = parent.strip_prefix(&workdir) else {
        return Ok(None);
    };
    let rel = rel_dir.join(name);
    if repo.is_path_ignored(rel_dir.join(probe.unwrap_or(name)))? {
        return Ok(None);
    }
    let exclude = repo.commondir().join("info").join("exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let line = format!("/{}", rel.to_string_lossy().replace('\\', "/"));
    if text.lines().any(|l| l.trim_end() == line) {
        return Ok(None);
    }
    text.push_str(&line);
    text.push('\n');
    if let Some(d) = exclude.parent() {
        std::fs::create_dir_all(d)?;
    }
    crate::fsutil::atomic_write(&exclude, text.as_bytes(), crate::fsutil::file_mode(&exclude))?;
    Ok(Some(exclude))
}

fn say_walj_dir_ignored(project: &Project) {
    match ignore_walj_dir(project) {
        Ok(Some(exclude)) => println!("{} is now git-ignored (in {}).", project.dir.display(), exclude.display()),
        Ok(None) => {}
        Err(e) => eprintln!("walj: warning: could not make sure {} is git-ignored: {e:#}", project.dir.display()),
    }
}

pub(crate) fn uninstall_cmd(project: &Project, args: SettingsArgs) -> anyhow::Result<i32> {
    if let Some(agent) = other_agent(&args)? {
        return uninstall_agent(project, args, agent);
    }
    let scope = args.scope();
    let cmd = hook_command(args.command);
    let path = path_for(scope, project);
    let backups = if path.exists() { backup_dir(scope, project)? } else { None };
    let rep = settings::uninstall_to(&path, &cmd, backups.as_deref())?;
    if rep.added.is_empty() {
        println!("No walj hooks in {}.", path.display());
    } else {
        println!("Removed walj's hooks from {} for: {}", path.display(), rep.added.join(", "));
    }
    if scope == SettingsScope::Project {
        // The copy `walj install` made for sessions started in a subfolder (before the folder
        // `.claude/` is looked at below: install may have created both).
        let local = path_for(SettingsScope::Local, project);
        if local.exists() {
            let rep = settings::uninstall_to(&local, &cmd, backup_dir(SettingsScope::Local, project)?.as_deref())?;
            if !rep.added.is_empty() {
                println!("Removed walj's hooks from {} for: {}", local.display(), rep.added.join(", "));
            }
            // Nothing left but `{}`: the file install made goes (a user's own file stays).
            if let Ok(Some(v)) = settings::read_json(&local)
                && v.as_object().is_some_and(|o| o.is_empty())
            {
                let _ = std::fs::remove_file(&local);
            }
        }
    }
    if !rep.added.is_empty() {
        if scope != SettingsScope::User {
            for removed in Created::undo(project, &path)? {
                println!("Removed {} (install created it; nothing else was in it).", removed.display());
            }
        }
        println!("The journal in {} is kept; delete it yourself if you want.", project.dir.display());
    }
    // The MCP server `walj install --mcp` declared goes with the hooks.
    if scope == SettingsScope::Project && crate::mcp::install::remove(&crate::mcp::install::path(project))? {
        println!("Removed walj's MCP server from {}.", crate::mcp::install::path(project).display());
    }
    // Sessions from now on are run without walj by choice: none is imported by itself.
    if let Err(e) = crate::import::auto::mark_uninstalled(project) {
        eprintln!("walj: warning: {}: {e}", crate::import::auto::uninstalled_path(project).display());
    }
    Ok(0)
}

/// What `walj install` created for a project's settings (`.walj/install-created.json`), so
/// that `walj uninstall` leaves the tree as it was: the settings file and its `.claude/`
/// folder, relative to the project root, each `"created"` or `"existed"` (before walj's first
/// install).
struct Created {
    /// (path, existed before), for the settings file's folder and the file.
    paths: Vec<(PathBuf, bool)>,
}

const CREATED_FILE: &str = "install-created.json";

impl Created {
    /// Notes, before an install writes `path`, whether it and its folder exist (user settings:
    /// nothing to note, they are not in the tree).
    fn before(scope: SettingsScope, path: &Path) -> Created {
        if scope == SettingsScope::User {
            return Created { paths: vec![] };
        }
        let mut paths = vec![];
        if let Some(dir) = path.parent() {
            paths.push((dir.to_path_buf(), dir.is_dir()));
        }
        paths.push((path.to_path_buf(), path.exists()));
        Created { paths }
    }

    fn load(project: &Project) -> serde_json::Map<String, serde_json::Value> {
        std::fs::read(project.dir.join(CREATED_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default()
    }

    fn key(project: &Project, path: &Path) -> String {
        path.strip_prefix(&project.root).unwrap_or(path).to_string_lossy().replace('\\', "/")
    }

    fn save(project: &Project, map: &serde_json::Map<String, serde_json::Value>) -> anyhow::Result<()> {
        let path = project.dir.join(CREATED_FILE);
        if map.is_empty() {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => return Ok(()),
            }
        }
        let text = serde_json::to_vec_pretty(&serde_json::Value::Object(map.clone()))?;
        crate::fsutil::atomic_write(&path, &text, Some(0o600))?;
        Ok(())
    }

    /// Records what this install found absent; an earlier record of a path wins (its first
    /// install knew the tree before walj).
    fn record(&self, project: &Project) -> anyhow::Result<()> {
        if self.paths.is_empty() {
            return Ok(());
        }
        let mut map = Self::load(project);
        for (p, existed) in &self.paths {
            let key = Self::key(project, p);
            map.entry(key).or_insert_with(|| serde_json::json!(if *existed { "existed" } else { "created" }));
        }
        Self::save(project, &map)
    }

    /// After an uninstall emptied `path`: removes it when it holds `{}` and did not exist before
    /// walj's install (unknown counts as not), then its folder when empty and created by
    /// install. Returns what it removed.
    fn undo(project: &Project, path: &Path) -> anyhow::Result<Vec<PathBuf>> {
        let mut map = Self::load(project);
        let mut removed = vec![];
        let key = Self::key(project, path);
        let existed = |m: &serde_json::Map<String, serde_json::Value>, k: &str| {
            m.get(k).and_then(|v| v.as_str()) == Some("existed")
        };
        let empty = settings::read_json(path)?.is_some_and(|v| v.as_object().is_some_and(|o| o.is_empty()));
        if empty && !existed(&map, &key) {
            std::fs::remove_file(path)?;
            removed.push(path.to_path_buf());
            map.remove(&key);
            if let Some(dir) = path.parent() {
                let dkey = Self::key(project, dir);
                let created = map.get(&dkey).and_then(|v| v.as_str()) == Some("created");
                let is_empty = std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(false);
                if created && is_empty {
                    std::fs::remove_dir(dir)?;
                    removed.push(dir.to_path_buf());
                }
                if !created || !dir.exists() {
                    map.remove(&dkey);
                }
            }
            Self::save(project, &map)?;
        }
        Ok(removed)
    }
}

/// `walj doctor`'s arguments.
#[derive(clap::Args)]
pub struct DoctorArgs {
    /// The hook command to look for (default: the one `walj install` would write).
    #[arg(long)]
    pub command: Option<String>,
    /// Also check this plugin folder, as `claude --plugin-dir DIR` loads it (such a plugin
    /// leaves no trace doctor could find); repeatable.
    #[arg(long, value_name = "DIR")]
    pub plugin_dir: Vec<PathBuf>,
    /// Print the findings as one JSON object (schema in docs/plugin.md).
    #[arg(long)]
    pub json: bool,
}

/// Prints doctor's findings; exits 0 (all fine), 1 (warnings) or 2 (errors).
/// The one line doctor ends with: all well, or how many problems and where to start.
fn verdict(findings: &[doctor::DoctorFinding], st: &crate::style::Style) -> String {
    let count = |l: doctor::Level| findings.iter().filter(|f| f.level == l).count();
    let (errors, warnings) = (count(doctor::Level::Error), count(doctor::Level::Warn));
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    match (errors, warnings) {
        (0, 0) => st.tone(Tone::Green, "Verdict: healthy; walj journals this project's sessions."),
        (0, w) => st.tone(
            Tone::Yellow,
            &format!("Verdict: working, with {}: see the [warn] lines.", plural(w, "warning", "warnings")),
        ),
        (e, w) => st.tone(
            Tone::Red,
            &format!(
                "Verdict: not working: {}{}; fix the [error] lines first.",
                plural(e, "error", "errors"),
                if w > 0 { format!(" and {}", plural(w, "warning", "warnings")) } else { String::new() }
            ),
        ),
    }
}

/// Columns to wrap doctor's lines at on a terminal: its width, at most 100 (100 when it does
/// not say). Into a pipe or a file lines stay whole, for grep (`usize::MAX`).
fn text_width() -> usize {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return usize::MAX;
    }
    match crossterm::terminal::size() {
        Ok((w, _)) if w > 0 => usize::from(w).clamp(40, 100),
        _ => 100,
    }
}

/// `text` cut into lines of at most `width` display columns at spaces (a longer word stays
/// whole; spacing inside a line, such as a code excerpt's indent, is kept).
fn wrap(text: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthStr;
    if text.width() <= width {
        return vec![text.to_string()];
    }
    let width = width.max(20);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut started = false;
    for word in text.split(' ') {
        if started && !line.trim().is_empty() && line.width() + 1 + word.width() > width {
            lines.push(std::mem::take(&mut line));
            started = false;
        }
        if started {
            line.push(' ');
        }
        line.push_str(word);
        started = true;
    }
    lines.push(line);
    lines
}

pub(crate) fn doctor(project: &Project, args: DoctorArgs) -> anyhow::Result<i32> {
    let command = hook_command(args.command);
    let config_dir = paths::config_dir_or_default();
    let mut plugin_dirs = args.plugin_dir;
    // Run from a walj plugin's bin/ (a slash command, Claude's Bash tool): that plugin is loaded,
    // maybe with `claude --plugin-dir`, which leaves no trace doctor could find otherwise.
    if let Some(root) = crate::plugin::running_root() {
        let (enabled, _) = doctor::plugins::discover(&project.root, &config_dir, &command);
        let same = |p: &Path| std::fs::canonicalize(p).ok().as_deref() == Some(root.as_path());
        if !enabled.iter().any(|p| same(&p.root)) && !plugin_dirs.iter().any(|p| same(p)) {
            plugin_dirs.push(root);
        }
    }
    let opts = doctor::DoctorOptions { command, config_dir, plugin_dirs };
    let report = doctor::diagnose(project, &opts);
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        let st = crate::style::Style::stdout();
        let width = text_width();
        for f in &report.findings {
            let tone = match f.level {
                doctor::Level::Info => Tone::Gray,
                doctor::Level::Ok => Tone::Green,
                doctor::Level::Warn => Tone::Yellow,
                doctor::Level::Error => Tone::Red,
            };
            let tag = format!("[{}]", f.level);
            let indent = " ".repeat(tag.chars().count() + 1);
            let lines = wrap(&f.message, width.saturating_sub(indent.len()));
            for (i, line) in lines.iter().enumerate() {
                if i == 0 {
                    writeln!(out, "{} {line}", st.tone(tone, &tag))?;
                } else {
                    writeln!(out, "{indent}{line}")?;
                }
            }
            for d in &f.details {
                for line in wrap(d, width.saturating_sub(6)) {
                    writeln!(out, "      {line}")?;
                }
            }
        }
        writeln!(out, "{}", verdict(&report.findings, &st))?;
    }
    out.flush()?;
    Ok(report.exit_code)
}
