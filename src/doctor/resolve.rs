//! Which program a hook command runs, found the way `sh -c` finds it (shell form) or as Claude
//! Code spawns it (exec form, [`resolve_exec`]), with the environment Claude Code gives its hooks.
//!
//! Observed with Claude Code 2.1.328: a hook command runs as `sh -c COMMAND` in the project
//! folder, with Claude Code's own environment plus the settings' `env` (so an `env.PATH` in a
//! settings file is the PATH the hook sees), and, for a plugin's hooks, `${CLAUDE_PLUGIN_ROOT}`
//! = the plugin's folder. The plugin's `bin/` is on the Bash tool's PATH, not on the hooks'.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment a hook command runs with, as far as finding its program goes.
#[derive(Debug, Clone)]
pub(crate) struct HookEnv {
    /// The PATH Claude Code gives its hooks (`None`: no PATH at all).
    pub path: Option<OsString>,
    /// Where that PATH comes from, for messages ("this shell's PATH", "env.PATH in FILE").
    pub path_from: String,
    /// The settings' merged `env` (user, then project, then local).
    pub settings_env: HashMap<String, String>,
    /// The hooks' working folder, `$CLAUDE_PROJECT_DIR`.
    pub project_dir: PathBuf,
}

impl HookEnv {
    /// A variable as the hook's shell sees it: the settings' `env`, Claude Code's own
    /// variables, else this process's environment (the shell Claude Code is started from).
    fn var(&self, name: &str, plugin_root: Option<&Path>) -> Option<String> {
        if let Some(v) = self.settings_env.get(name) {
            return Some(v.clone());
        }
        match name {
            "CLAUDE_PLUGIN_ROOT" => plugin_root.map(|p| p.display().to_string()),
            "CLAUDE_PROJECT_DIR" => Some(self.project_dir.display().to_string()),
            "PATH" => self.path.as_ref().map(|p| p.to_string_lossy().into_owned()),
            _ => std::env::var(name).ok(),
        }
    }

    fn home(&self) -> Option<PathBuf> {
        self.var("HOME", None).filter(|h| !h.is_empty()).map(PathBuf::from)
    }
}

/// What a hook command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Program {
    /// An executable file; `runs` is the walj that walj's plugin launcher would run.
    Found { program: PathBuf, runs: Option<PathBuf> },
    /// The shell would fail to run it: why.
    Missing(String),
    /// walj's plugin launcher, which finds no walj to run: the hooks exit 0 and journal nothing.
    LauncherFindsNoWalj(PathBuf),
    /// Shell syntax this check does not follow: what it is.
    Unchecked(String),
}

/// Finds the program `command` runs (its first word, after variable assignments and `exec`).
pub(crate) fn resolve(command: &str, plugin_root: Option<&Path>, env: &HookEnv) -> Program {
    let word = match first_word(command, &|name| env.var(name, plugin_root), env.home().as_deref()) {
        Ok(Some(w)) => w,
        Ok(None) => return Program::Missing("the command is empty".into()),
        Err(why) => return Program::Unchecked(why.to_string()),
    };
    if matches!(word.as_str(), "if" | "case" | "for" | "while" | "until" | "{" | "!" | "[[" | "eval" | "sh" | "bash") {
        return Program::Unchecked(format!("it starts with `{word}`"));
    }
    program_at(word, env)
}

/// Finds the program an exec-form handler (`command` + `args`) runs. Claude Code spawns it
/// without a shell: `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PROJECT_DIR}` are replaced as plain
/// text, nothing else is expanded; a name without `/` is looked up on the hook's PATH.
pub(crate) fn resolve_exec(program: &str, plugin_root: Option<&Path>, env: &HookEnv) -> Program {
    let mut word = program.to_string();
    for name in ["CLAUDE_PLUGIN_ROOT", "CLAUDE_PROJECT_DIR"] {
        let placeholder = format!("${{{name}}}");
        if word.contains(&placeholder) {
            let Some(value) = env.var(name, plugin_root) else {
                return Program::Missing(format!("`{placeholder}` has no value here"));
            };
            word = word.replace(&placeholder, &value);
        }
    }
    if word.is_empty() {
        return Program::Missing("the command is empty".into());
    }
    program_at(word, env)
}

/// The program named `word` (a path, or a name looked up on the hook's PATH), and for walj's
/// plugin launcher the walj it runs.
fn program_at(word: String, env: &HookEnv) -> Program {
    let program = if word.contains('/') {
        let p = PathBuf::from(&word);
        let p = if p.is_absolute() { p } else { env.project_dir.join(p) };
        if let Err(why) = executable(&p) {
            return Program::Missing(format!("`{}` {why}", p.display()));
        }
        p
    } else {
        match search_path(&word, env, None) {
            Some(p) => p,
            None => {
                return Program::Missing(format!(
                    "`{word}` is not on the PATH Claude Code gives its hooks ({}: {})",
                    env.path_from,
                    env.path.as_ref().map_or("unset".into(), |p| p.to_string_lossy().into_owned())
                ));
            }
        }
    };
    if !is_launcher(&program) {
        return Program::Found { program, runs: None };
    }
    match launcher_target(&program, env) {
        Some(walj) => Program::Found { program, runs: Some(walj) },
        None => Program::LauncherFindsNoWalj(program),
    }
}

