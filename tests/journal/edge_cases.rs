//! Regressions found by a second read of `src/` (one test per defect, each failing before
//! its fix). The real binary runs against real folders; a panic shows as exit code 101.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::process::{Command as StdCommand, Stdio};

use crate::common::{Claude, Repo};
use serde_json::{Value, json};

const PANIC: i32 = 101;

/// Appends raw lines as a foreign writer leaves them: any fields, with the checksum every
/// v2 line must carry (issue 13 item 6: a v2 line without one is a checksum failure).
fn append_raw(repo: &Repo, lines: &[Value]) {
    use std::io::Write;
    std::fs::create_dir_all(repo.path(".walj")).expect("mkdir");
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(repo.journal()).expect("open journal");
    for l in lines {
        let mut bytes = l.to_string().into_bytes();
        walj::journal::record::seal(&mut bytes);
        bytes.push(b'\n');
        f.write_all(&bytes).expect("append");
    }
}

fn line(op: &str, extra: Value) -> Value {
    let mut v = json!({
        "v": 2, "sid": "0dd000", "ts": "2026-01-02T00:00:00.000Z", "event": "file_modified",
        "path": "f.txt", "persisted": false, "op": op, "session": "0dd00000-aaaa", "tool": "Edit",
    });
    for (k, x) in extra.as_object().expect("object") {
        v[k] = x.clone();
    }
    v
}

// Defect: blob ids and HEAD ids come from journal lines (hand edits, foreign writers, an
// imported bundle's records) and were sliced by byte index (`split_at(2)`, `[..10]`,
// `[..12]`): a multi-byte character there made `diff`, `undo` and `sessions show` panic.
#[test]
fn odd_ids_in_the_journal_are_reported_not_panicked_on() {
    let repo = Repo::new(&[("f.txt", "one\n")]);
    let odd = "aé0123456789abcdef";
    append_raw(
        &repo,
        &[
            line(
                "session",
                json!({"kind": "start", "event": "session", "path": "", "head": "ééééééééé", "tool": null}),
            ),
            line("intent", json!({"id": "odd1", "before": odd})),
            line("applied", json!({"id": "odd1", "before": odd, "after": odd})),
            line("resolved", json!({"id": "odd1", "how": "reverted", "action": "act1", "before": odd, "after": odd})),
        ],
    );
    for args in [
        &["diff", "odd1"][..],
        &["diff", "odd1", "--applied"],
        &["undo", "odd1", "--force"],
        &["sessions", "show", "0dd0"],
        &["sessions", "resume", "0dd0", "--print-only"],
    ] {
        let (code, out, err) = repo.run(args);
        assert_ne!(code, PANIC, "walj {args:?} panicked:\nstdout: {out}\nstderr: {err}");
    }
    let out = repo.ok(&["diff", "odd1"]);
    assert!(out.contains("is missing from the store"), "{out}");
    let err = repo.fails(&["undo", "odd1", "--force"]);
    assert!(err.contains("missing from the store"), "{err}");
}

// Defect: the SessionStart answer was printed with `println!`, which panics (exit 101) when
// Claude Code has closed the hook's stdout; the hook must exit 0 whatever happens.
#[test]
fn session_start_with_a_closed_stdout_exits_zero() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    // A crashed session with an unfinished change: the next SessionStart has a note to print.
    Claude::new(&repo, "c1a5b000-0000-4000-8000-000000000001").write_intent("toolu_c1", "a.txt", "b\n");
    let payload = json!({
        "hook_event_name": "SessionStart", "session_id": "c1a5b000-0000-4000-8000-000000000002",
        "cwd": repo.root, "source": "startup",
    });
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("walj"))
        .arg("--project")
        .arg(&repo.root)
        .arg("hook")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn walj hook");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(payload.to_string().as_bytes()).expect("payload");
    let out = child.wait_with_output().expect("walj hook");
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    // The note was recorded as made (it is not repeated at the next start).
    assert!(repo.records().iter().any(|r| r["kind"] == "announced"), "{:?}", repo.records());
}

