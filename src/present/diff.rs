//! One diff model for every printer: `walj diff` (a unified diff), the hand-back brief (a
//! compact one) and the TUI's diff pane render from a [`DiffModel`].
//!
//! The model is the full change list of two [`DiffSides`], computed once with `similar`
//! under a time limit (a pathological pair gives a correct but less minimal diff instead of
//! a frozen program). Each printer then groups it into [`Hunk`]s with the context it wants
//! ([`DiffModel::hunks`]); hunk headers ([`Hunk::header`], git's format) and the "no newline
//! at end of file" mark ([`Line::missing_newline`]) come from here, so all printers agree.
//!
//! What a side holds ([`Content`]: text, absent, binary, unknown and why) is decided here
//! too, once; printers only choose their words for it.

use std::ops::Range;
use std::time::{Duration, Instant};

use similar::{Algorithm, ChangeTag, DiffOp, DiffTag, TextDiff, group_diff_ops};

/// One side of a diff.
///
/// `bytes: Some` = the content; `bytes: None, note: None` = the file did not exist;
/// `bytes: None, note: Some(why)` = the content is unknown (not captured, missing from
/// the store, outside the project…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// What this side is: "pre-image", "post-image", "disk", "HEAD".
    pub label: String,
    pub bytes: Option<Vec<u8>>,
    pub note: Option<String>,
}

impl Side {
    /// The file did not exist on this side.
    pub(crate) fn is_absent(&self) -> bool {
        self.bytes.is_none() && self.note.is_none()
    }
    /// The content of this side is not known (`note` says why).
    pub(crate) fn is_unavailable(&self) -> bool {
        self.bytes.is_none() && self.note.is_some()
    }
}

/// The two sides of an entry's diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffSides {
    pub old: Side,
    pub new: Side,
}

/// Whether bytes look binary (git's rule: a NUL in the first 8000 bytes).
pub(crate) fn is_binary(b: &[u8]) -> bool {
    b[..b.len().min(8000)].contains(&0)
}

/// What one side holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Content {
    /// Text (invalid UTF-8 is read lossily).
    Text,
    /// The file did not exist.
    Absent,
    /// Binary, this many bytes: not diffed.
    Binary(usize),
    /// Not known, and why.
    Unknown(String),
}

impl Content {
    pub(crate) fn of(side: &Side) -> Content {
        match (&side.bytes, &side.note) {
            (Some(b), _) if is_binary(b) => Content::Binary(b.len()),
            (Some(_), _) => Content::Text,
            (None, None) => Content::Absent,
            (None, Some(n)) => Content::Unknown(n.clone()),
        }
    }

    /// Text or absent: a line diff can be made against it.
    fn is_texty(&self) -> bool {
        matches!(self, Content::Text | Content::Absent)
    }
}

/// The line algorithm of every diff walj shows: Myers, minimal, the one git uses by default.
pub(crate) const ALGORITHM: Algorithm = Algorithm::Myers;

/// How long a model's line diff may take before `similar` approximates. Each printer has
/// its preset; all of them build the same [`DiffModel`] with the same algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DiffOptions {
    pub time_limit: Duration,
}

impl DiffOptions {
    /// `walj diff`: half a second.
    pub(crate) const CLI: DiffOptions = DiffOptions { time_limit: Duration::from_millis(500) };
    /// The hand-back brief: written for each entry of a batch, so quicker.
    pub(crate) const BRIEF: DiffOptions = DiffOptions { time_limit: Duration::from_millis(200) };
    /// The TUI's diff pane: what a keypress can afford.
    pub(crate) const TUI: DiffOptions = DiffOptions { time_limit: Duration::from_millis(150) };
}

/// A change that only touches line endings (`\r\n` ↔ `\n`): the lines read the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EolChange {
    /// Lines ending in `\r\n` on each side.
    pub old_crlf: usize,
    pub new_crlf: usize,
    /// Lines on the new side.
    pub lines: usize,
}