/// `Err(why)` unless `p` is a file the shell can run.
fn executable(p: &Path) -> Result<(), &'static str> {
    let meta = match std::fs::metadata(p) {
        Ok(m) => m,
        Err(_) => return Err("does not exist"),
    };
    if meta.is_dir() {
        return Err("is a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err("is not executable");
        }
    }
    Ok(())
}

/// The first executable `name` in the hook's PATH (an empty entry is the working folder),
/// skipping `skip` (the same file).
fn search_path(name: &str, env: &HookEnv, skip: Option<&Path>) -> Option<PathBuf> {
    let path = env.path.as_ref()?;
    std::env::split_paths(path)
        .map(|d| if d.as_os_str().is_empty() { env.project_dir.clone() } else { d })
        .map(|d| d.join(name))
        .find(|p| executable(p).is_ok() && !skip.is_some_and(|s| same_file(p, s)))
}

fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// Whether `p` is walj's plugin launcher (`src/plugin/launcher.sh`), which runs an installed walj.
fn is_launcher(p: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    let read = std::fs::File::open(p).and_then(|f| f.take(4096).read_to_end(&mut head));
    read.is_ok() && head.starts_with(b"#!") && head.windows(20).any(|w| w == b"WALJ_PLUGIN_LAUNCHER")
}

/// This machine's platform in npm's names, as the launcher spells it (`linux-x64`, …).
fn bundled_platform() -> Option<String> {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        "freebsd" => "freebsd",
        _ => return None,
    };
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        _ => return None,
    };
    Some(format!("{os}-{cpu}"))
}

/// The walj the launcher at `launcher` finds, as its `find_walj` does: the binary bundled
/// beside it for this platform (`platforms/<os>-<cpu>/walj`), PATH (itself skipped), then
/// `${CARGO_HOME:-$HOME/.cargo}/bin`, then `$HOME/.cargo/bin`.
fn launcher_target(launcher: &Path, env: &HookEnv) -> Option<PathBuf> {
    if let (Some(dir), Some(plat)) = (launcher.parent(), bundled_platform()) {
        let bundled = dir.join("platforms").join(plat).join("walj");
        if executable(&bundled).is_ok() {
            return Some(bundled);
        }
    }
    if let Some(p) = search_path("walj", env, Some(launcher)) {
        return Some(p);
    }
    let home = env.home();
    let cargo_home = env
        .var("CARGO_HOME", None)
        .filter(|c| !c.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".cargo")));
    [cargo_home, env.home().map(|h| h.join(".cargo"))]
        .into_iter()
        .flatten()
        .map(|d| d.join("bin").join("walj"))
        .find(|p| executable(p).is_ok() && !same_file(p, launcher))
}

/// Shell syntax [`first_word`] does not follow (the check then says what it is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unfollowed {
    #[error("`~` without a home folder")]
    NoHome,
    #[error("it uses command substitution")]
    CommandSubstitution,
    #[error("an unterminated quote")]
    UnterminatedQuote,
    #[error("it starts with shell syntax")]
    StartsWithSyntax,
    #[error("it uses a `${{…}}` form other than `${{NAME}}`")]
    BracedForm,
    #[error("it uses `$(…)` or a special parameter")]
    SpecialParameter,
    #[error("it uses the positional parameter `${0}`")]
    Positional(String),
}

/// The first word of a shell command line, expanded as `sh` would: quotes, backslashes,
/// `$NAME` / `${NAME}`, a leading `~/`. Leading `NAME=value` assignments and `exec` are
/// skipped. `Err` for what this does not follow (command substitution, `${x:-y}`, `$1`…).
pub(crate) fn first_word(
    command: &str,
    var: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Result<Option<String>, Unfollowed> {
    let mut rest = command;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Ok(None);
        }
        let assignment = {
            let name_len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            name_len > 0 && !rest.starts_with(|c: char| c.is_ascii_digit()) && rest[name_len..].starts_with('=')
        };
        let (word, after) = parse_word(rest, var, home)?;
        rest = after;
        if assignment || word == "exec" || word == "command" {
            continue;
        }
        if word.is_empty() {
            return Err(Unfollowed::StartsWithSyntax);
        }
        return Ok(Some(word));
    }
}

