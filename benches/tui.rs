//! Issue 4 budgets (DESIGN §8): `walj tui` first frame on a 100k-entry journal (≤ 300 ms)
//! and a keypress on a 10k-line diff (≤ 50 ms); issue 17: a keypress on that diff with long
//! lines wrapped (≤ 16 ms).
//!
//! Run: `cargo bench --bench tui` (env: WALJ_BENCH_ENTRIES=100000 journal lines, the
//! proposal's "entries" as in `benches/core.rs`; WALJ_BENCH_RUNS=5).
//! Each measurement drives the real app in-process into ratatui's TestBackend (120×40):
//! "first frame" = App::new (read + fold the journal, check the disk, build the tree) +
//! computing the selected diff + drawing; "keypress" = handling a key + drawing. Prints a
//! Markdown table (also written to target/bench-tui.md).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

mod common;

use common::{median, ms};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use walj::journal::{Blob, JournalWriter, Record, kind, op};
use walj::project::Project;
use walj::store::Store;
use walj::tui::{App, AppOptions, render};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rec(op_name: &str, session: &str, i: usize) -> Record {
    let mut r = Record::new(op_name, session);
    r.id = format!("toolu_{session}_{i:07}");
    r.tool = Some("Edit".into());
    r.event = "file_modified".into();
    r.path = format!("src/mod{}/file{}.rs", i % 97, i % 1013);
    r.pid = Some(4_000_000_000);
    r.pstart = Some(1);
    r
}

/// A journal of `lines` lines ("entries" as the proposal and `benches/core.rs` count them):
/// settled tool calls (intent, applied, persisted) across ended sessions of 100 calls, then
/// one crashed session with `open` applied tool calls (2 lines each).
fn journal(project: &Project, lines: usize, open: usize) {
    journal_carrying(project, lines, open, false);
}

/// [`journal`]; with `carry`, the first line of the journal also carries the crashed session's
/// pre-image (`images`, as a hook writes a new image into its line): a reader whose store lacks
/// that object takes it from there.
fn journal_carrying(project: &Project, lines: usize, open: usize, carry: bool) {
    project.ensure_dir().unwrap();
    let w = JournalWriter::new(&project.journal);
    let settled = lines.saturating_sub(2 * open) / 3;
    let blob = Blob::Id("0123456789abcdef0123456789abcdef01234567".into());
    let store = Store::new(project.store_dir());
    let pre = Blob::Id(store.put(b"fn main() {}\n").unwrap());
    let post = Blob::Id(store.put(b"fn main() { run() }\n").unwrap());
    let carried = carry.then(|| {
        use base64::Engine as _;
        let id = pre.id().unwrap().to_string();
        let loose = std::fs::read(store.object_path(&id)).unwrap();
        serde_json::json!({ id: base64::engine::general_purpose::STANDARD.encode(loose) })
    });
    let mut batch = Vec::with_capacity(4096);
    let flush = |batch: &mut Vec<Record>, force: bool| {
        if force || batch.len() >= 4000 {
            w.append_all(batch).unwrap();
            batch.clear();
        }
    };
    for i in 0..settled {
        let s = format!("{:08x}-ended", i / 100);
        if i % 100 == 0 {
            let mut r = Record::new(op::SESSION, &s);
            r.kind = Some(kind::START.into());
            batch.push(r);
        }
        let mut r = rec(op::INTENT, &s, i);
        r.before = Some(blob.clone());
        if i == 0
            && let Some(images) = &carried
        {
            r = r.with(walj::journal::key::IMAGES, images.clone());
        }
        batch.push(r);
        let mut r = rec(op::APPLIED, &s, i);
        r.after = Some(blob.clone());
        batch.push(r);
        let mut r = rec(op::PERSISTED, &s, i);
        r.persisted = true;
        batch.push(r);
        if i % 100 == 99 {
            let mut r = Record::new(op::SESSION, &s);
            r.kind = Some(kind::END.into());
            batch.push(r.with("reason", "exit"));
        }
        flush(&mut batch, false);
    }
    for i in 0..open {
        let s = "c0ffee00-crashed";
        let mut r = rec(op::INTENT, s, i);
        r.before = Some(pre.clone());
        batch.push(r);
        let mut r = rec(op::APPLIED, s, i);
        r.after = Some(post.clone());
        batch.push(r);
        flush(&mut batch, false);
    }
    flush(&mut batch, true);
}

