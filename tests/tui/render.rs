//! `walj tui`: screens (insta snapshots with a hash of the styles), scripted key flows
//! through the real event loop on ratatui's TestBackend (asserting the screen and the
//! journal records written), the demo, the crash-mid-write fixture, and the real binary
//! in tmux.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::{Parent, Repo, hook_ok, journal_records, scratch, walj_bin};
use chrono::{DateTime, Utc};
use crossterm::event::{Event, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use walj::journal::{Blob, JournalWriter, Record, kind, op};
use walj::project::Project;
use walj::store::Store;
use walj::tui::app::Focus;
use walj::tui::{App, AppOptions, Clock, Script, run_loop};

const CRASHED: &str = "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10";
const ENDED: &str = "3b1f0c2a-5d6e-4f70-8a91-b2c3d4e5f601";
/// A pid no process has: the crashed session's Claude Code is gone.
const DEAD_PID: u32 = 4_000_000_000;

const SETTINGS_PRE: &str = "{\n  \"retries\": 3,\n  \"timeout_ms\": 500\n}\n";
const SETTINGS_POST: &str = "{\n  \"retries\": 5,\n  \"timeout_ms\": 500\n}\n";
const SERVER_PRE: &str = "const port = 3000;\nconsole.log(\"listening on\", port);\n";
const SERVER_POST: &str = "const port = 3000;\nconsole.log(\"shop listening on port\", port);\n";
const DOC: &str = "# Index\n\n- retries: 5\n- timeout_ms: 500\n";

fn rec(op_name: &str, session: &str, ts: &str) -> Record {
    let mut r = Record::new(op_name, session);
    r.ts = ts.to_string();
    r.pid = Some(DEAD_PID);
    r.pstart = Some(1);
    r
}

fn session_rec(session: &str, ts: &str, k: &str) -> Record {
    let mut r = rec(op::SESSION, session, ts);
    r.event = "session".into();
    r.kind = Some(k.into());
    r
}

fn file_rec(op_name: &str, session: &str, ts: &str, id: &str, tool: &str, path: &str, event: &str) -> Record {
    let mut r = rec(op_name, session, ts);
    r.id = id.into();
    r.tool = Some(tool.into());
    r.path = path.into();
    r.event = event.into();
    r
}

/// A git project (one commit) and a journal, written with fixed times: a clean session
/// that ended, and a crashed one with an applied edit, an applied edit of a second file,
/// an in-flight Write whose file exists, a background and a failed command, and todos.
struct Fixture {
    repo: Repo,
}

impl Fixture {
    fn new() -> Fixture {
        let repo = Repo::new(&[
            ("config/settings.json", SETTINGS_PRE),
            ("src/server.js", SERVER_PRE),
            ("README.md", "# shop\n"),
        ]);
        let project = Project::at(repo.root.clone(), None);
        project.ensure_dir().unwrap();
        let store = Store::new(project.store_dir());
        let id = |t: &str| Blob::Id(store.put(t.as_bytes()).unwrap());
        let mut recs = Vec::new();
        // The clean session: one edit, verified, ended.
        let mut r = session_rec(ENDED, "2026-03-01T09:10:00.000Z", kind::START);
        r = r.with("source", "startup").with("branch", "main").with("model", "claude-sonnet-4-5");
        recs.push(r);
        recs.push(session_rec(ENDED, "2026-03-01T09:10:05.000Z", kind::PROMPT).with("prompt", "Add a README"));
        let mut r = file_rec(
            op::INTENT,
            ENDED,
            "2026-03-01T09:11:00.000Z",
            "toolu_01Readme",
            "Edit",
            "README.md",
            "file_modified",
        );
        r.before = Some(id("# shop\n"));
        recs.push(r);
        let mut r = file_rec(
            op::APPLIED,
            ENDED,
            "2026-03-01T09:11:01.000Z",
            "toolu_01Readme",
            "Edit",
            "README.md",
            "file_modified",
        );
        r.after = Some(id("# shop\n"));
        recs.push(r);
        let mut r = file_rec(
            op::PERSISTED,
            ENDED,
            "2026-03-01T09:11:30.000Z",
            "toolu_01Readme",
            "Edit",
            "README.md",
            "file_modified",
        );
        r.persisted = true;
        recs.push(r);
        recs.push(session_rec(ENDED, "2026-03-01T09:12:00.000Z", kind::END).with("reason", "prompt_input_exit"));
        // The crashed session.
        let mut r = session_rec(CRASHED, "2026-03-01T10:00:00.000Z", kind::START);
        r = r
            .with("source", "startup")
            .with("branch", "main")
            .with("model", "claude-sonnet-4-5")
            .with("transcript", "/home/user/.claude/projects/-shop/8f14e45f.jsonl");
        recs.push(r);
        recs.push(
            session_rec(CRASHED, "2026-03-01T10:00:05.000Z", kind::PROMPT)
                .with("prompt", "Raise the retry count to 5 and regenerate docs/generated-index.md"),
        );
        recs.push(session_rec(CRASHED, "2026-03-01T10:00:10.000Z", kind::TODOS).with(
            "todos",
            serde_json::json!([
                {"content": "Raise retries in config/settings.json", "status": "completed"},
                {"content": "Regenerate docs/generated-index.md", "status": "in_progress"}
            ]),
        ));
        let mut r = file_rec(
            op::INTENT,
            CRASHED,
            "2026-03-01T10:01:00.000Z",
            "toolu_01EditCfg",
            "Edit",
            "config/settings.json",
            "config_updated",
        );
        r.before = Some(id(SETTINGS_PRE));
        recs.push(r);
        let mut r = file_rec(
            op::APPLIED,
            CRASHED,
            "2026-03-01T10:01:01.000Z",
            "toolu_01EditCfg",
            "Edit",
            "config/settings.json",
            "config_updated",
        );
        r.after = Some(id(SETTINGS_POST));
        recs.push(r);
        let mut r = file_rec(
            op::INTENT,
            CRASHED,
            "2026-03-01T10:02:00.000Z",
            "toolu_01EditSrv",
            "Edit",
            "src/server.js",
            "file_modified",
        );
        r.before = Some(id(SERVER_PRE));
        recs.push(r);
        let mut r = file_rec(
            op::APPLIED,
            CRASHED,
            "2026-03-01T10:02:01.000Z",
            "toolu_01EditSrv",
            "Edit",
            "src/server.js",
            "file_modified",
        );
        r.after = Some(id(SERVER_POST));
        recs.push(r);
        let mut r = rec(op::INTENT, CRASHED, "2026-03-01T10:03:00.000Z");
        r.id = "toolu_01BashDev".into();
        r.tool = Some("Bash".into());
        r.event = "command_run".into();
        recs.push(
            r.with("command", "npm run dev").with("background", true).with("description", "Start the dev server"),
        );
        let mut r = rec(op::APPLIED, CRASHED, "2026-03-01T10:03:01.000Z");
        r.id = "toolu_01BashDev".into();
        r.tool = Some("Bash".into());
        r.event = "command_run".into();
        recs.push(r.with("command", "npm run dev").with("task_id", "bash_1"));
        let mut r = rec(op::INTENT, CRASHED, "2026-03-01T10:04:00.000Z");
        r.id = "toolu_01BashTest".into();
        r.tool = Some("Bash".into());
        r.event = "command_run".into();
        recs.push(r.with("command", "npm test"));
        let mut r = rec(op::FAILED, CRASHED, "2026-03-01T10:04:09.000Z");
        r.id = "toolu_01BashTest".into();
        r.tool = Some("Bash".into());
        r.event = "command_run".into();
        recs.push(r.with("command", "npm test").with("error", "exit code 1: not ok 2 - /items"));
        let mut r = file_rec(
            op::INTENT,
            CRASHED,
            "2026-03-01T10:05:00.000Z",
            "toolu_01WriteDoc",
            "Write",
            "docs/generated-index.md",
            "artifact_created",
        );
        r.before = Some(Blob::Absent);
        recs.push(r);
        JournalWriter::new(&project.journal).append_all(&recs).unwrap();
        // The disk as the crash left it: both edits applied, the Write done but unrecorded.
        repo.write("config/settings.json", SETTINGS_POST);
        repo.write("src/server.js", SERVER_POST);
        repo.write("docs/generated-index.md", DOC);
        Fixture { repo }
    }

    fn project(&self) -> Project {
        Project::at(self.repo.root.clone(), None)
    }

    fn app(&self) -> App {
        App::new(self.project(), opts())
    }

    /// Records of the journal with op `op_name`.
    fn records(&self, op_name: &str) -> Vec<Record> {
        records_with_op(&self.repo.root, op_name)
    }
}

fn now() -> DateTime<Utc> {
    "2026-03-01T10:30:00Z".parse().unwrap()
}

fn opts() -> AppOptions {
    AppOptions { clock: Clock::Fixed(now()), poll: Duration::ZERO, ..AppOptions::default() }
}

fn term(w: u16, h: u16) -> Terminal<TestBackend> {
    Terminal::new(TestBackend::new(w, h)).unwrap()
}

/// Runs scripted keys through the real loop.
fn run(app: &mut App, t: &mut Terminal<TestBackend>, keys: &str) {
    run_loop(t, &mut Script::new().keys(keys), app).unwrap();
}

/// The buffer as text, then a hash of every cell's style (so colour changes fail too).
fn screen(buf: &Buffer) -> String {
    let mut text = String::new();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            let cell = &buf[(x, y)];
            text.push_str(cell.symbol());
            for b in format!("{:?}{:?}{:?}", cell.fg, cell.bg, cell.modifier).bytes() {
                hash ^= u64::from(b);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        let trimmed = text.trim_end().len();
        text.truncate(trimmed);
        text.push('\n');
    }
    let _ = write!(text, "styles: {hash:016x}");
    text
}

fn text(t: &Terminal<TestBackend>) -> String {
    screen(t.backend().buffer())
}

// ------------------------------------------------------------------- screens

#[test]
fn snapshot_crashed_session_with_diff() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "");
    let s = text(&t);
    // Opens on the first unresolved entry, the pre-image → disk diff with the changed word marked.
    assert!(s.contains("config/settings.json"), "{s}");
    assert!(s.contains("-  \"retries\": 3,"), "{s}");
    assert!(s.contains("+  \"retries\": 5,"), "{s}");
    insta::assert_snapshot!("crashed_session_diff", s);
}

/// A `chmod +x` by a command (the bytes the same, the mode changed): the diff pane shows the
/// mode's change on top, as `walj diff` and git do, instead of only "no changes".
#[test]
fn snapshot_chmod_only_entry_shows_the_mode_in_the_diff_pane() {
    use std::os::unix::fs::PermissionsExt;
    let repo = Repo::new(&[("run.sh", "echo hi\n")]);
    let project = Project::at(repo.root.clone(), None);
    project.ensure_dir().unwrap();
    let blob = Blob::Id(Store::new(project.store_dir()).put(b"echo hi\n").unwrap());
    let start = session_rec(CRASHED, "2026-03-01T10:00:00.000Z", kind::START).with("branch", "main");
    let mut pre = rec(op::INTENT, CRASHED, "2026-03-01T10:01:00.000Z");
    pre.id = "toolu_01Chmod".into();
    pre.tool = Some("Bash".into());
    pre.event = "command_run".into();
    let pre = pre.with("command", "chmod +x run.sh");
    let mut post = pre.clone();
    post.op = op::APPLIED.into();
    post.ts = "2026-03-01T10:01:01.000Z".into();
    let mut kid = file_rec(
        op::APPLIED,
        CRASHED,
        "2026-03-01T10:01:01.000Z",
        "toolu_01Chmod-run.sh",
        "Bash",
        "run.sh",
        "file_modified",
    );
    kid.before = Some(blob.clone());
    kid.after = Some(blob);
    kid.parent = Some("toolu_01Chmod".into());
    let kid = kid.with("mode_before", "100644").with("mode_after", "100755").with("command", "chmod +x run.sh");
    JournalWriter::new(&project.journal).append_all(&[start, pre, post, kid]).unwrap();
    std::fs::set_permissions(repo.root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut app = App::new(project, opts());
    let mut t = term(100, 16);
    run(&mut app, &mut t, "");
    let s = text(&t);
    assert!(s.contains("run.sh"), "{s}");
    let (old, new) = (s.find("old mode 100644"), s.find("new mode 100755"));
    assert!(old.is_some() && new.is_some() && old < new, "{s}");
    assert!(s.contains("same bytes on both sides: only the mode changed"), "{s}");
    insta::assert_snapshot!("chmod_only_diff", s);
}

#[test]
fn snapshot_session_context() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "gg");
    let s = text(&t);
    assert!(s.contains("crashed"), "{s}");
    assert!(s.contains("Regenerate docs/generated-index.md"), "{s}");
    assert!(s.contains("npm run dev"), "{s}");
    assert!(s.contains("npm test  failed"), "{s}");
    insta::assert_snapshot!("session_context", s);
}

#[test]
fn snapshot_help_overlay() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 40);
    run(&mut app, &mut t, "?");
    let s = text(&t);
    assert!(s.contains("hand back to Claude"), "{s}");
    insta::assert_snapshot!("help_overlay", s);
    // Any key closes it.
    run(&mut app, &mut t, "x");
    assert!(!text(&t).contains("hand back to Claude (next session)"));
}

#[test]
fn snapshot_revert_dialog_and_revert() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "r");
    let s = text(&t);
    assert!(s.contains("Revert 1 entry?"), "{s}");
    assert!(s.contains("write the pre-image back"), "{s}");
    insta::assert_snapshot!("revert_dialog", s);
    // Nothing happens until confirmed.
    assert!(f.records(op::RESOLVED).is_empty());
    run(&mut app, &mut t, "y");
    let resolved = f.records(op::RESOLVED);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].id, "toolu_01EditCfg");
    assert_eq!(resolved[0].how.as_deref(), Some("reverted"));
    assert_eq!(std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(), SETTINGS_PRE);
    let s = text(&t);
    assert!(s.contains("config/settings.json"), "status names the file: {s}");
    // The reverted entry left the tree (resolved entries are hidden by default).
    assert!(!s.contains("● config/settings.json"), "{s}");
}

