//! The diff pane's model: the two sides from [`crate::triage::diff_sides`], turned into
//! hunks of lines with the changed words marked inside replaced lines.
//!
//! `similar` gets a deadline, so a pathological pair of files gives an approximate
//! (still correct, just less minimal) diff instead of a frozen screen. Views are built
//! once per (entry, mode) and cached by the app; drawing only slices them.

use std::time::{Duration, Instant};

use similar::{Algorithm, ChangeTag, DiffOp, InlineChangeMode, InlineChangeOptions, TextDiff};

use crate::triage::{DiffSides, Side};

/// Time the line diff may take before `similar` approximates.
pub const LINE_DEADLINE: Duration = Duration::from_millis(150);
/// Time all word highlighting of one view may take; later hunks are shown without it.
pub const INLINE_BUDGET: Duration = Duration::from_millis(60);
/// Lines of context around each change.
pub const CONTEXT: usize = 3;
/// Replaced blocks larger than this are not word-diffed (they are rewrites, not edits).
const INLINE_MAX_LINES: usize = 64;
/// Longest line kept in full; longer lines are cut (with a marker).
const MAX_LINE_CHARS: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Added,
    Removed,
    /// `@@ -a,b +c,d @@`
    Hunk,
    /// A remark: binary file, not captured, no newline at end…
    Note,
}

/// One displayed line: `(emphasised, text)` segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: LineKind,
    pub old_no: Option<usize>,
    pub new_no: Option<usize>,
    pub segments: Vec<(bool, String)>,
}

impl DiffLine {
    fn plain(kind: LineKind, text: impl Into<String>) -> DiffLine {
        DiffLine { kind, old_no: None, new_no: None, segments: vec![(false, text.into())] }
    }
    pub fn text(&self) -> String {
        self.segments.iter().map(|(_, s)| s.as_str()).collect()
    }
}

/// A computed diff, ready to draw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffView {
    /// "pre-image → disk".
    pub title: String,
    pub lines: Vec<DiffLine>,
    pub added: usize,
    pub removed: usize,
    /// The line diff hit its deadline: the result is correct but may not be minimal.
    pub approximate: bool,
    /// Some hunks were left without word highlighting (time budget).
    pub inline_skipped: bool,
    pub elapsed: Duration,
}

impl DiffView {
    /// A view that only says something (an error, "no changes").
    pub fn message(title: impl Into<String>, lines: &[String]) -> DiffView {
        DiffView {
            title: title.into(),
            lines: lines.iter().map(|l| DiffLine::plain(LineKind::Note, l.clone())).collect(),
            ..DiffView::default()
        }
    }
}

enum Content {
    Text(String),
    Absent,
    Binary(usize),
    Unknown(String),
}

fn content(side: &Side) -> Content {
    match (&side.bytes, &side.note) {
        (Some(b), _) if crate::triage::is_binary(b) => Content::Binary(b.len()),
        (Some(b), _) => Content::Text(String::from_utf8_lossy(b).into_owned()),
        (None, None) => Content::Absent,
        (None, Some(n)) => Content::Unknown(n.clone()),
    }
}

