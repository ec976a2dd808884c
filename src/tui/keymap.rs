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
    /// l / →: expand, or step into the first child.
    Expand,
    /// h / ←: collapse, or step out to the parent.
    Collapse,
    SwitchPane,
    /// Space: add the node's entries to the selection (or remove them).
    Select,
    Done,
    Revert,
    Undo,
    HandBack,
    Filter,
    ToggleResolved,
    /// Cycle the diff: pre-image → disk, pre-image → post-image, HEAD → disk.
    DiffMode,
    DiffPre,
    DiffApplied,
    DiffHead,
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

impl Action {
    /// Dialog actions are looked up only while a dialog is open (their keys mean something
    /// else on the tree: Enter toggles, Esc quits).
    pub fn in_dialog(self) -> bool {
        matches!(self, Action::Confirm | Action::Cancel)
    }
}

/// (config name, action, default keys, help text). The help overlay lists this table.
pub const BINDINGS: &[(&str, Action, &[&str], &str)] = &[
    ("move_down", Action::MoveDown, &["j", "down"], "next row (diff: scroll down)"),
    ("move_up", Action::MoveUp, &["k", "up"], "previous row (diff: scroll up)"),
    ("first", Action::First, &["g", "home"], "first row / top of the diff"),
    ("last", Action::Last, &["G", "end"], "last row / end of the diff"),
    ("page_down", Action::PageDown, &["pagedown"], "page down"),
    ("page_up", Action::PageUp, &["pageup"], "page up"),
    ("toggle", Action::Toggle, &["enter"], "expand / collapse"),
    ("expand", Action::Expand, &["l", "right"], "expand / step in"),
    ("collapse", Action::Collapse, &["h", "left"], "collapse / step out"),
    ("switch_pane", Action::SwitchPane, &["tab", "backtab"], "switch between tree and diff"),
    ("select", Action::Select, &["space"], "select several entries"),
    ("done", Action::Done, &["d"], "mark done (the change is fine)"),
    ("revert", Action::Revert, &["r"], "revert to the pre-image (asks first)"),
    ("undo", Action::Undo, &["u"], "undo the last action on the entry"),
    ("hand_back", Action::HandBack, &["H"], "hand back to Claude (next session)"),
    ("filter", Action::Filter, &["/"], "filter by path or event"),
    ("toggle_resolved", Action::ToggleResolved, &["s"], "show / hide resolved entries"),
    ("diff_mode", Action::DiffMode, &["m"], "cycle the diff: pre→disk, pre→post, HEAD→disk"),
    ("diff_pre", Action::DiffPre, &["1"], "diff: pre-image → disk"),
    ("diff_applied", Action::DiffApplied, &["2"], "diff: pre-image → post-image (what the tool did)"),
    ("diff_head", Action::DiffHead, &["3"], "diff: HEAD → disk"),
    ("scroll_down", Action::ScrollDown, &["ctrl+d", "J"], "scroll the diff down"),
    ("scroll_up", Action::ScrollUp, &["ctrl+u", "K"], "scroll the diff up"),
    ("refresh", Action::Refresh, &["R"], "reload the journal"),
    ("help", Action::Help, &["?"], "this help"),
    ("back", Action::Back, &["esc"], "back: diff → tree, clear selection, filter"),
    ("quit", Action::Quit, &["q", "ctrl+c"], "quit (a dialog open: nothing is done)"),
    ("confirm", Action::Confirm, &["enter"], "dialog: its default (shown; cancel if only force)"),
    ("cancel", Action::Cancel, &["esc"], "dialog: close without acting"),
];

