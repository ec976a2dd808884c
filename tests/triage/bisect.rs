//! `walj bisect` through the real binary in real git repositories (issue 32). Sessions are
//! built by replaying Claude Code's hook payloads through `walj hook` (Edits, Writes, a Bash
//! `sed -i` run for real between its PreToolUse and PostToolUse, a subagent's Edit); the
//! command under test is a real shell script in the tree that counts its runs in a file
//! outside it.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command as Std;
use std::time::{Duration, Instant};

use crate::common::{Claude, Repo};
use serde_json::{Value, json};
use walj::store::blob_id;

const SESSION: &str = "b15ec7a1-0000-4000-8000-000000000032";

const LIB: &str = "header\none\ntwo\nthree\nfour\nanswer=42\nfive\nsix\nseven\neight\ngamma\n";
/// The project's test: the answer must be 42.
const TEST: &str = "#!/bin/sh\ngrep -qx 'answer=42' lib.txt\n";

/// Every file of the working tree (not `.git`, not `.walj`) and its blob id.
fn tree_hashes(root: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            if name == ".git" || name == ".walj" {
                continue;
            }
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_path_buf(), blob_id(&fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// A payload of this session.
fn base(repo: &Repo, event: &str) -> Value {
    json!({
        "session_id": SESSION,
        "transcript_path": format!("/home/test/.claude/projects/x/{SESSION}.jsonl"),
        "cwd": repo.root,
        "hook_event_name": event,
    })
}

/// A Bash command as Claude Code runs it: PreToolUse, the command for real, PostToolUse.
fn bash(repo: &Repo, id: &str, command: &str) {
    let mut pre = base(repo, "PreToolUse");
    pre["tool_name"] = json!("Bash");
    pre["tool_use_id"] = json!(id);
    pre["tool_input"] = json!({"command": command, "description": "edit"});
    repo.hook(&pre.to_string());
    assert!(Std::new("sh").arg("-c").arg(command).current_dir(&repo.root).status().unwrap().success());
    let mut post = pre.clone();
    post["hook_event_name"] = json!("PostToolUse");
    post["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
    repo.hook(&post.to_string());
}

/// An Edit made by a subagent (its payloads carry `agent_id` and `agent_type`).
fn subagent_edit(repo: &Repo, id: &str, rel: &str, old: &str, new: &str) {
    let file = repo.path(rel);
    let mut pre = base(repo, "PreToolUse");
    pre["agent_id"] = json!("a7c0ffee");
    pre["agent_type"] = json!("general-purpose");
    pre["tool_name"] = json!("Edit");
    pre["tool_use_id"] = json!(id);
    pre["tool_input"] = json!({"file_path": file, "old_string": old, "new_string": new, "replace_all": false});
    repo.hook(&pre.to_string());
    let original = repo.read(rel);
    repo.write(rel, &original.replacen(old, new, 1));
    let mut post = pre.clone();
    post["hook_event_name"] = json!("PostToolUse");
    post["tool_response"] = json!({"filePath": file, "oldString": old, "newString": new, "originalFile": original, "userModified": false, "replaceAll": false});
    repo.hook(&post.to_string());
}

/// The repository of the issue's session: 12 steps, step 7 breaks the test.
fn twelve_steps() -> Repo {
    let repo = Repo::new(&[
        ("lib.txt", LIB),
        ("test.sh", TEST),
        ("notes.md", "# notes\nfirst\n"),
        ("conf.txt", "mode=slow\nlevel=1\n"),
        ("a.txt", "alpha beta\n"),
        ("b.txt", "beta gamma\n"),
    ]);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.prompt("tidy the notes and the config");
    c.edit("toolu_S01", "notes.md", "first", "first draft");
    c.edit("toolu_S02", "lib.txt", "header", "header v2");
    c.write("toolu_S03", "new.txt", "fresh\n");
    bash(&repo, "toolu_S04", "sed -i 's/beta/BETA/' a.txt b.txt");
    c.edit("toolu_S05", "conf.txt", "mode=slow", "mode=fast");
    c.edit("toolu_S06", "notes.md", "first draft", "second draft");
    c.prompt("tune the answer");
    c.edit("toolu_S07", "lib.txt", "answer=42", "answer=41");
    c.edit("toolu_S08", "lib.txt", "gamma", "GAMMA");
    subagent_edit(&repo, "toolu_S09", "conf.txt", "level=1", "level=2");
    c.edit("toolu_S10", "new.txt", "fresh", "fresher");
    c.edit("toolu_S11", "notes.md", "second", "third");
    c.edit("toolu_S12", "a.txt", "alpha", "ALPHA");
    repo
}

/// A folder outside the tree for the run counter.
struct Counter {
    _dir: tempfile::TempDir,
    file: PathBuf,
}

impl Counter {
    fn new() -> Counter {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("runs");
        Counter { _dir: dir, file }
    }
    fn runs(&self) -> usize {
        fs::read_to_string(&self.file).map(|s| s.lines().count()).unwrap_or(0)
    }
    fn path(&self) -> &str {
        self.file.to_str().unwrap()
    }
}

/// `walj bisect ARGS -- sh -c 'SCRIPT' sh COUNTER`: the script counts its run first.
fn bisect(repo: &Repo, args: &[&str], counter: &Counter, script: &str) -> (i32, String, String) {
    let script = format!("echo run >> \"$1\"; {script}");
    let mut all: Vec<&str> = vec!["bisect"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", "sh", "-c", &script, "sh", counter.path()]);
    repo.run(&all)
}

fn bisect_json(repo: &Repo, args: &[&str], counter: &Counter, script: &str) -> (i32, Value) {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let (code, out, err) = bisect(repo, &a, counter, script);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, v)
}

fn passes(repo: &Repo) -> bool {
    Std::new("sh").arg("test.sh").current_dir(&repo.root).status().unwrap().success()
}

#[test]
fn scratch_names_step_7_within_6_runs_and_leaves_the_tree_byte_identical() {
    let repo = twelve_steps();
    assert!(!passes(&repo));
    let before = tree_hashes(&repo.root);
    let counter = Counter::new();
    let (code, out, err) = bisect(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(counter.runs() <= 6, "{} runs:\n{out}", counter.runs());
    assert!(out.contains("The first failing step: step 7 of 12"), "{out}");
    assert!(out.contains("path    lib.txt"), "{out}");
    assert!(out.contains("prompt  tune the answer"), "{out}");
    assert!(out.contains("-answer=42") && out.contains("+answer=41"), "the step's diff: {out}");
    assert!(out.contains("`walj revert S07`"), "{out}");
    assert!(out.contains("keeps steps 8–12"), "{out}");
    assert!(out.contains("does not conflict"), "{out}");
    assert_eq!(tree_hashes(&repo.root), before, "scratch mode never touches the tree");

    // The same in JSON.
    let counter = Counter::new();
    let (code, v) = bisect_json(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["culprit"]["id"], "toolu_S07", "{v:#}");
    assert_eq!(v["culprit"]["step"], 7);
    assert_eq!(v["culprit"]["combined"], false);
    assert_eq!(v["mode"], "scratch");
    assert_eq!(v["steps"].as_array().unwrap().len(), 12, "{v:#}");
    // The Bash step is one step with its two children; the subagent's Edit is a step.
    let s4 = &v["steps"][3];
    assert_eq!((s4["id"].as_str(), s4["tool"].as_str()), (Some("toolu_S04"), Some("Bash")), "{v:#}");
    assert_eq!(v["steps"][8]["id"], "toolu_S09");
    assert_eq!(v["runs"].as_u64().unwrap() as usize, counter.runs());
    assert!(counter.runs() <= 6);
    assert_eq!(tree_hashes(&repo.root), before);
    // The verdict is kept for `walj mcp`'s `bisect` tool: the same object, without the output.
    let kept: Value = serde_json::from_str(&repo.read(".walj/bisect-last.json")).unwrap();
    assert_eq!(kept["verdict"]["culprit"], v["culprit"], "{kept:#}");
    assert!(kept["command"].as_str().unwrap().starts_with("sh -c"), "{kept:#}");
    assert!(kept["finished"].is_string());

    // Reverting step 7 alone makes the test pass and keeps steps 8–12.
    repo.ok(&["revert", "S07"]);
    assert!(passes(&repo));
    let lib = repo.read("lib.txt");
    assert!(lib.contains("header v2") && lib.contains("GAMMA"), "{lib}");
    assert_eq!(repo.read("conf.txt"), "mode=fast\nlevel=2\n");
    assert_eq!(repo.read("new.txt"), "fresher\n");
    assert_eq!(repo.read("notes.md"), "# notes\nthird draft\n");
    assert_eq!(repo.read("a.txt"), "ALPHA BETA\n");
    assert_eq!(repo.read("b.txt"), "BETA gamma\n");
}

#[test]
fn in_place_names_step_7_through_revert_batches_and_puts_every_byte_back() {
    let repo = twelve_steps();
    // A file dirty before the session, never touched by a step: left alone.
    repo.write("test.sh", &format!("{TEST}# local tweak\n"));
    let before = tree_hashes(&repo.root);
    let counter = Counter::new();
    let (code, v) = bisect_json(&repo, &["--in-place"], &counter, "exec sh test.sh");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["culprit"]["id"], "toolu_S07", "{v:#}");
    assert_eq!(v["mode"], "in_place");
    assert!(counter.runs() <= 6, "{} runs", counter.runs());
    assert_eq!(tree_hashes(&repo.root), before, "the tree is back, byte for byte");
    assert_eq!(v["changed_by_command"], json!([]), "{v:#}");
    // Every state went through the triage journal: revert batches, each undone.
    let recs = repo.records();
    let reverts = recs.iter().filter(|r| r["op"] == "resolved" && r["how"] == "reverted").count();
    let undos = recs.iter().filter(|r| r["op"] == "undo").count();
    assert!(reverts > 0 && reverts == undos, "{reverts} reverts, {undos} undos");
    assert!(!repo.path(".walj/bisect.json").exists(), "the marker goes once the tree is back");
    assert!(!repo.ok(&["recover"]).contains("walj bisect"));
    // The entries are open again, as before: revert of step 7 alone works.
    repo.ok(&["revert", "S07"]);
    assert!(passes(&repo));
}

#[test]
fn in_place_refuses_a_live_session_and_a_touched_file_changed_since() {
    let repo = twelve_steps();
    let counter = Counter::new();
    // A touched file changed after the last step: refused, nothing written.
    repo.write("conf.txt", "mode=mine\n");
    let before = tree_hashes(&repo.root);
    let journal = repo.journal_bytes();
    let (code, _, err) = bisect(&repo, &["--in-place"], &counter, "exec sh test.sh");
    assert_ne!(code, 0);
    assert!(err.contains("conf.txt changed since the last step"), "{err}");
    assert_eq!(counter.runs(), 0);
    assert_eq!(tree_hashes(&repo.root), before);
    assert_eq!(repo.journal_bytes(), journal);
    // Scratch mode bisects all the same (the copy holds the user's conf.txt).
    let (code, v) = bisect_json(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!((code, v["culprit"]["id"].as_str()), (0, Some("toolu_S07")), "{v:#}");
    assert_eq!(tree_hashes(&repo.root), before);

    // A live session: refused even with --force.
    let live = Claude { live: true, ..Claude::new(&repo, "11ve5e55-0000-4000-8000-000000000001") };
    live.start();
    let (code, _, err) = bisect(&repo, &["--in-place", "--force"], &counter, "exec sh test.sh");
    assert_ne!(code, 0);
    assert!(err.contains("live"), "{err}");
    assert_eq!(tree_hashes(&repo.root), before);
}

#[test]
fn nothing_to_bisect_is_said_plainly() {
    let repo = twelve_steps();
    let counter = Counter::new();
    let (code, out, _) = bisect(&repo, &[], &counter, "exit 1");
    assert_eq!(code, 1);
    assert!(out.contains("the command already fails before the session") && out.contains("nothing to bisect"), "{out}");
    assert_eq!(counter.runs(), 1);
    let (code, out, _) = bisect(&repo, &[], &counter, "exit 0");
    assert_eq!(code, 1);
    assert!(out.contains("passes at the last state"), "{out}");
    // 128 and above abort, as in `git bisect run`.
    let (code, _, err) = bisect(&repo, &[], &counter, "exit 130");
    assert_ne!(code, 0);
    assert!(err.contains("aborted") && err.contains("130"), "{err}");
    // A timeout aborts, and kills what the command started (its process group).
    let late = counter.file.with_file_name("late");
    let script = format!("sleep 2; echo late > {}", late.display());
    let t = Instant::now();
    let (code, _, err) = bisect(&repo, &["--timeout", "0.3"], &counter, &script);
    assert_ne!(code, 0);
    assert!(err.contains("timeout"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(2), "walj waited for the command: {:?}", t.elapsed());
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!late.exists(), "the command's shell went on after the timeout");
}

#[test]
fn exit_125_states_are_skipped_and_the_answer_is_a_range_when_it_must_be() {
    let repo = twelve_steps();
    let counter = Counter::new();
    // State 6 (notes say "second", the answer still 42) cannot be tested.
    let script = "if grep -q 'second draft' notes.md && grep -qx answer=42 lib.txt; then exit 125; fi; exec sh test.sh";
    let (code, v) = bisect_json(&repo, &[], &counter, script);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["culprit"], Value::Null);
    assert_eq!(v["range"], json!({"from": 6, "to": 7}), "{v:#}");
    assert!(v["tested"].as_array().unwrap().iter().any(|t| t["state"] == 6 && t["verdict"] == "skip"), "{v:#}");
    assert!(v["reason"].as_str().unwrap().contains("one of steps 6 to 7"), "{v:#}");
    // State 3 untestable: stepped around, step 7 found.
    let script = "if [ -f new.txt ] && grep -q mode=slow conf.txt; then exit 125; fi; exec sh test.sh";
    let (code, v) = bisect_json(&repo, &[], &counter, script);
    assert_eq!((code, v["culprit"]["id"].as_str()), (0, Some("toolu_S07")), "{v:#}");
}

#[test]
fn a_flaky_command_with_runs_3_is_outvoted_and_reported() {
    let repo = twelve_steps();
    let counter = Counter::new();
    // Every third run gives the wrong answer.
    let script = "n=$(wc -l < \"$1\"); if [ $((n % 3)) -eq 0 ]; then if sh test.sh; then exit 1; else exit 0; fi; fi; exec sh test.sh";
    let (code, v) = bisect_json(&repo, &["--runs", "3", "--verify"], &counter, script);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["culprit"]["id"], "toolu_S07", "{v:#}");
    assert!(v["tested"].as_array().unwrap().iter().any(|t| t["flaky"] == true), "{v:#}");
    assert_eq!(v["verify"]["monotonic"], true, "{v:#}");
    assert_eq!(counter.runs() % 3, 0);
    let (_, out, _) = bisect(&repo, &["--runs", "3"], &counter, script);
    assert!(out.contains("the runs disagreed (flaky)"), "{out}");
}

#[test]
fn a_missing_image_is_named_and_its_states_skipped() {
    let repo = Repo::new(&[("lib.txt", LIB), ("test.sh", TEST)]);
    fs::create_dir_all(repo.path(".walj")).unwrap();
    fs::write(repo.path(".walj/config.toml"), "[capture]\nmax_bytes = 80\n").unwrap();
    let big = "x".repeat(100);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.prompt("go");
    c.edit("toolu_M1", "lib.txt", "header", "header v2");
    c.write("toolu_M2", "big.txt", &format!("{big}\n"));
    c.edit("toolu_M3", "lib.txt", "one", "ONE");
    c.edit("toolu_M4", "big.txt", "xx", "yy");
    c.edit("toolu_M5", "lib.txt", "answer=42", "answer=0");
    c.edit("toolu_M6", "lib.txt", "two", "TWO");
    let before = tree_hashes(&repo.root);
    let counter = Counter::new();
    let (code, v) = bisect_json(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["culprit"]["id"], "toolu_M5", "{v:#}");
    // big.txt's first post-image was over the cap: states 2 and 3 cannot be built.
    let unbuilt: Vec<u64> = v["unbuildable"].as_array().unwrap().iter().map(|u| u["state"].as_u64().unwrap()).collect();
    assert_eq!(unbuilt, [2, 3], "{v:#}");
    assert!(v["unbuildable"][0]["why"].as_str().unwrap().contains("big.txt"), "{v:#}");
    assert_eq!(tree_hashes(&repo.root), before);
    let (_, out, _) = bisect(&repo, &[], &counter, "exec sh test.sh");
    assert!(out.contains("Not built: state 2"), "{out}");
}

#[test]
fn an_editor_write_during_in_place_stops_the_bisect_and_overwrites_nothing() {
    let repo = twelve_steps();
    let counter = Counter::new();
    // On its third run, "an editor" saves notes.md (write to a temp file, rename over).
    let script = "n=$(wc -l < \"$1\"); if [ \"$n\" -eq 3 ]; then printf 'EDITOR\\n' > notes.md.tmp && mv notes.md.tmp notes.md; fi; exec sh test.sh";
    let (code, _, err) = bisect(&repo, &["--in-place"], &counter, script);
    assert_ne!(code, 0);
    assert!(err.contains("another program changed notes.md") && err.contains("stopped"), "{err}");
    assert_eq!(counter.runs(), 3, "nothing more ran");
    assert_eq!(repo.read("notes.md"), "EDITOR\n", "the editor's bytes stay");
    let kept = blob_id(b"EDITOR\n");
    assert!(repo.store_object(&kept).is_file(), "and are in the store");
    assert!(repo.ok(&["recover"]).contains("did not finish"));
    // `walj undo` refuses the changed file; --force puts the tree back, keeping the editor's bytes.
    let err = repo.fails(&["undo"]);
    assert!(err.contains("notes.md changed since the revert"), "{err}");
    repo.ok(&["undo", "--force"]);
    assert_eq!(repo.read("notes.md"), "# notes\nthird draft\n");
    assert_eq!(repo.read("lib.txt").lines().find(|l| l.starts_with("answer")), Some("answer=41"));
}

/// Starts `walj bisect --in-place` on a command that blocks at its third run, and waits
/// until it does: (the walj process, the blocked command's pid).
fn blocked_in_place(repo: &Repo, counter: &Counter, ready: &Path) -> (std::process::Child, String) {
    let script = format!(
        "echo run >> \"$1\"; n=$(wc -l < \"$1\"); if [ \"$n\" -eq 3 ]; then echo $$ > {}; exec sleep 30; fi; exec sh test.sh",
        ready.display()
    );
    let child = Std::new(crate::common::walj_bin())
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env("XDG_CACHE_HOME", counter.file.with_file_name("cache"))
        .arg("--project")
        .arg(&repo.root)
        .args(["bisect", "--in-place", "--", "sh", "-c", &script, "sh", counter.path()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while fs::read_to_string(ready).map_or(true, |s| s.trim().is_empty()) {
        assert!(t.elapsed() < Duration::from_secs(60), "the command never blocked");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, fs::read_to_string(ready).unwrap().trim().to_string())
}

#[test]
fn kill_9_during_in_place_is_shown_by_recover_and_undone_by_undo() {
    let repo = twelve_steps();
    let before = tree_hashes(&repo.root);
    let counter = Counter::new();
    let ready = counter.file.with_file_name("ready");
    let (mut child, pid) = blocked_in_place(&repo, &counter, &ready);
    assert_ne!(tree_hashes(&repo.root), before, "a state is in place");
    // A session starting meanwhile is warned.
    let out = Claude::new(&repo, "5e55105e-0000-4000-8000-00000000000b").start();
    assert!(out.contains("walj bisect") && out.contains("is running"), "{out}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let _ = Std::new("kill").arg(&pid).status();
    let out = repo.ok(&["recover"]);
    assert!(out.contains("walj bisect") && out.contains("did not finish") && out.contains("walj undo"), "{out}");
    // `walj doctor` reports it too.
    let (_, out, err) = repo.run(&["doctor", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let found = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["check"] == "bisect" && f["message"].as_str().unwrap().contains("did not finish"));
    assert!(found, "{v:#}");
    // Another in-place bisect is refused until the tree is back, even with --force.
    let (code, _, err) = bisect(&repo, &["--in-place", "--force"], &counter, "exec sh test.sh");
    assert_ne!(code, 0);
    assert!(err.contains("did not finish"), "{err}");
    repo.ok(&["undo"]);
    assert_eq!(tree_hashes(&repo.root), before, "walj undo put every byte back");
    // Once the tree is back, recover says nothing more, and in place runs again.
    assert!(!repo.ok(&["recover"]).contains("walj bisect"));
    let (code, v) = bisect_json(&repo, &["--in-place"], &counter, "exec sh test.sh");
    assert_eq!((code, v["culprit"]["id"].as_str()), (0, Some("toolu_S07")), "{v:#}");
    assert_eq!(tree_hashes(&repo.root), before);
}

#[test]
fn ctrl_c_during_in_place_puts_the_tree_back() {
    let repo = twelve_steps();
    let before = tree_hashes(&repo.root);
    let counter = Counter::new();
    let ready = counter.file.with_file_name("ready");
    let (child, pid) = blocked_in_place(&repo, &counter, &ready);
    // Ctrl-C in a terminal signals walj's process group; the command runs in its own, and
    // walj passes the interrupt on.
    assert!(Std::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    let alive = Std::new("kill").args(["-0", &pid]).stderr(std::process::Stdio::null()).status().unwrap();
    assert!(!alive.success(), "the command still runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("aborted"), "{err}");
    assert_eq!(tree_hashes(&repo.root), before, "the tree is back");
    assert!(!repo.ok(&["recover"]).contains("walj bisect"));
}

proptest::proptest! {
    /// Any n in 1..=64 and culprit k in 1..=n: the search names k in at most ⌈log2 n⌉ + 2
    /// tests, testing no state twice (the CLI tests above cover the real runs).
    #[test]
    fn the_search_finds_any_culprit_within_log2_n_plus_2(n in 1usize..=64, seed in 0usize..10_000) {
        use walj::bisect::search::{Found, Verdict, bisect, max_tests};
        let k = 1 + seed % n;
        let s = bisect(n, |state| Ok::<_, ()>(if state >= k { Verdict::Bad } else { Verdict::Good })).unwrap();
        proptest::prop_assert_eq!(&s.found, &Found::Culprit(k));
        let bound = (n as f64).log2().ceil() as usize + 2;
        proptest::prop_assert_eq!(max_tests(n), bound);
        proptest::prop_assert!(s.tested.len() <= bound, "{} tests for n = {}", s.tested.len(), n);
        let mut states: Vec<usize> = s.tested.iter().map(|t| t.0).collect();
        states.sort_unstable();
        states.dedup();
        proptest::prop_assert_eq!(states.len(), s.tested.len());
    }
}

/// Two commands whose windows overlap (both PreToolUse before either PostToolUse, as an
/// async subagent's command beside the main thread's): one combined step.
#[test]
fn overlapping_commands_are_one_combined_step() {
    let repo = Repo::new(&[("lib.txt", LIB), ("test.sh", TEST), ("a.txt", "a\n")]);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.prompt("go");
    c.edit("toolu_O1", "a.txt", "a", "A");
    let payload = |event: &str, id: &str, command: &str| {
        let mut p = base(&repo, event);
        p["tool_name"] = json!("Bash");
        p["tool_use_id"] = json!(id);
        p["tool_input"] = json!({"command": command, "description": "x"});
        if event == "PostToolUse" {
            p["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false});
        }
        p.to_string()
    };
    let (one, two) = ("sed -i s/answer=42/answer=7/ lib.txt", "echo made > made.txt");
    repo.hook(&payload("PreToolUse", "toolu_O2", one));
    repo.hook(&payload("PreToolUse", "toolu_O3", two));
    for cmd in [one, two] {
        assert!(Std::new("sh").arg("-c").arg(cmd).current_dir(&repo.root).status().unwrap().success());
    }
    repo.hook(&payload("PostToolUse", "toolu_O2", one));
    repo.hook(&payload("PostToolUse", "toolu_O3", two));
    c.edit("toolu_O4", "a.txt", "A", "AA");
    let before = tree_hashes(&repo.root);
    let counter = Counter::new();
    let (code, v) = bisect_json(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["steps"].as_array().unwrap().len(), 3, "{v:#}");
    assert_eq!(v["culprit"]["step"], 2, "{v:#}");
    assert_eq!(v["culprit"]["combined"], true);
    assert_eq!(v["culprit"]["members"], json!(["toolu_O2", "toolu_O3"]), "{v:#}");
    let paths: Vec<&str> =
        v["culprit"]["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"lib.txt"), "{v:#}");
    assert_eq!(tree_hashes(&repo.root), before);
}

/// A change outside the journal between two steps is a named gap; `--since` takes every
/// session's steps in the order applied.
#[test]
fn a_hand_edit_between_steps_is_a_gap_and_since_spans_sessions() {
    let repo = Repo::new(&[("lib.txt", LIB), ("test.sh", TEST), ("a.txt", "a\n")]);
    let first = Claude::new(&repo, SESSION);
    first.start();
    first.prompt("morning");
    first.edit("toolu_G1", "a.txt", "a", "b");
    // The user, between sessions.
    repo.write("a.txt", "by hand\n");
    let second = Claude::new(&repo, "5ec0d5e5-0000-4000-8000-000000000002");
    second.start();
    second.prompt("afternoon");
    second.edit("toolu_G2", "a.txt", "by hand", "by claude");
    second.edit("toolu_G3", "lib.txt", "answer=42", "answer=1");
    let counter = Counter::new();
    // Default: the session with the latest change only.
    let (_, v) = bisect_json(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(v["steps"].as_array().unwrap().len(), 2, "{v:#}");
    let (code, v) = bisect_json(&repo, &["--since", "1h"], &counter, "exec sh test.sh");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["steps"].as_array().unwrap().len(), 3, "{v:#}");
    assert_eq!(v["culprit"]["id"], "toolu_G3");
    assert_eq!(v["gaps"], json!([{"path": "a.txt", "step": 2, "after": 1}]), "{v:#}");
    let (_, out, _) = bisect(&repo, &["--since", "1h"], &counter, "exec sh test.sh");
    assert!(out.contains("Gap: a.txt changed outside the journal between step 1 and step 2"), "{out}");
    let (code, _, err) = bisect(&repo, &["--since", "yesterday-ish"], &counter, "true");
    assert_ne!(code, 0);
    assert!(err.contains("--since"), "{err}");
}

#[test]
fn show_output_keeps_the_last_passing_and_first_failing_output_and_verify_rechecks() {
    let repo = twelve_steps();
    let counter = Counter::new();
    let script = "sh test.sh; r=$?; echo \"test exit $r at $WALJ_BISECT_STATE\"; exit $r";
    let (code, out, err) = bisect(&repo, &["--verify", "--show-output"], &counter, script);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("(+2 to verify)"), "{out}");
    assert!(out.contains("Verified: the state before it passes again"), "{out}");
    assert!(out.contains("output at the last passing state (6) ──\ntest exit 0 at 6\n"), "{out}");
    assert!(out.contains("output at the first failing state (7) ──\ntest exit 1 at 7\n"), "{out}");
    let (_, v) = bisect_json(&repo, &["--show-output"], &counter, script);
    assert_eq!(v["output"]["first_bad"], "test exit 1 at 7\n", "{v:#}");
    // --handoff: a brief for Claude naming the step, its diff and the failing output.
    let (code, out, _) = bisect(&repo, &["--handoff"], &counter, script);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("passed before step 7 of 12 and fails after it"), "{out}");
    assert!(out.contains("Edit `lib.txt` (S07)") && out.contains("+answer=41"), "{out}");
    assert!(out.contains("Its turn's prompt: tune the answer"), "{out}");
    assert!(out.contains("test exit 1 at 7"), "{out}");
    assert!(out.contains("Handed back to Claude") && out.contains("Undo: walj undo "), "{out}");
    // Recorded: step 7's entry is handed back, and the next session's start (the real hook)
    // gives Claude the brief with the failing output, once.
    let handed: Vec<Value> =
        repo.records().into_iter().filter(|r| r["op"] == "resolved" && r["how"] == "handed_back").collect();
    assert_eq!(handed.len(), 1, "{handed:?}");
    assert_eq!(handed[0]["id"], "toolu_S07");
    let next = "b15ec7a1-0000-4000-8000-0000000000f1";
    let start = repo.hook(&repo.start_payload(next));
    let v: Value = serde_json::from_str(start.trim()).unwrap_or_else(|e| panic!("{e}: {start}"));
    let context = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or_default();
    assert!(context.contains("passed before step 7 of 12 and fails after it"), "{start}");
    assert!(context.contains("test exit 1 at 7") && context.contains("lib.txt"), "{start}");
    assert!(v["systemMessage"].as_str().unwrap_or_default().contains("handed a brief back"), "{start}");
    let again = repo.hook(&repo.start_payload("b15ec7a1-0000-4000-8000-0000000000f2"));
    assert!(!again.contains("passed before step 7"), "delivered twice: {again}");
}

/// Recorded text is escaped before it reaches the terminal; a resolved entry keeps
/// `--in-place` from starting (its states are reverts), not the scratch mode.
#[test]
fn recorded_text_is_escaped_and_resolved_entries_refuse_in_place_only() {
    let repo = Repo::new(&[("lib.txt", LIB), ("test.sh", TEST), ("a.txt", "a\n")]);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.prompt("make it \u{1b}]0;pwned\u{7}red \u{1b}[31mnow");
    c.edit("toolu_E1", "a.txt", "a", "b");
    c.edit("toolu_E2", "lib.txt", "answer=42", "answer=\u{1b}[2J");
    let counter = Counter::new();
    let (code, out, _) = bisect(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("The first failing step: step 2 of 2"), "{out}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "raw control characters printed: {out:?}");
    repo.ok(&["mark", "toolu_E1", "--done"]);
    let (code, _, err) = bisect(&repo, &["--in-place"], &counter, "exec sh test.sh");
    assert_ne!(code, 0);
    assert!(err.contains("already resolved") && err.contains("E1"), "{err}");
    let (code, v) = bisect_json(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!((code, v["culprit"]["id"].as_str()), (0, Some("toolu_E2")), "{v:#}");
}

/// Inside a Claude Code tool call, `--in-place` (which writes the tree) needs `--yes`; the
/// scratch mode, which writes nothing of the user's, runs.
#[test]
fn in_place_inside_a_tool_call_needs_yes() {
    let repo = twelve_steps();
    let before = (tree_hashes(&repo.root), repo.journal_bytes());
    let run = |args: &[&str]| crate::common::outcome(&repo.walj(args).env("CLAUDECODE", "1").output().unwrap());
    let (code, out, err) = run(&["bisect", "--in-place", "--", "sh", "test.sh"]);
    assert_eq!(code, 3, "{out}\n{err}");
    assert!(err.contains("refused") && err.contains("--yes"), "{err}");
    assert_eq!((tree_hashes(&repo.root), repo.journal_bytes()), before);
    let (code, out, err) = run(&["bisect", "--", "sh", "test.sh"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("step 7 of 12"), "{out}");
    let (code, out, err) = run(&["bisect", "--in-place", "--yes", "--", "sh", "test.sh"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(tree_hashes(&repo.root), before.0);
}

/// The TUI's `b` on the session: asks for the command, runs the bisect (scratch mode, in the
/// background, progress on the status line), then selects step 7's entry with its diff,
/// ready for `r`; the tree is untouched. Esc while typing runs nothing.
#[test]
fn tui_b_bisects_the_session_and_selects_the_culprit() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use walj::tui::keymap::parse_keys;
    use walj::tui::{App, AppOptions, Script, run_loop};
    let repo = twelve_steps();
    let before = (tree_hashes(&repo.root), repo.journal_bytes());
    let counter = Counter::new();
    let project = walj::project::Project::at(repo.root.clone(), None);
    let mut app = App::new(project, AppOptions { poll: std::time::Duration::ZERO, ..AppOptions::default() });
    app.reload();
    let mut t = Terminal::new(TestBackend::new(140, 40)).unwrap();
    let typed = |app: &mut App, keys: &str| {
        for k in parse_keys(keys).unwrap() {
            app.handle_key(&crossterm::event::KeyEvent::new(k.code, k.mods));
        }
    };
    // Esc cancels: nothing runs.
    typed(&mut app, "bsh test.sh<esc>");
    assert!(app.bisect.running.is_none() && app.bisect.input.is_none());
    assert_eq!(counter.runs(), 0);
    // The prompt, then the run.
    typed(&mut app, "b");
    assert!(app.status.as_ref().unwrap().text.contains("the test command"), "{:?}", app.status);
    let command = format!("echo run >> '{}'; exec sh test.sh", counter.path());
    typed(&mut app, &format!("{command}<enter>"));
    assert!(app.bisect.running.is_some(), "{:?}", app.status);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut saw_progress = false;
    while app.bisect.running.is_some() && std::time::Instant::now() < deadline {
        app.poll_journal();
        saw_progress |= app.status.as_ref().is_some_and(|s| s.text.contains("testing state"));
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(app.bisect.running.is_none(), "the bisect did not finish");
    let status = app.status.clone().unwrap();
    assert!(!status.error && status.text.contains("step 7 of 12") && status.text.contains("`r` reverts"), "{status:?}");
    assert!(saw_progress, "no progress shown");
    assert!(counter.runs() <= 6, "{} runs", counter.runs());
    assert_eq!(app.selected_entry().map(|e| e.id.as_str()), Some("toolu_S07"));
    run_loop(&mut t, &mut Script::new().tick(), &mut app).unwrap();
    let screen: String = {
        let buf = t.backend().buffer();
        (0..buf.area.height)
            .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol().to_string()).collect::<String>() + "\n")
            .collect()
    };
    assert!(screen.contains("answer=41"), "the culprit's diff is not shown:\n{screen}");
    // The step's own change, not the file as it is now; its entry is unresolved, so the list
    // did not switch to showing resolved entries behind the user's back.
    assert_eq!(app.diff_mode, walj::triage::DiffMode::Applied);
    assert!(screen.contains("pre-image → post-image"), "{screen}");
    assert!(!app.tree.show_resolved, "resolved entries were turned on");
    assert_eq!((tree_hashes(&repo.root), repo.journal_bytes()), before, "the TUI's bisect changed the tree");
}

/// `walj ARGS` with `XDG_CACHE_HOME` set to `cache` (where bisect keeps its scratch copies):
/// (exit code, stdout, stderr).
fn run_cached(repo: &Repo, cache: &Path, args: &[&str]) -> (i32, String, String) {
    let out = repo.walj(args).env("XDG_CACHE_HOME", cache).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `walj --project ROOT ARGS` as a plain process (to be killed), scratch copies under `cache`.
fn walj_std(repo: &Repo, cache: &Path, args: &[&str]) -> Std {
    let mut c = Std::new(crate::common::walj_bin());
    c.env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env("NO_COLOR", "1")
        .env("XDG_CACHE_HOME", cache)
        .arg("--project")
        .arg(&repo.root)
        .args(args);
    c
}

/// What is left in the per-user scratch folder under `cache`.
fn copies_in(cache: &Path) -> Vec<String> {
    fs::read_dir(cache.join("walj/bisect"))
        .map(|rd| rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// Every walj temp file (`.X.walj-tmp-*`) in the tree and in `.walj/`.
fn temp_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            if name == ".git" {
                continue;
            }
            if name.to_string_lossy().contains(".walj-tmp-") {
                out.push(e.path());
            }
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, &mut out);
    out
}

// The issue's attack: `d/` became a link to a folder outside the project after the session
// wrote `d/notes.txt`. Scratch mode put its states in place through the link (the user's
// file outside overwritten, or deleted). Now every write and deletion is made beneath the
// copy through no link: the states that need `d/notes.txt` are "not built", named, and
// nothing outside changes.
#[test]
#[cfg(unix)]
fn scratch_never_writes_or_deletes_through_a_link_out_of_the_project() {
    let repo = Repo::new(&[("a.txt", "good\n")]);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.prompt("notes, then a change");
    c.write("toolu_L01", "d/notes.txt", "the session's notes\n");
    c.edit("toolu_L02", "a.txt", "good", "bad");
    c.stop();
    let (_out_dir, outside) = crate::common::scratch();
    fs::write(outside.join("notes.txt"), "the user's own notes, outside the project\n").unwrap();
    fs::remove_dir_all(repo.path("d")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.path("d")).unwrap();
    let (_c, cache) = crate::common::scratch();
    let (code, out, err) = run_cached(&repo, &cache, &["bisect", "--", "sh", "-c", "! grep -q bad a.txt"]);
    assert_eq!(
        fs::read_to_string(outside.join("notes.txt")).unwrap(),
        "the user's own notes, outside the project\n",
        "the file outside the project was written through the link\n{out}\n{err}"
    );
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 1, "nothing else appeared outside");
    assert!(
        out.contains("Not built") && out.contains("d/notes.txt") && out.contains("symbolic link"),
        "{code}\n{out}\n{err}"
    );
    assert!(copies_in(&cache).is_empty(), "{:?}", copies_in(&cache));
    // --json names the states not built too.
    let (_, json, err) = run_cached(&repo, &cache, &["bisect", "--json", "--", "sh", "-c", "! grep -q bad a.txt"]);
    let v: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}\n{err}"));
    let why = v["unbuildable"].to_string();
    assert!(why.contains("d/notes.txt") && why.contains("symbolic link"), "{v:#}");
    assert_eq!(fs::read_to_string(outside.join("notes.txt")).unwrap(), "the user's own notes, outside the project\n");
}

/// Starts `walj bisect ARGS` on a command that blocks at its `at`-th run (writing its pid to
/// `ready`), with the scratch folder under `cache`; waits until it blocks.
fn blocked(
    repo: &Repo,
    cache: &Path,
    args: &[&str],
    counter: &Counter,
    ready: &Path,
    at: usize,
) -> (std::process::Child, String) {
    let script = format!(
        "echo run >> \"$1\"; n=$(wc -l < \"$1\"); if [ \"$n\" -eq {at} ]; then echo $$ > {}; exec sleep 30; fi; exec sh test.sh",
        ready.display()
    );
    let mut all = vec!["bisect"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", "sh", "-c", &script, "sh", counter.path()]);
    let child = walj_std(repo, cache, &all)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while fs::read_to_string(ready).map_or(true, |s| s.trim().is_empty()) {
        assert!(t.elapsed() < Duration::from_secs(60), "the command never blocked");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, fs::read_to_string(ready).unwrap().trim().to_string())
}

fn alive(pid: &str) -> bool {
    Std::new("kill").args(["-0", pid]).stderr(std::process::Stdio::null()).status().unwrap().success()
}

/// Waits up to 10 s for `cond`.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    cond()
}

// kill -9 of a scratch bisect: its guard kills the command's process group and removes the
// copy; nothing is left for the next command either.
#[test]
#[cfg(unix)]
fn kill_9_of_a_scratch_bisect_ends_the_command_and_leaves_no_copy() {
    let repo = twelve_steps();
    let (_c, cache) = crate::common::scratch();
    let counter = Counter::new();
    let ready = counter.file.with_file_name("ready");
    let (mut child, pid) = blocked(&repo, &cache, &[], &counter, &ready, 3);
    assert_eq!(copies_in(&cache).len(), 1, "the copy lives in the per-user folder");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(cache.join("walj/bisect")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(eventually(|| !alive(&pid)), "the command still runs after walj was killed");
    assert!(
        eventually(|| copies_in(&cache).is_empty()),
        "the scratch copy outlived the bisect: {:?}",
        copies_in(&cache)
    );
}

// A copy whose owner and guard are both gone (a folder named after a dead process) is removed
// by the next walj command of any kind, which says so.
#[test]
#[cfg(unix)]
fn the_next_walj_command_removes_a_copy_whose_bisect_is_gone() {
    let repo = twelve_steps();
    let (_c, cache) = crate::common::scratch();
    let mut dead = Std::new("true").spawn().unwrap();
    let pid = dead.id();
    dead.wait().unwrap();
    let left = cache.join("walj/bisect").join(format!("{pid}-0-deadbeef0"));
    fs::create_dir_all(left.join("tree/src")).unwrap();
    fs::write(left.join("tree/src/lib.txt"), "a copy").unwrap();
    // A live owner's copy is never touched.
    let live = cache.join("walj/bisect").join(format!("{}-0-cafe0", std::process::id()));
    fs::create_dir_all(&live).unwrap();
    let (code, _, err) = run_cached(&repo, &cache, &["recover"]);
    assert_eq!(code, 0, "{err}");
    assert!(!left.exists(), "the copy of a killed bisect is still there");
    assert!(err.contains("removed the scratch copy of a killed `walj bisect`"), "{err}");
    assert!(live.exists());
    // The sweep writes nothing where no bisect ever ran: no folder made in the cache.
    let (_e, empty) = crate::common::scratch();
    let (code, _, err) = run_cached(&repo, &empty, &["recover"]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(fs::read_dir(&empty).unwrap().count(), 0, "the sweep made a folder");
}

/// kill -9 of `walj bisect ARGS` at random moments, `rounds` times (`WALJ_KILL_ROUNDS`, else
/// `default`), on the twelve steps. After each kill: every process the command started is
/// gone, the next walj command (`recover`) leaves no walj temp file in the tree and no scratch
/// copy, and when `recover` says an in-place bisect did not finish, the `walj undo` it advises
/// succeeds without --force. The tree is then byte-identical to before. Returns (rounds, undos
/// advised) and prints the counts.
fn kill_loop(args: &[&str], default: usize) -> (usize, usize) {
    let rounds: usize = std::env::var("WALJ_KILL_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let repo = twelve_steps();
    let before = tree_hashes(&repo.root);
    let (_c, cache) = crate::common::scratch();
    let counter = Counter::new();
    let pids = counter.file.with_file_name("pids");
    // The command starts a child of its own (`sleep` in the background, same group): the
    // group must go, not only the shell.
    let script = format!(
        "echo $$ >> {0}; sleep 20 & echo $! >> {0}; echo run >> \"$1\"; sh test.sh; s=$?; kill $!; exit $s",
        pids.display()
    );
    let mut all = vec!["bisect"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", "sh", "-c", &script, "sh", counter.path()]);
    // How long a whole bisect takes, to spread the kills over it.
    let t = Instant::now();
    let (code, _, err) = run_cached(&repo, &cache, &all);
    assert_eq!(code, 0, "{err}");
    let whole = t.elapsed().as_millis().max(50) as u64;
    // And from its first command run on (the states being put in place).
    let _ = fs::remove_file(&pids);
    let mut child = walj_std(&repo, &cache, &all).stdout(std::process::Stdio::null()).spawn().unwrap();
    let t = Instant::now();
    while !pids.exists() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let t = Instant::now();
    child.wait().unwrap();
    let active = t.elapsed().as_millis().max(20) as u64;
    let mut seed = 0x2545_f491_4f6c_dd1d_u64 ^ u64::from(std::process::id());
    let (mut undos, mut temps, mut copies, mut stray) = (0, 0, 0, 0);
    for round in 0..rounds {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Even rounds: a moment of the whole run; odd rounds: a moment after the first
        // command run (while states are put in place and taken back).
        let wait = if round % 2 == 0 { seed % (whole + whole / 4) } else { seed % active };
        let _ = fs::remove_file(&pids);
        let mut child = walj_std(&repo, &cache, &all)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        if round % 2 == 1 {
            while !pids.exists() && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        std::thread::sleep(Duration::from_millis(wait));
        let finished = child.try_wait().unwrap();
        let _ = child.kill();
        child.wait().unwrap();
        if let Some(status) = finished {
            // It ended before the kill: it must have succeeded (a refusal is a defect here).
            assert!(status.success(), "round {round}: the bisect failed on its own");
        }
        let started = fs::read_to_string(&pids).unwrap_or_default();
        if !eventually(|| started.lines().all(|p| !alive(p.trim()))) {
            stray += 1;
        }
        let (code, out, err) = run_cached(&repo, &cache, &["recover"]);
        assert_eq!(code, 0, "{err}");
        let left = temp_files(&repo.root);
        temps += left.len();
        if out.contains("did not finish") {
            undos += 1;
            let (code, uout, uerr) = run_cached(&repo, &cache, &["undo"]);
            if code != 0 {
                let short = |b: &Option<walj::journal::Blob>| match b {
                    Some(walj::journal::Blob::Id(id)) => id[..8].to_string(),
                    Some(_) => "absent".to_string(),
                    None => "-".to_string(),
                };
                let recs: Vec<String> = repo
                    .journal_records()
                    .iter()
                    .filter(|r| r.op != "pre" && r.op != "post")
                    .map(|r| {
                        format!(
                            "{} {} {:?} {} {}->{}",
                            r.op,
                            r.event,
                            r.kind,
                            r.path,
                            short(&r.before),
                            short(&r.after)
                        )
                    })
                    .collect();
                let disk: Vec<String> =
                    tree_hashes(&repo.root).iter().map(|(p, h)| format!("{} {}", p.display(), &h[..8])).collect();
                panic!(
                    "round {round} ({wait} ms): walj undo refused:\n{uout}\n{uerr}\n{}\ndisk: {disk:?}",
                    recs[recs.len().saturating_sub(30)..].join("\n")
                );
            }
        }
        assert_eq!(tree_hashes(&repo.root), before, "round {round} ({wait} ms): not byte-exact");
        if !eventually(|| copies_in(&cache).is_empty()) {
            copies += 1;
        }
        assert!(left.is_empty(), "round {round} ({wait} ms): {left:?}");
    }
    eprintln!(
        "kill -9 of `walj bisect {}`: {rounds} rounds (a whole run {whole} ms, {active} ms after its first command), {undos} advised undos (all byte-exact, none needed --force), {temps} temp files left, {copies} copies left, {stray} rounds with a command process left",
        args.join(" ")
    );
    assert_eq!((temps, copies, stray), (0, 0, 0));
    (rounds, undos)
}

// kill -9 of an in-place bisect at random moments (see `kill_loop`; the full run is
// `WALJ_KILL_ROUNDS=100`).
#[test]
#[cfg(unix)]
fn kill_9_of_in_place_at_random_moments_leaves_nothing_and_undo_is_byte_exact() {
    kill_loop(&["--in-place"], 6);
}

// kill -9 of a scratch bisect at random moments: the tree is never written, no copy and no
// command process outlives it.
#[test]
#[cfg(unix)]
fn kill_9_of_scratch_at_random_moments_leaves_no_copy_and_no_process() {
    let (_, undos) = kill_loop(&[], 6);
    assert_eq!(undos, 0, "a scratch bisect never writes the tree");
}

// The session broke the test at step 7 and the user fixed it by hand afterwards: bisect still
// names step 7, and says first that the tree passes now.
#[test]
fn the_disk_fixed_after_the_session_is_said() {
    let repo = twelve_steps();
    repo.write("lib.txt", &repo.read("lib.txt").replace("answer=41", "answer=42"));
    let counter = Counter::new();
    let (code, out, err) = bisect(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("The disk differs from the last state the journal builds (lib.txt"), "{out}");
    assert!(
        out.contains(
            "the tree passes now: the failure of step 7 was fixed after the session (not by a tool call), in lib.txt"
        ),
        "{out}"
    );
    let (_, v) = bisect_json(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(v["disk"]["differs"], json!(["lib.txt"]), "{v:#}");
    assert_eq!(v["disk"]["verdict"], "good", "{v:#}");
    assert!(v["disk"]["says"].as_str().unwrap().starts_with("the tree passes now"), "{v:#}");
}

// The steps are fine and the user's own later edit breaks the test: not "nothing to bisect" as
// if all were well, but the change after the session named.
#[test]
fn a_break_made_after_the_session_is_named_not_hidden() {
    let counter = Counter::new();
    // A session whose steps never break the test.
    let repo = Repo::new(&[("lib.txt", LIB), ("test.sh", TEST), ("a.txt", "a\n")]);
    let c = Claude::new(&repo, SESSION);
    c.start();
    c.prompt("small things");
    c.edit("toolu_H1", "a.txt", "a", "b");
    c.edit("toolu_H2", "lib.txt", "gamma", "GAMMA");
    repo.write("lib.txt", &repo.read("lib.txt").replace("answer=42", "answer=0"));
    let (code, out, _) = bisect(&repo, &[], &counter, "exec sh test.sh");
    assert_ne!(code, 0);
    assert!(out.contains("the steps pass; the change made after the session (not a tool call) breaks `sh -c"), "{out}");
    assert!(out.contains(": lib.txt."), "{out}");
    let (_, v) = bisect_json(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(v["disk"]["verdict"], "bad", "{v:#}");
    assert!(v["disk"]["says"].as_str().unwrap().starts_with("the steps pass"), "{v:#}");
}

// With --since, a harmless Edit whose pre-image carried the user's breaking change (a gap) is
// never the answer alone.
#[test]
fn a_step_that_only_carried_an_outside_change_is_not_the_answer_alone() {
    let repo = Repo::new(&[("lib.txt", LIB), ("test.sh", TEST), ("a.txt", "a\n")]);
    let first = Claude::new(&repo, SESSION);
    first.start();
    first.prompt("morning");
    first.edit("toolu_O1", "lib.txt", "header", "header v2");
    // The user breaks the test by hand, between sessions.
    repo.write("lib.txt", &repo.read("lib.txt").replace("answer=42", "answer=0"));
    let second = Claude::new(&repo, "5ec0d5e5-0000-4000-8000-000000000003");
    second.start();
    second.prompt("afternoon");
    second.edit("toolu_O2", "lib.txt", "gamma", "GAMMA");
    let counter = Counter::new();
    let (_, v) = bisect_json(&repo, &["--since", "1h"], &counter, "exec sh test.sh");
    if v["culprit"]["id"] == "toolu_O2" {
        assert_eq!(v["outside_change"]["step"], 2, "{v:#}");
        assert_eq!(v["outside_change"]["paths"], json!(["lib.txt"]), "{v:#}");
        let (_, out, _) = bisect(&repo, &["--since", "1h"], &counter, "exec sh test.sh");
        assert!(
            out.contains("Not this step alone: step 2 starts from a change made outside the journal in lib.txt"),
            "{out}"
        );
    } else {
        panic!("{v:#}");
    }
}

// --runs 3 with a flaky command: the verdict is marked uncertain (text and --json) and the
// states next to the culprit are tested again.
#[test]
fn flaky_runs_mark_the_verdict_uncertain() {
    let repo = twelve_steps();
    let counter = Counter::new();
    let script = "n=$(wc -l < \"$1\"); if [ $((n % 3)) -eq 0 ]; then if sh test.sh; then exit 1; else exit 0; fi; fi; exec sh test.sh";
    let (_, v) = bisect_json(&repo, &["--runs", "3"], &counter, script);
    assert_eq!(v["uncertain"], true, "{v:#}");
    assert!(!v["flaky"]["states"].as_array().unwrap().is_empty(), "{v:#}");
    assert_eq!(v["flaky"]["retested"].as_array().unwrap().len(), 2, "{v:#}");
    let (_, out, _) = bisect(&repo, &["--runs", "3"], &counter, script);
    assert!(out.contains("Uncertain: the runs of state"), "{out}");
    // Runs that agree: no word of it.
    let (_, v) = bisect_json(&repo, &["--runs", "2"], &counter, "exec sh test.sh");
    assert_eq!(v["uncertain"], false, "{v:#}");
}

// After `b`, `r` reverts the culprit of a session whose turn ended normally (its changes
// persisted): it used to answer "already resolved" and the test stayed broken.
#[test]
fn tui_r_after_b_reverts_the_culprit_of_a_session_that_ended_normally() {
    use walj::tui::keymap::parse_keys;
    use walj::tui::{App, AppOptions};
    let repo = twelve_steps();
    Claude::new(&repo, SESSION).stop();
    let project = walj::project::Project::at(repo.root.clone(), None);
    let mut app = App::new(project, AppOptions { poll: std::time::Duration::ZERO, ..AppOptions::default() });
    app.reload();
    let fold = walj::fold::Fold::load(
        &repo.root.join(".walj/journal.jsonl"),
        &walj::fold::FoldOptions { keep_settled: true, ..Default::default() },
    )
    .unwrap();
    assert_eq!(
        fold.entry("toolu_S07").map(|e| e.state()),
        Some(walj::fold::EntryState::Persisted),
        "the Stop did not persist the steps"
    );
    let typed = |app: &mut App, keys: &str| {
        for k in parse_keys(keys).unwrap() {
            app.handle_key(&crossterm::event::KeyEvent::new(k.code, k.mods));
        }
    };
    typed(&mut app, "bsh test.sh<enter>");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while app.bisect.running.is_some() && std::time::Instant::now() < deadline {
        app.poll_journal();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(app.selected_entry().map(|e| e.id.as_str()), Some("toolu_S07"), "{:?}", app.status);
    typed(&mut app, "r");
    assert!(app.dialog.is_some(), "no revert dialog: {:?}", app.status);
    typed(&mut app, "<enter>");
    assert!(passes(&repo), "the culprit was not reverted: {:?}", app.status);
    assert!(repo.read("lib.txt").contains("GAMMA"), "step 8 on the same file is kept");
}

// The culprit's diff header separates the path from its label with a tab, printed as a tab
// (not the two characters `\t`); a tab in the file's lines stays a tab too.
#[test]
fn the_diff_header_has_no_literal_backslash_t() {
    let repo = twelve_steps();
    let counter = Counter::new();
    let (code, out, _) = bisect(&repo, &[], &counter, "exec sh test.sh");
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("\\t"), "a literal \\t:\n{out}");
    assert!(out.contains("--- a/lib.txt\t("), "{out}");
    // --handoff's brief too.
    let (_, out, _) = bisect(&repo, &["--handoff"], &counter, "exec sh test.sh");
    assert!(!out.contains("\\t") && out.contains("--- a/lib.txt\t("), "{out}");
}

// An in-place bisect is one operation in `walj ops`, named as a bisect, and a bare `walj redo`
// afterwards never puts one of its intermediate states back.
#[test]
fn in_place_is_one_operation_and_redo_never_reapplies_a_state() {
    let repo = twelve_steps();
    let before = tree_hashes(&repo.root);
    let counter = Counter::new();
    let (code, v) = bisect_json(&repo, &["--in-place"], &counter, "exec sh test.sh");
    assert_eq!((code, v["culprit"]["id"].as_str()), (0, Some("toolu_S07")), "{v:#}");
    let ops = repo.json(&["ops", "--json"]);
    let ops = ops.as_array().unwrap();
    assert_eq!(ops.len(), 1, "{ops:#?}");
    assert_eq!(ops[0]["how"], "bisect", "{ops:#?}");
    assert_eq!(ops[0]["undone"], true, "{ops:#?}");
    assert!(repo.ok(&["ops"]).contains("bisected"));
    let err = repo.fails(&["redo"]);
    assert!(err.contains("nothing to redo"), "{err}");
    let id = ops[0]["id"].as_str().unwrap();
    let err = repo.fails(&["redo", &id[..12]]);
    assert!(err.contains("in-place bisect"), "{err}");
    assert_eq!(tree_hashes(&repo.root), before, "redo re-applied a bisect state");
}

// The TUI's verdict line says what the disk says too.
#[test]
fn tui_b_says_when_the_tree_passes_now() {
    use walj::tui::keymap::parse_keys;
    use walj::tui::{App, AppOptions};
    let repo = twelve_steps();
    repo.write("lib.txt", &repo.read("lib.txt").replace("answer=41", "answer=42"));
    let project = walj::project::Project::at(repo.root.clone(), None);
    let mut app = App::new(project, AppOptions { poll: std::time::Duration::ZERO, ..AppOptions::default() });
    app.reload();
    for k in parse_keys("bsh test.sh<enter>").unwrap() {
        app.handle_key(&crossterm::event::KeyEvent::new(k.code, k.mods));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while app.bisect.running.is_some() && std::time::Instant::now() < deadline {
        app.poll_journal();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let status = app.status.clone().unwrap();
    assert!(
        status.text.contains("step 7 of 12") && status.text.contains("The disk: the tree passes now"),
        "{status:?}"
    );
}
