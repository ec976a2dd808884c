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
pub(crate) fn read_head(path: &Path) -> io::Result<Head> {
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
pub(crate) fn first_timestamp(path: &Path) -> Option<String> {
    #[derive(Deserialize)]
    struct Ts {
        timestamp: Option<String>,
    }
    // A regular file only: opening a FIFO would block.
    let (f, _) = crate::fsutil::open_regular(path).ok()?;
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
pub(crate) struct Line {
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
    /// Claude Code's synthetic answer when the API failed (`"API Error: 529 …"`); `error` then
    /// holds the error type (the StopFailure hook's `error`).
    #[serde(rename = "isApiErrorMessage")]
    pub api_error: bool,
    pub error: Option<Value>,
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
pub(crate) struct Message {
    pub id: Option<String>,
    pub model: Option<String>,
    pub content: Value,
}

/// Only `type` (the first pass over every line).
#[derive(Deserialize)]
pub(crate) struct LineType<'a> {
    #[serde(rename = "type", borrow, default)]
    pub ty: Option<std::borrow::Cow<'a, str>>,
}

/// The line types walj reads (the others are skipped unparsed).
pub(crate) const READ_TYPES: &[&str] = &["user", "assistant", "system", "file-history-snapshot"];

/// What a user message's text is: a prompt the user typed, or text Claude Code wrote into
/// the conversation itself. Shared by `walj import` and the UserPromptSubmit hook, so both
/// record the same prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UserText<'a> {
    /// What the user typed; a slash command with arguments reads `/name args`.
    Prompt(std::borrow::Cow<'a, str>),
    /// A background task ended (`<task-notification>`): not a prompt, but news of the task.
    TaskNotification(TaskNotification),
    /// Text Claude Code wrote: the local-command caveat, a slash command's echo without
    /// arguments, a local command's output, an interrupt marker.
    Meta,
}

/// A `<task-notification>` message (Claude Code 2.1.x), as it arrives in UserPromptSubmit and
/// in transcripts: `<task-id>`, `<tool-use-id>`, `<status>`, `<summary>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TaskNotification {
    pub task_id: Option<String>,
    /// The Bash call that started the task.
    pub tool_use_id: Option<String>,
    /// `completed`, `failed`, `killed` (an open string).
    pub status: Option<String>,
    pub summary: Option<String>,
}

/// The text between `<tag>` and `</tag>`, trimmed (`None` when absent or empty).
fn tag<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = text.find(&open)? + open.len();
    let len = text[start..].find(&close)?;
    Some(text[start..start + len].trim()).filter(|t| !t.is_empty())
}

/// Classifies a user message's text (see [`UserText`]).
pub(crate) fn user_text(text: &str) -> UserText<'_> {
    let t = text.trim_start();
    if t.starts_with("<task-notification>") {
        let own = |name: &str| tag(t, name).map(str::to_string);
        return UserText::TaskNotification(TaskNotification {
            task_id: own("task-id"),
            tool_use_id: own("tool-use-id"),
            status: own("status"),
            summary: own("summary"),
        });
    }
    if t.starts_with("<command-name>") || t.starts_with("<command-message>") {
        // A slash command with arguments carries what the user typed.
        return match (tag(t, "command-name"), tag(t, "command-args")) {
            (Some(name), Some(args)) => UserText::Prompt(format!("{name} {args}").into()),
            (None, Some(args)) => UserText::Prompt(args.to_string().into()),
            _ => UserText::Meta,
        };
    }
    if t.starts_with("Caveat:") || t.starts_with("<local-command-") || t.starts_with("[Request interrupted") {
        return UserText::Meta;
    }
    UserText::Prompt(text.into())
}

