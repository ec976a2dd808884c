//! `walj install` / `walj uninstall`: merge walj's hook handlers into Claude Code settings files
//! and take them out again (DESIGN §5, CLAUDE-CODE "Hook configuration"). `walj doctor`'s checks
//! of the same files are in [`crate::doctor`].
//!
//! A handler runs walj in exec form (`"command": "walj", "args": ["hook"]`, no shell) or shell
//! form (`"command": "walj hook"`): see [`HookForm`]. Whether a handler is walj's is one
//! predicate, [`is_walj_hook`], for both forms, used by install, uninstall, doctor, the plugin
//! checks and other agents' files alike.
//!
//! The settings file is edited as a `serde_json::Value` with `preserve_order`, so every key, hook,
//! group and ordering that is not walj's stays as it was. Changes are written atomically (temporary
//! file in the same folder, fsync, rename) after a copy of the old file is kept as
//! `<file>.walj-backup` (or, for `walj install`, in the project's `.walj/backups/`: see [`install_to`]). Settings files are strict JSON: comments are not kept (they cannot be
//! there in the first place).
//!
//! Known limits of the round trip: the file is re-printed with 2-space indentation, so custom
//! formatting is normalised on the first change; numbers are kept as serde_json reads them
//! (`1e2` becomes `100.0`); and an event key holding an empty array (`"Stop": []`) before
//! `install` is removed by `uninstall` (it is "left empty" by the removal).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::events::HookEvent;

/// Timeout (seconds) written into each handler.
pub const HOOK_TIMEOUT_SECS: u64 = 10;

/// What `install` (or `uninstall`) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallReport {
    /// The settings file (as given).
    pub path: PathBuf,
    /// `install`: events that got a walj handler. `uninstall`: events whose walj handlers were removed.
    pub added: Vec<String>,
    /// `install`: events that already had a walj handler. `uninstall`: walj's events that had none.
    pub already: Vec<String>,
    /// Copy of the previous file, when an existing file was changed.
    pub backup: Option<PathBuf>,
}

impl InstallReport {
    /// Whether the file was written.
    #[cfg_attr(not(test), allow(dead_code))] // only the unit tests call it
    pub(crate) fn changed(&self) -> bool {
        !self.added.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(
        "{} is not valid JSON ({source}); Claude Code settings are strict JSON, \
         without comments or trailing commas",
        path.display()
    )]
    InvalidJson { path: PathBuf, source: serde_json::Error },
    #[error("{}: {message}", path.display())]
    Shape { path: PathBuf, message: String },
    #[error("the hook command is empty")]
    EmptyCommand,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> InstallError + '_ {
    move |source| InstallError::Io { path: path.to_path_buf(), source }
}

fn shape(path: &Path, message: impl Into<String>) -> InstallError {
    InstallError::Shape { path: path.to_path_buf(), message: message.into() }
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

// ---------------------------------------------------------------------------------------------
// Hook forms

/// How a handler runs its program (CLAUDE-CODE "Hook configuration").
///
/// - **Shell form**: `command` is a shell command line, run as `sh -c COMMAND`.
/// - **Exec form**: `command` is the program and `args` its arguments; Claude Code spawns it
///   directly, without a shell, and substitutes placeholders such as `${CLAUDE_PLUGIN_ROOT}` in
///   each element as plain text. Honoured from Claude Code [`EXEC_FORM_SINCE`] on (its changelog,
///   2.1.139: "Added hook `args: string[]` field (exec form)"). An older version ignores `args`
///   and runs `command` through the shell: walj without arguments, which then does the hook's
///   job when its stdin is a hook payload (`main.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookForm {
    Shell,
    Exec,
}

/// The first Claude Code version that honours a handler's `args` (exec form).
pub(crate) const EXEC_FORM_SINCE: [u32; 3] = [2, 1, 139];

/// [`EXEC_FORM_SINCE`] as text (`2.1.139`).
pub(crate) fn exec_form_since() -> String {
    EXEC_FORM_SINCE.map(|n| n.to_string()).join(".")
}

impl HookForm {
    /// The form a Claude Code of `version` (`claude --version`: "2.1.328 (Claude Code)")
    /// honours; `None` when the text holds no version.
    pub(crate) fn for_version(version: &str) -> Option<HookForm> {
        let v = parse_version(version)?;
        Some(if v >= EXEC_FORM_SINCE { HookForm::Exec } else { HookForm::Shell })
    }
}

/// The first `X.Y.Z` in `text`.
pub fn parse_version(text: &str) -> Option<[u32; 3]> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.')).find_map(|word| {
        let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
        let v = [parts.next()??, parts.next()??, parts.next()??];
        Some(v)
    })
}

/// The words of a command line made of plain words only, as `sh` splits them: quotes and
/// backslashes are undone (`'/opt/my dir/walj' hook` → `/opt/my dir/walj`, `hook`). `None` when
/// anything else is in it (expansions, operators, globs, `~`, comments, redirections, a leading
/// assignment or builtin), since exec form runs no shell to do those.
pub(crate) fn plain_words(command: &str) -> Option<Vec<String>> {
    let mut words: Vec<String> = Vec::new();
    let mut chars = command.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else { break };
        if matches!(first, '~' | '#') {
            return None;
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                break;
            }
            chars.next();
            match c {
                '\\' => word.push(chars.next()?),
                '\'' => loop {
                    match chars.next()? {
                        '\'' => break,
                        ch => word.push(ch),
                    }
                },
                '"' => loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' => return None,
                        '\\' => match chars.next()? {
                            n @ ('"' | '\\') => word.push(n),
                            n => {
                                word.push('\\');
                                word.push(n);
                            }
                        },
                        ch => word.push(ch),
                    }
                },
                '$' | '`' | ';' | '&' | '|' | '<' | '>' | '(' | ')' | '*' | '?' | '[' | ']' | '{' | '}' | '!' => {
                    return None;
                }
                ch => word.push(ch),
            }
        }
        words.push(word);
    }
    let program = words.first()?;
    let builtin = matches!(
        program.as_str(),
        "exec" | "command" | "cd" | "eval" | "." | "source" | "time" | "if" | "for" | "while" | "until" | "case"
    );
    if program.is_empty() || program.contains('=') || builtin {
        return None;
    }
    Some(words)
}

