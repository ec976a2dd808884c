//! The journal, the hook and recovery, through the real binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{Locate, Parent, Repo, fixtures, walj_bin};
use serde_json::Value;

/// A temp git project with the crash-mid-write fixture's files, committed, in a subfolder
/// of its temp folder (`repo.tmp`, which the single-fixture test watches).
fn fixture_project() -> Repo {
    Repo::fixture_in("p", "hooks/crash-mid-write/project")
}

fn payload(rel: &str, repo: &Repo) -> String {
    repo.fixture(&format!("hooks/{rel}"))
}

/// Runs `walj hook` as installed (no `--project`: it finds the project from its folder)
/// under `timeout`, a short-lived parent, so the recorded Claude Code process is gone
/// afterwards (the session then reads as crashed, not live).
fn hook(repo: &Repo, input: &str) -> (i32, String, String) {
    repo.hook_run(input, Parent::Timeout(20), Locate::Folder)
}

fn recover_json(repo: &Repo) -> Value {
    repo.json(&["recover", "--json"])
}

/// Replays crash-mid-write up to 09 (the Write's PreToolUse). Variant b writes the file.
fn replay_crash(repo: &Repo, variant_b: bool) {
    crate::common::replay_crash_mid_write(repo, variant_b, |p| assert_eq!(hook(repo, p).0, 0));
}

fn check_crash_recovery(repo: &Repo, variant_b: bool) {
    let root = &repo.root;
    let r = recover_json(repo);
    assert_eq!(r["unresolved"], 2, "{r:#}");
    let s = &r["sessions"][0];
    assert_eq!(s["state"], "crashed");
    assert_eq!(s["sid"], "8f14e4");
    assert_eq!(s["session"], "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10");
    let entries = s["entries"].as_array().unwrap();
    let cfg = entries.iter().find(|e| e["path"] == "config/settings.json").unwrap();
    assert_eq!(cfg["status"], "applied");
    assert_eq!(cfg["tool"], "Edit");
    assert_eq!(cfg["event"], "file_modified");
    // Blob ids are git blob ids: compare with git itself.
    let disk = fs::read(root.join("config/settings.json")).unwrap();
    assert_eq!(cfg["after"], walj::store::blob_id(&disk));
    assert_eq!(cfg["before"], repo.git(&["rev-parse", "HEAD:config/settings.json"]).trim());
    let doc = entries.iter().find(|e| e["path"] == "docs/generated-index.md").unwrap();
    assert_eq!(doc["status"], "in_flight");
    assert_eq!(doc["tool"], "Write");
    assert_eq!(doc["event"], "artifact_created");
    assert_eq!(doc["before"], "absent");
    assert_eq!(root.join("docs/generated-index.md").exists(), variant_b);
    // The todo list still has the docs item pending.
    let open = s["todos"]["open"].as_array().unwrap();
    assert!(open.iter().any(|t| t["content"] == "Regenerate docs/generated-index.md" && t["status"] == "pending"));
    // The text report names the background command and both paths.
    let (_, text, _) = repo.run(&["recover"]);
    assert!(text.contains("crashed"), "{text}");
    assert!(text.contains("npm run dev"), "{text}");
    assert!(text.contains("config/settings.json") && text.contains("docs/generated-index.md"), "{text}");
}

#[test]
fn crash_mid_write_variant_a_write_never_happened() {
    let repo = fixture_project();
    replay_crash(&repo, false);
    check_crash_recovery(&repo, false);
}

#[test]
fn crash_mid_write_variant_b_file_written_without_post() {
    let repo = fixture_project();
    replay_crash(&repo, true);
    check_crash_recovery(&repo, true);
}

#[test]
fn next_session_start_announces_the_crash_exactly_once() {
    let repo = fixture_project();
    replay_crash(&repo, false);
    let start = repo.start_payload("11111111-2222-3333-4444-555555555555");
    let (code, out, _) = hook(&repo, &start);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object on stdout");
    let ctx = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(ctx.contains("config/settings.json") && ctx.contains("docs/generated-index.md"), "{ctx}");
    assert!(v["systemMessage"].as_str().unwrap().contains("2 changes"), "{v}");
    // Once per crashed session.
    let (code, out, _) = hook(&repo, &start);
    assert_eq!(code, 0);
    assert!(out.trim().is_empty(), "announced twice: {out}");
}

