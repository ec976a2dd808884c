//! `walj completions SHELL`: the shell completion script, generated from the command line's
//! definition by clap_complete (every command, flag and fixed value; paths where a flag takes
//! one). For bash, zsh and fish the script also completes entry ids (`ID`, `IDS`) and
//! session ids (`SID`, `--session`): it asks `walj __complete-ids` (hidden), which reads the
//! journal of the project on the command line (or the current folder's) and prints the ids as
//! walj shows them. Where that command says the word is not an id, clap's completion runs.
//!
//! Ids can come from bundles and other machines, so nothing offered runs or hides: for bash
//! a value is shell-quoted (`'$(id)'`; bash inserts what it gets), zsh's `compadd` and fish
//! quote what they insert themselves; a value holding a control character, a line break or a
//! bidi override is not offered, and descriptions are [`crate::present::safe`].

use std::io::Write;

use clap::ArgAction;
use clap_complete::Shell;

use crate::fold::{Fold, FoldOptions, typeable};

/// The arguments of `walj completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to write the script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The arguments of `walj __complete-ids` (what the completion scripts run).
#[derive(Debug, clap::Args)]
pub struct CompleteIdsArgs {
    /// The shell asking: bash gets bare values, zsh and fish `VALUE<TAB>DESCRIPTION` lines.
    #[arg(long, value_enum)]
    pub shell: Shell,
    /// The index in WORDS of the word being completed (0: `walj`).
    #[arg(long, value_name = "N")]
    pub cword: usize,
    /// The command line as the shell split it, `walj` first.
    #[arg(last = true, allow_hyphen_values = true)]
    pub words: Vec<String>,
}

/// Prints the completion script on stdout.
/// `cli` is walj's command line (`cli::Cli::command()`, handed down: cmd never reaches up to cli).
pub(crate) fn completions(args: &CompletionsArgs, cli: &clap::Command) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    out.write_all(script(args.shell, cli).as_bytes())?;
    out.flush()?;
    Ok(0)
}

/// clap_complete's script for `shell`, with id completion for bash, zsh and fish.
pub(crate) fn script(shell: Shell, cli: &clap::Command) -> String {
    let mut raw = Vec::new();
    clap_complete::generate(shell, &mut visible_command(cli), "walj", &mut raw);
    let script = String::from_utf8_lossy(&raw).into_owned();
    match shell {
        Shell::Bash => script + BASH_IDS,
        Shell::Fish => script + FISH_IDS + &fish_id_options(cli),
        Shell::Zsh => zsh_with_ids(script),
        _ => script,
    }
}

/// The command line without its hidden subcommands (`__complete-ids`): clap_complete lists
/// hidden subcommands among the ones it offers, so the script is made from this copy.
fn visible_command(full: &clap::Command) -> clap::Command {
    clap::Command::new("walj")
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|c| !c.is_hide_set()).cloned())
}

/// bash: `_walj_ids` asks walj first, else runs clap's `_walj`.
const BASH_IDS: &str = r#"
# Entry and session ids: `walj __complete-ids` prints them where the word is one (else clap's).
_walj_ids() {
    local out
    if out=$("${COMP_WORDS[0]}" __complete-ids --shell bash --cword "$COMP_CWORD" -- "${COMP_WORDS[@]}" 2>/dev/null); then
        # One value a line, taken as it is (no word splitting or glob expansion of it).
        COMPREPLY=()
        local line
        while IFS= read -r line; do
            [[ -n "$line" ]] && COMPREPLY+=("$line")
        done <<< "$out"
        return 0
    fi
    _walj "$@"
}
if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _walj_ids -o nosort -o bashdefault -o default walj
else
    complete -F _walj_ids -o bashdefault -o default walj
fi
"#;

/// fish: one more completion, whose condition asks walj (and keeps the answer for the list).
const FISH_IDS: &str = r#"
# Entry and session ids: `walj __complete-ids` prints them where the word is one.
function __fish_walj_ids_here
    set -l words (commandline -opc) (commandline -ct)
    set -g __fish_walj_ids (command walj __complete-ids --shell fish --cword (math (count $words) - 1) -- $words 2>/dev/null)
end
complete -c walj -n __fish_walj_ids_here -f -k -a '$__fish_walj_ids'
"#;

/// fish: an option's value is completed only from that option's completions: one line per
/// option that takes an id (`--session`).
fn fish_id_options(cli: &clap::Command) -> String {
    fn walk(c: &clap::Command, names: &mut std::collections::BTreeSet<String>) {
        for a in c.get_arguments().filter(|a| slot(a).is_some()) {
            names.extend(a.get_long().map(str::to_string));
        }
        for s in c.get_subcommands() {
            walk(s, names);
        }
    }
    let mut names = std::collections::BTreeSet::new();
    walk(cli, &mut names);
    names
        .iter()
        .map(|n| format!("complete -c walj -n __fish_walj_ids_here -l {n} -r -f -k -a '$__fish_walj_ids'\n"))
        .collect()
}

