//! `walj sessions repair` through the real binary: one damaged transcript per failure a crash
//! leaves (`tests/fixtures/repair/`, each made from a real Claude Code 2.1.328 transcript), the
//! repaired copy under a new session id where Claude Code looks, the original untouched, the
//! brief waiting for the repaired session's start only, and a live session refused.
//! `tests/e2e/repair.rs` resumes a repaired copy with the real CLI.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use assert_cmd::Command;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::PathBuf;

use crate::common::{Parent, Repo, hook_ok};
use serde_json::{Value, json};

/// The session of the fixtures (the real transcript's).
const SESSION: &str = "4b79e617-7ef1-4ab2-a219-fbffcb6122b5";
/// Its prompt.
const PROMPT: &str = "Raise retries, add server, build";

fn fixture(name: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/repair");
    fs::read(dir.join(format!("{name}.jsonl"))).unwrap()
}

fn project() -> Repo {
    let repo = Repo::new(&[("a.txt", "a\n")]).with_home();
    fs::create_dir_all(repo.home.join(".claude/projects/-home-user-shop")).unwrap();
    repo
}

/// Where the session's transcript is (Claude Code's folder of the recorded project).
fn original(repo: &Repo) -> PathBuf {
    repo.home.join(format!(".claude/projects/-home-user-shop/{SESSION}.jsonl"))
}

/// Where Claude Code looks for session `id` when started in the project.
fn place(repo: &Repo, id: &str) -> PathBuf {
    let key: String =
        repo.root.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    repo.home.join(".claude/projects").join(key).join(format!("{id}.jsonl"))
}

fn payload(repo: &Repo, session: &str, event: &str, extra: Value) -> String {
    let mut v = json!({
        "session_id": session,
        "transcript_path": original(repo),
        "cwd": repo.root,
        "hook_event_name": event,
    });
    for (k, val) in extra.as_object().unwrap() {
        v[k] = val.clone();
    }
    v.to_string()
}

/// A session that started, ran a turn (its Stop copied the transcript), and was killed:
/// the transcript holds `bytes` (at the Stop, so walj's safe copy holds them too).
fn crashed_with(repo: &Repo, bytes: &[u8]) {
    fs::write(original(repo), bytes).unwrap();
    hook_ok(&repo.root, &payload(repo, SESSION, "SessionStart", json!({"source": "startup"})), Parent::Timeout(20));
    hook_ok(&repo.root, &payload(repo, SESSION, "UserPromptSubmit", json!({"prompt": PROMPT})), Parent::Timeout(20));
    hook_ok(
        &repo.root,
        &payload(repo, SESSION, "Stop", json!({"stop_hook_active": false, "last_assistant_message": "Working."})),
        Parent::Timeout(20),
    );
}

fn walj(repo: &Repo, args: &[&str]) -> Command {
    let mut c = repo.walj(args);
    c.env("HOME", &repo.home).env_remove("CLAUDE_CONFIG_DIR");
    c
}

fn repair_json(repo: &Repo) -> Value {
    let out = walj(repo, &["sessions", "repair", "4b79", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn lines(bytes: &[u8]) -> Vec<Value> {
    assert_eq!(bytes.last(), Some(&b'\n'), "the repaired copy ends its last line");
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(l))))
        .collect()
}

/// The conversation Claude Code rebuilds: the parent chain from the last line with a uuid.
fn chain(vs: &[Value]) -> Vec<&Value> {
    let by: HashMap<&str, &Value> = vs.iter().filter_map(|v| Some((v["uuid"].as_str()?, v))).collect();
    let mut out = Vec::new();
    let mut cur = vs.iter().rev().find(|v| v["uuid"].is_string() && v["isSidechain"] != true);
    while let Some(v) = cur {
        out.push(v);
        cur = v["parentUuid"].as_str().and_then(|p| by.get(p).copied());
    }
    out.reverse();
    out
}

fn blocks<'a>(v: &'a Value, kind: &str) -> Vec<&'a Value> {
    v["message"]["content"].as_array().into_iter().flatten().filter(|b| b["type"] == kind).collect()
}

/// What every repaired copy must be: every line a JSON object of the new session, the
/// conversation one chain from the user's prompt to the end, every tool call answered in the
/// message right after it, no result without its call.
fn assert_resumable(bytes: &[u8], new: &str) -> Vec<Value> {
    assert!(!bytes.contains(&0), "NUL bytes left");
    let vs = lines(bytes);
    for v in &vs {
        if v.get("sessionId").is_some() {
            assert_eq!(v["sessionId"], new, "{v}");
        }
    }
    let c = chain(&vs);
    let msgs: Vec<&&Value> = c.iter().filter(|v| v["type"] == "user" || v["type"] == "assistant").collect();
    assert!(!msgs.is_empty());
    let calls: HashSet<&str> =
        vs.iter().flat_map(|v| blocks(v, "tool_use")).map(|b| b["id"].as_str().unwrap()).collect();
    for (i, m) in msgs.iter().enumerate() {
        for call in blocks(m, "tool_use") {
            let id = call["id"].as_str().unwrap();
            // The results follow the call's message (its other lines first).
            let answered = msgs[i + 1..]
                .iter()
                .take_while(|n| n["type"] == "assistant" || !blocks(n, "tool_result").is_empty())
                .any(|n| blocks(n, "tool_result").iter().any(|r| r["tool_use_id"] == id));
            assert!(answered, "tool call {id} has no result after it in the chain");
        }
        for r in blocks(m, "tool_result") {
            assert!(calls.contains(r["tool_use_id"].as_str().unwrap()), "result without call: {r}");
        }
    }
    vs
}