fn first_frame(root: &Path, runs: usize) -> (Duration, Duration, usize) {
    let mut total = Vec::new();
    let mut load = Vec::new();
    let mut rows = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let mut app = App::new(Project::at(root.to_path_buf(), None), AppOptions::default());
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
        render(&mut term, &mut app).unwrap();
        total.push(t.elapsed());
        load.push(app.load_time);
        rows = app.tree.rows.len();
    }
    (median(total), median(load), rows)
}

/// Issue 14: a running TUI's refresh after one line is appended to the journal (the watch
/// sees the journal change, reloads through the fold snapshot, redraws); median of `runs`.
fn refresh_after_append(root: &Path, runs: usize) -> Duration {
    let project = Project::at(root.to_path_buf(), None);
    let opts = AppOptions { poll: Duration::ZERO, ..AppOptions::default() };
    let mut app = App::new(Project::at(root.to_path_buf(), None), opts);
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    render(&mut term, &mut app).unwrap();
    let w = JournalWriter::new(&project.journal);
    let mut times = Vec::with_capacity(runs);
    for i in 0..runs {
        let mut r = rec(op::INTENT, "c0ffee00-refresh", i);
        r.before = Some(Blob::Id("0123456789abcdef0123456789abcdef01234567".into()));
        w.append(&r).unwrap();
        let t = Instant::now();
        assert!(app.poll_journal(), "the append was seen");
        render(&mut term, &mut app).unwrap();
        times.push(t.elapsed());
    }
    median(times)
}