impl EolChange {
    /// "CRLF → LF", "LF → CRLF", "mixed → LF".
    pub(crate) fn describe(&self, old_lines: usize) -> String {
        let name = |crlf: usize, total: usize| match crlf {
            0 => "LF",
            n if n == total => "CRLF",
            _ => "mixed",
        };
        format!("{} → {}", name(self.old_crlf, old_lines), name(self.new_crlf, self.lines))
    }
}

/// The text of one side, cut into lines the way `similar` cuts them (each line keeps its
/// terminator; the last one may have none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Lines {
    text: String,
    /// Start of each line, then the end of the text.
    bounds: Vec<usize>,
}

impl Lines {
    fn new(text: String, slices: impl Iterator<Item = usize>) -> Lines {
        let mut bounds = vec![0];
        let mut at = 0;
        for len in slices {
            at += len;
            bounds.push(at);
        }
        Lines { text, bounds }
    }

    fn len(&self) -> usize {
        self.bounds.len().saturating_sub(1)
    }

    fn get(&self, i: usize) -> &str {
        match (self.bounds.get(i), self.bounds.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.text[a..b],
            _ => "",
        }
    }
}

/// The diff of two sides, computed once. See the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DiffModel {
    pub old: Content,
    pub new: Content,
    old_lines: Lines,
    new_lines: Lines,
    /// The whole change list (no ops: nothing to diff, or the texts are equal).
    ops: Vec<DiffOp>,
    /// Lines added and removed.
    pub added: usize,
    pub removed: usize,
    /// The line diff hit its time limit: correct, but maybe not minimal.
    pub approximate: bool,
    /// Time the line diff took.
    pub elapsed: Duration,
}

impl DiffModel {
    /// Computes the model of `sides`. No diff is made when a side is binary or unknown,
    /// when both are absent, or when the texts are equal.
    pub(crate) fn new(sides: &DiffSides, opts: DiffOptions) -> DiffModel {
        let started = Instant::now();
        let mut m = DiffModel {
            old: Content::of(&sides.old),
            new: Content::of(&sides.new),
            old_lines: Lines::default(),
            new_lines: Lines::default(),
            ops: Vec::new(),
            added: 0,
            removed: 0,
            approximate: false,
            elapsed: Duration::ZERO,
        };
        if !m.old.is_texty() || !m.new.is_texty() || (m.old == Content::Absent && m.new == Content::Absent) {
            return m;
        }
        let text = |s: &Side| String::from_utf8_lossy(s.bytes.as_deref().unwrap_or_default()).into_owned();
        let (a, b) = (text(&sides.old), text(&sides.new));
        let (old_lines, new_lines, ops) = {
            let diff = TextDiff::configure()
                .algorithm(ALGORITHM)
                .deadline(started + opts.time_limit)
                .diff_lines(a.as_str(), b.as_str());
            let old = diff.iter_old_slices().map(str::len).collect::<Vec<_>>();
            let new = diff.iter_new_slices().map(str::len).collect::<Vec<_>>();
            let ops = if a == b { Vec::new() } else { diff.ops().to_vec() };
            (old, new, ops)
        };
        m.approximate = started.elapsed() >= opts.time_limit;
        m.old_lines = Lines::new(a, old_lines.into_iter());
        m.new_lines = Lines::new(b, new_lines.into_iter());
        for op in &ops {
            let (tag, old, new) = op.as_tag_tuple();
            if matches!(tag, DiffTag::Delete | DiffTag::Replace) {
                m.removed += old.len();
            }
            if matches!(tag, DiffTag::Insert | DiffTag::Replace) {
                m.added += new.len();
            }
        }
        m.ops = ops;
        m.elapsed = started.elapsed();
        m
    }

    /// Both sides are text (or one is absent) and they differ.
    pub(crate) fn has_changes(&self) -> bool {
        self.ops.iter().any(|op| op.tag() != DiffTag::Equal)
    }