#[test]
fn tiny_areas_do_not_panic() {
    let f = Fixture::new();
    for (w, h) in [(0, 0), (1, 1), (0, 5), (5, 0), (2, 3), (10, 4), (30, 8)] {
        let mut app = f.app();
        let mut t = term(w, h);
        run(&mut app, &mut t, "jj?<esc>r<esc>/x<enter>s");
        assert_eq!(t.backend().buffer().area.width, w);
    }
    // With every overlay open too.
    let mut app = f.app();
    let mut t = term(1, 1);
    run(&mut app, &mut t, "H");
    assert!(app.dialog.is_some());
}

// ------------------------------------------------------------------- flows

#[test]
fn navigate_expand_collapse_and_switch_panes() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    // The next row is the file_modified group, then its entry.
    run(&mut app, &mut t, "jj");
    assert!(text(&t).contains("src/server.js"));
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("src/server.js"));
    // h steps out to the group, h again collapses it.
    run(&mut app, &mut t, "hh");
    let s = text(&t);
    assert!(!s.contains("● src/server.js"), "collapsed: {s}");
    run(&mut app, &mut t, "l");
    assert!(text(&t).contains("● src/server.js"));
    // G goes to the last row, g to the first (the session).
    run(&mut app, &mut t, "G");
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("docs/generated-index.md"));
    assert!(text(&t).contains("new file (absent in pre-image)"));
    run(&mut app, &mut t, "g");
    assert!(app.selected_entry().is_none());
    // Tab focuses the diff: j scrolls it instead of moving.
    run(&mut app, &mut t, "G<tab>");
    assert_eq!(app.focus, Focus::Diff);
    run(&mut app, &mut t, "j");
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("docs/generated-index.md"));
    // Diff modes: pre → post says the in-flight Write has no post-image.
    run(&mut app, &mut t, "2");
    assert!(text(&t).contains("post-image unknown"), "{}", text(&t));
    run(&mut app, &mut t, "3");
    assert!(text(&t).contains("HEAD → disk"));
    run(&mut app, &mut t, "q");
    assert!(app.quit);
}

#[test]
fn filter_by_path_and_event() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "/artifact");
    let s = text(&t);
    assert!(s.contains("docs/generated-index.md"), "{s}");
    assert!(!s.contains("src/server.js"), "{s}");
    assert!(s.contains("filter /artifact"), "{s}");
    run(&mut app, &mut t, "<enter>");
    insta::assert_snapshot!("filtered", text(&t));
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("docs/generated-index.md"));
    // By event type.
    run(&mut app, &mut t, &format!("/{}config_upd<enter>", "<backspace>".repeat(8)));
    let s = text(&t);
    assert!(s.contains("config/settings.json") && !s.contains("docs/generated-index.md"), "{s}");
    // Esc clears the filter.
    run(&mut app, &mut t, "<esc>");
    let s = text(&t);
    assert!(s.contains("docs/generated-index.md") && s.contains("src/server.js"), "{s}");
    assert!(!app.quit);
    // A filter nothing matches says so, and how to leave it.
    run(&mut app, &mut t, "/nothing-has-this<enter>");
    let s = text(&t);
    assert!(s.contains("No entry matches the filter (Esc clears it)."), "{s}");
    assert!(app.selected_entry().is_none());
    insta::assert_snapshot!("filter_no_match", s);
    run(&mut app, &mut t, "<esc>");
    assert!(text(&t).contains("src/server.js"));
}

#[test]
fn mark_done_then_undo() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "d");
    let resolved = f.records(op::RESOLVED);
    assert_eq!(resolved.len(), 1);
    assert_eq!((resolved[0].id.as_str(), resolved[0].how.as_deref()), ("toolu_01EditCfg", Some("done")));
    let s = text(&t);
    assert!(!s.contains("● config/settings.json"), "{s}");
    assert!(s.contains("2 open"), "{s}");
    // u undoes the last triage command: the entry is back.
    run(&mut app, &mut t, "u");
    let undos = f.records(op::UNDO);
    assert_eq!(undos.len(), 1);
    assert_eq!(undos[0].target, resolved[0].action);
    let s = text(&t);
    assert!(s.contains("● config/settings.json") && s.contains("3 open"), "{s}");
    // The status line says what was undone, in the success colour.
    let at = s.find("undid the mark done of ").map(|i| i + "undid the mark done of ".len());
    let Some(at) = at else { panic!("the status says what was undone: {s}") };
    // The time of the undone action is the wall clock's: masked.
    let mut s = format!("{}<time>{}", &s[..at], &s[at + "2026-03-01 10:30:00 UTC".len()..]);
    // The reopened entry is selected again; its history shows the undone action's time: masked.
    assert_eq!(app.selected_entry().map(|e| e.id.as_str()), Some("toolu_01EditCfg"));
    if let Some(h) = s.find("history done ").map(|i| i + "history done ".len()) {
        s = format!("{}<time>{}", &s[..h], &s[h + "2026-03-01 10:30".len()..]);
    }
    insta::assert_snapshot!("undo_status", s);
}

#[test]
fn select_several_and_mark_done() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    // Space marks and moves down; two entries selected.
    run(&mut app, &mut t, "<space><space>");
    assert_eq!(app.tree.marked.len(), 2);
    assert!(text(&t).contains("✚"));
    // Two entries: d asks first, and a second d does not answer the dialog.
    run(&mut app, &mut t, "dd");
    let s = text(&t);
    assert!(s.contains("Mark 2 entries done?") && s.contains("mark 2 entries done: 2 applied"), "{s}");
    assert!(f.records(op::RESOLVED).is_empty(), "nothing until confirmed");
    // Enter takes the default shown: mark done (no file changes, u undoes it).
    assert!(s.contains("Enter: mark done (y)"), "{s}");
    run(&mut app, &mut t, "<enter>");
    let ids: Vec<String> = f.records(op::RESOLVED).into_iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&"toolu_01EditCfg".to_string()) && ids.contains(&"toolu_01EditSrv".to_string()));
    assert!(app.tree.marked.is_empty());
    assert!(text(&t).contains("1 open"));
}

#[test]
fn revert_created_file_undo_restores_it() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "Gr");
    let s = text(&t);
    assert!(s.contains("delete the file") || s.contains("pre-image"), "{s}");
    run(&mut app, &mut t, "y");
    assert!(!f.repo.root.join("docs/generated-index.md").exists(), "{}", text(&t));
    let r = f.records(op::RESOLVED);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].how.as_deref(), Some("reverted"));
    run(&mut app, &mut t, "u");
    assert_eq!(std::fs::read_to_string(f.repo.root.join("docs/generated-index.md")).unwrap(), DOC);
    assert_eq!(f.records(op::UNDO).len(), 1);
    // The reopened entry is selected again: a hurried next key acts on it, not on a neighbour.
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("docs/generated-index.md"));
}

#[test]
fn revert_cancelled_changes_nothing() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "r<esc>");
    assert!(app.dialog.is_none());
    assert!(f.records(op::RESOLVED).is_empty());
    assert_eq!(std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(), SETTINGS_POST);
    assert!(text(&t).contains("cancelled"));
    // n cancels as well, and the dialog does not leak keys into the tree.
    run(&mut app, &mut t, "rjn");
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("config/settings.json"));
}

#[test]
fn revert_conflict_offers_force() {
    let f = Fixture::new();
    // The user edited the same line after the tool: taking the change out conflicts.
    f.repo.write("config/settings.json", "{\n  \"retries\": 7,\n  \"timeout_ms\": 500\n}\n");
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "r");
    let s = text(&t);
    // The entry may show as drifted (disk matches neither image): still revertable.
    assert!(s.contains("CONFLICT"), "{s}");
    assert!(s.contains("[f] force"), "{s}");
    assert!(!s.contains("[y]"), "{s}");
    // Both sides of the conflict, the default (Enter cancels) and the editor key.
    assert!(s.contains("the file now has:") && s.contains("\"retries\": 7,"), "{s}");
    assert!(s.contains("where the pre-image has:") && s.contains("\"retries\": 3,"), "{s}");
    assert!(s.contains("Enter: cancel") && s.contains("[e] edit config/settings.json"), "{s}");
    insta::assert_snapshot!("revert_conflict_dialog", s);
    run(&mut app, &mut t, "y");
    assert!(app.dialog.is_some(), "y is not a choice in a conflict");
    // Issue 12: Enter took "force" and the user's 7 was gone. Enter cancels now.
    run(&mut app, &mut t, "<enter>");
    assert!(app.dialog.is_none());
    assert!(f.records(op::RESOLVED).is_empty());
    assert_eq!(
        std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(),
        "{\n  \"retries\": 7,\n  \"timeout_ms\": 500\n}\n"
    );
    assert!(text(&t).contains("cancelled"));
    // Force has its own key.
    run(&mut app, &mut t, "rf");
    assert_eq!(std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(), SETTINGS_PRE);
    assert_eq!(f.records(op::RESOLVED).len(), 1);
}

#[test]
fn hand_back_session() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    // On the session node, H hands back all of its unresolved entries.
    run(&mut app, &mut t, "gH");
    let s = text(&t);
    assert!(s.contains("Hand 3 entries back to Claude?"), "{s}");
    run(&mut app, &mut t, "y");
    let handoffs = f.records(op::HANDOFF);
    assert_eq!(handoffs.len(), 1, "{}", text(&t));
    let brief = handoffs[0].get_str("brief").unwrap_or_default();
    assert!(brief.contains("config/settings.json") && brief.contains("docs/generated-index.md"), "{brief}");
    let s = text(&t);
    assert!(s.contains("handed back 3 entries"), "{s}");
    assert!(s.contains("claude --resume"), "{s}");
    // Handed back entries are resolved: the tree shows none; s shows them with ↪.
    assert!(!s.contains("● config/settings.json"));
    run(&mut app, &mut t, "s");
    assert!(text(&t).contains("↪ config/settings.json"), "{}", text(&t));
}

#[test]
fn toggle_resolved_shows_ended_session() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "");
    assert!(!text(&t).contains("3b1f0c"));
    run(&mut app, &mut t, "s");
    let s = text(&t);
    assert!(s.contains("ended") && s.contains("3b1f0c"), "{s}");
    insta::assert_snapshot!("show_resolved", s);
    run(&mut app, &mut t, "s");
    assert!(!text(&t).contains("3b1f0c"));
}

#[test]
fn refresh_on_journal_change_keeps_selection() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "jj");
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("src/server.js"));
    // Another process appends an entry (a new session edits a file).
    let mut r = file_rec(
        op::INTENT,
        "c0ffee00-1111",
        "2026-03-01T10:20:00.000Z",
        "toolu_01New",
        "Edit",
        "README.md",
        "file_modified",
    );
    r.before = Some(Blob::Id(Store::new(f.project().store_dir()).put(b"# shop\n").unwrap()));
    JournalWriter::new(&f.project().journal).append(&r).unwrap();
    run_loop(&mut t, &mut Script::new().tick(), &mut app).unwrap();
    let s = text(&t);
    assert!(s.contains("c0ffee"), "{s}");
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("src/server.js"), "selection kept");
}

#[test]
fn resize_and_mouse() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "");
    t.backend_mut().resize(70, 16);
    run_loop(&mut t, &mut Script::new().event(Event::Resize(70, 16)), &mut app).unwrap();
    assert_eq!(t.backend().buffer().area.width, 70);
    assert!(text(&t).contains("walj"));
    t.backend_mut().resize(120, 30);
    run_loop(&mut t, &mut Script::new().event(Event::Resize(120, 30)), &mut app).unwrap();
    // Click on the row of src/server.js (tree rows start at y = 1: session, group, entries).
    let lines: Vec<String> = text(&t).lines().map(str::to_string).collect();
    let y = lines.iter().position(|l| l.contains("● src/server.js")).unwrap() as u16;
    let click = |row: u16| {
        Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 5,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    run_loop(&mut t, &mut Script::new().event(click(y)), &mut app).unwrap();
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("src/server.js"));
    // Wheel over the tree moves the selection.
    let wheel =
        Event::Mouse(MouseEvent { kind: MouseEventKind::ScrollUp, column: 5, row: 3, modifiers: KeyModifiers::NONE });
    run_loop(&mut t, &mut Script::new().event(wheel), &mut app).unwrap();
    assert!(app.tree.cursor < 3);
}

#[test]
fn keys_from_config() {
    let f = Fixture::new();
    std::fs::write(f.project().config_path(), "[keys]\nrevert = [\"x\"]\nmove_down = [\"n\", \"down\"]\n").unwrap();
    let keymap = walj::tui::load_keymap(&f.project()).unwrap();
    let mut app = App::new(f.project(), AppOptions { keymap, ..opts() });
    let mut t = term(120, 40);
    run(&mut app, &mut t, "r");
    assert!(app.dialog.is_none(), "r is no longer revert");
    run(&mut app, &mut t, "nn");
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("src/server.js"));
    run(&mut app, &mut t, "x");
    assert!(text(&t).contains("Revert 1 entry?"));
    run(&mut app, &mut t, "<esc>?");
    assert!(text(&t).contains("x  revert to the pre-image"), "{}", text(&t));
    // A key taken from another action, or bound twice, is said when the dashboard opens.
    std::fs::write(f.project().config_path(), "[keys]\nrevert = [\"d\"]\n").unwrap();
    let keymap = walj::tui::load_keymap(&f.project()).unwrap();
    let mut app = App::new(f.project(), AppOptions { keymap, ..opts() });
    run(&mut app, &mut t, "");
    let s = text(&t);
    assert!(s.contains("[keys] d was done's key: done has no key now"), "{s}");
    std::fs::write(f.project().config_path(), "[keys]\nrevert = [\"x\"]\ndone = [\"x\"]\n").unwrap();
    let keymap = walj::tui::load_keymap(&f.project()).unwrap();
    assert!(keymap.warnings.iter().any(|w| w.contains("x is bound to")), "{:?}", keymap.warnings);
    // A bad key name is an error naming the file.
    std::fs::write(f.project().config_path(), "[keys]\nrevert = [\"hyper+x\"]\n").unwrap();
    let err = walj::tui::load_keymap(&f.project()).unwrap_err().to_string();
    assert!(err.contains("config.toml") && err.contains("revert"), "{err}");
}

#[test]
fn empty_and_missing_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let mut app = App::new(Project::at(tmp.path().to_path_buf(), None), opts());
    let mut t = term(100, 20);
    run(&mut app, &mut t, "jjdrH?<esc>");
    let s = text(&t);
    assert!(s.contains("No journal yet") || s.contains("Nothing to recover"), "{s}");
    assert!(!tmp.path().join(".walj").exists(), "the TUI writes nothing when there is nothing to do");
}

