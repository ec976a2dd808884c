//! Terminal colours for command output. `--color auto|always|never`; with `auto` (the default)
//! the conventions anstream follows (as clap, cargo and jj do): `NO_COLOR` turns colour off,
//! `CLICOLOR_FORCE` turns it on for pipes too, `CLICOLOR=0` off, else colour on terminals whose
//! `TERM` is not `dumb`. The colours are the one state→colour table in `crate::present`.

use crate::present::Tone;

/// `--color WHEN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// Colour on terminals, following NO_COLOR, CLICOLOR_FORCE and CLICOLOR.
    #[default]
    Auto,
    /// Always colour, even into pipes and files.
    Always,
    /// Never colour.
    Never,
}

/// Makes `when` the process's choice: walj's output, and clap's help and errors.
pub fn set_color(when: ColorWhen) {
    anstream::ColorChoice::write_global(match when {
        ColorWhen::Auto => anstream::ColorChoice::Auto,
        ColorWhen::Always => anstream::ColorChoice::Always,
        ColorWhen::Never => anstream::ColorChoice::Never,
    });
}

/// `--color` from the raw arguments (`--color WHEN`, `--color=WHEN`), before clap parses them,
/// so that clap's own help and errors follow it too. `None` when absent or not a valid value.
pub fn color_arg(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<ColorWhen> {
    use clap::ValueEnum;
    let mut args = args.into_iter();
    let mut found = None;
    while let Some(a) = args.next() {
        let a = a.to_string_lossy().into_owned();
        if a == "--" {
            break;
        }
        let value = if a == "--color" {
            args.next().map(|v| v.to_string_lossy().into_owned())
        } else {
            a.strip_prefix("--color=").map(str::to_string)
        };
        if let Some(v) = value {
            found = ColorWhen::from_str(&v, true).ok().or(found);
        }
    }
    found
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    pub color: bool,
}

impl Style {
    pub fn stdout() -> Style {
        Style { color: colors(anstream::AutoStream::choice(&std::io::stdout())) }
    }
    /// For messages on stderr (which may be a terminal while stdout is piped).
    pub(crate) fn stderr() -> Style {
        Style { color: colors(anstream::AutoStream::choice(&std::io::stderr())) }
    }
    fn wrap(&self, code: &str, s: &str) -> String {
        if self.color { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_string() }
    }
    pub(crate) fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    pub(crate) fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
    pub(crate) fn red(&self, s: &str) -> String {
        self.wrap("31", s)
    }
    pub(crate) fn green(&self, s: &str) -> String {
        self.wrap("32", s)
    }
    pub(crate) fn yellow(&self, s: &str) -> String {
        self.wrap("33", s)
    }
    pub(crate) fn blue(&self, s: &str) -> String {
        self.wrap("34", s)
    }
    pub(crate) fn magenta(&self, s: &str) -> String {
        self.wrap("35", s)
    }
    pub(crate) fn cyan(&self, s: &str) -> String {
        self.wrap("36", s)
    }
    /// A shown id ([`crate::fold::ShortIds::split`]): its unique start bold in the id colour,
    /// the rest dimmed; padded with spaces to `width` characters. Escaped for the terminal
    /// ([`crate::present::safe`]): ids can come from bundles and other machines.
    pub(crate) fn id(&self, (unique, rest): (&str, &str), width: usize) -> String {
        let (unique, rest) = (&*crate::present::safe(unique), &*crate::present::safe(rest));
        let shown = format!("{}{}", self.bold(&self.tone(crate::present::ID_TONE, unique)), self.dim(rest));
        pad(shown, unique.chars().count() + rest.chars().count(), width)
    }

    /// A shown session id ([`crate::fold::ShortIds::session_split`]): its unique start bold,
    /// all of it in the session colour; padded to `width` characters. Escaped like [`Style::id`].
    pub(crate) fn session(&self, (unique, rest): (&str, &str), width: usize) -> String {
        let (unique, rest) = (&*crate::present::safe(unique), &*crate::present::safe(rest));
        let tone = crate::present::SESSION_TONE;
        let shown = format!("{}{}", self.bold(&self.tone(tone, unique)), self.tone(tone, rest));
        pad(shown, unique.chars().count() + rest.chars().count(), width)
    }

    /// `s` in the colour of a [`Tone`] (the one state→colour table, `crate::present`).
    pub(crate) fn tone(&self, tone: Tone, s: &str) -> String {
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

/// `s` (`len` characters shown, escapes aside) with spaces up to `width`.
fn pad(mut s: String, len: usize, width: usize) -> String {
    s.extend(std::iter::repeat_n(' ', width.saturating_sub(len)));
    s
}

fn colors(choice: anstream::ColorChoice) -> bool {
    matches!(choice, anstream::ColorChoice::Always | anstream::ColorChoice::AlwaysAnsi)
}
