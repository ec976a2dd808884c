//! Where each region of the screen is, from the terminal's size alone: drawing, paging
//! and mouse hits all ask here (the app never asks the drawing code).

use ratatui::layout::{Constraint, Layout, Rect};

/// Smallest screen the dashboard draws on; below it says so.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 8;

/// Which pane, if one, takes the whole main area (`f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Zoom {
    #[default]
    Off,
    Tree,
    Diff,
}

/// The screen's regions. A pane that is not shown has a zero-width area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub tree: Rect,
    pub diff: Rect,
    pub status: Rect,
    pub footer: Rect,
}

/// The screen is too small to draw the dashboard on.
pub fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// Splits the screen: tree | detail (or one of them, zoomed), then a status line and a
/// footer.
pub fn layout(area: Rect, zoom: Zoom) -> Areas {
    let [main, status, footer] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(1), Constraint::Length(1)]).areas(area);
    let tree_w = match zoom {
        Zoom::Off if area.width < 80 => area.width / 2,
        Zoom::Off => (area.width * 2 / 5).clamp(40, 64),
        Zoom::Tree => area.width,
        Zoom::Diff => 0,
    };
    let [tree, diff] = Layout::horizontal([Constraint::Length(tree_w), Constraint::Min(0)]).areas(main);
    Areas { tree, diff, status, footer }
}
