//! Where each region of the screen is, from the terminal's size alone: drawing, paging
//! and mouse hits all ask here (the app never asks the drawing code).

use ratatui::layout::{Constraint, Layout, Rect};

/// The screen's regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub tree: Rect,
    pub diff: Rect,
    pub status: Rect,
    pub footer: Rect,
}

/// Splits the screen: tree | detail, then a status line and a footer.
pub fn layout(area: Rect) -> Areas {
    let [main, status, footer] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(1), Constraint::Length(1)]).areas(area);
    let tree_w = if area.width < 80 { area.width / 2 } else { (area.width * 2 / 5).clamp(40, 64) };
    let [tree, diff] = Layout::horizontal([Constraint::Length(tree_w), Constraint::Min(0)]).areas(main);
    Areas { tree, diff, status, footer }
}