#[test]
fn stop_checkpoint_persists_and_marks_denied_intents() {
    let repo = fixture_project();
    replay_crash(&repo, false);
    // The same session reaches Stop: the Edit is verified, the Write (never happened) was not applied.
    assert_eq!(hook(&repo, &payload("single/stop.json", &repo)).0, 0);
    let r = recover_json(&repo);
    assert_eq!(r["unresolved"], 0, "{r:#}");
    let lines = repo.records();
    let persisted: Vec<_> = lines.iter().filter(|l| l["op"] == "persisted").collect();
    assert_eq!(persisted.len(), 1);
    assert_eq!(persisted[0]["path"], "config/settings.json");
    assert_eq!(persisted[0]["persisted"], true);
    let na: Vec<_> = lines.iter().filter(|l| l["op"] == "resolved" && l["how"] == "not_applied").collect();
    assert_eq!(na.len(), 1);
    assert_eq!(na[0]["path"], "docs/generated-index.md");
    // Every line carries the proposal's six fields.
    for l in &lines {
        for k in ["v", "sid", "ts", "event", "path", "persisted"] {
            assert!(l.get(k).is_some(), "{k} missing in {l}");
        }
    }
}

#[test]
fn drift_is_detected_when_the_file_changes_outside() {
    let repo = fixture_project();
    let root = &repo.root;
    replay_crash(&repo, false);
    fs::write(root.join("config/settings.json"), "{\"retries\": 9}\n").unwrap();
    let r = recover_json(&repo);
    let e =
        r["sessions"][0]["entries"].as_array().unwrap().iter().find(|e| e["path"] == "config/settings.json").cloned();
    assert_eq!(e.unwrap()["status"], "drifted");
}

