//! `walj tui` in a real terminal (tmux): SIGTERM and SIGHUP restore the terminal as a
//! panic does (main screen, mouse reporting off, cursor shown), a terminal that goes away
//! without a signal ends walj, `e` in a conflict runs `$EDITOR` and comes back, and Esc then a
//! key typed fast (read as Alt+key) closes a dialog and does the key. Skipped with a message when tmux is missing, unless
//! `WALJ_E2E_REQUIRE=1`.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::common::{scratch, walj_bin};

fn tmux_available() -> bool {
    if Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    assert!(std::env::var("WALJ_E2E_REQUIRE").as_deref() != Ok("1"), "tmux is required (WALJ_E2E_REQUIRE=1)");
    eprintln!("SKIPPED: tmux is not installed (apt-get install tmux)");
    false
}

/// A tmux server of its own (socket in a temp folder), killed when dropped.
struct Tmux {
    sock: PathBuf,
    name: String,
}

impl Tmux {
    /// Starts `cmd` in a detached `w`×`h` session.
    fn start(dir: &Path, tag: &str, w: u16, h: u16, cmd: &str) -> Tmux {
        let t = Tmux { sock: dir.join(format!(".tmux-{tag}")), name: format!("walj-{tag}-{}", std::process::id()) };
        let (w, h) = (w.to_string(), h.to_string());
        let out = t.run(&["new-session", "-d", "-s", &t.name, "-x", &w, "-y", &h, cmd]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        t
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-S").arg(&self.sock).args(args).output().expect("tmux runs")
    }

    fn capture(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", &self.name]).stdout).into_owned()
    }

    /// A tmux format of the pane: `#{alternate_on}`, `#{pane_dead}`…
    fn format(&self, f: &str) -> String {
        String::from_utf8_lossy(&self.run(&["display-message", "-p", "-t", &self.name, f]).stdout).trim().to_string()
    }

    fn keys(&self, keys: &str) {
        self.run(&["send-keys", "-t", &self.name, keys]);
    }

    fn wait_for(&self, what: &str, ok: impl Fn(&Tmux) -> bool) {
        for _ in 0..150 {
            if ok(self) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{what} never happened:\n{}", self.capture());
    }

    fn wait_text(&self, needle: &str) {
        self.wait_for(&format!("{needle:?} on screen"), |t| t.capture().contains(needle));
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// The demo project (a crashed session, built with the real hook) in a temp folder.
fn demo() -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = scratch();
    walj::tui::demo::build(&dir, &walj_bin()).expect("demo builds");
    (tmp, dir)
}

/// The command that runs `walj tui` on `dir` (its pid in `dir/.walj-pid`), then prints
/// `walj exited N` and keeps the pane open: a shell that changes no terminal mode.
fn tui_cmd(dir: &Path, env: &str) -> String {
    tui_cmd_with(dir, env, "")
}

/// [`tui_cmd`] with global options before `tui` (`--color never`).
fn tui_cmd_with(dir: &Path, env: &str, opts: &str) -> String {
    let script = dir.join(".walj-run.sh");
    let body = format!(
        "#!/bin/sh\nsh -c 'echo $$ > {pid}; exec env -u CLAUDE_PROJECT_DIR -u WALJ_JOURNAL TERM=xterm-256color {env} {walj} --project {dir} {opts} tui'\necho \"walj exited $?\"\nsleep 600\n",
        pid = dir.join(".walj-pid").display(),
        walj = walj_bin().display(),
        dir = dir.display(),
    );
    std::fs::write(&script, body).unwrap();
    format!("sh {}", script.display())
}

/// (alternate screen, any mouse reporting, cursor shown) as tmux sees the pane.
fn modes(t: &Tmux) -> String {
    let f = t.format("#{alternate_on} #{mouse_any_flag} #{mouse_button_flag} #{mouse_standard_flag} #{cursor_flag}");
    let v: Vec<&str> = f.split(' ').collect();
    let [alt, any, button, standard, cursor] = v[..] else { panic!("tmux formats: {f:?}") };
    let mouse = [any, button, standard].contains(&"1");
    format!("{alt} {} {cursor}", u8::from(mouse))
}

#[test]
fn sigterm_and_sighup_restore_the_terminal() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = demo();
    for (sig, code) in [("TERM", 143), ("HUP", 129)] {
        let t = Tmux::start(&dir, &sig.to_lowercase(), 80, 24, &tui_cmd(&dir, ""));
        t.wait_text("docs/generated-index.md");
        // The dashboard runs: alternate screen, mouse reporting on, cursor hidden.
        t.wait_for("the dashboard's modes", |t| modes(t) == "1 1 0");
        let pid = std::fs::read_to_string(dir.join(".walj-pid")).unwrap().trim().to_string();
        let out = Command::new("kill").args([&format!("-{sig}"), &pid]).output().unwrap();
        assert!(out.status.success(), "kill -{sig} {pid}: {}", String::from_utf8_lossy(&out.stderr));
        // It exits (128 + the signal) rather than being killed by it...
        t.wait_text(&format!("walj exited {code}"));
        // ...with the terminal restored.
        assert_eq!(modes(&t), "0 0 1", "SIG{sig}: main screen, mouse off, cursor shown:\n{}", t.capture());
    }
}

/// Whether a process still runs (a zombie has exited: only its parent's wait is missing).
fn running(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // "pid (comm) S ...": the state follows the last ')'.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

#[test]
fn a_terminal_gone_without_a_signal_ends_walj() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = demo();
    let t = Tmux::start(&dir, "hangup", 80, 24, &tui_cmd(&dir, ""));
    t.wait_text("docs/generated-index.md");
    let pid = std::fs::read_to_string(dir.join(".walj-pid")).unwrap().trim().to_string();
    assert!(running(&pid), "walj runs");
    // The terminal goes away: tmux closes the pty. crossterm's reader then spins on the
    // hung-up tty forever (read returns 0 bytes) unless walj notices the hangup itself.
    let out = t.run(&["kill-server"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let started = std::time::Instant::now();
    while running(&pid) && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = running(&pid);
    if left {
        // Leave nothing behind when the test fails.
        let _ = Command::new("kill").args(["-KILL", &pid]).output();
    }
    assert!(!left, "walj still runs 5 s after its terminal went away");
}

#[test]
fn conflict_e_runs_editor_from_the_environment() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = demo();
    // The issue's case: the user changed the tool's 5 to 7 after the crash.
    let settings = dir.join("config/settings.json");
    let now = std::fs::read_to_string(&settings).unwrap();
    assert!(now.contains("\"retries\": 5"), "{now}");
    std::fs::write(&settings, now.replace("\"retries\": 5", "\"retries\": 7")).unwrap();
    // $EDITOR: a script that puts the 5 back and adds a line (the change can then be taken out).
    let edited = now.replace("\"log_level\"", "\"tuned\": true,\n  \"log_level\"");
    let tools = tempfile::tempdir().unwrap();
    let script = tools.path().join("editor.sh");
    // The file is its last argument (`+LINE` comes first: the editor opens at the change).
    std::fs::write(
        &script,
        "#!/bin/sh\nfor a; do f=$a; done\ncp \"$0.json\" \"$f\"\necho \"edited $1\" >> \"$0.log\"\n",
    )
    .unwrap();
    std::fs::write(tools.path().join("editor.sh.json"), &edited).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = format!("VISUAL= EDITOR={}", script.display());
    let t = Tmux::start(&dir, "editor", 120, 35, &tui_cmd(&dir, &env));
    t.wait_text("config/settings.json");
    t.wait_text("\"retries\": 7");
    t.keys("r");
    t.wait_text("CONFLICT");
    // Enter cancels: the 7 stays.
    t.keys("Enter");
    t.wait_text("cancelled");
    assert!(std::fs::read_to_string(&settings).unwrap().contains("\"retries\": 7"));
    t.keys("r");
    t.wait_text("CONFLICT");
    t.keys("e");
    t.wait_text("edited config/settings.json");
    assert_eq!(std::fs::read_to_string(tools.path().join("editor.sh.log")).unwrap(), "edited +2\n");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), edited);
    // Back in the dashboard (alternate screen, mouse on), the revert planned again.
    t.wait_text("clean merge");
    assert_eq!(modes(&t), "1 1 0");
    t.keys("Enter");
    t.wait_text("5 unresolved");
    let after = std::fs::read_to_string(&settings).unwrap();
    assert!(after.contains("\"retries\": 3") && after.contains("\"tuned\": true"), "{after}");
    t.keys("q");
    t.wait_text("walj exited 0");
    assert_eq!(modes(&t), "0 0 1");
}

#[test]
fn y_copies_through_osc52_into_the_terminal() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = demo();
    let t = Tmux::start(&dir, "copy", 120, 35, &tui_cmd(&dir, ""));
    // tmux keeps what an application puts on the clipboard as a paste buffer.
    let out = t.run(&["set-option", "-g", "set-clipboard", "on"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    t.wait_text("config/settings.json");
    t.keys("y");
    t.wait_text("[p] path");
    t.keys("Enter");
    t.wait_text("copied the path: config/settings.json");
    t.wait_for("the paste buffer", |t| {
        String::from_utf8_lossy(&t.run(&["show-buffer"]).stdout) == "config/settings.json"
    });
    // The resume line of the session.
    t.keys("y");
    t.wait_text("[r] resume");
    t.keys("r");
    t.wait_for("the resume line", |t| {
        String::from_utf8_lossy(&t.run(&["show-buffer"]).stdout).starts_with("claude --resume ")
    });
}

/// A project whose crashed session edited files with names that trouble terminals.
fn awkward_names(dir: &Path) -> Vec<&'static str> {
    use walj::journal::{Blob, JournalWriter, Record, kind, op};
    let names = vec![
        "docs/👨\u{200d}👩\u{200d}👧 family.md",
        "i18n/🇫🇷/notes.md",
        "evil\u{202e}gpj.exe",
        "line\nbreak.txt",
        "thumbs 👍\u{1f3fd}.txt",
    ];
    let project = walj::project::Project::at(dir.to_path_buf(), None);
    project.ensure_dir().unwrap();
    let store = walj::store::Store::new(project.store_dir());
    let session = "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10";
    let mut start = Record::new(op::SESSION, session);
    start.kind = Some(kind::START.into());
    start.event = "session".into();
    start.pid = Some(4_000_000_000);
    start.pstart = Some(1);
    let mut recs = vec![start];
    for (i, name) in names.iter().enumerate() {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "after 🇯🇵 \u{1b}[31m\n").unwrap();
        for (o, blob) in [(op::INTENT, "before\n"), (op::APPLIED, "after 🇯🇵 \u{1b}[31m\n")] {
            let mut r = Record::new(o, session);
            r.id = format!("toolu_{i:02}Awkward");
            r.tool = Some("Edit".into());
            r.event = "file_modified".into();
            r.path = name.to_string();
            r.pid = Some(4_000_000_000);
            r.pstart = Some(1);
            let b = Some(Blob::Id(store.put(blob.as_bytes()).unwrap()));
            if o == op::INTENT {
                r.before = b;
            } else {
                r.after = b;
            }
            recs.push(r);
        }
    }
    JournalWriter::new(&project.journal).append_all(&recs).unwrap();
    names
}

