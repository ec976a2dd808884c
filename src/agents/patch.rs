//! How a post-image is computed from a call's input, for every agent: the live hook (through
//! [`super::event`]) and `walj import` both ask here, so the two never disagree.
//!
//! Claude Code's Edit, Write and MultiEdit are replayed on the pre-image by [`apply_tool`]
//! (the result's strings win over the input's: the user may have changed them).
//!
//! Codex's `apply_patch` format (also offered by Copilot CLI to GPT models):
//!
//! ```text
//! *** Begin Patch
//! *** Add File: new.txt
//! +line
//! *** Update File: a.txt
//! *** Move to: b.txt          (optional)
//! @@ optional context line
//!  context
//! -old
//! +new
//! *** Delete File: c.txt
//! *** End Patch
//! ```
//!
//! [`parse`] splits a patch by its `*** Add/Update/Delete File:` and `*** Move to:` headers into
//! one [`FilePatch`] per file; [`apply`] applies an update's chunks to the old text (what the
//! call means to leave, for the crash check of an intent). Parsing is lenient: anything it does
//! not understand is skipped, never an error (the agent validates the patch, not walj).

use serde_json::Value;

/// One file of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FilePatch {
    /// As written in the patch (relative to the session's working folder, or absolute).
    pub path: String,
    pub op: PatchOp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PatchOp {
    /// The new file's content.
    Add(String),
    Delete,
    Update {
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

/// One `@@` section of an update: the lines it expects and the lines it leaves.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk {
    /// The text after `@@ `, a line to find first.
    pub context: Option<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// `*** End of File`: the chunk ends the file.
    pub eof: bool,
}

const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";

/// The files of a patch, in order.
pub(crate) fn parse(text: &str) -> Vec<FilePatch> {
    let mut out: Vec<FilePatch> = Vec::new();
    for raw in text.lines() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(p) = line.strip_prefix(ADD) {
            out.push(FilePatch { path: p.trim().to_string(), op: PatchOp::Add(String::new()) });
            continue;
        }
        if let Some(p) = line.strip_prefix(DELETE) {
            out.push(FilePatch { path: p.trim().to_string(), op: PatchOp::Delete });
            continue;
        }
        if let Some(p) = line.strip_prefix(UPDATE) {
            out.push(FilePatch { path: p.trim().to_string(), op: PatchOp::Update { move_to: None, chunks: vec![] } });
            continue;
        }
        if line.starts_with("*** Begin Patch") || line.starts_with("*** End Patch") {
            continue;
        }
        let Some(current) = out.last_mut() else { continue };
        match &mut current.op {
            PatchOp::Add(content) => {
                if let Some(l) = line.strip_prefix('+') {
                    content.push_str(l);
                    content.push('\n');
                }
            }
            PatchOp::Delete => {}
            PatchOp::Update { move_to, chunks } => {
                if let Some(p) = line.strip_prefix(MOVE) {
                    *move_to = Some(p.trim().to_string());
                } else if line == "*** End of File" {
                    if let Some(c) = chunks.last_mut() {
                        c.eof = true;
                    }
                } else if let Some(ctx) = line.strip_prefix("@@") {
                    let ctx = ctx.trim();
                    chunks.push(Chunk { context: (!ctx.is_empty()).then(|| ctx.to_string()), ..Chunk::default() });
                } else {
                    if chunks.is_empty() {
                        chunks.push(Chunk::default());
                    }
                    let Some(c) = chunks.last_mut() else { continue };
                    if let Some(l) = line.strip_prefix('-') {
                        c.old.push(l.to_string());
                    } else if let Some(l) = line.strip_prefix('+') {
                        c.new.push(l.to_string());
                    } else {
                        // Context (a leading space, or an empty line the model left bare).
                        let l = line.strip_prefix(' ').unwrap_or(line);
                        c.old.push(l.to_string());
                        c.new.push(l.to_string());
                    }
                }
            }
        }
    }
    out
}

/// `old` with the chunks applied, the way `apply_patch` does it: each chunk's old lines are
/// found at or after the previous chunk (after its `@@` context line, when it has one), then
/// replaced; the result ends with a newline. `None` when a chunk does not match.
pub(crate) fn apply(old: &str, chunks: &[Chunk]) -> Option<String> {
    let mut lines: Vec<String> = old.lines().map(|l| l.strip_suffix('\r').unwrap_or(l).to_string()).collect();
    let mut cursor = 0usize;
    for c in chunks {
        if let Some(ctx) = &c.context {
            let at = (cursor..lines.len()).find(|&i| lines[i].trim() == ctx.trim())?;
            cursor = at + 1;
        }
        if c.old.is_empty() {
            // Pure insertion: at the end of the file (Codex appends such chunks).
            let at = if c.context.is_some() { cursor } else { lines.len() };
            lines.splice(at..at, c.new.iter().cloned());
            cursor = at + c.new.len();
            continue;
        }
        let at = find(&lines, &c.old, cursor, c.eof)?;
        lines.splice(at..at + c.old.len(), c.new.iter().cloned());
        cursor = at + c.new.len();
    }
    let mut out = lines.join("\n");
    out.push('\n');
    Some(out)
}

/// Where `pattern` starts in `lines` at or after `from`: exact, then ignoring trailing
/// whitespace, then ignoring surrounding whitespace (as `apply_patch` tries).
fn find(lines: &[String], pattern: &[String], from: usize, eof: bool) -> Option<usize> {
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let starts: Vec<usize> = if eof { vec![last] } else { (from.min(last + 1)..=last).collect() };
    let eq: [fn(&str, &str) -> bool; 3] =
        [|a, b| a == b, |a, b| a.trim_end() == b.trim_end(), |a, b| a.trim() == b.trim()];
    for cmp in eq {
        if let Some(&i) = starts.iter().find(|&&i| pattern.iter().enumerate().all(|(k, p)| cmp(&lines[i + k], p))) {
            return Some(i);
        }
    }
    None
}