    /// Both sides are text and equal.
    pub(crate) fn identical(&self) -> bool {
        self.old == Content::Text && self.new == Content::Text && self.old_lines.text == self.new_lines.text
    }

    /// Lines of each side.
    pub(crate) fn old_len(&self) -> usize {
        self.old_lines.len()
    }
    pub(crate) fn new_len(&self) -> usize {
        self.new_lines.len()
    }

    /// Line `i` (0-based) of the old side, with its terminator.
    pub(crate) fn old_line(&self, i: usize) -> &str {
        self.old_lines.get(i)
    }
    /// Line `i` (0-based) of the new side, with its terminator.
    pub(crate) fn new_line(&self, i: usize) -> &str {
        self.new_lines.get(i)
    }

    /// The changes grouped into hunks with `context` lines around each change (like
    /// `diff -U`).
    pub(crate) fn hunks(&self, context: usize) -> Vec<Hunk> {
        if !self.has_changes() {
            return Vec::new();
        }
        group_diff_ops(self.ops.clone(), context)
            .into_iter()
            .filter(|ops| !ops.is_empty())
            .map(|ops| Hunk { ops })
            .collect()
    }

    /// The lines of one op: an equal run, then for a replacement the removed lines before
    /// the added ones.
    pub(crate) fn lines<'m>(&'m self, op: &DiffOp) -> impl Iterator<Item = Line<'m>> + 'm {
        let (tag, old, new) = op.as_tag_tuple();
        let equal = (tag == DiffTag::Equal).then(|| {
            old.clone().zip(new.clone()).map(|(o, n)| Line {
                tag: ChangeTag::Equal,
                old_index: Some(o),
                new_index: Some(n),
                text: self.old_line(o),
            })
        });
        let removed = matches!(tag, DiffTag::Delete | DiffTag::Replace).then(|| {
            old.map(|o| Line { tag: ChangeTag::Delete, old_index: Some(o), new_index: None, text: self.old_line(o) })
        });
        let added = matches!(tag, DiffTag::Insert | DiffTag::Replace).then(|| {
            new.map(|n| Line { tag: ChangeTag::Insert, old_index: None, new_index: Some(n), text: self.new_line(n) })
        });
        equal.into_iter().flatten().chain(removed.into_iter().flatten()).chain(added.into_iter().flatten())
    }

    /// The change only touches line endings: both sides text, the same lines once `\r\n`
    /// is read as `\n`.
    pub(crate) fn eol_only(&self) -> Option<EolChange> {
        if !self.has_changes() || self.old != Content::Text || self.new != Content::Text {
            return None;
        }
        let strip = |l: &str| -> (bool, usize) {
            if l.ends_with("\r\n") { (true, l.len() - 2) } else { (false, l.len() - usize::from(l.ends_with('\n'))) }
        };
        if self.old_len() != self.new_len() {
            return None;
        }
        let (mut old_crlf, mut new_crlf) = (0, 0);
        for i in 0..self.old_len() {
            let (a, b) = (self.old_line(i), self.new_line(i));
            let ((ca, la), (cb, lb)) = (strip(a), strip(b));
            // The same body, and either both end a line or neither does.
            if a[..la] != b[..lb] || (la == a.len()) != (lb == b.len()) {
                return None;
            }
            old_crlf += usize::from(ca);
            new_crlf += usize::from(cb);
        }
        Some(EolChange { old_crlf, new_crlf, lines: self.new_len() })
    }
}

/// A hunk: a run of ops with context, as `diff -U` groups them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    ops: Vec<DiffOp>,
}

impl Hunk {
    pub(crate) fn ops(&self) -> &[DiffOp] {
        &self.ops
    }

