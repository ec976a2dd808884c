//! A transcript as it may leave this machine (a synced transcript, an exported bundle's copy):
//! secret-looking tokens redacted, the contents of never-captured files withheld. One rule for
//! `walj sync` and `walj sessions export`.

use std::collections::HashSet;

use serde_json::Value;

use crate::config::Matcher;

/// What replaces the content of a never-captured file in a published transcript.
pub(crate) const WITHHELD: &str = "[walj: not synced: this file is never captured (secrets)]";

/// The path a transcript string names, relative to `root` when inside it (what
/// [`Matcher::never_capture`] takes), else as is without its leading `/`.
fn rel_to<'a>(path: &'a str, root: &str) -> &'a str {
    path.strip_prefix(root).and_then(|r| r.strip_prefix('/')).unwrap_or_else(|| path.trim_start_matches('/'))
}

/// File paths a tool input or result names.
const PATH_KEYS: &[&str] = &["file_path", "filePath", "notebook_path", "path"];
/// What a file tool carries of a file's content.
const CONTENT_KEYS: &[&str] =
    &["content", "old_string", "new_string", "new_source", "edits", "originalFile", "structuredPatch", "file"];

fn names_never(v: &Value, root: &str, never: &Matcher) -> bool {
    let Some(o) = v.as_object() else { return false };
    PATH_KEYS.iter().filter_map(|k| o.get(*k).and_then(Value::as_str)).any(|p| never.never_capture(rel_to(p, root)))
        || o.get("file").is_some_and(|f| names_never(f, root, never))
}

fn withhold_content(v: &mut Value) {
    if let Some(o) = v.as_object_mut() {
        for k in CONTENT_KEYS {
            if let Some(x) = o.get_mut(*k) {
                *x = Value::String(WITHHELD.into());
            }
        }
    }
}

/// Walks one transcript line: tool calls on never-captured files (remembered in `ids`), their
/// results, then every string redacted. Returns whether anything changed.
fn clean_value(v: &mut Value, root: &str, never: &Matcher, ids: &mut HashSet<String>) -> bool {
    let mut changed = false;
    // The line's own `toolUseResult` (Claude Code keeps the tool's response there).
    if let Some(o) = v.as_object_mut() {
        let results: Vec<String> = o
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str).map(str::to_string))
            .collect();
        if let Some(r) = o.get_mut("toolUseResult")
            && (results.iter().any(|i| ids.contains(i)) || names_never(r, root, never))
            && r.as_str() != Some(WITHHELD)
        {
            *r = Value::String(WITHHELD.into());
            changed = true;
        }
    }
    walk(v, root, never, ids, &mut changed);
    changed
}

fn walk(v: &mut Value, root: &str, never: &Matcher, ids: &mut HashSet<String>, changed: &mut bool) {
    match v {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(r) = crate::secrets::redact(s) {
                *s = r;
                *changed = true;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| walk(x, root, never, ids, changed)),
        Value::Object(o) => {
            let kind = o.get("type").and_then(Value::as_str).unwrap_or("").to_string();
            if kind == "tool_use"
                && let Some(input) = o.get("input")
                && names_never(input, root, never)
            {
                if let Some(id) = o.get("id").and_then(Value::as_str) {
                    ids.insert(id.to_string());
                }
                if let Some(input) = o.get_mut("input") {
                    withhold_content(input);
                }
                *changed = true;
            }
            if kind == "tool_result"
                && o.get("tool_use_id").and_then(Value::as_str).is_some_and(|i| ids.contains(i))
                && let Some(c) = o.get_mut("content")
                && c.as_str() != Some(WITHHELD)
            {
                *c = Value::String(WITHHELD.into());
                *changed = true;
            }
            for (_, x) in o.iter_mut() {
                walk(x, root, never, ids, changed);
            }
        }
        _ => {}
    }
}

/// The transcript `bytes` as published: secrets redacted, never-captured files' contents
/// withheld. A line nothing was found in is kept byte for byte.
pub(crate) fn sanitise(bytes: &[u8], root: &str, never: &Matcher) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut ids: HashSet<String> = HashSet::new();
    for piece in bytes.split_inclusive(|&b| b == b'\n') {
        let (line, nl) = match piece.strip_suffix(b"\n") {
            Some(l) => (l, true),
            None => (piece, false),
        };
        let text = String::from_utf8_lossy(line);
        let paths = PATH_KEYS.iter().any(|k| text.contains(&format!("\"{k}\"")));
        let results = !ids.is_empty() && text.contains("tool_use_id");
        if !paths && !results && crate::secrets::find(&text).is_empty() {
            out.extend_from_slice(piece);
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(mut v) => {
                if clean_value(&mut v, root, never, &mut ids) {
                    out.extend_from_slice(&serde_json::to_vec(&v).unwrap_or_default());
                } else {
                    out.extend_from_slice(line);
                }
            }
            // Not JSON (a cut line): its tokens redacted as text.
            Err(_) => out.extend_from_slice(crate::secrets::redact(&text).as_bytes()),
        }
        if nl {
            out.push(b'\n');
        }
    }
    out
}
