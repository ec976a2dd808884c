//! Terminal colours for command output: on for terminals, off for pipes and `NO_COLOR`.

use std::io::IsTerminal;

use crate::present::Tone;

#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    pub fn stdout() -> Style {
        Style::on_terminal(std::io::stdout().is_terminal())
    }
    /// For messages on stderr (which may be a terminal while stdout is piped).
    pub fn stderr() -> Style {
        Style::on_terminal(std::io::stderr().is_terminal())
    }
    fn on_terminal(tty: bool) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style { color: tty && !no_color }
    }
    pub fn plain() -> Style {
        Style { color: false }
    }
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.color { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_string() }
    }
    pub fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    pub fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
    pub fn red(&self, s: &str) -> String {
        self.wrap("31", s)
    }
    pub fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    pub fn yellow(&self, s: &str) -> String {
        self.wrap("33", s)
    }
    pub fn blue(&self, s: &str) -> String {
        self.wrap("34", s)
    }
    pub fn magenta(&self, s: &str) -> String {
        self.wrap("35", s)
    }
    pub fn cyan(&self, s: &str) -> String {
        self.wrap("36", s)
    }
    /// `s` in the colour of a [`Tone`] (the one state→colour table, `crate::present`).
    pub fn tone(&self, tone: Tone, s: &str) -> String {
        match tone {
            Tone::Red => self.red(s),
            Tone::Yellow => self.yellow(s),
            Tone::Green => self.green(s),
            Tone::Blue => self.blue(s),
            Tone::Cyan => self.cyan(s),
            Tone::Magenta => self.magenta(s),
            Tone::Gray => self.dim(s),
        }
    }
}
