//! `walj doctor`: checks that Claude Code runs walj's hook: from its settings as `walj install`
//! set it up (every settings scope merged as Claude Code merges them, matchers, timeouts,
//! duplicates) or from an enabled plugin ([`plugins`]); that each hook command finds its program
//! with the PATH Claude Code gives its hooks ([`resolve`]); that walj is not installed twice;
//! that `.walj/config.toml` is valid; and that the journal and the hook's error log are healthy.
//! [`diagnose`] returns the findings; the command prints them (text or `--json`).

pub mod agents;
mod mcp;
pub mod plugins;
mod reported;
mod resolve;
mod subfolder;
mod walj_dir;
mod watch;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

pub(crate) use plugins::PluginInstall;
pub(crate) use resolve::{HookEnv, Program};

use crate::claude::events::{HookEvent, is_essential_tool, versioned_since};
use crate::claude::paths::{SettingsScope, settings_path};
use crate::claude::settings::{HOOK_TIMEOUT_SECS, HookRun, is_walj_handler, kind, load};
use crate::fold::{Fold, FoldOptions};
use crate::project::Project;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    /// Something to know; never a problem.
    Info,
    Ok,
    Warn,
    Error,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Info => "info",
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Error => "error",
        })
    }
}

impl Level {
    /// `walj doctor`'s exit status for this worst level: 0 (ok), 1 (warnings), 2 (errors).
    pub(crate) fn exit_code(self) -> i32 {
        match self {
            Level::Info | Level::Ok => 0,
            Level::Warn => 1,
            Level::Error => 2,
        }
    }
}

/// What a finding is about (the `check` field of `walj doctor --json`).
pub mod check {
    /// A settings file itself (unreadable, invalid, `disableAllHooks`).
    pub(crate) const SETTINGS: &str = "settings";
    /// One hook event: hooked or not, matcher, timeout, duplicates.
    pub(crate) const HOOKS: &str = "hooks";
    /// Whether the program a hook command names can run.
    pub(crate) const COMMAND: &str = "command";
    /// A plugin install.
    pub(crate) const PLUGIN: &str = "plugin";
    /// Where walj is installed (settings, plugins): not at all, or twice.
    pub(crate) const INSTALL: &str = "install";
    /// `.walj/config.toml`.
    pub(crate) const CONFIG: &str = "config";
    pub(crate) const JOURNAL: &str = "journal";
    /// `.walj/errors.log`.
    pub(crate) const ERRORS_LOG: &str = "errors_log";
    /// Images a Bash Post spilled that no settle pass has copied into the store yet.
    pub(crate) const PENDING_IMAGES: &str = "pending_images";
    /// Another coding agent's hooks (Codex CLI, Gemini CLI, Copilot CLI: [`agents`]).
    pub(crate) const AGENT: &str = "agent";
    /// The failure marker: hook calls that could not write `.walj/` ([`crate::failmark`]).
    pub(crate) const WRITE_FAILURES: &str = "write_failures";
    /// Whether `.walj/` is walj's own ([`crate::project::trust`]).
    pub(crate) const WALJ_DIR: &str = "walj_dir";
    /// How Bash snapshots were taken: the checkout's watcher, or why a full scan.
    pub(crate) const WATCHER: &str = "watcher";
    /// Sessions started in a subfolder: journaled or not, old subfolder journals ([`subfolder`]).
    pub(crate) const SUBFOLDER: &str = "subfolder";
    /// What a killed `walj bisect` left: scratch copies, an in-place state in the tree.
    pub(crate) const BISECT: &str = "bisect";
    /// What Claude Code's own lists of a Bash command's changed files named that walj's
    /// snapshot missed ([`reported`]).
    pub(crate) const REPORTED: &str = "reported";
    /// walj's MCP server (`walj mcp`): declared by the plugins and `.mcp.json` ([`mcp`]).
    pub(crate) const MCP: &str = "mcp";
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DoctorFinding {
    pub level: Level,
    /// One of [`check`].
    pub check: &'static str,
    pub message: String,
    /// Lines shown indented under the message (the first journal problems, a config line).
    pub details: Vec<String>,
}

impl DoctorFinding {
    fn new(level: Level, check: &'static str, message: impl Into<String>) -> Self {
        DoctorFinding { level, check, message: message.into(), details: vec![] }
    }
}

/// The worst level among `findings` (`Ok` when empty).
pub(crate) fn worst(findings: &[DoctorFinding]) -> Level {
    findings.iter().map(|f| f.level).max().unwrap_or(Level::Ok).max(Level::Ok)
}

struct Source {
    /// Shown after findings when several files are checked together; empty for one file.
    label: String,
    root: Value,
    /// Which install the source belongs to: 0 = the settings files, then one per plugin.
    install: usize,
    /// `${CLAUDE_PLUGIN_ROOT}` for a plugin's hooks.
    plugin_root: Option<PathBuf>,
    /// The scope of a settings file.
    scope: Option<SettingsScope>,
}

struct Occurrence<'a> {
    source: usize,
    matcher: Option<&'a Value>,
    handler: &'a Value,
}

/// What each (install, hook command) runs; an entry that is [`Program::Missing`] makes every
/// event using the command fail, so those events are not reported as hooked.
type Resolutions = HashMap<(usize, String), Program>;

/// How a handler is named in findings: [`HookRun::label`] (a shell form's command line, an exec
/// form's words as a JSON list).
fn handler_command(handler: &Value) -> String {
    HookRun::of(handler).map(|r| r.label()).unwrap_or_default()
}

/// Checks one settings file: which of walj's events run walj's hook, which are missing, duplicates,
/// matchers and timeouts. Every finding is about this file.
#[cfg_attr(not(test), allow(dead_code))] // only the unit tests call it
pub(crate) fn check_settings(path: &Path, command: &str) -> Vec<DoctorFinding> {
    match load(path) {
        Ok(Some(l)) => {
            let source = Source { label: String::new(), root: l.root, install: 0, plugin_root: None, scope: None };
            check_sources(&[source], command, &format!("{}", path.display()), None)
        }
        Ok(None) => vec![DoctorFinding::new(
            Level::Error,
            check::SETTINGS,
            format!("{} does not exist; walj is not installed there (run `walj install`)", path.display()),
        )],
        Err(e) => vec![DoctorFinding::new(Level::Error, check::SETTINGS, e.to_string())],
    }
}

/// The settings files of every scope that exist, and findings for those that cannot be read.
fn settings_sources(project_root: &Path, config_dir: &Path) -> (Vec<Source>, Vec<String>, Vec<DoctorFinding>) {
    let mut findings = vec![];
    let mut sources = vec![];
    let mut paths = vec![];
    for scope in SettingsScope::ALL {
        let path = settings_path(scope, project_root, config_dir);
        paths.push(path.display().to_string());
        match load(&path) {
            Ok(Some(l)) => sources.push(Source {
                label: path.display().to_string(),
                root: l.root,
                install: 0,
                plugin_root: None,
                scope: Some(scope),
            }),
            Ok(None) => {}
            Err(e) => findings.push(DoctorFinding::new(Level::Error, check::SETTINGS, e.to_string())),
        }
    }
    (sources, paths, findings)
}

