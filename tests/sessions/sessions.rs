//! Session context through the real binary (issue 5): sessions list/show/resume/transcript/
//! export/import/delete, procs, compact, and the hook's safe transcript copy.
//!
//! Crashed sessions are replayed from `../shared/fixtures/hooks/crash-mid-write/`: every hook
//! runs under `timeout`, a short-lived parent that walj takes for the Claude Code process, so
//! the session looks crashed once the replay is over (HELPERS.md).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use crate::common::{Parent, Repo, hook_ok, walj_at};
use serde_json::{Value, json};

const SESSION: &str = "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10";

/// A git project (`<tmp>/shop`) made from the fixture's `project/`, and a fake home with
/// the folder Claude Code keeps the session's transcript in.
fn shop() -> Repo {
    let repo = Repo::fixture_in("shop", "hooks/crash-mid-write/project").with_home();
    fs::create_dir_all(repo.home.join(".claude/projects/-work-demo")).unwrap();
    repo
}

fn transcript(repo: &Repo) -> PathBuf {
    repo.home.join(format!(".claude/projects/-work-demo/{SESSION}.jsonl"))
}

/// Runs one hook payload (placeholders substituted) under a short-lived parent (`timeout`),
/// so the session reads as crashed once the hook returns; it must exit 0. Returns stdout.
fn hook(repo: &Repo, payload: &str) -> String {
    hook_ok(&repo.root, &repo.subst(payload), Parent::Timeout(10))
}

fn fixture_hook(repo: &Repo, name: &str) -> String {
    hook(repo, &repo.fixture(&format!("hooks/crash-mid-write/{name}")))
}

/// crash-mid-write, variant (a), with a Stop after the todo list (the turn that planned the
/// work ended; the hook copies the transcript then) and a transcript of real lines.
fn replay_crash(repo: &Repo) {
    let real = fs::read(crate::common::fixtures().join("transcripts/cc-2.1.328-killed-mid-bash.jsonl")).unwrap();
    fs::write(transcript(repo), &real).unwrap();
    for f in ["01-session-start.json", "02-user-prompt.json", "03-pre-todowrite.json", "04-post-todowrite.json"] {
        fixture_hook(repo, f);
    }
    hook(repo, &stop_payload(SESSION, "Planned: raise retries, then regenerate the index."));
    fixture_hook(repo, "05-pre-edit-config.json");
    let cfg = repo.root.join("config/settings.json");
    let text = fs::read_to_string(&cfg).unwrap().replace("\"retries\": 3", "\"retries\": 5");
    fs::write(cfg, text).unwrap();
    fixture_hook(repo, "06-post-edit-config.json");
    fixture_hook(repo, "07-pre-bash-background.json");
    fixture_hook(repo, "08-post-bash-background.json");
    fixture_hook(repo, "09-pre-write-docs.json");
}

fn stop_payload(session: &str, message: &str) -> String {
    json!({
        "session_id": session,
        "transcript_path": format!("${{HOME}}/.claude/projects/-work-demo/{session}.jsonl"),
        "cwd": "${PROJECT}",
        "hook_event_name": "Stop",
        "stop_hook_active": false,
        "last_assistant_message": message,
    })
    .to_string()
}

fn payload(session: &str, event: &str, extra: Value) -> String {
    let mut v = json!({
        "session_id": session,
        "transcript_path": format!("${{HOME}}/.claude/projects/-work-demo/{session}.jsonl"),
        "cwd": "${PROJECT}",
        "hook_event_name": event,
    });
    for (k, val) in extra.as_object().unwrap() {
        v[k] = val.clone();
    }
    v.to_string()
}

fn store_objects(project: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let store = project.join(".walj/store");
    let Ok(rd) = fs::read_dir(&store) else { return out };
    for sub in rd.flatten() {
        for o in fs::read_dir(sub.path()).unwrap().flatten() {
            out.push(format!("{}{}", sub.file_name().to_string_lossy(), o.file_name().to_string_lossy()));
        }
    }
    out.sort();
    out
}

/// Makes every stored object look older than compaction's one-hour grace period.
fn age_objects(project: &Path) {
    for id in store_objects(project) {
        let p = project.join(".walj/store").join(&id[..2]).join(&id[2..]);
        let st = StdCommand::new("touch").arg("-d").arg("3 hours ago").arg(&p).status().unwrap();
        assert!(st.success());
    }
}

// ------------------------------------------------------------------------------------------------

