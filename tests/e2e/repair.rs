//! `walj sessions repair` with the real Claude Code CLI: a session killed (-9) mid-Bash whose
//! transcript then lost its tail to a power cut (torn last line, NUL padding) is repaired under
//! a new id, and `claude --resume NEWID` continues it: the next request to the model carries
//! the old conversation, the cut-off call closed by walj's result, and walj's brief; another
//! session started first does not take that brief. `tests/sessions/repair.rs` covers each
//! damaged shape through the binary alone.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{self, MockServer, Request, Turn};
use crate::support::claude;
use crate::walj::{CONTEXT_PREFIX, CRASH_PROMPT, Proj, crash_mid_bash, main_requests_after};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[test]
fn a_repaired_copy_resumes_with_the_old_conversation_and_the_brief() {
    let test = "a_repaired_copy_resumes_with_the_old_conversation_and_the_brief";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let c = crash_mid_bash(&bin);
    drop(c.orphans);
    let p = &c.p;

    // The power cut after the kill: a line being appended torn, the file padded with zeros.
    let original = p.sb.transcript(&c.sid);
    let mut bytes = fs::read(&original).unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains("toolu_mock_2_0"), "the kill came before the call");
    bytes.extend_from_slice(br#"{"type":"last-prompt","lastPrompt":"Raise ret"#);
    bytes.extend(std::iter::repeat_n(0u8, 4096));
    fs::write(&original, &bytes).unwrap();

    let v = p.walj_json(&["sessions", "repair", &c.sid[..8], "--json"]);
    let new = v["new_session"].as_str().unwrap().to_string();
    assert_ne!(new, c.sid);
    let kinds: Vec<&str> = v["changes"].as_array().unwrap().iter().map(|c| c["change"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"nul_bytes") && kinds.contains(&"torn_tail"), "{v}");
    assert!(kinds.contains(&"closed_tool_call"), "{v}");
    assert_eq!(fs::read(&original).unwrap(), bytes, "the original was touched");
    assert!(p.sb.transcript(&new).is_file(), "not where Claude Code looks: {v}");

    // Another session first: the brief waits for the repaired one.
    c.mock.script(vec![Turn::text("Other.")]);
    let before = c.mock.main_requests().len();
    p.session(p.claude_p(&bin, &c.mock, "Something else"), &c.mock);
    for r in main_requests_after(&c.mock, before) {
        assert_eq!(r.count("walj sessions repair"), 0, "another session took the repaired one's brief");
    }

    c.mock.script(vec![Turn::text("Resumed.")]);
    let before = c.mock.main_requests().len();
    let mut cmd = p.claude_p(&bin, &c.mock, "Go on");
    cmd.args(["--resume", &new]);
    let (out, sid) = p.session(cmd, &c.mock);
    assert_eq!(sid, new);
    assert_eq!(out.json()["result"], "Resumed.");
    let reqs = main_requests_after(&c.mock, before);
    let first = &reqs[0];
    // The old conversation: the prompt, the Edit and Write results, the Bash call.
    assert!(first.count(CRASH_PROMPT) > 0, "not the old conversation:\n{}", c.mock.summary());
    for id in ["toolu_mock_0_0", "toolu_mock_1_0", "toolu_mock_2_0"] {
        assert!(first.count(id) > 0, "{id} missing from the resumed conversation");
    }
    // The Bash call cut off by the kill is closed by walj's result, not an "Interrupted" one.
    let closing: Vec<_> = first.tool_results().into_iter().filter(|r| r["tool_use_id"] == "toolu_mock_2_0").collect();
    assert_eq!(closing.len(), 1, "{closing:?}");
    assert!(closing[0].to_string().contains("walj repair: this tool call was cut off"), "{:?}", closing[0]);
    // walj's brief of the old session, as SessionStart context, once.
    let brief = anthropic_mock::strings_containing(&first.body, "walj sessions repair");
    assert_eq!(brief.len(), 1, "{brief:?}");
    assert!(brief[0].starts_with(CONTEXT_PREFIX), "{}", brief[0]);
    assert!(brief[0].contains(&format!("continues session {}", &c.sid[..6])), "{}", brief[0]);
    assert!(brief[0].contains("src/server.rs"), "the old session's changes: {}", brief[0]);
    // The resume wrote to the copy only.
    assert_eq!(fs::read(&original).unwrap(), bytes, "the resume touched the original");
}