// ------------------------------------------------------------------- demo and fixtures

#[test]
fn demo_builds_a_crashed_session_with_the_real_hook() {
    let (_tmp, dir) = scratch();
    walj::tui::demo::build(&dir, &walj_bin()).unwrap();
    let mut app = App::new(Project::at(dir.clone(), None), AppOptions::default());
    let mut t = term(120, 40);
    run(&mut app, &mut t, "");
    let s = text(&t);
    assert!(s.contains("crashed"), "{s}");
    let states: Vec<&str> = app.fold.entries.iter().map(|e| e.state().as_str()).collect();
    assert!(states.contains(&"in_flight") && states.contains(&"applied") && states.contains(&"failed"), "{states:?}");
    let crashed = app.fold.sessions.iter().find(|s| s.session.starts_with("8f14e45f")).unwrap();
    assert_eq!(crashed.status().as_str(), "crashed");
    assert!(crashed.commands.iter().any(|c| c.background), "a background command");
    assert!(crashed.commands.iter().any(|c| c.status == walj::fold::CommandStatus::Failed), "a failed command");
    assert_eq!(crashed.todos_done(), (2, 3));
    let ended = app.fold.sessions.iter().find(|s| s.session.starts_with("3b1f0c2a")).unwrap();
    assert_eq!(ended.status().as_str(), "ended");
    // The in-flight Write left its file on disk; the demo repo has a commit for HEAD diffs.
    assert!(dir.join("docs/generated-index.md").exists());
    run(&mut app, &mut t, "G3");
    assert!(text(&t).contains("HEAD → disk"));
}

/// Replays the crash-mid-write hook fixture (variant b: the Write happened, its
/// PostToolUse never came) under short-lived parents, so the session looks crashed.
fn crash_mid_write() -> Option<Repo> {
    if !crate::common::fixtures().join("hooks/crash-mid-write").is_dir() {
        return None;
    }
    if Command::new("timeout").arg("--version").output().is_err() {
        return None;
    }
    let repo = Repo::from_fixture("hooks/crash-mid-write/project");
    crate::common::replay_crash_mid_write(&repo, true, |p| {
        hook_ok(&repo.root, p, Parent::Timeout(10));
    });
    Some(repo)
}

#[test]
fn triage_crash_mid_write_with_the_keyboard() {
    let Some(repo) = crash_mid_write() else {
        eprintln!("SKIPPED: shared fixtures or `timeout` missing");
        return;
    };
    let project = Project::at(repo.root.clone(), None);
    let mut app = App::new(project.clone(), opts());
    let mut t = term(120, 30);
    run(&mut app, &mut t, "");
    let s = text(&t);
    assert!(s.contains("crashed") && s.contains("2 open"), "{s}");
    // The config edit is fine: done. The half-written doc: revert (deletes the new file).
    run(&mut app, &mut t, "d");
    run(&mut app, &mut t, "r");
    assert!(text(&t).contains("docs/generated-index.md"), "{}", text(&t));
    run(&mut app, &mut t, "y");
    assert!(!repo.root.join("docs/generated-index.md").exists(), "{}", text(&t));
    let s = text(&t);
    assert!(s.contains("0 unresolved"), "{s}");
    // The session's context still tells what was left to do.
    run(&mut app, &mut t, "g");
    let s = text(&t);
    assert!(s.contains("Regenerate docs/generated-index.md") && s.contains("npm run dev"), "{s}");
    let v = repo.json(&["recover", "--json"]);
    assert_eq!(v["unresolved"], 0, "{v}");
}

// ------------------------------------------------------------------- the real binary

#[test]
fn real_binary_in_tmux() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIPPED: tmux is not installed (apt-get install tmux)");
        return;
    }
    let f = Fixture::new();
    let name = format!("walj-tui-test-{}", std::process::id());
    let sock = f.repo.root.join(".tmux-sock");
    let tmux = |args: &[&str]| Command::new("tmux").arg("-S").arg(&sock).args(args).output().expect("tmux runs");
    let cmd = format!(
        "env -u CLAUDE_PROJECT_DIR -u WALJ_JOURNAL TERM=xterm-256color {} --project {} tui",
        walj_bin().display(),
        f.repo.root.display()
    );
    let out = tmux(&["new-session", "-d", "-s", &name, "-x", "120", "-y", "40", &cmd]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let capture = || String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", &name]).stdout).into_owned();
    let wait_for = |needle: &str| {
        for _ in 0..100 {
            let s = capture();
            if s.contains(needle) {
                return s;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{needle:?} never appeared:\n{}", capture());
    };
    wait_for("config/settings.json");
    wait_for("\"retries\": 5");
    tmux(&["send-keys", "-t", &name, "d"]);
    wait_for("2 open");
    tmux(&["send-keys", "-t", &name, "?"]);
    wait_for("hand back to Claude");
    tmux(&["send-keys", "-t", &name, "q"]);
    tmux(&["send-keys", "-t", &name, "q"]);
    // The program exited: the session (and its server) ends.
    let mut gone = false;
    for _ in 0..50 {
        if !tmux(&["has-session", "-t", &name]).status.success() {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    tmux(&["kill-server"]);
    assert!(gone, "walj tui did not quit on q");
    let resolved = f.records(op::RESOLVED);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0].how.as_deref(), Some("done"));
}

// ------------------------------------------------------------------- screenshots

/// An xterm colour as `#rrggbb` (a dark theme for the named colours).
fn css(c: ratatui::style::Color, fg: bool) -> String {
    use ratatui::style::Color as C;
    let named = |n: u8| -> &'static str {
        [
            "#282c34", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#abb2bf", "#5c6370",
            "#ff7b86", "#b5e890", "#ffd68a", "#82c4ff", "#de95f0", "#7fd3dc", "#ffffff",
        ][n as usize]
    };
    match c {
        C::Reset => (if fg { "#d7dae0" } else { "#1b1d23" }).to_string(),
        C::Black => named(0).into(),
        C::Red => named(1).into(),
        C::Green => named(2).into(),
        C::Yellow => named(3).into(),
        C::Blue => named(4).into(),
        C::Magenta => named(5).into(),
        C::Cyan => named(6).into(),
        C::Gray => named(7).into(),
        C::DarkGray => named(8).into(),
        C::LightRed => named(9).into(),
        C::LightGreen => named(10).into(),
        C::LightYellow => named(11).into(),
        C::LightBlue => named(12).into(),
        C::LightMagenta => named(13).into(),
        C::LightCyan => named(14).into(),
        C::White => named(15).into(),
        C::Rgb(r, g, b) => format!("#{r:02x}{g:02x}{b:02x}"),
        C::Indexed(n) if n < 16 => named(n).into(),
        C::Indexed(n) if n >= 232 => {
            let v = 8 + (n - 232) * 10;
            format!("#{v:02x}{v:02x}{v:02x}")
        }
        C::Indexed(n) => {
            let n = n - 16;
            let lvl = |x: u8| if x == 0 { 0 } else { 55 + x * 40 };
            format!("#{:02x}{:02x}{:02x}", lvl(n / 36), lvl((n / 6) % 6), lvl(n % 6))
        }
    }
}

/// Renders a buffer as SVG: one background rect per styled cell, one text per glyph.
fn svg(buf: &Buffer) -> String {
    use ratatui::style::Modifier;
    let (cw, ch) = (8.43_f64, 16.4_f64);
    let (w, h) = (buf.area.width as f64 * cw + 24.0, buf.area.height as f64 * ch + 24.0);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n\
         <rect width=\"100%\" height=\"100%\" rx=\"8\" fill=\"{}\"/>\n<g transform=\"translate(12 12)\" \
         font-family=\"DejaVu Sans Mono, monospace\" font-size=\"14\">\n",
        css(ratatui::style::Color::Reset, false)
    );
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            let cell = &buf[(x, y)];
            let rev = cell.modifier.contains(Modifier::REVERSED);
            let (_fg, bg) = if rev { (cell.bg, cell.fg) } else { (cell.fg, cell.bg) };
            if bg != ratatui::style::Color::Reset {
                let _ = writeln!(
                    out,
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{ch}\" fill=\"{}\"/>",
                    x as f64 * cw,
                    y as f64 * ch,
                    cw + 0.4,
                    css(bg, false)
                );
            }
        }
    }
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            let cell = &buf[(x, y)];
            let sym = cell.symbol();
            if sym.trim().is_empty() {
                continue;
            }
            let rev = cell.modifier.contains(Modifier::REVERSED);
            let fg = if rev { cell.bg } else { cell.fg };
            let mut attrs = String::new();
            if cell.modifier.contains(Modifier::BOLD) {
                attrs.push_str(" font-weight=\"bold\"");
            }
            if cell.modifier.contains(Modifier::ITALIC) {
                attrs.push_str(" font-style=\"italic\"");
            }
            let esc = sym.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{}\"{attrs}>{esc}</text>",
                x as f64 * cw,
                y as f64 * ch + 13.0,
                css(fg, true)
            );
        }
    }
    out.push_str("</g>\n</svg>\n");
    out
}

/// Writes the README screenshots as SVG into `$WALJ_SCREENSHOTS` (scripts/screenshots.sh
/// rasterises them): the demo's crashed session with a diff, the help overlay, the revert
/// dialog.
#[test]
#[ignore = "run by scripts/screenshots.sh"]
fn screenshots() {
    let Some(out) = std::env::var_os("WALJ_SCREENSHOTS").map(PathBuf::from) else {
        eprintln!("SKIPPED: set WALJ_SCREENSHOTS=DIR (scripts/screenshots.sh does)");
        return;
    };
    std::fs::create_dir_all(&out).unwrap();
    let (_tmp, dir) = scratch();
    walj::tui::demo::build(&dir, &walj_bin()).unwrap();
    // A few minutes after the crash, so ages read like a real morning after.
    let clock = Clock::Fixed(Utc::now() + chrono::Duration::minutes(7));
    let shots: [(&str, &str); 5] = [
        ("crashed-session-diff", "jjj"),
        ("session-context", "g"),
        ("help-overlay", "?"),
        ("revert-dialog", "jjjr"),
        ("diff-search", "j<tab>/retries<enter>"),
    ];
    for (name, keys) in shots {
        let mut app = App::new(Project::at(dir.clone(), None), AppOptions { clock, ..AppOptions::default() });
        let mut t = term(120, 34);
        run(&mut app, &mut t, keys);
        std::fs::write(out.join(format!("{name}.svg")), svg(t.backend().buffer())).unwrap();
    }
}

#[cfg(target_os = "linux")]
#[test]
fn live_session_actions_ask_first() {
    let (_tmp, root) = scratch();
    let project = Project::at(root.clone(), None);
    project.ensure_dir().unwrap();
    // This test process plays Claude Code: the session is live while it runs.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let pstart: u64 = rest[19].parse().unwrap();
    std::fs::write(root.join("a.txt"), "new\n").unwrap();
    let store = Store::new(project.store_dir());
    let mut r = file_rec(
        op::INTENT,
        "11ve0000-live",
        "2026-03-01T10:00:00.000Z",
        "toolu_01Live",
        "Edit",
        "a.txt",
        "file_modified",
    );
    r.before = Some(Blob::Id(store.put(b"old\n").unwrap()));
    r.pid = Some(std::process::id());
    r.pstart = Some(pstart);
    JournalWriter::new(&project.journal).append(&r).unwrap();
    let mut app = App::new(project.clone(), opts());
    let mut t = term(120, 30);
    run(&mut app, &mut t, "d");
    let s = text(&t);
    assert!(s.contains(" live ") && s.contains("still running"), "{s}");
    assert!(f_records(&project, op::RESOLVED).is_empty(), "nothing until confirmed");
    run(&mut app, &mut t, "y");
    assert_eq!(f_records(&project, op::RESOLVED).len(), 1, "{}", text(&t));
}

fn f_records(project: &Project, op_name: &str) -> Vec<Record> {
    records_with_op(&project.root, op_name)
}

/// The records of the journal in `root` with op `op_name`.
fn records_with_op(root: &Path, op_name: &str) -> Vec<Record> {
    journal_records(root).into_iter().filter(|r| r.op == op_name).collect()
}

// ------------------------------------------------------------------- issue 12: no key loses work

/// `config/settings.json` as the user left it after the tool: retries 5 → 7.
const SETTINGS_MINE: &str = "{\n  \"retries\": 7,\n  \"timeout_ms\": 500\n}\n";

/// A crashed session that edited `n` files (`src/f000.txt` …): `old N` → `new N`, applied.
fn many_edits(n: usize) -> Repo {
    let files: Vec<(String, String)> =
        (0..n).map(|i| (format!("src/f{i:03}.txt"), format!("line one\nold {i}\nline three\n"))).collect();
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let repo = Repo::new(&refs);
    let project = Project::at(repo.root.clone(), None);
    project.ensure_dir().unwrap();
    let store = Store::new(project.store_dir());
    let mut recs = vec![session_rec(CRASHED, "2026-03-01T10:00:00.000Z", kind::START)];
    for (i, (path, pre)) in files.iter().enumerate() {
        let post = pre.replace("old", "new");
        let ts = |plus: usize| format!("2026-03-01T10:{:02}:{:02}.000Z", 1 + i / 30, (i % 30) * 2 + plus);
        let id = format!("toolu_{i:03}");
        let mut r = file_rec(op::INTENT, CRASHED, &ts(0), &id, "Edit", path, "file_modified");
        r.before = Some(Blob::Id(store.put(pre.as_bytes()).unwrap()));
        recs.push(r);
        let mut r = file_rec(op::APPLIED, CRASHED, &ts(1), &id, "Edit", path, "file_modified");
        r.after = Some(Blob::Id(store.put(post.as_bytes()).unwrap()));
        recs.push(r);
        repo.write(path, &post);
    }
    JournalWriter::new(&project.journal).append_all(&recs).unwrap();
    repo
}

/// The "lines A-B of N" marker of a scrolled dialog.
fn dialog_lines(s: &str) -> Option<String> {
    let at = s.find("── lines ")?;
    Some(s[at..].split(" · ").next()?.to_string())
}

#[test]
fn enter_confirms_a_plain_revert() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "r");
    let s = text(&t);
    // The default is shown: a plain revert captures the bytes first and can be undone.
    assert!(s.contains("Enter: revert (y)") && s.contains("1 write back"), "{s}");
    run(&mut app, &mut t, "<enter>");
    assert_eq!(std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(), SETTINGS_PRE);
    assert_eq!(f.records(op::RESOLVED).len(), 1);
    run(&mut app, &mut t, "u");
    assert_eq!(std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(), SETTINGS_POST);
}