// Defect: `--days N` was turned into a duration by plain multiplication (`import`) and by
// `chrono::Duration::days` and a date subtraction (`compact`): a large N overflowed and
// panicked. A retention (or a window) longer than the calendar means "everything".
#[test]
fn huge_day_counts_mean_everything() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let claude_dir = tempfile::tempdir().expect("tempdir");
    let (code, out, err) = {
        let o = repo
            .walj(&["import", "--days", "300000000000000"])
            .env("CLAUDE_CONFIG_DIR", claude_dir.path())
            .output()
            .expect("run walj");
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    assert_eq!(code, 0, "import --days: stdout {out}\nstderr {err}");
    Claude::new(&repo, "da75da75-0000-4000-8000-000000000001").write("toolu_d1", "a.txt", "b\n");
    for days in ["100000000", "18446744073709551615"] {
        let out = repo.ok(&["compact", "--days", days, "--json"]);
        let v: Value = serde_json::from_str(&out).expect("json");
        assert_eq!(v["records_after"], v["records_before"], "nothing is older than {days} days: {out}");
    }
}

// Defect: the transcript copy's sidecar lengths were trusted: a tail fingerprint length
// above the copied offset (a damaged or hand-edited sidecar) underflowed and panicked, and
// a huge one allocated that much. A sidecar that does not add up means "resync".
#[test]
fn a_damaged_transcript_sidecar_resyncs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(dir.path()).expect("canonicalize");
    let project = walj::project::Project::at(root.clone(), None);
    let t = root.join("t.jsonl");
    std::fs::write(&t, b"{\"a\":1}\n").expect("write");
    walj::session::transcript::copy(&project, "s", &t).expect("first copy");
    let side = walj::session::transcript::paths(&project, "s").sidecar;
    let mut v: Value = serde_json::from_slice(&std::fs::read(&side).expect("sidecar")).expect("json");
    for (key, value) in [("tail_len", json!(4096 * 1024)), ("head_len", json!(u64::MAX / 2))] {
        v[key] = value;
        std::fs::write(&side, v.to_string()).expect("damage");
        std::fs::write(&t, b"{\"a\":1}\n{\"b\":2}\n").expect("grow");
        let stats = walj::session::transcript::copy(&project, "s", &t).expect("copy after damage");
        assert_eq!(stats.outcome, "resynced", "{key}");
        let copy = walj::session::transcript::read_copy(&project, "s").expect("read").expect("copy");
        assert_eq!(copy, b"{\"a\":1}\n{\"b\":2}\n", "{key}");
    }
}

// Defect: `recover` (which forgets settled entries while folding) called an entry `drifted`
// when the disk held a later, settled entry's image on the same path, while `log` (which
// keeps settled entries) called the same entry `applied`. DESIGN §4: drifted = the disk
// matches neither before nor after nor a later entry.
#[test]
fn a_later_settled_change_is_not_drift() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    // Session one dies after its Write; session two edits the same file and stops cleanly.
    Claude::new(&repo, "1a1a1a1a-0000-4000-8000-000000000001").write("toolu_one", "a.txt", "one\n");
    let two = Claude::new(&repo, "2b2b2b2b-0000-4000-8000-000000000002");
    two.edit("toolu_two", "a.txt", "one", "two");
    two.stop();
    let status = |v: &Value| -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut walk = vec![v.clone()];
        while let Some(x) = walk.pop() {
            match x {
                Value::Object(o) => {
                    if let (Some(id), Some(st)) =
                        (o.get("id").and_then(Value::as_str), o.get("status").and_then(Value::as_str))
                    {
                        out.push((id.to_string(), st.to_string()));
                    }
                    walk.extend(o.into_iter().map(|(_, v)| v));
                }
                Value::Array(a) => walk.extend(a),
                _ => {}
            }
        }
        out.sort();
        out
    };
    let recover: Value = serde_json::from_str(&repo.ok(&["recover", "--json"])).expect("json");
    let log: Value = serde_json::from_str(&repo.ok(&["log", "--json"])).expect("json");
    assert_eq!(status(&recover), vec![("toolu_one".to_string(), "applied".to_string())], "{recover:#}");
    assert!(status(&log).contains(&("toolu_one".to_string(), "applied".to_string())), "{log:#}");
}