/// Checks the three settings files together, as Claude Code merges them: an event is covered when
/// any file hooks it, and a handler present in several files with different command strings runs
/// several times (identical commands run once). `config_dir` is Claude Code's config folder
/// ([`crate::claude::paths::config_dir_or_default`]): the user file is the one Claude Code reads.
/// Plugins and hook programs are not checked here: see [`diagnose`].
#[cfg_attr(not(test), allow(dead_code))] // only the unit tests call it
pub(crate) fn check_scopes(project_root: &Path, config_dir: &Path, command: &str) -> Vec<DoctorFinding> {
    let (sources, paths, mut findings) = settings_sources(project_root, config_dir);
    findings.extend(check_sources(&sources, command, &paths.join(", "), None));
    findings
}

fn check_sources(
    sources: &[Source],
    command: &str,
    where_: &str,
    resolved: Option<&Resolutions>,
) -> Vec<DoctorFinding> {
    let mut findings = vec![];
    let multi = sources.len() > 1;
    let in_label = |i: usize| {
        if multi { format!(" (in {})", sources[i].label) } else { String::new() }
    };

    for (i, s) in sources.iter().enumerate() {
        if s.root.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
            findings.push(DoctorFinding::new(
                Level::Error,
                check::SETTINGS,
                format!("`disableAllHooks` is true{}: no hook runs, walj journals nothing", in_label(i)),
            ));
        }
    }

    let (by_event, shape) = walj_handlers(sources, command);
    for (i, event, what) in shape {
        findings.push(DoctorFinding::new(
            Level::Error,
            check::SETTINGS,
            format!("`hooks.{event}` is {what}, expected an array{}", in_label(i)),
        ));
    }

    if by_event.is_empty() {
        let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
        findings.push(DoctorFinding::new(
            Level::Error,
            check::INSTALL,
            format!(
                "walj is not installed in {where_}: none of {} runs `{command}` (run `walj install`)",
                names.join(", ")
            ),
        ));
        return findings;
    }

    let broken = |occ: &Occurrence| {
        resolved.is_some_and(|r| {
            matches!(
                r.get(&(sources[occ.source].install, handler_command(occ.handler))),
                Some(Program::Missing(_) | Program::LauncherFindsNoWalj(_))
            )
        })
    };
    for ev in HookEvent::ALL {
        let Some((_, occs)) = by_event.iter().find(|(e, _)| e == ev.name()) else {
            findings.push(DoctorFinding::new(
                Level::Error,
                check::HOOKS,
                format!("{}: not hooked; walj misses these events (run `walj install`)", ev.name()),
            ));
            continue;
        };
        check_event(ev, occs, sources, &in_label, resolved.is_none(), &broken, &mut findings);
    }

    for (event, occs) in &by_event {
        // Events only newer Claude Code versions fire are walj's too: see `diagnose`.
        if HookEvent::ALL.iter().any(|e| e.name() == event) || versioned_since(event).is_some() {
            continue;
        }
        for occ in occs {
            findings.push(DoctorFinding::new(
                Level::Warn,
                check::HOOKS,
                format!("{event}: runs walj's hook, but walj does not use this event{}", in_label(occ.source)),
            ));
        }
    }
    findings
}

type ByEvent<'a> = Vec<(String, Vec<Occurrence<'a>>)>;

/// One finding per versioned event ([`crate::claude::events::VERSIONED_EVENTS`]): whether it is
/// hooked, against whether the Claude Code on PATH (`claude`, what `claude --version` said)
/// fires it. Missing where it fires: a warning (its calls go unjournaled); hooked where it
/// does not: harmless, said as info; an unknown version: info, saying so.
fn versioned_findings(by_event: &ByEvent, claude: Option<crate::claude::version::Installed>) -> Vec<DoctorFinding> {
    let mut out = Vec::new();
    let version = claude.as_ref().and_then(|c| crate::claude::settings::parse_version(&c.text));
    for (name, since) in crate::claude::events::VERSIONED_EVENTS {
        let hooked = by_event.iter().any(|(e, _)| e == name);
        let since = since.map(|n| n.to_string()).join(".");
        let what = "a skill's or slash command's `!` shell lines";
        let (level, message) = match (version, claude.as_ref()) {
            (Some(v), Some(c)) if crate::claude::events::versioned_events(Some(v)).contains(&name) => {
                if hooked {
                    (Level::Ok, format!("{name}: hooked; Claude Code {} fires it ({what} are journaled)", c.text))
                } else {
                    (
                        Level::Warn,
                        format!(
                            "{name}: not hooked, though Claude Code {} fires it: {what} go unjournaled (run `walj install`)",
                            c.text
                        ),
                    )
                }
            }
            (Some(_), Some(c)) => (
                Level::Info,
                if hooked {
                    format!(
                        "{name}: hooked; Claude Code {} is older than {since} and never fires it (harmless)",
                        c.text
                    )
                } else {
                    format!("{name}: not hooked; Claude Code {} is older than {since}, which added it", c.text)
                },
            ),
            _ => (
                Level::Info,
                format!(
                    "{name}: {}; whether Claude Code fires it is unknown (no `claude` on PATH gave a version; it does from {since} on, and `walj install` adds it there)",
                    if hooked { "hooked" } else { "not hooked" }
                ),
            ),
        };
        out.push(DoctorFinding::new(level, check::HOOKS, message));
    }
    out
}

/// Every walj handler by event name (all events, not only walj's), and the events whose value
/// is not an array: (source, event, what it is).
fn walj_handlers<'a>(sources: &'a [Source], command: &str) -> (ByEvent<'a>, Vec<(usize, String, &'static str)>) {
    let mut by_event: ByEvent = vec![];
    let mut shape = vec![];
    for (i, s) in sources.iter().enumerate() {
        let Some(hooks) = s.root.get("hooks").and_then(Value::as_object) else {
            continue;
        };
        for (event, groups) in hooks {
            let Some(groups) = groups.as_array() else {
                shape.push((i, event.clone(), kind(groups)));
                continue;
            };
            for group in groups {
                let Some(handlers) = group.get("hooks").and_then(Value::as_array) else {
                    continue;
                };
                for handler in handlers.iter().filter(|h| is_walj_handler(h, command)) {
                    let occ = Occurrence { source: i, matcher: group.get("matcher"), handler };
                    match by_event.iter_mut().find(|(e, _)| e == event) {
                        Some((_, list)) => list.push(occ),
                        None => by_event.push((event.clone(), vec![occ])),
                    }
                }
            }
        }
    }
    (by_event, shape)
}

/// True when identical walj hooks are listed once in the project's `settings.json` and once
/// in its `settings.local.json`: the copy `walj install` makes for sessions started in a
/// subfolder (docs/project-root.md), run once from the root.
fn is_subfolder_copy(mine: &[&Occurrence], sources: &[Source]) -> bool {
    let scopes: Vec<Option<SettingsScope>> = mine.iter().map(|o| sources[o.source].scope).collect();
    mine.len() == 2 && scopes.contains(&Some(SettingsScope::Project)) && scopes.contains(&Some(SettingsScope::Local))
}