fn kinds(v: &Value) -> Vec<String> {
    v["changes"].as_array().unwrap().iter().map(|c| c["change"].as_str().unwrap().to_string()).collect()
}

/// Repairs `name`'s shape; checks what every repair must do; returns (report, copy's lines,
/// the chain's texts).
fn repaired(name: &str) -> (Repo, Value, Vec<Value>) {
    let repo = project();
    let bytes = fixture(name);
    crashed_with(&repo, &bytes);
    let v = repair_json(&repo);
    let new = v["new_session"].as_str().unwrap().to_string();
    assert_ne!(new, SESSION);
    assert_eq!(v["session"], SESSION);
    assert_eq!(v["written"], true);
    let path = place(&repo, &new);
    assert_eq!(v["path"], path.to_string_lossy().as_ref(), "not where Claude Code looks");
    assert_eq!(fs::read(original(&repo)).unwrap(), bytes, "the original was changed");
    let vs = assert_resumable(&fs::read(&path).unwrap(), &new);
    assert_eq!(v["resume"], format!("claude --resume {new}"));
    (repo, v, vs)
}

fn chain_text(vs: &[Value]) -> String {
    chain(vs).iter().map(|v| v["message"].to_string()).collect::<Vec<_>>().join("\n")
}

#[test]
fn a_tool_call_cut_off_by_the_kill_is_closed_saying_so() {
    let (_, v, vs) = repaired("killed-mid-bash");
    assert_eq!(kinds(&v), ["closed_tool_call"], "{v}");
    assert_eq!(v["changes"][0]["tool_use_id"], "toolu_mock_2_0");
    assert_eq!(v["changes"][0]["tool"], "Bash");
    let text = chain_text(&vs);
    assert!(text.contains(PROMPT));
    let closing = vs.iter().find(|l| blocks(l, "tool_result").iter().any(|r| r["tool_use_id"] == "toolu_mock_2_0"));
    let r = &blocks(closing.unwrap(), "tool_result")[0];
    assert_eq!(r["is_error"], true);
    assert!(r["content"].as_str().unwrap().contains("cut off"), "{r}");
}

#[test]
fn a_torn_tail_drops_the_partial_assistant_line() {
    let (_, v, vs) = repaired("torn-tail");
    assert_eq!(kinds(&v), ["partial_assistant"], "{v}");
    let text = chain_text(&vs);
    assert!(text.contains(PROMPT) && text.contains("toolu_mock_1_0"), "the turns before were lost");
    assert!(!text.contains("toolu_mock_2_0"), "the torn call is gone with its line");
}

#[test]
fn a_nul_padded_tail_is_cut() {
    let (_, v, _) = repaired("nul-padded");
    assert_eq!(kinds(&v), ["nul_bytes", "closed_tool_call"], "{v}");
    assert_eq!(v["changes"][0]["bytes"], 4096);
    let (_, v, _) = repaired("torn-nul-padded");
    assert_eq!(kinds(&v), ["nul_bytes", "partial_assistant"], "{v}");
}

#[test]
fn a_line_glued_behind_a_torn_one_is_kept_and_its_lost_call_told() {
    let (_, v, vs) = repaired("glued-after-torn");
    assert_eq!(kinds(&v), ["partial_assistant", "recovered", "relinked", "orphan_result", "closed_tool_call"], "{v}");
    let text = chain_text(&vs);
    // The conversation goes on past the damage: the prompt, the Edit, the Write's result (as
    // text), the Bash call (closed).
    for needle in [PROMPT, "toolu_mock_0_0", "whose call was lost", "File created successfully", "toolu_mock_2_0"] {
        assert!(text.contains(needle), "{needle} missing from the conversation:\n{text}");
    }
}

#[test]
fn a_call_without_result_mid_conversation_is_closed_in_place() {
    let (_, v, vs) = repaired("open-call-mid");
    assert_eq!(kinds(&v), ["relinked", "closed_tool_call", "closed_tool_call"], "{v}");
    let c = chain(&vs);
    let at = |id: &str| {
        c.iter()
            .position(|l| blocks(l, "tool_result").iter().any(|r| r["tool_use_id"] == id))
            .unwrap_or_else(|| panic!("no result of {id}"))
    };
    let call = c.iter().position(|l| blocks(l, "tool_use").iter().any(|b| b["id"] == "toolu_mock_0_0")).unwrap();
    assert_eq!(at("toolu_mock_0_0"), call + 1, "the Edit's closing result follows it");
    assert!(at("toolu_mock_1_0") > at("toolu_mock_0_0"), "the Write's real result stays after");
}