// Defect: `walj undo` picked "the last triage command" by the records' wall-clock time: after
// the clock went back (NTP, a VM resumed) it undid an older command instead of the one
// just recorded. The journal is append-only: its order is the order of the commands.
#[test]
fn undo_takes_the_last_command_in_journal_order() {
    use walj::journal::{JournalWriter, Record, how, op};
    let repo = Repo::new(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let claude = Claude::new(&repo, "c10cc000-0000-4000-8000-000000000001");
    claude.write("toolu_a", "a.txt", "a2\n");
    claude.write("toolu_b", "b.txt", "b2\n");
    let writer = JournalWriter::new(&repo.journal());
    for (id, action, batch, ts) in [
        ("toolu_a", "act_a", "batch_a", "2026-06-01T12:00:00.000Z"),
        ("toolu_b", "act_b", "batch_b", "2026-06-01T11:00:00.000Z"),
    ] {
        let mut r = Record::new(op::RESOLVED, &claude.session);
        r.id = id.to_string();
        r.how = Some(how::DONE.to_string());
        r.action = Some(action.to_string());
        r.ts = ts.to_string();
        writer.append(&r.with("batch", batch).with("seq", 0)).expect("append");
    }
    let out = repo.ok(&["undo"]);
    assert!(out.contains("b.txt") && !out.contains("a.txt"), "undid the wrong command: {out}");
    let undo: Vec<Value> = repo.records().into_iter().filter(|r| r["op"] == "undo").collect();
    assert_eq!(undo.len(), 1, "{undo:?}");
    assert_eq!(undo[0]["target"], "act_b");
}

// Defect: the hook reported problems with `eprintln!`, which panics when stderr is closed
// (Claude Code gone mid-hook): the panic was caught, but the hook's own work stopped with
// it, so a problem merely worth a log line (here: a broken config) cost the intent record.
#[test]
fn a_closed_stderr_does_not_cost_the_journal_line() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    std::fs::create_dir_all(repo.path(".walj")).expect("mkdir");
    std::fs::write(repo.path(".walj/config.toml"), "[capture\nbroken").expect("config");
    let payload = json!({
        "hook_event_name": "PreToolUse", "session_id": "5e7d0000-0000-4000-8000-000000000001",
        "cwd": repo.root, "tool_name": "Edit", "tool_use_id": "toolu_closed",
        "tool_input": {"file_path": repo.path("a.txt"), "old_string": "a", "new_string": "b"},
    });
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("walj"))
        .arg("--project")
        .arg(&repo.root)
        .arg("hook")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(writer)
        .spawn()
        .expect("spawn walj hook");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(payload.to_string().as_bytes()).expect("payload");
    let out = child.wait_with_output().expect("walj hook");
    assert_eq!(out.status.code(), Some(0));
    let intents: Vec<Value> = repo.records().into_iter().filter(|r| r["op"] == "intent").collect();
    assert_eq!(intents.len(), 1, "the intent was lost: {:?}", repo.records());
    let log = std::fs::read_to_string(repo.path(".walj/errors.log")).expect("errors.log");
    assert!(log.contains("config ignored"), "{log}");
}

// Defect: the Stop hook verifies its session's entries against a fold of that session
// only, so a later change to the same file by another session (two sessions at work in one
// project) left the entry `applied` — unresolved after a clean turn. DESIGN §3: persisted =
// disk matches `after` or a later entry on the same path.
#[test]
fn a_later_change_by_another_session_verifies_at_stop() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let one = Claude::new(&repo, "0a0a0a0a-0000-4000-8000-000000000001");
    let two = Claude::new(&repo, "0b0b0b0b-0000-4000-8000-000000000002");
    one.write("toolu_first", "a.txt", "one\n");
    two.edit("toolu_second", "a.txt", "one", "two");
    two.stop();
    one.stop();
    let recover: Value = serde_json::from_str(&repo.ok(&["recover", "--json"])).expect("json");
    assert_eq!(recover["unresolved"], 0, "{recover:#}");
    let persisted: Vec<Value> =
        repo.records().into_iter().filter(|r| r["op"] == "persisted" && r["id"] == "toolu_first").collect();
    assert_eq!(persisted.len(), 1, "{:?}", repo.records());
}