/// When the last assistant line of `session` in a transcript tail is Claude Code's synthetic
/// answer to a failed API call (`isApiErrorMessage`): its error type (`error`, as StopFailure
/// names it) and its text ("API Error: 529 Overloaded. …").
pub(crate) fn last_api_error(tail: &[u8], session: &str) -> Option<(String, String)> {
    for line in tail.split(|&b| b == b'\n').rev() {
        if line.is_empty() || memchr::memmem::find(line, b"\"assistant\"").is_none() {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
        if v.get("type").and_then(Value::as_str) != Some("assistant")
            || v.get("sessionId").and_then(Value::as_str).is_some_and(|s| s != session)
        {
            continue;
        }
        if v.get("isApiErrorMessage").and_then(Value::as_bool) != Some(true) {
            return None;
        }
        let error = v.get("error").and_then(Value::as_str).unwrap_or("unknown").to_string();
        let text = v
            .pointer("/message/content")
            .and_then(Value::as_array)
            .map(|b| b.iter().filter_map(|x| x.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        return Some((error, text));
    }
    None
}

/// Prompts the user typed while Claude worked that Claude Code had queued and not yet taken
/// up (`queue-operation` lines of `session` in a transcript tail: an `enqueue` with its
/// `content`, taken by a later `dequeue` or `remove`, all dropped by `popAll`/`clear`), oldest
/// first. A crash loses them otherwise: they were never a UserPromptSubmit.
pub(crate) fn queued_prompts(tail: &[u8], session: &str) -> Vec<String> {
    let mut queue = std::collections::VecDeque::new();
    for line in tail.split(|&b| b == b'\n') {
        if line.is_empty() || memchr::memmem::find(line, b"queue-operation").is_none() {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
        if v.get("type").and_then(Value::as_str) != Some("queue-operation")
            || v.get("sessionId").and_then(Value::as_str).is_some_and(|s| s != session)
        {
            continue;
        }
        match v.get("operation").and_then(Value::as_str) {
            Some("enqueue") => {
                if let Some(c) = v.get("content").and_then(Value::as_str).filter(|c| !c.trim().is_empty()) {
                    queue.push_back(c.to_string());
                }
            }
            Some("dequeue" | "remove") => {
                queue.pop_front();
            }
            Some("popAll" | "clear") => queue.clear(),
            _ => {}
        }
    }
    queue.into()
}

/// The last assistant text of `session` (a session id or its prefix; `None`: any) in a
/// transcript tail: a transcript can hold lines of several sessions (a resumed or forked one).
pub(crate) fn last_assistant_text_of(tail: &[u8], session: Option<&str>) -> Option<String> {
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

    /// The real transcript's enqueue/dequeue pair leaves nothing queued; an enqueue the crash
    /// cut off before its dequeue is kept, another session's is not.
    #[test]
    fn a_queued_prompt_without_its_dequeue_is_kept() {
        let real = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/fixtures/transcripts/cc-2.1.328-killed-mid-bash.jsonl"),
        );
        if let Ok(real) = real {
            assert!(queued_prompts(&real, "4b79e617-7ef1-4ab2-a219-fbffcb6122b5").is_empty());
        }
        let sid = "s1";
        let tail = format!(
            "{}\n{}\n{}\n{}\n",
            r#"{"type":"queue-operation","operation":"enqueue","sessionId":"s1","content":"first"}"#,
            r#"{"type":"queue-operation","operation":"dequeue","sessionId":"s1"}"#,
            r#"{"type":"queue-operation","operation":"enqueue","sessionId":"s1","content":"also fix the docs"}"#,
            r#"{"type":"queue-operation","operation":"enqueue","sessionId":"s2","content":"not this one"}"#,
        );
        assert_eq!(queued_prompts(tail.as_bytes(), sid), ["also fix the docs"]);
    }
    use super::*;

    #[test]
    fn last_assistant_text_from_tail() {
        let t = br#"{"type":"assistant","message":{"content":[{"type":"text","text":"first"}]}}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"x"}]}}
{"type":"user","message":{"content":"hi"}}
{"type":"assistant","message":{"content":[{"type":"text","text":"second"}]}}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"y"}]}}
"#;
        assert_eq!(last_assistant_text_of(t, None).as_deref(), Some("second"));
    }

    #[test]
    fn the_last_answer_may_be_an_api_error() {
        // The line Claude Code 2.1.328 wrote when the API answered 529 (tests/e2e/turns.rs).
        let t = br#"{"type":"assistant","sessionId":"s1","message":{"content":[{"type":"tool_use","id":"x"}]}}
{"type":"assistant","sessionId":"s1","isApiErrorMessage":true,"error":"server_error","apiErrorStatus":529,"message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: 529 Overloaded. This is a server-side issue."}]}}
{"type":"last-prompt","lastPrompt":"rewrite a","sessionId":"s1"}
"#;
        assert_eq!(
            last_api_error(t, "s1"),
            Some(("server_error".into(), "API Error: 529 Overloaded. This is a server-side issue.".into()))
        );
        assert_eq!(last_api_error(t, "s2"), None);
        let ok = br#"{"type":"assistant","sessionId":"s1","message":{"content":[{"type":"text","text":"done"}]}}"#;
        assert_eq!(last_api_error(ok, "s1"), None);
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
    fn user_texts() {
        for meta in [
            "Caveat: The messages below were generated by the user while running local commands. DO NOT respond.",
            "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
            "<command-message>init is analyzing</command-message>\n<command-name>/init</command-name>",
            "<local-command-stdout>ok</local-command-stdout>",
            "[Request interrupted by user]",
        ] {
            assert_eq!(user_text(meta), UserText::Meta, "{meta}");
        }
        assert_eq!(user_text("fix the bug in a.txt"), UserText::Prompt("fix the bug in a.txt".into()));
        assert_eq!(
            user_text(
                "<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>src/a.rs</command-args>"
            ),
            UserText::Prompt("/review src/a.rs".into())
        );
        // What Claude Code 2.1.328 sends when a background command ends (UserPromptSubmit).
        let n = "<task-notification>\n<task-id>bohx39i35</task-id>\n<tool-use-id>toolu_mock_0_0</tool-use-id>\n<output-file>/tmp/x/tasks/bohx39i35.output</output-file>\n<status>completed</status>\n<summary>Background command \"bg\" completed (exit code 0)</summary>\n</task-notification>";
        assert_eq!(
            user_text(n),
            UserText::TaskNotification(TaskNotification {
                task_id: Some("bohx39i35".into()),
                tool_use_id: Some("toolu_mock_0_0".into()),
                status: Some("completed".into()),
                summary: Some("Background command \"bg\" completed (exit code 0)".into()),
            })
        );
    }
}
