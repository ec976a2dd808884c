//! The journal's lock has a deadline. A holder that is stopped (SIGSTOP, as
//! Ctrl-Z does) never blocks a hook; the record waits in a side file, lands in the journal
//! once the lock is free, exactly once, and a merge killed half-way never duplicates.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test
#![cfg(unix)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Locate, Parent, Repo, walj_bin};
use serde_json::{Value, json};
use walj::journal::{Record, op, scan_file, scan_lines};

/// Every hook call here must end well inside this (the lock's deadline is 2 s; Claude Code's
/// hook timeout is 10 s).
const LIMIT: Duration = Duration::from_secs(5);

/// This test binary, re-executed as a process that holds the lock named by
/// `WALJ_TEST_HOLD_LOCK` until it is killed.
fn lock_holder_child() -> bool {
    let Ok(path) = std::env::var("WALJ_TEST_HOLD_LOCK") else { return false };
    let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path).unwrap();
    f.lock().unwrap();
    let mut out = std::io::stdout();
    writeln!(out, "\nWALJ-HOLDER-LOCKED").unwrap();
    out.flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid this test started; no memory is involved.
    let r = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(r, 0, "kill({pid}, {sig})");
}

/// A process holding the journal's lock.
struct Holder(Child);

impl Holder {
    fn start(lock: &Path, test: &str) -> Holder {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &exact_name(test), "--nocapture", "--test-threads=1"])
            .env("WALJ_TEST_HOLD_LOCK", lock)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(lines.any(|l| l.unwrap().trim() == "WALJ-HOLDER-LOCKED"), "the holder took the lock");
        Holder(child)
    }
    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tool(repo: &Repo, event: &str, id: &str, rel: &str) -> String {
    let mut p = json!({
        "session_id": "s-lock", "cwd": repo.root, "hook_event_name": event, "tool_name": "Write",
        "tool_use_id": id, "tool_input": {"file_path": repo.path(rel), "content": "two\n"},
    });
    if event == "PostToolUse" {
        p["tool_response"] = json!({"type": "update", "filePath": repo.path(rel), "content": "two\n"});
    }
    p.to_string()
}

/// Runs one hook payload, which must exit 0 inside [`LIMIT`]; returns how long it took.
fn hook_in_time(repo: &Repo, payload: &str) -> Duration {
    let t = Instant::now();
    let (code, _, err) = repo.hook_run(payload, Parent::Timeout(LIMIT.as_secs() as u32 + 10), Locate::Folder);
    let took = t.elapsed();
    assert_eq!(code, 0, "hook exit {code} (124: killed by timeout, it hung): {err}");
    assert!(took < LIMIT, "the hook took {took:?}");
    took
}

/// The journal file's own records (side files aside): (op, id).
fn in_journal_file(repo: &Repo) -> Vec<(String, String)> {
    let mut out = vec![];
    scan_file(&repo.journal(), |raw| {
        let r = walj::journal::record::parse_record(raw.bytes).unwrap();
        out.push((r.op, r.id));
    })
    .unwrap();
    out
}

fn side_dir(repo: &Repo) -> PathBuf {
    repo.root.join(".walj/journal.side")
}

fn side_files(repo: &Repo) -> usize {
    std::fs::read_dir(side_dir(repo)).map(|d| d.count()).unwrap_or(0)
}

#[test]
fn a_stopped_lock_holder_never_blocks_the_hook_and_the_record_lands_once() {
    if lock_holder_child() {
        return;
    }
    let repo = Repo::new(&[("a.txt", "one\n")]);
    repo.hook(&repo.start_payload("s-lock"));
    let holder = Holder::start(
        &repo.root.join(".walj/journal.lock"),
        "a_stopped_lock_holder_never_blocks_the_hook_and_the_record_lands_once",
    );
    signal(holder.pid(), libc::SIGSTOP);

    let took = hook_in_time(&repo, &tool(&repo, "PreToolUse", "t-1", "a.txt"));
    eprintln!("PreToolUse with the lock held by a stopped process returned in {took:?}");
    assert!(!in_journal_file(&repo).iter().any(|(_, id)| id == "t-1"), "the journal was locked");
    assert_eq!(side_files(&repo), 1);
    // Every reader sees it meanwhile.
    let log = repo.json(&["log", "--json"]);
    let e = log.as_array().unwrap().iter().find(|e| e["id"] == "t-1").unwrap_or_else(|| panic!("{log:#}"));
    assert_eq!(e["status"], "in_flight");
    // The gap is reported: errors.log (which `walj doctor` shows) names the holder.
    let errors = std::fs::read_to_string(repo.root.join(".walj/errors.log")).unwrap();
    assert!(errors.contains("journal lock not taken"), "{errors}");
    assert!(errors.contains(&format!("pid {}", holder.pid())) && errors.contains("stopped"), "{errors}");
    let (_, doctor, _) = repo.run(&["doctor"]);
    assert!(doctor.contains("journal lock not taken"), "{doctor}");

    // The holder resumes and lets go; the next hook merges the record first, then its own.
    signal(holder.pid(), libc::SIGCONT);
    drop(holder);
    std::fs::write(repo.path("a.txt"), "two\n").unwrap();
    hook_in_time(&repo, &tool(&repo, "PostToolUse", "t-1", "a.txt"));
    let ops: Vec<String> = in_journal_file(&repo).into_iter().filter(|(_, id)| id == "t-1").map(|(op, _)| op).collect();
    assert_eq!(ops, vec!["intent", "applied"], "exactly once, in order");
    assert_eq!(side_files(&repo), 0, "merged side files are removed");
    let v = repo.json(&["recover", "--json"]);
    let e = &v["sessions"][0]["entries"][0];
    assert_eq!((e["id"].as_str(), e["status"].as_str()), (Some("t-1"), Some("applied")), "{v:#}");
    let r = repo.journal_records().into_iter().find(|r| r.id == "t-1" && r.op == "intent").unwrap();
    assert_eq!(crate::common::blob_bytes(&repo.root, &r.before).unwrap(), b"one\n", "the pre-image was captured");
}

