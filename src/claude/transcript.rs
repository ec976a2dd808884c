//! The Claude Code transcript format: what walj reads of the JSONL lines in
//! `<config dir>/projects/<encoded cwd>/<session>.jsonl` (CLAUDE-CODE.md "Transcripts").

use serde_json::Value;

/// The last assistant text in a transcript tail (lines of `type: assistant` with text blocks).
pub fn last_assistant_text(tail: &[u8]) -> Option<String> {
    for line in tail.split(|&b| b == b'\n').rev() {
        if line.is_empty() || memchr::memmem::find(line, b"\"assistant\"").is_none() {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
        if v.get("type").and_then(Value::as_str) != Some("assistant") {
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
}
