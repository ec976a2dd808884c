//! `walj doctor`: checks that Claude Code runs walj's hook as `walj install` set it up (every
//! settings scope merged as Claude Code merges them, matchers, timeouts, duplicates), and that
//! the journal and the hook's error log are healthy. The command prints the findings.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::events::{HookEvent, is_essential_tool};
use super::paths::{SettingsScope, settings_path};
use super::settings::{HOOK_TIMEOUT_SECS, is_walj_handler, kind, load};
use crate::fold::{Fold, FoldOptions};
use crate::project::Project;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Ok,
    Warn,
    Error,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Error => "error",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoctorFinding {
    pub level: Level,
    pub message: String,
    /// Lines shown indented under the message (the first journal problems).
    pub details: Vec<String>,
}

impl DoctorFinding {
    fn new(level: Level, message: impl Into<String>) -> Self {
        DoctorFinding { level, message: message.into(), details: vec![] }
    }
}

/// The worst level among `findings` (`Ok` when empty).
pub fn worst(findings: &[DoctorFinding]) -> Level {
    findings.iter().map(|f| f.level).max().unwrap_or(Level::Ok)
}

struct Source {
    /// Shown after findings when several files are checked together; empty for one file.
    label: String,
    root: Value,
}

struct Occurrence<'a> {
    source: usize,
    matcher: Option<&'a Value>,
    handler: &'a Value,
}

/// Checks one settings file: which of walj's events run walj's hook, which are missing, duplicates,
/// matchers and timeouts. Every finding is about this file.
pub fn check_settings(path: &Path, command: &str) -> Vec<DoctorFinding> {
    match load(path) {
        Ok(Some(l)) => {
            check_sources(&[Source { label: String::new(), root: l.root }], command, &path.display().to_string())
        }
        Ok(None) => vec![DoctorFinding::new(
            Level::Error,
            format!("{} does not exist; walj is not installed there (run `walj install`)", path.display()),
        )],
        Err(e) => vec![DoctorFinding::new(Level::Error, e.to_string())],
    }
}

/// Checks the three settings files together, as Claude Code merges them: an event is covered when
/// any file hooks it, and a handler present in several files with different command strings runs
/// several times (identical commands run once). `config_dir` is Claude Code's config folder
/// ([`super::paths::config_dir_or_default`]): the user file is the one Claude Code reads.
pub fn check_scopes(project_root: &Path, config_dir: &Path, command: &str) -> Vec<DoctorFinding> {
    let mut findings = vec![];
    let mut sources = vec![];
    let mut paths = vec![];
    for scope in SettingsScope::ALL {
        let path = settings_path(scope, project_root, config_dir);
        paths.push(path.display().to_string());
        match load(&path) {
            Ok(Some(l)) => sources.push(Source { label: path.display().to_string(), root: l.root }),
            Ok(None) => {}
            Err(e) => findings.push(DoctorFinding::new(Level::Error, e.to_string())),
        }
    }
    findings.extend(check_sources(&sources, command, &paths.join(", ")));
    findings
}