/// The handler object walj writes for `command` (a command line: `walj hook`, `'/x/walj'
/// hook`): exec form when `form` asks for it and `command` is [`plain_words`], else shell form.
pub(crate) fn handler(command: &str, form: HookForm) -> Value {
    match (form, plain_words(command)) {
        (HookForm::Exec, Some(words)) => exec_handler(&words[0], &words[1..]),
        _ => json!({"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECS}),
    }
}

/// An exec-form handler: `program` spawned with `args`, no shell.
pub(crate) fn exec_handler(program: &str, args: &[impl AsRef<str>]) -> Value {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    json!({"type": "command", "command": program, "args": args, "timeout": HOOK_TIMEOUT_SECS})
}

/// What a handler object runs, as Claude Code reads it: exec form when it has `args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HookRun<'a> {
    /// `command` (or Copilot CLI's `bash`), run by a shell.
    Shell(&'a str),
    /// `command` spawned with `args`.
    Exec { program: &'a str, args: Vec<&'a str> },
}

impl<'a> HookRun<'a> {
    /// `None` when the handler has no command, or `args` is not a list of strings.
    pub(crate) fn of(handler: &'a Value) -> Option<HookRun<'a>> {
        let command = handler.get("command").or_else(|| handler.get("bash")).and_then(Value::as_str)?;
        match handler.get("args") {
            None => Some(HookRun::Shell(command)),
            Some(Value::Array(a)) => {
                let args = a.iter().map(Value::as_str).collect::<Option<Vec<&str>>>()?;
                Some(HookRun::Exec { program: command, args })
            }
            Some(_) => None,
        }
    }

    /// How walj names it in messages and `walj doctor --json`: a shell form's command line
    /// (trimmed), an exec form's words as a JSON list (`["walj","hook"]`), so the two forms of
    /// the same command stay apart (Claude Code runs both).
    pub(crate) fn label(&self) -> String {
        match self {
            HookRun::Shell(c) => c.trim().to_string(),
            HookRun::Exec { program, args } => {
                let mut words = vec![*program];
                words.extend(args.iter().copied());
                serde_json::to_string(&words).unwrap_or_default()
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Recognising walj's handlers

/// Whether a hook command line runs walj's hook: the same string as `command`, or any command
/// ending in `walj hook` (program named `walj`, possibly with a path, quotes or `.exe`).
pub(crate) fn is_walj_command(cmd: &str, command: &str) -> bool {
    let c = cmd.trim();
    if !command.trim().is_empty() && c == command.trim() {
        return true;
    }
    let Some(prog) = c.strip_suffix("hook") else {
        return false;
    };
    if !prog.ends_with(char::is_whitespace) {
        return false;
    }
    let prog = prog.trim_end();
    let prog = prog.strip_suffix(['"', '\'']).unwrap_or(prog);
    let prog = prog.strip_suffix(".exe").unwrap_or(prog);
    let Some(before) = prog.strip_suffix("walj") else {
        return false;
    };
    before.is_empty() || before.ends_with(['/', '\\', '"', '\'']) || before.ends_with(char::is_whitespace)
}

/// Whether a program (an exec-form `command`) is walj: named `walj` or `walj.exe`, with any
/// path (`${CLAUDE_PLUGIN_ROOT}/bin/walj`, the plugin's binary or launcher).
fn is_walj_program(program: &str) -> bool {
    let p = program.trim().trim_matches(['"', '\'']);
    let name = p.rsplit(['/', '\\']).next().unwrap_or(p);
    name == "walj" || name == "walj.exe"
}

/// The one predicate "is this walj's hook" (`install`, `uninstall`, `doctor`, the plugin checks,
/// other agents' files): a handler object that runs walj's hook for `agent` (`None`: Claude Code,
/// no `--agent`). `command` is the command line walj would install (`walj hook`, this binary's
/// path); any walj counts too.
/// - Shell form: [`is_walj_command`] (with ` --agent NAME` or ` --agent=NAME` after it for an
///   agent).
/// - Exec form: `command` + `args` are the words of `command` (plus `--agent NAME`), or the
///   program is a walj ([`is_walj_program`]) and `args` are `hook` (then `--agent NAME` or
///   `--agent=NAME`).
pub(crate) fn is_walj_hook(handler: &Value, command: &str, agent: Option<&str>) -> bool {
    match HookRun::of(handler) {
        Some(HookRun::Shell(text)) => match agent {
            None => is_walj_command(text, command),
            Some(name) => {
                let rest = text
                    .trim()
                    .strip_suffix(name)
                    .and_then(|r| r.strip_suffix("--agent=").or_else(|| r.trim_end().strip_suffix("--agent")))
                    .filter(|r| r.ends_with(char::is_whitespace))
                    .map(str::trim_end);
                rest.is_some_and(|r| is_walj_command(r, command))
            }
        },
        Some(HookRun::Exec { program, args }) => {
            let tail_ok = |tail: &[&str]| match agent {
                None => tail.is_empty(),
                Some(name) => {
                    tail == ["--agent", name] || (tail.len() == 1 && tail[0].strip_prefix("--agent=") == Some(name))
                }
            };
            if let Some(words) = plain_words(command)
                && words.first().is_some_and(|w| w == program)
                && words.len() <= args.len() + 1
                && words[1..].iter().zip(&args).all(|(w, a)| w == a)
                && tail_ok(&args[words.len() - 1..])
            {
                return true;
            }
            is_walj_program(program) && args.first() == Some(&"hook") && tail_ok(&args[1..])
        }
        None => false,
    }
}

/// Whether a handler object (an element of a group's `hooks` array) is walj's Claude Code hook
/// ([`is_walj_hook`] without an agent).
pub(crate) fn is_walj_handler(handler: &Value, command: &str) -> bool {
    is_walj_hook(handler, command, None)
}

#[cfg(test)]
fn group_has_walj(group: &Value, command: &str) -> bool {
    group.get("hooks").and_then(Value::as_array).is_some_and(|hs| hs.iter().any(|h| is_walj_handler(h, command)))
}

/// The hook group `walj install` adds for `event` running `handler` (also the plugin's
/// `hooks/hooks.json`).
pub fn new_group(event: HookEvent, handler: Value) -> Value {
    match event.matcher() {
        Some(m) => json!({"matcher": m, "hooks": [handler]}),
        None => json!({"hooks": [handler]}),
    }
}

// ---------------------------------------------------------------------------------------------
// Reading and writing

pub(crate) struct Loaded {
    raw: Vec<u8>,
    pub(crate) root: Value,
}

/// Reads and validates a settings file. `Ok(None)` when it does not exist. An empty file counts as
/// The walj plugin's name (`crate::plugin::NAME`, a floor above: `tests/plugin.rs` checks both).
const PLUGIN_NAME: &str = "walj";

/// True when the settings file at `path` hooks at least one event with walj's hook (any
/// `walj hook` command, or `command`). A missing or unreadable file: false.
pub fn runs_walj(path: &Path, command: &str) -> bool {
    let Ok(Some(l)) = load(path) else { return false };
    let Some(hooks) = l.root.get("hooks").and_then(Value::as_object) else { return false };
    hooks.values().filter_map(Value::as_array).flatten().any(|g| {
        g.get("hooks").and_then(Value::as_array).is_some_and(|hs| hs.iter().any(|h| is_walj_handler(h, command)))
    })
}

/// Where walj's Claude Code hooks are installed for `project_root`, as a session started in
/// a subfolder sees them (docs/project-root.md): the settings scopes that run walj, and the
/// walj plugin when a settings file enables it (`enabledPlugins` `walj@…`: true, the later
/// scope winning) or when this process runs inside a session that loaded it (a plugin's `bin/`
/// on `PATH`, as `claude --plugin-dir` leaves no other trace).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Installed {
    pub scopes: Vec<crate::claude::paths::SettingsScope>,
    pub plugin: bool,
}

impl Installed {
    pub fn find(project_root: &Path, config_dir: &Path, command: &str) -> Installed {
        use crate::claude::paths::{SettingsScope, settings_path};
        let mut out = Installed::default();
        let mut plugin = None;
        for scope in [SettingsScope::User, SettingsScope::Project, SettingsScope::Local] {
            let path = settings_path(scope, project_root, config_dir);
            if runs_walj(&path, command) {
                out.scopes.push(scope);
            }
            if let Ok(Some(l)) = load(&path)
                && let Some(m) = l.root.get("enabledPlugins").and_then(Value::as_object)
            {
                for (id, on) in m {
                    if id.split('@').next() == Some(PLUGIN_NAME) {
                        plugin = Some(on.as_bool().unwrap_or(false));
                    }
                }
            }
        }
        let on_path = std::env::var_os("PATH").is_some_and(|p| {
            std::env::split_paths(&p).any(|d| {
                d.parent().is_some_and(|r| {
                    fs::read_to_string(r.join(".claude-plugin").join("plugin.json"))
                        .ok()
                        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                        .is_some_and(|v| v["name"] == PLUGIN_NAME)
                })
            })
        });
        out.plugin = plugin == Some(true) || on_path;
        out
    }

    pub fn any(&self) -> bool {
        self.plugin || !self.scopes.is_empty()
    }

    /// True when a session started in a subfolder runs walj's hooks: a plugin, the user's
    /// settings or the root's `settings.local.json` (not the root's `settings.json` alone).
    pub fn covers_subfolders(&self) -> bool {
        use crate::claude::paths::SettingsScope;
        self.plugin || self.scopes.iter().any(|s| matches!(s, SettingsScope::Local | SettingsScope::User))
    }
}

/// `{}`. The top level must be an object, and `hooks` (when present) an object.
pub(crate) fn load(path: &Path) -> Result<Option<Loaded>, InstallError> {
    let raw = match fs::read(path) {
        Ok(raw) => raw,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(path)(e)),
    };
    let text = std::str::from_utf8(&raw).map_err(|e| shape(path, format!("not UTF-8 text ({e})")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let root = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str::<Value>(text)
            .map_err(|source| InstallError::InvalidJson { path: path.to_path_buf(), source })?
    };
    if !root.is_object() {
        return Err(shape(path, format!("the top level is {}, expected an object", kind(&root))));
    }
    if let Some(hooks) = root.get("hooks")
        && !hooks.is_object()
    {
        return Err(shape(path, format!("`hooks` is {}, expected an object", kind(hooks))));
    }
    Ok(Some(Loaded { raw, root }))
}

fn render(root: &Value) -> Vec<u8> {
    // Printing a `Value` cannot fail; serde_json's pretty printer indents by 2 spaces.
    let mut out = serde_json::to_vec_pretty(root).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(unix)]
fn open_new(path: &Path, perms: Option<&fs::Permissions>) -> io::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    if let Some(p) = perms {
        opts.mode(p.mode() & 0o7777);
    }
    opts.open(path)
}

#[cfg(not(unix))]
fn open_new(path: &Path, _perms: Option<&fs::Permissions>) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// Writes `raw` (the previous contents) to `<file>.walj-backup`, or a timestamped name when that
/// exists already. Returns the backup's path.
fn write_backup(path: &Path, raw: &[u8], perms: Option<&fs::Permissions>) -> Result<PathBuf, InstallError> {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut n = 0u32;
    loop {
        let candidate = match n {
            0 => with_suffix(path, ".walj-backup"),
            1 => with_suffix(path, &format!(".walj-backup.{secs}")),
            _ => with_suffix(path, &format!(".walj-backup.{secs}-{n}")),
        };
        match open_new(&candidate, perms) {
            Ok(mut f) => {
                f.write_all(raw).and_then(|()| f.sync_all()).map_err(io_err(&candidate))?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(io_err(&candidate)(e)),
        }
    }
}

/// Atomically replaces `path` with `contents` ([`crate::fsutil::atomic_write`]: temporary file in
/// the same folder, fsync, rename, fsync of the folder), keeping the file's permissions and
/// owner. A symlinked settings file is followed (its target is replaced, the link kept).
/// Creates the parent folder when missing.
fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), InstallError> {
    let target = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).map_err(io_err(path))?,
        _ => path.to_path_buf(),
    };
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
    }
    crate::fsutil::atomic_write(&target, contents, crate::fsutil::file_mode(&target)).map_err(io_err(&target))
}

/// Backs up the old file (when there is one) and writes the new value. With `backup_dir` the
/// backup is the one file `<backup_dir>/<file name>.walj-backup` (replaced at each change), so
/// nothing but the settings file itself is written beside it.
fn save(
    path: &Path,
    old: Option<&Loaded>,
    root: &Value,
    backup_dir: Option<&Path>,
) -> Result<Option<PathBuf>, InstallError> {
    let perms = fs::metadata(path).ok().map(|m| m.permissions());
    let backup = match (old, backup_dir) {
        (Some(old), None) => Some(write_backup(path, &old.raw, perms.as_ref())?),
        (Some(old), Some(dir)) => {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let b = dir.join(format!("{name}.walj-backup"));
            // walj's own folder and file: private, whatever the settings file's mode.
            crate::fsutil::create_private_dir(dir).map_err(io_err(dir))?;
            crate::fsutil::atomic_write(&b, &old.raw, Some(0o600)).map_err(io_err(&b))?;
            Some(b)
        }
        (None, _) => None,
    };
    write_atomic(path, &render(root))?;
    Ok(backup)
}

// ---------------------------------------------------------------------------------------------
// install / uninstall

/// Merges walj's handlers (`command`, e.g. `walj hook`, in `form`: see [`handler`]) into the
/// settings file at `path`, creating it (and its folder) when missing. Events that already run
/// walj's hook, in either form ([`is_walj_handler`]), are left alone. Nothing is written when
/// nothing is missing.
pub fn install(path: &Path, command: &str, form: HookForm) -> Result<InstallReport, InstallError> {
    install_to(path, command, form, None)
}

/// [`install`], keeping the backup of the old file in `backup_dir` (see [`save`]) instead of
/// beside it.
pub fn install_to(
    path: &Path,
    command: &str,
    form: HookForm,
    backup_dir: Option<&Path>,
) -> Result<InstallReport, InstallError> {
    install_with(path, command, form, &[], backup_dir)
}

/// [`install_to`], plus a group (without a matcher) for each of `extra`: the
/// [`super::events::VERSIONED_EVENTS`] the installed Claude Code fires.
pub fn install_with(
    path: &Path,
    command: &str,
    form: HookForm,
    extra: &[&str],
    backup_dir: Option<&Path>,
) -> Result<InstallReport, InstallError> {
    if command.trim().is_empty() {
        return Err(InstallError::EmptyCommand);
    }
    let mut groups: Vec<(&str, Value)> =
        HookEvent::ALL.iter().map(|e| (e.name(), new_group(*e, handler(command, form)))).collect();
    groups.extend(extra.iter().map(|e| (*e, json!({"hooks": [handler(command, form)]}))));
    install_groups(path, &groups, &|h| is_walj_handler(h, command), backup_dir)
}

/// Merges one group per event into a settings file of Claude Code's shape (`{"hooks": {EVENT:
/// [{"matcher", "hooks": [HANDLER]}]}}`, which Codex's `hooks.json` and Gemini CLI's
/// `settings.json` share): an event where a handler `ours` recognises already runs is left
/// alone. Creates the file (and its folder) when missing; nothing is written when nothing is
/// missing.
pub fn install_groups(
    path: &Path,
    groups: &[(&str, Value)],
    ours: &dyn Fn(&Value) -> bool,
    backup_dir: Option<&Path>,
) -> Result<InstallReport, InstallError> {
    let loaded = load(path)?;
    let mut root = loaded.as_ref().map_or_else(|| Value::Object(Map::new()), |l| l.root.clone());
    let mut report = InstallReport { path: path.to_path_buf(), added: vec![], already: vec![], backup: None };

    // Validate before changing anything.
    if let Some(hooks) = root.get("hooks").and_then(Value::as_object) {
        for (ev, _) in groups {
            if let Some(v) = hooks.get(*ev)
                && !v.is_array()
            {
                return Err(shape(path, format!("`hooks.{ev}` is {}, expected an array", kind(v))));
            }
        }
    }

    let Some(obj) = root.as_object_mut() else {
        return Err(shape(path, "the top level is not an object"));
    };
    let hooks_absent = !obj.contains_key("hooks");
    let mut hooks = match obj.get("hooks") {
        Some(Value::Object(h)) => h.clone(),
        _ => Map::new(),
    };
    for (ev, group) in groups {
        let existing = hooks.entry(*ev).or_insert_with(|| Value::Array(vec![]));
        let Some(existing) = existing.as_array_mut() else {
            return Err(shape(path, format!("`hooks.{ev}` is not an array")));
        };
        let has = |g: &Value| g.get("hooks").and_then(Value::as_array).is_some_and(|hs| hs.iter().any(ours));
        if existing.iter().any(has) {
            report.already.push(ev.to_string());
        } else {
            existing.push(group.clone());
            report.added.push(ev.to_string());
        }
    }
    if report.added.is_empty() {
        return Ok(report);
    }
    if hooks_absent {
        obj.insert("hooks".to_string(), Value::Object(hooks));
    } else if let Some(slot) = obj.get_mut("hooks") {
        *slot = Value::Object(hooks);
    }
    report.backup = save(path, loaded.as_ref(), &root, backup_dir)?;
    Ok(report)
}

/// Removes exactly walj's handlers (those [`is_walj_handler`] recognises, in either form) from every event of the
/// settings file, then the groups, event keys and `hooks` object left empty by that removal.
/// A missing file, or one without walj's handlers, is left alone.
pub fn uninstall(path: &Path, command: &str) -> Result<InstallReport, InstallError> {
    uninstall_to(path, command, None)
}

/// [`uninstall`], keeping the backup in `backup_dir` (see [`save`]).
pub fn uninstall_to(path: &Path, command: &str, backup_dir: Option<&Path>) -> Result<InstallReport, InstallError> {
    let events: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
    uninstall_groups(path, &events, &|h| is_walj_handler(h, command), backup_dir)
}

/// Removes the handlers `ours` recognises from every event of a settings file of Claude Code's
/// shape (see [`install_groups`]), then what that removal left empty. `events`: the events
/// reported as `already` (without such a handler) when none was removed from them.
pub fn uninstall_groups(
    path: &Path,
    events: &[&str],
    ours: &dyn Fn(&Value) -> bool,
    backup_dir: Option<&Path>,
) -> Result<InstallReport, InstallError> {
    let mut report = InstallReport { path: path.to_path_buf(), added: vec![], already: vec![], backup: None };
    let Some(loaded) = load(path)? else {
        report.already = events.iter().map(|e| e.to_string()).collect();
        return Ok(report);
    };
    let mut root = loaded.root.clone();
    if let Some(obj) = root.as_object_mut()
        && let Some(Value::Object(hooks)) = obj.get_mut("hooks")
    {
        let keys: Vec<String> = hooks.keys().cloned().collect();
        for key in keys {
            let Some(Value::Array(groups)) = hooks.get_mut(&key) else {
                continue;
            };
            let mut removed = false;
            groups.retain_mut(|group| {
                let Some(handlers) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                    return true;
                };
                let before = handlers.len();
                handlers.retain(|h| !ours(h));
                if handlers.len() == before {
                    return true;
                }
                removed = true;
                !handlers.is_empty()
            });
            if removed {
                if groups.is_empty() {
                    hooks.shift_remove(&key);
                }
                report.added.push(key);
            }
        }
        if !report.added.is_empty() && hooks.is_empty() {
            obj.shift_remove("hooks");
        }
    }
    report.already = events.iter().filter(|e| !report.added.iter().any(|a| a == *e)).map(|e| e.to_string()).collect();
    if report.added.is_empty() {
        return Ok(report);
    }
    report.backup = save(path, Some(&loaded), &root, backup_dir)?;
    Ok(report)
}

/// Reads a settings-shaped JSON file (`Ok(None)`: it does not exist): for other agents' checks.
pub fn read_json(path: &Path) -> Result<Option<Value>, InstallError> {
    Ok(load(path)?.map(|l| l.root))
}

/// Writes `root` over `path` atomically after a backup (see [`save`]): for other agents' files.
pub fn write_json(path: &Path, root: &Value, backup_dir: Option<&Path>) -> Result<Option<PathBuf>, InstallError> {
    let old = load(path)?;
    save(path, old.as_ref(), root, backup_dir)
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::claude::events::TOOL_MATCHER;
    use crate::claude::paths::{SettingsScope, settings_path};
    use proptest::prelude::*;
    use tempfile::TempDir;

    const CMD: &str = "walj hook";

    fn settings(dir: &TempDir) -> PathBuf {
        settings_path(SettingsScope::Project, dir.path(), Path::new("/nonexistent-home/.claude"))
    }

    fn write_value(path: &Path, v: &Value) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, render(v)).unwrap();
    }

    fn read_value(path: &Path) -> Value {
        serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
    }

    /// Order-sensitive comparison (`Value`'s `==` ignores key order with `preserve_order`).
    fn assert_same(a: &Value, b: &Value) {
        assert_eq!(a, b);
        assert_eq!(serde_json::to_string(a).unwrap(), serde_json::to_string(b).unwrap());
    }

    fn backups(dir: &Path) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".walj-backup"))
            .collect();
        v.sort();
        v
    }

    fn names() -> Vec<String> {
        HookEvent::ALL.iter().map(|e| e.name().to_string()).collect()
    }

    /// The settings value with every group walj added taken out (and the keys install created).
    fn strip_walj(mut v: Value) -> Value {
        let hooks = v["hooks"].as_object_mut().unwrap();
        let keys: Vec<String> = hooks.keys().cloned().collect();
        for k in keys {
            let arr = hooks[&k].as_array_mut().unwrap();
            arr.retain(|g| !group_has_walj(g, CMD));
            if arr.is_empty() {
                hooks.shift_remove(&k);
            }
        }
        v
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

    #[test]
    fn recognises_walj_commands() {
        for c in [
            "walj hook",
            "  walj hook  ",
            "/usr/local/bin/walj hook",
            "'/usr/local/bin/walj' hook",
            "\"/opt/my dir/walj\" hook",
            "C:\\tools\\walj.exe hook",
            "cd \"$CLAUDE_PROJECT_DIR\" && walj hook",
            "walj\thook",
        ] {
            assert!(is_walj_command(c, CMD), "{c}");
        }
        for c in
            ["notwalj hook", "walj hooks", "walj-dev hook", "walj", "hook", "echo walj hook x", "walj  hook --x", ""]
        {
            assert!(!is_walj_command(c, CMD), "{c}");
        }
        // The exact command given is always recognised.
        assert!(is_walj_command("/x/y/walj-dev hook --v", "/x/y/walj-dev hook --v"));
    }

    #[test]
    fn recognises_walj_handlers_in_both_forms() {
        let exec = |c: &str, a: &[&str]| json!({"type": "command", "command": c, "args": a});
        let shell = |c: &str| json!({"type": "command", "command": c});
        for h in [
            exec("walj", &["hook"]),
            exec("/usr/local/bin/walj", &["hook"]),
            exec("/opt/my dir/walj", &["hook"]),
            exec("${CLAUDE_PLUGIN_ROOT}/bin/walj", &["hook"]),
            exec("C:\\tools\\walj.exe", &["hook"]),
            exec("'/opt/x/walj'", &["hook"]),
            shell("\"${CLAUDE_PLUGIN_ROOT}/bin/walj\" hook"),
            shell("'/usr/local/bin/walj' hook"),
            // The configured command, split, whatever the program is called.
            exec("/x/walj-dev", &["hook", "--v"]),
        ] {
            assert!(is_walj_hook(&h, "/x/walj-dev hook --v", None), "{h}");
        }
        for h in [
            exec("walj", &["hooks"]),
            exec("walj", &[]),
            exec("walj", &["hook", "--agent", "codex"]),
            exec("walj-dev", &["hook"]),
            exec("notwalj", &["hook"]),
            exec("walj hook", &[]),
            exec("sh", &["-c", "walj hook"]),
            json!({"type": "command", "command": "walj", "args": "hook"}),
            json!({"type": "command", "command": "walj", "args": [1]}),
            json!({"type": "command"}),
            shell("walj hooks"),
        ] {
            assert!(!is_walj_handler(&h, CMD), "{h}");
        }
        // Agents: `--agent NAME` (or `--agent=NAME`) after `hook`, in both forms.
        assert!(is_walj_hook(&exec("walj", &["hook", "--agent", "codex"]), CMD, Some("codex")));
        assert!(is_walj_hook(&exec("/b/walj", &["hook", "--agent=gemini"]), CMD, Some("gemini")));
        assert!(is_walj_hook(&json!({"bash": "walj hook --agent copilot"}), CMD, Some("copilot")));
        assert!(!is_walj_hook(&exec("walj", &["hook", "--agent", "codex"]), CMD, Some("gemini")));
        assert!(!is_walj_hook(&exec("walj", &["hook"]), CMD, Some("codex")));
        assert!(!is_walj_hook(&shell("walj hook--agent codex"), CMD, Some("codex")));
    }

    #[test]
    fn exec_form_from_plain_words_only() {
        assert_eq!(plain_words("walj hook").unwrap(), ["walj", "hook"]);
        assert_eq!(plain_words("  '/opt/my dir/walj'  hook ").unwrap(), ["/opt/my dir/walj", "hook"]);
        assert_eq!(plain_words("'/it'\\''s/walj' hook").unwrap(), ["/it's/walj", "hook"]);
        assert_eq!(plain_words("\"/a b/walj\" hook").unwrap(), ["/a b/walj", "hook"]);
        assert_eq!(plain_words("/a\\ b/walj hook --agent=x").unwrap(), ["/a b/walj", "hook", "--agent=x"]);
        for c in [
            "",
            "  ",
            "cd \"$CLAUDE_PROJECT_DIR\" && walj hook",
            "$HOME/bin/walj hook",
            "~/bin/walj hook",
            "walj hook; echo",
            "walj hook > /dev/null",
            "FOO=1 walj hook",
            "exec walj hook",
            "walj hook # note",
            "\"${CLAUDE_PLUGIN_ROOT}/bin/walj\" hook",
            "'unterminated hook",
            "`which walj` hook",
        ] {
            assert_eq!(plain_words(c), None, "{c}");
        }
        assert_eq!(handler("'/opt/my dir/walj' hook", HookForm::Exec)["command"], "/opt/my dir/walj");
        assert_eq!(handler("'/opt/my dir/walj' hook", HookForm::Exec)["args"], json!(["hook"]));
        assert_eq!(
            handler("walj hook", HookForm::Shell),
            json!({"type": "command", "command": "walj hook", "timeout": 10})
        );
        // What is not plain words stays shell form.
        let h = handler("cd \"$CLAUDE_PROJECT_DIR\" && walj hook", HookForm::Exec);
        assert_eq!(h["command"], "cd \"$CLAUDE_PROJECT_DIR\" && walj hook");
        assert!(h.get("args").is_none());
    }

    #[test]
    fn versions_choose_the_form() {
        assert_eq!(HookForm::for_version("2.1.328 (Claude Code)"), Some(HookForm::Exec));
        assert_eq!(HookForm::for_version("2.1.139 (Claude Code)"), Some(HookForm::Exec));
        assert_eq!(HookForm::for_version("2.1.138 (Claude Code)"), Some(HookForm::Shell));
        assert_eq!(HookForm::for_version("1.0.99"), Some(HookForm::Shell));
        assert_eq!(HookForm::for_version("3.0.0"), Some(HookForm::Exec));
        assert_eq!(HookForm::for_version("Claude Code"), None);
        assert_eq!(exec_form_since(), "2.1.139");
    }

    /// A settings file with walj in both forms and another tool's exec-form hook: install adds
    /// nothing, uninstall takes both walj handlers out and keeps the other tool's.
    #[test]
    fn mixed_forms_install_nothing_and_uninstall_both() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        let other = json!({"type": "command", "command": "/usr/bin/lint", "args": ["--hook"]});
        let before = json!({"hooks": {"Stop": [{"hooks": [other.clone()]}]}});
        write_value(&path, &before);
        install(&path, CMD, HookForm::Exec).unwrap();
        let mut v = read_value(&path);
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["args"], json!(["hook"]));
        // Add walj's shell form beside the exec form in every event: still installed.
        for (_, groups) in v["hooks"].as_object_mut().unwrap() {
            groups.as_array_mut().unwrap().push(json!({"hooks": [{"type": "command", "command": CMD, "timeout": 10}]}));
        }
        write_value(&path, &v);
        let bytes = fs::read(&path).unwrap();
        let r = install(&path, CMD, HookForm::Shell).unwrap();
        assert!(r.added.is_empty(), "{r:?}");
        let r = install(&path, CMD, HookForm::Exec).unwrap();
        assert!(r.added.is_empty(), "{r:?}");
        assert_eq!(fs::read(&path).unwrap(), bytes);
        uninstall(&path, CMD).unwrap();
        assert_same(&read_value(&path), &before);
    }

    #[test]
    fn install_into_missing_file() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        let r = install(&path, CMD, HookForm::Shell).unwrap();
        assert_eq!(r.added, names());
        assert!(r.already.is_empty());
        assert_eq!(r.backup, None);
        assert!(r.changed());

        let text = fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n"));
        assert!(text.starts_with("{\n  \"hooks\": {\n    \"PreToolUse\": [\n"), "{text}");
        let v = read_value(&path);
        let hooks = v["hooks"].as_object().unwrap();
        assert_eq!(hooks.keys().cloned().collect::<Vec<_>>(), names());
        assert_eq!(
            hooks["PreToolUse"],
            json!([{"matcher": TOOL_MATCHER, "hooks": [{"type": "command", "command": CMD, "timeout": 10}]}])
        );
        assert_eq!(hooks["SessionEnd"], json!([{"hooks": [{"type": "command", "command": CMD, "timeout": 10}]}]));
        assert!(backups(path.parent().unwrap()).is_empty());
    }

    #[test]
    fn install_keeps_other_hooks_and_keys() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        let before = busy_settings();
        write_value(&path, &before);
        let original_bytes = fs::read(&path).unwrap();

        let r = install(&path, CMD, HookForm::Shell).unwrap();
        assert_eq!(r.added, names());
        let backup = r.backup.clone().unwrap();
        assert_eq!(backup, with_suffix(&path, ".walj-backup"));
        assert_eq!(fs::read(&backup).unwrap(), original_bytes);

        let after = read_value(&path);
        let keys: Vec<&String> = after.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["permissions", "hooks", "env", "model"]);
        let hook_keys: Vec<String> = after["hooks"].as_object().unwrap().keys().cloned().collect();
        // Existing event keys first, in their order; new ones appended in HOOK_EVENTS order.
        assert_eq!(
            hook_keys,
            [
                "PreToolUse",
                "Stop",
                "PostToolUse",
                "PostToolUseFailure",
                "UserPromptSubmit",
                "StopFailure",
                "SubagentStop",
                "PreCompact",
                "SessionStart",
                "SessionEnd"
            ]
        );
        // The other tool's groups stay first in their events.
        assert_eq!(after["hooks"]["PreToolUse"][0], before["hooks"]["PreToolUse"][0]);
        assert_eq!(after["hooks"]["PreToolUse"][1]["matcher"], TOOL_MATCHER);
        assert_eq!(after["hooks"]["Stop"][0], before["hooks"]["Stop"][0]);
        // Removing walj's groups gives back the original, order included.
        assert_same(&strip_walj(after.clone()), &before);

        // Idempotent: second install changes nothing and makes no second backup.
        let bytes = fs::read(&path).unwrap();
        let r2 = install(&path, CMD, HookForm::Shell).unwrap();
        assert!(r2.added.is_empty());
        assert_eq!(r2.already, names());
        assert_eq!(r2.backup, None);
        assert_eq!(fs::read(&path).unwrap(), bytes);
        assert_eq!(backups(path.parent().unwrap()), vec![backup.clone()]);

        // An absolute-path command counts as installed too.
        let r3 = install(&path, "'/usr/local/bin/walj' hook", HookForm::Shell).unwrap();
        assert!(r3.added.is_empty());
        assert_eq!(fs::read(&path).unwrap(), bytes);

        // Uninstall restores the original value, and even the original bytes.
        let u = uninstall(&path, CMD).unwrap();
        // Removed events are reported in the file's order.
        assert_eq!(u.added, hook_keys);
        assert!(u.already.is_empty());
        let second_backup = u.backup.unwrap();
        assert_ne!(second_backup, backup);
        assert!(second_backup.to_string_lossy().contains(".walj-backup."));
        assert_eq!(fs::read(&second_backup).unwrap(), bytes);
        assert_same(&read_value(&path), &before);
        assert_eq!(fs::read(&path).unwrap(), original_bytes);

        // Uninstalling again does nothing.
        let u2 = uninstall(&path, CMD).unwrap();
        assert!(u2.added.is_empty() && u2.backup.is_none());
        assert_eq!(fs::read(&path).unwrap(), original_bytes);
    }

    #[test]
    fn install_completes_a_partial_install() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        let before = json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "echo a"},
            {"type": "command", "command": "/opt/bin/walj hook", "timeout": 10}
        ]}]}});
        write_value(&path, &before);
        let r = install(&path, CMD, HookForm::Shell).unwrap();
        assert_eq!(r.already, ["Stop"]);
        assert_eq!(r.added.len(), HookEvent::ALL.len() - 1);
        let after = read_value(&path);
        assert_eq!(after["hooks"]["Stop"], before["hooks"]["Stop"]);

        // Uninstall removes walj's handler from the shared group but keeps the group and "echo a".
        uninstall(&path, CMD).unwrap();
        assert_same(
            &read_value(&path),
            &json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo a"}]}]}}),
        );
    }

    #[test]
    fn uninstall_missing_file_is_nothing_to_do() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        let r = uninstall(&path, CMD).unwrap();
        assert!(r.added.is_empty() && r.backup.is_none());
        assert!(!path.exists());
        assert!(!path.parent().unwrap().exists());
    }

    #[test]
    fn uninstall_of_created_file_leaves_empty_object() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        install(&path, CMD, HookForm::Shell).unwrap();
        uninstall(&path, CMD).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}\n");
    }

    #[test]
    fn bad_input_is_refused_and_file_unchanged() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        for (text, needle) in [
            ("{\"hooks\": {,}", "not valid JSON"),
            ("{\"a\": 1, // comment\n}", "not valid JSON"),
            ("[1, 2]", "top level is an array"),
            ("{\"hooks\": []}", "`hooks` is an array"),
            ("{\"hooks\": \"walj hook\"}", "`hooks` is a string"),
            ("{\"hooks\": {\"Stop\": {\"hooks\": []}}}", "`hooks.Stop` is an object, expected an array"),
        ] {
            fs::write(&path, text).unwrap();
            let err = install(&path, CMD, HookForm::Shell).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(err.contains(&path.display().to_string()), "{err}");
            assert_eq!(fs::read_to_string(&path).unwrap(), text);
            if !text.contains("\"Stop\"") {
                let err = uninstall(&path, CMD).unwrap_err().to_string();
                assert!(err.contains(needle), "{err}");
                assert_eq!(fs::read_to_string(&path).unwrap(), text);
            }
            assert!(backups(path.parent().unwrap()).is_empty());
        }
        assert!(matches!(install(&path, "  ", HookForm::Shell), Err(InstallError::EmptyCommand)));
    }

    #[test]
    fn empty_file_counts_as_empty_object() {
        let dir = TempDir::new().unwrap();
        let path = settings(&dir);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, "\n").unwrap();
        let r = install(&path, CMD, HookForm::Shell).unwrap();
        assert_eq!(r.added, names());
        assert!(r.backup.is_some());
    }

    #[cfg(unix)]
    #[test]
    fn keeps_permissions_and_follows_symlinks() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new().unwrap();
        let real = dir.path().join("dotfiles-settings.json");
        fs::write(&real, "{\"model\": \"opus\"}").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        let path = settings(&dir);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&real, &path).unwrap();

        install(&path, CMD, HookForm::Shell).unwrap();
        assert!(fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
        assert_eq!(read_value(&real)["model"], "opus");
        assert!(read_value(&real)["hooks"]["PreToolUse"].is_array());
        assert_eq!(fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o600);
        let backup = with_suffix(&path, ".walj-backup");
        assert_eq!(fs::metadata(&backup).unwrap().permissions().mode() & 0o777, 0o600);
        // No temporary files left behind.
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .chain(fs::read_dir(path.parent().unwrap()).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("walj-tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    fn arb_scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z ]{0,8}".prop_map(Value::String),
        ]
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        arb_scalar().prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-zA-Z]{1,6}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn arb_handler() -> impl Strategy<Value = Value> {
        (
            prop::sample::select(vec![
                "echo hi",
                "other-tool hook",
                "/usr/bin/lint --fix",
                "notwalj hook",
                "walj-dev hook",
                "walj hooks",
                "python3 ~/.claude/hooks/guard.py",
            ]),
            prop::option::of(1u32..700),
            any::<bool>(),
            prop::option::of(prop::sample::select(vec![vec![], vec!["hooks"], vec!["hook", "--x"], vec!["check"]])),
        )
            .prop_map(|(cmd, timeout, typed, args)| {
                let mut m = Map::new();
                if typed {
                    m.insert("type".into(), json!("command"));
                }
                m.insert("command".into(), json!(cmd));
                // Exec form: the first word as the program (`walj-dev` [`hook`] is not walj's).
                if let Some(args) = args {
                    let program = cmd.split(' ').next().unwrap_or(cmd);
                    let mut all: Vec<&str> = cmd.split(' ').skip(1).collect();
                    all.extend(args);
                    m.insert("command".into(), json!(program));
                    m.insert("args".into(), json!(all));
                }
                if let Some(t) = timeout {
                    m.insert("timeout".into(), json!(t));
                }
                Value::Object(m)
            })
    }

    fn arb_group() -> impl Strategy<Value = Value> {
        (
            prop::option::of(prop::sample::select(vec!["Bash", "Edit|Write", "*", "", "mcp__.*", TOOL_MATCHER])),
            prop::collection::vec(arb_handler(), 0..3),
        )
            .prop_map(|(matcher, hooks)| {
                let mut m = Map::new();
                if let Some(mt) = matcher {
                    m.insert("matcher".into(), json!(mt));
                }
                m.insert("hooks".into(), Value::Array(hooks));
                Value::Object(m)
            })
    }

    /// Settings files as users keep them (other hooks, other keys, any order); also used by
    /// doctor's tests, which check that doctor finds every hook install writes.
    pub(crate) fn arb_settings() -> impl Strategy<Value = Value> {
        let events = prop::sample::select(vec![
            "PreToolUse",
            "PostToolUse",
            "Stop",
            "SessionStart",
            "SessionEnd",
            "Notification",
            "UserPromptSubmit",
        ]);
        let hooks =
            prop::option::of(prop::collection::vec((events, prop::collection::vec(arb_group(), 1..3)), 1..5).prop_map(
                |evs| Value::Object(evs.into_iter().map(|(k, v)| (k.to_string(), Value::Array(v))).collect()),
            ));
        let others = prop::collection::vec(
            (
                prop::sample::select(vec!["permissions", "env", "model", "statusLine", "includeCoAuthoredBy", "x"]),
                arb_json(),
            ),
            0..5,
        );
        (hooks, others, any::<prop::sample::Index>()).prop_map(|(hooks, others, at)| {
            let mut m: Map<String, Value> = others.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            if let Some(h) = hooks {
                let pos = at.index(m.len() + 1);
                let mut entries: Vec<(String, Value)> = m.into_iter().collect();
                entries.insert(pos, ("hooks".to_string(), h));
                m = entries.into_iter().collect();
            }
            Value::Object(m)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn install_then_uninstall_round_trips(original in arb_settings(), absolute in any::<bool>(), exec in any::<bool>()) {
            let command = if absolute { "'/usr/local/bin/walj' hook" } else { CMD };
            let form = if exec { HookForm::Exec } else { HookForm::Shell };
            let dir = TempDir::new().unwrap();
            let path = settings(&dir);
            write_value(&path, &original);
            let original_bytes = fs::read(&path).unwrap();

            let r = install(&path, command, form).unwrap();
            prop_assert_eq!(r.added.len() + r.already.len(), HookEvent::ALL.len());
            let installed = fs::read(&path).unwrap();

            let r2 = install(&path, command, form).unwrap();
            prop_assert!(r2.added.is_empty());
            prop_assert_eq!(&fs::read(&path).unwrap(), &installed);

            uninstall(&path, command).unwrap();
            let back = read_value(&path);
            prop_assert_eq!(&back, &original);
            prop_assert_eq!(serde_json::to_string(&back).unwrap(), serde_json::to_string(&original).unwrap());
            prop_assert_eq!(fs::read(&path).unwrap(), original_bytes);
        }
    }
}
