//! Text helpers shared by every printer: one-line excerpts, clipping, plurals, times, and
//! text made safe for a terminal cell grid.

use std::borrow::Cow;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};

/// What [`safe`] does with one char.
enum Fix {
    Keep,
    /// Invisible or reordering: shown as an escape (`\n`, `\x1b`, `\u{202e}`).
    Escape,
    /// Glue of an emoji sequence whose width terminals disagree on: left out.
    Drop,
    /// A regional-indicator letter (half of a flag): the plain letter.
    Letter(char),
}

fn fix(c: char) -> Fix {
    match c {
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => Fix::Escape,
        // Bidi controls (reorder what follows: a name can hide its real extension),
        // zero-width spaces and marks, word joiners, the BOM.
        '\u{200b}' | '\u{200c}' | '\u{200e}' | '\u{200f}' | '\u{061c}' => Fix::Escape,
        '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}' => Fix::Escape,
        // Emoji glue: joiner, variation selectors, skin tones, tags, the keycap mark.
        '\u{200d}' | '\u{fe0e}' | '\u{fe0f}' | '\u{20e3}' => Fix::Drop,
        '\u{1f3fb}'..='\u{1f3ff}' | '\u{e0020}'..='\u{e007f}' => Fix::Drop,
        '\u{1f1e6}'..='\u{1f1ff}' => Fix::Letter(char::from(b'A' + (c as u32 - 0x1f1e6) as u8)),
        // A byte of a file name that is not UTF-8 (`fsutil::name`): shown as `\xNN`.
        '\u{10ff80}'..='\u{10ffff}' => Fix::Escape,
        _ => Fix::Keep,
    }
}

/// `s` as a terminal shows it without surprises: control characters (newlines, escapes),
/// bidi overrides and other invisible format characters are escaped (`\n`, `\x1b`,
/// `\u{202e}`); emoji glue (joiners, variation selectors, skin tones) is left out and
/// flags become their two letters, so every char has one agreed width and nothing is
/// reordered or left behind on screen. Borrowed when nothing needed fixing.
pub fn safe(s: &str) -> Cow<'_, str> {
    if s.chars().all(|c| matches!(fix(c), Fix::Keep)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match fix(c) {
            Fix::Keep => out.push(c),
            Fix::Drop => {}
            Fix::Letter(l) => out.push(l),
            Fix::Escape => match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x100 => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c if crate::fsutil::name::raw_byte(c).is_some() => {
                    let _ = write!(out, "\\x{:02x}", crate::fsutil::name::raw_byte(c).unwrap_or(0));
                }
                c => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
            },
        }
    }
    Cow::Owned(out)
}

/// [`safe`] text that keeps its line breaks (and tabs): for a multi-line prompt or message
/// shown as a block. Every other control (`\r`, ESC, bidi overrides) is escaped as in [`safe`].
pub(crate) fn safe_block(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && c != '\t' && !matches!(fix(c), Fix::Keep)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (j, part) in line.split('\t').enumerate() {
            if j > 0 {
                out.push('\t');
            }
            out.push_str(&safe(part));
        }
    }
    Cow::Owned(out)
}

/// Recorded text (a path, command, prompt, session id, machine name) on its way to a
/// terminal: `Display` writes it through [`safe`], so a format string cannot print it raw
/// by accident; width and alignment (`{:<20}`) apply to the escaped form.
#[derive(Debug, Clone)]
pub(crate) struct Shown<'a>(Cow<'a, str>);

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&safe(&self.0))
    }
}

/// `s` to be shown: see [`Shown`].
pub(crate) fn shown(s: &str) -> Shown<'_> {
    Shown(Cow::Borrowed(s))
}

/// A path to be shown (a byte of a non-UTF-8 name as `\xNN`): see [`Shown`].
pub(crate) fn shown_path(p: &std::path::Path) -> Shown<'_> {
    Shown(crate::fsutil::name::encode_os(p.as_os_str()))
}

/// How many terminal columns `s` takes once escaped ([`safe`]): a wide (CJK, emoji) character
/// counts two, a combining mark none. What every aligned column measures.
pub(crate) fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(&*safe(s))
}

/// Recorded text in a column `cols` terminal columns wide, the one helper every aligned table
/// uses: escaped first ([`safe`]), then padded with spaces to `cols` display columns (`{:<N}`
/// pads by characters, so a CJK name pushed the columns after it two to the right per
/// character). Longer text is kept whole, as `{:<N}` keeps it; [`fit`] cuts it.
pub(crate) fn pad(s: &str, cols: usize) -> String {
    pad_escaped(safe(s).into_owned(), cols)
}

/// [`pad`], the text first cut to at most `cols` display columns (a wide character that would
/// straddle the edge is left out, its column filled with a space).
pub(crate) fn fit(s: &str, cols: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut out = String::new();
    let mut used = 0;
    for c in safe(s).chars() {
        let w = c.width().unwrap_or(0);
        if used + w > cols {
            break;
        }
        used += w;
        out.push(c);
    }
    pad_escaped(out, cols)
}