#[test]
fn every_single_fixture_exits_zero_and_writes_only_inside_walj() {
    let dir = fixtures().join("hooks/single");
    let mut names: Vec<_> =
        fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert!(names.len() >= 15);
    for name in names {
        let repo = fixture_project();
        let root = &repo.root;
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(root.join("src/app.css"), "a { color: red }\n").unwrap();
        let before = snapshot(&repo.tmp);
        let (code, out, _err) = hook(&repo, &payload(&format!("single/{name}"), &repo));
        assert_eq!(code, 0, "{name}");
        assert!(out.trim().is_empty() || name.starts_with("session-start"), "{name} printed {out}");
        let after = snapshot(&repo.tmp);
        for (path, _) in after.iter().filter(|(p, m)| before.get(*p) != Some(m)) {
            assert!(path.contains("/.walj/") || path.ends_with("/.walj"), "{name} wrote {path}");
        }
        assert!(!Path::new("/etc/walj-should-never-capture").exists());
        // The journal stays readable.
        let (code, _, err) = repo.run(&["recover", "--json"]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(!err.contains("malformed"), "{name}: {err}");
        let j = root.join(".walj/journal.jsonl");
        match name.as_str() {
            "empty.json" | "truncated.json" => {
                assert!(!j.exists() || fs::read_to_string(&j).unwrap().is_empty(), "{name}");
                let log = fs::read_to_string(root.join(".walj/errors.log")).unwrap();
                assert!(log.contains("payload"), "{name}: {log}");
            }
            "unknown-event.json" => assert!(!j.exists(), "{name}"),
            "outside-project.json" | "traversal.json" => {
                let l = repo.records();
                assert_eq!(l.len(), 1);
                assert_eq!(l[0]["outside"], true, "{name}");
                assert!(l[0].get("before").is_none(), "{name}: nothing captured");
                assert!(!root.join(".walj/store").exists(), "{name}: nothing stored");
            }
            _ => assert!(!repo.records().is_empty(), "{name} recorded nothing"),
        }
    }
}

fn snapshot(dir: &Path) -> std::collections::BTreeMap<String, (u64, Option<std::time::SystemTime>)> {
    let mut m = std::collections::BTreeMap::new();
    fn walk(d: &Path, m: &mut std::collections::BTreeMap<String, (u64, Option<std::time::SystemTime>)>) {
        for e in fs::read_dir(d).unwrap().flatten() {
            let md = e.metadata().unwrap();
            let p = e.path();
            if p.ends_with(".git") {
                continue;
            }
            if md.is_dir() {
                // Folders: their presence counts, not their mtime (a new child changes it).
                m.insert(p.display().to_string(), (0, None));
                walk(&p, m);
            } else {
                m.insert(p.display().to_string(), (md.len(), md.modified().ok()));
            }
        }
    }
    walk(dir, &mut m);
    m
}

#[test]
fn single_fixtures_record_the_right_things() {
    let repo = fixture_project();
    for f in ["post-bash-failure.json", "post-taskupdate.json", "precompact.json", "stop.json", "session-end.json"] {
        assert_eq!(hook(&repo, &payload(&format!("single/{f}"), &repo)).0, 0);
    }
    let l = repo.records();
    let failed = l.iter().find(|l| l["op"] == "failed").unwrap();
    assert_eq!(failed["tool"], "Bash");
    assert!(failed["error"].as_str().unwrap().starts_with("Exit code 101"));
    assert!(l.iter().any(|l| l["kind"] == "task" && l["input"]["taskId"] == "2"));
    assert!(l.iter().any(|l| l["kind"] == "compact" && l["trigger"] == "auto"));
    let stop = l.iter().find(|l| l["kind"] == "stop").unwrap();
    assert_eq!(stop["background_tasks"][0]["command"], "npm run dev");
    assert!(l.iter().any(|l| l["kind"] == "end" && l["reason"] == "prompt_input_exit"));
    let r = recover_json(&repo);
    assert_eq!(r["unresolved"], 0, "commands and todos are context, not entries");
    let (_, status, _) = repo.run(&["status", "--json"]);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["sessions"]["ended"], 1);
}

#[test]
fn legacy_payload_without_tool_use_id_pairs_by_path_and_order() {
    let repo = fixture_project();
    let root = &repo.root;
    let css = root.join("src/app.css");
    fs::create_dir_all(css.parent().unwrap()).unwrap();
    fs::write(&css, "a { color: red }\n").unwrap();
    let pre = payload("single/pre-multiedit-legacy.json", &repo);
    let mut v: Value = serde_json::from_str(&pre).unwrap();
    v.as_object_mut().unwrap().remove("tool_use_id");
    let pre = v.to_string();
    assert_eq!(hook(&repo, &pre).0, 0);
    fs::write(&css, "a { color: green }\n").unwrap();
    v["hook_event_name"] = "PostToolUse".into();
    v["tool_response"] = serde_json::json!({"filePath": css, "originalFileContents": "a { color: red }\n"});
    assert_eq!(hook(&repo, &v.to_string()).0, 0);
    let r = recover_json(&repo);
    let e = &r["sessions"][0]["entries"];
    assert_eq!(e.as_array().unwrap().len(), 1, "{r:#}");
    assert_eq!(e[0]["status"], "applied");
    assert_eq!(e[0]["before"], walj::store::blob_id(b"a { color: red }\n"));
    assert_eq!(e[0]["after"], walj::store::blob_id(b"a { color: green }\n"));
}