    /// 0-based half-open line ranges on each side.
    pub(crate) fn old_range(&self) -> Range<usize> {
        let start = self.ops.first().map_or(0, |o| o.old_range().start);
        start..self.ops.last().map_or(start, |o| o.old_range().end)
    }
    pub(crate) fn new_range(&self) -> Range<usize> {
        let start = self.ops.first().map_or(0, |o| o.new_range().start);
        start..self.ops.last().map_or(start, |o| o.new_range().end)
    }

    /// `@@ -3,4 +3,5 @@` as git and `diff -u` write it: a range of one line has no
    /// length, an empty range starts at the line before it.
    pub(crate) fn header(&self) -> String {
        fn range(r: Range<usize>) -> String {
            match r.len() {
                1 => format!("{}", r.start + 1),
                0 => format!("{},0", r.start),
                n => format!("{},{n}", r.start + 1),
            }
        }
        format!("@@ -{} +{} @@", range(self.old_range()), range(self.new_range()))
    }

    /// Every line of the hunk, in order.
    pub(crate) fn lines<'m>(&'m self, model: &'m DiffModel) -> impl Iterator<Item = Line<'m>> + 'm {
        self.ops.iter().flat_map(move |op| model.lines(op))
    }
}

/// One line of a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Line<'m> {
    pub tag: ChangeTag,
    /// 0-based line numbers on each side.
    pub old_index: Option<usize>,
    pub new_index: Option<usize>,
    /// The line as in the file, with its terminator.
    pub text: &'m str,
}

impl Line<'_> {
    /// The line without its `\n` (a `\r` before it stays).
    pub(crate) fn body(&self) -> &str {
        self.text.strip_suffix('\n').unwrap_or(self.text)
    }

    /// The line is the last of its side and has no line terminator.
    pub(crate) fn missing_newline(&self) -> bool {
        ends_without_newline(self.text)
    }
}

/// A line (as the model cuts them) that ends its file without a line terminator.
pub(crate) fn ends_without_newline(line: &str) -> bool {
    !line.ends_with(['\r', '\n'])
}

/// The mark printed after a line that ends its file without a newline (as git prints it).
pub(crate) const NO_NEWLINE: &str = "\\ No newline at end of file";

#[cfg(test)]
mod tests {
    use super::*;

    fn sides(old: Option<&str>, new: Option<&str>) -> DiffSides {
        let side = |label: &str, t: Option<&str>| Side {
            label: label.into(),
            bytes: t.map(|t| t.as_bytes().to_vec()),
            note: None,
        };
        DiffSides { old: side("a", old), new: side("b", new) }
    }

    /// The reference: `similar`'s own unified diff of the same texts, which `walj diff`
    /// printed before the model existed. The model's hunks must print the same bytes.
    fn reference(old: &str, new: &str, context: usize) -> String {
        let diff = TextDiff::configure().algorithm(ALGORITHM).diff_lines(old, new);
        let mut out = String::new();
        for hunk in diff.unified_diff().context_radius(context).missing_newline_hint(true).iter_hunks() {
            out.push_str(&format!("{}\n", hunk.header()));
            for c in hunk.iter_changes() {
                let t = c.to_string_lossy();
                out.push_str(&format!("{}{}\n", c.tag(), t.strip_suffix('\n').unwrap_or(&t)));
                if c.missing_newline() {
                    out.push_str(&format!("{NO_NEWLINE}\n"));
                }
            }
        }
        out
    }

    fn printed(old: &str, new: &str, context: usize) -> String {
        let m = DiffModel::new(&sides(Some(old), Some(new)), DiffOptions::CLI);
        let mut out = String::new();
        for h in m.hunks(context) {
            out.push_str(&format!("{}\n", h.header()));
            for l in h.lines(&m) {
                out.push_str(&format!("{}{}\n", l.tag, l.body()));
                if l.missing_newline() {
                    out.push_str(&format!("{NO_NEWLINE}\n"));
                }
            }
        }
        out
    }