#[test]
fn show_has_both_todos_the_background_command_and_the_prompt() {
    let repo = shop();
    replay_crash(&repo);
    let v = repo.json(&["sessions", "show", "8f14", "--json"]);
    assert_eq!(v["session"], SESSION);
    assert_eq!(v["state"], "crashed");
    assert_eq!(v["prompts"][0]["text"], "Raise the retry count to 5 and regenerate docs/generated-index.md");
    let todos = v["todos"]["items"].as_array().unwrap();
    assert_eq!(todos.len(), 2);
    assert_eq!(todos[0]["content"], "Raise retries in config/settings.json");
    assert_eq!(todos[0]["status"], "in_progress");
    assert_eq!(todos[1]["content"], "Regenerate docs/generated-index.md");
    assert_eq!(todos[1]["status"], "pending");
    let bg: Vec<&Value> = v["commands"].as_array().unwrap().iter().filter(|c| c["background"] == true).collect();
    assert_eq!(bg.len(), 1);
    assert_eq!(bg[0]["command"], "npm run dev");
    assert_eq!(bg[0]["task_id"], "bash_1");
    let procs = v["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 1);
    assert_eq!(procs[0]["command"], "npm run dev");
    assert_eq!(procs[0]["state"], "not_running");
    let files: Vec<(&str, &str)> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["state"].as_str().unwrap()))
        .collect();
    assert_eq!(files, vec![("config/settings.json", "applied"), ("docs/generated-index.md", "in_flight")]);
    assert_eq!(v["unresolved"].as_array().unwrap().len(), 2);
    assert_eq!(v["branch"], "main");
    assert_eq!(v["model"], "claude-sonnet-4-5");

    let text = repo.ok(&["sessions", "show", SESSION]);
    for want in [
        "crashed",
        "[in_progress] Raise retries in config/settings.json",
        "[pending]     Regenerate docs/generated-index.md",
        "npm run dev  (background bash_1)",
        "Raise the retry count to 5 and regenerate docs/generated-index.md",
        "not running",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }

    let list = repo.json(&["sessions", "list", "--json"]);
    let s = &list.as_array().unwrap()[0];
    assert_eq!((s["state"].as_str(), s["unresolved"].as_u64()), (Some("crashed"), Some(2)));
    assert_eq!(
        (s["todos_done"].as_u64(), s["todos_total"].as_u64(), s["prompts"].as_u64()),
        (Some(0), Some(2), Some(1))
    );
    assert_eq!(s["branch"], "main");
    assert!(s["bytes"].as_u64().unwrap() > 0);
    let text = repo.ok(&["sessions"]);
    assert!(text.contains("8f14e4") && text.contains("crashed") && text.contains("0/2"), "{text}");
}

#[test]
fn unknown_session_is_a_clear_error() {
    let repo = shop();
    replay_crash(&repo);
    let out = repo.walj(&["sessions", "show", "zzz"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no session matches \"zzz\"") && err.contains("walj sessions list"), "{err}");
}