#[test]
fn a_zeroed_region_keeps_the_conversation_around_it_linked() {
    let (_, v, vs) = repaired("zeroed-region");
    assert_eq!(kinds(&v), ["nul_bytes", "relinked", "orphan_result", "closed_tool_call"], "{v}");
    // What came after the hole is one conversation with what came before it (Claude Code
    // itself drops the prompt: the chain breaks at the hole).
    let text = chain_text(&vs);
    for needle in [PROMPT, "whose call was lost", "toolu_mock_1_0", "toolu_mock_2_0"] {
        assert!(text.contains(needle), "{needle} missing from the conversation:\n{text}");
    }
}

#[test]
fn the_safe_copy_fills_what_the_original_lost_to_zeros() {
    let repo = project();
    let good = fixture("killed-mid-bash");
    crashed_with(&repo, &good);
    // After the Stop copied it, a page of the original turns to zeros.
    fs::write(original(&repo), fixture("zeroed-region")).unwrap();
    let v = repair_json(&repo);
    assert_eq!(v["source"], "walj's safe copy");
    // The copy holds the zeroed lines; what it appended when the original changed under it
    // (the zeros and the line behind them, a second time) is cut again.
    let k = kinds(&v);
    assert!(!k.iter().any(|c| c == "relinked" || c == "orphan_result"), "the hole reached the repair: {v}");
    assert!(k.contains(&"closed_tool_call".to_string()), "{v}");
    let new = v["new_session"].as_str().unwrap();
    let vs = assert_resumable(&fs::read(place(&repo, new)).unwrap(), new);
    let text = chain_text(&vs);
    assert!(text.contains(PROMPT) && text.contains("Updating config."), "{text}");
}

#[test]
fn a_queued_prompt_is_told_and_reaches_the_repaired_sessions_start_only() {
    let (repo, v, _) = repaired("queued-prompt");
    assert_eq!(kinds(&v), ["closed_tool_call", "queued_prompt"], "{v}");
    let new = v["new_session"].as_str().unwrap();
    // Another session starting first does not take the brief.
    let other = "99999999-0000-4000-8000-000000000001";
    let out = hook_ok(&repo.root, &payload(&repo, other, "SessionStart", json!({"source": "startup"})), Parent::Test);
    assert!(!out.contains("walj sessions repair"), "another session took the repaired one's brief: {out}");
    // The repaired session's start does, once.
    let start = payload(&repo, new, "SessionStart", json!({"source": "resume"}));
    let out = hook_ok(&repo.root, &start, Parent::Timeout(20));
    let note: Value = serde_json::from_str(&out).unwrap();
    let context = note["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.contains(&format!("continues session {}", &SESSION[..6])), "{context}");
    assert!(context.contains("Also update the README once the build passes"), "the queued prompt: {context}");
    assert!(context.contains("cut off"), "what the repair changed: {context}");
    assert!(context.contains(&format!("resumes with: claude --resume {new}")), "{context}");
    assert!(!context.contains(&format!("--resume {SESSION}")), "the damaged original offered: {context}");
    let again = hook_ok(&repo.root, &start, Parent::Timeout(20));
    assert!(!again.contains("walj sessions repair"), "delivered twice: {again}");
}

#[test]
fn the_text_output_lists_the_changes_and_the_resume_line() {
    let repo = project();
    crashed_with(&repo, &fixture("torn-nul-padded"));
    let dry = walj(&repo, &["sessions", "repair", "4b79", "--dry-run"]).output().unwrap();
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    assert!(text.contains("removed 4096 bytes of NULs") && text.contains("partial assistant line"), "{text}");
    assert!(text.contains("Dry run: nothing written"), "{text}");
    assert!(!place(&repo, "x").parent().unwrap().exists(), "the dry run wrote");
    let out = walj(&repo, &["sessions", "repair", "4b79"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("the original is untouched"), "{text}");
    let line = text.lines().last().unwrap().trim();
    let new = line.strip_prefix("claude --resume ").unwrap_or_else(|| panic!("no resume line: {text}"));
    assert!(place(&repo, new).is_file());
}

#[test]
fn a_live_session_is_refused_and_nothing_written() {
    let repo = project();
    fs::write(original(&repo), fixture("killed-mid-bash")).unwrap();
    hook_ok(&repo.root, &payload(&repo, SESSION, "SessionStart", json!({"source": "startup"})), Parent::Test);
    let out = walj(&repo, &["sessions", "repair", "4b79"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("still running") && err.contains("Nothing was written"), "{err}");
    assert!(!place(&repo, "x").parent().unwrap().exists(), "a copy was written");
}
