//! `walj diff`'s text: a unified diff of an entry's two sides ([`crate::triage::diff_sides`]),
//! coloured for a terminal. The sides come from the action floor; this is only how they are
//! drawn. Recorded text (paths, lines) can come from a bundle or another machine and is shown
//! escaped.

use std::fmt::Write as _;

use similar::ChangeTag;

use crate::present::diff::{DiffModel, DiffOptions, NO_NEWLINE, is_binary};
use crate::style::Style;
use crate::triage::{DiffSides, Side};

fn count_lines(b: &[u8]) -> usize {
    let n = b.iter().filter(|&&c| c == b'\n').count();
    if b.last().is_some_and(|&c| c != b'\n') { n + 1 } else { n }
}

fn describe(side: &Side) -> String {
    match (&side.bytes, &side.note) {
        (Some(b), _) if is_binary(b) => format!("{}: binary, {} bytes", side.label, b.len()),
        (Some(b), _) => format!("{}: {} lines, {} bytes", side.label, count_lines(b), b.len()),
        (None, None) => format!("{}: absent", side.label),
        (None, Some(n)) => format!("{}: {n}", side.label),
    }
}

/// A unified diff of `sides` for `path` with `context` lines around changes, coloured
/// when `color`. Binary sides give a size summary, unknown sides say why, identical
/// sides say so. Ends with a newline.
pub fn unified(sides: &DiffSides, path: &str, context: usize, color: bool) -> String {
    let st = Style { color };
    let (old, new) = (&sides.old, &sides.new);
    let mut out = String::new();
    // The path and the lines can come from a bundle or another machine: shown escaped
    // (a line keeps its tabs, and the `\r` of a CRLF line end).
    let name = |side: &Side, prefix: &str| {
        if side.is_absent() { "/dev/null".to_string() } else { format!("{prefix}/{}", crate::present::safe(path)) }
    };
    let _ = writeln!(out, "{}", st.bold(&format!("--- {}\t({})", name(old, "a"), old.label)));
    let _ = writeln!(out, "{}", st.bold(&format!("+++ {}\t({})", name(new, "b"), new.label)));
    for side in [old, new] {
        if let (Some(_), Some(why)) = (&side.bytes, &side.note) {
            let _ = writeln!(out, "{}", st.yellow(&format!("{}: {why}", side.label)));
        }
    }
    if old.is_unavailable() || new.is_unavailable() {
        for side in [old, new] {
            let text = describe(side);
            let _ = writeln!(out, "{}", if side.is_unavailable() { st.yellow(&text) } else { text });
        }
        return out;
    }
    if old.is_absent() && new.is_absent() {
        let _ = writeln!(out, "(absent on both sides)");
        return out;
    }
    let a = old.bytes.as_deref().unwrap_or_default();
    let b = new.bytes.as_deref().unwrap_or_default();
    if old.is_absent() {
        let _ = writeln!(out, "{}", st.dim(&format!("new file ({} → {})", old.label, new.label)));
    } else if new.is_absent() {
        let _ = writeln!(out, "{}", st.dim(&format!("deleted file ({} → {})", old.label, new.label)));
    }
    if a == b && old.is_absent() == new.is_absent() {
        let _ = writeln!(out, "(no differences: {} and {} are identical)", old.label, new.label);
        return out;
    }
    if is_binary(a) || is_binary(b) {
        let _ = writeln!(
            out,
            "Binary files {} and {} differ ({} → {} bytes)",
            name(old, "a"),
            name(new, "b"),
            if old.is_absent() { "absent".to_string() } else { a.len().to_string() },
            if new.is_absent() { "absent".to_string() } else { b.len().to_string() },
        );
        return out;
    }
    let model = DiffModel::new(sides, DiffOptions::CLI);
    for hunk in model.hunks(context) {
        let _ = writeln!(out, "{}", st.cyan(&hunk.header()));
        for line in hunk.lines(&model) {
            let (sign, paint): (&str, fn(&Style, &str) -> String) = match line.tag {
                ChangeTag::Delete => ("-", Style::red),
                ChangeTag::Insert => ("+", Style::green),
                ChangeTag::Equal => (" ", |_, s| s.to_string()),
            };
            let body: &str = line.body();
            let (text, cr) = body.strip_suffix('\r').map_or((body, ""), |t| (t, "\r"));
            let _ = writeln!(out, "{}", paint(&st, &format!("{sign}{}{cr}", crate::present::safe_block(text))));
            if line.missing_newline() {
                let _ = writeln!(out, "{}", st.dim(NO_NEWLINE));
            }
        }
    }
    out
}