fn check_event(
    ev: HookEvent,
    occs: &[Occurrence],
    sources: &[Source],
    in_label: &dyn Fn(usize) -> String,
    check_absolute: bool,
    broken: &dyn Fn(&Occurrence) -> bool,
    findings: &mut Vec<DoctorFinding>,
) {
    let name = ev.name();
    // Duplicates within one install (the settings files, or one plugin); walj installed both
    // ways is one finding of its own (see `diagnose`).
    let mut installs: Vec<usize> = occs.iter().map(|o| sources[o.source].install).collect();
    installs.sort_unstable();
    installs.dedup();
    for install in installs {
        let mine: Vec<&Occurrence> = occs.iter().filter(|o| sources[o.source].install == install).collect();
        let mut distinct: Vec<String> = mine.iter().map(|o| handler_command(o.handler)).collect();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() > 1 {
            findings.push(DoctorFinding::new(
                Level::Warn,
                check::HOOKS,
                format!(
                    "{name}: walj's hook is installed {} times with different commands ({}); each event is journaled {} times \
                     (run `walj uninstall` then `walj install`)",
                    distinct.len(),
                    distinct.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "),
                    distinct.len()
                ),
            ));
        } else if mine.len() > 1 && !is_subfolder_copy(&mine, sources) {
            findings.push(DoctorFinding::new(
                Level::Warn,
                check::HOOKS,
                format!(
                    "{name}: walj's hook is listed {} times (identical commands run once; `walj uninstall` then \
                     `walj install` tidies this up)",
                    mine.len()
                ),
            ));
        }
    }

    // One `[ok]` line per event and handler, naming every file that holds it (install writes the
    // same hooks to settings.json and settings.local.json: two identical lines read as a fault).
    let mut ok_lines: Vec<(String, Vec<usize>)> = Vec::new();
    for occ in occs {
        let loc = in_label(occ.source);
        let mut problems = vec![];
        let cmd = handler_command(occ.handler);

        match occ.handler.get("type").and_then(Value::as_str) {
            Some("command") => {}
            other => problems.push(DoctorFinding::new(
                Level::Error,
                check::HOOKS,
                format!(
                    "{name}: handler `{cmd}` has type {}, expected \"command\"{loc}",
                    other.map_or("(none)".into(), |t| format!("{t:?}"))
                ),
            )),
        }

        if check_absolute
            && let Some(program) = absolute_program(occ.handler)
            && !program.exists()
        {
            problems.push(DoctorFinding::new(
                Level::Error,
                check::COMMAND,
                format!("{name}: `{}` does not exist; the hook fails on every call{loc}", program.display()),
            ));
        }

        problems.extend(check_matcher(ev, occ.matcher, &loc));

        let timeout_text = match occ.handler.get("timeout") {
            None => {
                problems.push(DoctorFinding::new(
                    Level::Warn,
                    check::HOOKS,
                    format!(
                        "{name}: no timeout; Claude Code's default is 600 s, walj installs {HOOK_TIMEOUT_SECS}{loc}"
                    ),
                ));
                String::from("no timeout")
            }
            Some(t) => match t.as_f64() {
                Some(secs) if secs <= 0.0 => {
                    problems.push(DoctorFinding::new(
                        Level::Error,
                        check::HOOKS,
                        format!("{name}: timeout {t} is not positive{loc}"),
                    ));
                    format!("timeout {t}")
                }
                Some(secs) if secs < 2.0 => {
                    problems.push(DoctorFinding::new(
                        Level::Warn,
                        check::HOOKS,
                        format!("{name}: timeout {t} s is short; a busy machine may kill walj mid-write{loc}"),
                    ));
                    format!("timeout {t} s")
                }
                Some(secs) if secs > 60.0 => {
                    problems.push(DoctorFinding::new(
                        Level::Warn,
                        check::HOOKS,
                        format!("{name}: timeout {t} s is long; a stuck walj would stall Claude that long{loc}"),
                    ));
                    format!("timeout {t} s")
                }
                Some(_) => format!("timeout {t} s"),
                None => {
                    problems.push(DoctorFinding::new(
                        Level::Error,
                        check::HOOKS,
                        format!("{name}: timeout is {}, expected a number of seconds{loc}", kind(t)),
                    ));
                    String::from("bad timeout")
                }
            },
        };

        if problems.is_empty() {
            // A command that cannot run is one error of its own, listing its events.
            if !broken(occ) {
                let matcher = match occ.matcher.and_then(Value::as_str) {
                    Some(m) if !m.is_empty() => format!("matcher {m}, "),
                    _ => String::new(),
                };
                let line = format!("{name}: hooked (`{cmd}`, {matcher}{timeout_text})");
                match ok_lines.iter_mut().find(|(l, _)| *l == line) {
                    Some((_, sources)) => sources.push(occ.source),
                    None => ok_lines.push((line, vec![occ.source])),
                }
            }
        } else {
            findings.extend(problems);
        }
    }
    for (line, at) in ok_lines {
        let labels: Vec<String> = at.iter().map(|&i| in_label(i)).filter(|l| !l.is_empty()).collect();
        let loc = match labels.len() {
            0 | 1 => labels.concat(),
            _ => {
                // " (in A)" and " (in B)" → " (in A and B)".
                let inner: Vec<&str> =
                    labels.iter().map(|l| l.trim_start_matches(" (in ").trim_end_matches(')')).collect();
                format!(" (in {})", inner.join(" and "))
            }
        };
        findings.push(DoctorFinding::new(Level::Ok, check::HOOKS, format!("{line}{loc}")));
    }
}

fn check_matcher(ev: HookEvent, matcher: Option<&Value>, loc: &str) -> Vec<DoctorFinding> {
    let name = ev.name();
    let m = match matcher {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            return vec![DoctorFinding::new(
                Level::Error,
                check::HOOKS,
                format!("{name}: matcher is {}, expected a string{loc}", kind(other)),
            )];
        }
    };
    let matches_all = m.is_none_or(|m| m.is_empty() || m == "*");
    let Some(wanted) = ev.matcher() else {
        return match m {
            Some(m) if !matches_all => vec![DoctorFinding::new(
                Level::Warn,
                check::HOOKS,
                format!("{name}: matcher `{m}` may keep some {name} events from walj; walj installs none{loc}"),
            )],
            _ => vec![],
        };
    };
    if matches_all {
        return vec![DoctorFinding::new(
            Level::Warn,
            check::HOOKS,
            format!("{name}: the matcher matches every tool; walj needs only {wanted}, the others only cost time{loc}"),
        )];
    }
    let m = m.unwrap_or_default();
    if m == wanted {
        return vec![];
    }
    let exact = m.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '|' | ','));
    if !exact {
        return vec![DoctorFinding::new(
            Level::Warn,
            check::HOOKS,
            format!("{name}: matcher `{m}` is a regular expression; check it covers {wanted}{loc}"),
        )];
    }
    let listed: Vec<&str> = m.split(['|', ',']).map(str::trim).filter(|t| !t.is_empty()).collect();
    let missing: Vec<&str> = wanted.split('|').filter(|t| !listed.contains(t)).collect();
    let extra: Vec<&str> = listed.iter().copied().filter(|t| !wanted.split('|').any(|w| w == *t)).collect();
    let mut out = vec![];
    if !missing.is_empty() {
        let level = if missing.iter().any(|t| is_essential_tool(t)) { Level::Error } else { Level::Warn };
        out.push(DoctorFinding::new(
            level,
            check::HOOKS,
            format!("{name}: matcher `{m}` misses {}; expected {wanted}{loc}", missing.join(", ")),
        ));
    }
    if !extra.is_empty() {
        out.push(DoctorFinding::new(
            Level::Warn,
            check::HOOKS,
            format!("{name}: matcher `{m}` also matches {}, which walj does not need{loc}", extra.join(", ")),
        ));
    }
    out
}

