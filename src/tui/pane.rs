//! How the diff pane shows its view: sideways scroll, wrap, search, hunk jumps, and the
//! rows a line takes. Pure functions over a [`DiffView`]; the app keeps the state and the
//! drawing code asks here, so scrolling and drawing count rows the same way.

use unicode_width::UnicodeWidthChar;

use super::diff::{DiffLine, DiffView, LineKind};

/// Columns a sideways step moves.
pub(crate) const HSTEP: usize = 8;

/// The diff pane's display state (the vertical scroll is the app's `diff_scroll`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffPane {
    /// Columns of every diff line hidden on the left.
    pub hscroll: usize,
    /// Long lines wrap onto more rows instead of running off the pane.
    pub wrap: bool,
    /// The search being typed (`/` in the diff pane).
    pub search_input: Option<String>,
    /// The search in force (`n`/`N` move between its matches).
    pub search: Option<String>,
    /// The diff line of the match `n`/`N` moved to last.
    pub current: Option<usize>,
}

/// Display width of a char (0 for combining marks).
pub(crate) fn cw(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Columns of the number gutter and sign before a diff line's text (`12 13 +`).
pub(crate) fn prefix_width(gutter: usize) -> usize {
    2 * gutter + 3
}

/// Rows one diff line takes in a pane `width` columns wide.
pub(crate) fn rows(line: &DiffLine, gutter: usize, width: usize, pane: &DiffPane) -> usize {
    if width == 0 || (!pane.wrap && line.kind != LineKind::Note) {
        return 1;
    }
    // Notes are prose and always wrap (at spaces: count a little more room).
    let (avail, w) = match line.kind {
        LineKind::Note => (width.saturating_sub(2).max(1), line.width()),
        LineKind::Hunk => (width, line.width()),
        _ => (width.saturating_sub(prefix_width(gutter)).max(1), line.width().saturating_sub(pane.hscroll)),
    };
    w.div_ceil(avail).max(1)
}

/// Lines of `view` that match `query` (case-insensitive unless it has a capital letter).
pub fn matches(view: &DiffView, query: &str) -> Vec<usize> {
    if query.is_empty() {
        return Vec::new();
    }
    view.lines
        .iter()
        .enumerate()
        .filter(|(_, l)| matches!(l.kind, LineKind::Context | LineKind::Added | LineKind::Removed))
        .filter(|(_, l)| !find_all(&l.text(), query).is_empty())
        .map(|(i, _)| i)
        .collect()
}

/// Smart case: a query with a capital letter is matched exactly.
fn fold_case(query: &str) -> bool {
    !query.chars().any(char::is_uppercase)
}

/// Char ranges of `text` where `query` occurs (smart case, not overlapping).
pub(crate) fn find_all(text: &str, query: &str) -> Vec<std::ops::Range<usize>> {
    let norm = |c: char| if fold_case(query) { c.to_lowercase().next().unwrap_or(c) } else { c };
    let hay: Vec<char> = text.chars().map(norm).collect();
    let needle: Vec<char> = query.chars().map(norm).collect();
    let mut out = Vec::new();
    if needle.is_empty() || needle.len() > hay.len() {
        return out;
    }
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        if hay[i..i + needle.len()] == needle[..] {
            out.push(i..i + needle.len());
            i += needle.len();
        } else {
            i += 1;
        }
    }
    out
}

/// Display columns of the first `chars` chars of `text`.
pub(crate) fn col_of(text: &str, chars: usize) -> usize {
    text.chars().take(chars).map(cw).sum()
}

/// The first change at or after diff line `from`: its line and the display column where
/// it starts. In a replaced line that is its first marked word; where the words were not
/// marked (a large or timed-out block) the first column where the removed and the added
/// line differ; else column 0 of the first added or removed line.
pub(crate) fn first_change(view: &DiffView, from: usize) -> Option<(usize, usize)> {
    let changed = |k: LineKind| matches!(k, LineKind::Added | LineKind::Removed);
    let start = (from..view.lines.len()).find(|&i| changed(view.lines[i].kind))?;
    let end = (start..view.lines.len()).find(|&i| !changed(view.lines[i].kind)).unwrap_or(view.lines.len());
    let block = &view.lines[start..end];
    let removed = block.iter().position(|l| l.kind == LineKind::Removed);
    let added = block.iter().position(|l| l.kind == LineKind::Added);
    // Where the block's first removed and first added line part (a marked word can be a
    // whole long token: `xxx…Q` marks from column 0).
    let parted = match (removed, added) {
        (Some(r), Some(a)) => {
            let (old, new) = (block[r].text(), block[a].text());
            let same = old.chars().zip(new.chars()).take_while(|(x, y)| x == y).count();
            Some((r, a, col_of(&old, same)))
        }
        _ => None,
    };
    for (i, l) in block.iter().enumerate() {
        let mut col = 0;
        for (emph, s) in &l.segments {
            if *emph {
                let col = match parted {
                    Some((r, a, p)) if i == r || i == a => col.max(p),
                    _ => col,
                };
                return Some((start + i, col));
            }
            col += s.chars().map(cw).sum::<usize>();
        }
    }
    if let Some((r, _, p)) = parted {
        return Some((start + r, p));
    }
    Some((start, 0))
}

