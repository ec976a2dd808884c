//! `walj tui`: the keyboard recovery dashboard (issue 4).
//!
//! Structure (ratatui's Event → Action → update → draw):
//! - [`keymap`]: keys → [`keymap::Action`]s, one table (dialog keys too), overridable from `[keys]`.
//! - [`app`]: what the dashboard shows and `update(action)`; triage goes through [`crate::triage`].
//! - [`source`]: what it loads and when (the fold as every command reads it, other machines'
//!   copies, the polled signatures); [`app::App::reload`] calls down to it.
//! - [`bisect`]: `b`, the bisect typed and run from the dashboard.
//! - [`tree`]: the tree pane's model (views, rows, expansion, cursor, filter, selection).
//! - [`dialogs`]: the confirmation dialogs, pure builders.
//! - [`diff`]: the diff pane's view of the one diff model, computed lazily and cached per
//!   (entry, mode); [`pane`]: sideways scroll, wrap, search and hunk jumps over it.
//! - [`ops`]: the operation list (`o`) and what redo (`ctrl+r`) does.
//! - [`layout`]: the screen's regions from its size (drawing, paging and mouse hits).
//! - [`draw`]: renders `&App`, changes nothing; [`theme`]: its colours, by role, and the
//!   light and no-colour themes.
//! - [`term`]: event sources (crossterm, scripts), the clipboard (OSC 52), the editor,
//!   terminal setup/restore and hangup.
//! - [`demo`]: the sample project behind `walj tui --demo`.
//!
//! [`run_loop`] is generic over the backend and the event source, so tests drive the
//! real loop with `TestBackend` and scripted keys.

pub mod app;
pub mod bisect;
pub mod demo;
pub mod dialogs;
pub mod diff;
pub mod draw;
pub mod keymap;
pub mod layout;
pub mod ops;
pub mod pane;
pub mod source;
pub mod term;
pub mod theme;
pub mod tree;

use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;

pub use app::{App, AppOptions, Clock};
pub use term::Script;
pub(crate) use term::{EventSource, Input};

use crate::config::Config;
use crate::project::Project;

/// How long the loop waits for input before it polls the journal.
pub(crate) const TICK: Duration = Duration::from_millis(250);

fn backend_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("terminal: {e}")
}

/// Draws one frame (after computing what it needs).
pub fn render<B: Backend>(terminal: &mut Terminal<B>, app: &mut App) -> anyhow::Result<()> {
    let size = terminal.size().map_err(backend_err)?;
    app.prepare(Rect::new(0, 0, size.width, size.height));
    let m = draw::detail_metrics(app);
    app.set_detail_len(m.lines, m.header, m.max_scroll, m.pin);
    app.dialog_rows =
        app.dialog.as_ref().map_or(0, |d| draw::dialog_body_rows(d, Rect::new(0, 0, size.width, size.height)));
    let theme = app.theme;
    terminal
        .draw(|f| {
            draw::draw(f, app);
            theme.adapt(f.buffer_mut());
        })
        .map_err(backend_err)?;
    Ok(())
}

/// The event loop: draw, wait for input, update, until the user quits or input ends.
pub fn run_loop<B: Backend, E: EventSource>(
    terminal: &mut Terminal<B>,
    events: &mut E,
    app: &mut App,
) -> anyhow::Result<()> {
    render(terminal, app)?;
    while !app.quit {
        match events.next(TICK)? {
            Input::Event(ev) => {
                app.handle_event(&ev);
                if let crossterm::event::Event::Resize(..) = ev {
                    terminal.autoresize().map_err(backend_err)?;
                }
                if let Some(req) = app.edit_request.clone() {
                    // `e`: the editor gets the terminal, then a full redraw.
                    let result = events.suspend(&mut || term::run_editor(&req.editor, &req.file, req.line));
                    terminal.clear().map_err(backend_err)?;
                    app.edited(result);
                }
                if let Some(text) = app.clipboard.take()
                    && let Err(e) = events.copy(&text)
                {
                    app.copy_failed(&e);
                }
            }
            Input::Tick => {
                if !app.poll_journal() {
                    continue;
                }
            }
            Input::End => break,
        }
        render(terminal, app)?;
    }
    Ok(())
}

/// The keymap from `.walj/config.toml` (defaults when there is none).
pub fn load_keymap(project: &Project) -> anyhow::Result<keymap::Keymap> {
    let cfg = Config::load(&project.config_path())?;
    keymap::Keymap::from_config(&cfg.keys).map_err(|e| anyhow::anyhow!("{}: {e}", project.config_path().display()))
}

/// The theme: `--color never` is the mono theme and `--color always` colour whatever
/// `NO_COLOR` or a mono `[theme] mode` say; else `[theme] mode` of `.walj/config.toml`,
/// else `NO_COLOR` / `COLORFGBG`.
pub fn load_theme(project: &Project) -> anyhow::Result<theme::Theme> {
    load_theme_with(project, anstream::ColorChoice::global())
}

/// [`load_theme`] with the `--color` choice given.
pub fn load_theme_with(project: &Project, color: anstream::ColorChoice) -> anyhow::Result<theme::Theme> {
    let cfg = Config::load(&project.config_path())?;
    let mut mode = cfg.theme.get("mode").and_then(toml::Value::as_str);
    if let Some(k) = cfg.theme.keys().find(|k| *k != "mode") {
        anyhow::bail!("{}: [theme] {k}: unknown (only mode)", project.config_path().display());
    }
    let always = matches!(color, anstream::ColorChoice::Always | anstream::ColorChoice::AlwaysAnsi);
    if always && mode.is_some_and(|m| m.eq_ignore_ascii_case("mono") || m.eq_ignore_ascii_case("none")) {
        mode = None;
    }
    let detected = theme::Theme::detect(mode, |k| if always && k == "NO_COLOR" { None } else { std::env::var(k).ok() })
        .map_err(|e| anyhow::anyhow!("{}: {e}", project.config_path().display()))?;
    Ok(if color == anstream::ColorChoice::Never { theme::Theme::Mono } else { detected })
}

/// Runs the dashboard on the real terminal.
pub(crate) fn run(project: Project) -> anyhow::Result<()> {
    let keymap = load_keymap(&project)?;
    let theme = load_theme(&project)?;
    if matches!(anstream::ColorChoice::global(), anstream::ColorChoice::Always | anstream::ColorChoice::AlwaysAnsi) {
        // crossterm drops colours under NO_COLOR on its own; `--color always` wins over it.
        crossterm::style::force_color_output(true);
    }
    let mut app = App::new(project, AppOptions { keymap, theme, ..AppOptions::default() });
    let mut events = term::CrosstermEvents::new();
    let mut guard = term::TerminalGuard::new().map_err(|e| anyhow::anyhow!("setting up the terminal: {e}"))?;
    let result = run_loop(&mut guard.terminal, &mut events, &mut app);
    drop(guard);
    if let Some(sig) = events.signal() {
        // SIGTERM / SIGHUP: the terminal is restored (the guard), the journal untouched
        // mid-write (the loop only stops between two events); exit as the signal would.
        std::process::exit(128 + sig);
    }
    result
}
