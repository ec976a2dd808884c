//! Key bindings: one table of action → keys, overridable from `.walj/config.toml`.
//!
//! ```toml
//! [keys]
//! revert = ["r", "x"]      # replaces the default keys of `revert`
//! move_down = "ctrl+n"     # a single key may be a string
//! ```
//!
//! The same parser turns test scripts into key events (see [`parse_keys`]), so a test
//! types `"jj/conf<enter>"` exactly as a user would.

use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers};

use super::dialogs::DialogKey;

/// What a key asks for. Keys map to actions as data; [`super::app::App::update`] applies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    MoveDown,
    MoveUp,
    First,
    Last,
    PageDown,
    PageUp,
    /// Enter: expand or collapse the node.
    Toggle,
    /// l / →: expand, or step into the first child (diff: scroll right).
    Expand,
    /// h / ←: collapse, or step out to the parent (diff: scroll left, then back to the tree).
    Collapse,
    CollapseAll,
    ExpandAll,
    NextSession,
    PrevSession,
    SwitchPane,
    /// The focused pane takes the whole screen (again: back to two panes).
    Zoom,
    /// Space: add the node's entries to the selection (or remove them).
    Select,
    Done,
    Revert,
    Undo,
    Redo,
    HandBack,
    /// Open the file at the changed line in `$EDITOR`.
    Edit,
    /// Copy the path, the id or the `claude --resume` line (OSC 52).
    Copy,
    /// The operation list: what was marked, reverted, handed back, undone.
    Operations,
    /// `walj bisect` on the session (asks for the command), then the culprit selected.
    Bisect,
    Filter,
    /// `/` in the diff pane: search the diff.
    Search,
    SearchNext,
    SearchPrev,
    ToggleResolved,
    /// Cycle the diff: pre-image → disk, pre-image → post-image, HEAD → disk.
    DiffMode,
    DiffPre,
    DiffApplied,
    DiffHead,
    NextHunk,
    PrevHunk,
    ScrollLeft,
    ScrollRight,
    /// Long diff lines wrap instead of running off the pane.
    Wrap,
    ScrollDown,
    ScrollUp,
    Refresh,
    Help,
    /// Esc: step back (diff → tree, then clear the selection, then the filter); never quits.
    Back,
    Quit,
    /// In a dialog: take its default choice (never one that can lose work; else cancel).
    Confirm,
    /// In a dialog: close it without acting.
    Cancel,
}

/// Where a key means its action: a key may mean one thing on the tree and another in the
/// diff (`/` filters the tree, searches the diff); dialog keys are read only in dialogs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Scope {
    /// The tree and the diff pane.
    Panes,
    Tree,
    Diff,
    Dialog,
}

impl Scope {
    /// Two scopes where the same key would be ambiguous.
    fn overlaps(self, other: Scope) -> bool {
        match (self, other) {
            (Scope::Dialog, o) | (o, Scope::Dialog) => o == Scope::Dialog,
            (Scope::Panes, _) | (_, Scope::Panes) => true,
            (a, b) => a == b,
        }
    }
}

impl Action {
    /// Where the action's keys are read.
    pub(crate) fn scope(self) -> Scope {
        match self {
            Action::Confirm | Action::Cancel => Scope::Dialog,
            Action::Filter => Scope::Tree,
            Action::Search => Scope::Diff,
            _ => Scope::Panes,
        }
    }

    /// Dialog actions are looked up only while a dialog is open (their keys mean something
    /// else on the tree: Enter toggles, Esc goes back).
    pub(crate) fn in_dialog(self) -> bool {
        self.scope() == Scope::Dialog
    }
}

/// Headings of the help overlay, in its order.
pub(crate) const GROUPS: &[&str] = &["move", "diff", "act", "view", "dialogs"];