/// The program of a handler when it is an absolute path to walj (`/usr/bin/walj hook`,
/// `'/opt/x/walj' hook`, exec form `"/usr/bin/walj"`); `None` for `walj hook`, relative paths
/// and shell constructs.
fn absolute_program(handler: &Value) -> Option<PathBuf> {
    let token = match HookRun::of(handler)? {
        HookRun::Exec { program, .. } => program,
        HookRun::Shell(cmd) => {
            let cmd = cmd.trim_start();
            match cmd.chars().next() {
                Some(q @ ('\'' | '"')) => {
                    let rest = &cmd[1..];
                    &rest[..rest.find(q)?]
                }
                _ => cmd.split_whitespace().next()?,
            }
        }
    };
    let file = Path::new(token).file_name()?.to_str()?;
    let p = PathBuf::from(token);
    (p.is_absolute() && (file == "walj" || file == "walj.exe")).then_some(p)
}

/// The project's side: the journal reads back (and how many lines it skipped), and the hook's
/// error log is empty.
pub(crate) fn check_project(project: &Project) -> Vec<DoctorFinding> {
    let mut findings = vec![];
    match Fold::load(&project.journal, &FoldOptions::default()) {
        Ok(fold) => {
            let problems = &fold.report.problems;
            let mut f = DoctorFinding::new(
                if problems.is_empty() { Level::Ok } else { Level::Warn },
                check::JOURNAL,
                format!("journal {}: {} records, {} problems", project.journal.display(), fold.records, problems.len()),
            );
            f.details = problems.iter().take(5).map(ToString::to_string).collect();
            findings.push(f);
        }
        Err(e) => findings.push(DoctorFinding::new(
            Level::Error,
            check::JOURNAL,
            format!("journal {}: {e}", project.journal.display()),
        )),
    }
    if let Ok(text) = std::fs::read_to_string(project.errors_log()) {
        let n = text.lines().count();
        if n > 0 {
            findings.push(DoctorFinding::new(
                Level::Warn,
                check::ERRORS_LOG,
                format!(
                    "{} hook errors logged in {}; last: {}",
                    n,
                    project.errors_log().display(),
                    text.lines().last().unwrap_or("")
                ),
            ));
        }
    }
    if let Some(line) = crate::report::pending_line(project) {
        findings.push(DoctorFinding::new(Level::Warn, check::PENDING_IMAGES, line));
    }
    // Kept outside `.walj/` while it could not be written; cleared by the next SessionStart.
    if let Some(m) = crate::failmark::read(project) {
        let mut f = DoctorFinding::new(Level::Error, check::WRITE_FAILURES, crate::announce::write_failures(&m));
        f.details = vec![format!(
            "marker: {} (the next SessionStart reports and clears it)",
            crate::failmark::path(project).display()
        )];
        findings.push(f);
    }
    findings
}

/// `.walj/config.toml` as the hook and the commands read it: TOML, known keys, globs that
/// compile, `[keys]` the dashboard accepts. An error says where (`file:line:column`) and shows
/// the line.
pub(crate) fn check_config(project: &Project) -> Vec<DoctorFinding> {
    let path = project.config_path();
    let f = match crate::config::Config::check(&path) {
        Ok(None) => DoctorFinding::new(
            Level::Ok,
            check::CONFIG,
            format!("config {}: no file, the defaults apply", path.display()),
        ),
        Ok(Some(cfg)) => match crate::tui::keymap::Keymap::from_config(&cfg.keys) {
            Ok(_) => DoctorFinding::new(Level::Ok, check::CONFIG, format!("config {}: valid", path.display())),
            Err(e) => DoctorFinding::new(
                Level::Error,
                check::CONFIG,
                format!("config {}: {e}; `walj tui` refuses to start until it is fixed", path.display()),
            ),
        },
        Err(e) => {
            let mut f = DoctorFinding::new(
                Level::Error,
                check::CONFIG,
                format!("config {e}; until it is fixed the hook journals with the default settings"),
            );
            if let (Some(line), Some(text)) = (e.line, &e.source_line) {
                // The caret under the column (characters) at its display width: a CJK value
                // before it takes two columns a character, an escaped control its escape's.
                let before: String = text.chars().take(e.column.unwrap_or(1).saturating_sub(1)).collect();
                let under = " ".repeat(crate::present::width(&before));
                f.details =
                    vec![format!("{line:>4} | {}", crate::present::shown(text)), format!("{:>4} | {under}^", "")];
            }
            f
        }
    };
    vec![f]
}

/// What `walj doctor` checks: the hook command walj installs (to recognise walj's handlers),
/// Claude Code's config folder, and plugin folders loaded with `claude --plugin-dir`, which
/// leave no trace walj could find.
#[derive(Debug, Clone)]
pub(crate) struct DoctorOptions {
    pub command: String,
    pub config_dir: PathBuf,
    pub plugin_dirs: Vec<PathBuf>,
}

/// Where walj's hooks come from (`installs` of `walj doctor --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct InstallInfo {
    /// `settings` or `plugin`.
    pub kind: &'static str,
    /// Settings: the files that hold walj's hooks. Plugin: the settings file that enables it
    /// (none for `--plugin-dir`).
    pub files: Vec<String>,
    /// Plugin: `name@marketplace`, or the folder given to `--plugin-dir`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Plugin: its folder (`${CLAUDE_PLUGIN_ROOT}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// What one hook command runs (`commands` of `walj doctor --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct CommandInfo {
    /// A shell form's command line, or an exec form's words as a JSON list (`["walj","hook"]`).
    pub command: String,
    /// `shell` or `exec` (`command` + `args`, spawned without a shell).
    pub form: &'static str,
    /// The install it belongs to: `settings` or `plugin <id>`.
    pub install: String,
    /// The events that run it.
    pub events: Vec<String>,
    /// `found`, `missing` (the shell cannot run it: every one of its events fails) or
    /// `unchecked` (shell syntax doctor does not follow).
    pub status: &'static str,
    /// The file the shell runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// When `program` is walj's plugin launcher: the walj it runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<String>,
    /// Why it is missing or unchecked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// Everything `walj doctor` found (`walj doctor --json` prints this object).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DoctorReport {
    /// The worst level: `ok`, `warn` or `error`.
    pub status: Level,
    /// The exit status: 0, 1 (warnings) or 2 (errors).
    pub exit_code: i32,
    /// The PATH Claude Code gives its hooks, and where it comes from.
    pub hook_path: Option<String>,
    pub hook_path_from: String,
    pub installs: Vec<InstallInfo>,
    pub commands: Vec<CommandInfo>,
    /// walj's hooks in other agents' settings (Codex CLI, Gemini CLI, Copilot CLI).
    pub agents: Vec<self::agents::AgentInfo>,
    pub findings: Vec<DoctorFinding>,
}