/// Makes a line safe to draw: tabs become spaces, control characters become `?`.
fn clean(s: &str) -> String {
    let s = s.strip_suffix('\n').unwrap_or(s);
    let s = s.strip_suffix('\r').unwrap_or(s);
    let mut out = String::with_capacity(s.len());
    for (n, c) in s.chars().enumerate() {
        if n >= MAX_LINE_CHARS {
            out.push_str(" …");
            break;
        }
        match c {
            '\t' => out.push_str("    "),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// Builds the view of `sides`.
pub fn build(sides: &DiffSides) -> DiffView {
    let started = Instant::now();
    let title = format!("{} → {}", sides.old.label, sides.new.label);
    let old = content(&sides.old);
    let new = content(&sides.new);
    let mut view = DiffView { title, ..DiffView::default() };
    let note = |v: &mut DiffView, s: String| v.lines.push(DiffLine::plain(LineKind::Note, s));
    match (&old, &new) {
        (Content::Unknown(why), _) => note(&mut view, format!("{} unknown: {why}", sides.old.label)),
        (_, Content::Unknown(why)) => note(&mut view, format!("{} unknown: {why}", sides.new.label)),
        _ => {}
    }
    match (&old, &new) {
        (Content::Binary(a), Content::Binary(b)) => {
            note(&mut view, format!("binary file: {a} bytes → {b} bytes"));
        }
        (Content::Binary(a), _) => note(&mut view, format!("binary file ({a} bytes) → text")),
        (_, Content::Binary(b)) => note(&mut view, format!("text → binary file ({b} bytes)")),
        (Content::Absent, Content::Absent) => note(&mut view, "the file exists on neither side".into()),
        _ => {
            let old_text = match &old {
                Content::Text(s) => s.as_str(),
                _ => "",
            };
            let new_text = match &new {
                Content::Text(s) => s.as_str(),
                _ => "",
            };
            if matches!(old, Content::Absent) {
                note(&mut view, format!("new file (absent in {})", sides.old.label));
            }
            if matches!(new, Content::Absent) {
                note(&mut view, format!("file deleted (absent on {})", sides.new.label));
            }
            if old_text == new_text {
                if matches!((&old, &new), (Content::Text(_), Content::Text(_))) {
                    note(&mut view, format!("no changes: {} and {} are identical", sides.old.label, sides.new.label));
                }
            } else {
                text_diff(&mut view, old_text, new_text, started);
            }
        }
    }
    view.elapsed = started.elapsed();
    view
}

fn text_diff(view: &mut DiffView, old: &str, new: &str, started: Instant) {
    let diff =
        TextDiff::configure().algorithm(Algorithm::Patience).deadline(started + LINE_DEADLINE).diff_lines(old, new);
    view.approximate = started.elapsed() >= LINE_DEADLINE;
    let inline_deadline = Instant::now() + INLINE_BUDGET;
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else { continue };
        let old_start = first.old_range().start;
        let new_start = first.new_range().start;
        let old_len = last.old_range().end - old_start;
        let new_len = last.new_range().end - new_start;
        view.lines.push(DiffLine::plain(
            LineKind::Hunk,
            // Like diff -u: an empty side starts at line 0.
            format!(
                "@@ -{},{} +{},{} @@",
                old_start + usize::from(old_len > 0),
                old_len,
                new_start + usize::from(new_len > 0),
                new_len
            ),
        ));
        for op in &group {
            push_op(view, &diff, op, inline_deadline);
        }
    }
    if !old.is_empty() && !old.ends_with('\n') || !new.is_empty() && !new.ends_with('\n') {
        let which = match (old.ends_with('\n') || old.is_empty(), new.ends_with('\n') || new.is_empty()) {
            (false, false) => "either side",
            (false, true) => "the old side",
            _ => "the new side",
        };
        view.lines.push(DiffLine::plain(LineKind::Note, format!("\\ no newline at end of file on {which}")));
    }
}

fn push_op<'a>(view: &mut DiffView, diff: &TextDiff<'a, 'a, str>, op: &DiffOp, inline_deadline: Instant) {
    let (tag, old_r, new_r) = op.as_tag_tuple();
    let small = old_r.len() <= INLINE_MAX_LINES && new_r.len() <= INLINE_MAX_LINES;
    if tag == similar::DiffTag::Replace && small {
        if Instant::now() < inline_deadline {
            // Mark words even in lines that changed a fair amount (similar's default asks 50% alike).
            let mut opts = InlineChangeOptions::new();
            opts.mode(InlineChangeMode::UnicodeWords).min_ratio(0.25).semantic_cleanup(true);
            for change in diff.iter_inline_changes_with_options_deadline(op, opts, Some(inline_deadline)) {
                let segments: Vec<(bool, String)> = change
                    .iter_strings_lossy()
                    .map(|(emph, s)| (emph, clean(&s)))
                    .filter(|(_, s)| !s.is_empty())
                    .collect();
                push_change(view, change.tag(), change.old_index(), change.new_index(), segments);
            }
            return;
        }
        view.inline_skipped = true;
    }
    for change in diff.iter_changes(op) {
        let segments = vec![(false, clean(change.value()))];
        push_change(view, change.tag(), change.old_index(), change.new_index(), segments);
    }
}

fn push_change(
    view: &mut DiffView,
    tag: ChangeTag,
    old_index: Option<usize>,
    new_index: Option<usize>,
    segments: Vec<(bool, String)>,
) {
    let kind = match tag {
        ChangeTag::Equal => LineKind::Context,
        ChangeTag::Insert => {
            view.added += 1;
            LineKind::Added
        }
        ChangeTag::Delete => {
            view.removed += 1;
            LineKind::Removed
        }
    };
    // A line whose every segment is emphasised reads better plain (the colour says it all).
    let segments = if segments.iter().all(|(e, _)| *e) {
        segments.into_iter().map(|(_, s)| (false, s)).collect()
    } else {
        segments
    };
    view.lines.push(DiffLine { kind, old_no: old_index.map(|i| i + 1), new_no: new_index.map(|i| i + 1), segments });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(label: &str, text: Option<&str>) -> Side {
        Side { label: label.into(), bytes: text.map(|t| t.as_bytes().to_vec()), note: None }
    }

    #[test]
    fn replaced_line_marks_changed_words() {
        let sides = DiffSides {
            old: side("pre-image", Some("{\n  \"retries\": 3,\n  \"timeout_ms\": 500\n}\n")),
            new: side("disk", Some("{\n  \"retries\": 5,\n  \"timeout_ms\": 500\n}\n")),
        };
        let v = build(&sides);
        assert_eq!(v.title, "pre-image → disk");
        assert_eq!((v.added, v.removed), (1, 1));
        assert_eq!(v.lines[0].text(), "@@ -1,4 +1,4 @@");
        let removed = v.lines.iter().find(|l| l.kind == LineKind::Removed).unwrap();
        assert_eq!(removed.old_no, Some(2));
        let emph: Vec<&str> = removed.segments.iter().filter(|(e, _)| *e).map(|(_, s)| s.as_str()).collect();
        assert_eq!(emph, vec!["3"], "{removed:?}");
        let added = v.lines.iter().find(|l| l.kind == LineKind::Added).unwrap();
        assert!(added.segments.iter().any(|(e, s)| *e && s == "5"));
        // Words, not whitespace runs: punctuation does not drag its neighbours in.
        let v = build(&DiffSides {
            old: side("a", Some("console.log(\"listening on\", port);\n")),
            new: side("b", Some("console.log(\"shop listening on port\", port);\n")),
        });
        let added = v.lines.iter().find(|l| l.kind == LineKind::Added).unwrap();
        let emph: String = added.segments.iter().filter(|(e, _)| *e).map(|(_, s)| s.as_str()).collect();
        assert!(!emph.contains("console"), "{:?}", added.segments);
        assert!(emph.contains("shop") && emph.contains("port"), "{:?}", added.segments);
    }

    #[test]
    fn absent_binary_unknown_and_equal_sides() {
        let created = build(&DiffSides { old: side("pre-image", None), new: side("disk", Some("a\nb\n")) });
        assert_eq!(created.lines[0].text(), "new file (absent in pre-image)");
        assert_eq!(created.added, 2);
        assert_eq!(created.lines[1].text(), "@@ -0,0 +1,2 @@");
        let bin = DiffSides {
            old: Side { label: "pre-image".into(), bytes: Some(vec![0, 1, 2]), note: None },
            new: side("disk", Some("x")),
        };
        assert!(build(&bin).lines[0].text().contains("binary"));
        let unknown = DiffSides {
            old: Side { label: "pre-image".into(), bytes: None, note: Some("not captured (too_large)".into()) },
            new: side("disk", Some("x\n")),
        };
        assert_eq!(build(&unknown).lines[0].text(), "pre-image unknown: not captured (too_large)");
        let same = build(&DiffSides { old: side("a", Some("x\n")), new: side("b", Some("x\n")) });
        assert!(same.lines[0].text().starts_with("no changes"));
        let tabs = build(&DiffSides { old: side("a", Some("\tx")), new: side("b", Some("\ty\u{1b}")) });
        assert!(tabs.lines.iter().any(|l| l.text() == "    y?"), "{:?}", tabs.lines);
        assert!(tabs.lines.last().unwrap().text().contains("no newline"));
    }

    #[test]
    fn big_rewrite_stays_within_budget() {
        let old: String = (0..10_000).map(|i| format!("line {i} alpha beta\n")).collect();
        let new: String = (0..10_000).map(|i| format!("line {} alpha gamma\n", i * 7 % 10_000)).collect();
        let t = Instant::now();
        let v = build(&DiffSides { old: side("a", Some(&old)), new: side("b", Some(&new)) });
        assert!(v.added > 0);
        // Deadlines bound the work; allow slack for a slow, shared test machine.
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    }
}
