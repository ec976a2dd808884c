//! Claude Code hook payloads, parsed leniently: every field optional, unknown fields
//! ignored, `tool_response` may be an object, a string or an array (CLAUDE-CODE.md).

use serde_json::Value;

use super::events::HookEvent;

/// Why stdin is not a hook payload.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PayloadError {
    #[error("payload is not UTF-8")]
    NotUtf8,
    #[error("empty payload on stdin")]
    Empty,
    #[error("payload is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("payload is not a JSON object")]
    NotObject,
}

/// A payload: the raw JSON object with typed accessors.
#[derive(Debug, Clone)]
pub struct Payload(pub Value);

impl Payload {
    pub(crate) fn parse(bytes: &[u8]) -> Result<Payload, PayloadError> {
        let text = std::str::from_utf8(bytes).map_err(|_| PayloadError::NotUtf8)?;
        if text.trim().is_empty() {
            return Err(PayloadError::Empty);
        }
        let v: Value = serde_json::from_str(text).map_err(PayloadError::NotJson)?;
        if !v.is_object() {
            return Err(PayloadError::NotObject);
        }
        Ok(Payload(v))
    }

    pub(crate) fn str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }
    pub(crate) fn event_name(&self) -> Option<&str> {
        self.str("hook_event_name")
    }
    pub fn event(&self) -> Option<HookEvent> {
        self.event_name().and_then(HookEvent::parse)
    }
    pub(crate) fn tool_name(&self) -> &str {
        self.str("tool_name").unwrap_or("")
    }
    pub(crate) fn tool_use_id(&self) -> Option<&str> {
        self.str("tool_use_id").filter(|s| !s.is_empty())
    }
    pub(crate) fn tool_input(&self) -> &Value {
        self.0.get("tool_input").unwrap_or(&Value::Null)
    }
    pub(crate) fn tool_response(&self) -> &Value {
        self.0.get("tool_response").unwrap_or(&Value::Null)
    }
    pub(crate) fn input_str(&self, key: &str) -> Option<&str> {
        self.tool_input().get(key).and_then(Value::as_str)
    }
    /// The file a file tool acts on (`file_path`, or `notebook_path` for NotebookEdit).
    pub(crate) fn file_path(&self) -> Option<&str> {
        self.input_str("file_path").or_else(|| self.input_str("notebook_path")).filter(|s| !s.is_empty())
    }
    /// `tool_response.<key>` when the response is an object.
    pub(crate) fn response_field(&self, key: &str) -> Option<&Value> {
        self.tool_response().as_object().and_then(|o| o.get(key))
    }
}

/// Cuts `s` to at most `max` bytes on a char boundary, marking the cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &s[..end], s.len() - end)
}