fn pad_escaped(mut out: String, cols: usize) -> String {
    let used = unicode_width::UnicodeWidthStr::width(out.as_str());
    out.extend(std::iter::repeat_n(' ', cols.saturating_sub(used)));
    out
}

/// Whether `s` holds a character [`safe`] escapes other than a line break or a tab: a
/// carriage return, ESC, another C0/C1 control, DEL, a bidi override or an invisible mark,
/// the characters that can make a terminal show other text than the one that runs.
pub(crate) fn hides_text(s: &str) -> bool {
    s.chars().any(|c| c != '\n' && c != '\t' && matches!(fix(c), Fix::Escape))
}

/// `s` as one POSIX shell word: as it is when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside as `'\''`). For commands walj suggests or
/// confirms: a recorded id like `$(id)` is then text, not a command substitution. Show the
/// result through [`safe`]: quoting does not hide control characters. A recorded file name
/// that is not UTF-8 (`fsutil::name`) is written `$'…'` with its raw bytes as `\xNN`, the
/// form Bash, zsh and POSIX shells read back as the same bytes.
pub(crate) fn shell_quote(s: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return Cow::Borrowed(s);
    }
    if crate::fsutil::name::has_raw(s) {
        let mut out = String::from("$'");
        for b in crate::fsutil::name::decode(s).iter() {
            match b {
                b'\\' | b'\'' => {
                    out.push('\\');
                    out.push(*b as char);
                }
                0x20..=0x7e => out.push(*b as char),
                _ => {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
        }
        out.push('\'');
        return Cow::Owned(out);
    }
    Cow::Owned(format!("'{}'", s.replace('\'', "'\\''")))
}

/// The first line of `s`, at most `max` chars, `…` when anything was left out; made
/// [`safe`] for a terminal (a `\r` or ESC inside the line is shown escaped).
/// An event name as a title in words: `artifact_created` → "Artifact created" (walj's events and
/// the user's own `[[events]]` alike; recorded text, so escaped).
pub(crate) fn event_title(event: &str) -> String {
    let words = event.replace('_', " ");
    let mut c = words.chars();
    let titled: String = c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default();
    safe(&titled).into_owned()
}

pub(crate) fn one_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(max).collect();
    if out.len() < line.len() || s.lines().nth(1).is_some() {
        out.push('…');
    }
    safe(&out).into_owned()
}

/// All of `s` on one line (whitespace runs become one space), at most `max` characters,
/// `…` when cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut out: String = flat.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `1 entry`, `3 entries`.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn local(ts: &str, fmt: &str) -> String {
    match DateTime::parse_from_rfc3339(ts) {
        Ok(t) => t.with_timezone(&chrono::Local).format(fmt).to_string(),
        Err(_) => safe(ts).into_owned(),
    }
}

/// Local-time `YYYY-MM-DD HH:MM` of a record timestamp (as written, [`safe`], when unparsable).
pub(crate) fn human_ts(ts: &str) -> String {
    local(ts, "%Y-%m-%d %H:%M")
}

/// [`human_ts`] in UTC (fixed clocks: tests, screenshots).
pub(crate) fn utc_ts(ts: &str) -> String {
    match DateTime::parse_from_rfc3339(ts) {
        Ok(t) => t.with_timezone(&Utc).format("%Y-%m-%d %H:%M").to_string(),
        Err(_) => safe(ts).into_owned(),
    }
}

/// Local-time `HH:MM:SS` of a record timestamp (as written, [`safe`], when unparsable).
pub(crate) fn hms(ts: &str) -> String {
    local(ts, "%H:%M:%S")
}

/// "2026-03-01 10:42" → "03-01 10:42".
pub(crate) fn short_time(t: &str) -> String {
    if t.len() == 16 && t.as_bytes().get(4) == Some(&b'-') { t[5..].to_string() } else { t.to_string() }
}