#[test]
fn real_client_payloads_killed_mid_bash() {
    let repo = fixture_project();
    let root = &repo.root;
    fs::write(root.join("config/settings.json"), "{\n  \"retries\": 3\n}\n").unwrap();
    fs::create_dir_all(root.join("src")).unwrap();
    let dir = fixtures().join("hooks/real-2.1.328-killed-mid-bash");
    let mut names: Vec<_> =
        fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    for n in &names {
        if n.starts_with("04") {
            fs::write(root.join("config/settings.json"), "{\n  \"retries\": 5\n}\n").unwrap();
        }
        if n.starts_with("06") {
            fs::write(root.join("src/server.rs"), "pub fn serve() {}\n").unwrap();
        }
        assert_eq!(hook(&repo, &payload(&format!("real-2.1.328-killed-mid-bash/{n}"), &repo)).0, 0, "{n}");
    }
    let r = recover_json(&repo);
    assert_eq!(r["unresolved"], 2, "{r:#}");
    assert_eq!(r["sessions"][0]["state"], "crashed");
    let paths: Vec<_> = r["sessions"][0]["entries"].as_array().unwrap().iter().map(|e| e["path"].clone()).collect();
    assert_eq!(paths, vec!["config/settings.json", "src/server.rs"]);
    let (_, text, _) = repo.run(&["recover"]);
    // The payloads were replayed without running the command: it changed nothing.
    assert!(
        crate::common::says_cut_off(
            &text,
            "command never finished (Claude Code stopped while it ran)",
            "echo started > run.log; sleep 60",
            "no changes found"
        ),
        "{text}"
    );
    // Its groups are titled in words, as in the TUI, not by the journal's event names.
    assert!(
        text.contains("\n  File modified: 1 entry\n") && text.contains("\n  Artifact created: 1 entry\n"),
        "{text}"
    );
    assert!(!text.contains("file_modified") && !text.contains("artifact_created"), "{text}");
}

#[test]
fn proposal_python_journal_is_read() {
    let repo = fixture_project();
    let root = &repo.root;
    let script = fixtures().join("../bench/proposal_hook.py");
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: python3 not found");
        return;
    }
    for (path, sid) in [("config/settings.json", "aaaaaa11"), ("docs/api.md", "aaaaaa11"), ("README.md", "bbbbbb22")] {
        let input = serde_json::json!({"session_id": sid, "tool_input": {"file_path": root.join(path)}}).to_string();
        let mut c = Command::new("python3")
            .arg(&script)
            .env("CLAUDE_PROJECT_DIR", &repo.root)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        assert!(c.wait().unwrap().success());
    }
    let journal = root.join(".claude/journal.jsonl");
    let out = repo.walj(&["recover", "--json", "--journal"]).arg(&journal).output().unwrap();
    assert!(out.status.success());
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["unresolved"], 3, "{r:#}");
    assert_eq!(r["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(r["sessions"][0]["sid"], "aaaaaa");
    assert_eq!(r["sessions"][0]["state"], "unknown");
    assert_eq!(r["sessions"][0]["entries"][0]["event"], "config_updated");
    assert_eq!(r["sessions"][0]["entries"][0]["id"], "L1");
}

#[test]
fn sixteen_concurrent_writers_lose_nothing() {
    let (_dir, root) = crate::common::scratch();
    let mut children = Vec::new();
    for w in 0..16 {
        let mut script = String::new();
        for i in 0..25 {
            script.push_str(&format!(
                "{{\"session_id\":\"w{w:02}-session\",\"cwd\":\"{}\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"writer {w} prompt {i} {}\"}}\n",
                root.display(),
                "x".repeat(3000)
            ));
        }
        let f = root.join(format!("in{w}"));
        fs::write(&f, script).unwrap();
        // Each child appends 25 records, one hook process each, all 16 at once.
        children.push(
            Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "while IFS= read -r line; do printf '%s' \"$line\" | '{}' hook --project '{}'; done < '{}'",
                    walj_bin().display(),
                    root.display(),
                    f.display()
                ))
                .env_remove("CLAUDE_PROJECT_DIR")
                .spawn()
                .unwrap(),
        );
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let text = fs::read_to_string(root.join(".walj/journal.jsonl")).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for line in text.lines() {
        assert_eq!(walj::journal::record::check_crc(line.as_bytes()), Some(true), "interleaved: {line:.80}");
        let v: Value = serde_json::from_str(line).unwrap();
        let p = v["prompt"].as_str().unwrap();
        let key: String = p.split(' ').take(4).collect::<Vec<_>>().join(" ");
        assert!(seen.insert(key.clone()), "duplicate {key}");
    }
    assert_eq!(seen.len(), 16 * 25);
}

