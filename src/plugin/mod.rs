//! walj as a Claude Code plugin: the files of the plugin folder `walj plugin --out DIR` writes,
//! and of the marketplace plugin committed in the repository (`plugin/`, listed by
//! `.claude-plugin/marketplace.json`).
//!
//! Both are the same files but one: `bin/walj` is a copy of the running binary in a generated
//! plugin, and the POSIX sh launcher [`LAUNCHER`] (which runs an installed walj) in the
//! marketplace one. The hooks are the table `walj install` writes ([`HookEvent::ALL`],
//! [`install::new_group`]), each running [`HOOK_PROGRAM`] with [`HOOK_ARGS`] in exec form (no
//! `sh -c`: in the self-contained plugin Claude Code spawns walj itself; in the marketplace one,
//! the launcher). Exec form needs Claude Code [`install::EXEC_FORM_SINCE`], which the manifest
//! states as its `engines` range ([`min_claude_code`]).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::claude::events::HookEvent;
use crate::claude::settings as install;
use crate::fsutil;

/// The plugin's name: its slash commands are `/walj:<command>`.
pub(crate) const NAME: &str = "walj";
/// The marketplace's name in `.claude-plugin/marketplace.json`: `claude plugin install walj@walj`.
pub(crate) const MARKETPLACE: &str = "walj";
/// The marketplace plugin's folder, relative to the repository root.
pub(crate) const MARKETPLACE_SOURCE: &str = "./plugin";
/// Who the manifests name as author and owner.
const AUTHOR: &str = "walj contributors";
/// The program every hook runs (exec form). Claude Code substitutes `${CLAUDE_PLUGIN_ROOT}` as
/// plain text, so a plugin folder with spaces in its path needs no quoting.
pub(crate) const HOOK_PROGRAM: &str = "${CLAUDE_PLUGIN_ROOT}/bin/walj";
/// Its arguments.
pub(crate) const HOOK_ARGS: [&str; 1] = ["hook"];

/// The plugin's `engines` range for Claude Code: the first version that honours exec form.
pub(crate) fn min_claude_code() -> String {
    format!(">={}", install::exec_form_since())
}
/// `bin/walj` of the marketplace plugin: finds an installed walj, never fails a hook.
pub const LAUNCHER: &str = include_str!("launcher.sh");
/// The plugin's icon (a square 512 px PNG, as `claude plugin validate --strict` asks), and
/// where it goes in the plugin folder (named by the manifest's `icon`).
pub(crate) const ICON: &[u8] = include_bytes!("icon.png");
pub(crate) const ICON_PATH: &str = ".claude-plugin/icon.png";
/// The environment variable the launcher sets for the walj it runs: its plugin folder (so
/// `walj doctor` run from a `--plugin-dir` plugin checks that plugin).
pub(crate) const ROOT_ENV: &str = "WALJ_PLUGIN_ROOT";

/// What goes into `bin/walj`.
#[derive(Debug, Clone)]
pub(crate) enum Bin {
    /// A copy of this binary (the self-contained plugin).
    Copy(PathBuf),
    /// The sh launcher (the marketplace plugin, which ships no binary).
    Launcher,
}

/// One file of the plugin folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PluginFile {
    /// Relative to the plugin root, `/`-separated.
    pub path: String,
    pub contents: Vec<u8>,
    pub executable: bool,
}

impl PluginFile {
    fn text(path: &str, contents: String) -> PluginFile {
        PluginFile { path: path.to_string(), contents: contents.into_bytes(), executable: false }
    }
}

