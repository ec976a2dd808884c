//! Text helpers shared by every printer: one-line excerpts, clipping, plurals and times.

use chrono::{DateTime, Utc};

/// The first line of `s`, at most `max` chars, `…` when anything was left out.
pub fn one_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(max).collect();
    if out.len() < line.len() || s.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// All of `s` on one line (whitespace runs become one space), at most `max` characters,
/// `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut out: String = flat.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `1 entry`, `3 entries`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn local(ts: &str, fmt: &str) -> String {
    match DateTime::parse_from_rfc3339(ts) {
        Ok(t) => t.with_timezone(&chrono::Local).format(fmt).to_string(),
        Err(_) => ts.to_string(),
    }
}

/// Local-time `YYYY-MM-DD HH:MM` of a record timestamp (as written when unparsable).
pub fn human_ts(ts: &str) -> String {
    local(ts, "%Y-%m-%d %H:%M")
}

/// [`human_ts`] in UTC (fixed clocks: tests, screenshots).
pub fn utc_ts(ts: &str) -> String {
    match DateTime::parse_from_rfc3339(ts) {
        Ok(t) => t.with_timezone(&Utc).format("%Y-%m-%d %H:%M").to_string(),
        Err(_) => ts.to_string(),
    }
}

/// Local-time `HH:MM:SS` of a record timestamp (as written when unparsable).
pub fn hms(ts: &str) -> String {
    local(ts, "%H:%M:%S")
}

/// "2026-03-01 10:42" → "03-01 10:42".
pub fn short_time(t: &str) -> String {
    if t.len() == 16 && t.as_bytes().get(4) == Some(&b'-') { t[5..].to_string() } else { t.to_string() }
}

/// "3m", "2h", "5d" from a record timestamp to `now` (empty when unparsable).
pub fn age(ts: &str, now: DateTime<Utc>) -> String {
    let Ok(t) = DateTime::parse_from_rfc3339(ts) else { return String::new() };
    let secs = (now - t.with_timezone(&Utc)).num_seconds().max(0);
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