/// One word from the start of `s`: (its expansion, the rest of `s`).
fn parse_word<'a>(
    s: &'a str,
    var: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
) -> Result<(String, &'a str), Unfollowed> {
    let mut out = String::new();
    let mut chars = s.char_indices().peekable();
    if s.starts_with('~') && s[1..].chars().next().is_none_or(|c| c == '/' || c.is_whitespace()) {
        let Some(h) = home else { return Err(Unfollowed::NoHome) };
        out.push_str(&h.display().to_string());
        chars.next();
    }
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => return Ok((out, &s[i..])),
            ';' | '&' | '|' | '<' | '>' | '(' | ')' => return Ok((out, &s[i..])),
            '`' => return Err(Unfollowed::CommandSubstitution),
            '\\' => {
                if let Some((_, n)) = chars.next() {
                    out.push(n);
                }
            }
            '\'' => loop {
                match chars.next() {
                    Some((_, '\'')) => break,
                    Some((_, ch)) => out.push(ch),
                    None => return Err(Unfollowed::UnterminatedQuote),
                }
            },
            '"' => loop {
                match chars.next() {
                    Some((_, '"')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, n @ ('$' | '`' | '"' | '\\'))) => out.push(n),
                        Some((_, '\n')) => {}
                        Some((_, n)) => {
                            out.push('\\');
                            out.push(n);
                        }
                        None => return Err(Unfollowed::UnterminatedQuote),
                    },
                    Some((_, '$')) => out.push_str(&expand(&mut chars, s, var)?),
                    Some((_, '`')) => return Err(Unfollowed::CommandSubstitution),
                    Some((_, ch)) => out.push(ch),
                    None => return Err(Unfollowed::UnterminatedQuote),
                }
            },
            '$' => {
                // Unquoted: the value is split into words (IFS), so a space ends the word.
                let v = expand(&mut chars, s, var)?;
                match v.find(char::is_whitespace) {
                    Some(ws) => {
                        out.push_str(&v[..ws]);
                        let next = chars.peek().map_or(s.len(), |(j, _)| *j);
                        return Ok((out, &s[next..]));
                    }
                    None => out.push_str(&v),
                }
            }
            c => out.push(c),
        }
    }
    Ok((out, ""))
}

/// The value of `$NAME` or `${NAME}` (the `$` already read); unset is empty, as in `sh`.
fn expand(
    chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
    s: &str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<String, Unfollowed> {
    let braced = chars.next_if(|(_, c)| *c == '{').is_some();
    let start = chars.peek().map_or(s.len(), |(i, _)| *i);
    let mut end = start;
    while let Some((i, c)) = chars.peek().copied() {
        if c.is_ascii_alphanumeric() || c == '_' {
            end = i + c.len_utf8();
            chars.next();
        } else {
            break;
        }
    }
    let name = &s[start..end];
    if braced && chars.next_if(|(_, c)| *c == '}').is_none() {
        return Err(Unfollowed::BracedForm);
    }
    if name.is_empty() {
        if !braced && chars.peek().is_none_or(|(_, c)| c.is_whitespace() || *c == '"') {
            return Ok("$".into());
        }
        return Err(Unfollowed::SpecialParameter);
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(Unfollowed::Positional(name.to_string()));
    }
    Ok(var(name).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(cmd: &str) -> Result<Option<String>, String> {
        let var = |n: &str| match n {
            "CLAUDE_PLUGIN_ROOT" => Some("/p/my plugin".to_string()),
            "X" => Some("x".to_string()),
            _ => None,
        };
        first_word(cmd, &var, Some(Path::new("/home/u"))).map_err(|e| e.to_string())
    }

    #[test]
    fn first_words_as_sh_reads_them() {
        let w = |c: &str| word(c).unwrap().unwrap();
        assert_eq!(w("walj hook"), "walj");
        assert_eq!(w("  '/opt/a b/walj' hook"), "/opt/a b/walj");
        assert_eq!(w("\"${CLAUDE_PLUGIN_ROOT}/bin/walj\" hook"), "/p/my plugin/bin/walj");
        assert_eq!(w("$CLAUDE_PLUGIN_ROOT/bin/walj hook"), "/p/my");
        assert_eq!(w("~/.cargo/bin/walj hook"), "/home/u/.cargo/bin/walj");
        assert_eq!(w("FOO=1 BAR='a b' exec walj hook"), "walj");
        assert_eq!(w("/a\\ b/walj;x"), "/a b/walj");
        assert_eq!(w("\"$X\"y"), "xy");
        assert_eq!(w("$NOPE/walj hook"), "/walj");
        assert_eq!(word("").unwrap(), None);
        assert!(word("$(which walj) hook").is_err());
        assert!(word("`which walj` hook").is_err());
        assert!(word("${X:-walj} hook").is_err());
        assert!(word("'walj hook").is_err());
        assert!(word("(walj hook)").is_err());
    }
}