#[test]
fn resume_names_every_open_todo_and_both_unresolved_entries_and_is_delivered_once() {
    let repo = shop();
    replay_crash(&repo);
    let v = repo.json(&["sessions", "resume", "8f14e4", "--json"]);
    let brief = v["brief"].as_str().unwrap();
    for want in [
        "[in_progress] Raise retries in config/settings.json",
        "[pending] Regenerate docs/generated-index.md",
        "config/settings.json",
        "docs/generated-index.md",
        // Ids as walj shows them: the shortest unique start after `toolu_01`, 4 characters at least.
        "id Edit)",
        "id Writ;",
        "Raise the retry count to 5",
        "`npm run dev` (task bash_1)",
        "not running",
        "walj procs restart Bash",
        &format!("claude --resume {SESSION}"),
        ".walj/transcripts/",
    ] {
        assert!(brief.contains(want), "brief lacks {want:?}:\n{brief}");
    }
    let entries: Vec<&str> = v["entries"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert_eq!(entries, vec!["toolu_01EditCfg", "toolu_01WriteDoc"]);
    assert!(v["chars"].as_u64().unwrap() <= 9000);

    // The next session start gets it exactly once (and no second recovery note).
    let start = |sid: &str| {
        hook(&repo, &payload(sid, "SessionStart", json!({"source": "startup", "model": "claude-sonnet-4-5"})))
    };
    let first = start("aaaaaaaa-1111-2222-3333-444444444444");
    let out: Value = serde_json::from_str(first.trim()).unwrap();
    let ctx = out["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(ctx.contains(brief.trim_end()), "context:\n{ctx}");
    assert_eq!(ctx.matches("walj resume brief").count(), 1);
    assert!(!ctx.contains("walj recovery note"), "the brief replaces the crash note: {ctx}");
    let second = start("bbbbbbbb-1111-2222-3333-444444444444");
    assert!(!second.contains("walj resume brief"), "delivered twice: {second}");

    // A second resume before delivery supersedes the first: still one brief.
    repo.ok(&["sessions", "resume", "8f14"]);
    repo.ok(&["sessions", "resume", "8f14"]);
    let third = start("cccccccc-1111-2222-3333-444444444444");
    assert_eq!(third.matches("walj resume brief").count(), 1, "{third}");
}

#[test]
fn resume_fits_the_budget_for_a_200_entry_session_without_dropping_items() {
    use walj::journal::{Blob, JournalWriter, Record, kind, op};
    let repo = shop();
    let sid = "deadbeef-0000-4000-8000-000000000200";
    let w = JournalWriter::new(&repo.root.join(".walj/journal.jsonl"));
    fs::create_dir_all(repo.root.join(".walj")).unwrap();
    let mut recs = Vec::new();
    let mut start = Record::new(op::SESSION, sid);
    start.kind = Some(kind::START.into());
    recs.push(start.with("cwd", repo.root.display().to_string()).with("source", "startup"));
    for i in 0..30 {
        let mut p = Record::new(op::SESSION, sid);
        p.kind = Some(kind::PROMPT.into());
        recs.push(p.with(
            "prompt",
            format!("prompt {i}: {}", "please refactor the billing module and keep the API ".repeat(12)),
        ));
    }
    let todos: Vec<Value> = (0..60)
        .map(|i| {
            json!({"content": format!("step {i}: {}", "update the invoice totals and their tests ".repeat(3)),
                   "status": if i < 20 { "completed" } else if i == 20 { "in_progress" } else { "pending" }})
        })
        .collect();
    let mut t = Record::new(op::SESSION, sid);
    t.kind = Some(kind::TODOS.into());
    t.tool = Some("TodoWrite".into());
    recs.push(t.with("todos", todos));
    for i in 0..200 {
        let mut r = Record::new(op::INTENT, sid);
        r.id = format!("toolu_{i:03}entry{i:04}x");
        r.tool = Some("Edit".into());
        r.event = "file_modified".into();
        r.path = format!("src/billing/module_{i:03}/invoice_totals_{i:03}.rs");
        r.before = Some(Blob::Absent);
        recs.push(r.clone());
        if i % 4 == 0 {
            let mut a = r;
            a.op = op::APPLIED.into();
            a.after = Some(Blob::Absent);
            recs.push(a);
        }
    }
    for i in 0..12 {
        let mut c = Record::new(op::INTENT, sid);
        c.id = format!("toolu_cmd{i:02}");
        c.tool = Some("Bash".into());
        recs.push(c.clone().with("command", format!("cargo test -p billing_{i} -- --nocapture")));
        let mut f = c;
        f.op = op::FAILED.into();
        recs.push(f.with("error", "Exit code 101\nerror: test failed"));
    }
    w.append_all(&recs).unwrap();

    let v = repo.json(&["sessions", "resume", &sid[..8], "--json", "--print-only"]);
    let brief = v["brief"].as_str().unwrap();
    let chars = v["chars"].as_u64().unwrap();
    let tokens = v["tokens_estimate"].as_u64().unwrap();
    eprintln!("200-entry brief: {chars} chars, ~{tokens} tokens, level {}", v["level"]);
    if std::env::var_os("SHOW_BRIEF").is_some() {
        eprintln!("{brief}");
    }
    assert!(chars <= 9000 && tokens <= 4000, "{chars} chars / {tokens} tokens");
    assert_eq!(v["entries"].as_array().unwrap().len(), 200);
    // Every unresolved entry and every open todo is named (in full or in the counted rest).
    // Ids are shown by their shortest unique start among every id of the journal.
    let all: Vec<String> = (0..200)
        .map(|i| format!("toolu_{i:03}entry{i:04}x"))
        .chain((0..12).map(|i| format!("toolu_cmd{i:02}")))
        .collect();
    let ids = walj::fold::ShortIds::new(all.iter().map(String::as_str));
    for id in &all[..200] {
        let short = ids.short(id);
        assert!(short.len() <= 5, "{id} is shown as {short}");
        assert!(brief.contains(short), "entry {short} missing");
    }
    // Open todos: 21–60 (positions), shown in full or as ranges of the counted rest.
    let shown: Vec<usize> = (21..=60).filter(|i| brief.contains(&format!("(todo {i})"))).collect();
    let last_shown = *shown.last().unwrap();
    assert_eq!(shown, (21..=last_shown).collect::<Vec<_>>());
    if last_shown < 60 {
        assert!(brief.contains(&format!("pending: todos {}–60", last_shown + 1)), "{brief}");
    }
    assert!(brief.contains("[in_progress] step 20"), "{brief}");
    for i in 0..12 {
        assert!(brief.contains(&format!("cmd{i:02}")), "failed command {i} missing");
    }
    assert!(brief.contains("30 prompts") && brief.contains("prompt 29:"), "newest prompt first");
    assert!(brief.contains("more unresolved changes"), "the rest is counted");
    // --print-only delivers nothing.
    let out =
        hook(&repo, &payload("eeeeeeee-0000-0000-0000-000000000000", "SessionStart", json!({"source": "startup"})));
    assert!(!out.contains("walj resume brief"), "{out}");
}

#[test]
fn safe_copy_keeps_the_lines_a_truncated_transcript_lost() {
    let repo = shop();
    replay_crash(&repo);
    let original = fs::read(transcript(&repo)).unwrap();
    // The crash (or anything) cuts the transcript mid-line.
    fs::write(transcript(&repo), &original[..original.len() / 3]).unwrap();
    let out_file = repo.tmp.join("restored.jsonl");
    let out = repo.walj(&["sessions", "transcript", "8f14", "-o"]).arg(&out_file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let restored = fs::read(&out_file).unwrap();
    assert_eq!(restored, original, "the copy holds every line of the transcript at the last Stop");
    let v = repo.json(&["sessions", "show", "8f14", "--json"]);
    assert!(v["transcript"]["copied"].as_u64().unwrap() > v["transcript"]["original_bytes"].as_u64().unwrap());

    // The original vanishes: the copy still writes it back (to stdout too).
    fs::remove_file(transcript(&repo)).unwrap();
    let stdout = repo.walj(&["sessions", "transcript", SESSION, "-o", "-"]).output().unwrap();
    assert!(stdout.status.success());
    assert_eq!(stdout.stdout, original);
    // An existing file is not overwritten without --force; with it, the old bytes are kept.
    let again = repo.walj(&["sessions", "transcript", "8f14", "-o"]).arg(&out_file).output().unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
}

#[test]
fn vanished_transcript_without_copy_is_a_clear_error() {
    let repo = shop();
    for f in ["01-session-start.json", "02-user-prompt.json"] {
        fixture_hook(&repo, f);
    }
    let out = repo.walj(&["sessions", "transcript", "8f14"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no safe copy") && err.contains("is gone"), "{err}");
}

#[cfg(feature = "age")]
fn fresh_checkout(repo: &Repo, name: &str) -> PathBuf {
    // A second checkout of the same files (as a teammate would have), without .walj.
    let p = repo.tmp.join(name);
    crate::common::copy_tree(&repo.root, &p);
    assert!(!p.join(".walj").exists());
    p
}

/// Exports the crashed session beside the project: plain to `<tmp>/<plain>`, and encrypted
/// with `passphrase` to `<tmp>/<enc>`; both must succeed.
#[cfg(feature = "age")]
fn export_plain_and_encrypted(repo: &Repo, plain: &str, enc: &str, passphrase: &str) -> (PathBuf, PathBuf) {
    let plain = repo.tmp.join(plain);
    let enc = repo.tmp.join(enc);
    repo.ok(&["sessions", "export", "8f14", "-o", plain.to_str().unwrap()]);
    let out = walj_at(&repo.root)
        .env("WALJ_PASSPHRASE", passphrase)
        .args(["sessions", "export", "8f14", "--encrypt", "-o"])
        .arg(&enc)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (plain, enc)
}

/// `walj sessions import FILE` into the project `dest`, with a passphrase (`WALJ_PASSPHRASE`)
/// or an identity file when given.
#[cfg(feature = "age")]
fn import(dest: &Path, file: &Path, pass: Option<&str>, identity: Option<&Path>) -> std::process::Output {
    let mut c = walj_at(dest);
    c.args(["sessions", "import", "--yes"]).arg(file);
    if let Some(p) = pass {
        c.env("WALJ_PASSPHRASE", p);
    }
    if let Some(i) = identity {
        c.arg("--identity").arg(i);
    }
    c.output().unwrap()
}

#[cfg(feature = "age")]
#[test]
fn export_import_plain_encrypted_and_to_recipients_give_the_same_recover() {
    let repo = shop();
    replay_crash(&repo);
    let recover = repo.ok(&["recover", "--json"]);
    let (plain, enc) = export_plain_and_encrypted(&repo, "s.walj", "s.walj.age", "correct horse");
    assert!(fs::read(&enc).unwrap().starts_with(b"age-encryption.org/v1"));
    let identity = age::x25519::Identity::generate();
    let id_file = repo.tmp.join("key.txt");
    {
        use age::secrecy::ExposeSecret;
        fs::write(&id_file, format!("{}\n", identity.to_string().expose_secret())).unwrap();
    }
    let to_key = repo.tmp.join("s.walj.key.age");
    repo.ok(&[
        "sessions",
        "export",
        "8f14",
        "--recipient",
        &identity.to_public().to_string(),
        "-o",
        to_key.to_str().unwrap(),
    ]);

    for (name, file, pass, ident) in [
        ("plain", &plain, None, None),
        ("passphrase", &enc, Some("correct horse"), None),
        ("recipient", &to_key, None, Some(id_file.as_path())),
    ] {
        let dest = fresh_checkout(&repo, &format!("checkout-{name}"));
        let out = import(&dest, file, pass, ident);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let got = walj_at(&dest).args(["recover", "--json"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&got.stdout), recover, "{name}: recover --json differs");
        let list: Value =
            serde_json::from_slice(&walj_at(&dest).args(["sessions", "list", "--json"]).output().unwrap().stdout)
                .unwrap();
        assert_eq!(list[0]["session"], SESSION);
        assert_eq!(list[0]["imported"], true);
        // The transcript copy came along.
        let t = walj_at(&dest).args(["sessions", "transcript", "8f14", "-o", "-"]).output().unwrap();
        assert_eq!(t.stdout, fs::read(transcript(&repo)).unwrap(), "{name}");
        // Background commands restart in this checkout, not in the one they were recorded in.
        let r = walj_at(&dest).args(["procs", "restart", "01BashDev"]).write_stdin("n\n").output().unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(&format!("folder   {}", dest.display())), "{name}: {err}");
        assert!(err.contains("Nothing started"), "{err}");
        // Importing twice adds nothing.
        let journal = fs::read(dest.join(".walj/journal.jsonl")).unwrap();
        let again = import(&dest, file, pass, ident);
        assert!(again.status.success());
        assert!(String::from_utf8_lossy(&again.stdout).contains("nothing new"));
        assert_eq!(
            fs::read(dest.join(".walj/journal.jsonl")).unwrap(),
            journal,
            "{name}: second import changed the journal"
        );
    }
}

/// Runs an import that must fail; checks the message and that nothing was written.
#[cfg(feature = "age")]
fn refused(repo: &Repo, file: &Path, pass: Option<&str>, want: &[&str]) {
    let dest = repo.tmp.join(format!("refused-{}", file.file_name().unwrap().to_string_lossy()));
    fs::create_dir_all(&dest).unwrap();
    let out = import(&dest, file, pass, None);
    let err = String::from_utf8_lossy(&out.stderr);
    // Refused for what it holds (a path, a session id, a limit): 2; damaged or unreadable: 1.
    let code = if want.contains(&"refused") { 2 } else { 1 };
    assert_eq!(out.status.code(), Some(code), "{}: {err}", file.display());
    for w in want {
        assert!(err.contains(w), "{}: {err:?} lacks {w:?}", file.display());
    }
    assert!(err.contains("nothing was imported"), "{err}");
    assert!(!dest.join(".walj/journal.jsonl").exists(), "journal written");
    assert!(store_objects(&dest).is_empty(), "objects written");
    assert!(!dest.join(".walj/transcripts").exists(), "transcript written");
}

#[cfg(feature = "age")]
#[test]
fn bad_bundles_are_refused_with_nothing_written() {
    let repo = shop();
    replay_crash(&repo);
    let (plain, enc) = export_plain_and_encrypted(&repo, "good.walj", "good.age", "right");
    let plain_bytes = fs::read(&plain).unwrap();
    let enc_bytes = fs::read(&enc).unwrap();

    refused(&repo, &enc, Some("wrong"), &["wrong passphrase"]);
    let no_pass = repo.tmp.join("nopass.age");
    fs::write(&no_pass, &enc_bytes).unwrap();
    refused(&repo, &no_pass, None, &["WALJ_PASSPHRASE"]);

    let write = |name: &str, bytes: &[u8]| {
        let p = repo.tmp.join(name);
        fs::write(&p, bytes).unwrap();
        p
    };
    let mut flipped = plain_bytes.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x01;
    refused(&repo, &write("flipped.walj", &flipped), None, &["damaged or changed"]);
    let mut flipped = enc_bytes.clone();
    let at = flipped.len() - 40;
    flipped[at] ^= 0x01;
    refused(&repo, &write("flipped.age", &flipped), Some("right"), &["damaged or changed"]);

    refused(&repo, &write("cut.walj", &plain_bytes[..plain_bytes.len() * 2 / 3]), None, &["truncated"]);
    // age cannot tell a cut from a change (the last chunk no longer authenticates).
    refused(&repo, &write("cut.age", &enc_bytes[..enc_bytes.len() * 2 / 3]), Some("right"), &["cut short or changed"]);
    refused(&repo, &write("junk.walj", b"hello, not a bundle"), None, &["not a walj session bundle"]);

    // A bundle from a newer walj.
    let payload = zstd::stream::decode_all(&plain_bytes[..]).unwrap();
    let text = String::from_utf8(payload).unwrap().replacen("{\"walj_bundle\":1,", "{\"walj_bundle\":2,", 1);
    let newer = zstd::stream::encode_all(text.as_bytes(), 3).unwrap();
    refused(&repo, &write("newer.walj", &newer), None, &["newer walj", "version 2"]);

    // A record whose path leaves the project (valid checksums: built with walj's own writer).
    use walj::journal::record::{Record, parse_record};
    use walj::session::bundle::{self, Keys, Protection};
    let mut none = || None;
    let good = bundle::read(&plain, &mut Keys { passphrase: &mut none, identities: vec![] }).unwrap();
    for (name, bad_path) in [("escape.walj", "../outside.txt"), ("absolute.walj", "/etc/passwd")] {
        let mut c = good.clone();
        let mut records = Vec::new();
        for line in c.records.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let mut r: Record = parse_record(line).unwrap();
            if r.path == "config/settings.json" {
                r.path = bad_path.into();
            }
            records.extend_from_slice(&r.to_line());
        }
        c.records = records;
        let p = repo.tmp.join(name);
        bundle::write(&p, &c, &Protection::None).unwrap();
        refused(&repo, &p, None, &["refused", bad_path]);
    }
}

#[test]
fn delete_and_compact_keep_every_unresolved_entry_and_recover_output() {
    let repo = shop();
    replay_crash(&repo);
    // A second, clean session B: an edit verified at Stop, then SessionEnd.
    let b = "b0b0b0b0-0000-4000-8000-00000000000b";
    hook(&repo, &payload(b, "SessionStart", json!({"source": "startup"})));
    hook(&repo, &payload(b, "UserPromptSubmit", json!({"prompt": "add a README"})));
    let readme = repo.root.join("README.md");
    let file = readme.display().to_string();
    let input = json!({"file_path": file, "content": "# shop\n"});
    hook(
        &repo,
        &payload(b, "PreToolUse", json!({"tool_name": "Write", "tool_use_id": "toolu_B1", "tool_input": input})),
    );
    fs::write(&readme, "# shop\n").unwrap();
    hook(
        &repo,
        &payload(
            b,
            "PostToolUse",
            json!({"tool_name": "Write", "tool_use_id": "toolu_B1", "tool_input": input, "tool_response": {"type": "create", "filePath": file}}),
        ),
    );
    hook(&repo, &stop_payload(b, "Added the README."));
    hook(&repo, &payload(b, "SessionEnd", json!({"reason": "prompt_input_exit"})));
    let list = repo.json(&["sessions", "list", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 2);
    let recover = repo.ok(&["recover", "--json"]);
    let parsed: Value = serde_json::from_str(&recover).unwrap();
    assert_eq!(parsed["unresolved"], 2);
    let b_after = blob_of(&repo.root, "toolu_B1");
    age_objects(&repo.root);

    // A session with unresolved entries is not deleted without --force.
    let out = repo.walj(&["sessions", "delete", "8f14", "--yes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unresolved"));
    // Asked, and answered no: nothing changes.
    let journal = fs::read(repo.root.join(".walj/journal.jsonl")).unwrap();
    let out = repo.walj(&["sessions", "delete", "b0b0"]).write_stdin("n\n").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Nothing deleted"));
    assert_eq!(fs::read(repo.root.join(".walj/journal.jsonl")).unwrap(), journal);
    // Answered yes.
    let out = repo.walj(&["sessions", "delete", "b0b0"]).write_stdin("y\n").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(repo.ok(&["recover", "--json"]), recover, "delete changed recover");
    let list = repo.json(&["sessions", "list", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let objects = store_objects(&repo.root);
    assert!(!objects.contains(&b_after), "B's post-image should be gone");
    for id in unresolved_blobs(&parsed) {
        assert!(objects.contains(&id), "object {id} of an unresolved entry was removed");
    }
    // Only B's announcement of A's crash is left (without it A would be announced again).
    let j = fs::read_to_string(repo.root.join(".walj/journal.jsonl")).unwrap();
    let left: Vec<&str> = j.lines().filter(|l| l.contains(b)).collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].contains("\"kind\":\"announced\"") && left[0].contains(SESSION));

    // Another session C starts (A's crash was announced once, at B's start: not again), then
    // ends; then a garbage line.
    let c = "c0c0c0c0-0000-4000-8000-00000000000c";
    let note = hook(&repo, &payload(c, "SessionStart", json!({"source": "startup"})));
    assert!(!note.contains("walj recovery note"), "{note}");
    hook(&repo, &payload(c, "SessionEnd", json!({"reason": "other"})));
    let mut f = fs::OpenOptions::new().append(true).open(repo.root.join(".walj/journal.jsonl")).unwrap();
    f.write_all(b"{\"v\":2,\"this is\": not json\n").unwrap();
    drop(f);
    fs::write(repo.root.join(".walj/config.toml"), "[retention]\ndays = 0\n").unwrap();
    let before_bytes = fs::read(repo.root.join(".walj/journal.jsonl")).unwrap();
    let rep = repo.json(&["compact", "--json", "--yes"]);
    assert_eq!(rep["retention_days"], 0);
    assert_eq!(rep["unreadable"], 1);
    let broken = PathBuf::from(rep["broken_copy"].as_str().unwrap());
    assert_eq!(fs::read(&broken).unwrap(), before_bytes, ".broken keeps the original journal");
    assert!(rep["records_after"].as_u64().unwrap() < rep["records_before"].as_u64().unwrap(), "{rep}");
    assert_eq!(repo.ok(&["recover", "--json"]), recover, "compact changed recover");
    let after = fs::read_to_string(repo.root.join(".walj/journal.jsonl")).unwrap();
    assert!(!after.contains("not json"));
    // Compacting again changes nothing.
    let j1 = fs::read(repo.root.join(".walj/journal.jsonl")).unwrap();
    let rep = repo.json(&["compact", "--json", "--yes"]);
    assert_eq!(rep["records_before"], rep["records_after"]);
    assert_eq!(fs::read(repo.root.join(".walj/journal.jsonl")).unwrap(), j1);
    // C is gone; B's announcement of the crash stays: no second recovery note.
    let list = repo.json(&["sessions", "list", "--json"]);
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let note =
        hook(&repo, &payload("d0d0d0d0-0000-4000-8000-00000000000d", "SessionStart", json!({"source": "startup"})));
    assert!(!note.contains("walj recovery note"), "announced twice after compaction: {note}");
    // The crashed session keeps its whole context.
    let v = repo.json(&["sessions", "show", "8f14", "--json"]);
    assert_eq!(v["todos"]["items"].as_array().unwrap().len(), 2);
    assert_eq!(v["prompts"].as_array().unwrap().len(), 1);
    assert_eq!(v["commands"].as_array().unwrap().len(), 1);
}

fn blob_of(project: &Path, id: &str) -> String {
    let j = fs::read_to_string(project.join(".walj/journal.jsonl")).unwrap();
    for l in j.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        if v["id"] == id && v["op"] == "applied" {
            return v["after"].as_str().unwrap().to_string();
        }
    }
    panic!("no applied record for {id}");
}

fn unresolved_blobs(recover: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for s in recover["sessions"].as_array().unwrap() {
        for e in s["entries"].as_array().unwrap() {
            for k in ["before", "after"] {
                if let Some(id) = e[k].as_str().filter(|s| s.len() == 40) {
                    out.push(id.to_string());
                }
            }
        }
    }
    assert!(!out.is_empty());
    out
}

#[test]
fn compact_waits_for_concurrent_hooks_and_loses_no_record() {
    let repo = shop();
    replay_crash(&repo);
    fs::write(repo.root.join(".walj/config.toml"), "[retention]\ndays = 0\n").unwrap();
    // A session kept by every compaction (an edit in flight), whose prompts arrive while the
    // journal is rewritten; throw-away sessions give each compaction something to drop.
    let sid = "f0f0f0f0-0000-4000-8000-00000000000f";
    hook(&repo, &payload(sid, "SessionStart", json!({"source": "startup"})));
    let file = repo.root.join("notes.txt").display().to_string();
    hook(
        &repo,
        &payload(
            sid,
            "PreToolUse",
            json!({"tool_name": "Write", "tool_use_id": "toolu_F1", "tool_input": {"file_path": file, "content": "x"}}),
        ),
    );
    let repo = &repo;
    let rewrites = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..3)
            .map(|t| {
                scope.spawn(move || {
                    for i in 0..12 {
                        hook(repo, &payload(sid, "UserPromptSubmit", json!({"prompt": format!("prompt {t}-{i}")})));
                        let other = format!("e{t}{i:02}0000-0000-4000-8000-000000000000");
                        hook(repo, &payload(&other, "SessionStart", json!({"source": "startup"})));
                        hook(repo, &payload(&other, "SessionEnd", json!({"reason": "other"})));
                    }
                })
            })
            .collect();
        // Compact over and over while the hooks run.
        let mut rewrites = 0;
        let mut runs = 0;
        while runs < 4 || writers.iter().any(|w| !w.is_finished()) {
            let out = repo.walj(&["compact", "--json", "--yes"]).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let rep: Value = serde_json::from_slice(&out.stdout).unwrap();
            if rep["records_after"] != rep["records_before"] {
                rewrites += 1;
            }
            runs += 1;
        }
        for w in writers {
            w.join().unwrap();
        }
        rewrites
    });
    assert!(rewrites > 0, "no compaction rewrote the journal");
    let v = repo.json(&["sessions", "show", "f0f0", "--json"]);
    assert_eq!(v["prompts"].as_array().unwrap().len(), 36, "a prompt was lost");
    assert_eq!(repo.json(&["recover", "--json"])["unresolved"], 3);
}