/// Truncation at every offset and zeroed 512-byte sectors: never a panic, every undamaged
/// line kept, and the journal accepts new appends after.
#[test]
fn damaged_journals_are_read_and_healed() {
    let repo = fixture_project();
    let root = &repo.root;
    replay_crash(&repo, true);
    let journal = root.join(".walj/journal.jsonl");
    let original = fs::read(&journal).unwrap();
    let line_ends: Vec<usize> = original.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1).collect();
    let work = tempfile::tempdir().unwrap();
    let j = work.path().join("journal.jsonl");
    let step = (original.len() / 200).max(1);
    let mut offsets: Vec<usize> = (0..original.len()).step_by(step).collect();
    offsets.extend(line_ends.iter().flat_map(|&e| [e.saturating_sub(1), e, e + 1]));
    for cut in offsets.into_iter().filter(|&c| c <= original.len()) {
        fs::write(&j, &original[..cut]).unwrap();
        let whole = line_ends.iter().filter(|&&e| e <= cut).count() as u64;
        let mut n = 0u64;
        let rep = walj::journal::scan_records(&j, |_, _| n += 1).unwrap();
        assert_eq!(n, whole, "cut at {cut}");
        let torn = rep.problems.iter().filter(|p| matches!(p, walj::journal::Problem::TornTail { .. })).count();
        assert_eq!(torn, usize::from(!line_ends.contains(&cut) && cut > 0), "cut at {cut}: {:?}", rep.problems);
        // A new append after the damage is readable, and so is everything before it.
        walj::journal::JournalWriter::new(&j).append(&walj::journal::Record::new("intent", "after-crash")).unwrap();
        let mut m = 0u64;
        let mut last = String::new();
        walj::journal::scan_records(&j, |_, r| {
            m += 1;
            last = r.session;
        })
        .unwrap();
        // A line cut only at its `\n` is whole: the heal's `\n` completes it.
        let completed = u64::from(line_ends.contains(&(cut + 1)));
        assert_eq!(m, whole + completed + 1, "cut at {cut}");
        assert_eq!(last, "after-crash");
    }
    // Zeroed sectors in the middle and at the tail.
    for sector in 0..original.len().div_ceil(512) {
        let mut b = original.clone();
        let s = sector * 512;
        let e = (s + 512).min(b.len());
        b[s..e].fill(0);
        fs::write(&j, &b).unwrap();
        // Lines untouched by the zeros, counting the `\n` before them, must all be read.
        let intact: Vec<&[u8]> = (0..line_ends.len())
            .filter(|&i| {
                let ls = if i == 0 { 0 } else { line_ends[i - 1] - 1 };
                line_ends[i] <= s || ls >= e
            })
            .map(|i| {
                let ls = if i == 0 { 0 } else { line_ends[i - 1] };
                &original[ls..line_ends[i] - 1]
            })
            .collect();
        let mut read = Vec::new();
        walj::journal::scan_records(&j, |_, r| read.push(r)).unwrap();
        for line in &intact {
            let want = walj::journal::record::parse_record(line).unwrap();
            assert!(read.contains(&want), "sector {sector}: lost an undamaged line");
        }
        assert!(read.len() <= line_ends.len());
        walj::journal::JournalWriter::new(&j).append(&walj::journal::Record::new("intent", "after-zero")).unwrap();
        let mut last = String::new();
        walj::journal::scan_records(&j, |_, r| last = r.session).unwrap();
        assert_eq!(last, "after-zero", "sector {sector}");
    }
    // The binary reports the problems and still answers.
    let mut b = original.clone();
    b[10] = b'#';
    fs::write(&journal, &b).unwrap();
    let (code, out, err) = repo.run(&["recover", "--json"]);
    assert_eq!(code, 0);
    assert!(err.contains("line 1"), "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["unresolved"], 2);
}