#[test]
fn long_revert_dialog_scrolls_and_keeps_its_buttons() {
    let repo = many_edits(100);
    // The user changed the line of one file after the tool: one conflict among 100.
    repo.write("src/f042.txt", "line one\nmine 42\nline three\n");
    let mut app = App::new(Project::at(repo.root.clone(), None), opts());
    let mut t = term(80, 24);
    run(&mut app, &mut t, "gr");
    let s = text(&t);
    assert!(s.contains("Revert 100 entries?"), "{s}");
    assert!(s.contains("99 write back, 1 conflict"), "the summary: {s}");
    assert!(s.contains("[y] revert 99 others (skip 1)") && s.contains("[n] cancel"), "the buttons: {s}");
    assert!(s.contains("Enter: revert 99 others (skip 1) (y)"), "the default: {s}");
    assert_eq!(dialog_lines(&s).as_deref(), Some("── lines 1-9 of 104"), "{s}");
    insta::assert_snapshot!("revert_dialog_long", s);
    // On a 16-row screen the body keeps 3 lines or more, the buttons stay.
    let mut short = term(80, 16);
    run(&mut app, &mut short, "");
    let s = text(&short);
    let shown = dialog_lines(&s).unwrap_or_else(|| panic!("{s}"));
    let (from, to) = shown.trim_start_matches("── lines ").split_once('-').unwrap();
    let to: usize = to.split_whitespace().next().unwrap().parse().unwrap();
    assert!(to >= from.parse::<usize>().unwrap() + 2, "{shown}: {s}");
    assert!(s.contains("[n] cancel") && s.contains("Esc: cancel"), "{s}");
    // The body scrolls; the summary and the buttons stay.
    run(&mut app, &mut t, "j<pagedown>");
    let s = text(&t);
    assert_eq!(dialog_lines(&s).as_deref(), Some("── lines 10-18 of 104"), "{s}");
    assert!(s.contains("99 write back, 1 conflict") && s.contains("[n] cancel"), "{s}");
    run(&mut app, &mut t, "G");
    let s = text(&t);
    assert_eq!(dialog_lines(&s).as_deref(), Some("── lines 96-104 of 104"), "{s}");
    assert!(s.contains("→ write the pre-image back") && s.contains("[y] revert"), "{s}");
    // The conflict is in the body, both sides.
    let d = app.dialog.as_ref().unwrap();
    let at = d.body.iter().position(|l| l.contains("CONFLICT")).unwrap();
    assert!(d.body[at].starts_with("≠ src/f042.txt  → CONFLICT"), "drifted: {}", d.body[at]);
    assert!(d.body[at + 2].contains("mine 42") && d.body[at + 4].contains("old 42"), "{:?}", &d.body[at..at + 5]);
    run(&mut app, &mut t, "k");
    assert_eq!(dialog_lines(&text(&t)).as_deref(), Some("── lines 95-103 of 104"));
    // Enter reverts the 99 others; the conflicting file keeps the user's line.
    run(&mut app, &mut t, "<enter>");
    assert_eq!(records_with_op(&repo.root, op::RESOLVED).len(), 99, "{}", text(&t));
    assert_eq!(repo.read("src/f042.txt"), "line one\nmine 42\nline three\n");
    assert_eq!(repo.read("src/f000.txt"), "line one\nold 0\nline three\n");
    assert_eq!(repo.read("src/f099.txt"), "line one\nold 99\nline three\n");
}

#[test]
fn batch_and_unfinished_done_ask_first() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    // On the session node: its 3 entries, one of them in flight.
    run(&mut app, &mut t, "gd");
    let s = text(&t);
    assert!(s.contains("Mark 3 entries done?"), "{s}");
    assert!(s.contains("mark 3 entries done: 1 in flight, 1 applied, 1 drifted") || s.contains("1 in flight"), "{s}");
    assert!(s.contains("half-written") && s.contains("Enter: mark done (y)"), "{s}");
    insta::assert_snapshot!("done_dialog_batch", s);
    // The old `dd`: the second d does not answer the dialog. n cancels.
    run(&mut app, &mut t, "dn");
    assert!(f.records(op::RESOLVED).is_empty());
    assert!(app.dialog.is_none());
    // One in-flight entry asks too (its tool did not finish).
    run(&mut app, &mut t, "Gd");
    assert!(text(&t).contains("Mark 1 entry done?"), "{}", text(&t));
    run(&mut app, &mut t, "<esc>");
    assert!(f.records(op::RESOLVED).is_empty());
    // One applied entry is marked at once (u undoes it).
    run(&mut app, &mut t, "ggjjd");
    assert_eq!(f.records(op::RESOLVED).len(), 1, "{}", text(&t));
    // Confirmed on the session: the two left.
    run(&mut app, &mut t, "gd<enter>");
    assert_eq!(f.records(op::RESOLVED).len(), 3, "{}", text(&t));
    assert!(text(&t).contains("0 unresolved"), "{}", text(&t));
    // Files untouched.
    assert_eq!(std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(), SETTINGS_POST);
    assert_eq!(std::fs::read_to_string(f.repo.root.join("docs/generated-index.md")).unwrap(), DOC);
}

/// An "editor": copies `<script>.json` over the file it is given (its last argument) and
/// keeps its arguments in `<script>.args`.
#[cfg(unix)]
fn editor_script(dir: &Path, content: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("editor.sh");
    std::fs::write(&script, "#!/bin/sh\necho \"$@\" > \"$0.args\"\nfor a; do f=$a; done\ncp \"$0.json\" \"$f\"\n")
        .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("editor.sh.json"), content).unwrap();
    script
}

#[cfg(unix)]
#[test]
fn conflict_e_runs_the_editor_then_plans_again() {
    let f = Fixture::new();
    f.repo.write("config/settings.json", SETTINGS_MINE);
    let tmp = tempfile::tempdir().unwrap();
    // The user puts the tool's 5 back and adds a line: the change can now be taken out alone.
    let edited = "{\n  \"retries\": 5,\n  \"timeout_ms\": 500\n}\n// tuned by hand\n";
    let script = editor_script(tmp.path(), edited);
    let editor = Some(script.display().to_string());
    let mut app = App::new(f.project(), AppOptions { editor, ..opts() });
    let mut t = term(120, 30);
    run(&mut app, &mut t, "r");
    assert!(text(&t).contains("CONFLICT"), "{}", text(&t));
    run(&mut app, &mut t, "e");
    assert_eq!(std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(), edited);
    // At the changed line, as `e` in the tree opens it.
    let args = std::fs::read_to_string(tmp.path().join("editor.sh.args")).unwrap();
    assert!(args.starts_with("+2 ") && args.trim_end().ends_with("config/settings.json"), "{args}");
    let s = text(&t);
    // Back in the dialog, planned again on the edited file.
    assert!(s.contains("edited config/settings.json"), "{s}");
    assert!(s.contains("clean merge") && s.contains("Enter: revert (y)"), "{s}");
    assert!(f.records(op::RESOLVED).is_empty());
    run(&mut app, &mut t, "<enter>");
    assert_eq!(
        std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(),
        "{\n  \"retries\": 3,\n  \"timeout_ms\": 500\n}\n// tuned by hand\n"
    );
    assert_eq!(f.records(op::RESOLVED).len(), 1);
    // An editor that fails is reported, the file and the journal stay.
    f.repo.write("src/server.js", "const port = 4000;\nconsole.log(\"mine\", port);\n");
    let mut app = App::new(f.project(), AppOptions { editor: Some("false".into()), ..opts() });
    run(&mut app, &mut t, "re");
    let s = text(&t);
    assert!(s.contains("false exited with"), "{s}");
    assert_eq!(f.records(op::RESOLVED).len(), 1);
    assert_eq!(
        std::fs::read_to_string(f.repo.root.join("src/server.js")).unwrap(),
        "const port = 4000;\nconsole.log(\"mine\", port);\n"
    );
}

#[test]
fn esc_goes_back_and_only_q_quits() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "<tab>");
    assert_eq!(app.focus, Focus::Diff);
    // Diff → tree.
    run(&mut app, &mut t, "<esc>");
    assert_eq!(app.focus, Focus::Tree);
    // Then the selection, then the filter.
    run(&mut app, &mut t, "<space>/s<enter>");
    assert_eq!((app.tree.marked.len(), app.tree.filter.as_str()), (1, "s"));
    run(&mut app, &mut t, "<esc>");
    assert_eq!((app.tree.marked.len(), app.tree.filter.as_str()), (0, "s"));
    run(&mut app, &mut t, "<esc>");
    assert_eq!(app.tree.filter, "");
    // Nothing left to close: Esc says how to quit, and does not.
    run(&mut app, &mut t, "<esc><esc>");
    assert!(!app.quit);
    assert!(text(&t).contains("q quits"), "{}", text(&t));
    // q with a dialog open leaves without doing it.
    run(&mut app, &mut t, "rq");
    assert!(app.quit);
    let mut app = f.app();
    run(&mut app, &mut t, "gd<ctrl+c>");
    assert!(app.quit);
    assert!(f.records(op::RESOLVED).is_empty());
    assert_eq!(std::fs::read_to_string(f.repo.root.join("config/settings.json")).unwrap(), SETTINGS_POST);
    // q quits from the tree.
    let mut app = f.app();
    run(&mut app, &mut t, "q");
    assert!(app.quit);
}

#[test]
fn triage_keeps_a_sessions_crash_time_and_place() {
    let f = Fixture::new();
    // An older crashed session (08:00) that created notes.txt.
    let old = "0a1d5e55-0000-4000-8000-000000000001";
    let store = Store::new(f.project().store_dir());
    let mut r =
        file_rec(op::INTENT, old, "2026-03-01T08:00:00.000Z", "toolu_01Old", "Write", "notes.txt", "artifact_created");
    r.before = Some(Blob::Absent);
    let mut a =
        file_rec(op::APPLIED, old, "2026-03-01T08:00:01.000Z", "toolu_01Old", "Write", "notes.txt", "artifact_created");
    a.after = Some(Blob::Id(store.put(b"notes\n").unwrap()));
    JournalWriter::new(&f.project().journal).append_all(&[r, a]).unwrap();
    f.repo.write("notes.txt", "notes\n");
    let order = |app: &App| -> Vec<String> {
        app.tree.views.iter().map(|v| app.fold.sessions[v.session].session.clone()).collect()
    };
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "");
    assert_eq!(order(&app), [CRASHED, old]);
    // Mark the old session's entry done (the journal gets a record stamped now).
    run(&mut app, &mut t, "Gd");
    let resolved = f.records(op::RESOLVED);
    assert_eq!(resolved.len(), 1, "{}", text(&t));
    assert!(resolved[0].ts.as_str() > "2026-03-02", "stamped with the real clock: {}", resolved[0].ts);
    // It keeps its last activity and its place below the newer sessions.
    let s = app.fold.session(old).unwrap();
    assert_eq!(s.last_ts, "2026-03-01T08:00:01.000Z");
    run(&mut app, &mut t, "s");
    assert_eq!(order(&app), [CRASHED, ENDED, old]);
    // The old session's node: its context.
    run(&mut app, &mut t, "Gkk");
    let s = text(&t);
    assert!(s.contains("last activity 2026-03-01 08:00 (2h ago)"), "{s}");
    // Undo is triage too.
    run(&mut app, &mut t, "u");
    assert_eq!(f.records(op::UNDO).len(), 1);
    assert_eq!(app.fold.session(old).unwrap().last_ts, "2026-03-01T08:00:01.000Z");
    assert_eq!(order(&app), [CRASHED, ENDED, old]);
}

// ------------------------------------------------------------------- issue 17: fluency

/// A crashed session whose applied edits changed each `(path, pre, post)`; the disk holds
/// `post`.
fn edits(files: &[(&str, &str, &str)]) -> Repo {
    let pre: Vec<(&str, &str)> = files.iter().map(|(p, a, _)| (*p, *a)).collect();
    let repo = Repo::new(&pre);
    let project = Project::at(repo.root.clone(), None);
    project.ensure_dir().unwrap();
    let store = Store::new(project.store_dir());
    let mut recs = vec![session_rec(CRASHED, "2026-03-01T10:00:00.000Z", kind::START)];
    for (i, (path, pre, post)) in files.iter().enumerate() {
        let ts = |plus: usize| format!("2026-03-01T10:{:02}:{:02}.000Z", 1 + i, plus);
        let id = format!("toolu_{i:02}Edit{}", "x".repeat(8));
        let mut r = file_rec(op::INTENT, CRASHED, &ts(0), &id, "Edit", path, "file_modified");
        r.before = Some(Blob::Id(store.put(pre.as_bytes()).unwrap()));
        recs.push(r);
        let mut r = file_rec(op::APPLIED, CRASHED, &ts(1), &id, "Edit", path, "file_modified");
        r.after = Some(Blob::Id(store.put(post.as_bytes()).unwrap()));
        recs.push(r);
        repo.write(path, post);
    }
    JournalWriter::new(&project.journal).append_all(&recs).unwrap();
    repo
}

fn app_at(repo: &Repo) -> App {
    App::new(Project::at(repo.root.clone(), None), opts())
}

/// The style of the first cell showing `needle`.
fn style_at(t: &Terminal<TestBackend>, needle: &str) -> Option<(ratatui::style::Color, ratatui::style::Color)> {
    let buf = t.backend().buffer();
    for y in 0..buf.area.height {
        let row: Vec<&str> = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
        let line = row.concat();
        if let Some(at) = line.find(needle) {
            // Cells, not bytes: count the symbols before the match.
            let mut bytes = 0;
            let x = row.iter().position(|s| {
                let here = bytes;
                bytes += s.len();
                here >= at
            })?;
            let cell = &buf[(x as u16, y)];
            return Some((cell.fg, cell.bg));
        }
    }
    None
}