fn pretty(v: &Value) -> String {
    // serde_json cannot fail on a Value built from json!.
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

/// `.claude-plugin/plugin.json`: metadata from Cargo.toml.
pub(crate) fn manifest() -> Value {
    let mut m = json!({
        "name": NAME,
        "version": env!("CARGO_PKG_VERSION"),
        "description": env!("CARGO_PKG_DESCRIPTION"),
        "author": {"name": AUTHOR},
        "license": env!("CARGO_PKG_LICENSE"),
        "keywords": ["journal", "crash-recovery", "hooks", "undo"],
        "engines": {"claude-code": min_claude_code()},
        "icon": ICON_PATH,
        // walj's hooks and commands reach no network host (`walj sync` pushes to the git
        // remote the user names, and is never run by the plugin).
        "network": {"hosts": []},
    });
    // Cargo.toml's `homepage` (else `repository`), when it has one.
    let homepage = [env!("CARGO_PKG_HOMEPAGE"), env!("CARGO_PKG_REPOSITORY")].into_iter().find(|h| !h.is_empty());
    if let Some(h) = homepage {
        m["homepage"] = json!(h);
    }
    m
}

/// `hooks/hooks.json`: the events, matchers and timeouts of `walj install`, running
/// [`HOOK_PROGRAM`] [`HOOK_ARGS`] in exec form, plus every versioned event
/// ([`crate::claude::events::VERSIONED_EVENTS`]): a plugin cannot ask which Claude Code loads
/// it, and an older one ignores an event it does not know (2.1.328: "unknown hook event; entry
/// ignored at runtime", the one warning its `plugin validate --strict` gives).
pub(crate) fn hooks() -> Value {
    let mut events = serde_json::Map::new();
    for ev in HookEvent::ALL {
        let handler = install::exec_handler(HOOK_PROGRAM, &HOOK_ARGS);
        events.insert(ev.name().to_string(), json!([install::new_group(ev, handler)]));
    }
    for (name, _) in crate::claude::events::VERSIONED_EVENTS {
        let handler = install::exec_handler(HOOK_PROGRAM, &HOOK_ARGS);
        events.insert(name.to_string(), json!([{"hooks": [handler]}]));
    }
    json!({
        "description": "walj journals every file change of the session (write-ahead) for crash recovery",
        "hooks": events,
    })
}

/// The MCP server's name (Claude sees its tools as `mcp__plugin_walj_walj__recover`, …, from
/// the plugin; `mcp__walj__recover` from `walj install --mcp`).
pub(crate) const MCP_SERVER: &str = "walj";
/// Its arguments.
pub(crate) const MCP_ARGS: [&str; 1] = ["mcp"];

/// `.mcp.json` at the plugin's root: `walj mcp` ([`crate::mcp`]), run by [`HOOK_PROGRAM`].
pub(crate) fn mcp_servers() -> Value {
    json!({"mcpServers": {MCP_SERVER: {"command": HOOK_PROGRAM, "args": MCP_ARGS}}})
}

/// `.claude-plugin/marketplace.json` at the repository root: one plugin, in [`MARKETPLACE_SOURCE`].
pub(crate) fn marketplace() -> Value {
    json!({
        "name": MARKETPLACE,
        "owner": {"name": AUTHOR},
        "description": "walj, the write-ahead journal for Claude Code sessions",
        "plugins": [{
            "name": NAME,
            "source": MARKETPLACE_SOURCE,
            "description": env!("CARGO_PKG_DESCRIPTION"),
            "version": env!("CARGO_PKG_VERSION"),
            "author": {"name": AUTHOR},
            "license": env!("CARGO_PKG_LICENSE"),
            "category": "productivity",
        }],
    })
}

/// The text of `.claude-plugin/marketplace.json`.
pub fn marketplace_file() -> String {
    pretty(&marketplace())
}

/// A slash command: `commands/<name>.md`, run as `/walj:<name>`.
struct SlashCommand {
    name: &'static str,
    description: &'static str,
    /// The walj arguments the command runs (its output is put into the prompt).
    args: &'static str,
    /// What Claude is asked to do with the output.
    ask: &'static str,
}

const COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        name: "recover",
        description: "What walj journaled and is still unresolved (crashed or interrupted sessions)",
        args: "recover",
        ask: "Summarise this for the user: which sessions ended abnormally, which changes are unresolved \
              and what each one did. Suggest `walj diff <id>` for a closer look and `walj tui` to triage.",
    },
    SlashCommand {
        name: "sessions",
        description: "This project's sessions as walj knows them (state, times, prompts, unresolved entries)",
        args: "sessions list",
        ask: "Show this to the user as it is, then point out any crashed session and its unresolved entries.",
    },
    SlashCommand {
        name: "handoff",
        description: "The brief for the unresolved changes walj journaled, to finish or undo them now",
        args: "handoff --print",
        ask: "This is walj's brief on changes an earlier session left unresolved. Read it, check each file \
              on disk, and tell the user what you propose for each entry before changing anything.",
    },
    SlashCommand {
        name: "status",
        description: "walj's summary of the journal, store and sessions",
        args: "status",
        ask: "Show this to the user as it is.",
    },
    SlashCommand {
        name: "log",
        description: "walj's journal entries in every state (the last 50)",
        args: "log",
        ask: "Show this to the user as it is; point out entries that are not settled.",
    },
    SlashCommand {
        name: "doctor",
        description: "Check walj's hooks, journal and error log",
        args: "doctor --plugin-dir \"${CLAUDE_PLUGIN_ROOT}\"",
        ask: "Show this to the user as it is and explain any warning or error and how to fix it.",
    },
];