fn check_sources(sources: &[Source], command: &str, where_: &str) -> Vec<DoctorFinding> {
    let mut findings = vec![];
    let multi = sources.len() > 1;
    let in_label = |i: usize| {
        if multi { format!(" (in {})", sources[i].label) } else { String::new() }
    };

    for (i, s) in sources.iter().enumerate() {
        if s.root.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
            findings.push(DoctorFinding::new(
                Level::Error,
                format!("`disableAllHooks` is true{}: no hook runs, walj journals nothing", in_label(i)),
            ));
        }
    }

    // Every walj handler, by event name (all events, not only walj's).
    let mut by_event: Vec<(String, Vec<Occurrence>)> = vec![];
    for (i, s) in sources.iter().enumerate() {
        let Some(hooks) = s.root.get("hooks").and_then(Value::as_object) else {
            continue;
        };
        for (event, groups) in hooks {
            let Some(groups) = groups.as_array() else {
                findings.push(DoctorFinding::new(
                    Level::Error,
                    format!("`hooks.{event}` is {}, expected an array{}", kind(groups), in_label(i)),
                ));
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

    if by_event.is_empty() {
        let names: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
        findings.push(DoctorFinding::new(
            Level::Error,
            format!(
                "walj is not installed in {where_}: none of {} runs `{command}` (run `walj install`)",
                names.join(", ")
            ),
        ));
        return findings;
    }

    for ev in HookEvent::ALL {
        let Some((_, occs)) = by_event.iter().find(|(e, _)| e == ev.name()) else {
            findings.push(DoctorFinding::new(
                Level::Error,
                format!("{}: not hooked; walj misses these events (run `walj install`)", ev.name()),
            ));
            continue;
        };
        check_event(ev, occs, &in_label, &mut findings);
    }

    for (event, occs) in &by_event {
        if HookEvent::ALL.iter().any(|e| e.name() == event) {
            continue;
        }
        for occ in occs {
            findings.push(DoctorFinding::new(
                Level::Warn,
                format!("{event}: runs walj's hook, but walj does not use this event{}", in_label(occ.source)),
            ));
        }
    }
    findings
}

fn check_event(
    ev: HookEvent,
    occs: &[Occurrence],
    in_label: &dyn Fn(usize) -> String,
    findings: &mut Vec<DoctorFinding>,
) {
    let name = ev.name();
    let commands: Vec<&str> =
        occs.iter().filter_map(|o| o.handler.get("command").and_then(Value::as_str).map(str::trim)).collect();
    let mut distinct = commands.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() > 1 {
        findings.push(DoctorFinding::new(
            Level::Warn,
            format!(
                "{name}: walj's hook is installed {} times with different commands ({}); each event is journaled {} times \
                 (run `walj uninstall` then `walj install`)",
                distinct.len(),
                distinct.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "),
                distinct.len()
            ),
        ));
    } else if occs.len() > 1 {
        findings.push(DoctorFinding::new(
            Level::Warn,
            format!(
                "{name}: walj's hook is listed {} times (identical commands run once; `walj uninstall` then \
                 `walj install` tidies this up)",
                occs.len()
            ),
        ));
    }

    for occ in occs {
        let loc = in_label(occ.source);
        let mut problems = vec![];
        let cmd = occ.handler.get("command").and_then(Value::as_str).unwrap_or_default().trim();

        match occ.handler.get("type").and_then(Value::as_str) {
            Some("command") => {}
            other => problems.push(DoctorFinding::new(
                Level::Error,
                format!(
                    "{name}: handler `{cmd}` has type {}, expected \"command\"{loc}",
                    other.map_or("(none)".into(), |t| format!("{t:?}"))
                ),
            )),
        }

        if let Some(program) = absolute_program(cmd)
            && !program.exists()
        {
            problems.push(DoctorFinding::new(
                Level::Error,
                format!("{name}: `{}` does not exist; the hook fails on every call{loc}", program.display()),
            ));
        }

        problems.extend(check_matcher(ev, occ.matcher, &loc));

        let timeout_text = match occ.handler.get("timeout") {
            None => {
                problems.push(DoctorFinding::new(
                    Level::Warn,
                    format!(
                        "{name}: no timeout; Claude Code's default is 600 s, walj installs {HOOK_TIMEOUT_SECS}{loc}"
                    ),
                ));
                String::from("no timeout")
            }
            Some(t) => match t.as_f64() {
                Some(secs) if secs <= 0.0 => {
                    problems
                        .push(DoctorFinding::new(Level::Error, format!("{name}: timeout {t} is not positive{loc}")));
                    format!("timeout {t}")
                }
                Some(secs) if secs < 2.0 => {
                    problems.push(DoctorFinding::new(
                        Level::Warn,
                        format!("{name}: timeout {t} s is short; a busy machine may kill walj mid-write{loc}"),
                    ));
                    format!("timeout {t} s")
                }
                Some(secs) if secs > 60.0 => {
                    problems.push(DoctorFinding::new(
                        Level::Warn,
                        format!("{name}: timeout {t} s is long; a stuck walj would stall Claude that long{loc}"),
                    ));
                    format!("timeout {t} s")
                }
                Some(_) => format!("timeout {t} s"),
                None => {
                    problems.push(DoctorFinding::new(
                        Level::Error,
                        format!("{name}: timeout is {}, expected a number of seconds{loc}", kind(t)),
                    ));
                    String::from("bad timeout")
                }
            },
        };

        if problems.is_empty() {
            let matcher = match occ.matcher.and_then(Value::as_str) {
                Some(m) if !m.is_empty() => format!("matcher {m}, "),
                _ => String::new(),
            };
            findings
                .push(DoctorFinding::new(Level::Ok, format!("{name}: hooked (`{cmd}`, {matcher}{timeout_text}){loc}")));
        } else {
            findings.extend(problems);
        }
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
                format!("{name}: matcher is {}, expected a string{loc}", kind(other)),
            )];
        }
    };
    let matches_all = m.is_none_or(|m| m.is_empty() || m == "*");
    let Some(wanted) = ev.matcher() else {
        return match m {
            Some(m) if !matches_all => vec![DoctorFinding::new(
                Level::Warn,
                format!("{name}: matcher `{m}` may keep some {name} events from walj; walj installs none{loc}"),
            )],
            _ => vec![],
        };
    };
    if matches_all {
        return vec![DoctorFinding::new(
            Level::Warn,
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
            format!("{name}: matcher `{m}` misses {}; expected {wanted}{loc}", missing.join(", ")),
        ));
    }
    if !extra.is_empty() {
        out.push(DoctorFinding::new(
            Level::Warn,
            format!("{name}: matcher `{m}` also matches {}, which walj does not need{loc}", extra.join(", ")),
        ));
    }
    out
}