/// (config name, action, default keys, help group, help text). The help overlay lists this
/// table by group.
pub(crate) const BINDINGS: &[(&str, Action, &[&str], &str, &str)] = &[
    ("move_down", Action::MoveDown, &["j", "down"], "move", "next row (diff: scroll down)"),
    ("move_up", Action::MoveUp, &["k", "up"], "move", "previous row (diff: scroll up)"),
    ("first", Action::First, &["g", "home"], "move", "first row / top of the diff"),
    ("last", Action::Last, &["G", "end"], "move", "last row / end of the diff"),
    ("page_down", Action::PageDown, &["pagedown"], "move", "page down"),
    ("page_up", Action::PageUp, &["pageup"], "move", "page up"),
    ("toggle", Action::Toggle, &["enter"], "move", "expand / collapse (an entry: read its diff)"),
    ("expand", Action::Expand, &["l", "right"], "move", "expand / step in (diff: scroll right)"),
    ("collapse", Action::Collapse, &["h", "left"], "move", "collapse / step out (diff: scroll left, back)"),
    ("collapse_all", Action::CollapseAll, &["-"], "move", "collapse every session"),
    ("expand_all", Action::ExpandAll, &["+", "="], "move", "expand every session and group"),
    ("next_session", Action::NextSession, &["}"], "move", "next session"),
    ("prev_session", Action::PrevSession, &["{"], "move", "previous session"),
    ("switch_pane", Action::SwitchPane, &["tab", "backtab"], "move", "switch between tree and diff"),
    ("scroll_down", Action::ScrollDown, &["ctrl+d", "J"], "diff", "scroll the diff down (from anywhere)"),
    ("scroll_up", Action::ScrollUp, &["ctrl+u", "K"], "diff", "scroll the diff up (from anywhere)"),
    ("next_hunk", Action::NextHunk, &["]"], "diff", "next hunk"),
    ("prev_hunk", Action::PrevHunk, &["["], "diff", "previous hunk"),
    ("scroll_right", Action::ScrollRight, &[">"], "diff", "scroll long lines right"),
    ("scroll_left", Action::ScrollLeft, &["<"], "diff", "scroll long lines left"),
    ("wrap", Action::Wrap, &["w"], "diff", "wrap long lines (again: cut them)"),
    ("search", Action::Search, &["/"], "diff", "in the diff pane: search the diff"),
    ("search_next", Action::SearchNext, &["n"], "diff", "next match"),
    ("search_prev", Action::SearchPrev, &["N"], "diff", "previous match"),
    ("diff_mode", Action::DiffMode, &["m"], "diff", "cycle the diff: pre→disk, pre→post, HEAD→disk"),
    ("diff_pre", Action::DiffPre, &["1"], "diff", "diff: pre-image → disk"),
    ("diff_applied", Action::DiffApplied, &["2"], "diff", "diff: pre-image → post-image (what the tool did)"),
    ("diff_head", Action::DiffHead, &["3"], "diff", "diff: HEAD → disk"),
    ("select", Action::Select, &["space"], "act", "select several entries"),
    ("done", Action::Done, &["d"], "act", "mark done (the change is fine)"),
    ("revert", Action::Revert, &["r"], "act", "revert to the pre-image (asks first)"),
    ("hand_back", Action::HandBack, &["H"], "act", "hand back to Claude (next session)"),
    ("undo", Action::Undo, &["u"], "act", "undo the last action on the entry"),
    ("redo", Action::Redo, &["ctrl+r"], "act", "redo what u undid"),
    ("edit", Action::Edit, &["e"], "act", "open the file at the change in $EDITOR"),
    ("copy", Action::Copy, &["y"], "act", "copy the path, id or resume line (OSC 52)"),
    ("bisect", Action::Bisect, &["b"], "act", "bisect the session: which step broke a command (asks for it)"),
    ("operations", Action::Operations, &["o"], "view", "operation list: what was done, newest first"),
    (
        "filter",
        Action::Filter,
        &["/"],
        "view",
        "in the tree: filter by path, event, tool or id (p: prompts and commands)",
    ),
    ("toggle_resolved", Action::ToggleResolved, &["s"], "view", "show / hide resolved entries"),
    ("zoom", Action::Zoom, &["f"], "view", "full screen: the focused pane alone (again: both)"),
    ("refresh", Action::Refresh, &["R"], "view", "reload the journal"),
    ("help", Action::Help, &["?"], "view", "this help"),
    ("back", Action::Back, &["esc"], "view", "back: diff → tree, clear selection, filter"),
    ("quit", Action::Quit, &["q", "ctrl+c"], "view", "quit (a dialog open: nothing is done)"),
    ("confirm", Action::Confirm, &["enter"], "dialogs", "dialog: its default (shown; cancel if only force)"),
    ("cancel", Action::Cancel, &["esc"], "dialogs", "dialog: close without acting"),
];