/// The sled-style kill loop: this test re-executes itself as a child that appends as fast
/// as it can and prints each acknowledged (synced) record; the parent kills it with
/// SIGKILL at a random moment, then checks every acknowledged record is in the journal
/// and that the journal still accepts appends. Iterations: WALJ_KILL_ITERATIONS (default 40).
#[cfg(unix)]
#[test]
fn kill_nine_loop_loses_no_acknowledged_record() {
    if let Ok(path) = std::env::var("WALJ_KILL_CHILD") {
        let w = walj::journal::JournalWriter::new(Path::new(&path));
        let tag = std::env::var("WALJ_KILL_TAG").unwrap();
        let mut out = std::io::stdout().lock();
        for i in 0.. {
            let r = walj::journal::Record::new("intent", &tag).with("n", i).with("pad", "y".repeat(i % 700));
            w.append(&r).unwrap();
            writeln!(out, "{i}").unwrap();
            out.flush().unwrap();
        }
        return;
    }
    let iterations: u64 = std::env::var("WALJ_KILL_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let exe = std::env::current_exe().unwrap();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut total_acked = 0usize;
    for it in 0..iterations {
        let tag = format!("child-{it}");
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                &exact_name("kill_nine_loop_loses_no_acknowledged_record"),
                "--nocapture",
                "--test-threads=1",
            ])
            .env("WALJ_KILL_CHILD", &journal)
            .env("WALJ_KILL_TAG", &tag)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(std::time::Duration::from_micros(2_000 + seed % 40_000));
        child.kill().unwrap(); // SIGKILL
        let out = child.wait_with_output().unwrap();
        let acked: Vec<u64> =
            String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect();
        let mut found = std::collections::BTreeSet::new();
        walj::journal::scan_records(&journal, |_, r| {
            if r.session == tag {
                found.insert(r.extra["n"].as_u64().unwrap());
            }
        })
        .unwrap();
        for n in &acked {
            assert!(found.contains(n), "iteration {it}: acknowledged record {n} lost");
        }
        total_acked += acked.len();
    }
    // The children must have written: a child that ran no test would acknowledge nothing.
    assert!(total_acked > 0, "no child acknowledged a record in {iterations} iterations");
    walj::journal::JournalWriter::new(&journal).append(&walj::journal::Record::new("intent", "final")).unwrap();
    let mut last = String::new();
    walj::journal::scan_records(&journal, |_, r| last = r.session).unwrap();
    assert_eq!(last, "final");
}

/// The test's PATH with a folder holding `walj` in front: `walj doctor` checks that the hook
/// command `walj hook` finds walj.
fn path_with_walj(repo: &Repo) -> String {
    let bin = repo.tmp.join("walj-bin");
    if !bin.join("walj").exists() {
        fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(walj_bin(), bin.join("walj")).unwrap();
    }
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

#[test]
fn install_and_uninstall_keep_other_hooks() {
    let repo = fixture_project();
    let root = &repo.root;
    let settings = root.join(".claude/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let original = r#"{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "other-tool check"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "model": "opus"
}
"#;
    fs::write(&settings, original).unwrap();
    let (code, out, err) = repo.run(&["install", "--command", "walj hook"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("SessionStart"), "{out}");
    let v: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "other-tool check");
    // Exec form: no `claude` on PATH to ask for its version.
    assert_eq!(v["hooks"]["PreToolUse"][1]["hooks"][0]["command"], "walj");
    assert_eq!(v["hooks"]["PreToolUse"][1]["hooks"][0]["args"], serde_json::json!(["hook"]));
    assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], "notify-send done");
    assert_eq!(v["model"], "opus");
    for ev in ["PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "PreCompact", "SessionStart", "SessionEnd"] {
        assert!(v["hooks"][ev].is_array(), "{ev}");
    }
    let once = fs::read_to_string(&settings).unwrap();
    assert_eq!(repo.run(&["install", "--command", "walj hook"]).0, 0);
    assert_eq!(fs::read_to_string(&settings).unwrap(), once, "install is idempotent");
    let doctor = repo.walj(&["doctor", "--command", "walj hook"]).env("PATH", path_with_walj(&repo)).output().unwrap();
    assert_eq!(doctor.status.code(), Some(0), "{}", String::from_utf8_lossy(&doctor.stdout));
    assert_eq!(repo.run(&["uninstall", "--command", "walj hook"]).0, 0);
    let back: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(original).unwrap());
    // A broken settings file is refused and left alone.
    fs::write(&settings, "{ not json").unwrap();
    let (code, _, err) = repo.run(&["install"]);
    assert_ne!(code, 0);
    assert!(err.contains("settings.json"), "{err}");
    assert_eq!(fs::read_to_string(&settings).unwrap(), "{ not json");
}