// ---------------------------------------------------------------------------------------------
// Each damaged shape of tests/fixtures/repair/, repaired and resumed with the real CLI.

/// The fixtures' session (the real 2.1.328 transcript's) and its prompt.
const SESSION: &str = "4b79e617-7ef1-4ab2-a219-fbffcb6122b5";
const PROMPT: &str = "Raise retries, add server, build";
/// The Edit's result text in the fixtures.
const EDIT_RESULT: &str = "settings.json has been updated successfully";

fn fixture(name: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/repair");
    fs::read(dir.join(format!("{name}.jsonl"))).unwrap()
}

/// `walj hook` with `payload` on stdin, in the project, under `timeout` (its parent, gone once
/// the hook returns: the session's "Claude Code" is dead, as after the kill).
fn hook(p: &Proj, payload: &Value) {
    let mut child = Command::new("timeout")
        .args(["20", "walj", "hook"])
        .current_dir(p.root())
        .env("PATH", &p.path)
        .env("HOME", &p.sb.home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
}

/// A session of the fixture's transcript (in Claude Code's folder of the recorded project,
/// `/home/user/shop`) that started, ran a turn whose Stop copied the transcript, and was killed;
/// then the damage: the transcript holds `bytes`.
fn crashed_with(p: &Proj, bytes: &[u8]) -> PathBuf {
    let original = p.sb.home.join(format!(".claude/projects/-home-user-shop/{SESSION}.jsonl"));
    fs::create_dir_all(original.parent().unwrap()).unwrap();
    fs::write(&original, bytes).unwrap();
    let base = json!({"session_id": SESSION, "transcript_path": original, "cwd": p.root()});
    let event = |name: &str, extra: Value| {
        let mut v = base.clone();
        v["hook_event_name"] = json!(name);
        for (k, val) in extra.as_object().unwrap() {
            v[k] = val.clone();
        }
        v
    };
    hook(p, &event("SessionStart", json!({"source": "startup"})));
    hook(p, &event("UserPromptSubmit", json!({"prompt": PROMPT})));
    hook(p, &event("Stop", json!({"stop_hook_active": false, "last_assistant_message": "Working."})));
    original
}

/// The request as the API would check it: every `tool_use` answered by exactly one
/// `tool_result` in the next message, no result without its call.
fn assert_api_valid(r: &Request, what: &str) {
    let msgs = r.body["messages"].as_array().unwrap();
    let blocks = |m: &Value, kind: &str| -> Vec<Value> {
        m["content"].as_array().map_or_else(Vec::new, |a| a.iter().filter(|b| b["type"] == kind).cloned().collect())
    };
    let mut called = HashSet::new();
    for (i, m) in msgs.iter().enumerate() {
        for u in blocks(m, "tool_use") {
            let id = u["id"].as_str().unwrap().to_string();
            let next = msgs.get(i + 1).map(|n| blocks(n, "tool_result")).unwrap_or_default();
            let answers = next.iter().filter(|b| b["tool_use_id"] == id.as_str()).count();
            assert_eq!(answers, 1, "{what}: call {id} answered {answers} times in the next message");
            called.insert(id);
        }
        for res in blocks(m, "tool_result") {
            let id = res["tool_use_id"].as_str().unwrap();
            assert!(called.contains(id), "{what}: a result without its call: {id}");
        }
    }
}

/// `walj sessions repair` of the fixture `name`, then `claude -p --resume NEWID`: the resume
/// succeeds, its first request is what the API accepts, carries each of `needles` and none of
/// `gone`, and walj's brief once. Returns that request.
fn resumes(bin: &Path, name: &str, needles: &[&str], gone: &[&str]) -> Request {
    let p = Proj::new(&[("a.txt", "a\n")]);
    p.install_walj();
    let bytes = fixture(name);
    let original = crashed_with(&p, &bytes);
    let v = p.walj_json(&["sessions", "repair", &SESSION[..8], "--json"]);
    let new = v["new_session"].as_str().unwrap_or_else(|| panic!("{name}: {v}")).to_string();
    assert!(p.sb.transcript(&new).is_file(), "{name}: not where Claude Code looks: {v}");

    let mock = MockServer::start(vec![Turn::text("Resumed.")]);
    let mut cmd = p.claude_p(bin, &mock, "Go on");
    cmd.args(["--resume", &new]);
    let (out, sid) = p.session(cmd, &mock);
    assert_eq!(sid, new, "{name}");
    assert_eq!(out.json()["result"], "Resumed.", "{name}: {}", mock.summary());
    let first = mock.main_requests().into_iter().next().unwrap_or_else(|| panic!("{name}: no request"));
    assert_api_valid(&first, name);
    for needle in needles {
        assert!(first.count(needle) > 0, "{name}: {needle} missing from the resumed conversation:\n{}", mock.summary());
    }
    for needle in gone {
        assert_eq!(first.count(needle), 0, "{name}: {needle} carried:\n{}", mock.summary());
    }
    let brief = anthropic_mock::strings_containing(&first.body, "walj sessions repair");
    assert_eq!(brief.len(), 1, "{name}: {brief:?}");
    assert!(brief[0].starts_with(CONTEXT_PREFIX), "{name}: {}", brief[0]);
    assert!(brief[0].contains(&format!("continues session {}", &SESSION[..6])), "{name}: {}", brief[0]);
    assert_eq!(fs::read(&original).unwrap(), bytes, "{name}: the original was touched");
    first
}

#[test]
fn each_damaged_shape_resumes_with_the_real_cli_after_repair() {
    let test = "each_damaged_shape_resumes_with_the_real_cli_after_repair";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    let all = ["toolu_mock_0_0", "toolu_mock_1_0", "toolu_mock_2_0"];
    let cut_off = "walj repair: this tool call was cut off";
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("killed-mid-bash", &[PROMPT, all[0], all[1], all[2], cut_off], &[]),
        // The torn line was the Bash call: gone with it; the turns before stay.
        ("torn-tail", &[PROMPT, all[0], all[1]], &[all[2]]),
        ("nul-padded", &[PROMPT, all[0], all[1], all[2], cut_off], &[]),
        ("torn-nul-padded", &[PROMPT, all[0], all[1]], &[all[2]]),
        // Claude Code alone loses the glued line silently; repaired, the conversation goes on past it.
        ("glued-after-torn", &[PROMPT, all[0], "whose call was lost", "File created successfully", all[2]], &[]),
        // A call whose result is gone, closed in place by the repair.
        ("open-call-mid", &[PROMPT, all[0], all[1], all[2]], &[]),
        // Claude Code alone drops the Edit whose call line was zeroed, result and all; repaired,
        // its result stays, told as a result whose call was lost.
        ("zeroed-region", &[PROMPT, "whose call was lost", EDIT_RESULT, all[1], all[2]], &[]),
        ("queued-prompt", &[PROMPT, all[2], "Also update the README once the build passes"], &[]),
    ];
    for (name, needles, gone) in cases {
        resumes(&bin, name, needles, gone);
    }
}