/// The settings' `env`, merged (user, then project, then local), and for each variable the
/// file it comes from.
fn settings_env(project_root: &Path, config_dir: &Path) -> HashMap<String, (String, PathBuf)> {
    let mut env = HashMap::new();
    for scope in [SettingsScope::User, SettingsScope::Project, SettingsScope::Local] {
        let path = settings_path(scope, project_root, config_dir);
        if let Ok(Some(l)) = load(&path)
            && let Some(vars) = l.root.get("env").and_then(Value::as_object)
        {
            for (k, v) in vars {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                env.insert(k.clone(), (v, path.clone()));
            }
        }
    }
    env
}

/// The environment Claude Code gives its hooks: the settings' `env.PATH`, else this shell's
/// PATH. Run from Claude's Bash tool, this process's PATH also holds the plugins' `bin/`
/// folders, which the hooks do not get: those are left out.
fn hook_env(project_root: &Path, config_dir: &Path) -> HookEnv {
    let env = settings_env(project_root, config_dir);
    let (path, path_from) = match env.get("PATH") {
        Some((p, file)) => (Some(p.into()), format!("env.PATH in {}", file.display())),
        None => {
            let mine = std::env::var_os("PATH");
            if crate::claude::env::in_tool_call() {
                let kept = mine.as_ref().map(|p| {
                    let dirs = std::env::split_paths(p).filter(|d| {
                        !d.parent().is_some_and(|r| r.join(".claude-plugin").join("plugin.json").is_file())
                    });
                    std::env::join_paths(dirs).unwrap_or_default()
                });
                (kept, "Claude Code's PATH, without the plugin folders its Bash tool adds".to_string())
            } else {
                (mine, "this shell's PATH".to_string())
            }
        }
    };
    HookEnv {
        path,
        path_from,
        settings_env: env.into_iter().map(|(k, (v, _))| (k, v)).collect(),
        project_dir: project_root.to_path_buf(),
    }
}

/// "every walj event" when `events` are all of them, else their names.
fn events_text(events: &[String]) -> String {
    if HookEvent::ALL.iter().all(|e| events.iter().any(|x| x == e.name())) {
        format!("all {} hooks", events.len())
    } else {
        events.join(", ")
    }
}

/// The plugin folder whose hooks journaled the latest session (its `start` record names it,
/// from Claude Code's `CLAUDE_PLUGIN_ROOT`): a plugin loaded with `claude --plugin-dir` leaves
/// no other trace. Checked as `--plugin-dir` would check it, unless it is already among
/// `plugins` (enabled, or named on the command line) or an installed plugin disabled since
/// (`disabled`). A latest session journaled by
/// `walj install`'s hooks adds nothing: the plugin that runs is the one checked.
fn recorded_plugin(project: &Project, disabled: &[PathBuf], plugins: &mut Vec<PluginInstall>) -> Vec<DoctorFinding> {
    let Some(last) = plugins::last_start(&project.journal) else { return vec![] };
    let Some(root) = last.plugin_root else { return vec![] };
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    // Already checked, or an installed plugin disabled since (it says so itself).
    if plugins.iter().any(|p| canon(&p.root) == canon(&root)) || disabled.iter().any(|d| canon(d) == canon(&root)) {
        return vec![];
    }
    let session = crate::present::text::safe(&last.session).into_owned();
    let ts = crate::present::text::safe(&last.ts).into_owned();
    let shown = crate::present::text::safe(&root.display().to_string()).into_owned();
    if !crate::plugin::is_walj_plugin(&root) {
        return vec![DoctorFinding::new(
            Level::Info,
            check::PLUGIN,
            format!(
                "the latest session ({session}, {ts}) was journaled by the plugin folder {shown}, which holds no walj \
                 plugin now; if Claude Code loads walj another way, `walj doctor --plugin-dir DIR` checks that folder"
            ),
        )];
    }
    match plugins::from_dir(&root) {
        Ok(p) => {
            plugins.push(p);
            vec![DoctorFinding::new(
                Level::Ok,
                check::PLUGIN,
                format!(
                    "plugin folder {shown}: its hooks journaled the latest session ({session}, {ts}); Claude Code \
                     loads it with `--plugin-dir` (checked as that loads it)"
                ),
            )]
        }
        Err(e) => vec![DoctorFinding::new(Level::Error, check::PLUGIN, e.to_string())],
    }
}

/// Runs every check of `walj doctor`.
pub(crate) fn diagnose(project: &Project, opts: &DoctorOptions) -> DoctorReport {
    let command = opts.command.as_str();
    let (sources, paths, plugins, mut findings) = hook_sources(project, opts, command);
    let env = hook_env(&project.root, &opts.config_dir);
    let (by_event, _) = walj_handlers(&sources, command);
    let (commands, resolved) = hook_commands(&sources, &plugins, &by_event, &env);
    findings.extend(check_sources(&sources, command, &where_hooked(&paths, &plugins), Some(&resolved)));
    findings.extend(command_findings(&commands));
    findings.extend(claude_version_findings(&commands, &by_event));
    let (installs, install_findings) = installs(&sources, &plugins, &by_event);
    findings.extend(install_findings);

    findings.extend(subfolder::check(project, &opts.config_dir, command, !plugins.is_empty()));
    findings.extend(bisect_leftovers(project));

    let base = command.trim().strip_suffix("--agent claude").unwrap_or(command).trim_end();
    let (agent_findings, agents) = self::agents::check(&project.root, base);
    findings.extend(agent_findings);
    let (dir_findings, readable) = walj_dir::check(project);
    findings.extend(dir_findings);
    if readable {
        findings.extend(check_config(project));
        findings.extend(check_project(project));
        findings.extend(watch::check(project));
        findings.extend(reported::check(project));
    }
    let status = worst(&findings);
    DoctorReport {
        status,
        exit_code: status.exit_code(),
        hook_path: env.path.as_ref().map(|p| p.to_string_lossy().into_owned()),
        hook_path_from: env.path_from.clone(),
        installs,
        commands,
        agents,
        findings,
    }
}

