//! The diff pane's view: the one diff model ([`crate::present::diff`], computed with the
//! TUI's preset) rendered as lines, with the changed words marked inside replaced lines.
//!
//! The model has a deadline, so a pathological pair of files gives an approximate (still
//! correct, just less minimal) diff instead of a frozen screen. Views are built once per
//! (entry, mode) and cached by the app; drawing only slices them.

use std::time::{Duration, Instant};

use similar::{ChangeTag, DiffOp, DiffTag, InlineChangeMode, InlineChangeOptions, TextDiff};

use crate::present::diff::{Content, DiffModel, DiffOptions, NO_NEWLINE, ends_without_newline};
use crate::triage::DiffSides;

/// Time all word highlighting of one view may take; later hunks are shown without it.
pub(crate) const INLINE_BUDGET: Duration = Duration::from_millis(60);
/// Lines of context around each change.
pub(crate) const CONTEXT: usize = 3;
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
    pub(crate) fn text(&self) -> String {
        self.segments.iter().map(|(_, s)| s.as_str()).collect()
    }
    /// Columns of the line's text (combining marks take none).
    pub(crate) fn width(&self) -> usize {
        use unicode_width::UnicodeWidthChar;
        self.segments.iter().flat_map(|(_, s)| s.chars()).map(|c| c.width().unwrap_or(0)).sum()
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
    /// Only line endings changed ("CRLF → LF"): no lines are listed.
    pub eol: Option<String>,
    /// Digits of the largest line number (the gutter's width).
    pub gutter: usize,
    /// Columns of the widest line's text (how far sideways scrolling goes).
    pub widest: usize,
    pub elapsed: Duration,
}

impl DiffView {}

/// Makes a line safe to draw: its line ending dropped, tabs become spaces, then
/// [`crate::present::safe`] (control characters escaped, emoji sequences flattened).
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
            c => out.push(c),
        }
    }
    match crate::present::safe(&out) {
        std::borrow::Cow::Borrowed(_) => out,
        std::borrow::Cow::Owned(safe) => safe,
    }
}

/// Builds the view of `sides`: the model, computed once, then its lines.
pub(crate) fn build(sides: &DiffSides) -> DiffView {
    let started = Instant::now();
    let model = DiffModel::new(sides, DiffOptions::TUI);
    let title = format!("{} → {}", sides.old.label, sides.new.label);
    let mut view = DiffView { title, approximate: model.approximate, ..DiffView::default() };
    let note = |v: &mut DiffView, s: String| v.lines.push(DiffLine::plain(LineKind::Note, s));
    let (old, new) = (&model.old, &model.new);
    match (old, new) {
        (Content::Unknown(why), _) => note(&mut view, format!("{} unknown: {why}", sides.old.label)),
        (_, Content::Unknown(why)) => note(&mut view, format!("{} unknown: {why}", sides.new.label)),
        _ => {}
    }
    match (old, new) {
        (Content::Binary(a), Content::Binary(b)) => {
            note(&mut view, format!("binary file: {a} bytes → {b} bytes"));
        }
        (Content::Binary(a), _) => note(&mut view, format!("binary file ({a} bytes) → text")),
        (_, Content::Binary(b)) => note(&mut view, format!("text → binary file ({b} bytes)")),
        (Content::Absent, Content::Absent) => note(&mut view, "the file exists on neither side".into()),
        (Content::Unknown(_), _) | (_, Content::Unknown(_)) => {}
        _ => {
            if *old == Content::Absent {
                note(&mut view, format!("new file (absent in {})", sides.old.label));
            }
            if *new == Content::Absent {
                note(&mut view, format!("file deleted (absent on {})", sides.new.label));
            }
            if model.identical() {
                note(&mut view, format!("no changes: {} and {} are identical", sides.old.label, sides.new.label));
            } else if let Some(eol) = model.eol_only() {
                let what = eol.describe(model.old_len());
                let lines = crate::present::plural(eol.lines, "line", "lines");
                note(&mut view, format!("only line endings changed ({what}, {lines}): every line reads the same"));
                view.eol = Some(what);
            } else {
                lines(&mut view, &model);
            }
        }
    }
    view.gutter = view.lines.iter().filter_map(|l| l.old_no.max(l.new_no)).max().unwrap_or(0).to_string().len();
    view.widest = view.lines.iter().map(DiffLine::width).max().unwrap_or(0);
    view.elapsed = started.elapsed();
    view
}