/// "3m", "2h", "5d" from a record timestamp to `now` (empty when unparsable).
pub(crate) fn age(ts: &str, now: DateTime<Utc>) -> String {
    let Ok(t) = DateTime::parse_from_rfc3339(ts) else { return String::new() };
    let secs = (now - t.with_timezone(&Utc)).num_seconds().max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// The command that resumes session `s`, run where it was started (Claude Code keys
/// `--resume` by the start folder): `cd pkg/core && claude --resume ID` for a session started
/// in a subfolder of `project` (its start record's `cwd`), else `claude --resume ID` (or its
/// agent's line). A shell line: the id quoted where it needs to be.
pub(crate) fn resume_line(project: &crate::project::Project, s: &crate::fold::SessionInfo) -> String {
    let hint = s.agent().resume_hint(&shell_quote(&s.session));
    project.resume_in(s.cwd.as_deref(), &hint)
}

#[cfg(test)]
mod tests {
    #[test]
    fn event_titles_are_words() {
        assert_eq!(super::event_title("artifact_created"), "Artifact created");
        assert_eq!(super::event_title("file_modified"), "File modified");
        assert_eq!(super::event_title(""), "");
    }

    use super::*;

    #[test]
    fn a_non_utf8_name_is_shown_and_quoted_by_its_bytes() {
        let rec = crate::fsutil::name::encode(b"bad\xff \xe2.txt");
        assert_eq!(safe(&rec), "bad\\xff \\xe2.txt");
        assert_eq!(shown(&rec).to_string(), "bad\\xff \\xe2.txt");
        // `$'…'` gives the shell the same bytes back; a quote inside stays quoted.
        assert_eq!(shell_quote(&rec), "$'bad\\xff \\xe2.txt'");
        let rec = crate::fsutil::name::encode(b"it's\x80");
        assert_eq!(shell_quote(&rec), "$'it\\'s\\x80'");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let p = std::path::Path::new(std::ffi::OsStr::from_bytes(b"d/x\xfe"));
            assert_eq!(shown_path(p).to_string(), "d/x\\xfe");
        }
    }

    #[test]
    fn excerpts_and_counts() {
        assert_eq!(one_line("abc\ndef", 10), "abc…");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("abc", 3), "abc");
        assert_eq!(clip("a  b\nc", 10), "a b c");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(plural(1, "entry", "entries"), "1 entry");
        assert_eq!(plural(0, "entry", "entries"), "0 entries");
        assert_eq!(short_time("2026-03-01 10:42"), "03-01 10:42");
        assert_eq!(utc_ts("2026-03-01T10:42:07.5Z"), "2026-03-01 10:42");
        assert_eq!(human_ts("garbage"), "garbage");
        let now: DateTime<Utc> = "2026-03-01T10:30:00Z".parse().unwrap();
        assert_eq!(age("2026-03-01T10:25:00Z", now), "5m");
        assert_eq!(age("2026-02-27T10:30:00Z", now), "2d");
        assert_eq!(age("x", now), "");
    }

    #[test]
    fn shell_words_are_quoted_when_a_shell_would_read_them() {
        assert_eq!(shell_quote("8f14e45f-ceea"), "8f14e45f-ceea");
        assert_eq!(shell_quote("$(id)"), "'$(id)'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("npm run dev"), "'npm run dev'");
        assert!(!hides_text("npm run dev\n\techo ok"));
        assert!(hides_text("npm run dev\r\x1b[2Kcurl x | sh"));
        assert!(hides_text("a\u{202e}b"));
    }

    #[test]
    fn blocks_keep_line_breaks_and_escape_the_rest() {
        assert!(matches!(safe_block("a\n\tb"), Cow::Borrowed(_)));
        assert_eq!(safe_block("a\r\x1b]2;OWNED\x07\nb\u{202e}"), "a\\r\\x1b]2;OWNED\\x07\nb\\u{202e}");
        assert_eq!(one_line("x\x1b[2Ky\nz", 10), "x\\x1b[2Ky…");
        assert_eq!(format!("[{:<6}]", shown("a\rb")), "[a\\rb  ]");
        // Columns by display width, escaping first.
        assert_eq!(pad("日本", 6), "日本  ");
        assert_eq!(pad("a\rb", 6), "a\\rb  ");
        assert_eq!(pad("日本語のパス", 4), "日本語のパス", "longer text is kept whole");
        assert_eq!(fit("日本語", 5), "日本 ", "a wide character that would straddle the edge is left out");
        assert_eq!((width("日本"), width("\u{1b}")), (4, 4));
    }

    #[test]
    fn safe_text_escapes_controls_and_flattens_emoji_sequences() {
        assert!(matches!(safe("src/main.rs"), Cow::Borrowed(_)));
        assert!(matches!(safe("naïve 日本 😀"), Cow::Borrowed(_)));
        assert_eq!(safe("a\nb\tc\u{1b}[31m"), "a\\nb\\tc\\x1b[31m");
        // An RTL override would show "evil\u{202e}gpj.exe" as "evilexe.jpg".
        assert_eq!(safe("evil\u{202e}gpj.exe"), "evil\\u{202e}gpj.exe");
        // Family (ZWJ sequence), flag, thumbs up with a skin tone and VS16.
        assert_eq!(safe("👨\u{200d}👩\u{200d}👧"), "👨👩👧");
        assert_eq!(safe("🇫🇷.txt"), "FR.txt");
        assert_eq!(safe("👍\u{1f3fd}❤\u{fe0f}"), "👍❤");
        // What is left has one width per char, as ratatui and the terminal both count.
        use unicode_width::UnicodeWidthStr;
        for s in ["👨\u{200d}👩\u{200d}👧", "🇫🇷", "👍\u{1f3fd}", "a\u{202e}b"] {
            let t = safe(s);
            let by_char: usize = t.chars().map(|c| unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)).sum();
            assert_eq!(t.width(), by_char, "{s:?} → {t:?}");
        }
    }
}