#[test]
fn long_lines_scroll_sideways_and_wrap() {
    let long = |v: u32| format!("const settings = {{ {} retries: {v} }};\n", "name: \"shop\", ".repeat(8));
    let repo = edits(&[("src/settings.js", &format!("// top\n{}", long(3)), &format!("// top\n{}", long(5)))]);
    let mut app = app_at(&repo);
    let mut t = term(100, 20);
    run(&mut app, &mut t, "");
    // The edit is at the end of a 150-column line: selecting it scrolls sideways to it.
    let s = text(&t);
    assert!(s.contains("retries: 3") && s.contains("retries: 5"), "{s}");
    assert!(s.contains("col 121+"), "the pane says where it is: {s}");
    assert!(s.contains('‹'), "a line scrolled sideways says so: {s}");
    // ← scrolls back to column 1, where the line is cut at the pane's edge, marked.
    run(&mut app, &mut t, &format!("<tab>{}<lt><lt>", "<left>".repeat(13)));
    assert_eq!((app.pane.hscroll, app.focus), (0, Focus::Diff));
    let s = text(&t);
    assert!(!s.contains("retries: 5"), "{s}");
    assert!(s.contains('›'), "a cut line says there is more: {s}");
    // → (or > from anywhere) goes there again; at column 1 ← goes back to the tree.
    run(&mut app, &mut t, &format!("{}>>", "<right>".repeat(13)));
    assert!(text(&t).contains("retries: 5"));
    run(&mut app, &mut t, &format!("{}<lt><lt>", "<left>".repeat(13)));
    run(&mut app, &mut t, "<left>");
    assert_eq!(app.focus, Focus::Tree);
    // w wraps: the whole line shows, on more rows, from anywhere.
    run(&mut app, &mut t, "w");
    let s = text(&t);
    assert!(s.contains("retries: 5") && s.contains("wrap"), "{s}");
    insta::assert_snapshot!("long_line_wrapped", s);
    run(&mut app, &mut t, "w");
    assert!(!text(&t).contains("retries: 5"));
}

#[test]
fn hunk_jumps_and_search_in_the_diff() {
    let pre: String = (1..=60).map(|i| format!("line {i}\n")).collect();
    let post = pre
        .replace("line 5\n", "line five\n")
        .replace("line 30\n", "line thirty\n")
        .replace("line 55\n", "line fifty-five\n");
    let repo = edits(&[("notes.txt", &pre, &post)]);
    let mut app = app_at(&repo);
    let mut t = term(100, 16);
    run(&mut app, &mut t, "]");
    // The pane's row `n` (the first row: its scrolled verdict, then the hunk header).
    let row = |t: &Terminal<TestBackend>, n: usize| -> String {
        let s = text(t);
        let line = s.lines().nth(n).unwrap_or_default().to_string();
        line.split(['│', '┃']).nth(3).unwrap_or(&line).trim().to_string()
    };
    let top = |t: &Terminal<TestBackend>| row(t, 2);
    assert_eq!(row(&t, 1), "● completed, not yet verified", "{}", text(&t));
    assert!(text(&t).contains("hunk 1 of 3"), "{}", text(&t));
    assert_eq!(top(&t), "@@ -2,7 +2,7 @@");
    run(&mut app, &mut t, "]");
    assert_eq!(top(&t), "@@ -27,7 +27,7 @@");
    assert!(text(&t).contains("hunk 2 of 3"));
    run(&mut app, &mut t, "[");
    assert_eq!(top(&t), "@@ -2,7 +2,7 @@");
    // `/` in the diff pane searches the diff (on the tree it filters).
    run(&mut app, &mut t, "<tab>/fifty<enter>");
    let s = text(&t);
    assert!(s.contains("/fifty: match 1 of 1"), "{s}");
    assert!(s.contains("line fifty-five"), "{s}");
    assert_eq!(app.tree.filter, "", "the search is not a filter");
    assert_eq!(style_at(&t, "fifty-five").map(|s| s.1), Some(ratatui::style::Color::Yellow), "the match is marked");
    assert_ne!(style_at(&t, "-five").map(|s| s.1), Some(ratatui::style::Color::Yellow), "only the match");
    // Smart case, n/N cycle through the matches and wrap around.
    run(&mut app, &mut t, "g/line<enter>");
    assert!(text(&t).contains("match 1 of"), "{}", text(&t));
    let first = app.diff_scroll;
    run(&mut app, &mut t, "n");
    assert!(app.diff_scroll > first && text(&t).contains("match 2 of"));
    run(&mut app, &mut t, "NN");
    assert!(text(&t).contains(&format!("match {0} of {0}", pane_matches(&app, "line"))), "{}", text(&t));
    run(&mut app, &mut t, "/nowhere<enter>");
    assert!(text(&t).contains("not found: nowhere"));
    // Esc clears the search, then goes back to the tree.
    run(&mut app, &mut t, "<esc>");
    assert_eq!((app.pane.search.as_deref(), app.focus), (None, Focus::Diff));
    run(&mut app, &mut t, "<esc>");
    assert_eq!(app.focus, Focus::Tree);
}

/// `12-01 00:54` (triage records carry the real clock) → `MM-DD hh:mm`.
fn mask_times(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let shape = "00-00 00:00";
    let fits = |at: usize| {
        shape
            .chars()
            .enumerate()
            .all(|(i, p)| chars.get(at + i).is_some_and(|&c| if p == '0' { c.is_ascii_digit() } else { c == p }))
    };
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if fits(i) {
            out.push_str("MM-DD hh:mm");
            i += shape.len();
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn pane_matches(app: &App, q: &str) -> usize {
    walj::tui::pane::matches(app.current_diff().unwrap(), q).len()
}

#[test]
fn full_screen_collapse_all_and_session_jumps() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    run(&mut app, &mut t, "s");
    // Full screen: the focused pane alone; f again (or Esc) brings both back.
    run(&mut app, &mut t, "<tab>f");
    let s = text(&t);
    assert!(!s.contains("walj ·") && s.contains("\"retries\": 5"), "{s}");
    insta::assert_snapshot!("full_screen_diff", s);
    run(&mut app, &mut t, "<tab>");
    let s = text(&t);
    assert!(s.contains("walj ·") && !s.contains("\"retries\": 5"), "the tree alone: {s}");
    run(&mut app, &mut t, "f");
    assert!(text(&t).contains("walj ·") && text(&t).contains("\"retries\": 5"));
    // Collapse all: one row per session; expand all: every row.
    let all = app.tree.rows.len();
    run(&mut app, &mut t, "-");
    assert_eq!(app.tree.rows.len(), app.tree.views.len(), "{}", text(&t));
    assert_eq!(app.tree.views.len(), 2);
    run(&mut app, &mut t, "+");
    assert!(app.tree.rows.len() >= all, "{}", text(&t));
    // } and { jump between sessions.
    run(&mut app, &mut t, "g}");
    let second = app.tree.cursor;
    assert!(second > 0 && app.tree.rows[second].depth == 0);
    run(&mut app, &mut t, "}");
    assert_eq!(app.tree.cursor, second, "no session after the last");
    assert!(text(&t).contains("last session"));
    run(&mut app, &mut t, "{");
    assert_eq!(app.tree.cursor, 0);
}

#[test]
fn y_copies_through_the_terminal() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    let mut script = Script::new().keys("y");
    run_loop(&mut t, &mut script, &mut app).unwrap();
    let s = text(&t);
    assert!(s.contains("[p] path  config/settings.json") && s.contains("Enter: path"), "{s}");
    let mut script = Script::new().keys("<enter>yiyr");
    run_loop(&mut t, &mut script, &mut app).unwrap();
    assert_eq!(script.copied, ["config/settings.json", "toolu_01EditCfg", &format!("claude --resume {CRASHED}")]);
    assert!(text(&t).contains("copied the resume line: claude --resume"), "{}", text(&t));
    // On a session node: the resume line first.
    let mut script = Script::new().keys("gy<enter>");
    run_loop(&mut t, &mut script, &mut app).unwrap();
    assert_eq!(script.copied, [format!("claude --resume {CRASHED}")]);
}

#[cfg(unix)]
#[test]
fn e_opens_the_editor_at_the_change_and_reloads() {
    use std::os::unix::fs::PermissionsExt;
    let pre: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let post = pre.replace("line 12\n", "line twelve\n");
    let repo = edits(&[("notes.txt", &pre, &post)]);
    let tmp = tempfile::tempdir().unwrap();
    // The editor: records its arguments, then takes the change out by hand.
    let script = tmp.path().join("ed.sh");
    std::fs::write(&script, "#!/bin/sh\necho \"$@\" > \"$0.args\"\nsed -i 's/line twelve/line 12/' \"$2\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let editor = Some(format!("{}", script.display()));
    let mut app = App::new(Project::at(repo.root.clone(), None), AppOptions { editor, ..opts() });
    let mut t = term(100, 24);
    run(&mut app, &mut t, "");
    assert!(text(&t).contains("+1 -1"), "{}", text(&t));
    run(&mut app, &mut t, "e");
    let args = std::fs::read_to_string(tmp.path().join("ed.sh.args")).unwrap();
    assert_eq!(args.trim(), format!("+12 {}", repo.root.join("notes.txt").display()));
    // Back: the journal and the disk read again, the diff shows the file as edited.
    let s = text(&t);
    assert!(s.contains("edited notes.txt: reloaded"), "{s}");
    assert!(s.contains("no changes: pre-image and disk are identical"), "{s}");
}

#[test]
fn redo_after_undo_and_the_operation_list() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(120, 30);
    // Mark done, undo, redo: the entry ends done, each step a record.
    run(&mut app, &mut t, "d");
    assert_eq!(f.records(op::RESOLVED).len(), 1);
    run(&mut app, &mut t, "u");
    assert_eq!(f.records(op::UNDO).len(), 1);
    assert!(app.fold.entry("toolu_01EditCfg").unwrap().is_unresolved());
    run(&mut app, &mut t, "<ctrl+r>");
    assert_eq!(f.records(op::RESOLVED).len(), 2, "{}", text(&t));
    assert!(!app.fold.entry("toolu_01EditCfg").unwrap().is_unresolved());
    // Nothing more to redo.
    run(&mut app, &mut t, "<ctrl+r>");
    assert!(text(&t).contains("nothing to redo"), "{}", text(&t));
    // A redone revert asks again, like the first time.
    run(&mut app, &mut t, "gjjry");
    assert_eq!(f.repo.read("src/server.js"), SERVER_PRE, "{}", text(&t));
    run(&mut app, &mut t, "u");
    assert_eq!(f.repo.read("src/server.js"), SERVER_POST);
    run(&mut app, &mut t, "<ctrl+r>");
    assert!(text(&t).contains("Enter: revert (y)"), "{}", text(&t));
    run(&mut app, &mut t, "<enter>");
    assert_eq!(f.repo.read("src/server.js"), SERVER_PRE);
    // The operation list: newest first, undone ones say so.
    run(&mut app, &mut t, "o");
    let s = text(&t);
    let rows: Vec<&str> = s.lines().filter(|l| l.contains("reverted") || l.contains("marked done")).collect();
    assert_eq!(rows.len(), 4, "{s}");
    assert!(rows[0].contains("reverted") && rows[0].contains("src/server.js") && !rows[0].contains("undone"));
    assert!(rows[1].contains("reverted") && rows[1].contains("(undone)"), "{s}");
    assert!(rows[2].contains("marked done") && rows[2].contains("config/settings.json") && !rows[2].contains("undone"));
    assert!(rows[3].contains("marked done") && rows[3].contains("(undone)"));
    insta::assert_snapshot!("operations", mask_times(&s));
    // Any key closes it.
    run(&mut app, &mut t, "x");
    assert!(app.operations.is_none());
}

#[test]
fn no_color_and_light_themes_keep_their_cues() {
    use ratatui::style::{Color, Modifier};
    use walj::tui::theme::Theme;
    let f = Fixture::new();
    let mut t = term(120, 30);
    let mut app = App::new(f.project(), AppOptions { theme: Theme::Mono, ..opts() });
    run(&mut app, &mut t, "");
    let buf = t.backend().buffer().clone();
    assert!(buf.content.iter().all(|c| c.fg == Color::Reset && c.bg == Color::Reset), "NO_COLOR: no colour at all");
    // The selected row is reversed, the focused pane has a thick border and a ▶.
    let row = (0..buf.area.height).find(|&y| {
        (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>().contains("● config/settings.json")
    });
    let row = row.expect("the selected entry");
    assert!(buf[(10, row)].modifier.contains(Modifier::REVERSED), "selected row reversed");
    let other = row + 2;
    assert!(!buf[(10, other)].modifier.contains(Modifier::REVERSED), "other rows not");
    let s = text(&t);
    assert!(s.starts_with("┏▶ walj"), "{s}");
    insta::assert_snapshot!("no_color", s);
    // Light: dark text, light backgrounds.
    let mut app = App::new(f.project(), AppOptions { theme: Theme::Light, ..opts() });
    run(&mut app, &mut t, "");
    let buf = t.backend().buffer();
    assert_eq!(buf[(10, row)].bg, Color::Indexed(253), "a light selection");
    assert!(buf.content.iter().all(|c| !matches!(c.fg, Color::White | Color::Gray)), "no light text on light");
    // Chosen by the environment and the config.
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    };
    assert_eq!(Theme::detect(None, env(&[("NO_COLOR", "1")])), Ok(Theme::Mono));
    assert_eq!(Theme::detect(None, env(&[("COLORFGBG", "0;15")])), Ok(Theme::Light));
    assert_eq!(Theme::detect(None, env(&[("COLORFGBG", "15;default;0")])), Ok(Theme::Dark));
    assert_eq!(Theme::detect(Some("light"), env(&[("NO_COLOR", "1")])), Ok(Theme::Light));
    assert!(Theme::detect(Some("pink"), env(&[])).is_err());
    f.repo.write(".walj/config.toml", "[theme]\nmode = \"mono\"\n");
    assert_eq!(walj::tui::load_theme(&f.project()).unwrap(), Theme::Mono);
    f.repo.write(".walj/config.toml", "[theme]\nmood = \"mono\"\n");
    assert!(walj::tui::load_theme(&f.project()).unwrap_err().to_string().contains("[theme] mood"));
}