/// A key with its modifiers, comparable regardless of how the terminal reported shift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Key {
    /// Normalises a terminal key event: a shifted character carries its case, not SHIFT.
    pub(crate) fn from_event(ev: &KeyEvent) -> Key {
        let mut mods = ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match ev.code {
            KeyCode::Char(c) => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::Char(c)
            }
            KeyCode::BackTab => {
                mods.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            c => c,
        };
        Key { code, mods }
    }

    pub fn event(self) -> KeyEvent {
        KeyEvent { code: self.code, modifiers: self.mods, kind: KeyEventKind::Press, state: KeyEventState::NONE }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("ctrl+")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("alt+")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("shift+")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("enter"),
            KeyCode::Esc => f.write_str("esc"),
            KeyCode::Tab => f.write_str("tab"),
            KeyCode::BackTab => f.write_str("backtab"),
            KeyCode::Backspace => f.write_str("backspace"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Home => f.write_str("home"),
            KeyCode::End => f.write_str("end"),
            KeyCode::PageUp => f.write_str("pgup"),
            KeyCode::PageDown => f.write_str("pgdn"),
            KeyCode::Delete => f.write_str("del"),
            KeyCode::F(n) => write!(f, "f{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// A key name or a `[keys]` entry that cannot be read; each names the key or the action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("unknown key {0:?} (try: j, G, enter, esc, ctrl+d, pagedown, space)")]
    UnknownKey(String),
    #[error("[keys] {action}: no such action (actions: {known})")]
    UnknownAction { action: String, known: String },
    #[error("[keys] {0}: expected a key or a list of keys")]
    NotKeys(String),
    #[error("[keys] {action}: {source}")]
    BadKey { action: String, source: Box<KeyError> },
}

/// Parses one key name: `j`, `G`, `?`, `enter`, `ctrl+d`, `alt+x`, `f5`, `pagedown`.
pub(crate) fn parse_key(s: &str) -> Result<Key, KeyError> {
    let mut mods = KeyModifiers::NONE;
    let mut rest = s;
    loop {
        let lower = rest.to_ascii_lowercase();
        let (prefix, m) = if lower.starts_with("ctrl+") || lower.starts_with("ctrl-") {
            (5, KeyModifiers::CONTROL)
        } else if lower.starts_with("alt+") || lower.starts_with("alt-") {
            (4, KeyModifiers::ALT)
        } else if lower.starts_with("shift+") || lower.starts_with("shift-") {
            (6, KeyModifiers::SHIFT)
        } else {
            break;
        };
        if rest.len() == prefix {
            break; // "ctrl+" alone is not a key
        }
        mods |= m;
        rest = &rest[prefix..];
    }
    let mut chars = rest.chars();
    let code = match (chars.next(), chars.next()) {
        (Some(c), None) => KeyCode::Char(c),
        _ => match rest.to_ascii_lowercase().as_str() {
            "enter" | "return" | "cr" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "space" => KeyCode::Char(' '),
            "backspace" | "bs" => KeyCode::Backspace,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" | "pgup" => KeyCode::PageUp,
            "pagedown" | "pgdn" | "pgdown" => KeyCode::PageDown,
            "delete" | "del" => KeyCode::Delete,
            "lt" => KeyCode::Char('<'),
            "gt" => KeyCode::Char('>'),
            f if f.len() > 1 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => {
                KeyCode::F(f[1..].parse().unwrap_or(1))
            }
            _ => return Err(KeyError::UnknownKey(s.to_string())),
        },
    };
    // Shift on a character is expressed by its case.
    if let KeyCode::Char(c) = code
        && mods.contains(KeyModifiers::SHIFT)
    {
        mods.remove(KeyModifiers::SHIFT);
        return Ok(Key { code: KeyCode::Char(c.to_ascii_uppercase()), mods });
    }
    Ok(Key { code, mods })
}

/// Parses a key script: plain characters are keys, `<name>` is a named key.
/// `"jj/conf<enter><ctrl+c>"` → j, j, /, c, o, n, f, enter, ctrl+c.
pub fn parse_keys(script: &str) -> Result<Vec<Key>, KeyError> {
    let mut out = Vec::new();
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '<' {
            let name: String = chars.by_ref().take_while(|&c| c != '>').collect();
            if name.is_empty() {
                out.push(Key { code: KeyCode::Char('<'), mods: KeyModifiers::NONE });
            } else {
                out.push(parse_key(&name)?);
            }
        } else {
            out.push(Key { code: KeyCode::Char(c), mods: KeyModifiers::NONE });
        }
    }
    Ok(out)
}

/// The table in use: defaults with the user's overrides applied.
#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: Vec<(Action, Vec<Key>)>,
    /// What `[keys]` did that the user may not have meant: a key bound to two actions, an
    /// action left without a key (shown on the status line when the dashboard opens).
    pub warnings: Vec<String>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap {
            bindings: BINDINGS
                .iter()
                .map(|(_, a, keys, ..)| (*a, keys.iter().filter_map(|k| parse_key(k).ok()).collect()))
                .collect(),
            warnings: Vec::new(),
        }
    }
}