/// Columns of each box-drawing border in a captured row, as the terminal places them.
fn border_columns(row: &str) -> Vec<usize> {
    use unicode_width::UnicodeWidthChar;
    let mut col = 0;
    let mut out = Vec::new();
    for c in row.chars() {
        if matches!(c, '│' | '┃') {
            out.push(col);
        }
        col += c.width().unwrap_or(0);
    }
    out
}

#[test]
fn wide_and_control_characters_leave_no_ghost_cells() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = scratch();
    awkward_names(&dir);
    let t = Tmux::start(&dir, "wide", 100, 24, &tui_cmd(&dir, ""));
    t.wait_text("i18n/FR/notes.md");
    let first = t.capture();
    assert!(first.contains("evil\\u{202e}gpj.exe") && first.contains("line\\nbreak.txt"), "{first}");
    // Every row's pane borders sit where the drawing put them: nothing was measured
    // differently by the terminal.
    let rows: Vec<&str> = first.lines().take(22).collect();
    for (y, row) in rows.iter().enumerate().skip(1).take(20) {
        assert_eq!(border_columns(row), [0, 39, 40, 99], "row {y} {row:?}\n{first}");
    }
    // Moving over the rows and back leaves the screen as it was (no ghost cells).
    t.keys("j");
    t.keys("j");
    t.keys("j");
    t.wait_text("line\\nbreak.txt ─");
    t.keys("k");
    t.keys("k");
    t.keys("k");
    t.wait_for("the first screen again", |t| t.capture() == first);
}