/// Where walj's hooks can be: the settings files of every scope, the enabled plugins, the
/// plugin folders given (`--plugin-dir`) and the one a session recorded. Returns the sources
/// (install 0 the settings files, then one per plugin), the settings files' paths, the
/// plugins, and the findings about them (check `plugin`).
fn hook_sources(
    project: &Project,
    opts: &DoctorOptions,
    command: &str,
) -> (Vec<Source>, Vec<String>, Vec<PluginInstall>, Vec<DoctorFinding>) {
    let (mut sources, paths, mut findings) = settings_sources(&project.root, &opts.config_dir);
    let (mut plugins, disabled, plugin_findings) =
        plugins::discover_with_disabled(&project.root, &opts.config_dir, command);
    findings.extend(plugin_findings);
    for dir in &opts.plugin_dirs {
        match plugins::from_dir(dir) {
            Ok(p) => {
                findings.push(DoctorFinding::new(
                    Level::Ok,
                    check::PLUGIN,
                    format!("plugin folder {} (as `claude --plugin-dir` loads it)", p.root.display()),
                ));
                plugins.push(p);
            }
            Err(e) => findings.push(DoctorFinding::new(Level::Error, check::PLUGIN, e.to_string())),
        }
    }
    findings.extend(recorded_plugin(project, &disabled, &mut plugins));
    findings.extend(mcp::findings(project, &plugins));
    for (i, p) in plugins.iter().enumerate() {
        sources.push(Source {
            label: p.label(),
            root: p.hooks.clone(),
            install: i + 1,
            plugin_root: Some(p.root.clone()),
            scope: None,
        });
    }
    (sources, paths, plugins, findings)
}

/// What each hook command runs, once per (install, command): the commands as the report
/// lists them, and the resolutions [`check_sources`] weighs the events by.
fn hook_commands(
    sources: &[Source],
    plugins: &[PluginInstall],
    by_event: &ByEvent,
    env: &HookEnv,
) -> (Vec<CommandInfo>, Resolutions) {
    let install_label = |install: usize| match install {
        0 => "settings".to_string(),
        i => plugins[i - 1].label(),
    };
    let mut resolved: Resolutions = HashMap::new();
    let mut commands: Vec<CommandInfo> = vec![];
    for (event, occs) in by_event {
        for occ in occs {
            let src = &sources[occ.source];
            let cmd = handler_command(occ.handler);
            let key = (src.install, cmd.clone());
            let label = install_label(src.install);
            if let Some(info) = commands.iter_mut().find(|c| c.install == label && c.command == cmd) {
                if !info.events.contains(event) {
                    info.events.push(event.clone());
                }
                continue;
            }
            let program = match HookRun::of(occ.handler) {
                Some(HookRun::Exec { program, .. }) => resolve::resolve_exec(program, src.plugin_root.as_deref(), env),
                _ => resolve::resolve(&cmd, src.plugin_root.as_deref(), env),
            };
            let form = match HookRun::of(occ.handler) {
                Some(HookRun::Exec { .. }) => "exec",
                _ => "shell",
            };
            let mut info = CommandInfo {
                command: cmd,
                form,
                install: label,
                events: vec![event.clone()],
                status: "found",
                program: None,
                runs: None,
                why: None,
            };
            match &program {
                Program::Found { program, runs } => {
                    info.program = Some(program.display().to_string());
                    info.runs = runs.as_ref().map(|r| r.display().to_string());
                }
                Program::Missing(why) => {
                    info.status = "missing";
                    info.why = Some(why.clone());
                }
                Program::LauncherFindsNoWalj(launcher) => {
                    info.status = "no_walj";
                    info.program = Some(launcher.display().to_string());
                    info.why = Some(format!(
                        "walj's plugin launcher finds no walj bundled for this platform, on the PATH Claude Code gives \
                         its hooks ({}) nor in ~/.cargo/bin",
                        env.path_from
                    ));
                }
                Program::Unchecked(why) => {
                    info.status = "unchecked";
                    info.why = Some(why.clone());
                }
            }
            commands.push(info);
            resolved.insert(key, program);
        }
    }
    (commands, resolved)
}

/// Where the hooks were looked for, for the findings of a missing event.
fn where_hooked(paths: &[String], plugins: &[PluginInstall]) -> String {
    let mut where_ = format!("Claude Code's settings ({})", paths.join(", "));
    if plugins.is_empty() {
        where_.push_str(
            " nor as an enabled plugin (a plugin loaded with `claude --plugin-dir DIR` cannot be seen from here: \
             check it with `walj doctor --plugin-dir DIR`; it is seen once it has journaled a session here. If \
             Claude Code loads walj that way, do not also run `walj install`: every event would be journaled twice)",
        );
    }
    where_
}

/// One finding per hook command (check `command`): what it runs, or why it cannot run.
fn command_findings(commands: &[CommandInfo]) -> Vec<DoctorFinding> {
    let mut findings = vec![];
    for c in commands {
        let (level, message) = match c.status {
            "found" => (
                Level::Ok,
                match &c.runs {
                    Some(walj) => format!(
                        "`{}` ({}) runs walj's plugin launcher {}, which runs {walj}",
                        c.command,
                        c.install,
                        c.program.as_deref().unwrap_or_default()
                    ),
                    None => {
                        format!("`{}` ({}) runs {}", c.command, c.install, c.program.as_deref().unwrap_or_default())
                    }
                },
            ),
            "missing" => {
                let fix = if c.install == "settings" {
                    "; put walj on that PATH (`cargo install --path .` in a walj checkout), or run \
                     `walj install --local` or `--user`, which write this walj's absolute path"
                } else {
                    ""
                };
                (
                    Level::Error,
                    format!(
                        "`{}` ({}) cannot run: {}; {} fail{} on every call{fix}",
                        c.command,
                        c.install,
                        c.why.as_deref().unwrap_or_default(),
                        events_text(&c.events),
                        if c.events.len() == 1 { "s" } else { "" },
                    ),
                )
            }
            "no_walj" => (
                Level::Error,
                format!(
                    "`{}` ({}) runs {}, but {}: {} run, exit 0 and journal nothing. Install walj \
                     (`cargo install --path .` in a walj checkout, or a walj binary in a folder on that PATH)",
                    c.command,
                    c.install,
                    c.program.as_deref().unwrap_or_default(),
                    c.why.as_deref().unwrap_or_default(),
                    events_text(&c.events),
                ),
            ),
            _ => (
                Level::Warn,
                format!(
                    "`{}` ({}): cannot tell what it runs ({}); check it by hand",
                    c.command,
                    c.install,
                    c.why.as_deref().unwrap_or_default()
                ),
            ),
        };
        findings.push(DoctorFinding::new(level, check::COMMAND, message));
    }
    findings
}