/// zsh: clap's `_walj` becomes `_walj_clap`; `_walj` asks walj first.
const ZSH_IDS: &str = r#"
# Entry and session ids: `walj __complete-ids` prints them where the word is one (else clap's).
_walj() {
    local out
    if out=$(${words[1]} __complete-ids --shell zsh --cword $(( CURRENT - 1 )) -- "${words[@]}" 2>/dev/null); then
        local -a vals disp
        local line
        for line in "${(@f)out}"; do
            vals+=("${line%%$'\t'*}")
            disp+=("${line/$'\t'/  -- }")
        done
        compadd -U -V walj-ids -l -d disp -a vals
        return 0
    fi
    _walj_clap "$@"
}

"#;

fn zsh_with_ids(script: String) -> String {
    const MAIN: &str = "\n_walj() {\n";
    const TRAILER: &str = "if [ \"$funcstack[1]\" = \"_walj\" ]; then";
    match (script.find(MAIN), script.rfind(TRAILER)) {
        (Some(m), Some(t)) if m < t => {
            let mut s = String::with_capacity(script.len() + ZSH_IDS.len() + 8);
            s.push_str(&script[..m]);
            s.push_str("\n_walj_clap() {\n");
            s.push_str(&script[m + MAIN.len()..t]);
            s.push_str(ZSH_IDS);
            s.push_str(&script[t..]);
            s
        }
        // Another clap_complete layout: its completion alone (a test says so).
        _ => script,
    }
}

/// What a word completes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// An entry id (`ID`, `IDS`).
    Entry,
    /// A session id (`SID`, `--session`).
    Session,
}

/// The word being completed, when it is an id: which kind, what is typed of it, and what
/// goes before each candidate (`--session=` when the shell keeps it in the word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Want {
    pub slot: Slot,
    pub typed: String,
    pub prefix: String,
}

pub(crate) fn slot(a: &clap::Arg) -> Option<Slot> {
    let name = match a.get_value_names().and_then(|v| v.first()) {
        Some(n) => n.to_string(),
        None => a.get_id().as_str().to_ascii_uppercase(),
    };
    match name.as_str() {
        "ID" | "IDS" => Some(Slot::Entry),
        "SID" => Some(Slot::Session),
        _ => None,
    }
}

fn takes_value(a: &clap::Arg) -> bool {
    matches!(a.get_action(), ArgAction::Set | ArgAction::Append)
}

fn long<'c>(cmd: &'c clap::Command, name: &str) -> Option<&'c clap::Arg> {
    cmd.get_arguments().find(|a| a.get_long() == Some(name))
}

/// What the word at `cword` of `words` (a walj command line as a shell split it: bash splits
/// `--session=x` into `--session`, `=`, `x`) is: `None` unless an entry or session id.
pub(crate) fn want(words: &[String], cword: usize, cli: &clap::Command) -> Option<Want> {
    let mut root = cli.clone();
    root.build();
    let before = words.get(..cword)?;
    let current = words.get(cword).map_or("", String::as_str);
    let mut cmd = &root;
    let mut positionals = 0usize;
    let mut dashdash = false;
    let mut pending: Option<&clap::Arg> = None;
    let mut i = 1;
    while i < before.len() {
        let w = before[i].as_str();
        if !dashdash && w == "--" {
            dashdash = true;
        } else if !dashdash && w.starts_with("--") {
            let (name, inline) = match w[2..].split_once('=') {
                Some((n, _)) => (n, true),
                None => (&w[2..], false),
            };
            if let Some(a) = long(cmd, name).filter(|a| takes_value(a) && !inline) {
                // Its value: the next word, or the one after bash's `=`.
                let skip = if before.get(i + 1).is_some_and(|n| n == "=") { 2 } else { 1 };
                if i + skip >= before.len() {
                    pending = Some(a);
                    break;
                }
                i += skip;
            }
        } else if !dashdash && w.starts_with('-') && w.len() > 1 {
            let short = w.chars().nth(1);
            if w.chars().count() == 2
                && let Some(a) = cmd.get_arguments().find(|a| a.get_short() == short).filter(|a| takes_value(a))
            {
                if i + 1 >= before.len() {
                    pending = Some(a);
                    break;
                }
                i += 1;
            }
        } else if let Some(sub) = (positionals == 0).then(|| cmd.find_subcommand(w)).flatten() {
            cmd = sub;
        } else {
            positionals += 1;
        }
        i += 1;
    }
    if let Some(a) = pending {
        // bash, the cursor right after `--session=`: the word is `=`, nothing typed yet.
        let typed = if current == "=" { "" } else { current };
        return slot(a).map(|slot| Want { slot, typed: typed.to_string(), prefix: String::new() });
    }
    if let Some(rest) = current.strip_prefix("--") {
        let (name, typed) = rest.split_once('=')?;
        let a = long(cmd, name)?;
        return slot(a).map(|slot| Want { slot, typed: typed.to_string(), prefix: format!("--{name}=") });
    }
    if current.starts_with('-') && !dashdash {
        return None;
    }
    let mut pos: Vec<&clap::Arg> = cmd.get_positionals().collect();
    pos.sort_by_key(|a| a.get_index());
    let a = pos.get(positionals).or_else(|| pos.last().filter(|a| matches!(a.get_action(), ArgAction::Append)))?;
    slot(a).map(|slot| Want { slot, typed: current.to_string(), prefix: String::new() })
}

