//! Where each region of the screen is, from the terminal's size alone: drawing, paging
//! and mouse hits all ask here (the app never asks the drawing code).

use ratatui::layout::{Constraint, Layout, Rect};

/// Smallest screen the dashboard draws on; below it says so.
pub(crate) const MIN_WIDTH: u16 = 40;
pub(crate) const MIN_HEIGHT: u16 = 8;

/// Which pane, if one, takes the whole main area (`f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Zoom {
    #[default]
    Off,
    Tree,
    Diff,
}

/// The screen's regions. A pane that is not shown has a zero-width area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Areas {
    pub tree: Rect,
    pub diff: Rect,
    pub status: Rect,
    pub footer: Rect,
}

/// The screen is too small to draw the dashboard on.
pub(crate) fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// Below this many columns the panes are stacked (the tree above the diff): side by side
/// neither would be wide enough to read.
pub(crate) const STACK_BELOW: u16 = 90;

/// Whether the panes are stacked at this size.
pub(crate) fn stacked(area: Rect) -> bool {
    area.width < STACK_BELOW
}

/// Splits the screen: tree | detail side by side (tree above detail below
/// [`STACK_BELOW`] columns), or one of them zoomed; then a status line and a footer.
#[cfg_attr(not(test), allow(dead_code))] // only the unit tests call it
pub(crate) fn layout(area: Rect, zoom: Zoom) -> Areas {
    layout_with(area, zoom, 1)
}

/// [`layout`] with a status line of `status_rows` rows (a long message wraps onto two).
pub(crate) fn layout_with(area: Rect, zoom: Zoom, status_rows: u16) -> Areas {
    let [main, status, footer] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(status_rows), Constraint::Length(1)]).areas(area);
    if stacked(area) && zoom == Zoom::Off {
        // Half for the tree (at least a border and three rows), the rest for the diff.
        let tree_h = (main.height / 2).max(5).min(main.height);
        let [tree, diff] = Layout::vertical([Constraint::Length(tree_h), Constraint::Min(0)]).areas(main);
        return Areas { tree, diff, status, footer };
    }
    let tree_w = match zoom {
        Zoom::Off => (area.width * 2 / 5).clamp(40, 64),
        Zoom::Tree => area.width,
        Zoom::Diff => 0,
    };
    let [tree, diff] = Layout::horizontal([Constraint::Length(tree_w), Constraint::Min(0)]).areas(main);
    Areas { tree, diff, status, footer }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_screens_stack_the_panes() {
        let l = layout(Rect::new(0, 0, 60, 15), Zoom::Off);
        assert_eq!((l.tree.width, l.diff.width), (60, 60));
        assert!(l.tree.y < l.diff.y && l.diff.height >= 5, "{l:?}");
        let wide = layout(Rect::new(0, 0, 120, 30), Zoom::Off);
        assert_eq!(wide.tree.y, wide.diff.y);
        assert_eq!(layout(Rect::new(0, 0, 60, 15), Zoom::Diff).diff.height, 13);
    }
}