/// The colour escapes of the pane (`capture-pane -e`): 256-colour foregrounds or backgrounds.
fn colours(t: &Tmux) -> bool {
    let out = t.run(&["capture-pane", "-e", "-p", "-t", &t.name]).stdout;
    let s = String::from_utf8_lossy(&out);
    s.contains("\x1b[38;5;") || s.contains("\x1b[48;5;")
}

#[test]
fn color_never_and_always_are_honoured_in_a_real_terminal() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = scratch();
    assert!(Command::new("git").arg("init").arg("-q").arg(&dir).status().unwrap().success());
    for (tag, env, opts, want) in [
        ("auto", "", "", true),
        ("never", "", "--color never", false),
        ("nocolor", "NO_COLOR=1", "", false),
        ("always", "NO_COLOR=1", "--color always", true),
    ] {
        let t = Tmux::start(&dir, tag, 100, 24, &tui_cmd_with(&dir, env, opts));
        t.wait_text("q quit");
        assert_eq!(colours(&t), want, "{tag}: {}", t.capture());
        t.keys("q");
        t.wait_text("walj exited 0");
    }
}

#[test]
fn esc_then_a_key_typed_fast_closes_the_dialog_and_does_the_key() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = demo();
    let t = Tmux::start(&dir, "escu", 120, 35, &tui_cmd(&dir, ""));
    t.wait_text("config/settings.json");
    let journal = dir.join(".walj/journal.jsonl");
    let marks =
        || std::fs::read_to_string(&journal).unwrap().lines().filter(|l| l.contains("\"how\":\"done\"")).count();
    t.keys("d");
    t.wait_text("done");
    t.wait_for("the mark in the journal", |_| marks() == 1);
    let undos = || std::fs::read_to_string(&journal).unwrap().lines().filter(|l| l.contains("\"op\":\"undo\"")).count();
    assert_eq!(undos(), 0);
    // A dialog (copy), then Esc and u in one write: the terminal's bytes are ESC u, which
    // crossterm reads as Alt+u. The dialog closes and the undo runs.
    t.keys("y");
    t.wait_text("Esc: cancel");
    let out = t.run(&["send-keys", "-t", &t.name, "Escape", "u"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    t.wait_text("undid the mark done");
    assert!(!t.capture().contains("Esc: cancel"), "the dialog stayed open:\n{}", t.capture());
    assert_eq!(undos(), 1, "the undo was recorded");
    t.keys("q");
    t.wait_text("walj exited 0");
}