    /// A small deterministic generator (no dependency for one test).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn text(&mut self) -> String {
            let words = ["a", "b", "c", "dd", "", "ee ff", "x\r", "é"];
            let n = self.next() % 14;
            let mut s = String::new();
            for _ in 0..n {
                s.push_str(words[(self.next() % words.len() as u64) as usize]);
                s.push_str(["\n", "\n", "\n", "\r\n", "\r"][(self.next() % 5) as usize]);
            }
            if self.next().is_multiple_of(3) {
                s.push_str("tail");
            }
            s
        }
    }

    #[test]
    fn hunks_print_exactly_what_similars_unified_diff_printed() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..3000 {
            let (a, b) = (rng.text(), rng.text());
            let context = (rng.next() % 4) as usize;
            assert_eq!(printed(&a, &b, context), reference(&a, &b, context), "{a:?} → {b:?}, -U{context}");
        }
        for (a, b) in [("", "x\n"), ("x\n", ""), ("a\nb", "a\nb\n"), ("a\nb\n", "a\nc"), ("1\n2\n3\n", "1\n3\n")] {
            for context in 0..4 {
                assert_eq!(printed(a, b, context), reference(a, b, context), "{a:?} → {b:?}");
            }
        }
    }

    #[test]
    fn counts_contents_and_identity() {
        let m = DiffModel::new(&sides(Some("a\nb\nc\n"), Some("a\nB\nc\nd\n")), DiffOptions::CLI);
        assert_eq!((m.added, m.removed), (2, 1));
        assert!(m.has_changes() && !m.identical());
        assert_eq!(m.hunks(0).len(), 2);
        assert_eq!(m.hunks(1).len(), 1);
        assert_eq!(m.hunks(1)[0].header(), "@@ -1,3 +1,4 @@");
        let same = DiffModel::new(&sides(Some("x\n"), Some("x\n")), DiffOptions::TUI);
        assert!(same.identical() && !same.has_changes() && same.hunks(3).is_empty());
        let created = DiffModel::new(&sides(None, Some("a\nb\n")), DiffOptions::TUI);
        assert_eq!((created.old.clone(), created.added), (Content::Absent, 2));
        assert_eq!(created.hunks(3)[0].header(), "@@ -0,0 +1,2 @@");
        let bin = DiffModel::new(
            &DiffSides {
                old: Side { label: "a".into(), bytes: Some(vec![0, 1]), note: None },
                new: Side { label: "b".into(), bytes: None, note: Some("not captured".into()) },
            },
            DiffOptions::CLI,
        );
        assert_eq!(bin.old, Content::Binary(2));
        assert_eq!(bin.new, Content::Unknown("not captured".into()));
        assert!(!bin.has_changes());
    }

    #[test]
    fn eol_only_changes_are_recognised() {
        let crlf = "a\r\nb\r\nc\r\n";
        let lf = "a\nb\nc\n";
        let m = DiffModel::new(&sides(Some(crlf), Some(lf)), DiffOptions::TUI);
        let e = m.eol_only().unwrap();
        assert_eq!(e, EolChange { old_crlf: 3, new_crlf: 0, lines: 3 });
        assert_eq!(e.describe(m.old_len()), "CRLF → LF");
        let m = DiffModel::new(&sides(Some(lf), Some("a\r\nb\nc\r\n")), DiffOptions::TUI);
        assert_eq!(m.eol_only().unwrap().describe(m.old_len()), "LF → mixed");
        // A real edit, or a newline added at the end, is not an EOL-only change.
        for other in ["a\r\nB\r\nc\r\n", "a\nb\nc", "a\nb\nc\nd\n"] {
            assert!(
                DiffModel::new(&sides(Some(crlf), Some(other)), DiffOptions::TUI).eol_only().is_none(),
                "{other:?}"
            );
        }
        assert!(DiffModel::new(&sides(Some(lf), Some(lf)), DiffOptions::TUI).eol_only().is_none());
    }
}