/// A `walj compact` stopped while it reads and folds a large journal holds up no hook: the
/// append lock is only taken for its final swap.
#[test]
fn a_stopped_compaction_does_not_hold_up_hooks() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    repo.hook(&repo.start_payload("s-new"));
    // An old, settled session of 20,000 calls: compaction drops it.
    let old = "2020-01-01T00:00:00.000Z";
    let mut recs = vec![];
    for i in 0..20_000 {
        for o in [op::INTENT, op::APPLIED, op::PERSISTED] {
            let mut r = Record::new(o, "s-old-session");
            r.ts = old.into();
            r.id = format!("toolu_old_{i}");
            r.path = format!("f{}.txt", i % 50);
            r.tool = Some("Edit".into());
            r.persisted = o == op::PERSISTED;
            recs.push(r);
        }
    }
    walj::journal::JournalWriter::new(&repo.journal()).append_all(&recs).unwrap();
    let size = std::fs::metadata(repo.journal()).unwrap().len();
    let compact = Command::new(walj_bin())
        .args(["--project"])
        .arg(&repo.root)
        .args(["compact", "--days", "30", "--yes"])
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env_remove("CLAUDECODE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop it once it is reading (its temp file exists).
    let tmp_exists = || {
        std::fs::read_dir(repo.root.join(".walj"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains("walj-rewrite"))
    };
    let t = Instant::now();
    while !tmp_exists() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1));
    }
    signal(compact.id(), libc::SIGSTOP);
    let took = hook_in_time(&repo, &tool(&repo, "PreToolUse", "t-during", "a.txt"));
    eprintln!("PreToolUse during a stopped compaction of a {size}-byte journal returned in {took:?}");
    // It took the lock at once (a wait for the stopped compaction would run out and send the
    // record to a side file): the record is in the journal itself while the compaction is
    // still stopped. Checked by where the record went, not by a time, which a loaded machine
    // stretches.
    assert_eq!(side_files(&repo), 0, "the hook waited for the compaction's lock and wrote a side file ({took:?})");
    assert!(
        in_journal_file(&repo).iter().any(|(op, id)| op == "intent" && id == "t-during"),
        "the record is not in the journal while the compaction is stopped ({took:?})"
    );
    signal(compact.id(), libc::SIGCONT);
    let out = compact.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ids: Vec<String> = in_journal_file(&repo).into_iter().map(|(_, id)| id).collect();
    assert_eq!(ids.iter().filter(|id| *id == "t-during").count(), 1, "the record written meanwhile was kept, once");
    assert!(!ids.iter().any(|id| id.starts_with("toolu_old")), "the old session was compacted");
    assert!(std::fs::metadata(repo.journal()).unwrap().len() < size / 10);
}

/// The sled-style kill loop for merges: side files wait, `walj hook` takes the lock and merges
/// them, and is killed with SIGKILL at a random moment. Every record stays readable exactly
/// once; none is ever twice in the journal file; the next clean merge leaves each once and no
/// side file. Iterations: WALJ_KILL_ITERATIONS (default 40).
#[test]
fn a_merge_killed_at_any_point_never_duplicates() {
    let iterations: u64 = std::env::var("WALJ_KILL_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let repo = Repo::new(&[("a.txt", "one\n")]);
    repo.hook(&repo.start_payload("s-kill"));
    let dir = side_dir(&repo);
    std::fs::create_dir_all(&dir).unwrap();
    let prompt =
        json!({"session_id": "s-kill", "cwd": repo.root, "hook_event_name": "UserPromptSubmit", "prompt": "x"})
            .to_string();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut written = 0u64;
    let mut interrupted = 0u64;
    for it in 0..iterations {
        // 60 side files of 3 records each, named as writers name them (time-pid-n).
        for f in 0..60u64 {
            let mut bytes = Vec::new();
            for _ in 0..3 {
                bytes.extend_from_slice(&Record::new(op::INTENT, "s-side").with("n", written).to_line());
                written += 1;
            }
            std::fs::write(dir.join(format!("{:020}-{}-000.jsonl", it * 1000 + f, 900_000 + f)), bytes).unwrap();
        }
        let mut child = Command::new(walj_bin())
            .arg("hook")
            .current_dir(&repo.root)
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(prompt.as_bytes()).unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_micros(seed % 25_000));
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        if std::fs::read_dir(&dir).unwrap().flatten().any(|e| e.file_name().to_string_lossy().contains(".merging-")) {
            interrupted += 1;
        }
        check_once(&repo, written, false, it);
    }
    eprintln!("{iterations} kills, {interrupted} of them in the middle of a merge, {written} records");
    // A long backlog is merged within each holder's budget: every hook stays in time.
    let mut hooks = 0;
    while side_files(&repo) > 0 {
        let took = hook_in_time(&repo, &prompt);
        hooks += 1;
        assert!(hooks < 50, "the backlog does not shrink ({} side files)", side_files(&repo));
        eprintln!("hook {hooks}: {took:?}, {} side files left", side_files(&repo));
    }
    check_once(&repo, written, true, iterations);
}