/// `--project` and `--journal` of the command line being completed.
pub(crate) fn global_of(words: &[String]) -> super::Global {
    let mut g = super::Global::default();
    let mut it = words.iter().peekable();
    while let Some(w) = it.next() {
        for (flag, slot) in [("--project", &mut g.project), ("--journal", &mut g.journal)] {
            if let Some(v) = w.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                *slot = Some(v.into());
            } else if w == flag {
                let v = it.next_if(|n| *n == "=").and_then(|_| it.next()).or_else(|| it.next());
                *slot = v.map(Into::into);
            }
        }
    }
    if g.journal.is_none() {
        g.journal = std::env::var_os("WALJ_JOURNAL").filter(|v| !v.is_empty()).map(Into::into);
    }
    g
}

/// At most this many candidates (newest first).
const MAX_CANDIDATES: usize = 500;

/// The candidates for `want`, newest first: (value, description).
pub(crate) fn candidates(fold: &Fold, want: &Want) -> Vec<(String, String)> {
    let typed = want.typed.to_ascii_lowercase();
    let starts = |s: &str| s.to_ascii_lowercase().starts_with(&typed);
    let mut out = Vec::new();
    match want.slot {
        Slot::Entry => {
            for e in
                fold.entries.iter().rev().filter(|e| crate::fold::id_starts_with(&e.id, &typed) || typed.is_empty())
            {
                // The form being typed: as shown, the typeable id, without `toolu_`, or whole.
                let shown = fold.ids.short(&e.id);
                let sans = e.id.strip_prefix("toolu_").unwrap_or(&e.id);
                let value = [shown, typeable(&e.id), sans].into_iter().find(|f| starts(f)).unwrap_or(&e.id);
                out.push((value.to_string(), format!("{} {}", e.state(), crate::present::safe(&e.path))));
            }
        }
        Slot::Session => {
            let mut sessions: Vec<_> = fold.sessions.iter().filter(|s| !s.session.is_empty()).collect();
            sessions.sort_by(|a, b| b.last_ts.cmp(&a.last_ts));
            for s in sessions.into_iter().filter(|s| starts(&s.session)) {
                let shown = fold.ids.session(&s.session);
                let value = if starts(shown) { shown } else { s.session.as_str() };
                let mut desc = format!("{} {}", s.status(), crate::present::human_ts(&s.last_ts));
                if let Some(p) = s.last_prompt() {
                    desc.push(' ');
                    desc.push_str(&crate::present::one_line(p, 50));
                }
                out.push((value.to_string(), desc));
            }
        }
    }
    out.truncate(MAX_CANDIDATES);
    out
}

/// `walj __complete-ids`: prints the candidates, one per line; exits 1 (printing nothing)
/// when the word is not an id, so the script falls back to clap's completion. Never prints
/// an error (a shell is waiting).
pub(crate) fn complete_ids(args: &CompleteIdsArgs, cli: &clap::Command) -> i32 {
    let Some(want) = want(&args.words, args.cword, cli) else { return 1 };
    let Ok(project) = global_of(&args.words).project() else { return 1 };
    // Unresolved and triaged entries (settled ones are left out): what is worth typing.
    let Ok(mut fold) = Fold::load(&project.journal, &FoldOptions::default()) else { return 1 };
    fold.load_short_ids(&project.journal);
    let mut out = std::io::stdout().lock();
    for (value, desc) in candidates(&fold, &want) {
        let value = format!("{}{value}", want.prefix);
        // Not offered: it cannot be typed, and would show other text (or split the lines).
        if crate::present::hides_text(&value) || value.contains(['\n', '\t']) {
            continue;
        }
        let line = if args.shell == Shell::Bash {
            crate::present::shell_quote(&value).into_owned()
        } else {
            format!("{value}\t{}", crate::present::safe(&desc))
        };
        if writeln!(out, "{line}").is_err() {
            break;
        }
    }
    0
}
