//! The Claude Code transcript format: what walj reads of the JSONL lines in
//! `<config dir>/projects/<encoded cwd>/<session>.jsonl` (CLAUDE-CODE.md "Transcripts").

use std::fs;
use std::io::{self, BufRead, Read};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// What a transcript's first lines say about it.
#[derive(Debug, Clone, Default)]
pub struct Head {
    pub cwd: Option<String>,
    pub session: Option<String>,
}

/// Reads the first lines of a transcript (up to 256 KB) for its `cwd` and session id.
pub fn read_head(path: &Path) -> io::Result<Head> {
    #[derive(Deserialize)]
    struct Peek {
        cwd: Option<String>,
        #[serde(rename = "sessionId")]
        session: Option<String>,
    }
    let f = fs::File::open(path)?;
    let mut head = Head::default();
    let reader = io::BufReader::new(f.take(256 * 1024));
    for line in reader.split(b'\n') {
        let Ok(line) = line else { break };
        let Ok(p) = serde_json::from_slice::<Peek>(&line) else { continue };
        if head.session.is_none() {
            head.session = p.session;
        }
        if p.cwd.is_some() {
            head.cwd = p.cwd;
            break;
        }
    }
    Ok(head)
}

/// The first `timestamp` in a transcript's first 256 KB.
pub fn first_timestamp(path: &Path) -> Option<String> {
    #[derive(Deserialize)]
    struct Ts {
        timestamp: Option<String>,
    }
    let f = fs::File::open(path).ok()?;
    for line in io::BufReader::new(f.take(256 * 1024)).split(b'\n') {
        let line = line.ok()?;
        if let Ok(Ts { timestamp: Some(t) }) = serde_json::from_slice(&line) {
            return Some(t);
        }
    }
    None
}

/// The parts of a transcript line walj reads (everything else is skipped unparsed).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Line {
    #[serde(rename = "type")]
    pub ty: String,
    pub uuid: Option<String>,
    #[serde(rename = "sessionId")]
    pub session: Option<String>,
    pub timestamp: Option<String>,
    pub cwd: Option<String>,
    #[serde(rename = "gitBranch")]
    pub branch: Option<String>,
    pub version: Option<String>,
    #[serde(rename = "isSidechain")]
    pub sidechain: bool,
    #[serde(rename = "isMeta")]
    pub meta: bool,
    #[serde(rename = "isCompactSummary")]
    pub compact_summary: bool,
    pub message: Option<Message>,
    #[serde(rename = "toolUseResult")]
    pub tool_use_result: Option<Value>,
    pub subtype: Option<String>,
    #[serde(rename = "compactMetadata")]
    pub compact: Option<Value>,
    pub snapshot: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Message {
    pub id: Option<String>,
    pub model: Option<String>,
    pub content: Value,
}

/// Only `type` (the first pass over every line).
#[derive(Deserialize)]
pub struct LineType<'a> {
    #[serde(rename = "type", borrow, default)]
    pub ty: Option<std::borrow::Cow<'a, str>>,
}

/// The line types walj reads (the others are skipped unparsed).
pub const READ_TYPES: &[&str] = &["user", "assistant", "system", "file-history-snapshot"];

/// Whether a user message's text is one Claude Code wrote, not a prompt the user typed:
/// the local-command caveat, a slash command's echo without arguments, a local command's
/// output, a background task's notification, an interrupt marker. Used by import and by the
/// UserPromptSubmit hook.
pub fn is_meta_prompt(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with("<command-name>") || t.starts_with("<command-message>") {
        // A slash command with arguments carries what the user typed.
        let args = t
            .split_once("<command-args>")
            .and_then(|(_, rest)| rest.split_once("</command-args>"))
            .map(|(a, _)| a.trim())
            .unwrap_or("");
        return args.is_empty();
    }
    t.starts_with("Caveat:")
        || t.starts_with("<local-command-")
        || t.starts_with("<task-notification>")
        || t.starts_with("[Request interrupted")
}

/// The last assistant text in a transcript tail (lines of `type: assistant` with text blocks).
pub fn last_assistant_text(tail: &[u8]) -> Option<String> {
    last_assistant_text_of(tail, None)
}

/// The last assistant text of `session` (a session id or its prefix; `None`: any) in a
/// transcript tail: a transcript can hold lines of several sessions (a resumed or forked one).
pub fn last_assistant_text_of(tail: &[u8], session: Option<&str>) -> Option<String> {
    for line in tail.split(|&b| b == b'\n').rev() {
        if line.is_empty() || memchr::memmem::find(line, b"\"assistant\"").is_none() {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
        if v.get("type").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        if let Some(want) = session.filter(|s| !s.is_empty())
            && let Some(sid) = v.get("sessionId").and_then(Value::as_str)
            && !sid.starts_with(want)
        {
            continue;
        }
        let Some(blocks) = v.pointer("/message/content").and_then(Value::as_array) else { continue };
        let text: Vec<&str> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .filter(|t| !t.trim().is_empty())
            .collect();
        if !text.is_empty() {
            return Some(text.join("\n"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_assistant_text_from_tail() {
        let t = br#"{"type":"assistant","message":{"content":[{"type":"text","text":"first"}]}}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"x"}]}}
{"type":"user","message":{"content":"hi"}}
{"type":"assistant","message":{"content":[{"type":"text","text":"second"}]}}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"y"}]}}
"#;
        assert_eq!(last_assistant_text(t).as_deref(), Some("second"));
    }

    #[test]
    fn last_assistant_text_of_its_own_session() {
        let t = br#"{"type":"assistant","sessionId":"aaa","message":{"content":[{"type":"text","text":"of a"}]}}
{"type":"assistant","sessionId":"bbb","message":{"content":[{"type":"text","text":"of b"}]}}
"#;
        assert_eq!(last_assistant_text_of(t, Some("aaa")).as_deref(), Some("of a"));
        assert_eq!(last_assistant_text_of(t, Some("bbb")).as_deref(), Some("of b"));
        assert_eq!(last_assistant_text_of(t, None).as_deref(), Some("of b"));
    }

    #[test]
    fn meta_prompts() {
        for meta in [
            "Caveat: The messages below were generated by the user while running local commands. DO NOT respond.",
            "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
            "<command-message>init is analyzing</command-message>\n<command-name>/init</command-name>",
            "<local-command-stdout>ok</local-command-stdout>",
            "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>",
            "[Request interrupted by user]",
        ] {
            assert!(is_meta_prompt(meta), "{meta}");
        }
        assert!(!is_meta_prompt("fix the bug in a.txt"));
        assert!(!is_meta_prompt(
            "<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>src/a.rs</command-args>"
        ));
    }
}