/// The sideways offset that shows column `col` (and `len` columns after it) of a line in
/// `avail` columns of text, starting from `hscroll`: unchanged when it is already in view,
/// else 0 when it fits from the left edge, else a multiple of [`HSTEP`] that puts it a
/// third of the way in. The edges are kept clear of the `‹` and `›` markers.
pub(crate) fn reveal(col: usize, len: usize, avail: usize, hscroll: usize) -> usize {
    let len = len.clamp(1, avail.max(2) / 2);
    let visible = |h: usize| (h == 0 || col > h) && col + len < h + avail;
    if avail < 4 || visible(hscroll) {
        return hscroll;
    }
    if visible(0) {
        return 0;
    }
    let h = col.saturating_sub(avail / 3);
    h - h % HSTEP
}

/// Indexes of the hunk headers.
pub(crate) fn hunks(view: &DiffView) -> impl Iterator<Item = usize> + '_ {
    view.lines.iter().enumerate().filter(|(_, l)| l.kind == LineKind::Hunk).map(|(i, _)| i)
}

/// The first of `targets` after `at` (`forward`) or before it, wrapping around.
pub(crate) fn next_target(targets: &[usize], at: Option<usize>, forward: bool) -> Option<usize> {
    let (first, last) = (*targets.first()?, *targets.last()?);
    Some(match (at, forward) {
        (None, true) => first,
        (None, false) => last,
        (Some(at), true) => targets.iter().copied().find(|&t| t > at).unwrap_or(first),
        (Some(at), false) => targets.iter().rev().copied().find(|&t| t < at).unwrap_or(last),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: LineKind, text: &str) -> DiffLine {
        DiffLine { kind, old_no: Some(1), new_no: Some(1), segments: vec![(false, text.into())] }
    }

    #[test]
    fn search_is_smart_case_and_wraps_around() {
        assert_eq!(find_all("Retries retries RETRIES", "retries"), vec![0..7, 8..15, 16..23]);
        assert_eq!(find_all("Retries retries", "Retries"), vec![0..7]);
        assert_eq!(find_all("aaa", "aa"), vec![0..2]);
        assert_eq!(next_target(&[3, 9, 20], Some(9), true), Some(20));
        assert_eq!(next_target(&[3, 9, 20], Some(20), true), Some(3));
        assert_eq!(next_target(&[3, 9, 20], Some(3), false), Some(20));
        assert_eq!(next_target(&[3, 9, 20], None, false), Some(20));
        assert_eq!(next_target(&[], Some(1), true), None);
        let view = DiffView {
            lines: vec![line(LineKind::Hunk, "@@ retries @@"), line(LineKind::Added, "  \"retries\": 5")],
            ..DiffView::default()
        };
        assert_eq!(matches(&view, "retries"), vec![1], "hunk headers are not searched");
    }

    #[test]
    fn first_change_finds_the_marked_word_or_the_first_difference() {
        let long = "x".repeat(706);
        let mut removed = line(LineKind::Removed, "");
        removed.segments = vec![(false, long.clone()), (true, "a".into()), (false, "yz".into())];
        let mut added = line(LineKind::Added, "");
        added.segments = vec![(false, long.clone()), (true, "b".into()), (false, "yz".into())];
        let view = DiffView {
            lines: vec![line(LineKind::Hunk, "@@"), line(LineKind::Context, "ctx"), removed, added],
            ..DiffView::default()
        };
        assert_eq!(first_change(&view, 0), Some((2, 706)));
        // Unmarked: where the two lines part.
        let plain = DiffView {
            lines: vec![line(LineKind::Removed, &format!("{long}ayz")), line(LineKind::Added, &format!("{long}byz"))],
            ..DiffView::default()
        };
        assert_eq!(first_change(&plain, 0), Some((0, 706)));
        // A marked word that is the whole long token: still where the lines part.
        let mut whole = plain.clone();
        whole.lines[0].segments = vec![(true, format!("{long}ayz")), (false, "}".into())];
        whole.lines[1].segments = vec![(true, format!("{long}byz")), (false, "}".into())];
        assert_eq!(first_change(&whole, 0), Some((0, 706)));
        assert_eq!(
            first_change(&DiffView { lines: vec![line(LineKind::Added, "new")], ..DiffView::default() }, 0),
            Some((0, 0))
        );
        assert_eq!(first_change(&view, 4), None);
    }

    #[test]
    fn reveal_moves_only_when_the_column_is_out_of_view() {
        assert_eq!(reveal(10, 1, 80, 0), 0);
        assert_eq!(reveal(706, 1, 80, 0), 680);
        assert!((680 + 1..680 + 79).contains(&706));
        assert_eq!(reveal(706, 1, 80, 680), 680, "already in view");
        assert_eq!(reveal(3, 1, 80, 680), 0);
        assert_eq!(reveal(706, 5, 30, 0) % HSTEP, 0);
    }

    #[test]
    fn rows_count_wrapped_text_after_the_gutter() {
        let long = line(LineKind::Added, &"x".repeat(25));
        let mut pane = DiffPane::default();
        assert_eq!(rows(&long, 1, 20, &pane), 1);
        pane.wrap = true;
        // 20 columns, 5 for "1 1 +": 15 of text per row.
        assert_eq!(rows(&long, 1, 20, &pane), 2);
        pane.hscroll = 16;
        assert_eq!(rows(&long, 1, 20, &pane), 1);
        assert_eq!(rows(&line(LineKind::Added, "日本語"), 1, 9, &DiffPane { wrap: true, ..pane }), 1);
    }
}