/// `view` with the file mode's change on top (`old mode 100644`, `new mode 100755`, as `walj
/// diff` and git show it): a `chmod +x` alone has the same bytes on both sides, so without
/// these lines its pane would say only that nothing changed.
pub(crate) fn with_mode(mut view: DiffView, (old, new): (&str, &str)) -> DiffView {
    let lines = [format!("old mode {old}"), format!("new mode {new}")];
    // "no changes" would say the entry changed nothing: only its bytes are the same.
    for l in view.lines.iter_mut().filter(|l| l.kind == LineKind::Note && l.text().starts_with("no changes:")) {
        *l = DiffLine::plain(LineKind::Note, "same bytes on both sides: only the mode changed");
    }
    view.widest = view.widest.max(lines.iter().map(|l| l.chars().count()).max().unwrap_or(0));
    view.lines.splice(0..0, lines.into_iter().map(|l| DiffLine::plain(LineKind::Note, l)));
    view
}

/// The hunks of `model` as lines, words marked in small replacements while the budget lasts.
fn lines(view: &mut DiffView, model: &DiffModel) {
    let inline_deadline = Instant::now() + INLINE_BUDGET;
    for hunk in model.hunks(CONTEXT) {
        view.lines.push(DiffLine::plain(LineKind::Hunk, hunk.header()));
        for op in hunk.ops() {
            push_op(view, model, op, inline_deadline);
        }
    }
}

fn push_op(view: &mut DiffView, model: &DiffModel, op: &DiffOp, inline_deadline: Instant) {
    let (tag, old_r, new_r) = op.as_tag_tuple();
    let small = old_r.len() <= INLINE_MAX_LINES && new_r.len() <= INLINE_MAX_LINES;
    if tag == DiffTag::Replace && small {
        if Instant::now() < inline_deadline {
            // Mark words even in lines that changed a fair amount (similar's default asks 50% alike).
            let mut opts = InlineChangeOptions::new();
            opts.mode(InlineChangeMode::UnicodeWords).min_ratio(0.25).semantic_cleanup(true);
            // The replaced block alone: `similar` refines it word by word.
            let old: Vec<&str> = old_r.clone().map(|i| model.old_line(i)).collect();
            let new: Vec<&str> = new_r.clone().map(|i| model.new_line(i)).collect();
            let block = TextDiff::configure().deadline(inline_deadline).diff_slices(&old, &new);
            let whole = DiffOp::Replace { old_index: 0, old_len: old.len(), new_index: 0, new_len: new.len() };
            for change in block.iter_inline_changes_with_options_deadline(&whole, opts, Some(inline_deadline)) {
                let segments: Vec<(bool, String)> = change
                    .iter_strings_lossy()
                    .map(|(emph, s)| (emph, clean(&s)))
                    .filter(|(_, s)| !s.is_empty())
                    .collect();
                let old_index = change.old_index().map(|i| i + old_r.start);
                let new_index = change.new_index().map(|i| i + new_r.start);
                push_change(view, change.tag(), old_index, new_index, segments);
                let text = match (old_index, new_index) {
                    (Some(i), None) => model.old_line(i),
                    (_, Some(i)) => model.new_line(i),
                    (None, None) => "\n",
                };
                if ends_without_newline(text) {
                    view.lines.push(DiffLine::plain(LineKind::Note, NO_NEWLINE));
                }
            }
            return;
        }
        view.inline_skipped = true;
    }
    for line in model.lines(op) {
        push_change(view, line.tag, line.old_index, line.new_index, vec![(false, clean(line.text))]);
        if line.missing_newline() {
            view.lines.push(DiffLine::plain(LineKind::Note, NO_NEWLINE));
        }
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
    use crate::triage::Side;

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
        assert!(tabs.lines.iter().any(|l| l.text() == "    y\\x1b"), "{:?}", tabs.lines);
        // Git's mark, after each side's last line that has no newline.
        let marks: Vec<usize> =
            tabs.lines.iter().enumerate().filter(|(_, l)| l.text() == NO_NEWLINE).map(|(i, _)| i).collect();
        assert_eq!(marks.len(), 2, "{:?}", tabs.lines);
        assert_eq!(tabs.lines[marks[0] - 1].kind, LineKind::Removed);
        assert_eq!(tabs.lines[marks[1] - 1].kind, LineKind::Added);
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