/// What every command tells Claude about running walj itself.
const CLAUDE_MAY_RUN: &str = "The plugin's `bin/` folder is on your Bash tool's PATH, so you can run `walj` yourself: \
the read-only commands (`walj recover`, `walj log`, `walj status`, `walj diff <id>`, `walj sessions list`, \
`walj sessions show <sid>`, `walj handoff --print`) any time. Commands that change files or resolve \
entries (`walj revert`, `walj mark`, `walj undo`, `walj handoff` without `--print`, `walj sessions delete`, \
`walj checkpoint`, `walj compact`, `walj install`) only when the user asks for that exact command: run in your \
tools they refuse without `--yes`, and with it the journal records that you (`actor: claude`) acted.";

/// The words of a command before its options: what its `allowed-tools` pattern allows.
fn allowed(args: &str) -> &str {
    args.split(" --").next().unwrap_or(args)
}

fn command_file(c: &SlashCommand) -> String {
    format!(
        "---\ndescription: {desc}\nallowed-tools: Bash(walj {allow}:*)\n---\n\
         Output of `walj {args}` in this project:\n\n!`walj {args}`\n\n{ask}\n\n{may}\n",
        desc = c.description,
        allow = allowed(c.args),
        args = c.args,
        ask = c.ask,
        may = CLAUDE_MAY_RUN,
    )
}

/// `README.md` of the plugin folder.
fn readme() -> String {
    let mut s = format!(
        "# walj, as a Claude Code plugin\n\n\
         {desc}. Every Edit, Write, MultiEdit, NotebookEdit and Bash call of a session is journaled in \
         `.walj/journal.jsonl` (with the file's bytes before and after, in `.walj/store/`) before and \
         after it runs, so that after a crash, a kill or a bad session you can see what was in flight \
         (`walj recover`, `walj tui`), read diffs, revert, or hand the unfinished work back to Claude.\n\n\
         ## What it adds\n\n\
         - Hooks (`hooks/hooks.json`) on the same events, matchers and timeouts as `walj install`, running \
         `{hook} hook` in exec form (`\"command\": \"{hook}\", \"args\": [\"hook\"]`: Claude Code spawns \
         `bin/walj` itself, no `sh -c` in between). Exec form needs Claude Code {since} or later: the plugin's \
         `engines` asks for `{engines}`.\n\
         - `bin/walj`: walj itself, on the Bash tool's PATH, so Claude can run it too. In the plugin \
         written by `walj plugin --out DIR` it is a copy of the walj binary; in the marketplace plugin it is \
         a small sh launcher that runs the walj installed on this machine (PATH, then `~/.cargo/bin`) and \
         never fails a hook: without walj, it says at session start how to install it.\n\
         - An MCP server (`.mcp.json`: `{hook} mcp`): Claude can ask the journal itself, read-only \
         (`recover`, `entry`, `session`, `path_log`, `ops`, `bisect`); revert, mark, hand-back and undo are \
         no tools, Claude asks you to run the `walj` command.\n\
         - Slash commands:\n",
        desc = env!("CARGO_PKG_DESCRIPTION"),
        hook = HOOK_PROGRAM,
        since = install::exec_form_since(),
        engines = min_claude_code(),
    );
    for c in COMMANDS {
        s.push_str(&format!("  - `/walj:{}`: {} (`walj {}`).\n", c.name, c.description, c.args));
    }
    s.push_str(
        "\n## Install\n\n\
         - Self-contained: `walj plugin --out ~/walj-plugin`, then `claude --plugin-dir ~/walj-plugin`.\n\
         - From the marketplace in the walj repository: `claude plugin marketplace add <walj checkout>`, \
         `claude plugin install walj@walj`, and walj itself on PATH (`cargo install --path .` in the checkout), unless the plugin bundles walj for your platform (`scripts/plugin-pack.sh`).\n\n\
         Do not also run `walj install` in the same project: the hooks would run twice.\n",
    );
    s
}