#[test]
fn narrow_screens_keep_what_matters() {
    let deep = "src/components/checkout/forms/address/validation/PostalCodeField.tsx";
    let repo = edits(&[
        (deep, "a\n", "b\n"),
        ("src/server.js", "1\n", "2\n"),
        ("src/server.js", "2\n", "3\n"),
        ("src/server.js", "3\n", "4\n"),
    ]);
    let mut app = app_at(&repo);
    let mut t = term(80, 20);
    run(&mut app, &mut t, "");
    let s = text(&t);
    // A long path keeps its start and its file name.
    let row = s.lines().find(|l| l.contains("PostalCodeField.tsx")).unwrap_or_else(|| panic!("{s}"));
    assert!(row.contains("src/") && row.contains('…'), "{row}");
    // The same path three times: each row says which tool call it is.
    let rows: Vec<&str> = s.lines().filter(|l| l.contains("src/server.js")).collect();
    assert_eq!(rows.len(), 3, "{s}");
    // Its shown id: the shortest unique start after `toolu_01`, at least 4 characters
    // (toolu_01Editxxxxxxxx, toolu_02Editxxxxxxxx, toolu_03Editxxxxxxxx).
    for (r, tag) in rows.iter().zip(["#Edit ", "#02Ed ", "#03Ed "]) {
        assert!(r.contains(&format!("src/server.js {tag}")), "{r}");
    }
    // The footer drops keys from the middle: help and quit stay.
    let footer = s.lines().nth(19).unwrap_or_default();
    assert!(footer.trim_end().ends_with("? help  q quit"), "{footer}");
    // Too small to draw: it says so.
    let mut t = term(36, 7);
    run(&mut app, &mut t, "");
    let s = text(&t);
    assert!(s.contains("walj needs 40×8") && s.contains("36×7"), "{s}");
    // Help scrolls and says so.
    let mut t = term(80, 24);
    run(&mut app, &mut t, "?");
    let s = text(&t);
    assert!(s.contains("lines 1-20 of") && s.contains("move") && s.contains("diff"), "{s}");
    run(&mut app, &mut t, "jjj");
    assert!(text(&t).contains("lines 4-23 of"), "{}", text(&t));
    run(&mut app, &mut t, "G");
    let s = text(&t);
    assert!(s.contains("dialogs") && s.contains("Rebind"), "the end: {s}");
}

#[test]
fn wide_and_control_characters_leave_nothing_behind() {
    let names = [
        "docs/👨\u{200d}👩\u{200d}👧 family.md",
        "i18n/🇫🇷/notes.md",
        "evil\u{202e}gpj.exe",
        "line\nbreak.txt",
        "bell\u{7}.txt",
    ];
    let files: Vec<(&str, &str, &str)> = names.iter().map(|n| (*n, "a\n", "b 👍\u{1f3fd} \u{1b}[31mred\n")).collect();
    let repo = edits(&files);
    let mut app = app_at(&repo);
    let mut t = term(100, 24);
    run(&mut app, &mut t, "");
    let s = cells_text(t.backend().buffer());
    assert!(s.contains("docs/👨👩👧 family.md"), "{s}");
    assert!(s.contains("i18n/FR/notes.md"), "{s}");
    assert!(s.contains("evil\\u{202e}gpj.exe"), "the override is shown, not obeyed: {s}");
    assert!(s.contains("line\\nbreak.txt") && s.contains("bell\\x07.txt"), "{s}");
    assert!(s.contains("+b 👍 \\x1b[31mred"), "{s}");
    // No cell holds a char whose width terminals disagree on, and every row is exactly as
    // wide as the screen (a ghost cell would push or pull the rest of the row).
    let buf = t.backend().buffer();
    for c in &buf.content {
        assert!(
            !c.symbol().chars().any(|ch| matches!(ch, '\u{200d}' | '\u{fe0f}' | '\u{202e}' | '\u{1f1e6}'..='\u{1f1ff}' | '\u{1f3fb}'..='\u{1f3ff}') || ch.is_control()),
            "{:?}",
            c.symbol()
        );
    }
    use unicode_width::UnicodeWidthStr;
    for y in 0..buf.area.height {
        let mut w = 0;
        let mut x = 0;
        while x < buf.area.width {
            let sym = buf[(x, y)].symbol();
            let cw = sym.width().max(1);
            w += cw;
            x += cw as u16;
        }
        assert_eq!(w, buf.area.width as usize, "row {y}");
    }
}

/// The screen as a terminal shows it: a wide char's second cell is not a space.
fn cells_text(buf: &Buffer) -> String {
    use unicode_width::UnicodeWidthStr;
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut x = 0;
        while x < buf.area.width {
            let sym = buf[(x, y)].symbol();
            out.push_str(sym);
            x += sym.width().max(1) as u16;
        }
        out.push('\n');
    }
    out
}

#[test]
fn eol_only_change_is_labelled() {
    let crlf: String = (1..=200).map(|i| format!("row {i}\r\n")).collect();
    let lf = crlf.replace("\r\n", "\n");
    let repo = edits(&[("data.csv", &crlf, &lf)]);
    let mut app = app_at(&repo);
    let mut t = term(100, 20);
    run(&mut app, &mut t, "");
    let s = text(&t);
    assert!(s.contains("line endings only (CRLF → LF)"), "{s}");
    assert!(s.contains("only line endings changed (CRLF → LF, 200 lines)"), "{s}");
    assert!(!s.contains("+200") && !s.contains("-200"), "{s}");
}

/// A crashed Codex session: its context names Codex CLI (its process, its last message) and
/// `y` copies `codex resume ID`, the command that reopens it.
#[test]
fn a_codex_session_is_named_and_resumed_as_codex() {
    const CODEX: &str = "01a22f27-b866-7913-8158-c0a5decb3c24";
    let repo = Repo::new(&[("a.txt", "hello\n")]);
    let project = Project::at(repo.root.clone(), None);
    project.ensure_dir().unwrap();
    let store = Store::new(project.store_dir());
    let codex = |r: Record| r.with("agent", "codex");
    let mut recs = vec![
        codex(session_rec(CODEX, "2026-03-01T10:00:00.000Z", kind::START)),
        codex(session_rec(CODEX, "2026-03-01T10:00:01.000Z", kind::PROMPT).with("prompt", "Shout the greeting")),
        codex(session_rec(CODEX, "2026-03-01T10:00:05.000Z", kind::STOP).with("last_assistant_message", "Shouted.")),
        codex(session_rec(CODEX, "2026-03-01T10:01:00.000Z", kind::PROMPT).with("prompt", "Now whisper it")),
    ];
    let mut r =
        file_rec(op::INTENT, CODEX, "2026-03-01T10:01:02.000Z", "call_X1", "apply_patch", "a.txt", "file_modified");
    r.before = Some(Blob::Id(store.put(b"hello\n").unwrap()));
    recs.push(r);
    let mut r =
        file_rec(op::APPLIED, CODEX, "2026-03-01T10:01:03.000Z", "call_X1", "apply_patch", "a.txt", "file_modified");
    r.after = Some(Blob::Id(store.put(b"hi\n").unwrap()));
    recs.push(r);
    JournalWriter::new(&project.journal).append_all(&recs).unwrap();
    repo.write("a.txt", "hi\n");
    let mut app = App::new(project, opts());
    let mut t = term(140, 40);
    run(&mut app, &mut t, "gg");
    let s = text(&t);
    for want in ["its Codex CLI process is gone", "Codex CLI's last message", &format!("codex resume {CODEX}")] {
        assert!(s.contains(want), "{want:?} in:\n{s}");
    }
    assert!(!s.contains("Claude"), "{s}");
    let mut script = Script::new().keys("gy<enter>");
    run_loop(&mut t, &mut script, &mut app).unwrap();
    assert_eq!(script.copied, [format!("codex resume {CODEX}")]);
}

// ------------------------------------------------------------- other machines

/// `walj ARGS` in `dir` as a machine of its own (HOME `home`, no user git config).
fn walj_in(dir: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new(walj_bin())
        .arg("--project")
        .arg(dir)
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env_remove("WALJ_PASSPHRASE")
        .output()
        .unwrap();
    let (o, e) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "walj {args:?}\n{o}\n{e}");
    o.into_owned()
}

/// The demo's crashed session on a "laptop", synced through a bare repository to a
/// "desktop" clone with no session of its own. Returns (tmp, laptop, desktop, desktop HOME).
fn synced_desktop() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let (tmp, root) = scratch();
    let laptop = root.join("laptop");
    walj::tui::demo::build(&laptop, &walj_bin()).unwrap();
    crate::common::git(&root, &["init", "-q", "--bare", "remote.git"]);
    crate::common::git(&laptop, &["remote", "add", "origin", root.join("remote.git").to_str().unwrap()]);
    crate::common::git(&laptop, &["push", "-q", "-u", "origin", "HEAD"]);
    crate::common::git(&root, &["clone", "-q", root.join("remote.git").to_str().unwrap(), "desktop"]);
    let desktop = std::fs::canonicalize(root.join("desktop")).unwrap();
    for (dir, name) in [(&laptop, "laptop"), (&desktop, "desktop")] {
        std::fs::create_dir_all(dir.join(".walj")).unwrap();
        let cfg = dir.join(".walj/config.toml");
        let old = std::fs::read_to_string(&cfg).unwrap_or_default();
        std::fs::write(&cfg, format!("{old}\n[sync]\nname = \"{name}\"\n")).unwrap();
    }
    let (home_l, home_d) = (root.join("home-laptop"), root.join("home-desktop"));
    std::fs::create_dir_all(&home_l).unwrap();
    std::fs::create_dir_all(&home_d).unwrap();
    walj_in(&laptop, &home_l, &["sync", "--yes"]);
    walj_in(&desktop, &home_d, &["sync", "--yes"]);
    // A fixed sync time, so the header is the same at every run.
    let remotes = desktop.join(".walj/remotes");
    for d in std::fs::read_dir(&remotes).unwrap().flatten().filter(|d| d.path().join("manifest.json").is_file()) {
        let m = d.path().join("manifest.json");
        let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
        v["synced_at"] = "2026-03-01T10:25:00.000Z".into();
        std::fs::write(&m, serde_json::to_vec(&v).unwrap()).unwrap();
    }
    (tmp, laptop, desktop, home_d)
}

/// Digits of times and ages replaced: the demo writes its journal at the time it runs.
fn no_times(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_digit() { '9' } else { c }).collect()
}

#[test]
fn other_machines_sessions_are_grouped_under_their_name() {
    let (_tmp, _laptop, desktop, home) = synced_desktop();
    let mut app = App::new(Project::at(desktop.clone(), None), opts());
    let mut t = term(120, 30);
    run(&mut app, &mut t, "");
    let s = text(&t);
    // The laptop's header, as of its last sync, then its crashed session and entries.
    assert!(s.contains("laptop") && s.contains("laptop 6 open (as of last sync 03-01 10:25)"), "{s}");
    let lines: Vec<&str> = s.lines().collect();
    let header = lines.iter().position(|l| l.contains("(as of last sync")).unwrap();
    assert!(lines[header + 1].contains("8f14e4"), "the session under its machine:\n{s}");
    assert!(s.contains("config/settings.json"), "{s}");
    let journal = app.sync.remotes[0].id.clone();
    insta::assert_snapshot!("other_machine_grouped", no_times(&s.replace(&journal, "JOURNAL-ID")));

    // The header's detail: whose journal and what the keys do.
    let header_row = app.tree.rows.iter().position(|r| r.item.is_remote()).unwrap();
    app.tree.cursor = header_row;
    run(&mut app, &mut t, "");
    let s = text(&t);
    assert!(s.contains("as of the last sync from laptop"), "{s}");
    assert!(s.contains("r is refused"), "{s}");

    // The laptop's settings edit: its synced images, diffed against this checkout's disk.
    app.tree.cursor = app
        .tree
        .rows
        .iter()
        .position(|r| match r.item {
            walj::tui::tree::Item::RemoteEntry(mi, _, ei) => {
                app.sync.remotes[app.tree.machines[mi].remote].fold.entries[ei].path == "config/settings.json"
            }
            _ => false,
        })
        .unwrap();
    run(&mut app, &mut t, "2");
    let s = text(&t);
    assert!(s.contains("from laptop, as of the last sync from laptop"), "{s}");
    assert!(s.contains("\"retries\": 5"), "the laptop's applied image:\n{s}");

    // r is refused, as `walj revert` refuses another machine's id; nothing is written.
    let before = std::fs::read(desktop.join(".walj/journal.jsonl")).unwrap_or_default();
    run(&mut app, &mut t, "r");
    let s = text(&t);
    assert!(app.dialog.is_none(), "no revert dialog");
    assert!(s.contains("laptop's entries are not reverted here"), "{s}");
    assert_eq!(std::fs::read(desktop.join(".walj/journal.jsonl")).unwrap_or_default(), before);

    // The CLI does the same: `walj revert` of the laptop's id names no entry here.
    let id = app.selected_entry().unwrap().id.clone();
    let cli = Command::new(walj_bin())
        .arg("--project")
        .arg(&desktop)
        .args(["revert", &id])
        .current_dir(&desktop)
        .env("HOME", &home)
        .env("NO_COLOR", "1")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .output()
        .unwrap();
    assert!(!cli.status.success(), "{}", String::from_utf8_lossy(&cli.stdout));
    assert_eq!(std::fs::read(desktop.join(".walj/journal.jsonl")).unwrap_or_default(), before);

    // d marks it done through `walj mark`'s remote path: a `remote` record here, and the
    // entry resolved in the laptop's group at once.
    run(&mut app, &mut t, "d");
    if app.dialog.is_some() {
        run(&mut app, &mut t, "<enter>");
    }
    let s = text(&t);
    assert!(s.contains("of laptop done here; laptop records it at its next sync"), "{s}");
    let recs = records_with_op(&desktop, op::REMOTE);
    assert!(recs.iter().any(|r| r.id == id), "{recs:?}");
    let e = app.sync.remotes[0].fold.entries.iter().find(|e| e.id == id);
    assert!(e.is_none_or(|e| !e.is_unresolved()), "resolved in the laptop's group: {e:?}");

    // H hands the next one back the same way (`walj handoff`'s remote path).
    let next = app.selected_entry().unwrap().id.clone();
    assert_ne!(next, id);
    run(&mut app, &mut t, "H");
    let note = app.dialog.as_ref().map(|d| d.note.join(" ")).unwrap_or_default();
    assert!(note.contains("laptop records it at its next `walj sync`; u does not undo it"), "{note}");
    if app.dialog.is_some() {
        run(&mut app, &mut t, "<enter>");
    }
    let s = text(&t);
    assert!(s.contains("handed back 1 entry"), "{s}");
    assert!(records_with_op(&desktop, op::REMOTE).iter().any(|r| r.id == next));
    // u does not take a remote mark back, as `walj undo` does not.
    let n = journal_records(&desktop).len();
    run(&mut app, &mut t, "u");
    assert!(text(&t).contains("is not undone here"), "{}", text(&t));
    assert_eq!(journal_records(&desktop).len(), n);
}