#[test]
fn large_payload_and_read_only_walj_never_block() {
    let repo = fixture_project();
    let root = &repo.root;
    // 100 MB prompt: recorded clipped, exit 0.
    let big = format!(
        "{{\"session_id\":\"big\",\"cwd\":\"{}\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"{}\"}}",
        root.display(),
        "z".repeat(100 * 1024 * 1024)
    );
    let (code, _, _) = hook(&repo, &big);
    assert_eq!(code, 0);
    let l = repo.records();
    assert!(l[0]["prompt"].as_str().unwrap().len() < 100_000);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if unsafe_is_root() {
            eprintln!("note: running as root, read-only folders do not stop root; checking exit code only");
        }
        fs::set_permissions(root.join(".walj"), fs::Permissions::from_mode(0o500)).unwrap();
        let (code, _, _) = hook(&repo, &payload("crash-mid-write/05-pre-edit-config.json", &repo));
        assert_eq!(code, 0);
        fs::set_permissions(root.join(".walj"), fs::Permissions::from_mode(0o700)).unwrap();
        let (code, _, err) = repo.run(&["recover"]);
        assert_eq!(code, 0, "{err}");
    }
}

#[cfg(unix)]
fn unsafe_is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

#[test]
fn a_misconfigured_hook_command_still_exits_zero() {
    // Exit 2 from a PreToolUse hook blocks the tool call: bad arguments must not do that.
    for args in [&["hook", "--bogus"][..], &["hook", "extra"], &["hook", "--project"]] {
        let out = Command::new(walj_bin()).args(args).stdin(Stdio::null()).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("walj hook"), "{args:?}");
    }
}

/// With `$CLAUDE_CONFIG_DIR` set, Claude Code reads the user settings from there and not from
/// `~/.claude`: `install --user` writes there, and `doctor` checks that file, not the one in home.
#[test]
fn doctor_and_install_honour_claude_config_dir() {
    let repo = fixture_project().with_home();
    let cfg = repo.tmp.join("claude-config");
    // A file Claude Code does not read while CLAUDE_CONFIG_DIR is set: it must not count.
    let ignored = repo.home.join(".claude/settings.json");
    fs::create_dir_all(ignored.parent().unwrap()).unwrap();
    fs::write(&ignored, r#"{"disableAllHooks": true}"#).unwrap();
    let run = |args: &[&str]| {
        let out = repo
            .walj(args)
            .env("HOME", &repo.home)
            .env("CLAUDE_CONFIG_DIR", &cfg)
            .env("PATH", path_with_walj(&repo))
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, out) = run(&["install", "--user", "--command", "walj hook"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(cfg.join("settings.json").is_file());
    assert_eq!(fs::read_to_string(&ignored).unwrap(), r#"{"disableAllHooks": true}"#);
    let (code, out) = run(&["doctor", "--command", "walj hook"]);
    assert!(!out.contains("disableAllHooks"), "{out}");
    assert!(!out.contains(&ignored.display().to_string()), "{out}");
    assert!(out.contains("[ok] SessionEnd: hooked"), "{out}");
    assert_eq!(code, Some(0), "{out}");
    // Without CLAUDE_CONFIG_DIR, the home file is the user file again: hooks are disabled.
    let out = repo
        .walj(&["doctor", "--command", "walj hook"])
        .env("HOME", &repo.home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("disableAllHooks"));
}

/// `test`'s name as libtest knows it in this test binary (`module::test`): a test that runs
/// itself again as a child with `--exact` must name itself so, or the child runs nothing.
fn exact_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_string(),
    }
}