/// What the Claude Code on PATH makes of the hooks: exec form under one that ignores `args`
/// (check `hooks`), and the events only newer versions fire (a skill's `!` shell line).
/// `claude --version` is asked at most once, only when a check needs it.
fn claude_version_findings(commands: &[CommandInfo], by_event: &ByEvent) -> Vec<DoctorFinding> {
    let mut findings = vec![];
    let claude_cell = std::cell::OnceCell::new();
    let claude_on_path = || claude_cell.get_or_init(crate::claude::version::installed).clone();
    // Exec form under a Claude Code that ignores `args` (only asked when there is exec form).
    if commands.iter().any(|c| c.form == "exec")
        && let Some(claude) = claude_on_path()
        && crate::claude::settings::HookForm::for_version(&claude.text)
            == Some(crate::claude::settings::HookForm::Shell)
    {
        findings.push(DoctorFinding::new(
            Level::Warn,
            check::HOOKS,
            format!(
                "Claude Code {} ({}) is older than {}, which ignores a hook's `args`: it runs the exec-form hooks' \
                 `command` alone through its shell (walj without arguments takes the payload for `walj hook`, but a \
                 path with spaces breaks). Run `claude update`, or `walj uninstall` then `walj install --form shell`",
                claude.text,
                claude.program.display(),
                crate::claude::settings::exec_form_since()
            ),
        ));
    }
    // Events only newer Claude Code versions fire (a skill's `!` shell line): hooked where it has them.
    if !by_event.is_empty() {
        findings.extend(versioned_findings(by_event, claude_on_path()));
    }
    findings
}

/// Every install of walj's hooks (the settings files together, each plugin), and the finding
/// when there are several (check `install`: each install's hooks run, so every event twice)
/// or when a `--plugin-dir` plugin could double them unseen.
fn installs(
    sources: &[Source],
    plugins: &[PluginInstall],
    by_event: &ByEvent,
) -> (Vec<InstallInfo>, Vec<DoctorFinding>) {
    let mut findings = vec![];
    let mut installs: Vec<InstallInfo> = vec![];
    let settings_files: Vec<String> = {
        let mut f: Vec<String> = by_event
            .iter()
            .flat_map(|(_, occs)| occs.iter())
            .filter(|o| sources[o.source].install == 0)
            .map(|o| sources[o.source].label.clone())
            .collect();
        f.sort();
        f.dedup();
        f
    };
    if !settings_files.is_empty() {
        installs.push(InstallInfo { kind: "settings", files: settings_files.clone(), id: None, root: None });
    }
    for p in plugins {
        installs.push(InstallInfo {
            kind: "plugin",
            files: p.enabled_in.iter().map(|(_, f)| f.display().to_string()).collect(),
            id: Some(p.id.clone()),
            root: Some(p.root.display().to_string()),
        });
    }
    if installs.len() > 1 {
        let mut names = vec![];
        let mut fix = vec![];
        if !settings_files.is_empty() {
            names.push(format!("the hooks in {}", settings_files.join(" and ")));
            let mut scopes: Vec<SettingsScope> =
                by_event.iter().flat_map(|(_, occs)| occs.iter()).filter_map(|o| sources[o.source].scope).collect();
            scopes.dedup();
            for scope in SettingsScope::ALL.into_iter().filter(|s| scopes.contains(s)) {
                fix.push(match scope {
                    SettingsScope::Project => "`walj uninstall`".to_string(),
                    SettingsScope::Local => "`walj uninstall --local`".to_string(),
                    SettingsScope::User => "`walj uninstall --user`".to_string(),
                });
            }
        }
        for p in plugins {
            match &p.enabled_in {
                Some(_) => {
                    names.push(format!("the plugin {}", p.id));
                    fix.push(format!("`claude plugin disable {}`", p.id));
                }
                None => names.push(format!("the plugin folder {} (`--plugin-dir`)", p.root.display())),
            }
        }
        let times = match installs.len() {
            2 => "twice".to_string(),
            n => format!("{n} times"),
        };
        findings.push(DoctorFinding::new(
            Level::Warn,
            check::INSTALL,
            format!(
                "walj is installed {times}: {}. Claude Code runs the hooks of each, so every event is journaled \
                 {times}. Keep one{}",
                names.join(", and "),
                if fix.is_empty() { String::new() } else { format!(": run {}", fix.join(" or ")) }
            ),
        ));
    } else if plugins.is_empty() && !settings_files.is_empty() {
        findings.push(DoctorFinding::new(
            Level::Info,
            check::PLUGIN,
            "a plugin loaded with `claude --plugin-dir DIR` cannot be seen from here; if one holds walj, every event \
             is journaled twice (`walj doctor --plugin-dir DIR` checks them together)",
        ));
    }
    (installs, findings)
}