/// The control: Claude Code resuming the damaged file itself (an unrepaired copy where it looks,
/// under a new id) drops what `needle` names, so the repair above is what carries it. Checked
/// against the pinned Claude Code; if this fails, Claude Code changed and docs/sessions.md's
/// table of what it does with each shape needs a look.
fn unrepaired_loses(bin: &Path, name: &str, needle: &str) {
    let p = Proj::new(&[("a.txt", "a\n")]);
    let new = "0c0c0c0c-0000-4000-8000-00000000c0c0";
    let place = p.sb.transcript(new);
    fs::create_dir_all(place.parent().unwrap()).unwrap();
    fs::write(&place, fixture(name)).unwrap();
    let mock = MockServer::start(vec![Turn::text("Resumed.")]);
    let mut cmd = p.claude_p(bin, &mock, "Go on");
    cmd.args(["--resume", new]);
    let _ = p.session(cmd, &mock);
    let first = mock.main_requests().into_iter().next().unwrap_or_else(|| panic!("{name}: no request"));
    assert_eq!(first.count(needle), 0, "{name}: Claude Code alone kept {needle}:\n{}", mock.summary());
}

#[test]
fn without_repair_claude_code_drops_what_the_repair_keeps() {
    let test = "without_repair_claude_code_drops_what_the_repair_keeps";
    let Some(bin) = claude::claude_or_skip(test) else { return };
    // The Edit whose call line was zeroed: its result (and so what it did) vanishes.
    unrepaired_loses(&bin, "zeroed-region", EDIT_RESULT);
    // (A call whose result line was removed mid-conversation, `open-call-mid`, is no control:
    // the pinned Claude Code answers it with its own "interrupted" result.)
}