/// Every file of the plugin but `bin/walj` (the icon too), in a fixed order.
pub(crate) fn text_files() -> Vec<PluginFile> {
    let mut files = vec![
        PluginFile::text(".claude-plugin/plugin.json", pretty(&manifest())),
        PluginFile::text("hooks/hooks.json", pretty(&hooks())),
        PluginFile::text(".mcp.json", pretty(&mcp_servers())),
        PluginFile::text("README.md", readme()),
        PluginFile { path: ICON_PATH.to_string(), contents: ICON.to_vec(), executable: false },
    ];
    for c in COMMANDS {
        files.push(PluginFile::text(&format!("commands/{}.md", c.name), command_file(c)));
    }
    files
}

/// What `walj plugin` did.
#[derive(Debug)]
pub(crate) struct WriteReport {
    pub root: PathBuf,
    /// Relative paths written, in order.
    pub written: Vec<String>,
}

/// Errors of [`write`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum PluginError {
    #[error("{0} is not empty and holds no walj plugin; choose a new or empty folder")]
    NotEmpty(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> PluginError + '_ {
    move |source| PluginError::Io { path: path.to_path_buf(), source }
}

/// True when `dir` holds a plugin named walj (so writing over it is an update).
pub(crate) fn is_walj_plugin(dir: &Path) -> bool {
    fs::read(dir.join(".claude-plugin/plugin.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|v| v["name"] == NAME)
}

/// Writes the plugin into `out` (created if missing; an empty folder or an earlier walj plugin
/// is fine, anything else is refused). Every file is written atomically.
pub(crate) fn write(out: &Path, bin: &Bin) -> Result<WriteReport, PluginError> {
    match fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() && !is_walj_plugin(out) {
                return Err(PluginError::NotEmpty(out.to_path_buf()));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir_all(out).map_err(io_err(out))?,
        Err(e) => return Err(io_err(out)(e)),
    }
    let mut files = text_files();
    let bin_file = match bin {
        Bin::Launcher => {
            PluginFile { path: "bin/walj".into(), contents: LAUNCHER.as_bytes().to_vec(), executable: true }
        }
        Bin::Copy(exe) => {
            PluginFile { path: "bin/walj".into(), contents: fs::read(exe).map_err(io_err(exe))?, executable: true }
        }
    };
    files.push(bin_file);
    let mut written = Vec::new();
    for f in &files {
        let path = out.join(&f.path);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io_err(dir))?;
        }
        let mode = if f.executable { 0o755 } else { 0o644 };
        fsutil::atomic_write(&path, &f.contents, Some(mode)).map_err(io_err(&path))?;
        written.push(f.path.clone());
    }
    Ok(WriteReport { root: out.to_path_buf(), written })
}

/// The walj plugin folder this walj runs from, if any: the folder the marketplace launcher names
/// in [`ROOT_ENV`], else the folder whose `bin/` holds this binary (the self-contained plugin of
/// `walj plugin --out`). Only a folder holding a plugin named walj counts. `walj doctor` checks
/// it like `--plugin-dir` (a plugin loaded with `claude --plugin-dir` leaves no other trace).
pub(crate) fn running_root() -> Option<PathBuf> {
    let from_env = std::env::var_os(ROOT_ENV).filter(|v| !v.is_empty()).map(PathBuf::from);
    let from_exe = std::env::current_exe().ok().and_then(|exe| {
        let bin = exe.parent()?;
        if bin.file_name()? != "bin" {
            return None;
        }
        bin.parent().map(Path::to_path_buf)
    });
    [from_env, from_exe]
        .into_iter()
        .flatten()
        .filter(|root| is_walj_plugin(root))
        .find_map(|root| fs::canonicalize(&root).ok())
}

/// The Claude Code settings files (user, project, local) for `project_root` whose hooks run
/// walj's hook ([`install::is_walj_hook`], any walj, either form): `walj install`'s hooks.
/// Reads at most three small files.
pub(crate) fn settings_with_walj_hooks(project_root: &Path, config_dir: &Path) -> Vec<PathBuf> {
    use crate::claude::paths::{SettingsScope, settings_path};
    let mut found = vec![];
    for scope in [SettingsScope::User, SettingsScope::Project, SettingsScope::Local] {
        let path = settings_path(scope, project_root, config_dir);
        let Ok(Some(root)) = install::read_json(&path) else { continue };
        let runs_walj = root.get("hooks").and_then(Value::as_object).is_some_and(|events| {
            events.values().filter_map(Value::as_array).flatten().any(|group| {
                group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .is_some_and(|hs| hs.iter().any(|h| install::is_walj_hook(h, "walj hook", None)))
            })
        });
        if runs_walj {
            found.push(path);
        }
    }
    found
}