/// Issue 18: a reload reads other machines' copies again only when one of them changed (a
/// sync replaced its journal or manifest, this checkout decided about its entries, `R`); a
/// change of this checkout's journal keeps them, with ids shown unique against its new ones.
#[test]
fn a_reload_reads_the_copies_again_only_when_one_of_them_changed() {
    let (_tmp, _laptop, desktop, _home) = synced_desktop();
    let project = Project::at(desktop.clone(), None);
    let mut app = App::new(project.clone(), opts());
    let mut t = term(120, 30);
    run(&mut app, &mut t, "");
    assert_eq!(app.sync.loads, 1);
    // A mark in memory only: gone when the copies are read again.
    let mark = |app: &mut App| app.sync.remotes[0].manifest.name = "MARKED".into();
    let marked = |app: &App| app.sync.remotes[0].manifest.name == "MARKED";
    mark(&mut app);

    // This checkout's journal grows by an id that the laptop's `toolu_01EditCfg` starts.
    let theirs = "toolu_01EditCfg";
    assert_eq!(app.sync.remotes[0].fold.ids.short(theirs), "EditC");
    let mine = file_rec(
        op::INTENT,
        "5e55a0b1-0000-4000-8000-00000000d0d0",
        "2026-03-01T10:30:00.000Z",
        "toolu_01EditCfgX",
        "Edit",
        "config/x.json",
        "file_modified",
    );
    JournalWriter::new(&project.journal).append(&mine).unwrap();
    assert!(app.poll_journal(), "the journal changed");
    assert!(marked(&app), "the copies were kept");
    assert_eq!(app.sync.loads, 1);
    assert_eq!(app.sync.remotes[0].fold.ids.short(theirs), "EditCfg", "unique against this journal's new id");
    assert_eq!(app.fold.ids.short("toolu_01EditCfgX"), "EditCfgX");
    assert!(!app.poll_journal(), "nothing changed");

    // A sync replaces a copy's manifest (a rename): read again, at the next poll.
    let copy = std::fs::read_dir(desktop.join(".walj/remotes"))
        .unwrap()
        .flatten()
        .find(|d| d.path().join("manifest.json").is_file())
        .unwrap()
        .path();
    let m = copy.join("manifest.json");
    let tmp = copy.join("manifest.json.tmp");
    std::fs::copy(&m, &tmp).unwrap();
    std::fs::rename(&tmp, &m).unwrap();
    assert!(app.poll_journal(), "a copy changed");
    assert!(!marked(&app));
    assert_eq!(app.sync.loads, 2);
    assert_eq!(app.sync.remotes[0].fold.ids.short(theirs), "EditCfg");

    // A decision about the laptop's entry (its sidecar): read again, the entry resolved.
    mark(&mut app);
    let row = app.tree.rows.iter().position(|r| matches!(r.item, walj::tui::tree::Item::RemoteEntry(..))).unwrap();
    app.tree.cursor = row;
    let id = app.selected_entry().unwrap().id.clone();
    run(&mut app, &mut t, "d");
    if app.dialog.is_some() {
        run(&mut app, &mut t, "<enter>");
    }
    assert!(!marked(&app));
    assert!(app.sync.remotes[0].fold.entry(&id).is_none_or(|e| !e.is_unresolved()));
    let loads = app.sync.loads;

    // `R` reads everything again.
    mark(&mut app);
    run(&mut app, &mut t, "R");
    assert!(!marked(&app));
    assert_eq!(app.sync.loads, loads + 1);
}

// ------------------------------------------------------- what changed, in view

/// A 733-column line whose only change is at column 707 (706 columns before it), as in
/// a real crash: one line of minified JSON.
fn far_change() -> Repo {
    let line = |c: char| format!("{}{c}{}}}\n", "x".repeat(706), "y".repeat(25));
    edits(&[("data/min.json", &format!("{{\n{}", line('Q')), &format!("{{\n{}", line('Z')))])
}

#[test]
fn the_change_at_column_706_shows_without_a_key_press() {
    for (w, h) in [(200, 50), (80, 24), (60, 15)] {
        let repo = far_change();
        let mut app = app_at(&repo);
        let mut t = term(w, h);
        run(&mut app, &mut t, "");
        let s = text(&t);
        // Both sides of the change on screen, and the pane says how far it scrolled.
        assert!(s.contains("xQy") && s.contains("xZy"), "{w}×{h}: {s}");
        assert!(s.contains("col ") && s.contains('‹'), "{w}×{h}: {s}");
        if w == 60 {
            insta::assert_snapshot!("column_706_at_60x15", s);
        }
    }
}

#[test]
fn narrow_screens_stack_the_tree_above_the_diff() {
    let f = Fixture::new();
    for (w, h) in [(80, 24), (60, 15)] {
        let mut app = f.app();
        let mut t = term(w, h);
        run(&mut app, &mut t, "");
        let s = text(&t);
        let lines: Vec<&str> = s.lines().collect();
        // The tree's box spans the width on top; the diff's box is below it, its change shown.
        assert!(lines[0].starts_with('┏') && lines[0].trim_end().ends_with('┓'), "{w}×{h}: {s}");
        let diff_top = lines.iter().position(|l| l.starts_with('╭')).unwrap_or_else(|| panic!("{s}"));
        assert!(diff_top > 3, "{w}×{h}: {s}");
        assert!(lines[diff_top..].iter().any(|l| l.contains("\"retries\": 5")), "{w}×{h}: the diff shows: {s}");
        if w == 80 {
            insta::assert_snapshot!("stacked_80x24", s);
        }
    }
    // Wide screens keep the panes side by side.
    let mut app = f.app();
    let mut t = term(200, 50);
    run(&mut app, &mut t, "");
    let s = text(&t);
    assert!(s.lines().next().unwrap_or_default().contains('╭'), "{s}");
}

#[test]
fn a_search_match_off_screen_is_scrolled_into_view() {
    let pre = format!("{}needle tail\nold\n", "a".repeat(300));
    let post = format!("{}needle tail\nnew\n", "a".repeat(300));
    let repo = edits(&[("notes.txt", &pre, &post)]);
    let mut app = app_at(&repo);
    let mut t = term(120, 30);
    run(&mut app, &mut t, "");
    assert!(!text(&t).contains("needle"), "the change is at column 1: no sideways scroll yet");
    run(&mut app, &mut t, "<tab>/needle<enter>");
    let s = text(&t);
    assert!(s.contains("match 1 of 1") && s.contains("aneedle tail"), "{s}");
    // w wraps from column 1 again.
    run(&mut app, &mut t, "w");
    assert_eq!(app.pane.hscroll, 0);
}

#[test]
fn a_drift_made_while_the_tui_runs_shows_at_once() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(200, 50);
    run_loop(&mut t, &mut Script::new().tick(), &mut app).unwrap();
    let s = text(&t);
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("config/settings.json"));
    assert!(s.contains("applied") && !s.contains("drifted") && !s.contains("\"retries\": 9"), "{s}");
    // Another program (an editor) writes the selected file; the journal does not change.
    let journal = std::fs::read(f.project().journal).unwrap();
    f.repo.write("config/settings.json", "{\n  \"retries\": 9,\n  \"timeout_ms\": 500\n}\n");
    run_loop(&mut t, &mut Script::new().tick(), &mut app).unwrap();
    let s = text(&t);
    assert!(s.contains("drifted") && s.contains("\"retries\": 9"), "{s}");
    assert_eq!(std::fs::read(f.project().journal).unwrap(), journal, "only looked");
    // `walj diff` says the same.
    let out = Command::new(walj_bin()).current_dir(&f.repo.root).args(["diff", "EditCfg"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("drifted"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_file_changed_before_it_is_selected_is_read_again() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(200, 50);
    run(&mut app, &mut t, "");
    f.repo.write("src/server.js", "const port = 4000;\n");
    // No tick: selecting it is enough.
    run(&mut app, &mut t, "jj");
    let s = text(&t);
    assert_eq!(app.selected_entry().map(|e| e.path.as_str()), Some("src/server.js"));
    assert!(s.contains("drifted") && s.contains("port = 4000"), "{s}");
}

#[test]
fn the_filter_matches_paths_ids_sessions_and_prompts_behind_p_and_counts() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(200, 50);
    let all = app.tree.filtered.1;
    run(&mut app, &mut t, "/EditSrv<enter>");
    let s = text(&t);
    assert!(s.contains(&format!("1 of {all}")) && s.contains("src/server.js"), "{s}");
    assert!(!s.contains("config/settings.json"), "{s}");
    // A session id, a prompt's words behind `p:`: every entry of that session.
    for q in ["8f14e4", "p:retry count"] {
        run(&mut app, &mut t, &format!("<esc>/{q}<enter>"));
        let s = text(&t);
        assert!(s.contains("src/server.js") && s.contains("config/settings.json"), "{q}: {s}");
        assert!(s.contains(&format!("{all} of {all}")), "{q}: {s}");
    }
    run(&mut app, &mut t, "<esc>/no-such-thing<enter>");
    assert!(text(&t).contains(&format!("0 of {all}")), "{}", text(&t));
    // Without `p:` a prompt's words are no path: they pull in nothing (users filter on paths).
    run(&mut app, &mut t, "<esc>/retry count<enter>");
    assert!(text(&t).contains(&format!("0 of {all}")), "{}", text(&t));
    // An event's title in words matches as its name does.
    run(&mut app, &mut t, "<esc>/file modified<enter>");
    assert!(!text(&t).contains(&format!(" 0 of {all}")), "{}", text(&t));
}

#[test]
fn nothing_to_undo_is_information_and_long_messages_wrap() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(60, 20);
    run(&mut app, &mut t, "u");
    let s = text(&t);
    let status = app.status.clone().unwrap();
    assert!(!status.error && status.text.starts_with("nothing to undo"), "{status:?}");
    assert!(!s.contains('✗'), "{s}");
    // Longer than the screen: on two rows, cut nowhere.
    assert!(status.text.len() > 60, "{status:?}");
    let tail = status.text.split_whitespace().last().unwrap();
    let rows: Vec<&str> = s.lines().collect();
    assert!(rows[rows.len() - 3].contains(tail), "{s}");
    // After an undo, the status says ctrl+r redoes it.
    run(&mut app, &mut t, "du");
    assert!(app.status.as_ref().is_some_and(|s| s.text.ends_with("ctrl+r redoes it")), "{:?}", app.status);
}

#[test]
fn color_never_and_always_reach_the_theme() {
    use anstream::ColorChoice;
    use walj::tui::theme::Theme;
    let f = Fixture::new();
    let project = f.project();
    assert_eq!(walj::tui::load_theme_with(&project, ColorChoice::Never).unwrap(), Theme::Mono);
    std::fs::write(project.config_path(), "[theme]\nmode = \"mono\"\n").unwrap();
    assert_ne!(walj::tui::load_theme_with(&project, ColorChoice::Always).unwrap(), Theme::Mono);
    assert_eq!(walj::tui::load_theme_with(&project, ColorChoice::Auto).unwrap(), Theme::Mono);
}

#[test]
fn undone_history_folds_into_one_line() {
    let f = Fixture::new();
    let mut app = f.app();
    let mut t = term(200, 50);
    // Marked done and undone three times: the entry is open again, its history one line.
    run(&mut app, &mut t, "dududu");
    assert_eq!(app.selected_entry().map(|e| (e.path.as_str(), e.actions.len())), Some(("config/settings.json", 3)));
    let s = text(&t);
    assert!(s.contains("history 3 actions, all undone (2026-"), "{s}");
    assert!(!s.contains("(undone)"), "{s}");
}

/// A subagent's entries sit in their own group under its heading, after the main thread's
/// (journaled through the real hook: an async Agent call, a Write of the main thread, the
/// subagent's command cut off by the crash).
#[test]
fn a_subagents_entries_are_grouped_under_its_heading() {
    let repo = Repo::new(&[("keep.txt", "k\n")]);
    let root = repo.root.clone();
    let s = "9a9a9a9a-tui-subagent-session";
    let hook = |p: serde_json::Value| {
        let mut p = p;
        p["session_id"] = s.into();
        p["transcript_path"] = "/tmp/none.jsonl".into();
        p["cwd"] = root.to_string_lossy().into_owned().into();
        hook_ok(&root, &p.to_string(), Parent::Timeout(20));
    };
    let agent = serde_json::json!({"tool_name": "Agent", "tool_use_id": "toolu_agent",
        "tool_input": {"description": "write the sub log", "prompt": "go", "subagent_type": "general-purpose"}});
    let mut pre = agent.clone();
    pre["hook_event_name"] = "PreToolUse".into();
    hook(pre);
    let mut post = agent;
    post["hook_event_name"] = "PostToolUse".into();
    post["tool_response"] =
        serde_json::json!({"isAsync": true, "status": "async_launched", "agentId": "a7f3c2e9d1b04f66"});
    hook(post);
    let abs = root.join("main.txt");
    hook(serde_json::json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_use_id": "toolu_w",
        "tool_input": {"file_path": abs, "content": "main\n"}}));
    hook(serde_json::json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_sub",
        "agent_id": "a7f3c2e9d1b04f66", "agent_type": "general-purpose",
        "tool_input": {"command": "echo s > sub.log; sleep 60", "description": "sub"}}));
    std::fs::write(root.join("sub.log"), "s\n").unwrap();
    std::fs::write(&abs, "main\n").unwrap();

    let mut app = App::new(Project::at(root.clone(), None), opts());
    let mut t = term(140, 30);
    run(&mut app, &mut t, "");
    let s = text(&t);
    // The tree pane shows the heading's start ("… in the background: still running when the
    // session died" follows, cut at the pane's width).
    let lines: Vec<&str> = s.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("▾ Artifact created · subagent general-purpose \"write"))
        .unwrap_or_else(|| panic!("no subagent group:\n{s}"));
    let row = |needle: &str| lines.iter().position(|l| l.contains(&format!("◐ {needle}"))).unwrap();
    assert!(
        row("main.txt") < at && at < row("sub.log"),
        "the main thread's entry first, the subagent's under its heading:\n{s}"
    );
    // The in-flight Write's intended content explains main.txt: not the subagent's command's too.
    assert_eq!(lines.iter().filter(|l| l.contains("◐ main.txt")).count(), 1, "{s}");
    // The heading in full, in the group's detail.
    let key = walj::tui::tree::NodeKey::Group(
        "9a9a9a9a-tui-subagent-session".into(),
        "Artifact created · subagent general-purpose \"write the sub log\", in the background: still running when the session died".into(),
    );
    assert!(app.tree.rows.iter().any(|r| r.key == key), "{:?}", app.tree.rows);
}