impl Keymap {
    /// Defaults overridden by `[keys]` of the config. Unknown action names and key names
    /// are errors that name the offending entry.
    pub(crate) fn from_config(table: &toml::Table) -> Result<Keymap, KeyError> {
        let mut map = Keymap::default();
        let mut overridden = Vec::new();
        for (name, value) in table {
            let Some(pos) = BINDINGS.iter().position(|(n, ..)| n == name) else {
                let names: Vec<&str> = BINDINGS.iter().map(|(n, ..)| *n).collect();
                return Err(KeyError::UnknownAction { action: name.clone(), known: names.join(", ") });
            };
            let names: Vec<&str> = match value {
                toml::Value::String(s) => vec![s.as_str()],
                toml::Value::Array(a) => a.iter().filter_map(toml::Value::as_str).collect(),
                _ => return Err(KeyError::NotKeys(name.clone())),
            };
            let keys = names
                .iter()
                .map(|k| parse_key(k).map_err(|e| KeyError::BadKey { action: name.clone(), source: Box::new(e) }))
                .collect::<Result<Vec<_>, _>>()?;
            map.bindings[pos].1 = keys;
            overridden.push(pos);
        }
        // A key the user gave to one action leaves the action it was a default of.
        // A key given to an action leaves the defaults of the others where both are read
        // (dialog keys and pane keys never meet: Enter may toggle and confirm; `/` may
        // filter the tree and search the diff).
        let taken: Vec<(Scope, Key)> = overridden
            .iter()
            .flat_map(|&i| {
                let scope = map.bindings[i].0.scope();
                map.bindings[i].1.iter().map(move |k| (scope, *k))
            })
            .collect();
        let name = |i: usize| BINDINGS[i].0;
        let mut warnings = Vec::new();
        // Two of the user's actions on one key: the first in the table wins.
        for (n, &i) in overridden.iter().enumerate() {
            for &j in &overridden[n + 1..] {
                let (si, sj) = (map.bindings[i].0.scope(), map.bindings[j].0.scope());
                if let Some(k) = map.bindings[i].1.iter().find(|k| si.overlaps(sj) && map.bindings[j].1.contains(k)) {
                    let (first, second) = if i < j { (i, j) } else { (j, i) };
                    warnings.push(format!(
                        "[keys] {k} is bound to {} and {}: it does {}",
                        name(first),
                        name(second),
                        name(first)
                    ));
                }
            }
        }
        for (i, (a, keys)) in map.bindings.iter_mut().enumerate() {
            if !overridden.contains(&i) {
                let scope = a.scope();
                let had = keys.clone();
                keys.retain(|k| !taken.iter().any(|(s, t)| t == k && s.overlaps(scope)));
                if let Some(k) = had.iter().find(|k| !keys.contains(k)) {
                    let left = if keys.is_empty() {
                        format!("{} has no key now (give it one in [keys])", name(i))
                    } else {
                        format!("{} keeps {}", name(i), keys.iter().map(Key::to_string).collect::<Vec<_>>().join(", "))
                    };
                    warnings.push(format!("[keys] {k} was {}'s key: {left}", name(i)));
                }
            }
        }
        map.warnings = warnings;
        Ok(map)
    }