/// Claude Code's environment variable for a plugin's hooks: the plugin's folder. Settings
/// hooks do not get it.
pub(crate) const CLAUDE_ROOT_ENV: &str = "CLAUDE_PLUGIN_ROOT";

/// The walj plugin folder whose hook this is ([`CLAUDE_ROOT_ENV`], only when it holds a plugin
/// named walj: another plugin's variable leaked into a nested session's environment is not
/// it). Read at SessionStart, for the `start` record.
pub(crate) fn hook_root() -> Option<PathBuf> {
    let root = PathBuf::from(std::env::var_os(CLAUDE_ROOT_ENV).filter(|v| !v.is_empty())?);
    is_walj_plugin(&root).then_some(root)
}

/// The SessionStart warning of the plugin's hook when `walj install`'s hooks are in the
/// settings too (every event would be journaled twice). `None` for a hook that is not the
/// plugin's ([`CLAUDE_ROOT_ENV`] unset or not a walj plugin), so of the two SessionStart hooks
/// only the plugin's warns: once per session start.
pub(crate) fn twice_note(project_root: &Path, config_dir: &Path) -> Option<String> {
    let root = PathBuf::from(std::env::var_os(CLAUDE_ROOT_ENV).filter(|v| !v.is_empty())?);
    if !is_walj_plugin(&root) {
        return None;
    }
    let files = settings_with_walj_hooks(project_root, config_dir);
    if files.is_empty() {
        return None;
    }
    let list: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    Some(format!(
        "walj runs twice in this session: the walj plugin ({}) and `walj install`'s hooks in {} both journal every \
         event. Keep one: `walj uninstall` (add `--local` or `--user` for those files), or disable the plugin.",
        root.display(),
        list.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_follow_the_install_table() {
        let h = hooks();
        let events = h["hooks"].as_object().unwrap();
        assert_eq!(events.len(), HookEvent::ALL.len() + crate::claude::events::VERSIONED_EVENTS.len());
        let skill = &events[crate::claude::events::PRE_SKILL_SHELL_COMMAND][0];
        assert!(skill.get("matcher").is_none(), "{skill}");
        assert_eq!(skill["hooks"][0]["args"], json!(["hook"]));
        for ev in HookEvent::ALL {
            let group = &events[ev.name()][0];
            assert_eq!(group["matcher"].as_str(), ev.matcher(), "{}", ev.name());
            assert_eq!(group["hooks"][0]["command"], HOOK_PROGRAM);
            assert_eq!(group["hooks"][0]["args"], json!(["hook"]));
            assert!(install::is_walj_handler(&group["hooks"][0], "walj hook"));
            assert_eq!(group["hooks"][0]["timeout"], install::HOOK_TIMEOUT_SECS);
            assert_eq!(group["hooks"][0]["type"], "command");
        }
    }

    #[test]
    fn manifest_carries_the_crate_metadata() {
        let m = manifest();
        assert_eq!(m["name"], "walj");
        assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
        assert!(!m["description"].as_str().unwrap().is_empty());
        assert!(!m["license"].as_str().unwrap().is_empty());
        assert_eq!(m["engines"]["claude-code"], ">=2.1.139");
    }

    #[test]
    fn every_command_runs_walj_and_allows_exactly_that() {
        for c in COMMANDS {
            let text = command_file(c);
            assert!(text.starts_with("---\ndescription: "), "{text}");
            assert!(text.contains(&format!("allowed-tools: Bash(walj {}:*)\n", allowed(c.args))), "{text}");
            assert!(text.contains(&format!("\n!`walj {}`\n", c.args)), "{text}");
            // A YAML plain scalar: no ": " or " #" inside, no indicator first.
            assert!(!c.description.contains(": ") && !c.description.contains(" #"), "{}", c.description);
            assert!(c.description.starts_with(|ch: char| ch.is_ascii_alphanumeric()), "{}", c.description);
        }
    }
}