/// What a killed `walj bisect` left that the sweep before this command could not remove
/// (scratch copies in the per-user folder), and an in-place state still in the tree.
fn bisect_leftovers(project: &Project) -> Vec<DoctorFinding> {
    let mut out = Vec::new();
    let copies = crate::bisect::leftovers::copies_left();
    if !copies.is_empty() {
        let mut f = DoctorFinding::new(
            Level::Warn,
            check::BISECT,
            format!(
                "{} scratch cop{} of killed `walj bisect` runs could not be removed (remove {} by hand)",
                copies.len(),
                if copies.len() == 1 { "y" } else { "ies" },
                if copies.len() == 1 { "it" } else { "them" }
            ),
        );
        f.details = copies.iter().map(|p| p.display().to_string()).collect();
        out.push(f);
    }
    if let Some(note) = crate::bisect::inplace::interrupted(project) {
        out.push(DoctorFinding::new(Level::Warn, check::BISECT, note));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;
    use tempfile::TempDir;

    use super::*;
    use crate::claude::settings::{HookForm, install, uninstall};

    const CMD: &str = "walj hook";

    fn settings(dir: &TempDir) -> PathBuf {
        settings_path(SettingsScope::Project, dir.path(), Path::new("/nonexistent-home/.claude"))
    }

    fn write_value(path: &Path, v: &Value) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    }

    fn read_value(path: &Path) -> Value {
        serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
    }

    fn busy_settings() -> Value {
        json!({
            "permissions": {"allow": ["Bash(cargo test:*)"], "deny": []},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "other-tool check", "timeout": 5}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
            },
            "env": {"FOO": "1", "BAR": "2"},
            "model": "opus"
        })
    }

    fn levels_for<'a>(findings: &'a [DoctorFinding], event: &str) -> Vec<(Level, &'a str)> {
        findings
            .iter()
            .filter(|f| f.message.starts_with(&format!("{event}:")))
            .map(|f| (f.level, f.message.as_str()))
            .collect()
    }

    #[test]
    fn doctor_missing_file_and_not_installed() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        let f = check_settings(&path, CMD);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].level, Level::Error);
        assert!(f[0].message.contains("does not exist"));

        write_value(&path, &busy_settings());
        let f = check_settings(&path, CMD);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("walj is not installed"), "{f:?}");
    }

    #[test]
    fn doctor_finds_missing_events() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        install(&path, CMD, HookForm::Shell).unwrap();
        let mut v = read_value(&path);
        let hooks = v["hooks"].as_object_mut().unwrap();
        hooks.shift_remove("PostToolUse");
        hooks.shift_remove("SessionEnd");
        write_value(&path, &v);

        let f = check_settings(&path, CMD);
        for missing in ["PostToolUse", "SessionEnd"] {
            let l = levels_for(&f, missing);
            assert_eq!(l.len(), 1);
            assert_eq!(l[0].0, Level::Error);
            assert!(l[0].1.contains("not hooked"));
        }
        assert_eq!(levels_for(&f, "PreToolUse")[0].0, Level::Ok);
        assert_eq!(f.iter().filter(|x| x.level == Level::Ok).count(), HookEvent::ALL.len() - 2);
        assert_eq!(worst(&f), Level::Error);

        // install repairs it.
        let r = install(&path, CMD, HookForm::Shell).unwrap();
        assert_eq!(r.added, ["PostToolUse", "SessionEnd"]);
        assert_eq!(worst(&check_settings(&path, CMD)), Level::Ok);
    }

    #[test]
    fn doctor_flags_duplicates_matchers_and_timeouts() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        install(&path, CMD, HookForm::Shell).unwrap();
        let mut v = read_value(&path);
        let h = &mut v["hooks"];
        h["PreToolUse"][0]["matcher"] = json!("Edit|Write");
        h["PostToolUse"][0]["matcher"] = json!("*");
        h["PostToolUseFailure"][0]["matcher"] = json!("Edit.*");
        h["Stop"][0]["hooks"][0].as_object_mut().unwrap().shift_remove("timeout");
        h["SessionStart"][0]["hooks"][0]["timeout"] = json!(600);
        h["SessionStart"][0]["matcher"] = json!("startup");
        h["PreCompact"][0]["hooks"][0]["timeout"] = json!("10");
        h["SessionEnd"]
            .as_array_mut()
            .unwrap()
            .push(json!({"hooks": [{"type": "command", "command": "/nonexistent/bin/walj hook", "timeout": 10}]}));
        h["UserPromptSubmit"][0]["hooks"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "command", "command": CMD, "timeout": 10}));
        h["Notification"] = json!([{"hooks": [{"type": "command", "command": CMD, "timeout": 10}]}]);
        write_value(&path, &v);

        let f = check_settings(&path, CMD);
        let pre = levels_for(&f, "PreToolUse");
        assert_eq!(pre.len(), 1);
        assert_eq!(pre[0].0, Level::Error);
        assert!(
            pre[0].1.contains("misses MultiEdit, NotebookEdit, Bash, TodoWrite, TaskCreate, TaskUpdate"),
            "{pre:?}"
        );
        assert!(levels_for(&f, "PostToolUse")[0].1.contains("every tool"));
        assert!(levels_for(&f, "PostToolUseFailure")[0].1.contains("regular expression"));
        assert!(levels_for(&f, "Stop")[0].1.contains("no timeout"));
        let ss = levels_for(&f, "SessionStart");
        assert!(ss.iter().any(|(l, m)| *l == Level::Warn && m.contains("matcher `startup`")), "{ss:?}");
        assert!(ss.iter().any(|(l, m)| *l == Level::Warn && m.contains("is long")), "{ss:?}");
        assert_eq!(levels_for(&f, "PreCompact")[0].0, Level::Error);
        let se = levels_for(&f, "SessionEnd");
        assert!(se.iter().any(|(l, m)| *l == Level::Warn && m.contains("different commands")), "{se:?}");
        assert!(se.iter().any(|(l, m)| *l == Level::Error && m.contains("does not exist")), "{se:?}");
        assert!(
            levels_for(&f, "UserPromptSubmit").iter().any(|(l, m)| *l == Level::Warn && m.contains("listed 2 times"))
        );
        assert_eq!(levels_for(&f, "Notification")[0].0, Level::Warn);
        assert_eq!(levels_for(&f, "SubagentStop")[0].0, Level::Ok);

        // Uninstall takes all of these out, including the extra ones.
        let u = uninstall(&path, CMD).unwrap();
        assert!(u.added.contains(&"Notification".to_string()));
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}\n");
    }

    #[test]
    fn doctor_disable_all_hooks() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        write_value(&path, &json!({"disableAllHooks": true}));
        install(&path, CMD, HookForm::Shell).unwrap();
        let f = check_settings(&path, CMD);
        assert!(f.iter().any(|x| x.level == Level::Error && x.message.contains("disableAllHooks")));
    }

    #[test]
    fn doctor_scopes_merge() {
        let dir = TempDir::new().unwrap();
        let home = TempDir::new().unwrap();
        let project = settings_path(SettingsScope::Project, dir.path(), home.path());
        let user = settings_path(SettingsScope::User, dir.path(), home.path());
        let f = check_scopes(dir.path(), home.path(), CMD);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("walj is not installed"));

        install(&user, CMD, HookForm::Shell).unwrap();
        assert_eq!(worst(&check_scopes(dir.path(), home.path(), CMD)), Level::Ok);

        // The same command in two files runs once: fine. A different one runs twice: warn.
        install(&project, CMD, HookForm::Shell).unwrap();
        let f = check_scopes(dir.path(), home.path(), CMD);
        assert!(f.iter().any(|x| x.message.contains("listed 2 times")));
        assert!(f.iter().all(|x| x.level != Level::Error), "{f:?}");
        // One line per event names both files: "(in USER and PROJECT)".
        let both = |x: &DoctorFinding| {
            x.message.contains(&format!("(in {} and {})", user.display(), project.display()))
                || x.message.contains(&format!("(in {} and {})", project.display(), user.display()))
        };
        assert!(f.iter().any(both), "{f:?}");
    }

    // Install's output as doctor sees it: these lived beside install in claude/settings.rs,
    // whose tests then imported doctor (a boundary module reaching up to a face).

    #[test]
    fn a_fresh_install_passes_every_check() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        install(&path, CMD, HookForm::Shell).unwrap();
        assert!(check_settings(&path, CMD).iter().all(|f| f.level == Level::Ok));
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        install(&path, CMD, HookForm::Exec).unwrap();
        assert!(check_settings(&path, CMD).iter().all(|f| f.level == Level::Ok));
    }

    #[test]
    fn a_settings_file_install_refuses_is_an_error_for_doctor() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        for text in [
            "{\"hooks\": {,}",
            "{\"a\": 1, // comment\n}",
            "[1, 2]",
            "{\"hooks\": []}",
            "{\"hooks\": \"walj hook\"}",
            "{\"hooks\": {\"Stop\": {\"hooks\": []}}}",
        ] {
            fs::write(&path, text).unwrap();
            assert!(install(&path, CMD, HookForm::Shell).is_err(), "{text}");
            assert_eq!(worst(&check_settings(&path, CMD)), Level::Error, "{text}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        #[test]
        fn doctor_finds_every_hook_install_writes(
            original in crate::claude::settings::tests::arb_settings(),
            exec in proptest::prelude::any::<bool>(),
        ) {
            let form = if exec { HookForm::Exec } else { HookForm::Shell };
            let dir = TempDir::new().unwrap();
            let path = settings(&dir);
            write_value(&path, &original);
            install(&path, CMD, form).unwrap();
            proptest::prop_assert_eq!(worst(&check_settings(&path, CMD)), Level::Ok);
        }
    }
}