    /// The action of a key on the tree (see [`Keymap::action_in`]).
    /// Whether any action, in any pane or dialog, is bound to `key`.
    pub(crate) fn binds(&self, key: &Key) -> bool {
        self.bindings.iter().any(|(_, keys)| keys.contains(key))
    }

    pub(crate) fn action(&self, key: &Key) -> Option<Action> {
        self.action_in(key, Scope::Tree)
    }

    /// The action of a key in a pane (`Scope::Tree` or `Scope::Diff`): the pane's own
    /// bindings, then those of both panes.
    pub(crate) fn action_in(&self, key: &Key, pane: Scope) -> Option<Action> {
        let find = |want: Scope| {
            self.bindings.iter().find(|(a, keys)| a.scope() == want && keys.contains(key)).map(|(a, _)| *a)
        };
        find(pane).or_else(|| find(Scope::Panes))
    }

    /// A key as a dialog reads it: confirm, cancel, or a letter that may pick a choice.
    pub(crate) fn dialog_key(&self, key: &Key) -> Option<DialogKey> {
        let bound = self.bindings.iter().find(|(a, keys)| a.in_dialog() && keys.contains(key)).map(|(a, _)| *a);
        match (bound, key.code) {
            (Some(Action::Confirm), _) => Some(DialogKey::Confirm),
            (Some(_), _) => Some(DialogKey::Cancel),
            (None, KeyCode::Char(c)) => Some(DialogKey::Char(c)),
            (None, _) => None,
        }
    }

    /// The keys of an action, for the footer and help ("j/↓").
    pub(crate) fn keys_of(&self, action: Action) -> String {
        self.bindings
            .iter()
            .find(|(a, _)| *a == action)
            .map(|(_, keys)| keys.iter().map(Key::to_string).collect::<Vec<_>>().join("/"))
            .unwrap_or_default()
    }