#[test]
fn procs_lists_running_and_gone_commands_and_restart_asks_first() {
    let repo = shop();
    let sid = "a1a1a1a1-0000-4000-8000-0000000000a1";
    hook(&repo, &payload(sid, "SessionStart", json!({"source": "startup"})));
    let cmd = "sleep 313";
    let input = json!({"command": cmd, "description": "wait", "run_in_background": true});
    hook(
        &repo,
        &payload(sid, "PreToolUse", json!({"tool_name": "Bash", "tool_use_id": "toolu_BG1", "tool_input": input})),
    );
    hook(
        &repo,
        &payload(
            sid,
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "toolu_BG1", "tool_input": input,
               "tool_response": {"stdout": "", "stderr": "", "interrupted": false, "backgroundTaskId": "bash_7"}}),
        ),
    );
    let state_of = |repo: &Repo| -> (String, Vec<u64>) {
        let v = repo.json(&["procs", "--json"]);
        let p = v.as_array().unwrap().iter().find(|p| p["id"] == "toolu_BG1").unwrap().clone();
        assert_eq!(p["task_id"], "bash_7");
        assert_eq!(p["command"], cmd);
        (
            p["state"].as_str().unwrap().to_string(),
            p["pids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect(),
        )
    };
    assert_eq!(state_of(&repo).0, "not_running");
    // The same command running in the project folder counts; elsewhere it does not.
    let mut elsewhere = StdCommand::new("sleep").arg("313").current_dir(&repo.tmp).spawn().unwrap();
    wait_exec(elsewhere.id(), "sleep\x00313\x00");
    assert_eq!(state_of(&repo).0, "not_running");
    let mut child = StdCommand::new("sleep").arg("313").current_dir(&repo.root).spawn().unwrap();
    wait_exec(child.id(), "sleep\x00313\x00");
    let (state, pids) = state_of(&repo);
    assert_eq!(state, "running");
    assert!(pids.contains(&u64::from(child.id())), "{pids:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    elsewhere.kill().unwrap();
    elsewhere.wait().unwrap();
    assert_eq!(state_of(&repo).0, "not_running");

    // Restart: shown and asked; "no" starts nothing.
    let out = repo.walj(&["procs", "restart", "BG1"]).write_stdin("n\n").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(cmd) && err.contains(&repo.root.display().to_string()) && err.contains("Nothing started"),
        "{err}"
    );
    assert_eq!(state_of(&repo).0, "not_running");
    // --yes starts it, detached, output in .walj/procs/<id>.log.
    let out = repo.walj(&["procs", "restart", "bash_7", "--yes"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let pid: i32 = stdout.split_whitespace().nth(2).unwrap().trim_end_matches(':').parse().unwrap();
    let log = repo.root.join(".walj/procs/toolu_BG1.log");
    assert!(fs::read_to_string(&log).unwrap().contains("walj procs restart"));
    let (state, pids) = state_of(&repo);
    // Kill what we started before asserting, so a failure leaves no process behind.
    let _ = StdCommand::new("kill").arg(pid.to_string()).status();
    assert_eq!(state, "running");
    assert!(pids.contains(&(pid as u64)), "{pids:?} vs {pid}");
    // An unknown id says how to find one.
    let out = repo.walj(&["procs", "restart", "nope", "--yes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("walj procs"));
}

/// Waits until process `pid` runs `cmdline` (NUL-separated, as /proc shows it).
fn wait_exec(pid: u32, cmdline: &str) {
    for _ in 0..200 {
        if fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == cmdline.as_bytes()) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("process {pid} never ran {cmdline:?}");
}

#[test]
fn hook_logs_a_failed_copy_and_still_exits_zero() {
    let repo = shop();
    fs::write(transcript(&repo), b"{\"type\":\"user\"}\n").unwrap();
    fixture_hook(&repo, "01-session-start.json");
    // `.walj/transcripts` is a file: the copy cannot be made.
    fs::write(repo.root.join(".walj/transcripts"), b"in the way").unwrap();
    hook(&repo, &stop_payload(SESSION, "done"));
    let errors = fs::read_to_string(repo.root.join(".walj/errors.log")).unwrap();
    assert!(errors.contains("transcript copy of session"), "{errors}");
    // The Stop itself was recorded.
    let j = fs::read_to_string(repo.root.join(".walj/journal.jsonl")).unwrap();
    assert!(j.contains("\"kind\":\"stop\""));
}

/// The hook's copy at Stop on a 50 MB transcript: the second Stop appends only what is new.
#[test]
fn incremental_copy_writes_only_new_bytes_on_a_50_mb_transcript() {
    let repo = shop();
    fixture_hook(&repo, "01-session-start.json");
    // 50 MB of transcript-like lines.
    let mut big = Vec::with_capacity(50 << 20);
    let mut i = 0u64;
    while big.len() < 50 << 20 {
        writeln!(
            big,
            r#"{{"type":"assistant","uuid":"u{i:012}","message":{{"content":[{{"type":"text","text":"line {i}: {}"}}]}}}}"#,
            "the quick brown fox jumps over the lazy dog ".repeat(1 + (i % 7) as usize)
        )
        .unwrap();
        i += 1;
    }
    fs::write(transcript(&repo), &big).unwrap();
    let copy = repo.root.join(format!(".walj/transcripts/{SESSION}.jsonl.zst"));
    let sidecar = repo.root.join(format!(".walj/transcripts/{SESSION}.offset"));

    let t0 = std::time::Instant::now();
    hook(&repo, &stop_payload(SESSION, "first"));
    let first = t0.elapsed();
    let z1 = fs::read(&copy).unwrap();

    // 64 KiB of new, incompressible lines (so the bytes written cannot hide in compression).
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut new = Vec::new();
    while new.len() < 64 * 1024 {
        let mut hex = String::new();
        for _ in 0..32 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            hex.push_str(&format!("{rng:016x}"));
        }
        writeln!(new, r#"{{"type":"user","noise":"{hex}"}}"#).unwrap();
    }
    fs::OpenOptions::new().append(true).open(transcript(&repo)).unwrap().write_all(&new).unwrap();
    let t1 = std::time::Instant::now();
    hook(&repo, &stop_payload(SESSION, "second"));
    let second = t1.elapsed();
    let z2 = fs::read(&copy).unwrap();
    let written = (z2.len() - z1.len()) as u64;
    let side: Value = serde_json::from_slice(&fs::read(&sidecar).unwrap()).unwrap();
    eprintln!(
        "50 MB transcript: first copy {first:?} ({} B zst), second copy of {} new bytes {second:?}, {written} B appended to the copy, sidecar {} B",
        z1.len(),
        new.len(),
        fs::metadata(&sidecar).unwrap().len()
    );
    // The copy only grew: its first bytes are untouched, and it grew by about the new bytes.
    assert_eq!(&z2[..z1.len()], &z1[..], "the copy was rewritten");
    assert!(written <= new.len() as u64 + 4096, "{written} bytes written for {} new", new.len());
    assert!(written >= new.len() as u64 / 4, "the new bytes are incompressible: {written}");
    assert_eq!(side["offset"].as_u64().unwrap(), (big.len() + new.len()) as u64);
    assert!(fs::metadata(&sidecar).unwrap().len() < 1024);

    // The library path measures what the copy reads from the original: only the new bytes
    // plus two 4 KB fingerprints.
    let project = walj::project::Project::at(repo.root.clone(), None);
    let more = b"{\"type\":\"user\",\"tail\":true}\n";
    fs::OpenOptions::new().append(true).open(transcript(&repo)).unwrap().write_all(more).unwrap();
    let stats = walj::session::transcript::copy(&project, SESSION, &transcript(&repo)).unwrap();
    assert_eq!(stats.outcome, "appended");
    assert_eq!(stats.appended, more.len() as u64);
    assert!(stats.read <= more.len() as u64 + 4 * 4096, "read {} bytes for {} new", stats.read, more.len());
    let mut all = big;
    all.extend_from_slice(&new);
    all.extend_from_slice(more);
    let back = walj::session::transcript::read_copy(&project, SESSION).unwrap().unwrap();
    assert!(back == all, "the copy differs from the transcript");
}

/// `[retention] auto`: a SessionEnd past the size threshold starts a detached compaction; the
/// hook does not wait for it; `auto = false` starts none.
#[test]
fn a_large_journal_is_compacted_by_itself_after_session_end() {
    for auto in [true, false] {
        let repo = shop();
        replay_crash(&repo);
        fs::write(repo.root.join(".walj/config.toml"), format!("[retention]\nauto = {auto}\nauto_mb = 0\n")).unwrap();
        let started = std::time::Instant::now();
        hook(&repo, &payload("5e551011-other-session", "SessionEnd", json!({"reason": "other"})));
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "the hook waited");
        // The compaction ran (its report) and dropped its claim.
        let last = repo.root.join(".walj/compact.last");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let done = || last.exists() && !repo.root.join(".walj/compact.auto").exists();
        while auto && !done() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert_eq!(last.exists(), auto, "auto = {auto}");
        if auto {
            let v: Value = serde_json::from_slice(&fs::read(&last).unwrap()).unwrap();
            assert!(v["report"].is_object() && v["ts"].is_string(), "{v}");
        }
        assert!(!repo.root.join(".walj/compact.auto").exists());
        assert!(
            !repo.root.join(".walj/errors.log").exists(),
            "{:?}",
            fs::read_to_string(repo.root.join(".walj/errors.log"))
        );
        // Nothing unresolved was lost.
        let out = walj_at(&repo.root).args(["recover", "--json"]).output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["unresolved"], 2, "{v}");
    }
}

/// A foreground Bash command still running when its session died is told as what it is, never
/// listed among the session's background processes.
#[test]
fn a_killed_foreground_command_is_not_a_background_process() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    repo.hook(&repo.start_payload(SESSION));
    let pre = json!({
        "session_id": SESSION,
        "transcript_path": format!("/home/test/.claude/projects/x/{SESSION}.jsonl"),
        "cwd": repo.root,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "cargo build --release", "description": "Build"},
        "tool_use_id": "toolu_FG",
    });
    repo.hook(&pre.to_string()); // no PostToolUse: the session died while it ran
    let out = repo.ok(&["sessions", "show", SESSION]);
    let bg = out.split("Background processes (").nth(1).unwrap_or_else(|| panic!("{out}"));
    assert!(bg.starts_with("0)"), "the foreground command is listed as a background process:\n{out}");
    let cut = out
        .split("Foreground commands running when the session died (1)")
        .nth(1)
        .unwrap_or_else(|| panic!("the cut-off command is not told:\n{out}"));
    assert!(cut.contains("cargo build --release") && cut.contains("a foreground command"), "{out}");
    // `walj procs` tells it as a foreground command too.
    let procs = repo.ok(&["procs"]);
    assert!(procs.contains("cargo build --release  ") && procs.contains("a foreground command"), "{procs}");
}