/// Each of the `written` side records is read exactly once, and is never twice in the journal
/// file; `merged`: each is in the journal file itself.
fn check_once(repo: &Repo, written: u64, merged: bool, it: u64) {
    let n_of = |bytes: &[u8]| -> Option<u64> {
        let r: Value = serde_json::from_slice(bytes).ok()?;
        (r["session"] == "s-side").then(|| r["n"].as_u64()).flatten()
    };
    let mut file: BTreeMap<u64, u32> = BTreeMap::new();
    scan_file(&repo.journal(), |raw| {
        if let Some(n) = n_of(raw.bytes) {
            *file.entry(n).or_default() += 1;
        }
    })
    .unwrap();
    let mut seen: BTreeMap<u64, u32> = BTreeMap::new();
    scan_lines(&repo.journal(), |raw| {
        if let Some(n) = n_of(raw.bytes) {
            *seen.entry(n).or_default() += 1;
        }
    })
    .unwrap();
    for n in 0..written {
        assert!(file.get(&n).copied().unwrap_or(0) <= 1, "iteration {it}: record {n} twice in the journal");
        assert_eq!(seen.get(&n).copied().unwrap_or(0), 1, "iteration {it}: record {n} read {seen:?}");
        if merged {
            assert_eq!(file.get(&n).copied(), Some(1), "record {n} not merged");
        }
    }
}

/// An outcome that lands before its intent (the intent waited in a side file) pairs with it:
/// the intent fills in the pre-image, and never reopens an entry that settled meanwhile.
#[test]
fn the_fold_pairs_an_outcome_that_lands_before_its_intent() {
    use walj::fold::{CommandStatus, EntryState, Fold, FoldOptions};
    use walj::journal::build::{BashIntent, BashOutcome};
    use walj::journal::{Blob, JournalWriter};
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let w = JournalWriter::new(&journal);
    let file = |o: &str, id: &str| {
        let mut r = Record::new(o, "s-order");
        r.id = id.into();
        r.path = "a.txt".into();
        r.tool = Some("Write".into());
        r.before = (o == op::INTENT).then(|| Blob::Id("1".repeat(40)));
        r.after = (o == op::APPLIED).then(|| Blob::Id("2".repeat(40)));
        r.persisted = o == op::PERSISTED;
        r
    };
    let cmd = |r: Record| {
        let mut r = r;
        r.id = "t-cmd".into();
        r
    };
    w.append_all(&[
        file(op::APPLIED, "t-settled"),
        file(op::PERSISTED, "t-settled"),
        file(op::INTENT, "t-settled"),
        file(op::APPLIED, "t-open"),
        file(op::INTENT, "t-open"),
        BashOutcome { command: "ls", error: None, task_id: None, interrupted: false }
            .fill(cmd(Record::new(op::APPLIED, "s-order"))),
        BashIntent { command: "ls", description: None, background: false, cwd: None }
            .fill(cmd(Record::new(op::INTENT, "s-order"))),
    ])
    .unwrap();
    let fold = Fold::load(&journal, &FoldOptions::default()).unwrap();
    let open: Vec<(&str, EntryState)> = fold.unresolved().map(|e| (e.id.as_str(), e.state())).collect();
    assert_eq!(open, vec![("t-open", EntryState::Applied)], "a late intent reopens nothing");
    let e = fold.entry("t-open").unwrap();
    assert_eq!(e.before, Some(Blob::Id("1".repeat(40))), "the intent's pre-image");
    assert_eq!(e.after, Some(Blob::Id("2".repeat(40))));
    let all =
        Fold::load(&journal, &FoldOptions { all_commands: true, keep_settled: true, ..Default::default() }).unwrap();
    assert_eq!(all.entry("t-settled").unwrap().state(), EntryState::Persisted);
    assert_eq!(all.entries.len(), 2);
    let cmds: Vec<CommandStatus> = all.sessions[0].commands.iter().map(|c| c.status).collect();
    assert_eq!(cmds, vec![CommandStatus::Ok], "the command ran; its late intent is not a new one in flight");
}

/// `test`'s name as libtest knows it in this test binary (`module::test`): a test that runs
/// itself again as a child with `--exact` must name itself so, or the child runs nothing.
fn exact_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_string(),
    }
}