    /// The first key of an action, for the footer.
    pub(crate) fn key_of(&self, action: Action) -> String {
        self.bindings
            .iter()
            .find(|(a, _)| *a == action)
            .and_then(|(_, keys)| keys.first())
            .map(Key::to_string)
            .unwrap_or_else(|| "—".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialog_keys_stay_apart_from_tree_keys() {
        let esc = parse_key("esc").unwrap();
        let enter = parse_key("enter").unwrap();
        let map = Keymap::default();
        assert_eq!(map.action(&esc), Some(Action::Back), "esc never quits");
        assert_eq!(map.dialog_key(&esc), Some(DialogKey::Cancel));
        assert_eq!(map.action(&enter), Some(Action::Toggle));
        assert_eq!(map.dialog_key(&enter), Some(DialogKey::Confirm));
        assert_eq!(map.dialog_key(&parse_key("y").unwrap()), Some(DialogKey::Char('y')));
        // Rebinding a tree action to Enter leaves Enter confirming dialogs.
        let cfg: toml::Table = toml::from_str("toggle = [\"enter\", \"o\"]\ncancel = \"x\"").unwrap();
        let map = Keymap::from_config(&cfg).unwrap();
        assert_eq!(map.dialog_key(&enter), Some(DialogKey::Confirm));
        assert_eq!(map.dialog_key(&parse_key("x").unwrap()), Some(DialogKey::Cancel));
        assert_eq!(map.dialog_key(&esc), None, "esc no longer cancels once cancel is rebound");
        assert_eq!(map.action(&esc), Some(Action::Back));
    }

    #[test]
    fn default_keys_never_clash_where_they_are_read() {
        for (i, (n1, a1, k1, ..)) in BINDINGS.iter().enumerate() {
            for (n2, a2, k2, ..) in &BINDINGS[i + 1..] {
                if a1.scope().overlaps(a2.scope()) {
                    let shared: Vec<&&str> = k1.iter().filter(|k| k2.contains(k)).collect();
                    assert!(shared.is_empty(), "{n1} and {n2} share {shared:?}");
                }
            }
            assert!(GROUPS.contains(&BINDINGS[i].3), "{n1}: help group {:?}", BINDINGS[i].3);
        }
        // `/` filters the tree and searches the diff.
        let map = Keymap::default();
        let slash = parse_key("/").unwrap();
        assert_eq!(map.action_in(&slash, Scope::Tree), Some(Action::Filter));
        assert_eq!(map.action_in(&slash, Scope::Diff), Some(Action::Search));
        assert_eq!(map.action_in(&parse_key("j").unwrap(), Scope::Diff), Some(Action::MoveDown));
        // Rebinding search leaves the filter alone (different panes), and the reverse.
        let cfg: toml::Table = toml::from_str("search = \"?\"").unwrap();
        let map = Keymap::from_config(&cfg).unwrap();
        assert_eq!(map.action_in(&slash, Scope::Tree), Some(Action::Filter));
        assert_eq!(map.action_in(&slash, Scope::Diff), None, "the tree's / is not read in the diff");
        assert_eq!(map.action_in(&parse_key("?").unwrap(), Scope::Diff), Some(Action::Search));
        assert_eq!(map.keys_of(Action::Help), "", "? left help, which shares both panes");
    }

    #[test]
    fn parses_names_and_scripts() {
        assert_eq!(parse_key("G").unwrap(), Key { code: KeyCode::Char('G'), mods: KeyModifiers::NONE });
        assert_eq!(parse_key("shift+g").unwrap(), parse_key("G").unwrap());
        assert_eq!(parse_key("ctrl+d").unwrap(), Key { code: KeyCode::Char('d'), mods: KeyModifiers::CONTROL });
        assert_eq!(parse_key("pagedown").unwrap().code, KeyCode::PageDown);
        assert_eq!(parse_key("f5").unwrap().code, KeyCode::F(5));
        assert!(parse_key("hyper+x").is_err());
        let keys = parse_keys("j/a<enter><ctrl+c><>").unwrap();
        assert_eq!(keys.len(), 6);
        assert_eq!(keys[3].code, KeyCode::Enter);
        assert_eq!(keys[5].code, KeyCode::Char('<'));
    }

    #[test]
    fn terminal_shift_is_normalised() {
        let ev = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
        let map = Keymap::default();
        assert_eq!(map.action(&Key::from_event(&ev)), Some(Action::Last));
    }

    #[test]
    fn config_overrides_replace_defaults() {
        let table: toml::Table = toml::from_str("revert = [\"x\"]\nmove_down = \"ctrl+n\"\n").unwrap();
        let map = Keymap::from_config(&table).unwrap();
        assert_eq!(map.action(&parse_key("x").unwrap()), Some(Action::Revert));
        assert_eq!(map.action(&parse_key("r").unwrap()), None);
        assert_eq!(map.action(&parse_key("ctrl+n").unwrap()), Some(Action::MoveDown));
        assert_eq!(map.action(&parse_key("j").unwrap()), None);
        assert_eq!(map.keys_of(Action::Revert), "x");
        // Taking another action's default key moves it.
        let table: toml::Table = toml::from_str("done = [\"d\", \"j\"]\n").unwrap();
        let map = Keymap::from_config(&table).unwrap();
        assert_eq!(map.action(&parse_key("j").unwrap()), Some(Action::Done));
        assert_eq!(map.keys_of(Action::MoveDown), "↓");
        let bad: toml::Table = toml::from_str("revrt = \"x\"\n").unwrap();
        assert!(Keymap::from_config(&bad).unwrap_err().to_string().contains("no such action"));
        let bad: toml::Table = toml::from_str("revert = \"hyper+x\"\n").unwrap();
        assert!(Keymap::from_config(&bad).unwrap_err().to_string().contains("[keys] revert"));
    }
}
