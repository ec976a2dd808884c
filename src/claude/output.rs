//! The JSON a hook prints on stdout for Claude Code (CLAUDE-CODE.md "Hook output").

use serde_json::{Value, json};

use super::events::HookEvent;

/// The hook's default JSON output shape at SessionStart: `systemMessage` is for the user,
/// `hookSpecificOutput.additionalContext` for Claude.
pub(crate) fn session_start_json(system_message: Option<&str>, context: Option<&str>) -> Value {
    let mut o = json!({});
    if let Some(m) = system_message {
        o["systemMessage"] = json!(m);
    }
    if let Some(c) = context {
        o["hookSpecificOutput"] = json!({"hookEventName": HookEvent::SessionStart.name(), "additionalContext": c});
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_start_shape() {
        assert_eq!(session_start_json(None, None), json!({}));
        assert_eq!(
            session_start_json(Some("m"), Some("c")).to_string(),
            r#"{"systemMessage":"m","hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"c"}}"#
        );
    }
}
