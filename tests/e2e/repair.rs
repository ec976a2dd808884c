//! `walj sessions repair` with the real Claude Code CLI: a session killed (-9) mid-Bash whose
//! transcript then lost its tail to a power cut (torn last line, NUL padding) is repaired under
//! a new id, and `claude --resume NEWID` continues it: the next request to the model carries
//! the old conversation, the cut-off call closed by walj's result, and walj's brief; another
//! session started first does not take that brief. `tests/sessions/repair.rs` covers each
//! damaged shape through the binary alone.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use crate::support::anthropic_mock::{self, Turn};
use crate::support::claude;
use crate::walj::{CONTEXT_PREFIX, CRASH_PROMPT, crash_mid_bash, main_requests_after};
use std::fs;

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