/// A key with its modifiers, comparable regardless of how the terminal reported shift.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl Key {
    /// Normalises a terminal key event: a shifted character carries its case, not SHIFT.
    pub fn from_event(ev: &KeyEvent) -> Key {
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

/// Parses one key name: `j`, `G`, `?`, `enter`, `ctrl+d`, `alt+x`, `f5`, `pagedown`.
pub fn parse_key(s: &str) -> Result<Key, String> {
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
            _ => return Err(format!("unknown key {s:?} (try: j, G, enter, esc, ctrl+d, pagedown, space)")),
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
pub fn parse_keys(script: &str) -> Result<Vec<Key>, String> {
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
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap {
            bindings: BINDINGS
                .iter()
                .map(|(_, a, keys, _)| (*a, keys.iter().filter_map(|k| parse_key(k).ok()).collect()))
                .collect(),
        }
    }
}

impl Keymap {
    /// Defaults overridden by `[keys]` of the config. Unknown action names and key names
    /// are errors that name the offending entry.
    pub fn from_config(table: &toml::Table) -> Result<Keymap, String> {
        let mut map = Keymap::default();
        let mut overridden = Vec::new();
        for (name, value) in table {
            let Some(pos) = BINDINGS.iter().position(|(n, ..)| n == name) else {
                let names: Vec<&str> = BINDINGS.iter().map(|(n, ..)| *n).collect();
                return Err(format!("[keys] {name}: no such action (actions: {})", names.join(", ")));
            };
            let names: Vec<&str> = match value {
                toml::Value::String(s) => vec![s.as_str()],
                toml::Value::Array(a) => a.iter().filter_map(toml::Value::as_str).collect(),
                _ => return Err(format!("[keys] {name}: expected a key or a list of keys")),
            };
            let keys = names
                .iter()
                .map(|k| parse_key(k).map_err(|e| format!("[keys] {name}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            map.bindings[pos].1 = keys;
            overridden.push(pos);
        }
        // A key the user gave to one action leaves the action it was a default of.
        // A key given to an action leaves the defaults of the others in the same place
        // (dialog keys and tree keys never meet: Enter may toggle and confirm).
        let taken: Vec<(bool, Key)> = overridden
            .iter()
            .flat_map(|&i| {
                let scope = map.bindings[i].0.in_dialog();
                map.bindings[i].1.iter().map(move |k| (scope, *k))
            })
            .collect();
        for (i, (a, keys)) in map.bindings.iter_mut().enumerate() {
            if !overridden.contains(&i) {
                let scope = a.in_dialog();
                keys.retain(|k| !taken.contains(&(scope, *k)));
            }
        }
        Ok(map)
    }

    /// The action bound to a key.
    /// The action of a key on the tree and the diff.
    pub fn action(&self, key: &Key) -> Option<Action> {
        self.bindings.iter().find(|(a, keys)| !a.in_dialog() && keys.contains(key)).map(|(a, _)| *a)
    }

    /// A key as a dialog reads it: confirm, cancel, or a letter that may pick a choice.
    pub fn dialog_key(&self, key: &Key) -> Option<DialogKey> {
        let bound = self.bindings.iter().find(|(a, keys)| a.in_dialog() && keys.contains(key)).map(|(a, _)| *a);
        match (bound, key.code) {
            (Some(Action::Confirm), _) => Some(DialogKey::Confirm),
            (Some(_), _) => Some(DialogKey::Cancel),
            (None, KeyCode::Char(c)) => Some(DialogKey::Char(c)),
            (None, _) => None,
        }
    }

    /// The keys of an action, for the footer and help ("j/↓").
    pub fn keys_of(&self, action: Action) -> String {
        self.bindings
            .iter()
            .find(|(a, _)| *a == action)
            .map(|(_, keys)| keys.iter().map(Key::to_string).collect::<Vec<_>>().join("/"))
            .unwrap_or_default()
    }

    /// The first key of an action, for the footer.
    pub fn key_of(&self, action: Action) -> String {
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
        assert!(Keymap::from_config(&bad).unwrap_err().contains("no such action"));
        let bad: toml::Table = toml::from_str("revert = \"hyper+x\"\n").unwrap();
        assert!(Keymap::from_config(&bad).unwrap_err().contains("[keys] revert"));
    }
}