/// A git operation stopped half-way (here `MERGE_HEAD`, as a merge waiting on a conflict
/// leaves it) is said on the status line, as `recover` and the note say it.
#[test]
fn a_merge_in_progress_is_said() {
    let f = Fixture::new();
    let head = f.repo.git(&["rev-parse", "HEAD"]);
    std::fs::write(f.repo.root.join(".git/MERGE_HEAD"), format!("{}\n", head.trim())).unwrap();
    let mut app = f.app();
    let mut t = term(160, 30);
    run(&mut app, &mut t, "");
    let s = text(&t);
    assert!(s.contains("git: a merge is in progress (.git/MERGE_HEAD)"), "{s}");
}

/// A command whose changes went past `[bash] max_changes`: the session's view says under the
/// command how many paths it left out of its entries and which, as `walj recover` does.
#[test]
fn a_command_past_max_changes_is_named_with_what_it_left_out() {
    let repo = Repo::new(&[("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n"), ("d.txt", "d\n"), ("e.txt", "e\n")]);
    let root = repo.root.clone();
    std::fs::create_dir_all(root.join(".walj")).unwrap();
    std::fs::write(root.join(".walj/config.toml"), "[bash]\nmax_changes = 2\n").unwrap();
    let command = "sed -i 's/$/!/' a.txt b.txt c.txt d.txt e.txt";
    for event in ["PreToolUse", "PostToolUse"] {
        if event == "PostToolUse" {
            assert!(Command::new("sh").arg("-c").arg(command).current_dir(&root).status().unwrap().success());
        }
        let payload = serde_json::json!({
            "hook_event_name": event, "session_id": CRASHED, "cwd": root, "tool_name": "Bash",
            "tool_use_id": "toolu_many", "tool_input": {"command": command},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": false},
        });
        hook_ok(&root, &payload.to_string(), Parent::Timeout(60));
    }
    let mut app = App::new(Project::at(root.clone(), None), opts());
    let mut t = term(220, 40);
    run(&mut app, &mut t, "gg");
    let s = text(&t);
    assert!(s.contains("left changes out of its entries"), "{s}");
    assert!(s.contains("3 paths past the limit") && s.contains("c.txt"), "{s}");
}

/// A killed command's change is aged in the list by when it was made (its `changed`, the
/// file's ctime), not by walj's first look at it, so it reads in order beside file tool calls.
#[test]
fn a_killed_commands_change_is_aged_by_when_it_was_made() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let project = Project::at(repo.root.clone(), None);
    project.ensure_dir().unwrap();
    let store = Store::new(project.store_dir());
    let mut recs = vec![session_rec(CRASHED, "2026-03-01T10:00:00.000Z", kind::START)];
    let mut cmd = rec(op::INTENT, CRASHED, "2026-03-01T10:04:00.000Z");
    cmd.id = "toolu_cmd".into();
    cmd.tool = Some("Bash".into());
    cmd.event = "command_run".into();
    recs.push(cmd.with("command", "sed -i s/a/b/ a.txt && sleep 600"));
    // Derived at walj's first look, 10:29:50, from a change made at 10:05.
    let mut r = file_rec(op::APPLIED, CRASHED, "2026-03-01T10:29:50.000Z", "c1", "Bash", "a.txt", "file_modified");
    r.before = Some(Blob::Id(store.put(b"a\n").unwrap()));
    r.after = Some(Blob::Id(store.put(b"b\n").unwrap()));
    r.parent = Some("toolu_cmd".into());
    recs.push(r.with("unfinished", true).with("changed", "2026-03-01T10:05:00.000Z"));
    JournalWriter::new(&project.journal).append_all(&recs).unwrap();
    repo.write("a.txt", "b\n");
    let mut app = App::new(project, opts());
    let mut t = term(120, 30);
    run(&mut app, &mut t, "");
    let s = text(&t);
    let row = s.lines().find(|l| l.contains("a.txt") && l.contains("Bash")).unwrap_or_else(|| panic!("{s}"));
    assert!(row.contains("Bash 25m"), "aged by walj's first look: {row}");
}

/// The detail pane's rows (below its top border) of a stacked screen.
fn detail_rows(s: &str) -> String {
    s.lines().skip_while(|l| !l.starts_with('╭')).collect::<Vec<_>>().join("\n")
}

/// A killed command's change with a long command line: its header (times, the verdict with the
/// command, "caused by") is longer than a small screen's detail pane.
fn killed_long_command() -> Repo {
    let repo = Repo::new(&[("src/app.rs", &(1..=12).map(|i| format!("line {i}\n")).collect::<String>())]);
    let project = Project::at(repo.root.clone(), None);
    project.ensure_dir().unwrap();
    let store = Store::new(project.store_dir());
    let pre: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let post = pre.replace("line 2\n", "line two\n");
    let mut recs = vec![session_rec(CRASHED, "2026-03-01T10:00:00.000Z", kind::START)];
    let mut cmd = rec(op::INTENT, CRASHED, "2026-03-01T10:04:00.000Z");
    cmd.id = "toolu_cmd".into();
    cmd.tool = Some("Bash".into());
    cmd.event = "command_run".into();
    let line = format!(
        "sed -i 's/line 2/line two/' src/app.rs && {} && sleep 600",
        "cargo test --workspace --quiet".repeat(4)
    );
    recs.push(cmd.with("command", line.as_str()));
    let mut r = file_rec(op::APPLIED, CRASHED, "2026-03-01T10:29:50.000Z", "c1", "Bash", "src/app.rs", "file_modified");
    r.before = Some(Blob::Id(store.put(pre.as_bytes()).unwrap()));
    r.after = Some(Blob::Id(store.put(post.as_bytes()).unwrap()));
    r.parent = Some("toolu_cmd".into());
    recs.push(r.with("unfinished", true).with("changed", "2026-03-01T10:05:00.000Z").with("command", line.as_str()));
    JournalWriter::new(&project.journal).append_all(&recs).unwrap();
    repo.write("src/app.rs", &post);
    repo
}

/// The first screen on a small terminal: whatever the detail pane scrolled to, the selected
/// entry's verdict shows beside its change, and the status line stays on screen.
#[test]
fn small_screens_show_the_verdict_beside_the_change() {
    let deep: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let edit = edits(&[("src/deep.rs", &deep, &deep.replace("line 20\n", "line twenty\n"))]);
    let killed = killed_long_command();
    // (repo, what the verdict says in any of its words, the change's two sides)
    let cases: [(&Repo, &[&str], [&str; 2]); 2] = [
        (&edit, &["completed, not yet verified", "never verified on disk"], ["-line 20", "+line twenty"]),
        (&killed, &["by a command that never", "cut off"], ["-line 2", "+line two"]),
    ];
    for (w, h) in [(60, 15), (80, 24)] {
        for (repo, verdicts, change) in cases {
            let mut app = app_at(repo);
            let mut t = term(w, h);
            run(&mut app, &mut t, "");
            let s = text(&t);
            let pane = detail_rows(&s);
            assert!(
                verdicts.iter().any(|v| pane.contains(v)),
                "{w}×{h}: no verdict ({verdicts:?}) in the detail pane:\n{s}"
            );
            for side in change {
                assert!(pane.replace(' ', "").contains(&side.replace(' ', "")), "{w}×{h}: {side} not shown:\n{s}");
            }
            assert!(s.lines().any(|l| l.starts_with("1 unresolved entry")), "{w}×{h}: no status line:\n{s}");
        }
    }
}

/// A session's row in a narrow tree names its prompt (what tells sessions apart) before its
/// start time, and never cuts the time mid-way ("03-01 10:0").
#[test]
fn a_narrow_trees_session_row_keeps_the_prompt() {
    let f = Fixture::new();
    for (w, h) in [(120, 30), (200, 50), (80, 24)] {
        let mut app = f.app();
        let mut t = term(w, h);
        run(&mut app, &mut t, "");
        let s = text(&t);
        let row = s.lines().find(|l| l.contains("crashed  8f14e4")).unwrap_or_else(|| panic!("{s}"));
        assert!(row.contains("Raise the re"), "{w}×{h}: no prompt: {row}");
        let time = row.find("03-01 ").map(|i| &row[i..]);
        assert!(
            time.is_none_or(|t| t.len() > "03-01 10:00".len() && t.as_bytes()[10].is_ascii_digit()),
            "{w}×{h}: {row}"
        );
    }
}

/// A folder of old files moved by a command (the real hook, Claude Code's real Bash payload;
/// the session crashed): selecting the session's entries and reverting them in the TUI puts
/// the folder back — every file, its executable bit, no moved-to folder left — and `u` moves it
/// again.
#[test]
fn a_folder_move_reverted_as_a_batch_puts_the_folder_back_and_u_moves_it_again() {
    use std::os::unix::fs::PermissionsExt;
    let repo = Repo::new(&[("a.txt", "a\n"), ("d/k.txt", "k\n"), ("d/e/l.txt", "l\n"), ("d/run.sh", "echo r\n")]);
    let root = repo.root.clone();
    std::fs::set_permissions(root.join("d/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.git(&["add", "d/run.sh"]);
    repo.commit("exec");
    // Older than the racy window: the move changes no file's stat.
    let sh = |c: &str| assert!(Command::new("sh").arg("-c").arg(c).current_dir(&root).status().unwrap().success());
    sh("touch -d '2020-01-01' d/k.txt d/e/l.txt d/run.sh d/e d");
    std::thread::sleep(Duration::from_millis(2100));
    let text_of = |p: &Path| std::fs::read_to_string(p).unwrap();
    let mut pre: serde_json::Value = serde_json::from_str(&text_of(
        &crate::common::fixtures().join("hooks/real-2.1.328-killed-mid-bash/07-PreToolUse-Bash.json"),
    ))
    .unwrap();
    pre["cwd"] = root.to_string_lossy().into_owned().into();
    pre["transcript_path"] = "/tmp/none.jsonl".into();
    pre["tool_input"]["command"] = "mv d n".into();
    let mut post = pre.clone();
    post["hook_event_name"] = "PostToolUse".into();
    post["tool_response"] = serde_json::json!({"stdout": "", "stderr": "", "interrupted": false, "isImage": false});
    hook_ok(&root, &pre.to_string(), Parent::Timeout(20));
    sh("mv d n");
    hook_ok(&root, &post.to_string(), Parent::Timeout(20));
    let files = |dir: &str| {
        let mut v: Vec<(String, bool)> = Vec::new();
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let m = std::fs::symlink_metadata(e.path()).unwrap();
                if m.is_dir() {
                    stack.push(e.path());
                } else {
                    let rel = e.path().strip_prefix(&root).unwrap().to_string_lossy().into_owned();
                    v.push((rel, m.permissions().mode() & 0o100 != 0));
                }
            }
        }
        v.sort();
        v
    };
    assert_eq!(files("n").len(), 3);

    let mut app = App::new(Project::at(root.clone(), None), opts());
    let mut t = term(140, 40);
    // The session's context names the move.
    run(&mut app, &mut t, "gg");
    let s = text(&t);
    assert!(s.contains("Folder moves (1)") && s.contains("folder moved: d/ → n/"), "{s}");
    // The session's node selects its 6 entries; r, then y reverts them all. The dialog says
    // which folders go and which come back.
    run(&mut app, &mut t, "<space>");
    assert_eq!(app.tree.marked.len(), 6, "{}", text(&t));
    run(&mut app, &mut t, "r");
    let s = text(&t);
    assert!(s.contains("[y]"), "{s}");
    let said = app.dialog.as_ref().map(|d| d.note.join("\n")).unwrap_or_default();
    assert!(said.contains("Folders: the revert removes n/e/, n/ (left empty); makes d/, d/e/ again."), "{said}");
    run(&mut app, &mut t, "y");
    assert_eq!(
        files("d"),
        [("d/e/l.txt".to_string(), false), ("d/k.txt".to_string(), false), ("d/run.sh".to_string(), true)],
        "{}",
        text(&t)
    );
    assert!(!root.join("n").exists(), "nothing left behind: {}", text(&t));
    assert_eq!(text_of(&root.join("d/e/l.txt")), "l\n");
    run(&mut app, &mut t, "u");
    assert!(!root.join("d").exists(), "{}", text(&t));
    assert_eq!(files("n").len(), 3, "{}", text(&t));
}

/// A folder moved by a command whose turn ended (its Stop settled the entries): the session's
/// context still names the move, read from the session's settled entries (the tree shows none).
#[test]
fn the_session_context_names_a_folder_move_a_stop_settled() {
    let repo = Repo::new(&[("a.txt", "a\n"), ("d/k.txt", "k\n"), ("d/e/l.txt", "l\n")]);
    let root = repo.root.clone();
    let sh = |c: &str| assert!(Command::new("sh").arg("-c").arg(c).current_dir(&root).status().unwrap().success());
    sh("touch -d '2020-01-01' d/k.txt d/e/l.txt d/e d");
    std::thread::sleep(Duration::from_millis(2100));
    let payload = |event: &str| {
        serde_json::json!({
            "hook_event_name": event, "session_id": "5e551011-tui-settled", "transcript_path": "/tmp/none.jsonl",
            "cwd": root, "tool_name": "Bash", "tool_use_id": "toolu_mv",
            "tool_input": {"command": "mv d n", "description": "move"},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": false},
        })
        .to_string()
    };
    hook_ok(&root, &payload("PreToolUse"), Parent::Timeout(20));
    sh("mv d n");
    hook_ok(&root, &payload("PostToolUse"), Parent::Timeout(20));
    hook_ok(&root, &payload("Stop"), Parent::Timeout(20));
    let mut app = App::new(Project::at(root.clone(), None), opts());
    assert!(app.fold.entries.iter().all(|e| !e.is_unresolved()), "the Stop settled them");
    let mut t = term(140, 40);
    run(&mut app, &mut t, "gg");
    let s = text(&t);
    assert!(s.contains("Folder moves (1)") && s.contains("folder moved: d/ → n/ (2 files"), "{s}");
}