// ------------------------------------------------------------------ Claude Code's file tools

/// The file after a tool call, computed from its input and the file before
/// (`pre` `None` = absent). `None` when it cannot be computed.
pub(crate) fn apply_tool(tool: &str, input: &Value, resp: Option<&Value>, pre: Option<&[u8]>) -> Option<Vec<u8>> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match tool {
        "Write" => s(input, "content").or_else(|| resp.and_then(|r| s(r, "content"))).map(String::into_bytes),
        "Edit" => {
            // The result's strings are what was applied (the user may have changed them).
            let src = resp.filter(|r| r.get("oldString").is_some()).unwrap_or(input);
            let (old, new) = if src.get("oldString").is_some() {
                (s(src, "oldString")?, s(src, "newString")?)
            } else {
                (s(input, "old_string")?, s(input, "new_string")?)
            };
            let all =
                src.get("replaceAll").or_else(|| input.get("replace_all")).and_then(Value::as_bool).unwrap_or(false);
            let text = std::str::from_utf8(pre.unwrap_or_default()).ok()?;
            replace(text, &old, &new, all).map(String::into_bytes)
        }
        "MultiEdit" => {
            let edits = input.get("edits").or_else(|| resp.and_then(|r| r.get("edits")))?.as_array()?;
            let mut text = std::str::from_utf8(pre.unwrap_or_default()).ok()?.to_string();
            for e in edits {
                let all = e.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
                text = replace(&text, &s(e, "old_string")?, &s(e, "new_string")?, all)?;
            }
            Some(text.into_bytes())
        }
        "NotebookEdit" => resp.and_then(|r| s(r, "updated_file")).map(String::into_bytes),
        _ => None,
    }
}

fn replace(text: &str, old: &str, new: &str, all: bool) -> Option<String> {
    if old.is_empty() {
        // Creating a file with Edit: only an empty (or absent) file takes an empty old_string.
        return text.is_empty().then(|| new.to_string());
    }
    if !text.contains(old) {
        return None;
    }
    Some(if all { text.replace(old, new) } else { text.replacen(old, new, 1) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apply_edits() {
        let i = json!({"old_string": "b", "new_string": "B"});
        assert_eq!(apply_tool("Edit", &i, None, Some(b"abcb")).unwrap(), b"aBcb");
        let i = json!({"old_string": "b", "new_string": "B", "replace_all": true});
        assert_eq!(apply_tool("Edit", &i, None, Some(b"abcb")).unwrap(), b"aBcB");
        let i = json!({"old_string": "zz", "new_string": "B"});
        assert_eq!(apply_tool("Edit", &i, None, Some(b"abcb")), None);
        let i = json!({"old_string": "", "new_string": "new"});
        assert_eq!(apply_tool("Edit", &i, None, None).unwrap(), b"new");
        let i = json!({"edits": [{"old_string": "a", "new_string": "x"}, {"old_string": "x", "new_string": "yy"}]});
        assert_eq!(apply_tool("MultiEdit", &i, None, Some(b"abc")).unwrap(), b"yybc");
        let i = json!({"file_path": "/x", "content": "c\n"});
        assert_eq!(apply_tool("Write", &i, None, Some(b"old")).unwrap(), b"c\n");
        // The result's strings win (the user edited the proposal).
        let i = json!({"old_string": "b", "new_string": "B"});
        let r = json!({"oldString": "b", "newString": "USER"});
        assert_eq!(apply_tool("Edit", &i, Some(&r), Some(b"ab")).unwrap(), b"aUSER");
    }

    const P: &str = "*** Begin Patch\n*** Add File: new.txt\n+new file\n+second\n*** Update File: a.txt\n@@\n-hello\n+HELLO\n*** Delete File: b.txt\n*** Update File: c.txt\n*** Move to: sub/e.txt\n@@\n-hi\n+bye\n*** End Patch\n";

    #[test]
    fn splits_by_headers() {
        let files = parse(P);
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["new.txt", "a.txt", "b.txt", "c.txt"]);
        assert_eq!(files[0].op, PatchOp::Add("new file\nsecond\n".into()));
        assert_eq!(files[2].op, PatchOp::Delete);
        let PatchOp::Update { move_to, chunks } = &files[3].op else { panic!() };
        assert_eq!(move_to.as_deref(), Some("sub/e.txt"));
        assert_eq!(chunks[0].old, ["hi"]);
        assert_eq!(chunks[0].new, ["bye"]);
        assert!(parse("not a patch").is_empty());
    }

    #[test]
    fn applies_chunks() {
        let PatchOp::Update { chunks, .. } = &parse(P)[1].op else { panic!() };
        assert_eq!(apply("hello\n", chunks).as_deref(), Some("HELLO\n"));
        assert_eq!(apply("nothing here\n", chunks), None);
        let p = "*** Update File: f\n@@ fn main\n a\n-b\n+B\n@@\n-z\n+Z\n+y\n";
        let PatchOp::Update { chunks, .. } = &parse(p)[0].op else { panic!() };
        assert_eq!(apply("b\nfn main\na\nb\nz\n", chunks).as_deref(), Some("b\nfn main\na\nB\nZ\ny\n"));
        // Trailing whitespace differences still match.
        let p = "*** Update File: f\n@@\n-x  \n+X\n";
        let PatchOp::Update { chunks, .. } = &parse(p)[0].op else { panic!() };
        assert_eq!(apply("x\n", chunks).as_deref(), Some("X\n"));
    }
}