fn big_diff(root: &Path, lines: usize, wrap: bool) -> (Duration, Duration, Duration, usize) {
    let project = Project::at(root.to_path_buf(), None);
    project.ensure_dir().unwrap();
    let old: String = (0..lines).map(|i| format!("    let value_{i} = compute({i}, \"alpha\");\n")).collect();
    // Every 7th line changed by a word, every 50th removed, every 40th a new line.
    let mut new = String::new();
    for i in 0..lines {
        if i % 50 == 25 {
            continue;
        }
        if wrap && i % 3 == 0 {
            // Long lines (a generated table, minified code): they wrap onto several rows.
            let _ = writeln!(new, "    let value_{i} = [{}];", "\"cell\", ".repeat(30));
        } else if i % 7 == 3 {
            let _ = writeln!(new, "    let value_{i} = compute({i}, \"beta\");");
        } else {
            let _ = writeln!(new, "    let value_{i} = compute({i}, \"alpha\");");
        }
        if i % 40 == 0 {
            let _ = writeln!(new, "    log(value_{i});");
        }
    }
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/big.rs"), &new).unwrap();
    let store = Store::new(project.store_dir());
    let mut r = Record::new(op::INTENT, "d1ff0000-big");
    r.id = "toolu_big".into();
    r.tool = Some("Write".into());
    r.event = "file_modified".into();
    r.path = "src/big.rs".into();
    r.before = Some(Blob::Id(store.put(old.as_bytes()).unwrap()));
    JournalWriter::new(&project.journal).append(&r).unwrap();

    let mut app = App::new(project, AppOptions::default());
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let t = Instant::now();
    render(&mut term, &mut app).unwrap();
    let first = t.elapsed();
    let diff_lines = app.current_diff().map_or(0, |d| d.lines.len());
    // Focus the diff (wrap long lines), then page and scroll through it.
    app.handle_key(&KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    if wrap {
        app.handle_key(&KeyEvent::new(KeyCode::Char('w'), KeyModifiers::NONE));
        assert!(app.pane.wrap);
    }
    let mut keys = Vec::new();
    for i in 0..200 {
        let code = match i % 4 {
            0 => KeyCode::PageDown,
            1 => KeyCode::Char('j'),
            2 => KeyCode::PageDown,
            _ => KeyCode::Char('k'),
        };
        let t = Instant::now();
        app.handle_key(&KeyEvent::new(code, KeyModifiers::NONE));
        render(&mut term, &mut app).unwrap();
        keys.push(t.elapsed());
    }
    let worst = *keys.iter().max().unwrap();
    (first, median(keys), worst, diff_lines)
}

fn main() {
    let entries = env_usize("WALJ_BENCH_ENTRIES", 100_000);
    let runs = env_usize("WALJ_BENCH_RUNS", 5);
    let mut out = String::new();
    let _ = writeln!(out, "| walj tui (issue 4) | measured | budget |");
    let _ = writeln!(out, "|---|---|---|");

    for (label, open) in
        [("100 unresolved", 100usize), ("20,000 unresolved", 20_000), ("all unresolved (worst case)", entries / 2)]
    {
        let tmp = tempfile::tempdir().unwrap();
        let t = Instant::now();
        journal(&Project::at(tmp.path().to_path_buf(), None), entries, open);
        let size = std::fs::metadata(tmp.path().join(".walj/journal.jsonl")).map(|m| m.len()).unwrap_or(0);
        eprintln!("journal: {entries} lines, {open} unresolved, {size} bytes, written in {:.0} ms", ms(t.elapsed()));
        let (total, load, rows) = first_frame(tmp.path(), runs);
        let journal_path = tmp.path().join(".walj/journal.jsonl");
        let fold_only = median(
            (0..runs)
                .map(|_| {
                    let t = Instant::now();
                    let f = walj::fold::Fold::load(&journal_path, &walj::fold::FoldOptions::default()).unwrap();
                    std::hint::black_box(f.entries.len());
                    t.elapsed()
                })
                .collect(),
        );
        let _ = load;
        let _ = writeln!(
            out,
            "| first frame, {entries}-entry journal, {label} ({:.1} MB, {rows} tree rows) | {:.0} ms (of which Fold::load {:.0} ms) | ≤ 300 ms |",
            size as f64 / 1e6,
            ms(total),
            ms(fold_only)
        );
        if open == 100 {
            let _ = writeln!(
                out,
                "| refresh after one appended line, same journal (watch, reload, redraw; median of {}) | {:.1} ms | ≤ 20 ms |",
                runs * 4,
                ms(refresh_after_append(tmp.path(), runs * 4))
            );
        }
    }

    // The selected entry's pre-image missing from the store (a machine crash lost the loose
    // object), carried only by the journal's first line, against the same journal with it
    // present: the first frame finds it without a journal scan. In turns, the object removed
    // before each "missing" run (a reader writes it back).
    {
        let tmp = tempfile::tempdir().unwrap();
        let project = Project::at(tmp.path().to_path_buf(), None);
        journal_carrying(&project, entries, 100, true);
        let store = Store::new(project.store_dir());
        let id = walj::store::blob_id(b"fn main() {}\n");
        let _ = first_frame(tmp.path(), 1);
        let (mut present, mut missing) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            present.push(first_frame(tmp.path(), 1).0);
            std::fs::remove_file(store.object_path(&id)).unwrap();
            missing.push(first_frame(tmp.path(), 1).0);
            assert!(store.contains(&id), "the first frame did not take the image from its line");
        }
        let (present, missing) = (median(present), median(missing));
        let _ = writeln!(
            out,
            "| first frame, {entries}-entry journal, the selected entry's pre-image missing from the store (carried by the journal's first line) vs present | {:.0} ms vs {:.0} ms ({:.2}×) | ≤ 3× |",
            ms(missing),
            ms(present),
            ms(missing) / ms(present).max(0.001)
        );
    }

    let tmp = tempfile::tempdir().unwrap();
    let (first, key, worst, lines) = big_diff(tmp.path(), 10_000, false);
    let _ =
        writeln!(out, "| 10k-line file: first display (diff computed, {lines} diff lines) | {:.1} ms | — |", ms(first));
    let _ = writeln!(
        out,
        "| 10k-line file: keypress + redraw, median of 200 (worst) | {:.2} ms ({:.2} ms) | ≤ 50 ms |",
        ms(key),
        ms(worst)
    );
    let tmp = tempfile::tempdir().unwrap();
    let (_, key, worst, lines) = big_diff(tmp.path(), 10_000, true);
    let _ = writeln!(
        out,
        "| 10k-line file, a third of the lines long, wrap on ({lines} diff lines): keypress + redraw, median of 200 (worst) | {:.2} ms ({:.2} ms) | ≤ 16 ms |",
        ms(key),
        ms(worst)
    );

    print!("{out}");
    let target =
        std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target").into());
    let _ = std::fs::write(Path::new(&target).join("bench-tui.md"), &out);
}