/// The program of a hook command when it is an absolute path to walj (`/usr/bin/walj hook`,
/// `'/opt/x/walj' hook`); `None` for `walj hook`, relative paths and shell constructs.
fn absolute_program(cmd: &str) -> Option<PathBuf> {
    let cmd = cmd.trim_start();
    let token = match cmd.chars().next() {
        Some(q @ ('\'' | '"')) => {
            let rest = &cmd[1..];
            &rest[..rest.find(q)?]
        }
        _ => cmd.split_whitespace().next()?,
    };
    let file = Path::new(token).file_name()?.to_str()?;
    let p = PathBuf::from(token);
    (p.is_absolute() && (file == "walj" || file == "walj.exe")).then_some(p)
}

/// The project's side: the journal reads back (and how many lines it skipped), and the hook's
/// error log is empty.
pub fn check_project(project: &Project) -> Vec<DoctorFinding> {
    let mut findings = vec![];
    match Fold::load(&project.journal, &FoldOptions::default()) {
        Ok(fold) => {
            let problems = &fold.report.problems;
            let mut f = DoctorFinding::new(
                if problems.is_empty() { Level::Ok } else { Level::Warn },
                format!("journal {}: {} records, {} problems", project.journal.display(), fold.records, problems.len()),
            );
            f.details = problems.iter().take(5).map(ToString::to_string).collect();
            findings.push(f);
        }
        Err(e) => {
            findings.push(DoctorFinding::new(Level::Error, format!("journal {}: {e}", project.journal.display())))
        }
    }
    if let Ok(text) = std::fs::read_to_string(project.errors_log()) {
        let n = text.lines().count();
        if n > 0 {
            findings.push(DoctorFinding::new(
                Level::Warn,
                format!(
                    "{} hook errors logged in {}; last: {}",
                    n,
                    project.errors_log().display(),
                    text.lines().last().unwrap_or("")
                ),
            ));
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;
    use tempfile::TempDir;

    use super::*;
    use crate::claude::settings::{install, uninstall};

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
        install(&path, CMD).unwrap();
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
        let r = install(&path, CMD).unwrap();
        assert_eq!(r.added, ["PostToolUse", "SessionEnd"]);
        assert_eq!(worst(&check_settings(&path, CMD)), Level::Ok);
    }

    #[test]
    fn doctor_flags_duplicates_matchers_and_timeouts() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        install(&path, CMD).unwrap();
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
        install(&path, CMD).unwrap();
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

        install(&user, CMD).unwrap();
        assert_eq!(worst(&check_scopes(dir.path(), home.path(), CMD)), Level::Ok);

        // The same command in two files runs once: fine. A different one runs twice: warn.
        install(&project, CMD).unwrap();
        let f = check_scopes(dir.path(), home.path(), CMD);
        assert!(f.iter().any(|x| x.message.contains("listed 2 times")));
        assert!(f.iter().all(|x| x.level != Level::Error), "{f:?}");
        assert!(f.iter().any(|x| x.message.contains(&format!("(in {})", project.display()))));
    }
}
